#!/usr/bin/env bash
# Builds and runs half_conversions_test.cpp (the kernels' host conversions against half.h, exhaustively).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kernels="$here/../../main/resources/org/jtorch/cuda/kernels"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
g++ -std=c++17 -O2 -Wall -Wno-unknown-pragmas -I"$kernels" -o "$out/half_conversions_test" "$here/half_conversions_test.cpp"
"$out/half_conversions_test"
