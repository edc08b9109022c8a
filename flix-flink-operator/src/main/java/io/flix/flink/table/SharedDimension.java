package io.flix.flink.table;

import io.flix.flink.LookupKind;
import io.flix.flink.PayloadStore;
import io.flix.flink.dimension.IndexLookups;
import io.flix.flink.dimension.LocalDimension;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * One {@code 'flix'} table held on a task manager: its rows in a {@link LocalDimension} (a FliX index from key to row
 * id, the rows serialized with Flink's {@link RowDataSerializer} in a row store), a changelog reader that keeps them
 * current, and the lookup subtasks of this task manager that share it (see {@link SharedDimensions}).
 *
 * <h2>Threads</h2>
 * The changelog reader's thread applies each {@link UpdateBatch} it reads, in changelog order, one at a time, under
 * the dimension's exclusive lock. A lookup batch is answered on the thread that sends it (its subtask's, or the
 * linger timer's) under the shared lock: the batches of several subtasks in parallel on the CPU backend, gathered into
 * fewer, larger index calls on the GPU backend. So a lookup batch sees every update batch applied before it took the
 * lock, wholly, and none applied after. The linger timer is one thread for every subtask of the table: the batches
 * it sends are answered one after another (batches that fill up are sent by their subtasks' own threads). It also
 * runs the bootstrap deadline.
 *
 * <h2>Failures</h2>
 * Whatever fails applying an update batch or answering a lookup batch (the index, the row store, a metrics callback,
 * an {@link OutOfMemoryError}), or in the changelog reader, is logged and recorded: the lookup batches not answered
 * yet and every later one complete exceptionally with that cause (which fails the job; a batch being answered on
 * another thread at that moment completes with its rows), the bootstrap fails with it, and the reader stops. A failed dimension is never handed to a new subtask: {@link SharedDimensions} opens a fresh
 * one. A stored row that does not deserialize fails its own lookup only.
 */
final class SharedDimension implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SharedDimension.class);
    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;

    final DimensionSpec spec;
    /** Lookup subtasks holding this dimension; guarded by {@link SharedDimensions}. */
    int references;

    /** The index and the rows, updated by the reader's thread, read by the lookups' threads. */
    private final LocalDimension<RowData> rows;
    private final ChangelogReader reader;
    private final Thread readerThread;
    /** Times lookup batches' linger and the bootstrap deadline; shared by the lookup subtasks of this dimension. */
    final ScheduledExecutorService lingerTimer;
    /** Completes once the changelog has been applied up to its end when this dimension opened. */
    private final CompletableFuture<Void> bootstrapped = new CompletableFuture<>();
    private volatile Throwable failure;
    private volatile boolean closing;
    /** When the bootstrap fails unless it has completed: the table's first open plus 'lookup.bootstrap-timeout'. */
    private final long bootstrapDeadlineNanos;
    /** Readers of the stored rows, each used by one thread at a time, kept for the next lookup batch. */
    private final ConcurrentLinkedQueue<PayloadStore.Reader<RowData>> rowReaders = new ConcurrentLinkedQueue<>();

    // read by gauges and tests from other threads
    private volatile long bootstrapMillis = -1;
    private final long openedNanos = System.nanoTime();

    /**
     * Lookups of one subtask, gathered; each future completes with 0 or 1 row: the row of the key looked up
     * ({@link LookupKind#EXACT}), or of the largest key {@code <=} it ({@link LookupKind#FLOOR}) or the smallest key
     * {@code >=} it ({@link LookupKind#CEILING}) over the whole dimension.
     */
    static final class LookupBatch {
        final LookupKind match;
        final long[] keys;
        final CompletableFuture<Collection<RowData>>[] futures;
        final int size;
        /** When the batch's first lookup arrived, for the latency metric. */
        final long firstNanos;
        final LookupMetrics metrics;

        /** Exact lookups. */
        LookupBatch(long[] keys, CompletableFuture<Collection<RowData>>[] futures, int size, long firstNanos,
                    LookupMetrics metrics) {
            this(LookupKind.EXACT, keys, futures, size, firstNanos, metrics);
        }

        LookupBatch(LookupKind match, long[] keys, CompletableFuture<Collection<RowData>>[] futures, int size,
                    long firstNanos, LookupMetrics metrics) {
            if (match == LookupKind.RANGE) {
                throw new IllegalArgumentException("a lookup batch answers one row per key: exact, floor or "
                        + "ceiling, not " + match);
            }
            this.match = match;
            this.keys = keys;
            this.futures = futures;
            this.size = size;
            this.firstNanos = firstNanos;
            this.metrics = metrics;
        }
    }

    /** Called on the thread that answered a lookup batch, before its futures complete. */
    interface LookupMetrics {
        void batchAnswered(int size, long latencyNanos);
    }

    SharedDimension(DimensionSpec spec) {
        this(spec, FlixIndex::open);
    }

    /** @param openIndex opens the table's index from its settings (tests wrap the index here) */
    SharedDimension(DimensionSpec spec, Function<FlixConfig, FlixIndex> openIndex) {
        this.spec = spec;
        final FlixIndex index;
        try {
            index = openIndex.apply(spec.indexSettings().configFor(0, 1));
        } catch (RuntimeException e) {
            throw new IllegalStateException("the 'flix' table (" + describe() + ") cannot open its index: "
                    + e.getMessage(), e);
        }
        final int batchCapacity = Math.min(spec.changelogBatchSize(), 1 << 16);
        this.rows = new LocalDimension<>("of the 'flix' table (" + describe() + ")", index,
                PayloadStore.of(new RowDataSerializer(spec.rowType()), batchCapacity), batchCapacity);
        final String name = spec.changelog().equals(DimensionSpec.KAFKA) ? spec.topic() : spec.filePath();
        this.reader = spec.changelog().equals(DimensionSpec.KAFKA)
                ? new KafkaChangelogReader(spec, this) : new FileChangelogReader(spec, this);
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
        readerThread.start();
        lingerTimer.schedule(this::bootstrapDeadlinePassed, spec.bootstrapTimeoutMillis(), TimeUnit.MILLISECONDS);
    }

    // ---- called by lookup subtasks ----

    /**
     * Blocks until the changelog's contents at open time are applied; fails with the cause where the reader or
     * applying its records failed, or when 'lookup.bootstrap-timeout' has passed since the table opened on this task
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
                + progress.description() + "; " + appliedRecords() + " records applied so far",
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
     * Answers a lookup batch on this thread: one index call under the dimension's shared lock (gathered with other
     * subtasks' batches on the GPU), then the batch's metrics, then its futures. Where the dimension has failed, or
     * fails while answering this batch, every future of the batch completes exceptionally with the cause; once the
     * dimension is closed, with an error saying so.
     */
    void submit(LookupBatch lookups) {
        if (failIfStopped(lookups)) {
            return;
        }
        final Object[] answers = new Object[lookups.size];
        try {
            rows.read((index, payloads) -> {
                answer(lookups, index, payloads, answers);
                return null;
            });
            if (lookups.metrics != null) {
                lookups.metrics.batchAnswered(lookups.size, System.nanoTime() - lookups.firstNanos);
            }
        } catch (Throwable t) {
            failAll(lookups, reasonFor(t));
            return;
        }
        for (int i = 0; i < lookups.size; i++) {
            if (answers[i] instanceof Throwable unreadable) {
                lookups.futures[i].completeExceptionally(unreadable);
            } else {
                @SuppressWarnings("unchecked")
                final Collection<RowData> found = (Collection<RowData>) answers[i];
                lookups.futures[i].complete(found);
            }
        }
    }

    /**
     * Runs {@code read} on this thread under the dimension's shared lock, with the index's lookups (gathered with
     * other threads' on the GPU) and a reader of the stored rows: for lookups of other shapes than
     * {@link #submit}'s (key ranges), under its rules. Where the dimension has failed, or fails during the read (what
     * the read throws fails the dimension), this throws the cause; once it is closed, an error saying so.
     */
    <T> T read(RowsRead<T> read) throws Throwable {
        final Throwable failed = failure;
        if (failed != null || closing) {
            throw failed != null ? failed : closed();
        }
        try {
            return rows.read((index, payloads) -> {
                PayloadStore.Reader<RowData> rowReader = rowReaders.poll();
                if (rowReader == null) {
                    rowReader = payloads.reader();
                }
                try {
                    return read.run(index, rowReader);
                } finally {
                    rowReaders.offer(rowReader);
                }
            });
        } catch (Throwable t) {
            throw reasonFor(t);
        }
    }

    /** A read of the index and the stored rows; see {@link #read}. */
    @FunctionalInterface
    interface RowsRead<T> {
        T run(IndexLookups index, PayloadStore.Reader<RowData> rows) throws Exception;
    }

    /** Under the shared lock: each lookup's row (a collection of 0 or 1), or why its stored row cannot be read. */
    private void answer(LookupBatch l, IndexLookups index, PayloadStore<RowData> payloads, Object[] answers) {
        final long[] values = new long[l.size];
        // the key each row is stored under: the one looked up, or the floor's or ceiling's
        final long[] found = l.match == LookupKind.EXACT ? l.keys : new long[l.size];
        switch (l.match) {
            case FLOOR -> index.floor(l.keys, l.size, found, values);
            case CEILING -> index.ceiling(l.keys, l.size, found, values);
            default -> index.get(l.keys, l.size, values);
        }
        PayloadStore.Reader<RowData> rowReader = rowReaders.poll();
        if (rowReader == null) {
            rowReader = payloads.reader();
        }
        try {
            for (int i = 0; i < l.size; i++) {
                if (values[i] == NOT_FOUND) {
                    answers[i] = Collections.emptyList();
                    continue;
                }
                try {
                    answers[i] = Collections.singletonList(rowReader.payload(values[i], found[i]));
                } catch (IOException e) {
                    answers[i] = new IllegalStateException("the stored row of key " + found[i]
                            + " does not deserialize", e.getCause() != null ? e.getCause() : e);
                }
            }
        } finally {
            rowReaders.offer(rowReader);
        }
    }

    /** What the lookups of a batch whose answering threw fail with; fails the dimension where it had not failed. */
    private Throwable reasonFor(Throwable thrown) {
        if (thrown instanceof LocalDimension.FailedException applyFailed) {
            return applyFailed.getCause(); // recorded by apply(UpdateBatch) too
        }
        if (thrown instanceof LocalDimension.ClosedException) {
            return closed();
        }
        fail(thrown);
        return thrown;
    }

    private boolean failIfStopped(LookupBatch lookups) {
        final Throwable failed = failure;
        if (failed == null && !closing) {
            return false;
        }
        failAll(lookups, failed != null ? failed : closed());
        return true;
    }

    private static void failAll(LookupBatch lookups, Throwable reason) {
        for (int i = 0; i < lookups.size; i++) {
            lookups.futures[i].completeExceptionally(reason);
        }
    }

    // ---- called by the changelog reader ----

    /**
     * Applies changelog records, on the reader's thread, in their order, as one batch under the dimension's exclusive
     * lock: a lookup sees all of them or none. Dropped once the dimension has failed. Where applying fails, the
     * dimension fails with the cause, and this call throws it (which stops the reader).
     */
    void apply(UpdateBatch updates) throws IOException {
        if (updates.size() == 0 || failure != null) {
            return;
        }
        try {
            rows.apply(updates);
        } catch (Throwable t) {
            fail(t instanceof LocalDimension.FailedException f ? f.getCause() : t);
            throw t;
        }
    }

    /** The reader has applied everything up to the changelog's end at open time. */
    void bootstrapApplied() {
        if (failure != null || closing) {
            return;
        }
        bootstrapMillis = (System.nanoTime() - openedNanos) / 1_000_000;
        LOG.info("FliX dimension {} bootstrapped: {} keys from {} changelog records in {} ms ({} backend)",
                describe(), rows.size(), rows.appliedUpdates(), bootstrapMillis, rows.backendName());
        bootstrapped.complete(null);
    }

    /**
     * Records the dimension's failure (the first one wins) and logs it: the bootstrap and every lookup not answered
     * yet fail with the cause, and the reader stops. Called where applying or answering failed, by the reader and by
     * the bootstrap deadline.
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
    }

    /** The failure that stopped this dimension, or null. */
    Throwable failure() {
        return failure;
    }

    boolean isClosing() {
        return closing;
    }

    private IllegalStateException closed() {
        return new IllegalStateException("the 'flix' dimension " + describe() + " is closed");
    }

    /**
     * Stops the reader, waits for it a while, then frees the index once the lookups being answered are done (later
     * ones fail saying the dimension is closed); an interrupt while waiting for the reader does not keep the index
     * from being freed.
     */
    @Override
    public void close() throws InterruptedException {
        closing = true;
        reader.stop(); // wakes a Kafka poll; an interrupt would cut the consumer's own close short
        lingerTimer.shutdownNow();
        bootstrapped.completeExceptionally(closed());
        try {
            readerThread.join(30_000);
        } finally {
            rows.close();
        }
    }

    // ---- for metrics and tests ----

    String describe() {
        return spec.describeChangelog();
    }

    long indexSize() {
        return rows.size();
    }

    long rowBytes() {
        return rows.payloadBytes();
    }

    String backendName() {
        return rows.backendName();
    }

    /** Changelog records applied to the index so far. */
    long appliedRecords() {
        return rows.appliedUpdates();
    }

    /** Update batches applied so far. */
    long appliedBatches() {
        return rows.appliedBatches();
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
