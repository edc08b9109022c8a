package io.flix.flink.table.spec;

import io.flix.flink.IndexSettings;
import io.flix.flink.table.dimension.SharedDimension;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

import java.io.Serializable;
import java.util.Map;

/**
 * Everything a task manager needs to hold one {@code 'flix'} table: travels with each lookup function, and its
 * {@link #identity} decides which lookup subtasks share one {@link SharedDimension}.
 *
 * @param identity          the table's resolved options, schema and key, as one string: equal tables share
 * @param rowType           the table's physical row, as stored and returned
 * @param keyIndex          position of the BIGINT primary key column in {@code rowType}
 * @param changelog         'kafka' or 'file'
 * @param topic             kafka: the upsert topic
 * @param consumerProperties kafka: the consumer's properties ('properties.*' without the prefix)
 * @param keyDecoder        kafka: decodes a record key into a row of the key column
 * @param valueDecoder      decodes a record value (kafka) or a file line (file)
 * @param valueFields       positions in {@code rowType} of the value row's fields, in order
 * @param filePath          file: the file
 * @param pollTimeoutMillis kafka: one poll's wait
 * @param changelogBatchSize most changelog records per index micro-batch
 * @param decodeThreads     kafka: most threads decoding a poll while the table bootstraps; 0 for one a core
 * @param indexSettings     the index's backend and shape
 * @param bootstrapTimeoutMillis how long after the table opens on a task manager its changelog must be applied up
 *                          to its end at that time ('lookup.bootstrap-timeout')
 * @param snapshots         kafka: where and how often snapshots are written, or null where they are off
 */
public record DimensionSpec(String identity, RowType rowType, int keyIndex, String changelog, String topic,
                     Map<String, String> consumerProperties, DeserializationSchema<RowData> keyDecoder,
                     DeserializationSchema<RowData> valueDecoder, int[] valueFields, String filePath,
                     long pollTimeoutMillis, int changelogBatchSize, int decodeThreads, IndexSettings indexSettings,
                     long bootstrapTimeoutMillis, SnapshotSettings snapshots)
        implements Serializable {

    public static final String KAFKA = "kafka";
    public static final String FILE = "file";

    /** The changelog, for messages: the Kafka topic and its bootstrap servers, or the file. */
    public String describeChangelog() {
        return changelog.equals(KAFKA)
                ? "kafka topic '" + topic + "' at bootstrap servers '" + bootstrapServers() + "'"
                : "file '" + filePath + "'";
    }

    /** kafka: the brokers the consumer starts from ('properties.bootstrap.servers'). */
    public String bootstrapServers() {
        return consumerProperties.get("bootstrap.servers");
    }
}
