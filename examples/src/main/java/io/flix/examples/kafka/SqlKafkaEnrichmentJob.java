package io.flix.examples.kafka;

import io.flix.examples.Args;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

import java.util.List;
import java.util.Locale;

/**
 * The Kafka pipeline in SQL: orders from a Kafka topic joined to a {@code 'connector' = 'flix'} products table (kept
 * current from an upsert topic) with a processing-time lookup join, written to a Kafka topic exactly once.
 * <pre>{@code
 * INSERT INTO enriched
 * SELECT o.orderId, o.productId, o.quantity, p.name, p.category, p.priceCents, p.priceCents * o.quantity
 * FROM orders AS o
 * LEFT JOIN products FOR SYSTEM_TIME AS OF o.proc_time AS p ON o.productId = p.id
 * }</pre>
 * The orders topic holds what {@link KafkaEnrichmentJob} reads ({@code {"orderId":..,"productId":..,"quantity":..}});
 * the products topic is an upsert topic in the SQL connector's format: the key {@code {"id": 42}}, the value the
 * product's JSON ({@link JsonCodec#productJson}), a null value deletes. The lookups start once the table has applied
 * the products topic up to its end offsets (see docs/sql-connector.md), so products written before the job starts
 * are all there for its first order. Output: JSON objects with the fields of the {@code INSERT}, {@code name},
 * {@code category}, {@code priceCents} and {@code totalCents} null for an order of an unknown product; read the topic
 * with {@code read_committed}.
 *
 * <pre>
 * flink run -c io.flix.examples.kafka.SqlKafkaEnrichmentJob examples.jar --bootstrap-servers broker:9092 --bounded
 * </pre>
 * Options (all optional): {@code --bootstrap-servers} (localhost:9092), {@code --orders-topic} (orders),
 * {@code --products-topic} (products-sql), {@code --enriched-topic} (orders-enriched-sql), {@code --group-id}
 * (flix-sql-enrichment), {@code --transactional-id-prefix} (flix-sql-enrichment), {@code --parallelism} (2),
 * {@code --checkpoint-interval-ms} (10000), {@code --backend} (auto | cpu | gpu), {@code --bounded} (read the
 * orders up to the offsets that were the latest at start, then finish). The main submits the job and returns.
 */
public final class SqlKafkaEnrichmentJob {

    private SqlKafkaEnrichmentJob() {
    }

    public static void main(String[] args) throws Exception {
        final Args options = Args.of(args);
        final TableResult result = submit(options);
        System.out.println("submitted: " + result.getJobClient().map(c -> c.getJobID().toString()).orElse("?"));
    }

    /** Declares the tables and submits the {@code INSERT}; returns its result (the job runs on). */
    static TableResult submit(Args options) {
        final String servers = options.text("--bootstrap-servers", "localhost:9092");
        final String groupId = options.text("--group-id", "flix-sql-enrichment");
        final String backend = options.text("--backend", "auto").toLowerCase(Locale.ROOT);
        if (!List.of("auto", "cpu", "gpu").contains(backend)) {
            throw new IllegalArgumentException("--backend takes auto, cpu or gpu, not " + backend);
        }
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism((int) options.number("--parallelism", 2));
        env.enableCheckpointing(options.number("--checkpoint-interval-ms", 10_000));
        final StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set("table.exec.async-lookup.buffer-capacity", "1024");
        tEnv.getConfig().set("table.exec.async-lookup.output-mode", "ALLOW_UNORDERED");

        tEnv.executeSql("CREATE TABLE orders ("
                + "  orderId BIGINT, productId BIGINT, quantity INT, proc_time AS PROCTIME()"
                + ") WITH ("
                + "  'connector' = 'kafka', 'topic' = " + literal(options.text("--orders-topic", "orders")) + ","
                + "  'properties.bootstrap.servers' = " + literal(servers) + ","
                + "  'properties.group.id' = " + literal(groupId) + ","
                + "  'properties.isolation.level' = 'read_committed',"
                + "  'scan.startup.mode' = 'earliest-offset',"
                + (options.flag("--bounded") ? "  'scan.bounded.mode' = 'latest-offset'," : "")
                + "  'format' = 'json')");
        tEnv.executeSql("CREATE TABLE products ("
                + "  id BIGINT, name STRING, priceCents BIGINT, category STRING,"
                + "  PRIMARY KEY (id) NOT ENFORCED"
                + ") WITH ("
                + "  'connector' = 'flix', 'topic' = " + literal(options.text("--products-topic", "products-sql")) + ","
                + "  'properties.bootstrap.servers' = " + literal(servers) + ","
                + "  'key.format' = 'json', 'value.format' = 'json',"
                + "  'index.backend' = " + literal(backend) + ")");
        tEnv.executeSql("CREATE TABLE enriched ("
                + "  orderId BIGINT, productId BIGINT, quantity INT, name STRING, category STRING,"
                + "  priceCents BIGINT, totalCents BIGINT"
                + ") WITH ("
                + "  'connector' = 'kafka',"
                + "  'topic' = " + literal(options.text("--enriched-topic", "orders-enriched-sql")) + ","
                + "  'properties.bootstrap.servers' = " + literal(servers) + ","
                + "  'properties.transaction.timeout.ms' = '600000',"
                + "  'sink.delivery-guarantee' = 'exactly-once',"
                + "  'sink.transactional-id-prefix' = "
                + literal(options.text("--transactional-id-prefix", "flix-sql-enrichment")) + ","
                + "  'format' = 'json')");
        return tEnv.executeSql("INSERT INTO enriched "
                + "SELECT o.orderId, o.productId, o.quantity, p.name, p.category, p.priceCents, "
                + "p.priceCents * o.quantity "
                + "FROM orders AS o "
                + "LEFT JOIN products FOR SYSTEM_TIME AS OF o.proc_time AS p ON o.productId = p.id");
    }

    private static String literal(String text) {
        return "'" + text.replace("'", "''") + "'";
    }
}
