// Host cost of cuLaunchKernel and a small read in C (not part of the project).
#include <cuda.h>
#include <cstdio>
#include <chrono>
#include <algorithm>
__global__ void iota(unsigned* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = i; }
int main() {
  cuInit(0); CUdevice d; cuDeviceGet(&d, 0); CUcontext ctx; cuDevicePrimaryCtxRetain(&ctx, d); cuCtxSetCurrent(ctx);
  CUstream s; cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  unsigned* out; cudaMalloc(&out, 1 << 20); int n = 256;
  void* pinned; cuMemAllocHost(&pinned, 64);
  CUfunction f; cudaGetFuncBySymbol((cudaFunction_t*)&f, (const void*)iota);
  auto run = [&](const char* what, auto step, bool syncEvery) {
    double best[7];
    for (int r = 0; r < 7; r++) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 20000; i++) { step(); if (syncEvery && i % 64 == 63) cuStreamSynchronize(s); }
      cuStreamSynchronize(s);
      best[r] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 20000;
    }
    std::sort(best, best + 7); std::printf("C: %-50s %8.2f us (min %.2f)\n", what, best[3], best[0]);
  };
  void* params[] = {&out, &n};
  run("cuLaunchKernel iota n=256, sync every 64", [&] { cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, params, nullptr); }, true);
  run("launch + sync", [&] { cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, params, nullptr); cuStreamSynchronize(s); }, false);
  run("read 16 B pinned + sync", [&] { cuMemcpyDtoHAsync(pinned, (CUdeviceptr)out, 16, s); cuStreamSynchronize(s); }, false);
  run("launch + read 16 B + sync", [&] { cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, params, nullptr); cuMemcpyDtoHAsync(pinned, (CUdeviceptr)out, 16, s); cuStreamSynchronize(s); }, false);
  run("memset 2 ints", [&] { cuMemsetD32Async((CUdeviceptr)out, 0, 2, s); }, true);
  return 0;
}
