package io.flix.index.gpu;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.GpuBackendProvider;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;

/** Registers {@link GpuFlixIndex} as the GPU backend (META-INF/services), found by {@code FlixIndex.open}. */
public final class GpuFlixIndexProvider implements GpuBackendProvider {

    @Override
    public String unavailableReason() {
        return GpuSupport.unavailableReason();
    }

    @Override
    public int deviceCount() {
        return GpuRuntime.deviceCount();
    }

    @Override
    public List<Integer> devicesInPciBusOrder() {
        try {
            return GpuRuntime.devicesInPciBusOrder();
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
    }

    @Override
    public void release() {
        GpuRuntime.release();
    }

    @Override
    public int nodeSize() {
        return GpuFlixIndex.NODE_SIZE;
    }

    @Override
    public FlixIndex open(FlixConfig config) {
        return GpuFlixIndex.open(config);
    }
}
