/* The frames daqirireorder pushes, when they are not the backend's frames as they are: raw video
 * (the formats, the frame checked against the picture; I422_10LE unpacked from 10-bit 4:2:2
 * pgroups on the CPU or by a kernel; GstCudaMemory video of the pipeline's CUDA context), and
 * generic frames as GstCudaMemory (a GstCudaBufferPool's on GStreamer 1.22, daqiri's own
 * wrapped on 1.24 and later). The element itself is gstdaqirireorder.c. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqirireorder-priv.h"
#ifdef DQ_HAVE_CUDA
#include "gstdaqirigstcuda.h"
#endif

#include <string.h>

#define GST_CAT_DEFAULT daqirireorder_debug

/* The raw video formats (VIDEO_FORMATS and CUDA_VIDEO_FORMATS of the pad template): the frame
 * is the picture, packed in one plane, except for I422_10LE, whose frame holds the picture as
 * 10-bit 4:2:2 pgroups (daqiri-reorder.h) that are unpacked into its planes. */
static const struct {
  GstVideoFormat format;
  gboolean cuda; /* also with memory=cuda (GstCudaMemory takes it) */
} video_formats[] = {
  { GST_VIDEO_FORMAT_UYVY, TRUE },
  { GST_VIDEO_FORMAT_YUY2, TRUE },
  { GST_VIDEO_FORMAT_RGBA, TRUE },
  { GST_VIDEO_FORMAT_BGRA, TRUE },
  { GST_VIDEO_FORMAT_RGBx, TRUE },
  { GST_VIDEO_FORMAT_BGRx, TRUE },
  { GST_VIDEO_FORMAT_ARGB, TRUE },
  { GST_VIDEO_FORMAT_ABGR, TRUE },
  { GST_VIDEO_FORMAT_RGB, TRUE },
  { GST_VIDEO_FORMAT_BGR, TRUE },
  { GST_VIDEO_FORMAT_I422_10LE, TRUE },
  { GST_VIDEO_FORMAT_GRAY8, FALSE },
  { GST_VIDEO_FORMAT_GRAY16_LE, FALSE },
  { GST_VIDEO_FORMAT_GRAY16_BE, FALSE },
  { GST_VIDEO_FORMAT_UYVP, FALSE },
};

/* video-format/width/height/framerate -> self->vinfo and raw-video caps; FALSE
 * with an error posted when the frame does not make that picture. */
gboolean
reorder_video_setup (GstDaqiriReorder *self, GstVideoFormat format, guint width, guint height,
    gint fps_n, gint fps_d, guint64 frame_size)
{
  gboolean cuda = self->run_memory == GST_DAQIRI_MEMORY_CUDA;
  const gchar *name = gst_video_format_to_string (format);
  gboolean ok = FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (video_formats); i++)
    ok |= video_formats[i].format == format && (video_formats[i].cuda || !cuda);
  if (!ok) {
    GString *list = g_string_new (NULL);
    for (guint i = 0; i < G_N_ELEMENTS (video_formats); i++)
      if (video_formats[i].cuda || !cuda)
        g_string_append_printf (list, "%s%s", list->len ? ", " : "",
            gst_video_format_to_string (video_formats[i].format));
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("property 'video-format' is %s: allowed with memory=%s: %s", name ? name : "?",
            cuda ? "cuda" : "system", list->str),
        (NULL));
    g_string_free (list, TRUE);
    return FALSE;
  }
  if (width == 0 || height == 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("property 'video-format' is %s, but width %u x height %u is no picture: set both "
         "(1 .. %u)",
            name, width, height, G_MAXINT),
        (NULL));
    return FALSE;
  }
  gboolean pgroups = format == GST_VIDEO_FORMAT_UYVP || format == GST_VIDEO_FORMAT_I422_10LE;
  if (pgroups && (width & 1)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("property 'width' is %u: video-format %s takes 10-bit 4:2:2 pgroups of 2 pixels; "
         "allowed: even widths",
            width, name),
        (NULL));
    return FALSE;
  }
  if (!gst_video_info_set_format (&self->vinfo, format, width, height) ||
      self->vinfo.size > G_MAXUINT) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("a %s picture of %u x %u: allowed up to %u bytes", name, width, height, G_MAXUINT),
        (NULL));
    return FALSE;
  }
  if (format == GST_VIDEO_FORMAT_I422_10LE) {
    /* the frame holds the pgroups; the planes are made when the frame is pushed */
    guint64 packed = dq_uyvp_picture_size (width, height);
    if (packed != frame_size) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("a frame of %" G_GUINT64_FORMAT " bytes (packets-per-batch %u x payload %u) is not "
           "an I422_10LE picture of %u x %u carried as 10-bit 4:2:2 pgroups (%u*%u*5/2 = %" G_GUINT64_FORMAT
           " bytes): set width, height and the packet fields so that they "
           "agree",
              frame_size, self->run_cfg.packets_per_batch,
              dq_reorder_output_payload_size (&self->run_cfg), width, height, width, height,
              packed),
          (NULL));
      return FALSE;
    }
  } else {
    gsize row = (gsize) GST_VIDEO_INFO_PLANE_STRIDE (&self->vinfo, 0);
    if (format == GST_VIDEO_FORMAT_UYVP && row != (gsize) width / 2 * 5) {
      /* GstVideoInfo pads UYVP rows to 4 bytes; the frame has no room for that */
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("property 'width' is %u: UYVP rows of %u*5/2 = %u bytes are padded to %" G_GSIZE_FORMAT
           " bytes in GStreamer's UYVP layout, but the frame carries them "
           "without padding; allowed: widths that are a multiple of 8 (or "
           "video-format=i422-10le, which takes any even width)",
              width, width, width / 2 * 5, row),
          (NULL));
      return FALSE;
    }
    if (self->vinfo.size != frame_size || row * height != self->vinfo.size) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("a frame of %" G_GUINT64_FORMAT " bytes (packets-per-batch %u x payload %u) is not "
           "a %s picture of %u x %u (%" G_GSIZE_FORMAT " bytes, rows of %" G_GSIZE_FORMAT
           " bytes): set width, height and the packet fields so that they agree",
              frame_size, self->run_cfg.packets_per_batch,
              dq_reorder_output_payload_size (&self->run_cfg), name, width, height,
              self->vinfo.size, row),
          (NULL));
      return FALSE;
    }
  }
  GST_VIDEO_INFO_FPS_N (&self->vinfo) = fps_n;
  GST_VIDEO_INFO_FPS_D (&self->vinfo) = fps_d;
  self->out_caps = gst_video_info_to_caps (&self->vinfo);
  self->video = TRUE;
  return TRUE;
}

/* self->out_pool set up for out_caps with GstVideoMeta and started; FALSE with an error
 * posted. */
static gboolean
out_pool_start (GstDaqiriReorder *self)
{
  GstStructure *config = gst_buffer_pool_get_config (self->out_pool);
  gst_buffer_pool_config_set_params (config, self->out_caps, (guint) self->vinfo.size, 2, 0);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config (self->out_pool, config) ||
      !gst_buffer_pool_set_active (self->out_pool, TRUE)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("cannot make a pool of %sframes for %" GST_PTR_FORMAT,
            self->out_gstcuda ? "GstCudaMemory " : "", self->out_caps),
        (NULL));
    return FALSE;
  }
  return TRUE;
}

/* memory=system with I422_10LE: the planar frames come from a pool of their own, with
 * GstVideoMeta (the unpack writes the planes where the meta says). */
gboolean
reorder_system_video_setup (GstDaqiriReorder *self)
{
  self->out_pool = gst_video_buffer_pool_new ();
  return out_pool_start (self);
}

#ifdef DQ_HAVE_CUDA
/* The pipeline's CUDA context (self->cuda_context), found or made; a reference, or NULL. */
GstObject *
reorder_cuda_context_ensure (GstDaqiriReorder *self)
{
  return gst_daqiri_gstcuda_ensure_context (GST_ELEMENT (self), &self->cuda_context);
}

/* memory=cuda with raw video: frames go out as GstCudaMemory of the pipeline's context. */
gboolean
reorder_cuda_video_setup (GstDaqiriReorder *self)
{
  const gchar *why = NULL;
  if (!gst_daqiri_gstcuda_load (&why)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("raw video in GPU memory (memory=cuda with video-format) needs GstCuda: %s; "
         "allowed without it: memory=system, or no video-format",
            why),
        (NULL));
    return FALSE;
  }
  GstObject *ctx = reorder_cuda_context_ensure (self);
  if (!ctx) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("no CUDA context for the pipeline (gst.cuda.context) could be found or made"), (NULL));
    return FALSE;
  }

  gst_caps_set_features (
      self->out_caps, 0, gst_caps_features_new (GST_DAQIRI_CAPS_FEATURE_MEMORY_CUDA, NULL));
  self->out_pool = gst_daqiri_gstcuda_pool_new (ctx);
  self->out_gstcuda = TRUE;
  gst_object_unref (ctx);
  return out_pool_start (self);
}

/* memory=cuda, generic frames: GstCudaMemory (memory:CUDAMemory) when downstream prefers it
 * to daqiri's own GPU memory (memory:DaqiriCUDA, the default: what an unconstrained peer
 * gets), filled in place. With GStreamer >= 1.24 daqiri's frame itself goes out wrapped as
 * GstCudaMemory of exactly its size (gst_cuda_allocator_alloc_wrapped). GstCuda 1.22 wraps
 * nothing and allocates video layouts only: the GPU backend fills frames of a GstCudaBufferPool of
 * the pipeline's context, each one row of RGBA pixels (ceil(bytes / 4) wide) cut to the
 * frame's size, its GstVideoMeta describing that row. FALSE with an error posted when
 * downstream takes GstCudaMemory only and it cannot be had. */
gboolean
reorder_cuda_frames_setup (GstDaqiriReorder *self, guint64 frame_size, guint n_frames)
{
  GstCaps *gstcuda;
  gboolean own_ok;
  if (!gst_daqiri_gstcuda_peer_prefers (self->srcpad, self->out_caps, &gstcuda, &own_ok)) {
    gst_caps_unref (gstcuda);
    return TRUE;
  }

  const gchar *why = NULL;
  GstObject *ctx = NULL;
  if (!gst_daqiri_gstcuda_load (&why) || !(ctx = reorder_cuda_context_ensure (self))) {
    gst_caps_unref (gstcuda);
    return gst_daqiri_gstcuda_fall_back (GST_ELEMENT (self), "frames", own_ok,
        why ? why : "no CUDA context (gst.cuda.context) could be found or made");
  }
  gst_caps_replace (&self->out_caps, gstcuda);
  gst_caps_unref (gstcuda);
  self->gstcuda_frames = TRUE;
  if (gst_daqiri_gstcuda_can_wrap (NULL)) {
    /* daqiri's frames (the default pool, made in the context), wrapped when pushed */
    gst_object_unref (ctx);
    self->gstcuda_wrap = TRUE;
    return TRUE;
  }

  GstVideoInfo row;
  gst_video_info_set_format (&row, GST_VIDEO_FORMAT_RGBA, (guint) ((frame_size + 3) / 4), 1);
  GstCaps *row_caps = gst_video_info_to_caps (&row);
  gst_caps_set_features (
      row_caps, 0, gst_caps_features_new (GST_DAQIRI_CAPS_FEATURE_MEMORY_CUDA, NULL));
  self->pool = gst_daqiri_gstcuda_pool_new (ctx);
  gst_object_unref (ctx);
  GstStructure *config = gst_buffer_pool_get_config (self->pool);
  gst_buffer_pool_config_set_params (config, row_caps, (guint) row.size, n_frames, 0);
  gboolean ok = gst_buffer_pool_set_config (self->pool, config) &&
      gst_buffer_pool_set_active (self->pool, TRUE);
  gst_caps_unref (row_caps);
  if (!ok) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("cannot make a pool of GstCudaMemory frames of %" G_GUINT64_FORMAT " bytes", frame_size),
        (NULL));
    return FALSE;
  }
  return TRUE;
}

/* GStreamer 1.22's GstCudaMemory sizes its host staging copy (for CPU maps) by the memory's
 * size when first mapped, but downloads the whole pitched allocation: a pool frame cut to the
 * frame's size (cuda_frames_setup) would fail every CPU map downstream (GstMemory then maps a
 * full copy instead). So each pool memory is mapped once at its whole size before its first
 * use, which makes the staging copy whole; later maps reuse it. */
void
reorder_gstcuda_staging_whole (GstMemory *mem)
{
  static GQuark done;
  if (!done)
    done = g_quark_from_static_string ("daqiri-gstcuda-staging");
  GstMapInfo map;
  if (gst_mini_object_get_qdata (GST_MINI_OBJECT_CAST (mem), done) ||
      !gst_memory_map (mem, &map, GST_MAP_READ))
    return;
  gst_memory_unmap (mem, &map);
  gst_mini_object_set_qdata (GST_MINI_OBJECT_CAST (mem), done, GINT_TO_POINTER (1), NULL);
}
#endif

/* memory=system I422_10LE: the pgroups of the frame of `slot` unpacked into the planes of
 * `out` (a frame of the out_pool), where its GstVideoMeta puts them. */
static GstFlowReturn
unpack_cpu (GstDaqiriReorder *self, FrameSlot *slot, GstBuffer *out)
{
  GstVideoFrame f;
  if (!gst_video_frame_map (&f, &self->vinfo, out, GST_MAP_WRITE)) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("cannot map an I422_10LE frame"), (NULL));
    return GST_FLOW_ERROR;
  }
  guint w = GST_VIDEO_INFO_WIDTH (&self->vinfo), h = GST_VIDEO_INFO_HEIGHT (&self->vinfo);
  gint ys = GST_VIDEO_FRAME_PLANE_STRIDE (&f, 0), us = GST_VIDEO_FRAME_PLANE_STRIDE (&f, 1),
       vs = GST_VIDEO_FRAME_PLANE_STRIDE (&f, 2);
  int r = -1;
  if (ys > 0 && us > 0 && vs > 0 && slot->map.size >= dq_uyvp_picture_size (w, h))
    r = dq_unpack_uyvp_to_i422_10 (slot->map.data, w, h, GST_VIDEO_FRAME_PLANE_DATA (&f, 0),
        (size_t) ys, GST_VIDEO_FRAME_PLANE_DATA (&f, 1), (size_t) us,
        GST_VIDEO_FRAME_PLANE_DATA (&f, 2), (size_t) vs);
  gst_video_frame_unmap (&f);
  if (r != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("cannot unpack a frame of %" G_GSIZE_FORMAT " bytes into an I422_10LE frame of %u x "
         "%u with plane strides %d, %d, %d",
            slot->map.size, w, h, ys, us, vs),
        (NULL));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

#ifdef DQ_HAVE_CUDA
/* Bytes a plane of `rows` rows of `row` bytes at `offset`, `pitch` apart, needs; 0 when the
 * pitch is not positive or is narrower than a row (no such plane can be written). */
static guint64
plane_extent (gsize offset, gint pitch, gsize row, guint rows)
{
  if (pitch <= 0 || (gsize) pitch < row || rows == 0)
    return 0;
  return (guint64) offset + (guint64) (rows - 1) * (guint64) pitch + row;
}

/* GstCudaMemory video: the device frame of `slot` copied (a packed format) or unpacked
 * (I422_10LE) into `out`, a GstCudaMemory frame of the out_pool, at the pitches and offsets of
 * its GstVideoMeta; done (synchronized) when this returns. */
static GstFlowReturn
cuda_video_fill (GstDaqiriReorder *self, FrameSlot *slot, GstBuffer *out)
{
  GstMapInfo map;
  if (!gst_buffer_map (out, &map, GST_MAP_WRITE | GST_DAQIRI_MAP_CUDA)) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("cannot map a GstCudaMemory frame"), (NULL));
    return GST_FLOW_ERROR;
  }
  GstVideoMeta *vmeta = gst_buffer_get_video_meta (out);
  const GstVideoInfo *vi = &self->vinfo;
  guint w = GST_VIDEO_INFO_WIDTH (vi), h = GST_VIDEO_INFO_HEIGHT (vi);
  const gboolean unpack = reorder_unpacks (self);
  guint n_planes = unpack ? 3 : 1;
  gsize off[3] = { 0 }, row[3] = { 0 };
  gint pitch[3] = { 0 };
  for (guint i = 0; i < n_planes; i++) {
    off[i] = vmeta ? vmeta->offset[i] : GST_VIDEO_INFO_PLANE_OFFSET (vi, i);
    pitch[i] = vmeta ? vmeta->stride[i] : GST_VIDEO_INFO_PLANE_STRIDE (vi, i);
    /* I422_10LE: 16-bit samples, w in Y and w / 2 in U and V; packed: the frame's rows */
    row[i] = unpack ? (i == 0 ? 2 * (gsize) w : w) : (gsize) GST_VIDEO_INFO_PLANE_STRIDE (vi, 0);
    guint64 need = plane_extent (off[i], pitch[i], row[i], h);
    if (need == 0 || need > map.size) {
      gst_buffer_unmap (out, &map);
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
          ("a GstCudaMemory frame of %" G_GSIZE_FORMAT " bytes cannot hold plane %u of %s "
           "%u x %u (offset %" G_GSIZE_FORMAT ", pitch %d, rows of %" G_GSIZE_FORMAT " bytes)",
              map.size, i, gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (vi)), w, h, off[i],
              pitch[i], row[i]),
          (NULL));
      return GST_FLOW_ERROR;
    }
  }
  guint8 *dst = map.data;
  int r;
  const gchar *what;
  if (unpack) {
    /* on the default stream, not the reorder context's (non-blocking) one, whose later bursts
     * in flight the wait would wait for too; the backend's frame is complete (its completion was
     * taken), and the pushed frame final */
    what = "unpacking 10-bit 4:2:2 pgroups into a GstCudaMemory I422_10LE frame";
    r = dq_cuda_unpack_uyvp_to_i422_10 (slot->map.data, w, h, dst + off[0], (size_t) pitch[0],
        dst + off[1], (size_t) pitch[1], dst + off[2], (size_t) pitch[2], NULL);
    if (r == 0)
      r = dq_cuda_stream_synchronize (NULL);
  } else {
    what = "GPU copy into a GstCudaMemory frame";
    r = dq_cuda_memcpy2d (dst + off[0], (size_t) pitch[0], slot->map.data, row[0], row[0], h);
  }
  gst_buffer_unmap (out, &map);
  if (r != 0) {
    GST_ELEMENT_ERROR (
        self, RESOURCE, FAILED, ("%s failed: %s", what, dq_cuda_last_error ()), (NULL));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}
#endif

/* The buffer pushed for the frame of `slot` when frames go out through the out_pool: one of
 * its frames, filled from the backend's. */
GstFlowReturn
reorder_output_frame (GstDaqiriReorder *self, FrameSlot *slot, GstBuffer **out)
{
  GstFlowReturn ret = gst_buffer_pool_acquire_buffer (self->out_pool, out, NULL);
  if (ret != GST_FLOW_OK)
    return ret;
#ifdef DQ_HAVE_CUDA
  if (self->out_gstcuda)
    ret = cuda_video_fill (self, slot, *out);
  else
#endif
    ret = unpack_cpu (self, slot, *out);
  if (ret != GST_FLOW_OK)
    gst_clear_buffer (out);
  return ret;
}

#ifdef DQ_HAVE_CUDA
/* GStreamer >= 1.24, generic frames: `frame` (daqiri GPU memory) as GstCudaMemory of the
 * pipeline's context; the GstCudaMemory holds it and gives it back to its pool when freed.
 * NULL with an error posted (frame released) when that fails. */
GstBuffer *
reorder_wrap_gstcuda (GstDaqiriReorder *self, GstBuffer *frame)
{
  GstMapInfo map;
  GstMemory *mem = NULL;
  gsize size = gst_buffer_get_size (frame);
  if (gst_buffer_map (frame, &map, GST_MAP_READ | GST_DAQIRI_MAP_CUDA)) {
    gpointer dev = map.data; /* stays valid while the buffer lives */
    gst_buffer_unmap (frame, &map);
    GstObject *ctx = gst_daqiri_gstcuda_ensure_context (GST_ELEMENT (self), &self->cuda_context);
    if (ctx) {
      mem =
          gst_daqiri_gstcuda_wrap (ctx, dev, size, FALSE, frame, (GDestroyNotify) gst_buffer_unref);
      gst_object_unref (ctx);
    }
  }
  if (mem == NULL) {
    gst_buffer_unref (frame);
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("cannot wrap a frame of %" G_GSIZE_FORMAT " bytes as GstCudaMemory", size), (NULL));
    return NULL;
  }
  GstBuffer *out = gst_buffer_new ();
  gst_buffer_append_memory (out, mem);
  return out;
}
#endif
