/* Host side of an mlx5 striding receive queue (multi-packet RQ, "MPRQ") and its CQ.
 *
 * The ring memory is ours: a packet buffer of 2^log_wqes regions, each region the
 * 2^log_strides strides of one WQE; the WQE ring (32-byte WQEs: a zero next segment and
 * one data segment naming the region); a CQ of 2^log_cq_size 64-byte CQEs; and the two
 * doorbell records. The control path (Mlx5PortOps) turns them into device objects. The
 * device writes packets into consecutive strides of the current WQE and one CQE per
 * packet; this code reads the CQEs, cuts them into bursts (packets of one WQE), and
 * re-posts a WQE once every stride of it came back through mlx5_rxq_release().
 *
 * Compressed completions (geometry cqe_comp, mlx5-dma.h for the layouts): the same
 * packets come out of title CQEs and mini-CQEs as out of full CQEs (offset, length, flow
 * tag, checksum flags), except the time: a mini-CQE has none, so its packet carries its
 * title's NIC time (basic layout: the session's first packet's; enhanced: that of the
 * last packet with a full CQE before it), never later than its own arrival. A compressed
 * CQ is a quarter of the ring's strides (mlx5_rx_geometry_compress): the host then
 * posts at most a quarter of the WQEs ahead of where it has read the CQ, so that the
 * CQEs the device may write never outnumber the CQ's entries.
 *
 * Threads: mlx5_rxq_poll() and mlx5_rxq_refill() belong to one polling thread;
 * mlx5_rxq_release() may be called from any thread, in any order.
 */
#ifndef DAQIRI_MLX5_RX_H
#define DAQIRI_MLX5_RX_H

#include <glib.h>

#include "mlx5-port.h"
#include "daqiri-engine.h"

G_BEGIN_DECLS

/* Default ring memory per queue, and the smallest WQE count worth having: the device
 * fills one WQE while the host holds the others. */
#define MLX5_RX_DEFAULT_RING ((gsize) 64 << 20)
#define MLX5_RX_MIN_LOG_WQES 2
/* wqe_id and the RQ doorbell counter are 16 bits: a full ring of 2^16 posted WQEs
 * would read as 0 posted */
#define MLX5_RX_MAX_LOG_WQES 15
#define MLX5_RX_DEFAULT_STRIDE 64
#define MLX5_RX_DEFAULT_LOG_STRIDES 9
/* CQ doorbell record written after this many CQEs (and at the end of every poll) */
#define MLX5_RX_CQ_DOORBELL_EVERY 64

typedef struct {
  guint log_stride_size;      /* bytes per stride */
  guint log_strides;          /* strides per WQE */
  guint log_wqes;             /* WQEs in the ring */
  guint log_cq_size;          /* CQEs in the CQ: one per stride of the WQEs that may be
                               * posted ahead of the CQ reader (all, unless compressed) */
  Mlx5CqComp cqe_comp;        /* compressed completions (mlx5_rx_geometry_compress) */
  const DqRingMemory *memory; /* the packet buffer's memory; NULL: host (mlx5_mem_map) */
  /* header-data split (split_header != 0; mlx5_rx_geometry_split): a cyclic RQ of one
   * packet per WQE, split_header bytes into a host header ring of hdr_stride-byte slots,
   * the rest into split_payload-byte slots of the packet buffer; the stride fields 0 */
  guint split_header, split_payload, hdr_stride;
} Mlx5RxGeometry;

/* What the cqe-comp key asks for: no compression, the best layout the device has (none
 * on a device without), or one layout. */
typedef enum {
  MLX5_RX_CQE_COMP_OFF,
  MLX5_RX_CQE_COMP_ON,
  MLX5_RX_CQE_COMP_BASIC,
  MLX5_RX_CQE_COMP_ENHANCED,
} Mlx5RxCqeComp;

/* The layout `want` gives on a device of `caps`: ON takes enhanced where the device has
 * it, else basic, else none; BASIC and ENHANCED fail with DQ_ERROR_CONFIG naming the
 * capability the device lacks and what is allowed. */
gboolean mlx5_rx_cqe_comp_choose (
    const Mlx5Caps *caps, const char *what, Mlx5RxCqeComp want, Mlx5CqComp *comp, GError **error);

/* A compressed CQ for a striding geometry: geo->cqe_comp = comp and, unless comp is
 * MLX5_CQ_COMP_NONE, a CQ of a quarter of the ring's strides (at least 4 WQEs' worth,
 * never more than the ring's). Compression takes one CQ index per packet as plain CQEs
 * do, so the CQ is smaller only because the ring code then posts no more WQEs ahead of
 * its CQ reader than the CQ has strides for (see mlx5_rxq_refill). */
void mlx5_rx_geometry_compress (Mlx5RxGeometry *geo, Mlx5CqComp comp);
#define MLX5_RX_COMP_LOG_CQ_CUT 2

/* Header-data split: header bytes per packet MLX5_RX_SPLIT_MIN_HEADER ..
 * MLX5_RX_SPLIT_MAX_HEADER; both rings' slots are multiples of MLX5_RX_SPLIT_ALIGN bytes
 * (a header slot: header_size rounded up; a payload slot: the largest frame the port takes,
 * or max_packet if larger, less header_size, rounded up). */
#define MLX5_RX_SPLIT_MIN_HEADER 14
#define MLX5_RX_SPLIT_MAX_HEADER 1024
#define MLX5_RX_SPLIT_ALIGN 64

/* Chooses the ring geometry.
 *  - stride: `stride_size` when not 0 (a power of two within the device's limits), else
 *    the power of two >= max_packet, at most 64 and at least the device minimum (a
 *    larger frame takes several consecutive strides: small frames take little of the
 *    ring, and the device writes the ring front to back);
 *  - strides per WQE: `strides_per_wqe` when not 0, else 512; raised so that one WQE holds
 *    a max_packet frame (a packet never spans WQEs), lowered (down to the device minimum)
 *    while the ring would have fewer than 4 WQEs;
 *  - WQEs: the largest power of two of regions that fits ring_bytes (0: 64 MiB); a ring
 *    of more than 2^15 regions, or of more strides than the CQ limit allows (the CQ has
 *    one CQE per stride, so it can never overflow), is refused rather than cut; the
 *    default ring is cut to those limits.
 * Fails with DQ_ERROR_CONFIG naming the value and the allowed range. `what` prefixes
 * messages ("emu:x"). */
gboolean mlx5_rx_geometry_choose (const Mlx5Caps *caps, const char *what, gsize ring_bytes,
    guint max_packet, guint stride_size, guint strides_per_wqe, Mlx5RxGeometry *geo,
    GError **error);

/* The geometry of a header-data split ring: 2^n packet slots, the largest power of two
 * whose payload slots fit ring_bytes (0: 64 MiB), within the WQE and CQ limits (a ring
 * larger than they allow is refused; the default is cut); DQ_ERROR_CONFIG naming the value
 * and the allowed range otherwise. max_frame: the largest frame the port takes. */
gboolean mlx5_rx_geometry_split (const Mlx5Caps *caps, const char *what, gsize ring_bytes,
    guint max_packet, guint max_frame, guint header_size, Mlx5RxGeometry *geo, GError **error);

typedef struct {
  guint64 packets;
  guint64 bytes;
  guint64 fillers;    /* filler CQEs: strides skipped at the end of a WQE */
  guint64 cqe_errors; /* error CQEs other than flushes (their strides are given back) */
  guint64 flushed;    /* flush-error CQEs: WQEs the device completed unused in ERR */
  guint64 recoveries; /* ERR -> RST -> RDY done */
  guint64 recovery_failures;
  guint64 device_errors; /* CQEs contradicting the ring state (counted, dropped) */
  guint64 reposts;       /* WQEs re-posted */
  guint64 compressed;    /* packets read from mini-CQEs (counted in packets too) */
  guint8 last_syndrome;  /* of the last error CQE */
  guint8 last_vendor_syndrome;
} Mlx5RxCounters;

/* A burst: packets that lie in one WQE's region, in stride order. With header-data split:
 * packets of consecutive WQEs from `wqe`, one each, `strides` of them. */
typedef struct {
  guint32 wqe;          /* ring index of the (first) WQE */
  guint32 first_stride; /* stride of the first packet (0 with header-data split) */
  guint32 strides;      /* strides the packets consumed (WQEs with header-data split):
                         * what to release */
  guint32 end;          /* byte after the last packet, from the region start */
  guint n_packets;
} Mlx5RxBurst;

typedef struct _Mlx5Rxq Mlx5Rxq;

/* Allocates the rings and creates CQ and RQ through `ops`; every WQE is posted. The
 * packet timestamps are converted with the device clock (ops->clock_info, refreshed by
 * mlx5_rxq_clock_refresh()) unless caps->real_time_ts. */
Mlx5Rxq *mlx5_rxq_new (const Mlx5PortOps *ops, gpointer dev, const Mlx5Caps *caps,
    const Mlx5RxGeometry *geo, GError **error);
void mlx5_rxq_free (Mlx5Rxq *q);

Mlx5Rq *mlx5_rxq_rq (Mlx5Rxq *q);
gsize mlx5_rxq_ring_bytes (Mlx5Rxq *q);          /* the packet buffer */
guint8 *mlx5_rxq_ring_base (Mlx5Rxq *q);         /* where it starts */
DqMemoryKind mlx5_rxq_memory_kind (Mlx5Rxq *q);  /* of the packet buffer */
DqRingPlacement mlx5_rxq_placement (Mlx5Rxq *q); /* of the packet buffer */
guint mlx5_rxq_stride_size (Mlx5Rxq *q);
guint mlx5_rxq_strides_per_wqe (Mlx5Rxq *q);
guint mlx5_rxq_n_wqes (Mlx5Rxq *q);
gsize mlx5_rxq_cq_bytes (Mlx5Rxq *q); /* of the CQ ring */
Mlx5CqComp mlx5_rxq_cqe_comp (Mlx5Rxq *q);

/* Reads CQEs into `b` and pkts[b->n_packets ..]: a new burst when b->n_packets is 0,
 * else the continuation of `b`. Returns TRUE when the burst is complete (`max` packets,
 * or its WQE is used up: the next packet lies in another WQE); FALSE when the CQ ran
 * dry first (b may hold packets; poll again to continue it). Packet offsets are from
 * the burst's first byte (mlx5_rxq_burst_data()). Writes the CQ doorbell record every
 * MLX5_RX_CQ_DOORBELL_EVERY CQEs and before returning. */
gboolean mlx5_rxq_poll (Mlx5Rxq *q, Mlx5RxBurst *b, DqPacket *pkts, guint max);

/* Whether a CQE is waiting (no side effect). */
gboolean mlx5_rxq_cq_ready (Mlx5Rxq *q);

/* The burst's packet bytes: with header-data split, its packets' header slots (packet
 * offsets count from here; a packet's first MIN (length, header_size) bytes). */
guint8 *mlx5_rxq_burst_data (Mlx5Rxq *q, const Mlx5RxBurst *b);
gsize mlx5_rxq_burst_size (Mlx5Rxq *q, const Mlx5RxBurst *b);
/* Header-data split: the burst's payload slots, the packet at header offset o having the
 * rest of its bytes at o / hdr_stride * payload_stride from here; NULL and 0 without. */
guint8 *mlx5_rxq_burst_payload (Mlx5Rxq *q, const Mlx5RxBurst *b);
gsize mlx5_rxq_burst_payload_size (Mlx5Rxq *q, const Mlx5RxBurst *b);
/* header bytes per packet (0: no split), header and payload slot sizes */
void mlx5_rxq_split_layout (
    Mlx5Rxq *q, guint *header_size, guint *hdr_stride, guint *payload_stride);

/* Gives back `strides` strides of WQE `wqe` (ring index); with header-data split, the
 * `strides` WQEs from `wqe`. Any thread. */
void mlx5_rxq_release (Mlx5Rxq *q, guint32 wqe, guint32 strides);

/* Re-posts, in ring order, the WQEs whose strides all came back, and rings the RQ
 * doorbell; no more WQEs are ever posted ahead of the CQ reader than the CQ has strides
 * for (2^(log_cq_size - log_strides)). Returns how many were posted. After an error CQE it posts nothing until every
 * posted WQE has completed (the device flushes them), then recovers the RQ (ERR -> RST ->
 * RDY) and posts from ring slot 0. Polling thread. */
guint mlx5_rxq_refill (Mlx5Rxq *q);

/* An error CQE was read and the RQ is not recovered yet. Polling thread. */
gboolean mlx5_rxq_in_error (Mlx5Rxq *q);

/* Takes a fresh clock snapshot from the device (polling thread; at least every 0.5 s). */
void mlx5_rxq_clock_refresh (Mlx5Rxq *q);

/* Counters (any thread; each value is read atomically). */
void mlx5_rxq_counters (Mlx5Rxq *q, Mlx5RxCounters *c);

G_END_DECLS

#endif /* DAQIRI_MLX5_RX_H */
