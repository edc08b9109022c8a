package io.flix.flink.keyed;

import io.flix.flink.Enriched;
import io.flix.flink.FlushPolicy;
import io.flix.flink.HeldExecutor;
import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Update;

import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The keyed operator under {@link FlushPolicy#LOAD}: with the worker under the test's control ({@link HeldExecutor}),
 * a record at idle is sent at once and alone, the updates and lookups that arrive while a call is in flight go
 * together next (held back to grow while more input is queued, at most the flush interval) (updates serialized into the payload store meanwhile, rows freed only once their batch ran), a full
 * buffer waits for the call in flight, a watermark, a barrier and the end of input wait for everything, a snapshot
 * holds every record before it, a failed index call fails the task, and close stops the worker. Nothing here depends
 * on timing.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES) // a safety net: a wait that never ends fails, not hangs
class LoadFollowingEnrichmentTest {

    private record Opened(FlixEnrichmentOperator<Update, Lookup, String> operator,
                          KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>>
                                  harness) {
    }

    private static Opened open(int batchSize, HeldExecutor worker) throws Exception {
        final FlixEnrichmentOperator<Update, Lookup, String> operator =
                Harnesses.operator(LookupKind.EXACT, batchSize, 0, FlushPolicy.LOAD);
        if (worker != null) {
            operator.setWorker(worker);
        }
        final var harness = Harnesses.harness(operator, 1, 0);
        harness.open();
        return new Opened(operator, harness);
    }

    private static List<String> answers(
            KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, String>> harness) {
        final List<String> out = new ArrayList<>();
        for (Enriched<Lookup, String> e : harness.extractOutputValues()) {
            out.add(e.event.id + "=" + e.payload);
        }
        return out;
    }

    private static StreamRecord<Lookup> lookup(long id, long key) {
        return new StreamRecord<>(new Lookup(id, key, key), id);
    }

    @Test
    void aRecordAtIdleIsSentAloneAndTheOnesGatheredMeanwhileGoTogetherNext() throws Exception {
        final HeldExecutor worker = new HeldExecutor();
        final Opened opened = open(100, worker);
        try (var harness = opened.harness(); AutoCloseable released = worker::release) {
            final var operator = opened.operator();
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "a")));
            assertEquals(1, operator.inFlight(), "sent at once, alone: no timer");
            assertEquals(0, operator.buffered());

            harness.processElement2(lookup(10, 1));
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "b")));
            harness.processElement2(lookup(11, 1));
            harness.processElement1(new StreamRecord<>(Update.delete(1)));
            harness.processElement2(lookup(12, 1));
            assertEquals(5, operator.buffered(), "gathered while the call is in flight");
            assertEquals(1, worker.held(), "one call in flight at a time");

            worker.runHeld();
            assertEquals(1, HeldExecutor.runMails(harness), "the completion is one mail of the task");
            assertEquals(5, operator.inFlight(), "the records gathered meanwhile go next, together");
            assertEquals(List.of(), answers(harness));

            worker.runHeld();
            HeldExecutor.runMails(harness);
            assertEquals(List.of("10=a", "11=b", "12=null"), answers(harness),
                    "each lookup sees the updates that arrived before it, in arrival order");
            assertEquals(0, operator.inFlight() + operator.buffered());
            assertEquals(0, operator.indexSize());
            assertEquals(0, operator.liveRows(), "the rows of a and b are freed once their batches ran");

            harness.processElement2(lookup(13, 1));
            assertEquals(1, operator.inFlight(), "idle again: sent at once");
            assertEquals(3, worker.executed() + worker.held());
        }
    }

    @Test
    void rowsSupersededByTheBatchInFlightAreFreedOnlyOnceItRan() throws Exception {
        final HeldExecutor worker = new HeldExecutor();
        final Opened opened = open(100, worker);
        try (var harness = opened.harness(); AutoCloseable released = worker::release) {
            final var operator = opened.operator();
            worker.release();
            for (long key = 1; key <= 4; key++) {
                harness.processElement1(new StreamRecord<>(Update.upsert(key, "v" + key)));
            }
            HeldExecutor.runMails(harness);
            assertEquals(4, operator.liveRows());
            worker.hold();

            harness.processElement1(new StreamRecord<>(Update.upsert(1, "w1"))); // in flight, supersedes v1's row
            harness.processElement1(new StreamRecord<>(Update.upsert(2, "w2"))); // gathered, supersedes v2's row
            harness.processElement2(lookup(20, 1));
            harness.processElement2(lookup(21, 2));
            assertEquals(6, operator.liveRows(), "nothing freed while its batch has not run");
            worker.runHeld();
            HeldExecutor.runMails(harness);
            assertEquals(5, operator.liveRows(), "v1's row freed; v2's waits for the batch in flight");
            worker.runHeld();
            HeldExecutor.runMails(harness);
            assertEquals(List.of("20=w1", "21=w2"), answers(harness));
            assertEquals(4, operator.liveRows());
            assertEquals(4, operator.indexSize());
        }
    }

    @Test
    void aFullBufferWaitsForTheCallInFlight() throws Exception {
        final HeldExecutor worker = new HeldExecutor();
        final Opened opened = open(2, worker);
        try (var harness = opened.harness(); AutoCloseable released = worker::release) {
            final var operator = opened.operator();
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "a")));
            harness.processElement2(lookup(1, 1));
            assertEquals(1, operator.buffered());
            worker.runHeld(); // the call completes; its mail waits for the task's thread
            harness.processElement2(lookup(2, 1));
            // the buffer reached batchSize with a call in flight: the record's processing took the completion in
            assertEquals(2, operator.inFlight(), "the full buffer went next");
            assertEquals(0, operator.buffered());
            worker.runHeld();
            HeldExecutor.runMails(harness);
            assertEquals(List.of("1=a", "2=a"), answers(harness));
        }
    }

    @Test
    void aWatermarkABarrierASnapshotAndTheEndOfInputWaitForEveryRecordBeforeGoingOn() throws Exception {
        final HeldExecutor worker = new HeldExecutor();
        final Opened opened = open(100, worker);
        try (var harness = opened.harness(); AutoCloseable released = worker::release) {
            final var operator = opened.operator();
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "a"), 1));
            harness.processElement2(lookup(2, 1));
            harness.processElement2(lookup(3, 1));
            assertEquals(1, operator.inFlight());
            assertEquals(2, operator.buffered());
            worker.release();
            harness.processBothWatermarks(new Watermark(5));
            final List<Object> out = new ArrayList<>(harness.getOutput());
            assertEquals(3, out.size(), out.toString());
            for (int i = 0; i < 2; i++) {
                final StreamRecord<?> record = assertInstanceOf(StreamRecord.class, out.get(i));
                assertEquals(i + 2L, ((Enriched<?, ?>) record.getValue()).event instanceof Lookup l ? l.id : -1);
                assertEquals(i + 2L, record.getTimestamp());
            }
            assertEquals(new Watermark(5), out.get(2), "every lookup before the watermark came out before it");
            assertEquals(0, operator.inFlight() + operator.buffered());

            harness.getOutput().clear();
            worker.hold();
            harness.processElement1(new StreamRecord<>(Update.upsert(2, "b")));
            harness.processElement2(lookup(4, 2));
            worker.runHeld();
            assertEquals(1, operator.inFlight(), "completed on the worker, not yet on the task's thread");
            assertEquals(1, operator.buffered());
            worker.release();
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(List.of("4=b"), answers(harness), "answered before the barrier");
            assertEquals(0, operator.inFlight() + operator.buffered());

            harness.getOutput().clear();
            worker.hold();
            harness.processElement1(new StreamRecord<>(Update.upsert(3, "c")));
            harness.processElement2(lookup(5, 3));
            worker.release();
            // a snapshot taken without the barrier's preparation (as a harness may) holds both updates
            final var snapshot = harness.snapshot(2, 2);
            assertEquals(List.of("5=c"), answers(harness));
            assertEquals(3, operator.indexSize());

            harness.getOutput().clear();
            worker.hold();
            harness.processElement2(lookup(6, 3));
            harness.processElement2(lookup(7, 9));
            worker.release();
            operator.finish();
            assertEquals(List.of("6=c", "7=null"), answers(harness), "answered at the end of input");
            assertEquals(0, operator.inFlight() + operator.buffered());
            assertEquals(0, HeldExecutor.runMails(harness), "no completion left behind");

            final FlixEnrichmentOperator<Update, Lookup, String> restoredOperator =
                    Harnesses.operator(LookupKind.EXACT, 100, 0, FlushPolicy.LOAD);
            try (var restored = Harnesses.harness(restoredOperator, 1, 0)) {
                restored.initializeState(snapshot);
                restored.open();
                restored.processElement2(lookup(8, 1));
                restored.processElement2(lookup(9, 2));
                restored.processElement2(lookup(10, 3));
                restoredOperator.finish();
                assertEquals(List.of("8=a", "9=b", "10=c"), answers(restored));
            }
        }
    }

    @Test
    void whileMoreInputIsQueuedABatchGrowsUntilItIsFullOrTheQueueRunsDry() throws Exception {
        final HeldExecutor worker = new HeldExecutor();
        final boolean[] queued = {true};
        final FlixEnrichmentOperator<Update, Lookup, String> operator =
                Harnesses.operator(LookupKind.EXACT, 4, 0, FlushPolicy.LOAD);
        operator.setWorker(worker);
        operator.setMoreInputQueued(() -> queued[0]);
        try (var harness = Harnesses.harness(operator, 1, 0); AutoCloseable released = worker::release) {
            harness.open();
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "a")));
            harness.processElement2(lookup(1, 1));
            harness.processElement2(lookup(2, 1));
            assertEquals(0, operator.inFlight(), "input queued behind: the batch waits to grow");
            assertEquals(3, operator.buffered());
            harness.processElement2(lookup(3, 1));
            assertEquals(4, operator.inFlight(), "full: sent");

            harness.processElement2(lookup(4, 1));
            harness.processElement2(lookup(5, 2));
            worker.runHeld();
            HeldExecutor.runMails(harness);
            assertEquals(List.of("1=a", "2=a", "3=a"), answers(harness));
            assertEquals(0, operator.inFlight(), "completed with input still queued: the gathered batch is held");
            assertEquals(2, operator.buffered());

            queued[0] = false;
            harness.processElement2(lookup(6, 1));
            assertEquals(3, operator.inFlight(), "the queue ran dry: sent at once, not full");
            worker.runHeld();
            HeldExecutor.runMails(harness);
            assertEquals(List.of("1=a", "2=a", "3=a", "4=a", "5=null", "6=a"), answers(harness));
        }
    }

    @Test
    void theFlushIntervalBoundsHowLongAHeldBatchWaits() throws Exception {
        final HeldExecutor worker = new HeldExecutor();
        final FlixEnrichmentOperator<Update, Lookup, String> operator =
                Harnesses.operator(LookupKind.EXACT, 100, 50, FlushPolicy.LOAD);
        operator.setWorker(worker);
        operator.setMoreInputQueued(() -> true); // never runs dry: only the interval sends a batch early
        try (var harness = Harnesses.harness(operator, 1, 0); AutoCloseable released = worker::release) {
            harness.open();
            harness.setProcessingTime(0);
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "a")));
            harness.processElement2(lookup(1, 1));
            harness.setProcessingTime(49);
            assertEquals(0, operator.inFlight());
            harness.setProcessingTime(50);
            assertEquals(2, operator.inFlight(), "due: sent with nothing in flight");

            harness.setProcessingTime(60);
            harness.processElement2(lookup(2, 1)); // gathered at 60, due at 110, while the call is in flight
            harness.setProcessingTime(110);
            assertEquals(1, operator.buffered(), "due while a call is in flight: waits for it");
            worker.runHeld();
            HeldExecutor.runMails(harness);
            assertEquals(1, operator.inFlight(), "sent on completion, though input is still queued");
            worker.runHeld();
            HeldExecutor.runMails(harness);
            assertEquals(List.of("1=a", "2=a"), answers(harness));
        }
    }

    @Test
    void anIndexCallThatFailsFailsTheTaskWithItsCause() throws Exception {
        final HeldExecutor worker = new HeldExecutor();
        final Opened opened = open(100, worker);
        try (var harness = opened.harness()) {
            final var operator = opened.operator();
            worker.release();
            harness.processElement1(new StreamRecord<>(Update.upsert(1, "a")));
            HeldExecutor.runMails(harness);
            harness.getOutput().clear();
            operator.closeIndex(); // the index call of the next batch throws
            harness.processElement2(lookup(1, 1));
            final IllegalStateException failure = assertThrows(IllegalStateException.class,
                    () -> harness.processBothWatermarks(new Watermark(1)));
            assertTrue(failure.getMessage().contains("a FliX enrichment batch of 1 lookups and 0 updates failed in "
                    + "its index call"), failure.getMessage());
            assertTrue(failure.getCause() != null, "the cause is kept");
            assertEquals(List.of(), new ArrayList<>(harness.getOutput()), "nothing goes on past the failure");
        }
    }

    @Test
    void theWorkerThreadRunsTheCallsAndStopsWithTheOperator() throws Exception {
        final Opened opened = open(8, null);
        final var harness = opened.harness();
        final var operator = opened.operator();
        final List<String> expected = new ArrayList<>();
        for (long i = 0; i < 1_000; i++) {
            final long key = i % 50;
            if (i % 3 == 0) {
                harness.processElement1(new StreamRecord<>(Update.upsert(key, "v" + i)));
            } else {
                harness.processElement2(lookup(i, key));
            }
        }
        operator.finish();
        // the same records one at a time
        final java.util.Map<Long, String> oneAtATime = new java.util.HashMap<>();
        for (long i = 0; i < 1_000; i++) {
            if (i % 3 == 0) {
                oneAtATime.put(i % 50, "v" + i);
            } else {
                expected.add(i + "=" + oneAtATime.get(i % 50));
            }
        }
        assertEquals(expected, answers(harness));
        assertEquals(1, workerThreads(), "one worker thread per subtask");
        harness.close();
        assertEquals(0, workerThreads(), "close stops the worker thread");
    }

    private static int workerThreads() {
        int found = 0;
        for (Thread thread : Thread.getAllStackTraces().keySet()) {
            if (thread.getName().startsWith("FliX enrichment index calls (") && thread.isAlive()) {
                found++;
            }
        }
        return found;
    }
}
