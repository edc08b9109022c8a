package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.Backend;
import io.flix.index.BatchArgs;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import java.util.Arrays;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.IntStream;
import java.util.stream.LongStream;

import org.junit.jupiter.api.Test;

/**
 * The FliX index's host arrays in pieces and chunks over the bus (the contract), as the JVM's heap allows: straight
 * from the heap where it cannot shrink (the module's tests run so), else staged. Skipped where no GPU is usable.
 */
class GpuBusChunkingTest extends BusChunkingContract {

    @Override
    protected FlixIndex open(FlixConfig config) {
        return GpuFlixIndex.open(config);
    }

    @Test
    void hostArraysGoStraightFromTheHeapExactlyWhereTheHeapCannotShrink() {
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build())) {
            final boolean safe = HeapRegistration.unsafeReasonHere() == null;
            assertEquals(safe, index.copies instanceof DirectCopies, HeapRegistration.outcome());
            assertEquals(safe, HeapRegistration.registeredBytes() > 0, HeapRegistration.outcome());
            if (safe) {
                assertTrue(HeapRegistration.outcome().startsWith("registered"), HeapRegistration.outcome());
            }
        }
    }

    @Test
    void lookupsRunAsOneNativePipelineExactlyWhereHostArraysGoStraight() {
        final int n = 3 * DirectCopies.LOOKUP_CHUNK_MIN_LONGS + 5;
        final long[] keys = IntStream.range(0, n).mapToLong(i -> i * 4L).toArray();
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build())) {
            final boolean straight = index.copies instanceof DirectCopies;
            index.build(keys, keys, n, true);
            final long[] out = new long[n];
            index.get(keys, n, out, true);
            assertArrayEquals(keys, out);
            assertEquals(straight, index.lastLookupPipelined(), "sorted get");
            final long[] reversed = IntStream.range(0, n).mapToLong(i -> keys[n - 1 - i] + 1).toArray();
            index.get(reversed, n, out, false);
            assertTrue(Arrays.stream(out).allMatch(v -> v == FlixIndex.NOT_FOUND), "keys between the stored ones");
            assertEquals(straight, index.lastLookupPipelined(), "unsorted get");
            final long[] outKeys = new long[n];
            index.ceiling(reversed, n, outKeys, out, false);
            assertEquals(straight, index.lastLookupPipelined(), "unsorted ceiling");
            for (int i = 0; i < n; i++) {
                final long expected = i == 0 ? FlixIndex.NOT_FOUND : reversed[i] + 3;
                assertEquals(expected, out[i], "ceiling of " + reversed[i]);
                assertEquals(i == 0 ? 0 : expected, outKeys[i], "ceiling key of " + reversed[i]);
            }
            final long[] sortedBetween = IntStream.range(0, n).mapToLong(i -> keys[i] + 1).toArray();
            index.floor(sortedBetween, n, outKeys, out, true);
            assertEquals(straight, index.lastLookupPipelined(), "sorted floor");
            assertArrayEquals(keys, out, "floor values");
            assertArrayEquals(keys, outKeys, "floor keys");
        }
    }

    /**
     * Ceilings and floors in any order (one thread a query) leave a bucket's range where its chain holds no answer:
     * across buckets emptied by deletes, before the first key and past the last, and along chains that upserts
     * grew; every answer against a sorted-map oracle, in place and through the window.
     */
    @Test
    void ceilingsAndFloorsInAnyOrderCrossEmptyBucketsAndWalkChains() {
        final int built = 1 << 16;
        final TreeMap<Long, Long> oracle = new TreeMap<>();
        final long[] keys = IntStream.range(0, built).mapToLong(i -> 1_000L + i * 8L).toArray();
        final long[] values = Arrays.stream(keys).map(k -> k * 3).toArray();
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build())) {
            index.build(keys, values, built, true);
            for (int i = 0; i < built; i++) {
                oracle.put(keys[i], values[i]);
            }
            // a gap of many emptied buckets in the middle, and the first and last thousand keys gone
            final long[] gone = LongStream.concat(LongStream.concat(Arrays.stream(keys, 20_000, 26_000),
                    Arrays.stream(keys, 0, 1_000)), Arrays.stream(keys, built - 1_000, built)).toArray();
            index.delete(gone, gone.length);
            Arrays.stream(gone).forEach(oracle::remove);
            // new keys between the stored ones of one stretch: its buckets' nodes split into chains
            final long[] added = IntStream.range(0, 14_000).mapToLong(i -> keys[40_000 + i / 7] + 1 + i % 7)
                    .toArray();
            final long[] addedValues = Arrays.stream(added).map(k -> -k).toArray();
            index.upsert(added, addedValues, added.length, true);
            for (int i = 0; i < added.length; i++) {
                oracle.put(added[i], addedValues[i]);
            }
            assertEquals(oracle.size(), index.size());
            final SplittableRandom random = new SplittableRandom(31);
            final long lo = keys[0] - 100;
            final long hi = keys[built - 1] + 100;
            final boolean straight = index.copies instanceof DirectCopies;
            for (int n : new int[] {1_000, 3 * DirectCopies.LOOKUP_CHUNK_MIN_LONGS + 5}) {
                final long[] probes = random.longs(n, lo, hi).toArray();
                probes[0] = Long.MIN_VALUE;
                probes[1] = Long.MAX_VALUE;
                final long[] sorted = probes.clone();
                Arrays.sort(sorted);
                for (long[] batch : new long[][] {probes, sorted}) {
                    final String where = "n = " + n + (batch == sorted ? ", sorted" : ", unsorted");
                    final long[] outKeys = new long[n];
                    final long[] out = new long[n];
                    index.ceiling(batch, n, outKeys, out, batch == sorted);
                    assertEquals(straight, index.lastLookupPipelined(), where + ": ceiling pipelined");
                    assertAnswers(oracle, batch, outKeys, out, true, where);
                    index.floor(batch, n, outKeys, out, batch == sorted);
                    assertEquals(straight, index.lastLookupPipelined(), where + ": floor pipelined");
                    assertAnswers(oracle, batch, outKeys, out, false, where);
                }
            }
        }
    }

    private static void assertAnswers(TreeMap<Long, Long> oracle, long[] queries, long[] outKeys, long[] out,
                                      boolean ceiling, String where) {
        for (int i = 0; i < queries.length; i++) {
            final Map.Entry<Long, Long> e = ceiling ? oracle.ceilingEntry(queries[i]) : oracle.floorEntry(queries[i]);
            final String what = where + (ceiling ? ": ceiling of " : ": floor of ") + queries[i];
            assertEquals(e == null ? FlixIndex.NOT_FOUND : e.getValue(), out[i], what);
            assertEquals(e == null ? 0 : e.getKey(), outKeys[i], what + " (key)");
        }
    }

    @Test
    void smallGetsReadAndWriteTheHeapInPlaceExactlyWhereItIsMappedForTheDevice() {
        final SplittableRandom random = new SplittableRandom(23);
        final long[] present = random.longs(1 << 18).sorted().distinct().toArray();
        final long[] values = Arrays.stream(present).map(k -> k ^ 0x5555L).toArray();
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build())) {
            index.build(present, values, present.length, true);
            final boolean inPlace = index.copies instanceof DirectCopies && HeapRegistration.mappedForDevice();
            for (int n : new int[] {1, 31, 33, 1000, DeviceSteps.DEVICE_CHECK_MIN + 5,
                DirectCopies.MAPPED_LOOKUP_MAX_LONGS, DirectCopies.MAPPED_LOOKUP_MAX_LONGS + 1}) {
                final long[] probes = new long[n];
                for (int i = 0; i < n; i++) {
                    probes[i] = random.nextBoolean() ? random.nextLong() : present[random.nextInt(present.length)];
                }
                final long[] sorted = probes.clone();
                Arrays.sort(sorted);
                for (long[] batch : new long[][] {probes, sorted}) {
                    final boolean keysSorted = batch == sorted;
                    final long[] out = new long[n];
                    index.get(batch, n, out, keysSorted);
                    for (int i = 0; i < n; i++) {
                        final int at = Arrays.binarySearch(present, batch[i]);
                        assertEquals(at >= 0 ? values[at] : FlixIndex.NOT_FOUND, out[i], "n = " + n + ", query " + i);
                    }
                    assertEquals(inPlace && n <= DirectCopies.MAPPED_LOOKUP_MAX_LONGS,
                            index.copies instanceof DirectCopies direct && direct.lastLookupMapped(),
                            "n = " + n + (keysSorted ? ", sorted" : ", unsorted") + "; " + HeapRegistration.outcome());
                }
            }
        }
    }

    @Test
    void aBrokenSortPromiseInALookupInPlaceIsReportedAsTheHostWordsIt() {
        // large enough for the device to check the promise; positions at a warp's first lane (which reads the
        // query before it from the heap) and within a warp
        final int n = DeviceSteps.DEVICE_CHECK_MIN + 5;
        final long[] sorted = IntStream.range(0, n).mapToLong(i -> i * 3L).toArray();
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build())) {
            index.build(sorted, sorted, n, true);
            for (int at : new int[] {32 * 100 - 1, 32 * 100 + 5, n - 2}) {
                final long[] keys = sorted.clone();
                keys[at] = sorted[at + 1];
                keys[at + 1] = sorted[at];
                final IllegalArgumentException expected = assertThrows(IllegalArgumentException.class,
                        () -> BatchArgs.checkKeys(keys, n, true));
                final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> index.get(keys, n, new long[n], true));
                assertEquals(expected.getMessage(), e.getMessage(), "get, swapped at " + at);
                final IllegalArgumentException f = assertThrows(IllegalArgumentException.class,
                        () -> index.floor(keys, n, new long[n], new long[n], true));
                assertEquals(expected.getMessage(), f.getMessage(), "floor, swapped at " + at);
            }
            final long[] out = new long[n];
            index.get(sorted, n, out, true);
            assertArrayEquals(sorted, out, "a kept promise after broken ones");
            final long[] outKeys = new long[n];
            index.ceiling(sorted, n, outKeys, out, true);
            assertArrayEquals(sorted, outKeys, "a kept promise after broken ones (ceiling)");
            assertArrayEquals(sorted, out, "a kept promise after broken ones (ceiling values)");
        }
    }
}
