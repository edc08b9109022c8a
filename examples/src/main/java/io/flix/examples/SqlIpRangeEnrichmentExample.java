package io.flix.examples;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;

import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * IP-range enrichment in plain SQL, embedded (a local Flink job: no cluster, no Kafka, no GPU needed): each
 * connection's IPv4 address is located in a {@code 'flix'} table of address ranges whose lookups answer with the
 * floor row, the range that starts last at or below the address ({@code 'lookup.match' = 'floor'}):
 * <pre>{@code
 * CREATE TABLE ip_ranges (
 *   first_ip BIGINT, last_ip BIGINT, country STRING, asn BIGINT,
 *   PRIMARY KEY (first_ip) NOT ENFORCED
 * ) WITH ('connector' = 'flix', 'changelog' = 'file', 'file.path' = '...', 'lookup.match' = 'floor');
 *
 * SELECT c.id, c.ip, r.first_ip, r.last_ip, r.country, r.asn
 * FROM connections AS c
 * LEFT JOIN ip_ranges FOR SYSTEM_TIME AS OF c.proc_time AS r
 *   ON c.ip = r.first_ip AND c.ip <= r.last_ip
 * }</pre>
 * The equality is the floor lookup; Flink checks {@code c.ip <= r.last_ip} on the range found, so an address in a
 * gap between ranges comes out with nulls (unknown). The ranges must not overlap. No other condition of the query
 * may name {@code c.ip} or {@code r.first_ip} (the connector refuses such a join when it is planned: see the package
 * documentation of {@code io.flix.flink.table}).
 *
 * <p>The ranges are those of the DataStream demo ({@link IpRangeEnrichmentJob#generateRanges}: gaps, single
 * addresses, CIDR blocks), written to a JSON-lines file first; with Kafka the table would take {@code 'topic'} and
 * {@code 'properties.bootstrap.servers'} instead. The connections come from a parallel generator
 * ({@link IpRangeEnrichmentJob#connectionAddress}: spread over the whole IPv4 space); each lookup subtask reads the
 * task manager's whole table. It prints a few located connections and, as its last line,
 * {@code connections=<count> located=<count> unknown=<count> throughput=<connections/s> seconds=<s>}.
 *
 * <p>Arguments (all optional): {@code --ranges N} (100,000), {@code --connections N} (1,000,000),
 * {@code --parallelism N} (2).
 */
public final class SqlIpRangeEnrichmentExample {

    /** Local mode: the job runs in this JVM, so a static counter sees every row. */
    private static final LongAdder LOCATED = new LongAdder();
    private static final LongAdder UNKNOWN = new LongAdder();
    private static final AtomicInteger PRINTED = new AtomicInteger();

    private SqlIpRangeEnrichmentExample() {
    }

    public static void main(String[] args) throws Exception {
        final Args options = Args.of(args);
        final long ranges = options.number("--ranges", 100_000);
        final long connections = options.number("--connections", 1_000_000);
        final long parallelism = options.number("--parallelism", 2);
        if (ranges < 1 || ranges > 1 << 24 || connections < 0 || parallelism < 1 || parallelism > 1024) {
            throw new IllegalArgumentException("--ranges must be 1 to " + (1 << 24) + ", --connections >= 0 and "
                    + "--parallelism 1 to 1024; were " + ranges + ", " + connections + " and " + parallelism);
        }
        run((int) ranges, connections, (int) parallelism);
    }

    /** Runs the join on {@code generateRanges(rangeCount, 1)} and prints its lines. */
    static IpRangeEnrichmentJob.Summary run(int rangeCount, long connectionCount, int parallelism) throws Exception {
        LOCATED.reset();
        UNKNOWN.reset();
        PRINTED.set(0);
        final Path file = Files.createTempFile("flix-ip-ranges", ".jsonl");
        try {
            writeRanges(file, IpRangeEnrichmentJob.generateRanges(rangeCount, 1));
            final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(parallelism);
            final StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
            // let each lookup subtask keep a whole batch in flight (Flink's default is 100)
            tEnv.getConfig().set("table.exec.async-lookup.buffer-capacity", "1024");
            tEnv.getConfig().set("table.exec.async-lookup.output-mode", "ALLOW_UNORDERED");

            final TypeInformation<Row> connectionType = Types.ROW_NAMED(new String[] {"id", "ip"}, Types.LONG,
                    Types.LONG);
            final DataStream<Row> connections = env.fromSource(GeneratedSource.of(
                            i -> Row.of(i, IpRangeEnrichmentJob.connectionAddress(i)), connectionCount, connectionType),
                    WatermarkStrategy.noWatermarks(), "connections");
            tEnv.createTemporaryView("connections", tEnv.fromDataStream(connections,
                    Schema.newBuilder().columnByExpression("proc_time", "PROCTIME()").build()));
            tEnv.executeSql("CREATE TABLE ip_ranges ("
                    + "  first_ip BIGINT, last_ip BIGINT, country STRING, asn BIGINT,"
                    + "  PRIMARY KEY (first_ip) NOT ENFORCED"
                    + ") WITH ("
                    + "  'connector' = 'flix', 'changelog' = 'file', 'file.path' = '" + file + "',"
                    + "  'lookup.match' = 'floor', 'lookup.batch-size' = '1024', 'lookup.linger' = '2 ms')");
            final DataStream<Row> located = tEnv.toDataStream(tEnv.sqlQuery(
                    "SELECT c.id, c.ip, r.first_ip, r.last_ip, r.country, r.asn "
                            + "FROM connections AS c "
                            + "LEFT JOIN ip_ranges FOR SYSTEM_TIME AS OF c.proc_time AS r "
                            + "  ON c.ip = r.first_ip AND c.ip <= r.last_ip"));
            located.filter(SqlIpRangeEnrichmentExample::count).sinkTo(new DiscardingSink<>());

            final long start = System.nanoTime();
            env.execute("flix SQL IP-range enrichment");
            final double seconds = (System.nanoTime() - start) / 1e9;
            final IpRangeEnrichmentJob.Summary summary = new IpRangeEnrichmentJob.Summary(
                    LOCATED.sum() + UNKNOWN.sum(), LOCATED.sum(), UNKNOWN.sum());
            System.out.printf(Locale.ROOT, "connections=%d located=%d unknown=%d throughput=%d seconds=%.1f%n",
                    summary.connections(), summary.located(), summary.unknown(),
                    Math.round(summary.connections() / seconds), seconds);
            return summary;
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** Counts a located (or unknown) connection, prints the first few; keeps none. */
    private static boolean count(Row row) {
        final boolean found = row.getField(2) != null;
        (found ? LOCATED : UNKNOWN).increment();
        if (PRINTED.get() < 5 && PRINTED.incrementAndGet() <= 5) {
            final Connection connection = new Connection((Long) row.getField(0), (Long) row.getField(1));
            final IpRange range = found ? new IpRange((Long) row.getField(2), (Long) row.getField(3),
                    (String) row.getField(4), (Long) row.getField(5)) : null;
            System.out.println(new Located(connection, range));
        }
        return false;
    }

    /** The table's changelog: one JSON line per range. */
    private static void writeRanges(Path file, List<IpRange> ranges) throws Exception {
        try (BufferedWriter out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            for (IpRange range : ranges) {
                out.write("{\"first_ip\":" + range.first + ",\"last_ip\":" + range.last + ",\"country\":\""
                        + range.country + "\",\"asn\":" + range.asn + "}\n");
            }
        }
    }
}
