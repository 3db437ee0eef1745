#!/usr/bin/env bash
# Installs the locked npm packages of SOURCE_DIR (test-only: @mcap/core here; tests/foxglove_client's
# too) into WORK, once per lock file, and copies SOURCE_DIR's scripts (*.mjs) there; tests that read with
# an independent npm reader call it first.
#   install.sh SOURCE_DIR WORK_DIR
# Exit 0: WORK_DIR/node_modules holds the locked packages and WORK_DIR/*.mjs are current.
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
cp "$src/package.json" "$src/package-lock.json" "$src"/*.mjs "$work/"
if ! cmp -s "$work/package-lock.json" "$work/node_modules/.platoon-installed-lock" 2>/dev/null; then
  if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "SKIPPED: 'npm ci' failed in $work (no access to the npm registry?)"
    exit 77
  fi
  cp "$work/package-lock.json" "$work/node_modules/.platoon-installed-lock"
fi
