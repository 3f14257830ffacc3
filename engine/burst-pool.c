/* A per-queue pool of burst records (see burst-pool.h). */
#include "burst-pool.h"

void
dq_burst_pool_init (DqBurstPool *pool, gsize rec_size)
{
  g_mutex_init (&pool->lock);
  pool->free = NULL;
  pool->all = NULL;
  pool->rec_size = MAX (rec_size, sizeof (DqBurstLink));
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

  rec = g_malloc (pool->rec_size);
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
    g_free (rec);
    rec = next;
  }
  pool->all = pool->free = NULL;
  g_mutex_clear (&pool->lock);
}
