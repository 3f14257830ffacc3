#!/usr/bin/env bash
# Formats daqiri's C and C++ sources with clang-format (style in .clang-format). CUDA sources
# (.cu, .cuh) are left as they are: clang-format 14 splits a kernel launch's >>> into > > >.
# usage: scripts/format.sh           reformat every tracked source in place
#        scripts/format.sh --check   change nothing; list the files that are not formatted
#                                    and exit 1 if there is one (the lint suite's `format` test)
set -uo pipefail
cd "$(dirname "$0")/.."

check=0
if [ "${1:-}" = "--check" ]; then
  check=1
fi

fmt=$(command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "format: clang-format not found (Debian package clang-format)" >&2
  exit 1
fi

mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cc' 2>/dev/null)
if [ ${#files[@]} -eq 0 ]; then
  echo "format: no sources found (run from a git checkout)" >&2
  exit 1
fi

if [ "$check" = 0 ]; then
  exec "$fmt" -i --style=file "${files[@]}"
fi

bad=0
for f in "${files[@]}"; do
  if ! "$fmt" --style=file "$f" | cmp -s - "$f"; then
    echo "format: $f is not formatted (bash scripts/format.sh formats it)"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "format: $bad of ${#files[@]} files need formatting"
  exit 1
fi
echo "format: ${#files[@]} files formatted"
