package io.flix.index.gpu;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.FlixIndexConformanceTest;

import org.openjdk.jol.info.GraphStats;

/**
 * The conformance suite on the sorted-array baseline (it has no nodes, so the node and chain assertions do not
 * apply); skipped only where no usable CUDA device is present.
 */
class GpuSortedArrayIndexConformanceTest extends FlixIndexConformanceTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return GpuSortedArrayIndex.open(config.build());
    }

    @Override
    protected void assumeBackendAvailable() {
        assumeTrue(GpuSupport.isAvailable(), GpuSupport::unavailableReason);
    }

    @Override
    protected boolean hasNodeStructure() {
        return false;
    }

    /** Leaves out the device's context, which every index open on the device shares. */
    @Override
    protected long heapBytesHeldWhenClosed(FlixIndex index) {
        return super.heapBytesHeldWhenClosed(index)
                - GraphStats.parseInstance(((GpuSortedArrayIndex) index).deviceContext()).totalSize();
    }
}
