package io.flix.flink.table;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Floor and ceiling lookup joins ({@code 'lookup.match'}) planned by Flink's planner and run on a MiniCluster: every
 * joined row is checked against a sorted map of the ranges, the plan keeps the equality on the key as the lookup
 * key only, and joins the planner would not honour are refused when they are planned.
 *
 * <p>The ranges are disjoint {@code [start_ip, end_ip]} with random lengths and gaps (a fixed seed per data set),
 * one table keyed by the start (floor) and one by the end (ceiling), from one file. The probes hit range starts and
 * ends exactly, fall inside and between ranges, below the first key and above the last one, and include
 * {@code Long.MIN_VALUE} and {@code Long.MAX_VALUE}; in the "edges" data set the ranges reach both extremes. The
 * probes come from a parallel source at parallelism 2, so both lookup subtasks answer over the whole table.
 */
class FlixOrderedLookupJoinITCase {

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(2)
                    .build());

    private static final int RANGES = 300;

    @TempDir
    Path dir;

    /** One data set: ranges in key order ({start, end}), and the probes. */
    private record DataSet(String name, List<long[]> ranges, long[] probes) {
    }

    /**
     * Disjoint ranges from a random seed, with lengths and gaps from 0 up (a gap of 0 makes ranges adjacent, a length
     * of 0 a single address); with {@code edges} the first starts at {@code Long.MIN_VALUE} and the last ends at
     * {@code Long.MAX_VALUE}, else they lie around zero.
     */
    private static DataSet dataSet(String name, long seed, boolean edges) {
        final Random random = new Random(seed);
        final List<long[]> ranges = new ArrayList<>();
        long next = edges ? Long.MIN_VALUE : -50_000;
        for (int i = 0; i < RANGES - 1; i++) {
            final long start = next + (i == 0 ? 0 : random.nextInt(4) == 0 ? 0 : random.nextInt(400));
            final long end = start + (random.nextInt(5) == 0 ? 0 : random.nextInt(300));
            ranges.add(new long[] {start, end});
            next = end + 1;
        }
        final long lastStart = next + random.nextInt(400);
        ranges.add(new long[] {lastStart, edges ? Long.MAX_VALUE : lastStart + 250});

        final TreeSet<Long> probes = new TreeSet<>(List.of(Long.MIN_VALUE, Long.MIN_VALUE + 1, Long.MAX_VALUE - 1,
                Long.MAX_VALUE, -1L, 0L, 1L));
        for (long[] range : ranges) {
            probes.add(range[0]);
            probes.add(range[1]);
            if (range[0] != Long.MIN_VALUE) {
                probes.add(range[0] - 1);
            }
            if (range[1] != Long.MAX_VALUE) {
                probes.add(range[1] + 1);
            }
            probes.add(range[0] + (long) (random.nextDouble() * (range[1] - range[0])));
        }
        final long low = ranges.get(0)[0];
        final long high = ranges.get(ranges.size() - 2)[1];
        for (int i = 0; i < 500; i++) {
            probes.add(low + (long) (random.nextDouble() * (high - low + 2_000)) - 1_000);
        }
        final long[] shuffled = probes.stream().mapToLong(Long::longValue).toArray();
        for (int i = shuffled.length - 1; i > 0; i--) {
            final int j = random.nextInt(i + 1);
            final long t = shuffled[i];
            shuffled[i] = shuffled[j];
            shuffled[j] = t;
        }
        return new DataSet(name, ranges, shuffled);
    }

    private static final DataSet AROUND_ZERO = dataSet("around-zero", 20_261_130L, false);
    private static final DataSet EDGES = dataSet("edges", 7_345_001L, true);

    static Stream<Arguments> joins() {
        final List<Arguments> cases = new ArrayList<>();
        for (DataSet data : List.of(AROUND_ZERO, EDGES)) {
            for (String match : List.of("floor", "ceiling")) {
                cases.add(Arguments.of(data.name(), match, "JOIN", true));
                cases.add(Arguments.of(data.name(), match, "LEFT JOIN", true));
                // the bare floor or ceiling row, in range or not
                cases.add(Arguments.of(data.name(), match, "LEFT JOIN", false));
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0}: {1}, {2}, range condition {3}")
    @MethodSource("joins")
    void everyJoinedRowIsTheSortedMapsAnswer(String dataName, String match, String join, boolean inRange)
            throws Exception {
        final DataSet data = dataName.equals(EDGES.name()) ? EDGES : AROUND_ZERO;
        final StreamTableEnvironment tEnv = environment(data);
        final boolean floor = match.equals("floor");
        final String key = floor ? "start_ip" : "end_ip";
        final String condition = "c.ip = r." + key
                + (inRange ? (floor ? " AND c.ip <= r.end_ip" : " AND c.ip >= r.start_ip") : "");
        final String query = "SELECT c.id, c.ip, r.start_ip, r.end_ip, r.name FROM probes AS c " + join + " "
                + (floor ? "ranges_by_start" : "ranges_by_end") + " FOR SYSTEM_TIME AS OF c.proc_time AS r ON "
                + condition;

        final List<String> got = new ArrayList<>();
        try (CloseableIterator<Row> rows = tEnv.executeSql(query).collect()) {
            rows.forEachRemaining(row -> got.add(row.getField(0) + "," + row.getField(1) + "," + row.getField(2)
                    + "," + row.getField(3) + "," + row.getField(4)));
        }
        Collections.sort(got);
        final List<String> expected = expected(data, floor, join.startsWith("LEFT"), inRange);
        assertEquals(expected.size(), got.size(), query);
        for (int i = 0; i < expected.size(); i++) {
            assertEquals(expected.get(i), got.get(i), "row " + i + " of " + query + " (data set " + dataName + ")");
        }
        // most rows are of another key than the probe's: a floor or ceiling, not an exact hit
        final int keyField = floor ? 2 : 3;
        assertTrue(got.stream().map(row -> row.split(",")).filter(f -> !f[keyField].equals("null")
                && !f[keyField].equals(f[1])).count() > data.ranges().size(), "rows of another key than the probe's");
    }

    /** The oracle: per probe, the floor (or ceiling) range of a sorted map, where the join keeps it. */
    private static List<String> expected(DataSet data, boolean floor, boolean left, boolean inRange) {
        final TreeMap<Long, long[]> byKey = new TreeMap<>();
        for (long[] range : data.ranges()) {
            byKey.put(floor ? range[0] : range[1], range);
        }
        final List<String> expected = new ArrayList<>();
        for (int id = 0; id < data.probes().length; id++) {
            final long ip = data.probes()[id];
            final Map.Entry<Long, long[]> found = floor ? byKey.floorEntry(ip) : byKey.ceilingEntry(ip);
            final boolean kept = found != null && (!inRange || (floor ? ip <= found.getValue()[1]
                    : ip >= found.getValue()[0]));
            if (kept) {
                final long[] range = found.getValue();
                expected.add(id + "," + ip + "," + range[0] + "," + range[1] + "," + name(range));
            } else if (left) {
                expected.add(id + "," + ip + ",null,null,null");
            }
        }
        Collections.sort(expected);
        return expected;
    }

    private static String name(long[] range) {
        return "r" + range[0];
    }

    /**
     * The plan: a lookup join whose lookup key is the equality on the key column, with the range condition left to
     * evaluate on each returned row, no condition on the table's rows, and the key column taken from the returned
     * row (no projection puts the probe in its place).
     */
    @Test
    void thePlanLooksUpByTheEqualityAndChecksTheRestOnTheReturnedRow() throws Exception {
        final StreamTableEnvironment tEnv = environment(AROUND_ZERO);
        final String plan = tEnv.explainSql("SELECT c.id, c.ip, r.start_ip, r.end_ip, r.name FROM probes AS c "
                + "LEFT JOIN ranges_by_start FOR SYSTEM_TIME AS OF c.proc_time AS r "
                + "ON c.ip = r.start_ip AND c.ip <= r.end_ip");
        final String physical = plan.substring(plan.indexOf("== Optimized Physical Plan =="),
                plan.indexOf("== Optimized Execution Plan =="));
        final List<String> lookupJoins = physical.lines().filter(line -> line.contains("LookupJoin(")).toList();
        assertEquals(1, lookupJoins.size(), physical);
        final String lookupJoin = lookupJoins.get(0);
        assertTrue(lookupJoin.contains("table=[default_catalog.default_database.ranges_by_start]"), lookupJoin);
        assertTrue(lookupJoin.contains("joinType=[LeftOuterJoin]"), lookupJoin);
        assertTrue(lookupJoin.contains("lookup=[start_ip=ip]"), lookupJoin);
        assertTrue(lookupJoin.contains("joinCondition=[<=(ip, end_ip)]"), lookupJoin);
        assertTrue(lookupJoin.contains("select=[id, ip, start_ip, end_ip, name]"), lookupJoin);
        assertFalse(lookupJoin.contains("where="), "no condition on the table's rows: " + lookupJoin);
        // the join is the plan's top: no projection above it could put c.ip in the place of r.start_ip
        assertTrue(physical.lines().skip(1).findFirst().orElseThrow().startsWith("LookupJoin("), physical);
    }

    /** Joins whose conditions Flink would apply to the returned row's key as if it were the probe: refused. */
    @Test
    void joinsThePlannerWouldNotHonourAreRefusedWhenPlanned() throws Exception {
        final StreamTableEnvironment tEnv = environment(AROUND_ZERO);
        final String join = "SELECT c.id, r.name FROM probes AS c JOIN ranges_by_start FOR SYSTEM_TIME AS OF "
                + "c.proc_time AS r ON ";
        // a condition on the probe column: the planner copies it onto the key column
        assertRefused(tEnv, join + "c.ip = r.start_ip WHERE c.ip > 120", "greaterThan(start_ip, 120)");
        assertRefused(tEnv, join + "c.ip = r.start_ip WHERE c.ip BETWEEN 120 AND 130",
                "greaterThanOrEqual(start_ip, 120)");
        assertRefused(tEnv, "SELECT c.id, r.name FROM probes AS c LEFT JOIN ranges_by_start FOR SYSTEM_TIME AS OF "
                + "c.proc_time AS r ON c.ip = r.start_ip WHERE c.ip < 0", "lessThan(start_ip, 0)");
        // a constant probe: the planner looks up the constant and requires the row's key to equal it
        assertRefused(tEnv, join + "c.ip = r.start_ip WHERE c.ip = 150", "equals(start_ip, 150)");
        assertRefused(tEnv, join + "r.start_ip = 150", "equals(start_ip, 150)");
        // a condition on the key column itself
        assertRefused(tEnv, join + "c.ip = r.start_ip AND r.start_ip > 120", "greaterThan(start_ip, 120)");
        // a composite lookup key
        final Throwable composite = assertThrows(Throwable.class,
                () -> tEnv.explainSql(join + "c.ip = r.start_ip AND c.id = r.end_ip"));
        assertTrue(messages(composite).contains("must equate its primary key column 'start_ip' only")
                && messages(composite).contains("['end_ip']"), messages(composite));
    }

    /** The same joins on an exact table are planned as before: the planner keeps its conditions. */
    @Test
    void anExactTableKeepsConditionsOnTheKey() throws Exception {
        final StreamTableEnvironment tEnv = environment(AROUND_ZERO);
        final String plan = tEnv.explainSql("SELECT c.id, r.name FROM probes AS c JOIN ranges_exact FOR SYSTEM_TIME "
                + "AS OF c.proc_time AS r ON c.ip = r.start_ip WHERE c.ip > 120");
        assertTrue(plan.contains("where=[>(start_ip, 120)]"), plan);
    }

    private static void assertRefused(StreamTableEnvironment tEnv, String query, String condition) {
        final Throwable thrown = assertThrows(Throwable.class, () -> tEnv.explainSql(query), query);
        final String messages = messages(thrown);
        assertTrue(messages.contains("'lookup.match' = 'floor' cannot honour the condition " + condition
                + " on its primary key column 'start_ip'"), query + " -> " + messages);
    }

    private static String messages(Throwable thrown) {
        final StringBuilder messages = new StringBuilder();
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            messages.append(t.getMessage()).append('\n');
        }
        return messages.toString();
    }

    /** The ranges as tables (floor by start, ceiling by end, exact by start) and the probes as a view. */
    private StreamTableEnvironment environment(DataSet data) throws Exception {
        final Path file = dir.resolve(data.name() + ".jsonl");
        final List<String> lines = new ArrayList<>();
        for (long[] range : data.ranges()) {
            lines.add("{\"start_ip\":" + range[0] + ",\"end_ip\":" + range[1] + ",\"name\":\"" + name(range) + "\"}");
        }
        Files.write(file, lines);
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        final StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        final String options = "'connector' = 'flix', 'changelog' = 'file', 'file.path' = '" + file + "', "
                + "'index.backend' = 'auto', 'lookup.batch-size' = '64', 'lookup.linger' = '1 ms'";
        tEnv.executeSql("CREATE TABLE ranges_by_start (start_ip BIGINT, end_ip BIGINT, name STRING, "
                + "PRIMARY KEY (start_ip) NOT ENFORCED) WITH (" + options + ", 'lookup.match' = 'floor')");
        tEnv.executeSql("CREATE TABLE ranges_by_end (start_ip BIGINT, end_ip BIGINT, name STRING, "
                + "PRIMARY KEY (end_ip) NOT ENFORCED) WITH (" + options + ", 'lookup.match' = 'ceiling')");
        tEnv.executeSql("CREATE TABLE ranges_exact (start_ip BIGINT, end_ip BIGINT, name STRING, "
                + "PRIMARY KEY (start_ip) NOT ENFORCED) WITH (" + options + ")");
        final long[] probes = data.probes();
        // a parallel source: both lookup subtasks get probes
        final DataStream<Row> rows = env.fromSequence(0, probes.length - 1)
                .map(i -> Row.of(i, probes[(int) (long) i]))
                .returns(Types.ROW_NAMED(new String[] {"id", "ip"}, Types.LONG, Types.LONG));
        tEnv.createTemporaryView("probes", tEnv.fromDataStream(rows,
                Schema.newBuilder().columnByExpression("proc_time", "PROCTIME()").build()));
        return tEnv;
    }
}
