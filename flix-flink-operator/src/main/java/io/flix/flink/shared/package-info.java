/**
 * The shared mode's operators: the whole dimension once per task manager
 * ({@link io.flix.flink.shared.TaskManagerDimensions}), written by {@link io.flix.flink.shared.DimensionWriterOperator}
 * from the updates {@link io.flix.flink.shared.UpdateEncoder} encodes, read by
 * {@link io.flix.flink.shared.SharedLookupOperator} chained to the lookups' upstream.
 *
 * <p>May use the API's values ({@code io.flix.flink}, never the builder {@code FlixEnrichment}: what it needs from
 * the builder comes through the constructors), the task manager's dimension home, the payload stores, the state
 * codec and batching.
 */
package io.flix.flink.shared;
