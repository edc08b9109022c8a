package io.flix.flink.table;

import io.flix.flink.RowStore;
import io.flix.flink.RowUpdates;
import io.flix.index.FlixIndex;
import io.flix.index.batch.BatchResults;
import io.flix.index.batch.MicroBatchEngine;
import io.flix.index.batch.OperationBatch;

import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One {@code 'flix'} table held on a task manager: a FliX index from key to row id, the rows in a {@link RowStore},
 * a changelog reader that keeps them current, and the lookup subtasks of this task manager that share it (see
 * {@link SharedDimensions}).
 *
 * <h2>One owner thread</h2>
 * The index, the row store and the {@link MicroBatchEngine} belong to one thread, which takes work from a queue in
 * arrival order: lookup batches from the lookup subtasks and update batches from the changelog reader. Whatever is
 * queued when it wakes becomes one engine batch, so lookups and updates need no lock and a lookup sees exactly the
 * updates queued before it. Each update is preceded in the batch by a get of its key, which reads the row it
 * supersedes; those rows are freed after the batch.
 */
final class SharedDimension implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SharedDimension.class);
    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;
    /** Most queued tasks merged into one engine batch. */
    private static final int MAX_TASKS_PER_BATCH = 256;

    final DimensionSpec spec;
    /** Lookup subtasks holding this dimension; guarded by {@link SharedDimensions}. */
    int references;

    private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private final Thread owner;
    private final ChangelogReader reader;
    private final Thread readerThread;
    /** Times lookup batches' linger; shared by the lookup subtasks of this dimension. */
    final ScheduledExecutorService lingerTimer;
    /** Completes once the changelog has been applied up to its end when this dimension opened. */
    private final CompletableFuture<Void> bootstrapped = new CompletableFuture<>();
    private volatile Throwable failure;
    private volatile boolean closing;

    // owner thread only
    private FlixIndex index;
    private MicroBatchEngine engine;
    private final OperationBatch batch = new OperationBatch(1 << 12);
    private final RowStore rows = new RowStore(0);
    private final RowDataSerializer serializer;
    private final DataInputDeserializer in = new DataInputDeserializer();
    private final RowUpdates rowUpdates = new RowUpdates(rows, 1024);

    // read by gauges and tests from other threads
    private volatile long indexSize;
    private volatile long rowBytes;
    private volatile String backendName = "opening";
    private final AtomicLong appliedRecords = new AtomicLong();
    private final AtomicLong appliedBatches = new AtomicLong();
    private volatile long bootstrapMillis = -1;
    private final long openedNanos = System.nanoTime();

    /** Lookups of one subtask, gathered; each future completes with 0 or 1 row. */
    static final class LookupBatch {
        final long[] keys;
        final CompletableFuture<Collection<RowData>>[] futures;
        final int size;
        /** When the batch's first lookup arrived, for the latency metric. */
        final long firstNanos;
        final LookupMetrics metrics;
        int firstPosition;

        LookupBatch(long[] keys, CompletableFuture<Collection<RowData>>[] futures, int size, long firstNanos,
                    LookupMetrics metrics) {
            this.keys = keys;
            this.futures = futures;
            this.size = size;
            this.firstNanos = firstNanos;
            this.metrics = metrics;
        }
    }

    /** Called by the owner thread when a lookup batch has been answered. */
    interface LookupMetrics {
        void batchAnswered(int size, long latencyNanos);
    }

    /** Queued after the bootstrap's update batches: reaching it means they are applied. */
    private static final Object BOOTSTRAP_MARK = new Object();
    private static final Object STOP = new Object();

    SharedDimension(DimensionSpec spec) {
        this.spec = spec;
        this.serializer = new RowDataSerializer(spec.rowType());
        final String name = spec.changelog().equals(DimensionSpec.KAFKA) ? spec.topic() : spec.filePath();
        this.reader = spec.changelog().equals(DimensionSpec.KAFKA)
                ? new KafkaChangelogReader(spec, this) : new FileChangelogReader(spec, this);
        this.owner = new Thread(this::runOwner, "flix-dimension-" + name);
        this.owner.setDaemon(true);
        this.readerThread = new Thread(reader, "flix-changelog-" + name);
        this.readerThread.setDaemon(true);
        final ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, r -> {
            final Thread t = new Thread(r, "flix-lookup-linger-" + name);
            t.setDaemon(true);
            return t;
        });
        timer.setRemoveOnCancelPolicy(true);
        this.lingerTimer = timer;
    }

    void start() {
        owner.start();
        readerThread.start();
    }

    // ---- called by lookup subtasks ----

    /** Blocks until the changelog's contents at open time are applied; fails on timeout or reader failure. */
    void awaitBootstrap(long timeoutMillis) throws Exception {
        try {
            bootstrapped.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new TimeoutException("the 'flix' table's changelog (" + describe() + ") was not read to its end "
                    + "within 'lookup.bootstrap-timeout' (" + timeoutMillis + " ms); " + appliedRecords.get()
                    + " records applied so far");
        } catch (ExecutionException e) {
            throw new IllegalStateException("the 'flix' table's changelog (" + describe() + ") failed",
                    e.getCause());
        }
    }

    /** Queues a lookup batch; its futures complete on the owner thread. */
    void submit(LookupBatch lookups) {
        final Throwable failed = failure;
        if (failed != null || closing) {
            final Throwable reason = failed != null ? failed : new IllegalStateException("the dimension is closed");
            for (int i = 0; i < lookups.size; i++) {
                lookups.futures[i].completeExceptionally(reason);
            }
            return;
        }
        queue.add(lookups);
    }

    // ---- called by the changelog reader ----

    void submit(UpdateBatch updates) {
        if (updates.size() > 0) {
            queue.add(updates);
        }
    }

    /** The reader has handed over everything up to the changelog's end at open time. */
    void bootstrapSubmitted() {
        queue.add(BOOTSTRAP_MARK);
    }

    /** The reader failed: pending and later lookups fail with the cause. */
    void fail(Throwable cause) {
        if (closing) {
            return;
        }
        LOG.error("FliX dimension {} failed", describe(), cause);
        failure = cause;
        bootstrapped.completeExceptionally(cause);
        queue.add(cause);
    }

    boolean isClosing() {
        return closing;
    }

    // ---- the owner thread ----

    private void runOwner() {
        try {
            index = FlixIndex.open(spec.indexSettings().configFor(0, 1));
            engine = new MicroBatchEngine(index);
            backendName = index.backend().name().toLowerCase(Locale.ROOT);
        } catch (Throwable t) {
            fail(t);
        }
        final List<Object> tasks = new ArrayList<>();
        try {
            while (true) {
                tasks.add(queue.take());
                queue.drainTo(tasks, MAX_TASKS_PER_BATCH - 1);
                if (process(tasks)) {
                    return;
                }
                tasks.clear();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            failRemaining(tasks);
            final List<Object> rest = new ArrayList<>();
            queue.drainTo(rest);
            failRemaining(rest);
            if (index != null) {
                index.close();
            }
        }
    }

    /** Runs the tasks as one engine batch; true when told to stop. */
    private boolean process(List<Object> tasks) {
        batch.clear();
        rowUpdates.discard(); // after a failed batch: nothing of it was applied
        boolean stop = false;
        boolean markReached = false;
        for (Object task : tasks) {
            if (task instanceof UpdateBatch u) {
                for (int i = 0; i < u.size(); i++) {
                    if (u.isDelete(i)) {
                        rowUpdates.delete(batch, u.key(i));
                    } else {
                        rowUpdates.upsert(batch, u.key(i), rows.add(u.bytes(), u.rowStart(i), u.rowLength(i)));
                    }
                }
            } else if (task instanceof LookupBatch l) {
                l.firstPosition = batch.size();
                for (int i = 0; i < l.size; i++) {
                    batch.get(l.keys[i]);
                }
            } else if (task == BOOTSTRAP_MARK) {
                markReached = true;
            } else if (task == STOP) {
                stop = true;
            }
        }
        final Throwable failed = failure;
        if (failed != null || index == null) {
            failRemaining(tasks);
            return stop;
        }
        final BatchResults results;
        try {
            results = engine.execute(batch);
        } catch (Throwable t) {
            fail(t);
            failRemaining(tasks);
            return stop;
        }
        for (Object task : tasks) {
            if (task instanceof LookupBatch l) {
                answer(l, results);
            }
        }
        final int updates = rowUpdates.size();
        rowUpdates.releaseSuperseded(results);
        if (updates > 0) {
            appliedRecords.addAndGet(updates);
            appliedBatches.incrementAndGet();
            indexSize = index.size();
            rowBytes = rows.heapBytes();
        }
        if (markReached) {
            bootstrapMillis = (System.nanoTime() - openedNanos) / 1_000_000;
            LOG.info("FliX dimension {} bootstrapped: {} keys from {} changelog records in {} ms ({} backend)",
                    describe(), indexSize, appliedRecords.get(), bootstrapMillis, backendName);
            bootstrapped.complete(null);
        }
        return stop;
    }

    private void answer(LookupBatch l, BatchResults results) {
        final int first = l.firstPosition;
        for (int i = 0; i < l.size; i++) {
            final long row = results.value(first + i);
            final Collection<RowData> found;
            if (row == NOT_FOUND) {
                found = Collections.emptyList();
            } else {
                rows.readInto((int) row, in);
                try {
                    found = Collections.singletonList(serializer.deserialize(in));
                } catch (Exception e) {
                    l.futures[i].completeExceptionally(new IllegalStateException(
                            "the stored row of key " + l.keys[i] + " does not deserialize", e));
                    continue;
                }
            }
            l.futures[i].complete(found);
        }
        if (l.metrics != null) {
            l.metrics.batchAnswered(l.size, System.nanoTime() - l.firstNanos);
        }
    }

    private void failRemaining(List<Object> tasks) {
        Throwable reason = failure;
        if (reason == null) {
            reason = new IllegalStateException("the 'flix' dimension " + describe() + " is closed");
        }
        for (Object task : tasks) {
            if (task instanceof LookupBatch l) {
                for (int i = 0; i < l.size; i++) {
                    l.futures[i].completeExceptionally(reason);
                }
            }
        }
        tasks.clear();
    }

    /**
     * Stops the reader and the owner thread (which fails lookups still queued and frees the index), and waits for
     * both a while; an interrupt while waiting does not keep them from stopping.
     */
    @Override
    public void close() throws InterruptedException {
        closing = true;
        reader.stop(); // wakes a Kafka poll; an interrupt would cut the consumer's own close short
        queue.add(STOP);
        lingerTimer.shutdownNow();
        bootstrapped.completeExceptionally(new IllegalStateException("closed"));
        readerThread.join(30_000);
        owner.join(30_000);
    }

    // ---- for metrics and tests ----

    String describe() {
        return spec.changelog().equals(DimensionSpec.KAFKA) ? "kafka topic '" + spec.topic() + "'"
                : "file '" + spec.filePath() + "'";
    }

    long indexSize() {
        return indexSize;
    }

    long rowBytes() {
        return rowBytes;
    }

    String backendName() {
        return backendName;
    }

    /** Changelog records applied to the index so far. */
    long appliedRecords() {
        return appliedRecords.get();
    }

    long appliedBatches() {
        return appliedBatches.get();
    }

    /** Milliseconds from opening to the end of the bootstrap; -1 before. */
    long bootstrapMillis() {
        return bootstrapMillis;
    }

    /** Records the reader skipped (no usable key, or a value the format decoded to nothing). */
    long skippedRecords() {
        return reader.skipped();
    }
}
