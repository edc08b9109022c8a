package io.flix.index;

import io.flix.index.cpu.ShardedIndexes;

/**
 * The conformance suite on the CPU backend cut into 256 key-range shards, as a dimension held once per task manager
 * is on 16 cores: most shards hold few keys or none, and most ranges and probes cross several.
 */
class ManyShardsCpuIndexConformanceTest extends FlixIndexConformanceTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        return ShardedIndexes.open(config.backend(Backend.CPU).build(), 256);
    }
}
