package io.flix.flink.dimension;

import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;

/**
 * The lookups a {@link LocalDimension} answers: straight from the index where lookups run in parallel (the CPU
 * backend), or gathered across the calling threads into fewer, larger calls where the index runs one call at a time
 * ({@link GatheredLookups}, the GPU backend). Same meaning as {@link FlixIndex}'s calls of the same names.
 */
public interface IndexLookups {

    void get(long[] keys, int n, long[] valuesOut);

    void floor(long[] keys, int n, long[] keysOut, long[] valuesOut);

    void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut);

    RangeResult range(long[] lo, long[] hi, int n, int limitPerRange);

    /**
     * Keys in the index call that answered this thread's last batch, with other threads' lookups gathered into it;
     * {@link #OWN_BATCH} where the call held that batch alone.
     */
    int lastGathered();

    /** {@link #lastGathered()} of a call that answered its caller's batch alone. */
    int OWN_BATCH = 0;

    /** Calls the index directly: each batch in a call of its own. */
    static IndexLookups direct(FlixIndex index) {
        return new IndexLookups() {
            @Override
            public void get(long[] keys, int n, long[] valuesOut) {
                index.get(keys, n, valuesOut);
            }

            @Override
            public void floor(long[] keys, int n, long[] keysOut, long[] valuesOut) {
                index.floor(keys, n, keysOut, valuesOut);
            }

            @Override
            public void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut) {
                index.ceiling(keys, n, keysOut, valuesOut);
            }

            @Override
            public RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
                return index.range(lo, hi, n, limitPerRange);
            }

            @Override
            public int lastGathered() {
                return OWN_BATCH;
            }
        };
    }
}
