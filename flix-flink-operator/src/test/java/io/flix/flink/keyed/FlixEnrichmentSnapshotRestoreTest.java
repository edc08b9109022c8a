package io.flix.flink.keyed;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.FlushPolicy;
import io.flix.flink.IndexSettings;
import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Update;
import io.flix.flink.payload.InlinePayloads;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Snapshot in the middle of a script, restore into a fresh operator, play the rest: the restored operator's output
 * equals the output of the one that never stopped, for every lookup kind.
 */
class FlixEnrichmentSnapshotRestoreTest {

    @ParameterizedTest(name = "{0}, seed {1}, {2} keys, batch size {3}")
    @CsvSource({
            "EXACT, 1, 50, 10", "EXACT, 2, 5000, 1000", "EXACT, 3, 3, 1",
            "FLOOR, 4, 300, 50", "CEILING, 5, 300, 7", "RANGE, 6, 300, 100"})
    void restoredOperatorContinuesExactlyLikeTheOriginal(LookupKind kind, long seed, int keyCount, int batchSize)
            throws Exception {
        final Script script = Script.random(seed, keyCount, 6000);
        final int cut = script.steps.size() / 2;

        final KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>> original =
                Harnesses.harness(Harnesses.operator(kind, batchSize, 10), 1, 0);
        original.open();
        script.play(original, 0, cut);
        original.prepareSnapshotPreBarrier(1);
        final OperatorSubtaskState state = original.snapshot(1, 1);
        final int before = original.getOutput().size();
        script.play(original, cut, script.steps.size());
        original.close();
        final List<Object> expected = new ArrayList<>(original.getOutput()).subList(before, original.getOutput().size());

        final FlixEnrichmentOperator<Update, Lookup, String> restoredOperator = Harnesses.operator(kind, batchSize, 10);
        final KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>> restored =
                Harnesses.harness(restoredOperator, 1, 0);
        restored.initializeState(state);
        restored.open();
        assertTrue(restoredOperator.indexSize() > 0, "the snapshot held keys");
        assertEquals(restoredOperator.indexSize(), restoredOperator.liveRows());
        script.play(restored, cut, script.steps.size());
        restored.close();
        assertTrue(expected.size() > 500);
        assertEquals(expected, new ArrayList<>(restored.getOutput()));
    }

    @ParameterizedTest(name = "{0}, seed {1}, batch size {2}")
    @CsvSource({"EXACT, 7, 10", "RANGE, 8, 100", "FLOOR, 9, 1"})
    void restoredInlinePayloadsKeepTheReservedBits(LookupKind kind, long seed, int batchSize) throws Exception {
        final Script script = Script.random(seed, 300, 6000);
        final int cut = script.steps.size() / 2;
        final KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, Long>> original =
                Harnesses.harness(inlineOperator(kind, batchSize), 1, 0);
        original.open();
        script.play(original, 0, cut);
        original.prepareSnapshotPreBarrier(1);
        final OperatorSubtaskState state = original.snapshot(1, 1);
        final int before = original.getOutput().size();
        script.play(original, cut, script.steps.size());
        original.close();
        final List<Object> expected = new ArrayList<>(original.getOutput()).subList(before, original.getOutput().size());

        final FlixEnrichmentOperator<Update, Lookup, Long> restoredOperator = inlineOperator(kind, batchSize);
        final KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, Long>> restored =
                Harnesses.harness(restoredOperator, 1, 0);
        restored.initializeState(state);
        restored.open();
        assertTrue(restoredOperator.escapedKeys() > 0, "the snapshot held payloads with the bits of NOT_FOUND");
        script.play(restored, cut, script.steps.size());
        restored.close();
        assertTrue(expected.size() > 500);
        assertEquals(expected, new ArrayList<>(restored.getOutput()));
    }

    /** Long payloads stored inline; a third have the bits of NOT_FOUND, a third those of the escape value. */
    private static FlixEnrichmentOperator<Update, Lookup, Long> inlineOperator(LookupKind kind, int batchSize) {
        return new FlixEnrichmentOperator<>(u -> {
            if (u.payload == null) {
                return null;
            }
            final long n = Long.parseLong(u.payload.substring(1));
            return n % 3 == 0 ? io.flix.index.FlixIndex.NOT_FOUND : n % 3 == 1 ? InlinePayloads.ESCAPED : n;
        }, org.apache.flink.api.common.typeutils.base.LongSerializer.INSTANCE, Harnesses.LOOKUP_SERIALIZER, kind,
                l -> l.hi, Harnesses.RANGE_LIMIT, batchSize, 10,
                FlushPolicy.TIMER, IndexSettings.defaults().withBackend(io.flix.index.Backend.CPU).withThreads(2),
                FlixEnrichment.REJECTED);
    }
}
