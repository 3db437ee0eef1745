#!/usr/bin/env bash
# Remakes the README screenshot (docs/images/environment.png): runs configs/environment.toml (a road with
# its generated environment, two lidars and their fusion) and renders platoon-viewer's chase camera on the
# ego car headless (xvfb-run, Mesa llvmpipe), 1280 x 720, after --frames frames.
#   scripts/environment_screenshot.sh [OUT.png] [FRAMES]
# Needs build/bin/platoon and build/bin/platoon-viewer (scripts/build.sh) and xvfb-run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/images/environment.png}
frames=${2:-900}
# The ego's entity id: VehicleId("ego", 0) (shared/src/entity_id.cpp: 32-bit FNV-1a of the name << 16).
follow=$(python3 -c 'h=2166136261
for c in b"ego": h=((h^c)*16777619)&0xffffffff
print(h<<16)')
build/bin/platoon run configs/environment.toml --duration 120 >/tmp/environment_session.log 2>&1 &
session=$!
trap 'kill -INT $session 2>/dev/null; wait $session 2>/dev/null || true' EXIT
xvfb-run -a -s "-screen 0 1280x720x24" build/bin/platoon-viewer -c configs/environment.toml --camera chase \
  --follow "$follow" --width 1280 --height 720 --point-size 2 --screenshot "$out" --frames "$frames"
echo "wrote $out"
