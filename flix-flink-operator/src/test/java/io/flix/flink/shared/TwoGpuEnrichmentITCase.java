package io.flix.flink.shared;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.LookupKind;
import io.flix.index.Backend;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.groups.OperatorMetricGroup;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.legacy.SinkFunction;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Both modes on two GPUs of one task manager (4 slots), each checked by the devices its indexes report: the shared
 * mode holds a replica of the dimension on device 0 and one on device 1 and answers floor lookups over the whole
 * dimension as a TreeMap does; the keyed mode puts subtask i's index on device i % 2. Runs where the GPU backend is
 * usable and the CUDA driver counts at least two devices (the assumption names the count); skipped elsewhere.
 */
class TwoGpuEnrichmentITCase {

    private static final InMemoryReporter METRICS = InMemoryReporter.createWithRetainedMetrics();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
                    .setConfiguration(METRICS.addToConfiguration(new Configuration())).build());

    static final ConcurrentLinkedQueue<String> OUT = new ConcurrentLinkedQueue<>();
    static final AtomicLong COUNT = new AtomicLong();

    /** The shared test's updates are all applied: the job's lookup source waits for it through this static. */
    static volatile CompletableFuture<Void> loaded = new CompletableFuture<>();

    @BeforeEach
    void assumeTwoGpus() {
        final String reason = Backend.GPU.unavailableReason();
        assumeTrue(reason == null, reason);
        final int devices = Backend.GPU.devices();
        assumeTrue(devices >= 2, "needs two CUDA devices; the CUDA driver counts " + devices + " here");
    }

    @Test
    void theSharedModeHoldsAReplicaOnEachDeviceAndAnswersOverTheWholeDimension() throws Exception {
        final int keys = 100_000;
        final int lookups = 40_000;
        final String dimension = "two-gpus-shared";
        OUT.clear();
        final List<Integer> replicaDevices = new ArrayList<>();
        loaded = CompletableFuture.runAsync(() -> {
            try {
                final List<TaskManagerDimension<?>> started = DimensionContents.await(dimension, 1,
                        d -> d.size() == keys, keys + " keys in the dimension");
                replicaDevices.addAll(started.get(0).devices());
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        final FloorDimension dimensionData = new FloorDimension(keys);
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(4);
        final DataStream<Long> updates = env.fromData(dimensionData.updateKeys).setParallelism(1);
        final DataStream<Long> probes = env.fromSource(new DataGeneratorSource<>(i -> i * 7 - 10, lookups,
                gate(), Types.LONG), WatermarkStrategy.noWatermarks(), "probes");
        FlixEnrichment.shared(updates, probes)
                .key(u -> u, p -> p)
                .payload(u -> "v" + u, Types.STRING)
                .lookup(LookupKind.FLOOR)
                .batchSize(512)
                .flushInterval(Duration.ofMillis(5))
                .backend(Backend.GPU)
                .devices(2)
                .uid(dimension)
                .build()
                .addSink(new SinkFunction<>() {
                    @Override
                    public void invoke(Enriched<Long, String> value, Context context) {
                        OUT.add(FloorDimension.written(value));
                    }
                });
        env.execute();

        final List<String> expected = new ArrayList<>();
        for (long i = 0; i < lookups; i++) {
            expected.add(dimensionData.floorAnswer(i * 7 - 10));
        }
        final List<String> got = new ArrayList<>(OUT);
        got.sort(null);
        expected.sort(null);
        assertEquals(expected, got, "floor answers against the TreeMap");
        assertEquals(Set.of(0, 1), new TreeSet<>(replicaDevices), "the devices of the dimension's replicas");
        assertEquals(2, replicaDevices.size(), "one replica per device: " + replicaDevices);
    }

    @Test
    void theKeyedModePutsSubtaskIOnDeviceIModTwo() throws Exception {
        final int keys = 10_000;
        final int lookups = 20_000;
        COUNT.set(0);
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(4);
        final List<Long> updateKeys = new ArrayList<>();
        for (long k = 0; k < keys; k++) {
            updateKeys.add(k);
        }
        final DataStream<Long> updates = env.fromData(updateKeys).setParallelism(1);
        final DataStream<Long> probes = env.fromSource(new DataGeneratorSource<>(i -> i % keys, lookups,
                Types.LONG), WatermarkStrategy.noWatermarks(), "keyed probes");
        final String operator = "keyed-two-gpus";
        FlixEnrichment.of(updates, probes)
                .key(u -> u, p -> p)
                .payload(u -> "v" + u, Types.STRING)
                .batchSize(512)
                .flushInterval(Duration.ofMillis(5))
                .backend(Backend.GPU)
                .devices(2)
                .name(operator)
                .build()
                .addSink(new SinkFunction<>() {
                    @Override
                    public void invoke(Enriched<Long, String> value, Context context) {
                        COUNT.incrementAndGet();
                    }
                });
        final JobID job = env.execute().getJobID();

        assertEquals(lookups, COUNT.get(), "every lookup answered");
        final Map<Integer, Object> deviceOfSubtask = new HashMap<>();
        for (OperatorMetricGroup group : METRICS.findOperatorMetricGroups(job, operator)) {
            final int subtask = Integer.parseInt(group.getAllVariables().get("<subtask_index>"));
            final Metric device = METRICS.getMetricsByGroup(group).get("flixDevice");
            assertTrue(device instanceof Gauge<?>, () -> "no flixDevice gauge on subtask " + subtask + ": "
                    + METRICS.getMetricsByGroup(group).keySet());
            deviceOfSubtask.put(subtask, ((Gauge<?>) device).getValue());
        }
        assertEquals(Map.of(0, 0, 1, 1, 2, 0, 3, 1), deviceOfSubtask, "the device of each subtask's index");
    }

    /** Holds a source back until {@link #loaded}. */
    static RateLimiterStrategy<?> gate() {
        return parallelism -> new RateLimiter<>() {
            @Override
            public CompletionStage<Void> acquire(int permits) {
                return loaded;
            }
        };
    }
}
