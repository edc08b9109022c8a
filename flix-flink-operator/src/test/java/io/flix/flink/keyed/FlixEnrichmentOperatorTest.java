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

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Flush triggers, results of each kind, bad records. */
class FlixEnrichmentOperatorTest {

    private static KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>> open(
            FlixEnrichmentOperator<Update, Lookup, String> operator) throws Exception {
        final KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>> harness =
                Harnesses.harness(operator, 1, 0);
        harness.open();
        return harness;
    }

    private static List<Enriched<Lookup, String>> values(
            KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>> harness) {
        return new ArrayList<>(harness.extractOutputValues());
    }

    @Test
    void flushesWhenTheBatchIsFull() throws Exception {
        try (var harness = open(Harnesses.operator(LookupKind.EXACT, 3, 0))) {
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "a")));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 1, 1), 5));
            assertTrue(harness.getOutput().isEmpty(), "two records wait for a third");
            harness.processElement2(new StreamRecord<>(new Lookup(1, 2, 2)));
            final List<Object> out = new ArrayList<>(harness.getOutput());
            assertEquals(List.of(
                    new StreamRecord<>(new Enriched<>(new Lookup(0, 1, 1), LookupKind.EXACT, "a", null, null), 5),
                    new StreamRecord<>(new Enriched<>(new Lookup(1, 2, 2), LookupKind.EXACT, null, null, null))),
                    out);
        }
    }

    @Test
    void flushesWhenTheIntervalPasses() throws Exception {
        try (var harness = open(Harnesses.operator(LookupKind.EXACT, 1000, 50))) {
            harness.setProcessingTime(100);
            harness.processElement1(new StreamRecord<>(Update.upsert(7, "x")));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 7, 7)));
            harness.setProcessingTime(149);
            assertTrue(harness.getOutput().isEmpty());
            harness.setProcessingTime(150);
            assertEquals(List.of(new Enriched<>(new Lookup(0, 7, 7), LookupKind.EXACT, "x", null, null)),
                    values(harness));
        }
    }

    @Test
    void aBatchStartedAfterASizeFlushWaitsItsOwnInterval() throws Exception {
        try (var harness = open(Harnesses.operator(LookupKind.EXACT, 2, 50))) {
            harness.setProcessingTime(0);
            harness.processElement2(new StreamRecord<>(new Lookup(0, 7, 7))); // batch due at 50
            harness.setProcessingTime(10);
            harness.processElement2(new StreamRecord<>(new Lookup(1, 7, 7))); // full: flushed
            assertEquals(2, harness.getOutput().size());
            harness.setProcessingTime(20);
            harness.processElement2(new StreamRecord<>(new Lookup(2, 7, 7))); // a new batch, due at 70
            harness.setProcessingTime(50);
            assertEquals(2, harness.getOutput().size(), "the first batch's timer does not cut the second short");
            harness.setProcessingTime(69);
            assertEquals(2, harness.getOutput().size());
            harness.setProcessingTime(70);
            assertEquals(3, harness.getOutput().size());
        }
    }

    @Test
    void flushesBeforeForwardingAWatermark() throws Exception {
        try (var harness = open(Harnesses.operator(LookupKind.EXACT, 1000, 0))) {
            harness.processElement2(new StreamRecord<>(new Lookup(0, 7, 7), 10));
            harness.processBothWatermarks(new Watermark(20));
            final List<Object> out = new ArrayList<>(harness.getOutput());
            assertEquals(2, out.size());
            assertInstanceOf(StreamRecord.class, out.get(0));
            assertEquals(new Watermark(20), out.get(1));
        }
    }

    @Test
    void flushesBeforeACheckpointBarrierAndAtTheEnd() throws Exception {
        final var harness = open(Harnesses.operator(LookupKind.EXACT, 1000, 0));
        harness.processElement2(new StreamRecord<>(new Lookup(0, 7, 7)));
        harness.prepareSnapshotPreBarrier(1);
        assertEquals(1, harness.getOutput().size());
        harness.processElement2(new StreamRecord<>(new Lookup(1, 7, 7)));
        harness.close(); // finish() flushes
        assertEquals(2, harness.getOutput().size());
    }

    @Test
    void floorCeilingAndRangeReportTheKeysFound() throws Exception {
        final FlixEnrichmentOperator<Update, Lookup, String> floor = Harnesses.operator(LookupKind.FLOOR, 1000, 0);
        try (var harness = open(floor)) {
            harness.processElement1(new StreamRecord<>(Update.upsert(10, "ten")));
            harness.processElement1(new StreamRecord<>(Update.upsert(20, "twenty")));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 15, 15)));
            harness.processElement2(new StreamRecord<>(new Lookup(1, 5, 5)));
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(List.of(new Enriched<>(new Lookup(0, 15, 15), LookupKind.FLOOR, "ten", 10L, null),
                    new Enriched<>(new Lookup(1, 5, 5), LookupKind.FLOOR, null, null, null)), values(harness));
        }
        try (var harness = open(Harnesses.operator(LookupKind.RANGE, 1000, 0))) {
            for (long k = 1; k <= 9; k++) {
                harness.processElement1(new StreamRecord<>(Update.upsert(k * 10, "v" + k)));
            }
            harness.processElement2(new StreamRecord<>(new Lookup(0, 15, 1000)));
            harness.processElement2(new StreamRecord<>(new Lookup(1, 91, 1000)));
            harness.prepareSnapshotPreBarrier(1);
            final List<Enriched<Lookup, String>> out = values(harness);
            assertEquals(List.of(new Match<>(20, "v2"), new Match<>(30, "v3"), new Match<>(40, "v4")),
                    out.get(0).matches, "limit " + Harnesses.RANGE_LIMIT + " in key order");
            assertEquals(List.of(), out.get(1).matches);
        }
    }

    @Test
    void badRecordsGoToTheSideOutputAndTheJobGoesOn() throws Exception {
        final FlixEnrichmentOperator<Update, Lookup, String> operator = new FlixEnrichmentOperator<>(
                u -> {
                    if ("throw".equals(u.payload)) {
                        throw new IllegalStateException("no payload");
                    }
                    return u.payload;
                }, PoisonStringSerializer.INSTANCE, Harnesses.LOOKUP_SERIALIZER, LookupKind.EXACT, null, 0, 1000, 0,
                FlushPolicy.TIMER,
                IndexSettings.defaults().withBackend(Backend.CPU).withThreads(1), FlixEnrichment.REJECTED);
        try (var harness = open(operator)) {
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "one")));
            harness.processElement1(new StreamRecord<>(Update.upsert(1, PoisonStringSerializer.POISON), 3));
            harness.processElement1(new StreamRecord<>(Update.upsert(2, "throw")));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 1, 1)));
            harness.processElement2(new StreamRecord<>(new Lookup(1, 2, 2)));
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(List.of(new Enriched<>(new Lookup(0, 1, 1), LookupKind.EXACT, "one", null, null),
                    new Enriched<>(new Lookup(1, 2, 2), LookupKind.EXACT, null, null, null)), values(harness),
                    "rejected updates change nothing");
            final List<StreamRecord<Rejected>> rejected = new ArrayList<>(harness.getSideOutput(FlixEnrichment.REJECTED));
            assertEquals(2, rejected.size());
            assertEquals("update", rejected.get(0).getValue().input);
            assertTrue(rejected.get(0).getValue().reason.contains("serialize"), rejected.get(0).getValue().reason);
            assertEquals(3, rejected.get(0).getTimestamp());
            assertTrue(rejected.get(1).getValue().reason.contains("payload function"));
            assertEquals(1, operator.liveRows());
        }
    }

    @Test
    void recordsWithoutAKeyAreRejectedByTheOperatorAndKeyZeroStillWorks() throws Exception {
        // keyed as FlixEnrichment keys them: records without a key take the unkeyed route, key 0
        final KeySelector<Update, Long> updateKey = u -> u.key == -1 ? null : u.key;
        final KeySelector<Lookup, Long> lookupKey = l -> {
            if (l.key == -2) {
                throw new IllegalStateException("no key here");
            }
            return l.key == -1 ? null : l.key;
        };
        try (var harness = new KeyedTwoInputStreamOperatorTestHarness<>(Harnesses.operator(LookupKind.EXACT, 1000, 0),
                new IndexKey<>(updateKey), new IndexKey<>(lookupKey), Types.LONG, Harnesses.MAX_PARALLELISM, 1, 0)) {
            harness.open();
            harness.processElement1(new StreamRecord<>(Update.upsert(0, "zero")));
            harness.processElement1(new StreamRecord<>(Update.upsert(-1, "no key"), 4));
            harness.processElement2(new StreamRecord<>(new Lookup(0, -1, -1)));
            harness.processElement2(new StreamRecord<>(new Lookup(1, -2, -2)));
            harness.processElement2(new StreamRecord<>(new Lookup(2, 0, 0)));
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(List.of(new Enriched<>(new Lookup(2, 0, 0), LookupKind.EXACT, "zero", null, null)),
                    new ArrayList<>(harness.extractOutputValues()));
            final List<StreamRecord<Rejected>> rejected = new ArrayList<>(harness.getSideOutput(FlixEnrichment.REJECTED));
            assertEquals(3, rejected.size(), rejected.toString());
            assertEquals("update", rejected.get(0).getValue().input);
            assertEquals("the key is null", rejected.get(0).getValue().reason);
            assertEquals(4, rejected.get(0).getTimestamp());
            assertEquals("lookup", rejected.get(1).getValue().input);
            assertEquals("the key is null", rejected.get(1).getValue().reason);
            assertTrue(rejected.get(2).getValue().reason.startsWith("the key function failed")
                    && rejected.get(2).getValue().reason.contains("no key here"), rejected.get(2).getValue().reason);
            assertEquals(new Lookup(1, -2, -2).toString(), rejected.get(2).getValue().record);
        }
    }

    @Test
    void aRangeEndingBelowItsKeyIsRejected() throws Exception {
        try (var harness = open(Harnesses.operator(LookupKind.RANGE, 1000, 0))) {
            harness.processElement2(new StreamRecord<>(new Lookup(0, 15, 14)));
            harness.prepareSnapshotPreBarrier(1);
            assertTrue(harness.extractOutputValues().isEmpty());
            assertEquals(1, harness.getSideOutput(FlixEnrichment.REJECTED).size());
        }
    }

    @Test
    void payloadsComeBackAsFreshCopies() throws Exception {
        try (var harness = open(Harnesses.operator(LookupKind.EXACT, 1000, 0))) {
            final String payload = new String("abc".toCharArray());
            harness.processElement1(new StreamRecord<>(Update.upsert(1, payload)));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 1, 1)));
            harness.processElement2(new StreamRecord<>(new Lookup(1, 1, 1)));
            harness.prepareSnapshotPreBarrier(1);
            final List<Enriched<Lookup, String>> out = values(harness);
            assertEquals("abc", out.get(0).payload);
            assertTrue(out.get(0).payload != payload && out.get(0).payload != out.get(1).payload);
        }
    }

    @Test
    void settingsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> Harnesses.operator(LookupKind.EXACT, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> Harnesses.operator(LookupKind.EXACT, 1, -1));
        assertThrows(IllegalArgumentException.class, () -> new FlixEnrichmentOperator<Update, Lookup, String>(
                u -> u.payload, PoisonStringSerializer.INSTANCE, Harnesses.LOOKUP_SERIALIZER, LookupKind.RANGE,
                null, 3, 10, 0, FlushPolicy.TIMER, IndexSettings.defaults(), FlixEnrichment.REJECTED));
    }
}
