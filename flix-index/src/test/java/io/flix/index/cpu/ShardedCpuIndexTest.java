package io.flix.index.cpu;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;
import io.flix.index.SortedPairs;
import io.flix.index.TreeMapOracle;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the key-range shards do that the shared contract cannot see: the ranges follow the keys (cut from the first
 * large batch, cut anew when an append-only load piles into the top shard), floors and ceilings reach across empty
 * shards, and the answers match {@link TreeMapOracle} with every shard holding only keys of its range.
 */
class ShardedCpuIndexTest {

    private static FlixConfig config(int threads, int shards) {
        return FlixConfig.builder().backend(Backend.CPU).threads(threads).shards(shards).build();
    }

    @Test
    void opensShardedWhereTheConfigAsksForShards() {
        try (FlixIndex index = FlixIndex.open(config(2, 4))) {
            assertInstanceOf(ShardedCpuIndex.class, index);
        }
        try (FlixIndex index = FlixIndex.open(config(2, 1))) {
            assertInstanceOf(CpuFlixIndex.class, index);
        }
    }

    /** A skewed batch goes to one shard whole: the shards together keep about one index's scratch, not one each. */
    @Test
    void theShardsTogetherKeepAboutOneIndexsScratch() {
        for (int shards : new int[] {4, 64, 1024}) {
            try (ShardedCpuIndex index = new ShardedCpuIndex(config(2, shards), 8)) {
                final long[] keys = new long[4 * shards];
                final long[] values = new long[keys.length];
                for (int i = 0; i < keys.length; i++) {
                    keys[i] = i * 1_000L;
                    values[i] = i;
                }
                index.upsert(keys, values, keys.length, true);
                final int[] kept = index.shardScratchKept();
                assertEquals(shards, kept.length);
                for (int k : kept) {
                    assertEquals(Math.max(ShardedCpuIndex.SHARD_SCRATCH_KEPT_MIN, CpuFlixIndex.SCRATCH_KEPT / shards),
                            k, shards + " shards");
                }
                assertTrue(Arrays.stream(kept).asLongStream().sum()
                        <= Math.max(CpuFlixIndex.SCRATCH_KEPT, (long) shards * ShardedCpuIndex.SHARD_SCRATCH_KEPT_MIN));
            }
        }
    }

    @Test
    void randomKeysWithRepeatsAndDeletesSpreadOverEveryShardAndMatchTheOracle() {
        final int shards = 4;
        try (ShardedCpuIndex index = new ShardedCpuIndex(config(2, shards))) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final SplittableRandom random = new SplittableRandom(7);
            final int batch = 1 << 15;
            for (int b = 0; b < 8; b++) {
                final long[] keys = new long[batch];
                final long[] values = new long[batch];
                for (int i = 0; i < batch; i++) {
                    keys[i] = i % 7 == 6 ? keys[i - 3] : random.nextLong(); // repeats: the last one wins
                    values[i] = random.nextLong(1L << 40);
                }
                index.upsert(keys, values, batch);
                oracle.upsert(keys, values, batch);
                if (b % 3 == 2) {
                    final long[] gone = Arrays.copyOf(keys, batch / 4);
                    System.arraycopy(keys, 0, gone, batch / 8, batch / 8); // deleted twice in one batch
                    index.delete(gone, gone.length);
                    oracle.delete(gone, gone.length);
                }
                index.verifyStructure();
            }
            final long[] sizes = index.shardSizes();
            assertEquals(shards, sizes.length, "shards in use");
            final long fair = index.size() / shards;
            for (long s : sizes) {
                assertTrue(s > fair / 2 && s < fair * 2, "shard sizes " + Arrays.toString(sizes));
            }
            index.verifyStructure();
            assertSameContents(oracle, index);
        }
    }

    @Test
    void anAscendingLoadAppendedAtTheTopIsCutAnewOverEveryShard() {
        final int shards = 4;
        try (ShardedCpuIndex index = new ShardedCpuIndex(config(2, shards), 1 << 10)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final int batch = 1 << 12;
            long next = -5_000;
            for (int b = 0; b < 64; b++) {
                final long[] keys = new long[batch];
                final long[] values = new long[batch];
                for (int i = 0; i < batch; i++) {
                    keys[i] = next;
                    values[i] = next * 3;
                    next += 7;
                }
                index.upsert(keys, values, batch, true);
                oracle.upsert(keys, values, batch, true);
                index.verifyStructure();
            }
            final long[] sizes = index.shardSizes();
            assertEquals(shards, sizes.length, "shards in use");
            final long fair = index.size() / shards;
            for (long s : Arrays.copyOf(sizes, shards - 1)) {
                // without a new cut every appended key would sit in the top shard
                assertTrue(s >= fair / 2, "shard sizes " + Arrays.toString(sizes));
            }
            assertSameContents(oracle, index);
        }
    }

    @Test
    void floorsAndCeilingsReachAcrossShardsEmptiedByDeletes() {
        final int shards = 4;
        try (ShardedCpuIndex index = new ShardedCpuIndex(config(2, shards), 8)) {
            final int n = 1000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = i * 10L;
                values[i] = i;
            }
            index.build(keys, values, n, true);
            assertEquals(shards, index.shardSizes().length);
            final long[] middle = Arrays.copyOfRange(keys, 100, 900); // every shard but the first and last
            index.delete(middle, middle.length, true);
            final long[] sizes = index.shardSizes();
            assertEquals(0, sizes[1], Arrays.toString(sizes));
            assertEquals(0, sizes[2], Arrays.toString(sizes));

            final long[] probes = {5_000, 990, 9_000, -1, 10_000};
            final long[] keysOut = new long[probes.length];
            final long[] valuesOut = new long[probes.length];
            index.floor(probes, probes.length, keysOut, valuesOut);
            assertArrayEquals(new long[] {990, 990, 9_000, 0, 9_990}, keysOut);
            assertArrayEquals(new long[] {99, 99, 900, FlixIndex.NOT_FOUND, 999}, valuesOut);
            index.ceiling(probes, probes.length, keysOut, valuesOut);
            assertArrayEquals(new long[] {9_000, 990, 9_000, 0, 0}, keysOut);
            assertArrayEquals(new long[] {900, 99, 900, 0, FlixIndex.NOT_FOUND}, valuesOut);

            final RangeResult across = index.range(new long[] {950}, new long[] {9_020}, 1, 10);
            assertArrayEquals(new long[] {950, 960, 970, 980, 990, 9_000, 9_010, 9_020},
                    Arrays.copyOfRange(across.keys(), across.offsets()[0], across.offsets()[1]));
            final RangeResult limited = index.range(new long[] {950}, new long[] {9_020}, 1, 6);
            assertArrayEquals(new long[] {950, 960, 970, 980, 990, 9_000},
                    Arrays.copyOfRange(limited.keys(), limited.offsets()[0], limited.offsets()[1]));
        }
    }

    /**
     * The values of an upsert are checked where the batch is cut, on the workers: a reserved value anywhere is refused
     * naming the batch's first, and nothing of the batch is applied.
     */
    @Test
    void aReservedValueInALargeUpsertIsRefusedNamingTheFirstAndNothingIsApplied() {
        try (ShardedCpuIndex index = new ShardedCpuIndex(config(4, 16), 1 << 10)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final SplittableRandom random = new SplittableRandom(3);
            final int n = 1 << 16; // four chunks of the cut on four threads
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = random.nextLong();
                values[i] = random.nextLong(1L << 40);
            }
            index.upsert(keys, values, n);
            oracle.upsert(keys, values, n);
            for (int[] reserved : new int[][] {{50_000}, {20_000, 50_000}, {n - 1}, {0, 3}}) {
                final long[] again = new long[n];
                final long[] changed = new long[n];
                for (int i = 0; i < n; i++) {
                    again[i] = i % 2 == 0 ? keys[i] : random.nextLong();
                    changed[i] = random.nextLong(1L << 40);
                }
                for (int at : reserved) {
                    changed[at] = FlixIndex.NOT_FOUND;
                }
                final IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                        () -> index.upsert(again, changed, n));
                assertEquals("values[" + reserved[0] + "] is NOT_FOUND (Long.MIN_VALUE), which is reserved",
                        refused.getMessage());
                index.verifyStructure();
                assertSameContents(oracle, index);
            }
        }
    }

    private static void assertSameContents(TreeMapOracle oracle, FlixIndex index) {
        final SortedPairs expected = oracle.export();
        final SortedPairs actual = index.export();
        assertEquals(expected.size(), actual.size(), "size");
        assertArrayEquals(Arrays.copyOf(expected.keys(), expected.size()), Arrays.copyOf(actual.keys(), actual.size()));
        assertArrayEquals(Arrays.copyOf(expected.values(), expected.size()),
                Arrays.copyOf(actual.values(), actual.size()));
        final long[] got = new long[expected.size()];
        index.get(expected.keys(), expected.size(), got);
        assertArrayEquals(Arrays.copyOf(expected.values(), expected.size()), got, "gets");
    }
}
