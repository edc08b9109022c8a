package io.flix.index;

import io.flix.index.cpu.ShardedIndexes;

/**
 * The conformance suite on the CPU backend cut into key-range shards (at least three, so that lookups and ranges
 * cross shards), which cut and recut their ranges from a few keys on.
 */
class ShardedCpuIndexConformanceTest extends FlixIndexConformanceTest {

    @Override
    protected FlixIndex open(FlixConfig.Builder config) {
        final FlixConfig cpu = config.backend(Backend.CPU).build();
        return ShardedIndexes.open(cpu, Math.max(3, cpu.threads() + 1));
    }
}
