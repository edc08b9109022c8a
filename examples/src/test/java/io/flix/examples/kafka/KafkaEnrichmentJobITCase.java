package io.flix.examples.kafka;

import io.flix.examples.Order;
import io.flix.examples.Product;
import io.flix.flink.testing.KafkaBrokerExtension;
import io.flix.index.Backend;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.groups.OperatorMetricGroup;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Kafka job against a real in-process broker, failed once in the middle of its orders: after it recovers from
 * its checkpoint, the enriched topic, read with {@code read_committed}, holds each expected enriched order exactly
 * once, and the dead-letter topic each malformed record once with its reason.
 *
 * <p>The job enriches an order with the product updates that reached the operator before it (see
 * {@link KafkaEnrichmentJob}), so the test loads the changelog first: it starts the job, waits until the operator
 * has received every product record (its {@code flixUpdates} counter), and only then writes the orders. The
 * expected output is then one fixed answer, computed here from the records written. The failure comes in the
 * second half of the orders, only after a checkpoint that includes orders has completed, so the job restarts from
 * a checkpoint that holds the whole dimension; it replays the orders since then, and the transactions written
 * before the failure are aborted. The job may restart once, for that failure: any other failure fails the test with
 * its cause.
 *
 * <p>Among the bad records are a 900 KiB order of control characters and a 5 MB order of random bytes (the orders
 * topic takes records up to 6 MiB): their dead letters, truncated, fit in the dead-letter topic's default limits,
 * and the job goes on. No assertion depends on timing: the test waits for events that must happen (the changelog
 * in the operator, a checkpoint with orders, the end of the bounded job), with a generous safety net of
 * {@link #SAFETY_NET} each, and what it asserts holds for every interleaving of the job's threads.
 */
class KafkaEnrichmentJobITCase {

    private static final int PRODUCTS = 400;
    private static final int ORDERS = 3000;
    private static final int FIRST_HALF = ORDERS / 2;
    /** The failure comes at the first order past this one, in the second half. */
    private static final long FAIL_AFTER_ORDER = 2200;
    private static final int PARALLELISM = 2;
    /** Event times near now: the broker deletes records older than its retention (7 days) by their timestamps. */
    private static final long ORDER_TIME_BASE = System.currentTimeMillis();
    /** A product whose price times 2 overflows 64 bits: its order is a dead letter, not an enriched order. */
    private static final long COSTLY_PRODUCT = 10_000;
    private static final long COSTLY_PRICE_CENTS = (1L << 62) + 1;
    /** The orders topic's and the test producer's record limit: a 5 MB order must go in. */
    private static final int LARGE_RECORD_LIMIT = 6 << 20;
    /** Only a safety net, should the job hang: every wait is for an event that must happen. */
    private static final Duration SAFETY_NET = Duration.ofMinutes(5);

    @RegisterExtension
    static final KafkaBrokerExtension KAFKA = new KafkaBrokerExtension();

    private static final InMemoryReporter METRICS = InMemoryReporter.create();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder()
                    .setConfiguration(METRICS.addToConfiguration(new Configuration()))
                    .setNumberTaskManagers(1)
                    .setNumberSlotsPerTaskManager(PARALLELISM)
                    .build());

    /** This run's topics: each mode's run has its own, on the one broker. */
    private static String ordersTopic;
    private static String productsTopic;
    private static String enrichedTopic;
    private static String deadLetterTopic;
    private static String mode;

    @ParameterizedTest(name = "{0} mode")
    @ValueSource(strings = {"shared", "keyed"})
    void enrichedTopicHoldsEachOrderExactlyOnceAfterAFailure(String enrichmentMode) throws Exception {
        mode = enrichmentMode;
        ordersTopic = "orders-" + mode;
        productsTopic = "products-" + mode;
        enrichedTopic = "orders-enriched-" + mode;
        deadLetterTopic = "orders-dlq-" + mode;
        try (Admin admin = Admin.create(KAFKA.clientProperties())) {
            admin.createTopics(List.of(
                    new NewTopic(ordersTopic, 2, (short) 1).configs(Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG,
                            Integer.toString(LARGE_RECORD_LIMIT))),
                    new NewTopic(productsTopic, 2, (short) 1),
                    new NewTopic(enrichedTopic, 2, (short) 1),
                    new NewTopic(deadLetterTopic, 1, (short) 1))).all().get(SAFETY_NET.toSeconds(), TimeUnit.SECONDS);
        }

        // the changelog: listings, price changes, tombstones, withdrawals, re-listings, and bad records
        final Map<Long, Product> dimension = new HashMap<>();
        final List<String> expectedDeadLetters = new ArrayList<>();
        long productRecords = 0;
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            final List<ProducerRecord<byte[], byte[]>> changelog = new ArrayList<>();
            for (long id = 1; id <= PRODUCTS; id++) {
                changelog.add(product(new Product(id, "product-" + id, 100 + id, category(id), false)));
            }
            for (long id = 7; id <= PRODUCTS; id += 7) {
                changelog.add(product(new Product(id, "product-" + id + "-v2", 5000 + id, category(id), false)));
            }
            for (long id = 11; id <= PRODUCTS; id += 11) {
                changelog.add(new ProducerRecord<>(productsTopic, null, ORDER_TIME_BASE - 1, key(id), (byte[]) null));
            }
            for (long id = 13; id <= PRODUCTS; id += 13) {
                changelog.add(new ProducerRecord<>(productsTopic, null, ORDER_TIME_BASE - 1, key(id),
                        ("{\"id\":" + id + ",\"withdrawn\":true}").getBytes(StandardCharsets.UTF_8)));
            }
            for (long id = 55; id <= PRODUCTS; id += 55) {
                changelog.add(product(new Product(id, "product-" + id + "-back", 9000 + id, "returns", false)));
            }
            changelog.add(product(new Product(COSTLY_PRODUCT, "yacht", COSTLY_PRICE_CENTS, "boats", false)));
            for (ProducerRecord<byte[], byte[]> r : changelog) {
                applyTo(dimension, r);
                producer.send(r);
                productRecords++;
            }
            badProduct(producer, null, "{\"id\":1,\"name\":\"x\",\"priceCents\":1}", "missing key",
                    expectedDeadLetters);
            badProduct(producer, "abc", "{\"id\":1,\"priceCents\":1}", "is not a product id", expectedDeadLetters);
            badProduct(producer, "5", "{not json", "not JSON", expectedDeadLetters);
            badProduct(producer, "6", "{\"id\":6,\"name\":\"no price\"}", "no field 'priceCents'",
                    expectedDeadLetters);
            badProduct(producer, "8", "{\"id\":9,\"priceCents\":1}", "differs from the record key",
                    expectedDeadLetters);
            producer.flush();
        }

        // orders: two halves with bad records in each; the stopping offsets are known up front
        final List<ProducerRecord<byte[], byte[]>> firstHalf = new ArrayList<>();
        final List<ProducerRecord<byte[], byte[]>> secondHalf = new ArrayList<>();
        final List<String> expectedEnriched = new ArrayList<>();
        for (long orderId = 1; orderId <= ORDERS; orderId++) {
            final Order order = new Order(orderId, 1 + (orderId * 7919) % (PRODUCTS + 50), 1 + (int) (orderId % 5));
            final long time = ORDER_TIME_BASE + orderId;
            (orderId <= FIRST_HALF ? firstHalf : secondHalf).add(new ProducerRecord<>(ordersTopic,
                    (int) (orderId % 2), time, key(orderId), JsonCodec.orderJson(order)));
            expectedEnriched.add(expected(order, time, dimension.get(order.productId)));
        }
        badOrder(firstHalf, 0, "{\"orderId\":", "not JSON", expectedDeadLetters);
        badOrder(firstHalf, 1, "{\"orderId\":-1,\"quantity\":2}", "no field 'productId'", expectedDeadLetters);
        badOrder(secondHalf, 0, "{\"orderId\":-2,\"productId\":3,\"quantity\":0}", "quantity 0",
                expectedDeadLetters);
        badOrder(secondHalf, 1, "[1,2,3]", "not a JSON object", expectedDeadLetters);
        final Order costly = new Order(ORDERS + 1, COSTLY_PRODUCT, 2);
        secondHalf.add(new ProducerRecord<>(ordersTopic, 1, ORDER_TIME_BASE + costly.orderId, key(costly.orderId),
                JsonCodec.orderJson(costly)));
        expectedDeadLetters.add("enrichment|" + new String(JsonCodec.orderJson(costly), StandardCharsets.UTF_8)
                + "|is beyond");
        // records whose whole bytes in a letter would be over the producer's 1 MiB default request size
        final byte[] controlCharacters = new byte[900 * 1024];
        Arrays.fill(controlCharacters, (byte) 0x01);
        final ProducerRecord<byte[], byte[]> largeControl = new ProducerRecord<>(ordersTopic, 0, ORDER_TIME_BASE, null,
                controlCharacters);
        firstHalf.add(firstHalf.size() / 3, largeControl);
        final byte[] binary = new byte[5 * 1000 * 1000];
        new SplittableRandom(7).nextBytes(binary);
        final ProducerRecord<byte[], byte[]> largeBinary = new ProducerRecord<>(ordersTopic, 1, ORDER_TIME_BASE, null,
                binary);
        secondHalf.add(secondHalf.size() / 3, largeBinary);
        final Map<TopicPartition, Long> orderEnd = new HashMap<>();
        for (List<ProducerRecord<byte[], byte[]>> half : List.of(firstHalf, secondHalf)) {
            for (ProducerRecord<byte[], byte[]> r : half) {
                orderEnd.merge(new TopicPartition(ordersTopic, r.partition()), 1L, Long::sum);
            }
        }

        // the job: checkpoints every 200 ms, one restart allowed: for the injected failure
        FailingTap.reset();
        final Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 1);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(100));
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(PARALLELISM);
        env.enableCheckpointing(200);
        final KafkaEnrichmentJob.Options options = KafkaEnrichmentJob.Options.defaults()
                .with("--bootstrap-servers", KAFKA.bootstrapServers())
                .with("--batch-size", "256")
                .with("--flush-interval-ms", "20")
                .with("--backend", Backend.AUTO.name())
                .with("--mode", mode)
                .with("--orders-topic", ordersTopic)
                .with("--products-topic", productsTopic)
                .with("--enriched-topic", enrichedTopic)
                .with("--dead-letter-topic", deadLetterTopic)
                .with("--group-id", "it-enrichment-" + mode)
                .with("--transactional-id-prefix", "it-enrichment-" + mode);
        KafkaEnrichmentJob.define(env, options, OffsetsInitializer.latest(), OffsetsInitializer.offsets(orderEnd),
                new FailingTap());
        final JobClient job = env.executeAsync("kafka enrichment, failed once");
        final long changelogRecords = productRecords;

        waitFor(job, () -> updatesReceived(job.getJobID()) >= changelogRecords,
                "the operator received every product record");
        final List<RecordMetadata> firstAcks = send(firstHalf);
        waitFor(job, () -> FailingTap.ARMED_INSTANCES.get() >= PARALLELISM,
                "a checkpoint with orders completed on every order subtask");
        final List<RecordMetadata> secondAcks = send(secondHalf);
        expectedDeadLetters.add(truncatedLetter(firstAcks.get(firstHalf.indexOf(largeControl)), controlCharacters));
        expectedDeadLetters.add(truncatedLetter(secondAcks.get(secondHalf.indexOf(largeBinary)), binary));
        job.getJobExecutionResult().get(SAFETY_NET.toSeconds(), TimeUnit.SECONDS);
        assertTrue(FailingTap.FAILED.get(), "the injected failure happened");

        final List<ConsumerRecord<byte[], byte[]>> committed = readAll(enrichedTopic, "read_committed");
        final List<String> actual = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : committed) {
            actual.add(canonical(JsonCodec.tree(r.value())));
        }
        Collections.sort(actual);
        Collections.sort(expectedEnriched);
        assertEquals(ORDERS, new HashSet<>(actual).size(), () -> "distinct enriched orders; " + difference(
                expectedEnriched, actual));
        assertEquals(expectedEnriched, actual, "the enriched topic, each order exactly once");

        final List<String> letters = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : readAll(deadLetterTopic, "read_committed")) {
            assertTrue(r.value().length <= DeadLetter.MAX_ENCODED_BYTES, "a letter of " + r.value().length + " bytes");
            final JsonNode n = JsonCodec.tree(r.value());
            final String reason = n.path("reason").asText();
            final String identity = n.path("truncated").asBoolean() ? truncatedIdentity(n.path("topic").asText(),
                    n.path("partition").asInt(), n.path("offset").asLong(), n.path("valueBytes").asLong(),
                    n.path("valueSha256").asText()) : n.path("value").asText();
            String matched = null;
            for (String expected : expectedDeadLetters) {
                final String[] parts = expected.split("\\|", 3);
                if (n.path("stage").asText().equals(parts[0]) && identity.equals(parts[1])
                        && reason.contains(parts[2])) {
                    matched = expected;
                }
            }
            letters.add(matched == null ? "unexpected: " + cutForMessage(n.toString()) : matched);
        }
        Collections.sort(letters);
        Collections.sort(expectedDeadLetters);
        assertEquals(expectedDeadLetters, letters, "the dead-letter topic, each bad record once with its reason");

        final int physical = readAll(enrichedTopic, "read_uncommitted").size();
        System.out.printf("KafkaEnrichmentJobITCase: %d product records (%d bad), %d orders (%d bad); enriched "
                        + "read_committed=%d (%d distinct, %d with a product), records in the log incl. aborted=%d, "
                        + "dead letters=%d%n", productRecords + 5, 5, ORDERS + 7, 7, committed.size(),
                new HashSet<>(actual).size(), actual.stream().filter(s -> !s.contains("|null|")).count(), physical,
                letters.size());
    }

    // ---- the expected output ----

    private static void applyTo(Map<Long, Product> dimension, ProducerRecord<byte[], byte[]> r) throws Exception {
        final Product p = JsonCodec.parseProduct(r.key(), r.value());
        if (p.withdrawn) {
            dimension.remove(p.id);
        } else {
            dimension.put(p.id, p);
        }
    }

    private static String expected(Order o, long time, Product p) {
        return o.orderId + "|" + o.productId + "|" + o.quantity + "|" + time + "|"
                + (p == null ? "null|null" : p.id + "," + p.name + "," + p.priceCents + "," + p.category + "|"
                + p.priceCents * o.quantity);
    }

    /** A letter that carries only the start of a record: it names the record and its size and hash. */
    private static String truncatedLetter(RecordMetadata written, byte[] value) throws Exception {
        return "orders|" + truncatedIdentity(written.topic(), written.partition(), written.offset(), value.length,
                HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(value))) + "|not JSON";
    }

    private static String truncatedIdentity(String topic, int partition, long offset, long bytes, String sha256) {
        return "truncated " + topic + "-" + partition + "@" + offset + " " + bytes + " bytes sha256 " + sha256;
    }

    private static String cutForMessage(String text) {
        return text.length() > 300 ? text.substring(0, 300) + "..." : text;
    }

    private static String canonical(JsonNode n) {
        final JsonNode p = n.path("product");
        return n.path("orderId").asLong() + "|" + n.path("productId").asLong() + "|" + n.path("quantity").asInt()
                + "|" + n.path("orderTime").asLong() + "|"
                + (p.isNull() ? "null|" + n.path("totalCents")
                : p.path("id").asLong() + "," + p.path("name").asText() + "," + p.path("priceCents").asLong() + ","
                + p.path("category").asText() + "|" + n.path("totalCents").asLong());
    }

    /** What is missing and what is extra, for the failure message. */
    private static String difference(List<String> expected, List<String> actual) {
        final List<String> missing = new ArrayList<>(expected);
        actual.forEach(missing::remove);
        final List<String> extra = new ArrayList<>(actual);
        expected.forEach(extra::remove);
        return "read " + actual.size() + ", missing " + missing.size() + " " + missing.subList(0,
                Math.min(20, missing.size())) + ", extra " + extra.size() + " " + extra.subList(0,
                Math.min(20, extra.size()));
    }

    // ---- Kafka helpers ----

    private static ProducerRecord<byte[], byte[]> product(Product p) {
        return new ProducerRecord<>(productsTopic, null, ORDER_TIME_BASE - 1, key(p.id), JsonCodec.productJson(p));
    }

    private static String category(long id) {
        return id % 2 == 0 ? "books" : "toys";
    }

    private static byte[] key(long id) {
        return Long.toString(id).getBytes(StandardCharsets.UTF_8);
    }

    private static void badProduct(KafkaProducer<byte[], byte[]> producer, String key, String value, String reason,
                                   List<String> expected) {
        producer.send(new ProducerRecord<>(productsTopic, null, ORDER_TIME_BASE - 1,
                key == null ? null : key.getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8)));
        expected.add("products|" + value + "|" + reason);
    }

    private static void badOrder(List<ProducerRecord<byte[], byte[]>> half, int partition, String value,
                                 String reason, List<String> expected) {
        half.add(half.size() / 2, new ProducerRecord<>(ordersTopic, partition, ORDER_TIME_BASE, null,
                value.getBytes(StandardCharsets.UTF_8)));
        expected.add("orders|" + value + "|" + reason);
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        final Properties props = KAFKA.clientProperties();
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Integer.toString(LARGE_RECORD_LIMIT));
        // a broker starved by a busy machine must not time a request out and see its retry out of sequence
        // (OutOfOrderSequenceException, the partition's records then never all arrive): one request in flight,
        // and time enough
        props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "120000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "300000");
        return new KafkaProducer<>(props);
    }

    /** Sends in order (one idempotent producer keeps each partition's order); returns each record's ack. */
    private static List<RecordMetadata> send(List<ProducerRecord<byte[], byte[]>> records) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            final List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (ProducerRecord<byte[], byte[]> r : records) {
                acks.add(producer.send(r));
            }
            final List<RecordMetadata> written = new ArrayList<>();
            for (Future<RecordMetadata> ack : acks) {
                written.add(ack.get(SAFETY_NET.toSeconds(), TimeUnit.SECONDS));
            }
            return written;
        }
    }

    /** Every record of a topic up to its end offsets (for read_committed: the last stable offsets). */
    private static List<ConsumerRecord<byte[], byte[]>> readAll(String topic, String isolation) {
        final Properties props = KAFKA.clientProperties();
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            final List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            final Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            final long deadline = System.nanoTime() + SAFETY_NET.toNanos();
            while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("could not read " + topic + " to its end " + end);
                }
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
            }
        }
        return records;
    }

    // ---- the job's progress ----

    /**
     * The product updates the enrichment applied: its writers' in the shared mode (only the applier of the one task
     * manager counts them), its subtasks' in the keyed mode.
     */
    private static long updatesReceived(JobID job) {
        long sum = 0;
        for (OperatorMetricGroup group : METRICS.findOperatorMetricGroups(job,
                KafkaEnrichmentJob.ENRICHMENT + (mode.equals("shared") ? ": dimension" : ""))) {
            if (METRICS.getMetricsByGroup(group).get("flixUpdates") instanceof Counter c) {
                sum += c.getCount();
            }
        }
        return sum;
    }

    /** Polls until {@code condition} holds; fails at once where the job ended first, else past the safety net. */
    private static void waitFor(JobClient job, BooleanSupplier condition, String what) throws Exception {
        final long deadline = System.nanoTime() + SAFETY_NET.toNanos();
        while (!condition.getAsBoolean()) {
            if (job.getJobExecutionResult().isDone()) {
                job.getJobExecutionResult().get(); // throws the job's failure
                throw new AssertionError("the job ended before " + what);
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + SAFETY_NET + ": " + what);
            }
            Thread.sleep(50);
        }
    }

    /**
     * Throws once, at the first order past {@link #FAIL_AFTER_ORDER}, and only once this subtask is armed: a
     * checkpoint taken after it had seen orders (so after the whole changelog was in the operator) has completed.
     */
    static final class FailingTap implements MapFunction<Order, Order>, CheckpointedFunction, CheckpointListener {
        static final AtomicBoolean FAILED = new AtomicBoolean();
        static final AtomicInteger ARMED_INSTANCES = new AtomicInteger();

        private transient boolean seenOrder;
        private transient long gateCheckpoint;
        private transient boolean armed;

        static void reset() {
            FAILED.set(false);
            ARMED_INSTANCES.set(0);
        }

        @Override
        public Order map(Order order) {
            seenOrder = true;
            if (armed && order.orderId > FAIL_AFTER_ORDER && FAILED.compareAndSet(false, true)) {
                throw new IllegalStateException("injected failure at order " + order.orderId);
            }
            return order;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {
            if (seenOrder && gateCheckpoint == 0) {
                gateCheckpoint = context.getCheckpointId();
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            if (!armed && gateCheckpoint > 0 && checkpointId >= gateCheckpoint) {
                armed = true;
                ARMED_INSTANCES.incrementAndGet();
            }
        }
    }
}
