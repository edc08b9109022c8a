package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;

import java.io.IOException;

import jcuda.Pointer;

/**
 * The sort that the GPU indexes run on every unsorted batch, alone, for timing: CUB's radix sort of signed 64-bit
 * keys with each key's batch position (32-bit) as payload, after an iota fill of the positions. Buffers grow on
 * demand and are reused; the input is not modified.
 */
public final class DevicePairSort implements AutoCloseable {

    private static final int BLOCK = 256;

    private final GpuRuntime.DeviceContext device;
    private final GpuFlixIndex.Scratch identity = new GpuFlixIndex.Scratch("sort positions");
    private final GpuFlixIndex.Scratch sortedKeys = new GpuFlixIndex.Scratch("sorted keys");
    private final GpuFlixIndex.Scratch sortedPositions = new GpuFlixIndex.Scratch("sorted positions");
    private final GpuFlixIndex.Scratch cubScratch = new GpuFlixIndex.Scratch("sort scratch");
    private boolean closed;

    private DevicePairSort(GpuRuntime.DeviceContext device) {
        this.device = device;
    }

    /** Opens the sort on CUDA device {@code deviceOrdinal}. */
    public static DevicePairSort open(int deviceOrdinal) {
        final String reason = GpuSupport.unavailableReason();
        if (reason != null) {
            throw new IllegalStateException(reason);
        }
        try {
            return new DevicePairSort(GpuRuntime.device(deviceOrdinal));
        } catch (IOException e) {
            throw new IllegalStateException("GPU backend unavailable: " + e.getMessage(), e);
        }
    }

    /**
     * Sorts {@code keys[0, n)} with their positions into this object's buffers; returns once the device is done.
     *
     * @throws IllegalArgumentException where n is negative, keys is null, on another device or shorter than n
     */
    public void sort(DeviceLongs keys, int n) {
        if (closed) {
            throw new IllegalStateException("sort is closed");
        }
        if (n < 0) {
            throw new IllegalArgumentException("n must be >= 0, was " + n);
        }
        DeviceLongs.checkDevice(keys, "keys", device.ordinal);
        keys.checkHolds(n, "keys");
        device.makeCurrent();
        if (n == 0) {
            return;
        }
        final DeviceBuffer iota = identity.ensure(n * 4L);
        final Pointer params = Pointer.to(Pointer.to(iota.pointer()), Pointer.to(new int[] {n}));
        cuLaunchKernel(device.function(GpuRuntime.SORTED_ARRAY_FATBIN_RESOURCE, "sa_iota_u32"),
                (n + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, null, params, null);
        final long bytes = CubNative.checkBytes(CubNative.sortPairsScratchBytes(n), "sort scratch size");
        CubNative.check(CubNative.sortPairs(cubScratch.ensure(bytes).address(), bytes, keys.buffer().address(),
                sortedKeys.ensure(n * 8L).address(), iota.address(), sortedPositions.ensure(n * 4L).address(), n),
                "pair sort");
        cuCtxSynchronize();
    }

    /** Copies the first {@code n} sorted keys and their positions of the last sort to the host (for checks). */
    public void sortedResult(long[] keysOut, int[] positionsOut, int n) {
        if (closed) {
            throw new IllegalStateException("sort is closed");
        }
        if (n < 0 || keysOut == null || positionsOut == null || keysOut.length < n || positionsOut.length < n
                || sortedKeys.buffer() == null || sortedKeys.buffer().bytes() < n * 8L) {
            throw new IllegalArgumentException("n = " + n + " is more than the last sort or the arrays hold");
        }
        device.makeCurrent();
        cuMemcpyDtoH(Pointer.to(keysOut), sortedKeys.pointer(), n * 8L);
        cuMemcpyDtoH(Pointer.to(positionsOut), sortedPositions.pointer(), n * 4L);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        device.makeCurrent();
        identity.close();
        sortedKeys.close();
        sortedPositions.close();
        cubScratch.close();
    }
}
