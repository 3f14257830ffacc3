/* The emulated ConnectX's send side (mlx5/emu/emu.c) under the host TX ring (mlx5/tx.c),
 * through its control path, without the engine: malformed WQEs and the IOMMU (error
 * CQEs, flush, recovery), inline L2 headers, enhanced multi-packet WQEs, the SQ doorbell
 * as the device takes it, checksum offload checked by an independent recomputation.
 * Every frame goes through the cable back to an RX queue and is checked there.
 */
#include "emu-rig.h"
#include "test-util.h"

#include <string.h>

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

/* Sends n frames of tu_frame_build split after `header` bytes: each frame's payload part
 * at payload + off[i] (written by `put`, or directly when put is NULL), its header copied
 * into the slot; waits for slots. */
static void
split_send_all (Rig *r, guint32 lkey, guint8 *payload, TuDeviceMem *dev, guint header,
    const guint *sizes, guint n, guint32 seq0)
{
  guint8 frame[1518];
  guint8 hdr[64][64];
  const guint8 *headers[64];
  guint32 hlens[64];
  Mlx5TxPayload pl[64];
  TuFrameSpec udp = { .proto = TU_PROTO_UDP, .good_csums = TRUE };
  gsize at = 0;
  g_assert_cmpuint (n, <=, 64);
  for (guint i = 0; i < n; i++) {
    g_assert_cmpuint (sizes[i], >=, header);
    udp.len = sizes[i];
    tu_frame_build (frame, &udp, seq0 + i);
    memcpy (hdr[i], frame, header);
    headers[i] = hdr[i];
    hlens[i] = header;
    /* device memory only through its backing, as a copy engine would put it there */
    memcpy (dev != NULL ? dev->backing + at : payload + at, frame + header, sizes[i] - header);
    pl[i] = (Mlx5TxPayload){ (guint64) (uintptr_t) (payload + at), lkey, sizes[i] - header };
    at += sizes[i] - header + 7; /* unaligned payloads */
  }
  guint sent = 0;
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (sent < n && g_get_monotonic_time () < deadline)
    sent += mlx5_txq_send_split_at (r->tx, headers + sent, hlens + sent, pl + sent, NULL, n - sent);
  g_assert_cmpuint (sent, ==, n);
}

static void
split_check (Rig *r, GArray *got, const guint *sizes, guint n, guint32 seq0)
{
  TuFrameSpec udp = { .proto = TU_PROTO_UDP, .good_csums = TRUE };
  g_array_set_size (got, 0);
  rig_poll (r, 0, got, n, 2000);
  g_assert_cmpuint (got->len, ==, n);
  for (guint i = 0; i < n; i++) {
    const RxPkt *p = &g_array_index (got, RxPkt, i);
    char *why = NULL;
    udp.len = sizes[i];
    g_assert_cmpuint (p->len, ==, sizes[i]);
    if (!tu_frame_check (p->data, p->len, &udp, seq0 + i, &why))
      g_error ("split frame %u: %s", i, why);
  }
}

/* Two-segment sends on the emulated ConnectX: headers from the slots, payloads read from
 * host memory where they lie, and from device memory the CPU cannot touch (PROT_NONE,
 * read only by copies, counted); on a port of inline mode L2 too. Every frame arrives
 * byte for byte. A payload whose registration is gone faults in the IOMMU: an error CQE,
 * the frame lost, the SQ recovered. */
static void
test_split (void)
{
  /* the shortest holds the UDP header and the 4-byte sequence number (46 bytes) */
  static const guint sizes[6] = { 60, 1518, 100, 64, 999, 47 };
  GArray *got = rxpkts_new ();
  for (guint inl = 0; inl < 2; inl++) {
    Rig r;
    Mlx5Txq *tx = rig_open_loop (&r, inl ? "split1,inline=l2" : "split0", 4, 16 * 2048, FALSE);
    GError *error = NULL;
    guint32 lkey;
    gpointer mr;

    /* host memory */
    guint8 *host = g_malloc0 (16 * 1024);
    g_assert_true (mlx5_txq_register (tx, "t", host, 16 * 1024, NULL, &lkey, &mr, &error));
    g_assert_no_error (error);
    split_send_all (&r, lkey, host, NULL, 42, sizes, 6, 10);
    split_check (&r, got, sizes, 6, 10);
    g_assert_cmpuint (mlx5_txq_completed (tx), ==, 6);

    /* device memory */
    TuDeviceMem dm;
    DqRingMemory m = tu_device_memory (&dm);
    guint8 *dev = m.alloc (16 * 1024, m.user);
    guint32 dlkey;
    gpointer dmr;
    g_assert_true (mlx5_txq_register (tx, "t", dev, 16 * 1024, &m, &dlkey, &dmr, &error));
    g_assert_no_error (error);
    g_assert_cmpuint (dlkey, !=, lkey);
    split_send_all (&r, dlkey, dev, &dm, 34, sizes, 6, 20);
    split_check (&r, got, sizes, 6, 20);
    EmuCounters c;
    emu_port_counters (r.port, &c);
    g_assert_cmpuint (c.tx_device_reads, ==, 6);
    g_assert_cmpuint (dm.reads, ==, 6);
    g_assert_cmpuint (dm.writes, ==, 0);
    g_assert_cmpuint (c.tx_cqe_errors, ==, 0);

    /* the host registration dropped: its lkey names nothing */
    mlx5_txq_unregister (tx, mr);
    split_send_all (&r, lkey, host, NULL, 42, sizes, 1, 30);
    tx_wait_recovered (&r, tx, 1);
    Mlx5TxCounters tc;
    mlx5_txq_counters (tx, &tc);
    g_assert_cmpuint (tc.last_syndrome, ==, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
    g_assert_cmpuint (tc.lost, ==, 1);
    emu_port_counters (r.port, &c);
    g_assert_cmpuint (c.iommu_faults, ==, 1);
    /* and sends on */
    split_send_all (&r, dlkey, dev, &dm, 42, sizes, 6, 40);
    split_check (&r, got, sizes, 6, 40);

    mlx5_txq_unregister (tx, dmr);
    m.free (dev, 16 * 1024, m.user);
    g_free (host);
    rig_close (&r);
  }
  g_array_unref (got);
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

/* The IOMMU on the send side, and malformed SQ WQEs: error CQEs with the PRM syndromes,
 * as a ConnectX has them: the SQ goes to ERR, the WQEs after the bad one complete with
 * flush errors unsent, the host recovers the SQ (ERR -> RST -> RDY) and sends on. */
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

/* A UDP or TCP frame of `len` bytes from src:sport to dst:dport, with `ip_options` words
 * of IPv4 options; its checksums left zero or garbage. */
static TuFrameSpec
l4_frame (guint len, guint8 proto, guint32 src, guint16 sport, guint32 dst, guint16 dport,
    guint ip_options)
{
  TuFrameSpec spec = { .len = len,
    .proto = proto,
    .src = src,
    .dst = dst,
    .sport = sport,
    .dport = dport,
    .ip_options = ip_options };
  return spec;
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
    l4_frame (60, TU_PROTO_UDP, 0x0a000001, 1, 0x0a000002, 2, 0),
    l4_frame (61, TU_PROTO_UDP, 0xc0a80001, 65535, 0xffffffff, 5000, 0),
    l4_frame (1518, TU_PROTO_UDP, 0x01020304, 9, 0x05060708, 9, 3),
    l4_frame (99, TU_PROTO_TCP, 0x0a0a0a0a, 80, 0x0b0b0b0b, 4000, 0),
    l4_frame (1000, TU_PROTO_TCP, 0x7f000001, 1, 0x7f000001, 1, 10),
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

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5/emu/iommu-tx", test_iommu_tx);
  g_test_add_func ("/mlx5/emu/inline-l2", test_inline_l2);
  g_test_add_func ("/mlx5/emu/empw", test_empw);
  g_test_add_func ("/mlx5/emu/split", test_split);
  g_test_add_func ("/mlx5/emu/sq-doorbell", test_sq_doorbell);
  g_test_add_func ("/mlx5/emu/checksums", test_checksums);
  return g_test_run ();
}
