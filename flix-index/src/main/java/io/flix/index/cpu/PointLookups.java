package io.flix.index.cpu;

import static io.flix.index.FlixIndex.NOT_FOUND;
import static io.flix.index.cpu.CpuFlixIndex.NO_NODE;
import static io.flix.index.sort.SortedSearch.lowerBound;
import static io.flix.index.sort.SortedSearch.upperBound;

/**
 * Point lookups of a batch: exact gets (from the exact-key table where the index keeps one, else by the walk),
 * ceilings and floors, each by the compute-to-bucket walk over the sorted batch.
 */
final class PointLookups {

    /** From this many keys an unsorted lookup batch is radix sorted with its permutation (see lookup). */
    private static final int SORT_WITH_PERMUTATION_MIN = 1024;

    private final CpuFlixIndex ix;

    PointLookups(CpuFlixIndex ix) {
        this.ix = ix;
    }

    /*
     * Unsorted lookup batches are sorted with their permutation (ParallelKeySorter), answered by the
     * compute-to-bucket walk and the answers scattered back through the permutation. Searching key by key in
     * parallel instead (binary search of bucketMax, chain walk, binary search of the node) was several times
     * slower at 2^22 keys and still slower at 4096 (docs/results/cpu-lookup-paths.md). Every per-key level is
     * a cache miss, while the sorted walk reads buckets and nodes in address order. Below SORT_WITH_PERMUTATION_MIN
     * keys the radix sort's fixed cost dominates (per-key won at 1024 keys and less): there a plain sort of a copy
     * is used and each key finds its answer by binary search in that copy. Ceiling and floor share the walk, which
     * also scans each run of empty buckets once per task rather than once per key.
     */

    /** Answers the sorted {@code keys[from, to)}, writing answer {@code i} to slot {@code slots[i]} (or {@code i}). */
    @FunctionalInterface
    private interface LookupKernel {
        void run(long[] keys, int from, int to, int[] slots, long[] keysOut, long[] valuesOut);
    }

    void get(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        if (ix.exactKeys == null) {
            lookup(keys, n, null, valuesOut, keysSorted,
                    (sorted, from, to, slots, keysOut, out) -> getSorted(sorted, from, to, slots, out));
            return;
        }
        ix.onLookupShare(callThreads -> {
            ix.runPieces(ix.lookupPieces(n, callThreads), n,
                    (from, to) -> ix.exactKeys.get(keys, from, to, valuesOut));
            return null;
        });
    }

    void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        lookup(keys, n, keysOut, valuesOut, keysSorted, this::ceilingSorted);
    }

    void floor(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        lookup(keys, n, keysOut, valuesOut, keysSorted, this::floorSorted);
    }

    private void lookup(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted,
                        LookupKernel kernel) {
        if (n == 0) {
            return;
        }
        ix.onLookupShare(callThreads -> {
            lookup(keys, n, keysOut, valuesOut, keysSorted, kernel, callThreads);
            return null;
        });
    }

    private void lookup(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted,
                        LookupKernel kernel, int callThreads) {
        if (keysSorted) {
            ix.runPieces(ix.lookupPieces(n, callThreads), n,
                    (from, to) -> kernel.run(keys, from, to, null, keysOut, valuesOut));
            return;
        }
        final BatchScratch s = ix.scratch.take();
        try {
            s.ensure(n);
            final long[] sorted = s.keys;
            if (n < SORT_WITH_PERMUTATION_MIN) {
                System.arraycopy(keys, 0, sorted, 0, n);
                java.util.Arrays.sort(sorted, 0, n);
                if (s.foundKeys.length < n) {
                    s.foundKeys = new long[SORT_WITH_PERMUTATION_MIN];
                }
                final long[] foundKeys = s.foundKeys;
                final long[] foundValues = s.values;
                kernel.run(sorted, 0, n, null, foundKeys, foundValues);
                for (int i = 0; i < n; i++) {
                    final int at = lowerBound(sorted, 0, n, keys[i]);
                    if (keysOut != null) {
                        keysOut[i] = foundKeys[at];
                    }
                    valuesOut[i] = foundValues[at];
                }
                return;
            }
            final int[] slots = s.positions;
            s.sorter.sort(keys, n, sorted, slots, callThreads);
            ix.runPieces(ix.lookupPieces(n, callThreads), n,
                    (from, to) -> kernel.run(sorted, from, to, slots, keysOut, valuesOut));
        } finally {
            ix.scratch.give(s);
        }
    }

    private void getSorted(long[] keys, int from, int to, int[] slots, long[] valuesOut) {
        if (from >= to) {
            return;
        }
        int b = ix.bucketOf(keys[from]);
        long bMax = ix.bucketMax[b];
        int node = ix.bucketHead[b];
        int at = 0;
        for (int i = from; i < to; i++) {
            final long q = keys[i];
            if (q > bMax) {
                b = ix.bucketAtOrAfter(q, b + 1);
                bMax = ix.bucketMax[b];
                node = ix.bucketHead[b];
                at = 0;
            }
            long value = NOT_FOUND;
            if (node != NO_NODE) {
                while (ix.pool.nodeMax[node] < q) {
                    node = ix.pool.nodeNext[node];
                    at = 0;
                }
                final long[] nk = ix.pool.keySegment(node);
                final int base = ix.pool.slotOf(node);
                final int end = base + ix.pool.nodeCount[node];
                final int p = lowerBound(nk, base + at, end, q);
                at = p - base;
                if (p < end && nk[p] == q) {
                    value = ix.pool.valueSegment(node)[p];
                }
            }
            valuesOut[slots == null ? i : slots[i]] = value;
        }
    }

    private void ceilingSorted(long[] keys, int from, int to, int[] slots, long[] keysOut, long[] valuesOut) {
        if (from >= to) {
            return;
        }
        int b = ix.bucketOf(keys[from]);
        long bMax = ix.bucketMax[b];
        int node = ix.bucketHead[b];
        int at = 0;
        // Buckets [scannedFrom, found) hold no keys; found is the next bucket with keys (bucketCount: none).
        int scannedFrom = Integer.MAX_VALUE;
        int found = -1;
        for (int i = from; i < to; i++) {
            final long q = keys[i];
            final int slot = slots == null ? i : slots[i];
            if (q > bMax) {
                b = ix.bucketAtOrAfter(q, b + 1);
                bMax = ix.bucketMax[b];
                node = ix.bucketHead[b];
                at = 0;
            }
            if (node != NO_NODE) {
                while (ix.pool.nodeMax[node] < q) {
                    node = ix.pool.nodeNext[node];
                    at = 0;
                }
                final long[] nk = ix.pool.keySegment(node);
                final int base = ix.pool.slotOf(node);
                final int end = base + ix.pool.nodeCount[node];
                final int p = lowerBound(nk, base + at, end, q);
                at = p - base;
                if (p < end) {
                    keysOut[slot] = nk[p];
                    valuesOut[slot] = ix.pool.valueSegment(node)[p];
                    continue;
                }
                final int next = ix.pool.nodeNext[node];
                if (next != NO_NODE) {
                    keysOut[slot] = ix.pool.keySegment(next)[ix.pool.slotOf(next)];
                    valuesOut[slot] = ix.pool.valueSegment(next)[ix.pool.slotOf(next)];
                    continue;
                }
            }
            if (!(scannedFrom <= b + 1 && b + 1 <= found)) {
                int f = b + 1;
                while (f < ix.bucketCount && ix.bucketHead[f] == NO_NODE) {
                    f++;
                }
                scannedFrom = b + 1;
                found = f;
            }
            if (found < ix.bucketCount) {
                final int head = ix.bucketHead[found];
                keysOut[slot] = ix.pool.keySegment(head)[ix.pool.slotOf(head)];
                valuesOut[slot] = ix.pool.valueSegment(head)[ix.pool.slotOf(head)];
            } else {
                keysOut[slot] = 0;
                valuesOut[slot] = NOT_FOUND;
            }
        }
    }

    private void floorSorted(long[] keys, int from, int to, int[] slots, long[] keysOut, long[] valuesOut) {
        if (from >= to) {
            return;
        }
        int b = ix.bucketOf(keys[from]);
        long bMax = ix.bucketMax[b];
        int node = ix.bucketHead[b];
        int prev = NO_NODE;
        int at = 0;
        // Every bucket in [found, scannedTo] has no keys above found's; found = -1: none at all.
        int scannedTo = Integer.MIN_VALUE;
        int found = -1;
        long foundKey = 0;
        long foundValue = NOT_FOUND;
        for (int i = from; i < to; i++) {
            final long q = keys[i];
            final int slot = slots == null ? i : slots[i];
            if (q > bMax) {
                b = ix.bucketAtOrAfter(q, b + 1);
                bMax = ix.bucketMax[b];
                node = ix.bucketHead[b];
                prev = NO_NODE;
                at = 0;
            }
            if (node != NO_NODE) {
                while (ix.pool.nodeMax[node] < q) {
                    prev = node;
                    node = ix.pool.nodeNext[node];
                    at = 0;
                }
                final long[] nk = ix.pool.keySegment(node);
                final int base = ix.pool.slotOf(node);
                final int end = base + ix.pool.nodeCount[node];
                final int p = upperBound(nk, base + at, end, q);
                at = p - base;
                if (p > base) {
                    keysOut[slot] = nk[p - 1];
                    valuesOut[slot] = ix.pool.valueSegment(node)[p - 1];
                    continue;
                }
                if (prev != NO_NODE) {
                    final int last = ix.pool.slotOf(prev) + ix.pool.nodeCount[prev] - 1;
                    keysOut[slot] = ix.pool.keySegment(prev)[last];
                    valuesOut[slot] = ix.pool.valueSegment(prev)[last];
                    continue;
                }
            }
            final int below = b - 1;
            if (below < 0) {
                keysOut[slot] = 0;
                valuesOut[slot] = NOT_FOUND;
                continue;
            }
            if (!(found <= below && below <= scannedTo)) {
                int f = below;
                while (f >= 0 && ix.bucketHead[f] == NO_NODE && !(f <= scannedTo && f >= found)) {
                    f--;
                }
                if (f >= 0 && ix.bucketHead[f] == NO_NODE) {
                    f = found; // reached the range already scanned: its answer holds
                } else if (f >= 0) {
                    int last = ix.bucketHead[f];
                    while (ix.pool.nodeNext[last] != NO_NODE) {
                        last = ix.pool.nodeNext[last];
                    }
                    final int slotOfLast = ix.pool.slotOf(last) + ix.pool.nodeCount[last] - 1;
                    foundKey = ix.pool.keySegment(last)[slotOfLast];
                    foundValue = ix.pool.valueSegment(last)[slotOfLast];
                }
                found = f;
                scannedTo = below;
            }
            if (found >= 0) {
                keysOut[slot] = foundKey;
                valuesOut[slot] = foundValue;
            } else {
                keysOut[slot] = 0;
                valuesOut[slot] = NOT_FOUND;
            }
        }
    }
}
