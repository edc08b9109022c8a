package io.flix.index.cpu;

import io.flix.index.RangeResult;

import static io.flix.index.cpu.CpuFlixIndex.NO_NODE;
import static io.flix.index.sort.SortedSearch.lowerBound;

/**
 * Range lookups and the export: each range a scan in key order from its lower bound's node, counted first, then
 * copied into one result array at its offset.
 */
final class RangeScan {

    private final CpuFlixIndex ix;

    RangeScan(CpuFlixIndex ix) {
        this.ix = ix;
    }

    RangeResult ranges(long[] lo, long[] hi, int n, int limitPerRange, int[] offsets, int pieces) {
        ix.runPieces(pieces, n, (from, to) -> {
            for (int i = from; i < to; i++) {
                offsets[i + 1] = scan(lo[i], hi[i], limitPerRange, null, null, 0);
            }
        });
        long total = 0;
        for (int i = 0; i < n; i++) {
            total += offsets[i + 1];
            if (total > Integer.MAX_VALUE - 8) {
                throw new IllegalStateException("ranges hold more than one array's worth of pairs: lower the limit");
            }
            offsets[i + 1] = (int) total;
        }
        final long[] keys = new long[(int) total];
        final long[] values = new long[(int) total];
        ix.runPieces(pieces, n, (from, to) -> {
            for (int i = from; i < to; i++) {
                scan(lo[i], hi[i], offsets[i + 1] - offsets[i], keys, values, offsets[i]);
            }
        });
        return new RangeResult(offsets, keys, values);
    }

    /**
     * Visits the stored pairs with keys in {@code [lo, hi]} in key order, at most {@code limit}, copying them to
     * {@code keysOut/valuesOut} from {@code at} unless {@code keysOut} is null.
     *
     * @return the number of pairs visited
     */
    int scan(long lo, long hi, int limit, long[] keysOut, long[] valuesOut, int at) {
        int b = ix.bucketOf(lo);
        int node = ix.bucketHead[b];
        int p = 0;
        if (node != NO_NODE) {
            while (ix.pool.nodeMax[node] < lo) {
                node = ix.pool.nodeNext[node];
            }
            final int base = ix.pool.slotOf(node);
            p = lowerBound(ix.pool.keySegment(node), base, base + ix.pool.nodeCount[node], lo) - base;
        }
        int found = 0;
        while (found < limit) {
            if (node == NO_NODE) {
                if (ix.bucketMax[b] >= hi || b + 1 >= ix.bucketCount) {
                    break; // later buckets hold only keys above hi
                }
                node = ix.bucketHead[++b];
                p = 0;
                continue;
            }
            final int count = ix.pool.nodeCount[node];
            if (p >= count) {
                node = ix.pool.nodeNext[node];
                p = 0;
                continue;
            }
            final long[] nk = ix.pool.keySegment(node);
            final int base = ix.pool.slotOf(node);
            final int take = Math.min(count - p, limit - found);
            int k = 0;
            while (k < take && nk[base + p + k] <= hi) {
                k++;
            }
            if (keysOut != null) {
                System.arraycopy(nk, base + p, keysOut, at + found, k);
                System.arraycopy(ix.pool.valueSegment(node), base + p, valuesOut, at + found, k);
            }
            found += k;
            if (k < take) {
                break; // reached a key above hi
            }
            p += k;
        }
        return found;
    }
}
