package io.flix.flink.shared;

import io.flix.flink.FlixEnrichment;
import io.flix.flink.PoisonStringSerializer;
import io.flix.flink.Rejected;
import io.flix.flink.dimension.SerializedUpdates;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The shared mode's update encoder: what its blocks hold, and when it sends them. */
class UpdateEncoderTest {

    /** An update of the tests: a key, and a payload or null for a delete. */
    record Update(long key, String payload) {
    }

    private static OneInputStreamOperatorTestHarness<Update, EncodedUpdates> harness(int blockUpdates,
                                                                                    long flushMillis,
                                                                                    TypeSerializer<String> serializer)
            throws Exception {
        final var harness = new OneInputStreamOperatorTestHarness<>(
                new UpdateEncoder<Update, String>(Update::key, Update::payload, serializer, blockUpdates, flushMillis,
                        FlixEnrichment.REJECTED));
        harness.open();
        return harness;
    }

    /** The updates the blocks sent so far hold, in order. */
    private static List<Update> decoded(OneInputStreamOperatorTestHarness<Update, EncodedUpdates> harness)
            throws IOException {
        final List<Update> updates = new ArrayList<>();
        for (EncodedUpdates block : harness.extractOutputValues()) {
            final SerializedUpdates decoded = new SerializedUpdates(1);
            block.decodeInto(decoded);
            assertEquals(block.count, decoded.size());
            for (int i = 0; i < decoded.size(); i++) {
                updates.add(new Update(decoded.key(i), decoded.isDelete(i) ? null
                        : StringSerializer.INSTANCE.deserialize(new DataInputDeserializer(decoded.bytes(i),
                                decoded.offset(i), decoded.length(i)))));
            }
        }
        return updates;
    }

    private static List<Integer> blockSizes(OneInputStreamOperatorTestHarness<Update, EncodedUpdates> harness) {
        return harness.extractOutputValues().stream().map(b -> b.count).toList();
    }

    @Test
    void blocksHoldEveryUpdateInOrderUpToTheirSize() throws Exception {
        final SplittableRandom random = new SplittableRandom(7);
        final List<Update> sent = new ArrayList<>();
        try (var harness = harness(100, 0, StringSerializer.INSTANCE)) {
            for (int i = 0; i < 1050; i++) {
                final long key = i % 10 == 0 ? Long.MIN_VALUE + i : i % 10 == 1 ? Long.MAX_VALUE - i : random.nextLong();
                final Update update = new Update(key, random.nextInt(4) == 0 ? null
                        : i % 7 == 0 ? "" : "payload-" + "x".repeat(random.nextInt(40)) + i);
                sent.add(update);
                harness.processElement(new StreamRecord<>(update));
            }
            assertEquals(10, blockSizes(harness).size(), "full blocks are sent, the rest held");
            harness.endInput();
            assertEquals(sent, decoded(harness));
            final List<Integer> sizes = blockSizes(harness);
            assertEquals(11, sizes.size());
            assertTrue(sizes.subList(0, 10).stream().allMatch(s -> s == 100), sizes.toString());
            assertEquals(50, sizes.get(10));
        }
    }

    @Test
    void aBlockIsSentAtItsByteLimit() throws Exception {
        final String large = "y".repeat(UpdateEncoder.BLOCK_BYTES / 4);
        try (var harness = harness(4096, 0, StringSerializer.INSTANCE)) {
            for (int i = 0; i < 4; i++) {
                harness.processElement(new StreamRecord<>(new Update(i, large)));
            }
            assertEquals(List.of(4), blockSizes(harness), "four quarters and their headers pass the limit");
        }
    }

    @Test
    void nothingHeldCrossesAWatermarkABarrierOrTheEnd() throws Exception {
        try (var harness = harness(1000, 0, StringSerializer.INSTANCE)) {
            harness.processElement(new StreamRecord<>(new Update(1, "a"), 5));
            harness.processWatermark(new Watermark(10));
            final List<Object> output = new ArrayList<>(harness.getOutput());
            assertEquals(2, output.size());
            assertInstanceOf(StreamRecord.class, output.get(0), "the block is sent before the watermark");
            assertEquals(new Watermark(10), output.get(1));

            harness.processElement(new StreamRecord<>(new Update(2, "b")));
            harness.prepareSnapshotPreBarrier(1);
            assertEquals(List.of(1, 1), blockSizes(harness), "sent before the barrier");

            harness.processElement(new StreamRecord<>(new Update(3, null)));
            harness.endInput();
            assertEquals(List.of(new Update(1, "a"), new Update(2, "b"), new Update(3, null)), decoded(harness));
        }
    }

    @Test
    void aBlockIsSentWhenTheFlushIntervalHasPassedSinceItsFirstUpdate() throws Exception {
        try (var harness = harness(1000, 100, StringSerializer.INSTANCE)) {
            harness.setProcessingTime(0);
            harness.processElement(new StreamRecord<>(new Update(1, "a")));
            harness.setProcessingTime(60);
            harness.processElement(new StreamRecord<>(new Update(2, "b")));
            harness.setProcessingTime(99);
            assertEquals(List.of(), blockSizes(harness));
            harness.setProcessingTime(100);
            assertEquals(List.of(2), blockSizes(harness));
        }
    }

    @Test
    void aRejectedUpdateLeavesNoBytesInTheBlock() throws Exception {
        try (var harness = harness(1000, 0, PoisonStringSerializer.INSTANCE)) {
            harness.processElement(new StreamRecord<>(new Update(1, "a")));
            harness.processElement(new StreamRecord<>(new Update(2, PoisonStringSerializer.POISON)));
            harness.processElement(new StreamRecord<>(new Update(3, "c")));
            harness.endInput();
            assertEquals(List.of(new Update(1, "a"), new Update(3, "c")), decoded(harness));
            final ConcurrentLinkedQueue<StreamRecord<Rejected>> rejected =
                    harness.getSideOutput(FlixEnrichment.REJECTED);
            assertEquals(1, rejected.size());
            assertTrue(rejected.peek().getValue().toString().contains("cannot serialize " + PoisonStringSerializer.POISON),
                    rejected.peek().getValue().toString());
        }
    }

    @Test
    void aMalformedBlockIsRefusedNamingWhere() {
        final EncodedUpdates cut = new EncodedUpdates(2, new byte[] {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 'a'});
        final IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> cut.decodeInto(new SerializedUpdates(2)));
        assertTrue(e.getMessage().contains("update 0 of a block of 2"), e.getMessage());
    }
}
