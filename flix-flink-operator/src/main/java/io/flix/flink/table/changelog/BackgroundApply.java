package io.flix.flink.table.changelog;

import io.flix.flink.dimension.SerializedUpdates;

import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Applies a reader's batches on a thread of its own, one at a time and in the order handed over, while the reader
 * reads and decodes the next: a bootstrap then takes about the longer of reading and applying, not their sum. At most
 * one batch is being applied; handing over the next waits for it (and throws where it failed). Used by one reader
 * thread.
 */
final class BackgroundApply implements AutoCloseable {

    private final ChangelogTarget dimension;
    private final ExecutorService thread;
    /** The batch being applied, or null. */
    private Future<?> applying;
    /** The holder the reader fills next; the one handed over becomes the spare once it is applied. */
    private SerializedUpdates spare = new SerializedUpdates(256);

    BackgroundApply(ChangelogTarget dimension, String threadName) {
        this.dimension = dimension;
        this.thread = Executors.newSingleThreadExecutor(runnable -> {
            final Thread t = new Thread(runnable, threadName);
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Hands {@code batch} over: it is applied once the batch before it is, and then, where {@code through} is not
     * empty, the dimension is told the offsets it reaches ({@link ChangelogTarget#appliedThrough}). Returns an empty
     * holder for the reader to fill meanwhile; {@code batch} is the reader's no more.
     *
     * @throws Exception what applying the batch before failed with
     */
    SerializedUpdates hand(SerializedUpdates batch, Map<Integer, Long> through) throws Exception {
        await();
        final Map<Integer, Long> offsets = through.isEmpty() ? null : Map.copyOf(through);
        final SerializedUpdates next = spare;
        spare = batch;
        applying = thread.submit(() -> {
            try {
                dimension.apply(batch);
            } finally {
                batch.clear();
            }
            if (offsets != null) {
                dimension.appliedThrough(offsets);
            }
            return null;
        });
        return next;
    }

    /** Waits until every batch handed over is applied; throws what applying one failed with. */
    void await() throws Exception {
        final Future<?> batch = applying;
        if (batch == null) {
            return;
        }
        applying = null;
        try {
            batch.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            if (e.getCause() instanceof Error error) {
                throw error;
            }
            throw e;
        }
    }

    /**
     * Lets the batch being applied finish (its failure, if any, went to the dimension, which applying fails) and ends
     * the thread: the dimension is never closed under an apply that its reader started.
     */
    @Override
    public void close() {
        final Future<?> batch = applying;
        applying = null;
        boolean interrupted = false;
        while (batch != null) {
            try {
                batch.get();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (ExecutionException e) {
                break;
            }
        }
        thread.shutdown();
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
