package io.flix.examples.cluster;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

/**
 * One {@link FlinkSessionCluster} (a job manager, two task managers) for every cluster ITCase of the test run: the
 * first class to need it starts it, it lives in JUnit's root store and JUnit closes it (stops every process) when the
 * run ends. Register it as a static field with {@code @RegisterExtension}. Each class and each test starts with two
 * task managers registered and every slot free (a test that killed a task manager leaves its replacement); each test
 * ends with its jobs cancelled. Where a test fails, the last lines of every process's log and output are printed.
 *
 * <p>System properties: {@code flix.cluster.jobJar} (the job jar; the pom sets it to the shaded examples jar) and
 * {@code flix.cluster.logs} (where the logs go, in a folder per run named by its start time; default
 * {@code target/cluster-logs}).
 */
public final class SessionClusterExtension implements BeforeAllCallback, BeforeEachCallback, AfterEachCallback,
        TestExecutionExceptionHandler, LifecycleMethodExecutionExceptionHandler {

    static final int TASK_MANAGERS = 2;

    private FlinkSessionCluster cluster;

    public FlinkSessionCluster cluster() {
        return RunWide.started(cluster, "the session cluster");
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        cluster = RunWide.getOrStart(context, SessionClusterExtension.class, FlinkSessionCluster.class,
                "the session cluster", () -> FlinkSessionCluster.start(logDirectory(), jobJar(), TASK_MANAGERS));
        cluster.cancelAll();
        cluster.awaitTaskManagers(TASK_MANAGERS);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        cluster.awaitTaskManagers(TASK_MANAGERS);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        cluster.cancelAll();
    }

    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable throwable) throws Throwable {
        printLogs(context);
        throw throwable;
    }

    @Override
    public void handleBeforeAllMethodExecutionException(ExtensionContext context, Throwable throwable)
            throws Throwable {
        printLogs(context);
        throw throwable;
    }

    @Override
    public void handleBeforeEachMethodExecutionException(ExtensionContext context, Throwable throwable)
            throws Throwable {
        printLogs(context);
        throw throwable;
    }

    private void printLogs(ExtensionContext context) {
        if (cluster != null) {
            System.err.println("==== " + context.getDisplayName() + " failed; the cluster's processes: ====");
            cluster.printLogTails(System.err);
        }
    }

    static Path jobJar() {
        final String jar = System.getProperty("flix.cluster.jobJar");
        return jar != null ? Path.of(jar) : Path.of("target", "examples-0.1.0-SNAPSHOT.jar").toAbsolutePath();
    }

    static Path logDirectory() {
        final String logs = System.getProperty("flix.cluster.logs");
        return (logs != null ? Path.of(logs) : Path.of("target", "cluster-logs")).resolve(
                LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"))).toAbsolutePath();
    }
}
