package io.flix.index.gpu;

import static io.flix.index.gpu.KernelLauncher.i32;
import static io.flix.index.gpu.KernelLauncher.i64;
import static io.flix.index.gpu.KernelLauncher.ptr;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.function.Consumer;

import jcuda.driver.CUdeviceptr;

/**
 * The kernels of {@code src/main/cuda/flix_kernels.cu}, one typed launch each: a method named as its kernel (in
 * camel case) takes the kernel's parameters, in order and by the same names, as {@code int} for {@code int},
 * {@code long} for {@code i64} and {@link CUdeviceptr} for a pointer (null for an optional array), and launches it
 * in the shape the kernel expects (one thread or one warp an item, as each kernel's bounds check says). A kernel
 * launched here and nowhere else: a changed signature is changed here once, and KernelContractTest, which reads
 * the kernel file, fails the build until it is. Parameters that shape the launch and are not the kernel's are
 * marked {@link GridRows}.
 */
final class FlixKernels {

    /** Threads of the grid-stride reductions: enough to fill the device, few global atomics. */
    private static final int REDUCTION_THREADS = 1 << 18;
    /** Blocks a recorded wide merge is written by. */
    private static final int WIDE_MERGE_BLOCKS = 128;

    /** A launch parameter that is not the kernel's: the rows of blocks of its grid. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.PARAMETER)
    @interface GridRows {
    }

    private final KernelLauncher launcher;
    private final DeviceStream stream;

    /** @param trace called with each kernel's name after it is issued (profiling; may do nothing) */
    FlixKernels(GpuRuntime.DeviceContext device, DeviceStream stream, Consumer<String> trace) {
        this.launcher = new KernelLauncher(device, null, stream, trace);
        this.stream = stream;
    }

    /** The stream the kernels run on. */
    DeviceStream stream() {
        return stream;
    }

    /** {@code iota_u32}: out[i] = i. */
    void iotaU32(CUdeviceptr out, int n) {
        launcher.threads("iota_u32", n, ptr(out), i32(n));
    }

    /**
     * {@code gather_values}: an update batch's values from batch positions [lo, hi) to their places in its sorted
     * keys' order, checked for the reserved one.
     */
    void gatherValues(CUdeviceptr values, CUdeviceptr perm, int n, int lo, int hi, CUdeviceptr out,
                      CUdeviceptr firstReserved) {
        launcher.threads("gather_values", n, ptr(values), ptr(perm), i32(n), i32(lo), i32(hi), ptr(out),
                ptr(firstReserved));
    }

    /**
     * {@code flag_last_of_run}: flags the last key of each run of equal keys and counts the runs; where
     * firstUnsorted is not null, finds the first broken sort promise as well.
     */
    void flagLastOfRun(CUdeviceptr keys, int n, CUdeviceptr flags, CUdeviceptr runs, CUdeviceptr firstUnsorted) {
        launcher.threads("flag_last_of_run", n, ptr(keys), i32(n), ptr(flags), ptr(runs), ptr(firstUnsorted));
    }

    /** {@code sort_within_digits}: sorts the runs of keys equal in the bits a digit sort left unsorted. */
    void sortWithinDigits(CUdeviceptr keys, CUdeviceptr values, int n, int beginBit, CUdeviceptr flags,
                          CUdeviceptr runCount, CUdeviceptr longRunCount) {
        launcher.threads("sort_within_digits", n, ptr(keys), ptr(values), i32(n), i32(beginBit), ptr(flags),
                ptr(runCount), ptr(longRunCount));
    }

    /** {@code sort_within_digits_positions}: sort_within_digits with each key's batch position beside it. */
    void sortWithinDigitsPositions(CUdeviceptr keys, CUdeviceptr positions, int n, int beginBit, CUdeviceptr flags,
                                   CUdeviceptr runCount, CUdeviceptr longRunCount) {
        launcher.threads("sort_within_digits_positions", n, ptr(keys), ptr(positions), i32(n), i32(beginBit),
                ptr(flags), ptr(runCount), ptr(longRunCount));
    }

    /** {@code key_spread}: the bits in which the keys differ (grid-stride); checks the values where not null. */
    void keySpread(CUdeviceptr keys, CUdeviceptr values, int n, CUdeviceptr spread, CUdeviceptr firstReserved) {
        launcher.threads("key_spread", Math.min(n, REDUCTION_THREADS), ptr(keys), ptr(values), i32(n), ptr(spread),
                ptr(firstReserved));
    }

    /** {@code compact_flagged}: compacts the flagged pairs to their scanned positions. */
    void compactFlagged(CUdeviceptr keys, CUdeviceptr values, CUdeviceptr flags, CUdeviceptr pos, int n,
                        CUdeviceptr keysOut, CUdeviceptr valuesOut, CUdeviceptr countOut) {
        launcher.threads("compact_flagged", n, ptr(keys), ptr(values), ptr(flags), ptr(pos), i32(n), ptr(keysOut),
                ptr(valuesOut), ptr(countOut));
    }

    /** {@code check_batch}: finds the first reserved value and, where asked, the first broken sort promise. */
    void checkBatch(CUdeviceptr keys, CUdeviceptr values, int n, int checkSorted, CUdeviceptr firstReserved,
                    CUdeviceptr firstUnsorted) {
        launcher.threads("check_batch", n, ptr(keys), ptr(values), i32(n), i32(checkSorted), ptr(firstReserved),
                ptr(firstUnsorted));
    }

    /** {@code bucket_slices}: where each bucket's keys start in the sorted batch. */
    void bucketSlices(CUdeviceptr bucketMax, int numBuckets, CUdeviceptr keys, int n, CUdeviceptr segStart) {
        launcher.threads("bucket_slices", numBuckets + 1L, ptr(bucketMax), i32(numBuckets), ptr(keys), i32(n),
                ptr(segStart));
    }

    /** {@code touched_buckets}: each key's bucket, the first key of each bucket flagged. */
    void touchedBuckets(CUdeviceptr bucketMax, int numBuckets, CUdeviceptr keys, int n, CUdeviceptr flags,
                        CUdeviceptr keyBucket) {
        launcher.threads("touched_buckets", n, ptr(bucketMax), i32(numBuckets), ptr(keys), i32(n), ptr(flags),
                ptr(keyBucket));
    }

    /** {@code compact_touched}: the work items of the touched buckets and their slices. */
    void compactTouched(CUdeviceptr flags, CUdeviceptr pos, CUdeviceptr keyBucket, int n, CUdeviceptr itemBucket,
                        CUdeviceptr segStart, CUdeviceptr itemCount) {
        launcher.threads("compact_touched", n, ptr(flags), ptr(pos), ptr(keyBucket), i32(n), ptr(itemBucket),
                ptr(segStart), ptr(itemCount));
    }

    /** {@code build_nodes}: writes the sorted pairs into one node per bucket. */
    void buildNodes(CUdeviceptr keys, CUdeviceptr values, long m, int perNode, int numBuckets, CUdeviceptr nodeKeys,
                    CUdeviceptr nodeValues) {
        launcher.threads("build_nodes", (long) numBuckets * KernelContract.NODE_SIZE, ptr(keys), ptr(values), i64(m),
                i32(perNode), i32(numBuckets), ptr(nodeKeys), ptr(nodeValues));
    }

    /** {@code build_buckets}: writes the buckets and the nodes' counts, links and max keys of a build. */
    void buildBuckets(CUdeviceptr keys, long m, int perNode, int numBuckets, CUdeviceptr bucketMax,
                      CUdeviceptr bucketHead, CUdeviceptr nodeCount, CUdeviceptr nodeNext, CUdeviceptr nodeMax) {
        launcher.threads("build_buckets", numBuckets, ptr(keys), i64(m), i32(perNode), i32(numBuckets), ptr(bucketMax),
                ptr(bucketHead), ptr(nodeCount), ptr(nodeNext), ptr(nodeMax));
    }

    /** {@code fill_free_stack}: freeStack[from + i] = firstNode + i. */
    void fillFreeStack(CUdeviceptr freeStack, long from, int firstNode, int count) {
        launcher.threads("fill_free_stack", count, ptr(freeStack), i64(from), i32(firstNode), i32(count));
    }

    /** The lookups' parameters (LOOKUP_PARAMS in the kernel file): lookup_get, lookup_ceiling and lookup_floor. */
    @FunctionalInterface
    interface Lookup {
        void launch(int numBuckets, int numItems, CUdeviceptr itemBucket, CUdeviceptr bucketHead,
                    CUdeviceptr nodeKeys, CUdeviceptr nodeValues, CUdeviceptr nodeCount, CUdeviceptr nodeNext,
                    CUdeviceptr nodeMax, CUdeviceptr queries, CUdeviceptr perm, CUdeviceptr segStart,
                    CUdeviceptr keysOut, CUdeviceptr valuesOut, CUdeviceptr unsortedAt);
    }

    /** The lookup kernel of a mode (KernelContract.MODE_GET, MODE_CEILING or MODE_FLOOR). */
    Lookup lookup(int mode) {
        return switch (mode) {
            case KernelContract.MODE_GET -> this::lookupGet;
            case KernelContract.MODE_CEILING -> this::lookupCeiling;
            case KernelContract.MODE_FLOOR -> this::lookupFloor;
            default -> throw new IllegalArgumentException("no lookup mode " + mode);
        };
    }

    /** {@code lookup_get}: exact lookups of sorted queries. */
    void lookupGet(int numBuckets, int numItems, CUdeviceptr itemBucket, CUdeviceptr bucketHead, CUdeviceptr nodeKeys,
                   CUdeviceptr nodeValues, CUdeviceptr nodeCount, CUdeviceptr nodeNext, CUdeviceptr nodeMax,
                   CUdeviceptr queries, CUdeviceptr perm, CUdeviceptr segStart, CUdeviceptr keysOut,
                   CUdeviceptr valuesOut, CUdeviceptr unsortedAt) {
        launcher.warps("lookup_get", numItems, i32(numBuckets), i32(numItems), ptr(itemBucket), ptr(bucketHead),
                ptr(nodeKeys), ptr(nodeValues), ptr(nodeCount), ptr(nodeNext), ptr(nodeMax), ptr(queries), ptr(perm),
                ptr(segStart), ptr(keysOut), ptr(valuesOut), ptr(unsortedAt));
    }

    /** {@code lookup_ceiling}: ceiling lookups of sorted queries. */
    void lookupCeiling(int numBuckets, int numItems, CUdeviceptr itemBucket, CUdeviceptr bucketHead,
                       CUdeviceptr nodeKeys, CUdeviceptr nodeValues, CUdeviceptr nodeCount, CUdeviceptr nodeNext,
                       CUdeviceptr nodeMax, CUdeviceptr queries, CUdeviceptr perm, CUdeviceptr segStart,
                       CUdeviceptr keysOut, CUdeviceptr valuesOut, CUdeviceptr unsortedAt) {
        launcher.warps("lookup_ceiling", numItems, i32(numBuckets), i32(numItems), ptr(itemBucket), ptr(bucketHead),
                ptr(nodeKeys), ptr(nodeValues), ptr(nodeCount), ptr(nodeNext), ptr(nodeMax), ptr(queries), ptr(perm),
                ptr(segStart), ptr(keysOut), ptr(valuesOut), ptr(unsortedAt));
    }

    /** {@code lookup_floor}: floor lookups of sorted queries. */
    void lookupFloor(int numBuckets, int numItems, CUdeviceptr itemBucket, CUdeviceptr bucketHead, CUdeviceptr nodeKeys,
                     CUdeviceptr nodeValues, CUdeviceptr nodeCount, CUdeviceptr nodeNext, CUdeviceptr nodeMax,
                     CUdeviceptr queries, CUdeviceptr perm, CUdeviceptr segStart, CUdeviceptr keysOut,
                     CUdeviceptr valuesOut, CUdeviceptr unsortedAt) {
        launcher.warps("lookup_floor", numItems, i32(numBuckets), i32(numItems), ptr(itemBucket), ptr(bucketHead),
                ptr(nodeKeys), ptr(nodeValues), ptr(nodeCount), ptr(nodeNext), ptr(nodeMax), ptr(queries), ptr(perm),
                ptr(segStart), ptr(keysOut), ptr(valuesOut), ptr(unsortedAt));
    }

    /**
     * The any-order lookups' parameters (ANY_ORDER_PARAMS in the kernel file): one thread a query, in any order;
     * keysOut unused by a get.
     */
    @FunctionalInterface
    interface AnyOrderLookup {
        void launch(CUdeviceptr bucketMax, int numBuckets, CUdeviceptr bucketSamples, int numSamples,
                    CUdeviceptr bucketHead, CUdeviceptr nodeKeys, CUdeviceptr nodeValues, CUdeviceptr nodeCount,
                    CUdeviceptr nodeNext, CUdeviceptr nodeMax, CUdeviceptr queries, CUdeviceptr perm, int n,
                    CUdeviceptr valuesOut, CUdeviceptr keysOut, CUdeviceptr firstUnsorted, int checkFrom);
    }

    /** The any-order lookup kernel's name of a mode (KernelContract.MODE_GET, MODE_CEILING or MODE_FLOOR). */
    static String anyOrderKernel(int mode) {
        return switch (mode) {
            case KernelContract.MODE_GET -> "lookup_get_any_order";
            case KernelContract.MODE_CEILING -> "lookup_ceiling_any_order";
            case KernelContract.MODE_FLOOR -> "lookup_floor_any_order";
            default -> throw new IllegalArgumentException("no lookup mode " + mode);
        };
    }

    /** The any-order lookup kernel's launch of a mode, as {@link #anyOrderKernel}. */
    AnyOrderLookup anyOrderLookup(int mode) {
        return switch (mode) {
            case KernelContract.MODE_GET -> this::lookupGetAnyOrder;
            case KernelContract.MODE_CEILING -> this::lookupCeilingAnyOrder;
            case KernelContract.MODE_FLOOR -> this::lookupFloorAnyOrder;
            default -> throw new IllegalArgumentException("no lookup mode " + mode);
        };
    }

    /** {@code lookup_get_any_order}: exact lookups of queries in any order. */
    void lookupGetAnyOrder(CUdeviceptr bucketMax, int numBuckets, CUdeviceptr bucketSamples, int numSamples,
                    CUdeviceptr bucketHead, CUdeviceptr nodeKeys, CUdeviceptr nodeValues, CUdeviceptr nodeCount,
                    CUdeviceptr nodeNext, CUdeviceptr nodeMax, CUdeviceptr queries, CUdeviceptr perm, int n,
                    CUdeviceptr valuesOut, CUdeviceptr keysOut, CUdeviceptr firstUnsorted, int checkFrom) {
        launcher.threads("lookup_get_any_order", n, ptr(bucketMax), i32(numBuckets), ptr(bucketSamples),
                i32(numSamples), ptr(bucketHead), ptr(nodeKeys), ptr(nodeValues), ptr(nodeCount), ptr(nodeNext),
                ptr(nodeMax), ptr(queries), ptr(perm), i32(n), ptr(valuesOut), ptr(keysOut), ptr(firstUnsorted),
                i32(checkFrom));
    }

    /** {@code lookup_ceiling_any_order}: ceiling lookups of queries in any order. */
    void lookupCeilingAnyOrder(CUdeviceptr bucketMax, int numBuckets, CUdeviceptr bucketSamples, int numSamples,
                    CUdeviceptr bucketHead, CUdeviceptr nodeKeys, CUdeviceptr nodeValues, CUdeviceptr nodeCount,
                    CUdeviceptr nodeNext, CUdeviceptr nodeMax, CUdeviceptr queries, CUdeviceptr perm, int n,
                    CUdeviceptr valuesOut, CUdeviceptr keysOut, CUdeviceptr firstUnsorted, int checkFrom) {
        launcher.threads("lookup_ceiling_any_order", n, ptr(bucketMax), i32(numBuckets), ptr(bucketSamples),
                i32(numSamples), ptr(bucketHead), ptr(nodeKeys), ptr(nodeValues), ptr(nodeCount), ptr(nodeNext),
                ptr(nodeMax), ptr(queries), ptr(perm), i32(n), ptr(valuesOut), ptr(keysOut), ptr(firstUnsorted),
                i32(checkFrom));
    }

    /** {@code lookup_floor_any_order}: floor lookups of queries in any order. */
    void lookupFloorAnyOrder(CUdeviceptr bucketMax, int numBuckets, CUdeviceptr bucketSamples, int numSamples,
                    CUdeviceptr bucketHead, CUdeviceptr nodeKeys, CUdeviceptr nodeValues, CUdeviceptr nodeCount,
                    CUdeviceptr nodeNext, CUdeviceptr nodeMax, CUdeviceptr queries, CUdeviceptr perm, int n,
                    CUdeviceptr valuesOut, CUdeviceptr keysOut, CUdeviceptr firstUnsorted, int checkFrom) {
        launcher.threads("lookup_floor_any_order", n, ptr(bucketMax), i32(numBuckets), ptr(bucketSamples),
                i32(numSamples), ptr(bucketHead), ptr(nodeKeys), ptr(nodeValues), ptr(nodeCount), ptr(nodeNext),
                ptr(nodeMax), ptr(queries), ptr(perm), i32(n), ptr(valuesOut), ptr(keysOut), ptr(firstUnsorted),
                i32(checkFrom));
    }

    /** {@code sample_bucket_max}: every BUCKET_SAMPLE_STRIDE-th bucket's max key, and the last bucket's. */
    void sampleBucketMax(CUdeviceptr bucketMax, int numBuckets, CUdeviceptr samples, int numSamples) {
        launcher.threads("sample_bucket_max", numSamples, ptr(bucketMax), i32(numBuckets), ptr(samples),
                i32(numSamples));
    }

    /** {@code upsert_count}: the nodes each work item's merges take (and the scan's extra element). */
    void upsertCount(int numItems, CUdeviceptr itemBucket, CUdeviceptr bucketHead, CUdeviceptr nodeKeys,
                     CUdeviceptr nodeCount, CUdeviceptr nodeNext, CUdeviceptr nodeMax, CUdeviceptr keys,
                     CUdeviceptr segStart, CUdeviceptr needNodes, CUdeviceptr counters) {
        launcher.threads("upsert_count", numItems + 1L, i32(numItems), ptr(itemBucket), ptr(bucketHead), ptr(nodeKeys),
                ptr(nodeCount), ptr(nodeNext), ptr(nodeMax), ptr(keys), ptr(segStart), ptr(needNodes), ptr(counters));
    }

    /** {@code upsert_apply}: merges each work item's slice into its nodes; records the wide merges. */
    void upsertApply(int numItems, CUdeviceptr itemBucket, CUdeviceptr bucketHead, CUdeviceptr nodeKeys,
                     CUdeviceptr nodeValues, CUdeviceptr nodeCount, CUdeviceptr nodeNext, CUdeviceptr nodeMax,
                     CUdeviceptr freeStack, long freeTop, CUdeviceptr keys, CUdeviceptr values, CUdeviceptr segStart,
                     CUdeviceptr allocBase, CUdeviceptr counters, CUdeviceptr wide, CUdeviceptr wideCount) {
        launcher.warps("upsert_apply", numItems, i32(numItems), ptr(itemBucket), ptr(bucketHead), ptr(nodeKeys),
                ptr(nodeValues), ptr(nodeCount), ptr(nodeNext), ptr(nodeMax), ptr(freeStack), i64(freeTop), ptr(keys),
                ptr(values), ptr(segStart), ptr(allocBase), ptr(counters), ptr(wide), ptr(wideCount));
    }

    /** {@code wide_merge_write}: writes the recorded wide merges' pairs; a row of blocks a merge. */
    void wideMergeWrite(@GridRows int merges, CUdeviceptr wide, CUdeviceptr keys, CUdeviceptr values,
                        CUdeviceptr freeStack, long freeTop, CUdeviceptr nodeKeys, CUdeviceptr nodeValues) {
        launcher.grid("wide_merge_write", WIDE_MERGE_BLOCKS, merges, ptr(wide), ptr(keys), ptr(values), ptr(freeStack),
                i64(freeTop), ptr(nodeKeys), ptr(nodeValues));
    }

    /** {@code wide_merge_meta}: writes the recorded wide merges' counts, links and max keys; a row a merge. */
    void wideMergeMeta(@GridRows int merges, CUdeviceptr wide, CUdeviceptr freeStack, long freeTop,
                       CUdeviceptr nodeKeys, CUdeviceptr nodeCount, CUdeviceptr nodeNext, CUdeviceptr nodeMax) {
        launcher.grid("wide_merge_meta", WIDE_MERGE_BLOCKS, merges, ptr(wide), ptr(freeStack), i64(freeTop),
                ptr(nodeKeys), ptr(nodeCount), ptr(nodeNext), ptr(nodeMax));
    }

    /** {@code upsert_apply_single}: merges each work item's slice by one thread (light batches). */
    void upsertApplySingle(int numItems, CUdeviceptr itemBucket, CUdeviceptr bucketHead, CUdeviceptr nodeKeys,
                           CUdeviceptr nodeValues, CUdeviceptr nodeCount, CUdeviceptr nodeNext, CUdeviceptr nodeMax,
                           CUdeviceptr freeStack, long freeTop, CUdeviceptr keys, CUdeviceptr values,
                           CUdeviceptr segStart, CUdeviceptr allocBase, CUdeviceptr counters) {
        launcher.threads("upsert_apply_single", numItems, i32(numItems), ptr(itemBucket), ptr(bucketHead),
                ptr(nodeKeys), ptr(nodeValues), ptr(nodeCount), ptr(nodeNext), ptr(nodeMax), ptr(freeStack),
                i64(freeTop), ptr(keys), ptr(values), ptr(segStart), ptr(allocBase), ptr(counters));
    }

    /** {@code delete_apply}: deletes each work item's slice from its nodes. */
    void deleteApply(int numItems, CUdeviceptr itemBucket, CUdeviceptr bucketHead, CUdeviceptr nodeKeys,
                     CUdeviceptr nodeValues, CUdeviceptr nodeCount, CUdeviceptr nodeNext, CUdeviceptr nodeMax,
                     CUdeviceptr freeStack, CUdeviceptr keys, CUdeviceptr segStart, CUdeviceptr counters) {
        launcher.warps("delete_apply", numItems, i32(numItems), ptr(itemBucket), ptr(bucketHead), ptr(nodeKeys),
                ptr(nodeValues), ptr(nodeCount), ptr(nodeNext), ptr(nodeMax), ptr(freeStack), ptr(keys), ptr(segStart),
                ptr(counters));
    }

    /** {@code range_group_ends}: where each of {@code groups} equal groups of ranges starts in the offsets. */
    void rangeGroupEnds(CUdeviceptr offsets, int n, int groups, CUdeviceptr ends) {
        launcher.threads("range_group_ends", groups + 1L, ptr(offsets), i32(n), i32(groups), ptr(ends));
    }

    /** {@code range_count}: each range's pairs, at most limit (one thread a range). */
    void rangeCount(int numRanges, CUdeviceptr lo, CUdeviceptr hi, int limit, int numBuckets, CUdeviceptr bucketMax,
                    CUdeviceptr bucketSamples, int numSamples, CUdeviceptr bucketHead, CUdeviceptr nodeKeys,
                    CUdeviceptr nodeCount, CUdeviceptr nodeNext, CUdeviceptr nodeMax, CUdeviceptr counts) {
        launcher.threads("range_count", numRanges, i32(numRanges), ptr(lo), ptr(hi), i32(limit), i32(numBuckets),
                ptr(bucketMax), ptr(bucketSamples), i32(numSamples), ptr(bucketHead), ptr(nodeKeys), ptr(nodeCount),
                ptr(nodeNext), ptr(nodeMax), ptr(counts));
    }

    /** {@code range_query}: writes each range's pairs from its offset (one warp a range). */
    void rangeQuery(int numRanges, CUdeviceptr lo, CUdeviceptr hi, int limit, int numBuckets, CUdeviceptr bucketMax,
                    CUdeviceptr bucketSamples, int numSamples, CUdeviceptr bucketHead, CUdeviceptr nodeKeys,
                    CUdeviceptr nodeValues, CUdeviceptr nodeCount, CUdeviceptr nodeNext, CUdeviceptr nodeMax,
                    CUdeviceptr offsets, CUdeviceptr keysOut, CUdeviceptr valuesOut) {
        launcher.warps("range_query", numRanges, i32(numRanges), ptr(lo), ptr(hi), i32(limit), i32(numBuckets),
                ptr(bucketMax), ptr(bucketSamples), i32(numSamples), ptr(bucketHead), ptr(nodeKeys),
                ptr(nodeValues), ptr(nodeCount), ptr(nodeNext), ptr(nodeMax), ptr(offsets), ptr(keysOut),
                ptr(valuesOut));
    }

    /** {@code export_pairs}: counts (pass 0) or writes (pass 1) each bucket's pairs from fromKey. */
    void exportPairs(int pass, int numBuckets, CUdeviceptr bucketMax, CUdeviceptr bucketHead, CUdeviceptr nodeKeys,
                     CUdeviceptr nodeValues, CUdeviceptr nodeCount, CUdeviceptr nodeNext, long fromKey,
                     CUdeviceptr counts, CUdeviceptr offsets, long limit, CUdeviceptr keysOut, CUdeviceptr valuesOut) {
        launcher.warps("export_pairs", numBuckets + 1L, i32(pass), i32(numBuckets), ptr(bucketMax), ptr(bucketHead),
                ptr(nodeKeys), ptr(nodeValues), ptr(nodeCount), ptr(nodeNext), i64(fromKey), ptr(counts), ptr(offsets),
                i64(limit), ptr(keysOut), ptr(valuesOut));
    }

    /** {@code split_chains}: measures the chains (pass 0) or cuts them into groups (pass 1). */
    void splitChains(int pass, int numBuckets, int group, CUdeviceptr bucketMax, CUdeviceptr bucketHead,
                     CUdeviceptr nodeNext, CUdeviceptr nodeMax, CUdeviceptr groups, CUdeviceptr start,
                     CUdeviceptr newMax, CUdeviceptr newHead, CUdeviceptr counters) {
        launcher.threads("split_chains", numBuckets + 1L, i32(pass), i32(numBuckets), i32(group), ptr(bucketMax),
                ptr(bucketHead), ptr(nodeNext), ptr(nodeMax), ptr(groups), ptr(start), ptr(newMax), ptr(newHead),
                ptr(counters));
    }

    /** {@code chain_stats}: nodes in use and the longest chain. */
    void chainStats(int numBuckets, CUdeviceptr bucketHead, CUdeviceptr nodeNext, CUdeviceptr counters) {
        launcher.threads("chain_stats", numBuckets, i32(numBuckets), ptr(bucketHead), ptr(nodeNext), ptr(counters));
    }
}
