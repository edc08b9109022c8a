package io.flix.flink;

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
}
