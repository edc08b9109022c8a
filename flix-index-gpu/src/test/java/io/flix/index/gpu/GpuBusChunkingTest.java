package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.Backend;
import io.flix.index.BatchArgs;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

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
    void getsRunAsOneNativePipelineExactlyWhereHostArraysGoStraight() {
        final int n = 3 * DirectCopies.GET_CHUNK_MIN_LONGS + 5;
        final long[] keys = IntStream.range(0, n).mapToLong(i -> i * 4L).toArray();
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build())) {
            final boolean straight = index.copies instanceof DirectCopies;
            index.build(keys, keys, n, true);
            final long[] out = new long[n];
            index.get(keys, n, out, true);
            assertArrayEquals(keys, out);
            assertEquals(straight, index.lastGetPipelined(), "sorted get");
            final long[] reversed = IntStream.range(0, n).mapToLong(i -> keys[n - 1 - i] + 1).toArray();
            index.get(reversed, n, out, false);
            assertTrue(Arrays.stream(out).allMatch(v -> v == FlixIndex.NOT_FOUND), "keys between the stored ones");
            assertEquals(straight, index.lastGetPipelined(), "unsorted get");
            index.ceiling(reversed, n, new long[n], out, false);
            assertFalse(index.lastGetPipelined(), "ceiling: one warp a bucket, as before");
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
                DirectCopies.MAPPED_GET_MAX_LONGS, DirectCopies.MAPPED_GET_MAX_LONGS + 1}) {
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
                    assertEquals(inPlace && n <= DirectCopies.MAPPED_GET_MAX_LONGS,
                            index.copies instanceof DirectCopies direct && direct.lastGetMapped(),
                            "n = " + n + (keysSorted ? ", sorted" : ", unsorted") + "; " + HeapRegistration.outcome());
                }
            }
        }
    }

    @Test
    void aBrokenSortPromiseInAGetInPlaceIsReportedAsTheHostWordsIt() {
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
                assertEquals(expected.getMessage(), e.getMessage(), "swapped at " + at);
            }
            final long[] out = new long[n];
            index.get(sorted, n, out, true);
            assertArrayEquals(sorted, out, "a kept promise after broken ones");
        }
    }
}
