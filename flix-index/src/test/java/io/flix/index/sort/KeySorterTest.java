package io.flix.index.sort;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import java.util.Arrays;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.function.BiFunction;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The stable key sort: sorted keys equal {@link Arrays#sort}, positions equal a stable sort of the indices. */
class KeySorterTest {

    private static final long MIN = Long.MIN_VALUE;
    private static final long MAX = Long.MAX_VALUE;
    private static final long[] EXTREMES = {MIN, MIN + 1, -1, 0, 1, MAX - 1, MAX};
    /** Written past n before sorting; must survive. */
    private static final long KEY_GUARD = 0x7E57_7E57L;
    private static final int POSITION_GUARD = -77;

    /** Names a way to fill {@code n} keys. */
    record Shape(String name, BiFunction<SplittableRandom, Integer, long[]> keys) {
        @Override
        public String toString() {
            return name;
        }
    }

    static final Shape RANDOM = new Shape("random", (r, n) -> fill(n, i -> r.nextLong()));
    static final Shape FEW_DISTINCT = new Shape("few distinct", (r, n) -> fill(n, i -> r.nextLong(-3, 4)));
    static final Shape ALL_EQUAL = new Shape("all equal", (r, n) -> fill(n, i -> 42));
    static final Shape ALL_MIN = new Shape("all Long.MIN_VALUE", (r, n) -> fill(n, i -> MIN));
    static final Shape ALL_MAX = new Shape("all Long.MAX_VALUE", (r, n) -> fill(n, i -> MAX));
    static final Shape ALL_EQUAL_BUT_LAST = new Shape("all equal but the last",
            (r, n) -> fill(n, i -> i == n - 1 ? -7 : 0x0001_0002_0003_0004L));
    static final Shape ALL_EQUAL_BUT_FIRST = new Shape("all equal but the first",
            (r, n) -> fill(n, i -> i == 0 ? MAX : MIN));
    static final Shape EXTREME = new Shape("extremes", (r, n) -> fill(n, i -> EXTREMES[r.nextInt(EXTREMES.length)]));
    static final Shape SORTED = new Shape("already sorted", (r, n) -> {
        final long[] a = fill(n, i -> r.nextLong());
        Arrays.sort(a);
        return a;
    });
    static final Shape REVERSED = new Shape("reversed", (r, n) -> {
        final long[] a = fill(n, i -> r.nextLong(-1000, 1000));
        Arrays.sort(a);
        for (int i = 0; i < n / 2; i++) {
            final long t = a[i];
            a[i] = a[n - 1 - i];
            a[n - 1 - i] = t;
        }
        return a;
    });
    static final Shape SIGN_ONLY = new Shape("differ in the sign bit only",
            (r, n) -> fill(n, i -> r.nextBoolean() ? 5 : 5 | MIN));
    static final Shape ONE_DIGIT = new Shape("differ in one middle 16-bit digit only",
            (r, n) -> fill(n, i -> 0x1234_0000_0000_5678L | ((long) r.nextInt(1 << 16) << 16)));
    static final Shape HIGH_DIGIT_DUPLICATES = new Shape("equal low digits, duplicates in the high digit",
            (r, n) -> fill(n, i -> ((long) r.nextInt(-4, 4) << 48) | 0xFFFF));

    static Stream<Arguments> cases() {
        final Shape[] shapes = {RANDOM, FEW_DISTINCT, ALL_EQUAL, ALL_MIN, ALL_MAX, ALL_EQUAL_BUT_LAST,
            ALL_EQUAL_BUT_FIRST, EXTREME, SORTED, REVERSED,
            SIGN_ONLY, ONE_DIGIT, HIGH_DIGIT_DUPLICATES};
        final int[] sizes = {0, 1, 2, 63, 64, 65, 1000, 70_000};
        return Arrays.stream(shapes).flatMap(s -> Arrays.stream(sizes).mapToObj(n -> arguments(s, n)));
    }

    @ParameterizedTest(name = "{0}, n = {1}")
    @MethodSource("cases")
    void sortsStablyLikeArraysSort(Shape shape, int n) {
        final long[] keys = shape.keys().apply(new SplittableRandom(n * 31L + shape.name().hashCode()), n);
        checkSort(new KeySorter(), keys, n);
    }

    @Test
    void largeRandomBatchWithDuplicates() {
        final SplittableRandom rnd = new SplittableRandom(99);
        final int n = 1 << 20;
        final long[] keys = fill(n, i -> rnd.nextInt(4) == 0 ? rnd.nextLong(0, 1000) : rnd.nextLong());
        checkSort(new KeySorter(), keys, n);
    }

    @Test
    void oneSorterReusedAcrossSizesGrowingAndShrinking() {
        final KeySorter sorter = new KeySorter();
        final SplittableRandom rnd = new SplittableRandom(7);
        for (int n : new int[] {70_000, 3, 65, 200_000, 64, 0, 1000, 70_000, 100}) {
            final long[] keys = fill(n, i -> rnd.nextLong(-50, 50) * (1L << 40));
            checkSort(sorter, keys, n);
        }
    }

    @Test
    void sortsOnlyTheFirstNKeys() {
        final long[] keys = {5, 4, 3, 2, 1, MIN, MIN};
        final long[] sorted = new long[7];
        final int[] positions = new int[7];
        new KeySorter().sort(keys, 5, sorted, positions);
        assertArrayEquals(new long[] {1, 2, 3, 4, 5, 0, 0}, sorted);
        assertArrayEquals(new int[] {4, 3, 2, 1, 0, 0, 0}, positions);
    }

    /** Sorts {@code keys[0..n)} into guarded output arrays and checks them against a reference stable sort. */
    private static void checkSort(KeySorter sorter, long[] keys, int n) {
        final long[] input = Arrays.copyOf(keys, n + 2);
        input[n] = MIN; // past n: must not be sorted in
        input[n + 1] = MIN;
        final long[] inputBefore = input.clone();
        final long[] sorted = new long[n + 2];
        final int[] positions = new int[n + 2];
        sorted[n] = KEY_GUARD;
        sorted[n + 1] = KEY_GUARD;
        positions[n] = POSITION_GUARD;
        positions[n + 1] = POSITION_GUARD;

        sorter.sort(input, n, sorted, positions);

        assertArrayEquals(inputBefore, input, "the input keys were modified");
        final long[] expectedKeys = Arrays.copyOf(keys, n);
        Arrays.sort(expectedKeys);
        assertArrayEquals(expectedKeys, Arrays.copyOf(sorted, n), "sorted keys");
        // the reference permutation: indices stably sorted by key (a merge sort keeps equal keys in order)
        final Integer[] order = IntStream.range(0, n).boxed().toArray(Integer[]::new);
        Arrays.sort(order, Comparator.comparingLong(i -> keys[i]));
        for (int j = 0; j < n; j++) {
            if (positions[j] != order[j]) {
                fail("positions[" + j + "] = " + positions[j] + ", expected " + order[j] + " (key " + sorted[j]
                        + "; equal keys must keep their input order)");
            }
            if (keys[positions[j]] != sorted[j]) {
                fail("keys[positions[" + j + "]] = " + keys[positions[j]] + " but sortedKeys[" + j + "] = "
                        + sorted[j]);
            }
            if (j > 0 && sorted[j] == sorted[j - 1] && positions[j] <= positions[j - 1]) {
                fail("equal keys out of input order at " + j);
            }
        }
        assertEquals(KEY_GUARD, sorted[n], "sortedKeys written past n");
        assertEquals(KEY_GUARD, sorted[n + 1], "sortedKeys written past n");
        assertEquals(POSITION_GUARD, positions[n], "positions written past n");
        assertEquals(POSITION_GUARD, positions[n + 1], "positions written past n");
    }

    private interface IndexedLong {
        long at(int i);
    }

    private static long[] fill(int n, IndexedLong f) {
        final long[] a = new long[n];
        for (int i = 0; i < n; i++) {
            a[i] = f.at(i);
        }
        return a;
    }
}
