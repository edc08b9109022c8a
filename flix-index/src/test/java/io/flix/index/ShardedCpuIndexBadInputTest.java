package io.flix.index;

/** The bad-input suite on the CPU backend cut into key-range shards. */
class ShardedCpuIndexBadInputTest extends FlixIndexBadInputTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return FlixIndex.open(config.backend(Backend.CPU).shards(3).build());
    }
}
