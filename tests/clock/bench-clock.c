/* Cost of daqirisrc's time code per buffer. Prints "name value unit" lines.
 *
 * The pieces, each timed alone over many calls: the object-lock read of the pipeline clock
 * and base time, GstDaqiriTimeMap conversion on the port's own clock (DIRECT) and on
 * another clock (FITTED, samples included), and the port-time GstReferenceTimestampMeta
 * (add, and its share of the buffer's free). Then, for scale, the whole element per buffer:
 * daqirisrc on a clocktest port that hands out bursts without waiting, into fakesink, on
 * its own clock and on the system clock. */
#include <gst/gst.h>

#include "clock-engine.h"
#include "daqiri-engine.h"
#include "dq-linked-plugin.h"
#include "dq-test-port.h"
#include "gstdaqiriclock.h"


static volatile guint64 sink_value;

static double
now_ns (void)
{
  return (double) g_get_monotonic_time () * 1000.0;
}

static void
report (const char *name, double value, const char *unit)
{
  g_print ("%-32s %10.1f %s\n", name, value, unit);
}

static double
bench_lock (guint n)
{
  GstElement *e = gst_element_factory_make ("fakesink", NULL);
  guint64 sum = 0;
  double t0 = now_ns ();
  for (guint i = 0; i < n; i++) {
    GST_OBJECT_LOCK (e);
    sum += GST_ELEMENT_CAST (e)->base_time + GPOINTER_TO_SIZE (GST_ELEMENT_CAST (e)->clock);
    GST_OBJECT_UNLOCK (e);
  }
  double t = (now_ns () - t0) / n;
  sink_value = sum;
  gst_object_unref (e);
  return t;
}

static double
bench_map (GstClock *clock, DqPort *port, guint n, guint64 step, guint64 *samples)
{
  GstDaqiriTimeMap map;
  gst_daqiri_time_map_init (&map, port);
  gst_daqiri_time_map_set_clock (&map, clock);
  guint64 ts = dq_port_time (port);
  guint64 sum = 0;
  double t0 = now_ns ();
  for (guint i = 0; i < n; i++, ts += step)
    sum += gst_daqiri_time_map_convert (&map, ts);
  double t = (now_ns () - t0) / n;
  sink_value = sum;
  *samples = map.n_samples;
  gst_daqiri_time_map_clear (&map);
  return t;
}

/* buffer new + (meta) + unref, with and without the meta */
static double
bench_meta (guint n, gboolean with_meta)
{
  GstCaps *caps =
      gst_caps_new_simple ("timestamp/x-daqiri-port", "device", G_TYPE_STRING, "emu:bench", NULL);
  double t0 = now_ns ();
  for (guint i = 0; i < n; i++) {
    GstBuffer *buf = gst_buffer_new ();
    if (with_meta)
      gst_buffer_add_reference_timestamp_meta (buf, caps, 1000 + i, 500);
    gst_buffer_unref (buf);
  }
  double t = (now_ns () - t0) / n;
  gst_caps_unref (caps);
  return t;
}

static double
bench_element (const char *device, gboolean system_clock, guint bursts)
{
  char *desc = g_strdup_printf ("daqirisrc name=src device=\"%s\" ! fakesink name=sink "
                                "sync=false signal-handoffs=false",
      device);
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (desc, &error);
  g_assert_no_error (error);
  g_free (desc);
  GstClock *sys = gst_system_clock_obtain ();
  if (system_clock)
    gst_pipeline_use_clock (GST_PIPELINE (pipeline), sys);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");

  double t0 = now_ns ();
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  /* wait until every burst went through: the sink's last buffer is the last burst */
  guint64 seen = 0;
  while (seen < bursts) {
    g_usleep (2000);
    GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
    GstStructure *st;
    g_object_get (src, "stats", &st, NULL);
    gst_structure_get_uint64 (st, "bursts", &seen);
    gst_structure_free (st);
    gst_object_unref (src);
  }
  double t = (now_ns () - t0) / bursts;
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  gst_object_unref (sys);
  return t;
}

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);
  if (!dq_register_linked_plugin ())
    return 1;
  ct_engine_register ();

  const guint n = 2000000;
  DqPort *port = dq_test_port_open ("clocktest:bench,bursts=0");
  GstClock *own = gst_daqiri_clock_new (port);
  GstClock *sys = gst_system_clock_obtain ();
  guint64 samples;

  report ("object-lock-read", bench_lock (n), "ns/buffer");
  report ("map-direct", bench_map (own, port, n, 10 * GST_USECOND, &samples), "ns/buffer");
  /* bursts 10 us apart (100 k/s): the map samples every 10 ms .. 2 s of that */
  report ("map-fitted-100k-bursts/s", bench_map (sys, port, n, 10 * GST_USECOND, &samples),
      "ns/buffer");
  report ("map-fitted-samples", (double) samples, "samples");
  /* bursts 1 us apart (1 M/s) */
  report ("map-fitted-1M-bursts/s", bench_map (sys, port, n, GST_USECOND, &samples), "ns/buffer");
  double plain = bench_meta (n, FALSE);
  double meta = bench_meta (n, TRUE);
  report ("buffer-new-free", plain, "ns/buffer");
  report ("port-time-meta", meta - plain, "ns/buffer");
  gst_object_unref (own);
  gst_object_unref (sys);
  dq_port_unref (port);

  /* whole element, alternating, best of 3 each (the machine is shared) */
  const guint bursts = 300000;
  double best[2] = { G_MAXDOUBLE, G_MAXDOUBLE };
  for (guint round = 0; round < 6; round++) {
    gboolean system_clock = round % 2;
    char *dev = g_strdup_printf ("clocktest:e2e%u,bursts=%u,packets=4", round, bursts);
    best[system_clock] = MIN (best[system_clock], bench_element (dev, system_clock, bursts));
    g_free (dev);
  }
  report ("daqirisrc-on-own-clock", best[0], "ns/buffer");
  report ("daqirisrc-on-system-clock", best[1], "ns/buffer");
  return 0;
}
