package io.flix.flink.table;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.FunctionContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whatever fails on a dimension's owner thread, outside the engine call too, fails the lookups queued and every
 * later one with that cause; nothing hangs (the waits' limit is only a net).
 */
class SharedDimensionFailureTest {

    private static final ResolvedSchema SCHEMA = new ResolvedSchema(
            List.of(Column.physical("id", DataTypes.BIGINT().notNull()), Column.physical("name", DataTypes.STRING())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());

    @TempDir
    Path dir;

    private FlixAsyncLookupFunction function;
    private SharedDimension dimension;

    @BeforeEach
    void open() throws Exception {
        final Path file = dir.resolve("names.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\"}", "{\"id\":2,\"name\":\"b\"}"));
        function = TestTables.function(SCHEMA, options(file), new int[] {0});
        function.open(new FunctionContext(null));
        dimension = function.dimension();
    }

    @AfterEach
    void close() throws Exception {
        function.close();
    }

    private static Map<String, String> options(Path file) {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("changelog", "file");
        options.put("file.path", file.toString());
        options.put("lookup.batch-size", "1"); // every lookup is sent at once: no linger involved
        options.put("index.backend", "cpu");
        return options;
    }

    /** A batch of lookups of the given keys, answered through {@code metrics} (null for none). */
    @SuppressWarnings("unchecked")
    private static SharedDimension.LookupBatch batch(SharedDimension.LookupMetrics metrics, long... keys) {
        final CompletableFuture<Collection<RowData>>[] futures = new CompletableFuture[keys.length];
        for (int i = 0; i < keys.length; i++) {
            futures[i] = new CompletableFuture<>();
        }
        return new SharedDimension.LookupBatch(keys, futures, keys.length, System.nanoTime(), metrics);
    }

    /**
     * The owner thread is held inside a metrics callback while more lookups queue behind it; then the callback
     * throws. The batch, the queued lookups and every later lookup fail with that throwable.
     */
    private void failsEverythingWith(Throwable thrown) throws Exception {
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final SharedDimension.LookupBatch failing = batch((size, latency) -> {
            entered.countDown();
            try {
                release.await(TestTables.NET_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            sneakyThrow(thrown);
        }, 1);
        dimension.submit(failing);
        assertTrue(entered.await(TestTables.NET_SECONDS, TimeUnit.SECONDS), "the owner thread answers the batch");
        final List<SharedDimension.LookupBatch> queued = List.of(batch(null, 1, 2), batch(null, 3));
        queued.forEach(dimension::submit);
        release.countDown();

        assertSame(thrown, TestTables.failure(failing.futures[0]), "the batch whose metrics failed");
        for (SharedDimension.LookupBatch b : queued) {
            for (CompletableFuture<Collection<RowData>> f : b.futures) {
                assertSame(thrown, TestTables.failure(f), "a lookup queued behind it");
            }
        }
        assertSame(thrown, dimension.failure());
        assertSame(thrown, TestTables.failure(function.asyncLookup(GenericRowData.of(1L))), "a later lookup");
        final SharedDimension.LookupBatch later = batch(null, 2);
        dimension.submit(later);
        assertSame(thrown, TestTables.failure(later.futures[0]), "a later batch");
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void sneakyThrow(Throwable t) throws T {
        throw (T) t;
    }

    @Test
    void aFailingMetricsCallbackFailsPendingAndLaterLookups() throws Exception {
        failsEverythingWith(new IllegalStateException("metrics callback failed"));
    }

    @Test
    void anErrorOnTheOwnerThreadFailsPendingAndLaterLookups() throws Exception {
        failsEverythingWith(new OutOfMemoryError("no room for the row store (simulated)"));
    }

    /** A failure while the owner assembles a batch, before the engine call: a batch with fewer keys than lookups. */
    @Test
    void aFailureWhileAssemblingTheBatchFailsPendingAndLaterLookups() throws Exception {
        @SuppressWarnings("unchecked")
        final CompletableFuture<Collection<RowData>>[] futures =
                new CompletableFuture[] {new CompletableFuture<>(), new CompletableFuture<>()};
        final SharedDimension.LookupBatch malformed =
                new SharedDimension.LookupBatch(new long[] {1}, futures, 2, System.nanoTime(), null);
        dimension.submit(malformed);
        final Throwable cause = TestTables.failure(futures[0]);
        assertTrue(cause instanceof ArrayIndexOutOfBoundsException, String.valueOf(cause));
        assertSame(cause, TestTables.failure(futures[1]));
        assertSame(cause, dimension.failure());
        assertSame(cause, TestTables.failure(function.asyncLookup(GenericRowData.of(2L))));
    }

    /** A subtask opening after the failure (a restarted job) gets a fresh dimension; the failed one stays failed. */
    @Test
    void aFailedDimensionIsReplacedForTheNextSubtask() throws Exception {
        failsEverythingWith(new IllegalStateException("metrics callback failed"));
        final FlixAsyncLookupFunction next = TestTables.function(SCHEMA, options(dir.resolve("names.jsonl")),
                new int[] {0});
        next.open(new FunctionContext(null));
        try {
            assertNotSame(dimension, next.dimension());
            final Collection<RowData> rows = TestTables.answer(next.asyncLookup(GenericRowData.of(2L)));
            assertEquals("b", rows.iterator().next().getString(1).toString());
        } finally {
            next.close();
        }
        assertTrue(TestTables.failure(function.asyncLookup(GenericRowData.of(2L))) instanceof IllegalStateException,
                "the failed dimension's holder keeps failing");
        // the fresh one is freed with its last holder; the failed one is no longer registered, only held
        assertTrue(SharedDimensions.openOn(dir.resolve("names.jsonl").toString()).isEmpty());
    }
}
