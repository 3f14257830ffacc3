/* Memory the host shares with the device: rings, doorbell records, packet buffers. */
#ifndef DAQIRI_MLX5_MEM_H
#define DAQIRI_MLX5_MEM_H

#include <glib.h>

G_BEGIN_DECLS

/* Zeroed memory aligned to `align` (a power of two >= sizeof (void *)): rings and
 * doorbell records. NULL on failure. Free with mlx5_mem_free(). */
gpointer mlx5_mem_alloc (gsize size, gsize align);
void mlx5_mem_free (gpointer mem);

/* Page-aligned zeroed anonymous mapping for packet buffers: reserved 2 MiB huge pages
 * when the size is a multiple of 2 MiB and enough are free (vm.nr_hugepages), else plain
 * pages touched lazily, with transparent huge pages asked for. */
gpointer mlx5_mem_map (gsize size);
void mlx5_mem_unmap (gpointer mem, gsize size);

gsize mlx5_page_size (void);

/* Counters written by one thread and read by any: a plain store of the new value
 * (no locked instruction on the hot path), an atomic load on the reading side. */
#define MLX5_COUNTER_ADD(c, v) __atomic_store_n (&(c), (c) + (v), __ATOMIC_RELAXED)
#define MLX5_COUNTER_GET(c) __atomic_load_n (&(c), __ATOMIC_RELAXED)
#define MLX5_COUNTER_SET(c, v) __atomic_store_n (&(c), (v), __ATOMIC_RELAXED)

G_END_DECLS

#endif
