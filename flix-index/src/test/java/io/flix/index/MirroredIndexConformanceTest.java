package io.flix.index;

import java.util.List;

/** The conformance suite on a mirror of two CPU replicas: the mirror answers as one index would. */
class MirroredIndexConformanceTest extends FlixIndexConformanceTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        final FlixConfig cpu = config.backend(Backend.CPU).build();
        return MirroredIndex.open(List.of(cpu, cpu));
    }
}
