package io.flix.examples.cluster;

import io.flix.flink.testing.KafkaBrokerExtension;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** The test side of the cluster ITCases' Kafka: writing input, reading output (committed records only). */
final class Topics {

    private final KafkaBrokerExtension kafka;

    Topics(KafkaBrokerExtension kafka) {
        this.kafka = kafka;
    }

    String bootstrapServers() {
        return kafka.bootstrapServers();
    }

    void create(Map<String, Integer> partitionsByTopic) throws Exception {
        kafka.createTopics(partitionsByTopic);
    }

    /** Writes the records in order (one idempotent producer keeps each partition's order) and waits for the acks. */
    void send(List<ProducerRecord<byte[], byte[]>> records) throws Exception {
        final Properties props = kafka.clientProperties();
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        // a broker starved by a busy machine must not time a request out and see its retry out of sequence
        props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "120000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "300000");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            final List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (ProducerRecord<byte[], byte[]> r : records) {
                acks.add(producer.send(r));
            }
            for (Future<RecordMetadata> ack : acks) {
                ack.get(FlinkSessionCluster.SAFETY_NET.toSeconds(), TimeUnit.SECONDS);
            }
        }
    }

    /** Every committed record of the topic (read_committed) up to its end: its last stable offsets now. */
    List<ConsumerRecord<byte[], byte[]>> readCommitted(String topic) {
        try (KafkaConsumer<byte[], byte[]> consumer = consumer("read_committed")) {
            final List<TopicPartition> partitions = partitions(consumer, topic);
            final Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
            FlinkSessionCluster.await(() -> {
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
                return partitions.stream().allMatch(p -> consumer.position(p) >= end.get(p));
            }, () -> "reading " + topic + " to its end " + end);
            return records;
        }
    }

    /** Records in the topic's log, committed, aborted or open (read_uncommitted). */
    long physicalRecords(String topic) {
        try (KafkaConsumer<byte[], byte[]> consumer = consumer("read_uncommitted")) {
            final List<TopicPartition> partitions = partitions(consumer, topic);
            final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
            final Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            FlinkSessionCluster.await(() -> {
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
                return partitions.stream().allMatch(p -> consumer.position(p) >= end.get(p));
            }, () -> "reading " + topic + " to its end " + end);
            return records.size();
        }
    }

    /** Waits until the topic holds at least {@code count} committed records; returns those read. */
    List<ConsumerRecord<byte[], byte[]>> awaitCommitted(String topic, int count, String what) {
        try (KafkaConsumer<byte[], byte[]> consumer = consumer("read_committed")) {
            final List<TopicPartition> partitions = partitions(consumer, topic);
            final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
            FlinkSessionCluster.await(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
                return records.size() >= count;
            }, () -> count + " committed records in " + topic + " (" + what + "); read " + records.size());
            return records;
        }
    }

    private KafkaConsumer<byte[], byte[]> consumer(String isolation) {
        final Properties props = kafka.clientProperties();
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, Integer.toString(8 << 20));
        return new KafkaConsumer<>(props);
    }

    private static List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> consumer, String topic) {
        final List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                .map(p -> new TopicPartition(topic, p.partition())).toList();
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
        return partitions;
    }
}
