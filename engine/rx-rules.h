/* The flow rules a software classifier applies on an RX queue, replaceable while the
 * queue receives (dq_rxq_set_flows on the afpacket and dpdk engines).
 *
 * The polling thread reads the active set without a lock. Another thread publishes a
 * replacement (dq_rx_rules_publish); the polling thread adopts it between bursts
 * (dq_rx_rules_adopt: one atomic load while nothing is pending) and frees the set it
 * replaced, being its only reader. A set published before the previous one was adopted
 * replaces it unseen. Internal to the engines.
 */
#ifndef DAQIRI_RX_RULES_H
#define DAQIRI_RX_RULES_H

#include <glib.h>
#include "daqiri-engine.h"

G_BEGIN_DECLS

typedef struct {
  DqRxFilter filter;
  DqFlowRule *rules; /* those of the queue: without a queue key, or naming it */
  guint n_rules;
} DqRxRuleSet;

typedef struct {
  DqRxRuleSet *active;  /* the polling thread's */
  DqRxRuleSet *pending; /* atomic: published, not yet adopted */
} DqRxRules;

/* The queue's share of `rules` (the whole set of its queue set) as the active set. */
void dq_rx_rules_init (
    DqRxRules *r, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, guint queue);
/* The same as a pending set, from any thread. */
void dq_rx_rules_publish (
    DqRxRules *r, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, guint queue);
/* Frees both sets; no thread may use `r` any more. */
void dq_rx_rules_clear (DqRxRules *r);

void dq_rx_rule_set_free (DqRxRuleSet *set);

/* Polling thread, between bursts: makes a published set the active one. */
static inline void
dq_rx_rules_adopt (DqRxRules *r)
{
  if (G_LIKELY (g_atomic_pointer_get (&r->pending) == NULL))
    return;
  DqRxRuleSet *next = g_atomic_pointer_exchange (&r->pending, NULL);
  if (next != NULL) {
    dq_rx_rule_set_free (r->active);
    r->active = next;
  }
}

/* Polling thread: whether the frame is delivered, and with which flow id (see
 * dq_flow_classify; `vlan` likewise). */
static inline gboolean
dq_rx_rules_classify (
    const DqRxRules *r, const guint8 *frame, guint len, int vlan, guint32 *flow_id)
{
  const DqRxRuleSet *set = r->active;
  switch (set->filter) {
    case DQ_RX_FILTER_ALL: *flow_id = 0; return TRUE;
    case DQ_RX_FILTER_NONE: return FALSE;
    default: return dq_flow_classify (set->rules, set->n_rules, frame, len, vlan, flow_id);
  }
}

G_END_DECLS

#endif /* DAQIRI_RX_RULES_H */
