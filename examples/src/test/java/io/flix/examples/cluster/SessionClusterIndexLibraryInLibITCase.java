package io.flix.examples.cluster;

import io.flix.examples.kafka.KafkaEnrichmentJob;
import io.flix.index.FlixIndex;
import io.flix.index.gpu.GpuFlixIndexProvider;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.net.URL;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The other way of deploying (docs/deployment.md): the index library and JCuda in the cluster's {@code lib/}, loaded
 * parent-first ({@code classloader.parent-first-patterns.additional: io.flix.index.;jcuda.}), the same job jar
 * submitted twice, the two jobs at once: each job's operators report that the task manager serves the index
 * library ({@code flixIndexLibrary}), on the GPU where one is usable, and each job answers with its own products.
 */
class SessionClusterIndexLibraryInLibITCase {

    private static final int PRODUCTS = 300;
    private static final int ORDERS = 600;

    @RegisterExtension
    static final SharedKafkaBroker KAFKA = new SharedKafkaBroker();

    private static FlinkSessionCluster cluster;

    @BeforeAll
    static void startWithTheIndexLibraryInLib() throws Exception {
        final URL natives = ClassLoader.getSystemResource("lib/libJCudaDriver-12.6.0-linux-x86_64.so");
        final String nativesJar = natives.getPath();
        final List<Path> lib = List.of(location(FlixIndex.class), location(GpuFlixIndexProvider.class),
                location(jcuda.driver.CUdevice.class),
                Path.of(new URL(nativesJar.substring(0, nativesJar.indexOf("!/"))).toURI()));
        cluster = FlinkSessionCluster.start(SessionClusterExtension.logDirectory().resolveSibling(
                        SessionClusterExtension.logDirectory().getFileName() + "-index-library-in-lib"),
                SessionClusterExtension.jobJar(), 2, lib,
                Map.of("classloader.parent-first-patterns.additional", "io.flix.index.;jcuda."));
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void twoJobsUseTheTaskManagersIndexLibrary() throws Exception {
        final Topics topics = new Topics(KAFKA.broker());
        final EnrichmentRun a = EnrichmentRun.create(topics, "lib-a", "lib-alpha", 1000);
        final EnrichmentRun b = EnrichmentRun.create(topics, "lib-b", "lib-beta", 5000);
        a.writeProducts(PRODUCTS);
        b.writeProducts(PRODUCTS);
        final String jobA = cluster.submit(EnrichmentRun.JOB, a.jobArgs(2, 1000), null);
        cluster.awaitRunning(jobA);
        final String jobB = cluster.submit(EnrichmentRun.JOB, b.jobArgs(2, 1000), null);
        cluster.awaitRunning(jobB);
        a.awaitDimensionLoaded(cluster, jobA);
        b.awaitDimensionLoaded(cluster, jobB);
        final List<String> expectedA = new ArrayList<>(a.writeOrders(1, ORDERS, PRODUCTS));
        final List<String> expectedB = new ArrayList<>(b.writeOrders(1, ORDERS, PRODUCTS));
        topics.awaitCommitted(a.enriched, ORDERS, "job A enriched every order");
        topics.awaitCommitted(b.enriched, ORDERS, "job B enriched every order");
        for (String job : List.of(jobA, jobB)) {
            FlinkSessionCluster.await(() -> !cluster.operatorMetric(job, KafkaEnrichmentJob.ENRICHMENT,
                    "flixIndexLibrary").isEmpty(), "job " + job + "'s operators report the index library's home");
            cluster.operatorMetric(job, KafkaEnrichmentJob.ENRICHMENT, "flixIndexLibrary").forEach((s, home) ->
                    assertEquals("task manager", home, job + " subtask " + s + ": the index library of lib/"));
            cluster.operatorMetric(job, KafkaEnrichmentJob.ENRICHMENT, "flixBackend")
                    .forEach((s, backend) -> assertEquals(EnrichmentRun.BACKEND, backend, job + " subtask " + s));
        }
        cluster.stopWithSavepoint(jobA);
        cluster.stopWithSavepoint(jobB);
        for (EnrichmentRun run : List.of(a, b)) {
            final List<String> expected = run == a ? expectedA : expectedB;
            final List<String> actual = run.readEnriched();
            Collections.sort(expected);
            assertEquals(expected.size(), new HashSet<>(actual).size(), run.name + ": distinct enriched orders");
            assertEquals(expected, actual, run.name + ": each order once, with this job's own products");
        }
        assertTrue(b.readEnriched().stream().noneMatch(s -> s.contains("|lib-alpha-")), "B never answers with A's");
        System.out.printf("cluster (index library in lib/): two jobs, %d orders each enriched once, backend %s%n",
                ORDERS, EnrichmentRun.BACKEND);
    }

    private static Path location(Class<?> type) throws Exception {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    }
}
