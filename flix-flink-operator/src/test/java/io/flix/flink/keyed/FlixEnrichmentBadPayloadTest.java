package io.flix.flink.keyed;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.FlushPolicy;
import io.flix.flink.IndexSettings;
import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Match;
import io.flix.flink.PoisonStringSerializer;
import io.flix.flink.Rejected;
import io.flix.flink.Update;
import io.flix.index.Backend;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A stored payload that serialized but does not deserialize: each lookup that finds it goes to the rejected side
 * output with the reason, the batch's other lookups come out, the flush completes, and checkpoints holding it
 * restore.
 */
class FlixEnrichmentBadPayloadTest {

    private static FlixEnrichmentOperator<Update, Lookup, String> operator(LookupKind kind) {
        return new FlixEnrichmentOperator<>(u -> u.payload, PoisonStringSerializer.INSTANCE,
                Harnesses.LOOKUP_SERIALIZER, kind, l -> l.hi, 10, 1000, 0,
                FlushPolicy.TIMER,
                IndexSettings.defaults().withBackend(Backend.CPU).withThreads(1), FlixEnrichment.REJECTED);
    }

    private static KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>> open(
            FlixEnrichmentOperator<Update, Lookup, String> operator, OperatorSubtaskState state) throws Exception {
        final var harness = Harnesses.harness(operator, 1, 0);
        if (state != null) {
            harness.initializeState(state);
        }
        harness.open();
        return harness;
    }

    private static List<Rejected> rejected(
            KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>> harness) {
        final List<Rejected> out = new ArrayList<>();
        if (harness.getSideOutput(FlixEnrichment.REJECTED) != null) {
            harness.getSideOutput(FlixEnrichment.REJECTED).forEach(r -> out.add(r.getValue()));
        }
        return out;
    }

    private static void assertRejectedFor(Rejected rejected, Lookup lookup, long badKey) {
        assertEquals("lookup", rejected.input);
        assertEquals(lookup.toString(), rejected.record);
        assertTrue(rejected.reason.contains("key " + badKey + " does not deserialize")
                && rejected.reason.contains("cannot read back cursed"), rejected.reason);
    }

    @Test
    void aLookupOfAnUnreadablePayloadIsRejectedAndTheBatchGoesOn() throws Exception {
        final FlixEnrichmentOperator<Update, Lookup, String> operator = operator(LookupKind.EXACT);
        try (var harness = open(operator, null)) {
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "one")));
            harness.processElement1(new StreamRecord<>(Update.upsert(2, "cursed two")));
            harness.processElement1(new StreamRecord<>(Update.upsert(3, "three")));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 1, 1), 5));
            harness.processElement2(new StreamRecord<>(new Lookup(1, 2, 2), 6));
            harness.processElement2(new StreamRecord<>(new Lookup(2, 3, 3), 7));
            harness.processElement2(new StreamRecord<>(new Lookup(3, 2, 2)));
            harness.prepareSnapshotPreBarrier(1);

            final List<Object> out = new ArrayList<>(harness.getOutput());
            assertEquals(List.of(
                    new StreamRecord<>(new Enriched<>(new Lookup(0, 1, 1), LookupKind.EXACT, "one", null, null), 5),
                    new StreamRecord<>(new Enriched<>(new Lookup(2, 3, 3), LookupKind.EXACT, "three", null, null), 7)),
                    out);
            final List<StreamRecord<Rejected>> sideRecords =
                    new ArrayList<>(harness.getSideOutput(FlixEnrichment.REJECTED));
            assertEquals(2, sideRecords.size());
            assertRejectedFor(sideRecords.get(0).getValue(), new Lookup(1, 2, 2), 2);
            assertEquals(6, sideRecords.get(0).getTimestamp(), "the rejected lookup keeps its timestamp");
            assertRejectedFor(sideRecords.get(1).getValue(), new Lookup(3, 2, 2), 2);
            assertTrue(!sideRecords.get(1).hasTimestamp());
            // the flush completed: nothing buffered, every superseded row freed
            assertEquals(0, operator.buffered());
            assertEquals(3, operator.indexSize());
            assertEquals(3, operator.liveRows());

            // the job goes on: an update replaces the unreadable payload
            harness.getOutput().clear();
            harness.processElement1(new StreamRecord<>(Update.upsert(2, "two")));
            harness.processElement2(new StreamRecord<>(new Lookup(4, 2, 2)));
            harness.prepareSnapshotPreBarrier(2);
            assertEquals(List.of(new Enriched<>(new Lookup(4, 2, 2), LookupKind.EXACT, "two", null, null)),
                    new ArrayList<>(harness.extractOutputValues()));
            assertEquals(3, operator.liveRows());
        }
    }

    @Test
    void aCheckpointHoldingAnUnreadablePayloadRestoresAndRejectsItAgain() throws Exception {
        final OperatorSubtaskState state;
        try (var harness = open(operator(LookupKind.EXACT), null)) {
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "one")));
            harness.processElement1(new StreamRecord<>(Update.upsert(2, "cursed two")));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 2, 2)));
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(1, rejected(harness).size());
            state = harness.snapshot(1, 1);
        }
        for (int restart = 0; restart < 2; restart++) {
            final FlixEnrichmentOperator<Update, Lookup, String> restored = operator(LookupKind.EXACT);
            try (var harness = open(restored, state)) {
                assertEquals(2, restored.indexSize(), "the unreadable payload is kept");
                harness.processElement2(new StreamRecord<>(new Lookup(1, 2, 2)));
                harness.processElement2(new StreamRecord<>(new Lookup(2, 1, 1)));
                harness.prepareSnapshotPreBarrier(2);
                assertEquals(List.of(new Enriched<>(new Lookup(2, 1, 1), LookupKind.EXACT, "one", null, null)),
                        new ArrayList<>(harness.extractOutputValues()));
                final List<Rejected> rejected = rejected(harness);
                assertEquals(1, rejected.size());
                assertRejectedFor(rejected.get(0), new Lookup(1, 2, 2), 2);
            }
        }
    }

    @Test
    void aRangeWithAnUnreadableMatchIsRejectedWholeNamingTheKey() throws Exception {
        try (var harness = open(operator(LookupKind.RANGE), null)) {
            harness.processElement1(new StreamRecord<>(Update.upsert(10, "ten")));
            harness.processElement1(new StreamRecord<>(Update.upsert(20, "cursed twenty")));
            harness.processElement1(new StreamRecord<>(Update.upsert(30, "thirty")));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 0, 100)));
            harness.processElement2(new StreamRecord<>(new Lookup(1, 25, 100)));
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(List.of(new Enriched<>(new Lookup(1, 25, 100), LookupKind.RANGE, null, null,
                    List.of(new Match<>(30, "thirty")))), new ArrayList<>(harness.extractOutputValues()));
            final List<Rejected> rejected = rejected(harness);
            assertEquals(1, rejected.size());
            assertRejectedFor(rejected.get(0), new Lookup(0, 0, 100), 20);
        }
        try (var harness = open(operator(LookupKind.FLOOR), null)) {
            harness.processElement1(new StreamRecord<>(Update.upsert(20, "cursed twenty")));
            harness.processElement1(new StreamRecord<>(Update.upsert(30, "thirty")));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 25, 25)));
            harness.processElement2(new StreamRecord<>(new Lookup(1, 35, 35)));
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(List.of(new Enriched<>(new Lookup(1, 35, 35), LookupKind.FLOOR, "thirty", 30L, null)),
                    new ArrayList<>(harness.extractOutputValues()));
            final List<Rejected> rejected = rejected(harness);
            assertEquals(1, rejected.size());
            assertRejectedFor(rejected.get(0), new Lookup(0, 25, 25), 20);
        }
    }

    @Test
    void anUnreadableInlinePayloadIsRejectedToo() throws Exception {
        final FlixEnrichmentOperator<Update, Lookup, Integer> operator = new FlixEnrichmentOperator<>(
                u -> Integer.parseInt(u.payload), new CursedIntSerializer(), Harnesses.LOOKUP_SERIALIZER,
                LookupKind.EXACT, null, 0, 1000, 0, FlushPolicy.TIMER,
                IndexSettings.defaults().withBackend(Backend.CPU).withThreads(1),
                FlixEnrichment.REJECTED);
        try (var harness = Harnesses.harness(operator, 1, 0)) {
            harness.open();
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "1")));
            harness.processElement1(new StreamRecord<>(Update.upsert(2, "13")));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 2, 2)));
            harness.processElement2(new StreamRecord<>(new Lookup(1, 1, 1)));
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(List.of(new Enriched<>(new Lookup(1, 1, 1), LookupKind.EXACT, 1, null, null)),
                    new ArrayList<>(harness.extractOutputValues()));
            final List<StreamRecord<Rejected>> rejected =
                    new ArrayList<>(harness.getSideOutput(FlixEnrichment.REJECTED));
            assertEquals(1, rejected.size());
            assertTrue(rejected.get(0).getValue().reason.contains("key 2 does not deserialize")
                    && rejected.get(0).getValue().reason.contains("13 is unlucky"), rejected.get(0).getValue().reason);
        }
    }

    /** Integers (4 bytes, stored inline), except that 13 serializes but does not deserialize. */
    public static final class CursedIntSerializer extends TypeSerializer<Integer> {
        @Override public boolean isImmutableType() { return true; }
        @Override public TypeSerializer<Integer> duplicate() { return this; }
        @Override public Integer createInstance() { return 0; }
        @Override public Integer copy(Integer from) { return from; }
        @Override public Integer copy(Integer from, Integer reuse) { return from; }
        @Override public int getLength() { return 4; }
        @Override public void serialize(Integer record, DataOutputView target) throws IOException {
            target.writeInt(record);
        }
        @Override public Integer deserialize(DataInputView source) throws IOException {
            final int value = source.readInt();
            if (value == 13) {
                throw new IllegalArgumentException("13 is unlucky");
            }
            return value;
        }
        @Override public Integer deserialize(Integer reuse, DataInputView source) throws IOException {
            return deserialize(source);
        }
        @Override public void copy(DataInputView source, DataOutputView target) throws IOException {
            target.writeInt(source.readInt());
        }
        @Override public boolean equals(Object obj) { return obj instanceof CursedIntSerializer; }
        @Override public int hashCode() { return 13; }
        @Override public TypeSerializerSnapshot<Integer> snapshotConfiguration() {
            throw new UnsupportedOperationException("not snapshotted here");
        }
    }
}
