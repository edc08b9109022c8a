package io.flix.index.gpu;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

/** The FliX index's host arrays in pieces and chunks over the bus (the contract). Skipped where no GPU is usable. */
class GpuBusChunkingTest extends BusChunkingContract {

    @Override
    protected FlixIndex open(FlixConfig config) {
        return GpuFlixIndex.open(config);
    }
}
