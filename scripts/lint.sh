#!/usr/bin/env bash
# Static checks: clang-tidy (config in .clang-tidy) over the product's C sources, with the
# compile commands of a meson build dir (default ./build). Prints the warnings and exits
# non-zero if there are any.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/compile_commands.json" ] || { echo "lint: no $build/compile_commands.json" >&2; exit 2; }
mapfile -t files < <(git ls-files 'engine/*.c' 'mlx5/*.c' 'cuda/*.c' 'gst/*.c')
out=$(clang-tidy -p "$build" --quiet "${files[@]}" 2>/dev/null | grep -E 'warning:|error:' || true)
if [ -n "$out" ]; then
  echo "$out"
  echo "lint: $(echo "$out" | wc -l) warnings"
  exit 1
fi
echo "lint: clean (${#files[@]} files)"
