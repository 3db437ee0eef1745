#!/usr/bin/env bash
# Configures and builds platoon in build/ (RelWithDebInfo, asserts on). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build -j"$jobs"
