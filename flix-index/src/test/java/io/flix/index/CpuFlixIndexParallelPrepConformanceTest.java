package io.flix.index;

import io.flix.index.cpu.ParallelPrepIndexes;

/**
 * The conformance suite on the CPU backend with every update batch of two keys or more sorted and reduced on the
 * index's workers (where it has more than one thread), in pieces as small as one key.
 */
class CpuFlixIndexParallelPrepConformanceTest extends FlixIndexConformanceTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return ParallelPrepIndexes.open(config.backend(Backend.CPU).build());
    }
}
