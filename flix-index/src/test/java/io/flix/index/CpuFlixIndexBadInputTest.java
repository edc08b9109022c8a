package io.flix.index;

/** The bad-input suite on the CPU backend. */
class CpuFlixIndexBadInputTest extends FlixIndexBadInputTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return FlixIndex.open(config.backend(Backend.CPU).build());
    }
}
