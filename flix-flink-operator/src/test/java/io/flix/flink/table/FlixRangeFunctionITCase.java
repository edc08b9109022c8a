package io.flix.flink.table;

import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code FLIX_RANGE} and {@code FLIX_RANGE_OR_NULL} in SQL on a MiniCluster, against a sorted map: randomized
 * ranges over a dimension read from a file changelog (keys replaced by later lines, the extreme keys of the long
 * range among them), with empty ranges, {@code lo > hi}, NULL bounds and ranges cut off at the most rows per probe.
 * Every probe's rows, in the order they arrive, must be the first N entries of
 * {@code subMap(lo, true, hi, true)}.
 */
class FlixRangeFunctionITCase {

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(2)
                    .build());

    private static final long SEED = 20261124L;
    private static final int MAX_ROWS = 7;

    @TempDir
    Path dir;

    /** The oracle: key -> "name,price" as the changelog file leaves it. */
    private final NavigableMap<Long, String> dimension = new TreeMap<>();
    /** probe id -> {lo, hi}, either may be null. */
    private final Map<Integer, Long[]> probes = new LinkedHashMap<>();
    private StreamTableEnvironment tEnv;

    @BeforeEach
    void dimensionAndProbes() throws Exception {
        final Random random = new Random(SEED);
        final List<String> lines = new ArrayList<>();
        final List<Long> keys = new ArrayList<>(List.of(Long.MIN_VALUE, Long.MIN_VALUE + 1, -1L, 0L, 1L,
                Long.MAX_VALUE - 1, Long.MAX_VALUE));
        for (int i = 0; i < 400; i++) {
            keys.add((long) random.nextInt(10_001) - 5_000); // dense: ranges of a few hundred hold more than N
        }
        for (int i = 0; i < 30; i++) {
            keys.add(random.nextLong()); // sparse, over the whole long range
        }
        for (int version = 0; version < 2; version++) {
            for (long key : keys) {
                if (version == 1 && random.nextInt(3) != 0) {
                    continue; // a third of the keys get a second version, which replaces the first
                }
                final String name = "k" + key + "v" + version;
                final double price = version + (key % 1000) / 8.0;
                lines.add("{\"id\":" + key + ",\"name\":\"" + name + "\",\"price\":" + price + "}");
                dimension.put(key, name + "," + price);
            }
        }
        final Path file = dir.resolve("dimension.jsonl");
        Files.write(file, lines);

        long[][] fixed = {
            {Long.MIN_VALUE, Long.MIN_VALUE}, {Long.MAX_VALUE, Long.MAX_VALUE}, {Long.MIN_VALUE, Long.MAX_VALUE},
            {Long.MIN_VALUE, Long.MIN_VALUE + 1}, {Long.MAX_VALUE - 1, Long.MAX_VALUE},
            {Long.MAX_VALUE, Long.MIN_VALUE}, {0, 0}, {1, -1}, {-1, 1}, {5_001, 1_000_000}, {Long.MIN_VALUE + 2, -5_001}
        };
        int id = 0;
        for (long[] range : fixed) {
            probes.put(id++, new Long[] {range[0], range[1]});
        }
        probes.put(id++, new Long[] {null, 10L});
        probes.put(id++, new Long[] {-10L, null});
        for (int i = 0; i < 300; i++) {
            final long lo = random.nextInt(12_001) - 6_000;
            final int kind = random.nextInt(10);
            final long hi = kind == 0 ? lo - 1 - random.nextInt(50) // lo > hi: empty
                    : kind == 1 ? lo // one key at most
                    : lo + random.nextInt(kind < 5 ? 40 : 400);
            probes.put(id++, new Long[] {lo, hi});
        }

        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set("table.exec.async-table.retry-strategy", "NO_RETRY");
        tEnv.getConfig().set("table.exec.async-table.max-concurrent-operations", "16");
        tEnv.executeSql("CREATE CATALOG flix WITH ('type' = 'flix')");
        tEnv.useCatalog("flix");
        tEnv.executeSql("CREATE TABLE dim (id BIGINT, name STRING, price DOUBLE, PRIMARY KEY (id) NOT ENFORCED) "
                + "WITH ('connector' = 'flix', 'changelog' = 'file', 'file.path' = '" + file + "', "
                + "'lookup.batch-size' = '8', 'lookup.linger' = '5 ms', 'index.backend' = 'auto')");
        final List<Row> rows = new ArrayList<>();
        probes.forEach((probe, range) -> rows.add(Row.of(probe, range[0], range[1])));
        tEnv.createTemporaryView("probes", tEnv.fromValues(DataTypes.ROW(
                DataTypes.FIELD("probe_id", DataTypes.INT()), DataTypes.FIELD("lo", DataTypes.BIGINT()),
                DataTypes.FIELD("hi", DataTypes.BIGINT())), rows));
    }

    /** The first {@code limit} entries of the range as "id,name,price", none where lo > hi or a bound is NULL. */
    private List<String> expected(Long[] range, int limit) {
        final List<String> rows = new ArrayList<>();
        if (range[0] == null || range[1] == null || range[0] > range[1]) {
            return rows;
        }
        for (Map.Entry<Long, String> e : dimension.subMap(range[0], true, range[1], true).entrySet()) {
            if (rows.size() == limit) {
                break;
            }
            rows.add(e.getKey() + "," + e.getValue());
        }
        return rows;
    }

    /** Each probe's rows as "id,name,price" (or "null" for a row of NULLs), in the order they arrived. */
    private Map<Integer, List<String>> run(String query) throws Exception {
        final Map<Integer, List<String>> byProbe = new TreeMap<>();
        try (CloseableIterator<Row> rows = tEnv.executeSql(query).collect()) {
            while (rows.hasNext()) {
                final Row row = rows.next();
                final Object id = row.getField(1);
                byProbe.computeIfAbsent((Integer) row.getField(0), p -> new ArrayList<>())
                        .add(id == null ? "null" : id + "," + row.getField(2) + "," + row.getField(3));
            }
        }
        return byProbe;
    }

    @Test
    void innerJoinGivesTheFirstRowsOfEachRangeInKeyOrder() throws Exception {
        final Map<Integer, List<String>> actual = run("SELECT q.probe_id, r.id, r.name, r.price FROM probes AS q, "
                + "LATERAL TABLE(FLIX_RANGE('dim', q.lo, q.hi, " + MAX_ROWS + ")) AS r");
        final Map<Integer, List<String>> expected = new TreeMap<>();
        int cutOff = 0;
        int empty = 0;
        for (Map.Entry<Integer, Long[]> probe : probes.entrySet()) {
            final List<String> rows = expected(probe.getValue(), MAX_ROWS);
            if (rows.isEmpty()) {
                empty++;
            } else {
                expected.put(probe.getKey(), rows);
            }
            if (expected(probe.getValue(), Integer.MAX_VALUE).size() > MAX_ROWS) {
                cutOff++;
            }
        }
        assertTrue(cutOff >= 50 && empty >= 30, "the probes cover cut-off and empty ranges: " + cutOff + " cut off, "
                + empty + " empty");
        assertEquals(expected, actual);
    }

    @Test
    void theWholeLongRangeHoldsEveryKey() throws Exception {
        final Map<Integer, List<String>> actual = run("SELECT q.probe_id, r.id, r.name, r.price FROM probes AS q "
                + "JOIN LATERAL TABLE(FLIX_RANGE('dim', q.lo, q.hi, 65536)) AS r ON TRUE WHERE q.probe_id = 2");
        final List<String> all = expected(new Long[] {Long.MIN_VALUE, Long.MAX_VALUE}, Integer.MAX_VALUE);
        assertEquals(dimension.size(), all.size());
        assertEquals(Map.of(2, all), actual);
    }

    @Test
    void leftJoinKeepsProbesWithoutRowsAsOneRowOfNulls() throws Exception {
        final Map<Integer, List<String>> actual = run("SELECT q.probe_id, r.id, r.name, r.price FROM probes AS q "
                + "LEFT JOIN LATERAL TABLE(FLIX_RANGE_OR_NULL('dim', q.lo, q.hi, " + MAX_ROWS + ")) AS r ON TRUE");
        final Map<Integer, List<String>> expected = new TreeMap<>();
        probes.forEach((probe, range) -> {
            final List<String> rows = expected(range, MAX_ROWS);
            expected.put(probe, rows.isEmpty() ? List.of("null") : rows);
        });
        assertEquals(expected, actual);
    }
}
