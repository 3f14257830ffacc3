/* GPU frames to the wire: frames that daqirireorder made in GPU memory, cut into packets by
 * daqiripay and sent by daqirisink on an emulated ConnectX, received and put back together on
 * the CPU:
 *
 *   appsrc (bursts) ! daqirireorder memory=cuda ! daqiripay WAY ! daqirisink device=emu:A
 *   daqirisrc device=emu:B ! daqirireorder memory=system ! appsink      (A cabled to B)
 *
 * The ways daqiripay has for a GPU frame:
 *   two-segment  headers made on the CPU, each payload read by the NIC from the GPU frame
 *                where it lies (daqirisink's two-segment sends): nothing copied out of the GPU
 *                by the elements; the emulated NIC reads device memory by copies, as a
 *                ConnectX's DMA would
 *   gpu          memory=cuda: packets made on the GPU, copied to the host once
 *   cpu          memory=system: the frame copied to the host, packets made there
 * Checked for each: every frame received equals the frame sent, byte for byte; daqiripay's
 * counters (packets per way, the bytes it copied out of GPU memory: none two-segment) and
 * daqirisink's (packets sent two-segment).
 *
 * With --bench: the three ways side by side, interleaved over rounds, each sending BENCH
 * frames: packets/s from the first frame pushed to the last received, and host CPU time per
 * packet (every thread of the process but the emulated NIC's, whose copies stand in for the
 * NIC's DMA). Machine-readable lines, then one summary line.
 *
 * Exit 77 (skipped) without a GPU. Built with DQ_TEST_EMU it runs against the plugin built on
 * the CUDA emulator (tests/reorder/emu-plugin), in CI. Prints one summary line.
 */
#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/daqiri/daqiri.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daqiri-reorder.h"
#include "gpu-test-pull.h"
#include "gpu-test-start.h"

#define IN_HEADER 8 /* input packets: BE u32 sequence number, 4 bytes, the payload */
#define OUT_HEADER 46
#define PACKET_BYTES(payload) (OUT_HEADER + (payload))

typedef enum { WAY_TWO_SEGMENT, WAY_GPU, WAY_CPU, N_WAYS } Way;
static const char *const way_names[N_WAYS] = { "two-segment", "gpu", "cpu" };
static const char *const way_props[N_WAYS] = {
  "two-segment=true memory=system",
  "two-segment=false memory=cuda",
  "two-segment=false memory=system",
};

typedef struct {
  guint ppb, payload, frames;
} Shape;

static guint8
payload_byte (guint32 seq, guint k)
{
  return (guint8) (seq * 7 + k * 13 + (seq >> 8));
}

/* Frame f's bursts: one burst of ppb packets, in order */
static GstBuffer *
make_burst (const Shape *s, guint f)
{
  guint len = IN_HEADER + s->payload;
  guint8 *data = g_malloc0 ((gsize) s->ppb * len);
  GstDaqiriPacket *d = g_new0 (GstDaqiriPacket, s->ppb);
  for (guint i = 0; i < s->ppb; i++) {
    guint32 seq = f * s->ppb + i;
    guint8 *q = data + (gsize) i * len;
    q[0] = (guint8) (seq >> 24);
    q[1] = (guint8) (seq >> 16);
    q[2] = (guint8) (seq >> 8);
    q[3] = (guint8) seq;
    for (guint k = 0; k < s->payload; k++)
      q[IN_HEADER + k] = payload_byte (seq, k);
    d[i].offset = i * len;
    d[i].length = len;
  }
  GstBuffer *buf = gst_buffer_new_wrapped (data, (gsize) s->ppb * len);
  gst_buffer_add_daqiri_packet_meta (buf, d, s->ppb);
  GST_BUFFER_PTS (buf) = (GstClockTime) f * GST_MSECOND;
  g_free (d);
  return buf;
}

/* Whether frame f as received is the frame sent (the payloads of its packets in order) */
static gboolean
frame_ok (const Shape *s, guint f, const guint8 *data, gsize size)
{
  if (size != (gsize) s->ppb * s->payload)
    return FALSE;
  for (guint i = 0; i < s->ppb; i++)
    for (guint k = 0; k < s->payload; k++)
      if (data[(gsize) i * s->payload + k] != payload_byte (f * s->ppb + i, k))
        return FALSE;
  return TRUE;
}

/* CPU time (ns) of the process's threads, the emulated NIC's ("emu:...") left out */
static guint64
host_cpu_ns (void)
{
  guint64 total = 0;
  DIR *dir = opendir ("/proc/self/task");
  if (dir == NULL)
    return 0;
  struct dirent *e;
  while ((e = readdir (dir)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    gchar *path = g_strdup_printf ("/proc/self/task/%s/comm", e->d_name);
    gchar *comm = NULL;
    gboolean device =
        g_file_get_contents (path, &comm, NULL, NULL) && g_str_has_prefix (comm, "emu:");
    g_free (comm);
    g_free (path);
    if (device)
      continue;
    path = g_strdup_printf ("/proc/self/task/%s/schedstat", e->d_name);
    gchar *stat = NULL;
    if (g_file_get_contents (path, &stat, NULL, NULL))
      total += g_ascii_strtoull (stat, NULL, 10);
    g_free (stat);
    g_free (path);
  }
  closedir (dir);
  return total;
}

typedef struct {
  guint received, bad;
  guint64 pay_packets, pay_two_segment, pay_gpu, pay_host_copy;
  guint64 sink_two_segment, sink_packets;
  gint64 wall_ns;
  guint64 cpu_ns;
  gchar *error;
} Result;

static guint64
stat_of (GstElement *pipeline, const char *element, const char *field)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (pipeline), element);
  GstStructure *st = NULL;
  guint64 v = G_MAXUINT64;
  g_object_get (e, "stats", &st, NULL);
  if (st == NULL || !gst_structure_get_uint64 (st, field, &v))
    v = G_MAXUINT64;
  if (st)
    gst_structure_free (st);
  gst_object_unref (e);
  return v;
}

/* One run of one way: every frame sent, received and checked */
static void
run_way (const Shape *s, Way way, GPtrArray *bursts, Result *res)
{
  static guint serial;
  guint id = serial++;
  memset (res, 0, sizeof *res);
  gchar *fields =
      g_strdup_printf ("seq-bits=32 packets-per-batch=%u payload-size=%u", s->ppb, s->payload);
  gchar *rx_desc =
      g_strdup_printf ("daqirisrc device=emu:pay%ur,peer=none filter=all burst-packets=256 ! "
                       "daqirireorder memory=system seq-offset=336 payload-offset=%u window=8 %s ! "
                       "appsink name=out sync=false max-buffers=0",
          id, OUT_HEADER, fields);
  gchar *tx_desc =
      g_strdup_printf ("appsrc name=in format=time caps=application/x-daqiri-packets ! "
                       "daqirireorder memory=cuda seq-offset=0 payload-offset=%u window=8 %s ! "
                       "daqiripay name=pay %s seq-offset=336 payload-offset=%u %s ! "
                       "daqirisink name=tx device=emu:pay%u,peer=pay%ur",
          IN_HEADER, fields, way_props[way], OUT_HEADER, fields, id, id);
  GError *err = NULL;
  GstElement *rx = gst_parse_launch (rx_desc, &err);
  GstElement *tx = rx ? gst_parse_launch (tx_desc, &err) : NULL;
  g_free (rx_desc);
  g_free (tx_desc);
  g_free (fields);
  if (tx == NULL) {
    res->error = g_strdup (err ? err->message : "?");
    g_clear_error (&err);
    if (rx)
      gst_object_unref (rx);
    return;
  }
  GstElement *out = gst_bin_get_by_name (GST_BIN (rx), "out");
  GstElement *in = gst_bin_get_by_name (GST_BIN (tx), "in");
  if (gst_element_set_state (rx, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE ||
      gst_element_set_state (tx, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    res->error = dq_bus_error (tx);
    if (res->error == NULL)
      res->error = dq_bus_error (rx);
    if (res->error == NULL)
      res->error = g_strdup ("a pipeline does not start");
    goto done;
  }
  guint64 cpu0 = host_cpu_ns ();
  gint64 t0 = g_get_monotonic_time ();
  for (guint f = 0; f < bursts->len; f++)
    gst_app_src_push_buffer (GST_APP_SRC (in), gst_buffer_ref (g_ptr_array_index (bursts, f)));
  gst_app_src_end_of_stream (GST_APP_SRC (in));
  GstElement *const watched[] = { tx, rx };
  GstSample *sample;
  while (res->received < s->frames &&
      (sample = dq_pull_sample (out, watched, G_N_ELEMENTS (watched), 10, &res->error)) != NULL) {
    GstBuffer *buf = gst_sample_get_buffer (sample);
    GstMapInfo map;
    gst_buffer_map (buf, &map, GST_MAP_READ);
    if (!frame_ok (s, (guint) GST_BUFFER_OFFSET (buf), map.data, map.size) ||
        GST_BUFFER_OFFSET (buf) != res->received)
      res->bad++;
    gst_buffer_unmap (buf, &map);
    res->received++;
    gst_sample_unref (sample);
  }
  res->wall_ns = (g_get_monotonic_time () - t0) * 1000;
  res->cpu_ns = host_cpu_ns () - cpu0;
  /* the sender reaches EOS once its sink has flushed */
  GstMessage *eos = gst_bus_timed_pop_filtered (
      GST_ELEMENT_BUS (tx), 5 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (eos)
    gst_message_unref (eos);
  res->pay_packets = stat_of (tx, "pay", "packets");
  res->pay_two_segment = stat_of (tx, "pay", "two-segment");
  res->pay_gpu = stat_of (tx, "pay", "gpu-packetized");
  res->pay_host_copy = stat_of (tx, "pay", "host-copy-bytes");
  res->sink_two_segment = stat_of (tx, "tx", "two-segment");
  res->sink_packets = stat_of (tx, "tx", "packets");
done:
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (in);
  gst_object_unref (out);
  gst_object_unref (tx);
  gst_object_unref (rx);
}

static GPtrArray *
make_bursts (const Shape *s)
{
  GPtrArray *bursts = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  for (guint f = 0; f < s->frames; f++)
    g_ptr_array_add (bursts, make_burst (s, f));
  return bursts;
}

/* Every frame intact, and each way's counters as it must count */
static gboolean
check_way (const Shape *s, Way way, const Result *r)
{
  guint64 packets = (guint64) s->frames * s->ppb;
  guint64 frame_bytes = (guint64) s->ppb * s->payload;
  guint64 expect_copy = way == WAY_TWO_SEGMENT ? 0
      : way == WAY_GPU                         ? packets * PACKET_BYTES (s->payload)
                                               : s->frames * frame_bytes;
  gboolean ok = r->error == NULL && r->received == s->frames && r->bad == 0 &&
      r->pay_packets == packets && r->sink_packets == packets &&
      r->pay_two_segment == (way == WAY_TWO_SEGMENT ? packets : 0) &&
      r->sink_two_segment == (way == WAY_TWO_SEGMENT ? packets : 0) &&
      r->pay_gpu == (way == WAY_GPU ? packets : 0) && r->pay_host_copy == expect_copy;
  printf (
      "%s %s, %u x %u B packets x %u frames: %u received, %u bad; daqiripay packets %" G_GUINT64_FORMAT
      " two-segment %" G_GUINT64_FORMAT " gpu-packetized %" G_GUINT64_FORMAT
      " host-copy-bytes %" G_GUINT64_FORMAT " (expected %" G_GUINT64_FORMAT
      "); daqirisink two-segment %" G_GUINT64_FORMAT "%s%s\n",
      ok ? "PASS" : "FAIL", way_names[way], s->ppb, s->payload, s->frames, r->received, r->bad,
      r->pay_packets, r->pay_two_segment, r->pay_gpu, r->pay_host_copy, expect_copy,
      r->sink_two_segment, r->error ? "; error: " : "", r->error ? r->error : "");
  return ok;
}

static gint
cmp_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static int
bench (guint rounds)
{
  const Shape s = { 256, 1024, 400 };
  GPtrArray *bursts = make_bursts (&s);
  GArray *pps[N_WAYS], *cpu[N_WAYS];
  for (guint w = 0; w < N_WAYS; w++) {
    pps[w] = g_array_new (FALSE, FALSE, sizeof (double));
    cpu[w] = g_array_new (FALSE, FALSE, sizeof (double));
  }
  gboolean ok = TRUE;
  for (guint round = 0; round < rounds && ok; round++) {
    for (guint w = 0; w < N_WAYS && ok; w++) {
      Result r;
      run_way (&s, (Way) w, bursts, &r);
      ok = r.error == NULL && r.received == s.frames && r.bad == 0;
      double packets = (double) s.frames * s.ppb;
      double p = packets / ((double) r.wall_ns / 1e9), c = (double) r.cpu_ns / packets;
      g_array_append_val (pps[w], p);
      g_array_append_val (cpu[w], c);
      printf ("bench-pay-gpu round=%u way=%s packets=%.0f wall_ns=%" G_GINT64_FORMAT
              " pps=%.0f host_cpu_ns_per_packet=%.1f%s%s\n",
          round, way_names[w], packets, r.wall_ns, p, c, r.error ? " error=" : "",
          r.error ? r.error : "");
      g_free (r.error);
    }
  }
  double med_pps[N_WAYS], med_cpu[N_WAYS];
  for (guint w = 0; w < N_WAYS; w++) {
    g_array_sort (pps[w], cmp_double);
    g_array_sort (cpu[w], cmp_double);
    med_pps[w] = pps[w]->len ? g_array_index (pps[w], double, pps[w]->len / 2) : 0;
    med_cpu[w] = cpu[w]->len ? g_array_index (cpu[w], double, cpu[w]->len / 2) : 0;
    printf ("bench-pay-gpu median way=%s pps=%.0f host_cpu_ns_per_packet=%.1f rounds=%u\n",
        way_names[w], med_pps[w], med_cpu[w], pps[w]->len);
    g_array_unref (pps[w]);
    g_array_unref (cpu[w]);
  }
  printf ("bench-pay-gpu summary: %u x %u B packets a frame, median of %u rounds: two-segment "
          "%.2f Mpps %.0f ns CPU/packet; GPU packetize + copy %.2f Mpps %.0f ns; CPU packetize "
          "%.2f Mpps %.0f ns%s\n",
      s.ppb, s.payload, rounds, med_pps[WAY_TWO_SEGMENT] / 1e6, med_cpu[WAY_TWO_SEGMENT],
      med_pps[WAY_GPU] / 1e6, med_cpu[WAY_GPU], med_pps[WAY_CPU] / 1e6, med_cpu[WAY_CPU],
      ok ? "" : " (a run failed)");
  g_ptr_array_unref (bursts);
  return ok ? 0 : 1;
}

int
main (int argc, char **argv)
{
  dq_gpu_test_start ("pay-gpu", &argc, &argv);
  if (argc > 1 && strcmp (argv[1], "--bench") == 0)
    return bench (argc > 2 ? (guint) atoi (argv[2]) : 5);

  /* 64 packets of 1000 bytes, and 7 of 14 (packets of 60 bytes: no padding) */
  const Shape shapes[] = { { 64, 1000, 60 }, { 7, 14, 30 } };
  guint passed = 0, failed = 0;
  for (guint si = 0; si < G_N_ELEMENTS (shapes); si++) {
    GPtrArray *bursts = make_bursts (&shapes[si]);
    for (guint w = 0; w < N_WAYS; w++) {
      Result r;
      run_way (&shapes[si], (Way) w, bursts, &r);
      if (check_way (&shapes[si], (Way) w, &r))
        passed++;
      else
        failed++;
      g_free (r.error);
    }
    g_ptr_array_unref (bursts);
  }
  printf ("pay-gpu: %u passed, %u failed\n", passed, failed);
  return failed ? 1 : 0;
}
