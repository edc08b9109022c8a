package io.flix.flink.keyed;

import io.flix.flink.Enriched;
import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Update;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OperatorSnapshotUtil;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * State of format 1, written before the state held the payload serializer's snapshot (see {@link StateFixtures}),
 * restores at parallelism 1, 2 and 3 with the payload serializer of the job: every key with its payload, the
 * deleted keys absent.
 */
class FlixEnrichmentStateFormat1Test {

    @ParameterizedTest(name = "parallelism {0}")
    @ValueSource(ints = {1, 2, 3})
    void format1StringPayloadsRestore(int parallelism) throws Exception {
        assertRestores(StateFixtures.FORMAT1_STRINGS, parallelism,
                () -> Harnesses.operator(LookupKind.EXACT, 64, 0), StateFixtures.strings());
    }

    @ParameterizedTest(name = "parallelism {0}")
    @ValueSource(ints = {1, 2, 3})
    void format1InlineLongPayloadsRestore(int parallelism) throws Exception {
        assertRestores(StateFixtures.FORMAT1_LONGS, parallelism, StateFixtures::longOperator, StateFixtures.longs());
    }

    private static <P> void assertRestores(String fixture, int parallelism,
                                           Supplier<? extends TwoInputStreamOperator<Update, Lookup,
                                                   Enriched<Lookup, P>>> operators,
                                           Map<Long, P> expected) throws Exception {
        final OperatorSubtaskState state =
                OperatorSnapshotUtil.readStateHandle(StateFixtures.resource(fixture).toString());
        final Map<Long, P> found = new HashMap<>();
        long id = 0;
        for (int subtask = 0; subtask < parallelism; subtask++) {
            try (KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, P>> harness =
                         Harnesses.harness(operators.get(), parallelism, subtask)) {
                harness.initializeState(AbstractStreamOperatorTestHarness.repartitionOperatorState(state,
                        Harnesses.MAX_PARALLELISM, StateFixtures.FIXTURE_PARALLELISM, parallelism, subtask));
                harness.open();
                for (int i = 0; i < 400; i++) {
                    final long key = StateFixtures.key(i);
                    if (Harnesses.subtaskOf(key, parallelism) == subtask) {
                        harness.processElement2(new StreamRecord<>(new Lookup(id++, key, key)));
                    }
                }
                harness.prepareSnapshotPreBarrier(1);
                for (Enriched<Lookup, P> e : harness.extractOutputValues()) {
                    if (e.payload != null) {
                        found.put(e.event.key, e.payload);
                    }
                }
            }
        }
        assertEquals(400, id, "every key looked up once");
        assertEquals(expected, found);
    }
}
