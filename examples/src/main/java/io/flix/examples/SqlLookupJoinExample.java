package io.flix.examples;

import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;

import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * The SQL lookup join, embedded: a local Flink job (no cluster, no Kafka, no GPU needed) that joins generated
 * orders to a {@code 'connector' = 'flix'} products table with a plain processing-time lookup join:
 * <pre>{@code
 * SELECT o.order_id, o.product_id, p.name, p.price
 * FROM orders AS o LEFT JOIN products FOR SYSTEM_TIME AS OF o.proc_time AS p ON o.product_id = p.id
 * }</pre>
 * The products' changelog is a JSON-lines file written first ({@code 'changelog' = 'file'}); with Kafka it would
 * be {@code 'topic'} and {@code 'properties.bootstrap.servers'} instead. Every tenth order asks for a product that
 * does not exist. It prints a few joined rows and, as its last line,
 * {@code joined=<orders> matched=<count> throughput=<orders/s> seconds=<s>}.
 *
 * <p>Arguments (all optional): {@code --products N --orders N --parallelism N}.
 */
public final class SqlLookupJoinExample {

    /** Local mode: the job runs in this JVM, so a static counter sees every row. */
    private static final LongAdder JOINED = new LongAdder();
    private static final LongAdder MATCHED = new LongAdder();
    private static final AtomicInteger PRINTED = new AtomicInteger();

    private SqlLookupJoinExample() {
    }

    public static void main(String[] args) throws Exception {
        final Args options = Args.of(args);
        run(options.number("--products", 1_000_000), options.number("--orders", 3_000_000),
                (int) options.number("--parallelism", 2));
    }

    /** Runs the join and prints its lines; returns the number of joined orders. */
    static long run(long products, long orders, int parallelism) throws Exception {
        JOINED.reset();
        MATCHED.reset();
        PRINTED.set(0);
        final Path file = Files.createTempFile("flix-products", ".jsonl");
        try {
            writeProducts(file, products);
            final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(parallelism);
            final StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
            // let each lookup subtask keep a whole batch in flight (Flink's default is 100)
            tEnv.getConfig().set("table.exec.async-lookup.buffer-capacity", "1024");
            tEnv.getConfig().set("table.exec.async-lookup.output-mode", "ALLOW_UNORDERED");

            tEnv.executeSql("CREATE TABLE orders ("
                    + "  order_id BIGINT, product_id BIGINT, quantity INT, proc_time AS PROCTIME()"
                    + ") WITH ("
                    + "  'connector' = 'datagen', 'number-of-rows' = '" + orders + "', 'rows-per-second' = '1000000000',"
                    + "  'fields.order_id.kind' = 'sequence', 'fields.order_id.start' = '1',"
                    + "  'fields.order_id.end' = '" + orders + "',"
                    + "  'fields.product_id.min' = '1', 'fields.product_id.max' = '" + (products + products / 9) + "',"
                    + "  'fields.quantity.min' = '1', 'fields.quantity.max' = '9')");
            tEnv.executeSql("CREATE TABLE products ("
                    + "  id BIGINT, name STRING, category STRING, price DECIMAL(10, 2),"
                    + "  PRIMARY KEY (id) NOT ENFORCED"
                    + ") WITH ("
                    + "  'connector' = 'flix', 'changelog' = 'file', 'file.path' = '" + file + "',"
                    + "  'value.format' = 'json', 'lookup.batch-size' = '1024', 'lookup.linger' = '2 ms')");
            final Table joined = tEnv.sqlQuery("SELECT o.order_id, o.product_id, p.name, p.category, p.price, "
                    + "o.quantity FROM orders AS o "
                    + "LEFT JOIN products FOR SYSTEM_TIME AS OF o.proc_time AS p ON o.product_id = p.id");
            final DataStream<Row> rows = tEnv.toDataStream(joined);
            rows.filter(SqlLookupJoinExample::count).sinkTo(new DiscardingSink<>());

            final long start = System.nanoTime();
            env.execute("flix SQL lookup join");
            final double seconds = (System.nanoTime() - start) / 1e9;
            final long joinedCount = JOINED.sum();
            System.out.printf(Locale.ROOT, "joined=%d matched=%d throughput=%d seconds=%.1f%n", joinedCount,
                    MATCHED.sum(), Math.round(joinedCount / seconds), seconds);
            return joinedCount;
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** Counts a joined row, prints the first few; keeps none. */
    private static boolean count(Row row) {
        JOINED.increment();
        if (row.getField(2) != null) {
            MATCHED.increment();
        }
        if (PRINTED.get() < 5 && PRINTED.incrementAndGet() <= 5) {
            System.out.println("order " + row.getField(0) + " -> product " + row.getField(1) + ": " + row.getField(2)
                    + ", " + row.getField(3) + ", " + row.getField(4) + " x " + row.getField(5));
        }
        return false;
    }

    /** The products' changelog: one JSON line per product, ids 1..n. */
    private static void writeProducts(Path file, long products) throws Exception {
        final String[] categories = {"books", "garden", "kitchen", "toys", "tools"};
        try (BufferedWriter out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            for (long id = 1; id <= products; id++) {
                out.write("{\"id\":" + id + ",\"name\":\"product-" + id + "\",\"category\":\""
                        + categories[(int) (id % categories.length)] + "\",\"price\":" + (id % 10_000) / 100.0 + "}\n");
            }
        }
    }
}
