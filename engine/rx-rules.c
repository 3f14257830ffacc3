/* Software flow rule sets of RX queues (rx-rules.h). */
#include "rx-rules.h"

static DqRxRuleSet *
rule_set_new (DqRxFilter filter, const DqFlowRule *rules, guint n_rules, guint queue)
{
  DqRxRuleSet *set = g_new0 (DqRxRuleSet, 1);
  set->filter = filter;
  set->rules = dq_flow_rules_for_queue (rules, n_rules, queue, &set->n_rules);
  return set;
}

void
dq_rx_rule_set_free (DqRxRuleSet *set)
{
  if (set != NULL) {
    g_free (set->rules);
    g_free (set);
  }
}

void
dq_rx_rules_init (
    DqRxRules *r, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, guint queue)
{
  r->active = rule_set_new (filter, rules, n_rules, queue);
  r->pending = NULL;
}

void
dq_rx_rules_publish (
    DqRxRules *r, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, guint queue)
{
  DqRxRuleSet *unseen =
      g_atomic_pointer_exchange (&r->pending, rule_set_new (filter, rules, n_rules, queue));
  dq_rx_rule_set_free (unseen);
}

void
dq_rx_rules_clear (DqRxRules *r)
{
  dq_rx_rule_set_free (g_atomic_pointer_exchange (&r->pending, NULL));
  dq_rx_rule_set_free (r->active);
  r->active = NULL;
}
