/* The emulated ConnectX (mlx5/emu) driven by the host rings (mlx5/rx.c, tx.c) through
 * its control path, without the engine: configuration, TX -> cable -> RX with strides,
 * fillers and ring wrap-around, the IOMMU and fault injection on the receive side, the
 * line-rate timestamp formula, steering with marks and RSS, the cable between two ports,
 * the generator. The send side (WQE formats, doorbells, checksum offload): test-emu-tx.c.
 */
#include "dq-test-port.h"
#include "emu-rig.h"
#include "test-util.h"

#include <string.h>

__extension__ typedef unsigned __int128 U128;

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
        "pause, overhead, inline, loss)" },
    { "x,loss=1", "loss=1 is not allowed (allowed: EVERY[+PHASE]: 2 .. 1000000, PHASE < EVERY)" },
    { "x,loss=10+10", "loss=10+10 is not allowed" },
    { "x,loss=10+", "loss=10+ is not allowed" },
    { "x,loss=ten", "loss=ten is not allowed" },
    { "x,rate", "'rate' is not KEY=VALUE" },
    { "x,gen=64,gen=65",
        "emu:x: the key 'gen' is given twice in emu:x,gen=64,gen=65 "
        "(allowed: each key once)" },
    { "x,rate=25g,mtu=9000,rate=25g", "the key 'rate' is given twice" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_assert_null (emu_port_open (bad[i].spec, &error));
    tu_assert_refused (&error, bad[i].spec, bad[i].message);
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

/* loss=EVERY+PHASE: of the frames arriving, PHASE, PHASE + EVERY, ... are lost and
 * counted; the others arrive, in order */
static void
test_loss (void)
{
  Rig r;
  rig_open (&r, "loss0,loss=10+5");
  rig_rx (&r, 11, 3, 4);
  rig_steer (&r, 0x700, NULL, 0);
  TuFrameSpec spec = { .len = 100, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  guint8 frame[100];
  for (guint32 s = 0; s < 100; s++) {
    tu_frame_build (frame, &spec, s);
    g_assert_true (emu_port_inject (r.port, frame, spec.len));
  }
  wait_idle (&r);
  GArray *got = rxpkts_new ();
  rig_poll (&r, 0, got, 90, 1000);
  g_assert_cmpuint (got->len, ==, 90);
  guint32 want = 0;
  for (guint i = 0; i < got->len; i++, want++) {
    if (want % 10 == 5)
      want++;
    g_assert_cmpuint (tu_frame_seq (g_array_index (got, RxPkt, i).data, 100), ==, want);
  }
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_fault_drops, ==, 10);
  g_array_unref (got);
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

/* Opens a rig on the emulated port of spec with one RX queue (rig_rx's geometry) that
 * takes all traffic, and returns that queue. */
static Mlx5Rxq *
rig_open_one_queue (Rig *r, const char *spec, guint log_stride, guint log_strides, guint log_wqes)
{
  rig_open (r, spec);
  Mlx5Rxq *q = rig_rx (r, log_stride, log_strides, log_wqes);
  rig_steer (r, 1, NULL, 0);
  return q;
}

/* Steers the rig's group 1 (rig_steer) by the flow rules of text, which must parse. */
static void
rig_steer_rules (Rig *r, const char *text)
{
  guint n_rules = 0;
  DqFlowRule *rules = dq_test_rules_parse (text, &n_rules);
  rig_steer (r, 1, rules, n_rules);
  g_free (rules);
}

/* TX -> cable -> RX through small rings: packets of 1..16 strides, fillers exactly
 * where a packet does not fit the rest of a WQE, every byte checked, the CQ (128), RQ
 * (8 WQEs) and SQ (32 WQEBBs) wrapped hundreds of times */
static void
test_loopback_strides (void)
{
  Rig r;
  Mlx5Rxq *q = rig_open_one_queue (&r, "lb0", 6, 4, 3); /* 64-byte strides, 16 per WQE, 8 WQEs */
  Mlx5Txq *tx = rig_tx (&r, 16 * 1024, 1024, FALSE);    /* 16 slots */
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
  Mlx5Rxq *q = rig_open_one_queue (&r, "iommu0,pause=off", 6, 3, 2); /* 8 strides per WQE, 4 WQEs */
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

/* Held bursts run the ring dry: the device counts out-of-buffer drops (port and RQ
 * counters agree, exactly); after the release the ring takes packets again. */
static void
test_out_of_buffer (void)
{
  Rig r;
  Mlx5Rxq *q =
      rig_open_one_queue (&r, "oob0", 6, 4, 2); /* 16 strides per WQE, 4 WQEs: 64 strides */
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
  Mlx5Rxq *q = rig_open_one_queue (&r, "rel0", 7, 4, 4); /* 128-byte strides, 16 per WQE, 16 WQEs */
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
  Mlx5Rxq *q = rig_open_one_queue (&r, "rxerr0", 6, 3, 2);
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

/* A WQE the host posts while the RQ is in ERR, before it has read the error CQE (a burst
 * given back, a refill): the device flushes it in its next pass, with no frame to come,
 * so that the host sees every posted WQE completed and recovers the RQ. */
static void
test_rx_error_posted_after (void)
{
  Rig r;
  Mlx5Rxq *q = rig_open_one_queue (&r, "rxerr1,pause=off", 6, 3, 2); /* 8 strides, 4 WQEs */
  TuFrameSpec spec = { .len = 60, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  guint8 frame[60];
  DqPacket pkts[16];

  /* WQE 0 filled and held */
  for (guint32 s = 0; s < 8; s++) {
    tu_frame_build (frame, &spec, s);
    g_assert_true (emu_port_inject (r.port, frame, 60));
  }
  wait_idle (&r);
  Mlx5RxBurst held = { 0 };
  g_assert_true (mlx5_rxq_poll (q, &held, pkts, 16));
  g_assert_cmpuint (held.n_packets, ==, 8);
  /* the next frame completes in error: WQEs 1 (its rest), 2 and 3 are flushed */
  emu_port_fault_rx_error (r.port, 0, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  tu_frame_build (frame, &spec, 8);
  g_assert_true (emu_port_inject (r.port, frame, 60));
  wait_idle (&r);
  /* WQE 0 given back and posted again, the error not read yet; no more frames */
  mlx5_rxq_release (q, held.wqe, held.strides);
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 1);
  wait_idle (&r);
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_flushed, ==, 4);
  rig_recover (&r, 0);
  Mlx5RxCounters rc;
  mlx5_rxq_counters (q, &rc);
  g_assert_cmpuint (rc.cqe_errors, ==, 1);
  g_assert_cmpuint (rc.flushed, ==, 4);
  g_assert_cmpuint (rc.device_errors, ==, 0);
  /* and the ring goes on */
  GArray *got = rxpkts_new ();
  tu_frame_build (frame, &spec, 9);
  g_assert_true (emu_port_inject (r.port, frame, 60));
  rig_poll (&r, 0, got, 1, 1000);
  g_assert_cmpuint (got->len, ==, 1);
  g_assert_cmpuint (tu_frame_seq (g_array_index (got, RxPkt, 0).data, 60), ==, 9);
  g_array_unref (got);
  rig_close (&r);
}

/* Timestamps follow the line-rate model exactly (formula in mlx5/emu/emu.h): frames
 * sent with one doorbell leave back to back. */
static void
check_train (const char *spec_text, guint n, const guint *lens, guint overhead)
{
  Rig r;
  Mlx5Rxq *q = rig_open_one_queue (&r, spec_text, 11, 9, 3);
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
  rig_open_one_queue (&r, "rt0,clock=rt", 11, 3, 2);
  g_assert_true (r.caps.real_time_ts);
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
  rig_open (&r, "steer0,pause=off");
  for (guint i = 0; i < 3; i++)
    rig_rx (&r, 11, 3, 3);
  rig_steer_rules (&r,
      "proto=udp dst-port=5000 mark=7 queue=1; "
      "proto=udp dst-port=6000 mark=11259375; proto=tcp mark=9 queue=2");
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
  Mlx5Rxq *q = rig_open_one_queue (&r, "gen0", 6, 4, 2); /* 64 packets of 64 bytes fill the ring */
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
  rig_open (&r, "gensteer");
  rig_rx (&r, 6, 4, 4);
  rig_rx (&r, 6, 4, 4);
  GArray *q0 = rxpkts_new (), *q1 = rxpkts_new ();

  rig_steer_rules (&r, "proto=udp dst-port=5000 mark=7 queue=0");
  EmuGenConfig g = { .frame_len = 64, .rate_pps = 20000, .lossless = TRUE };
  g_assert_true (emu_port_generate (r.port, &g, &error));
  rig_poll (&r, 0, q0, 20, 2000);
  g_assert_cmpuint (q0->len, >=, 20);

  /* to queue 1 with mark 9, while frames keep coming */
  rig_steer_rules (&r, "proto=udp dst-port=5000 mark=9 queue=1");
  rig_poll (&r, 1, q1, 20, 2000);
  g_assert_cmpuint (q1->len, >=, 20);

  /* rules that take nothing the generator makes: its frames are steering misses */
  rig_steer_rules (&r, "proto=udp dst-port=6000 queue=0");
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
  rig_steer_rules (&r, "proto=udp mark=3");
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
  g_test_add_func ("/mlx5/emu/loss", test_loss);
  g_test_add_func ("/mlx5/emu/clock-info", test_clock_info);
  g_test_add_func ("/mlx5/emu/toeplitz", test_toeplitz);
  g_test_add_func ("/mlx5/emu/loopback-strides", test_loopback_strides);
  g_test_add_func ("/mlx5/emu/iommu-rx", test_iommu_rx);
  g_test_add_func ("/mlx5/emu/out-of-buffer", test_out_of_buffer);
  g_test_add_func ("/mlx5/emu/release-threads", test_release_threads);
  g_test_add_func ("/mlx5/emu/rx-error-injection", test_rx_error_injection);
  g_test_add_func ("/mlx5/emu/rx-error-posted-after", test_rx_error_posted_after);
  g_test_add_func ("/mlx5/emu/timestamps", test_timestamps);
  g_test_add_func ("/mlx5/emu/rt-clock", test_rt_clock);
  g_test_add_func ("/mlx5/emu/steering", test_steering);
  g_test_add_func ("/mlx5/emu/cable", test_cable);
  g_test_add_func ("/mlx5/emu/generator", test_generator);
  g_test_add_func ("/mlx5/emu/generator-steering", test_generator_steering);
  return g_test_run ();
}
