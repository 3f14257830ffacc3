#!/usr/bin/env bash
# GPU checks of cuda/: the equivalence test (every kernel against its CPU twin, bit for bit) and the
# reorder benchmark, on a machine with an NVIDIA GPU. Needs no GStreamer and no build tools there:
# it runs the binaries built here (static CUDA runtime; libcuda.so.1 from the driver).
#
#   build here:  meson setup build-cuda -Dwerror=true && ninja -C build-cuda tests/cuda/test-cuda-gpu tests/cuda/bench-reorder
#                (scripts/gpu-stage.sh makes a small copy of what runs, to carry)
#   run there:   bash scripts/gpu-tests.sh [BUILD_DIR] [--sanitize]
# With a GStreamer runtime in the environment it also runs the element test
# (tests/reorder/test-reorder-gpu: daqirireorder memory=cuda against memory=system) and the
# pipeline benchmark (tests/reorder/bench-reorder-pipeline: daqirisrc ! daqirireorder ! fakesink
# on the emulated ConnectX, memory=system and memory=cuda; reported, its rc fails nothing).
# GST_RUN=PREFIX runs the element test through PREFIX, e.g. GST_RUN=.gst-trixie/run for the
# GStreamer 1.26 folder of scripts/gst-runtime.sh (the GStreamer >= 1.24 paths).
#
# --sanitize also runs the quick test under compute-sanitizer memcheck and racecheck, and the
# element test under memcheck (slow).
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
    for tool in memcheck racecheck; do
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

# daqirireorder memory=cuda against memory=system
elem_bin=$build/tests/reorder/test-reorder-gpu
rc_elem=0
elem_line="reorder-gpu: not run (no $elem_bin)"
if [ -x "$elem_bin" ]; then
  echo "== test-reorder-gpu (daqirireorder memory=cuda)"
  if [ "$have_gst" = 1 ]; then
    "${run[@]}" "$elem_bin" 2>&1 | tee "$logs/test-reorder-gpu.log"
    rc_elem=${PIPESTATUS[0]}
    elem_line=$(grep -h '^reorder-gpu:' "$logs/test-reorder-gpu.log" || echo "reorder-gpu: no summary line (rc=$rc_elem)")
    if [ "$sanitize" = 1 ] && command -v compute-sanitizer >/dev/null; then
      timeout 300 compute-sanitizer --target-processes all --tool memcheck --error-exitcode 3 \
        "${run[@]}" "$elem_bin" > "$logs/sanitizer-elements.log" 2>&1
      r=$?
      tail -1 "$logs/sanitizer-elements.log"
      [ $r -ne 0 ] && rc_elem=$r
      elem_line="$elem_line; memcheck rc=$r"
    fi
  else
    elem_line="reorder-gpu: not run (no GStreamer runtime here)"
  fi
fi

# daqirisrc ! daqirireorder ! fakesink on the emulated ConnectX: Mpps with the ring and the frames
# in system or GPU memory, and max-inflight 1 and 4. Reported only: its rc fails nothing.
pipe_bin=$build/tests/reorder/bench-reorder-pipeline
rc_pipe=0
pipe_line="bench-reorder-pipeline: not run (no $pipe_bin)"
if [ -x "$pipe_bin" ]; then
  echo "== bench-reorder-pipeline (daqirisrc ! daqirireorder ! fakesink, emulated ConnectX)"
  if [ "$have_gst" = 1 ]; then
    start=$(date +%s)
    timeout 300 "${run[@]}" "$pipe_bin" 2>&1 | tee "$logs/bench-reorder-pipeline.log"
    rc_pipe=${PIPESTATUS[0]}
    echo "(pipeline bench: rc=$rc_pipe, $(( $(date +%s) - start )) s)"
    pipe_line=$(grep -h '^bench-reorder-pipeline:' "$logs/bench-reorder-pipeline.log" ||
      echo "bench-reorder-pipeline: no summary line (rc=$rc_pipe)")
  else
    pipe_line="bench-reorder-pipeline: not run (no GStreamer runtime here)"
  fi
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
echo "$pipe_line"
grep -h '^bench-reorder summary' "$logs/bench-reorder.log" || echo "bench-reorder: no summary line (rc=$rc_bench)"
echo "gpu-tests: test rc=$rc_test, element test rc=$rc_elem, bench rc=$rc_bench, sanitizer rc=$rc_san (pipeline bench rc=$rc_pipe, not counted)"
[ $rc_test -eq 0 ] && [ $rc_elem -eq 0 ] && [ $rc_bench -eq 0 ] && [ $rc_san -eq 0 ]
