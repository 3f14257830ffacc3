/* Packets and bytes received per flow id (the mark of the rule a packet matched), counted
 * burst by burst.
 *
 * What a caller may rely on:
 *  - Counts are keyed by flow id, not by rule: they survive any change of the rules, and a
 *    flow whose mark a new rule set keeps goes on counting where it was.
 *  - One thread adds (dq_flow_counters_add, once per burst: one lookup per run of packets
 *    of one flow); any thread reads a snapshot (dq_flow_counters_get), flow ids ascending.
 *  - At most DQ_FLOW_COUNTERS_MAX flow ids are counted; packets of further ones are counted
 *    together in `overflow_packets`.
 * Plain C and GLib; the engines' packet descriptors.
 */
#ifndef DAQIRI_FLOW_COUNTERS_H
#define DAQIRI_FLOW_COUNTERS_H

#include <glib.h>
#include "daqiri-engine.h"

G_BEGIN_DECLS

#define DQ_FLOW_COUNTERS_MAX 4096

typedef struct {
  guint32 flow_id;
  guint64 packets;
  guint64 bytes; /* as received: DqPacket.length */
} DqFlowCount;

typedef struct _DqFlowCounters DqFlowCounters;

DqFlowCounters *dq_flow_counters_new (void);
void dq_flow_counters_free (DqFlowCounters *fc);
/* forgets every count */
void dq_flow_counters_reset (DqFlowCounters *fc);
/* counts the n packets of a burst */
void dq_flow_counters_add (DqFlowCounters *fc, const DqPacket *packets, guint n);
/* a snapshot, flow ids ascending (g_free it); *overflow_packets: packets of flow ids past
 * DQ_FLOW_COUNTERS_MAX */
DqFlowCount *dq_flow_counters_get (DqFlowCounters *fc, guint *n, guint64 *overflow_packets);

G_END_DECLS

#endif /* DAQIRI_FLOW_COUNTERS_H */
