package io.flix.index.batch;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.gpu.GpuSupport;
import org.junit.jupiter.api.BeforeEach;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The micro-batch engine's differential suite on the GPU backend; skipped only where no CUDA device is present. */
class GpuMicroBatchEngineTest extends MicroBatchEngineTest {

    @BeforeEach
    void requireGpu() {
        assumeTrue(GpuSupport.isAvailable(), GpuSupport::unavailableReason);
    }

    @Override
    protected FlixIndex openIndex() {
        return FlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build());
    }
}
