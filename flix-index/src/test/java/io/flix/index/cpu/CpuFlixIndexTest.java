package io.flix.index.cpu;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.IndexStats;
import io.flix.index.RangeResult;
import io.flix.index.SortedPairs;
import io.flix.index.TreeMapOracle;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Structure of the CPU backend that the public contract cannot see (chains, splits, the free list, restructuring,
 * memory), and randomized differential runs against {@link TreeMapOracle} with the structure verified after every
 * batch.
 */
class CpuFlixIndexTest {

    private static final long[] EDGE_KEYS = {
            Long.MIN_VALUE, Long.MIN_VALUE + 1, -1, 0, 1, Long.MAX_VALUE - 1, Long.MAX_VALUE};

    private static CpuFlixIndex open(int nodeSize, double fill, int threads) {
        return new CpuFlixIndex(FlixConfig.builder().backend(Backend.CPU).nodeSize(nodeSize).initialFill(fill)
                .threads(threads).build());
    }

    @Test
    void openingTheCpuBackendGivesThisIndex() {
        try (FlixIndex index = FlixIndex.open(FlixConfig.builder().backend(Backend.CPU).threads(2).build())) {
            assertTrue(index instanceof CpuFlixIndex);
            assertEquals(Backend.CPU, index.backend());
        }
        try (FlixIndex index = FlixIndex.open(FlixConfig.builder().threads(2).build())) {
            assertEquals(Backend.GPU.unavailableReason() == null ? Backend.GPU : Backend.CPU, index.backend(),
                    "AUTO takes the GPU where one is usable, else the CPU");
        }
    }

    @Test
    void buildLaysOutOneNodePerBucketAtTheInitialFill() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            final int n = 1000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = (n - i) * 7L; // unsorted on purpose
                values[i] = i;
            }
            index.build(keys, values, n);
            index.verifyStructure();
            final IndexStats stats = index.stats();
            assertEquals(n, stats.size());
            assertEquals((n + 15) / 16, stats.buckets());
            assertEquals(stats.buckets(), stats.nodes());
            assertEquals(1, stats.longestChain());
        }
    }

    @Test
    void skewedInsertsSplitNodesIntoLongerChains() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            buildSpacedKeys(index, oracle);
            final long nodesBefore = index.stats().nodes();
            // 600 keys between two neighbouring stored keys: all land in one bucket, short of the chain limit.
            final int m = 600;
            final long[] hot = new long[m];
            final long[] hotValues = new long[m];
            for (int i = 0; i < m; i++) {
                hot[i] = 5_000_000L + 1 + i * 3L;
                hotValues[i] = -i;
            }
            both(index, oracle).upsert(hot, hotValues, m);
            index.verifyStructure();
            final IndexStats stats = index.stats();
            assertTrue(stats.longestChain() > 1, "chain grew: " + stats);
            assertTrue(stats.longestChain() >= m / 32, "a chain of split nodes holds the hot keys: " + stats);
            assertTrue(stats.longestChain() <= ChainPolicy.MAX_CHAIN_NODES, stats.toString());
            assertEquals(SPACED_KEYS / 16, stats.buckets(), "bucket boundaries unchanged");
            assertTrue(stats.nodes() > nodesBefore);
            assertEquals(oracle.size(), index.size());
            assertContentsEqual(oracle, index);
        }
    }

    @Test
    void deletesReturnEmptiedNodesToTheFreeListAndUpsertsReuseThem() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final int n = 16_384;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = i;
                values[i] = i * 10L;
            }
            both(index, oracle).build(keys, values, n);
            final IndexStats before = index.stats();
            assertEquals(0, before.freeNodes());
            // Delete the lower half: its nodes become empty.
            final int half = n / 2;
            both(index, oracle).delete(keys, half);
            index.verifyStructure();
            final IndexStats afterDelete = index.stats();
            assertEquals(half / 16, before.nodes() - afterDelete.nodes());
            assertEquals(half / 16, afterDelete.freeNodes());
            assertEquals(before.bytes(), afterDelete.bytes(), "deletes keep the pool, freed nodes wait for reuse");
            assertContentsEqual(oracle, index);
            // Re-inserting reuses freed nodes instead of growing the pool.
            both(index, oracle).upsert(keys, values, half);
            index.verifyStructure();
            final IndexStats afterReinsert = index.stats();
            assertEquals(before.bytes(), afterReinsert.bytes());
            assertTrue(afterReinsert.freeNodes() < afterDelete.freeNodes());
            assertContentsEqual(oracle, index);
        }
    }

    @Test
    void restructureFlattensChainsAndKeepsContents() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final SplittableRandom random = new SplittableRandom(7);
            final int n = 20_000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = random.nextLong(1L << 40);
                values[i] = random.nextLong(1, Long.MAX_VALUE);
            }
            both(index, oracle).build(keys, values, n);
            // A hot region of about one bucket; few enough keys that the chain stays below the limit.
            final int hot = 500;
            for (int i = 0; i < hot; i++) {
                keys[i] = (1L << 30) + random.nextLong(1L << 24);
                values[i] = random.nextLong(1, Long.MAX_VALUE);
            }
            both(index, oracle).upsert(keys, values, hot);
            index.verifyStructure();
            final IndexStats skewed = index.stats();
            assertTrue(skewed.longestChain() > 1, skewed.toString());

            final long reclaimed = index.restructure();
            index.verifyStructure();
            final IndexStats flat = index.stats();
            assertEquals(1, flat.longestChain());
            assertEquals(skewed.nodes() - flat.nodes(), reclaimed);
            assertEquals(flat.buckets(), flat.nodes());
            assertEquals((oracle.size() + 15) / 16, flat.nodes(), "every node refilled to the initial fill");
            assertEquals(0, flat.freeNodes());
            assertContentsEqual(oracle, index);
        }
    }

    @Test
    void theExactKeyTableIsCountedInTheIndexBytesAndLeavesEveryAnswerAsItWas() {
        final int n = 50_000;
        final long[] keys = new long[n];
        final long[] values = new long[n];
        final SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < n; i++) {
            keys[i] = random.nextLong();
            values[i] = i;
        }
        final FlixConfig.Builder config = FlixConfig.builder().backend(Backend.CPU).threads(2);
        try (CpuFlixIndex with = new CpuFlixIndex(config.build());
             CpuFlixIndex without = new CpuFlixIndex(config.exactKeyTable(false).build())) {
            with.build(keys, values, n / 2);
            without.build(keys, values, n / 2);
            with.upsert(keys, values, n);
            without.upsert(keys, values, n);
            with.delete(keys, n / 4);
            without.delete(keys, n / 4);
            with.verifyStructure();
            // Two longs a slot, at most three quarters full, for the most keys held (n): deletes do not shrink it.
            final long extra = with.stats().bytes() - without.stats().bytes();
            assertTrue(extra >= 16L * n * 4 / 3 && extra <= 16L * n * 8 / 3, "table bytes " + extra);
            with.restructure();
            without.restructure();
            final long fitted = with.stats().bytes() - without.stats().bytes();
            assertTrue(fitted >= 16L * with.size() * 4 / 3 && fitted <= 16L * with.size() * 8 / 3 && fitted < extra,
                    "restructure fits the table to the keys held: " + fitted);
            final long[] probes = Arrays.copyOf(keys, n + 3);
            probes[n] = Long.MIN_VALUE;
            probes[n + 1] = 0;
            probes[n + 2] = Long.MAX_VALUE;
            final long[] fromTable = new long[probes.length];
            final long[] fromNodes = new long[probes.length];
            with.get(probes, probes.length, fromTable);
            without.get(probes, probes.length, fromNodes);
            assertArrayEquals(fromNodes, fromTable);
        }
    }

    @Test
    void restructureAfterHeavyDeletesReleasesMemory() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final SplittableRandom random = new SplittableRandom(11);
            final int n = 200_000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = random.nextLong();
                values[i] = i;
            }
            both(index, oracle).build(keys, values, n);
            // Delete 90% at random: most nodes keep a few keys, some go empty.
            final int gone = n * 9 / 10;
            both(index, oracle).delete(keys, gone);
            index.verifyStructure();
            final IndexStats sparse = index.stats();
            assertTrue(sparse.freeNodes() > 0);

            final long reclaimed = index.restructure();
            index.verifyStructure();
            final IndexStats compact = index.stats();
            assertTrue(reclaimed > 0, "underfull nodes merged: " + reclaimed);
            assertTrue(compact.bytes() < sparse.bytes() / 5, sparse.bytes() + " -> " + compact.bytes());
            assertEquals(0, compact.freeNodes());
            assertContentsEqual(oracle, index);
            // Still a working index afterwards.
            both(index, oracle).upsert(keys, values, n);
            index.verifyStructure();
            assertContentsEqual(oracle, index);
        }
    }

    @Test
    void deletingEverythingLeavesEmptyBucketsThatStillAnswerAndAcceptUpserts() {
        try (CpuFlixIndex index = open(4, 0.5, 2)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final int n = 10_000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = i * 10L;
                values[i] = i;
            }
            both(index, oracle).build(keys, values, n);
            both(index, oracle).delete(keys, n);
            index.verifyStructure();
            assertEquals(0, index.stats().nodes());
            assertEquals(n / 2, index.stats().buckets(), "bucket boundaries stay until restructure");
            compareLookups(index, oracle, new long[] {-5, 0, 5, 99_995, Long.MIN_VALUE, Long.MAX_VALUE}, 6);
            final long[] some = {55, 56, 99_999, 123_456_789};
            both(index, oracle).upsert(some, some, some.length);
            index.verifyStructure();
            final long[] probes = {Long.MIN_VALUE, 0, 54, 55, 57, 50_000, 99_999, 100_000, 123_456_790, Long.MAX_VALUE};
            compareLookups(index, oracle, probes, probes.length);
            compareLookups(index, oracle, sortedCopy(probes), probes.length);
        }
    }

    @Test
    void chainsPastTheLimitAreCutIntoOneBucketPerNode() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            buildSpacedKeys(index, oracle);
            final int m = 2000; // about 84 nodes in one bucket
            final long[] hot = new long[m];
            for (int i = 0; i < m; i++) {
                hot[i] = 5_000_000L + 1 + i * 3L;
            }
            both(index, oracle).upsert(hot, hot, m);
            index.verifyStructure();
            final IndexStats stats = index.stats();
            assertEquals(1, stats.longestChain(), "the one long chain became buckets: " + stats);
            assertEquals(stats.nodes(), stats.buckets(), "each node is a bucket now: " + stats);
            assertContentsEqual(oracle, index);
            compareLookups(index, oracle, hot, m);
        }
    }

    @Test
    void everGrowingKeysKeepTheLastBucketsChainShort() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final int n = 10_000;
            final long[] keys = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = i;
            }
            both(index, oracle).build(keys, keys, n);
            final long bucketsBefore = index.stats().buckets();
            long next = n;
            for (int round = 0; round < 200; round++) {
                final int m = 1 + round % 97; // small batches of new largest keys, like fresh ids
                final long[] batch = new long[m];
                for (int i = 0; i < m; i++) {
                    batch[i] = next++;
                }
                both(index, oracle).upsert(batch, batch, m);
                assertTrue(index.stats().longestChain() <= ChainPolicy.MAX_CHAIN_NODES);
            }
            index.verifyStructure();
            assertTrue(index.stats().buckets() > bucketsBefore);
            assertContentsEqual(oracle, index);
        }
    }

    @Test
    void ceilingAndFloorCrossRunsOfEmptyBuckets() {
        try (CpuFlixIndex index = open(8, 0.5, 2)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final int n = 40_000;
            final long[] keys = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = i * 100L;
            }
            both(index, oracle).build(keys, keys, n);
            // Empty 2 500 buckets in the middle and the first and last few: answers lie buckets away.
            final long[] gone = new long[n];
            int m = 0;
            for (int i = 0; i < n; i++) {
                if ((i >= 10_000 && i < 20_000) || i < 37 || i >= n - 41) {
                    gone[m++] = keys[i];
                }
            }
            both(index, oracle).delete(gone, m);
            index.verifyStructure();
            final SplittableRandom random = new SplittableRandom(3);
            for (int size : new int[] {7, 500, 5000, 50_000}) { // the small and the radix-sorted lookup paths
                final long[] probes = new long[size];
                for (int i = 0; i < size; i++) {
                    probes[i] = switch (random.nextInt(5)) {
                        case 0 -> 1_000_000L + random.nextLong(1_000_000L); // inside the emptied run
                        case 1 -> random.nextLong(3_700L + 200L) - 100L; // around the emptied start
                        case 2 -> (n - 45) * 100L + random.nextLong(1_000L); // around the emptied end
                        case 3 -> random.nextLong();
                        default -> random.nextLong(n * 100L);
                    };
                }
                compareLookups(index, oracle, probes, size);
                compareLookups(index, oracle, sortedCopy(probes), size);
            }
            // A range across the emptied run: 500 keys before it, 501 after, cut by the limit.
            final long[] lo = {950_000, 1_100_000, 950_000};
            final long[] hi = {2_050_000, 1_900_000, 2_050_000};
            final int[] limits = {1000, 1000, 10_000};
            for (int limit : limits) {
                final RangeResult expected = oracle.range(lo, hi, 3, limit);
                final RangeResult actual = index.range(lo, hi, 3, limit);
                assertArrayEquals(expected.offsets(), actual.offsets());
                final int total = expected.offsets()[3];
                assertArrayEquals(Arrays.copyOf(expected.keys(), total), Arrays.copyOf(actual.keys(), total));
                assertArrayEquals(Arrays.copyOf(expected.values(), total), Arrays.copyOf(actual.values(), total));
            }
        }
    }

    @Test
    void upsertsIntoAnEmptyIndexSpreadOverBuckets() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final SplittableRandom random = new SplittableRandom(5);
            final int n = 50_000; // one bucket of about 2 100 nodes, cut into a bucket per node
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = random.nextLong();
                values[i] = i;
            }
            both(index, oracle).upsert(keys, values, n);
            index.verifyStructure();
            final IndexStats stats = index.stats();
            assertEquals(1, stats.longestChain(), stats.toString());
            assertEquals(stats.nodes(), stats.buckets(), stats.toString());
            assertTrue(stats.buckets() > 1000, stats.toString());
            assertContentsEqual(oracle, index);
        }
    }

    @Test
    void poolGrowsAcrossSegmentsKeepingEveryKey() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            final TreeMapOracle oracle = new TreeMapOracle();
            final SplittableRandom random = new SplittableRandom(17);
            final int batch = 1 << 15;
            final long[] keys = new long[batch];
            final long[] values = new long[batch];
            long previousBytes = index.stats().bytes();
            for (int round = 0; round < 40; round++) {
                for (int i = 0; i < batch; i++) {
                    keys[i] = random.nextLong();
                    values[i] = round;
                }
                both(index, oracle).upsert(keys, values, batch);
                final long bytes = index.stats().bytes();
                assertTrue(bytes >= previousBytes, "memory grows on demand");
                previousBytes = bytes;
            }
            index.verifyStructure();
            final IndexStats stats = index.stats();
            // 1 024 nodes of 32 keys fill one 2^15-slot segment; 1.3 M keys need dozens.
            assertTrue(stats.nodes() + stats.freeNodes() > 32 * 1_024, stats.toString());
            assertContentsEqual(oracle, index);
            compareLookups(index, oracle, keys, batch);
        }
    }

    @Test
    void closedIndexRejectsCallsAndClosesTwice() {
        final CpuFlixIndex index = open(32, 0.5, 2);
        index.upsert(new long[] {1}, new long[] {2}, 1);
        index.close();
        index.close();
        assertThrows(IllegalStateException.class, index::size);
        assertThrows(IllegalStateException.class, index::stats);
        assertThrows(IllegalStateException.class, () -> index.get(new long[] {1}, 1, new long[1]));
        assertThrows(IllegalStateException.class, () -> index.upsert(new long[] {1}, new long[] {2}, 1));
    }

    @Test
    void badArgumentsLeaveTheIndexUntouched() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            final long[] keys = {3, 1, 2};
            index.upsert(keys, new long[] {30, 10, 20}, 3);
            final SortedPairs before = index.export();
            assertThrows(IllegalArgumentException.class,
                    () -> index.upsert(new long[] {5, 6}, new long[] {1, FlixIndex.NOT_FOUND}, 2));
            assertThrows(IllegalArgumentException.class, () -> index.delete(new long[] {2, 1}, 2, true));
            assertThrows(IllegalArgumentException.class, () -> index.build(new long[] {9}, new long[] {9}, 2));
            assertThrows(IllegalArgumentException.class, () -> index.build(null, new long[] {9}, 1));
            final SortedPairs after = index.export();
            assertEquals(before.size(), after.size());
            assertArrayEquals(before.keys(), after.keys());
            assertArrayEquals(before.values(), after.values());
            index.verifyStructure();
        }
    }

    /** Small batches on the caller's thread, many shapes of node and fill, every batch verified. */
    @ParameterizedTest
    @CsvSource({"4, 0.5, 1", "4, 1.0, 2", "8, 0.25, 2", "32, 0.5, 2", "32, 1.0, 2", "64, 0.75, 2"})
    void randomizedSmallBatchesMatchTheOracle(int nodeSize, double fill, int threads) {
        final long seed = 1000L * nodeSize + (long) (fill * 100) + threads;
        try (CpuFlixIndex index = open(nodeSize, fill, threads)) {
            new Differential(index, seed, 3000, 300).run(400, true);
        }
    }

    /** Batches large enough to run in parallel: node allocation across tasks must stay consistent. */
    @Test
    void randomizedParallelBatchesMatchTheOracle() {
        try (CpuFlixIndex index = open(32, 0.5, 2)) {
            new Differential(index, 42, 1 << 20, 1 << 18).run(25, false);
        }
    }

    @Test
    void randomizedParallelBatchesWithSmallNodesMatchTheOracle() {
        try (CpuFlixIndex index = open(4, 1.0, 2)) {
            new Differential(index, 43, 1 << 18, 1 << 16).run(20, false);
        }
    }

    @Test
    void aLookupCallTakesItsShareOfTheThreadsAtMostItsCap() {
        assertEquals(4, CpuFlixIndex.lookupShare(4, 4, 1), "alone, uncapped: every thread");
        assertEquals(2, CpuFlixIndex.lookupShare(4, 4, 2), "two calls at once split them");
        assertEquals(1, CpuFlixIndex.lookupShare(4, 4, 3));
        assertEquals(1, CpuFlixIndex.lookupShare(4, 4, 9), "never below one");
        assertEquals(1, CpuFlixIndex.lookupShare(1, 4, 1), "capped at one: the caller's thread");
        assertEquals(2, CpuFlixIndex.lookupShare(2, 8, 1));
        assertEquals(2, CpuFlixIndex.lookupShare(2, 8, 4));
        assertEquals(1, CpuFlixIndex.lookupShare(2, 8, 5));
    }

    /**
     * Lookup batches large enough for the parallel sort and the parallel walk, from three threads at once, on indexes
     * whose lookup calls are capped at 1, at 2 and not at all: every answer is the oracle's, whatever share of the
     * workers each call took.
     */
    @ParameterizedTest(name = "lookup threads {0}")
    @CsvSource({"1", "2", "0"})
    void largeLookupsOfSeveralThreadsAtOnceMatchTheOracleWhateverTheirShareOfTheThreads(int lookupThreads)
            throws Exception {
        final SplittableRandom random = new SplittableRandom(77 + lookupThreads);
        final int stored = 1 << 18;
        final long[] keys = new long[stored];
        final long[] values = new long[stored];
        for (int i = 0; i < stored; i++) {
            keys[i] = random.nextLong(-(1L << 40), 1L << 40);
            values[i] = i;
        }
        final TreeMapOracle oracle = new TreeMapOracle();
        oracle.build(keys, values, stored, false);
        try (CpuFlixIndex index = new CpuFlixIndex(FlixConfig.builder().backend(Backend.CPU).threads(4)
                .lookupThreads(lookupThreads).build())) {
            index.build(keys, values, stored);
            final int callers = 3;
            final ExecutorService pool = Executors.newFixedThreadPool(callers);
            try {
                final List<Future<?>> calls = new ArrayList<>();
                for (int c = 0; c < callers; c++) {
                    final long seed = random.nextLong();
                    calls.add(pool.submit(() -> {
                        final SplittableRandom r = new SplittableRandom(seed);
                        for (int round = 0; round < 3; round++) {
                            final int n = (1 << 17) + r.nextInt(1 << 16);
                            final long[] probes = new long[n];
                            for (int i = 0; i < n; i++) {
                                probes[i] = r.nextInt(4) == 0 ? keys[r.nextInt(stored)]
                                        : r.nextLong(-(1L << 41), 1L << 41);
                            }
                            compareLookups(index, oracle, probes, n);
                            final int ranges = 8192;
                            final long[] lo = Arrays.copyOf(probes, ranges);
                            final long[] hi = new long[ranges];
                            for (int i = 0; i < ranges; i++) {
                                hi[i] = lo[i] + r.nextLong(1L << 28);
                            }
                            final RangeResult expected = oracle.range(lo, hi, ranges, 16);
                            final RangeResult actual = index.range(lo, hi, ranges, 16);
                            assertArrayEquals(expected.offsets(), actual.offsets(), "range offsets");
                            assertArrayEquals(expected.keys(), actual.keys(), "range keys");
                            assertArrayEquals(expected.values(), actual.values(), "range values");
                        }
                        return null;
                    }));
                }
                for (Future<?> call : calls) {
                    call.get(5, TimeUnit.MINUTES); // a safety net, not what is asserted
                }
            } finally {
                pool.shutdownNow();
            }
        }
    }

    /** Applies random batches to the index and the oracle and compares every answer. */
    private static final class Differential {
        private final CpuFlixIndex index;
        private final TreeMapOracle oracle = new TreeMapOracle();
        private final SplittableRandom random;
        private final long seed;
        private final int domain;
        private final int maxBatch;

        Differential(CpuFlixIndex index, long seed, int domain, int maxBatch) {
            this.index = index;
            this.seed = seed;
            this.random = new SplittableRandom(seed);
            this.domain = domain;
            this.maxBatch = maxBatch;
        }

        void run(int steps, boolean verifyEveryStep) {
            for (int step = 0; step < steps; step++) {
                final String where = "seed " + seed + " step " + step;
                final int op = random.nextInt(100);
                try {
                    if (op < 3) {
                        final int n = batchSize();
                        final long[] keys = keys(n);
                        final long[] values = values(n);
                        final boolean sorted = random.nextBoolean();
                        if (sorted) {
                            Arrays.sort(keys, 0, n);
                        }
                        both(index, oracle).build(keys, values, n, sorted);
                    } else if (op < 40) {
                        final int n = batchSize();
                        final long[] keys = keys(n);
                        final long[] values = values(n);
                        final boolean sorted = random.nextInt(4) == 0;
                        if (sorted) {
                            Arrays.sort(keys, 0, n);
                        }
                        both(index, oracle).upsert(keys, values, n, sorted);
                    } else if (op < 60) {
                        final int n = batchSize();
                        final long[] keys = keys(n);
                        final boolean sorted = random.nextInt(4) == 0;
                        if (sorted) {
                            Arrays.sort(keys, 0, n);
                        }
                        both(index, oracle).delete(keys, n, sorted);
                    } else if (op < 85) {
                        final int n = batchSize();
                        final long[] keys = keys(n);
                        compareLookups(index, oracle, keys, n);
                        Arrays.sort(keys, 0, n);
                        compareLookups(index, oracle, keys, n);
                    } else if (op < 92) {
                        compareRanges();
                    } else if (op < 96) {
                        final long[] out = new long[1 + random.nextInt(200)];
                        final long[] outV = new long[out.length];
                        final long[] expected = new long[out.length];
                        final long[] expectedV = new long[out.length];
                        final long from = key();
                        assertEquals(oracle.exportFrom(from, expected, expectedV),
                                index.exportFrom(from, out, outV), where);
                        assertArrayEquals(expected, out, where);
                        assertArrayEquals(expectedV, outV, where);
                    } else {
                        final long before = index.stats().nodes();
                        final long reclaimed = index.restructure();
                        assertEquals(before - index.stats().nodes(), reclaimed, where);
                        assertEquals(index.size() > 0 ? 1 : 0, index.stats().longestChain(), where);
                    }
                    assertEquals(oracle.size(), index.size(), where);
                    if (verifyEveryStep || step % 5 == 4) {
                        index.verifyStructure();
                    }
                } catch (AssertionError | RuntimeException e) {
                    throw new AssertionError(where + " op " + op + ": " + e.getMessage(), e);
                }
            }
            index.verifyStructure();
            assertContentsEqual(oracle, index);
        }

        private void compareRanges() {
            final int n = 1 + random.nextInt(64);
            final long[] lo = new long[n];
            final long[] hi = new long[n];
            for (int i = 0; i < n; i++) {
                final long a = key();
                final long b = random.nextInt(8) == 0 ? key() : a + random.nextInt(domain / 8 + 1);
                lo[i] = Math.min(a, b);
                hi[i] = Math.max(a, b);
            }
            final int limit = random.nextBoolean() ? Integer.MAX_VALUE : 1 + random.nextInt(50);
            final RangeResult expected = oracle.range(lo, hi, n, limit);
            final RangeResult actual = index.range(lo, hi, n, limit);
            assertArrayEquals(expected.offsets(), actual.offsets());
            final int total = expected.offsets()[n];
            assertArrayEquals(Arrays.copyOf(expected.keys(), total), Arrays.copyOf(actual.keys(), total));
            assertArrayEquals(Arrays.copyOf(expected.values(), total), Arrays.copyOf(actual.values(), total));
        }

        private int batchSize() {
            return switch (random.nextInt(6)) {
                case 0 -> 0;
                case 1 -> 1 + random.nextInt(8);
                default -> random.nextInt(maxBatch + 1);
            };
        }

        /** Mostly a bounded domain (so batches hit, repeat and delete stored keys), some edges, some anywhere. */
        private long key() {
            final int pick = random.nextInt(100);
            if (pick < 3) {
                return EDGE_KEYS[random.nextInt(EDGE_KEYS.length)];
            }
            if (pick < 8) {
                return random.nextLong();
            }
            if (pick < 30) {
                return 1_000_000L + random.nextInt(domain / 64 + 1); // a hot region: long chains
            }
            return (long) (random.nextInt(domain) - domain / 2) * 977L;
        }

        private long[] keys(int n) {
            final long[] keys = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = i > 0 && random.nextInt(10) == 0 ? keys[random.nextInt(i)] : key(); // repeats in a batch
            }
            return keys;
        }

        private long[] values(int n) {
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                final long v = random.nextLong();
                values[i] = v == FlixIndex.NOT_FOUND ? 0 : v;
            }
            return values;
        }
    }

    private static void compareLookups(FlixIndex index, TreeMapOracle oracle, long[] keys, int n) {
        boolean sorted = true;
        for (int i = 1; i < n; i++) {
            sorted &= keys[i - 1] <= keys[i];
        }
        final long[] expected = new long[n];
        final long[] actual = new long[n];
        oracle.get(keys, n, expected);
        index.get(keys, n, actual, sorted);
        assertArrayEquals(expected, actual, "get, sorted = " + sorted);
        final long[] expectedKeys = new long[n];
        final long[] actualKeys = new long[n];
        oracle.ceiling(keys, n, expectedKeys, expected);
        index.ceiling(keys, n, actualKeys, actual, sorted);
        assertArrayEquals(expectedKeys, actualKeys, "ceiling keys, sorted = " + sorted);
        assertArrayEquals(expected, actual, "ceiling values, sorted = " + sorted);
        oracle.floor(keys, n, expectedKeys, expected);
        index.floor(keys, n, actualKeys, actual, sorted);
        assertArrayEquals(expectedKeys, actualKeys, "floor keys, sorted = " + sorted);
        assertArrayEquals(expected, actual, "floor values, sorted = " + sorted);
    }

    private static void assertContentsEqual(TreeMapOracle oracle, FlixIndex index) {
        final SortedPairs expected = oracle.export();
        final SortedPairs actual = index.export();
        assertEquals(expected.size(), actual.size());
        assertArrayEquals(expected.keys(), actual.keys());
        assertArrayEquals(expected.values(), actual.values());
    }

    private static final int SPACED_KEYS = 4096;

    /** Builds SPACED_KEYS keys a million apart (values 0, 1, ...) into both: room for many keys between neighbours. */
    private static void buildSpacedKeys(FlixIndex index, TreeMapOracle oracle) {
        final int n = SPACED_KEYS;
        final long[] keys = new long[n];
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = i * 1_000_000L;
            values[i] = i;
        }
        both(index, oracle).build(keys, values, n);
    }

    private static long[] sortedCopy(long[] keys) {
        final long[] copy = keys.clone();
        Arrays.sort(copy);
        return copy;
    }

    /** Lets a build go to both the index and the oracle in one call. */
    private static Lockstep both(FlixIndex index, TreeMapOracle oracle) {
        return new Lockstep(index, oracle);
    }

    /** Applies each update to the index under test and to the oracle; a build also checks the structure. */
    private record Lockstep(FlixIndex index, TreeMapOracle oracle) {

        void build(long[] keys, long[] values, int n) {
            build(keys, values, n, false);
        }

        void build(long[] keys, long[] values, int n, boolean sorted) {
            index.build(keys, values, n, sorted);
            oracle.build(keys, values, n, sorted);
            if (index instanceof CpuFlixIndex cpu) {
                cpu.verifyStructure();
            }
        }

        void upsert(long[] keys, long[] values, int n) {
            upsert(keys, values, n, false);
        }

        void upsert(long[] keys, long[] values, int n, boolean sorted) {
            index.upsert(keys, values, n, sorted);
            oracle.upsert(keys, values, n, sorted);
        }

        void delete(long[] keys, int n) {
            delete(keys, n, false);
        }

        void delete(long[] keys, int n, boolean sorted) {
            index.delete(keys, n, sorted);
            oracle.delete(keys, n, sorted);
        }
    }
}
