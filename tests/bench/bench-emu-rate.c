/* bench-emu-rate: how many packets a second `daqirisrc ! fakesink` takes from the
 * emulated ConnectX, and whether it drops any at a set rate.
 *
 *   daqirisrc name=src device=emu:NAME,gen=64,gen-rate=RATE ! fakesink
 *
 * The port's built-in generator (emu.h: gen=) writes 64-byte UDP frames into the RQ on
 * the port's device thread, pinned to CPU 0; the daqirisrc streaming thread, pinned to
 * CPU 1, polls the CQ and pushes bursts to fakesink. Nothing else runs in the process.
 *
 * Runs, each a fresh pipeline (and port) measured over a window after a warm-up:
 *   full    gen-rate=0: the generator as fast as its thread goes, lossy (gen-lossless
 *           off): received packets/s is what the receiver sustains; drops say whether
 *           the receiver (drops > 0) or the generator (none) was the slower side
 *   paced   gen-rate=--paced (default 10m): received = generated, drops = 0 is the target
 *   soak    full rate for --soak seconds: VmRSS every second (flat is the target)
 * Per run: received/generated packets/s, drops (the RQ's out-of-buffer count, as
 * daqirisrc's stats report it, and the port's own counter), CPU ns per packet of each
 * thread (/proc/self/task/TID/schedstat: time on CPU), ring bytes per queue.
 *
 * The daqiri plugin is linked in (registered statically) so that the port's counters
 * can be read (emu_port_counters): emulated ports are per process.
 *
 * Output: one JSON object per run, a table, PASS/FAIL per target (the exit status stays
 * 0 unless a run fails to start), and one line starting with "bench-emu-rate:".
 *
 * usage: bench-emu-rate [--seconds S] [--repeat N] [--frame LEN] [--paced PPS]
 *                       [--soak S] [--no-pin]
 */
#include <gst/gst.h>
#include <gst/daqiri/daqiripacketmeta.h>

#include "bench-emu-util.h"
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING_TARGET_BYTES (G_GUINT64_CONSTANT (64) << 20)
#define RATE_TARGET_PPS 20000000.0
#define WARMUP_US (500 * G_TIME_SPAN_MILLISECOND)

typedef struct {
  guint seconds;
  guint repeat;
  guint frame;
  guint64 paced;
  guint soak;
  gboolean pin;
  const char *keys;      /* more device-string keys, e.g. "stride=64" */
  const char *src_props; /* more daqirisrc properties */
} Options;

typedef struct {
  const char *kind; /* "full", "paced", "soak" */
  guint64 gen_rate;
  gboolean ok;
  char *error;
  double seconds;
  guint64 received;    /* daqirisrc stats packets, in the window */
  guint64 generated;   /* frames that reached the port, in the window */
  guint64 drops;       /* daqirisrc drops-ring-full, in the window */
  guint64 drops_port;  /* the port's rx_out_of_buffer, in the window */
  guint64 drops_total; /* since the generator started (warm-up included) */
  guint64 ring_bytes;
  guint64 bursts;
  double src_cpu_ns;         /* CPU time of the streaming thread per received packet */
  double dev_cpu_ns;         /* of the device thread per generated frame */
  double src_busy, dev_busy; /* share of the window each thread was on a CPU */
  double src_runq, dev_runq; /* share of it each waited for a CPU (other work) */
  GArray *rss_kib;           /* soak: VmRSS each second */
} Run;

/* ---- /proc ---- */

static guint64
rss_kib (void)
{
  gchar *text = NULL;
  guint64 kib = 0;
  if (g_file_get_contents ("/proc/self/status", &text, NULL, NULL)) {
    const char *p = strstr (text, "VmRSS:");
    if (p != NULL)
      kib = g_ascii_strtoull (p + 6, NULL, 10);
    g_free (text);
  }
  return kib;
}

/* ---- one run ---- */

typedef struct {
  guint64 packets, drops, bursts, ring_bytes;
  EmuCounters port;
  guint64 src_cpu, dev_cpu, src_wait, dev_wait;
  gint64 t;
} Sample;

static gboolean
take_sample (GstElement *src, EmuPort *port, pid_t src_tid, pid_t dev_tid, Sample *s)
{
  GstStructure *st = NULL;
  g_object_get (src, "stats", &st, NULL);
  gboolean ok = st != NULL && gst_structure_get_uint64 (st, "packets", &s->packets) &&
      gst_structure_get_uint64 (st, "drops-ring-full", &s->drops) &&
      gst_structure_get_uint64 (st, "bursts", &s->bursts) &&
      gst_structure_get_uint64 (st, "ring-bytes", &s->ring_bytes);
  if (st != NULL)
    gst_structure_free (st);
  emu_port_counters (port, &s->port);
  bench_thread_sched_ns (src_tid, &s->src_cpu, &s->src_wait);
  bench_thread_sched_ns (dev_tid, &s->dev_cpu, &s->dev_wait);
  s->t = g_get_monotonic_time ();
  return ok;
}

static void
run_one (const Options *o, Run *r, guint index)
{
  char *name = g_strdup_printf ("bench%u", index);
  char *launch =
      g_strdup_printf ("daqirisrc name=src device=emu:%s,gen=%u,gen-rate=%" G_GUINT64_FORMAT
                       "%s%s %s ! fakesink enable-last-sample=false",
          name, o->frame, r->gen_rate, o->keys ? "," : "", o->keys ? o->keys : "",
          o->src_props ? o->src_props : "");
  Bench bench;
  Sample a, b;

  if (!bench_build (&bench, name, launch, &r->error))
    goto out;
  if (!bench_play (&bench, &r->error))
    goto out;
  bench.port = emu_port_lookup (bench.port_name);
  /* the device thread exists with the port; the streaming thread once PLAYING */
  pid_t src_tid, dev_tid;
  bench_find_threads (&bench, 5000, &src_tid, &dev_tid);
  if (bench.port == NULL || src_tid == 0 || dev_tid == 0) {
    r->error = g_strdup ("the port or its threads did not show up");
    goto out;
  }
  if (o->pin) {
    bench_pin ("bench-emu-rate", dev_tid, 0);
    bench_pin ("bench-emu-rate", src_tid, 1);
  }
  g_usleep (WARMUP_US);
  if (!take_sample (bench.src, bench.port, src_tid, dev_tid, &a)) {
    r->error = g_strdup ("no stats");
    goto out;
  }
  guint seconds = r->rss_kib != NULL ? o->soak : o->seconds;
  for (guint s = 0; s < seconds; s++) {
    g_usleep (G_USEC_PER_SEC);
    if (r->rss_kib != NULL) {
      guint64 kib = rss_kib ();
      g_array_append_val (r->rss_kib, kib);
    }
  }
  take_sample (bench.src, bench.port, src_tid, dev_tid, &b);
  if (bench_bus_error (bench.pipeline, &r->error))
    goto out;

  r->seconds = (double) (b.t - a.t) / G_USEC_PER_SEC;
  r->received = b.packets - a.packets;
  r->generated = b.port.rx_packets_phy - a.port.rx_packets_phy;
  r->drops = b.drops - a.drops;
  r->drops_port = b.port.rx_out_of_buffer - a.port.rx_out_of_buffer;
  r->drops_total = b.drops;
  r->bursts = b.bursts - a.bursts;
  r->ring_bytes = b.ring_bytes;
  r->src_cpu_ns = r->received ? (double) (b.src_cpu - a.src_cpu) / r->received : 0;
  r->dev_cpu_ns = r->generated ? (double) (b.dev_cpu - a.dev_cpu) / r->generated : 0;
  r->src_busy = (double) (b.src_cpu - a.src_cpu) / ((b.t - a.t) * 1000.0);
  r->dev_busy = (double) (b.dev_cpu - a.dev_cpu) / ((b.t - a.t) * 1000.0);
  r->src_runq = (double) (b.src_wait - a.src_wait) / ((b.t - a.t) * 1000.0);
  r->dev_runq = (double) (b.dev_wait - a.dev_wait) / ((b.t - a.t) * 1000.0);
  r->ok = TRUE;

out:
  bench_clear (&bench);
}

/* The receiver alone: the generator fills the ring while the pipeline is PAUSED (the
 * source has its queue but does not poll), then daqirisrc drains it in PLAYING with no
 * frame being written meanwhile. Also gives the generator's rate with no reader. */
typedef struct {
  gboolean ok;
  char *error;
  guint64 packets;
  double fill_seconds;  /* generator alone */
  double drain_seconds; /* receiver alone */
  double src_cpu_ns;
  guint64 drops;
} Drain;

static void
run_drain (const Options *o, Drain *d, guint index, guint64 n)
{
  char *name = g_strdup_printf ("drain%u", index);
  /* 64-byte strides: a 64 MiB ring holds a million frames */
  char *launch =
      g_strdup_printf ("daqirisrc name=src device=emu:%s,gen=%u,gen-count=%" G_GUINT64_FORMAT
                       ",gen-lossless=on,stride=64 ! fakesink enable-last-sample=false",
          name, o->frame, n);
  Bench bench;

  if (!bench_build (&bench, name, launch, &d->error))
    goto out;
  gint64 t0 = g_get_monotonic_time ();
  if (!bench_pause (&bench, &d->error))
    goto out;
  /* the generator starts with the steering of the queue: time it from its first frame */
  while (emu_port_generated (bench.port) == 0 && g_get_monotonic_time () - t0 < 5 * G_USEC_PER_SEC)
    g_usleep (50);
  t0 = g_get_monotonic_time ();
  while (emu_port_generated (bench.port) < n && g_get_monotonic_time () - t0 < 20 * G_USEC_PER_SEC)
    g_usleep (200);
  gint64 t1 = g_get_monotonic_time ();
  if (emu_port_generated (bench.port) < n) {
    d->error = g_strdup_printf (
        "the ring took only %" G_GUINT64_FORMAT " frames", emu_port_generated (bench.port));
    goto out;
  }
  d->fill_seconds = (double) (t1 - t0) / G_USEC_PER_SEC;
  if (!bench_play (&bench, &d->error))
    goto out;
  pid_t src_tid = 0;
  Sample a = { 0 }, b = { 0 };
  gint64 start = g_get_monotonic_time ();
  for (;;) {
    if (src_tid == 0 && (src_tid = bench_src_thread (&bench)) != 0) {
      if (o->pin)
        bench_pin ("bench-emu-rate", src_tid, 1);
      take_sample (bench.src, bench.port, src_tid, 0, &a);
    }
    take_sample (bench.src, bench.port, src_tid, 0, &b);
    if (b.packets >= n || g_get_monotonic_time () - start > 20 * G_USEC_PER_SEC)
      break;
    g_usleep (200);
  }
  if (b.packets < n) {
    d->error = g_strdup_printf ("drained only %" G_GUINT64_FORMAT " packets", b.packets);
    goto out;
  }
  /* from PLAYING to the last packet; the first sample comes once the thread runs */
  d->drain_seconds = (double) (b.t - start) / G_USEC_PER_SEC;
  d->packets = b.packets;
  d->drops = b.drops;
  d->src_cpu_ns =
      b.packets - a.packets ? (double) (b.src_cpu - a.src_cpu) / (b.packets - a.packets) : 0;
  d->ok = TRUE;

out:
  bench_clear (&bench);
}

/* ---- output ---- */

static void
print_json (const Options *o, const Run *r)
{
  GString *s = g_string_new ("{\"bench\":\"emu-rate\"");
  g_string_append_printf (s, ",\"run\":\"%s\",\"frame\":%u,\"gen_rate\":%" G_GUINT64_FORMAT,
      r->kind, o->frame, r->gen_rate);
  if (!r->ok) {
    bench_print_json_error (s, r->error);
    return;
  }
  g_string_append_printf (s,
      ",\"seconds\":%.3f,\"received\":%" G_GUINT64_FORMAT
      ",\"received_pps\":%.0f,\"generated\":%" G_GUINT64_FORMAT ",\"generated_pps\":%.0f"
      ",\"drops\":%" G_GUINT64_FORMAT ",\"port_out_of_buffer\":%" G_GUINT64_FORMAT
      ",\"drops_since_start\":%" G_GUINT64_FORMAT ",\"packets_per_buffer\":%.1f"
      ",\"src_cpu_ns_per_packet\":%.1f,\"dev_cpu_ns_per_packet\":%.1f,\"src_busy\":%.2f"
      ",\"dev_busy\":%.2f,\"src_runq\":%.2f,\"dev_runq\":%.2f,\"ring_bytes\":%" G_GUINT64_FORMAT,
      r->seconds, r->received, r->received / r->seconds, r->generated, r->generated / r->seconds,
      r->drops, r->drops_port, r->drops_total, r->bursts ? (double) r->received / r->bursts : 0.0,
      r->src_cpu_ns, r->dev_cpu_ns, r->src_busy, r->dev_busy, r->src_runq, r->dev_runq,
      r->ring_bytes);
  if (r->rss_kib != NULL) {
    g_string_append (s, ",\"rss_kib\":[");
    for (guint i = 0; i < r->rss_kib->len; i++)
      g_string_append_printf (
          s, "%s%" G_GUINT64_FORMAT, i ? "," : "", g_array_index (r->rss_kib, guint64, i));
    g_string_append (s, "]");
  }
  g_string_append (s, "}");
  g_print ("%s\n", s->str);
  g_string_free (s, TRUE);
}

static int
cmp_received (gconstpointer a, gconstpointer b)
{
  const Run *x = a, *y = b;
  double rx = x->ok ? x->received / x->seconds : -1, ry = y->ok ? y->received / y->seconds : -1;
  return rx < ry ? -1 : rx > ry;
}

/* the median run (by received packets/s) of n */
static const Run *
median (Run *runs, guint n)
{
  Run *copy = g_memdup2 (runs, sizeof (Run) * n);
  qsort (copy, n, sizeof (Run), cmp_received);
  const Run *mid = NULL;
  for (guint i = 0; i < n; i++)
    if (runs[i].received == copy[n / 2].received && runs[i].ok == copy[n / 2].ok)
      mid = &runs[i];
  g_free (copy);
  return mid;
}

static void
print_row (const char *what, const Run *r, const Run *all, guint n)
{
  if (!r->ok) {
    g_print ("| %s | failed: %s |\n", what, r->error ? r->error : "?");
    return;
  }
  double lo = 1e18, hi = 0;
  for (guint i = 0; i < n; i++)
    if (all[i].ok) {
      double pps = all[i].received / all[i].seconds;
      lo = MIN (lo, pps);
      hi = MAX (hi, pps);
    }
  g_print ("| %s | %.2f (%.2f..%.2f) | %.2f | %" G_GUINT64_FORMAT " | %.1f | %.1f (%.0f %%) "
           "| %.1f (%.0f %%) |\n",
      what, r->received / r->seconds / 1e6, lo / 1e6, hi / 1e6, r->generated / r->seconds / 1e6,
      r->drops, r->bursts ? (double) r->received / r->bursts : 0.0, r->src_cpu_ns,
      r->src_busy * 100, r->dev_cpu_ns, r->dev_busy * 100);
}

int
main (int argc, char **argv)
{
  Options o = {
    .seconds = 3, .repeat = 3, .frame = 64, .paced = 10000000, .soak = 10, .pin = TRUE
  };
  gint seconds = 3, repeat = 3, frame = 64, soak = 10;
  gint64 paced = 10000000;
  gboolean no_pin = FALSE;
  gchar *keys = NULL, *src_props = NULL;
  GOptionEntry entries[] = { { "keys", 0, 0, G_OPTION_ARG_STRING, &keys,
                                 "more keys for the device string, e.g. "
                                 "stride=64 (mlx5-engine.h, emu.h)",
                                 "K=V,.." },
    { "src-props", 0, 0, G_OPTION_ARG_STRING, &src_props,
        "more daqirisrc properties, e.g. "
        "\"burst-packets=512\"",
        "P=V .." },
    { "seconds", 0, 0, G_OPTION_ARG_INT, &seconds, "measuring window per run (3)", "S" },
    { "repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "runs of each kind (3)", "N" },
    { "frame", 0, 0, G_OPTION_ARG_INT, &frame, "generated frame length (64)", "LEN" },
    { "paced", 0, 0, G_OPTION_ARG_INT64, &paced, "rate of the paced runs (10000000)", "PPS" },
    { "soak", 0, 0, G_OPTION_ARG_INT, &soak, "RSS run length, 0: none (10)", "S" },
    { "no-pin", 0, 0, G_OPTION_ARG_NONE, &no_pin, "do not pin the two threads", NULL }, { NULL } };
  if (!bench_parse_args ("bench-emu-rate",
          "- daqirisrc ! fakesink on the emulated ConnectX's generator", entries, &argc, &argv))
    return 2;
  if (seconds < 1 || repeat < 1 || frame < 60 || frame > 1518 || paced < 1 || soak < 0)
    return bench_out_of_range ("bench-emu-rate", NULL);
  o.seconds = (guint) seconds;
  o.repeat = (guint) repeat;
  o.frame = (guint) frame;
  o.paced = (guint64) paced;
  o.soak = (guint) soak;
  o.pin = bench_pinning (no_pin);
  o.keys = keys;
  o.src_props = src_props;

  if (!bench_emu_init ("bench-emu-rate"))
    return 2;

  Run *full = g_new0 (Run, o.repeat), *pacedr = g_new0 (Run, o.repeat);
  Run soakr = { .kind = "soak", .gen_rate = 0 };
  guint index = 0;
  gboolean failed = FALSE;
  /* interleaved: the machine's noise spreads over both kinds */
  for (guint i = 0; i < o.repeat; i++) {
    full[i].kind = "full";
    run_one (&o, &full[i], index++);
    print_json (&o, &full[i]);
    pacedr[i].kind = "paced";
    pacedr[i].gen_rate = o.paced;
    run_one (&o, &pacedr[i], index++);
    print_json (&o, &pacedr[i]);
    failed |= !full[i].ok || !pacedr[i].ok;
  }
  const guint64 drain_n = 1000000;
  Drain *drains = g_new0 (Drain, o.repeat);
  for (guint i = 0; i < o.repeat; i++) {
    run_drain (&o, &drains[i], index++, drain_n);
    Drain *dr = &drains[i];
    if (dr->ok)
      g_print (
          "{\"bench\":\"emu-rate\",\"run\":\"drain\",\"frame\":%u,\"packets\":%" G_GUINT64_FORMAT
          ",\"fill_seconds\":%.4f,\"generated_pps\":%.0f,"
          "\"drain_seconds\":%.4f,\"received_pps\":%.0f,\"src_cpu_ns_per_packet\":%.1f,"
          "\"drops\":%" G_GUINT64_FORMAT "}\n",
          o.frame, dr->packets, dr->fill_seconds, dr->packets / dr->fill_seconds, dr->drain_seconds,
          dr->packets / dr->drain_seconds, dr->src_cpu_ns, dr->drops);
    else
      g_print ("{\"bench\":\"emu-rate\",\"run\":\"drain\",\"error\":\"%s\"}\n", dr->error);
    failed |= !dr->ok;
  }
  if (o.soak > 0) {
    soakr.rss_kib = g_array_new (FALSE, FALSE, sizeof (guint64));
    run_one (&o, &soakr, index++);
    print_json (&o, &soakr);
    failed |= !soakr.ok;
  }

  const Run *fm = median (full, o.repeat), *pm = median (pacedr, o.repeat);
  g_print ("\n| run | received Mpps (min..max) | generated Mpps | drops | packets/buffer "
           "| daqirisrc thread ns/packet (busy) | device thread ns/frame (busy) |\n"
           "|---|---|---|---|---|---|---|\n");
  print_row ("full", fm, full, o.repeat);
  gchar *pname = g_strdup_printf ("paced %.0f Mpps", o.paced / 1e6);
  print_row (pname, pm, pacedr, o.repeat);
  g_free (pname);

  /* the receiver alone: the best drain of the repeats */
  const Drain *best = NULL;
  for (guint i = 0; i < o.repeat; i++)
    if (drains[i].ok && (best == NULL || drains[i].drain_seconds < best->drain_seconds))
      best = &drains[i];
  if (best != NULL)
    g_print ("| drain (receiver alone) | %.2f | %.2f (generator alone) | %" G_GUINT64_FORMAT
             " | - | %.1f | - |\n",
        best->packets / best->drain_seconds / 1e6, best->packets / best->fill_seconds / 1e6,
        best->drops, best->src_cpu_ns);

  /* targets */
  double rate = fm->ok ? fm->received / fm->seconds : 0;
  guint64 paced_drops = 0;
  double paced_gen = 0;
  for (guint i = 0; i < o.repeat; i++) {
    paced_drops += pacedr[i].ok ? pacedr[i].drops_total : 0;
    paced_gen = MAX (paced_gen, pacedr[i].ok ? pacedr[i].generated / pacedr[i].seconds : 0);
  }
  guint64 ring = fm->ok ? fm->ring_bytes : 0;
  gboolean rate_ok = rate >= RATE_TARGET_PPS;
  gboolean drops_ok = paced_drops == 0;
  gboolean ring_ok = ring > 0 && ring <= RING_TARGET_BYTES;
  gboolean rss_ok = TRUE;
  guint64 rss_first = 0, rss_last = 0, rss_min = G_MAXUINT64, rss_max = 0;
  if (soakr.rss_kib != NULL && soakr.rss_kib->len > 1) {
    rss_first = g_array_index (soakr.rss_kib, guint64, 0);
    rss_last = g_array_index (soakr.rss_kib, guint64, soakr.rss_kib->len - 1);
    for (guint i = 0; i < soakr.rss_kib->len; i++) {
      rss_min = MIN (rss_min, g_array_index (soakr.rss_kib, guint64, i));
      rss_max = MAX (rss_max, g_array_index (soakr.rss_kib, guint64, i));
    }
    /* flat: within 1 % from the first second on */
    rss_ok = rss_max - rss_min <= rss_first / 100;
  }
  g_print ("\nreceived at full rate: %.2f Mpps (target >= %.0f Mpps: %s)\n", rate / 1e6,
      RATE_TARGET_PPS / 1e6, rate_ok ? "PASS" : "FAIL");
  g_print ("paced at %.1f Mpps (generated up to %.2f Mpps): %" G_GUINT64_FORMAT " drops over "
           "%u run(s) (target 0: %s)\n",
      o.paced / 1e6, paced_gen / 1e6, paced_drops, o.repeat, drops_ok ? "PASS" : "FAIL");
  g_print ("ring per queue at the defaults: %.1f MiB (target <= 64 MiB: %s)\n", ring / 1048576.0,
      ring_ok ? "PASS" : "FAIL");
  if (soakr.rss_kib != NULL && soakr.rss_kib->len > 1)
    g_print ("RSS over %u s at full rate: %" G_GUINT64_FORMAT " KiB first, %" G_GUINT64_FORMAT
             " KiB last, %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT " KiB (target flat within 1 %%:"
             " %s)\n",
        o.soak, rss_first, rss_last, rss_min, rss_max, rss_ok ? "PASS" : "FAIL");
  g_print (
      "bench-emu-rate: %uB full %.2f Mpps (generated %.2f, %" G_GUINT64_FORMAT
      " drops, daqirisrc %.1f ns/pkt, device %.1f ns/frame); paced %.1f Mpps %" G_GUINT64_FORMAT
      " drops; receiver alone %.2f Mpps, generator alone %.2f Mpps; ring "
      "%.0f MiB/queue; RSS %" G_GUINT64_FORMAT "->%" G_GUINT64_FORMAT " KiB; targets %d/4 "
      "PASS\n",
      o.frame, rate / 1e6, fm->ok ? fm->generated / fm->seconds / 1e6 : 0, fm->ok ? fm->drops : 0,
      fm->ok ? fm->src_cpu_ns : 0, fm->ok ? fm->dev_cpu_ns : 0, o.paced / 1e6, paced_drops,
      best ? best->packets / best->drain_seconds / 1e6 : 0,
      best ? best->packets / best->fill_seconds / 1e6 : 0, ring / 1048576.0, rss_first, rss_last,
      rate_ok + drops_ok + ring_ok + rss_ok);
  for (guint i = 0; i < o.repeat; i++)
    g_free (drains[i].error);
  g_free (drains);

  for (guint i = 0; i < o.repeat; i++) {
    g_free (full[i].error);
    g_free (pacedr[i].error);
  }
  g_free (soakr.error);
  if (soakr.rss_kib != NULL)
    g_array_free (soakr.rss_kib, TRUE);
  g_free (full);
  g_free (pacedr);
  g_free (keys);
  g_free (src_props);
  return failed ? 1 : 0;
}
