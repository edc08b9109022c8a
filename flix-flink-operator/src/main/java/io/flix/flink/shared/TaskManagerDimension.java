package io.flix.flink.shared;

import io.flix.flink.dimension.LocalDimension;
import io.flix.flink.payload.PayloadStore;
import io.flix.index.Backend;
import io.flix.index.FlixIndex;

import org.apache.flink.api.common.typeutils.TypeSerializer;

import java.io.IOException;
import java.io.OutputStream;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The whole dimension of one shared-mode enrichment, held once on a task manager: a {@link LocalDimension} (the FliX
 * index from key to payload value and the {@link PayloadStore} behind it, read and updated under its lock), and the
 * roles of the operator subtasks that share it.
 *
 * <h2>Who applies the updates</h2>
 * Every writer subtask of the enrichment receives every update (the update stream is broadcast), but one of those
 * on a task manager, the <em>applier</em>, applies them; the others drop theirs. The applier is the first writer to
 * register, or a writer of a later execution attempt (after a failover, the new attempt takes over from the old one
 * still closing). Each applier starts the dimension afresh: from the checkpoint it restores, or empty.
 *
 * <h2>Concurrency</h2>
 * As {@link LocalDimension}'s: the applier's batches of updates are applied under the exclusive lock, so a lookup
 * sees every batch wholly or not at all; lookups run on the subtasks' threads under the shared lock, in parallel on
 * the CPU backend and gathered into fewer, larger index calls on the GPU backend. Where applying a batch fails, the
 * dimension refuses lookups with that cause until the next applier starts it afresh.
 *
 * @param <P> payloads
 */
public final class TaskManagerDimension<P> implements AutoCloseable {

    private final LocalDimension<P> dimension;
    /** Completes when the first applier has started the dimension: lookups wait for it. */
    private final CompletableFuture<Void> started = new CompletableFuture<>();

    // writer roles, guarded by 'this'
    private final Map<Integer, Integer> writerAttempts = new HashMap<>();
    private int applierSubtask = -1;
    private int applierAttempt = -1;

    // read by gauges from other threads: what the applier holds, and what it is applying now
    private volatile int heldUpdates;
    private volatile long oldestHeldNanos;
    private volatile int applyingUpdates;
    private volatile long oldestApplyingNanos;

    /** @param asked the backend the index was opened with (its gauge says where AUTO fell to the CPU) */
    TaskManagerDimension(String description, FlixIndex index, Backend asked, TypeSerializer<P> payloadSerializer,
                         int batchCapacity) {
        this.dimension = new LocalDimension<>(description, index, asked,
                PayloadStore.of(payloadSerializer, batchCapacity), batchCapacity);
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

    /**
     * Starts the dimension afresh with restored contents (values from {@code restored}); where {@code keysAscending},
     * the keys are in ascending order and the index skips its sort.
     */
    void start(PayloadStore<P> restored, long[] keys, long[] values, int n, boolean keysAscending) {
        dimension.load(restored, keys, values, n, keysAscending);
        started.complete(null);
    }

    /** Starts the dimension afresh, empty. */
    void startEmpty(TypeSerializer<P> payloadSerializer, int batchCapacity) {
        start(PayloadStore.of(payloadSerializer, batchCapacity), new long[0], new long[0], 0, true);
    }

    /** Applies updates (a null payload deletes its key), in order, as one batch: see {@link LocalDimension#apply}. */
    void apply(LocalDimension.Updates updates) throws IOException {
        dimension.apply(updates);
    }

    /** What the applier holds but has not started to apply, for the lag gauges. */
    void held(int updates, long oldestNanos) {
        heldUpdates = updates;
        oldestHeldNanos = oldestNanos;
    }

    /** What the applier is applying now (0 when done), for the lag gauges. */
    void applying(int updates, long oldestNanos) {
        applyingUpdates = updates;
        oldestApplyingNanos = oldestNanos;
    }

    /** Writes the whole dimension in the key-group snapshot format, as one chunk. */
    void writeSnapshot(OutputStream out) throws IOException {
        dimension.writeSnapshot(out);
    }

    // ---- lookups ----

    /** Waits until an applier has started the dimension. */
    void awaitStarted(long timeoutMillis) throws Exception {
        try {
            started.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new TimeoutException("no writer of the FliX dimension " + dimension.description() + " started it "
                    + "on this task manager within " + timeoutMillis + " ms: the dimension's writer must run on every "
                    + "task manager that runs its lookups (same parallelism and slot sharing group, as "
                    + "FlixEnrichment.shared sets them)");
        }
    }

    boolean isStarted() {
        return started.isDone();
    }

    /** Runs {@code read} on this thread under the shared lock: see {@link LocalDimension#read}. */
    <T> T read(LocalDimension.Read<P, T> read) throws Exception {
        return dimension.read(read);
    }

    // ---- gauges ----

    long size() {
        return dimension.size();
    }

    long payloadBytes() {
        return dimension.payloadBytes();
    }

    long appliedUpdates() {
        return dimension.appliedUpdates();
    }

    /** Times an applier started the dimension (its index built afresh, restored or empty); for tests. */
    int builds() {
        return dimension.loads();
    }

    /** Updates received and not applied yet: held, or being applied. */
    int pendingUpdates() {
        return heldUpdates + applyingUpdates;
    }

    /** Milliseconds the oldest update received and not applied yet has waited; 0 where there is none. */
    long lagMillis() {
        final long oldest = applyingUpdates > 0 ? oldestApplyingNanos : heldUpdates > 0 ? oldestHeldNanos : 0;
        return oldest == 0 ? 0 : Math.max(0, (System.nanoTime() - oldest) / 1_000_000);
    }

    String backendName() {
        return dimension.backendName();
    }

    /** The backend the dimension's index runs on. */
    Backend backend() {
        return dimension.backend();
    }

    /** The CUDA devices of the dimension's index, one per replica ({@link LocalDimension#devices()}). */
    java.util.List<Integer> devices() {
        return dimension.devices();
    }

    long indexBytes() {
        return dimension.indexBytes();
    }

    String description() {
        return dimension.description();
    }

    @Override
    public void close() {
        dimension.close();
    }
}
