#!/usr/bin/env bash
# Builds the simulator (scripts/cuda-sim build) and driver_test.cpp against it, then runs the test with
# work held back (JTSIM_DEFER_MS), so that nothing passes by running early.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib="$("$here/../../../../scripts/cuda-sim" build)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
g++ -std=c++17 -O1 -Wall -o "$out/driver_test" "$here/driver_test.cpp" -L"$lib" -l:libcuda.so.1 -l:libnvrtc.so.0 \
    -Wl,-rpath,"$lib"
JTSIM_DEFER_MS="${JTSIM_DEFER_MS:-20}" "$out/driver_test"
