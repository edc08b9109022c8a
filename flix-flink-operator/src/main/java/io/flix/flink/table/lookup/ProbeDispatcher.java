package io.flix.flink.table.lookup;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The thread of one lookup subtask that sends its batches under {@code 'lookup.batch-policy' = 'load'}
 * ({@link ProbeBatcher}): one batch at a time, so that the subtask's own thread goes on gathering while an index call
 * runs. A daemon thread, started on the first batch and stopped (and joined) by {@link #close}.
 */
public final class ProbeDispatcher implements Executor, AutoCloseable {

    private final ExecutorService executor;
    private volatile Thread thread;

    public ProbeDispatcher(String name) {
        executor = Executors.newSingleThreadExecutor(runnable -> {
            final Thread started = new Thread(runnable, name);
            started.setDaemon(true);
            thread = started;
            return started;
        });
    }

    @Override
    public void execute(Runnable command) {
        executor.execute(command);
    }

    /**
     * Lets the batches handed over finish (their futures complete, or fail where the dimension is closing), then
     * stops the thread and waits for it.
     */
    @Override
    public void close() throws InterruptedException {
        executor.shutdown();
        if (!executor.awaitTermination(60, TimeUnit.SECONDS)) {
            executor.shutdownNow();
            if (!executor.awaitTermination(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the FliX lookup dispatcher thread did not stop within 120 s");
            }
        }
        final Thread stopped = thread;
        if (stopped != null) {
            stopped.join(TimeUnit.SECONDS.toMillis(60));
        }
    }
}
