package io.flix.examples.cluster;

import io.flix.examples.kafka.KafkaEnrichmentJob;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * (d) Two jobs of the shared mode at once on one session cluster: the same jar, so the same operator uids and the
 * same dimension name, but different topics and different products under the same ids. Job B runs at parallelism 3
 * (so on both task managers) and job A at 1 in the last free slot, so one task manager runs the enrichment of both:
 * each job must keep its own dimension there (the task manager's dimensions are per job) and answer with its own
 * products.
 */
class SessionClusterTwoJobsITCase {

    private static final int PRODUCTS = 400;
    private static final int ORDERS = 1500;

    @RegisterExtension
    static final SharedKafkaBroker KAFKA = new SharedKafkaBroker();

    @RegisterExtension
    static final SessionClusterExtension CLUSTER = new SessionClusterExtension();

    @Test
    void twoSharedJobsOnOneTaskManagerKeepTheirOwnDimensions() throws Exception {
        final FlinkSessionCluster cluster = CLUSTER.cluster();
        final long start = System.nanoTime();
        final Topics topics = new Topics(KAFKA.broker());
        final EnrichmentRun a = EnrichmentRun.create(topics, "d-alpha", "alpha", 1000);
        final EnrichmentRun b = EnrichmentRun.create(topics, "d-beta", "beta", 5000);
        a.writeProducts(PRODUCTS);
        b.writeProducts(PRODUCTS);
        // B first: at parallelism 3 it takes slots on both task managers; A then gets the fourth slot
        final String jobB = cluster.submit(EnrichmentRun.JOB, b.jobArgs(3, 1000), null);
        cluster.awaitRunning(jobB);
        final String jobA = cluster.submit(EnrichmentRun.JOB, a.jobArgs(1, 1000), null);
        cluster.awaitRunning(jobA);
        a.awaitDimensionLoaded(cluster, jobA);
        b.awaitDimensionLoaded(cluster, jobB);

        final Set<String> shared = new TreeSet<>(enrichmentTaskManagers(cluster, jobA));
        shared.retainAll(enrichmentTaskManagers(cluster, jobB));
        assertFalse(shared.isEmpty(), () -> "a task manager runs the enrichment of both jobs: A on "
                + cluster.placement(jobA) + ", B on " + cluster.placement(jobB));

        // the same orders (ids, products, quantities) to both: only the dimensions differ
        final List<String> expectedA = new ArrayList<>(a.writeOrders(1, ORDERS, PRODUCTS));
        final List<String> expectedB = new ArrayList<>(b.writeOrders(1, ORDERS, PRODUCTS));
        topics.awaitCommitted(a.enriched, ORDERS, "job A enriched every order");
        topics.awaitCommitted(b.enriched, ORDERS, "job B enriched every order");
        cluster.stopWithSavepoint(jobA);
        cluster.stopWithSavepoint(jobB);

        for (EnrichmentRun run : List.of(a, b)) {
            final List<String> expected = run == a ? expectedA : expectedB;
            final List<String> actual = run.readEnriched();
            Collections.sort(expected);
            assertEquals(expected.size(), new HashSet<>(actual).size(), () -> run.name + ": distinct enriched orders; "
                    + EnrichmentRun.difference(expected, actual));
            assertEquals(expected, actual, run.name + ": each order once, with this job's own products");
        }
        final String otherPrefix = "|alpha-";
        assertFalse(b.readEnriched().stream().anyMatch(s -> s.contains(otherPrefix)), "B never answers with A's");
        assertFalse(a.readEnriched().stream().anyMatch(s -> s.contains("|beta-")), "A never answers with B's");
        System.out.printf("cluster (d) two shared jobs: A (parallelism 1) and B (parallelism 3) both on %s; %d "
                + "orders each enriched once with its own products (%d and %d with a product); test %.1f s%n",
                shared, ORDERS, expectedA.stream().filter(s -> !s.contains("|null|")).count(),
                expectedB.stream().filter(s -> !s.contains("|null|")).count(), (System.nanoTime() - start) / 1e9);
    }

    /** The task managers that run the job's lookups (the enrichment, chained to the orders' source). */
    private static Set<String> enrichmentTaskManagers(FlinkSessionCluster cluster, String job) {
        final Set<String> taskManagers = new TreeSet<>();
        for (Map.Entry<String, Map<Integer, String>> v : cluster.placement(job).entrySet()) {
            if (v.getKey().contains(KafkaEnrichmentJob.ENRICHMENT)) {
                taskManagers.addAll(v.getValue().values());
            }
        }
        return taskManagers;
    }
}
