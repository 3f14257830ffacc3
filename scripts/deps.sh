#!/usr/bin/env bash
# Installs the Debian 12 packages daqiri needs to build, test and run its demo, when missing.
set -euo pipefail

packages=(
  meson ninja-build pkg-config gcc libc6-dev libglib2.0-dev python3
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  libibverbs-dev rdma-core ibverbs-providers libdpdk-dev
  iproute2 tcpdump tcpreplay ethtool valgrind clang-tidy clang-format
  gobject-introspection libgirepository1.0-dev gir1.2-gstreamer-1.0 python3-gi
  libpcap-dev tshark
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
# The Linux kernel's include/linux/mlx5 headers, read as data by the PRM layout tests:
# mlx5_ifc.h (mlx5-layout-ifc), device.h, qp.h and cq.h (mlx5-layout-dma-consts). Any
# Debian linux-headers-*-common package of the 6.1 series has them all.
need_ifc=0
for h in mlx5_ifc.h device.h qp.h cq.h; do
  if ! compgen -G "/usr/src/linux-headers-*-common/include/linux/mlx5/$h" >/dev/null; then
    need_ifc=1
  fi
done
if [ ${#missing[@]} -eq 0 ] && [ $need_ifc -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
if [ $need_ifc -eq 1 ]; then
  ifc=$(apt-cache search --names-only '^linux-headers-6\.1\.0-[0-9]+-common$' | cut -d' ' -f1 |
    sort -V | tail -n 1)
  if [ -n "$ifc" ]; then
    missing+=("$ifc")
  else
    echo "daqiri: no linux-headers-6.1.0-*-common package found; the PRM layout tests will skip" >&2
  fi
fi
echo "daqiri: installing ${missing[*]}"
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
