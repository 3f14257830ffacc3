/* bench-latency: how long a packet takes from its receive time on the port clock to its
 * buffer reaching the sink, on the emulated ConnectX:
 *
 *   daqirisrc name=src device=emu:NAME,gen=64,gen-rate=RATE burst-timeout=T ! fakesink
 *
 * The generator stamps each frame with the port clock as it puts it on the wire, at RATE
 * frames a second. A probe on fakesink's sink pad reads the pipeline clock (daqirisrc
 * provides the port clock, so it reads the same time base) when a buffer arrives and takes,
 * for every packet of it, now - the packet's timestamp: the time the packet waited for its
 * burst to fill or time out, plus the hand-over to the streaming thread and downstream.
 *
 * Runs: RATE 100 k and 1 M frames a second × burst-timeout 10 µs, 20 µs and 1 ms (bursts of
 * up to 256 packets), each for --seconds after a 0.3 s warm-up, the source's thread pinned
 * to CPU 1 and the device's to CPU 0 (unless --no-pin). Per run: p50, p99, p99.9 and max in
 * µs over every packet, and the packets per buffer. Where the time goes, split at the
 * youngest packet of each buffer: *fill*, per packet, its wait for the younger packets of
 * its burst (youngest - its timestamp: burst-packets or burst-timeout), and *hand-over*,
 * per buffer, the youngest packet's age at the sink (the emulated device writing it late,
 * the source's thread polling and pushing, a thread waiting for a CPU). The run-queue wait
 * of the source's and the device's threads over the window
 * (/proc/self/task/TID/schedstat) tells how much of it was the machine.
 *
 * Targets: p99 <= burst-timeout + 20 µs and max <= burst-timeout + 200 µs.
 *
 * Output: one JSON object per run, then one line starting "bench-latency:". The exit status
 * is 0 unless a run fails (the targets are reported, not enforced).
 *
 * usage: bench-latency [--seconds S] [--no-pin]
 */
#include <gst/gst.h>
#include <gst/daqiri/daqiri.h>

#include "bench-emu-util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHO "bench-latency"
#define WARMUP_US 300000
#define P99_SLACK_NS 20000
#define MAX_SLACK_NS 200000

typedef struct {
  guint64 rate;
  guint64 timeout_ns;
  gboolean ok;
  char *error;
  guint64 packets, buffers;
  double p50_us, p99_us, p999_us, max_us;
  double fill_p99_us, fill_max_us;
  double handover_p50_us, handover_p99_us, handover_max_us;
  double src_runq_ms, dev_runq_ms; /* waited for a CPU over the window */
} Run;

/* What the probe collects: each packet's latency in ns, while `recording` */
typedef struct {
  GstClock *clock;
  GstClockTime base;
  gint recording;
  GArray *ns;       /* guint64: now - timestamp, per packet */
  GArray *fill;     /* guint64: youngest - timestamp, per packet */
  GArray *handover; /* guint64: now - youngest, per buffer */
  guint64 buffers;
  guint64 unstamped;
} Probe;

static GstPadProbeReturn
on_buffer (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  Probe *pr = user_data;
  if (!g_atomic_int_get (&pr->recording))
    return GST_PAD_PROBE_OK;
  GstClockTime now = gst_clock_get_time (pr->clock);
  GstDaqiriPacketMeta *m = gst_daqiri_buffer_get_packet_meta (GST_PAD_PROBE_INFO_BUFFER (info));
  if (m == NULL)
    return GST_PAD_PROBE_OK;
  pr->buffers++;
  guint64 youngest = 0;
  for (guint i = 0; i < m->n_packets; i++) {
    guint64 ts = m->packets[i].timestamp;
    if (ts <= now)
      youngest = MAX (youngest, ts);
  }
  for (guint i = 0; i < m->n_packets; i++) {
    guint64 ts = m->packets[i].timestamp;
    if (ts == 0 || ts > now) {
      pr->unstamped++;
      continue;
    }
    guint64 d = now - ts, f = youngest - ts;
    g_array_append_val (pr->ns, d);
    g_array_append_val (pr->fill, f);
  }
  if (youngest != 0) {
    guint64 h = now - youngest;
    g_array_append_val (pr->handover, h);
  }
  return GST_PAD_PROBE_OK;
}

static int
cmp_u64 (gconstpointer a, gconstpointer b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
  return x < y ? -1 : x > y;
}

static double
quantile_us (GArray *sorted, double q)
{
  guint i = (guint) (q * (sorted->len - 1));
  return g_array_index (sorted, guint64, i) / 1000.0;
}

static void
run_one (Run *r, guint index, double seconds, gboolean pin)
{
  char *name = g_strdup_printf ("lat%u", index);
  char *launch = g_strdup_printf (
      "daqirisrc name=src device=emu:%s,gen=64,gen-rate=%" G_GUINT64_FORMAT
      " burst-timeout=%" G_GUINT64_FORMAT " ! fakesink name=sink enable-last-sample=false",
      name, r->rate, r->timeout_ns);
  Bench bench;
  guint reserve = (guint) (r->rate * seconds * 1.2) + 1024;
  Probe pr = { .ns = g_array_sized_new (FALSE, FALSE, sizeof (guint64), reserve),
    .fill = g_array_sized_new (FALSE, FALSE, sizeof (guint64), reserve),
    .handover = g_array_sized_new (FALSE, FALSE, sizeof (guint64), reserve / 2) };
  pid_t src_tid = 0, dev_tid = 0;

  if (!bench_build (&bench, name, launch, &r->error))
    goto out;
  GstElement *sink = gst_bin_get_by_name (GST_BIN (bench.pipeline), "sink");
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, &pr, NULL);
  gst_object_unref (pad);
  gst_object_unref (sink);
  if (!bench_play (&bench, &r->error))
    goto out;
  pr.clock = gst_pipeline_get_clock (GST_PIPELINE (bench.pipeline));
  bench_find_threads (&bench, 1000, &src_tid, &dev_tid);
  if (pin && src_tid != 0)
    bench_pin (WHO, src_tid, 1);
  if (pin && dev_tid != 0)
    bench_pin (WHO, dev_tid, 0);
  g_usleep (WARMUP_US);
  guint64 run0, src_wait0 = 0, dev_wait0 = 0, src_wait1 = 0, dev_wait1 = 0;
  bench_thread_sched_ns (src_tid, &run0, &src_wait0);
  bench_thread_sched_ns (dev_tid, &run0, &dev_wait0);
  g_atomic_int_set (&pr.recording, 1);
  g_usleep ((gulong) (seconds * G_USEC_PER_SEC));
  g_atomic_int_set (&pr.recording, 0);
  bench_thread_sched_ns (src_tid, &run0, &src_wait1);
  bench_thread_sched_ns (dev_tid, &run0, &dev_wait1);
  r->src_runq_ms = (src_wait1 - src_wait0) / 1e6;
  r->dev_runq_ms = (dev_wait1 - dev_wait0) / 1e6;
  char *bus_error = NULL;
  if (bench_bus_error (bench.pipeline, &bus_error)) {
    r->error = bus_error;
    goto out;
  }
  gst_element_set_state (bench.pipeline, GST_STATE_NULL);
  if (pr.ns->len == 0) {
    r->error = g_strdup_printf ("no timestamped packet reached the sink (%" G_GUINT64_FORMAT
                                " without a time)",
        pr.unstamped);
    goto out;
  }
  g_array_sort (pr.ns, cmp_u64);
  r->packets = pr.ns->len;
  r->buffers = pr.buffers;
  r->p50_us = quantile_us (pr.ns, 0.5);
  r->p99_us = quantile_us (pr.ns, 0.99);
  r->p999_us = quantile_us (pr.ns, 0.999);
  r->max_us = g_array_index (pr.ns, guint64, pr.ns->len - 1) / 1000.0;
  g_array_sort (pr.fill, cmp_u64);
  r->fill_p99_us = quantile_us (pr.fill, 0.99);
  r->fill_max_us = quantile_us (pr.fill, 1.0);
  g_array_sort (pr.handover, cmp_u64);
  r->handover_p50_us = quantile_us (pr.handover, 0.5);
  r->handover_p99_us = quantile_us (pr.handover, 0.99);
  r->handover_max_us = quantile_us (pr.handover, 1.0);
  r->ok = TRUE;

out:
  if (pr.clock != NULL)
    gst_object_unref (pr.clock);
  bench_clear (&bench);
  g_array_unref (pr.ns);
  g_array_unref (pr.fill);
  g_array_unref (pr.handover);
}

static gboolean
run_meets (const Run *r, gboolean *p99_ok, gboolean *max_ok)
{
  double t_us = r->timeout_ns / 1000.0;
  *p99_ok = r->p99_us <= t_us + P99_SLACK_NS / 1000.0;
  *max_ok = r->max_us <= t_us + MAX_SLACK_NS / 1000.0;
  return *p99_ok && *max_ok;
}

static void
print_json (const Run *r)
{
  GString *s = g_string_new (NULL);
  g_string_printf (s,
      "{\"bench\":\"latency\",\"device\":\"emu\",\"rate\":%" G_GUINT64_FORMAT
      ",\"burst_timeout_us\":%.0f",
      r->rate, r->timeout_ns / 1000.0);
  if (!r->ok) {
    bench_print_json_error (s, r->error);
    return;
  }
  gboolean p99_ok, max_ok;
  run_meets (r, &p99_ok, &max_ok);
  g_string_append_printf (s,
      ",\"packets\":%" G_GUINT64_FORMAT ",\"packets_per_buffer\":%.1f,\"p50_us\":%.1f"
      ",\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f,\"p99_target\":%s,\"max_target\":%s"
      ",\"fill_p99_us\":%.1f,\"fill_max_us\":%.1f,\"handover_p50_us\":%.1f"
      ",\"handover_p99_us\":%.1f,\"handover_max_us\":%.1f,\"src_runq_ms\":%.2f"
      ",\"dev_runq_ms\":%.2f,\"error\":null}",
      r->packets, r->buffers > 0 ? (double) r->packets / r->buffers : 0.0, r->p50_us, r->p99_us,
      r->p999_us, r->max_us, p99_ok ? "true" : "false", max_ok ? "true" : "false", r->fill_p99_us,
      r->fill_max_us, r->handover_p50_us, r->handover_p99_us, r->handover_max_us, r->src_runq_ms,
      r->dev_runq_ms);
  printf ("%s\n", s->str);
  fflush (stdout);
  g_string_free (s, TRUE);
}

int
main (int argc, char **argv)
{
  gdouble seconds = 2.0;
  gboolean no_pin = FALSE;
  GOptionEntry entries[] = { { "seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds,
                                 "measuring window per run (2)", "S" },
    { "no-pin", 0, 0, G_OPTION_ARG_NONE, &no_pin, "do not pin the two threads", NULL }, { NULL } };
  if (!bench_parse_args (
          WHO, "- port time to sink on the emulated ConnectX", entries, &argc, &argv))
    return 2;
  if (seconds < 0.1 || seconds > 600)
    return bench_out_of_range (WHO, "seconds: 0.1..600");
  if (!bench_emu_init (WHO))
    return 2;

  static const guint64 rates[] = { 100000, 1000000 };
  static const guint64 timeouts[] = { 10000, 20000, 1000000 };
  Run runs[G_N_ELEMENTS (rates) * G_N_ELEMENTS (timeouts)];
  guint n = 0, met = 0;
  gboolean failed = FALSE;
  memset (runs, 0, sizeof runs);
  for (guint i = 0; i < G_N_ELEMENTS (rates); i++)
    for (guint j = 0; j < G_N_ELEMENTS (timeouts); j++) {
      Run *r = &runs[n];
      r->rate = rates[i];
      r->timeout_ns = timeouts[j];
      run_one (r, n, seconds, bench_pinning (no_pin));
      print_json (r);
      gboolean p99_ok, max_ok;
      failed |= !r->ok;
      met += r->ok && run_meets (r, &p99_ok, &max_ok);
      n++;
    }

  printf ("\n| rate | burst-timeout | packets/buffer | p50 µs | p99 µs | p99.9 µs | max µs | "
          "fill p99 / max µs | hand-over p50 / p99 / max µs | runq src / dev ms |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n");
  for (guint i = 0; i < n; i++)
    if (runs[i].ok)
      printf ("| %" G_GUINT64_FORMAT
              " k/s | %.0f µs | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f "
              "| %.1f / %.1f / %.1f | %.2f / %.2f |\n",
          runs[i].rate / 1000, runs[i].timeout_ns / 1000.0,
          (double) runs[i].packets / runs[i].buffers, runs[i].p50_us, runs[i].p99_us,
          runs[i].p999_us, runs[i].max_us, runs[i].fill_p99_us, runs[i].fill_max_us,
          runs[i].handover_p50_us, runs[i].handover_p99_us, runs[i].handover_max_us,
          runs[i].src_runq_ms, runs[i].dev_runq_ms);
  printf ("bench-latency: emu, 64 B, port time to sink: %u of %u runs within targets "
          "(p99 <= burst-timeout + 20 us, max <= burst-timeout + 200 us)",
      met, n);
  for (guint i = 0; i < n; i++)
    if (runs[i].ok)
      printf ("; %" G_GUINT64_FORMAT "k/s %.0fus p99 %.1f max %.1f", runs[i].rate / 1000,
          runs[i].timeout_ns / 1000.0, runs[i].p99_us, runs[i].max_us);
  printf ("\n");
  for (guint i = 0; i < n; i++)
    g_free (runs[i].error);
  return failed ? 1 : 0;
}
