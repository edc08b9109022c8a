package io.flix.flink.testing;

import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.CheckpointException;
import org.apache.flink.util.ExceptionUtils;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/** Stop-with-savepoint for tests. */
public final class Savepoints {

    /** Declined savepoints tried again before the test fails. */
    private static final int ATTEMPTS = 10;

    private Savepoints() {
    }

    /**
     * Stops the job with a savepoint and returns its path. A task may decline a savepoint while it finishes (a
     * bounded source ending just then): the savepoint is then tried again, as a user would.
     */
    public static String stopWithSavepoint(JobClient job, String directory, long safetyNetSeconds)
            throws Exception {
        ExecutionException previous = null;
        for (int attempt = 1; ; attempt++) {
            try {
                return job.stopWithSavepoint(false, directory, SavepointFormatType.CANONICAL)
                        .get(safetyNetSeconds, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (previous != null) {
                    e.addSuppressed(previous);
                }
                if (attempt == ATTEMPTS
                        || ExceptionUtils.findThrowable(e, CheckpointException.class).isEmpty()) {
                    throw e;
                }
                previous = e;
            }
        }
    }
}
