package io.flix.flink.table;

import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.table.dimension.SharedDimension;
import io.flix.flink.table.dimension.SharedDimensions;
import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import io.flix.flink.testing.Eventually;
import io.flix.index.FlixIndex;

import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.testutils.ManuallyTriggeredScheduledExecutorService;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The lookups of two subtasks sharing a table on the CPU backend run in the index at the same time, and an update
 * batch of the changelog is applied atomically: every lookup batch sees all of it or none of it. The index is held
 * at chosen points through a proxy, so the interleaving is the test's, not the scheduler's.
 */
class SharedDimensionConcurrencyTest {

    private static final ResolvedSchema SCHEMA = new ResolvedSchema(
            List.of(Column.physical("id", DataTypes.BIGINT().notNull()), Column.physical("name", DataTypes.STRING())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());
    /** Keys of the table; a lookup batch asks for all of them. */
    private static final int KEYS = 64;

    @TempDir
    Path dir;

    /** Threads whose lookups wait inside the index until both are there, then until {@link #releaseReads}. */
    private final Set<Thread> meetingInTheIndex = ConcurrentHashMap.newKeySet();
    private final CountDownLatch bothInside = new CountDownLatch(2);
    private final CountDownLatch releaseReads = new CountDownLatch(1);
    /** The thread whose update batch waits at the index's delete (its upserts done) until {@link #releaseDelete}. */
    private volatile Thread updater;
    private final CountDownLatch deleteEntered = new CountDownLatch(1);
    private final CountDownLatch releaseDelete = new CountDownLatch(1);

    private void beforeIndexCall(String method) throws InterruptedException {
        final Thread self = Thread.currentThread();
        if (method.equals("get") && meetingInTheIndex.remove(self)) {
            bothInside.countDown();
            assertTrue(bothInside.await(TestTables.NET_SECONDS, TimeUnit.SECONDS),
                    "the other subtask's lookups did not enter the index while these were in it");
            assertTrue(releaseReads.await(TestTables.NET_SECONDS, TimeUnit.SECONDS));
        }
        if (method.equals("delete") && self == updater) {
            deleteEntered.countDown();
            assertTrue(releaseDelete.await(TestTables.NET_SECONDS, TimeUnit.SECONDS));
        }
    }

    private FlixAsyncLookupFunction subtask(Path file) throws Exception {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("changelog", "file");
        options.put("file.path", file.toString());
        options.put("lookup.batch-size", String.valueOf(KEYS)); // a batch asks for every key, sent by the last
        options.put("lookup.batch-policy", "linger"); // on size only: the batch goes on the thread that fills it
        options.put("index.backend", "cpu");
        final FlixAsyncLookupFunction function = TestTables.function(SCHEMA, options, new int[] {0});
        function.setLingerTimer(new ManuallyTriggeredScheduledExecutorService()); // never fired: no linger
        return function;
    }

    /** A thread that looks up every key through {@code function}: one batch, answered on this thread. */
    private static final class Lookups extends Thread {
        final FlixAsyncLookupFunction function;
        final List<CompletableFuture<Collection<RowData>>> answers = new ArrayList<>();

        Lookups(FlixAsyncLookupFunction function) {
            this.function = function;
        }

        @Override
        public void run() {
            for (long k = 0; k < KEYS; k++) {
                answers.add(function.asyncLookup(GenericRowData.of(k)));
            }
        }

        /** What the batch saw: "before" or "after" the update batch; anything else fails the test. */
        String saw() throws Exception {
            join(TimeUnit.SECONDS.toMillis(TestTables.NET_SECONDS));
            final List<String> names = new ArrayList<>();
            for (CompletableFuture<Collection<RowData>> answer : answers) {
                final Collection<RowData> rows = TestTables.answer(answer);
                names.add(rows.isEmpty() ? "none" : rows.iterator().next().getString(1).toString());
            }
            final List<String> before = new ArrayList<>();
            final List<String> after = new ArrayList<>();
            for (int k = 0; k < KEYS; k++) {
                before.add("v0");
                after.add(k < KEYS / 2 ? "v1" : "none");
            }
            if (names.equals(before)) {
                return "before";
            }
            if (names.equals(after)) {
                return "after";
            }
            throw new AssertionError("a lookup batch saw part of an update batch: " + names);
        }
    }

    /** The update batch: the first half of the keys renamed "v1", the second half deleted. */
    private static SerializedUpdates update(FlixAsyncLookupFunction function) throws Exception {
        final RowDataSerializer serializer = new RowDataSerializer(function.spec().rowType());
        final DataOutputSerializer out = new DataOutputSerializer(64);
        final SerializedUpdates updates = new SerializedUpdates(256);
        for (long k = 0; k < KEYS; k++) {
            if (k < KEYS / 2) {
                out.clear();
                serializer.serialize(GenericRowData.of(k, StringData.fromString("v1")), out);
                updates.upsert(k, out.getSharedBuffer(), out.length());
            } else {
                updates.delete(k);
            }
        }
        return updates;
    }

    /** Until the thread waits (on the dimension's lock, the only place it can), or has answered its batch. */
    private static void awaitWaiting(Thread thread, String what) throws Exception {
        Eventually.await(what, () -> thread.getState() == Thread.State.WAITING || !thread.isAlive());
    }

    @Test
    void lookupsOfTwoSubtasksRunInParallelAndSeeAnUpdateBatchWhollyOrNotAtAll() throws Exception {
        final Path file = dir.resolve("names.jsonl");
        final List<String> lines = new ArrayList<>();
        for (int k = 0; k < KEYS; k++) {
            lines.add("{\"id\":" + k + ",\"name\":\"v0\"}");
        }
        Files.write(file, lines);
        final FlixAsyncLookupFunction first = subtask(file);
        final FlixAsyncLookupFunction second = subtask(file);
        final SharedDimension dimension = SharedDimensions.acquire(first.spec(),
                config -> HookedIndex.wrap(FlixIndex.open(config), this::beforeIndexCall));
        try {
            first.open(new FunctionContext(null));
            second.open(new FunctionContext(null));
            assertSame(dimension, first.dimension());
            assertSame(dimension, second.dimension());
            final SerializedUpdates updates = update(first);

            // the two subtasks' batches meet inside the index: neither waits for the other to finish
            final Lookups firstBefore = new Lookups(first);
            final Lookups secondBefore = new Lookups(second);
            meetingInTheIndex.add(firstBefore);
            meetingInTheIndex.add(secondBefore);
            firstBefore.start();
            secondBefore.start();
            assertTrue(bothInside.await(TestTables.NET_SECONDS, TimeUnit.SECONDS), "both batches in the index");

            // an update batch arrives while they read: it waits for them, then stops in the index half applied
            final CompletableFuture<Throwable> applied = new CompletableFuture<>();
            final Thread reader = new Thread(() -> {
                try {
                    dimension.apply(updates);
                    applied.complete(null);
                } catch (Throwable t) {
                    applied.complete(t);
                }
            });
            updater = reader;
            reader.start();
            Eventually.await("the update batch waits for the lookups reading, or runs",
                    () -> reader.getState() == Thread.State.WAITING || deleteEntered.getCount() == 0);
            assertEquals(1, deleteEntered.getCount(), "the update batch ran while lookups were reading");
            releaseReads.countDown();
            assertEquals("before", firstBefore.saw());
            assertEquals("before", secondBefore.saw());
            assertTrue(deleteEntered.await(TestTables.NET_SECONDS, TimeUnit.SECONDS), "the update batch runs");

            // lookups sent while the update batch is half applied wait for all of it
            final Lookups firstAfter = new Lookups(first);
            final Lookups secondAfter = new Lookups(second);
            firstAfter.start();
            secondAfter.start();
            awaitWaiting(firstAfter, "the first subtask's batch waits for the update batch");
            awaitWaiting(secondAfter, "the second subtask's batch waits for the update batch");
            releaseDelete.countDown();
            assertEquals("after", firstAfter.saw());
            assertEquals("after", secondAfter.saw());
            assertEquals(null, applied.get(TestTables.NET_SECONDS, TimeUnit.SECONDS));
            assertEquals(KEYS / 2, dimension.indexSize());
        } finally {
            releaseReads.countDown();
            releaseDelete.countDown();
            first.close();
            second.close();
            SharedDimensions.release(dimension);
        }
    }
}
