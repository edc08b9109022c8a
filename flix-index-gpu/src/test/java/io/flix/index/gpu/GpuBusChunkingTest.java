package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import java.util.Arrays;
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
}
