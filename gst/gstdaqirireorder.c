/* daqirireorder: packet bursts (application/x-daqiri-packets) -> frames (application/x-daqiri-frame).
 *
 * Each input buffer is a burst with a GstDaqiriPacketMeta. The packets are placed by sequence
 * (and optionally batch) number into frames of packets-per-batch payloads, converted as
 * input-type/output-type say, by one of two backends (gstdaqirireorder-backend.h) with
 * bit-identical results:
 *   memory=system  the CPU twin of the kernels (cuda/daqiri-reorder.h, DqReorderCpu;
 *                  gstdaqirireorder-cpu.c): frames in system memory;
 *   memory=cuda    the GPU kernels (DqReorderGpu; gstdaqirireorder-gpu.c, builds with CUDA
 *                  only): frames in GPU memory (gstdaqiricudamem.c,
 *                  caps feature memory:DaqiriCUDA; or GstCudaMemory of a GstCudaBufferPool
 *                  when downstream asks for memory:CUDAMemory). Input bursts in system memory are copied
 *                  into pinned, device-mapped staging memory that the kernels read over the bus,
 *                  bursts in daqiri's GPU memory (memory:DaqiriCUDA) are read where they are;
 *                  up to max-inflight bursts run on the GPU while the next are taken (the
 *                  frames pushed are final when pushed; see gstdaqirireorder-gpu.c).
 * With video-format the frames go out as raw video: the system-memory frames as they are; on
 * the GPU each frame is copied into a GstCudaMemory frame of a GstCudaBufferPool of the
 * pipeline's CUDA context (gstdaqirigstcuda.c), and every CUDA call of the element runs with
 * that context current (backend_enter/backend_leave). I422_10LE is the exception to "as they
 * are": the frame holds 10-bit 4:2:2 pgroups (SMPTE ST 2110-20, GStreamer's UYVP), unpacked
 * into the planes of an I422_10LE frame of the output pool (out_pool: a GstVideoBufferPool on
 * the CPU, the GstCudaBufferPool by a kernel on the GPU); the backend's frame then goes back
 * to it.
 *
 * Frames come from a GstBufferPool of frame-size buffers, handed to the backend with its
 * add_frame (one per window slot); every emitted batch is pushed in batch-id
 * order with a GstCustomMeta "GstDaqiriFrameMeta" (batch-id, packets, missing, duplicates, late,
 * short, flags) and replaced by a fresh frame.
 *
 * Time: the descriptors handed to the backend carry the PTS of the burst they arrived in instead
 * of the port timestamp, so a batch's first_timestamp is the PTS of the burst holding its first
 * packet; that is the frame's PTS. The timeout is measured on the same clock (running time):
 * the oldest open batch is flushed (flag FLUSHED) once its first burst's PTS is more than
 * `timeout` behind either the PTS of a newer burst (checked per burst, so a replayed or
 * offline stream times out the same way) or, in PLAYING, the pipeline clock: a timer thread
 * flushes it once the clock is `timeout` past the moment that first burst arrived (its PTS
 * mapped to the clock by the running time at which the latest burst arrived), so a stream
 * that stops does not leave its last batch waiting for EOS.
 * EOS flushes everything.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqirireorder-backend.h"

#include <string.h>

GST_DEBUG_CATEGORY (daqirireorder_debug);
#define GST_CAT_DEFAULT daqirireorder_debug

G_STATIC_ASSERT (sizeof (GstDaqiriPacket) == sizeof (DqReorderPacket));
G_STATIC_ASSERT (
    G_STRUCT_OFFSET (GstDaqiriPacket, timestamp) == G_STRUCT_OFFSET (DqReorderPacket, timestamp));

enum {
  PROP_0,
  PROP_SEQ_OFFSET, /* .. the GST_DAQIRI_N_FIELDS field properties (gstdaqirielement.h) */
  PROP_INPUT_TYPE = PROP_SEQ_OFFSET + GST_DAQIRI_N_FIELDS,
  PROP_OUTPUT_TYPE,
  PROP_BYTE_ORDER,
  PROP_WINDOW,
  PROP_TIMEOUT,
  PROP_MEMORY,
  PROP_VIDEO_FORMAT,
  PROP_WIDTH,
  PROP_HEIGHT,
  PROP_FRAMERATE,
  PROP_MAX_INFLIGHT,
  PROP_SUBMIT_PACKETS,
  PROP_STATS,
};

G_DEFINE_TYPE (GstDaqiriReorder, gst_daqiri_reorder, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (
    daqirireorder, "daqirireorder", GST_RANK_NONE, GST_TYPE_DAQIRI_REORDER);

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_DAQIRI_PACKETS_MEDIA_TYPE
            "; " GST_DAQIRI_PACKETS_MEDIA_TYPE "(" GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA
            "); " GST_DAQIRI_PACKETS_MEDIA_TYPE "(memory:CUDAMemory)"));
#define FRAME_CAPS_FIELDS \
  ", element-type = (string) " \
  "{ u8, int4, int8, int16, int32, fp16, bf16, fp32, fp64 }, elements = (int) [ 1, MAX ], " \
  "packets-per-batch = (int) [ 1, MAX ]"
/* raw video: packed formats of one plane (those GstCudaMemory takes, gray, UYVP), and
 * I422_10LE unpacked from UYVP pgroups (the table in gstdaqirireorder-out.c) */
#define VIDEO_FORMATS \
  "{ UYVY, YUY2, RGBA, BGRA, RGBx, BGRx, ARGB, ABGR, RGB, BGR, I422_10LE, " \
  "GRAY8, GRAY16_LE, GRAY16_BE, UYVP }"
#define CUDA_VIDEO_FORMATS \
  "{ UYVY, YUY2, RGBA, BGRA, RGBx, BGRx, ARGB, ABGR, RGB, BGR, " \
  "I422_10LE }"
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_DAQIRI_FRAME_MEDIA_TYPE FRAME_CAPS_FIELDS
            "; " GST_DAQIRI_FRAME_MEDIA_TYPE "(" GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA
            ")" FRAME_CAPS_FIELDS "; " GST_DAQIRI_FRAME_MEDIA_TYPE
            "(memory:CUDAMemory)" FRAME_CAPS_FIELDS
            "; " GST_VIDEO_CAPS_MAKE (VIDEO_FORMATS) "; " GST_VIDEO_CAPS_MAKE_WITH_FEATURES (
                "memory:CUDAMemory", CUDA_VIDEO_FORMATS)));

GType
gst_daqiri_element_type_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { DQ_ELEM_SAME, "Same as the other side (a plain copy)", "same" },
    { DQ_ELEM_INT4, "4-bit signed, two per byte, high nibble first", "int4" },
    { DQ_ELEM_INT8, "8-bit signed", "int8" },
    { DQ_ELEM_INT16, "16-bit signed", "int16" },
    { DQ_ELEM_INT32, "32-bit signed", "int32" },
    { DQ_ELEM_FP16, "IEEE half", "fp16" },
    { DQ_ELEM_BF16, "bfloat16", "bf16" },
    { DQ_ELEM_FP32, "IEEE single", "fp32" },
    { DQ_ELEM_FP64, "IEEE double", "fp64" },
    { 0, NULL, NULL },
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstDaqiriElementType", values));
  return type;
}

GType
gst_daqiri_byte_order_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { DQ_BYTE_ORDER_HOST, "Little-endian input elements", "host" },
    { DQ_BYTE_ORDER_NETWORK, "Big-endian input elements", "network" },
    { 0, NULL, NULL },
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstDaqiriByteOrder", values));
  return type;
}

/* The caps name and per-element bits of the frame's element type. */
static const gchar *
frame_element (const DqReorderConfig *cfg, guint *bits)
{
  DqElemType t = cfg->output_type != DQ_ELEM_SAME ? cfg->output_type : cfg->input_type;
  switch (t) {
    case DQ_ELEM_INT4: *bits = 4; return "int4";
    case DQ_ELEM_INT8: *bits = 8; return "int8";
    case DQ_ELEM_INT16: *bits = 16; return "int16";
    case DQ_ELEM_INT32: *bits = 32; return "int32";
    case DQ_ELEM_FP16: *bits = 16; return "fp16";
    case DQ_ELEM_BF16: *bits = 16; return "bf16";
    case DQ_ELEM_FP32: *bits = 32; return "fp32";
    case DQ_ELEM_FP64: *bits = 64; return "fp64";
    default: *bits = 8; return "u8";
  }
}

/* ---- the reorder backend: the CPU twin or the GPU context, one contract ----
 *
 * (gstdaqirireorder-backend.h) Bursts are submitted and their completions polled in submission
 * order; up to the backend's max_inflight bursts are in flight (the GPU's run while the next
 * ones are taken from upstream; the CPU twin's are done at once). Before a flush (EOS,
 * timeout, reset) and before any serialized event goes downstream, every burst in flight is
 * retired first, so frames and events keep their order. */

static gboolean
reorder_running (GstDaqiriReorder *self)
{
  return self->backend != NULL;
}

/* With a device context (the pipeline's CUDA context), the backend's work runs in it: made
 * current around every backend call. */
static void
backend_enter (GstDaqiriReorder *self)
{
  if (self->run_backend && self->run_backend->enter)
    self->run_backend->enter (self);
}

static void
backend_leave (GstDaqiriReorder *self)
{
  if (self->run_backend && self->run_backend->leave)
    self->run_backend->leave (self);
}

/* Bursts submitted and not yet retired, and (if frames) the frames they may still take. */
static guint
backend_in_flight (GstDaqiriReorder *self, guint *frames)
{
  return self->backend->klass->in_flight (self->backend, frames);
}

static GstFlowReturn handle_completion (GstDaqiriReorder *self, const DqReorderCompletion *c);
static void account (GstDaqiriReorder *self, const DqReorderCompletion *c);

static void
slot_free (FrameSlot *slot)
{
  gst_buffer_unmap (slot->buf, &slot->map);
  gst_buffer_unref (slot->buf);
  g_free (slot);
}

/* A completion's counters, and the frames it gives back unused freed. */
static void
account_released (GstDaqiriReorder *self, const DqReorderCompletion *c)
{
  account (self, c);
  for (guint i = 0; i < c->n_released; i++) {
    slot_free (c->released[i].user);
    self->frames_held--;
  }
}

/* A completion whose batches are not pushed (a reset, teardown): counted, frames freed. */
static void
drop_completion (GstDaqiriReorder *self, const DqReorderCompletion *c)
{
  account_released (self, c);
  for (guint i = 0; i < c->n_batches; i++)
    if (c->batches[i].frame_user) {
      slot_free (c->batches[i].frame_user);
      self->frames_held--;
    }
}

/* Retires up to `max` bursts in flight, oldest first: waiting for each (wait), or only those
 * already done. Their batches are pushed (push) or dropped. GST_FLOW_ERROR, posted, when the
 * backend fails; else the first push's failure, if any. */
static GstFlowReturn
backend_retire (GstDaqiriReorder *self, guint max, gboolean wait, gboolean push)
{
  ReorderBackend *be = self->backend;
  GstFlowReturn ret = GST_FLOW_OK;
  for (guint k = 0; k < max && backend_in_flight (self, NULL); k++) {
    DqReorderCompletion c;
    int r = be->klass->poll (be, wait, &c);
    if (r == 0)
      break;
    if (r < 0) {
      GST_ELEMENT_ERROR (self, STREAM, FAILED,
          ("%s reorder failed: %s", be->klass->name, be->klass->error (be)), (NULL));
      return GST_FLOW_ERROR;
    }
    if (!push) {
      drop_completion (self, &c);
      continue;
    }
    GstFlowReturn r2 = handle_completion (self, &c);
    if (ret == GST_FLOW_OK)
      ret = r2;
  }
  return ret;
}

/* Every burst in flight finished and its frames pushed (a serialized event or a drain query
 * goes on next, or upstream went quiet). */
static void
backend_retire_all (GstDaqiriReorder *self)
{
  if (reorder_running (self) && backend_in_flight (self, NULL)) {
    backend_enter (self);
    backend_retire (self, G_MAXUINT, TRUE, TRUE);
    backend_leave (self);
  }
}

/* A flush of the backend. The bursts in flight are retired first: their batches pushed, except
 * on a reset (dropped). */
static int
backend_flush (GstDaqiriReorder *self, DqFlushMode mode, DqReorderCompletion *c)
{
  ReorderBackend *be = self->backend;
  if (backend_retire (self, G_MAXUINT, TRUE, mode != DQ_FLUSH_RESET) == GST_FLOW_ERROR)
    return -1;
  if (be->klass->flush (be, mode) != 0)
    return -1;
  if (be->klass->poll (be, TRUE, c) != 1)
    return -1;
  /* the window (as it stood before this flush) passed to its end: the backend counts its
   * empty ids as skipped, those after the last batch emitted are no loss (nothing came after
   * them) */
  const DqReorderWindow *w = &self->window;
  if (mode != DQ_FLUSH_OLDEST && w->initialized) {
    guint64 end = w->base + dq_reorder_window (&self->run_cfg);
    guint64 last = c->n_batches ? c->batches[c->n_batches - 1].batch_id + 1 : w->base;
    self->skipped_unseen += end - MAX (last, w->base);
  }
  return 0;
}

static void
backend_free (GstDaqiriReorder *self)
{
  if (self->backend) {
    self->backend->klass->destroy (self->backend);
    self->backend = NULL;
  }
}

/* Creates the backend of self->run_memory; FALSE with an error posted. */
static gboolean
backend_new (GstDaqiriReorder *self)
{
  if (self->run_memory == GST_DAQIRI_MEMORY_CUDA &&
      !gst_daqiri_cuda_usable (GST_ELEMENT_CAST (self), "memory"))
    return FALSE;
  /* a build that can use GPU memory has the GPU backend */
  g_assert (self->run_backend != NULL);
  self->backend = self->run_backend->create (self);
  if (!self->backend)
    return FALSE;
  self->backend->klass = self->run_backend;
  self->backend->element = self;
  return TRUE;
}

/* Hands one more frame from the pool to the backend. */
static gboolean
add_frame (GstDaqiriReorder *self)
{
  ReorderBackend *be = self->backend;
  GstBuffer *buf = NULL;
  if (gst_buffer_pool_acquire_buffer (self->pool, &buf, NULL) != GST_FLOW_OK)
    return FALSE;
  if (be->klass->frame_acquired)
    be->klass->frame_acquired (be, buf);
  FrameSlot *slot = g_new0 (FrameSlot, 1);
  slot->buf = buf;
  /* read back too when the frame is copied or unpacked into another before it is pushed */
  GstMapFlags flags = self->out_pool ? GST_MAP_READWRITE : GST_MAP_WRITE;
  if (self->run_memory == GST_DAQIRI_MEMORY_CUDA)
    flags |= GST_DAQIRI_MAP_CUDA;
  if (!gst_buffer_map (buf, &slot->map, flags)) {
    gst_buffer_unref (buf);
    g_free (slot);
    return FALSE;
  }
  if (be->klass->add_frame (be, slot->map.data, slot) != 0) {
    slot_free (slot);
    return FALSE;
  }
  self->frames_held++;
  return TRUE;
}

static void
stop_reorder (GstDaqiriReorder *self)
{
  backend_enter (self);
  if (reorder_running (self)) {
    DqReorderCompletion c;
    /* take every frame back; batches still open are dropped (this is teardown) */
    if (backend_flush (self, DQ_FLUSH_RESET, &c) == 0)
      drop_completion (self, &c);
  }
  backend_free (self);
  self->frames_held = 0;
  if (self->pool) {
    gst_buffer_pool_set_active (self->pool, FALSE);
    gst_clear_object (&self->pool);
  }
  backend_leave (self);
  self->run_backend = NULL;
  if (self->out_pool) {
    gst_buffer_pool_set_active (self->out_pool, FALSE);
    gst_clear_object (&self->out_pool);
  }
  self->gstcuda_frames = FALSE;
  self->gstcuda_wrap = FALSE;
  self->out_gstcuda = FALSE;
  gst_clear_caps (&self->out_caps);
  g_clear_pointer (&self->scratch, g_free);
  self->scratch_len = 0;
  self->caps_sent = FALSE;
}

static gboolean
start_reorder (GstDaqiriReorder *self)
{
  char msg[256];

  GST_OBJECT_LOCK (self);
  self->run_cfg = self->cfg;
  self->run_memory = self->memory;
  self->run_timeout = self->timeout;
  self->run_inflight = self->timeout ? 1 : self->max_inflight;
  self->run_submit_packets = self->submit_packets;
  GstVideoFormat video_format = self->video_format;
  guint width = self->width, height = self->height;
  gint fps_n = self->fps_n, fps_d = self->fps_d;
  self->st_batches = self->st_complete = self->st_flushed = self->st_pushed = 0;
  self->st_missing = self->st_duplicates = self->st_late = self->st_short = 0;
  self->st_skipped = self->st_packets = self->st_no_frame = self->st_submissions = 0;
  GST_OBJECT_UNLOCK (self);
  self->video = FALSE;
  self->skipped_unseen = 0;
  /* NULL: memory=cuda in a build without CUDA (refused by backend_new) */
  self->run_backend = reorder_backend_lookup (self->run_memory);

  if (dq_reorder_config_validate (&self->run_cfg, msg, sizeof msg) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", msg), ("invalid reorder configuration"));
    return FALSE;
  }
  guint64 frame_size = dq_reorder_frame_size (&self->run_cfg);
  if (frame_size > G_MAXUINT) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("a frame of %" G_GUINT64_FORMAT " bytes (packets-per-batch %u x payload %u): allowed "
         "up to %u bytes",
            frame_size, self->run_cfg.packets_per_batch,
            dq_reorder_output_payload_size (&self->run_cfg), G_MAXUINT),
        (NULL));
    return FALSE;
  }

  if (video_format != GST_VIDEO_FORMAT_UNKNOWN) {
    if (!reorder_video_setup (self, video_format, width, height, fps_n, fps_d, frame_size))
      return FALSE;
  } else {
    guint bits;
    const gchar *etype = frame_element (&self->run_cfg, &bits);
    guint64 elements = frame_size * 8 / bits;
    self->out_caps = gst_caps_new_simple (GST_DAQIRI_FRAME_MEDIA_TYPE, "element-type",
        G_TYPE_STRING, etype, "elements", G_TYPE_INT, (gint) MIN (elements, (guint64) G_MAXINT),
        "packets-per-batch", G_TYPE_INT, (gint) self->run_cfg.packets_per_batch, NULL);
    if (self->run_memory == GST_DAQIRI_MEMORY_CUDA)
      gst_caps_set_features (
          self->out_caps, 0, gst_caps_features_new (GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA, NULL));
  }
  if (reorder_unpacks (self) && self->run_memory == GST_DAQIRI_MEMORY_SYSTEM &&
      !reorder_system_video_setup (self))
    return FALSE;
  guint window = dq_reorder_window (&self->run_cfg);
  if (self->run_backend && self->run_backend->prepare &&
      !self->run_backend->prepare (self, frame_size, window + 1))
    return FALSE;

  backend_enter (self);
  gboolean ok = backend_new (self);
  if (ok && !self->pool) {
    /* the frames the backend fills: pushed as they are, or copied (GstCudaMemory video) or
     * unpacked (I422_10LE) into a frame of the out_pool; GstCudaMemory generic frames have
     * their own pool */
    self->pool = gst_buffer_pool_new ();
    GstStructure *config = gst_buffer_pool_get_config (self->pool);
    gst_buffer_pool_config_set_params (config, self->out_caps, (guint) frame_size, window + 1, 0);
    if (self->run_backend->configure_pool)
      self->run_backend->configure_pool (self, config);
    ok = gst_buffer_pool_set_config (self->pool, config) &&
        gst_buffer_pool_set_active (self->pool, TRUE);
  }
  for (guint i = 0; ok && i < window; i++)
    ok = add_frame (self);
  if (!ok)
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("cannot allocate frames of %u bytes", (guint) frame_size), (NULL));
  backend_leave (self);
  if (!ok)
    return FALSE;
  GST_INFO_OBJECT (self, "frames of %u bytes, window %u, caps %" GST_PTR_FORMAT, (guint) frame_size,
      window, self->out_caps);
  return TRUE;
}

static GstFlowReturn
ensure_caps (GstDaqiriReorder *self)
{
  if (self->caps_sent)
    return GST_FLOW_OK;
  if (!gst_pad_push_event (self->srcpad, gst_event_new_caps (self->out_caps)))
    return GST_FLOW_NOT_NEGOTIATED;
  self->caps_sent = TRUE;
  return GST_FLOW_OK;
}

/* A batch's flags as the element reports them: PUSHED only on a partial batch (a complete
 * one is COMPLETE, whatever moved the window past it). */
static guint
batch_flags (const DqReorderBatch *b)
{
  if (b->flags & DQ_BATCH_COMPLETE)
    return b->flags & ~DQ_BATCH_PUSHED;
  return b->flags;
}

/* The counters after one completion. */
static void
account (GstDaqiriReorder *self, const DqReorderCompletion *c)
{
  self->window = c->window;
  GST_OBJECT_LOCK (self);
  self->st_packets = c->stats.packets;
  self->st_duplicates = c->stats.duplicates;
  self->st_late = c->stats.late;
  self->st_short = c->stats.short_packets;
  self->st_batches = c->stats.batches;
  self->st_complete = c->stats.complete;
  self->st_missing = c->stats.missing_slots;
  self->st_skipped = c->stats.skipped - self->skipped_unseen;
  self->st_no_frame = c->stats.no_frame;
  self->st_submissions = self->backend->submissions;
  for (guint i = 0; i < c->n_batches; i++) {
    guint flags = batch_flags (&c->batches[i]);
    if (flags & DQ_BATCH_FLUSHED)
      self->st_flushed++;
    if (flags & DQ_BATCH_PUSHED)
      self->st_pushed++;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ---- the timeout timer ---- */

/* The deadline of the oldest open batch after a completion (under the stream lock). */
static void
timer_set (GstDaqiriReorder *self, const DqReorderWindow *w)
{
  GstClockTime deadline = GST_CLOCK_TIME_NONE;
  if (self->run_timeout && self->have_offset && w->open &&
      GST_CLOCK_TIME_IS_VALID (w->oldest_first_timestamp) &&
      w->oldest_first_timestamp <= G_MAXINT64 - self->run_timeout) {
    gint64 d = (gint64) (w->oldest_first_timestamp + self->run_timeout);
    d = self->clock_offset > 0 && d > G_MAXINT64 - self->clock_offset ? G_MAXINT64
                                                                      : d + self->clock_offset;
    deadline = (GstClockTime) MAX (d, 0);
  }
  g_mutex_lock (&self->t_lock);
  if (deadline != self->t_deadline) {
    self->t_deadline = deadline;
    g_cond_signal (&self->t_cond);
  }
  g_mutex_unlock (&self->t_lock);
}

/* The pipeline clock's running time, NONE unless PLAYING with a clock. */
static GstClockTime
running_time_now (GstDaqiriReorder *self)
{
  GstClockTime now = GST_CLOCK_TIME_NONE;
  GST_OBJECT_LOCK (self);
  GstClock *clock = GST_ELEMENT_CLOCK (self) ? gst_object_ref (GST_ELEMENT_CLOCK (self)) : NULL;
  gboolean playing = GST_STATE (self) == GST_STATE_PLAYING;
  GstClockTime base = GST_ELEMENT_CAST (self)->base_time;
  GST_OBJECT_UNLOCK (self);
  if (clock) {
    GstClockTime t = gst_clock_get_time (clock);
    if (playing && GST_CLOCK_TIME_IS_VALID (t) && t >= base)
      now = t - base;
    gst_object_unref (clock);
  }
  return now;
}

static GstFlowReturn flush_expired (GstDaqiriReorder *self, GstClockTime now, DqReorderWindow w);

static gpointer
timer_run (gpointer data)
{
  GstDaqiriReorder *self = data;
  g_mutex_lock (&self->t_lock);
  while (!self->t_stop) {
    if (!GST_CLOCK_TIME_IS_VALID (self->t_deadline)) {
      g_cond_wait (&self->t_cond, &self->t_lock);
      continue;
    }
    GstClockTime deadline = self->t_deadline;
    g_mutex_unlock (&self->t_lock);
    GstClockTime now = running_time_now (self);
    if (!GST_CLOCK_TIME_IS_VALID (now) || now <= deadline) {
      /* look again when it may be due, at least every 10 ms (the clock may be paused,
       * replaced, or not run in step with the monotonic clock) */
      gint64 wait_us =
          GST_CLOCK_TIME_IS_VALID (now) ? (gint64) MIN ((deadline - now) / 1000 + 1, 10000) : 10000;
      g_mutex_lock (&self->t_lock);
      if (!self->t_stop && self->t_deadline == deadline)
        g_cond_wait_until (&self->t_cond, &self->t_lock, g_get_monotonic_time () + wait_us);
      continue;
    }
    GST_PAD_STREAM_LOCK (self->sinkpad);
    /* the clock's now, in the PTS domain of the bursts */
    GstClockTime clock_now = running_time_now (self);
    if (reorder_running (self) && self->have_offset && GST_CLOCK_TIME_IS_VALID (clock_now)) {
      gint64 pts_now = (gint64) clock_now - self->clock_offset;
      backend_enter (self);
      if (pts_now > 0)
        flush_expired (self, (GstClockTime) pts_now, self->window);
      backend_leave (self);
    }
    GST_PAD_STREAM_UNLOCK (self->sinkpad);
    g_mutex_lock (&self->t_lock);
    /* nothing was due after all (a burst moved the offset): look again in a while */
    if (!self->t_stop && self->t_deadline == deadline)
      g_cond_wait_until (&self->t_cond, &self->t_lock, g_get_monotonic_time () + 1000);
  }
  g_mutex_unlock (&self->t_lock);
  return NULL;
}

/* How long upstream may send nothing before the retirer finishes the bursts in flight. */
#define RETIRE_IDLE_US 200

/* The retirer (a backend that keeps bursts in flight: the GPU's): while bursts are in flight
 * and no new one has come for RETIRE_IDLE_US, waits for them and pushes their frames (a stream
 * that stops does not leave its last frames on the GPU); while bursts keep coming the
 * streaming thread retires them itself. */
static gpointer
retire_run (gpointer data)
{
  GstDaqiriReorder *self = data;
  g_mutex_lock (&self->t_lock);
  while (!self->t_stop) {
    if (!self->t_armed) {
      g_cond_wait (&self->t_cond, &self->t_lock);
      continue;
    }
    guint64 seen = self->t_bursts;
    g_cond_wait_until (&self->t_cond, &self->t_lock, g_get_monotonic_time () + RETIRE_IDLE_US);
    if (self->t_stop || self->t_bursts != seen)
      continue;
    g_mutex_unlock (&self->t_lock);
    GST_PAD_STREAM_LOCK (self->sinkpad);
    backend_retire_all (self);
    g_mutex_lock (&self->t_lock);
    self->t_armed = reorder_running (self) && backend_in_flight (self, NULL) > 0;
    GST_PAD_STREAM_UNLOCK (self->sinkpad);
  }
  g_mutex_unlock (&self->t_lock);
  return NULL;
}

/* After a submission (stream lock held): the retirer knows bursts are in flight. */
static void
retire_note_burst (GstDaqiriReorder *self)
{
  g_mutex_lock (&self->t_lock);
  self->t_bursts++;
  if (!self->t_armed) {
    self->t_armed = TRUE;
    g_cond_signal (&self->t_cond);
  }
  g_mutex_unlock (&self->t_lock);
}

static void
timer_start (GstDaqiriReorder *self)
{
  self->t_stop = FALSE;
  self->t_deadline = GST_CLOCK_TIME_NONE;
  self->have_offset = FALSE;
  self->t_armed = FALSE;
  self->t_bursts = 0;
  if (self->run_timeout)
    self->timer = g_thread_new ("daqirireorder-timeout", timer_run, self);
  else if (reorder_running (self) && self->backend->max_inflight > 1)
    self->timer = g_thread_new ("daqirireorder-retire", retire_run, self);
}

/* With the pads deactivated (no push in flight can block). */
static void
timer_stop (GstDaqiriReorder *self)
{
  if (!self->timer)
    return;
  g_mutex_lock (&self->t_lock);
  self->t_stop = TRUE;
  g_cond_signal (&self->t_cond);
  g_mutex_unlock (&self->t_lock);
  g_thread_join (self->timer);
  self->timer = NULL;
}

/* Pushes the batches of one completion, frees released frames. */
static GstFlowReturn
handle_completion (GstDaqiriReorder *self, const DqReorderCompletion *c)
{
  GstFlowReturn ret = GST_FLOW_OK;

  account_released (self, c);
  timer_set (self, &c->window);

  for (guint i = 0; i < c->n_batches; i++) {
    const DqReorderBatch *b = &c->batches[i];
    if (!b->frame_user) {
      GST_WARNING_OBJECT (self, "batch %" G_GUINT64_FORMAT " had no frame: dropped", b->batch_id);
      continue;
    }
    FrameSlot *slot = b->frame_user;
    GstBuffer *buf = slot->buf;
    if (self->out_pool && ret == GST_FLOW_OK) {
      /* GstCudaMemory video or I422_10LE: a frame of the out_pool goes out, the backend's
       * goes back to its pool */
      GstBuffer *out = NULL;
      ret = reorder_output_frame (self, slot, &out);
      gst_buffer_unmap (buf, &slot->map);
      gst_buffer_unref (buf);
      buf = out;
    } else
      gst_buffer_unmap (buf, &slot->map);
    g_free (slot);
    self->frames_held--;
    if (ret != GST_FLOW_OK) {
      gst_clear_buffer (&buf);
      continue;
    }
    ReorderBackend *be = self->backend;
    if (be->klass->finish_frame && (buf = be->klass->finish_frame (be, buf)) == NULL) {
      ret = GST_FLOW_ERROR;
      continue;
    }
    GST_BUFFER_PTS (buf) = b->first_timestamp; /* GST_CLOCK_TIME_NONE when unknown */
    GST_BUFFER_DTS (buf) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_OFFSET (buf) = b->batch_id;
    GstCustomMeta *meta = gst_buffer_add_custom_meta (buf, GST_DAQIRI_FRAME_META_NAME);
    guint flags = batch_flags (b);
    if (meta) {
      GstStructure *s = gst_custom_meta_get_structure (meta);
      gst_structure_set (s, "batch-id", G_TYPE_UINT64, b->batch_id, "packets", G_TYPE_UINT,
          b->packets, "missing", G_TYPE_UINT, b->missing, "duplicates", G_TYPE_UINT, b->duplicates,
          "late", G_TYPE_UINT, b->late, "short", G_TYPE_UINT, b->short_packets, "flags",
          G_TYPE_UINT, flags, "complete", G_TYPE_BOOLEAN, (flags & DQ_BATCH_COMPLETE) != 0,
          "flushed", G_TYPE_BOOLEAN, (flags & DQ_BATCH_FLUSHED) != 0, NULL);
    }
    ret = ensure_caps (self);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (buf);
      continue;
    }
    ret = gst_pad_push (self->srcpad, buf);
  }
  return ret;
}

static GstFlowReturn
flush_reorder (GstDaqiriReorder *self, DqFlushMode mode)
{
  DqReorderCompletion c;
  if (!reorder_running (self))
    return GST_FLOW_OK;
  if (backend_flush (self, mode, &c) != 0)
    return GST_FLOW_ERROR;
  return handle_completion (self, &c);
}

static GstFlowReturn chain_burst (GstDaqiriReorder *self, GstBuffer *buf);

static GstFlowReturn
gst_daqiri_reorder_chain (GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstDaqiriReorder *self = GST_DAQIRI_REORDER (parent);
  backend_enter (self);
  GstFlowReturn ret = chain_burst (self, buf);
  backend_leave (self);
  return ret;
}

/* Header-data split: the fields the reorder reads (sequence number, batch id, payload) must
 * lie past the headers; an error says which does not. */
static gboolean
split_fields_ok (GstDaqiriReorder *self, const GstDaqiriPacketMeta *meta)
{
  const DqReorderConfig *c = &self->run_cfg;
  guint64 first_bit = MIN ((guint64) c->seq_bit_offset, (guint64) c->payload_offset * 8);
  if (c->batch_bit_width != 0)
    first_bit = MIN (first_bit, (guint64) c->batch_bit_offset);
  if (first_bit >= (guint64) meta->header_size * 8)
    return TRUE;
  GST_ELEMENT_ERROR (self, STREAM, FORMAT,
      ("with header-data split the sequence field, batch field and payload must lie past the "
       "headers"),
      ("daqirisrc header-size is %u bytes; seq-offset %u bits, payload-offset %u bytes%s; "
       "allowed: header-size <= %" G_GUINT64_FORMAT,
          meta->header_size, c->seq_bit_offset, c->payload_offset,
          c->batch_bit_width ? " and the batch field" : "", first_bit / 8));
  return FALSE;
}

/* Header-data split: maps the burst's payload memory as if each packet's headers preceded its
 * payload, so that the packets' offsets (their payloads', gst_daqiri_packet_payload_offset)
 * with seq-offset and payload-offset address what they always do: `data` starts
 * header_size bytes before the memory, which is never read there (split_fields_ok). The map
 * holds a reference to the memory and goes back with gst_buffer_unmap. */
static gboolean
map_payloads (GstBuffer *buf, GstMapInfo *map, GstMapFlags flags, guint header_size)
{
  GstMemory *mem = gst_buffer_get_memory (buf, 1);
  if (!gst_memory_map (mem, map, flags)) {
    gst_memory_unref (mem);
    return FALSE;
  }
  map->data -= header_size;
  map->size += header_size;
  return TRUE;
}

static GstFlowReturn
chain_burst (GstDaqiriReorder *self, GstBuffer *buf)
{
  GstFlowReturn ret = GST_FLOW_OK;
  GstMapInfo map;

  if (!reorder_running (self)) {
    gst_buffer_unref (buf);
    return GST_FLOW_FLUSHING;
  }
  ReorderBackend *be = self->backend;
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
  if (!meta) {
    GST_WARNING_OBJECT (self, "buffer without GstDaqiriPacketMeta: dropped");
    gst_buffer_unref (buf);
    return GST_FLOW_OK;
  }
  /* header-data split: the packets' sequence fields and payloads lie past their headers, in
   * the burst's second memory, read where they are */
  guint split = meta->header_size;
  if (split != 0 && !split_fields_ok (self, meta)) {
    gst_buffer_unref (buf);
    return GST_FLOW_ERROR;
  }
  /* a burst in daqiri's GPU memory is read where it is (memory=cuda) */
  GstMemory *mem0 = split != 0         ? gst_buffer_peek_memory (buf, 1)
      : gst_buffer_n_memory (buf) == 1 ? gst_buffer_peek_memory (buf, 0)
                                       : NULL;
  gboolean on_gpu = mem0 && gst_memory_is_type (mem0, GST_DAQIRI_CUDA_MEMORY_TYPE);
  /* GstCudaMemory bursts (daqirisrc memory=cuda with GStreamer >= 1.24): read in place too */
  const ReorderBackendClass *gpu = reorder_backend_lookup (GST_DAQIRI_MEMORY_CUDA);
  on_gpu = on_gpu || (mem0 && gpu && gpu->is_device_memory && gpu->is_device_memory (mem0));
  GstMapFlags flags = on_gpu ? GST_MAP_READ | GST_DAQIRI_MAP_CUDA : GST_MAP_READ;
  if (!(split != 0 ? map_payloads (buf, &map, flags, split) : gst_buffer_map (buf, &map, flags))) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("cannot map the input burst"), (NULL));
    return GST_FLOW_ERROR;
  }

  /* descriptors with the burst's PTS in place of the port timestamp (see the top comment):
   * a backend that stamps them itself reads the source's own, unless the payload offsets
   * change (header-data split) */
  guint n = meta->n_packets;
  GstClockTime pts = GST_BUFFER_PTS (buf);
  if (self->run_timeout && GST_CLOCK_TIME_IS_VALID (pts)) {
    GstClockTime now = running_time_now (self);
    self->have_offset = GST_CLOCK_TIME_IS_VALID (now) && now <= G_MAXINT64 && pts <= G_MAXINT64;
    if (self->have_offset)
      self->clock_offset = (gint64) now - (gint64) pts;
  }
  const DqReorderPacket *pkts = (const DqReorderPacket *) meta->packets;
  if (split != 0 || !be->klass->stamps) {
    if (n > self->scratch_len) {
      g_free (self->scratch);
      self->scratch = g_new (DqReorderPacket, n);
      self->scratch_len = n;
    }
    for (guint i = 0; i < n; i++) {
      memcpy (&self->scratch[i], &meta->packets[i], sizeof (DqReorderPacket));
      self->scratch[i].timestamp = pts;
      if (split != 0)
        self->scratch[i].offset =
            (guint32) gst_daqiri_packet_payload_offset (meta, &meta->packets[i]);
    }
    pkts = self->scratch;
  }

  /* frames: one per window slot, plus one for each batch this burst can open beyond the window
   * when its packets run in order (a burst spread over more batches gets NO_FRAME batches:
   * counted in stats no-frame, dropped); the same again for each burst still in flight */
  guint ppb = self->run_cfg.packets_per_batch;
  guint window = dq_reorder_window (&self->run_cfg);
  guint frames = (n + ppb - 1) / ppb + 1;
  guint in_flight_frames = 0;
  /* no more than a bounded free-frame queue holds (a burst over more batches than that gets
   * NO_FRAME batches, as above) */
  if (be->max_frames)
    frames = MIN (frames, be->max_frames - window);
  /* retire what is done; wait while max_inflight bursts (or as many frames as the free-frame
   * queue holds) are in flight */
  ret = backend_retire (self, G_MAXUINT, FALSE, TRUE);
  guint in_flight;
  while (ret == GST_FLOW_OK && (in_flight = backend_in_flight (self, &in_flight_frames)) &&
      (in_flight >= be->max_inflight ||
          (be->max_frames && window + in_flight_frames + frames > be->max_frames)))
    ret = backend_retire (self, 1, TRUE, TRUE);
  if (ret != GST_FLOW_OK) {
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
    return ret;
  }
  backend_in_flight (self, &in_flight_frames);
  while (self->frames_held < window + in_flight_frames + frames)
    if (!add_frame (self)) {
      gst_buffer_unmap (buf, &map);
      gst_buffer_unref (buf);
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("cannot allocate a frame"), (NULL));
      return GST_FLOW_ERROR;
    }

  /* the backend takes the burst */
  /* the source's stride words of the offsets and lengths, while pkts are its own records */
  const guint32 *words = pkts == (const DqReorderPacket *) meta->packets ? meta->_words : NULL;
  if (be->klass->submit (
          be, buf, &map, on_gpu, n ? pkts : NULL, words, meta->_word_shift, n, pts, frames) != 0) {
    GST_ELEMENT_ERROR (
        self, STREAM, FAILED, ("reorder failed on a burst of %u packets", n), (NULL));
    return GST_FLOW_ERROR;
  }
  /* one at a time (the CPU twin's is done; with a timeout, which is checked on each burst's
   * result, the GPU's too) */
  if (be->max_inflight == 1)
    ret = backend_retire (self, 1, TRUE, TRUE);
  else
    retire_note_burst (self);
  if (ret == GST_FLOW_OK)
    ret = flush_expired (self, pts, self->window);
  return ret;
}

/* Timeout: flushes the oldest open batch while its first burst is more than `timeout`
 * behind `now` (a running time). Under the stream lock. */
static GstFlowReturn
flush_expired (GstDaqiriReorder *self, GstClockTime now, DqReorderWindow w)
{
  GstFlowReturn ret = GST_FLOW_OK;
  const guint64 timeout = self->run_timeout;
  while (ret == GST_FLOW_OK && timeout && GST_CLOCK_TIME_IS_VALID (now) && w.open &&
      GST_CLOCK_TIME_IS_VALID (w.oldest_first_timestamp) && now > w.oldest_first_timestamp &&
      now - w.oldest_first_timestamp > timeout) {
    DqReorderCompletion c;
    if (backend_flush (self, DQ_FLUSH_OLDEST, &c) != 0) {
      GST_ELEMENT_ERROR (self, STREAM, FAILED, ("reorder flush failed"), (NULL));
      return GST_FLOW_ERROR;
    }
    ret = handle_completion (self, &c);
    w = c.window;
  }
  return ret;
}

static gboolean
gst_daqiri_reorder_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstDaqiriReorder *self = GST_DAQIRI_REORDER (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:
      gst_event_unref (event);
      if (!self->out_caps)
        return FALSE;
      return ensure_caps (self) == GST_FLOW_OK;
    case GST_EVENT_EOS:
      backend_enter (self);
      flush_reorder (self, DQ_FLUSH_ALL);
      backend_leave (self);
      break;
    case GST_EVENT_FLUSH_STOP: {
      /* a discontinuity: forget the stream, open batches are dropped (counted as flushed) */
      DqReorderCompletion c;
      backend_enter (self);
      if (reorder_running (self) && backend_flush (self, DQ_FLUSH_RESET, &c) == 0) {
        /* RESET gives every frame back; the next burst takes new ones */
        drop_completion (self, &c);
        timer_set (self, &c.window);
      }
      backend_leave (self);
      break;
    }
    default:
      /* frames of the bursts in flight go out before the event */
      if (GST_EVENT_IS_SERIALIZED (event))
        backend_retire_all (self);
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}

static void
gst_daqiri_reorder_set_context (GstElement *element, GstContext *context)
{
  const ReorderBackendClass *gpu = reorder_backend_lookup (GST_DAQIRI_MEMORY_CUDA);
  if (gpu && gpu->set_context)
    gpu->set_context (GST_DAQIRI_REORDER (element), context);
  GST_ELEMENT_CLASS (gst_daqiri_reorder_parent_class)->set_context (element, context);
}

/* Answers context queries for the pipeline's CUDA context, on both pads. */
static gboolean
gst_daqiri_reorder_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstDaqiriReorder *self = GST_DAQIRI_REORDER (parent);
  const ReorderBackendClass *gpu = reorder_backend_lookup (GST_DAQIRI_MEMORY_CUDA);
  if (gpu == NULL)
    return gst_pad_query_default (pad, parent, query);
  /* a drain query (serialized, from upstream): the bursts in flight are finished and pushed
   * (under the stream lock, which the retirer takes too) */
  if (GST_QUERY_TYPE (query) == GST_QUERY_DRAIN && pad == self->sinkpad) {
    GST_PAD_STREAM_LOCK (pad);
    backend_retire_all (self);
    GST_PAD_STREAM_UNLOCK (pad);
  }
  if (gpu->query && gpu->query (self, query))
    return TRUE;
  return gst_pad_query_default (pad, parent, query);
}

static GstStateChangeReturn
gst_daqiri_reorder_change_state (GstElement *element, GstStateChange transition)
{
  GstDaqiriReorder *self = GST_DAQIRI_REORDER (element);
  const ReorderBackendClass *gpu = reorder_backend_lookup (GST_DAQIRI_MEMORY_CUDA);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_NULL_TO_READY && gpu && gpu->open)
    gpu->open (self);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    if (!start_reorder (self)) {
      stop_reorder (self);
      return GST_STATE_CHANGE_FAILURE;
    }
    timer_start (self);
  }
  ret = GST_ELEMENT_CLASS (gst_daqiri_reorder_parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    timer_stop (self);
    stop_reorder (self);
  }
  if (transition == GST_STATE_CHANGE_READY_TO_NULL) {
    GST_OBJECT_LOCK (self);
    gst_clear_object (&self->cuda_context);
    GST_OBJECT_UNLOCK (self);
  }
  return ret;
}

static GstStructure *
make_stats (GstDaqiriReorder *self)
{
  GST_OBJECT_LOCK (self);
  GstStructure *s = gst_structure_new ("daqirireorder-stats", "packets", G_TYPE_UINT64,
      self->st_packets, "batches", G_TYPE_UINT64, self->st_batches, "complete", G_TYPE_UINT64,
      self->st_complete, "flushed", G_TYPE_UINT64, self->st_flushed, "pushed", G_TYPE_UINT64,
      self->st_pushed, "skipped", G_TYPE_UINT64, self->st_skipped, "missing", G_TYPE_UINT64,
      self->st_missing, "duplicates", G_TYPE_UINT64, self->st_duplicates, "late", G_TYPE_UINT64,
      self->st_late, "short", G_TYPE_UINT64, self->st_short, "no-frame", G_TYPE_UINT64,
      self->st_no_frame, "submissions", G_TYPE_UINT64, self->st_submissions, NULL);
  GST_OBJECT_UNLOCK (self);
  return s;
}

/* the properties kept as plain members (the packet fields: gst_daqiri_field_set/get) */
G_STATIC_ASSERT (sizeof (DqElemType) == sizeof (gint) && sizeof (DqByteOrder) == sizeof (gint));
G_STATIC_ASSERT (sizeof (GstVideoFormat) == sizeof (gint));
static const GstDaqiriMember reorder_members[] = {
  GST_DAQIRI_MEMBER (PROP_INPUT_TYPE, GstDaqiriReorder, cfg.input_type),
  GST_DAQIRI_MEMBER (PROP_OUTPUT_TYPE, GstDaqiriReorder, cfg.output_type),
  GST_DAQIRI_MEMBER (PROP_BYTE_ORDER, GstDaqiriReorder, cfg.byte_order),
  GST_DAQIRI_MEMBER (PROP_WINDOW, GstDaqiriReorder, cfg.window),
  GST_DAQIRI_MEMBER (PROP_TIMEOUT, GstDaqiriReorder, timeout),
  GST_DAQIRI_MEMBER (PROP_MEMORY, GstDaqiriReorder, memory),
  GST_DAQIRI_MEMBER (PROP_VIDEO_FORMAT, GstDaqiriReorder, video_format),
  GST_DAQIRI_MEMBER (PROP_WIDTH, GstDaqiriReorder, width),
  GST_DAQIRI_MEMBER (PROP_HEIGHT, GstDaqiriReorder, height),
  GST_DAQIRI_MEMBER (PROP_MAX_INFLIGHT, GstDaqiriReorder, max_inflight),
  GST_DAQIRI_MEMBER (PROP_SUBMIT_PACKETS, GstDaqiriReorder, submit_packets),
};

static void
gst_daqiri_reorder_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstDaqiriReorder *self = GST_DAQIRI_REORDER (object);
  DqReorderConfig *cfg = &self->cfg;

  GST_OBJECT_LOCK (self);
  if (gst_daqiri_field_set (cfg, PROP_SEQ_OFFSET, prop_id, value)) {
    GST_OBJECT_UNLOCK (self);
    return;
  }
  if (prop_id == PROP_FRAMERATE) {
    self->fps_n = gst_value_get_fraction_numerator (value);
    self->fps_d = gst_value_get_fraction_denominator (value);
  } else if (!gst_daqiri_member_set (
                 self, reorder_members, G_N_ELEMENTS (reorder_members), prop_id, value)) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_daqiri_reorder_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstDaqiriReorder *self = GST_DAQIRI_REORDER (object);
  DqReorderConfig *cfg = &self->cfg;

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (self));
    return;
  }
  GST_OBJECT_LOCK (self);
  if (gst_daqiri_field_get (cfg, PROP_SEQ_OFFSET, prop_id, value)) {
    GST_OBJECT_UNLOCK (self);
    return;
  }
  if (prop_id == PROP_FRAMERATE) {
    gst_value_set_fraction (value, self->fps_n, self->fps_d);
  } else if (!gst_daqiri_member_get (
                 self, reorder_members, G_N_ELEMENTS (reorder_members), prop_id, value)) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_daqiri_reorder_finalize (GObject *object)
{
  GstDaqiriReorder *self = GST_DAQIRI_REORDER (object);
  timer_stop (self);
  stop_reorder (self);
  gst_clear_object (&self->cuda_context);
  g_mutex_clear (&self->t_lock);
  g_cond_clear (&self->t_cond);
  G_OBJECT_CLASS (gst_daqiri_reorder_parent_class)->finalize (object);
}

static void
gst_daqiri_reorder_init (GstDaqiriReorder *self)
{
  dq_reorder_config_init (&self->cfg);
  self->video_format = GST_VIDEO_FORMAT_UNKNOWN;
  self->fps_d = 1;
  self->max_inflight = REORDER_DEFAULT_INFLIGHT;
  self->submit_packets = REORDER_DEFAULT_SUBMIT_PACKETS;
  g_mutex_init (&self->t_lock);
  g_cond_init (&self->t_cond);
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad, gst_daqiri_reorder_chain);
  gst_pad_set_event_function (self->sinkpad, gst_daqiri_reorder_sink_event);
  gst_pad_set_query_function (self->sinkpad, gst_daqiri_reorder_query);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_pad_set_query_function (self->srcpad, gst_daqiri_reorder_query);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
}

static void
gst_daqiri_reorder_class_init (GstDaqiriReorderClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  DqReorderConfig d;

  GST_DEBUG_CATEGORY_INIT (daqirireorder_debug, "daqirireorder", 0, "daqiri packet reorder");
  dq_reorder_config_init (&d);

  gobject_class->set_property = gst_daqiri_reorder_set_property;
  gobject_class->get_property = gst_daqiri_reorder_get_property;
  gobject_class->finalize = gst_daqiri_reorder_finalize;
  element_class->change_state = gst_daqiri_reorder_change_state;
  element_class->set_context = gst_daqiri_reorder_set_context;

  gst_daqiri_install_field_properties (gobject_class, PROP_SEQ_OFFSET, &d, NULL);
  g_object_class_install_property (gobject_class, PROP_INPUT_TYPE,
      g_param_spec_enum ("input-type", "Input type",
          "Element type of the payload (same, int4, int8, int16, int32)",
          GST_TYPE_DAQIRI_ELEMENT_TYPE, d.input_type, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_OUTPUT_TYPE,
      g_param_spec_enum ("output-type", "Output type",
          "Element type of the frame (same, fp16, bf16, fp32, fp64, int32)",
          GST_TYPE_DAQIRI_ELEMENT_TYPE, d.output_type, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_BYTE_ORDER,
      g_param_spec_enum ("byte-order", "Byte order", "Byte order of multi-byte input elements",
          GST_TYPE_DAQIRI_BYTE_ORDER, d.byte_order, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_WINDOW,
      g_param_spec_uint ("window", "Window",
          "Batches open at once (at most half the batch-id range); 0: default. memory=cuda "
          "is fastest when it covers the batches one burst spans (packets beyond it take a "
          "serial path)",
          0, DQ_REORDER_MAX_WINDOW, d.window, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_TIMEOUT,
      g_param_spec_uint64 ("timeout", "Timeout",
          "Flush (flag FLUSHED) the oldest partial batch once its first burst's PTS is more "
          "than this many ns behind a newer burst's PTS or, in PLAYING, the clock's running "
          "time; 0: never",
          0, G_MAXUINT64, 0, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_MEMORY,
      g_param_spec_enum ("memory", "Memory",
          "Where frames are made: system (CPU twin of the kernels) or cuda (GPU kernels, "
          "frames in GPU memory with caps feature memory:DaqiriCUDA; needs a build with CUDA "
          "and a GPU). Both give the same bytes",
          GST_TYPE_DAQIRI_MEMORY, GST_DAQIRI_MEMORY_SYSTEM, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_VIDEO_FORMAT,
      g_param_spec_enum ("video-format", "Video format",
          "Push frames as raw video (video/x-raw) of this format instead of "
          "application/x-daqiri-frame: a packed format of one plane (UYVY, YUY2, RGBA, BGRA, "
          "RGBx, BGRx, ARGB, ABGR, RGB, BGR, GRAY8, GRAY16_LE, GRAY16_BE, UYVP; not gray or UYVP "
          "with memory=cuda), rows packed in the frame; or I422_10LE (i422-10le): the frame "
          "holds 10-bit 4:2:2 pgroups as SMPTE ST 2110-20 carries them (UYVP bytes: 5 per 2 "
          "pixels, rows without padding, width even), unpacked into 16-bit planes. With "
          "memory=cuda the frames are GstCudaMemory of the pipeline's CUDA context (for "
          "cudadownload and the nvcodec elements). unknown: not video",
          GST_TYPE_VIDEO_FORMAT, GST_VIDEO_FORMAT_UNKNOWN, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_WIDTH,
      g_param_spec_uint ("width", "Width",
          "Picture width in pixels (with video-format); "
          "width x height x pixel size must be the frame size (UYVP and I422_10LE: "
          "width x height x 5/2 bytes, width even; UYVP: a multiple of 8)",
          0, G_MAXINT, 0, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_HEIGHT,
      g_param_spec_uint ("height", "Height", "Picture height in rows (with video-format)", 0,
          G_MAXINT, 0, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_FRAMERATE,
      gst_param_spec_fraction ("framerate", "Frame rate",
          "Frame rate put in the video caps (0/1: variable)", 0, 1, G_MAXINT, 1, 0, 1,
          GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_MAX_INFLIGHT,
      g_param_spec_uint ("max-inflight", "Bursts in flight",
          "memory=cuda: bursts whose GPU work may still run while the next bursts are taken "
          "from upstream (their frames are pushed, in order, once it is done: when more bursts "
          "come, or 0.2-0.4 ms after upstream goes quiet); 1: each burst's GPU work is awaited "
          "before the next burst is taken (the least latency, the lowest rate). With a "
          "timeout, 1 is used (the timeout is checked on each burst's result)",
          1, REORDER_MAX_INFLIGHT, REORDER_DEFAULT_INFLIGHT, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_SUBMIT_PACKETS,
      g_param_spec_uint ("submit-packets", "Packets a submission",
          "memory=cuda with daqirisrc memory=cuda bursts: a burst that comes while earlier "
          "bursts' GPU work still runs waits, and the next bursts of the same ring join it, "
          "up to this many packets in one kernel launch (fewer launches for small bursts; "
          "each burst keeps its own timestamp). A burst that finds the GPU idle, or has this "
          "many packets, goes at once. 0: every burst on its own",
          0, 65536, REORDER_DEFAULT_SUBMIT_PACKETS, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "packets, batches, complete, flushed, pushed, skipped, missing (slots), duplicates, "
          "late, short, no-frame, submissions",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "daqiri packet reorder", "Filter/Network",
      "Reorders packet bursts by sequence number into frames (system or GPU memory)", "daqiri");
  gst_type_mark_as_plugin_api (GST_TYPE_DAQIRI_ELEMENT_TYPE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_DAQIRI_BYTE_ORDER, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_DAQIRI_MEMORY, 0);
  if (!gst_meta_get_info (GST_DAQIRI_FRAME_META_NAME)) {
    static const gchar *tags[] = { NULL };
    gst_meta_register_custom (GST_DAQIRI_FRAME_META_NAME, tags, NULL, NULL, NULL);
  }
}
