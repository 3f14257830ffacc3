#!/usr/bin/env bash
# Configures (once) and builds daqiri into ./build. Extra arguments go to `meson setup`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  meson setup build -Dwerror=true "$@"
fi
ninja -C build
