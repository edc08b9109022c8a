package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.flix.index.FlixConfig;

import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

/** The sorted-array baseline's device-resident calls (the contract) and its memory. Skips where no GPU is usable. */
class GpuSortedArrayDeviceResidentTest extends DeviceResidentContract {

    @Override
    protected DeviceResidentIndex open() {
        return GpuSortedArrayIndex.open(FlixConfig.builder().build());
    }

    @Test
    void sortedArrayHoldsSixteenBytesAKeyAfterABuild() {
        final SplittableRandom rnd = new SplittableRandom(15);
        final long liveBefore = DeviceBuffer.liveBytes();
        try (GpuSortedArrayIndex index = GpuSortedArrayIndex.open(FlixConfig.builder().build())) {
            final int n = 300_000;
            final long[][] build = randomPairs(rnd, n, 1L << 40);
            index.build(build[0], build[1], n);
            assertEquals(16L * index.size(), index.stats().bytes());
            index.upsert(build[0], build[1], n); // replaces only: same size
            assertEquals(n, index.size() + duplicates(build[0]));
            index.delete(build[0], n / 2);
            index.restructure();
            assertEquals(16L * index.size(), index.stats().bytes(), "restructure trims the arrays");
        }
        assertEquals(liveBefore, DeviceBuffer.liveBytes(), "device memory left after close");
    }
}
