/* Burst buffers: GstMemory that wraps one engine ring range and hands it back on free. */
#ifndef GST_DAQIRI_BURST_H
#define GST_DAQIRI_BURST_H

#include <gst/gst.h>
#include "daqiri-engine.h"

G_BEGIN_DECLS

/* A refcounted RX queue: it outlives the element while downstream still holds bursts. */
typedef struct _GstDaqiriRxRing GstDaqiriRxRing;

GstDaqiriRxRing *gst_daqiri_rx_ring_new (DqRxQueue *rxq);
GstDaqiriRxRing *gst_daqiri_rx_ring_ref (GstDaqiriRxRing *ring);
void gst_daqiri_rx_ring_unref (GstDaqiriRxRing *ring);
DqRxQueue *gst_daqiri_rx_ring_queue (GstDaqiriRxRing *ring);

/* A buffer holding the burst's ring range as its only memory, with a
 * GstDaqiriPacketMeta over the burst's packet array (no copy). The range goes back to
 * the engine when the buffer (and every copy of the meta) is gone. */
GstBuffer *gst_daqiri_burst_buffer_new (GstDaqiriRxRing *ring, const DqBurst *burst);

#ifdef DQ_HAVE_CUDA
/* The same as GstCudaMemory of @cuda_context (GStreamer >= 1.24, see
 * gst_daqiri_gstcuda_wrap); NULL where that cannot be made. */
GstBuffer *gst_daqiri_burst_buffer_new_gstcuda (
    GstDaqiriRxRing *ring, const DqBurst *burst, GstObject *cuda_context);
#endif

/* Whether @mem wraps a ring range. */
gboolean gst_is_daqiri_burst_memory (GstMemory *mem);

/* The RX ring @mem (a burst memory) lies in (a new reference), and the address of its
 * first byte as the NIC reaches it (the GPU pointer for a ring in GPU memory). */
GstDaqiriRxRing *gst_daqiri_burst_memory_ring (GstMemory *mem, const guint8 **data);

G_END_DECLS

#endif
