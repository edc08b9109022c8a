package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemGetInfo;

import java.util.concurrent.atomic.AtomicLong;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import jcuda.CudaException;

/**
 * One device allocation and its size, freed by {@link #close()}. Live allocations are counted process-wide so
 * that tests can assert every index returned its memory ({@link #liveBytes()}, {@link #liveAllocations()}).
 */
public final class DeviceBuffer implements AutoCloseable {

    private static final AtomicLong LIVE_BYTES = new AtomicLong();
    private static final AtomicLong LIVE_ALLOCATIONS = new AtomicLong();

    private final RawDevicePointer pointer;
    private final long bytes;
    private boolean closed;

    private DeviceBuffer(RawDevicePointer pointer, long bytes) {
        this.pointer = pointer;
        this.bytes = bytes;
    }

    /**
     * Allocates {@code bytes} (at least 8) of device memory on the current context.
     *
     * @throws GpuOutOfMemoryException naming the request and the device's free and total memory
     */
    static DeviceBuffer allocate(long bytes, String what) {
        final long size = Math.max(8, (bytes + 7) & ~7L);
        final RawDevicePointer p = new RawDevicePointer();
        try {
            cuMemAlloc(p, size);
        } catch (CudaException e) {
            if (e.getMessage() != null && e.getMessage().contains(CUresult.stringFor(CUresult.CUDA_ERROR_OUT_OF_MEMORY))) {
                final long[] free = new long[1];
                final long[] total = new long[1];
                try {
                    cuMemGetInfo(free, total);
                } catch (CudaException ignored) {
                    // report what we know
                }
                throw new GpuOutOfMemoryException("GPU out of memory allocating " + size + " bytes for " + what
                        + " (device free " + free[0] + " of " + total[0] + " bytes; this process holds "
                        + LIVE_BYTES.get() + " bytes in " + LIVE_ALLOCATIONS.get() + " allocations)", e);
            }
            throw e;
        }
        LIVE_BYTES.addAndGet(size);
        LIVE_ALLOCATIONS.incrementAndGet();
        return new DeviceBuffer(p, size);
    }

    CUdeviceptr pointer() {
        if (closed) {
            throw new IllegalStateException("device buffer used after close");
        }
        return pointer;
    }

    /** The pointer {@code byteOffset} bytes in. */
    CUdeviceptr at(long byteOffset) {
        return pointer().withByteOffset(byteOffset);
    }

    /** The raw device address, for the CUB bridge. */
    long address() {
        pointer();
        return pointer.address();
    }

    long bytes() {
        return bytes;
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        cuMemFree(pointer);
        LIVE_BYTES.addAndGet(-bytes);
        LIVE_ALLOCATIONS.decrementAndGet();
    }

    /** Device bytes currently allocated through this class, by every index in the process. */
    public static long liveBytes() {
        return LIVE_BYTES.get();
    }

    /** Device allocations currently live, by every index in the process. */
    public static long liveAllocations() {
        return LIVE_ALLOCATIONS.get();
    }

    /** A device pointer whose raw address can be read, to hand to native code. */
    static final class RawDevicePointer extends CUdeviceptr {
        long address() {
            return getNativePointer() + getByteOffset();
        }
    }
}
