package io.flix.flink.table;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Gathers one subtask's probes into batches for its shared dimension, for the lookup join
 * ({@link FlixAsyncLookupFunction}) and the range functions ({@link FlixRangeFunction}): a batch is sent when it holds
 * {@code batchSize} probes (on the thread that adds the last one) or when its first probe has waited
 * {@code lingerNanos} (on the timer's thread). A batch is sent outside the batcher's lock, so a slow index call
 * holds up only the thread that sends it; two batches may therefore be answered at the same time, and a later one
 * first.
 *
 * @param <P> a probe: what the sender needs to answer it and to complete its future
 */
final class ProbeBatcher<P> {

    /** Answers a batch; called on the thread that filled it or on the timer's. */
    @FunctionalInterface
    interface Sender<P> {
        /** @param firstNanos when the batch's first probe arrived ({@link System#nanoTime()}) */
        void send(List<P> batch, long firstNanos);
    }

    private final int batchSize;
    private final long lingerNanos;
    private final ScheduledExecutorService timer;
    private final Sender<P> sender;

    private final Object lock = new Object();
    // guarded by lock
    private List<P> gathered = new ArrayList<>();
    private long firstNanos;
    /** Counts the batches taken, so that the linger of a batch already sent does nothing. */
    private long generation;
    private boolean closed;

    ProbeBatcher(int batchSize, long lingerNanos, ScheduledExecutorService timer, Sender<P> sender) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batchSize must be at least 1, was " + batchSize);
        }
        this.batchSize = batchSize;
        this.lingerNanos = lingerNanos;
        this.timer = timer;
        this.sender = sender;
    }

    /**
     * Adds a probe to the batch being gathered, and sends the batch where it is full.
     *
     * @return false once {@link #close} has run: the probe was not taken
     */
    boolean add(P probe) {
        final List<P> full;
        final long first;
        synchronized (lock) {
            if (closed) {
                return false;
            }
            if (gathered.isEmpty()) {
                firstNanos = System.nanoTime();
                final long batchGeneration = generation;
                timer.schedule(() -> lingerExpired(batchGeneration), lingerNanos, TimeUnit.NANOSECONDS);
            }
            gathered.add(probe);
            if (gathered.size() < batchSize) {
                return true;
            }
            first = firstNanos;
            full = takeLocked();
        }
        sender.send(full, first);
        return true;
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
        }
        sender.send(batch, first);
    }

    private List<P> takeLocked() {
        final List<P> batch = gathered;
        gathered = new ArrayList<>(Math.min(batchSize, 1024));
        generation++;
        return batch;
    }

    /** Refuses later probes and drops a pending linger; returns the probes gathered and not sent. */
    List<P> close() {
        synchronized (lock) {
            closed = true;
            return takeLocked();
        }
    }
}
