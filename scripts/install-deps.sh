#!/usr/bin/env bash
# Installs every Debian 12 package platoon needs to build, test and run.
# Idempotent: packages already present are skipped by apt-get, and apt's
# package lists are refreshed only when something is missing.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake pkg-config git
  # ninja: the build tool scripts/build.sh uses (schedules the two cores better than make)
  ninja-build
  # design dependencies
  libzmq3-dev cppzmq-dev capnproto libcapnp-dev libbullet-dev
  libopenscenegraph-dev libimgui-dev libsdl2-dev libspdlog-dev doctest-dev
  # chosen by the project (see README "Dependencies")
  libembree-dev libeigen3-dev libtomlplusplus-dev libcli11-dev xvfb
  # network-namespace tests (ip netns, veth)
  iproute2
  # tests only: ctest data_write_csv loads a driver's data-write CSV with pandas, as its users will
  python3-pandas
  # the Python package platoon (python/): pybind11 bindings over the C++ session client and codec
  pybind11-dev python3-pybind11
  # the Python package's headers for the interpreter it is built for (Debian's python3)
  python3-dev
  # the Python package returns the world and logs as numpy arrays
  python3-numpy
  # platoon validate draws its detection-rate and position-error plots with matplotlib
  # (scripts/validate_plot.py); without it the command still writes its CSVs
  python3-matplotlib
  # scripts/fuzz.sh (tests/fuzz): libFuzzer needs clang; its runtime (libclang_rt.fuzzer*.a, with the ASan
  # and UBSan runtimes clang links) is in libclang-rt-14-dev, only a Recommends of libclang-common-14-dev
  clang libclang-rt-14-dev
  # lld: the linker for every build (CMakeLists.txt); it links the test and tool binaries several times faster
  # than ld.bfd, which matters on a 2-core CI machine
  lld
  # tests only: netconvert reads the exported .xodr (ctest "opendrive: netconvert ..."; Debian's sumo without
  # its Recommends has no SUMO_HOME data, so the test runs netconvert with --xml-validation never)
  sumo
  # FMI 2.0 co-simulation vehicle models: an FMU is a zip archive (modelDescription.xml, binaries/);
  # libzip unpacks it (node/vehicle fmu_vehicle.cpp)
  libzip-dev
  # tests only: an independent DBC codec; ctest "can: ... canmatrix" checks platoon's DBC reader and signal
  # codec against it in both directions through candump logs
  python3-canmatrix
  # tests only: ctest "viewer: calibration board ... OpenCV ..." finds the calibration board's corners in a
  # rendered camera frame with an independent detector (findChessboardCorners + cornerSubPix)
  python3-opencv
  # tests only: ctest "cloud_export_pcl" has PCL's pcl_pcd2ply read the PCD files `platoon export --pcd` writes
  # (an independent PCD reader) and compares its PLY with the recorded points
  pcl-tools
  # msgpack-cxx (header-only; depends on libboost-dev): the eye tracker's gaze in, Pupil Core's network API packs
  # each gaze sample with msgpack (node/input pupil_gaze.cpp, docs/INPUTS.md "Eye tracker")
  libmsgpack-cxx-dev
  # session-log chunk compression (shared/src/log/mcap.cpp): zstd and lz4 frames, the two compressions MCAP names;
  # a recorder's compression = "zstd" (default) or "lz4", and every reader decompresses both (docs/RECORDING.md)
  libzstd-dev liblz4-dev
  # platoon bridge (tools/src/bridge_ws.cpp): the live Foxglove connection's WebSocket server, websocketpp on
  # standalone asio (both header-only; docs/FOXGLOVE.md)
  libwebsocketpp-dev libasio-dev
)

missing=()
# Tests only: Node.js and npm run @mcap/core, an independent MCAP reader (tests/mcap_reader). A machine that
# already has them (e.g. Node.js from another source, whose package bundles npm) keeps its own; installing
# Debian's npm over it would conflict.
command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi

echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"
