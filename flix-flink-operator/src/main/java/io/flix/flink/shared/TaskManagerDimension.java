package io.flix.flink.shared;

import io.flix.flink.KeyGroupSnapshotCodec;
import io.flix.flink.PayloadStore;
import io.flix.index.Backend;
import io.flix.index.FlixIndex;
import io.flix.index.SortedPairs;
import io.flix.index.batch.BatchResults;
import io.flix.index.batch.MicroBatchEngine;
import io.flix.index.batch.OperationBatch;

import org.apache.flink.api.common.typeutils.TypeSerializer;

import java.io.IOException;
import java.io.OutputStream;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The whole dimension of one shared-mode enrichment, held once on a task manager: a FliX index from key to payload
 * value, the {@link PayloadStore} behind it, and the roles of the operator subtasks that share it.
 *
 * <h2>Who applies the updates</h2>
 * Every writer subtask of the enrichment receives every update (the update stream is broadcast), but one of those
 * on a task manager, the <em>applier</em>, applies them; the others drop theirs. The applier is the first writer to
 * register, or a writer of a later execution attempt (after a failover, the new attempt takes over from the old one
 * still closing). Each applier starts the dimension afresh: from the checkpoint it restores, or empty.
 *
 * <h2>Concurrency</h2>
 * A read-write lock: the applier's batches of updates (index and payload store together) hold it exclusively, so a
 * lookup sees every batch wholly or not at all; lookups hold it shared and run in parallel on the CPU backend; on the
 * GPU backend, which runs one call at a time, the batches of the subtasks are gathered into fewer, larger calls
 * ({@link GatheredLookups}). Lookups read payloads under the same lock, so no row is freed or reused
 * while read.
 *
 * @param <P> payloads
 */
public final class TaskManagerDimension<P> implements AutoCloseable {

    private final String description;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final FlixIndex index;
    /** How lookups reach the index: straight where they run in parallel, else gathered across the subtasks. */
    private final IndexLookups lookups;
    private final MicroBatchEngine engine;
    private final OperationBatch batch;
    /** Replaced when an applier starts (a restore may resolve another serializer); guarded by the lock. */
    private PayloadStore<P> payloads;
    /** Completes when the first applier has started the dimension: lookups wait for it. */
    private final CompletableFuture<Void> started = new CompletableFuture<>();

    // writer roles, guarded by 'this'
    private final Map<Integer, Integer> writerAttempts = new HashMap<>();
    private int applierSubtask = -1;
    private int applierAttempt = -1;

    // read by gauges from other threads
    private volatile long size;
    private volatile long payloadBytes;
    private volatile long appliedUpdates;
    private volatile int pendingUpdates;
    private volatile long oldestPendingNanos;
    /** Times an applier started the dimension (its index built afresh, restored or empty); for tests. */
    private volatile int builds;

    TaskManagerDimension(String description, FlixIndex index, TypeSerializer<P> payloadSerializer, int batchCapacity) {
        this.description = description;
        this.index = index;
        this.lookups = index.backend() == Backend.GPU ? new GatheredLookups(index) : IndexLookups.direct(index);
        this.engine = new MicroBatchEngine(index);
        this.batch = new OperationBatch(Math.max(16, batchCapacity));
        this.payloads = PayloadStore.of(payloadSerializer, batchCapacity);
    }

    // ---- roles ----

    /** Registers a writer subtask; true where it becomes (or stays) the applier. */
    synchronized boolean registerWriter(int subtask, int attempt) {
        writerAttempts.merge(subtask, attempt, Math::max);
        if (applierSubtask < 0 || attempt > applierAttempt) {
            applierSubtask = subtask;
            applierAttempt = attempt;
        }
        return isApplier(subtask, attempt);
    }

    synchronized boolean isApplier(int subtask, int attempt) {
        return subtask == applierSubtask && attempt == applierAttempt;
    }

    /**
     * Whether writer subtask {@code subtask} of the applier's attempt runs on this task manager. Every writer
     * registers before the first checkpoint is taken, so at a checkpoint this says where subtask 0 runs.
     */
    synchronized boolean hostsWriter(int subtask) {
        final Integer attempt = writerAttempts.get(subtask);
        return attempt != null && attempt >= applierAttempt;
    }

    synchronized void unregisterWriter(int subtask, int attempt) {
        writerAttempts.remove(subtask, attempt);
        if (isApplier(subtask, attempt)) {
            applierSubtask = -1;
        }
    }

    // ---- the applier ----

    /** Starts the dimension afresh with restored contents (keys in any order, values from {@code restored}). */
    void start(PayloadStore<P> restored, long[] keys, long[] values, int n) {
        lock.writeLock().lock();
        try {
            payloads = restored;
            index.build(keys, values, n);
            builds++;
            refresh();
        } finally {
            lock.writeLock().unlock();
        }
        started.complete(null);
    }

    /** Starts the dimension afresh, empty. */
    void startEmpty(TypeSerializer<P> payloadSerializer, int batchCapacity) {
        start(PayloadStore.of(payloadSerializer, batchCapacity), new long[0], new long[0], 0);
    }

    /**
     * Applies updates, in order, as one or more batches under the exclusive lock (a payload the store must keep
     * alone is applied in a batch of its own, see {@link PayloadStore#isolated}).
     */
    void apply(long[] keys, byte[][] serializedPayloads, int n) throws IOException {
        lock.writeLock().lock();
        try {
            batch.clear();
            for (int i = 0; i < n; i++) {
                if (serializedPayloads[i] == null) {
                    payloads.delete(batch, keys[i]);
                    continue;
                }
                final byte[] bytes = serializedPayloads[i];
                final long encoded = payloads.encodeSerialized(keys[i], bytes, 0, bytes.length);
                if (payloads.isolated(encoded)) {
                    runBatch();
                    payloads.upsert(batch, keys[i], encoded);
                    runBatch();
                } else {
                    payloads.upsert(batch, keys[i], encoded);
                }
            }
            runBatch();
            appliedUpdates += n;
            refresh();
        } finally {
            lock.writeLock().unlock();
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

    /** What the applier holds but has not applied yet, for the lag gauges. */
    void pending(int updates, long oldestNanos) {
        pendingUpdates = updates;
        oldestPendingNanos = oldestNanos;
    }

    /** Writes the whole dimension in the key-group snapshot format, as one chunk. */
    void writeSnapshot(OutputStream out) throws IOException {
        lock.readLock().lock();
        try {
            final SortedPairs pairs = index.export();
            new KeyGroupSnapshotCodec.Writer<>(payloads).writeKeyGroup(out, pairs.keys(), pairs.values(), 0,
                    pairs.size());
        } finally {
            lock.readLock().unlock();
        }
    }

    private void refresh() {
        size = index.size();
        payloadBytes = payloads.heapBytes();
    }

    // ---- lookups ----

    /** Waits until an applier has started the dimension. */
    void awaitStarted(long timeoutMillis) throws Exception {
        try {
            started.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new TimeoutException("no writer of the FliX dimension " + description + " started it on this "
                    + "task manager within " + timeoutMillis + " ms: the dimension's writer must run on every task "
                    + "manager that runs its lookups (same parallelism and slot sharing group, as "
                    + "FlixEnrichment.shared sets them)");
        }
    }

    boolean isStarted() {
        return started.isDone();
    }

    /** Runs {@code read} under the shared lock, with the index's lookups and the payload store of this moment. */
    <T> T read(Read<P, T> read) throws Exception {
        lock.readLock().lock();
        try {
            return read.run(lookups, payloads);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** A read of the index and its payloads. */
    @FunctionalInterface
    interface Read<P, T> {
        T run(IndexLookups lookups, PayloadStore<P> payloads) throws Exception;
    }

    // ---- gauges ----

    long size() {
        return size;
    }

    long payloadBytes() {
        return payloadBytes;
    }

    long appliedUpdates() {
        return appliedUpdates;
    }

    int builds() {
        return builds;
    }

    int pendingUpdates() {
        return pendingUpdates;
    }

    /** Milliseconds the oldest update the applier holds has waited; 0 where it holds none. */
    long lagMillis() {
        final int pending = pendingUpdates;
        return pending == 0 ? 0 : Math.max(0, (System.nanoTime() - oldestPendingNanos) / 1_000_000);
    }

    String backendName() {
        return index.backend().name().toLowerCase(Locale.ROOT);
    }

    String description() {
        return description;
    }

    @Override
    public void close() {
        lock.writeLock().lock();
        try {
            index.close();
        } finally {
            lock.writeLock().unlock();
        }
    }
}
