package io.flix.index;

import io.flix.index.cpu.CpuFlixIndex;
import io.flix.index.gpu.GpuFlixIndex;
import io.flix.index.gpu.GpuSupport;

/** Chooses and opens the backend a config asks for. */
final class Backends {

    private Backends() {
    }

    static FlixIndex open(FlixConfig config) {
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        return switch (config.backend()) {
            case CPU -> new CpuFlixIndex(config);
            case GPU -> GpuFlixIndex.open(config);
            case AUTO -> useGpu(config) ? GpuFlixIndex.open(config) : new CpuFlixIndex(config);
        };
    }

    /** AUTO takes the GPU where one is usable and the node size is the GPU backend's. */
    private static boolean useGpu(FlixConfig config) {
        return config.nodeSize() == GpuFlixIndex.NODE_SIZE && GpuSupport.isAvailable();
    }
}
