package io.flix.index.cpu;

import io.flix.index.sort.KeySorter;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RecursiveAction;

/**
 * The same contract as {@link KeySorter} (stable ascending sort of signed keys, with the permutation), spread over a
 * {@link ForkJoinPool}: a least-significant-digit radix sort whose every pass splits the batch into contiguous
 * chunks, counts digits per chunk in parallel and scatters each chunk in parallel to offsets taken in (digit, chunk)
 * order, which keeps equal keys in batch order. Digits are 11 bits: 2048 scatter targets per chunk stay in cache,
 * where KeySorter's 16-bit digits spread writes over 65536. Batches too small to share run on KeySorter.
 */
final class ParallelKeySorter {

    private static final int DIGIT_BITS = 11;
    private static final int RADIX = 1 << DIGIT_BITS;
    private static final int MIN_KEYS_PER_CHUNK = 1 << 16;

    private final ForkJoinPool pool;
    private final int maxChunks;
    private final KeySorter serial = new KeySorter();
    private long[] keyScratch = new long[0];
    private int[] positionScratch = new int[0];
    private int[][] counts = new int[0][];

    ParallelKeySorter(ForkJoinPool pool, int threads) {
        this.pool = pool;
        this.maxChunks = threads;
    }

    /** As {@link KeySorter#sort}: {@code sortedKeys[0..n)} ascending, {@code positions[j]} the source index. */
    void sort(long[] keys, int n, long[] sortedKeys, int[] positions) {
        final int chunks = Math.min(maxChunks, n / MIN_KEYS_PER_CHUNK);
        if (chunks < 2) {
            serial.sort(keys, n, sortedKeys, positions);
            return;
        }
        if (keyScratch.length < n) {
            keyScratch = new long[n];
            positionScratch = new int[n];
        }
        if (counts.length != chunks) {
            counts = new int[chunks][RADIX];
        }
        final int[] bounds = new int[chunks + 1];
        for (int c = 0; c <= chunks; c++) {
            bounds[c] = (int) ((long) n * c / chunks);
        }
        // Flip the sign bit so that unsigned digit order is signed order; find the bits that differ at all.
        final long[] differing = new long[chunks];
        final long first = keys[0];
        run(chunks, c -> {
            long d = 0;
            for (int i = bounds[c]; i < bounds[c + 1]; i++) {
                final long k = keys[i];
                d |= k ^ first;
                sortedKeys[i] = k ^ Long.MIN_VALUE;
                positions[i] = i;
            }
            differing[c] = d;
        });
        long differingBits = 0;
        for (long d : differing) {
            differingBits |= d;
        }
        long[] srcKeys = sortedKeys;
        int[] srcPos = positions;
        long[] dstKeys = keyScratch;
        int[] dstPos = positionScratch;
        for (int shift = 0; shift < Long.SIZE; shift += DIGIT_BITS) {
            if (((differingBits >>> shift) & (RADIX - 1)) == 0) {
                continue; // every key has the same digit here
            }
            scatter(srcKeys, srcPos, dstKeys, dstPos, bounds, chunks, shift);
            final long[] tk = srcKeys;
            srcKeys = dstKeys;
            dstKeys = tk;
            final int[] tp = srcPos;
            srcPos = dstPos;
            dstPos = tp;
        }
        final long[] result = srcKeys;
        final int[] resultPos = srcPos;
        run(chunks, c -> {
            final int from = bounds[c];
            final int len = bounds[c + 1] - from;
            for (int i = from; i < from + len; i++) {
                sortedKeys[i] = result[i] ^ Long.MIN_VALUE;
            }
            if (resultPos != positions) {
                System.arraycopy(resultPos, from, positions, from, len);
            }
        });
    }

    private void scatter(long[] srcKeys, int[] srcPos, long[] dstKeys, int[] dstPos, int[] bounds, int chunks,
                         int shift) {
        final int[][] count = counts;
        run(chunks, c -> {
            final int[] h = count[c];
            java.util.Arrays.fill(h, 0);
            for (int i = bounds[c]; i < bounds[c + 1]; i++) {
                h[(int) (srcKeys[i] >>> shift) & (RADIX - 1)]++;
            }
        });
        int sum = 0;
        for (int d = 0; d < RADIX; d++) {
            for (int c = 0; c < chunks; c++) {
                final int v = count[c][d];
                count[c][d] = sum;
                sum += v;
            }
        }
        run(chunks, c -> {
            final int[] at = count[c];
            for (int i = bounds[c]; i < bounds[c + 1]; i++) {
                final long k = srcKeys[i];
                final int to = at[(int) (k >>> shift) & (RADIX - 1)]++;
                dstKeys[to] = k;
                dstPos[to] = srcPos[i];
            }
        });
    }

    private void run(int chunks, java.util.function.IntConsumer body) {
        pool.invoke(new Chunks(0, chunks, body));
    }

    private static final class Chunks extends RecursiveAction {
        private final int from;
        private final int to;
        private final java.util.function.IntConsumer body;

        Chunks(int from, int to, java.util.function.IntConsumer body) {
            this.from = from;
            this.to = to;
            this.body = body;
        }

        @Override
        protected void compute() {
            if (to - from == 1) {
                body.accept(from);
                return;
            }
            final int mid = (from + to) >>> 1;
            invokeAll(new Chunks(from, mid, body), new Chunks(mid, to, body));
        }
    }
}
