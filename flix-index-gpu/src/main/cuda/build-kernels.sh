#!/usr/bin/env bash
# Compiles device code during the Maven build (generate-resources). Each NAME.cu of SOURCE_DIR becomes:
#   NAME.fatbin        - kernels, loaded through the CUDA driver API (flix_kernels.cu: the index's;
#                        flix-bench's sorted_array_kernels.cu: the paper's sorted-array baseline)
#   libflixnative.so   - all *_jni.cu files together: the JNI bridges for CUB's radix sort and scan (static CUDA
#                        runtime); the driver's virtual memory calls, the Java heap's registration and direct
#                        copies, and the kernel launches (looked up in libcuda.so.1 at run time, cuda_driver.h)
# Machine code for sm_80, sm_86, sm_89, sm_90 and compute_90 PTX (JIT-compiled by newer drivers).
# Without nvcc 12+ (or, for the JNI bridges, the JDK's JNI headers) it prints why and builds nothing: the GPU
# backend then reports itself unavailable and Backend.AUTO takes the CPU.
# Usage: build-kernels.sh SOURCE_DIR OUTPUT_DIR STAMP_FILE [INCLUDE_DIR]
#   INCLUDE_DIR: where kernel_contract.h is when it is not in SOURCE_DIR (JAVA_HOME locates jni.h; else javac)
set -euo pipefail
src=$1
out=$2
stamp=$3
include=${4:-$src}
java_home=${JAVA_HOME:-}

skip() {
  echo "[flix] GPU kernels of $src not built: $1. The GPU backend is unavailable in this build; build with nvcc 12+ on PATH to enable it."
  exit 0
}

nvcc=$(command -v nvcc || true)
[[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
[[ -n $nvcc ]] || skip "nvcc not found on PATH"
version=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1/p')
[[ -n $version && $version -ge 12 ]] || skip "nvcc $("$nvcc" --version | tail -1) is older than 12"

shopt -s nullglob
kernels=()
bridges=()
for f in "$src"/*.cu; do
  if [[ $f == *_jni.cu ]]; then bridges+=("$f"); else kernels+=("$f"); fi
done
if (( ${#bridges[@]} > 0 )); then
  if [[ -z $java_home || ! -f $java_home/include/jni.h ]]; then
    javac=$(command -v javac || true)
    [[ -n $javac ]] && java_home=$(dirname "$(dirname "$(readlink -f "$javac")")")
  fi
  [[ -n $java_home && -f $java_home/include/jni.h ]] || skip "the JDK's include/jni.h was not found (set JAVA_HOME)"
fi

mkdir -p "$out" "$(dirname "$stamp")"
archs=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86
       -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code='[sm_90,compute_90]')
outputs=()
for f in "${kernels[@]}"; do outputs+=("$out/$(basename "${f%.cu}").fatbin"); done
(( ${#bridges[@]} > 0 )) && outputs+=("$out/libflixnative.so")
inputs=$(cat "$include"/kernel_contract.h "$src"/*.cu "$src"/*.h "$0" | md5sum | cut -d' ' -f1)
up_to_date=true
[[ -f $stamp && $(cat "$stamp") == "$inputs" ]] || up_to_date=false
for o in "${outputs[@]}"; do [[ -f $o ]] || up_to_date=false; done
if $up_to_date; then
  echo "[flix] GPU kernels of $src up to date"
  exit 0
fi
start=$SECONDS
for f in "${kernels[@]}"; do
  "$nvcc" -fatbin -O3 --threads 2 "${archs[@]}" -I"$include" -o "$out/$(basename "${f%.cu}").fatbin" "$f"
done
if (( ${#bridges[@]} > 0 )); then
  "$nvcc" -O3 --threads 2 -shared -Xcompiler -fPIC --cudart static "${archs[@]}" -I"$include" \
    -I"$java_home/include" -I"$java_home/include/linux" -o "$out/libflixnative.so" "${bridges[@]}" -ldl
fi
echo "$inputs" > "$stamp"
echo "[flix] GPU kernels of $src built with $("$nvcc" --version | tail -1) in $((SECONDS - start)) s"
