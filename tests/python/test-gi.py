#!/usr/bin/env python3
"""Python reads daqiri packets through GObject introspection (GstDaqiri-1.0 typelib).

Three pipelines, every value checked against what the packets must hold:
  - daqiritestsrc ! appsink: per packet the descriptor (offset, length, flow id, flags) from
    GstDaqiri.PacketMeta, and the bytes it points at (sequence number, flow index, IPv4
    length, every payload byte of the test pattern);
  - daqiritestsrc ! daqirisink emu:  ->  daqirisrc header-size=42 ! appsink: the two
    segments of every packet (headers in memory 0, the rest in memory 1) put back together
    give the same packets; receive timestamps present and never going back;
  - daqiritestsrc ! daqirireorder ! appsink: the frame meta (batch id, packets, complete).
Prints one line per case and a summary line; exits non-zero on any failure.
"""
import struct
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstDaqiri", "1.0")
from gi.repository import Gst, GstDaqiri  # noqa: E402

N = 1000
FLOWS = 4


def check_frame(frame, seq_expected):
    """The test packet's fields and pattern (daqiritestpacket.h); returns the flow index."""
    ip_total = struct.unpack_from(">H", frame, 16)[0]
    if ip_total + 14 != len(frame):
        raise AssertionError(f"IPv4 total length {ip_total} for a {len(frame)}-byte frame")
    seq, flow = struct.unpack_from(">II", frame, 42)
    if seq != seq_expected:
        raise AssertionError(f"sequence {seq}, expected {seq_expected}")
    for j in range(8, len(frame) - 42):
        want = (seq * 31 + j * 7 + flow) & 0xFF
        if frame[42 + j] != want:
            raise AssertionError(f"packet {seq} payload byte {j}: {frame[42 + j]} != {want}")
    return flow


def pull_all(pipeline, want, timeout_s=10):
    out = pipeline.get_by_name("out")
    samples = []
    got = 0
    pipeline.set_state(Gst.State.PLAYING)
    while got < want:
        sample = out.emit("try-pull-sample", timeout_s * Gst.SECOND)
        if sample is None:
            break
        samples.append(sample)
        meta = GstDaqiri.buffer_get_packet_meta(sample.get_buffer())
        got += meta.get_n_packets() if meta is not None else 1
    return samples


def stop_all_received(seq, *pipelines):
    """Stops the pipelines; `seq` packets were checked, and that must be all N."""
    for pipeline in pipelines:
        pipeline.set_state(Gst.State.NULL)
    assert seq == N, f"{seq} packets"


def case_descriptors():
    p = Gst.parse_launch(
        f"daqiritestsrc num-packets={N} burst-packets=64 n-flows={FLOWS} packet-size-min=60 "
        "packet-size-max=300 ! appsink name=out sync=false max-buffers=0")
    samples = pull_all(p, N)
    seq = 0
    total = 0
    for sample in samples:
        buf = sample.get_buffer()
        meta = GstDaqiri.buffer_get_packet_meta(buf)
        assert meta is not None and meta.n_packets == meta.get_n_packets() <= 64
        assert meta.header_size == 0
        ok, data = buf.map(Gst.MapFlags.READ)
        assert ok
        for i in range(meta.get_n_packets()):
            ok, pkt = meta.get_packet(i)
            assert ok
            frame = bytes(data.data[pkt.offset:pkt.offset + pkt.length])
            flow = check_frame(frame, seq)
            assert flow == seq % FLOWS, f"packet {seq}: flow {flow}"
            assert pkt.flow_id == flow, f"packet {seq}: flow id {pkt.flow_id}, flow {flow}"
            assert 60 <= pkt.length <= 300
            segs = meta.get_segments(i)
            assert segs[0] and segs.header_offset == pkt.offset
            assert segs.header_length == pkt.length and segs.payload_length == 0
            total += pkt.length
            seq += 1
        ok, _ = meta.get_packet(meta.get_n_packets())
        assert not ok, "a packet past the end"
        buf.unmap(data)
    stop_all_received(seq, p)
    return f"{seq} packets, {total} bytes, flow ids and every byte checked"


def case_split():
    rx = Gst.parse_launch(
        "daqirisrc device=emu:gi0 header-size=42 filter=all burst-packets=128 ! "
        "appsink name=out sync=false max-buffers=0")
    rx.set_state(Gst.State.PLAYING)
    rx.get_state(5 * Gst.SECOND)
    tx = Gst.parse_launch(
        f"daqiritestsrc num-packets={N} burst-packets=64 packet-size-min=60 "
        "packet-size-max=1500 ! daqirisink device=emu:gi0")
    tx.set_state(Gst.State.PLAYING)
    samples = pull_all(rx, N)
    tx.get_bus().timed_pop_filtered(5 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    seq = 0
    last_ts = 0
    for sample in samples:
        buf = sample.get_buffer()
        meta = GstDaqiri.buffer_get_packet_meta(buf)
        assert meta.header_size == 42 and buf.n_memory() == 2
        ok0, head = buf.peek_memory(0).map(Gst.MapFlags.READ)
        ok1, rest = buf.peek_memory(1).map(Gst.MapFlags.READ)
        assert ok0 and ok1
        for i in range(meta.get_n_packets()):
            ok, pkt = meta.get_packet(i)
            ok2, ho, hl, po, pl = meta.get_segments(i)
            assert ok and ok2 and ho == pkt.offset and hl == min(pkt.length, 42)
            assert hl + pl == pkt.length
            frame = bytes(head.data[ho:ho + hl]) + bytes(rest.data[po:po + pl])
            check_frame(frame, seq)
            assert pkt.timestamp > 0 and pkt.timestamp >= last_ts
            last_ts = pkt.timestamp
            seq += 1
        buf.peek_memory(0).unmap(head)
        buf.peek_memory(1).unmap(rest)
    stop_all_received(seq, tx, rx)
    return f"{seq} packets from two segments, every byte checked, timestamps in order"


def case_frames():
    p = Gst.parse_launch(
        "daqiritestsrc num-packets=800 burst-packets=64 ! daqirireorder seq-offset=336 "
        "seq-bits=32 packets-per-batch=8 payload-offset=46 payload-size=14 ! "
        "appsink name=out sync=false max-buffers=0")
    out = p.get_by_name("out")
    p.set_state(Gst.State.PLAYING)
    frames = 0
    while True:
        sample = out.emit("try-pull-sample", 5 * Gst.SECOND)
        if sample is None:
            break
        info = GstDaqiri.buffer_get_frame_info(sample.get_buffer())
        assert info is not None
        assert info.get_uint64("batch-id") == (True, frames), info.to_string()
        assert info.get_uint("packets") == (True, 8), info.to_string()
        assert info.get_boolean("complete") == (True, True), info.to_string()
        assert info.get_uint("missing") == (True, 0), info.to_string()
        frames += 1
        if frames == 100:
            break
    p.set_state(Gst.State.NULL)
    assert frames == 100, f"{frames} frames"
    return "100 frames: batch id, packets, complete, missing"


def main():
    Gst.init(None)
    passed = failed = 0
    for case in (case_descriptors, case_split, case_frames):
        try:
            what = case()
            print(f"PASS {case.__name__}: {what}")
            passed += 1
        except AssertionError as e:
            print(f"FAIL {case.__name__}: {e}")
            failed += 1
    print(f"gi-python: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
