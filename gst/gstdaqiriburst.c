/* Burst buffers: one GstMemory per engine ring range, returned to the engine on free.
 *
 * A burst in a ring of GPU-accessible memory (DQ_MEMORY_CUDA: daqirisrc memory=cuda) is
 * memory of type GST_DAQIRI_CUDA_MEMORY_TYPE: GST_DAQIRI_MAP_CUDA maps give the pointer the
 * GPU reads; CPU maps are refused, as for daqiri's other GPU memory. With GStreamer >= 1.24 the
 * same range can go out as GstCudaMemory instead (gst_daqiri_burst_buffer_new_gstcuda). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqiriburst.h"

#include <gst/daqiri/daqiri.h>
#include <string.h>
#include "gstdaqirielement.h"
#include "daqiri-reorder.h"
#ifdef DQ_HAVE_CUDA
#include "gstdaqirigstcuda.h"
#endif

struct _GstDaqiriRxRing {
  gint refcount;
  DqRxQueue *rxq;
};

GstDaqiriRxRing *
gst_daqiri_rx_ring_new (DqRxQueue *rxq)
{
  GstDaqiriRxRing *ring = g_new0 (GstDaqiriRxRing, 1);
  ring->refcount = 1;
  ring->rxq = rxq;
  return ring;
}

GstDaqiriRxRing *
gst_daqiri_rx_ring_ref (GstDaqiriRxRing *ring)
{
  g_atomic_int_inc (&ring->refcount);
  return ring;
}

void
gst_daqiri_rx_ring_unref (GstDaqiriRxRing *ring)
{
  if (ring != NULL && g_atomic_int_dec_and_test (&ring->refcount)) {
    dq_rxq_destroy (ring->rxq);
    g_free (ring);
  }
}

DqRxQueue *
gst_daqiri_rx_ring_queue (GstDaqiriRxRing *ring)
{
  return ring->rxq;
}

/* ---- the allocator of ring-range memories ---- */

/* A burst's ring range. With header-data split the burst has two: the headers (this memory,
 * which gives the burst back when freed) and the payloads (a second memory whose `owner` is
 * the first: it holds a reference to it). */
typedef struct {
  GstMemory mem;
  GstDaqiriRxRing *ring;
  DqBurst burst;
  guint8 *data;     /* what a map returns */
  GstMemory *owner; /* NULL: this memory gives the burst back */
} GstDaqiriBurstMemory;

#define GST_TYPE_DAQIRI_BURST_ALLOCATOR (gst_daqiri_burst_allocator_get_type ())
G_DECLARE_FINAL_TYPE (
    GstDaqiriBurstAllocator, gst_daqiri_burst_allocator, GST, DAQIRI_BURST_ALLOCATOR, GstAllocator);

struct _GstDaqiriBurstAllocator {
  GstAllocator parent;
  gboolean cuda; /* the ranges are GPU-accessible memory */
};

G_DEFINE_TYPE (GstDaqiriBurstAllocator, gst_daqiri_burst_allocator, GST_TYPE_ALLOCATOR);

#define BURST_MEMORY_TYPE "DaqiriBurstMemory"

static GstMemory *
burst_alloc (GstAllocator *allocator, gsize size, GstAllocationParams *params)
{
  /* ring ranges come from the engine, never from gst_allocator_alloc() */
  return NULL;
}

static void
burst_free (GstAllocator *allocator, GstMemory *mem)
{
  GstDaqiriBurstMemory *bmem = (GstDaqiriBurstMemory *) mem;

  if (bmem->owner != NULL) {
    gst_memory_unref (bmem->owner);
  } else {
    dq_rxq_release (bmem->ring->rxq, &bmem->burst);
    gst_daqiri_rx_ring_unref (bmem->ring);
  }
  g_free (bmem);
}

static gpointer
burst_map (GstMemory *mem, gsize maxsize, GstMapFlags flags)
{
  if (flags & GST_MAP_WRITE)
    return NULL; /* the ring is the NIC's, read-only to us */
  if (((GstDaqiriBurstAllocator *) mem->allocator)->cuda && !(flags & GST_DAQIRI_MAP_CUDA)) {
    GST_ERROR ("a burst in GPU memory cannot be mapped for the CPU: map it with "
               "GST_DAQIRI_MAP_CUDA, or use daqirisrc memory=system");
    return NULL;
  }
  return ((GstDaqiriBurstMemory *) mem)->data;
}

static void
burst_unmap (GstMemory *mem)
{}

static GstMemory *
burst_copy (GstMemory *mem, gssize offset, gssize size)
{
  if (((GstDaqiriBurstAllocator *) mem->allocator)->cuda) {
    GST_ERROR ("a burst in GPU memory is not copied by the CPU");
    return NULL;
  }
  if (size == -1)
    size = (gssize) mem->size - offset;
  /* a plain system-memory copy */
  guint8 *data =
      g_memdup2 (((GstDaqiriBurstMemory *) mem)->data + mem->offset + offset, (gsize) size);
  return gst_memory_new_wrapped (0, data, (gsize) size, 0, (gsize) size, data, g_free);
}

static void
gst_daqiri_burst_allocator_class_init (GstDaqiriBurstAllocatorClass *klass)
{
  GST_ALLOCATOR_CLASS (klass)->alloc = burst_alloc;
  GST_ALLOCATOR_CLASS (klass)->free = burst_free;
}

static void
gst_daqiri_burst_allocator_init (GstDaqiriBurstAllocator *self)
{
  GstAllocator *alloc = GST_ALLOCATOR (self);

  alloc->mem_type = BURST_MEMORY_TYPE;
  alloc->mem_map = burst_map;
  alloc->mem_unmap = burst_unmap;
  alloc->mem_copy = burst_copy;
  GST_OBJECT_FLAG_SET (self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

static GstAllocator *
burst_allocator_new (gboolean cuda)
{
  GstAllocator *a = gst_daqiri_allocator_new_kept (GST_TYPE_DAQIRI_BURST_ALLOCATOR);
  GST_DAQIRI_BURST_ALLOCATOR (a)->cuda = cuda;
  if (cuda)
    a->mem_type = GST_DAQIRI_CUDA_MEMORY_TYPE;
  return a;
}

/* One allocator for host ranges, one for GPU-accessible ones. */
static GstAllocator *
burst_allocator_get (DqMemoryKind kind)
{
  static GstAllocator *host, *cuda;

  if (kind == DQ_MEMORY_CUDA) {
    if (g_once_init_enter (&cuda))
      g_once_init_leave (&cuda, burst_allocator_new (TRUE));
    return cuda;
  }
  if (g_once_init_enter (&host))
    g_once_init_leave (&host, burst_allocator_new (FALSE));
  return host;
}

gboolean
gst_is_daqiri_burst_memory (GstMemory *mem)
{
  return mem != NULL && mem->allocator != NULL &&
      g_type_is_a (G_OBJECT_TYPE (mem->allocator), GST_TYPE_DAQIRI_BURST_ALLOCATOR);
}

GstDaqiriRxRing *
gst_daqiri_burst_memory_ring (GstMemory *mem, const guint8 **data)
{
  if (!gst_is_daqiri_burst_memory (mem))
    return NULL;
  GstDaqiriBurstMemory *bmem = (GstDaqiriBurstMemory *) mem;
  GstDaqiriBurstMemory *head = bmem->owner ? (GstDaqiriBurstMemory *) bmem->owner : bmem;
  *data = bmem->data + mem->offset;
  return gst_daqiri_rx_ring_ref (head->ring);
}

/* The burst's ring range as a GstMemory: the range goes back when it is freed. */
static GstMemory *
burst_memory_new (GstDaqiriRxRing *ring, const DqBurst *burst)
{
  G_STATIC_ASSERT (sizeof (DqPacket) == sizeof (GstDaqiriPacket));
  G_STATIC_ASSERT (
      G_STRUCT_OFFSET (DqPacket, timestamp) == G_STRUCT_OFFSET (GstDaqiriPacket, timestamp));
  G_STATIC_ASSERT (G_STRUCT_OFFSET (DqPacket, flags) == G_STRUCT_OFFSET (GstDaqiriPacket, flags));

  GstDaqiriBurstMemory *bmem = g_new (GstDaqiriBurstMemory, 1);
  /* NO_SHARE: a sub-buffer gets a copy, so no view of the ring outlives the range */
  gst_memory_init (GST_MEMORY_CAST (bmem), GST_MEMORY_FLAG_READONLY | GST_MEMORY_FLAG_NO_SHARE,
      burst_allocator_get (burst->memory), NULL, burst->size, 0, 0, burst->size);
  bmem->ring = gst_daqiri_rx_ring_ref (ring);
  bmem->burst = *burst;
  bmem->data = burst->data;
  bmem->owner = NULL;
  return GST_MEMORY_CAST (bmem);
}

/* Header-data split: the payload range of the burst that `owner` gives back. */
static GstMemory *
burst_payload_memory_new (GstMemory *owner)
{
  const DqBurst *burst = &((GstDaqiriBurstMemory *) owner)->burst;
  GstDaqiriBurstMemory *pmem = g_new0 (GstDaqiriBurstMemory, 1);
  gst_memory_init (GST_MEMORY_CAST (pmem), GST_MEMORY_FLAG_READONLY | GST_MEMORY_FLAG_NO_SHARE,
      burst_allocator_get (burst->payload_memory), NULL, burst->payload_size, 0, 0,
      burst->payload_size);
  pmem->data = burst->payload;
  pmem->owner = gst_memory_ref (owner);
  return GST_MEMORY_CAST (pmem);
}

/* A buffer of `mem` with the packet meta over bmem's packet array (the meta takes the
 * reference to bmem: the array lives in the engine's burst record). */
static GstBuffer *
burst_buffer (GstMemory *mem, GstMemory *bmem)
{
  GstBuffer *buf = gst_buffer_new ();
  gst_buffer_append_memory (buf, mem);
  const DqBurst *burst = &((GstDaqiriBurstMemory *) bmem)->burst;
  if (burst->header_size != 0)
    gst_buffer_append_memory (buf, burst_payload_memory_new (bmem));
  GstDaqiriPacketMeta *meta =
      gst_buffer_add_daqiri_packet_meta_full (buf, (GstDaqiriPacket *) burst->packets,
          burst->n_packets, (GDestroyNotify) gst_memory_unref, bmem);
  meta->header_size = burst->header_size;
  meta->header_stride = burst->header_stride;
  meta->payload_stride = burst->payload_stride;
  /* the engine's stride words are the reorder library's */
  G_STATIC_ASSERT (DQ_BURST_WORD_LENGTH_SHIFT == DQ_REORDER_WORD_LENGTH_SHIFT);
  G_STATIC_ASSERT (DQ_BURST_WORD_MAX_SHIFT == DQ_REORDER_WORD_MAX_SHIFT);
  meta->_word_shift = burst->word_shift;
  meta->_words = burst->words;
  return buf;
}

GstBuffer *
gst_daqiri_burst_buffer_new (GstDaqiriRxRing *ring, const DqBurst *burst)
{
  GstMemory *bmem = burst_memory_new (ring, burst);
  return burst_buffer (bmem, gst_memory_ref (bmem));
}

#ifdef DQ_HAVE_CUDA
GstBuffer *
gst_daqiri_burst_buffer_new_gstcuda (
    GstDaqiriRxRing *ring, const DqBurst *burst, GstObject *cuda_context)
{
  GstMemory *bmem = burst_memory_new (ring, burst);
  /* GstCudaMemory over the same range (mapped, portable pinned memory: its address is the
   * device pointer in every context); it holds bmem, so the range lives as long as it */
  GstMemory *mem = gst_daqiri_gstcuda_wrap (cuda_context, burst->data, burst->size, TRUE,
      gst_memory_ref (bmem), (GDestroyNotify) gst_memory_unref);
  if (mem == NULL) {
    gst_memory_unref (bmem);
    gst_memory_unref (bmem);
    return NULL;
  }
  return burst_buffer (mem, bmem);
}
#endif
