/**
 * Reading the table's changelog: the Kafka and the file readers ({@link io.flix.flink.table.changelog.ChangelogReader}
 * and its two kinds), which decode records ({@link io.flix.flink.table.changelog.ChangelogDecoder}) and apply them
 * in batches to a {@link io.flix.flink.table.changelog.ChangelogTarget}.
 *
 * <p>May use the table's definition ({@code table.spec}), the snapshots (a Kafka reader starts from one) and the task
 * manager's dimension home; never the dimension that starts the readers, nor the lookups.
 */
package io.flix.flink.table.changelog;
