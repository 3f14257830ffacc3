/* Payload memory of two-segment sends (see gstdaqiritxmem.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqiritxmem.h"

#include <gst/daqiri/daqiri.h>
#include "gstdaqiriburst.h"
#ifdef DQ_HAVE_CUDA
#include "gstdaqiricudamem.h"
#endif

/* One allocation: its range, what keeps it alive while registered, the registration */
typedef struct {
  gpointer base;
  gsize size;
  gpointer keeper;
  GDestroyNotify keeper_free;
  DqTxMemory *reg;
  guint64 mark;     /* frames posted that read it, up to this dq_txq_posted() */
  guint64 last_use; /* the set's use counter at its latest use */
} TxReg;

struct _GstDaqiriTxRegs {
  DqTxQueue *txq;
  GHashTable *by_base; /* base -> TxReg */
  GHashTable *by_reg;  /* DqTxMemory -> TxReg */
  guint64 uses;
  guint64 made;
};

static void
tx_reg_drop (GstDaqiriTxRegs *regs, TxReg *r)
{
  g_hash_table_remove (regs->by_reg, r->reg);
  g_hash_table_remove (regs->by_base, r->base);
  dq_txq_unregister (regs->txq, r->reg);
  r->keeper_free (r->keeper);
  g_free (r);
}

GstDaqiriTxRegs *
gst_daqiri_tx_regs_new (DqTxQueue *txq)
{
  GstDaqiriTxRegs *regs = g_new0 (GstDaqiriTxRegs, 1);
  regs->txq = txq;
  regs->by_base = g_hash_table_new (NULL, NULL);
  regs->by_reg = g_hash_table_new (NULL, NULL);
  return regs;
}

void
gst_daqiri_tx_regs_free (GstDaqiriTxRegs *regs)
{
  if (regs == NULL)
    return;
  GList *all = g_hash_table_get_values (regs->by_reg);
  for (GList *l = all; l != NULL; l = l->next)
    tx_reg_drop (regs, l->data);
  g_list_free (all);
  g_hash_table_unref (regs->by_base);
  g_hash_table_unref (regs->by_reg);
  g_free (regs);
}

/* Where @mem's allocation lies and how the device reaches it: the range to register
 * (*base, *size), *memory (NULL: host memory), *data (@mem's first byte), and a
 * reference that keeps the allocation (*keeper, freed by *keeper_free). */
static gboolean
tx_region (GstMemory *mem, gpointer *base, gsize *size, const DqRingMemory **memory,
    const guint8 **data, gpointer *keeper, GDestroyNotify *keeper_free, GError **error)
{
  *memory = NULL;
  GstDaqiriRxRing *ring = gst_daqiri_burst_memory_ring (mem, data);
  if (ring != NULL) {
    DqRxQueue *rxq = gst_daqiri_rx_ring_queue (ring);
    DqRingPlacement placement = dq_rxq_ring_placement (rxq);
    *keeper = ring;
    *keeper_free = (GDestroyNotify) gst_daqiri_rx_ring_unref;
    if (!dq_rxq_ring_range (rxq, base, size)) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "the burst's ring does not say where it lies (its engine cannot lend payloads)");
      gst_daqiri_rx_ring_unref (ring);
      return FALSE;
    }
    if (placement == DQ_RING_HOST || placement == DQ_RING_GPU_MAPPED)
      return TRUE;
#ifdef DQ_HAVE_CUDA
    *memory = gst_daqiri_cuda_device_ring_memory ();
    return TRUE;
#else
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "the burst's payloads are in GPU memory (%s) but this build has no CUDA",
        dq_ring_placement_name (placement));
    gst_daqiri_rx_ring_unref (ring);
    return FALSE;
#endif
  }

  GstMapFlags flags = GST_MAP_READ;
  if (gst_memory_is_type (mem, GST_DAQIRI_CUDA_MEMORY_TYPE)) {
#ifdef DQ_HAVE_CUDA
    flags |= GST_DAQIRI_MAP_CUDA;
    *memory = gst_daqiri_cuda_device_ring_memory ();
#else
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "a payload in daqiri GPU memory, but this build has no CUDA");
    return FALSE;
#endif
  } else if (!gst_memory_is_type (mem, GST_ALLOCATOR_SYSMEM)) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "a payload in memory of type %s cannot be sent from where it lies (allowed: system "
        "memory, daqiri GPU memory, daqirisrc bursts)",
        mem->allocator != NULL && mem->allocator->mem_type ? mem->allocator->mem_type : "?");
    return FALSE;
  }
  GstMapInfo map;
  if (!gst_memory_map (mem, &map, flags)) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG, "cannot map the payload memory");
    return FALSE;
  }
  *data = map.data;
  gst_memory_unmap (mem, &map);
  /* the whole allocation: GStreamer adds the offset to what the allocator maps */
  GstMemory *root = mem->parent != NULL ? mem->parent : mem;
  *base = (gpointer) (*data - mem->offset);
  *size = mem->maxsize;
  *keeper = gst_memory_ref (root);
  *keeper_free = (GDestroyNotify) gst_memory_unref;
  return TRUE;
}

/* Beyond the limit: drops the least recently used registration no posted frame reads */
static void
tx_regs_trim (GstDaqiriTxRegs *regs)
{
  if (g_hash_table_size (regs->by_reg) < GST_DAQIRI_TX_REGS_MAX)
    return;
  guint64 completed = dq_txq_completed (regs->txq);
  TxReg *oldest = NULL;
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init (&it, regs->by_reg);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    TxReg *r = value;
    if (r->mark <= completed && (oldest == NULL || r->last_use < oldest->last_use))
      oldest = r;
  }
  if (oldest != NULL)
    tx_reg_drop (regs, oldest);
}

DqTxMemory *
gst_daqiri_tx_regs_get (GstDaqiriTxRegs *regs, GstMemory *mem, const guint8 **data, GError **error)
{
  gpointer base, keeper;
  gsize size;
  const DqRingMemory *memory;
  GDestroyNotify keeper_free;

  if (!tx_region (mem, &base, &size, &memory, data, &keeper, &keeper_free, error))
    return NULL;
  regs->uses++;
  TxReg *r = g_hash_table_lookup (regs->by_base, base);
  if (r != NULL && r->size == size) {
    keeper_free (keeper);
    r->last_use = regs->uses;
    return r->reg;
  }
  if (r != NULL) {
    /* another allocation at the same address: the old one is gone (it was held while
     * registered, so only once dropped); make sure no frame still reads it */
    if (r->mark > dq_txq_completed (regs->txq) && !dq_txq_flush (regs->txq, error)) {
      keeper_free (keeper);
      return NULL;
    }
    tx_reg_drop (regs, r);
  }
  tx_regs_trim (regs);
  DqTxMemory *reg = dq_txq_register (regs->txq, base, size, memory, error);
  if (reg == NULL) {
    keeper_free (keeper);
    return NULL;
  }
  r = g_new0 (TxReg, 1);
  r->base = base;
  r->size = size;
  r->keeper = keeper;
  r->keeper_free = keeper_free;
  r->reg = reg;
  r->last_use = regs->uses;
  g_hash_table_insert (regs->by_base, base, r);
  g_hash_table_insert (regs->by_reg, reg, r);
  regs->made++;
  return reg;
}

void
gst_daqiri_tx_regs_used (GstDaqiriTxRegs *regs, DqTxMemory *reg, guint64 mark)
{
  TxReg *r = g_hash_table_lookup (regs->by_reg, reg);
  if (r != NULL && mark > r->mark)
    r->mark = mark;
}

guint64
gst_daqiri_tx_regs_made (GstDaqiriTxRegs *regs)
{
  return regs != NULL ? regs->made : 0;
}
