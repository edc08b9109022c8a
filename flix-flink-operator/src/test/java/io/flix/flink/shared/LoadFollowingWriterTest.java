package io.flix.flink.shared;

import io.flix.flink.FlushPolicy;
import io.flix.flink.HeldExecutor;

import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shared mode's applier under {@link FlushPolicy#LOAD}: with its apply thread under the test's control
 * ({@link HeldExecutor}) and the task's mails run by the test, so that nothing depends on timing.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES) // a safety net: a wait that never ends fails, not hangs
class LoadFollowingWriterTest {

    private static DimensionWriterOperator<String> writer(String id, int maxBatch, HeldExecutor applies) {
        // a batch size and an interval TIMER would wait for: LOAD must not
        final DimensionWriterOperator<String> writer = new DimensionWriterOperator<>(id, SimulatedJob.CPU,
                StringSerializer.INSTANCE, 1_000, 60_000, FlushPolicy.LOAD, maxBatch);
        writer.setApplyExecutor(applies);
        return writer;
    }

    private static void upsert(WriterHarness harness, long key) throws Exception {
        harness.processElement(new StreamRecord<>(SimulatedJob.upsert(key, "v" + key)));
    }

    @Test
    void anUpdateThatFindsTheApplierIdleIsAppliedAtOnce() throws Exception {
        try (SimulatedJob job = new SimulatedJob()) {
            final HeldExecutor applies = new HeldExecutor();
            applies.release();
            final DimensionWriterOperator<String> writer = writer("load-idle", 1_000, applies);
            final WriterHarness harness = job.harness(writer, SimulatedJob.taskManager(), 1, 0);
            harness.open();
            upsert(harness, 7);
            assertEquals(1, writer.dimension().size(), "applied without a full batch or a timer");
            upsert(harness, 8);
            assertEquals(2, writer.dimension().size());
            assertEquals(2, applies.executed(), "one apply per update while the applier is idle");
        }
    }

    @Test
    void updatesThatArriveDuringAnApplyGoTogetherWhenItEnds() throws Exception {
        try (SimulatedJob job = new SimulatedJob()) {
            final HeldExecutor applies = new HeldExecutor();
            final DimensionWriterOperator<String> writer = writer("load-gather", 1_000, applies);
            final WriterHarness harness = job.harness(writer, SimulatedJob.taskManager(), 1, 0);
            harness.open();
            upsert(harness, 1);
            assertEquals(1, applies.held(), "the first update went to the apply thread");
            for (long key = 2; key <= 4; key++) {
                upsert(harness, key);
            }
            assertEquals(1, applies.held(), "the updates that arrived meanwhile gather");
            assertEquals(0, writer.dimension().size());

            applies.runHeld();
            assertEquals(1, writer.dimension().size());
            assertEquals(0, applies.held(), "nothing more goes until the task's thread hears of the end");
            assertEquals(1, HeldExecutor.runMails(harness), "the end of the apply is one mail of the task");
            assertEquals(1, applies.held(), "the gathered updates went as one batch");
            applies.runHeld();
            assertEquals(4, writer.dimension().size());
            assertEquals(2, applies.executed());
            assertEquals(1, HeldExecutor.runMails(harness));
            assertEquals(0, applies.held(), "nothing was held, nothing more goes");
        }
    }

    @Test
    void anUpdateAfterTheApplyEndedTakesWhatGatheredBeforeTheMailRuns() throws Exception {
        try (SimulatedJob job = new SimulatedJob()) {
            final HeldExecutor applies = new HeldExecutor();
            final DimensionWriterOperator<String> writer = writer("load-before-mail", 2, applies);
            final WriterHarness harness = job.harness(writer, SimulatedJob.taskManager(), 1, 0);
            harness.open();
            upsert(harness, 1);
            upsert(harness, 2);
            applies.runHeld(); // the apply ends; its mail waits for the task's thread
            upsert(harness, 3);
            assertEquals(1, applies.held(), "updates 2 and 3 went as one batch, at most maxBatch");
            applies.runHeld();
            assertEquals(3, writer.dimension().size());
            HeldExecutor.runMails(harness);
            assertEquals(0, applies.held());
        }
    }

    @Test
    void aWatermarkABarrierAndTheEndOfTheUpdatesFindEveryUpdateApplied() throws Exception {
        try (SimulatedJob job = new SimulatedJob()) {
            final HeldExecutor applies = new HeldExecutor();
            final DimensionWriterOperator<String> writer = writer("load-drain", 1_000, applies);
            final WriterHarness harness = job.harness(writer, SimulatedJob.taskManager(), 1, 0);
            harness.open();
            upsert(harness, 1);
            upsert(harness, 2);
            applies.release(); // the held apply runs; what follows runs at once
            harness.processWatermark(new Watermark(5));
            assertEquals(2, writer.dimension().size(), "the gathered update was applied before the watermark");

            applies.hold();
            upsert(harness, 3);
            upsert(harness, 4);
            applies.release();
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(4, writer.dimension().size(), "the barrier found every update applied");

            applies.hold();
            upsert(harness, 5);
            upsert(harness, 6);
            applies.release();
            harness.endUpdates();
            assertEquals(6, writer.dimension().size(), "the end of the updates applied every one");
        }
    }

    @Test
    void aFailedApplyFailsTheTaskWhenItsMailRuns() throws Exception {
        try (SimulatedJob job = new SimulatedJob()) {
            final HeldExecutor applies = new HeldExecutor();
            final DimensionWriterOperator<Long> writer = new DimensionWriterOperator<>("load-failure",
                    SimulatedJob.CPU, org.apache.flink.api.common.typeutils.base.LongSerializer.INSTANCE, 1_000,
                    60_000, FlushPolicy.LOAD, 1_000);
            writer.setApplyExecutor(applies);
            final WriterHarness harness = job.harness(writer, SimulatedJob.taskManager(), 1, 0);
            harness.open();
            final EncodedUpdates.Builder bad = new EncodedUpdates.Builder(32);
            bad.upsert(5, new byte[] {1, 2, 3});
            harness.processElement(new StreamRecord<>(bad.build()));
            applies.runHeld();
            final Exception failure = assertThrows(Exception.class, () -> HeldExecutor.runMails(harness));
            assertTrue(failure.getMessage().contains("key 5 has a payload of 3 bytes"), failure.getMessage());
        }
    }

    @Test
    void aBatchMaximumLeftUnsetIsTheIndexSettingsChoiceOnTheWritersTaskManager() throws Exception {
        try (SimulatedJob job = new SimulatedJob()) {
            final int[][] threadsAndMaximum = {{1, 1 << 21}, {7, 1 << 21}, {8, 1 << 22}, {16, 1 << 22}};
            for (int[] expected : threadsAndMaximum) {
                final DimensionWriterOperator<String> writer = new DimensionWriterOperator<>(
                        "load-auto-" + expected[0], SimulatedJob.CPU.withThreads(expected[0]),
                        StringSerializer.INSTANCE, 1_000, 60_000, FlushPolicy.LOAD, 0);
                final HeldExecutor applies = new HeldExecutor();
                applies.release();
                writer.setApplyExecutor(applies);
                final WriterHarness harness = job.harness(writer, SimulatedJob.taskManager(), 1, 0);
                harness.open();
                assertEquals(expected[1], writer.loadBatchMax(), expected[0] + " update threads");
                upsert(harness, 3);
                assertEquals(1, writer.dimension().size());
            }
            final DimensionWriterOperator<String> set = writer("load-set", 5_000, new HeldExecutor());
            final WriterHarness harness = job.harness(set, SimulatedJob.taskManager(), 1, 0);
            harness.open();
            assertEquals(5_000, set.loadBatchMax(), "a maximum the job set is kept");
            final IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
                    () -> writer("load-negative", -1, new HeldExecutor()));
            assertTrue(negative.getMessage().contains("maxBatch >= 0"), negative.getMessage());
        }
    }
}
