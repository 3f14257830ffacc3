/* The emulated ConnectX's receive side (see emu.c for the device as a whole): steering a
 * frame to an RQ, and writing it into the RQ as the PRM has a striding RQ (strides in
 * order, filler CQEs, rq_deliver) or a header-data split cyclic RQ (two data segments per
 * WQE, rq_deliver_split) take it; error state and flushes; WQEs in device memory written
 * through a host shadow by batched copies, each CQE after its data (rq_commit). Runs on
 * the port's device thread with the port lock held. */
#include "emu-cq.h"
#include "emu-rx.h"

#include "mlx5-mem.h"
#include "mlx5-rss.h"

#include <string.h>

static guint32
rq_strides (const EmuRq *rq)
{
  return 1u << rq->log_strides;
}

/* WQEs the host posted that the device has not finished (the current one included). */
static guint32
rq_posted (EmuPort *p, EmuRq *rq)
{
  guint32 pi = be32toh (__atomic_load_n (&rq->dbrec[MLX5_RCV_DBR], __ATOMIC_ACQUIRE));
  guint32 posted = (pi - rq->hw_wqe) & 0xffff;
  if (G_UNLIKELY (posted > (1u << rq->log_wqes))) {
    /* a counter past the ring: nothing below it can be trusted */
    MLX5_COUNTER_ADD (p->c.doorbell_errors, 1);
    return 0;
  }
  return posted;
}

/* A region in device memory: copies the frames written to its shadow since the last
 * copy into the device memory (one copy), then posts the CQEs that wait for them. The
 * data is in place before its CQE, as the PCIe ordering of a NIC's writes has it. */
void
emu_rq_commit (EmuPort *p, EmuRq *rq)
{
  if (rq->n_staged == 0)
    return;
  EmuMr *mr = rq->region_mr; /* set whenever CQEs are staged */
  if (mr != NULL && rq->dirty_hi > rq->dirty_lo) {
    if (!mr->memory.write (rq->region_device + rq->dirty_lo, rq->region + rq->dirty_lo,
            rq->dirty_hi - rq->dirty_lo, mr->memory.user))
      MLX5_COUNTER_ADD (p->c.dma_write_errors, 1);
  }
  for (guint i = 0; i < rq->n_staged; i++) {
    if (rq->staged[i].packet)
      emu_cq_post_packet (rq->cq, &rq->staged[i].cqe, rq->rqn);
    else
      cq_post (rq->cq, &rq->staged[i].cqe, rq->staged[i].opcode);
  }
  rq->cq->staged -= rq->n_staged;
  rq->n_staged = 0;
  rq->dirty_lo = rq->dirty_hi = 0;
}

/* Posts an RQ completion (`packet`: a packet's, which a compressed CQ may fold into a
 * session); for a region in device memory it waits for the copy of the data before it
 * (emu_rq_commit, at the end of the region, of the device pass, or when EMU_STAGED_CQES
 * wait). */
static void
rq_post (EmuPort *p, EmuRq *rq, EmuCqe *c, guint8 opcode, gboolean packet)
{
  if (rq->region_mr == NULL) {
    if (packet)
      emu_cq_post_packet (rq->cq, c, rq->rqn);
    else
      cq_post (rq->cq, c, opcode);
    return;
  }
  rq->staged[rq->n_staged].cqe = *c;
  rq->staged[rq->n_staged].opcode = opcode;
  rq->staged[rq->n_staged].packet = packet;
  rq->n_staged++;
  rq->cq->staged++;
  if (rq->n_staged == EMU_STAGED_CQES)
    emu_rq_commit (p, rq);
}

/* [at, at + len) of the region, just written: it joins the range the next copy takes */
static void
rq_mark_range (EmuRq *rq, gsize at, gsize len)
{
  if (rq->dirty_hi == rq->dirty_lo)
    rq->dirty_lo = at;
  rq->dirty_hi = at + len;
}

/* The frame just written at the current stride, `len` bytes: in device memory it joins
 * the range the next copy takes. */
static void
rq_mark_written (EmuRq *rq, guint len)
{
  gsize at = (gsize) rq->hw_stride << rq->log_stride_size;
  if (rq->region_mr == NULL)
    return;
  rq_mark_range (rq, at, len);
}

static void
rq_advance (EmuPort *p, EmuRq *rq, guint32 n)
{
  rq->hw_stride += n;
  if (rq->hw_stride >= rq_strides (rq)) {
    emu_rq_commit (p, rq);
    rq->hw_wqe++;
    rq->hw_stride = 0;
    rq->region = NULL;
    rq->region_mr = NULL;
  }
}

/* In ERR every posted WQE is completed with a flush error, the current one from its next
 * stride (the RQ was created with flush_in_error_en), as far as the CQ has room; WQEs the
 * host posts later are flushed likewise. */
static void
rq_flush (EmuPort *p, EmuRq *rq)
{
  while (rq_posted (p, rq) > 0 && cq_has_room (rq->cq, 1)) {
    if (rq->split_header != 0) {
      /* one WQE, one flush CQE naming its counter */
      EmuCqe c = cqe_error (MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 0, rq->rqn, 0, (guint16) rq->hw_wqe, 0);
      rq_post (p, rq, &c, MLX5_CQE_RESP_ERR, FALSE);
      MLX5_COUNTER_ADD (p->c.rx_flushed, 1);
      rq->hw_wqe++;
      continue;
    }
    guint32 slot = rq->hw_wqe & ((1u << rq->log_wqes) - 1);
    guint32 left = rq_strides (rq) - rq->hw_stride;
    EmuCqe c = cqe_error (MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 0, rq->rqn, (guint16) slot,
        (guint16) rq->hw_stride, left << MLX5_MPRQ_STRIDES_SHIFT);
    rq_post (p, rq, &c, MLX5_CQE_RESP_ERR, FALSE);
    MLX5_COUNTER_ADD (p->c.rx_flushed, 1);
    rq_advance (p, rq, left);
  }
}

/* An RQ in ERR completes the WQEs the host posted since with flush errors in the device
 * pass that finds them, as a ConnectX does on their doorbell, whether frames come or
 * not. Returns whether there was any to flush. */
gboolean
emu_rq_flush_posted (EmuPort *p, EmuRq *rq)
{
  if (!rq->in_error || rq_posted (p, rq) == 0 || !cq_has_room (rq->cq, 1))
    return FALSE;
  rq_flush (p, rq);
  return TRUE;
}

/* Error CQE for `n` strides at the current position (consumes them); the RQ goes to ERR
 * and flushes what is posted, until the host recovers it (emu_rq_recover). */
static void
rq_error (EmuPort *p, EmuRq *rq, guint32 n, guint8 syndrome)
{
  if (rq->split_header != 0) {
    /* the WQE at the counter completes in error */
    EmuCqe c = cqe_error (syndrome, 0, rq->rqn, 0, (guint16) rq->hw_wqe, 0);
    rq_post (p, rq, &c, MLX5_CQE_RESP_ERR, FALSE);
    MLX5_COUNTER_ADD (p->c.rx_cqe_errors, 1);
    rq->hw_wqe++;
    rq->in_error = TRUE;
    rq_flush (p, rq);
    return;
  }
  guint32 slot = rq->hw_wqe & ((1u << rq->log_wqes) - 1);
  EmuCqe c = cqe_error (
      syndrome, 0, rq->rqn, (guint16) slot, (guint16) rq->hw_stride, n << MLX5_MPRQ_STRIDES_SHIFT);
  rq_post (p, rq, &c, MLX5_CQE_RESP_ERR, FALSE);
  MLX5_COUNTER_ADD (p->c.rx_cqe_errors, 1);
  rq_advance (p, rq, n);
  rq->in_error = TRUE;
  rq_flush (p, rq);
}

/* The WQE's region becomes current: `ptr` where the device writes it (the shadow of
 * device memory). */
static void
rq_take_region (EmuPort *p, EmuRq *rq, guint32 lkey, guint64 addr, guint8 *ptr)
{
  EmuMr *mr = emu_mr_lookup (p, lkey);
  rq->region = ptr;
  rq->region_mr = mr->shadow != NULL ? mr : NULL;
  rq->region_device = (guint8 *) (uintptr_t) addr;
}

/* Makes the WQE at hw_wqe current. A WQE whose data segment the IOMMU refuses, or whose
 * byte count is not the region size, has all its strides completed with an error CQE,
 * and the next one is tried. FALSE: no usable posted WQE (or no CQE room to say so). */
static gboolean
rq_fetch (EmuPort *p, EmuRq *rq)
{
  guint32 region_bytes = 1u << (rq->log_strides + rq->log_stride_size);

  while (rq->region == NULL) {
    if (rq->in_error || rq_posted (p, rq) == 0 || !cq_has_room (rq->cq, 1))
      return FALSE;
    guint32 slot = rq->hw_wqe & ((1u << rq->log_wqes) - 1);
    const volatile struct mlx5_mprq_wqe *wqe = (const volatile struct mlx5_mprq_wqe *) (rq->wqes +
        ((gsize) slot << MLX5_LOG_MPRQ_WQE_SIZE));
    guint32 byte_count = be32toh (wqe->dseg.byte_count);
    guint32 lkey = be32toh (wqe->dseg.lkey);
    guint64 addr = be64toh (wqe->dseg.addr);
    guint8 *ptr;
    rq->hw_stride = 0;
    if (byte_count != region_bytes)
      rq_error (p, rq, rq_strides (rq), MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
    else if (!emu_dma_ok (p, lkey, addr, byte_count, &ptr))
      rq_error (p, rq, rq_strides (rq), MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
    else
      rq_take_region (p, rq, lkey, addr, ptr);
  }
  return TRUE;
}

static guint32
rq_strides_for (const EmuRq *rq, guint len)
{
  return (len + (1u << rq->log_stride_size) - 1) >> rq->log_stride_size;
}

/* Would a frame of `len` bytes be written now (pause asks before sending)? */
gboolean
emu_rq_has_room (EmuPort *p, EmuRq *rq, guint len)
{
  if (rq->split_header != 0)
    return cq_has_room (rq->cq, 1) && rq_posted (p, rq) >= 1;
  guint32 need = rq_strides_for (rq, len);
  if (need > rq_strides (rq))
    return TRUE; /* it will be dropped whatever happens */
  if (rq->region != NULL && rq->hw_stride + need <= rq_strides (rq))
    return cq_has_room (rq->cq, 1);
  /* the current WQE (if any) is finished by a filler CQE; a next one must be posted */
  guint32 more = rq->region != NULL ? 2 : 1;
  return cq_has_room (rq->cq, more) && rq_posted (p, rq) >= more;
}

static void
rq_cqe (EmuPort *p, EmuRq *rq, guint32 slot, guint32 n_strides, guint len, guint64 ts,
    const EmuRxMeta *m)
{
  EmuCqe c = { { 0 } };
  CQE_SET (&c, wqe_id, slot);
  /* rss_hash_result (bytes 12..15; rdma-core calls them reserved) */
  cqe_set (&c, 12, 4, m->hash);
  CQE_SET (&c, hds_ip_ext, m->hds_ip_ext);
  CQE_SET (&c, l4_hdr_type_etc, m->l4_l3);
  CQE_SET (&c, byte_cnt, (n_strides << MLX5_MPRQ_STRIDES_SHIFT) | len);
  CQE_SET (&c, timestamp, ts);
  CQE_SET (&c, sop_drop_qpn, m->tag & MLX5_FLOW_TAG_BITS);
  CQE_SET (&c, wqe_counter, (guint16) rq->hw_stride);
  rq_post (p, rq, &c, MLX5_CQE_RESP_SEND, TRUE);
}

static inline void
rq_count_received (EmuPort *p, guint len)
{
  MLX5_COUNTER_ADD (p->c.rx_packets, 1);
  MLX5_COUNTER_ADD (p->c.rx_bytes, len);
}

/* a frame dropped: no posted WQE had room */
static inline void
rq_count_out_of_buffer (EmuPort *p, EmuRq *rq)
{
  rq->out_of_buffer++;
  MLX5_COUNTER_ADD (p->c.rx_out_of_buffer, 1);
}

/* Whether a frame may be written now: FALSE when the CQ has no room for its CQE (the frame
 * is dropped, counted as an overrun) or when an injected error takes it (an error CQE for
 * its `strides` strides, see emu_port_fault_rx_error). */
static gboolean
rq_room_no_fault (EmuPort *p, EmuRq *rq, guint32 strides)
{
  if (!cq_has_room (rq->cq, 1)) {
    MLX5_COUNTER_ADD (p->c.rx_cq_overruns, 1);
    return FALSE;
  }
  if (p->fault_rx_error == 0) {
    p->fault_rx_error = -1;
    rq_error (p, rq, strides, p->fault_rx_syndrome);
    return FALSE;
  }
  if (p->fault_rx_error > 0)
    p->fault_rx_error--;
  return TRUE;
}

/* Header-data split: the payload bytes just written at `dst` (the device's view of a
 * data segment): in device memory they join the range of the next copy, a copy going
 * first when they do not follow that range (another MR, or the ring wrapped). */
static void
rq_mark_payload (EmuPort *p, EmuRq *rq, guint32 lkey, const guint8 *dst, guint len)
{
  EmuMr *mr = emu_mr_lookup (p, lkey);
  if (mr->shadow == NULL)
    return;
  gsize at = (gsize) (dst - mr->shadow);
  if (rq->region_mr != mr || at < rq->dirty_hi)
    emu_rq_commit (p, rq);
  rq->region_mr = mr;
  rq->region = mr->shadow;
  rq->region_device = mr->addr;
  rq_mark_range (rq, at, len);
}

/* One frame into the WQE at the counter of a header-data split RQ: the first segment's
 * bytes of it into the first data segment, the rest into the second; one CQE with the
 * length and the WQE counter. A frame larger than both is a local length error, a segment
 * the IOMMU refuses a protection error (either stops the RQ, as on a ConnectX). */
static void
rq_deliver_split (
    EmuPort *p, EmuRq *rq, const guint8 *frame, guint len, guint64 ticks, const EmuRxMeta *m)
{
  if (G_UNLIKELY (rq->in_error)) {
    rq_flush (p, rq);
    goto out_of_buffer;
  }
  if (rq_posted (p, rq) == 0)
    goto out_of_buffer;
  if (!rq_room_no_fault (p, rq, 1))
    return;

  guint32 slot = rq->hw_wqe & ((1u << rq->log_wqes) - 1);
  const volatile struct mlx5_wqe_data_seg *seg =
      (const volatile struct mlx5_wqe_data_seg *) (rq->wqes +
          ((gsize) slot << MLX5_LOG_MPRQ_WQE_SIZE));
  guint32 bc[2], lkey[2];
  guint8 *dst[2] = { NULL, NULL };
  for (guint i = 0; i < 2; i++) {
    bc[i] = be32toh (seg[i].byte_count);
    lkey[i] = be32toh (seg[i].lkey);
  }
  if ((guint64) bc[0] + bc[1] < len) {
    rq_error (p, rq, 1, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
    return;
  }
  guint head = MIN (len, bc[0]);
  for (guint i = 0; i < 2; i++) {
    if (bc[i] != 0 && !emu_dma_ok (p, lkey[i], be64toh (seg[i].addr), bc[i], &dst[i])) {
      rq_error (p, rq, 1, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
      return;
    }
  }
  if (head > 0)
    memcpy (dst[0], frame, head);
  if (len > head) { /* bc[1] >= len - head > 0: the second segment was checked */
    memcpy (dst[1], frame + head, len - head);
    rq_mark_payload (p, rq, lkey[1], dst[1], len - head);
  }
  EmuCqe c = { { 0 } };
  cqe_set (&c, 12, 4, m->hash);
  CQE_SET (&c, hds_ip_ext, m->hds_ip_ext);
  CQE_SET (&c, l4_hdr_type_etc, m->l4_l3);
  CQE_SET (&c, byte_cnt, len);
  CQE_SET (&c, timestamp, emu_cqe_timestamp (p, ticks));
  CQE_SET (&c, sop_drop_qpn, m->tag & MLX5_FLOW_TAG_BITS);
  CQE_SET (&c, wqe_counter, (guint16) rq->hw_wqe);
  rq_post (p, rq, &c, MLX5_CQE_RESP_SEND, TRUE);
  rq->hw_wqe++;
  rq_count_received (p, len);
  return;

out_of_buffer:
  rq_count_out_of_buffer (p, rq);
}

/* Writes a received frame into the RQ (the PRM's striding RQ rules; see the top). */
static void
rq_deliver (
    EmuPort *p, EmuRq *rq, const guint8 *frame, guint len, guint64 ticks, const EmuRxMeta *m)
{
  if (rq->split_header != 0) {
    rq_deliver_split (p, rq, frame, len, ticks, m);
    return;
  }
  guint32 need = rq_strides_for (rq, len);
  guint32 strides = rq_strides (rq);

  if (need > strides) {
    MLX5_COUNTER_ADD (p->c.rx_oversize, 1);
    return;
  }
  if (G_UNLIKELY (rq->in_error)) {
    /* an RQ in ERR takes nothing; what the host posted meanwhile is flushed */
    rq_flush (p, rq);
    goto out_of_buffer;
  }
  if (G_UNLIKELY (rq->region == NULL) && !rq_fetch (p, rq))
    goto out_of_buffer;
  if (rq->hw_stride + need > strides) {
    /* the packet does not fit the rest of this WQE: a filler CQE skips it */
    guint32 slot = rq->hw_wqe & ((1u << rq->log_wqes) - 1);
    guint32 left = strides - rq->hw_stride;
    EmuCqe c = { { 0 } };
    CQE_SET (&c, wqe_id, (guint16) slot);
    CQE_SET (&c, byte_cnt, MLX5_MPRQ_FILLER_FLAG | (left << MLX5_MPRQ_STRIDES_SHIFT));
    CQE_SET (&c, wqe_counter, (guint16) rq->hw_stride);
    rq_post (p, rq, &c, MLX5_CQE_RESP_SEND, FALSE);
    MLX5_COUNTER_ADD (p->c.rx_fillers, 1);
    rq_advance (p, rq, left);
    if (!rq_fetch (p, rq))
      goto out_of_buffer;
  }
  if (!rq_room_no_fault (p, rq, need))
    return;

  guint32 slot = rq->hw_wqe & ((1u << rq->log_wqes) - 1);
  memcpy (rq->region + ((gsize) rq->hw_stride << rq->log_stride_size), frame, len);
  rq_mark_written (rq, len);
  rq_cqe (p, rq, slot, need, len, emu_cqe_timestamp (p, ticks), m);
  rq_advance (p, rq, need);
  rq_count_received (p, len);
  return;

out_of_buffer:
  rq_count_out_of_buffer (p, rq);
}

/* ---------------------------------------------------------------------------------- */
/* receiving: steering, then the RQ */

static EmuRq *
rss_pick (const EmuSteerGroup *g, guint32 hash)
{
  return g->rqs[mlx5_rss_rqt_pick (hash, g->n_rqs)];
}

/* The RQ a frame goes to and its tag; NULL when no group takes it. */
EmuRq *
emu_steer (EmuPort *p, const guint8 *frame, guint len, const EmuHeaders *h, EmuRxMeta *m)
{
  m->tag = 0;
  m->hash = 0;
  for (guint i = 0; i < p->groups->len; i++) {
    EmuSteerGroup *g = g_ptr_array_index (p->groups, i);
    if (g->n_rules == 0)
      continue;
    int idx = dq_flow_match (g->rules, g->n_rules, frame, len, -1);
    if (idx < 0)
      continue;
    const DqFlowRule *r = &g->rules[idx];
    if (r->keys & DQ_FLOW_MARK)
      m->tag = r->mark & MLX5_FLOW_TAG_BITS;
    if (r->keys & DQ_FLOW_QUEUE)
      return g->rqs[r->queue];
    if (g->n_rqs > 1)
      m->hash = emu_rss_hash (frame, h);
    return rss_pick (g, m->hash);
  }
  for (guint i = 0; i < p->groups->len; i++) {
    EmuSteerGroup *g = g_ptr_array_index (p->groups, i);
    if (g->n_rules != 0)
      continue;
    if (g->n_rqs > 1)
      m->hash = emu_rss_hash (frame, h);
    return rss_pick (g, m->hash);
  }
  return NULL;
}

/* The largest frame (without FCS) the port takes: MTU + Ethernet header + one VLAN
 * tag, as mlx5 sizes its hardware MTU. */
guint
emu_max_frame (EmuPort *p)
{
  return p->cfg.mtu + 18;
}

/* the CQE's l4_hdr_type_etc: the header types */
guint8
emu_rx_l4_l3 (const EmuHeaders *h)
{
  return (guint8) ((h->l4_type << MLX5_CQE_L4_HDR_SHIFT) | (h->l3_type << MLX5_CQE_L3_HDR_SHIFT));
}

/* A frame that arrives at the port at tick `at`, steered to `rq` (NULL: no group took
 * it) with tag, hash and header types in `m`. `h` NULL: m->hds_ip_ext is known (the
 * sender computed the checksums), else they are verified with the headers `h`. With
 * `lossless`, a frame its RQ has no room for is not taken: FALSE, nothing changed. */
gboolean
emu_rx_steered (EmuPort *p, const guint8 *frame, guint len, guint64 at, gboolean lossless,
    EmuRq *rq, EmuRxMeta *m, const EmuHeaders *h)
{
  if (lossless && rq != NULL && !emu_rq_has_room (p, rq, len))
    return FALSE;
  guint64 ts = emu_port_wire_start (p, &p->rx_wire, at, len);
  MLX5_COUNTER_ADD (p->c.rx_packets_phy, 1);
  MLX5_COUNTER_ADD (p->c.rx_bytes_phy, len);
  if (len < 14 || len > emu_max_frame (p)) {
    MLX5_COUNTER_ADD (p->c.rx_oversize, 1);
    return TRUE;
  }
  guint64 arrived = p->rx_arrived++;
  if (p->fault_rx_drop > 0 ||
      (p->cfg.loss_every != 0 && arrived % p->cfg.loss_every == p->cfg.loss_phase)) {
    if (p->fault_rx_drop > 0)
      p->fault_rx_drop--;
    MLX5_COUNTER_ADD (p->c.rx_fault_drops, 1);
    return TRUE;
  }
  if (rq == NULL) {
    MLX5_COUNTER_ADD (p->c.rx_steer_miss, 1);
    return TRUE;
  }
  if (h != NULL)
    m->hds_ip_ext = emu_csum_verify (frame, len, h);
  rq_deliver (p, rq, frame, len, ts, m);
  return TRUE;
}

/* A frame that arrives at the port at tick `at`: steered, then received (emu_rx_steered).
 * `known_ok` >= 0: its hds_ip_ext bits are known, else they are verified. */
gboolean
emu_rx_frame (
    EmuPort *p, const guint8 *frame, guint len, guint64 at, gboolean lossless, gint known_ok)
{
  EmuHeaders h;
  EmuRxMeta m;

  emu_parse (frame, len, &h);
  EmuRq *rq = emu_steer (p, frame, len, &h, &m);
  m.l4_l3 = emu_rx_l4_l3 (&h);
  m.hds_ip_ext = known_ok >= 0 ? (guint8) known_ok : 0;
  return emu_rx_steered (p, frame, len, at, lossless, rq, &m, known_ok >= 0 ? NULL : &h);
}
