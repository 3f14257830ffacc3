/* daqirisink's transmit side over the emulated ConnectX: schedule=pts, rate, and frames
 * the port does not send. Pipelines send and receive on one looped-back port:
 *
 *   appsrc (bursts with PTS) ! daqirisink device=emu:N,clock=rt schedule=pts
 *   daqirisrc device=emu:N,clock=rt ! appsink
 *
 * The receive timestamps are the emulator's departure times (its line-rate model), so
 * every packet's departure is compared with the time it was asked for: the buffer's PTS
 * on the pipeline clock plus the packet's offset in GstDaqiriPacketMeta. With daqirisrc's
 * clock (the port's) the mapping is exact; with the system clock it is a reading of both
 * clocks. Late packets (dropped and sent), held packets, the refusal without a real-time
 * clock, and pacing at 1 Gb/s from daqiritestsrc are checked in the element's stats.
 * Frames longer than the port's MTU allows or shorter than an Ethernet header are not sent,
 * counted by reason, and the first of each warned about with its size and the limit; the
 * frames around them arrive, and the port's send queue never sees them (no error
 * completion stops it).
 */
#include "config.h"

#include <gst/check/gstcheck.h>
#include <gst/app/gstappsrc.h>
#include <gst/base/gstbasesink.h>
#include <gst/daqiri/daqiri.h>
#include <gst/daqiri/daqiritestpacket.h>

#include "emu.h"
#include "dq-receiver.h"
#include "dq-check-suite.h"
#include "gstdaqiritxmem.h"
#include "dq-check-linked.h"

#include <string.h>


#define FRAME 300
#define PER_BURST 10
#define SPACING (20 * GST_USECOND) /* between the packets of a burst */
#define MAX_SEQ 4096

/* what arrived: per sequence number its receive timestamp (port ns) */
typedef struct {
  Receiver r;
  guint64 ts[MAX_SEQ];
  guint64 first_ts, last_ts;
  guint64 bits_before_last;
} Arrivals;

static void
on_packet (Receiver *r, const GstDaqiriPacket *p, const guint8 *frame, gpointer user_data)
{
  Arrivals *a = user_data;
  guint32 seq, flow;
  fail_unless (gst_daqiri_test_packet_check (&r->params, frame, p->length, &seq, &flow));
  fail_unless (seq < MAX_SEQ);
  fail_unless (a->ts[seq] == 0, "packet %u twice", seq);
  a->ts[seq] = p->timestamp;
  if (r->received == 0)
    a->first_ts = p->timestamp;
  else
    a->bits_before_last += 8 * (guint64) p->length;

  a->last_ts = p->timestamp;
  r->received++;
  r->bytes += p->length;
}

typedef struct {
  GstElement *pipeline;
  GstElement *src, *sink;
  Arrivals *arr;
} Rig;

static void
rig_start (Rig *rig, const gchar *device, const gchar *sink_props, gboolean system_clock)
{
  rig->pipeline = dq_check_launch (
      "appsrc name=src format=time caps=application/x-daqiri-packets ! "
      "daqirisink name=sink device=%s %s "
      "daqirisrc device=%s burst-timeout=200000 ! appsink name=out sync=false async=false",
      device, sink_props, device);
  if (system_clock)
    gst_pipeline_use_clock (GST_PIPELINE (rig->pipeline), gst_system_clock_obtain ());
  rig->src = gst_bin_get_by_name (GST_BIN (rig->pipeline), "src");
  rig->sink = gst_bin_get_by_name (GST_BIN (rig->pipeline), "sink");
  GstElement *out = gst_bin_get_by_name (GST_BIN (rig->pipeline), "out");
  rig->arr = g_new0 (Arrivals, 1);
  receiver_init (&rig->arr->r, MAX_SEQ);
  receiver_attach_full (&rig->arr->r, out, on_packet, rig->arr);
  gst_object_unref (out);
  fail_unless (
      gst_element_set_state (rig->pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  /* live (daqirisrc): no preroll */
  GstState state;
  fail_unless (gst_element_get_state (rig->pipeline, &state, NULL, 5 * GST_SECOND) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless_equals_int (state, GST_STATE_PLAYING);
}

static void
rig_stop (Rig *rig)
{
  gst_element_set_state (rig->pipeline, GST_STATE_NULL);
  gst_object_unref (rig->src);
  gst_object_unref (rig->sink);
  gst_object_unref (rig->pipeline);
  receiver_clear (&rig->arr->r);
  g_free (rig->arr);
}

/* A burst of PER_BURST test packets seq .. seq+PER_BURST-1 with PTS `pts` (NONE: none),
 * packet i's timestamp field giving it the offset i * SPACING. */
static void
push_burst (Rig *rig, guint32 seq, GstClockTime pts)
{
  GstDaqiriTestPacketParams params;
  gst_daqiri_test_packet_params_init (&params);
  GstBuffer *buf = gst_buffer_new_allocate (NULL, (gsize) PER_BURST * FRAME, NULL);
  GstDaqiriPacket packets[PER_BURST];
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (guint i = 0; i < PER_BURST; i++) {
    gst_daqiri_test_packet_write (&params, map.data + i * FRAME, FRAME, seq + i, 0);
    packets[i] =
        (GstDaqiriPacket){ .offset = i * FRAME, .length = FRAME, .timestamp = 7777 + i * SPACING };
  }
  gst_buffer_unmap (buf, &map);
  gst_buffer_add_daqiri_packet_meta (buf, packets, PER_BURST);
  GST_BUFFER_PTS (buf) = pts;
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (rig->src), buf), GST_FLOW_OK);
}

static guint64
sink_stat (Rig *rig, const gchar *name)
{
  GstStructure *s = NULL;
  guint64 v = 0;
  g_object_get (rig->sink, "stats", &s, NULL);
  fail_unless (gst_structure_get_uint64 (s, name, &v), "no %s in the stats", name);
  gst_structure_free (s);
  return v;
}

/* The clock time at which the sink sends a buffer of PTS pts (segment from 0) */
static GstClockTime
due_clock_time (Rig *rig, GstClockTime pts)
{
  return gst_element_get_base_time (rig->sink) + pts +
      gst_base_sink_get_latency (GST_BASE_SINK (rig->sink));
}

/* The pipeline's running time now */
static GstClockTime
running_time (Rig *rig)
{
  GstClock *clock = gst_element_get_clock (rig->pipeline);
  GstClockTime now = gst_clock_get_time (clock) - gst_element_get_base_time (rig->pipeline);
  gst_object_unref (clock);
  return now;
}

static void
wait_for (Rig *rig, guint n)
{
  fail_unless_equals_int (receiver_wait (&rig->arr->r, n, 5000), n);
}

/* ---- the tests ---- */

/* With daqirisrc's clock (the port's own) the pipeline time of a PTS is a port time:
 * every packet leaves exactly at PTS + base time + latency + its offset. */
GST_START_TEST (test_schedule_port_clock)
{
  Rig rig;
  rig_start (&rig, "emu:stc0,clock=rt", "schedule=pts", FALSE);
  GstClock *clock = gst_element_get_clock (rig.pipeline);
  fail_unless (g_str_has_prefix (G_OBJECT_TYPE_NAME (clock), "GstDaqiriClock"),
      "the pipeline runs on %s", G_OBJECT_TYPE_NAME (clock));
  GstClockTime internal, external, num, den;
  gst_clock_get_calibration (clock, &internal, &external, &num, &den);

  const guint n_bursts = 20;
  GstClockTime start = running_time (&rig) + 100 * GST_MSECOND;
  for (guint k = 0; k < n_bursts; k++)
    push_burst (&rig, k * PER_BURST, start + k * 3 * GST_MSECOND);
  wait_for (&rig, n_bursts * PER_BURST);
  for (guint k = 0; k < n_bursts; k++) {
    GstClockTime due = gst_clock_unadjust_with_calibration (
        clock, due_clock_time (&rig, start + k * 3 * GST_MSECOND), internal, external, num, den);
    for (guint i = 0; i < PER_BURST; i++) {
      guint64 want = due + i * SPACING;
      guint64 got = rig.arr->ts[k * PER_BURST + i];
      fail_unless (got == want,
          "burst %u packet %u left at %" G_GUINT64_FORMAT ", asked %" G_GUINT64_FORMAT, k, i, got,
          want);
    }
  }
  fail_unless_equals_uint64 (sink_stat (&rig, "scheduled"), n_bursts * PER_BURST);
  fail_unless_equals_uint64 (sink_stat (&rig, "late"), 0);
  fail_unless_equals_uint64 (sink_stat (&rig, "held"), 0);
  fail_unless_equals_uint64 (sink_stat (&rig, "copies"), n_bursts * PER_BURST);
  gst_object_unref (clock);
  rig_stop (&rig);
}

GST_END_TEST;

/* With the system clock (monotonic, the port clock real time) the sink reads both
 * clocks: the first packet of each burst within 50 us of its time, the others exactly
 * at their offsets from it. */
GST_START_TEST (test_schedule_system_clock)
{
  Rig rig;
  rig_start (&rig, "emu:stc1,clock=rt", "schedule=pts", TRUE);
  GstClock *clock = gst_element_get_clock (rig.pipeline);
  fail_if (g_str_has_prefix (G_OBJECT_TYPE_NAME (clock), "GstDaqiriClock"));

  const guint n_bursts = 10;
  GstClockTime start = running_time (&rig) + 100 * GST_MSECOND;
  for (guint k = 0; k < n_bursts; k++)
    push_burst (&rig, k * PER_BURST, start + k * 5 * GST_MSECOND);
  /* the port (real-time) time of a clock time, read here as the sink reads it */
  gint64 offset = g_get_real_time () * 1000 - (gint64) gst_clock_get_time (clock);
  wait_for (&rig, n_bursts * PER_BURST);
  for (guint k = 0; k < n_bursts; k++) {
    guint64 due = due_clock_time (&rig, start + k * 5 * GST_MSECOND) + offset;
    guint64 t0 = rig.arr->ts[k * PER_BURST];
    gint64 err = (gint64) (t0 - due);
    fail_unless (ABS (err) < 50 * 1000, "burst %u off by %" G_GINT64_FORMAT " ns", k, err);
    for (guint i = 1; i < PER_BURST; i++)
      fail_unless_equals_uint64 (rig.arr->ts[k * PER_BURST + i], t0 + i * SPACING);
  }
  gst_object_unref (clock);
  rig_stop (&rig);
}

GST_END_TEST;

/* A burst whose time has passed: late=drop drops it and counts it, late=send sends it at
 * once; the bursts around it on time. A buffer without PTS goes at once, unscheduled. */
GST_START_TEST (test_late)
{
  for (int drop = 0; drop <= 1; drop++) {
    Rig rig;
    rig_start (&rig, drop ? "emu:late1,clock=rt" : "emu:late0,clock=rt",
        drop ? "schedule=pts late=drop" : "schedule=pts late=send", FALSE);
    GstClockTime now = running_time (&rig);
    push_burst (&rig, 0, now + 100 * GST_MSECOND);
    /* 50 ms in the past (beyond the latency) */
    push_burst (&rig, PER_BURST, now > 50 * GST_MSECOND ? now - 50 * GST_MSECOND : 0);
    push_burst (&rig, 2 * PER_BURST, now + 110 * GST_MSECOND);
    push_burst (&rig, 3 * PER_BURST, GST_CLOCK_TIME_NONE);
    guint want = drop ? 3 * PER_BURST : 4 * PER_BURST;
    wait_for (&rig, want);
    g_usleep (50 * 1000);
    fail_unless_equals_int (rig.arr->r.received, want);
    fail_unless ((rig.arr->ts[PER_BURST] != 0) == !drop);
    fail_unless_equals_uint64 (sink_stat (&rig, "late"), PER_BURST);
    fail_unless_equals_uint64 (sink_stat (&rig, "late-dropped"), drop ? PER_BURST : 0);
    fail_unless_equals_uint64 (sink_stat (&rig, "scheduled"), drop ? 2 * PER_BURST : 3 * PER_BURST);
    fail_unless_equals_uint64 (sink_stat (&rig, "packets"), want);
    rig_stop (&rig);
  }
}

GST_END_TEST;

/* A port clock that is not real time: the sink does not start, and says why. */
GST_START_TEST (test_refused_without_rt_clock)
{
  GstElement *sink = gst_element_factory_make ("daqirisink", NULL);
  g_object_set (sink, "device", "emu:norc0", NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "schedule", "pts");
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (sink, bus);
  /* a base sink starts (opens its port and queue) on the way to READY */
  fail_unless_equals_int (gst_element_set_state (sink, GST_STATE_READY), GST_STATE_CHANGE_FAILURE);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  GError *error = NULL;
  gchar *debug = NULL;
  gst_message_parse_error (msg, &error, &debug);
  gchar *all = g_strdup_printf ("%s %s", error->message, debug ? debug : "");
  fail_unless (
      strstr (all, "real-time port clock") != NULL && strstr (all, "clock=rt") != NULL, "%s", all);
  g_free (all);
  g_free (debug);
  g_error_free (error);
  gst_message_unref (msg);
  gst_element_set_state (sink, GST_STATE_NULL);
  gst_element_set_bus (sink, NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
}

GST_END_TEST;

/* daqiritestsrc ! daqirisink rate=1000000000: 4000 frames of 1000 bytes leave no faster
 * than 1 Gb/s (8000 ns apart at least, as the receive timestamps show), not at the port's
 * 100 Gb/s, and back to back at exactly that spacing while the queue has frames. (A gap
 * is the queue running dry: the producer on a loaded test machine, not the pacing; the
 * pacing's accuracy over one second at 1, 10 and 50 Gb/s is tests/mlx5/test-tx-timing.c.)
 * The ring holds all the frames (32 ms at the rate). */
GST_START_TEST (test_rate)
{
  const guint n = 4000;
  Arrivals *arr = g_new0 (Arrivals, 1);
  receiver_init (&arr->r, MAX_SEQ);
  GstElement *pipeline = dq_check_launch (
      "daqiritestsrc num-packets=%u burst-packets=64 packet-size-min=1000 "
      "packet-size-max=1000 ! daqirisink name=sink device=emu:rate0 rate=1000000000 "
      "ring-size=67108864 "
      "daqirisrc device=emu:rate0 burst-timeout=200000 ! appsink name=out "
      "sync=false async=false",
      n);
  GstElement *out = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  receiver_attach_full (&arr->r, out, on_packet, arr);
  gst_object_unref (out);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  fail_unless_equals_int (receiver_wait (&arr->r, n, 5000), n);

  guint exact = 0;
  for (guint s = 1; s < n; s++) {
    guint64 gap = arr->ts[s] - arr->ts[s - 1];
    fail_unless (
        gap >= 8000, "packet %u left %" G_GUINT64_FORMAT " ns after the one before", s, gap);
    exact += gap == 8000;
  }
  /* the queue was rarely empty: most frames followed the one before at exactly the rate */
  fail_unless (exact >= (n - 1) * 3 / 4, "%u of %u spacings were the rate's", exact, n - 1);
  double overall = (double) arr->bits_before_last * 1e9 / (double) (arr->last_ts - arr->first_ts);
  GST_INFO ("1 Gb/s asked: %u of %u spacings exact, %.6g bit/s overall", exact, n - 1, overall);
  fail_unless (overall <= 1e9);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  guint64 rate = 0;
  g_object_get (sink, "rate", &rate, NULL);
  fail_unless_equals_uint64 (rate, G_GUINT64_CONSTANT (1000000000));
  gst_object_unref (sink);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  receiver_clear (&arr->r);
  g_free (arr);
}

GST_END_TEST;

/* One burst of frames of 100, 2000 (over MTU 1500 + 18), 300, 10 (a runt), 1518 (the
 * largest the port sends) and 1519 bytes: the three good ones arrive, byte for byte; one
 * warning for each reason, naming the size and the limit. The port wants the Ethernet
 * header inline in its send WQEs (inline=l2, as SR-IOV ports do): the sink's queue puts
 * it there, else the port would refuse every frame. */
GST_START_TEST (test_oversize)
{
  Rig rig;
  rig_start (&rig, "emu:ovs0,inline=l2", "", FALSE);
  GstBus *bus = gst_element_get_bus (rig.pipeline);
  const guint sizes[6] = { 100, 2000, 300, 10, 1518, 1519 };
  GstDaqiriTestPacketParams params;
  gst_daqiri_test_packet_params_init (&params);
  GstBuffer *buf = gst_buffer_new_allocate (NULL, 6 * 2048, NULL);
  GstDaqiriPacket packets[6];
  GstMapInfo map;
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  memset (map.data, 0xab, map.size);
  for (guint i = 0; i < 6; i++) {
    if (sizes[i] >= GST_DAQIRI_TEST_PACKET_MIN_SIZE)
      gst_daqiri_test_packet_write (&params, map.data + i * 2048, sizes[i], i, 0);
    packets[i] = (GstDaqiriPacket){ .offset = i * 2048, .length = sizes[i] };
  }
  gst_buffer_unmap (buf, &map);
  gst_buffer_add_daqiri_packet_meta (buf, packets, 6);
  fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (rig.src), buf), GST_FLOW_OK);
  wait_for (&rig, 3);
  g_usleep (50 * 1000);
  fail_unless_equals_int (rig.arr->r.received, 3);
  fail_unless (rig.arr->ts[0] != 0 && rig.arr->ts[2] != 0 && rig.arr->ts[4] != 0);
  fail_unless_equals_uint64 (sink_stat (&rig, "packets"), 3);
  fail_unless_equals_uint64 (sink_stat (&rig, "oversize"), 2);
  fail_unless_equals_uint64 (sink_stat (&rig, "undersize"), 1);
  fail_unless_equals_uint64 (sink_stat (&rig, "errors"), 0);

  const gchar *want[2][3] = { { "2000 bytes", "at most 1518 bytes", "MTU 1500" },
    { "10 bytes", "shorter than an Ethernet header", "undersize" } };
  for (guint w = 0; w < 2; w++) {
    GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
    fail_unless (msg != NULL, "warning %u missing", w);
    GError *error = NULL;
    gchar *debug = NULL;
    gst_message_parse_warning (msg, &error, &debug);
    for (guint k = 0; k < 3; k++)
      fail_unless (strstr (debug, want[w][k]) != NULL, "'%s' does not say '%s'", debug, want[w][k]);
    g_free (debug);
    g_error_free (error);
    gst_message_unref (msg);
  }
  /* one warning per reason */
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING) == NULL);
  EmuPort *port = emu_port_lookup ("ovs0");
  EmuCounters c;
  emu_port_counters (port, &c);
  fail_unless_equals_uint64 (c.tx_packets, 3);
  fail_unless_equals_uint64 (c.tx_cqe_errors, 0);
  emu_port_unref (port);
  gst_object_unref (bus);
  rig_stop (&rig);
}

GST_END_TEST;

/* daqiritestsrc ! daqirisink with 64-byte frames in bursts of 64 written in place: every
 * burst goes out as two eMPW WQEs of 32 frames (stats wqes), every frame arrives intact. */
GST_START_TEST (test_empw_stats)
{
  const guint n = 6400;
  Receiver r;
  receiver_init (&r, n);
  GstElement *pipeline = dq_check_launch (
      "daqiritestsrc num-packets=%u burst-packets=64 ! daqirisink name=sink device=emu:empw0 "
      "daqirisrc device=emu:empw0 burst-timeout=200000 ! appsink name=out sync=false "
      "async=false",
      n);
  GstElement *out = gst_bin_get_by_name (GST_BIN (pipeline), "out");
  receiver_attach (&r, out);
  gst_object_unref (out);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  fail_unless_equals_int (receiver_wait (&r, n, 5000), n);
  fail_unless_equals_int (r.bad, 0);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GstStructure *s = NULL;
  g_object_get (sink, "stats", &s, NULL);
  guint64 packets = 0, wqes = 0, in_place = 0;
  gst_structure_get_uint64 (s, "packets", &packets);
  gst_structure_get_uint64 (s, "wqes", &wqes);
  gst_structure_get_uint64 (s, "in-place", &in_place);
  fail_unless_equals_uint64 (packets, n);
  fail_unless_equals_uint64 (in_place, n);
  fail_unless_equals_uint64 (wqes, n / 32);
  gst_structure_free (s);
  gst_object_unref (sink);
  EmuPort *port = emu_port_lookup ("empw0");
  EmuCounters c;
  emu_port_counters (port, &c);
  fail_unless_equals_uint64 (c.tx_empw_wqes, n / 32);
  emu_port_unref (port);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  receiver_clear (&r);
}

GST_END_TEST;

/* daqirisink's registrations of payload memory (gstdaqiritxmem.h): one per allocation,
 * found again for any memory of it; holding the allocation while registered; beyond the
 * limit the least recently used one that no posted frame reads is dropped, a busy one kept;
 * an engine without two-segment sends says so. */
GST_START_TEST (test_payload_registrations)
{
  GError *error = NULL;
  DqPort *port = dq_port_open ("emu:regs0,peer=none", &error);
  fail_unless (port != NULL, "%s", error ? error->message : "?");
  DqTxConfig cfg = { 0 };
  DqTxQueue *txq = dq_txq_create (port, &cfg, &error);
  fail_unless (txq != NULL);
  GstDaqiriTxRegs *regs = gst_daqiri_tx_regs_new (txq);
  const guint n = GST_DAQIRI_TX_REGS_MAX;
  GstMemory *mem[GST_DAQIRI_TX_REGS_MAX + 1];
  DqTxMemory *reg[GST_DAQIRI_TX_REGS_MAX + 1];
  const guint8 *data;
  for (guint i = 0; i <= n; i++)
    mem[i] = gst_allocator_alloc (NULL, 4096, NULL);
  for (guint i = 0; i < n; i++) {
    reg[i] = gst_daqiri_tx_regs_get (regs, mem[i], &data, &error);
    fail_unless (reg[i] != NULL, "%s", error ? error->message : "?");
    GstMapInfo map;
    gst_memory_map (mem[i], &map, GST_MAP_READ);
    fail_unless (data == map.data);
    gst_memory_unmap (mem[i], &map);
    /* the registration holds the allocation */
    fail_unless_equals_int (GST_MINI_OBJECT_REFCOUNT_VALUE (mem[i]), 2);
  }
  fail_unless_equals_uint64 (gst_daqiri_tx_regs_made (regs), n);
  /* a share of memory 0 is the same allocation: the same registration, its own address */
  GstMemory *share = gst_memory_share (mem[0], 100, 200);
  fail_unless (gst_daqiri_tx_regs_get (regs, share, &data, &error) == reg[0]);
  GstMapInfo map0;
  gst_memory_map (mem[0], &map0, GST_MAP_READ);
  fail_unless (data == map0.data + 100);
  gst_memory_unmap (mem[0], &map0);
  gst_memory_unref (share);
  /* memory 1 read by a frame not yet completed (a mark beyond what was posted) */
  gst_daqiri_tx_regs_used (regs, reg[1], dq_txq_posted (txq) + 1);
  fail_unless_equals_uint64 (gst_daqiri_tx_regs_made (regs), n);
  /* one more: memory 2, the least recently used one no frame reads, is dropped */
  reg[n] = gst_daqiri_tx_regs_get (regs, mem[n], &data, &error);
  fail_unless (reg[n] != NULL);
  fail_unless_equals_uint64 (gst_daqiri_tx_regs_made (regs), n + 1);
  fail_unless_equals_int (GST_MINI_OBJECT_REFCOUNT_VALUE (mem[2]), 1);
  fail_unless_equals_int (GST_MINI_OBJECT_REFCOUNT_VALUE (mem[1]), 2);
  fail_unless_equals_int (GST_MINI_OBJECT_REFCOUNT_VALUE (mem[0]), 2);
  /* memory 1 and 0 are still registered; memory 2 is registered again */
  fail_unless (gst_daqiri_tx_regs_get (regs, mem[1], &data, &error) == reg[1]);
  fail_unless (gst_daqiri_tx_regs_get (regs, mem[0], &data, &error) == reg[0]);
  fail_unless_equals_uint64 (gst_daqiri_tx_regs_made (regs), n + 1);
  fail_unless (gst_daqiri_tx_regs_get (regs, mem[2], &data, &error) != NULL);
  fail_unless_equals_uint64 (gst_daqiri_tx_regs_made (regs), n + 2);
  gst_daqiri_tx_regs_free (regs);
  for (guint i = 0; i <= n; i++) {
    fail_unless_equals_int (GST_MINI_OBJECT_REFCOUNT_VALUE (mem[i]), 1);
    gst_memory_unref (mem[i]);
  }
  dq_txq_destroy (txq);
  dq_port_unref (port);

  /* an engine that sends whole frames says so, and holds nothing */
  DqPort *lo = dq_port_open ("afpacket:lo", &error);
  if (lo != NULL) {
    txq = dq_txq_create (lo, &cfg, &error);
    fail_unless (txq != NULL);
    regs = gst_daqiri_tx_regs_new (txq);
    GstMemory *m = gst_allocator_alloc (NULL, 64, NULL);
    fail_unless (gst_daqiri_tx_regs_get (regs, m, &data, &error) == NULL);
    fail_unless (error != NULL && strstr (error->message, "no two-segment sends"));
    g_clear_error (&error);
    fail_unless_equals_int (GST_MINI_OBJECT_REFCOUNT_VALUE (m), 1);
    gst_memory_unref (m);
    gst_daqiri_tx_regs_free (regs);
    dq_txq_destroy (txq);
    dq_port_unref (lo);
  }
  g_clear_error (&error);
}

GST_END_TEST;

static Suite *
tx_suite (void)
{
  TCase *tc;
  Suite *s = dq_check_suite_new ("daqiri-e2e-tx", "emu", 60, &tc);
  tcase_add_test (tc, test_schedule_port_clock);
  tcase_add_test (tc, test_schedule_system_clock);
  tcase_add_test (tc, test_late);
  tcase_add_test (tc, test_refused_without_rt_clock);
  tcase_add_test (tc, test_rate);
  tcase_add_test (tc, test_oversize);
  tcase_add_test (tc, test_empw_stats);
  tcase_add_test (tc, test_payload_registrations);
  return s;
}

DQ_CHECK_LINKED_MAIN (tx_suite, "e2e-tx");
