#!/usr/bin/env bash
# daqiri demo on the emulated ConnectX: a sender and a receiver on one emulated port in
# ONE gst-launch (emulated ports live inside a process), the port's cable looping its TX
# back to its RX. No root, no network namespace, no NIC.
#
#   sender:   daqiritestsrc (UDP test packets, 2 flows, 64..1024 bytes, paced)
#               ! daqirisink device=emu:demo        (frames written into the TX slots)
#   receiver: daqirisrc device=emu:demo flows="...mark=1; ...mark=2" ! fakesink
#
# Prints the receiver's packets/s, bytes/s and drops every second (daqirisrc's
# stats-interval messages), then the totals. Exits non-zero unless every packet arrived
# and none was dropped.
# usage: pipelines/demo.sh [SECONDS (default 5)] [PACKET_RATE pps (default 500000)]
# BUILD_DIR (default build) picks the meson build directory.
# (pipelines/demo-veth.sh: the same over a veth pair on the afpacket engine, as root.)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-5}
rate=${2:-500000}
packets=$((seconds * rate))
export GST_PLUGIN_PATH_1_0="$PWD/${BUILD_DIR:-build}/gst${GST_PLUGIN_PATH_1_0:+:$GST_PLUGIN_PATH_1_0}"

log=$(mktemp)
cleanup() {
  [ -n "${pid:-}" ] && kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -f "$log"
}
trap cleanup EXIT

echo "demo: emulated ConnectX emu:demo (100 Gb/s, TX looped to RX), ${seconds}s at" \
  "${rate} packets/s, 2 flows, 64..1024 bytes"
# -e: on SIGINT the pipeline gets EOS and ends cleanly
gst-launch-1.0 -m -e \
  daqirisrc name=rx device=emu:demo stats-interval=1000000000 \
    flows="proto=udp dst-port=6000 mark=1; proto=udp dst-port=6001 mark=2" ! fakesink \
  daqiritestsrc num-packets="$packets" rate="$rate" n-flows=2 \
    packet-size-min=64 packet-size-max=1024 ! daqirisink name=tx device=emu:demo \
  >"$log" 2>&1 &
pid=$!

field() { sed -n "s/.*[ ,]$1=(guint64)\([0-9]*\).*/\1/p" <<<"$2"; }
# one line a second from the receiver's stats messages
shown=0
got=0
drops=0
print_new() {
  local lines
  lines=$(grep -o 'daqiri-src-stats.*' "$log" | tail -n +$((shown + 1)) || true)
  [ -z "$lines" ] && return 0
  while read -r line; do
    pps=$(sed -n 's/.*packets-per-second=(double)\([0-9.e+-]*\).*/\1/p' <<<"$line")
    bps=$(sed -n 's/.*bytes-per-second=(double)\([0-9.e+-]*\).*/\1/p' <<<"$line")
    got=$(field packets "$line")
    drops=$(field drops "$line")
    shown=$((shown + 1))
    awk -v p="$pps" -v b="$bps" -v t="$got" -v d="$drops" 'BEGIN {
      printf "receiver: %10.0f packets/s %8.1f Mbit/s   total %10d packets, %d dropped\n",
        p, b * 8 / 1e6, t, d }'
  done <<<"$lines"
}

# until every packet arrived, gst-launch ended (an error), or far past the planned time
deadline=$((SECONDS + seconds * 4 + 20))
while kill -0 "$pid" 2>/dev/null && [ "${got:-0}" -lt "$packets" ] && [ $SECONDS -lt $deadline ]; do
  sleep 0.2
  print_new
done
if grep -q 'ERROR' "$log"; then
  grep -A2 'ERROR' "$log" | head -20 >&2
fi
kill -INT "$pid" 2>/dev/null || true
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=
print_new
echo "demo: sent $packets packets, received ${got:-0}, dropped ${drops:-0}"
[ "${got:-0}" -eq "$packets" ] && [ "${drops:-0}" -eq 0 ]
