package io.flix.flink.table;

import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.table.dimension.SharedDimension;
import io.flix.flink.table.dimension.SharedDimensions;
import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import io.flix.flink.testing.Eventually;
import io.flix.index.FlixIndex;

import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whatever fails applying changelog records or answering a lookup batch fails the lookups not answered yet and every
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
    /** Held by the test besides the function: opened with {@link #onIndexCall} as the index's hook. */
    private SharedDimension held;
    /** What the index does before each call; nothing until a test sets it. */
    private final AtomicReference<HookedIndex.Hook> onIndexCall = new AtomicReference<>(method -> { });

    @BeforeEach
    void open() throws Exception {
        final Path file = dir.resolve("names.jsonl");
        Files.write(file, List.of("{\"id\":1,\"name\":\"a\"}", "{\"id\":2,\"name\":\"b\"}"));
        function = TestTables.function(SCHEMA, options(file), new int[] {0});
        held = SharedDimensions.acquire(function.spec(),
                config -> HookedIndex.wrap(FlixIndex.open(config), method -> onIndexCall.get().before(method)));
        function.open(new FunctionContext(null));
        dimension = function.dimension();
        assertSame(held, dimension);
    }

    @AfterEach
    void close() throws Exception {
        function.close();
        SharedDimensions.release(held);
    }

    private static Map<String, String> options(Path file) {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("changelog", "file");
        options.put("file.path", file.toString());
        options.put("lookup.batch-size", "1"); // every lookup is answered at once: no linger involved
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

    /** Changelog records as the reader makes them: an upsert of {@code (key, name)}. */
    private SerializedUpdates upsert(long key, String name) throws Exception {
        final DataOutputSerializer out = new DataOutputSerializer(64);
        new RowDataSerializer(function.spec().rowType()).serialize(GenericRowData.of(key, StringData.fromString(name)),
                out);
        final SerializedUpdates updates = new SerializedUpdates(256);
        updates.upsert(key, out.getCopyOfBuffer(), out.length());
        return updates;
    }

    /** After the dimension failed with {@code cause}: a later lookup of the function, and a later batch, fail so. */
    private void laterLookupsFailWith(Throwable cause) throws Exception {
        assertSame(cause, dimension.failure());
        assertSame(cause, TestTables.failure(function.asyncLookup(GenericRowData.of(1L))), "a later lookup");
        final SharedDimension.LookupBatch later = batch(null, 2);
        dimension.submit(later);
        assertSame(cause, TestTables.failure(later.futures[0]), "a later batch");
    }

    /**
     * The changelog reader's update batch fails inside the index while a lookup waits for it (held there until the
     * lookup waits on the dimension's lock): the waiting lookup, and every later one, fail with what the index threw.
     */
    @Test
    void aFailureApplyingUpdatesFailsPendingAndLaterLookups() throws Exception {
        final IllegalStateException thrown = new IllegalStateException("the index failed an upsert (simulated)");
        final CountDownLatch upsertEntered = new CountDownLatch(1);
        final CountDownLatch failUpsert = new CountDownLatch(1);
        onIndexCall.set(method -> {
            if (method.equals("upsert")) {
                upsertEntered.countDown();
                assertTrue(failUpsert.await(TestTables.NET_SECONDS, TimeUnit.SECONDS));
                throw thrown;
            }
        });
        final SerializedUpdates updates = upsert(3, "c");
        final CompletableFuture<Throwable> applied = new CompletableFuture<>();
        final Thread reader = new Thread(() -> {
            try {
                dimension.apply(updates);
                applied.complete(null);
            } catch (Throwable t) {
                applied.complete(t);
            }
        });
        reader.start();
        assertTrue(upsertEntered.await(TestTables.NET_SECONDS, TimeUnit.SECONDS), "the update batch reaches the index");
        final AtomicReference<CompletableFuture<Collection<RowData>>> pending = new AtomicReference<>();
        final Thread lookup = new Thread(() -> pending.set(function.asyncLookup(GenericRowData.of(1L))));
        lookup.start();
        Eventually.await("the lookup waits for the update batch",
                () -> lookup.getState() == Thread.State.WAITING || !lookup.isAlive());
        failUpsert.countDown();

        assertSame(thrown, applied.get(TestTables.NET_SECONDS, TimeUnit.SECONDS), "the reader's apply fails so");
        lookup.join(TimeUnit.SECONDS.toMillis(TestTables.NET_SECONDS));
        assertSame(thrown, TestTables.failure(pending.get()), "the lookup that waited for the update batch");
        laterLookupsFailWith(thrown);
    }

    /** A batch whose metrics callback throws: the batch and every later lookup fail with that throwable. */
    private void failsEverythingWith(Throwable thrown) throws Exception {
        final SharedDimension.LookupBatch failing = batch((size, latency) -> sneakyThrow(thrown), 1);
        dimension.submit(failing);
        assertSame(thrown, TestTables.failure(failing.futures[0]), "the batch whose metrics failed");
        laterLookupsFailWith(thrown);
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> void sneakyThrow(Throwable t) throws T {
        throw (T) t;
    }

    @Test
    void aFailingMetricsCallbackFailsTheBatchAndLaterLookups() throws Exception {
        failsEverythingWith(new IllegalStateException("metrics callback failed"));
    }

    @Test
    void anErrorAnsweringABatchFailsItAndLaterLookups() throws Exception {
        failsEverythingWith(new OutOfMemoryError("no room for the answers (simulated)"));
    }

    /** The index refuses a malformed batch (fewer keys than lookups): every lookup of it, and later ones, fail so. */
    @Test
    void aFailureInTheIndexCallFailsTheBatchAndLaterLookups() throws Exception {
        @SuppressWarnings("unchecked")
        final CompletableFuture<Collection<RowData>>[] futures =
                new CompletableFuture[] {new CompletableFuture<>(), new CompletableFuture<>()};
        final SharedDimension.LookupBatch malformed =
                new SharedDimension.LookupBatch(new long[] {1}, futures, 2, System.nanoTime(), null);
        dimension.submit(malformed);
        final Throwable cause = TestTables.failure(futures[0]);
        assertInstanceOf(IllegalArgumentException.class, cause);
        assertSame(cause, TestTables.failure(futures[1]));
        laterLookupsFailWith(cause);
    }

    /** A stored row that does not deserialize fails its own lookup only, naming the key; the table goes on. */
    @Test
    void aRowThatDoesNotDeserializeFailsItsLookupOnly() throws Exception {
        final SerializedUpdates updates = new SerializedUpdates(256);
        updates.upsert(5, new byte[] {0, 0, 0, 100}, 4); // a row of 100 bytes, cut off after its length
        dimension.apply(updates);
        final SharedDimension.LookupBatch lookups = batch(null, 5, 1);
        dimension.submit(lookups);
        final Throwable unreadable = TestTables.failure(lookups.futures[0]);
        assertTrue(unreadable.getMessage().contains("key 5"), unreadable.getMessage());
        assertEquals("a", TestTables.answer(lookups.futures[1]).iterator().next().getString(1).toString());
        assertNull(dimension.failure());
        assertEquals("a", TestTables.answer(function.asyncLookup(GenericRowData.of(1L))).iterator().next()
                .getString(1).toString());
    }

    /**
     * A bootstrap batch that fails in the index (batches are applied on a thread of the reader's own while it reads
     * the next): the table's open fails with that cause, and the dimension stays failed.
     */
    @Test
    void aBootstrapBatchThatFailsInTheIndexFailsTheOpenWithItsCause() throws Exception {
        final Path file = dir.resolve("many.jsonl");
        final List<String> lines = new ArrayList<>();
        for (int id = 0; id < 5_000; id++) {
            lines.add("{\"id\":" + id + ",\"name\":\"n" + id + "\"}");
        }
        Files.write(file, lines);
        final Map<String, String> options = options(file);
        options.put("changelog.batch-size", "1000"); // five batches: the second fails
        final IllegalStateException thrown = new IllegalStateException(
                "the index failed a bootstrap batch (simulated)");
        final AtomicInteger upserts = new AtomicInteger();
        final FlixAsyncLookupFunction failing = TestTables.function(SCHEMA, options, new int[] {0});
        final SharedDimension failingDimension = SharedDimensions.acquire(failing.spec(),
                config -> HookedIndex.wrap(FlixIndex.open(config), method -> {
                    if (method.equals("upsert") && upserts.incrementAndGet() == 2) {
                        throw thrown;
                    }
                }));
        try {
            final IllegalStateException open = assertThrows(IllegalStateException.class,
                    () -> failing.open(new FunctionContext(null)));
            assertSame(thrown, open.getCause(), open.toString());
            assertSame(thrown, failingDimension.failure());
            assertEquals(2, upserts.get(), "no batch after the failed one reached the index");
        } finally {
            failing.close();
            SharedDimensions.release(failingDimension);
        }
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
