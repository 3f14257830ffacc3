#!/bin/sh
# `gst-inspect-1.0 daqirisrc` (the program given as $1): the element describes itself
# without a warning.
# It provides a clock only while its port is open, so a new element (NULL state) has no
# clocking capabilities to show, and none it fails to deliver.
out=$("$1" daqirisrc 2>&1) || { printf '%s\n' "$out"; echo "gst-inspect-1.0 daqirisrc failed"; exit 1; }
case "$out" in
  *"supposed to provide a clock"*)
    printf '%s\n' "$out" | grep -i clock
    echo "daqirisrc claims a clock it does not provide"
    exit 1 ;;
esac
case "$out" in
  *"Element has no clocking capabilities."*) ;;
  *)
    printf '%s\n' "$out"
    echo "daqirisrc: no clocking section as expected"
    exit 1 ;;
esac
case "$out" in
  *"Factory Details:"*"Rank"*) exit 0 ;;
esac
printf '%s\n' "$out"
echo "daqirisrc: no factory details"
exit 1
