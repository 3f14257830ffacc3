#!/usr/bin/env python3
"""Flow monitor: per-flow packet rates and timestamp spreads, read in Python.

    pipelines/flow-monitor.py [DEVICE] [SECONDS]

Receives on DEVICE (default emu:flowmon; an emulated ConnectX port is fed by daqiritestsrc in
the same process, four flows) with flow rules that mark four UDP destination ports 6000..6003, and
every second prints, per flow id: packets/s, bytes/s, and the spread of the receive
timestamps between consecutive packets of the flow (min / median / max, microseconds).
Reads the packets through GObject introspection (GstDaqiri-1.0): run from the source tree
after `meson setup build && ninja -C build`, with
    GI_TYPELIB_PATH=build/gst LD_LIBRARY_PATH=build/gst GST_PLUGIN_PATH_1_0=build/gst
(or installed: nothing to set). Needs PyGObject (Debian: python3-gi, gir1.2-gstreamer-1.0).
"""
import statistics
import sys
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstDaqiri", "1.0")
from gi.repository import GLib, Gst, GstDaqiri  # noqa: E402

RULES = "; ".join(f"proto=udp dst-port={6000 + f} mark={10 + f}" for f in range(4))


class FlowStats:
    def __init__(self):
        self.packets = 0
        self.bytes = 0
        self.last_ts = 0
        self.gaps = []

    def add(self, length, ts):
        self.packets += 1
        self.bytes += length
        if self.last_ts and ts > self.last_ts:
            self.gaps.append((ts - self.last_ts) / 1000.0)
        self.last_ts = ts


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "emu:flowmon"
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    Gst.init(None)
    rx = Gst.parse_launch(
        f'daqirisrc device={device} flows="{RULES}" ! appsink name=out emit-signals=true '
        "sync=false max-buffers=64 drop=true")
    flows = {}

    def on_sample(sink):
        buf = sink.emit("pull-sample").get_buffer()
        meta = GstDaqiri.buffer_get_packet_meta(buf)
        for i in range(meta.get_n_packets() if meta else 0):
            ok, pkt = meta.get_packet(i)
            flows.setdefault(pkt.flow_id, FlowStats()).add(pkt.length, pkt.timestamp)
        return Gst.FlowReturn.OK

    rx.get_by_name("out").connect("new-sample", on_sample)
    rx.set_state(Gst.State.PLAYING)
    tx = None
    if device.startswith("emu:"):
        # an emulated port carries nothing else: feed it from this process
        tx = Gst.parse_launch(
            "daqiritestsrc n-flows=4 rate=200000 is-live=true packet-size-min=60 "
            f"packet-size-max=1500 ! daqirisink device={device}")
        tx.set_state(Gst.State.PLAYING)

    loop = GLib.MainLoop()
    start = time.monotonic()

    def report():
        for fid in sorted(flows):
            s = flows[fid]
            gaps = sorted(s.gaps) or [0.0]
            print(f"flow {fid:3}: {s.packets:8} pkt/s {s.bytes * 8 / 1e6:9.1f} Mb/s  gap us "
                  f"min {gaps[0]:.2f} median {statistics.median(gaps):.2f} max {gaps[-1]:.2f}")
            flows[fid] = FlowStats()
        print("-" * 60)
        if time.monotonic() - start >= seconds:
            loop.quit()
            return False
        return True

    GLib.timeout_add_seconds(1, report)
    loop.run()
    if tx:
        tx.set_state(Gst.State.NULL)
    rx.set_state(Gst.State.NULL)


if __name__ == "__main__":
    main()
