#!/usr/bin/env bash
# Builds the stub driver (test/jtsim_stub.cpp as libcuda.so.1), the simulated cuBLASLt and cuBLAS as
# the project's build does, and the test, into a temporary folder; then runs the test.
# SANITIZE=1 builds everything with AddressSanitizer and UBSan instead.
set -euo pipefail
test_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sim_dir="$(dirname "$test_dir")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cxx="${CXX:-g++}"
flags=(-std=c++17 -O2 -Wall -Wextra -pthread)
if [[ "${SANITIZE:-0}" == 1 ]]; then flags+=(-g -fsanitize=address,undefined -fno-sanitize-recover=all); fi

"$cxx" "${flags[@]}" -fPIC -shared -Wl,-soname,libcuda.so.1 -o "$out/libcuda.so.1" "$test_dir/jtsim_stub.cpp"
for lib in cublasLt:cublaslt cublas:cublas; do
  name="${lib%%:*}" src="${lib##*:}"
  "$cxx" "${flags[@]}" -fPIC -shared -o "$out/lib$name.so.13" "$sim_dir/$src.cpp" -L"$out" -l:libcuda.so.1 \
    -Wl,-rpath,'$ORIGIN' -Wl,-soname,"lib$name.so.13"
done
"$cxx" "${flags[@]}" -o "$out/cublaslt_test" "$test_dir/cublaslt_test.cpp" -L"$out" \
  -l:libcublasLt.so.13 -l:libcublas.so.13 -l:libcuda.so.1 -Wl,-rpath,"$out"
"$out/cublaslt_test"
