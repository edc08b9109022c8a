package io.flix.index.gpu;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.FlixIndexConformanceTest;

import org.openjdk.jol.info.GraphStats;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The conformance suite on the GPU backend; skipped only where no usable CUDA device is present. */
class GpuFlixIndexConformanceTest extends FlixIndexConformanceTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return FlixIndex.open(config.backend(Backend.GPU).build());
    }

    @Override
    protected void assumeBackendAvailable() {
        assumeTrue(GpuSupport.isAvailable(), GpuSupport::unavailableReason);
    }

    @Override
    protected int nodeSizeFor(int nodeSize) {
        return GpuFlixIndex.NODE_SIZE;
    }

    /** Leaves out the device's context, which every index open on the device shares. */
    @Override
    protected long heapBytesHeldWhenClosed(FlixIndex index) {
        return super.heapBytesHeldWhenClosed(index)
                - GraphStats.parseInstance(((GpuFlixIndex) index).deviceContext()).totalSize();
    }
}
