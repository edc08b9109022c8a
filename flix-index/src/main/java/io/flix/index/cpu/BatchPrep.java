package io.flix.index.cpu;

import java.util.Arrays;
import java.util.concurrent.ForkJoinPool;

/**
 * Prepares an update batch on the index's {@link ForkJoinPool}: sorts it and reduces it to unique keys, the last
 * occurrence in batch order winning, as the serial path of {@link CpuFlixIndex} does on one thread.
 *
 * <p>An unsorted batch is cut by key into contiguous key ranges (a sample sort): splitters are taken from an evenly
 * spaced sample of the batch, sorted; the batch is split into chunks whose keys are counted per range in parallel
 * and scattered in parallel to offsets taken in (range, chunk) order, which keeps each range's keys in batch order.
 * Every copy of a key lands in the same range. Each range is then sorted on its own (a stable least-significant-digit
 * radix sort of {@code key - rangeMin} with digits of at most {@value #MAX_DIGIT_BITS} bits, passes whose digit is the
 * same for every key skipped) and reduced in place to its unique keys, each with the batch position of its last
 * occurrence. The ranges' unique counts give each its place in the output, which the ranges then fill in parallel,
 * gathering the values. A batch the caller says is sorted is cut into pieces whose cuts move past a run of equal
 * keys, and reduced the same way.
 */
final class BatchPrep {

    static final int MAX_DIGIT_BITS = 11;
    /** Ranges of at most this many keys are sorted by insertion. */
    private static final int INSERTION_MAX = 32;
    /** Sample keys per range for the splitters. */
    private static final int SAMPLES_PER_RANGE = 16;

    private final ForkJoinPool pool;
    private final int threads;
    private final int minKeysPerRange;
    private final int minKeysPerChunk;

    private long[] keysA = new long[0];
    private long[] keysB = new long[0];
    /** The caller's positions array during a call. */
    private int[] posA;
    private int[] posB = new int[0];

    /**
     * @param threads         the most threads a batch is split for
     * @param minKeysPerRange fewest keys worth one range (the pieces of the per-range sort and reduction)
     * @param minKeysPerChunk fewest keys worth one chunk of the counting and scattering passes
     */
    BatchPrep(ForkJoinPool pool, int threads, int minKeysPerRange, int minKeysPerChunk) {
        this.pool = pool;
        this.threads = threads;
        this.minKeysPerRange = Math.max(1, minKeysPerRange);
        this.minKeysPerChunk = Math.max(1, minKeysPerChunk);
    }

    /** Ranges a batch of {@code n} keys is cut into: a few per thread, none below the smallest worth one. */
    int rangesFor(int n) {
        return (int) Math.max(1, Math.min(4L * threads, n / minKeysPerRange));
    }

    /**
     * Sorts {@code keys[0, n)} and reduces them to unique keys, into {@code outKeys}; where {@code values} is not null,
     * the value of each key's last occurrence goes to {@code outValues} beside it. {@code positions} (at least
     * {@code n} long) is scratch.
     *
     * @return the number of unique keys
     */
    int sortUnique(long[] keys, long[] values, int n, boolean keysSorted, long[] outKeys, long[] outValues,
                   int[] positions) {
        if (n == 0) {
            return 0;
        }
        if (keysSorted) {
            return uniqueSorted(keys, values, n, outKeys, outValues);
        }
        posA = positions;
        try {
            return uniqueUnsorted(keys, values, n, outKeys, outValues);
        } finally {
            posA = null;
        }
    }

    /** Releases scratch sized for more than {@code keys} keys. */
    void trimScratch(int keys) {
        if (keysA.length > keys) {
            keysA = new long[0];
            keysB = new long[0];
            posB = new int[0];
        }
    }

    // -------------------------------------------------------------------------------------------- sorted input

    private int uniqueSorted(long[] keys, long[] values, int n, long[] outKeys, long[] outValues) {
        final int pieces = rangesFor(n);
        final int[] starts = new int[pieces + 1];
        starts[pieces] = n;
        for (int p = 1; p < pieces; p++) {
            int start = Math.max(starts[p - 1], (int) ((long) n * p / pieces));
            while (start > 0 && start < n && keys[start] == keys[start - 1]) {
                start++; // a run of one key stays in one piece
            }
            starts[p] = start;
        }
        final int[] uniques = new int[pieces];
        run(pieces, p -> {
            int u = 0;
            for (int i = starts[p]; i < starts[p + 1]; i++) {
                if (i == starts[p] || keys[i] != keys[i - 1]) {
                    u++;
                }
            }
            uniques[p] = u;
        });
        final int[] outFrom = prefix(uniques);
        run(pieces, p -> {
            int w = outFrom[p] - 1;
            for (int i = starts[p]; i < starts[p + 1]; i++) {
                if (i == starts[p] || keys[i] != keys[i - 1]) {
                    outKeys[++w] = keys[i];
                }
                if (values != null) {
                    outValues[w] = values[i]; // the last of the run stays
                }
            }
        });
        return outFrom[pieces];
    }

    // -------------------------------------------------------------------------------------------- unsorted input

    private int uniqueUnsorted(long[] keys, long[] values, int n, long[] outKeys, long[] outValues) {
        ensure(n);
        final long[] splitters = splitters(keys, n, rangesFor(n));
        final int ranges = splitters.length + 1;
        final int chunks = (int) Math.max(1, Math.min(threads, n / minKeysPerChunk));
        final int[][] counts = new int[chunks][ranges];
        run(chunks, c -> {
            final int[] h = counts[c];
            for (int i = chunkFrom(n, chunks, c); i < chunkFrom(n, chunks, c + 1); i++) {
                h[rangeOf(splitters, keys[i])]++;
            }
        });
        final int[] rangeFrom = new int[ranges + 1];
        int sum = 0;
        for (int r = 0; r < ranges; r++) {
            rangeFrom[r] = sum;
            for (int c = 0; c < chunks; c++) {
                final int v = counts[c][r];
                counts[c][r] = sum;
                sum += v;
            }
        }
        rangeFrom[ranges] = n;
        final long[] ka = keysA;
        final int[] pa = posA;
        run(chunks, c -> {
            final int[] at = counts[c];
            for (int i = chunkFrom(n, chunks, c); i < chunkFrom(n, chunks, c + 1); i++) {
                final long k = keys[i];
                final int to = at[rangeOf(splitters, k)]++;
                ka[to] = k;
                pa[to] = i;
            }
        });
        // Each range: sort, then reduce in place to its unique keys with their last positions.
        final int[] uniques = new int[ranges];
        final boolean[] inB = new boolean[ranges];
        run(ranges, r -> {
            final int from = rangeFrom[r];
            final int to = rangeFrom[r + 1];
            if (from == to) {
                return;
            }
            final boolean b = sortRange(from, to);
            inB[r] = b;
            final long[] sk = b ? keysB : keysA;
            final int[] sp = b ? posB : posA;
            int w = from;
            for (int i = from + 1; i < to; i++) {
                if (sk[i] != sk[w]) {
                    sk[++w] = sk[i];
                }
                sp[w] = sp[i]; // equal keys are in batch order: the later position stays
            }
            uniques[r] = w + 1 - from;
        });
        final int[] outFrom = prefix(uniques);
        run(ranges, r -> {
            final int from = rangeFrom[r];
            final int u = uniques[r];
            final long[] sk = inB[r] ? keysB : keysA;
            final int[] sp = inB[r] ? posB : posA;
            System.arraycopy(sk, from, outKeys, outFrom[r], u);
            if (values != null) {
                final int out = outFrom[r];
                for (int j = 0; j < u; j++) {
                    outValues[out + j] = values[sp[from + j]];
                }
            }
        });
        return outFrom[ranges];
    }

    /** Ascending splitters, from an evenly spaced sample of the batch: range r holds keys in [s[r-1], s[r]). */
    private static long[] splitters(long[] keys, int n, int ranges) {
        if (ranges <= 1) {
            return new long[0];
        }
        final int samples = (int) Math.min(n, (long) ranges * SAMPLES_PER_RANGE);
        final long[] sample = new long[samples];
        for (int j = 0; j < samples; j++) {
            sample[j] = keys[(int) ((long) n * j / samples)];
        }
        Arrays.sort(sample);
        // Equal splitters would only leave ranges empty: keep each value once.
        final long[] s = new long[ranges - 1];
        int count = 0;
        for (int r = 1; r < ranges; r++) {
            final long v = sample[(int) ((long) samples * r / ranges)];
            if (count == 0 || s[count - 1] != v) {
                s[count++] = v;
            }
        }
        return count == s.length ? s : Arrays.copyOf(s, count);
    }

    /** The range of {@code key}: the number of splitters {@code <= key}. */
    private static int rangeOf(long[] splitters, long key) {
        int lo = 0;
        int hi = splitters.length;
        while (lo < hi) {
            final int mid = (lo + hi) >>> 1;
            if (splitters[mid] <= key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /**
     * Sorts {@code keysA/posA[from, to)} stably by key, using {@code keysB/posB} of the same range.
     *
     * @return whether the sorted range ended in {@code keysB/posB}
     */
    private boolean sortRange(int from, int to) {
        final long[] ka = keysA;
        final int[] pa = posA;
        if (to - from <= INSERTION_MAX) {
            for (int i = from + 1; i < to; i++) {
                final long k = ka[i];
                final int p = pa[i];
                int j = i - 1;
                while (j >= from && ka[j] > k) {
                    ka[j + 1] = ka[j];
                    pa[j + 1] = pa[j];
                    j--;
                }
                ka[j + 1] = k;
                pa[j + 1] = p;
            }
            return false;
        }
        long min = Long.MAX_VALUE;
        for (int i = from; i < to; i++) {
            min = Math.min(min, ka[i]);
        }
        // key - min, read unsigned, keeps signed key order.
        long differing = 0;
        final long first = ka[from] - min;
        for (int i = from; i < to; i++) {
            final long offset = ka[i] - min;
            ka[i] = offset;
            differing |= offset ^ first;
        }
        final int bits = Long.SIZE - Long.numberOfLeadingZeros(differing);
        final int passes = (bits + MAX_DIGIT_BITS - 1) / MAX_DIGIT_BITS;
        final int digitBits = passes == 0 ? 1 : (bits + passes - 1) / passes;
        final int mask = (1 << digitBits) - 1;
        final int[] count = new int[mask + 1];
        long[] srcK = ka;
        int[] srcP = pa;
        long[] dstK = keysB;
        int[] dstP = posB;
        for (int shift = 0; shift < bits; shift += digitBits) {
            if (((differing >>> shift) & mask) == 0) {
                continue;
            }
            Arrays.fill(count, 0);
            for (int i = from; i < to; i++) {
                count[(int) (srcK[i] >>> shift) & mask]++;
            }
            int sum = from;
            for (int d = 0; d <= mask; d++) {
                final int v = count[d];
                count[d] = sum;
                sum += v;
            }
            for (int i = from; i < to; i++) {
                final long k = srcK[i];
                final int at = count[(int) (k >>> shift) & mask]++;
                dstK[at] = k;
                dstP[at] = srcP[i];
            }
            final long[] tk = srcK;
            srcK = dstK;
            dstK = tk;
            final int[] tp = srcP;
            srcP = dstP;
            dstP = tp;
        }
        for (int i = from; i < to; i++) {
            srcK[i] += min;
        }
        return srcK != ka;
    }

    // -------------------------------------------------------------------------------------------- helpers

    private void ensure(int n) {
        if (keysA.length < n) {
            keysA = new long[n];
            keysB = new long[n];
            posB = new int[n];
        }
    }

    private static int chunkFrom(int n, int chunks, int c) {
        return (int) ((long) n * c / chunks);
    }

    /** Turns counts into starting offsets; returns them with the total at the end. */
    private static int[] prefix(int[] counts) {
        final int[] from = new int[counts.length + 1];
        for (int i = 0; i < counts.length; i++) {
            from[i + 1] = from[i] + counts[i];
        }
        return from;
    }

    private void run(int pieces, java.util.function.IntConsumer body) {
        Pieces.run(pool, pieces, body);
    }
}
