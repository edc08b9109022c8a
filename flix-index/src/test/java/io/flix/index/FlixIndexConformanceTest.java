package io.flix.index;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.openjdk.jol.info.GraphStats;

/**
 * The conformance suite every {@link FlixIndex} backend must pass: each operation is compared against
 * {@link TreeMapOracle}, on fixed-seed random workloads, on edge cases and on the paper's skewed update workloads.
 * A backend's test extends this class and says how to open it, for example:
 *
 * <pre>{@code
 * class GpuFlixIndexConformanceTest extends FlixIndexConformanceTest {
 *     protected FlixIndex open(FlixConfig.Builder config) {
 *         return FlixIndex.open(config.backend(Backend.GPU).build());
 *     }
 *     protected void assumeBackendAvailable() {
 *         assumeTrue(GpuSupport.isAvailable(), GpuSupport::unavailableReason);
 *     }
 *     protected int nodeSizeFor(int nodeSize) {
 *         return GpuFlixIndex.NODE_SIZE;
 *     }
 * }
 * }</pre>
 *
 * <p>The randomized workloads use fixed seeds, so a failure names its workload, seed and step and reproduces. The
 * suite counts the operations it compared with the oracle and prints the total once per class.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class FlixIndexConformanceTest {

    /** Opens an empty index of the backend under test; {@code config} carries the node size, fill and threads. */
    protected abstract FlixIndex open(FlixConfig.Builder config);

    /** Skips the suite (with a JUnit assumption) where the backend cannot run here. */
    protected void assumeBackendAvailable() {
    }

    /** Whether stats describe real buckets and nodes, so that chain and node assertions apply. */
    protected boolean hasNodeStructure() {
        return true;
    }

    /**
     * The node size the backend runs a variant at. A backend with one fixed node size maps every variant to it, so
     * the variant still runs with its fill and thread count (nothing is skipped).
     */
    protected int nodeSizeFor(int nodeSize) {
        return nodeSize;
    }

    /** {@code variant} as this backend runs it. */
    protected IndexVariant onBackend(IndexVariant variant) {
        final int size = nodeSizeFor(variant.nodeSize());
        return size == variant.nodeSize() ? variant
                : new IndexVariant(variant.name() + " (run at node " + size + ")", size, variant.initialFill(),
                        variant.threads());
    }

    /** A configuration the suite runs under. */
    protected record IndexVariant(String name, int nodeSize, double initialFill, int threads) {
        FlixConfig.Builder configure(FlixConfig.Builder builder) {
            return builder.nodeSize(nodeSize).initialFill(initialFill).threads(threads);
        }

        int keysPerBuiltNode() {
            return Math.max(1, Math.min(nodeSize, (int) Math.round(nodeSize * initialFill)));
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static final IndexVariant DEFAULT = new IndexVariant("node 32 fill 0.5 threads 2", 32, 0.5, 2);
    static final IndexVariant TINY_NODES = new IndexVariant("node 4 fill 0.5 threads 1", 4, 0.5, 1);
    static final IndexVariant FULL_NODES = new IndexVariant("node 8 fill 1.0 threads 2", 8, 1.0, 2);
    static final IndexVariant WIDE_NODES = new IndexVariant("node 64 fill 0.25 threads 3", 64, 0.25, 3);
    static final IndexVariant FULL_32 = new IndexVariant("node 32 fill 1.0 threads 1", 32, 1.0, 1);

    static Stream<IndexVariant> variants() {
        return Stream.of(DEFAULT, TINY_NODES, FULL_NODES, WIDE_NODES, FULL_32);
    }

    static final long MIN = Long.MIN_VALUE;
    static final long MAX = Long.MAX_VALUE;
    static final long[] EXTREMES = {MIN, MIN + 1, MIN + 2, -1, 0, 1, MAX - 2, MAX - 1, MAX};

    private final DifferentialIndex.Counters counters = new DifferentialIndex.Counters();

    @BeforeAll
    void resetCounters() {
        counters.reset();
    }

    @AfterAll
    void reportCounters() {
        System.out.println(getClass().getSimpleName() + " oracle-checked operations: " + counters);
    }

    @BeforeEach
    void requireBackend() {
        assumeBackendAvailable();
    }

    /** Opens the backend under {@code variant} next to a fresh oracle. */
    protected DifferentialIndex differential(IndexVariant variant) {
        final IndexVariant v = onBackend(variant);
        return new DifferentialIndex(openIndex(v), hasNodeStructure(), v.nodeSize(), counters);
    }

    private FlixIndex openIndex(IndexVariant variant) {
        final FlixIndex index = open(onBackend(variant).configure(FlixConfig.builder()));
        assertNotNull(index, "open returned null");
        return index;
    }

    // =============================================================== randomized differential workloads

    /** How a workload draws its keys. */
    enum KeyShape {
        /** A few thousand distinct keys around zero: many hits, replacements and duplicates. */
        DENSE,
        /** The whole 64-bit range: mostly misses, wide ranges. */
        SPARSE,
        /** Tight clusters, some next to Long.MIN_VALUE and Long.MAX_VALUE: long chains. */
        CLUSTERED
    }

    static Stream<Arguments> randomWorkloads() {
        return Stream.of(
                arguments(DEFAULT, KeyShape.DENSE, 101L),
                arguments(DEFAULT, KeyShape.SPARSE, 102L),
                arguments(DEFAULT, KeyShape.CLUSTERED, 103L),
                arguments(TINY_NODES, KeyShape.DENSE, 104L),
                arguments(TINY_NODES, KeyShape.CLUSTERED, 105L),
                arguments(FULL_NODES, KeyShape.SPARSE, 106L),
                arguments(FULL_NODES, KeyShape.CLUSTERED, 107L),
                arguments(WIDE_NODES, KeyShape.DENSE, 108L),
                arguments(FULL_32, KeyShape.CLUSTERED, 109L));
    }

    private static final int RANDOM_STEPS = 1500;

    @ParameterizedTest(name = "{0}, {1} keys, seed {2}")
    @MethodSource("randomWorkloads")
    void randomDifferentialWorkload(IndexVariant variant, KeyShape shape, long seed) {
        final Keys gen = new Keys(new SplittableRandom(seed), shape);
        try (DifferentialIndex d = differential(variant)) {
            for (int step = 0; step < RANDOM_STEPS; step++) {
                final int op = gen.rnd.nextInt(100);
                d.context = variant + ", " + shape + ", seed " + seed + ", step " + step;
                if (op < 25) {
                    final Batch b = gen.pairs(gen.batchSize());
                    d.upsert(b.keys, b.values, b.n, b.sorted);
                } else if (op < 40) {
                    final Batch b = gen.deleteKeys(gen.batchSize());
                    d.delete(b.keys, b.n, b.sorted);
                } else if (op < 52) {
                    final Batch b = gen.probes(gen.batchSize());
                    d.get(b.keys, b.n, b.sorted);
                } else if (op < 61) {
                    final Batch b = gen.probes(gen.batchSize());
                    d.ceiling(b.keys, b.n, b.sorted);
                } else if (op < 70) {
                    final Batch b = gen.probes(gen.batchSize());
                    d.floor(b.keys, b.n, b.sorted);
                } else if (op < 80) {
                    randomRanges(d, gen);
                } else if (op < 84) {
                    d.checkExportPaged(gen.rnd.nextInt(4) == 0 ? MIN : gen.probe(), 1 + gen.rnd.nextInt(700));
                } else if (op < 87) {
                    d.restructure();
                } else if (op < 89) {
                    final int n = gen.rnd.nextInt(8) == 0 ? gen.rnd.nextInt(2) : gen.rnd.nextInt(4000);
                    final Batch b = gen.pairs(n);
                    d.build(b.keys, b.values, b.n, b.sorted);
                } else if (op < 90) {
                    buildCopyFromExport(variant, d);
                } else {
                    allHitLookups(d, gen);
                }
                if (step % 50 == 49) {
                    d.checkContents("at a checkpoint");
                    d.checkStats();
                }
            }
            d.context = variant + ", " + shape + ", seed " + seed + ", end";
            d.checkContents("at the end");
            d.checkStats();
            d.restructure();
            d.checkExportPaged(MIN, 1 + gen.rnd.nextInt(100));
        }
    }

    private static void randomRanges(DifferentialIndex d, Keys gen) {
        final int r = gen.rnd.nextInt(100);
        final int n = r < 5 ? 0 : r < 20 ? 1 : r < 90 ? gen.rnd.nextInt(2, 65) : gen.rnd.nextInt(65, 300);
        final int slack = gen.rnd.nextInt(3);
        final long[] lo = new long[n + slack];
        final long[] hi = new long[n + slack];
        for (int i = 0; i < n; i++) {
            final int shape = gen.rnd.nextInt(100);
            if (shape < 3) {
                lo[i] = MIN;
                hi[i] = MAX;
                continue;
            }
            lo[i] = gen.probe();
            final long width = shape < 15 ? 0
                    : shape < 50 ? gen.rnd.nextLong(0, 200)
                    : shape < 80 ? gen.rnd.nextLong(0, 100_000)
                    : gen.rnd.nextLong(0, 1L << 61);
            hi[i] = saturatingAdd(lo[i], width);
        }
        for (int i = n; i < n + slack; i++) {
            lo[i] = 1; // past n: an index that read these would see lo > hi
            hi[i] = 0;
        }
        final int[] limits = {1, 1, 2, 3, 5, 16, 100, 1000, Integer.MAX_VALUE};
        d.range(lo, hi, n, limits[gen.rnd.nextInt(limits.length)]);
    }

    /** Builds a second index from this one's export and checks it holds the oracle's contents. */
    private void buildCopyFromExport(IndexVariant variant, DifferentialIndex d) {
        final SortedPairs exported = d.index.export();
        try (FlixIndex copy = openIndex(variant)) {
            copy.build(exported);
            assertEquals(d.oracle.size(), copy.size(), () -> d.context + ": size of a copy built from an export");
            d.assertPairsEqual("of a copy built from an export", d.oracle.export(), copy.export());
        }
        // and the other way: this index rebuilt from the oracle's export keeps its contents
        d.build(d.oracle.export());
    }

    /** Point and ordered lookups of keys that are all present. */
    private static void allHitLookups(DifferentialIndex d, Keys gen) {
        final SortedPairs all = d.oracle.export();
        final int n = Math.min(all.size(), gen.rnd.nextInt(1, 2000));
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = all.keys()[gen.rnd.nextInt(all.size())];
        }
        final boolean sorted = gen.rnd.nextBoolean();
        if (sorted) {
            Arrays.sort(keys);
        }
        d.get(keys, n, sorted);
        d.ceiling(keys, n, sorted);
        d.floor(keys, n, sorted);
    }

    /** A batch: the first {@code n} elements count, the rest is junk an index must not read. */
    record Batch(long[] keys, long[] values, int n, boolean sorted) {
    }

    /** Seeded key, value and batch generator. */
    static final class Keys {
        final SplittableRandom rnd;
        final KeyShape shape;
        private final long[] pool = new long[1 << 15];
        private int pooled;
        private final long[] clusterCenters;

        Keys(SplittableRandom rnd, KeyShape shape) {
            this.rnd = rnd;
            this.shape = shape;
            this.clusterCenters = new long[] {MIN + 5_000, MAX - 5_000, 0, rnd.nextLong(), rnd.nextLong(),
                rnd.nextLong()};
        }

        long fresh() {
            if (rnd.nextInt(25) == 0) {
                return EXTREMES[rnd.nextInt(EXTREMES.length)];
            }
            return switch (shape) {
                case DENSE -> rnd.nextLong(-3000, 3001);
                case SPARSE -> rnd.nextLong();
                case CLUSTERED -> saturatingAdd(clusterCenters[rnd.nextInt(clusterCenters.length)],
                        rnd.nextLong(-20_000, 20_001));
            };
        }

        /** A key once inserted (present or since deleted), or a fresh one. */
        long pooled() {
            return pooled == 0 ? fresh() : pool[rnd.nextInt(pooled)];
        }

        long probe() {
            final int r = rnd.nextInt(100);
            if (r < 40) {
                return pooled();
            }
            if (r < 55) {
                return saturatingAdd(pooled(), rnd.nextBoolean() ? 1 : -1);
            }
            if (r < 62) {
                return EXTREMES[rnd.nextInt(EXTREMES.length)];
            }
            return fresh();
        }

        long value() {
            final int r = rnd.nextInt(50);
            if (r == 0) {
                return MAX;
            }
            if (r == 1) {
                return MIN + 1;
            }
            final long v = rnd.nextLong();
            return v == FlixIndex.NOT_FOUND ? 0 : v;
        }

        void remember(long key) {
            if (pooled < pool.length) {
                pool[pooled++] = key;
            } else {
                pool[rnd.nextInt(pool.length)] = key;
            }
        }

        int batchSize() {
            final int r = rnd.nextInt(100);
            if (r < 8) {
                return 0;
            }
            if (r < 16) {
                return 1;
            }
            if (r < 45) {
                return rnd.nextInt(2, 65);
            }
            if (r < 85) {
                return rnd.nextInt(65, 600);
            }
            return rnd.nextInt(600, 3000);
        }

        Batch pairs(int n) {
            final int slack = rnd.nextInt(3);
            final long[] keys = new long[n + slack];
            final long[] values = new long[n + slack];
            for (int i = 0; i < n; i++) {
                keys[i] = rnd.nextInt(10) < 3 ? pooled() : fresh();
                values[i] = value();
            }
            injectDuplicates(keys, n);
            for (int i = n; i < n + slack; i++) {
                keys[i] = fresh();
                values[i] = FlixIndex.NOT_FOUND; // past n: an index that read it would reject the batch
            }
            final boolean sorted = rnd.nextInt(10) < 3;
            if (sorted) {
                sortPairsStable(keys, values, n);
            }
            for (int i = 0; i < n; i++) {
                remember(keys[i]);
            }
            return new Batch(keys, values, n, sorted);
        }

        Batch deleteKeys(int n) {
            final int slack = rnd.nextInt(3);
            final long[] keys = new long[n + slack];
            for (int i = 0; i < n; i++) {
                keys[i] = rnd.nextInt(10) < 6 ? pooled() : fresh();
            }
            injectDuplicates(keys, n);
            for (int i = n; i < n + slack; i++) {
                keys[i] = pooled(); // past n: an index that read it would delete a key it must keep
            }
            final boolean sorted = rnd.nextInt(10) < 3;
            if (sorted) {
                Arrays.sort(keys, 0, n);
            }
            return new Batch(keys, null, n, sorted);
        }

        Batch probes(int n) {
            final long[] keys = new long[n + rnd.nextInt(3)];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = probe();
            }
            final boolean sorted = rnd.nextInt(10) < 3;
            if (sorted) {
                Arrays.sort(keys, 0, n);
            }
            return new Batch(keys, null, n, sorted);
        }

        private void injectDuplicates(long[] keys, int n) {
            if (n > 1 && rnd.nextInt(6) == 0) {
                final int copies = 1 + rnd.nextInt(Math.max(1, n / 4));
                for (int c = 0; c < copies; c++) {
                    keys[rnd.nextInt(n)] = keys[rnd.nextInt(n)];
                }
            }
        }
    }

    /** Sorts the first {@code n} pairs by key, keeping batch order among equal keys. */
    static void sortPairsStable(long[] keys, long[] values, int n) {
        final Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, Comparator.comparingLong(i -> keys[i])); // a stable merge sort
        final long[] k = Arrays.copyOf(keys, n);
        final long[] v = Arrays.copyOf(values, n);
        for (int i = 0; i < n; i++) {
            keys[i] = k[order[i]];
            values[i] = v[order[i]];
        }
    }

    static long saturatingAdd(long a, long b) {
        final long r = a + b;
        if (((a ^ r) & (b ^ r)) < 0) {
            return b > 0 ? MAX : MIN;
        }
        return r;
    }

    // =============================================================== the paper's skewed update workloads

    static Stream<Arguments> skewedWorkloads() {
        return Stream.of(DEFAULT, FULL_NODES, TINY_NODES).flatMap(v -> Stream.of(
                arguments(90, 90, v), arguments(25, 90, v), arguments(6, 90, v), arguments(3, 90, v)));
    }

    private static final int SKEW_BUILD = 1 << 14;
    private static final int SKEW_ROUND = SKEW_BUILD / 2; // four rounds grow the index by 200%, as in the paper

    /**
     * Section 5 of the paper: Y% of each round's inserted keys fall into a hot X% of the key range, the rest
     * uniformly outside it. Build, four rounds of inserts, four rounds deleting them again, checked after each.
     */
    @ParameterizedTest(name = "X={0}% of the key range gets Y={1}% of the updates, {2}")
    @MethodSource("skewedWorkloads")
    void skewedInsertAndDeleteRounds(int xPercent, int yPercent, IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(7_000L + xPercent);
        final long span = 1L << 62;
        final long base = -(1L << 61);
        final long hotWidth = span / 100 * xPercent;
        final long hotStart = base + rnd.nextLong(0, span - hotWidth);
        final java.util.function.LongSupplier skewedKey = () -> {
            if (rnd.nextInt(100) < yPercent) {
                return hotStart + rnd.nextLong(hotWidth);
            }
            final long k = base + rnd.nextLong(span - hotWidth);
            return k >= hotStart ? k + hotWidth : k;
        };
        try (DifferentialIndex d = differential(variant)) {
            d.context = "X=" + xPercent + " Y=" + yPercent + " " + variant + ", build";
            final long[] buildKeys = new long[SKEW_BUILD];
            final long[] buildValues = new long[SKEW_BUILD];
            for (int i = 0; i < SKEW_BUILD; i++) {
                buildKeys[i] = base + rnd.nextLong(span);
                buildValues[i] = rnd.nextLong(1, MAX);
            }
            d.build(buildKeys, buildValues, SKEW_BUILD, false);
            checkSkewedRound(d, rnd, skewedKey, buildKeys);

            final long[][] inserted = new long[4][SKEW_ROUND];
            for (int round = 0; round < 4; round++) {
                d.context = "X=" + xPercent + " Y=" + yPercent + " " + variant + ", insert round " + round;
                final long[] values = new long[SKEW_ROUND];
                for (int i = 0; i < SKEW_ROUND; i++) {
                    inserted[round][i] = skewedKey.getAsLong();
                    values[i] = rnd.nextLong(1, MAX);
                }
                final boolean sorted = round % 2 == 1;
                if (sorted) {
                    sortPairsStable(inserted[round], values, SKEW_ROUND);
                }
                d.upsert(inserted[round], values, SKEW_ROUND, sorted);
                checkSkewedRound(d, rnd, skewedKey, inserted[round]);
            }

            for (int round = 0; round < 4; round++) {
                d.context = "X=" + xPercent + " Y=" + yPercent + " " + variant + ", delete round " + round;
                final int absent = SKEW_ROUND / 10;
                final long[] keys = Arrays.copyOf(inserted[round], SKEW_ROUND + absent);
                for (int i = SKEW_ROUND; i < keys.length; i++) {
                    keys[i] = skewedKey.getAsLong(); // mostly absent
                }
                shuffle(keys, rnd);
                final boolean sorted = round % 2 == 1;
                if (sorted) {
                    Arrays.sort(keys);
                }
                d.delete(keys, keys.length, sorted);
                checkSkewedRound(d, rnd, skewedKey, inserted[round]);
            }
            d.context = "X=" + xPercent + " Y=" + yPercent + " " + variant + ", restructure after deletes";
            d.restructure();
        }
    }

    private static void checkSkewedRound(DifferentialIndex d, SplittableRandom rnd,
                                         java.util.function.LongSupplier skewedKey, long[] roundKeys) {
        d.checkContents("after the round");
        d.checkStats();
        final int n = 2048;
        final long[] hits = new long[n];
        final long[] probes = new long[n];
        for (int i = 0; i < n; i++) {
            hits[i] = roundKeys[rnd.nextInt(roundKeys.length)];
            probes[i] = skewedKey.getAsLong();
        }
        d.get(hits, n, false);
        d.get(probes, n, false);
        d.ceiling(probes, n, false);
        d.floor(probes, n, false);
        Arrays.sort(probes);
        d.ceiling(probes, n, true);
        final int ranges = 128;
        final long[] lo = new long[ranges];
        final long[] hi = new long[ranges];
        for (int i = 0; i < ranges; i++) {
            lo[i] = skewedKey.getAsLong();
            hi[i] = saturatingAdd(lo[i], rnd.nextLong(1L << 52));
        }
        d.range(lo, hi, ranges, 64);
    }

    private static void shuffle(long[] a, SplittableRandom rnd) {
        for (int i = a.length - 1; i > 0; i--) {
            final int j = rnd.nextInt(i + 1);
            final long t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }

    // =============================================================== chains and restructure

    /**
     * Bursts of inserts into one narrow key range after a build grow one bucket's chain; restructure flattens it,
     * and after deletes empty and thin out nodes, restructure gives nodes back. The bursts stay modest (chains of
     * about 64 nodes, a quarter of that after the first batch) because a backend may restructure or cut chains on
     * its own once they grow long.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void narrowInsertsChainAndRestructureFlattens(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(31);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", chains";
            final int spread = 2000;
            final long[] keys = new long[spread];
            final long[] values = new long[spread];
            for (int i = 0; i < spread; i++) {
                keys[i] = (i - spread / 2) * (1L << 40);
                values[i] = i;
            }
            shuffle(keys, rnd);
            d.build(keys, values, spread, false);
            d.checkStats();
            if (hasNodeStructure()) {
                assertEquals(1, d.stats().longestChain(), () -> d.context + ": chains after build " + d.stats());
            }

            final Burst first = narrowBurst(d, rnd, 32 * onBackend(variant).nodeSize(), 1);
            final long[] burst = first.keys();
            if (hasNodeStructure()) {
                assertTrue(first.longestChainSeen() > 1,
                        () -> d.context + ": a burst into one bucket must chain, longest chain seen "
                                + first.longestChainSeen());
            }
            d.restructure();
            probeAround(d, rnd, burst);

            // a second burst, then delete a contiguous block of it: whole nodes empty out
            final long[] second = narrowBurst(d, rnd, 32 * onBackend(variant).nodeSize(), 1L << 39).keys();
            Arrays.sort(second);
            final int blockFrom = second.length / 4;
            final int blockTo = second.length / 2;
            final long nodesBefore = d.stats().nodes();
            final long[] block = Arrays.copyOfRange(second, blockFrom, blockTo);
            d.delete(block, block.length, true);
            if (hasNodeStructure()) {
                assertTrue(d.stats().nodes() < nodesBefore,
                        () -> d.context + ": deleting " + block.length + " adjacent keys must free nodes: "
                                + nodesBefore + " before, " + d.stats() + " after");
            }
            // then thin out the rest of both bursts: three of four keys go, nodes stay underfull
            final long[] thin = new long[burst.length + second.length];
            int t = 0;
            for (long k : burst) {
                if (rnd.nextInt(4) != 0) {
                    thin[t++] = k;
                }
            }
            for (long k : second) {
                if (rnd.nextInt(4) != 0) {
                    thin[t++] = k;
                }
            }
            d.delete(thin, t, false);
            d.checkContents("after thinning");
            final long recovered = d.restructure();
            if (hasNodeStructure()) {
                assertTrue(recovered >= 0, () -> d.context + ": nodes recovered from underfull chains " + recovered);
            }
            probeAround(d, rnd, second);
            // restructure of a flat index changes nothing
            final long again = d.restructure();
            if (hasNodeStructure()) {
                assertEquals(0, again, () -> d.context + ": restructure of a restructured index");
            }
        }
    }

    /**
     * Inserts {@code count} keys from {@code base} on, inside (0, 2^40) where the build left no key, in four batches
     * of mixed sortedness.
     */
    private static Burst narrowBurst(DifferentialIndex d, SplittableRandom rnd, int count, long base) {
        final long[] keys = new long[count];
        for (int i = 0; i < count; i++) {
            keys[i] = base + (long) i * 7;
        }
        shuffle(keys, rnd);
        final int quarter = count / 4;
        long longestChain = 0;
        for (int b = 0; b < 4; b++) {
            final long[] k = Arrays.copyOfRange(keys, b * quarter, b == 3 ? count : (b + 1) * quarter);
            final long[] v = new long[k.length];
            for (int i = 0; i < v.length; i++) {
                v[i] = rnd.nextLong(-1_000_000, 1_000_000);
            }
            final boolean sorted = b % 2 == 0;
            if (sorted) {
                sortPairsStable(k, v, k.length);
            }
            d.upsert(k, v, k.length, sorted);
            longestChain = Math.max(longestChain, d.stats().longestChain());
        }
        d.checkContents("after a narrow burst");
        d.checkStats();
        return new Burst(keys, longestChain);
    }

    /** The keys of a burst and the longest chain seen after any of its batches. */
    record Burst(long[] keys, long longestChainSeen) {
    }

    private static void probeAround(DifferentialIndex d, SplittableRandom rnd, long[] keys) {
        final long[] probes = new long[3 * keys.length];
        for (int i = 0; i < keys.length; i++) {
            probes[3 * i] = keys[i];
            probes[3 * i + 1] = keys[i] - 1;
            probes[3 * i + 2] = keys[i] + 1 + rnd.nextInt(3);
        }
        d.get(probes, probes.length, false);
        d.ceiling(probes, probes.length, false);
        d.floor(probes, probes.length, false);
        d.range(new long[] {0, keys[0], MIN}, new long[] {1L << 40, keys[0] + 500, MAX}, 3, Integer.MAX_VALUE);
    }

    // =============================================================== edges

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void extremeKeysInEveryOperation(IndexVariant variant) {
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", extreme keys";
            final long[] keys = {MAX, 0, MIN, MAX - 1, -1, MIN + 1, 1};
            final long[] values = {1, MAX, 3, MIN + 1, 5, 0, -7};
            d.build(keys, values, keys.length, false);
            final long[] probes = {MIN, MIN + 1, MIN + 2, -2, -1, 0, 1, 2, MAX - 2, MAX - 1, MAX};
            lookAt(d, probes);
            d.range(new long[] {MIN, MIN, MAX, MIN, MAX - 1}, new long[] {MAX, MIN, MAX, MIN + 1, MAX}, 5,
                    Integer.MAX_VALUE);

            // upsert the extremes with new values, sorted and unsorted
            final long[] sortedKeys = {MIN, MIN + 1, MAX - 1, MAX};
            d.upsert(sortedKeys, new long[] {10, 11, 12, 13}, 4, true);
            d.upsert(new long[] {MAX, MIN}, new long[] {20, 21}, 2, false);
            lookAt(d, probes);

            // without MIN and MAX, ceiling(MAX) and floor(MIN) find nothing
            d.delete(new long[] {MAX, MIN}, 2, false);
            lookAt(d, probes);
            d.ceiling(new long[] {MAX}, 1, true);
            d.floor(new long[] {MIN}, 1, true);
            d.delete(new long[] {MIN + 1, MAX - 1}, 2, true);
            lookAt(d, probes);
            d.range(new long[] {MIN}, new long[] {MAX}, 1, Integer.MAX_VALUE);

            // only the extremes
            d.build(new long[] {MIN, MAX}, new long[] {1, 2}, 2, true);
            lookAt(d, probes);
            d.range(new long[] {MIN, MIN, 0}, new long[] {MAX, MAX, MAX}, 3, 1);
            d.restructure();
            d.checkExportPaged(MIN, 1);
            d.checkExportPaged(MAX, 1);
            d.checkExportPaged(MIN + 1, 4);
        }
    }

    private static void lookAt(DifferentialIndex d, long[] sortedProbes) {
        d.get(sortedProbes, sortedProbes.length, true);
        d.ceiling(sortedProbes, sortedProbes.length, true);
        d.floor(sortedProbes, sortedProbes.length, true);
        final long[] reversed = new long[sortedProbes.length];
        for (int i = 0; i < reversed.length; i++) {
            reversed[i] = sortedProbes[reversed.length - 1 - i];
        }
        d.get(reversed, reversed.length, false);
        d.ceiling(reversed, reversed.length, false);
        d.floor(reversed, reversed.length, false);
        d.checkContents("");
        d.checkStats();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void lastOccurrenceInABatchWins(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(17);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", duplicates";
            d.build(new long[] {5, 3, 5, 5, 3, MAX, MAX}, new long[] {1, 2, 3, 4, 5, 6, 7}, 7, false);
            assertEquals(4, d.oracle.get(5)); // the oracle itself keeps the last occurrence
            lookAt(d, new long[] {3, 4, 5, MAX});
            d.build(new long[] {3, 3, 5, 5, 5, MAX}, new long[] {1, 2, 3, 4, 9, 6}, 6, true);
            lookAt(d, new long[] {3, 4, 5, MAX});
            d.upsert(new long[] {9, 5, 9, 5, 9}, new long[] {1, 2, 3, 4, 5}, 5, false);
            d.upsert(new long[] {MIN, MIN, 5, 5}, new long[] {7, 8, 9, 10}, 4, true);
            lookAt(d, new long[] {MIN, 3, 5, 9, MAX});
            d.delete(new long[] {9, 9, 9, 4, 4}, 5, false);
            d.delete(new long[] {MIN, MIN, 5, 5}, 4, true);
            lookAt(d, new long[] {MIN, 3, 5, 9, MAX});

            // large batches (past any insertion-sort cutoff) from a small domain: many duplicates per key
            for (int round = 0; round < 4; round++) {
                final int n = 5000;
                final long[] k = new long[n];
                final long[] v = new long[n];
                for (int i = 0; i < n; i++) {
                    k[i] = rnd.nextLong(-100, 100);
                    v[i] = rnd.nextLong(0, MAX);
                }
                final boolean sorted = round % 2 == 1;
                if (sorted) {
                    sortPairsStable(k, v, n);
                }
                if (round < 2) {
                    d.build(k, v, n, sorted);
                } else {
                    d.upsert(k, v, n, sorted);
                }
                lookAt(d, sortedRange(-102, 102));
                final long[] del = new long[n];
                for (int i = 0; i < n; i++) {
                    del[i] = rnd.nextLong(-100, 100) * 3;
                }
                d.delete(del, n, false);
                lookAt(d, sortedRange(-102, 102));
            }
        }
    }

    private static long[] sortedRange(long from, long to) {
        final long[] a = new long[(int) (to - from)];
        for (int i = 0; i < a.length; i++) {
            a[i] = from + i;
        }
        return a;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void emptyBatchesForEveryOperation(IndexVariant variant) {
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", empty batches";
            final long[] none = new long[0];
            final long[] junk = {7, 8, 9};
            for (int state = 0; state < 2; state++) {
                d.upsert(none, none, 0, false);
                d.upsert(none, none, 0, true);
                d.upsert(junk, new long[] {1, 2, 3}, 0, false);
                d.delete(none, 0, false);
                d.delete(junk, 0, true);
                d.get(none, 0, false);
                d.get(junk, 0, true);
                d.ceiling(none, 0, false);
                d.floor(junk, 0, true);
                final RangeResult r = d.range(none, none, 0, 1);
                assertEquals(0, r.offsets()[0]);
                d.range(junk, new long[] {0, 0, 0}, 0, Integer.MAX_VALUE);
                d.checkExportPaged(MIN, 1);
                assertEquals(0, d.index.exportFrom(MIN, none, none), "exportFrom into empty arrays");
                d.checkContents("after empty batches");
                d.build(new long[] {1, 2, MAX}, new long[] {1, 2, 3}, 3, true);
            }
            // an empty build empties the index, from arrays or from an empty export
            d.build(junk, new long[] {1, 2, 3}, 0, false);
            d.checkContents("after an empty build");
            d.build(new long[] {1, 2, MAX}, new long[] {1, 2, 3}, 3, true);
            d.build(new SortedPairs(none, none, 0));
            d.checkContents("after building an empty export");
            d.checkStats();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void emptyIndexAnswersEveryLookup(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(5);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", empty index";
            for (int pass = 0; pass < 2; pass++) {
                final long[] probes = new long[300];
                for (int i = 0; i < probes.length; i++) {
                    probes[i] = i < EXTREMES.length ? EXTREMES[i] : rnd.nextLong();
                }
                d.get(probes, probes.length, false);
                d.ceiling(probes, probes.length, false);
                d.floor(probes, probes.length, false);
                d.range(new long[] {MIN, 0, 5}, new long[] {MAX, 0, 10}, 3, 1);
                assertEquals(0, d.index.export().size(), "export of an empty index");
                d.checkExportPaged(MIN, 3);
                d.checkExportPaged(MAX, 3);
                d.checkStats();
                d.restructure();
                // the second pass: emptied by deletes rather than new
                final long[] values = new long[probes.length];
                Arrays.fill(values, 42);
                d.upsert(probes, values, probes.length, false);
                d.delete(probes, probes.length, false);
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void deletesOfAbsentKeysChangeNothing(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(9);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", absent deletes";
            final int n = 3000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = (long) i * 2; // even keys only
                values[i] = rnd.nextLong(0, MAX);
            }
            d.build(keys, values, n, true);
            final SortedPairs before = d.index.export();
            final long[] odd = new long[n + 4];
            for (int i = 0; i < n; i++) {
                odd[i] = (long) i * 2 + 1;
            }
            odd[n] = MIN;
            odd[n + 1] = MAX;
            odd[n + 2] = -1;
            odd[n + 3] = (long) n * 2;
            d.delete(odd, odd.length, false);
            d.assertPairsEqual("after deleting absent keys", before, d.index.export());
            Arrays.sort(odd);
            d.delete(odd, odd.length, true);
            d.assertPairsEqual("after deleting absent keys, sorted", before, d.index.export());
            d.checkStats();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void allHitAndAllMissLookups(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(13);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", all hit / all miss";
            final int n = 4000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = (long) i * 1000 - 2_000_000;
                values[i] = rnd.nextLong(0, MAX);
            }
            shuffle(keys, rnd);
            d.build(keys, values, n, false);
            d.get(keys, n, false);
            d.ceiling(keys, n, false);
            d.floor(keys, n, false);
            final long[] sorted = keys.clone();
            Arrays.sort(sorted);
            d.get(sorted, n, true);
            d.ceiling(sorted, n, true);
            d.floor(sorted, n, true);

            final long[] misses = new long[n];
            for (int i = 0; i < n; i++) {
                misses[i] = keys[i] + 1 + rnd.nextInt(998); // between keys: every get misses
            }
            d.get(misses, n, false);
            d.ceiling(misses, n, false);
            d.floor(misses, n, false);
            final long[] below = new long[n];
            final long[] above = new long[n];
            for (int i = 0; i < n; i++) {
                below[i] = MIN + rnd.nextLong(0, 1L << 62); // below every key: floor finds none
                above[i] = MAX - rnd.nextLong(0, 1L << 62); // above every key: ceiling finds none
            }
            d.floor(below, n, false);
            d.ceiling(above, n, false);
            d.get(below, n, false);
            d.range(below, below, 100, 5);
        }
    }

    /**
     * A lookup may write its answers over its own queries (get's values, ceiling's or floor's keys or values into
     * the queries' array): each answer is that of the query as it was. Sizes that backends check and carry in
     * different ways (a GPU: on the host, on the device, in place, in chunks).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void answersMayBeWrittenOverTheirQueries(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(29);
        try (DifferentialIndex d = differential(variant)) {
            final int stored = 50_000;
            final long[] keys = rnd.longs(stored, -1L << 50, 1L << 50).toArray();
            final long[] values = rnd.longs(stored, 0, MAX).toArray();
            d.build(keys, values, stored, false);
            final FlixIndex index = d.index;
            for (int n : new int[] {1_000, 70_000, 140_000}) {
                final long[] queries = new long[n];
                for (int i = 0; i < n; i++) {
                    queries[i] = rnd.nextBoolean() ? keys[rnd.nextInt(stored)] : rnd.nextLong(-1L << 51, 1L << 51);
                }
                final long[] sorted = queries.clone();
                Arrays.sort(sorted);
                for (long[] batch : new long[][] {queries, sorted}) {
                    final boolean keysSorted = batch == sorted;
                    final String where = variant + ", n = " + n + (keysSorted ? ", sorted" : ", unsorted");
                    final long[] expectedKeys = new long[n];
                    final long[] expectedValues = new long[n];
                    d.oracle.get(batch, n, expectedValues, keysSorted);
                    long[] over = batch.clone();
                    index.get(over, n, over, keysSorted);
                    assertArrayEquals(expectedValues, over, where + ": get's values over its queries");
                    d.oracle.floor(batch, n, expectedKeys, expectedValues, keysSorted);
                    over = batch.clone();
                    final long[] floorValues = new long[n];
                    index.floor(over, n, over, floorValues, keysSorted);
                    assertArrayEquals(expectedKeys, over, where + ": floor's keys over its queries");
                    assertArrayEquals(expectedValues, floorValues, where + ": floor's values");
                    d.oracle.ceiling(batch, n, expectedKeys, expectedValues, keysSorted);
                    over = batch.clone();
                    final long[] ceilingKeys = new long[n];
                    index.ceiling(over, n, ceilingKeys, over, keysSorted);
                    assertArrayEquals(expectedValues, over, where + ": ceiling's values over its queries");
                    assertArrayEquals(expectedKeys, ceilingKeys, where + ": ceiling's keys");
                    over = batch.clone();
                    final long[] ceilingValues = new long[n];
                    index.ceiling(over, n, over, ceilingValues, keysSorted);
                    assertArrayEquals(expectedKeys, over, where + ": ceiling's keys over its queries");
                    assertArrayEquals(expectedValues, ceilingValues, where + ": ceiling's values");
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void deleteEverythingThenReinsert(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(21);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", delete all";
            final int n = 6000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = i < EXTREMES.length ? EXTREMES[i] : rnd.nextLong();
                values[i] = rnd.nextLong(0, MAX);
            }
            d.build(keys, values, n, false);
            // grow chains first, so that deleting empties chained nodes too
            final long[] more = new long[n];
            for (int i = 0; i < n; i++) {
                more[i] = keys[rnd.nextInt(100)] + 1 + i;
            }
            d.upsert(more, values, n, false);
            d.checkStats();
            for (int round = 0; round < 3; round++) {
                final long[] all = d.oracle.export().keys();
                shuffle(all, rnd);
                final int half = all.length / 2;
                d.delete(all, half, false);
                d.checkContents("after deleting half");
                final long[] rest = Arrays.copyOfRange(all, half, all.length);
                Arrays.sort(rest);
                d.delete(rest, rest.length, true);
                d.checkContents("after deleting everything");
                d.checkStats();
                d.get(keys, n, false);
                d.ceiling(keys, n, false);
                d.floor(keys, n, false);
                d.range(new long[] {MIN}, new long[] {MAX}, 1, Integer.MAX_VALUE);
                if (round == 1) {
                    d.restructure();
                }
                for (int i = 0; i < n; i++) {
                    values[i] = rnd.nextLong(0, MAX);
                }
                d.upsert(keys, values, n, false);
                d.upsert(more, values, n, false);
                d.get(keys, n, false);
                d.ceiling(more, n, false);
                d.floor(more, n, false);
                d.checkContents("after reinserting");
                d.checkStats();
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void rangeLimitsAndBounds(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(23);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", range limits";
            final int n = 3000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = (long) (i - n / 2) * 10;
                values[i] = rnd.nextLong(0, MAX);
            }
            keys[0] = MIN;
            keys[n - 1] = MAX;
            d.build(keys, values, n, true);
            final long[] lo = {MIN, MIN, MIN, 0, 0, 5, 10, -100, MAX, MIN, MAX - 5, 100, 100, 0};
            final long[] hi = {MAX, MAX, MIN, 0, 9, 5, 10, 100, MAX, MIN + 100, MAX, 20_000, 20_000, 29};
            for (int limit : new int[] {1, 2, 3, 7, 100, n - 1, n, n + 1, Integer.MAX_VALUE}) {
                final RangeResult r = d.range(lo, hi, lo.length, limit);
                for (int i = 0; i < lo.length; i++) {
                    assertTrue(r.count(i) <= limit, "limit " + limit + " exceeded by range " + i);
                }
            }
            // many ranges in one batch, overlapping, some cut short by the limit
            final int m = 500;
            final long[] l = new long[m];
            final long[] h = new long[m];
            for (int i = 0; i < m; i++) {
                l[i] = rnd.nextLong(-20_000, 20_000);
                h[i] = l[i] + rnd.nextLong(0, 3000);
            }
            d.range(l, h, m, 50);
            d.range(l, l, m, 1);
            d.range(l, h, m, Integer.MAX_VALUE);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void exportPagesAndRebuildsFromExports(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(29);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", export";
            final int n = 5000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = i < EXTREMES.length ? EXTREMES[i] : rnd.nextLong();
                values[i] = rnd.nextLong(0, MAX);
            }
            d.build(keys, values, n, false);
            for (int page : new int[] {1, 2, 31, 32, 33, 1000, n - 1, n, n + 5}) {
                d.checkExportPaged(MIN, page);
            }
            for (int i = 0; i < 20; i++) {
                d.checkExportPaged(keys[rnd.nextInt(n)] + rnd.nextInt(-1, 2), 1 + rnd.nextInt(300));
            }
            d.checkExportPaged(MAX, 1);
            d.checkExportPaged(MAX - 1, 2);

            // a paged export (the recipe of FlixIndex.exportAfter) rebuilds an equal index
            final long[] k = new long[n];
            final long[] v = new long[n];
            int total = 0;
            final long[] pk = new long[777];
            final long[] pv = new long[777];
            for (int copied = d.index.exportFrom(MIN, pk, pv); copied > 0;
                    copied = d.index.exportAfter(pk[copied - 1], pk, pv)) {
                System.arraycopy(pk, 0, k, total, copied);
                System.arraycopy(pv, 0, v, total, copied);
                total += copied;
            }
            assertEquals(d.oracle.size(), total, "pairs in a paged export");
            try (FlixIndex copy = openIndex(variant)) {
                copy.build(new SortedPairs(k, v, total));
                d.assertPairsEqual("of an index built from a paged export", d.oracle.export(), copy.export());
                copy.build(d.oracle.export());
                d.assertPairsEqual("of an index built from the oracle's export", d.oracle.export(), copy.export());
            }
            d.build(d.index.export()); // rebuilding from its own export changes nothing
            d.checkContents("after rebuilding from its own export");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void statsFollowTheContents(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(37);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", stats";
            d.checkStats();
            final int n = 10_000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = rnd.nextLong();
                values[i] = i;
            }
            d.build(keys, values, n, false);
            d.checkStats();
            if (hasNodeStructure()) {
                final IndexStats s = d.stats();
                final IndexVariant v = onBackend(variant);
                final long expectedNodes = (n + v.keysPerBuiltNode() - 1) / v.keysPerBuiltNode();
                assertTrue(s.nodes() >= expectedNodes,
                        () -> d.context + ": a build at fill " + variant.initialFill() + " needs at least "
                                + expectedNodes + " nodes: " + s);
                assertEquals(v.nodeSize(), s.nodeSize());
            }
            final long bytesBuilt = d.stats().bytes();
            for (int i = 0; i < n; i++) {
                keys[i] = rnd.nextLong();
            }
            d.upsert(keys, values, n, false);
            d.checkStats();
            if (hasNodeStructure()) {
                assertTrue(d.stats().bytes() >= bytesBuilt,
                        () -> d.context + ": doubling the keys shrank the memory: " + bytesBuilt + " -> "
                                + d.stats());
            }
            d.delete(keys, n / 2, false);
            d.checkStats();
            d.restructure();
        }
    }

    // =============================================================== paging an export

    /**
     * Pages through the index with the recipe of {@link FlixIndex#exportAfter} where the smallest and the largest
     * key are stored, in pages of 1, 2 and 3 pairs: each page equals the oracle's, and the paging ends after the
     * largest key (checkExportPaged fails a paging that runs past one page per pair).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void exportPagingEndsAfterTheLargestKey(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(31);
        final long[] randomWithExtremes = new long[300];
        for (int i = 0; i < randomWithExtremes.length; i++) {
            randomWithExtremes[i] = i < EXTREMES.length ? EXTREMES[i] : rnd.nextLong();
        }
        final long[][] contents = {{MAX}, {MIN}, {MIN, MAX}, {MAX - 1, MAX}, {-1, 0, MAX}, EXTREMES,
            randomWithExtremes};
        try (DifferentialIndex d = differential(variant)) {
            for (long[] keys : contents) {
                d.context = variant + ", paging through " + keys.length + " keys from " + keys[0];
                final long[] values = new long[keys.length];
                for (int i = 0; i < keys.length; i++) {
                    values[i] = rnd.nextLong(0, MAX);
                }
                d.build(keys, values, keys.length, false);
                for (int page = 1; page <= 3; page++) {
                    d.checkExportPaged(MIN, page);
                    d.checkExportPaged(MAX, page);
                    d.checkExportPaged(MAX - 1, page);
                }
                final long[] one = new long[1];
                assertEquals(0, d.index.exportAfter(MAX, one, one), () -> d.context + ": exportAfter(MAX)");
                assertEquals(0, d.index.exportAfter(MAX, new long[0], new long[0]),
                        () -> d.context + ": exportAfter into empty arrays");
            }
        }
    }

    // =============================================================== concurrent use

    /** Lookup threads of the concurrency tests. */
    private static final int LOOKUP_THREADS = 3;
    /** Checked lookups each thread runs on a fixed index. */
    private static final int LOOKUPS_PER_THREAD = 150;
    /** Checked lookups each thread runs after the updates ended (it runs more while they are applied). */
    private static final int LOOKUPS_AFTER_UPDATES = 10;
    /** Update batches of the test with an updater thread. */
    private static final int UPDATES = 60;
    /** A safety net for threads that should have ended long before; never what a test asserts. */
    private static final long STUCK_MINUTES = 5;

    static Stream<IndexVariant> concurrencyVariants() {
        return Stream.of(DEFAULT, TINY_NODES, WIDE_NODES);
    }

    /** Several threads look up in one index at once: every answer of every thread equals the oracle's. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("concurrencyVariants")
    void concurrentLookupsEachAnswerAsTheOracle(IndexVariant variant) throws Exception {
        final SplittableRandom rnd = new SplittableRandom(43);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", concurrent lookups";
            final long[] universe = universe(rnd, 40_000);
            final long[] values = new long[universe.length];
            for (int i = 0; i < values.length; i++) {
                values[i] = rnd.nextLong(0, MAX);
            }
            d.build(universe, values, 25_000, false);
            final IndexStates states = new IndexStates();
            states.record(d.oracle);
            final ConcurrentRun run = new ConcurrentRun();
            for (int t = 0; t < LOOKUP_THREADS; t++) {
                final CheckedLookups lookups = new CheckedLookups(d.index, states, universe, 100 + t,
                        variant + ", lookup thread " + t);
                run.add(() -> {
                    while (lookups.lookups() < LOOKUPS_PER_THREAD && !run.stopping()) {
                        lookups.runOne();
                    }
                });
            }
            run.runAll();
            d.checkContents("after the concurrent lookups");
        }
    }

    /**
     * Lookup threads run while an updater thread applies upserts, deletes, a build and restructures: each answer
     * must be that of the index after some update that was applied while the lookup ran (or the last one applied
     * before it began), never of a partly applied update. Values carry the update that wrote them, so answers from
     * different states differ.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("concurrencyVariants")
    void lookupsDuringUpdatesSeeTheIndexBetweenTwoUpdates(IndexVariant variant) throws Exception {
        final SplittableRandom rnd = new SplittableRandom(47);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", lookups during updates";
            final long[] universe = universe(rnd, 20_000);
            final TreeMapOracle planned = new TreeMapOracle();
            final IndexStates states = new IndexStates();
            final List<Consumer<FlixIndex>> updates = new ArrayList<>();
            final Batch initial = versionedPairs(rnd, universe, 8_000, 0);
            d.build(initial.keys(), initial.values(), initial.n(), false);
            planned.build(initial.keys(), initial.values(), initial.n(), false);
            states.record(planned);
            for (int u = 1; u <= UPDATES; u++) {
                final Consumer<FlixIndex> update;
                if (u % 10 == 0) {
                    update = FlixIndex::restructure;
                } else if (u == 35) {
                    final Batch b = versionedPairs(rnd, universe, 6_000, u);
                    update = x -> x.build(b.keys(), b.values(), b.n(), false);
                } else if (u % 3 == 0) {
                    final long[] keys = new long[1_500];
                    for (int i = 0; i < keys.length; i++) {
                        keys[i] = universe[rnd.nextInt(universe.length)];
                    }
                    update = x -> x.delete(keys, keys.length, false);
                } else {
                    final Batch b = versionedPairs(rnd, universe, rnd.nextInt(10, 3_000), u);
                    update = x -> x.upsert(b.keys(), b.values(), b.n(), b.sorted());
                }
                updates.add(update);
                update.accept(planned);
                states.record(planned);
            }
            final AtomicBoolean updatesDone = new AtomicBoolean();
            final ConcurrentRun run = new ConcurrentRun();
            run.add(() -> {
                try {
                    for (Consumer<FlixIndex> update : updates) {
                        if (run.stopping()) {
                            return;
                        }
                        states.updateStarting();
                        update.accept(d.index);
                        states.updateApplied();
                        update.accept(d.oracle);
                        d.checkSize("after update " + states.appliedUpdates());
                    }
                } finally {
                    updatesDone.set(true);
                }
            });
            final List<CheckedLookups> lookupThreads = new ArrayList<>();
            for (int t = 0; t < LOOKUP_THREADS; t++) {
                final CheckedLookups lookups = new CheckedLookups(d.index, states, universe, 200 + t,
                        variant + ", lookup thread " + t);
                lookupThreads.add(lookups);
                run.add(() -> {
                    long after = 0;
                    while (after < LOOKUPS_AFTER_UPDATES && !run.stopping()) {
                        final boolean done = updatesDone.get();
                        lookups.runOne();
                        after += done ? 1 : 0;
                    }
                });
            }
            run.runAll();
            assertEquals(UPDATES, states.appliedUpdates(), "updates applied");
            System.out.println(d.context + ": " + lookupThreads.stream().mapToLong(CheckedLookups::lookups).sum()
                    + " checked lookups, " + lookupThreads.stream().mapToLong(CheckedLookups::overlappingUpdates).sum()
                    + " of them while an update ran");
            d.checkContents("after the updates");
        }
    }

    /**
     * close() while lookup threads run: each call either answers as the oracle or, once the index is closed,
     * throws IllegalStateException; no call fails in any other way, and every call after close throws.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("concurrencyVariants")
    void closeWhileLookupsRunWaitsForThemAndLaterCallsFail(IndexVariant variant) throws Exception {
        final SplittableRandom rnd = new SplittableRandom(53);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", close during lookups";
            final long[] universe = universe(rnd, 20_000);
            final Batch pairs = versionedPairs(rnd, universe, 15_000, 1);
            d.build(pairs.keys(), pairs.values(), pairs.n(), false);
            final IndexStates states = new IndexStates();
            states.record(d.oracle);
            final CountDownLatch eachLookedUp = new CountDownLatch(LOOKUP_THREADS);
            final ConcurrentRun run = new ConcurrentRun();
            for (int t = 0; t < LOOKUP_THREADS; t++) {
                final CheckedLookups lookups = new CheckedLookups(d.index, states, universe, 300 + t,
                        variant + ", lookup thread " + t);
                run.add(() -> {
                    try {
                        while (!run.stopping()) {
                            lookups.runOne();
                            eachLookedUp.countDown();
                        }
                    } catch (IllegalStateException closed) {
                        assertTrue(String.valueOf(closed.getMessage()).contains("closed"), closed::toString);
                        final IllegalStateException later = assertThrows(IllegalStateException.class,
                                () -> d.index.get(new long[] {1}, 1, new long[1]), "a call after close");
                        assertTrue(String.valueOf(later.getMessage()).contains("closed"), later::toString);
                    }
                });
            }
            run.add(() -> {
                assertTrue(eachLookedUp.await(STUCK_MINUTES, TimeUnit.MINUTES), "lookup threads did not start");
                d.index.close();
                assertThrows(IllegalStateException.class, d.index::size, "size() after close");
            });
            run.runAll();
        }
    }

    /** Keys for the concurrency tests: the extremes, then distinct random keys. */
    private static long[] universe(SplittableRandom rnd, int n) {
        final long[] keys = new long[n];
        System.arraycopy(EXTREMES, 0, keys, 0, EXTREMES.length);
        for (int i = EXTREMES.length; i < n; i++) {
            keys[i] = rnd.nextInt(4) == 0 ? rnd.nextLong(-50_000, 50_000) : rnd.nextLong();
        }
        return keys;
    }

    /** {@code n} pairs of keys drawn from the universe, the value naming the update and the key: unique per state. */
    private static Batch versionedPairs(SplittableRandom rnd, long[] universe, int n, int update) {
        final long[] keys = new long[n];
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            final int k = rnd.nextInt(universe.length);
            keys[i] = universe[k];
            values[i] = (long) update * universe.length + k;
        }
        final boolean sorted = rnd.nextInt(4) == 0;
        if (sorted) {
            sortPairsStable(keys, values, n);
        }
        return new Batch(keys, values, n, sorted);
    }

    /**
     * Tasks started together on threads of their own. The first failure is rethrown and tells the others to stop
     * ({@link #stopping()}); a task still running after STUCK_MINUTES fails the test (a safety net only).
     */
    private static final class ConcurrentRun {
        private final List<Task> tasks = new ArrayList<>();
        private final AtomicBoolean stop = new AtomicBoolean();

        @FunctionalInterface
        interface Task {
            void run() throws Exception;
        }

        void add(Task task) {
            tasks.add(task);
        }

        boolean stopping() {
            return stop.get();
        }

        void runAll() throws Exception {
            final ExecutorService threads = Executors.newFixedThreadPool(tasks.size());
            final ExecutorCompletionService<Void> done = new ExecutorCompletionService<>(threads);
            final CyclicBarrier start = new CyclicBarrier(tasks.size());
            try {
                for (Task task : tasks) {
                    done.submit(() -> {
                        try {
                            start.await(STUCK_MINUTES, TimeUnit.MINUTES);
                            task.run();
                            return null;
                        } catch (Throwable t) {
                            stop.set(true);
                            throw t;
                        }
                    });
                }
                for (int i = 0; i < tasks.size(); i++) {
                    final Future<Void> finished = done.poll(STUCK_MINUTES, TimeUnit.MINUTES);
                    if (finished == null) {
                        stop.set(true);
                        fail("a thread of the test is still running after " + STUCK_MINUTES + " minutes");
                    }
                    try {
                        finished.get();
                    } catch (ExecutionException e) {
                        if (e.getCause() instanceof Error error) {
                            throw error;
                        }
                        throw (Exception) e.getCause();
                    }
                }
            } finally {
                stop.set(true);
                threads.shutdownNow();
                assertTrue(threads.awaitTermination(STUCK_MINUTES, TimeUnit.MINUTES), "test threads did not end");
            }
        }
    }

    // =============================================================== memory after close

    /** Most heap a closed index may hold: its fields and small bookkeeping, no arrays of its data or scratch. */
    private static final long CLOSED_INDEX_MAX_BYTES = 16 * 1024;

    static {
        // lets JOL read the fields of lambdas (hidden classes) that an index may hold
        System.setProperty("jol.magicFieldOffset", "true");
    }

    /**
     * Heap bytes that the object graph of a closed index holds. A backend whose indexes share process-wide objects
     * (the GPU backends' device context) overrides this to leave those out.
     */
    protected long heapBytesHeldWhenClosed(FlixIndex index) {
        return GraphStats.parseInstance(index).totalSize();
    }

    /**
     * After close the index holds next to nothing, however much it held for its data and its batch scratch
     * before: closed indexes that stay referenced (a registry, a failed job's operator) cost no memory. (The graph
     * of an open index is not walked: its worker threads reach most of the JVM.)
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("concurrencyVariants")
    void closeReleasesWhatTheIndexHeld(IndexVariant variant) {
        final SplittableRandom rnd = new SplittableRandom(59);
        try (DifferentialIndex d = differential(variant)) {
            d.context = variant + ", memory after close";
            final long[] universe = universe(rnd, 300_000);
            final Batch pairs = versionedPairs(rnd, universe, 200_000, 1);
            d.build(pairs.keys(), pairs.values(), pairs.n(), false);
            // batches on every path that keeps scratch: sorted over threads, radix sorted, small
            for (int n : new int[] {140_000, 3_000, 50}) {
                final Batch probes = versionedPairs(rnd, universe, n, 2);
                d.get(probes.keys(), n, false);
                d.ceiling(probes.keys(), n, false);
                d.floor(probes.keys(), n, false);
                d.upsert(probes.keys(), probes.values(), n, false);
                d.delete(probes.keys(), n / 3, false);
            }
            d.range(new long[] {MIN}, new long[] {MAX}, 1, 1000);
            final IndexStats open = d.stats();
            assertTrue(open.bytes() > 1 << 20, () -> d.context + ": the open index holds " + open);
            d.index.close();
            final long closed = heapBytesHeldWhenClosed(d.index);
            System.out.println(d.context + ": " + closed + " bytes of heap held after close; open, a structure of "
                    + open.bytes() + " bytes");
            assertTrue(closed <= CLOSED_INDEX_MAX_BYTES, () -> d.context + ": a closed index holds " + closed
                    + " bytes of heap; open it held a structure of " + open.bytes() + " bytes");
        }
    }
}
