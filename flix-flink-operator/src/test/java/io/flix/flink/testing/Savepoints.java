package io.flix.flink.testing;

import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.CheckpointException;
import org.apache.flink.util.ExceptionUtils;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/** Stop-with-savepoint for tests. */
public final class Savepoints {

    /** Pause between a declined savepoint and the next try: the tasks it waits for are deploying or finishing. */
    private static final long RETRY_PAUSE_MILLIS = 100;

    private Savepoints() {
    }

    /**
     * Stops the job with a savepoint and returns its path. A savepoint is declined while a task is not running: still
     * deploying on a busy machine, or finishing (a bounded source ending just then). It is then tried again, as a
     * user would, until {@code safetyNetSeconds} have passed (a guard against a hang, not a bound the test expects).
     */
    public static String stopWithSavepoint(JobClient job, String directory, long safetyNetSeconds)
            throws Exception {
        final long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(safetyNetSeconds);
        ExecutionException first = null;
        while (true) {
            try {
                return job.stopWithSavepoint(false, directory, SavepointFormatType.CANONICAL)
                        .get(safetyNetSeconds, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (ExceptionUtils.findThrowable(e, CheckpointException.class).isEmpty()
                        || System.nanoTime() - giveUp > 0) {
                    if (first != null) {
                        e.addSuppressed(first);
                    }
                    throw e;
                }
                if (first == null) {
                    first = e;
                }
                Thread.sleep(RETRY_PAUSE_MILLIS);
            }
        }
    }
}
