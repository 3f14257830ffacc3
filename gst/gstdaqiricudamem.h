/* GPU memory for daqiri elements: a GstAllocator of CUDA device memory (cuda/'s
 * dq_cuda_malloc, the primary context of the current device). Map with GST_DAQIRI_MAP_CUDA
 * for the device pointer; CPU maps are refused with an error in the log. Built only with
 * CUDA (meson feature cuda). */
#ifndef GST_DAQIRI_CUDA_MEM_H
#define GST_DAQIRI_CUDA_MEM_H

#include <gst/gst.h>

G_BEGIN_DECLS

/* The allocator (a singleton, owned by the caller's reference). */
GstAllocator *gst_daqiri_cuda_allocator_get (void);

/* Ring memory for daqirisrc memory=cuda (DqRxConfig.ring_memory): CUDA pinned host memory
 * mapped into the device's address space, which the NIC (or the emulated one) writes and the
 * GPU reads in place. */
#include "daqiri-engine.h"
const DqRingMemory *gst_daqiri_cuda_ring_memory (void);
/* The same in GPU device memory, which a ConnectX writes by GPUDirect RDMA (a dma-buf of the
 * memory registered with the NIC); the CPU never touches it. */
const DqRingMemory *gst_daqiri_cuda_device_ring_memory (void);

G_END_DECLS

#endif
