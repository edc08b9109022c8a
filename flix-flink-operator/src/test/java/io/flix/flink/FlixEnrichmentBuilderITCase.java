package io.flix.flink;

import io.flix.flink.testing.CommittedOutput;
import io.flix.index.Backend;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The DataStream builder end to end: enriched output, and rejected records on the side, job still running. */
class FlixEnrichmentBuilderITCase {

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
                    .build());

    @Test
    void enrichesAndRejectsBadRecordsWithoutStopping() throws Exception {
        final String run = "builder";
        JobParts.reset(run);
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        final DataStream<Update> updates = env.fromData(
                Update.upsert(1, "one"), Update.upsert(2, "two"), Update.upsert(99, "nokey"),
                Update.upsert(3, "throw"), Update.upsert(4, "four"), Update.delete(2));
        final DataStream<Lookup> lookups = env.fromSource(
                new org.apache.flink.connector.datagen.source.DataGeneratorSource<>(
                        i -> new Lookup(i, i + 1, i + 1), 5, gate(run), TypeInformation.of(Lookup.class)),
                WatermarkStrategy.noWatermarks(), "lookups").setParallelism(1);
        final PayloadFunction<Update, String> counting = JobParts.countingPayload(run, 5);
        final FlixEnrichment<Update, Lookup, String> enrichment = FlixEnrichment.of(updates, lookups)
                .key(u -> "nokey".equals(u.payload) ? null : u.key, l -> l.id == 4 ? null : l.key)
                .payload(u -> {
                    final String p = counting.payloadOf(u);
                    if ("throw".equals(p)) {
                        throw new IllegalArgumentException("bad product");
                    }
                    return p;
                }, Types.STRING)
                .batchSize(100)
                .flushInterval(Duration.ofMillis(10))
                .backend(Backend.CPU)
                .threads(1);
        enrichment.build().transform("enriched", Types.VOID, new CommittedOutput<>(run))
                .setParallelism(1);
        enrichment.rejected().transform("rejected", Types.VOID, new CommittedOutput<>(run + "-rejected"))
                .setParallelism(1);
        JobParts.COLLECTED.remove(run + "-rejected");
        env.execute();

        final List<String> enriched = new ArrayList<>(JobParts.COLLECTED.get(run));
        Collections.sort(enriched);
        assertEquals(List.of(
                new Enriched<>(new Lookup(0, 1, 1), LookupKind.EXACT, "one", null, null).toString(),
                new Enriched<>(new Lookup(1, 2, 2), LookupKind.EXACT, null, null, null).toString(),
                new Enriched<>(new Lookup(2, 3, 3), LookupKind.EXACT, null, null, null).toString(),
                new Enriched<>(new Lookup(3, 4, 4), LookupKind.EXACT, "four", null, null).toString()), enriched);
        final List<String> rejected = new ArrayList<>(JobParts.COLLECTED.get(run + "-rejected"));
        Collections.sort(rejected);
        assertEquals(3, rejected.size(), rejected.toString());
        assertTrue(rejected.get(0).contains("lookup: the key is null"), rejected.toString());
        assertTrue(rejected.get(1).contains("update: the key is null"), rejected.toString());
        assertTrue(rejected.get(2).contains("payload function failed") && rejected.get(2).contains("bad product"),
                rejected.toString());
    }

    @Test
    void rangeAndFloorResultsCrossTheNetwork() throws Exception {
        // parallelism 1 for the operator: the ordered kinds see the whole dimension; the collector's network
        // input serializes the results (matched keys, lists of matches) with the enriched type information
        for (LookupKind kind : new LookupKind[] {LookupKind.FLOOR, LookupKind.RANGE}) {
            final String run = "builder-" + kind;
            JobParts.reset(run);
            final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(1);
            final DataStream<Update> updates = env.fromData(
                    Update.upsert(10, "ten"), Update.upsert(20, "twenty"), Update.upsert(30, "thirty"));
            final DataStream<Lookup> lookups = env.fromSource(
                    new org.apache.flink.connector.datagen.source.DataGeneratorSource<>(
                            i -> new Lookup(i, 10 * i + 5, 10 * i + 100), 3, gate(run),
                            TypeInformation.of(Lookup.class)),
                    WatermarkStrategy.noWatermarks(), "lookups");
            FlixEnrichment<Update, Lookup, String> enrichment = FlixEnrichment.of(updates, lookups)
                    .key(u -> u.key, l -> l.key)
                    .payload(JobParts.countingPayload(run, 3), Types.STRING)
                    .backend(Backend.CPU);
            enrichment = kind == LookupKind.RANGE ? enrichment.range(l -> l.hi, 2) : enrichment.lookup(kind);
            enrichment.build().rebalance()
                    .transform("collect", Types.VOID, new CommittedOutput<>(run)).setParallelism(1);
            env.execute();
            final List<String> out = new ArrayList<>(JobParts.COLLECTED.get(run));
            Collections.sort(out);
            final List<String> expected = kind == LookupKind.FLOOR
                    ? List.of(new Enriched<>(new Lookup(0, 5, 100), kind, null, null, null).toString(),
                            new Enriched<>(new Lookup(1, 15, 110), kind, "ten", 10L, null).toString(),
                            new Enriched<>(new Lookup(2, 25, 120), kind, "twenty", 20L, null).toString())
                    : List.of(new Enriched<>(new Lookup(0, 5, 100), kind, null, null,
                                    List.of(new Match<>(10, "ten"), new Match<>(20, "twenty"))).toString(),
                            new Enriched<>(new Lookup(1, 15, 110), kind, null, null,
                                    List.of(new Match<>(20, "twenty"), new Match<>(30, "thirty"))).toString(),
                            new Enriched<>(new Lookup(2, 25, 120), kind, null, null,
                                    List.of(new Match<>(30, "thirty"))).toString());
            assertEquals(expected, out, kind.toString());
        }
    }

    @Test
    void theBuilderSaysWhatIsMissing() {
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        final FlixEnrichment<Update, Update, Update> noKey =
                FlixEnrichment.of(env.fromData(Update.upsert(1, "a")), env.fromData(Update.upsert(1, "a")));
        assertThrows(IllegalStateException.class, noKey::build);
        assertThrows(IllegalStateException.class, noKey::rejected);
        assertThrows(IllegalArgumentException.class, () -> noKey.batchSize(0));
        assertThrows(IllegalArgumentException.class, () -> noKey.updateBatchMax(-1));
        noKey.updateBatchMax(0); // the task manager's choice
        assertThrows(IllegalArgumentException.class, () -> noKey.lookup(LookupKind.RANGE));
        assertThrows(IllegalArgumentException.class, () -> noKey.flushInterval(Duration.ofMillis(-1)));
    }

    @SuppressWarnings("unchecked")
    private static org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy<
            org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit> gate(String run) {
        return (org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy<
                org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit>)
                JobParts.gateThenRate(run, 1_000_000);
    }
}
