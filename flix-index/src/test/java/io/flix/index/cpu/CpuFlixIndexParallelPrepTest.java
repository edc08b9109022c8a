package io.flix.index.cpu;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.SortedPairs;
import io.flix.index.TreeMapOracle;
import io.flix.index.batch.BatchResults;
import io.flix.index.batch.MicroBatchEngine;
import io.flix.index.batch.OperationBatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ForkJoinPool;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The parallel preparation of update batches ({@link BatchPrep}: sort and reduction to unique keys on the workers),
 * forced on small batches by a low threshold and pieces of one key, checked against a sorted-map oracle and against
 * the serial path (one thread).
 */
class CpuFlixIndexParallelPrepTest {

    private static final long[] EDGE_KEYS = {
            Long.MIN_VALUE, Long.MIN_VALUE + 1, -1, 0, 1, Long.MAX_VALUE - 1, Long.MAX_VALUE};

    private static FlixConfig config(int threads, int nodeSize) {
        return FlixConfig.builder().backend(Backend.CPU).nodeSize(nodeSize).threads(threads).build();
    }

    /** Every update batch of two keys or more is prepared in parallel, in pieces as small as one key. */
    private static CpuFlixIndex parallel(int threads) {
        return new CpuFlixIndex(config(threads, 8), 2, 1, 1);
    }

    private static CpuFlixIndex serial() {
        return new CpuFlixIndex(config(1, 8));
    }

    private static void assertContents(TreeMapOracle oracle, CpuFlixIndex index) {
        index.verifyStructure();
        final SortedPairs got = index.export();
        final TreeMap<Long, Long> expected = oracle.contents();
        assertEquals(expected.size(), got.size(), "size");
        int i = 0;
        for (var e : expected.entrySet()) {
            assertEquals(e.getKey(), got.keys()[i], "key " + i);
            assertEquals(e.getValue(), got.values()[i], "value of " + e.getKey());
            i++;
        }
        final long[] keys = expected.keySet().stream().mapToLong(Long::longValue).toArray();
        final long[] values = new long[keys.length];
        index.get(keys, keys.length, values, false);
        for (int j = 0; j < keys.length; j++) {
            assertEquals(expected.get(keys[j]), values[j], "get of " + keys[j]);
        }
    }

    private static long get(FlixIndex index, long key) {
        final long[] out = new long[1];
        index.get(new long[] {key}, 1, out, false);
        return out[0];
    }

    private static void upsert(long[] keys, long[] values, boolean sorted, FlixIndex... indexes) {
        for (FlixIndex index : indexes) {
            index.upsert(keys, values, keys.length, sorted);
        }
    }

    private static void delete(long[] keys, boolean sorted, FlixIndex... indexes) {
        for (FlixIndex index : indexes) {
            index.delete(keys, keys.length, sorted);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 4})
    void duplicatesOfOneKeyAcrossThePiecesKeepTheLastOccurrence(int threads) {
        try (CpuFlixIndex index = parallel(threads); TreeMapOracle oracle = new TreeMapOracle()) {
            // unsorted: key 7 every other position, so its copies fall in every chunk of the batch
            final int n = 301;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = i % 2 == 0 ? 7 : 1000 - i;
                values[i] = i;
            }
            upsert(keys, values, false, index, oracle);
            assertContents(oracle, index);
            assertEquals(n - 1, get(index, 7));

            // sorted: runs of one key longer than a piece, cut points inside them
            final long[] sortedKeys = new long[n];
            for (int i = 0; i < n; i++) {
                sortedKeys[i] = i / 40;
                values[i] = 10_000 + i;
            }
            upsert(sortedKeys, values, true, index, oracle);
            assertContents(oracle, index);
            for (int k = 0; k <= (n - 1) / 40; k++) {
                assertEquals(10_000 + Math.min(n - 1, 40 * k + 39), get(index, k));
            }

            // deletes with duplicates, present and absent keys, sorted and not
            final long[] dels = {7, 3, 7, 99_999, 3, 0, 99_999, 7};
            delete(dels, false, index, oracle);
            assertContents(oracle, index);
            final long[] sortedDels = {1, 1, 1, 2, 2, 5, 5, 5, 5, 123_456, 123_456};
            delete(sortedDels, true, index, oracle);
            assertContents(oracle, index);
        }
    }

    @Test
    void oneKeyAloneAndAllInOneBucket() {
        try (CpuFlixIndex index = parallel(4); TreeMapOracle oracle = new TreeMapOracle()) {
            final int n = 500;
            final long[] same = new long[n];
            final long[] values = new long[n];
            Arrays.fill(same, 42);
            for (int i = 0; i < n; i++) {
                values[i] = i + 1;
            }
            upsert(same, values, false, index, oracle);
            upsert(same, values, true, index, oracle);
            assertContents(oracle, index);
            assertEquals(1, index.size());
            assertEquals(n, get(index, 42));

            // a wide index, then a batch of keys that all fall in one of its buckets
            final long[] wide = new long[64];
            for (int i = 0; i < wide.length; i++) {
                wide[i] = (long) i * 1_000_000_000L;
            }
            oracle.build(wide, wide, wide.length, true);
            index.build(wide, wide, wide.length, true);
            final long[] narrow = new long[2000];
            final long[] narrowValues = new long[narrow.length];
            final SplittableRandom random = new SplittableRandom(5);
            for (int i = 0; i < narrow.length; i++) {
                narrow[i] = 5_000_000_000L + random.nextInt(700);
                narrowValues[i] = random.nextLong(1, Long.MAX_VALUE);
            }
            upsert(narrow, narrowValues, false, index, oracle);
            assertContents(oracle, index);
            delete(Arrays.copyOf(narrow, 900), false, index, oracle);
            assertContents(oracle, index);
            delete(same, false, index, oracle);
            assertContents(oracle, index);
        }
    }

    @Test
    void extremeKeysAndEmptyBatches() {
        try (CpuFlixIndex index = parallel(3); TreeMapOracle oracle = new TreeMapOracle()) {
            upsert(new long[0], new long[0], false, index, oracle);
            upsert(new long[0], new long[0], true, index, oracle);
            delete(new long[0], false, index, oracle);
            assertContents(oracle, index);

            final SplittableRandom random = new SplittableRandom(11);
            final long[] keys = new long[120];
            final long[] values = new long[keys.length];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = i % 3 == 0 ? EDGE_KEYS[random.nextInt(EDGE_KEYS.length)] : random.nextLong();
                values[i] = i % 5 == 0 ? Long.MAX_VALUE : random.nextLong(Long.MIN_VALUE + 1, Long.MAX_VALUE);
            }
            upsert(keys, values, false, index, oracle);
            assertContents(oracle, index);
            final long[] sorted = keys.clone();
            Arrays.sort(sorted);
            upsert(sorted, values, true, index, oracle);
            assertContents(oracle, index);
            delete(new long[] {Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE, 0}, false, index, oracle);
            assertContents(oracle, index);
            delete(EDGE_KEYS, true, index, oracle);
            assertContents(oracle, index);
            upsert(new long[] {Long.MIN_VALUE, Long.MAX_VALUE}, new long[] {1, 2}, false, index, oracle);
            upsert(new long[] {Long.MAX_VALUE}, new long[] {3}, false, index, oracle);
            assertContents(oracle, index);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 4, 7})
    void randomBatchesEqualTheSerialPathAndTheOracle(int threads) {
        final SplittableRandom random = new SplittableRandom(1000 + threads);
        try (CpuFlixIndex index = parallel(threads); CpuFlixIndex one = serial();
             TreeMapOracle oracle = new TreeMapOracle()) {
            for (int round = 0; round < 30; round++) {
                final int n = random.nextInt(4) == 0 ? random.nextInt(5) : random.nextInt(1, 4000);
                final long domain = switch (round % 4) {
                    case 0 -> 50;                 // many copies of each key
                    case 1 -> 5_000;
                    case 2 -> 1L << 40;
                    default -> 0;                 // the full range
                };
                final long[] keys = new long[n];
                final long[] values = new long[n];
                for (int i = 0; i < n; i++) {
                    keys[i] = random.nextInt(20) == 0 ? EDGE_KEYS[random.nextInt(EDGE_KEYS.length)]
                            : domain == 0 ? random.nextLong() : random.nextLong(-domain, domain);
                    values[i] = random.nextLong(Long.MIN_VALUE + 1, Long.MAX_VALUE);
                }
                final boolean sorted = random.nextBoolean();
                if (sorted) {
                    Arrays.sort(keys);
                }
                if (random.nextInt(3) == 0) {
                    delete(keys, sorted, index, one, oracle);
                } else {
                    upsert(keys, values, sorted, index, one, oracle);
                }
                assertContents(oracle, index);
                final SortedPairs a = index.export();
                final SortedPairs b = one.export();
                assertArrayEquals(Arrays.copyOf(b.keys(), b.size()), Arrays.copyOf(a.keys(), a.size()));
                assertArrayEquals(Arrays.copyOf(b.values(), b.size()), Arrays.copyOf(a.values(), a.size()));
            }
        }
    }

    @Test
    void batchesAboveTheDefaultThresholdsMatchTheOracle() {
        // default thresholds: batches of 2^13 keys and more are prepared, and write the exact-key table, in parallel
        final SplittableRandom random = new SplittableRandom(77);
        try (CpuFlixIndex index = new CpuFlixIndex(config(3, 32)); TreeMapOracle oracle = new TreeMapOracle()) {
            final int built = 200_000;
            final long[] keys = new long[built];
            final long[] values = new long[built];
            for (int i = 0; i < built; i++) {
                keys[i] = random.nextLong(0, 1L << 22);
                values[i] = i + 1;
            }
            index.build(keys, values, built, false);
            oracle.build(keys, values, built, false);
            for (int round = 0; round < 6; round++) {
                final int n = CpuFlixIndex.PREP_PARALLEL_MIN_KEYS + random.nextInt(30_000);
                final long[] batch = new long[n];
                final long[] batchValues = new long[n];
                for (int i = 0; i < n; i++) {
                    batch[i] = random.nextLong(0, 1L << 22);
                    batchValues[i] = random.nextLong(1, Long.MAX_VALUE);
                }
                if (round % 2 == 0) {
                    delete(batch, false, index, oracle);
                } else {
                    upsert(batch, batchValues, false, index, oracle);
                }
                assertContents(oracle, index);
            }
        }
    }

    @Test
    void deleteAndUpsertOfOneKeyInOneEngineBatchInBothOrders() {
        try (CpuFlixIndex index = parallel(4)) {
            final MicroBatchEngine engine = new MicroBatchEngine(index);
            final long[] start = {1, 2, 3, 4, Long.MIN_VALUE, Long.MAX_VALUE};
            final long[] startValues = {1, 2, 3, 4, 5, 6};
            index.build(start, startValues, start.length, false);
            final OperationBatch batch = new OperationBatch();
            batch.delete(1);
            batch.upsert(1, 100);          // delete then upsert: present
            batch.upsert(2, 200);
            batch.delete(2);               // upsert then delete: absent
            batch.upsert(Long.MAX_VALUE, 7);
            batch.delete(Long.MAX_VALUE);
            batch.delete(Long.MIN_VALUE);
            batch.upsert(Long.MIN_VALUE, 8);
            batch.upsert(50, 1);
            batch.delete(50);
            batch.upsert(50, 2);
            final int get = batch.get(50);
            for (long k = 1000; k < 1100; k++) { // a batch wide enough for several pieces
                batch.upsert(k, k);
                batch.delete(k + 50);
            }
            final BatchResults results = engine.execute(batch);
            assertEquals(2, results.value(get));
            assertEquals(100, get(index, 1));
            assertEquals(FlixIndex.NOT_FOUND, get(index, 2));
            assertEquals(3, get(index, 3));
            assertEquals(FlixIndex.NOT_FOUND, get(index, Long.MAX_VALUE));
            assertEquals(8, get(index, Long.MIN_VALUE));
            assertEquals(2, get(index, 50));
            for (long k = 1000; k < 1150; k++) { // 1050..1099: deleted, then upserted
                assertEquals(k < 1100 ? k : FlixIndex.NOT_FOUND, get(index, k), "key " + k);
            }
            index.verifyStructure();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 5, 16})
    void batchPrepAloneMatchesAStableSortWithLastWins(int threads) {
        final ForkJoinPool pool = new ForkJoinPool(Math.min(threads, 4));
        try {
            final SplittableRandom random = new SplittableRandom(threads);
            for (int round = 0; round < 40; round++) {
                final BatchPrep prep = new BatchPrep(pool, threads, 1 + random.nextInt(64), 1 + random.nextInt(300));
                final int n = random.nextInt(1, 3000);
                final long[] keys = new long[n];
                final long[] values = new long[n];
                final long domain = round % 2 == 0 ? 1 + random.nextInt(100) : Long.MAX_VALUE;
                for (int i = 0; i < n; i++) {
                    keys[i] = random.nextInt(10) == 0 ? EDGE_KEYS[random.nextInt(EDGE_KEYS.length)]
                            : random.nextLong(-domain, domain);
                    values[i] = i;
                }
                final boolean sorted = round % 3 == 0;
                if (sorted) {
                    Arrays.sort(keys);
                }
                final TreeMap<Long, Long> expected = new TreeMap<>();
                for (int i = 0; i < n; i++) {
                    expected.put(keys[i], values[i]);
                }
                final long[] outKeys = new long[n];
                final long[] outValues = new long[n];
                final int unique = prep.sortUnique(keys, values, n, sorted, outKeys, outValues, new int[n]);
                assertEquals(expected.size(), unique);
                int i = 0;
                for (var e : expected.entrySet()) {
                    assertEquals(e.getKey(), outKeys[i]);
                    assertEquals(e.getValue(), outValues[i]);
                    i++;
                }
                final long[] keysOnly = new long[n];
                assertEquals(unique, prep.sortUnique(keys, null, n, sorted, keysOnly, null, new int[n]));
                assertArrayEquals(Arrays.copyOf(outKeys, unique), Arrays.copyOf(keysOnly, unique));
            }
        } finally {
            pool.shutdown();
        }
    }
}
