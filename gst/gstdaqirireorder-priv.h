/* daqirireorder's private parts, shared by the element (gstdaqirireorder.c) and the frames it
 * pushes (gstdaqirireorder-out.c). */
#ifndef GST_DAQIRI_REORDER_PRIV_H
#define GST_DAQIRI_REORDER_PRIV_H

#include "gstdaqirireorder.h"
#include "gstdaqirielement.h"

#include <gst/daqiri/daqiri.h>
#include <gst/video/video.h>

#include "daqiri-reorder.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (daqirireorder_debug);

typedef struct {
  GstBuffer *buf;
  GstMapInfo map;
} FrameSlot;

/* memory=cuda: the most bursts whose GPU work may run at once (property max-inflight) */
#define REORDER_MAX_INFLIGHT 16
#define REORDER_DEFAULT_INFLIGHT 4
/* memory=cuda: the most packets of bursts grouped into one submission (property submit-packets) */
#define REORDER_DEFAULT_SUBMIT_PACKETS 4096

/* The reorder backends (gstdaqirireorder-backend.h). */
typedef struct _ReorderBackend ReorderBackend;
typedef struct _ReorderBackendClass ReorderBackendClass;

struct _GstDaqiriReorder {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties (object lock) */
  DqReorderConfig cfg;
  guint64 timeout;
  GstDaqiriMemory memory;
  GstVideoFormat video_format;
  guint width, height;
  gint fps_n, fps_d;
  guint max_inflight;
  guint submit_packets;

  /* streaming state (stream lock) */
  DqReorderConfig run_cfg;
  GstDaqiriMemory run_memory;
  gboolean video; /* frames are raw video (video-format set) */
  GstVideoInfo vinfo;
  const ReorderBackendClass *run_backend; /* the backend of run_memory, while started */
  ReorderBackend *backend;                /* NULL: not running */
  guint run_inflight;       /* memory=cuda: submissions in flight at most (1 with a timeout) */
  guint run_submit_packets; /* memory=cuda: a grouped submission's packets at most */
  /* memory=cuda with GstCudaMemory out (video, or frames downstream takes only as
   * memory:CUDAMemory): the pipeline's GstCudaContext, current on the thread whenever CUDA is
   * called (backend_enter ()) */
  GstObject *cuda_context; /* object lock */
  gboolean gstcuda_frames; /* generic frames go out as GstCudaMemory: ... */
  gboolean gstcuda_wrap;   /* ... daqiri's frame wrapped (>= 1.24), else a pool's */
  /* where the pushed frames come from when not the backend's own: GstCudaMemory video (the
   * frame copied, or unpacked, into it), or system-memory I422_10LE (unpacked); NULL: the
   * backend's frame is pushed as it is */
  GstBufferPool *out_pool;
  gboolean out_gstcuda; /* out_pool is a GstCudaBufferPool of cuda_context */
  GstBufferPool *pool;
  GstCaps *out_caps;
  gboolean caps_sent;
  DqReorderPacket *scratch;
  guint scratch_len;
  guint frames_held;      /* frames given to the backend and not yet back */
  DqReorderWindow window; /* after the last completion */
  /* batch ids the backend counted as skipped that no batch with packets ever followed: the
   * empty end of the window that end of stream or a reset passed (not reported as skipped) */
  guint64 skipped_unseen;

  /* the element's thread (t_lock, t_cond, t_stop), one of two, taking the stream lock:
   * - the timeout timer: flushes the oldest open batch when the pipeline clock passes
   *   t_deadline (running time; NONE when no batch is open);
   * - a backend with bursts in flight (memory=cuda): the retirer, which finishes and pushes
   *   them once upstream has sent nothing for a while (t_armed: bursts are in flight;
   *   t_bursts: bursts submitted so far) */
  guint64 run_timeout;
  GThread *timer;
  GMutex t_lock;
  GCond t_cond;
  gboolean t_stop;
  GstClockTime t_deadline;
  gboolean t_armed;
  guint64 t_bursts;
  gint64 clock_offset; /* running time - PTS when the latest burst arrived */
  gboolean have_offset;

  /* counters (object lock) */
  guint64 st_batches, st_complete, st_flushed, st_pushed, st_missing, st_duplicates, st_late,
      st_short, st_skipped, st_packets, st_no_frame, st_submissions;
};

/* The frame is UYVP pgroups, pushed as planar I422_10LE (video-format=i422-10le). */
static inline gboolean
reorder_unpacks (const GstDaqiriReorder *self)
{
  return self->video && GST_VIDEO_INFO_FORMAT (&self->vinfo) == GST_VIDEO_FORMAT_I422_10LE;
}

/* ---- gstdaqirireorder-out.c ---- */

/* video-format/width/height/framerate -> self->vinfo and raw-video caps;
 * FALSE with an error posted when the frame does not make that picture. */
gboolean reorder_video_setup (GstDaqiriReorder *self, GstVideoFormat format, guint width,
    guint height, gint fps_n, gint fps_d, guint64 frame_size);
/* memory=system I422_10LE: the pool of planar frames. */
gboolean reorder_system_video_setup (GstDaqiriReorder *self);
/* The frame pushed for the frame of `slot` when frames go out through the out_pool. */
GstFlowReturn reorder_output_frame (GstDaqiriReorder *self, FrameSlot *slot, GstBuffer **out);
#ifdef DQ_HAVE_CUDA
/* The pipeline's CUDA context (self->cuda_context), found or made; a reference, or NULL. */
GstObject *reorder_cuda_context_ensure (GstDaqiriReorder *self);
/* memory=cuda with raw video: the GstCudaMemory pool the frames go out in. */
gboolean reorder_cuda_video_setup (GstDaqiriReorder *self);
/* memory=cuda, generic frames: GstCudaMemory when downstream prefers it. */
gboolean reorder_cuda_frames_setup (GstDaqiriReorder *self, guint64 frame_size, guint n_frames);
/* GStreamer 1.22's GstCuda staging copy made whole before a pool memory's first use. */
void reorder_gstcuda_staging_whole (GstMemory *mem);
/* GStreamer >= 1.24: daqiri's frame as GstCudaMemory (NULL, error posted, on failure). */
GstBuffer *reorder_wrap_gstcuda (GstDaqiriReorder *self, GstBuffer *frame);
#endif

G_END_DECLS

#endif
