package io.flix.flink.shared;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.FlushPolicy;
import io.flix.flink.LookupKind;
import io.flix.flink.Match;

import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.runtime.taskmanager.TaskManagerRuntimeInfo;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The shared mode's semantics under {@link FlushPolicy#TIMER} (a batch is answered on the task's thread, so a batch
 * of one answers at once and lookups can run from several test threads; {@link LoadFollowingLookupsTest} covers the
 * default policy), with the writer and the lookups of one task manager in harnesses: a lookup sees every
 * update applied before its micro-batch, in the update stream's order, and none still buffered; nothing buffered
 * crosses a watermark or a checkpoint barrier; and a lookup batch sees an update batch wholly or not at all, however
 * the threads interleave.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES) // a safety net: a lookup that never returns fails, not hangs
class SharedModeSemanticsTest {

    private static final long SAFETY_NET_SECONDS = 240;

    private static SharedLookupOperator<Long, String> lookups(String dimensionId, LookupKind kind, long rangeSpan,
                                                              int batchSize) {
        return new SharedLookupOperator<>(dimensionId, SimulatedJob.CPU, StringSerializer.INSTANCE,
                LongSerializer.INSTANCE, key -> key, kind, kind == LookupKind.RANGE ? key -> key + rangeSpan : null,
                10, batchSize, 0, TimeUnit.SECONDS.toMillis(SAFETY_NET_SECONDS), FlushPolicy.TIMER,
                FlixEnrichment.REJECTED);
    }

    /** The answer to one lookup, from a lookup operator whose batches hold one lookup. */
    private static Enriched<Long, String> answer(
            OneInputStreamOperatorTestHarness<Long, Enriched<Long, String>> harness, long key) throws Exception {
        harness.getOutput().clear();
        harness.processElement(new StreamRecord<>(key));
        final List<Enriched<Long, String>> out = harness.extractOutputValues();
        assertEquals(1, out.size(), "a batch of one is answered at once");
        return out.get(0);
    }

    private static String lookup(OneInputStreamOperatorTestHarness<Long, Enriched<Long, String>> harness, long key)
            throws Exception {
        return answer(harness, key).payload;
    }

    /** Writes the updates, and waits for a batch they filled to be applied (it is, on the writer's apply thread). */
    private static void write(WriterHarness writer, EncodedUpdates... updates)
            throws Exception {
        for (EncodedUpdates update : updates) {
            writer.processElement(new StreamRecord<>(update));
        }
        writer.awaitApplied();
    }

    @Test
    void aLookupSeesEveryUpdateAppliedBeforeItsBatchInTheUpdateStreamsOrder() throws Exception {
        final String dimensionId = "semantics-order";
        try (SimulatedJob job = new SimulatedJob()) {
            final TaskManagerRuntimeInfo taskManager = SimulatedJob.taskManager();
            final var writer = job.harness(SimulatedJob.writer(dimensionId, 3), taskManager, 1, 0);
            writer.open();
            final var lookups = job.harness(lookups(dimensionId, LookupKind.EXACT, 0, 1), taskManager, 1, 0);
            lookups.open();

            write(writer, SimulatedJob.upsert(1, "a"));
            assertNull(lookup(lookups, 1), "an update the applier still holds is not seen");
            write(writer, SimulatedJob.upsert(2, "x"), SimulatedJob.upsert(1, "b"));
            assertEquals("b", lookup(lookups, 1), "the batch applied; within it the later update of a key wins");
            assertEquals("x", lookup(lookups, 2));
            write(writer, SimulatedJob.delete(1), SimulatedJob.upsert(1, "c"), SimulatedJob.delete(1));
            assertNull(lookup(lookups, 1));
            write(writer, SimulatedJob.upsert(1, "d"), SimulatedJob.delete(1), SimulatedJob.upsert(1, "e"));
            assertEquals("e", lookup(lookups, 1));
            write(writer, SimulatedJob.delete(2), SimulatedJob.delete(2), SimulatedJob.upsert(3, "y"));
            assertNull(lookup(lookups, 2), "a delete of an absent key changes nothing");
            assertEquals("y", lookup(lookups, 3));
        }
    }

    @Test
    void nothingBufferedCrossesAWatermarkACheckpointBarrierOrTheEndOfInput() throws Exception {
        final String dimensionId = "semantics-barriers";
        try (SimulatedJob job = new SimulatedJob()) {
            final TaskManagerRuntimeInfo taskManager = SimulatedJob.taskManager();
            final DimensionWriterOperator<String> writerOperator = SimulatedJob.writer(dimensionId, 100);
            final var writer = job.harness(writerOperator, taskManager, 1, 0);
            writer.open();
            final SharedLookupOperator<Long, String> lookupOperator = lookups(dimensionId, LookupKind.EXACT, 0, 100);
            final var lookups = job.harness(lookupOperator, taskManager, 1, 0);
            lookups.open();
            final TaskManagerDimension<String> dimension = writerOperator.dimension();

            write(writer, SimulatedJob.upsert(5, "w"));
            assertEquals(0, dimension.size());
            writer.processWatermark(new Watermark(10));
            assertEquals(1, dimension.size(), "applied at the update stream's watermark");
            write(writer, SimulatedJob.upsert(6, "b"));
            writer.prepareSnapshotPreBarrier(1);
            assertEquals(2, dimension.size(), "applied before the barrier");
            write(writer, SimulatedJob.upsert(7, "f"));
            writer.endUpdates();
            assertEquals(3, dimension.size(), "applied at the end of the update stream");

            lookups.processElement(new StreamRecord<>(5L, 1));
            lookups.processElement(new StreamRecord<>(6L, 2));
            assertEquals(List.of(), new ArrayList<>(lookups.getOutput()));
            lookups.processWatermark(new Watermark(20));
            final List<Object> out = new ArrayList<>(lookups.getOutput());
            assertEquals(3, out.size(), out.toString());
            assertEquals("w", ((Enriched<?, ?>) assertInstanceOf(StreamRecord.class, out.get(0)).getValue()).payload);
            assertEquals(1, ((StreamRecord<?>) out.get(0)).getTimestamp());
            assertEquals("b", ((Enriched<?, ?>) ((StreamRecord<?>) out.get(1)).getValue()).payload);
            assertEquals(new Watermark(20), out.get(2), "answered before the watermark goes on");
            lookups.getOutput().clear();
            lookups.processElement(new StreamRecord<>(7L));
            lookups.prepareSnapshotPreBarrier(2);
            assertEquals(1, lookups.extractOutputValues().size(), "answered before the barrier");
            lookups.getOutput().clear();
            lookups.processElement(new StreamRecord<>(7L));
            assertEquals(1, lookupOperator.buffered());
            lookupOperator.finish();
            assertEquals("f", lookups.extractOutputValues().get(0).payload, "answered at the end of input");
        }
    }

    /**
     * Every update batch moves the pair (A, B) to the next version together, and moves the one key of the range
     * {@code [M, M + span]} one step up (a delete and an upsert). Two threads look up, each its own subtask on the
     * same task manager: both keys of the pair in one batch, and the range in a batch of its own. For every
     * interleaving of the three threads, a lookup batch runs between two update batches, so the pair answers one
     * version, the range exactly one key whose payload names its own position, and neither goes back.
     */
    @Test
    void aLookupBatchNeverSeesPartOfAnUpdateBatch() throws Exception {
        final String dimensionId = "semantics-atomic";
        final int versions = 20_000;
        final int lookupBatches = 20_000;
        final long a = -5;
        final long b = Long.MAX_VALUE;
        final long m = 1_000_000;
        final ExecutorService threads = Executors.newFixedThreadPool(3);
        try (SimulatedJob job = new SimulatedJob()) {
            final TaskManagerRuntimeInfo taskManager = SimulatedJob.taskManager();
            final var writer = job.harness(SimulatedJob.writer(dimensionId, 4), taskManager, 3, 0);
            writer.open();
            write(writer, SimulatedJob.upsert(a, "0"), SimulatedJob.upsert(b, "0"), SimulatedJob.upsert(m, "0"),
                    SimulatedJob.upsert(a, "0"));
            final var pairs = job.harness(lookups(dimensionId, LookupKind.EXACT, 0, 2), taskManager, 3, 1);
            pairs.open();
            final var ranges = job.harness(lookups(dimensionId, LookupKind.RANGE, versions + 1, 1), taskManager, 3, 2);
            ranges.open();

            final CompletableFuture<Void> updates = CompletableFuture.runAsync(() -> {
                try {
                    for (long v = 1; v <= versions; v++) {
                        final String version = Long.toString(v);
                        write(writer, SimulatedJob.upsert(a, version), SimulatedJob.upsert(b, version),
                                SimulatedJob.delete(m + v - 1), SimulatedJob.upsert(m + v, version));
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, threads);
            final CompletableFuture<List<String>> pairViolations = CompletableFuture.supplyAsync(() -> {
                final List<String> violations = new ArrayList<>();
                long last = 0;
                try {
                    for (int i = 0; i < lookupBatches; i++) {
                        pairs.processElement(new StreamRecord<>(a));
                        pairs.processElement(new StreamRecord<>(b));
                        final List<Enriched<Long, String>> out = pairs.extractOutputValues();
                        pairs.getOutput().clear();
                        if (out.size() != 2 || !out.get(0).payload.equals(out.get(1).payload)
                                || Long.parseLong(out.get(0).payload) < last) {
                            violations.add("batch " + i + ": " + out + " after version " + last);
                        } else {
                            last = Long.parseLong(out.get(0).payload);
                        }
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                return violations;
            }, threads);
            final CompletableFuture<List<String>> rangeViolations = CompletableFuture.supplyAsync(() -> {
                final List<String> violations = new ArrayList<>();
                long last = 0;
                try {
                    for (int i = 0; i < lookupBatches; i++) {
                        ranges.processElement(new StreamRecord<>(m));
                        final List<Enriched<Long, String>> out = ranges.extractOutputValues();
                        ranges.getOutput().clear();
                        final List<Match<String>> matches = out.get(0).matches;
                        final Match<String> only = matches.size() == 1 ? matches.get(0) : null;
                        if (only == null || only.key - m != Long.parseLong(only.payload) || only.key - m < last) {
                            violations.add("batch " + i + ": " + matches + " after version " + last);
                        } else {
                            last = only.key - m;
                        }
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                return violations;
            }, threads);

            updates.get(SAFETY_NET_SECONDS, TimeUnit.SECONDS);
            assertEquals(List.of(), pairViolations.get(SAFETY_NET_SECONDS, TimeUnit.SECONDS));
            assertEquals(List.of(), rangeViolations.get(SAFETY_NET_SECONDS, TimeUnit.SECONDS));
            assertEquals(Long.toString(versions), answer(ranges, m).matches.get(0).payload, "the last batch applied");
        } finally {
            threads.shutdownNow();
        }
    }
}
