package io.flix.examples;

import io.flix.flink.testing.KafkaBrokerExtension;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.LongAdder;

/**
 * The 'flix' lookup join against Flink's own event-time temporal join on a versioned upsert-kafka table, on the
 * same data in one run: a products upsert topic and an orders topic on an in-process Kafka broker.
 * <ul>
 *   <li>flix: {@code orders JOIN products FOR SYSTEM_TIME AS OF o.proc_time}, products a {@code 'flix'} table on
 *       the topic (its bootstrap, reading the whole topic, is part of the measured time);</li>
 *   <li>Flink: {@code orders JOIN products FOR SYSTEM_TIME AS OF o.event_time}, products an {@code upsert-kafka}
 *       table with a watermark (a versioned table held in keyed state).</li>
 * </ul>
 * Both read the orders topic bounded (to its end offsets) and emit every order once (each product was listed
 * before the first order's time), into a counting discard sink. Throughput: orders / wall time of the job,
 * planning and start included. A third job reads the orders alone, with no join: the most the source, the JSON
 * decoding and the sink allow on this machine. Run from the test classpath (the broker is Kafka's test kit):
 * {@code --products N --orders N --parallelism N}.
 */
public final class SqlLookupJoinBenchmark {

    private static final LongAdder JOINED = new LongAdder();
    private static final DateTimeFormatter SQL_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS");
    private static final LocalDateTime LISTED = LocalDateTime.of(2026, 1, 1, 0, 0);

    private SqlLookupJoinBenchmark() {
    }

    /** One pipeline's result. */
    record Result(String name, long joined, double seconds) {
        double throughput() {
            return joined / seconds;
        }
    }

    public static void main(String[] args) throws Exception {
        run(option(args, "--products", 200_000), option(args, "--orders", 2_000_000),
                (int) option(args, "--parallelism", 2));
    }

    /** Runs both pipelines, prints a line each and the ratio; returns flix's and Flink's results. */
    static Result[] run(long products, long orders, int parallelism) throws Exception {
        final KafkaBrokerExtension broker = new KafkaBrokerExtension();
        broker.beforeAll(null);
        try {
            broker.createTopics(Map.of("products", 2, "orders", 2));
            final long written = System.nanoTime();
            write(broker, products, orders);
            System.out.printf(Locale.ROOT, "wrote %d products and %d orders to Kafka in %.1f s%n", products, orders,
                    (System.nanoTime() - written) / 1e9);
            final Result scan = join(broker, parallelism, Pipeline.SCAN);
            print(scan);
            final Result flix = join(broker, parallelism, Pipeline.FLIX);
            print(flix);
            final Result flink = join(broker, parallelism, Pipeline.TEMPORAL);
            print(flink);
            System.out.printf(Locale.ROOT, "flix/temporal throughput ratio=%.2f%n",
                    flix.throughput() / flink.throughput());
            return new Result[] {flix, flink, scan};
        } finally {
            broker.afterAll(null);
        }
    }

    private static void print(Result r) {
        System.out.printf(Locale.ROOT, "%s: joined=%d seconds=%.1f throughput=%d%n", r.name(), r.joined(),
                r.seconds(), Math.round(r.throughput()));
    }

    /** The two joins, and the orders alone: the rate the source and the sink allow. */
    enum Pipeline { SCAN, FLIX, TEMPORAL }

    private static Result join(KafkaBrokerExtension broker, int parallelism, Pipeline pipeline) throws Exception {
        JOINED.reset();
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        final StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        final String kafka = "'properties.bootstrap.servers' = '" + broker.bootstrapServers() + "', ";
        tEnv.executeSql("CREATE TABLE orders (order_id BIGINT, product_id BIGINT, quantity INT, "
                + "event_time TIMESTAMP(3), proc_time AS PROCTIME(), "
                + "WATERMARK FOR event_time AS event_time) WITH ("
                + "'connector' = 'kafka', 'topic' = 'orders', " + kafka
                + "'properties.group.id' = 'bench', 'scan.startup.mode' = 'earliest-offset', "
                + "'scan.bounded.mode' = 'latest-offset', 'format' = 'json')");
        final String query;
        if (pipeline == Pipeline.SCAN) {
            query = "SELECT o.order_id, o.product_id, o.quantity FROM orders AS o";
        } else if (pipeline == Pipeline.FLIX) {
            tEnv.getConfig().set("table.exec.async-lookup.buffer-capacity", "1024");
            tEnv.getConfig().set("table.exec.async-lookup.output-mode", "ALLOW_UNORDERED");
            tEnv.executeSql("CREATE TABLE products (id BIGINT, name STRING, price DOUBLE, "
                    + "PRIMARY KEY (id) NOT ENFORCED) WITH ("
                    + "'connector' = 'flix', 'topic' = 'products', " + kafka
                    + "'key.format' = 'json', 'value.format' = 'json', 'lookup.batch-size' = '1024')");
            query = "SELECT o.order_id, p.name, p.price * o.quantity FROM orders AS o "
                    + "JOIN products FOR SYSTEM_TIME AS OF o.proc_time AS p ON o.product_id = p.id";
        } else {
            tEnv.executeSql("CREATE TABLE products (id BIGINT, name STRING, price DOUBLE, update_time TIMESTAMP(3), "
                    + "WATERMARK FOR update_time AS update_time, PRIMARY KEY (id) NOT ENFORCED) WITH ("
                    + "'connector' = 'upsert-kafka', 'topic' = 'products', " + kafka
                    + "'properties.group.id' = 'bench-products', 'scan.bounded.mode' = 'latest-offset', "
                    + "'key.format' = 'json', 'value.format' = 'json')");
            query = "SELECT o.order_id, p.name, p.price * o.quantity FROM orders AS o "
                    + "JOIN products FOR SYSTEM_TIME AS OF o.event_time AS p ON o.product_id = p.id";
        }
        tEnv.toDataStream(tEnv.sqlQuery(query)).filter(SqlLookupJoinBenchmark::count)
                .sinkTo(new DiscardingSink<>());
        final long start = System.nanoTime();
        final String name = switch (pipeline) {
            case SCAN -> "orders alone, no join";
            case FLIX -> "flix lookup join (proc time)";
            case TEMPORAL -> "Flink event-time temporal join (upsert-kafka)";
        };
        env.execute(name);
        return new Result(name, JOINED.sum(), (System.nanoTime() - start) / 1e9);
    }

    private static boolean count(Row row) {
        JOINED.increment();
        return false;
    }

    /** Products 1..n listed at {@link #LISTED}; orders after it, each for a random listed product. */
    private static void write(KafkaBrokerExtension broker, long products, long orders) {
        final Properties properties = broker.clientProperties();
        properties.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        // a fresh topic may answer NOT_LEADER_OR_FOLLOWER for a moment, which an idempotent producer's retry
        // can turn into a lost batch; without idempotence it is retried (the order does not matter here)
        properties.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        properties.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(1 << 20));
        FAILED_SENDS.reset();
        final String listed = SQL_TIME.format(LISTED);
        final SplittableRandom random = new SplittableRandom(42);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties)) {
            for (long id = 1; id <= products; id++) {
                producer.send(new ProducerRecord<>("products", "{\"id\":" + id + "}", "{\"id\":" + id
                        + ",\"name\":\"product-" + id + "\",\"price\":" + (id % 10_000) / 100.0
                        + ",\"update_time\":\"" + listed + "\"}"), SqlLookupJoinBenchmark::sent);
            }
            for (long i = 1; i <= orders; i++) {
                final String time = SQL_TIME.format(LISTED.plusSeconds(1).plusNanos(i * 1_000_000L));
                producer.send(new ProducerRecord<>("orders", "{\"order_id\":" + i + ",\"product_id\":"
                        + random.nextLong(1, products + 1) + ",\"quantity\":" + random.nextInt(1, 10)
                        + ",\"event_time\":\"" + time + "\"}"), SqlLookupJoinBenchmark::sent);
            }
            producer.flush();
        }
        if (FAILED_SENDS.sum() > 0) {
            throw new IllegalStateException(FAILED_SENDS.sum() + " records were not written to Kafka");
        }
    }

    private static final LongAdder FAILED_SENDS = new LongAdder();

    private static void sent(org.apache.kafka.clients.producer.RecordMetadata metadata, Exception e) {
        if (e != null) {
            FAILED_SENDS.increment();
        }
    }

    private static long option(String[] args, String name, long fallback) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return Long.parseLong(args[i + 1]);
            }
        }
        return fallback;
    }
}
