package io.flix.index.cpu;

import static io.flix.index.cpu.CpuFlixIndex.NO_NODE;
import static io.flix.index.sort.SortedSearch.lowerBound;

/**
 * A delete batch removed from the structure: pieces that share no bucket compact their nodes, unlink and free the
 * nodes they empty, then the exact-key table drops the keys.
 */
final class Deletes {

    private final CpuFlixIndex ix;

    Deletes(CpuFlixIndex ix) {
        this.ix = ix;
    }

    /** Removes the {@code unique} sorted keys of {@code s.keys} where present. */
    void deleteUnique(int unique, BatchScratch s) {
        if (unique == 0 || ix.size == 0) {
            return;
        }
        final long[] ks = s.keys;
        final int[] starts = ix.updatePieces(ks, unique);
        final int pieces = starts.length - 1;
        // A freed node held at least one deleted key, so piece p's freed ids fit in [starts[p], starts[p + 1]).
        final int[] freed = s.positions; // as long as the batch
        final int[] freedCount = new int[pieces];
        final long[] removed = new long[pieces];
        ix.runPieces(pieces, p -> {
            final long r = deletePiece(ks, starts[p], starts[p + 1], freed, freedCount, p);
            removed[p] = r;
        });
        for (int p = 0; p < pieces; p++) {
            ix.size -= removed[p];
            for (int i = 0; i < freedCount[p]; i++) {
                ix.pool.free(freed[starts[p] + i]);
            }
            ix.pool.nodesInUse -= freedCount[p];
        }
        if (ix.exactKeys != null) {
            ix.exactKeys.removeAll(ks, unique, ix.updateThreads, ix::runPieces);
        }
    }

    private long deletePiece(long[] ks, int from, int to, int[] freed, int[] freedCount, int piece) {
        long removed = 0;
        int freedAt = from;
        int j = from;
        int b = from < to ? ix.bucketOf(ks[from]) : 0;
        while (j < to) {
            b = ix.bucketAtOrAfter(ks[j], b);
            final long bMax = ix.bucketMax[b];
            int node = ix.bucketHead[b];
            int prev = NO_NODE;
            while (j < to && ks[j] <= bMax) {
                if (node == NO_NODE) {
                    j++; // bucket without keys: nothing to delete
                    continue;
                }
                final long max = ix.pool.nodeMax[node];
                if (ks[j] > max) {
                    prev = node;
                    node = ix.pool.nodeNext[node];
                    continue;
                }
                int end = j + 1;
                while (end < to && ks[end] <= max) {
                    end++;
                }
                final int count = ix.pool.nodeCount[node];
                final long[] nk = ix.pool.keySegment(node);
                final long[] nv = ix.pool.valueSegment(node);
                final int base = ix.pool.slotOf(node);
                final int aEnd = base + count;
                int kept;
                if (end - j == 1) {
                    final int at = lowerBound(nk, base, aEnd, ks[j]);
                    if (at < aEnd && nk[at] == ks[j]) {
                        System.arraycopy(nk, at + 1, nk, at, aEnd - at - 1);
                        System.arraycopy(nv, at + 1, nv, at, aEnd - at - 1);
                        kept = count - 1;
                    } else {
                        kept = count;
                    }
                } else {
                    // Compaction: survivors shift left over the deleted slots.
                    int w = base;
                    int d = j;
                    for (int a = base; a < aEnd; a++) {
                        final long x = nk[a];
                        while (d < end && ks[d] < x) {
                            d++;
                        }
                        if (d < end && ks[d] == x) {
                            d++;
                            continue;
                        }
                        nk[w] = x;
                        nv[w++] = nv[a];
                    }
                    kept = w - base;
                }
                removed += count - kept;
                ix.pool.nodeCount[node] = kept;
                final int next = ix.pool.nodeNext[node];
                if (kept == 0) {
                    if (prev == NO_NODE) {
                        ix.bucketHead[b] = next;
                    } else {
                        ix.pool.nodeNext[prev] = next;
                        if (next == NO_NODE) {
                            ix.pool.nodeMax[prev] = max; // the new last node covers the rest of the bucket
                        }
                    }
                    ix.pool.nodeNext[node] = NO_NODE;
                    freed[freedAt++] = node;
                } else {
                    prev = node;
                }
                node = next;
                j = end;
            }
        }
        freedCount[piece] = freedAt - from;
        return removed;
    }
}
