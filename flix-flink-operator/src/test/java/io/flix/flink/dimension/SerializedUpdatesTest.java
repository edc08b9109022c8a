package io.flix.flink.dimension;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The updates a dimension applies: what they hold, and the payload bytes a reader bounds its batches by. */
class SerializedUpdatesTest {

    @Test
    void payloadBytesCountCopiedAndViewedUpsertsNotDeletesAndStartAgainAfterClear() {
        final SerializedUpdates updates = new SerializedUpdates(2);
        final SplittableRandom random = new SplittableRandom(11);
        final byte[] shared = new byte[64];
        for (int round = 0; round < 3; round++) {
            long bytes = 0;
            final int n = 1_000 + round * 500; // past the capacity and the copy buffer's first size
            for (int i = 0; i < n; i++) {
                final int length = random.nextInt(0, 40);
                final byte[] payload = new byte[length];
                random.nextBytes(payload);
                switch (i % 3) {
                    case 0 -> updates.upsert(i, payload, length);
                    case 1 -> updates.upsertView(i, shared, 3, length);
                    default -> updates.delete(i);
                }
                bytes += i % 3 == 2 ? 0 : length;
                if (i % 3 == 0) {
                    final byte[] held = new byte[length];
                    System.arraycopy(updates.bytes(i), updates.offset(i), held, 0, length);
                    assertArrayEquals(payload, held, "a copied upsert keeps its bytes");
                }
            }
            assertEquals(n, updates.size());
            assertEquals(bytes, updates.payloadBytes(), "round " + round);
            assertTrue(updates.isDelete(2) && !updates.isDelete(0));
            updates.clear();
            assertEquals(0, updates.size());
            assertEquals(0, updates.payloadBytes());
        }
    }

    /** Runs of updates on many arrays, copied and viewed in turn: each update still reads its own bytes at the end. */
    @Test
    void everyUpdateReadsItsOwnBytesAfterRunsOnManyArrays() {
        final SerializedUpdates updates = new SerializedUpdates(4);
        final SplittableRandom random = new SplittableRandom(5);
        for (int round = 0; round < 2; round++) {
            final int n = 3_000;
            final byte[][] expected = new byte[n][];
            byte[] block = new byte[0];
            int blockAt = 0;
            for (int i = 0; i < n; i++) {
                final int length = random.nextInt(0, 30);
                final byte[] payload = new byte[length];
                random.nextBytes(payload);
                final int kind = random.nextInt(5);
                if (kind == 0) {
                    updates.delete(i);
                    continue;
                }
                expected[i] = payload;
                if (kind == 1) {
                    updates.upsert(i, payload, length);
                } else {
                    if (blockAt + length > block.length || random.nextInt(20) == 0) { // a new block now and then
                        block = new byte[random.nextInt(40, 200)];
                        blockAt = random.nextInt(0, 5);
                    }
                    System.arraycopy(payload, 0, block, blockAt, length);
                    updates.upsertView(i, block, blockAt, length);
                    blockAt += length;
                }
            }
            assertEquals(n, updates.size());
            for (int i = 0; i < n; i++) {
                assertEquals(i, updates.key(i));
                if (expected[i] == null) {
                    assertTrue(updates.isDelete(i), "update " + i);
                    assertNull(updates.bytes(i), "a delete has no bytes");
                    continue;
                }
                assertFalse(updates.isDelete(i), "update " + i);
                assertEquals(expected[i].length, updates.length(i), "update " + i);
                final byte[] held = Arrays.copyOfRange(updates.bytes(i), updates.offset(i),
                        updates.offset(i) + updates.length(i));
                assertArrayEquals(expected[i], held, "update " + i + " of round " + round);
            }
            updates.clear();
        }
    }
}
