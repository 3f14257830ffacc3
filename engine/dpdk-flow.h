/* rte_flow steering for the dpdk engine: the flow rules that name a queue (`queue=`) as
 * rte_flow rules with a QUEUE action, on devices whose poll-mode driver offers them.
 *
 * Only steering goes to the device: which RX queue receives a packet. Marks and filtering
 * stay with the software classifier of each queue (rx-rules.h), which sees the rules
 * without a queue key and those naming its queue. Without steering, several queues are
 * spread by RSS alone and a rule cannot name a queue.
 *
 * Patterns: ETH [VLAN] [IPV4 [UDP | TCP]], from the keys of the rule (ethertype in ETH, or
 * in VLAN as its inner type when the rule has a vlan key; addresses under their prefix
 * masks and the protocol in IPV4; ports in UDP or TCP). A rule with ports and no proto is
 * two rte_flow rules, one UDP and one TCP. A rule without match keys is ETH alone (every
 * packet). The priority of a rule is its index in the whole rule set, so the first rule
 * in text order wins, as in software. A frame with an in-band VLAN tag matches a rule
 * without a vlan key as the driver matches ETH / IPV4 (most match untagged frames only).
 *
 * Changing rules (dpdk_steering_apply): the rte_flow rules of the new set are created
 * before those of the old set are destroyed, and a rule the two sets share (same match,
 * same queue, same index) keeps its rte_flow rule, so its packets never go elsewhere.
 *
 * The device calls go through DpdkFlowOps (DPDK's rte_flow_validate, rte_flow_create and
 * rte_flow_destroy in the engine; recording ones in the tests). Internal to the dpdk
 * engine; one thread at a time per DpdkSteering.
 */
#ifndef DAQIRI_DPDK_FLOW_H
#define DAQIRI_DPDK_FLOW_H

#include <glib.h>
#include <rte_flow.h>

#include "daqiri-flow.h"

G_BEGIN_DECLS

#define DPDK_FLOW_MAX_ITEMS 5 /* ETH, VLAN, IPV4, UDP or TCP, END */

/* One rte_flow pattern; items point into the structure itself: fill it in place. */
typedef struct {
  struct rte_flow_item items[DPDK_FLOW_MAX_ITEMS];
  struct rte_flow_item_eth eth_spec, eth_mask;
  struct rte_flow_item_vlan vlan_spec, vlan_mask;
  struct rte_flow_item_ipv4 ipv4_spec, ipv4_mask;
  struct rte_flow_item_udp udp_spec, udp_mask;
  struct rte_flow_item_tcp tcp_spec, tcp_mask;
} DpdkFlowPattern;

/* Fills pat[0] (and pat[1] for a rule with ports and no proto) from the rule's match
 * keys; returns the number of patterns filled (1 or 2). */
guint dpdk_flow_patterns (const DqFlowRule *rule, DpdkFlowPattern pat[2]);

typedef struct {
  int (*validate) (uint16_t port_id, const struct rte_flow_attr *attr,
      const struct rte_flow_item pattern[], const struct rte_flow_action actions[],
      struct rte_flow_error *error);
  struct rte_flow *(*create) (uint16_t port_id, const struct rte_flow_attr *attr,
      const struct rte_flow_item pattern[], const struct rte_flow_action actions[],
      struct rte_flow_error *error);
  int (*destroy) (uint16_t port_id, struct rte_flow *flow, struct rte_flow_error *error);
} DpdkFlowOps;

/* DPDK's own calls */
extern const DpdkFlowOps dpdk_flow_ops_rte;

/* Whether the device takes every rule of `rules` that names a queue (each as steered to
 * its queue), validated without creating anything. On failure sets DQ_ERROR_FLOW naming
 * `what` (the device), the rule, the driver's reason and what to do instead. */
gboolean dpdk_flow_check (const DpdkFlowOps *ops, uint16_t port_id, const char *what,
    const DqFlowRule *rules, guint n_rules, guint n_queues, GError **error);

typedef struct _DpdkSteerRule DpdkSteerRule;

/* The rte_flow rules steering packets to one RX queue */
typedef struct {
  const DpdkFlowOps *ops;
  uint16_t port_id;
  guint16 queue;
  DpdkSteerRule *rules;
  guint n_rules;
} DpdkSteering;

void dpdk_steering_init (DpdkSteering *s, const DpdkFlowOps *ops, uint16_t port_id, guint16 queue);

/* Makes the device steer to the queue exactly the rules of `rules` (the whole set) that
 * name it: creates the rte_flow rules not installed yet, then destroys those no longer
 * wanted. On failure destroys what it created, leaves the earlier rules in place and sets
 * DQ_ERROR_FLOW as dpdk_flow_check() does. */
gboolean dpdk_steering_apply (
    DpdkSteering *s, const char *what, const DqFlowRule *rules, guint n_rules, GError **error);

/* Destroys every rte_flow rule of the queue. */
void dpdk_steering_clear (DpdkSteering *s);

G_END_DECLS

#endif /* DAQIRI_DPDK_FLOW_H */
