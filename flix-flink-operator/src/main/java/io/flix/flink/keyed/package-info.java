/**
 * The keyed mode's operator ({@link io.flix.flink.keyed.FlixEnrichmentOperator}): each subtask holds its key groups'
 * slice of the dimension. With it the key-by of the enrichment's inputs ({@link io.flix.flink.keyed.IndexKey}) and
 * the guard that keeps the shared mode's savepoints out of the keyed mode's uid
 * ({@link io.flix.flink.keyed.ModeGuard}).
 *
 * <p>May use the API's values ({@code io.flix.flink}, never the builder {@code FlixEnrichment}: what it needs from
 * the builder comes through the constructors), the payload stores, the state codec, batching and the task manager's
 * services.
 */
package io.flix.flink.keyed;
