package io.flix.examples;

import io.flix.flink.testing.KafkaBrokerExtension;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.util.FileUtils;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The {@code 'flix'} lookup join beside what users run today, on the same data in one run: for each products size,
 * the same orders (on an in-process Kafka broker) are joined with the products by every {@link Contestant}, each
 * job reading the orders topic bounded (to its end offsets) into a sink that checks every joined row
 * ({@link JoinedOrders}). The products live where each contestant keeps them: an upsert topic on the broker (flix,
 * the temporal join), a table in a PostgreSQL server started by this JVM and loaded with COPY (the JDBC joins), a
 * Paimon table in a local warehouse (Paimon). Loading PostgreSQL and Paimon is done before their jobs and timed
 * apart; flix's bootstrap from the topic and the temporal join's reading of it are part of their jobs. Flink's JDBC
 * connector has no full lookup cache: {@code 'lookup.cache' = 'FULL'} is accepted and runs without a cache, which
 * its contestant shows (every lookup reaches the database).
 *
 * <p>Per contestant: orders/s over the whole job (planning and start included), orders/s from the first joined
 * row on, the time to the first joined row, the live heap when half the orders have come out (over the live heap
 * before the job: the broker and the benchmark's own data are not counted; the orders alone show what the
 * pipeline itself holds), the job's local files then (Flink's {@code io.tmp.dirs}: Paimon's lookup files) and the
 * dimension's own store (PostgreSQL's table with its index, Paimon's warehouse). The measurement holds the sinks
 * and is taken out of the job's time.
 *
 * <p>Run from the test class path (the broker is Kafka's test kit):
 * {@code --products 1000000,10000000 --orders 2000000 --parallelism 2 [--contestants flix,jdbc-full,...]}.
 */
public final class SqlLookupJoinBenchmark {

    private static final DateTimeFormatter SQL_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS");

    private SqlLookupJoinBenchmark() {
    }

    /** The jobs compared: the orders alone (the source's and the sink's ceiling), then each join. */
    enum Contestant {
        SCAN("orders alone, no join"),
        FLIX("flix lookup join"),
        JDBC_NO_CACHE("JDBC lookup join on PostgreSQL, no cache"),
        JDBC_PARTIAL("JDBC lookup join on PostgreSQL, PARTIAL cache"),
        JDBC_FULL("JDBC lookup join on PostgreSQL, 'lookup.cache' = 'FULL'"),
        PAIMON("Paimon lookup join"),
        TEMPORAL("event-time temporal join on upsert-kafka");

        final String label;

        Contestant(String label) {
            this.label = label;
        }

        /** The name on the command line: {@code jdbc-full} for JDBC_FULL. */
        String argument() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }

        boolean usesPostgres() {
            return this == JDBC_NO_CACHE || this == JDBC_PARTIAL || this == JDBC_FULL;
        }
    }

    /**
     * One job's result; -1 where not applicable. {@code storeBytes}: the dimension's own store (PostgreSQL's table
     * and index, Paimon's warehouse); {@code storeReads}: the lookups that reached PostgreSQL.
     */
    record Result(Contestant contestant, long products, long orders, long joined, long wrong, double seconds,
                  double firstRowSeconds, long liveHeapBytes, long localDiskBytes, long storeBytes,
                  long storeReads) {

        double throughput() {
            return joined / seconds;
        }

        /** Orders per second from the first joined row to the end of the job. */
        double throughputAfterFirstRow() {
            return joined / (seconds - firstRowSeconds);
        }
    }

    public static void main(String[] args) throws Exception {
        final Args options = Args.of(args);
        final long[] products = Arrays.stream(options.text("--products", "1000000").split(","))
                .mapToLong(Long::parseLong).toArray();
        final Set<Contestant> contestants = EnumSet.noneOf(Contestant.class);
        for (String name : options.text("--contestants", all()).split(",")) {
            contestants.add(contestant(name));
        }
        final List<Result> results = run(products, options.number("--orders", 2_000_000),
                (int) options.number("--parallelism", 2), contestants);
        System.out.println();
        System.out.println(table(results));
    }

    /** Runs every contestant at every products size; each job's rows must all be right, or this throws. */
    static List<Result> run(long[] productSizes, long orders, int parallelism, Set<Contestant> contestants)
            throws Exception {
        final List<Result> results = new ArrayList<>();
        final KafkaBrokerExtension broker = new KafkaBrokerExtension();
        broker.beforeAll(null);
        try {
            for (long products : productSizes) {
                final Topics topics = new Topics("products-" + products, "orders-" + products);
                broker.createTopics(Map.of(topics.products(), parallelism, topics.orders(), parallelism));
                final long written = System.nanoTime();
                write(broker, topics, products, orders);
                System.out.printf(Locale.ROOT, "wrote %d products and %d orders to Kafka in %.1f s%n", products,
                        orders, (System.nanoTime() - written) / 1e9);
                final Stores stores = new Stores(products, parallelism, contestants);
                try {
                    for (Contestant contestant : contestants) {
                        final Result result = join(broker, topics, stores, products, orders, parallelism,
                                contestant);
                        print(result);
                        results.add(result);
                    }
                } finally {
                    stores.close();
                }
            }
        } finally {
            broker.afterAll(null);
        }
        return results;
    }

    /** The products' topics on the broker, one pair per products size. */
    private record Topics(String products, String orders) {
    }

    /** PostgreSQL and Paimon, loaded once per products size for the contestants that use them. */
    private static final class Stores implements AutoCloseable {
        PostgresProducts postgres;
        PaimonProducts paimon;

        Stores(long products, int parallelism, Set<Contestant> contestants) throws Exception {
            try {
                if (contestants.stream().anyMatch(Contestant::usesPostgres)) {
                    final long start = System.nanoTime();
                    postgres = PostgresProducts.load(products);
                    System.out.printf(Locale.ROOT, "%s: started and loaded %d products with COPY in %.1f s, "
                                    + "table and index %s%n", postgres.describe(), products,
                            (System.nanoTime() - start) / 1e9, mib(postgres.tableBytes()));
                }
                if (contestants.contains(Contestant.PAIMON)) {
                    final long start = System.nanoTime();
                    paimon = PaimonProducts.load(products, parallelism);
                    System.out.printf(Locale.ROOT, "Paimon: wrote %d products in %.1f s, warehouse %s%n", products,
                            (System.nanoTime() - start) / 1e9, mib(paimon.bytes()));
                }
            } catch (Exception e) {
                close();
                throw e;
            }
        }

        @Override
        public void close() throws Exception {
            if (paimon != null) {
                paimon.close();
            }
            if (postgres != null) {
                postgres.close();
            }
        }
    }

    private static Result join(KafkaBrokerExtension broker, Topics topics, Stores stores, long products,
                               long orders, int parallelism, Contestant contestant) throws Exception {
        final Path localFiles = Files.createTempDirectory("flix-bench-io");
        try {
            final Configuration configuration = new Configuration();
            configuration.set(CoreOptions.TMP_DIRS, localFiles.toString());
            final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(configuration);
            env.setParallelism(parallelism);
            final StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
            final String kafka = "'properties.bootstrap.servers' = '" + broker.bootstrapServers() + "', ";
            tEnv.executeSql("CREATE TABLE orders (order_id BIGINT, product_id BIGINT, quantity INT, "
                    + "event_time TIMESTAMP(3), proc_time AS PROCTIME(), "
                    + "WATERMARK FOR event_time AS event_time) WITH ("
                    + "'connector' = 'kafka', 'topic' = '" + topics.orders() + "', " + kafka
                    + "'properties.group.id' = 'bench', 'scan.startup.mode' = 'earliest-offset', "
                    + "'scan.bounded.mode' = 'latest-offset', 'format' = 'json')");
            final String dimension = declareProducts(tEnv, contestant, topics, kafka, stores, products);
            final String query = contestant == Contestant.SCAN
                    ? "SELECT o.order_id, o.product_id, o.quantity FROM orders AS o"
                    : "SELECT o.order_id, o.product_id, o.quantity, p.id, p.name, p.price, p.price * o.quantity "
                    + "FROM orders AS o JOIN " + dimension + " FOR SYSTEM_TIME AS OF "
                    + (contestant == Contestant.TEMPORAL ? "o.event_time" : "o.proc_time")
                    + " AS p ON o.product_id = p.id";
            tEnv.toDataStream(tEnv.sqlQuery(query)).filter(JoinedOrders::accept).sinkTo(new DiscardingSink<>());

            final long heapBefore = LiveHeap.bytes();
            JoinedOrders.reset(orders, products, () -> new JoinedOrders.Footprint(
                    LiveHeap.bytes() - heapBefore, jobFilesBytes(localFiles)));
            final long readsBefore = contestant.usesPostgres() ? stores.postgres.reads() : -1;
            final long start = System.nanoTime();
            env.execute(contestant.label);
            final long end = System.nanoTime();

            if (JoinedOrders.wrong() > 0 || JoinedOrders.rows() != orders) {
                throw new IllegalStateException(contestant.label + " at " + products + " products: "
                        + JoinedOrders.rows() + " rows of " + orders + " orders, " + JoinedOrders.wrong()
                        + " wrong; the first wrong: " + JoinedOrders.firstWrong());
            }
            final long storeReads = contestant.usesPostgres() ? stores.postgres.reads() - readsBefore : -1;
            final double held = JoinedOrders.heldNanos() / 1e9;
            final JoinedOrders.Footprint footprint = JoinedOrders.footprint();
            return new Result(contestant, products, orders, JoinedOrders.rows(), JoinedOrders.wrong(),
                    (end - start) / 1e9 - held, (JoinedOrders.firstRowNanos() - start) / 1e9,
                    footprint == null ? -1 : footprint.liveHeapBytes(),
                    footprint == null ? -1 : footprint.localDiskBytes(), storeBytes(contestant, stores), storeReads);
        } finally {
            FileUtils.deleteDirectory(localFiles.toFile());
        }
    }

    /** Declares the contestant's products table; returns its name in the query. */
    private static String declareProducts(StreamTableEnvironment tEnv, Contestant contestant, Topics topics,
                                          String kafka, Stores stores, long products) {
        final String columns = "id BIGINT, name STRING, price DOUBLE, PRIMARY KEY (id) NOT ENFORCED";
        final String jdbc = stores.postgres == null ? null : "'connector' = 'jdbc', 'url' = '"
                + stores.postgres.jdbcUrl() + "', 'table-name' = 'products'";
        switch (contestant) {
            case SCAN:
                return null;
            case FLIX:
                tEnv.getConfig().set("table.exec.async-lookup.buffer-capacity", "1024");
                tEnv.getConfig().set("table.exec.async-lookup.output-mode", "ALLOW_UNORDERED");
                tEnv.executeSql("CREATE TABLE products (" + columns + ") WITH ('connector' = 'flix', "
                        + "'topic' = '" + topics.products() + "', " + kafka
                        + "'key.format' = 'json', 'value.format' = 'json', 'lookup.batch-size' = '1024')");
                return "products";
            case JDBC_NO_CACHE:
                tEnv.executeSql("CREATE TABLE products (" + columns + ") WITH (" + jdbc + ")");
                return "products";
            case JDBC_PARTIAL:
                // room for every product: the cache's best case; rows stay until the job ends
                tEnv.executeSql("CREATE TABLE products (" + columns + ") WITH (" + jdbc + ", "
                        + "'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '" + products + "')");
                return "products";
            case JDBC_FULL:
                // accepted, but the connector builds no full cache, nor any (JdbcLookupCacheTest): what a user who
                // asks for one gets
                tEnv.executeSql("CREATE TABLE products (" + columns + ") WITH (" + jdbc + ", "
                        + "'lookup.cache' = 'FULL')");
                return "products";
            case PAIMON:
                tEnv.executeSql(stores.paimon.catalogDdl());
                return PaimonProducts.TABLE;
            case TEMPORAL:
                tEnv.executeSql("CREATE TABLE products (id BIGINT, name STRING, price DOUBLE, "
                        + "update_time TIMESTAMP(3), WATERMARK FOR update_time AS update_time, "
                        + "PRIMARY KEY (id) NOT ENFORCED) WITH ("
                        + "'connector' = 'upsert-kafka', 'topic' = '" + topics.products() + "', " + kafka
                        + "'properties.group.id' = 'bench-products', 'scan.bounded.mode' = 'latest-offset', "
                        + "'key.format' = 'json', 'value.format' = 'json')");
                return "products";
            default:
                throw new IllegalArgumentException("no products table for " + contestant);
        }
    }

    /** What the job wrote under Flink's local directories, less the RPC system's jar that every start unpacks. */
    private static long jobFilesBytes(Path localFiles) throws IOException {
        try (Stream<Path> files = Files.walk(localFiles)) {
            return files.filter(f -> Files.isRegularFile(f) && !f.getFileName().toString().startsWith("flink-rpc-"))
                    .mapToLong(f -> f.toFile().length()).sum();
        }
    }

    private static long storeBytes(Contestant contestant, Stores stores) throws Exception {
        if (contestant.usesPostgres()) {
            return stores.postgres.tableBytes();
        }
        return contestant == Contestant.PAIMON ? stores.paimon.bytes() : -1;
    }

    private static void print(Result r) {
        // the end time (UTC) places the job among load samples taken beside the run
        System.out.printf(Locale.ROOT, "%s %s, %d products: joined=%d seconds=%.1f throughput=%d after-first-row=%d "
                        + "first-row=%.2f s live-heap=%s local-files=%s store=%s store-reads=%s%n",
                LocalTime.now(ZoneOffset.UTC).truncatedTo(ChronoUnit.SECONDS), r.contestant().label, r.products(),
                r.joined(), r.seconds(), Math.round(r.throughput()),
                Math.round(r.throughputAfterFirstRow()), r.firstRowSeconds(), mib(r.liveHeapBytes()),
                mib(r.localDiskBytes()), mib(r.storeBytes()), count(r.storeReads()));
    }

    /** The results as a Markdown table. */
    static String table(List<Result> results) {
        final StringBuilder out = new StringBuilder("| products | orders | contestant | orders/s | orders/s after "
                + "the first row | first joined row | live heap at half the orders | local files | store | "
                + "lookups reaching PostgreSQL | rows right |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (Result r : results) {
            out.append(String.format(Locale.ROOT,
                    "| %,d | %,d | %s | %,d | %,d | %.2f s | %s | %s | %s | %s | %,d of %,d |%n", r.products(), r.orders(), r.contestant().label, Math.round(r.throughput()),
                    Math.round(r.throughputAfterFirstRow()), r.firstRowSeconds(), mib(r.liveHeapBytes()),
                    mib(r.localDiskBytes()), mib(r.storeBytes()), count(r.storeReads()), r.joined() - r.wrong(),
                    r.orders()));
        }
        return out.toString();
    }

    private static String count(long n) {
        return n < 0 ? "-" : String.format(Locale.ROOT, "%,d", n);
    }

    private static String mib(long bytes) {
        return bytes < 0 ? "-" : String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }

    /** Products 1..n to an upsert topic, listed at {@link SqlBenchmarkData#LISTED}; orders 1..m after it. */
    private static void write(KafkaBrokerExtension broker, Topics topics, long products, long orders) {
        final Properties properties = broker.clientProperties();
        properties.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        // a fresh topic may answer NOT_LEADER_OR_FOLLOWER for a moment, which an idempotent producer's retry
        // can turn into a lost batch; without idempotence it is retried (the order does not matter here)
        properties.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        properties.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(1 << 20));
        FAILED_SENDS.reset();
        final String listed = SQL_TIME.format(SqlBenchmarkData.LISTED);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties)) {
            for (long id = 1; id <= products; id++) {
                producer.send(new ProducerRecord<>(topics.products(), "{\"id\":" + id + "}", "{\"id\":" + id
                        + ",\"name\":\"" + SqlBenchmarkData.name(id) + "\",\"price\":" + SqlBenchmarkData.price(id)
                        + ",\"update_time\":\"" + listed + "\"}"), SqlLookupJoinBenchmark::sent);
            }
            for (long i = 1; i <= orders; i++) {
                producer.send(new ProducerRecord<>(topics.orders(), "{\"order_id\":" + i + ",\"product_id\":"
                        + SqlBenchmarkData.productOf(i, products) + ",\"quantity\":"
                        + SqlBenchmarkData.quantityOf(i) + ",\"event_time\":\""
                        + SQL_TIME.format(SqlBenchmarkData.orderTime(i)) + "\"}"), SqlLookupJoinBenchmark::sent);
            }
            producer.flush();
        }
        if (FAILED_SENDS.sum() > 0) {
            throw new IllegalStateException(FAILED_SENDS.sum() + " records were not written to Kafka");
        }
    }

    private static final LongAdder FAILED_SENDS = new LongAdder();

    private static void sent(RecordMetadata metadata, Exception e) {
        if (e != null) {
            FAILED_SENDS.increment();
        }
    }

    private static String all() {
        return Arrays.stream(Contestant.values()).map(Contestant::argument).collect(Collectors.joining(","));
    }

    private static Contestant contestant(String argument) {
        for (Contestant c : Contestant.values()) {
            if (c.argument().equals(argument.trim())) {
                return c;
            }
        }
        throw new IllegalArgumentException("--contestants: no contestant '" + argument + "'; known: " + all());
    }
}
