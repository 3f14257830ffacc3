/* bench-latency: how long a packet takes from its receive time on the port clock to its
 * buffer reaching the sink, on the emulated ConnectX or, with --engine afpacket, on a veth
 * pair through the afpacket engine:
 *
 *   daqirisrc name=src device=emu:NAME,gen=64,gen-rate=RATE burst-timeout=T ! fakesink
 *   daqirisrc name=src device=afpacket:dqlrx burst-timeout=T ! fakesink
 *
 * Port time. emu: the generator stamps each frame with the port clock as it puts it on
 * the wire, at RATE frames a second. afpacket: a sender thread (bench-latency.h) puts
 * 64-byte frames on dqltx at RATE frames a second, each when it is due; the kernel stamps
 * each frame on CLOCK_REALTIME as it writes it into the TPACKET_V3 ring (the engine's
 * per-packet timestamp, tp_sec/tp_nsec, "kernel software timestamps"), and the afpacket
 * port clock is CLOCK_REALTIME too. Either way daqirisrc provides the port clock as the
 * pipeline clock, so a probe on fakesink's sink pad reads the packets' time base when it
 * reads the pipeline clock as a buffer arrives (the run checks that the pipeline runs on
 * daqirisrc's clock) and takes, for every packet of the buffer, now - the packet's
 * timestamp: the time the packet waited for its burst to fill or time out, plus the
 * hand-over to the streaming thread and downstream.
 *
 * Runs: RATE 100 k and 1 M frames a second × burst-timeout 10 µs, 20 µs and 1 ms (bursts of
 * up to 256 packets), each for --seconds after a 0.3 s warm-up, the source's thread pinned
 * to CPU 1 and the device's (emu) or the sender's (afpacket) to CPU 0 (unless --no-pin;
 * the sender always runs on CPU 0). Per run: p50, p99, p99.9 and max in µs over every
 * packet, and the packets per buffer. Where the time goes, split at the youngest packet
 * handed over with it (see Probe): *fill*, per packet, its wait for the younger packets
 * of its burst (emu: burst-packets or burst-timeout) or of its ring block (afpacket: the
 * kernel's block retire timeout, burst-timeout rounded up to whole ms, or a full block),
 * and *hand-over*, per burst (emu) or block (afpacket), the youngest packet's age when
 * the first buffer of it reaches the sink (emu: the emulated device writing it late;
 * afpacket: the kernel's wake-up of the source's thread out of its poll; both: polling
 * and pushing, a thread waiting for a CPU). The
 * run-queue wait of the source's and the device's (or sender's) threads over the window
 * (/proc/self/task/TID/schedstat) tells how much of it was the machine; afpacket runs
 * also print the rate the sender reached.
 *
 * afpacket needs root: the veth pair lies in a network namespace that the run creates and
 * removes (also on an interrupt); without root it is skipped with a message (exit 77).
 *
 * Targets: p99 <= burst-timeout + 20 µs and max <= burst-timeout + 200 µs.
 *
 * Output: one JSON object per run, then one line starting "bench-latency:". The exit status
 * is 0 unless a run fails (the targets are reported, not enforced).
 *
 * usage: bench-latency [--engine emu|afpacket] [--seconds S] [--no-pin]
 */
#include <gst/gst.h>
#include <gst/daqiri/daqiri.h>

#include "bench-emu-util.h"
#include "bench-latency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHO "bench-latency"
#define WARMUP_US 300000
#define P99_SLACK_NS 20000
#define MAX_SLACK_NS 200000

typedef struct {
  gboolean afpacket; /* else emu */
  guint64 rate;
  guint64 timeout_ns;
  gboolean ok;
  char *error;
  guint64 packets, buffers, units; /* units: hand-overs (buffers; afpacket: blocks) */
  double p50_us, p99_us, p999_us, max_us;
  double fill_p99_us, fill_max_us;
  double handover_p50_us, handover_p99_us, handover_max_us;
  double src_runq_ms, dev_runq_ms; /* waited for a CPU over the window; afpacket: the
                                    * sender's in dev_runq_ms */
  double sent_pps;                 /* afpacket: the rate the sender reached */
  double softirq_runq_ms;          /* afpacket: ksoftirqd/0's wait for a CPU */
} Run;

/* What the probe collects: each packet's latency in ns, while `recording`. The split
 * into fill and hand-over is made per hand-over unit: a buffer on emu (a burst is handed
 * out when it is full or timed out), a ring block on afpacket (the kernel hands over whole
 * blocks, cut into bursts of up to burst-packets afterwards: the first burst's youngest
 * packet waited for the rest of the block, not for the hand-over). The bursts of one
 * block lie one after the other in it (the next starts less than a packet header's
 * alignment after the last one ends); a burst elsewhere starts a new block. */
typedef struct {
  GstClock *clock;
  gboolean by_block;
  gint recording;
  GArray *ns;       /* guint64: now - timestamp, per packet */
  GArray *fill;     /* guint64: youngest of its unit - timestamp, per packet */
  GArray *handover; /* guint64: first arrival - youngest, per unit */
  guint64 buffers, units;
  guint64 unstamped;
  /* the unit being collected: its packets' timestamps, its youngest, when its first
   * buffer arrived, and where its last burst ended (by_block) */
  GArray *unit_ts;
  guint64 unit_youngest;
  GstClockTime unit_arrival;
  const guint8 *unit_end;
} Probe;

#define BLOCK_GAP_MAX 64

static void
unit_close (Probe *pr)
{
  if (pr->unit_ts->len == 0)
    return;
  for (guint i = 0; i < pr->unit_ts->len; i++) {
    guint64 f = pr->unit_youngest - g_array_index (pr->unit_ts, guint64, i);
    g_array_append_val (pr->fill, f);
  }
  guint64 h = pr->unit_arrival > pr->unit_youngest ? pr->unit_arrival - pr->unit_youngest : 0;
  g_array_append_val (pr->handover, h);
  pr->units++;
  g_array_set_size (pr->unit_ts, 0);
  pr->unit_youngest = 0;
}

static GstPadProbeReturn
on_buffer (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  Probe *pr = user_data;
  if (!g_atomic_int_get (&pr->recording))
    return GST_PAD_PROBE_OK;
  GstClockTime now = gst_clock_get_time (pr->clock);
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstDaqiriPacketMeta *m = gst_daqiri_buffer_get_packet_meta (buf);
  if (m == NULL)
    return GST_PAD_PROBE_OK;
  pr->buffers++;
  gboolean same_unit = FALSE;
  if (pr->by_block) {
    GstMapInfo map;
    if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
      same_unit = pr->unit_end != NULL && map.data >= pr->unit_end &&
          map.data - pr->unit_end < BLOCK_GAP_MAX;
      pr->unit_end = map.data + map.size;
      gst_buffer_unmap (buf, &map);
    }
  }
  if (!same_unit) {
    unit_close (pr);
    pr->unit_arrival = now;
  }
  for (guint i = 0; i < m->n_packets; i++) {
    guint64 ts = m->packets[i].timestamp;
    if (ts == 0 || ts > now) {
      pr->unstamped++;
      continue;
    }
    guint64 d = now - ts;
    g_array_append_val (pr->ns, d);
    g_array_append_val (pr->unit_ts, ts);
    pr->unit_youngest = MAX (pr->unit_youngest, ts);
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

/* The clock the pipeline runs on is daqirisrc's (the port clock): the packets' time base */
static gboolean
clock_is_port_clock (GstClock *clock, char **error)
{
  char *name = gst_object_get_name (GST_OBJECT (clock));
  gboolean ok = g_str_has_prefix (name, "daqiri-");
  if (!ok)
    *error = g_strdup_printf ("the pipeline clock is %s, not daqirisrc's port clock", name);
  g_free (name);
  return ok;
}

/* afpacket: the sender runs from PLAYING on; the source's thread shows with the first
 * buffer */
static pid_t
wait_src_thread (Bench *bench)
{
  pid_t tid = 0;
  for (guint i = 0; i < 2000 && (tid = bench_src_thread (bench)) == 0; i++)
    g_usleep (1000);
  return tid;
}

static void
run_one (Run *r, guint index, double seconds, gboolean pin)
{
  char *name = g_strdup_printf ("lat%u", index);
  char *launch = r->afpacket
      ? g_strdup_printf ("daqirisrc name=src device=afpacket:%s burst-timeout=%" G_GUINT64_FORMAT
                         " ! fakesink name=sink enable-last-sample=false",
            BENCH_VETH_RX, r->timeout_ns)
      : g_strdup_printf ("daqirisrc name=src device=emu:%s,gen=64,gen-rate=%" G_GUINT64_FORMAT
                         " burst-timeout=%" G_GUINT64_FORMAT
                         " ! fakesink name=sink enable-last-sample=false",
            name, r->rate, r->timeout_ns);
  Bench bench;
  guint reserve = (guint) (r->rate * seconds * 1.2) + 1024;
  Probe pr = { .ns = g_array_sized_new (FALSE, FALSE, sizeof (guint64), reserve),
    .fill = g_array_sized_new (FALSE, FALSE, sizeof (guint64), reserve),
    .handover = g_array_sized_new (FALSE, FALSE, sizeof (guint64), reserve / 2),
    .unit_ts = g_array_new (FALSE, FALSE, sizeof (guint64)),
    .by_block = r->afpacket };
  pid_t src_tid = 0, dev_tid = 0, softirq_pid = r->afpacket ? bench_ksoftirqd0 () : 0;
  BenchSender *sender = NULL;
  GError *err = NULL;

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
  if (!clock_is_port_clock (pr.clock, &r->error))
    goto out;
  if (r->afpacket) {
    if ((sender = bench_sender_start (r->rate, &err)) == NULL) {
      r->error = g_strdup (err->message);
      g_error_free (err);
      goto out;
    }
    src_tid = wait_src_thread (&bench);
    dev_tid = bench_sender_tid (sender);
  } else {
    bench_find_threads (&bench, 1000, &src_tid, &dev_tid);
  }
  if (pin && src_tid != 0)
    bench_pin (WHO, src_tid, 1);
  if (pin && dev_tid != 0)
    bench_pin (WHO, dev_tid, 0);
  g_usleep (WARMUP_US);
  guint64 run0, src_wait0 = 0, dev_wait0 = 0, src_wait1 = 0, dev_wait1 = 0;
  bench_thread_sched_ns (src_tid, &run0, &src_wait0);
  bench_thread_sched_ns (dev_tid, &run0, &dev_wait0);
  guint64 softirq_wait0 = bench_pid_runq_ns (softirq_pid);
  g_atomic_int_set (&pr.recording, 1);
  g_usleep ((gulong) (seconds * G_USEC_PER_SEC));
  g_atomic_int_set (&pr.recording, 0);
  bench_thread_sched_ns (src_tid, &run0, &src_wait1);
  bench_thread_sched_ns (dev_tid, &run0, &dev_wait1);
  r->softirq_runq_ms = (bench_pid_runq_ns (softirq_pid) - softirq_wait0) / 1e6;
  r->src_runq_ms = (src_wait1 - src_wait0) / 1e6;
  r->dev_runq_ms = (dev_wait1 - dev_wait0) / 1e6;
  if (sender != NULL) {
    guint64 sent;
    gint64 elapsed;
    bench_sender_stop (g_steal_pointer (&sender), &sent, &elapsed);
    r->sent_pps = elapsed > 0 ? sent * 1e9 / elapsed : 0;
  }
  char *bus_error = NULL;
  if (bench_bus_error (bench.pipeline, &bus_error)) {
    r->error = bus_error;
    goto out;
  }
  gst_element_set_state (bench.pipeline, GST_STATE_NULL); /* the probe is done */
  unit_close (&pr);
  if (pr.ns->len == 0) {
    r->error = g_strdup_printf ("no timestamped packet reached the sink (%" G_GUINT64_FORMAT
                                " without a time)",
        pr.unstamped);
    goto out;
  }
  g_array_sort (pr.ns, cmp_u64);
  r->packets = pr.ns->len;
  r->buffers = pr.buffers;
  r->units = pr.units;
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
  if (sender != NULL) {
    guint64 sent;
    gint64 elapsed;
    bench_sender_stop (sender, &sent, &elapsed);
  }
  if (pr.clock != NULL)
    gst_object_unref (pr.clock);
  bench_clear (&bench);
  g_array_unref (pr.ns);
  g_array_unref (pr.fill);
  g_array_unref (pr.handover);
  g_array_unref (pr.unit_ts);
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
      "{\"bench\":\"latency\",\"device\":\"%s\",\"rate\":%" G_GUINT64_FORMAT
      ",\"burst_timeout_us\":%.0f",
      r->afpacket ? "afpacket" : "emu", r->rate, r->timeout_ns / 1000.0);
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
      ",\"%s_runq_ms\":%.2f",
      r->packets, r->buffers > 0 ? (double) r->packets / r->buffers : 0.0, r->p50_us, r->p99_us,
      r->p999_us, r->max_us, p99_ok ? "true" : "false", max_ok ? "true" : "false", r->fill_p99_us,
      r->fill_max_us, r->handover_p50_us, r->handover_p99_us, r->handover_max_us, r->src_runq_ms,
      r->afpacket ? "sender" : "dev", r->dev_runq_ms);
  if (r->afpacket)
    g_string_append_printf (s,
        ",\"packets_per_block\":%.1f,\"sent_pps\":%.0f,\"ksoftirqd0_runq_ms\":%.2f",
        r->units > 0 ? (double) r->packets / r->units : 0.0, r->sent_pps, r->softirq_runq_ms);
  g_string_append (s, ",\"error\":null}");
  printf ("%s\n", s->str);
  fflush (stdout);
  g_string_free (s, TRUE);
}

int
main (int argc, char **argv)
{
  gdouble seconds = 2.0;
  gboolean no_pin = FALSE;
  gchar *engine = NULL;
  GOptionEntry entries[] = { { "seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds,
                                 "measuring window per run (2)", "S" },
    { "engine", 0, 0, G_OPTION_ARG_STRING, &engine,
        "emu (the emulated ConnectX, default) or afpacket (a veth pair; root)", "E" },
    { "no-pin", 0, 0, G_OPTION_ARG_NONE, &no_pin, "do not pin the two threads", NULL }, { NULL } };
  if (!bench_parse_args (
          WHO, "- port time to sink on the emulated ConnectX or afpacket", entries, &argc, &argv))
    return 2;
  if (seconds < 0.1 || seconds > 600)
    return bench_out_of_range (WHO, "seconds: 0.1..600");
  if (engine != NULL && strcmp (engine, "emu") != 0 && strcmp (engine, "afpacket") != 0)
    return bench_out_of_range (WHO, "engine: emu or afpacket");
  gboolean afpacket = engine != NULL && strcmp (engine, "afpacket") == 0;
  g_free (engine);
  GError *err = NULL;
  /* before any thread exists: threads made later are in the namespace too */
  if (afpacket && !bench_veth_setup (&err)) {
    printf ("bench-latency: afpacket skipped: %s\n", err->message);
    g_error_free (err);
    return 77;
  }
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
      r->afpacket = afpacket;
      r->rate = rates[i];
      r->timeout_ns = timeouts[j];
      run_one (r, n, seconds, bench_pinning (no_pin));
      print_json (r);
      gboolean p99_ok, max_ok;
      failed |= !r->ok;
      met += r->ok && run_meets (r, &p99_ok, &max_ok);
      n++;
    }
  if (afpacket)
    bench_veth_teardown ();

  printf ("\n| rate | burst-timeout | packets/buffer | p50 µs | p99 µs | p99.9 µs | max µs | "
          "fill p99 / max µs | hand-over p50 / p99 / max µs | runq src / %s ms |%s\n"
          "|---|---|---|---|---|---|---|---|---|---|%s\n",
      afpacket ? "sender" : "dev",
      afpacket ? " ksoftirqd/0 runq ms | packets/block | sent k/s |" : "",
      afpacket ? "---|---|---|" : "");
  for (guint i = 0; i < n; i++) {
    if (!runs[i].ok)
      continue;
    printf ("| %" G_GUINT64_FORMAT
            " k/s | %.0f µs | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f "
            "| %.1f / %.1f / %.1f | %.2f / %.2f |",
        runs[i].rate / 1000, runs[i].timeout_ns / 1000.0,
        (double) runs[i].packets / runs[i].buffers, runs[i].p50_us, runs[i].p99_us, runs[i].p999_us,
        runs[i].max_us, runs[i].fill_p99_us, runs[i].fill_max_us, runs[i].handover_p50_us,
        runs[i].handover_p99_us, runs[i].handover_max_us, runs[i].src_runq_ms, runs[i].dev_runq_ms);
    if (afpacket)
      printf (" %.2f | %.1f | %.0f |", runs[i].softirq_runq_ms,
          (double) runs[i].packets / MAX (runs[i].units, 1), runs[i].sent_pps / 1000);
    printf ("\n");
  }
  printf ("bench-latency: %s, 64 B, port time to sink: %u of %u runs within targets "
          "(p99 <= burst-timeout + 20 us, max <= burst-timeout + 200 us)",
      afpacket ? "afpacket (veth)" : "emu", met, n);
  for (guint i = 0; i < n; i++)
    if (runs[i].ok)
      printf ("; %" G_GUINT64_FORMAT "k/s %.0fus p99 %.1f max %.1f", runs[i].rate / 1000,
          runs[i].timeout_ns / 1000.0, runs[i].p99_us, runs[i].max_us);
  printf ("\n");
  for (guint i = 0; i < n; i++)
    g_free (runs[i].error);
  return failed ? 1 : 0;
}
