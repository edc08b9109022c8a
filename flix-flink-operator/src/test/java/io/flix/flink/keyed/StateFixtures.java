package io.flix.flink.keyed;

import io.flix.flink.FlixEnrichment;
import io.flix.flink.FlushPolicy;
import io.flix.flink.IndexSettings;
import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Update;
import io.flix.flink.payload.InlinePayloads;
import io.flix.index.Backend;
import io.flix.index.FlixIndex;

import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OperatorSnapshotUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * Snapshots kept as test resources, restored by the tests of older state formats, and the dimensions they hold.
 *
 * <p>{@code state/format1-*.snapshot} were written by the operator of commit 8290bb1, which wrote state format 1
 * (no payload serializer snapshot), through {@link #writeFixtures} at that commit: two subtasks (parallelism 2,
 * max parallelism {@link Harnesses#MAX_PARALLELISM}) repackaged into one state. Running {@link #writeFixtures} now
 * writes the current format, so the format 1 files must not be rewritten.
 */
final class StateFixtures {

    static final String FORMAT1_STRINGS = "state/format1-strings.snapshot";
    static final String FORMAT1_LONGS = "state/format1-longs.snapshot";
    static final int FIXTURE_PARALLELISM = 2;
    private static final int KEYS = 400;

    private StateFixtures() {
    }

    /** Key {@code i} of the fixtures: the extremes, zero, and keys spread over the key groups. */
    static long key(int i) {
        return switch (i) {
            case 0 -> Long.MIN_VALUE;
            case 1 -> Long.MAX_VALUE;
            case 2 -> 0L;
            default -> (i - 200L) * 0x9E3779B97F4AL;
        };
    }

    /** The String dimension: every key upserted twice (the second payload longer), every seventh deleted. */
    static Map<Long, String> strings() {
        final Map<Long, String> dimension = new TreeMap<>();
        for (int i = 0; i < KEYS; i++) {
            if (i % 7 != 3) {
                dimension.put(key(i), "second-" + i + "-" + "x".repeat(i % 50));
            }
        }
        return dimension;
    }

    /** The Long dimension, with payloads of the reserved bits (NOT_FOUND and the escape value) among them. */
    static Map<Long, Long> longs() {
        final Map<Long, Long> dimension = new TreeMap<>();
        for (int i = 0; i < KEYS; i++) {
            if (i % 7 != 3) {
                dimension.put(key(i), longPayload(i));
            }
        }
        return dimension;
    }

    private static long longPayload(int i) {
        return switch (i % 5) {
            case 0 -> FlixIndex.NOT_FOUND;
            case 1 -> InlinePayloads.ESCAPED;
            default -> i * 1_000_003L - 77;
        };
    }

    /** The path of a fixture in the test resources. */
    static Path resource(String name) throws Exception {
        return Path.of(StateFixtures.class.getClassLoader().getResource(name).toURI());
    }

    @Test
    @EnabledIfSystemProperty(named = "flix.writeStateFixtures", matches = "true")
    void writeFixtures() throws Exception {
        final Path dir = Path.of("src/test/resources/state");
        Files.createDirectories(dir);
        write(dir.resolve(Path.of(FORMAT1_STRINGS).getFileName()).toString(), false);
        write(dir.resolve(Path.of(FORMAT1_LONGS).getFileName()).toString(), true);
    }

    private static void write(String path, boolean longs) throws Exception {
        final OperatorSubtaskState[] snapshots = new OperatorSubtaskState[FIXTURE_PARALLELISM];
        for (int subtask = 0; subtask < FIXTURE_PARALLELISM; subtask++) {
            final org.apache.flink.streaming.api.operators.TwoInputStreamOperator<Update, Lookup, ?> operator =
                    longs ? longOperator() : Harnesses.operator(LookupKind.EXACT, 64, 0);
            try (var harness = Harnesses.harness(operator, FIXTURE_PARALLELISM, subtask)) {
                harness.open();
                for (int round = 0; round < 2; round++) {
                    for (int i = 0; i < KEYS; i++) {
                        final long key = key(i);
                        if (Harnesses.subtaskOf(key, FIXTURE_PARALLELISM) != subtask) {
                            continue;
                        }
                        final String payload = round == 0 ? "first-" + i
                                : "second-" + i + "-" + "x".repeat(i % 50);
                        harness.processElement1(new StreamRecord<>(Update.upsert(key, longs ? "n" + i : payload)));
                    }
                }
                for (int i = 3; i < KEYS; i += 7) {
                    if (Harnesses.subtaskOf(key(i), FIXTURE_PARALLELISM) == subtask) {
                        harness.processElement1(new StreamRecord<>(Update.delete(key(i))));
                    }
                }
                harness.prepareSnapshotPreBarrier(1);
                snapshots[subtask] = harness.snapshot(1, 1);
            }
        }
        OperatorSnapshotUtil.writeStateHandle(AbstractStreamOperatorTestHarness.repackageState(snapshots), path);
    }

    /** Long payloads (stored inline): update "n{i}" carries {@link #longPayload}(i). */
    static FlixEnrichmentOperator<Update, Lookup, Long> longOperator() {
        return new FlixEnrichmentOperator<>(u -> u.payload == null ? null
                : longPayload(Integer.parseInt(u.payload.substring(1))), LongSerializer.INSTANCE,
                Harnesses.LOOKUP_SERIALIZER, LookupKind.EXACT, l -> l.hi, Harnesses.RANGE_LIMIT, 64, 0,
                FlushPolicy.TIMER,
                IndexSettings.defaults().withBackend(Backend.CPU).withThreads(2), FlixEnrichment.REJECTED);
    }
}
