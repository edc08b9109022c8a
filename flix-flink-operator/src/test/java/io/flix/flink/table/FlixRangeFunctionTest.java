package io.flix.flink.table;

import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.table.dimension.SharedDimension;
import io.flix.flink.table.dimension.SharedDimensions;
import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import io.flix.flink.testing.Eventually;
import io.flix.index.Backend;
import io.flix.index.FlixIndex;

import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.testutils.ManuallyTriggeredScheduledExecutorService;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.factories.utils.FactoryMocks;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The range function as it runs, on a file changelog without a cluster: its probes gathered into batches by size
 * and by a linger timer the test fires itself, answered against the shared dimension of the table's lookup join.
 */
class FlixRangeFunctionTest {

    private static final ResolvedSchema SCHEMA = new ResolvedSchema(
            List.of(Column.physical("id", DataTypes.BIGINT().notNull()), Column.physical("name", DataTypes.STRING())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());

    @TempDir
    Path dir;

    private final ManuallyTriggeredScheduledExecutorService linger = new ManuallyTriggeredScheduledExecutorService();
    /** The test's own hold on the dimension, opened with an index that counts range calls and may fail them. */
    private SharedDimension held;
    private final AtomicInteger rangeCalls = new AtomicInteger();
    private final AtomicReference<RuntimeException> failRanges = new AtomicReference<>();
    /** The backend the index says it is: the GPU's makes the dimension gather the threads' calls. */
    private Backend backend = Backend.CPU;
    /** Holds the index's range calls until counted down; open unless a test closes it. */
    private CountDownLatch firstRangeMayGo = new CountDownLatch(0);
    private final List<FlixRangeFunction> opened = new ArrayList<>();
    /** key -> name, as the file leaves it. */
    private final NavigableMap<Long, String> oracle = new TreeMap<>();

    @AfterEach
    void closeAll() throws Exception {
        for (FlixRangeFunction function : opened) {
            function.close();
        }
        if (held != null) {
            SharedDimensions.release(held);
        }
    }

    private Path file() throws Exception {
        final Path file = dir.resolve("names.jsonl");
        if (!Files.exists(file)) {
            final List<String> lines = new ArrayList<>();
            for (long key : new long[] {Long.MIN_VALUE, -7, -3, 0, 2, 4, 6, 8, 10, 12, Long.MAX_VALUE}) {
                lines.add("{\"id\":" + key + ",\"name\":\"n" + key + "\"}");
                oracle.put(key, "n" + key);
            }
            lines.add("{\"id\":4,\"name\":\"four\"}");
            oracle.put(4L, "four");
            Files.write(file, lines);
        }
        return file;
    }

    private Map<String, String> options() throws Exception {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("changelog", "file");
        options.put("file.path", file().toString());
        options.put("index.backend", "cpu");
        options.put("lookup.linger", "1 h"); // only the test fires it
        // batches on size or linger, which the test fires: ProbeBatcherTest covers the load policy
        options.put("lookup.batch-policy", "linger");
        return options;
    }

    /** The function as specialize makes it, opened; the dimension opened first by the test, with its hooks. */
    private FlixRangeFunction open(boolean orNull, int maxRows, int batchSize, MetricGroup group) throws Exception {
        final FlixLookupTableSource source = (FlixLookupTableSource) FactoryMocks.createTableSource(SCHEMA, options());
        final FlixRangeFunction function = new FlixRangeFunction(orNull,
                source.dimensionSpec(new TestLookupContext(new int[] {0})), maxRows, batchSize, source.lookup().linger().toNanos(),
                source.lookup().followLoad());
        if (held == null) {
            held = SharedDimensions.acquire(function.spec(), config -> HookedIndex.wrap(FlixIndex.open(config),
                    method -> {
                        if (method.equals("range")) {
                            rangeCalls.incrementAndGet();
                            final RuntimeException failure = failRanges.get();
                            if (failure != null) {
                                throw failure;
                            }
                            if (!firstRangeMayGo.await(TestTables.NET_SECONDS, TimeUnit.SECONDS)) {
                                throw new AssertionError("the first range call was never let go");
                            }
                        }
                    }, backend));
        }
        function.setLingerTimer(linger);
        function.open(new FunctionContext(null) {
            @Override
            public MetricGroup getMetricGroup() {
                return group;
            }
        });
        opened.add(function);
        assertSame(held, function.dimension());
        return function;
    }

    private FlixRangeFunction open(boolean orNull, int maxRows, int batchSize) throws Exception {
        return open(orNull, maxRows, batchSize, new UnregisteredMetricsGroup());
    }

    private static CompletableFuture<Collection<RowData>> probe(FlixRangeFunction function, Long lo, Long hi) {
        final CompletableFuture<Collection<RowData>> future = new CompletableFuture<>();
        function.eval(future, "names", lo, hi, function.maxRows());
        return future;
    }

    private static List<String> names(Collection<RowData> rows) {
        final List<String> names = new ArrayList<>();
        for (RowData row : rows) {
            names.add(row.isNullAt(0) ? "null" : row.getLong(0) + ":" + row.getString(1));
        }
        return names;
    }

    private List<String> expected(long lo, long hi, int limit) {
        final List<String> names = new ArrayList<>();
        oracle.subMap(lo, true, hi, true).forEach((key, name) -> {
            if (names.size() < limit) {
                names.add(key + ":" + name);
            }
        });
        return names;
    }

    @Test
    void probesGetTheFirstRowsOfTheirRangeInKeyOrder() throws Exception {
        final FlixRangeFunction function = open(false, 3, 4);
        final long[][] ranges = {{-10, 5}, {Long.MIN_VALUE, Long.MAX_VALUE}, {3, 3}, {4, 4}, {Long.MAX_VALUE,
            Long.MAX_VALUE}, {Long.MIN_VALUE, -8}, {13, Long.MAX_VALUE - 1}, {-2, 1}};
        final List<CompletableFuture<Collection<RowData>>> futures = new ArrayList<>();
        for (long[] range : ranges) {
            futures.add(probe(function, range[0], range[1]));
        }
        assertEquals(2, rangeCalls.get(), "two full batches of four, one index call each");
        for (int i = 0; i < ranges.length; i++) {
            assertEquals(expected(ranges[i][0], ranges[i][1], 3), names(TestTables.answer(futures.get(i))),
                    "range " + ranges[i][0] + ".." + ranges[i][1]);
        }
        assertEquals(List.of("-7:n-7", "-3:n-3", "0:n0"), names(TestTables.answer(futures.get(0))));
        assertEquals(List.of("4:four"), names(TestTables.answer(futures.get(3))));
    }

    /** {@code lo > hi} and a NULL bound are empty ranges, answered at once: no batch, no index call. */
    @Test
    void anEmptyRangeOrANullBoundAnswersNoRowWithoutTheIndex() throws Exception {
        final FlixRangeFunction function = open(false, 5, 2);
        assertEquals(List.of(), names(probe(function, 5L, 4L).getNow(null)));
        assertEquals(List.of(), names(probe(function, Long.MAX_VALUE, Long.MIN_VALUE).getNow(null)));
        assertEquals(List.of(), names(probe(function, null, 4L).getNow(null)));
        assertEquals(List.of(), names(probe(function, 4L, null).getNow(null)));
        assertEquals(0, rangeCalls.get());
        assertEquals(0, linger.getAllScheduledTasks().size(), "nothing was gathered");
        final CompletableFuture<Collection<RowData>> gap = probe(function, 13L, 100L);
        linger.triggerScheduledTasks();
        assertEquals(List.of(), names(TestTables.answer(gap)), "a range between keys holds none");
    }

    @Test
    void orNullAnswersAnEmptyRangeWithOneRowOfNulls() throws Exception {
        final FlixRangeFunction function = open(true, 2, 3);
        final CompletableFuture<Collection<RowData>> rows = probe(function, -10L, 10L);
        final CompletableFuture<Collection<RowData>> gap = probe(function, 13L, 100L);
        final CompletableFuture<Collection<RowData>> backwards = probe(function, 1L, -1L);
        final CompletableFuture<Collection<RowData>> nullBound = probe(function, null, -1L);
        linger.triggerScheduledTasks();
        assertEquals(List.of("-7:n-7", "-3:n-3"), names(TestTables.answer(rows)));
        for (CompletableFuture<Collection<RowData>> empty : List.of(gap, backwards, nullBound)) {
            final Collection<RowData> answer = TestTables.answer(empty);
            assertEquals(List.of("null"), names(answer));
            final RowData row = answer.iterator().next();
            assertEquals(2, row.getArity());
            assertTrue(row.isNullAt(1));
        }
    }

    /** A batch is answered by index calls of at most {@code MAX_PAIRS_PER_CALL} pairs: 16 probes a call here. */
    @Test
    void aBatchAsksTheIndexForAtMostAMillionPairsACall() throws Exception {
        final FlixRangeFunction function = open(false, FlixRangeFunction.MAX_ROWS_PER_PROBE, 40);
        final List<CompletableFuture<Collection<RowData>>> futures = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            futures.add(probe(function, (long) i - 10, Long.MAX_VALUE));
        }
        assertEquals(3, rangeCalls.get(), "40 probes, 16 per call");
        for (int i = 0; i < 40; i++) {
            assertEquals(expected(i - 10, Long.MAX_VALUE, Integer.MAX_VALUE), names(TestTables.answer(futures.get(i))));
        }
    }

    /** The lookup join and the range function of one table share its dimension; a closed one releases its hold. */
    @Test
    void theRangeFunctionSharesTheLookupJoinsDimension() throws Exception {
        final FlixRangeFunction range = open(false, 2, 1);
        final FlixAsyncLookupFunction lookup = TestTables.function(SCHEMA, options(), new int[] {0});
        lookup.setLingerTimer(linger);
        lookup.open(new FunctionContext(null));
        try {
            assertSame(held, lookup.dimension());
            assertEquals(3, SharedDimensions.references(held));
            final CompletableFuture<Collection<RowData>> found = lookup.asyncLookup(GenericRowData.of(2L));
            linger.triggerScheduledTasks();
            assertEquals("n2", TestTables.answer(found).iterator().next().getString(1).toString());
        } finally {
            lookup.close();
        }
        range.close();
        assertEquals(1, SharedDimensions.references(held));
    }

    /**
     * Where the index runs one call at a time (the GPU backend), the batches of two functions on one table (two
     * queries, here with other limits) that arrive while a call runs meet in the next index call, each cut back to
     * its own limit.
     */
    @Test
    void onTheGatheringPathTheBatchesOfTwoFunctionsMeetInOneIndexCall() throws Exception {
        backend = Backend.GPU;
        firstRangeMayGo = new CountDownLatch(1);
        final FlixRangeFunction first = open(false, 2, 1);
        final FlixRangeFunction second = open(false, 4, 1);
        final FlixRangeFunction third = open(true, 1, 1);
        final Map<String, CompletableFuture<Collection<RowData>>> probes = new ConcurrentHashMap<>();
        final List<Thread> senders = new ArrayList<>();
        for (Map.Entry<String, FlixRangeFunction> f : Map.of("first", first, "second", second, "third", third)
                .entrySet()) {
            final CompletableFuture<Collection<RowData>> future = new CompletableFuture<>();
            probes.put(f.getKey(), future);
            senders.add(new Thread(() -> f.getValue().eval(future, "names", -10L,
                    f.getKey().equals("third") ? -8L : 10L, f.getValue().maxRows()), f.getKey()));
        }
        senders.get(0).start(); // its batch of one goes to the index at once and is held there
        Eventually.await("the first batch is in the index", () -> rangeCalls.get() == 1);
        senders.get(1).start();
        senders.get(2).start();
        Eventually.await("the other two batches wait for the index call running", () ->
                senders.get(1).getState() == Thread.State.WAITING && senders.get(2).getState() == Thread.State.WAITING);
        firstRangeMayGo.countDown();
        final Map<String, List<String>> answers = new TreeMap<>();
        for (Map.Entry<String, CompletableFuture<Collection<RowData>>> p : probes.entrySet()) {
            answers.put(p.getKey(), names(TestTables.answer(p.getValue())));
        }
        final String started = senders.get(0).getName();
        assertEquals(2, rangeCalls.get(), "the " + started + " batch's call, then one call for the other two");
        final Map<String, List<String>> expected = new TreeMap<>(Map.of(
                "first", expected(-10, 10, 2), "second", expected(-10, 10, 4), "third", List.of("null")));
        assertEquals(expected, answers);
    }

    /** A probe's batch sees every changelog batch applied before it was answered, and none after. */
    @Test
    void aProbeSeesTheChangelogBatchesAppliedBeforeItsBatchIsAnswered() throws Exception {
        final FlixRangeFunction function = open(false, 10, 2);
        final CompletableFuture<Collection<RowData>> before = probe(function, 0L, 9L);
        final RowDataSerializer serializer = new RowDataSerializer(function.spec().rowType());
        final DataOutputSerializer out = new DataOutputSerializer(64);
        final SerializedUpdates updates = new SerializedUpdates(256);
        updates.delete(2);
        serializer.serialize(GenericRowData.of(5L, StringData.fromString("five")), out);
        updates.upsert(5, out.getSharedBuffer(), out.length());
        out.clear();
        serializer.serialize(GenericRowData.of(6L, StringData.fromString("six")), out);
        updates.upsert(6, out.getSharedBuffer(), out.length());
        held.apply(updates); // while the first probe is gathered, not yet answered
        final CompletableFuture<Collection<RowData>> after = probe(function, 0L, 9L);
        assertEquals(List.of("0:n0", "4:four", "5:five", "6:six", "8:n8"), names(TestTables.answer(before)));
        assertEquals(names(TestTables.answer(before)), names(TestTables.answer(after)));
    }

    /** What fails in the index fails the batch's probes with the cause, and the dimension with them. */
    @Test
    void anIndexFailureFailsTheBatchAndTheDimension() throws Exception {
        final FlixRangeFunction function = open(false, 2, 2);
        final IllegalStateException broken = new IllegalStateException("device lost");
        failRanges.set(broken);
        final CompletableFuture<Collection<RowData>> first = probe(function, 0L, 5L);
        final CompletableFuture<Collection<RowData>> second = probe(function, 6L, 9L);
        assertSame(broken, TestTables.failure(first));
        assertSame(broken, TestTables.failure(second));
        assertSame(broken, held.failure());
        failRanges.set(null);
        final CompletableFuture<Collection<RowData>> later = probe(function, 0L, 5L);
        linger.triggerScheduledTasks();
        assertSame(broken, TestTables.failure(later), "a failed dimension answers no more probes");
    }

    /** A stored row that does not deserialize fails the probes whose range holds it, naming its key; no other. */
    @Test
    void aRowThatDoesNotDeserializeFailsItsProbesOnly() throws Exception {
        final FlixRangeFunction function = open(false, 10, 2);
        final SerializedUpdates updates = new SerializedUpdates(256);
        updates.upsert(5, new byte[] {0, 0, 0, 100}, 4); // a row of 100 bytes, cut off after its length
        held.apply(updates);
        final CompletableFuture<Collection<RowData>> holdsIt = probe(function, 4L, 6L);
        final CompletableFuture<Collection<RowData>> besideIt = probe(function, 6L, 8L);
        final Throwable unreadable = TestTables.failure(holdsIt);
        assertTrue(unreadable.getMessage().contains("key 5"), unreadable.getMessage());
        assertEquals(List.of("6:n6", "8:n8"), names(TestTables.answer(besideIt)));
        assertNull(held.failure());
    }

    @Test
    void closeFailsTheProbesNotSentAndLaterProbesSaySo() throws Exception {
        final FlixRangeFunction function = open(false, 2, 4);
        final CompletableFuture<Collection<RowData>> pending = probe(function, 0L, 5L);
        function.close();
        final Throwable unsent = TestTables.failure(pending);
        assertInstanceOf(IllegalStateException.class, unsent);
        assertTrue(unsent.getMessage().contains("closed before this probe was sent"), unsent.getMessage());
        final Throwable late = TestTables.failure(probe(function, 0L, 5L));
        assertTrue(late.getMessage().contains("after its function was closed"), late.getMessage());
        linger.triggerScheduledTasks();
        assertEquals(0, rangeCalls.get());
        assertEquals(1, SharedDimensions.references(held), "only the test holds the dimension");
    }

    @Test
    void anInstanceNotMadeByTheCatalogRefusesToOpen() {
        final IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> new FlixRangeFunction().open(new FunctionContext(null)));
        assertTrue(e.getMessage().contains("'flix' catalog"), e.getMessage());
    }

    @Test
    void metricsCountProbesBatchesAndRows() throws Exception {
        final Map<String, Object> metrics = new ConcurrentHashMap<>();
        final FlixRangeFunction function = open(false, 3, 2, new UnregisteredMetricsGroup() {
            @Override
            public <C extends Counter> C counter(String name, C counter) {
                metrics.put(name, counter);
                return counter;
            }

            @Override
            public <H extends Histogram> H histogram(String name, H histogram) {
                metrics.put(name, histogram);
                return histogram;
            }
        });
        final List<CompletableFuture<Collection<RowData>>> futures = List.of(probe(function, -10L, 10L),
                probe(function, 13L, 20L), probe(function, 1L, 0L), probe(function, 0L, 2L));
        linger.triggerScheduledTasks();
        for (CompletableFuture<Collection<RowData>> f : futures) {
            TestTables.answer(f);
        }
        assertEquals(4, ((Counter) metrics.get("flixRangeProbes")).getCount());
        assertEquals(2, ((Counter) metrics.get("flixRangeBatches")).getCount(), "one full, one sent by its linger");
        assertEquals(3 + 0 + 2, ((Counter) metrics.get("flixRangeRows")).getCount());
        final Histogram sizes = (Histogram) metrics.get("flixRangeBatchSize");
        assertEquals(2, sizes.getCount());
        assertEquals(2, sizes.getStatistics().getMax());
        assertEquals(1, sizes.getStatistics().getMin());
        assertEquals(2, ((Histogram) metrics.get("flixRangeLatencyNanos")).getCount());
        assertFalse(futures.get(0).isCompletedExceptionally());
    }
}
