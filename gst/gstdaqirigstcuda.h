/* GstCuda (libgstcuda-1.0 of gst-plugins-bad), loaded at run time: the CUDA context that a
 * pipeline shares ("gst.cuda.context"), and GstCudaMemory buffer pools, so that
 * daqirireorder's video frames go to cudadownload and the nvcodec elements without a copy.
 *
 * Loaded with g_module_open, not linked: the plugin builds without gst-plugins-bad's headers
 * and runs where that library is missing (then GstCudaMemory output is refused with the
 * reason). Only calls whose signatures are the same from GStreamer 1.22 to 1.28 are made. */
#ifndef GST_DAQIRI_GSTCUDA_H
#define GST_DAQIRI_GSTCUDA_H

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_DAQIRI_CUDA_CONTEXT_TYPE "gst.cuda.context"
#define GST_DAQIRI_CAPS_FEATURE_MEMORY_CUDA "memory:CUDAMemory"

/* Loads libgstcuda-1.0 and, through it, the CUDA driver, once. FALSE with *why (static text)
 * when either is missing. */
gboolean gst_daqiri_gstcuda_load (const gchar **why);

/* The pipeline's GstCudaContext (a GstObject), kept by an element in *holder under its object
 * lock. ensure_context: a reference to it, found or made: *holder, else asked of the
 * neighbours (context query), then of the application (need-context message), else made over
 * device 0's primary context and announced (have-context message); NULL when none can be had.
 * set_context and context_query: GstElement::set_context (other context types are ignored)
 * and the GST_QUERY_CONTEXT answer (FALSE: not answered). */
GstObject *gst_daqiri_gstcuda_ensure_context (GstElement *element, GstObject **holder);
void gst_daqiri_gstcuda_set_context (GstElement *element, GstContext *context, GstObject **holder);
gboolean gst_daqiri_gstcuda_context_query (
    GstElement *element, GstQuery *query, GstObject **holder);

/* Makes the context current on this thread (for CUDA runtime calls), and undoes it. */
gboolean gst_daqiri_gstcuda_push (GstObject *context);
void gst_daqiri_gstcuda_pop (void);

/* GstCudaMemory over memory daqiri owns (GStreamer >= 1.24: gst_cuda_allocator_alloc_wrapped,
 * found at run time; 1.22 has no such call). can_wrap: FALSE with *why (static text) where it
 * is missing. wrap: `size` bytes at dev_ptr (a pointer valid in the context: pinned, mapped,
 * portable host memory, or device memory of the context) as one row, read-only if asked;
 * notify (user_data) runs when the memory is freed. NULL on failure. */
gboolean gst_daqiri_gstcuda_can_wrap (const gchar **why);
GstMemory *gst_daqiri_gstcuda_wrap (GstObject *context, gpointer dev_ptr, gsize size,
    gboolean readonly, gpointer user_data, GDestroyNotify notify);

/* Whether the peer of @pad prefers @caps with the feature memory:CUDAMemory to @caps as they
 * are (a peer that takes either gets @caps as they are). *gstcuda: @caps with that feature (a
 * new reference); *own_ok: whether the peer takes @caps as they are. */
gboolean gst_daqiri_gstcuda_peer_prefers (
    GstPad *pad, GstCaps *caps, GstCaps **gstcuda, gboolean *own_ok);

/* Downstream prefers GstCudaMemory for @what ("frames", "bursts"), which cannot be had here
 * (@why): TRUE where it takes daqiri's own GPU memory too (@own_ok, from peer_prefers; logged),
 * else FALSE with a negotiation error posted that names @why and what is allowed. */
gboolean gst_daqiri_gstcuda_fall_back (
    GstElement *element, const gchar *what, gboolean own_ok, const gchar *why);

/* A GstCudaBufferPool of the context (configure it with video caps). */
GstBufferPool *gst_daqiri_gstcuda_pool_new (GstObject *context);
gboolean gst_daqiri_gstcuda_is_cuda_memory (GstMemory *mem);

G_END_DECLS

#endif
