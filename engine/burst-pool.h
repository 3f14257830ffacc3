/* A per-queue pool of burst records, shared by the engines: each record is an engine's own
 * header (beginning with a DqBurstLink) followed by the DqPacket array handed out with one
 * burst. Records are recycled through a free list; a new one is allocated only when the list
 * is empty, so a queue in steady state allocates nothing per burst. */
#ifndef DAQIRI_BURST_POOL_H
#define DAQIRI_BURST_POOL_H

#include <glib.h>
#include "daqiri-engine.h"
#include <string.h>

G_BEGIN_DECLS

typedef struct _DqBurstLink DqBurstLink;

/* The first member of every record. */
struct _DqBurstLink {
  DqBurstLink *next;     /* free list */
  DqBurstLink *all_next; /* every record of the pool, for clear */
};

typedef struct {
  GMutex lock; /* guards the free list */
  DqBurstLink *free;
  DqBurstLink *all; /* written by the polling thread only, read at clear */
  gsize rec_size;
} DqBurstPool;

void dq_burst_pool_init (DqBurstPool *pool, gsize rec_size);
/* a free record, or a new one: from the polling thread only */
gpointer dq_burst_pool_get (DqBurstPool *pool);
/* back to the free list: from any thread */
void dq_burst_pool_put (DqBurstPool *pool, gpointer rec);
/* a released burst emptied, its record (burst->range) back to the free list: from any thread */
void dq_burst_pool_release (DqBurstPool *pool, DqBurst *burst);
/* frees every record; no record may be in use */
void dq_burst_pool_clear (DqBurstPool *pool);

/* Fills *burst with the n (>= 1) packets of a host-memory burst at data, their descriptors
 * in packets (offsets from data, in order), identified by the record rec */
static inline void
dq_burst_fill (DqBurst *burst, guint8 *data, DqPacket *packets, guint n, gpointer rec)
{
  const DqPacket *last = &packets[n - 1];
  memset (burst, 0, sizeof *burst);
  burst->data = data;
  burst->size = (gsize) last->offset + last->length;
  burst->n_packets = n;
  burst->packets = packets;
  burst->memory = DQ_MEMORY_HOST;
  burst->range = rec;
}

G_END_DECLS

#endif /* DAQIRI_BURST_POOL_H */
