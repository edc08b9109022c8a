package io.flix.flink.dimension;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
}
