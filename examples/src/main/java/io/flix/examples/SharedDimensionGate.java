package io.flix.examples;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.util.function.SerializableSupplier;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

/**
 * Holds the lookups of a local job back until the dimension of a shared-mode FliX enrichment
 * ({@code FlixEnrichment.shared}) holds every update on every task manager, so that each lookup has one answer known
 * in advance: for demos and tests whose job runs in this JVM (a local environment or a MiniCluster). A production
 * job starts from a savepoint that holds the dimension instead.
 *
 * <p>It reads the enrichment's own metrics, which Flink reports to {@link FlixMetrics} (see {@link #addTo}), and
 * opens two gates in turn ({@link #release}, on the caller's thread):
 * <ol>
 *   <li>the updates' source ({@link #updatesAfterLookupsOpen}) waits until every lookup subtask has opened, and so
 *       holds its task manager's dimension: a bounded update stream cannot end, and its writers let go of the
 *       dimension, before the lookups hold it;</li>
 *   <li>the lookups' source ({@link #lookupsAfterLoad}) waits until, on every task manager, the writer subtask that
 *       applies the updates ({@code flixApplier} 1) has applied all of them ({@code flixUpdates}). Then every lookup
 *       subtask's dimension must hold the number of keys the updates leave ({@code flixIndexSize}): where one does
 *       not, the job is cancelled and {@link #release} fails, naming the sizes.</li>
 * </ol>
 * Each is a {@link GeneratedSource#heldBackUntil gate} of a {@link GeneratedSource}: no record passes before it
 * opens, and the source's task is not blocked meanwhile.
 */
public final class SharedDimensionGate {

    private static final String APPLIER = "flixApplier";
    private static final String APPLIED = "flixUpdates";
    private static final String KEYS = "flixIndexSize";

    private static final Map<String, CompletableFuture<Void>> LOOKUPS_OPEN = new ConcurrentHashMap<>();
    private static final Map<String, CompletableFuture<Void>> LOADED = new ConcurrentHashMap<>();

    private SharedDimensionGate() {
    }

    /** The configuration with the reporter this gate reads ({@link FlixMetrics}) added. */
    public static Configuration addTo(Configuration configuration) {
        return FlixMetrics.addTo(configuration);
    }

    /** Closes both gates of the enrichment named {@code enrichment}: call before its job starts. */
    public static void reset(String enrichment) {
        LOOKUPS_OPEN.put(enrichment, new CompletableFuture<>());
        LOADED.put(enrichment, new CompletableFuture<>());
    }

    /** For the updates' source: nothing passes until every lookup subtask of the enrichment has opened. */
    public static SerializableSupplier<CompletableFuture<Void>> updatesAfterLookupsOpen(String enrichment) {
        return () -> gate(LOOKUPS_OPEN, enrichment);
    }

    /** For the lookups' source: nothing passes until the enrichment's dimension is loaded everywhere. */
    public static SerializableSupplier<CompletableFuture<Void>> lookupsAfterLoad(String enrichment) {
        return () -> gate(LOADED, enrichment);
    }

    /**
     * Opens the gates of the enrichment named {@code enrichment} in {@code job} in turn (see the class comment):
     * {@code parallelism} is the enrichment's, {@code updates} the number of updates that reach its writers (all
     * but those it rejects), {@code keys} the number of keys they leave. Where the job ends first, fails with its
     * failure; where a gate's condition does not hold within {@code safetyNet}, or the dimension holds other than
     * {@code keys} keys, cancels the job and fails naming what the metrics say.
     */
    public static void release(JobClient job, String enrichment, int parallelism, long updates, long keys,
                               Duration safetyNet) throws Exception {
        final String jobId = job.getJobID().toString();
        final String writer = enrichment + ": dimension";
        await(job, safetyNet, enrichment, "every lookup subtask of '" + enrichment + "' opened",
                () -> FlixMetrics.numbers(jobId, enrichment, KEYS).size() == parallelism);
        gate(LOOKUPS_OPEN, enrichment).complete(null);
        await(job, safetyNet, enrichment, "every task manager's applier of '" + enrichment + "' applied all " + updates
                + " updates", () -> {
                    final Map<Integer, Long> appliers = FlixMetrics.numbers(jobId, writer, APPLIER);
                    final Map<Integer, Long> applied = FlixMetrics.numbers(jobId, writer, APPLIED);
                    return appliers.size() == parallelism && applied.size() == parallelism
                            && appliers.containsValue(1L)
                            && appliers.entrySet().stream().filter(applier -> applier.getValue() == 1L)
                                    .allMatch(applier -> applied.get(applier.getKey()) == updates);
                });
        final Map<Integer, Long> sizes = FlixMetrics.numbers(jobId, enrichment, KEYS);
        if (!sizes.values().stream().allMatch(size -> size == keys)) {
            job.cancel();
            throw new IllegalStateException("every update of '" + enrichment + "' is applied, and the lookup "
                    + "subtasks' dimensions do not all hold " + keys + " keys" + state(jobId, enrichment));
        }
        gate(LOADED, enrichment).complete(null);
    }

    private static CompletableFuture<Void> gate(Map<String, CompletableFuture<Void>> gates, String enrichment) {
        return gates.computeIfAbsent(enrichment, e -> new CompletableFuture<>());
    }


    /** The watched metrics of an enrichment, by subtask, for messages. */
    private static String state(String job, String enrichment) {
        final String writer = enrichment + ": dimension";
        return "; by subtask, the lookups' " + KEYS + " " + FlixMetrics.numbers(job, enrichment, KEYS) + ", the writers' "
                + APPLIER + " " + FlixMetrics.numbers(job, writer, APPLIER) + " and " + APPLIED + " " + FlixMetrics.numbers(job, writer, APPLIED);
    }

    private static void await(JobClient job, Duration safetyNet, String enrichment, String what,
                              BooleanSupplier condition) throws Exception {
        final long deadline = System.nanoTime() + safetyNet.toNanos();
        while (!condition.getAsBoolean()) {
            if (job.getJobExecutionResult().isDone()) {
                job.getJobExecutionResult().get(); // throws the job's failure
                throw new IllegalStateException("the job ended before " + what);
            }
            if (System.nanoTime() > deadline) {
                job.cancel();
                throw new IllegalStateException("not within " + safetyNet + ": " + what
                        + state(job.getJobID().toString(), enrichment));
            }
            Thread.sleep(10);
        }
    }
}
