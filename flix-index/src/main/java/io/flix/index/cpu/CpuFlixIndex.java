package io.flix.index.cpu;

import io.flix.index.AbstractFlixIndex;
import io.flix.index.Backend;
import io.flix.index.BatchArgs;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.IndexStats;
import io.flix.index.RangeResult;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;

import static io.flix.index.sort.SortedSearch.lowerBound;
import static io.flix.index.sort.SortedSearch.upperBound;

/**
 * The FliX structure in plain Java (paper section 3): a max-key-per-bucket array over buckets, each a chain of
 * fixed-size nodes, operated on in sorted batches with compute-to-bucket parallelism on a {@link ForkJoinPool}
 * owned by the index.
 *
 * <p>Storage: {@code bucketMax} (ascending, the last entry is {@code Long.MAX_VALUE} so every key has a bucket) and
 * {@code bucketHead}; a node pool of primitive arrays indexed by node id, with a free list of node ids
 * ({@link NodePool}: keys and values in segments, so that it grows without copying everything).
 *
 * <p>Invariants that routing relies on, for the chain {@code c0 -> c1 -> ... -> cl} of bucket {@code b}:
 * <ul>
 *   <li>Every linked node holds at least one key; a bucket without keys has no node ({@code bucketHead = NO_NODE}).
 *       Nodes emptied by deletes are unlinked at once and go to the free list.</li>
 *   <li>{@code nodeMax} strictly increases along the chain and {@code nodeMax[cl] == bucketMax[b]}. Node
 *       {@code ci} holds only keys in {@code (nodeMax[c(i-1)], nodeMax[ci]]} (for {@code c0} the lower end is
 *       {@code bucketMax[b - 1]}), so key {@code k} belongs to the first node whose {@code nodeMax >= k}.
 *       {@code nodeMax} is a routing bound, not necessarily a stored key: deletes leave it in place.</li>
 *   <li>Keys in a node are strictly ascending; chain order is key order; bucket order is key order.</li>
 * </ul>
 *
 * <p>Updates split a node's merged contents evenly over the fewest nodes filled to at most three quarters (a
 * bulk form of the paper's split-in-halves that leaves room for later inserts). Bucket boundaries otherwise stay
 * fixed until {@link #restructure()}, with one exception (the paper's elastic strategy, section 3.4, in
 * {@link ChainPolicy}): a chain that an upsert makes longer than {@value ChainPolicy#MAX_CHAIN_NODES} nodes is cut
 * into one bucket per node, moving no keys.
 *
 * <p>Exact gets read an {@link ExactKeyTable} kept beside the nodes (unless the config leaves it out): a hash table
 * of every key with its value, written by every build, upsert and delete. It costs a cache line a key where the walk
 * of a sorted batch over buckets and nodes costs two or three misses and the batch's sort.
 *
 * <p>An update batch is applied on the workers from end to end: from {@value #PREP_PARALLEL_MIN_KEYS} keys (and with
 * more than one thread) it is sorted and reduced to unique keys there ({@link BatchPrep}), its buckets are merged in
 * pieces that share no bucket, and its exact-key table writes and removes run by slot ranges. Smaller batches, and
 * every batch of an index of one thread, run the serial path on the caller's thread.
 *
 * <p>Concurrency as {@link FlixIndex} says: lookups run in parallel (they only read the structure, each in its own
 * batch scratch), updates alone. An update is split for {@code config.threads()} workers; a lookup for at most
 * {@code config.lookupThreadCap()}, fewer where other lookups run at once (one: on the caller's thread). At most
 * about {@code 2^31} nodes. Batch scratch (sorted keys, permutations, a sorter) is taken per call from a pool of
 * the index ({@link BatchScratch.Pool}) and kept between calls up to {@value #SCRATCH_KEPT} keys. {@link #close()}
 * lets go of everything: structure, scratch and the thread pool.
 */
public final class CpuFlixIndex extends AbstractFlixIndex {

    /** Marks the end of a chain and a bucket without nodes. */
    static final int NO_NODE = -1;
    /** Below this many keys a batch runs on the caller's thread: forking costs more than it saves. */
    private static final int PARALLEL_MIN_KEYS = 4096;
    /** Smallest number of keys worth one parallel piece. */
    private static final int MIN_KEYS_PER_PIECE = 1024;
    /** Pieces per thread, so that uneven pieces balance out. */
    private static final int PIECES_PER_THREAD = 4;
    /** From this many keys an unsorted lookup batch is radix sorted with its permutation (see lookup). */
    private static final int SORT_WITH_PERMUTATION_MIN = 1024;
    /** Batch scratch for up to this many keys stays allocated between calls. */
    static final int SCRATCH_KEPT = 1 << 22;
    /**
     * From this many keys an update batch is sorted and reduced to unique keys on the workers ({@link BatchPrep});
     * below, on the caller's thread, where forking would cost more than it saves. The operator's batches reach 2^16.
     */
    static final int PREP_PARALLEL_MIN_KEYS = 1 << 13;
    /**
     * Above this many keys (a build, a bulk load) the batch goes the serial way, whose sort is already parallel
     * ({@link ParallelKeySorter}) and which needs less scratch per key.
     */
    static final int PREP_PARALLEL_MAX_KEYS = SCRATCH_KEPT;
    /** From this many keys a batch writes the exact-key table on the workers (by slot ranges, see ExactKeyTable). */
    static final int EXACT_TABLE_PARALLEL_MIN_KEYS = 1 << 13;
    /** Fewest keys of one piece of that parallel sort and reduction. */
    static final int PREP_MIN_KEYS_PER_RANGE = 512;
    /** Fewest keys of one chunk of its counting and scattering passes. */
    static final int PREP_MIN_KEYS_PER_CHUNK = 2048;

    private final int nodeSize;
    private final int keysPerBuiltNode;
    private final int splitFill;
    private final int threads;
    /** From this many keys (and more than one thread) an update batch is prepared on the workers. */
    private final int prepParallelMin;
    /** The most threads one lookup call is split for. */
    private final int lookupThreadCap;
    /** The workers of parallel batches; null once closed, as every array below. */
    private ForkJoinPool workers;
    private BatchScratch.Pool scratch;
    /** Lookup calls running now: they share the workers (see onLookupShare). */
    private final AtomicInteger lookupsInFlight = new AtomicInteger();

    private int bucketCount;
    private long[] bucketMax;
    private int[] bucketHead;

    /** The nodes: keys, values, counts, links, max keys, and the free list. */
    private final NodePool pool;
    private long size;
    /** Every key with its value, for exact gets; null where the config leaves it out. */
    private ExactKeyTable exactKeys;

    public CpuFlixIndex(FlixConfig config) {
        this(config, PREP_PARALLEL_MIN_KEYS, PREP_MIN_KEYS_PER_RANGE, PREP_MIN_KEYS_PER_CHUNK);
    }

    /**
     * An index whose update batches are sorted and reduced on the workers from {@code prepParallelMin} keys, in
     * pieces of at least {@code prepKeysPerRange} keys and chunks of at least {@code prepKeysPerChunk}; tests force
     * the parallel path with small ones.
     */
    CpuFlixIndex(FlixConfig config, int prepParallelMin, int prepKeysPerRange, int prepKeysPerChunk) {
        super(Backend.CPU, true);
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        this.nodeSize = config.nodeSize();
        this.keysPerBuiltNode = config.keysPerBuiltNode();
        this.splitFill = Math.max(1, nodeSize * 3 / 4);
        this.threads = config.threads();
        this.lookupThreadCap = config.lookupThreadCap();
        this.prepParallelMin = Math.max(1, prepParallelMin);
        this.workers = new ForkJoinPool(threads);
        this.scratch = new BatchScratch.Pool(workers, threads, SCRATCH_KEPT, prepKeysPerRange, prepKeysPerChunk);
        this.pool = new NodePool(nodeSize);
        this.exactKeys = config.exactKeyTable() ? new ExactKeyTable(EXACT_TABLE_PARALLEL_MIN_KEYS) : null;
        layoutEmpty(0);
    }

    // ------------------------------------------------------------------------------------------------ build

    @Override
    protected void buildLocked(long[] keys, long[] values, int n, boolean keysSorted) {
        BatchArgs.checkPairs(keys, values, n, keysSorted);
        final BatchScratch s = scratch.take();
        try {
            final int unique = uniqueLastWins(keys, values, n, keysSorted, s);
            layoutSorted(s.keys, s.values, unique);
        } finally {
            scratch.give(s);
        }
    }

    /** Replaces the structure with {@code unique} strictly ascending pairs, one node per bucket. */
    private void layoutSorted(long[] keys, long[] values, int unique) {
        final int fill = keysPerBuiltNode;
        final int nodes = (int) ceilDiv(unique, fill);
        layoutEmpty(nodes);
        if (exactKeys != null) {
            exactKeys.clear(unique);
            exactKeys.putAll(keys, values, unique, threads, this::runPieces);
        }
        if (unique == 0) {
            return;
        }
        final long[] bMax = new long[nodes];
        final int[] heads = new int[nodes];
        runPieces(unique >= PARALLEL_MIN_KEYS ? pieceCount(nodes) : 1, nodes, (from, to) -> {
            for (int node = from; node < to; node++) {
                final int src = node * fill;
                final int len = Math.min(fill, unique - src);
                final int base = pool.slotOf(node);
                System.arraycopy(keys, src, pool.keySegment(node), base, len);
                System.arraycopy(values, src, pool.valueSegment(node), base, len);
                pool.nodeCount[node] = len;
                pool.nodeNext[node] = NO_NODE;
                bMax[node] = keys[src + len - 1];
                heads[node] = node;
            }
        });
        bMax[nodes - 1] = Long.MAX_VALUE;
        for (int node = 0; node < nodes; node++) {
            pool.nodeMax[node] = bMax[node];
        }
        bucketMax = bMax;
        bucketHead = heads;
        bucketCount = nodes;
        pool.linkedFirst(nodes);
        size = unique;
    }

    /** An empty structure (one bucket without nodes) whose node pool holds {@code capacity} nodes. */
    private void layoutEmpty(int capacity) {
        pool.reset(capacity);
        bucketCount = 1;
        bucketMax = new long[] {Long.MAX_VALUE};
        bucketHead = new int[] {NO_NODE};
        size = 0;
    }

    // ------------------------------------------------------------------------------------------------ upsert

    @Override
    protected void upsertLocked(long[] keys, long[] values, int n, boolean keysSorted) {
        BatchArgs.checkPairs(keys, values, n, keysSorted);
        final BatchScratch s = scratch.take();
        try {
            upsertUnique(uniqueLastWins(keys, values, n, keysSorted, s), s);
        } finally {
            scratch.give(s);
        }
    }

    /** Merges the {@code unique} sorted pairs of {@code s.keys/s.values} into the structure. */
    private void upsertUnique(int unique, BatchScratch s) {
        if (unique == 0) {
            return;
        }
        final long[] ks = s.keys;
        final long[] vs = s.values;
        final int[] starts = updatePieces(ks, unique);
        final int pieces = starts.length - 1;
        if (exactKeys != null) {
            // Grown before anything changes: a growth that fails leaves the index as it was.
            exactKeys.reserveFor(ks, unique, threads, this::runPieces);
        }

        // Pass 1 (read only): a bound on the new nodes each piece may need, so that all node ids are handed out
        // before any task runs and no array is reallocated under the tasks.
        final long[] need = new long[pieces];
        runPieces(pieces, p -> need[p] = nodesNeeded(ks, starts[p], starts[p + 1]));
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
        final int[] reserved = pool.reserve((int) totalNeed, s);

        // Pass 2: each piece merges its buckets, taking new nodes from its own slice of the reservation.
        final int[] used = new int[pieces];
        final long[] added = new long[pieces];
        final ChainPolicy.LongChains[] longChains = new ChainPolicy.LongChains[pieces];
        runPieces(pieces, p -> {
            final UpsertPiece piece = new UpsertPiece(reserved, reservedFrom[p]);
            mergePiece(ks, vs, starts[p], starts[p + 1], piece);
            used[p] = piece.nextReserved - reservedFrom[p];
            added[p] = piece.added;
            longChains[p] = piece.longChains;
        });
        for (int p = 0; p < pieces; p++) {
            size += added[p];
            pool.nodesInUse += used[p];
            for (int i = reservedFrom[p] + used[p]; i < reservedFrom[p + 1]; i++) {
                pool.free(reserved[i]);
            }
        }
        final ChainPolicy.Buckets cut = ChainPolicy.cutIntoOneBucketPerNode(longChains, bucketMax, bucketHead,
                bucketCount, pool.nodeNext, pool.nodeMax);
        if (cut != null) {
            bucketMax = cut.max();
            bucketHead = cut.head();
            bucketCount = cut.count();
        }
        if (exactKeys != null) {
            exactKeys.putAll(ks, vs, unique, threads, this::runPieces);
        }
    }

    /** Per-task state of an upsert: its node reservation, merge space and tallies. */
    private final class UpsertPiece {
        final int[] reserved;
        int nextReserved;
        long[] mergeKeys = new long[2 * nodeSize];
        long[] mergeValues = new long[2 * nodeSize];
        long added;
        /** Buckets whose chain this piece made too long (ChainPolicy). */
        final ChainPolicy.LongChains longChains = new ChainPolicy.LongChains();

        UpsertPiece(int[] reserved, int from) {
            this.reserved = reserved;
            this.nextReserved = from;
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
        int b = from < to ? bucketOf(ks[from]) : 0;
        while (j < to) {
            b = bucketAtOrAfter(ks[j], b);
            final long bMax = bucketMax[b];
            int node = bucketHead[b];
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
                final long max = pool.nodeMax[node];
                if (ks[j] > max) {
                    node = pool.nodeNext[node];
                    continue;
                }
                int end = j + 1;
                while (end < to && ks[end] <= max) {
                    end++;
                }
                final int merged = pool.nodeCount[node] + (end - j);
                if (merged > nodeSize) {
                    need += nodesFor(merged) - 1;
                }
                j = end;
                node = pool.nodeNext[node];
            }
        }
        return need;
    }

    /** Nodes that hold {@code keys} merged keys: one if they fit, else spread at most {@code splitFill} each. */
    private int nodesFor(int keys) {
        return keys <= nodeSize ? 1 : (int) ceilDiv(keys, splitFill);
    }

    private void mergePiece(long[] ks, long[] vs, int from, int to, UpsertPiece piece) {
        int j = from;
        int b = from < to ? bucketOf(ks[from]) : 0;
        while (j < to) {
            b = bucketAtOrAfter(ks[j], b);
            final long bMax = bucketMax[b];
            int node = bucketHead[b];
            if (node == NO_NODE) {
                int end = j;
                while (end < to && ks[end] <= bMax) {
                    end++;
                }
                final int first = piece.takeNode();
                final int chain = spread(ks, vs, j, end - j, first, bMax, NO_NODE, piece);
                bucketHead[b] = first;
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
                final long max = pool.nodeMax[node];
                if (ks[j] > max) {
                    node = pool.nodeNext[node];
                    walked++;
                    continue;
                }
                int end = j + 1;
                while (end < to && ks[end] <= max) {
                    end++;
                }
                final int after = pool.nodeNext[node];
                final int nodes = mergeIntoNode(node, ks, vs, j, end, piece);
                grew |= nodes > 1;
                walked += nodes;
                j = end;
                node = after;
            }
            if (grew) {
                for (; node != NO_NODE && walked <= ChainPolicy.MAX_CHAIN_NODES; node = pool.nodeNext[node]) {
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
        final long[] nk = pool.keySegment(node);
        final long[] nv = pool.valueSegment(node);
        final int count = pool.nodeCount[node];
        final int base = pool.slotOf(node);
        if (to - from == 1) {
            final long key = ks[from];
            final int at = lowerBound(nk, base, base + count, key);
            if (at < base + count && nk[at] == key) {
                nv[at] = vs[from];
                return 1;
            }
            if (count < nodeSize) {
                final int tail = base + count - at;
                System.arraycopy(nk, at, nk, at + 1, tail);
                System.arraycopy(nv, at, nv, at + 1, tail);
                nk[at] = key;
                nv[at] = vs[from];
                pool.nodeCount[node] = count + 1;
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
        return spread(mk, mv, 0, out, node, pool.nodeMax[node], pool.nodeNext[node], piece);
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
            final int base = pool.slotOf(node);
            System.arraycopy(srcK, src, pool.keySegment(node), base, take);
            System.arraycopy(srcV, src, pool.valueSegment(node), base, take);
            pool.nodeCount[node] = take;
            src += take;
            if (i == nodes - 1) {
                pool.nodeMax[node] = lastMax;
                pool.nodeNext[node] = after;
            } else {
                pool.nodeMax[node] = srcK[src - 1];
                final int next = piece.takeNode();
                pool.nodeNext[node] = next;
                node = next;
            }
        }
        return nodes;
    }

    // ------------------------------------------------------------------------------------------------ delete

    @Override
    protected void deleteLocked(long[] keys, int n, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        final BatchScratch s = scratch.take();
        try {
            deleteUnique(uniqueKeys(keys, n, keysSorted, s), s);
        } finally {
            scratch.give(s);
        }
    }

    /** Removes the {@code unique} sorted keys of {@code s.keys} where present. */
    private void deleteUnique(int unique, BatchScratch s) {
        if (unique == 0 || size == 0) {
            return;
        }
        final long[] ks = s.keys;
        final int[] starts = updatePieces(ks, unique);
        final int pieces = starts.length - 1;
        // A freed node held at least one deleted key, so piece p's freed ids fit in [starts[p], starts[p + 1]).
        final int[] freed = s.positions; // as long as the batch
        final int[] freedCount = new int[pieces];
        final long[] removed = new long[pieces];
        runPieces(pieces, p -> {
            final long r = deletePiece(ks, starts[p], starts[p + 1], freed, freedCount, p);
            removed[p] = r;
        });
        for (int p = 0; p < pieces; p++) {
            size -= removed[p];
            for (int i = 0; i < freedCount[p]; i++) {
                pool.free(freed[starts[p] + i]);
            }
            pool.nodesInUse -= freedCount[p];
        }
        if (exactKeys != null) {
            exactKeys.removeAll(ks, unique, threads, this::runPieces);
        }
    }

    private long deletePiece(long[] ks, int from, int to, int[] freed, int[] freedCount, int piece) {
        long removed = 0;
        int freedAt = from;
        int j = from;
        int b = from < to ? bucketOf(ks[from]) : 0;
        while (j < to) {
            b = bucketAtOrAfter(ks[j], b);
            final long bMax = bucketMax[b];
            int node = bucketHead[b];
            int prev = NO_NODE;
            while (j < to && ks[j] <= bMax) {
                if (node == NO_NODE) {
                    j++; // bucket without keys: nothing to delete
                    continue;
                }
                final long max = pool.nodeMax[node];
                if (ks[j] > max) {
                    prev = node;
                    node = pool.nodeNext[node];
                    continue;
                }
                int end = j + 1;
                while (end < to && ks[end] <= max) {
                    end++;
                }
                final int count = pool.nodeCount[node];
                final long[] nk = pool.keySegment(node);
                final long[] nv = pool.valueSegment(node);
                final int base = pool.slotOf(node);
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
                pool.nodeCount[node] = kept;
                final int next = pool.nodeNext[node];
                if (kept == 0) {
                    if (prev == NO_NODE) {
                        bucketHead[b] = next;
                    } else {
                        pool.nodeNext[prev] = next;
                        if (next == NO_NODE) {
                            pool.nodeMax[prev] = max; // the new last node covers the rest of the bucket
                        }
                    }
                    pool.nodeNext[node] = NO_NODE;
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

    // ------------------------------------------------------------------------------------------------ lookups

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

    @Override
    protected void getLocked(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkArray(valuesOut, "valuesOut", n);
        if (exactKeys == null) {
            lookup(keys, n, null, valuesOut, keysSorted,
                    (sorted, from, to, slots, keysOut, out) -> getSorted(sorted, from, to, slots, out));
            return;
        }
        onLookupShare(callThreads -> {
            runPieces(lookupPieces(n, callThreads), n, (from, to) -> exactKeys.get(keys, from, to, valuesOut));
            return null;
        });
    }

    private void lookup(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted,
                        LookupKernel kernel) {
        if (n == 0) {
            return;
        }
        onLookupShare(callThreads -> {
            lookup(keys, n, keysOut, valuesOut, keysSorted, kernel, callThreads);
            return null;
        });
    }

    private void lookup(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted,
                        LookupKernel kernel, int callThreads) {
        if (keysSorted) {
            runPieces(lookupPieces(n, callThreads), n,
                    (from, to) -> kernel.run(keys, from, to, null, keysOut, valuesOut));
            return;
        }
        final BatchScratch s = scratch.take();
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
            runPieces(lookupPieces(n, callThreads), n,
                    (from, to) -> kernel.run(sorted, from, to, slots, keysOut, valuesOut));
        } finally {
            scratch.give(s);
        }
    }

    private void getSorted(long[] keys, int from, int to, int[] slots, long[] valuesOut) {
        if (from >= to) {
            return;
        }
        int b = bucketOf(keys[from]);
        long bMax = bucketMax[b];
        int node = bucketHead[b];
        int at = 0;
        for (int i = from; i < to; i++) {
            final long q = keys[i];
            if (q > bMax) {
                b = bucketAtOrAfter(q, b + 1);
                bMax = bucketMax[b];
                node = bucketHead[b];
                at = 0;
            }
            long value = NOT_FOUND;
            if (node != NO_NODE) {
                while (pool.nodeMax[node] < q) {
                    node = pool.nodeNext[node];
                    at = 0;
                }
                final long[] nk = pool.keySegment(node);
                final int base = pool.slotOf(node);
                final int end = base + pool.nodeCount[node];
                final int p = lowerBound(nk, base + at, end, q);
                at = p - base;
                if (p < end && nk[p] == q) {
                    value = pool.valueSegment(node)[p];
                }
            }
            valuesOut[slots == null ? i : slots[i]] = value;
        }
    }

    @Override
    protected void ceilingLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkAnswerArrays(keysOut, valuesOut, n);
        lookup(keys, n, keysOut, valuesOut, keysSorted, this::ceilingSorted);
    }

    @Override
    protected void floorLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkAnswerArrays(keysOut, valuesOut, n);
        lookup(keys, n, keysOut, valuesOut, keysSorted, this::floorSorted);
    }

    private void ceilingSorted(long[] keys, int from, int to, int[] slots, long[] keysOut, long[] valuesOut) {
        if (from >= to) {
            return;
        }
        int b = bucketOf(keys[from]);
        long bMax = bucketMax[b];
        int node = bucketHead[b];
        int at = 0;
        // Buckets [scannedFrom, found) hold no keys; found is the next bucket with keys (bucketCount: none).
        int scannedFrom = Integer.MAX_VALUE;
        int found = -1;
        for (int i = from; i < to; i++) {
            final long q = keys[i];
            final int slot = slots == null ? i : slots[i];
            if (q > bMax) {
                b = bucketAtOrAfter(q, b + 1);
                bMax = bucketMax[b];
                node = bucketHead[b];
                at = 0;
            }
            if (node != NO_NODE) {
                while (pool.nodeMax[node] < q) {
                    node = pool.nodeNext[node];
                    at = 0;
                }
                final long[] nk = pool.keySegment(node);
                final int base = pool.slotOf(node);
                final int end = base + pool.nodeCount[node];
                final int p = lowerBound(nk, base + at, end, q);
                at = p - base;
                if (p < end) {
                    keysOut[slot] = nk[p];
                    valuesOut[slot] = pool.valueSegment(node)[p];
                    continue;
                }
                final int next = pool.nodeNext[node];
                if (next != NO_NODE) {
                    keysOut[slot] = pool.keySegment(next)[pool.slotOf(next)];
                    valuesOut[slot] = pool.valueSegment(next)[pool.slotOf(next)];
                    continue;
                }
            }
            if (!(scannedFrom <= b + 1 && b + 1 <= found)) {
                int f = b + 1;
                while (f < bucketCount && bucketHead[f] == NO_NODE) {
                    f++;
                }
                scannedFrom = b + 1;
                found = f;
            }
            if (found < bucketCount) {
                final int head = bucketHead[found];
                keysOut[slot] = pool.keySegment(head)[pool.slotOf(head)];
                valuesOut[slot] = pool.valueSegment(head)[pool.slotOf(head)];
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
        int b = bucketOf(keys[from]);
        long bMax = bucketMax[b];
        int node = bucketHead[b];
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
                b = bucketAtOrAfter(q, b + 1);
                bMax = bucketMax[b];
                node = bucketHead[b];
                prev = NO_NODE;
                at = 0;
            }
            if (node != NO_NODE) {
                while (pool.nodeMax[node] < q) {
                    prev = node;
                    node = pool.nodeNext[node];
                    at = 0;
                }
                final long[] nk = pool.keySegment(node);
                final int base = pool.slotOf(node);
                final int end = base + pool.nodeCount[node];
                final int p = upperBound(nk, base + at, end, q);
                at = p - base;
                if (p > base) {
                    keysOut[slot] = nk[p - 1];
                    valuesOut[slot] = pool.valueSegment(node)[p - 1];
                    continue;
                }
                if (prev != NO_NODE) {
                    final int last = pool.slotOf(prev) + pool.nodeCount[prev] - 1;
                    keysOut[slot] = pool.keySegment(prev)[last];
                    valuesOut[slot] = pool.valueSegment(prev)[last];
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
                while (f >= 0 && bucketHead[f] == NO_NODE && !(f <= scannedTo && f >= found)) {
                    f--;
                }
                if (f >= 0 && bucketHead[f] == NO_NODE) {
                    f = found; // reached the range already scanned: its answer holds
                } else if (f >= 0) {
                    int last = bucketHead[f];
                    while (pool.nodeNext[last] != NO_NODE) {
                        last = pool.nodeNext[last];
                    }
                    final int slotOfLast = pool.slotOf(last) + pool.nodeCount[last] - 1;
                    foundKey = pool.keySegment(last)[slotOfLast];
                    foundValue = pool.valueSegment(last)[slotOfLast];
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

    // ------------------------------------------------------------------------------------------------ range, export

    @Override
    protected RangeResult rangeLocked(long[] lo, long[] hi, int n, int limitPerRange) {
        BatchArgs.checkRanges(lo, hi, n, limitPerRange);
        final int[] offsets = new int[n + 1];
        return onLookupShare(callThreads -> ranges(lo, hi, n, limitPerRange, offsets, lookupPieces(n, callThreads)));
    }

    private RangeResult ranges(long[] lo, long[] hi, int n, int limitPerRange, int[] offsets, int pieces) {
        runPieces(pieces, n, (from, to) -> {
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
        runPieces(pieces, n, (from, to) -> {
            for (int i = from; i < to; i++) {
                scan(lo[i], hi[i], offsets[i + 1] - offsets[i], keys, values, offsets[i]);
            }
        });
        return new RangeResult(offsets, keys, values);
    }

    @Override
    protected int exportFromLocked(long fromKey, long[] keysOut, long[] valuesOut) {
        BatchArgs.checkExport(keysOut, valuesOut);
        if (keysOut.length == 0) {
            return 0;
        }
        return scan(fromKey, Long.MAX_VALUE, keysOut.length, keysOut, valuesOut, 0);
    }

    /**
     * Visits the stored pairs with keys in {@code [lo, hi]} in key order, at most {@code limit}, copying them to
     * {@code keysOut/valuesOut} from {@code at} unless {@code keysOut} is null.
     *
     * @return the number of pairs visited
     */
    private int scan(long lo, long hi, int limit, long[] keysOut, long[] valuesOut, int at) {
        int b = bucketOf(lo);
        int node = bucketHead[b];
        int p = 0;
        if (node != NO_NODE) {
            while (pool.nodeMax[node] < lo) {
                node = pool.nodeNext[node];
            }
            final int base = pool.slotOf(node);
            p = lowerBound(pool.keySegment(node), base, base + pool.nodeCount[node], lo) - base;
        }
        int found = 0;
        while (found < limit) {
            if (node == NO_NODE) {
                if (bucketMax[b] >= hi || b + 1 >= bucketCount) {
                    break; // later buckets hold only keys above hi
                }
                node = bucketHead[++b];
                p = 0;
                continue;
            }
            final int count = pool.nodeCount[node];
            if (p >= count) {
                node = pool.nodeNext[node];
                p = 0;
                continue;
            }
            final long[] nk = pool.keySegment(node);
            final int base = pool.slotOf(node);
            final int take = Math.min(count - p, limit - found);
            int k = 0;
            while (k < take && nk[base + p + k] <= hi) {
                k++;
            }
            if (keysOut != null) {
                System.arraycopy(nk, base + p, keysOut, at + found, k);
                System.arraycopy(pool.valueSegment(node), base + p, valuesOut, at + found, k);
            }
            found += k;
            if (k < take) {
                break; // reached a key above hi
            }
            p += k;
        }
        return found;
    }

    // ------------------------------------------------------------------------------------------------ restructure

    @Override
    protected long restructureLocked() {
        final long before = pool.nodesInUse;
        final int fill = keysPerBuiltNode;
        final long total = size;
        if (ceilDiv(total, fill) > NodePool.MAX_NODES) {
            throw new IllegalStateException("index too large to restructure at " + fill + " keys per node");
        }
        final int nodes = (int) ceilDiv(total, fill);
        // Rank of each piece's first key, so that tasks copy disjoint parts of the new layout.
        final int pieces = total >= PARALLEL_MIN_KEYS ? pieceCount(bucketCount) : 1;
        final int[] bucketFrom = new int[pieces + 1];
        for (int p = 0; p <= pieces; p++) {
            bucketFrom[p] = (int) ((long) bucketCount * p / pieces);
        }
        final long[] rankFrom = new long[pieces + 1];
        runPieces(pieces, p -> {
            long keys = 0;
            for (int b = bucketFrom[p]; b < bucketFrom[p + 1]; b++) {
                for (int node = bucketHead[b]; node != NO_NODE; node = pool.nodeNext[node]) {
                    keys += pool.nodeCount[node];
                }
            }
            rankFrom[p + 1] = keys;
        });
        for (int p = 0; p < pieces; p++) {
            rankFrom[p + 1] += rankFrom[p];
        }
        final long[][] newKeys = pool.newSegments(nodes);
        final long[][] newValues = pool.newSegments(nodes);
        runPieces(pieces, p -> {
            long rank = rankFrom[p];
            for (int b = bucketFrom[p]; b < bucketFrom[p + 1]; b++) {
                for (int node = bucketHead[b]; node != NO_NODE; node = pool.nodeNext[node]) {
                    final long[] srcKeys = pool.keySegment(node);
                    final long[] srcValues = pool.valueSegment(node);
                    int src = pool.slotOf(node);
                    int left = pool.nodeCount[node];
                    while (left > 0) {
                        final int target = (int) (rank / fill);
                        final int slot = (int) (rank - (long) target * fill);
                        final int len = Math.min(left, fill - slot);
                        final int dst = pool.slotOf(target) + slot;
                        System.arraycopy(srcKeys, src, pool.segmentOf(newKeys, target), dst, len);
                        System.arraycopy(srcValues, src, pool.segmentOf(newValues, target), dst, len);
                        src += len;
                        left -= len;
                        rank += len;
                    }
                }
            }
        });
        layoutEmpty(0);
        if (nodes > 0) {
            final long[] bMax = new long[nodes];
            final int[] heads = new int[nodes];
            final int[] counts = new int[nodes];
            final int[] next = new int[nodes];
            for (int node = 0; node < nodes; node++) {
                counts[node] = (int) Math.min(fill, total - (long) node * fill);
                bMax[node] = pool.segmentOf(newKeys, node)[pool.slotOf(node) + counts[node] - 1];
                heads[node] = node;
                next[node] = NO_NODE;
            }
            bMax[nodes - 1] = Long.MAX_VALUE;
            pool.adoptLayout(nodes, newKeys, newValues, counts, next, bMax.clone());
            bucketMax = bMax;
            bucketHead = heads;
            bucketCount = nodes;
            size = total;
        }
        if (exactKeys != null) {
            exactKeys.fit();
        }
        return before - pool.nodesInUse;
    }

    // ------------------------------------------------------------------------------------------------ state

    @Override
    protected long sizeLocked() {
        return size;
    }

    /**
     * {@code nodes}: linked nodes; {@code freeNodes}: pool nodes not linked (the free list and never used ones);
     * {@code bytes}: the capacity of every array of the structure (batch scratch not included).
     */
    @Override
    protected IndexStats statsLocked() {
        long longest = 0;
        for (int b = 0; b < bucketCount; b++) {
            long chain = 0;
            for (int node = bucketHead[b]; node != NO_NODE; node = pool.nodeNext[node]) {
                chain++;
            }
            longest = Math.max(longest, chain);
        }
        final long bytes = 8L * bucketMax.length + 4L * bucketHead.length + pool.bytes()
                + (exactKeys == null ? 0 : exactKeys.bytes());
        return new IndexStats(Backend.CPU, size, bucketCount, pool.nodesInUse, pool.nodeCapacity - pool.nodesInUse,
                nodeSize, longest, bytes);
    }

    /** Stops the workers' threads and drops every array, so that a closed index that stays referenced costs nothing. */
    @Override
    protected void closeLocked() {
        workers.shutdown();
        workers = null;
        scratch.clear();
        scratch = null;
        bucketMax = null;
        bucketHead = null;
        pool.clear();
        exactKeys = null;
    }

    /**
     * Checks every structural invariant of the class comment and the node accounting; throws
     * {@link IllegalStateException} naming the first violation. Walks the whole index: for tests.
     */
    void verifyStructure() {
        final Lock held = enterLookup();
        try {
            verifyStructureLocked();
        } finally {
            held.unlock();
        }
    }

    private void verifyStructureLocked() {
        final int capacity = pool.nodeCount.length;
        final boolean[] linked = new boolean[capacity];
        long keys = 0;
        long nodes = 0;
        for (int b = 0; b < bucketCount; b++) {
            if (b > 0 && bucketMax[b] <= bucketMax[b - 1]) {
                throw new IllegalStateException("bucketMax not ascending at bucket " + b);
            }
            boolean haveLower = b > 0;
            long lower = b > 0 ? bucketMax[b - 1] : 0;
            int last = NO_NODE;
            for (int node = bucketHead[b]; node != NO_NODE; node = pool.nodeNext[node]) {
                if (node < 0 || node >= pool.nodesHandedOut || linked[node]) {
                    throw new IllegalStateException("bad or repeated node " + node + " in bucket " + b);
                }
                linked[node] = true;
                nodes++;
                final int count = pool.nodeCount[node];
                if (count < 1 || count > nodeSize) {
                    throw new IllegalStateException("node " + node + " holds " + count + " keys");
                }
                final int base = pool.slotOf(node);
                for (int i = 0; i < count; i++) {
                    final long k = pool.keySegment(node)[base + i];
                    if ((haveLower && k <= lower) || k > pool.nodeMax[node]) {
                        throw new IllegalStateException("key " + k + " outside node " + node + " of bucket " + b);
                    }
                    if (pool.valueSegment(node)[base + i] == NOT_FOUND) {
                        throw new IllegalStateException("reserved value stored for key " + k);
                    }
                    if (exactKeys != null && exactKeys.get(k) != pool.valueSegment(node)[base + i]) {
                        throw new IllegalStateException("the exact-key table holds " + exactKeys.get(k) + " for key " + k
                                + ", the nodes " + pool.valueSegment(node)[base + i]);
                    }
                    lower = k;
                    haveLower = true;
                }
                lower = pool.nodeMax[node];
                keys += count;
                last = node;
            }
            if (last != NO_NODE && pool.nodeMax[last] != bucketMax[b]) {
                throw new IllegalStateException("last node of bucket " + b + " does not end at bucketMax");
            }
        }
        if (bucketMax[bucketCount - 1] != Long.MAX_VALUE) {
            throw new IllegalStateException("last bucketMax is not Long.MAX_VALUE");
        }
        if (keys != size) {
            throw new IllegalStateException("size " + size + " but " + keys + " keys linked");
        }
        if (exactKeys != null && exactKeys.size() != size) {
            throw new IllegalStateException("size " + size + " but the exact-key table holds " + exactKeys.size());
        }
        if (nodes != pool.nodesInUse) {
            throw new IllegalStateException("nodesInUse " + pool.nodesInUse + " but " + nodes + " nodes linked");
        }
        for (int i = 0; i < pool.freeCount; i++) {
            final int node = pool.freeNodes[i];
            if (node < 0 || node >= pool.nodesHandedOut || linked[node]) {
                throw new IllegalStateException("free list entry " + node + " is linked, repeated or never handed out");
            }
            linked[node] = true;
        }
        if (pool.nodesInUse + pool.freeCount != pool.nodesHandedOut) {
            throw new IllegalStateException("nodes handed out " + pool.nodesHandedOut + " != in use " + pool.nodesInUse
                    + " + free " + pool.freeCount);
        }
    }

    // ------------------------------------------------------------------------------------------------ batch prep

    /** Whether an update batch of {@code n} keys is sorted and reduced on the workers. */
    private boolean prepInParallel(int n) {
        return threads > 1 && n >= prepParallelMin && n <= PREP_PARALLEL_MAX_KEYS;
    }

    /** Sorts (stably) and reduces the pairs to unique keys, last occurrence wins, into {@code s.keys/s.values}. */
    private int uniqueLastWins(long[] keys, long[] values, int n, boolean keysSorted, BatchScratch s) {
        s.ensure(n);
        if (prepInParallel(n)) {
            return s.prep.sortUnique(keys, values, n, keysSorted, s.keys, s.values, s.positions);
        }
        final long[] uk = s.keys;
        final long[] uv = s.values;
        int unique = 0;
        if (keysSorted) {
            for (int i = 0; i < n; i++) {
                if (unique > 0 && uk[unique - 1] == keys[i]) {
                    uv[unique - 1] = values[i];
                } else {
                    uk[unique] = keys[i];
                    uv[unique++] = values[i];
                }
            }
            return unique;
        }
        final int[] positions = s.positions;
        s.sorter.sort(keys, n, uk, positions);
        for (int i = 0; i < n; i++) {
            final long k = uk[i];
            if (unique > 0 && uk[unique - 1] == k) {
                uv[unique - 1] = values[positions[i]]; // equal keys keep batch order: the later one wins
            } else {
                uk[unique] = k;
                uv[unique++] = values[positions[i]];
            }
        }
        return unique;
    }

    /** Sorts and reduces the keys to unique ones in {@code s.keys}. */
    private int uniqueKeys(long[] keys, int n, boolean keysSorted, BatchScratch s) {
        s.ensure(n);
        if (prepInParallel(n)) {
            return s.prep.sortUnique(keys, null, n, keysSorted, s.keys, null, s.positions);
        }
        final long[] uk = s.keys;
        if (!keysSorted) {
            s.sorter.sort(keys, n, uk, s.positions);
        } else {
            System.arraycopy(keys, 0, uk, 0, n);
        }
        int unique = 0;
        for (int i = 0; i < n; i++) {
            if (unique == 0 || uk[unique - 1] != uk[i]) {
                uk[unique++] = uk[i];
            }
        }
        return unique;
    }

    // ------------------------------------------------------------------------------------------------ parallelism

    /**
     * Cuts a sorted unique update batch into pieces at bucket boundaries, so that no two pieces touch the same
     * bucket: each cut moves back to the first key above {@code bucketMax} of the bucket before (the paper's
     * common step). Pieces are balanced by keys, not buckets, so skewed batches still spread over the threads.
     */
    private int[] updatePieces(long[] ks, int n) {
        final int pieces = n >= PARALLEL_MIN_KEYS ? pieceCount(n) : 1;
        final int[] starts = new int[pieces + 1];
        starts[pieces] = n;
        for (int p = 1; p < pieces; p++) {
            final int probe = (int) ((long) n * p / pieces);
            final int b = bucketOf(ks[probe]);
            final int start = b == 0 ? 0 : upperBound(ks, 0, probe, bucketMax[b - 1]);
            starts[p] = Math.max(start, starts[p - 1]);
        }
        return starts;
    }

    /**
     * Runs a lookup call on its share of the workers, counted in flight meanwhile: at most the config's lookup
     * threads, and the lookups running now split the workers, so that calls of several threads at once (a dimension
     * shared by a task manager's subtasks) run on their own threads instead of queueing for the same workers.
     */
    private <T> T onLookupShare(IntFunction<T> call) {
        final int callThreads = lookupShare(lookupThreadCap, threads, lookupsInFlight.incrementAndGet());
        try {
            return call.apply(callThreads);
        } finally {
            lookupsInFlight.decrementAndGet();
        }
    }

    /** Threads of a lookup call: at most {@code cap}, an equal part of {@code threads} with the others, at least 1. */
    static int lookupShare(int cap, int threads, int inFlight) {
        return Math.max(1, Math.min(cap, threads / Math.max(1, inFlight)));
    }

    private int lookupPieces(int n, int callThreads) {
        if (callThreads == 1 || n < PARALLEL_MIN_KEYS) {
            return 1;
        }
        return pieceCount(n, callThreads);
    }

    private int pieceCount(int work) {
        return pieceCount(work, threads);
    }

    /** Pieces of {@code work} for {@code workers} threads: a few each, none below the smallest worth forking. */
    private static int pieceCount(int work, int workers) {
        return (int) Math.max(1, Math.min((long) workers * PIECES_PER_THREAD, work / MIN_KEYS_PER_PIECE));
    }

    /** Runs {@code body} for pieces {@code 0..pieces-1}, in parallel when there is more than one. */
    private void runPieces(int pieces, IntConsumer body) {
        if (pieces <= 1 || threads == 1) {
            for (int p = 0; p < pieces; p++) {
                body.accept(p);
            }
            return;
        }
        Pieces.run(workers, pieces, body);
    }

    /** Splits {@code [0, n)} into {@code pieces} even parts and runs {@code body(from, to)} on each. */
    private void runPieces(int pieces, int n, RangeBody body) {
        if (n == 0) {
            return;
        }
        runPieces(pieces, p -> body.run((int) ((long) n * p / pieces), (int) ((long) n * (p + 1) / pieces)));
    }

    @FunctionalInterface
    private interface RangeBody {
        void run(int from, int to);
    }

    // ------------------------------------------------------------------------------------------------ searching

    /** The bucket of {@code key}: the first whose max is {@code >= key}. */
    private int bucketOf(long key) {
        return lowerBound(bucketMax, 0, bucketCount - 1, key); // the last bucket's max is Long.MAX_VALUE
    }

    /** The bucket of {@code key}, known to be {@code >= from}: gallops forward, cheap for nearby buckets. */
    private int bucketAtOrAfter(long key, int from) {
        final long[] bMax = bucketMax;
        if (bMax[from] >= key) {
            return from;
        }
        int lo = from + 1;
        int step = 1;
        int hi = lo;
        final int last = bucketCount - 1;
        while (hi < last && bMax[hi] < key) {
            lo = hi + 1;
            step <<= 1;
            hi = (int) Math.min(last, (long) hi + step);
        }
        return lowerBound(bMax, lo, hi, key); // bMax[hi] >= key, or hi is the last bucket
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
