#!/usr/bin/env bash
# ctest ros2_export_reader: `platoon export LOG --ros2 DIR` of a lidar-farm log and of a drivers log, every
# message read back by independent readers (npm, test-only, pinned in package-lock.json): @mcap/core,
# @foxglove/rosmsg and @foxglove/rosmsg2-serialization (check_ros2.mjs).
#   check.sh SAMPLE_WRITER PLATOON_BINARY SOURCE_DIR WORK_DIR DRIVERS_SESSION
# Exit 0: both bags match what was recorded. Exit 77 (ctest: skipped): node/npm missing or the npm registry
# unreachable.
set -euo pipefail
sample=$1 platoon=$2 src=$3 work=$4 session=$5

rc=0
bash "$src/install.sh" "$src" "$work" || rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -ne 0 ] && exit "$rc"

for mode in lidar drivers; do
  rm -rf "$work/${mode}_bag"
  args=("$mode" "$work/$mode.mcap")
  [ "$mode" = drivers ] && args+=("$session")
  "$sample" "${args[@]}" > "$work/$mode-expect.json"
  "$platoon" export "$work/$mode.mcap" --ros2 "$work/${mode}_bag"
  result=$(node "$work/check_ros2.mjs" "$work/${mode}_bag" "$work/$mode-expect.json")
  echo "$mode: $(echo "$result" | tr '\n' ' ')"
done

# Bad input: a file that is no session log is refused with exit 2, naming it.
printf 'not a log' > "$work/bad.mcap"
set +e
"$platoon" export "$work/bad.mcap" --ros2 "$work/bad_bag" 2> "$work/bad.err"
rc=$?
set -e
if [ "$rc" -ne 2 ] || ! grep -q "bad.mcap" "$work/bad.err"; then
  echo "FAIL: export of a file that is no log: exit $rc, stderr: $(cat "$work/bad.err")" >&2
  exit 1
fi
# Nothing in --from/--to: exit 1 and no bag file left behind.
set +e
"$platoon" export "$work/drivers.mcap" --ros2 "$work/empty_bag" --from 100 --to 200 2> "$work/empty.err"
rc=$?
set -e
if [ "$rc" -ne 1 ] || [ -e "$work/empty_bag/empty_bag_0.mcap" ]; then
  echo "FAIL: export of an empty window: exit $rc, stderr: $(cat "$work/empty.err")" >&2
  exit 1
fi
echo "PASS"
