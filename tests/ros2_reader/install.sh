#!/usr/bin/env bash
# Installs the locked ROS 2 bag readers (test-only: @mcap/core, @foxglove/rosmsg,
# @foxglove/rosmsg2-serialization) into WORK, once per lock file, and copies check_ros2.mjs there.
#   install.sh SOURCE_DIR WORK_DIR
# Exit 0: WORK_DIR/node_modules holds them and WORK_DIR/check_ros2.mjs is current.
# Exit 77: node/npm missing or the npm registry unreachable (callers report a skip).
set -euo pipefail
src=$1 work=$2

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "SKIPPED: node/npm missing (scripts/install-deps.sh installs nodejs npm)"
  exit 77
fi
mkdir -p "$work"
# Tests run in parallel: one install at a time.
exec 9>"$work/.install.lock"
flock 9
cp "$src/package.json" "$src/package-lock.json" "$src/check_ros2.mjs" "$work/"
if ! cmp -s "$work/package-lock.json" "$work/node_modules/.platoon-installed-lock" 2>/dev/null; then
  if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "SKIPPED: 'npm ci' failed in $work (no access to the npm registry?)"
    exit 77
  fi
  cp "$work/package-lock.json" "$work/node_modules/.platoon-installed-lock"
fi
