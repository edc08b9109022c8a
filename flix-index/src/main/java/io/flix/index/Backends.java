package io.flix.index;

import io.flix.index.cpu.CpuFlixIndex;

import java.util.ServiceLoader;

/** Chooses and opens the backend a config asks for; the GPU backend is found on the class path. */
final class Backends {

    static final String GPU_JAR_MISSING = "GPU backend unavailable: io.flix:flix-index-gpu is not on the class path "
            + "(add it as a dependency to use a GPU)";

    private Backends() {
    }

    static FlixIndex open(FlixConfig config) {
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        return switch (config.backend()) {
            case CPU -> new CpuFlixIndex(config);
            case GPU -> requireGpu().open(config);
            case AUTO -> useGpu(config) ? requireGpu().open(config) : new CpuFlixIndex(config);
        };
    }

    /** Why the GPU backend cannot run here, or {@code null} when it can. */
    static String gpuUnavailableReason() {
        final GpuBackendProvider gpu = Gpu.PROVIDER;
        return gpu == null ? GPU_JAR_MISSING : gpu.unavailableReason();
    }

    /** CUDA devices the GPU backend can use here; 0 where it is unusable. */
    static int gpuDevices() {
        final GpuBackendProvider gpu = Gpu.PROVIDER;
        return gpu == null || gpu.unavailableReason() != null ? 0 : gpu.deviceCount();
    }

    /** AUTO takes the GPU where one is usable and the node size is the GPU backend's. */
    private static boolean useGpu(FlixConfig config) {
        final GpuBackendProvider gpu = Gpu.PROVIDER;
        return gpu != null && config.nodeSize() == gpu.nodeSize() && gpu.unavailableReason() == null;
    }

    private static GpuBackendProvider requireGpu() {
        if (Gpu.PROVIDER == null) {
            throw new IllegalStateException(GPU_JAR_MISSING);
        }
        return Gpu.PROVIDER;
    }

    /** Looked up once, on first use, in the class loader that loaded this library (Flink's user class loader in a job). */
    private static final class Gpu {
        static final GpuBackendProvider PROVIDER =
                ServiceLoader.load(GpuBackendProvider.class, Backends.class.getClassLoader()).findFirst().orElse(null);
    }
}
