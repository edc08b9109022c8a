package io.flix.index;

/** The conformance suite on the CPU backend without its exact-key table: gets walk the buckets and nodes. */
class CpuFlixIndexWithoutExactKeyTableConformanceTest extends FlixIndexConformanceTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return FlixIndex.open(config.backend(Backend.CPU).exactKeyTable(false).build());
    }
}
