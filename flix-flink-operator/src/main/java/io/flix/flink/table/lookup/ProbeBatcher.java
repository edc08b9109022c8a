package io.flix.flink.table.lookup;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Gathers one subtask's probes into batches for its shared dimension, for the lookup join
 * ({@link FlixAsyncLookupFunction}) and the connector's range functions.
 *
 * <p>With a {@code dispatcher} ({@code 'lookup.batch-policy' = 'load'}, the default) batches follow the load: a
 * probe that arrives while no batch of this batcher is in flight is sent at once, alone, on the dispatcher's thread
 * (so that the subtask's thread goes on gathering); the probes that arrive while a batch is in flight gather, and go
 * together, on the dispatcher's thread, when it completes. At low load no probe waits for a timer; under load the
 * batches grow to what arrives during one index call. {@code batchSize} and {@code lingerNanos} stay upper bounds
 * while a batch is in flight: a batch that fills is sent on the thread that adds its last probe, and one whose first
 * probe has waited the linger is sent on the timer's thread, both without waiting for the one in flight.
 *
 * <p>Without a dispatcher ({@code 'lookup.batch-policy' = 'linger'}) a batch is sent when it holds
 * {@code batchSize} probes (on the thread that adds the last one) or when its first probe has waited
 * {@code lingerNanos} (on the timer's thread).
 *
 * <p>A batch is sent outside the batcher's lock, so a slow index call holds up only the thread that sends it; two
 * batches may therefore be answered at the same time, and a later one first (each probe has its own future, so the
 * order of answers is Flink's async operator's to restore).
 *
 * @param <P> a probe: what the sender needs to answer it and to complete its future
 */
public final class ProbeBatcher<P> {

    /** Answers a batch, on this thread: returns once the batch is answered. */
    @FunctionalInterface
    public interface Sender<P> {
        /** @param firstNanos when the batch's first probe arrived ({@link System#nanoTime()}) */
        void send(List<P> batch, long firstNanos);
    }

    private final int batchSize;
    private final long lingerNanos;
    private final ScheduledExecutorService timer;
    /** Sends the batches that follow the load; null for the linger policy. */
    private final Executor dispatcher;
    private final Sender<P> sender;

    private final Object lock = new Object();
    // guarded by lock
    private List<P> gathered = new ArrayList<>();
    private long firstNanos;
    /** Counts the batches taken, so that the linger of a batch already sent does nothing. */
    private long generation;
    /** Batches being sent now, on any thread. */
    private int inFlight;
    private boolean closed;

    /** The linger policy: batches on size or linger only. */
    public ProbeBatcher(int batchSize, long lingerNanos, ScheduledExecutorService timer, Sender<P> sender) {
        this(batchSize, lingerNanos, timer, null, sender);
    }

    /**
     * @param dispatcher where batches that follow the load are sent (one thread of the subtask, or a test's); null
     *                   for the linger policy
     */
    public ProbeBatcher(int batchSize, long lingerNanos, ScheduledExecutorService timer, Executor dispatcher,
                 Sender<P> sender) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batchSize must be at least 1, was " + batchSize);
        }
        this.batchSize = batchSize;
        this.lingerNanos = lingerNanos;
        this.timer = timer;
        this.dispatcher = dispatcher;
        this.sender = sender;
    }

    /**
     * Adds a probe to the batch being gathered, and sends the batch where nothing is in flight (load policy) or
     * where it is full.
     *
     * @return false once {@link #close} has run: the probe was not taken
     */
    public boolean add(P probe) {
        final List<P> full;
        final long first;
        synchronized (lock) {
            if (closed) {
                return false;
            }
            final boolean firstOfBatch = gathered.isEmpty();
            if (firstOfBatch) {
                firstNanos = System.nanoTime();
            }
            gathered.add(probe);
            if (dispatcher != null && inFlight == 0) {
                dispatchLocked();
                return true;
            }
            if (gathered.size() < batchSize) {
                if (firstOfBatch) {
                    final long batchGeneration = generation;
                    timer.schedule(() -> lingerExpired(batchGeneration), lingerNanos, TimeUnit.NANOSECONDS);
                }
                return true;
            }
            first = firstNanos;
            full = takeLocked();
            inFlight++;
        }
        send(full, first);
        return true;
    }

    /** Hands the gathered probes to the dispatcher, as the batch in flight. */
    private void dispatchLocked() {
        final long first = firstNanos;
        final List<P> batch = takeLocked();
        inFlight++;
        try {
            dispatcher.execute(() -> send(batch, first));
        } catch (RejectedExecutionException e) {
            inFlight--;
            // the dispatcher stops only as the function closes: send here rather than lose the batch
            throw new IllegalStateException("the FliX lookup dispatcher is shut down; " + batch.size()
                    + " probes cannot be sent", e);
        }
    }

    private void lingerExpired(long batchGeneration) {
        final List<P> batch;
        final long first;
        synchronized (lock) {
            if (closed || generation != batchGeneration || gathered.isEmpty()) {
                return;
            }
            first = firstNanos;
            batch = takeLocked();
            inFlight++;
        }
        send(batch, first);
    }

    /** Sends a batch on this thread; once answered, the probes gathered meanwhile go next where none is in flight. */
    private void send(List<P> batch, long first) {
        try {
            sender.send(batch, first);
        } finally {
            synchronized (lock) {
                inFlight--;
                if (dispatcher != null && inFlight == 0 && !closed && !gathered.isEmpty()) {
                    dispatchLocked();
                }
            }
        }
    }

    private List<P> takeLocked() {
        final List<P> batch = gathered;
        gathered = new ArrayList<>(Math.min(batchSize, 1024));
        generation++;
        return batch;
    }

    /** Batches being sent now; for tests. */
    public int inFlight() {
        synchronized (lock) {
            return inFlight;
        }
    }

    /** Probes gathered, not sent yet; for tests. */
    public int gathered() {
        synchronized (lock) {
            return gathered.size();
        }
    }

    /** Refuses later probes and drops a pending linger; returns the probes gathered and not sent. */
    public List<P> close() {
        synchronized (lock) {
            closed = true;
            return takeLocked();
        }
    }
}
