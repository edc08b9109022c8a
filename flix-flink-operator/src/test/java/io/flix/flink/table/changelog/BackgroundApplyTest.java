package io.flix.flink.table.changelog;

import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.table.snapshot.SnapshotDirectory;
import io.flix.flink.table.snapshot.SnapshotManifest;
import io.flix.flink.table.snapshot.SnapshotWriter;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

class BackgroundApplyTest {

    /** Records what is applied and told, in order; a batch whose first key is {@link #FAILING} fails. */
    private static final class RecordingTarget implements ChangelogTarget {
        static final long FAILING = -1;
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        volatile CountDownLatch applyStarted = new CountDownLatch(0);
        volatile CountDownLatch applyMayEnd = new CountDownLatch(0);

        @Override
        public void apply(SerializedUpdates updates) throws IOException {
            applyStarted.countDown();
            try {
                applyMayEnd.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            if (updates.size() > 0 && updates.key(0) == FAILING) {
                throw new IOException("the index refused the batch");
            }
            final StringBuilder keys = new StringBuilder("apply");
            for (int i = 0; i < updates.size(); i++) {
                keys.append(' ').append(updates.key(i));
            }
            events.add(keys.toString());
        }

        @Override
        public void appliedThrough(Map<Integer, Long> offsets) {
            events.add("through " + offsets);
        }

        @Override
        public void bootstrapApplied() {
        }

        @Override
        public Duration bootstrapTimeLeft() {
            return Duration.ofHours(1);
        }

        @Override
        public Exception bootstrapTimeout() {
            return new IllegalStateException("timeout");
        }

        @Override
        public SnapshotWriter snapshots() {
            return null;
        }

        @Override
        public void loadSnapshot(SnapshotDirectory directory, SnapshotManifest manifest) {
        }

        @Override
        public void readingFrom(String topicId, Map<Integer, Long> offsets, String wholeTopicReason) {
        }

        @Override
        public void fail(Throwable cause) {
        }

        @Override
        public boolean isClosing() {
            return false;
        }

        @Override
        public String describe() {
            return "test";
        }
    }

    private static SerializedUpdates fill(SerializedUpdates batch, long... keys) {
        for (long key : keys) {
            batch.upsert(key, new byte[] {(byte) key}, 1);
        }
        return batch;
    }

    @Test
    void batchesAreAppliedInOrderEachWithTheOffsetsAsTheyWereWhenHandedOver() throws Exception {
        final RecordingTarget target = new RecordingTarget();
        final Map<Integer, Long> offsets = new HashMap<>();
        try (BackgroundApply background = new BackgroundApply(target, "test-apply")) {
            SerializedUpdates batch = new SerializedUpdates(4);
            for (int round = 0; round < 5; round++) {
                fill(batch, round * 10L, round * 10L + 1);
                offsets.put(0, round * 2L + 2);
                final SerializedUpdates handed = batch;
                batch = background.hand(batch, offsets);
                assertNotSame(handed, batch, "the reader fills another holder while one is applied");
                assertEquals(0, batch.size(), "the holder to fill next is empty");
                offsets.put(0, -1L); // changed after the hand-over: not what that batch is told
            }
            background.await();
        }
        final List<String> expected = new ArrayList<>();
        for (int round = 0; round < 5; round++) {
            expected.add("apply " + round * 10 + " " + (round * 10 + 1));
            expected.add("through {0=" + (round * 2 + 2) + "}");
        }
        assertEquals(expected, target.events);
    }

    @Test
    void withoutOffsetsNothingIsToldAndTheHoldersTakeTurns() throws Exception {
        final RecordingTarget target = new RecordingTarget();
        try (BackgroundApply background = new BackgroundApply(target, "test-apply")) {
            final SerializedUpdates first = fill(new SerializedUpdates(4), 1);
            final SerializedUpdates second = fill(background.hand(first, Map.of()), 2);
            final SerializedUpdates third = background.hand(second, Map.of());
            assertSame(first, third, "the first holder comes back once it is applied, cleared");
            assertEquals(0, third.size());
            background.await();
        }
        assertEquals(List.of("apply 1", "apply 2"), target.events);
    }

    @Test
    void aFailedApplyIsThrownAtTheNextHandOverAndNothingAfterItIsApplied() throws Exception {
        final RecordingTarget target = new RecordingTarget();
        try (BackgroundApply background = new BackgroundApply(target, "test-apply")) {
            final SerializedUpdates next = background.hand(fill(new SerializedUpdates(4), RecordingTarget.FAILING),
                    Map.of(0, 5L));
            final IOException thrown = assertThrows(IOException.class,
                    () -> background.hand(fill(next, 7), Map.of(0, 6L)));
            assertEquals("the index refused the batch", thrown.getMessage());
            background.await(); // nothing in flight after the failure was thrown
        }
        assertEquals(List.of(), target.events, "neither the failed batch's offsets nor the next batch");
    }

    @Test
    void awaitThrowsAFailedApply() throws Exception {
        final RecordingTarget target = new RecordingTarget();
        try (BackgroundApply background = new BackgroundApply(target, "test-apply")) {
            background.hand(fill(new SerializedUpdates(4), RecordingTarget.FAILING), Map.of());
            assertThrows(IOException.class, background::await);
        }
    }

    @Test
    void closeReturnsOnlyOnceTheBatchBeingAppliedIsApplied() throws Exception {
        final RecordingTarget target = new RecordingTarget();
        target.applyStarted = new CountDownLatch(1);
        target.applyMayEnd = new CountDownLatch(1);
        final BackgroundApply background = new BackgroundApply(target, "test-apply");
        background.hand(fill(new SerializedUpdates(4), 3), Map.of(1, 9L));
        target.applyStarted.await();
        final Thread release = new Thread(target.applyMayEnd::countDown);
        release.start();
        background.close();
        assertEquals(List.of("apply 3", "through {1=9}"), target.events,
                "close waited for the batch being applied and what it tells");
        release.join();
    }
}
