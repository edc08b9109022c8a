package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertFalse;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.GpuTuning;

import org.junit.jupiter.api.Test;

/**
 * The FliX index's host arrays as the heap allows, with gets not pipelined ({@link GpuTuning#pipelinedGets()} off):
 * gets then take the chunks handed to copy threads, as ceilings and floors do. Skipped where no GPU is usable.
 */
class GpuBusChunkingUnpipelinedTest extends BusChunkingContract {

    @Override
    protected FlixIndex open(FlixConfig config) {
        return GpuFlixIndex.open(config.withGpuTuning(config.gpuTuning().withPipelinedGets(false)));
    }

    @Test
    void getsAreNotPipelinedWhenTurnedOff() {
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU)
                .gpuTuning(GpuTuning.DEFAULTS.withPipelinedGets(false)).build())) {
            final long[] keys = {1, 2, 3};
            index.build(keys, keys, keys.length, true);
            index.get(keys, keys.length, new long[keys.length], true);
            assertFalse(index.lastLookupPipelined());
        }
    }
}
