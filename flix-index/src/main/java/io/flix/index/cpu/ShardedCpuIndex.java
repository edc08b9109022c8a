package io.flix.index.cpu;

import io.flix.index.AbstractFlixIndex;
import io.flix.index.Backend;
import io.flix.index.BatchArgs;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.IndexStats;
import io.flix.index.RangeResult;
import io.flix.index.SortedPairs;
import io.flix.index.sort.SortedSearch;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;

/**
 * A CPU index cut into key ranges, each a {@link CpuFlixIndex} of its own (a shard), so that an update uses every
 * core at the cost per key of one thread: a batch spread over the ranges is cut into the shards' parts, which are
 * applied at once, each on one thread. One index's update split over the same threads costs several times the work a
 * key (its sort, its exact-key table's writes and its merges reach across the whole structure), which is why the
 * keyed mode's slices, one index per subtask, loaded faster than a task manager's one shared index.
 *
 * <p>The ranges follow the keys: an empty index cuts them from its first large batch (or a build from its pairs) at
 * a sample's quantiles; after an update that leaves one shard holding more than {@value #SKEW} times its even share,
 * where the index has grown or shrunk by half since its last cut, every shard is exported and the keys are cut anew
 * at exact quantiles (a cost of the index's size, paid after growth by half, so a constant share per key). A batch
 * whose part for one shard is too large to run beside the others (keys in ascending order appended at the top, say)
 * first cuts that shard into pieces at the part's quantiles, so that it spreads; once the shards pass twice the
 * configured count, every shard is cut anew. A part of a few hot keys is not cut: such a batch is applied shard by
 * shard, each on every thread, as one index would.
 *
 * <p>An exact get goes key by key to its shard's exact-key table ({@link RangeRouter}). Floors, ceilings and ranges
 * are cut into the shards' parts as updates are; a floor (ceiling) that its shard cannot answer takes the largest
 * (smallest) pair of the nearest shard below (above) that holds one, kept after every update. A range that crosses shards is the
 * concatenation of its shards' answers, in key order. The answers equal one {@link CpuFlixIndex}'s for every call.
 *
 * <p>Concurrency as {@link FlixIndex} says, held by this index's lock: the shards are reached only under it (their
 * own locks are not taken for lookups). Lookups run in parallel, each on its caller's thread, or split over the shards
 * on the workers where a call runs alone; the shards' parallel work runs on this index's workers.
 */
public final class ShardedCpuIndex extends AbstractFlixIndex {

    /** Fewest keys of an index, or of the first batch into an empty one, that the ranges are cut for. */
    static final int CUT_MIN_KEYS = 1 << 16;
    /** Keys sampled per shard to cut a batch into ranges. */
    private static final int SAMPLES_PER_SHARD = 1024;
    /** A shard (or a batch's part) above this multiple of an even share is out of balance. */
    private static final int SKEW = 2;
    /** Fewest keys a shard's scratch keeps room for between calls: a spread batch's part of up to 2^22 keys. */
    static final int SHARD_SCRATCH_KEPT_MIN = 1 << 16;
    /** Largest shard, in batches of the update, that a part too large to spread cuts into pieces. */
    private static final int SPLIT_SHARD_MAX_BATCHES = 4;
    /** Fewest keys of one chunk when a batch is cut into parts on several threads. */
    private static final int MIN_KEYS_PER_CHUNK = 1 << 14;

    private final int shardCount;
    private final int threads;
    private final int lookupThreadCap;
    private final int cutMinKeys;
    /** A shard's config: every thread for updates that fall into it alone, lookups on the caller's thread. */
    private final FlixConfig shardConfig;
    private ForkJoinPool workers;
    private final AtomicInteger lookupsInFlight = new AtomicInteger();
    /** Scratch of lookup calls, one taken per call. */
    private final ConcurrentLinkedQueue<ShardParts> lookupParts = new ConcurrentLinkedQueue<>();
    /** The chunks of a batch's cut, on the workers. */
    private final ShardParts.Runner onWorkers = (pieces, body) -> runOnWorkers(pieces, true, body);
    /** Scratch of updates, which run alone. */
    private ShardParts updateParts = new ShardParts();

    // written under the exclusive lock
    /** Shards in key order: shard s holds the keys from its range's lower bound to the next one's. */
    private CpuFlixIndex[] shards;
    /** The ranges' lower bounds, strictly ascending from {@code Long.MIN_VALUE}, one per shard. */
    private RangeRouter router;
    /** The shards' exact-key tables, in shard order (nulls where the config leaves them out). */
    private ExactKeyTable[] exactTables;
    private long size;
    /** The size at the last cut of the ranges. */
    private long sizeAtCut;
    /** Per shard, the largest pair of the shards below it ({@code NOT_FOUND} value where they hold none). */
    private long[] floorKeyBelow;
    private long[] floorValueBelow;
    /** Per shard, the smallest pair of the shards above it. */
    private long[] ceilingKeyAbove;
    private long[] ceilingValueAbove;

    public ShardedCpuIndex(FlixConfig config) {
        this(config, CUT_MIN_KEYS);
    }

    /** An index that cuts its ranges from {@code cutMinKeys} keys; tests cut tiny indexes. */
    ShardedCpuIndex(FlixConfig config, int cutMinKeys) {
        super(Backend.CPU, true);
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        this.shardCount = config.shards();
        this.threads = config.threads();
        this.lookupThreadCap = config.lookupThreadCap();
        this.cutMinKeys = Math.max(shardCount, cutMinKeys);
        this.shardConfig = config.toBuilder().shards(1).lookupThreads(1).build();
        this.workers = new ForkJoinPool(threads);
        replaceShards(new CpuFlixIndex[] {newShard()}, new RangeRouter(new long[] {Long.MIN_VALUE}));
    }

    private CpuFlixIndex newShard() {
        return new CpuFlixIndex(shardConfig, workers, scratchKeptPerShard());
    }

    /**
     * Scratch room each shard keeps between calls: together about what one index keeps, so that many shards that
     * each once took a large part (a skewed batch goes to one shard whole) do not hold many batches' worth of heap.
     */
    private int scratchKeptPerShard() {
        return Math.max(SHARD_SCRATCH_KEPT_MIN, CpuFlixIndex.SCRATCH_KEPT / shardCount);
    }

    // ------------------------------------------------------------------------------------------------ updates

    @Override
    protected void buildLocked(long[] keys, long[] values, int n, boolean keysSorted) {
        BatchArgs.checkPairs(keys, values, n, keysSorted);
        final long[] bounds = n >= cutMinKeys ? sampleCut(keys, n, keysSorted) : new long[] {Long.MIN_VALUE};
        final RangeRouter ranges = new RangeRouter(bounds);
        final ShardParts p = updateParts;
        p.cut(ranges, keys, values, n, false, chunksFor(n), onWorkers);
        final CpuFlixIndex[] fresh = new CpuFlixIndex[bounds.length];
        final int callThreads = spread(p, n) ? 1 : threads;
        try {
            runOnWorkers(bounds.length, callThreads == 1, s -> {
                final CpuFlixIndex shard = newShard();
                fresh[s] = shard;
                final int count = p.count[s];
                shard.updateOn(callThreads, () -> {
                    shard.buildLocked(p.keys[s], p.values[s], count, keysSorted);
                    return null;
                });
            });
        } catch (RuntimeException | Error e) {
            closeAll(fresh);
            throw e;
        } finally {
            p.trim();
        }
        closeAll(shards);
        replaceShards(fresh, ranges);
        sizeAtCut = size;
    }

    @Override
    protected void upsertLocked(long[] keys, long[] values, int n, boolean keysSorted) {
        BatchArgs.checkPairArrays(keys, values, n, keysSorted); // the values where the cut reads them, on the workers
        if (n == 0) {
            return;
        }
        if (size == 0 && n >= cutMinKeys) {
            closeAll(shards); // empty: the first large batch sets the ranges
            final long[] bounds = sampleCut(keys, n, keysSorted);
            final CpuFlixIndex[] empty = new CpuFlixIndex[bounds.length];
            for (int s = 0; s < empty.length; s++) {
                empty[s] = newShard();
            }
            replaceShards(empty, new RangeRouter(bounds));
        }
        final ShardParts p = updateParts;
        try {
            p.cut(router, keys, values, n, false, chunksFor(n), onWorkers, true);
            if (spreadable(n) && !spread(p, n) && splitHeavyParts(p, n)) {
                p.cut(router, keys, values, n, false, chunksFor(n), onWorkers); // into the new ranges
            }
            eachPart(p, n, (shard, s, callThreads) -> shard.updateOn(callThreads, () -> {
                shard.upsertLocked(p.keys[s], p.values[s], p.count[s], keysSorted);
                return null;
            }));
        } finally {
            p.trim();
            refreshSizeAndEdges(); // also where a shard's update failed: the others' parts are in
        }
        recutWhereOutOfBalance(n);
    }

    @Override
    protected void deleteLocked(long[] keys, int n, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        if (n == 0 || size == 0) {
            return;
        }
        final ShardParts p = updateParts;
        try {
            p.cut(router, keys, null, n, false, chunksFor(n), onWorkers);
            eachPart(p, n, (shard, s, callThreads) -> shard.updateOn(callThreads, () -> {
                shard.deleteLocked(p.keys[s], p.count[s], keysSorted);
                return null;
            }));
        } finally {
            p.trim();
            refreshSizeAndEdges();
        }
        recutWhereOutOfBalance(n);
    }

    @Override
    protected long restructureLocked() {
        long freed = 0;
        for (CpuFlixIndex shard : shards) {
            freed += shard.updateOn(threads, shard::restructureLocked);
        }
        return freed;
    }

    @FunctionalInterface
    private interface PartUpdate {
        void apply(CpuFlixIndex shard, int s, int callThreads);
    }

    /**
     * Applies {@code update} to every shard with a part: at once, one thread each, where the batch spreads over the
     * shards; one after another, each on every thread, where one part holds more than its share.
     */
    private void eachPart(ShardParts p, int n, PartUpdate update) {
        final boolean spread = spread(p, n);
        final int callThreads = spread ? 1 : threads;
        runOnWorkers(shards.length, spread, s -> {
            if (p.count[s] > 0) {
                update.apply(shards[s], s, callThreads);
            }
        });
    }

    /**
     * Whether a batch of {@code n} keys cut into {@code p} is worth its shards' running at once, one thread each: no
     * part holds more than a thread's even share of the batch, so none outlasts the rest by much.
     */
    private boolean spread(ShardParts p, int n) {
        if (!spreadable(n)) {
            return false;
        }
        int largest = 0;
        for (int s = 0; s < p.shards; s++) {
            largest = Math.max(largest, p.count[s]);
        }
        return largest <= spreadPartMax(n);
    }

    /** Whether a batch of {@code n} keys may run on several threads at all. */
    private boolean spreadable(int n) {
        return threads > 1 && n >= CpuFlixIndex.PARALLEL_MIN_KEYS;
    }

    private int spreadPartMax(int n) {
        return (int) CpuFlixIndex.ceilDiv(n, threads);
    }

    /**
     * Where a part of the batch is too large to run beside the others, cuts its shard into pieces at the quantiles of
     * a sample of the part's keys, so that the batch spreads: the shard's pairs are divided among new shards, built
     * from them in key order (a cost of the shard's size, which an even cut keeps small beside the batch). An ascending
     * load appends each batch above the top shard's keys, and several partitions read at uneven paces put their keys
     * among the last batch's; left to the balance check, such a part would run on one shard with every thread, as one
     * index, and be exported and cut anew whenever the index grew by half. A part of a few hot keys is not cut (its
     * sample holds too few distinct keys), nor a shard of more than {@value #SPLIT_SHARD_MAX_BATCHES} batches. The
     * shards may grow to twice the configured count; then {@link #recutWhereOutOfBalance} cuts them anew.
     *
     * @return whether the ranges changed (the batch must be cut again)
     */
    private boolean splitHeavyParts(ShardParts p, int n) {
        final int heavy = spreadPartMax(n);
        final List<CpuFlixIndex> outShards = new ArrayList<>(shards.length + shardCount);
        final List<Long> outBounds = new ArrayList<>(shards.length + shardCount);
        final List<CpuFlixIndex> replaced = new ArrayList<>();
        final List<CpuFlixIndex> built = new ArrayList<>();
        try {
            for (int s = 0; s < shards.length; s++) {
                final long lower = router.lowerBound(s);
                final int c = p.count[s];
                final CpuFlixIndex shard = shards[s];
                final long[] cut = c <= heavy || shard.sizeLocked() > SPLIT_SHARD_MAX_BATCHES * (long) n
                        ? new long[0] : quantileBounds(p.keys[s], c, lower, piecesFor(c, heavy), false);
                if (cut.length == 0) {
                    outShards.add(shard);
                    outBounds.add(lower);
                    continue;
                }
                final SortedPairs pairs = shard.export();
                int from = 0;
                for (int j = 0; j <= cut.length; j++) {
                    final int to = j == cut.length ? pairs.size()
                            : SortedSearch.lowerBound(pairs.keys(), from, pairs.size(), cut[j]);
                    final CpuFlixIndex piece = newShard();
                    built.add(piece);
                    final long[] k = Arrays.copyOfRange(pairs.keys(), from, to);
                    final long[] v = Arrays.copyOfRange(pairs.values(), from, to);
                    piece.updateOn(1, () -> {
                        piece.buildLocked(k, v, k.length, true);
                        return null;
                    });
                    outShards.add(piece);
                    outBounds.add(j == 0 ? lower : cut[j - 1]);
                    from = to;
                }
                replaced.add(shard);
            }
        } catch (RuntimeException | Error e) {
            closeAll(built.toArray(new CpuFlixIndex[0]));
            throw e;
        }
        if (replaced.isEmpty()) {
            return false;
        }
        final long[] bounds = new long[outBounds.size()];
        for (int i = 0; i < bounds.length; i++) {
            bounds[i] = outBounds.get(i);
        }
        replaceShards(outShards.toArray(new CpuFlixIndex[0]), new RangeRouter(bounds));
        closeAll(replaced.toArray(new CpuFlixIndex[0]));
        return true;
    }

    /**
     * Pieces for a part of {@code count} keys: each about half of what may run beside the others ({@code heavy}; a
     * sample's quantiles are not exact), at most the configured shard count.
     */
    private int piecesFor(int count, int heavy) {
        return (int) Math.min(shardCount, CpuFlixIndex.ceilDiv(2L * count, heavy));
    }

    /**
     * Lower bounds, strictly ascending and above {@code first} and the smallest sampled key, that cut the keys of
     * {@code keys[0, n)} into about {@code pieces} ranges at the quantiles of an even sample of them (not sorted again
     * where {@code keysSorted}): fewer where the sample holds fewer distinct keys, none for keys all alike.
     */
    private static long[] quantileBounds(long[] keys, int n, long first, int pieces, boolean keysSorted) {
        final int m = (int) Math.min(n, (long) SAMPLES_PER_SHARD * pieces);
        final long[] sample = new long[m];
        for (int j = 0; j < m; j++) {
            sample[j] = keys[(int) ((long) n * j / m)];
        }
        if (!keysSorted) {
            Arrays.sort(sample);
        }
        final long[] bounds = new long[Math.max(0, pieces - 1)];
        int count = 0;
        long last = Math.max(first, sample[0]); // every piece holds some of the sample
        for (int t = 1; t < pieces; t++) {
            final long b = sample[(int) ((long) m * t / pieces)];
            if (b > last) {
                bounds[count++] = b;
                last = b;
            }
        }
        return Arrays.copyOf(bounds, count);
    }

    private void refreshSizeAndEdges() {
        long total = 0;
        for (CpuFlixIndex shard : shards) {
            total += shard.sizeLocked();
        }
        size = total;
        refreshEdges();
    }

    /** After an update: where the shards fell out of balance, a new cut. */
    private void recutWhereOutOfBalance(int n) {
        if (outOfBalance(n)) {
            recut();
        }
    }

    /**
     * Whether the shards should be cut anew after an update of {@code n} keys: they grew past twice the configured
     * count (split by batches too large to spread), or one holds more than {@value #SKEW} times its even share of an
     * index that grew or shrank by half since the last cut, and is too large for a batch like this one to split.
     */
    private boolean outOfBalance(int n) {
        if (shards.length > 2 * shardCount) {
            return true;
        }
        final boolean changedByHalf = size >= sizeAtCut + sizeAtCut / 2 || size <= sizeAtCut / 2;
        if (size < cutMinKeys || !changedByHalf) {
            return false;
        }
        long largest = 0;
        for (CpuFlixIndex shard : shards) {
            largest = Math.max(largest, shard.sizeLocked());
        }
        final boolean splittable = spreadable(n) && largest <= SPLIT_SHARD_MAX_BATCHES * (long) n;
        return largest > SKEW * CpuFlixIndex.ceilDiv(size, shardCount) && !splittable;
    }

    /**
     * Cuts the keys anew at exact quantiles: every shard exported, new shards built from the pieces (sorted), the old
     * ones closed. Where a build fails the old shards stay as they were.
     */
    private void recut() {
        final CpuFlixIndex[] old = shards;
        final SortedPairs[] pieces = new SortedPairs[old.length];
        runOnWorkers(old.length, true, s -> pieces[s] = old[s].export());
        final long[] startOf = new long[old.length + 1];
        for (int s = 0; s < old.length; s++) {
            startOf[s + 1] = startOf[s] + pieces[s].size();
        }
        final long total = startOf[old.length];
        final int count = (int) Math.max(1, Math.min(shardCount, total));
        if (CpuFlixIndex.ceilDiv(total, count) > Integer.MAX_VALUE - 8) {
            return; // a shard could not hold its share: keep the ranges
        }
        final long[] rank = new long[count + 1];
        final long[] bounds = new long[count];
        for (int t = 0; t <= count; t++) {
            rank[t] = total * t / count;
        }
        bounds[0] = Long.MIN_VALUE;
        for (int t = 1; t < count; t++) {
            final int s = pieceOf(startOf, rank[t]);
            bounds[t] = pieces[s].keys()[(int) (rank[t] - startOf[s])]; // unique keys: strictly ascending
        }
        final CpuFlixIndex[] fresh = new CpuFlixIndex[count];
        try {
            runOnWorkers(count, true, t -> {
                final int len = (int) (rank[t + 1] - rank[t]);
                final long[] k = new long[len];
                final long[] v = new long[len];
                long at = rank[t];
                for (int copied = 0; copied < len; ) {
                    final int s = pieceOf(startOf, at);
                    final int from = (int) (at - startOf[s]);
                    final int run = Math.min(len - copied, pieces[s].size() - from);
                    System.arraycopy(pieces[s].keys(), from, k, copied, run);
                    System.arraycopy(pieces[s].values(), from, v, copied, run);
                    copied += run;
                    at += run;
                }
                final CpuFlixIndex shard = newShard();
                fresh[t] = shard;
                shard.updateOn(1, () -> {
                    shard.buildLocked(k, v, len, true);
                    return null;
                });
            });
        } catch (RuntimeException | Error e) {
            closeAll(fresh);
            throw e;
        }
        closeAll(old);
        replaceShards(fresh, new RangeRouter(bounds));
        sizeAtCut = total;
    }

    /** The piece holding global rank {@code r}: the last {@code s} with {@code startOf[s] <= r}, skipping empty ones. */
    private static int pieceOf(long[] startOf, long r) {
        int s = 0;
        while (startOf[s + 1] <= r) {
            s++;
        }
        return s;
    }

    /**
     * Range lower bounds for {@link #shardCount} shards at the quantiles of an even sample of the batch: strictly
     * ascending from {@code Long.MIN_VALUE}, fewer where the sample holds fewer distinct keys.
     */
    private long[] sampleCut(long[] keys, int n, boolean keysSorted) {
        final long[] above = quantileBounds(keys, n, Long.MIN_VALUE, shardCount, keysSorted);
        final long[] bounds = new long[above.length + 1];
        bounds[0] = Long.MIN_VALUE;
        System.arraycopy(above, 0, bounds, 1, above.length);
        return bounds;
    }

    private void replaceShards(CpuFlixIndex[] fresh, RangeRouter ranges) {
        shards = fresh;
        router = ranges;
        exactTables = new ExactKeyTable[fresh.length];
        for (int s = 0; s < fresh.length; s++) {
            exactTables[s] = fresh[s].exactKeys;
        }
        floorKeyBelow = new long[fresh.length];
        floorValueBelow = new long[fresh.length];
        ceilingKeyAbove = new long[fresh.length];
        ceilingValueAbove = new long[fresh.length];
        refreshSizeAndEdges();
    }

    /** Per shard, the nearest pair below and above it in the other shards: where its own floor or ceiling finds none. */
    private void refreshEdges() {
        refreshEdges(true, floorKeyBelow, floorValueBelow);
        refreshEdges(false, ceilingKeyAbove, ceilingValueAbove);
    }

    /**
     * Per shard, the largest pair of the shards below it ({@code below}) or the smallest of those above, walking the
     * shards from that side: (0, {@code NOT_FOUND}) where they hold none.
     */
    private void refreshEdges(boolean below, long[] edgeKeys, long[] edgeValues) {
        final long[] probe = {below ? Long.MAX_VALUE : Long.MIN_VALUE};
        final long[] key = new long[1];
        final long[] value = new long[1];
        long edgeKey = 0;
        long edgeValue = FlixIndex.NOT_FOUND;
        for (int i = 0; i < shards.length; i++) {
            final int s = below ? i : shards.length - 1 - i;
            edgeKeys[s] = edgeKey;
            edgeValues[s] = edgeValue;
            if (shards[s].sizeLocked() > 0) {
                if (below) {
                    shards[s].floorLocked(probe, 1, key, value, true);
                } else {
                    shards[s].ceilingLocked(probe, 1, key, value, true);
                }
                edgeKey = key[0];
                edgeValue = value[0];
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ lookups

    @Override
    protected void getLocked(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkArray(valuesOut, "valuesOut", n);
        if (shards.length == 1) {
            shards[0].getLocked(keys, n, valuesOut, keysSorted);
            return;
        }
        if (shardConfig.exactKeyTable()) {
            getExact(keys, n, valuesOut);
            return;
        }
        final ShardParts p = takeLookupParts();
        try {
            lookUp(keys, n, p, false, s -> shards[s].getLocked(p.keys[s], p.count[s], p.values[s], keysSorted));
            for (int s = 0; s < p.shards; s++) {
                final int[] at = p.positions[s];
                final long[] v = p.values[s];
                for (int j = 0, c = p.count[s]; j < c; j++) {
                    valuesOut[at[j]] = v[j];
                }
            }
        } finally {
            giveLookupParts(p);
        }
    }

    /** Gets key by key from the shards' exact-key tables: one cache line a key, no batch to cut. */
    private void getExact(long[] keys, int n, long[] valuesOut) {
        final ExactKeyTable[] tables = exactTables;
        final RangeRouter ranges = router;
        onLookupShare(callThreads -> {
            final int pieces = CpuFlixIndex.lookupPieces(n, callThreads);
            runOnWorkers(pieces, true, piece -> {
                for (int i = (int) ((long) n * piece / pieces), to = (int) ((long) n * (piece + 1) / pieces);
                        i < to; i++) {
                    valuesOut[i] = tables[ranges.shardOf(keys[i])].get(keys[i]);
                }
            });
            return null;
        });
    }

    private <T> T onLookupShare(IntFunction<T> call) {
        return CpuFlixIndex.onLookupShare(lookupsInFlight, lookupThreadCap, threads, call);
    }

    @Override
    protected void ceilingLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkAnswerArrays(keysOut, valuesOut, n);
        pointLookup(keys, n, keysOut, valuesOut, keysSorted, false);
    }

    @Override
    protected void floorLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkAnswerArrays(keysOut, valuesOut, n);
        pointLookup(keys, n, keysOut, valuesOut, keysSorted, true);
    }

    /** Floors or ceilings: each shard answers its part; what it cannot answer the nearest shard's edge pair does. */
    private void pointLookup(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted, boolean floor) {
        if (shards.length == 1) {
            if (floor) {
                shards[0].floorLocked(keys, n, keysOut, valuesOut, keysSorted);
            } else {
                shards[0].ceilingLocked(keys, n, keysOut, valuesOut, keysSorted);
            }
            return;
        }
        final ShardParts p = takeLookupParts();
        try {
            lookUp(keys, n, p, true, s -> {
                if (floor) {
                    shards[s].floorLocked(p.keys[s], p.count[s], p.answerKeys[s], p.values[s], keysSorted);
                } else {
                    shards[s].ceilingLocked(p.keys[s], p.count[s], p.answerKeys[s], p.values[s], keysSorted);
                }
            });
            for (int s = 0; s < p.shards; s++) {
                final int[] at = p.positions[s];
                final long[] k = p.answerKeys[s];
                final long[] v = p.values[s];
                final long edgeKey = floor ? floorKeyBelow[s] : ceilingKeyAbove[s];
                final long edgeValue = floor ? floorValueBelow[s] : ceilingValueAbove[s];
                for (int j = 0, c = p.count[s]; j < c; j++) {
                    final boolean found = v[j] != FlixIndex.NOT_FOUND;
                    keysOut[at[j]] = found ? k[j] : edgeKey;
                    valuesOut[at[j]] = found ? v[j] : edgeValue;
                }
            }
        } finally {
            giveLookupParts(p);
        }
    }

    /**
     * Cuts the lookup batch into the shards' parts (with positions) and runs {@code perShard} on each shard with a
     * part: on the caller's thread, or over the workers where the call may use more threads.
     */
    private void lookUp(long[] keys, int n, ShardParts p, boolean answerKeys, IntConsumer perShard) {
        p.cut(router, keys, null, n, true, 1, onWorkers);
        p.ensureAnswers(answerKeys);
        onLookupShare(callThreads -> {
            runOnWorkers(p.shards, CpuFlixIndex.lookupPieces(n, callThreads) > 1, s -> {
                if (p.count[s] > 0) {
                    perShard.accept(s);
                }
            });
            return null;
        });
    }

    @Override
    protected RangeResult rangeLocked(long[] lo, long[] hi, int n, int limitPerRange) {
        BatchArgs.checkRanges(lo, hi, n, limitPerRange);
        if (shards.length == 1) {
            return shards[0].rangeLocked(lo, hi, n, limitPerRange);
        }
        final int count = shards.length;
        final int[] first = new int[n];
        final int[] last = new int[n];
        final int[] pieces = new int[count];
        for (int i = 0; i < n; i++) {
            first[i] = router.shardOf(lo[i]);
            last[i] = router.shardOf(hi[i]);
            for (int s = first[i]; s <= last[i]; s++) {
                pieces[s]++;
            }
        }
        final long[][] los = new long[count][];
        final long[][] his = new long[count][];
        for (int s = 0; s < count; s++) {
            los[s] = new long[pieces[s]];
            his[s] = new long[pieces[s]];
        }
        final int[] at = new int[count];
        for (int i = 0; i < n; i++) {
            for (int s = first[i]; s <= last[i]; s++) {
                los[s][at[s]] = Math.max(lo[i], router.lowerBound(s));
                his[s][at[s]++] = s + 1 < count ? Math.min(hi[i], router.lowerBound(s + 1) - 1) : hi[i];
            }
        }
        final RangeResult[] answers = new RangeResult[count];
        onLookupShare(callThreads -> {
            runOnWorkers(count, CpuFlixIndex.lookupPieces(n, callThreads) > 1, s -> {
                if (pieces[s] > 0) {
                    answers[s] = shards[s].rangeLocked(los[s], his[s], pieces[s], limitPerRange);
                }
            });
            return null;
        });
        // Each range's pieces are its shards' answers in shard order, taken in range order: a cursor per shard.
        final int[] offsets = new int[n + 1];
        Arrays.fill(at, 0);
        for (int i = 0; i < n; i++) {
            long found = 0;
            for (int s = first[i]; s <= last[i]; s++) {
                found += answers[s].count(at[s]++);
            }
            offsets[i + 1] = offsets[i] + (int) Math.min(found, limitPerRange);
        }
        final long[] keysOut = new long[offsets[n]];
        final long[] valuesOut = new long[offsets[n]];
        Arrays.fill(at, 0);
        for (int i = 0; i < n; i++) {
            int out = offsets[i];
            for (int s = first[i]; s <= last[i]; s++) {
                final RangeResult r = answers[s];
                final int piece = at[s]++;
                final int take = Math.min(r.count(piece), offsets[i + 1] - out);
                System.arraycopy(r.keys(), r.offsets()[piece], keysOut, out, take);
                System.arraycopy(r.values(), r.offsets()[piece], valuesOut, out, take);
                out += take;
            }
        }
        return new RangeResult(offsets, keysOut, valuesOut);
    }

    @Override
    protected int exportFromLocked(long fromKey, long[] keysOut, long[] valuesOut) {
        BatchArgs.checkExport(keysOut, valuesOut);
        final int want = keysOut.length;
        int copied = 0;
        for (int s = router.shardOf(fromKey); s < shards.length && copied < want; s++) {
            final long from = Math.max(fromKey, router.lowerBound(s));
            copied += shards[s].exportFromLocked(from, keysOut, valuesOut, copied);
        }
        return copied;
    }

    // ------------------------------------------------------------------------------------------------ state

    @Override
    protected long sizeLocked() {
        return size;
    }

    /** The shards' stats added up; the longest chain is the longest of any shard. */
    @Override
    protected IndexStats statsLocked() {
        long buckets = 0;
        long nodes = 0;
        long free = 0;
        long longest = 0;
        long bytes = 0;
        final IndexStats[] each = new IndexStats[shards.length];
        runOnWorkers(shards.length, true, s -> each[s] = shards[s].statsLocked()); // each walks its chains
        for (IndexStats st : each) {
            buckets += st.buckets();
            nodes += st.nodes();
            free += st.freeNodes();
            longest = Math.max(longest, st.longestChain());
            bytes += st.bytes();
        }
        return new IndexStats(Backend.CPU, size, buckets, nodes, free, shardConfig.nodeSize(), longest, bytes);
    }

    /** The keys each shard holds, in key order (fewer shards than configured where the keys were too few to cut). */
    /** Per shard, the most keys its scratch keeps room for between calls. */
    int[] shardScratchKept() {
        final Lock held = enterLookup();
        try {
            return Arrays.stream(shards).mapToInt(shard -> shard.scratchKept).toArray();
        } finally {
            held.unlock();
        }
    }

    long[] shardSizes() {
        final Lock held = enterLookup();
        try {
            final long[] sizes = new long[shards.length];
            for (int s = 0; s < shards.length; s++) {
                sizes[s] = shards[s].sizeLocked();
            }
            return sizes;
        } finally {
            held.unlock();
        }
    }

    /**
     * Checks every shard's structure ({@link CpuFlixIndex#verifyStructure}) and that each holds only keys of its
     * range; throws {@link IllegalStateException} naming the first violation. For tests.
     */
    void verifyStructure() {
        final Lock held = enterLookup();
        try {
            for (int s = 0; s < shards.length; s++) {
                shards[s].verifyStructure();
                if (shards[s].sizeLocked() == 0) {
                    continue;
                }
                final SortedPairs pairs = shards[s].export();
                final long min = pairs.keys()[0];
                final long max = pairs.keys()[pairs.size() - 1];
                if (min < router.lowerBound(s) || (s + 1 < shards.length && max >= router.lowerBound(s + 1))) {
                    throw new IllegalStateException("shard " + s + " holds keys [" + min + ", " + max
                            + "] outside its range from " + router.lowerBound(s));
                }
            }
        } finally {
            held.unlock();
        }
    }

    @Override
    protected void closeLocked() {
        closeAll(shards);
        shards = null;
        router = null;
        exactTables = null;
        workers.shutdown();
        workers = null;
        updateParts = null;
        lookupParts.clear();
    }

    private static void closeAll(CpuFlixIndex[] indexes) {
        for (CpuFlixIndex index : indexes) {
            if (index != null) {
                index.close();
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ workers

    private int chunksFor(int n) {
        return (int) Math.max(1, Math.min(threads, n / MIN_KEYS_PER_CHUNK));
    }

    /** Runs {@code body} for pieces (or shards) {@code 0..pieces-1}: on the workers where {@code parallel}, else here. */
    private void runOnWorkers(int pieces, boolean parallel, IntConsumer body) {
        if (!parallel || pieces <= 1 || threads == 1) {
            for (int p = 0; p < pieces; p++) {
                body.accept(p);
            }
            return;
        }
        Pieces.run(workers, pieces, body);
    }

    private ShardParts takeLookupParts() {
        final ShardParts p = lookupParts.poll();
        return p != null ? p : new ShardParts();
    }

    private void giveLookupParts(ShardParts p) {
        p.trim();
        lookupParts.offer(p);
    }
}
