package io.flix.index.gpu;

import jcuda.driver.CUresult;

/**
 * The JNI bridge that copies Java {@code long[]} arrays straight between the heap and the device
 * ({@code src/main/cuda/flix_heap_jni.cu}, in the project's native library): no pinned staging and no host copy,
 * once {@link HeapRegistration} has registered the heap with the driver. Each copy holds its array still
 * (JNI's critical access) until the copy has finished, so keep copies short (a piece or a chunk). Create and use with
 * the device's context current; returns are CUresult codes ({@link DeviceMemoryNative#check}).
 */
final class HostArrayDma {

    private HostArrayDma() {
    }

    /**
     * Registers the mapping that holds {@code probe}'s elements, mapped for the device where the driver can; its start
     * and length into out[0], out[1], and 1 into out[2] where it is mapped, else 0.
     */
    static native int registerMappingOf(long[] probe, long[] out);

    /** Copies {@code src[from, from + count)} to device address {@code dst} on {@code stream}; returns when done. */
    static native int toDevice(long[] src, int from, int count, long dst, long stream);

    /** Copies {@code count} longs from device address {@code src} into {@code dst[from, from + count)}; when done. */
    static native int toHost(long src, long[] dst, int from, int count, long stream);

    /**
     * Looks up {@code queries[from, from + count)} into {@code values} (and, for ceiling and floor, {@code keys}; null
     * for a get) at the same place: a pipeline of chunks of up to {@code chunkLongs}, each going up, looked up (the
     * kernel in {@code args}: {@code lookup_get_any_order}, {@code lookup_ceiling_any_order} or {@code
     * lookup_floor_any_order}) and coming back while the next goes up, issued in this one call; returns when the
     * answers are in place. Where {@code args} asks for the sort check, its int comes back into {@code sortCheck[0]}'s
     * low half. Holds the arrays still throughout. {@code args}: the handles and device arrays, in the slots {@link
     * KernelContract}'s GET_ constants name.
     */
    static native int lookupWindow(long[] queries, long[] values, long[] keys, int from, int count, int chunkLongs,
                                   long[] args, long[] sortCheck);

    /**
     * Looks up {@code queries[from, from + count)} into {@code values} (and {@code keys}, as {@link #lookupWindow}'s)
     * at the same place by one launch of the kernel in {@code args} that reads the queries from the heap and writes
     * the answers into it through the heap's device mapping: no copy. {@code args} and {@code sortCheck} as {@link
     * #lookupWindow}'s. Returns {@link #NOT_MAPPED}, having done nothing, where the heap is not mapped or an array lies
     * outside it.
     */
    static native int lookupMapped(long[] queries, long[] values, long[] keys, int from, int count, long[] args,
                                   long[] sortCheck);

    /** CUDA_ERROR_NOT_MAPPED: {@link #lookupMapped} could not reach an array in place. */
    static final int NOT_MAPPED = CUresult.CUDA_ERROR_NOT_MAPPED;
}
