/* GstCuda at run time (see gstdaqirigstcuda.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqirigstcuda.h"

#include <gst/daqiri/daqiripacketmeta.h>

#include <gmodule.h>
#include <gst/video/video.h>

GST_DEBUG_CATEGORY_STATIC (daqirigstcuda_debug);
#define GST_CAT_DEFAULT daqirigstcuda_debug

#define GSTCUDA_LIBRARY "libgstcuda-1.0.so.0"

/* The calls used, with the signatures of GStreamer 1.22 (unchanged up to 1.28). A
 * GstCudaContext is a GstObject; a CUcontext out-parameter is a pointer. */
static struct {
  gboolean (*load_library) (void);
  void (*memory_init_once) (void);
  gboolean (*handle_set_context) (
      GstElement *element, GstContext *context, gint device_id, GstObject **ctx);
  gboolean (*handle_context_query) (GstElement *element, GstQuery *query, GstObject *ctx);
  gboolean (*context_push) (GstObject *ctx);
  gboolean (*context_pop) (gpointer *cuda_ctx);
  GstBufferPool *(*buffer_pool_new) (GstObject *ctx);
  gboolean (*is_cuda_memory) (GstMemory *mem);
  GstObject *(*context_new_wrapped) (gpointer cu_ctx, gint cu_dev);
  GstContext *(*context_new_cuda_context) (GstObject *ctx);
  /* the CUDA driver, for the device's primary context (CUresult is an int, CUdevice an int,
   * CUcontext a pointer) */
  int (*cu_init) (unsigned int flags);
  int (*cu_device_get) (gint *dev, int ordinal);
  int (*cu_primary_ctx_retain) (gpointer *ctx, gint dev);
  /* GStreamer >= 1.24 only (NULL before), same signature up to 1.28; CUdeviceptr is a
   * 64-bit integer, a GstCudaStream a pointer */
  GstMemory *(*alloc_wrapped) (GstAllocator *allocator, GstObject *ctx, gpointer stream,
      const GstVideoInfo *info, guint64 dev_ptr, gpointer user_data, GDestroyNotify notify);
} api;

static const gchar *load_failure;

static gboolean
resolve (GModule *module, const gchar *name, gpointer *fn)
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
  if (!resolve (module, "gst_cuda_load_library", (gpointer *) &api.load_library) ||
      !resolve (module, "gst_cuda_memory_init_once", (gpointer *) &api.memory_init_once) ||
      !resolve (module, "gst_cuda_handle_set_context", (gpointer *) &api.handle_set_context) ||
      !resolve (module, "gst_cuda_handle_context_query", (gpointer *) &api.handle_context_query) ||
      !resolve (module, "gst_cuda_context_push", (gpointer *) &api.context_push) ||
      !resolve (module, "gst_cuda_context_pop", (gpointer *) &api.context_pop) ||
      !resolve (module, "gst_cuda_buffer_pool_new", (gpointer *) &api.buffer_pool_new) ||
      !resolve (module, "gst_is_cuda_memory", (gpointer *) &api.is_cuda_memory) ||
      !resolve (module, "gst_cuda_context_new_wrapped", (gpointer *) &api.context_new_wrapped) ||
      !resolve (
          module, "gst_context_new_cuda_context", (gpointer *) &api.context_new_cuda_context)) {
    load_failure = GSTCUDA_LIBRARY " lacks a call daqiri needs (GStreamer older than 1.22?)";
    g_module_close (module);
    return NULL;
  }
  /* optional: added in 1.24 (1.22's allocation calls have other signatures and are not used) */
  if (!g_module_symbol (
          module, "gst_cuda_allocator_alloc_wrapped", (gpointer *) &api.alloc_wrapped))
    api.alloc_wrapped = NULL;
  g_module_make_resident (module);
  if (!api.load_library ()) {
    load_failure = "the CUDA driver library (libcuda.so.1) cannot be loaded";
    return NULL;
  }
  api.memory_init_once ();
  /* gst_cuda_load_library opened it: this only takes another reference */
  GModule *cuda = g_module_open ("libcuda.so.1", G_MODULE_BIND_LAZY);
  if (cuda == NULL || !resolve (cuda, "cuInit", (gpointer *) &api.cu_init) ||
      !resolve (cuda, "cuDeviceGet", (gpointer *) &api.cu_device_get) ||
      !resolve (cuda, "cuDevicePrimaryCtxRetain", (gpointer *) &api.cu_primary_ctx_retain)) {
    load_failure = "the CUDA driver library (libcuda.so.1) lacks cuDevicePrimaryCtxRetain";
    return NULL;
  }
  g_module_make_resident (cuda);
  return GINT_TO_POINTER (1);
}

gboolean
gst_daqiri_gstcuda_load (const gchar **why)
{
  static GOnce once = G_ONCE_INIT;
  gboolean ok = g_once (&once, load_once, NULL) != NULL;
  if (!ok && why)
    *why = load_failure;
  return ok;
}

/* Asks the neighbours (a context query on every pad's peer) for the pipeline's context. */
static gboolean
query_neighbours (GstElement *element, GstObject **holder)
{
  gboolean found = FALSE;
  GstIterator *it = gst_element_iterate_pads (element);
  GValue item = G_VALUE_INIT;
  while (!found && gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstPad *pad = g_value_get_object (&item);
    GstQuery *query = gst_query_new_context (GST_DAQIRI_CUDA_CONTEXT_TYPE);
    if (gst_pad_peer_query (pad, query)) {
      GstContext *ctx = NULL;
      gst_query_parse_context (query, &ctx);
      if (ctx) {
        api.handle_set_context (element, ctx, -1, holder);
        found = *holder != NULL;
      }
    }
    gst_query_unref (query);
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return found;
}

/* Finds or makes the context into *found (NULL on entry). */
static gboolean
find_or_make (GstElement *element, GstObject **found)
{
  if (query_neighbours (element, found))
    return TRUE;
  /* the application may hand one over while this message is posted */
  gst_element_post_message (
      element, gst_message_new_need_context (GST_OBJECT (element), GST_DAQIRI_CUDA_CONTEXT_TYPE));
  GST_OBJECT_LOCK (element);
  GstContext *app = gst_element_get_context_unlocked (element, GST_DAQIRI_CUDA_CONTEXT_TYPE);
  GST_OBJECT_UNLOCK (element);
  if (app) {
    api.handle_set_context (element, app, -1, found);
    gst_context_unref (app);
    if (*found != NULL)
      return TRUE;
  }
  /* none yet: one over device 0's primary context, the one the CUDA runtime (and so the
   * reorder kernels, and most CUDA libraries) use; then announce it to the pipeline. The
   * primary context stays retained for the process. */
  gint dev = 0;
  gpointer primary = NULL;
  if (api.cu_init (0) != 0 || api.cu_device_get (&dev, 0) != 0 ||
      api.cu_primary_ctx_retain (&primary, dev) != 0 || primary == NULL)
    return FALSE;
  *found = api.context_new_wrapped (primary, dev);
  if (*found == NULL)
    return FALSE;
  GstContext *announce = api.context_new_cuda_context (*found);
  gst_element_set_context (element, announce);
  gst_element_post_message (element, gst_message_new_have_context (GST_OBJECT (element), announce));
  return TRUE;
}

/* A reference to *holder (object lock), or NULL. */
static GstObject *
held (GstElement *element, GstObject **holder)
{
  GST_OBJECT_LOCK (element);
  GstObject *ctx = *holder ? gst_object_ref (*holder) : NULL;
  GST_OBJECT_UNLOCK (element);
  return ctx;
}

GstObject *
gst_daqiri_gstcuda_ensure_context (GstElement *element, GstObject **holder)
{
  if (!gst_daqiri_gstcuda_load (NULL))
    return NULL;
  GstObject *ctx = held (element, holder);
  if (ctx)
    return ctx;
  GstObject *found = NULL;
  if (!find_or_make (element, &found))
    return NULL;
  GST_OBJECT_LOCK (element);
  if (*holder == NULL) /* (set_context may have given one meanwhile: it wins) */
    *holder = gst_object_ref (found);
  ctx = gst_object_ref (*holder);
  GST_OBJECT_UNLOCK (element);
  gst_object_unref (found);
  return ctx;
}

void
gst_daqiri_gstcuda_set_context (GstElement *element, GstContext *context, GstObject **holder)
{
  if (g_strcmp0 (gst_context_get_context_type (context), GST_DAQIRI_CUDA_CONTEXT_TYPE) != 0 ||
      !gst_daqiri_gstcuda_load (NULL))
    return;
  GstObject *ctx = held (element, holder);
  api.handle_set_context (element, context, -1, &ctx);
  GST_OBJECT_LOCK (element);
  gst_clear_object (holder);
  *holder = ctx;
  GST_OBJECT_UNLOCK (element);
}

gboolean
gst_daqiri_gstcuda_context_query (GstElement *element, GstQuery *query, GstObject **holder)
{
  if (GST_QUERY_TYPE (query) != GST_QUERY_CONTEXT)
    return FALSE;
  /* (nothing held: nothing to answer, and no reason to load GstCuda) */
  GstObject *ctx = held (element, holder);
  gboolean answered = ctx != NULL && gst_daqiri_gstcuda_load (NULL) &&
      api.handle_context_query (element, query, ctx);
  gst_clear_object (&ctx);
  return answered;
}

gboolean
gst_daqiri_gstcuda_push (GstObject *context)
{
  return context != NULL && gst_daqiri_gstcuda_load (NULL) && api.context_push (context);
}

void
gst_daqiri_gstcuda_pop (void)
{
  if (gst_daqiri_gstcuda_load (NULL))
    api.context_pop (NULL);
}

gboolean
gst_daqiri_gstcuda_can_wrap (const gchar **why)
{
  if (!gst_daqiri_gstcuda_load (why))
    return FALSE;
  if (api.alloc_wrapped == NULL) {
    if (why)
      *why = "it needs GStreamer 1.24 or newer (gst_cuda_allocator_alloc_wrapped, missing "
             "from " GSTCUDA_LIBRARY ")";
    return FALSE;
  }
  return TRUE;
}

GstMemory *
gst_daqiri_gstcuda_wrap (GstObject *context, gpointer dev_ptr, gsize size, gboolean readonly,
    gpointer user_data, GDestroyNotify notify)
{
  if (!gst_daqiri_gstcuda_can_wrap (NULL) || context == NULL || dev_ptr == NULL || size == 0 ||
      size > G_MAXINT)
    return NULL;
  /* one row of `size` bytes: GstCuda takes pitch = stride[0] and height = size / pitch; the
   * stride is set exactly (GRAY8 would round it up to 4) */
  GstVideoInfo info;
  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_GRAY8, (guint) size, 1);
  info.stride[0] = (gint) size;
  info.size = size;
  GstMemory *mem = api.alloc_wrapped (
      NULL, context, NULL, &info, (guint64) (guintptr) dev_ptr, user_data, notify);
  if (mem && readonly)
    GST_MINI_OBJECT_FLAG_SET (mem, GST_MEMORY_FLAG_READONLY | GST_MEMORY_FLAG_NO_SHARE);
  return mem;
}

gboolean
gst_daqiri_gstcuda_peer_prefers (GstPad *pad, GstCaps *caps, GstCaps **gstcuda, gboolean *own_ok)
{
  *gstcuda = gst_caps_copy (caps);
  gst_caps_set_features (
      *gstcuda, 0, gst_caps_features_new (GST_DAQIRI_CAPS_FEATURE_MEMORY_CUDA, NULL));
  GstCaps *filter = gst_caps_copy (caps);
  gst_caps_append (filter, gst_caps_ref (*gstcuda));
  GstCaps *peer = gst_pad_peer_query_caps (pad, filter);
  gst_caps_unref (filter);
  gboolean want = peer && !gst_caps_is_empty (peer) &&
      gst_caps_features_contains (
          gst_caps_get_features (peer, 0), GST_DAQIRI_CAPS_FEATURE_MEMORY_CUDA);
  *own_ok = peer && gst_caps_can_intersect (peer, caps);
  gst_clear_caps (&peer);
  return want;
}

gboolean
gst_daqiri_gstcuda_fall_back (
    GstElement *element, const gchar *what, gboolean own_ok, const gchar *why)
{
  if (own_ok) {
    GST_INFO_OBJECT (
        element, "%s as %s, not GstCudaMemory: %s", what, GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA, why);
    return TRUE;
  }
  GST_ELEMENT_ERROR (element, CORE, NEGOTIATION,
      ("downstream takes the %s only as GstCudaMemory (%s), which cannot be made here: %s; "
       "allowed here: %s",
          what, GST_DAQIRI_CAPS_FEATURE_MEMORY_CUDA, why, GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA),
      (NULL));
  return FALSE;
}

GstBufferPool *
gst_daqiri_gstcuda_pool_new (GstObject *context)
{
  return gst_daqiri_gstcuda_load (NULL) ? api.buffer_pool_new (context) : NULL;
}

gboolean
gst_daqiri_gstcuda_is_cuda_memory (GstMemory *mem)
{
  return gst_daqiri_gstcuda_load (NULL) && api.is_cuda_memory (mem);
}
