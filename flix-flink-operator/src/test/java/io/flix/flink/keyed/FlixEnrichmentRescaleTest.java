package io.flix.flink.keyed;

import io.flix.flink.Enriched;
import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Update;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Restores the operator's raw keyed state at other parallelisms, 1 -> 2 -> 3 -> 1, changing the dimension at
 * every stage: each subtask holds exactly the keys of its key groups with their latest payloads, and no key is
 * lost or resurrected.
 */
class FlixEnrichmentRescaleTest {

    private static final int[] PARALLELISMS = {1, 2, 3, 1};

    @Test
    void rescale1To2To3To1KeepsEveryKey() throws Exception {
        final SplittableRandom random = new SplittableRandom(2026);
        final TreeMap<Long, String> oracle = new TreeMap<>();
        final List<Long> everSeen = new ArrayList<>();
        OperatorSubtaskState state = null;
        int previousParallelism = 1;
        for (int stage = 0; stage < PARALLELISMS.length; stage++) {
            final int parallelism = PARALLELISMS[stage];
            final List<KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>>>
                    harnesses = new ArrayList<>();
            final List<FlixEnrichmentOperator<Update, Lookup, String>> operators = new ArrayList<>();
            for (int subtask = 0; subtask < parallelism; subtask++) {
                final FlixEnrichmentOperator<Update, Lookup, String> operator =
                        Harnesses.operator(LookupKind.EXACT, 64, 0);
                final var harness = Harnesses.harness(operator, parallelism, subtask);
                if (state != null) {
                    harness.initializeState(AbstractStreamOperatorTestHarness.repartitionOperatorState(
                            state, Harnesses.MAX_PARALLELISM, previousParallelism, parallelism, subtask));
                }
                harness.open();
                harnesses.add(harness);
                operators.add(operator);
            }
            if (stage > 0) {
                assertEveryKeyWhereItBelongs(oracle, everSeen, parallelism, harnesses, operators);
            }
            // change the dimension: new keys, replaced payloads, deletes
            for (int i = 0; i < 3000; i++) {
                final long key = random.nextInt(4) == 0 && !everSeen.isEmpty()
                        ? everSeen.get(random.nextInt(everSeen.size())) : random.nextLong();
                final Update update = random.nextInt(4) == 0 ? Update.delete(key)
                        : Update.upsert(key, "s" + stage + "-" + i);
                everSeen.add(key);
                if (update.payload == null) {
                    oracle.remove(key);
                } else {
                    oracle.put(key, update.payload);
                }
                harnesses.get(Harnesses.subtaskOf(key, parallelism)).processElement1(new StreamRecord<>(update));
            }
            final OperatorSubtaskState[] snapshots = new OperatorSubtaskState[parallelism];
            for (int subtask = 0; subtask < parallelism; subtask++) {
                harnesses.get(subtask).prepareSnapshotPreBarrier(stage + 1);
                snapshots[subtask] = harnesses.get(subtask).snapshot(stage + 1, stage + 1);
                harnesses.get(subtask).close();
            }
            state = AbstractStreamOperatorTestHarness.repackageState(snapshots);
            previousParallelism = parallelism;
        }
        // a last restore at parallelism 1 holds the whole dimension
        final FlixEnrichmentOperator<Update, Lookup, String> last = Harnesses.operator(LookupKind.EXACT, 64, 0);
        final var harness = Harnesses.harness(last, 1, 0);
        harness.initializeState(AbstractStreamOperatorTestHarness.repartitionOperatorState(
                state, Harnesses.MAX_PARALLELISM, previousParallelism, 1, 0));
        harness.open();
        assertEveryKeyWhereItBelongs(oracle, everSeen, 1, List.of(harness), List.of(last));
        assertEquals(oracle.size(), last.indexSize());
        harness.close();
    }

    private static void assertEveryKeyWhereItBelongs(
            TreeMap<Long, String> oracle, List<Long> everSeen, int parallelism,
            List<KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>>> harnesses,
            List<FlixEnrichmentOperator<Update, Lookup, String>> operators) throws Exception {
        final int[] expectedSizes = new int[parallelism];
        for (long key : oracle.keySet()) {
            expectedSizes[Harnesses.subtaskOf(key, parallelism)]++;
        }
        for (int subtask = 0; subtask < parallelism; subtask++) {
            assertEquals(expectedSizes[subtask], operators.get(subtask).indexSize(),
                    "keys of subtask " + subtask + " of " + parallelism);
        }
        // every key ever written, present or deleted, reads back as the oracle says
        final Map<Long, String> found = new HashMap<>();
        long id = 0;
        for (long key : everSeen) {
            harnesses.get(Harnesses.subtaskOf(key, parallelism))
                    .processElement2(new StreamRecord<>(new Lookup(id++, key, key)));
        }
        for (var harness : harnesses) {
            harness.prepareSnapshotPreBarrier(0);
            for (Enriched<Lookup, String> e : harness.extractOutputValues()) {
                found.put(e.event.key, e.payload);
            }
            harness.getOutput().clear();
        }
        assertEquals(new HashMap<>(everSeen.stream().distinct().collect(
                HashMap<Long, String>::new, (m, k) -> m.put(k, oracle.get(k)), HashMap::putAll)), found);
    }
}
