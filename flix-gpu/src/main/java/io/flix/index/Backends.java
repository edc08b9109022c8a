package io.flix.index;

import io.flix.index.cpu.CpuFlixIndex;

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
            case GPU -> throw new UnsupportedOperationException("the GPU backend is not built yet");
            case AUTO -> open(new FlixConfig(Backend.CPU, config.nodeSize(), config.initialFill(), config.threads(), config.device()));
        };
    }
}
