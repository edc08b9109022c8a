package io.flix.flink.batching;

import org.apache.flink.api.common.operators.MailboxExecutor;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The worker of an operator whose micro-batches follow the load ({@code FlushPolicy.LOAD}): it runs an index call off
 * the task's thread and hands its completion back to the task's thread as a mail, as Flink's async I/O operator does.
 * The caller keeps one call in flight at a time. {@link #stop} ends the worker's own thread and waits for it, so that
 * no thread of the operator outlives it.
 */
public final class IndexCallWorker {

    /** Runs on the worker: the index call. */
    @FunctionalInterface
    public interface Call {
        void run() throws Exception;
    }

    /** Runs on the task's thread once the call ended: {@code failure} is what it threw, or null. */
    @FunctionalInterface
    public interface Completion {
        void completed(Throwable failure) throws Exception;
    }

    private final Executor executor;
    private final MailboxExecutor mailbox;
    /** The executor this worker started, shut down in {@link #stop}; null where it was given one. */
    private final ExecutorService own;
    private volatile Thread thread;

    private IndexCallWorker(Executor executor, ExecutorService own, MailboxExecutor mailbox) {
        this.executor = executor;
        this.own = own;
        this.mailbox = mailbox;
    }

    /** A worker on a daemon thread of its own, named {@code threadName}. */
    public static IndexCallWorker start(String threadName, MailboxExecutor mailbox) {
        final IndexCallWorker[] started = new IndexCallWorker[1];
        final ExecutorService own = Executors.newSingleThreadExecutor(runnable -> {
            final Thread thread = new Thread(runnable, threadName);
            thread.setDaemon(true);
            started[0].thread = thread;
            return thread;
        });
        started[0] = new IndexCallWorker(own, own, mailbox);
        return started[0];
    }

    /** A worker that runs the calls on {@code executor} (a test's); {@link #stop} leaves it alone. */
    public static IndexCallWorker on(Executor executor, MailboxExecutor mailbox) {
        return new IndexCallWorker(executor, null, mailbox);
    }

    /**
     * Runs {@code call} on the worker, then {@code completion} as a mail of the task.
     *
     * @throws RejectedExecutionException where the worker is stopped
     */
    public void run(Call call, Completion completion, String description) {
        executor.execute(() -> {
            Throwable failure = null;
            try {
                call.run();
            } catch (Throwable t) {
                failure = t;
            }
            final Throwable failed = failure;
            try {
                mailbox.execute(() -> completion.completed(failed), description);
            } catch (RejectedExecutionException closing) {
                // the task is ending: its mailbox takes no more mail, and stop() waits for this thread
            }
        });
    }

    /**
     * Stops the worker's own thread (a call in flight is interrupted where it waits) and waits for it.
     *
     * @param whose names the worker in the error where it does not stop within 60 s
     */
    public void stop(String whose) throws InterruptedException {
        if (own == null) {
            return;
        }
        own.shutdownNow();
        if (!own.awaitTermination(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException(whose + " did not stop within 60 s of close");
        }
        final Thread stopped = thread;
        if (stopped != null) {
            stopped.join(TimeUnit.SECONDS.toMillis(60));
        }
    }
}
