// JNI bridge to CUB's device-wide radix sort and scan for io.flix.index.gpu.CubNative.
//
// Why a JNI library rather than a hand-written sort in the kernel fatbin: CUB's DeviceRadixSort (onesweep) is
// the fastest stable sort of 64-bit keys on NVIDIA GPUs and is correct for signed keys out of the box, while a
// block-level radix sort written here would be slower and another thing to get right. The library is linked
// with the static CUDA runtime, so it needs no CUDA toolkit at run time, and it takes raw device pointers from
// Java: the runtime uses the context current on the calling thread, the device's primary context that the
// driver-API side makes current, so both sides share memory and the legacy default stream (ordered with the
// kernels launched on stream 0).
//
// Each operation comes in two calls, as in CUB: the scratch size for n items, then the operation with a
// scratch buffer at least that large. Return values are cudaError_t codes (0 = success).
#include <jni.h>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

static void* ptr(jlong address) { return reinterpret_cast<void*>(static_cast<intptr_t>(address)); }

extern "C" {

// Pairs (64-bit key, 32-bit position) sorted by key bits [beginBit, endBit) only: 0 and 64 sort fully; fewer
// bits take fewer passes (a locality sort where the bits above endBit are the same in every key).
JNIEXPORT jlong JNICALL Java_io_flix_index_gpu_CubNative_sortPairsScratchBytes(JNIEnv*, jclass, jint n) {
    size_t bytes = 0;
    cudaError_t err = cub::DeviceRadixSort::SortPairs(nullptr, bytes, (const int64_t*)nullptr, (int64_t*)nullptr,
                                                      (const uint32_t*)nullptr, (uint32_t*)nullptr, n);
    return err == cudaSuccess ? (jlong)bytes : -(jlong)err;
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_CubNative_sortPairs(JNIEnv*, jclass, jlong scratch,
                                                                  jlong scratchBytes, jlong keysIn,
                                                                  jlong keysOut, jlong valuesIn,
                                                                  jlong valuesOut, jint n, jint beginBit,
                                                                  jint endBit) {
    size_t bytes = (size_t)scratchBytes;
    return (jint)cub::DeviceRadixSort::SortPairs(ptr(scratch), bytes, (const int64_t*)ptr(keysIn),
                                                 (int64_t*)ptr(keysOut), (const uint32_t*)ptr(valuesIn),
                                                 (uint32_t*)ptr(valuesOut), n, beginBit, endBit);
}

// Pairs of 64-bit keys and 64-bit values by key bits [beginBit, endBit), stable (updates: the last of equal keys
// wins).
JNIEXPORT jlong JNICALL Java_io_flix_index_gpu_CubNative_sortWidePairsScratchBytes(JNIEnv*, jclass, jint n) {
    size_t bytes = 0;
    cudaError_t err = cub::DeviceRadixSort::SortPairs(nullptr, bytes, (const int64_t*)nullptr, (int64_t*)nullptr,
                                                      (const int64_t*)nullptr, (int64_t*)nullptr, n);
    return err == cudaSuccess ? (jlong)bytes : -(jlong)err;
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_CubNative_sortWidePairs(JNIEnv*, jclass, jlong scratch,
                                                                      jlong scratchBytes, jlong keysIn,
                                                                      jlong keysOut, jlong valuesIn,
                                                                      jlong valuesOut, jint n, jint beginBit,
                                                                      jint endBit) {
    size_t bytes = (size_t)scratchBytes;
    return (jint)cub::DeviceRadixSort::SortPairs(ptr(scratch), bytes, (const int64_t*)ptr(keysIn),
                                                 (int64_t*)ptr(keysOut), (const int64_t*)ptr(valuesIn),
                                                 (int64_t*)ptr(valuesOut), n, beginBit, endBit);
}

JNIEXPORT jlong JNICALL Java_io_flix_index_gpu_CubNative_sortKeysScratchBytes(JNIEnv*, jclass, jint n) {
    size_t bytes = 0;
    cudaError_t err = cub::DeviceRadixSort::SortKeys(nullptr, bytes, (const int64_t*)nullptr, (int64_t*)nullptr, n);
    return err == cudaSuccess ? (jlong)bytes : -(jlong)err;
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_CubNative_sortKeys(JNIEnv*, jclass, jlong scratch,
                                                                 jlong scratchBytes, jlong keysIn, jlong keysOut,
                                                                 jint n, jint beginBit, jint endBit) {
    size_t bytes = (size_t)scratchBytes;
    return (jint)cub::DeviceRadixSort::SortKeys(ptr(scratch), bytes, (const int64_t*)ptr(keysIn),
                                                (int64_t*)ptr(keysOut), n, beginBit, endBit);
}

JNIEXPORT jlong JNICALL Java_io_flix_index_gpu_CubNative_scanIntScratchBytes(JNIEnv*, jclass, jint n) {
    size_t bytes = 0;
    cudaError_t err = cub::DeviceScan::ExclusiveSum(nullptr, bytes, (const int32_t*)nullptr, (int32_t*)nullptr, n);
    return err == cudaSuccess ? (jlong)bytes : -(jlong)err;
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_CubNative_scanInt(JNIEnv*, jclass, jlong scratch, jlong scratchBytes,
                                                                jlong in, jlong out, jint n) {
    size_t bytes = (size_t)scratchBytes;
    return (jint)cub::DeviceScan::ExclusiveSum(ptr(scratch), bytes, (const int32_t*)ptr(in), (int32_t*)ptr(out),
                                               n);
}

JNIEXPORT jlong JNICALL Java_io_flix_index_gpu_CubNative_scanLongScratchBytes(JNIEnv*, jclass, jint n) {
    size_t bytes = 0;
    cudaError_t err = cub::DeviceScan::ExclusiveSum(nullptr, bytes, (const int64_t*)nullptr, (int64_t*)nullptr, n);
    return err == cudaSuccess ? (jlong)bytes : -(jlong)err;
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_CubNative_scanLong(JNIEnv*, jclass, jlong scratch,
                                                                 jlong scratchBytes, jlong in, jlong out, jint n) {
    size_t bytes = (size_t)scratchBytes;
    return (jint)cub::DeviceScan::ExclusiveSum(ptr(scratch), bytes, (const int64_t*)ptr(in), (int64_t*)ptr(out),
                                               n);
}

JNIEXPORT jstring JNICALL Java_io_flix_index_gpu_CubNative_errorString(JNIEnv* env, jclass, jint code) {
    return env->NewStringUTF(cudaGetErrorString((cudaError_t)code));
}

}  // extern "C"
