package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.GpuTuning;

import org.junit.jupiter.api.Test;

/**
 * The FliX index's host arrays through pinned staging ({@link StagedCopies}), the heap's registration turned off:
 * the path of a JVM whose heap may shrink. Skipped where no GPU is usable.
 */
class GpuBusChunkingStagedTest extends BusChunkingContract {

    @Override
    protected FlixIndex open(FlixConfig config) {
        return GpuFlixIndex.open(config.withGpuTuning(config.gpuTuning().withRegisterHeap(false)));
    }

    @Test
    void hostArraysGoThroughStagingWhateverTheHeap() {
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU)
                .gpuTuning(GpuTuning.DEFAULTS.withRegisterHeap(false)).build())) {
            assertTrue(index.copies instanceof StagedCopies, index.copies.getClass().getName());
        }
    }
}
