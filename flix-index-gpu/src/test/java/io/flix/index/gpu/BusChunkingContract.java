package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.flix.index.Backend;
import io.flix.index.BatchArgs;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Host arrays cross the bus in pieces and chunks ({@link ChunkPlan}, {@link StagedCopies}); batches at the edges
 * of the cuts (empty, one long, a piece less one, a piece, a piece and one, sizes of no whole piece, a chunk of one
 * piece, chunks of several pieces with a short last one) give exactly the answers of a host oracle, on both GPU
 * structures; a broken sort promise anywhere in a chunked batch is reported as the host words it, naming the
 * place in the whole batch. Each GPU structure's test extends it and says how to open the structure. Skipped where
 * no GPU is usable.
 */
public abstract class BusChunkingContract {

    private static final int PIECE = PinnedPieces.PIECE_LONGS;
    private static final int KEYS = 1 << 20;
    /** Safety net for the concurrent test's threads; never what it asserts. */
    private static final long STUCK_MINUTES = 5;

    @BeforeEach
    void requireGpu() {
        assumeTrue(GpuSupport.isAvailable(), GpuSupport::unavailableReason);
    }

    static Stream<Arguments> sizes() {
        // a chunk holds 8 to 32 pieces (StagedCopies.plan): 8 pieces are one chunk, 16 two, 17 three, 131 fifteen
        final int[] sizes = {0, 1, PIECE - 1, PIECE, PIECE + 1, 5 * PIECE + 3, 8 * PIECE, 8 * PIECE + 1,
            16 * PIECE + 1, 40 * PIECE + 7, 130 * PIECE + 5};
        return Arrays.stream(sizes).mapToObj(Arguments::of);
    }

    /** An empty index of the structure under test, on device 0. */
    protected abstract FlixIndex open(FlixConfig config);

    private FlixIndex open() {
        return open(FlixConfig.builder().backend(Backend.GPU).build());
    }

    /** The value stored for a key (never NOT_FOUND). */
    private static long valueOf(long key) {
        return (key * 31 + 7) & Long.MAX_VALUE;
    }

    @ParameterizedTest(name = "n = {0}")
    @MethodSource("sizes")
    void lookupsOfEverySizeMatchTheOracle(int n) {
        final String structure = getClass().getSimpleName();
        final SplittableRandom random = new SplittableRandom(n * 31L + structure.hashCode());
        final long[] present = random.longs(KEYS).sorted().distinct().toArray();
        final long[] values = Arrays.stream(present).map(BusChunkingContract::valueOf).toArray();
        final long[] probes = new long[n];
        for (int i = 0; i < n; i++) {
            probes[i] = random.nextInt(3) == 0 ? random.nextLong() : present[random.nextInt(present.length)];
        }
        final long[] sorted = probes.clone();
        Arrays.parallelSort(sorted);
        try (FlixIndex index = open()) {
            index.build(present, values, present.length, true);
            final long[] out = new long[n];
            final long[] outKeys = new long[n];
            index.get(probes, n, out, false);
            assertGets(present, probes, out, "unsorted get");
            index.get(sorted, n, out, true);
            assertGets(present, sorted, out, "sorted get");
            index.ceiling(probes, n, outKeys, out, false);
            assertOrdered(present, probes, outKeys, out, true, "ceiling");
            index.floor(sorted, n, outKeys, out, true);
            assertOrdered(present, sorted, outKeys, out, false, "sorted floor");
        }
    }

    @ParameterizedTest(name = "n = {0}")
    @MethodSource("sizes")
    void updatesOfEverySizeLandWhole(int n) {
        final String structure = getClass().getSimpleName();
        final SplittableRandom random = new SplittableRandom(n * 17L + structure.hashCode());
        // distinct keys with a repeat at the end: the last occurrence wins across the pieces
        final long[] keys = random.longs(n).toArray();
        final long[] values = Arrays.stream(keys).map(BusChunkingContract::valueOf).toArray();
        if (n > 1) {
            keys[n - 1] = keys[0];
            values[n - 1] = valueOf(keys[0]);
            values[0] = 1; // the last occurrence of keys[0] wins
        }
        final long[] expectedKeys = Arrays.stream(keys).distinct().sorted().toArray();
        try (FlixIndex index = open()) {
            index.build(keys, values, n);
            assertEquals(expectedKeys.length, index.size(), "size after build");
            final long[] out = new long[expectedKeys.length];
            index.get(expectedKeys, expectedKeys.length, out, true);
            assertGets(expectedKeys, expectedKeys, out, "get after build");
            index.delete(keys, n / 2);
            index.upsert(keys, values, n);
            assertEquals(expectedKeys.length, index.size(), "size after delete and upsert");
            index.get(expectedKeys, expectedKeys.length, out, true);
            assertGets(expectedKeys, expectedKeys, out, "get after upsert");
        }
    }

    @ParameterizedTest(name = "n = {0}")
    @MethodSource("sizes")
    void rangeResultsOfEverySizeComeBackWhole(int n) {
        final String structure = getClass().getSimpleName();
        final long[] present = tens(KEYS);
        final long[] values = Arrays.stream(present).map(BusChunkingContract::valueOf).toArray();
        // ranges of up to 3 keys: n pairs in all, about n / 3 ranges, so the pairs cross piece boundaries
        final int ranges = Math.max(1, (n + 2) / 3);
        final long[] lo = new long[ranges];
        final long[] hi = new long[ranges];
        final int[] first = new int[ranges];
        final int[] count = new int[ranges];
        int pairs = 0;
        for (int i = 0; i < ranges; i++) {
            first[i] = (int) ((i * 7919L) % (KEYS - 3));
            count[i] = Math.min(3, n - pairs);
            pairs += count[i];
            // a range of no keys lies between two stored keys
            lo[i] = count[i] == 0 ? present[first[i]] + 1 : present[first[i]];
            hi[i] = count[i] == 0 ? present[first[i]] + 5 : present[first[i] + count[i] - 1];
        }
        try (FlixIndex index = open()) {
            index.build(present, values, KEYS, true);
            final int limit = 3;
            final RangeResult fresh = index.range(lo, hi, ranges, limit);
            assertRanges(present, first, count, fresh);
            final RangeResult again = index.range(lo, hi, ranges, limit, fresh);
            assertRanges(present, first, count, again);
            assertSame(fresh.offsets(), again.offsets(), "the offsets of the same number of ranges are reused");
            assertSame(fresh.keys(), again.keys(), "keys arrays large enough are reused");
            assertSame(fresh.values(), again.values(), "values arrays large enough are reused");
            final RangeResult more = index.range(lo, hi, ranges, limit, new RangeResult(new int[1], new long[0],
                    new long[0]));
            assertRanges(present, first, count, more);
            if (pairs > 0) {
                assertNotSame(fresh.keys(), more.keys());
            }
            // a result with arrays for fewer pairs than the call finds: new arrays with room for a few more
            final RangeResult fewer = index.range(lo, hi, Math.max(1, ranges / 2), limit);
            final RangeResult grown = index.range(lo, hi, ranges, limit, fewer);
            assertRanges(present, first, count, grown);
            final RangeResult next = index.range(lo, hi, ranges, limit, grown);
            assertSame(grown.keys(), next.keys(), "the arrays a loop's call grew are reused by its next call");
            assertRanges(present, first, count, next);
        }
    }

    /** {@code n} sorted keys 0, 10, 20, ... (ranges between them are easy to state). */
    private static long[] tens(int n) {
        return IntStream.range(0, n).mapToLong(i -> i * 10L).toArray();
    }

    @Test
    void aBrokenSortPromiseAnywhereInAChunkedBatchIsReportedAsTheHostWordsIt() {
        final int n = 40 * PIECE + 7;
        final long[] sorted = IntStream.range(0, n).mapToLong(i -> i * 3L).toArray();
        for (Supplier<long[]> broken : java.util.List.<Supplier<long[]>>of(
                () -> swapped(sorted, PIECE - 1), // across the seam of the first two pieces
                () -> swapped(sorted, 37 * PIECE + 11), // inside a later chunk
                () -> swapped(sorted, n - 2))) { // the last pair
            final long[] keys = broken.get();
            final IllegalArgumentException expected = assertThrows(IllegalArgumentException.class,
                    () -> BatchArgs.checkKeys(keys, n, true));
            final String structure = getClass().getSimpleName();
            try (FlixIndex index = open()) {
                index.build(sorted, sorted, n, true);
                final long[] out = new long[n];
                final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> index.get(keys, n, out, true));
                assertEquals(expected.getMessage(), e.getMessage(), structure);
                final IllegalArgumentException c = assertThrows(IllegalArgumentException.class,
                        () -> index.ceiling(keys, n, new long[n], out, true));
                assertEquals(expected.getMessage(), c.getMessage(), structure + " ceiling");
                final IllegalArgumentException expectedPairs = assertThrows(IllegalArgumentException.class,
                        () -> BatchArgs.checkPairs(keys, keys, n, true));
                final IllegalArgumentException u = assertThrows(IllegalArgumentException.class,
                        () -> index.upsert(keys, keys, n, true));
                assertEquals(expectedPairs.getMessage(), u.getMessage(), structure + " upsert");
                assertEquals(n, index.size(), structure + ": the index is as it was");
                index.get(sorted, n, out, true);
                assertArrayEquals(sorted, out, structure + ": the index is as it was");
            }
        }
    }

    /**
     * A get straight from the heap runs in chunks that need not start at a piece (an eighth of the batch here): a
     * broken promise between two such chunks, which the host's seam check does not see, is found by the device all
     * the same.
     */
    @Test
    void aBrokenSortPromiseBetweenTwoChunksOfAPipelinedLookupIsReportedAsTheHostWordsIt() {
        final int n = 10 * PIECE + 3;
        final int chunk = DirectCopies.lookupChunkLongs(n);
        final long[] sorted = IntStream.range(0, n).mapToLong(i -> i * 3L).toArray();
        for (int seam : new int[] {chunk, 2 * chunk}) {
            assertTrue(seam % PIECE != 0, "the seam is not a piece's: the host does not check it");
            final long[] keys = swapped(sorted, seam - 1);
            final IllegalArgumentException expected = assertThrows(IllegalArgumentException.class,
                    () -> BatchArgs.checkKeys(keys, n, true));
            try (FlixIndex index = open()) {
                index.build(sorted, sorted, n, true);
                final long[] out = new long[n];
                final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> index.get(keys, n, out, true));
                assertEquals(expected.getMessage(), e.getMessage(), getClass().getSimpleName() + " seam " + seam);
                index.get(sorted, n, out, true);
                assertArrayEquals(sorted, out, "a kept promise after a broken one");
            }
        }
    }

    /**
     * A reserved value in a large unsorted update, whose keys are sorted on the device while its values still cross
     * the bus: reported as the host words it, and the index is as it was.
     */
    @Test
    void aReservedValueInALargeUnsortedUpdateIsReportedAsTheHostWordsItAndChangesNothing() {
        final int n = 8 * PIECE + 1;
        final SplittableRandom random = new SplittableRandom(11);
        final long[] keys = random.longs(n).toArray();
        final long[] values = Arrays.stream(keys).map(BusChunkingContract::valueOf).toArray();
        final long[] present = tens(1000);
        try (FlixIndex index = open()) {
            index.build(present, present, present.length, true);
            for (int at : new int[] {3, n - 5}) {
                final long[] bad = values.clone();
                bad[at] = FlixIndex.NOT_FOUND;
                final IllegalArgumentException expected = assertThrows(IllegalArgumentException.class,
                        () -> BatchArgs.checkPairs(keys, bad, n, false));
                final IllegalArgumentException upsert = assertThrows(IllegalArgumentException.class,
                        () -> index.upsert(keys, bad, n, false));
                assertEquals(expected.getMessage(), upsert.getMessage(), "upsert, reserved value at " + at);
                final IllegalArgumentException build = assertThrows(IllegalArgumentException.class,
                        () -> index.build(keys, bad, n));
                assertEquals(expected.getMessage(), build.getMessage(), "build, reserved value at " + at);
                assertEquals(present.length, index.size(), "the index is as it was");
                final long[] out = new long[present.length];
                index.get(present, present.length, out, true);
                assertArrayEquals(present, out, "the index is as it was");
            }
            index.upsert(keys, values, n, false);
            assertEquals(present.length + n, index.size(), "the batch without the fault is taken");
            final long[] out = new long[n];
            index.get(keys, n, out, false);
            assertArrayEquals(values, out, "its values");
        }
    }

    /**
     * A large unsorted update whose values cross the bus in several parts (each put in its keys' order as it
     * arrives): the last value of each key wins across the parts' seams, for upsert and build, and a reserved value
     * in the last part is reported as the host words it with the index as it was.
     */
    @Test
    void aLargeUnsortedUpdateTakesTheLastValueOfEachKeyAcrossThePartsOfItsCopy() {
        final int n = 40 * PIECE + 7; // more than one part of DirectCopies.SEGMENT_LONGS
        final int repeats = 10_000;
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = i * 0x9E3779B97F4A7C15L; // an odd multiplier: distinct keys
        }
        final int[] firsts = new int[repeats];
        final int[] lasts = new int[repeats];
        for (int r = 0; r < repeats; r++) {
            firsts[r] = r * 7; // in the first part
            lasts[r] = n - 1 - r * 5; // in the last part
            keys[lasts[r]] = keys[firsts[r]];
        }
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            values[i] = valueOf(keys[i]) ^ i; // which occurrence won shows
        }
        final long[] expected = values.clone();
        for (int r = 0; r < repeats; r++) {
            expected[firsts[r]] = values[lasts[r]];
        }
        final long[] bad = values.clone();
        bad[n - 3] = FlixIndex.NOT_FOUND;
        final IllegalArgumentException fault = assertThrows(IllegalArgumentException.class,
                () -> BatchArgs.checkPairs(keys, bad, n, false));
        final long[] out = new long[n];
        try (FlixIndex index = open()) {
            index.upsert(keys, values, n, false);
            assertEquals(n - repeats, index.size(), "distinct keys after the upsert");
            index.get(keys, n, out, false);
            assertArrayEquals(expected, out, "the last value of each key, upsert");
            final IllegalArgumentException upsert = assertThrows(IllegalArgumentException.class,
                    () -> index.upsert(keys, bad, n, false));
            assertEquals(fault.getMessage(), upsert.getMessage(), "a reserved value in the last part");
            index.get(keys, n, out, false);
            assertArrayEquals(expected, out, "the index is as it was");
            index.build(keys, values, n);
            assertEquals(n - repeats, index.size(), "distinct keys after the build");
            index.get(keys, n, out, false);
            assertArrayEquals(expected, out, "the last value of each key, build");
        }
    }

    /**
     * A large sorted update sends its keys first, and the device checks them and finds their runs while the values
     * cross the bus, in more than one part: the last value of each run of equal keys wins (runs at the start,
     * across a piece's seam, across the seam of the copy's parts and at the end), for upsert and build; a reserved
     * value in the first or the last part, alone or beside a broken promise, is reported as the host words it, with
     * the index as it was.
     */
    @Test
    void aLargeSortedUpdateWhoseValuesCrossAfterItsKeysTakesTheLastValueOfEachKeyAndChangesNothingOnAFault() {
        final int n = AbstractGpuIndex.SORTED_KEYS_FIRST_MIN + 7; // parts of DirectCopies.SEGMENT_LONGS: three
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = (i - n / 2) * 5L;
        }
        for (int at : new int[] {1, 2, PIECE, PIECE + 1, DirectCopies.SEGMENT_LONGS, n - 1}) {
            keys[at] = keys[at - 1];
        }
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            values[i] = valueOf(keys[i]) ^ i; // which occurrence won shows
        }
        final long[] present = tens(1000);
        final long[][] built = merged(new long[0], keys, values, n);
        final long[][] upserted = merged(present, keys, values, n);
        final long[] reservedFirst = values.clone();
        reservedFirst[3] = FlixIndex.NOT_FOUND;
        final long[] reservedLast = values.clone();
        reservedLast[n - 2] = FlixIndex.NOT_FOUND;
        final long[] unsortedKeys = swapped(keys, 5 * PIECE + 11);
        final String structure = getClass().getSimpleName();
        try (FlixIndex index = open()) {
            index.build(present, present, present.length, true);
            for (long[][] bad : new long[][][] {{keys, reservedFirst}, {keys, reservedLast},
                {unsortedKeys, reservedLast}}) {
                final IllegalArgumentException expected = assertThrows(IllegalArgumentException.class,
                        () -> BatchArgs.checkPairs(bad[0], bad[1], n, true));
                final IllegalArgumentException upsert = assertThrows(IllegalArgumentException.class,
                        () -> index.upsert(bad[0], bad[1], n, true));
                assertEquals(expected.getMessage(), upsert.getMessage(), structure + " upsert");
                final IllegalArgumentException build = assertThrows(IllegalArgumentException.class,
                        () -> index.build(bad[0], bad[1], n, true));
                assertEquals(expected.getMessage(), build.getMessage(), structure + " build");
                assertEquals(present.length, index.size(), structure + ": the index is as it was");
                final long[] out = new long[present.length];
                index.get(present, present.length, out, true);
                assertArrayEquals(present, out, structure + ": the index is as it was");
            }
            index.upsert(keys, values, n, true);
            assertHolds(index, upserted, structure + " upsert");
            index.build(keys, values, n, true);
            assertHolds(index, built, structure + " build");
        }
    }

    /**
     * The oracle of a sorted batch upserted into an index of {@code present} keys (each its own value): every key
     * once, ascending, with the batch's last value for it where the batch has it.
     */
    private static long[][] merged(long[] present, long[] keys, long[] values, int n) {
        final long[] outKeys = new long[present.length + n];
        final long[] outValues = new long[present.length + n];
        int m = 0;
        int p = 0;
        for (int i = 0; i < n; i++) {
            if (i + 1 < n && keys[i + 1] == keys[i]) {
                continue; // a later occurrence wins
            }
            for (; p < present.length && present[p] <= keys[i]; p++) {
                if (present[p] < keys[i]) {
                    outKeys[m] = present[p];
                    outValues[m++] = present[p];
                }
            }
            outKeys[m] = keys[i];
            outValues[m++] = values[i];
        }
        for (; p < present.length; p++) {
            outKeys[m] = present[p];
            outValues[m++] = present[p];
        }
        return new long[][] {Arrays.copyOf(outKeys, m), Arrays.copyOf(outValues, m)};
    }

    private static void assertHolds(FlixIndex index, long[][] oracle, String what) {
        final int m = oracle[0].length;
        assertEquals(m, index.size(), what + ": size");
        final long[] out = new long[m];
        index.get(oracle[0], m, out, true);
        assertArrayEquals(oracle[1], out, what + ": the last value of each key");
    }

    private static long[] swapped(long[] sorted, int at) {
        final long[] keys = sorted.clone();
        final long t = keys[at];
        keys[at] = keys[at + 1];
        keys[at + 1] = t;
        return keys;
    }

    /**
     * Two indexes of the structure driven from two threads at once, with batches of many chunks: each on its own
     * streams, sharing
     * the process's pinned pieces, each gets its own answers.
     */
    @Test
    void indexesOnTwoThreadsPipelineAtOnceWithTheirOwnAnswers() throws Exception {
        final ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            final Future<?>[] done = new Future<?>[2];
            for (int t = 0; t < 2; t++) {
                final int thread = t;
                done[t] = pool.submit(() -> {
                    final long[] keys = IntStream.range(0, KEYS).mapToLong(i -> i * 2L + thread).toArray();
                    final long[] values = Arrays.stream(keys).map(k -> k * 5 + thread).toArray();
                    final int n = 20 * PIECE + 3;
                    final long[] probes = new long[n];
                    final SplittableRandom random = new SplittableRandom(thread);
                    for (int i = 0; i < n; i++) {
                        probes[i] = keys[random.nextInt(KEYS)];
                    }
                    final long[] out = new long[n];
                    try (FlixIndex index = open()) {
                        index.build(keys, values, KEYS, true);
                        for (int round = 0; round < 5; round++) {
                            index.get(probes, n, out, false);
                            for (int i = 0; i < n; i++) {
                                assertEquals(probes[i] * 5 + thread, out[i], "thread " + thread + " at " + i);
                            }
                        }
                    }
                    return null;
                });
            }
            for (Future<?> f : done) {
                f.get(STUCK_MINUTES, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Host arrays held still for the copies while another thread makes garbage (young collections) and a third asks
     * for a full collection as each round starts (collections move the heap's objects between calls and wait for the
     * holds during them): every answer stays right, in every interleaving. The arrays are made anew each round, so
     * they lie somewhere else each time.
     */
    @Test
    void answersStayRightWhileCollectionsMoveTheHeap() throws Exception {
        final int n = 12 * PIECE + 5;
        final int rounds = 12;
        final long[] keys = IntStream.range(0, n).mapToLong(i -> i * 3L + 1).toArray();
        final java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        final java.util.concurrent.Semaphore collect = new java.util.concurrent.Semaphore(0);
        final ExecutorService garbage = Executors.newFixedThreadPool(2);
        try (FlixIndex index = open()) {
            index.build(keys, keys, n, true);
            final Future<?> maker = garbage.submit(() -> {
                while (!done.get()) {
                    final long[][] junk = new long[64][];
                    for (int i = 0; i < junk.length; i++) {
                        junk[i] = new long[1 << 14];
                    }
                }
                return null;
            });
            final Future<?> collector = garbage.submit(() -> {
                for (int r = 0; r < rounds; r++) {
                    collect.acquire();
                    System.gc();
                }
                return null;
            });
            for (int round = 0; round < rounds; round++) {
                collect.release();
                final long[] sorted = keys.clone();
                final long[] shuffled = keys.clone();
                final SplittableRandom random = new SplittableRandom(round);
                for (int i = n - 1; i > 0; i--) {
                    final int j = random.nextInt(i + 1);
                    final long t = shuffled[i];
                    shuffled[i] = shuffled[j];
                    shuffled[j] = t;
                }
                index.upsert(shuffled, shuffled, n, false);
                assertEquals(n, index.size(), "size after an upsert of the same pairs, round " + round);
                final long[] out = new long[n];
                index.get(sorted, n, out, true);
                assertArrayEquals(sorted, out, "sorted get, round " + round);
                final long[] outAgain = new long[n];
                index.get(shuffled, n, outAgain, false);
                assertArrayEquals(shuffled, outAgain, "unsorted get, round " + round);
                final long[] ceilingKeys = new long[n];
                index.ceiling(shuffled, n, ceilingKeys, new long[n], false);
                assertArrayEquals(shuffled, ceilingKeys, "ceiling, round " + round);
            }
            done.set(true);
            maker.get(STUCK_MINUTES, TimeUnit.MINUTES);
            collector.get(STUCK_MINUTES, TimeUnit.MINUTES);
        } finally {
            done.set(true);
            garbage.shutdownNow();
        }
    }

    private static void assertGets(long[] present, long[] probes, long[] out, String what) {
        final int bad = IntStream.range(0, probes.length).parallel().filter(i -> {
            final boolean found = Arrays.binarySearch(present, probes[i]) >= 0;
            return out[i] != (found ? valueOf(probes[i]) : FlixIndex.NOT_FOUND);
        }).findFirst().orElse(-1);
        assertTrue(bad < 0, () -> what + " at " + bad + " of " + probes.length + ": key " + probes[bad] + " gave "
                + out[bad]);
    }

    private static void assertOrdered(long[] present, long[] probes, long[] outKeys, long[] out, boolean ceiling,
                                      String what) {
        final int bad = IntStream.range(0, probes.length).parallel().filter(i -> {
            final int at = Arrays.binarySearch(present, probes[i]);
            final int found = at >= 0 ? at : ceiling ? -at - 1 : -at - 2;
            if (found < 0 || found >= present.length) {
                return outKeys[i] != 0 || out[i] != FlixIndex.NOT_FOUND;
            }
            return outKeys[i] != present[found] || out[i] != valueOf(present[found]);
        }).findFirst().orElse(-1);
        assertTrue(bad < 0, () -> what + " at " + bad + " of " + probes.length + ": key " + probes[bad]);
    }

    private static void assertRanges(long[] present, int[] first, int[] count, RangeResult r) {
        assertEquals(first.length, r.ranges());
        for (int i = 0; i < first.length; i++) {
            assertEquals(count[i], r.count(i), "range " + i);
            for (int j = 0; j < count[i]; j++) {
                assertEquals(present[first[i] + j], r.keys()[r.offsets()[i] + j], "range " + i + " pair " + j);
                assertEquals(valueOf(present[first[i] + j]), r.values()[r.offsets()[i] + j], "range " + i);
            }
        }
    }
}
