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

import java.time.Duration;
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
 *
 * <h2>Failures</h2>
 * Whatever ends the owner thread (a failed engine call, a row store allocation, a metrics callback, an
 * {@link OutOfMemoryError}) or the changelog reader is logged and recorded: the lookups queued and every later one
 * complete exceptionally with that cause (which fails the job), the bootstrap fails with it, and the reader stops.
 * A failed dimension is never handed to a new subtask: {@link SharedDimensions} opens a fresh one.
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
    /** When the bootstrap fails unless it has completed: the table's first open plus 'lookup.bootstrap-timeout'. */
    private final long bootstrapDeadlineNanos;

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
        this.bootstrapDeadlineNanos = openedNanos + TimeUnit.MILLISECONDS.toNanos(spec.bootstrapTimeoutMillis());
    }

    void start() {
        owner.start();
        readerThread.start();
        lingerTimer.schedule(this::bootstrapDeadlinePassed, spec.bootstrapTimeoutMillis(), TimeUnit.MILLISECONDS);
    }

    // ---- called by lookup subtasks ----

    /**
     * Blocks until the changelog's contents at open time are applied; fails with the cause where the reader or the
     * owner thread failed, or when 'lookup.bootstrap-timeout' has passed since the table opened on this task
     * manager (the dimension's deadline, shared by every subtask that holds it).
     */
    void awaitBootstrap() throws Exception {
        // the deadline task completes the future; this wait's own limit is only a net should that task not run
        final long netNanos = bootstrapDeadlineNanos - System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        try {
            bootstrapped.get(Math.max(0, netNanos), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw bootstrapTimeout();
        } catch (ExecutionException e) {
            final Throwable cause = e.getCause();
            if (cause instanceof BootstrapTimeoutException timeout) {
                throw new BootstrapTimeoutException(timeout.getMessage(), timeout.getCause());
            }
            throw new IllegalStateException("the 'flix' table's changelog (" + describe() + ") failed: " + cause,
                    cause);
        }
    }

    /** Runs at the bootstrap deadline: fails the bootstrap (and every lookup) unless it has completed. */
    private void bootstrapDeadlinePassed() {
        if (!bootstrapped.isDone() && !closing) {
            fail(bootstrapTimeout());
        }
    }

    /** What is left of the bootstrap's time; zero once the deadline has passed. */
    Duration bootstrapTimeLeft() {
        return Duration.ofNanos(Math.max(0, bootstrapDeadlineNanos - System.nanoTime()));
    }

    /** The error of a bootstrap that ran out of time: the changelog, what the reader waits for, and why. */
    BootstrapTimeoutException bootstrapTimeout() {
        final ChangelogReader.Progress progress = reader.progress();
        return new BootstrapTimeoutException("the 'flix' table's changelog (" + describe() + ") was not read to its "
                + "end within 'lookup.bootstrap-timeout' (" + spec.bootstrapTimeoutMillis() + " ms): "
                + progress.description() + "; " + appliedRecords.get() + " records applied so far",
                progress.cause());
    }

    /** The changelog was not applied up to its end at open time within 'lookup.bootstrap-timeout'. */
    static final class BootstrapTimeoutException extends TimeoutException {
        private static final long serialVersionUID = 1L;

        BootstrapTimeoutException(String message, Throwable cause) {
            super(message);
            if (cause != null) {
                initCause(cause);
            }
        }
    }

    /**
     * Queues a lookup batch; its futures complete on the owner thread, or exceptionally with the dimension's
     * failure (or because it is closed). Checked again after queueing: the owner records a failure before it fails
     * what is queued, so a batch queued after that is failed here.
     */
    void submit(LookupBatch lookups) {
        if (failIfStopped(lookups)) {
            return;
        }
        queue.add(lookups);
        failIfStopped(lookups);
    }

    private boolean failIfStopped(LookupBatch lookups) {
        final Throwable failed = failure;
        if (failed == null && !closing) {
            return false;
        }
        final Throwable reason = failed != null ? failed : closed();
        for (int i = 0; i < lookups.size; i++) {
            lookups.futures[i].completeExceptionally(reason);
        }
        return true;
    }

    // ---- called by the changelog reader ----

    /** Queues an update batch; dropped once the dimension has failed (nobody would apply it). */
    void submit(UpdateBatch updates) {
        if (updates.size() > 0 && failure == null) {
            queue.add(updates);
        }
    }

    /** The reader has handed over everything up to the changelog's end at open time. */
    void bootstrapSubmitted() {
        queue.add(BOOTSTRAP_MARK);
    }

    /**
     * Records the dimension's failure (the first one wins) and logs it: the bootstrap and every queued and later
     * lookup fail with the cause, and the reader stops. Called by the reader, the owner thread and the bootstrap
     * deadline.
     */
    void fail(Throwable cause) {
        if (closing) {
            return;
        }
        synchronized (this) {
            if (failure != null) {
                return;
            }
            failure = cause;
        }
        LOG.error("FliX dimension {} failed; its lookups fail with this cause", describe(), cause);
        bootstrapped.completeExceptionally(cause);
        reader.stop();
        queue.add(cause); // wakes the owner thread, which fails what is queued and stops
    }

    /** The failure that stopped this dimension, or null. */
    Throwable failure() {
        return failure;
    }

    boolean isClosing() {
        return closing;
    }

    // ---- the owner thread ----

    /**
     * The owner loop. Anything thrown here, in the engine call or around it, ends the loop through {@link #fail}:
     * one place records it, and the {@code finally} fails whatever is still queued.
     */
    private void runOwner() {
        final List<Object> tasks = new ArrayList<>();
        try {
            index = FlixIndex.open(spec.indexSettings().configFor(0, 1));
            engine = new MicroBatchEngine(index);
            backendName = index.backend().name().toLowerCase(Locale.ROOT);
            while (failure == null) {
                tasks.add(queue.take());
                queue.drainTo(tasks, MAX_TASKS_PER_BATCH - 1);
                if (process(tasks)) {
                    return;
                }
                tasks.clear();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            fail(new IllegalStateException("the owner thread of the 'flix' dimension " + describe()
                    + " was interrupted", e));
        } catch (Throwable t) {
            fail(t);
        } finally {
            // a lookup queued after this drain sees the failure (or the close) in submit and fails there
            failRemaining(tasks);
            final List<Object> rest = new ArrayList<>();
            queue.drainTo(rest);
            failRemaining(rest);
            if (index != null) {
                try {
                    index.close();
                } catch (Throwable t) {
                    LOG.warn("FliX dimension {}: closing its index failed", describe(), t);
                }
            }
        }
    }

    /** Runs the tasks as one engine batch; true when told to stop, or when the dimension has failed. */
    private boolean process(List<Object> tasks) {
        if (failure != null) {
            return true; // the owner loop's finally fails the tasks with the failure
        }
        batch.clear();
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
        final BatchResults results = engine.execute(batch);
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

    /** Records the batch's metrics, then completes its futures: a caller that saw its answer sees the metrics. */
    private void answer(LookupBatch l, BatchResults results) {
        if (l.metrics != null) {
            l.metrics.batchAnswered(l.size, System.nanoTime() - l.firstNanos);
        }
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
    }

    private void failRemaining(List<Object> tasks) {
        final Throwable failed = failure;
        final Throwable reason = failed != null ? failed : closed();
        for (Object task : tasks) {
            if (task instanceof LookupBatch l) {
                for (int i = 0; i < l.size; i++) {
                    l.futures[i].completeExceptionally(reason);
                }
            }
        }
        tasks.clear();
    }

    private IllegalStateException closed() {
        return new IllegalStateException("the 'flix' dimension " + describe() + " is closed");
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
        bootstrapped.completeExceptionally(closed());
        readerThread.join(30_000);
        owner.join(30_000);
    }

    // ---- for metrics and tests ----

    String describe() {
        return spec.describeChangelog();
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
