#!/usr/bin/env bash
# Builds (if needed) and runs the receive benchmark: daqirisrc vs udpsrc vs a bare
# TPACKET_V3 loop over a veth pair in private network namespaces. Needs root.
# Arguments go to bench-rx (see `scripts/bench.sh --help`), e.g.
#   scripts/bench.sh                       # 2 000 000 packets/run, 64 B and 1024 B, 3 runs each
#   scripts/bench.sh --rate 200000         # paced
#   scripts/bench.sh --soak 600            # daqirisrc RSS over 10 minutes
# BUILD_DIR (default build) picks the meson build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

if [ "$(id -u)" -ne 0 ]; then
  echo "bench.sh: needs root (network namespaces, veth pairs, raw packet sockets)" >&2
  exit 1
fi
bash scripts/deps.sh
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  meson setup "$BUILD_DIR" -Dwerror=true -Dbenchmarks=enabled
elif meson introspect "$BUILD_DIR" --buildoptions 2>/dev/null |
    python3 -c 'import json,sys; sys.exit(0 if any(o["name"]=="benchmarks" and o["value"]=="disabled" for o in json.load(sys.stdin)) else 1)'; then
  meson configure "$BUILD_DIR" -Dbenchmarks=enabled
fi
ninja -C "$BUILD_DIR" gst/libgstdaqiri.so tests/bench/bench-rx
exec "$BUILD_DIR/tests/bench/bench-rx" "$@"
