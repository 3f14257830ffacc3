/* Micro-benchmark of the mlx5 host datapath against the emulated ConnectX, timing host
 * work only:
 *
 *   rx-ring    mlx5_rxq_poll + release + refill (CQE decode, burst fill, stride release,
 *              WQE re-post, doorbells) per 64-byte packet; the emulator's generator fills
 *              the whole ring first and is idle while the host drains it
 *   rx-engine  the same through the engine API (dq_rxq_poll + dq_rxq_release: burst
 *              records, burst timeout clock, stats)
 *   rx-mprq-128, rx-split-128
 *              rx-ring with 128-byte packets on the striding RQ, and on a header-data
 *              split RQ (42 header bytes, one two-segment WQE re-posted per packet), side
 *              by side: target split <= 2 x striding
 *   tx-copy    mlx5_txq_send of 64-byte frames in bursts: copy into slots, WQE build, one
 *              doorbell per burst; the device is stalled while timed, so no completion is
 *              read (reclaim happens untimed between rounds)
 *   tx-inplace mlx5_txq_acquire + commit (frames written in place: no copy)
 *   tx-copy-empw, tx-inplace-empw
 *              the same with enhanced multi-packet WQEs (32 frames a WQE): target <= 6 ns
 *              in place. The four TX variants run their rounds interleaved, each on a port
 *              and queue of its own, and print the spread of their rounds too: on a shared
 *              machine one round of 3 MiB of slots and WQEs varies by 2x from the next
 *              (memory-bound writes), so only side-by-side medians compare
 *
 * Prints one JSON object per measurement (min and median over the rounds, ns per
 * packet) and a one-line summary against the targets (25 ns at 64 bytes; split <= 2 x
 * striding at 128 bytes).
 *   usage: bench-mlx5 [--rounds N] [--burst N] [--tx-ring BYTES]
 */
#include "daqiri-engine.h"
#include "dq-bench-util.h"
#include "emu.h"
#include "rx.h"
#include "tx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TARGET_NS 25.0
#define TARGET_EMPW_NS 6.0
#define FRAME 64
#define S_NS G_GINT64_CONSTANT (1000000000)

static guint rounds = 15;
static guint burst = 64;
static gsize tx_ring = 256 << 10;

typedef struct {
  double min, median;
  guint64 packets;
} Result;

static Result
summarize_frame (const char *name, guint frame, double *per_round, guint n, guint64 packets)
{
  Result r = { .packets = packets };
  dq_bench_sort_doubles (per_round, n);
  r.min = per_round[0];
  r.median = per_round[n / 2];
  printf ("{\"bench\": \"mlx5-%s\", \"unit\": \"ns/packet\", \"frame\": %u, \"burst\": %u, "
          "\"rounds\": %u, \"packets\": %" G_GUINT64_FORMAT ", \"min\": %.2f, \"median\": %.2f, "
          "\"target\": %.0f}\n",
      name, frame, burst, n, packets, r.min, r.median, TARGET_NS);
  fflush (stdout);
  return r;
}

static Result
summarize (const char *name, double *per_round, guint n, guint64 packets)
{
  return summarize_frame (name, FRAME, per_round, n, packets);
}

/* Keeps the ns per packet of round r (0 only warms caches and pages: not kept) and
 * counts its packets. */
static void
round_keep (double *per_round, guint64 *total, guint r, gint64 ns, guint64 packets)
{
  if (r == 0)
    return;
  per_round[r - 1] = (double) ns / (double) packets;
  *total += packets;
}

/* opens the emulated port `spec` through its control path, as the engine does */
static gpointer
emu_open (const char *spec, Mlx5Caps *caps)
{
  GError *error = NULL;
  DqPortInfo info = { 0 };
  gpointer dev = emu_port_ops.open (spec, &info, caps, &error);
  if (dev == NULL)
    g_error ("%s", error->message);
  return dev;
}

/* fills the RX ring with `count` generated frames of `frame` bytes and waits until all are
 * in */
static void
prefill_frames (EmuPort *port, guint64 count, guint frame)
{
  EmuGenConfig g = { .frame_len = frame, .count = count, .lossless = TRUE };
  GError *error = NULL;
  if (!emu_port_generate (port, &g, &error))
    g_error ("%s", error->message);
  gint64 deadline = dq_bench_mono_ns () + 60 * S_NS;
  while (emu_port_generated (port) < count) {
    if (dq_bench_mono_ns () > deadline)
      g_error ("the generator did not fill the ring");
    g_usleep (200);
  }
  if (!emu_port_wait_idle (port, 10 * S_NS))
    g_error ("the device did not go idle");
}

static void
prefill (EmuPort *port, guint64 count)
{
  prefill_frames (port, count, FRAME);
}

/* rx-ring of `name`: `frame`-byte packets; split_header 0: 64-byte strides, 512 per WQE,
 * 256 WQEs (131072 64-byte packets fill the ring, half as many of 128); else a header-data
 * split ring of 2^15 packets */
static Result
bench_rx_ring (const char *name, guint frame, guint split_header)
{
  GError *error = NULL;
  Mlx5Caps caps;
  gchar *spec = g_strdup_printf ("bench-%s", name);
  gpointer dev = emu_open (spec, &caps);
  g_free (spec);
  Mlx5RxGeometry geo = { .log_stride_size = 6, .log_strides = 9, .log_wqes = 8, .log_cq_size = 17 };
  guint64 fill = ((guint64) 1 << geo.log_cq_size) / ((frame + 63) / 64);
  if (split_header != 0) {
    if (!mlx5_rx_geometry_split (
            &caps, name, (gsize) 1536 << 15, frame, 1518, split_header, &geo, &error))
      g_error ("%s", error->message);
    fill = (guint64) 1 << geo.log_wqes;
  }
  Mlx5Rxq *q = mlx5_rxq_new (&emu_port_ops, dev, &caps, &geo, &error);
  if (q == NULL)
    g_error ("%s", error->message);
  Mlx5Rq *rq = mlx5_rxq_rq (q);
  if (!emu_port_ops.flows_set (dev, 1, &rq, 1, NULL, 0, &error))
    g_error ("%s", error->message);
  double *per = g_new (double, rounds);
  DqPacket *pkts = g_new (DqPacket, burst);
  guint64 total = 0, sum = 0;

  for (guint r = 0; r < rounds + 1; r++) {
    prefill_frames (dev, fill, frame);
    guint64 got = 0;
    gint64 t0 = dq_bench_mono_ns ();
    while (got < fill) {
      Mlx5RxBurst b = { 0 };
      mlx5_rxq_poll (q, &b, pkts, burst);
      /* touch what a consumer reads: the metadata (length) of every packet */
      for (guint i = 0; i < b.n_packets; i++)
        sum += pkts[i].length;
      mlx5_rxq_release (q, b.wqe, b.strides);
      mlx5_rxq_refill (q);
      got += b.n_packets;
    }
    round_keep (per, &total, r, dq_bench_mono_ns () - t0, got);
  }
  if (sum != total * frame + fill * frame)
    g_error ("bytes: %" G_GUINT64_FORMAT, sum);
  Result res = summarize_frame (name, frame, per, rounds, total);
  g_free (pkts);
  g_free (per);
  mlx5_rxq_free (q);
  emu_port_ops.close (dev);
  return res;
}

static Result
bench_rx_engine (void)
{
  GError *error = NULL;
  DqPort *port = dq_port_open ("emu:bench-eng,stride=64,strides=512", &error);
  if (port == NULL)
    g_error ("%s", error->message);
  DqRxConfig cfg = { .burst_packets = burst,
    .burst_timeout_ns = 1000000,
    .ring_bytes = 8 << 20,
    .max_packet_size = FRAME,
    .n_queues = 1,
    .group_id = 77 };
  DqRxQueue *rxq = dq_rxq_create (port, &cfg, &error);
  if (rxq == NULL)
    g_error ("%s", error->message);
  EmuPort *ep = emu_port_lookup ("bench-eng");
  guint64 fill = (8 << 20) / FRAME;
  double *per = g_new (double, rounds);
  guint64 total = 0;

  for (guint r = 0; r < rounds + 1; r++) {
    prefill (ep, fill);
    guint64 got = 0;
    gint64 t0 = dq_bench_mono_ns ();
    while (got < fill) {
      DqBurst b;
      if (dq_rxq_poll (rxq, &b, 0, &error) != 1)
        g_error ("the ring ran dry after %" G_GUINT64_FORMAT " packets", got);
      got += b.n_packets;
      dq_rxq_release (rxq, &b);
    }
    gint64 t1 = dq_bench_mono_ns ();
    /* the poller re-posts released WQEs when it polls next: let it, untimed */
    DqBurst none;
    if (dq_rxq_poll (rxq, &none, 0, &error) != 0)
      g_error ("a packet too many");
    round_keep (per, &total, r, t1 - t0, got);
  }
  Result res = summarize ("rx-engine", per, rounds, total);
  g_free (per);
  emu_port_unref (ep);
  dq_rxq_destroy (rxq);
  dq_port_unref (port);
  return res;
}

/* One TX variant: its own emulated port (the cable leads nowhere) and send queue */
typedef struct {
  const char *name;
  gboolean in_place, empw;
  gpointer dev;
  Mlx5Txq *q;
  double *per;
} TxVariant;

static void
tx_variant_open (TxVariant *v, guint index)
{
  GError *error = NULL;
  Mlx5Caps caps;
  char spec[32];
  g_snprintf (spec, sizeof spec, "bench-tx%u,peer=none", index);
  v->dev = emu_open (spec, &caps);
  Mlx5TxConfig cfg = { .csum = TRUE, .empw = v->empw };
  if (!mlx5_tx_geometry_choose (&caps, "bench", tx_ring, FRAME, 0, &cfg, &error))
    g_error ("%s", error->message);
  v->q = mlx5_txq_new (&emu_port_ops, v->dev, &cfg, &error);
  if (v->q == NULL)
    g_error ("%s", error->message);
  v->per = g_new (double, rounds);
}

/* One timed round: the device stalled, the ring filled with 64-byte frames in bursts
 * (copied, or written in place), then the device lets them go, untimed. */
static guint64
tx_round (
    TxVariant *v, const guint8 *const *frames, const guint32 *lens, guint8 **slots, gint64 *ns)
{
  EmuPort *ep = v->dev;
  guint n_slots = mlx5_txq_n_slots (v->q);
  guint64 sent = 0;
  emu_port_fault_stall (ep, TRUE);
  gint64 t0 = dq_bench_mono_ns ();
  while (sent + burst <= n_slots) {
    if (v->in_place) {
      guint k = mlx5_txq_acquire (v->q, burst, slots);
      for (guint i = 0; i < k; i++)
        ((guint32 *) slots[i])[0] = (guint32) (sent + i);
      sent += mlx5_txq_commit (v->q, k, lens);
    } else {
      sent += mlx5_txq_send (v->q, frames, lens, burst);
    }
  }
  *ns = dq_bench_mono_ns () - t0;
  emu_port_fault_stall (ep, FALSE);
  if (!emu_port_wait_idle (ep, 10 * S_NS))
    g_error ("the device did not go idle");
  mlx5_txq_reclaim (v->q);
  if (!mlx5_txq_idle (v->q))
    g_error ("TX completions missing");
  return sent;
}

/* The four TX variants (copy or in place, one WQE a frame or eMPW), their rounds
 * interleaved so that each sees the same machine; per variant the median and the spread
 * of the rounds (10th and 90th percentile). */
static void
bench_tx (Result out[4])
{
  TxVariant v[4] = {
    { .name = "tx-copy" },
    { .name = "tx-inplace", .in_place = TRUE },
    { .name = "tx-copy-empw", .empw = TRUE },
    { .name = "tx-inplace-empw", .in_place = TRUE, .empw = TRUE },
  };
  guint8 frame[FRAME];
  const guint8 **frames = g_new (const guint8 *, burst);
  guint32 *lens = g_new (guint32, burst);
  guint8 **slots = g_new (guint8 *, burst);
  guint64 total[4] = { 0 };

  memset (frame, 0x5a, sizeof frame);
  frame[12] = 0x08;
  for (guint i = 0; i < burst; i++) {
    frames[i] = frame;
    lens[i] = FRAME;
  }
  for (guint k = 0; k < 4; k++)
    tx_variant_open (&v[k], k);
  for (guint r = 0; r < rounds + 1; r++)
    for (guint k = 0; k < 4; k++) {
      gint64 ns;
      guint64 sent = tx_round (&v[k], frames, lens, slots, &ns);
      round_keep (v[k].per, &total[k], r, ns, sent);
    }
  for (guint k = 0; k < 4; k++) {
    /* sorted by summarize: the spread from the same array */
    out[k] = summarize (v[k].name, v[k].per, rounds, total[k]);
    double p10 = v[k].per[rounds / 10], p90 = v[k].per[rounds - 1 - rounds / 10];
    printf ("{\"bench\": \"mlx5-%s-spread\", \"unit\": \"ns/packet\", \"p10\": %.2f, "
            "\"p90\": %.2f, \"max\": %.2f}\n",
        v[k].name, p10, p90, v[k].per[rounds - 1]);
    mlx5_txq_free (v[k].q);
    emu_port_ops.close (v[k].dev);
    g_free (v[k].per);
  }
  g_free (slots);
  g_free (lens);
  g_free (frames);
}

int
main (int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    /* MAX and CLAMP evaluate their argument more than once: read it first */
    int value = i + 1 < argc ? atoi (argv[i + 1]) : 0;
    if (strcmp (argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = (guint) MAX (1, value);
      i++;
    } else if (strcmp (argv[i], "--tx-ring") == 0 && i + 1 < argc) {
      tx_ring = (gsize) CLAMP (value, 4096, 64 << 20);
      i++;
    } else if (strcmp (argv[i], "--burst") == 0 && i + 1 < argc) {
      burst = (guint) CLAMP (value, 1, 512);
      i++;
    } else {
      fprintf (stderr, "usage: %s [--rounds N] [--burst N] [--tx-ring BYTES]\n", argv[0]);
      return 2;
    }
  }
  Result rx = bench_rx_ring ("rx-ring", FRAME, 0);
  Result rxe = bench_rx_engine ();
  Result tx[4];
  bench_tx (tx);
  /* header-data split against striding, 128-byte packets, alternated */
  double mprq = 0, split = 0;
  for (guint i = 0; i < 2; i++) {
    mprq += bench_rx_ring ("rx-mprq-128", 128, 0).median / 2;
    split += bench_rx_ring ("rx-split-128", 128, 42).median / 2;
  }
  gboolean met = rx.median <= TARGET_NS && tx[0].median <= TARGET_NS;
  gboolean empw_met = tx[3].median <= TARGET_EMPW_NS;
  gboolean split_met = split <= 2 * mprq;
  printf ("mlx5 host datapath, 64-byte packets, median ns/packet: RX %.1f (engine API %.1f), "
          "TX %.1f (in place %.1f); target <= %.0f: %s; TX eMPW %.1f (in place %.1f), target "
          "in place <= %.0f: %s; 128-byte packets: header-data split %.1f vs striding %.1f, "
          "ratio %.2f, target <= 2: %s\n",
      rx.median, rxe.median, tx[0].median, tx[1].median, TARGET_NS, met ? "met" : "NOT met",
      tx[2].median, tx[3].median, TARGET_EMPW_NS, empw_met ? "met" : "NOT met", split, mprq,
      mprq > 0 ? split / mprq : 0.0, split_met ? "met" : "NOT met");
  return 0;
}
