#!/usr/bin/env bash
# Runs every host benchmark in one go and writes their results and plots under
# docs/benchmarks/ (or OUT_DIR): results.json (one object a measurement, each with the
# benchmark that made it), one log a benchmark, and PNG plots (scripts/bench-plot.py,
# matplotlib). Prints a progress line per benchmark.
#
#   scripts/bench-suite.sh            # everything this machine and user can run
#   scripts/bench-suite.sh --quick    # fewer rounds and packets: minutes, noisier
#
# Parts that need root (veth pairs and raw sockets for bench-rx and bench-latency's
# afpacket runs, 2 MiB huge pages for the
# DPDK runs of bench-engines) are skipped with a message without it. As root, the suite
# reserves the huge pages it uses and gives them back afterwards. GPU benchmarks run on the
# GPU machine (scripts/gpu-tests.sh), not here.
# BUILD_DIR (default build) picks the meson build directory.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
OUT_DIR=${OUT_DIR:-docs/benchmarks}
quick=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    *) echo "usage: scripts/bench-suite.sh [--quick]" >&2; exit 2 ;;
  esac
done
root=0
[ "$(id -u)" -eq 0 ] && root=1

if [ "$root" = 1 ]; then
  bash scripts/deps.sh
  command -v apt-get >/dev/null && ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-matplotlib >/dev/null
fi
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  echo "bench-suite: needs matplotlib for the plots: apt-get install python3-matplotlib" >&2
  exit 1
fi
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  meson setup "$BUILD_DIR" -Dwerror=true -Dbenchmarks=enabled || exit 1
else
  meson configure "$BUILD_DIR" -Dbenchmarks=enabled || exit 1
fi
ninja -C "$BUILD_DIR" || exit 1

mkdir -p "$OUT_DIR"
logs="$OUT_DIR/logs"
mkdir -p "$logs"
rm -f "$logs"/*.log

# name | program and arguments | what it needs besides the build (root, huge pages)
if [ "$quick" = 1 ]; then
  rounds=5 emu_seconds=1 emu_repeat=1 packets=200000 repeat=1
else
  rounds=15 emu_seconds=3 emu_repeat=3 packets=2000000 repeat=3
fi
b=$BUILD_DIR/tests
runs=(
  "engines|$b/bench/bench-engines --rounds $rounds|"
  "engines-huge|$b/bench/bench-engines --rounds $rounds|huge"
  "mlx5|$b/mlx5/bench-mlx5 --rounds $rounds|"
  "emu-rate|$b/bench/bench-emu-rate --seconds $emu_seconds --repeat $emu_repeat --soak 0|"
  "emu-queues|$b/bench/bench-emu-queues --repeat $((emu_repeat * 3))|"
  "flow-change|$b/bench/bench-flow-change --packets $((packets * 5)) --repeat $repeat|"
  "pipelines|$b/bench/bench-pipelines --repeat $repeat|"
  "latency|$b/bench/bench-latency --seconds $emu_seconds|"
  "latency-afpacket|$b/bench/bench-latency --engine afpacket --seconds $emu_seconds|root"
  "clock|$b/clock/bench-clock|"
  "afpacket-rx|$b/bench/bench-rx --packets $packets --repeat $repeat --receivers bare,engine,daqirisrc,udpsrc,dpdk|root"
)

huge_before=""
huge_file=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
release_huge () {
  if [ -n "$huge_before" ]; then
    echo "$huge_before" > "$huge_file"
    huge_before=""
  fi
}
trap release_huge EXIT

total=${#runs[@]}
k=0
start=$(date +%s)
for r in "${runs[@]}"; do
  k=$((k + 1))
  IFS='|' read -r name cmd needs <<< "$r"
  prog=${cmd%% *}
  log="$logs/$name.log"
  if [ ! -x "$prog" ]; then
    echo "[$k/$total] $name: skipped ($prog is not built here)"
    continue
  fi
  env_args=()
  if [ "$needs" = root ] && [ "$root" = 0 ]; then
    echo "[$k/$total] $name: skipped (needs root)"
    continue
  fi
  if [ "$needs" = huge ]; then
    if [ "$root" = 0 ] || [ ! -w "$huge_file" ]; then
      echo "[$k/$total] $name: skipped (reserving 2 MiB huge pages needs root)"
      continue
    fi
    huge_before=$(cat "$huge_file")
    echo 512 > "$huge_file"
    if [ "$(cat "$huge_file")" -lt 256 ]; then
      echo "[$k/$total] $name: skipped (the kernel gave $(cat "$huge_file") huge pages of 512)"
      release_huge
      continue
    fi
    env_args=(DAQIRI_DPDK_EAL_ARGS="--no-pci --no-shconf --in-memory -m 512 --log-level=error")
  fi
  t0=$(date +%s)
  echo "[$k/$total] $name: running ($cmd)"
  env "${env_args[@]}" $cmd > "$log" 2>&1
  rc=$?
  [ "$needs" = huge ] && release_huge
  summary=$(grep -E "^(bench-[a-z0-9-]+|[a-z0-9-]+):" "$log" | tail -1)
  [ -z "$summary" ] && summary=$(grep -v '^{' "$log" | grep -v '^ *$' | tail -1)
  echo "[$k/$total] $name: rc=$rc, $(($(date +%s) - t0)) s${summary:+: $summary}"
done

/usr/bin/python3 scripts/bench-plot.py "$logs" "$OUT_DIR" || exit 1
echo "bench-suite: $total benchmarks in $(($(date +%s) - start)) s; results and plots in $OUT_DIR"
