package io.flix.flink;

import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.streaming.api.operators.co.KeyedCoProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The operator's output (records with their timestamps, and watermarks, in order) equals what one-record-at-a-time
 * processing gives, for random scripts with deletes and re-upserts, and flushes at random points (batch sizes,
 * processing-time flushes, watermarks).
 */
class FlixEnrichmentDifferentialTest {

    static Stream<Arguments> seeds() {
        final List<Arguments> cases = new ArrayList<>();
        for (long seed = 1; seed <= 12; seed++) {
            final SplittableRandom random = new SplittableRandom(seed * 7919);
            final int keyCount = new int[] {3, 16, 200, 3000}[(int) (seed % 4)];
            final int batchSize = new int[] {1, 2, 7, 64, 1000, 100_000}[random.nextInt(6)];
            cases.add(Arguments.of(seed, keyCount, batchSize));
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "seed {0}, {1} keys, batch size {2}")
    @MethodSource("seeds")
    void exactLookupsEqualKeyedCoProcessFunctionWithValueState(long seed, int keyCount, int batchSize)
            throws Exception {
        final Script script = Script.random(seed, keyCount, 4000);
        final List<Object> expected = run(new KeyedCoProcessOperator<>(new ReferenceOperators.ValueStateEnrichment()),
                script);
        final List<Object> actual = run(Harnesses.operator(LookupKind.EXACT, batchSize, 10), script);
        assertTrue(expected.size() > 1000, "the script yields lookups");
        assertEquals(expected, actual);
    }

    @ParameterizedTest(name = "seed {0}, {1} keys, batch size {2}")
    @MethodSource("seeds")
    void orderedLookupsEqualSequentialTreeMap(long seed, int keyCount, int batchSize) throws Exception {
        for (LookupKind kind : LookupKind.values()) {
            final Script script = Script.random(seed ^ kind.ordinal(), keyCount, 2500);
            final List<Object> expected = run(
                    new ReferenceOperators.TreeMapEnrichment(kind, Harnesses.RANGE_LIMIT), script);
            final List<Object> actual = run(Harnesses.operator(kind, batchSize, 10), script);
            assertEquals(expected, actual, kind.toString());
        }
    }

    @ParameterizedTest(name = "seed {0}, {1} keys, batch size {2}")
    @MethodSource("seeds")
    void fixedLengthPayloadsEqualSequentialTreeMap(long seed, int keyCount, int batchSize) throws Exception {
        // a Long payload takes the row store's fixed-length path
        for (LookupKind kind : new LookupKind[] {LookupKind.EXACT, LookupKind.RANGE}) {
            final Script script = Script.random(seed * 31 + kind.ordinal(), keyCount, 2500);
            final List<Object> expected = new ArrayList<>();
            for (Object o : run(new ReferenceOperators.TreeMapEnrichment(kind, Harnesses.RANGE_LIMIT), script)) {
                expected.add(o instanceof StreamRecord<?> r ? toLongPayload(r) : o);
            }
            final FlixEnrichmentOperator<Update, Lookup, Long> operator = new FlixEnrichmentOperator<>(
                    u -> u.payload == null ? null : Long.parseLong(u.payload.substring(1)), LongSerializer.INSTANCE,
                    Harnesses.LOOKUP_SERIALIZER, kind, l -> l.hi, Harnesses.RANGE_LIMIT, batchSize, 10,
                    IndexSettings.defaults().withBackend(io.flix.index.Backend.CPU).withThreads(2));
            assertEquals(expected, run(operator, script), kind.toString());
        }
    }

    @SuppressWarnings("unchecked")
    private static StreamRecord<Enriched<Lookup, Long>> toLongPayload(StreamRecord<?> record) {
        final Enriched<Lookup, String> e = (Enriched<Lookup, String>) record.getValue();
        List<Match<Long>> matches = null;
        if (e.matches != null) {
            matches = new ArrayList<>();
            for (Match<String> m : e.matches) {
                matches.add(new Match<>(m.key, Long.parseLong(m.payload.substring(1))));
            }
        }
        final Enriched<Lookup, Long> converted = new Enriched<>(e.event, e.kind,
                e.payload == null ? null : Long.parseLong(e.payload.substring(1)), e.matchedKey, matches);
        return record.hasTimestamp() ? new StreamRecord<>(converted, record.getTimestamp())
                : new StreamRecord<>(converted);
    }

    private static <OUT> List<Object> run(
            org.apache.flink.streaming.api.operators.TwoInputStreamOperator<Update, Lookup, OUT> operator,
            Script script) throws Exception {
        try (KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, OUT> harness =
                     Harnesses.harness(operator, 1, 0)) {
            harness.open();
            script.play(harness);
            if (operator instanceof FlixEnrichmentOperator<?, ?, ?> flix) {
                harness.prepareSnapshotPreBarrier(1); // flushes, as before a checkpoint barrier
                assertEquals(0, flix.buffered());
                assertEquals(flix.indexSize(), flix.liveRows(), "every replaced or deleted row is freed");
            }
            harness.close();
            return new ArrayList<>(harness.getOutput());
        }
    }
}
