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
import java.util.function.Supplier;

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
 *
 * <p>This class holds the structure, its build and the workers; each job on it is a file of its own that reads and
 * writes these fields: {@link UniqueBatch} (a batch sorted and reduced), {@link UpsertMerge}, {@link Deletes},
 * {@link PointLookups} (gets, ceilings, floors), {@link RangeScan} (ranges, the export), {@link Restructure} and
 * {@link StructureCheck}.
 */
public final class CpuFlixIndex extends AbstractFlixIndex {

    /** Marks the end of a chain and a bucket without nodes. */
    static final int NO_NODE = -1;
    /** Below this many keys a batch runs on the caller's thread: forking costs more than it saves. */
    static final int PARALLEL_MIN_KEYS = 4096;
    /** Smallest number of keys worth one parallel piece. */
    private static final int MIN_KEYS_PER_PIECE = 1024;
    /** Pieces per thread, so that uneven pieces balance out. */
    private static final int PIECES_PER_THREAD = 4;
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

    final int nodeSize;
    final int keysPerBuiltNode;
    final int splitFill;
    final int threads;
    /**
     * The threads the update running now is split for: {@link #threads}, or fewer where a {@link ShardedCpuIndex}
     * runs its shards' updates at once ({@link #updateOn}). Written and read only under the exclusive lock.
     */
    int updateThreads;
    /** From this many keys (and more than one thread) an update batch is prepared on the workers. */
    final int prepParallelMin;
    /** The most threads one lookup call is split for. */
    final int lookupThreadCap;
    /** The workers of parallel batches; null once closed, as every array below. */
    ForkJoinPool workers;
    /** Whether this index made its workers (else a {@link ShardedCpuIndex} lends its own), so shuts them down. */
    private final boolean ownsWorkers;
    BatchScratch.Pool scratch;
    /** Lookup calls running now: they share the workers (see onLookupShare). */
    private final AtomicInteger lookupsInFlight = new AtomicInteger();

    int bucketCount;
    long[] bucketMax;
    int[] bucketHead;

    /** Most keys a call's scratch keeps room for between calls. */
    final int scratchKept;
    /** The nodes: keys, values, counts, links, max keys, and the free list. */
    final NodePool pool;
    long size;
    /** Every key with its value, for exact gets; null where the config leaves it out. */
    ExactKeyTable exactKeys;

    /** The jobs on the structure, one file each. */
    private final UniqueBatch uniqueBatch = new UniqueBatch(this);
    private final UpsertMerge upserts = new UpsertMerge(this);
    private final Deletes deletes = new Deletes(this);
    private final PointLookups lookups = new PointLookups(this);
    private final RangeScan ranges = new RangeScan(this);

    public CpuFlixIndex(FlixConfig config) {
        this(config, PREP_PARALLEL_MIN_KEYS, PREP_MIN_KEYS_PER_RANGE, PREP_MIN_KEYS_PER_CHUNK);
    }

    /**
     * An index whose update batches are sorted and reduced on the workers from {@code prepParallelMin} keys, in
     * pieces of at least {@code prepKeysPerRange} keys and chunks of at least {@code prepKeysPerChunk}; tests force
     * the parallel path with small ones.
     */
    CpuFlixIndex(FlixConfig config, int prepParallelMin, int prepKeysPerRange, int prepKeysPerChunk) {
        this(config, prepParallelMin, prepKeysPerRange, prepKeysPerChunk, null, SCRATCH_KEPT);
    }

    /**
     * A shard of a {@link ShardedCpuIndex}: its parallel work runs on the sharded index's {@code workers}, and its
     * scratch keeps room for at most {@code scratchKept} keys between calls.
     */
    CpuFlixIndex(FlixConfig config, ForkJoinPool workers, int scratchKept) {
        this(config, PREP_PARALLEL_MIN_KEYS, PREP_MIN_KEYS_PER_RANGE, PREP_MIN_KEYS_PER_CHUNK, workers, scratchKept);
    }

    private CpuFlixIndex(FlixConfig config, int prepParallelMin, int prepKeysPerRange, int prepKeysPerChunk,
                         ForkJoinPool lentWorkers, int scratchKept) {
        super(Backend.CPU, true);
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        this.nodeSize = config.nodeSize();
        this.keysPerBuiltNode = config.keysPerBuiltNode();
        this.splitFill = Math.max(1, nodeSize * 3 / 4);
        this.threads = config.threads();
        this.updateThreads = threads;
        this.lookupThreadCap = config.lookupThreadCap();
        this.prepParallelMin = Math.max(1, prepParallelMin);
        this.ownsWorkers = lentWorkers == null;
        this.workers = ownsWorkers ? new ForkJoinPool(threads) : lentWorkers;
        this.scratchKept = scratchKept;
        this.scratch = new BatchScratch.Pool(workers, threads, scratchKept, prepKeysPerRange, prepKeysPerChunk);
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
            final int unique = uniqueBatch.uniqueLastWins(keys, values, n, keysSorted, s);
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
            exactKeys.clear(unique, updateThreads, this::runPieces);
            exactKeys.putAll(keys, values, unique, updateThreads, this::runPieces);
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
    void layoutEmpty(int capacity) {
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
            upserts.upsertUnique(uniqueBatch.uniqueLastWins(keys, values, n, keysSorted, s), s);
        } finally {
            scratch.give(s);
        }
    }

    // ------------------------------------------------------------------------------------------------ delete

    @Override
    protected void deleteLocked(long[] keys, int n, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        final BatchScratch s = scratch.take();
        try {
            deletes.deleteUnique(uniqueBatch.uniqueKeys(keys, n, keysSorted, s), s);
        } finally {
            scratch.give(s);
        }
    }

    // ------------------------------------------------------------------------------------------------ lookups

    @Override
    protected void getLocked(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkArray(valuesOut, "valuesOut", n);
        lookups.get(keys, n, valuesOut, keysSorted);
    }

    @Override
    protected void ceilingLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkAnswerArrays(keysOut, valuesOut, n);
        lookups.ceiling(keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    protected void floorLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkAnswerArrays(keysOut, valuesOut, n);
        lookups.floor(keys, n, keysOut, valuesOut, keysSorted);
    }

    // ------------------------------------------------------------------------------------------------ range, export

    @Override
    protected RangeResult rangeLocked(long[] lo, long[] hi, int n, int limitPerRange) {
        BatchArgs.checkRanges(lo, hi, n, limitPerRange);
        final int[] offsets = new int[n + 1];
        return onLookupShare(callThreads -> ranges.ranges(lo, hi, n, limitPerRange, offsets,
                lookupPieces(n, callThreads)));
    }

    @Override
    protected int exportFromLocked(long fromKey, long[] keysOut, long[] valuesOut) {
        BatchArgs.checkExport(keysOut, valuesOut);
        if (keysOut.length == 0) {
            return 0;
        }
        return ranges.scan(fromKey, Long.MAX_VALUE, keysOut.length, keysOut, valuesOut, 0);
    }

    /**
     * As {@link #exportFromLocked}, into {@code keysOut/valuesOut} from index {@code at}: a {@link ShardedCpuIndex}
     * pages through its shards into one pair of arrays.
     */
    int exportFromLocked(long fromKey, long[] keysOut, long[] valuesOut, int at) {
        final int room = keysOut.length - at;
        return room <= 0 ? 0 : ranges.scan(fromKey, Long.MAX_VALUE, room, keysOut, valuesOut, at);
    }

    // ------------------------------------------------------------------------------------------------ restructure

    @Override
    protected long restructureLocked() {
        return new Restructure(this).run();
    }

    // ------------------------------------------------------------------------------------------------ as a shard

    /**
     * Runs {@code update} (one of this index's updates, {@code build}, {@code upsert}, {@code delete} or
     * {@code restructure}) split for {@code callThreads} threads instead of the config's: a {@link ShardedCpuIndex}
     * runs one thread per shard where a batch spreads over its shards, all of them where it falls in one.
     */
    <T> T updateOn(int callThreads, Supplier<T> update) {
        final Lock held = enterUpdate();
        try {
            updateThreads = Math.max(1, Math.min(threads, callThreads));
            return update.get();
        } finally {
            updateThreads = threads;
            held.unlock();
        }
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
        if (ownsWorkers) {
            workers.shutdown();
        }
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
            new StructureCheck(this).run();
        } finally {
            held.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------------ parallelism

    /**
     * Cuts a sorted unique update batch into pieces at bucket boundaries, so that no two pieces touch the same
     * bucket: each cut moves back to the first key above {@code bucketMax} of the bucket before (the paper's
     * common step). Pieces are balanced by keys, not buckets, so skewed batches still spread over the threads.
     */
    int[] updatePieces(long[] ks, int n) {
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
    <T> T onLookupShare(IntFunction<T> call) {
        return onLookupShare(lookupsInFlight, lookupThreadCap, threads, call);
    }

    /**
     * As {@link #onLookupShare(IntFunction)} for any index whose lookup calls share {@code threads} workers (a
     * {@link ShardedCpuIndex} too), counting its calls in flight in {@code inFlight}.
     */
    static <T> T onLookupShare(AtomicInteger inFlight, int cap, int threads, IntFunction<T> call) {
        final int callThreads = lookupShare(cap, threads, inFlight.incrementAndGet());
        try {
            return call.apply(callThreads);
        } finally {
            inFlight.decrementAndGet();
        }
    }

    /** Threads of a lookup call: at most {@code cap}, an equal part of {@code threads} with the others, at least 1. */
    static int lookupShare(int cap, int threads, int inFlight) {
        return Math.max(1, Math.min(cap, threads / Math.max(1, inFlight)));
    }

    /** Pieces of a lookup call of {@code n} keys on {@code callThreads} threads: one below the parallel threshold. */
    static int lookupPieces(int n, int callThreads) {
        if (callThreads == 1 || n < PARALLEL_MIN_KEYS) {
            return 1;
        }
        return pieceCount(n, callThreads);
    }

    /** Pieces of an update's {@code work}: one where the update runs on one thread. */
    int pieceCount(int work) {
        return updateThreads == 1 ? 1 : pieceCount(work, updateThreads);
    }

    /** Pieces of {@code work} for {@code workers} threads: a few each, none below the smallest worth forking. */
    private static int pieceCount(int work, int workers) {
        return (int) Math.max(1, Math.min((long) workers * PIECES_PER_THREAD, work / MIN_KEYS_PER_PIECE));
    }

    /** Runs {@code body} for pieces {@code 0..pieces-1}, in parallel when there is more than one. */
    void runPieces(int pieces, IntConsumer body) {
        if (pieces <= 1 || threads == 1) {
            for (int p = 0; p < pieces; p++) {
                body.accept(p);
            }
            return;
        }
        Pieces.run(workers, pieces, body);
    }

    /** Splits {@code [0, n)} into {@code pieces} even parts and runs {@code body(from, to)} on each. */
    void runPieces(int pieces, int n, RangeBody body) {
        if (n == 0) {
            return;
        }
        runPieces(pieces, p -> body.run((int) ((long) n * p / pieces), (int) ((long) n * (p + 1) / pieces)));
    }

    @FunctionalInterface
    interface RangeBody {
        void run(int from, int to);
    }

    // ------------------------------------------------------------------------------------------------ searching

    /** The bucket of {@code key}: the first whose max is {@code >= key}. */
    int bucketOf(long key) {
        return lowerBound(bucketMax, 0, bucketCount - 1, key); // the last bucket's max is Long.MAX_VALUE
    }

    /** The bucket of {@code key}, known to be {@code >= from}: gallops forward, cheap for nearby buckets. */
    int bucketAtOrAfter(long key, int from) {
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

    static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
