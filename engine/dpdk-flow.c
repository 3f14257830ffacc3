/* rte_flow steering for the dpdk engine (dpdk-flow.h). */
#include "dpdk-flow.h"
#include "daqiri-engine.h"

#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_errno.h>

#define IPV4_KEYS (DQ_FLOW_PROTO | DQ_FLOW_SRC | DQ_FLOW_DST | DQ_FLOW_SRC_PORT | DQ_FLOW_DST_PORT)
#define PORT_KEYS (DQ_FLOW_SRC_PORT | DQ_FLOW_DST_PORT)
#define IPPROTO_TCP_NUM 6
#define IPPROTO_UDP_NUM 17

const DpdkFlowOps dpdk_flow_ops_rte = {
  .validate = rte_flow_validate,
  .create = rte_flow_create,
  .destroy = rte_flow_destroy,
};

struct _DpdkSteerRule {
  DqFlowRule rule;
  guint priority;
  guint n_flows;
  struct rte_flow *flows[2];
};

static rte_be32_t
prefix_mask (guint prefix)
{
  return rte_cpu_to_be_32 (prefix == 0 ? 0 : 0xffffffffu << (32 - prefix));
}

static void
item_set (
    struct rte_flow_item *item, enum rte_flow_item_type type, const void *spec, const void *mask)
{
  item->type = type;
  item->spec = spec;
  item->mask = mask;
}

/* ETH, and VLAN when the rule has a vlan key; the ethertype goes in the last of them */
static guint
pattern_fill_l2 (const DqFlowRule *rule, DpdkFlowPattern *p)
{
  const gboolean ethertype = (rule->keys & DQ_FLOW_ETHERTYPE) != 0;
  if (!(rule->keys & DQ_FLOW_VLAN)) {
    if (ethertype) {
      p->eth_spec.hdr.ether_type = rte_cpu_to_be_16 (rule->ethertype);
      p->eth_mask.hdr.ether_type = RTE_BE16 (0xffff);
      item_set (&p->items[0], RTE_FLOW_ITEM_TYPE_ETH, &p->eth_spec, &p->eth_mask);
    } else {
      item_set (&p->items[0], RTE_FLOW_ITEM_TYPE_ETH, NULL, NULL);
    }
    return 1;
  }
  p->eth_spec.has_vlan = 1;
  p->eth_mask.has_vlan = 1;
  item_set (&p->items[0], RTE_FLOW_ITEM_TYPE_ETH, &p->eth_spec, &p->eth_mask);
  p->vlan_spec.hdr.vlan_tci = rte_cpu_to_be_16 (rule->vlan);
  p->vlan_mask.hdr.vlan_tci = RTE_BE16 (0x0fff);
  if (ethertype) {
    p->vlan_spec.hdr.eth_proto = rte_cpu_to_be_16 (rule->ethertype);
    p->vlan_mask.hdr.eth_proto = RTE_BE16 (0xffff);
  }
  item_set (&p->items[1], RTE_FLOW_ITEM_TYPE_VLAN, &p->vlan_spec, &p->vlan_mask);
  return 2;
}

/* IPV4 and the L4 item of `l4_proto` (0: none) */
static guint
pattern_fill_l3 (const DqFlowRule *rule, guint8 l4_proto, DpdkFlowPattern *p, guint n)
{
  struct rte_ipv4_hdr *spec = &p->ipv4_spec.hdr, *mask = &p->ipv4_mask.hdr;
  if (rule->keys & DQ_FLOW_SRC) {
    spec->src_addr = rte_cpu_to_be_32 (rule->src);
    mask->src_addr = prefix_mask (rule->src_prefix);
  }
  if (rule->keys & DQ_FLOW_DST) {
    spec->dst_addr = rte_cpu_to_be_32 (rule->dst);
    mask->dst_addr = prefix_mask (rule->dst_prefix);
  }
  if (rule->keys & DQ_FLOW_PROTO || l4_proto != 0) {
    spec->next_proto_id = (rule->keys & DQ_FLOW_PROTO) ? rule->proto : l4_proto;
    mask->next_proto_id = 0xff;
  }
  item_set (&p->items[n++], RTE_FLOW_ITEM_TYPE_IPV4, &p->ipv4_spec, &p->ipv4_mask);
  if (!(rule->keys & PORT_KEYS))
    return n;

  rte_be16_t src = rte_cpu_to_be_16 (rule->src_port), dst = rte_cpu_to_be_16 (rule->dst_port);
  rte_be16_t src_mask = (rule->keys & DQ_FLOW_SRC_PORT) ? RTE_BE16 (0xffff) : 0;
  rte_be16_t dst_mask = (rule->keys & DQ_FLOW_DST_PORT) ? RTE_BE16 (0xffff) : 0;
  if (l4_proto == IPPROTO_TCP_NUM) {
    p->tcp_spec.hdr.src_port = src & src_mask;
    p->tcp_spec.hdr.dst_port = dst & dst_mask;
    p->tcp_mask.hdr.src_port = src_mask;
    p->tcp_mask.hdr.dst_port = dst_mask;
    item_set (&p->items[n++], RTE_FLOW_ITEM_TYPE_TCP, &p->tcp_spec, &p->tcp_mask);
  } else {
    p->udp_spec.hdr.src_port = src & src_mask;
    p->udp_spec.hdr.dst_port = dst & dst_mask;
    p->udp_mask.hdr.src_port = src_mask;
    p->udp_mask.hdr.dst_port = dst_mask;
    item_set (&p->items[n++], RTE_FLOW_ITEM_TYPE_UDP, &p->udp_spec, &p->udp_mask);
  }
  return n;
}

static void
pattern_fill (const DqFlowRule *rule, guint8 l4_proto, DpdkFlowPattern *p)
{
  memset (p, 0, sizeof *p);
  guint n = pattern_fill_l2 (rule, p);
  if (rule->keys & IPV4_KEYS)
    n = pattern_fill_l3 (rule, l4_proto, p, n);
  item_set (&p->items[n], RTE_FLOW_ITEM_TYPE_END, NULL, NULL);
}

guint
dpdk_flow_patterns (const DqFlowRule *rule, DpdkFlowPattern pat[2])
{
  if (!(rule->keys & PORT_KEYS)) {
    pattern_fill (rule, 0, &pat[0]);
    return 1;
  }
  if (rule->keys & DQ_FLOW_PROTO) {
    pattern_fill (rule, rule->proto, &pat[0]);
    return 1;
  }
  pattern_fill (rule, IPPROTO_UDP_NUM, &pat[0]);
  pattern_fill (rule, IPPROTO_TCP_NUM, &pat[1]);
  return 2;
}

/* The rte_flow rules of rule `index` steered to its queue: its n patterns, the attributes
 * (priority: the index) and the actions; they point into the structure: fill it in place. */
typedef struct {
  DpdkFlowPattern pat[2];
  guint n;
  struct rte_flow_attr attr;
  struct rte_flow_action_queue queue;
  struct rte_flow_action actions[2];
} SteerFlow;

static void
steer_flow_fill (const DqFlowRule *rule, guint index, SteerFlow *f)
{
  f->n = dpdk_flow_patterns (rule, f->pat);
  memset (&f->attr, 0, sizeof f->attr);
  f->attr.ingress = 1;
  f->attr.priority = index;
  f->queue.index = rule->queue;
  f->actions[0] = (struct rte_flow_action){ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &f->queue };
  f->actions[1] = (struct rte_flow_action){ .type = RTE_FLOW_ACTION_TYPE_END };
}

static void
set_steer_error (GError **error, const char *what, const DqFlowRule *rules, guint index, int code,
    const struct rte_flow_error *fe)
{
  char *text = dq_flow_rule_to_string (&rules[index]);
  const char *reason = fe->message != NULL ? fe->message : rte_strerror (code);
  g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
      "%s: flow rule %u (%s) names queue %u, and the device cannot steer it there "
      "(rte_flow: %s); without rte_flow the dpdk engine spreads packets over its queues "
      "by RSS alone (drop queue=, or use one queue)",
      what, index + 1, text, rules[index].queue, reason);
  g_free (text);
}

gboolean
dpdk_flow_check (const DpdkFlowOps *ops, uint16_t port_id, const char *what,
    const DqFlowRule *rules, guint n_rules, guint n_queues, GError **error)
{
  if (n_queues <= 1)
    return TRUE;
  for (guint i = 0; i < n_rules; i++) {
    if (!(rules[i].keys & DQ_FLOW_QUEUE))
      continue;
    SteerFlow f;
    steer_flow_fill (&rules[i], i, &f);
    for (guint k = 0; k < f.n; k++) {
      struct rte_flow_error fe = { 0 };
      int r = ops->validate (port_id, &f.attr, f.pat[k].items, f.actions, &fe);
      if (r != 0) {
        set_steer_error (error, what, rules, i, r < 0 ? -r : r, &fe);
        return FALSE;
      }
    }
  }
  return TRUE;
}

void
dpdk_steering_init (DpdkSteering *s, const DpdkFlowOps *ops, uint16_t port_id, guint16 queue)
{
  memset (s, 0, sizeof *s);
  s->ops = ops;
  s->port_id = port_id;
  s->queue = queue;
}

/* Whether an installed rule steers what `rule` at `priority` would: same match and queue
 * (the mark is the software classifier's) */
static gboolean
steer_rule_same (const DpdkSteerRule *s, const DqFlowRule *rule, guint priority)
{
  const DqFlowRule *a = &s->rule;
  return s->priority == priority && (a->keys & ~DQ_FLOW_MARK) == (rule->keys & ~DQ_FLOW_MARK) &&
      a->proto == rule->proto && a->src_prefix == rule->src_prefix &&
      a->dst_prefix == rule->dst_prefix && a->src == rule->src && a->dst == rule->dst &&
      a->src_port == rule->src_port && a->dst_port == rule->dst_port &&
      a->ethertype == rule->ethertype && a->vlan == rule->vlan && a->queue == rule->queue;
}

static void
steer_rule_destroy (DpdkSteering *s, DpdkSteerRule *r)
{
  for (guint k = 0; k < r->n_flows; k++) {
    struct rte_flow_error fe = { 0 };
    (void) s->ops->destroy (s->port_id, r->flows[k], &fe);
  }
  r->n_flows = 0;
}

/* Creates the rte_flow rules of rules[index] into *r; on failure destroys those it made. */
static gboolean
steer_rule_create (DpdkSteering *s, const char *what, const DqFlowRule *rules, guint index,
    DpdkSteerRule *r, GError **error)
{
  SteerFlow f;
  steer_flow_fill (&rules[index], index, &f);

  r->rule = rules[index];
  r->priority = index;
  r->n_flows = 0;
  for (guint k = 0; k < f.n; k++) {
    struct rte_flow_error fe = { 0 };
    rte_errno = 0;
    struct rte_flow *flow = s->ops->create (s->port_id, &f.attr, f.pat[k].items, f.actions, &fe);
    if (flow == NULL) {
      set_steer_error (error, what, rules, index, rte_errno != 0 ? rte_errno : EINVAL, &fe);
      steer_rule_destroy (s, r);
      return FALSE;
    }
    r->flows[r->n_flows++] = flow;
  }
  return TRUE;
}

gboolean
dpdk_steering_apply (
    DpdkSteering *s, const char *what, const DqFlowRule *rules, guint n_rules, GError **error)
{
  guint n_next = 0;
  for (guint i = 0; i < n_rules; i++)
    n_next += (rules[i].keys & DQ_FLOW_QUEUE) && rules[i].queue == s->queue;
  DpdkSteerRule *next = g_new0 (DpdkSteerRule, MAX (n_next, 1));
  gboolean *fresh = g_new0 (gboolean, MAX (n_next, 1));
  gboolean *kept = g_new0 (gboolean, MAX (s->n_rules, 1));
  gboolean ok = TRUE;

  guint k = 0;
  for (guint i = 0; ok && i < n_rules; i++) {
    if (!(rules[i].keys & DQ_FLOW_QUEUE) || rules[i].queue != s->queue)
      continue;
    guint j = 0;
    while (j < s->n_rules && (kept[j] || !steer_rule_same (&s->rules[j], &rules[i], i)))
      j++;
    if (j < s->n_rules) {
      next[k] = s->rules[j];
      next[k].rule = rules[i];
      kept[j] = TRUE;
    } else {
      ok = steer_rule_create (s, what, rules, i, &next[k], error);
      fresh[k] = ok;
    }
    k += ok;
  }

  if (ok) {
    for (guint j = 0; j < s->n_rules; j++)
      if (!kept[j])
        steer_rule_destroy (s, &s->rules[j]);
    g_free (s->rules);
    s->rules = next;
    s->n_rules = n_next;
  } else {
    for (guint m = 0; m < k; m++)
      if (fresh[m])
        steer_rule_destroy (s, &next[m]);
    g_free (next);
  }
  g_free (fresh);
  g_free (kept);
  return ok;
}

void
dpdk_steering_clear (DpdkSteering *s)
{
  for (guint j = 0; j < s->n_rules; j++)
    steer_rule_destroy (s, &s->rules[j]);
  g_free (s->rules);
  s->rules = NULL;
  s->n_rules = 0;
}
