package io.flix.index.cpu;

/**
 * An update batch sorted (stably) and reduced to unique keys in its scratch: on the workers from the index's
 * parallel threshold ({@link BatchPrep}), else on the caller's thread.
 */
final class UniqueBatch {

    private final CpuFlixIndex ix;

    UniqueBatch(CpuFlixIndex ix) {
        this.ix = ix;
    }

    /** Whether an update batch of {@code n} keys is sorted and reduced on the workers. */
    private boolean prepInParallel(int n) {
        return ix.updateThreads > 1 && n >= ix.prepParallelMin && n <= CpuFlixIndex.PREP_PARALLEL_MAX_KEYS;
    }

    /** Sorts (stably) and reduces the pairs to unique keys, last occurrence wins, into {@code s.keys/s.values}. */
    int uniqueLastWins(long[] keys, long[] values, int n, boolean keysSorted, BatchScratch s) {
        s.ensure(n);
        if (prepInParallel(n)) {
            return s.prep.sortUnique(keys, values, n, keysSorted, s.keys, s.values, s.positions);
        }
        final long[] uk = s.keys;
        final long[] uv = s.values;
        int unique = 0;
        if (keysSorted) {
            for (int i = 0; i < n; i++) {
                if (unique > 0 && uk[unique - 1] == keys[i]) {
                    uv[unique - 1] = values[i];
                } else {
                    uk[unique] = keys[i];
                    uv[unique++] = values[i];
                }
            }
            return unique;
        }
        final int[] positions = s.positions;
        s.sorter.sort(keys, n, uk, positions, ix.updateThreads);
        for (int i = 0; i < n; i++) {
            final long k = uk[i];
            if (unique > 0 && uk[unique - 1] == k) {
                uv[unique - 1] = values[positions[i]]; // equal keys keep batch order: the later one wins
            } else {
                uk[unique] = k;
                uv[unique++] = values[positions[i]];
            }
        }
        return unique;
    }

    /** Sorts and reduces the keys to unique ones in {@code s.keys}. */
    int uniqueKeys(long[] keys, int n, boolean keysSorted, BatchScratch s) {
        s.ensure(n);
        if (prepInParallel(n)) {
            return s.prep.sortUnique(keys, null, n, keysSorted, s.keys, null, s.positions);
        }
        final long[] uk = s.keys;
        if (!keysSorted) {
            s.sorter.sort(keys, n, uk, s.positions, ix.updateThreads);
        } else {
            System.arraycopy(keys, 0, uk, 0, n);
        }
        int unique = 0;
        for (int i = 0; i < n; i++) {
            if (unique == 0 || uk[unique - 1] != uk[i]) {
                uk[unique++] = uk[i];
            }
        }
        return unique;
    }
}
