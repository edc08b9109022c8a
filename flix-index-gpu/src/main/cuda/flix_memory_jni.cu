// JNI bridge to the CUDA driver's virtual memory management for io.flix.index.gpu.DeviceMemoryNative: a buffer
// that grows reserves an address range once and maps physical memory into it chunk by chunk, so growing copies
// nothing and never holds the old and the new buffer at once.
//
// Why not JCuda's bindings of the same calls: its cuMemCreate fills CUmemAllocationProp without clearing it (the
// reserved bytes, and allocation flags read from the wrong object), and the driver then rejects it with
// CUDA_ERROR_INVALID_VALUE at random. Returns are CUresult codes (0 = success).
#include <jni.h>
#include <cuda.h>
#include <cstring>

#include "cuda_driver.h"

namespace {

typedef CUresult (*GranularityFn)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);
typedef CUresult (*ReserveFn)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*AddressFreeFn)(CUdeviceptr, size_t);
typedef CUresult (*CreateFn)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long);
typedef CUresult (*ReleaseFn)(CUmemGenericAllocationHandle);
typedef CUresult (*MapFn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*UnmapFn)(CUdeviceptr, size_t);
typedef CUresult (*SetAccessFn)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
typedef CUresult (*ErrorStringFn)(CUresult, const char**);

struct Driver {
    GranularityFn granularity;
    ReserveFn reserve;
    AddressFreeFn addressFree;
    CreateFn create;
    ReleaseFn release;
    MapFn map;
    UnmapFn unmap;
    SetAccessFn setAccess;
    ErrorStringFn errorString;
    bool loaded;
};

// The entry points, looked up once (the JVM loads this library once; a race only repeats the same lookups).
const Driver& driver() {
    static Driver d = [] {
        Driver r{};
        r.granularity = (GranularityFn)flixDriverSymbol("cuMemGetAllocationGranularity");
        r.reserve = (ReserveFn)flixDriverSymbol("cuMemAddressReserve");
        r.addressFree = (AddressFreeFn)flixDriverSymbol("cuMemAddressFree");
        r.create = (CreateFn)flixDriverSymbol("cuMemCreate");
        r.release = (ReleaseFn)flixDriverSymbol("cuMemRelease");
        r.map = (MapFn)flixDriverSymbol("cuMemMap");
        r.unmap = (UnmapFn)flixDriverSymbol("cuMemUnmap");
        r.setAccess = (SetAccessFn)flixDriverSymbol("cuMemSetAccess");
        r.errorString = (ErrorStringFn)flixDriverSymbol("cuGetErrorString");
        r.loaded = r.granularity && r.reserve && r.addressFree && r.create && r.release && r.map && r.unmap
                   && r.setAccess && r.errorString;
        return r;
    }();
    return d;
}

// Pinned device memory on device `ordinal`, every other field cleared.
CUmemAllocationProp deviceMemory(int ordinal) {
    CUmemAllocationProp prop;
    std::memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ordinal;
    return prop;
}

CUdeviceptr address(jlong a) { return (CUdeviceptr)(unsigned long long)a; }

}  // namespace

extern "C" {

// The mapping granularity in bytes on device `ordinal` into out[0].
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_DeviceMemoryNative_granularity(JNIEnv* env, jclass, jint ordinal,
                                                                            jlongArray out) {
    if (!driver().loaded) return CUDA_ERROR_NOT_FOUND;
    const CUmemAllocationProp prop = deviceMemory(ordinal);
    size_t bytes = 0;
    const CUresult r = driver().granularity(&bytes, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    const jlong value = (jlong)bytes;
    env->SetLongArrayRegion(out, 0, 1, &value);
    return r;
}

// Reserves `bytes` of addresses (a multiple of the granularity); the start into out[0].
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_DeviceMemoryNative_reserve(JNIEnv* env, jclass, jlong bytes,
                                                                        jlongArray out) {
    if (!driver().loaded) return CUDA_ERROR_NOT_FOUND;
    CUdeviceptr start = 0;
    const CUresult r = driver().reserve(&start, (size_t)bytes, 0, 0, 0);
    const jlong value = (jlong)start;
    env->SetLongArrayRegion(out, 0, 1, &value);
    return r;
}

JNIEXPORT jint JNICALL Java_io_flix_index_gpu_DeviceMemoryNative_unreserve(JNIEnv*, jclass, jlong start,
                                                                          jlong bytes) {
    if (!driver().loaded) return CUDA_ERROR_NOT_FOUND;
    return driver().addressFree(address(start), (size_t)bytes);
}

// Creates `bytes` of memory on device `ordinal`, maps it at `at` (inside a reservation, granularity-aligned) and
// makes it readable and writable from that device; the chunk's handle into out[0]. On failure nothing stays.
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_DeviceMemoryNative_map(JNIEnv* env, jclass, jlong at, jlong bytes,
                                                                    jint ordinal, jlongArray out) {
    if (!driver().loaded) return CUDA_ERROR_NOT_FOUND;
    const CUmemAllocationProp prop = deviceMemory(ordinal);
    CUmemGenericAllocationHandle chunk = 0;
    CUresult r = driver().create(&chunk, (size_t)bytes, &prop, 0);
    if (r != CUDA_SUCCESS) return r;
    r = driver().map(address(at), (size_t)bytes, 0, chunk, 0);
    if (r != CUDA_SUCCESS) {
        driver().release(chunk);
        return r;
    }
    CUmemAccessDesc access;
    std::memset(&access, 0, sizeof(access));
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = driver().setAccess(address(at), (size_t)bytes, &access, 1);
    if (r != CUDA_SUCCESS) {
        driver().unmap(address(at), (size_t)bytes);
        driver().release(chunk);
        return r;
    }
    const jlong value = (jlong)chunk;
    env->SetLongArrayRegion(out, 0, 1, &value);
    return CUDA_SUCCESS;
}

// Unmaps the chunk mapped at `at` and frees its memory.
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_DeviceMemoryNative_unmap(JNIEnv*, jclass, jlong at, jlong bytes,
                                                                      jlong chunk) {
    if (!driver().loaded) return CUDA_ERROR_NOT_FOUND;
    const CUresult r = driver().unmap(address(at), (size_t)bytes);
    const CUresult released = driver().release((CUmemGenericAllocationHandle)chunk);
    return r != CUDA_SUCCESS ? r : released;
}

JNIEXPORT jstring JNICALL Java_io_flix_index_gpu_DeviceMemoryNative_errorString(JNIEnv* env, jclass, jint code) {
    const char* text = nullptr;
    if (!driver().loaded || driver().errorString((CUresult)code, &text) != CUDA_SUCCESS || !text) {
        text = code == CUDA_ERROR_NOT_FOUND ? "libcuda.so.1 or its virtual memory calls not found"
                                            : "unknown CUDA driver error";
    }
    return env->NewStringUTF(text);
}

}  // extern "C"
