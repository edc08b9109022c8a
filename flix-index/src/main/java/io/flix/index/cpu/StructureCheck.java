package io.flix.index.cpu;

import io.flix.index.FlixIndex;

import static io.flix.index.cpu.CpuFlixIndex.NO_NODE;

/**
 * The check of every structural invariant of {@link CpuFlixIndex}'s class comment and of the node accounting:
 * walks the whole index, for tests.
 */
final class StructureCheck {

    private final CpuFlixIndex ix;

    StructureCheck(CpuFlixIndex ix) {
        this.ix = ix;
    }

    void run() {
        final int capacity = ix.pool.nodeCount.length;
        final boolean[] linked = new boolean[capacity];
        long keys = 0;
        long nodes = 0;
        for (int b = 0; b < ix.bucketCount; b++) {
            if (b > 0 && ix.bucketMax[b] <= ix.bucketMax[b - 1]) {
                throw new IllegalStateException("bucketMax not ascending at bucket " + b);
            }
            boolean haveLower = b > 0;
            long lower = b > 0 ? ix.bucketMax[b - 1] : 0;
            int last = NO_NODE;
            for (int node = ix.bucketHead[b]; node != NO_NODE; node = ix.pool.nodeNext[node]) {
                if (node < 0 || node >= ix.pool.nodesHandedOut || linked[node]) {
                    throw new IllegalStateException("bad or repeated node " + node + " in bucket " + b);
                }
                linked[node] = true;
                nodes++;
                final int count = ix.pool.nodeCount[node];
                if (count < 1 || count > ix.nodeSize) {
                    throw new IllegalStateException("node " + node + " holds " + count + " keys");
                }
                final int base = ix.pool.slotOf(node);
                for (int i = 0; i < count; i++) {
                    final long k = ix.pool.keySegment(node)[base + i];
                    if ((haveLower && k <= lower) || k > ix.pool.nodeMax[node]) {
                        throw new IllegalStateException("key " + k + " outside node " + node + " of bucket " + b);
                    }
                    if (ix.pool.valueSegment(node)[base + i] == FlixIndex.NOT_FOUND) {
                        throw new IllegalStateException("reserved value stored for key " + k);
                    }
                    if (ix.exactKeys != null && ix.exactKeys.get(k) != ix.pool.valueSegment(node)[base + i]) {
                        throw new IllegalStateException("the exact-key table holds " + ix.exactKeys.get(k)
                                + " for key " + k + ", the nodes " + ix.pool.valueSegment(node)[base + i]);
                    }
                    lower = k;
                    haveLower = true;
                }
                lower = ix.pool.nodeMax[node];
                keys += count;
                last = node;
            }
            if (last != NO_NODE && ix.pool.nodeMax[last] != ix.bucketMax[b]) {
                throw new IllegalStateException("last node of bucket " + b + " does not end at bucketMax");
            }
        }
        if (ix.bucketMax[ix.bucketCount - 1] != Long.MAX_VALUE) {
            throw new IllegalStateException("last bucketMax is not Long.MAX_VALUE");
        }
        if (keys != ix.size) {
            throw new IllegalStateException("size " + ix.size + " but " + keys + " keys linked");
        }
        if (ix.exactKeys != null && ix.exactKeys.size() != ix.size) {
            throw new IllegalStateException("size " + ix.size + " but the exact-key table holds "
                    + ix.exactKeys.size());
        }
        if (nodes != ix.pool.nodesInUse) {
            throw new IllegalStateException("nodesInUse " + ix.pool.nodesInUse + " but " + nodes + " nodes linked");
        }
        for (int i = 0; i < ix.pool.freeCount; i++) {
            final int node = ix.pool.freeNodes[i];
            if (node < 0 || node >= ix.pool.nodesHandedOut || linked[node]) {
                throw new IllegalStateException("free list entry " + node + " is linked, repeated or never handed out");
            }
            linked[node] = true;
        }
        if (ix.pool.nodesInUse + ix.pool.freeCount != ix.pool.nodesHandedOut) {
            throw new IllegalStateException("nodes handed out " + ix.pool.nodesHandedOut + " != in use "
                    + ix.pool.nodesInUse + " + free " + ix.pool.freeCount);
        }
    }
}
