#!/usr/bin/env bash
# Configures and builds platoon in build/ (RelWithDebInfo, asserts on, unity batches). Extra args go to cmake.
# A new build/ uses Ninja (scripts/install-deps.sh installs it); an existing one keeps its generator.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
generator=()
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build -j"$jobs"
