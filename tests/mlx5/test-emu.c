/* The emulated ConnectX (mlx5/emu) driven by the host rings (mlx5/rx.c, tx.c) through
 * its control path, without the engine: configuration, TX -> cable -> RX with strides,
 * fillers and ring wrap-around, the IOMMU, fault injection, checksum offload checked by
 * an independent recomputation, the line-rate timestamp formula, steering with marks
 * and RSS, the cable between two ports, the generator.
 */
#include "emu.h"
#include "mini-port.h"
#include "test-util.h"

#include <string.h>

#define S_NS G_GINT64_CONSTANT (1000000000)

__extension__ typedef unsigned __int128 U128;

/* ---------------------------------------------------------------------------------- */
/* a port, its RX queues and a TX queue, created through the control path */

typedef struct {
  gpointer dev;
  EmuPort *port;
  DqPortInfo info;
  Mlx5Caps caps;
  Mlx5Rxq *rx[4];
  guint n_rx;
  Mlx5Txq *tx;
} Rig;

static void
rig_open (Rig *r, const char *spec)
{
  GError *error = NULL;
  memset (r, 0, sizeof *r);
  r->dev = emu_port_ops.open (spec, &r->info, &r->caps, &error);
  g_assert_no_error (error);
  r->port = r->dev;
}

static Mlx5Rxq *
rig_rx (Rig *r, guint log_stride, guint log_strides, guint log_wqes)
{
  Mlx5Rxq *q = mini_rxq_new (&emu_port_ops, r->dev, &r->caps, log_stride, log_strides, log_wqes);
  r->rx[r->n_rx++] = q;
  return q;
}

/* steers everything (or `rules`) to the rig's RQs as group `group` */
static void
rig_steer (Rig *r, guint32 group, const DqFlowRule *rules, guint n_rules)
{
  Mlx5Rq *rqs[4];
  GError *error = NULL;
  for (guint i = 0; i < r->n_rx; i++)
    rqs[i] = mlx5_rxq_rq (r->rx[i]);
  g_assert_true (emu_port_ops.flows_set (r->dev, group, rqs, r->n_rx, rules, n_rules, &error));
  g_assert_no_error (error);
}

static Mlx5Txq *
rig_tx (Rig *r, gsize ring, guint max_packet, gboolean csum)
{
  r->tx = mini_txq_new (&emu_port_ops, r->dev, &r->caps, ring, max_packet, 0, csum);
  return r->tx;
}

/* Opens a rig whose TX ring of `ring` bytes (frames of up to 1518 bytes, checksum offload
 * if csum) sends into one RX queue taking all traffic: 2 KiB strides, 8 per WQE,
 * 2^log_wqes WQEs. Returns the TX ring. */
static Mlx5Txq *
rig_open_loop (Rig *r, const char *spec, guint log_wqes, gsize ring, gboolean csum)
{
  rig_open (r, spec);
  rig_rx (r, 11, 3, log_wqes);
  rig_steer (r, 1, NULL, 0);
  return rig_tx (r, ring, 1518, csum);
}

static void
rig_close (Rig *r)
{
  if (r->tx != NULL)
    mlx5_txq_free (r->tx);
  for (guint i = 0; i < r->n_rx; i++)
    mlx5_rxq_free (r->rx[i]);
  emu_port_ops.close (r->dev);
}

/* A received packet, copied out. */
typedef struct {
  guint8 *data;
  guint len;
  guint32 flow_id;
  guint32 flags;
  guint64 ts;
  guint queue;
} RxPkt;

static void
rxpkt_clear (gpointer p)
{
  g_free (((RxPkt *) p)->data);
}

static GArray *
rxpkts_new (void)
{
  GArray *a = g_array_new (FALSE, TRUE, sizeof (RxPkt));
  g_array_set_clear_func (a, rxpkt_clear);
  return a;
}

/* Polls queue `qi` of the rig until `want` packets (in `out`) or `timeout_ms`; each
 * burst is checked (one WQE region, packets inside it) and released at once. */
static void
rig_poll (Rig *r, guint qi, GArray *out, guint want, guint timeout_ms)
{
  Mlx5Rxq *q = r->rx[qi];
  gint64 deadline = g_get_monotonic_time () + timeout_ms * 1000;
  gsize region = (gsize) mlx5_rxq_stride_size (q) * mlx5_rxq_strides_per_wqe (q);
  DqPacket pkts[64];

  while (out->len < want && g_get_monotonic_time () < deadline) {
    Mlx5RxBurst b = { 0 };
    mlx5_rxq_refill (q);
    mlx5_rxq_poll (q, &b, pkts, 64);
    if (b.n_packets == 0) {
      g_usleep (20);
      continue;
    }
    guint8 *data = mlx5_rxq_burst_data (q, &b);
    gsize size = mlx5_rxq_burst_size (q, &b);
    /* the burst lies in its WQE's region */
    g_assert_cmpuint ((gsize) b.first_stride * mlx5_rxq_stride_size (q) + size, <=, region);
    for (guint i = 0; i < b.n_packets; i++) {
      g_assert_cmpuint (pkts[i].offset + pkts[i].length, <=, size);
      RxPkt p = { .data = g_memdup2 (data + pkts[i].offset, pkts[i].length),
        .len = pkts[i].length,
        .flow_id = pkts[i].flow_id,
        .flags = pkts[i].flags,
        .ts = pkts[i].timestamp,
        .queue = qi };
      g_array_append_val (out, p);
    }
    mlx5_rxq_release (q, b.wqe, b.strides);
  }
  mlx5_rxq_refill (q);
}

static void
send_all (Mlx5Txq *tx, guint8 **frames, guint32 *lens, guint n)
{
  guint done = 0;
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (done < n) {
    done += mlx5_txq_send (tx, (const guint8 *const *) frames + done, lens + done, n - done);
    g_assert_cmpint (g_get_monotonic_time (), <, deadline);
    if (done < n)
      g_usleep (10);
  }
}

static void
wait_idle (Rig *r)
{
  g_assert_true (emu_port_wait_idle (r->port, 5 * S_NS));
}

/* ---------------------------------------------------------------------------------- */

static void
test_config (void)
{
  GError *error = NULL;
  struct {
    const char *spec, *message;
  } bad[] = {
    { "", "the port name must be 1..32" },
    { "a b", "the port name must be" },
    { "x,rate=fast", "emu:x: rate=fast is not allowed (allowed: 1m .. 1600g" },
    { "x,rate=2000g", "rate=2000g is not allowed" },
    { "x,freq=1500hz", "freq=1500hz is not allowed (allowed: 1mhz .. 10ghz in whole kHz" },
    { "x,mtu=10000", "mtu=10000 is not allowed (allowed: 68 .. 9978)" },
    { "x,mac=02:00:00:00:00", "mac=02:00:00:00:00 is not allowed" },
    { "x,peer=a/b", "peer=a/b is not allowed" },
    { "x,pause=maybe", "pause=maybe is not allowed (allowed: on or off)" },
    { "x,clock=gps", "clock=gps is not allowed (allowed: free or rt)" },
    { "x,clock=rt,freq=156250khz", "clock=rt counts ns: it needs freq=1ghz" },
    { "x,overhead=65", "overhead=65 is not allowed (allowed: 0 .. 64 bytes)" },
    { "x,colour=blue",
        "unknown key 'colour' (allowed: rate, freq, clock, mtu, mac, peer, "
        "pause, overhead, inline)" },
    { "x,rate", "'rate' is not KEY=VALUE" },
    { "x,gen=64,gen=65",
        "emu:x: the key 'gen' is given twice in emu:x,gen=64,gen=65 "
        "(allowed: each key once)" },
    { "x,rate=25g,mtu=9000,rate=25g", "the key 'rate' is given twice" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_assert_null (emu_port_open (bad[i].spec, &error));
    g_assert_nonnull (error);
    if (strstr (error->message, bad[i].message) == NULL)
      g_error ("'%s': got '%s', expected '%s'", bad[i].spec, error->message, bad[i].message);
    g_clear_error (&error);
  }

  EmuPort *a = emu_port_open ("cfg0,rate=25g,freq=156250khz,mtu=9000,"
                              "mac=02:aa:bb:cc:dd:ee,pause=off,overhead=20",
      &error);
  g_assert_no_error (error);
  g_assert_cmpuint (emu_port_rate_bps (a), ==, 25000000000ull);
  g_assert_cmpuint (emu_port_freq_hz (a), ==, 156250000ull);
  /* shared by name: the same object; keys must agree */
  EmuPort *b = emu_port_open ("cfg0,rate=25000000000", &error);
  g_assert_no_error (error);
  g_assert_true (a == b);
  g_assert_null (emu_port_open ("cfg0,rate=100g", &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_BUSY);
  g_assert_nonnull (strstr (error->message, "emu:cfg0 is already open with another rate"));
  g_clear_error (&error);
  EmuPort *c = emu_port_lookup ("cfg0");
  g_assert_true (c == a);
  emu_port_unref (c);
  emu_port_close (b);
  c = emu_port_lookup ("cfg0");
  g_assert_true (c == a);
  emu_port_unref (c);
  emu_port_close (a);
  g_assert_null (emu_port_lookup ("cfg0"));

  /* the control path reports what it was configured with */
  Rig r;
  rig_open (&r, "cfg1,mtu=9000,mac=02:01:02:03:04:05,freq=500mhz");
  const guint8 mac[6] = { 2, 1, 2, 3, 4, 5 };
  g_assert_cmpmem (r.info.mac, 6, mac, 6);
  g_assert_cmpuint (r.info.mtu, ==, 9000);
  g_assert_cmpint (r.info.clock_id, ==, -1);
  g_assert_cmpstr (r.info.clock_name, ==, "emu:cfg1 device clock (500000 kHz, free-running)");
  g_assert_cmpuint (r.caps.device_frequency_khz, ==, 500000);
  g_assert_false (r.caps.real_time_ts);
  g_assert_cmpuint (r.caps.min_log_stride_size, ==, 6);
  g_assert_cmpuint (r.caps.max_log_strides, ==, 16);
  rig_close (&r);
}

/* The clock info the device hands out makes rdma-core's own mlx5dv_ts_to_ns() give
 * ns = ticks * 10^6 / f_kHz (to within a ns) on both sides of the snapshot; at 1 GHz
 * exactly ns = ticks. */
static void
check_clock_info (const char *spec, guint64 khz, gboolean exact)
{
  Rig r;
  Mlx5ClockInfo ci;
  rig_open (&r, spec);
  emu_port_ops.clock_info (r.dev, &ci);
  struct mlx5dv_clock_info dv = { .nsec = ci.nsec,
    .last_cycles = ci.last_cycles,
    .frac = ci.frac,
    .mult = ci.mult,
    .shift = ci.shift,
    .mask = ci.mask };
  gint64 span = (gint64) (khz * 500); /* half a second of ticks */
  for (gint64 d = -span; d <= span; d += span / 1000 + 7) {
    guint64 ticks = ci.last_cycles + (guint64) d;
    guint64 exact_ns = (guint64) (((U128) ticks * 1000000) / khz);
    guint64 got = mlx5dv_ts_to_ns (&dv, ticks);
    gint64 diff = (gint64) (got - exact_ns);
    if (exact ? diff != 0 : (diff < -1 || diff > 1))
      g_error ("%s: ticks %" G_GUINT64_FORMAT ": %" G_GUINT64_FORMAT
               " ns, exactly %" G_GUINT64_FORMAT,
          spec, ticks, got, exact_ns);
  }
  /* the port clock and the snapshot agree */
  guint64 now = emu_port_ops.clock_now (r.dev);
  g_assert_cmpuint (now, >=, ci.nsec);
  g_assert_cmpuint (now - ci.nsec, <, 1000000000ull);
  rig_close (&r);
}

static void
test_clock_info (void)
{
  check_clock_info ("clk0", 1000000, TRUE);
  check_clock_info ("clk1,freq=156250khz", 156250, FALSE);
  check_clock_info ("clk2,freq=1mhz", 1000, FALSE);
  check_clock_info ("clk3,freq=2500mhz", 2500000, FALSE);
}

/* Microsoft's RSS verification vectors for the default key */
static void
test_toeplitz (void)
{
  const struct {
    guint8 src[4], dst[4];
    guint16 sport, dport;
    guint32 ipv4, ipv4_l4;
  } v[] = {
    { { 66, 9, 149, 187 }, { 161, 142, 100, 80 }, 2794, 1766, 0x323e8fc2, 0x51ccc178 },
    { { 199, 92, 111, 2 }, { 65, 69, 140, 83 }, 14230, 4739, 0xd718262a, 0xc626b0ea },
    { { 24, 19, 198, 95 }, { 12, 22, 207, 184 }, 12898, 38024, 0xd2d0a5de, 0x5c2b394a },
    { { 38, 27, 205, 30 }, { 209, 142, 163, 6 }, 48228, 2217, 0x82989176, 0xafc7327f },
    { { 153, 39, 163, 191 }, { 202, 188, 127, 2 }, 44251, 1303, 0x5d1809c5, 0x10e828a2 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (v); i++) {
    guint8 in[12];
    memcpy (in, v[i].src, 4);
    memcpy (in + 4, v[i].dst, 4);
    in[8] = (guint8) (v[i].sport >> 8);
    in[9] = (guint8) v[i].sport;
    in[10] = (guint8) (v[i].dport >> 8);
    in[11] = (guint8) v[i].dport;
    g_assert_cmphex (emu_toeplitz (in, 8), ==, v[i].ipv4);
    g_assert_cmphex (emu_toeplitz (in, 12), ==, v[i].ipv4_l4);
  }
}

/* TX -> cable -> RX through small rings: packets of 1..16 strides, fillers exactly
 * where a packet does not fit the rest of a WQE, every byte checked, the CQ (128), RQ
 * (8 WQEs) and SQ (32 WQEBBs) wrapped hundreds of times */
static void
test_loopback_strides (void)
{
  Rig r;
  rig_open (&r, "lb0");
  Mlx5Rxq *q = rig_rx (&r, 6, 4, 3); /* 64-byte strides, 16 per WQE, 8 WQEs */
  rig_steer (&r, 1, NULL, 0);
  Mlx5Txq *tx = rig_tx (&r, 16 * 1024, 1024, FALSE); /* 16 slots */
  GRand *rand = g_rand_new_with_seed (11);
  GArray *got = rxpkts_new ();
  guint8 *frames[16];
  guint32 lens[16];
  TuFrameSpec spec = { .proto = 0 };
  guint32 seq = 0;
  guint64 fillers = 0;
  guint model_stride = 0;

  for (guint i = 0; i < 16; i++)
    frames[i] = g_malloc (1024);
  while (seq < 30000) {
    guint n = g_rand_int_range (rand, 1, 17);
    for (guint i = 0; i < n; i++) {
      lens[i] = g_rand_int_range (rand, 18, 1025);
      spec.len = lens[i];
      tu_frame_build (frames[i], &spec, seq + i);
      /* the device's stride cursor, as the PRM says it moves */
      guint need = (lens[i] + 63) / 64;
      if (model_stride + need > 16) {
        fillers++;
        model_stride = 0;
      }
      model_stride = (model_stride + need) % 16;
    }
    send_all (tx, frames, lens, n);
    g_array_set_size (got, 0);
    rig_poll (&r, 0, got, n, 5000);
    g_assert_cmpuint (got->len, ==, n);
    for (guint i = 0; i < n; i++) {
      RxPkt *p = &g_array_index (got, RxPkt, i);
      char *why = NULL;
      spec.len = lens[i];
      if (!tu_frame_check (p->data, p->len, &spec, seq + i, &why))
        g_error ("%s", why);
      g_assert_cmpuint (p->flags & DQ_PACKET_FLAG_TS_HW, !=, 0);
    }
    seq += n;
  }
  mlx5_txq_reclaim (tx);
  g_assert_true (mlx5_txq_idle (tx));
  EmuCounters c;
  emu_port_counters (r.port, &c);
  Mlx5RxCounters rc;
  mlx5_rxq_counters (q, &rc);
  g_assert_cmpuint (c.tx_packets, ==, seq);
  g_assert_cmpuint (c.rx_packets, ==, seq);
  g_assert_cmpuint (rc.packets, ==, seq);
  g_assert_cmpuint (c.rx_fillers, ==, fillers);
  g_assert_cmpuint (rc.fillers, ==, fillers);
  g_assert_cmpuint (rc.device_errors, ==, 0);
  g_assert_cmpuint (rc.cqe_errors, ==, 0);
  g_assert_cmpuint (c.rx_out_of_buffer, ==, 0); /* pause held the sender back */
  g_assert_cmpuint (c.iommu_faults, ==, 0);
  g_assert_cmpuint (rc.reposts, >, 1000);
  for (guint i = 0; i < 16; i++)
    g_free (frames[i]);
  g_array_unref (got);
  g_rand_free (rand);
  rig_close (&r);
}

/* Polls queue qi (as a polling thread does: poll, release, refill) until the host has
 * recovered the RQ from an error once more: the error and flush CQEs read, every WQE back,
 * ERR -> RST -> RDY done. Packets read on the way are dropped. */
static void
rig_recover (Rig *r, guint qi)
{
  Mlx5Rxq *q = r->rx[qi];
  DqPacket pkts[64];
  Mlx5RxCounters c;
  mlx5_rxq_counters (q, &c);
  const guint64 before = c.recoveries;
  gint64 deadline = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
  while (c.recoveries == before && g_get_monotonic_time () < deadline) {
    Mlx5RxBurst b = { 0 };
    mlx5_rxq_poll (q, &b, pkts, 64);
    if (b.n_packets > 0)
      mlx5_rxq_release (q, b.wqe, b.strides);
    mlx5_rxq_refill (q);
    mlx5_rxq_counters (q, &c);
  }
  g_assert_cmpuint (c.recoveries, ==, before + 1);
  g_assert_false (mlx5_rxq_in_error (q));
}

/* The IOMMU on the receive side: a WQE whose address lies outside every registered region,
 * one whose lkey nobody registered, one whose byte count is not the region: each an error
 * CQE with the PRM syndrome, nothing written outside the ring, the frame lost (counted), the
 * RQ in ERR with every other posted WQE flushed; the host recovers it (ERR -> RST -> RDY),
 * rewrites and re-posts the WQEs, and the next frame arrives. */
static void
test_iommu_rx (void)
{
  Rig r;
  rig_open (&r, "iommu0,pause=off");
  Mlx5Rxq *q = rig_rx (&r, 6, 3, 2); /* 8 strides per WQE, 4 WQEs */
  rig_steer (&r, 1, NULL, 0);
  Mlx5Rq *rq = mlx5_rxq_rq (q);
  guint8 *guard = g_malloc0 (4096);
  GArray *got = rxpkts_new ();
  TuFrameSpec spec = { .len = 100, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  guint8 frame[400];
  Mlx5RxCounters rc;
  EmuCounters c;
  static const guint8 syndromes[3] = { MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
    MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR };

  struct mlx5_mprq_wqe *w = (struct mlx5_mprq_wqe *) rq->wqes;
  for (guint round = 0; round < 3; round++) {
    /* the WQE the device takes next: at first slot 0; later, with a frame of 100 bytes
     * in slot 0 (the device's first WQE after a recovery), a frame of 400 bytes does not
     * fit its rest and makes the device take slot 1 */
    guint bad = round == 0 ? 0 : 1;
    if (round == 0)
      w[bad].dseg.addr = htobe64 ((guint64) (uintptr_t) guard);
    else if (round == 1)
      w[bad].dseg.lkey = htobe32 (0x7f00005a);
    else
      w[bad].dseg.byte_count = htobe32 (64);
    spec.len = round == 0 ? 100 : 400;
    tu_frame_build (frame, &spec, 2 * round);
    g_assert_true (emu_port_inject (r.port, frame, spec.len));
    spec.len = 100;
    wait_idle (&r);
    rig_recover (&r, 0);
    mlx5_rxq_counters (q, &rc);
    g_assert_cmpuint (rc.cqe_errors, ==, round + 1);
    g_assert_cmpuint (rc.last_syndrome, ==, syndromes[round]);
    /* flushed: the 3 other WQEs posted; later 2 (slots 2, 3: slot 0's strides, the filler's,
     * came back only after the error) */
    g_assert_cmpuint (rc.flushed, ==, 3 + 2 * round);
    g_assert_cmpuint (rc.recoveries, ==, round + 1);

    /* recovered: the WQEs rewritten right, the next frame arrives at WQE 0 */
    tu_frame_build (frame, &spec, 2 * round + 1);
    g_assert_true (emu_port_inject (r.port, frame, 100));
    g_array_set_size (got, 0);
    rig_poll (&r, 0, got, 1, 2000);
    g_assert_cmpuint (got->len, ==, 1);
    g_assert_cmpuint (tu_frame_seq (g_array_index (got, RxPkt, 0).data, 100), ==, 2 * round + 1);
  }
  for (guint i = 0; i < 4096; i++)
    g_assert_cmpuint (guard[i], ==, 0);
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.iommu_faults, ==, 2);
  g_assert_cmpuint (c.rx_cqe_errors, ==, 3);
  g_assert_cmpuint (c.rx_flushed, ==, 7);
  g_assert_cmpuint (c.rx_packets, ==, 3);
  /* each bad WQE cost its frame: delivered + lost = sent */
  g_assert_cmpuint (c.rx_out_of_buffer, ==, 3);

  /* and the ring goes on for many WQEs */
  for (guint32 s = 6; s < 40; s++) {
    tu_frame_build (frame, &spec, s);
    g_assert_true (emu_port_inject (r.port, frame, 100));
    g_array_set_size (got, 0);
    rig_poll (&r, 0, got, 1, 2000);
    g_assert_cmpuint (got->len, ==, 1);
    g_assert_cmpuint (tu_frame_seq (g_array_index (got, RxPkt, 0).data, 100), ==, s);
  }
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_out_of_buffer, ==, 3);
  g_array_unref (got);
  g_free (guard);
  rig_close (&r);
}

/* Reclaims (as a sending thread does) until the SQ has been recovered `recoveries` times in
 * all: every WQE completed, ERR -> RST -> RDY done. */
static void
tx_wait_recovered (Rig *r, Mlx5Txq *tx, guint64 recoveries)
{
  Mlx5TxCounters tc;
  gint64 deadline = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
  do {
    wait_idle (r);
    mlx5_txq_reclaim (tx);
    mlx5_txq_counters (tx, &tc);
  } while (tc.recoveries < recoveries && g_get_monotonic_time () < deadline);
  g_assert_cmpuint (tc.recoveries, ==, recoveries);
  g_assert_true (mlx5_txq_idle (tx));
}

/* The IOMMU on the send side, and malformed SQ WQEs: error CQEs with the PRM syndromes,
 * as a ConnectX has them: the SQ goes to ERR, the WQEs after the bad one complete with
 * flush errors unsent, the host recovers the SQ (ERR -> RST -> RDY) and sends on. */
/* A port of minimum inline mode L2 (inline=l2): the ring, told so by the caps, puts the
 * first 18 bytes of each frame inline and the frames arrive byte for byte, short and long;
 * a ring that does not (its caps cleared) gets a local QP operation error, the SQ flushed
 * and recovered, as a ConnectX refuses such a WQE. */
static void
test_inline_l2 (void)
{
  Rig r;
  Mlx5Txq *tx = rig_open_loop (&r, "inl0,inline=l2", 4, 16 * 2048, TRUE);
  g_assert_cmpuint (r.caps.tx_inline_bytes, ==, MLX5_ETH_L2_INLINE_SIZE);
  GArray *got = rxpkts_new ();
  const guint sizes[5] = { 60, 1518, 18, 14, 333 };
  guint8 *slots[5];
  guint32 lens[5];
  TuFrameSpec raw = { .proto = 0 };
  TuFrameSpec udp = { .proto = TU_PROTO_UDP, .good_csums = TRUE };
  g_assert_cmpuint (mlx5_txq_acquire (tx, 5, slots), ==, 5);
  for (guint i = 0; i < 5; i++) {
    TuFrameSpec *s = sizes[i] >= 60 ? &udp : &raw;
    s->len = sizes[i];
    tu_frame_build (slots[i], s, 40 + i);
    lens[i] = sizes[i];
  }
  g_assert_cmpuint (mlx5_txq_commit (tx, 5, lens), ==, 5);
  rig_poll (&r, 0, got, 5, 1000);
  g_assert_cmpuint (got->len, ==, 5);
  for (guint i = 0; i < 5; i++) {
    const RxPkt *p = &g_array_index (got, RxPkt, i);
    TuFrameSpec s = sizes[i] >= 60 ? udp : raw;
    s.len = sizes[i];
    g_assert_cmpuint (p->len, ==, sizes[i]);
    char *why = NULL;
    if (sizes[i] >= 18 && !tu_frame_check (p->data, p->len, &s, 40 + i, &why))
      g_error ("frame %u: %s", i, why);
  }
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.tx_cqe_errors, ==, 0);
  mlx5_txq_free (r.tx);

  /* the same port, a ring that sends no inline headers: refused */
  Mlx5Caps plain = r.caps;
  plain.tx_inline_bytes = 0;
  r.tx = tx = mini_txq_new (&emu_port_ops, r.dev, &plain, 16 * 2048, 1518, 0, TRUE);
  g_assert_cmpuint (mlx5_txq_acquire (tx, 2, slots), ==, 2);
  udp.len = 100;
  tu_frame_build (slots[0], &udp, 50);
  tu_frame_build (slots[1], &udp, 51);
  lens[0] = lens[1] = 100;
  g_assert_cmpuint (mlx5_txq_commit (tx, 2, lens), ==, 2);
  tx_wait_recovered (&r, tx, 1);
  Mlx5TxCounters tc;
  mlx5_txq_counters (tx, &tc);
  g_assert_cmpuint (tc.cqe_errors, ==, 1);
  g_assert_cmpuint (tc.last_syndrome, ==, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
  g_assert_cmpuint (tc.flushed, ==, 1);
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.tx_packets, ==, 5);
  g_array_unref (got);
  rig_close (&r);
}

/* eMPW on the emulated ConnectX: 3000 frames of 60..1024 bytes in WQEs of up to 32, each
 * received byte for byte and in order, none starting before the one before it has left
 * the wire (the line-rate model: 100 Gb/s, 24 bytes of overhead); a WQE
 * whose third data segment the IOMMU refuses fails whole (none of its frames sent, an
 * error CQE, the host counts all of them lost), the SQ recovers and sends on. */
static void
test_empw (void)
{
  Rig r;
  rig_open (&r, "empw0");
  rig_rx (&r, 11, 6, 6);
  rig_steer (&r, 1, NULL, 0);
  Mlx5TxConfig cfg = { .csum = TRUE, .empw = TRUE };
  GError *error = NULL;
  g_assert_true (mlx5_tx_geometry_choose (&r.caps, "t", 256 * 2048, 1518, 0, &cfg, &error));
  Mlx5Txq *tx = r.tx = mlx5_txq_new (&emu_port_ops, r.dev, &cfg, &error);
  g_assert_no_error (error);
  GArray *got = rxpkts_new ();
  TuFrameSpec spec = { .proto = TU_PROTO_UDP, .good_csums = TRUE };
  guint8 *slots[64];
  guint32 lens[64];
  const guint n = 3000;
  for (guint32 seq = 0; seq < n;) {
    guint k = mlx5_txq_acquire (tx, MIN (64, n - seq), slots);
    for (guint i = 0; i < k; i++) {
      spec.len = lens[i] = 60 + (seq + i) * 37 % 965;
      tu_frame_build (slots[i], &spec, seq + i);
    }
    g_assert_cmpuint (mlx5_txq_commit (tx, k, lens), ==, k);
    seq += k;
    rig_poll (&r, 0, got, got->len + k, 1000);
  }
  g_assert_cmpuint (got->len, ==, n);
  for (guint i = 0; i < n; i++) {
    const RxPkt *p = &g_array_index (got, RxPkt, i);
    spec.len = 60 + i * 37 % 965;
    char *why = NULL;
    if (!tu_frame_check (p->data, p->len, &spec, i, &why))
      g_error ("frame %u: %s", i, why);
    if (i > 0) {
      const RxPkt *prev = &g_array_index (got, RxPkt, i - 1);
      guint plen = prev->len;
      g_assert_cmpuint (p->ts - prev->ts, >=,
          tu_wire_ticks (&plen, 1, 24, 1000000000, G_GUINT64_CONSTANT (100000000000)));
    }
  }
  Mlx5TxCounters tc;
  mlx5_txq_counters (tx, &tc);
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (tc.packets, ==, n);
  g_assert_cmpuint (tc.empw_wqes, ==, c.tx_empw_wqes);
  g_assert_cmpuint (c.tx_empw_wqes, >=, n / 32);
  g_assert_cmpuint (c.tx_packets, ==, n);
  g_assert_cmpuint (c.tx_csum_l4, ==, n);

  /* a spoilt data segment: the whole WQE is refused, none of it sent */
  emu_port_fault_stall (r.port, TRUE);
  g_assert_cmpuint (mlx5_txq_acquire (tx, 8, slots), ==, 8);
  for (guint i = 0; i < 8; i++) {
    spec.len = lens[i] = 100;
    tu_frame_build (slots[i], &spec, 5000 + i);
  }
  g_assert_cmpuint (mlx5_txq_commit (tx, 8, lens), ==, 8);
  Mlx5Sq *sq = mlx5_txq_sq (tx);
  guint32 mask = (1u << sq->log_wqebbs) - 1;
  /* the WQE just posted starts 3 WQEBBs (2 + 8 DS) before the producer index */
  guint32 pi = be32toh (sq->dbrec[MLX5_SND_DBR]);
  guint32 start = (pi - 3) & mask;
  guint32 unit = 2 + 2; /* the third data segment */
  struct mlx5_wqe_data_seg *ds = (struct mlx5_wqe_data_seg *) (sq->wqes +
      (gsize) ((start + unit / 4) & mask) * 64 + (unit % 4) * 16);
  ds->lkey = htobe32 (be32toh (ds->lkey) ^ 0x100);
  emu_port_fault_stall (r.port, FALSE);
  tx_wait_recovered (&r, tx, 1);
  mlx5_txq_counters (tx, &tc);
  g_assert_cmpuint (tc.cqe_errors, ==, 1);
  g_assert_cmpuint (tc.last_syndrome, ==, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  g_assert_cmpuint (tc.lost, ==, 8);
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.tx_packets, ==, n);
  g_array_set_size (got, 0);
  rig_poll (&r, 0, got, 1, 50);
  g_assert_cmpuint (got->len, ==, 0);
  g_array_unref (got);
  rig_close (&r);
}

static void
test_iommu_tx (void)
{
  Rig r;
  Mlx5Txq *tx = rig_open_loop (&r, "iommu1", 2, 8 * 2048, FALSE);
  Mlx5Sq *sq = mlx5_txq_sq (tx);
  GArray *got = rxpkts_new ();
  TuFrameSpec spec = { .len = 200, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  guint8 *slots[4];
  guint32 lens[4] = { 200, 200, 200, 200 };
  Mlx5TxCounters tc;
  EmuCounters c;
  static const guint8 syndromes[3] = { MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
    MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR };

  /* three frames a round, the second one's WQE spoilt: another MR's lkey, an address
   * past the slab, an opcode we do not know; WQE indices start at 0 in each round (the
   * first one, and after each recovery) */
  guint8 *w = sq->wqes;
  for (guint round = 0; round < 3; round++) {
    emu_port_fault_stall (r.port, TRUE);
    g_assert_cmpuint (mlx5_txq_acquire (tx, 3, slots), ==, 3);
    for (guint i = 0; i < 3; i++)
      tu_frame_build (slots[i], &spec, 100 + 3 * round + i);
    g_assert_cmpuint (mlx5_txq_commit (tx, 3, lens), ==, 3);
    struct mlx5_wqe_data_seg *ds1 = (struct mlx5_wqe_data_seg *) (w + 64 + 32);
    struct mlx5_wqe_ctrl_seg *ctrl1 = (struct mlx5_wqe_ctrl_seg *) (w + 64);
    if (round == 0)
      ds1->lkey = htobe32 (be32toh (ds1->lkey) ^ 0x100);
    else if (round == 1)
      ds1->addr = htobe64 (be64toh (ds1->addr) + (1 << 20));
    else
      ctrl1->opmod_idx_opcode = htobe32 ((1 << 8) | 0x1f);
    emu_port_fault_stall (r.port, FALSE);
    g_array_set_size (got, 0);
    rig_poll (&r, 0, got, 1, 1000);
    g_assert_cmpuint (got->len, ==, 1);
    g_assert_cmpuint (tu_frame_seq (g_array_index (got, RxPkt, 0).data, 200), ==, 100 + 3 * round);
    tx_wait_recovered (&r, tx, round + 1);
    mlx5_txq_counters (tx, &tc);
    g_assert_cmpuint (tc.cqe_errors, ==, round + 1);
    g_assert_cmpuint (tc.last_syndrome, ==, syndromes[round]);
    g_assert_cmpuint (tc.flushed, ==, round + 1); /* the third frame, unsent */
  }
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.tx_cqe_errors, ==, 3);
  g_assert_cmpuint (c.tx_flushed, ==, 3);
  g_assert_cmpuint (c.iommu_faults, ==, 2);
  g_assert_cmpuint (c.tx_packets, ==, 3);

  /* an injected error on the 3rd next SEND: the two after it are flushed */
  emu_port_fault_tx_error (r.port, 2, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  guint8 f[5][200];
  guint8 *fp[5];
  guint32 fl[5];
  for (guint i = 0; i < 5; i++) {
    tu_frame_build (f[i], &spec, 200 + i);
    fp[i] = f[i];
    fl[i] = 200;
  }
  send_all (tx, fp, fl, 5);
  g_array_set_size (got, 0);
  rig_poll (&r, 0, got, 2, 2000);
  tx_wait_recovered (&r, tx, 4);
  rig_poll (&r, 0, got, 3, 100); /* and nothing more */
  g_assert_cmpuint (got->len, ==, 2);
  for (guint i = 0; i < 2; i++)
    g_assert_cmpuint (tu_frame_seq (g_array_index (got, RxPkt, i).data, 200), ==, 200 + i);
  mlx5_txq_counters (tx, &tc);
  g_assert_cmpuint (tc.cqe_errors, ==, 4);
  g_assert_cmpuint (tc.flushed, ==, 5);
  g_assert_cmpuint (tc.last_syndrome, ==, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);

  /* a WQE whose DS count runs past the doorbell (2 WQEBBs claimed, 1 posted) */
  emu_port_fault_stall (r.port, TRUE);
  g_assert_cmpuint (mlx5_txq_acquire (tx, 1, slots), ==, 1);
  tu_frame_build (slots[0], &spec, 300);
  g_assert_cmpuint (mlx5_txq_commit (tx, 1, lens), ==, 1);
  guint32 pi = be32toh (sq->dbrec[MLX5_SND_DBR]) - 1;
  struct mlx5_wqe_ctrl_seg *last =
      (struct mlx5_wqe_ctrl_seg *) (w + (pi & ((1u << sq->log_wqebbs) - 1)) * 64);
  last->qpn_ds = htobe32 ((be32toh (last->qpn_ds) & ~0x3fu) | 8);
  emu_port_fault_stall (r.port, FALSE);
  tx_wait_recovered (&r, tx, 5);
  mlx5_txq_counters (tx, &tc);
  g_assert_cmpuint (tc.cqe_errors, ==, 5);
  g_assert_cmpuint (tc.last_syndrome, ==, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);

  /* a frame longer than MTU + 18 is refused by the MAC */
  guint8 big[1600] = { 0 };
  guint8 *bp[1] = { big };
  guint32 bl[1] = { 1519 };
  big[12] = 0x88;
  big[13] = 0xb5;
  send_all (tx, bp, bl, 1);
  tx_wait_recovered (&r, tx, 6);
  mlx5_txq_counters (tx, &tc);
  g_assert_cmpuint (tc.cqe_errors, ==, 6);
  g_assert_cmpuint (tc.last_syndrome, ==, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  bl[0] = 1518;
  send_all (tx, bp, bl, 1);
  g_array_set_size (got, 0);
  rig_poll (&r, 0, got, 1, 2000);
  g_assert_cmpuint (got->len, ==, 1);
  g_assert_cmpuint (g_array_index (got, RxPkt, 0).len, ==, 1518);
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.tx_cqe_errors, ==, 6);
  g_assert_cmpuint (c.tx_flushed, ==, 5);
  g_array_unref (got);
  rig_close (&r);
}

/* The SQ doorbell as the device takes it: the UAR write, checked against the ring. */

/* posts one frame with the device stalled; returns the index of its WQE */
static guint32
post_stalled (Rig *r, Mlx5Txq *tx, const TuFrameSpec *spec, guint32 seq)
{
  guint8 *slot;
  guint32 len = spec->len;
  emu_port_fault_stall (r->port, TRUE);
  g_assert_cmpuint (mlx5_txq_acquire (tx, 1, &slot), ==, 1);
  tu_frame_build (slot, spec, seq);
  g_assert_cmpuint (mlx5_txq_commit (tx, 1, &len), ==, 1);
  return (be32toh (mlx5_txq_sq (tx)->dbrec[MLX5_SND_DBR]) - 1) & 0xffff;
}

/* the doorbell register the host just wrote: the one of the two that holds a value
 * (the stalled device took nothing) */
static volatile guint64 *
written_register (Mlx5Sq *sq)
{
  volatile guint64 *a = sq->bf_reg;
  volatile guint64 *b = (volatile guint64 *) ((guint8 *) sq->bf_reg + sq->bf_size);
  g_assert_true ((*a != 0) != (*b != 0));
  return *a != 0 ? a : b;
}

/* the doorbell for the WQE at `index`: the first 8 bytes of its control segment, with
 * the WQE index and the SQN given (big-endian, as the PRM has them) */
static guint64
doorbell_value (Mlx5Sq *sq, guint32 index, guint32 wqe_index, guint32 sqn)
{
  const guint8 *ctrl = sq->wqes + ((gsize) (index & ((1u << sq->log_wqebbs) - 1)) << 6);
  guint32 w[2];
  memcpy (w, ctrl, sizeof w);
  w[0] = htobe32 ((be32toh (w[0]) & 0xff0000ffu) | (wqe_index & 0xffff) << 8);
  w[1] = htobe32 ((be32toh (w[1]) & 0xffu) | sqn << 8);
  guint64 v;
  memcpy (&v, w, sizeof v);
  return v;
}

/* writes `doorbell` to `reg` (the device stalled), lets the device run, and checks what
 * it counted and whether frame `seq` went out (-1: none) */
static void
ring_and_check (
    Rig *r, volatile guint64 *reg, guint64 doorbell, guint64 errors, guint64 packets, gint64 seq)
{
  GArray *got = rxpkts_new ();
  EmuCounters c;
  *reg = doorbell;
  emu_port_fault_stall (r->port, FALSE);
  wait_idle (r);
  rig_poll (r, 0, got, 1, seq >= 0 ? 2000 : 50);
  emu_port_counters (r->port, &c);
  g_assert_cmpuint (c.doorbell_errors, ==, errors);
  g_assert_cmpuint (c.tx_packets, ==, packets);
  g_assert_cmpuint (got->len, ==, seq >= 0 ? 1 : 0);
  if (seq >= 0)
    g_assert_cmpuint (tu_frame_seq (g_array_index (got, RxPkt, 0).data, 200), ==, seq);
  g_array_unref (got);
}

/* A doorbell of another SQ, one naming a WQE past the record, and a record moved with no
 * doorbell send nothing and count one doorbell error each; the right doorbell then
 * sends the frame. A late doorbell naming a WQE already sent is no error. */
static void
test_sq_doorbell (void)
{
  Rig r;
  Mlx5Txq *tx = rig_open_loop (&r, "doorbell0", 2, 8 * 2048, FALSE);
  Mlx5Sq *sq = mlx5_txq_sq (tx);
  TuFrameSpec spec = { .len = 200, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  EmuCounters c;

  /* the host's own doorbell names its last WQE and its SQ */
  guint32 i = post_stalled (&r, tx, &spec, 1);
  volatile guint64 *reg = written_register (sq);
  g_assert_cmphex (*reg, ==, doorbell_value (sq, i, i, sq->sqn));
  ring_and_check (&r, reg, *reg, 0, 1, 1);

  /* another SQN: ignored until the right one */
  i = post_stalled (&r, tx, &spec, 2);
  reg = written_register (sq);
  ring_and_check (&r, reg, doorbell_value (sq, i, i, sq->sqn + 1), 1, 1, -1);
  emu_port_fault_stall (r.port, TRUE);
  ring_and_check (&r, reg, doorbell_value (sq, i, i, sq->sqn), 1, 2, 2);

  /* the index after the last posted WQE: nothing posted there */
  i = post_stalled (&r, tx, &spec, 3);
  reg = written_register (sq);
  ring_and_check (&r, reg, doorbell_value (sq, i, i + 1, sq->sqn), 2, 2, -1);
  emu_port_fault_stall (r.port, TRUE);
  ring_and_check (&r, reg, doorbell_value (sq, i, i, sq->sqn), 2, 3, 3);

  /* a late doorbell for a WQE already sent: nothing to do, no error */
  emu_port_fault_stall (r.port, TRUE);
  ring_and_check (&r, sq->bf_reg, doorbell_value (sq, i, i, sq->sqn), 2, 3, -1);

  /* the record moved, no UAR write: the device never learns of the WQE */
  i = post_stalled (&r, tx, &spec, 4);
  reg = written_register (sq);
  *reg = 0;
  emu_port_fault_stall (r.port, FALSE);
  gint64 deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
  do {
    g_usleep (10000);
    emu_port_counters (r.port, &c);
  } while (c.doorbell_errors < 3 && g_get_monotonic_time () < deadline);
  g_assert_cmpuint (c.doorbell_errors, ==, 3);
  g_assert_cmpuint (c.tx_packets, ==, 3);
  emu_port_fault_stall (r.port, TRUE);
  ring_and_check (&r, reg, doorbell_value (sq, i, i, sq->sqn), 3, 4, 4);

  g_assert_cmpuint (mlx5_txq_reclaim (tx), ==, 4);
  g_assert_true (mlx5_txq_idle (tx));
  rig_close (&r);
}

/* Held bursts run the ring dry: the device counts out-of-buffer drops (port and RQ
 * counters agree, exactly); after the release the ring takes packets again. */
static void
test_out_of_buffer (void)
{
  Rig r;
  rig_open (&r, "oob0");
  Mlx5Rxq *q = rig_rx (&r, 6, 4, 2); /* 16 strides per WQE, 4 WQEs: 64 strides */
  rig_steer (&r, 1, NULL, 0);
  TuFrameSpec spec = { .len = 64, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  guint8 frame[64];
  GArray *held = g_array_new (FALSE, FALSE, sizeof (Mlx5RxBurst));
  DqPacket pkts[64];
  guint received = 0;

  /* injected frames ignore pause: a sender that does not hold back */
  for (guint32 s = 0; s < 200; s++) {
    tu_frame_build (frame, &spec, s);
    g_assert_true (emu_port_inject (r.port, frame, 64));
  }
  wait_idle (&r);
  for (;;) {
    Mlx5RxBurst b = { 0 };
    mlx5_rxq_poll (q, &b, pkts, 64);
    if (b.n_packets == 0)
      break;
    for (guint i = 0; i < b.n_packets; i++)
      g_assert_cmpuint (
          tu_frame_seq (mlx5_rxq_burst_data (q, &b) + pkts[i].offset, 64), ==, received + i);
    received += b.n_packets;
    g_array_append_val (held, b);
  }
  g_assert_cmpuint (received, ==, 64);
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_packets, ==, 64);
  g_assert_cmpuint (c.rx_out_of_buffer, ==, 136);
  g_assert_cmpuint (c.rx_packets_phy, ==, 200);
  Mlx5RqCounters qc;
  emu_port_ops.rq_counters (r.dev, mlx5_rxq_rq (q), &qc);
  g_assert_cmpuint (qc.out_of_buffer, ==, 136);
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 0);

  for (guint i = 0; i < held->len; i++) {
    Mlx5RxBurst *b = &g_array_index (held, Mlx5RxBurst, i);
    mlx5_rxq_release (q, b->wqe, b->strides);
  }
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 4);
  for (guint32 s = 1000; s < 1010; s++) {
    tu_frame_build (frame, &spec, s);
    g_assert_true (emu_port_inject (r.port, frame, 64));
  }
  GArray *got = rxpkts_new ();
  rig_poll (&r, 0, got, 10, 2000);
  g_assert_cmpuint (got->len, ==, 10);
  for (guint i = 0; i < 10; i++)
    g_assert_cmpuint (tu_frame_seq (g_array_index (got, RxPkt, i).data, 64), ==, 1000 + i);
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_out_of_buffer, ==, 136);
  g_array_unref (got);
  g_array_unref (held);
  rig_close (&r);
}

/* Bursts released by other threads, out of order and late; WQEs still re-posted in
 * ring order and every packet arrives intact. */
typedef struct {
  Mlx5Rxq *q;
  GAsyncQueue *bursts; /* Mlx5RxBurst* */
  guint seed;
} Releaser;

static gpointer
releaser_thread (gpointer data)
{
  Releaser *rel = data;
  GRand *rand = g_rand_new_with_seed (rel->seed);
  GPtrArray *pending = g_ptr_array_new ();
  for (;;) {
    /* nothing new for a while: the ring may be waiting for these, let them all go */
    Mlx5RxBurst *b = g_async_queue_timeout_pop (rel->bursts, 200);
    if (b == NULL) {
      for (guint i = 0; i < pending->len; i++) {
        Mlx5RxBurst *x = g_ptr_array_index (pending, i);
        mlx5_rxq_release (rel->q, x->wqe, x->strides);
        g_free (x);
      }
      g_ptr_array_set_size (pending, 0);
      continue;
    }
    if (b->n_packets == 0) {
      g_free (b);
      break;
    }
    g_ptr_array_add (pending, b);
    /* hold a few, then release a random one */
    while (pending->len > 3 || (pending->len > 0 && g_rand_boolean (rand))) {
      guint i = g_rand_int_range (rand, 0, pending->len);
      Mlx5RxBurst *x = g_ptr_array_steal_index_fast (pending, i);
      mlx5_rxq_release (rel->q, x->wqe, x->strides);
      g_free (x);
    }
  }
  for (guint i = 0; i < pending->len; i++) {
    Mlx5RxBurst *x = g_ptr_array_index (pending, i);
    mlx5_rxq_release (rel->q, x->wqe, x->strides);
    g_free (x);
  }
  g_ptr_array_free (pending, TRUE);
  g_rand_free (rand);
  return NULL;
}

static void
test_release_threads (void)
{
  Rig r;
  rig_open (&r, "rel0");
  Mlx5Rxq *q = rig_rx (&r, 7, 4, 4); /* 128-byte strides, 16 per WQE, 16 WQEs */
  rig_steer (&r, 1, NULL, 0);
  Mlx5Txq *tx = rig_tx (&r, 64 * 512, 512, FALSE);
  Releaser rel[3];
  GThread *threads[3];
  const guint total = 60000;
  guint32 next = 0, sent = 0;
  TuFrameSpec spec = { .proto = 0 };
  guint8 f[32][512];
  guint8 *fp[32];
  guint32 fl[32];
  DqPacket pkts[16];

  for (guint i = 0; i < 3; i++) {
    rel[i].q = q;
    rel[i].bursts = g_async_queue_new ();
    rel[i].seed = 100 + i;
    threads[i] = g_thread_new ("releaser", releaser_thread, &rel[i]);
  }
  /* stuck: no packet in 10 s (the whole run takes about half a second on an idle machine and
   * tens of seconds on a loaded one) */
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  guint32 seen = 0;
  while (next < total) {
    if (next != seen) {
      seen = next;
      deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
    }
    g_assert_cmpint (g_get_monotonic_time (), <, deadline);
    if (sent < total && mlx5_txq_free_slots (tx) + mlx5_txq_reclaim (tx) > 0) {
      guint n = MIN (32, total - sent);
      for (guint i = 0; i < n; i++) {
        fl[i] = 18 + ((sent + i) * 37) % 495;
        spec.len = fl[i];
        tu_frame_build (f[i], &spec, sent + i);
        fp[i] = f[i];
      }
      sent += mlx5_txq_send (tx, (const guint8 *const *) fp, fl, n);
    }
    mlx5_rxq_refill (q);
    Mlx5RxBurst b = { 0 };
    mlx5_rxq_poll (q, &b, pkts, 16);
    if (b.n_packets == 0) {
      g_thread_yield ();
      continue;
    }
    guint8 *data = mlx5_rxq_burst_data (q, &b);
    for (guint i = 0; i < b.n_packets; i++) {
      char *why = NULL;
      spec.len = 18 + (next * 37) % 495;
      if (!tu_frame_check (data + pkts[i].offset, pkts[i].length, &spec, next, &why))
        g_error ("%s", why);
      next++;
    }
    g_async_queue_push (rel[next % 3].bursts, g_memdup2 (&b, sizeof b));
  }
  for (guint i = 0; i < 3; i++) {
    Mlx5RxBurst end = { 0 };
    g_async_queue_push (rel[i].bursts, g_memdup2 (&end, sizeof end));
    g_thread_join (threads[i]);
    g_async_queue_unref (rel[i].bursts);
  }
  /* everything came back: every WQE re-posted, the ring full again */
  mlx5_rxq_refill (q);
  Mlx5RxCounters rc;
  mlx5_rxq_counters (q, &rc);
  g_assert_cmpuint (rc.packets, ==, total);
  g_assert_cmpuint (rc.device_errors, ==, 0);
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_out_of_buffer, ==, 0);
  Mlx5Rq *rq = mlx5_rxq_rq (q);
  guint32 pi = be32toh (rq->dbrec[MLX5_RCV_DBR]);
  /* posted = consumed WQEs + the ring (the one being filled counts as posted) */
  g_assert_cmpuint ((pi - rc.reposts) & 0xffff, ==, 16);
  rig_close (&r);
}

/* An injected RX error: that packet is lost (error CQE, syndrome kept), the ring goes
 * on over many WQEs. */
static void
test_rx_error_injection (void)
{
  Rig r;
  rig_open (&r, "rxerr0");
  Mlx5Rxq *q = rig_rx (&r, 6, 3, 2);
  rig_steer (&r, 1, NULL, 0);
  TuFrameSpec spec = { .len = 150, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  guint8 frame[150];
  GArray *got = rxpkts_new ();

  emu_port_fault_rx_error (r.port, 5, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  for (guint32 s = 0; s < 20; s++) {
    tu_frame_build (frame, &spec, s);
    g_assert_true (emu_port_inject (r.port, frame, 150));
    if (s == 5) {
      /* the RQ went to ERR: what it had posted is flushed, the host recovers it */
      wait_idle (&r);
      rig_recover (&r, 0);
    }
    rig_poll (&r, 0, got, s < 5 ? s + 1 : s, 1000);
  }
  g_assert_cmpuint (got->len, ==, 19);
  for (guint i = 0; i < 19; i++)
    g_assert_cmpuint (
        tu_frame_seq (g_array_index (got, RxPkt, i).data, 150), ==, i < 5 ? i : i + 1);
  Mlx5RxCounters rc;
  mlx5_rxq_counters (q, &rc);
  g_assert_cmpuint (rc.cqe_errors, ==, 1);
  g_assert_cmpuint (rc.last_syndrome, ==, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  g_assert_cmpuint (rc.recoveries, ==, 1);
  g_assert_cmpuint (rc.flushed, >=, 1);
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_cqe_errors, ==, 1);
  g_assert_cmpuint (c.rx_flushed, ==, rc.flushed);
  g_assert_cmpuint (c.rx_packets, ==, 19);
  /* many WQEs later the accounting still holds */
  for (guint32 s = 20; s < 500; s++) {
    tu_frame_build (frame, &spec, s);
    g_assert_true (emu_port_inject (r.port, frame, 150));
    rig_poll (&r, 0, got, s, 1000);
  }
  g_assert_cmpuint (got->len, ==, 499);
  mlx5_rxq_counters (q, &rc);
  g_assert_cmpuint (rc.device_errors, ==, 0);
  g_array_unref (got);
  rig_close (&r);
}

/* Checksum offload: the device computes what cs_flags ask for; the test recomputes every
 * checksum independently (RFC 1071) and compares; RX flags report what verifies. */
static void
test_checksums (void)
{
  Rig r;
  Mlx5Txq *on = rig_open_loop (&r, "csum0", 3, 64 * 2048, TRUE);
  GArray *got = rxpkts_new ();
  const TuFrameSpec specs[] = {
    { .len = 60,
        .proto = TU_PROTO_UDP,
        .src = 0x0a000001,
        .dst = 0x0a000002,
        .sport = 1,
        .dport = 2 },
    { .len = 61,
        .proto = TU_PROTO_UDP,
        .src = 0xc0a80001,
        .dst = 0xffffffff,
        .sport = 65535,
        .dport = 5000 },
    { .len = 1518,
        .proto = TU_PROTO_UDP,
        .src = 0x01020304,
        .dst = 0x05060708,
        .sport = 9,
        .dport = 9,
        .ip_options = 3 },
    { .len = 99,
        .proto = TU_PROTO_TCP,
        .src = 0x0a0a0a0a,
        .dst = 0x0b0b0b0b,
        .sport = 80,
        .dport = 4000 },
    { .len = 1000,
        .proto = TU_PROTO_TCP,
        .src = 0x7f000001,
        .dst = 0x7f000001,
        .sport = 1,
        .dport = 1,
        .ip_options = 10 },
    { .len = 70, .proto = TU_PROTO_ICMP, .src = 1, .dst = 2 },
    { .len = 80, .proto = 0 },
  };
  const guint n = G_N_ELEMENTS (specs);
  guint8 f[G_N_ELEMENTS (specs)][1518];
  guint8 *fp[G_N_ELEMENTS (specs)];
  guint32 fl[G_N_ELEMENTS (specs)];

  for (guint i = 0; i < n; i++) {
    tu_frame_build (f[i], &specs[i], i); /* checksums zero or garbage */
    fp[i] = f[i];
    fl[i] = specs[i].len;
  }
  send_all (on, fp, fl, n);
  rig_poll (&r, 0, got, n, 2000);
  g_assert_cmpuint (got->len, ==, n);
  for (guint i = 0; i < n; i++) {
    RxPkt *p = &g_array_index (got, RxPkt, i);
    char *why = NULL;
    if (!tu_frame_check (p->data, p->len, &specs[i], i, &why))
      g_error ("%s", why);
    if (specs[i].proto != 0) {
      guint o3 = tu_ipv4_csum_offset (p->data);
      g_assert_cmphex ((p->data[o3] << 8) | p->data[o3 + 1], ==, tu_ipv4_csum (p->data));
      guint o4 = tu_l4_csum_offset (p->data);
      if (o4 != 0)
        g_assert_cmphex ((p->data[o4] << 8) | p->data[o4 + 1], ==, tu_l4_csum (p->data));
      g_assert_cmpuint (p->flags & DQ_PACKET_FLAG_CSUM_OK, !=, 0);
    } else {
      g_assert_cmpuint (p->flags & DQ_PACKET_FLAG_CSUM_OK, ==, 0);
    }
  }
  /* the sender's slots were not changed by the device: it checksums its own copy */
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.tx_csum_l3, ==, 6);
  g_assert_cmpuint (c.tx_csum_l4, ==, 5);
  mlx5_txq_free (on);
  r.tx = NULL;

  /* without offload: bad checksums arrive bad (no CSUM_OK), good ones verify */
  Mlx5Txq *off = rig_tx (&r, 64 * 2048, 1518, FALSE);
  g_array_set_size (got, 0);
  TuFrameSpec good[3], bad[3];
  for (guint i = 0; i < 3; i++) {
    good[i] = specs[i + 2];
    good[i].good_csums = TRUE;
    bad[i] = specs[i + 2];
    tu_frame_build (f[2 * i], &good[i], 10 + i);
    tu_frame_build (f[2 * i + 1], &bad[i], 20 + i);
    fp[2 * i] = f[2 * i];
    fp[2 * i + 1] = f[2 * i + 1];
    fl[2 * i] = fl[2 * i + 1] = good[i].len;
  }
  /* a UDP checksum of 0 means "none": L4 is fine */
  TuFrameSpec zero = specs[0];
  zero.good_csums = TRUE;
  tu_frame_build (f[6], &zero, 30);
  f[6][40] = f[6][41] = 0;
  fp[6] = f[6];
  fl[6] = zero.len;
  send_all (off, fp, fl, 7);
  rig_poll (&r, 0, got, 7, 2000);
  g_assert_cmpuint (got->len, ==, 7);
  for (guint i = 0; i < 3; i++) {
    g_assert_cmpuint (g_array_index (got, RxPkt, 2 * i).flags & DQ_PACKET_FLAG_CSUM_OK, !=, 0);
    g_assert_cmpuint (g_array_index (got, RxPkt, 2 * i + 1).flags & DQ_PACKET_FLAG_CSUM_OK, ==, 0);
    g_assert_cmpmem (
        g_array_index (got, RxPkt, 2 * i + 1).data, fl[2 * i + 1], f[2 * i + 1], fl[2 * i + 1]);
  }
  g_assert_cmpuint (g_array_index (got, RxPkt, 6).flags & DQ_PACKET_FLAG_CSUM_OK, !=, 0);
  g_array_unref (got);
  rig_close (&r);
}

/* Timestamps follow the line-rate model exactly (formula in mlx5/emu/emu.h): frames
 * sent with one doorbell leave back to back. */
static void
check_train (const char *spec_text, guint n, const guint *lens, guint overhead)
{
  Rig r;
  rig_open (&r, spec_text);
  Mlx5Rxq *q = rig_rx (&r, 11, 9, 3);
  rig_steer (&r, 1, NULL, 0);
  Mlx5Txq *tx = rig_tx (&r, 256 * 2048, 1518, FALSE);
  GArray *got = rxpkts_new ();
  guint8 **fp = g_new (guint8 *, n);
  guint32 *fl = g_new (guint32, n);
  guint64 f = emu_port_freq_hz (r.port), rate = emu_port_rate_bps (r.port);

  g_usleep (1000); /* the wire is idle: the train starts fresh */
  for (guint i = 0; i < n; i++) {
    fp[i] = g_malloc0 (lens[i]);
    fp[i][12] = 0x88;
    fp[i][13] = 0xb5;
    if (lens[i] > 14)
      fp[i][14] = (guint8) i;
    fl[i] = lens[i];
  }
  mlx5_rxq_clock_refresh (q);
  guint64 before = emu_port_ops.clock_now (r.dev);
  g_assert_cmpuint (mlx5_txq_send (tx, (const guint8 *const *) fp, fl, n), ==, n);
  rig_poll (&r, 0, got, n, 2000);
  guint64 after = emu_port_ops.clock_now (r.dev);
  g_assert_cmpuint (got->len, ==, n);
  guint64 t0 = g_array_index (got, RxPkt, 0).ts;
  g_assert_cmpuint (t0, >=, before);
  g_assert_cmpuint (t0, <=, after);
  /* ns back to ticks: exact, the conversion error is far below half a tick */
  guint64 tick0 = (guint64) (((U128) t0 * f + 500000000) / 1000000000);
  for (guint k = 0; k < n; k++) {
    RxPkt *p = &g_array_index (got, RxPkt, k);
    g_assert_cmpuint (p->len, ==, lens[k]);
    if (p->len > 14)
      g_assert_cmpuint (p->data[14], ==, (guint8) k);
    guint64 ticks = (guint64) (((U128) p->ts * f + 500000000) / 1000000000);
    guint64 expect = tu_wire_ticks (lens, k, overhead, f, rate);
    if (ticks - tick0 != expect)
      g_error ("%s: frame %u at tick +%" G_GUINT64_FORMAT ", the model says +%" G_GUINT64_FORMAT,
          spec_text, k, ticks - tick0, expect);
  }
  for (guint i = 0; i < n; i++)
    g_free (fp[i]);
  g_free (fp);
  g_free (fl);
  g_array_unref (got);
  rig_close (&r);
}

static void
test_timestamps (void)
{
  guint lens[200];

  /* 576-byte frames at 100 Gb/s, 1 GHz: 600 bytes on the wire = 48 ns each */
  for (guint i = 0; i < 200; i++)
    lens[i] = 576;
  check_train ("ts0", 200, lens, 24);
  g_assert_cmpuint (tu_wire_ticks (lens, 1, 24, 1000000000, 100000000000ull), ==, 48);
  /* raw frame bits only (overhead=0): 46.08 ns, so the ticks go 46, 92, 138, 184, 230 */
  check_train ("ts1,overhead=0", 200, lens, 0);
  g_assert_cmpuint (tu_wire_ticks (lens, 5, 0, 1000000000, 100000000000ull), ==, 230);
  /* mixed sizes, runts padded to 60, 25 Gb/s with a 156.25 MHz clock (6.4 ns ticks) */
  for (guint i = 0; i < 200; i++)
    lens[i] = 14 + (i * 97) % 1505;
  check_train ("ts2,rate=25g,freq=156250khz", 200, lens, 24);
  check_train ("ts3,rate=400g,overhead=20", 200, lens, 20);
}

/* clock=rt: CQE timestamps in seconds << 32 | ns, the host takes them as they are */
static void
test_rt_clock (void)
{
  Rig r;
  rig_open (&r, "rt0,clock=rt");
  g_assert_true (r.caps.real_time_ts);
  rig_rx (&r, 11, 3, 2);
  rig_steer (&r, 1, NULL, 0);
  GArray *got = rxpkts_new ();
  guint8 frame[64] = { 0 };
  guint64 before = (guint64) g_get_real_time () * 1000;
  g_assert_true (emu_port_inject (r.port, frame, 64));
  rig_poll (&r, 0, got, 1, 2000);
  guint64 after = (guint64) g_get_real_time () * 1000;
  g_assert_cmpuint (got->len, ==, 1);
  guint64 ts = g_array_index (got, RxPkt, 0).ts;
  g_assert_cmpuint (ts + 1000, >=, before);
  g_assert_cmpuint (ts, <=, after + 1000);
  guint64 now = emu_port_ops.clock_now (r.dev);
  g_assert_cmpuint (now, >=, ts);
  g_array_unref (got);
  rig_close (&r);
}

/* Steering: rules with marks and queues, RSS for rules without a queue, a later
 * catch-all group for what no rule takes; without one such packets are dropped. */
static guint
rss_queue (const TuFrameSpec *s, guint n)
{
  guint8 in[12];
  in[0] = (guint8) (s->src >> 24);
  in[1] = (guint8) (s->src >> 16);
  in[2] = (guint8) (s->src >> 8);
  in[3] = (guint8) s->src;
  in[4] = (guint8) (s->dst >> 24);
  in[5] = (guint8) (s->dst >> 16);
  in[6] = (guint8) (s->dst >> 8);
  in[7] = (guint8) s->dst;
  in[8] = (guint8) (s->sport >> 8);
  in[9] = (guint8) s->sport;
  in[10] = (guint8) (s->dport >> 8);
  in[11] = (guint8) s->dport;
  guint size = 1;
  while (size < n)
    size <<= 1;
  return (emu_toeplitz (in, 12) & (size - 1)) % n;
}

static void
test_steering (void)
{
  Rig r;
  GError *error = NULL;
  DqFlowRule *rules = NULL;
  guint n_rules = 0;
  rig_open (&r, "steer0,pause=off");
  for (guint i = 0; i < 3; i++)
    rig_rx (&r, 11, 3, 3);
  g_assert_true (dq_flow_parse ("proto=udp dst-port=5000 mark=7 queue=1; "
                                "proto=udp dst-port=6000 mark=11259375; proto=tcp mark=9 queue=2",
      &rules, &n_rules, &error));
  rig_steer (&r, 1, rules, n_rules);
  TuFrameSpec s = { .len = 100, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  guint8 frame[100];
  guint per_queue[3] = { 0 };
  guint expect_queue[3] = { 0 };
  guint32 seq = 0;

  /* matched by rule 1 -> queue 1, mark 7 */
  for (guint i = 0; i < 10; i++) {
    s.src = 0x0a000000 + i;
    s.dst = 0x0a0000ff;
    s.sport = (guint16) (1000 + i);
    s.dport = 5000;
    tu_frame_build (frame, &s, seq++);
    g_assert_true (emu_port_inject (r.port, frame, 100));
    expect_queue[1]++;
  }
  /* rule 2: no queue key -> RSS over the 3 queues */
  for (guint i = 0; i < 60; i++) {
    s.src = 0xc0a80000 + i * 7;
    s.dst = 0xc0a80101;
    s.sport = (guint16) (2000 + i * 13);
    s.dport = 6000;
    tu_frame_build (frame, &s, seq++);
    g_assert_true (emu_port_inject (r.port, frame, 100));
    expect_queue[rss_queue (&s, 3)]++;
  }
  /* rule 3: TCP -> queue 2 */
  TuFrameSpec t = {
    .len = 100, .proto = TU_PROTO_TCP, .src = 1, .dst = 2, .sport = 3, .dport = 4, .good_csums = TRUE
  };
  for (guint i = 0; i < 5; i++) {
    tu_frame_build (frame, &t, seq++);
    g_assert_true (emu_port_inject (r.port, frame, 100));
    expect_queue[2]++;
  }
  /* nothing takes UDP to 7000 */
  s.dport = 7000;
  tu_frame_build (frame, &s, seq++);
  g_assert_true (emu_port_inject (r.port, frame, 100));
  wait_idle (&r);

  GArray *got[3];
  for (guint qi = 0; qi < 3; qi++) {
    got[qi] = rxpkts_new ();
    rig_poll (&r, qi, got[qi], expect_queue[qi], 1000);
    g_assert_cmpuint (got[qi]->len, ==, expect_queue[qi]);
    for (guint i = 0; i < got[qi]->len; i++) {
      RxPkt *p = &g_array_index (got[qi], RxPkt, i);
      guint32 sq = tu_frame_seq (p->data, p->len);
      guint32 mark = sq < 10 ? 7 : sq < 70 ? 11259375 : 9;
      g_assert_cmpuint (p->flow_id, ==, mark);
      per_queue[qi]++;
    }
  }
  g_assert_cmpuint (per_queue[0] + per_queue[1] + per_queue[2], ==, 75);
  g_assert_cmpuint (per_queue[0], >, 0); /* RSS spread the 60 */
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_steer_miss, ==, 1);

  /* a second group without rules (its own RQ) takes what the first leaves, mark 0 */
  Rig r2 = r;
  r2.n_rx = 0;
  rig_rx (&r2, 11, 3, 3);
  Mlx5Rq *rq = mlx5_rxq_rq (r2.rx[0]);
  g_assert_true (emu_port_ops.flows_set (r.dev, 2, &rq, 1, NULL, 0, &error));
  g_assert_true (emu_port_inject (r.port, frame, 100));
  s.dport = 5000;
  tu_frame_build (frame, &s, 99);
  g_assert_true (emu_port_inject (r.port, frame, 100));
  GArray *other = rxpkts_new ();
  rig_poll (&r2, 0, other, 1, 1000);
  g_assert_cmpuint (other->len, ==, 1);
  g_assert_cmpuint (g_array_index (other, RxPkt, 0).flow_id, ==, 0);
  g_array_set_size (got[1], 0);
  rig_poll (&r, 1, got[1], 1, 1000);
  g_assert_cmpuint (got[1]->len, ==, 1); /* rule 1 still wins over the catch-all */
  /* removing group 1: its traffic falls to the catch-all */
  g_assert_true (emu_port_ops.flows_set (r.dev, 1, NULL, 0, NULL, 0, &error));
  g_assert_true (emu_port_inject (r.port, frame, 100));
  rig_poll (&r2, 0, other, 2, 1000);
  g_assert_cmpuint (other->len, ==, 2);

  /* marks past 24 bits and queues past the group are refused */
  DqFlowRule bad = { .keys = DQ_FLOW_MARK, .mark = 0x1000000 };
  g_assert_false (emu_port_ops.flows_set (r.dev, 3, &rq, 1, &bad, 1, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_FLOW);
  g_clear_error (&error);
  bad.keys = DQ_FLOW_QUEUE;
  bad.queue = 1;
  g_assert_false (emu_port_ops.flows_set (r.dev, 3, &rq, 1, &bad, 1, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_FLOW);
  g_clear_error (&error);

  mlx5_rxq_free (r2.rx[0]);
  g_array_unref (other);
  for (guint qi = 0; qi < 3; qi++)
    g_array_unref (got[qi]);
  g_free (rules);
  rig_close (&r);
}

/* The cable between two ports, and a cable to nowhere */
static void
test_cable (void)
{
  Rig a, b;
  rig_open (&a, "cab-a,peer=cab-b");
  Mlx5Txq *ta = rig_tx (&a, 64 * 2048, 1518, TRUE);
  /* b does not exist yet: frames are lost */
  guint8 f[300];
  TuFrameSpec spec = { .len = 300, .proto = TU_PROTO_UDP };
  tu_frame_build (f, &spec, 1);
  guint8 *fp[1] = { f };
  guint32 fl[1] = { 300 };
  send_all (ta, fp, fl, 1);
  g_assert_true (emu_port_wait_idle (a.port, 2 * S_NS));
  EmuCounters c;
  emu_port_counters (a.port, &c);
  g_assert_cmpuint (c.tx_no_link, ==, 1);

  rig_open (&b, "cab-b,peer=cab-a");
  rig_rx (&b, 11, 3, 3);
  rig_steer (&b, 1, NULL, 0);
  rig_rx (&a, 11, 3, 3);
  rig_steer (&a, 1, NULL, 0);
  Mlx5Txq *tb = rig_tx (&b, 64 * 2048, 1518, TRUE);
  GArray *got = rxpkts_new ();
  for (guint32 s = 0; s < 100; s++) {
    tu_frame_build (f, &spec, s);
    send_all (ta, fp, fl, 1);
  }
  rig_poll (&b, 0, got, 100, 2000);
  g_assert_cmpuint (got->len, ==, 100);
  for (guint i = 0; i < 100; i++) {
    RxPkt *p = &g_array_index (got, RxPkt, i);
    char *why = NULL;
    if (!tu_frame_check (p->data, p->len, &spec, i, &why))
      g_error ("%s", why);
    g_assert_cmpuint (p->flags & DQ_PACKET_FLAG_CSUM_OK, !=, 0);
  }
  g_array_set_size (got, 0);
  tu_frame_build (f, &spec, 777);
  send_all (tb, fp, fl, 1);
  rig_poll (&a, 0, got, 1, 2000);
  g_assert_cmpuint (got->len, ==, 1);
  g_assert_cmpuint (tu_frame_seq (g_array_index (got, RxPkt, 0).data, 300), ==, 777);
  /* b's device thread counts a frame after handing it to the cable: a's receive can come first */
  g_assert_true (emu_port_wait_idle (b.port, 2 * S_NS));
  emu_port_counters (b.port, &c);
  g_assert_cmpuint (c.rx_packets, ==, 100);
  g_assert_cmpuint (c.tx_packets, ==, 1);
  g_array_unref (got);
  rig_close (&b);
  rig_close (&a);

  Rig n;
  rig_open (&n, "cab-n,peer=none");
  rig_rx (&n, 11, 3, 3);
  rig_steer (&n, 1, NULL, 0);
  Mlx5Txq *tn = rig_tx (&n, 64 * 2048, 1518, TRUE);
  send_all (tn, fp, fl, 1);
  g_assert_true (emu_port_wait_idle (n.port, 2 * S_NS));
  emu_port_counters (n.port, &c);
  g_assert_cmpuint (c.tx_no_link, ==, 1);
  g_assert_cmpuint (c.rx_packets_phy, ==, 0);
  mlx5_txq_reclaim (tn);
  g_assert_true (mlx5_txq_idle (tn));
  rig_close (&n);
}

/* The generator: lossless back-to-back frames with sequence numbers and right checksums;
 * paced frames exactly 1/rate apart. Also a stalled device and oversize frames. */
static void
test_generator (void)
{
  Rig r;
  GError *error = NULL;
  rig_open (&r, "gen0");
  Mlx5Rxq *q = rig_rx (&r, 6, 4, 2); /* 64 packets of 64 bytes fill the ring */
  rig_steer (&r, 1, NULL, 0);
  GArray *got = rxpkts_new ();
  EmuGenConfig g = { .frame_len = 64, .count = 1000, .first_seq = 5000, .lossless = TRUE };

  g_assert_true (emu_port_generate (r.port, &g, &error));
  rig_poll (&r, 0, got, 1000, 5000);
  g_assert_cmpuint (got->len, ==, 1000);
  g_assert_cmpuint (emu_port_generated (r.port), ==, 1000);
  for (guint k = 0; k < 1000; k++) {
    RxPkt *p = &g_array_index (got, RxPkt, k);
    g_assert_cmpuint (p->len, ==, 64);
    g_assert_cmpuint (tu_frame_seq (p->data, 64), ==, 5000 + k);
    for (guint i = 46; i < 64; i++)
      g_assert_cmpuint (p->data[i], ==, (guint8) (k + i));
    g_assert_cmphex ((p->data[24] << 8) | p->data[25], ==, tu_ipv4_csum (p->data));
    g_assert_cmphex ((p->data[40] << 8) | p->data[41], ==, tu_l4_csum (p->data));
    g_assert_cmpuint (p->flags & DQ_PACKET_FLAG_CSUM_OK, !=, 0);
    if (k > 0)
      g_assert_cmpuint (p->ts, >, g_array_index (got, RxPkt, k - 1).ts);
  }
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_out_of_buffer, ==, 0);

  /* paced: 100 000 frames/s -> exactly 10 us apart */
  g_array_set_size (got, 0);
  g.count = 50;
  g.rate_pps = 100000;
  g_assert_true (emu_port_generate (r.port, &g, &error));
  rig_poll (&r, 0, got, 50, 5000);
  g_assert_cmpuint (got->len, ==, 50);
  for (guint k = 1; k < 50; k++)
    g_assert_cmpuint (
        g_array_index (got, RxPkt, k).ts - g_array_index (got, RxPkt, 0).ts, ==, k * 10000ull);

  /* a stalled device delivers nothing until it runs again */
  emu_port_fault_stall (r.port, TRUE);
  g.count = 10;
  g.rate_pps = 0;
  g_assert_true (emu_port_generate (r.port, &g, &error));
  g_array_set_size (got, 0);
  rig_poll (&r, 0, got, 1, 30);
  g_assert_cmpuint (got->len, ==, 0);
  emu_port_fault_stall (r.port, FALSE);
  rig_poll (&r, 0, got, 10, 2000);
  g_assert_cmpuint (got->len, ==, 10);

  /* frames lost on the wire, and frames too long for the MTU */
  emu_port_fault_rx_drop (r.port, 3);
  guint8 big[1600] = { 0 };
  g_assert_true (emu_port_inject (r.port, big, 1519));
  g_assert_true (emu_port_inject (r.port, big, 13));
  g.count = 10;
  g_assert_true (emu_port_generate (r.port, &g, &error));
  g_array_set_size (got, 0);
  rig_poll (&r, 0, got, 7, 2000);
  wait_idle (&r);
  rig_poll (&r, 0, got, 8, 50);
  g_assert_cmpuint (got->len, ==, 7);
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_fault_drops, ==, 3);
  g_assert_cmpuint (c.rx_oversize, ==, 2);

  g.frame_len = 2000;
  g_assert_false (emu_port_generate (r.port, &g, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_CONFIG);
  g_clear_error (&error);
  Mlx5RxCounters rc;
  mlx5_rxq_counters (q, &rc);
  g_assert_cmpuint (rc.device_errors, ==, 0);
  g_array_unref (got);
  rig_close (&r);
}

/* Polls queue `qi` until nothing more comes for 30 ms. */
static void
rig_drain (Rig *r, guint qi, GArray *out)
{
  guint before;
  do {
    before = out->len;
    rig_poll (r, qi, out, G_MAXUINT, 30);
  } while (out->len != before);
}

/* The generator's frames follow the flow rules as they change while it runs (its
 * steering is made once per template and rule set): a new queue and mark, no group,
 * RSS. Lossless, so every sequence number arrives once, in order. */
static void
test_generator_steering (void)
{
  Rig r;
  GError *error = NULL;
  DqFlowRule *rules = NULL;
  guint n_rules = 0;
  rig_open (&r, "gensteer");
  rig_rx (&r, 6, 4, 4);
  rig_rx (&r, 6, 4, 4);
  GArray *q0 = rxpkts_new (), *q1 = rxpkts_new ();

  g_assert_true (
      dq_flow_parse ("proto=udp dst-port=5000 mark=7 queue=0", &rules, &n_rules, &error));
  rig_steer (&r, 1, rules, n_rules);
  g_free (rules);
  EmuGenConfig g = { .frame_len = 64, .rate_pps = 20000, .lossless = TRUE };
  g_assert_true (emu_port_generate (r.port, &g, &error));
  rig_poll (&r, 0, q0, 20, 2000);
  g_assert_cmpuint (q0->len, >=, 20);

  /* to queue 1 with mark 9, while frames keep coming */
  g_assert_true (
      dq_flow_parse ("proto=udp dst-port=5000 mark=9 queue=1", &rules, &n_rules, &error));
  rig_steer (&r, 1, rules, n_rules);
  g_free (rules);
  rig_poll (&r, 1, q1, 20, 2000);
  g_assert_cmpuint (q1->len, >=, 20);

  /* rules that take nothing the generator makes: its frames are steering misses */
  g_assert_true (dq_flow_parse ("proto=udp dst-port=6000 queue=0", &rules, &n_rules, &error));
  rig_steer (&r, 1, rules, n_rules);
  g_free (rules);
  rig_drain (&r, 0, q0);
  rig_drain (&r, 1, q1);
  EmuCounters c0, c;
  emu_port_counters (r.port, &c0);
  /* the generator keeps sending: misses grow (within 2 s, however late the device thread
   * runs), and nothing is received meanwhile */
  const gint64 until = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
  do {
    g_usleep (5000);
    emu_port_counters (r.port, &c);
  } while (c.rx_steer_miss == c0.rx_steer_miss && g_get_monotonic_time () < until);
  g_assert_cmpuint (c.rx_steer_miss, >, c0.rx_steer_miss);
  g_assert_cmpuint (c.rx_packets, ==, c0.rx_packets);

  /* so far: queue 0 had sequence numbers 0 .. a - 1 with mark 7, queue 1 a .. b - 1
   * with mark 9, every one once */
  guint a = q0->len, b = a + q1->len;
  for (guint i = 0; i < q0->len; i++) {
    RxPkt *p = &g_array_index (q0, RxPkt, i);
    g_assert_cmpuint (tu_frame_seq (p->data, p->len), ==, i);
    g_assert_cmpuint (p->flow_id, ==, 7);
  }
  for (guint i = 0; i < q1->len; i++) {
    RxPkt *p = &g_array_index (q1, RxPkt, i);
    g_assert_cmpuint (tu_frame_seq (p->data, p->len), ==, a + i);
    g_assert_cmpuint (p->flow_id, ==, 9);
  }
  g_assert_cmpuint (c0.rx_packets, ==, b);

  /* RSS over both queues with mark 3: the template's hash picks one */
  TuFrameSpec spec = { .src = 0x0a000001, .dst = 0x0a000002, .sport = 1000, .dport = 5000 };
  guint qi = rss_queue (&spec, 2);
  g_assert_true (dq_flow_parse ("proto=udp mark=3", &rules, &n_rules, &error));
  rig_steer (&r, 1, rules, n_rules);
  g_free (rules);
  GArray *rss = rxpkts_new ();
  rig_poll (&r, qi, rss, 10, 2000);
  g_assert_cmpuint (rss->len, >=, 10);
  for (guint i = 0; i < rss->len; i++) {
    RxPkt *p = &g_array_index (rss, RxPkt, i);
    g_assert_cmpuint (p->flow_id, ==, 3);
    g_assert_cmpuint (tu_frame_seq (p->data, p->len), >=, b);
    g_assert_cmpuint (p->flags & DQ_PACKET_FLAG_CSUM_OK, !=, 0);
  }

  EmuGenConfig stop = { 0 };
  g_assert_true (emu_port_generate (r.port, &stop, &error));
  rig_drain (&r, qi, rss);
  g_array_set_size (q0, 0);
  rig_drain (&r, 1 - qi, q0);
  g_assert_cmpuint (q0->len, ==, 0);
  g_array_unref (rss);
  g_array_unref (q0);
  g_array_unref (q1);
  rig_close (&r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5/emu/config", test_config);
  g_test_add_func ("/mlx5/emu/clock-info", test_clock_info);
  g_test_add_func ("/mlx5/emu/toeplitz", test_toeplitz);
  g_test_add_func ("/mlx5/emu/loopback-strides", test_loopback_strides);
  g_test_add_func ("/mlx5/emu/iommu-rx", test_iommu_rx);
  g_test_add_func ("/mlx5/emu/iommu-tx", test_iommu_tx);
  g_test_add_func ("/mlx5/emu/inline-l2", test_inline_l2);
  g_test_add_func ("/mlx5/emu/empw", test_empw);
  g_test_add_func ("/mlx5/emu/sq-doorbell", test_sq_doorbell);
  g_test_add_func ("/mlx5/emu/out-of-buffer", test_out_of_buffer);
  g_test_add_func ("/mlx5/emu/release-threads", test_release_threads);
  g_test_add_func ("/mlx5/emu/rx-error-injection", test_rx_error_injection);
  g_test_add_func ("/mlx5/emu/checksums", test_checksums);
  g_test_add_func ("/mlx5/emu/timestamps", test_timestamps);
  g_test_add_func ("/mlx5/emu/rt-clock", test_rt_clock);
  g_test_add_func ("/mlx5/emu/steering", test_steering);
  g_test_add_func ("/mlx5/emu/cable", test_cable);
  g_test_add_func ("/mlx5/emu/generator", test_generator);
  g_test_add_func ("/mlx5/emu/generator-steering", test_generator_steering);
  return g_test_run ();
}
