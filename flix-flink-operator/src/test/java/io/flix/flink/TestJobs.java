package io.flix.flink;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.HashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.Map;

/** The deterministic update and lookup streams of the MiniCluster tests, and what the updates leave behind. */
final class TestJobs {

    private TestJobs() {
    }

    /** Update {@code i}: a key out of {@code keys}, every fifth a delete, so keys are deleted and re-upserted. */
    static Update update(long i, int keys) {
        final long key = Math.floorMod(i * 0x9E3779B97F4A7C15L, keys) * 1_000_003L - 7_000_000L;
        return i % 5 == 4 ? Update.delete(key) : Update.upsert(key, "u" + i);
    }

    /** Every key an update stream of {@code count} updates may touch, in a fixed order. */
    static long key(long i, int keys) {
        return Math.floorMod(i, keys) * 1_000_003L - 7_000_000L;
    }

    /** The dimension after the first {@code count} updates, applied in order. */
    static Map<Long, String> dimension(long count, int keys) {
        final Map<Long, String> map = new HashMap<>();
        for (long i = 0; i < count; i++) {
            final Update u = update(i, keys);
            if (u.payload == null) {
                map.remove(u.key);
            } else {
                map.put(u.key, u.payload);
            }
        }
        return map;
    }

    static DataStream<Update> updates(StreamExecutionEnvironment env, long count, int keys, String uid) {
        return env.fromSource(new DataGeneratorSource<>(i -> update(i, keys), count, TypeInformation.of(Update.class)),
                WatermarkStrategy.noWatermarks(), uid).uid(uid).setParallelism(1);
    }

    /**
     * As {@link #updates}, but the source stays open after its {@code count} updates instead of finishing, so that a
     * stop-with-savepoint never meets it finishing (Flink may then fail the job instead of taking the savepoint).
     */
    static DataStream<Update> updatesThatStayOpen(StreamExecutionEnvironment env, long count, int keys, String uid) {
        final RateLimiterStrategy<NumberSequenceSplit> stopAfterCount = parallelism -> new RateLimiter<>() {
            private long acquired;

            @Override
            public CompletionStage<Void> acquire(int permits) {
                acquired += permits;
                return acquired <= count ? CompletableFuture.completedFuture(null) : new CompletableFuture<>();
            }
        };
        return env.fromSource(new DataGeneratorSource<>(i -> update(i, keys), Long.MAX_VALUE, stopAfterCount,
                        TypeInformation.of(Update.class)), WatermarkStrategy.noWatermarks(), uid).uid(uid)
                .setParallelism(1);
    }

    /** Lookup {@code i} asks for {@code key(i)}; held back until the run's updates are all in the operator. */
    static DataStream<Lookup> lookups(StreamExecutionEnvironment env, long count, int keys, String run,
                                      double perSecond, String uid) {
        return lookups(env, count, keys, run, JobParts.Gate.LOADED, perSecond, uid);
    }

    /** As above, held back until {@code until} opens. */
    static DataStream<Lookup> lookups(StreamExecutionEnvironment env, long count, int keys, String run,
                                      JobParts.Gate until, double perSecond, String uid) {
        @SuppressWarnings("unchecked")
        final RateLimiterStrategy<org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit>
                gate = (RateLimiterStrategy<org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit>)
                JobParts.gateThenRate(run, until, perSecond);
        return env.fromSource(new DataGeneratorSource<>(i -> new Lookup(i, key(i, keys), key(i, keys)), count, gate,
                TypeInformation.of(Lookup.class)), WatermarkStrategy.noWatermarks(), uid).uid(uid).setParallelism(1);
    }
}
