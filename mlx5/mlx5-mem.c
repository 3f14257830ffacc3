/* Memory the host shares with the device. */
#include "mlx5-mem.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#define HUGE_PAGE ((gsize) 2 << 20)

gsize
mlx5_page_size (void)
{
  long p = sysconf (_SC_PAGESIZE);
  return p > 0 ? (gsize) p : 4096;
}

gpointer
mlx5_mem_alloc (gsize size, gsize align)
{
  void *mem = NULL;
  if (size == 0 || posix_memalign (&mem, align, size) != 0)
    return NULL;
  memset (mem, 0, size);
  return mem;
}

void
mlx5_mem_free (gpointer mem)
{
  free (mem);
}

gpointer
mlx5_mem_map (gsize size)
{
  if (size == 0)
    return NULL;
  /* reserved huge pages (vm.nr_hugepages) when enough are free: fewer TLB misses, for the
   * CPU and for the NIC's translation; they are reserved at mmap time, so a later fault
   * never fails. Otherwise plain pages, with transparent huge pages asked for. */
  if (size % HUGE_PAGE == 0) {
    void *huge =
        mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (huge != MAP_FAILED)
      return huge;
  }
  void *mem = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    return NULL;
  if (size >= HUGE_PAGE)
    (void) madvise (mem, size, MADV_HUGEPAGE);
  return mem;
}

void
mlx5_mem_unmap (gpointer mem, gsize size)
{
  if (mem != NULL)
    munmap (mem, size);
}
