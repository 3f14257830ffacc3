/* Registering memory with the device (see mlx5-mr.h). */
#include "mlx5-mr.h"

#include <unistd.h>

/* GPU device memory through a dma-buf of it (GPUDirect RDMA without nvidia-peermem). */
static gboolean
mr_register_dmabuf (const Mlx5PortOps *ops, gpointer dev, void *addr, gsize size,
    const DqRingMemory *m, guint32 *lkey, gpointer *mr, GError **error)
{
  int fd = -1;
  guint64 offset = 0;

  if (!m->export_dmabuf (addr, size, &fd, &offset, m->user, error))
    return FALSE;
  gboolean ok = ops->mr_reg_dmabuf (dev, fd, offset, size, addr, lkey, mr, error);
  close (fd); /* the registration holds the dma-buf */
  return ok;
}

/* GPU device memory on a ConnectX: by dma-buf, else by its device pointer, which a
 * ConnectX takes where nvidia-peermem is loaded. */
static gboolean
mr_register_gpu (const Mlx5PortOps *ops, gpointer dev, const char *what, void *addr, gsize size,
    const DqRingMemory *m, guint32 *lkey, gpointer *mr, DqRingPlacement *placement, GError **error)
{
  GError *dmabuf_error = NULL, *peer_error = NULL;

  *placement = DQ_RING_GPU_DMABUF;
  if (mr_register_dmabuf (ops, dev, addr, size, m, lkey, mr, &dmabuf_error))
    return TRUE;
  *placement = DQ_RING_GPU_PEERMEM;
  if (ops->mr_reg (dev, addr, size, lkey, mr, &peer_error)) {
    g_info ("%s: GPU memory registered by its device pointer (nvidia-peermem): the dma-buf "
            "way failed: %s",
        what, dmabuf_error->message);
    g_clear_error (&dmabuf_error);
    return TRUE;
  }
  g_set_error (error, DQ_ERROR, dmabuf_error->code,
      "%s; registering the device pointer instead (nvidia-peermem) failed too: %s",
      dmabuf_error->message, peer_error->message);
  g_clear_error (&dmabuf_error);
  g_clear_error (&peer_error);
  return FALSE;
}

gboolean
mlx5_mr_register (const Mlx5PortOps *ops, gpointer dev, const char *what, void *addr, gsize size,
    const DqRingMemory *m, guint32 *lkey, gpointer *mr, DqRingPlacement *placement, GError **error)
{
  DqRingPlacement where;
  if (placement == NULL)
    placement = &where;

  if (m == NULL || m->export_dmabuf == NULL) {
    *placement = m != NULL && m->alloc != NULL && m->kind == DQ_MEMORY_CUDA ? DQ_RING_GPU_MAPPED
                                                                            : DQ_RING_HOST;
    return ops->mr_reg (dev, addr, size, lkey, mr, error);
  }
  if (ops->mr_reg_dmabuf != NULL)
    return mr_register_gpu (ops, dev, what, addr, size, m, lkey, mr, placement, error);
  *placement = DQ_RING_GPU_COPY;
  if (ops->mr_reg_device != NULL && (m->write != NULL || m->read != NULL))
    return ops->mr_reg_device (dev, addr, size, m, lkey, mr, error);
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "%s: GPU device memory cannot be registered: this device can neither register a "
      "dma-buf nor reach device memory by copies; allowed: host or pinned host memory",
      what);
  return FALSE;
}
