package io.flix.index;

/**
 * Results of a batch of range lookups in CSR form: the pairs of range {@code i} are
 * {@code keys[offsets[i] .. offsets[i + 1])} and the matching {@code values}, in key order.
 * {@code offsets.length == n + 1}; {@code keys} and {@code values} may be longer than {@code offsets[n]}.
 */
public record RangeResult(int[] offsets, long[] keys, long[] values) {

    /** Number of ranges. */
    public int ranges() {
        return offsets.length - 1;
    }

    /** Number of pairs found for range {@code i}. */
    public int count(int i) {
        return offsets[i + 1] - offsets[i];
    }
}
