package io.flix.flink.batching;

import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;

import java.util.function.IntSupplier;

/**
 * The processing-time flush of an operator's micro-batch: a batch is due one interval after its first record. One
 * timer at a time: a timer that fires before the current batch is due (it was set for an earlier batch, flushed
 * since by its size, a watermark or a barrier) moves to when the current one is. Fires on the task's thread, as
 * Flink's timers do.
 */
public final class BatchDeadline {

    /** Flushes the batch. */
    @FunctionalInterface
    public interface Flush {
        void run() throws Exception;
    }

    private final ProcessingTimeService time;
    private final long intervalMillis;
    private final IntSupplier buffered;
    private final Flush flush;
    private boolean timerPending;
    private long dueMillis;

    /**
     * @param time           the operator's processing-time service
     * @param intervalMillis how long a batch's first record waits at most; 0 for no timer
     * @param buffered       records buffered now
     * @param flush          flushes them
     */
    public BatchDeadline(ProcessingTimeService time, long intervalMillis, IntSupplier buffered, Flush flush) {
        this.time = time;
        this.intervalMillis = intervalMillis;
        this.buffered = buffered;
        this.flush = flush;
    }

    /** A record was buffered, the batch now holds {@code records}: its first one starts the interval. */
    public void recordBuffered(int records) {
        if (records == 1 && intervalMillis > 0) {
            dueMillis = time.getCurrentProcessingTime() + intervalMillis;
            if (!timerPending) {
                register(dueMillis);
            }
        }
    }

    private void register(long due) {
        timerPending = true;
        time.registerTimer(due, timestamp -> {
            timerPending = false;
            if (buffered.getAsInt() == 0) {
                return;
            }
            if (timestamp >= dueMillis) {
                flush.run();
            } else {
                register(dueMillis);
            }
        });
    }
}
