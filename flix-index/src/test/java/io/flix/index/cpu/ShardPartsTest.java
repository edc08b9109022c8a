package io.flix.index.cpu;

import io.flix.index.FlixIndex;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A batch cut into key-range parts: each part in batch order, a reserved value refused, the parts kept for reuse. */
class ShardPartsTest {

    private static final ShardParts.Runner IN_TURN = (pieces, body) -> {
        for (int p = 0; p < pieces; p++) {
            body.accept(p);
        }
    };

    private static RangeRouter ranges(int shards) {
        final long[] bounds = new long[shards];
        bounds[0] = Long.MIN_VALUE;
        for (int s = 1; s < shards; s++) {
            bounds[s] = Long.MIN_VALUE + (-1L >>> 1) / shards * 2 * s; // even over the key space
        }
        return new RangeRouter(bounds);
    }

    /** A load's batches of up to the kept size reuse the parts' arrays; a larger batch's parts are let go. */
    @Test
    void theCutKeepsItsPartsForABatchOfTheKeptSizeAndLetsLargerOnesGo() {
        final int shards = 256;
        final RangeRouter ranges = ranges(shards);
        final ShardParts p = new ShardParts();
        final SplittableRandom random = new SplittableRandom(8);
        final int n = CpuFlixIndex.SCRATCH_KEPT;
        final long[] keys = new long[n];
        final long[] values = new long[n];
        long[][] held = null;
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < n; i++) {
                keys[i] = random.nextLong();
                values[i] = i;
            }
            p.cut(ranges, keys, values, n, false, 4, IN_TURN, true);
            int total = 0;
            for (int s = 0; s < shards; s++) {
                total += p.count[s];
            }
            assertEquals(n, total);
            if (held != null) {
                int reused = 0;
                for (int s = 0; s < shards; s++) {
                    reused += p.keys[s] == held[s] ? 1 : 0;
                }
                // a part outgrows its array only where its share rose by more than the eighth it was sized above
                assertEquals(shards, reused, "parts reused in round " + round);
            }
            held = p.keys.clone();
            p.trim();
            for (int s = 0; s < shards; s++) {
                assertTrue(held[s] == p.keys[s], "part " + s + " kept after round " + round); // not the contents
            }
        }
        final int larger = 2 * n;
        final long[] many = new long[larger];
        for (int i = 0; i < larger; i++) {
            many[i] = random.nextLong();
        }
        p.cut(ranges, many, new long[larger], larger, false, 4, IN_TURN, true);
        p.trim();
        assertNull(p.keys[0], "the parts of a batch beyond the kept size are let go");
    }

    @Test
    void eachPartHoldsItsRangesKeysInBatchOrderAndAReservedValueIsRefusedFirstInBatchOrder() {
        final RangeRouter ranges = new RangeRouter(new long[] {Long.MIN_VALUE, 0, 1_000});
        final long[] keys = {5, -3, 2_000, 7, -1, 1_000, 5};
        final long[] values = {1, 2, 3, 4, 5, 6, 7};
        final ShardParts p = new ShardParts();
        p.cut(ranges, keys, values, keys.length, true, 3, IN_TURN, true);
        assertArrayEquals(new int[] {2, 3, 2}, Arrays.copyOf(p.count, 3));
        assertArrayEquals(new long[] {-3, -1}, Arrays.copyOf(p.keys[0], 2));
        assertArrayEquals(new long[] {5, 7, 5}, Arrays.copyOf(p.keys[1], 3));
        assertArrayEquals(new long[] {1, 4, 7}, Arrays.copyOf(p.values[1], 3));
        assertArrayEquals(new int[] {0, 3, 6}, Arrays.copyOf(p.positions[1], 3));
        assertArrayEquals(new long[] {2_000, 1_000}, Arrays.copyOf(p.keys[2], 2));

        final long[] reserved = values.clone();
        reserved[5] = FlixIndex.NOT_FOUND;
        reserved[2] = FlixIndex.NOT_FOUND;
        final IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> p.cut(ranges, keys, reserved, keys.length, false, 3, IN_TURN, true));
        assertEquals("values[2] is NOT_FOUND (Long.MIN_VALUE), which is reserved", refused.getMessage());
        p.cut(ranges, keys, reserved, keys.length, false, 3, IN_TURN, false); // a lookup's cut reads no values
        assertEquals(keys.length, p.count[0] + p.count[1] + p.count[2]);
    }
}
