/* daqirireorder's GPU backend (memory=cuda, builds with CUDA only): the GPU context of
 * cuda/daqiri-reorder.h (DqReorderGpu) behind gstdaqirireorder-backend.h, the bursts in flight
 * on it, and the element's GstCuda interop (the pipeline's CUDA context, GstCudaMemory frames).
 *
 * Bursts in flight. A burst is submitted and stays mapped (or copied into its pinned staging)
 * until its completion is polled; up to max_inflight submissions run on the GPU while the
 * element takes the next bursts from upstream. Completions come back in submission order: a
 * poll that returns a submission's completion lets its bursts go.
 *
 * Grouped submissions (submit-packets). A burst of daqirisrc memory=cuda (stride words, in GPU
 * memory) that comes while earlier submissions still run on the GPU is held, not launched: the
 * next such bursts join it, as runs of one submission (dq_reorder_gpu_submit_word_runs), until
 * it holds submit-packets packets, a burst cannot join (another stride, not after the first
 * burst in the ring, too far from it), or the GPU has nothing else left to run (a poll finds
 * the group the oldest in flight). The group is the newest entry in flight, counted as one;
 * every burst keeps its own timestamp. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqirireorder-backend.h"
#include "gstdaqiricudamem.h"
#include "gstdaqirigstcuda.h"

#include <string.h>

#define GST_CAT_DEFAULT daqirireorder_debug

/* the capacity of the GPU context's free-frame queue */
#define REORDER_GPU_FRAMES 512

/* A submission to the GPU not yet polled: its bursts held, mapped, until its kernels are done. */
typedef struct {
  GstBuffer *bufs[DQ_REORDER_MAX_RUNS]; /* the bursts (none: read from staging) */
  GstMapInfo maps[DQ_REORDER_MAX_RUNS];
  guint n_bufs;
  guint8 *staging; /* pinned, device-mapped copy of a system-memory burst */
  gsize staging_size;
  guint frames; /* frames it may take: for each burst the batches it spans, plus one */
} InFlight;

/* The group being gathered (the newest entry in flight, not launched yet). */
typedef struct {
  gboolean open;
  DqReorderWordRun runs[DQ_REORDER_MAX_RUNS]; /* one a burst, offsets from base */
  const guint8 *base;                         /* the first burst's data (device address) */
  gsize span;                                 /* from base to the end of the furthest burst */
  guint shift, n;
} Group;

typedef struct {
  ReorderBackend base;
  DqReorderGpu *gpu;
  /* submissions in flight, oldest first: inflight[(if_first + k) % MAX], k < if_count */
  InFlight inflight[REORDER_MAX_INFLIGHT];
  guint if_first, if_count, if_frames;
  Group group;
  guint submit_packets; /* a group's packets at most (0: no groups) */
} ReorderGpu;

#define GPU(be) ((ReorderGpu *) (be))

/* ---- the pipeline's CUDA context ---- */

/* Whether the frames go out as GstCudaMemory (video, or generic frames), so that the element's
 * CUDA work runs in the pipeline's context. */
static gboolean
in_context (GstDaqiriReorder *self)
{
  return self->out_gstcuda || self->gstcuda_frames;
}

static void
gpu_enter (GstDaqiriReorder *self)
{
  if (in_context (self))
    gst_daqiri_gstcuda_push (self->cuda_context);
}

static void
gpu_leave (GstDaqiriReorder *self)
{
  if (in_context (self))
    gst_daqiri_gstcuda_pop ();
}

/* GstCudaMemory video: the pipeline's CUDA context before any neighbour starts, so that the
 * one made here (over the primary context) is the one they share. */
static void
gpu_open (GstDaqiriReorder *self)
{
  GST_OBJECT_LOCK (self);
  gboolean cuda_video =
      self->memory == GST_DAQIRI_MEMORY_CUDA && self->video_format != GST_VIDEO_FORMAT_UNKNOWN;
  GST_OBJECT_UNLOCK (self);
  if (cuda_video && gst_daqiri_gstcuda_load (NULL)) {
    GstObject *ctx = reorder_cuda_context_ensure (self);
    if (ctx)
      gst_object_unref (ctx);
  }
}

static void
gpu_set_context (GstDaqiriReorder *self, GstContext *context)
{
  gst_daqiri_gstcuda_set_context (GST_ELEMENT (self), context, &self->cuda_context);
}

static gboolean
gpu_query (GstDaqiriReorder *self, GstQuery *query)
{
  return gst_daqiri_gstcuda_context_query (GST_ELEMENT (self), query, &self->cuda_context);
}

/* GstCudaMemory bursts (daqirisrc memory=cuda with GStreamer >= 1.24) are read in place too. */
static gboolean
gpu_is_device_memory (GstMemory *mem)
{
  return gst_daqiri_gstcuda_is_cuda_memory (mem);
}

static gboolean
gpu_copy_to_host (void *dst, const void *src, gsize size, const gchar **why)
{
  if (dq_cuda_memcpy (dst, src, size) == 0)
    return TRUE;
  *why = dq_cuda_last_error ();
  return FALSE;
}

/* ---- the output: GstCudaMemory video or frames ---- */

static gboolean
gpu_prepare (GstDaqiriReorder *self, guint64 frame_size, guint n_frames)
{
  if (self->video)
    return reorder_cuda_video_setup (self);
  return reorder_cuda_frames_setup (self, frame_size, n_frames);
}

/* The element's frames: daqiri's GPU memory. */
static void
gpu_configure_pool (GstDaqiriReorder *self, GstStructure *config)
{
  GstAllocator *cuda = gst_daqiri_cuda_allocator_get ();
  gst_buffer_pool_config_set_allocator (config, cuda, NULL);
  gst_object_unref (cuda);
}

static void
gpu_frame_acquired (ReorderBackend *be, GstBuffer *frame)
{
  GstDaqiriReorder *self = be->element;
  if (self->gstcuda_frames && !self->gstcuda_wrap)
    reorder_gstcuda_staging_whole (gst_buffer_peek_memory (frame, 0));
}

static GstBuffer *
gpu_finish_frame (ReorderBackend *be, GstBuffer *frame)
{
  GstDaqiriReorder *self = be->element;
  if (self->gstcuda_wrap)
    return reorder_wrap_gstcuda (self, frame);
  if (self->gstcuda_frames) /* the pool's row may be longer than the frame */
    gst_buffer_resize (frame, 0, (gssize) dq_reorder_frame_size (&self->run_cfg));
  return frame;
}

/* ---- the GPU context and its bursts in flight ---- */

static void
inflight_release (ReorderGpu *g, InFlight *f)
{
  for (guint k = 0; k < f->n_bufs; k++) {
    gst_buffer_unmap (f->bufs[k], &f->maps[k]);
    gst_clear_buffer (&f->bufs[k]);
  }
  f->n_bufs = 0;
  g->if_frames -= f->frames;
  f->frames = 0;
}

static InFlight *
inflight_newest (ReorderGpu *g)
{
  return &g->inflight[(g->if_first + g->if_count - 1) % REORDER_MAX_INFLIGHT];
}

/* One more entry in flight, holding `frames` (its bursts are added to it). */
static InFlight *
inflight_push (ReorderGpu *g, guint frames)
{
  g->if_count++;
  InFlight *f = inflight_newest (g);
  f->frames = frames;
  g->if_frames += frames;
  return f;
}

static void
inflight_hold (InFlight *f, GstBuffer *buf, const GstMapInfo *map)
{
  f->bufs[f->n_bufs] = buf;
  f->maps[f->n_bufs++] = *map;
}

/* The submission of a single burst, or the group's runs, failed: its bursts let go. */
static int
inflight_failed (ReorderGpu *g)
{
  GST_ERROR_OBJECT (g->base.element, "GPU reorder failed: %s", dq_reorder_gpu_error (g->gpu));
  inflight_release (g, inflight_newest (g));
  g->if_count--;
  return -1;
}

/* Whether a burst of stride words (strides of 1 << shift bytes) at data, n packets, can join
 * the group: after its first burst on the same strides, the words still indexing every stride
 * from it, the group under submit-packets and the runs a submission takes. */
static gboolean
group_takes (ReorderGpu *g, const GstMapInfo *map, guint shift, guint n)
{
  const Group *gr = &g->group;
  const guintptr at = (guintptr) map->data, base = (guintptr) gr->base;
  if (!gr->open || shift != gr->shift || gr->n + n > g->submit_packets ||
      inflight_newest (g)->n_bufs == DQ_REORDER_MAX_RUNS || at < base)
    return FALSE;
  return ((at - base) & ((1u << shift) - 1)) == 0 &&
      at - base + map->size <= (gsize) DQ_REORDER_WORD_INDEX_MASK << shift;
}

/* Launches the group (one burst: its words read where they lie). */
static int
group_launch (ReorderGpu *g)
{
  Group *gr = &g->group;
  InFlight *f = inflight_newest (g);
  gr->open = FALSE;
  const int rc = f->n_bufs == 1
      ? dq_reorder_gpu_submit_words (g->gpu, gr->base, gr->span, gr->runs[0].words, gr->shift,
            gr->runs[0].n, gr->runs[0].timestamp, f)
      : dq_reorder_gpu_submit_word_runs (
            g->gpu, gr->base, gr->span, gr->runs, f->n_bufs, gr->shift, f);
  if (rc != 0)
    return inflight_failed (g);
  g->base.submissions++;
  GST_LOG_OBJECT (g->base.element, "%u bursts of %u packets in all submitted, %u in flight",
      f->n_bufs, gr->n, g->if_count);
  return 0;
}

/* The burst joins the group, opened for it where none is; launched once it is full. */
static int
group_add (ReorderGpu *g, GstBuffer *buf, GstMapInfo *map, const guint32 *words, guint shift,
    guint n, guint64 timestamp, guint frames)
{
  Group *gr = &g->group;
  InFlight *f;
  if (!gr->open) {
    *gr = (Group){ .open = TRUE, .base = map->data, .shift = shift };
    f = inflight_push (g, frames);
  } else {
    f = inflight_newest (g);
    f->frames += frames;
    g->if_frames += frames;
  }
  const gsize offset = (gsize) (map->data - gr->base);
  gr->runs[f->n_bufs] = (DqReorderWordRun){ words, n, offset, timestamp };
  gr->span = MAX (gr->span, offset + map->size);
  gr->n += n;
  inflight_hold (f, buf, map);
  return gr->n >= g->submit_packets ? group_launch (g) : 0;
}

static ReorderBackend *
gpu_create (GstDaqiriReorder *self)
{
  char msg[256];
  DqReorderGpuOptions opts = { .max_packets = 65536,
    .max_inflight = self->run_inflight,
    .max_frames = REORDER_GPU_FRAMES,
    .device = -1 };
  DqReorderGpu *gpu = dq_reorder_gpu_new (&self->run_cfg, &opts, msg, sizeof msg);
  if (!gpu) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", msg), (NULL));
    return NULL;
  }
  ReorderGpu *g = g_new0 (ReorderGpu, 1);
  g->gpu = gpu;
  g->submit_packets = self->run_submit_packets;
  g->base.max_inflight = self->run_inflight;
  g->base.max_frames = REORDER_GPU_FRAMES;
  return &g->base;
}

static void
gpu_destroy (ReorderBackend *be)
{
  ReorderGpu *g = GPU (be);
  /* the context waits for its work in flight; the bursts it read go after it */
  g_clear_pointer (&g->gpu, dq_reorder_gpu_free);
  for (guint k = 0; k < REORDER_MAX_INFLIGHT; k++) {
    InFlight *f = &g->inflight[k];
    inflight_release (g, f);
    g_clear_pointer (&f->staging, dq_cuda_free_host);
    f->staging_size = 0;
  }
  g_free (g);
}

static int
gpu_add_frame (ReorderBackend *be, void *frame, void *user)
{
  return dq_reorder_gpu_add_frame (GPU (be)->gpu, frame, user);
}

/* One more burst in flight: a burst in GPU memory is held (mapped) until its completion is
 * polled, its descriptors read where daqirisrc put them in pinned memory (the stride words
 * beside them where it wrote those: a sixth of the records' bytes across the bus; such a burst
 * may join a group, above); a system-memory one is copied into pinned staging memory, which
 * the kernels read over the bus, and let go at once. */
static int
gpu_submit (ReorderBackend *be, GstBuffer *buf, GstMapInfo *map, gboolean on_gpu,
    const DqReorderPacket *pkts, const guint32 *words, guint word_shift, guint n, guint64 timestamp,
    guint frames)
{
  ReorderGpu *g = GPU (be);
  GstDaqiriReorder *self = be->element;
  /* descriptors the source put in pinned, mapped memory: read by the kernels where they lie
   * while the buffer is held (on_gpu); else staged by the library */
  const int readable = on_gpu && n > 0 && dq_cuda_host_mapped (pkts);
  /* the stride words lie in the records' own block (DqBurst.words): mapped with them */
  const gboolean runs = readable && words != NULL;
  if (g->group.open && !(runs && group_takes (g, map, word_shift, n)) && group_launch (g) != 0) {
    gst_buffer_unmap (buf, map);
    gst_buffer_unref (buf);
    return -1;
  }
  if (runs) {
    /* a group is gathered while earlier submissions run; else the burst goes at once */
    const gboolean hold = g->group.open || (n < g->submit_packets && g->if_count > 0);
    const int r = group_add (g, buf, map, words, word_shift, n, timestamp, frames);
    return r == 0 && !hold && g->group.open ? group_launch (g) : r;
  }
  InFlight *f = &g->inflight[(g->if_first + g->if_count) % REORDER_MAX_INFLIGHT];
  const guint8 *data = map->data;
  int r = -1;
  if (!on_gpu) {
    if (map->size > f->staging_size) {
      dq_cuda_free_host (f->staging);
      f->staging_size = MAX (map->size, 2 * f->staging_size);
      f->staging = dq_cuda_malloc_host (f->staging_size);
      if (f->staging == NULL) {
        f->staging_size = 0;
        GST_ERROR_OBJECT (self,
            "cannot allocate %" G_GSIZE_FORMAT " bytes of pinned memory: "
            "%s",
            map->size, dq_cuda_last_error ());
        goto done;
      }
    }
    if (map->size > 0)
      memcpy (f->staging, map->data, map->size);
    data = f->staging;
  }
  if (dq_reorder_gpu_submit_stamped (g->gpu, data, map->size, pkts, readable, n, timestamp, f)) {
    GST_ERROR_OBJECT (self, "GPU reorder failed: %s", dq_reorder_gpu_error (g->gpu));
    goto done;
  }
  r = 0;
  inflight_push (g, frames);
  be->submissions++;
  GST_LOG_OBJECT (self, "burst of %u packets submitted, %u in flight", n, g->if_count);
  if (on_gpu) {
    inflight_hold (f, buf, map);
    return 0;
  }
done:
  gst_buffer_unmap (buf, map);
  gst_buffer_unref (buf);
  return r;
}

static int
gpu_flush (ReorderBackend *be, DqFlushMode mode)
{
  ReorderGpu *g = GPU (be);
  if (g->group.open && group_launch (g) != 0)
    return -1;
  if (dq_reorder_gpu_flush (g->gpu, mode, NULL) != 0) {
    GST_ERROR_OBJECT (be->element, "GPU reorder failed: %s", dq_reorder_gpu_error (g->gpu));
    return -1;
  }
  return 0;
}

/* The completion of the oldest submission; its bursts are let go. A group that is the oldest
 * entry in flight (the GPU has nothing else to run) is launched first. */
static int
gpu_poll (ReorderBackend *be, gboolean wait, DqReorderCompletion *c)
{
  ReorderGpu *g = GPU (be);
  if (g->group.open && g->if_count == 1) {
    if (group_launch (g) != 0)
      return -1;
    if (!wait)
      return 0;
  }
  int r = dq_reorder_gpu_poll (g->gpu, wait, c);
  if (r < 0)
    GST_ERROR_OBJECT (be->element, "GPU reorder failed: %s", dq_reorder_gpu_error (g->gpu));
  if (r != 1 || c->user == NULL)
    return r;
  InFlight *f = &g->inflight[g->if_first];
  g_assert (c->user == f);
  inflight_release (g, f);
  g->if_first = (g->if_first + 1) % REORDER_MAX_INFLIGHT;
  g->if_count--;
  return 1;
}

static guint
gpu_in_flight (ReorderBackend *be, guint *frames)
{
  if (frames)
    *frames = GPU (be)->if_frames;
  return GPU (be)->if_count;
}

static const gchar *
gpu_error (ReorderBackend *be)
{
  return dq_reorder_gpu_error (GPU (be)->gpu);
}

const ReorderBackendClass reorder_backend_gpu = {
  .name = "GPU",
  .stamps = TRUE,
  .prepare = gpu_prepare,
  .configure_pool = gpu_configure_pool,
  .enter = gpu_enter,
  .leave = gpu_leave,
  .create = gpu_create,
  .destroy = gpu_destroy,
  .add_frame = gpu_add_frame,
  .submit = gpu_submit,
  .flush = gpu_flush,
  .poll = gpu_poll,
  .in_flight = gpu_in_flight,
  .error = gpu_error,
  .frame_acquired = gpu_frame_acquired,
  .finish_frame = gpu_finish_frame,
  .open = gpu_open,
  .set_context = gpu_set_context,
  .query = gpu_query,
  .is_device_memory = gpu_is_device_memory,
  .copy_to_host = gpu_copy_to_host,
};
