package io.flix.index;

import java.util.List;

/** The bad-input suite on a mirror of two CPU replicas: refused up front, as one index refuses it. */
class MirroredIndexBadInputTest extends FlixIndexBadInputTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        final FlixConfig cpu = config.backend(Backend.CPU).build();
        return MirroredIndex.open(List.of(cpu, cpu));
    }
}
