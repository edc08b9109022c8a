package io.flix.flink.testing;

import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.CheckpointException;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.CommonTestUtils;
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
     * Stops the job with a savepoint and returns its path. A savepoint is declined while a task is not running, so
     * it is first taken once every task of the job runs (or has finished), as the job's execution graph on
     * {@code cluster} says: on a busy machine a task may still be deploying after the test's own signal. A task may
     * still decline while it finishes (a bounded source ending just then): the savepoint is then tried again, as a
     * user would. {@code safetyNetSeconds} bounds one try, a guard against a hang, not a bound the test expects.
     */
    public static String stopWithSavepoint(MiniCluster cluster, JobClient job, String directory,
                                           long safetyNetSeconds) throws Exception {
        CommonTestUtils.waitForAllTaskRunning(cluster, job.getJobID(), true);
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
