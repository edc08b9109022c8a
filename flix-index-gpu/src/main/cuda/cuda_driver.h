// The CUDA driver's entry points, looked up in libcuda.so.1 (always present where the driver is), so the JNI
// bridges need no CUDA toolkit at run time.
#pragma once
#include <cuda.h>
#include <dlfcn.h>

// cuLaunchKernel's signature, for the bridges that launch kernels.
typedef CUresult (*LaunchFn)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, CUstream, void**, void**);

// The driver's function `name` (its versioned symbol, e.g. "cuMemcpyHtoDAsync_v2"), or nullptr where the driver
// or the function is missing.
inline void* flixDriverSymbol(const char* name) {
    static void* lib = [] {
        void* l = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        return l ? l : dlopen("libcuda.so.1", RTLD_NOW);
    }();
    return lib ? dlsym(lib, name) : nullptr;
}
