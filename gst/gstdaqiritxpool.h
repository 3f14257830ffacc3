/* Writing packets in place into a TX ring: the buffer pool daqirisink proposes.
 *
 * A GstDaqiriTxRing is a refcounted TX queue of an engine that lends its slots
 * (dq_txq_acquire). The pool built over it hands out buffers that are runs of those
 * slots: one GstMemory over the run (NIC-visible memory, nothing allocated per buffer)
 * and a GstDaqiriPacketMeta that lists the slots, packet i being slot i:
 *
 *   offset = i * stride (the slot's first byte), length = the slot's capacity,
 *   n_packets = the slots in the run (at most the pool's max-packets).
 *
 * The producer writes frame i at offset i * stride, sets packets[i].length to the frame
 * length and n_packets to the frames it wrote (the rest of the slots go back unsent);
 * daqirisink then sends the frames where they are (no copy). A buffer whose descriptors
 * do not follow the slots is sent by copy, still correctly.
 *
 * Rules the pool keeps:
 *  - one run per ring is lent at a time: acquiring a second buffer waits until the first
 *    is sent (rendered) or freed;
 *  - the slots of sent frames are reused only after every buffer over them is freed: a
 *    buffer still referenced after it was sent holds its frames' slots back (acquiring
 *    waits), so its frames never change under a reader (slots a run left unused are
 *    lent again at once);
 *  - waits end on the pool's flushing and when the sink stops (GST_FLOW_FLUSHING).
 *
 * Producers recognise the pool by GST_BUFFER_POOL_OPTION_DAQIRI_TX_SLOTS and say what
 * they need with gst_daqiri_tx_pool_config_set_burst() before gst_buffer_pool_set_config()
 * (which fails when their largest frame does not fit a slot).
 */
#ifndef GST_DAQIRI_TX_POOL_H
#define GST_DAQIRI_TX_POOL_H

#include <gst/gst.h>
#include "daqiri-engine.h"

G_BEGIN_DECLS

/* the option string, the same in any app: "GstBufferPoolOptionDaqiriTxSlots" */
#define GST_BUFFER_POOL_OPTION_DAQIRI_TX_SLOTS "GstBufferPoolOptionDaqiriTxSlots"

typedef struct _GstDaqiriTxRing GstDaqiriTxRing;

/* Takes ownership of txq (destroyed with the last reference). NULL with *error when the
 * queue's engine does not lend slots. */
GstDaqiriTxRing *gst_daqiri_tx_ring_new (DqTxQueue *txq, GError **error);
GstDaqiriTxRing *gst_daqiri_tx_ring_ref (GstDaqiriTxRing *ring);
void gst_daqiri_tx_ring_unref (GstDaqiriTxRing *ring);

/* No run is lent any more; waits for one end (GST_FLOW_FLUSHING). Runs already lent
 * stay valid until their buffers go. */
void gst_daqiri_tx_ring_close (GstDaqiriTxRing *ring);
/* Ends a wait of the engine (a flush) at once. */
void gst_daqiri_tx_ring_wakeup (GstDaqiriTxRing *ring);
/* Waits until everything sent left the ring (FALSE: woken or failed). */
gboolean gst_daqiri_tx_ring_flush (GstDaqiriTxRing *ring, GError **error);
void gst_daqiri_tx_ring_stats (GstDaqiriTxRing *ring, DqTxStats *stats);

/* Slot geometry: bytes from one slot to the next, the longest frame a slot holds, the
 * most slots one buffer gets. */
guint gst_daqiri_tx_ring_stride (GstDaqiriTxRing *ring);
guint gst_daqiri_tx_ring_slot_size (GstDaqiriTxRing *ring);
guint gst_daqiri_tx_ring_max_run (GstDaqiriTxRing *ring);

/* ---- the memory of a pool buffer: one lent run of slots ---- */

gboolean gst_is_daqiri_tx_slot_memory (GstMemory *mem);
GstDaqiriTxRing *gst_daqiri_tx_slot_memory_ring (GstMemory *mem);
/* the run: slot i at data + i * stride, *n_slots of them */
const DqTxSlots *gst_daqiri_tx_slot_memory_run (GstMemory *mem);

/* Sends frames 0 .. n-1 of the memory's run, frame i in slot i and lengths[i] bytes
 * long, without a copy; the unused slots go back. `times`: NULL, or frame i's send time
 * (dq_txq_commit_at). 1: sent (frames too short or too long for the port are refused and
 * counted as errors); 0: the run is no longer lent (it was sent already); -1 with
 * *error. */
int gst_daqiri_tx_slot_memory_commit (
    GstMemory *mem, guint n, const guint32 *lengths, const guint64 *times, GError **error);

/* ---- the pool ---- */

#define GST_TYPE_DAQIRI_TX_POOL (gst_daqiri_tx_pool_get_type ())
G_DECLARE_FINAL_TYPE (GstDaqiriTxPool, gst_daqiri_tx_pool, GST, DAQIRI_TX_POOL, GstBufferPool);

GstBufferPool *gst_daqiri_tx_pool_new (GstDaqiriTxRing *ring);

/* What the producer needs: at most max_packets frames per buffer (fewer slots are lent
 * where the ring wraps), none longer than max_frame_size bytes (0: unknown). */
void gst_daqiri_tx_pool_config_set_burst (
    GstStructure *config, guint max_packets, guint max_frame_size);
gboolean gst_daqiri_tx_pool_config_get_burst (
    const GstStructure *config, guint *max_packets, guint *max_frame_size);

G_END_DECLS

#endif
