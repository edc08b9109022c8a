package io.flix.index.gpu;

import java.util.function.IntConsumer;

import jcuda.driver.CUdeviceptr;

/**
 * How one index's host {@code long[]} arrays cross the bus, ordered with the work on its compute stream: through
 * pinned staging ({@link StagedCopies}) or straight from a registered heap ({@link DirectCopies}). Calls of one index
 * are serialised by its lock; create, use and close with the device's context current.
 */
interface HostArrayCopies extends AutoCloseable {

    /** Device work on {@code count} longs of a batch from {@code from}, issued on the compute stream. */
    @FunctionalInterface
    interface ChunkWork {
        void run(long from, int count);
    }

    /** Copies {@code src[0, n)} to {@code dst}, ahead of the compute stream's next work. */
    default void upload(long[] src, int n, CUdeviceptr dst) {
        uploadAll(new long[][] {src}, n, new CUdeviceptr[] {dst});
    }

    /**
     * Copies {@code srcs[i][0, n)} to {@code dsts[i]} for every i, ahead of the compute stream's next work; returns
     * when the sources may change.
     */
    void uploadAll(long[][] srcs, int n, CUdeviceptr[] dsts);

    /** Copies {@code n} longs from {@code src} into {@code dst[0, n)}, after the compute stream's work so far. */
    default void download(CUdeviceptr src, long[] dst, int n) {
        downloadAll(new CUdeviceptr[] {src}, new long[][] {dst}, n);
    }

    /** Copies {@code n} longs from each {@code srcs[i]} into {@code dsts[i][0, n)}, after the compute stream's work. */
    void downloadAll(CUdeviceptr[] srcs, long[][] dsts, int n);

    /**
     * Copies {@code n} longs from {@code src} into {@code dst[0, n)} after the compute stream's work so far, and
     * returns before they are in place where the copies run in the background: {@code dst} must not be read nor
     * {@code src} changed until the arrival's {@link Arrival#await} has returned, which must be called whatever
     * happens. Here: copies first.
     */
    default Arrival downloadInBackground(CUdeviceptr src, long[] dst, int n) {
        download(src, dst, n);
        return () -> {
        };
    }

    /**
     * Produces a result in parts and brings each part back while the next is produced: {@code produce} issues part
     * k on the compute stream, whose longs {@code [starts[k], starts[k + 1])} of each {@code srcs[i]} then go into
     * {@code dsts[i]} at the same place. Returns when the results are in place.
     */
    void produceAndDownload(long[] starts, IntConsumer produce, CUdeviceptr[] srcs, long[][] dsts);

    /**
     * A lookup pipeline: uploads {@code queries[0, n)} to {@code queriesOnDevice} chunk by chunk, runs {@code work}
     * on each chunk once it has arrived, and downloads each chunk's results from {@code resultsOnDevice[i]} into
     * {@code results[i]} while later chunks go up and are worked on. Returns when the results are in place.
     */
    void lookup(long[] queries, int n, CUdeviceptr queriesOnDevice, ChunkWork work, CUdeviceptr[] resultsOnDevice,
                long[][] results);

    /**
     * A copy under way ({@link #uploadThenInBackground}, {@link #downloadInBackground}), in parts numbered in the
     * array's order: part k is the longs {@code [partEnd(k - 1), partEnd(k))} (from 0 for the first), so that a
     * reader can take each part as it lands. Parts may land in any order.
     */
    @FunctionalInterface
    interface Arrival {
        /** Returns once the copy is done (at once if it is), throwing its failure; may be called again. */
        void await();

        /** Parts of the copy: one unless the copy says otherwise. */
        default int parts() {
            return 1;
        }

        /** Where part k ends, for k below {@link #parts()}; the last part ends at the copy's end ({@code n}). */
        default long partEnd(int k, long n) {
            return n;
        }

        /** Returns once part k has arrived, throwing its failure; may be called again. */
        default void awaitPart(int k) {
            await();
        }

        /** Whether part k has arrived (or failed: {@link #awaitPart} throws), without waiting. */
        default boolean partArrived(int k) {
            return false;
        }
    }

    /** Whether {@link #uploadThenInBackground} returns before its second copy is done (else it copies both first). */
    default boolean uploadsInBackground() {
        return false;
    }

    /**
     * Copies {@code first[0, n)} to {@code firstDst} and returns once it has arrived, with {@code then[0, n)} under
     * way to {@code thenDst} behind it; {@code then} must not change and {@code thenDst} must not be read until the
     * arrival's {@link Arrival#await} has returned, which must be called whatever happens. Here: copies both first.
     */
    default Arrival uploadThenInBackground(long[] first, CUdeviceptr firstDst, long[] then, CUdeviceptr thenDst,
                                           int n) {
        uploadAll(new long[][] {first, then}, n, new CUdeviceptr[] {firstDst, thenDst});
        return () -> {
        };
    }

    /** Whether {@link #pipelinedLookup} runs here (straight from the heap); else lookups take {@link #lookup}. */
    default boolean pipelinesLookups() {
        return false;
    }

    /**
     * A lookup (get, ceiling or floor) as one pipeline with no host step between chunks: {@code queries[0, n)} go up
     * chunk by chunk to {@code lookup}'s device array, each chunk is answered by one launch and its answers come back
     * into {@code values} (and {@code keys}, for ceiling and floor; null for a get) while later chunks go up. {@code
     * checkSort}: the kernel checks the sort promise into {@code lookup}'s sort check, which the structure has armed;
     * returns whether the promise was broken (false where not checked). Only where {@link #pipelinesLookups()}.
     */
    default boolean pipelinedLookup(long[] queries, int n, long[] keys, long[] values, PipelinedLookup lookup,
                                    boolean checkSort) {
        throw new UnsupportedOperationException("lookups are not pipelined through " + getClass().getSimpleName());
    }

    @Override
    void close();
}
