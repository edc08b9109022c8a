package io.flix.flink.table;

import io.flix.flink.table.spec.DimensionSpec;
import io.flix.flink.table.spec.SnapshotSettings;

import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.fs.Path;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.types.DataType;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

import static io.flix.flink.table.FlixConnectorOptions.CHANGELOG;
import static io.flix.flink.table.FlixConnectorOptions.KEY_FORMAT;
import static io.flix.flink.table.FlixConnectorOptions.SNAPSHOT_INTERVAL;
import static io.flix.flink.table.FlixConnectorOptions.SNAPSHOT_PATH;
import static io.flix.flink.table.FlixConnectorOptions.VALUE_FIELDS_INCLUDE;
import static io.flix.flink.table.FlixConnectorOptions.VALUE_FORMAT;

/** Reads a table's snapshot options into its {@link SnapshotSettings}, validating them. */
final class SnapshotOptions {

    private SnapshotOptions() {
    }

    /**
     * The settings of a table, or null where 'snapshot.path' is not set.
     *
     * @throws ValidationException where the options are unusable: a path on the file changelog, a path that is no
     *     URI, an interval that is not positive
     */
    static SnapshotSettings of(ReadableConfig options, Map<String, String> tableOptions, String changelog,
                               DataType physicalType, int keyIndex, Map<String, String> consumerProperties) {
        final String path = options.getOptional(SNAPSHOT_PATH).orElse(null);
        if (path == null || path.isBlank()) {
            return null;
        }
        if (!changelog.equals(DimensionSpec.KAFKA)) {
            throw new ValidationException("Option '" + SNAPSHOT_PATH.key() + "' needs '" + CHANGELOG.key()
                    + "' = 'kafka' (snapshots hold Kafka offsets), was '" + changelog + "': the file changelog is "
                    + "read whole at every open.");
        }
        try {
            new Path(path).toUri();
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Option '" + SNAPSHOT_PATH.key() + "' must be a path or URI of a Flink "
                    + "file system, was '" + path + "': " + e.getMessage(), e);
        }
        final Duration interval = options.get(SNAPSHOT_INTERVAL);
        if (interval.isNegative() || interval.isZero()) {
            throw new ValidationException("Option '" + SNAPSHOT_INTERVAL.key() + "' must be positive, was " + interval
                    + ".");
        }
        final String keyFormat = options.get(KEY_FORMAT);
        final String valueFormat = options.get(VALUE_FORMAT);
        final Map<String, String> decoding = new TreeMap<>();
        decoding.put(KEY_FORMAT.key(), keyFormat);
        decoding.put(VALUE_FORMAT.key(), valueFormat);
        decoding.put(VALUE_FIELDS_INCLUDE.key(), options.get(VALUE_FIELDS_INCLUDE));
        tableOptions.forEach((k, v) -> {
            if (k.startsWith("key." + keyFormat + ".") || k.startsWith("value." + valueFormat + ".")) {
                decoding.put(k, v);
            }
        });
        decoding.put("isolation.level", consumerProperties.getOrDefault("isolation.level", "read_committed"));
        final String definition = physicalType.getLogicalType().asSerializableString() + " key=" + keyIndex + " "
                + decoding;
        return new SnapshotSettings(path, interval.toMillis(), definition);
    }
}
