#!/usr/bin/env bash
# GPU checks of cuda/: the equivalence test (every kernel against its CPU twin, bit for bit) and
# the reorder benchmark, on a machine with an NVIDIA GPU.
# Needs no GStreamer and no build tools there: it runs the binaries built here (static CUDA
# runtime; libcuda.so.1 from the driver).
#
#   build here:  meson setup build-cuda -Dwerror=true && ninja -C build-cuda tests/cuda/test-cuda-gpu tests/cuda/bench-reorder
#                (scripts/gpu-stage.sh makes a small copy of what runs, to carry)
#   run there:   bash scripts/gpu-tests.sh [BUILD_DIR] [--sanitize]
# With a GStreamer runtime in the environment it also runs the element test
# (tests/reorder/test-reorder-gpu: daqirireorder memory=cuda against memory=system) and the
# GPU frames test (tests/reorder/test-pay-gpu: daqiripay's ways to the emulated ConnectX, and
# with --bench the same side by side), the
# pipeline benchmark (tests/reorder/bench-reorder-pipeline: daqirisrc ! daqirireorder ! fakesink
# on the emulated ConnectX, memory=system and memory=cuda; reported, its rc fails nothing) and
# the drain benchmark (tests/reorder/bench-reorder-drain: the ring in GPU memory pre-filled, then
# drained by daqirisrc ! daqirireorder ! fakesink; Gb/s and Mpps against the targets, and where
# the time goes; reported, only a timeout fails).
# GST_RUN=PREFIX runs the element test through PREFIX, e.g. GST_RUN=.gst-trixie/run for the
# GStreamer 1.26 folder of scripts/gst-runtime.sh (the GStreamer >= 1.24 paths).
#
# --sanitize also runs the quick test under compute-sanitizer memcheck, racecheck and synccheck,
# and the element test under memcheck (slow).
# Logs go to $OUT (when set) or /tmp; the last lines are the summary.
set -uo pipefail
cd "$(dirname "$0")/.."
build=build-cuda
sanitize=0
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    *) build=$a ;;
  esac
done
test_bin=$build/tests/cuda/test-cuda-gpu
bench_bin=$build/tests/cuda/bench-reorder
logs=${OUT:-/tmp}
for b in "$test_bin" "$bench_bin"; do
  if [ ! -x "$b" ]; then
    echo "gpu-tests: $b is missing; build it first:"
    echo "  meson setup $build -Dwerror=true && ninja -C $build tests/cuda/test-cuda-gpu tests/cuda/bench-reorder"
    exit 2
  fi
done

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,memory.used,memory.total \
  --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"
extra=$(ldd "$test_bin" | grep -v -E 'linux-vdso|libstdc\+\+|libgcc_s|libc\.so|libm\.so|ld-linux' || true)
if [ -n "$extra" ]; then
  echo "gpu-tests: unexpected shared libraries:"
  echo "$extra"
fi

echo "== test-cuda-gpu"
start=$(date +%s)
"$test_bin" 2>&1 | tee "$logs/test-cuda-gpu.log"
rc_test=${PIPESTATUS[0]}
echo "(test: rc=$rc_test, $(( $(date +%s) - start )) s)"

rc_san=0
san_line="compute-sanitizer: not run"
if [ "$sanitize" = 1 ]; then
  if command -v compute-sanitizer >/dev/null; then
    echo "== compute-sanitizer (quick test)"
    for tool in memcheck racecheck synccheck; do
      DQ_TEST_QUICK=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 3 "$test_bin" \
        > "$logs/sanitizer-$tool.log" 2>&1
      r=$?
      tail -3 "$logs/sanitizer-$tool.log"
      [ $r -ne 0 ] && rc_san=$r
      san_line="$san_line $tool=rc$r"
    done
    san_line="compute-sanitizer:${san_line#compute-sanitizer: not run}"
  else
    san_line="compute-sanitizer: not found"
  fi
fi

# The element test and the pipeline benchmark need a GStreamer runtime in the environment: the
# system's, or the one GST_RUN names; the daqiri plugin comes from the build folder.
have_gst=0
run=()
if command -v gst-inspect-1.0 >/dev/null || [ -n "${GST_PLUGIN_SYSTEM_PATH_1_0:-}" ] ||
    [ -n "${GST_RUN:-}" ]; then
  have_gst=1
  [ -n "${GST_RUN:-}" ] && run=("$GST_RUN")
  export GST_PLUGIN_PATH_1_0="$PWD/$build/gst"
  export LD_LIBRARY_PATH="$PWD/$build/gst${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# run_gst NAME TITLE [ARGS...]: runs $build/tests/reorder/NAME ARGS (timeout $gst_timeout, 300 by
# default) through the GStreamer runtime, its output also in $logs/NAME.log; sets gst_rc and
# gst_line (its summary line, which starts with NAME minus "test-", or why there is none).
gst_timeout=300
run_gst() {
  local bin=$build/tests/reorder/$1 prefix=${1#test-} title=$2
  shift 2
  gst_rc=0
  if [ ! -x "$bin" ]; then
    gst_line="$prefix: not run (no $bin)"
    return
  fi
  echo "== ${bin##*/} ($title)"
  if [ "$have_gst" != 1 ]; then
    gst_line="$prefix: not run (no GStreamer runtime here)"
    return
  fi
  local start
  start=$(date +%s)
  local log=$logs/${bin##*/}.log
  timeout "$gst_timeout" "${run[@]}" "$bin" "$@" 2>&1 | tee "$log"
  gst_rc=${PIPESTATUS[0]}
  echo "(${bin##*/}: rc=$gst_rc, $(( $(date +%s) - start )) s)"
  gst_line=$(grep -h "^$prefix:" "$log" || echo "$prefix: no summary line (rc=$gst_rc)")
}

# daqirireorder memory=cuda against memory=system
run_gst test-reorder-gpu "daqirireorder memory=cuda"
rc_elem=$gst_rc
elem_line=$gst_line
if [ "$have_gst" = 1 ] && [ -x "$build/tests/reorder/test-reorder-gpu" ] && [ "$sanitize" = 1 ] &&
    command -v compute-sanitizer >/dev/null; then
  timeout 300 compute-sanitizer --target-processes all --tool memcheck --error-exitcode 3 \
    "${run[@]}" "$build/tests/reorder/test-reorder-gpu" > "$logs/sanitizer-elements.log" 2>&1
  r=$?
  tail -1 "$logs/sanitizer-elements.log"
  [ $r -ne 0 ] && rc_elem=$r
  elem_line="$elem_line; memcheck rc=$r"
fi

# daqirisrc ! daqirireorder ! fakesink on the emulated ConnectX: Mpps with the ring and the frames
# in system or GPU memory, and max-inflight 1 and 4. Reported only, except that a run that does
# not finish (timeout: a hang) fails: it is the one check here of submissions overlapping on the
# GPU while their bursts are slow to read (system memory across the bus).
run_gst test-pay-gpu "GPU frames: daqiripay ! daqirisink emu: -> daqirisrc ! daqirireorder"
rc_pay=$gst_rc
pay_line=$gst_line
bench_pay_line="bench-pay-gpu: not run"
if [ "$have_gst" = 1 ] && [ -x "$build/tests/reorder/test-pay-gpu" ]; then
  echo "== bench-pay-gpu (two-segment against GPU packetize + copy and CPU packetize)"
  timeout 300 "${run[@]}" "$build/tests/reorder/test-pay-gpu" --bench 5 2>&1 |
    tee "$logs/bench-pay-gpu.log"
  bench_pay_line=$(grep -h '^bench-pay-gpu summary' "$logs/bench-pay-gpu.log" ||
    echo "bench-pay-gpu: no summary line")
fi

run_gst bench-reorder-pipeline "daqirisrc ! daqirireorder ! fakesink, emulated ConnectX"
rc_pipe=$gst_rc
pipe_line=$gst_line
rc_hang=0
if [ $rc_pipe -eq 124 ] || [ $rc_pipe -eq 137 ]; then
  rc_hang=$rc_pipe
  pipe_line="$pipe_line; timed out: counted as a failure"
fi

# the ring in GPU memory pre-filled, then drained: the product's Gb/s and Mpps against the
# targets; reported, only a timeout (a hang) fails
gst_timeout=900
run_gst bench-reorder-drain "ring in GPU memory pre-filled, drained by daqirisrc ! daqirireorder"
gst_timeout=300
rc_drain=$gst_rc
drain_line=$gst_line
if [ $rc_drain -eq 124 ] || [ $rc_drain -eq 137 ]; then
  rc_hang=$rc_drain
  drain_line="$drain_line; timed out: counted as a failure"
fi

echo "== bench-reorder"
start=$(date +%s)
"$bench_bin" 2>&1 | tee "$logs/bench-reorder.log"
rc_bench=${PIPESTATUS[0]}
echo "(bench: rc=$rc_bench, $(( $(date +%s) - start )) s)"

echo "== summary"
grep -h '^device:' "$logs/test-cuda-gpu.log" | head -1
grep -h -E '^(test-cuda-gpu:|SKIP)' "$logs/test-cuda-gpu.log" || echo "test-cuda-gpu: no summary line (rc=$rc_test)"
[ "$sanitize" = 1 ] && echo "$san_line"
echo "$elem_line"
echo "$pay_line"
echo "$bench_pay_line"
echo "$pipe_line"
echo "$drain_line"
grep -h '^bench-reorder summary' "$logs/bench-reorder.log" || echo "bench-reorder: no summary line (rc=$rc_bench)"
echo "gpu-tests: test rc=$rc_test, element test rc=$rc_elem, pay test rc=$rc_pay, bench rc=$rc_bench, sanitizer rc=$rc_san, pipeline bench rc=$rc_pipe, drain bench rc=$rc_drain (only a timeout counts)"
[ $rc_test -eq 0 ] && [ $rc_elem -eq 0 ] && [ $rc_pay -eq 0 ] && [ $rc_bench -eq 0 ] &&
  [ $rc_san -eq 0 ] && [ $rc_hang -eq 0 ]
