/* Host side of an mlx5 striding RQ and its CQ (see rx.h).
 *
 * PRM rules this code relies on, one place each:
 *  - RQ WQE of a striding RQ: 16-byte next segment (unused in a cyclic WQ, left zero) and
 *    one data segment {byte_count = region bytes, lkey, addr = region start}
 *    (rxq_post_wqe).
 *  - RQ doorbell record word MLX5_RCV_DBR = big-endian WQE counter, 16 bits, written
 *    after the WQEs it publishes are visible (rxq_ring_doorbell).
 *  - The device fills the strides of the WQE at its consumer counter in order; one CQE
 *    per packet: byte_cnt = filler bit | strides consumed << 16 | bytes, wqe_id = the
 *    WQE's ring index, wqe_counter = the packet's first stride. A packet that does not
 *    fit the rest of a WQE makes the device skip those strides with a filler CQE and
 *    start the packet in the next WQE (cq_poll_one).
 *  - CQE ownership by the owner bit against the consumer index's wrap parity, then a
 *    read barrier (mlx5_cqe_sw_owned in mlx5-dma.h).
 *  - CQ doorbell record word 0 = consumer index, 24 bits, big-endian (cq_ring_doorbell).
 *  - An error CQE moves the RQ to the error state (flush_in_error_en): the device
 *    completes every WQE still posted with flush errors (syndrome WR_FLUSH_ERR) and stops.
 *    Once every posted WQE has completed, the host takes the RQ ERR -> RST -> RDY
 *    (ops->rq_recover) with the doorbell record at 0; the device's WQE counter starts
 *    again at 0, and the host re-posts from ring slot 0 (rxq_recover).
 *  - Compressed completions (mlx5-dma.h has the layouts; rxq_poll_zip): a CQE whose
 *    format is MLX5_COMPRESSED starts a session (basic: the title, byte_cnt = its
 *    completions; enhanced: up to 7 mini-CQEs after the title, the last full CQE). Each
 *    mini-CQE is one completion and takes one CQ index; its packet gets wqe_id, checksum
 *    bits and time from the title, flow tag, stride index and length from the mini-CQE,
 *    and its stride count from the length. Mini-CQE arrays are copied out before their
 *    slot's index is passed, so a doorbell may hand the slot back at any time (zip_load).
 *    Basic: op_own of every slot of a session but the title is set to INVALID before the
 *    index is passed (zip_take). Enhanced: a CQE is valid when byte 62 is the index's lap
 *    mod 256 (cq_sw_owned); a slot the device left reserved keeps the byte of the lap it
 *    was last written in, which would pass for valid 256 laps later, so on every 128th
 *    lap the host writes the lap into the reserved slots it passes (zip_take): no slot's
 *    byte is ever more than 128 laps old.
 *    Layouts and formats checked against Linux (include/linux/mlx5/device.h: struct
 *    mlx5_mini_cqe8, mlx5_get_cqe_format, get_cqe_enhanced_num_mini_cqes; en_rx.c:
 *    mlx5e_decompress_cqes_start/_cont, mlx5e_read_title_slot, mlx5e_cqes_update_owner,
 *    mlx5e_decompress_enhanced_cqe; wq.h: mlx5_cqwq_get_cqe_enhanced_comp) and DPDK
 *    (drivers/common/mlx5/mlx5_prm.h: struct mlx5_mini_cqe8, MLX5_CQE_FORMAT,
 *    MLX5_CQE_NUM_MINIS, MLX5_LEN_WITH_MARK_MASK, mlx5_common.h: check_cqe_iteration;
 *    drivers/net/mlx5/mlx5_rx.c: mlx5_rx_poll_len, rxq_cq_to_mbuf, mlx5_rx_burst_mprq).
 *    Neither writes the reserved slots' byte 62, nor does the emulated ConnectX.
 */
#include "rx.h"

#include "engine-util.h"

#include "mlx5-dma.h"
#include "mlx5-mem.h"
#include "mlx5-mr.h"

#include <string.h>
#include <unistd.h>

/* The compressed session being read (mlx5-dma.h): the title's fields every mini-CQE
 * shares, and the mini-CQE array being read, copied out of the CQ. */
typedef struct {
  guint64 mini[MLX5_MINI_CQE_ARRAY_SIZE]; /* big-endian, as in the CQ */
  guint32 left;        /* mini-CQEs still to read: of the session (basic), of the compressed
                 * CQE (enhanced) */
  guint32 next;        /* the next one's index: in the session (basic), in `mini` (enhanced) */
  gboolean have_title; /* enhanced: the last CQE read was a packet's, the title */
  gboolean scrub;      /* enhanced: the compressed CQE's indices reach a lap whose reserved
                        * slots get their validity byte */
  guint32 wqe_id;
  guint32 flags; /* DqPacket flags */
  guint64 ts;    /* ns */
} Mlx5RxZip;

/* the laps over the CQ after which the enhanced layout's reserved slots get their
 * validity byte written (see the top) */
#define RX_VIC_SCRUB_LAPS 128
/* how far ahead the enhanced layout's reader asks for CQ lines, in slots (2 KiB) */
#define RX_ZIP_PREFETCH 32

struct _Mlx5Rxq {
  const Mlx5PortOps *ops;
  gpointer dev;
  char *what;

  Mlx5Cq cq;
  Mlx5Rq rq;
  gpointer mr;
  gboolean cq_created, rq_created;
  DqRingMemory memory; /* of the packet buffer; alloc NULL: host (mlx5_mem_map) */
  DqRingPlacement placement;

  /* geometry */
  guint log_stride_size;
  guint32 strides; /* per WQE */
  guint32 wqe_mask;
  guint log_region;
  guint32 cq_mask;
  guint log_cq;

  /* polling thread state */
  guint32 post_window; /* WQEs that may be posted ahead of the CQ reader's (cur_wqe) */
  guint32 cq_ci;       /* CQEs consumed */
  guint32 cq_ci_rung;  /* value in the CQ doorbell record */
  guint32 rq_pi;       /* WQEs posted (the RQ doorbell counter) */
  guint32 cur_wqe;     /* counter of the WQE the device fills */
  guint32 cur_stride;  /* its next stride */
  gboolean in_error;   /* an error CQE came: the RQ is in ERR until recovered */
  gboolean real_time_ts;
  guint32 ts_flag; /* DQ_PACKET_FLAG_TS_HW, 0 without NIC time (caps->no_hw_ts) */
  Mlx5ClockInfo clock;
  Mlx5RxZip zip; /* compressed completions */

  /* per ring slot: strides given back (packets released, fillers, errors); the WQE is
   * re-posted when this reaches `strides` */
  gint *freed;

  /* header-data split (rq.split_header != 0): a cyclic RQ of one packet per WQE
   * (strides = 1), headers in rq.hdr_buf (host memory, hdr_bytes of it), payloads in
   * rq.buf */
  gsize hdr_bytes;
  gpointer hdr_mr;

  Mlx5RxCounters c;
};

/* ---------------------------------------------------------------------------------- */
/* geometry */

/* A user-given MPRQ size field (stride bytes, strides per WQE) as its log2 in *log2_value:
 * it must be a power of two 2^min_log .. 2^max_log; the error names it "`name` N`unit`". */
static gboolean
mprq_field_log2 (const char *what, const char *name, const char *unit, guint value, guint min_log,
    guint max_log, guint *log2_value, GError **error)
{
  if (!dq_is_pow2 (value) || dq_log2_floor (value) < min_log || dq_log2_floor (value) > max_log) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: %s %u%s is not allowed (allowed: a power of two %u .. %u)", what, name, value, unit,
        1u << min_log, 1u << max_log);
    return FALSE;
  }
  *log2_value = dq_log2_floor (value);
  return TRUE;
}

gboolean
mlx5_rx_geometry_choose (const Mlx5Caps *caps, const char *what, gsize ring_bytes, guint max_packet,
    guint stride_size, guint strides_per_wqe, Mlx5RxGeometry *geo, GError **error)
{
  gsize ring = ring_bytes ? ring_bytes : MLX5_RX_DEFAULT_RING;
  guint min_ls = caps->min_log_stride_size, max_ls = caps->max_log_stride_size;
  guint min_lw = caps->min_log_strides;
  guint max_lw = MIN (caps->max_log_strides, MLX5_MPRQ_MAX_LOG_STRIDES);
  guint max_lq = MIN (caps->max_log_wqes, MLX5_RX_MAX_LOG_WQES);
  guint ls, lw;

  /* the CQE's byte count is 16 bits */
  if (max_packet == 0 || max_packet > MLX5_MPRQ_LEN_MASK) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: max-packet-size %u is out of range "
        "(allowed 1 .. %u)",
        what, max_packet, MLX5_MPRQ_LEN_MASK);
    return FALSE;
  }
  if (stride_size != 0) {
    if (!mprq_field_log2 (what, "stride", "", stride_size, min_ls, max_ls, &ls, error))
      return FALSE;
  } else {
    ls = dq_log2_ceil (MIN (max_packet, MLX5_RX_DEFAULT_STRIDE));
    ls = CLAMP (ls, min_ls, max_ls);
  }

  /* strides one max_packet frame needs: a packet never spans two WQEs */
  guint need = dq_log2_ceil (((guint64) max_packet + (1u << ls) - 1) >> ls);
  if (strides_per_wqe != 0) {
    if (!mprq_field_log2 (what, "strides", " per WQE", strides_per_wqe, min_lw, max_lw, &lw, error))
      return FALSE;
    if (lw < need) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "%s: %u strides of %u bytes per WQE "
          "cannot hold max-packet-size %u (allowed: strides >= %u)",
          what, strides_per_wqe, 1u << ls, max_packet, 1u << need);
      return FALSE;
    }
  } else {
    if (need > max_lw) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "%s: max-packet-size %u does not fit "
          "one WQE of %u strides of %u bytes (allowed: max-packet-size <= %" G_GUINT64_FORMAT
          ", or a larger stride)",
          what, max_packet, 1u << max_lw, 1u << ls, (guint64) 1 << (max_lw + ls));
      return FALSE;
    }
    lw = CLAMP (MLX5_RX_DEFAULT_LOG_STRIDES, MAX (min_lw, need), max_lw);
    while ((ring >> (ls + lw)) < (1u << MLX5_RX_MIN_LOG_WQES) && lw > MAX (min_lw, need))
      lw--;
  }

  guint64 n_regions = ring >> (ls + lw);
  if (n_regions < (1u << MLX5_RX_MIN_LOG_WQES)) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: ring-size %" G_GSIZE_FORMAT
        " is too small for %u strides of %u bytes per WQE: the ring needs at least %u "
        "WQEs (allowed: ring-size >= %" G_GUINT64_FORMAT ")",
        what, ring, 1u << lw, 1u << ls, 1u << MLX5_RX_MIN_LOG_WQES,
        (guint64) 1 << (ls + lw + MLX5_RX_MIN_LOG_WQES));
    return FALSE;
  }
  guint lq = MIN (dq_log2_floor (n_regions), max_lq);
  const char *limit = "the RQ's WQE limit";
  /* one CQE per stride at most: a CQ of strides-in-the-ring entries cannot overflow */
  if (lq + lw > caps->max_log_cq_size) {
    if (caps->max_log_cq_size < lw + MLX5_RX_MIN_LOG_WQES) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "%s: %u strides per WQE need a CQ of "
          "%u entries for %u WQEs, more than the device's %u (allowed: strides <= %u)",
          what, 1u << lw, 1u << (lw + MLX5_RX_MIN_LOG_WQES), 1u << MLX5_RX_MIN_LOG_WQES,
          1u << caps->max_log_cq_size, 1u << (caps->max_log_cq_size - MLX5_RX_MIN_LOG_WQES));
      return FALSE;
    }
    lq = caps->max_log_cq_size - lw;
    limit = "the device's CQ limit";
  }
  /* a ring-size the queue cannot take is refused, not cut (the default is cut to fit) */
  if (ring_bytes != 0 && dq_log2_floor (n_regions) > lq) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: ring-size %" G_GSIZE_FORMAT " is more than one receive queue holds with %u strides "
        "of %u bytes per WQE: at most %u WQEs (%s) (allowed: ring-size <= %" G_GUINT64_FORMAT
        ", or a larger stride=N in the device string)",
        what, ring, 1u << lw, 1u << ls, 1u << lq, limit, (guint64) 1 << (lq + lw + ls));
    return FALSE;
  }
  memset (geo, 0, sizeof *geo);
  geo->log_stride_size = ls;
  geo->log_strides = lw;
  geo->log_wqes = lq;
  geo->log_cq_size = lq + lw;
  return TRUE;
}

gboolean
mlx5_rx_geometry_split (const Mlx5Caps *caps, const char *what, gsize ring_bytes, guint max_packet,
    guint max_frame, guint header_size, Mlx5RxGeometry *geo, GError **error)
{
  gsize ring = ring_bytes ? ring_bytes : MLX5_RX_DEFAULT_RING;
  guint max_lq = MIN (MIN (caps->max_log_wqes, MLX5_RX_MAX_LOG_WQES), caps->max_log_cq_size);

  if (max_packet == 0 || max_packet > MLX5_MPRQ_LEN_MASK) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: max-packet-size %u is out of range (allowed 1 .. %u)", what, max_packet,
        MLX5_MPRQ_LEN_MASK);
    return FALSE;
  }
  if (header_size < MLX5_RX_SPLIT_MIN_HEADER || header_size > MLX5_RX_SPLIT_MAX_HEADER ||
      header_size >= max_packet) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: header-size %u is not allowed (allowed: %u .. %u, and less than "
        "max-packet-size %u)",
        what, header_size, MLX5_RX_SPLIT_MIN_HEADER, MLX5_RX_SPLIT_MAX_HEADER, max_packet);
    return FALSE;
  }
  /* every frame the port takes fits the two segments: one that did not would be an
   * error completion, which stops the queue */
  guint frame = MAX (max_packet, max_frame);
  guint payload = (guint) dq_round_up (frame - header_size, MLX5_RX_SPLIT_ALIGN);
  guint64 slots = ring / payload;
  if (slots < (1u << MLX5_RX_MIN_LOG_WQES)) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: ring-size %" G_GSIZE_FORMAT " is too small for header-data split: %u payload "
        "slots of %u bytes need at least %" G_GUINT64_FORMAT
        " (allowed: ring-size >= %" G_GUINT64_FORMAT ")",
        what, ring, 1u << MLX5_RX_MIN_LOG_WQES, payload, (guint64) payload << MLX5_RX_MIN_LOG_WQES,
        (guint64) payload << MLX5_RX_MIN_LOG_WQES);
    return FALSE;
  }
  guint lq = dq_log2_floor (slots);
  if (lq > max_lq) {
    if (ring_bytes != 0) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "%s: ring-size %" G_GSIZE_FORMAT " is more than one receive queue holds with "
          "header-data split: at most %u packets of %u payload bytes (allowed: ring-size <= %" G_GUINT64_FORMAT
          ")",
          what, ring, 1u << max_lq, payload, (guint64) payload << max_lq);
      return FALSE;
    }
    lq = max_lq;
  }
  memset (geo, 0, sizeof *geo);
  geo->log_wqes = lq;
  geo->log_cq_size = lq; /* one CQE per WQE */
  geo->split_header = header_size;
  geo->split_payload = payload;
  geo->hdr_stride = (guint) dq_round_up (header_size, MLX5_RX_SPLIT_ALIGN);
  return TRUE;
}

/* A compression asked for by name: taken when the device has it, else refused with what
 * the device lacks (`lacks`, after "does not compress completions"). */
static gboolean
cqe_comp_require (gboolean have, Mlx5CqComp mode, const char *what, const char *name,
    const char *lacks, const char *allowed, Mlx5CqComp *comp, GError **error)
{
  if (have) {
    *comp = mode;
    return TRUE;
  }
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "%s: cqe-comp=%s is not possible: the device does not compress completions %s "
      "(allowed: cqe-comp=%s)",
      what, name, lacks, allowed);
  return FALSE;
}

gboolean
mlx5_rx_cqe_comp_choose (
    const Mlx5Caps *caps, const char *what, Mlx5RxCqeComp want, Mlx5CqComp *comp, GError **error)
{
  const char *allowed = caps->cqe_comp_enhanced ? "off, on, basic, enhanced"
      : caps->cqe_comp_basic                    ? "off, on, basic"
                                                : "off, on (which is off here)";
  switch (want) {
    case MLX5_RX_CQE_COMP_OFF: *comp = MLX5_CQ_COMP_NONE; return TRUE;
    case MLX5_RX_CQE_COMP_ON:
      *comp = caps->cqe_comp_enhanced ? MLX5_CQ_COMP_ENHANCED
          : caps->cqe_comp_basic      ? MLX5_CQ_COMP_BASIC
                                      : MLX5_CQ_COMP_NONE;
      return TRUE;
    case MLX5_RX_CQE_COMP_BASIC:
      return cqe_comp_require (caps->cqe_comp_basic, MLX5_CQ_COMP_BASIC, what, "basic",
          "with flow tag and stride index mini-CQEs (HCA capabilities cqe_compression, "
          "mini_cqe_resp_flow_tag, mini_cqe_resp_stride_index)",
          allowed, comp, error);
    case MLX5_RX_CQE_COMP_ENHANCED:
      return cqe_comp_require (caps->cqe_comp_enhanced, MLX5_CQ_COMP_ENHANCED, what, "enhanced",
          "in the enhanced layout (HCA capability enhanced_cqe_compression, with the basic "
          "ones)",
          allowed, comp, error);
  }
  g_return_val_if_reached (FALSE);
}

void
mlx5_rx_geometry_compress (Mlx5RxGeometry *geo, Mlx5CqComp comp)
{
  geo->cqe_comp = comp;
  if (comp == MLX5_CQ_COMP_NONE)
    return;
  /* Every CQE the device writes names at least one stride of a posted WQE the CQ reader
   * has not passed (packets, fillers, errors; a mini-CQE is one packet), so with at most
   * 2^lw WQEs posted ahead of the reader a CQ of 2^(lw + log_strides) entries never
   * overflows: a quarter of the ring's WQEs, and at least the 4 of the smallest ring */
  guint lw = geo->log_wqes >= MLX5_RX_MIN_LOG_WQES + MLX5_RX_COMP_LOG_CQ_CUT
      ? geo->log_wqes - MLX5_RX_COMP_LOG_CQ_CUT
      : MIN (geo->log_wqes, MLX5_RX_MIN_LOG_WQES);
  geo->log_cq_size = MIN (geo->log_cq_size, geo->log_strides + lw);
}

/* ---------------------------------------------------------------------------------- */
/* rings */

/* Header-data split: payload slot i. The slots start MLX5_RX_SPLIT_MAX_HEADER bytes into
 * the packet buffer, so that the header_size bytes before any slot are ring memory (the
 * bytes a reader that addresses a payload as if its headers preceded it never reads). */
static inline guint8 *
rxq_payload_slot (Mlx5Rxq *q, guint32 slot)
{
  return q->rq.buf + MLX5_RX_SPLIT_MAX_HEADER + (gsize) slot * q->rq.split_payload;
}

/* a split WQE: the header slot, then the payload slot */
static void
rxq_post_split_wqe (Mlx5Rxq *q, guint32 slot)
{
  struct mlx5_wqe_data_seg *seg =
      (struct mlx5_wqe_data_seg *) (q->rq.wqes + ((gsize) slot << MLX5_LOG_MPRQ_WQE_SIZE));

  seg[0].byte_count = htobe32 (q->rq.split_header);
  seg[0].lkey = htobe32 (q->rq.hdr_lkey);
  seg[0].addr = htobe64 ((guint64) (uintptr_t) (q->rq.hdr_buf + (gsize) slot * q->rq.hdr_stride));
  seg[1].byte_count = htobe32 (q->rq.split_payload);
  seg[1].lkey = htobe32 (q->rq.lkey);
  seg[1].addr = htobe64 ((guint64) (uintptr_t) rxq_payload_slot (q, slot));
}

static void
rxq_post_wqe (Mlx5Rxq *q, guint32 slot)
{
  if (q->rq.split_header) {
    rxq_post_split_wqe (q, slot);
    return;
  }
  struct mlx5_mprq_wqe *wqe =
      (struct mlx5_mprq_wqe *) (q->rq.wqes + ((gsize) slot << MLX5_LOG_MPRQ_WQE_SIZE));
  guint8 *region = q->rq.buf + ((gsize) slot << q->log_region);

  wqe->dseg.byte_count = htobe32 (1u << q->log_region);
  wqe->dseg.lkey = htobe32 (q->rq.lkey);
  wqe->dseg.addr = htobe64 ((guint64) (uintptr_t) region);
}

/* The CQ doorbell record tells the device which CQEs it may overwrite: every read of
 * those CQEs must be done before the store. */
static inline void
cq_ring_doorbell (Mlx5Rxq *q)
{
  if (q->cq_ci_rung == q->cq_ci)
    return;
  mlx5_dma_mb ();
  q->cq.dbrec[0] = htobe32 (q->cq_ci & 0xffffff);
  q->cq_ci_rung = q->cq_ci;
}

/* The WQEs must be in memory before the device can see the counter that covers them. */
static inline void
rxq_ring_doorbell (Mlx5Rxq *q)
{
  mlx5_dma_wmb ();
  q->rq.dbrec[MLX5_RCV_DBR] = htobe32 (q->rq_pi & 0xffff);
}

void
mlx5_rxq_free (Mlx5Rxq *q)
{
  if (q == NULL)
    return;
  if (q->rq_created)
    q->ops->rq_destroy (q->dev, &q->rq);
  if (q->cq_created)
    q->ops->cq_destroy (q->dev, &q->cq);
  if (q->mr != NULL)
    q->ops->mr_dereg (q->dev, q->mr);
  if (q->hdr_mr != NULL)
    q->ops->mr_dereg (q->dev, q->hdr_mr);
  mlx5_mem_unmap (q->rq.hdr_buf, q->hdr_bytes);
  if (q->memory.alloc != NULL) {
    if (q->rq.buf != NULL)
      q->memory.free (q->rq.buf, q->rq.buf_size, q->memory.user);
  } else {
    mlx5_mem_unmap (q->rq.buf, q->rq.buf_size);
  }
  mlx5_mem_free (q->rq.wqes);
  mlx5_mem_free ((gpointer) q->rq.dbrec);
  mlx5_mem_free (q->cq.ring);
  mlx5_mem_free ((gpointer) q->cq.dbrec);
  g_free (q->freed);
  g_free (q->what);
  g_free (q);
}

/* Registers the packet buffer with the device (mlx5-mr.h): GPU device memory is never
 * touched by the host here (the ring code reads CQEs only, never packet bytes).
 * q->placement says which way it went. */
static gboolean
rxq_register_ring (Mlx5Rxq *q, GError **error)
{
  return mlx5_mr_register (q->ops, q->dev, q->what, q->rq.buf, q->rq.buf_size, &q->memory,
      &q->rq.lkey, &q->mr, &q->placement, error);
}

Mlx5Rxq *
mlx5_rxq_new (const Mlx5PortOps *ops, gpointer dev, const Mlx5Caps *caps, const Mlx5RxGeometry *geo,
    GError **error)
{
  Mlx5Rxq *q = g_new0 (Mlx5Rxq, 1);
  guint32 n_wqes = 1u << geo->log_wqes;
  gsize cq_bytes = (gsize) MLX5_CQE_SIZE << geo->log_cq_size;

  q->ops = ops;
  q->dev = dev;
  q->what = g_strdup (ops->name);
  q->log_stride_size = geo->log_stride_size;
  q->strides = 1u << geo->log_strides;
  q->log_region = geo->log_stride_size + geo->log_strides;
  q->wqe_mask = n_wqes - 1;
  q->log_cq = geo->log_cq_size;
  q->cq_mask = (1u << geo->log_cq_size) - 1;
  q->real_time_ts = caps->real_time_ts;
  q->ts_flag = caps->no_hw_ts ? 0 : DQ_PACKET_FLAG_TS_HW;
  q->freed = g_new0 (gint, n_wqes);
  q->post_window = n_wqes;
  if (geo->split_header == 0 && geo->log_cq_size < geo->log_wqes + geo->log_strides)
    q->post_window = 1u << (geo->log_cq_size - geo->log_strides);

  q->rq.buf_size = (gsize) n_wqes << q->log_region;
  if (geo->split_header != 0) {
    /* one packet per WQE; both rings whole pages */
    q->rq.split_header = geo->split_header;
    q->rq.hdr_stride = geo->hdr_stride;
    q->rq.split_payload = geo->split_payload;
    q->strides = 1;
    q->log_region = 0;
    q->rq.buf_size = dq_round_up (
        MLX5_RX_SPLIT_MAX_HEADER + (gsize) n_wqes * q->rq.split_payload, mlx5_page_size ());
    q->hdr_bytes = dq_round_up ((gsize) n_wqes * q->rq.hdr_stride, mlx5_page_size ());
    q->rq.hdr_buf = mlx5_mem_map (q->hdr_bytes);
    if (q->rq.hdr_buf == NULL) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "%s: cannot allocate the header ring (%" G_GSIZE_FORMAT " bytes)", q->what, q->hdr_bytes);
      q->hdr_bytes = 0;
      goto fail;
    }
  }
  if (geo->memory != NULL)
    q->memory = *geo->memory;
  q->rq.buf = q->memory.alloc != NULL ? q->memory.alloc (q->rq.buf_size, q->memory.user)
                                      : mlx5_mem_map (q->rq.buf_size);
  q->cq.ring = mlx5_mem_alloc (cq_bytes, mlx5_page_size ());
  q->cq.dbrec = mlx5_mem_alloc (64, 64);
  q->rq.wqes = mlx5_mem_alloc ((gsize) n_wqes * MLX5_MPRQ_WQE_SIZE, mlx5_page_size ());
  q->rq.dbrec = mlx5_mem_alloc (64, 64);
  if (q->rq.buf == NULL || q->cq.ring == NULL || q->cq.dbrec == NULL || q->rq.wqes == NULL ||
      q->rq.dbrec == NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: cannot allocate the RX ring "
        "(%" G_GSIZE_FORMAT " bytes of packet buffer, %" G_GSIZE_FORMAT " bytes of CQ)",
        q->what, q->rq.buf_size, cq_bytes);
    if (q->rq.buf == NULL)
      q->rq.buf_size = 0;
    goto fail;
  }

  if (!rxq_register_ring (q, error))
    goto fail;
  if (q->rq.split_header != 0 &&
      !ops->mr_reg (dev, q->rq.hdr_buf, q->hdr_bytes, &q->rq.hdr_lkey, &q->hdr_mr, error))
    goto fail;

  /* every CQE starts invalid with owner 1: nothing is software-owned on the first pass */
  memset (q->cq.ring, 0xff, cq_bytes);
  q->cq.log_size = geo->log_cq_size;
  q->cq.comp = geo->split_header == 0 ? geo->cqe_comp : MLX5_CQ_COMP_NONE;
  if (!ops->cq_create (dev, &q->cq, error))
    goto fail;
  q->cq_created = TRUE;

  q->rq.log_wqes = geo->log_wqes;
  q->rq.log_strides = geo->log_strides;
  q->rq.log_stride_size = geo->log_stride_size;
  q->rq.cq = &q->cq;
  /* every WQE is written; those past the window are posted by mlx5_rxq_refill as the
   * CQ reader moves on (their strides count as given back) */
  for (guint32 i = 0; i < n_wqes; i++) {
    rxq_post_wqe (q, i);
    if (i >= q->post_window)
      q->freed[i] = (gint) q->strides;
  }
  if (!ops->rq_create (dev, &q->rq, error))
    goto fail;
  q->rq_created = TRUE;
  q->rq_pi = q->post_window;
  rxq_ring_doorbell (q);
  mlx5_rxq_clock_refresh (q);
  return q;

fail:
  mlx5_rxq_free (q);
  return NULL;
}

Mlx5Rq *
mlx5_rxq_rq (Mlx5Rxq *q)
{
  return &q->rq;
}

DqRingPlacement
mlx5_rxq_placement (Mlx5Rxq *q)
{
  return q->placement;
}

DqMemoryKind
mlx5_rxq_memory_kind (Mlx5Rxq *q)
{
  return q->memory.alloc != NULL ? q->memory.kind : DQ_MEMORY_HOST;
}

gsize
mlx5_rxq_ring_bytes (Mlx5Rxq *q)
{
  return q->rq.buf_size;
}

guint8 *
mlx5_rxq_ring_base (Mlx5Rxq *q)
{
  return q->rq.buf;
}

guint
mlx5_rxq_stride_size (Mlx5Rxq *q)
{
  return 1u << q->log_stride_size;
}

guint
mlx5_rxq_strides_per_wqe (Mlx5Rxq *q)
{
  return q->strides;
}

guint
mlx5_rxq_n_wqes (Mlx5Rxq *q)
{
  return q->wqe_mask + 1;
}

gsize
mlx5_rxq_cq_bytes (Mlx5Rxq *q)
{
  return (gsize) MLX5_CQE_SIZE << q->log_cq;
}

Mlx5CqComp
mlx5_rxq_cqe_comp (Mlx5Rxq *q)
{
  return q->cq.comp;
}

void
mlx5_rxq_clock_refresh (Mlx5Rxq *q)
{
  if (!q->real_time_ts)
    q->ops->clock_info (q->dev, &q->clock);
}

/* ---------------------------------------------------------------------------------- */
/* completions */

static inline volatile struct mlx5_cqe64 *
cq_cqe (Mlx5Rxq *q, guint32 ci)
{
  return (volatile struct mlx5_cqe64 *) (q->cq.ring + ((gsize) (ci & q->cq_mask) << 6));
}

/* Whether the CQE at index ci is software's: by its owner bit, or in the enhanced layout
 * by its validity byte (the lap of ci over the ring, mod 256) and a valid opcode (in a
 * compressed CQE, its mini-CQE count stands there). */
static inline gboolean
cq_sw_owned (Mlx5Rxq *q, volatile struct mlx5_cqe64 *cqe, guint32 ci)
{
  if (q->cq.comp != MLX5_CQ_COMP_ENHANCED)
    return mlx5_cqe_sw_owned (cqe, ci, q->log_cq);
  if (cqe->signature != (guint8) (ci >> q->log_cq))
    return FALSE;
  guint8 op_own = cqe->op_own;
  return (op_own >> 4) != MLX5_CQE_INVALID || mlx5_cqe_format (op_own) == MLX5_COMPRESSED;
}

gboolean
mlx5_rxq_cq_ready (Mlx5Rxq *q)
{
  return q->zip.left > 0 || cq_sw_owned (q, cq_cqe (q, q->cq_ci), q->cq_ci);
}

static inline void
strides_give_back (Mlx5Rxq *q, guint32 slot, guint32 n)
{
  __atomic_fetch_add (&q->freed[slot], (gint) n, __ATOMIC_RELEASE);
}

/* Moves the software cursor over `n` strides of the current WQE; TRUE when that used
 * the WQE up (the device continues in the next one). */
static inline gboolean
cursor_advance (Mlx5Rxq *q, guint32 n)
{
  q->cur_stride += n;
  if (q->cur_stride < q->strides)
    return FALSE;
  q->cur_wqe++;
  q->cur_stride = 0;
  return TRUE;
}

/* A CQE that does not match the ring (wrong WQE or stride, a stride count of 0 or past
 * the WQE's end, a length that does not fit its strides, an unknown opcode): counted,
 * no packet. The software cursor stays the authority: the CQE's strides (at least 1, at
 * most the rest of the WQE) are given back from the cursor's position, so the WQE is
 * still re-posted once it is complete. */
static gboolean
cqe_device_error (Mlx5Rxq *q, guint32 n_strides)
{
  guint32 slot = q->cur_wqe & q->wqe_mask;
  guint32 left = q->strides - q->cur_stride;
  guint32 n = CLAMP (n_strides, 1, left);

  MLX5_COUNTER_ADD (q->c.device_errors, 1);
  strides_give_back (q, slot, n);
  return cursor_advance (q, n);
}

/* An error CQE of the RQ (MLX5_CQE_RESP_ERR): no packet; the strides it names are given
 * back at once. The error layout keeps wqe_id, byte_cnt's stride count and wqe_counter
 * where a good CQE has them (as the Linux driver reads them); when they do not name the
 * cursor's position, the rest of the WQE is given up. */
static gboolean
cqe_error (Mlx5Rxq *q, volatile struct mlx5_cqe64 *cqe)
{
  guint32 slot = q->cur_wqe & q->wqe_mask;
  guint32 left = q->strides - q->cur_stride;
  guint32 n = (be32toh (cqe->byte_cnt) >> MLX5_MPRQ_STRIDES_SHIFT) & MLX5_MPRQ_STRIDES_MASK;

  if (be16toh (cqe->wqe_id) != slot || be16toh (cqe->wqe_counter) != q->cur_stride || n == 0 ||
      n > left)
    n = left;
  q->in_error = TRUE;
  mlx5_err_cqe_count (
      cqe, &q->c.flushed, &q->c.cqe_errors, &q->c.last_syndrome, &q->c.last_vendor_syndrome);
  strides_give_back (q, slot, n);
  return cursor_advance (q, n);
}

static inline guint32
cqe_packet_flags (const volatile struct mlx5_cqe64 *cqe)
{
  guint8 ok = cqe->hds_ip_ext;
  guint8 l4 = (cqe->l4_hdr_type_etc >> MLX5_CQE_L4_HDR_SHIFT) & MLX5_CQE_L4_HDR_MASK;
  guint32 flags = 0;

  /* L3 verified, and L4 verified when there is an L4 header the device knows */
  if ((ok & MLX5_CQE_L3_OK) && ((ok & MLX5_CQE_L4_OK) || l4 == MLX5_CQE_L4_HDR_TYPE_NONE))
    flags |= DQ_PACKET_FLAG_CSUM_OK;
  return flags;
}

/* Passes one CQ index: the CQ doorbell record is written every
 * MLX5_RX_CQ_DOORBELL_EVERY. */
static inline void
cq_advance (Mlx5Rxq *q)
{
  q->cq_ci++;
  if ((q->cq_ci & (MLX5_RX_CQ_DOORBELL_EVERY - 1)) == 0)
    cq_ring_doorbell (q);
}

/* The next CQE if the device has handed it over (read barrier done, consumer index moved,
 * the CQ doorbell record written every MLX5_RX_CQ_DOORBELL_EVERY CQEs), else NULL. */
static inline volatile struct mlx5_cqe64 *
cq_take (Mlx5Rxq *q)
{
  volatile struct mlx5_cqe64 *cqe = cq_cqe (q, q->cq_ci);
  if (!mlx5_cqe_sw_owned (cqe, q->cq_ci, q->log_cq))
    return NULL;
  /* the owner bit was read before anything it guards */
  mlx5_dma_rmb ();
  cq_advance (q);
  return cqe;
}

/* A CQE timestamp in ns of the port clock (0 without NIC time). */
static inline guint64
packet_time (Mlx5Rxq *q, guint64 ts)
{
  return q->ts_flag == 0 ? 0
      : q->real_time_ts  ? mlx5_rt_ts_to_ns (ts)
                         : mlx5_ts_to_ns (&q->clock, ts);
}

/* A packet's flow tag, checksum flags and time from its CQE. */
static inline void
packet_meta_from_cqe (Mlx5Rxq *q, DqPacket *pkt, const volatile struct mlx5_cqe64 *cqe)
{
  pkt->flow_id = be32toh (cqe->sop_drop_qpn) & MLX5_FLOW_TAG_BITS;
  pkt->flags = cqe_packet_flags (cqe) | q->ts_flag;
  pkt->timestamp = packet_time (q, be64toh (cqe->timestamp));
}

/* A packet's descriptor from its CQE: length, flow tag, checksum and time. */
static inline void
packet_from_cqe (
    Mlx5Rxq *q, DqPacket *pkt, const volatile struct mlx5_cqe64 *cqe, guint32 offset, guint32 len)
{
  pkt->offset = offset;
  pkt->length = len;
  packet_meta_from_cqe (q, pkt, cqe);
}

/* Ends a poll: the burst holds n packets, the CQ doorbell record is written and n_new
 * packets of `bytes` are counted. TRUE when the burst is complete (`complete`, or max
 * packets). */
static inline gboolean
poll_end (
    Mlx5Rxq *q, Mlx5RxBurst *b, guint n, guint max, gboolean complete, guint n_new, guint64 bytes)
{
  b->n_packets = n;
  cq_ring_doorbell (q);
  if (n_new > 0) {
    MLX5_COUNTER_ADD (q->c.packets, n_new);
    MLX5_COUNTER_ADD (q->c.bytes, bytes);
  }
  return complete || n == max;
}

/* Header-data split: a CQE that is not a packet of the WQE at the cursor (an error CQE, a
 * WQE counter or length that does not fit): counted; the WQE at the cursor is given back
 * and the cursor moves past it. */
static void
split_cqe_not_packet (Mlx5Rxq *q, volatile struct mlx5_cqe64 *cqe, guint8 opcode)
{
  if (opcode == MLX5_CQE_RESP_ERR) {
    q->in_error = TRUE;
    mlx5_err_cqe_count (
        cqe, &q->c.flushed, &q->c.cqe_errors, &q->c.last_syndrome, &q->c.last_vendor_syndrome);
  } else {
    MLX5_COUNTER_ADD (q->c.device_errors, 1);
  }
  strides_give_back (q, q->cur_wqe & q->wqe_mask, 1);
  q->cur_wqe++;
}

/* Header-data split: packets of consecutive WQEs, one per WQE; a burst ends at the end of
 * the ring and before a WQE that held no packet, so that its WQEs are one run. */
static gboolean
rxq_poll_split (Mlx5Rxq *q, Mlx5RxBurst *b, DqPacket *pkts, guint max)
{
  guint n = b->n_packets;
  guint64 bytes = 0;
  guint n_new = 0;
  gboolean complete = FALSE;
  guint32 capacity = q->rq.split_header + q->rq.split_payload;

  while (n < max) {
    volatile struct mlx5_cqe64 *cqe = cq_take (q);
    if (cqe == NULL)
      break;
    guint8 opcode = mlx5_cqe_opcode (cqe);
    guint32 slot = q->cur_wqe & q->wqe_mask;
    guint32 len = be32toh (cqe->byte_cnt);
    if (G_UNLIKELY (opcode != MLX5_CQE_RESP_SEND ||
            be16toh (cqe->wqe_counter) != (q->cur_wqe & 0xffff) || len == 0 || len > capacity)) {
      if (opcode != MLX5_CQE_RESP_SEND && opcode != MLX5_CQE_RESP_ERR) {
        /* no RQ CQE has this opcode: it names no WQE, nothing moves */
        MLX5_COUNTER_ADD (q->c.device_errors, 1);
        continue;
      }
      split_cqe_not_packet (q, cqe, opcode);
      if (n > 0) {
        complete = TRUE;
        break;
      }
      continue;
    }
    if (n == 0) {
      b->wqe = slot;
      b->first_stride = 0;
      b->strides = 0;
    }
    DqPacket *pkt = &pkts[n++];
    packet_from_cqe (q, pkt, cqe, b->strides * q->rq.hdr_stride, len);
    b->strides++;
    b->end = pkt->offset + MIN (len, q->rq.split_header);
    bytes += len;
    n_new++;
    q->cur_wqe++;
    if ((q->cur_wqe & q->wqe_mask) == 0) {
      complete = TRUE; /* a burst never wraps the ring */
      break;
    }
  }
  return poll_end (q, b, n, max, complete, n_new, bytes);
}

/* What one poll has read so far, for the counters. */
typedef struct {
  guint n;     /* packets in the burst */
  guint n_new; /* of them read in this poll */
  guint64 bytes, fillers, minis;
} RxTally;

/* A packet at the cursor: `len` bytes in n_strides strides from `stride` (the cursor's)
 * of WQE slot `slot`, into the burst; `pkt` is filled by the caller. TRUE when it used
 * the WQE up. */
static inline gboolean
rx_packet (Mlx5Rxq *q, Mlx5RxBurst *b, DqPacket *pkt, RxTally *t, guint32 slot, guint32 stride,
    guint32 n_strides, guint32 len)
{
  if (t->n == 0) {
    b->wqe = slot;
    b->first_stride = stride;
    b->strides = 0;
  }
  guint32 at = stride << q->log_stride_size;
  pkt->offset = at - (b->first_stride << q->log_stride_size);
  pkt->length = len;
  b->strides += n_strides;
  b->end = at + len;
  t->bytes += len;
  t->n_new++;
  t->n++;
  return cursor_advance (q, n_strides);
}

/* One full CQE of the striding RQ, taken off the CQ: a packet into pkts[t->n], a filler,
 * an error or a CQE that contradicts the ring (cqe_device_error). *got: the packet, or
 * NULL. TRUE when the cursor left the WQE. */
static inline gboolean
rx_full_cqe (Mlx5Rxq *q, volatile struct mlx5_cqe64 *cqe, Mlx5RxBurst *b, DqPacket *pkts,
    RxTally *t, DqPacket **got)
{
  guint8 opcode = mlx5_cqe_opcode (cqe);
  *got = NULL;
  if (G_UNLIKELY (opcode != MLX5_CQE_RESP_SEND)) {
    if (opcode == MLX5_CQE_RESP_ERR)
      return cqe_error (q, cqe);
    /* no RQ CQE has this opcode, and it names no strides: count it, move nothing */
    MLX5_COUNTER_ADD (q->c.device_errors, 1);
    return FALSE;
  }
  guint32 byte_cnt = be32toh (cqe->byte_cnt);
  guint32 n_strides = (byte_cnt >> MLX5_MPRQ_STRIDES_SHIFT) & MLX5_MPRQ_STRIDES_MASK;
  guint32 len = byte_cnt & MLX5_MPRQ_LEN_MASK;
  guint32 slot = q->cur_wqe & q->wqe_mask;
  guint32 stride = be16toh (cqe->wqe_counter);
  gboolean filler = (byte_cnt & MLX5_MPRQ_FILLER_FLAG) != 0;

  if (G_UNLIKELY (be16toh (cqe->wqe_id) != slot || stride != q->cur_stride || n_strides == 0 ||
          n_strides > q->strides - stride ||
          (!filler && (len == 0 || len > (n_strides << q->log_stride_size)))))
    return cqe_device_error (q, n_strides);
  if (filler) {
    /* the rest of the WQE was skipped: no packet, give the strides back now */
    t->fillers++;
    strides_give_back (q, slot, n_strides);
    return cursor_advance (q, n_strides);
  }
  DqPacket *pkt = &pkts[t->n];
  packet_meta_from_cqe (q, pkt, cqe);
  *got = pkt;
  return rx_packet (q, b, pkt, t, slot, stride, n_strides, len);
}

/* Ends a poll of the striding RQ (poll_end, and the counters of the tally). */
static inline gboolean
rx_poll_end (Mlx5Rxq *q, Mlx5RxBurst *b, guint max, gboolean complete, const RxTally *t)
{
  if (t->fillers > 0)
    MLX5_COUNTER_ADD (q->c.fillers, t->fillers);
  if (t->minis > 0)
    MLX5_COUNTER_ADD (q->c.compressed, t->minis);
  return poll_end (q, b, t->n, max, complete, t->n_new, t->bytes);
}

/* ---------------------------------------------------------------------------------- */
/* compressed completions (see the top, and mlx5-dma.h) */

/* Copies the 64-byte slot at index ci (a mini-CQE array, or an enhanced compressed CQE)
 * out of the CQ. */
static inline void
zip_load (Mlx5Rxq *q, guint32 ci)
{
  const volatile guint64 *w = (const volatile guint64 *) cq_cqe (q, ci);
  for (guint i = 0; i < MLX5_MINI_CQE_ARRAY_SIZE; i++)
    q->zip.mini[i] = w[i];
}

/* A compressed session that cannot be read (a count out of range, no title, another
 * opcode): counted as a device error; `indices` CQ indices are passed and the rest of the
 * cursor's WQE is given back, as for any CQE that contradicts the ring. */
static gboolean
zip_malformed (Mlx5Rxq *q, guint32 indices)
{
  for (guint32 i = 0; i < indices; i++)
    cq_advance (q);
  q->zip.have_title = FALSE;
  q->zip.left = 0;
  q->zip.next = 0;
  return cqe_device_error (q, q->strides);
}

/* A CQE of format MLX5_COMPRESSED at the consumer index starts a session: FALSE when its
 * mini-CQEs are to be read (zip.left), else what zip_malformed says. */
static gboolean
zip_start (Mlx5Rxq *q, volatile struct mlx5_cqe64 *cqe)
{
  guint8 op_own = cqe->op_own;
  if (q->cq.comp == MLX5_CQ_COMP_ENHANCED) {
    /* up to 7 mini-CQEs in this CQE, after the title: the last full CQE */
    guint32 count = (guint32) (op_own >> 4) + 1;
    if (G_UNLIKELY (count > MLX5_ENH_MINI_CQES || !q->zip.have_title))
      return zip_malformed (q, count);
    zip_load (q, q->cq_ci);
    q->zip.left = count;
    q->zip.next = 0;
    q->zip.scrub = ((q->cq_ci >> q->log_cq) & (RX_VIC_SCRUB_LAPS - 1)) == 0 ||
        (((q->cq_ci + count - 1) >> q->log_cq) & (RX_VIC_SCRUB_LAPS - 1)) == 0;
    return FALSE;
  }
  /* basic: this is the title; byte_cnt counts the session's completions, which take the
   * indices from here, its mini-CQE arrays among them */
  guint32 count = be32toh (cqe->byte_cnt);
  if (G_UNLIKELY ((op_own >> 4) != MLX5_CQE_RESP_SEND || count < 2 || count > (1u << q->log_cq)))
    return zip_malformed (q, 1);
  q->zip.wqe_id = be16toh (cqe->wqe_id);
  q->zip.flags = cqe_packet_flags (cqe) | q->ts_flag;
  q->zip.ts = packet_time (q, be64toh (cqe->timestamp));
  q->zip.left = count;
  q->zip.next = 0;
  return FALSE;
}

/* The session's next mini-CQE (big-endian), its CQ index passed. Basic: mini-CQE i lies
 * in array i / 8, in the slot after the title for i < 8, else in slot title + i; each
 * slot but the title's is made INVALID before its index is passed. Enhanced: in the
 * compressed CQE; the indices after its own are reserved slots, whose validity byte gets
 * the lap on every RX_VIC_SCRUB_LAPS-th lap (zip.scrub; writing it on another lap is
 * harmless: the host has read the slot). */
static inline guint64
zip_take (Mlx5Rxq *q, gboolean enhanced, guint32 *next, guint32 *left)
{
  guint32 i = (*next)++;
  guint64 m;
  (*left)--;
  if (enhanced) {
    m = q->zip.mini[i];
    /* one line read in seven (the compressed CQEs) is a pattern the CPU does not fetch
     * ahead by itself: each index passed asks for the line RX_ZIP_PREFETCH slots on, a
     * stream it follows (the basic layout's writes to every slot make one already) */
    __builtin_prefetch ((const void *) cq_cqe (q, q->cq_ci + RX_ZIP_PREFETCH));
    if (G_UNLIKELY (q->zip.scrub) && i > 0)
      cq_cqe (q, q->cq_ci)->signature = (guint8) (q->cq_ci >> q->log_cq);
  } else {
    if ((i & (MLX5_MINI_CQE_ARRAY_SIZE - 1)) == 0)
      zip_load (q, q->cq_ci + (i == 0 ? 1 : 0));
    m = q->zip.mini[i & (MLX5_MINI_CQE_ARRAY_SIZE - 1)];
    if (i > 0)
      cq_cqe (q, q->cq_ci)->op_own = MLX5_CQE_INVALID << 4;
  }
  cq_advance (q);
  return m;
}

/* One mini-CQE (FTAG_STRIDX) with its title's fields: a packet into pkts[t->n], or a
 * device error when it does not name the cursor's position. TRUE when the cursor left
 * the WQE. */
static inline gboolean
rx_mini (Mlx5Rxq *q, guint64 mini, Mlx5RxBurst *b, DqPacket *pkts, RxTally *t)
{
  guint64 m = be64toh (mini);
  guint32 stride = (guint32) (m >> 32) & 0xffff;
  guint32 len = (guint32) m & MLX5_MPRQ_LEN_MASK;
  guint32 n_strides = (len + (1u << q->log_stride_size) - 1) >> q->log_stride_size;
  guint32 slot = q->cur_wqe & q->wqe_mask;

  if (G_UNLIKELY (q->zip.wqe_id != slot || stride != q->cur_stride || len == 0 ||
          n_strides > q->strides - stride))
    return cqe_device_error (q, n_strides);
  DqPacket *pkt = &pkts[t->n];
  pkt->flow_id = ((guint32) (m >> 24) & 0xff) << 16 | (guint32) (m >> 48);
  pkt->flags = q->zip.flags;
  pkt->timestamp = q->zip.ts;
  t->minis++;
  return rx_packet (q, b, pkt, t, slot, stride, n_strides, len);
}

/* mlx5_rxq_poll on a CQ with compressed completions: full CQEs as without, sessions
 * read one mini-CQE at a time (they may span polls and bursts). */
static gboolean
rxq_poll_zip (Mlx5Rxq *q, Mlx5RxBurst *b, DqPacket *pkts, guint max)
{
  RxTally t = { .n = b->n_packets };
  gboolean complete = FALSE;
  gboolean enhanced = q->cq.comp == MLX5_CQ_COMP_ENHANCED;
  /* the session's position, kept in registers while the poll runs */
  guint32 left = q->zip.left, next = q->zip.next;

  while (t.n < max) {
    gboolean wqe_done;
    if (left > 0) {
      wqe_done = rx_mini (q, zip_take (q, enhanced, &next, &left), b, pkts, &t);
    } else {
      volatile struct mlx5_cqe64 *cqe = cq_cqe (q, q->cq_ci);
      if (!cq_sw_owned (q, cqe, q->cq_ci))
        break;
      /* the validity was read before anything it guards */
      mlx5_dma_rmb ();
      if (mlx5_cqe_format (cqe->op_own) == MLX5_COMPRESSED) {
        wqe_done = zip_start (q, cqe);
        left = q->zip.left;
        next = q->zip.next;
      } else {
        DqPacket *got;
        cq_advance (q);
        wqe_done = rx_full_cqe (q, cqe, b, pkts, &t, &got);
        if (enhanced) {
          /* a packet's full CQE is the title of compressed CQEs after it */
          q->zip.have_title = got != NULL;
          if (got != NULL) {
            q->zip.wqe_id = be16toh (cqe->wqe_id);
            q->zip.flags = got->flags;
            q->zip.ts = got->timestamp;
          }
        }
      }
    }
    /* a burst never crosses a WQE */
    if (wqe_done && t.n > 0) {
      complete = TRUE;
      break;
    }
  }
  q->zip.left = left;
  q->zip.next = next;
  return rx_poll_end (q, b, max, complete, &t);
}

gboolean
mlx5_rxq_poll (Mlx5Rxq *q, Mlx5RxBurst *b, DqPacket *pkts, guint max)
{
  if (q->rq.split_header != 0)
    return rxq_poll_split (q, b, pkts, max);
  if (q->cq.comp != MLX5_CQ_COMP_NONE)
    return rxq_poll_zip (q, b, pkts, max);
  RxTally t = { .n = b->n_packets };
  gboolean complete = FALSE;

  while (t.n < max) {
    volatile struct mlx5_cqe64 *cqe = cq_take (q);
    if (cqe == NULL)
      break;
    DqPacket *got;
    /* a burst never crosses a WQE */
    if (rx_full_cqe (q, cqe, b, pkts, &t, &got) && t.n > 0) {
      complete = TRUE;
      break;
    }
  }
  return rx_poll_end (q, b, max, complete, &t);
}

guint8 *
mlx5_rxq_burst_data (Mlx5Rxq *q, const Mlx5RxBurst *b)
{
  if (q->rq.split_header != 0)
    return q->rq.hdr_buf + (gsize) b->wqe * q->rq.hdr_stride;
  return q->rq.buf + ((gsize) b->wqe << q->log_region) +
      ((gsize) b->first_stride << q->log_stride_size);
}

gsize
mlx5_rxq_burst_size (Mlx5Rxq *q, const Mlx5RxBurst *b)
{
  if (q->rq.split_header != 0)
    return b->end;
  return b->end - (b->first_stride << q->log_stride_size);
}

guint8 *
mlx5_rxq_burst_payload (Mlx5Rxq *q, const Mlx5RxBurst *b)
{
  return q->rq.split_header != 0 ? rxq_payload_slot (q, b->wqe) : NULL;
}

gsize
mlx5_rxq_burst_payload_size (Mlx5Rxq *q, const Mlx5RxBurst *b)
{
  return q->rq.split_header != 0 ? (gsize) b->strides * q->rq.split_payload : 0;
}

void
mlx5_rxq_split_layout (Mlx5Rxq *q, guint *header_size, guint *hdr_stride, guint *payload_stride)
{
  *header_size = q->rq.split_header;
  *hdr_stride = q->rq.hdr_stride;
  *payload_stride = q->rq.split_payload;
}

void
mlx5_rxq_release (Mlx5Rxq *q, guint32 wqe, guint32 strides)
{
  g_return_if_fail (wqe <= q->wqe_mask);
  if (q->rq.split_header == 0) {
    strides_give_back (q, wqe, strides);
    return;
  }
  /* header-data split: the run of `strides` WQEs from `wqe` (one packet each), counted at
   * its first slot */
  strides_give_back (q, wqe, strides);
}

/* The RQ in ERR, every posted WQE completed: ERR -> RST -> RDY with the doorbell record
 * at 0, and the host's counters from 0 like the device's. FALSE while WQEs are still out,
 * or when the device refused (counted; tried again at the next refill). */
static gboolean
rxq_recover (Mlx5Rxq *q)
{
  if (q->cur_wqe != q->rq_pi || q->cur_stride != 0 || mlx5_rxq_cq_ready (q))
    return FALSE;
  __atomic_store_n (&q->rq.dbrec[MLX5_RCV_DBR], 0, __ATOMIC_RELEASE);
  GError *error = NULL;
  if (q->ops->rq_recover == NULL || !q->ops->rq_recover (q->dev, &q->rq, &error)) {
    if (MLX5_COUNTER_GET (q->c.recovery_failures) == 0)
      g_warning ("%s: the RQ in the error state could not be recovered: %s", q->what,
          error ? error->message : "the device cannot reset an RQ");
    MLX5_COUNTER_ADD (q->c.recovery_failures, 1);
    g_clear_error (&error);
    return FALSE;
  }
  q->rq_pi = 0;
  q->cur_wqe = 0;
  q->in_error = FALSE;
  q->zip.have_title = FALSE;
  MLX5_COUNTER_ADD (q->c.recoveries, 1);
  return TRUE;
}

gboolean
mlx5_rxq_in_error (Mlx5Rxq *q)
{
  return q->in_error;
}

guint
mlx5_rxq_refill (Mlx5Rxq *q)
{
  /* WQEs posted in ERR would only be flushed */
  if (G_UNLIKELY (q->in_error) && !rxq_recover (q))
    return 0;
  guint32 pi = q->rq_pi;

  if (q->rq.split_header != 0) {
    /* header-data split: a released run of WQEs is counted at its first slot; runs follow
     * each other in ring order. The WQEs never change (slot i names header and payload
     * slot i), so posting them again is the doorbell alone. */
    for (;;) {
      guint32 slot = pi & q->wqe_mask;
      gint run = __atomic_load_n (&q->freed[slot], __ATOMIC_ACQUIRE);
      if (run <= 0)
        break;
      __atomic_store_n (&q->freed[slot], 0, __ATOMIC_RELAXED);
      pi += (guint32) run;
    }
    goto ring;
  }
  /* strictly in ring order: the oldest posted WQE first, and only once every stride of
   * it is back (the device is done with it, and so is every reader); and never more than
   * post_window ahead of the CQ reader, so that the CQ holds every CQE the posted WQEs
   * can bring (mlx5_rx_geometry_compress) */
  for (;;) {
    /* (signed: a device that wrote past what was posted put the reader ahead) */
    if ((gint32) (pi - q->cur_wqe) >= (gint32) q->post_window)
      break;
    guint32 slot = pi & q->wqe_mask;
    gint freed = __atomic_load_n (&q->freed[slot], __ATOMIC_ACQUIRE);
    if ((guint32) freed < q->strides)
      break;
    if (G_UNLIKELY ((guint32) freed > q->strides))
      MLX5_COUNTER_ADD (q->c.device_errors, 1);
    __atomic_store_n (&q->freed[slot], 0, __ATOMIC_RELAXED);
    rxq_post_wqe (q, slot);
    pi++;
  }
ring:;
  guint posted = pi - q->rq_pi;
  if (posted == 0)
    return 0;
  /* the device may only complete into CQEs we are done with */
  cq_ring_doorbell (q);
  q->rq_pi = pi;
  rxq_ring_doorbell (q);
  MLX5_COUNTER_ADD (q->c.reposts, posted);
  return posted;
}

void
mlx5_rxq_counters (Mlx5Rxq *q, Mlx5RxCounters *c)
{
  c->packets = MLX5_COUNTER_GET (q->c.packets);
  c->bytes = MLX5_COUNTER_GET (q->c.bytes);
  c->fillers = MLX5_COUNTER_GET (q->c.fillers);
  c->cqe_errors = MLX5_COUNTER_GET (q->c.cqe_errors);
  c->flushed = MLX5_COUNTER_GET (q->c.flushed);
  c->recoveries = MLX5_COUNTER_GET (q->c.recoveries);
  c->recovery_failures = MLX5_COUNTER_GET (q->c.recovery_failures);
  c->device_errors = MLX5_COUNTER_GET (q->c.device_errors);
  c->reposts = MLX5_COUNTER_GET (q->c.reposts);
  c->compressed = MLX5_COUNTER_GET (q->c.compressed);
  c->last_syndrome = MLX5_COUNTER_GET (q->c.last_syndrome);
  c->last_vendor_syndrome = MLX5_COUNTER_GET (q->c.last_vendor_syndrome);
}
