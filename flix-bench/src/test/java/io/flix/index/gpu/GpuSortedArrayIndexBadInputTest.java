package io.flix.index.gpu;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.FlixIndexBadInputTest;

/** The bad-input suite on the sorted-array baseline; skipped only where no usable CUDA device is present. */
class GpuSortedArrayIndexBadInputTest extends FlixIndexBadInputTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return GpuSortedArrayIndex.open(config.build());
    }

    @Override
    protected void assumeBackendAvailable() {
        assumeTrue(GpuSupport.isAvailable(), GpuSupport::unavailableReason);
    }
}
