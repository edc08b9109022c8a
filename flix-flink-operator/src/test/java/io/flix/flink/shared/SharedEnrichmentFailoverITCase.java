package io.flix.flink.shared;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.LookupKind;
import io.flix.index.Backend;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.legacy.SinkFunction;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A bounded update stream ends, a checkpoint completes, then the job fails and restarts: the writers, still running
 * (they end with the lookups), held the dimension in that checkpoint, and the restored lookups find all of it.
 */
class SharedEnrichmentFailoverITCase {

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(2).setNumberSlotsPerTaskManager(2)
                    .build());

    private static final String DIMENSION = "failover-after-the-updates-end";
    static final Set<String> OUT = ConcurrentHashMap.newKeySet();
    /** The dimension is loaded on both task managers; then a checkpoint taken after it has completed. */
    static volatile CompletableFuture<Void> loaded = new CompletableFuture<>();
    static final CompletableFuture<Void> CHECKPOINTED_AFTER_LOAD = new CompletableFuture<>();
    static final AtomicLong FIRST_CHECKPOINT_AFTER_LOAD = new AtomicLong(Long.MAX_VALUE);
    static final AtomicBoolean FAILED_ONCE = new AtomicBoolean();
    /** At the failure, after the update stream had ended, each task manager still ran its writers. */
    static final AtomicBoolean WRITERS_RAN_AT_THE_FAILURE = new AtomicBoolean();

    @Test
    void theDimensionOfAFinishedUpdateStreamIsRestoredAfterAFailure() throws Exception {
        final int keys = 500;
        final int lookups = 2000;
        final TreeMap<Long, String> oracle = new TreeMap<>();
        final List<Long> updateKeys = new ArrayList<>();
        for (long k = 0; k < keys; k++) {
            oracle.put(k * 4, "v" + k * 4);
            updateKeys.add(k * 4);
        }
        final Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 1);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(10));
        loaded = DimensionContents.loaded(DIMENSION, 2, keys);
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(4);
        env.enableCheckpointing(50);
        final DataStream<Long> updates = env.fromData(updateKeys).setParallelism(1);
        final DataStream<Long> probes = env.fromSource(new DataGeneratorSource<>(i -> i, lookups, afterCheckpoint(),
                Types.LONG), WatermarkStrategy.noWatermarks(), "probes");
        final FlixEnrichment<Long, Long, String> enrichment = FlixEnrichment.shared(updates, probes)
                .key(u -> u, p -> p)
                .payload(u -> "v" + u, Types.STRING)
                .lookup(LookupKind.FLOOR)
                .batchSize(32)
                .flushInterval(Duration.ofMillis(5))
                .backend(Backend.AUTO)
                .threads(1)
                // a restore that found no dimension fails the job here instead of waiting 10 minutes
                .dimensionStartTimeout(Duration.ofSeconds(60))
                .uid(DIMENSION);
        enrichment.build().map(new FailOnceAfterTheLoad()).addSink(new SinkFunction<>() {
            @Override
            public void invoke(String value, Context context) {
                OUT.add(value);
            }
        });
        env.execute();

        assertTrue(FAILED_ONCE.get(), "the job failed once after a checkpoint that followed the load");
        assertTrue(WRITERS_RAN_AT_THE_FAILURE.get(), "the writers outlive a bounded update stream");
        final Set<String> expected = new TreeSet<>();
        for (long i = 0; i < lookups; i++) {
            final Map.Entry<Long, String> floor = oracle.floorEntry(i);
            expected.add(i + "->" + floor.getKey() + ":" + floor.getValue());
        }
        assertEquals(expected, new TreeSet<>(OUT));
    }

    /** Lookups wait for a checkpoint that completed after the load: the restore point holds the whole dimension. */
    private static RateLimiterStrategy<?> afterCheckpoint() {
        return parallelism -> new RateLimiter<>() {
            @Override
            public CompletionStage<Void> acquire(int permits) {
                return CHECKPOINTED_AFTER_LOAD;
            }
        };
    }

    /** Notes the first checkpoint taken after the load, opens the lookups when it completes, then fails once. */
    static final class FailOnceAfterTheLoad implements MapFunction<Enriched<Long, String>, String>,
            CheckpointedFunction, CheckpointListener {
        @Override
        public String map(Enriched<Long, String> e) {
            if (FAILED_ONCE.compareAndSet(false, true)) {
                final List<TaskManagerDimension<?>> dimensions = TaskManagerDimensions.started(DIMENSION);
                WRITERS_RAN_AT_THE_FAILURE.set(dimensions.size() == 2 && dimensions.stream().allMatch(
                        d -> d.hostsWriter(0) || d.hostsWriter(1) || d.hostsWriter(2) || d.hostsWriter(3)));
                throw new IllegalStateException("injected failure after the updates ended");
            }
            return e.event + "->" + e.matchedKey + ":" + e.payload;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {
            if (loaded.isDone()) {
                FIRST_CHECKPOINT_AFTER_LOAD.accumulateAndGet(context.getCheckpointId(), Math::min);
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            if (checkpointId >= FIRST_CHECKPOINT_AFTER_LOAD.get()) {
                CHECKPOINTED_AFTER_LOAD.complete(null);
            }
        }
    }
}
