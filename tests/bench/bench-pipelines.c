/* bench-pipelines: the same GStreamer pipelines on the mlx5 engine (an emulated ConnectX,
 * zero copy) and on the dpdk engine (mbufs copied into bursts), side by side in one run;
 * the CPU time per packet of the one thread that does the work, and the host rate it
 * gives (1e9 / ns per packet: packets/s of one core doing nothing else):
 *
 *   receive  daqirisrc name=src device=D burst-packets=256 ! fakesink
 *            emu: the generator pre-fills the ring with the pipeline PAUSED, then the
 *            streaming thread drains it with nothing arriving (host work only);
 *            dpdk:net_null: the null device hands out mbufs at once (no descriptor work)
 *   send     daqiritestsrc name=src burst-packets=256 ! daqirisink device=D
 *            (the test source's thread builds the frames and sends them)
 *            emu: the cable leads nowhere (the device thread checks each WQE's DMA on the
 *            other CPU); dpdk:net_ring: a daqirisrc on the same ring drains it on the other
 *            CPU
 *
 * Frames of 64 and 1500 bytes; runs alternate mlx5 and dpdk, --repeat times, the working
 * thread pinned to CPU 1 (unless --no-pin); medians compared. Targets: mlx5 >= 1.5 x the
 * dpdk pipeline's host rate at 64 bytes and >= 3 x at 1500 bytes. Then the receive
 * pipelines at 64 bytes with burst-packets 16, 64, 256, 1024 and 4096 (the emulated port's
 * WQEs then hold 4096 strides, as a burst never spans two): cost per packet against burst.
 *
 * Output: one JSON object per run, then one line starting "bench-pipelines:". The exit
 * status is 0 unless a run fails (the targets are reported, not enforced).
 *
 * usage: bench-pipelines [--repeat R] [--seconds S] [--no-pin]
 */
#include <gst/gst.h>

#include "bench-emu-util.h"
#include "dq-bench-util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHO "bench-pipelines"
#define BURST 256
#define STRIDES_PER_WQE 512 /* the emulated port's default geometry: 64-byte strides */

typedef enum { DIR_RX, DIR_TX } Dir;

typedef struct {
  Dir dir;
  gboolean mlx5;
  guint frame;
  guint burst;
  gboolean ok;
  char *error;
  guint64 packets;
  double cpu_ns; /* of the working thread, per packet */
} Run;

static guint64
stats_packets (GstElement *el)
{
  GstStructure *st = NULL;
  guint64 packets = 0;
  g_object_get (el, "stats", &st, NULL);
  if (st != NULL) {
    gst_structure_get_uint64 (st, "packets", &packets);
    gst_structure_free (st);
  }
  return packets;
}

/* The receive ring of the mlx5 runs: larger for large frames, so that a drain lasts */
static guint64
emu_ring (guint frame)
{
  return frame > 256 ? G_GUINT64_CONSTANT (256) << 20 : G_GUINT64_CONSTANT (64) << 20;
}

/* Strides a WQE of the emulated port: the default, or enough for a whole burst */
static guint
emu_strides (guint burst)
{
  return MAX (STRIDES_PER_WQE, burst);
}

/* The packets of `frame` bytes the emulated ring holds: whole packets a WQE (a packet
 * never spans two), in bursts */
static guint64
emu_fill (guint frame, guint burst)
{
  guint strides = emu_strides (burst);
  guint64 wqes = emu_ring (frame) / ((guint64) strides * 64);
  return wqes * (strides / ((frame + 63) / 64)) / burst * burst;
}

static char *
launch_of (const Run *r, guint index, char **port_name)
{
  *port_name = g_strdup_printf ("pl%u", index);
  if (r->dir == DIR_RX && r->mlx5)
    return g_strdup_printf (
        "daqirisrc name=src device=emu:%s,gen=%u,gen-count=%" G_GUINT64_FORMAT
        ",gen-lossless=on,strides=%u burst-packets=%u ring-size=%" G_GUINT64_FORMAT
        " ! fakesink enable-last-sample=false",
        *port_name, r->frame, emu_fill (r->frame, r->burst), emu_strides (r->burst), r->burst,
        emu_ring (r->frame));
  if (r->dir == DIR_RX)
    return g_strdup_printf ("daqirisrc name=src device=dpdk:net_null%u,size=%u burst-packets=%u "
                            "max-packet-size=%u ! fakesink enable-last-sample=false",
        index, r->frame, r->burst, r->frame);
  const char *tail = "";
  char *dev = r->mlx5 ? g_strdup_printf ("emu:%s,peer=none", *port_name)
                      : g_strdup_printf ("dpdk:net_ring%u", index);
  char *drain = r->mlx5
      ? g_strdup (tail)
      : g_strdup_printf (" daqirisrc device=%s ! fakesink enable-last-sample=false", dev);
  char *l = g_strdup_printf ("daqiritestsrc name=src burst-packets=%u packet-size-min=%u "
                             "packet-size-max=%u ! daqirisink name=sink device=%s%s",
      r->burst, r->frame, r->frame, dev, drain);
  g_free (dev);
  g_free (drain);
  return l;
}

/* Waits until the emulated device wrote `n` frames into the ring, then is idle */
static gboolean
emu_prefilled (Bench *b, guint64 n, char **error)
{
  gint64 until = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  while (emu_port_generated (b->port) < n && g_get_monotonic_time () < until)
    g_usleep (1000);
  if (emu_port_generated (b->port) < n ||
      !emu_port_wait_idle (b->port, G_GINT64_CONSTANT (10000000000))) {
    *error = g_strdup_printf ("the emulated device wrote %" G_GUINT64_FORMAT
                              " of %" G_GUINT64_FORMAT " frames",
        emu_port_generated (b->port), n);
    return FALSE;
  }
  return TRUE;
}

static void
run_one (Run *r, guint index, double seconds, gboolean pin)
{
  char *port_name = NULL;
  char *launch = launch_of (r, index, &port_name);
  Bench b;
  if (!bench_build (&b, port_name, launch, &r->error))
    goto out;
  GstElement *counted = r->dir == DIR_RX ? gst_object_ref (b.src)
                                         : gst_bin_get_by_name (GST_BIN (b.pipeline), "sink");
  gboolean prefill = r->dir == DIR_RX && r->mlx5;
  if (prefill) {
    if (!bench_pause (&b, &r->error) ||
        !emu_prefilled (&b, emu_fill (r->frame, r->burst), &r->error))
      goto out_counted;
  }
  if (!bench_play (&b, &r->error))
    goto out_counted;

  pid_t tid = 0;
  gint64 start = g_get_monotonic_time ();
  while ((tid = bench_src_thread (&b)) == 0 && g_get_monotonic_time () - start < 2 * G_USEC_PER_SEC)
    g_usleep (20);
  if (tid == 0) {
    r->error = g_strdup ("the source's streaming thread was not found");
    goto out_counted;
  }
  if (pin)
    bench_pin (WHO, tid, 1);
  guint64 p0 = 0, p1 = 0, cpu0 = 0, cpu1 = 0, waited;
  if (prefill) {
    /* from the first packet seen to the last of the ring */
    guint64 want = emu_fill (r->frame, r->burst);
    while ((p0 = stats_packets (counted)) == 0 &&
        g_get_monotonic_time () - start < 10 * G_USEC_PER_SEC)
      g_usleep (20);
    bench_thread_sched_ns (tid, &cpu0, &waited);
    while ((p1 = stats_packets (counted)) < want &&
        g_get_monotonic_time () - start < 20 * G_USEC_PER_SEC)
      g_usleep (100);
    bench_thread_sched_ns (tid, &cpu1, &waited);
  } else {
    g_usleep (300000);
    p0 = stats_packets (counted);
    bench_thread_sched_ns (tid, &cpu0, &waited);
    g_usleep ((gulong) (seconds * G_USEC_PER_SEC));
    p1 = stats_packets (counted);
    bench_thread_sched_ns (tid, &cpu1, &waited);
  }
  char *bus_error = NULL;
  if (bench_bus_error (b.pipeline, &bus_error)) {
    r->error = bus_error;
  } else if (p1 <= p0 || cpu1 <= cpu0) {
    r->error = g_strdup_printf (
        "no packets counted (%" G_GUINT64_FORMAT " .. %" G_GUINT64_FORMAT ")", p0, p1);
  } else {
    r->packets = p1 - p0;
    r->cpu_ns = (double) (cpu1 - cpu0) / (double) r->packets;
    r->ok = TRUE;
  }
out_counted:
  gst_object_unref (counted);
out:
  bench_clear (&b);
}

static void
print_json (const Run *r)
{
  GString *s = g_string_new (NULL);
  g_string_printf (s,
      "{\"bench\":\"pipelines\",\"dir\":\"%s\",\"engine\":\"%s\",\"frame\":%u,\"burst\":%u",
      r->dir == DIR_RX ? "rx" : "tx",
      r->mlx5 ? "mlx5" : (r->dir == DIR_RX ? "dpdk:net_null" : "dpdk:net_ring"), r->frame,
      r->burst);
  if (!r->ok) {
    bench_print_json_error (s, r->error);
    return;
  }
  g_string_append_printf (s,
      ",\"packets\":%" G_GUINT64_FORMAT
      ",\"cpu_ns_per_packet\":%.2f,\"host_mpps\":%.2f,\"error\":null}",
      r->packets, r->cpu_ns, 1e3 / r->cpu_ns);
  printf ("%s\n", s->str);
  fflush (stdout);
  g_string_free (s, TRUE);
}

/* median ns per packet of the runs of one kind; < 0 when none succeeded */
static double
median_ns (const Run *runs, guint n, Dir dir, gboolean mlx5, guint frame, guint burst)
{
  double v[64];
  guint k = 0;
  for (guint i = 0; i < n && k < G_N_ELEMENTS (v); i++)
    if (runs[i].ok && runs[i].dir == dir && runs[i].mlx5 == mlx5 && runs[i].frame == frame &&
        runs[i].burst == burst)
      v[k++] = runs[i].cpu_ns;
  if (k == 0)
    return -1.0;
  dq_bench_sort_doubles (v, k);
  return v[k / 2];
}

int
main (int argc, char **argv)
{
  gint repeat = 3;
  gdouble seconds = 1.0;
  gboolean no_pin = FALSE;
  GOptionEntry entries[] = {
    { "repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "runs of each kind (3)", "R" },
    { "seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds, "measuring window of the timed runs (1)",
        "S" },
    { "no-pin", 0, 0, G_OPTION_ARG_NONE, &no_pin, "do not pin the working thread", NULL }, { NULL }
  };
  if (!bench_parse_args (
          WHO, "- the same pipelines on mlx5 (emulated) and dpdk", entries, &argc, &argv))
    return 2;
  if (repeat < 1 || repeat > 8 || seconds < 0.1 || seconds > 60)
    return bench_out_of_range (WHO, "repeat: 1..8; seconds: 0.1..60");
  if (!bench_emu_init (WHO))
    return 2;

  static const guint frames[] = { 64, 1500 };
  static const guint bursts[] = { 16, 64, 256, 1024, 4096 };
  const guint ab = 2 * G_N_ELEMENTS (frames); /* the A/B kinds, then the burst sweep */
  guint n = 0;
  Run *runs = g_new0 (Run, (ab + G_N_ELEMENTS (bursts)) * 2 * (guint) repeat);
  gboolean failed = FALSE;
  for (guint rep = 0; rep < (guint) repeat; rep++)
    for (guint k = 0; k < ab + G_N_ELEMENTS (bursts); k++) {
      gboolean sweep = k >= ab;
      /* the sweep's 256 is the A/B's receive run at 64 bytes */
      if (sweep && bursts[k - ab] == BURST)
        continue;
      for (guint m = 0; m < 2; m++) {
        Run *r = &runs[n];
        r->dir = sweep ? DIR_RX : (Dir) (k / G_N_ELEMENTS (frames));
        r->frame = sweep ? 64 : frames[k % G_N_ELEMENTS (frames)];
        r->burst = sweep ? bursts[k - ab] : BURST;
        r->mlx5 = m == 0;
        run_one (r, n, seconds, bench_pinning (no_pin));
        print_json (r);
        failed |= !r->ok;
        n++;
      }
    }

  printf ("bench-pipelines: host ns per packet, medians of %d runs:", repeat);
  for (guint d = 0; d < 2; d++)
    for (guint f = 0; f < G_N_ELEMENTS (frames); f++) {
      double mx = median_ns (runs, n, (Dir) d, TRUE, frames[f], BURST);
      double dp = median_ns (runs, n, (Dir) d, FALSE, frames[f], BURST);
      double want = frames[f] == 64 ? 1.5 : 3.0;
      printf (" %s %uB mlx5 %.1f vs %s %.1f (%.2fx, target >= %.1fx: %s);",
          d == DIR_RX ? "receive" : "send", frames[f], mx, d == DIR_RX ? "net_null" : "net_ring",
          dp, mx > 0 ? dp / mx : 0.0, want,
          mx > 0 && dp > 0 ? (dp / mx >= want ? "PASS" : "FAIL") : "n/a");
    }
  printf (" receive 64B by burst-packets:");
  for (guint k = 0; k < G_N_ELEMENTS (bursts); k++)
    printf (" %u: mlx5 %.1f, net_null %.1f;", bursts[k],
        median_ns (runs, n, DIR_RX, TRUE, 64, bursts[k]),
        median_ns (runs, n, DIR_RX, FALSE, 64, bursts[k]));
  printf ("\n");
  for (guint i = 0; i < n; i++)
    g_free (runs[i].error);
  g_free (runs);
  return failed ? 1 : 0;
}
