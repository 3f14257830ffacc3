/* Host TX ring (mlx5/tx.c) against a device played by the test (on the port of
 * mini-port.h): the test reads the SQ doorbell record and the WQEs the host wrote, checks every field against the PRM
 * layout, and writes TX CQEs by hand (including ones that name no WQE in flight).
 */
#include "mini-port.h"

#include <string.h>

#define TEST_LKEY 0x00beef02u

/* the port, and what the device executed */
typedef struct {
  MiniPort port;
  guint32 hw_ci;      /* WQEBBs executed */
  GPtrArray *frames;  /* GBytes of what was sent */
  GArray *cs_flags;   /* guint8 per frame */
  GArray *waits;      /* guint64 per WAIT WQE: its time in the real-time format */
  GArray *wait_at;    /* guint per WAIT WQE: the frames sent before it */
  guint inline_bytes; /* the inline headers the WQEs must carry */
  guint empw_wqes;
  guint split_sends; /* SENDs of two data segments */
  /* payload memory (two-segment sends): registered with lkey PAYLOAD_LKEY */
  const guint8 *payload_addr;
  gsize payload_size;
  gpointer payload_mr; /* its registration (txdev_payload_new) */
  /* the TX slots (the first memory registered) */
  const guint8 *slab;
  gsize slab_size;
} TxDev;

#define PAYLOAD_LKEY 0x00cafe03u

static void
txdev_init (TxDev *d)
{
  memset (d, 0, sizeof *d);
  mini_port_init (&d->port, TEST_LKEY);
  d->frames = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  d->cs_flags = g_array_new (FALSE, FALSE, 1);
  d->waits = g_array_new (FALSE, FALSE, sizeof (guint64));
  d->wait_at = g_array_new (FALSE, FALSE, sizeof (guint));
}

/* A device whose port has minimum inline mode L2: the host must inline each frame's first
 * 18 bytes. Returns the capabilities of that port. */
static Mlx5Caps
txdev_init_inline_l2 (TxDev *d)
{
  txdev_init (d);
  d->inline_bytes = MLX5_ETH_L2_INLINE_SIZE;
  Mlx5Caps caps = mini_port_caps;
  caps.tx_inline_bytes = MLX5_ETH_L2_INLINE_SIZE;
  return caps;
}

static void
txdev_clear (TxDev *d)
{
  g_ptr_array_unref (d->frames);
  g_array_unref (d->cs_flags);
  g_array_unref (d->waits);
  g_array_unref (d->wait_at);
}

/* A WAIT WQE, byte for byte: ctrl (opmod WAIT_TIME, 3 DS, unsignalled) and the wait
 * segment (CYCLIC_SMALLER on time, the 8 s mask); keeps its time. */
static void
txdev_wait (TxDev *d, const guint8 *wqe)
{
  guint8 ctrl[8] = { MLX5_OPC_MOD_WAIT_TIME, 0, 0, MLX5_OPCODE_WAIT, 0x12, 0x34, 0x56, 0x03 };
  ctrl[1] = (guint8) (d->hw_ci >> 8);
  ctrl[2] = (guint8) d->hw_ci;
  g_assert_cmpmem (wqe, 8, ctrl, 8);
  g_assert_cmpuint (wqe[11], ==, MLX5_WQE_CTRL_CQ_ONLY_FIRST_ERR);
  const guint8 seg_head[16] = { 0, 0, 0, 5 };
  g_assert_cmpmem (wqe + 16, 16, seg_head, 16);
  const guint8 mask[8] = { 0, 0, 0, 0x07, 0xff, 0xff, 0xff, 0xff };
  g_assert_cmpmem (wqe + 40, 8, mask, 8);
  guint64 value;
  memcpy (&value, wqe + 32, 8);
  value = be64toh (value);
  g_assert_cmpuint (value & ~G_GUINT64_CONSTANT (0x7ffffffff), ==, 0);
  g_array_append_val (d->waits, value);
  g_array_append_val (d->wait_at, d->frames->len);
}

static void
txdev_cqe (TxDev *d, guint8 opcode, guint16 wqe_counter, guint8 syndrome)
{
  volatile struct mlx5_cqe64 *cqe = mini_port_cqe_next (&d->port);
  cqe->wqe_counter = htobe16 (wqe_counter);
  cqe->sop_drop_qpn = htobe32 (MINI_PORT_SQN);
  if (opcode == MLX5_CQE_REQ_ERR)
    ((volatile struct mlx5_err_cqe *) cqe)->syndrome = syndrome;
  mini_port_cqe_publish (&d->port, cqe, opcode);
}

/* An eMPW WQE at hw_ci, byte for byte: opcode 0x29, 2 + k DS, the Ethernet segment with
 * the checksum flags and nothing inline, then k data segments (each 16-byte unit where it
 * lies in the ring); keeps its k frames. Returns its WQEBBs. */
static guint
txdev_empw (TxDev *d, gboolean complete)
{
  guint32 mask = (1u << d->port.sq->log_wqebbs) - 1;
  const guint8 *wqe = d->port.sq->wqes + (gsize) (d->hw_ci & mask) * 64;
  guint32 qpn_ds = be32toh (((const struct mlx5_wqe_ctrl_seg *) wqe)->qpn_ds);
  guint ds = qpn_ds & 0x3f, k = ds - 2;
  g_assert_cmpuint (qpn_ds >> 8, ==, MINI_PORT_SQN);
  g_assert_cmpuint (k, >=, 2);
  g_assert_cmpuint (k, <=, MLX5_TX_EMPW_MAX_PACKETS);
  const struct mlx5_wqe_eth_seg *eth = (const struct mlx5_wqe_eth_seg *) (wqe + 16);
  g_assert_cmpuint (be16toh (eth->inline_hdr_sz), ==, 0);
  g_assert_cmpuint (eth->cs_flags, ==, MLX5_ETH_WQE_L3_CSUM | MLX5_ETH_WQE_L4_CSUM);
  for (guint j = 2; j < ds; j++) {
    const guint8 *unit = d->port.sq->wqes + (gsize) ((d->hw_ci + j / 4) & mask) * 64 + (j % 4) * 16;
    const struct mlx5_wqe_data_seg *seg = (const struct mlx5_wqe_data_seg *) unit;
    g_assert_cmpuint (be32toh (seg->lkey), ==, TEST_LKEY);
    guint32 len = be32toh (seg->byte_count);
    g_assert_cmpuint (len, <=, MLX5_TX_EMPW_MAX_LEN);
    guint8 *addr = (guint8 *) (uintptr_t) be64toh (seg->addr);
    g_assert_true (addr >= d->port.mr_addr && addr + len <= d->port.mr_addr + d->port.mr_size);
    g_ptr_array_add (d->frames, g_bytes_new (addr, len));
    g_array_append_val (d->cs_flags, eth->cs_flags);
  }
  guint8 ce = wqe[11] & 0x0c;
  if (complete && ce == MLX5_WQE_CTRL_CQ_UPDATE)
    txdev_cqe (d, MLX5_CQE_REQ, (guint16) d->hw_ci, 0);
  d->empw_wqes++;
  return (ds + 3) / 4;
}

/* Executes the WQEs up to the doorbell record: checks each against the PRM layout and
 * the host's rules, keeps the frame, and completes signalled WQEs. `complete` FALSE
 * keeps CQEs back (the host must then run out of slots). Returns WQEs executed. */
static guint
txdev_execute (TxDev *d, gboolean complete)
{
  guint32 pi = be32toh (d->port.sq->dbrec[MLX5_SND_DBR]);
  guint32 mask = (1u << d->port.sq->log_wqebbs) - 1;
  guint n = 0;

  g_assert_cmpuint (pi, <=, 0xffff);
  if (d->slab == NULL) {
    d->slab = d->port.mr_addr;
    d->slab_size = d->port.mr_size;
  }
  while ((guint16) d->hw_ci != (guint16) pi) {
    const guint8 *wqe = d->port.sq->wqes + (gsize) (d->hw_ci & mask) * 64;
    const struct mlx5_wqe_ctrl_seg *ctrl = (const struct mlx5_wqe_ctrl_seg *) wqe;
    const struct mlx5_wqe_eth_seg *eth = (const struct mlx5_wqe_eth_seg *) (wqe + 16);
    guint inl = be16toh (eth->inline_hdr_sz);
    guint32 opmod_idx_opcode = be32toh (ctrl->opmod_idx_opcode);
    guint32 qpn_ds = be32toh (ctrl->qpn_ds);

    if ((opmod_idx_opcode & 0xff) == MLX5_OPCODE_WAIT) {
      txdev_wait (d, wqe);
      d->hw_ci++;
      n++;
      continue;
    }
    if ((opmod_idx_opcode & 0xff) == MLX5_OPCODE_ENHANCED_MPSW) {
      g_assert_cmpuint ((opmod_idx_opcode >> 8) & 0xffff, ==, d->hw_ci & 0xffff);
      d->hw_ci += txdev_empw (d, complete);
      n++;
      continue;
    }
    g_assert_cmpuint (opmod_idx_opcode & 0xff, ==, MLX5_OPCODE_SEND);
    g_assert_cmpuint ((opmod_idx_opcode >> 8) & 0xffff, ==, d->hw_ci & 0xffff);
    g_assert_cmpuint (opmod_idx_opcode >> 24, ==, 0);
    g_assert_cmpuint (qpn_ds >> 8, ==, MINI_PORT_SQN);
    g_assert_cmpuint (ctrl->signature, ==, 0);
    g_assert_cmpuint (ctrl->imm, ==, 0);
    guint8 ce = ctrl->fm_ce_se & 0x0c;
    g_assert_true (ce == MLX5_WQE_CTRL_CQ_UPDATE || ce == MLX5_WQE_CTRL_CQ_ONLY_FIRST_ERR);
    g_assert_cmpuint (be16toh (eth->mss), ==, 0);
    /* the frame: its inline part (18 bytes: 2 in the segment, 16 in the next unit), then
     * what the data segments point at: the slot, and for a two-segment send the payload
     * (each unit where it lies in the ring: a WQE of 5 DS takes two WQEBBs) */
    GByteArray *frame = g_byte_array_new ();
    g_byte_array_append (frame, eth->inline_hdr_start, inl);
    guint ds = qpn_ds & 0x3f, first = inl > 0 ? 3 : 2;
    g_assert_cmpuint (inl, <=, 18);
    g_assert_cmpuint (ds, >=, first);
    g_assert_cmpuint (ds, <=, first + 2);
    /* a frame no longer than the inline part has no data segment */
    g_assert_true (ds > first || inl > 0);
    for (guint u = first; u < ds; u++) {
      const struct mlx5_wqe_data_seg *seg = (const struct mlx5_wqe_data_seg *) (d->port.sq->wqes +
          (gsize) ((d->hw_ci + u / 4) & mask) * 64 + (u % 4) * 16);
      guint32 len = be32toh (seg->byte_count);
      guint8 *addr = (guint8 *) (uintptr_t) be64toh (seg->addr);
      if (u == first + 1 || be32toh (seg->lkey) == PAYLOAD_LKEY) {
        /* the payload segment: the last, into the payload memory */
        g_assert_cmpuint (u, ==, ds - 1);
        g_assert_cmpuint (be32toh (seg->lkey), ==, PAYLOAD_LKEY);
        g_assert_true (addr >= d->payload_addr && addr + len <= d->payload_addr + d->payload_size);
        d->split_sends++;
      } else {
        g_assert_cmpuint (be32toh (seg->lkey), ==, TEST_LKEY);
        g_assert_true (addr >= d->slab && addr + len <= d->slab + d->slab_size);
      }
      g_byte_array_append (frame, addr, len);
    }
    /* exactly the bytes the port wants inline: its 18 (or all of a shorter frame) */
    g_assert_cmpuint (inl, ==, MIN (d->inline_bytes, frame->len));
    g_ptr_array_add (d->frames, g_byte_array_free_to_bytes (frame));
    g_array_append_val (d->cs_flags, eth->cs_flags);
    if (complete && ce == MLX5_WQE_CTRL_CQ_UPDATE)
      txdev_cqe (d, MLX5_CQE_REQ, (guint16) d->hw_ci, 0);
    d->hw_ci += (ds + 3) / 4;
    n++;
  }
  return n;
}

static Mlx5Txq *
txq_new (TxDev *d, gsize ring, guint max_packet, guint signal_every)
{
  return mini_txq_new (
      &mini_port_ops, &d->port, &mini_port_caps, ring, max_packet, signal_every, TRUE);
}

/* A ring of `ring` bytes of 2 KiB slots on the port of `caps`, cfg as given (geometry
 * chosen), a CQE every `every` frames */
static Mlx5Txq *
txq_new_cfg (TxDev *d, const Mlx5Caps *caps, Mlx5TxConfig *cfg, gsize ring, guint every)
{
  GError *error = NULL;
  g_assert_true (mlx5_tx_geometry_choose (caps, "t", ring, 2048, every, cfg, &error));
  Mlx5Txq *q = mlx5_txq_new (&mini_port_ops, &d->port, cfg, &error);
  g_assert_no_error (error);
  return q;
}

/* An eMPW ring with checksums: 64 slots of 2 KiB, 128 WQEBBs, a CQE every 32 frames */
static Mlx5Txq *
txq_new_empw (TxDev *d)
{
  Mlx5TxConfig cfg = { .csum = TRUE, .empw = TRUE };
  return txq_new_cfg (d, &mini_port_caps, &cfg, 64 * 2048, 32);
}

static void
fill_frame (guint8 *buf, guint len, guint32 seq)
{
  for (guint i = 0; i < len; i++)
    buf[i] = (guint8) (seq * 7 + i);
}

/* Fills f[i] (lens[i] bytes, fill_frame seq i) for i < n and sends them, frames[i]
 * pointing at f[i], in one burst. */
static void
fill_and_send (
    Mlx5Txq *q, guint8 f[][60], const guint8 *const *frames, const guint32 *lens, guint n)
{
  for (guint i = 0; i < n; i++)
    fill_frame (f[i], lens[i], i);
  g_assert_cmpuint (mlx5_txq_send (q, frames, lens, n), ==, n);
}

static void
check_frame (GBytes *bytes, guint len, guint32 seq)
{
  gsize size;
  const guint8 *data = g_bytes_get_data (bytes, &size);
  g_assert_cmpuint (size, ==, len);
  for (guint i = 0; i < len; i++)
    if (data[i] != (guint8) (seq * 7 + i))
      g_error ("frame %u byte %u: %02x, expected %02x", seq, i, data[i], (guint8) (seq * 7 + i));
}

/* ---------------------------------------------------------------------------------- */

static void
test_geometry (void)
{
  Mlx5TxConfig cfg = { 0 };
  GError *error = NULL;

  g_assert_true (mlx5_tx_geometry_choose (&mini_port_caps, "t", 0, 1518, 0, &cfg, &error));
  g_assert_cmpuint (cfg.log_slot_size, ==, 11);
  g_assert_cmpuint (cfg.log_slots, ==, 11);
  g_assert_cmpuint (cfg.log_wqebbs, ==, 12);
  g_assert_cmpuint (cfg.signal_every, ==, 32);

  g_assert_true (mlx5_tx_geometry_choose (&mini_port_caps, "t", 4096, 60, 0, &cfg, &error));
  g_assert_cmpuint (cfg.log_slot_size, ==, 6);
  g_assert_cmpuint (cfg.log_slots, ==, 6);
  g_assert_cmpuint (cfg.signal_every, ==, 32);

  g_assert_true (mlx5_tx_geometry_choose (&mini_port_caps, "t", 4096, 512, 0, &cfg, &error));
  g_assert_cmpuint (cfg.log_slots, ==, 3);
  g_assert_cmpuint (cfg.signal_every, ==, 4); /* at most half the slots */

  g_assert_false (mlx5_tx_geometry_choose (&mini_port_caps, "emu:t", 4096, 2000, 0, &cfg, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message,
      "emu:t: TX ring-size 4096 is too small for "
      "slots of 2048 bytes (allowed: ring-size >= 8192)"));
  g_clear_error (&error);
  g_assert_false (mlx5_tx_geometry_choose (&mini_port_caps, "t", 4096, 512, 5, &cfg, &error));
  g_assert_nonnull (strstr (error->message, "(allowed 1 .. 4)"));
  g_clear_error (&error);
  g_assert_false (mlx5_tx_geometry_choose (&mini_port_caps, "t", 0, 13, 0, &cfg, &error));
  g_assert_nonnull (strstr (error->message,
      "max-packet-size 13 is out of range "
      "(allowed 14 .. 65535)"));
  g_clear_error (&error);
}

/* the bytes of the WQEs, the doorbell record and the BlueFlame writes */
static void
test_wqe_layout (void)
{
  TxDev d;
  txdev_init (&d);
  Mlx5Txq *q = txq_new (&d, 64 * 16, 64, 2); /* 16 slots of 64 bytes, CQE every 2 */
  guint8 f[3][60];
  const guint8 *frames[3] = { f[0], f[1], f[2] };
  guint32 lens[3] = { 60, 42, 14 };

  fill_and_send (q, f, frames, lens, 3);
  g_assert_cmpuint (be32toh (d.port.sq->dbrec[MLX5_SND_DBR]), ==, 3);
  /* the doorbell: the first 8 bytes of the last WQE's ctrl segment, at BF offset 0 */
  g_assert_cmpmem (d.port.bf, 8, d.port.sq->wqes + 2 * 64, 8);
  const struct mlx5_wqe_ctrl_seg *c0 = (const struct mlx5_wqe_ctrl_seg *) d.port.sq->wqes;
  const struct mlx5_wqe_ctrl_seg *c1 = (const struct mlx5_wqe_ctrl_seg *) (d.port.sq->wqes + 64);
  const struct mlx5_wqe_ctrl_seg *c2 = (const struct mlx5_wqe_ctrl_seg *) (d.port.sq->wqes + 128);
  /* byte for byte: opmod_idx_opcode = 00 | idx(16) | 0a, qpn_ds = sqn(24) | 03 */
  const guint8 expect_ctrl1[8] = { 0x00, 0x00, 0x01, 0x0a, 0x12, 0x34, 0x56, 0x03 };
  g_assert_cmpmem (c1, 8, expect_ctrl1, 8);
  g_assert_cmpuint (c0->fm_ce_se, ==, MLX5_WQE_CTRL_CQ_ONLY_FIRST_ERR);
  g_assert_cmpuint (c1->fm_ce_se, ==, MLX5_WQE_CTRL_CQ_UPDATE); /* every 2nd */
  g_assert_cmpuint (c2->fm_ce_se, ==, MLX5_WQE_CTRL_CQ_UPDATE); /* last of the burst */
  const guint8 *eth = d.port.sq->wqes + 64 + 16;
  g_assert_cmpuint (eth[4], ==, MLX5_ETH_WQE_L3_CSUM | MLX5_ETH_WQE_L4_CSUM);
  g_assert_cmpuint (txdev_execute (&d, TRUE), ==, 3);
  for (guint i = 0; i < 3; i++) {
    check_frame (g_ptr_array_index (d.frames, i), lens[i], i);
    g_assert_cmpuint (g_array_index (d.cs_flags, guint8, i), ==, 0xc0);
  }

  /* the next doorbell uses the other half of the BlueFlame buffer */
  g_assert_cmpuint (mlx5_txq_send (q, frames, lens, 1), ==, 1);
  g_assert_cmpmem (d.port.bf + MINI_PORT_BF_SIZE, 8, d.port.sq->wqes + 3 * 64, 8);
  g_assert_cmpuint (mlx5_txq_send (q, frames, lens, 1), ==, 1);
  g_assert_cmpmem (d.port.bf, 8, d.port.sq->wqes + 4 * 64, 8);

  Mlx5TxCounters c;
  mlx5_txq_counters (q, &c);
  g_assert_cmpuint (c.packets, ==, 5);
  g_assert_cmpuint (c.bytes, ==, 60 + 42 + 14 + 60 + 60);
  g_assert_cmpuint (c.doorbells, ==, 3);
  mlx5_txq_free (q);
  txdev_clear (&d);
}

/* Send scheduling: a WAIT WQE before each timed frame, none before the others; the
 * times in the real-time format under the 8 s mask; a WAIT takes a WQEBB but no slot,
 * and the CQE of the SEND after it completes both. */
static void
test_wait_layout (void)
{
  TxDev d;
  txdev_init (&d);
  Mlx5Txq *q = txq_new (&d, 64 * 8, 64, 4); /* 8 slots, 16 WQEBBs */
  guint8 f[8][60];
  const guint8 *frames[8];
  guint32 lens[8];
  /* 1 700 000 123.456789012 s: seconds mod 8 = 3 */
  const guint64 t = G_GUINT64_CONSTANT (1700000123456789012);
  guint64 times[8] = { 0, t, t + 1000, 0, t + 2000000000, 0, 0, t + 9 };
  for (guint i = 0; i < 8; i++) {
    frames[i] = f[i];
    lens[i] = 60;
    fill_frame (f[i], 60, i);
  }
  for (guint round = 0; round < 3; round++) {
    g_array_set_size (d.waits, 0);
    g_array_set_size (d.wait_at, 0);
    g_ptr_array_set_size (d.frames, 0);
    g_assert_cmpuint (mlx5_txq_send_at (q, frames, lens, times, 8), ==, 8);
    g_assert_cmpuint (txdev_execute (&d, TRUE), ==, 12);
    g_assert_cmpuint (d.frames->len, ==, 8);
    for (guint i = 0; i < 8; i++)
      check_frame (g_ptr_array_index (d.frames, i), 60, i);
    const guint64 want[4] = { (G_GUINT64_CONSTANT (3) << 32) | 456789012,
      (G_GUINT64_CONSTANT (3) << 32) | 456790012, (G_GUINT64_CONSTANT (5) << 32) | 456789012,
      (G_GUINT64_CONSTANT (3) << 32) | 456789021 };
    const guint want_at[4] = { 1, 2, 4, 7 };
    g_assert_cmpuint (d.waits->len, ==, 4);
    for (guint k = 0; k < 4; k++) {
      g_assert_cmphex (g_array_index (d.waits, guint64, k), ==, want[k]);
      g_assert_cmpuint (g_array_index (d.wait_at, guint, k), ==, want_at[k]);
    }
    mlx5_txq_reclaim (q);
    g_assert_true (mlx5_txq_idle (q));
    g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 8);
  }
  Mlx5TxCounters c;
  mlx5_txq_counters (q, &c);
  g_assert_cmpuint (c.packets, ==, 24);
  g_assert_cmpuint (c.waits, ==, 12);
  mlx5_txq_free (q);
  txdev_clear (&d);
}

/* A port of minimum inline mode L2: each SEND WQE carries the frame's first 18 bytes in
 * its Ethernet segment (inline_hdr_sz 18, 2 bytes in the first unit, 16 in the next) and
 * the data segment the rest, past them (4 DS, one WQEBB); a frame of 16 bytes is all
 * inline, with no data segment (3 DS). */
static void
test_inline_l2 (void)
{
  TxDev d;
  Mlx5Caps caps = txdev_init_inline_l2 (&d);
  Mlx5Txq *q = mini_txq_new (&mini_port_ops, &d.port, &caps, 64 * 16, 64, 2, TRUE);
  guint8 f[3][60];
  const guint8 *frames[3] = { f[0], f[1], f[2] };
  guint32 lens[3] = { 60, 16, 18 };
  fill_and_send (q, f, frames, lens, 3);

  const guint8 *w0 = d.port.sq->wqes;
  g_assert_cmpuint (w0[7] & 0x3f, ==, 4);
  const guint8 eth_head[16] = { 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 18, f[0][0], f[0][1] };
  g_assert_cmpmem (w0 + 16, 16, eth_head, 16);
  g_assert_cmpmem (w0 + 32, 16, f[0] + 2, 16);
  const struct mlx5_wqe_data_seg *ds = (const struct mlx5_wqe_data_seg *) (w0 + 48);
  g_assert_cmpuint (be32toh (ds->byte_count), ==, 60 - 18);
  const guint8 *slot0 = (const guint8 *) (uintptr_t) be64toh (ds->addr) - 18;
  g_assert_cmpmem (slot0, 60, f[0], 60);
  /* 16 and 18 bytes: all inline, no data segment */
  g_assert_cmpuint (w0[64 + 7] & 0x3f, ==, 3);
  g_assert_cmpuint (w0[64 + 16 + 13], ==, 16);
  g_assert_cmpuint (w0[128 + 7] & 0x3f, ==, 3);
  g_assert_cmpuint (w0[128 + 16 + 13], ==, 18);

  g_assert_cmpuint (txdev_execute (&d, TRUE), ==, 3);
  for (guint i = 0; i < 3; i++)
    check_frame (g_ptr_array_index (d.frames, i), lens[i], i);
  mlx5_txq_reclaim (q);
  g_assert_true (mlx5_txq_idle (q));
  mlx5_txq_free (q);
  txdev_clear (&d);
}

/* eMPW: a run of small unscheduled frames goes out as WQEs of up to 32 frames, one data
 * segment each, wrapping at the ring's end; a frame over MLX5_TX_EMPW_MAX_LEN or with a
 * time goes on its own; every frame byte for byte, all slots back through the CQEs, over
 * many passes of the ring. */
static void
test_empw (void)
{
  TxDev d;
  txdev_init (&d);
  Mlx5Txq *q = txq_new_empw (&d);
  guint8 f[40][1500];
  const guint8 *frames[40];
  guint32 lens[40];
  guint64 times[40] = { 0 };
  guint32 seq = 0;
  guint expect_wqes = 0;
  for (guint round = 0; round < 50; round++) {
    g_ptr_array_set_size (d.frames, 0);
    g_array_set_size (d.cs_flags, 0);
    guint first_empw = d.empw_wqes;
    /* 40 frames: 60 .. 1024 bytes, one of 1500 at 35, one with a time at 20 */
    for (guint i = 0; i < 40; i++) {
      lens[i] = i == 35 ? 1500 : 60 + (seq + i) % 965;
      fill_frame (f[i], lens[i], seq + i);
      frames[i] = f[i];
      times[i] = i == 20 ? G_GUINT64_CONSTANT (1700000000000000000) : 0;
    }
    g_assert_cmpuint (mlx5_txq_send_at (q, frames, lens, round % 2 ? times : NULL, 40), ==, 40);
    txdev_execute (&d, TRUE);
    g_assert_cmpuint (d.frames->len, ==, 40);
    for (guint i = 0; i < 40; i++)
      check_frame (g_ptr_array_index (d.frames, i), lens[i], seq + i);
    /* without times: 32 + 3 in eMPW, 1500 alone, 4 in eMPW; with the time at 20: 20 in
     * eMPW, 20 alone (behind its WAIT), 14 in eMPW, 1500 alone, 4 in eMPW */
    g_assert_cmpuint (d.empw_wqes - first_empw, ==, 3);
    g_assert_cmpuint (d.waits->len, ==, (round + 1) / 2);
    expect_wqes += round % 2 ? 5 : 4;
    mlx5_txq_reclaim (q);
    g_assert_true (mlx5_txq_idle (q));
    g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 64);
    seq += 40;
  }
  Mlx5TxCounters c;
  mlx5_txq_counters (q, &c);
  g_assert_cmpuint (c.packets, ==, 2000);
  g_assert_cmpuint (c.wqes, ==, expect_wqes);
  g_assert_cmpuint (c.empw_wqes, ==, d.empw_wqes);
  mlx5_txq_free (q);
  txdev_clear (&d);
}

/* Registers `size` bytes at `mem` as the payload memory (lkey PAYLOAD_LKEY) */
static gpointer
txdev_register_payload (TxDev *d, Mlx5Txq *q, const guint8 *mem, gsize size)
{
  GError *error = NULL;
  guint32 lkey = 0;
  gpointer mr = NULL;
  d->slab = d->port.mr_addr;
  d->slab_size = d->port.mr_size;
  d->port.lkey = PAYLOAD_LKEY;
  g_assert_true (mlx5_txq_register (q, "t", (gpointer) mem, size, NULL, &lkey, &mr, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (lkey, ==, PAYLOAD_LKEY);
  d->payload_addr = mem;
  d->payload_size = size;
  return mr;
}

/* `size` bytes of payload memory, filled (fill_frame seq `seq`) and registered */
static guint8 *
txdev_payload_new (TxDev *d, Mlx5Txq *q, gsize size, guint32 seq)
{
  guint8 *payload = g_malloc (size);
  fill_frame (payload, size, seq);
  d->payload_mr = txdev_register_payload (d, q, payload, size);
  return payload;
}

/* Frees the ring, the payload memory of txdev_payload_new and the device. */
static void
txdev_close_split (TxDev *d, Mlx5Txq *q, guint8 *payload)
{
  mlx5_txq_unregister (q, d->payload_mr);
  mlx5_txq_free (q);
  g_free (payload);
  txdev_clear (d);
}

/* With header `bad` cut to `len` bytes, a split send of n frames goes only as far as the
 * frame before it. */
static void
expect_split_stops_at (Mlx5Txq *q, const guint8 **headers, guint32 *hlens, const Mlx5TxPayload *pl,
    guint n, guint bad, guint32 len)
{
  hlens[bad] = len;
  g_assert_cmpuint (mlx5_txq_send_split_at (q, headers, hlens, pl, NULL, n), ==, bad);
}

/* Two-segment sends: the header copied into the slot, the payload read where it lies; the
 * WQE byte for byte (4 DS: ctrl, Ethernet segment, slot, payload); never in an eMPW WQE;
 * the frames rebuilt by the device equal header + payload; completions count the frames
 * done with. */
static void
test_split_layout (void)
{
  TxDev d;
  txdev_init (&d);
  Mlx5Txq *q = txq_new_empw (&d);
  guint8 *payload = txdev_payload_new (&d, q, 16 * 1024, 1);

  guint8 hdr[8][46];
  const guint8 *headers[8];
  guint32 hlens[8];
  Mlx5TxPayload pl[8];
  for (guint i = 0; i < 8; i++) {
    hlens[i] = 14 + i * 4;
    fill_frame (hdr[i], hlens[i], 100 + i);
    headers[i] = hdr[i];
    pl[i] = (Mlx5TxPayload){ (guint64) (uintptr_t) (payload + i * 1000), PAYLOAD_LKEY, 100 * i };
  }
  g_assert_cmpuint (mlx5_txq_posted (q), ==, 0);
  g_assert_cmpuint (mlx5_txq_send_split_at (q, headers, hlens, pl, NULL, 8), ==, 8);
  g_assert_cmpuint (mlx5_txq_posted (q), ==, 8);

  /* WQE 1: ctrl (index 1, 4 DS), Ethernet segment (checksums, nothing inline), the slot's
   * 18 header bytes, the payload's 100 bytes */
  const guint8 *w1 = d.port.sq->wqes + 64;
  const guint8 ctrl[8] = { 0, 0, 1, MLX5_OPCODE_SEND, 0x12, 0x34, 0x56, 0x04 };
  g_assert_cmpmem (w1, 8, ctrl, 8);
  const guint8 eth[16] = { 0, 0, 0, 0, MLX5_ETH_WQE_L3_CSUM | MLX5_ETH_WQE_L4_CSUM };
  g_assert_cmpmem (w1 + 16, 16, eth, 16);
  const struct mlx5_wqe_data_seg *s0 = (const struct mlx5_wqe_data_seg *) (w1 + 32);
  const struct mlx5_wqe_data_seg *s1 = (const struct mlx5_wqe_data_seg *) (w1 + 48);
  g_assert_cmpuint (be32toh (s0->byte_count), ==, 18);
  g_assert_cmpuint (be32toh (s0->lkey), ==, TEST_LKEY);
  g_assert_cmpmem ((const guint8 *) (uintptr_t) be64toh (s0->addr), 18, hdr[1], 18);
  g_assert_cmpuint (be32toh (s1->byte_count), ==, 100);
  g_assert_cmpuint (be32toh (s1->lkey), ==, PAYLOAD_LKEY);
  g_assert_true ((const guint8 *) (uintptr_t) be64toh (s1->addr) == payload + 1000);

  /* frame 0 has an empty payload: no segment for it (0 bytes would mean 2 GiB) */
  g_assert_cmpuint (d.port.sq->wqes[7] & 0x3f, ==, 3);
  g_assert_cmpuint (txdev_execute (&d, FALSE), ==, 8);
  g_assert_cmpuint (d.split_sends, ==, 7);
  g_assert_cmpuint (d.empw_wqes, ==, 0);
  for (guint i = 0; i < 8; i++) {
    gsize size;
    const guint8 *f = g_bytes_get_data (g_ptr_array_index (d.frames, i), &size);
    g_assert_cmpuint (size, ==, hlens[i] + 100 * i);
    g_assert_cmpmem (f, hlens[i], hdr[i], hlens[i]);
    g_assert_cmpmem (f + hlens[i], 100 * i, payload + i * 1000, 100 * i);
  }
  /* nothing completed yet: the payloads are still the device's */
  g_assert_cmpuint (mlx5_txq_completed (q), ==, 0);
  txdev_cqe (&d, MLX5_CQE_REQ, 7, 0);
  g_assert_cmpuint (mlx5_txq_completed (q), ==, 8);
  g_assert_true (mlx5_txq_idle (q));

  /* a header of 0 bytes is refused: the frames before it go */
  expect_split_stops_at (q, headers, hlens, pl, 8, 3, 0);
  txdev_close_split (&d, q, payload);
}

/* Two-segment sends on a port of minimum inline mode L2: 18 header bytes inline, the rest
 * of the header and the payload in two data segments: 5 DS, two WQEBBs, the second unit
 * pair in the next WQEBB (wrapping at the ring's end); with a WAIT before some, over many
 * passes of the ring (four WQEBBs a slot); a header shorter than 18 bytes is refused. */
static void
test_split_inline (void)
{
  TxDev d;
  Mlx5Caps caps = txdev_init_inline_l2 (&d);
  Mlx5TxConfig cfg = { .inline_bytes = MLX5_ETH_L2_INLINE_SIZE };
  Mlx5Txq *q = txq_new_cfg (&d, &caps, &cfg, 16 * 2048, 4);
  g_assert_cmpuint (cfg.log_slots, ==, 4);
  g_assert_cmpuint (cfg.log_wqebbs, ==, 6);
  guint8 *payload = txdev_payload_new (&d, q, 64 * 1024, 3);

  guint8 hdr[12][64];
  const guint8 *headers[12];
  guint32 hlens[12];
  guint64 times[12];
  Mlx5TxPayload pl[12];
  guint sent = 0;
  for (guint round = 0; round < 40; round++) {
    g_ptr_array_set_size (d.frames, 0);
    guint waits_before = d.waits->len;
    for (guint i = 0; i < 12; i++) {
      hlens[i] = 18 + (round + i) % 40;
      fill_frame (hdr[i], hlens[i], round * 12 + i);
      headers[i] = hdr[i];
      guint off = ((round * 12 + i) * 397) % (63 * 1024);
      pl[i] = (Mlx5TxPayload){ (guint64) (uintptr_t) (payload + off), PAYLOAD_LKEY,
        60 + (round + i) % 900 };
      times[i] = i % 3 == 0 ? G_GUINT64_CONSTANT (1700000000000000000) + i : 0;
    }
    g_assert_cmpuint (mlx5_txq_send_split_at (q, headers, hlens, pl, times, 12), ==, 12);
    g_assert_cmpuint (txdev_execute (&d, TRUE), ==, 16);
    g_assert_cmpuint (d.waits->len - waits_before, ==, 4);
    for (guint i = 0; i < 12; i++) {
      gsize size;
      const guint8 *f = g_bytes_get_data (g_ptr_array_index (d.frames, i), &size);
      g_assert_cmpuint (size, ==, hlens[i] + pl[i].length);
      g_assert_cmpmem (f, hlens[i], hdr[i], hlens[i]);
      g_assert_cmpmem (
          f + hlens[i], pl[i].length, (const guint8 *) (uintptr_t) pl[i].addr, pl[i].length);
    }
    sent += 12;
    g_assert_cmpuint (mlx5_txq_completed (q), ==, sent);
    g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 16);
  }
  g_assert_cmpuint (d.split_sends, ==, sent);
  /* a header shorter than the inline part cannot be sent split */
  expect_split_stops_at (q, headers, hlens, pl, 12, 0, 17);
  txdev_close_split (&d, q, payload);
}

/* slots come back only through CQEs; many passes over SQ, CQ and slots (16-bit WQE
 * index wrap) with every byte checked */
static void
test_reclaim_wrap (void)
{
  TxDev d;
  txdev_init (&d);
  Mlx5Txq *q = txq_new (&d, 128 * 16, 100, 4); /* 16 slots of 128 bytes */
  GRand *rand = g_rand_new_with_seed (3);
  guint32 seq = 0, checked = 0;
  guint8 buf[32][128];
  const guint8 *frames[32];
  guint32 lens[32];

  g_assert_cmpuint (mlx5_txq_n_slots (q), ==, 16);
  g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 16);
  /* without completions the slots run out */
  for (guint i = 0; i < 20; i++) {
    frames[i] = buf[i];
    lens[i] = 64;
    fill_frame (buf[i], 64, seq + i);
  }
  g_assert_cmpuint (mlx5_txq_send (q, frames, lens, 20), ==, 16);
  seq += 16;
  g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 0);
  g_assert_cmpuint (txdev_execute (&d, FALSE), ==, 16);
  g_assert_cmpuint (mlx5_txq_send (q, frames, lens, 1), ==, 0);
  g_assert_false (mlx5_txq_idle (q));
  /* one CQE for the 8th WQE frees 8 slots */
  txdev_cqe (&d, MLX5_CQE_REQ, 7, 0);
  g_assert_cmpuint (mlx5_txq_reclaim (q), ==, 8);
  g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 8);
  txdev_cqe (&d, MLX5_CQE_REQ, 15, 0);
  g_assert_cmpuint (mlx5_txq_reclaim (q), ==, 8);
  g_assert_true (mlx5_txq_idle (q));
  for (; checked < 16; checked++)
    check_frame (g_ptr_array_index (d.frames, checked), 64, checked);

  while (seq < 70000) {
    guint n = g_rand_int_range (rand, 1, 33);
    for (guint i = 0; i < n; i++) {
      frames[i] = buf[i];
      lens[i] = g_rand_int_range (rand, 14, 129);
      fill_frame (buf[i], lens[i], seq + i);
    }
    guint sent = mlx5_txq_send (q, frames, lens, n);
    g_assert_cmpuint (sent, <=, 16);
    g_assert_cmpuint (txdev_execute (&d, TRUE), ==, sent);
    for (guint i = 0; i < sent; i++)
      check_frame (g_ptr_array_index (d.frames, checked + i), lens[i], seq + i);
    checked += sent;
    seq += sent;
    mlx5_txq_reclaim (q);
    g_assert_true (mlx5_txq_idle (q));
    g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 16);
    if (d.frames->len > 1000) {
      g_ptr_array_remove_range (d.frames, 0, d.frames->len);
      g_array_set_size (d.cs_flags, 0);
      checked = 0;
    }
  }
  g_assert_cmpuint (d.hw_ci, ==, seq);
  g_assert_cmpuint (be32toh (d.port.sq->dbrec[MLX5_SND_DBR]), ==, seq & 0xffff);
  Mlx5TxCounters c;
  mlx5_txq_counters (q, &c);
  g_assert_cmpuint (c.packets, ==, seq);
  g_assert_cmpuint (c.device_errors, ==, 0);
  g_assert_cmpuint (c.cqe_errors, ==, 0);
  mlx5_txq_free (q);
  g_rand_free (rand);
  txdev_clear (&d);
}

/* writing frames in place: acquire, write, commit (partly), cancel */
static void
test_acquire_commit (void)
{
  TxDev d;
  txdev_init (&d);
  Mlx5Txq *q = txq_new (&d, 128 * 8, 128, 0); /* 8 slots */
  guint8 *slots[10];
  guint32 lens[10];

  g_assert_cmpuint (mlx5_txq_acquire (q, 10, slots), ==, 8);
  g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 0);
  for (guint i = 0; i < 8; i++) {
    g_assert_true (slots[i] == d.port.mr_addr + i * 128);
    lens[i] = 20 + i;
    fill_frame (slots[i], lens[i], 100 + i);
  }
  g_assert_cmpuint (mlx5_txq_commit (q, 3, lens), ==, 3);
  g_assert_cmpuint (txdev_execute (&d, TRUE), ==, 3);
  /* the 5 still acquired go next, in order */
  g_assert_cmpuint (mlx5_txq_commit (q, 2, lens + 3), ==, 2);
  g_assert_cmpuint (txdev_execute (&d, TRUE), ==, 2);
  for (guint i = 0; i < 5; i++)
    check_frame (g_ptr_array_index (d.frames, i), 20 + i, 100 + i);
  mlx5_txq_cancel (q);
  mlx5_txq_reclaim (q);
  g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 8);
  /* after cancel the slots are handed out again, from the first unsent one */
  g_assert_cmpuint (mlx5_txq_acquire (q, 1, slots), ==, 1);
  g_assert_true (slots[0] == d.port.mr_addr + 5 * 128);
  /* a length out of range stops the commit */
  guint32 bad[2] = { 0, 60 };
  g_assert_cmpuint (mlx5_txq_commit (q, 1, bad), ==, 0);
  bad[0] = 129;
  g_assert_cmpuint (mlx5_txq_commit (q, 1, bad), ==, 0);
  g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 7);
  mlx5_txq_cancel (q);
  mlx5_txq_free (q);
  txdev_clear (&d);
}

/* the port MAC goes into bytes 6..11 when asked */
static void
test_src_mac (void)
{
  TxDev d;
  txdev_init (&d);
  Mlx5TxConfig cfg = { .stamp_src_mac = TRUE, .mac = { 2, 0, 0, 0xaa, 0xbb, 0xcc } };
  g_assert_true (mlx5_tx_geometry_choose (&mini_port_caps, "t", 0, 128, 0, &cfg, NULL));
  Mlx5Txq *q = mlx5_txq_new (&mini_port_ops, &d.port, &cfg, NULL);
  guint8 f[60];
  memset (f, 0x11, sizeof f);
  const guint8 *frames[1] = { f };
  guint32 lens[1] = { 60 };
  g_assert_cmpuint (mlx5_txq_send (q, frames, lens, 1), ==, 1);
  txdev_execute (&d, TRUE);
  const guint8 *sent = g_bytes_get_data (g_ptr_array_index (d.frames, 0), NULL);
  const guint8 expect[14] = { 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 2, 0, 0, 0xaa, 0xbb, 0xcc, 0x11,
    0x11 };
  g_assert_cmpmem (sent, 14, expect, 14);
  g_assert_cmpuint (f[6], ==, 0x11); /* the caller's frame is untouched */
  g_assert_cmpuint (g_array_index (d.cs_flags, guint8, 0), ==, 0); /* no csum asked */
  mlx5_txq_free (q);
  txdev_clear (&d);
}

/* error CQEs complete their WQE (counted, syndrome kept) and put the SQ in ERR: the
 * device flushes the WQEs after it, nothing more is posted, and once all completed the
 * SQ is recovered (ERR -> RST -> RDY, doorbell record 0) and takes frames again from WQE
 * index 0; CQEs naming no WQE in flight and unknown opcodes are device errors and free
 * nothing */
static void
test_bad_cqes (void)
{
  TxDev d;
  txdev_init (&d);
  Mlx5Txq *q = txq_new (&d, 64 * 8, 64, 0);
  guint8 f[60] = { 0 };
  const guint8 *frames[4] = { f, f, f, f };
  guint32 lens[4] = { 60, 60, 60, 60 };
  Mlx5TxCounters c;

  g_assert_cmpuint (mlx5_txq_send (q, frames, lens, 4), ==, 4);
  txdev_execute (&d, FALSE);
  txdev_cqe (&d, MLX5_CQE_REQ, 4, 0); /* not in flight (0..3) */
  txdev_cqe (&d, MLX5_CQE_REQ, 0xfff0, 0);
  txdev_cqe (&d, MLX5_CQE_RESP_SEND, 1, 0); /* not a send completion */
  g_assert_cmpuint (mlx5_txq_reclaim (q), ==, 0);
  mlx5_txq_counters (q, &c);
  g_assert_cmpuint (c.device_errors, ==, 3);
  g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 4);
  txdev_cqe (&d, MLX5_CQE_REQ_ERR, 1, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  g_assert_cmpuint (mlx5_txq_reclaim (q), ==, 2);
  mlx5_txq_counters (q, &c);
  g_assert_cmpuint (c.cqe_errors, ==, 1);
  g_assert_cmpuint (c.last_syndrome, ==, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  /* in ERR: nothing is posted, whatever room there is */
  g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 0);
  g_assert_cmpuint (mlx5_txq_send (q, frames, lens, 1), ==, 0);
  txdev_cqe (&d, MLX5_CQE_REQ_ERR, 2, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  g_assert_cmpuint (mlx5_txq_reclaim (q), ==, 1);
  g_assert_cmpuint (d.port.sq_recoveries, ==, 0); /* WQE 3 is still out */
  txdev_cqe (&d, MLX5_CQE_REQ_ERR, 3, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  g_assert_cmpuint (mlx5_txq_reclaim (q), ==, 1);
  g_assert_true (mlx5_txq_idle (q));
  g_assert_cmpuint (d.port.sq_recoveries, ==, 1);
  mlx5_txq_counters (q, &c);
  g_assert_cmpuint (c.completions, ==, 6);
  g_assert_cmpuint (c.cqe_errors, ==, 1);
  g_assert_cmpuint (c.flushed, ==, 2);
  g_assert_cmpuint (c.recoveries, ==, 1);
  /* recovered: all slots free, the next WQE has index 0 and the record counts from 0 */
  g_assert_cmpuint (mlx5_txq_free_slots (q), ==, 8);
  g_assert_cmpuint (mlx5_txq_send (q, frames, lens, 1), ==, 1);
  const struct mlx5_wqe_ctrl_seg *ctrl = (const struct mlx5_wqe_ctrl_seg *) d.port.sq->wqes;
  g_assert_cmpuint ((be32toh (ctrl->opmod_idx_opcode) >> 8) & 0xffff, ==, 0);
  g_assert_cmpuint (be32toh (d.port.sq->dbrec[MLX5_SND_DBR]), ==, 1);
  mlx5_txq_free (q);
  txdev_clear (&d);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5/tx/geometry", test_geometry);
  g_test_add_func ("/mlx5/tx/wqe-layout", test_wqe_layout);
  g_test_add_func ("/mlx5/tx/wait-layout", test_wait_layout);
  g_test_add_func ("/mlx5/tx/inline-l2", test_inline_l2);
  g_test_add_func ("/mlx5/tx/empw", test_empw);
  g_test_add_func ("/mlx5/tx/split-layout", test_split_layout);
  g_test_add_func ("/mlx5/tx/split-inline", test_split_inline);
  g_test_add_func ("/mlx5/tx/reclaim-wrap", test_reclaim_wrap);
  g_test_add_func ("/mlx5/tx/acquire-commit", test_acquire_commit);
  g_test_add_func ("/mlx5/tx/src-mac", test_src_mac);
  g_test_add_func ("/mlx5/tx/bad-cqes", test_bad_cqes);
  return g_test_run ();
}
