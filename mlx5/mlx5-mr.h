/* Registering memory with the device, so that WQEs may name it by lkey: host memory as it
 * is; GPU device memory through a dma-buf of it (GPUDirect RDMA), else by its device
 * pointer (nvidia-peermem); on the emulated ConnectX, device memory it reaches by DMA
 * copies (DqRingMemory.write for what it writes, .read for what it sends). */
#ifndef DAQIRI_MLX5_MR_H
#define DAQIRI_MLX5_MR_H

#include <glib.h>

#include "mlx5-port.h"

G_BEGIN_DECLS

/* Registers [addr, addr + size) described by `memory` (NULL: host memory) on `dev`; the
 * handle goes to ops->mr_dereg. *placement (may be NULL) says which way it went:
 * DQ_RING_HOST, or DQ_RING_GPU_MAPPED for GPU-accessible host memory the caller allocated
 * (memory->alloc set, kind DQ_MEMORY_CUDA), DQ_RING_GPU_DMABUF, DQ_RING_GPU_PEERMEM or
 * DQ_RING_GPU_COPY for device memory (memory->export_dmabuf set). Errors name `what`. */
gboolean mlx5_mr_register (const Mlx5PortOps *ops, gpointer dev, const char *what, void *addr,
    gsize size, const DqRingMemory *memory, guint32 *lkey, gpointer *mr, DqRingPlacement *placement,
    GError **error);

G_END_DECLS

#endif
