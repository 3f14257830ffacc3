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
  gboolean desc_mem;     /* allocated by the pool's memory's desc_alloc */
};

typedef struct {
  GMutex lock; /* guards the free list */
  DqBurstLink *free;
  DqBurstLink *all; /* written by the polling thread only, read at clear */
  gsize rec_size;
  const DqRingMemory *memory; /* its desc_alloc, when set, gives the records */
} DqBurstPool;

/* memory: NULL, or ring memory whose desc_alloc (if any) the records come from, so that the
 * packet arrays lie where the ring's reader reads them (g_malloc where it gives none) */
void dq_burst_pool_init (DqBurstPool *pool, gsize rec_size, const DqRingMemory *memory);
/* a free record, or a new one: from the polling thread only */
gpointer dq_burst_pool_get (DqBurstPool *pool);
/* back to the free list: from any thread */
void dq_burst_pool_put (DqBurstPool *pool, gpointer rec);
/* a released burst emptied, its record (burst->range) back to the free list: from any thread */
void dq_burst_pool_release (DqBurstPool *pool, DqBurst *burst);
/* frees every record; no record may be in use */
void dq_burst_pool_clear (DqBurstPool *pool);

/* A ring of equal blocks in host memory, one burst a block: how the engines that copy
 * packets into memory of their own (dpdk, pcap) hand out bursts. The burst being filled
 * takes block `cur` once it is free (its earlier burst released); packets are copied in
 * at fill_off; finishing hands it out and moves to the next block; releasing the burst
 * frees its block. The polling thread begins, adds and finishes; release may come from
 * any thread. The ring memory is the engine's (mapped or allocated by it). */
typedef struct {
  DqBurstLink link;
  guint block;
  DqPacket packets[];
} DqBlockRec;

typedef struct {
  guint8 *ring;
  gsize block_size;
  guint n_blocks;
  gint *busy;       /* per block: 1 while its burst is out (atomic) */
  guint cur;        /* block being filled, or next to fill */
  DqBlockRec *fill; /* record of the burst being filled, NULL when none */
  guint fill_n;
  gsize fill_off;
  DqBurstPool recs;
} DqBlockRing;

/* n_blocks blocks of block_size bytes at ring, bursts of up to burst_packets packets */
void dq_block_ring_init (
    DqBlockRing *r, guint8 *ring, gsize block_size, guint n_blocks, guint burst_packets);
/* gives the burst being filled back and frees the records; no burst may be out */
void dq_block_ring_clear (DqBlockRing *r);
/* Starts a burst in block cur (TRUE at once when one is being filled); FALSE while that
 * block is still held downstream */
gboolean dq_block_ring_begin (DqBlockRing *r);
/* Gives back the burst being filled, unsent */
void dq_block_ring_drop (DqBlockRing *r);
/* Where the next packet is copied (inside the burst being filled) */
static inline guint8 *
dq_block_ring_next (DqBlockRing *r)
{
  return r->ring + (gsize) r->cur * r->block_size + r->fill_off;
}
/* The packet of len bytes copied at dq_block_ring_next: its descriptor (offset set; the
 * rest is the caller's), the next one `align` bytes further on */
static inline DqPacket *
dq_block_ring_add (DqBlockRing *r, guint len, guint align)
{
  DqPacket *p = &r->fill->packets[r->fill_n++];
  p->offset = (guint32) r->fill_off;
  p->length = len;
  r->fill_off += (len + align - 1) / align * align;
  return p;
}
/* Whether a packet of up to max_len bytes still fits the block */
static inline gboolean
dq_block_ring_room (const DqBlockRing *r, guint max_len)
{
  return r->fill_off + max_len <= r->block_size;
}
/* Hands the burst being filled (at least one packet) out in *burst */
void dq_block_ring_finish (DqBlockRing *r, DqBurst *burst);
/* A burst of the ring released: its block is free again */
void dq_block_ring_release (DqBlockRing *r, DqBurst *burst);

G_END_DECLS

#endif /* DAQIRI_BURST_POOL_H */
