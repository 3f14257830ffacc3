/* GstCuda at run time (see gstdaqirigstcuda.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqirigstcuda.h"

#include <gmodule.h>

GST_DEBUG_CATEGORY_STATIC (daqirigstcuda_debug);
#define GST_CAT_DEFAULT daqirigstcuda_debug

#define GSTCUDA_LIBRARY "libgstcuda-1.0.so.0"

/* The calls used, with the signatures of GStreamer 1.22 (unchanged up to 1.28). A
 * GstCudaContext is a GstObject; a CUcontext out-parameter is a pointer. */
static struct
{
  gboolean (*load_library) (void);
  void (*memory_init_once) (void);
  gboolean (*ensure_element_context) (GstElement * element, gint device_id,
      GstObject ** ctx);
  gboolean (*handle_set_context) (GstElement * element, GstContext * context,
      gint device_id, GstObject ** ctx);
  gboolean (*handle_context_query) (GstElement * element, GstQuery * query,
      GstObject * ctx);
  gboolean (*context_push) (GstObject * ctx);
  gboolean (*context_pop) (gpointer * cuda_ctx);
  GstBufferPool *(*buffer_pool_new) (GstObject * ctx);
  gboolean (*is_cuda_memory) (GstMemory * mem);
} api;

static const gchar *load_failure;

static gboolean
resolve (GModule * module, const gchar * name, gpointer * fn)
{
  if (g_module_symbol (module, name, fn) && *fn != NULL)
    return TRUE;
  GST_WARNING ("%s has no %s", GSTCUDA_LIBRARY, name);
  return FALSE;
}

static gpointer
load_once (gpointer data)
{
  GST_DEBUG_CATEGORY_INIT (daqirigstcuda_debug, "daqirigstcuda", 0, "daqiri GstCuda loader");
  GModule *module = g_module_open (GSTCUDA_LIBRARY, G_MODULE_BIND_LAZY);
  if (module == NULL) {
    load_failure = GSTCUDA_LIBRARY " is not installed (Debian: gstreamer1.0-plugins-bad)";
    return NULL;
  }
  if (!resolve (module, "gst_cuda_load_library", (gpointer *) & api.load_library) ||
      !resolve (module, "gst_cuda_memory_init_once", (gpointer *) & api.memory_init_once) ||
      !resolve (module, "gst_cuda_ensure_element_context",
          (gpointer *) & api.ensure_element_context) ||
      !resolve (module, "gst_cuda_handle_set_context", (gpointer *) & api.handle_set_context) ||
      !resolve (module, "gst_cuda_handle_context_query",
          (gpointer *) & api.handle_context_query) ||
      !resolve (module, "gst_cuda_context_push", (gpointer *) & api.context_push) ||
      !resolve (module, "gst_cuda_context_pop", (gpointer *) & api.context_pop) ||
      !resolve (module, "gst_cuda_buffer_pool_new", (gpointer *) & api.buffer_pool_new) ||
      !resolve (module, "gst_is_cuda_memory", (gpointer *) & api.is_cuda_memory)) {
    load_failure = GSTCUDA_LIBRARY " lacks a call daqiri needs (GStreamer older than 1.22?)";
    g_module_close (module);
    return NULL;
  }
  g_module_make_resident (module);
  if (!api.load_library ()) {
    load_failure = "the CUDA driver library (libcuda.so.1) cannot be loaded";
    return NULL;
  }
  api.memory_init_once ();
  return GINT_TO_POINTER (1);
}

gboolean
gst_daqiri_gstcuda_load (const gchar ** why)
{
  static GOnce once = G_ONCE_INIT;
  gboolean ok = g_once (&once, load_once, NULL) != NULL;
  if (!ok && why)
    *why = load_failure;
  return ok;
}

gboolean
gst_daqiri_gstcuda_ensure_context (GstElement * element, GstObject ** context)
{
  return gst_daqiri_gstcuda_load (NULL) && api.ensure_element_context (element, -1, context);
}

void
gst_daqiri_gstcuda_set_context (GstElement * element, GstContext * context,
    GstObject ** holder)
{
  if (gst_daqiri_gstcuda_load (NULL))
    api.handle_set_context (element, context, -1, holder);
}

gboolean
gst_daqiri_gstcuda_context_query (GstElement * element, GstQuery * query,
    GstObject * context)
{
  return context != NULL && gst_daqiri_gstcuda_load (NULL) &&
      api.handle_context_query (element, query, context);
}

gboolean
gst_daqiri_gstcuda_push (GstObject * context)
{
  return context != NULL && gst_daqiri_gstcuda_load (NULL) && api.context_push (context);
}

void
gst_daqiri_gstcuda_pop (void)
{
  if (gst_daqiri_gstcuda_load (NULL))
    api.context_pop (NULL);
}

GstBufferPool *
gst_daqiri_gstcuda_pool_new (GstObject * context)
{
  return gst_daqiri_gstcuda_load (NULL) ? api.buffer_pool_new (context) : NULL;
}

gboolean
gst_daqiri_gstcuda_is_cuda_memory (GstMemory * mem)
{
  return gst_daqiri_gstcuda_load (NULL) && api.is_cuda_memory (mem);
}
