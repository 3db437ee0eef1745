#!/usr/bin/env bash
# The four-lidar farm as separate hosts: one network namespace each for the server, the four lidar
# hosts, the fusion node and the ego driver, joined by veth pairs through a bridge (in a namespace of
# its own, so the machine's own network is never touched). Runs the session, prints the fusion node's
# figures, and tears everything down, also on Ctrl-C or error.
#
#   sudo scripts/netns-lab.sh [--duration S] [--session FILE] [--bin-dir DIR] [--logs DIR] [--subnet 10.77.N]
#
# Exit status: 0 when the fused stream reached all four sources; 1 when it did not; 2 on bad usage;
# 77 when namespaces cannot be created here (not root, no `ip`, no veth/bridge support): skipped.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
duration=20
session="$root/configs/lidar_farm.toml"
bin_dir="$root/build/bin"
logs=""
subnet="10.77.$(( $$ % 200 + 20 ))"
tag="pl$$"

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --session) session="$2"; shift 2 ;;
    --bin-dir) bin_dir="$2"; shift 2 ;;
    --logs) logs="$2"; shift 2 ;;
    --subnet) subnet="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "netns-lab: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$duration" =~ ^[0-9]+$ ]] || { echo "netns-lab: --duration expects whole seconds, got '$duration'" >&2; exit 2; }
[ -f "$session" ] || { echo "netns-lab: session file '$session' not found" >&2; exit 2; }
for exe in platoon platoon-server platoon-node; do
  [ -x "$bin_dir/$exe" ] || { echo "netns-lab: $bin_dir/$exe not found; build first (scripts/build.sh) or pass --bin-dir" >&2; exit 2; }
done

skip() { echo "netns-lab: SKIPPED: $*" >&2; exit 77; }
command -v ip >/dev/null 2>&1 || skip "the 'ip' command (iproute2) is not installed"
[ "$(id -u)" -eq 0 ] || skip "creating network namespaces needs root (run with sudo)"

# Hosts: namespace suffix, address, and the session's node names that run there.
hosts=(server ego lidar_front lidar_rear lidar_left lidar_right fusion)
declare -A addr=([server]=1 [ego]=30 [lidar_front]=11 [lidar_rear]=12 [lidar_left]=13 [lidar_right]=14 [fusion]=20)
br_ns="${tag}-br"
created=()
pids=()

cleanup() {
  set +e
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for ns in "${created[@]}"; do ip netns del "$ns" 2>/dev/null; done
  [ -n "${work:-}" ] && [ -z "$logs" ] && rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$br_ns" 2>/dev/null || skip "cannot create a network namespace (no CAP_SYS_ADMIN or no netns support)"
created+=("$br_ns")
ip -n "$br_ns" link add br0 type bridge 2>/dev/null || skip "cannot create a bridge (no bridge support in this kernel)"
ip -n "$br_ns" link set br0 up
for h in "${hosts[@]}"; do
  ns="${tag}-${h}"
  ip netns add "$ns"
  created+=("$ns")
  # A veth pair per host: eth0 inside the host, the other end on the bridge.
  ip link add "v${tag}${addr[$h]}" type veth peer name eth0 netns "$ns" 2>/dev/null \
    || skip "cannot create veth pairs (no veth support)"
  ip link set "v${tag}${addr[$h]}" netns "$br_ns"
  ip -n "$br_ns" link set "v${tag}${addr[$h]}" master br0 up
  ip -n "$ns" addr add "${subnet}.${addr[$h]}/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done
echo "netns-lab: ${#hosts[@]} hosts on ${subnet}.0/24 through bridge br0 in namespace $br_ns"

# The session file, pointed at the server's namespace address and listening on every interface.
work="${logs:-$(mktemp -d)}"
mkdir -p "$work"
lab="$work/session.toml"
sed -e "s/^server_host *=.*/server_host = \"${subnet}.${addr[server]}\"/" \
    -e "s/^bind_address *=.*/bind_address = \"*\"/" "$session" > "$lab"
grep -q "^server_host" "$lab" || sed -i "s/^\[session\]/[session]\nserver_host = \"${subnet}.${addr[server]}\"/" "$lab"
# Beyond loopback the server needs CURVE keys: one key folder, one client key the lab's hosts share.
"$bin_dir/platoon" keys new "$work/keys" --clients lab > "$work/keys.log" 2>&1 \
  || { cat "$work/keys.log" >&2; echo "netns-lab: platoon keys new failed" >&2; exit 1; }
cat >> "$lab" <<EOF

[security]
server_key = "keys/server.key_secret"
server_public_key = "keys/server.key"
clients = "keys/clients"
key = "keys/clients/lab.key_secret"
EOF

run_in() {  # run_in HOST LOGNAME CMD...
  local h="$1" log="$2"; shift 2
  ip netns exec "${tag}-${h}" "$@" > "$work/$log.log" 2>&1 &
  pids+=($!)
}
run_in server server "$bin_dir/platoon-server" --config "$lab" --exit-after $((duration + 8))
for h in ego lidar_front lidar_rear lidar_left lidar_right fusion; do
  run_in "$h" "$h" "$bin_dir/platoon-node" --config "$lab" --name "$h" --exit-after $((duration + 3))
done
echo "netns-lab: running the session for ${duration} s (logs in $work)"
for ((i = 0; i < duration + 6; i++)); do
  sleep 1
  if ! kill -0 "${pids[0]}" 2>/dev/null; then echo "netns-lab: the server exited early" >&2; break; fi
done
for p in "${pids[@]:1}"; do wait "$p" 2>/dev/null || true; done

echo "netns-lab: where the fusion node found the lidar streams:"
grep -h "publishes lidar stream" "$work/server.log" | sed 's/^.*\] /  /' || true
summary="$(grep -h '^SUMMARY' "$work/fusion.log" || true)"
frames="$(sed -n 's/.*"fusion":{"frames":\([0-9]*\).*/\1/p' <<<"$summary")"
echo "netns-lab: fusion: ${frames:-0} fused frames; $(grep -o '"sources":\[{[^]]*\]' <<<"$summary" || echo 'no summary')"
if grep -q "fused frames now from 4/4 sources" "$work/fusion.log"; then
  echo "netns-lab: OK: fused frames from 4/4 lidar hosts across namespaces"
  exit 0
fi
echo "netns-lab: FAILED: the fused stream never had all four sources; fusion log tail:" >&2
tail -n 20 "$work/fusion.log" >&2
exit 1
