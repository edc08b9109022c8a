package io.flix.examples;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.core.io.InputStatus;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GeneratedSourceTest {

    /** A reader that emits the numbers 0, 1, 2, ... and counts its polls. */
    private static final class Counting implements SourceReader<Long, NumberSequenceSplit> {
        final AtomicInteger polls = new AtomicInteger();
        final CompletableFuture<Void> available = CompletableFuture.completedFuture(null);
        long next;

        @Override
        public void start() {
        }

        @Override
        public InputStatus pollNext(ReaderOutput<Long> output) {
            polls.incrementAndGet();
            output.collect(next++);
            return InputStatus.MORE_AVAILABLE;
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return available;
        }

        @Override
        public void addSplits(List<NumberSequenceSplit> splits) {
        }

        @Override
        public void notifyNoMoreSplits() {
        }

        @Override
        public List<NumberSequenceSplit> snapshotState(long checkpointId) {
            return List.of();
        }

        @Override
        public void close() {
        }
    }

    private static final class Collected implements ReaderOutput<Long> {
        final List<Long> records = new ArrayList<>();

        @Override
        public void collect(Long record) {
            records.add(record);
        }

        @Override
        public void collect(Long record, long timestamp) {
            records.add(record);
        }

        @Override
        public void emitWatermark(Watermark watermark) {
        }

        @Override
        public void markIdle() {
        }

        @Override
        public void markActive() {
        }

        @Override
        public SourceOutput<Long> createOutputForSplit(String splitId) {
            return this;
        }

        @Override
        public void releaseOutputForSplit(String splitId) {
        }
    }

    private static final CompletableFuture<Void>[] GATE = new CompletableFuture[1];

    @Test
    void nothingPassesUntilTheGateOpensThenEveryPollGoesToTheRecords() throws Exception {
        GATE[0] = new CompletableFuture<>();
        final Counting records = new Counting();
        final GeneratedSource.GatedReader<Long> reader = new GeneratedSource.GatedReader<>(records, () -> GATE[0]);
        final Collected out = new Collected();

        assertEquals(InputStatus.NOTHING_AVAILABLE, reader.pollNext(out));
        final CompletableFuture<Void> waiting = reader.isAvailable();
        assertFalse(waiting.isDone(), "available only once the gate opens");
        assertEquals(0, records.polls.get(), "the records are not asked before the gate opens");

        GATE[0].complete(null);
        assertTrue(waiting.isDone());
        for (int i = 0; i < 5; i++) {
            assertEquals(InputStatus.MORE_AVAILABLE, reader.pollNext(out), "no suspend between records");
        }
        assertEquals(List.of(0L, 1L, 2L, 3L, 4L), out.records);
        assertSame(records.available, reader.isAvailable(), "once open, the records' own availability");

        GATE[0] = new CompletableFuture<>();
        reader.pollNext(out);
        assertEquals(6, out.records.size(), "an open gate stays open for the reader, whatever the supplier says later");
    }

    @Test
    void aFailedGateWakesTheSourceAndFailsItWithTheGatesCause() {
        GATE[0] = new CompletableFuture<>();
        final Counting records = new Counting();
        final GeneratedSource.GatedReader<Long> reader = new GeneratedSource.GatedReader<>(records, () -> GATE[0]);
        final CompletableFuture<Void> waiting = reader.isAvailable();
        GATE[0].completeExceptionally(new IllegalStateException("the dimension did not load"));
        assertTrue(waiting.isDone(), "the task is woken to poll");
        final Exception e = assertThrows(Exception.class, () -> reader.pollNext(new Collected()));
        assertTrue(e.getCause() instanceof IllegalStateException
                && e.getCause().getMessage().equals("the dimension did not load"), e.toString());
        assertEquals(0, records.polls.get(), "no record passes a failed gate");
    }

    @Test
    void aSourceHoldsAtLeastOneRecord() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> GeneratedSource.of(i -> i, 0, Types.LONG));
        assertTrue(e.getMessage().contains("1 or more records, not 0"), e.getMessage());
        assertEquals(Types.LONG, GeneratedSource.of(i -> i, 3, Types.LONG).getProducedType());
    }
}
