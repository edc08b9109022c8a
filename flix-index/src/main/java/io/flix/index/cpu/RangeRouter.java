package io.flix.index.cpu;

/**
 * Finds the key range (shard) of a key among ranges cut at ascending lower bounds, in a few instructions for almost
 * every key: a table of buckets evenly over the span of the bounds, each naming the shard of its first and of its
 * last key; only a key whose bucket holds a bound is searched among that bucket's few shards. A binary search over
 * the bounds for every key took as long as the hash-table read it routes (its steps depend on each other, so fewer
 * keys' cache misses overlap).
 */
final class RangeRouter {

    /** Buckets over the span of the bounds, at most. */
    private static final int BUCKET_BITS = 12;

    /** Shard {@code s} holds the keys in {@code [lower[s], lower[s + 1])}; {@code lower[0] == Long.MIN_VALUE}. */
    private final long[] lower;
    private final long base;
    /** {@code lower[last] - base}, unsigned. */
    private final long span;
    private final int shift;
    private final int[] first;
    private final int[] last;

    /** @param lower strictly ascending, from {@code Long.MIN_VALUE} */
    RangeRouter(long[] lower) {
        this.lower = lower;
        final int top = lower.length - 1;
        this.base = top == 0 ? Long.MIN_VALUE : lower[1];
        this.span = lower[top] - base;
        this.shift = Math.max(0, 64 - Long.numberOfLeadingZeros(span) - BUCKET_BITS);
        final int buckets = (int) (span >>> shift) + 1;
        this.first = new int[buckets];
        this.last = new int[buckets];
        for (int b = 0; b < buckets; b++) {
            final long start = base + ((long) b << shift);
            final long end = start + ((1L << shift) - 1);
            first[b] = search(start, 0, top);
            last[b] = search(end < start ? Long.MAX_VALUE : end, first[b], top);
        }
    }

    int shards() {
        return lower.length;
    }

    long lowerBound(int shard) {
        return lower[shard];
    }

    /** The shard of {@code key}: the last {@code s} with {@code lower[s] <= key}. */
    int shardOf(long key) {
        if (key < base) {
            return 0;
        }
        final long offset = key - base; // unsigned: key >= base
        if (Long.compareUnsigned(offset, span) >= 0) {
            return lower.length - 1;
        }
        final int b = (int) (offset >>> shift);
        final int from = first[b];
        final int to = last[b];
        return from == to ? from : search(key, from, to);
    }

    /** The last {@code s} in {@code [from, to]} with {@code lower[s] <= key}, where {@code lower[from] <= key}. */
    private int search(long key, int from, int to) {
        int lo = from;
        int hi = to;
        while (lo < hi) {
            final int mid = (lo + hi + 1) >>> 1;
            if (lower[mid] <= key) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo;
    }
}
