package io.flix.index.cpu;

import static io.flix.index.cpu.CpuFlixIndex.NO_NODE;
import static io.flix.index.sort.SortedSearch.lowerBound;

/**
 * An upsert batch merged into the structure (paper section 3.2, ST-Bulk): the batch cut into pieces that share no
 * bucket, each piece merging its buckets' nodes with new nodes from its own slice of one reservation, chains made
 * too long cut afterwards ({@link ChainPolicy}), the exact-key table written last.
 */
final class UpsertMerge {

    private final CpuFlixIndex ix;

    UpsertMerge(CpuFlixIndex ix) {
        this.ix = ix;
    }

    /** Merges the {@code unique} sorted pairs of {@code s.keys/s.values} into the structure. */
    void upsertUnique(int unique, BatchScratch s) {
        if (unique == 0) {
            return;
        }
        final long[] ks = s.keys;
        final long[] vs = s.values;
        final int[] starts = ix.updatePieces(ks, unique);
        final int pieces = starts.length - 1;
        if (ix.exactKeys != null) {
            // Grown before anything changes: a growth that fails leaves the index as it was.
            ix.exactKeys.reserveFor(ks, unique, ix.updateThreads, ix::runPieces);
        }

        // Pass 1 (read only): a bound on the new nodes each piece may need, so that all node ids are handed out
        // before any task runs and no array is reallocated under the tasks.
        final long[] need = new long[pieces];
        ix.runPieces(pieces, p -> need[p] = nodesNeeded(ks, starts[p], starts[p + 1]));
        final int[] reservedFrom = new int[pieces + 1];
        long totalNeed = 0;
        for (int p = 0; p < pieces; p++) {
            reservedFrom[p] = (int) totalNeed;
            totalNeed += need[p];
            if (totalNeed > Integer.MAX_VALUE - 8) {
                throw new IllegalStateException("batch needs too many nodes at once: split it");
            }
        }
        reservedFrom[pieces] = (int) totalNeed;
        final int[] reserved = ix.pool.reserve((int) totalNeed, s);

        // Pass 2: each piece merges its buckets, taking new nodes from its own slice of the reservation.
        final int[] used = new int[pieces];
        final long[] added = new long[pieces];
        final ChainPolicy.LongChains[] longChains = new ChainPolicy.LongChains[pieces];
        ix.runPieces(pieces, p -> {
            final UpsertPiece piece = new UpsertPiece(reserved, reservedFrom[p], ix.nodeSize);
            mergePiece(ks, vs, starts[p], starts[p + 1], piece);
            used[p] = piece.nextReserved - reservedFrom[p];
            added[p] = piece.added;
            longChains[p] = piece.longChains;
        });
        for (int p = 0; p < pieces; p++) {
            ix.size += added[p];
            ix.pool.nodesInUse += used[p];
            for (int i = reservedFrom[p] + used[p]; i < reservedFrom[p + 1]; i++) {
                ix.pool.free(reserved[i]);
            }
        }
        final ChainPolicy.Buckets cut = ChainPolicy.cutIntoOneBucketPerNode(longChains, ix.bucketMax, ix.bucketHead,
                ix.bucketCount, ix.pool.nodeNext, ix.pool.nodeMax);
        if (cut != null) {
            ix.bucketMax = cut.max();
            ix.bucketHead = cut.head();
            ix.bucketCount = cut.count();
        }
        if (ix.exactKeys != null) {
            ix.exactKeys.putAll(ks, vs, unique, ix.updateThreads, ix::runPieces);
        }
    }

    /** Per-task state of an upsert: its node reservation, merge space and tallies. */
    private static final class UpsertPiece {
        final int[] reserved;
        int nextReserved;
        long[] mergeKeys;
        long[] mergeValues;
        long added;
        /** Buckets whose chain this piece made too long (ChainPolicy). */
        final ChainPolicy.LongChains longChains = new ChainPolicy.LongChains();

        UpsertPiece(int[] reserved, int from, int nodeSize) {
            this.reserved = reserved;
            this.nextReserved = from;
            this.mergeKeys = new long[2 * nodeSize];
            this.mergeValues = new long[2 * nodeSize];
        }

        int takeNode() {
            return reserved[nextReserved++];
        }

        void ensureMergeSpace(int capacity) {
            if (mergeKeys.length < capacity) {
                final int grown = Math.max(capacity, mergeKeys.length * 2);
                mergeKeys = new long[grown];
                mergeValues = new long[grown];
            }
        }
    }

    /** Nodes that merging {@code ks[from, to)} could add: mirrors {@link #mergePiece} without writing. */
    private long nodesNeeded(long[] ks, int from, int to) {
        long need = 0;
        int j = from;
        int b = from < to ? ix.bucketOf(ks[from]) : 0;
        while (j < to) {
            b = ix.bucketAtOrAfter(ks[j], b);
            final long bMax = ix.bucketMax[b];
            int node = ix.bucketHead[b];
            if (node == NO_NODE) {
                int end = j;
                while (end < to && ks[end] <= bMax) {
                    end++;
                }
                need += nodesFor(end - j);
                j = end;
                continue;
            }
            while (j < to && ks[j] <= bMax) {
                final long max = ix.pool.nodeMax[node];
                if (ks[j] > max) {
                    node = ix.pool.nodeNext[node];
                    continue;
                }
                int end = j + 1;
                while (end < to && ks[end] <= max) {
                    end++;
                }
                final int merged = ix.pool.nodeCount[node] + (end - j);
                if (merged > ix.nodeSize) {
                    need += nodesFor(merged) - 1;
                }
                j = end;
                node = ix.pool.nodeNext[node];
            }
        }
        return need;
    }

    /** Nodes that hold {@code keys} merged keys: one if they fit, else spread at most {@code splitFill} each. */
    private int nodesFor(int keys) {
        return keys <= ix.nodeSize ? 1 : (int) CpuFlixIndex.ceilDiv(keys, ix.splitFill);
    }

    private void mergePiece(long[] ks, long[] vs, int from, int to, UpsertPiece piece) {
        int j = from;
        int b = from < to ? ix.bucketOf(ks[from]) : 0;
        while (j < to) {
            b = ix.bucketAtOrAfter(ks[j], b);
            final long bMax = ix.bucketMax[b];
            int node = ix.bucketHead[b];
            if (node == NO_NODE) {
                int end = j;
                while (end < to && ks[end] <= bMax) {
                    end++;
                }
                final int first = piece.takeNode();
                final int chain = spread(ks, vs, j, end - j, first, bMax, NO_NODE, piece);
                ix.bucketHead[b] = first;
                piece.added += end - j;
                if (chain > ChainPolicy.MAX_CHAIN_NODES) {
                    piece.longChains.note(b);
                }
                j = end;
                continue;
            }
            int walked = 0;
            boolean grew = false;
            while (j < to && ks[j] <= bMax) {
                final long max = ix.pool.nodeMax[node];
                if (ks[j] > max) {
                    node = ix.pool.nodeNext[node];
                    walked++;
                    continue;
                }
                int end = j + 1;
                while (end < to && ks[end] <= max) {
                    end++;
                }
                final int after = ix.pool.nodeNext[node];
                final int nodes = mergeIntoNode(node, ks, vs, j, end, piece);
                grew |= nodes > 1;
                walked += nodes;
                j = end;
                node = after;
            }
            if (grew) {
                for (; node != NO_NODE && walked <= ChainPolicy.MAX_CHAIN_NODES; node = ix.pool.nodeNext[node]) {
                    walked++;
                }
                if (walked > ChainPolicy.MAX_CHAIN_NODES) {
                    piece.longChains.note(b);
                }
            }
        }
    }

    /**
     * Merges the sorted unique pairs {@code ks/vs[from, to)}, all routed to {@code node}, into it (bulk merge as in
     * the paper's ST-Bulk), splitting when they do not fit.
     *
     * @return the number of nodes the node's contents occupy afterwards
     */
    private int mergeIntoNode(int node, long[] ks, long[] vs, int from, int to, UpsertPiece piece) {
        final long[] nk = ix.pool.keySegment(node);
        final long[] nv = ix.pool.valueSegment(node);
        final int count = ix.pool.nodeCount[node];
        final int base = ix.pool.slotOf(node);
        if (to - from == 1) {
            final long key = ks[from];
            final int at = lowerBound(nk, base, base + count, key);
            if (at < base + count && nk[at] == key) {
                nv[at] = vs[from];
                return 1;
            }
            if (count < ix.nodeSize) {
                final int tail = base + count - at;
                System.arraycopy(nk, at, nk, at + 1, tail);
                System.arraycopy(nv, at, nv, at + 1, tail);
                nk[at] = key;
                nv[at] = vs[from];
                ix.pool.nodeCount[node] = count + 1;
                piece.added++;
                return 1;
            }
        }
        piece.ensureMergeSpace(count + to - from);
        final long[] mk = piece.mergeKeys;
        final long[] mv = piece.mergeValues;
        int a = base;
        final int aEnd = base + count;
        int j = from;
        int out = 0;
        while (a < aEnd && j < to) {
            final long x = nk[a];
            final long y = ks[j];
            if (x < y) {
                mk[out] = x;
                mv[out++] = nv[a++];
            } else {
                mk[out] = y;
                mv[out++] = vs[j++];
                if (x == y) {
                    a++;
                }
            }
        }
        while (a < aEnd) {
            mk[out] = nk[a];
            mv[out++] = nv[a++];
        }
        while (j < to) {
            mk[out] = ks[j];
            mv[out++] = vs[j++];
        }
        piece.added += out - count;
        return spread(mk, mv, 0, out, node, ix.pool.nodeMax[node], ix.pool.nodeNext[node], piece);
    }

    /**
     * Writes {@code len} ascending pairs from {@code srcK/srcV[from..]} into {@code first} and, where they do not
     * fit, into further reserved nodes, spread evenly. The last node gets {@code lastMax} and links to
     * {@code after}.
     *
     * @return the number of nodes written
     */
    private int spread(long[] srcK, long[] srcV, int from, int len, int first, long lastMax, int after,
                       UpsertPiece piece) {
        final int nodes = nodesFor(len);
        final int per = len / nodes;
        final int extra = len % nodes;
        int src = from;
        int node = first;
        for (int i = 0; i < nodes; i++) {
            final int take = per + (i < extra ? 1 : 0);
            final int base = ix.pool.slotOf(node);
            System.arraycopy(srcK, src, ix.pool.keySegment(node), base, take);
            System.arraycopy(srcV, src, ix.pool.valueSegment(node), base, take);
            ix.pool.nodeCount[node] = take;
            src += take;
            if (i == nodes - 1) {
                ix.pool.nodeMax[node] = lastMax;
                ix.pool.nodeNext[node] = after;
            } else {
                ix.pool.nodeMax[node] = srcK[src - 1];
                final int next = piece.takeNode();
                ix.pool.nodeNext[node] = next;
                node = next;
            }
        }
        return nodes;
    }
}
