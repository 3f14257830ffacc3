/* The buffer pool over a TX ring's slots (see gstdaqiritxpool.h). */
#include "gstdaqiritxpool.h"
#include "gstdaqirielement.h"

#include <gst/daqiri/daqiripacketmeta.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (daqiritxpool_debug);
#define GST_CAT_DEFAULT daqiritxpool_debug

/* the engine waits for ring space in slices this long, so that the ring lock is not
 * held longer (a flush, a close or a wakeup ends a slice at once) */
#define LEND_SLICE_NS (1 * GST_MSECOND)
#define COND_SLICE_US (100 * G_TIME_SPAN_MILLISECOND)

static void
ensure_debug (void)
{
  static gsize done;
  if (g_once_init_enter (&done)) {
    GST_DEBUG_CATEGORY_INIT (daqiritxpool_debug, "daqiritxpool", 0, "daqiri TX slot pool");
    g_once_init_leave (&done, 1);
  }
}

/* ---------------------------------------------------------------------------------- */
/* the ring */

typedef struct _GstDaqiriTxSlotMemory GstDaqiriTxSlotMemory;

typedef enum {
  SLOTS_LENT,     /* the producer writes them */
  SLOTS_SENT,     /* committed: the NIC's, then free for reuse once the
                                 * memory is gone */
  SLOTS_RETURNED, /* cancelled */
} SlotState;

struct _GstDaqiriTxSlotMemory {
  GstMemory mem;
  GstDaqiriTxRing *ring;
  DqTxSlots run;
  SlotState state;
  guint sent_slots; /* the slots that held frames (the first ones) */
  GList link;       /* in ring->sent while SLOTS_SENT with sent_slots > 0 */
};

struct _GstDaqiriTxRing {
  gint refcount;
  DqTxQueue *txq;
  guint stride;
  guint slot_size;
  guint max_run;

  GMutex lock; /* every txq call but wakeup and stats; the state below */
  GCond cond;  /* a run came back, a sent memory went, closed, flushing */
  gboolean closed;
  gboolean lent; /* a run is out */
  GQueue sent;   /* GstDaqiriTxSlotMemory: sent, memory still alive; their
                                 * frames' slots are not lent again until they go */
};

GstDaqiriTxRing *
gst_daqiri_tx_ring_new (DqTxQueue *txq, GError **error)
{
  DqTxSlots probe;

  ensure_debug ();
  if (!dq_txq_can_acquire (txq)) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "the engine copies every frame; it "
        "has no slots to write in place");
    return NULL;
  }
  /* a fresh queue has every slot free: the largest run tells the geometry */
  if (dq_txq_acquire (txq, G_MAXUINT, 0, &probe, 0, error) != 1) {
    if (error != NULL && *error == NULL)
      g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "a new TX queue lent no slots");
    return NULL;
  }
  GstDaqiriTxRing *ring = g_new0 (GstDaqiriTxRing, 1);
  ring->refcount = 1;
  ring->txq = txq;
  ring->stride = probe.stride;
  ring->slot_size = probe.slot_size;
  ring->max_run = probe.n_slots;
  dq_txq_cancel (txq, &probe);
  g_mutex_init (&ring->lock);
  g_cond_init (&ring->cond);
  g_queue_init (&ring->sent);
  GST_DEBUG ("TX ring %p: runs of up to %u slots of %u bytes (stride %u)", ring, ring->max_run,
      ring->slot_size, ring->stride);
  return ring;
}

GstDaqiriTxRing *
gst_daqiri_tx_ring_ref (GstDaqiriTxRing *ring)
{
  g_atomic_int_inc (&ring->refcount);
  return ring;
}

void
gst_daqiri_tx_ring_unref (GstDaqiriTxRing *ring)
{
  if (ring == NULL || !g_atomic_int_dec_and_test (&ring->refcount))
    return;
  /* every memory holds a reference: nothing is lent or alive any more */
  g_warn_if_fail (!ring->lent && g_queue_is_empty (&ring->sent));
  dq_txq_destroy (ring->txq);
  g_mutex_clear (&ring->lock);
  g_cond_clear (&ring->cond);
  g_free (ring);
}

void
gst_daqiri_tx_ring_close (GstDaqiriTxRing *ring)
{
  dq_txq_wakeup (ring->txq);
  g_mutex_lock (&ring->lock);
  ring->closed = TRUE;
  g_cond_broadcast (&ring->cond);
  g_mutex_unlock (&ring->lock);
}

/* ends the engine's wait, then the waits on the condition */
static void
ring_wake_all (GstDaqiriTxRing *ring)
{
  dq_txq_wakeup (ring->txq);
  g_mutex_lock (&ring->lock);
  g_cond_broadcast (&ring->cond);
  g_mutex_unlock (&ring->lock);
}

void
gst_daqiri_tx_ring_wakeup (GstDaqiriTxRing *ring)
{
  dq_txq_wakeup (ring->txq);
}

gboolean
gst_daqiri_tx_ring_flush (GstDaqiriTxRing *ring, GError **error)
{
  g_mutex_lock (&ring->lock);
  gboolean ok = dq_txq_flush (ring->txq, error);
  g_mutex_unlock (&ring->lock);
  return ok;
}

void
gst_daqiri_tx_ring_stats (GstDaqiriTxRing *ring, DqTxStats *stats)
{
  dq_txq_stats (ring->txq, stats);
}

guint
gst_daqiri_tx_ring_stride (GstDaqiriTxRing *ring)
{
  return ring->stride;
}

guint
gst_daqiri_tx_ring_slot_size (GstDaqiriTxRing *ring)
{
  return ring->slot_size;
}

guint
gst_daqiri_tx_ring_max_run (GstDaqiriTxRing *ring)
{
  return ring->max_run;
}

/* ring lock held: does the run share a slot with the frames of a sent memory that is
 * still alive? (The slots a sent run left unused carry nothing anyone reads: they are
 * lent again at once, so a producer that fills runs partly while downstream keeps its
 * last buffer does not wait.) */
static gboolean
run_overlaps_sent (GstDaqiriTxRing *ring, const DqTxSlots *run)
{
  const guint8 *start = run->data;
  const guint8 *end = run->data + (gsize) run->n_slots * run->stride;

  for (GList *l = ring->sent.head; l != NULL; l = l->next) {
    const GstDaqiriTxSlotMemory *m = l->data;
    const guint8 *ms = m->run.data;
    const guint8 *me = m->run.data + (gsize) m->sent_slots * m->run.stride;
    if (start < me && ms < end)
      return TRUE;
  }
  return FALSE;
}

typedef enum {
  LEND_OK,
  LEND_FLUSHING,   /* the ring closed or *flushing became set */
  LEND_WOULD_WAIT, /* dontwait, and no run could be lent at once */
  LEND_ERROR,
} LendResult;

/* Lends a run: one at a time, never over a sent memory that is still alive. */
static LendResult
ring_lend (GstDaqiriTxRing *ring, guint max_frames, guint frame_size, const gint *flushing,
    gboolean dontwait, DqTxSlots *run, GError **error)
{
  LendResult res = LEND_OK;

  g_mutex_lock (&ring->lock);
  for (;;) {
    if (ring->closed || g_atomic_int_get (flushing)) {
      res = LEND_FLUSHING;
      break;
    }
    if (ring->lent) {
      if (dontwait) {
        res = LEND_WOULD_WAIT;
        break;
      }
      g_cond_wait_until (&ring->cond, &ring->lock, g_get_monotonic_time () + COND_SLICE_US);
      continue;
    }
    int r = dq_txq_acquire (
        ring->txq, max_frames, frame_size, run, dontwait ? 0 : LEND_SLICE_NS, error);
    if (r < 0) {
      res = LEND_ERROR;
      break;
    }
    if (r == 0) {
      if (dontwait) {
        res = LEND_WOULD_WAIT;
        break;
      }
      continue;
    }
    ring->lent = TRUE;
    /* someone still reads a sent buffer over these slots: wait until it is gone */
    while (res == LEND_OK && run_overlaps_sent (ring, run)) {
      if (ring->closed || g_atomic_int_get (flushing))
        res = LEND_FLUSHING;
      else if (dontwait)
        res = LEND_WOULD_WAIT;
      else
        g_cond_wait_until (&ring->cond, &ring->lock, g_get_monotonic_time () + COND_SLICE_US);
    }
    if (res != LEND_OK) {
      dq_txq_cancel (ring->txq, run);
      ring->lent = FALSE;
      g_cond_broadcast (&ring->cond);
    }
    break;
  }
  g_mutex_unlock (&ring->lock);
  return res;
}

/* ---------------------------------------------------------------------------------- */
/* the memory of a lent run */

#define GST_TYPE_DAQIRI_TX_SLOT_ALLOCATOR (gst_daqiri_tx_slot_allocator_get_type ())
G_DECLARE_FINAL_TYPE (GstDaqiriTxSlotAllocator, gst_daqiri_tx_slot_allocator, GST,
    DAQIRI_TX_SLOT_ALLOCATOR, GstAllocator);

struct _GstDaqiriTxSlotAllocator {
  GstAllocator parent;
};

G_DEFINE_TYPE (GstDaqiriTxSlotAllocator, gst_daqiri_tx_slot_allocator, GST_TYPE_ALLOCATOR);

#define TX_SLOT_MEMORY_TYPE "DaqiriTxSlots"

static GstMemory *
slot_alloc (GstAllocator *allocator, gsize size, GstAllocationParams *params)
{
  /* runs come from the ring, never from gst_allocator_alloc() */
  return NULL;
}

static void
slot_free (GstAllocator *allocator, GstMemory *mem)
{
  GstDaqiriTxSlotMemory *smem = (GstDaqiriTxSlotMemory *) mem;
  GstDaqiriTxRing *ring = smem->ring;

  g_mutex_lock (&ring->lock);
  if (smem->state == SLOTS_LENT) {
    dq_txq_cancel (ring->txq, &smem->run);
    ring->lent = FALSE;
  } else if (smem->state == SLOTS_SENT && smem->sent_slots > 0) {
    g_queue_unlink (&ring->sent, &smem->link);
  }
  g_cond_broadcast (&ring->cond);
  g_mutex_unlock (&ring->lock);
  gst_daqiri_tx_ring_unref (ring);
  g_free (smem);
}

static gpointer
slot_map (GstMemory *mem, gsize maxsize, GstMapFlags flags)
{
  return ((GstDaqiriTxSlotMemory *) mem)->run.data;
}

static void
slot_unmap (GstMemory *mem)
{}

static GstMemory *
slot_copy (GstMemory *mem, gssize offset, gssize size)
{
  GstDaqiriTxSlotMemory *smem = (GstDaqiriTxSlotMemory *) mem;
  if (size == -1)
    size = (gssize) mem->size - offset;
  /* a plain system-memory copy */
  guint8 *data = g_memdup2 (smem->run.data + mem->offset + offset, (gsize) size);
  return gst_memory_new_wrapped (0, data, (gsize) size, 0, (gsize) size, data, g_free);
}

static GstMemory *
slot_share (GstMemory *mem, gssize offset, gssize size)
{
  /* NO_SHARE: never called; a view must not outlive the run */
  return NULL;
}

static void
gst_daqiri_tx_slot_allocator_class_init (GstDaqiriTxSlotAllocatorClass *klass)
{
  GST_ALLOCATOR_CLASS (klass)->alloc = slot_alloc;
  GST_ALLOCATOR_CLASS (klass)->free = slot_free;
}

static void
gst_daqiri_tx_slot_allocator_init (GstDaqiriTxSlotAllocator *self)
{
  GstAllocator *alloc = GST_ALLOCATOR (self);

  alloc->mem_type = TX_SLOT_MEMORY_TYPE;
  alloc->mem_map = slot_map;
  alloc->mem_unmap = slot_unmap;
  alloc->mem_copy = slot_copy;
  alloc->mem_share = slot_share;
  GST_OBJECT_FLAG_SET (self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

static GstAllocator *
slot_allocator_get (void)
{
  static GstAllocator *allocator;

  if (g_once_init_enter (&allocator))
    g_once_init_leave (
        &allocator, gst_daqiri_allocator_new_kept (GST_TYPE_DAQIRI_TX_SLOT_ALLOCATOR));
  return allocator;
}

gboolean
gst_is_daqiri_tx_slot_memory (GstMemory *mem)
{
  return mem != NULL && mem->allocator != NULL &&
      g_type_is_a (G_OBJECT_TYPE (mem->allocator), GST_TYPE_DAQIRI_TX_SLOT_ALLOCATOR);
}

GstDaqiriTxRing *
gst_daqiri_tx_slot_memory_ring (GstMemory *mem)
{
  return ((GstDaqiriTxSlotMemory *) mem)->ring;
}

const DqTxSlots *
gst_daqiri_tx_slot_memory_run (GstMemory *mem)
{
  return &((GstDaqiriTxSlotMemory *) mem)->run;
}

static GstMemory *
slot_memory_new (GstDaqiriTxRing *ring, const DqTxSlots *run)
{
  GstDaqiriTxSlotMemory *smem = g_new0 (GstDaqiriTxSlotMemory, 1);
  gsize size = (gsize) (run->n_slots - 1) * run->stride + run->slot_size;

  /* NO_SHARE: a sub-buffer or buffer copy gets a copy of the bytes, so no other view of
   * the slots exists than this memory, whose life the ring follows */
  gst_memory_init (GST_MEMORY_CAST (smem), GST_MEMORY_FLAG_NO_SHARE, slot_allocator_get (), NULL,
      size, 0, 0, size);
  smem->ring = gst_daqiri_tx_ring_ref (ring);
  smem->run = *run;
  smem->state = SLOTS_LENT;
  smem->link.data = smem;
  return GST_MEMORY_CAST (smem);
}

int
gst_daqiri_tx_slot_memory_commit (
    GstMemory *mem, guint n, const guint32 *lengths, const guint64 *times, GError **error)
{
  GstDaqiriTxSlotMemory *smem = (GstDaqiriTxSlotMemory *) mem;
  GstDaqiriTxRing *ring = smem->ring;
  int r = 0;

  g_mutex_lock (&ring->lock);
  if (smem->state == SLOTS_LENT) {
    r = dq_txq_commit_at (ring->txq, &smem->run, n, lengths, times, error);
    if (r >= 0) {
      smem->state = SLOTS_SENT;
      smem->sent_slots = n;
      if (n > 0)
        g_queue_push_tail_link (&ring->sent, &smem->link);
      ring->lent = FALSE;
      g_cond_broadcast (&ring->cond);
      r = 1;
    }
  }
  g_mutex_unlock (&ring->lock);
  return r;
}

/* ---------------------------------------------------------------------------------- */
/* the pool */

#define CONFIG_MAX_PACKETS "daqiri-max-packets"
#define CONFIG_MAX_FRAME "daqiri-max-frame-size"

struct _GstDaqiriTxPool {
  GstBufferPool parent;
  GstDaqiriTxRing *ring;
  guint max_packets;
  guint max_frame;
  gint flushing;
};

G_DEFINE_TYPE (GstDaqiriTxPool, gst_daqiri_tx_pool, GST_TYPE_BUFFER_POOL);

void
gst_daqiri_tx_pool_config_set_burst (GstStructure *config, guint max_packets, guint max_frame_size)
{
  gst_structure_set (config, CONFIG_MAX_PACKETS, G_TYPE_UINT, max_packets, CONFIG_MAX_FRAME,
      G_TYPE_UINT, max_frame_size, NULL);
}

gboolean
gst_daqiri_tx_pool_config_get_burst (
    const GstStructure *config, guint *max_packets, guint *max_frame_size)
{
  return gst_structure_get (config, CONFIG_MAX_PACKETS, G_TYPE_UINT, max_packets, CONFIG_MAX_FRAME,
      G_TYPE_UINT, max_frame_size, NULL);
}

static const gchar **
tx_pool_get_options (GstBufferPool *bpool)
{
  static const gchar *options[] = { GST_BUFFER_POOL_OPTION_DAQIRI_TX_SLOTS, NULL };
  return options;
}

static gboolean
tx_pool_set_config (GstBufferPool *bpool, GstStructure *config)
{
  GstDaqiriTxPool *self = GST_DAQIRI_TX_POOL (bpool);
  GstCaps *caps;
  guint size, min, max;
  guint packets = self->ring->max_run, frame = 0;

  if (!gst_buffer_pool_config_get_params (config, &caps, &size, &min, &max))
    return FALSE;
  gst_daqiri_tx_pool_config_get_burst (config, &packets, &frame);
  if (packets == 0) {
    GST_WARNING_OBJECT (self, "a burst of 0 packets");
    return FALSE;
  }
  if (frame > self->ring->slot_size) {
    GST_INFO_OBJECT (
        self, "frames of %u bytes do not fit slots of %u bytes", frame, self->ring->slot_size);
    return FALSE;
  }
  self->max_packets = MIN (packets, self->ring->max_run);
  self->max_frame = frame;
  /* a buffer in the pool has no memory of its own: it gets a run when acquired */
  gst_buffer_pool_config_set_params (config, caps, 0, min, max);
  return GST_BUFFER_POOL_CLASS (gst_daqiri_tx_pool_parent_class)->set_config (bpool, config);
}

/* a shell: the descriptor array rides along with it, allocated once */
static GstFlowReturn
tx_pool_alloc_buffer (GstBufferPool *bpool, GstBuffer **buffer, GstBufferPoolAcquireParams *params)
{
  GstDaqiriTxPool *self = GST_DAQIRI_TX_POOL (bpool);
  GstBuffer *buf = gst_buffer_new ();
  GstDaqiriPacket *packets = g_new0 (GstDaqiriPacket, self->max_packets);
  GstDaqiriPacketMeta *meta =
      gst_buffer_add_daqiri_packet_meta_full (buf, packets, 0, g_free, packets);
  GST_META_FLAG_SET (meta, GST_META_FLAG_POOLED);
  *buffer = buf;
  return GST_FLOW_OK;
}

static GstFlowReturn
tx_pool_acquire_buffer (
    GstBufferPool *bpool, GstBuffer **buffer, GstBufferPoolAcquireParams *params)
{
  GstDaqiriTxPool *self = GST_DAQIRI_TX_POOL (bpool);
  GstBufferPoolClass *parent = GST_BUFFER_POOL_CLASS (gst_daqiri_tx_pool_parent_class);
  GError *error = NULL;
  DqTxSlots run;
  GstBuffer *buf = NULL;

  GstFlowReturn ret = parent->acquire_buffer (bpool, &buf, params);
  if (ret != GST_FLOW_OK)
    return ret;
  gboolean dontwait =
      params != NULL && (params->flags & GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT) != 0;
  switch (ring_lend (
      self->ring, self->max_packets, self->max_frame, &self->flushing, dontwait, &run, &error)) {
    case LEND_OK: break;
    case LEND_FLUSHING: ret = GST_FLOW_FLUSHING; break;
    case LEND_WOULD_WAIT:
      /* what a pool says when DONTWAIT finds nothing */
      ret = GST_FLOW_EOS;
      break;
    case LEND_ERROR:
      GST_ERROR_OBJECT (self, "no TX slots: %s", error->message);
      g_error_free (error);
      ret = GST_FLOW_ERROR;
      break;
  }
  if (ret != GST_FLOW_OK) {
    parent->release_buffer (bpool, buf);
    return ret;
  }

  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
  for (guint i = 0; i < run.n_slots; i++) {
    meta->packets[i].offset = i * run.stride;
    meta->packets[i].length = run.slot_size;
    meta->packets[i].flow_id = 0;
    meta->packets[i].flags = 0;
    meta->packets[i].timestamp = 0;
  }
  meta->n_packets = run.n_slots;
  gst_buffer_append_memory (buf, slot_memory_new (self->ring, &run));
  /* the memory changes with every acquisition by design: not a sign of tampering */
  GST_BUFFER_FLAG_UNSET (buf, GST_BUFFER_FLAG_TAG_MEMORY);
  *buffer = buf;
  return GST_FLOW_OK;
}

/* Back to a shell: the run goes (sent already, or given back when the memory is freed),
 * the descriptors are cleared, metas others added are removed. */
static gboolean
remove_unpooled_meta (GstBuffer *buffer, GstMeta **meta, gpointer user_data)
{
  if (!GST_META_FLAG_IS_SET (*meta, GST_META_FLAG_POOLED) &&
      !GST_META_FLAG_IS_SET (*meta, GST_META_FLAG_LOCKED))
    *meta = NULL;
  return TRUE;
}

static void
tx_pool_reset_buffer (GstBufferPool *bpool, GstBuffer *buffer)
{
  gst_buffer_remove_all_memory (buffer);
  GST_BUFFER_FLAGS (buffer) = 0;
  GST_BUFFER_PTS (buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DTS (buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DURATION (buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_OFFSET (buffer) = GST_BUFFER_OFFSET_NONE;
  GST_BUFFER_OFFSET_END (buffer) = GST_BUFFER_OFFSET_NONE;
  gst_buffer_foreach_meta (buffer, remove_unpooled_meta, NULL);
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buffer);
  if (meta != NULL)
    meta->n_packets = 0;
}

static void
tx_pool_flush_start (GstBufferPool *bpool)
{
  GstDaqiriTxPool *self = GST_DAQIRI_TX_POOL (bpool);
  g_atomic_int_set (&self->flushing, 1);
  ring_wake_all (self->ring);
}

static void
tx_pool_flush_stop (GstBufferPool *bpool)
{
  g_atomic_int_set (&GST_DAQIRI_TX_POOL (bpool)->flushing, 0);
}

static void
gst_daqiri_tx_pool_finalize (GObject *object)
{
  GstDaqiriTxPool *self = GST_DAQIRI_TX_POOL (object);
  GstDaqiriTxRing *ring = self->ring;

  G_OBJECT_CLASS (gst_daqiri_tx_pool_parent_class)->finalize (object);
  /* the parent freed the shells first */
  gst_daqiri_tx_ring_unref (ring);
}

static void
gst_daqiri_tx_pool_class_init (GstDaqiriTxPoolClass *klass)
{
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS (klass);

  G_OBJECT_CLASS (klass)->finalize = gst_daqiri_tx_pool_finalize;
  pool_class->get_options = tx_pool_get_options;
  pool_class->set_config = tx_pool_set_config;
  pool_class->alloc_buffer = tx_pool_alloc_buffer;
  pool_class->acquire_buffer = tx_pool_acquire_buffer;
  pool_class->reset_buffer = tx_pool_reset_buffer;
  pool_class->flush_start = tx_pool_flush_start;
  pool_class->flush_stop = tx_pool_flush_stop;
}

static void
gst_daqiri_tx_pool_init (GstDaqiriTxPool *self)
{}

GstBufferPool *
gst_daqiri_tx_pool_new (GstDaqiriTxRing *ring)
{
  ensure_debug ();
  GstDaqiriTxPool *self = g_object_new (GST_TYPE_DAQIRI_TX_POOL, NULL);
  gst_object_ref_sink (self);
  self->ring = gst_daqiri_tx_ring_ref (ring);
  self->max_packets = ring->max_run;
  return GST_BUFFER_POOL_CAST (self);
}
