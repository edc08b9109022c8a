package io.flix.index.gpu;

import static io.flix.index.gpu.KernelLauncher.i32;
import static io.flix.index.gpu.KernelLauncher.i64;
import static io.flix.index.gpu.KernelLauncher.ptr;

import java.util.function.Consumer;

import jcuda.driver.CUdeviceptr;

/**
 * The kernels of {@code src/main/cuda/sorted_array_kernels.cu} (the sorted-array baseline), one typed launch each,
 * as {@link FlixKernels} are: the kernel's parameters in order, by the same names, {@code int} for {@code int},
 * {@code long} for {@code i64}, {@link CUdeviceptr} for a pointer; one thread an item. KernelContractTest checks them
 * against the kernel file.
 */
final class SortedArrayKernels {

    /** Built by this module's nvcc step beside the library's kernels, in the same package. */
    static final String FATBIN_RESOURCE = "sorted_array_kernels.fatbin";

    private final KernelLauncher launcher;

    /** @param trace called with each kernel's name after it is issued (profiling; may do nothing) */
    SortedArrayKernels(GpuRuntime.DeviceContext device, DeviceStream stream, Consumer<String> trace) {
        this.launcher = new KernelLauncher(device, FATBIN_RESOURCE, stream, trace);
    }

    /** {@code sa_lookup}: one binary search per query, in the order given. */
    void saLookup(int mode, CUdeviceptr keys, CUdeviceptr values, int size, CUdeviceptr queries, int n,
                  CUdeviceptr keysOut, CUdeviceptr valuesOut) {
        launcher.threads("sa_lookup", n, i32(mode), ptr(keys), ptr(values), i32(size), ptr(queries), i32(n),
                ptr(keysOut), ptr(valuesOut));
    }

    /** {@code sa_lower_bound_one}: *out = the first index whose key is >= x. */
    void saLowerBoundOne(CUdeviceptr keys, int size, long x, CUdeviceptr out) {
        launcher.threads("sa_lower_bound_one", 1, ptr(keys), i32(size), i64(x), ptr(out));
    }

    /** {@code sa_batch_ranks}: each batch key's rank in the array and whether the array holds it. */
    void saBatchRanks(CUdeviceptr keys, int size, CUdeviceptr batch, int m, CUdeviceptr rankA, CUdeviceptr dup) {
        launcher.threads("sa_batch_ranks", m + 1L, ptr(keys), i32(size), ptr(batch), i32(m), ptr(rankA), ptr(dup));
    }

    /** {@code sa_merge_batch}: writes the batch's pairs at their merged positions. */
    void saMergeBatch(CUdeviceptr batch, CUdeviceptr batchValues, int m, CUdeviceptr rankA, CUdeviceptr dupPrefix,
                      CUdeviceptr keysOut, CUdeviceptr valuesOut) {
        launcher.threads("sa_merge_batch", m, ptr(batch), ptr(batchValues), i32(m), ptr(rankA), ptr(dupPrefix),
                ptr(keysOut), ptr(valuesOut));
    }

    /** {@code sa_merge_array}: writes the array's pairs that stay at their merged positions. */
    void saMergeArray(CUdeviceptr keys, CUdeviceptr values, int size, CUdeviceptr batch, int m, CUdeviceptr dupPrefix,
                      CUdeviceptr keysOut, CUdeviceptr valuesOut) {
        launcher.threads("sa_merge_array", size, ptr(keys), ptr(values), i32(size), ptr(batch), i32(m), ptr(dupPrefix),
                ptr(keysOut), ptr(valuesOut));
    }

    /** {@code sa_flag_deleted}: clears the keep flag of each batch key's match. */
    void saFlagDeleted(CUdeviceptr keys, int size, CUdeviceptr batch, int m, CUdeviceptr keep) {
        launcher.threads("sa_flag_deleted", m, ptr(keys), i32(size), ptr(batch), i32(m), ptr(keep));
    }

    /** {@code sa_compact_kept}: compacts the kept pairs. */
    void saCompactKept(CUdeviceptr keys, CUdeviceptr values, CUdeviceptr keep, CUdeviceptr pos, int size,
                       CUdeviceptr keysOut, CUdeviceptr valuesOut) {
        launcher.threads("sa_compact_kept", size, ptr(keys), ptr(values), ptr(keep), ptr(pos), i32(size), ptr(keysOut),
                ptr(valuesOut));
    }

    /**
     * {@code sa_range_count}: each range's pairs up to the limit, or {@link KernelContract#RANGE_OUT_OF_ORDER}
     * (and counts[n] = 0).
     */
    void saRangeCount(CUdeviceptr lo, CUdeviceptr hi, int n, int limit, CUdeviceptr keys, int size,
                      CUdeviceptr counts) {
        launcher.threads("sa_range_count", n + 1L, ptr(lo), ptr(hi), i32(n), i32(limit), ptr(keys), i32(size),
                ptr(counts));
    }

    /** {@code sa_range_fill}: writes each range's pairs at its offset. */
    void saRangeFill(CUdeviceptr lo, int n, CUdeviceptr keys, CUdeviceptr values, int size, CUdeviceptr offsets,
                     CUdeviceptr keysOut, CUdeviceptr valuesOut) {
        launcher.threads("sa_range_fill", n, ptr(lo), i32(n), ptr(keys), ptr(values), i32(size), ptr(offsets),
                ptr(keysOut), ptr(valuesOut));
    }
}
