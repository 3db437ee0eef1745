#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) in build-fuzz/ with clang and runs each one from its seed corpus
# (tests/fuzz/corpus/<target>, copied to a temporary folder: the repository's corpus is never modified).
# Fails when a target crashes, hangs, leaks or trips ASan/UBSan; prints the executions of every target.
#
#   scripts/fuzz.sh [SECONDS]           run each target for SECONDS (default 20)
#   scripts/fuzz.sh --runs N            run each target for N executions (e.g. 1000000)
#   options: --only NAME (repeatable)   run only these targets
#            --jobs J                   targets run side by side (default: the number of cores)
#            --build-jobs J             compile jobs (default: the number of cores)
#            --no-build                 use build-fuzz/ as it is
#            --unit-tests               first run sanitized_unit_tests: the libraries' unit tests (codec,
#                                       configs, MCAP, session logs, roads, parameters, world core) on this
#                                       tree's ASan + UBSan libraries
#   env:     PLATOON_FUZZ_NICE=19       run the build and the targets under nice
#
# A crash leaves its input in build-fuzz/fuzz-artifacts/<target>/ and the log next to it; reproduce it
# with build-fuzz/fuzz/<target> <that file>. docs/TESTING.md, "Fuzzing and sanitizers".
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

seconds=20
runs=""
only=()
cores=$(nproc 2>/dev/null || echo 2)
jobs=$cores
build_jobs=$cores
build=1
unit=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="${2:?--runs needs a number}"; shift 2 ;;
    --only) only+=("${2:?--only needs a target name}"); shift 2 ;;
    --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    --build-jobs) build_jobs="${2:?--build-jobs needs a number}"; shift 2 ;;
    --no-build) build=0; shift ;;
    --unit-tests) unit=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    [0-9]*) seconds="$1"; shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$seconds$runs$jobs$build_jobs" in *[!0-9]*) echo "fuzz.sh: SECONDS, --runs, --jobs and --build-jobs take whole numbers" >&2; exit 2 ;; esac

# The slowest first, so that side-by-side runs end together.
TARGETS=(fuzz_replay_log fuzz_opendrive fuzz_control fuzz_session fuzz_road fuzz_mcap fuzz_param fuzz_pcd fuzz_script fuzz_decode fuzz_dbc)
if [ ${#only[@]} -gt 0 ]; then
  for t in "${only[@]}"; do
    [[ " ${TARGETS[*]} " == *" $t "* ]] || { echo "fuzz.sh: no target '$t' (targets: ${TARGETS[*]})" >&2; exit 2; }
  done
  TARGETS=("${only[@]}")
fi

NICE=()
[ -n "${PLATOON_FUZZ_NICE:-}" ] && NICE=(nice -n "$PLATOON_FUZZ_NICE")

if [ "$build" = 1 ]; then
  command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh installs clang)" >&2; exit 1; }
  start=$(date +%s)
  # Line tables are all ASan and UBSan need to name file:line; full debug info and -O2 cost the build half
  # again its time on a 2-core machine. A new build-fuzz/ uses Ninja, an existing one keeps its generator.
  generator=()
  if [ ! -f build-fuzz/CMakeCache.txt ] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  "${NICE[@]}" cmake -S . -B build-fuzz "${generator[@]}" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DPLATOON_FUZZ=ON -DPLATOON_BUILD_TESTS=OFF -DPLATOON_BUILD_BENCH=OFF \
    -DPLATOON_BUILD_PYTHON=OFF >/dev/null
  extra=()
  [ "$unit" = 1 ] && extra=(sanitized_unit_tests)
  "${NICE[@]}" cmake --build build-fuzz -j"$build_jobs" --target "${TARGETS[@]}" "${extra[@]}"
  echo "fuzz.sh: build took $(( $(date +%s) - start )) s"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/platoon-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts=build-fuzz/fuzz-artifacts
mkdir -p "$artifacts"

# ASan: report leaks; UBSan is built with -fno-sanitize-recover, so any finding aborts.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

run_one() {
  local t=$1 bin=build-fuzz/fuzz/$1
  local corpus=$work/$t/corpus log=$work/$t/log
  mkdir -p "$corpus" "$artifacts/$t"
  rm -f "$artifacts/$t/last.log"
  cp tests/fuzz/corpus/"$t"/* "$corpus"/
  local limit=(-max_total_time="$seconds")
  [ -n "$runs" ] && limit=(-runs="$runs")
  local start rc=0
  start=$(date +%s%N)
  # The temporary corpus first: new inputs land there. A unit slower than 25 s is a hang; one allocation
  # above 512 MB (a few bytes claiming millions of elements) is a failure too.
  (cd "$work/$t" && TMPDIR="$work/$t" "${NICE[@]}" "$root/$bin" "${limit[@]}" -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=512 \
     -print_final_stats=1 -artifact_prefix="$root/$artifacts/$t/" corpus) >"$log" 2>&1 || rc=$?
  local took execs
  took=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  printf '%s %s %s %s %s\n' "$t" "$rc" "${execs:-0}" "$took" "$(ls "$corpus" | wc -l)" >"$work/$t/result"
  if [ "$rc" != 0 ]; then
    cp "$log" "$artifacts/$t/last.log"
  fi
}

if [ "$unit" = 1 ]; then
  start=$(date +%s)
  if ! (cd build-fuzz && "${NICE[@]}" fuzz/sanitized_unit_tests --no-intro=true --duration=false >"$work/unit.log" 2>&1); then
    tail -60 "$work/unit.log"
    echo "fuzz.sh: sanitized_unit_tests FAILED (ASan/UBSan finding or a failed assertion; log above)" >&2
    exit 1
  fi
  echo "fuzz.sh: sanitized_unit_tests passed in $(( $(date +%s) - start )) s: $(grep -a 'test cases:' "$work/unit.log" | tail -1)"
fi

echo "fuzz.sh: ${#TARGETS[@]} targets, $([ -n "$runs" ] && echo "$runs runs" || echo "$seconds s") each, $jobs at a time"
running=0
for t in "${TARGETS[@]}"; do
  [ -x "build-fuzz/fuzz/$t" ] || { echo "fuzz.sh: build-fuzz/fuzz/$t is missing (run without --no-build)" >&2; exit 1; }
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait

failed=0
printf '%-18s %12s %9s %10s %8s  %s\n' target executions seconds execs/s corpus result
for t in "${TARGETS[@]}"; do
  if [ ! -f "$work/$t/result" ]; then
    printf '%-18s %12s\n' "$t" "no result"; failed=1; continue
  fi
  read -r name rc execs took corpus <"$work/$t/result"
  rate=$(awk -v e="$execs" -v s="$took" 'BEGIN { printf "%d", e / (s + 0.001) }')
  verdict=ok
  if [ "$rc" != 0 ]; then verdict="FAILED (exit $rc; log and input in $artifacts/$t/)"; failed=1; fi
  printf '%-18s %12s %9.1f %10s %8s  %s\n' "$name" "$execs" "$took" "$rate" "$corpus" "$verdict"
done
if [ "$failed" != 0 ]; then
  for t in "${TARGETS[@]}"; do
    [ -f "$artifacts/$t/last.log" ] || continue
    echo "---- $t: the end of its log ($artifacts/$t/last.log) ----"
    grep -v '^#' "$artifacts/$t/last.log" | tail -40
  done
  exit 1
fi
