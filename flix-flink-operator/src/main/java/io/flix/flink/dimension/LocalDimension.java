package io.flix.flink.dimension;

import io.flix.flink.payload.PayloadStore;
import io.flix.flink.state.KeyGroupSnapshotCodec;
import io.flix.flink.taskmanager.BackendReport;
import io.flix.index.Backend;
import io.flix.index.FlixIndex;
import io.flix.index.MirroredIndex;
import io.flix.index.SortedPairs;
import io.flix.index.batch.BatchResults;
import io.flix.index.batch.MicroBatchEngine;
import io.flix.index.batch.OperationBatch;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A whole dimension held once in a JVM and read by many threads: a FliX index from key to payload value, the
 * {@link PayloadStore} behind it, and the lock that keeps the two one. The DataStream shared mode
 * ({@code io.flix.flink.shared.TaskManagerDimension}) and the SQL connector ({@code io.flix.flink.table}) both hold
 * their dimension in one of these; each has its own registry and its own way of feeding updates.
 *
 * <h2>Concurrency</h2>
 * A read-write lock. {@link #apply} takes a batch of updates (index and payload store together) under the exclusive
 * lock, so every read sees each batch wholly or not at all; batches are applied one at a time, in the order of the
 * calls, and the updates of a batch in their order. {@link #read} runs on the caller's thread under the shared lock:
 * the reads of several threads run in parallel on the CPU backend; on the GPU backend, which runs one index call at
 * a time, they are gathered into fewer, larger calls ({@link GatheredLookups}), with no thread of their own; where
 * the index is a {@link MirroredIndex} of one replica per GPU ({@link DimensionIndex}), each reading thread is given
 * one replica and the reads are gathered per replica ({@link ReplicaLookups}), the devices answering at once. A read
 * sees every batch whose {@code apply} returned before the read took the lock, and none that started after; payload
 * rows are read under the same lock, so none is freed or reused while read.
 *
 * <h2>Failures</h2>
 * An {@code apply} that throws (the index, the payload store, an {@link OutOfMemoryError}) may leave the index and
 * the payload store apart, or a batch half applied. The dimension then refuses every later read, apply and snapshot
 * with a {@link FailedException} whose cause is what {@code apply} threw, until {@link #load} replaces its contents:
 * no read ever sees part of a batch. After {@link #close}, every call throws a {@link ClosedException}.
 *
 * @param <P> payloads
 */
public final class LocalDimension<P> implements AutoCloseable {

    private final String description;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final FlixIndex index;
    /** How reads reach the index: straight where they run in parallel, else gathered across the callers. */
    private final IndexLookups lookups;
    private final MicroBatchEngine engine;
    private final OperationBatch batch;
    private final ParallelBatchFill parallelFill;

    // guarded by the lock
    /** Replaced by {@link #load} (a restore may resolve another serializer). */
    private PayloadStore<P> payloads;
    /** What the last failed apply threw, until the next load; null while the dimension is whole. */
    private Throwable failure;
    private boolean closed;

    // read by gauges from other threads
    private volatile long size;
    private volatile long payloadBytes;
    private volatile long appliedUpdates;
    private volatile long appliedBatches;
    private volatile int loads;
    private volatile Throwable failed;
    /** Bytes the index holds (device memory on the GPU), refreshed at most once a second: stats walk the chains. */
    private volatile long indexBytes;
    private volatile long indexBytesNanos;
    /** An apply or load changed the index since {@link #indexBytes} was read from it. */
    private volatile boolean indexBytesStale;
    /** Known at open, so that gauges read after close still answer. */
    private final String backendName;
    private final List<Integer> devices;

    /**
     * @param description   names the dimension in messages
     * @param index         the index, empty; closed with this dimension
     * @param payloads      the payload store, empty
     * @param batchCapacity updates a batch usually holds (the engine's batch grows beyond it)
     */
    public LocalDimension(String description, FlixIndex index, PayloadStore<P> payloads, int batchCapacity) {
        this(description, index, index.backend(), payloads, batchCapacity);
    }

    /**
     * As {@link #LocalDimension(String, FlixIndex, PayloadStore, int)}, for an index opened with backend {@code asked}:
     * where AUTO fell to the CPU although the machine shows a GPU, the backend's name says why ({@link BackendReport}).
     */
    public LocalDimension(String description, FlixIndex index, Backend asked, PayloadStore<P> payloads,
                          int batchCapacity) {
        this.description = description;
        this.index = index;
        this.lookups = lookupsOf(index);
        this.engine = new MicroBatchEngine(index);
        this.batch = new OperationBatch(Math.max(16, batchCapacity));
        this.parallelFill = new ParallelBatchFill("FliX encode updates of " + description,
                Runtime.getRuntime().availableProcessors());
        this.payloads = payloads;
        this.payloadBytes = payloads.heapBytes();
        this.backendName = BackendReport.describe(index, asked, "The dimension " + description);
        this.devices = index instanceof MirroredIndex mirror ? mirror.devices() : List.of(index.device());
    }

    /**
     * Straight to the index where its lookups run in parallel (the CPU backend, where a mirror spreads the threads
     * itself); gathered across the threads where it runs one call at a time (the GPU), per replica for a mirror.
     */
    private static IndexLookups lookupsOf(FlixIndex index) {
        if (index.backend() != Backend.GPU) {
            return IndexLookups.direct(index);
        }
        if (index instanceof MirroredIndex mirror && mirror.replicas().size() > 1) {
            return new ReplicaLookups(mirror);
        }
        return new GatheredLookups(index);
    }

    /** Serialized updates in order: per update its key and either a delete or the payload serializer's bytes. */
    public interface Updates {

        int size();

        long key(int i);

        boolean isDelete(int i);

        /** The array holding an upsert's payload bytes, from {@link #offset} for {@link #length} bytes. */
        byte[] bytes(int i);

        int offset(int i);

        int length(int i);
    }

    /**
     * Replaces the contents: {@code restored} holds the payloads, the pairs (keys in any order) map each key to its
     * stored value. Clears a failure.
     */
    public void load(PayloadStore<P> restored, long[] keys, long[] values, int n) {
        load(restored, keys, values, n, false);
    }

    /**
     * As {@link #load(PayloadStore, long[], long[], int)}; where {@code keysSorted}, the keys are ascending (as
     * {@link #writeSnapshotPages} writes them) and the index skips its sort (a broken promise fails the load with
     * an {@link IllegalArgumentException}).
     */
    public void load(PayloadStore<P> restored, long[] keys, long[] values, int n, boolean keysSorted) {
        lock.writeLock().lock();
        try {
            checkOpen();
            failure = null;
            failed = null;
            try {
                batch.clear();
                payloads = restored;
                index.build(keys, values, n, keysSorted);
                loads++;
                refresh();
            } catch (Throwable t) {
                recordFailure(t);
                throw t;
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Applies the updates, in order, under the exclusive lock: reads see all of them or none. (A payload the store
     * must keep alone goes into an engine batch of its own, see {@link PayloadStore#isolated}, inside the same hold
     * of the lock.) A large batch of payloads kept inline is put into the engine's batch on several threads, each
     * reading its own range of {@code updates} ({@link ParallelBatchFill}).
     *
     * @throws IOException where a payload's bytes do not fit the store; the dimension has failed, see the class
     *     comment
     */
    public void apply(Updates updates) throws IOException {
        final int n = updates.size();
        if (n == 0) {
            return;
        }
        lock.writeLock().lock();
        try {
            checkUsable();
            batch.clear();
            if (!parallelFill.fill(updates, payloads, batch)) {
                putInOrder(updates, n);
            }
            runBatch();
            appliedUpdates += n;
            appliedBatches++;
            refresh();
        } catch (FailedException | ClosedException e) {
            throw e;
        } catch (Throwable t) {
            recordFailure(t);
            throw t;
        } finally {
            lock.writeLock().unlock();
        }
    }

    /** Puts the updates into the batch one by one, an isolated payload in a batch of its own. */
    private void putInOrder(Updates updates, int n) throws IOException {
        for (int i = 0; i < n; i++) {
            final long key = updates.key(i);
            if (updates.isDelete(i)) {
                payloads.delete(batch, key);
                continue;
            }
            final long encoded = payloads.encodeSerialized(key, updates.bytes(i), updates.offset(i),
                    updates.length(i));
            if (payloads.isolated(encoded)) {
                runBatch();
                payloads.upsert(batch, key, encoded);
                runBatch();
            } else {
                payloads.upsert(batch, key, encoded);
            }
        }
    }

    private void runBatch() {
        if (batch.size() == 0) {
            return;
        }
        final BatchResults results = engine.execute(batch);
        payloads.batchApplied(results);
        batch.clear();
    }

    private void recordFailure(Throwable t) {
        if (failure == null) {
            failure = t;
            failed = t;
        }
    }

    /**
     * Runs {@code read} on this thread under the shared lock, with the index's lookups and the payload store of this
     * moment. What {@code read} throws comes out as it is and does not fail the dimension.
     *
     * @throws FailedException where an apply failed since the last load
     * @throws ClosedException after {@link #close}
     */
    public <T> T read(Read<P, T> read) throws Exception {
        lock.readLock().lock();
        try {
            checkUsable();
            return read.run(lookups, payloads);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** A read of the index and its payloads; see {@link #read}. */
    @FunctionalInterface
    public interface Read<P, T> {
        T run(IndexLookups lookups, PayloadStore<P> payloads) throws Exception;
    }

    /** Writes the whole dimension in the key-group snapshot format, as one chunk, under the shared lock. */
    public void writeSnapshot(OutputStream out) throws IOException {
        lock.readLock().lock();
        try {
            checkUsable();
            final SortedPairs pairs = index.export();
            new KeyGroupSnapshotCodec.Writer<>(payloads).writeKeyGroup(out, pairs.keys(), pairs.values(), 0,
                    pairs.size());
        } finally {
            lock.readLock().unlock();
        }
    }

    /** What {@link #writeSnapshotPages} wrote, and how long it held the shared lock. */
    public record PagedSnapshot(long keys, int pages, long maxLockNanos, long totalLockNanos) {
    }

    /**
     * Writes the whole dimension as {@link KeyGroupSnapshotCodec} chunks of at most {@code pageKeys} keys each, in
     * key order, taking the shared lock for one page at a time: while it exports the page's pairs and copies their
     * payloads into a buffer, never while it writes to {@code out} (a remote file system may be slow). So an apply
     * waits for one page at most, and reads run beside it. Applies between pages make the pages come from
     * different states of the dimension: each key is written once, as the state of its page held it (a key deleted
     * before its page was taken is absent). Replaying, over what was written, every update applied since before the
     * first page gives the dimension as it stands after them.
     *
     * @throws FailedException where an apply failed since the last load
     * @throws ClosedException once {@link #close} ran (between two pages, say)
     */
    public PagedSnapshot writeSnapshotPages(OutputStream out, int pageKeys) throws IOException {
        if (pageKeys < 1) {
            throw new IllegalArgumentException("pageKeys must be positive, was " + pageKeys);
        }
        final long[] keys = new long[pageKeys];
        final long[] values = new long[pageKeys];
        final ByteArrayOutputStream page = new ByteArrayOutputStream(1 << 16);
        KeyGroupSnapshotCodec.Writer<P> writer = null;
        PayloadStore<P> writerPayloads = null;
        long written = 0;
        int pages = 0;
        long maxLockNanos = 0;
        long totalLockNanos = 0;
        while (true) {
            final int n;
            lock.readLock().lock();
            final long locked = System.nanoTime();
            try {
                checkUsable();
                n = pages == 0 ? index.exportFrom(Long.MIN_VALUE, keys, values)
                        : index.exportAfter(keys[pageKeys - 1], keys, values);
                if (n > 0) {
                    if (writerPayloads != payloads) { // a load replaced the store: its serializer may differ
                        writer = new KeyGroupSnapshotCodec.Writer<>(payloads);
                        writerPayloads = payloads;
                    }
                    page.reset();
                    writer.writeKeyGroup(page, keys, values, 0, n);
                }
            } finally {
                final long held = System.nanoTime() - locked;
                lock.readLock().unlock();
                maxLockNanos = Math.max(maxLockNanos, held);
                totalLockNanos += held;
            }
            if (n == 0) {
                break;
            }
            page.writeTo(out);
            written += n;
            pages++;
            if (n < pageKeys) {
                break;
            }
        }
        return new PagedSnapshot(written, pages, maxLockNanos, totalLockNanos);
    }

    /** Holding the lock. */
    private void checkUsable() {
        checkOpen();
        if (failure != null) {
            throw new FailedException(description, failure);
        }
    }

    /** Holding the lock. */
    private void checkOpen() {
        if (closed) {
            throw new ClosedException(description);
        }
    }

    private void refresh() {
        size = index.size();
        payloadBytes = payloads.heapBytes();
        final long now = System.nanoTime();
        if (indexBytes == 0 || now - indexBytesNanos >= 1_000_000_000L) {
            indexBytes = index.stats().bytes();
            indexBytesNanos = now;
            indexBytesStale = false;
        } else {
            indexBytesStale = true;
        }
    }

    /** The dimension failed applying updates (see the class comment); the cause is what that apply threw. */
    public static final class FailedException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        FailedException(String description, Throwable cause) {
            super("the dimension " + description + " failed applying updates and answers nothing until it is "
                    + "loaded afresh: " + cause, cause);
        }
    }

    /** The dimension is closed. */
    public static final class ClosedException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        ClosedException(String description) {
            super("the dimension " + description + " is closed");
        }
    }

    // ---- gauges ----

    /** Keys in the index after the last apply or load. */
    public long size() {
        return size;
    }

    /** Heap the payload store held after the last apply or load. */
    public long payloadBytes() {
        return payloadBytes;
    }

    /** Updates applied since the dimension opened. */
    public long appliedUpdates() {
        return appliedUpdates;
    }

    /** Calls of {@link #apply} that applied updates. */
    public long appliedBatches() {
        return appliedBatches;
    }

    /** Times {@link #load} replaced the contents. */
    public int loads() {
        return loads;
    }

    /** What the last failed apply threw, until the next load; null while the dimension is whole. */
    public Throwable failure() {
        return failed;
    }

    /**
     * Bytes the index holds (device memory on the GPU). Applies refresh it at most once a second; where the last
     * apply left it stale, this read refreshes it, unless an apply holds the lock now (then it is at most a second
     * old), so that a quiet dimension reports what its last apply left.
     */
    public long indexBytes() {
        if (indexBytesStale && lock.readLock().tryLock()) {
            try {
                if (indexBytesStale && !closed) {
                    indexBytes = index.stats().bytes();
                    indexBytesNanos = System.nanoTime();
                    indexBytesStale = false;
                }
            } finally {
                lock.readLock().unlock();
            }
        }
        return indexBytes;
    }

    /**
     * The CUDA devices of the index, one per replica where it is mirrored over several GPUs; {@code [-1]} on the CPU.
     */
    public List<Integer> devices() {
        return devices;
    }

    /** The index's backend, lower case: "cpu" or "gpu", or "cpu (GPU unavailable: ...)" ({@link BackendReport}). */
    public String backendName() {
        return backendName;
    }

    /** The backend the index runs on. */
    public Backend backend() {
        return index.backend();
    }

    public String description() {
        return description;
    }

    /** Waits for the reads and the apply running, then frees the index; a second close does nothing. */
    @Override
    public void close() {
        lock.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            parallelFill.close();
            index.close();
        } finally {
            lock.writeLock().unlock();
        }
    }
}
