/* bench-flow-change: whether changing daqirisrc's flow rules under full load loses packets
 * of a flow that the old and the new rules deliver alike. Runs without changes and runs
 * with a change every --interval-us, side by side in one run:
 *
 *   daqirisrc name=src device=emu:NAME,gen=64,gen-count=N,gen-lossless=on flows=A ! fakesink
 *
 * The port's built-in generator (emu.h: gen=) sends N 64-byte frames 10.0.0.1:1000 ->
 * 10.0.0.2:5000 UDP as fast as the device thread (pinned to CPU 0) makes them; lossless:
 * a frame waits for room in the ring instead of being dropped, so a full ring loses
 * nothing and any loss is the steering's. daqirisrc's streaming thread (pinned to CPU 1)
 * pushes bursts to fakesink. The two rule sets both deliver the generator's flow with
 * mark 1, by a rule at another position, and differ in the other rules:
 *
 *   A  proto=udp dst-port=5000 mark=1; proto=udp dst-port=7000 mark=2
 *   B  proto=udp dst-port=7001 mark=3; proto=udp dst-port=5000 mark=1
 *
 * Runs alternate two modes, --repeat times each, every run a fresh pipeline and port:
 *   steady  flows stays A
 *   churn   the main thread sets flows to B, A, B, ... every --interval-us while PLAYING,
 *           until the generator has made its N frames
 * A run ends when daqirisrc has delivered N packets (and counted their flows), or when the
 * port is idle and nothing more arrived for 1 s, or after --timeout seconds (a failed run).
 *
 * Per run: packets delivered with mark 1 (the stats' flow-counts), lost = N - those, the
 * rule changes made, the rate (packets delivered over the wall time from the first to
 * the last, stats sampled every 100 us), the stats' drops, the port's counters (steering
 * misses, out of buffer) and the WARNING messages on the bus: a change the element
 * refuses posts one (there should be none). After each churn run one change that must be
 * refused (a rule naming queue 7 of 1) checks that such a warning does arrive.
 *
 * Target: lost = 0 in every churn run.
 *
 * Output: one JSON object per run, a table per mode (sums, medians), and one line starting
 * "bench-flow-change:". The exit status is 0 unless a run fails (the target is reported,
 * not enforced).
 *
 * usage: bench-flow-change [--packets N] [--repeat R] [--interval-us US] [--timeout S]
 *                          [--no-pin]
 */
#include <gst/gst.h>

#include "dq-bench-util.h"
#include "bench-emu-util.h"
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRAME_LEN 64
#define KEPT_MARK 1
#define RULES_A "proto=udp dst-port=5000 mark=1; proto=udp dst-port=7000 mark=2"
#define RULES_B "proto=udp dst-port=7001 mark=3; proto=udp dst-port=5000 mark=1"
/* refused: the element has one queue */
#define RULES_REFUSED "proto=udp dst-port=5000 mark=1 queue=7"
#define SAMPLE_US 100
#define IDLE_END_US G_USEC_PER_SEC
#define BUS_CHECK_US (10 * G_TIME_SPAN_MILLISECOND)

typedef struct {
  guint64 packets;
  guint repeat;
  guint interval_us;
  guint timeout_s;
  gboolean pin;
} Options;

typedef struct {
  const char *mode; /* "steady" or "churn" */
  gboolean churn;
  gboolean ok;
  char *error;
  char *warning;      /* the first warning's text */
  const char *status; /* "complete", "idle" (ended short), "failed" */
  guint64 delivered;  /* packets with flow id KEPT_MARK */
  guint64 packets;    /* all packets the stats count */
  guint64 drops;      /* the stats' drops */
  guint64 lost;
  guint changes;
  guint warnings;
  double seconds;
  double mpps;
  EmuCounters port;
} Run;

/* ---- stats ---- */

typedef struct {
  guint64 packets;
  guint64 drops;
  guint64 kept;    /* packets of flow id KEPT_MARK */
  guint64 counted; /* packets of all flow ids */
} Sample;

/* From the stats' flow-counts: *kept, the packets of flow id KEPT_MARK, and *counted, the
 * packets of every flow id (daqirisrc counts a burst's flows just after its packets). */
static void
flow_packets (const GstStructure *st, guint64 *kept, guint64 *counted)
{
  const GValue *arr = gst_structure_get_value (st, "flow-counts");
  guint64 overflow = 0;
  gst_structure_get_uint64 (st, "flow-counts-overflow", &overflow);
  *kept = 0;
  *counted = overflow;
  for (guint i = 0; arr != NULL && i < gst_value_array_get_size (arr); i++) {
    const GstStructure *fc = gst_value_get_structure (gst_value_array_get_value (arr, i));
    guint id = 0;
    guint64 packets = 0;
    if (!gst_structure_get_uint (fc, "flow-id", &id) ||
        !gst_structure_get_uint64 (fc, "packets", &packets))
      continue;
    *counted += packets;
    if (id == KEPT_MARK)
      *kept = packets;
  }
}

static gboolean
take_sample (GstElement *src, Sample *s)
{
  GstStructure *st = NULL;
  g_object_get (src, "stats", &st, NULL);
  if (st == NULL)
    return FALSE;
  gboolean ok = gst_structure_get_uint64 (st, "packets", &s->packets) &&
      gst_structure_get_uint64 (st, "drops", &s->drops);
  flow_packets (st, &s->kept, &s->counted);
  gst_structure_free (st);
  return ok;
}

/* ---- the bus ---- */

/* Takes the WARNING and ERROR messages off the bus: counts the warnings in *warnings, keeps
 * the first one's text in *warning (when not NULL) and the first error's in *error. TRUE
 * when there was an error. */
static gboolean
take_bus_messages (GstElement *pipeline, guint *warnings, char **warning, char **error)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg;
  gboolean failed = FALSE;
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING | GST_MESSAGE_ERROR)) != NULL) {
    GError *err = NULL;
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_WARNING) {
      gst_message_parse_warning (msg, &err, NULL);
      if ((*warnings)++ == 0 && warning != NULL && *warning == NULL)
        *warning = g_strdup (err->message);
    } else {
      gst_message_parse_error (msg, &err, NULL);
      if (*error == NULL)
        *error = g_strdup (err->message);
      failed = TRUE;
    }
    g_error_free (err);
    gst_message_unref (msg);
  }
  gst_object_unref (bus);
  return failed;
}

/* Sets flows to what the element must refuse and checks that it says so on the bus;
 * FALSE, *error set, when no warning came. */
static gboolean
check_refusal_warns (GstElement *pipeline, GstElement *src, char **error)
{
  guint warnings = 0;
  g_object_set (src, "flows", RULES_REFUSED, NULL);
  take_bus_messages (pipeline, &warnings, NULL, error);
  if (warnings == 0 && *error == NULL)
    *error = g_strdup ("setting flows to \"" RULES_REFUSED "\" (queue 7 of 1) was not refused "
                       "with a warning on the bus: refused changes would go uncounted");
  return warnings > 0;
}

/* ---- one run ---- */

static void
pin_threads (Bench *bench)
{
  pid_t src_tid, dev_tid;
  bench_find_threads (bench, 1000, &src_tid, &dev_tid);
  if (dev_tid != 0)
    bench_pin ("bench-flow-change", dev_tid, 0);
  if (src_tid != 0)
    bench_pin ("bench-flow-change", src_tid, 1);
  if (src_tid == 0)
    g_printerr ("bench-flow-change: the streaming thread src:src not found, not pinned\n");
  else if (dev_tid == 0)
    g_printerr ("bench-flow-change: emu:%s not found, not pinned\n", bench->port_name);
}

/* Samples the stats every SAMPLE_US until the run ends; in churn mode changes the rules
 * every interval_us until the generator is done. The rate: packets delivered from the
 * first sample that saw some to the last that saw more, over the time between the two. */
static void
measure (const Options *o, Bench *bench, Run *r)
{
  Sample s = { 0 }, prev = { 0 }, first = { 0 };
  gint64 start = g_get_monotonic_time ();
  gint64 next_change = start + o->interval_us, next_bus = start + BUS_CHECK_US;
  gint64 t_first = 0, t_last = 0;
  for (;;) {
    gint64 now = g_get_monotonic_time ();
    if (r->churn && now >= next_change && emu_port_generated (bench->port) < o->packets) {
      r->changes++;
      g_object_set (bench->src, "flows", r->changes % 2 ? RULES_B : RULES_A, NULL);
      next_change += o->interval_us;
      if (next_change < now)
        next_change = now + o->interval_us;
    }
    if (now >= next_bus) {
      if (take_bus_messages (bench->pipeline, &r->warnings, &r->warning, &r->error))
        return;
      next_bus = now + BUS_CHECK_US;
    }
    if (!take_sample (bench->src, &s)) {
      r->error = g_strdup ("daqirisrc has no stats");
      return;
    }
    now = g_get_monotonic_time ();
    if (s.packets > prev.packets) {
      if (t_first == 0) {
        t_first = now;
        first = s;
      }
      t_last = now;
      prev = s;
    }
    if (s.counted >= o->packets) {
      r->status = "complete";
      break;
    }
    if (t_last != 0 && now - t_last > IDLE_END_US && emu_port_wait_idle (bench->port, 0)) {
      r->status = "idle";
      break;
    }
    if (now - start > (gint64) o->timeout_s * G_USEC_PER_SEC) {
      r->error =
          g_strdup_printf ("timed out after %u s: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                           " packets delivered, %" G_GUINT64_FORMAT " generated",
              o->timeout_s, s.packets, o->packets, emu_port_generated (bench->port));
      return;
    }
    g_usleep (SAMPLE_US);
  }
  r->packets = s.packets;
  r->delivered = s.kept;
  r->drops = s.drops;
  r->lost = o->packets > s.kept ? o->packets - s.kept : 0;
  r->seconds = (double) (t_last - t_first) / G_USEC_PER_SEC;
  r->mpps = r->seconds > 0 ? (double) (s.packets - first.packets) / r->seconds / 1e6 : 0;
  take_bus_messages (bench->pipeline, &r->warnings, &r->warning, &r->error);
  r->ok = r->error == NULL;
}

static void
run_one (const Options *o, Run *r, guint index)
{
  char *name = g_strdup_printf ("flowchg%u", index);
  char *launch =
      g_strdup_printf ("daqirisrc name=src device=emu:%s,gen=%u,gen-count=%" G_GUINT64_FORMAT
                       ",gen-lossless=on flows=\"" RULES_A "\" ! fakesink "
                       "enable-last-sample=false",
          name, FRAME_LEN, o->packets);
  Bench bench;

  r->status = "failed";
  if (!bench_build (&bench, name, launch, &r->error) || !bench_pause (&bench, &r->error) ||
      !bench_play (&bench, &r->error))
    goto out;
  if (o->pin)
    pin_threads (&bench);
  measure (o, &bench, r);
  emu_port_counters (bench.port, &r->port);
  if (r->ok && r->churn && !check_refusal_warns (bench.pipeline, bench.src, &r->error))
    r->ok = FALSE;
  if (!r->ok)
    r->status = "failed";

out:
  bench_clear (&bench);
}

/* ---- output ---- */

static void
print_json (const Options *o, const Run *r)
{
  GString *s = g_string_new (NULL);
  g_string_printf (s,
      "{\"bench\":\"flow-change\",\"mode\":\"%s\",\"frame\":%u,\"packets\":%" G_GUINT64_FORMAT
      ",\"interval_us\":%u,\"status\":\"%s\"",
      r->mode, FRAME_LEN, o->packets, r->churn ? o->interval_us : 0, r->status);
  if (!r->ok) {
    bench_print_json_error (s, r->error);
    return;
  }
  g_string_append_printf (s,
      ",\"delivered\":%" G_GUINT64_FORMAT ",\"lost\":%" G_GUINT64_FORMAT
      ",\"other_flows\":%" G_GUINT64_FORMAT ",\"changes\":%u,\"seconds\":%.4f,\"mpps\":%.2f"
      ",\"drops\":%" G_GUINT64_FORMAT ",\"steer_miss\":%" G_GUINT64_FORMAT
      ",\"out_of_buffer\":%" G_GUINT64_FORMAT ",\"port_rx_packets\":%" G_GUINT64_FORMAT
      ",\"warnings\":%u",
      r->delivered, r->lost, r->packets - r->delivered, r->changes, r->seconds, r->mpps, r->drops,
      r->port.rx_steer_miss, r->port.rx_out_of_buffer, r->port.rx_packets, r->warnings);
  if (r->warning != NULL) {
    gchar *w = g_strescape (r->warning, NULL);
    g_string_append_printf (s, ",\"first_warning\":\"%s\"", w);
    g_free (w);
  }
  g_string_append (s, ",\"error\":null}");
  g_print ("%s\n", s->str);
  g_string_free (s, TRUE);
}

/* What the good runs of one mode add up to, and their median rate. */
typedef struct {
  guint runs;
  guint64 lost, steer_miss, drops;
  guint changes, warnings;
  double mpps, mpps_lo, mpps_hi;
  double changes_median;
} ModeSummary;

static double
median_sorted (double *v, guint n)
{
  dq_bench_sort_doubles (v, n);
  return v[n / 2];
}

static void
summarize (const Run *runs, guint n, ModeSummary *m)
{
  double *mpps = g_new (double, n), *changes = g_new (double, n);
  memset (m, 0, sizeof *m);
  for (guint i = 0; i < n; i++) {
    if (!runs[i].ok)
      continue;
    mpps[m->runs] = runs[i].mpps;
    changes[m->runs] = runs[i].changes;
    m->runs++;
    m->lost += runs[i].lost;
    m->steer_miss += runs[i].port.rx_steer_miss;
    m->drops += runs[i].drops;
    m->changes += runs[i].changes;
    m->warnings += runs[i].warnings;
  }
  if (m->runs > 0) {
    m->mpps = median_sorted (mpps, m->runs);
    m->mpps_lo = mpps[0];
    m->mpps_hi = mpps[m->runs - 1];
    m->changes_median = median_sorted (changes, m->runs);
  }
  g_free (mpps);
  g_free (changes);
}

static void
print_row (const char *mode, guint repeat, const ModeSummary *m)
{
  g_print ("| %s | %u of %u | %" G_GUINT64_FORMAT " | %.0f | %.2f (%.2f..%.2f) | %" G_GUINT64_FORMAT
           " | %" G_GUINT64_FORMAT " | %u |\n",
      mode, m->runs, repeat, m->lost, m->changes_median, m->mpps, m->mpps_lo, m->mpps_hi,
      m->steer_miss, m->drops, m->warnings);
}

int
main (int argc, char **argv)
{
  gint64 packets = 20000000;
  gint repeat = 3, interval_us = 1000, timeout = 60;
  gboolean no_pin = FALSE;
  GOptionEntry entries[] = { { "packets", 0, 0, G_OPTION_ARG_INT64, &packets,
                                 "frames the generator sends per run (20000000)", "N" },
    { "repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "runs of each mode (3)", "R" },
    { "interval-us", 0, 0, G_OPTION_ARG_INT, &interval_us,
        "time between two rule changes in churn runs (1000)", "US" },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &timeout, "longest run, in seconds (60)", "S" },
    { "no-pin", 0, 0, G_OPTION_ARG_NONE, &no_pin, "do not pin the two threads", NULL }, { NULL } };
  if (!bench_parse_args ("bench-flow-change",
          "- flow-rule changes under full load on the emulated ConnectX", entries, &argc, &argv))
    return 2;
  if (packets < 1000 || packets > G_GINT64_CONSTANT (1000000000000) || repeat < 1 ||
      interval_us < 1 || timeout < 1)
    return bench_out_of_range (
        "bench-flow-change", "packets: 1000..1e12; repeat, interval-us, timeout: >= 1");
  Options o = { .packets = (guint64) packets,
    .repeat = (guint) repeat,
    .interval_us = (guint) interval_us,
    .timeout_s = (guint) timeout,
    .pin = bench_pinning (no_pin) };

  if (!bench_emu_init ("bench-flow-change"))
    return 2;

  Run *steady = g_new0 (Run, o.repeat), *churn = g_new0 (Run, o.repeat);
  gboolean failed = FALSE;
  guint index = 0;
  /* alternated: the machine's noise spreads over both modes */
  for (guint i = 0; i < o.repeat; i++) {
    steady[i].mode = "steady";
    run_one (&o, &steady[i], index++);
    print_json (&o, &steady[i]);
    churn[i].mode = "churn";
    churn[i].churn = TRUE;
    run_one (&o, &churn[i], index++);
    print_json (&o, &churn[i]);
    failed |= !steady[i].ok || !churn[i].ok;
  }

  ModeSummary ms, mc;
  summarize (steady, o.repeat, &ms);
  summarize (churn, o.repeat, &mc);
  g_print ("\n| mode | runs | lost, sum | rule changes, median | Mpps, median (min..max) "
           "| steering misses, sum | drops, sum | warnings, sum |\n"
           "|---|---|---|---|---|---|---|---|\n");
  print_row ("steady", o.repeat, &ms);
  print_row ("churn", o.repeat, &mc);

  gboolean met = mc.runs == o.repeat && mc.lost == 0;
  double ratio = ms.mpps > 0 ? mc.mpps / ms.mpps : 0;
  g_print ("bench-flow-change: %uB, %" G_GUINT64_FORMAT " packets per run, %u runs each, a change "
           "every %u us; churn lost %" G_GUINT64_FORMAT
           " in %u rule changes, %u refused (steady lost %" G_GUINT64_FORMAT
           "); Mpps steady %.2f, churn %.2f, ratio %.3f; target lost=0: %s\n",
      FRAME_LEN, o.packets, o.repeat, o.interval_us, mc.lost, mc.changes, mc.warnings, ms.lost,
      ms.mpps, mc.mpps, ratio, met ? "met" : "missed");

  for (guint i = 0; i < o.repeat; i++) {
    g_free (steady[i].error);
    g_free (steady[i].warning);
    g_free (churn[i].error);
    g_free (churn[i].warning);
  }
  g_free (steady);
  g_free (churn);
  return failed ? 1 : 0;
}
