/* Host side of an mlx5 send queue (SQ of a raw packet QP) and its CQ.
 *
 * Frames live in TX slots: a slab of 2^log_slots slots of 2^log_slot_size bytes in
 * registered memory, handed out in cyclic order. Each frame is one SEND WQE of one
 * 64-byte WQE basic block (ctrl segment, 16-byte Ethernet segment without inline
 * headers, one data segment pointing at the slot); on a port that needs inline headers
 * (inline_bytes 18) the Ethernet segment carries the first 18 bytes of the frame (32
 * bytes) and the data segment the rest. A CQE is asked for every
 * `signal_every` WQEs and on the last WQE of each burst; a CQE completes its WQE and
 * every WQE before it, which gives their slots back.
 *
 * Two ways to send: mlx5_txq_send() copies frames into slots; or, for writing in place,
 * mlx5_txq_acquire() hands out free slots, the caller writes frames into them and
 * mlx5_txq_commit() sends the first n of them (one doorbell). One thread at a time.
 *
 * Two-segment sends (mlx5_txq_send_split_at): a frame's headers are copied into its slot
 * and its payload is read by the device where it lies, in memory registered with
 * mlx5_txq_register (host memory, or GPU memory): a SEND of two data segments (with
 * inline headers, the inline bytes come from the header, and the WQE takes two WQEBBs:
 * the SQ then has four WQEBBs a slot). The payload must stay until the frame completed:
 * mlx5_txq_completed() counts completed slots, one per frame.
 *
 * Enhanced multi-packet WQEs (Mlx5TxConfig.empw; not with inline headers): a run of
 * unscheduled frames of up to MLX5_TX_EMPW_MAX_LEN bytes goes out as eMPW WQEs of up to
 * MLX5_TX_EMPW_MAX_PACKETS frames each (mlx5-dma.h), one data segment per frame: one
 * control and Ethernet segment for many frames.
 *
 * Send scheduling: the _at variants take a time per frame (port real-time clock, ns; 0:
 * none) and put a WAIT WQE before the SEND of each timed frame: the device sends it once
 * its clock has passed that time, and everything behind it waits too. Times must lie
 * within 4 s of the device's clock (the WAIT's cyclic window, mlx5-dma.h); the SQ has two
 * WQEBBs per slot, so a WAIT never costs a slot. The device needs the wait_on_time
 * capability and a real-time clock (the caller checks).
 */
#ifndef DAQIRI_MLX5_TX_H
#define DAQIRI_MLX5_TX_H

#include <glib.h>

#include "mlx5-port.h"

G_BEGIN_DECLS

#define MLX5_TX_DEFAULT_RING ((gsize) 4 << 20)
#define MLX5_TX_MIN_SLOTS 4
#define MLX5_TX_MIN_SLOT 64
#define MLX5_TX_DEFAULT_SIGNAL_EVERY 32
/* eMPW: at most this many packets in one WQE, each at most this long */
#define MLX5_TX_EMPW_MAX_PACKETS 32
#define MLX5_TX_EMPW_MAX_LEN 1024

typedef struct {
  guint log_slots;        /* TX slots, log2 */
  guint log_slot_size;    /* bytes per slot, log2 */
  guint log_wqebbs;       /* SQ size, log2 of 64-byte WQEBBs (>= log_slots) */
  guint signal_every;     /* CQE every N WQEs (and on the last of a burst) */
  gboolean csum;          /* ask the device for L3 and L4 checksums */
  gboolean stamp_src_mac; /* write `mac` into bytes 6..11 of every frame */
  guint inline_bytes;     /* the frame's first bytes inline in the WQE (Mlx5Caps) */
  gboolean empw;          /* pack runs of unscheduled small frames into eMPW WQEs */
  guint8 mac[6];
} Mlx5TxConfig;

/* Slots: the power of two >= max_packet (at least 64 bytes); as many as fit ring_bytes
 * (0: 4 MiB), a power of two, at least 4, at most half the device's SQ size (the SQ has
 * two WQEBBs a slot). signal_every
 * 0 means 32 (at most half the slots). Fails with DQ_ERROR_CONFIG naming the value and
 * the allowed range. Fills the geometry fields of cfg; leaves the others. */
gboolean mlx5_tx_geometry_choose (const Mlx5Caps *caps, const char *what, gsize ring_bytes,
    guint max_packet, guint signal_every, Mlx5TxConfig *cfg, GError **error);

typedef struct {
  guint64 packets; /* WQEs posted */
  guint64 bytes;
  guint64 doorbells;
  guint64 waits;       /* WAIT WQEs posted (scheduled frames) */
  guint64 wqes;        /* SEND and eMPW WQEs posted (packets / wqes: packets per WQE) */
  guint64 empw_wqes;   /* of them eMPW */
  guint64 completions; /* CQEs read */
  guint64 cqe_errors;  /* error CQEs other than flushes */
  guint64 flushed;     /* flush-error CQEs: WQEs the SQ in ERR completed unsent */
  guint64 lost;        /* packets of the WQEs that completed with an error or a flush */
  guint64 recoveries;  /* ERR -> RST -> RDY done */
  guint64 recovery_failures;
  guint64 device_errors; /* CQEs naming no WQE in flight, unknown opcodes */
  guint8 last_syndrome;
  guint8 last_vendor_syndrome;
} Mlx5TxCounters;

typedef struct _Mlx5Txq Mlx5Txq;

Mlx5Txq *mlx5_txq_new (
    const Mlx5PortOps *ops, gpointer dev, const Mlx5TxConfig *cfg, GError **error);
void mlx5_txq_free (Mlx5Txq *q);

Mlx5Sq *mlx5_txq_sq (Mlx5Txq *q);
guint mlx5_txq_slot_size (Mlx5Txq *q);
guint mlx5_txq_n_slots (Mlx5Txq *q);
gsize mlx5_txq_ring_bytes (Mlx5Txq *q);

/* Reads the TX CQ: slots of completed WQEs become free. Returns slots reclaimed. */
guint mlx5_txq_reclaim (Mlx5Txq *q);

/* Slots neither in flight nor acquired (after the last reclaim). */
guint mlx5_txq_free_slots (Mlx5Txq *q);

/* TRUE when every posted WQE completed. */
gboolean mlx5_txq_idle (Mlx5Txq *q);

/* Hands out up to n free slots after the ones already acquired, in send order; stores
 * their addresses (each mlx5_txq_slot_size() bytes) in slots[]. Returns how many. */
guint mlx5_txq_acquire (Mlx5Txq *q, guint n, guint8 **slots);

/* Sends the first n acquired slots, frame i being lengths[i] bytes (1 .. slot size),
 * and rings the doorbell once. Stops at a length out of range (that slot and the ones
 * after it stay acquired). Returns how many were sent. */
guint mlx5_txq_commit (Mlx5Txq *q, guint n, const guint32 *lengths);

/* The same with a time per frame (NULL: none; times[i] 0: frame i unscheduled). */
guint mlx5_txq_commit_at (Mlx5Txq *q, guint n, const guint32 *lengths, const guint64 *times);

/* Gives back every acquired, uncommitted slot. */
void mlx5_txq_cancel (Mlx5Txq *q);

/* Copies up to n frames into free slots and sends them (one doorbell). Stops at the
 * first frame with a length out of range, or when no slot is free. Returns how many. */
guint mlx5_txq_send (Mlx5Txq *q, const guint8 *const *frames, const guint32 *lengths, guint n);

guint mlx5_txq_send_at (
    Mlx5Txq *q, const guint8 *const *frames, const guint32 *lengths, const guint64 *times, guint n);

/* A payload segment: `length` bytes at device address `addr` of the registration `lkey` */
typedef struct {
  guint64 addr;
  guint32 lkey;
  guint32 length;
} Mlx5TxPayload;

/* Copies up to n headers into free slots and sends each with its payload (one doorbell;
 * an empty payload: the header alone). Stops at the first header of a length out of range
 * (0, over the slot size, or shorter than the inline headers before a payload), or when
 * no slot is free. Returns how many were sent. */
guint mlx5_txq_send_split_at (Mlx5Txq *q, const guint8 *const *headers,
    const guint32 *header_lengths, const Mlx5TxPayload *payloads, const guint64 *times, guint n);

/* Slots sent so far (free-running, 32 bits), one per frame */
guint32 mlx5_txq_posted (Mlx5Txq *q);

/* Reads the CQ and returns the slots completed so far (free-running, 32 bits): a frame of
 * slot s is done with (sent or lost) once this has passed s. */
guint32 mlx5_txq_completed (Mlx5Txq *q);

/* Registers [addr, addr + size) for payload segments (mlx5_mr_register); the handle goes
 * to mlx5_txq_unregister, once no posted frame reads it. */
gboolean mlx5_txq_register (Mlx5Txq *q, const char *what, void *addr, gsize size,
    const DqRingMemory *memory, guint32 *lkey, gpointer *mr, GError **error);
void mlx5_txq_unregister (Mlx5Txq *q, gpointer mr);

void mlx5_txq_counters (Mlx5Txq *q, Mlx5TxCounters *c);

G_END_DECLS

#endif /* DAQIRI_MLX5_TX_H */
