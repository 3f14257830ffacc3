#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: pipelines/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
exec bash pipelines/demo.sh "$@"
