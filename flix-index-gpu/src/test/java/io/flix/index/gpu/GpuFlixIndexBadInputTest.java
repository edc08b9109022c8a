package io.flix.index.gpu;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.FlixIndexBadInputTest;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The bad-input suite on the GPU backend; skipped only where no usable CUDA device is present. */
class GpuFlixIndexBadInputTest extends FlixIndexBadInputTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return FlixIndex.open(config.backend(Backend.GPU).build());
    }

    @Override
    protected void assumeBackendAvailable() {
        assumeTrue(GpuSupport.isAvailable(), GpuSupport::unavailableReason);
    }
}
