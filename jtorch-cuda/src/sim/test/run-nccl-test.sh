#!/usr/bin/env bash
# Builds the simulator (scripts/cuda-sim build: the real driver and NCCL), then nccl_test against its
# libcuda.so.1 and libnccl.so.2 in a temporary folder, and runs it (forked ranks on one machine). An
# argument runs only the scenarios whose name contains it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
lib=$("$root/scripts/cuda-sim" build)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
g++ -std=c++17 -O2 -Wall -Wextra -Werror -o "$out/nccl_test" "$here/nccl_test.cpp" \
    -L"$lib" -l:libnccl.so.2 -l:libcuda.so.1 -Wl,-rpath,"$lib" -pthread
"$out/nccl_test" "$@"
