package io.flix.flink.table;

import io.flix.flink.table.dimension.SharedDimension;
import io.flix.flink.table.dimension.SharedDimensions;
import io.flix.flink.testing.Eventually;
import io.flix.flink.testing.KafkaBrokerExtension;

import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * A processing-time lookup join of an order stream against a 'flix' table whose changelog is an upsert topic on a
 * real (in-process) Kafka broker, with product updates and deletes arriving while the job runs.
 *
 * <p>Deterministic by construction: the orders come from a Kafka topic that the test feeds in two phases. The
 * first phase's results are all read (so their lookups are done) before the product changes are written, and the
 * second phase's orders are written only after the dimension has applied those changes (its applied-record count).
 * Every joined row is checked against a sorted map of the products as the changelog leaves them at each phase.
 */
class FlixLookupJoinITCase {

    @RegisterExtension
    static final KafkaBrokerExtension BROKER = new KafkaBrokerExtension();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(2)
                    .build());

    private static final int PRODUCTS = 30;
    private static final int ORDERS_PER_PHASE = 40;

    @Test
    void innerJoinSeesUpdatesAndDeletesArrivingDuringTheRun() throws Exception {
        run("inner", "JOIN");
    }

    @Test
    void leftJoinKeepsOrdersOfDeletedAndMissingProducts() throws Exception {
        run("left", "LEFT JOIN");
    }

    private void run(String name, String join) throws Exception {
        SEND_FAILURE.set(null);
        final String productsTopic = "products-" + name;
        final String ordersTopic = "orders-" + name;
        BROKER.createTopics(Map.of(productsTopic, 2, ordersTopic, 1));
        final Map<Long, String> products = new TreeMap<>(); // the oracle: id -> "name,price"

        try (KafkaProducer<String, String> producer = producer()) {
            // before the job: products 1..30, then a delete of 30
            for (long id = 1; id <= PRODUCTS; id++) {
                upsert(producer, productsTopic, products, id, "p" + id + "-v1", id * 1.5);
            }
            delete(producer, productsTopic, products, PRODUCTS);
            flush(producer);
            final long bootstrapRecords = PRODUCTS + 1;

            final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(2);
            final StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
            tEnv.executeSql("CREATE TABLE orders (order_id BIGINT, product_id BIGINT, proc_time AS PROCTIME()) WITH ("
                    + "'connector' = 'kafka', 'topic' = '" + ordersTopic + "', "
                    + "'properties.bootstrap.servers' = '" + BROKER.bootstrapServers() + "', "
                    + "'properties.group.id' = 'orders-" + name + "', "
                    + "'scan.startup.mode' = 'earliest-offset', 'format' = 'json')");
            tEnv.executeSql("CREATE TABLE products (id BIGINT, name STRING, price DOUBLE, "
                    + "PRIMARY KEY (id) NOT ENFORCED) WITH ("
                    + "'connector' = 'flix', 'topic' = '" + productsTopic + "', "
                    + "'properties.bootstrap.servers' = '" + BROKER.bootstrapServers() + "', "
                    + "'key.format' = 'json', 'value.format' = 'json', "
                    + "'lookup.batch-size' = '8', 'lookup.linger' = '5 ms', 'index.backend' = 'auto')");
            final TableResult result = tEnv.executeSql("SELECT o.order_id, o.product_id, p.name, p.price "
                    + "FROM orders AS o " + join + " products FOR SYSTEM_TIME AS OF o.proc_time AS p "
                    + "ON o.product_id = p.id");
            final boolean left = join.startsWith("LEFT");
            try (CloseableIterator<Row> rows = result.collect()) {
                // phase 1: orders for products 1..35 (30 deleted, 31..35 never existed)
                final List<String> expected1 = writeOrders(producer, ordersTopic, 1, products, left);
                assertEquals(expected1, read(rows, expected1.size()), "phase 1");

                // both lookup subtasks of this task manager share one dimension (the second may still be opening:
                // the orders reach only the first)
                Eventually.await("both lookup subtasks hold a dimension", () -> SharedDimensions.openOn(productsTopic)
                        .stream().mapToInt(SharedDimensions::references).sum() == 2);
                final List<SharedDimension> open = SharedDimensions.openOn(productsTopic);
                assertEquals(1, open.size());
                final SharedDimension dimension = open.get(0);
                assertEquals(2, SharedDimensions.references(dimension));
                assertEquals(bootstrapRecords, dimension.appliedRecords());

                // during the run: new versions of 1..10, deletes of 11..15, new 31..33, 30 back again
                long changes = 0;
                for (long id = 1; id <= 10; id++, changes++) {
                    upsert(producer, productsTopic, products, id, "p" + id + "-v2", 100 + id);
                }
                for (long id = 11; id <= 15; id++, changes++) {
                    delete(producer, productsTopic, products, id);
                }
                for (long id = 30; id <= 33; id++, changes++) {
                    upsert(producer, productsTopic, products, id, "p" + id + "-v2", 200 + id);
                }
                flush(producer);
                final long applied = bootstrapRecords + changes;
                Eventually.await("the dimension applies the product changes",
                        () -> dimension.appliedRecords() >= applied);
                assertEquals(applied, dimension.appliedRecords());
                assertEquals(PRODUCTS - 5 + 3, dimension.indexSize());

                // phase 2: the same products again, now changed
                final List<String> expected2 = writeOrders(producer, ordersTopic, 2, products, left);
                assertEquals(expected2, read(rows, expected2.size()), "phase 2");
            }
            // cancelling the job closes both lookup subtasks: the last one frees the dimension
            Eventually.await("the dimension is closed with the job",
                    () -> SharedDimensions.openOn(productsTopic).isEmpty());
        }
    }

    /** Writes one phase's orders (product ids 1..35, cycling) and returns the joined rows they must give, sorted. */
    private static List<String> writeOrders(KafkaProducer<String, String> producer, String topic, int phase,
                                            Map<Long, String> products, boolean left) {
        final List<String> expected = new ArrayList<>();
        for (int i = 0; i < ORDERS_PER_PHASE; i++) {
            final long orderId = phase * 1000L + i;
            final long productId = i % 35 + 1;
            send(producer, new ProducerRecord<>(topic, null,
                    "{\"order_id\":" + orderId + ",\"product_id\":" + productId + "}"));
            final String product = products.get(productId);
            if (product != null) {
                expected.add(orderId + "," + productId + "," + product);
            } else if (left) {
                expected.add(orderId + "," + productId + ",null,null");
            }
        }
        flush(producer);
        Collections.sort(expected);
        return expected;
    }

    /** The next {@code count} rows, sorted; the limit is a net against a hang. */
    private static List<String> read(CloseableIterator<Row> rows, int count) {
        return assertTimeoutPreemptively(Duration.ofSeconds(TestTables.NET_SECONDS), () -> {
            final List<String> got = new ArrayList<>();
            while (got.size() < count && rows.hasNext()) {
                final Row row = rows.next();
                got.add(row.getField(0) + "," + row.getField(1) + "," + row.getField(2) + "," + row.getField(3));
            }
            Collections.sort(got);
            return got;
        });
    }

    private static void upsert(KafkaProducer<String, String> producer, String topic, Map<Long, String> products,
                               long id, String name, double price) {
        send(producer, new ProducerRecord<>(topic, "{\"id\":" + id + "}",
                "{\"id\":" + id + ",\"name\":\"" + name + "\",\"price\":" + price + "}"));
        products.put(id, name + "," + price);
    }

    private static void delete(KafkaProducer<String, String> producer, String topic, Map<Long, String> products,
                               long id) {
        send(producer, new ProducerRecord<>(topic, "{\"id\":" + id + "}", null));
        products.remove(id);
    }

    /** The first failed send, if any: a test must not go on with data missing from a topic. */
    private static final java.util.concurrent.atomic.AtomicReference<Exception> SEND_FAILURE =
            new java.util.concurrent.atomic.AtomicReference<>();

    private static void send(KafkaProducer<String, String> producer, ProducerRecord<String, String> record) {
        producer.send(record, (metadata, e) -> {
            if (e != null) {
                SEND_FAILURE.compareAndSet(null, e);
            }
        });
    }

    private static void flush(KafkaProducer<String, String> producer) {
        producer.flush();
        if (SEND_FAILURE.get() != null) {
            throw new AssertionError("a record was not written", SEND_FAILURE.get());
        }
    }

    private static KafkaProducer<String, String> producer() {
        final Properties properties = BROKER.clientProperties();
        properties.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.put(ProducerConfig.ACKS_CONFIG, "all");
        // a fresh topic's partition may answer NOT_LEADER_OR_FOLLOWER for a moment; an idempotent producer's
        // retried first batch then meets OUT_OF_ORDER_SEQUENCE_NUMBER until it expires. One request in flight
        // keeps the order without idempotence.
        properties.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        properties.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        properties.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        properties.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return new KafkaProducer<>(properties);
    }
}
