/* bench-reorder-pipeline: the steady-state packet rate of daqirireorder in a pipeline fed by
 * the emulated ConnectX, with the ring and the frames in system or GPU memory.
 *
 *   daqirisrc device=emu:NAME,gen=64,gen-count=G,gen-lossless=1 memory=M gpudirect=D
 *       burst-packets=1024 !
 *     daqirireorder memory=RE [max-inflight=K] seq-offset=336 seq-bits=32
 *       packets-per-batch=1024 payload-offset=46 payload-size=18 !
 *     fakesink enable-last-sample=false
 *
 * The port's built-in generator (mlx5/emu/emu.h: gen=) writes G 64-byte UDP frames, waiting
 * for room in the ring rather than dropping one (gen-lossless); the sequence number sits at bit
 * 336 (the first payload word), so 1024 packets make a batch of 1024 x 18 bytes.
 *
 * Configurations (SRC/RE[/K]), each run in a fresh pipeline and port, interleaved, --repeat
 * times: system/system (the CPU twin), system/cuda/1, system/cuda/4, cuda/cuda/1, cuda/cuda/4,
 * pinned/cuda/4, cuda/system. SRC cuda is the ring in GPU device memory (M = cuda, D = true:
 * the emulated NIC copies into it), pinned the ring in pinned host memory (M = cuda,
 * D = false). K is daqirireorder's max-inflight (GPU submissions in flight); where the element
 * has no such property the cuda configurations run once each at its one depth, inflight null.
 *
 * Measurement: the main thread reads daqirireorder's stats every millisecond; the rate is the
 * packets counted between the first reading at or past 10 % of G and the first at or past 90 %,
 * over the time between those two readings. A run ends when all G packets are counted, on an
 * error message, or at --timeout (then it is reported as timed out, with the packets reached).
 * A configuration that needs CUDA where the plugin says no GPU can be used is skipped, with the
 * plugin's message.
 *
 * Output: one JSON object per run, a table (median per configuration), and one line starting
 * with "bench-reorder-pipeline:" (median Mpps per configuration, K=4 / K=1 for memory=cuda).
 * The exit status is 0 unless a run fails for a reason other than CUDA being unavailable.
 *
 * usage: bench-reorder-pipeline [--packets G] [--repeat R] [--timeout S] [--configs LIST]
 */
#include <gst/gst.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daqiri-reorder.h"
#include "dq-bench-util.h"

#define POLL_US 1000
#define MAX_INFLIGHT_PROP "max-inflight"

/* where daqirisrc's ring lies: system memory, GPU device memory (memory=cuda, the
 * emulator copying into it), pinned host memory (memory=cuda gpudirect=false) */
typedef enum {
  SRC_SYSTEM,
  SRC_CUDA,
  SRC_PINNED,
  SRC_KINDS,
} SrcMemory;

static const char *const src_names[SRC_KINDS] = { "system", "cuda", "pinned" };

typedef struct {
  SrcMemory src;
  gboolean re_cuda;
  guint inflight; /* K; 0: max-inflight not set */
  char *label;    /* "system/cuda/4" */
} Config;

typedef enum {
  STATUS_OK,
  STATUS_SKIPPED,
  STATUS_TIMEOUT,
  STATUS_ERROR,
} Status;

static const char *const status_names[] = { "ok", "skipped", "timeout", "error" };

typedef struct {
  Status status;
  gint64 inflight; /* what the element ran with; -1: null */
  guint64 packets, batches, no_frame;
  double seconds; /* from 10 % to 90 % of the packets; 0: not reached */
  double mpps;
  char *error;
} Run;

typedef struct {
  guint64 packets;
  guint repeat;
  guint timeout_s;
  gboolean has_inflight; /* daqirireorder has max-inflight */
  guint inflight_min, inflight_max;
  gboolean cuda_ok; /* a GPU can be used (as the plugin will find it) */
} Options;

static const char *
memory_name (gboolean cuda)
{
  return cuda ? "cuda" : "system";
}

/* ---- configurations ---- */

static void
config_add (GArray *configs, SrcMemory src, gboolean re_cuda, guint inflight)
{
  Config c = { .src = src, .re_cuda = re_cuda, .inflight = inflight };
  if (inflight > 0)
    c.label = g_strdup_printf ("%s/%s/%u", src_names[src], memory_name (re_cuda), inflight);
  else
    c.label = g_strdup_printf ("%s/%s", src_names[src], memory_name (re_cuda));
  g_array_append_val (configs, c);
}

static void
configs_default (GArray *configs, gboolean has_inflight)
{
  config_add (configs, SRC_SYSTEM, FALSE, 0);
  if (has_inflight) {
    config_add (configs, SRC_SYSTEM, TRUE, 1);
    config_add (configs, SRC_SYSTEM, TRUE, 4);
    config_add (configs, SRC_CUDA, TRUE, 1);
    config_add (configs, SRC_CUDA, TRUE, 4);
    config_add (configs, SRC_PINNED, TRUE, 4);
  } else {
    config_add (configs, SRC_SYSTEM, TRUE, 0);
    config_add (configs, SRC_CUDA, TRUE, 0);
    config_add (configs, SRC_PINNED, TRUE, 0);
  }
  config_add (configs, SRC_CUDA, FALSE, 0);
}

static gboolean
parse_memory (const char *text, gboolean *cuda)
{
  if (strcmp (text, "system") == 0)
    *cuda = FALSE;
  else if (strcmp (text, "cuda") == 0)
    *cuda = TRUE;
  else
    return FALSE;
  return TRUE;
}

static gboolean
parse_src (const char *text, SrcMemory *src)
{
  for (guint i = 0; i < SRC_KINDS; i++) {
    if (strcmp (text, src_names[i]) == 0) {
      *src = (SrcMemory) i;
      return TRUE;
    }
  }
  return FALSE;
}

/* "SRC/RE[/K],..." with SRC system, cuda or pinned, RE system or cuda, K 1..16 (RE cuda
 * only) */
static gboolean
configs_parse (GArray *configs, const char *list, GError **error)
{
  gchar **items = g_strsplit (list, ",", -1);
  gboolean ok = items[0] != NULL;
  for (guint i = 0; ok && items[i] != NULL; i++) {
    gchar **parts = g_strsplit (g_strstrip (items[i]), "/", -1);
    guint n = g_strv_length (parts);
    SrcMemory src = SRC_SYSTEM;
    gboolean re_cuda = FALSE;
    guint64 k = 0;
    ok = (n == 2 || n == 3) && parse_src (parts[0], &src) && parse_memory (parts[1], &re_cuda);
    if (ok && n == 3)
      ok = re_cuda && g_ascii_string_to_unsigned (parts[2], 10, 1, 16, &k, NULL);
    if (ok)
      config_add (configs, src, re_cuda, (guint) k);
    else
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
          "--configs: \"%s\" is "
          "not SRC/RE or SRC/cuda/K (SRC: system, cuda or pinned; RE: system or cuda; "
          "K: 1..16)",
          items[i]);
    g_strfreev (parts);
  }
  if (items[0] == NULL)
    g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--configs is empty");
  g_strfreev (items);
  return ok;
}

/* ---- one run ---- */

/* the first error message on the bus, or NULL */
static char *
bus_error (GstElement *pipeline)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  char *text = NULL;
  gst_object_unref (bus);
  if (msg != NULL) {
    GError *err = NULL;
    gst_message_parse_error (msg, &err, NULL);
    text = g_strdup (err->message);
    g_error_free (err);
    gst_message_unref (msg);
  }
  return text;
}

static gboolean
read_stats (GstElement *reorder, Run *r)
{
  GstStructure *st = NULL;
  g_object_get (reorder, "stats", &st, NULL);
  gboolean ok = st != NULL && gst_structure_get_uint64 (st, "packets", &r->packets) &&
      gst_structure_get_uint64 (st, "batches", &r->batches) &&
      gst_structure_get_uint64 (st, "no-frame", &r->no_frame);
  if (st != NULL)
    gst_structure_free (st);
  return ok;
}

/* A failed run that needed CUDA is skipped when the plugin said no GPU can be used (or this
 * build has none), or when no GPU could be found at all. */
static void
run_failed (const Options *o, const Config *c, Run *r, char *error, const char *fallback)
{
  r->error = error != NULL ? error : g_strdup (fallback);
  gboolean needs_cuda = c->src != SRC_SYSTEM || c->re_cuda;
  if (needs_cuda && (strstr (r->error, "is cuda, but") != NULL || !o->cuda_ok))
    r->status = STATUS_SKIPPED;
  else
    r->status = STATUS_ERROR;
}

static void
run_one (const Options *o, const Config *c, guint index, Run *r)
{
  GstElement *pipeline = NULL, *reorder = NULL;

  memset (r, 0, sizeof *r);
  r->inflight = -1;
  /* without max-inflight the element has one submission in flight: K=1 runs, unset */
  if (c->inflight > 1 && !o->has_inflight) {
    r->status = STATUS_SKIPPED;
    r->error = g_strdup ("this daqirireorder has no max-inflight property");
    return;
  }
  if (c->inflight > 0 && o->has_inflight &&
      (c->inflight < o->inflight_min || c->inflight > o->inflight_max)) {
    r->status = STATUS_SKIPPED;
    r->error = g_strdup_printf (
        "this daqirireorder's max-inflight is %u..%u", o->inflight_min, o->inflight_max);
    return;
  }

  char *launch = g_strdup_printf (
      "daqirisrc device=emu:brp%u,gen=64,gen-count=%" G_GUINT64_FORMAT
      ",gen-lossless=1 memory=%s gpudirect=%s burst-packets=1024 ! daqirireorder name=re "
      "memory=%s seq-offset=336 seq-bits=32 packets-per-batch=1024 payload-offset=46 "
      "payload-size=18 ! fakesink enable-last-sample=false",
      index, o->packets, memory_name (c->src != SRC_SYSTEM),
      c->src == SRC_PINNED ? "false" : "true", memory_name (c->re_cuda));
  GError *err = NULL;
  pipeline = gst_parse_launch (launch, &err);
  g_free (launch);
  if (pipeline == NULL || err != NULL) {
    r->status = STATUS_ERROR;
    r->error = g_strdup (err != NULL ? err->message : "cannot build the pipeline");
    g_clear_error (&err);
    goto out;
  }
  reorder = gst_bin_get_by_name (GST_BIN (pipeline), "re");
  if (c->inflight > 0 && o->has_inflight)
    g_object_set (reorder, MAX_INFLIGHT_PROP, c->inflight, NULL);
  if (c->re_cuda && o->has_inflight) {
    guint k = 0;
    g_object_get (reorder, MAX_INFLIGHT_PROP, &k, NULL);
    r->inflight = k;
  }

  gint64 start = g_get_monotonic_time ();
  gint64 deadline = start + (gint64) o->timeout_s * G_USEC_PER_SEC;
  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    run_failed (o, c, r, bus_error (pipeline), "the pipeline does not start");
    goto out;
  }

  guint64 at10 = MAX (o->packets / 10, 1), at90 = MAX (o->packets * 9 / 10, at10 + 1);
  guint64 p10 = 0, p90 = 0;
  gint64 t10 = 0, t90 = 0;
  gboolean playing = FALSE;
  for (;;) {
    char *error = bus_error (pipeline);
    if (error != NULL) {
      read_stats (reorder, r);
      run_failed (o, c, r, error, NULL);
      break;
    }
    if (!playing) {
      GstState state = GST_STATE_NULL;
      gst_element_get_state (pipeline, &state, NULL, 0);
      playing = state == GST_STATE_PLAYING;
    }
    if (!read_stats (reorder, r)) {
      r->status = STATUS_ERROR;
      r->error = g_strdup ("daqirireorder's stats lack packets, batches or no-frame");
      break;
    }
    gint64 now = g_get_monotonic_time ();
    if (t10 == 0 && r->packets >= at10) {
      t10 = now;
      p10 = r->packets;
    }
    if (t90 == 0 && r->packets >= at90) {
      t90 = now;
      p90 = r->packets;
    }
    if (r->packets >= o->packets) {
      r->status = STATUS_OK;
      break;
    }
    if (now >= deadline) {
      r->status = STATUS_TIMEOUT;
      r->error =
          g_strdup_printf ("%s after %u s: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " packets",
              playing ? "timed out" : "not PLAYING", o->timeout_s, r->packets, o->packets);
      break;
    }
    g_usleep (POLL_US);
  }
  /* each end is the first reading past its mark, paired with the count it read */
  if (t10 != 0 && t90 > t10) {
    r->seconds = (double) (t90 - t10) / G_USEC_PER_SEC;
    r->mpps = (double) (p90 - p10) / r->seconds / 1e6;
  } else if (r->status == STATUS_OK) {
    r->error = g_strdup ("10 % and 90 % of the packets came between two readings of the "
                         "stats: no rate (more --packets)");
  }

out:
  if (reorder != NULL)
    gst_object_unref (reorder);
  if (pipeline != NULL) {
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_object_unref (pipeline);
  }
}

/* ---- output ---- */

static void
print_json (const Config *c, const Run *r)
{
  GString *s = g_string_new ("{\"bench\":\"reorder-pipeline\"");
  g_string_append_printf (
      s, ",\"src\":\"%s\",\"reorder\":\"%s\"", src_names[c->src], memory_name (c->re_cuda));
  if (r->inflight >= 0)
    g_string_append_printf (s, ",\"inflight\":%" G_GINT64_FORMAT, r->inflight);
  else
    g_string_append (s, ",\"inflight\":null");
  g_string_append_printf (s,
      ",\"packets\":%" G_GUINT64_FORMAT ",\"batches\":%" G_GUINT64_FORMAT
      ",\"no_frame\":%" G_GUINT64_FORMAT,
      r->packets, r->batches, r->no_frame);
  if (r->seconds > 0)
    g_string_append_printf (s, ",\"seconds\":%.4f,\"mpps\":%.3f", r->seconds, r->mpps);
  else
    g_string_append (s, ",\"seconds\":null,\"mpps\":null");
  g_string_append_printf (s, ",\"status\":\"%s\"", status_names[r->status]);
  if (r->error != NULL) {
    gchar *e = g_strescape (r->error, NULL);
    g_string_append_printf (s, ",\"error\":\"%s\"}", e);
    g_free (e);
  } else {
    g_string_append (s, ",\"error\":null}");
  }
  g_print ("%s\n", s->str);
  g_string_free (s, TRUE);
}

typedef struct {
  guint ok, skipped, timeout, error;
  double median, min, max; /* Mpps of the ok runs; median < 0: none */
  const char *note;        /* an error of a run that was not ok */
} Summary;

static void
summarize (const Run *runs, guint n, Summary *s)
{
  double *mpps = g_new (double, n);
  guint m = 0;
  memset (s, 0, sizeof *s);
  s->median = -1;
  for (guint i = 0; i < n; i++) {
    const Run *r = &runs[i];
    switch (r->status) {
      case STATUS_OK:
        s->ok++;
        if (r->seconds > 0)
          mpps[m++] = r->mpps;
        break;
      case STATUS_SKIPPED: s->skipped++; break;
      case STATUS_TIMEOUT: s->timeout++; break;
      case STATUS_ERROR: s->error++; break;
    }
    if (r->error != NULL && s->note == NULL)
      s->note = r->error;
  }
  if (m > 0) {
    dq_bench_sort_doubles (mpps, m);
    s->median = m % 2 ? mpps[m / 2] : (mpps[m / 2 - 1] + mpps[m / 2]) / 2;
    s->min = mpps[0];
    s->max = mpps[m - 1];
  }
  g_free (mpps);
}

/* the median Mpps of SRC/cuda/K, or < 0 */
static double
median_of (const GArray *configs, const Summary *sums, SrcMemory src, guint k)
{
  for (guint i = 0; i < configs->len; i++) {
    const Config *c = &g_array_index (configs, Config, i);
    if (c->src == src && c->re_cuda && c->inflight == k)
      return sums[i].median;
  }
  return -1;
}

int
main (int argc, char **argv)
{
  gint64 packets = 4000000;
  gint repeat = 2, timeout_s = 30;
  gchar *configs_text = NULL;
  GOptionEntry entries[] = { { "packets", 0, 0, G_OPTION_ARG_INT64, &packets,
                                 "packets per run, G (4000000)", "G" },
    { "repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "runs of each configuration (2)", "R" },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &timeout_s, "time limit of one run in seconds (30)", "S" },
    { "configs", 0, 0, G_OPTION_ARG_STRING, &configs_text,
        "configurations to run, e.g. "
        "system/system,system/cuda/1 (SRC/RE or SRC/cuda/K; default: system/system, "
        "system/cuda/1, system/cuda/4, cuda/cuda/1, cuda/cuda/4, cuda/system)",
        "LIST" },
    { NULL } };
  GOptionContext *ctx =
      g_option_context_new ("- daqirisrc ! daqirireorder ! fakesink on "
                            "the emulated ConnectX's generator, memory=system and memory=cuda");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  GError *err = NULL;
  GArray *configs = g_array_new (FALSE, FALSE, sizeof (Config));
  gboolean parsed = g_option_context_parse (ctx, &argc, &argv, &err);
  g_option_context_free (ctx);
  if (parsed && (packets < 100 || repeat < 1 || timeout_s < 1))
    g_set_error (&err, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
        "an option is out of range "
        "(--packets >= 100, --repeat >= 1, --timeout >= 1)");
  else if (parsed && configs_text != NULL)
    configs_parse (configs, configs_text, &err);
  if (err != NULL) {
    g_printerr ("bench-reorder-pipeline: %s\n", err->message);
    g_error_free (err);
    for (guint i = 0; i < configs->len; i++)
      g_free (g_array_index (configs, Config, i).label);
    g_array_free (configs, TRUE);
    g_free (configs_text);
    return 2;
  }

  Options o = {
    .packets = (guint64) packets, .repeat = (guint) repeat, .timeout_s = (guint) timeout_s
  };
  GstElement *probe = gst_element_factory_make ("daqirireorder", NULL);
  if (probe == NULL) {
    g_printerr ("bench-reorder-pipeline: no daqirireorder element (GST_PLUGIN_PATH_1_0 "
                "should name the folder of the daqiri plugin)\n");
    g_array_free (configs, TRUE);
    g_free (configs_text);
    return 2;
  }
  GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (probe), MAX_INFLIGHT_PROP);
  if (pspec != NULL && G_PARAM_SPEC_VALUE_TYPE (pspec) == G_TYPE_UINT) {
    o.has_inflight = TRUE;
    o.inflight_min = G_PARAM_SPEC_UINT (pspec)->minimum;
    o.inflight_max = G_PARAM_SPEC_UINT (pspec)->maximum;
  }
  gst_object_unref (probe);
  if (configs->len == 0)
    configs_default (configs, o.has_inflight);

  char why[256] = "";
  o.cuda_ok = dq_cuda_available (why, sizeof why) != 0;
  if (o.cuda_ok) {
    char dev[256];
    dq_cuda_device_info (dev, sizeof dev);
    g_print ("device: %s\n", dev);
  } else {
    g_print ("device: none (%s)\n", why);
  }
  g_print ("daqirireorder max-inflight: %s\n", o.has_inflight ? "yes" : "no (K not set)");

  /* interleaved: the machine's noise spreads over every configuration */
  Run *runs = g_new0 (Run, (gsize) configs->len * o.repeat);
  guint index = 0;
  for (guint rep = 0; rep < o.repeat; rep++)
    for (guint i = 0; i < configs->len; i++) {
      const Config *c = &g_array_index (configs, Config, i);
      Run *r = &runs[i * o.repeat + rep];
      run_one (&o, c, index++, r);
      print_json (c, r);
    }

  Summary *sums = g_new0 (Summary, configs->len);
  gboolean failed = FALSE;
  g_print ("\n| daqirisrc memory | daqirireorder memory | max-inflight | runs ok | "
           "median Mpps (min..max) | note |\n|---|---|---|---|---|---|\n");
  for (guint i = 0; i < configs->len; i++) {
    const Config *c = &g_array_index (configs, Config, i);
    const Run *first = &runs[i * o.repeat];
    Summary *s = &sums[i];
    gint64 inflight = -1;
    summarize (first, o.repeat, s);
    failed |= s->error > 0;
    for (guint j = 0; j < o.repeat; j++)
      inflight = MAX (inflight, first[j].inflight);
    char *k = inflight >= 0 ? g_strdup_printf ("%" G_GINT64_FORMAT, inflight) : g_strdup ("-");
    char *rate = s->median >= 0 ? g_strdup_printf ("%.2f (%.2f..%.2f)", s->median, s->min, s->max)
                                : g_strdup ("-");
    GString *note = g_string_new (NULL);
    if (s->skipped)
      g_string_append_printf (note, "%u skipped", s->skipped);
    if (s->timeout)
      g_string_append_printf (note, "%s%u timed out", note->len ? ", " : "", s->timeout);
    if (s->error)
      g_string_append_printf (note, "%s%u failed", note->len ? ", " : "", s->error);
    if (s->note != NULL)
      g_string_append_printf (note, ": %s", s->note);
    g_print ("| %s | %s | %s | %u/%u | %s | %s |\n", src_names[c->src], memory_name (c->re_cuda), k,
        s->ok, o.repeat, rate, note->str);
    g_free (k);
    g_free (rate);
    g_string_free (note, TRUE);
  }

  GString *line = g_string_new (NULL);
  g_string_append_printf (line,
      "bench-reorder-pipeline: median Mpps of %" G_GUINT64_FORMAT " packets x %u:", o.packets,
      o.repeat);
  for (guint i = 0; i < configs->len; i++) {
    const Config *c = &g_array_index (configs, Config, i);
    const Summary *s = &sums[i];
    g_string_append_printf (line, "%s %s ", i ? "," : "", c->label);
    if (s->median >= 0)
      g_string_append_printf (line, "%.2f", s->median);
    else
      g_string_append (line,
          s->error         ? "error"
              : s->timeout ? "timeout"
              : s->ok      ? "no-rate"
                           : "skipped");
  }
  /* what several submissions in flight bring, per source memory */
  gboolean any_ratio = FALSE;
  for (SrcMemory src = SRC_SYSTEM; src < SRC_KINDS; src++) {
    double k1 = median_of (configs, sums, src, 1), k4 = median_of (configs, sums, src, 4);
    gboolean has1 = FALSE, has4 = FALSE;
    for (guint i = 0; i < configs->len; i++) {
      const Config *c = &g_array_index (configs, Config, i);
      has1 |= c->src == src && c->re_cuda && c->inflight == 1;
      has4 |= c->src == src && c->re_cuda && c->inflight == 4;
    }
    if (!has1 || !has4)
      continue;
    g_string_append_printf (line, "%s %s/cuda ", any_ratio ? "," : "; K=4/K=1:", src_names[src]);
    if (k1 > 0 && k4 >= 0)
      g_string_append_printf (line, "%.2f", k4 / k1);
    else
      g_string_append (line, "-");
    any_ratio = TRUE;
  }
  gboolean any_cuda = FALSE;
  for (guint i = 0; i < configs->len; i++)
    any_cuda |= g_array_index (configs, Config, i).re_cuda;
  if (!any_ratio && any_cuda && !o.has_inflight)
    g_string_append (line, "; K=4/K=1: - (no max-inflight)");
  g_print ("\n%s\n", line->str);
  g_string_free (line, TRUE);

  for (guint i = 0; i < configs->len * o.repeat; i++)
    g_free (runs[i].error);
  g_free (runs);
  g_free (sums);
  for (guint i = 0; i < configs->len; i++)
    g_free (g_array_index (configs, Config, i).label);
  g_array_free (configs, TRUE);
  g_free (configs_text);
  return failed ? 1 : 0;
}
