#!/usr/bin/env bash
# Builds the simulated cuDNN against the stand-in driver (jtsim_stub_cudnn.cpp) in a temporary folder and
# runs cudnn_test. SANITIZE=1 builds all three with AddressSanitizer and UBSan.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sim=$(dirname "$here")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(-std=c++17 -O2 -Wall -Wextra -Werror)
if [[ "${SANITIZE:-0}" == 1 ]]; then flags+=(-g -fsanitize=address,undefined -fno-sanitize-recover=undefined); fi

g++ "${flags[@]}" -fPIC -shared -Wl,-soname,libcuda.so.1 -o "$out/libcuda.so.1" "$here/jtsim_stub_cudnn.cpp" -pthread
# As the project's build builds it, linked against the driver beside it.
g++ "${flags[@]}" -fPIC -shared -Wl,-soname,libcudnn.so.9 -o "$out/libcudnn.so.9" "$sim/cudnn.cpp" \
    -L"$out" -l:libcuda.so.1 -Wl,-rpath,'$ORIGIN' -pthread
g++ "${flags[@]}" -o "$out/cudnn_test" "$here/cudnn_test.cpp" -L"$out" -l:libcudnn.so.9 -l:libcuda.so.1 -Wl,-rpath,"$out" -pthread
"$out/cudnn_test"
