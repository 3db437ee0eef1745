#!/usr/bin/env bash
# ctest foxglove_live_client: a live session served by `platoon bridge`, read by an independent Foxglove
# WebSocket client (npm, test-only, pinned in package-lock.json: @foxglove/ws-protocol over ws, with
# @foxglove/schemas and ajv to validate every message). check.mjs says what it checks; before it, a bind
# beyond loopback without --token must be refused with exit 2.
#   check.sh PLATOON_BINARY SOURCE_DIR WORK_DIR
# Exit 0: pass. Exit 77 (ctest: skipped): node/npm missing or the npm registry unreachable.
set -euo pipefail
platoon=$1 src=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)

# node/npm and the locked packages, installed into the build tree by the shared installer.
"$here/../mcap_reader/install.sh" "$src" "$work"
# Bad input: beyond loopback without --token is a usage error (exit 2) that names the option.
mkdir -p "$work/run"
printf '[session]\nname = "x"\n' > "$work/run/bind.toml"
set +e
"$platoon" bridge "$work/run/bind.toml" --address 0.0.0.0 2> "$work/run/bind.err"
rc=$?
set -e
if [ "$rc" -ne 2 ] || ! grep -q -- "expected --token" "$work/run/bind.err"; then
  echo "FAIL: bridge --address 0.0.0.0 without --token: exit $rc, stderr: $(cat "$work/run/bind.err")"
  exit 1
fi
node "$work/check.mjs" "$platoon" "$work/run"
