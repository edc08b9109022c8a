/**
 * Answering lookups: the lookup join's function ({@link io.flix.flink.table.lookup.FlixAsyncLookupFunction}) with
 * its settings ({@link io.flix.flink.table.lookup.LookupOptions}), the batching of probes shared with the range
 * functions ({@link io.flix.flink.table.lookup.ProbeBatcher}, {@link io.flix.flink.table.lookup.ProbeDispatcher})
 * and SQL equality of further lookup keys ({@link io.flix.flink.table.lookup.SqlEquality}).
 *
 * <p>May use the table's dimension and definition, and the snapshots' gauges; never the connector's surface.
 */
package io.flix.flink.table.lookup;
