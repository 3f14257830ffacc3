#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: pipelines/demo.sh, a sender and
# a receiver on the emulated ConnectX in one gst-launch (no root needed once the packages
# are installed). Arguments go to it: [SECONDS] [PACKETS_PER_SECOND].
# The veth/afpacket variant (root): pipelines/demo-veth.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
exec bash pipelines/demo.sh "$@"
