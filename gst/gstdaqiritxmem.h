/* Payload memory of two-segment sends (daqirisink): where the bytes of a buffer's memory
 * lie as the NIC reaches them, and a sender's registrations of that memory with its TX
 * queue (dq_txq_register).
 *
 * A registration covers a whole allocation, made at its first use and kept while the
 * sender runs: an RX ring of daqirisrc (a burst's payload memory; the registration holds
 * the ring), a daqiri GPU memory allocation (daqirireorder memory=cuda frames) or a system
 * memory allocation (the registration holds the memory, so its address cannot be reused
 * by another allocation while registered). Beyond GST_DAQIRI_TX_REGS_MAX registrations,
 * the least recently used one that no posted frame reads any more is dropped first.
 * One thread (the sender's) uses a set. */
#ifndef GST_DAQIRI_TX_MEM_H
#define GST_DAQIRI_TX_MEM_H

#include <gst/gst.h>

#include "daqiri-engine.h"

G_BEGIN_DECLS

#define GST_DAQIRI_TX_REGS_MAX 64

/* daqirisink's answer in the allocation query: the params of its GstDaqiriPacketMeta entry
 * hold this boolean field, TRUE when it sends header-data split bursts from where their
 * payloads lie (two-segment sends) rather than joining them by a copy. Producers of such
 * bursts (daqiripay with GPU frames) look for it. */
#define GST_DAQIRI_TWO_SEGMENT "two-segment"

typedef struct _GstDaqiriTxRegs GstDaqiriTxRegs;

GstDaqiriTxRegs *gst_daqiri_tx_regs_new (DqTxQueue *txq);
/* Unregisters everything: call it once the queue is flushed (no frame posted). */
void gst_daqiri_tx_regs_free (GstDaqiriTxRegs *regs);

/* The registration that covers @mem's bytes, made if there is none, and in *data the
 * address of @mem's first byte as the device reaches it. NULL with *error (naming what
 * @mem is) where the memory cannot be sent from: memory of another kind, or device memory
 * that the queue's device cannot reach. */
DqTxMemory *gst_daqiri_tx_regs_get (
    GstDaqiriTxRegs *regs, GstMemory *mem, const guint8 **data, GError **error);

/* Frames that point into @reg were posted up to @mark (dq_txq_posted): it is not dropped
 * before dq_txq_completed() reaches it. */
void gst_daqiri_tx_regs_used (GstDaqiriTxRegs *regs, DqTxMemory *reg, guint64 mark);

/* Registrations made so far */
guint64 gst_daqiri_tx_regs_made (GstDaqiriTxRegs *regs);

G_END_DECLS

#endif
