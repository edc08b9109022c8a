package io.flix.index.gpu;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.FlixIndexConformanceTest;
import io.flix.index.MirroredIndex;

import org.openjdk.jol.info.GraphStats;

/**
 * The conformance suite on a mirror of GPU indexes, one replica per visible device (two on device 0 where only one
 * is visible).
 */
class GpuMirroredIndexConformanceTest extends FlixIndexConformanceTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return MirroredIndex.open(GpuMirroredIndexTest.everyDevice(config));
    }

    @Override
    protected void assumeBackendAvailable() {
        assumeTrue(GpuSupport.isAvailable(), GpuSupport::unavailableReason);
    }

    @Override
    protected int nodeSizeFor(int nodeSize) {
        return GpuFlixIndex.NODE_SIZE;
    }

    /** Leaves out the devices' contexts, which every index open on a device shares. */
    @Override
    protected long heapBytesHeldWhenClosed(FlixIndex index) {
        final Object[] contexts = ((MirroredIndex) index).replicas().stream()
                .map(r -> ((GpuFlixIndex) r).deviceContext()).distinct().toArray();
        return super.heapBytesHeldWhenClosed(index) - GraphStats.parseInstance(contexts).totalSize();
    }
}
