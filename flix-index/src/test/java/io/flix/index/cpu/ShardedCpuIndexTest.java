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

    /**
     * An ascending load appends every batch above the top shard's keys: the top shard is cut into pieces at the
     * part's quantiles, so that the batch spreads, and the shards are cut anew beyond twice the configured count.
     */
    @Test
    void anAscendingLoadSplitsTheTopShardWhereItAppends() {
        final int shards = 4;
        try (ShardedCpuIndex index = new ShardedCpuIndex(config(2, shards), 1 << 10)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final int batch = 1 << 12;
            long next = -5_000;
            int mostShards = 0;
            for (int b = 0; b < 64; b++) {
                final long[] keys = new long[batch];
                final long[] values = new long[batch];
                for (int i = 0; i < batch; i++) {
                    keys[i] = next;
                    values[i] = next * 3;
                    next += 7;
                }
                index.upsert(keys, values, batch, b % 2 == 0);
                oracle.upsert(keys, values, batch, true);
                index.verifyStructure();
                final long[] sizes = index.shardSizes();
                mostShards = Math.max(mostShards, sizes.length);
                assertTrue(sizes.length <= 2 * shards, "shards " + Arrays.toString(sizes));
                if (b == 1) {
                    assertTrue(sizes.length > shards, "the second batch split the top shard: "
                            + Arrays.toString(sizes));
                    assertTrue(Arrays.stream(sizes).max().orElse(0) <= batch, "pieces of the split: "
                            + Arrays.toString(sizes));
                }
                // without the split every appended key would pile into the top shard until a new cut
                final long even = CpuFlixIndex.ceilDiv(index.size(), shards);
                assertTrue(Arrays.stream(sizes).max().orElse(0) <= 2 * even, "shard sizes " + Arrays.toString(sizes));
            }
            assertTrue(mostShards > shards, "the top shard was split: " + mostShards + " shards at most");
            assertSameContents(oracle, index);
            assertSameOrderedAnswers(oracle, index, new SplittableRandom(9), -6_000, next + 1_000);
        }
    }

    /** Descending batches land below the bottom shard's keys: that shard is split likewise. */
    @Test
    void aDescendingLoadSplitsTheBottomShardWhereItPrepends() {
        final int shards = 4;
        try (ShardedCpuIndex index = new ShardedCpuIndex(config(2, shards), 1 << 10)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final int batch = 1 << 12;
            long next = Long.MAX_VALUE - 3; // the top end of the key space too
            for (int b = 0; b < 24; b++) {
                final long[] keys = new long[batch];
                final long[] values = new long[batch];
                for (int i = 0; i < batch; i++) {
                    keys[i] = next;
                    values[i] = b * 100_000L + i;
                    next -= 1 + (i % 5);
                }
                index.upsert(keys, values, batch);
                oracle.upsert(keys, values, batch);
                index.verifyStructure();
                final long[] sizes = index.shardSizes();
                assertTrue(sizes.length <= 2 * shards, "shards " + Arrays.toString(sizes));
                if (b == 1) {
                    assertTrue(sizes.length > shards, "the second batch split the bottom shard: "
                            + Arrays.toString(sizes));
                }
                final long even = CpuFlixIndex.ceilDiv(index.size(), shards);
                assertTrue(Arrays.stream(sizes).max().orElse(0) <= 2 * even, "shard sizes " + Arrays.toString(sizes));
            }
            assertSameContents(oracle, index);
            assertSameOrderedAnswers(oracle, index, new SplittableRandom(10), next - 1_000, Long.MAX_VALUE);
        }
    }

    /**
     * An append that also updates and deletes older keys, and repeats keys within the batch: the shards it splits
     * keep every pair, and the last occurrence of a key wins.
     */
    @Test
    void anAppendMixedWithUpdatesOfOlderKeysKeepsEveryPair() {
        final int shards = 8;
        try (ShardedCpuIndex index = new ShardedCpuIndex(config(4, shards), 1 << 10)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final SplittableRandom random = new SplittableRandom(12);
            final int batch = 1 << 14;
            long next = 0;
            for (int b = 0; b < 20; b++) {
                final long[] keys = new long[batch];
                final long[] values = new long[batch];
                for (int i = 0; i < batch; i++) {
                    if (next > 0 && random.nextInt(10) == 0) {
                        keys[i] = random.nextLong(next); // an older key, often in the top shard
                    } else if (i > 0 && random.nextInt(20) == 0) {
                        keys[i] = keys[i - 1]; // a repeat in the batch
                    } else {
                        keys[i] = next;
                        next += 1 + random.nextInt(3);
                    }
                    values[i] = random.nextLong(1L << 40);
                }
                index.upsert(keys, values, batch);
                oracle.upsert(keys, values, batch);
                if (b % 4 == 3) {
                    final long[] gone = new long[batch / 8];
                    for (int i = 0; i < gone.length; i++) {
                        gone[i] = random.nextLong(next);
                    }
                    index.delete(gone, gone.length);
                    oracle.delete(gone, gone.length);
                }
                index.verifyStructure();
                assertTrue(index.shardSizes().length <= 2 * shards);
            }
            assertSameContents(oracle, index);
            assertSameOrderedAnswers(oracle, index, random, -10, next + 10);
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
     * A batch of many keys among one shard's own (a range filled in between its keys), and a burst rewriting a shard's
     * own keys: each cuts its shard into pieces holding its pairs and the batch's; one hot key repeated is not cut,
     * the last occurrence winning.
     */
    @Test
    void aPartAmongOneShardsKeysIsCutThereAndAHotKeyIsNot() {
        final int shards = 8;
        try (ShardedCpuIndex index = new ShardedCpuIndex(config(2, shards), 1 << 10)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final int n = 1 << 14;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = i * 1_000L;
                values[i] = i;
            }
            index.upsert(keys, values, n, true);
            oracle.upsert(keys, values, n, true);
            assertEquals(shards, index.shardSizes().length);
            final long[] among = new long[n];
            final long[] changed = new long[n];
            for (int i = 0; i < n; i++) {
                among[i] = 3 + i * 200L; // between the first shard's keys, some of them its own
                changed[i] = -i;
            }
            among[n - 1] = 0; // the shard's smallest key, last in the batch
            index.upsert(among, changed, n);
            oracle.upsert(among, changed, n);
            index.verifyStructure();
            final long[] split = index.shardSizes();
            assertTrue(split.length > shards, "the first shard was cut: " + Arrays.toString(split));
            assertSameContents(oracle, index);
            assertSameOrderedAnswers(oracle, index, new SplittableRandom(4), -100, n * 1_000L);

            // a burst rewriting the top shard's own keys, each twice (the first batch cut it at 14,336,000)
            final int top = n / shards;
            final long[] own = new long[2 * top];
            final long[] rewritten = new long[2 * top];
            for (int i = 0; i < own.length; i++) {
                own[i] = (n - top + i % top) * 1_000L;
                rewritten[i] = 1_000_000L + i;
            }
            final int beforeBurst = index.shardSizes().length;
            index.upsert(own, rewritten, own.length);
            oracle.upsert(own, rewritten, own.length);
            index.verifyStructure();
            assertTrue(index.shardSizes().length > beforeBurst, "the top shard was cut at its own keys: "
                    + Arrays.toString(index.shardSizes()));
            assertSameContents(oracle, index);
            assertSameOrderedAnswers(oracle, index, new SplittableRandom(5), 14_000_000L, n * 1_000L + 10);

            final int beforeHot = index.shardSizes().length;
            final long[] hot = new long[n];
            final long[] hotValues = new long[n];
            for (int i = 0; i < n; i++) {
                hot[i] = 5_000;
                hotValues[i] = 7 + i;
            }
            index.upsert(hot, hotValues, n);
            oracle.upsert(hot, hotValues, n);
            index.verifyStructure();
            assertEquals(beforeHot, index.shardSizes().length, "one key is not cut");
            assertSameContents(oracle, index);
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

    /** Floors, ceilings and ranges of random probes in {@code [from, to)}: the oracle's answers. */
    private static void assertSameOrderedAnswers(TreeMapOracle oracle, FlixIndex index, SplittableRandom random,
                                                 long from, long to) {
        final int n = 2_000;
        final long[] probes = new long[n];
        final long[] hi = new long[n];
        for (int i = 0; i < n; i++) {
            probes[i] = random.nextLong(from, to);
            hi[i] = probes[i] + Math.min(random.nextLong(0, 200), Long.MAX_VALUE - probes[i]);
        }
        for (boolean floor : new boolean[] {true, false}) {
            final long[] keysOut = new long[n];
            final long[] valuesOut = new long[n];
            final long[] expectedKeys = new long[n];
            final long[] expectedValues = new long[n];
            if (floor) {
                index.floor(probes, n, keysOut, valuesOut);
                oracle.floor(probes, n, expectedKeys, expectedValues);
            } else {
                index.ceiling(probes, n, keysOut, valuesOut);
                oracle.ceiling(probes, n, expectedKeys, expectedValues);
            }
            assertArrayEquals(expectedValues, valuesOut, floor ? "floors" : "ceilings");
            for (int i = 0; i < n; i++) {
                if (expectedValues[i] != FlixIndex.NOT_FOUND) {
                    assertEquals(expectedKeys[i], keysOut[i], (floor ? "floor" : "ceiling") + " of " + probes[i]);
                }
            }
        }
        final RangeResult ranges = index.range(probes, hi, n, 16);
        final RangeResult expected = oracle.range(probes, hi, n, 16);
        assertArrayEquals(expected.offsets(), ranges.offsets(), "ranges' offsets");
        final int pairs = expected.offsets()[n];
        assertArrayEquals(Arrays.copyOf(expected.keys(), pairs), Arrays.copyOf(ranges.keys(), pairs), "ranges' keys");
        assertArrayEquals(Arrays.copyOf(expected.values(), pairs), Arrays.copyOf(ranges.values(), pairs),
                "ranges' values");
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
