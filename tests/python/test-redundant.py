#!/usr/bin/env python3
"""Redundant paths (SMPTE ST 2022-7 style): two copies of a stream over two lossy paths,
merged by daqirireorder.

    daqiritestsrc ! tee ! daqirisink emu:A  ->  daqirisrc emu:RA,loss=10    \\
                      ! daqirisink emu:B  ->  daqirisrc emu:RB,loss=10+5  -> funnel
        -> daqirireorder (window wider than the paths' skew) ! appsink

Path A loses every tenth packet (0, 10, 20, ...), path B every tenth from the fifth (5, 15,
...): each path alone leaves every frame incomplete; merged, the first copy of each packet
wins, the second is counted (duplicates, or late once its frame is out), and every frame is
complete and equal to the payloads sent. Exits non-zero on any failure; one line per case.
"""
import sys
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstDaqiri", "1.0")
from gi.repository import Gst, GstDaqiri  # noqa: E402

PPB = 256
FRAMES = 60
N = PPB * FRAMES
PAYLOAD = 14  # 60-byte test packets: UDP payload bytes 4..17 (flow index, then pattern)
FIELDS = (f"seq-offset=336 seq-bits=32 packets-per-batch={PPB} payload-offset=46 "
          f"payload-size={PAYLOAD} window=64")
serial = 0


def expected_slot(seq):
    """Payload bytes 4..17 of test packet seq of flow 0 (daqiritestpacket.h)."""
    return bytes([0, 0, 0, 0] + [(seq * 31 + j * 7) & 0xFF for j in range(8, 18)])


def settle(reorder):
    """Waits until the reorder has taken no packet for 300 ms (5 s at most)."""
    last, still, deadline = -1, 0.0, time.monotonic() + 5
    while still < 0.3 and time.monotonic() < deadline:
        n = reorder.get_property("stats").get_uint64("packets")[1]
        still = still + 0.05 if n == last else 0.0
        last = n
        time.sleep(0.05)


def run(paths):
    """Sends N packets over both paths, receives over `paths` ("A", "B" or both); returns
    (frames, frames complete and intact, reorder stats)."""
    global serial
    serial += 1
    tag = f"rp{serial}"
    rx_desc = f"funnel name=f ! daqirireorder name=r {FIELDS} ! appsink name=out sync=false max-buffers=0"
    if "A" in paths:
        rx_desc += f" daqirisrc device=emu:{tag}ra,loss=10 filter=all ! f."
    if "B" in paths:
        rx_desc += f" daqirisrc device=emu:{tag}rb,loss=10+5 filter=all ! f."
    rx = Gst.parse_launch(rx_desc)
    rx.set_state(Gst.State.PLAYING)
    rx.get_state(5 * Gst.SECOND)
    tx = Gst.parse_launch(
        f"daqiritestsrc num-packets={N} burst-packets=32 rate=200000 ! tee name=t "
        f"! queue ! daqirisink device=emu:{tag}a,peer={tag}ra "
        f"t. ! queue ! daqirisink device=emu:{tag}b,peer={tag}rb")
    tx.set_state(Gst.State.PLAYING)
    msg = tx.get_bus().timed_pop_filtered(10 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    assert msg is not None and msg.type == Gst.MessageType.EOS, "the sender did not finish"
    # the last packets reach the receivers (the reorder's count stops moving), then EOS
    # flushes what the window holds
    settle(rx.get_by_name("r"))
    out = rx.get_by_name("out")
    frames = good = 0
    rx.send_event(Gst.Event.new_eos())
    while True:
        sample = out.emit("try-pull-sample", 3 * Gst.SECOND)
        if sample is None:
            break
        buf = sample.get_buffer()
        info = GstDaqiri.buffer_get_frame_info(buf)
        batch = info.get_uint64("batch-id")[1]
        ok, data = buf.map(Gst.MapFlags.READ)
        intact = info.get_boolean("complete")[1] and all(
            bytes(data.data[s * PAYLOAD:(s + 1) * PAYLOAD]) == expected_slot(batch * PPB + s)
            for s in range(PPB))
        buf.unmap(data)
        frames += 1
        good += intact
    stats = rx.get_by_name("r").get_property("stats")
    tx.set_state(Gst.State.NULL)
    rx.set_state(Gst.State.NULL)
    return frames, good, stats


def main():
    Gst.init(None)
    failed = 0
    # each path alone: every frame misses a tenth of its packets
    for path in ("A", "B"):
        frames, good, st = run(path)
        missing = st.get_uint64("missing")[1]
        ok = frames == FRAMES and good == 0 and missing == N // 10
        print(f"{'PASS' if ok else 'FAIL'} path {path} alone: {frames} frames, {good} complete, "
              f"{missing} packets missing (expected {N // 10})")
        failed += not ok
    # merged: every frame complete and intact; every packet that came twice counted
    frames, good, st = run("AB")
    twice = st.get_uint64("duplicates")[1] + st.get_uint64("late")[1]
    missing = st.get_uint64("missing")[1]
    ok = frames == FRAMES and good == FRAMES and missing == 0 and twice == N - 2 * (N // 10)
    print(f"{'PASS' if ok else 'FAIL'} both paths merged: {frames} frames, {good} complete and "
          f"intact, {missing} missing, {twice} second copies counted (expected {N - 2 * (N // 10)})")
    failed += not ok
    print(f"redundant-paths: {3 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
