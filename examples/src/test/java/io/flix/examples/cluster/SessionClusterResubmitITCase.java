package io.flix.examples.cluster;

import io.flix.examples.kafka.KafkaEnrichmentJob;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * (f) Five cancel-and-resubmit cycles of a shared-mode job: each cycle submits the jar (a new user-code class loader
 * on each task manager), lets it enrich every order, cancels it and waits until every slot is free; then a full GC
 * in each task manager (over JMX) and its live threads, heap and user-code class loaders (instances of Flink's
 * child-first loader in the class histogram of live objects). What a job leaves behind in a task manager (threads,
 * pools, registries, native or device memory held in statics of the job's classes) keeps its class loader alive and
 * grows with every cycle: the threads and heap of cycle 5 must stay within a small slack of cycle 1's (cycle 1, not
 * 0: the first job also starts the task manager's own lazily created threads and pools), and no more user-code
 * loaders may be alive after cycle 5 than after cycle 2. Cycle 2, not 1: measured on the code of 2026-11-28, each
 * task manager keeps two loaders of cancelled jobs from cycle 2 on, the same first job's loader throughout (in a
 * heap dump reachable only through weak references: what holds it is outside the dump's roots) and the latest job's,
 * held by the JDK 17's {@code java.lang.runtime.ObjectMethods.OBJECT_EQ} method handle's {@code asTypeCache} (a
 * record's {@code equals}: {@code io.flix.flink.shared.TaskManagerDimensions$Key}) until the next job replaces it;
 * neither grows with the cycles. Threads of Flink's own pools whose size follows the machine, not the jobs, are counted
 * apart and held to their bound ({@link #FLINK_POOLS}). The figures of every cycle are printed, with the loaders'
 * identities and the threads by name that cycle 5 has beyond cycle 1; where a check fails, a heap dump of each task
 * manager goes to the logs.
 */
class SessionClusterResubmitITCase {

    private static final int CYCLES = 5;
    private static final int PRODUCTS = 2000;
    private static final int ORDERS = 1000;
    /** Threads that come and go without a leak: JMX's own connection threads. */
    static final int THREAD_SLACK = 4;
    /**
     * Flink's own pools (thread-name prefixes) that start lazily and grow over the first jobs up to a bound set by
     * the machine and the configuration: the blocking-I/O pool ({@code cluster.io-pool.size}: four threads a core)
     * and each of Pekko's fork-join dispatchers, the RPC and the metrics actor systems' (at most 64 threads each, the
     * largest {@code parallelism-max} Flink gives them). On a 2-core machine they are full after the first job; on
     * 16 or 32 cores they still grow over the next ones. Each pool is held to its bound, not to cycle 1's count.
     */
    static final Map<String, Integer> FLINK_POOLS = Map.of(
            "flink-taskexecutor-io-thread-", 4 * Runtime.getRuntime().availableProcessors(),
            "flink-pekko.", 64,
            "flink-metrics-pekko.", 64);
    /** Heap after a full GC moves by a few MiB with Flink's own caches (metrics, the REST handlers' history). */
    static final long HEAP_SLACK_BYTES = 16L << 20;
    /**
     * On the GPU: device memory after a cycle moves by the driver's own pools and what the primary context keeps;
     * a cancelled job's index or kernels left behind would add their size every cycle.
     */
    static final long DEVICE_SLACK_MIB = 64;

    @RegisterExtension
    static final SharedKafkaBroker KAFKA = new SharedKafkaBroker();

    @RegisterExtension
    static final SessionClusterExtension CLUSTER = new SessionClusterExtension();

    @Test
    void cancelledJobsLeaveNoThreadsNorHeapBehind() throws Exception {
        final FlinkSessionCluster cluster = CLUSTER.cluster();
        final long start = System.nanoTime();
        final Topics topics = new Topics(KAFKA.broker());
        final EnrichmentRun run = EnrichmentRun.create(topics, "f", "thing", 400);
        run.writeProducts(PRODUCTS);
        run.writeOrders(1, ORDERS, PRODUCTS);
        final List<String> taskManagers = cluster.taskManagerIds();

        final Map<String, List<FlinkSessionCluster.JvmFigures>> figures = new LinkedHashMap<>();
        for (String tm : taskManagers) {
            figures.put(tm, new ArrayList<>(List.of(cluster.gcAndMeasure(tm))));
        }
        final boolean onGpu = EnrichmentRun.BACKEND.equals("gpu");
        final List<Long> deviceMiB = new ArrayList<>();
        if (onGpu) {
            deviceMiB.add(DeviceMemory.totalUsedMiB());
        }
        print(0, figures, 0);
        for (int cycle = 1; cycle <= CYCLES; cycle++) {
            final long cycleStart = System.nanoTime();
            final String enriched = "orders-enriched-f-" + cycle;
            topics.create(Map.of(enriched, 2));
            // parallelism 4: every slot of both task managers, so each of them loads the job's classes
            final String job = cluster.submit(EnrichmentRun.JOB, run.jobArgs(4, 500, enriched, "f-" + cycle), null);
            cluster.awaitRunning(job);
            final List<ConsumerRecord<byte[], byte[]>> out = topics.awaitCommitted(enriched, ORDERS,
                    "cycle " + cycle + " enriched every order");
            final Set<String> distinct = new HashSet<>(EnrichmentRun.canonical(out));
            assertEquals(ORDERS, distinct.size(), "cycle " + cycle + ": every order enriched");
            final Set<String> ran = new java.util.TreeSet<>();
            cluster.placement(job).values().forEach(s -> ran.addAll(s.values()));
            assertEquals(new java.util.TreeSet<>(taskManagers), ran, "cycle " + cycle + " ran on both");
            final int cycleNumber = cycle;
            FlinkSessionCluster.await(() -> cluster.operatorMetric(job, KafkaEnrichmentJob.ENRICHMENT, "flixBackend")
                    .size() == 4, "cycle " + cycle + ": the four lookup subtasks report their backend");
            cluster.operatorMetric(job, KafkaEnrichmentJob.ENRICHMENT, "flixBackend").forEach((subtask, backend) ->
                    assertEquals(EnrichmentRun.BACKEND, backend, "cycle " + cycleNumber + ", subtask " + subtask));
            cluster.cancel(job);
            cluster.awaitTaskManagers(SessionClusterExtension.TASK_MANAGERS);
            for (String tm : taskManagers) {
                figures.get(tm).add(cluster.gcAndMeasure(tm));
            }
            if (onGpu) {
                deviceMiB.add(DeviceMemory.totalUsedMiB());
                System.out.printf("cluster (f) device memory in use after cycle %d: %d MiB (%s)%n", cycle,
                        deviceMiB.get(cycle), DeviceMemory.usedMiB());
            }
            print(cycle, figures, (System.nanoTime() - cycleStart) / 1e9);
        }

        final List<String> failures = new ArrayList<>();
        for (Map.Entry<String, List<FlinkSessionCluster.JvmFigures>> e : figures.entrySet()) {
            final FlinkSessionCluster.JvmFigures first = e.getValue().get(1);
            final FlinkSessionCluster.JvmFigures last = e.getValue().get(CYCLES);
            System.out.printf("cluster (f) %s: threads beyond cycle 1's at cycle %d: %s%n", e.getKey(), CYCLES,
                    grown(first.threadsByName(), last.threadsByName()));
            final int firstOwn = outsideFlinkPools(first.threadsByName());
            final int lastOwn = outsideFlinkPools(last.threadsByName());
            if (lastOwn > firstOwn + THREAD_SLACK) {
                failures.add(e.getKey() + ": " + lastOwn + " live threads outside Flink's pools after cycle " + CYCLES
                        + ", " + firstOwn + " after cycle 1 (slack " + THREAD_SLACK + "); grown: "
                        + grown(first.threadsByName(), last.threadsByName()));
            }
            last.threadsByName().forEach((name, live) -> {
                final Integer bound = poolBound(name);
                if (bound != null && live > bound) {
                    failures.add(e.getKey() + ": " + live + " threads " + name + " after cycle " + CYCLES
                            + ", beyond its pool's bound " + bound);
                }
            });
            final FlinkSessionCluster.JvmFigures second = e.getValue().get(2);
            if (last.userCodeClassLoaders() > second.userCodeClassLoaders()) {
                failures.add(e.getKey() + ": " + last.userCodeClassLoaders() + " live user-code class loaders after "
                        + "cycle " + CYCLES + ", " + second.userCodeClassLoaders() + " after cycle 2: "
                        + last.userCodeClassLoaderIds() + " vs " + second.userCodeClassLoaderIds());
            }
            if (last.heapUsedBytes() > first.heapUsedBytes() + HEAP_SLACK_BYTES) {
                failures.add(e.getKey() + ": " + mib(last.heapUsedBytes()) + " MiB heap after GC after cycle "
                        + CYCLES + ", " + mib(first.heapUsedBytes()) + " MiB after cycle 1 (slack "
                        + mib(HEAP_SLACK_BYTES) + " MiB)");
            }
        }
        if (onGpu && deviceMiB.get(CYCLES) > deviceMiB.get(1) + DEVICE_SLACK_MIB) {
            failures.add("device memory in use: " + deviceMiB + " MiB before and after each cycle (slack "
                    + DEVICE_SLACK_MIB + " MiB)");
        }
        System.out.printf("cluster (f) %d cycles in %.1f s%n", CYCLES, (System.nanoTime() - start) / 1e9);
        if (!failures.isEmpty()) {
            for (String tm : taskManagers) {
                final java.nio.file.Path dump = cluster.logs().resolve(tm + "-after-cycle-" + CYCLES + ".hprof");
                cluster.dumpHeap(tm, dump);
                System.out.println("cluster (f) heap dump of " + tm + ": " + dump);
            }
        }
        assertTrue(failures.isEmpty(), "task managers keep what cancelled jobs left:\n" + String.join("\n", failures));
    }

    private static void print(int cycle, Map<String, List<FlinkSessionCluster.JvmFigures>> figures, double seconds) {
        final StringBuilder line = new StringBuilder(String.format("cluster (f) after cycle %d (%.1f s):", cycle,
                seconds));
        figures.forEach((tm, list) -> {
            final FlinkSessionCluster.JvmFigures f = list.get(list.size() - 1);
            line.append(String.format(" %s threads=%d heap=%.1fMiB metaspace=%.1fMiB classes=%d userCodeLoaders=%d "
                            + "%s kafkaMBeans=%d;", tm, f.threads(), mib(f.heapUsedBytes()), mib(f.metaspaceUsedBytes()),
                    f.loadedClasses(), f.userCodeClassLoaders(), f.userCodeClassLoaderIds(), f.kafkaMBeans()));
        });
        System.out.println(line);
    }

    /** Live threads whose names are not those of {@link #FLINK_POOLS}. */
    static int outsideFlinkPools(Map<String, Integer> threadsByName) {
        return threadsByName.entrySet().stream().filter(e -> poolBound(e.getKey()) == null)
                .mapToInt(Map.Entry::getValue).sum();
    }

    /** The bound of the Flink pool a thread name (digits as #) belongs to, or null where it is none of them. */
    static Integer poolBound(String threadName) {
        return FLINK_POOLS.entrySet().stream().filter(p -> threadName.startsWith(p.getKey()))
                .map(Map.Entry::getValue).findFirst().orElse(null);
    }

    /** Thread names (digits as #) with more live threads in {@code last} than in {@code first}, and how many more. */
    static Map<String, Integer> grown(Map<String, Integer> first, Map<String, Integer> last) {
        final Map<String, Integer> grown = new TreeMap<>();
        last.forEach((name, n) -> {
            final int more = n - first.getOrDefault(name, 0);
            if (more > 0) {
                grown.put(name, more);
            }
        });
        return grown;
    }

    private static double mib(long bytes) {
        return bytes / (double) (1 << 20);
    }
}
