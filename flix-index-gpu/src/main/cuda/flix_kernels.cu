// FliX index kernels: compiled by nvcc during the Maven build into flix_kernels.fatbin and loaded through the
// CUDA driver API (JCuda). Keys and values are signed 64-bit; nodes hold NODE_SIZE keys; one warp works on one
// bucket (compute-to-bucket), lane i holding key i of the node in its registers.
//
// Device layout (structure of arrays): bucketMax[B] (the max-key-per-bucket array), bucketHead[B] (first node,
// -1 for an empty bucket), per node: keys[NODE_SIZE], values[NODE_SIZE], count, next (-1 ends a chain) and
// nodeMax (largest stored key). Invariants: every node in a chain holds at least one key; keys ascend along a
// chain; bucket b holds keys in (bucketMax[b-1], bucketMax[b]]; the last bucketMax is INT64_MAX.

#include <climits>
#include <cstdint>

#include "kernel_contract.h"

#define FULL_MASK 0xffffffffu
// When a merge overflows a node, the keys are spread evenly over nodes filled to about 3/4, leaving room for
// later inserts without a second split right away.
#define SPLIT_FILL 24

__device__ __forceinline__ unsigned lanemask_lt() {
    unsigned m;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
    return m;
}

// First index in [lo, hi) whose key is > x.
__device__ __forceinline__ int upper_bound_global(const i64* keys, int lo, int hi, i64 x) {
    while (lo < hi) {
        int mid = lo + ((hi - lo) >> 1);
        if (keys[mid] <= x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// First index in [lo, hi) whose key is >= x.
__device__ __forceinline__ int lower_bound_global(const i64* keys, int lo, int hi, i64 x) {
    while (lo < hi) {
        int mid = lo + ((hi - lo) >> 1);
        if (keys[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// First index in [lo, hi] whose key is >= x, where keys[hi] >= x, searched by the whole warp together (every lane
// calls it with the same arguments and gets the same answer): each level the lanes probe the ends of 32 equal
// pieces at once and keep the first piece that reaches x, so a search of 2^k keys waits for about k / 5 loads.
__device__ __forceinline__ int warp_lower_bound(const i64* keys, int lo, int hi, i64 x) {
    const int lane = threadIdx.x & 31;
    while (hi - lo >= 32) {
        // 32 pieces of step keys cover [lo, hi]: lane 31's probe is hi, which reaches x
        const int step = (hi - lo + 32) / 32;
        const unsigned reached = __ballot_sync(FULL_MASK, keys[min(lo + (lane + 1) * step - 1, hi)] >= x);
        const int piece = __ffs(reached) - 1;
        hi = min(lo + (piece + 1) * step - 1, hi);
        lo += piece * step;
    }
    const unsigned reached = __ballot_sync(FULL_MASK, lane <= hi - lo && keys[lo + lane] >= x);
    return lo + __ffs(reached) - 1;
}

// First index in [0, cnt) of keys held one a lane (laneKey of lane i: the i-th, ascending) that is >= x (cnt when
// none). Every lane takes part (the shuffles need the whole warp); each lane searches for its own x.
__device__ __forceinline__ int lower_bound_lanes(i64 laneKey, int cnt, i64 x) {
    int lo = 0;
    int len = cnt;
#pragma unroll
    for (int step = 0; step < 6; step++) {
        int half = len >> 1;
        int probe = min(lo + half, NODE_SIZE - 1);
        i64 k = __shfl_sync(FULL_MASK, laneKey, probe);
        if (len > 0) {
            if (k < x) {
                lo = lo + half + 1;
                len = len - half - 1;
            } else {
                len = half;
            }
        }
    }
    return lo;
}

__device__ __forceinline__ int warp_id_global() {
    return (int)((blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x) >> 5);
}

// ---------------------------------------------------------------------------------------------------------------
// Batch preparation

extern "C" __global__ void iota_u32(unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (unsigned)i;
}

// out[i] = values[perm[i]] where perm[i] is in [lo, hi): an update batch's values in the order its keys were sorted
// into (the keys were sorted with their positions while the values crossed), gathered a part of the copy at a time
// as the parts arrive. Where firstReserved is not null, the smallest batch position of a reserved value lowers it.
extern "C" __global__ void gather_values(const i64* __restrict__ values, const unsigned* __restrict__ perm, int n,
                                         int lo, int hi, i64* __restrict__ out, int* firstReserved) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int from = (int)perm[i];
    if (from < lo || from >= hi) return;
    const i64 v = values[from];
    out[i] = v;
    if (firstReserved && v == NOT_FOUND) atomicMin(firstReserved, from);
}

// flags[i] = 1 where keys[i] is the last of its run of equal keys: after a stable sort that is the key's last
// occurrence in batch order, the one that wins. *runs counts the flags (once per block), so that a batch without
// duplicates skips the compaction. Where firstUnsorted is not null (a batch the caller promised sorted), the
// smallest i with keys[i - 1] > keys[i] lowers it, as check_batch does: one pass over the keys for both.
extern "C" __global__ void flag_last_of_run(const i64* keys, int n, int* flags, int* runs, int* firstUnsorted) {
    __shared__ int blockRuns;
    if (threadIdx.x == 0) blockRuns = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int flag = 0;
    if (i < n) {
        const i64 key = keys[i];
        const i64 next = i == n - 1 ? key : keys[i + 1];
        flag = (i == n - 1 || key != next) ? 1 : 0;
        flags[i] = flag;
        if (firstUnsorted && key > next) atomicMin(firstUnsorted, i + 1);
    }
    const int warpRuns = __popc(__ballot_sync(FULL_MASK, flag));
    if ((threadIdx.x & 31) == 0 && warpRuns) atomicAdd(&blockRuns, warpRuns);
    __syncthreads();
    if (threadIdx.x == 0 && blockRuns) atomicAdd(runs, blockRuns);
}

// After CUB has sorted a batch stably by key bits [beginBit, endBit) only (the bits from endBit up are the same in
// every key), keys that share bits [beginBit, 64) form runs in batch order. This sorts each run by the whole key,
// stably (an insertion sort by the run's first thread: with a few more sorted bits than log2(n), runs hold a key
// or two), so the batch ends fully sorted for half a full sort's passes. flags (may be null) then marks the last
// of each run of equal keys, as flag_last_of_run does, and *runCount counts them (once per block). A run longer
// than MAX_DIGIT_RUN (keys clustered below the sorted bits) is left as it is and counted in *longRunCount: the
// host then sorts the batch fully.
#define MAX_DIGIT_RUN 32
template <typename Value>
__device__ __forceinline__ void sort_within_digit_runs(i64* keys, Value* values, int n, int beginBit, int* flags,
                                                       int* runCount, int* longRunCount) {
    __shared__ int blockRuns;
    if (threadIdx.x == 0) blockRuns = 0;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    int runs = 0;
    if (i < n) {
        // a neighbour being sorted by its run's thread keeps its digit, so these reads are safe
        const unsigned long long digit = (unsigned long long)keys[i] >> beginBit;
        if (i == 0 || ((unsigned long long)keys[i - 1] >> beginBit) != digit) {
            int end = i + 1;
            while (end < n && end - i <= MAX_DIGIT_RUN && ((unsigned long long)keys[end] >> beginBit) == digit) {
                end++;
            }
            if (end - i > MAX_DIGIT_RUN) {
                atomicAdd(longRunCount, 1);
            } else {
                for (int j = i + 1; j < end; j++) {
                    const i64 key = keys[j];
                    const Value val = values ? values[j] : 0;
                    int t = j;
                    for (; t > i && keys[t - 1] > key; t--) {  // only greater keys move: stable
                        keys[t] = keys[t - 1];
                        if (values) values[t] = values[t - 1];
                    }
                    keys[t] = key;
                    if (values) values[t] = val;
                }
                if (flags) {
                    for (int t = i; t < end; t++) {
                        const int last = (t == end - 1 || keys[t] != keys[t + 1]) ? 1 : 0;
                        flags[t] = last;
                        runs += last;
                    }
                }
            }
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) runs += __shfl_xor_sync(FULL_MASK, runs, offset);
    if ((threadIdx.x & 31) == 0 && runs) atomicAdd(&blockRuns, runs);
    __syncthreads();
    if (threadIdx.x == 0 && blockRuns) atomicAdd(runCount, blockRuns);
}

extern "C" __global__ void sort_within_digits(i64* keys, i64* values, int n, int beginBit, int* flags,
                                              int* runCount, int* longRunCount) {
    sort_within_digit_runs(keys, values, n, beginBit, flags, runCount, longRunCount);
}

// sort_within_digits with each key's batch position beside it (an update's keys sorted while its values cross).
extern "C" __global__ void sort_within_digits_positions(i64* keys, unsigned* positions, int n, int beginBit,
                                                        int* flags, int* runCount, int* longRunCount) {
    sort_within_digit_runs(keys, positions, n, beginBit, flags, runCount, longRunCount);
}

// *spread |= keys[i] ^ keys[0] over the batch (grid-stride, one global atomic per block): its highest set bit is
// the highest bit in which the batch's keys differ, so the bits above it need no sorting. Where values is not null
// the same pass checks them, as check_batch does (one pass over the batch instead of two before an update batch's
// sort): *firstReserved = the smallest i with values[i] == NOT_FOUND.
extern "C" __global__ void key_spread(const i64* keys, const i64* values, int n, unsigned long long* spread,
                                      int* firstReserved) {
    __shared__ unsigned long long blockBits;
    __shared__ int blockBad;
    if (threadIdx.x == 0) { blockBits = 0; blockBad = INT_MAX; }
    __syncthreads();
    const i64 first = keys[0];
    unsigned long long bits = 0;
    int bad = INT_MAX;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        bits |= (unsigned long long)(keys[i] ^ first);
        if (values && values[i] == NOT_FOUND && i < bad) bad = i;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        bits |= __shfl_xor_sync(FULL_MASK, bits, offset);
        bad = min(bad, __shfl_xor_sync(FULL_MASK, bad, offset));
    }
    if ((threadIdx.x & 31) == 0) {
        if (bits) atomicOr(&blockBits, bits);
        if (bad != INT_MAX) atomicMin(&blockBad, bad);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (blockBits) atomicOr(spread, blockBits);
        if (blockBad != INT_MAX) atomicMin(firstReserved, blockBad);
    }
}

extern "C" __global__ void compact_flagged(const i64* keys, const i64* values, const int* flags, const int* pos,
                                           int n, i64* keysOut, i64* valuesOut, i64* countOut) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && flags[i]) {
        keysOut[pos[i]] = keys[i];
        valuesOut[pos[i]] = values[i];
    }
    if (i == n - 1) *countOut = (i64)pos[i] + flags[i];
}

// Batch checks on the device (cheaper than a host pass over a large batch): *firstReserved = smallest i with
// values[i] == NOT_FOUND (values may be null), *firstUnsorted = smallest i with keys[i - 1] > keys[i] (when asked).
extern "C" __global__ void check_batch(const i64* keys, const i64* values, int n, int checkSorted,
                                       int* firstReserved, int* firstUnsorted) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (values && values[i] == NOT_FOUND) atomicMin(firstReserved, i);
    if (checkSorted && i > 0 && keys[i - 1] > keys[i]) atomicMin(firstUnsorted, i);
}

// Common step. The bucket kernels below run over work items: item w is bucket itemBucket[w] (or bucket w where
// itemBucket is null) with the batch slice [segStart[w], segStart[w + 1]).
//
// Heavy batches: one item per bucket. segStart[b] = first batch index whose key belongs to bucket b or a later
// one; segStart[B] = n. One thread per bucket boundary binary-searches the sorted batch.
extern "C" __global__ void bucket_slices(const i64* bucketMax, int numBuckets, const i64* keys, int n,
                                         int* segStart) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b > numBuckets) return;
    if (b == 0) { segStart[0] = 0; return; }
    if (b == numBuckets) { segStart[b] = n; return; }
    segStart[b] = upper_bound_global(keys, 0, n, bucketMax[b - 1]);
}

// Light batches (far fewer keys than buckets): one item per touched bucket, so that no warp is started for a
// bucket without work. Each key finds its bucket in bucketMax; flags[i] marks the first key of a bucket.
__device__ __forceinline__ int bucket_of(const i64* bucketMax, int numBuckets, i64 key) {
    // the last bucketMax is INT64_MAX: every key has a bucket
    return lower_bound_global(bucketMax, 0, numBuckets - 1, key);
}

// bucket_of through the samples (sample_bucket_max): a binary search of the samples, which stay in the L2 cache,
// then of the one line of bucketMax that their stride covers. Same answer as bucket_of; a random query reads about
// one line of bucketMax from memory instead of a sector at each of the search's lower levels.
__device__ __forceinline__ int bucket_of_sampled(const i64* __restrict__ samples, int numSamples,
                                                 const i64* __restrict__ bucketMax, int numBuckets, i64 key) {
    // the last sample is INT64_MAX
    const int b = lower_bound_global(samples, 0, numSamples - 1, key) * BUCKET_SAMPLE_STRIDE;
    // bucketMax[e] is the sample: >= key
    return lower_bound_global(bucketMax, b, min(b + BUCKET_SAMPLE_STRIDE, numBuckets) - 1, key);
}

// samples[g] = bucketMax[min(BUCKET_SAMPLE_STRIDE g + BUCKET_SAMPLE_STRIDE - 1, numBuckets - 1)] for g < numSamples.
extern "C" __global__ void sample_bucket_max(const i64* bucketMax, int numBuckets, i64* samples, int numSamples) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= numSamples) return;
    samples[g] = bucketMax[min(g * BUCKET_SAMPLE_STRIDE + BUCKET_SAMPLE_STRIDE - 1, numBuckets - 1)];
}

extern "C" __global__ void touched_buckets(const i64* bucketMax, int numBuckets, const i64* keys, int n, int* flags,
                                           int* keyBucket) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int b = bucket_of(bucketMax, numBuckets, keys[i]);
    keyBucket[i] = b;
    flags[i] = (i == 0 || b != bucket_of(bucketMax, numBuckets, keys[i - 1])) ? 1 : 0;
}

// itemBucket[j] and segStart[j] for the j-th touched bucket, segStart[T] = n, *itemCount = T.
extern "C" __global__ void compact_touched(const int* flags, const int* pos, const int* keyBucket, int n,
                                           int* itemBucket, int* segStart, int* itemCount) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (flags[i]) {
        itemBucket[pos[i]] = keyBucket[i];
        segStart[pos[i]] = i;
    }
    if (i == n - 1) {
        segStart[pos[i] + flags[i]] = n;
        *itemCount = pos[i] + flags[i];
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Build: the sorted, deduplicated pairs cut into one node per bucket, perNode keys each.

extern "C" __global__ void build_nodes(const i64* keys, const i64* values, i64 m, int perNode, int numBuckets,
                                       i64* nodeKeys, i64* nodeValues) {
    i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    i64 node = t / NODE_SIZE;
    int slot = (int)(t % NODE_SIZE);
    if (node >= numBuckets || slot >= perNode) return;
    i64 i = node * perNode + slot;
    if (i < m) {
        nodeKeys[node * NODE_SIZE + slot] = keys[i];
        nodeValues[node * NODE_SIZE + slot] = values[i];
    }
}

extern "C" __global__ void build_buckets(const i64* keys, i64 m, int perNode, int numBuckets, i64* bucketMax,
                                         int* bucketHead, int* nodeCount, int* nodeNext, i64* nodeMax) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= numBuckets) return;
    i64 first = (i64)b * perNode;
    i64 last = min(m, first + perNode) - 1;
    int cnt = (int)(last - first + 1);
    if (cnt > 0) {  // only the single bucket of an empty index has none
        bucketHead[b] = b;
        nodeCount[b] = cnt;
        nodeNext[b] = -1;
        nodeMax[b] = keys[last];
    } else {
        bucketHead[b] = -1;
    }
    bucketMax[b] = (b == numBuckets - 1 || cnt <= 0) ? INT64_MAX : keys[last];
}

// freeStack[from + i] = firstNode + i for i in [0, count).
extern "C" __global__ void fill_free_stack(int* freeStack, i64 from, int firstNode, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) freeStack[from + i] = firstNode + i;
}

// ---------------------------------------------------------------------------------------------------------------
// Lookups: get (mode 0), ceiling (1), floor (2). The queries are sorted; perm (may be null) maps sorted position
// to the caller's position. Lanes take 32 queries at a time and resolve them against the node in registers; the
// warp moves along the chain as the queries grow.


__device__ void ceiling_from_next_buckets(int b, int numBuckets, const int* bucketHead, const i64* nodeKeys,
                                          const i64* nodeValues, i64* k, i64* v, bool* found) {
    for (int bb = b + 1; bb < numBuckets; bb++) {
        int h = bucketHead[bb];
        if (h >= 0) {
            *k = nodeKeys[(i64)h * NODE_SIZE];
            *v = nodeValues[(i64)h * NODE_SIZE];
            *found = true;
            return;
        }
    }
    *found = false;
}

__device__ void floor_from_previous_buckets(int b, const int* bucketHead, const i64* nodeKeys,
                                            const i64* nodeValues, const int* nodeCount, const int* nodeNext,
                                            i64* k, i64* v, bool* found) {
    for (int bb = b - 1; bb >= 0; bb--) {
        int h = bucketHead[bb];
        if (h >= 0) {
            while (nodeNext[h] >= 0) h = nodeNext[h];
            i64 at = (i64)h * NODE_SIZE + nodeCount[h] - 1;
            *k = nodeKeys[at];
            *v = nodeValues[at];
            *found = true;
            return;
        }
    }
    *found = false;
}

// A node's count, lane's pair (0, 0 past the count) and bound (its max key, INT64_MAX for a chain's last node),
// loaded together: a lane's slot past the count is read and dropped, so no load waits for another. (Keeping the
// link for the walk as well would cost lookup_get spills at its 32 registers.)
__device__ __forceinline__ void load_node_lanes(int node, int lane, const i64* nodeKeys, const i64* nodeValues,
                                                const int* nodeCount, const int* nodeNext, const i64* nodeMax,
                                                int* cnt, i64* laneKey, i64* laneVal, i64* bound) {
    const int count = nodeCount[node];
    const i64 key = nodeKeys[(i64)node * NODE_SIZE + lane];
    const i64 val = nodeValues[(i64)node * NODE_SIZE + lane];
    const int next = nodeNext[node];
    const i64 max = nodeMax[node];
    *cnt = count;
    *laneKey = lane < count ? key : 0;
    *laneVal = lane < count ? val : 0;
    *bound = next >= 0 ? max : INT64_MAX;
}

// One kernel per mode (template instances), so that get carries none of the ceiling and floor state: fewer
// registers, more warps in flight to hide the chain's dependent loads.
//
// unsortedAt (may be null): the caller promised sorted queries; every lane checks its query against the one
// before it and records a broken promise in unsortedAt[0] (atomicMin of the position). Every position j >= 1 lies
// in exactly one item's slice (the slices tile [0, n) where segStart ascends; a descending pair is itself a
// broken promise), so this replaces a separate pass over the batch. Lookups change nothing, so the host can
// report the broken promise after the kernel.
template <int MODE>
__device__ __forceinline__ void lookup_items(int numBuckets, int numItems, const int* itemBucket,
                                             const int* bucketHead, const i64* nodeKeys, const i64* nodeValues,
                                             const int* nodeCount, const int* nodeNext, const i64* nodeMax,
                                             const i64* queries, const unsigned* perm, const int* segStart,
                                             i64* keysOut, i64* valuesOut, int* unsortedAt) {
    const int w = warp_id_global();
    if (w >= numItems) return;
    const int lane = threadIdx.x & 31;
    // the bucket's head is loaded beside its slice, and the head node beside the slice's first queries: two
    // levels of dependent loads before the first search
    const int b = itemBucket ? itemBucket[w] : w;
    int node = bucketHead[b];
    const int s = segStart[w];
    const int e = segStart[w + 1];
    if (s >= e) {
        if (s > e && unsortedAt && lane == 0) atomicMin(unsortedAt, e);
        return;
    }

    i64 laneKey = 0, laneVal = 0, bound = INT64_MAX;
    int cnt = 0;
    bool hasPrev = false;
    i64 prevKey = 0, prevVal = 0;
    if (node >= 0) load_node_lanes(node, lane, nodeKeys, nodeValues, nodeCount, nodeNext, nodeMax, &cnt, &laneKey,
                                   &laneVal, &bound);

    for (int c = s; c < e; c += 32) {
        const int j = c + lane;
        const bool active = j < e;
        const i64 q = active ? queries[j] : 0;
        if (unsortedAt) {
            i64 before = __shfl_up_sync(FULL_MASK, q, 1);
            if (lane == 0 && j > 0) before = queries[j - 1];
            if (active && j > 0 && before > q) atomicMin(unsortedAt, j);
        }
        bool resolved = !active;
        bool found = false;
        bool fallback = false;
        i64 outK = 0, outV = NOT_FOUND;
        while (true) {
            const bool mine = !resolved && q <= bound;
            if (node < 0) {
                // empty bucket: nothing here, look beyond it
                if (MODE != MODE_GET && mine) fallback = true;
            } else {
                const int lb = lower_bound_lanes(laneKey, cnt, q);
                const int probe = min(lb, NODE_SIZE - 1);
                const i64 kAt = __shfl_sync(FULL_MASK, laneKey, probe);
                const i64 vAt = __shfl_sync(FULL_MASK, laneVal, probe);
                if (MODE == MODE_GET) {
                    if (mine && lb < cnt && kAt == q) { found = true; outV = vAt; }
                } else if (MODE == MODE_CEILING) {
                    if (mine) {
                        if (lb < cnt) { found = true; outK = kAt; outV = vAt; }
                        else fallback = true;
                    }
                } else {
                    const bool hit = lb < cnt && kAt == q;
                    const int below = hit ? lb : lb - 1;  // floor position
                    const int belowProbe = max(0, below);
                    const i64 kBelow = __shfl_sync(FULL_MASK, laneKey, belowProbe);
                    const i64 vBelow = __shfl_sync(FULL_MASK, laneVal, belowProbe);
                    if (mine) {
                        if (below >= 0) { found = true; outK = kBelow; outV = vBelow; }
                        else if (hasPrev) { found = true; outK = prevKey; outV = prevVal; }
                        else fallback = true;
                    }
                }
            }
            resolved = resolved || mine;
            if (__all_sync(FULL_MASK, resolved)) break;
            // some query lies beyond this node: move along the chain (never past its end, where bound is MAX)
            if (MODE == MODE_FLOOR && cnt > 0) {
                hasPrev = true;
                prevKey = __shfl_sync(FULL_MASK, laneKey, cnt - 1);
                prevVal = __shfl_sync(FULL_MASK, laneVal, cnt - 1);
            }
            node = nodeNext[node];
            load_node_lanes(node, lane, nodeKeys, nodeValues, nodeCount, nodeNext, nodeMax, &cnt, &laneKey, &laneVal,
                            &bound);
        }
        if (active) {
            if (MODE != MODE_GET && fallback) {
                if (MODE == MODE_CEILING) {
                    ceiling_from_next_buckets(b, numBuckets, bucketHead, nodeKeys, nodeValues, &outK, &outV,
                                              &found);
                } else {
                    floor_from_previous_buckets(b, bucketHead, nodeKeys, nodeValues, nodeCount, nodeNext, &outK,
                                                &outV, &found);
                }
            }
            const unsigned at = perm ? perm[j] : (unsigned)j;
            if (!found) { outK = 0; outV = NOT_FOUND; }
            valuesOut[at] = outV;
            if (MODE != MODE_GET) keysOut[at] = outK;
        }
    }
}

#define LOOKUP_PARAMS int numBuckets, int numItems, const int* itemBucket, const int* bucketHead, \
    const i64* nodeKeys, const i64* nodeValues, const int* nodeCount, const int* nodeNext, const i64* nodeMax, \
    const i64* queries, const unsigned* perm, const int* segStart, i64* keysOut, i64* valuesOut, int* unsortedAt
#define LOOKUP_ARGS numBuckets, numItems, itemBucket, bucketHead, nodeKeys, nodeValues, nodeCount, nodeNext, \
    nodeMax, queries, perm, segStart, keysOut, valuesOut, unsortedAt

// 256-thread blocks, as many per SM as it has warp slots (8 on sm_80 and sm_90, 6 on sm_86 and sm_89): at most
// 32 registers a thread on sm_90, every warp slot filled.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890)
#define LOOKUP_GET_BLOCKS_PER_SM 6
#else
#define LOOKUP_GET_BLOCKS_PER_SM 8
#endif
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, LOOKUP_GET_BLOCKS_PER_SM) lookup_get(LOOKUP_PARAMS) {
    lookup_items<MODE_GET>(LOOKUP_ARGS);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, 6) lookup_ceiling(LOOKUP_PARAMS) {
    lookup_items<MODE_CEILING>(LOOKUP_ARGS);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, 5) lookup_floor(LOOKUP_PARAMS) {
    lookup_items<MODE_FLOOR>(LOOKUP_ARGS);
}

// Lookups of queries in any order, one thread a query: its bucket through the bucket samples, along the chain to
// the first node whose range holds it, a binary search of that node. The answer goes to perm[j] (perm may be
// null): its value, and for ceiling and floor its key (0 with NOT_FOUND where there is none). Unsorted batches
// come here either as they are (small batches: queries in distinct buckets share nothing) or sorted by their top
// bits only, which costs a fraction of a full sort and gives the same locality: the lanes of a warp follow one
// search path and read one or two nodes. Sorted batches that cross the bus as a pipeline of chunks come here too,
// one launch a chunk: where firstUnsorted is not null the sort promise is checked on the way (queries[j - 1] >
// queries[j] for j >= checkFrom: 0 where the chunk's first query has one before it in the batch).
template <int MODE>
__device__ __forceinline__ void lookup_any_order(
        const i64* __restrict__ bucketMax, int numBuckets, const i64* __restrict__ bucketSamples, int numSamples,
        const int* __restrict__ bucketHead, const i64* __restrict__ nodeKeys, const i64* __restrict__ nodeValues,
        const int* __restrict__ nodeCount, const int* __restrict__ nodeNext, const i64* __restrict__ nodeMax,
        const i64* __restrict__ queries, const unsigned* __restrict__ perm, int n, i64* __restrict__ valuesOut,
        i64* __restrict__ keysOut, int* __restrict__ firstUnsorted, int checkFrom) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const bool mine = j < n;
    const i64 q = mine ? queries[j] : 0;
    if (firstUnsorted) {
        // the query before comes from the lane before (a warp's first lane reads it), so that queries read across
        // the bus (HostArrayDma.lookupMapped) cross it once
        i64 before = __shfl_up_sync(0xffffffffu, q, 1);
        if ((threadIdx.x & 31) == 0 && mine && j >= checkFrom) before = queries[j - 1];
        if (mine && j >= checkFrom && before > q) atomicMin(firstUnsorted, j);
    }
    if (!mine) return;
    const int b = bucket_of_sampled(bucketSamples, numSamples, bucketMax, numBuckets, q);
    int node = bucketHead[b];
    bool found = false;
    i64 k = 0, v = NOT_FOUND;
    if (node >= 0) {
        // floor: the slot of the last key walked past, the answer where q lies below every key of its node
        i64 lastWalkedPast = -1;
        int next;
        while ((next = nodeNext[node]) >= 0 && nodeMax[node] < q) {
            if (MODE == MODE_FLOOR) {
                const int c = nodeCount[node];
                if (c > 0) lastWalkedPast = (i64)node * NODE_SIZE + c - 1;
            }
            node = next;
        }
        const i64* keys = nodeKeys + (i64)node * NODE_SIZE;
        const int cnt = nodeCount[node];
        const int at = lower_bound_global(keys, 0, cnt, q);
        if (MODE == MODE_GET) {
            if (at < cnt && keys[at] == q) v = nodeValues[(i64)node * NODE_SIZE + at];
        } else if (MODE == MODE_CEILING) {
            i64 slot = -1;
            if (at < cnt) {
                slot = (i64)node * NODE_SIZE + at;
            } else {
                // every key of the node is below q: the chain's next key, where it has one
                for (int nx = nodeNext[node]; nx >= 0; nx = nodeNext[nx]) {
                    if (nodeCount[nx] > 0) { slot = (i64)nx * NODE_SIZE; break; }
                }
            }
            if (slot >= 0) { found = true; k = nodeKeys[slot]; v = nodeValues[slot]; }
        } else {
            const int below = at < cnt && keys[at] == q ? at : at - 1;
            const i64 slot = below >= 0 ? (i64)node * NODE_SIZE + below : lastWalkedPast;
            if (slot >= 0) { found = true; k = nodeKeys[slot]; v = nodeValues[slot]; }
        }
    }
    if (MODE == MODE_CEILING && !found) {
        ceiling_from_next_buckets(b, numBuckets, bucketHead, nodeKeys, nodeValues, &k, &v, &found);
    } else if (MODE == MODE_FLOOR && !found) {
        floor_from_previous_buckets(b, bucketHead, nodeKeys, nodeValues, nodeCount, nodeNext, &k, &v, &found);
    }
    const unsigned to = perm ? perm[j] : (unsigned)j;
    if (MODE != MODE_GET) {
        if (!found) { k = 0; v = NOT_FOUND; }
        keysOut[to] = k;
    }
    valuesOut[to] = v;
}

#define ANY_ORDER_PARAMS const i64* __restrict__ bucketMax, int numBuckets, const i64* __restrict__ bucketSamples, \
    int numSamples, const int* __restrict__ bucketHead, const i64* __restrict__ nodeKeys, \
    const i64* __restrict__ nodeValues, const int* __restrict__ nodeCount, const int* __restrict__ nodeNext, \
    const i64* __restrict__ nodeMax, const i64* __restrict__ queries, const unsigned* __restrict__ perm, int n, \
    i64* __restrict__ valuesOut, i64* __restrict__ keysOut, int* __restrict__ firstUnsorted, int checkFrom
#define ANY_ORDER_ARGS bucketMax, numBuckets, bucketSamples, numSamples, bucketHead, nodeKeys, nodeValues, \
    nodeCount, nodeNext, nodeMax, queries, perm, n, valuesOut, keysOut, firstUnsorted, checkFrom

// One kernel a mode with one parameter list (keysOut unused by get), so that the host launches any of them alike.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) lookup_get_any_order(ANY_ORDER_PARAMS) {
    lookup_any_order<MODE_GET>(ANY_ORDER_ARGS);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) lookup_ceiling_any_order(ANY_ORDER_PARAMS) {
    lookup_any_order<MODE_CEILING>(ANY_ORDER_ARGS);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) lookup_floor_any_order(ANY_ORDER_PARAMS) {
    lookup_any_order<MODE_FLOOR>(ANY_ORDER_ARGS);
}

// Counters that every work item adds to or raises: the items of a block combine theirs in shared memory first and
// one thread per block updates the global counter. Same-address global atomics from every warp serialise in the
// L2 (about one a clock): once per bucket warp they cost over a millisecond a pass at 2^21 buckets. Every thread of
// the block must call this (it synchronises).
struct ItemCounts {
    unsigned long long add;   // summed into counters[addAt]
    unsigned long long max1;  // raised into counters[max1At]
    unsigned long long max2;  // raised into counters[max2At]
    unsigned long long add2;  // summed into counters[add2At]
};

__device__ __forceinline__ void block_counts_to_global(ItemCounts c, i64* counters, int addAt, int max1At,
                                                       int max2At, int add2At) {
    __shared__ unsigned long long sAdd, sMax1, sMax2, sAdd2;
    if (threadIdx.x == 0) { sAdd = 0; sMax1 = 0; sMax2 = 0; sAdd2 = 0; }
    __syncthreads();
    if (c.add) atomicAdd(&sAdd, c.add);
    if (c.max1) atomicMax(&sMax1, c.max1);
    if (c.max2) atomicMax(&sMax2, c.max2);
    if (c.add2) atomicAdd(&sAdd2, c.add2);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (sAdd && addAt >= 0) atomicAdd((unsigned long long*)&counters[addAt], sAdd);
        if (sMax1 && max1At >= 0) atomicMax((unsigned long long*)&counters[max1At], sMax1);
        if (sMax2 && max2At >= 0) atomicMax((unsigned long long*)&counters[max2At], sMax2);
        if (sAdd2 && add2At >= 0) atomicAdd((unsigned long long*)&counters[add2At], sAdd2);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Upsert (TL-Bulk). For each node of a bucket the keys routed to it are those <= its nodeMax (the chain's last
// node takes the rest). Merging them gives r keys; r <= 32 stays in the node, more are spread over
// ceil(r / SPLIT_FILL) nodes, the first being the old node and the others taken from the free stack. A count
// pass computes the nodes each bucket needs, so the host can grow the pool before anything changes.

// Number of nodes a merge of r keys occupies.
__device__ __forceinline__ int nodes_for(int r) {
    return r <= NODE_SIZE ? 1 : (r + SPLIT_FILL - 1) / SPLIT_FILL;
}

// The batch keys of [p, e) routed to a node: [p, returned) holds those <= bound.
__device__ __forceinline__ int routed_end(const i64* keys, int p, int e, i64 bound, bool lastNode) {
    return lastNode ? e : upper_bound_global(keys, p, e, bound);
}

// The warp kernels below load the batch keys from p on beside the node they route to, lane i holding keys[p + i]
// (the window; lanes past e hold 0), so that a slice of at most NODE_SIZE keys is routed and matched by ballots
// and shuffles instead of binary searches with dependent global loads.
__device__ __forceinline__ i64 window_at(const i64* a, int p, int e, int lane) {
    return lane < e - p ? a[p + lane] : 0;
}

// routed_end, warp-wide, from the window: a binary search only where all NODE_SIZE window keys are routed.
__device__ __forceinline__ int routed_end_window(const i64* keys, int p, int e, i64 bound, bool lastNode,
                                                 i64 windowKey, int lane) {
    if (lastNode) return e;
    const int inWindow = __popc(__ballot_sync(FULL_MASK, lane < e - p && windowKey <= bound));
    if (inWindow < NODE_SIZE || e - p == NODE_SIZE) return p + inWindow;
    return upper_bound_global(keys, p + NODE_SIZE, e, bound);
}

// Warp-wide: how many of the node's keys (lane < cnt) appear among keys[p, p2); the lanes' flags in *foundMask,
// and each lane's lower bound (relative to p) of its key in the batch segment.
__device__ __forceinline__ int match_node_keys(const i64* keys, int p, int p2, i64 laneKey, int cnt, int lane,
                                               unsigned* foundMask, int* laneLb) {
    int lb = 0;
    bool found = false;
    if (lane < cnt) {
        int pos = lower_bound_global(keys, p, p2, laneKey);
        found = pos < p2 && keys[pos] == laneKey;
        lb = pos - p;
    }
    *laneLb = lb;
    *foundMask = __ballot_sync(FULL_MASK, found);
    return __popc(*foundMask);
}

// match_node_keys for a slice keys[p, p + a) held in the window (a <= NODE_SIZE); *laneNewVal is the batch value of
// the lane's key where found.
__device__ __forceinline__ int match_node_keys_window(i64 windowKey, i64 windowVal, int a, i64 laneKey, int cnt,
                                                      int lane, unsigned* foundMask, int* laneLb,
                                                      i64* laneNewVal) {
    const int lb = lower_bound_lanes(windowKey, a, laneKey);
    const int at = min(lb, NODE_SIZE - 1);
    const i64 keyAt = __shfl_sync(FULL_MASK, windowKey, at);
    *laneNewVal = __shfl_sync(FULL_MASK, windowVal, at);
    *laneLb = lane < cnt ? lb : 0;
    *foundMask = __ballot_sync(FULL_MASK, lane < cnt && lb < a && keyAt == laneKey);
    return __popc(*foundMask);
}

// How many of a node's keys (nodeKey[0, cnt), ascending) appear among the sorted keys[p, p2), by one thread: a
// merge walk of a short slice, else a binary search a node key, each starting where the last one ended.
__device__ __forceinline__ int count_duplicates(const i64* nodeKey, int cnt, const i64* keys, int p, int p2) {
    int dup = 0;
    if (p2 - p <= NODE_SIZE) {
        for (int i = 0, t = p; i < cnt && t < p2;) {
            const i64 ki = nodeKey[i];
            const i64 kt = keys[t];
            if (ki < kt) i++;
            else if (ki > kt) t++;
            else { dup++; i++; t++; }
        }
    } else {
        for (int i = 0, from = p; i < cnt && from < p2; i++) {
            const i64 ki = nodeKey[i];
            from = lower_bound_global(keys, from, p2, ki);
            if (from < p2 && keys[from] == ki) { dup++; from++; }
        }
    }
    return dup;
}

// The count pass, one thread a work item (its loads are few and independent across buckets, so a thread each
// keeps far more of them in flight than a warp each): needNodes[w] = the nodes item w's merges take off the free
// stack. counters: SLOT_BUCKETS_TOUCHED, SLOT_MOST_KEYS_IN_A_BUCKET and SLOT_MOST_NODES_GAINED (how much the
// longest chain may grow).
extern "C" __global__ void upsert_count(int numItems, const int* itemBucket, const int* bucketHead,
                                        const i64* nodeKeys, const int* nodeCount, const int* nodeNext,
                                        const i64* nodeMax, const i64* keys, const int* segStart, int* needNodes,
                                        i64* counters) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    ItemCounts counts = {0, 0, 0, 0};
    if (w < numItems) {
        const int b = itemBucket ? itemBucket[w] : w;
        const int s = segStart[w];
        const int e = segStart[w + 1];
        int need = 0;
        if (s < e) {
            int node = bucketHead[b];
            if (node < 0) {
                need = nodes_for(e - s);
            } else {
                for (int p = s; node >= 0 && p < e;) {
                    const int next = nodeNext[node];
                    const int cnt = nodeCount[node];
                    const int p2 = routed_end(keys, p, e, nodeMax[node], next < 0);
                    // a merge that fits whatever the duplicates needs no new node: the node's keys are not read
                    if (p2 > p && cnt + (p2 - p) > NODE_SIZE) {
                        const int dup = count_duplicates(nodeKeys + (i64)node * NODE_SIZE, cnt, keys, p, p2);
                        need += nodes_for(cnt + (p2 - p) - dup) - 1;
                    }
                    p = p2;
                    node = next;
                }
            }
            counts.add = 1;
            counts.max1 = (unsigned long long)(e - s);
            counts.max2 = (unsigned long long)need;
        }
        needNodes[w] = need;
    } else if (w == numItems) {
        needNodes[w] = 0;  // the scan's extra element, so the exclusive scan's last entry is the total
    }
    block_counts_to_global(counts, counters, SLOT_BUCKETS_TOUCHED, SLOT_MOST_KEYS_IN_A_BUCKET,
                           SLOT_MOST_NODES_GAINED, -1);
}

// A merge too large for one warp to write quickly (a bucket taking a big share of the batch): the warp records it
// and wide_merge_write / wide_merge_meta write it with many blocks after upsert_apply.
struct WideMerge {
    i64 origKeys[NODE_SIZE];
    i64 origValues[NODE_SIZE];
    int origLb[NODE_SIZE];  // per node key: its lower bound in the batch segment, relative to p
    unsigned foundMask;     // node keys also in the batch segment (their values are replaced)
    int cnt, p, p2, r, k, firstNode, tailNext;
    i64 allocBase;
};
static_assert(sizeof(WideMerge) == WIDE_MERGE_BYTES, "the host sizes WideMerge records as WIDE_MERGE_BYTES");

// Where merged position pos of r keys spread evenly over k nodes lands: node *q, slot *slot. 32-bit arithmetic
// (a warp's merge holds fewer than WIDE_MERGE_MIN + NODE_SIZE keys), and none where the merge fits one node.
__device__ __forceinline__ void merged_slot(int pos, int r, int k, int* q, int* slot) {
    if (k == 1) {
        *q = 0;
        *slot = pos;
        return;
    }
    const int node = ((pos + 1) * k + r - 1) / r - 1;
    *q = node;
    *slot = pos - node * r / k;
}

// The id of the q-th node of a merge: q = 0 is the node merged into (firstNode), the others come off the free
// stack, the bucket's share starting at allocBase.
__device__ __forceinline__ int merge_node_id(int q, int firstNode, const int* freeStack, i64 freeTop,
                                             i64 allocBase) {
    return q == 0 ? firstNode : freeStack[freeTop - 1 - (allocBase + q - 1)];
}

// Merges keys[p, p2) into the node (cnt keys lifted into laneKey/laneVal; cnt = 0 for an empty bucket) and
// writes the r merged pairs over k nodes. Returns k - 1, the nodes taken from the free stack.
// Writes merged position pos (key, val) of a merge of r keys over k nodes. The writer of a node's first slot also
// writes its count and link, the writer of its last slot its max key: every position is written once, so every
// node's fields are, and nothing re-reads the nodes after the merge. A node pair whose merged position is its own
// slot in the first node and whose value stays (held: the keys below the merge's first new key) is not rewritten.
__device__ __forceinline__ void write_merged(int pos, i64 key, i64 val, int r, int k, int firstNode, int tailNext,
                                             const int* freeStack, i64 freeTop, i64 allocBase, i64* nodeKeys,
                                             i64* nodeValues, int* nodeCount, int* nodeNext, i64* nodeMax,
                                             bool held) {
    int q, slot;
    merged_slot(pos, r, k, &q, &slot);
    const int id = merge_node_id(q, firstNode, freeStack, freeTop, allocBase);
    if (!held || q != 0) {
        nodeKeys[(i64)id * NODE_SIZE + slot] = key;
        nodeValues[(i64)id * NODE_SIZE + slot] = val;
    }
    const int size = k == 1 ? r : (q + 1) * r / k - q * r / k;
    if (slot == 0) {
        nodeCount[id] = size;
        nodeNext[id] = q + 1 < k ? merge_node_id(q + 1, firstNode, freeStack, freeTop, allocBase) : tailNext;
    }
    if (slot == size - 1) nodeMax[id] = key;
}

// The window (windowKey, windowVal: keys and values from p on) serves a slice of at most NODE_SIZE keys.
__device__ int merge_into_nodes(int lane, i64 laneKey, i64 laneVal, int cnt, const i64* keys, const i64* values,
                                int p, int p2, i64 windowKey, i64 windowVal, int firstNode, int tailNext,
                                const int* freeStack, i64 freeTop, i64 allocBase, i64* nodeKeys, i64* nodeValues,
                                int* nodeCount, int* nodeNext, i64* nodeMax, long long* inserted, WideMerge* wide,
                                int* wideCount) {
    const int a = p2 - p;
    const bool windowed = a <= NODE_SIZE;
    unsigned foundMask;
    int lb;
    i64 newVal = 0;
    const int dup = windowed
            ? match_node_keys_window(windowKey, windowVal, a, laneKey, cnt, lane, &foundMask, &lb, &newVal)
            : match_node_keys(keys, p, p2, laneKey, cnt, lane, &foundMask, &lb);
    const int r = cnt + a - dup;
    const int k = nodes_for(r);
    if (a >= WIDE_MERGE_MIN) {
        int job = 0;
        if (lane == 0) job = atomicAdd(wideCount, 1);
        job = __shfl_sync(FULL_MASK, job, 0);
        WideMerge* w = wide + job;
        w->origKeys[lane] = laneKey;
        w->origValues[lane] = laneVal;
        w->origLb[lane] = lb;
        if (lane == 0) {
            w->foundMask = foundMask;
            w->cnt = cnt;
            w->p = p;
            w->p2 = p2;
            w->r = r;
            w->k = k;
            w->firstNode = firstNode;
            w->tailNext = tailNext;
            w->allocBase = allocBase;
        }
        *inserted += r - cnt;
        return k - 1;
    }
    __syncwarp();
    // the node's own keys move right by the number of new keys before them
    if (lane < cnt) {
        const int pos = lane + lb - __popc(foundMask & lanemask_lt());
        const bool replaced = (foundMask >> lane) & 1u;
        const i64 v = replaced ? (windowed ? newVal : values[p + lb]) : laneVal;
        write_merged(pos, laneKey, v, r, k, firstNode, tailNext, freeStack, freeTop, allocBase, nodeKeys,
                     nodeValues, nodeCount, nodeNext, nodeMax, !replaced && pos == lane);
    }
    // new keys land after the node keys below them; keys already in the node were handled above
    for (int t0 = 0; t0 < a; t0 += 32) {
        const int t = t0 + lane;
        const i64 key = windowed ? windowKey : t < a ? keys[p + t] : 0;
        const int less = lower_bound_lanes(laneKey, cnt, key);
        const i64 kAt = __shfl_sync(FULL_MASK, laneKey, min(less, NODE_SIZE - 1));
        if (t < a && !(less < cnt && kAt == key)) {
            const unsigned below = less >= 32 ? FULL_MASK : ((1u << less) - 1u);
            const int pos = less + t - __popc(foundMask & below);
            write_merged(pos, key, windowed ? windowVal : values[p + t], r, k, firstNode, tailNext, freeStack,
                         freeTop, allocBase, nodeKeys, nodeValues, nodeCount, nodeNext, nodeMax, false);
        }
    }
    *inserted += r - cnt;
    return k - 1;
}

__device__ __forceinline__ long long upsert_apply_item(
        int numItems, const int* itemBucket, int* bucketHead, i64* nodeKeys, i64* nodeValues, int* nodeCount,
        int* nodeNext, i64* nodeMax, const int* freeStack, i64 freeTop, const i64* keys, const i64* values,
        const int* segStart, const int* allocBase, i64* counters, WideMerge* wide, int* wideCount) {
    const int w = warp_id_global();
    if (w >= numItems) return 0;
    const int b = itemBucket ? itemBucket[w] : w;
    const int lane = threadIdx.x & 31;
    const int s = segStart[w];
    const int e = segStart[w + 1];
    if (s == e) return 0;
    i64 base = allocBase[w];
    long long inserted = 0;
    int node = bucketHead[b];
    if (node < 0) {
        // empty bucket: every node comes off the free stack
        const int first = freeStack[freeTop - 1 - base];
        merge_into_nodes(lane, 0, 0, 0, keys, values, s, e, window_at(keys, s, e, lane),
                         window_at(values, s, e, lane), first, -1, freeStack, freeTop, base + 1, nodeKeys,
                         nodeValues, nodeCount, nodeNext, nodeMax, &inserted, wide, wideCount);
        if (lane == 0) bucketHead[b] = first;
    } else {
        int p = s;
        while (node >= 0 && p < e) {
            // loaded together, one level of dependent loads: the node whole (a lane's slot past its count is
            // read and dropped) and the batch window
            const int next = nodeNext[node];
            const i64 bound = nodeMax[node];
            const int cnt = nodeCount[node];
            const i64 slotKey = nodeKeys[(i64)node * NODE_SIZE + lane];
            const i64 slotVal = nodeValues[(i64)node * NODE_SIZE + lane];
            const i64 windowKey = window_at(keys, p, e, lane);
            const i64 windowVal = window_at(values, p, e, lane);
            const int p2 = routed_end_window(keys, p, e, bound, next < 0, windowKey, lane);
            if (p2 > p) {
                const i64 laneKey = lane < cnt ? slotKey : 0;
                const i64 laneVal = lane < cnt ? slotVal : 0;
                base += merge_into_nodes(lane, laneKey, laneVal, cnt, keys, values, p, p2, windowKey, windowVal,
                                         node, next, freeStack, freeTop, base, nodeKeys, nodeValues, nodeCount,
                                         nodeNext, nodeMax, &inserted, wide, wideCount);
                __syncwarp();
            }
            p = p2;
            node = next;
        }
    }
    return inserted;
}

// Bounded to 40 registers (six 256-thread blocks an SM): at its natural 56 a few spills are saved, but the warps
// in flight that hide the merges' dependent loads matter more (H200, 2^24 into 2^25: inserts 7.5 -> 6.55 ms).
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, 6) upsert_apply(
        int numItems, const int* itemBucket, int* bucketHead, i64* nodeKeys, i64* nodeValues, int* nodeCount,
        int* nodeNext, i64* nodeMax, const int* freeStack, i64 freeTop, const i64* keys, const i64* values,
        const int* segStart, const int* allocBase, i64* counters, WideMerge* wide, int* wideCount) {
    const long long inserted = upsert_apply_item(numItems, itemBucket, bucketHead, nodeKeys, nodeValues, nodeCount,
            nodeNext, nodeMax, freeStack, freeTop, keys, values, segStart, allocBase, counters, wide, wideCount);
    const bool counts = (threadIdx.x & 31) == 0;
    block_counts_to_global({0, 0, 0, counts ? (unsigned long long)inserted : 0ull}, counters, -1, -1, -1,
                           SLOT_KEYS_INSERTED);
}

// The recorded wide merges, blockIdx.y naming the merge: each thread places node keys and batch keys at their
// merged positions (the same arithmetic as merge_into_nodes), then wide_merge_meta links and sizes the nodes.
extern "C" __global__ void wide_merge_write(const WideMerge* wide, const i64* keys, const i64* values,
                                            const int* freeStack, i64 freeTop, i64* nodeKeys, i64* nodeValues) {
    const WideMerge* w = wide + blockIdx.y;
    __shared__ i64 origKeys[NODE_SIZE];
    if (threadIdx.x < NODE_SIZE) origKeys[threadIdx.x] = w->origKeys[threadIdx.x];
    __syncthreads();
    const int cnt = w->cnt, p = w->p, a = w->p2 - w->p, r = w->r, k = w->k;
    const unsigned foundMask = w->foundMask;
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < cnt + a; t += gridDim.x * blockDim.x) {
        i64 key, val;
        int pos;
        if (t < cnt) {
            const int lb = w->origLb[t];
            key = origKeys[t];
            val = ((foundMask >> t) & 1u) ? values[p + lb] : w->origValues[t];
            pos = t + lb - __popc(foundMask & ((1u << t) - 1u));
        } else {
            const int i = t - cnt;
            key = keys[p + i];
            int less = 0;
            while (less < cnt && origKeys[less] < key) less++;
            if (less < cnt && origKeys[less] == key) continue;  // replaces a node key, written above
            const unsigned below = less >= 32 ? FULL_MASK : ((1u << less) - 1u);
            val = values[p + i];
            pos = less + i - __popc(foundMask & below);
        }
        const int q = (int)(((i64)(pos + 1) * k + r - 1) / r) - 1;
        const i64 qStart = (i64)q * r / k;
        const int id = merge_node_id(q, w->firstNode, freeStack, freeTop, w->allocBase);
        nodeKeys[(i64)id * NODE_SIZE + (pos - qStart)] = key;
        nodeValues[(i64)id * NODE_SIZE + (pos - qStart)] = val;
    }
}

extern "C" __global__ void wide_merge_meta(const WideMerge* wide, const int* freeStack, i64 freeTop,
                                           const i64* nodeKeys, int* nodeCount, int* nodeNext, i64* nodeMax) {
    const WideMerge* w = wide + blockIdx.y;
    const int r = w->r, k = w->k;
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < k; q += gridDim.x * blockDim.x) {
        const int id = merge_node_id(q, w->firstNode, freeStack, freeTop, w->allocBase);
        const int qStart = (int)((i64)q * r / k);
        const int qEnd = (int)((i64)(q + 1) * r / k);
        nodeCount[id] = qEnd - qStart;
        nodeMax[id] = nodeKeys[(i64)id * NODE_SIZE + (qEnd - qStart - 1)];
        nodeNext[id] = q + 1 < k ? merge_node_id(q + 1, w->firstNode, freeStack, freeTop, w->allocBase)
                                 : w->tailNext;
    }
}

// Single-thread variant for light batches (few keys per touched bucket): one thread per bucket, the same
// routing and node allocation as the tiled kernel (so upsert_count serves both), keys shifted right in place
// by a backward merge: each node key moves right by the number of new keys below it.
__device__ __forceinline__ long long upsert_apply_single_item(
        int numItems, const int* itemBucket, int* bucketHead, i64* nodeKeys, i64* nodeValues, int* nodeCount,
        int* nodeNext, i64* nodeMax, const int* freeStack, i64 freeTop, const i64* keys, const i64* values,
        const int* segStart, const int* allocBase, i64* counters) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= numItems) return 0;
    const int b = itemBucket ? itemBucket[w] : w;
    const int s = segStart[w];
    const int e = segStart[w + 1];
    if (s == e) return 0;
    i64 base = allocBase[w];
    long long inserted = 0;
    int node = bucketHead[b];
    int p = s;
    const bool emptyBucket = node < 0;
    while (p < e && (emptyBucket || node >= 0)) {
        const int next = emptyBucket ? -1 : nodeNext[node];
        const int p2 = emptyBucket ? e : routed_end(keys, p, e, nodeMax[node], next < 0);
        if (p2 > p) {
            const int cnt = emptyBucket ? 0 : nodeCount[node];
            const i64 nodeBase = (i64)node * NODE_SIZE;
            // r: merged size (new keys equal to a node key replace its value)
            const int dup = count_duplicates(nodeKeys + nodeBase, cnt, keys, p, p2);
            const int r = cnt + (p2 - p) - dup;
            const int k = nodes_for(r);
            const i64 alloc = emptyBucket ? base + 1 : base;
            const int first = emptyBucket ? freeStack[freeTop - 1 - base] : node;
            // backward merge: the write position never falls below the read position of the node's keys
            int i = cnt - 1;
            int t = p2 - 1;
            for (int pos = r - 1; pos >= 0; pos--) {
                i64 key, val;
                if (t >= p && (i < 0 || keys[t] >= nodeKeys[nodeBase + i])) {
                    key = keys[t];
                    val = values[t];
                    if (i >= 0 && nodeKeys[nodeBase + i] == key) i--;  // replaced
                    t--;
                } else {
                    key = nodeKeys[nodeBase + i];
                    val = nodeValues[nodeBase + i];
                    i--;
                }
                const int q = (int)(((i64)(pos + 1) * k + r - 1) / r) - 1;
                const i64 qStart = (i64)q * r / k;
                const int id = merge_node_id(q, first, freeStack, freeTop, alloc);
                nodeKeys[(i64)id * NODE_SIZE + (pos - qStart)] = key;
                nodeValues[(i64)id * NODE_SIZE + (pos - qStart)] = val;
            }
            for (int q = 0; q < k; q++) {
                const int id = merge_node_id(q, first, freeStack, freeTop, alloc);
                const int qStart = (int)((i64)q * r / k);
                const int qEnd = (int)((i64)(q + 1) * r / k);
                nodeCount[id] = qEnd - qStart;
                nodeMax[id] = nodeKeys[(i64)id * NODE_SIZE + (qEnd - qStart - 1)];
                nodeNext[id] = q + 1 < k ? merge_node_id(q + 1, first, freeStack, freeTop, alloc) : next;
            }
            if (emptyBucket) bucketHead[b] = first;
            base += emptyBucket ? k : k - 1;
            inserted += r - cnt;
        }
        p = p2;
        node = next;
        if (emptyBucket) break;
    }
    return inserted;
}

extern "C" __global__ void upsert_apply_single(int numItems, const int* itemBucket, int* bucketHead,
                                               i64* nodeKeys, i64* nodeValues,
                                               int* nodeCount, int* nodeNext, i64* nodeMax, const int* freeStack,
                                               i64 freeTop, const i64* keys, const i64* values,
                                               const int* segStart, const int* allocBase, i64* counters) {
    const long long inserted = upsert_apply_single_item(numItems, itemBucket, bucketHead, nodeKeys, nodeValues,
            nodeCount, nodeNext, nodeMax, freeStack, freeTop, keys, values, segStart, allocBase, counters);
    const bool counts = true;
    block_counts_to_global({0, 0, 0, counts ? (unsigned long long)inserted : 0ull}, counters, -1, -1, -1,
                           SLOT_KEYS_INSERTED);
}

// ---------------------------------------------------------------------------------------------------------------
// Delete (TL-Bulk with compaction). Lanes flag their node key when it is among the keys routed to the node,
// survivors shift left by the number of flagged keys before them, and a node left empty is unlinked and pushed
// onto the free stack (counters[SLOT_FREE_TOP] is its top).

__device__ __forceinline__ long long delete_apply_item(
        int numItems, const int* itemBucket, int* bucketHead, i64* nodeKeys, i64* nodeValues, int* nodeCount,
        int* nodeNext, i64* nodeMax, int* freeStack, const i64* keys, const int* segStart, i64* counters) {
    const int w = warp_id_global();
    if (w >= numItems) return 0;
    const int b = itemBucket ? itemBucket[w] : w;
    const int lane = threadIdx.x & 31;
    const int s = segStart[w];
    const int e = segStart[w + 1];
    if (s == e) return 0;
    long long deleted = 0;
    int prev = -1;
    int node = bucketHead[b];
    int p = s;
    while (node >= 0 && p < e) {
        // loaded together, as in upsert_apply: the node whole and the batch window
        const int next = nodeNext[node];
        const i64 bound = nodeMax[node];
        const int cnt = nodeCount[node];
        const i64 slotKey = nodeKeys[(i64)node * NODE_SIZE + lane];
        const i64 slotVal = nodeValues[(i64)node * NODE_SIZE + lane];
        const i64 windowKey = window_at(keys, p, e, lane);
        const int p2 = routed_end_window(keys, p, e, bound, next < 0, windowKey, lane);
        bool freed = false;
        if (p2 > p) {
            const i64 laneKey = lane < cnt ? slotKey : 0;
            const i64 laneVal = lane < cnt ? slotVal : 0;
            unsigned foundMask;
            int lb;
            if (p2 - p <= NODE_SIZE) {
                i64 unused;
                match_node_keys_window(windowKey, 0, p2 - p, laneKey, cnt, lane, &foundMask, &lb, &unused);
            } else {
                match_node_keys(keys, p, p2, laneKey, cnt, lane, &foundMask, &lb);
            }
            const bool keep = lane < cnt && !((foundMask >> lane) & 1u);
            const unsigned keepMask = __ballot_sync(FULL_MASK, keep);
            const int kept = __popc(keepMask);
            __syncwarp();
            if (kept < cnt) {
                if (keep) {
                    const i64 to = (i64)node * NODE_SIZE + __popc(keepMask & lanemask_lt());
                    nodeKeys[to] = laneKey;
                    nodeValues[to] = laneVal;
                }
                deleted += cnt - kept;
                if (lane == 0) {
                    nodeCount[node] = kept;
                    if (kept == 0) {
                        if (prev < 0) bucketHead[b] = next; else nodeNext[prev] = next;
                        const unsigned long long top =
                                atomicAdd((unsigned long long*)&counters[SLOT_FREE_TOP], 1ull);
                        freeStack[top] = node;
                    }
                }
                if (kept > 0) {
                    const int lastLane = 31 - __clz(keepMask);
                    const i64 newMax = __shfl_sync(FULL_MASK, laneKey, lastLane);
                    if (lane == 0) nodeMax[node] = newMax;
                }
                freed = kept == 0;
            }
            __syncwarp();
        }
        if (!freed) prev = node;
        p = p2;
        node = next;
    }
    return deleted;
}

extern "C" __global__ void delete_apply(int numItems, const int* itemBucket, int* bucketHead, i64* nodeKeys,
                                        i64* nodeValues,
                                        int* nodeCount, int* nodeNext, i64* nodeMax, int* freeStack,
                                        const i64* keys, const int* segStart, i64* counters) {
    const long long deleted = delete_apply_item(numItems, itemBucket, bucketHead, nodeKeys, nodeValues, nodeCount,
            nodeNext, nodeMax, freeStack, keys, segStart, counters);
    const bool counts = (threadIdx.x & 31) == 0;
    block_counts_to_global({0, 0, 0, counts ? (unsigned long long)deleted : 0ull}, counters, -1, -1, -1,
                           SLOT_KEYS_DELETED);
}

// ---------------------------------------------------------------------------------------------------------------
// Ranges [lo, hi]: range_count, one thread a range, writes each range's count (at most limit; RANGE_OUT_OF_ORDER
// where lo > hi): a thread each keeps many more ranges' chains of loads in flight than a warp each. A scan makes the
// offsets, then range_query, one warp a range, writes the pairs from them. Both find a range's first bucket (the
// first whose max is >= lo) in the bucket samples (L2-resident), then in the one line of bucketMax they point to.

// ends[g] = offsets[n g / groups] for g <= groups: where each of `groups` equal groups of ranges starts in the
// scanned offsets (ends[groups]: the pairs of all of them), read by the host in one go instead of every offset.
extern "C" __global__ void range_group_ends(const i64* offsets, int n, int groups, i64* ends) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g > groups) return;
    ends[g] = offsets[(i64)n * g / groups];
}

extern "C" __global__ void range_count(int numRanges, const i64* lo, const i64* hi, int limit, int numBuckets,
                                       const i64* bucketMax, const i64* bucketSamples, int numSamples,
                                       const int* bucketHead, const i64* nodeKeys, const int* nodeCount,
                                       const int* nodeNext, const i64* nodeMax, i64* counts) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= numRanges) return;
    const i64 low = lo[r];
    const i64 high = hi[r];
    if (low > high) {
        // the host words the error from its arrays: the mark makes the scanned total too large for a result
        counts[r] = RANGE_OUT_OF_ORDER;
        return;
    }
    i64 taken = 0;
    bool done = false;
    for (int b = bucket_of_sampled(bucketSamples, numSamples, bucketMax, numBuckets, low);
         b < numBuckets && !done; b++) {
        for (int node = bucketHead[b]; node >= 0 && !done; node = nodeNext[node]) {
            if (nodeMax[node] < low) continue;
            const i64* keys = nodeKeys + (i64)node * NODE_SIZE;
            const int cnt = nodeCount[node];
            const int from = lower_bound_global(keys, 0, cnt, low);
            const int to = upper_bound_global(keys, from, cnt, high);
            taken += to - from;
            // a key above high ends the range
            done = taken >= limit || to < cnt;
        }
        if (bucketMax[b] >= high) done = true;
    }
    counts[r] = taken < limit ? taken : (i64)limit;
}

extern "C" __global__ void range_query(int numRanges, const i64* lo, const i64* hi, int limit, int numBuckets,
                                       const i64* bucketMax, const i64* bucketSamples, int numSamples,
                                       const int* bucketHead, const i64* nodeKeys, const i64* nodeValues,
                                       const int* nodeCount, const int* nodeNext, const i64* nodeMax,
                                       const i64* offsets, i64* keysOut, i64* valuesOut) {
    const int r = warp_id_global();
    if (r >= numRanges) return;
    const int lane = threadIdx.x & 31;
    const i64 low = lo[r];
    const i64 high = hi[r];
    // the last sample and the last bucketMax are INT64_MAX
    const int sampled = warp_lower_bound(bucketSamples, 0, numSamples - 1, low) * BUCKET_SAMPLE_STRIDE;
    int b = warp_lower_bound(bucketMax, sampled, min(sampled + BUCKET_SAMPLE_STRIDE, numBuckets) - 1, low);
    i64 taken = 0;
    const i64 base = offsets[r];
    bool done = false;
    for (; b < numBuckets && !done; b++) {
        int node = bucketHead[b];
        // skip nodes wholly below low
        while (node >= 0 && nodeMax[node] < low) node = nodeNext[node];
        for (; node >= 0 && !done; node = nodeNext[node]) {
            const int cnt = nodeCount[node];
            i64 key = 0;
            bool in = false;
            if (lane < cnt) {
                key = nodeKeys[(i64)node * NODE_SIZE + lane];
                in = key >= low && key <= high;
            }
            const unsigned inMask = __ballot_sync(FULL_MASK, in);
            const int rank = __popc(inMask & lanemask_lt());
            if (in && taken + rank < limit) {
                keysOut[base + taken + rank] = key;
                valuesOut[base + taken + rank] = nodeValues[(i64)node * NODE_SIZE + lane];
            }
            taken += __popc(inMask);
            if (taken >= limit || __any_sync(FULL_MASK, lane < cnt && key > high)) done = true;
        }
        if (bucketMax[b] >= high) done = true;
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Export: pairs with key >= fromKey in key order. Pass 0 counts per bucket, pass 1 writes at the scanned
// offsets, keeping only positions below limit.

extern "C" __global__ void export_pairs(int pass, int numBuckets, const i64* bucketMax, const int* bucketHead,
                                        const i64* nodeKeys, const i64* nodeValues, const int* nodeCount,
                                        const int* nodeNext, i64 fromKey, i64* counts, const i64* offsets,
                                        i64 limit, i64* keysOut, i64* valuesOut) {
    const int b = warp_id_global();
    if (b > numBuckets) return;
    const int lane = threadIdx.x & 31;
    if (b == numBuckets) {  // the scan's extra element
        if (pass == 0 && lane == 0) counts[b] = 0;
        return;
    }
    const bool skip = bucketMax[b] < fromKey;  // every key of bucket b is <= bucketMax[b]
    i64 taken = 0;
    const i64 base = pass == 1 ? offsets[b] : 0;
    if (!skip && !(pass == 1 && base >= limit)) {
        for (int node = bucketHead[b]; node >= 0; node = nodeNext[node]) {
            const int cnt = nodeCount[node];
            i64 key = 0;
            bool in = false;
            if (lane < cnt) {
                key = nodeKeys[(i64)node * NODE_SIZE + lane];
                in = key >= fromKey;
            }
            const unsigned inMask = __ballot_sync(FULL_MASK, in);
            if (pass == 1 && in) {
                const i64 to = base + taken + __popc(inMask & lanemask_lt());
                if (to < limit) {
                    keysOut[to] = key;
                    valuesOut[to] = nodeValues[(i64)node * NODE_SIZE + lane];
                }
            }
            taken += __popc(inMask);
        }
    }
    if (pass == 0 && lane == 0) counts[b] = taken;
}

// Long chains cut into buckets (before unsorted gets and ranges, where skewed upserts have grown chains that every
// such query walks from the head): a chain of len nodes becomes ceil(len / group) buckets of at most group nodes, in order. A new
// bucket's max is its last node's max (every key of the next node is greater), the chain's last bucket keeps the
// old bucket's max; no key moves. Empty buckets are dropped, except the last (its max, INT64_MAX, ends the key
// range); the next bucket then takes their keys. One thread a bucket. Pass 0: groups[b] = the buckets b becomes
// (groups[numBuckets] = 0, for the scan) and counters[SLOT_LONGEST_CHAIN]. Pass 1: writes them from
// start[b] into newMax / newHead and cuts the links between groups.
extern "C" __global__ void split_chains(int pass, int numBuckets, int group, const i64* bucketMax,
                                        const int* bucketHead, int* nodeNext, const i64* nodeMax, int* groups,
                                        const int* start, i64* newMax, int* newHead, i64* counters) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long len = 0;
    if (b < numBuckets) {
        int node = bucketHead[b];
        if (pass == 0) {
            for (; node >= 0; node = nodeNext[node]) len++;
            groups[b] = len == 0 ? (b == numBuckets - 1 ? 1 : 0) : (int)((len + group - 1) / group);
        } else if (node < 0) {
            if (b == numBuckets - 1) {
                newMax[start[b]] = bucketMax[b];
                newHead[start[b]] = -1;
            }
        } else {
            for (int at = start[b], inGroup = 0; node >= 0; inGroup++) {
                const int next = nodeNext[node];
                if (inGroup == group) {
                    inGroup = 0;
                    at++;
                }
                if (inGroup == 0) newHead[at] = node;
                if (next < 0) {
                    newMax[at] = bucketMax[b];
                } else if (inGroup == group - 1) {
                    newMax[at] = nodeMax[node];
                    nodeNext[node] = -1;
                }
                node = next;
            }
        }
    } else if (b == numBuckets && pass == 0) {
        groups[b] = 0;
    }
    if (pass == 0) block_counts_to_global({0, len, 0, 0}, counters, -1, SLOT_LONGEST_CHAIN, -1, -1);
}

// Nodes in use and the longest chain, for stats: counters[SLOT_NODES_IN_USE] += chain lengths,
// counters[SLOT_LONGEST_CHAIN] = max chain.
extern "C" __global__ void chain_stats(int numBuckets, const int* bucketHead, const int* nodeNext,
                                       i64* counters) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long len = 0;
    if (b < numBuckets) {
        for (int node = bucketHead[b]; node >= 0; node = nodeNext[node]) len++;
    }
    block_counts_to_global({len, len, 0, 0}, counters, SLOT_NODES_IN_USE, SLOT_LONGEST_CHAIN, -1, -1);
}
