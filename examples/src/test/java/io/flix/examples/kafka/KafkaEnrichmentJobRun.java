package io.flix.examples.kafka;

import io.flix.flink.testing.KafkaBrokerExtension;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * A throughput run of {@link KafkaEnrichmentJob} against the in-process broker (not a test; run it by hand):
 * the generator writes the catalog and the orders as fast as it can, then the job runs bounded to the end of
 * both topics in a local Flink cluster, and the enriched topic is read back with {@code read_committed}.
 *
 * <pre>
 * mvn -B -q -pl examples -am test-compile dependency:build-classpath -Dmdep.includeScope=test \
 *     -Dmdep.outputFile=/tmp/cp.txt
 * java -Xmx6g -cp examples/target/test-classes:examples/target/classes:$(cat /tmp/cp.txt) \
 *     io.flix.examples.kafka.KafkaEnrichmentJobRun --products 200000 --orders 2000000
 * </pre>
 *
 * The enriched topic stamps records with the broker's append time, so the report gives both the job's wall time
 * (start-up and the final commit included) and the rate between the first and the last enriched record appended.
 */
public final class KafkaEnrichmentJobRun {

    private KafkaEnrichmentJobRun() {
    }

    public static void main(String[] args) throws Exception {
        long products = 200_000;
        long orders = 2_000_000;
        int parallelism = 2;
        long checkpointMs = 5_000;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--products" -> products = Long.parseLong(args[i + 1]);
                case "--orders" -> orders = Long.parseLong(args[i + 1]);
                case "--parallelism" -> parallelism = Integer.parseInt(args[i + 1]);
                case "--checkpoint-interval-ms" -> checkpointMs = Long.parseLong(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        final KafkaBrokerExtension broker = new KafkaBrokerExtension();
        broker.beforeAll(null);
        try {
            run(broker, products, orders, parallelism, checkpointMs);
        } finally {
            broker.afterAll(null);
        }
        System.exit(0);
    }

    private static void run(KafkaBrokerExtension broker, long products, long orders, int parallelism,
                            long checkpointMs) throws Exception {
        try (Admin admin = Admin.create(broker.clientProperties())) {
            admin.createTopics(List.of(
                    new NewTopic("orders", parallelism, (short) 1),
                    new NewTopic("products", parallelism, (short) 1)
                            .configs(Map.of("cleanup.policy", "compact")),
                    new NewTopic("orders-enriched", parallelism, (short) 1)
                            .configs(Map.of("message.timestamp.type", "LogAppendTime")),
                    new NewTopic("orders-dlq", 1, (short) 1))).all().get(60, TimeUnit.SECONDS);
        }
        final OrderGenerator.Options generatorOptions = OrderGenerator.Options.defaults()
                .with("--bootstrap-servers", broker.bootstrapServers())
                .with("--products", Long.toString(products))
                .with("--orders", Long.toString(orders))
                .with("--orders-per-second", "0");
        final long generateStart = System.nanoTime();
        final OrderGenerator.Counts written = OrderGenerator.run(generatorOptions, false);
        final double generateSeconds = (System.nanoTime() - generateStart) / 1e9;
        System.out.printf(Locale.ROOT, "generator: %s in %.1f s (%.0f records/s)%n", written, generateSeconds,
                (written.catalog() + written.orders() + written.updates()) / generateSeconds);

        // the dimension outgrows the job manager's 5 MB memory checkpoints
        final Configuration conf = new Configuration();
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY,
                Files.createTempDirectory("flix-kafka-run").toUri().toString());
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        env.enableCheckpointing(checkpointMs);
        final KafkaEnrichmentJob.Options options = KafkaEnrichmentJob.Options.defaults()
                .with("--bootstrap-servers", broker.bootstrapServers())
                .with("--parallelism", Integer.toString(parallelism));
        KafkaEnrichmentJob.define(env, options, OffsetsInitializer.latest(), OffsetsInitializer.latest(), null);
        final long jobStart = System.nanoTime();
        env.execute("FliX Kafka enrichment, throughput run");
        final double jobSeconds = (System.nanoTime() - jobStart) / 1e9;

        long enriched = 0;
        long matched = 0;
        final long sampleIndex = 1000;
        final BitSet seen = new BitSet();
        long firstAppend = Long.MAX_VALUE;
        long lastAppend = Long.MIN_VALUE;
        final Properties props = broker.clientProperties();
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            final List<TopicPartition> partitions = consumer.partitionsFor("orders-enriched").stream()
                    .map(p -> new TopicPartition("orders-enriched", p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            final Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    enriched++;
                    final JsonNode node = JsonCodec.tree(r.value());
                    seen.set(Math.toIntExact(node.path("orderId").asLong()));
                    if (!node.path("product").isNull()) {
                        matched++;
                        if (matched == sampleIndex) {
                            System.out.println("an enriched order: " + new String(r.value(), StandardCharsets.UTF_8));
                        }
                    }
                    firstAppend = Math.min(firstAppend, r.timestamp());
                    lastAppend = Math.max(lastAppend, r.timestamp());
                }
            }
        }
        final long validOrders = written.orders() - written.malformed();
        System.out.printf(Locale.ROOT, "job: parallelism=%d, checkpoints every %d ms, %.1f s wall (start-up and "
                        + "final commit included): %.0f orders/s%n", parallelism, checkpointMs, jobSeconds,
                written.orders() / jobSeconds);
        System.out.printf(Locale.ROOT, "enriched (read_committed)=%d (%d distinct orders) of %d orders, with a "
                        + "product=%d; appended over %.1f s: %.0f enriched orders/s%n", enriched, seen.cardinality(),
                validOrders, matched,
                (lastAppend - firstAppend) / 1e3, enriched / Math.max(1e-3, (lastAppend - firstAppend) / 1e3));
        if (enriched != validOrders || seen.cardinality() != validOrders) {
            throw new AssertionError("expected " + validOrders + " enriched orders, read " + enriched);
        }
    }
}
