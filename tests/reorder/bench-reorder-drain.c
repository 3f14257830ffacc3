/* bench-reorder-drain: what the product does with host and GPU work only. The receive ring,
 * in GPU device memory, is pre-filled by the emulated ConnectX while the pipeline is PAUSED,
 * then drained in PLAYING with nothing arriving meanwhile:
 *
 *   daqirisrc device=emu:NAME,mtu=9000,stride=S,strides=W memory=cuda gpudirect=true
 *       burst-packets=B ring-size=R max-packet-size=L !
 *     daqirireorder memory=cuda max-inflight=K seq-offset=336 seq-bits=32
 *       packets-per-batch=1024 payload-offset=46 payload-size=L-46 window=WIN submit-packets=P !
 *     fakesink enable-last-sample=false
 *
 * Frames of L bytes (64, 1024, 8192: UDP, the big-endian sequence number at byte 42, the
 * payload after it) are injected on the port's wire, lossless (the ring is sized to hold
 * them all: S = L rounded up to a power of two, WQEs of W = max (B, 512) strides, so that
 * a burst is B packets, R up to 4 GiB and to the emulated device's 4 Mi CQEs), in order or,
 * with --shuffle, shuffled within each batch of 1024. Every run checks that the port took
 * every frame, and that daqirireorder made every batch complete (no missing, duplicate,
 * late or short packet, no batch without a frame).
 *
 * Per point (L, K, B), three measurements:
 *   pipeline  the product. Rate: packets from the first frame out of daqirireorder to the
 *             last (a probe on fakesink), the first frame's packets not counted; Mpps and
 *             Gb/s of payload (L - 46 bytes a packet). The source's streaming thread, which
 *             also runs daqirireorder's chain and fakesink (no queue), split per burst: its
 *             CPU time (the kernel's per-thread clock, what /proc/self/task/TID/schedstat
 *             counts), and the wall time spent in daqirisrc's push (GStreamer's pad-push
 *             tracer hooks: daqirireorder's chain, waits for the GPU included), in
 *             daqirireorder's pushes of frames (downstream) and outside both (the source:
 *             its create() and GStreamer's per-buffer work).
 *   library   the GPU work alone: the same bursts submitted through cuda/daqiri-reorder.h
 *             (dq_reorder_gpu_submit / poll, K in flight, the same configuration but for a
 *             narrower sequence field over a buffer of device memory that the stream wraps
 *             around), no GStreamer: Mpps, wall time per submission and host time in the
 *             submit call. The element exposes no GPU time: this is the kernel-and-submission
 *             bound.
 *   source    daqirisrc ! fakesink drained the same way (once per L and B): the source and
 *             GStreamer per buffer alone; over several B a fit gives ns per buffer and per
 *             packet.
 * "bound" names the largest part of the pipeline's wall time per burst: source, downstream
 * or daqirireorder's chain; for the chain, "submission" where the submit call takes half of
 * the library's time per submission or more, "kernel" where the library alone takes 80 % of
 * the chain's time or more, else "reorder-host".
 *
 * Targets (reported, not enforced): >= 400 Gb/s at 8192 B, >= 200 Gb/s at 1024 B, >= 60 Mpps
 * at 64 B (best point of each size). Output: one JSON object per run, a table (medians over
 * --repeat), and one line starting "bench-reorder-drain:". Without a usable GPU the runs are
 * skipped with the plugin's message; the exit status is 0 unless a run fails otherwise. The
 * plugin is linked in (the emulated port is per process); bench-reorder-drain-emu is the same
 * on the CUDA emulator (functional only: its rates are not a GPU's).
 *
 * usage: bench-reorder-drain [--quick] [--sizes L,..] [--inflight K,..] [--bursts B,..]
 *          [--repeat R] [--packets N] [--ring-max BYTES] [--shuffle] [--timeout S]
 *          [--submit-packets P]
 */
#include <gst/gst.h>

#include "bench-emu-util.h"
#include "daqiri-reorder.h"
#include "dq-bench-util.h"
#include "dq-packet.h"
#include "dq-test-frame.h"
#include "emu.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WHO "bench-reorder-drain"
#define SEQ_OFFSET 42 /* bytes: the UDP payload's first word */
#define PAYLOAD_OFFSET 46
#define PPB 1024
#define MIN_WQE_STRIDES 512
#define MAX_CQ_STRIDES (G_GUINT64_CONSTANT (1) << 22) /* the emulated device's largest CQ */
#define MAX_RING (G_GUINT64_CONSTANT (4) << 30)       /* daqirisrc ring-size's maximum */
#define PORT_MTU 9000
#define GPU_MAX_FRAMES 512 /* as daqirireorder's GPU backend */
#define TARGET_8K_GBPS 400.0
#define TARGET_1K_GBPS 200.0
#define TARGET_64_MPPS 60.0

#ifdef DQ_BENCH_CUDA_EMU
#define DEFAULT_PACKETS 16384
#define DEFAULT_RING_MAX (G_GUINT64_CONSTANT (256) << 20)
#else
#define DEFAULT_PACKETS 0
#define DEFAULT_RING_MAX MAX_RING
#endif

typedef struct {
  GArray *sizes, *inflight, *bursts; /* guint each */
  guint repeat;
  guint64 packets;  /* per run; 0: what the ring holds */
  guint64 ring_max; /* bytes */
  gboolean shuffle;
  guint timeout_s;
  guint submit_packets; /* daqirireorder's submit-packets */
  gboolean cuda_ok;
  char cuda_why[256];
} Options;

typedef struct {
  guint frame, stride, wqe_strides;
  guint64 ring, packets;
} Geometry;

typedef enum {
  ST_OK,
  ST_SKIPPED,
  ST_ERROR,
} Status;

static const char *const status_names[] = { "ok", "skipped", "error" };

/* one pipeline (or source-alone) run; the library measurement rides along */
typedef struct {
  Status status;
  char *error;
  guint64 packets;
  double fill_seconds;
  double seconds, mpps, gbps;
  guint64 bursts;
  guint64 submissions;                 /* daqirireorder's (grouped bursts count once) */
  double wall_ns, cpu_ns;              /* per burst, streaming thread */
  double chain_ns, down_ns, source_ns; /* per burst, wall; chain_ns < 0: no hooks */
  Status lib_status;                   /* the library alone */
  char *lib_error;
  double lib_mpps, lib_sub_ns, lib_submit_ns;
} Run;

/* ---- small helpers ---- */

static guint64
pow2_ceil (guint64 v)
{
  guint64 p = 1;
  while (p < v)
    p <<= 1;
  return p;
}

static guint
log2_of (guint64 pow2)
{
  guint l = 0;
  while ((G_GUINT64_CONSTANT (1) << l) < pow2)
    l++;
  return l;
}

static guint
payload_of (guint frame)
{
  return frame - PAYLOAD_OFFSET;
}

/* batches open at once: those one burst spans, twice, at least the element's default 4 */
static guint
window_for (guint burst)
{
  return MAX (4u, 2 * burst / PPB);
}

/* CPU time of thread tid of this process, ns: its per-thread clock (the sum schedstat's first
 * field shows, brought up to date), by the clock id pthread_getcpuclockid makes for it */
static guint64
thread_cpu_ns (pid_t tid)
{
  clockid_t id = (clockid_t) ((~(guint32) tid << 3) | 6u);
  struct timespec ts;
  if (clock_gettime (id, &ts) != 0)
    return 0;
  return (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
}

static double
median (double *v, guint n)
{
  if (n == 0)
    return -1;
  dq_bench_sort_doubles (v, n);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the ring and the frames ---- */

static gboolean
geometry_for (const Options *o, guint frame, guint burst, Geometry *g, char **error)
{
  memset (g, 0, sizeof *g);
  g->frame = frame;
  g->stride = (guint) MAX (pow2_ceil (frame), 64);
  g->wqe_strides = MAX (burst, MIN_WQE_STRIDES);
  guint64 unit = MAX (burst, PPB); /* whole bursts and whole batches */
  guint64 max_ring = MIN (o->ring_max, MAX_CQ_STRIDES * g->stride);
  max_ring = pow2_ceil (max_ring / 2 + 1); /* the largest power of two <= it */
  if (max_ring > MIN (o->ring_max, MAX_CQ_STRIDES * g->stride))
    max_ring /= 2;
  guint64 wqe_bytes = (guint64) g->wqe_strides * g->stride;
  guint64 ring = o->packets ? pow2_ceil ((o->packets + g->wqe_strides) * g->stride) : max_ring;
  ring = MAX (MIN (ring, max_ring), 4 * wqe_bytes);
  if (ring > max_ring) {
    *error = g_strdup_printf ("%u-byte frames in bursts of %u need a ring of %" G_GUINT64_FORMAT
                              " bytes, more than --ring-max %" G_GUINT64_FORMAT,
        frame, burst, ring, o->ring_max);
    return FALSE;
  }
  g->ring = ring;
  /* one WQE left free: the device never meets a full ring */
  guint64 n = ring / g->stride - g->wqe_strides;
  if (o->packets)
    n = MIN (n, o->packets);
  n -= n % unit;
  if (n < 2 * unit) {
    *error = g_strdup_printf ("%" G_GUINT64_FORMAT " packets make fewer than 2 bursts of %u and "
                              "batches of %u (more --packets or --ring-max)",
        n, burst, PPB);
    return FALSE;
  }
  g->packets = n;
  return TRUE;
}

/* a frame of len bytes: UDP 10.0.0.1:1000 -> 10.0.0.2:5000, payload byte i = i */
static guint8 *
make_frame (guint len)
{
  guint8 *f = g_malloc0 (len);
  const DqPacketHeaders h = dq_test_headers (1000, 5000);
  dq_packet_write_headers (f, len, &h);
  for (guint i = PAYLOAD_OFFSET; i < len; i++)
    f[i] = (guint8) i;
  return f;
}

/* the sequence number of the k-th packet: k, or shuffled within its batch by perm */
static guint32
seq_at (const guint32 *perm, guint64 k)
{
  return (guint32) (perm != NULL ? k / PPB * PPB + perm[k % PPB] : k);
}

static guint32 *
make_perm (gboolean shuffle)
{
  if (!shuffle)
    return NULL;
  guint32 *perm = g_new (guint32, PPB);
  GRand *rand = g_rand_new_with_seed (42);
  for (guint i = 0; i < PPB; i++)
    perm[i] = i;
  for (guint i = PPB - 1; i > 0; i--) {
    guint j = (guint) g_rand_int_range (rand, 0, (gint32) i + 1);
    guint32 t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  g_rand_free (rand);
  return perm;
}

/* Puts the run's frames on the port's wire and waits until the device wrote them all into
 * the ring. */
static gboolean
prefill (EmuPort *port, const Geometry *g, const guint32 *perm, double *seconds, char **error)
{
  guint8 *fr = make_frame (g->frame);
  gint64 t0 = dq_bench_mono_ns ();
  for (guint64 k = 0; k < g->packets; k++) {
    guint32 seq = GUINT32_TO_BE (seq_at (perm, k));
    memcpy (fr + SEQ_OFFSET, &seq, 4);
    while (!emu_port_inject (port, fr, g->frame))
      g_usleep (50);
  }
  g_free (fr);
  gboolean idle = emu_port_wait_idle (port, 300 * G_GINT64_CONSTANT (1000000000));
  *seconds = (double) (dq_bench_mono_ns () - t0) / 1e9;
  EmuCounters c;
  emu_port_counters (port, &c);
  if (!idle || c.rx_packets != g->packets || c.dma_write_errors != 0) {
    *error = g_strdup_printf ("the ring took %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                              " frames (%" G_GUINT64_FORMAT " out of buffer, %" G_GUINT64_FORMAT
                              " failed copies into device memory%s)",
        c.rx_packets, g->packets, c.rx_out_of_buffer, c.dma_write_errors,
        idle ? "" : ", the device never went idle");
    return FALSE;
  }
  return TRUE;
}

/* ---- what the streaming thread does: probes and tracer hooks ---- */

typedef struct {
  GstPad *src_pad, *re_pad; /* daqirisrc's and daqirireorder's src pads (not referenced) */
  guint64 expected;         /* buffers at fakesink that end the run */
  guint64 bursts_expected;  /* bursts daqirisrc pushes */
  pid_t tid;
  gint64 t_first_in, t_first_out, t_last_out;
  guint64 cpu_first, cpu_last;
  guint64 bursts, out;
  /* hooks (streaming thread): wall ns in daqirisrc's pushes and, inside them, in
   * daqirireorder's; when the last push ended, and the thread's CPU time then */
  guint64 push_pre, down_pre, chain_ns, down_ns, pushes;
  gint64 t_last_push;
  gint done, pushed_all;
} Probe;

static Probe *traced; /* the run the hooks account for, or NULL */
/* this thread is in daqirisrc's push: daqirireorder's pushes from other threads (frames of
 * the last bursts, pushed once upstream is quiet) are not the streaming thread's */
static _Thread_local gboolean in_src_push;

static GstPadProbeReturn
on_burst (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  Probe *p = data;
  if (p->bursts++ == 0) {
    p->tid = (pid_t) syscall (SYS_gettid);
    p->t_first_in = dq_bench_mono_ns ();
    p->cpu_first = thread_cpu_ns (p->tid);
  }
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_out (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  Probe *p = data;
  gint64 now = dq_bench_mono_ns ();
  if (p->out++ == 0)
    p->t_first_out = now;
  p->t_last_out = now;
  if (p->out == p->expected)
    g_atomic_int_set (&p->done, 1);
  return GST_PAD_PROBE_OK;
}

typedef struct {
  GstTracer parent;
} DrainTracer;

typedef struct {
  GstTracerClass parent_class;
} DrainTracerClass;

GType drain_tracer_get_type (void);
G_DEFINE_TYPE (DrainTracer, drain_tracer, GST_TYPE_TRACER)

static void
drain_tracer_class_init (DrainTracerClass *klass)
{}

static void
drain_tracer_init (DrainTracer *self)
{}

static void
on_push_pre (GObject *tracer, GstClockTime ts, GstPad *pad, GstBuffer *buffer)
{
  Probe *p = g_atomic_pointer_get (&traced);
  if (p == NULL)
    return;
  if (pad == p->src_pad) {
    p->push_pre = ts;
    in_src_push = TRUE;
  } else if (pad == p->re_pad && in_src_push) {
    p->down_pre = ts;
  }
}

static void
on_push_post (GObject *tracer, GstClockTime ts, GstPad *pad, GstFlowReturn res)
{
  Probe *p = g_atomic_pointer_get (&traced);
  if (p == NULL || !in_src_push)
    return;
  if (pad == p->src_pad) {
    p->chain_ns += ts - p->push_pre;
    in_src_push = FALSE;
    if (++p->pushes == p->bursts_expected) {
      p->t_last_push = dq_bench_mono_ns ();
      p->cpu_last = thread_cpu_ns ((pid_t) syscall (SYS_gettid));
      g_atomic_int_set (&p->pushed_all, 1);
    }
  } else if (pad == p->re_pad) {
    p->down_ns += ts - p->down_pre;
  }
}

static void
hooks_install (void)
{
  GstTracer *t = g_object_new (drain_tracer_get_type (), NULL);
  gst_tracing_register_hook (t, "pad-push-pre", G_CALLBACK (on_push_pre));
  gst_tracing_register_hook (t, "pad-push-post", G_CALLBACK (on_push_post));
  gst_object_unref (t);
}

/* ---- one run through GStreamer ---- */

static guint64
stat_u64 (GstElement *e, const char *field)
{
  GstStructure *st = NULL;
  guint64 v = G_MAXUINT64;
  g_object_get (e, "stats", &st, NULL);
  if (st != NULL) {
    if (!gst_structure_get_uint64 (st, field, &v))
      v = G_MAXUINT64;
    gst_structure_free (st);
  }
  return v;
}

/* every batch complete and nothing lost: NULL, or what is wrong */
static char *
check_reorder (GstElement *re, guint64 packets)
{
  static const char *const zero[] = { "missing", "duplicates", "late", "short", "no-frame",
    "skipped", "flushed", "pushed" };
  guint64 batches = packets / PPB;
  guint64 got = stat_u64 (re, "packets");
  if (got != packets)
    return g_strdup_printf (
        "daqirireorder took %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " packets", got, packets);
  if (stat_u64 (re, "batches") != batches || stat_u64 (re, "complete") != batches)
    return g_strdup_printf ("daqirireorder made %" G_GUINT64_FORMAT " batches, %" G_GUINT64_FORMAT
                            " complete, of %" G_GUINT64_FORMAT,
        stat_u64 (re, "batches"), stat_u64 (re, "complete"), batches);
  for (guint i = 0; i < G_N_ELEMENTS (zero); i++)
    if (stat_u64 (re, zero[i]) != 0)
      return g_strdup_printf (
          "daqirireorder's stats: %s = %" G_GUINT64_FORMAT, zero[i], stat_u64 (re, zero[i]));
  return NULL;
}

static void
run_failed (const Options *o, Run *r, char *error)
{
  r->error = error;
  r->status = strstr (error, "is cuda, but") != NULL || !o->cuda_ok ? ST_SKIPPED : ST_ERROR;
}

/* The pipeline (with_reorder) or daqirisrc ! fakesink, pre-filled, drained. */
static void
run_gst (const Options *o, const Geometry *g, guint burst, guint inflight, gboolean with_reorder,
    const guint32 *perm, guint index, Run *r)
{
  char *name = g_strdup_printf ("drain%u", index);
  char *src =
      g_strdup_printf ("daqirisrc name=src device=emu:%s,mtu=%u,stride=%u,strides=%u "
                       "memory=cuda gpudirect=true burst-packets=%u ring-size=%" G_GUINT64_FORMAT
                       " max-packet-size=%u",
          name, PORT_MTU, g->stride, g->wqe_strides, burst, g->ring, g->frame);
  char *re = with_reorder
      ? g_strdup_printf ("daqirireorder name=re memory=cuda max-inflight=%u seq-offset=%u "
                         "seq-bits=32 packets-per-batch=%u payload-offset=%u payload-size=%u "
                         "window=%u submit-packets=%u ! ",
            inflight, SEQ_OFFSET * 8, PPB, PAYLOAD_OFFSET, payload_of (g->frame),
            window_for (burst), o->submit_packets)
      : g_strdup ("");
  char *launch = g_strdup_printf ("%s ! %sfakesink name=sink enable-last-sample=false", src, re);
  g_free (src);
  g_free (re);
  Bench b;
  Probe p = { .expected = with_reorder ? g->packets / PPB : g->packets / burst,
    .bursts_expected = g->packets / burst };
  GstElement *reorder = NULL, *sink = NULL;
  char *error = NULL;

  r->packets = g->packets;
  if (!bench_build (&b, name, launch, &error))
    goto fail;
  if (!bench_pause (&b, &error))
    goto fail;
  if (!prefill (b.port, g, perm, &r->fill_seconds, &error))
    goto fail;

  sink = gst_bin_get_by_name (GST_BIN (b.pipeline), "sink");
  GstPad *sink_pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (sink_pad, GST_PAD_PROBE_TYPE_BUFFER, on_out, &p, NULL);
  gst_object_unref (sink_pad);
  p.src_pad = gst_element_get_static_pad (b.src, "src");
  gst_pad_add_probe (p.src_pad, GST_PAD_PROBE_TYPE_BUFFER, on_burst, &p, NULL);
  if (with_reorder) {
    reorder = gst_bin_get_by_name (GST_BIN (b.pipeline), "re");
    p.re_pad = gst_element_get_static_pad (reorder, "src");
  }
  g_atomic_pointer_set (&traced, &p);

  if (!bench_play (&b, &error))
    goto fail;
  gint64 deadline = g_get_monotonic_time () + (gint64) o->timeout_s * G_USEC_PER_SEC;
  while (!g_atomic_int_get (&p.done)) {
    if (bench_bus_error (b.pipeline, &error))
      goto fail;
    if (g_get_monotonic_time () > deadline) {
      error = g_strdup_printf ("timed out after %u s: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                               " buffers at fakesink",
          o->timeout_s, p.out, p.expected);
      goto fail;
    }
    g_usleep (1000);
  }
  /* the last push may return after its frames reached fakesink */
  for (guint i = 0; i < 1000 && !g_atomic_int_get (&p.pushed_all); i++)
    g_usleep (1000);
  g_atomic_pointer_set (&traced, NULL);
  if (with_reorder)
    r->submissions = stat_u64 (reorder, "submissions");
  if (with_reorder && (error = check_reorder (reorder, g->packets)) != NULL)
    goto fail;
  guint64 drops = stat_u64 (b.src, "drops");
  if (drops != 0) {
    error = g_strdup_printf ("daqirisrc dropped %" G_GUINT64_FORMAT " packets", drops);
    goto fail;
  }
  /* from the first buffer out to the last; the first one's packets came before */
  guint64 first = with_reorder ? PPB : burst;
  r->seconds = (double) (p.t_last_out - p.t_first_out) / 1e9;
  if (r->seconds <= 0) {
    error = g_strdup ("the first and the last buffer came at once: no rate (more --packets)");
    goto fail;
  }
  r->mpps = (double) (g->packets - first) / r->seconds / 1e6;
  r->gbps = r->mpps * payload_of (g->frame) * 8 / 1e3;
  /* the streaming thread, from its first burst to the end of its last push */
  r->bursts = p.bursts;
  if (g_atomic_int_get (&p.pushed_all)) {
    r->wall_ns = (double) (p.t_last_push - p.t_first_in) / (double) p.bursts;
    r->cpu_ns = (double) (p.cpu_last - p.cpu_first) / (double) p.bursts;
    r->chain_ns = (double) p.chain_ns / (double) p.bursts;
    r->down_ns = (double) p.down_ns / (double) p.bursts;
    r->source_ns = r->wall_ns - r->chain_ns;
  } else { /* no tracer hooks: the wall time to the last buffer out, no split */
    r->wall_ns = (double) (p.t_last_out - p.t_first_in) / (double) p.bursts;
    r->cpu_ns = r->chain_ns = r->down_ns = r->source_ns = -1;
  }
  r->status = ST_OK;
  goto out;

fail:
  run_failed (o, r, error);
out:
  g_atomic_pointer_set (&traced, NULL);
  if (p.src_pad != NULL)
    gst_object_unref (p.src_pad);
  if (p.re_pad != NULL)
    gst_object_unref (p.re_pad);
  if (reorder != NULL)
    gst_object_unref (reorder);
  if (sink != NULL)
    gst_object_unref (sink);
  bench_clear (&b);
}

/* ---- the library alone ---- */

typedef struct {
  DqReorderGpu *gpu;
  DqReorderStats stats;
  char *error;
} Lib;

/* one completion: its frames go back to the free-frame queue */
static gboolean
lib_poll (Lib *l, int wait)
{
  DqReorderCompletion c;
  int r = dq_reorder_gpu_poll (l->gpu, wait, &c);
  if (r < 0) {
    l->error = g_strdup_printf ("dq_reorder_gpu_poll: %s", dq_reorder_gpu_error (l->gpu));
    return FALSE;
  }
  if (r == 0)
    return FALSE;
  for (guint i = 0; i < c.n_batches; i++)
    if (c.batches[i].frame != NULL)
      dq_reorder_gpu_add_frame (l->gpu, c.batches[i].frame, c.batches[i].frame_user);
  l->stats = c.stats;
  return TRUE;
}

static void
run_library (
    const Options *o, const Geometry *g, guint burst, guint inflight, const guint32 *perm, Run *r)
{
  guint window = window_for (burst);
  /* the stream wraps around m packets of device memory: a sequence field of log2 (m) bits
   * (the low bits of the word), twice the window's batches at least */
  guint64 m = pow2_ceil (MAX (MAX ((guint64) burst, 2 * (guint64) window * PPB), 4 * PPB));
  guint bits = log2_of (m);
  DqReorderConfig cfg;
  dq_reorder_config_init (&cfg);
  cfg.seq_bit_offset = SEQ_OFFSET * 8 + 32 - bits;
  cfg.seq_bit_width = bits;
  cfg.packets_per_batch = PPB;
  cfg.payload_offset = PAYLOAD_OFFSET;
  cfg.payload_size = payload_of (g->frame);
  cfg.window = window;
  DqReorderGpuOptions opts = {
    .max_packets = burst, .max_inflight = inflight, .max_frames = GPU_MAX_FRAMES, .device = -1
  };
  char msg[256] = "";
  Lib l = { 0 };
  guint8 *data = NULL, *frames = NULL, *chunk = NULL;
  DqReorderPacket *pkts = NULL;
  gsize burst_bytes = (gsize) burst * g->stride;

  if (!o->cuda_ok) {
    r->lib_status = ST_SKIPPED;
    r->lib_error = g_strdup (o->cuda_why);
    return;
  }
  l.gpu = dq_reorder_gpu_new (&cfg, &opts, msg, sizeof msg);
  if (l.gpu == NULL) {
    l.error = g_strdup_printf ("dq_reorder_gpu_new: %s", msg);
    goto out;
  }
  data = dq_cuda_malloc (m * g->stride);
  guint n_frames = window + 1 + inflight * (burst / PPB + 1);
  gsize frame_size = (gsize) PPB * payload_of (g->frame);
  frames = dq_cuda_malloc (n_frames * frame_size);
  if (data == NULL || frames == NULL) {
    l.error = g_strdup_printf ("cannot allocate %" G_GUINT64_FORMAT " bytes of device memory: %s",
        m * g->stride + n_frames * frame_size, dq_cuda_last_error ());
    goto out;
  }
  /* the bursts, burst by burst through one host buffer */
  guint8 *fr = make_frame (g->frame);
  chunk = g_malloc0 (burst_bytes);
  for (guint64 j = 0; j < m / burst; j++) {
    for (guint i = 0; i < burst; i++) {
      guint32 seq = GUINT32_TO_BE (seq_at (perm, j * burst + i));
      memcpy (fr + SEQ_OFFSET, &seq, 4);
      memcpy (chunk + (gsize) i * g->stride, fr, g->frame);
    }
    if (dq_cuda_memcpy (data + j * burst_bytes, chunk, burst_bytes) != 0) {
      l.error = g_strdup_printf ("copy into device memory: %s", dq_cuda_last_error ());
      g_free (fr);
      goto out;
    }
  }
  g_free (fr);
  for (guint f = 0; f < n_frames; f++)
    dq_reorder_gpu_add_frame (l.gpu, frames + f * frame_size, GUINT_TO_POINTER (f + 1));
  pkts = g_new0 (DqReorderPacket, burst);
  for (guint i = 0; i < burst; i++) {
    pkts[i].offset = i * g->stride;
    pkts[i].length = g->frame;
  }

  guint64 subs = g->packets / burst, submit_ns = 0;
  gint64 t0 = dq_bench_mono_ns ();
  for (guint64 s = 0; s < subs && l.error == NULL; s++) {
    while (dq_reorder_gpu_inflight (l.gpu) >= inflight && l.error == NULL)
      lib_poll (&l, 1);
    gint64 ts = dq_bench_mono_ns ();
    int rc = dq_reorder_gpu_submit (
        l.gpu, data + (s % (m / burst)) * burst_bytes, burst_bytes, pkts, burst, NULL);
    submit_ns += (guint64) (dq_bench_mono_ns () - ts);
    if (rc != 0) {
      l.error = g_strdup_printf ("dq_reorder_gpu_submit: %s", dq_reorder_gpu_error (l.gpu));
      break;
    }
    while (lib_poll (&l, 0))
      ;
  }
  while (l.error == NULL && dq_reorder_gpu_inflight (l.gpu) > 0)
    lib_poll (&l, 1);
  double seconds = (double) (dq_bench_mono_ns () - t0) / 1e9;
  if (l.error != NULL)
    goto out;
  guint64 batches = g->packets / PPB;
  if (l.stats.accepted != g->packets || l.stats.complete != batches || l.stats.batches != batches ||
      l.stats.missing_slots || l.stats.no_frame || l.stats.late || l.stats.duplicates ||
      l.stats.short_packets) {
    l.error = g_strdup_printf ("the library placed %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                               " packets in %" G_GUINT64_FORMAT
                               " complete batches of %" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT
                               " without a frame, %" G_GUINT64_FORMAT " late)",
        l.stats.accepted, g->packets, l.stats.complete, batches, l.stats.no_frame, l.stats.late);
    goto out;
  }
  r->lib_mpps = (double) g->packets / seconds / 1e6;
  r->lib_sub_ns = seconds * 1e9 / (double) subs;
  r->lib_submit_ns = (double) submit_ns / (double) subs;

out:
  if (l.gpu != NULL)
    dq_reorder_gpu_free (l.gpu);
  dq_cuda_free (data);
  dq_cuda_free (frames);
  g_free (chunk);
  g_free (pkts);
  r->lib_status = l.error == NULL ? ST_OK : ST_ERROR;
  r->lib_error = l.error;
}

/* ---- output ---- */

static void
json_num (GString *s, const char *key, double v, int decimals)
{
  g_string_append_printf (s, ",\"%s\":", key);
  if (v < 0)
    g_string_append (s, "null");
  else
    g_string_append_printf (s, "%.*f", decimals, v);
}

static void
json_status (GString *s, const char *key, Status st, const char *error)
{
  g_string_append_printf (s, ",\"%s\":\"%s\"", key, status_names[st]);
  if (error != NULL) {
    gchar *e = g_strescape (error, NULL);
    g_string_append_printf (s, ",\"%s_error\":\"%s\"", key, e);
    g_free (e);
  }
}

static void
print_json (const Options *o, const char *kind, const Geometry *g, guint burst, guint inflight,
    const Run *r)
{
  GString *s = g_string_new (NULL);
  g_string_printf (s,
      "{\"bench\":\"reorder-drain\",\"run\":\"%s\",\"frame\":%u,\"payload\":%u,\"burst\":%u", kind,
      g->frame, payload_of (g->frame), burst);
  if (inflight)
    g_string_append_printf (
        s, ",\"inflight\":%u,\"submit_packets\":%u", inflight, o->submit_packets);
  g_string_append_printf (s, ",\"packets\":%" G_GUINT64_FORMAT ",\"ring_bytes\":%" G_GUINT64_FORMAT,
      g->packets, g->ring);
  gboolean ok = r->status == ST_OK;
  json_num (s, "fill_seconds", ok ? r->fill_seconds : -1, 3);
  json_num (s, "seconds", ok ? r->seconds : -1, 5);
  json_num (s, "mpps", ok ? r->mpps : -1, 3);
  json_num (s, "payload_gbps", ok ? r->gbps : -1, 2);
  json_num (s, "thread_cpu_ns_per_burst", ok ? r->cpu_ns : -1, 0);
  json_num (s, "wall_ns_per_burst", ok ? r->wall_ns : -1, 0);
  if (inflight) {
    json_num (s, "source_ns_per_burst", ok ? r->source_ns : -1, 0);
    json_num (s, "reorder_ns_per_burst", ok && r->chain_ns >= 0 ? r->chain_ns - r->down_ns : -1, 0);
    json_num (s, "downstream_ns_per_burst", ok ? r->down_ns : -1, 0);
    json_num (s, "bursts_per_submission",
        ok && r->submissions ? (double) r->bursts / (double) r->submissions : -1, 2);
  }
  json_status (s, "status", r->status, r->error);
  if (inflight) {
    gboolean lok = r->lib_status == ST_OK;
    json_num (s, "library_mpps", lok ? r->lib_mpps : -1, 3);
    json_num (s, "library_ns_per_submission", lok ? r->lib_sub_ns : -1, 0);
    json_num (s, "library_submit_ns", lok ? r->lib_submit_ns : -1, 0);
    json_status (s, "library", r->lib_status, r->lib_error);
  }
  g_string_append (s, "}");
  g_print ("%s\n", s->str);
  g_string_free (s, TRUE);
}

/* ---- the grid ---- */

typedef struct {
  guint frame, burst, inflight; /* inflight 0: the source alone */
  Geometry geo;
  char *geo_error;
  Run *runs; /* repeat */
} Point;

static const char *
bound_of (double source, double chain, double down, double lib_sub, double lib_submit)
{
  double reorder = chain - down;
  if (chain < 0)
    return "-";
  if (source >= reorder && source >= down)
    return "source";
  if (down >= reorder)
    return "downstream";
  if (lib_sub > 0 && lib_submit >= 0.5 * lib_sub)
    return "submission";
  if (lib_sub > 0 && lib_sub >= 0.8 * reorder)
    return "kernel";
  return "reorder-host";
}

typedef struct {
  guint ok, skipped, error;
  double mpps, gbps, cpu, wall, source, chain, down, lib_mpps, lib_sub, lib_submit;
  const char *note;
} Med;

static void
point_medians (const Point *pt, guint repeat, Med *m)
{
  double *v[10];
  guint n = 0, nl = 0;
  for (guint k = 0; k < 10; k++)
    v[k] = g_new (double, repeat);
  memset (m, 0, sizeof *m);
  for (guint i = 0; i < repeat; i++) {
    const Run *r = &pt->runs[i];
    if (r->status == ST_OK) {
      v[0][n] = r->mpps;
      v[1][n] = r->gbps;
      v[2][n] = r->cpu_ns;
      v[3][n] = r->wall_ns;
      v[4][n] = r->source_ns;
      v[5][n] = r->chain_ns;
      v[6][n] = r->down_ns;
      n++;
      m->ok++;
    } else if (r->status == ST_SKIPPED) {
      m->skipped++;
    } else {
      m->error++;
    }
    if (r->error != NULL && m->note == NULL)
      m->note = r->error;
    if (pt->inflight && r->lib_status == ST_OK) {
      v[7][nl] = r->lib_mpps;
      v[8][nl] = r->lib_sub_ns;
      v[9][nl] = r->lib_submit_ns;
      nl++;
    } else if (pt->inflight && r->lib_status == ST_ERROR) {
      m->error++;
      if (m->note == NULL)
        m->note = r->lib_error;
    }
  }
  m->mpps = median (v[0], n);
  m->gbps = median (v[1], n);
  m->cpu = median (v[2], n);
  m->wall = median (v[3], n);
  m->source = median (v[4], n);
  m->chain = median (v[5], n);
  m->down = median (v[6], n);
  m->lib_mpps = median (v[7], nl);
  m->lib_sub = median (v[8], nl);
  m->lib_submit = median (v[9], nl);
  for (guint k = 0; k < 10; k++)
    g_free (v[k]);
}

static gboolean
parse_list (const char *text, const char *what, guint lo, guint hi, gboolean pow2, GArray *out)
{
  gchar **items = g_strsplit (text, ",", -1);
  gboolean ok = items[0] != NULL;
  for (guint i = 0; ok && items[i] != NULL; i++) {
    guint64 v = 0;
    ok = g_ascii_string_to_unsigned (g_strstrip (items[i]), 10, lo, hi, &v, NULL) &&
        (!pow2 || (v & (v - 1)) == 0);
    if (ok) {
      guint u = (guint) v;
      g_array_append_val (out, u);
    } else {
      g_printerr ("%s: --%s: \"%s\" is not %s%u..%u\n", WHO, what, items[i],
          pow2 ? "a power of two in " : "", lo, hi);
    }
  }
  g_strfreev (items);
  return ok;
}

/* the target of a frame size: Gb/s of payload (1024, 8192) or Mpps (64); 0: none */
static double
target_of (guint frame, gboolean *in_mpps)
{
  *in_mpps = frame == 64;
  return frame == 8192 ? TARGET_8K_GBPS
      : frame == 1024  ? TARGET_1K_GBPS
      : frame == 64    ? TARGET_64_MPPS
                       : 0;
}

int
main (int argc, char **argv)
{
  gboolean quick = FALSE, shuffle = FALSE;
  gint repeat = 1, timeout_s = 120, submit_packets = 4096;
  gint64 packets = DEFAULT_PACKETS, ring_max = (gint64) DEFAULT_RING_MAX;
  gchar *sizes = NULL, *inflight = NULL, *bursts = NULL;
  GOptionEntry entries[] = { { "quick", 0, 0, G_OPTION_ARG_NONE, &quick,
                                 "a smaller grid: max-inflight 1 and 8, bursts of 256 and 8192",
                                 NULL },
    { "sizes", 0, 0, G_OPTION_ARG_STRING, &sizes, "frame sizes in bytes (64,1024,8192)", "L,.." },
    { "inflight", 0, 0, G_OPTION_ARG_STRING, &inflight, "max-inflight values (1,4,8)", "K,.." },
    { "bursts", 0, 0, G_OPTION_ARG_STRING, &bursts, "burst-packets values (256,1024,4096,8192)",
        "B,.." },
    { "repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "runs of each point (1)", "R" },
    { "packets", 0, 0, G_OPTION_ARG_INT64, &packets, "packets per run (0: what the ring holds)",
        "N" },
    { "ring-max", 0, 0, G_OPTION_ARG_INT64, &ring_max, "largest ring in bytes (4 GiB)", "BYTES" },
    { "shuffle", 0, 0, G_OPTION_ARG_NONE, &shuffle, "packets shuffled within each batch", NULL },
    { "submit-packets", 0, 0, G_OPTION_ARG_INT, &submit_packets,
        "daqirireorder submit-packets (4096; 0: every burst on its own)", "N" },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &timeout_s, "time limit of one drain in seconds (120)",
        "S" },
    { NULL } };
  if (!bench_parse_args (WHO,
          "- daqirisrc memory=cuda ! daqirireorder memory=cuda ! fakesink, "
          "ring pre-filled, drained",
          entries, &argc, &argv))
    return 2;
  Options o = { .sizes = g_array_new (FALSE, FALSE, sizeof (guint)),
    .inflight = g_array_new (FALSE, FALSE, sizeof (guint)),
    .bursts = g_array_new (FALSE, FALSE, sizeof (guint)),
    .repeat = (guint) MAX (repeat, 0),
    .packets = (guint64) MAX (packets, 0),
    .ring_max = (guint64) MAX (ring_max, 0),
    .shuffle = shuffle,
    .timeout_s = (guint) MAX (timeout_s, 0),
    .submit_packets = (guint) submit_packets }; /* checked below */
  gboolean ok =
      parse_list (sizes ? sizes : "64,1024,8192", "sizes", 64, PORT_MTU + 18, FALSE, o.sizes) &&
      parse_list (inflight ? inflight
              : quick      ? "1,8"
                           : "1,4,8",
          "inflight", 1, 16, FALSE, o.inflight) &&
      parse_list (bursts ? bursts
              : quick    ? "256,8192"
                         : "256,1024,4096,8192",
          "bursts", 64, 32768, TRUE, o.bursts);
  g_free (sizes);
  g_free (inflight);
  g_free (bursts);
  if (!ok)
    return 2;
  if (repeat < 1 || timeout_s < 1 || packets < 0 || ring_max < (1 << 20) || submit_packets < 0 ||
      submit_packets > 65536)
    return bench_out_of_range (WHO,
        "--repeat >= 1, --timeout >= 1, --packets >= 0, --ring-max "
        ">= 1 MiB, --submit-packets 0..65536");
  if (!bench_emu_init (WHO))
    return 2;
  hooks_install ();

  o.cuda_ok = dq_cuda_available (o.cuda_why, sizeof o.cuda_why) != 0;
#ifdef DQ_BENCH_CUDA_EMU
  g_print ("device: the CUDA emulator (kernels on CPU threads): a functional run, not a GPU's "
           "numbers\n");
#else
  if (o.cuda_ok) {
    char dev[256];
    dq_cuda_device_info (dev, sizeof dev);
    g_print ("device: %s\n", dev);
  } else {
    g_print ("device: none (%s)\n", o.cuda_why);
  }
#endif

  /* the points: per size and burst the source alone, then each max-inflight */
  GArray *points = g_array_new (FALSE, TRUE, sizeof (Point));
  for (guint si = 0; si < o.sizes->len; si++)
    for (guint bi = 0; bi < o.bursts->len; bi++)
      for (guint ki = 0; ki <= o.inflight->len; ki++) {
        Point pt = { .frame = g_array_index (o.sizes, guint, si),
          .burst = g_array_index (o.bursts, guint, bi),
          .inflight = ki ? g_array_index (o.inflight, guint, ki - 1) : 0 };
        geometry_for (&o, pt.frame, pt.burst, &pt.geo, &pt.geo_error);
        pt.runs = g_new0 (Run, o.repeat);
        g_array_append_val (points, pt);
      }

  guint32 *perm = make_perm (o.shuffle);
  guint index = 0;
  char *no_gpu = NULL; /* the plugin's message once a run found no GPU: the rest skip */
  for (guint rep = 0; rep < o.repeat; rep++)
    for (guint i = 0; i < points->len; i++) {
      Point *pt = &g_array_index (points, Point, i);
      Run *r = &pt->runs[rep];
      /* the library runs where the pipeline did not skip */
      r->lib_status = ST_SKIPPED;
      if (pt->geo_error != NULL) {
        r->status = ST_ERROR;
        r->error = g_strdup (pt->geo_error);
      } else if (no_gpu != NULL) {
        r->status = ST_SKIPPED;
        r->error = g_strdup (no_gpu);
      } else {
        run_gst (&o, &pt->geo, pt->burst, pt->inflight, pt->inflight != 0, perm, index++, r);
        if (r->status == ST_SKIPPED)
          no_gpu = g_strdup (r->error);
        else if (pt->inflight)
          run_library (&o, &pt->geo, pt->burst, pt->inflight, perm, r);
      }
      print_json (&o, pt->inflight ? "pipeline" : "source", &pt->geo, pt->burst, pt->inflight, r);
    }

  /* the table: medians */
  g_print ("\n| frame | burst | K | Mpps | payload Gb/s | thread CPU ns/burst (busy) | source / "
           "reorder / downstream ns per burst | library alone Mpps (ns per submission, submit "
           "ns) | source alone Mpps | bound | note |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|\n");
  guint n_ok = 0, n_skipped = 0, n_error = 0;
  for (guint i = 0; i < points->len; i++) {
    Point *pt = &g_array_index (points, Point, i);
    Med m, src;
    point_medians (pt, o.repeat, &m);
    n_ok += m.ok;
    n_skipped += m.skipped;
    n_error += m.error;
    if (!pt->inflight)
      continue;
    /* this size and burst's source-alone point comes first */
    const Point *sp = pt;
    while (sp->inflight)
      sp--;
    point_medians (sp, o.repeat, &src);
    GString *row = g_string_new (NULL);
    g_string_append_printf (row, "| %u | %u | %u |", pt->frame, pt->burst, pt->inflight);
    if (m.mpps >= 0)
      g_string_append_printf (row, " %.2f | %.1f |", m.mpps, m.gbps);
    else
      g_string_append (row, " - | - |");
    if (m.cpu >= 0)
      g_string_append_printf (
          row, " %.0f (%.0f %%) |", m.cpu, m.wall > 0 ? 100 * m.cpu / m.wall : 0);
    else
      g_string_append (row, " - |");
    if (m.chain >= 0)
      g_string_append_printf (row, " %.0f / %.0f / %.0f |", m.source, m.chain - m.down, m.down);
    else
      g_string_append (row, " - |");
    if (m.lib_mpps >= 0)
      g_string_append_printf (row, " %.2f (%.0f, %.0f) |", m.lib_mpps, m.lib_sub, m.lib_submit);
    else
      g_string_append (row, " - |");
    if (src.mpps >= 0)
      g_string_append_printf (row, " %.2f |", src.mpps);
    else
      g_string_append (row, " - |");
    g_string_append_printf (row, " %s | %s |",
        m.mpps >= 0 ? bound_of (m.source, m.chain, m.down, m.lib_sub, m.lib_submit) : "-",
        m.ok == 0 && m.skipped > 0 ? "skipped"
            : m.note               ? m.note
                                   : "");
    g_print ("%s\n", row->str);
    g_string_free (row, TRUE);
  }

  /* the source alone per size: ns per buffer and per packet of its thread, fitted over B */
  GString *line = g_string_new (WHO ":");
  for (guint si = 0; si < o.sizes->len; si++) {
    guint frame = g_array_index (o.sizes, guint, si);
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    guint n = 0;
    for (guint i = 0; i < points->len; i++) {
      Point *pt = &g_array_index (points, Point, i);
      Med m;
      if (pt->frame != frame || pt->inflight)
        continue;
      point_medians (pt, o.repeat, &m);
      if (m.cpu < 0)
        continue;
      sx += pt->burst;
      sy += m.cpu;
      sxx += (double) pt->burst * pt->burst;
      sxy += pt->burst * m.cpu;
      n++;
    }
    if (n >= 2 && n * sxx - sx * sx > 0) {
      double per_packet = (n * sxy - sx * sy) / (n * sxx - sx * sx);
      double per_buffer = (sy - per_packet * sx) / n;
      g_print ("source alone, %u B: %.0f ns per buffer + %.2f ns per packet (streaming thread "
               "CPU, fitted over %u burst sizes)\n",
          frame, per_buffer, per_packet, n);
    }

    /* the target: the best point of this size */
    gboolean in_mpps;
    double target = target_of (frame, &in_mpps);
    const Point *best = NULL;
    Med bm = { 0 };
    for (guint i = 0; i < points->len; i++) {
      Point *pt = &g_array_index (points, Point, i);
      Med m;
      if (pt->frame != frame || !pt->inflight)
        continue;
      point_medians (pt, o.repeat, &m);
      if (m.mpps >= 0 && (best == NULL || m.mpps > bm.mpps)) {
        best = pt;
        bm = m;
      }
    }
    g_string_append_printf (line, "%s %u B", si ? ";" : "", frame);
    if (target > 0)
      g_string_append_printf (line, " (target >= %.0f %s)", target, in_mpps ? "Mpps" : "Gb/s");
    if (best == NULL) {
      g_string_append_printf (line, ": %s", no_gpu ? "skipped" : "no run ok");
      continue;
    }
    double got = in_mpps ? bm.mpps : bm.gbps;
    g_string_append_printf (line, ": %.2f Mpps, %.1f Gb/s at burst %u, K %u", bm.mpps, bm.gbps,
        best->burst, best->inflight);
    if (target > 0)
      g_string_append_printf (line, " %s", got >= target ? "PASS" : "FAIL");
    g_string_append_printf (
        line, " (bound: %s)", bound_of (bm.source, bm.chain, bm.down, bm.lib_sub, bm.lib_submit));
  }
  g_string_append_printf (line, "; runs: %u ok, %u skipped, %u failed", n_ok, n_skipped, n_error);
  if (no_gpu != NULL)
    g_string_append_printf (line, " (skipped: %s)", no_gpu);
#ifdef DQ_BENCH_CUDA_EMU
  g_string_append (line, "; CUDA emulator: not a measurement");
#endif
  g_print ("\n%s\n", line->str);
  g_string_free (line, TRUE);

  for (guint i = 0; i < points->len; i++) {
    Point *pt = &g_array_index (points, Point, i);
    for (guint j = 0; j < o.repeat; j++) {
      g_free (pt->runs[j].error);
      g_free (pt->runs[j].lib_error);
    }
    g_free (pt->runs);
    g_free (pt->geo_error);
  }
  g_array_free (points, TRUE);
  g_array_free (o.sizes, TRUE);
  g_array_free (o.inflight, TRUE);
  g_array_free (o.bursts, TRUE);
  g_free (perm);
  g_free (no_gpu);
  return n_error > 0 ? 1 : 0;
}
