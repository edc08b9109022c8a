package io.flix.index.gpu;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

/** The sorted-array baseline's host arrays in pieces and chunks over the bus (the contract). Skipped without a GPU. */
class GpuSortedArrayBusChunkingTest extends BusChunkingContract {

    @Override
    protected FlixIndex open(FlixConfig config) {
        return GpuSortedArrayIndex.open(config);
    }
}
