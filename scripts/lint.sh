#!/usr/bin/env bash
# Static checks: clang-tidy (config in .clang-tidy) over the product's C sources, using the
# compile commands of ./build. Prints the warnings and exits non-zero if there are any.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/compile_commands.json ] || bash scripts/build.sh >/dev/null
mapfile -t files < <(git ls-files 'engine/*.c' 'mlx5/*.c' 'mlx5/**/*.c' 'cuda/*.c' 'gst/*.c' 'gst/**/*.c')
out=$(clang-tidy -p build --quiet "${files[@]}" 2>/dev/null | grep -E 'warning:|error:' || true)
if [ -n "$out" ]; then
  echo "$out"
  echo "lint: $(echo "$out" | wc -l) warnings"
  exit 1
fi
echo "lint: clean (${#files[@]} files)"
