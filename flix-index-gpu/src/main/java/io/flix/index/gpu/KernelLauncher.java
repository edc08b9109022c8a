package io.flix.index.gpu;

import java.util.function.Consumer;

import jcuda.CudaException;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;

/**
 * Launches the kernels of one fatbin in blocks of {@link KernelContract#BLOCK_THREADS} threads on the current
 * index's stream ({@link DeviceStream}). Only the typed launch classes ({@link FlixKernels}, {@link SortedArrayKernels}) call it:
 * they name each kernel and pass its parameters through {@link #ptr}, {@link #i32} and {@link #i64}, as raw 64-bit
 * values that the native launch ({@code src/main/cuda/flix_launch_jni.cu}) hands to the driver: a kernel's 32-bit
 * parameter reads the low half of its value.
 */
final class KernelLauncher {

    private static final int BLOCK = KernelContract.BLOCK_THREADS;
    private static final int WARP = 32;
    /** As {@code MAX_PARAMETERS} of flix_launch_jni.cu. */
    private static final int MAX_PARAMETERS = 24;

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
    void threads(String kernel, long threads, long... parameters) {
        if (threads <= 0) {
            return;
        }
        final long blocks = (threads + BLOCK - 1) / BLOCK;
        if (blocks > Integer.MAX_VALUE) {
            throw new IllegalStateException(kernel + ": " + threads + " threads exceed one launch");
        }
        grid(kernel, (int) blocks, 1, parameters);
    }

    /** One warp per item. */
    void warps(String kernel, long warps, long... parameters) {
        threads(kernel, warps * WARP, parameters);
    }

    /** A grid of {@code gridX} by {@code gridY} blocks. */
    void grid(String kernel, int gridX, int gridY, long... parameters) {
        if (parameters.length > MAX_PARAMETERS) {
            throw new IllegalArgumentException(kernel + ": " + parameters.length + " parameters, more than the "
                    + MAX_PARAMETERS + " a launch passes");
        }
        final long function = fatbin == null ? device.functionAddress(kernel)
                : device.functionAddress(fatbin, kernel);
        final int code = launch(function, gridX, gridY, BLOCK, stream.address(), parameters);
        if (code != CUresult.CUDA_SUCCESS) {
            throw new CudaException(CUresult.stringFor(code) + " launching " + kernel);
        }
        trace.accept(kernel);
    }

    /** A pointer parameter; null passes a null device pointer (a kernel's optional array). */
    static long ptr(CUdeviceptr p) {
        return p == null ? 0L : DeviceBuffer.addressOf(p);
    }

    /** An {@code int} parameter. */
    static long i32(int v) {
        return v;
    }

    /** An {@code i64} ({@code long long}) parameter. */
    static long i64(long v) {
        return v;
    }

    /** Launches {@code function}; returns the CUresult. The device's context must be current. */
    private static native int launch(long function, int gridX, int gridY, int blockX, long stream,
                                     long[] parameters);
}
