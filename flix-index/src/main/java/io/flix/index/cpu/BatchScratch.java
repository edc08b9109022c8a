package io.flix.index.cpu;

import java.util.ArrayDeque;
import java.util.concurrent.ForkJoinPool;

/**
 * The arrays one batch call of {@link CpuFlixIndex} works in, and its own sorter. A call takes one from the index's
 * {@link Pool} and gives it back when it returns, so calls that run at the same time (concurrent lookups) never
 * share scratch, and the arrays are reused by later calls. Arrays grow on demand.
 */
final class BatchScratch {

    /** The batch's keys sorted (and made unique for updates). */
    long[] keys = new long[0];
    /** Values following {@link #keys}, or the answers of a small lookup. */
    long[] values = new long[0];
    /** Keys found by a small ordered lookup. */
    long[] foundKeys = new long[0];
    /** The sort's permutation; the node ids a delete frees. */
    int[] positions = new int[0];
    /** Node ids reserved by an upsert. */
    int[] nodeIds = new int[0];
    final ParallelKeySorter sorter;
    /** Sorts and reduces update batches on the pool (its scratch allocated on first use). */
    final BatchPrep prep;

    private BatchScratch(ForkJoinPool pool, int threads, int prepKeysPerRange, int prepKeysPerChunk) {
        this.sorter = new ParallelKeySorter(pool, threads);
        this.prep = new BatchPrep(pool, threads, prepKeysPerRange, prepKeysPerChunk);
    }

    /** Makes {@link #keys}, {@link #values} and {@link #positions} hold at least {@code n} elements. */
    void ensure(int n) {
        if (keys.length < n) {
            keys = new long[n];
            values = new long[n];
            positions = new int[n];
        }
    }

    /** Releases arrays sized for more than {@code kept} keys. */
    private void trim(int kept) {
        if (keys.length > kept) {
            keys = new long[0];
            values = new long[0];
            positions = new int[0];
        }
        if (foundKeys.length > kept) {
            foundKeys = new long[0];
        }
        if (nodeIds.length > kept) {
            nodeIds = new int[0];
        }
        sorter.trimScratch(kept);
        prep.trimScratch(kept);
    }

    /**
     * The idle scratch of one index. Keeps at most {@value #IDLE_KEPT} (as many as a task manager's subtasks may
     * look up at once), each trimmed to {@code kept} keys; more callers at once get fresh scratch that is dropped
     * after use.
     */
    static final class Pool {
        static final int IDLE_KEPT = 16;

        private final ForkJoinPool forkJoinPool;
        private final int threads;
        private final int kept;
        private final int prepKeysPerRange;
        private final int prepKeysPerChunk;
        private final ArrayDeque<BatchScratch> idle = new ArrayDeque<>();

        /**
         * @param forkJoinPool the index's pool, on which the sorters run
         * @param kept         most keys that a scratch keeps room for between calls
         * @param prepKeysPerRange fewest keys worth a piece of an update batch's parallel sort ({@link BatchPrep})
         * @param prepKeysPerChunk fewest keys worth a chunk of its counting and scattering passes
         */
        Pool(ForkJoinPool forkJoinPool, int threads, int kept, int prepKeysPerRange, int prepKeysPerChunk) {
            this.forkJoinPool = forkJoinPool;
            this.threads = threads;
            this.kept = kept;
            this.prepKeysPerRange = prepKeysPerRange;
            this.prepKeysPerChunk = prepKeysPerChunk;
        }

        /** Scratch for one call: an idle one, or a new one. */
        BatchScratch take() {
            synchronized (idle) {
                final BatchScratch s = idle.pollLast();
                if (s != null) {
                    return s;
                }
            }
            return new BatchScratch(forkJoinPool, threads, prepKeysPerRange, prepKeysPerChunk);
        }

        /** Takes back scratch that a call has finished with. */
        void give(BatchScratch s) {
            s.trim(kept);
            synchronized (idle) {
                if (idle.size() < IDLE_KEPT) {
                    idle.addLast(s);
                }
            }
        }

        /** Drops every idle scratch. */
        void clear() {
            synchronized (idle) {
                idle.clear();
            }
        }
    }
}
