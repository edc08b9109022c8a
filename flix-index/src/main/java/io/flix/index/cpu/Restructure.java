package io.flix.index.cpu;

import static io.flix.index.cpu.CpuFlixIndex.NO_NODE;

/**
 * The restructure (paper section 3.4): every key copied, in parallel by ranks, into fresh nodes filled to the
 * build's fill, one bucket per node.
 */
final class Restructure {

    private final CpuFlixIndex ix;

    Restructure(CpuFlixIndex ix) {
        this.ix = ix;
    }

    /** Rebuilds the structure with every node filled to the config's keys per node; returns the nodes freed. */
    long run() {
        final long before = ix.pool.nodesInUse;
        final int fill = ix.keysPerBuiltNode;
        final long total = ix.size;
        if (CpuFlixIndex.ceilDiv(total, fill) > NodePool.MAX_NODES) {
            throw new IllegalStateException("index too large to restructure at " + fill + " keys per node");
        }
        final int nodes = (int) CpuFlixIndex.ceilDiv(total, fill);
        // Rank of each piece's first key, so that tasks copy disjoint parts of the new layout.
        final int pieces = total >= CpuFlixIndex.PARALLEL_MIN_KEYS ? ix.pieceCount(ix.bucketCount) : 1;
        final int[] bucketFrom = new int[pieces + 1];
        for (int p = 0; p <= pieces; p++) {
            bucketFrom[p] = (int) ((long) ix.bucketCount * p / pieces);
        }
        final long[] rankFrom = new long[pieces + 1];
        ix.runPieces(pieces, p -> {
            long keys = 0;
            for (int b = bucketFrom[p]; b < bucketFrom[p + 1]; b++) {
                for (int node = ix.bucketHead[b]; node != NO_NODE; node = ix.pool.nodeNext[node]) {
                    keys += ix.pool.nodeCount[node];
                }
            }
            rankFrom[p + 1] = keys;
        });
        for (int p = 0; p < pieces; p++) {
            rankFrom[p + 1] += rankFrom[p];
        }
        final long[][] newKeys = ix.pool.newSegments(nodes);
        final long[][] newValues = ix.pool.newSegments(nodes);
        ix.runPieces(pieces, p -> {
            long rank = rankFrom[p];
            for (int b = bucketFrom[p]; b < bucketFrom[p + 1]; b++) {
                for (int node = ix.bucketHead[b]; node != NO_NODE; node = ix.pool.nodeNext[node]) {
                    final long[] srcKeys = ix.pool.keySegment(node);
                    final long[] srcValues = ix.pool.valueSegment(node);
                    int src = ix.pool.slotOf(node);
                    int left = ix.pool.nodeCount[node];
                    while (left > 0) {
                        final int target = (int) (rank / fill);
                        final int slot = (int) (rank - (long) target * fill);
                        final int len = Math.min(left, fill - slot);
                        final int dst = ix.pool.slotOf(target) + slot;
                        System.arraycopy(srcKeys, src, ix.pool.segmentOf(newKeys, target), dst, len);
                        System.arraycopy(srcValues, src, ix.pool.segmentOf(newValues, target), dst, len);
                        src += len;
                        left -= len;
                        rank += len;
                    }
                }
            }
        });
        ix.layoutEmpty(0);
        if (nodes > 0) {
            final long[] bMax = new long[nodes];
            final int[] heads = new int[nodes];
            final int[] counts = new int[nodes];
            final int[] next = new int[nodes];
            for (int node = 0; node < nodes; node++) {
                counts[node] = (int) Math.min(fill, total - (long) node * fill);
                bMax[node] = ix.pool.segmentOf(newKeys, node)[ix.pool.slotOf(node) + counts[node] - 1];
                heads[node] = node;
                next[node] = NO_NODE;
            }
            bMax[nodes - 1] = Long.MAX_VALUE;
            ix.pool.adoptLayout(nodes, newKeys, newValues, counts, next, bMax.clone());
            ix.bucketMax = bMax;
            ix.bucketHead = heads;
            ix.bucketCount = nodes;
            ix.size = total;
        }
        if (ix.exactKeys != null) {
            ix.exactKeys.fit();
        }
        return before - ix.pool.nodesInUse;
    }
}
