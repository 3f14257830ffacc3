/* bench-engines: host cost per received and per sent packet of each engine, on one thread,
 * side by side in one run, through the engine API that daqirisrc and daqirisink call
 * (dq_rxq_poll + dq_rxq_release; dq_txq_send of frames copied into the queue), bursts of 256:
 *
 *   mlx5           an emulated ConnectX (emu:). RX: the device's generator fills the ring,
 *                  then is idle while the host drains it (CQE decode, bursts, stride
 *                  release, WQE re-post). TX: frames copied into slots, eMPW WQEs where
 *                  they fit, a doorbell a burst, completions reclaimed; the cable leads
 *                  nowhere (the device thread checks each WQE's DMA, reads no frame bytes)
 *   mlx5 cqe-comp=basic, =enhanced   RX only: the same with compressed completions in
 *                  either layout; a round fills what its WQEs posted ahead of the reader
 *                  hold (a quarter of the ring: its CQ covers no more)
 *   dpdk:net_null  RX: the null device hands out mbufs at once, doing no descriptor work;
 *                  the engine copies them into bursts. TX: mbufs filled, freed at once
 *   dpdk:net_ring  RX: a ring pre-filled by the port's own TX, untimed, then drained.
 *                  TX: frames enqueued, the ring drained untimed
 *
 * Time is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID): the emulated device's thread
 * is not counted, DPDK's virtual devices run in the timed thread. Frames of 64, 256, 1024
 * and 8192 bytes, where the device takes them (DPDK's virtual devices: one mbuf, 2048
 * bytes).
 * Rounds of every variant are interleaved so that the machine's noise spreads over all;
 * the median of the rounds is reported.
 *
 * DPDK runs with its default EAL arguments (no huge pages) unless DAQIRI_DPDK_EAL_ARGS
 * says otherwise; the `huge` field of the output says which (scripts/bench-suite.sh runs
 * this program with and without 2 MiB huge pages).
 *
 * Output: one JSON object per measurement ({"bench": "engines", "engine", "dir": "rx"|"tx",
 * "frame", "median", "min", "ring_full_waits" (TX: times a timed send waited for the
 * device), "cq_bytes" (mlx5 RX: the queue's CQ), ...}, ns/packet), then lines starting
 * "bench-engines:" with the targets at 64 bytes: receive mlx5 <= dpdk:net_null; send mlx5
 * <= 1.2 x dpdk:net_ring; with compressed completions, receive below the uncompressed and a
 * CQ of at most a quarter.
 *
 * usage: bench-engines [--rounds N] [--frames 64,256,...]
 */
#include "daqiri-engine.h"
#include "dq-bench-util.h"
#include "dq-packet.h"
#include "dq-test-frame.h"
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FRAMES 8
#define RX_RING (8u << 20)
#define RING_ROUND 512 /* packets a net_ring round: within the ring device's 1024 */
#define NULL_ROUND (64u * 1024)
#define BURST 256
#define TX_ROUND (16u * 1024)
#define DPDK_MBUF_FRAME 2048

static guint rounds = 11;
static guint frames[MAX_FRAMES] = { 64, 256, 1024, 8192 };
static guint n_frames = 4;

typedef enum { DIR_RX, DIR_TX } Dir;
typedef enum { KIND_EMU, KIND_EMU_BASIC, KIND_EMU_ENHANCED, KIND_NULL, KIND_RING } Kind;

/* One measured variant: an engine, a direction and a frame size; its port and queues */
typedef struct {
  const char *engine;
  Kind kind;
  Dir dir;
  guint frame;
  DqPort *port;
  DqRxQueue *rxq;
  DqTxQueue *txq;
  EmuPort *ep;
  guint64 per_round; /* packets a round */
  guint64 waits;     /* TX: times the timed sends waited for ring space */
  guint64 cq_bytes;  /* RX, mlx5: the queue's completion queue */
  double *ns;        /* ns/packet of each round kept */
  char *skipped;     /* why it does not run, or NULL */
} Variant;

static guint8 frame_bytes[9018];

static gboolean
is_emu (Kind k)
{
  return k == KIND_EMU || k == KIND_EMU_BASIC || k == KIND_EMU_ENHANCED;
}

/* the test frame every TX sends: Ethernet/IPv4/UDP, `len` bytes */
static void
frame_build (guint len)
{
  const DqPacketHeaders h = dq_test_headers (5000, 6000);
  dq_packet_write_headers (frame_bytes, len, &h);
}

/* The smallest ring the dpdk engine takes (two blocks of a burst), so that the warm-up
 * round has touched all of it: a larger one would time the page faults of its first use */
static gsize
dpdk_rx_ring (guint frame)
{
  return 2 * (gsize) BURST * ((frame + 63) / 64 * 64);
}

static gboolean
variant_open (Variant *v, guint index, GError **error)
{
  gchar *dev;
  if (!is_emu (v->kind) && v->frame > DPDK_MBUF_FRAME) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "DPDK's virtual devices take frames of up to one mbuf (%u bytes)", DPDK_MBUF_FRAME);
    return FALSE;
  }
  if (is_emu (v->kind))
    dev = g_strdup_printf ("emu:be%u,mtu=9000,stride=64,strides=512%s%s", index,
        v->dir == DIR_TX ? ",peer=none" : "",
        v->kind == KIND_EMU_BASIC          ? ",cqe-comp=basic"
            : v->kind == KIND_EMU_ENHANCED ? ",cqe-comp=enhanced"
                                           : "");
  else if (v->kind == KIND_NULL)
    dev = g_strdup_printf ("dpdk:net_null%u,size=%u", index, v->frame);
  else
    dev = g_strdup_printf ("dpdk:net_ring%u", index);
  v->port = dq_port_open (dev, error);
  if (v->port == NULL) {
    g_free (dev);
    return FALSE;
  }
  g_free (dev);
  if (is_emu (v->kind)) {
    gchar *name = g_strdup_printf ("be%u", index);
    v->ep = emu_port_lookup (name);
    g_free (name);
  }
  if (v->dir == DIR_RX || v->kind == KIND_RING) {
    DqRxConfig rc = { .burst_packets = BURST,
      .burst_timeout_ns = 1000000000,
      .ring_bytes = is_emu (v->kind) ? RX_RING : dpdk_rx_ring (v->frame),
      .max_packet_size = v->frame,
      .n_queues = 1,
      .group_id = 100 + index };
    v->rxq = dq_rxq_create (v->port, &rc, error);
    if (v->rxq == NULL)
      return FALSE;
  }
  if (v->dir == DIR_TX || v->kind == KIND_RING) {
    DqTxConfig tc = { .max_packet_size = v->frame };
    v->txq = dq_txq_create (v->port, &tc, error);
    if (v->txq == NULL)
      return FALSE;
    if (dq_txq_max_frame (v->txq) < v->frame) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG, "the device sends frames up to %u bytes",
          dq_txq_max_frame (v->txq));
      return FALSE;
    }
  }
  if (v->dir == DIR_TX && v->kind != KIND_RING)
    v->per_round = TX_ROUND;
  else if (is_emu (v->kind)) {
    /* a round is what the posted WQEs hold: the whole ring, or with compressed
     * completions the quarter its CQ covers (one CQE a 64-byte stride) */
    DqRxStats st;
    dq_rxq_stats (v->rxq, &st);
    v->cq_bytes = st.cq_bytes;
    v->per_round = (MIN (st.cq_bytes, RX_RING) / 64 / ((v->frame + 63) / 64)) / BURST * BURST;
  } else if (v->kind == KIND_RING)
    v->per_round = RING_ROUND;
  else
    v->per_round = NULL_ROUND;
  return TRUE;
}

static void
variant_close (Variant *v)
{
  g_clear_pointer (&v->txq, dq_txq_destroy);
  g_clear_pointer (&v->rxq, dq_rxq_destroy);
  g_clear_pointer (&v->ep, emu_port_unref);
  g_clear_pointer (&v->port, dq_port_unref);
}

/* Takes `n` packets from the receive queue; FALSE if it runs dry first. */
static gboolean
drain (DqRxQueue *rxq, guint64 n)
{
  guint64 got = 0;
  guint idle = 0;
  while (got < n) {
    DqBurst b;
    GError *error = NULL;
    int r = dq_rxq_poll (rxq, &b, 0, &error);
    if (r < 0) {
      fprintf (stderr, "bench-engines: %s\n", error->message);
      g_error_free (error);
      return FALSE;
    }
    if (r == 0) {
      if (++idle > 10000000)
        return FALSE;
      continue;
    }
    got += b.n_packets;
    dq_rxq_release (rxq, &b);
  }
  return TRUE;
}

/* Sends `n` copies of the frame in bursts; FALSE if the queue refuses them. */
static gboolean
send_frames (DqTxQueue *txq, guint frame, guint64 n)
{
  const guint8 *ptrs[BURST];
  guint32 lens[BURST];
  const guint b = BURST;
  for (guint i = 0; i < b; i++) {
    ptrs[i] = frame_bytes;
    lens[i] = frame;
  }
  guint stuck = 0;
  for (guint64 sent = 0; sent < n;) {
    guint k = (guint) MIN ((guint64) b, n - sent);
    GError *error = NULL;
    int r = dq_txq_send (txq, ptrs, lens, k, &error);
    if (r < 0) {
      fprintf (stderr, "bench-engines: %s\n", error->message);
      g_error_free (error);
      return FALSE;
    }
    if (r == 0 && ++stuck > 1000000) {
      fprintf (stderr, "bench-engines: the send queue stays full\n");
      return FALSE;
    }
    sent += (guint) r;
  }
  return TRUE;
}

/* The emulated device fills the RX ring, untimed: a round's packets, then idle */
static gboolean
emu_prefill (Variant *v)
{
  EmuGenConfig g = { .frame_len = v->frame, .count = v->per_round, .lossless = TRUE };
  GError *error = NULL;
  if (!emu_port_generate (v->ep, &g, &error)) {
    fprintf (stderr, "bench-engines: %s\n", error->message);
    g_error_free (error);
    return FALSE;
  }
  gint64 until = dq_bench_mono_ns () + G_GINT64_CONSTANT (60000000000);
  while (emu_port_generated (v->ep) < v->per_round && dq_bench_mono_ns () < until)
    g_usleep (100);
  if (emu_port_generated (v->ep) < v->per_round) {
    fprintf (stderr,
        "bench-engines: the emulated device generated %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
        " frames\n",
        emu_port_generated (v->ep), v->per_round);
    return FALSE;
  }
  return emu_port_wait_idle (v->ep, G_GINT64_CONSTANT (10000000000));
}

/* One round of a variant: receive, the untimed fill and the timed drain; send, the timed
 * sends and the untimed drain; ns/packet, or < 0 */
static double
variant_round (Variant *v)
{
  if (v->dir == DIR_TX) {
    DqTxStats before, after;
    frame_build (v->frame);
    dq_txq_stats (v->txq, &before);
    gint64 t0 = dq_bench_thread_cpu_ns ();
    gboolean ok = send_frames (v->txq, v->frame, v->per_round);
    gint64 t1 = dq_bench_thread_cpu_ns ();
    dq_txq_stats (v->txq, &after);
    v->waits += after.ring_full_waits - before.ring_full_waits;
    if (ok && v->kind == KIND_RING)
      ok = drain (v->rxq, v->per_round);
    return ok ? (double) (t1 - t0) / (double) v->per_round : -1.0;
  }
  gboolean ok = TRUE;
  if (is_emu (v->kind)) {
    ok = emu_prefill (v);
  } else if (v->kind == KIND_RING) {
    frame_build (v->frame);
    ok = send_frames (v->txq, v->frame, v->per_round);
  }
  gint64 t0 = dq_bench_thread_cpu_ns ();
  ok = ok && drain (v->rxq, v->per_round);
  gint64 t1 = dq_bench_thread_cpu_ns ();
  /* the released strides' WQEs are re-posted at the next poll: untimed */
  DqBurst none;
  if (ok && is_emu (v->kind) && dq_rxq_poll (v->rxq, &none, 0, NULL) != 0)
    ok = FALSE;
  return ok ? (double) (t1 - t0) / (double) v->per_round : -1.0;
}

static void
print_result (const Variant *v, guint kept, const char *huge)
{
  if (v->skipped != NULL) {
    printf ("{\"bench\": \"engines\", \"engine\": \"%s\", \"dir\": \"%s\", \"frame\": %u, "
            "\"huge\": %s, \"skipped\": \"%s\"}\n",
        v->engine, v->dir == DIR_RX ? "rx" : "tx", v->frame, huge, v->skipped);
    return;
  }
  dq_bench_sort_doubles (v->ns, kept);
  printf ("{\"bench\": \"engines\", \"engine\": \"%s\", \"dir\": \"%s\", \"frame\": %u, "
          "\"huge\": %s, \"unit\": \"ns/packet\", \"burst\": %u, \"rounds\": %u, "
          "\"packets_per_round\": %" G_GUINT64_FORMAT ", \"ring_full_waits\": %" G_GUINT64_FORMAT
          ", \"cq_bytes\": %" G_GUINT64_FORMAT ", \"min\": %.2f, \"median\": %.2f}\n",
      v->engine, v->dir == DIR_RX ? "rx" : "tx", v->frame, huge, BURST, kept, v->per_round,
      v->waits, v->cq_bytes, v->ns[0], v->ns[kept / 2]);
}

static double
median_of (Variant *vs, guint n, const char *engine, Dir dir, guint frame, guint kept)
{
  for (guint i = 0; i < n; i++)
    if (vs[i].skipped == NULL && vs[i].dir == dir && vs[i].frame == frame &&
        strcmp (vs[i].engine, engine) == 0)
      return vs[i].ns[kept / 2];
  return -1.0;
}

static void
parse_args (int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    if (strcmp (argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = (guint) atoi (argv[++i]);
    } else if (strcmp (argv[i], "--frames") == 0 && i + 1 < argc) {
      gchar **parts = g_strsplit (argv[++i], ",", -1);
      n_frames = 0;
      for (guint k = 0; parts[k] != NULL && n_frames < MAX_FRAMES; k++)
        frames[n_frames++] = (guint) atoi (parts[k]);
      g_strfreev (parts);
    } else {
      fprintf (stderr, "usage: %s [--rounds N] [--frames 64,256,...]\n", argv[0]);
      exit (2);
    }
  }
  if (rounds < 1 || n_frames == 0) {
    fprintf (stderr, "bench-engines: --rounds >= 1, --frames 60..9018\n");
    exit (2);
  }
  for (guint k = 0; k < n_frames; k++)
    if (frames[k] < 60 || frames[k] > 9018) {
      fprintf (
          stderr, "bench-engines: --frames %u is out of range (allowed 60..9018)\n", frames[k]);
      exit (2);
    }
}

int
main (int argc, char **argv)
{
  parse_args (argc, argv);
  const char *eal = g_getenv ("DAQIRI_DPDK_EAL_ARGS");
  const char *huge = eal != NULL && strstr (eal, "--no-huge") == NULL ? "true" : "false";
  static const struct {
    const char *engine;
    Kind kind;
    gboolean rx_only;
  } engines[] = {
    { "mlx5", KIND_EMU, FALSE },
    { "mlx5 cqe-comp=basic", KIND_EMU_BASIC, TRUE },
    { "mlx5 cqe-comp=enhanced", KIND_EMU_ENHANCED, TRUE },
    { "dpdk:net_null", KIND_NULL, FALSE },
    { "dpdk:net_ring", KIND_RING, FALSE },
  };
  guint n = 0;
  Variant *vs = g_new0 (Variant, G_N_ELEMENTS (engines) * 2 * n_frames);
  for (guint e = 0; e < G_N_ELEMENTS (engines) * 2; e++)
    for (guint f = 0; f < n_frames; f++) {
      if (e >= G_N_ELEMENTS (engines) && engines[e % G_N_ELEMENTS (engines)].rx_only)
        continue;
      Variant *v = &vs[n];
      v->engine = engines[e % G_N_ELEMENTS (engines)].engine;
      v->kind = engines[e % G_N_ELEMENTS (engines)].kind;
      v->dir = e < G_N_ELEMENTS (engines) ? DIR_RX : DIR_TX;
      v->frame = frames[f];
      v->ns = g_new0 (double, rounds);
      GError *error = NULL;
      if (!variant_open (v, n, &error)) {
        v->skipped = g_strdup (error != NULL ? error->message : "does not open");
        g_clear_error (&error);
        variant_close (v);
      }
      n++;
    }

  /* round 0 of each variant warms caches and pages: not kept */
  guint kept = 0;
  for (guint r = 0; r <= rounds; r++) {
    fprintf (stderr, "bench-engines: round %u of %u\n", r, rounds);
    for (guint i = 0; i < n; i++) {
      if (vs[i].skipped != NULL)
        continue;
      double ns = variant_round (&vs[i]);
      if (ns < 0) {
        vs[i].skipped = g_strdup ("a round failed (see above)");
        continue;
      }
      if (r > 0)
        vs[i].ns[r - 1] = ns;
    }
    if (r > 0)
      kept++;
  }
  for (guint i = 0; i < n; i++)
    print_result (&vs[i], kept, huge);

  double mlx_rx = median_of (vs, n, "mlx5", DIR_RX, 64, kept);
  double null_rx = median_of (vs, n, "dpdk:net_null", DIR_RX, 64, kept);
  double mlx_tx = median_of (vs, n, "mlx5", DIR_TX, 64, kept);
  double ring_tx = median_of (vs, n, "dpdk:net_ring", DIR_TX, 64, kept);
  printf ("bench-engines: 64 B, huge pages %s: receive mlx5 %.1f ns/packet vs dpdk:net_null "
          "%.1f (target <=: %s); send mlx5 %.1f vs dpdk:net_ring %.1f (target <= 1.2x: %s)\n",
      huge, mlx_rx, null_rx,
      mlx_rx > 0 && null_rx > 0 ? (mlx_rx <= null_rx ? "PASS" : "FAIL") : "n/a", mlx_tx, ring_tx,
      mlx_tx > 0 && ring_tx > 0 ? (mlx_tx <= 1.2 * ring_tx ? "PASS" : "FAIL") : "n/a");

  for (guint i = 0; i < G_N_ELEMENTS (engines); i++) {
    if (engines[i].kind != KIND_EMU_BASIC && engines[i].kind != KIND_EMU_ENHANCED)
      continue;
    double comp_rx = median_of (vs, n, engines[i].engine, DIR_RX, 64, kept);
    guint64 cq_off = 0, cq_on = 0;
    for (guint k = 0; k < n; k++) {
      if (vs[k].dir != DIR_RX || vs[k].frame != 64)
        continue;
      if (vs[k].kind == KIND_EMU)
        cq_off = vs[k].cq_bytes;
      else if (vs[k].kind == engines[i].kind)
        cq_on = vs[k].cq_bytes;
    }
    printf ("bench-engines: 64 B receive, %s: %.1f ns/packet against %.1f uncompressed (target "
            "<: %s); CQ %" G_GUINT64_FORMAT " bytes a queue against %" G_GUINT64_FORMAT
            " (target <= 1/4: %s)\n",
        engines[i].engine, comp_rx, mlx_rx,
        comp_rx > 0 && mlx_rx > 0 ? (comp_rx < mlx_rx ? "PASS" : "FAIL") : "n/a", cq_on, cq_off,
        cq_on > 0 && cq_off > 0 ? (4 * cq_on <= cq_off ? "PASS" : "FAIL") : "n/a");
  }

  for (guint i = 0; i < n; i++) {
    variant_close (&vs[i]);
    g_free (vs[i].ns);
    g_free (vs[i].skipped);
  }
  g_free (vs);
  return 0;
}
