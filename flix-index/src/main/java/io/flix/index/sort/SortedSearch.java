package io.flix.index.sort;

/** Binary searches over an ascending run of a {@code long[]}. */
public final class SortedSearch {

    private SortedSearch() {
    }

    /** First index in {@code [from, to)} whose element is {@code >= key}, or {@code to}. */
    public static int lowerBound(long[] a, int from, int to, long key) {
        int lo = from;
        int hi = to;
        while (lo < hi) {
            final int mid = (lo + hi) >>> 1;
            if (a[mid] < key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** First index in {@code [from, to)} whose element is {@code > key}, or {@code to}. */
    public static int upperBound(long[] a, int from, int to, long key) {
        int lo = from;
        int hi = to;
        while (lo < hi) {
            final int mid = (lo + hi) >>> 1;
            if (a[mid] <= key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
}
