package io.flix.flink.table;

import io.flix.flink.table.spec.DimensionSpec;
import java.time.Duration;
import java.util.Map;

/**
 * Where a {@code 'flix'} table's rows come from: the changelog options of one table, checked by
 * {@link FlixDynamicTableFactory} (see {@link FlixConnectorOptions} for each option).
 *
 * @param changelog          {@link DimensionSpec#KAFKA} or {@link DimensionSpec#FILE} ({@code 'changelog'})
 * @param topic              kafka: the upsert topic; null for a file
 * @param consumerProperties kafka: the consumer's properties ({@code 'properties.*'} without the prefix); empty for
 *                           a file
 * @param filePath           file: the file; null for kafka
 * @param pollTimeout        kafka: one poll's wait ({@code 'changelog.poll-timeout'})
 * @param batchSize          most changelog records per index micro-batch ({@code 'changelog.batch-size'})
 * @param decodeThreads      kafka: most threads decoding a poll while the table bootstraps; 0 for one a core
 *                           ({@code 'changelog.decode-threads'})
 */
record ChangelogOptions(String changelog, String topic, Map<String, String> consumerProperties, String filePath,
                        Duration pollTimeout, int batchSize, int decodeThreads) {

    boolean isKafka() {
        return changelog.equals(DimensionSpec.KAFKA);
    }
}
