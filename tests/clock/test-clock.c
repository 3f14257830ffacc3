/* Time in daqirisrc: PTS on the port's own clock and on other clocks, the regression that
 * follows a drifting port clock, the port-time GstReferenceTimestampMeta, waits on
 * GstDaqiriClock, the latency answer, and GstDaqiriTimeMap itself.
 *
 * The plugin's objects are linked into this program and registered as a static plugin
 * (the plugin file is not loaded), so that the program shares the engine registry with
 * the elements: emulated ports (emu:NAME, per process) and the "clocktest" engine of
 * clock-engine.c, whose port clock the tests control. */
#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gsttestclock.h>
#include <gst/daqiri/daqiri.h>

#include "clock-engine.h"
#include "daqiri-engine.h"
#include "dq-test-port.h"
#include "gstdaqiriclock.h"
#include "dq-linked-plugin.h"
#include "dq-check-suite.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>


#define US ((GstClockTime) GST_USECOND)
#define MS ((GstClockTime) GST_MSECOND)

/* ---- helpers --------------------------------------------------------------------- */

static GstElement *
launch (const char *description)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (description, &error);
  fail_unless (error == NULL, "%s: %s", description, error ? error->message : "");
  return pipeline;
}

static GstElement *
by_name (GstElement *pipeline, const char *name)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (pipeline), name);
  fail_unless (e != NULL, "no element %s", name);
  return e;
}

/* launch () of a pipeline whose source is named "src"; *src gets that source (a reference) */
static GstElement *
launch_with_src (const char *description, GstElement **src)
{
  GstElement *pipeline = launch (description);
  *src = by_name (pipeline, "src");
  return pipeline;
}

static void
set_state_sync (GstElement *pipeline, GstState state)
{
  GstStateChangeReturn r = gst_element_set_state (pipeline, state);
  fail_unless (r != GST_STATE_CHANGE_FAILURE);
  if (r == GST_STATE_CHANGE_ASYNC && state >= GST_STATE_PAUSED) {
    /* a live pipeline's sinks complete only with data: do not wait for them */
    return;
  }
}

/* Sets a live pipeline PLAYING and waits (5 s at most) until its source `src` is. */
static void
play_until_src_plays (GstElement *pipeline, GstElement *src)
{
  set_state_sync (pipeline, GST_STATE_PLAYING);
  fail_unless (gst_element_get_state (src, NULL, NULL, 5 * GST_SECOND) == GST_STATE_CHANGE_SUCCESS);
}

/* clock time - port time, from the tightest of many back-to-back reads */
static gint64
clock_minus_port (GstClock *clock, DqPort *port)
{
  GstClockTime best_width = GST_CLOCK_TIME_NONE;
  gint64 best = 0;
  for (guint i = 0; i < 50; i++) {
    GstClockTime a = gst_clock_get_time (clock);
    guint64 p = dq_port_time (port);
    GstClockTime b = gst_clock_get_time (clock);
    if (b - a < best_width) {
      best_width = b - a;
      best = (gint64) (a + (b - a) / 2) - (gint64) p;
    }
  }
  return best;
}

static GstCaps *
port_caps (const char *device)
{
  return gst_caps_new_simple ("timestamp/x-daqiri-port", "device", G_TYPE_STRING, device, NULL);
}

/* The port-time meta of @buf: the right caps (found by the bare media type too), the
 * first packet's time, the burst's span. */
static void
check_port_time_meta (GstBuffer *buf, const GstDaqiriPacketMeta *pm, GstCaps *caps)
{
  GstCaps *any = gst_caps_new_empty_simple ("timestamp/x-daqiri-port");
  GstReferenceTimestampMeta *rm = gst_buffer_get_reference_timestamp_meta (buf, any);
  gst_caps_unref (any);
  fail_unless (rm != NULL, "no port-time meta");
  fail_unless (gst_caps_is_equal (rm->reference, caps));
  fail_unless (gst_buffer_get_reference_timestamp_meta (buf, caps) == rm);
  fail_unless_equals_uint64 (rm->timestamp, pm->packets[0].timestamp);
  GstClockTime span = pm->n_packets > 1
      ? pm->packets[pm->n_packets - 1].timestamp - pm->packets[0].timestamp
      : GST_CLOCK_TIME_NONE;
  fail_unless_equals_uint64 (rm->duration, span);

  /* exactly one */
  guint n = 0;
  gpointer state = NULL;
  while (
      gst_buffer_iterate_meta_filtered (buf, &state, GST_REFERENCE_TIMESTAMP_META_API_TYPE) != NULL)
    n++;
  fail_unless_equals_int (n, 1);
}

/* the next buffer, within 5 s */
static GstSample *
pull (GstElement *sink)
{
  GstSample *s = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 5 * GST_SECOND);
  fail_unless (s != NULL, "no buffer within 5 s");
  return s;
}

#ifdef CLOCK_TEST_EMU
/* ---- emulated port: sender and receiver pipelines in this process --------------- */

#define EMU_PACKETS 4000
#define EMU_RATE 20000 /* packets/s: 0.2 s of traffic */
#define EMU_BURST 8

typedef struct {
  GstElement *rx;
  GstElement *tx;
  GstElement *src;
  GstElement *sink;
} EmuRun;

static void
emu_run_start (EmuRun *run, const char *device, GstClock *rx_clock)
{
  char *rx = g_strdup_printf ("daqirisrc name=src device=%s burst-packets=%u "
                              "burst-timeout=200000 ! appsink name=sink sync=false",
      device, EMU_BURST);
  char *tx = g_strdup_printf ("daqiritestsrc is-live=true rate=%u burst-packets=%u "
                              "num-packets=%u ! daqirisink device=%s",
      EMU_RATE, EMU_BURST, EMU_PACKETS, device);
  run->rx = launch (rx);
  run->tx = launch (tx);
  g_free (rx);
  g_free (tx);
  run->src = by_name (run->rx, "src");
  run->sink = by_name (run->rx, "sink");
  if (rx_clock != NULL)
    gst_pipeline_use_clock (GST_PIPELINE (run->rx), rx_clock);
  /* the receiver first, so that no packet arrives before its base time */
  set_state_sync (run->rx, GST_STATE_PLAYING);
  GstState cur;
  fail_unless (
      gst_element_get_state (run->src, &cur, NULL, 5 * GST_SECOND) == GST_STATE_CHANGE_SUCCESS);
  fail_unless_equals_int (cur, GST_STATE_PLAYING);
  set_state_sync (run->tx, GST_STATE_PLAYING);
}

static void
emu_run_stop (EmuRun *run)
{
  gst_element_set_state (run->tx, GST_STATE_NULL);
  gst_element_set_state (run->rx, GST_STATE_NULL);
  gst_object_unref (run->src);
  gst_object_unref (run->sink);
  gst_object_unref (run->tx);
  gst_object_unref (run->rx);
}

/* (1) the pipeline on daqirisrc's clock: PTS = first packet time - base time, exactly */
GST_START_TEST (test_pts_port_clock)
{
  const char *device = "emu:clk1";
  EmuRun run;
  emu_run_start (&run, device, NULL);

  GstClock *clock = gst_element_get_clock (run.src);
  fail_unless (clock != NULL);
  fail_unless (GST_IS_DAQIRI_CLOCK (clock), "pipeline clock is %s", G_OBJECT_TYPE_NAME (clock));
  fail_unless_equals_string (
      dq_port_device (gst_daqiri_clock_get_port (GST_DAQIRI_CLOCK (clock))), device);
  GstClockTime base = gst_element_get_base_time (run.src);
  GstCaps *caps = port_caps (device);
  gchar *text = gst_caps_to_string (caps);
  fail_unless_equals_string (text, "timestamp/x-daqiri-port, device=(string)emu:clk1");
  g_free (text);

  guint64 packets = 0, n_buffers = 0;
  GstClockTime last_pts = 0;
  while (packets < EMU_PACKETS) {
    GstSample *s = pull (run.sink);
    GstClockTime now = gst_clock_get_time (clock);
    GstBuffer *buf = gst_sample_get_buffer (s);
    GstDaqiriPacketMeta *pm = gst_buffer_get_daqiri_packet_meta (buf);
    fail_unless (pm != NULL && pm->n_packets > 0);
    guint64 ts = pm->packets[0].timestamp;
    /* the packet time is on this clock: after the start, before now */
    fail_unless (ts > base && ts <= now,
        "packet time %" G_GUINT64_FORMAT " outside [base %" G_GUINT64_FORMAT
        ", now %" G_GUINT64_FORMAT "]",
        ts, base, now);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), ts - base);
    fail_unless (GST_BUFFER_PTS (buf) > last_pts || n_buffers == 0);
    last_pts = GST_BUFFER_PTS (buf);
    if (pm->n_packets > 1)
      fail_unless_equals_uint64 (
          GST_BUFFER_DURATION (buf), pm->packets[pm->n_packets - 1].timestamp - ts);
    check_port_time_meta (buf, pm, caps);
    packets += pm->n_packets;
    n_buffers++;
    gst_sample_unref (s);
  }
  fail_unless_equals_uint64 (packets, EMU_PACKETS);
  GST_INFO ("%" G_GUINT64_FORMAT " buffers checked", n_buffers);

  gst_caps_unref (caps);
  gst_object_unref (clock);
  emu_run_stop (&run);
}

GST_END_TEST;

/* (2) the pipeline on the monotonic system clock: PTS within 200 us of the port time
 * carried over by the true offset of the two clocks; PTS increasing */
GST_START_TEST (test_pts_system_clock)
{
  const char *device = "emu:clk2";
  GstClock *sys = gst_system_clock_obtain ();
  DqPort *port = dq_test_port_open (device);
  gint64 off_before = clock_minus_port (sys, port);

  EmuRun run;
  emu_run_start (&run, device, sys);
  GstClock *clock = gst_element_get_clock (run.src);
  fail_unless (clock == sys);
  GstClockTime base = gst_element_get_base_time (run.src);
  GstCaps *caps = port_caps (device);

  GArray *pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  GArray *tss = g_array_new (FALSE, FALSE, sizeof (guint64));
  guint64 packets = 0;
  while (packets < EMU_PACKETS) {
    GstSample *s = pull (run.sink);
    GstBuffer *buf = gst_sample_get_buffer (s);
    GstDaqiriPacketMeta *pm = gst_buffer_get_daqiri_packet_meta (buf);
    fail_unless (pm != NULL && pm->n_packets > 0);
    g_array_append_val (pts, GST_BUFFER_PTS (buf));
    g_array_append_val (tss, pm->packets[0].timestamp);
    check_port_time_meta (buf, pm, caps);
    packets += pm->n_packets;
    gst_sample_unref (s);
  }
  gint64 off_after = clock_minus_port (sys, port);
  /* the emulated clock runs at the exact rate of CLOCK_MONOTONIC */
  fail_unless (ABS (off_after - off_before) < 20 * (gint64) US,
      "offset moved from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT, off_before, off_after);
  gint64 off = (off_before + off_after) / 2;

  GstClockTimeDiff worst = 0;
  for (guint i = 0; i < pts->len; i++) {
    GstClockTime p = g_array_index (pts, GstClockTime, i);
    guint64 ts = g_array_index (tss, guint64, i);
    GstClockTime expected = (GstClockTime) ((gint64) ts + off) - base;
    GstClockTimeDiff err = GST_CLOCK_DIFF (expected, p);
    worst = MAX (worst, ABS (err));
    fail_unless (ABS (err) <= 200 * (gint64) US,
        "buffer %u: PTS %" GST_TIME_FORMAT ", expected %" GST_TIME_FORMAT, i, GST_TIME_ARGS (p),
        GST_TIME_ARGS (expected));
    if (i > 0)
      fail_unless (p > g_array_index (pts, GstClockTime, i - 1), "PTS went back at %u", i);
  }
  GST_INFO ("%u buffers, worst error %" G_GINT64_FORMAT " ns", pts->len, worst);

  g_array_unref (pts);
  g_array_unref (tss);
  gst_caps_unref (caps);
  gst_object_unref (clock);
  emu_run_stop (&run);
  dq_port_unref (port);
  gst_object_unref (sys);
}

GST_END_TEST;

#endif /* CLOCK_TEST_EMU */

/* ---- a drifting port clock over a simulated span --------------------------------- */

/* daqirisrc on a clocktest port whose clock runs `ppm` off, the pipeline on a GstTestClock
 * that the port advances 10 ms per burst: 100 s pass. Every PTS is within 10 us of the
 * true mapping (the port's clock reads are 2 us noisy); a fixed offset would be off by
 * ppm * 100 s at the end. */
static void
check_drift (const char *name, gint64 ppm)
{
  const guint bursts = 10000;
  char *device = g_strdup_printf (
      "clocktest:%s,sim,ppm=%" G_GINT64_FORMAT ",jitter=2000,bursts=%u", name, ppm, bursts);
  char *desc = g_strdup_printf ("daqirisrc name=src device=\"%s\" ! appsink name=sink "
                                "sync=false",
      device);
  GstElement *pipeline = launch (desc);
  g_free (desc);
  GstClock *tc = gst_test_clock_new_with_start_time (1000 * GST_SECOND);
  ct_sim_clock = tc;
  gst_pipeline_use_clock (GST_PIPELINE (pipeline), tc);
  GstElement *src = by_name (pipeline, "src");
  GstElement *sink = by_name (pipeline, "sink");
  set_state_sync (pipeline, GST_STATE_PLAYING);
  GstClockTime base = GST_CLOCK_TIME_NONE;
  GstCaps *caps = port_caps (device);

  GstClockTime prev = 0;
  GstClockTimeDiff worst = 0, worst_late = 0;
  gint64 fixed_offset = 0, fixed_error = 0;
  for (guint i = 0; i < bursts; i++) {
    GstSample *s = pull (sink);
    if (i == 0)
      base = gst_element_get_base_time (src);
    GstBuffer *buf = gst_sample_get_buffer (s);
    GstDaqiriPacketMeta *pm = gst_buffer_get_daqiri_packet_meta (buf);
    guint64 ts = pm->packets[0].timestamp;
    GstClockTime expected = ct_base_time_at (device, ts) - base;
    GstClockTime pts = GST_BUFFER_PTS (buf);
    GstClockTimeDiff err = GST_CLOCK_DIFF (expected, pts);
    worst = MAX (worst, ABS (err));
    if (i >= bursts / 2)
      worst_late = MAX (worst_late, ABS (err));
    fail_unless (ABS (err) <= 10 * (gint64) US,
        "%s burst %u (%.2f s): PTS off by %" G_GINT64_FORMAT " ns", name, i, (double) i * 0.01,
        err);
    fail_unless (i == 0 || pts > prev, "%s: PTS went back at %u", name, i);
    prev = pts;
    if (i == 0)
      fixed_offset = (gint64) pts - (gint64) ts;
    if (i == bursts - 1)
      fixed_error = (gint64) ts + fixed_offset - (gint64) expected;
    check_port_time_meta (buf, pm, caps);
    gst_sample_unref (s);
  }
  /* what a fixed offset taken at the first buffer would be off by now: ppm * 100 s */
  gint64 drift = ppm * 100 * (gint64) GST_SECOND / 1000000;
  fail_unless (ABS (fixed_error - drift) < 100 * (gint64) US,
      "%s: a fixed offset is off by %" G_GINT64_FORMAT ", expected about %" G_GINT64_FORMAT, name,
      fixed_error, drift);
  GST_INFO ("%s: %" G_GINT64_FORMAT " ppm over 100 s: worst PTS error %" G_GINT64_FORMAT
            " ns (second half %" G_GINT64_FORMAT " ns); a fixed offset ends %" G_GINT64_FORMAT
            " ns off",
      name, ppm, worst, worst_late, fixed_error);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  ct_sim_clock = NULL;
  gst_caps_unref (caps);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  gst_object_unref (tc);
  g_free (device);
}

/* (3) */
GST_START_TEST (test_drift_fast)
{
  check_drift ("fast", 100);
}

GST_END_TEST;

GST_START_TEST (test_drift_slow)
{
  check_drift ("slow", -250);
}

GST_END_TEST;

/* (4) the port-time meta on a clocktest port, under the test clock: raw time, caps */
GST_START_TEST (test_port_time_meta)
{
  const char *device = "clocktest:meta,sim,offset=5000,bursts=20,packets=1";
  GstElement *pipeline =
      launch ("daqirisrc name=src "
              "device=\"clocktest:meta,sim,offset=5000,bursts=20,packets=1\" ! appsink "
              "name=sink sync=false");
  GstClock *tc = gst_test_clock_new_with_start_time (GST_SECOND);
  ct_sim_clock = tc;
  gst_pipeline_use_clock (GST_PIPELINE (pipeline), tc);
  GstElement *sink = by_name (pipeline, "sink");
  set_state_sync (pipeline, GST_STATE_PLAYING);
  GstCaps *caps = port_caps (device);

  for (guint64 i = 0; i < 20; i++) {
    GstSample *s = pull (sink);
    GstBuffer *buf = gst_sample_get_buffer (s);
    GstDaqiriPacketMeta *pm = gst_buffer_get_daqiri_packet_meta (buf);
    fail_unless_equals_int (pm->n_packets, 1);
    /* the port clock started at 5 us and has run (i + 1) * 10 ms, less the packet age */
    fail_unless (pm->packets[0].timestamp < 5000 + (i + 1) * 10 * MS);
    fail_unless (pm->packets[0].timestamp > 5000 + (i + 1) * 10 * MS - MS);
    check_port_time_meta (buf, pm, caps);
    gst_sample_unref (s);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  ct_sim_clock = NULL;
  gst_caps_unref (caps);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  gst_object_unref (tc);
}

GST_END_TEST;

/* ---- waits on GstDaqiriClock ----------------------------------------------------- */

/* GstSystemClock takes a wait as done when it is at most 100 ns (its CLOCK_MIN_WAIT_TIME)
 * before the target */
#define EARLY_OK 100

typedef struct {
  GMutex lock;
  GCond cond;
  gboolean fired;
  guint64 at; /* port time when the callback ran */
  DqPort *port;
} AsyncWait;

static gboolean
async_fired (GstClock *clock, GstClockTime time, GstClockID id, gpointer user_data)
{
  AsyncWait *w = user_data;
  guint64 now = dq_port_time (w->port);
  g_mutex_lock (&w->lock);
  w->at = now;
  w->fired = TRUE;
  g_cond_signal (&w->cond);
  g_mutex_unlock (&w->lock);
  return TRUE;
}

typedef enum {
  WAIT_SINGLE,
  WAIT_PERIODIC, /* the third period of a periodic id */
  WAIT_ASYNC,
} WaitKind;

static const char *const wait_names[] = { "single-shot", "periodic", "async" };

/* Waits on @clock until @length from now; returns the port time when the wait ended
 * minus its target. */
static gint64
wait_once (GstClock *clock, DqPort *port, WaitKind kind, GstClockTime length)
{
  GstClockTime target = gst_clock_get_time (clock) + length;
  guint64 end = 0;

  if (kind == WAIT_SINGLE) {
    GstClockID id = gst_clock_new_single_shot_id (clock, target);
    GstClockTimeDiff jitter;
    fail_unless_equals_int (gst_clock_id_wait (id, &jitter), GST_CLOCK_OK);
    end = dq_port_time (port);
    gst_clock_id_unref (id);
  } else if (kind == WAIT_PERIODIC) {
    GstClockTime start = target - 2 * (length / 3);
    GstClockID id = gst_clock_new_periodic_id (clock, start, length / 3);
    for (guint k = 0; k < 3; k++)
      fail_unless_equals_int (gst_clock_id_wait (id, NULL), GST_CLOCK_OK);
    end = dq_port_time (port);
    target = start + 2 * (length / 3);
    gst_clock_id_unref (id);
  } else {
    AsyncWait w = { .port = port };
    g_mutex_init (&w.lock);
    g_cond_init (&w.cond);
    GstClockID id = gst_clock_new_single_shot_id (clock, target);
    fail_unless_equals_int (gst_clock_id_wait_async (id, async_fired, &w, NULL), GST_CLOCK_OK);
    g_mutex_lock (&w.lock);
    gint64 deadline = g_get_monotonic_time () + 2 * (gint64) G_USEC_PER_SEC;
    while (!w.fired && g_cond_wait_until (&w.cond, &w.lock, deadline))
      ;
    g_mutex_unlock (&w.lock);
    fail_unless (w.fired, "async wait never fired");
    end = w.at;
    gst_clock_id_unschedule (id);
    gst_clock_id_unref (id);
    g_mutex_clear (&w.lock);
    g_cond_clear (&w.cond);
  }
  return (gint64) (end - target);
}

/* Waits of several lengths and kinds on @clock end at the right port time: never
 * before the target (less EARLY_OK), and within 1 ms after it. On a shared machine a
 * thread is sometimes scheduled late by more than that, so a wait that ends late is
 * tried again (up to 4 times with a real-time waiter, 20 without, which a loaded machine
 * wakes late far more often): a clock that waits wrongly is late every time. */
static void
check_waits (GstClock *clock, DqPort *port)
{
  static const GstClockTime lengths[] = { 2 * MS, 30 * MS, 120 * MS };
  /* a real-time waiter (and async clock thread, which inherits it) is woken on time even
   * on a busy machine; without the privilege the retries below have to do */
  struct sched_param rt = { .sched_priority = 10 }, normal = { .sched_priority = 0 };
  gboolean realtime = pthread_setschedparam (pthread_self (), SCHED_FIFO, &rt) == 0;
  const guint attempts = realtime ? 4 : 20;
  for (guint kind = WAIT_SINGLE; kind <= WAIT_ASYNC; kind++) {
    for (guint i = 0; i < G_N_ELEMENTS (lengths); i++) {
      if (kind != WAIT_SINGLE && i != 1)
        continue;
      gint64 best = G_MAXINT64;
      for (guint attempt = 0; attempt < attempts && best >= (gint64) MS; attempt++) {
        gint64 off = wait_once (clock, port, (WaitKind) kind, lengths[i]);
        fail_unless (off >= -EARLY_OK,
            "%s: %s wait of %" GST_TIME_FORMAT " ended %" G_GINT64_FORMAT " ns early",
            GST_OBJECT_NAME (clock), wait_names[kind], GST_TIME_ARGS (lengths[i]), -off);
        best = MIN (best, off);
        GST_INFO ("%s: %s wait of %" GST_TIME_FORMAT " ended %" G_GINT64_FORMAT
                  " ns after its target",
            GST_OBJECT_NAME (clock), wait_names[kind], GST_TIME_ARGS (lengths[i]), off);
      }
      fail_unless (best < (gint64) MS,
          "%s: %s wait of %" GST_TIME_FORMAT " ended %" G_GINT64_FORMAT
          " ns late at best (real-time waiter: %d)",
          GST_OBJECT_NAME (clock), wait_names[kind], GST_TIME_ARGS (lengths[i]), best, realtime);
    }
  }
  if (realtime)
    pthread_setschedparam (pthread_self (), SCHED_OTHER, &normal);
}

#ifdef CLOCK_TEST_EMU
/* (5) the clock daqirisrc provides for an emulated port (a NIC clock domain) */
GST_START_TEST (test_wait_emu)
{
  const char *device = "emu:clkw";
  GstElement *src = gst_element_factory_make ("daqirisrc", NULL);
  g_object_set (src, "device", device, NULL);
  fail_unless (gst_element_set_state (src, GST_STATE_PAUSED) == GST_STATE_CHANGE_NO_PREROLL);
  GstClock *clock = gst_element_provide_clock (src);
  fail_unless (clock != NULL && GST_IS_DAQIRI_CLOCK (clock));
  DqPort *port = dq_test_port_open (device);
  fail_unless (gst_daqiri_clock_get_port (GST_DAQIRI_CLOCK (clock)) == port);
  /* the clock reads the port time */
  guint64 p0 = dq_port_time (port);
  GstClockTime c = gst_clock_get_time (clock);
  guint64 p1 = dq_port_time (port);
  fail_unless (p0 <= c && c <= p1);

  check_waits (clock, port);

  gst_object_unref (clock);
  gst_element_set_state (src, GST_STATE_NULL);
  gst_object_unref (src);
  dq_port_unref (port);
}

GST_END_TEST;

#endif /* CLOCK_TEST_EMU */

/* (5) port clocks that are no POSIX clock: starting near 0, 500 ppm fast, 5 % slow; and
 * for comparison the system clock itself (its waits are timed on a CLOCK_MONOTONIC port) */
GST_START_TEST (test_wait_foreign)
{
  DqPort *mono = dq_test_port_open ("clocktest:wm,posix");
  GstClock *sys = gst_system_clock_obtain ();
  check_waits (sys, mono);
  gst_object_unref (sys);
  dq_port_unref (mono);

  static const char *devices[] = {
    "clocktest:w0,offset=1000",
    "clocktest:w1,ppm=500",
    "clocktest:w2,ppm=-50000,offset=123456789",
  };
  for (guint i = 0; i < G_N_ELEMENTS (devices); i++) {
    DqPort *port = dq_test_port_open (devices[i]);
    GstClock *clock = gst_daqiri_clock_new (port);
    /* near 0 really: not CLOCK_MONOTONIC */
    if (i == 0)
      fail_unless (gst_clock_get_time (clock) < 10 * GST_SECOND);
    check_waits (clock, port);
    gst_object_unref (clock);
    dq_port_unref (port);
  }
}

GST_END_TEST;

/* the latency answer: live, min = burst-timeout, max = unbounded */
GST_START_TEST (test_latency)
{
  GstElement *src;
  GstElement *pipeline = launch_with_src (
      "daqirisrc name=src device=clocktest:lat,bursts=0 burst-timeout=300000 ! fakesink", &src);
  play_until_src_plays (pipeline, src);
  GstQuery *q = gst_query_new_latency ();
  fail_unless (gst_element_query (src, q));
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency (q, &live, &min, &max);
  fail_unless (live);
  fail_unless_equals_uint64 (min, 300 * US);
  fail_unless_equals_uint64 (max, GST_CLOCK_TIME_NONE);
  gst_query_unref (q);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* the next message of `type` on a bus, from `src`, within a second */
static GstMessage *
pop_from (GstBus *bus, GstMessageType type, GstElement *src)
{
  GstMessage *msg = gst_bus_timed_pop_filtered (bus, GST_SECOND, type);
  fail_unless (msg != NULL, "no %s message", gst_message_type_get_name (type));
  fail_unless (GST_MESSAGE_SRC (msg) == GST_OBJECT (src), "%s message from %s",
      gst_message_type_get_name (type), GST_MESSAGE_SRC_NAME (msg));
  return msg;
}

/* A clock only while the port is open: none in NULL and READY (no flag, nothing provided),
 * the port's from PAUSED on (flag set, clock-provide posted), then clock-lost and no flag
 * again once the port is closed. */
GST_START_TEST (test_clock_while_open)
{
  GstElement *src = gst_element_factory_make ("daqirisrc", NULL);
  gst_object_ref_sink (src);
  g_object_set (src, "device", "clocktest:prov,bursts=0", NULL);
  GstBus *bus = gst_bus_new ();
  gst_element_set_bus (src, bus);
  fail_if (GST_OBJECT_FLAG_IS_SET (src, GST_ELEMENT_FLAG_PROVIDE_CLOCK));
  fail_unless (gst_element_provide_clock (src) == NULL);
  fail_unless (gst_element_set_state (src, GST_STATE_READY) == GST_STATE_CHANGE_SUCCESS);
  fail_if (GST_OBJECT_FLAG_IS_SET (src, GST_ELEMENT_FLAG_PROVIDE_CLOCK));
  fail_unless (gst_element_provide_clock (src) == NULL);

  for (guint run = 0; run < 2; run++) {
    fail_unless (gst_element_set_state (src, GST_STATE_PAUSED) == GST_STATE_CHANGE_NO_PREROLL);
    fail_unless (GST_OBJECT_FLAG_IS_SET (src, GST_ELEMENT_FLAG_PROVIDE_CLOCK));
    GstClock *clock = gst_element_provide_clock (src);
    fail_unless (clock != NULL && GST_IS_DAQIRI_CLOCK (clock));
    GstMessage *msg = pop_from (bus, GST_MESSAGE_CLOCK_PROVIDE, src);
    GstClock *said = NULL;
    gboolean ready = FALSE;
    gst_message_parse_clock_provide (msg, &said, &ready);
    fail_unless (said == clock);
    fail_unless (ready);
    gst_message_unref (msg);

    fail_unless (gst_element_set_state (src, GST_STATE_READY) == GST_STATE_CHANGE_SUCCESS);
    fail_if (GST_OBJECT_FLAG_IS_SET (src, GST_ELEMENT_FLAG_PROVIDE_CLOCK));
    fail_unless (gst_element_provide_clock (src) == NULL);
    msg = pop_from (bus, GST_MESSAGE_CLOCK_LOST, src);
    gst_message_parse_clock_lost (msg, &said);
    fail_unless (said == clock);
    gst_message_unref (msg);
    gst_object_unref (clock);
  }
  fail_unless (gst_element_set_state (src, GST_STATE_NULL) == GST_STATE_CHANGE_SUCCESS);
  fail_if (GST_OBJECT_FLAG_IS_SET (src, GST_ELEMENT_FLAG_PROVIDE_CLOCK));
  gst_element_set_bus (src, NULL);
  gst_object_unref (bus);
  gst_object_unref (src);
}

GST_END_TEST;

/* A pipeline picks the port clock, and the new one of the next run after a restart (the
 * clock-provide of the reopened port makes it ask again). */
GST_START_TEST (test_pipeline_clock_each_run)
{
  GstElement *src;
  GstElement *pipeline =
      launch_with_src ("daqirisrc name=src device=clocktest:pick,bursts=0 ! fakesink", &src);
  GstClock *before = NULL;
  for (guint run = 0; run < 2; run++) {
    play_until_src_plays (pipeline, src);
    GstClock *clock = gst_pipeline_get_clock (GST_PIPELINE (pipeline));
    GstClock *provided = gst_element_provide_clock (src);
    fail_unless (provided != NULL);
    fail_unless (clock == provided, "pipeline clock is %s", GST_OBJECT_NAME (clock));
    fail_unless (clock != before);
    gst_object_unref (provided);
    if (before != NULL)
      gst_object_unref (before);
    before = clock;
    gst_element_set_state (pipeline, GST_STATE_NULL);
    fail_unless (gst_element_provide_clock (src) == NULL);
  }
  gst_object_unref (before);
  gst_object_unref (src);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* ---- GstDaqiriTimeMap ------------------------------------------------------------ */

/* which clocks read the port time exactly */
GST_START_TEST (test_map_modes)
{
  DqPort *posix = dq_test_port_open ("clocktest:mono,posix");
  DqPort *nic = dq_test_port_open ("clocktest:nic");
  GstClock *sys = gst_system_clock_obtain ();
  GstClock *realtime =
      g_object_new (GST_TYPE_SYSTEM_CLOCK, "clock-type", GST_CLOCK_TYPE_REALTIME, NULL);
  gst_object_ref_sink (realtime);
  GstClock *posix_clock = gst_daqiri_clock_new (posix);
  GstClock *nic_clock = gst_daqiri_clock_new (nic);
  GstDaqiriTimeMap map;

  gst_daqiri_time_map_init (&map, posix);
  fail_unless_equals_uint64 (gst_daqiri_time_map_convert (&map, 5), GST_CLOCK_TIME_NONE);
  gst_daqiri_time_map_set_clock (&map, sys);
  fail_unless_equals_int (map.mode, GST_DAQIRI_TIME_MAP_DIRECT);
  fail_unless_equals_uint64 (gst_daqiri_time_map_convert (&map, 123456789), 123456789);
  gst_daqiri_time_map_set_clock (&map, posix_clock);
  fail_unless_equals_int (map.mode, GST_DAQIRI_TIME_MAP_DIRECT);
  gst_daqiri_time_map_set_clock (&map, realtime);
  fail_unless_equals_int (map.mode, GST_DAQIRI_TIME_MAP_FITTED);
  gst_daqiri_time_map_set_clock (&map, nic_clock);
  fail_unless_equals_int (map.mode, GST_DAQIRI_TIME_MAP_FITTED);
  gst_daqiri_time_map_clear (&map);

  gst_daqiri_time_map_init (&map, nic);
  gst_daqiri_time_map_set_clock (&map, nic_clock);
  fail_unless_equals_int (map.mode, GST_DAQIRI_TIME_MAP_DIRECT);
  fail_unless_equals_uint64 (gst_daqiri_time_map_convert (&map, 42), 42);
  /* a slaved clock: the map follows its calibration */
  gst_clock_set_calibration (nic_clock, 1000, 5000, 2, 1);
  fail_unless_equals_uint64 (gst_daqiri_time_map_convert (&map, 1500), 6000);
  gst_clock_set_calibration (nic_clock, 0, 0, 1, 1);
  gst_daqiri_time_map_set_clock (&map, sys);
  fail_unless_equals_int (map.mode, GST_DAQIRI_TIME_MAP_FITTED);
  /* fitted on a live clock: the first conversion samples; the port clock runs at the
   * rate of CLOCK_MONOTONIC, so the offset holds to a few us */
  guint64 p = dq_port_time (nic);
  GstClockTime c = gst_daqiri_time_map_convert (&map, p);
  fail_unless_equals_uint64 (map.n_samples, 1);
  gint64 off = clock_minus_port (sys, nic);
  fail_unless (ABS ((gint64) c - ((gint64) p + off)) < 50 * (gint64) US);
  gst_daqiri_time_map_clear (&map);

  gst_object_unref (posix_clock);
  gst_object_unref (nic_clock);
  gst_object_unref (realtime);
  gst_object_unref (sys);
  dq_port_unref (posix);
  dq_port_unref (nic);
}

GST_END_TEST;

/* a port clock that cannot be read within 1 ms gives no samples (no mapping), rather
 * than pairs that may be off by as much */
GST_START_TEST (test_map_slow_reads)
{
  DqPort *port = dq_test_port_open ("clocktest:slow,slow=1500");
  GstClock *sys = gst_system_clock_obtain ();
  GstDaqiriTimeMap map;
  gst_daqiri_time_map_init (&map, port);
  gst_daqiri_time_map_set_clock (&map, sys);
  fail_unless_equals_int (map.mode, GST_DAQIRI_TIME_MAP_FITTED);
  fail_unless_equals_uint64 (gst_daqiri_time_map_convert (&map, GST_SECOND), GST_CLOCK_TIME_NONE);
  fail_unless_equals_uint64 (map.n_samples, 0);
  gst_daqiri_time_map_clear (&map);
  gst_object_unref (sys);
  dq_port_unref (port);
}

GST_END_TEST;

/* a map fed by hand (no port): port time p is clock time 7 s + 1.0001 * (p - 1 s) */
static GstClockTime
truth (guint64 p)
{
  return 7 * GST_SECOND + (p - GST_SECOND) + (p - GST_SECOND) / 10000;
}

/* the fixture of the "time-map-fitted" tests: a map in FITTED mode on a test clock */
static GstDaqiriTimeMap fit_map;
static GstClock *fit_clock;

static void
fitted_setup (void)
{
  fit_clock = gst_test_clock_new ();
  gst_daqiri_time_map_init (&fit_map, NULL);
  gst_daqiri_time_map_set_clock (&fit_map, fit_clock);
  fail_unless_equals_int (fit_map.mode, GST_DAQIRI_TIME_MAP_FITTED);
}

static void
fitted_teardown (void)
{
  gst_daqiri_time_map_clear (&fit_map);
  gst_object_unref (fit_clock);
}

/* the offset of the latest pair until MIN_FIT pairs, then the fit */
GST_START_TEST (test_map_offset_then_fit)
{
  fail_unless_equals_uint64 (
      gst_daqiri_time_map_convert (&fit_map, GST_SECOND), GST_CLOCK_TIME_NONE);

  guint64 p = GST_SECOND;
  for (guint i = 0; i < GST_DAQIRI_TIME_MAP_MIN_FIT - 1; i++, p += 50 * MS) {
    gst_daqiri_time_map_add_observation (&fit_map, p, truth (p));
    /* 1:1 from the latest pair (far ahead: a slew this long has completed) */
    guint64 q = p + 10 * GST_SECOND;
    fail_unless_equals_uint64 (gst_daqiri_time_map_convert (&fit_map, q), truth (p) + (q - p));
  }
  fail_unless_equals_uint64 (fit_map.n_fits, 0);
  gst_daqiri_time_map_add_observation (&fit_map, p, truth (p));
  fail_unless_equals_uint64 (fit_map.n_fits, 1);
  /* the fit follows the 100 ppm rate: 20 s further on it is still within 2 ns */
  guint64 q = p + 20 * GST_SECOND;
  GstClockTime got = gst_daqiri_time_map_convert (&fit_map, q);
  fail_unless (ABS (GST_CLOCK_DIFF (truth (q), got)) <= 2, "fit off by %" G_GINT64_FORMAT,
      GST_CLOCK_DIFF (truth (q), got));
}

GST_END_TEST;

/* a new line is reached by slewing: at most 1/20 of the elapsed port time per
 * conversion, so the converted times keep increasing */
GST_START_TEST (test_map_slew)
{
  guint64 p = GST_SECOND;
  gst_daqiri_time_map_add_observation (&fit_map, p, 3 * GST_SECOND);
  GstClockTime prev = gst_daqiri_time_map_convert (&fit_map, p);
  fail_unless_equals_uint64 (prev, 3 * GST_SECOND);
  /* the clocks now seem 500 us further apart (below the restart threshold) */
  gst_daqiri_time_map_add_observation (&fit_map, p + MS, 3 * GST_SECOND + MS + 500 * US);
  fail_unless (fit_map.pending);
  guint steps = 0;
  for (p += 100 * US; fit_map.pending; p += 100 * US, steps++) {
    GstClockTime t = gst_daqiri_time_map_convert (&fit_map, p);
    GstClockTimeDiff d = GST_CLOCK_DIFF (prev, t);
    fail_unless (d >= 100 * (gint64) US && d <= 105 * (gint64) US,
        "step %u: %" G_GINT64_FORMAT " ns", steps, d);
    prev = t;
    fail_unless (steps < 200);
  }
  /* 500 us at 5 us per 100 us */
  fail_unless (steps >= 99 && steps <= 101, "%u steps", steps);
  fail_unless_equals_uint64 (
      gst_daqiri_time_map_convert (&fit_map, 5 * GST_SECOND), 7 * GST_SECOND + 500 * US);
  fail_unless_equals_uint64 (fit_map.n_restarts, 0);
}

GST_END_TEST;

/* a pair 10 ms or more off the line (a clock was set) restarts the window, taken at once;
 * a fit whose rate is off by more than 1000 ppm is refused */
GST_START_TEST (test_map_restart_and_refuse)
{
  guint64 p = GST_SECOND;
  for (guint i = 0; i < 10; i++, p += 50 * MS)
    gst_daqiri_time_map_add_observation (&fit_map, p, truth (p));
  fail_unless (fit_map.n_fits > 0);
  gst_daqiri_time_map_convert (&fit_map, p);
  gst_daqiri_time_map_add_observation (&fit_map, p, truth (p) + GST_SECOND);
  fail_unless_equals_uint64 (fit_map.n_restarts, 1);
  fail_unless_equals_int (fit_map.n_pairs, 1);
  fail_unless_equals_uint64 (
      gst_daqiri_time_map_convert (&fit_map, p + MS), truth (p) + GST_SECOND + MS);

  /* a port clock 1 % slow: refused, the latest offset is used */
  gst_daqiri_time_map_clear (&fit_map);
  gst_daqiri_time_map_set_clock (&fit_map, fit_clock);
  for (guint64 i = 0; i < GST_DAQIRI_TIME_MAP_MIN_FIT + 2; i++)
    gst_daqiri_time_map_add_observation (
        &fit_map, GST_SECOND + i * 10 * MS, GST_SECOND + i * 10 * MS + i * 100 * US);
  fail_unless_equals_uint64 (fit_map.n_fits, 0);
  fail_unless_equals_uint64 (fit_map.n_rejected, 3);
  guint64 last = GST_DAQIRI_TIME_MAP_MIN_FIT + 1;
  fail_unless_equals_uint64 (
      gst_daqiri_time_map_convert (&fit_map, 10 * GST_SECOND), 10 * GST_SECOND + last * 100 * US);
}

GST_END_TEST;

/* samples: every 10 ms of port time at first, the interval doubling as the window fills */
GST_START_TEST (test_map_sampling)
{
  GstClock *tc = gst_test_clock_new_with_start_time (GST_SECOND);
  ct_sim_clock = tc;
  const char *device = "clocktest:samp,sim,ppm=30";
  DqPort *port = dq_test_port_open (device);
  GstDaqiriTimeMap map;
  gst_daqiri_time_map_init (&map, port);
  gst_daqiri_time_map_set_clock (&map, tc);

  /* 1 ms per conversion for 2 s: exact (to rounding) once fitted; before, the offset of
   * the latest pair misses the 30 ppm over up to 10 ms */
  for (guint i = 0; i < 2000; i++) {
    gst_test_clock_advance_time (GST_TEST_CLOCK (tc), MS);
    guint64 p = dq_port_time (port);
    GstClockTime c = gst_daqiri_time_map_convert (&map, p);
    GstClockTimeDiff err = GST_CLOCK_DIFF (gst_clock_get_time (tc), c);
    fail_unless (
        ABS (err) <= (map.n_fits > 0 ? 5 : 400), "conversion %u off by %" G_GINT64_FORMAT, i, err);
  }
  /* 32 at 10 ms (0.32 s), 32 at 20 ms (0.64 s), then 40 ms apart: 1.04 s left */
  fail_unless (map.n_samples >= 64 + 25 && map.n_samples <= 64 + 27,
      "%" G_GUINT64_FORMAT " samples", map.n_samples);
  fail_unless_equals_uint64 (map.interval, 40 * MS);
  gst_daqiri_time_map_clear (&map);
  dq_port_unref (port);
  ct_sim_clock = NULL;
  gst_object_unref (tc);
}

GST_END_TEST;

static Suite *
clock_suite (void)
{
  TCase *tc;
  Suite *s = dq_check_suite_new ("daqiri-clock", "general", 60, &tc);

#ifdef CLOCK_TEST_EMU
  tcase_add_test (tc, test_pts_port_clock);
  tcase_add_test (tc, test_pts_system_clock);
  tcase_add_test (tc, test_wait_emu);
#endif
  tcase_add_test (tc, test_drift_fast);
  tcase_add_test (tc, test_drift_slow);
  tcase_add_test (tc, test_port_time_meta);
  tcase_add_test (tc, test_wait_foreign);
  tcase_add_test (tc, test_latency);
  tcase_add_test (tc, test_clock_while_open);
  tcase_add_test (tc, test_pipeline_clock_each_run);
  tcase_add_test (tc, test_map_modes);
  tcase_add_test (tc, test_map_slow_reads);
  tcase_add_test (tc, test_map_sampling);
  TCase *fitted = dq_check_add_tcase (s, "time-map-fitted", 60);
  tcase_add_checked_fixture (fitted, fitted_setup, fitted_teardown);
  tcase_add_test (fitted, test_map_offset_then_fit);
  tcase_add_test (fitted, test_map_slew);
  tcase_add_test (fitted, test_map_restart_and_refuse);
  return s;
}

int
main (int argc, char **argv)
{
  gst_check_init (&argc, &argv);

  /* the elements of this program's copy of the plugin; a daqiri plugin file found on
   * the plugin path would register the same types a second time */
  GstPlugin *installed = gst_registry_find_plugin (gst_registry_get (), "daqiri");
  if (installed != NULL) {
    g_printerr ("a daqiri plugin file is on the plugin path (%s); this test registers its "
                "own copy: run it with GST_PLUGIN_PATH_1_0 free of it\n",
        gst_plugin_get_filename (installed));
    gst_object_unref (installed);
    return 1;
  }
  if (!dq_register_linked_plugin ()) {
    g_printerr ("registering the daqiri plugin failed\n");
    return 1;
  }
  ct_engine_register ();

  return gst_check_run_suite (clock_suite (), "daqiri-clock", __FILE__);
}
