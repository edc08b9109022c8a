/**
 * When a DataStream operator's micro-batch is due ({@link io.flix.flink.batching.BatchDeadline}), for the keyed and
 * the shared mode alike.
 *
 * <p>Uses Flink's processing-time service only.
 */
package io.flix.flink.batching;
