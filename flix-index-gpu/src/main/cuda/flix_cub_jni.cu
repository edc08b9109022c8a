// JNI bridge to CUB's device-wide radix sort and scan for io.flix.index.gpu.CubNative.
//
// Why a JNI library rather than a hand-written sort in the kernel fatbin: CUB's DeviceRadixSort (onesweep) is
// the fastest stable sort of 64-bit keys on NVIDIA GPUs and is correct for signed keys out of the box, while a
// block-level radix sort written here would be slower and another thing to get right. The library is linked
// with the static CUDA runtime, so it needs no CUDA toolkit at run time, and it takes raw device pointers from
// Java: the runtime uses the context current on the calling thread, the device's primary context that the
// driver-API side makes current, so both sides share memory; every call runs on the stream it is given (the
// index's stream, ordered with its kernels).
//
// Each operation comes in two calls, as in CUB: the scratch size for n items, then the operation with a
// scratch buffer at least that large. Return values are cudaError_t codes (0 = success).
#include <jni.h>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

static void* ptr(jlong address) { return reinterpret_cast<void*>(static_cast<intptr_t>(address)); }
// A driver-API stream handle (CUstream) as the runtime's cudaStream_t: the same object.
static cudaStream_t stream_of(jlong handle) { return reinterpret_cast<cudaStream_t>(static_cast<intptr_t>(handle)); }

// A size query's result: the bytes, or the negated cudaError_t. Called after the query has set bytes (as an
// argument beside the query itself, bytes could be read before the query writes it).
static jlong bytesOrError(cudaError_t err, size_t bytes) { return err == cudaSuccess ? (jlong)bytes : -(jlong)err; }

// Stable sort of (64-bit key, Value) pairs by key bits [beginBit, endBit): 0 and 64 sort fully; fewer bits take
// fewer passes (where the bits above endBit are the same in every key).
template <typename Value>
static jlong pairSortScratchBytes(jint n) {
    size_t bytes = 0;
    const cudaError_t err = cub::DeviceRadixSort::SortPairs(nullptr, bytes, (const int64_t*)nullptr,
                                                            (int64_t*)nullptr, (const Value*)nullptr, (Value*)nullptr,
                                                            n);
    return bytesOrError(err, bytes);
}

template <typename Value>
static jint sortPairs(jlong scratch, jlong scratchBytes, jlong keysIn, jlong keysOut, jlong valuesIn,
                      jlong valuesOut, jint n, jint beginBit, jint endBit, jlong stream) {
    size_t bytes = (size_t)scratchBytes;
    return (jint)cub::DeviceRadixSort::SortPairs(ptr(scratch), bytes, (const int64_t*)ptr(keysIn),
                                                 (int64_t*)ptr(keysOut), (const Value*)ptr(valuesIn),
                                                 (Value*)ptr(valuesOut), n, beginBit, endBit, stream_of(stream));
}

// Exclusive prefix sums of n items of type T.
template <typename T>
static jlong scanScratchBytes(jint n) {
    size_t bytes = 0;
    const cudaError_t err = cub::DeviceScan::ExclusiveSum(nullptr, bytes, (const T*)nullptr, (T*)nullptr, n);
    return bytesOrError(err, bytes);
}

template <typename T>
static jint scan(jlong scratch, jlong scratchBytes, jlong in, jlong out, jint n, jlong stream) {
    size_t bytes = (size_t)scratchBytes;
    return (jint)cub::DeviceScan::ExclusiveSum(ptr(scratch), bytes, (const T*)ptr(in), (T*)ptr(out), n,
                                               stream_of(stream));
}

extern "C" {

// Lookup batches: 64-bit keys with their 32-bit batch positions.
JNIEXPORT jlong JNICALL Java_io_flix_index_gpu_CubNative_sortPairsScratchBytes(JNIEnv*, jclass, jint n) {
    return pairSortScratchBytes<uint32_t>(n);
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_CubNative_sortPairs(JNIEnv*, jclass, jlong scratch,
                                                                  jlong scratchBytes, jlong keysIn,
                                                                  jlong keysOut, jlong valuesIn,
                                                                  jlong valuesOut, jint n, jint beginBit,
                                                                  jint endBit, jlong stream) {
    return sortPairs<uint32_t>(scratch, scratchBytes, keysIn, keysOut, valuesIn, valuesOut, n, beginBit, endBit,
                               stream);
}

// Update batches: 64-bit keys and values, stable (the last of equal keys wins).
JNIEXPORT jlong JNICALL Java_io_flix_index_gpu_CubNative_sortWidePairsScratchBytes(JNIEnv*, jclass, jint n) {
    return pairSortScratchBytes<int64_t>(n);
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_CubNative_sortWidePairs(JNIEnv*, jclass, jlong scratch,
                                                                      jlong scratchBytes, jlong keysIn,
                                                                      jlong keysOut, jlong valuesIn,
                                                                      jlong valuesOut, jint n, jint beginBit,
                                                                      jint endBit, jlong stream) {
    return sortPairs<int64_t>(scratch, scratchBytes, keysIn, keysOut, valuesIn, valuesOut, n, beginBit, endBit,
                              stream);
}

JNIEXPORT jlong JNICALL Java_io_flix_index_gpu_CubNative_sortKeysScratchBytes(JNIEnv*, jclass, jint n) {
    size_t bytes = 0;
    const cudaError_t err = cub::DeviceRadixSort::SortKeys(nullptr, bytes, (const int64_t*)nullptr,
                                                           (int64_t*)nullptr, n);
    return bytesOrError(err, bytes);
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_CubNative_sortKeys(JNIEnv*, jclass, jlong scratch,
                                                                 jlong scratchBytes, jlong keysIn, jlong keysOut,
                                                                 jint n, jint beginBit, jint endBit,
                                                                 jlong stream) {
    size_t bytes = (size_t)scratchBytes;
    return (jint)cub::DeviceRadixSort::SortKeys(ptr(scratch), bytes, (const int64_t*)ptr(keysIn),
                                                (int64_t*)ptr(keysOut), n, beginBit, endBit, stream_of(stream));
}

JNIEXPORT jlong JNICALL Java_io_flix_index_gpu_CubNative_scanIntScratchBytes(JNIEnv*, jclass, jint n) {
    return scanScratchBytes<int32_t>(n);
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_CubNative_scanInt(JNIEnv*, jclass, jlong scratch, jlong scratchBytes,
                                                                jlong in, jlong out, jint n, jlong stream) {
    return scan<int32_t>(scratch, scratchBytes, in, out, n, stream);
}

JNIEXPORT jlong JNICALL Java_io_flix_index_gpu_CubNative_scanLongScratchBytes(JNIEnv*, jclass, jint n) {
    return scanScratchBytes<int64_t>(n);
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_CubNative_scanLong(JNIEnv*, jclass, jlong scratch,
                                                                 jlong scratchBytes, jlong in, jlong out, jint n,
                                                                 jlong stream) {
    return scan<int64_t>(scratch, scratchBytes, in, out, n, stream);
}

JNIEXPORT jstring JNICALL Java_io_flix_index_gpu_CubNative_errorString(JNIEnv* env, jclass, jint code) {
    return env->NewStringUTF(cudaGetErrorString((cudaError_t)code));
}

}  // extern "C"
