#!/usr/bin/env bash
# Copies what scripts/gpu-tests.sh runs out of a CUDA build folder into a small folder of the
# same layout (debug info stripped), for carrying to a GPU machine:
#
#   meson setup build-gpu -Dcuda=enabled -Dcuda-archs=90 -Dwerror=true   # only the GPU you have
#   ninja -C build-gpu && bash scripts/gpu-stage.sh build-gpu stage-gpu
#   (there)  bash scripts/gpu-tests.sh stage-gpu
#
# The element test (tests/reorder/test-reorder-gpu) and the pipeline benchmarks
# (tests/reorder/bench-reorder-pipeline, bench-reorder-drain) also need a GStreamer runtime there: the system's, or one
# carried over whose environment is set before gpu-tests.sh runs.
set -euo pipefail
build=${1:?usage: gpu-stage.sh BUILD_DIR OUT_DIR}
out=${2:?usage: gpu-stage.sh BUILD_DIR OUT_DIR}
rm -rf "$out"
for f in tests/cuda/test-cuda-gpu tests/cuda/bench-reorder tests/reorder/test-reorder-gpu \
    tests/reorder/test-pay-gpu tests/reorder/bench-reorder-pipeline tests/reorder/bench-reorder-drain \
    gst/libgstdaqiri.so gst/libgstdaqiri-1.0.so.0; do
  if [ -e "$build/$f" ]; then
    mkdir -p "$out/$(dirname "$f")"
    objcopy --strip-debug "$(readlink -f "$build/$f")" "$out/$f"
  fi
done
du -sh "$out" | awk '{print "gpu-stage: " $2 " holds " $1}'
