package io.flix.index;

import io.flix.index.cpu.CpuFlixIndex;
import io.flix.index.cpu.ShardedCpuIndex;

import java.io.File;
import java.util.List;
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
            case CPU -> openCpu(config);
            case GPU -> requireGpu().open(config);
            case AUTO -> useGpu(config) ? requireGpu().open(config) : openCpu(config);
        };
    }

    private static FlixIndex openCpu(FlixConfig config) {
        return config.shards() > 1 ? new ShardedCpuIndex(config) : new CpuFlixIndex(config);
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

    /** CUDA ordinals of the devices the GPU backend can use here in PCI bus order; empty where it is unusable. */
    static List<Integer> gpuDevicesInPciBusOrder() {
        final GpuBackendProvider gpu = Gpu.PROVIDER;
        return gpu == null || gpu.unavailableReason() != null ? List.of() : gpu.devicesInPciBusOrder();
    }

    /** Why AUTO opens on the CPU here although this machine shows an NVIDIA GPU, or null. */
    static String autoFallbackReason() {
        return autoFallbackReason(nvidiaDeviceVisible());
    }

    /** As {@link #autoFallbackReason()}, where an NVIDIA device is or is not visible. */
    static String autoFallbackReason(boolean nvidiaDeviceVisible) {
        return nvidiaDeviceVisible ? gpuUnavailableReason() : null;
    }

    /** Releases what the GPU backend of this class loader holds between indexes, where it is loaded. */
    static void releaseResources() {
        final GpuBackendProvider gpu = Gpu.PROVIDER;
        if (gpu != null) {
            gpu.release();
        }
    }

    /**
     * Whether the NVIDIA driver shows a device to this process (its device files), whatever CUDA and the GPU backend
     * make of it: where one shows and the backend cannot open, AUTO's fall to the CPU is news to report.
     */
    private static boolean nvidiaDeviceVisible() {
        final File[] gpus = new File("/proc/driver/nvidia/gpus").listFiles();
        return (gpus != null && gpus.length > 0) || new File("/dev/nvidia0").exists();
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
