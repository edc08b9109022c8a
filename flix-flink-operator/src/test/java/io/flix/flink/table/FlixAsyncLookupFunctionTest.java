package io.flix.flink.table;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.connector.source.lookup.AsyncLookupFunctionProvider;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.factories.utils.FactoryMocks;
import org.apache.flink.table.functions.FunctionContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
        final FlixLookupTableSource source =
                (FlixLookupTableSource) FactoryMocks.createTableSource(SCHEMA, options);
        return (FlixAsyncLookupFunction) ((AsyncLookupFunctionProvider)
                source.getLookupRuntimeProvider(new TestLookupContext(keys))).createAsyncLookupFunction();
    }

    private Map<String, String> fileOptions(Path file, String format) {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("changelog", "file");
        options.put("file.path", file.toString());
        options.put("value.format", format);
        options.put("lookup.batch-size", "4");
        options.put("lookup.linger", "20 ms");
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
            // 70 lookups: batches of 4, the last 2 sent by the linger timer; keys 50..69 are absent
            for (long k = 0; k < 70; k++) {
                futures.add(function.asyncLookup(GenericRowData.of(k)));
            }
            for (int k = 0; k < 70; k++) {
                final String got = describe(futures.get(k).get(10, TimeUnit.SECONDS));
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
            assertEquals("1:a2:1.5", describe(function.asyncLookup(GenericRowData.of(1L)).get(10, TimeUnit.SECONDS)));
            assertEquals("none", describe(function.asyncLookup(GenericRowData.of(2L)).get(10, TimeUnit.SECONDS)));
            assertEquals(1, function.dimension().indexSize());
        } finally {
            function.close();
        }
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
                    GenericRowData.of(StringData.fromString("seven"), 7L)).get(10, TimeUnit.SECONDS)));
            assertEquals("none", describe(function.asyncLookup(
                    GenericRowData.of(StringData.fromString("eight"), 7L)).get(10, TimeUnit.SECONDS)));
        } finally {
            function.close();
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
        assertEquals("1:a:1.0", describe(second.asyncLookup(GenericRowData.of(1L)).get(10, TimeUnit.SECONDS)));
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

    @Test
    void metricsCountLookupsBatchesAndTheIndex() throws Exception {
        final Path file = dir.resolve("products.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\",\"price\":1.0}",
                "{\"id\":2,\"name\":\"b\",\"price\":2.0}", "{\"id\":1,\"name\":\"a2\",\"price\":1.5}"));
        final RecordingGroup group = new RecordingGroup();
        final FlixAsyncLookupFunction function = function(fileOptions(file, "json"), new int[] {0});
        function.open(new FunctionContext(null) {
            @Override
            public org.apache.flink.metrics.MetricGroup getMetricGroup() {
                return group;
            }
        });
        try {
            final List<CompletableFuture<Collection<RowData>>> futures = new ArrayList<>();
            for (long k = 0; k < 9; k++) { // batch size 4: two full batches, one sent by the linger timer
                futures.add(function.asyncLookup(GenericRowData.of(k % 3)));
            }
            for (CompletableFuture<Collection<RowData>> f : futures) {
                f.get(10, TimeUnit.SECONDS);
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
