#!/usr/bin/env bash
# Builds platoon with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/ (-O1, frame pointers,
# UBSan findings abort) and runs the test suite there with ctest. Tests labelled "timing" (figures
# measured against wall-clock limits) and "realtime" (several processes that must keep up with real time,
# e.g. four HDL-64E hosts and a fusion node) are left out: the sanitizers' 2-5x slowdown would miss them.
#
#   scripts/sanitize.sh [ctest arguments...]    e.g. scripts/sanitize.sh -R 'mcap|codec'
#   env: PLATOON_SANITIZE_JOBS   compile jobs and ctest -j (default: the number of cores)
#        PLATOON_SANITIZE_NICE   run the build and the tests under nice -n <value>
#        PLATOON_SANITIZE_TARGETS  what to build (default: the suite and the executables it starts)
#
# Prints the time of the build and of the tests. docs/TESTING.md, "Fuzzing and sanitizers".
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${PLATOON_SANITIZE_JOBS:-$(nproc 2>/dev/null || echo 2)}
NICE=()
[ -n "${PLATOON_SANITIZE_NICE:-}" ] && NICE=(nice -n "$PLATOON_SANITIZE_NICE")
read -r -a targets <<<"${PLATOON_SANITIZE_TARGETS:-platoon_tests platoon_render_tests mcap_selftest data_write_session platoon platoon-server platoon-node}"

flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
start=$(date +%s)
# Debug: -g and asserts; the optimisation level is the -O1 above. No Python module (an ASan library cannot
# be loaded by a plain python3) and no benchmarks.
"${NICE[@]}" cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DPLATOON_BUILD_PYTHON=OFF -DPLATOON_BUILD_BENCH=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
"${NICE[@]}" cmake --build build-asan -j"$jobs" --target "${targets[@]}"
built=$(date +%s)
echo "sanitize.sh: build took $((built - start)) s"

# Every process the tests start (server, nodes, launcher) inherits these. Leaks are reported at exit;
# a finding makes the process exit non-zero (UBSan aborts), so the test that started it fails.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
rc=0
(cd build-asan && "${NICE[@]}" ctest --output-on-failure -j"$jobs" --timeout 900 -LE "timing|realtime" "$@") || rc=$?
echo "sanitize.sh: build $((built - start)) s, tests $(( $(date +%s) - built )) s, ctest exit $rc"
exit "$rc"
