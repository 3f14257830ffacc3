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

G_END_DECLS

#endif
