/* A per-queue pool of burst records (see burst-pool.h). */
#include "burst-pool.h"

#include <string.h>

void
dq_burst_pool_init (DqBurstPool *pool, gsize rec_size, const DqRingMemory *memory)
{
  g_mutex_init (&pool->lock);
  pool->free = NULL;
  pool->all = NULL;
  pool->rec_size = MAX (rec_size, sizeof (DqBurstLink));
  pool->memory = memory != NULL && memory->desc_alloc != NULL ? memory : NULL;
}

gpointer
dq_burst_pool_get (DqBurstPool *pool)
{
  g_mutex_lock (&pool->lock);
  DqBurstLink *rec = pool->free;
  if (rec != NULL)
    pool->free = rec->next;
  g_mutex_unlock (&pool->lock);
  if (rec != NULL)
    return rec;

  rec = pool->memory ? pool->memory->desc_alloc (pool->rec_size, pool->memory->user) : NULL;
  const gboolean desc_mem = rec != NULL;
  if (rec == NULL)
    rec = g_malloc (pool->rec_size);
  rec->desc_mem = desc_mem;
  rec->next = NULL;
  rec->all_next = pool->all;
  pool->all = rec;
  return rec;
}

void
dq_burst_pool_put (DqBurstPool *pool, gpointer rec)
{
  DqBurstLink *link = rec;

  g_mutex_lock (&pool->lock);
  link->next = pool->free;
  pool->free = link;
  g_mutex_unlock (&pool->lock);
}

void
dq_burst_pool_release (DqBurstPool *pool, DqBurst *burst)
{
  gpointer rec = burst->range;

  burst->range = NULL;
  burst->packets = NULL;
  burst->n_packets = 0;
  dq_burst_pool_put (pool, rec);
}

void
dq_burst_pool_clear (DqBurstPool *pool)
{
  for (DqBurstLink *rec = pool->all; rec != NULL;) {
    DqBurstLink *next = rec->all_next;
    if (rec->desc_mem)
      pool->memory->desc_free (rec, pool->memory->user);
    else
      g_free (rec);
    rec = next;
  }
  pool->all = pool->free = NULL;
  g_mutex_clear (&pool->lock);
}

void
dq_block_ring_init (
    DqBlockRing *r, guint8 *ring, gsize block_size, guint n_blocks, guint burst_packets)
{
  memset (r, 0, sizeof *r);
  r->ring = ring;
  r->block_size = block_size;
  r->n_blocks = n_blocks;
  r->busy = g_new0 (gint, n_blocks);
  dq_burst_pool_init (&r->recs, sizeof (DqBlockRec) + burst_packets * sizeof (DqPacket), NULL);
}

void
dq_block_ring_clear (DqBlockRing *r)
{
  dq_block_ring_drop (r);
  if (r->busy != NULL)
    dq_burst_pool_clear (&r->recs);
  g_clear_pointer (&r->busy, g_free);
}

gboolean
dq_block_ring_begin (DqBlockRing *r)
{
  if (r->fill != NULL)
    return TRUE;
  if (g_atomic_int_get (&r->busy[r->cur]))
    return FALSE;
  g_atomic_int_set (&r->busy[r->cur], 1);
  r->fill = dq_burst_pool_get (&r->recs);
  r->fill_n = 0;
  r->fill_off = 0;
  return TRUE;
}

void
dq_block_ring_drop (DqBlockRing *r)
{
  if (r->fill == NULL)
    return;
  dq_burst_pool_put (&r->recs, r->fill);
  r->fill = NULL;
  r->fill_n = 0;
  r->fill_off = 0;
  g_atomic_int_set (&r->busy[r->cur], 0);
}

void
dq_block_ring_finish (DqBlockRing *r, DqBurst *burst)
{
  DqBlockRec *rec = r->fill;
  const DqPacket *last = &rec->packets[r->fill_n - 1];
  rec->block = r->cur;
  memset (burst, 0, sizeof *burst);
  burst->data = r->ring + (gsize) r->cur * r->block_size;
  burst->size = (gsize) last->offset + last->length;
  burst->n_packets = r->fill_n;
  burst->packets = rec->packets;
  burst->memory = DQ_MEMORY_HOST;
  burst->range = rec;
  r->fill = NULL;
  r->fill_n = 0;
  r->fill_off = 0;
  r->cur = (r->cur + 1) % r->n_blocks;
}

void
dq_block_ring_release (DqBlockRing *r, DqBurst *burst)
{
  const DqBlockRec *rec = burst->range;
  g_return_if_fail (rec != NULL);
  guint block = rec->block;
  dq_burst_pool_release (&r->recs, burst);
  g_atomic_int_set (&r->busy[block], 0);
}
