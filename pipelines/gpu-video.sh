#!/usr/bin/env bash
# Packets to raw video on the GPU, on the emulated ConnectX (no NIC):
#
#   daqirisrc device=emu:video,gen=1326,... memory=cuda     the emulated NIC writes 1326-byte
#                                                           UDP frames into a ring in
#                                                           GPU-accessible memory
#   ! daqirireorder memory=cuda ... video-format=uyvy       the kernels place each frame's
#       width=640 height=48                                 1280-byte payload (one UYVY row) by
#                                                           sequence number: 48 rows a picture,
#                                                           GstCudaMemory of the pipeline's
#                                                           CUDA context
#   ! cudadownload ! fakesink                               (or any CUDA/nvcodec element)
#
# With FORMAT i422-10le the payloads are 10-bit 4:2:2 pgroups (ST 2110-20: 1600 bytes a row of
# 640 pixels, carried in two 800-byte payloads) that a kernel unpacks into planar I422_10LE
# GstCudaMemory.
#
# Needs a GPU, daqiri built with CUDA, and GStreamer's nvcodec plugin
# (gstreamer1.0-plugins-bad). Exits non-zero unless the pictures all came through.
# usage: pipelines/gpu-video.sh [PICTURES (default 1000)] [FORMAT: uyvy (default), i422-10le]
# BUILD_DIR (default build) picks the meson build directory.
set -euo pipefail
cd "$(dirname "$0")/.."

pictures=${1:-1000}
format=${2:-uyvy}
rows=48
case "$format" in
  uyvy) payload=1280; per_row=1; caps_format=UYVY ;;
  i422-10le) payload=800; per_row=2; caps_format=I422_10LE ;;
  *) echo "gpu-video: FORMAT is '$format'; allowed: uyvy, i422-10le" >&2; exit 2 ;;
esac
export GST_PLUGIN_PATH_1_0="$PWD/${BUILD_DIR:-build}/gst${GST_PLUGIN_PATH_1_0:+:$GST_PLUGIN_PATH_1_0}"

out=$(timeout 120 gst-launch-1.0 -e \
  daqirisrc device="emu:video,gen=$((46 + payload)),gen-count=$((pictures * rows * per_row)),gen-lossless=1" \
    memory=cuda ! \
  daqirireorder name=r memory=cuda seq-offset=336 seq-bits=32 \
    packets-per-batch=$((rows * per_row)) payload-offset=46 payload-size=$payload timeout=50000000 \
    video-format="$format" width=640 height=$rows framerate=0/1 ! \
  cudadownload ! video/x-raw,format=$caps_format ! \
  fakesink sync=false num-buffers="$pictures" 2>&1) || {
  echo "$out" | tail -20
  echo "gpu-video: the pipeline failed" >&2
  exit 1
}
echo "$out" | grep -E "ERROR|WARNING" | head -5 || true
if echo "$out" | grep -q "Got EOS from element"; then
  echo "gpu-video: $pictures pictures of 640x$rows $caps_format made on the GPU and downloaded"
else
  echo "$out" | tail -20
  echo "gpu-video: the pipeline did not reach the end of its $pictures pictures" >&2
  exit 1
fi
