package io.flix.index.gpu;

/**
 * The JNI bridge to CUB's device radix sort and scan ({@code src/main/cuda/flix_cub_jni.cu}, built into the
 * project's native library, {@link NativeLibrary}). Arguments are raw device addresses on the context current on
 * the calling thread; work runs on the stream given (a CUstream handle: the index's stream, ordered with its
 * kernels). Returns are CUDA error
 * codes, or for the scratch-size calls a byte count (negative: an error code).
 */
final class CubNative {

    private CubNative() {
    }

    static native long sortPairsScratchBytes(int n);

    /** Sorts (64-bit key, 32-bit position) pairs by key bits [beginBit, endBit); 0 and 64 sort fully. */
    static native int sortPairs(long scratch, long scratchBytes, long keysIn, long keysOut, long valuesIn,
                                long valuesOut, int n, int beginBit, int endBit, long stream);

    static native long sortWidePairsScratchBytes(int n);

    /** Sorts (64-bit key, 64-bit value) pairs by key bits [beginBit, endBit), stable. */
    static native int sortWidePairs(long scratch, long scratchBytes, long keysIn, long keysOut, long valuesIn,
                                    long valuesOut, int n, int beginBit, int endBit, long stream);

    static native long sortKeysScratchBytes(int n);

    /** Sorts 64-bit keys by their bits [beginBit, endBit). */
    static native int sortKeys(long scratch, long scratchBytes, long keysIn, long keysOut, int n, int beginBit,
                               int endBit, long stream);

    static native long scanIntScratchBytes(int n);

    static native int scanInt(long scratch, long scratchBytes, long in, long out, int n, long stream);

    static native long scanLongScratchBytes(int n);

    static native int scanLong(long scratch, long scratchBytes, long in, long out, int n, long stream);

    static native String errorString(int code);

    /** Throws where a CUB call returned an error. */
    static void check(int code, String what) {
        if (code != 0) {
            throw new IllegalStateException(what + " failed: CUDA error " + code + " (" + errorString(code) + ")");
        }
    }

    static long checkBytes(long bytes, String what) {
        if (bytes < 0) {
            check((int) -bytes, what);
        }
        return bytes;
    }
}
