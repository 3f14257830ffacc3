/* daqirireorder's CPU backend (memory=system): the CPU twin of the kernels (DqReorderCpu of
 * cuda/daqiri-reorder.h) behind gstdaqirireorder-backend.h. Each submission (a burst, a flush)
 * is done when submit returns; the next poll returns its completion, whose pointers stay valid
 * until the next submission. A burst in GPU memory is copied to the host first (with the GPU
 * backend's copy, in builds that have one). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqirireorder-backend.h"

#define GST_CAT_DEFAULT daqirireorder_debug

typedef struct {
  ReorderBackend base;
  DqReorderCpu *ctx;
  DqReorderCompletion done; /* the completion of the last submission ... */
  gboolean pending;         /* ... not polled yet */
  guint8 *host_copy;        /* a GPU burst copied to the host */
  gsize host_copy_size;
} ReorderCpu;

#define CPU(be) ((ReorderCpu *) (be))

static ReorderBackend *
cpu_create (GstDaqiriReorder *self)
{
  char msg[256];
  DqReorderCpu *ctx = dq_reorder_cpu_new (&self->run_cfg, msg, sizeof msg);
  if (!ctx) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", msg), (NULL));
    return NULL;
  }
  ReorderCpu *c = g_new0 (ReorderCpu, 1);
  c->ctx = ctx;
  c->base.max_inflight = 1;
  return &c->base;
}

static void
cpu_destroy (ReorderBackend *be)
{
  ReorderCpu *c = CPU (be);
  dq_reorder_cpu_free (c->ctx);
  g_free (c->host_copy);
  g_free (c);
}

static int
cpu_add_frame (ReorderBackend *be, void *frame, void *user)
{
  return dq_reorder_cpu_add_frame (CPU (be)->ctx, frame, user);
}

/* The bytes of a burst in GPU memory, on the host (in host_copy); NULL (logged) when they
 * cannot be had. */
static const guint8 *
cpu_host_bytes (ReorderCpu *c, const guint8 *data, gsize size)
{
  GstDaqiriReorder *self = c->base.element;
  const ReorderBackendClass *gpu = reorder_backend_lookup (GST_DAQIRI_MEMORY_CUDA);
  const gchar *why = NULL;
  if (gpu == NULL || gpu->copy_to_host == NULL) {
    GST_ERROR_OBJECT (self, "a burst in GPU memory, but this build has no CUDA");
    return NULL;
  }
  if (size > c->host_copy_size) {
    g_free (c->host_copy);
    c->host_copy_size = MAX (size, 2 * c->host_copy_size);
    c->host_copy = g_malloc (c->host_copy_size);
  }
  if (size > 0 && !gpu->copy_to_host (c->host_copy, data, size, &why)) {
    GST_ERROR_OBJECT (self, "copying a GPU burst to the host failed: %s", why);
    return NULL;
  }
  return c->host_copy;
}

static int
cpu_submit (ReorderBackend *be, GstBuffer *buf, GstMapInfo *map, gboolean on_gpu,
    const DqReorderPacket *pkts, const guint32 *words, guint word_shift, guint n, guint64 timestamp,
    guint frames)
{
  ReorderCpu *c = CPU (be);
  const guint8 *data = on_gpu ? cpu_host_bytes (c, map->data, map->size) : map->data;
  int r = -1;
  if (data)
    r = dq_reorder_cpu_push (c->ctx, data, map->size, pkts, n, &c->done);
  gst_buffer_unmap (buf, map);
  gst_buffer_unref (buf);
  c->pending = r == 0;
  be->submissions += r == 0;
  return r;
}

static int
cpu_flush (ReorderBackend *be, DqFlushMode mode)
{
  ReorderCpu *c = CPU (be);
  int r = dq_reorder_cpu_flush (c->ctx, mode, &c->done);
  c->pending = r == 0;
  return r;
}

static int
cpu_poll (ReorderBackend *be, gboolean wait, DqReorderCompletion *out)
{
  ReorderCpu *c = CPU (be);
  if (!c->pending)
    return 0;
  *out = c->done;
  c->pending = FALSE;
  return 1;
}

static guint
cpu_in_flight (ReorderBackend *be, guint *frames)
{
  if (frames)
    *frames = 0;
  return CPU (be)->pending ? 1 : 0;
}

static const gchar *
cpu_error (ReorderBackend *be)
{
  return "the CPU twin failed";
}

const ReorderBackendClass reorder_backend_cpu = {
  .name = "CPU",
  .create = cpu_create,
  .destroy = cpu_destroy,
  .add_frame = cpu_add_frame,
  .submit = cpu_submit,
  .flush = cpu_flush,
  .poll = cpu_poll,
  .in_flight = cpu_in_flight,
  .error = cpu_error,
};
