package io.flix.flink.table;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The Kafka changelog: one consumer with every partition of the topic assigned (no consumer group, no committed
 * offsets), read from the earliest offset for as long as the dimension is open. The end offsets at start are the
 * bootstrap target. Partitions added to the topic later are not picked up.
 */
final class KafkaChangelogReader extends ChangelogReader {

    private volatile KafkaConsumer<byte[], byte[]> consumer;

    KafkaChangelogReader(DimensionSpec spec, SharedDimension dimension) {
        super(spec, dimension);
    }

    @Override
    void read(ChangelogDecoder decoder) throws Exception {
        final Properties properties = new Properties();
        properties.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        properties.put(ConsumerConfig.CLIENT_ID_CONFIG, "flix-changelog-" + spec.topic());
        properties.putAll(spec.consumerProperties());
        // not the user's to change: this reader assigns partitions itself and keeps no offsets
        properties.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        properties.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        properties.remove(ConsumerConfig.GROUP_ID_CONFIG);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(properties)) {
            consumer = c;
            final List<PartitionInfo> infos = c.partitionsFor(spec.topic(), Duration.ofSeconds(60));
            if (infos == null || infos.isEmpty()) {
                throw new IllegalStateException("topic '" + spec.topic() + "' (option 'topic') has no partitions "
                        + "or does not exist");
            }
            final List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : infos) {
                partitions.add(new TopicPartition(info.topic(), info.partition()));
            }
            c.assign(partitions);
            c.seekToBeginning(partitions);
            final Map<TopicPartition, Long> endAtOpen = c.endOffsets(partitions);
            boolean bootstrapped = false;
            final Duration pollTimeout = Duration.ofMillis(spec.pollTimeoutMillis());
            while (running) {
                if (!bootstrapped && caughtUp(c, endAtOpen)) {
                    dimension.bootstrapSubmitted();
                    bootstrapped = true;
                }
                final ConsumerRecords<byte[], byte[]> records;
                try {
                    records = c.poll(pollTimeout);
                } catch (WakeupException | InterruptException e) {
                    if (!running) {
                        return;
                    }
                    throw e;
                }
                if (records.isEmpty()) {
                    continue;
                }
                UpdateBatch batch = new UpdateBatch();
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    decoder.addKafkaRecord(record.key(), record.value(), batch);
                    if (batch.size() >= spec.changelogBatchSize()) {
                        dimension.submit(batch);
                        batch = new UpdateBatch();
                    }
                }
                dimension.submit(batch);
            }
        } finally {
            consumer = null;
        }
    }

    private static boolean caughtUp(KafkaConsumer<byte[], byte[]> c, Map<TopicPartition, Long> endAtOpen) {
        for (Map.Entry<TopicPartition, Long> end : endAtOpen.entrySet()) {
            if (c.position(end.getKey()) < end.getValue()) {
                return false;
            }
        }
        return true;
    }

    @Override
    void stop() {
        super.stop();
        final KafkaConsumer<byte[], byte[]> c = consumer;
        if (c != null) {
            c.wakeup();
        }
    }
}
