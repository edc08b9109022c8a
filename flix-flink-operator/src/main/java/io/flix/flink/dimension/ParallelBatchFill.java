package io.flix.flink.dimension;

import io.flix.flink.payload.PayloadStore;
import io.flix.index.batch.OperationBatch;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.Future;

/**
 * Puts a large batch of serialized updates into an {@link OperationBatch} on several threads, each a range of
 * positions, where the payload store takes updates by position ({@link PayloadStore#takesUpdatesByPosition}). An
 * index that applies a batch on every core would otherwise wait for one thread to encode it update by update.
 * Declines, leaving the batch empty, where an update must go in order: a payload the store keeps alone in its batch
 * ({@link PayloadStore#isolated}) or one it refuses; the caller then puts the updates in one by one, which gives
 * the same result or the same error as always. Used by one thread at a time.
 */
final class ParallelBatchFill implements AutoCloseable {

    /** Fewest updates a thread encodes: below twice this a batch is left to the caller's one thread. */
    static final int PART_MIN = 1 << 13;

    private final String threadName;
    private final int threads;
    private ForkJoinPool pool;

    ParallelBatchFill(String threadName, int threads) {
        this.threadName = threadName;
        this.threads = threads;
    }

    /**
     * Puts {@code updates} into {@code batch} (empty) by position, on several threads.
     *
     * @return whether it did; where not, {@code batch} is empty again
     */
    boolean fill(LocalDimension.Updates updates, PayloadStore<?> payloads, OperationBatch batch) {
        final int n = updates.size();
        final int parts = Math.min(threads, n / PART_MIN);
        if (parts < 2 || !payloads.takesUpdatesByPosition()) {
            return false;
        }
        batch.extendUpdates(n);
        final List<Callable<OperationBatch.KindCounts>> tasks = new ArrayList<>(parts);
        for (int part = 0; part < parts; part++) {
            final int from = (int) ((long) n * part / parts);
            final int to = (int) ((long) n * (part + 1) / parts);
            // each part counts its kinds where it wrote them, so that no pass over the whole batch follows
            tasks.add(() -> fillRange(updates, from, to, payloads, batch) ? batch.countKinds(from, to) : null);
        }
        final List<OperationBatch.KindCounts> counts = new ArrayList<>(parts);
        boolean filled = true;
        for (Future<OperationBatch.KindCounts> part : pool().invokeAll(tasks)) {
            final OperationBatch.KindCounts counted = done(part);
            filled &= counted != null;
            counts.add(counted);
        }
        if (!filled) {
            batch.clear();
            return false;
        }
        batch.takeKindCounts(counts);
        return true;
    }

    /** Whether every update of {@code [from, to)} went in; false at the first that must go in order. */
    private static boolean fillRange(LocalDimension.Updates updates, int from, int to, PayloadStore<?> payloads,
                                     OperationBatch batch) {
        for (int i = from; i < to; i++) {
            final long key = updates.key(i);
            if (updates.isDelete(i)) {
                batch.setDelete(i, key);
                continue;
            }
            final long encoded;
            try {
                encoded = payloads.encodeSerialized(key, updates.bytes(i), updates.offset(i), updates.length(i));
            } catch (IOException refused) {
                return false; // the caller's pass in order throws it, after what came before it
            }
            if (payloads.isolated(encoded)) {
                return false;
            }
            batch.setUpsert(i, key, encoded);
        }
        return true;
    }

    private static <T> T done(Future<T> part) {
        try {
            return part.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while encoding a batch of updates", e);
        } catch (ExecutionException e) {
            final Throwable cause = e.getCause();
            if (cause instanceof RuntimeException runtime) {
                throw runtime;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw new IllegalStateException(cause);
        }
    }

    private ForkJoinPool pool() {
        if (pool == null) {
            pool = new ForkJoinPool(threads, p -> {
                final ForkJoinWorkerThread thread = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(p);
                thread.setName(threadName + " " + thread.getPoolIndex());
                thread.setDaemon(true);
                return thread;
            }, null, false);
        }
        return pool;
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdownNow();
            pool = null;
        }
    }
}
