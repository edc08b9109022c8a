package io.flix.flink.table;

import io.flix.flink.table.lookup.ProbeBatcher;
import org.apache.flink.core.testutils.ManuallyTriggeredScheduledExecutorService;
import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.Executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ProbeBatcher} under the load policy and the linger policy, with its dispatcher and its linger timer under the test's control:
 * nothing here depends on timing.
 */
class ProbeBatcherTest {

    /** Holds the batches handed to it until the test runs them. */
    private static final class HeldDispatcher implements Executor {
        final Deque<Runnable> held = new ArrayDeque<>();

        @Override
        public void execute(Runnable command) {
            held.add(command);
        }

        void runOne() {
            held.remove().run();
        }
    }

    private final HeldDispatcher dispatcher = new HeldDispatcher();
    private final ManuallyTriggeredScheduledExecutorService linger = new ManuallyTriggeredScheduledExecutorService();
    private final List<List<Integer>> sent = new ArrayList<>();

    private ProbeBatcher<Integer> batcher(int batchSize) {
        return new ProbeBatcher<>(batchSize, 1_000_000, linger, dispatcher,
                (batch, firstNanos) -> sent.add(List.copyOf(batch)));
    }

    @Test
    void aProbeAtIdleIsSentAtOnceAndTheOnesGatheredMeanwhileGoTogetherNext() {
        final ProbeBatcher<Integer> batcher = batcher(100);
        assertTrue(batcher.add(1));
        assertEquals(1, dispatcher.held.size(), "sent at once, on the dispatcher: no linger");
        assertEquals(0, linger.getAllScheduledTasks().size());
        assertEquals(1, batcher.inFlight());
        batcher.add(2);
        batcher.add(3);
        assertEquals(2, batcher.gathered(), "gathered while a batch is in flight");
        assertEquals(1, dispatcher.held.size());
        dispatcher.runOne();
        assertEquals(List.of(List.of(1)), sent);
        assertEquals(1, dispatcher.held.size(), "the gathered probes went next, together");
        assertEquals(0, batcher.gathered());
        dispatcher.runOne();
        assertEquals(List.of(List.of(1), List.of(2, 3)), sent);
        assertEquals(0, batcher.inFlight());
        batcher.add(4);
        assertEquals(1, dispatcher.held.size(), "idle again: sent at once");
        dispatcher.runOne();
        assertEquals(List.of(4), sent.get(2));
        assertTrue(batcher.close().isEmpty());
    }

    @Test
    void sizeAndLingerStayUpperBoundsWhileABatchIsInFlight() {
        final ProbeBatcher<Integer> batcher = batcher(3);
        batcher.add(1); // in flight on the dispatcher
        batcher.add(2);
        batcher.add(3);
        assertEquals(List.of(), sent);
        batcher.add(4); // the batch is full: sent on this thread, not waiting for the one in flight
        assertEquals(List.of(List.of(2, 3, 4)), sent);
        batcher.add(5);
        linger.triggerScheduledTasks(); // its first probe waited the linger: sent on the timer's thread
        assertEquals(List.of(List.of(2, 3, 4), List.of(5)), sent);
        dispatcher.runOne();
        assertEquals(List.of(List.of(2, 3, 4), List.of(5), List.of(1)), sent, "each probe sent once");
        assertEquals(0, batcher.inFlight());
        assertTrue(dispatcher.held.isEmpty(), "nothing was left to send");
    }

    @Test
    void closeUnderTheLoadPolicyLetsTheBatchInFlightFinish() {
        final ProbeBatcher<Integer> batcher = batcher(100);
        batcher.add(1);
        batcher.add(2);
        assertEquals(List.of(2), batcher.close());
        assertFalse(batcher.add(3));
        dispatcher.runOne();
        assertEquals(List.of(List.of(1)), sent, "the batch in flight completes; nothing follows it");
        assertTrue(dispatcher.held.isEmpty());
    }

    @Test
    void everyProbeIsSentOnceHoweverTheBatchesInterleave() {
        final ProbeBatcher<Integer> batcher = batcher(8);
        final java.util.Random random = new java.util.Random(39);
        for (int i = 0; i < 5_000; i++) {
            batcher.add(i);
            if (random.nextInt(4) == 0 && !dispatcher.held.isEmpty()) {
                dispatcher.runOne();
            }
            if (random.nextInt(50) == 0) {
                linger.triggerScheduledTasks();
            }
        }
        while (!dispatcher.held.isEmpty()) {
            dispatcher.runOne();
        }
        final List<Integer> all = new ArrayList<>();
        sent.forEach(all::addAll);
        all.addAll(batcher.close());
        all.sort(Integer::compare);
        for (int i = 0; i < 5_000; i++) {
            assertEquals(i, all.get(i));
        }
        assertEquals(5_000, all.size());
        for (List<Integer> batch : sent) {
            assertTrue(batch.size() <= 8, "at most batchSize: " + batch.size());
        }
    }

    // ---- the linger policy (no dispatcher): batches on size and linger only ----

    private final List<String> senders = new ArrayList<>();

    private ProbeBatcher<Integer> lingerBatcher(int batchSize) {
        return new ProbeBatcher<>(batchSize, 1_000_000, linger, (batch, firstNanos) -> {
            sent.add(batch);
            senders.add(Thread.currentThread().getName());
        });
    }

    @Test
    void aFullBatchIsSentByTheThreadThatFillsIt() {
        final ProbeBatcher<Integer> batcher = lingerBatcher(3);
        for (int probe = 0; probe < 7; probe++) {
            assertTrue(batcher.add(probe));
        }
        assertEquals(List.of(List.of(0, 1, 2), List.of(3, 4, 5)), sent);
        assertEquals(List.of(Thread.currentThread().getName(), Thread.currentThread().getName()), senders);
        assertEquals(3, linger.getAllScheduledTasks().size(), "one linger per batch started");
    }

    @Test
    void theLingerSendsWhatTheSizeTriggerDidNotAndOnlyThat() {
        final ProbeBatcher<Integer> batcher = lingerBatcher(3);
        for (int probe = 0; probe < 4; probe++) {
            batcher.add(probe);
        }
        linger.triggerScheduledTasks(); // the full batch's linger finds it sent; the second batch's sends it
        assertEquals(List.of(List.of(0, 1, 2), List.of(3)), sent);
        batcher.add(4);
        assertEquals(2, sent.size(), "a new batch waits for its own linger");
        linger.triggerScheduledTasks();
        assertEquals(List.of(List.of(0, 1, 2), List.of(3), List.of(4)), sent);
    }

    @Test
    void closeReturnsTheProbesNotSentAndRefusesLaterOnes() {
        final ProbeBatcher<Integer> batcher = lingerBatcher(3);
        batcher.add(0);
        batcher.add(1);
        assertEquals(List.of(0, 1), batcher.close());
        assertFalse(batcher.add(2));
        linger.triggerScheduledTasks(); // a linger after close sends nothing
        assertEquals(List.of(), sent);
        assertEquals(List.of(), batcher.close());
    }

    @Test
    void aBatchSizeBelowOneIsRefused() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> lingerBatcher(0));
        assertTrue(e.getMessage().contains("was 0"), e.getMessage());
    }
}
