/* Per-flow receive counters (see flow-counters.h). */
#include "flow-counters.h"

#include <stdlib.h>

struct _DqFlowCounters {
  GMutex lock;       /* guards the table: the adding thread against readers */
  GHashTable *by_id; /* flow id -> DqFlowCount* */
  guint64 overflow_packets;
};

DqFlowCounters *
dq_flow_counters_new (void)
{
  DqFlowCounters *fc = g_new0 (DqFlowCounters, 1);
  g_mutex_init (&fc->lock);
  fc->by_id = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  return fc;
}

void
dq_flow_counters_free (DqFlowCounters *fc)
{
  if (fc == NULL)
    return;
  g_hash_table_unref (fc->by_id);
  g_mutex_clear (&fc->lock);
  g_free (fc);
}

void
dq_flow_counters_reset (DqFlowCounters *fc)
{
  g_mutex_lock (&fc->lock);
  g_hash_table_remove_all (fc->by_id);
  fc->overflow_packets = 0;
  g_mutex_unlock (&fc->lock);
}

/* adds one run of packets of flow `id`; with the lock held */
static void
count_run (DqFlowCounters *fc, guint32 id, guint64 packets, guint64 bytes)
{
  DqFlowCount *c = g_hash_table_lookup (fc->by_id, GUINT_TO_POINTER (id));
  if (c == NULL) {
    if (g_hash_table_size (fc->by_id) >= DQ_FLOW_COUNTERS_MAX) {
      fc->overflow_packets += packets;
      return;
    }
    c = g_new0 (DqFlowCount, 1);
    c->flow_id = id;
    g_hash_table_insert (fc->by_id, GUINT_TO_POINTER (id), c);
  }
  c->packets += packets;
  c->bytes += bytes;
}

void
dq_flow_counters_add (DqFlowCounters *fc, const DqPacket *packets, guint n)
{
  if (n == 0)
    return;
  g_mutex_lock (&fc->lock);
  guint32 id = packets[0].flow_id;
  guint64 run_packets = 0, run_bytes = 0;
  for (guint i = 0; i < n; i++) {
    if (packets[i].flow_id != id) {
      count_run (fc, id, run_packets, run_bytes);
      id = packets[i].flow_id;
      run_packets = run_bytes = 0;
    }
    run_packets++;
    run_bytes += packets[i].length;
  }
  count_run (fc, id, run_packets, run_bytes);
  g_mutex_unlock (&fc->lock);
}

static int
by_flow_id (const void *a, const void *b)
{
  guint32 x = ((const DqFlowCount *) a)->flow_id, y = ((const DqFlowCount *) b)->flow_id;
  return x < y ? -1 : x > y;
}

DqFlowCount *
dq_flow_counters_get (DqFlowCounters *fc, guint *n, guint64 *overflow_packets)
{
  g_mutex_lock (&fc->lock);
  *n = g_hash_table_size (fc->by_id);
  DqFlowCount *out = g_new (DqFlowCount, MAX (*n, 1));
  GHashTableIter it;
  gpointer value;
  guint i = 0;
  g_hash_table_iter_init (&it, fc->by_id);
  while (g_hash_table_iter_next (&it, NULL, &value))
    out[i++] = *(const DqFlowCount *) value;
  *overflow_packets = fc->overflow_packets;
  g_mutex_unlock (&fc->lock);
  qsort (out, *n, sizeof *out, by_flow_id);
  return out;
}
