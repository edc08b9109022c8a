package io.flix.index.gpu;

import static io.flix.index.gpu.KernelContract.BUCKET_SAMPLE_STRIDE;
import static io.flix.index.gpu.KernelContract.INDEX_COUNTER_SLOTS;
import static io.flix.index.gpu.KernelContract.MODE_GET;
import static io.flix.index.gpu.KernelContract.SLOT_BUCKETS_TOUCHED;
import static io.flix.index.gpu.KernelContract.SLOT_FIRST_UNSORTED;
import static io.flix.index.gpu.KernelContract.SLOT_FREE_TOP;
import static io.flix.index.gpu.KernelContract.SLOT_KEYS_DELETED;
import static io.flix.index.gpu.KernelContract.SLOT_KEYS_INSERTED;
import static io.flix.index.gpu.KernelContract.SLOT_LONGEST_CHAIN;
import static io.flix.index.gpu.KernelContract.SLOT_MOST_KEYS_IN_A_BUCKET;
import static io.flix.index.gpu.KernelContract.SLOT_MOST_NODES_GAINED;
import static io.flix.index.gpu.KernelContract.SLOT_NODES_NEEDED;
import static io.flix.index.gpu.KernelContract.SLOT_NODES_IN_USE;
import static io.flix.index.gpu.KernelContract.SLOT_TOUCHED_ITEMS;
import static io.flix.index.gpu.KernelContract.SLOT_WIDE_MERGES;
import static io.flix.index.gpu.KernelContract.WIDE_MERGE_BYTES;
import static io.flix.index.gpu.KernelContract.WIDE_MERGE_MIN;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.GpuTuning;
import io.flix.index.IndexStats;

import java.util.function.Supplier;

import jcuda.driver.CUdeviceptr;

/**
 * The FliX index on a CUDA device: the max-key-per-bucket array and node chains live in device memory as
 * structure of arrays, and every batch runs compute-to-bucket (one warp per bucket pulls its slice of the sorted
 * batch). Kernels: {@code src/main/cuda/flix_kernels.cu}; sorting and scans: CUB through {@link CubNative}.
 *
 * <p>Batches cross the bus straight from the registered Java heap or through pinned staging, on the index's own
 * CUDA streams (lookups as a pipeline of chunks: one goes up while the one before is looked up and the one before
 * * that comes back; gets, ceilings and floors where chains are short as one native pipeline, one launch a chunk: see
 * {@link AbstractGpuIndex}, {@link #pipelinedLookup}), sorted on the device (skipped when the caller
 * promises sorted keys, a promise that is checked) and, for build and upsert, reduced to the last occurrence of
 * each key. Memory grows before anything changes: an upsert first counts the nodes its splits
 * need, grows the node pool if the free list is short, and only then modifies the index, so an out-of-memory
 * ({@link GpuOutOfMemoryException}), or a refusal of the GPU memory budget
 * ({@link DeviceMemoryBudgetExceededException}, {@link FlixConfig#gpuMemoryBudget()}), leaves the index as it was.
 * Node size is 32 (a warp's lanes hold one node).
 *
 * <p>One warp serves one bucket, so a bucket that takes a large share of the inserts grows a long chain that its
 * warp walks serially. When the chains may have grown past {@code max(64, size / 32768)} nodes since the buckets
 * were last cut, an upsert ends with a {@link #restructure()} (turn off with {@link GpuTuning#autoRestructure()});
 * where memory for that restructure is short, the upsert stands and the chains stay. The tuning is
 * {@link FlixConfig#gpuTuning()} with the system properties' overrides
 * ({@link GpuTuning#withSystemPropertyOverrides()}), read when the index opens.
 *
 * <p>Memory: {@link #stats()} reports the structure (node pool and bucket arrays); build and restructure cut the
 * pool to the nodes in use, upserts grow it by half again when the free list runs short: in place where the device
 * has virtual memory management (memory mapped behind the pool's reserved addresses: no copy, and never the old
 * and the new pool at once), else into a new pool, copied. Batch scratch, reused between calls, is reported apart
 * ({@link #scratchBytes()}).
 *
 * <p>Device-resident overloads of get, ceiling, upsert and delete take {@link DeviceLongs}: the host path is the
 * same work with an upload before and a download after, so these time the device work alone (benchmarks, or a
 * caller whose data is on the device already).
 *
 * <p>Concurrency ({@link io.flix.index.FlixIndex}): lookups run one at a time, as updates do, since every call
 * works in the index's batch scratch, staging memory and stream (and unsorted gets and ranges may first cut long
 * chains). The calls of several threads are correct; they do not overlap.
 */
public final class GpuFlixIndex extends AbstractGpuIndex {

    /** Keys per node: the one size the kernels are written for. */
    public static final int NODE_SIZE = KernelContract.NODE_SIZE;

    private static final int MAX_GRID_Y = 65535;
    /** Below this many keys per touched bucket an upsert runs the single-thread kernel. */
    private static final double LIGHT_KEYS_PER_BUCKET = 2.0;
    private final int keysPerBuiltNode;
    /**
     * The tuning in force: chain limits (held by {@link #chains}), batch slicing (touchedBucketsRatio), the
     * locality sort of unsorted gets (localitySortRatio, localityBitsBelowBuckets: at the default of 5 about 32
     * buckets a sort digit, so a warp's lanes share the bucketMax search down to its last few levels), the pool's
     * growth (held by {@link #pool}) and tracing.
     */
    private GpuTuning tuning;

    // the structure
    private final DeviceNodePool pool;
    private DeviceBuffer bucketMax;
    private DeviceBuffer bucketHead;
    private int bucketCapacity;
    private int numBuckets;
    private long size;

    // reused scratch, grown on demand
    private final Scratch flags = scratch("run flags");
    private final Scratch flagPositions = scratch("run positions");
    private final Scratch segStart = scratch("bucket slices");
    private final Scratch needNodes = scratch("nodes per bucket");
    private final Scratch allocBase = scratch("node allocation offsets");
    private final Scratch keyBuckets = scratch("bucket of each batch key");
    private final Scratch touchedBuckets = scratch("touched buckets");
    private final Scratch wideMerges = scratch("wide merge records");
    private final Scratch chainGroups = scratch("buckets each chain becomes");
    private final Scratch chainGroupStart = scratch("first new bucket of each chain");
    private final Scratch spareBucketMax = scratch("spare bucket max keys");
    private final Scratch spareBucketHead = scratch("spare bucket heads");
    /**
     * Every BUCKET_SAMPLE_STRIDE-th bucket's max key (sample_bucket_max), rewritten wherever the buckets change: a
     * get in any order searches these, which stay in the L2 cache, before one line of bucketMax.
     */
    private final Scratch bucketSamples = scratch("bucket samples");

    /** Whether the chunks of a sorted lookup write their checks into one slot, read after the last chunk. */
    private boolean sortCheckArmed;

    /** Whether the last sliceBatch made one item per touched bucket. */
    private boolean touchedItems;

    /** When chains are measured, cut into groups or flattened by a restructure. */
    private final ChainPolicy chains;

    /** The steps of the calls, where the tuning traces (else null). */
    private StepTimeline timeline;

    private GpuFlixIndex(FlixConfig config, GpuTuning tuning, GpuRuntime.DeviceContext device) {
        super(device, config.gpuMemoryBudget(), INDEX_COUNTER_SLOTS, tuning.registerHeap());
        this.keysPerBuiltNode = config.keysPerBuiltNode();
        this.tuning = tuning;
        this.chains = new ChainPolicy(tuning);
        this.pool = new DeviceNodePool(device, memory, tuning, kernels, this::trace);
        try {
            pool.grow(DeviceNodePool.INITIAL_NODES, false);
            layoutEmpty();
        } catch (RuntimeException e) {
            releaseStructure();
            releaseHost();
            throw e;
        }
    }

    /**
     * Opens an empty index on the configured device, with the configured tuning overridden by the system properties
     * set ({@link GpuTuning#withSystemPropertyOverrides()}), within the configured GPU memory budget.
     *
     * @throws IllegalArgumentException where the node size is not 32, the device does not exist, or a tuning
     *                                  property does not parse
     * @throws IllegalStateException    where no GPU is usable ({@link GpuSupport#unavailableReason()})
     */
    public static GpuFlixIndex open(FlixConfig config) {
        requireConfig(config);
        if (config.nodeSize() != NODE_SIZE) {
            throw new IllegalArgumentException("nodeSize must be " + NODE_SIZE + " for the GPU backend, was "
                    + config.nodeSize());
        }
        final GpuTuning tuning = config.gpuTuning().withSystemPropertyOverrides();
        return new GpuFlixIndex(config, tuning, openDevice(config));
    }

    /** The tuning in force: the config's, with the system properties' overrides. */
    GpuTuning tuning() {
        return tuning;
    }

    /**
     * Takes another tuning from the next call on (tests and benchmarks that change a setting between calls; pool
     * arrays allocated already keep how they grow).
     */
    void tune(GpuTuning newTuning) {
        final var held = enterUpdate();
        try {
            tuning = newTuning;
            chains.tune(newTuning);
            pool.tune(newTuning);
        } finally {
            held.unlock();
        }
    }

    /** The ordinal of the CUDA device holding the index. */
    @Override
    public int device() {
        return device.ordinal;
    }

    /** The CUDA device's name. */
    public String deviceName() {
        return device.name;
    }

    // -------------------------------------------------------------------------------------------------------------
    // Updates

    @Override
    void upsertOnDevice(DeviceBuffer keys, DeviceBuffer values, int n, boolean keysSorted, boolean hostChecked) {
        final int m = steps.checkSortAndDedupe(keys, values, n, keysSorted, hostChecked,
                () -> pool.growAhead(n, numBuckets));
        final CUdeviceptr batch = steps.dedupedKeys().pointer();
        trace("upsert sorted, deduped");
        final int items = sliceBatch(batch, m);
        trace("upsert sliced");
        final CUdeviceptr itemBucket = itemBuckets();
        counters.zeroAll();
        kernels.upsertCount(items, itemBucket, bucketHead.pointer(), pool.nodeKeys(), pool.nodeCount(),
                pool.nodeNext(), pool.nodeMax(), batch, segStart.pointer(),
                needNodes.ensure((items + 1L) * Integer.BYTES).pointer(), counters.pointer());
        steps.scanInt(needNodes.buffer(), allocBase.ensure((items + 1L) * Integer.BYTES), items + 1);
        // the scan's total beside the count pass's counters: one read, which waits for the device
        stream.copy(counters.at(SLOT_NODES_NEEDED), allocBase.buffer().at(items * (long) Integer.BYTES),
                Integer.BYTES);
        final long[] counted = counters.read(SLOT_BUCKETS_TOUCHED, SLOT_NODES_NEEDED + 1);
        final long nodesNeeded = counted[SLOT_NODES_NEEDED];
        final long touched = counted[SLOT_BUCKETS_TOUCHED];
        final long mostKeysInABucket = counted[SLOT_MOST_KEYS_IN_A_BUCKET];
        // the only allocations that can fail; nothing has changed yet
        final DeviceBuffer wide = wideMerges.ensure((m / WIDE_MERGE_MIN + 1L) * WIDE_MERGE_BYTES);
        pool.ensureFreeNodes(nodesNeeded);
        trace("upsert counted");
        // the steps above read the keys alone: a large batch's values may have been crossing the bus meanwhile
        final CUdeviceptr batchValues = steps.dedupedValues().pointer();
        trace("upsert values in order");
        final boolean fewKeysPerBucket = m < LIGHT_KEYS_PER_BUCKET * touched && mostKeysInABucket <= 64;
        if (fewKeysPerBucket) {
            kernels.upsertApplySingle(items, itemBucket, bucketHead.pointer(), pool.nodeKeys(), pool.nodeValues(),
                    pool.nodeCount(), pool.nodeNext(), pool.nodeMax(), pool.freeStack(), pool.freeTop(), batch,
                    batchValues, segStart.pointer(), allocBase.pointer(), counters.pointer());
        } else {
            final CUdeviceptr wideCount = counters.at(SLOT_WIDE_MERGES);
            kernels.upsertApply(items, itemBucket, bucketHead.pointer(), pool.nodeKeys(), pool.nodeValues(),
                    pool.nodeCount(), pool.nodeNext(), pool.nodeMax(), pool.freeStack(), pool.freeTop(), batch,
                    batchValues, segStart.pointer(), allocBase.pointer(), counters.pointer(), wide.pointer(),
                    wideCount);
            // a wide merge takes at least WIDE_MERGE_MIN keys of one bucket's slice
            final int wideMergeCount = mostKeysInABucket < WIDE_MERGE_MIN ? 0 : counters.readInt(SLOT_WIDE_MERGES);
            for (int first = 0; first < wideMergeCount; first += MAX_GRID_Y) {
                final int jobs = Math.min(MAX_GRID_Y, wideMergeCount - first);
                final CUdeviceptr jobsAt = wide.at((long) first * WIDE_MERGE_BYTES);
                kernels.wideMergeWrite(jobs, jobsAt, batch, batchValues, pool.freeStack(), pool.freeTop(),
                        pool.nodeKeys(), pool.nodeValues());
                kernels.wideMergeMeta(jobs, jobsAt, pool.freeStack(), pool.freeTop(), pool.nodeKeys(),
                        pool.nodeCount(), pool.nodeNext(), pool.nodeMax());
            }
        }
        trace("upsert merged");
        pool.took(nodesNeeded, n);
        // one read for both: each read waits for the device
        final long[] applied = counters.read(SLOT_KEYS_INSERTED, SLOT_MOST_NODES_GAINED + 1);
        size += applied[SLOT_KEYS_INSERTED];
        chains.upserted(applied[SLOT_MOST_NODES_GAINED]);
        if (chains.restructureAfterUpsert(size)) {
            try {
                restructureLocked();
            } catch (GpuOutOfMemoryException e) {
                // the upsert stands; a restructure that lacks memory leaves the index as it was: the chains stay
                trace("restructure after upsert skipped: " + e.getMessage());
            }
        }
    }

    @Override
    void deleteOnDevice(DeviceBuffer keys, int n, boolean keysSorted, boolean hostChecked) {
        steps.checkOnDevice(keys, n, keysSorted, hostChecked);
        if (size == 0) {
            return;
        }
        CUdeviceptr batch = keys.pointer();
        if (!keysSorted) {
            steps.sortKeys(keys, n);
            batch = steps.sortedKeys().pointer();
        }
        final int items = sliceBatch(batch, n);
        counters.write(SLOT_FREE_TOP, pool.freeTop(), 0); // and SLOT_KEYS_DELETED
        kernels.deleteApply(items, itemBuckets(), bucketHead.pointer(), pool.nodeKeys(), pool.nodeValues(),
                pool.nodeCount(), pool.nodeNext(), pool.nodeMax(), pool.freeStack(), batch, segStart.pointer(),
                counters.pointer());
        final long[] counted = counters.read(SLOT_FREE_TOP, SLOT_KEYS_DELETED + 1);
        pool.freeTop(counted[SLOT_FREE_TOP]);
        size -= counted[SLOT_KEYS_DELETED];
    }

    // -------------------------------------------------------------------------------------------------------------
    // Lookups

    @Override
    void lookupOnDevice(int mode, DeviceBuffer queries, int n, boolean keysSorted, boolean hostChecked,
                        DeviceBuffer keysResult, DeviceBuffer valuesResult) {
        if (!keysSorted) {
            cutLongChainsIntoGroups();
            if (chainsAreShort()) {
                lookupInAnyOrder(mode, queries, n, keysResult, valuesResult);
                return;
            }
        }
        CUdeviceptr batch = queries.pointer();
        CUdeviceptr perm = null;
        if (!keysSorted) {
            steps.sortWithPositions(queries, n, 0, 64);
            batch = steps.sortedKeys().pointer();
            perm = steps.positions().pointer();
        }
        // a sort promise the host has not checked is checked by the lookup kernel itself (see flix_kernels.cu):
        // lookups change nothing, so the broken promise is reported after the kernel
        final boolean deviceCheck = keysSorted && !(hostChecked && n < DeviceSteps.DEVICE_CHECK_MIN);
        final CUdeviceptr unsortedAt = deviceCheck ? counters.at(SLOT_FIRST_UNSORTED) : null;
        if (deviceCheck && !sortCheckArmed) {
            counters.fillInts(SLOT_FIRST_UNSORTED, SLOT_FIRST_UNSORTED + 1, Integer.MAX_VALUE);
        }
        final int items = sliceBatch(batch, n);
        kernels.lookup(mode).launch(numBuckets, items, itemBuckets(), bucketHead.pointer(), pool.nodeKeys(),
                pool.nodeValues(), pool.nodeCount(), pool.nodeNext(), pool.nodeMax(), batch, perm, segStart.pointer(),
                DeviceBuffer.pointerOf(keysResult), valuesResult.pointer(), unsortedAt);
        if (deviceCheck && !sortCheckArmed) {
            if (counters.readInt(SLOT_FIRST_UNSORTED) != Integer.MAX_VALUE) {
                DeviceBatchFaults.report(queries, null, n, true);
            }
        }
    }

    /**
     * Lookups (gets, ceilings, floors), sorted or not, where no chain is long: one launch of the mode's any-order
     * kernel a chunk answers them (no slicing and no sort, so nothing the host must wait for between chunks); a
     * sorted batch's lanes share their search paths as the locality sort would give them. Off with the tuning's
     * pipelinedGets.
     */
    @Override
    PipelinedLookup pipelinedLookup(int mode, DeviceBuffer queries, DeviceBuffer keys, DeviceBuffer values) {
        if (!tuning.pipelinedGets()) {
            return null;
        }
        cutLongChainsIntoGroups();
        if (!chainsAreShort()) {
            return null;
        }
        return new PipelinedLookup(device.functionAddress(FlixKernels.anyOrderKernel(mode)), bucketMax.address(),
                numBuckets,
                bucketSamples.buffer().address(), samplesFor(numBuckets), bucketHead.address(),
                DeviceBuffer.addressOf(pool.nodeKeys()), DeviceBuffer.addressOf(pool.nodeValues()),
                DeviceBuffer.addressOf(pool.nodeCount()), DeviceBuffer.addressOf(pool.nodeNext()),
                DeviceBuffer.addressOf(pool.nodeMax()), queries.address(), values.address(),
                keys == null ? 0 : keys.address(), DeviceBuffer.addressOf(counters.at(SLOT_FIRST_UNSORTED)));
    }

    @Override
    boolean armSortCheck() {
        counters.fillInts(SLOT_FIRST_UNSORTED, SLOT_FIRST_UNSORTED + 1, Integer.MAX_VALUE);
        sortCheckArmed = true;
        return true;
    }

    @Override
    boolean sortFaultFound() {
        return counters.readInt(SLOT_FIRST_UNSORTED) != Integer.MAX_VALUE;
    }

    @Override
    void disarmSortCheck() {
        sortCheckArmed = false;
    }

    /**
     * Unsorted lookup where chains are short: one thread a query finds its bucket, node and key on its own (the
     * mode's any-order kernel), so the queries need no full sort. A large batch is first sorted by its top varying
     * bits only (two or three radix passes instead of eight), which gives the threads of a warp one search path;
     * the answers go back to the callers' order through the sort's positions. A small batch is looked up as it
     * is: its queries fall in distinct buckets, so a sort would buy little.
     */
    private void lookupInAnyOrder(int mode, DeviceBuffer queries, int n, DeviceBuffer keysResult,
                                  DeviceBuffer valuesResult) {
        CUdeviceptr batch = queries.pointer();
        CUdeviceptr perm = null;
        if ((long) n * tuning.localitySortRatio() >= numBuckets) {
            final int bucketBits = 32 - Integer.numberOfLeadingZeros(numBuckets - 1);
            // whole 8-bit radix passes: a ninth bit would cost a pass
            final int wanted = Math.max(1, bucketBits - tuning.localityBitsBelowBuckets());
            final int sortBits = wanted > 8 ? wanted / 8 * 8 : wanted;
            final int[] bits = steps.topVaryingBits(queries, n, sortBits);
            if (bits != null) {
                steps.sortWithPositions(queries, n, bits[0], bits[1]);
                batch = steps.sortedKeys().pointer();
                perm = steps.positions().pointer();
            }
        }
        kernels.anyOrderLookup(mode).launch(bucketMax.pointer(), numBuckets, bucketSamples.pointer(),
                samplesFor(numBuckets), bucketHead.pointer(), pool.nodeKeys(), pool.nodeValues(), pool.nodeCount(),
                pool.nodeNext(), pool.nodeMax(), batch, perm, n, valuesResult.pointer(),
                DeviceBuffer.pointerOf(keysResult), null, 1);
    }

    /** Ranges walk chains from their heads, as unsorted gets do: long chains are cut first. */
    @Override
    void beforeRanges() {
        cutLongChainsIntoGroups();
    }

    /** One thread a range; a range whose lo is greater than its hi counts {@link KernelContract#RANGE_OUT_OF_ORDER}. */
    @Override
    void countRanges(DeviceBuffer lo, DeviceBuffer hi, int n, int limit, DeviceBuffer rangeCounts) {
        stream.fillInts(rangeCounts.at(n * 8L), 0, 2);
        kernels.rangeCount(n, lo.pointer(), hi.pointer(), limit, numBuckets, bucketMax.pointer(),
                bucketSamples.pointer(), samplesFor(numBuckets), bucketHead.pointer(), pool.nodeKeys(),
                pool.nodeCount(), pool.nodeNext(), pool.nodeMax(), rangeCounts.pointer());
    }

    /** One warp a range. */
    @Override
    void fillRanges(DeviceBuffer lo, DeviceBuffer hi, int n, int limit, DeviceBuffer rangeCounts,
                    DeviceBuffer rangeOffsets, DeviceBuffer keysOut, DeviceBuffer valuesOut) {
        kernels.rangeQuery(n, lo.pointer(), hi.pointer(), limit, numBuckets, bucketMax.pointer(),
                bucketSamples.pointer(), samplesFor(numBuckets), bucketHead.pointer(), pool.nodeKeys(),
                pool.nodeValues(), pool.nodeCount(), pool.nodeNext(), pool.nodeMax(), rangeOffsets.pointer(),
                keysOut.pointer(), valuesOut.pointer());
    }

    @Override
    int exportFromDevice(long fromKey, long[] keysOut, long[] valuesOut) {
        final int copied = (int) exportToDevice(fromKey, keysOut.length);
        download(outKeys.pointer(), keysOut, copied);
        download(outValues.pointer(), valuesOut, copied);
        return copied;
    }

    /** Writes up to {@code limit} pairs with keys {@code >= fromKey}, in key order, to outKeys/outValues. */
    private long exportToDevice(long fromKey, long limit) {
        final DeviceBuffer bucketCounts = counts.ensure((numBuckets + 1L) * Long.BYTES);
        final DeviceBuffer bucketOffsets = offsets.ensure((numBuckets + 1L) * Long.BYTES);
        kernels.exportPairs(0, numBuckets, bucketMax.pointer(), bucketHead.pointer(), pool.nodeKeys(),
                pool.nodeValues(), pool.nodeCount(), pool.nodeNext(), fromKey, bucketCounts.pointer(), null, limit,
                null, null);
        steps.scanLong(bucketCounts, bucketOffsets, numBuckets + 1);
        final long copied = Math.min(limit, steps.readLong(bucketOffsets, numBuckets));
        if (copied > 0) {
            kernels.exportPairs(1, numBuckets, bucketMax.pointer(), bucketHead.pointer(), pool.nodeKeys(),
                    pool.nodeValues(), pool.nodeCount(), pool.nodeNext(), fromKey, bucketCounts.pointer(),
                    bucketOffsets.pointer(), limit, outKeys.ensure(copied * 8).pointer(),
                    outValues.ensure(copied * 8).pointer());
        }
        return copied;
    }

    @Override
    protected long restructureLocked() {
        enter();
        final long before = pool.nodesInUse();
        if (size == 0) {
            layoutSorted(null, null, 0);
        } else {
            final long n = exportToDevice(Long.MIN_VALUE, size);
            layoutSorted(outKeys.buffer(), outValues::buffer, n);
        }
        return before - pool.nodesInUse();
    }

    // -------------------------------------------------------------------------------------------------------------
    // Shape

    @Override
    long keyCount() {
        return size;
    }

    @Override
    protected IndexStats statsLocked() {
        enter();
        final long[] chainCounts = measureChains();
        final long structureBytes = pool.bytes() + bucketMax.bytes() + bucketHead.bytes();
        return new IndexStats(Backend.GPU, size, numBuckets, chainCounts[SLOT_NODES_IN_USE], pool.freeTop(),
                NODE_SIZE, chainCounts[SLOT_LONGEST_CHAIN], structureBytes);
    }

    /** The counters with the nodes in use (SLOT_NODES_IN_USE) and the longest chain (SLOT_LONGEST_CHAIN). */
    private long[] measureChains() {
        counters.zeroAll();
        kernels.chainStats(numBuckets, bucketHead.pointer(), pool.nodeNext(), counters.pointer());
        return counters.read(SLOT_NODES_IN_USE, SLOT_LONGEST_CHAIN + 1);
    }

    /**
     * Unsorted gets and ranges walk a chain from its head for every query, so before them, where chains may have
     * grown past {@link ChainPolicy#longChain()} nodes since the buckets were last cut (skewed upserts grow chains
     * of tens of nodes in their hot buckets), the chains are measured, and if one is that long every chain longer
     * than {@link ChainPolicy#chainGroup()} nodes is cut into buckets of that many nodes (split_chains): no key
     * moves, only links are cut and the bucket arrays rewritten, about two walks of the chains. Sorted lookups walk
     * a chain once for all the queries of its bucket and do not cut them. Cuts are kept few because every bucket
     * costs the sorted lookups, upserts and deletes a work item (what cuts cost and bought: docs/gpu-tuning.md).
     * Where memory for the cut (or the GPU memory budget) is short, the
     * chains stay as they are.
     */
    private void cutLongChainsIntoGroups() {
        if (!chains.mayHaveLongChains() || size == 0) {
            return;
        }
        final DeviceBuffer groups;
        try {
            groups = chainGroups.ensure((numBuckets + 1L) * Integer.BYTES);
        } catch (GpuOutOfMemoryException e) {
            return; // the chains stay: lookups walk them
        }
        counters.zeroAll();
        kernels.splitChains(0, numBuckets, chains.chainGroup(), bucketMax.pointer(), bucketHead.pointer(),
                pool.nodeNext(), pool.nodeMax(), groups.pointer(), null, null, null, counters.pointer());
        final long longest = counters.readLong(SLOT_LONGEST_CHAIN);
        if (!chains.measuredBeforeWalks(longest)) {
            return;
        }
        final DeviceBuffer start;
        final int buckets;
        final DeviceBuffer max;
        final DeviceBuffer head;
        try {
            start = chainGroupStart.ensure((numBuckets + 1L) * Integer.BYTES);
            steps.scanInt(groups, start, numBuckets + 1);
            buckets = (int) steps.readInt(start, numBuckets);
            max = spareBucketMax.ensure(buckets * 8L);
            head = spareBucketHead.ensure(buckets * 4L);
            ensurePerBucketScratch(buckets);
        } catch (GpuOutOfMemoryException e) {
            return; // the chains stay: lookups walk them
        }
        kernels.splitChains(1, numBuckets, chains.chainGroup(), bucketMax.pointer(), bucketHead.pointer(),
                pool.nodeNext(), pool.nodeMax(), groups.pointer(), start.pointer(), max.pointer(), head.pointer(),
                counters.pointer());
        // the spares, now written, become the bucket arrays; the old arrays the spares of the next cut
        bucketMax = spareBucketMax.swap(bucketMax);
        bucketHead = spareBucketHead.swap(bucketHead);
        bucketCapacity = (int) Math.min(bucketMax.bytes() / 8, bucketHead.bytes() / 4);
        numBuckets = buckets;
        sampleBuckets();
        chains.cutIntoGroups();
        trace("split chains into " + buckets + " buckets");
    }

    /** The batches' per-bucket scratch, grown where the buckets change rather than in the next upsert. */
    private void ensurePerBucketScratch(int buckets) {
        for (Scratch perBucket : new Scratch[] {segStart, needNodes, allocBase}) {
            perBucket.ensure((buckets + 1L) * Integer.BYTES);
        }
        final DeviceBuffer samples = bucketSamples.buffer();
        if (bucketSamples.ensure(samplesFor(buckets) * 8L) != samples && samples != null) {
            // grown empty: the index's lookups read the samples until the buckets change, and a call may still fail
            sampleBuckets();
        }
    }

    private static int samplesFor(int buckets) {
        return (buckets + BUCKET_SAMPLE_STRIDE - 1) / BUCKET_SAMPLE_STRIDE;
    }

    /** Rewrites the bucket samples after bucketMax or numBuckets changed (their room is ensured beforehand). */
    private void sampleBuckets() {
        kernels.sampleBucketMax(bucketMax.pointer(), numBuckets, bucketSamples.pointer(), samplesFor(numBuckets));
    }

    /** Whether no chain is longer than the tuning's anyOrderChainMax + 1 nodes (measured where need be). */
    private boolean chainsAreShort() {
        return chains.shortForAnyOrder(() -> measureChains()[SLOT_LONGEST_CHAIN]);
    }

    // -------------------------------------------------------------------------------------------------------------
    // Batch preparation

    /**
     * Common step: splits the sorted batch into work items, one per bucket (segStart[b] = where bucket b's keys
     * start) or, for a batch of fewer than numBuckets / touchedBucketsRatio keys (the tuning's), one per touched
     * bucket (itemBuckets() names the bucket), so that small batches start no warp for buckets without work.
     * Returns the item count.
     */
    private int sliceBatch(CUdeviceptr sortedBatch, int n) {
        if ((long) n * tuning.touchedBucketsRatio() >= numBuckets) {
            touchedItems = false;
            kernels.bucketSlices(bucketMax.pointer(), numBuckets, sortedBatch, n,
                    segStart.ensure((numBuckets + 1L) * Integer.BYTES).pointer());
            return numBuckets;
        }
        touchedItems = true;
        final DeviceBuffer firstOfBucket = flags.ensure(n * 4L);
        final DeviceBuffer keyBucket = keyBuckets.ensure(n * 4L);
        kernels.touchedBuckets(bucketMax.pointer(), numBuckets, sortedBatch, n, firstOfBucket.pointer(),
                keyBucket.pointer());
        final DeviceBuffer itemIndex = flagPositions.ensure(n * 4L);
        steps.scanInt(firstOfBucket, itemIndex, n);
        kernels.compactTouched(firstOfBucket.pointer(), itemIndex.pointer(), keyBucket.pointer(), n,
                touchedBuckets.ensure(n * 4L).pointer(), segStart.ensure((n + 1L) * Integer.BYTES).pointer(),
                counters.at(SLOT_TOUCHED_ITEMS));
        return counters.readInt(SLOT_TOUCHED_ITEMS);
    }

    /** The item-to-bucket map of the last sliceBatch, or null where item b is bucket b. */
    private CUdeviceptr itemBuckets() {
        return touchedItems ? touchedBuckets.pointer() : null;
    }

    // -------------------------------------------------------------------------------------------------------------
    // Structure management

    /** Lays the sorted, distinct pairs out one node per bucket at the initial fill. */
    @Override
    void layoutSorted(DeviceBuffer keys, Supplier<DeviceBuffer> values, long m) {
        final long buckets = Math.max(1, (m + keysPerBuiltNode - 1) / keysPerBuiltNode);
        if (buckets > Integer.MAX_VALUE - 1) {
            throw new IllegalArgumentException(m + " keys need " + buckets + " buckets, more than the GPU backend "
                    + "addresses");
        }
        final int b = (int) buckets;
        final int usedNodes = m == 0 ? 0 : b;
        // grow first: nothing changes if memory runs out. The pool's arrays are allocated while a build's values may
        // still be crossing; they arrive and are checked before anything changes, and the steps that free memory
        // (a free waits for every copy under way) come after them.
        final DeviceNodePool.PoolArrays fresh = pool.allocateFor(usedNodes);
        trace("layout memory");
        final DeviceBuffer pairValues;
        try {
            pairValues = m == 0 ? null : values.get();
            if (b > bucketCapacity) {
                growBuckets(b);
            }
            ensurePerBucketScratch(b);
        } catch (RuntimeException e) {
            if (fresh != null) {
                fresh.close();
            }
            throw e;
        }
        // the old pool is not read: the pairs are in scratch
        pool.adopt(fresh);
        if (m == 0) {
            layoutEmpty();
            return;
        }
        kernels.buildNodes(keys.pointer(), pairValues.pointer(), m, keysPerBuiltNode, b, pool.nodeKeys(),
                pool.nodeValues());
        kernels.buildBuckets(keys.pointer(), m, keysPerBuiltNode, b, bucketMax.pointer(), bucketHead.pointer(),
                pool.nodeCount(), pool.nodeNext(), pool.nodeMax());
        pool.fillFreeStack(usedNodes);
        numBuckets = b;
        sampleBuckets();
        size = m;
        chains.laidOut();
        trace("laid out");
    }

    /** An empty structure: one bucket without nodes, every node of the pool on the free stack. */
    private void layoutEmpty() {
        if (bucketCapacity < 1) {
            growBuckets(1);
        }
        ensurePerBucketScratch(1);
        numBuckets = 1;
        stream.write(bucketMax.pointer(), Long.MAX_VALUE);
        sampleBuckets();
        stream.fillInts(bucketHead.pointer(), -1, 1);
        pool.fillFreeStack(0);
        size = 0;
        chains.laidOut();
    }

    private void growBuckets(int buckets) {
        final DeviceBuffer[] maxAndHead = DeviceBuffer.allocateAll(2, i -> i == 0
                ? DeviceBuffer.allocate(memory, buckets * 8L, "bucket max keys (" + buckets + " buckets)")
                : DeviceBuffer.allocate(memory, buckets * 4L, "bucket heads (" + buckets + " buckets)"));
        final DeviceBuffer max = maxAndHead[0];
        final DeviceBuffer head = maxAndHead[1];
        if (bucketMax != null) {
            // keep the current buckets valid: a later failure in the same call must leave the index intact
            stream.copy(max.pointer(), bucketMax.pointer(), numBuckets * 8L);
            stream.copy(head.pointer(), bucketHead.pointer(), numBuckets * 4L);
            bucketMax.closeAfter(stream);
            bucketHead.closeAfter(stream);
        }
        bucketMax = max;
        bucketHead = head;
        bucketCapacity = buckets;
    }

    @Override
    void releaseStructure() {
        if (timeline != null) {
            timeline.close();
            timeline = null;
        }
        pool.close();
        if (bucketMax != null) {
            bucketMax.close();
            bucketHead.close();
            bucketMax = bucketHead = null;
        }
    }

    @Override
    void enter() {
        super.enter();
        if (tuning.trace()) {
            timeline().begin("call");
        }
    }

    @Override
    void trace(String step) {
        if (tuning != null && tuning.trace()) { // null while the base class constructs
            timeline().mark(step);
        }
    }

    private StepTimeline timeline() {
        if (timeline == null) {
            timeline = new StepTimeline(stream, System.err);
        }
        return timeline;
    }

    /** Turns the automatic restructure of long chains on or off (benchmarks that build long chains on purpose). */
    void autoRestructure(boolean on) {
        tune(tuning.withAutoRestructure(on));
    }
}
