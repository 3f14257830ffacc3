#!/usr/bin/env bash
# daqiri demo over a real kernel link: a sender and a receiver pipeline over a veth pair
# in a private network namespace (created here, removed on exit), on the afpacket
# engine. Needs root. (pipelines/demo.sh runs the same job on the emulated ConnectX.)
#
#   sender:   daqiritestsrc (UDP test packets, 2 flows) ! daqirisink device=afpacket:dq-tx
#   receiver: daqirisrc device=afpacket:dq-rx flows="...mark=1; ...mark=2" ! fakesink
#
# Prints the receiver's packets/s, bytes/s and drops every second, then the totals.
# usage: pipelines/demo-veth.sh [SECONDS (default 5)] [PACKET_RATE pps (default 200000)]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-5}
rate=${2:-200000}
ns=daqiri-demo-$$
export GST_PLUGIN_PATH_1_0="$PWD/${BUILD_DIR:-build}/gst${GST_PLUGIN_PATH_1_0:+:$GST_PLUGIN_PATH_1_0}"

if [ "$(id -u)" -ne 0 ]; then
  echo "demo: needs root to create a network namespace and a veth pair" >&2
  exit 1
fi
cleanup() {
  [ -n "${rx_pid:-}" ] && kill "$rx_pid" 2>/dev/null && wait "$rx_pid" 2>/dev/null
  ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$ns"
ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$ns" link add dq-tx type veth peer name dq-rx
ip -n "$ns" link set dq-tx up
ip -n "$ns" link set dq-rx up
echo "demo: namespace $ns, veth dq-tx -> dq-rx, ${seconds}s at ${rate} packets/s, 2 flows"

log=$(mktemp)
ip netns exec "$ns" gst-launch-1.0 -m \
  daqirisrc name=rx device=afpacket:dq-rx stats-interval=1000000000 \
    flows="proto=udp dst-port=6000 mark=1; proto=udp dst-port=6001 mark=2" ! fakesink \
  >"$log" 2>&1 &
rx_pid=$!
sleep 1

packets=$((seconds * rate))
ip netns exec "$ns" gst-launch-1.0 -q \
  daqiritestsrc num-packets="$packets" rate="$rate" n-flows=2 \
    packet-size-min=64 packet-size-max=1024 ! daqirisink device=afpacket:dq-tx &
tx_pid=$!

# one line a second from the receiver's stats messages
shown=0
print_new() {
  grep -o 'daqiri-src-stats.*' "$log" | tail -n +$((shown + 1)) | while read -r line; do
    pps=$(sed -n 's/.*packets-per-second=(double)\([0-9.e+]*\).*/\1/p' <<<"$line")
    bps=$(sed -n 's/.*bytes-per-second=(double)\([0-9.e+]*\).*/\1/p' <<<"$line")
    total=$(sed -n 's/.*[ ,]packets=(guint64)\([0-9]*\).*/\1/p' <<<"$line")
    drops=$(sed -n 's/.*[ ,]drops=(guint64)\([0-9]*\).*/\1/p' <<<"$line")
    awk -v p="$pps" -v b="$bps" -v t="$total" -v d="$drops" 'BEGIN {
      printf "receiver: %10.0f packets/s %8.1f Mbit/s   total %10d packets, %d dropped\n",
        p, b * 8 / 1e6, t, d }'
  done
  shown=$(grep -c 'daqiri-src-stats' "$log" || true)
}
while kill -0 "$tx_pid" 2>/dev/null; do
  sleep 1
  print_new
done
wait "$tx_pid"
sleep 1.5
print_new
kill -INT "$rx_pid" 2>/dev/null || true
wait "$rx_pid" 2>/dev/null || true
rx_pid=
last=$(grep -o 'daqiri-src-stats.*' "$log" | tail -1)
got=$(sed -n 's/.*[ ,]packets=(guint64)\([0-9]*\).*/\1/p' <<<"$last")
drops=$(sed -n 's/.*[ ,]drops=(guint64)\([0-9]*\).*/\1/p' <<<"$last")
rm -f "$log"
echo "demo: sent $packets packets, received ${got:-0}, dropped ${drops:-0}"
[ "${got:-0}" -eq "$packets" ]
