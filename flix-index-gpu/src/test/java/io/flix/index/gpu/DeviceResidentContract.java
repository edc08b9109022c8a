package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.SortedPairs;
import io.flix.index.TreeMapOracle;

import java.util.Arrays;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The contract of the device-resident calls ({@link DeviceResidentIndex}) against the {@link TreeMapOracle} and their
 * argument checks; each GPU structure's test extends it and says how to open the structure. Skips where no GPU is
 * usable.
 */
public abstract class DeviceResidentContract {

    protected static final long NOT_FOUND = FlixIndex.NOT_FOUND;

    /** An empty index of the structure under test. */
    protected abstract DeviceResidentIndex open();

    @BeforeEach
    void assumeGpu() {
        Assumptions.assumeTrue(GpuSupport.isAvailable(), GpuSupport.unavailableReason());
    }

    /**
     * Random rounds of device-resident upserts, deletes, gets and ceilings (small batches checked on the host side
     * of the index, large ones on the device; sorted and unsorted; repeated keys) give the oracle's answers.
     */
    @Test
    void deviceCallsMatchTheOracle() {
        final String name = getClass().getSimpleName();
        final SplittableRandom rnd = new SplittableRandom(11);
        try (DeviceResidentIndex index = open(); TreeMapOracle oracle = new TreeMapOracle()) {
            final int dev = index.deviceOrdinal();
            final long spread = 1L << 22; // about one in four random keys is present: hits, misses, replacements
            final long[][] build = randomPairs(rnd, 100_000, spread);
            index.build(build[0], build[1], build[0].length);
            oracle.build(build[0], build[1], build[0].length);
            for (int round = 0; round < 6; round++) {
                final int n = round % 2 == 0 ? 1_500 : 80_000;
                final boolean sorted = round % 3 == 1;
                final String at = name + " round " + round + " n " + n + (sorted ? " sorted" : "");
                final long[][] batch = randomPairs(rnd, n, spread);
                if (sorted) {
                    sortPairs(batch);
                }
                try (DeviceLongs k = DeviceLongs.of(dev, batch[0], n); DeviceLongs v = DeviceLongs.of(dev, batch[1], n)) {
                    index.upsert(k, v, n, sorted);
                    assertUnchanged(batch[0], k, at + ": upsert modified its keys");
                    assertUnchanged(batch[1], v, at + ": upsert modified its values");
                }
                oracle.upsert(batch[0], batch[1], n, sorted);
                assertEquals(oracle.size(), index.size(), at + ": size after upsert");

                compareLookups(index, oracle, randomKeys(rnd, n, spread), false, at);
                final long[] sortedProbes = randomKeys(rnd, n, spread);
                Arrays.sort(sortedProbes);
                compareLookups(index, oracle, sortedProbes, true, at + " sorted probes");

                final long[] doomed = randomKeys(rnd, n / 2, spread);
                if (sorted) {
                    Arrays.sort(doomed);
                }
                try (DeviceLongs k = DeviceLongs.of(dev, doomed, doomed.length)) {
                    index.delete(k, doomed.length, sorted);
                    assertUnchanged(doomed, k, at + ": delete modified its keys");
                }
                oracle.delete(doomed, doomed.length, sorted);
                assertEquals(oracle.size(), index.size(), at + ": size after delete");
            }
            final SortedPairs all = index.export();
            final SortedPairs expected = oracle.export();
            assertArrayEquals(Arrays.copyOf(expected.keys(), expected.size()), Arrays.copyOf(all.keys(), all.size()),
                    name + ": exported keys");
            assertArrayEquals(Arrays.copyOf(expected.values(), expected.size()),
                    Arrays.copyOf(all.values(), all.size()), name + ": exported values");
        }
    }

    private static void compareLookups(DeviceResidentIndex index, TreeMapOracle oracle, long[] probes, boolean sorted,
                                       String at) {
        final int n = probes.length;
        final int dev = index.deviceOrdinal();
        final long[] expectedValues = new long[n];
        final long[] expectedKeys = new long[n];
        final long[] values = new long[n];
        final long[] keys = new long[n];
        try (DeviceLongs q = DeviceLongs.of(dev, probes, n); DeviceLongs vOut = DeviceLongs.allocate(dev, n);
             DeviceLongs kOut = DeviceLongs.allocate(dev, n)) {
            index.get(q, n, vOut, sorted);
            vOut.download(values, n);
            oracle.get(probes, n, expectedValues, sorted);
            assertArrayEquals(expectedValues, values, at + ": get");
            assertUnchanged(probes, q, at + ": get modified its keys");

            index.ceiling(q, n, kOut, vOut, sorted);
            kOut.download(keys, n);
            vOut.download(values, n);
            oracle.ceiling(probes, n, expectedKeys, expectedValues, sorted);
            assertArrayEquals(expectedKeys, keys, at + ": ceiling keys");
            assertArrayEquals(expectedValues, values, at + ": ceiling values");
        }
    }

    @Test
    void deviceCallsRejectBadArgumentsBeforeAnythingChanges() {
        final String name = getClass().getSimpleName();
        final SplittableRandom rnd = new SplittableRandom(12);
        try (DeviceResidentIndex index = open()) {
            final int dev = index.deviceOrdinal();
            final long[][] build = randomPairs(rnd, 10_000, Long.MAX_VALUE);
            index.build(build[0], build[1], build[0].length);
            final SortedPairs before = index.export();
            final int n = 100_000; // beyond the host-check threshold of the host overloads
            final long[][] batch = randomPairs(rnd, n, Long.MAX_VALUE);
            final long[] unsorted = batch[0].clone();
            final long[] reserved = batch[1].clone();
            reserved[n - 7] = NOT_FOUND;
            try (DeviceLongs k = DeviceLongs.of(dev, batch[0], n); DeviceLongs v = DeviceLongs.of(dev, batch[1], n);
                 DeviceLongs badValues = DeviceLongs.of(dev, reserved, n);
                 DeviceLongs unsortedKeys = DeviceLongs.of(dev, unsorted, n);
                 DeviceLongs shortOut = DeviceLongs.allocate(dev, n - 1);
                 DeviceLongs out = DeviceLongs.allocate(dev, n)) {
                assertNames("values", () -> index.upsert(k, badValues, n, false));
                try (DeviceLongs oneKey = DeviceLongs.of(dev, new long[n], n)) {
                    // no key bits vary: the batch needs no sort, its values are checked all the same
                    assertNames("values", () -> index.upsert(oneKey, badValues, n, false));
                }
                assertNames("sorted", () -> index.upsert(unsortedKeys, v, n, true));
                assertNames("sorted", () -> index.delete(unsortedKeys, n, true));
                assertNames("sorted", () -> index.get(unsortedKeys, n, out, true));
                assertNames("keys", () -> index.upsert(null, v, n, false));
                assertNames("values", () -> index.upsert(k, null, n, false));
                assertNames("valuesOut", () -> index.get(k, n, shortOut, false));
                assertNames("keysOut", () -> index.ceiling(k, n, shortOut, out, false));
                assertNames("keys", () -> index.delete(shortOut, n, false));
                assertNames("n", () -> index.get(k, -1, out, false));
                final DeviceLongs closed = DeviceLongs.allocate(dev, n);
                closed.close();
                assertNames("keys", () -> index.delete(closed, n, false));
            }
            final SortedPairs after = index.export();
            assertEquals(before.size(), after.size(), name + ": size changed by rejected calls");
            assertArrayEquals(before.keys(), after.keys(), name + ": keys changed by rejected calls");
            assertArrayEquals(before.values(), after.values(), name + ": values changed by rejected calls");
            index.close();
            try (DeviceLongs k = DeviceLongs.allocate(dev, 4)) {
                assertThrows(IllegalStateException.class, () -> index.get(k, 4, k, false));
                assertThrows(IllegalStateException.class, () -> index.delete(k, 4, false));
            }
        }
    }

    private static void assertNames(String argument, Runnable call) {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
        assertTrue(e.getMessage().contains(argument), () -> "message should name " + argument + ": " + e.getMessage());
    }

    // ---------------------------------------------------------------------------------------------------------

    protected static int duplicates(long[] keys) {
        final long[] sorted = keys.clone();
        Arrays.sort(sorted);
        int d = 0;
        for (int i = 1; i < sorted.length; i++) {
            if (sorted[i] == sorted[i - 1]) {
                d++;
            }
        }
        return d;
    }

    protected static void assertUnchanged(long[] expected, DeviceLongs actual, String message) {
        final long[] now = new long[expected.length];
        actual.download(now, expected.length);
        assertArrayEquals(expected, now, message);
    }

    protected static long[][] randomPairs(SplittableRandom rnd, int n, long spread) {
        final long[] keys = randomKeys(rnd, n, spread);
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            values[i] = rnd.nextLong(NOT_FOUND + 1, Long.MAX_VALUE);
        }
        return new long[][] {keys, values};
    }

    private static long[] randomKeys(SplittableRandom rnd, int n, long spread) {
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = spread == Long.MAX_VALUE ? rnd.nextLong() : rnd.nextLong(-spread, spread);
        }
        return keys;
    }

    /** Sorts pairs by key, stably (equal keys keep batch order, so the last occurrence still wins). */
    private static void sortPairs(long[][] pairs) {
        final int n = pairs[0].length;
        final Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Long.compare(pairs[0][a], pairs[0][b]));
        final long[] k = new long[n];
        final long[] v = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = pairs[0][order[i]];
            v[i] = pairs[1][order[i]];
        }
        pairs[0] = k;
        pairs[1] = v;
    }
}
