#!/bin/bash
# Builds EGSM (github.com/RapidsAtHKUST/EGSM, MIT licence: LICENSE here) from EGSM.tar.gz beside
# this script, on a machine with nvcc, CMake and g++ (ninja if present) and no network. Carried by
# `cargo xtask gpu-check --bundle` as egsm/build.sh; the bundle's run.sh calls it, its output going
# to build.log. The binary is build/EGSM here.
#
# Its source targets CUDA 11.7 on Volta; for a current nvcc (13 drops Volta) and the GPU at hand,
# these changes are applied to the extracted copy at build time, never to anything committed:
#  1. its CMake targets name CUDA architecture 70: replaced by this GPU's (nvidia-smi's compute
#     capability, e.g. 90 on an H100), or $EGSM_ARCH;
#  2. its own copy of CUB (1.17, 2022; its texture-reference iterator needs what CUDA 12 removed)
#     is removed, so that CUB comes from the toolkit's CCCL, with the libcu++ it was made with;
#  3. g++ (which its CMakeLists names, also given here so that CMake's cache agrees) compiles
#     main.cpp, which includes cuda_runtime.h: the toolkit's include directories are given to it
#     (its CMakeLists names /usr/local/cuda-11.7/include);
#  4. its timers print whole milliseconds (a cast to unsigned long); the cast is dropped, so that
#     queries under a millisecond get a figure.
# A build of the same tarball is reused (build/EGSM and its stamp); EGSM_REBUILD=1 forces one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/src
out=$here/build
die() { echo "egsm/build.sh: $*" >&2; exit 1; }

nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || nvcc=/usr/local/cuda/bin/nvcc
[ -x "$nvcc" ] || die "nvcc not found (not on PATH, nor /usr/local/cuda/bin/nvcc)"
command -v cmake >/dev/null || die "cmake not found"
cuda=$(dirname "$(dirname "$(readlink -f "$nvcc")")")

arch=${EGSM_ARCH:-}
if [ -z "$arch" ] && command -v nvidia-smi >/dev/null; then
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .' || true)
fi
[[ "$arch" =~ ^[0-9]+$ ]] || arch=90

stamp="$(sha256sum "$here/EGSM.tar.gz" | cut -d' ' -f1) sm_$arch $("$nvcc" --version | tail -n1)"
if [ -z "${EGSM_REBUILD:-}" ] && [ -x "$out/EGSM" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "EGSM already built for sm_$arch: $out/EGSM"
  exit 0
fi

rm -rf "$src" "$out"
mkdir -p "$src"
tar -xzf "$here/EGSM.tar.gz" -C "$src" --strip-components=1

# 1. The architecture.
grep -q 'CUDA_ARCHITECTURES "70"' "$src/CMakeLists.txt" ||
  die "CMakeLists.txt names no CUDA_ARCHITECTURES \"70\": not the source this script was written for"
sed -i "s/CUDA_ARCHITECTURES \"70\"/CUDA_ARCHITECTURES \"$arch\"/g" "$src/CMakeLists.txt"
# 2. The toolkit's CUB.
rm -rf "$src/cub"
# 4. Fractional milliseconds.
grep -q 'static_cast<unsigned long>(kernel_time)' "$src/utils/cuda_helpers.h" ||
  die "utils/cuda_helpers.h has not the timers this script was written for"
sed -i -E 's/static_cast<unsigned long>\(((diff\.count|total_host)\(?\)? \* 1000|kernel_time|total_kernel)\)/(\1)/g' \
  "$src/utils/cuda_helpers.h"

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
# 3. The toolkit's headers for g++ (CUDA 13 keeps CCCL under include/cccl).
cxxflags="-I$cuda/include"
[ -d "$cuda/include/cccl" ] && cxxflags="$cxxflags -I$cuda/include/cccl"
[ -d "$cuda/targets/x86_64-linux/include" ] && cxxflags="$cxxflags -I$cuda/targets/x86_64-linux/include"

echo "EGSM: nvcc $nvcc ($("$nvcc" --version | tail -n1)), sm_$arch, $(cmake --version | head -n1)"
cmake -S "$src" -B "$out" "${gen[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DCMAKE_CXX_FLAGS="$cxxflags"
cmake --build "$out" --target EGSM -j "$(nproc)"
[ -x "$out/EGSM" ] || die "the build made no $out/EGSM"
echo "$stamp" > "$out/stamp"
echo "EGSM built: $out/EGSM"
