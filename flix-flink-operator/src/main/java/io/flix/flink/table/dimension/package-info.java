/**
 * The table's dimension on a task manager: {@link io.flix.flink.table.dimension.SharedDimension} (the index, the
 * rows, the changelog reader and the snapshot writer of one table) and the reference-counted registry that shares it
 * among the lookup subtasks ({@link io.flix.flink.table.dimension.SharedDimensions}).
 *
 * <p>May use the table's definition, the changelog readers, the snapshots and the task manager's dimension home;
 * never the lookups nor the connector's surface.
 */
package io.flix.flink.table.dimension;
