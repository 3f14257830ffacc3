/* Host side of an mlx5 send queue (see tx.h).
 *
 * PRM rules this code relies on, one place each:
 *  - SEND WQE = ctrl segment + Ethernet segment + data segments, in 16-byte units (DS);
 *    ctrl.opmod_idx_opcode = WQE index (16 bits) << 8 | opcode, ctrl.qpn_ds = SQN << 8 |
 *    DS count (txq_build_send).
 *  - ctrl.fm_ce_se completion mode: CQ_UPDATE (CE 2) asks for a CQE; an unsignalled WQE
 *    uses "only first error" (CE 1), never 0 (txq_build_send).
 *  - Ethernet segment: cs_flags L3 / L4 ask the device to compute the IPv4 header and
 *    TCP/UDP checksums; inline_hdr_sz 0 = no inline headers, the whole frame is read
 *    through the data segments; inline_hdr_sz N = the frame's first N bytes are in the
 *    segment from inline_hdr_start on, and the data segment holds the rest (a WQE of
 *    ctrl + 2 DS of Ethernet segment + 1 data segment, still one WQEBB).
 *  - A send CQE's wqe_counter is the index of the WQE it completes; completions come in
 *    order, so it completes every earlier WQE too (cq_poll_one).
 *  - Doorbell: WQEs visible, then the SQ doorbell record (word MLX5_SND_DBR, big-endian,
 *    16 bits), then an 8-byte write of the last WQE's ctrl segment to the UAR/BlueFlame
 *    register, flushed from the write-combining buffer; the next doorbell uses the other
 *    half of the BlueFlame buffer (sq_ring_doorbell).
 *  - eMPW WQE (opcode ENHANCED_MPSW): ctrl, a 16-byte Ethernet segment, then one data
 *    segment per frame, DS 2 + k over (2 + k + 3) / 4 WQEBBs, each 16-byte unit of it at
 *    its place in the ring (the WQE wraps at the ring's end); its CQE completes its k
 *    frames (txq_build_empw).
 *  - A scheduled frame is a WAIT WQE (one WQEBB, unsignalled, no slot: ctrl + wait
 *    segment, mlx5-dma.h) and then its SEND: the device holds the SQ until the port's
 *    real-time clock passes the WAIT's time (txq_build_wait).
 *  - An error CQE moves the SQ to the error state (flush_in_error_en): the device
 *    completes every WQE after it with a flush error and sends nothing. Once every posted
 *    WQE has completed, the host takes the SQ ERR -> RST -> RDY (ops->sq_recover) with the
 *    doorbell record at 0, and WQE indices start again at 0 (txq_recover).
 */
#include "tx.h"
#include "engine-util.h"

#include "mlx5-dma.h"
#include "mlx5-mem.h"
#include "mlx5-mr.h"

#include <string.h>

struct _Mlx5Txq {
  const Mlx5PortOps *ops;
  gpointer dev;

  Mlx5Sq sq;
  Mlx5Cq cq;
  gpointer mr;
  gboolean cq_created, sq_created;

  guint8 *slab;
  gsize slab_size;
  guint32 lkey;
  guint log_slot_size;
  guint32 n_slots;
  guint32 slot_mask;
  guint32 wqebb_mask;
  guint32 n_wqebbs;
  guint32 cq_mask;

  /* cyclic counters (free-running, 32 bits) */
  guint32 sq_pi;     /* WQEBBs posted */
  guint32 sq_ci;     /* WQEBBs completed */
  guint32 slot_head; /* slots sent */
  guint32 slot_tail; /* slots completed */
  guint32 acquired;  /* slots after slot_head handed out, not yet sent */
  guint32 cq_ci;

  /* per WQEBB index of a WQE's first block: the counters once that WQE completes */
  guint32 *wqe_sq_end;
  guint32 *wqe_slot_end;
  guint8 *wqe_packets; /* the packets of that WQE (0 for a WAIT) */

  guint signal_every;
  guint since_signal;
  guint8 cs_flags;
  guint inline_bytes;
  gboolean empw;
  guint8 *last_wqe; /* the latest WQE built: its ctrl segment rings the doorbell */
  gboolean stamp_src_mac;
  guint8 mac[6];
  guint bf_offset;
  gboolean in_error; /* an error CQE came: nothing is posted until recovered */

  Mlx5TxCounters c;
};

gboolean
mlx5_tx_geometry_choose (const Mlx5Caps *caps, const char *what, gsize ring_bytes, guint max_packet,
    guint signal_every, Mlx5TxConfig *cfg, GError **error)
{
  gsize ring = ring_bytes ? ring_bytes : MLX5_TX_DEFAULT_RING;

  if (max_packet < 14 || max_packet > 65535) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: TX max-packet-size %u is out of "
        "range (allowed 14 .. 65535)",
        what, max_packet);
    return FALSE;
  }
  guint ls = MAX (dq_log2_ceil (max_packet), dq_log2_ceil (MLX5_TX_MIN_SLOT));
  /* WQEBBs a slot: a WAIT and its SEND; four where inline headers make a two-segment
   * SEND two WQEBBs long */
  guint log_bbs = caps->tx_inline_bytes > 0 ? 2 : 1;
  guint max_log_slots = caps->max_log_wqebbs - log_bbs;
  guint64 n = ring >> ls;
  if (n < MLX5_TX_MIN_SLOTS) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: TX ring-size %" G_GSIZE_FORMAT
        " is too small for slots of %u bytes (allowed: ring-size >= %u)",
        what, ring, 1u << ls, MLX5_TX_MIN_SLOTS << ls);
    return FALSE;
  }
  guint lslots = MIN (dq_log2_floor (n), max_log_slots);
  if (caps->max_log_wqebbs < log_bbs || lslots < dq_log2_ceil (MLX5_TX_MIN_SLOTS)) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: the device's send queues are too "
        "small (%u WQEs)",
        what, 1u << caps->max_log_wqebbs);
    return FALSE;
  }
  guint every = signal_every ? signal_every : MLX5_TX_DEFAULT_SIGNAL_EVERY;
  if (every > (1u << lslots) / 2) {
    if (signal_every != 0) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "%s: TX completion every %u WQEs is "
          "out of range for %u slots (allowed 1 .. %u)",
          what, signal_every, 1u << lslots, (1u << lslots) / 2);
      return FALSE;
    }
    every = (1u << lslots) / 2;
  }
  cfg->log_slot_size = ls;
  cfg->log_slots = lslots;
  cfg->log_wqebbs = lslots + log_bbs;
  cfg->signal_every = every;
  return TRUE;
}

void
mlx5_txq_free (Mlx5Txq *q)
{
  if (q == NULL)
    return;
  if (q->sq_created)
    q->ops->sq_destroy (q->dev, &q->sq);
  if (q->cq_created)
    q->ops->cq_destroy (q->dev, &q->cq);
  if (q->mr != NULL)
    q->ops->mr_dereg (q->dev, q->mr);
  mlx5_mem_unmap (q->slab, q->slab_size);
  mlx5_mem_free (q->sq.wqes);
  mlx5_mem_free ((gpointer) q->sq.dbrec);
  mlx5_mem_free (q->cq.ring);
  mlx5_mem_free ((gpointer) q->cq.dbrec);
  g_free (q->wqe_sq_end);
  g_free (q->wqe_slot_end);
  g_free (q->wqe_packets);
  g_free (q);
}

Mlx5Txq *
mlx5_txq_new (const Mlx5PortOps *ops, gpointer dev, const Mlx5TxConfig *cfg, GError **error)
{
  Mlx5Txq *q = g_new0 (Mlx5Txq, 1);
  guint32 n_wqebbs = 1u << cfg->log_wqebbs;
  gsize cq_bytes = (gsize) MLX5_CQE_SIZE << cfg->log_wqebbs;

  q->ops = ops;
  q->dev = dev;
  q->log_slot_size = cfg->log_slot_size;
  q->n_slots = 1u << cfg->log_slots;
  q->slot_mask = q->n_slots - 1;
  q->n_wqebbs = n_wqebbs;
  q->wqebb_mask = n_wqebbs - 1;
  q->cq_mask = n_wqebbs - 1;
  q->signal_every = MAX (cfg->signal_every, 1);
  q->cs_flags = cfg->csum ? (MLX5_ETH_WQE_L3_CSUM | MLX5_ETH_WQE_L4_CSUM) : 0;
  q->stamp_src_mac = cfg->stamp_src_mac;
  q->inline_bytes = cfg->inline_bytes;
  q->empw = cfg->empw && cfg->inline_bytes == 0;
  memcpy (q->mac, cfg->mac, 6);
  q->wqe_sq_end = g_new0 (guint32, n_wqebbs);
  q->wqe_slot_end = g_new0 (guint32, n_wqebbs);
  q->wqe_packets = g_new0 (guint8, n_wqebbs);

  q->slab_size = (gsize) q->n_slots << q->log_slot_size;
  q->slab = mlx5_mem_map (q->slab_size);
  q->sq.wqes = mlx5_mem_alloc ((gsize) n_wqebbs * MLX5_SEND_WQE_BB, mlx5_page_size ());
  q->sq.dbrec = mlx5_mem_alloc (64, 64);
  q->cq.ring = mlx5_mem_alloc (cq_bytes, mlx5_page_size ());
  q->cq.dbrec = mlx5_mem_alloc (64, 64);
  if (q->slab == NULL || q->sq.wqes == NULL || q->sq.dbrec == NULL || q->cq.ring == NULL ||
      q->cq.dbrec == NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: cannot allocate the TX ring "
        "(%" G_GSIZE_FORMAT " bytes of slots)",
        ops->name, q->slab_size);
    if (q->slab == NULL)
      q->slab_size = 0;
    goto fail;
  }
  if (!ops->mr_reg (dev, q->slab, q->slab_size, &q->lkey, &q->mr, error))
    goto fail;

  memset (q->cq.ring, 0xff, cq_bytes);
  q->cq.log_size = cfg->log_wqebbs;
  if (!ops->cq_create (dev, &q->cq, error))
    goto fail;
  q->cq_created = TRUE;

  q->sq.log_wqebbs = cfg->log_wqebbs;
  q->sq.cq = &q->cq;
  if (!ops->sq_create (dev, &q->sq, error))
    goto fail;
  q->sq_created = TRUE;
  return q;

fail:
  mlx5_txq_free (q);
  return NULL;
}

Mlx5Sq *
mlx5_txq_sq (Mlx5Txq *q)
{
  return &q->sq;
}

guint
mlx5_txq_slot_size (Mlx5Txq *q)
{
  return 1u << q->log_slot_size;
}

guint
mlx5_txq_n_slots (Mlx5Txq *q)
{
  return q->n_slots;
}

gsize
mlx5_txq_ring_bytes (Mlx5Txq *q)
{
  return q->slab_size;
}

/* ---------------------------------------------------------------------------------- */
/* completions */

static inline volatile struct mlx5_cqe64 *
cq_cqe (Mlx5Txq *q, guint32 ci)
{
  return (volatile struct mlx5_cqe64 *) (q->cq.ring + ((gsize) (ci & q->cq_mask) << 6));
}

/* One TX CQE: it names the WQE it completes by the WQE's 16-bit index; valid only if
 * that WQE is in flight (between sq_ci and sq_pi). */
static guint
cq_poll_one (Mlx5Txq *q, volatile struct mlx5_cqe64 *cqe)
{
  guint8 opcode = mlx5_cqe_opcode (cqe);
  gboolean failed = opcode == MLX5_CQE_REQ_ERR || opcode == MLX5_CQE_RESP_ERR;

  if (failed) {
    q->in_error = TRUE;
    mlx5_err_cqe_count (
        cqe, &q->c.flushed, &q->c.cqe_errors, &q->c.last_syndrome, &q->c.last_vendor_syndrome);
  } else if (opcode != MLX5_CQE_REQ) {
    MLX5_COUNTER_ADD (q->c.device_errors, 1);
    return 0;
  }
  guint16 counter = be16toh (cqe->wqe_counter);
  guint16 dist = (guint16) (counter - (guint16) q->sq_ci);
  if (G_UNLIKELY (dist >= q->sq_pi - q->sq_ci)) {
    MLX5_COUNTER_ADD (q->c.device_errors, 1);
    return 0;
  }
  guint32 idx = counter & q->wqebb_mask;
  guint32 before = q->slot_tail;
  /* an error CQE completes its WQE unsent (and the good ones before it) */
  if (failed)
    MLX5_COUNTER_ADD (q->c.lost, q->wqe_packets[idx]);
  q->sq_ci = q->wqe_sq_end[idx];
  q->slot_tail = q->wqe_slot_end[idx];
  return q->slot_tail - before;
}

/* The SQ in ERR with every posted WQE completed: ERR -> RST -> RDY with the doorbell
 * record at 0, WQE indices from 0 like the device's. A refusal is counted and tried again
 * at the next reclaim. */
static void
txq_recover (Mlx5Txq *q)
{
  q->sq.dbrec[MLX5_SND_DBR] = 0;
  GError *error = NULL;
  if (q->ops->sq_recover == NULL || !q->ops->sq_recover (q->dev, &q->sq, &error)) {
    if (MLX5_COUNTER_GET (q->c.recovery_failures) == 0)
      g_warning ("SQ 0x%x in the error state could not be recovered: %s", q->sq.sqn,
          error ? error->message : "the device cannot reset an SQ");
    MLX5_COUNTER_ADD (q->c.recovery_failures, 1);
    g_clear_error (&error);
    return;
  }
  q->sq_pi = 0;
  q->sq_ci = 0;
  q->in_error = FALSE;
  MLX5_COUNTER_ADD (q->c.recoveries, 1);
}

guint
mlx5_txq_reclaim (Mlx5Txq *q)
{
  guint32 start = q->cq_ci;
  guint slots = 0;

  for (;;) {
    volatile struct mlx5_cqe64 *cqe = cq_cqe (q, q->cq_ci);
    if (!mlx5_cqe_sw_owned (cqe, q->cq_ci, q->cq.log_size))
      break;
    mlx5_dma_rmb ();
    q->cq_ci++;
    slots += cq_poll_one (q, cqe);
  }
  if (q->cq_ci != start) {
    mlx5_dma_mb ();
    q->cq.dbrec[0] = htobe32 (q->cq_ci & 0xffffff);
    MLX5_COUNTER_ADD (q->c.completions, q->cq_ci - start);
  }
  if (G_UNLIKELY (q->in_error) && q->sq_ci == q->sq_pi)
    txq_recover (q);
  return slots;
}

guint
mlx5_txq_free_slots (Mlx5Txq *q)
{
  /* in ERR what is posted is only flushed: senders wait for the recovery */
  if (G_UNLIKELY (q->in_error))
    return 0;
  return q->n_slots - (q->slot_head - q->slot_tail) - q->acquired;
}

gboolean
mlx5_txq_idle (Mlx5Txq *q)
{
  return q->sq_ci == q->sq_pi;
}

/* ---------------------------------------------------------------------------------- */
/* sending */

static inline guint8 *
slot_addr (Mlx5Txq *q, guint32 slot)
{
  return q->slab + ((gsize) (slot & q->slot_mask) << q->log_slot_size);
}

guint
mlx5_txq_acquire (Mlx5Txq *q, guint n, guint8 **slots)
{
  guint avail = mlx5_txq_free_slots (q);
  if (avail < n) {
    mlx5_txq_reclaim (q);
    avail = mlx5_txq_free_slots (q);
  }
  guint k = MIN (n, avail);
  guint32 first = q->slot_head + q->acquired;
  for (guint i = 0; i < k; i++)
    slots[i] = slot_addr (q, first + i);
  q->acquired += k;
  return k;
}

void
mlx5_txq_cancel (Mlx5Txq *q)
{
  q->acquired = 0;
}

/* The 16-byte unit `unit` of the WQE that starts at WQEBB `pi` */
static inline guint8 *
wqe_unit (Mlx5Txq *q, guint32 pi, guint unit)
{
  return q->sq.wqes + ((gsize) ((pi + unit / 4) & q->wqebb_mask) << MLX5_SEND_WQE_SHIFT) +
      (gsize) (unit % 4) * MLX5_WQE_DS_SIZE;
}

static inline void
wqe_data_seg (Mlx5Txq *q, guint unit, guint32 len, guint32 lkey, guint64 addr)
{
  struct mlx5_wqe_data_seg *data = (struct mlx5_wqe_data_seg *) wqe_unit (q, q->sq_pi, unit);
  data->byte_count = htobe32 (len);
  data->lkey = htobe32 (lkey);
  data->addr = htobe64 (addr);
}

/* A SEND of the `len` bytes in `slot`, and with a payload segment the payload after them
 * (a two-segment send; an empty payload adds nothing). */
static inline void
txq_build_send (
    Mlx5Txq *q, guint32 slot, guint32 len, const Mlx5TxPayload *payload, gboolean signal)
{
  guint8 *wqe = wqe_unit (q, q->sq_pi, 0);
  struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *) wqe;
  struct mlx5_wqe_eth_seg *eth = (struct mlx5_wqe_eth_seg *) (wqe + MLX5_WQE_DS_SIZE);

  const guint8 *frame = slot_addr (q, slot);
  guint inl = MIN (q->inline_bytes, len);
  guint ds = 2;

  /* the Ethernet segment: no LSO; inline headers when the port wants them (taken from
   * the slot: a header shorter than that is refused before) */
  memset (eth, 0, MLX5_WQE_DS_SIZE);
  eth->cs_flags = q->cs_flags;
  if (inl > 0) {
    eth->inline_hdr_sz = htobe16 (inl);
    memcpy (eth->inline_hdr_start, frame, inl);
    ds = 3;
  }
  if (len > inl)
    wqe_data_seg (q, ds++, len - inl, q->lkey, (guint64) (uintptr_t) (frame + inl));
  /* (a data segment of 0 bytes would mean 2 GiB: an empty payload has none) */
  if (payload != NULL && payload->length > 0)
    wqe_data_seg (q, ds++, payload->length, payload->lkey, payload->addr);

  ctrl->opmod_idx_opcode = htobe32 (((q->sq_pi & 0xffff) << 8) | MLX5_OPCODE_SEND);
  ctrl->qpn_ds = htobe32 ((q->sq.sqn << 8) | ds);
  ctrl->signature = 0;
  ctrl->dci_stream_channel_id = 0;
  ctrl->fm_ce_se = signal ? MLX5_WQE_CTRL_CQ_UPDATE : MLX5_WQE_CTRL_CQ_ONLY_FIRST_ERR;
  ctrl->imm = 0;

  guint32 idx = q->sq_pi & q->wqebb_mask;
  q->sq_pi += (ds + 3) / 4;
  q->wqe_sq_end[idx] = q->sq_pi;
  q->wqe_slot_end[idx] = slot + 1;
  q->wqe_packets[idx] = 1;
  q->last_wqe = wqe;
  MLX5_COUNTER_ADD (q->c.wqes, 1);
}

/* A WAIT WQE holding the SQ until the port's real-time clock passes `time_ns`; it
 * completes no slot (`slot` is the first slot after it). */
static inline void
txq_build_wait (Mlx5Txq *q, guint32 slot, guint64 time_ns)
{
  guint8 *wqe = q->sq.wqes + ((gsize) (q->sq_pi & q->wqebb_mask) << MLX5_SEND_WQE_SHIFT);
  struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *) wqe;
  Mlx5WaitSeg *wait = (Mlx5WaitSeg *) (wqe + MLX5_WQE_DS_SIZE);

  ctrl->opmod_idx_opcode =
      htobe32 ((MLX5_OPC_MOD_WAIT_TIME << 24) | ((q->sq_pi & 0xffff) << 8) | MLX5_OPCODE_WAIT);
  ctrl->qpn_ds = htobe32 ((q->sq.sqn << 8) | 3);
  ctrl->signature = 0;
  ctrl->dci_stream_channel_id = 0;
  ctrl->fm_ce_se = MLX5_WQE_CTRL_CQ_ONLY_FIRST_ERR;
  ctrl->imm = 0;
  wait->operation = htobe32 (MLX5_WAIT_COND_CYCLIC_SMALLER);
  wait->lkey = 0;
  wait->va_high = 0;
  wait->va_low = 0;
  wait->value = htobe64 (mlx5_ns_to_rt_ts (time_ns) & MLX5_WAIT_TIME_MASK);
  wait->mask = htobe64 (MLX5_WAIT_TIME_MASK);

  guint32 idx = q->sq_pi & q->wqebb_mask;
  q->sq_pi++;
  q->wqe_sq_end[idx] = q->sq_pi;
  q->wqe_slot_end[idx] = slot;
  q->wqe_packets[idx] = 0;
  q->last_wqe = wqe;
  MLX5_COUNTER_ADD (q->c.waits, 1);
}

/* An eMPW WQE of the k frames in slots slot .. slot + k - 1 */
static void
txq_build_empw (Mlx5Txq *q, guint32 slot, guint k, const guint32 *lengths, gboolean signal)
{
  guint8 *wqe = wqe_unit (q, q->sq_pi, 0);
  struct mlx5_wqe_ctrl_seg *ctrl = (struct mlx5_wqe_ctrl_seg *) wqe;
  struct mlx5_wqe_eth_seg *eth = (struct mlx5_wqe_eth_seg *) (wqe + MLX5_WQE_DS_SIZE);

  ctrl->opmod_idx_opcode = htobe32 (((q->sq_pi & 0xffff) << 8) | MLX5_OPCODE_ENHANCED_MPSW);
  ctrl->qpn_ds = htobe32 ((q->sq.sqn << 8) | (2 + k));
  ctrl->signature = 0;
  ctrl->dci_stream_channel_id = 0;
  ctrl->fm_ce_se = signal ? MLX5_WQE_CTRL_CQ_UPDATE : MLX5_WQE_CTRL_CQ_ONLY_FIRST_ERR;
  ctrl->imm = 0;
  memset (eth, 0, MLX5_WQE_DS_SIZE);
  eth->cs_flags = q->cs_flags;
  for (guint j = 0; j < k; j++)
    wqe_data_seg (q, 2 + j, lengths[j], q->lkey, (guint64) (uintptr_t) slot_addr (q, slot + j));

  guint32 idx = q->sq_pi & q->wqebb_mask;
  q->sq_pi += (2 + k + 3) / 4;
  q->wqe_sq_end[idx] = q->sq_pi;
  q->wqe_slot_end[idx] = slot + k;
  q->wqe_packets[idx] = (guint8) k;
  q->last_wqe = wqe;
  MLX5_COUNTER_ADD (q->c.wqes, 1);
  MLX5_COUNTER_ADD (q->c.empw_wqes, 1);
}

/* How many frames from i on go into one eMPW WQE (0: send frame i on its own) */
static inline guint
txq_empw_run (Mlx5Txq *q, const guint32 *lengths, const guint64 *times, guint i, guint n)
{
  if (!q->empw)
    return 0;
  guint k = 0;
  while (i + k < n && k < MLX5_TX_EMPW_MAX_PACKETS && lengths[i + k] <= MLX5_TX_EMPW_MAX_LEN &&
      (times == NULL || times[i + k] == 0))
    k++;
  return k >= 2 ? k : 0;
}

static void
sq_ring_doorbell (Mlx5Txq *q, const guint8 *last_wqe)
{
  guint64 ctrl;

  /* the WQEs before the record that publishes them */
  mlx5_dma_wmb ();
  q->sq.dbrec[MLX5_SND_DBR] = htobe32 (q->sq_pi & 0xffff);
  /* the record before the doorbell that makes the device read it */
  mlx5_dma_wmb ();
  memcpy (&ctrl, last_wqe, sizeof ctrl);
  *(volatile guint64 *) ((guint8 *) q->sq.bf_reg + q->bf_offset) = ctrl;
  /* out of the write-combining buffer before the next doorbell reuses it */
  mlx5_wc_flush ();
  q->bf_offset ^= q->sq.bf_size;
  MLX5_COUNTER_ADD (q->c.doorbells, 1);
}

guint
mlx5_txq_commit (Mlx5Txq *q, guint n, const guint32 *lengths)
{
  return mlx5_txq_commit_at (q, n, lengths, NULL);
}

/* Sends the first n acquired slots, frame i being lengths[i] bytes of slot i followed,
 * with payloads, by payloads[i] (a two-segment send, never in an eMPW WQE). */
static guint
txq_commit_frames (Mlx5Txq *q, guint n, const guint32 *lengths, const Mlx5TxPayload *payloads,
    const guint64 *times)
{
  guint32 slot_size = 1u << q->log_slot_size;
  guint64 bytes = 0;
  guint i;

  n = MIN (n, q->acquired);
  /* the frames up to the first bad length (a split frame's inline headers come from its
   * slot) */
  for (i = 0; i < n; i++) {
    guint32 len = lengths[i];
    if (G_UNLIKELY (len == 0 || len > slot_size))
      break;
    if (payloads != NULL && payloads[i].length > 0 && G_UNLIKELY (len < q->inline_bytes))
      break;
    if (q->stamp_src_mac && len >= 12)
      memcpy (slot_addr (q, q->slot_head + i) + 6, q->mac, 6);
    bytes += len + (payloads != NULL ? payloads[i].length : 0);
  }
  n = i;
  if (n == 0)
    return 0;
  for (i = 0; i < n;) {
    guint32 slot = q->slot_head + i;
    guint k = payloads == NULL ? txq_empw_run (q, lengths, times, i, n) : 0;
    q->since_signal += MAX (k, 1);
    gboolean signal = q->since_signal >= q->signal_every;
    if (signal)
      q->since_signal = 0;
    if (k > 0) {
      txq_build_empw (q, slot, k, lengths + i, signal);
      i += k;
      continue;
    }
    if (times != NULL && times[i] != 0)
      txq_build_wait (q, slot, times[i]);
    txq_build_send (q, slot, lengths[i], payloads != NULL ? &payloads[i] : NULL, signal);
    i++;
  }
  /* the burst ends with a signalled WQE */
  guint8 *last = q->last_wqe;
  ((struct mlx5_wqe_ctrl_seg *) last)->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
  q->since_signal = 0;
  q->slot_head += n;
  q->acquired -= n;
  sq_ring_doorbell (q, last);
  MLX5_COUNTER_ADD (q->c.packets, i);
  MLX5_COUNTER_ADD (q->c.bytes, bytes);
  return i;
}

guint
mlx5_txq_commit_at (Mlx5Txq *q, guint n, const guint32 *lengths, const guint64 *times)
{
  return txq_commit_frames (q, n, lengths, NULL, times);
}

/* Copies up to n frames (or their headers) into free slots and sends them. */
static guint
txq_send_frames (Mlx5Txq *q, const guint8 *const *frames, const guint32 *lengths,
    const Mlx5TxPayload *payloads, const guint64 *times, guint n)
{
  guint32 slot_size = 1u << q->log_slot_size;

  mlx5_txq_cancel (q);
  if (mlx5_txq_free_slots (q) < n)
    mlx5_txq_reclaim (q);
  guint k = MIN (n, mlx5_txq_free_slots (q));
  guint i;
  for (i = 0; i < k; i++) {
    guint32 len = lengths[i];
    if (len == 0 || len > slot_size)
      break;
    memcpy (slot_addr (q, q->slot_head + i), frames[i], len);
  }
  q->acquired = i;
  guint sent = txq_commit_frames (q, i, lengths, payloads, times);
  mlx5_txq_cancel (q);
  return sent;
}

guint
mlx5_txq_send (Mlx5Txq *q, const guint8 *const *frames, const guint32 *lengths, guint n)
{
  return txq_send_frames (q, frames, lengths, NULL, NULL, n);
}

guint
mlx5_txq_send_at (
    Mlx5Txq *q, const guint8 *const *frames, const guint32 *lengths, const guint64 *times, guint n)
{
  return txq_send_frames (q, frames, lengths, NULL, times, n);
}

guint
mlx5_txq_send_split_at (Mlx5Txq *q, const guint8 *const *headers, const guint32 *header_lengths,
    const Mlx5TxPayload *payloads, const guint64 *times, guint n)
{
  return txq_send_frames (q, headers, header_lengths, payloads, times, n);
}

guint32
mlx5_txq_posted (Mlx5Txq *q)
{
  return q->slot_head;
}

guint32
mlx5_txq_completed (Mlx5Txq *q)
{
  mlx5_txq_reclaim (q);
  return q->slot_tail;
}

gboolean
mlx5_txq_register (Mlx5Txq *q, const char *what, void *addr, gsize size, const DqRingMemory *memory,
    guint32 *lkey, gpointer *mr, GError **error)
{
  /* the device only reads payloads: device memory is registered for reading by copies,
   * never shadowed for writes */
  DqRingMemory m;
  if (memory != NULL) {
    m = *memory;
    m.write = NULL;
    memory = &m;
  }
  return mlx5_mr_register (q->ops, q->dev, what, addr, size, memory, lkey, mr, NULL, error);
}

void
mlx5_txq_unregister (Mlx5Txq *q, gpointer mr)
{
  q->ops->mr_dereg (q->dev, mr);
}

void
mlx5_txq_counters (Mlx5Txq *q, Mlx5TxCounters *c)
{
  c->packets = MLX5_COUNTER_GET (q->c.packets);
  c->bytes = MLX5_COUNTER_GET (q->c.bytes);
  c->doorbells = MLX5_COUNTER_GET (q->c.doorbells);
  c->waits = MLX5_COUNTER_GET (q->c.waits);
  c->wqes = MLX5_COUNTER_GET (q->c.wqes);
  c->lost = MLX5_COUNTER_GET (q->c.lost);
  c->empw_wqes = MLX5_COUNTER_GET (q->c.empw_wqes);
  c->completions = MLX5_COUNTER_GET (q->c.completions);
  c->cqe_errors = MLX5_COUNTER_GET (q->c.cqe_errors);
  c->flushed = MLX5_COUNTER_GET (q->c.flushed);
  c->recoveries = MLX5_COUNTER_GET (q->c.recoveries);
  c->recovery_failures = MLX5_COUNTER_GET (q->c.recovery_failures);
  c->device_errors = MLX5_COUNTER_GET (q->c.device_errors);
  c->last_syndrome = MLX5_COUNTER_GET (q->c.last_syndrome);
  c->last_vendor_syndrome = MLX5_COUNTER_GET (q->c.last_vendor_syndrome);
}
