package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;

import io.flix.index.GpuMemoryBudget;

import java.io.IOException;

import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;

/**
 * An array of longs in device memory, for timing the device work of a GPU index alone: queries and batches are
 * uploaded beforehand and results stay on the device until downloaded ({@link GpuFlixIndex} and
 * {@link GpuSortedArrayIndex} take them in their device-resident overloads). Owns one {@link DeviceBuffer};
 * {@link #close()} frees it. Copies here go straight from and to the Java array (pageable, not tuned for speed).
 */
public final class DeviceLongs implements AutoCloseable {

    private final GpuRuntime.DeviceContext device;
    private final DeviceBuffer buffer;
    private final long length;

    private DeviceLongs(GpuRuntime.DeviceContext device, DeviceBuffer buffer, long length) {
        this.device = device;
        this.buffer = buffer;
        this.length = length;
    }

    /**
     * Allocates {@code length} longs (contents undefined) on CUDA device {@code deviceOrdinal}.
     *
     * @throws IllegalArgumentException where length is negative
     * @throws IllegalStateException    where no GPU is usable
     * @throws GpuOutOfMemoryException  where the device cannot hold them
     */
    public static DeviceLongs allocate(int deviceOrdinal, long length) {
        if (length < 0) {
            throw new IllegalArgumentException("length must not be negative, was " + length);
        }
        final String reason = GpuSupport.unavailableReason();
        if (reason != null) {
            throw new IllegalStateException(reason);
        }
        try {
            final GpuRuntime.DeviceContext device = GpuRuntime.device(deviceOrdinal);
            // counted in the device's ledger, held to no budget: the caller owns the array, not an index
            final DeviceBuffer buffer = DeviceBuffer.allocate(device.memory.account(GpuMemoryBudget.NONE),
                    length * Long.BYTES, "device longs");
            return new DeviceLongs(device, buffer, length);
        } catch (IOException e) {
            throw new IllegalStateException("GPU backend unavailable: " + e.getMessage(), e);
        }
    }

    /** A device copy of {@code values[0, n)}. */
    public static DeviceLongs of(int deviceOrdinal, long[] values, int n) {
        checkRange(values, n);
        final DeviceLongs d = allocate(deviceOrdinal, n);
        try {
            d.upload(values, n);
        } catch (RuntimeException e) {
            d.close();
            throw e;
        }
        return d;
    }

    /** Number of longs. */
    public long length() {
        return length;
    }

    /** The CUDA device ordinal that holds the array. */
    public int device() {
        return device.ordinal;
    }

    /** Copies {@code src[0, n)} into the first {@code n} longs. */
    public void upload(long[] src, int n) {
        checkRange(src, n);
        checkFits(n);
        device.makeCurrent();
        if (n > 0) {
            cuMemcpyHtoD(buffer.pointer(), Pointer.to(src), n * (long) Long.BYTES);
            // a copy from pageable memory may still be on its way when it returns, and an index's own stream does
            // not wait for the legacy stream: it has arrived before an index reads it
            cuCtxSynchronize();
        }
    }

    /** Copies the first {@code n} longs into {@code dst[0, n)}, after the device work queued before. */
    public void download(long[] dst, int n) {
        checkRange(dst, n);
        checkFits(n);
        device.makeCurrent();
        cuCtxSynchronize();
        if (n > 0) {
            cuMemcpyDtoH(Pointer.to(dst), buffer.pointer(), n * (long) Long.BYTES);
        }
    }

    @Override
    public void close() {
        if (!buffer.isClosed()) {
            device.makeCurrent();
            buffer.close();
        }
    }

    DeviceBuffer buffer() {
        return buffer;
    }

    CUdeviceptr pointer() {
        return buffer.pointer();
    }

    /** Throws where {@code n} longs from the start would pass the end, naming the argument. */
    void checkHolds(long n, String name) {
        if (n > length) {
            throw new IllegalArgumentException(name + " holds " + length + " longs, fewer than n = " + n);
        }
        if (buffer.isClosed()) {
            throw new IllegalArgumentException(name + " is closed");
        }
    }

    /** Throws unless {@code d} is on {@code device}. */
    static void checkDevice(DeviceLongs d, String name, int device) {
        if (d == null) {
            throw new IllegalArgumentException(name + " must not be null");
        }
        if (d.device() != device) {
            throw new IllegalArgumentException(name + " is on CUDA device " + d.device() + ", the index on " + device);
        }
    }

    /**
     * The argument check of a device-resident call, before anything changes: n, and each (device array, name) pair
     * on {@code device} and holding at least n longs.
     */
    static void checkArgs(int n, int device, Object... arraysAndNames) {
        io.flix.index.BatchArgs.checkCount(n);
        for (int i = 0; i < arraysAndNames.length; i += 2) {
            final String name = (String) arraysAndNames[i + 1];
            final DeviceLongs d = (DeviceLongs) arraysAndNames[i];
            checkDevice(d, name, device);
            d.checkHolds(n, name);
        }
    }

    private void checkFits(int n) {
        if (n > length) {
            throw new IllegalArgumentException("n = " + n + " exceeds the " + length + " longs on the device");
        }
    }

    private static void checkRange(long[] array, int n) {
        if (array == null) {
            throw new IllegalArgumentException("array must not be null");
        }
        if (n < 0 || n > array.length) {
            throw new IllegalArgumentException("n = " + n + " is outside [0, " + array.length + "]");
        }
    }
}
