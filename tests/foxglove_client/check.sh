#!/usr/bin/env bash
# ctest foxglove_live_client: a live session served by `platoon bridge`, read by an independent Foxglove
# WebSocket client (npm, test-only, pinned in package-lock.json: @foxglove/ws-protocol over ws, with
# @foxglove/schemas and ajv to validate every message). check.mjs says what it checks.
#   check.sh PLATOON_BINARY SOURCE_DIR WORK_DIR
# Exit 0: pass. Exit 77 (ctest: skipped): node/npm missing or the npm registry unreachable.
set -euo pipefail
platoon=$1 src=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)

# node/npm and the locked packages, installed into the build tree by the shared installer.
"$here/../mcap_reader/install.sh" "$src" "$work"
node "$work/check.mjs" "$platoon" "$work/run"
