/**
 * One home for "a dimension per task manager": {@link io.flix.flink.dimension.LocalDimension}, a FliX index and its
 * payload store held once in a JVM behind a read-write lock, updated one batch at a time and read by many threads at
 * once (in parallel on the CPU backend, gathered into fewer, larger index calls on the GPU backend:
 * {@link io.flix.flink.dimension.GatheredLookups}). The DataStream shared mode ({@code io.flix.flink.shared}) and
 * the SQL connector ({@code io.flix.flink.table}) both keep their dimension in it; each keeps its own registry of
 * open dimensions and its own source of updates.
 */
package io.flix.flink.dimension;
