#!/usr/bin/env bash
# Runs the whole ctest suite again and again while two busy loops load both cores, and stops at the first
# failure: the "no flaky test" check of docs/TESTING.md. Each run's log is kept.
#
#   scripts/stress_suite.sh [runs] [build dir] [ctest options...]
#   e.g. scripts/stress_suite.sh 20 build
#        scripts/stress_suite.sh 20 build -LE 'timing|realtime'   # without the wall-clock-bound tests
#        BURN_NICE=19 scripts/stress_suite.sh 20 build           # the busy loops yield to everything else
#
# BURN_NICE (default 0) is the busy loops' nice value: 0 competes with the tests and the kernel's own
# worker threads as a parallel build does; 19 keeps the cores busy without competing, which tells a stall
# that the load causes from one that the machine causes by itself.
#
# Prints one line a run (result, seconds, load average, the machine's own stalls) and, on a failure, the
# failed tests and the CPU stalls of that run; exits 1 then.
set -uo pipefail
runs=${1:-20}
build=${2:-build}
shift $(( $# > 2 ? 2 : $# ))
cd "$(dirname "$0")/.." || exit 2
[ -f "$build/CTestTestfile.cmake" ] || { echo "stress_suite.sh: no ctest tree in '$build' (build first)" >&2; exit 2; }
logs=$(mktemp -d /tmp/platoon-stress.XXXX)
burn() { while :; do :; done; }
burn_nice=${BURN_NICE:-0}
[[ $burn_nice =~ ^-?[0-9]+$ ]] || { echo "stress_suite.sh: BURN_NICE must be an integer, got '$burn_nice'" >&2; exit 2; }
burn & b1=$!
burn & b2=$!
renice -n "$burn_nice" -p "$b1" "$b2" >/dev/null || { kill "$b1" "$b2"; echo "stress_suite.sh: cannot renice the busy loops to $burn_nice" >&2; exit 2; }
# One sleeper pinned to each CPU reports wake-ups more than 250 ms late: a CPU that did not run at all
# (the hypervisor's doing) shows there, whatever the tests were doing.
: >"$logs/cpu_stalls.log"
python3 scripts/cpu_stall_probe.py --threshold-ms 250 --out "$logs/cpu_stalls.log" & probe=$!
trap 'kill $b1 $b2 $probe 2>/dev/null' EXIT
# Kernel reports of its own threads left unrun, stamped after uptime $1 (s): "workqueue lockup", "rcu_preempt
# kthread starved", hung tasks ("blocked for more than"). Counted by stamp, not by line count, since the
# kernel's ring buffer drops its oldest lines as the tests' network namespaces log theirs.
uptime_s() { cut -d' ' -f1 /proc/uptime; }
lockups_since() {
  dmesg 2>/dev/null | sed -n -E 's/^\[ *([0-9.]*)\].*(workqueue lockup|kthread starved|blocked for more than).*/\1/p' |
    awk -v t="$1" '$1 > t { n++ } END { print n + 0 }'
}
# The machine's own trouble in a run, beside its result: time with some task stalled on I/O (PSI "some";
# "full", every task stalled, stays 0 while the busy loops run), and time the hypervisor gave the CPUs to
# others (steal), so that a failure on a stalled machine shows.
io_some_us() { sed -n 's/^some .*total=\([0-9]*\)/\1/p' /proc/pressure/io 2>/dev/null || echo 0; }
steal_ticks() { awk '/^cpu /{print $9}' /proc/stat; }
for i in $(seq "$runs"); do
  start=$(date +%s)
  io0=$(io_some_us); st0=$(steal_ticks); lk0=$(uptime_s); sl0=$(wc -l <"$logs/cpu_stalls.log" 2>/dev/null || echo 0)
  if (cd "$build" && ctest -j2 --timeout 900 --output-on-failure "$@") >"$logs/run_$i.log" 2>&1; then r=pass; else r=FAIL; fi
  # Every test's whole output (passed ones too), for figures that passed near their bounds.
  cp "$build/Testing/Temporary/LastTest.log" "$logs/run_$i.all.log" 2>/dev/null
  io=$(awk -v a="$io0" -v b="$(io_some_us)" 'BEGIN{printf "%.1f", (b-a)/1e6}')
  steal=$(awk -v a="$st0" -v b="$(steal_ticks)" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f", (b-a)/hz}')
  tail -n +"$((sl0 + 1))" "$logs/cpu_stalls.log" 2>/dev/null >"$logs/run_$i.cpu_stalls.log"
  stalls=$(wc -l <"$logs/run_$i.cpu_stalls.log")
  stall_max=$(awk '{for (f = 1; f < NF; ++f) if ($f == "woke" && $(f + 1) > m) m = $(f + 1)} END {print m + 0}' "$logs/run_$i.cpu_stalls.log")
  echo "run $i/$runs: $r in $(($(date +%s) - start)) s, load $(cut -d' ' -f1 /proc/loadavg), I/O wait (some task) ${io} s, steal ${steal} s," \
       "cpu stalls ${stalls} (max ${stall_max} ms), kernel lockup reports $(lockups_since "$lk0") ($logs/run_$i.log)"
  if [ "$r" = FAIL ]; then
    sed -n '/The following tests FAILED/,/Errors while/p' "$logs/run_$i.log"
    cat "$logs/run_$i.cpu_stalls.log"
    exit 1
  fi
done
echo "stress_suite.sh: $runs runs in a row passed with both cores loaded (busy loops at nice $burn_nice)"
