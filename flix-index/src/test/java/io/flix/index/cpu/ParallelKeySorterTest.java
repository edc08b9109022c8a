package io.flix.index.cpu;

import io.flix.index.sort.KeySorter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/** The parallel sort must give exactly KeySorter's result: same order, same permutation (stable). */
class ParallelKeySorterTest {

    @ParameterizedTest
    @CsvSource({
            "2, 300000, random", "3, 300000, random", "2, 200001, narrow", "2, 300000, mixedSignNarrow",
            "4, 400000, edges", "2, 262144, duplicates", "2, 131072, constant", "1, 300000, random",
            "2, 1000, random"})
    void matchesKeySorter(int threads, int n, String shape) {
        final SplittableRandom random = new SplittableRandom(n + threads);
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = switch (shape) {
                case "random" -> random.nextLong();
                case "narrow" -> (1L << 40) + random.nextLong(1L << 20);
                case "mixedSignNarrow" -> random.nextInt(5000) - 2500;
                case "edges" -> switch (random.nextInt(4)) {
                    case 0 -> Long.MIN_VALUE;
                    case 1 -> Long.MAX_VALUE;
                    case 2 -> random.nextInt(3) - 1;
                    default -> random.nextLong();
                };
                case "duplicates" -> random.nextInt(64) * 0x0101_0101_0101L;
                default -> 42;
            };
        }
        final long[] expectedKeys = new long[n];
        final int[] expectedPositions = new int[n];
        new KeySorter().sort(keys, n, expectedKeys, expectedPositions);
        final ForkJoinPool pool = new ForkJoinPool(threads);
        try {
            final ParallelKeySorter sorter = new ParallelKeySorter(pool, threads);
            for (int round = 0; round < 2; round++) { // reuses its scratch the second time
                final long[] sorted = new long[n];
                final int[] positions = new int[n];
                sorter.sort(keys, n, sorted, positions);
                assertArrayEquals(expectedKeys, sorted, shape);
                assertArrayEquals(expectedPositions, positions, shape);
            }
        } finally {
            pool.shutdown();
        }
    }
}
