/* The emulated ConnectX: device model (see emu.h for what it is and how to configure it).
 *
 * One device thread per port runs passes over the port's work, holding the port lock for
 * one pass: execute the SQ WQEs the host posted (each frame goes onto the cable), then
 * receive the frames waiting at the port's input (injected, or from another port's
 * cable), then the generator's frames. A received frame is steered to an RQ, written
 * into the strides of the RQ's current WQE, and completed with a CQE.
 *
 * PRM rules implemented here and in the receive side (emu-rx.c), one place each:
 *  - Doorbell records are big-endian counters the host writes: RQ word 0 (MLX5_RCV_DBR,
 *    16-bit WQE counter), SQ word 1 (MLX5_SND_DBR, 16-bit WQEBB counter), CQ word 0
 *    (24-bit consumer index). The device reads WQEs only below the counter (rq_posted,
 *    sq_run) and writes a CQE only where the consumer index lets it (cq_has_room).
 *  - SQ doorbell: the device starts on the UAR write, not the record: the first 8 bytes
 *    of the last WQE's control segment (WQE index, SQN) written to the doorbell register
 *    of either BlueFlame buffer. A doorbell for another SQ, or naming no posted WQE, is
 *    ignored and counted (sq_take_doorbells).
 *  - CQE ownership: the owner bit written is the wrap parity of the CQ producer index,
 *    and op_own is written last, after a barrier, in the store of the CQE's last word
 *    (cq_post).
 *  - Striding RQ: strides of the current WQE are filled in order; a packet takes
 *    ceil(len / stride) consecutive strides and never spans WQEs: when it does not fit
 *    the rest of the WQE, those strides are completed by a filler CQE and the packet goes
 *    to the next WQE (rq_deliver). CQE: byte_cnt = strides << 16 | len (bit 31 for a
 *    filler), wqe_id = the WQE's ring index, wqe_counter = the first stride (rq_cqe).
 *  - A WQE is used only after its data segment passes the IOMMU (the lkey names a
 *    registered region and [addr, addr + byte_count) lies in it) and byte_count is the
 *    region size; else its strides complete with an error CQE (rq_fetch).
 *  - SEND WQE execution: ctrl (opcode, WQE index, QPN, DS count), Ethernet segment
 *    (cs_flags, inline headers), data segments by pointer or inline; checksums per
 *    cs_flags; a CQE when the completion mode asks (CE 2/3) or on error (sq_execute).
 *  - Flow steering: the first rule that matches, in the order groups were set, tags the
 *    packet with its mark (24 bits, in sop_drop_qpn) and picks the RQ: its queue, or RSS
 *    over the group (Toeplitz hash into an indirection table of a power-of-two size,
 *    entry i = RQ i mod n) (steer).
 *  - Line rate and timestamps: see emu.h (emu_wire_start).
 *  - Compressed completions, for a CQ created with compression: runs of packet CQEs
 *    folded into sessions of the basic or the enhanced layout (emu-cq.c).
 */
#include "emu-cq.h"
#include "emu-rx.h"

#include "mlx5-dma.h"
#include "mlx5-mem.h"
#include "mlx5-rss.h"

#include <string.h>
#include <time.h>

__extension__ typedef unsigned __int128 EmuU128;

#define SQ_BUDGET 256
#define INPUT_BUDGET 256
#define GEN_BUDGET 256
#define IDLE_SPIN 64
#define IDLE_YIELD 128
#define IDLE_SLEEP_MAX_US 200

static GMutex registry_lock;
static GHashTable *registry; /* name -> EmuPort, open ports */

/* ---------------------------------------------------------------------------------- */
/* time */

guint64
emu_port_now_ns (EmuPort *p)
{
  struct timespec ts;
  clock_gettime (p->cfg.real_time ? CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
  return (guint64) ts.tv_sec * G_GUINT64_CONSTANT (1000000000) + (guint64) ts.tv_nsec;
}

static guint64
ns_to_ticks (EmuPort *p, guint64 ns)
{
  return (guint64) ((EmuU128) ns * p->cfg.freq_khz / 1000000);
}

guint64
emu_ticks_to_ns (EmuPort *p, guint64 ticks)
{
  return (guint64) ((EmuU128) ticks * 1000000 / p->cfg.freq_khz);
}

guint64
emu_port_ticks (EmuPort *p)
{
  return ns_to_ticks (p, emu_port_now_ns (p));
}

guint64
emu_port_freq_hz (EmuPort *p)
{
  return p->freq_hz;
}

guint64
emu_port_rate_bps (EmuPort *p)
{
  return p->cfg.rate_bps;
}

/* the CQE timestamp field: raw ticks, or with clock=rt seconds << 32 | ns */
guint64
emu_cqe_timestamp (EmuPort *p, guint64 ticks)
{
  return p->cfg.real_time ? mlx5_ns_to_rt_ts (ticks) : ticks;
}

/* ---------------------------------------------------------------------------------- */
/* the wire: frames back to back at line rate (formula in emu.h) */

static guint64
wire_bits (EmuPort *p, guint len)
{
  return 8 * (guint64) (MAX (len, EMU_MIN_FRAME) + p->cfg.overhead);
}

/* the wire is busy until the train's last bit: ceil (S * f / R) ticks after its start */
static inline guint64
wire_busy_until (const EmuWire *w)
{
  return w->anchor + w->ticks + (w->rem != 0 ? 1 : 0);
}

guint64
emu_wire_next (const EmuWire *w, guint64 at)
{
  return at >= wire_busy_until (w) ? at : w->anchor + w->ticks;
}

guint64
emu_wire_start (EmuWire *w, guint64 freq_hz, guint64 rate_bps, guint64 at, guint64 bits)
{
  if (at >= wire_busy_until (w)) {
    /* the wire was idle: a new train starts */
    w->anchor = at;
    w->ticks = 0;
    w->rem = 0;
  }
  guint64 start = w->anchor + w->ticks; /* floor (S * f / R) */

  if (bits != w->step_bits) {
    w->step_bits = bits;
    w->step_ticks = bits * freq_hz / rate_bps;
    w->step_rem = bits * freq_hz % rate_bps;
  }
  w->ticks += w->step_ticks;
  w->rem += w->step_rem;
  if (w->rem >= rate_bps) {
    w->rem -= rate_bps;
    w->ticks++;
  }
  return start;
}

guint64
emu_port_wire_start (EmuPort *p, EmuWire *w, guint64 at, guint len)
{
  return emu_wire_start (w, p->freq_hz, p->cfg.rate_bps, at, wire_bits (p, len));
}

/* ---------------------------------------------------------------------------------- */
/* the IOMMU */

EmuMr *
emu_mr_lookup (EmuPort *p, guint32 lkey)
{
  guint idx = lkey >> 8;
  if (idx >= p->mrs->len)
    return NULL;
  EmuMr *mr = g_ptr_array_index (p->mrs, idx);
  if (mr == NULL || mr->lkey != lkey)
    return NULL;
  return mr;
}

/* The region through which the device may touch [addr, addr + len) by `lkey`, or NULL:
 * a refusal is counted (a real device would raise a protection error). */
static EmuMr *
emu_dma_region (EmuPort *p, guint32 lkey, guint64 addr, guint64 len)
{
  EmuMr *mr = emu_mr_lookup (p, lkey);
  guint64 base = mr != NULL ? (guint64) (uintptr_t) mr->addr : 0;

  if (mr == NULL || addr < base || len > mr->size || addr - base > mr->size - len) {
    MLX5_COUNTER_ADD (p->c.iommu_faults, 1);
    return NULL;
  }
  return mr;
}

/* Whether the device may touch [addr, addr + len) through `lkey` by CPU access; the
 * pointer if so (into the shadow of device memory it writes; device memory it only reads
 * by copies has none and is refused here). */
gboolean
emu_dma_ok (EmuPort *p, guint32 lkey, guint64 addr, guint64 len, guint8 **ptr)
{
  EmuMr *mr = emu_dma_region (p, lkey, addr, len);
  if (mr != NULL && mr->device && mr->shadow == NULL) {
    MLX5_COUNTER_ADD (p->c.iommu_faults, 1);
    mr = NULL;
  }
  if (mr == NULL)
    return FALSE;
  guint64 at = addr - (guint64) (uintptr_t) mr->addr;
  *ptr = mr->shadow != NULL ? mr->shadow + at : (guint8 *) (uintptr_t) addr;
  return TRUE;
}

/* ---------------------------------------------------------------------------------- */
/* send queues */

typedef struct {
  gboolean resolved;
  EmuPort *peer; /* referenced; NULL: no link */
} EmuCable;

static EmuPort *
cable_peer (EmuPort *p, EmuCable *cable)
{
  if (p->cfg.peer_none)
    return NULL;
  if (p->cfg.peer[0] == '\0')
    return p;
  if (!cable->resolved) {
    cable->peer = emu_port_lookup (p->cfg.peer);
    cable->resolved = TRUE;
  }
  return cable->peer;
}

/* The WQE at sq->hw_ci, its WQEBBs copied out in order (the ring wraps). */
typedef struct {
  guint8 bytes[16 * MLX5_SEND_WQE_BB];
  guint32 opcode;
  guint32 opmod;
  guint32 index;
  guint32 qpn;
  guint ds;
  guint n_bb;
  gboolean truncated; /* its DS count runs past what the doorbell covers */
  gboolean signaled;
} EmuSendWqe;

static void
sq_copy_wqe (EmuSq *sq, guint32 posted, EmuSendWqe *w)
{
  guint32 mask = (1u << sq->log_wqebbs) - 1;
  memcpy (
      w->bytes, sq->wqes + ((gsize) (sq->hw_ci & mask) << MLX5_SEND_WQE_SHIFT), MLX5_SEND_WQE_BB);
  const struct mlx5_wqe_ctrl_seg *ctrl = (const struct mlx5_wqe_ctrl_seg *) w->bytes;
  guint32 opmod_idx_opcode = be32toh (ctrl->opmod_idx_opcode);
  guint32 qpn_ds = be32toh (ctrl->qpn_ds);
  w->opcode = opmod_idx_opcode & 0xff;
  w->opmod = opmod_idx_opcode >> 24;
  w->index = (opmod_idx_opcode >> 8) & 0xffff;
  w->qpn = qpn_ds >> 8;
  w->ds = qpn_ds & MLX5_WQE_DS_MASK;
  /* CE 2 and 3 ask for a CQE on success; errors always complete */
  w->signaled = (ctrl->fm_ce_se & MLX5_WQE_CTRL_CE_MASK) >= MLX5_WQE_CTRL_CQ_UPDATE;
  w->n_bb = MAX (1u, (w->ds + 3) / 4);
  /* never read past what the doorbell covers: such a WQE is malformed */
  w->truncated = w->n_bb > posted;
  w->n_bb = MIN (w->n_bb, posted);
  for (guint b = 1; b < w->n_bb; b++)
    memcpy (w->bytes + (gsize) b * MLX5_SEND_WQE_BB,
        sq->wqes + ((gsize) ((sq->hw_ci + b) & mask) << MLX5_SEND_WQE_SHIFT), MLX5_SEND_WQE_BB);
}

/* A pointer data segment's bytes, through the IOMMU, appended to the frame in the bounce
 * buffer (*len bytes so far; with `copy` FALSE only checked). 0, or the error syndrome. */
static guint8
sq_gather_ptr (EmuPort *p, const struct mlx5_wqe_data_seg *ds, gboolean copy, guint *len)
{
  guint32 bc = be32toh (ds->byte_count);
  guint64 addr = be64toh (ds->addr);
  if (*len + (guint64) bc > EMU_MAX_FRAME)
    return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  if (bc == 0)
    return 0;
  EmuMr *mr = emu_dma_region (p, be32toh (ds->lkey), addr, bc);
  if (mr == NULL)
    return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
  if (copy && mr->device && mr->shadow == NULL) {
    /* device memory: read by a copy, as the NIC's DMA read would */
    if (!mr->memory.read (
            p->bounce + *len, (gconstpointer) (uintptr_t) addr, bc, mr->memory.user)) {
      MLX5_COUNTER_ADD (p->c.dma_read_errors, 1);
      return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    }
    MLX5_COUNTER_ADD (p->c.tx_device_reads, 1);
  } else if (copy) {
    guint64 at = addr - (guint64) (uintptr_t) mr->addr;
    memcpy (
        p->bounce + *len, mr->shadow != NULL ? mr->shadow + at : (guint8 *) (uintptr_t) addr, bc);
  }
  *len += bc;
  return 0;
}

/* Gathers a SEND WQE's frame into the bounce buffer: inline headers of the Ethernet
 * segment, then the data segments (pointer segments through the IOMMU, or inline; with
 * `copy` FALSE pointer segments are only checked, their bytes not read: a frame that goes
 * nowhere). Returns 0 and the length, or the error syndrome. */
static guint8
sq_gather (EmuPort *p, const EmuSendWqe *w, gboolean copy, guint *frame_len, guint8 *cs_flags)
{
  guint end = MIN (w->ds, w->n_bb * 4) * MLX5_WQE_DS_SIZE;
  guint len = 0;

  if (w->ds < 3 || end < 3 * MLX5_WQE_DS_SIZE)
    return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  const struct mlx5_wqe_eth_seg *eth =
      (const struct mlx5_wqe_eth_seg *) (w->bytes + MLX5_WQE_DS_SIZE);
  guint inl = be16toh (eth->inline_hdr_sz);
  guint at = MLX5_WQE_DS_SIZE + G_STRUCT_OFFSET (struct mlx5_wqe_eth_seg, inline_hdr_start);
  *cs_flags = eth->cs_flags;
  /* the segment holds 2 inline bytes; more continue in the following 16-byte units */
  if (at + inl > end || inl > EMU_MAX_FRAME)
    return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  memcpy (p->bounce, w->bytes + at, inl);
  len = inl;
  guint off =
      2 * MLX5_WQE_DS_SIZE + ((MAX (inl, 2u) - 2 + MLX5_WQE_DS_SIZE - 1) & ~(MLX5_WQE_DS_SIZE - 1));

  while (off + MLX5_WQE_DS_SIZE <= end) {
    const struct mlx5_wqe_data_seg *ds = (const struct mlx5_wqe_data_seg *) (w->bytes + off);
    guint32 bc = be32toh (ds->byte_count);
    if (bc & MLX5_INLINE_SEG) {
      guint32 n = bc & ~MLX5_INLINE_SEG;
      if (off + 4 + (guint64) n > end || len + (guint64) n > EMU_MAX_FRAME)
        return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
      memcpy (p->bounce + len, w->bytes + off + 4, n);
      len += n;
      off += (4 + n + MLX5_WQE_DS_SIZE - 1) & ~(MLX5_WQE_DS_SIZE - 1);
      continue;
    }
    guint8 syndrome = sq_gather_ptr (p, ds, copy, &len);
    if (syndrome != 0)
      return syndrome;
    off += MLX5_WQE_DS_SIZE;
  }
  /* the MAC refuses runts and frames over the MTU */
  if (len < 14 || len > emu_max_frame (p))
    return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  /* a port of minimum inline mode L2 takes no WQE without the Ethernet header inline */
  if (p->cfg.inline_l2 && inl < MIN (len, MLX5_ETH_L2_INLINE_SIZE))
    return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  *frame_len = len;
  return 0;
}

static void
sq_cqe (EmuSq *sq, guint16 index, guint64 ts)
{
  EmuCqe c = { { 0 } };
  CQE_SET (&c, timestamp, ts);
  CQE_SET (&c, sop_drop_qpn, sq->sqn & 0xffffff);
  CQE_SET (&c, wqe_counter, index);
  cq_post (sq->cq, &c, MLX5_CQE_REQ);
}

/* In ERR: the WQE at hw_ci completes with a flush error (every WQE does, signalled or
 * not), unsent. FALSE: no CQE room yet. */
static gboolean
sq_flush_one (EmuPort *p, EmuSq *sq, guint32 posted)
{
  EmuSendWqe w;
  sq_copy_wqe (sq, posted, &w);
  if (!cq_has_room (sq->cq, 1))
    return FALSE;
  cq_error (sq->cq, MLX5_CQE_REQ_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, (guint8) w.opcode, sq->sqn, 0,
      (guint16) (sq->hw_ci & 0xffff), 0);
  MLX5_COUNTER_ADD (p->c.tx_cqes, 1);
  MLX5_COUNTER_ADD (p->c.tx_flushed, 1);
  sq->hw_ci += w.n_bb;
  return TRUE;
}

/* A WAIT on time (mlx5-dma.h) at hw_ci: 0 with *passed TRUE when the port's real-time
 * clock is past its time, FALSE while it waits; or the error syndrome of a WAIT this
 * device cannot do. Once passed, sq->release says when the SEND behind it is ready: the
 * WAIT's time, or when the device reached the WAIT if that was later (the SQ's own time,
 * or when the doorbell that posted it came), as a NIC that executes an SQ at once. */
static guint8
sq_wait (EmuPort *p, EmuSq *sq, const EmuSendWqe *w, guint64 now, gboolean *passed)
{
  *passed = FALSE;
  if (w->opmod != MLX5_OPC_MOD_WAIT_TIME || w->ds < 3 || !p->cfg.real_time)
    return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  const Mlx5WaitSeg *seg = (const Mlx5WaitSeg *) (w->bytes + MLX5_WQE_DS_SIZE);
  if (be32toh (seg->operation) != MLX5_WAIT_COND_CYCLIC_SMALLER)
    return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  guint64 mask = be64toh (seg->mask);
  if (mask != MLX5_WAIT_TIME_MASK)
    return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  /* with clock=rt a tick is a ns of CLOCK_REALTIME: both times as ns in the 8 s window */
  guint64 at = mlx5_rt_ts_to_ns (be64toh (seg->value) & mask);
  guint64 clock = mlx5_rt_ts_to_ns (mlx5_ns_to_rt_ts (now) & mask);
  guint64 since = (clock + MLX5_WAIT_WINDOW_NS - at % MLX5_WAIT_WINDOW_NS) % MLX5_WAIT_WINDOW_NS;
  if (since >= MLX5_WAIT_WINDOW_NS / 2)
    return 0;
  sq->release = MAX (now - since, MAX (sq->model_now, sq->db_tick));
  sq->model_now = sq->release;
  sq->has_release = TRUE;
  *passed = TRUE;
  return 0;
}

/* Whether the frame in the bounce buffer may go to `peer` now: with pause, a full RQ
 * (this port) or a full input queue (another port) holds it back. */
static gboolean
sq_peer_has_room (EmuPort *p, EmuPort *peer, guint len)
{
  if (!p->cfg.pause || peer == NULL)
    return TRUE;
  if (peer == p) {
    EmuHeaders h;
    EmuRxMeta m;
    emu_parse (p->bounce, len, &h);
    EmuRq *rq = emu_steer (p, p->bounce, len, &h, &m);
    return rq == NULL || emu_rq_has_room (p, rq, len);
  }
  g_mutex_lock (&peer->in_lock);
  guint waiting = peer->input.length;
  g_mutex_unlock (&peer->in_lock);
  return waiting < EMU_PEER_PAUSE;
}

/* How far ahead of its clock the device lets a paced SQ run */
#define EMU_PACE_AHEAD_NS 1000000

/* The tick at which the SQ's pacer lets a frame of `len` bytes that is ready at `at`
 * go; FALSE when that is more than EMU_PACE_AHEAD_NS after `now` (the frame waits). */
static gboolean
sq_pace_due (EmuPort *p, EmuSq *sq, guint64 at, guint64 now)
{
  if (sq->rate_bps == 0)
    return TRUE;
  if (sq->pace_ready != 0)
    at = sq->pace_ready;
  if (emu_wire_next (&sq->pace, at) <= now + ns_to_ticks (p, EMU_PACE_AHEAD_NS))
    return TRUE;
  if (sq->pace_ready == 0)
    sq->pace_ready = at;
  return FALSE;
}

/* Sends the frame in the bounce buffer, ready at tick `at`: through the pacer, onto the
 * wire, to the peer. Returns its start tick. */
static guint64
sq_transmit (EmuPort *p, EmuSq *sq, EmuPort *peer, guint len, guint64 at, gint known_ok)
{
  if (sq->rate_bps != 0) {
    if (sq->pace_ready != 0)
      at = sq->pace_ready;
    at = emu_wire_start (&sq->pace, p->freq_hz, sq->rate_bps, at, 8 * (guint64) len);
    sq->pace_ready = 0;
  }
  guint64 start = emu_port_wire_start (p, &p->tx_wire, at, len);
  if (MLX5_COUNTER_GET (p->c.tx_packets) == 0)
    MLX5_COUNTER_SET (p->c.tx_first_start, start);
  MLX5_COUNTER_SET (p->c.tx_last_start, start);
  if (peer == p) {
    emu_rx_frame (p, p->bounce, len, start, FALSE, known_ok);
  } else if (peer != NULL) {
    EmuFrame *f = g_malloc (sizeof (EmuFrame) + len);
    f->len = len;
    f->lossless = p->cfg.pause;
    f->arrival_ns = emu_ticks_to_ns (p, start);
    memcpy (f->data, p->bounce, len);
    g_mutex_lock (&peer->in_lock);
    g_queue_push_tail (&peer->input, f);
    g_mutex_unlock (&peer->in_lock);
    emu_port_kick (peer);
  } else {
    MLX5_COUNTER_ADD (p->c.tx_no_link, 1);
  }
  MLX5_COUNTER_ADD (p->c.tx_packets, 1);
  MLX5_COUNTER_ADD (p->c.tx_bytes, len);
  return start;
}

/* The device's checksums of the frame in the bounce buffer, as cs_flags ask; returns
 * the CQE checksum bits a receiver here need not verify again (-1: verify). */
static gint
sq_checksum (EmuPort *p, guint len, guint8 cs_flags)
{
  if (cs_flags == 0)
    return -1;
  guint done = emu_csum_fill (p->bounce, len, cs_flags);
  if (done & 1)
    MLX5_COUNTER_ADD (p->c.tx_csum_l3, 1);
  if (done & 2)
    MLX5_COUNTER_ADD (p->c.tx_csum_l4, 1);
  EmuHeaders h;
  emu_parse (p->bounce, len, &h);
  if (done == 3 || (done == 1 && h.l4_type == MLX5_CQE_L4_HDR_TYPE_NONE))
    return MLX5_CQE_L2_OK | MLX5_CQE_L3_OK | (done == 3 ? MLX5_CQE_L4_OK : 0);
  return -1;
}

/* Sends the frame in the bounce buffer, ready at tick `at`, with the checksums cs_flags
 * asks for; *start: when it went on the wire. FALSE: the pacer or pause holds it back. */
static gboolean
sq_send_frame (EmuPort *p, EmuSq *sq, EmuPort *peer, guint len, guint64 at, guint64 now,
    guint8 cs_flags, guint64 *start)
{
  if (!sq_pace_due (p, sq, at, now))
    return FALSE;
  if (!sq_peer_has_room (p, peer, len)) {
    /* held back by pause: ready no earlier than now */
    sq->model_now = MAX (sq->model_now, now);
    MLX5_COUNTER_ADD (p->c.pause_waits, 1);
    return FALSE;
  }
  *start = sq_transmit (p, sq, peer, len, at, peer != NULL ? sq_checksum (p, len, cs_flags) : -1);
  sq->model_now = at;
  return TRUE;
}

/* The error CQE of the WQE at hw_ci; the SQ goes to ERR (flush_in_error_en): what
 * follows is flushed until the host recovers it. */
static void
sq_fail (EmuPort *p, EmuSq *sq, const EmuSendWqe *w, guint8 syndrome)
{
  cq_error (
      sq->cq, MLX5_CQE_REQ_ERR, syndrome, (guint8) w->opcode, sq->sqn, 0, (guint16) w->index, 0);
  MLX5_COUNTER_ADD (p->c.tx_cqes, 1);
  MLX5_COUNTER_ADD (p->c.tx_cqe_errors, 1);
  sq->hw_ci += w->n_bb;
  sq->in_error = TRUE;
  sq->has_release = FALSE;
  sq->pace_ready = 0;
  sq->empw_next = 0;
  sq->empw_checked = FALSE;
}

/* An injected error (emu_port_fault_tx_error) for a WQE of `packets` packets: the
 * syndrome when the packet the fault waits for is one of them, else 0. */
static guint8
sq_fault (EmuPort *p, guint packets)
{
  if (p->fault_tx_error < 0)
    return 0;
  if (p->fault_tx_error < packets) {
    p->fault_tx_error = -1;
    return p->fault_tx_syndrome;
  }
  p->fault_tx_error -= packets;
  return 0;
}

/* Checks an eMPW WQE before any of its packets goes: its Ethernet segment, every data
 * segment through the IOMMU and every length against the MAC; then the fault injection.
 * 0, or the syndrome that fails the whole WQE. */
static guint8
sq_empw_check (EmuPort *p, const EmuSendWqe *w, guint n_ds)
{
  const struct mlx5_wqe_eth_seg *eth =
      (const struct mlx5_wqe_eth_seg *) (w->bytes + MLX5_WQE_DS_SIZE);
  if (n_ds < 3 || eth->inline_hdr_sz != 0 || p->cfg.inline_l2)
    return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  for (guint j = 2; j < n_ds; j++) {
    const struct mlx5_wqe_data_seg *ds =
        (const struct mlx5_wqe_data_seg *) (w->bytes + (gsize) j * MLX5_WQE_DS_SIZE);
    guint len = 0;
    guint8 syndrome = sq_gather_ptr (p, ds, FALSE, &len);
    if (syndrome != 0)
      return syndrome;
    if (len < 14 || len > emu_max_frame (p))
      return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  }
  return sq_fault (p, n_ds - 2);
}

/* The eMPW WQE at hw_ci (mlx5-dma.h): its packets from sq->empw_next on, one data segment
 * each, through the pacer and onto the wire as SENDs go; the CQE (when asked) once all
 * are sent, stamped with the last one's start. FALSE: a packet has to wait (the pacer,
 * pause); the WQE goes on from that packet later. An error (a data segment the IOMMU
 * refuses, a frame the MAC refuses, inline headers) is found before any packet goes and
 * completes the WQE with an error CQE, none of its packets sent. */
static gboolean
sq_execute_empw (EmuPort *p, EmuSq *sq, const EmuSendWqe *w, guint64 now, EmuCable *cable)
{
  const struct mlx5_wqe_eth_seg *eth =
      (const struct mlx5_wqe_eth_seg *) (w->bytes + MLX5_WQE_DS_SIZE);
  guint n_ds = MIN (w->ds, w->n_bb * 4);
  EmuPort *peer = cable_peer (p, cable);
  guint64 start = now;

  if (!sq->empw_checked) {
    guint8 syndrome = sq_empw_check (p, w, n_ds);
    if (syndrome != 0) {
      sq_fail (p, sq, w, syndrome);
      return TRUE;
    }
    sq->empw_checked = TRUE;
  }
  for (guint j = 2 + sq->empw_next; j < n_ds; j++) {
    const struct mlx5_wqe_data_seg *ds =
        (const struct mlx5_wqe_data_seg *) (w->bytes + (gsize) j * MLX5_WQE_DS_SIZE);
    guint len = 0;
    (void) sq_gather_ptr (p, ds, peer != NULL, &len); /* checked above */
    if (!sq_send_frame (
            p, sq, peer, len, MAX (sq->model_now, sq->db_tick), now, eth->cs_flags, &start))
      return FALSE;
    sq->empw_next = j - 1;
  }
  sq->empw_next = 0;
  sq->empw_checked = FALSE;
  MLX5_COUNTER_ADD (p->c.tx_empw_wqes, 1);
  if (w->signaled) {
    sq_cqe (sq, (guint16) w->index, emu_cqe_timestamp (p, start));
    MLX5_COUNTER_ADD (p->c.tx_cqes, 1);
  }
  sq->hw_ci += w->n_bb;
  return TRUE;
}

/* Executes the WQE at hw_ci. TRUE: done (hw_ci moved on); FALSE: it has to wait (no
 * CQE room, a WAIT's time not come, the pacer, or pause holds the frame back). */
static gboolean
sq_execute (EmuPort *p, EmuSq *sq, guint32 posted, guint64 now, EmuCable *cable)
{
  EmuSendWqe w;
  guint8 syndrome = 0, cs_flags = 0;
  guint len = 0;

  sq_copy_wqe (sq, posted, &w);
  if (!cq_has_room (sq->cq, 1))
    return FALSE;
  /* a WQE of another index or QP, or an opcode we do not execute (SEND, eMPW, WAIT and
   * NOP are what we know) is a local QP operation error */
  if (w.index != (sq->hw_ci & 0xffff) || w.qpn != sq->sqn ||
      (w.opcode != MLX5_OPCODE_SEND && w.opcode != MLX5_OPCODE_NOP &&
          w.opcode != MLX5_OPCODE_WAIT && w.opcode != MLX5_OPCODE_ENHANCED_MPSW))
    syndrome = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  else if (w.truncated)
    syndrome = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  else if (w.opcode == MLX5_OPCODE_ENHANCED_MPSW)
    return sq_execute_empw (p, sq, &w, now, cable);
  EmuPort *peer = cable_peer (p, cable);
  if (syndrome == 0 && w.opcode == MLX5_OPCODE_SEND)
    syndrome = sq_gather (p, &w, peer != NULL, &len, &cs_flags);
  if (syndrome == 0 && w.opcode == MLX5_OPCODE_SEND)
    syndrome = sq_fault (p, 1);
  guint64 start = now;
  if (syndrome == 0 && w.opcode == MLX5_OPCODE_WAIT) {
    gboolean passed;
    syndrome = sq_wait (p, sq, &w, now, &passed);
    if (syndrome == 0 && !passed)
      return FALSE;
    start = sq->release;
    if (syndrome == 0)
      MLX5_COUNTER_ADD (p->c.tx_waits, 1);
  }
  if (syndrome != 0) {
    sq_fail (p, sq, &w, syndrome);
    return TRUE;
  }

  if (w.opcode == MLX5_OPCODE_SEND) {
    /* ready when the SQ got to it: behind a WAIT at its release, else when the SQ's
     * previous WQE was or its doorbell came, as a NIC that executes an SQ at once */
    guint64 at = sq->has_release ? sq->release : MAX (sq->model_now, sq->db_tick);
    if (!sq_send_frame (p, sq, peer, len, at, now, cs_flags, &start))
      return FALSE;
    sq->has_release = FALSE;
  }
  if (w.signaled) {
    sq_cqe (sq, (guint16) w.index, emu_cqe_timestamp (p, start));
    MLX5_COUNTER_ADD (p->c.tx_cqes, 1);
  }
  sq->hw_ci += w.n_bb;
  return TRUE;
}

/* ---------------------------------------------------------------------------------- */
/* SQ doorbells
 *
 * The host posts WQEs, moves the doorbell record (MLX5_SND_DBR: WQEBBs posted), then
 * writes the first 8 bytes of the last WQE's control segment to the doorbell register
 * at the start of one of the UAR page's two BlueFlame buffers (alternately):
 * opmod_idx_opcode (the WQE index in bits 8..23) and qpn_ds (the SQN in bits 8..31),
 * both big-endian. The device acts on that write: it executes the WQEs that start
 * before the one named, and that one, never past the record. What a NIC would ignore
 * is ignored here and counted in doorbell_errors: a doorbell of another SQ, one naming
 * no posted WQE (at or past the record, or a slot whose control segment carries
 * another index), and a record that moved with no doorbell for EMU_STRAY_RECORD_US. A
 * doorbell naming a WQE already executed (a late one of two written between two
 * looks) has nothing left to start and is dropped silently. The registers are plain
 * memory here: a write is seen as a non-zero value (a control segment is never all
 * zeros), taken with an exchange so that none is lost. */

#define EMU_STRAY_RECORD_US G_GINT64_CONSTANT (100000)

static inline guint32
sq_record (EmuSq *sq)
{
  return be32toh (__atomic_load_n (&sq->dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE)) & 0xffff;
}

/* WQEBBs from hw_ci to what the doorbells cover (0: none; a WQE of several WQEBBs
 * ends past db_end) */
static inline guint32
sq_covered (EmuSq *sq)
{
  guint32 covered = (sq->db_end - sq->hw_ci) & 0xffff;
  return covered <= (1u << sq->log_wqebbs) ? covered : 0;
}

/* Checks one doorbell against this SQ and its ring; moves db_end when it names a WQE
 * not yet covered. FALSE: a doorbell a NIC ignores. */
static gboolean
sq_ring_doorbell (EmuSq *sq, guint64 doorbell, guint32 record)
{
  guint32 w[2];
  memcpy (w, &doorbell, sizeof w);
  guint32 index = (be32toh (w[0]) >> 8) & 0xffff;
  guint32 sqn = be32toh (w[1]) >> 8;
  guint32 size = 1u << sq->log_wqebbs;

  if (sqn != sq->sqn)
    return FALSE;
  guint32 ahead = (index - sq->hw_ci) & 0xffff;
  if (ahead >= ((record - sq->hw_ci) & 0xffff)) {
    /* behind hw_ci by at most a ring: already executed; else not posted */
    guint32 behind = (sq->hw_ci - index) & 0xffff;
    return behind != 0 && behind <= size;
  }
  const struct mlx5_wqe_ctrl_seg *ctrl = (const struct mlx5_wqe_ctrl_seg *) (sq->wqes +
      ((gsize) (index & (size - 1)) << MLX5_SEND_WQE_SHIFT));
  if (((be32toh (ctrl->opmod_idx_opcode) >> 8) & 0xffff) != index)
    return FALSE;
  if (ahead + 1 > sq_covered (sq))
    sq->db_end = (index + 1) & 0xffff;
  return TRUE;
}

/* Takes the doorbells written since the last look, then the record they are checked
 * against (written before them). */
static void
sq_take_doorbells (EmuPort *p, EmuSq *sq, guint64 now)
{
  for (guint b = 0; b < 2; b++) {
    guint64 *reg = (guint64 *) (sq->bf + (gsize) b * EMU_BF_SIZE);
    if (G_LIKELY (__atomic_load_n (reg, __ATOMIC_RELAXED) == 0))
      continue;
    guint64 doorbell = __atomic_exchange_n (reg, 0, __ATOMIC_ACQUIRE);
    gboolean was_idle = sq_covered (sq) == 0;
    if (!sq_ring_doorbell (sq, doorbell, sq_record (sq)))
      MLX5_COUNTER_ADD (p->c.doorbell_errors, 1);
    else if (was_idle)
      sq->db_tick = now; /* the SQ has work again from here on */
  }
}

/* A record ahead of what the doorbells cover: normal for the moment between the two
 * writes, an error when no doorbell follows. */
static void
sq_check_stray_record (EmuPort *p, EmuSq *sq, guint32 record)
{
  if (((record - sq->hw_ci) & 0xffff) == 0 || sq_covered (sq) != 0) {
    sq->stray_since = 0;
    return;
  }
  gint64 now = g_get_monotonic_time ();
  if (sq->stray_since == 0 || sq->stray_pi != record) {
    sq->stray_pi = record;
    sq->stray_since = now;
    sq->stray_counted = FALSE;
  } else if (!sq->stray_counted && now - sq->stray_since >= EMU_STRAY_RECORD_US) {
    MLX5_COUNTER_ADD (p->c.doorbell_errors, 1);
    sq->stray_counted = TRUE;
  }
}

static guint
sq_run (EmuPort *p, EmuSq *sq, guint64 now, EmuCable *cable)
{
  guint done = 0;

  sq_take_doorbells (p, sq, now);
  while (done < SQ_BUDGET && sq_covered (sq) != 0) {
    guint32 posted = (sq_record (sq) - sq->hw_ci) & 0xffff;
    if (G_UNLIKELY (posted == 0 || posted > (1u << sq->log_wqebbs))) {
      /* a record moved back or past the ring: wait for a sane one */
      MLX5_COUNTER_ADD (p->c.doorbell_errors, 1);
      break;
    }
    if (G_UNLIKELY (sq->in_error) ? !sq_flush_one (p, sq, posted)
                                  : !sq_execute (p, sq, posted, now, cable))
      break;
    done++;
  }
  sq_check_stray_record (p, sq, sq_record (sq));
  return done;
}

/* ---------------------------------------------------------------------------------- */
/* frames from outside, and the generator */

/* Receives frames from the input queue in order. A frame from a cable with pause that
 * finds no room stays at the head (with everything after it) until there is. */
static guint
input_run (EmuPort *p)
{
  EmuFrame *frames[INPUT_BUDGET];
  guint n = 0, done = 0;

  g_mutex_lock (&p->in_lock);
  while (n < INPUT_BUDGET && !g_queue_is_empty (&p->input))
    frames[n++] = g_queue_pop_head (&p->input);
  g_mutex_unlock (&p->in_lock);
  for (; done < n; done++) {
    EmuFrame *f = frames[done];
    if (!emu_rx_frame (p, f->data, f->len, ns_to_ticks (p, f->arrival_ns), f->lossless, -1))
      break;
    g_free (f);
  }
  if (done < n) {
    g_mutex_lock (&p->in_lock);
    for (guint i = n; i > done; i--)
      g_queue_push_head (&p->input, frames[i - 1]);
    g_mutex_unlock (&p->in_lock);
  }
  return done;
}

/* The generator's frames all steer alike (only the payload changes, steering reads
 * headers): the template is steered once, again only when the rules change. */
static void
gen_steer (EmuPort *p, EmuGen *g)
{
  EmuHeaders h;

  if (g->steer_version == p->steer_version)
    return;
  emu_parse (g->frame, g->cfg.frame_len, &h);
  g->steer_rq = emu_steer (p, g->frame, g->cfg.frame_len, &h, &g->steer_meta);
  g->steer_meta.l4_l3 = emu_rx_l4_l3 (&h);
  /* the generator's checksums are right */
  g->steer_meta.hds_ip_ext = MLX5_CQE_L2_OK | MLX5_CQE_L3_OK | MLX5_CQE_L4_OK;
  g->steer_version = p->steer_version;
}

static guint
gen_run (EmuPort *p, guint64 now)
{
  EmuGen *g = p->gen;
  guint n = 0;

  if (g == NULL || !g->active)
    return 0;
  gen_steer (p, g);
  while (n < GEN_BUDGET && (g->cfg.count == 0 || g->produced < g->cfg.count)) {
    guint64 at = now;
    if (g->cfg.rate_pps != 0) {
      /* frame k is due at start + k / rate */
      at = g->due_ticks;
      if (at > now)
        break;
    }
    emu_gen_frame (g, g->produced);
    EmuRxMeta m = g->steer_meta;
    if (!emu_rx_steered (p, g->frame, g->cfg.frame_len, at, g->cfg.lossless, g->steer_rq, &m, NULL))
      break;
    emu_gen_advance (g);
    n++;
  }
  if (g->cfg.count != 0 && g->produced == g->cfg.count)
    g->active = FALSE;
  return n;
}

/* ---------------------------------------------------------------------------------- */
/* the device thread */

static gboolean
port_idle_locked (EmuPort *p)
{
  for (guint i = 0; i < p->sqs->len; i++) {
    EmuSq *sq = g_ptr_array_index (p->sqs, i);
    /* a record without a doorbell is no work: the device does not know of it */
    if (sq_covered (sq) != 0 || *(volatile guint64 *) sq->bf != 0 ||
        *(volatile guint64 *) (sq->bf + EMU_BF_SIZE) != 0)
      return FALSE;
  }
  if (p->gen != NULL && p->gen->active)
    return FALSE;
  /* WQEs posted to an RQ in ERR are flushed by the next pass */
  for (guint i = 0; i < p->rqs->len; i++) {
    EmuRq *rq = g_ptr_array_index (p->rqs, i);
    if (rq->in_error && ((be32toh (rq->dbrec[MLX5_RCV_DBR]) - rq->hw_wqe) & 0xffff) != 0 &&
        cq_has_room (rq->cq, 1))
      return FALSE;
  }
  g_mutex_lock (&p->in_lock);
  gboolean empty = g_queue_is_empty (&p->input);
  g_mutex_unlock (&p->in_lock);
  return empty;
}

static guint
device_pass (EmuPort *p)
{
  EmuCable cable = { FALSE, NULL };
  guint work = 0;

  g_mutex_lock (&p->lock);
  if (!p->stalled) {
    guint64 now = emu_port_ticks (p);
    for (guint i = 0; i < p->sqs->len; i++)
      work += sq_run (p, g_ptr_array_index (p->sqs, i), now, &cable);
    work += input_run (p);
    work += gen_run (p, now);
    for (guint i = 0; i < p->rqs->len; i++) {
      work += emu_rq_flush_posted (p, g_ptr_array_index (p->rqs, i)) ? 1 : 0;
      emu_rq_commit (p, g_ptr_array_index (p->rqs, i));
    }
    /* a pass's compressed sessions end with it */
    for (guint i = 0; i < p->cqs->len; i++)
      emu_cq_zip_flush (g_ptr_array_index (p->cqs, i));
  }
  g_mutex_unlock (&p->lock);
  if (cable.peer != NULL)
    emu_port_unref (cable.peer);
  return work;
}

void
emu_port_kick (EmuPort *p)
{
  g_mutex_lock (&p->wake_lock);
  p->busy = 1;
  g_cond_signal (&p->wake_cond);
  g_mutex_unlock (&p->wake_lock);
}

/* Polls: the host's doorbells are plain memory writes the device can only see by
 * looking. Spins while there is work, then yields, then sleeps in growing slices (a
 * kick from inject/generate/create wakes it at once). */
static gpointer
device_thread (gpointer data)
{
  EmuPort *p = data;
  guint idle = 0;

  while (!g_atomic_int_get (&p->stop)) {
    if (device_pass (p) > 0) {
      idle = 0;
      continue;
    }
    idle++;
    if (idle < IDLE_SPIN) {
      mlx5_cpu_relax ();
    } else if (idle < IDLE_YIELD) {
      g_thread_yield ();
    } else {
      guint us = MIN ((idle - IDLE_YIELD + 1) * 10, IDLE_SLEEP_MAX_US);
      g_mutex_lock (&p->wake_lock);
      if (!p->busy && !g_atomic_int_get (&p->stop))
        g_cond_wait_until (&p->wake_cond, &p->wake_lock, g_get_monotonic_time () + us);
      if (p->busy)
        idle = 0;
      p->busy = 0;
      g_mutex_unlock (&p->wake_lock);
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* ports */

static void
port_free (EmuPort *p)
{
  EmuFrame *f;
  while ((f = g_queue_pop_head (&p->input)) != NULL)
    g_free (f);
  for (guint i = 0; i < p->groups->len; i++) {
    EmuSteerGroup *g = g_ptr_array_index (p->groups, i);
    g_free (g->rqs);
    g_free (g->rules);
    g_free (g);
  }
  for (guint i = 0; i < p->sqs->len; i++) {
    EmuSq *sq = g_ptr_array_index (p->sqs, i);
    g_free (sq->bf);
    g_free (sq);
  }
  g_ptr_array_free (p->groups, TRUE);
  g_ptr_array_free (p->sqs, TRUE);
  g_ptr_array_free (p->rqs, TRUE);
  g_ptr_array_free (p->cqs, TRUE);
  g_ptr_array_free (p->mrs, TRUE);
  g_free (p->gen);
  g_free (p->clock_name);
  g_mutex_clear (&p->lock);
  g_mutex_clear (&p->in_lock);
  g_mutex_clear (&p->wake_lock);
  g_cond_clear (&p->wake_cond);
  g_free (p);
}

void
emu_port_unref (EmuPort *p)
{
  if (p != NULL && g_atomic_int_dec_and_test (&p->refcount))
    port_free (p);
}

EmuPort *
emu_port_lookup (const char *name)
{
  g_mutex_lock (&registry_lock);
  EmuPort *p = registry != NULL ? g_hash_table_lookup (registry, name) : NULL;
  if (p != NULL)
    g_atomic_int_inc (&p->refcount);
  g_mutex_unlock (&registry_lock);
  return p;
}

const char *
emu_port_name (EmuPort *p)
{
  return p->cfg.name;
}

static EmuPort *
port_new (const EmuConfig *cfg)
{
  EmuPort *p = g_new0 (EmuPort, 1);
  p->refcount = 1;
  p->users = 1;
  p->cfg = *cfg;
  p->freq_hz = cfg->freq_khz * 1000;
  p->clock_name = g_strdup_printf ("emu:%s device clock (%" G_GUINT64_FORMAT " kHz, %s)", cfg->name,
      cfg->freq_khz, cfg->real_time ? "real time" : "free-running");
  g_mutex_init (&p->lock);
  g_mutex_init (&p->in_lock);
  g_mutex_init (&p->wake_lock);
  g_cond_init (&p->wake_cond);
  g_queue_init (&p->input);
  p->mrs = g_ptr_array_new_with_free_func (g_free);
  p->cqs = g_ptr_array_new_with_free_func (g_free);
  p->rqs = g_ptr_array_new_with_free_func (g_free);
  p->sqs = g_ptr_array_new ();
  p->groups = g_ptr_array_new ();
  p->next_id = 0x100;
  p->steer_version = 1;
  p->fault_rx_error = -1;
  p->fault_tx_error = -1;
  char *thread_name = g_strdup_printf ("emu:%s", cfg->name);
  p->thread = g_thread_new (thread_name, device_thread, p);
  g_free (thread_name);
  return p;
}

EmuPort *
emu_port_open (const char *spec, GError **error)
{
  EmuConfig cfg;

  if (!emu_config_parse (spec, &cfg, error))
    return NULL;
  g_mutex_lock (&registry_lock);
  if (registry == NULL)
    registry = g_hash_table_new (g_str_hash, g_str_equal);
  EmuPort *p = g_hash_table_lookup (registry, cfg.name);
  if (p != NULL) {
    if (!emu_config_compatible (&p->cfg, &cfg, error))
      p = NULL;
    else
      p->users++;
    g_mutex_unlock (&registry_lock);
    return p;
  }
  p = port_new (&cfg);
  g_hash_table_insert (registry, p->cfg.name, p);
  g_mutex_unlock (&registry_lock);
  return p;
}

void
emu_port_close (EmuPort *p)
{
  if (p == NULL)
    return;
  g_mutex_lock (&registry_lock);
  if (--p->users > 0) {
    g_mutex_unlock (&registry_lock);
    return;
  }
  g_hash_table_remove (registry, p->cfg.name);
  g_mutex_unlock (&registry_lock);
  g_atomic_int_set (&p->stop, 1);
  emu_port_kick (p);
  g_thread_join (p->thread);
  p->thread = NULL;
  emu_port_unref (p);
}

/* ---------------------------------------------------------------------------------- */
/* outside access: inject, generator, faults, counters */

gboolean
emu_port_inject (EmuPort *p, const guint8 *frame, guint len)
{
  if (len > EMU_MAX_FRAME)
    return FALSE;
  EmuFrame *f = g_malloc (sizeof (EmuFrame) + len);
  f->len = len;
  f->lossless = FALSE;
  f->arrival_ns = emu_port_now_ns (p);
  memcpy (f->data, frame, len);
  g_mutex_lock (&p->in_lock);
  gboolean ok = p->input.length < EMU_INPUT_MAX;
  if (ok)
    g_queue_push_tail (&p->input, f);
  g_mutex_unlock (&p->in_lock);
  if (!ok) {
    g_free (f);
    return FALSE;
  }
  emu_port_kick (p);
  return TRUE;
}

gboolean
emu_port_generate (EmuPort *p, const EmuGenConfig *config, GError **error)
{
  gboolean stop = config->frame_len == 0 && config->count == 0 && config->rate_pps == 0;
  if (!stop && (config->frame_len < EMU_MIN_FRAME || config->frame_len > p->cfg.mtu + 18)) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "emu:%s: generator frame length %u is "
        "out of range (allowed %u .. %u)",
        p->cfg.name, config->frame_len, EMU_MIN_FRAME, p->cfg.mtu + 18);
    return FALSE;
  }
  g_mutex_lock (&p->lock);
  if (p->gen == NULL)
    p->gen = g_new0 (EmuGen, 1);
  p->gen->active = FALSE;
  if (!stop) {
    p->gen->cfg = *config;
    emu_gen_start (p->gen, emu_port_ticks (p), p->freq_hz);
    emu_gen_template (p->gen, p->cfg.mac);
    p->gen->steer_version = 0; /* a new template: steered again */
    p->gen->active = TRUE;
  }
  g_mutex_unlock (&p->lock);
  emu_port_kick (p);
  return TRUE;
}

guint64
emu_port_generated (EmuPort *p)
{
  g_mutex_lock (&p->lock);
  guint64 n = p->gen != NULL ? p->gen->produced : 0;
  g_mutex_unlock (&p->lock);
  return n;
}

void
emu_port_fault_rx_drop (EmuPort *p, guint n)
{
  g_mutex_lock (&p->lock);
  p->fault_rx_drop = n;
  g_mutex_unlock (&p->lock);
}

/* Arms an error completion: `skip` more pass, then one completes with `syndrome`. */
static void
fault_arm_error (EmuPort *p, gint64 *fault, guint8 *fault_syndrome, guint skip, guint8 syndrome)
{
  g_mutex_lock (&p->lock);
  *fault = skip;
  *fault_syndrome = syndrome;
  g_mutex_unlock (&p->lock);
}

void
emu_port_fault_rx_error (EmuPort *p, guint skip, guint8 syndrome)
{
  fault_arm_error (p, &p->fault_rx_error, &p->fault_rx_syndrome, skip, syndrome);
}

void
emu_port_fault_tx_error (EmuPort *p, guint skip, guint8 syndrome)
{
  fault_arm_error (p, &p->fault_tx_error, &p->fault_tx_syndrome, skip, syndrome);
}

void
emu_port_fault_stall (EmuPort *p, gboolean stall)
{
  g_mutex_lock (&p->lock);
  p->stalled = stall;
  g_mutex_unlock (&p->lock);
  emu_port_kick (p);
}

void
emu_port_counters (EmuPort *p, EmuCounters *c)
{
  const guint64 *src = (const guint64 *) &p->c;
  guint64 *dst = (guint64 *) c;
  for (guint i = 0; i < sizeof (EmuCounters) / sizeof (guint64); i++)
    dst[i] = __atomic_load_n (&src[i], __ATOMIC_RELAXED);
}

gboolean
emu_port_wait_idle (EmuPort *p, gint64 timeout_ns)
{
  gint64 deadline = g_get_monotonic_time () + timeout_ns / 1000;
  for (;;) {
    /* two idle looks around a pass: the device finished what it had taken too */
    g_mutex_lock (&p->lock);
    gboolean idle = p->stalled || port_idle_locked (p);
    g_mutex_unlock (&p->lock);
    if (idle)
      return TRUE;
    if (g_get_monotonic_time () > deadline)
      return FALSE;
    emu_port_kick (p);
    g_usleep (50);
  }
}
