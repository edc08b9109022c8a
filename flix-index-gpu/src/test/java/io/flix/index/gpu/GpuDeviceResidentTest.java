package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.IndexStats;
import io.flix.index.SortedPairs;
import io.flix.index.TreeMapOracle;

import java.util.Arrays;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

/**
 * The FliX index's device-resident calls (the contract), the stand-alone pair sort, and the memory the index
 * reports. Skips where no GPU is usable.
 */
class GpuDeviceResidentTest extends DeviceResidentContract {

    @Override
    protected DeviceResidentIndex open() {
        return GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build());
    }

    @Test
    void pairSortOrdersKeysAndKeepsPositionsStable() {
        final SplittableRandom rnd = new SplittableRandom(13);
        final int n = 1 << 20;
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) { // a narrow range gives many equal keys; extremes included
            keys[i] = i % 1000 == 0 ? (i % 2000 == 0 ? Long.MIN_VALUE : Long.MAX_VALUE) : rnd.nextLong(-50_000, 50_000);
        }
        final long[] sortedKeys = new long[n];
        final int[] positions = new int[n];
        try (DevicePairSort sort = DevicePairSort.open(0); DeviceLongs d = DeviceLongs.of(0, keys, n)) {
            sort.sort(d, n);
            sort.sortedResult(sortedKeys, positions, n);
            assertUnchanged(keys, d, "the sort modified its input");
        }
        final long[] expected = keys.clone();
        Arrays.sort(expected);
        assertArrayEquals(expected, sortedKeys, "sorted keys");
        final boolean[] seen = new boolean[n];
        for (int i = 0; i < n; i++) {
            final int p = positions[i];
            assertEquals(sortedKeys[i], keys[p], "position " + i + " names a key of another value");
            assertTrue(!seen[p], "position " + p + " twice");
            seen[p] = true;
            if (i > 0 && sortedKeys[i] == sortedKeys[i - 1]) {
                assertTrue(positions[i - 1] < p, "equal keys out of batch order at " + i);
            }
        }
    }

    /**
     * A build allocates the nodes it fills (no slack): at the default fill of 16 keys a node, 532 bytes a node and
     * 12 a bucket make 34 bytes a key; a restructure after deleting most keys returns the freed nodes' memory.
     */
    @Test
    void flixBuildHoldsWhatItNeedsAndRestructureReturnsFreedMemory() {
        final SplittableRandom rnd = new SplittableRandom(14);
        final long liveBefore = DeviceBuffer.liveBytes();
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build())) {
            final int n = 1 << 20;
            final long[][] build = randomPairs(rnd, n, Long.MAX_VALUE);
            index.build(build[0], build[1], n);
            final IndexStats built = index.stats();
            final double perKey = (double) built.bytes() / built.size();
            assertTrue(perKey <= 35.0, "bytes per key after the build: " + perKey + " " + built);
            assertEquals(0, built.freeNodes(), "free nodes after a build: " + built);
            index.delete(build[0], n * 3 / 4);
            final IndexStats sparse = index.stats();
            final long recovered = index.restructure();
            final IndexStats after = index.stats();
            assertEquals(sparse.nodes() - after.nodes(), recovered);
            assertTrue(after.bytes() < sparse.bytes() / 2, "restructure kept the memory: " + sparse + " -> " + after);
            assertTrue(index.scratchBytes() > 0, "scratch after a build");
            assertTrue(DeviceBuffer.liveBytes() - liveBefore >= after.bytes() + index.scratchBytes(),
                    "the index holds at least what it reports");
            // memory grows again on demand
            index.upsert(build[0], build[1], n);
            assertEquals(n, index.size());
        }
        assertEquals(liveBefore, DeviceBuffer.liveBytes(), "device memory left after close");
    }
}
