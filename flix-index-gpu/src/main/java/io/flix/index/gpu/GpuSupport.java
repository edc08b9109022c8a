package io.flix.index.gpu;

/**
 * Whether the GPU backend can run here: the kernels were compiled into this build (nvcc 12+ at build time), the
 * CUDA driver loads, and a CUDA device is present. Checked once per process.
 */
public final class GpuSupport {

    private static volatile String reason;
    private static volatile boolean checked;

    private GpuSupport() {
    }

    /** True when {@code Backend.GPU} can be opened. */
    public static boolean isAvailable() {
        return unavailableReason() == null;
    }

    /** Why the GPU backend cannot run here, or {@code null} when it can. */
    public static String unavailableReason() {
        if (!checked) {
            check();
        }
        return reason;
    }

    private static synchronized void check() {
        if (checked) {
            return;
        }
        try {
            GpuRuntime.initialise();
            GpuRuntime.device(0);
            reason = null;
        } catch (Throwable e) { // a missing libcuda shows up as an UnsatisfiedLinkError
            String message = e.getMessage() == null ? e.getClass().getName() : e.getMessage();
            if (e instanceof UnsatisfiedLinkError || e instanceof NoClassDefFoundError) {
                message = "the CUDA driver could not be loaded (" + message + ")";
            }
            reason = "GPU backend unavailable: " + message;
        }
        checked = true;
    }

    /**
     * How the GPU indexes opened so far move host arrays over the bus, for reports: straight from the registered Java
     * heap, or through pinned staging, with what the heap's registration came to.
     */
    public static String hostArrayPath() {
        return HeapRegistration.registeredBytes() > 0
                ? "straight from the Java heap (" + HeapRegistration.outcome() + ")"
                : "through pinned staging (the heap's registration: " + HeapRegistration.outcome() + ")";
    }
}
