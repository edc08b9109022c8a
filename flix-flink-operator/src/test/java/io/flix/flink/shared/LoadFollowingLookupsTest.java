package io.flix.flink.shared;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.FlushPolicy;
import io.flix.flink.HeldExecutor;
import io.flix.flink.LookupKind;

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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shared mode's lookups under {@link FlushPolicy#LOAD}, the default: with the worker under the test's control
 * ({@link HeldExecutor}), a lookup at idle is sent at once and alone, the ones that arrive while a call is in flight
 * go together next, a full buffer waits for the call in flight, a watermark, a barrier and the end of input wait for
 * everything, a failed index call fails the task, and close stops the worker. Nothing here depends on timing.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES) // a safety net: a wait that never ends fails, not hangs
class LoadFollowingLookupsTest {

    private static final long START_TIMEOUT_MILLIS = TimeUnit.MINUTES.toMillis(4);

    private static SharedLookupOperator<Long, String> lookups(String dimensionId, int batchSize,
                                                              long startTimeoutMillis) {
        return new SharedLookupOperator<>(dimensionId, SimulatedJob.CPU, StringSerializer.INSTANCE,
                LongSerializer.INSTANCE, key -> key, LookupKind.EXACT, null, 10, batchSize, 0, startTimeoutMillis,
                FlixEnrichment.REJECTED);
    }

    /** A writer on the task manager given, with the payloads "v" + key of keys 1 to {@code keys} applied. */
    /** A lookup operator and its opened harness, over a dimension of 100 keys. */
    private record Opened(SharedLookupOperator<Long, String> operator,
                          OneInputStreamOperatorTestHarness<Long, Enriched<Long, String>> harness) {
    }

    /** Loads a dimension of 100 keys, opens a lookup operator of {@code batchSize} with its calls on {@code worker}. */
    private static Opened openOnWorker(SimulatedJob job, String dimensionId, int batchSize, HeldExecutor worker)
            throws Exception {
        final TaskManagerRuntimeInfo taskManager = SimulatedJob.taskManager();
        dimensionOf(job, taskManager, dimensionId, 100);
        final SharedLookupOperator<Long, String> operator = lookups(dimensionId, batchSize, START_TIMEOUT_MILLIS);
        operator.setWorker(worker);
        final OneInputStreamOperatorTestHarness<Long, Enriched<Long, String>> harness =
                job.harness(operator, taskManager, 1, 0);
        harness.open();
        return new Opened(operator, harness);
    }

    private static void dimensionOf(SimulatedJob job, TaskManagerRuntimeInfo taskManager, String dimensionId,
                                    int keys) throws Exception {
        final WriterHarness writer = job.harness(SimulatedJob.writer(dimensionId, 1_000_000), taskManager, 1, 0);
        writer.open();
        for (long key = 1; key <= keys; key++) {
            writer.processElement(new StreamRecord<>(SimulatedJob.upsert(key, "v" + key)));
        }
        writer.processWatermark(new Watermark(0));
        writer.awaitApplied();
    }

    private static List<Long> lookedUp(OneInputStreamOperatorTestHarness<Long, Enriched<Long, String>> harness) {
        final List<Long> events = new ArrayList<>();
        for (Enriched<Long, String> out : harness.extractOutputValues()) {
            assertEquals(out.event > 0 && out.event <= 100 ? "v" + out.event : null, out.payload, out.toString());
            events.add(out.event);
        }
        return events;
    }

    @Test
    void aLookupAtIdleIsSentAloneAndTheOnesGatheredMeanwhileGoTogetherNext() throws Exception {
        final String dimensionId = "load-idle";
        final HeldExecutor worker = new HeldExecutor();
        try (SimulatedJob job = new SimulatedJob(); AutoCloseable released = worker::release) {
            final Opened opened = openOnWorker(job, dimensionId, 100, worker);
            final SharedLookupOperator<Long, String> operator = opened.operator();
            final var harness = opened.harness();

            harness.processElement(new StreamRecord<>(1L, 10));
            assertEquals(1, operator.inFlight(), "sent at once, alone: no timer");
            assertEquals(0, operator.buffered());
            harness.processElement(new StreamRecord<>(2L, 11));
            harness.processElement(new StreamRecord<>(300L, 12));
            harness.processElement(new StreamRecord<>(4L, 13));
            assertEquals(3, operator.buffered(), "gathered while the call is in flight");
            assertEquals(1, worker.held(), "one call in flight at a time");

            worker.runHeld();
            assertEquals(List.of(), lookedUp(harness), "results come out on the task's thread, not the worker's");
            assertEquals(1, HeldExecutor.runMails(harness));
            assertEquals(List.of(1L), lookedUp(harness));
            assertEquals(10, ((StreamRecord<?>) harness.getOutput().peek()).getTimestamp());
            assertEquals(3, operator.inFlight(), "the lookups gathered meanwhile go next, together");
            assertEquals(0, operator.buffered());

            worker.runHeld();
            HeldExecutor.runMails(harness);
            assertEquals(List.of(1L, 2L, 300L, 4L), lookedUp(harness), "in arrival order");
            assertEquals(0, operator.inFlight());

            harness.processElement(new StreamRecord<>(5L, 14));
            assertEquals(1, operator.inFlight(), "idle again: sent at once");
            assertEquals(3, worker.executed() + worker.held());
        }
    }

    @Test
    void aFullBufferWaitsForTheCallInFlight() throws Exception {
        final String dimensionId = "load-full";
        final HeldExecutor worker = new HeldExecutor();
        try (SimulatedJob job = new SimulatedJob(); AutoCloseable released = worker::release) {
            final Opened opened = openOnWorker(job, dimensionId, 2, worker);
            final SharedLookupOperator<Long, String> operator = opened.operator();
            final var harness = opened.harness();

            harness.processElement(new StreamRecord<>(1L));
            harness.processElement(new StreamRecord<>(2L));
            assertEquals(1, operator.buffered());
            worker.runHeld(); // the call completes; its mail waits for the task's thread
            assertEquals(List.of(), lookedUp(harness));
            harness.processElement(new StreamRecord<>(3L));
            // the buffer reached batchSize with a call in flight: the record's processing took the completion in
            assertEquals(List.of(1L), lookedUp(harness));
            assertEquals(2, operator.inFlight(), "the full buffer went next");
            assertEquals(0, operator.buffered());
            worker.runHeld();
            HeldExecutor.runMails(harness);
            assertEquals(List.of(1L, 2L, 3L), lookedUp(harness));
        }
    }

    @Test
    void aWatermarkABarrierAndTheEndOfInputWaitForEveryLookupBeforeGoingOn() throws Exception {
        final String dimensionId = "load-drain";
        final HeldExecutor worker = new HeldExecutor();
        try (SimulatedJob job = new SimulatedJob(); AutoCloseable released = worker::release) {
            final Opened opened = openOnWorker(job, dimensionId, 100, worker);
            final SharedLookupOperator<Long, String> operator = opened.operator();
            final var harness = opened.harness();

            harness.processElement(new StreamRecord<>(1L, 1));
            harness.processElement(new StreamRecord<>(2L, 2));
            harness.processElement(new StreamRecord<>(3L, 3));
            assertEquals(1, operator.inFlight());
            assertEquals(2, operator.buffered());
            worker.release();
            harness.processWatermark(new Watermark(5));
            final List<Object> out = new ArrayList<>(harness.getOutput());
            assertEquals(4, out.size(), out.toString());
            for (int i = 0; i < 3; i++) {
                final StreamRecord<?> record = assertInstanceOf(StreamRecord.class, out.get(i));
                assertEquals(i + 1L, ((Enriched<?, ?>) record.getValue()).event);
                assertEquals(i + 1L, record.getTimestamp());
            }
            assertEquals(new Watermark(5), out.get(3), "every lookup before the watermark came out before it");
            assertEquals(0, operator.inFlight() + operator.buffered());

            harness.getOutput().clear();
            harness.processElement(new StreamRecord<>(4L));
            harness.processElement(new StreamRecord<>(5L));
            assertEquals(1, operator.inFlight(), "completed on the worker, not yet on the task's thread");
            assertEquals(1, operator.buffered());
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(List.of(4L, 5L), lookedUp(harness), "answered before the barrier");
            assertEquals(0, operator.inFlight() + operator.buffered());

            harness.getOutput().clear();
            harness.processElement(new StreamRecord<>(6L));
            harness.processElement(new StreamRecord<>(7L));
            operator.finish();
            assertEquals(List.of(6L, 7L), lookedUp(harness), "answered at the end of input");
            assertEquals(0, operator.inFlight() + operator.buffered());
            assertEquals(0, HeldExecutor.runMails(harness), "no completion left behind");
        }
    }

    @Test
    void everyLookupComesOutOnceInArrivalOrderHoweverTheCallsInterleave() throws Exception {
        final String dimensionId = "load-order";
        final HeldExecutor worker = new HeldExecutor();
        final int batchSize = 16;
        try (SimulatedJob job = new SimulatedJob(); AutoCloseable released = worker::release) {
            final Opened opened = openOnWorker(job, dimensionId, batchSize, worker);
            final SharedLookupOperator<Long, String> operator = opened.operator();
            final var harness = opened.harness();

            final List<Long> sent = new ArrayList<>();
            final java.util.Random random = new java.util.Random(39);
            for (int i = 0; i < 2_000; i++) {
                final long key = 1 + random.nextInt(150); // a third absent
                sent.add(key);
                // the worker completes at a few points, the task takes the completions in at others
                // a record that fills the buffer waits for the call in flight: let the worker complete it first
                if (random.nextInt(5) == 0 || operator.buffered() == batchSize - 1) {
                    worker.runHeld();
                }
                if (random.nextInt(7) == 0) {
                    HeldExecutor.runMails(harness);
                }
                harness.processElement(new StreamRecord<>(key, i));
                assertTrue(operator.inFlight() <= batchSize && operator.buffered() <= batchSize);
                if (i % 500 == 0) {
                    worker.release();
                    harness.processWatermark(new Watermark(i));
                    worker.hold();
                }
            }
            worker.release();
            operator.finish();
            assertEquals(sent, lookedUp(harness), "each lookup once, in arrival order");
            long timestamp = 0;
            int watermarks = 0;
            for (Object out : harness.getOutput()) {
                if (out instanceof Watermark mark) {
                    assertEquals(timestamp, mark.getTimestamp(), "a watermark follows every lookup before it");
                    watermarks++;
                } else {
                    timestamp = ((StreamRecord<?>) out).getTimestamp();
                }
            }
            assertEquals(4, watermarks);
        }
    }

    @Test
    void anIndexCallThatFailsFailsTheTaskWithItsCause() throws Exception {
        final String dimensionId = "load-failure";
        final HeldExecutor worker = new HeldExecutor();
        try (SimulatedJob job = new SimulatedJob()) {
            final TaskManagerRuntimeInfo taskManager = SimulatedJob.taskManager();
            // no writer: the dimension never starts, so the first batch's call fails (after a 1 ms wait for it)
            final SharedLookupOperator<Long, String> operator = lookups(dimensionId, 100, 1);
            operator.setWorker(worker);
            final var harness = job.harness(operator, taskManager, 1, 0);
            harness.open();
            worker.release();
            harness.processElement(new StreamRecord<>(1L));
            final IllegalStateException failure = assertThrows(IllegalStateException.class,
                    () -> harness.processWatermark(new Watermark(1)));
            assertTrue(failure.getMessage().contains("lookup batch of 1 lookups on dimension load-failure failed "
                    + "in its index call"), failure.getMessage());
            assertInstanceOf(TimeoutException.class, failure.getCause());
            assertEquals(List.of(), new ArrayList<>(harness.getOutput()), "nothing goes on past the failure");
        }
    }

    @Test
    void theWorkerThreadAnswersAndStopsWithTheOperator() throws Exception {
        final String dimensionId = "load-threads";
        try (SimulatedJob job = new SimulatedJob()) {
            final TaskManagerRuntimeInfo taskManager = SimulatedJob.taskManager();
            dimensionOf(job, taskManager, dimensionId, 100);
            final SharedLookupOperator<Long, String> operator = lookups(dimensionId, 8, START_TIMEOUT_MILLIS);
            final var harness = job.harness(operator, taskManager, 1, 0);
            harness.open();
            final List<Long> sent = new ArrayList<>();
            for (long i = 0; i < 1_000; i++) {
                sent.add(i % 120);
                harness.processElement(new StreamRecord<>(i % 120));
            }
            operator.finish();
            assertEquals(sent, lookedUp(harness));
            assertTrue(workerThreads(dimensionId) == 1, "one worker thread per subtask");
            job.close(harness);
            assertEquals(0, workerThreads(dimensionId), "close stops the worker thread");
        }
    }

    private static int workerThreads(String dimensionId) {
        int found = 0;
        for (Thread thread : Thread.getAllStackTraces().keySet()) {
            if (thread.getName().startsWith("FliX lookups of dimension " + dimensionId + " ") && thread.isAlive()) {
                found++;
            }
        }
        return found;
    }

    @Test
    void theTimerPolicyAnswersOnTheTasksThread() throws Exception {
        final String dimensionId = "load-timer";
        try (SimulatedJob job = new SimulatedJob()) {
            final TaskManagerRuntimeInfo taskManager = SimulatedJob.taskManager();
            dimensionOf(job, taskManager, dimensionId, 100);
            final SharedLookupOperator<Long, String> operator = new SharedLookupOperator<>(dimensionId,
                    SimulatedJob.CPU, StringSerializer.INSTANCE, LongSerializer.INSTANCE, key -> key,
                    LookupKind.EXACT, null, 10, 2, 0, START_TIMEOUT_MILLIS, FlushPolicy.TIMER, FlixEnrichment.REJECTED);
            final var harness = job.harness(operator, taskManager, 1, 0);
            harness.open();
            harness.processElement(new StreamRecord<>(1L));
            assertEquals(1, operator.buffered(), "waits for its batch to fill");
            harness.processElement(new StreamRecord<>(2L));
            assertEquals(List.of(1L, 2L), lookedUp(harness));
            assertFalse(workerThreads(dimensionId) > 0, "no worker thread");
            assertNull(harness.getOutput().stream().filter(o -> o instanceof Watermark).findAny().orElse(null));
        }
    }
}
