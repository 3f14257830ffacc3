#!/usr/bin/env python3
"""Redundant paths (SMPTE ST 2022-7 style): one stream sent twice, over two paths that each
lose every tenth packet at different places, merged by one daqirireorder: the first copy of
each packet wins, the second is counted; every frame comes out complete although neither
path alone delivers one.

    daqiritestsrc ! tee ! daqirisink emu:pa  ->  daqirisrc emu:ra,loss=10    \\
                      ! daqirisink emu:pb  ->  daqirisrc emu:rb,loss=10+5  -> funnel
        -> daqirireorder window=64 ! appsink     (prints what came out)

With real networks: two daqirisrc on the two interfaces (afpacket:eth1 and afpacket:eth2,
or mlx5 ports) into the funnel; packets-per-batch x window must cover the paths' skew.
From a build tree run with
    GI_TYPELIB_PATH=build/gst LD_LIBRARY_PATH=build/gst GST_PLUGIN_PATH_1_0=build/gst
usage: pipelines/redundant-paths.py [FRAMES (default 200)]
"""
import sys
import time

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstDaqiri", "1.0")
from gi.repository import Gst, GstDaqiri  # noqa: E402

PPB = 256


def main():
    frames = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    Gst.init(None)
    rx = Gst.parse_launch(
        "funnel name=f ! daqirireorder name=r seq-offset=336 seq-bits=32 "
        f"packets-per-batch={PPB} payload-offset=46 payload-size=14 window=64 ! "
        "appsink name=out sync=false max-buffers=0 "
        "daqirisrc device=emu:ra,loss=10 filter=all ! f. "
        "daqirisrc device=emu:rb,loss=10+5 filter=all ! f.")
    rx.set_state(Gst.State.PLAYING)
    rx.get_state(5 * Gst.SECOND)
    tx = Gst.parse_launch(
        f"daqiritestsrc num-packets={frames * PPB} burst-packets=32 rate=200000 ! tee name=t "
        "! queue ! daqirisink device=emu:pa,peer=ra t. ! queue ! daqirisink device=emu:pb,peer=rb")
    tx.set_state(Gst.State.PLAYING)
    tx.get_bus().timed_pop_filtered(60 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    time.sleep(0.5)  # the last packets reach the receivers; EOS then flushes the window
    rx.send_event(Gst.Event.new_eos())
    out = rx.get_by_name("out")
    got = complete = 0
    while (sample := out.emit("try-pull-sample", 3 * Gst.SECOND)) is not None:
        info = GstDaqiri.buffer_get_frame_info(sample.get_buffer())
        got += 1
        complete += info.get_boolean("complete")[1]
    st = rx.get_by_name("r").get_property("stats")
    print(f"{got} frames of {frames}, {complete} complete; packets missing "
          f"{st.get_uint64('missing')[1]}, second copies {st.get_uint64('duplicates')[1]} "
          f"(+{st.get_uint64('late')[1]} after their frame went out)")
    tx.set_state(Gst.State.NULL)
    rx.set_state(Gst.State.NULL)


if __name__ == "__main__":
    main()
