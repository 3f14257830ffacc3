/* End to end over the emulated ConnectX, in one process (emulated ports are per process),
 * checking what only the emulator shows: the port's own counters and its line-rate model.
 * The scenario every engine runs is test-e2e-device.c (tests/e2e).
 *
 *   daqiritestsrc ! daqirisink device=emu:NAME   ->   daqirisrc device=emu:NAME ! appsink
 *
 * The emulated cable loops a port's TX to its own RX, or to another port's (peer=).
 * Every byte, sequence number and flow id is checked; timestamps against the
 * emulator's line-rate model; drops in both elements' stats and in the port's own
 * counters. Also: forwarding between two cabled ports, a downstream that holds every
 * buffer until the ring runs dry, 200 state cycles under traffic, the port's generator,
 * and daqirisink's pool of TX slots driven by hand (frames written in place, no copy).
 *
 * The plugin is linked into this program and registered statically, so that the test
 * reads the very ports the elements drive (emu_port_lookup, counters). No root needed.
 */
#include "config.h"

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/app/gstappsink.h>
#include <gst/daqiri/daqiri.h>
#include <gst/daqiri/daqiritestpacket.h>

#include "emu.h"
#include "mlx5-dma.h"
#include "dq-receiver.h"
#include "gstdaqiritxpool.h"
#include "dq-check-linked.h"
#include "dq-check-suite.h"

#include <string.h>
#include <unistd.h>

#define N_FLOWS DQ_E2E_N_FLOWS


static EmuPort *
port_lookup (const gchar *name)
{
  EmuPort *port = emu_port_lookup (name);
  fail_unless (port != NULL, "emulated port %s is not open", name);
  return port;
}

/* nothing lost anywhere on the port: every frame that arrived went into an RQ */
static void
assert_port_clean (EmuPort *port, guint64 rx_packets, guint64 tx_packets)
{
  EmuCounters c;
  fail_unless (emu_port_wait_idle (port, 5 * GST_SECOND));
  emu_port_counters (port, &c);
  fail_unless_equals_uint64 (c.rx_packets_phy, rx_packets);
  fail_unless_equals_uint64 (c.rx_packets, rx_packets);
  fail_unless_equals_uint64 (c.tx_packets, tx_packets);
  fail_unless_equals_uint64 (c.rx_out_of_buffer, 0);
  fail_unless_equals_uint64 (c.rx_steer_miss, 0);
  fail_unless_equals_uint64 (c.rx_oversize, 0);
  fail_unless_equals_uint64 (c.rx_cq_overruns, 0);
  fail_unless_equals_uint64 (c.rx_cqe_errors, 0);
  fail_unless_equals_uint64 (c.tx_cqe_errors, 0);
  fail_unless_equals_uint64 (c.tx_no_link, 0);
  fail_unless_equals_uint64 (c.iommu_faults, 0);
  fail_unless_equals_uint64 (c.doorbell_errors, 0);
}

/* Stops a pipeline and drops it. */
static void
stop_pipeline (GstElement *pipeline)
{
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
}

/* n packets of 60..1500 bytes in N_FLOWS flows, 64 a burst, sent to device by
 * daqiritestsrc ! daqirisink: the sink's stats (run_testsrc) */
static GstStructure *
send_mixed (guint n, const gchar *device)
{
  return run_testsrc (n,
      "burst-packets=64 packet-size-min=60 packet-size-max=1500 n-flows=" G_STRINGIFY (N_FLOWS),
      device);
}

/* Starts r (n packets, in order) on device, 256 packets a burst, with the line-rate model
 * of its emulated port port_name (*port, emu_port_unref it) checking every timestamp;
 * returns the receiving pipeline (receiver_pipeline_free). */
static GstElement *
model_receiver (Receiver *r, guint n, const gchar *device, const gchar *port_name, EmuPort **port)
{
  GstElement *rx = ordered_receiver (r, n, device, "burst-packets=256");
  *port = port_lookup (port_name);
  r->model = TRUE;
  r->freq_hz = emu_port_freq_hz (*port);
  r->rate_bps = emu_port_rate_bps (*port);
  r->overhead = 24;
  return rx;
}

/* The stats of a daqirisink that sent `packets` frames of `bytes` bytes in all without
 * an error or a malformed buffer, in_place of them written in place and `copies` copied. */
static void
assert_sink_sent (
    GstStructure *stats, guint64 packets, guint64 bytes, guint64 in_place, guint64 copies)
{
  fail_unless_equals_uint64 (stat_u64 (stats, "packets"), packets);
  fail_unless_equals_uint64 (stat_u64 (stats, "bytes"), bytes);
  fail_unless_equals_uint64 (stat_u64 (stats, "errors"), 0);
  fail_unless_equals_uint64 (stat_u64 (stats, "malformed"), 0);
  fail_unless_equals_uint64 (stat_u64 (stats, "in-place"), in_place);
  fail_unless_equals_uint64 (stat_u64 (stats, "copies"), copies);
}

/* ---- the tests ---- */

/* 1 000 000 packets of 60..1500 bytes in 4 flows, daqiritestsrc ! daqirisink ->
 * daqirisrc, on one port looped back at 25 Gb/s: every byte, every sequence number in
 * order, every flow id, no drop anywhere, every frame written in place by the source
 * (no copy in the sink), and every timestamp as the line-rate model says. */
GST_START_TEST (test_loopback_million)
{
  const guint n = 1000000;
  const gchar *device = "emu:loop,rate=25g";
  Receiver r;
  EmuPort *port;
  GstElement *rx = model_receiver (&r, n, device, "loop", &port);
  fail_unless_equals_uint64 (r.rate_bps, G_GUINT64_CONSTANT (25000000000));
  fail_unless_equals_uint64 (r.freq_hz, G_GUINT64_CONSTANT (1000000000));

  gint64 t0 = g_get_monotonic_time ();
  GstStructure *tx = send_mixed (n, device);
  assert_all_received (&r, rx, n);
  gint64 t1 = g_get_monotonic_time ();

  guint64 bytes = test_packet_bytes (n, 60, 1500);
  fail_unless_equals_uint64 (r.bytes, bytes);
  assert_sink_sent (tx, n, bytes, n, 0);
  gst_structure_free (tx);

  assert_port_clean (port, n, n);
  EmuCounters c;
  emu_port_counters (port, &c);
  fail_unless_equals_uint64 (c.tx_bytes, bytes);
  fail_unless_equals_uint64 (c.rx_bytes, bytes);
  /* pause: a full RQ held the sender back instead of dropping */

  /* the line-rate model: no frame earlier than the wire allows, and the frames of each
   * back-to-back train exactly where the formula puts them (a doorbell posts 64 WQEs:
   * most frames are inside a train) */
  g_printerr ("loopback: %u packets in %.2f s, %" G_GUINT64_FORMAT " trains, %" G_GUINT64_FORMAT
              " packets timed by the formula\n",
      n, (t1 - t0) / 1e6, r.trains, r.in_train);
  fail_unless_equals_uint64 (r.model_early, 0);
  fail_unless_equals_uint64 (r.trains + r.in_train, n);
  fail_unless (r.in_train >= n / 2,
      "only %" G_GUINT64_FORMAT " of %u packets inside a "
      "train",
      r.in_train, n);

  emu_port_unref (port);
  receiver_pipeline_free (&r, rx);
}

GST_END_TEST;

/* The line-rate model on a train the test builds itself, at 100 Gb/s and the defaults:
 * 576-byte frames are 48 ns apart (4800 bits), exactly. */
GST_START_TEST (test_line_rate_576)
{
  const guint n = 20000;
  Receiver r;
  EmuPort *port;
  GstElement *rx = model_receiver (&r, n, "emu:rate576", "rate576", &port);

  GstStructure *tx = run_testsrc (n,
      "burst-packets=128 packet-size-min=576 packet-size-max=576 n-flows=" G_STRINGIFY (N_FLOWS),
      "emu:rate576");
  gst_structure_free (tx);
  assert_all_received (&r, rx, n);
  assert_port_clean (port, n, n);
  fail_unless_equals_uint64 (r.model_early, 0);
  fail_unless (r.in_train >= n / 2);
  /* with one constant frame size every gap inside a train is 48 ns: checked by the
   * formula above (floor (k * 4800 * 10^9 / 10^11) = 48 k) */
  emu_port_unref (port);
  receiver_pipeline_free (&r, rx);
}

GST_END_TEST;

/* daqirisrc ! daqirisink forwards every packet unchanged between two cabled ports:
 * testsrc -> [fwa TX => fwb RX] -> daqirisrc ! daqirisink -> [fwb TX => fwa RX] -> checker */
GST_START_TEST (test_forward_unchanged)
{
  const guint n = 200000;
  const gchar *dev_a = "emu:fwa,peer=fwb";
  const gchar *dev_b = "emu:fwb,peer=fwa";
  Receiver r;
  GstElement *rx = ordered_receiver (&r, n, dev_a, NULL);

  GstElement *fw =
      dq_check_launch ("daqirisrc name=src device=%s ! daqirisink name=tx device=%s", dev_b, dev_b);
  play (fw);

  GstStructure *tx = send_mixed (n, dev_a);
  fail_unless_equals_uint64 (stat_u64 (tx, "in-place"), n);
  gst_structure_free (tx);

  assert_all_received (&r, rx, n);
  guint64 bytes = test_packet_bytes (n, 60, 1500);
  fail_unless_equals_uint64 (r.bytes, bytes);
  GstStructure *fs = element_stats (fw, "src");
  GstStructure *ft = element_stats (fw, "tx");
  fail_unless_equals_uint64 (stat_u64 (fs, "packets"), n);
  fail_unless_equals_uint64 (stat_u64 (fs, "drops"), 0);
  fail_unless_equals_uint64 (stat_u64 (fs, "bytes"), bytes);
  /* ring memory of daqirisrc is not a TX slot: the forwarder copies */
  assert_sink_sent (ft, n, bytes, 0, n);
  gst_structure_free (fs);
  gst_structure_free (ft);

  EmuPort *a = port_lookup ("fwa"), *b = port_lookup ("fwb");
  assert_port_clean (a, n, n);
  assert_port_clean (b, n, n);
  emu_port_unref (a);
  emu_port_unref (b);

  stop_pipeline (fw);
  receiver_pipeline_free (&r, rx);
}

GST_END_TEST;

/* A downstream that holds every buffer: the ring runs dry, the emulated NIC drops and
 * counts (no pause on this port), the element's stats and the port's counters agree
 * (sent = received + dropped), a warning is posted, and once the buffers are released
 * the stream comes back. */
GST_START_TEST (test_held_buffers_exhaust_ring)
{
  const guint n = 20000;
  const gchar *device = "emu:held,pause=off";
  Receiver r;
  receiver_init (&r, n);
  r.hold = TRUE;
  GstElement *rx = receiver_pipeline (&r, device, "ring-size=1048576 burst-packets=64");
  EmuPort *port = port_lookup ("held");

  GstStructure *tx = run_testsrc (
      n, "burst-packets=32 packet-size-min=1000 packet-size-max=1000 n-flows=1", device);
  fail_unless_equals_uint64 (stat_u64 (tx, "packets"), n);
  gst_structure_free (tx);
  fail_unless (emu_port_wait_idle (port, 5 * GST_SECOND));
  receiver_wait (&r, n, 300);

  GstStructure *s = element_stats (rx, "src");
  guint64 packets = stat_u64 (s, "packets");
  guint64 drops = stat_u64 (s, "drops-ring-full");
  gst_structure_free (s);
  EmuCounters c;
  emu_port_counters (port, &c);
  /* 1 MiB of 64-byte strides holds 1024 frames of 1000 bytes (16 strides each), far
   * fewer than were sent */
  fail_unless (packets <= 1024, "ring held %" G_GUINT64_FORMAT " packets", packets);
  fail_unless (packets > 0);
  fail_unless_equals_uint64 (packets + drops, n);
  fail_unless_equals_uint64 (c.rx_out_of_buffer, drops);
  fail_unless_equals_uint64 (c.rx_packets, packets);
  fail_unless_equals_uint64 (c.rx_packets_phy, n);
  fail_unless_equals_uint64 (c.tx_packets, n);
  fail_unless_equals_int (receiver_wait (&r, packets, 1000), packets);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  /* the ones that made it are the first ones, in order */
  for (guint i = 0; i < packets; i++)
    fail_unless (r.seen[i] == 1, "packet %u missing", i);

  assert_warning_posted (rx, "ring was full");

  /* release everything: the stream recovers, nothing more is dropped */
  g_mutex_lock (&r.lock);
  r.hold = FALSE;
  g_ptr_array_set_size (r.held, 0);
  receiver_reset (&r);
  g_mutex_unlock (&r.lock);
  tx = run_testsrc (2000,
      "burst-packets=32 packet-size-min=1000 packet-size-max=1000 n-flows=1 rate=20000", device);
  gst_structure_free (tx);
  fail_unless_equals_int (receiver_wait (&r, 2000, 3000), 2000);
  fail_unless_equals_int (r.bad, 0);
  for (guint i = 0; i < 2000; i++)
    fail_unless (r.seen[i] == 1, "packet %u missing after recovery", i);
  s = element_stats (rx, "src");
  fail_unless_equals_uint64 (stat_u64 (s, "drops-ring-full"), drops);
  fail_unless_equals_uint64 (stat_u64 (s, "packets"), packets + 2000);
  gst_structure_free (s);
  emu_port_counters (port, &c);
  fail_unless_equals_uint64 (c.rx_out_of_buffer, drops);

  emu_port_unref (port);
  receiver_pipeline_free (&r, rx);
}

GST_END_TEST;

/* 200 PLAYING -> NULL -> PLAYING cycles of the receiver under traffic (the sender
 * cycling too, every tenth time), the last buffers of each run outliving their element:
 * no crash, no leak, every run receives intact packets, the held buffers read intact
 * after their element stopped.
 *
 * The held buffers are let go before the element starts again: while they live, the
 * stopped element's receive queue lives too and keeps its place in the port's steering
 * under the element's group id, so the restarted element would find its queue index
 * taken (daqirisrc reuses one group id across runs; see the report). */
GST_START_TEST (test_state_cycles_under_traffic)
{
  const gchar *device = "emu:cyc";
  GstElement *sender = dq_check_launch ("daqiritestsrc rate=50000 burst-packets=16 "
                                        "packet-size-min=60 packet-size-max=1500 n-flows=%d ! "
                                        "daqirisink name=tx device=%s",
      N_FLOWS, device);
  play (sender);

  Receiver r;
  receiver_init (&r, G_MAXUINT32 / 2);
  r.hold = TRUE;
  GstElement *rx = receiver_pipeline_new (&r, device, "ring-size=262144");

  for (guint cycle = 0; cycle < 200; cycle++) {
    guint before = r.buffers;
    if (cycle % 10 == 5) {
      fail_unless (gst_element_set_state (sender, GST_STATE_NULL) == GST_STATE_CHANGE_SUCCESS);
      play (sender);
    }
    play (rx);
    /* keep the newest few buffers across the NULL transition, free the rest */
    gboolean got = receiver_wait_buffer (&r, before, 3000, 4);
    fail_unless (got, "cycle %u received nothing", cycle);
    fail_unless (gst_element_set_state (rx, GST_STATE_NULL) == GST_STATE_CHANGE_SUCCESS);

    /* the held buffers still read fine after their element stopped */
    g_mutex_lock (&r.lock);
    fail_unless (r.held->len > 0);
    receiver_assert_held_intact (&r);
    g_ptr_array_set_size (r.held, 0);
    g_mutex_unlock (&r.lock);
  }
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.wrong_flow, 0);
  fail_unless (r.received > 200);

  GstStructure *tx = element_stats (sender, "tx");
  fail_unless (stat_u64 (tx, "packets") > 0);
  fail_unless_equals_uint64 (stat_u64 (tx, "copies"), 0);
  fail_unless_equals_uint64 (stat_u64 (tx, "errors"), 0);
  gst_structure_free (tx);
  stop_pipeline (sender);
  gst_object_unref (rx);
  g_ptr_array_set_size (r.held, 0);
  receiver_clear (&r);
}

GST_END_TEST;

/* 30 PLAYING -> PAUSED -> PLAYING cycles with the port's generator running: bursts keep
 * coming after every resume, however quickly it follows the pause (GStreamer 1.24 and later
 * unlock a live source's create() on pause). */
static GstFlowReturn
count_sample (GstAppSink *sink, gpointer user_data)
{
  GstSample *sample = gst_app_sink_pull_sample (sink);
  g_atomic_int_inc ((gint *) user_data);
  gst_sample_unref (sample);
  return GST_FLOW_OK;
}

GST_START_TEST (test_pause_resume_under_traffic)
{
  GError *error = NULL;
  GstElement *rx = gst_parse_launch ("daqirisrc device=emu:pause,gen=64,gen-rate=2m "
                                     "burst-packets=64 ! appsink name=sink sync=false",
      &error);
  fail_unless (rx != NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (rx), "sink");
  gint samples = 0;
  GstAppSinkCallbacks cb = { .new_sample = count_sample };
  gst_app_sink_set_callbacks (GST_APP_SINK (sink), &cb, &samples, NULL);
  play (rx);
  for (guint cycle = 0; cycle < 30; cycle++) {
    fail_unless (gst_element_set_state (rx, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE);
    if (cycle % 2)
      g_usleep (2000); /* every other resume follows the pause at once */
    fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
    gint before = g_atomic_int_get (&samples);
    gint64 deadline = g_get_monotonic_time () + 3 * G_USEC_PER_SEC;
    while (g_atomic_int_get (&samples) < before + 4 && g_get_monotonic_time () < deadline)
      g_usleep (1000);
    fail_unless (g_atomic_int_get (&samples) >= before + 4,
        "cycle %u: %d bursts in 3 s after resuming", cycle, g_atomic_int_get (&samples) - before);
  }
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (rx);
}

GST_END_TEST;

/* ---- the port's generator, set up by the device string ---- */

typedef struct {
  guint received;
  guint bad;
  guint wrong_mark;
  guint late; /* timestamp not exactly 1/rate after the one before */
  guint64 first_ts, last_ts;
  guint64 period_ns;
} GenCheck;

/* emu.h: Ethernet/IPv4/UDP from 10.0.0.1:1000 to 10.0.0.2:5000, the sequence number
 * big-endian at offset 42, then byte i of the frame = (k + i) & 0xff (under the receiver's
 * lock) */
static void
check_gen_packet (Receiver *r, const GstDaqiriPacket *p, const guint8 *f, gpointer user_data)
{
  GenCheck *g = user_data;
  guint32 k = g->received;
  gboolean ok = p->length == 128 && GST_READ_UINT32_BE (f + 42) == k &&
      GST_READ_UINT16_BE (f + 12) == 0x0800 && f[23] == 17 && GST_READ_UINT16_BE (f + 36) == 5000 &&
      (p->flags & GST_DAQIRI_PACKET_FLAG_CSUM_OK) != 0;
  for (guint b = 46; ok && b < p->length; b++)
    ok = f[b] == (guint8) (k + b);
  g->bad += !ok;
  g->wrong_mark += p->flow_id != 77;
  if (g->received == 0)
    g->first_ts = p->timestamp;
  else if (p->timestamp != g->last_ts + g->period_ns)
    g->late++;
  g->last_ts = p->timestamp;
  g->received++;
  r->received = g->received;
}

/* 200 generator frames of 200 bytes (daqirisrc `props`) through daqirireorder: batches of 4
 * packets, 18 payload bytes each; the frames' bytes concatenated, *frames how many */
static GByteArray *
reorder_frames (const gchar *props, guint *frames)
{
  static guint serial;
  GstElement *p =
      dq_check_launch ("daqirisrc device=emu:hsr%u,gen=200,gen-count=200,gen-lossless=on "
                       "%s ! daqirireorder seq-offset=336 seq-bits=32 "
                       "packets-per-batch=4 payload-offset=46 payload-size=18 ! "
                       "appsink name=out sync=false",
          serial++, props);
  GstElement *out = gst_bin_get_by_name (GST_BIN (p), "out");
  play (p);
  GByteArray *bytes = g_byte_array_new ();
  *frames = 0;
  GstSample *sample;
  while (*frames < 50 &&
      (sample = gst_app_sink_try_pull_sample (GST_APP_SINK (out), 5 * GST_SECOND)) != NULL) {
    GstMapInfo map;
    GstBuffer *buf = gst_sample_get_buffer (sample);
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    g_byte_array_append (bytes, map.data, (guint) map.size);
    gst_buffer_unmap (buf, &map);
    gst_sample_unref (sample);
    (*frames)++;
  }
  gst_object_unref (out);
  stop_pipeline (p);
  return bytes;
}

/* header-size=42: buffers of two memories, the first 42 bytes of each frame (Ethernet,
 * IPv4, UDP) in the first, the rest in the second, every byte as emu.h's generator writes
 * it; daqirireorder makes the same frames of them as of whole packets, and says so when its
 * fields lie in the headers. */
GST_START_TEST (test_header_split)
{
  const guint n = 3000;
  GError *error = NULL;
  GstElement *p = gst_parse_launch ("daqirisrc name=src "
                                    "device=emu:hs1,gen=200,gen-count=3000,gen-lossless=on "
                                    "header-size=42 burst-packets=64 ! "
                                    "appsink name=sink sync=false",
      &error);
  fail_unless (p != NULL, "%s", error ? error->message : "");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (p), "sink");
  play (p);
  guint k = 0, bad = 0;
  while (k < n) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 5 * GST_SECOND);
    fail_unless (sample != NULL, "no buffer after %u packets", k);
    GstBuffer *buf = gst_sample_get_buffer (sample);
    GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
    fail_unless (meta != NULL);
    fail_unless_equals_int (gst_buffer_n_memory (buf), 2);
    fail_unless_equals_int (meta->header_size, 42);
    fail_unless_equals_int (meta->header_stride, 64);
    fail_unless (meta->payload_stride >= 1518 - 42);
    GstMapInfo hm, pm;
    fail_unless (gst_memory_map (gst_buffer_peek_memory (buf, 0), &hm, GST_MAP_READ));
    fail_unless (gst_memory_map (gst_buffer_peek_memory (buf, 1), &pm, GST_MAP_READ));
    fail_unless (gst_daqiri_packet_meta_validate_split (meta, hm.size, pm.size, NULL));
    for (guint i = 0; i < meta->n_packets; i++, k++) {
      const GstDaqiriPacket *pkt = &meta->packets[i];
      const guint8 *h = hm.data + pkt->offset;
      const guint8 *rest = pm.data + gst_daqiri_packet_payload_offset (meta, pkt);
      gboolean ok = pkt->length == 200 && GST_READ_UINT16_BE (h + 12) == 0x0800 && h[23] == 17 &&
          GST_READ_UINT16_BE (h + 36) == 5000 && GST_READ_UINT32_BE (rest) == k;
      for (guint b = 46; ok && b < 200; b++)
        ok = rest[b - 42] == (guint8) (k + b);
      bad += !ok;
    }
    gst_memory_unmap (gst_buffer_peek_memory (buf, 0), &hm);
    gst_memory_unmap (gst_buffer_peek_memory (buf, 1), &pm);
    gst_sample_unref (sample);
  }
  fail_unless_equals_int (k, n);
  fail_unless_equals_int (bad, 0);
  GstStructure *st = element_stats (p, "src");
  fail_unless_equals_uint64 (stat_u64 (st, "packets"), n);
  fail_unless_equals_uint64 (stat_u64 (st, "bytes"), (guint64) n * 200);
  fail_unless_equals_uint64 (stat_u64 (st, "drops"), 0);
  gst_structure_free (st);
  gst_object_unref (sink);
  stop_pipeline (p);

  /* daqirireorder reads sequence numbers and payloads in the payload memory: the same frames
   * as from whole packets */
  guint nf_split = 0, nf_whole = 0;
  GByteArray *split = reorder_frames ("header-size=42", &nf_split);
  GByteArray *whole = reorder_frames ("", &nf_whole);
  fail_unless_equals_int (nf_split, 50);
  fail_unless_equals_int (nf_whole, 50);
  fail_unless_equals_int (split->len, 50 * 4 * 18);
  fail_unless (memcmp (split->data, whole->data, whole->len) == 0);
  /* payload byte i of packet k is k + 46 + i (emu.h) */
  for (guint pk = 0; pk < 200; pk++)
    for (guint i = 0; i < 18; i++)
      fail_unless_equals_int (split->data[pk * 18 + i], (guint8) (pk + 46 + i));
  g_byte_array_unref (split);
  g_byte_array_unref (whole);

  /* a sequence field inside the headers cannot be read: an error says where it is */
  p = gst_parse_launch ("daqirisrc device=emu:hs3,gen=200,gen-count=100 header-size=64 ! "
                        "daqirireorder seq-offset=336 seq-bits=32 packets-per-batch=4 "
                        "payload-offset=46 payload-size=18 ! fakesink",
      &error);
  fail_unless (p != NULL);
  gst_element_set_state (p, GST_STATE_PLAYING);
  GstMessage *m = gst_bus_timed_pop_filtered (
      GST_ELEMENT_BUS (p), 5 * GST_SECOND, GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  fail_unless (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR);
  GError *e = NULL;
  gchar *debug = NULL;
  gst_message_parse_error (m, &e, &debug);
  fail_unless (strstr (e->message, "must lie past the headers") != NULL, "%s", e->message);
  fail_unless (debug != NULL && strstr (debug, "allowed: header-size <= 42") != NULL, "%s", debug);
  g_error_free (e);
  g_free (debug);
  gst_message_unref (m);
  stop_pipeline (p);
}

GST_END_TEST;

/* gen=128,gen-rate=1m,gen-count=5000: exactly 5000 frames, every byte as emu.h says,
 * marked by the flow rule, one every 1000 ns of port time exactly; bad keys are refused
 * with a message naming what is allowed. */
GST_START_TEST (test_generator_from_device_string)
{
  GenCheck g = { .period_ns = 1000 };
  Receiver r;
  receiver_init (&r, 0);
  GError *error = NULL;
  GstElement *rx =
      gst_parse_launch ("daqirisrc name=src "
                        "device=emu:gen1,gen=128,gen-rate=1m,gen-count=5000 "
                        "flows=\"proto=udp dst-port=5000 mark=77\" ! appsink name=sink sync=false",
          &error);
  fail_unless (rx != NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (rx), "sink");
  receiver_attach_full (&r, sink, check_gen_packet, &g);
  gst_object_unref (sink);
  play (rx);
  EmuPort *port = port_lookup ("gen1");
  receiver_wait (&r, 5000, 5000);
  fail_unless (emu_port_wait_idle (port, 5 * GST_SECOND));
  g_usleep (20000);
  g_mutex_lock (&r.lock);
  fail_unless_equals_int (r.bad, 0); /* every buffer carried a valid packet meta */
  fail_unless_equals_int (g.received, 5000);
  fail_unless_equals_int (g.bad, 0);
  fail_unless_equals_int (g.wrong_mark, 0);
  fail_unless_equals_int (g.late, 0);
  fail_unless_equals_uint64 (g.last_ts - g.first_ts, 4999 * 1000);
  g_mutex_unlock (&r.lock);
  EmuCounters c;
  emu_port_counters (port, &c);
  fail_unless_equals_uint64 (emu_port_generated (port), 5000);
  fail_unless_equals_uint64 (c.rx_packets, 5000);
  fail_unless_equals_uint64 (c.rx_out_of_buffer, 0);
  GstStructure *s = element_stats (rx, "src");
  fail_unless_equals_uint64 (stat_u64 (s, "packets"), 5000);
  fail_unless_equals_uint64 (stat_u64 (s, "bytes"), 5000 * 128);
  gst_structure_free (s);
  emu_port_unref (port);
  receiver_pipeline_free (&r, rx);

  const struct {
    const gchar *device, *message;
  } bad[] = {
    { "emu:genbad,gen=40", "gen=40 is not allowed" },
    { "emu:genbad,gen=1519", "allowed: a frame length of 60 .. 1518" },
    { "emu:genbad,gen=2000,mtu=2000", NULL },
    { "emu:genbad,gen-rate=5", "give its frame length too" },
    { "emu:genbad,gen=64,gen-lossless=maybe", "gen-lossless=maybe is not allowed" },
    { "emu:genbad,gen=64,gen-rate=2g", "gen-rate=2g is not allowed" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    DqPort *port_ok = dq_port_open (bad[i].device, &error);
    if (bad[i].message == NULL) {
      fail_unless (port_ok != NULL, "%s: %s", bad[i].device, error ? error->message : "");
      dq_port_unref (port_ok);
      continue;
    }
    fail_unless (port_ok == NULL, "%s was accepted", bad[i].device);
    fail_unless (
        strstr (error->message, bad[i].message) != NULL, "%s: %s", bad[i].device, error->message);
    g_clear_error (&error);
  }
}

GST_END_TEST;

/* ---- daqirisink's pool of TX slots, driven by hand ---- */

static GstStaticPadTemplate harness_src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static GstHarness *
sink_harness (const gchar *device)
{
  GstElement *sink = gst_element_factory_make ("daqirisink", NULL);
  g_object_set (sink, "device", device, NULL);
  /* a harnessed sink starts at once: configure it first */
  GstHarness *h = gst_harness_new_full (sink, &harness_src_template, "sink", NULL, NULL);
  gst_object_unref (sink);
  gst_harness_set_src_caps_str (h, GST_DAQIRI_PACKETS_MEDIA_TYPE ", max-packet-size=(int)1500");
  return h;
}

static guint64
harness_stat (GstHarness *h, const gchar *field)
{
  GstStructure *s = NULL;
  g_object_get (h->element, "stats", &s, NULL);
  guint64 v = stat_u64 (s, field);
  gst_structure_free (s);
  return v;
}

/* Asks the sink for its pool: none (NULL) on an engine that does not lend slots. */
static GstBufferPool *
query_pool (GstHarness *h, gboolean *has_meta)
{
  GstCaps *caps = gst_caps_from_string (GST_DAQIRI_PACKETS_MEDIA_TYPE);
  GstQuery *q = gst_query_new_allocation (caps, TRUE);
  gst_caps_unref (caps);
  fail_unless (gst_pad_peer_query (h->srcpad, q));
  guint idx;
  *has_meta = gst_query_find_allocation_meta (q, GST_DAQIRI_PACKET_META_API_TYPE, &idx);
  GstBufferPool *pool = NULL;
  if (gst_query_get_n_allocation_pools (q) > 0)
    gst_query_parse_nth_allocation_pool (q, 0, &pool, NULL, NULL, NULL);
  gst_query_unref (q);
  return pool;
}

/* writes test packets first_seq .. into the buffer: packet i at offsets[i] (NULL: at
 * slot i), size `size` */
static void
fill_packets (GstBuffer *buf, guint n, guint32 first_seq, guint size, const guint *offsets)
{
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
  GstDaqiriTestPacketParams params;
  GstMapInfo map;

  gst_daqiri_test_packet_params_init (&params);
  fail_unless (meta != NULL);
  fail_unless (n <= meta->n_packets);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
  for (guint i = 0; i < n; i++) {
    guint off = offsets ? offsets[i] : meta->packets[i].offset;
    fail_unless (off + size <= map.size);
    fail_unless_equals_int (gst_daqiri_test_packet_write (&params, map.data + off, size,
                                first_seq + i, (first_seq + i) % N_FLOWS),
        size);
    meta->packets[i].offset = off;
    meta->packets[i].length = size;
    meta->packets[i].flow_id = (first_seq + i) % N_FLOWS;
  }
  meta->n_packets = n;
  gst_buffer_unmap (buf, &map);
}

/* pushes and waits until the port sent it: the sink's two TX queues (in place, copies)
 * then leave in push order */
static void
push_sent (GstHarness *h, GstBuffer *buf, EmuPort *port)
{
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  fail_unless (emu_port_wait_idle (port, 5 * GST_SECOND));
}

/* fill_packets of n packets from *seq on (size bytes, at offsets), then push_sent; *seq
 * moves past them */
static void
fill_and_send (GstHarness *h, GstBuffer *buf, EmuPort *port, guint32 *seq, guint n, guint size,
    const guint *offsets)
{
  fill_packets (buf, n, *seq, size, offsets);
  *seq += n;
  push_sent (h, buf, port);
}

static GstFlowReturn
acquire_now (GstBufferPool *pool, GstBuffer **buf)
{
  GstBufferPoolAcquireParams params = { .flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT };
  *buf = NULL;
  return gst_buffer_pool_acquire_buffer (pool, buf, &params);
}

/* The pool's protocol: runs of slots described by the meta, one run lent at a time,
 * frames sent in place (no copy), partial runs, frames not where the slots are (copied,
 * still right), a frame the port refuses (the others still sent), slots held back while
 * a sent buffer is still referenced. Every frame is checked at the receiver. */
/* An error completion mid-stream, as a ConnectX has it: the packet it names is lost and
 * counted, the RQ goes to ERR and flushes every posted WQE, daqirisrc's queue recovers it
 * (ERR -> RST -> RDY) and receives on. Every packet is accounted for: delivered (each once,
 * intact) + dropped + errors = sent, and the stats say one error and one recovery. */
GST_START_TEST (test_rx_error_recovery)
{
  const guint n = 40000, skip = 15000;
  const gchar *device = "emu:rxerr";
  Receiver r;
  receiver_init (&r, n);
  GstElement *rx = receiver_pipeline (&r, device, "burst-packets=64");
  EmuPort *port = port_lookup ("rxerr");
  emu_port_fault_rx_error (port, skip, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);

  GstStructure *tx = send_mixed (n, device);
  fail_unless_equals_uint64 (stat_u64 (tx, "packets"), n);
  gst_structure_free (tx);
  fail_unless (emu_port_wait_idle (port, 5 * GST_SECOND));
  receiver_wait (&r, n - 1, 3000);

  GstStructure *s = element_stats (rx, "src");
  guint64 delivered = stat_u64 (s, "packets"), drops = stat_u64 (s, "drops");
  guint64 errors = stat_u64 (s, "errors");
  g_mutex_lock (&r.lock);
  fail_unless_equals_uint64 (r.received, delivered);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  fail_unless_equals_int (r.wrong_flow, 0);
  /* the packet the error named is the one missing */
  fail_unless_equals_int (r.seen[skip], 0);
  g_mutex_unlock (&r.lock);
  fail_unless_equals_uint64 (errors, 1);
  fail_unless_equals_uint64 (stat_u64 (s, "recoveries"), 1);
  fail_unless_equals_uint64 (delivered + drops + errors, n);
  gst_structure_free (s);

  EmuCounters c;
  emu_port_counters (port, &c);
  fail_unless_equals_uint64 (c.rx_cqe_errors, 1);
  fail_unless (c.rx_flushed >= 1, "no WQE was flushed");
  fail_unless_equals_uint64 (c.rx_packets, delivered);
  fail_unless_equals_uint64 (c.rx_out_of_buffer, drops);

  emu_port_unref (port);
  receiver_pipeline_free (&r, rx);
}

GST_END_TEST;

/* The same on the send side: an error completion mid-stream puts the SQ in ERR, the WQEs
 * posted after it are flushed unsent, daqirisink's queue recovers it and sends on. Every
 * frame is accounted for: received (each once, intact) + the sink's errors (the frames of
 * the refused WQE and of the flushed ones; an eMPW WQE carries several) = sent. */
GST_START_TEST (test_tx_error_recovery)
{
  const guint n = 30000, skip = 12000;
  const gchar *device = "emu:txerr";
  Receiver r;
  receiver_init (&r, n);
  GstElement *rx = receiver_pipeline (&r, device, "burst-packets=64");
  EmuPort *port = port_lookup ("txerr");
  emu_port_fault_tx_error (port, skip, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);

  GstStructure *tx = send_mixed (n, device);
  fail_unless (emu_port_wait_idle (port, 5 * GST_SECOND));
  EmuCounters c;
  emu_port_counters (port, &c);
  fail_unless_equals_uint64 (c.tx_cqe_errors, 1);
  fail_unless (c.tx_flushed >= 1, "no WQE was flushed");
  guint64 errors = stat_u64 (tx, "errors");
  fail_unless (errors >= 1 + c.tx_flushed,
      "%" G_GUINT64_FORMAT " frames lost in %" G_GUINT64_FORMAT " WQEs", errors, 1 + c.tx_flushed);
  receiver_wait (&r, (guint) (n - errors), 3000);
  g_mutex_lock (&r.lock);
  fail_unless_equals_uint64 (r.received + errors, n);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  fail_unless_equals_int (r.seen[skip], 0); /* the refused frame */
  g_mutex_unlock (&r.lock);
  fail_unless_equals_uint64 (c.tx_packets, n - errors);
  gst_structure_free (tx);

  emu_port_unref (port);
  receiver_pipeline_free (&r, rx);
}

GST_END_TEST;

GST_START_TEST (test_sink_slot_pool)
{
  const gchar *device = "emu:pool";
  Receiver r;
  GstElement *rx = ordered_receiver (&r, 100000, device, "burst-timeout=100000");
  GstHarness *h = sink_harness (device);
  EmuPort *port = port_lookup ("pool");
  guint32 seq = 0;
  GstBuffer *buf, *other;

  gboolean has_meta = FALSE;
  GstBufferPool *pool = query_pool (h, &has_meta);
  fail_unless (has_meta);
  fail_unless (pool != NULL, "daqirisink on emu proposed no pool");
  fail_unless (gst_buffer_pool_has_option (pool, GST_BUFFER_POOL_OPTION_DAQIRI_TX_SLOTS));

  /* a frame size larger than a slot is refused; 16 frames of up to 1500 bytes are fine */
  GstStructure *config = gst_buffer_pool_get_config (pool);
  gst_daqiri_tx_pool_config_set_burst (config, 16, 65535);
  fail_if (gst_buffer_pool_set_config (pool, config));
  config = gst_buffer_pool_get_config (pool);
  gst_daqiri_tx_pool_config_set_burst (config, 16, 1500);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));

  /* a run: 16 slots, each at i * stride with its capacity, one memory over them */
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf, NULL), GST_FLOW_OK);
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->n_packets, 16);
  fail_unless_equals_int (gst_buffer_n_memory (buf), 1);
  GstMemory *mem = gst_buffer_peek_memory (buf, 0);
  fail_unless (gst_is_daqiri_tx_slot_memory (mem));
  const DqTxSlots *run = gst_daqiri_tx_slot_memory_run (mem);
  guint stride = run->stride, slot_size = run->slot_size;
  fail_unless (slot_size >= 1500);
  fail_unless (stride >= slot_size);
  for (guint i = 0; i < 16; i++) {
    fail_unless_equals_int (meta->packets[i].offset, i * stride);
    fail_unless_equals_int (meta->packets[i].length, slot_size);
  }
  /* one run at a time */
  fail_unless_equals_int (acquire_now (pool, &other), GST_FLOW_EOS);

  /* written in place and sent: no copy */
  fill_and_send (h, buf, port, &seq, 16, 1000, NULL);
  fail_unless_equals_uint64 (harness_stat (h, "in-place"), 16);
  fail_unless_equals_uint64 (harness_stat (h, "copies"), 0);

  /* a partial run: 5 frames of 16 slots; the other 11 go back */
  fail_unless_equals_int (acquire_now (pool, &buf), GST_FLOW_OK);
  fill_and_send (h, buf, port, &seq, 5, 700, NULL);
  fail_unless_equals_uint64 (harness_stat (h, "in-place"), 21);

  /* frames packed 64-byte aligned instead of one per slot: copied, still right */
  fail_unless_equals_int (acquire_now (pool, &buf), GST_FLOW_OK);
  guint packed[8];
  for (guint i = 0; i < 8; i++)
    packed[i] = i * 128;
  fill_and_send (h, buf, port, &seq, 8, 100, packed);
  fail_unless_equals_uint64 (harness_stat (h, "in-place"), 21);
  fail_unless_equals_uint64 (harness_stat (h, "copies"), 8);

  /* a frame of 10 bytes (a runt the port refuses) among good ones: the good ones are
   * sent in order, the runt counted as an error */
  fail_unless_equals_int (acquire_now (pool, &buf), GST_FLOW_OK);
  fill_packets (buf, 6, seq, 200, NULL);
  meta = gst_buffer_get_daqiri_packet_meta (buf);
  meta->packets[2].length = 10;
  push_sent (h, buf, port);
  fail_unless_equals_uint64 (harness_stat (h, "errors"), 1);
  fail_unless_equals_uint64 (harness_stat (h, "in-place"), 27);
  guint32 runt = seq + 2;
  seq += 6;

  /* a sent buffer still referenced holds its slots: runs go round the ring up to it,
   * then acquiring waits (here: DONTWAIT says EOS) until it is freed */
  fail_unless_equals_int (acquire_now (pool, &buf), GST_FLOW_OK);
  fill_packets (buf, 16, seq, 300, NULL);
  seq += 16;
  GstBuffer *kept = gst_buffer_ref (buf);
  GstMapInfo kmap;
  push_sent (h, buf, port);
  guint runs = 0;
  for (;;) {
    GstFlowReturn ret = acquire_now (pool, &buf);
    if (ret == GST_FLOW_EOS)
      break;
    fail_unless_equals_int (ret, GST_FLOW_OK);
    meta = gst_buffer_get_daqiri_packet_meta (buf);
    guint k = meta->n_packets;
    fill_and_send (h, buf, port, &seq, k, 300, NULL);
    fail_unless (++runs < 100000, "the kept buffer's slots were never reached");
  }
  fail_unless (runs >= 2, "acquiring stopped after %u runs", runs);
  /* the kept buffer still holds its 16 frames, untouched */
  fail_unless (gst_buffer_map (kept, &kmap, GST_MAP_READ));
  meta = gst_buffer_get_daqiri_packet_meta (kept);
  for (guint i = 0; i < meta->n_packets; i++)
    fail_unless (gst_daqiri_test_packet_check (
        NULL, kmap.data + meta->packets[i].offset, meta->packets[i].length, NULL, NULL));
  gst_buffer_unmap (kept, &kmap);
  gst_buffer_unref (kept);
  fail_unless_equals_int (acquire_now (pool, &buf), GST_FLOW_OK);
  fill_and_send (h, buf, port, &seq, 1, 60, NULL);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  /* every frame but the runt arrived, intact and in order */
  fail_unless_equals_int (receiver_wait (&r, seq - 1, 3000), seq - 1);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  fail_unless_equals_int (r.wrong_flow, 0);
  for (guint32 i = 0; i < seq; i++)
    fail_unless_equals_int (r.seen[i], i == runt ? 0 : 1);
  /* the runt broke the order once */
  fail_unless_equals_int (r.out_of_order, 1);
  fail_unless_equals_uint64 (harness_stat (h, "packets"), seq - 1);
  fail_unless_equals_uint64 (harness_stat (h, "copies"), 8);
  fail_unless_equals_uint64 (harness_stat (h, "in-place"), seq - 8);

  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  emu_port_unref (port);
  gst_harness_teardown (h);
  receiver_pipeline_free (&r, rx);
}

GST_END_TEST;

static gpointer
acquire_thread (gpointer data)
{
  GstBuffer *b = NULL;
  GstFlowReturn ret = gst_buffer_pool_acquire_buffer (data, &b, NULL);
  if (b != NULL)
    gst_buffer_unref (b);
  return GINT_TO_POINTER (ret);
}

/* A pool acquisition waiting for slots ends when the pool flushes and when the sink
 * stops; buffers the producer still holds after the sink stopped are harmless. */
GST_START_TEST (test_sink_slot_pool_flushing)
{
  GstHarness *h = sink_harness ("emu:poolflush,peer=none");
  gboolean has_meta;
  GstBufferPool *pool = query_pool (h, &has_meta);
  fail_unless (pool != NULL);
  GstStructure *config = gst_buffer_pool_get_config (pool);
  gst_daqiri_tx_pool_config_set_burst (config, 8, 100);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));

  GstBuffer *held;
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &held, NULL), GST_FLOW_OK);
  /* a second acquisition waits for the first run; flushing ends the wait */
  GThread *t = g_thread_new ("acquire", acquire_thread, pool);
  g_usleep (50000);
  gst_buffer_pool_set_flushing (pool, TRUE);
  fail_unless_equals_int (GPOINTER_TO_INT (g_thread_join (t)), GST_FLOW_FLUSHING);
  gst_buffer_pool_set_flushing (pool, FALSE);

  /* the sink stops while the producer holds a run: no new run, the old one is given
   * back when its buffer goes */
  gst_element_set_state (h->element, GST_STATE_NULL);
  GstBuffer *late = NULL;
  gst_buffer_unref (held);
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &late, NULL), GST_FLOW_FLUSHING);
  fail_unless (late == NULL);
  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
e2e_emu_suite (void)
{
  TCase *tc;
  Suite *s = dq_check_suite_new ("daqiri-e2e-emu", "emu", 120, &tc);

  tcase_add_test (tc, test_loopback_million);
  tcase_add_test (tc, test_line_rate_576);
  tcase_add_test (tc, test_forward_unchanged);
  tcase_add_test (tc, test_held_buffers_exhaust_ring);
  tcase_add_test (tc, test_state_cycles_under_traffic);
  tcase_add_test (tc, test_pause_resume_under_traffic);
  tcase_add_test (tc, test_generator_from_device_string);
  tcase_add_test (tc, test_header_split);
  tcase_add_test (tc, test_rx_error_recovery);
  tcase_add_test (tc, test_tx_error_recovery);
  tcase_add_test (tc, test_sink_slot_pool);
  tcase_add_test (tc, test_sink_slot_pool_flushing);
  return s;
}

DQ_CHECK_LINKED_MAIN (e2e_emu_suite, "e2e-emu");
