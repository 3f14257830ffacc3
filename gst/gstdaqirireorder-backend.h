/* The reorder backends of daqirireorder: one interface through which the element
 * (gstdaqirireorder.c) drives the CPU twin of the kernels (gstdaqirireorder-cpu.c, memory=system)
 * and the GPU context (gstdaqirireorder-gpu.c, memory=cuda, built with CUDA only).
 *
 * The contract is the GPU's, submit and poll (cuda/daqiri-reorder.h): a burst or a flush is
 * submitted, and its completion is polled later, in submission order. A backend may keep up to
 * max_inflight submissions running; the CPU twin keeps none: its submission is done when submit
 * returns, and the next poll returns its completion (so max_inflight is 1 and nothing waits).
 * A completion's pointers stay valid until the next call on the backend.
 *
 * Frames: add_frame hands the backend one more free frame (a FIFO); a backend whose free-frame
 * queue is bounded says so in max_frames (0: no bound). Each submitted burst states how many
 * frames it may take (`frames`); in_flight tells the bursts submitted and not yet polled, and the
 * frames they may still take, so that the element keeps the free-frame queue stocked.
 *
 * Everything is called under the stream lock, with the device context entered (enter/leave)
 * where the backend has one. The class's element hooks (open .. copy_to_host) need no backend
 * instance: the element calls those of the GPU class, if this build has one, for the pipeline's
 * CUDA context and for GPU memory met on the way in. */
#ifndef GST_DAQIRI_REORDER_BACKEND_H
#define GST_DAQIRI_REORDER_BACKEND_H

#include "gstdaqirireorder-priv.h"

G_BEGIN_DECLS

/* The base of every backend instance (its first member). */
struct _ReorderBackend {
  const ReorderBackendClass *klass;
  GstDaqiriReorder *element;
  guint max_inflight;  /* submissions that may run at once (1: each awaited) */
  guint max_frames;    /* frames the free-frame queue holds; 0: no bound */
  guint64 submissions; /* of bursts, one or grouped, so far (stats submissions) */
};

struct _ReorderBackendClass {
  const gchar *name; /* "CPU", "GPU": in error messages */

  /* ---- set-up, before the backend exists (all optional) ---- */
  /* After the caps are made: the output this backend needs (GstCudaMemory video or frames);
   * n_frames: the frames the element's pool holds. FALSE with an error posted. */
  gboolean (*prepare) (GstDaqiriReorder *self, guint64 frame_size, guint n_frames);
  /* The config of the element's pool of frames, before it is set (the allocator). */
  void (*configure_pool) (GstDaqiriReorder *self, GstStructure *config);
  /* Makes the backend's device context current on this thread, and undoes it. */
  void (*enter) (GstDaqiriReorder *self);
  void (*leave) (GstDaqiriReorder *self);

  /* ---- the backend ---- */
  /* A backend for self->run_cfg (self->run_inflight); NULL with an error posted. */
  ReorderBackend *(*create) (GstDaqiriReorder *self);
  /* Waits for work in flight, then frees everything, the bursts it still holds included. */
  void (*destroy) (ReorderBackend *be);
  /* One more free frame (mapped as the backend reads it). 0, or -1. */
  int (*add_frame) (ReorderBackend *be, void *frame, void *user);
  /* One burst: its buffer, mapped (`map`, with GST_DAQIRI_MAP_CUDA when on_gpu), and its n
   * descriptors (pkts), every packet taking the time `timestamp`; words: NULL, or pkts'
   * offsets and lengths as stride words (strides of 1 << word_shift bytes) where the source put
   * them (GstDaqiriPacketMeta._words). The backend takes the buffer and the map in every case,
   * and lets them go once it has read them. `frames`: the frames it may take. 0, or -1
   * (logged). */
  int (*submit) (ReorderBackend *be, GstBuffer *buf, GstMapInfo *map, gboolean on_gpu,
      const DqReorderPacket *pkts, const guint32 *words, guint word_shift, guint n,
      guint64 timestamp, guint frames);
  /* TRUE: submit reads pkts as the source gave them, their timestamps aside (they may lie in
   * the buffer's meta, held with the buffer); FALSE: pkts carry `timestamp` already */
  gboolean stamps;
  /* A flush, as a submission of its own. 0, or -1 (logged). */
  int (*flush) (ReorderBackend *be, DqFlushMode mode);
  /* The completion of the oldest submission: 1, 0 none ready yet (wait FALSE), -1 failed
   * (logged; error () says why). */
  int (*poll) (ReorderBackend *be, gboolean wait, DqReorderCompletion *c);
  /* Submissions not yet polled, and (if frames) the frames their bursts may still take. */
  guint (*in_flight) (ReorderBackend *be, guint *frames);
  const gchar *(*error) (ReorderBackend *be);
  /* A frame from the element's pool before it is handed over (optional). */
  void (*frame_acquired) (ReorderBackend *be, GstBuffer *frame);
  /* The buffer pushed for an emitted frame (optional: the frame itself); NULL with an error
   * posted (the frame released). */
  GstBuffer *(*finish_frame) (ReorderBackend *be, GstBuffer *frame);

  /* ---- element hooks (optional) ---- */
  /* NULL -> READY, and GstElement::set_context: the pipeline's CUDA context. */
  void (*open) (GstDaqiriReorder *self);
  void (*set_context) (GstDaqiriReorder *self, GstContext *context);
  /* A query answered (the pipeline's CUDA context): TRUE. */
  gboolean (*query) (GstDaqiriReorder *self, GstQuery *query);
  /* Whether a burst's memory is GPU memory, read in place (besides daqiri's own). */
  gboolean (*is_device_memory) (GstMemory *mem);
  /* Copies `size` bytes of GPU memory to the host. FALSE with *why. */
  gboolean (*copy_to_host) (void *dst, const void *src, gsize size, const gchar **why);
};

extern const ReorderBackendClass reorder_backend_cpu;
#ifdef DQ_HAVE_CUDA
extern const ReorderBackendClass reorder_backend_gpu;
#endif

/* The backend of `memory`: the one place that knows which are built in. NULL: memory=cuda in a
 * build without CUDA. */
static inline const ReorderBackendClass *
reorder_backend_lookup (GstDaqiriMemory memory)
{
  if (memory != GST_DAQIRI_MEMORY_CUDA)
    return &reorder_backend_cpu;
#ifdef DQ_HAVE_CUDA
  return &reorder_backend_gpu;
#else
  return NULL;
#endif
}

G_END_DECLS

#endif
