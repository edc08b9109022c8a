package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.GpuMemoryBudget;
import io.flix.index.GpuTuning;
import io.flix.index.IndexStats;
import io.flix.index.RangeResult;
import io.flix.index.SortedPairs;
import io.flix.index.TreeMapOracle;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import jcuda.Pointer;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The GPU backend against the {@link TreeMapOracle}: every operation on random batches (fixed seeds), extremes,
 * duplicates, empty batches, node splits and chains, deletes that empty nodes, restructure and export, and that
 * closing returns every byte of device memory. Skips where no GPU is usable.
 */
class GpuFlixIndexTest {

    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;

    private static void assumeGpu() {
        Assumptions.assumeTrue(GpuSupport.isAvailable(), GpuSupport.unavailableReason());
    }

    private static GpuFlixIndex openGpu() {
        return openGpu(GpuTuning.DEFAULTS);
    }

    private static GpuFlixIndex openGpu(GpuTuning tuning) {
        return GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).gpuTuning(tuning).build());
    }

    /** An account of device 0's ledger held to no budget, for buffers a test allocates itself. */
    private static DeviceMemoryLedger.Account unbudgeted() throws Exception {
        return GpuRuntime.device(0).memory.account(GpuMemoryBudget.NONE);
    }

    // ---------------------------------------------------------------------------------------------------------
    // Runs everywhere

    @Test
    void rejectsNodeSizesOtherThan32() {
        final FlixConfig config = FlixConfig.builder().backend(Backend.GPU).nodeSize(16).build();
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FlixIndex.open(config));
        assertTrue(e.getMessage().contains("nodeSize"), e.getMessage());
    }

    @Test
    void withoutGpuOpeningSaysWhyAndHowToGetIt() {
        Assumptions.assumeFalse(GpuSupport.isAvailable(), "a GPU is usable here");
        final String reason = GpuSupport.unavailableReason();
        assertNotNull(reason);
        final IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> FlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build()));
        assertEquals(reason, e.getMessage());
    }

    // ---------------------------------------------------------------------------------------------------------
    // Needs a GPU

    @Test
    void opensThroughTheFacadeForGpuAndAuto() {
        assumeGpu();
        try (FlixIndex gpu = FlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build());
             FlixIndex auto = FlixIndex.open(FlixConfig.builder().build())) {
            assertEquals(Backend.GPU, gpu.backend());
            assertEquals(Backend.GPU, auto.backend());
        }
    }

    @Test
    void randomOperationsMatchTheOracle() {
        assumeGpu();
        for (long seed : new long[] {1, 2, 3}) {
            // narrow key spaces give duplicates, splits and chains; the full range gives sparse buckets
            for (long spread : new long[] {5_000, 1L << 40, Long.MAX_VALUE}) {
                runRandomRounds(seed, spread);
            }
        }
    }

    /**
     * The same with the node pool growing in place from its first node (by default only pools of 2^20 nodes and
     * more do): upserts map more memory, restructures and close unmap it while the device may still be working.
     */
    @Test
    void randomOperationsMatchTheOracleWithAPoolThatGrowsInPlace() {
        assumeGpu();
        for (long spread : new long[] {5_000, Long.MAX_VALUE}) {
            runRandomRounds(4, spread, GpuTuning.DEFAULTS.withInPlaceMinNodes(0));
        }
    }

    private void runRandomRounds(long seed, long spread) {
        runRandomRounds(seed, spread, GpuTuning.DEFAULTS);
    }

    private void runRandomRounds(long seed, long spread, GpuTuning tuning) {
        final SplittableRandom rnd = new SplittableRandom(seed * 31 + spread);
        try (GpuFlixIndex gpu = openGpu(tuning); TreeMapOracle oracle = new TreeMapOracle()) {
            final int buildSize = rnd.nextInt(20_000);
            final long[][] build = randomPairs(rnd, buildSize, spread);
            gpu.build(build[0], build[1], buildSize);
            oracle.build(build[0], build[1], buildSize);
            assertSameContents(oracle, gpu, "seed " + seed + " after build");
            for (int round = 0; round < 25; round++) {
                final String where = "seed " + seed + " spread " + spread + " round " + round;
                final int op = rnd.nextInt(10);
                final int n = rnd.nextInt(4) == 0 ? rnd.nextInt(40) : rnd.nextInt(30_000);
                if (op < 4) {
                    final long[][] pairs = randomPairs(rnd, n, spread);
                    final boolean sorted = rnd.nextBoolean();
                    if (sorted) {
                        sortPairsStable(pairs, n);
                    }
                    gpu.upsert(pairs[0], pairs[1], n, sorted);
                    oracle.upsert(pairs[0], pairs[1], n, sorted);
                } else if (op < 7) {
                    final long[] keys = mixedKeys(rnd, oracle, n, spread);
                    final boolean sorted = rnd.nextBoolean();
                    if (sorted) {
                        Arrays.sort(keys, 0, n);
                    }
                    gpu.delete(keys, n, sorted);
                    oracle.delete(keys, n, sorted);
                } else if (op < 9) {
                    compareLookups(rnd, oracle, gpu, spread, where);
                    compareRanges(rnd, oracle, gpu, spread, where);
                } else {
                    final long nodesBefore = gpu.stats().nodes();
                    final long freed = gpu.restructure();
                    oracle.restructure();
                    final IndexStats after = gpu.stats();
                    assertEquals(nodesBefore - after.nodes(), freed, where + ": restructure's return");
                    assertTrue(after.longestChain() <= 1, where + ": chains after restructure");
                }
                assertSameContents(oracle, gpu, where);
            }
            compareLookups(rnd, oracle, gpu, spread, "seed " + seed + " final");
            compareRanges(rnd, oracle, gpu, spread, "seed " + seed + " final");
        }
    }

    @Test
    void otherInitialFillsCutBucketsAccordingly() {
        assumeGpu();
        for (double fill : new double[] {1.0, 0.1}) {
            final SplittableRandom rnd = new SplittableRandom(Double.hashCode(fill));
            try (GpuFlixIndex gpu = GpuFlixIndex.open(
                    FlixConfig.builder().backend(Backend.GPU).initialFill(fill).build());
                 TreeMapOracle oracle = new TreeMapOracle()) {
                final long[][] build = randomPairs(rnd, 8_000, 1L << 24);
                gpu.build(build[0], build[1], 8_000);
                oracle.build(build[0], build[1], 8_000);
                final int perNode = fill == 1.0 ? 32 : 3;
                assertEquals((oracle.size() + perNode - 1) / perNode, gpu.stats().buckets(), "fill " + fill);
                for (int round = 0; round < 4; round++) {
                    final long[][] more = randomPairs(rnd, 3_000, 1L << 24);
                    gpu.upsert(more[0], more[1], 3_000);
                    oracle.upsert(more[0], more[1], 3_000);
                    final long[] gone = mixedKeys(rnd, oracle, 2_000, 1L << 24);
                    gpu.delete(gone, 2_000);
                    oracle.delete(gone, 2_000);
                    assertSameContents(oracle, gpu, "fill " + fill + " round " + round);
                    compareLookups(rnd, oracle, gpu, 1L << 24, "fill " + fill + " round " + round);
                }
                gpu.restructure();
                assertEquals((oracle.size() + perNode - 1) / perNode, gpu.stats().nodes(), "fill " + fill);
                assertSameContents(oracle, gpu, "fill " + fill + " restructured");
            }
        }
    }

    @Test
    void largeMergesIntoOneNodeMatchTheOracle() {
        assumeGpu();
        final SplittableRandom rnd = new SplittableRandom(23);
        try (GpuFlixIndex gpu = openGpu(GpuTuning.DEFAULTS.withAutoRestructure(false));
             TreeMapOracle oracle = new TreeMapOracle()) {
            // thousands of keys into an empty bucket, then into a node whose keys they partly replace
            final long[][] first = randomPairs(rnd, 3_000, 1L << 16);
            gpu.upsert(first[0], first[1], 3_000);
            oracle.upsert(first[0], first[1], 3_000);
            assertSameContents(oracle, gpu, "into an empty bucket");
            final long[] stored = oracle.export().keys();
            final long[] keys = new long[6_000];
            final long[] values = new long[6_000];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = i % 3 == 0 ? stored[rnd.nextInt(stored.length)] : rnd.nextLong(1L << 16) - (1L << 15);
                values[i] = rnd.nextLong(Long.MAX_VALUE);
            }
            // the node's own keys are among them: their values are replaced
            keys[7] = 0;
            keys[100] = 10;
            keys[2_000] = 20;
            keys[5_999] = -10;
            keys[3_000] = Long.MIN_VALUE;
            gpu.build(new long[] {0, 10, 20, -10, Long.MIN_VALUE}, new long[] {1, 2, 3, 4, 5}, 5);
            oracle.build(new long[] {0, 10, 20, -10, Long.MIN_VALUE}, new long[] {1, 2, 3, 4, 5}, 5);
            gpu.upsert(keys, values, keys.length);
            oracle.upsert(keys, values, keys.length);
            assertSameContents(oracle, gpu, "into one node");
            compareLookups(rnd, oracle, gpu, 1L << 16, "into one node");
            gpu.upsert(keys, values, keys.length, false); // every key replaced, spread over the chain now
            oracle.upsert(keys, values, keys.length, false);
            assertSameContents(oracle, gpu, "replaced");
        }
    }

    /**
     * Unsorted gets take one of three paths: where chains are short, batches of at least one key a bucket are
     * sorted by their top varying bits first (a locality sort: the queries are not fully ordered) and smaller ones
     * are looked up as they are, one thread a query; where a chain may be long, the batch is fully sorted and a
     * warp walks each chain once. All against the oracle: no chains, short chains, one long chain; with
     * duplicates, extremes, one repeated key (nothing to sort), keys that differ in their low bits only and keys
     * of both signs (the sign bit varies).
     */
    @Test
    void unsortedGetsMatchTheOracleOnEveryPath() {
        assumeGpu();
        final SplittableRandom rnd = new SplittableRandom(29);
        try (GpuFlixIndex gpu = openGpu(GpuTuning.DEFAULTS.withAutoRestructure(false));
             TreeMapOracle oracle = new TreeMapOracle()) {
            final long[][] build = randomPairs(rnd, 1 << 17, 1L << 40);
            gpu.build(build[0], build[1], build[0].length);
            oracle.build(build[0], build[1], build[0].length);
            final int buckets = (int) gpu.stats().buckets();
            compareUnsortedGets(rnd, oracle, gpu, buckets, 1L << 40, "no chains");
            // about 48 keys a bucket: chains of two or three nodes
            final long[][] spread = randomPairs(rnd, buckets * 32, 1L << 40);
            gpu.upsert(spread[0], spread[1], spread[0].length);
            oracle.upsert(spread[0], spread[1], spread[0].length);
            assertTrue(gpu.stats().nodes() > buckets * 3 / 2, "short chains: " + gpu.stats());
            compareUnsortedGets(rnd, oracle, gpu, buckets, 1L << 40, "short chains");
            // one long chain: many keys into a narrow range, kept long (lookups would cut it) for the full sort
            final long[][] heavy = randomPairs(rnd, 40_000, 1L << 20);
            gpu.upsert(heavy[0], heavy[1], heavy[0].length);
            oracle.upsert(heavy[0], heavy[1], heavy[0].length);
            assertTrue(gpu.stats().longestChain() > 300, "a chain longer than the one-thread path takes: "
                    + gpu.stats());
            gpu.tune(gpu.tuning().withLongChain(Integer.MAX_VALUE));
            compareUnsortedGets(rnd, oracle, gpu, buckets, 1L << 20, "a long chain");
            assertTrue(gpu.stats().longestChain() > 300, "the chain was kept: " + gpu.stats());
            gpu.tune(gpu.tuning().withLongChain(GpuTuning.DEFAULTS.longChain()));
            compareUnsortedGets(rnd, oracle, gpu, buckets, 1L << 20, "the long chain cut into buckets");
            assertTrue(gpu.stats().longestChain() <= 8, "cut: " + gpu.stats());
        }
    }

    /**
     * Skewed upserts grow chains of tens of nodes in a few buckets; the first unsorted get after them cuts every
     * chain longer than eight nodes into buckets of eight (no key moves). Every answer, before and after further
     * upserts and deletes into the cut buckets (deletes that empty whole buckets too), matches the oracle.
     */
    @Test
    void unsortedGetsCutLongChainsIntoBucketsOfEightNodes() {
        assumeGpu();
        final SplittableRandom rnd = new SplittableRandom(37);
        try (GpuFlixIndex gpu = openGpu(GpuTuning.DEFAULTS.withAutoRestructure(false));
             TreeMapOracle oracle = new TreeMapOracle()) {
            final long[][] build = randomPairs(rnd, 20_000, 1L << 50);
            gpu.build(build[0], build[1], build[0].length);
            oracle.build(build[0], build[1], build[0].length);
            final long hotA = 1L << 40;
            final long hotB = -(1L << 45);
            for (int round = 0; round < 3; round++) {
                final String where = "round " + round;
                final int n = 20_000 << (2 * round); // more keys a bucket each round, as the buckets multiply
                final long[] keys = new long[n];
                final long[] values = new long[n];
                for (int i = 0; i < n; i++) {
                    keys[i] = (i % 2 == 0 ? hotA : hotB) + rnd.nextLong(1L << 28);
                    values[i] = rnd.nextLong(Long.MAX_VALUE);
                }
                gpu.upsert(keys, values, n, false);
                oracle.upsert(keys, values, n, false);
                final IndexStats chained = gpu.stats();
                assertTrue(chained.longestChain() > 16, where + ": long chains " + chained);
                compareLookups(rnd, oracle, gpu, 1L << 50, where);
                final IndexStats cut = gpu.stats();
                assertTrue(cut.longestChain() <= 8, where + ": cut " + cut);
                assertTrue(cut.buckets() > chained.buckets(), where + ": buckets " + chained + " -> " + cut);
                assertEquals(chained.nodes(), cut.nodes(), where + ": nodes stay");
                assertSameContents(oracle, gpu, where);
                compareLookups(oracle, gpu, Arrays.copyOf(keys, 5_000), where + ", stored keys");
                compareRanges(rnd, oracle, gpu, 1L << 50, where);
                compareGets(oracle, gpu, mixedKeys(rnd, oracle, 100_000, 1L << 50), where + ", many gets");
            }
            // delete every key of one hot range: its cut buckets empty, and the next cut drops them
            final long[] inA = oracle.contents().subMap(hotA, hotA + (1L << 28)).keySet().stream()
                    .mapToLong(Long::longValue).toArray();
            gpu.delete(inA, inA.length, false);
            oracle.delete(inA, inA.length, false);
            assertSameContents(oracle, gpu, "hot range deleted");
            compareLookups(rnd, oracle, gpu, 1L << 50, "hot range deleted");
            compareLookups(oracle, gpu, Arrays.copyOf(inA, 5_000), "hot range deleted, its keys");
            final long[][] more = randomPairs(rnd, 60_000, 1L << 29);
            for (int i = 0; i < more[0].length; i++) {
                more[0][i] = (i % 2 == 0 ? hotA : hotB) + Math.floorMod(more[0][i], 1L << 28);
            }
            gpu.upsert(more[0], more[1], more[0].length, false);
            oracle.upsert(more[0], more[1], more[0].length, false);
            compareLookups(rnd, oracle, gpu, 1L << 50, "refilled");
            compareRanges(rnd, oracle, gpu, 1L << 50, "refilled");
            // after an unsorted get no chain is longer than the limit (16): measured, or cut to eight
            assertTrue(gpu.stats().longestChain() <= 16, "after lookups: " + gpu.stats());
            assertSameContents(oracle, gpu, "refilled");
        }
    }

    /** The random operations with every unsorted get and range cutting every chain into one-node buckets. */
    @Test
    void randomOperationsMatchTheOracleWhereLookupsCutEveryChain() {
        assumeGpu();
        for (long spread : new long[] {5_000, 1L << 40}) {
            runRandomRounds(5, spread, GpuTuning.DEFAULTS.withChainGroup(1).withLongChain(1));
        }
    }

    /**
     * Unsorted update batches take one of four sort paths by their keys' bits: uniform keys (CUB sorts their top
     * log2(n) + 4 varying bits, sort_within_digits finishes runs of about one key); keys clustered below those
     * bits (runs of several keys, sorted in place); keys clustered so densely that runs pass 32 (a full sort
     * follows); one key repeated (no sort). Each batch repeats keys with new values (the last wins) and is applied
     * to a built index and an oracle, then half of its keys are deleted unsorted. At 2^20 pairs
     * (UNSORTED_KEYS_FIRST_MIN) the keys cross first and are sorted with their batch positions while the values cross.
     */
    @ParameterizedTest(name = "n = {0}")
    @ValueSource(ints = {1 << 17, AbstractGpuIndex.UNSORTED_KEYS_FIRST_MIN})
    void unsortedUpdateBatchesMatchTheOracleOnEverySortPath(int n) {
        assumeGpu();
        final SplittableRandom rnd = new SplittableRandom(31);
        // log2(n) + 4 is 21 or 24: CUB sorts 24 bits, here bits 31..54
        final int quarterBits = Integer.numberOfTrailingZeros(n) - 2;
        final long[] uniform = new long[n];
        final long[] shortRuns = new long[n];
        final long[] longRuns = new long[n];
        final long[] oneKey = new long[n];
        for (int i = 0; i < n; i++) {
            uniform[i] = rnd.nextLong();
            // bits 31..54 take n / 4 values: runs of about four keys
            shortRuns[i] = ((long) rnd.nextInt(n >> 2) << (55 - quarterBits)) | rnd.nextLong(1L << 31);
            // bits 31..54 take four values: runs of about 2^15 keys
            longRuns[i] = ((long) rnd.nextInt(4) << 53) | rnd.nextLong(1L << 31);
            oneKey[i] = -12345;
        }
        final long[][] batches = {uniform, shortRuns, longRuns, oneKey};
        final String[] names = {"uniform", "short runs", "runs past 32", "one key"};
        for (int b = 0; b < batches.length; b++) {
            final long[] keys = batches[b];
            for (int i = 0; i < n; i += 7) {
                keys[i] = keys[rnd.nextInt(n)];  // duplicates, in any order
            }
            try (GpuFlixIndex gpu = openGpu(); TreeMapOracle oracle = new TreeMapOracle()) {
                final long[][] build = randomPairs(rnd, 1 << 16, Long.MAX_VALUE);
                gpu.build(build[0], build[1], build[0].length);
                oracle.build(build[0], build[1], build[0].length);
                final long[] values = new long[n];
                for (int i = 0; i < n; i++) {
                    values[i] = i;
                }
                gpu.upsert(keys, values, n);
                oracle.upsert(keys, values, n);
                assertSameContents(oracle, gpu, names[b] + ": upsert");
                final long[] half = Arrays.copyOf(keys, n / 2);
                gpu.delete(half, half.length);
                oracle.delete(half, half.length);
                assertSameContents(oracle, gpu, names[b] + ": delete");
            }
        }
    }

    /**
     * A traced index times each step without waiting for the device and prints a call's steps, with their host and
     * device milliseconds since the call began, once the next call begins: every step of a build shows, and within
     * a call neither time goes back.
     */
    @Test
    void aTracedIndexPrintsEachCallsStepsWithHostAndDeviceTimes() {
        assumeGpu();
        final int n = 1 << 16;
        final long[][] pairs = randomPairs(new SplittableRandom(5), n, Long.MAX_VALUE);
        final PrintStream err = System.err;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try {
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            try (GpuFlixIndex gpu = openGpu(GpuTuning.DEFAULTS.withTrace(true))) {
                gpu.build(pairs[0], pairs[1], n);
                gpu.get(pairs[0], n, new long[n], false);
            }
        } finally {
            System.setErr(err);
        }
        final String text = captured.toString(StandardCharsets.UTF_8);
        final Pattern step = Pattern.compile("  \\[flix\\.gpu]   (.+?) +(\\d+\\.\\d{3}) +(\\d+\\.\\d{3})");
        final java.util.List<String> seen = new java.util.ArrayList<>();
        double host = 0;
        double device = 0;
        for (String line : text.split("\n")) {
            final Matcher m = step.matcher(line);
            if (m.matches()) {
                final double h = Double.parseDouble(m.group(2));
                final double d = Double.parseDouble(m.group(3));
                assertTrue(h >= host && d >= device, "times within a call go forward: " + line + "\n" + text);
                host = h;
                device = d;
                seen.add(m.group(1));
            } else if (line.startsWith("  [flix.gpu] ")) {
                host = 0; // a call's header line
                device = 0;
            }
        }
        for (String expected : new String[] {"upload " + n, "build sorted, deduped", "layout memory", "laid out"}) {
            assertTrue(seen.contains(expected), expected + " among the steps printed:\n" + text);
        }
    }

    private static void compareUnsortedGets(SplittableRandom rnd, TreeMapOracle oracle, GpuFlixIndex gpu,
                                            int buckets, long spread, String where) {
        final int large = 300_000;
        for (int n : new int[] {1, 37, buckets - 1, buckets, large}) {
            compareGets(oracle, gpu, mixedKeys(rnd, oracle, n, spread), where + ", n = " + n);
        }
        final long[] stored = oracle.export().keys();
        final long[] extremes = mixedKeys(rnd, oracle, large, spread);
        for (int i = 0; i < extremes.length; i += 97) {
            extremes[i] = i % 2 == 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        compareGets(oracle, gpu, extremes, where + ", extremes among many");
        final long[] oneKey = new long[large];
        Arrays.fill(oneKey, stored[stored.length / 2]);
        compareGets(oracle, gpu, oneKey, where + ", one key repeated");
        final long[] lowBits = new long[large];
        for (int i = 0; i < lowBits.length; i++) {
            lowBits[i] = (stored[stored.length / 3] & ~7L) | rnd.nextInt(8);
        }
        compareGets(oracle, gpu, lowBits, where + ", low three bits vary");
        final long[] bothSigns = new long[large];
        for (int i = 0; i < bothSigns.length; i++) {
            bothSigns[i] = i % 2 == 0 ? -1 - rnd.nextInt(3) : rnd.nextInt(3);
        }
        compareGets(oracle, gpu, bothSigns, where + ", around zero");
    }

    private static void compareGets(TreeMapOracle oracle, FlixIndex gpu, long[] queries, String where) {
        final int n = queries.length;
        final long[] want = new long[n];
        final long[] got = new long[n];
        oracle.get(queries, n, want, false);
        gpu.get(queries, n, got, false);
        assertArrayEquals(want, got, where + ": get");
    }

    @Test
    void extremeKeysAndValues() {
        assumeGpu();
        final long[] keys = {Long.MAX_VALUE, Long.MIN_VALUE, 0, -1, 1, Long.MIN_VALUE + 1, Long.MAX_VALUE - 1};
        final long[] values = {Long.MAX_VALUE, Long.MIN_VALUE + 1, 0, -1, 1, 7, Long.MAX_VALUE - 1};
        try (GpuFlixIndex gpu = openGpu(); TreeMapOracle oracle = new TreeMapOracle()) {
            gpu.build(keys, values, keys.length);
            oracle.build(keys, values, keys.length);
            assertSameContents(oracle, gpu, "extremes");
            final long[] queries = {Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE + 1, Long.MAX_VALUE - 1, 0, 2, -2,
                Long.MIN_VALUE + 2, Long.MAX_VALUE - 2};
            compareLookups(oracle, gpu, queries, "extremes");
            compareRanges(oracle, gpu, new long[] {Long.MIN_VALUE, Long.MIN_VALUE, 0, Long.MAX_VALUE},
                    new long[] {Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE, Long.MAX_VALUE}, 4, 100, "extremes");
            final long[] gone = {Long.MIN_VALUE, Long.MAX_VALUE};
            gpu.delete(gone, 2);
            oracle.delete(gone, 2);
            assertSameContents(oracle, gpu, "extremes deleted");
            compareLookups(oracle, gpu, queries, "extremes deleted");
            gpu.upsert(gone, new long[] {3, 4}, 2);
            oracle.upsert(gone, new long[] {3, 4}, 2);
            assertSameContents(oracle, gpu, "extremes upserted");
            compareLookups(oracle, gpu, queries, "extremes upserted");
        }
    }

    @Test
    void lastOccurrenceInABatchWins() {
        assumeGpu();
        try (GpuFlixIndex gpu = openGpu()) {
            gpu.build(new long[] {5, 9, 5, 5, 9}, new long[] {1, 2, 3, 4, 5}, 5);
            assertEquals(4, value(gpu, 5));
            assertEquals(5, value(gpu, 9));
            gpu.upsert(new long[] {9, 9, 7, 9}, new long[] {10, 11, 12, 13}, 4);
            assertEquals(13, value(gpu, 9));
            gpu.upsert(new long[] {1, 1, 2, 2}, new long[] {20, 21, 22, 23}, 4, true);
            assertEquals(21, value(gpu, 1));
            assertEquals(23, value(gpu, 2));
            assertEquals(5, gpu.size());
            gpu.delete(new long[] {9, 9, 9, 100}, 4);
            assertEquals(NOT_FOUND, value(gpu, 9));
            assertEquals(4, gpu.size());
        }
    }

    @Test
    void emptyIndexAndEmptyBatches() {
        assumeGpu();
        try (GpuFlixIndex gpu = openGpu(); TreeMapOracle oracle = new TreeMapOracle()) {
            final long[] queries = {Long.MIN_VALUE, -5, 0, 5, Long.MAX_VALUE};
            compareLookups(oracle, gpu, queries, "empty");
            compareRanges(oracle, gpu, new long[] {Long.MIN_VALUE}, new long[] {Long.MAX_VALUE}, 1, 10, "empty");
            assertEquals(0, gpu.exportFrom(Long.MIN_VALUE, new long[4], new long[4]));
            gpu.upsert(new long[0], new long[0], 0);
            gpu.delete(new long[] {1, 2}, 2);
            gpu.get(new long[0], 0, new long[0]);
            assertEquals(0, gpu.range(new long[0], new long[0], 0, 1).ranges());
            assertEquals(0, gpu.restructure());
            gpu.build(new long[] {1, 2, 3}, new long[] {1, 2, 3}, 3);
            gpu.build(new long[0], new long[0], 0);
            assertEquals(0, gpu.size());
            compareLookups(oracle, gpu, queries, "rebuilt empty");
            gpu.upsert(new long[] {4, 2}, new long[] {40, 20}, 2);
            oracle.upsert(new long[] {4, 2}, new long[] {40, 20}, 2);
            assertSameContents(oracle, gpu, "upsert into empty");
            compareLookups(oracle, gpu, queries, "upsert into empty");
            gpu.delete(new long[] {2, 4}, 2);
            oracle.delete(new long[] {2, 4}, 2);
            assertSameContents(oracle, gpu, "deleted to empty");
            compareLookups(oracle, gpu, queries, "deleted to empty");
        }
    }

    @Test
    void heavyInsertsSplitNodesIntoChainsAndRestructureFlattensThem() {
        assumeGpu();
        final SplittableRandom rnd = new SplittableRandom(11);
        try (GpuFlixIndex gpu = openGpu(GpuTuning.DEFAULTS.withAutoRestructure(false));
             TreeMapOracle oracle = new TreeMapOracle()) {
            final long[][] build = randomPairs(rnd, 2_000, 1L << 50);
            gpu.build(build[0], build[1], 2_000);
            oracle.build(build[0], build[1], 2_000);
            // many keys into a narrow slice of the key space: a few buckets grow long chains
            final long[] keys = new long[100_000];
            final long[] values = new long[keys.length];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = (1L << 40) + rnd.nextLong(1L << 30);
                values[i] = rnd.nextLong(Long.MAX_VALUE);
            }
            gpu.upsert(keys, values, keys.length);
            oracle.upsert(keys, values, keys.length);
            final IndexStats chained = gpu.stats();
            assertTrue(chained.longestChain() > 100, "longest chain " + chained.longestChain());
            assertSameContents(oracle, gpu, "chains");
            compareLookups(rnd, oracle, gpu, 1L << 50, "chains");
            compareLookups(oracle, gpu, Arrays.copyOf(keys, 5_000), "chains, stored keys");
            compareRanges(rnd, oracle, gpu, 1L << 50, "chains");
            // light batch: the single-thread kernel
            final long[][] light = randomPairs(rnd, 50, 1L << 50);
            gpu.upsert(light[0], light[1], 50);
            oracle.upsert(light[0], light[1], 50);
            assertSameContents(oracle, gpu, "light upsert");
            final long nodesBefore = gpu.stats().nodes();
            final long freed = gpu.restructure();
            final IndexStats flat = gpu.stats();
            assertEquals(nodesBefore - flat.nodes(), freed, "restructure's return");
            assertEquals(1, flat.longestChain());
            assertEquals((oracle.size() + 15) / 16, flat.nodes());
            assertEquals(flat.nodes(), flat.buckets());
            assertSameContents(oracle, gpu, "restructured");
            compareLookups(rnd, oracle, gpu, 1L << 50, "restructured");
        }
    }

    @Test
    void everGrowingKeysDoNotGrowOneChainWithoutBound() {
        assumeGpu();
        final SplittableRandom rnd = new SplittableRandom(17);
        try (GpuFlixIndex gpu = openGpu(); TreeMapOracle oracle = new TreeMapOracle()) {
            final long[][] build = randomPairs(rnd, 20_000, 1L << 20);
            gpu.build(build[0], build[1], 20_000);
            oracle.build(build[0], build[1], 20_000);
            // ids above every stored key: each batch lands in the last bucket (about 21 nodes a batch)
            long next = 1L << 21;
            long longest = 0;
            for (int batch = 0; batch < 100; batch++) {
                final long[] keys = new long[500];
                final long[] values = new long[500];
                for (int i = 0; i < 500; i++) {
                    keys[i] = next++;
                    values[i] = rnd.nextLong(Long.MAX_VALUE);
                }
                gpu.upsert(keys, values, 500);
                oracle.upsert(keys, values, 500);
                longest = Math.max(longest, gpu.stats().longestChain());
            }
            assertTrue(longest <= 64 + 30, "longest chain " + longest);
            assertSameContents(oracle, gpu, "after appends");
            compareLookups(rnd, oracle, gpu, 1L << 22, "after appends");
        }
    }

    @Test
    void deletesCompactNodesAndReturnEmptyOnesToTheFreeList() {
        assumeGpu();
        final SplittableRandom rnd = new SplittableRandom(5);
        try (GpuFlixIndex gpu = openGpu(); TreeMapOracle oracle = new TreeMapOracle()) {
            final int n = 50_000;
            final long[][] build = randomPairs(rnd, n, Long.MAX_VALUE);
            gpu.build(build[0], build[1], n);
            oracle.build(build[0], build[1], n);
            final IndexStats full = gpu.stats();
            // delete all but every 100th key: most nodes empty out
            final long[] doomed = new long[n];
            int d = 0;
            for (int i = 0; i < n; i++) {
                if (i % 100 != 0) {
                    doomed[d++] = build[0][i];
                }
            }
            gpu.delete(doomed, d);
            oracle.delete(doomed, d);
            final IndexStats sparse = gpu.stats();
            assertSameContents(oracle, gpu, "sparse");
            assertTrue(sparse.nodes() < full.nodes() / 4, sparse + " vs " + full);
            assertEquals(full.nodes() + full.freeNodes(), sparse.nodes() + sparse.freeNodes(), "nodes are conserved");
            compareLookups(rnd, oracle, gpu, Long.MAX_VALUE, "sparse");
            compareLookups(oracle, gpu, Arrays.copyOf(build[0], 3_000), "sparse, former keys");
            compareRanges(rnd, oracle, gpu, Long.MAX_VALUE, "sparse");
            // the freed nodes are reused: re-inserting everything needs no more nodes than before
            gpu.upsert(build[0], build[1], n);
            oracle.upsert(build[0], build[1], n);
            assertSameContents(oracle, gpu, "refilled");
            assertEquals(full.nodes() + full.freeNodes(), gpu.stats().nodes() + gpu.stats().freeNodes(),
                    "no growth while the free list suffices");
        }
    }

    @Test
    void exportPagesThroughTheIndexInKeyOrder() {
        assumeGpu();
        final SplittableRandom rnd = new SplittableRandom(9);
        try (GpuFlixIndex gpu = openGpu(); TreeMapOracle oracle = new TreeMapOracle()) {
            final long[][] build = randomPairs(rnd, 10_000, 1L << 20);
            gpu.build(build[0], build[1], 10_000);
            oracle.build(build[0], build[1], 10_000);
            final long[] pageKeys = new long[777];
            final long[] pageValues = new long[777];
            final long[] oracleKeys = new long[777];
            final long[] oracleValues = new long[777];
            long total = 0;
            int got = gpu.exportFrom(Long.MIN_VALUE, pageKeys, pageValues);
            int want = oracle.exportFrom(Long.MIN_VALUE, oracleKeys, oracleValues);
            while (true) {
                assertEquals(want, got, "page after " + total + " pairs");
                assertArrayEquals(Arrays.copyOf(oracleKeys, want), Arrays.copyOf(pageKeys, got));
                assertArrayEquals(Arrays.copyOf(oracleValues, want), Arrays.copyOf(pageValues, got));
                total += got;
                if (got == 0) {
                    break;
                }
                final long last = pageKeys[got - 1];
                got = gpu.exportAfter(last, pageKeys, pageValues);
                want = oracle.exportAfter(last, oracleKeys, oracleValues);
            }
            assertEquals(oracle.size(), total);
            // a page starting inside the key space, and a rebuild from an export
            final int mid = gpu.exportFrom(build[0][0], pageKeys, pageValues);
            assertEquals(oracle.exportFrom(build[0][0], oracleKeys, oracleValues), mid);
            assertArrayEquals(oracleKeys, pageKeys);
            try (GpuFlixIndex copy = openGpu()) {
                copy.build(gpu.export());
                assertSameContents(oracle, copy, "rebuilt from export");
            }
        }
    }

    @Test
    void badInputThrowsBeforeAnythingChanges() {
        assumeGpu();
        try (GpuFlixIndex gpu = openGpu(); TreeMapOracle oracle = new TreeMapOracle()) {
            gpu.build(new long[] {1, 2, 3}, new long[] {10, 20, 30}, 3);
            oracle.build(new long[] {1, 2, 3}, new long[] {10, 20, 30}, 3);
            assertThrows(IllegalArgumentException.class,
                    () -> gpu.upsert(new long[] {4, 5}, new long[] {40, NOT_FOUND}, 2));
            assertThrows(IllegalArgumentException.class,
                    () -> gpu.upsert(new long[] {5, 4}, new long[] {50, 40}, 2, true));
            assertThrows(IllegalArgumentException.class, () -> gpu.delete(new long[] {3, 1}, 2, true));
            assertThrows(IllegalArgumentException.class, () -> gpu.delete(null, 1));
            assertThrows(IllegalArgumentException.class, () -> gpu.get(new long[] {1}, 2, new long[2]));
            assertThrows(IllegalArgumentException.class, () -> gpu.get(new long[] {1}, -1, new long[2]));
            assertThrows(IllegalArgumentException.class, () -> gpu.build(new long[] {9}, new long[] {NOT_FOUND}, 1));
            assertThrows(IllegalArgumentException.class, () -> gpu.range(new long[] {5}, new long[] {4}, 1, 1));
            assertThrows(IllegalArgumentException.class, () -> gpu.range(new long[] {1}, new long[] {4}, 1, 0));
            assertSameContents(oracle, gpu, "after rejected calls");
            // large batches are checked on the device: the faults sit near the end
            final int n = 200_000;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = 10L * i;
                values[i] = i;
            }
            values[n - 7] = NOT_FOUND;
            final IllegalArgumentException reserved = assertThrows(IllegalArgumentException.class,
                    () -> gpu.upsert(keys, values, n, true));
            assertTrue(reserved.getMessage().contains("values[" + (n - 7) + "]"), reserved.getMessage());
            assertThrows(IllegalArgumentException.class, () -> gpu.build(keys, values, n));
            values[n - 7] = 1;
            keys[n - 3] = -1;
            final IllegalArgumentException unsorted = assertThrows(IllegalArgumentException.class,
                    () -> gpu.upsert(keys, values, n, true));
            assertTrue(unsorted.getMessage().contains("keys[" + (n - 3) + "]"), unsorted.getMessage());
            assertThrows(IllegalArgumentException.class, () -> gpu.delete(keys, n, true));
            assertThrows(IllegalArgumentException.class, () -> gpu.get(keys, n, new long[n], true));
            assertThrows(IllegalArgumentException.class,
                    () -> gpu.floor(keys, n, new long[n], new long[n], true));
            assertSameContents(oracle, gpu, "after rejected large batches");
            // the same batches without the broken promise are accepted
            gpu.upsert(keys, values, n, false);
            oracle.upsert(keys, values, n, false);
            assertSameContents(oracle, gpu, "large upsert");
        }
    }

    @Test
    void callsFromOtherThreadsMakeTheContextCurrentThemselves() throws Exception {
        assumeGpu();
        try (GpuFlixIndex gpu = openGpu(); TreeMapOracle oracle = new TreeMapOracle()) {
            final long[][] pairs = randomPairs(new SplittableRandom(21), 5_000, 1L << 30);
            final Thread builder = new Thread(() -> gpu.build(pairs[0], pairs[1], 5_000));
            builder.start();
            builder.join();
            oracle.build(pairs[0], pairs[1], 5_000);
            final long[] got = new long[5_000];
            final Thread reader = new Thread(() -> gpu.get(pairs[0], 5_000, got));
            reader.start();
            reader.join();
            final long[] want = new long[5_000];
            oracle.get(pairs[0], 5_000, want);
            assertArrayEquals(want, got);
        }
    }

    @Test
    void anAllocationBeyondTheDeviceNamesTheSizes() throws Exception {
        assumeGpu();
        try (GpuFlixIndex gpu = openGpu()) { // makes the context current on this thread
            gpu.build(new long[] {1}, new long[] {2}, 1);
            final long bytesBefore = DeviceBuffer.liveBytes();
            final GpuOutOfMemoryException e = assertThrows(GpuOutOfMemoryException.class,
                    () -> DeviceBuffer.allocate(unbudgeted(), 1L << 50, "a test buffer"));
            assertTrue(e.getMessage().contains(Long.toString(1L << 50)) && e.getMessage().contains("a test buffer"),
                    e.getMessage());
            assertEquals(bytesBefore, DeviceBuffer.liveBytes());
            assertEquals(2, value(gpu, 1), "the index still works");
        }
    }

    /** The node pool's buffers: memory mapped behind reserved addresses, so growing keeps address and contents. */
    @Test
    void aBufferThatGrowsInPlaceKeepsItsAddressAndContents() throws Exception {
        assumeGpu();
        try (GpuFlixIndex gpu = openGpu()) { // makes the context current on this thread
            assertTrue(GpuRuntime.device(0).virtualMemoryManagement, "the device has virtual memory management");
            final long liveBefore = DeviceBuffer.liveBytes();
            final long[] head = new SplittableRandom(3).longs(1000).toArray();
            try (DeviceBuffer b = DeviceBuffer.reserve(unbudgeted(), 0, 1L << 32, head.length * 8L,
                    "a test buffer")) {
                cuMemcpyHtoD(b.pointer(), Pointer.to(head), head.length * 8L);
                final long address = b.address();
                final long small = b.bytes();
                b.growTo(300L << 20, "a test buffer");
                assertEquals(address, b.address(), "the address stays");
                assertTrue(b.bytes() >= 300L << 20, "grown: " + b.bytes());
                assertEquals(liveBefore + b.bytes(), DeviceBuffer.liveBytes());
                final long[] tail = {7, 8, 9};
                cuMemcpyHtoD(b.at((300L << 20) - 24), Pointer.to(tail), 24);
                final long[] readHead = new long[head.length];
                final long[] readTail = new long[3];
                cuMemcpyDtoH(Pointer.to(readHead), b.pointer(), head.length * 8L);
                cuMemcpyDtoH(Pointer.to(readTail), b.at((300L << 20) - 24), 24);
                assertArrayEquals(head, readHead, "the contents stay");
                assertArrayEquals(tail, readTail, "the new memory is usable");
                final GpuOutOfMemoryException past = assertThrows(GpuOutOfMemoryException.class,
                        () -> b.growTo(1L << 33, "a test buffer"));
                assertTrue(past.getMessage().contains("a test buffer") && past.getMessage().contains("address range"),
                        past.getMessage());
                b.shrinkTo(small);
                assertEquals(small, b.bytes(), "the chunk mapped by the growth is given back");
                cuMemcpyDtoH(Pointer.to(readHead), b.pointer(), head.length * 8L);
                assertArrayEquals(head, readHead, "the first chunk stays");
            }
            assertEquals(liveBefore, DeviceBuffer.liveBytes(), "close gives everything back");
        }
    }

    /**
     * Large lookups promised sorted are checked inside the lookup kernels: a single descending pair anywhere
     * (inside a bucket's slice, or between two buckets' slices) must be found and named, and the answers of a
     * kept promise must match the oracle.
     */
    @Test
    void lookupKernelsFindEveryBrokenSortPromise() {
        assumeGpu();
        try (GpuFlixIndex gpu = openGpu(); TreeMapOracle oracle = new TreeMapOracle()) {
            final SplittableRandom rnd = new SplittableRandom(7);
            final int n = 1 << 18;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = rnd.nextLong(-1_000_000_000L, 1_000_000_000L);
                values[i] = i;
            }
            gpu.build(keys, values, n);
            oracle.build(keys, values, n);
            final int m = 1 << 17;
            final long[] queries = new long[m];
            for (int i = 0; i < m; i++) {
                queries[i] = (i & 1) == 0 ? keys[rnd.nextInt(n)] : rnd.nextLong(-1_100_000_000L, 1_100_000_000L);
            }
            Arrays.sort(queries);
            final long[] expected = new long[m];
            final long[] actual = new long[m];
            oracle.get(queries, m, expected, true);
            gpu.get(queries, m, actual, true);
            assertArrayEquals(expected, actual, "sorted get");
            for (int trial = 0; trial < 40; trial++) {
                final long[] broken = queries.clone();
                final int at = 1 + rnd.nextInt(m - 1);
                broken[at] = broken[at - 1] - 1 - rnd.nextInt(1000); // below its predecessor
                final String named = "keys[" + at + "]";
                final IllegalArgumentException get = assertThrows(IllegalArgumentException.class,
                        () -> gpu.get(broken, m, new long[m], true));
                assertTrue(get.getMessage().contains(named), get.getMessage());
                final IllegalArgumentException ceiling = assertThrows(IllegalArgumentException.class,
                        () -> gpu.ceiling(broken, m, new long[m], new long[m], true));
                assertTrue(ceiling.getMessage().contains(named), ceiling.getMessage());
                final IllegalArgumentException floor = assertThrows(IllegalArgumentException.class,
                        () -> gpu.floor(broken, m, new long[m], new long[m], true));
                assertTrue(floor.getMessage().contains(named), floor.getMessage());
            }
            gpu.get(queries, m, actual, true);
            assertArrayEquals(expected, actual, "sorted get after the rejected calls");
        }
    }

    @Test
    void closeReturnsAllDeviceMemoryAndLaterCallsThrow() {
        assumeGpu();
        final long bytesBefore = DeviceBuffer.liveBytes();
        final long allocationsBefore = DeviceBuffer.liveAllocations();
        final GpuFlixIndex gpu = openGpu();
        final SplittableRandom rnd = new SplittableRandom(3);
        final long[][] pairs = randomPairs(rnd, 40_000, 1L << 16);
        gpu.build(pairs[0], pairs[1], 20_000);
        gpu.upsert(pairs[0], pairs[1], 40_000);
        gpu.get(pairs[0], 40_000, new long[40_000]);
        gpu.range(pairs[0], pairs[0], 100, 3);
        gpu.delete(pairs[0], 30_000);
        gpu.restructure();
        assertTrue(DeviceBuffer.liveBytes() > bytesBefore);
        gpu.close();
        gpu.close();
        assertEquals(bytesBefore, DeviceBuffer.liveBytes(), "device bytes after close");
        assertEquals(allocationsBefore, DeviceBuffer.liveAllocations(), "device allocations after close");
        assertThrows(IllegalStateException.class, () -> gpu.get(new long[] {1}, 1, new long[1]));
        assertThrows(IllegalStateException.class, gpu::size);
        assertThrows(IllegalStateException.class, gpu::restructure);
    }

    // ---------------------------------------------------------------------------------------------------------
    // Comparison helpers

    private static long value(FlixIndex index, long key) {
        final long[] out = new long[1];
        index.get(new long[] {key}, 1, out);
        return out[0];
    }

    private static void assertSameContents(TreeMapOracle oracle, FlixIndex gpu, String where) {
        assertEquals(oracle.size(), gpu.size(), where + ": size");
        final SortedPairs want = oracle.export();
        final SortedPairs got = gpu.export();
        assertEquals(want.size(), got.size(), where + ": exported pairs");
        assertArrayEquals(Arrays.copyOf(want.keys(), want.size()), Arrays.copyOf(got.keys(), got.size()),
                where + ": keys");
        assertArrayEquals(Arrays.copyOf(want.values(), want.size()), Arrays.copyOf(got.values(), got.size()),
                where + ": values");
        final IndexStats stats = gpu.stats();
        assertEquals(oracle.size(), stats.size(), where + ": stats size");
        assertTrue(stats.nodes() * 32 >= stats.size(), where + ": " + stats);
        assertTrue(stats.size() == 0 || stats.nodes() > 0, where + ": " + stats);
    }

    private static void compareLookups(SplittableRandom rnd, TreeMapOracle oracle, FlixIndex gpu, long spread,
                                       String where) {
        final int n = 1 + rnd.nextInt(20_000);
        compareLookups(oracle, gpu, mixedKeys(rnd, oracle, n, spread), where);
    }

    /** get, ceiling and floor of the queries, unsorted and sorted, against the oracle. */
    private static void compareLookups(TreeMapOracle oracle, FlixIndex gpu, long[] queries, String where) {
        final int n = queries.length;
        for (boolean sorted : new boolean[] {false, true}) {
            final long[] q = queries.clone();
            if (sorted) {
                Arrays.sort(q);
            }
            final long[] want = new long[n];
            final long[] got = new long[n];
            final long[] wantKeys = new long[n];
            final long[] gotKeys = new long[n];
            oracle.get(q, n, want, sorted);
            gpu.get(q, n, got, sorted);
            assertArrayEquals(want, got, where + ": get (sorted " + sorted + ")");
            oracle.ceiling(q, n, wantKeys, want, sorted);
            gpu.ceiling(q, n, gotKeys, got, sorted);
            assertArrayEquals(wantKeys, gotKeys, where + ": ceiling keys (sorted " + sorted + ")");
            assertArrayEquals(want, got, where + ": ceiling values (sorted " + sorted + ")");
            oracle.floor(q, n, wantKeys, want, sorted);
            gpu.floor(q, n, gotKeys, got, sorted);
            assertArrayEquals(wantKeys, gotKeys, where + ": floor keys (sorted " + sorted + ")");
            assertArrayEquals(want, got, where + ": floor values (sorted " + sorted + ")");
        }
    }

    private static void compareRanges(SplittableRandom rnd, TreeMapOracle oracle, FlixIndex gpu, long spread,
                                      String where) {
        final int n = 1 + rnd.nextInt(500);
        final long[] a = mixedKeys(rnd, oracle, n, spread);
        final long[] b = mixedKeys(rnd, oracle, n, spread);
        final long[] lo = new long[n];
        final long[] hi = new long[n];
        for (int i = 0; i < n; i++) {
            lo[i] = Math.min(a[i], b[i]);
            hi[i] = rnd.nextInt(4) == 0 ? lo[i] : Math.max(a[i], b[i]);
        }
        compareRanges(oracle, gpu, lo, hi, n, 1 + rnd.nextInt(rnd.nextBoolean() ? 3 : 300), where);
    }

    private static void compareRanges(TreeMapOracle oracle, FlixIndex gpu, long[] lo, long[] hi, int n, int limit,
                                      String where) {
        final RangeResult want = oracle.range(lo, hi, n, limit);
        final RangeResult got = gpu.range(lo, hi, n, limit);
        assertArrayEquals(want.offsets(), got.offsets(), where + ": range offsets (limit " + limit + ")");
        final int total = want.offsets()[n];
        assertArrayEquals(Arrays.copyOf(want.keys(), total), Arrays.copyOf(got.keys(), total), where + ": range keys");
        assertArrayEquals(Arrays.copyOf(want.values(), total), Arrays.copyOf(got.values(), total),
                where + ": range values");
    }

    // ---------------------------------------------------------------------------------------------------------
    // Inputs

    /** Random pairs (duplicates likely where the spread is narrow) with extremes sprinkled in. */
    private static long[][] randomPairs(SplittableRandom rnd, int n, long spread) {
        final long[] keys = new long[n];
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = randomKey(rnd, spread);
            long v = rnd.nextLong();
            values[i] = v == NOT_FOUND ? 0 : v;
        }
        return new long[][] {keys, values};
    }

    private static long randomKey(SplittableRandom rnd, long spread) {
        final int pick = rnd.nextInt(1000);
        if (pick == 0) {
            return Long.MIN_VALUE + rnd.nextInt(3);
        } else if (pick == 1) {
            return Long.MAX_VALUE - rnd.nextInt(3);
        }
        return spread == Long.MAX_VALUE ? rnd.nextLong() : rnd.nextLong(spread) - spread / 2;
    }

    /** Keys that are stored, next to stored ones, and random. */
    private static long[] mixedKeys(SplittableRandom rnd, TreeMapOracle oracle, int n, long spread) {
        final SortedPairs stored = oracle.export();
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            final int pick = rnd.nextInt(3);
            if (pick < 2 && stored.size() > 0) {
                final long k = stored.keys()[rnd.nextInt(stored.size())];
                keys[i] = pick == 0 ? k : k + (rnd.nextBoolean() ? 1 : -1);
            } else {
                keys[i] = randomKey(rnd, spread);
            }
        }
        return keys;
    }

    /** Sorts pairs by key keeping batch order among equal keys. */
    private static void sortPairsStable(long[][] pairs, int n) {
        final Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (x, y) -> Long.compare(pairs[0][x], pairs[0][y]));
        final long[] k = new long[n];
        final long[] v = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = pairs[0][order[i]];
            v[i] = pairs[1][order[i]];
        }
        System.arraycopy(k, 0, pairs[0], 0, n);
        System.arraycopy(v, 0, pairs[1], 0, n);
    }
}
