// JNI bridge for io.flix.index.gpu.KernelLauncher: a kernel launched with its parameters passed as raw 64-bit
// values, in one JNI call and one driver call. JCuda's launch marshals an array of Pointer objects, each to its own
// Java array, and takes about twice the host time; an update issues a dozen launches in a chain. A parameter's
// bytes are the low bytes of its value (little-endian), so a 32-bit parameter reads its int from the same slot.
// Returns are CUresult codes.
#include <jni.h>
#include <cuda.h>

#include "cuda_driver.h"

namespace {

// More than any kernel of the project takes; KernelLauncher refuses more before calling.
constexpr jsize MAX_PARAMETERS = 24;

LaunchFn launchFunction() {
    static LaunchFn f = (LaunchFn)flixDriverSymbol("cuLaunchKernel");
    return f;
}

}  // namespace

extern "C" {

// Launches `function` on `stream` in gridX by gridY blocks of blockX threads, with `parameters` in order.
JNIEXPORT jint JNICALL Java_io_flix_index_gpu_KernelLauncher_launch(JNIEnv* env, jclass, jlong function, jint gridX,
                                                                  jint gridY, jint blockX, jlong stream,
                                                                  jlongArray parameters) {
    const LaunchFn launch = launchFunction();
    if (!launch) return CUDA_ERROR_NOT_FOUND;
    const jsize count = env->GetArrayLength(parameters);
    if (count > MAX_PARAMETERS) return CUDA_ERROR_INVALID_VALUE;
    jlong values[MAX_PARAMETERS];
    void* slots[MAX_PARAMETERS];
    env->GetLongArrayRegion(parameters, 0, count, values);
    for (jsize i = 0; i < count; i++) {
        slots[i] = &values[i];
    }
    return launch((CUfunction)function, (unsigned)gridX, (unsigned)gridY, 1, (unsigned)blockX, 1, 1, 0,
                  (CUstream)stream, slots, nullptr);
}

}  // extern "C"
