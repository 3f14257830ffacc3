#!/usr/bin/env bash
# Installs the Debian 12 packages daqiri needs to build, test and run its demo, when missing.
set -euo pipefail

packages=(
  meson ninja-build pkg-config gcc libc6-dev libglib2.0-dev python3
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  libibverbs-dev rdma-core ibverbs-providers
  iproute2 tcpdump tcpreplay ethtool valgrind
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "daqiri: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
