/* A GstAllocator of CUDA device memory (see gstdaqiricudamem.h).
 *
 * A memory is the device pointer of one dq_cuda_malloc() (the root) or a share of it (a
 * sub-range: the root stays alive through the parent reference, GStreamer adds the offset).
 * GST_DAQIRI_MAP_CUDA maps return the device pointer; any other map fails: a device pointer
 * handed to CPU code would crash it far from here. Copies are device-to-device.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqiricudamem.h"
#include "gstdaqirielement.h"

#include <string.h>

#include <gst/daqiri/daqiri.h>

#include "daqiri-reorder.h"

GST_DEBUG_CATEGORY_STATIC (daqiricudamem_debug);
#define GST_CAT_DEFAULT daqiricudamem_debug

typedef struct {
  GstMemory mem;
  void *dev; /* device pointer of the root allocation */
} DaqiriCudaMemory;

typedef struct {
  GstAllocator parent;
} GstDaqiriCudaAllocator;

typedef struct {
  GstAllocatorClass parent_class;
} GstDaqiriCudaAllocatorClass;

GType gst_daqiri_cuda_allocator_get_type (void);
G_DEFINE_TYPE (GstDaqiriCudaAllocator, gst_daqiri_cuda_allocator, GST_TYPE_ALLOCATOR);

static GstMemory *
cuda_mem_new (GstAllocator *allocator, GstMemory *parent, void *dev, gsize maxsize, gsize align,
    gsize offset, gsize size)
{
  DaqiriCudaMemory *m = g_new0 (DaqiriCudaMemory, 1);
  gst_memory_init (GST_MEMORY_CAST (m), 0, allocator, parent, maxsize, align, offset, size);
  m->dev = dev;
  return GST_MEMORY_CAST (m);
}

static GstMemory *
cuda_alloc (GstAllocator *allocator, gsize size, GstAllocationParams *params)
{
  gsize maxsize = size + params->prefix + params->padding;
  void *dev = dq_cuda_malloc (MAX (maxsize, 1));
  if (dev == NULL) {
    GST_ERROR ("cannot allocate %" G_GSIZE_FORMAT " bytes of GPU memory: %s", maxsize,
        dq_cuda_last_error ());
    return NULL;
  }
  return cuda_mem_new (allocator, NULL, dev, maxsize, params->align, params->prefix, size);
}

static void
cuda_free (GstAllocator *allocator, GstMemory *mem)
{
  DaqiriCudaMemory *m = (DaqiriCudaMemory *) mem;
  if (mem->parent == NULL)
    dq_cuda_free (m->dev);
  g_free (m);
}

static gpointer
cuda_map (GstMemory *mem, gsize maxsize, GstMapFlags flags)
{
  DaqiriCudaMemory *m = (DaqiriCudaMemory *) mem;
  if (!(flags & GST_DAQIRI_MAP_CUDA)) {
    GST_ERROR ("daqiri GPU memory cannot be mapped for the CPU: map it with "
               "GST_DAQIRI_MAP_CUDA (GST_MAP_CUDA), or use daqirireorder memory=system");
    return NULL;
  }
  return m->dev;
}

static void
cuda_unmap (GstMemory *mem)
{}

static GstMemory *
cuda_share (GstMemory *mem, gssize offset, gssize size)
{
  DaqiriCudaMemory *m = (DaqiriCudaMemory *) mem;
  GstMemory *root = mem->parent ? mem->parent : mem;
  if (size == -1)
    size = (gssize) mem->size - offset;
  return cuda_mem_new (mem->allocator, root, m->dev, mem->maxsize, mem->align,
      mem->offset + (gsize) offset, (gsize) size);
}

static GstMemory *
cuda_copy (GstMemory *mem, gssize offset, gssize size)
{
  DaqiriCudaMemory *m = (DaqiriCudaMemory *) mem;
  if (size == -1)
    size = (gssize) mem->size > offset ? (gssize) mem->size - offset : 0;
  GstAllocationParams params = { 0, mem->align, 0, 0 };
  GstMemory *copy = cuda_alloc (mem->allocator, (gsize) size, &params);
  if (copy == NULL)
    return NULL;
  if (size > 0 &&
      dq_cuda_memcpy (((DaqiriCudaMemory *) copy)->dev, (guint8 *) m->dev + mem->offset + offset,
          (size_t) size) != 0) {
    GST_ERROR ("GPU copy of %" G_GSSIZE_FORMAT " bytes failed: %s", size, dq_cuda_last_error ());
    gst_memory_unref (copy);
    return NULL;
  }
  return copy;
}

static void
gst_daqiri_cuda_allocator_class_init (GstDaqiriCudaAllocatorClass *klass)
{
  GstAllocatorClass *aclass = GST_ALLOCATOR_CLASS (klass);
  aclass->alloc = cuda_alloc;
  aclass->free = cuda_free;
  GST_DEBUG_CATEGORY_INIT (daqiricudamem_debug, "daqiricudamem", 0, "daqiri CUDA memory");
}

static void
gst_daqiri_cuda_allocator_init (GstDaqiriCudaAllocator *self)
{
  GstAllocator *a = GST_ALLOCATOR_CAST (self);
  a->mem_type = GST_DAQIRI_CUDA_MEMORY_TYPE;
  a->mem_map = cuda_map;
  a->mem_unmap = cuda_unmap;
  a->mem_share = cuda_share;
  a->mem_copy = cuda_copy;
  GST_OBJECT_FLAG_SET (self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *
gst_daqiri_cuda_allocator_get (void)
{
  static GstAllocator *allocator;
  if (g_once_init_enter (&allocator))
    g_once_init_leave (
        &allocator, gst_daqiri_allocator_new_kept (gst_daqiri_cuda_allocator_get_type ()));
  return gst_object_ref (allocator);
}

static gpointer
ring_alloc (gsize size, gpointer user)
{
  void *mem = dq_cuda_malloc_host (size);
  if (mem == NULL)
    GST_ERROR ("cannot allocate %" G_GSIZE_FORMAT " bytes of pinned ring memory: %s", size,
        dq_cuda_last_error ());
  else
    memset (mem, 0, size);
  return mem;
}

static void
ring_free (gpointer mem, gsize size, gpointer user)
{
  dq_cuda_free_host (mem);
}

static gpointer
device_ring_alloc (gsize size, gpointer user)
{
  void *mem = dq_cuda_malloc (size);
  if (mem == NULL || dq_cuda_memset (mem, 0, size) != 0) {
    GST_ERROR ("cannot allocate %" G_GSIZE_FORMAT " bytes of GPU ring memory: %s", size,
        dq_cuda_last_error ());
    dq_cuda_free (mem);
    return NULL;
  }
  return mem;
}

static void
device_ring_free (gpointer mem, gsize size, gpointer user)
{
  dq_cuda_free (mem);
}

static gboolean
device_ring_export (
    gpointer mem, gsize size, int *fd, guint64 *offset, gpointer user, GError **error)
{
  uint64_t off = 0;
  if (dq_cuda_export_dmabuf (mem, size, fd, &off) != 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s; allowed without GPUDirect RDMA: "
        "daqirisrc gpudirect=false (the ring in pinned host memory)",
        dq_cuda_last_error ());
    return FALSE;
  }
  *offset = off;
  return TRUE;
}

/* a copy either way between host and device memory; `where` ends the error message */
static gboolean
device_ring_copy (gpointer dst, gconstpointer src, gsize n, const char *where)
{
  if (dq_cuda_memcpy (dst, src, n) == 0)
    return TRUE;
  GST_ERROR ("cannot copy %" G_GSIZE_FORMAT " bytes %s: %s", n, where, dq_cuda_last_error ());
  return FALSE;
}

/* a host-to-device copy: how the emulated ConnectX writes the ring */
static gboolean
device_ring_write (gpointer dst, gconstpointer src, gsize n, gpointer user)
{
  return device_ring_copy (dst, src, n, "into the GPU ring");
}

/* a device-to-host copy: how the emulated ConnectX reads payloads it sends from it */
static gboolean
device_ring_read (gpointer dst, gconstpointer src, gsize n, gpointer user)
{
  return device_ring_copy (dst, src, n, "out of GPU memory");
}

/* packet descriptors in pinned, mapped host memory: daqirireorder memory=cuda hands them to
 * its kernels as they lie, which read them across the bus (no copy on the host) */
static gpointer
desc_alloc (gsize size, gpointer user)
{
  return dq_cuda_malloc_host (size);
}

static void
desc_free (gpointer mem, gpointer user)
{
  dq_cuda_free_host (mem);
}

const DqRingMemory *
gst_daqiri_cuda_device_ring_memory (void)
{
  static const DqRingMemory ring = { .kind = DQ_MEMORY_CUDA,
    .alloc = device_ring_alloc,
    .free = device_ring_free,
    .user = NULL,
    .export_dmabuf = device_ring_export,
    .write = device_ring_write,
    .read = device_ring_read,
    .desc_alloc = desc_alloc,
    .desc_free = desc_free };
  return &ring;
}

const DqRingMemory *
gst_daqiri_cuda_ring_memory (void)
{
  static const DqRingMemory ring = { .kind = DQ_MEMORY_CUDA,
    .alloc = ring_alloc,
    .free = ring_free,
    .user = NULL,
    .desc_alloc = desc_alloc,
    .desc_free = desc_free };
  return &ring;
}
