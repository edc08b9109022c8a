package io.flix.index.gpu;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The threads that move host arrays for this class loader's GPU indexes: started on first use, stopped by
 * {@link GpuRuntime#release()} so that a Flink job's class loader, once released, leaves no thread behind.
 */
final class CopyThreads {

    /** Threads a direction: two keep its stream fed while one waits for its copy to end. */
    private static final int THREADS_A_DIRECTION = 4;

    private static ExecutorService up;
    private static ExecutorService down;
    private static ExecutorService staging;

    private CopyThreads() {
    }

    /** Threads that copy host arrays to the device ({@link DirectCopies}). */
    static synchronized ExecutorService up() {
        if (up == null) {
            up = pool("flix-gpu-copy-up", THREADS_A_DIRECTION);
        }
        return up;
    }

    /** Threads that copy to host arrays ({@link DirectCopies}). */
    static synchronized ExecutorService down() {
        if (down == null) {
            down = pool("flix-gpu-copy-down", THREADS_A_DIRECTION);
        }
        return down;
    }

    /** Threads that pack and unpack pinned pieces ({@link StagedCopies}): one copies at a tenth of the bus's rate. */
    static synchronized ExecutorService staging() {
        if (staging == null) {
            staging = pool("flix-gpu-staging", Math.max(2, Runtime.getRuntime().availableProcessors()));
        }
        return staging;
    }

    /** Stops the threads started so far; a later use starts new ones. */
    static synchronized void shutdown() {
        for (ExecutorService pool : new ExecutorService[] {up, down, staging}) {
            if (pool != null) {
                pool.shutdownNow();
            }
        }
        up = null;
        down = null;
        staging = null;
    }

    private static ExecutorService pool(String name, int threads) {
        return Executors.newFixedThreadPool(threads, runnable -> {
            final Thread t = new Thread(runnable, name);
            t.setDaemon(true);
            return t;
        });
    }
}
