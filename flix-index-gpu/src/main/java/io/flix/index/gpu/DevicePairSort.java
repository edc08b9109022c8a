package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;

import io.flix.index.GpuMemoryBudget;

import java.io.IOException;

import jcuda.Pointer;

/**
 * The sort that the GPU indexes run on every unsorted batch, alone, for timing: CUB's radix sort of signed 64-bit
 * keys with each key's batch position (32-bit) as payload, after an iota fill of the positions. Buffers grow on
 * demand and are reused; the input is not modified.
 */
public final class DevicePairSort implements AutoCloseable {

    private final GpuRuntime.DeviceContext device;
    /** The indexes' own sort step. */
    private final DeviceSteps steps;
    private final DeviceStream stream;
    private int lastSorted;
    private boolean closed;

    private DevicePairSort(GpuRuntime.DeviceContext device) {
        this.device = device;
        this.stream = new DeviceStream();
        // counted in the device's ledger, held to no budget (a benchmark's tool, not an index)
        this.steps = new DeviceSteps(new FlixKernels(device, stream, step -> { }),
                device.memory.account(GpuMemoryBudget.NONE), step -> { });
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
        steps.sortWithPositions(keys.buffer(), n, 0, 64);
        stream.synchronize();
        lastSorted = n;
    }

    /** Copies the first {@code n} sorted keys and their positions of the last sort to the host (for checks). */
    public void sortedResult(long[] keysOut, int[] positionsOut, int n) {
        if (closed) {
            throw new IllegalStateException("sort is closed");
        }
        if (n < 0 || keysOut == null || positionsOut == null || keysOut.length < n || positionsOut.length < n
                || n > lastSorted) {
            throw new IllegalArgumentException("n = " + n + " is more than the last sort or the arrays hold");
        }
        device.makeCurrent();
        if (n > 0) {
            cuMemcpyDtoH(Pointer.to(keysOut), steps.sortedKeys().pointer(), n * 8L);
            cuMemcpyDtoH(Pointer.to(positionsOut), steps.positions().pointer(), n * 4L);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        device.makeCurrent();
        steps.close();
        stream.close();
    }
}
