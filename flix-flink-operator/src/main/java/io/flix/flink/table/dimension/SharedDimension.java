package io.flix.flink.table.dimension;

import io.flix.flink.LookupKind;
import io.flix.flink.dimension.DimensionIndex;
import io.flix.flink.dimension.IndexLookups;
import io.flix.flink.dimension.LocalDimension;
import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.payload.PayloadStore;
import io.flix.flink.state.BlockDataInput;
import io.flix.flink.state.KeyGroupSnapshotCodec;
import io.flix.flink.table.changelog.ChangelogReader;
import io.flix.flink.table.changelog.ChangelogTarget;
import io.flix.flink.table.changelog.FileChangelogReader;
import io.flix.flink.table.changelog.KafkaChangelogReader;
import io.flix.flink.table.snapshot.SnapshotDirectory;
import io.flix.flink.table.snapshot.SnapshotManifest;
import io.flix.flink.table.snapshot.SnapshotRestore;
import io.flix.flink.table.snapshot.SnapshotSource;
import io.flix.flink.table.snapshot.SnapshotWriter;
import io.flix.flink.table.spec.DimensionSpec;
import io.flix.flink.taskmanager.TaskManagerGpus;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
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
 * The changelog reader applies each {@link SerializedUpdates} it reads, in changelog order, one at a time, under the
 * dimension's exclusive lock (during the bootstrap on a thread of its own while it reads the next, after it on its
 * reading thread). A lookup batch is answered on the thread that sends it (its subtask's, or the
 * linger timer's) under the shared lock: the batches of several subtasks in parallel on the CPU backend, gathered into
 * fewer, larger index calls on the GPU backend (per device, where the task manager has several GPUs: one replica
 * of the table on each, see {@link DimensionIndex}). So a lookup batch sees every update batch applied before it took
 * the lock, wholly, and none applied after. The linger timer is one thread for every subtask of the table: the batches
 * it sends are answered one after another (batches that fill up are sent by their subtasks' own threads). It also
 * runs the bootstrap deadline.
 *
 * <h2>Failures</h2>
 * Whatever fails applying an update batch or answering a lookup batch (the index, the row store, a metrics callback,
 * an {@link OutOfMemoryError}), or in the changelog reader, is logged and recorded: the lookup batches not answered
 * yet and every later one complete exceptionally with that cause (which fails the job; a batch being answered on
 * another thread at that moment completes with its rows), the bootstrap fails with it, and the reader stops. A failed dimension is never handed to a new subtask: {@link SharedDimensions} opens a fresh
 * one. A stored row that does not deserialize fails its own lookup only.
 *
 * <h2>Snapshots</h2>
 * Where 'snapshot.path' is set, the reader starts from a snapshot where one serves ({@link SnapshotRestore}), tells
 * the dimension the offsets it has applied the topic up to after each batch ({@link #appliedThrough}), and a
 * {@link SnapshotWriter} writes snapshots from the bootstrap's end on.
 */
public final class SharedDimension implements AutoCloseable, ChangelogTarget, SnapshotSource {

    private static final Logger LOG = LoggerFactory.getLogger(SharedDimension.class);
    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;

    public final DimensionSpec spec;
    /** Lookup subtasks holding this dimension; guarded by {@link SharedDimensions}. */
    int references;

    /** The index and the rows, updated by the reader's thread, read by the lookups' threads. */
    private final LocalDimension<RowData> rows;
    private final ChangelogReader reader;
    /** Null where snapshots are off. */
    private final SnapshotWriter snapshots;
    private final Thread readerThread;
    /** Times lookup batches' linger and the bootstrap deadline; shared by the lookup subtasks of this dimension. */
    public final ScheduledExecutorService lingerTimer;
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
    /** Per partition, the offset the topic is applied up to (every record before it); null before the start. */
    private volatile Map<Integer, Long> appliedOffsets;
    private volatile String topicId;
    /** Keys the start loaded from a snapshot; -1 where it read the whole topic. */
    private volatile long restoredKeys = -1;
    private volatile String wholeTopicReason;
    private final long openedNanos = System.nanoTime();

    /**
     * Lookups of one subtask, gathered; each future completes with 0 or 1 row: the row of the key looked up
     * ({@link LookupKind#EXACT}), or of the largest key {@code <=} it ({@link LookupKind#FLOOR}) or the smallest key
     * {@code >=} it ({@link LookupKind#CEILING}) over the whole dimension.
     */
    public static final class LookupBatch {
        final LookupKind match;
        final long[] keys;
        public final CompletableFuture<Collection<RowData>>[] futures;
        final int size;
        /** When the batch's first lookup arrived, for the latency metric. */
        final long firstNanos;
        final LookupMetrics metrics;

        /** Exact lookups. */
        public LookupBatch(long[] keys, CompletableFuture<Collection<RowData>>[] futures, int size, long firstNanos,
                    LookupMetrics metrics) {
            this(LookupKind.EXACT, keys, futures, size, firstNanos, metrics);
        }

        public LookupBatch(LookupKind match, long[] keys, CompletableFuture<Collection<RowData>>[] futures, int size,
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
    public interface LookupMetrics {
        void batchAnswered(int size, long latencyNanos);
    }

    SharedDimension(DimensionSpec spec) {
        this(spec, FlixIndex::open, null);
    }

    SharedDimension(DimensionSpec spec, Function<FlixConfig, FlixIndex> openIndex,
                    SnapshotWriter.Hooks snapshotHooks) {
        this(spec, TaskManagerGpus.of(List.of(), spec.indexSettings().backend()), openIndex, snapshotHooks);
    }

    /**
     * @param taskManagerGpus the task manager's GPUs (CUDA ordinals, {@link TaskManagerGpus}): those Flink assigned
     *                  to it, or every one it sees
     * @param openIndex opens the table's index from its settings (tests wrap the index here)
     * @param snapshotHooks the snapshot writer's thread and file streams; null but in tests
     */
    SharedDimension(DimensionSpec spec, List<Integer> taskManagerGpus, Function<FlixConfig, FlixIndex> openIndex,
                    SnapshotWriter.Hooks snapshotHooks) {
        this.spec = spec;
        final SnapshotDirectory snapshotDirectory;
        if (spec.snapshots() == null) {
            snapshotDirectory = null;
        } else {
            try {
                snapshotDirectory = new SnapshotDirectory(spec.snapshots().path(),
                        snapshotHooks == null ? SnapshotDirectory.Streams.NONE : snapshotHooks.streams());
            } catch (IOException | RuntimeException e) {
                throw new IllegalStateException("the 'flix' table (" + describe() + ") cannot use its 'snapshot.path' '"
                        + spec.snapshots().path() + "': " + e.getMessage(), e);
            }
        }
        final FlixIndex index;
        try {
            index = DimensionIndex.open(spec.indexSettings(), openIndex, taskManagerGpus);
        } catch (RuntimeException e) {
            throw new IllegalStateException("the 'flix' table (" + describe() + ") cannot open its index: "
                    + e.getMessage(), e);
        }
        this.rows = new LocalDimension<>("of the 'flix' table (" + describe() + ")", index,
                spec.indexSettings().backend(), PayloadStore.of(new RowDataSerializer(spec.rowType()), batchCapacity()), batchCapacity());
        final String name = spec.changelog().equals(DimensionSpec.KAFKA) ? spec.topic() : spec.filePath();
        this.reader = spec.changelog().equals(DimensionSpec.KAFKA)
                ? new KafkaChangelogReader(spec, this, spec.decodeThreads()) : new FileChangelogReader(spec, this);
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
        this.snapshots = snapshotDirectory == null ? null
                : new SnapshotWriter(this, spec, snapshotDirectory, snapshotHooks);
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
    public void awaitBootstrap() throws Exception {
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
    @Override
    public Duration bootstrapTimeLeft() {
        return Duration.ofNanos(Math.max(0, bootstrapDeadlineNanos - System.nanoTime()));
    }

    /** The error of a bootstrap that ran out of time: the changelog, what the reader waits for, and why. */
    @Override
    public BootstrapTimeoutException bootstrapTimeout() {
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
     * subtasks' batches on the GPU), then the batch's metrics, then its futures; see {@link #answer}.
     */
    public void submit(LookupBatch lookups) {
        final LookupMetrics metrics = lookups.metrics;
        answer(Arrays.asList(lookups.futures).subList(0, lookups.size),
                (index, rowReader) -> answer(lookups, index, rowReader),
                metrics == null ? null
                        : () -> metrics.batchAnswered(lookups.size, System.nanoTime() - lookups.firstNanos));
    }

    /**
     * Answers a batch of probes on this thread, for every shape of lookup: {@code read} runs under the dimension's
     * shared lock with the index's lookups (gathered with other threads' on the GPU) and a reader of the stored rows,
     * and gives each probe's rows, or the reason one probe's rows cannot be read (that probe alone fails with it);
     * then {@code answered} runs (the batch's metrics; may be null), then the futures complete. Where the dimension
     * has failed, or fails during the read or in {@code answered} (what they throw fails the dimension), every
     * future of the batch completes exceptionally with the cause; once the dimension is closed, with an error saying
     * so.
     */
    public void answer(List<CompletableFuture<Collection<RowData>>> futures, RowsRead<Object[]> read, Runnable answered) {
        final Throwable failed = failure;
        if (failed != null || closing) {
            failAll(futures, failed != null ? failed : closed());
            return;
        }
        final Object[] answers;
        try {
            answers = rows.read((index, payloads) -> {
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
            if (answered != null) {
                answered.run();
            }
        } catch (Throwable t) {
            failAll(futures, reasonFor(t));
            return;
        }
        for (int i = 0; i < answers.length; i++) {
            if (answers[i] instanceof Throwable unreadable) {
                futures.get(i).completeExceptionally(unreadable);
            } else {
                @SuppressWarnings("unchecked")
                final Collection<RowData> found = (Collection<RowData>) answers[i];
                futures.get(i).complete(found);
            }
        }
    }

    private static void failAll(List<CompletableFuture<Collection<RowData>>> futures, Throwable reason) {
        for (CompletableFuture<Collection<RowData>> future : futures) {
            future.completeExceptionally(reason);
        }
    }

    /** A read of the index and the stored rows; see {@link #answer}. */
    @FunctionalInterface
    public interface RowsRead<T> {
        T run(IndexLookups index, PayloadStore.Reader<RowData> rows) throws Exception;
    }

    /** Under the shared lock: each lookup's row (a collection of 0 or 1), or why its stored row cannot be read. */
    private static Object[] answer(LookupBatch l, IndexLookups index, PayloadStore.Reader<RowData> rowReader) {
        final long[] values = new long[l.size];
        // the key each row is stored under: the one looked up, or the floor's or ceiling's
        final long[] found = l.match == LookupKind.EXACT ? l.keys : new long[l.size];
        switch (l.match) {
            case FLOOR -> index.floor(l.keys, l.size, found, values);
            case CEILING -> index.ceiling(l.keys, l.size, found, values);
            default -> index.get(l.keys, l.size, values);
        }
        final Object[] answers = new Object[l.size];
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
        return answers;
    }

    /** What the lookups of a batch whose answering threw fail with; fails the dimension where it had not failed. */
    private Throwable reasonFor(Throwable thrown) {
        if (thrown instanceof LocalDimension.FailedException applyFailed) {
            return applyFailed.getCause(); // recorded by apply(SerializedUpdates) too
        }
        if (thrown instanceof LocalDimension.ClosedException) {
            return closed();
        }
        fail(thrown);
        return thrown;
    }

    // ---- called by the changelog reader ----

    /**
     * Applies changelog records, on a thread of the reader's, in their order, as one batch under the dimension's exclusive
     * lock: a lookup sees all of them or none. Dropped once the dimension has failed. Where applying fails, the
     * dimension fails with the cause, and this call throws it (which stops the reader).
     */
    @Override
    public void apply(SerializedUpdates updates) throws IOException {
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
    @Override
    public void bootstrapApplied() {
        if (failure != null || closing) {
            return;
        }
        bootstrapMillis = (System.nanoTime() - openedNanos) / 1_000_000;
        LOG.info("FliX dimension {} bootstrapped: {} keys, {} of them from a snapshot, and {} changelog records in "
                        + "{} ms ({} backend)", describe(), rows.size(), Math.max(0, restoredKeys),
                rows.appliedUpdates(), bootstrapMillis, rows.backendName());
        if (snapshots != null) {
            snapshots.bootstrapped(restoredKeys < 0); // before the subtasks go on: they find the schedule set
        }
        bootstrapped.complete(null);
    }

    // ---- snapshots: called by the Kafka reader and the snapshot writer ----

    /** The snapshot writer; null where snapshots are off. */
    @Override
    public SnapshotWriter snapshots() {
        return snapshots;
    }

    /**
     * Loads a snapshot's rows in place of the contents, on the reader's thread before it reads the topic; throws,
     * having changed nothing, where the data does not match its manifest.
     */
    @Override
    public void loadSnapshot(SnapshotDirectory directory, SnapshotManifest manifest) throws Exception {
        final long start = System.nanoTime();
        final KeyGroupSnapshotCodec.Reader<RowData> payloads = new KeyGroupSnapshotCodec.Reader<>(
                new RowDataSerializer(spec.rowType()), SharedDimension.class.getClassLoader(), batchCapacity());
        directory.read(manifest, in -> {
            final BlockDataInput view = new BlockDataInput(in);
            for (int page = 0; page < manifest.pages(); page++) {
                payloads.readKeyGroup(page, view);
            }
            if (!view.atEnd()) { // the view read ahead of the directory's own check
                throw new SnapshotDirectory.CorruptSnapshotException("its data holds bytes after its last page");
            }
        });
        if (payloads.count() != manifest.keys()) {
            throw new SnapshotDirectory.CorruptSnapshotException("its data holds " + payloads.count() + " keys, the "
                    + "manifest says " + manifest.keys());
        }
        final long read = System.nanoTime();
        try {
            // the pages hold their keys in ascending order, each page after the one before
            rows.load(payloads.payloads(), payloads.keys(), payloads.values(), payloads.count(), true);
        } catch (RuntimeException e) {
            // empty and whole again, for an older snapshot or the whole topic
            rows.load(PayloadStore.of(new RowDataSerializer(spec.rowType()), batchCapacity()), new long[0],
                    new long[0], 0);
            throw e;
        }
        restoredKeys = payloads.count();
        snapshots.loaded(manifest);
        LOG.info("FliX dimension {}: loaded snapshot {} from {}: {} keys, {} bytes read and checked in {} ms, the "
                        + "index built in {} ms", describe(), manifest.sequence(), directory, restoredKeys,
                manifest.dataBytes(), (read - start) / 1_000_000, (System.nanoTime() - read) / 1_000_000);
    }

    /**
     * Where the reader starts: the topic's id and, per partition, the offset it reads from (the loaded snapshot's, or
     * the partition's beginning), and why no snapshot was loaded (null where one was).
     */
    @Override
    public void readingFrom(String id, Map<Integer, Long> offsets, String wholeTopicReason) {
        topicId = id;
        appliedOffsets = Map.copyOf(offsets);
        this.wholeTopicReason = wholeTopicReason;
    }

    /** Why the start read the whole topic though snapshots are on; null where it loaded one or they are off. */
    public String wholeTopicReason() {
        return wholeTopicReason;
    }

    /**
     * The reader has applied every record before these offsets; called after the batch that took it there was
     * applied, so that a snapshot that takes the offsets before its first page never claims a record it lacks.
     */
    @Override
    public void appliedThrough(Map<Integer, Long> offsets) {
        appliedOffsets = Map.copyOf(offsets);
    }

    @Override
    public Map<Integer, Long> appliedOffsets() {
        return appliedOffsets;
    }

    @Override
    public String topicId() {
        return topicId;
    }

    /** Writes the rows page by page for a snapshot (see {@link LocalDimension#writeSnapshotPages}). */
    @Override
    public LocalDimension.PagedSnapshot writePages(OutputStream out, int pageKeys) throws IOException {
        return rows.writeSnapshotPages(out, pageKeys);
    }

    /** Keys the start loaded from a snapshot; -1 where it read the whole topic. */
    public long restoredKeys() {
        return restoredKeys;
    }

    /**
     * Records the dimension's failure (the first one wins) and logs it: the bootstrap and every lookup not answered
     * yet fail with the cause, and the reader stops. Called where applying or answering failed, by the reader and by
     * the bootstrap deadline.
     */
    @Override
    public void fail(Throwable cause) {
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
    public Throwable failure() {
        return failure;
    }

    @Override
    public boolean isClosing() {
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
            if (snapshots != null) {
                snapshots.close();
            }
            readerThread.join(30_000);
        } finally {
            rows.close();
        }
    }

    // ---- for metrics and tests ----

    private int batchCapacity() {
        return Math.min(spec.changelogBatchSize(), 1 << 16);
    }

    /** Records the changelog reader has read (Kafka: from the position it started at; file: lines). */
    public long recordsRead() {
        return reader.recordsRead();
    }

    @Override
    public String describe() {
        return spec.describeChangelog();
    }

    public long indexSize() {
        return rows.size();
    }

    public long rowBytes() {
        return rows.payloadBytes();
    }

    /** The CUDA devices of the table's index: one per replica on a task manager with several GPUs, -1 on the CPU. */
    public String devices() {
        return DimensionIndex.describe(rows.devices());
    }

    public String backendName() {
        return rows.backendName();
    }

    /** Changelog records applied to the index so far. */
    public long appliedRecords() {
        return rows.appliedUpdates();
    }

    /** Update batches applied so far. */
    public long appliedBatches() {
        return rows.appliedBatches();
    }

    /** Milliseconds from opening to the end of the bootstrap; -1 before. */
    public long bootstrapMillis() {
        return bootstrapMillis;
    }

    /** Polls of the bootstrap the Kafka reader decoded on more than one thread (0 for a file). */
    public long slicedPolls() {
        return reader instanceof KafkaChangelogReader kafka ? kafka.slicedPolls() : 0;
    }

    /** Records the reader skipped (no usable key, or a value the format decoded to nothing). */
    public long skippedRecords() {
        return reader.skipped();
    }
}
