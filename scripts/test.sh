#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: once on the normal build, once on
# an AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/). Ends with the line
# "N passed, N failed, N skipped" over both runs.
# Tests that need root (network namespaces, veth pairs, raw sockets) are skipped without it.
# usage: scripts/test.sh [--no-asan] [meson test arguments, e.g. a test name]
set -uo pipefail
cd "$(dirname "$0")/.."

asan=1
if [ "${1:-}" = "--no-asan" ]; then
  asan=0
  shift
fi
fail() { echo "$1" >&2; echo "0 passed, 1 failed"; exit 1; }

bash scripts/deps.sh || fail "test: installing dependencies failed"
bash scripts/build.sh || fail "test: build failed"

logs=()
rm -f build/meson-logs/testlog.json
meson test -C build --print-errorlogs --num-processes 1 "$@"
logs+=(build/meson-logs/testlog.json)

if [ "$asan" = 1 ]; then
  if [ ! -f build-asan/build.ninja ]; then
    # GStreamer's GST_READ_*/GST_WRITE_* macros load and store unaligned on x86 by design:
    # UBSan's alignment check would flag every header field, so it is left out; no
    # introspection: the Python test's interpreter could not load the instrumented library
    meson setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false \
      -Dc_args=-fno-sanitize=alignment -Dbenchmarks=disabled -Dcuda=disabled \
      -Dintrospection=disabled >/dev/null \
      || fail "test: configuring build-asan failed"
  fi
  ninja -C build-asan >/dev/null || fail "test: ASan build failed"
  rm -f build-asan/meson-logs/testlog.json
  # CK_FORK=no: one process per test program, so LeakSanitizer sees every test's leaks
  # at its exit (forked check children report GLib's own start-up allocations instead)
  CK_FORK=no LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    meson test -C build-asan --print-errorlogs --num-processes 1 --no-suite lint "$@"
  logs+=(build-asan/meson-logs/testlog.json)
fi

python3 scripts/test-summary.py "${logs[@]}"
