package io.flix.index;

/** The conformance suite on the CPU backend. */
class CpuFlixIndexConformanceTest extends FlixIndexConformanceTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return FlixIndex.open(config.backend(Backend.CPU).build());
    }
}
