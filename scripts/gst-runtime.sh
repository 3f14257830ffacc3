#!/usr/bin/env bash
# Builds a relocatable, self-contained GStreamer runtime folder from a newer Debian release
# (default: Debian 13 "trixie", GStreamer 1.26), for running daqiri's tests and tools against a
# newer GStreamer than the build machine's: e.g. to exercise the GStreamer >= 1.24 paths that
# daqiri detects at run time (libgstcuda-1.0's gst_cuda_allocator_alloc_wrapped), on a machine
# that has no GStreamer at all (only CUDA and its driver) and whatever glibc.
#
# The folder carries that release's own glibc and dynamic loader, so programs built on Debian 12
# run with it anywhere, by invoking its loader explicitly (OUT_DIR/run does that):
#
#   scripts/gst-runtime.sh [SUITE [OUT_DIR [BUILD_DIR]]]   (as root: it uses debootstrap and chroot)
#   scripts/gst-runtime.sh trixie .gst-trixie build-gpu90
#   GST_PLUGIN_PATH_1_0=build-gpu90/gst .gst-trixie/run .gst-trixie/bin/gst-inspect-1.0 daqirireorder
#   GST_PLUGIN_PATH_1_0=build-gpu90/gst .gst-trixie/run build-gpu90/tests/reorder/test-reorder-gpu
#
# SUITE defaults to trixie. With one argument, it is OUT_DIR. BUILD_DIR, a daqiri build folder,
# is optional: the shared libraries its ELF files link are added to the folder (from the SUITE's
# packages; ones the SUITE does not have, e.g. Debian 12's DPDK 22.11 librte_*.so.23, are copied
# from this machine, with a warning: the SUITE's newer glibc runs them).
#
# OUT_DIR gets:
#   lib/      the shared libraries needed (closure of GStreamer, the plugins below and BUILD_DIR's
#             ELF files), glibc and ld-linux-x86-64.so.2 included; libcuda*, libnvidia*,
#             libnvcuvid* and libnvrtc* are left out: they come from the machine's driver/CUDA.
#   plugins/  coreelements, app, nvcodec (cudaupload, cudadownload), videoconvertscale, videotestsrc
#   bin/      gst-inspect-1.0, gst-launch-1.0
#   run       run PROGRAM ARGS...: PROGRAM (an ELF file) under OUT_DIR/lib/ld-linux-x86-64.so.2
#             --library-path OUT_DIR/lib, then the machine's driver dirs (where libcuda.so.1 is),
#             with GST_PLUGIN_SYSTEM_PATH_1_0=OUT_DIR/plugins, GST_REGISTRY_FORK=no, a fresh
#             GST_REGISTRY_1_0 and LC_ALL=C; GST_PLUGIN_PATH_1_0 / GST_PLUGIN_PATH are kept (pass
#             daqiri's plugin folder that way). Only PROGRAM runs under the folder's glibc: what it
#             execs (other than by fork alone) runs with the machine's own.
#
# The SUITE root is debootstrapped (--variant=minbase) once and reused, under
# $GST_RUNTIME_CACHE/SUITE-root (default /var/tmp/gst-runtime). Mirror: $DEBIAN_MIRROR
# (default http://deb.debian.org/debian). Rerunnable: OUT_DIR is rebuilt from the cached root.
set -euo pipefail

me=gst-runtime
say() { printf '%s: %s\n' "$me" "$*"; }
warn() { printf '%s: warning: %s\n' "$me" "$*" >&2; }
die() { printf '%s: error: %s\n' "$me" "$*" >&2; exit 1; }
usage() { echo "usage: $0 [SUITE] OUT_DIR [BUILD_DIR]   (SUITE default trixie)" >&2; exit 2; }

case $# in
  1) suite=trixie; out=$1; build= ;;
  2) suite=$1; out=$2; build= ;;
  3) suite=$1; out=$2; build=$3 ;;
  *) usage ;;
esac
if [ -z "$suite" ] || [ -z "$out" ]; then usage; fi
[[ $suite =~ ^[a-z0-9-]+$ ]] || die "SUITE '$suite' is not a Debian suite name"
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap and chroot)"
[ "$(uname -m)" = x86_64 ] || die "only x86_64 is supported (this machine: $(uname -m))"
for tool in debootstrap chroot flock readelf; do
  command -v "$tool" >/dev/null ||
    die "'$tool' not found (Debian: apt-get install -y debootstrap binutils util-linux coreutils)"
done
if [ -n "$build" ]; then
  [ -d "$build" ] || die "BUILD_DIR '$build' is not a folder"
  build=$(cd "$build" && pwd -P)
fi
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd -P)/$(basename "$out")

if [ -e "$out" ] && [ ! -f "$out/.gst-runtime" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  die "$out exists, is not empty and was not made by $me: not overwriting it"
fi

cache=${GST_RUNTIME_CACHE:-/var/tmp/gst-runtime}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$cache/$suite-root
mkdir -p "$cache"
exec 9>"$cache/$suite.lock"
flock -n 9 || { say "waiting for another run on $root"; flock 9; }

# GStreamer, the plugins' packages, and the tools. Recommends are not installed: only the
# closure of the files copied below matters.
packages=(libgstreamer1.0-0 gstreamer1.0-plugins-base libgstreamer-plugins-bad1.0-0
  gstreamer1.0-plugins-bad gstreamer1.0-tools)
plugins=(libgstcoreelements.so libgstapp.so libgstnvcodec.so libgstvideoconvertscale.so
  libgstvideotestsrc.so)
# Libraries copied whatever links them: daqiri loads libgstcuda at run time; its tests use
# libgstcheck and libgstapp.
seed_libs=(libgstcuda-1.0.so.0 libgstcheck-1.0.so.0 libgstapp-1.0.so.0 libgstvideo-1.0.so.0
  libgstbase-1.0.so.0 libgstreamer-1.0.so.0)
multiarch=/usr/lib/x86_64-linux-gnu
loader=/lib64/ld-linux-x86-64.so.2
# Supplied by the machine at run time (NVIDIA driver and CUDA toolkit).
excluded() { case $1 in libcuda.so* | libcuda[-_]* | libcudart* | libnvidia* | libnvcuvid* | libnvrtc*) return 0 ;; esac; return 1; }

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C \
  DEBIAN_FRONTEND=noninteractive ${http_proxy:+http_proxy=$http_proxy} "$@"; }

# --- 1. the SUITE root ---------------------------------------------------------------------
if [ -f "$root/.gst-runtime-debootstrapped" ]; then
  say "reusing the $suite root in $root"
else
  if [ -e "$root" ]; then
    say "removing the unfinished $suite root in $root"
    rm -rf --one-file-system "$root"
  fi
  say "debootstrap --variant=minbase $suite into $root (from $mirror)"
  debootstrap --variant=minbase --arch=amd64 "$suite" "$root" "$mirror" ||
    die "debootstrap of $suite from $mirror failed (log: $root/debootstrap/debootstrap.log)"
  touch "$root/.gst-runtime-debootstrapped"
fi
[ -x "$root$loader" ] || die "$root has no $loader"
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

apt_updated=0
root_install() { # PACKAGE...: apt-get install in the root
  if [ $apt_updated -eq 0 ]; then
    say "apt-get update in the $suite root"
    in_root apt-get update -q || die "apt-get update in $root failed"
    apt_updated=1
  fi
  say "apt-get install in the $suite root: $*"
  in_root apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "$@" || die "apt-get install $* in $root failed"
}
# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
root_has() { [ "$(in_root dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = 'install ok installed' ]; }
root_can_install() { [[ $(in_root apt-cache policy "$1" 2>/dev/null) == *'Candidate: '[0-9]* ]]; }

missing=()
for p in "${packages[@]}"; do root_has "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  root_install "${missing[@]}"
else
  say "GStreamer packages already installed in the $suite root"
fi
# shellcheck disable=SC2016
gst_version=$(in_root dpkg-query -W -f='${Version}' libgstreamer1.0-0)
say "$suite has GStreamer $gst_version"

plugdir=$multiarch/gstreamer-1.0
for p in "${plugins[@]}"; do
  [ -f "$root$plugdir/$p" ] || die "plugin $plugdir/$p is not in the $suite root"
done
for l in "${seed_libs[@]}"; do
  [ -e "$root$multiarch/$l" ] || die "$multiarch/$l is not in the $suite root"
done

# --- 2. the files whose dependencies are collected ------------------------------------------
# Copies of BUILD_DIR's ELF files (and the symlinks to them) go into the root, at the same
# relative paths, so that the root's loader resolves them ($ORIGIN runpaths included).
# Libraries the SUITE has no package for are copied from this machine into $hostlibs.
stage=/gst-runtime-build
hostlibs=/gst-runtime-hostlibs
rm -rf --one-file-system "${root:?}$stage" "${root:?}$hostlibs"
mkdir -p "$root$stage" "$root$hostlibs"

is_elf_obj() { # FILE: a shared library or executable (not a .o)
  [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' \n')" = '177ELF' ] || return 1
  [[ $(readelf -h "$1" 2>/dev/null) =~ Type:[[:space:]]+(EXEC|DYN) ]]
}
build_files=()
if [ -n "$build" ]; then
  say "collecting the ELF files of $build"
  while IFS= read -r -d '' f; do
    rel=${f#"$build"/}
    if [ -L "$f" ]; then
      if [ -f "$f" ] && is_elf_obj "$f"; then
        mkdir -p "$root$stage/$(dirname "$rel")"
        cp -P "$f" "$root$stage/$rel"
      fi
    elif is_elf_obj "$f"; then
      mkdir -p "$root$stage/$(dirname "$rel")"
      cp "$f" "$root$stage/$rel"
      build_files+=("$stage/$rel")
    fi
  done < <(find "$build" \( -name '*.p' -o -name 'meson-*' -o -name '*.dSYM' \) -prune -o \
    \( -type f -o -type l \) \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -print0)
  [ ${#build_files[@]} -gt 0 ] || die "no ELF executables or libraries in $build"
  say "${#build_files[@]} ELF files in $build"
fi
# A name daqiri's build provides itself (libgstdaqiri-1.0.so.0): not collected.
build_provides() { [ -n "$build" ] && [ -n "$(find "$root$stage" -name "$1" -print -quit)" ]; }

root_files=(/usr/bin/gst-inspect-1.0 /usr/bin/gst-launch-1.0)
for p in "${plugins[@]}"; do root_files+=("$plugdir/$p"); done
for l in "${seed_libs[@]}"; do root_files+=("$multiarch/$l"); done

# --- 3. the closure, as the root's own loader sees it -----------------------------------------
declare -A resolved=() tried_pkg=() from_host=()
trace() { # FILE (path in the root) -> "NAME PATH" lines, PATH "-" when not found
  in_root env LD_TRACE_LOADED_OBJECTS=1 LD_LIBRARY_PATH="$hostlibs" "$loader" --inhibit-cache "$1" 2>/dev/null |
    awk '$2 == "=>" { print $1, ($3 == "not" ? "-" : $3) }' || true
}
host_path_of() { # SONAME -> this machine's file for it, if any
  command -v ldconfig >/dev/null || return 1
  local p
  p=$(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n && /x86-64/ && !d { print $NF; d = 1 }')
  [ -n "$p" ] && echo "$p"
}
host_package_of() { # PATH -> this machine's Debian package owning it
  local p q pkg
  command -v dpkg >/dev/null || return 1
  for p in "$1" "$(readlink -f "$1")"; do
    for q in "$p" "/usr$p" "${p#/usr}"; do
      pkg=$(dpkg -S "$q" 2>/dev/null | awk -F: '!/^diversion/ && !d { print $1; d = 1 }')
      [ -n "$pkg" ] && { echo "$pkg"; return 0; }
    done
  done
  return 1
}

for round in 1 2 3 4 5 6; do
  say "resolving shared libraries in the $suite root (round $round)"
  unresolved=()
  declare -A seen_missing=()
  for f in "${root_files[@]}" "${build_files[@]}"; do
    while read -r name path; do
      excluded "$name" && continue
      if [ "$path" = - ]; then
        build_provides "$name" && continue
        if [ -z "${seen_missing[$name]:-}" ]; then
          seen_missing[$name]=1
          unresolved+=("$name")
          say "  $name (needed by ${f#"$stage"/}) is not in the root"
        fi
      else
        case $path in "$stage"/*) continue ;; esac
        resolved[$name]=$path
      fi
    done < <(trace "$f")
  done
  unset seen_missing
  [ ${#unresolved[@]} -eq 0 ] && break
  [ $round -lt 6 ] || die "libraries still unresolved after $round rounds: ${unresolved[*]}"
  to_install=()
  for name in "${unresolved[@]}"; do
    hp=$(host_path_of "$name") ||
      die "$name is needed but neither the $suite root nor this machine has it"
    pkg=$(host_package_of "$hp") || pkg=
    picked=
    if [ -n "$pkg" ]; then
      for c in "$pkg" "${pkg}t64" "${pkg%t64}"; do
        [ -n "${tried_pkg[$c]:-}" ] && continue
        if root_can_install "$c"; then picked=$c; break; fi
      done
    fi
    if [ -n "$picked" ]; then
      say "  $name: this machine has it from $pkg; installing $picked in the $suite root"
      tried_pkg[$picked]=1
      to_install+=("$picked")
    else
      warn "$name: $suite has no package for it (this machine's: ${pkg:-none}); copying this machine's $hp"
      cp -L "$hp" "$root$hostlibs/$name"
      from_host[$name]=$hp
    fi
  done
  [ ${#to_install[@]} -eq 0 ] || root_install "${to_install[@]}"
done

# --- 4. the folder -----------------------------------------------------------------------
new=$out.new.$$
trap 'rm -rf --one-file-system "$new"' EXIT
rm -rf --one-file-system "$new"
mkdir -p "$new/lib" "$new/plugins" "$new/bin"
say "copying into $out: libraries, plugins, tools"

# glibc whole (libcuda.so.1 links libdl, libpthread, librt: those must be this glibc's too).
mapfile -t glibc_libs < <(in_root dpkg -L libc6 | grep -E "^(/usr)?/lib/x86_64-linux-gnu/[^/]+\.so(\.[0-9]+)*$" | sort -u)
[ ${#glibc_libs[@]} -gt 0 ] || die "no libc6 libraries listed in the $suite root"
for l in "${glibc_libs[@]}"; do
  n=$(basename "$l")
  [ -n "${resolved[$n]:-}" ] || resolved[$n]=$l
done
names=("${!resolved[@]}")
paths=()
for n in "${names[@]}"; do paths+=("${resolved[$n]}"); done
# Real files, resolved inside the root (symlinks there may be absolute, e.g. /etc/alternatives).
mapfile -t reals < <(in_root readlink -f "${paths[@]}")
[ ${#reals[@]} -eq ${#names[@]} ] || die "could not resolve the libraries' real paths in $root"
for i in "${!names[@]}"; do
  n=${names[$i]}
  if [ -n "${from_host[$n]:-}" ]; then
    cp -L "${from_host[$n]}" "$new/lib/$n"
  else
    cp -L "$root${reals[$i]}" "$new/lib/$n" || die "copying ${reals[$i]} from $root failed"
  fi
done
cp -L "$root$loader" "$new/lib/ld-linux-x86-64.so.2"
for p in "${plugins[@]}"; do cp -L "$root$plugdir/$p" "$new/plugins/$p"; done
for b in gst-inspect-1.0 gst-launch-1.0; do cp -L "$root/usr/bin/$b" "$new/bin/$b"; done
printf 'suite %s\ngstreamer %s\n' "$suite" "$gst_version" >"$new/.gst-runtime"
if [ ${#from_host[@]} -gt 0 ]; then
  for n in "${!from_host[@]}"; do printf 'from-build-machine %s %s\n' "$n" "${from_host[$n]}"; done |
    sort >>"$new/.gst-runtime"
fi

cat >"$new/run" <<'EOF'
#!/usr/bin/env bash
# run PROGRAM [ARGS...]: runs PROGRAM (an ELF executable) against the GStreamer runtime in this
# folder (made by daqiri's scripts/gst-runtime.sh), with the folder's own glibc and loader; the
# machine's driver libraries (libcuda.so.1, libnvidia-*) are found after the folder's.
# GST_PLUGIN_PATH_1_0 / GST_PLUGIN_PATH are kept: pass daqiri's plugin folder that way.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
[ $# -ge 1 ] || { echo "usage: $0 PROGRAM [ARGS...]" >&2; exit 2; }
prog=$1
shift
if [[ $prog != */* ]]; then
  prog=$(type -P -- "$prog") || { echo "run: $1: not found in PATH" >&2; exit 127; }
fi
[ -f "$prog" ] || { echo "run: $prog: no such file" >&2; exit 127; }
if [ "$(head -c 4 "$prog" | od -An -c | tr -d ' \n')" != '177ELF' ]; then
  echo "run: $prog is not an ELF executable (scripts run with the machine's own loader)" >&2
  exit 126
fi

# This folder first: its glibc must win over the machine's. Then the caller's LD_LIBRARY_PATH,
# then where the machine's libcuda.so.1 is, then the usual driver folders.
dirs=("$here/lib")
add_dir() {
  local d=$1 e
  [ -n "$d" ] && [ -d "$d" ] || return 0
  for e in "${dirs[@]}"; do [ "$e" = "$d" ] && return 0; done
  dirs+=("$d")
}
IFS=: read -r -a ldp <<<"${LD_LIBRARY_PATH:-}"
for d in "${ldp[@]}"; do add_dir "$d"; done
ldconfig_bin=$(type -P ldconfig || true)
for c in /sbin/ldconfig /usr/sbin/ldconfig; do
  [ -n "$ldconfig_bin" ] || { [ -x "$c" ] && ldconfig_bin=$c; }
done
if [ -n "$ldconfig_bin" ]; then
  while read -r p; do add_dir "$(dirname "$p")"; done < <(
    "$ldconfig_bin" -p 2>/dev/null | awk '$1 == "libcuda.so.1" && /x86-64/ { print $NF }')
fi
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/lib64 /usr/local/nvidia/lib64 \
  /usr/lib/wsl/lib /lib/x86_64-linux-gnu /lib64; do
  add_dir "$d"
done
libpath=$(IFS=:; echo "${dirs[*]}")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gst-runtime.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GST_PLUGIN_SYSTEM_PATH_1_0="$here/plugins"
export GST_REGISTRY_FORK=no # the plugin scanner would run with the machine's loader
export GST_REGISTRY_1_0="$tmp/registry.bin"
export LC_ALL=C # the machine's locale files may not suit this glibc
unset GST_PLUGIN_SCANNER GST_PLUGIN_SCANNER_1_0 GST_PLUGIN_SYSTEM_PATH
set +e
"$here/lib/ld-linux-x86-64.so.2" --inhibit-cache --library-path "$libpath" "$prog" "$@"
rc=$?
exit $rc
EOF
chmod 755 "$new/run"

# --- 5. check: everything resolves with the folder's lib/ alone --------------------------------
say "checking that every ELF file resolves with $out/lib alone"
bad=0
check() { # FILE [PATH_PREFIX_ALSO_ALLOWED]
  local f=$1 allow=${2:-} line name arrow path rest
  local listing
  listing=$(LD_TRACE_LOADED_OBJECTS=1 "$new/lib/ld-linux-x86-64.so.2" --inhibit-cache \
    --library-path "$new/lib" "$f" 2>&1) || true
  while IFS= read -r line; do
    read -r name arrow path rest <<<"$line"
    if [ "${arrow:-}" != "=>" ]; then
      case $line in *"not found"* | *error*) warn "$f: $line"; bad=1 ;; esac
      continue
    fi
    excluded "$name" && continue
    case $path in
      "$new/lib/"*) ;;
      not) build_provides "$name" || { warn "$f: $name not found"; bad=1; } ;;
      *) if [ -n "$allow" ] && [[ $path == "$allow"/* ]]; then :; else
           warn "$f: $name resolves outside the folder: $path"; bad=1; fi ;;
    esac
  done <<<"$listing"
}
for f in "$new"/lib/*.so* "$new"/plugins/*.so "$new"/bin/*; do
  case $(basename "$f") in ld-linux-x86-64.so.2) continue ;; esac
  check "$f"
done
for f in "${build_files[@]}"; do check "$build/${f#"$stage"/}" "$build"; done
[ $bad -eq 0 ] || die "the folder is incomplete (see the warnings above); $new is removed"

rm -rf --one-file-system "$out"
mv "$new" "$out"
trap - EXIT
rm -rf --one-file-system "${root:?}$stage" "${root:?}$hostlibs"
if [ ${#from_host[@]} -gt 0 ]; then
  warn "copied from this machine (no $suite package): ${!from_host[*]}"
fi
say "$out: GStreamer $gst_version ($suite), $(find "$out/lib" -type f | wc -l) libraries, ${#plugins[@]} plugins"
du -sh "$out" | awk -v me="$me" '{ print me ": size " $1 }'
