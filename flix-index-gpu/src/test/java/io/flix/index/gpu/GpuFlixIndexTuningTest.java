package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.GpuTuning;
import io.flix.index.IndexStats;
import io.flix.index.TreeMapOracle;

import java.util.SplittableRandom;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A GPU index runs with the tuning of the config it is opened with, a system property overriding a field: the
 * automatic restructure, and when and how unsorted gets cut long chains, shown in {@link IndexStats}. Skips where
 * no GPU is usable.
 */
class GpuFlixIndexTuningTest {

    /** Built keys lie in [0, 2^40); appended ones above, so that every append lands in the last bucket. */
    private static final long APPEND_FROM = 1L << 41;
    private static final int APPEND_BATCH = 4096;
    private static final int APPENDS = 16;

    private static void assumeGpu() {
        Assumptions.assumeTrue(GpuSupport.isAvailable(), GpuSupport.unavailableReason());
    }

    private static GpuFlixIndex open(GpuTuning tuning) {
        return GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).gpuTuning(tuning).build());
    }

    @Test
    void anIndexRunsWithTheTuningOfItsConfig() {
        assumeGpu();
        final GpuTuning tuning = GpuTuning.DEFAULTS.withAutoRestructure(false).withLongChain(40).withChainGroup(3)
                .withTouchedBucketsRatio(2).withLocalitySortRatio(0).withGrowWhileSorting(false);
        try (GpuFlixIndex gpu = open(tuning)) {
            assertEquals(tuning, gpu.tuning());
        }
        try (GpuFlixIndex gpu = open(GpuTuning.DEFAULTS)) {
            assertEquals(GpuTuning.DEFAULTS, gpu.tuning());
        }
    }

    @Test
    void aSystemPropertyOverridesTheConfigWhenTheIndexOpens() {
        assumeGpu();
        System.setProperty("flix.gpu.chainGroup", "2");
        try (GpuFlixIndex gpu = open(GpuTuning.DEFAULTS.withAutoRestructure(false))) {
            assertEquals(GpuTuning.DEFAULTS.withAutoRestructure(false).withChainGroup(2), gpu.tuning());
            final TreeMapOracle oracle = appendOnly(gpu, new SplittableRandom(5));
            compareUnsortedGets(gpu, oracle, new SplittableRandom(6), "overridden");
            assertTrue(gpu.stats().longestChain() <= 2, "cut into buckets of the property's 2 nodes: "
                    + gpu.stats());
        } finally {
            System.clearProperty("flix.gpu.chainGroup");
        }
    }

    /**
     * Ever-growing keys land in the last bucket: by default an upsert whose chain growth passes 64 nodes ends with
     * a restructure, so the chains stay one node long; with autoRestructure off the last bucket's chain keeps the
     * hundreds of nodes the appends gave it.
     */
    @Test
    void autoRestructureDecidesWhetherAppendsLeaveALongChain() {
        assumeGpu();
        try (GpuFlixIndex gpu = open(GpuTuning.DEFAULTS)) {
            final TreeMapOracle oracle = appendOnly(gpu, new SplittableRandom(1));
            final IndexStats stats = gpu.stats();
            assertTrue(stats.longestChain() <= 1, "restructured after the appends: " + stats);
            compareSortedGets(gpu, oracle, "default");
        }
        try (GpuFlixIndex gpu = open(GpuTuning.DEFAULTS.withAutoRestructure(false))) {
            final TreeMapOracle oracle = appendOnly(gpu, new SplittableRandom(1));
            final IndexStats stats = gpu.stats();
            assertTrue(stats.longestChain() > 64, "the appends' chain stays: " + stats);
            compareSortedGets(gpu, oracle, "autoRestructure off");
        }
    }

    /**
     * With the appends' long chain kept: unsorted gets cut chains longer than longChain into buckets of chainGroup
     * nodes; a longChain beyond any chain leaves them as they are.
     */
    @Test
    void longChainAndChainGroupDecideWhetherAndHowUnsortedGetsCutChains() {
        assumeGpu();
        final GpuTuning noRestructure = GpuTuning.DEFAULTS.withAutoRestructure(false);
        final int[][] cases = {{Integer.MAX_VALUE, 8}, {16, 8}, {16, 2}};
        long bucketsCutInto8 = 0;
        for (int[] c : cases) {
            final String where = "longChain " + c[0] + ", chainGroup " + c[1];
            try (GpuFlixIndex gpu = open(noRestructure.withLongChain(c[0]).withChainGroup(c[1]))) {
                final TreeMapOracle oracle = appendOnly(gpu, new SplittableRandom(2));
                final IndexStats before = gpu.stats();
                assertTrue(before.longestChain() > 64, where + ": a long chain to start from: " + before);
                compareUnsortedGets(gpu, oracle, new SplittableRandom(3), where);
                final IndexStats after = gpu.stats();
                assertEquals(before.nodes(), after.nodes(), where + ": no key moves, no node is added");
                if (c[0] == Integer.MAX_VALUE) {
                    assertEquals(before.longestChain(), after.longestChain(), where + ": kept " + after);
                    assertEquals(before.buckets(), after.buckets(), where);
                } else {
                    assertTrue(after.longestChain() <= c[1], where + ": cut " + after);
                    assertTrue(after.buckets() > before.buckets(), where + ": " + before + " -> " + after);
                    if (c[1] == 8) {
                        bucketsCutInto8 = after.buckets();
                    } else {
                        assertTrue(after.buckets() > bucketsCutInto8, where + ": more buckets than cuts into 8 ("
                                + bucketsCutInto8 + "): " + after);
                    }
                }
                compareSortedGets(gpu, oracle, where + ", after");
            }
        }
    }

    /** A build of random keys in [0, 2^40), then APPENDS batches of ever-growing keys; returns the oracle. */
    private static TreeMapOracle appendOnly(GpuFlixIndex gpu, SplittableRandom rnd) {
        final TreeMapOracle oracle = new TreeMapOracle();
        final int built = 1 << 16;
        final long[] keys = new long[built];
        final long[] values = new long[built];
        for (int i = 0; i < built; i++) {
            keys[i] = rnd.nextLong(1L << 40);
            values[i] = rnd.nextLong(Long.MAX_VALUE);
        }
        gpu.build(keys, values, built);
        oracle.build(keys, values, built);
        long next = APPEND_FROM;
        for (int a = 0; a < APPENDS; a++) {
            final long[] k = new long[APPEND_BATCH];
            final long[] v = new long[APPEND_BATCH];
            for (int i = 0; i < APPEND_BATCH; i++) {
                next += 1 + rnd.nextInt(1000);
                k[i] = next;
                v[i] = rnd.nextLong(Long.MAX_VALUE);
            }
            gpu.upsert(k, v, APPEND_BATCH, true);
            oracle.upsert(k, v, APPEND_BATCH, true);
        }
        return oracle;
    }

    /** Unsorted gets (the path that cuts long chains) of stored keys and misses, against the oracle. */
    private static void compareUnsortedGets(GpuFlixIndex gpu, TreeMapOracle oracle, SplittableRandom rnd,
                                            String where) {
        final long[] stored = oracle.contents().keySet().stream().mapToLong(Long::longValue).toArray();
        final int n = 50_000;
        final long[] queries = new long[n];
        for (int i = 0; i < n; i++) {
            queries[i] = i % 3 == 0 ? rnd.nextLong() : stored[rnd.nextInt(stored.length)];
        }
        final long[] want = new long[n];
        final long[] got = new long[n];
        oracle.get(queries, n, want);
        gpu.get(queries, n, got, false);
        assertArrayEquals(want, got, where + ": unsorted gets");
    }

    /** Sorted gets (no cut) of every stored key, against the oracle. */
    private static void compareSortedGets(GpuFlixIndex gpu, TreeMapOracle oracle, String where) {
        final long[] stored = oracle.contents().keySet().stream().mapToLong(Long::longValue).toArray();
        final long[] want = oracle.contents().values().stream().mapToLong(Long::longValue).toArray();
        final long[] got = new long[stored.length];
        gpu.get(stored, stored.length, got, true);
        assertArrayEquals(want, got, where + ": sorted gets of every key");
    }
}
