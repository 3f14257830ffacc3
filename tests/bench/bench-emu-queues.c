/* bench-emu-queues: what polling several queues costs one daqirisrc. The same packets
 * are drained by one streaming thread from 1 queue and from 4 queues, side by side in one
 * run:
 *
 *   daqirisrc name=src device=emu:NAME,pause=off queues=Q ! fakesink
 *
 * Each run pre-fills the rings: with the pipeline PAUSED (the queues exist, nothing polls
 * them) N 64-byte UDP frames of F flows are put on the port's wire; the emulated device
 * steers them (RSS over the Q queues; the flows are picked so that each queue gets N/Q)
 * and writes them into the rings. Then PLAYING: the streaming thread, pinned to CPU 1,
 * drains the rings with no frame arriving meanwhile: host work only (poll the CQs, hand
 * out bursts, fakesink frees them, strides go back).
 *
 * Per run: the streaming thread's CPU time per packet (/proc/self/task/TID/schedstat:
 * time on a CPU) and the host rate it gives, 1e9 / (ns per packet): packets/s of one core
 * doing nothing else; packets/s of wall time from the first delivered packet to the last
 * (stats sampled every 100 us), which on a shared machine also holds the time the thread
 * waited for a CPU; and the stats' queue-packets (checked: N/Q each). Runs alternate 1
 * and 4 queues so that the machine's noise spreads over both; the medians are compared.
 *
 * Target: with 4 queues the host rate is >= 0.9 x the host rate with 1 queue.
 *
 * Output: one JSON object per run, a table, and one line starting "bench-emu-queues:".
 * The exit status is 0 unless a run fails (the target is reported, not enforced).
 *
 * usage: bench-emu-queues [--packets N] [--repeat R] [--flows F] [--no-pin]
 */
#include <gst/gst.h>

#include "dq-bench-util.h"
#include "dq-packet.h"
#include "bench-emu-util.h"
#include "emu.h"
#include "mlx5-rss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRAME_LEN 64
#define MANY_QUEUES 4
#define RATIO_TARGET 0.9

typedef struct {
  guint64 packets;
  guint repeat;
  guint flows;
  gboolean pin;
} Options;

typedef struct {
  guint queues;
  gboolean ok;
  char *error;
  double seconds;
  double pps;
  double src_cpu_ns;
  guint64 queue_packets[MANY_QUEUES];
} Run;

/* ---- frames ---- */

/* One frame per flow, 10.0.0.1:sport -> 10.0.0.2:5000, flow f on queue f mod 4 of an
 * RSS group of 4 (the emulator's hash, mlx5-rss.h's table). */
static guint8 *
make_frames (guint n_flows)
{
  guint8 *frames = g_malloc0 ((gsize) n_flows * FRAME_LEN);
  guint sport = 2000;
  for (guint f = 0; f < n_flows; f++) {
    guint8 *fr = frames + (gsize) f * FRAME_LEN;
    for (;;) {
      DqPacketHeaders h = { .dst_mac = { 2, 0, 0, 0, 0, 2 },
        .src_mac = { 2, 0, 0, 0, 0, 1 },
        .src_ip = 0x0a000001,
        .dst_ip = 0x0a000002,
        .src_port = (guint16) sport++,
        .dst_port = 5000 };
      dq_packet_write_headers (fr, FRAME_LEN, &h);
      guint8 in[12];
      memcpy (in, fr + DQ_PACKET_IPV4_OFFSET + 12, 8);
      memcpy (in + 8, fr + DQ_PACKET_UDP_OFFSET, 4);
      if (mlx5_rss_rqt_pick (emu_toeplitz (in, 12), MANY_QUEUES) == f % MANY_QUEUES)
        break;
    }
  }
  return frames;
}

/* ---- one run ---- */

static guint64
stats_packets (GstElement *src, guint64 *per_queue, guint n)
{
  GstStructure *st = NULL;
  guint64 packets = 0;
  g_object_get (src, "stats", &st, NULL);
  if (st == NULL)
    return 0;
  gst_structure_get_uint64 (st, "packets", &packets);
  const GValue *arr = gst_structure_get_value (st, "queue-packets");
  for (guint q = 0; per_queue != NULL && arr != NULL && q < n; q++)
    per_queue[q] = g_value_get_uint64 (gst_value_array_get_value (arr, q));
  gst_structure_free (st);
  return packets;
}

static void
run_one (const Options *o, const guint8 *frames, Run *r, guint index)
{
  char *name = g_strdup_printf ("queues%u", index);
  char *launch = g_strdup_printf ("daqirisrc name=src device=emu:%s,pause=off queues=%u ! "
                                  "fakesink enable-last-sample=false",
      name, r->queues);
  Bench bench;

  if (!bench_build (&bench, name, launch, &r->error) || !bench_pause (&bench, &r->error))
    goto out;

  /* fill: the wire takes up to 65536 waiting frames at a time */
  for (guint64 k = 0; k < o->packets; k++) {
    const guint8 *fr = frames + (gsize) (k % o->flows) * FRAME_LEN;
    while (!emu_port_inject (bench.port, fr, FRAME_LEN))
      g_usleep (100);
  }
  EmuCounters c;
  emu_port_wait_idle (bench.port, 20 * G_USEC_PER_SEC * (gint64) 1000);
  emu_port_counters (bench.port, &c);
  if (c.rx_packets != o->packets) {
    r->error = g_strdup_printf ("the rings took %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                                " frames (%" G_GUINT64_FORMAT " out of buffer)",
        c.rx_packets, o->packets, c.rx_out_of_buffer);
    goto out;
  }

  /* drain */
  if (!bench_play (&bench, &r->error))
    goto out;
  pid_t tid = 0;
  guint64 first = 0, last = 0, cpu0 = 0, cpu1 = 0, waited = 0;
  gint64 t_first = 0, t_last = 0, start = g_get_monotonic_time ();
  for (;;) {
    if (tid == 0 && (tid = bench_src_thread (&bench)) != 0 && o->pin)
      bench_pin ("bench-emu-queues", tid, 1);
    guint64 p = stats_packets (bench.src, NULL, 0);
    gint64 now = g_get_monotonic_time ();
    if (first == 0 && p > 0 && tid != 0) {
      first = p;
      t_first = now;
      bench_thread_sched_ns (tid, &cpu0, &waited);
    }
    if (p >= o->packets || now - start > 20 * G_USEC_PER_SEC) {
      last = p;
      t_last = now;
      bench_thread_sched_ns (tid, &cpu1, &waited);
      break;
    }
    g_usleep (100);
  }
  if (last < o->packets || first == 0 || last == first) {
    r->error = g_strdup_printf (
        "drained %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " packets", last, o->packets);
    goto out;
  }
  r->seconds = (double) (t_last - t_first) / G_USEC_PER_SEC;
  r->pps = (double) (last - first) / r->seconds;
  r->src_cpu_ns = (double) (cpu1 - cpu0) / (double) (last - first);
  stats_packets (bench.src, r->queue_packets, r->queues);
  for (guint q = 0; q < r->queues; q++) {
    if (r->queue_packets[q] != o->packets / r->queues) {
      r->error = g_strdup_printf ("queue %u delivered %" G_GUINT64_FORMAT
                                  " packets, not %" G_GUINT64_FORMAT,
          q, r->queue_packets[q], o->packets / r->queues);
      goto out;
    }
  }
  r->ok = TRUE;

out:
  bench_clear (&bench);
}

static void
print_json (const Options *o, const Run *r)
{
  if (!r->ok) {
    GString *s = g_string_new (NULL);
    g_string_printf (s, "{\"bench\":\"emu-queues\",\"queues\":%u", r->queues);
    bench_print_json_error (s, r->error);
    return;
  }
  GString *s = g_string_new (NULL);
  g_string_printf (s,
      "{\"bench\":\"emu-queues\",\"queues\":%u,\"frame\":%u,\"packets\":%" G_GUINT64_FORMAT
      ",\"flows\":%u,\"drain_seconds\":%.4f,\"received_pps\":%.0f,"
      "\"src_cpu_ns_per_packet\":%.2f,\"host_pps\":%.0f,\"queue_packets\":[",
      r->queues, FRAME_LEN, o->packets, o->flows, r->seconds, r->pps, r->src_cpu_ns,
      r->src_cpu_ns > 0 ? 1e9 / r->src_cpu_ns : 0.0);
  for (guint q = 0; q < r->queues; q++)
    g_string_append_printf (s, "%s%" G_GUINT64_FORMAT, q ? "," : "", r->queue_packets[q]);
  g_string_append (s, "]}");
  g_print ("%s\n", s->str);
  g_string_free (s, TRUE);
}

/* median, min and max of the good runs' `field` (packets/s or ns) */
static gboolean
summarize (const Run *runs, guint n, gboolean cpu, double *med, double *lo, double *hi)
{
  double *v = g_new (double, n);
  guint k = 0;
  for (guint i = 0; i < n; i++)
    if (runs[i].ok)
      v[k++] = cpu ? runs[i].src_cpu_ns : runs[i].pps;
  if (k == 0) {
    g_free (v);
    return FALSE;
  }
  dq_bench_sort_doubles (v, k);
  *med = v[k / 2];
  *lo = v[0];
  *hi = v[k - 1];
  g_free (v);
  return TRUE;
}

int
main (int argc, char **argv)
{
  gint64 packets = 1000000;
  gint repeat = 9, flows = 64;
  gboolean no_pin = FALSE;
  GOptionEntry entries[] = { { "packets", 0, 0, G_OPTION_ARG_INT64, &packets,
                                 "frames pre-filled per run (1000000)", "N" },
    { "repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "runs of each queue count (9)", "R" },
    { "flows", 0, 0, G_OPTION_ARG_INT, &flows, "UDP flows, a multiple of 4 (64)", "F" },
    { "no-pin", 0, 0, G_OPTION_ARG_NONE, &no_pin, "do not pin the streaming thread", NULL },
    { NULL } };
  if (!bench_parse_args ("bench-emu-queues", "- one daqirisrc draining 1 vs 4 emulated queues",
          entries, &argc, &argv))
    return 2;
  /* 64-byte frames in 64-byte strides: the default 64 MiB ring holds 1048576 */
  if (packets < MANY_QUEUES * 1000 || packets > 1000000 || packets % MANY_QUEUES != 0 ||
      repeat < 1 || flows < MANY_QUEUES || flows % MANY_QUEUES != 0 || flows > 4096)
    return bench_out_of_range ("bench-emu-queues",
        "packets: 4000..1000000, a multiple of 4; flows: 4..4096, a multiple of 4");
  Options o = { .packets = (guint64) packets,
    .repeat = (guint) repeat,
    .flows = (guint) flows,
    .pin = bench_pinning (no_pin) };

  if (!bench_emu_init ("bench-emu-queues"))
    return 2;

  guint8 *frames = make_frames (o.flows);
  Run *one = g_new0 (Run, o.repeat), *many = g_new0 (Run, o.repeat);
  gboolean failed = FALSE;
  guint index = 0;
  for (guint i = 0; i < o.repeat; i++) {
    one[i].queues = 1;
    run_one (&o, frames, &one[i], index++);
    print_json (&o, &one[i]);
    many[i].queues = MANY_QUEUES;
    run_one (&o, frames, &many[i], index++);
    print_json (&o, &many[i]);
    failed |= !one[i].ok || !many[i].ok;
  }

  double p1 = 0, l1 = 0, h1 = 0, p4 = 0, l4 = 0, h4 = 0;
  double c1 = 0, cl1 = 0, ch1 = 0, c4 = 0, cl4 = 0, ch4 = 0;
  gboolean ok = summarize (one, o.repeat, FALSE, &p1, &l1, &h1) &&
      summarize (many, o.repeat, FALSE, &p4, &l4, &h4) &&
      summarize (one, o.repeat, TRUE, &c1, &cl1, &ch1) &&
      summarize (many, o.repeat, TRUE, &c4, &cl4, &ch4) && c1 > 0 && c4 > 0;
  /* host rate: 1e9 / ns per packet of the streaming thread */
  double r1 = ok ? 1e3 / c1 : 0, r4 = ok ? 1e3 / c4 : 0;
  double ratio = ok ? r4 / r1 : 0, wall_ratio = ok && p1 > 0 ? p4 / p1 : 0;
  g_print ("\n| queues | host Mpps (1e3 / ns per packet) | daqirisrc thread ns/packet, median "
           "(min..max) | wall Mpps, median (min..max) |\n"
           "|---|---|---|---|\n"
           "| 1 | %.2f | %.1f (%.1f..%.1f) | %.2f (%.2f..%.2f) |\n"
           "| %u | %.2f | %.1f (%.1f..%.1f) | %.2f (%.2f..%.2f) |\n",
      r1, c1, cl1, ch1, p1 / 1e6, l1 / 1e6, h1 / 1e6, MANY_QUEUES, r4, c4, cl4, ch4, p4 / 1e6,
      l4 / 1e6, h4 / 1e6);
  g_print ("bench-emu-queues: %uB, %" G_GUINT64_FORMAT " packets pre-filled, %u flows, %u runs "
           "each; host rate 1 queue %.2f Mpps (%.1f ns/pkt), %u queues %.2f Mpps (%.1f ns/pkt), "
           "ratio %.3f (target >= %.2f: %s); wall 1 queue %.2f Mpps, %u queues %.2f Mpps, ratio "
           "%.3f\n",
      FRAME_LEN, o.packets, o.flows, o.repeat, r1, c1, MANY_QUEUES, r4, c4, ratio, RATIO_TARGET,
      ok && ratio >= RATIO_TARGET ? "PASS" : "FAIL", p1 / 1e6, MANY_QUEUES, p4 / 1e6, wall_ratio);

  for (guint i = 0; i < o.repeat; i++) {
    g_free (one[i].error);
    g_free (many[i].error);
  }
  g_free (one);
  g_free (many);
  g_free (frames);
  return failed ? 1 : 0;
}
