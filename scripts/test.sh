#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test. Ends with "N passed, N failed".
# Tests that need root (network namespaces, veth pairs) are skipped without it.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh || { echo "0 passed, 1 failed"; exit 1; }
bash scripts/build.sh || { echo "0 passed, 1 failed"; exit 1; }

meson test -C build --print-errorlogs --num-processes 1 "$@"
python3 scripts/test-summary.py build/meson-logs/testlog.json
