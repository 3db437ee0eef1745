#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test with ctest (both cores); then runs every fuzz
# target for a bounded time, after the libraries' unit tests on the same ASan + UBSan build (scripts/fuzz.sh,
# its own clang build in build-fuzz/; docs/TESTING.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" --timeout 300)
bash scripts/fuzz.sh "${PLATOON_FUZZ_SECONDS:-20}" --unit-tests
