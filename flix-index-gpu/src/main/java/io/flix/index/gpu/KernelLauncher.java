package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;

import java.util.function.Consumer;

import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;

/**
 * Launches the kernels of one fatbin in blocks of {@link KernelContract#BLOCK_THREADS} threads on the current
 * index's stream ({@link DeviceStream}). Only the typed launch classes ({@link FlixKernels}, {@link SortedArrayKernels}) call it:
 * they name each kernel and marshal its parameters with {@link #ptr}, {@link #i32} and {@link #i64}.
 */
final class KernelLauncher {

    private static final int BLOCK = KernelContract.BLOCK_THREADS;
    private static final int WARP = 32;

    private final GpuRuntime.DeviceContext device;
    /** The fatbin resource; null for flix_kernels.fatbin, which every device context loads. */
    private final String fatbin;
    private final DeviceStream stream;
    private final Consumer<String> trace;

    /**
     * @param fatbin the kernels' fatbin resource (null: flix_kernels.fatbin)
     * @param stream the stream the kernels run on
     * @param trace  called with each kernel's name after it is issued (profiling; may do nothing)
     */
    KernelLauncher(GpuRuntime.DeviceContext device, String fatbin, DeviceStream stream, Consumer<String> trace) {
        this.device = device;
        this.fatbin = fatbin;
        this.stream = stream;
        this.trace = trace;
    }

    /** One thread per item; nothing where there are none. */
    void threads(String kernel, long threads, Pointer... parameters) {
        if (threads <= 0) {
            return;
        }
        final long blocks = (threads + BLOCK - 1) / BLOCK;
        if (blocks > Integer.MAX_VALUE) {
            throw new IllegalStateException(kernel + ": " + threads + " threads exceed one launch");
        }
        cuLaunchKernel(function(kernel), (int) blocks, 1, 1, BLOCK, 1, 1, 0, stream.stream(), Pointer.to(parameters),
                null);
        trace.accept(kernel);
    }

    /** One warp per item. */
    void warps(String kernel, long warps, Pointer... parameters) {
        threads(kernel, warps * WARP, parameters);
    }

    /** A grid of {@code gridX} by {@code gridY} blocks. */
    void grid(String kernel, int gridX, int gridY, Pointer... parameters) {
        cuLaunchKernel(function(kernel), gridX, gridY, 1, BLOCK, 1, 1, 0, stream.stream(), Pointer.to(parameters),
                null);
        trace.accept(kernel);
    }

    private CUfunction function(String kernel) {
        return fatbin == null ? device.function(kernel) : device.function(fatbin, kernel);
    }

    /** A pointer parameter; null passes a null device pointer (a kernel's optional array). */
    static Pointer ptr(CUdeviceptr p) {
        return Pointer.to(p == null ? new CUdeviceptr() : p);
    }

    /** An {@code int} parameter. */
    static Pointer i32(int v) {
        return Pointer.to(new int[] {v});
    }

    /** An {@code i64} ({@code long long}) parameter. */
    static Pointer i64(long v) {
        return Pointer.to(new long[] {v});
    }
}
