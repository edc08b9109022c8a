package io.flix.index.gpu;

/**
 * The JNI bridge to the CUDA driver's virtual memory management ({@code src/main/cuda/flix_memory_jni.cu}, in the
 * project's native library): reserve an address range, map device memory into it chunk by chunk, unmap, free.
 * {@link DeviceBuffer#reserve} builds buffers that grow in place on it. Returns are CUresult codes; values come
 * back in {@code out[0]}.
 */
final class DeviceMemoryNative {

    /** CUresult CUDA_ERROR_OUT_OF_MEMORY. */
    static final int OUT_OF_MEMORY = 2;

    private DeviceMemoryNative() {
    }

    static native int granularity(int ordinal, long[] out);

    static native int reserve(long bytes, long[] out);

    static native int unreserve(long start, long bytes);

    static native int map(long at, long bytes, int ordinal, long[] out);

    static native int unmap(long at, long bytes, long chunk);

    static native String errorString(int code);

    /** Throws where a call returned an error. */
    static void check(int code, String what) {
        if (code != 0) {
            throw new IllegalStateException(what + " failed: CUDA driver error " + code + " (" + errorString(code)
                    + ")");
        }
    }
}
