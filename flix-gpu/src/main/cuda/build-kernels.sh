#!/usr/bin/env bash
# Compiles the GPU backend's device code during the Maven build (generate-resources):
#   flix_kernels.fatbin  - the index kernels, loaded through the CUDA driver API
#   libflixnative.so     - the JNI bridges: CUB's radix sort and scan (static CUDA runtime), the driver's
#                          virtual memory calls (looked up in libcuda.so.1 at run time)
#   sorted_array_kernels.fatbin - the sorted-array baseline's kernels (benchmarks), loaded like the index kernels
# Machine code for sm_80, sm_86, sm_89, sm_90 and compute_90 PTX (JIT-compiled by newer drivers).
# Without nvcc 12+ or the JDK's JNI headers it prints why and builds nothing: the GPU backend then reports
# itself unavailable and Backend.AUTO takes the CPU.
# Usage: build-kernels.sh SOURCE_DIR OUTPUT_DIR STAMP_FILE (JAVA_HOME locates jni.h; else javac on PATH)
set -euo pipefail
src=$1
out=$2
stamp=$3
java_home=${JAVA_HOME:-}

skip() {
  echo "[flix-gpu] GPU kernels not built: $1. The GPU backend is unavailable in this build; build with nvcc 12+ on PATH to enable it."
  exit 0
}

nvcc=$(command -v nvcc || true)
[[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
[[ -n $nvcc ]] || skip "nvcc not found on PATH"
version=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1/p')
[[ -n $version && $version -ge 12 ]] || skip "nvcc $("$nvcc" --version | tail -1) is older than 12"
if [[ -z $java_home || ! -f $java_home/include/jni.h ]]; then
  javac=$(command -v javac || true)
  [[ -n $javac ]] && java_home=$(dirname "$(dirname "$(readlink -f "$javac")")")
fi
[[ -n $java_home && -f $java_home/include/jni.h ]] || skip "the JDK's include/jni.h was not found (set JAVA_HOME)"

mkdir -p "$out" "$(dirname "$stamp")"
archs=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86
       -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code='[sm_90,compute_90]')
inputs=$(cat "$src"/kernel_contract.h "$src"/flix_kernels.cu "$src"/flix_cub_jni.cu "$src"/flix_memory_jni.cu \
          "$src"/sorted_array_kernels.cu "$0" | md5sum | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$inputs" && -f $out/flix_kernels.fatbin && -f $out/libflixnative.so
      && -f $out/sorted_array_kernels.fatbin ]]; then
  echo "[flix-gpu] GPU kernels up to date"
  exit 0
fi
start=$SECONDS
"$nvcc" -fatbin -O3 --threads 2 "${archs[@]}" -o "$out/flix_kernels.fatbin" "$src/flix_kernels.cu"
"$nvcc" -fatbin -O3 --threads 2 "${archs[@]}" -o "$out/sorted_array_kernels.fatbin" "$src/sorted_array_kernels.cu"
"$nvcc" -O3 --threads 2 -shared -Xcompiler -fPIC --cudart static "${archs[@]}" \
  -I"$java_home/include" -I"$java_home/include/linux" -o "$out/libflixnative.so" \
  "$src/flix_cub_jni.cu" "$src/flix_memory_jni.cu" -ldl
echo "$inputs" > "$stamp"
echo "[flix-gpu] GPU kernels built with $("$nvcc" --version | tail -1) in $((SECONDS - start)) s"
