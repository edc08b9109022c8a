// Kernels of the sorted-array baseline (io.flix.index.gpu.GpuSortedArrayIndex): keys and values in two device
// arrays sorted by key. Lookups are one binary search per thread, queries in the order given; updates sort the
// batch (CUB, on the host side) and merge it with the array into a new array ("full rebuild" in the FliX paper).
// Built into sorted_array_kernels.fatbin.
//
// Sizes are below 2^31 (CUB's item counts are int); products of indices are taken in 64 bits.

#include <cstdint>

#include "kernel_contract.h"

// First index in [0, n) whose key is >= x (n where none).
__device__ __forceinline__ int lower_bound(const i64* __restrict__ a, int n, i64 x) {
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = lo + ((hi - lo) >> 1);
        if (a[mid] < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// First index in [0, n) whose key is > x (n where none).
__device__ __forceinline__ int upper_bound(const i64* __restrict__ a, int n, i64 x) {
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = lo + ((hi - lo) >> 1);
        if (a[mid] <= x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

__device__ __forceinline__ int thread_index() {
    return blockIdx.x * blockDim.x + threadIdx.x;
}

// ------------------------------------------------------------------------------------------------------------
// Batch preparation (checks, sorts, dedupe) runs on the FliX index's kernels: io.flix.index.gpu.DeviceSteps.

// ------------------------------------------------------------------------------------------------------------
// Lookups: one binary search per query, in the order given (sorted queries make neighbouring threads walk the
// same path, which is what makes them fast).

extern "C" __global__ void sa_lookup(int mode, const i64* __restrict__ keys, const i64* __restrict__ values,
                                     int size, const i64* __restrict__ queries, int n, i64* __restrict__ keysOut,
                                     i64* __restrict__ valuesOut) {
    const int i = thread_index();
    if (i >= n) return;
    const i64 q = queries[i];
    if (mode == MODE_GET) {
        const int p = lower_bound(keys, size, q);
        valuesOut[i] = (p < size && keys[p] == q) ? values[p] : NOT_FOUND;
    } else if (mode == MODE_CEILING) {
        const int p = lower_bound(keys, size, q);
        keysOut[i] = p < size ? keys[p] : 0;
        valuesOut[i] = p < size ? values[p] : NOT_FOUND;
    } else {
        const int p = upper_bound(keys, size, q) - 1;
        keysOut[i] = p >= 0 ? keys[p] : 0;
        valuesOut[i] = p >= 0 ? values[p] : NOT_FOUND;
    }
}

// *out = first index whose key is >= x.
extern "C" __global__ void sa_lower_bound_one(const i64* __restrict__ keys, int size, i64 x, i64* out) {
    if (thread_index() == 0) *out = lower_bound(keys, size, x);
}

// ------------------------------------------------------------------------------------------------------------
// Upsert: merge a sorted batch of distinct keys B[0, m) into the array A[0, size). Merged position of
//   B[j]:            j + rankA[j] - dupPrefix[j]   (rankA[j] = keys of A below B[j])
//   A[i] not in B:   i + r - dupPrefix[r]          (r = keys of B below A[i])
// where dupPrefix is the exclusive scan of dup (dup[j] = 1 where B[j] is already in A): each such key of A is
// replaced by its B version and written once. New size: size + m - dupPrefix[m].

// m + 1 threads: dup[m] = 0 so that the scan's last entry is the total.
extern "C" __global__ void sa_batch_ranks(const i64* __restrict__ keys, int size, const i64* __restrict__ batch, int m,
                                          int* __restrict__ rankA, int* __restrict__ dup) {
    const int j = thread_index();
    if (j > m) return;
    if (j == m) { dup[m] = 0; return; }
    const i64 k = batch[j];
    const int p = lower_bound(keys, size, k);
    rankA[j] = p;
    dup[j] = (p < size && keys[p] == k) ? 1 : 0;
}

extern "C" __global__ void sa_merge_batch(const i64* __restrict__ batch, const i64* __restrict__ batchValues, int m,
                                          const int* __restrict__ rankA, const int* __restrict__ dupPrefix,
                                          i64* __restrict__ keysOut, i64* __restrict__ valuesOut) {
    const int j = thread_index();
    if (j >= m) return;
    const i64 pos = (i64)j + rankA[j] - dupPrefix[j];
    keysOut[pos] = batch[j];
    valuesOut[pos] = batchValues[j];
}

extern "C" __global__ void sa_merge_array(const i64* __restrict__ keys, const i64* __restrict__ values, int size,
                                          const i64* __restrict__ batch, int m, const int* __restrict__ dupPrefix,
                                          i64* __restrict__ keysOut, i64* __restrict__ valuesOut) {
    const int i = thread_index();
    if (i >= size) return;
    const i64 k = keys[i];
    const int r = lower_bound(batch, m, k);
    if (r < m && batch[r] == k) return;  // replaced by the batch's pair
    const i64 pos = (i64)i + r - dupPrefix[r];
    keysOut[pos] = k;
    valuesOut[pos] = values[i];
}

// ------------------------------------------------------------------------------------------------------------
// Delete: keep[i] starts at 1 (keep[size] at 0); each batch key clears the flag of its match; a scan of keep gives
// the survivors' positions (and at [size] their count).

extern "C" __global__ void sa_flag_deleted(const i64* __restrict__ keys, int size, const i64* __restrict__ batch,
                                           int m, int* __restrict__ keep) {
    const int j = thread_index();
    if (j >= m) return;
    const i64 k = batch[j];
    const int p = lower_bound(keys, size, k);
    if (p < size && keys[p] == k) keep[p] = 0;
}

extern "C" __global__ void sa_compact_kept(const i64* __restrict__ keys, const i64* __restrict__ values,
                                           const int* __restrict__ keep, const int* __restrict__ pos, int size,
                                           i64* __restrict__ keysOut, i64* __restrict__ valuesOut) {
    const int i = thread_index();
    if (i < size && keep[i]) {
        keysOut[pos[i]] = keys[i];
        valuesOut[pos[i]] = values[i];
    }
}

// ------------------------------------------------------------------------------------------------------------
// Range: counts[i] = pairs in [lo[i], hi[i]] up to limit, RANGE_OUT_OF_ORDER where lo[i] > hi[i] (counts[n] = 0,
// n + 1 threads); a scan into offsets; the fill pass copies each range's pairs.

extern "C" __global__ void sa_range_count(const i64* __restrict__ lo, const i64* __restrict__ hi, int n, int limit,
                                          const i64* __restrict__ keys, int size, i64* __restrict__ counts) {
    const int i = thread_index();
    if (i > n) return;
    if (i == n) { counts[n] = 0; return; }
    if (lo[i] > hi[i]) { counts[i] = RANGE_OUT_OF_ORDER; return; }
    const int first = lower_bound(keys, size, lo[i]);
    const int end = upper_bound(keys, size, hi[i]);
    const int c = end - first;
    counts[i] = c < limit ? c : limit;
}

extern "C" __global__ void sa_range_fill(const i64* __restrict__ lo, int n, const i64* __restrict__ keys,
                                         const i64* __restrict__ values, int size,
                                         const i64* __restrict__ offsets, i64* __restrict__ keysOut,
                                         i64* __restrict__ valuesOut) {
    const int i = thread_index();
    if (i >= n) return;
    const i64 out = offsets[i];
    const i64 count = offsets[i + 1] - out;
    const int first = lower_bound(keys, size, lo[i]);
    for (i64 c = 0; c < count; c++) {
        keysOut[out + c] = keys[first + c];
        valuesOut[out + c] = values[first + c];
    }
}
