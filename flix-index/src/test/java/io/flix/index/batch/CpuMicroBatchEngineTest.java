package io.flix.index.batch;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

/** The micro-batch engine's differential suite on the CPU backend (small nodes, so batches split and chain). */
class CpuMicroBatchEngineTest extends MicroBatchEngineTest {

    @Override
    protected FlixIndex openIndex() {
        return FlixIndex.open(FlixConfig.builder().backend(Backend.CPU).nodeSize(8).threads(2).build());
    }
}
