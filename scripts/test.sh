#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test with ctest (both cores); then runs every fuzz
# target for a bounded time, after the libraries' unit tests on the same ASan + UBSan build (scripts/fuzz.sh,
# its own clang build in build-fuzz/; docs/TESTING.md). Prints the time of each stage at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=()
stage() {  # stage NAME COMMAND...: runs the command and notes how long it took
  local name=$1 start=$SECONDS
  shift
  "$@"
  stages+=("$(printf '%-8s %5d s' "$name" $((SECONDS - start)))")
}
stage install bash scripts/install-deps.sh
stage build bash scripts/build.sh
stage ctest bash -c 'cd build && ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" --timeout 300'
stage fuzz bash scripts/fuzz.sh "${PLATOON_FUZZ_SECONDS:-20}" --unit-tests
echo "test.sh: every stage passed; time per stage:"
printf '  %s\n' "${stages[@]}"
echo "  total    $(printf '%5d' "$SECONDS") s"
