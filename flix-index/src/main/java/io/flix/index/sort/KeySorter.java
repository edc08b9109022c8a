package io.flix.index.sort;

/**
 * A stable least-significant-digit radix sort of signed 64-bit keys that also yields the permutation, so that
 * values and operations can follow their keys. Equal keys keep their batch order, which is what makes
 * "last occurrence wins" well defined. Scratch buffers (the digit histogram too) are allocated on first need, grow
 * on demand and are reused: one instance per thread.
 */
public final class KeySorter {

    private static final int DIGIT_BITS = 16;
    private static final int RADIX = 1 << DIGIT_BITS;
    private static final int PASSES = Long.SIZE / DIGIT_BITS;
    private static final int INSERTION_SORT_MAX = 64;

    /** Digit counts of a pass; allocated by the first batch that needs a radix pass. */
    private int[] histogram;
    private long[] keyScratch = new long[0];
    private int[] positionScratch = new int[0];

    /**
     * Sorts {@code keys[0..n)} ascending into {@code sortedKeys[0..n)} and writes to {@code positions[j]} the
     * index in {@code keys} of the j-th smallest key (ties in input order). {@code keys} is not modified.
     */
    public void sort(long[] keys, int n, long[] sortedKeys, int[] positions) {
        if (n <= INSERTION_SORT_MAX) {
            insertionSort(keys, n, sortedKeys, positions);
            return;
        }
        ensureScratch(n);
        // Flip the sign bit so that unsigned digit order is signed key order.
        long[] srcKeys = sortedKeys;
        int[] srcPos = positions;
        for (int i = 0; i < n; i++) {
            srcKeys[i] = keys[i] ^ Long.MIN_VALUE;
            srcPos[i] = i;
        }
        long[] dstKeys = keyScratch;
        int[] dstPos = positionScratch;
        final long differingBits = differingBits(srcKeys, n);
        for (int pass = 0; pass < PASSES; pass++) {
            final int shift = pass * DIGIT_BITS;
            if (((differingBits >>> shift) & (RADIX - 1)) == 0) {
                continue; // every key has the same digit here: the pass would not move anything
            }
            scatterByDigit(srcKeys, srcPos, dstKeys, dstPos, n, shift);
            final long[] tk = srcKeys;
            srcKeys = dstKeys;
            dstKeys = tk;
            final int[] tp = srcPos;
            srcPos = dstPos;
            dstPos = tp;
        }
        for (int i = 0; i < n; i++) {
            sortedKeys[i] = srcKeys[i] ^ Long.MIN_VALUE;
        }
        if (srcPos != positions) {
            System.arraycopy(srcPos, 0, positions, 0, n);
        }
    }

    private static long differingBits(long[] keys, int n) {
        final long first = keys[0];
        long differing = 0;
        for (int i = 1; i < n; i++) {
            differing |= keys[i] ^ first;
        }
        return differing;
    }

    private void scatterByDigit(long[] srcKeys, int[] srcPos, long[] dstKeys, int[] dstPos, int n, int shift) {
        if (histogram == null) {
            histogram = new int[RADIX];
        }
        final int[] counts = histogram;
        java.util.Arrays.fill(counts, 0);
        for (int i = 0; i < n; i++) {
            counts[(int) (srcKeys[i] >>> shift) & (RADIX - 1)]++;
        }
        int sum = 0;
        for (int d = 0; d < RADIX; d++) {
            final int c = counts[d];
            counts[d] = sum;
            sum += c;
        }
        for (int i = 0; i < n; i++) {
            final long k = srcKeys[i];
            final int at = counts[(int) (k >>> shift) & (RADIX - 1)]++;
            dstKeys[at] = k;
            dstPos[at] = srcPos[i];
        }
    }

    private static void insertionSort(long[] keys, int n, long[] sortedKeys, int[] positions) {
        for (int i = 0; i < n; i++) {
            final long k = keys[i];
            int j = i - 1;
            while (j >= 0 && sortedKeys[j] > k) {
                sortedKeys[j + 1] = sortedKeys[j];
                positions[j + 1] = positions[j];
                j--;
            }
            sortedKeys[j + 1] = k;
            positions[j + 1] = i;
        }
    }

    private void ensureScratch(int n) {
        if (keyScratch.length < n) {
            keyScratch = new long[n];
            positionScratch = new int[n];
        }
    }
}
