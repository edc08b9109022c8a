package io.flix.flink.keyed;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.FlushPolicy;
import io.flix.flink.HeldExecutor;
import io.flix.flink.IndexSettings;
import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Match;
import io.flix.flink.Update;
import io.flix.flink.payload.InlinePayloads;
import io.flix.index.FlixIndex;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.streaming.api.operators.co.KeyedCoProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The operator's output (records with their timestamps, and watermarks, in order) equals what one-record-at-a-time
 * processing gives, for random scripts with deletes and re-upserts, under both flush policies: {@link FlushPolicy#TIMER}
 * with flushes at random points (batch sizes, processing-time flushes, watermarks), and {@link FlushPolicy#LOAD} with
 * the worker's calls, the task's completions and "more input queued" at random points ({@link HeldExecutor}: no
 * timing).
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES) // a safety net: a wait that never ends fails, not hangs
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
        assertTrue(expected.size() > 1000, "the script yields lookups");
        for (FlushPolicy policy : FlushPolicy.values()) {
            final List<Object> actual = run(Harnesses.operator(LookupKind.EXACT, batchSize, 10, policy), script,
                    seed, NO_DRAINING_UPDATES);
            assertEquals(expected, actual, policy.toString());
        }
    }

    @ParameterizedTest(name = "seed {0}, {1} keys, batch size {2}")
    @MethodSource("seeds")
    void orderedLookupsEqualSequentialTreeMap(long seed, int keyCount, int batchSize) throws Exception {
        for (LookupKind kind : LookupKind.values()) {
            final Script script = Script.random(seed ^ kind.ordinal(), keyCount, 2500);
            final List<Object> expected = run(
                    new ReferenceOperators.TreeMapEnrichment(kind, Harnesses.RANGE_LIMIT), script);
            for (FlushPolicy policy : FlushPolicy.values()) {
                final List<Object> actual = run(Harnesses.operator(kind, batchSize, 10, policy), script, seed,
                        NO_DRAINING_UPDATES);
                assertEquals(expected, actual, kind + " " + policy);
            }
        }
    }

    @ParameterizedTest(name = "seed {0}, {1} keys, batch size {2}")
    @MethodSource("seeds")
    void fixedLengthPayloadsEqualSequentialTreeMap(long seed, int keyCount, int batchSize) throws Exception {
        // a Long payload is stored inline, in the index value
        checkFixedLength(seed, keyCount, batchSize, LongSerializer.INSTANCE, n -> n);
    }

    @ParameterizedTest(name = "seed {0}, {1} keys, batch size {2}")
    @MethodSource("seeds")
    void inlinePayloadsWithTheReservedBitsEqualSequentialTreeMap(long seed, int keyCount, int batchSize)
            throws Exception {
        // payloads whose bits are NOT_FOUND, or the value that escapes them, next to ordinary ones
        checkFixedLength(seed, keyCount, batchSize, LongSerializer.INSTANCE, n -> switch ((int) (n % 4)) {
            case 0 -> FlixIndex.NOT_FOUND;
            case 1 -> InlinePayloads.ESCAPED;
            default -> n;
        });
    }

    @ParameterizedTest(name = "seed {0}, {1} keys, batch size {2}")
    @MethodSource("seeds")
    void shortFixedLengthPayloadsEqualSequentialTreeMap(long seed, int keyCount, int batchSize) throws Exception {
        // an Integer payload (4 bytes, negative ones too) is stored inline through its serializer
        checkFixedLength(seed, keyCount, batchSize, IntSerializer.INSTANCE, n -> (int) (n * 0x9E3779B9L));
    }

    @ParameterizedTest(name = "seed {0}, {1} keys, batch size {2}")
    @MethodSource("seeds")
    void longRowPayloadsEqualSequentialTreeMap(long seed, int keyCount, int batchSize) throws Exception {
        // a fixed length above 8 bytes takes the row store's fixed-length path
        checkFixedLength(seed, keyCount, batchSize, new LongPairSerializer(), n -> new long[] {n, -n});
    }

    private static <P> void checkFixedLength(long seed, int keyCount, int batchSize, TypeSerializer<P> serializer,
                                             java.util.function.LongFunction<P> payloadOf) throws Exception {
        for (LookupKind kind : new LookupKind[] {LookupKind.EXACT, LookupKind.RANGE, LookupKind.FLOOR}) {
            final Script script = Script.random(seed * 31 + kind.ordinal(), keyCount, 2500);
            final List<Object> expected = new ArrayList<>();
            for (Object o : run(new ReferenceOperators.TreeMapEnrichment(kind, Harnesses.RANGE_LIMIT), script)) {
                expected.add(o instanceof StreamRecord<?> r ? convert(r, payloadOf) : o);
            }
            // an 8-byte payload with the bits of NOT_FOUND or of the escape value goes alone in its batch
            final Predicate<Script.Step> drainingUpdate = step -> step instanceof Script.UpdateStep u
                    && u.update().payload != null
                    && payloadOf.apply(Long.parseLong(u.update().payload.substring(1))) instanceof Long value
                    && (value == FlixIndex.NOT_FOUND || value == InlinePayloads.ESCAPED);
            for (FlushPolicy policy : FlushPolicy.values()) {
                final FlixEnrichmentOperator<Update, Lookup, P> operator = new FlixEnrichmentOperator<>(
                        u -> u.payload == null ? null : payloadOf.apply(Long.parseLong(u.payload.substring(1))),
                        serializer, Harnesses.LOOKUP_SERIALIZER, kind, l -> l.hi, Harnesses.RANGE_LIMIT, batchSize,
                        10, policy, IndexSettings.defaults().withBackend(io.flix.index.Backend.CPU).withThreads(2),
                        FlixEnrichment.REJECTED);
                assertEquals(comparable(expected), comparable(run(operator, script, seed, drainingUpdate)),
                        kind + " " + policy);
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static <P> StreamRecord<Enriched<Lookup, P>> convert(StreamRecord<?> record,
                                                                 java.util.function.LongFunction<P> payloadOf) {
        final Enriched<Lookup, String> e = (Enriched<Lookup, String>) record.getValue();
        List<Match<P>> matches = null;
        if (e.matches != null) {
            matches = new ArrayList<>();
            for (Match<String> m : e.matches) {
                matches.add(new Match<>(m.key, payloadOf.apply(Long.parseLong(m.payload.substring(1)))));
            }
        }
        final Enriched<Lookup, P> converted = new Enriched<>(e.event, e.kind,
                e.payload == null ? null : payloadOf.apply(Long.parseLong(e.payload.substring(1))), e.matchedKey,
                matches);
        return record.hasTimestamp() ? new StreamRecord<>(converted, record.getTimestamp())
                : new StreamRecord<>(converted);
    }

    /** Records as text, so that array payloads compare by content. */
    private static List<String> comparable(List<Object> records) {
        final List<String> out = new ArrayList<>();
        for (Object o : records) {
            if (o instanceof StreamRecord<?> r && r.getValue() instanceof Enriched<?, ?> e) {
                final StringBuilder text = new StringBuilder().append(e.event).append('|').append(e.kind).append('|')
                        .append(show(e.payload)).append('|').append(e.matchedKey).append('|');
                if (e.matches != null) {
                    for (Match<?> m : e.matches) {
                        text.append(m.key).append('=').append(show(m.payload)).append(',');
                    }
                }
                out.add(text.append('@').append(r.hasTimestamp() ? r.getTimestamp() : "none").toString());
            } else {
                out.add(String.valueOf(o));
            }
        }
        return out;
    }

    private static String show(Object payload) {
        return payload instanceof long[] a ? java.util.Arrays.toString(a) : String.valueOf(payload);
    }

    /** Two longs: a fixed length of 16 bytes. */
    private static final class LongPairSerializer extends TypeSerializer<long[]> {
        @Override public boolean isImmutableType() { return false; }
        @Override public TypeSerializer<long[]> duplicate() { return this; }
        @Override public long[] createInstance() { return new long[2]; }
        @Override public long[] copy(long[] from) { return from.clone(); }
        @Override public long[] copy(long[] from, long[] reuse) { return from.clone(); }
        @Override public int getLength() { return 16; }
        @Override public void serialize(long[] record, DataOutputView target) throws java.io.IOException {
            target.writeLong(record[0]);
            target.writeLong(record[1]);
        }
        @Override public long[] deserialize(DataInputView source) throws java.io.IOException {
            return new long[] {source.readLong(), source.readLong()};
        }
        @Override public long[] deserialize(long[] reuse, DataInputView source) throws java.io.IOException {
            return deserialize(source);
        }
        @Override public void copy(DataInputView source, DataOutputView target) throws java.io.IOException {
            target.write(source, 16);
        }
        @Override public boolean equals(Object obj) { return obj instanceof LongPairSerializer; }
        @Override public int hashCode() { return 16; }
        @Override public TypeSerializerSnapshot<long[]> snapshotConfiguration() {
            throw new UnsupportedOperationException("not needed here");
        }
    }

    private static final Predicate<Script.Step> NO_DRAINING_UPDATES = step -> false;

    private static <OUT> List<Object> run(
            org.apache.flink.streaming.api.operators.TwoInputStreamOperator<Update, Lookup, OUT> operator,
            Script script) throws Exception {
        return run(operator, script, 0, NO_DRAINING_UPDATES);
    }

    /**
     * Plays the script; a {@link FlushPolicy#LOAD} operator's calls run on a {@link HeldExecutor}, and before each
     * step the worker runs what it holds, or the task takes in its completions, or neither, at random from
     * {@code seed}. A step that waits for the call in flight (a watermark, a draining update, a record that fills the
     * buffer) gets the worker's call run first.
     */
    private static <OUT> List<Object> run(
            org.apache.flink.streaming.api.operators.TwoInputStreamOperator<Update, Lookup, OUT> operator,
            Script script, long seed, Predicate<Script.Step> drainingUpdate) throws Exception {
        final HeldExecutor worker = new HeldExecutor();
        final FlixEnrichmentOperator<?, ?, ?> flix = operator instanceof FlixEnrichmentOperator<?, ?, ?> f ? f : null;
        final SplittableRandom queue = new SplittableRandom(seed * 7_919 + 3);
        if (flix != null) {
            flix.setWorker(worker);
            // more input queued now and then: batches held back to grow, then sent when full or when it runs dry
            flix.setMoreInputQueued(() -> queue.nextInt(3) == 0);
        }
        try (KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, OUT> harness =
                     Harnesses.harness(operator, 1, 0)) {
            harness.open();
            final SplittableRandom random = new SplittableRandom(seed * 104_729 + 1);
            try {
                script.play(harness, 0, script.steps.size(), next -> {
                    worker.hold();
                    if (next instanceof Script.WatermarkStep || drainingUpdate.test(next)) {
                        worker.release(); // this step sends and waits for every batch
                        return;
                    }
                    final int roll = random.nextInt(4);
                    if (roll == 0 || flix != null && flix.buffered() >= flix.batchSize() - 1) {
                        worker.runHeld();
                    }
                    if (roll == 1 || roll == 2) {
                        HeldExecutor.runMails(harness);
                    }
                });
            } finally {
                worker.release(); // no call left held: closing the harness waits for every batch
            }
            if (flix != null) {
                harness.prepareSnapshotPreBarrier(1); // flushes, as before a checkpoint barrier
                assertEquals(0, flix.buffered() + flix.inFlight());
                assertEquals(0, HeldExecutor.runMails(harness), "no completion left behind");
                assertEquals(flix.indexSize(), flix.liveRows(), "every replaced or deleted row is freed");
            }
            harness.close();
            return new ArrayList<>(harness.getOutput());
        }
    }
}
