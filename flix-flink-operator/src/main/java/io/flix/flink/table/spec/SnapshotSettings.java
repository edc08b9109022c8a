package io.flix.flink.table.spec;

import java.io.Serializable;

/**
 * A table's snapshot options ({@code 'snapshot.path'}, {@code 'snapshot.interval'}) and its definition as far as
 * the rows of a snapshot depend on it; null in a {@link DimensionSpec} where snapshots are off. Read from the
 * options by {@code io.flix.flink.table.SnapshotOptions}.
 *
 * @param path           the snapshot directory, a URI of a Flink file system (file, hdfs, s3, ...)
 * @param intervalMillis how often the writing task manager writes a snapshot
 * @param definition     what decides the rows a changelog record turns into: the physical row type, the key column,
 *                       the key and value formats with their options, 'value.fields-include' and the consumer's
 *                       isolation level. A snapshot written under another definition is not loaded.
 */
public record SnapshotSettings(String path, long intervalMillis, String definition) implements Serializable {
}
