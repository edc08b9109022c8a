package io.flix.flink.shared;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.flink.dimension.SerializedUpdates;

import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

/** The blocks' serializer: what it reads back, and the skipping of a writer that does not apply them. */
class EncodedUpdatesSerializerTest {

    @AfterEach
    void readOnThisThreadAgain() {
        EncodedUpdatesSerializer.skipBlocksOnThisThread(false);
    }

    @Test
    void blocksReadBackAsWrittenInASequence() throws IOException {
        final List<EncodedUpdates> blocks = randomBlocks(11, 40);
        final byte[] bytes = write(blocks);
        final DataInputDeserializer in = new DataInputDeserializer(bytes);
        for (EncodedUpdates block : blocks) {
            final EncodedUpdates read = EncodedUpdatesSerializer.INSTANCE.deserialize(in);
            assertEquals(block, read);
            assertEquals(decoded(block), decoded(read));
        }
        assertEquals(0, in.available());
    }

    @Test
    void aThreadThatSkipsReadsEachBlocksCountAndLandsOnTheNext() throws Exception {
        final List<EncodedUpdates> blocks = randomBlocks(12, 25);
        final byte[] bytes = write(blocks);
        EncodedUpdatesSerializer.skipBlocksOnThisThread(true);
        final DataInputDeserializer in = new DataInputDeserializer(bytes);
        for (EncodedUpdates block : blocks) {
            final EncodedUpdates read = EncodedUpdatesSerializer.INSTANCE.deserialize(in);
            assertEquals(block.count, read.count);
            assertNull(read.data);
        }
        assertEquals(0, in.available());
        // another thread reads the same bytes whole
        final List<EncodedUpdates> elsewhere = CompletableFuture.supplyAsync(() -> {
            try {
                final DataInputDeserializer again = new DataInputDeserializer(bytes);
                final List<EncodedUpdates> read = new ArrayList<>();
                for (int b = 0; b < blocks.size(); b++) {
                    read.add(EncodedUpdatesSerializer.INSTANCE.deserialize(again));
                }
                return read;
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }).get();
        assertEquals(blocks, elsewhere);
        // and this thread again, once it no longer skips
        EncodedUpdatesSerializer.skipBlocksOnThisThread(false);
        assertEquals(blocks.get(0), EncodedUpdatesSerializer.INSTANCE.deserialize(new DataInputDeserializer(bytes)));
    }

    @Test
    void aSkippedBlockIsNeitherAppliedNorSentOn() throws IOException {
        final byte[] bytes = write(List.of(randomBlock(new SplittableRandom(13), 50)));
        EncodedUpdatesSerializer.skipBlocksOnThisThread(true);
        final EncodedUpdates skipped = EncodedUpdatesSerializer.INSTANCE.deserialize(new DataInputDeserializer(bytes));
        final IllegalStateException decode = assertThrows(IllegalStateException.class,
                () -> skipped.decodeInto(new SerializedUpdates(64)));
        assertTrue(decode.getMessage().contains("without its bytes"), decode.getMessage());
        final IOException send = assertThrows(IOException.class,
                () -> EncodedUpdatesSerializer.INSTANCE.serialize(skipped, new DataOutputSerializer(64)));
        assertTrue(send.getMessage().contains("without its bytes"), send.getMessage());
    }

    @Test
    void bytesWithANegativeCountOrLengthAreRefused() throws IOException {
        final DataOutputSerializer out = new DataOutputSerializer(16);
        out.writeInt(3);
        out.writeInt(-5);
        final IOException e = assertThrows(IOException.class,
                () -> EncodedUpdatesSerializer.INSTANCE.deserialize(new DataInputDeserializer(out.getCopyOfBuffer())));
        assertTrue(e.getMessage().contains("-5 bytes"), e.getMessage());
        final IOException copy = assertThrows(IOException.class, () -> EncodedUpdatesSerializer.INSTANCE.copy(
                new DataInputDeserializer(out.getCopyOfBuffer()), new DataOutputSerializer(16)));
        assertTrue(copy.getMessage().contains("-5 bytes"), copy.getMessage());
    }

    /** {@code count} random blocks of up to 2,000 updates each, from {@code seed}. */
    private static List<EncodedUpdates> randomBlocks(long seed, int count) {
        final SplittableRandom random = new SplittableRandom(seed);
        final List<EncodedUpdates> blocks = new ArrayList<>();
        for (int b = 0; b < count; b++) {
            blocks.add(randomBlock(random, random.nextInt(0, 2000)));
        }
        return blocks;
    }

    /** A block of {@code updates} random upserts (payloads of 0 to 40 bytes) and deletes. */
    static EncodedUpdates randomBlock(SplittableRandom random, int updates) {
        final EncodedUpdates.Builder builder = new EncodedUpdates.Builder(64);
        try {
            for (int u = 0; u < updates; u++) {
                final long key = random.nextLong();
                if (random.nextInt(5) == 0) {
                    builder.delete(key);
                } else {
                    final byte[] payload = new byte[random.nextInt(41)];
                    random.nextBytes(payload);
                    builder.upsert(key, payload);
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return builder.build();
    }

    private static byte[] write(List<EncodedUpdates> blocks) throws IOException {
        final DataOutputSerializer out = new DataOutputSerializer(1024);
        for (EncodedUpdates block : blocks) {
            EncodedUpdatesSerializer.INSTANCE.serialize(block, out);
        }
        return out.getCopyOfBuffer();
    }

    /** The updates of a block as the writers see them: key, delete or payload bytes, in order. */
    private static List<String> decoded(EncodedUpdates block) {
        final SerializedUpdates updates = new SerializedUpdates(64);
        block.decodeInto(updates);
        final List<String> out = new ArrayList<>();
        for (int i = 0; i < updates.size(); i++) {
            final StringBuilder row = new StringBuilder().append(updates.key(i)).append(':');
            if (updates.isDelete(i)) {
                row.append("delete");
            } else {
                for (int b = 0; b < updates.length(i); b++) {
                    row.append(updates.bytes(i)[updates.offset(i) + b]).append(',');
                }
            }
            out.add(row.toString());
        }
        return out;
    }
}
