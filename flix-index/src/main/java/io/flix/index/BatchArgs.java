package io.flix.index;

import java.util.stream.IntStream;

/** Argument checks shared by every backend: each failure names the argument and leaves the index untouched. */
public final class BatchArgs {

    /**
     * Range batches of at least this many ranges have their ends checked on every core (the GPU backend checks them
     * in its count pass instead). Micro-batches stay on the calling thread.
     */
    static final int PARALLEL_CHECK_MIN = 1 << 18;

    private BatchArgs() {
    }

    /** {@code array} is non-null and holds at least {@code n >= 0} elements. */
    public static void checkArray(long[] array, String name, int n) {
        checkCount(n);
        if (array == null) {
            throw new IllegalArgumentException(name + " must not be null");
        }
        if (array.length < n) {
            throw new IllegalArgumentException(name + ".length " + array.length + " is less than n " + n);
        }
    }

    /**
     * The answer arrays of a ceiling or floor: each as {@link #checkArray}, and two arrays (a key and its value
     * written to one place would overwrite each other). Either may be the queries' own array.
     */
    public static void checkAnswerArrays(long[] keysOut, long[] valuesOut, int n) {
        checkArray(keysOut, "keysOut", n);
        checkArray(valuesOut, "valuesOut", n);
        if (keysOut == valuesOut) {
            throw new IllegalArgumentException("keysOut and valuesOut are one array: each answer's key and value "
                    + "would overwrite each other; pass two arrays");
        }
    }

    public static void checkCount(int n) {
        if (n < 0) {
            throw new IllegalArgumentException("n must be >= 0, was " + n);
        }
    }

    /** Checks the pairs of a build or upsert: arrays, no reserved value, and the sort promise if made. */
    public static void checkPairs(long[] keys, long[] values, int n, boolean keysSorted) {
        checkArray(keys, "keys", n);
        checkArray(values, "values", n);
        for (int i = 0; i < n; i++) {
            if (values[i] == FlixIndex.NOT_FOUND) {
                throw reservedValue(i);
            }
        }
        if (keysSorted) {
            checkSorted(keys, n);
        }
    }

    /**
     * As {@link #checkPairs}, less the values: for a backend that checks those where it reads them anyway, and
     * throws {@link #reservedValue} for the first it finds.
     */
    public static void checkPairArrays(long[] keys, long[] values, int n, boolean keysSorted) {
        checkArray(keys, "keys", n);
        checkArray(values, "values", n);
        if (keysSorted) {
            checkSorted(keys, n);
        }
    }

    /** The error for {@code values[i]}, which holds the reserved {@link FlixIndex#NOT_FOUND}. */
    public static IllegalArgumentException reservedValue(int i) {
        return new IllegalArgumentException("values[" + i + "] is NOT_FOUND (Long.MIN_VALUE), which is reserved");
    }

    /** Checks a key batch and the sort promise if made. */
    public static void checkKeys(long[] keys, int n, boolean keysSorted) {
        checkArray(keys, "keys", n);
        if (keysSorted) {
            checkSorted(keys, n);
        }
    }

    public static void checkSorted(long[] keys, int n) {
        for (int i = 1; i < n; i++) {
            if (keys[i] < keys[i - 1]) {
                throw new IllegalArgumentException("keys are not sorted as promised (keysSorted = true): keys["
                        + (i - 1) + "] = " + keys[i - 1] + " > keys[" + i + "] = " + keys[i]);
            }
        }
    }

    /** Checks a range batch: arrays, {@code lo[i] <= hi[i]}, limit at least one. */
    public static void checkRanges(long[] lo, long[] hi, int n, int limitPerRange) {
        checkRangeArrays(lo, hi, n, limitPerRange);
        checkRangeOrder(lo, hi, n);
    }

    /**
     * Checks a range batch's arrays and limit, not the order of each range's ends: for a backend that checks those
     * where it reads the ranges anyway, and calls {@link #checkRangeOrder} where that finds a fault.
     */
    public static void checkRangeArrays(long[] lo, long[] hi, int n, int limitPerRange) {
        checkArray(lo, "lo", n);
        checkArray(hi, "hi", n);
        if (limitPerRange < 1) {
            throw new IllegalArgumentException("limitPerRange must be >= 1, was " + limitPerRange);
        }
    }

    /** Checks {@code lo[i] <= hi[i]} for every range; the arrays are checked. */
    public static void checkRangeOrder(long[] lo, long[] hi, int n) {
        final IntStream ranges = IntStream.range(0, n);
        final int i = (n < PARALLEL_CHECK_MIN ? ranges : ranges.parallel()).filter(r -> lo[r] > hi[r]).findFirst()
                .orElse(-1);
        if (i >= 0) {
            throw new IllegalArgumentException("lo[" + i + "] = " + lo[i] + " is greater than hi[" + i + "] = " + hi[i]);
        }
    }

    /** Checks an export's output arrays. */
    public static void checkExport(long[] keysOut, long[] valuesOut) {
        if (keysOut == null) {
            throw new IllegalArgumentException("keysOut must not be null");
        }
        checkArray(valuesOut, "valuesOut", keysOut.length);
    }
}
