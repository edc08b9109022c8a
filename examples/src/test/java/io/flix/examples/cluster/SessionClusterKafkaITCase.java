package io.flix.examples.cluster;

import io.flix.examples.Order;
import io.flix.examples.Product;
import io.flix.examples.kafka.JsonCodec;
import io.flix.examples.kafka.KafkaEnrichmentJob;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.BeforeAll;
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
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Kafka job ({@link KafkaEnrichmentJob}, shared mode, on the GPU where one is usable, else the CPU) as a user
 * runs it: its jar submitted with {@code flink run} to a session cluster of separate processes
 * ({@link SessionClusterExtension}), against a real broker in the test JVM. Each test loads the product changelog,
 * waits until every task manager's dimension holds it (the operators' metrics, through the REST API), then writes
 * orders; the enriched topic, read with
 * {@code read_committed} after the job was stopped with a savepoint (its last transactions committed), must hold
 * exactly the enriched orders computed here from what was written: each once, with its product's payload.
 */
class SessionClusterKafkaITCase {

    private static final int PRODUCTS = 500;

    @RegisterExtension
    static final SharedKafkaBroker KAFKA = new SharedKafkaBroker();

    @RegisterExtension
    static final SessionClusterExtension CLUSTER = new SessionClusterExtension();

    private static Topics topics;

    @BeforeAll
    static void topics() {
        topics = new Topics(KAFKA.broker());
    }

    /** (a) End to end: each order enriched exactly once; a malformed order once in the dead-letter topic. */
    @Test
    void enrichesEachOrderExactlyOnce() throws Exception {
        final FlinkSessionCluster cluster = CLUSTER.cluster();
        final long start = System.nanoTime();
        final EnrichmentRun run = EnrichmentRun.create(topics, "a", "product", 100);
        run.writeProducts(PRODUCTS);
        // flink run, as the compose file's submit-job does; the other tests submit through the client library
        final String job = cluster.submitWithFlinkRun(EnrichmentRun.JOB, run.jobArgs(2, 1000), null);
        final double submitted = seconds(start);
        cluster.awaitRunning(job);
        run.awaitDimensionLoaded(cluster, job);
        final double loaded = seconds(start);
        final List<String> expected = new ArrayList<>(run.writeOrders(1, 2000, PRODUCTS));
        run.writeMalformedOrder("{not an order");
        topics.awaitCommitted(run.enriched, expected.size(), "every order enriched");
        final double enriched = seconds(start);
        final Map<Integer, String> backends = cluster.operatorMetric(job, KafkaEnrichmentJob.ENRICHMENT, "flixBackend");
        cluster.stopWithSavepoint(job);

        final List<String> actual = run.readEnriched();
        Collections.sort(expected);
        assertEquals(expected.size(), new HashSet<>(actual).size(), () -> "distinct enriched orders; "
                + EnrichmentRun.difference(expected, actual));
        assertEquals(expected, actual, "the enriched topic, each order exactly once");
        final List<ConsumerRecord<byte[], byte[]>> letters = topics.readCommitted(run.deadLetters);
        assertEquals(1, letters.size(), "one dead letter");
        final JsonNode letter = JsonCodec.tree(letters.get(0).value());
        assertEquals("orders", letter.path("stage").asText());
        assertEquals("{not an order", letter.path("value").asText());
        assertFalse(backends.isEmpty(), "the lookups report their backend");
        backends.values().forEach(b -> assertEquals(EnrichmentRun.BACKEND, b, "flixBackend of every lookup subtask"));
        System.out.printf("cluster (a) exactly once: %d products records, %d orders -> %d enriched (%d with a "
                        + "product), 1 dead letter; submitted %.1f s, dimension loaded %.1f s, all committed %.1f s, "
                        + "stopped with a savepoint %.1f s after the start%n", run.productRecords, expected.size(),
                actual.size(), actual.stream().filter(s -> !s.contains("|null|")).count(), submitted, loaded, enriched,
                seconds(start));
    }

    /**
     * (b) {@code kill -9} of a task manager that runs the job, mid-run, and a new one started: the job restarts
     * from its last checkpoint (the restart strategy of the compose file's settings) and the output stays exactly
     * once.
     */
    @Test
    void recoversFromAKilledTaskManagerExactlyOnce() throws Exception {
        final FlinkSessionCluster cluster = CLUSTER.cluster();
        final long start = System.nanoTime();
        final EnrichmentRun run = EnrichmentRun.create(topics, "b", "item", 300);
        run.writeProducts(PRODUCTS);
        // checkpoints every 8 s: the kill below most likely comes while enriched orders of the second half sit in a
        // transaction no checkpoint has yet included (the restart aborts it and replays them); exactly once either way
        final String job = cluster.submit(EnrichmentRun.JOB, run.jobArgs(2, 8000), null);
        cluster.awaitRunning(job);
        run.awaitDimensionLoaded(cluster, job);
        final List<String> expected = new ArrayList<>(run.writeOrders(1, 1500, PRODUCTS));
        // a checkpoint with orders has completed: the restart must not lose the dimension nor repeat these
        topics.awaitCommitted(run.enriched, expected.size(), "the first half enriched");
        final String victim = taskManagerOf(cluster, job);
        final int failuresBefore = cluster.failureCount(job);
        expected.addAll(run.writeOrders(1501, 3000, PRODUCTS));
        // the job has written some of the second half (committed or not): it is mid-run
        FlinkSessionCluster.await(() -> topics.physicalRecords(run.enriched) > 1500,
                "the job writes enriched orders of the second half");
        final long committedAtKill = topics.readCommitted(run.enriched).size();
        final long writtenAtKill = topics.physicalRecords(run.enriched);
        final long killedAt = System.nanoTime();
        cluster.killTaskManager(victim);
        final String replacement = cluster.startTaskManager();
        FlinkSessionCluster.await(() -> cluster.failureCount(job) > failuresBefore,
                "the job manager records the failure of job " + job + " after " + victim + " was killed");
        cluster.awaitRunning(job);
        final double recovered = seconds(killedAt);
        topics.awaitCommitted(run.enriched, expected.size(), "every order enriched after the recovery");
        final double allCommitted = seconds(killedAt);
        cluster.stopWithSavepoint(job);
        // the killed task manager's registration ends with its heartbeat: the next test finds two again
        cluster.awaitTaskManagers(SessionClusterExtension.TASK_MANAGERS);
        assertFalse(cluster.placement(job).values().stream().anyMatch(s -> s.containsValue(victim)),
                "no subtask runs on the killed task manager");

        final List<String> actual = run.readEnriched();
        Collections.sort(expected);
        assertEquals(expected.size(), new HashSet<>(actual).size(), () -> "distinct enriched orders; "
                + EnrichmentRun.difference(expected, actual));
        assertEquals(expected, actual, "the enriched topic, each order exactly once after the kill");
        final long physical = topics.physicalRecords(run.enriched);
        System.out.printf("cluster (b) kill -9: killed %s (replacement %s) with %d of %d orders committed and %d "
                        + "written (open transactions included); job running again %.1f s after the kill, all %d "
                        + "committed after %.1f s; %d records in the log, %d committed, %d aborted; failures "
                        + "recorded: %s; test %.1f s%n", victim,
                replacement, committedAtKill, expected.size(), writtenAtKill, recovered, expected.size(), allCommitted,
                physical, actual.size(), physical - actual.size(), cluster.exceptions(job).lines().findFirst()
                        .orElse("?"), seconds(start));
    }

    /**
     * (c) Stop with a savepoint, then the same jar from the savepoint at another parallelism (2 -> 3): every task
     * manager's dimension is whole again (its index size; no product record is read again, the sources resume
     * from the savepoint's offsets), every order written after the restart finds its product, nothing is lost or
     * repeated.
     */
    @Test
    void restoresTheWholeDimensionFromASavepointAtAnotherParallelism() throws Exception {
        final FlinkSessionCluster cluster = CLUSTER.cluster();
        final long start = System.nanoTime();
        final EnrichmentRun run = EnrichmentRun.create(topics, "c", "article", 700);
        run.writeProducts(PRODUCTS);
        final String first = cluster.submit(EnrichmentRun.JOB, run.jobArgs(2, 1000), null);
        cluster.awaitRunning(first);
        run.awaitDimensionLoaded(cluster, first);
        final List<String> expected = new ArrayList<>(run.writeOrders(1, 1000, PRODUCTS));
        topics.awaitCommitted(run.enriched, expected.size(), "the orders before the savepoint enriched");
        final String savepoint = cluster.stopWithSavepoint(first);
        assertNotNull(savepoint);

        // flink run -s SAVEPOINT, as a user resubmits an upgraded jar
        final String second = cluster.submitWithFlinkRun(EnrichmentRun.JOB, run.jobArgs(3, 1000), savepoint);
        cluster.awaitRunning(second);
        // each task manager's applier restored the one copy of the dimension from the union state
        final String[] sizes = {""};
        FlinkSessionCluster.await(() -> {
            final Map<Integer, String> applier = cluster.operatorMetric(second, EnrichmentRun.WRITERS, "flixApplier");
            final Map<Integer, String> size = cluster.operatorMetric(second, EnrichmentRun.WRITERS, "flixIndexSize");
            sizes[0] = "flixApplier " + applier + ", flixIndexSize " + size;
            final long appliers = applier.values().stream().filter("1"::equals).count();
            return appliers == SessionClusterExtension.TASK_MANAGERS && applier.entrySet().stream()
                    .filter(a -> a.getValue().equals("1"))
                    .allMatch(a -> Integer.toString(run.dimension.size()).equals(size.get(a.getKey())));
        }, () -> "both task managers' appliers hold the " + run.dimension.size() + " products; " + sizes[0]);
        final Set<String> taskManagers = new TreeSet<>();
        cluster.placement(second).values().forEach(s -> taskManagers.addAll(s.values()));

        // one order per product id: the withdrawn ones (every 17th) must find none, every other its product
        final List<Order> everyProduct = new ArrayList<>();
        for (long id = 1; id <= PRODUCTS; id++) {
            everyProduct.add(new Order(10_000 + id, id, 1 + (int) (id % 3)));
        }
        final List<String> afterRestart = run.writeOrders(everyProduct);
        expected.addAll(afterRestart);
        topics.awaitCommitted(run.enriched, expected.size(), "the orders after the restore enriched");
        cluster.stopWithSavepoint(second);

        final List<String> actual = run.readEnriched();
        Collections.sort(expected);
        assertEquals(expected.size(), new HashSet<>(actual).size(), () -> "distinct enriched orders; "
                + EnrichmentRun.difference(expected, actual));
        assertEquals(expected, actual, "the enriched topic: the orders before and after the restore, each once");
        final long found = afterRestart.stream().filter(s -> !s.contains("|null|")).count();
        assertEquals(run.dimension.size(), found, "every listed product answers after the restore");
        for (Product p : run.dimension.values()) {
            assertTrue(actual.stream().anyMatch(s -> s.startsWith((10_000 + p.id) + "|" + p.id + "|")
                    && s.contains("|" + p.id + "," + p.name + "," + p.priceCents + ",")), "product " + p.id);
        }
        System.out.printf("cluster (c) savepoint: %d orders before, %d after the restore at parallelism 3 on %s "
                        + "(%d with a product, %d products listed, %d withdrawn); savepoint %s; test %.1f s%n",
                1000, afterRestart.size(), taskManagers, found, run.dimension.size(), PRODUCTS - run.dimension.size(),
                savepoint, seconds(start));
    }

    /** The task manager that runs the job's first enrichment subtask. */
    private static String taskManagerOf(FlinkSessionCluster cluster, String job) {
        for (Map.Entry<String, Map<Integer, String>> v : cluster.placement(job).entrySet()) {
            if (v.getKey().contains(KafkaEnrichmentJob.ENRICHMENT) && !v.getKey().contains("dimension")) {
                return v.getValue().get(0);
            }
        }
        throw new AssertionError("no enrichment vertex in " + cluster.placement(job));
    }

    static double seconds(long since) {
        return (System.nanoTime() - since) / 1e9;
    }
}
