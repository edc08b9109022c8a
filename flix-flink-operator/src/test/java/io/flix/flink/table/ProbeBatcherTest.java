package io.flix.flink.table;

import org.apache.flink.core.testutils.ManuallyTriggeredScheduledExecutorService;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Batches form on the size trigger and on a linger timer the test fires itself: nothing depends on timing. */
class ProbeBatcherTest {

    private final ManuallyTriggeredScheduledExecutorService timer = new ManuallyTriggeredScheduledExecutorService();
    private final List<List<Integer>> sent = new ArrayList<>();
    private final List<String> senders = new ArrayList<>();

    private ProbeBatcher<Integer> batcher(int batchSize) {
        return new ProbeBatcher<>(batchSize, 1_000_000, timer, (batch, firstNanos) -> {
            sent.add(batch);
            senders.add(Thread.currentThread().getName());
        });
    }

    @Test
    void aFullBatchIsSentByTheThreadThatFillsIt() {
        final ProbeBatcher<Integer> batcher = batcher(3);
        for (int probe = 0; probe < 7; probe++) {
            assertTrue(batcher.add(probe));
        }
        assertEquals(List.of(List.of(0, 1, 2), List.of(3, 4, 5)), sent);
        assertEquals(List.of(Thread.currentThread().getName(), Thread.currentThread().getName()), senders);
        assertEquals(3, timer.getAllScheduledTasks().size(), "one linger per batch started");
    }

    @Test
    void theLingerSendsWhatTheSizeTriggerDidNotAndOnlyThat() {
        final ProbeBatcher<Integer> batcher = batcher(3);
        for (int probe = 0; probe < 4; probe++) {
            batcher.add(probe);
        }
        timer.triggerScheduledTasks(); // the full batch's linger finds it sent; the second batch's sends it
        assertEquals(List.of(List.of(0, 1, 2), List.of(3)), sent);
        batcher.add(4);
        assertEquals(2, sent.size(), "a new batch waits for its own linger");
        timer.triggerScheduledTasks();
        assertEquals(List.of(List.of(0, 1, 2), List.of(3), List.of(4)), sent);
    }

    @Test
    void closeReturnsTheProbesNotSentAndRefusesLaterOnes() {
        final ProbeBatcher<Integer> batcher = batcher(3);
        batcher.add(0);
        batcher.add(1);
        assertEquals(List.of(0, 1), batcher.close());
        assertFalse(batcher.add(2));
        timer.triggerScheduledTasks(); // a linger after close sends nothing
        assertEquals(List.of(), sent);
        assertEquals(List.of(), batcher.close());
    }

    @Test
    void aBatchSizeBelowOneIsRefused() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> batcher(0));
        assertTrue(e.getMessage().contains("was 0"), e.getMessage());
    }
}
