/* Multicast group memberships for engines whose device sits behind a kernel network
 * interface (afpacket; a ConnectX through its netdev): an interface takes multicast frames
 * only for groups joined on it (the NIC's multicast MAC filter, IGMP reports to the
 * network). A DqGroups holds IGMP memberships on one interface through a socket of its own,
 * one per group the flow rules name (dq_flow_rule_group); they last until changed or
 * cleared (closing the socket drops them). Internal to the engines.
 */
#ifndef DAQIRI_MCAST_H
#define DAQIRI_MCAST_H

#include <glib.h>
#include "daqiri-engine.h"

G_BEGIN_DECLS

typedef struct {
  int fd; /* -1 until a group is joined */
  guint32 *groups;
  guint n_groups;
} DqGroups;

/* An empty set (no socket yet) */
void dq_groups_init (DqGroups *g);
/* Joins, on interface `ifindex`, the groups the rules name under `filter` (none under
 * `all` or `none`) not joined yet, then leaves those no rule names any more. FALSE
 * (DQ_ERROR_FLOW, naming `what` and the group) when one cannot be joined: nothing
 * changed. */
gboolean dq_groups_sync (DqGroups *g, int ifindex, const char *what, DqRxFilter filter,
    const DqFlowRule *rules, guint n_rules, GError **error);
/* Leaves every group */
void dq_groups_clear (DqGroups *g);

G_END_DECLS

#endif /* DAQIRI_MCAST_H */
