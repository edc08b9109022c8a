package io.flix.flink.dimension;

import io.flix.index.batch.ParallelParts;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.Future;
import java.util.function.IntConsumer;

/**
 * The threads a dimension lends to the work of its large update batches, started on first need: the encoding of a
 * batch's updates ({@link ParallelBatchFill}) and the micro-batch engine's walk of a large batch of gets and updates
 * in parts by key ({@link ParallelParts}). Daemon threads named after the dimension; ended by {@link #close}.
 */
final class DimensionThreads implements ParallelParts, AutoCloseable {

    private final String threadName;
    private final int threads;
    private ForkJoinPool pool;

    DimensionThreads(String threadName, int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, was " + threads);
        }
        this.threadName = threadName;
        this.threads = threads;
    }

    @Override
    public int parallelism() {
        return threads;
    }

    @Override
    public void run(int parts, IntConsumer part) {
        if (parts == 1) {
            part.accept(0);
            return;
        }
        final List<Callable<Void>> tasks = new ArrayList<>(parts);
        for (int p = 0; p < parts; p++) {
            final int index = p;
            tasks.add(() -> {
                part.accept(index);
                return null;
            });
        }
        Throwable failure = null;
        for (Future<Void> done : pool().invokeAll(tasks)) {
            try {
                done.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while the threads of " + threadName + " ran", e);
            } catch (ExecutionException e) {
                if (failure == null) {
                    failure = e.getCause();
                }
            }
        }
        if (failure instanceof RuntimeException runtime) {
            throw runtime;
        }
        if (failure instanceof Error error) {
            throw error;
        }
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
    }

    private synchronized ForkJoinPool pool() {
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
    public synchronized void close() {
        if (pool != null) {
            pool.shutdownNow();
            pool = null;
        }
    }
}
