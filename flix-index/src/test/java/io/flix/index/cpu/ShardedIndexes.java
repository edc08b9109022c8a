package io.flix.index.cpu;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

/** Key-range sharded CPU indexes that cut their ranges from a few keys on (for suites of other packages). */
public final class ShardedIndexes {

    /** Fewest keys that a test index cuts its ranges for: tiny, so that the suites' small workloads cut and recut. */
    static final int TEST_CUT_MIN_KEYS = 8;

    private ShardedIndexes() {
    }

    /** A sharded CPU index of {@code config}, with {@code shards} shards, that cuts its ranges from a few keys on. */
    public static FlixIndex open(FlixConfig config, int shards) {
        return new ShardedCpuIndex(config.withShards(shards), TEST_CUT_MIN_KEYS);
    }
}
