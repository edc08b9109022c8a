package io.flix.examples.cluster;

import io.flix.examples.kafka.KafkaEnrichmentJob;
import io.flix.flink.taskmanager.StandInGpuDriver;
import io.flix.index.Backend;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * GPUs from Flink: a session cluster of its own whose two task managers each have Flink's GPU external resource,
 * one GPU each, served by a stand-in of Flink's GPU driver (flink-external-resource-gpu is not in the registry here)
 * loaded as Flink loads the real one: a plugin jar in the task managers' plugins directory, its infos carrying the
 * plugin's property, {@code index}. The first task manager is assigned nvidia-smi index 0, the second index 1 (0
 * too on a machine of one usable GPU). The Kafka job (shared mode) runs on both: every operator of the dimension
 * reports its task manager's assigned index ({@code flixAssignedGpus}), and where a GPU is usable its index sits on
 * that GPU's CUDA device only (PCI bus order; {@code flixDevices}), not on every device the process sees. The orders
 * are enriched exactly once either way.
 */
class SessionClusterAssignedGpusITCase {

    private static final int PRODUCTS = 300;
    private static final int ORDERS = 800;

    @RegisterExtension
    static final SharedKafkaBroker KAFKA = new SharedKafkaBroker();

    private static FlinkSessionCluster cluster;
    /** Task manager resource id -> the nvidia-smi index Flink assigned it. */
    private static final Map<String, Integer> ASSIGNED = new LinkedHashMap<>();

    @BeforeAll
    static void startTaskManagersWithOneGpuEach() throws Exception {
        cluster = FlinkSessionCluster.start(SessionClusterExtension.logDirectory().resolveSibling(
                SessionClusterExtension.logDirectory().getFileName() + "-assigned-gpus"),
                SessionClusterExtension.jobJar(), 0);
        final Path plugins = Files.createTempDirectory("flix-plugins");
        StandInGpuDriver.writePluginJar(plugins.resolve("flix-stand-in-gpu"));
        // without a usable GPU the indexes go to the CPU whatever Flink assigned: two indexes show the wiring apart
        final int gpus = Backend.GPU.unavailableReason() == null ? Backend.GPU.devices() : 2;
        for (int i = 0; i < 2; i++) {
            final int index = i % gpus;
            final String id = cluster.startTaskManager(Map.of(
                    "external-resources", "gpu",
                    "external-resource.gpu.amount", "1",
                    "external-resource.gpu.driver-factory.class", StandInGpuDriver.Factory.class.getName(),
                    "external-resource.gpu.param.indexes", Integer.toString(index)),
                    Map.of("FLINK_PLUGINS_DIR", plugins.toString()));
            ASSIGNED.put(id, index);
        }
        cluster.awaitTaskManagers(2);
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void eachTaskManagersIndexesUseTheGpuFlinkAssignedIt() throws Exception {
        final Topics topics = new Topics(KAFKA.broker());
        final EnrichmentRun run = EnrichmentRun.create(topics, "gpus", "gpu-product", 300);
        run.writeProducts(PRODUCTS);
        final String job = cluster.submit(EnrichmentRun.JOB, run.jobArgs(4, 1000), null);
        try {
            cluster.awaitRunning(job);
            run.awaitDimensionLoaded(cluster, job);
            final List<String> expected = new ArrayList<>(run.writeOrders(1, ORDERS, PRODUCTS));
            topics.awaitCommitted(run.enriched, ORDERS, "every order enriched");

            final Map<String, Map<Integer, String>> placement = cluster.placement(job);
            final Map<String, Map<Integer, String>> assigned = new TreeMap<>();
            FlinkSessionCluster.await(() -> {
                assigned.clear();
                assigned.putAll(vertexMetric(job, "flixAssignedGpus"));
                return assigned.values().stream().mapToInt(Map::size).sum() == 8;
            }, () -> "the lookups and writers (4 each) report the GPUs Flink assigned: " + assigned);
            final Map<String, Map<Integer, String>> devices = vertexMetric(job, "flixDevices");
            final Map<String, Map<Integer, String>> backends = vertexMetric(job, "flixBackend");
            final List<Integer> pciOrder = Backend.GPU.unavailableReason() == null
                    ? Backend.GPU.devicesInPciBusOrder() : List.of();
            assigned.forEach((vertex, subtasks) -> subtasks.forEach((subtask, value) -> {
                final String tm = placement.get(vertex).get(subtask);
                final int index = ASSIGNED.get(tm);
                final String where = vertex + " subtask " + subtask + " on " + tm;
                assertEquals(Integer.toString(index), value, where + ": the index Flink assigned its task manager");
                assertEquals(EnrichmentRun.BACKEND, backends.get(vertex).get(subtask), where);
                if (!pciOrder.isEmpty()) {
                    assertEquals(Integer.toString(pciOrder.get(index)), devices.get(vertex).get(subtask),
                            where + ": the dimension's devices, the assigned GPU's only");
                }
            }));
            cluster.stopWithSavepoint(job);
            final List<String> actual = run.readEnriched();
            Collections.sort(expected);
            assertEquals(expected.size(), new HashSet<>(actual).size(), "distinct enriched orders");
            assertEquals(expected, actual, "each order exactly once, with its product");
            assertFalse(assigned.isEmpty());
            System.out.printf("cluster (GPUs from Flink): assigned %s; flixAssignedGpus %s; flixDevices %s; "
                    + "flixBackend %s%n", ASSIGNED, assigned, devices, backends);
        } finally {
            if (!"FINISHED".equals(cluster.jobState(job))) {
                cluster.cancelAll();
            }
        }
    }

    /** One metric of every vertex of the dimension (lookups and writers): vertex name -> (subtask -> value). */
    private static Map<String, Map<Integer, String>> vertexMetric(String job, String metric) {
        return cluster.vertexMetric(job, KafkaEnrichmentJob.ENRICHMENT, metric);
    }
}
