// JNI bridge for io.flix.index.gpu.HostArrayDma: Java long[] arrays copied straight between the Java heap and the
// device, with no pinned staging and no host copy. The heap is registered with the driver once (page-locked, so the
// copy engines read and write it at the bus's rate); a copy then holds the array with GetPrimitiveArrayCritical,
// which keeps the garbage collector from moving it, until the copy has finished. Where the array lies outside the
// registered range the driver copies it through its own staging: slower, never wrong. Returns are CUresult codes.
#include <jni.h>
#include <cuda.h>
#include <cstdio>
#include <cstdint>

#include "cuda_driver.h"

namespace {

typedef CUresult (*RegisterFn)(void*, size_t, unsigned int);
typedef CUresult (*ToDeviceFn)(CUdeviceptr, const void*, size_t, CUstream);
typedef CUresult (*ToHostFn)(void*, CUdeviceptr, size_t, CUstream);
typedef CUresult (*SynchronizeFn)(CUstream);

struct Driver {
    RegisterFn registerHost;
    ToDeviceFn toDevice;
    ToHostFn toHost;
    SynchronizeFn synchronize;
    bool loaded;
};

const Driver& driver() {
    static Driver d = [] {
        Driver r{};
        r.registerHost = (RegisterFn)flixDriverSymbol("cuMemHostRegister_v2");
        r.toDevice = (ToDeviceFn)flixDriverSymbol("cuMemcpyHtoDAsync_v2");
        r.toHost = (ToHostFn)flixDriverSymbol("cuMemcpyDtoHAsync_v2");
        r.synchronize = (SynchronizeFn)flixDriverSymbol("cuStreamSynchronize");
        r.loaded = r.registerHost && r.toDevice && r.toHost && r.synchronize;
        return r;
    }();
    return d;
}

}  // namespace

extern "C" {

// Registers (page-locks, for every context) the whole mapping of this process that holds `probe`'s elements, as
// /proc/self/maps lists it; its start and length into out[0], out[1]. The caller makes sure the mapping is the
// Java heap and that the heap never gives pages back to the system (else a page mapped anew would not be the one
// registered).
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_HostArrayDma_registerMappingOf(JNIEnv* env, jclass, jlongArray probe,
                                                                           jlongArray out) {
    if (!driver().loaded) return CUDA_ERROR_NOT_FOUND;
    void* elements = env->GetPrimitiveArrayCritical(probe, nullptr);
    const uintptr_t at = (uintptr_t)elements;
    env->ReleasePrimitiveArrayCritical(probe, elements, JNI_ABORT);
    FILE* maps = std::fopen("/proc/self/maps", "r");
    if (!maps) return CUDA_ERROR_NOT_FOUND;
    unsigned long start = 0, end = 0, s = 0, e = 0;
    char line[512];
    while (std::fgets(line, sizeof line, maps)) {
        if (std::sscanf(line, "%lx-%lx", &s, &e) == 2 && at >= s && at < e) {
            start = s;
            end = e;
            break;
        }
    }
    std::fclose(maps);
    if (start == 0) return CUDA_ERROR_NOT_FOUND;
    const CUresult r = driver().registerHost((void*)start, end - start, CU_MEMHOSTREGISTER_PORTABLE);
    const jlong range[2] = {(jlong)start, (jlong)(end - start)};
    env->SetLongArrayRegion(out, 0, 2, range);
    return r;
}

// Copies between array[from, from + count) and device address `device` on `stream` (`toDevice`: up, else down)
// and waits for the copy, holding the array still until then.
static jint copyHeld(JNIEnv* env, jlongArray array, jint from, jint count, jlong device, jlong stream, bool toDevice) {
    if (!driver().loaded) return CUDA_ERROR_NOT_FOUND;
    jlong* elements = (jlong*)env->GetPrimitiveArrayCritical(array, nullptr);
    if (!elements) return CUDA_ERROR_OUT_OF_MEMORY;
    const size_t bytes = (size_t)count * sizeof(jlong);
    CUresult r = toDevice ? driver().toDevice((CUdeviceptr)device, elements + from, bytes, (CUstream)stream)
                          : driver().toHost(elements + from, (CUdeviceptr)device, bytes, (CUstream)stream);
    if (r == CUDA_SUCCESS) r = driver().synchronize((CUstream)stream);
    env->ReleasePrimitiveArrayCritical(array, elements, toDevice ? JNI_ABORT : 0);
    return r;
}

// Copies src[from, from + count) to device address `dst` on `stream` and waits for it.
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_HostArrayDma_toDevice(JNIEnv* env, jclass, jlongArray src, jint from,
                                                                   jint count, jlong dst, jlong stream) {
    return copyHeld(env, src, from, count, dst, stream, true);
}

// Copies `count` longs from device address `src` into dst[from, from + count) on `stream` and waits for them.
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_HostArrayDma_toHost(JNIEnv* env, jclass, jlong src, jlongArray dst,
                                                                 jint from, jint count, jlong stream) {
    return copyHeld(env, dst, from, count, src, stream, false);
}

}  // extern "C"
