#!/usr/bin/env bash
# Runs the whole ctest suite again and again while two busy loops load both cores, and stops at the first
# failure: the "no flaky test" check of docs/TESTING.md. Each run's log is kept.
#
#   scripts/stress_suite.sh [runs] [build dir] [ctest options...]
#   e.g. scripts/stress_suite.sh 20 build
#        scripts/stress_suite.sh 20 build -LE 'timing|realtime'   # without the wall-clock-bound tests
#
# Prints one line a run (result, seconds, load average) and, on a failure, the failed tests; exits 1 then.
set -uo pipefail
runs=${1:-20}
build=${2:-build}
shift $(( $# > 2 ? 2 : $# ))
cd "$(dirname "$0")/.." || exit 2
[ -f "$build/CTestTestfile.cmake" ] || { echo "stress_suite.sh: no ctest tree in '$build' (build first)" >&2; exit 2; }
logs=$(mktemp -d /tmp/platoon-stress.XXXX)
burn() { while :; do :; done; }
burn & b1=$!
burn & b2=$!
trap 'kill $b1 $b2 2>/dev/null' EXIT
# The machine's own trouble in a run, beside its result: time with every task stalled on I/O (PSI "full"),
# and time the hypervisor gave the CPUs to others (steal), so that a failure on a stalled machine shows.
io_full_us() { sed -n 's/^full .*total=\([0-9]*\)/\1/p' /proc/pressure/io 2>/dev/null || echo 0; }
steal_ticks() { awk '/^cpu /{print $9}' /proc/stat; }
for i in $(seq "$runs"); do
  start=$(date +%s)
  io0=$(io_full_us); st0=$(steal_ticks)
  if (cd "$build" && ctest -j2 --timeout 900 --output-on-failure "$@") >"$logs/run_$i.log" 2>&1; then r=pass; else r=FAIL; fi
  # Every test's whole output (passed ones too), for figures that passed near their bounds.
  cp "$build/Testing/Temporary/LastTest.log" "$logs/run_$i.all.log" 2>/dev/null
  io=$(awk -v a="$io0" -v b="$(io_full_us)" 'BEGIN{printf "%.1f", (b-a)/1e6}')
  steal=$(awk -v a="$st0" -v b="$(steal_ticks)" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f", (b-a)/hz}')
  echo "run $i/$runs: $r in $(($(date +%s) - start)) s, load $(cut -d' ' -f1 /proc/loadavg), io stall ${io} s, steal ${steal} s ($logs/run_$i.log)"
  if [ "$r" = FAIL ]; then
    sed -n '/The following tests FAILED/,/Errors while/p' "$logs/run_$i.log"
    exit 1
  fi
done
echo "stress_suite.sh: $runs runs in a row passed with both cores loaded"
