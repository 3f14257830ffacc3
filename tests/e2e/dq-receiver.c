/* The end-to-end tests' receiver and sender helpers (see dq-receiver.h). */
#include "dq-receiver.h"

#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/daqiri/daqiri.h>

#include <string.h>

void
receiver_init (Receiver *r, guint n_expected)
{
  memset (r, 0, sizeof *r);
  gst_daqiri_test_packet_params_init (&r->params);
  r->n_expected = n_expected;
  r->seen = g_malloc0 (MAX (n_expected, 1));
  r->held = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  r->last_seq = -1;
  g_mutex_init (&r->lock);
  g_cond_init (&r->cond);
}

void
receiver_clear (Receiver *r)
{
  g_free (r->seen);
  g_ptr_array_unref (r->held);
  g_mutex_clear (&r->lock);
  g_cond_clear (&r->cond);
}

void
receiver_reset (Receiver *r)
{
  memset (r->seen, 0, MAX (r->n_expected, 1));
  r->received = 0;
  r->bytes = 0;
  r->last_seq = -1;
  memset (r->per_flow, 0, sizeof r->per_flow);
  r->flow_id_zero = 0;
}

static void
model_check (Receiver *r, guint64 ts, gsize len)
{
  guint64 w = 8 * (MAX (len, 60) + r->overhead);

  if (r->trains > 0) {
    guint64 expected = r->t0 + gst_util_uint64_scale (r->bits, r->freq_hz, r->rate_bps);
    if (ts == expected) {
      r->in_train++;
      r->bits += w;
      return;
    }
    if (ts < expected && r->model_early++ < 5)
      g_printerr ("timestamp %" G_GUINT64_FORMAT " is %" G_GUINT64_FORMAT " ns before the "
                  "wire is free (train at %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT " bits)\n",
          ts, expected - ts, r->t0, r->bits);
  }
  r->trains++;
  r->t0 = ts;
  r->bits = w;
}

void
receiver_check_frame (Receiver *r, const guint8 *frame, gsize len, guint32 flow_id, guint64 ts)
{
  guint32 seq, flow;

  if (!gst_daqiri_test_packet_check (&r->params, frame, len, &seq, &flow)) {
    if (r->bad++ < 5)
      g_printerr ("bad packet: %s\n", gst_daqiri_test_packet_explain (&r->params, frame, len));
    return;
  }
  if (seq >= r->n_expected) {
    r->bad++;
    return;
  }
  if (r->seen[seq]++)
    r->duplicates++;
  if (flow_id != DQ_E2E_MARK_BASE + flow)
    r->wrong_flow++;
  if (flow < DQ_E2E_N_FLOWS)
    r->per_flow[flow]++;
  if (flow_id == 0)
    r->flow_id_zero++;
  if (r->check_order && (gint64) seq != r->last_seq + 1)
    r->out_of_order++;
  r->last_seq = seq;
  if (ts < r->last_ts)
    r->ts_backwards++;
  r->last_ts = ts;
  if (r->model)
    model_check (r, ts, len);
  r->received++;
  r->bytes += len;
}

static GstFlowReturn
on_sample (GstAppSink *sink, gpointer user_data)
{
  Receiver *r = user_data;
  GstSample *sample = gst_app_sink_pull_sample (sink);
  GstBuffer *buf = gst_sample_get_buffer (sample);
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
  GstMapInfo map;

  g_mutex_lock (&r->lock);
  r->buffers++;
  if (meta != NULL)
    r->max_burst = MAX (r->max_burst, meta->n_packets);
  if (meta != NULL && gst_buffer_map (buf, &map, GST_MAP_READ)) {
    if (!gst_daqiri_packet_meta_validate (meta, map.size, NULL))
      r->bad++;
    else
      for (guint i = 0; i < meta->n_packets; i++) {
        const GstDaqiriPacket *p = &meta->packets[i];
        if (r->packet_func != NULL)
          r->packet_func (r, p, map.data + p->offset, r->packet_data);
        else
          receiver_check_frame (r, map.data + p->offset, p->length, p->flow_id, p->timestamp);
      }
    gst_buffer_unmap (buf, &map);
  } else {
    r->bad++;
  }
  if (r->hold)
    g_ptr_array_add (r->held, gst_buffer_ref (buf));
  g_cond_broadcast (&r->cond);
  g_mutex_unlock (&r->lock);
  gst_sample_unref (sample);
  return GST_FLOW_OK;
}

void
receiver_attach_full (Receiver *r, GstElement *appsink, ReceiverPacketFunc func, gpointer user_data)
{
  GstAppSinkCallbacks cb = { .new_sample = on_sample };
  r->packet_func = func;
  r->packet_data = user_data;
  gst_app_sink_set_callbacks (GST_APP_SINK (appsink), &cb, r, NULL);
}

void
receiver_attach (Receiver *r, GstElement *appsink)
{
  receiver_attach_full (r, appsink, NULL, NULL);
}

/* Waits until @n packets arrived or @timeout_ms passed without progress. */
guint
receiver_wait (Receiver *r, guint n, guint timeout_ms)
{
  g_mutex_lock (&r->lock);
  guint last = r->received;
  gint64 deadline = g_get_monotonic_time () + timeout_ms * 1000;
  while (r->received < n) {
    if (!g_cond_wait_until (&r->cond, &r->lock, deadline)) {
      if (r->received == last)
        break;
      last = r->received;
      deadline = g_get_monotonic_time () + timeout_ms * 1000;
    }
  }
  guint got = r->received;
  g_mutex_unlock (&r->lock);
  return got;
}

gboolean
receiver_wait_buffer (Receiver *r, guint before, guint timeout_ms, guint keep)
{
  g_mutex_lock (&r->lock);
  gint64 deadline = g_get_monotonic_time () + timeout_ms * G_GINT64_CONSTANT (1000);
  while (r->buffers == before)
    if (!g_cond_wait_until (&r->cond, &r->lock, deadline))
      break;
  gboolean got = r->buffers > before;
  if (r->held->len > keep)
    g_ptr_array_remove_range (r->held, 0, r->held->len - keep);
  g_mutex_unlock (&r->lock);
  return got;
}

void
receiver_assert_held_intact (Receiver *r)
{
  for (guint i = 0; i < r->held->len; i++) {
    GstBuffer *buf = g_ptr_array_index (r->held, i);
    GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
    GstMapInfo map;
    fail_unless (meta != NULL);
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    guint32 seq, flow;
    for (guint k = 0; k < meta->n_packets; k++)
      fail_unless (gst_daqiri_test_packet_check (
          &r->params, map.data + meta->packets[k].offset, meta->packets[k].length, &seq, &flow));
    gst_buffer_unmap (buf, &map);
  }
}

guint64
test_packet_bytes (guint n, guint min_size, guint max_size)
{
  guint64 sum = 0;
  for (guint seq = 0; seq < n; seq++)
    sum += gst_daqiri_test_packet_size (min_size, max_size, seq);
  return sum;
}

/* Sets @pipeline PLAYING; a failure fails the test with the error the bus got. */
void
play (GstElement *pipeline)
{
  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE)
    return;
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  gst_object_unref (bus);
  if (msg != NULL) {
    GError *err = NULL;
    gchar *dbg = NULL;
    gst_message_parse_error (msg, &err, &dbg);
    fail (
        "%s does not start: %s (%s)", GST_OBJECT_NAME (pipeline), err->message, GST_STR_NULL (dbg));
  }
  fail ("%s does not start", GST_OBJECT_NAME (pipeline));
}

GstElement *
receiver_pipeline_new (Receiver *r, const gchar *device, const gchar *extra)
{
  gchar *launch = g_strdup_printf ("daqirisrc name=src device=%s flows=\"" DQ_E2E_FLOWS "\" %s ! "
                                   "appsink name=sink sync=false emit-signals=false",
      device, extra ? extra : "");
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (launch, &error);
  fail_unless (pipeline != NULL, "%s: %s", launch, error ? error->message : "");
  g_free (launch);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  receiver_attach (r, sink);
  gst_object_unref (sink);
  return pipeline;
}

GstElement *
receiver_pipeline (Receiver *r, const gchar *device, const gchar *extra)
{
  GstElement *pipeline = receiver_pipeline_new (r, device, extra);
  /* the source starts (its receive queue exists and is steered) before this returns;
   * the appsink completes its state change with the first buffer */
  play (pipeline);
  return pipeline;
}

GstElement *
ordered_receiver (Receiver *r, guint n, const gchar *device, const gchar *extra)
{
  receiver_init (r, n);
  r->check_order = TRUE;
  return receiver_pipeline (r, device, extra);
}

void
receiver_pipeline_free (Receiver *r, GstElement *rx)
{
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (rx);
  receiver_clear (r);
}

GstStructure *
element_stats (GstElement *pipeline, const gchar *name)
{
  GstElement *el = gst_bin_get_by_name (GST_BIN (pipeline), name);
  GstStructure *s = NULL;
  fail_unless (el != NULL, "no element %s", name);
  g_object_get (el, "stats", &s, NULL);
  gst_object_unref (el);
  return s;
}

guint64
stat_u64 (const GstStructure *s, const gchar *field)
{
  guint64 v = 0;
  fail_unless (gst_structure_get_uint64 (s, field, &v), "no field %s", field);
  return v;
}

static void
fail_on_error_message (GstMessage *msg, const gchar *what)
{
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    GError *err = NULL;
    gchar *dbg = NULL;
    gst_message_parse_error (msg, &err, &dbg);
    fail ("%s: %s (%s)", what, err->message, GST_STR_NULL (dbg));
  }
}

/* Runs a sender pipeline to EOS and returns the stats of its element "tx". */
GstStructure *
run_sender (const gchar *launch)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (launch, &error);
  fail_unless (pipeline != NULL, "%s: %s", launch, error ? error->message : "");
  play (pipeline);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg =
      gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "sender timed out: %s", launch);
  fail_on_error_message (msg, "sender");
  gst_message_unref (msg);
  gst_object_unref (bus);
  GstStructure *stats = element_stats (pipeline, "tx");
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  return stats;
}

GstStructure *
run_testsrc (guint n, const gchar *props, const gchar *device)
{
  gchar *launch = g_strdup_printf (
      "daqiritestsrc num-packets=%u %s ! daqirisink name=tx device=%s", n, props, device);
  GstStructure *stats = run_sender (launch);
  g_free (launch);
  return stats;
}

void
assert_warning_posted (GstElement *pipeline, const gchar *text)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *w = gst_bus_timed_pop_filtered (bus, 3 * GST_SECOND, GST_MESSAGE_WARNING);
  fail_unless (w != NULL, "no warning containing '%s'", text);
  GError *err = NULL;
  gst_message_parse_warning (w, &err, NULL);
  fail_unless (strstr (err->message, text) != NULL, "%s", err->message);
  g_error_free (err);
  gst_message_unref (w);
  gst_object_unref (bus);
}

void
assert_all_received (Receiver *r, GstElement *rx, guint n)
{
  guint got = receiver_wait (r, n, 3000);
  GstStructure *s = element_stats (rx, "src");
  guint missing = 0;
  for (guint i = 0; i < n; i++)
    missing += r->seen[i] == 0;
  fail_unless_equals_int (r->bad, 0);
  fail_unless_equals_int (r->duplicates, 0);
  fail_unless_equals_int (r->wrong_flow, 0);
  fail_unless_equals_int (r->out_of_order, 0);
  fail_unless_equals_int (r->ts_backwards, 0);
  fail_unless_equals_int (missing, 0);
  fail_unless_equals_int (got, n);
  fail_unless_equals_uint64 (stat_u64 (s, "packets"), n);
  fail_unless_equals_uint64 (stat_u64 (s, "bytes"), r->bytes);
  fail_unless_equals_uint64 (stat_u64 (s, "drops"), 0);
  fail_unless_equals_uint64 (stat_u64 (s, "truncated"), 0);
  gst_structure_free (s);
}
