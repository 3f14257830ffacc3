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
gboolean gst_daqiri_gstcuda_load (const gchar ** why);

/* The pipeline's GstCudaContext (a GstObject) into *context (left as it is when set): asked
 * of the neighbours (context query), then of the application (need-context message), else
 * made over device 0's primary CUDA context and announced (have-context message). */
gboolean gst_daqiri_gstcuda_ensure_context (GstElement * element, GstObject ** context);
/* GstElement::set_context and the GST_QUERY_CONTEXT answer, for elements holding one. */
void gst_daqiri_gstcuda_set_context (GstElement * element, GstContext * context,
    GstObject ** holder);
gboolean gst_daqiri_gstcuda_context_query (GstElement * element, GstQuery * query,
    GstObject * context);

/* Makes the context current on this thread (for CUDA runtime calls), and undoes it. */
gboolean gst_daqiri_gstcuda_push (GstObject * context);
void gst_daqiri_gstcuda_pop (void);

/* A GstCudaBufferPool of the context (configure it with video caps). */
GstBufferPool *gst_daqiri_gstcuda_pool_new (GstObject * context);
gboolean gst_daqiri_gstcuda_is_cuda_memory (GstMemory * mem);

G_END_DECLS

#endif
