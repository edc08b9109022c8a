package io.flix.flink.table;

import io.flix.flink.table.dimension.SharedDimension;
import io.flix.flink.table.dimension.SharedDimensions;
import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import io.flix.flink.table.lookup.SqlEquality;
import org.apache.flink.core.testutils.ManuallyTriggeredScheduledExecutorService;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.functions.FunctionContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The lookup function and its shared dimension on a file changelog, without a cluster. */
class FlixAsyncLookupFunctionTest {

    private static final ResolvedSchema SCHEMA = new ResolvedSchema(
            List.of(Column.physical("id", DataTypes.BIGINT().notNull()),
                    Column.physical("name", DataTypes.STRING()),
                    Column.physical("price", DataTypes.DOUBLE())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());

    @TempDir
    Path dir;

    private FlixAsyncLookupFunction function(Map<String, String> options, int[]... keys) {
        return TestTables.function(SCHEMA, options, keys);
    }

    private Map<String, String> fileOptions(Path file, String format) {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("changelog", "file");
        options.put("file.path", file.toString());
        options.put("value.format", format);
        options.put("lookup.batch-size", "4");
        options.put("lookup.linger", "20 ms");
        // batches on size or linger (the tests that count batches fire the linger): ProbeBatcherTest and
        // aLookupAtIdleIsSentAtOnceUnderTheLoadPolicy cover the default load policy
        options.put("lookup.batch-policy", "linger");
        options.put("index.backend", "cpu");
        options.put("changelog.batch-size", "3");
        return options;
    }

    private static String describe(Collection<RowData> rows) {
        if (rows.isEmpty()) {
            return "none";
        }
        final RowData row = rows.iterator().next();
        return row.getLong(0) + ":" + row.getString(1) + ":" + row.getDouble(2);
    }

    /** The oracle: the file's lines applied one at a time to a sorted map. */
    private static Map<Long, String> expected(int keys, int versions) {
        final Map<Long, String> map = new TreeMap<>();
        for (int v = 0; v < versions; v++) {
            for (long k = 0; k < keys; k++) {
                map.put(k, k + ":p" + k + "v" + v + ":" + (k + v * 0.5));
            }
        }
        return map;
    }

    @Test
    void lookupsSeeTheLastRowOfEachKey() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        final List<String> lines = new ArrayList<>();
        for (int v = 0; v < 3; v++) {
            for (long k = 0; k < 50; k++) {
                lines.add("{\"id\":" + k + ",\"name\":\"p" + k + "v" + v + "\",\"price\":" + (k + v * 0.5) + "}");
            }
            lines.add("");
        }
        Files.write(file, lines);
        final FlixAsyncLookupFunction function = function(fileOptions(file, "json"), new int[] {0});
        function.open(new FunctionContext(null));
        try {
            final Map<Long, String> oracle = expected(50, 3);
            final List<CompletableFuture<Collection<RowData>>> futures = new ArrayList<>();
            // 70 lookups in batches of at most 4 (the size trigger, or the linger timer whenever it fires);
            // keys 50..69 are absent
            for (long k = 0; k < 70; k++) {
                futures.add(function.asyncLookup(GenericRowData.of(k)));
            }
            for (int k = 0; k < 70; k++) {
                final String got = describe(futures.get(k).get(TestTables.NET_SECONDS, TimeUnit.SECONDS));
                assertEquals(oracle.getOrDefault((long) k, "none"), got, "key " + k);
            }
            assertEquals("none", describe(function.asyncLookup(GenericRowData.of((Object) null)).get()));
            final SharedDimension dimension = function.dimension();
            assertEquals(50, dimension.indexSize());
            assertEquals(150, dimension.appliedRecords());
        } finally {
            function.close();
        }
    }

    @Test
    void deletesFromAChangelogFormat() throws Exception {
        final Path file = dir.resolve("products.debezium");
        Files.write(file, List.of(
                "{\"before\":null,\"after\":{\"id\":1,\"name\":\"a\",\"price\":1.0},\"op\":\"c\"}",
                "{\"before\":null,\"after\":{\"id\":2,\"name\":\"b\",\"price\":2.0},\"op\":\"c\"}",
                "{\"before\":{\"id\":1,\"name\":\"a\",\"price\":1.0},\"after\":{\"id\":1,\"name\":\"a2\",\"price\":1.5},"
                        + "\"op\":\"u\"}",
                "{\"before\":{\"id\":2,\"name\":\"b\",\"price\":2.0},\"after\":null,\"op\":\"d\"}"));
        final FlixAsyncLookupFunction function = function(fileOptions(file, "debezium-json"), new int[] {0});
        function.open(new FunctionContext(null));
        try {
            assertEquals("1:a2:1.5", describe(function.asyncLookup(GenericRowData.of(1L)).get(TestTables.NET_SECONDS, TimeUnit.SECONDS)));
            assertEquals("none", describe(function.asyncLookup(GenericRowData.of(2L)).get(TestTables.NET_SECONDS, TimeUnit.SECONDS)));
            assertEquals(1, function.dimension().indexSize());
        } finally {
            function.close();
        }
    }

    /** Lines of each changelog format: insert 1 and 3, change 1's key to 2, update 3 in place. */
    private static List<String> keyChangeLines(String format) {
        final String r1 = "{\"id\":1,\"name\":\"a\",\"price\":1.0}";
        final String r2 = "{\"id\":2,\"name\":\"a\",\"price\":1.0}";
        final String r3 = "{\"id\":3,\"name\":\"c\",\"price\":3.0}";
        final String r3b = "{\"id\":3,\"name\":\"c2\",\"price\":3.5}";
        return switch (format) {
            case "debezium-json" -> List.of(
                    "{\"before\":null,\"after\":" + r1 + ",\"op\":\"c\"}",
                    "{\"before\":null,\"after\":" + r3 + ",\"op\":\"c\"}",
                    "{\"before\":" + r1 + ",\"after\":" + r2 + ",\"op\":\"u\"}",
                    "{\"before\":" + r3 + ",\"after\":" + r3b + ",\"op\":\"u\"}");
            case "canal-json" -> List.of(
                    "{\"data\":[" + r1 + "," + r3 + "],\"type\":\"INSERT\",\"database\":\"d\",\"table\":\"p\"}",
                    "{\"data\":[" + r2 + "," + r3b + "],\"old\":[{\"id\":1},{\"name\":\"c\",\"price\":3.0}],"
                            + "\"type\":\"UPDATE\",\"database\":\"d\",\"table\":\"p\"}");
            case "maxwell-json" -> List.of(
                    "{\"database\":\"d\",\"table\":\"p\",\"type\":\"insert\",\"data\":" + r1 + "}",
                    "{\"database\":\"d\",\"table\":\"p\",\"type\":\"insert\",\"data\":" + r3 + "}",
                    "{\"database\":\"d\",\"table\":\"p\",\"type\":\"update\",\"data\":" + r2
                            + ",\"old\":{\"id\":1}}",
                    "{\"database\":\"d\",\"table\":\"p\",\"type\":\"update\",\"data\":" + r3b
                            + ",\"old\":{\"name\":\"c\",\"price\":3.0}}");
            case "ogg-json" -> List.of(
                    "{\"table\":\"d.p\",\"op_type\":\"I\",\"after\":" + r1 + "}",
                    "{\"table\":\"d.p\",\"op_type\":\"I\",\"after\":" + r3 + "}",
                    "{\"table\":\"d.p\",\"op_type\":\"U\",\"before\":" + r1 + ",\"after\":" + r2 + "}",
                    "{\"table\":\"d.p\",\"op_type\":\"U\",\"before\":" + r3 + ",\"after\":" + r3b + "}");
            default -> throw new IllegalArgumentException(format);
        };
    }

    /**
     * An update that changes a row's key (update-before id=1, update-after id=2) removes the old key, in every
     * changelog format Flink offers; an update that keeps its key replaces the row.
     */
    @ParameterizedTest
    @ValueSource(strings = {"canal-json", "debezium-json", "maxwell-json", "ogg-json"})
    void aKeyChangingUpdateRemovesTheOldKey(String format) throws Exception {
        final Path file = dir.resolve("products." + format);
        Files.write(file, keyChangeLines(format));
        final FlixAsyncLookupFunction function = function(fileOptions(file, format), new int[] {0});
        function.open(new FunctionContext(null));
        try {
            assertEquals("none", describe(TestTables.answer(function.asyncLookup(GenericRowData.of(1L)))));
            assertEquals("2:a:1.0", describe(TestTables.answer(function.asyncLookup(GenericRowData.of(2L)))));
            assertEquals("3:c2:3.5", describe(TestTables.answer(function.asyncLookup(GenericRowData.of(3L)))));
            assertEquals(2, function.dimension().indexSize());
        } finally {
            function.close();
        }
    }

    /** Without ignore-parse-errors, a line the format cannot parse fails the open naming the file and the line. */
    @Test
    void aMalformedLineFailsNamingTheFileAndTheLine() {
        final Path file = dir.resolve("broken.jsonl");
        try {
            Files.write(file, List.of("{\"id\":1,\"name\":\"a\",\"price\":1.0}", "", "not json"));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        final FlixAsyncLookupFunction function = function(fileOptions(file, "json"), new int[] {0});
        final Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> function.open(new FunctionContext(null)));
        final StringBuilder chain = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            chain.append(t.getMessage()).append(" | ");
        }
        assertTrue(chain.toString().contains("file '" + file + "': line 3 cannot be decoded"), chain.toString());
    }

    @Test
    void otherLookupKeysFilterTheRow() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of("{\"id\":7,\"name\":\"seven\",\"price\":7.0}"));
        // the key row holds (name, id): the primary key second
        final FlixAsyncLookupFunction function = function(fileOptions(file, "json"), new int[] {1}, new int[] {0});
        function.open(new FunctionContext(null));
        try {
            assertEquals("7:seven:7.0", describe(function.asyncLookup(
                    GenericRowData.of(StringData.fromString("seven"), 7L)).get(TestTables.NET_SECONDS, TimeUnit.SECONDS)));
            assertEquals("none", describe(function.asyncLookup(
                    GenericRowData.of(StringData.fromString("eight"), 7L)).get(TestTables.NET_SECONDS, TimeUnit.SECONDS)));
        } finally {
            function.close();
        }
    }

    /** id, then one column of each type a join may equate besides the key. */
    private static final ResolvedSchema TYPED = new ResolvedSchema(
            List.of(Column.physical("id", DataTypes.BIGINT().notNull()),
                    Column.physical("code", DataTypes.BYTES()),
                    Column.physical("score", DataTypes.DOUBLE()),
                    Column.physical("ratio", DataTypes.FLOAT()),
                    Column.physical("amount", DataTypes.DECIMAL(10, 2)),
                    Column.physical("stamp", DataTypes.TIMESTAMP(3)),
                    Column.physical("name", DataTypes.STRING())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());

    /** Whether a lookup of the key and a value of the further lookup key finds the row. */
    private static boolean finds(FlixAsyncLookupFunction function, long key, Object value) throws Exception {
        return !TestTables.answer(function.asyncLookup(GenericRowData.of(key, value))).isEmpty();
    }

    /**
     * Further lookup keys compare by SQL equality ({@link SqlEquality}): BYTES by content, -0.0 = 0.0, NaN equals
     * nothing, DECIMAL and TIMESTAMP by value.
     */
    @Test
    void otherLookupKeysCompareBySqlEquality() throws Exception {
        final Path file = dir.resolve("typed.jsonl");
        Files.write(file, List.of(
                "{\"id\":1,\"code\":\"YWJj\",\"score\":0.0,\"ratio\":-0.0,\"amount\":1.5,"
                        + "\"stamp\":\"2024-05-06 07:08:09.12\",\"name\":\"ä b\"}",
                "{\"id\":2,\"code\":\"\",\"score\":\"NaN\",\"ratio\":\"NaN\",\"amount\":-0.5,"
                        + "\"stamp\":\"2024-05-06 07:08:09\",\"name\":\"\"}",
                "{\"id\":3,\"code\":null,\"score\":null,\"ratio\":null,\"amount\":null,\"stamp\":null,"
                        + "\"name\":null}"));
        final Map<String, String> options = fileOptions(file, "json");
        options.put("lookup.batch-size", "1");
        final FlixAsyncLookupFunction byKey = TestTables.function(TYPED, options, new int[] {0});
        byKey.open(new FunctionContext(null));
        final List<FlixAsyncLookupFunction> opened = new ArrayList<>(List.of(byKey));
        try {
            final RowData two = TestTables.answer(byKey.asyncLookup(GenericRowData.of(2L))).iterator().next();
            assertTrue(Double.isNaN(two.getDouble(2)) && Float.isNaN(two.getFloat(3)), "the row holds NaN");
            final FlixAsyncLookupFunction[] on = new FlixAsyncLookupFunction[7];
            for (int field = 1; field < 7; field++) {
                on[field] = TestTables.function(TYPED, options, new int[] {0}, new int[] {field});
                on[field].open(new FunctionContext(null));
                opened.add(on[field]);
            }
            final byte[] abc = "abc".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            assertTrue(finds(on[1], 1, abc.clone()), "BYTES by content");
            assertFalse(finds(on[1], 1, "abd".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            assertTrue(finds(on[1], 2, new byte[0]));
            assertTrue(finds(on[2], 1, -0.0d), "-0.0 = 0.0");
            assertTrue(finds(on[2], 1, 0.0d));
            assertFalse(finds(on[2], 2, Double.NaN), "NaN = NaN is false");
            assertFalse(finds(on[2], 1, 1.0d));
            assertTrue(finds(on[3], 1, 0.0f), "0.0 = -0.0");
            assertFalse(finds(on[3], 2, Float.NaN));
            assertTrue(finds(on[4], 1, DecimalData.fromBigDecimal(new java.math.BigDecimal("1.50"), 10, 2)));
            assertTrue(finds(on[4], 1, DecimalData.fromBigDecimal(new java.math.BigDecimal("1.5"), 10, 1)),
                    "DECIMAL by value");
            assertFalse(finds(on[4], 1, DecimalData.fromBigDecimal(new java.math.BigDecimal("1.51"), 10, 2)));
            final java.time.LocalDateTime at = java.time.LocalDateTime.of(2024, 5, 6, 7, 8, 9, 120_000_000);
            assertTrue(finds(on[5], 1, TimestampData.fromLocalDateTime(at)));
            assertFalse(finds(on[5], 1, TimestampData.fromLocalDateTime(at.plusNanos(1_000_000))));
            assertTrue(finds(on[6], 1, StringData.fromString("ä b")));
            assertFalse(finds(on[6], 1, StringData.fromString("Ä b")));
            assertTrue(finds(on[6], 2, StringData.fromString("")));
            // a null on either side equals nothing
            for (int field = 1; field < 7; field++) {
                assertFalse(finds(on[field], 3, null), "field " + field);
            }
            assertFalse(finds(on[6], 3, StringData.fromString("")));
        } finally {
            for (FlixAsyncLookupFunction f : opened) {
                f.close();
            }
        }
    }

    @Test
    void equalTablesShareOneDimensionUntilTheLastClose() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\",\"price\":1.0}"));
        final FlixAsyncLookupFunction first = function(fileOptions(file, "json"), new int[] {0});
        final FlixAsyncLookupFunction second = function(fileOptions(file, "json"), new int[] {0});
        first.open(new FunctionContext(null));
        second.open(new FunctionContext(null));
        final SharedDimension dimension = first.dimension();
        assertSame(dimension, second.dimension());
        assertEquals(2, SharedDimensions.references(dimension));
        first.close();
        assertSame(dimension, SharedDimensions.find(dimension.spec.identity()));
        assertEquals("1:a:1.0", describe(second.asyncLookup(GenericRowData.of(1L)).get(TestTables.NET_SECONDS, TimeUnit.SECONDS)));
        second.close();
        assertNull(SharedDimensions.find(dimension.spec.identity()));
        // a closed dimension answers no more lookups
        final CompletableFuture<Collection<RowData>> late = new CompletableFuture<>();
        @SuppressWarnings("unchecked")
        final CompletableFuture<Collection<RowData>>[] futures = new CompletableFuture[] {late};
        dimension.submit(new SharedDimension.LookupBatch(new long[] {1}, futures, 1, System.nanoTime(), null));
        assertTrue(late.isCompletedExceptionally());
    }

    /** A metric group that keeps what is registered on it. */
    private static final class RecordingGroup extends org.apache.flink.metrics.groups.UnregisteredMetricsGroup {
        final Map<String, Object> metrics = new java.util.concurrent.ConcurrentHashMap<>();

        @Override
        public <C extends org.apache.flink.metrics.Counter> C counter(String name, C counter) {
            metrics.put(name, counter);
            return counter;
        }

        @Override
        public org.apache.flink.metrics.Counter counter(String name) {
            return counter(name, new org.apache.flink.metrics.SimpleCounter());
        }

        @Override
        public <T, G extends org.apache.flink.metrics.Gauge<T>> G gauge(String name, G gauge) {
            metrics.put(name, gauge);
            return gauge;
        }

        @Override
        public <H extends org.apache.flink.metrics.Histogram> H histogram(String name, H histogram) {
            metrics.put(name, histogram);
            return histogram;
        }

        Object gaugeValue(String name) {
            return ((org.apache.flink.metrics.Gauge<?>) metrics.get(name)).getValue();
        }
    }

    /**
     * Batches form on the size trigger and on a linger timer that the test fires itself: the counts hold whatever
     * the threads' timing, and the metrics of a batch are recorded before its lookups are answered.
     */
    @Test
    void metricsCountLookupsBatchesAndTheIndex() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\",\"price\":1.0}",
                "{\"id\":2,\"name\":\"b\",\"price\":2.0}", "{\"id\":1,\"name\":\"a2\",\"price\":1.5}"));
        final RecordingGroup group = new RecordingGroup();
        final FlixAsyncLookupFunction function = function(fileOptions(file, "json"), new int[] {0});
        final ManuallyTriggeredScheduledExecutorService linger = new ManuallyTriggeredScheduledExecutorService();
        function.setLingerTimer(linger);
        function.open(new FunctionContext(null) {
            @Override
            public org.apache.flink.metrics.MetricGroup getMetricGroup() {
                return group;
            }
        });
        try {
            final List<CompletableFuture<Collection<RowData>>> futures = new ArrayList<>();
            for (long k = 0; k < 9; k++) { // batch size 4: two full batches, then one lookup waiting for its linger
                futures.add(function.asyncLookup(GenericRowData.of(k % 3)));
            }
            assertFalse(futures.get(8).isDone(), "the ninth lookup waits for its batch's linger");
            linger.triggerScheduledTasks(); // the two full batches' timers find nothing to send; the third sends
            for (CompletableFuture<Collection<RowData>> f : futures) {
                TestTables.answer(f);
            }
            assertEquals(9, ((org.apache.flink.metrics.Counter) group.metrics.get("flixLookups")).getCount());
            assertEquals(3, ((org.apache.flink.metrics.Counter) group.metrics.get("flixLookupBatches")).getCount());
            final org.apache.flink.metrics.Histogram sizes =
                    (org.apache.flink.metrics.Histogram) group.metrics.get("flixLookupBatchSize");
            assertEquals(3, sizes.getCount());
            assertEquals(4, sizes.getStatistics().getMax());
            assertEquals(1, sizes.getStatistics().getMin());
            assertEquals(3, ((org.apache.flink.metrics.Histogram) group.metrics.get("flixLookupLatencyNanos"))
                    .getCount());
            assertEquals(2L, group.gaugeValue("flixIndexSize"));
            assertEquals(3L, group.gaugeValue("flixChangelogRecordsApplied"));
            assertEquals(0L, group.gaugeValue("flixChangelogRecordsSkipped"));
            assertEquals("cpu", group.gaugeValue("flixBackend"));
            assertTrue((Long) group.gaugeValue("flixRowBytes") > 0);
            assertTrue((Long) group.gaugeValue("flixBootstrapMillis") >= 0);
        } finally {
            function.close();
        }
    }

    /**
     * Under 'lookup.batch-policy' = 'load' (the default) a lookup at idle is sent at once, without a linger, on the
     * dispatcher (held by the test here), and the lookups that arrive while it is in flight go together next.
     */
    @Test
    void aLookupAtIdleIsSentAtOnceUnderTheLoadPolicy() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\",\"price\":1.0}",
                "{\"id\":2,\"name\":\"b\",\"price\":2.0}"));
        final Map<String, String> options = fileOptions(file, "json");
        options.remove("lookup.batch-policy");
        options.put("lookup.batch-size", "100");
        final FlixAsyncLookupFunction function = function(options, new int[] {0});
        final ManuallyTriggeredScheduledExecutorService linger = new ManuallyTriggeredScheduledExecutorService();
        final java.util.ArrayDeque<Runnable> dispatched = new java.util.ArrayDeque<>();
        function.setLingerTimer(linger);
        function.setDispatcher(dispatched::add);
        function.open(new FunctionContext(null));
        try {
            final CompletableFuture<Collection<RowData>> first = function.asyncLookup(GenericRowData.of(1L));
            assertEquals(1, dispatched.size(), "sent at once");
            assertEquals(0, linger.getAllScheduledTasks().size(), "no linger at idle");
            final CompletableFuture<Collection<RowData>> second = function.asyncLookup(GenericRowData.of(2L));
            final CompletableFuture<Collection<RowData>> third = function.asyncLookup(GenericRowData.of(3L));
            assertEquals(1, dispatched.size(), "one batch in flight; the others gather");
            dispatched.poll().run();
            assertEquals("1:a:1.0", describe(TestTables.answer(first)));
            assertFalse(second.isDone());
            assertEquals(1, dispatched.size(), "the two gathered go next, together");
            dispatched.poll().run();
            assertEquals("2:b:2.0", describe(TestTables.answer(second)));
            assertEquals("none", describe(TestTables.answer(third)));
            assertTrue(dispatched.isEmpty());
        } finally {
            function.close();
        }
    }

    /** The load policy's dispatcher thread answers, and stops (joined) when the function closes. */
    @Test
    void theDispatcherThreadStopsWithTheFunction() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\",\"price\":1.0}"));
        final Map<String, String> options = fileOptions(file, "json");
        options.put("lookup.batch-policy", "load");
        final FlixAsyncLookupFunction function = function(options, new int[] {0});
        function.open(new FunctionContext(null));
        final List<CompletableFuture<Collection<RowData>>> futures = new ArrayList<>();
        try {
            for (long k = 0; k < 500; k++) {
                futures.add(function.asyncLookup(GenericRowData.of(k % 3)));
            }
            for (int i = 0; i < futures.size(); i++) {
                assertEquals(i % 3 == 1 ? "1:a:1.0" : "none", describe(TestTables.answer(futures.get(i))));
            }
            assertEquals(1, dispatcherThreads(file));
        } finally {
            function.close();
        }
        assertEquals(0, dispatcherThreads(file), "close stops the dispatcher thread");
    }

    private static int dispatcherThreads(Path file) {
        int found = 0;
        for (Thread thread : Thread.getAllStackTraces().keySet()) {
            if (thread.getName().startsWith("FliX lookup batches of") && thread.getName().contains(file.toString())
                    && thread.isAlive()) {
                found++;
            }
        }
        return found;
    }

    /** A linger that has not fired keeps the lookup gathered; firing it sends a batch of what was gathered. */
    @Test
    void theLingerSendsWhatTheSizeTriggerDidNot() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\",\"price\":1.0}"));
        final FlixAsyncLookupFunction function = function(fileOptions(file, "json"), new int[] {0});
        final ManuallyTriggeredScheduledExecutorService linger = new ManuallyTriggeredScheduledExecutorService();
        function.setLingerTimer(linger);
        function.open(new FunctionContext(null));
        try {
            final CompletableFuture<Collection<RowData>> first = function.asyncLookup(GenericRowData.of(1L));
            final CompletableFuture<Collection<RowData>> second = function.asyncLookup(GenericRowData.of(2L));
            assertEquals(1, linger.getAllScheduledTasks().size(), "one timer per batch");
            assertFalse(first.isDone());
            linger.triggerScheduledTasks();
            assertEquals("1:a:1.0", describe(TestTables.answer(first)));
            assertEquals("none", describe(TestTables.answer(second)));
        } finally {
            function.close();
        }
    }

    @Test
    void aLookupAfterCloseOrBeforeOpenSaysSo() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\",\"price\":1.0}"));
        final FlixAsyncLookupFunction function = function(fileOptions(file, "json"), new int[] {0});
        final Throwable beforeOpen = TestTables.failure(function.asyncLookup(GenericRowData.of(1L)));
        assertInstanceOf(IllegalStateException.class, beforeOpen);
        function.open(new FunctionContext(null));
        function.close();
        final Throwable afterClose = TestTables.failure(function.asyncLookup(GenericRowData.of(1L)));
        assertInstanceOf(IllegalStateException.class, afterClose);
        assertTrue(afterClose.getMessage().contains("closed"), afterClose.getMessage());
        assertTrue(afterClose.getMessage().contains(file.toString()), afterClose.getMessage());
        function.close(); // a second close does nothing
    }

    /** A lookup after close fails whatever its key: a null key too, which an open function answers with no row. */
    @Test
    void aNullKeyLookupAfterCloseSaysSoToo() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\",\"price\":1.0}"));
        final FlixAsyncLookupFunction function = function(fileOptions(file, "json"), new int[] {0});
        function.open(new FunctionContext(null));
        function.close();
        final Throwable afterClose = TestTables.failure(function.asyncLookup(GenericRowData.of((Object) null)));
        assertInstanceOf(IllegalStateException.class, afterClose);
        assertTrue(afterClose.getMessage().contains("closed"), afterClose.getMessage());
    }

    /** Lookups gathered and not sent when the function closes fail saying so; their linger then sends nothing. */
    @Test
    void closeFailsTheLookupsNotSent() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\",\"price\":1.0}"));
        final FlixAsyncLookupFunction function = function(fileOptions(file, "json"), new int[] {0});
        final ManuallyTriggeredScheduledExecutorService linger = new ManuallyTriggeredScheduledExecutorService();
        function.setLingerTimer(linger);
        function.open(new FunctionContext(null));
        final SharedDimension dimension = function.dimension();
        final CompletableFuture<Collection<RowData>> pending = function.asyncLookup(GenericRowData.of(1L));
        function.close();
        final Throwable unsent = TestTables.failure(pending);
        assertInstanceOf(IllegalStateException.class, unsent);
        assertTrue(unsent.getMessage().contains("closed before this lookup was sent"), unsent.getMessage());
        assertTrue(unsent.getMessage().contains(file.toString()), unsent.getMessage());
        linger.triggerScheduledTasks();
        assertNull(SharedDimensions.find(dimension.spec.identity()), "the dimension is released");
    }

    /**
     * With 'value.json.ignore-parse-errors', Flink's JSON format yields nothing for a line that does not start a
     * JSON value and a null row for one that breaks off inside the row: both are skipped and counted.
     */
    @Test
    void linesTheFormatCannotParseAreSkippedAndCounted() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of(
                "{\"id\":1,\"name\":\"a\",\"price\":1.0}",
                "not json",
                "{\"id\":2,\"name\":\"b\" \"price\":2.0}",
                "{\"id\":3,\"name\":\"c\",\"price\":",
                "[null]",
                "{\"id\":4,\"name\":\"d\",\"price\":4.0}"));
        final Map<String, String> options = fileOptions(file, "json");
        options.put("value.json.ignore-parse-errors", "true");
        final FlixAsyncLookupFunction function = function(options, new int[] {0});
        function.open(new FunctionContext(null));
        try {
            final SharedDimension dimension = function.dimension();
            assertEquals(4, dimension.skippedRecords());
            assertEquals(2, dimension.appliedRecords());
            assertEquals("1:a:1.0", describe(TestTables.answer(function.asyncLookup(GenericRowData.of(1L)))));
            assertEquals("none", describe(TestTables.answer(function.asyncLookup(GenericRowData.of(2L)))));
            assertEquals("4:d:4.0", describe(TestTables.answer(function.asyncLookup(GenericRowData.of(4L)))));
        } finally {
            function.close();
        }
    }

    @Test
    void aMissingFileFailsTheOpen() {
        final FlixAsyncLookupFunction function = function(fileOptions(dir.resolve("absent.jsonl"), "json"),
                new int[] {0});
        final Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> function.open(new FunctionContext(null)));
        assertTrue(String.valueOf(e.getMessage()).contains("absent.jsonl"), e.getMessage());
        assertTrue(SharedDimensions.openOn(dir.resolve("absent.jsonl").toString()).isEmpty());
    }
}
