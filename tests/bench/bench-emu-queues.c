/* bench-emu-queues: how the host rate of draining one emulated port scales with its
 * receive queues, on one core and on two, side by side in one run.
 *
 * daqirisrc polls all its queues in its one streaming thread, so one element drains them
 * on one core. Two cores take two elements on the same port, each with its own queues and
 * its own share of the traffic, picked by a flow rule (the port steers the rules of every
 * element: a user's way to spread one port's queues over threads):
 *
 *   one element   daqirisrc name=src device=emu:NAME,pause=off queues=Q ! fakesink
 *   two elements  daqirisrc name=src device=emu:NAME,pause=off queues=Q/2
 *                   flows="proto=udp dst-port=5000" ! fakesink
 *                 daqirisrc name=src1 device=emu:NAME,pause=off queues=Q/2
 *                   flows="proto=udp dst-port=5001" ! fakesink
 *
 * Configurations: 1, 2 and 4 queues in one element on one core; 2 and 4 queues in two
 * elements on one core (both threads on CPU 1: the split's own cost) and on two cores (one
 * thread on CPU 1, the other on CPU 0). One queue cannot be drained by two threads.
 *
 * Each run pre-fills the rings: with the pipeline PAUSED (the queues exist, nothing polls
 * them) N 64-byte UDP frames of F flows are put on the port's wire; the emulated device
 * steers them (to an element by its rule, to a queue by RSS; the flows are picked so that
 * each queue gets N/Q) and writes them into the rings. Then PLAYING: the streaming threads
 * drain the rings with no frame arriving meanwhile: host work only (poll the CQs, hand out
 * bursts, fakesink frees them, strides go back).
 *
 * Per run: each streaming thread times itself in a probe on its source's pad: its CPU
 * time (CLOCK_THREAD_CPUTIME_ID) and packets from its first buffer to the one that
 * completes its share. ns per packet = all the threads' CPU time / packets; the host rate
 * = packets/s of the cores doing nothing else (per core, its packets / its threads' CPU
 * time, summed over the cores); packets/s of wall time from the first buffer to the last,
 * which on a shared machine also holds the time the threads waited for a CPU; and the
 * stats' queue-packets (checked: N/Q each). Runs go round the configurations so that the machine's noise
 * spreads over all; medians are compared.
 *
 * Target: with 4 queues the host rate of one element is >= 0.9 x the host rate with 1
 * queue.
 *
 * Output: one JSON object per run, a table, and one line starting "bench-emu-queues:".
 * The exit status is 0 unless a run fails (the target is reported, not enforced).
 *
 * usage: bench-emu-queues [--packets N] [--repeat R] [--flows F] [--no-pin]
 */
#include <gst/gst.h>

#include "dq-bench-util.h"
#include "dq-packet.h"
#include "dq-test-frame.h"
#include "bench-emu-util.h"
#include <gst/daqiri/daqiri.h>
#include "emu.h"
#include "mlx5-rss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FRAME_LEN 64
#define MAX_QUEUES 4
#define MAX_ELEMENTS 2
#define RATIO_TARGET 0.9
#define DST_PORT 5000

typedef struct {
  guint64 packets;
  guint repeat;
  guint flows;
  gboolean pin;
} Options;

/* a configuration: queues in all, spread over `elements` daqirisrc, whose threads run on
 * `cores` CPUs */
typedef struct {
  guint queues;
  guint elements;
  guint cores;
} Config;

static const Config configs[] = {
  { 1, 1, 1 },
  { 2, 1, 1 },
  { 4, 1, 1 },
  { 2, 2, 1 },
  { 4, 2, 1 },
  { 2, 2, 2 },
  { 4, 2, 2 },
};

typedef struct {
  Config c;
  gboolean ok;
  char *error;
  double seconds;
  double pps;      /* wall */
  double cpu_ns;   /* all the threads' CPU ns / packets */
  double host_pps; /* per core: packets / CPU time, summed */
  guint64 queue_packets[MAX_QUEUES];
} Run;

/* ---- frames ---- */

/* One frame per flow, 10.0.0.1:sport -> 10.0.0.2:DST_PORT + e: flow f goes to element
 * e = f mod elements (its rule) and to queue (f / elements) mod per of that element's RSS
 * group of per queues (the emulator's hash, mlx5-rss.h's table). */
static guint8 *
make_frames (guint n_flows, guint elements, guint per)
{
  guint8 *frames = g_malloc0 ((gsize) n_flows * FRAME_LEN);
  guint sport = 2000;
  for (guint f = 0; f < n_flows; f++) {
    guint8 *fr = frames + (gsize) f * FRAME_LEN;
    for (;;) {
      const DqPacketHeaders h =
          dq_test_headers ((guint16) sport++, (guint16) (DST_PORT + f % elements));
      dq_packet_write_headers (fr, FRAME_LEN, &h);
      guint8 in[12];
      memcpy (in, fr + DQ_PACKET_IPV4_OFFSET + 12, 8);
      memcpy (in + 8, fr + DQ_PACKET_UDP_OFFSET, 4);
      if (per == 1 || mlx5_rss_rqt_pick (emu_toeplitz (in, 12), per) == (f / elements) % per)
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

/* One element's drain, timed by its own streaming thread in a probe on the source's pad:
 * from its first buffer to the one that completes its share of the packets, the thread's
 * CPU time (CLOCK_THREAD_CPUTIME_ID) and the packets in between. */
typedef struct {
  GstElement *src;
  int cpu;       /* to pin the thread to, or -1 */
  guint64 share; /* packets it drains */
  guint64 count; /* packets pushed so far */
  guint64 first; /* packets when timing began (its first buffer) */
  gint64 cpu0, cpu1, t0, t1;
  gint done;
} Drain;

static GstPadProbeReturn
on_drain_buffer (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  Drain *x = user_data;
  GstDaqiriPacketMeta *m = gst_daqiri_buffer_get_packet_meta (GST_PAD_PROBE_INFO_BUFFER (info));
  if (m == NULL || g_atomic_int_get (&x->done))
    return GST_PAD_PROBE_OK;
  x->count += m->n_packets;
  if (x->t0 == 0) {
    if (x->cpu >= 0)
      bench_pin ("bench-emu-queues", (pid_t) syscall (SYS_gettid), x->cpu);
    x->first = x->count;
    x->cpu0 = dq_bench_thread_cpu_ns ();
    x->t0 = dq_bench_mono_ns ();
  } else if (x->count >= x->share) {
    x->cpu1 = dq_bench_thread_cpu_ns ();
    x->t1 = dq_bench_mono_ns ();
    g_atomic_int_set (&x->done, 1);
  }
  return GST_PAD_PROBE_OK;
}

static char *
launch_line (const char *name, const Config *c)
{
  if (c->elements == 1)
    return g_strdup_printf ("daqirisrc name=src device=emu:%s,pause=off queues=%u ! "
                            "fakesink enable-last-sample=false",
        name, c->queues);
  GString *s = g_string_new (NULL);
  for (guint e = 0; e < c->elements; e++)
    g_string_append_printf (s,
        "daqirisrc name=src%s device=emu:%s,pause=off queues=%u flows=\"proto=udp "
        "dst-port=%u\" ! fakesink enable-last-sample=false ",
        e == 0 ? "" : "1", name, c->queues / c->elements, DST_PORT + e);
  return g_string_free (s, FALSE);
}

static void
run_one (const Options *o, const guint8 *frames, Run *r, guint index)
{
  const Config *c = &r->c;
  char *name = g_strdup_printf ("queues%u", index);
  Bench bench;
  Drain d[MAX_ELEMENTS];

  memset (d, 0, sizeof d);
  if (!bench_build (&bench, name, launch_line (name, c), &r->error))
    goto out;
  for (guint e = 0; e < c->elements; e++) {
    d[e].src = e == 0 ? gst_object_ref (bench.src)
                      : gst_bin_get_by_name (GST_BIN (bench.pipeline), "src1");
    d[e].share = o->packets / c->elements;
    d[e].cpu = !o->pin ? -1 : c->cores == 2 && e == 1 ? 0 : 1;
    GstPad *pad = gst_element_get_static_pad (d[e].src, "src");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_drain_buffer, &d[e], NULL);
    gst_object_unref (pad);
  }
  if (!bench_pause (&bench, &r->error))
    goto out;

  /* fill: the wire takes up to 65536 waiting frames at a time */
  for (guint64 k = 0; k < o->packets; k++) {
    const guint8 *fr = frames + (gsize) (k % o->flows) * FRAME_LEN;
    while (!emu_port_inject (bench.port, fr, FRAME_LEN))
      g_usleep (100);
  }
  EmuCounters ec;
  emu_port_wait_idle (bench.port, 20 * G_USEC_PER_SEC * (gint64) 1000);
  emu_port_counters (bench.port, &ec);
  if (ec.rx_packets != o->packets) {
    r->error = g_strdup_printf ("the rings took %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                                " frames (%" G_GUINT64_FORMAT " out of buffer)",
        ec.rx_packets, o->packets, ec.rx_out_of_buffer);
    goto out;
  }

  /* drain */
  if (!bench_play (&bench, &r->error))
    goto out;
  gint64 start = g_get_monotonic_time ();
  guint n_done = 0;
  while (n_done < c->elements && g_get_monotonic_time () - start < 20 * G_USEC_PER_SEC) {
    g_usleep (1000);
    n_done = 0;
    for (guint e = 0; e < c->elements; e++)
      n_done += g_atomic_int_get (&d[e].done) ? 1 : 0;
  }
  guint64 packets = 0;
  gint64 cpu = 0, t_first = G_MAXINT64, t_last = 0;
  double host = 0, core_packets[2] = { 0, 0 }, core_cpu[2] = { 0, 0 };
  for (guint e = 0; e < c->elements; e++) {
    Drain *x = &d[e];
    if (!g_atomic_int_get (&x->done)) {
      r->error = g_strdup_printf ("element %u drained %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                                  " packets",
          e, stats_packets (x->src, NULL, 0), x->share);
      goto out;
    }
    packets += x->count - x->first;
    cpu += x->cpu1 - x->cpu0;
    int k = c->cores == 2 && e == 1 ? 0 : 1;
    core_packets[k] += (double) (x->count - x->first);
    core_cpu[k] += (double) (x->cpu1 - x->cpu0);
    t_first = MIN (t_first, x->t0);
    t_last = MAX (t_last, x->t1);
  }
  for (guint k = 0; k < 2; k++)
    if (core_cpu[k] > 0)
      host += core_packets[k] * 1e9 / core_cpu[k];
  r->seconds = (double) (t_last - t_first) / 1e9;
  r->pps = r->seconds > 0 ? (double) packets / r->seconds : 0;
  r->cpu_ns = (double) cpu / (double) packets;
  r->host_pps = host;
  guint per = c->queues / c->elements;
  for (guint e = 0; e < c->elements; e++)
    stats_packets (d[e].src, r->queue_packets + e * per, per);
  for (guint q = 0; q < c->queues; q++) {
    if (r->queue_packets[q] != o->packets / c->queues) {
      r->error = g_strdup_printf ("queue %u delivered %" G_GUINT64_FORMAT
                                  " packets, not %" G_GUINT64_FORMAT,
          q, r->queue_packets[q], o->packets / c->queues);
      goto out;
    }
  }
  r->ok = TRUE;

out:
  for (guint e = 0; e < MAX_ELEMENTS; e++)
    if (d[e].src != NULL)
      gst_object_unref (d[e].src);
  bench_clear (&bench);
}

static void
print_json (const Options *o, const Run *r)
{
  GString *s = g_string_new (NULL);
  g_string_printf (s, "{\"bench\":\"emu-queues\",\"queues\":%u,\"elements\":%u,\"cores\":%u",
      r->c.queues, r->c.elements, r->c.cores);
  if (!r->ok) {
    bench_print_json_error (s, r->error);
    return;
  }
  g_string_append_printf (s,
      ",\"frame\":%u,\"packets\":%" G_GUINT64_FORMAT ",\"flows\":%u,\"drain_seconds\":%.4f,"
      "\"received_pps\":%.0f,\"src_cpu_ns_per_packet\":%.2f,\"host_pps\":%.0f,"
      "\"queue_packets\":[",
      FRAME_LEN, o->packets, o->flows, r->seconds, r->pps, r->cpu_ns, r->host_pps);
  for (guint q = 0; q < r->c.queues; q++)
    g_string_append_printf (s, "%s%" G_GUINT64_FORMAT, q ? "," : "", r->queue_packets[q]);
  g_string_append (s, "]}");
  g_print ("%s\n", s->str);
  g_string_free (s, TRUE);
}

/* median, min and max of one configuration's good runs: which 0 host rate, 1 ns per
 * packet, 2 wall rate */
typedef struct {
  double med, lo, hi;
} Spread;

static gboolean
summarize (const Run *runs, guint n, guint which, Spread *out)
{
  double *v = g_new (double, n);
  guint k = 0;
  for (guint i = 0; i < n; i++)
    if (runs[i].ok)
      v[k++] = which == 0 ? runs[i].host_pps : which == 1 ? runs[i].cpu_ns : runs[i].pps;
  if (k > 0) {
    dq_bench_sort_doubles (v, k);
    out->med = v[k / 2];
    out->lo = v[0];
    out->hi = v[k - 1];
  }
  g_free (v);
  return k > 0;
}

int
main (int argc, char **argv)
{
  gint64 packets = 1000000;
  gint repeat = 9, flows = 64;
  gboolean no_pin = FALSE;
  GOptionEntry entries[] = { { "packets", 0, 0, G_OPTION_ARG_INT64, &packets,
                                 "frames pre-filled per run (1000000)", "N" },
    { "repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "runs of each configuration (9)", "R" },
    { "flows", 0, 0, G_OPTION_ARG_INT, &flows, "UDP flows, a multiple of 8 (64)", "F" },
    { "no-pin", 0, 0, G_OPTION_ARG_NONE, &no_pin, "do not pin the streaming threads", NULL },
    { NULL } };
  if (!bench_parse_args ("bench-emu-queues",
          "- 1, 2 and 4 emulated queues drained on one core and on two", entries, &argc, &argv))
    return 2;
  /* 64-byte frames in 64-byte strides: the default 64 MiB ring holds 1048576 */
  if (packets < MAX_QUEUES * 1000 || packets > 1000000 || packets % MAX_QUEUES != 0 || repeat < 1 ||
      flows < 2 * MAX_QUEUES || flows % (2 * MAX_QUEUES) != 0 || flows > 4096)
    return bench_out_of_range ("bench-emu-queues",
        "packets: 4000..1000000, a multiple of 4; flows: 8..4096, a multiple of 8");
  Options o = { .packets = (guint64) packets,
    .repeat = (guint) repeat,
    .flows = (guint) flows,
    .pin = bench_pinning (no_pin) };

  if (!bench_emu_init ("bench-emu-queues"))
    return 2;

  guint n_configs = G_N_ELEMENTS (configs);
  guint8 *frames[G_N_ELEMENTS (configs)];
  Run *runs[G_N_ELEMENTS (configs)];
  for (guint k = 0; k < n_configs; k++) {
    frames[k] = make_frames (o.flows, configs[k].elements, configs[k].queues / configs[k].elements);
    runs[k] = g_new0 (Run, o.repeat);
  }
  gboolean failed = FALSE;
  guint index = 0;
  for (guint i = 0; i < o.repeat; i++) {
    for (guint k = 0; k < n_configs; k++) {
      Run *r = &runs[k][i];
      r->c = configs[k];
      run_one (&o, frames[k], r, index++);
      print_json (&o, r);
      failed |= !r->ok;
    }
  }

  Spread host[G_N_ELEMENTS (configs)] = { { 0 } }, ns[G_N_ELEMENTS (configs)] = { { 0 } },
                           wall[G_N_ELEMENTS (configs)] = { { 0 } };
  gboolean ok = TRUE;
  g_print ("\n| queues | elements | cores | host Mpps | ns/packet, median (min..max) | wall Mpps, "
           "median (min..max) |\n|---|---|---|---|---|---|\n");
  for (guint k = 0; k < n_configs; k++) {
    if (!summarize (runs[k], o.repeat, 0, &host[k]) || !summarize (runs[k], o.repeat, 1, &ns[k]) ||
        !summarize (runs[k], o.repeat, 2, &wall[k])) {
      ok = FALSE;
      continue;
    }
    g_print ("| %u | %u | %u | %.2f | %.1f (%.1f..%.1f) | %.2f (%.2f..%.2f) |\n", configs[k].queues,
        configs[k].elements, configs[k].cores, host[k].med / 1e6, ns[k].med, ns[k].lo, ns[k].hi,
        wall[k].med / 1e6, wall[k].lo / 1e6, wall[k].hi / 1e6);
  }
  /* configs[0]: 1 queue, configs[2]: 4 queues, one element on one core */
  double ratio = ok ? host[2].med / host[0].med : 0;
  g_print ("bench-emu-queues: %uB, %" G_GUINT64_FORMAT " packets pre-filled, %u flows, %u runs "
           "each; host Mpps (ns/pkt) one core: 1 queue %.2f (%.1f), 2 queues %.2f (%.1f), 4 "
           "queues %.2f (%.1f); two elements on one core: 2 queues %.2f, 4 queues %.2f; on two "
           "cores: 2 queues %.2f (%.1f), 4 queues %.2f (%.1f); 4 / 1 queue on one core %.3f "
           "(target >= %.2f: %s)\n",
      FRAME_LEN, o.packets, o.flows, o.repeat, host[0].med / 1e6, ns[0].med, host[1].med / 1e6,
      ns[1].med, host[2].med / 1e6, ns[2].med, host[3].med / 1e6, host[4].med / 1e6,
      host[5].med / 1e6, ns[5].med, host[6].med / 1e6, ns[6].med, ratio, RATIO_TARGET,
      ok && ratio >= RATIO_TARGET ? "PASS" : "FAIL");

  for (guint k = 0; k < n_configs; k++) {
    for (guint i = 0; i < o.repeat; i++)
      g_free (runs[k][i].error);
    g_free (runs[k]);
    g_free (frames[k]);
  }
  return failed ? 1 : 0;
}
