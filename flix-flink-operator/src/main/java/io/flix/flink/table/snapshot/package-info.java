/**
 * The table's snapshots: the directory of complete-or-absent snapshots
 * ({@link io.flix.flink.table.snapshot.SnapshotDirectory}, {@link io.flix.flink.table.snapshot.SnapshotManifest}),
 * whether a start may load one ({@link io.flix.flink.table.snapshot.SnapshotRestore}) and the periodic writer
 * ({@link io.flix.flink.table.snapshot.SnapshotWriter}), which reads the dimension through
 * {@link io.flix.flink.table.snapshot.SnapshotSource}.
 *
 * <p>May use the table's definition ({@code table.spec}) and the task manager's dimension home; never the
 * changelog readers, the dimension that holds them, nor the lookups.
 */
package io.flix.flink.table.snapshot;
