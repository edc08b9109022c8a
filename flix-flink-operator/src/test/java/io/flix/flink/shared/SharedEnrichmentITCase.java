package io.flix.flink.shared;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.LookupKind;
import io.flix.index.Backend;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.legacy.SinkFunction;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The shared mode end to end on two task managers: floor lookups over the whole dimension, against a TreeMap. The
 * backend is AUTO: the GPU where one is usable (on the GPU machine), else the CPU.
 */
class SharedEnrichmentITCase {

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(2).setNumberSlotsPerTaskManager(2)
                    .build());

    static final ConcurrentLinkedQueue<String> OUT = new ConcurrentLinkedQueue<>();

    @Test
    void floorLookupsOnEveryTaskManagerSeeTheWholeDimension() throws Exception {
        final int keys = 1000;
        final int lookups = 3000;
        final String dimension = "floor-two-task-managers";
        OUT.clear();
        loaded = DimensionContents.loaded(dimension, 2, keys);
        final FloorDimension dimensionData = new FloorDimension(keys);
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(4);
        final DataStream<Long> updates = env.fromData(dimensionData.updateKeys).setParallelism(1);
        final DataStream<Long> probes = env.fromSource(new DataGeneratorSource<>(i -> i - 10, lookups,
                        gate(), Types.LONG), WatermarkStrategy.noWatermarks(), "probes");
        final FlixEnrichment<Long, Long, String> enrichment = FlixEnrichment.shared(updates, probes)
                .key(u -> u, p -> p)
                .payload(u -> "v" + u, Types.STRING)
                .lookup(LookupKind.FLOOR)
                .batchSize(64)
                .flushInterval(Duration.ofMillis(5))
                .backend(Backend.AUTO)
                .threads(1)
                .uid(dimension);
        enrichment.build().addSink(new SinkFunction<>() {
            @Override
            public void invoke(Enriched<Long, String> value, Context context) {
                OUT.add(FloorDimension.written(value));
            }
        });
        env.execute();

        final List<String> expected = new ArrayList<>();
        for (long i = 0; i < lookups; i++) {
            expected.add(dimensionData.floorAnswer(i - 10));
        }
        final List<String> got = new ArrayList<>(OUT);
        got.sort(null);
        expected.sort(null);
        final List<String> missing = new ArrayList<>(expected);
        missing.removeAll(got);
        final List<String> wrong = new ArrayList<>(got);
        wrong.removeAll(expected);
        assertEquals(List.of(), wrong, "answers the oracle does not give");
        assertEquals(List.of(), missing, "answers missing");
        assertEquals(expected.size(), got.size());
    }

    /** The running test's updates are all applied on every task manager: the job reaches it through this static. */
    static volatile CompletableFuture<Void> loaded = new CompletableFuture<>();

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
