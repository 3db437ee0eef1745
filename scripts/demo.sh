#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the demo session (configs/demo.toml: a sync
# server, two traffic nodes and an observer) on this machine. Ctrl-C stops it. Extra args go to `platoon run`, e.g. --duration 20.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
exec build/bin/platoon run configs/demo.toml "$@"
