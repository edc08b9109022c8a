package io.flix.index.cpu;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

/** CPU indexes whose update batches of two keys or more are prepared in parallel (for suites of other packages). */
public final class ParallelPrepIndexes {

    private ParallelPrepIndexes() {
    }

    /** A CPU index of {@code config} that prepares every update batch of two keys or more on its workers. */
    public static FlixIndex open(FlixConfig config) {
        return new CpuFlixIndex(config, 2, 1, 1);
    }
}
