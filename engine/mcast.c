/* Multicast group memberships (see mcast.h).
 *
 * A packet socket sees what the interface receives, and an interface takes multicast frames
 * only for groups someone joined (the NIC's multicast MAC filter, and IGMP reports to the
 * switches and routers that forward the group). Joining is an IPv4 socket's
 * IP_ADD_MEMBERSHIP on the interface; the membership lasts until IP_DROP_MEMBERSHIP or the
 * socket's close.
 */
#include "mcast.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static gboolean
groups_has (const guint32 *groups, guint n, guint32 group)
{
  for (guint i = 0; i < n; i++)
    if (groups[i] == group)
      return TRUE;
  return FALSE;
}

/* The groups `rules` name under `filter`, each once (g_free) */
static guint32 *
groups_wanted (DqRxFilter filter, const DqFlowRule *rules, guint n_rules, guint *n)
{
  guint32 *want = g_new (guint32, MAX (n_rules, 1));
  *n = 0;
  for (guint i = 0; filter == DQ_RX_FILTER_RULES && i < n_rules; i++) {
    guint32 group;
    if (dq_flow_rule_group (&rules[i], &group) && !groups_has (want, *n, group))
      want[(*n)++] = group;
  }
  return want;
}

void
dq_groups_init (DqGroups *g)
{
  g->fd = -1;
  g->groups = NULL;
  g->n_groups = 0;
}

static gboolean
group_membership (
    DqGroups *g, int ifindex, const char *what, guint32 group, gboolean join, GError **error)
{
  struct ip_mreqn req;
  memset (&req, 0, sizeof req);
  req.imr_multiaddr.s_addr = htonl (group);
  req.imr_ifindex = ifindex;
  if (setsockopt (
          g->fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &req, sizeof req) == 0)
    return TRUE;
  int err = errno;
  g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW, "%s: cannot %s the multicast group %u.%u.%u.%u: %s",
      what, join ? "join" : "leave", group >> 24, (group >> 16) & 0xff, (group >> 8) & 0xff,
      group & 0xff, g_strerror (err));
  return FALSE;
}

gboolean
dq_groups_sync (DqGroups *g, int ifindex, const char *what, DqRxFilter filter,
    const DqFlowRule *rules, guint n_rules, GError **error)
{
  guint n_want;
  guint32 *want = groups_wanted (filter, rules, n_rules, &n_want);
  if (n_want > 0 && g->fd < 0) {
    g->fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (g->fd < 0) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_IO,
          "%s: cannot open a socket to join multicast groups: %s", what, g_strerror (errno));
      g_free (want);
      return FALSE;
    }
  }
  /* join the new ones first: on a failure, leave those just joined and keep the old set */
  guint joined = 0;
  guint32 *fresh = g_new (guint32, MAX (n_want, 1));
  for (guint i = 0; i < n_want; i++) {
    if (groups_has (g->groups, g->n_groups, want[i]))
      continue;
    if (!group_membership (g, ifindex, what, want[i], TRUE, error)) {
      for (guint j = 0; j < joined; j++)
        group_membership (g, ifindex, what, fresh[j], FALSE, NULL);
      g_free (fresh);
      g_free (want);
      return FALSE;
    }
    fresh[joined++] = want[i];
  }
  g_free (fresh);
  for (guint i = 0; i < g->n_groups; i++)
    if (!groups_has (want, n_want, g->groups[i]))
      group_membership (g, ifindex, what, g->groups[i], FALSE, NULL);
  g_free (g->groups);
  g->groups = want;
  g->n_groups = n_want;
  return TRUE;
}

void
dq_groups_clear (DqGroups *g)
{
  /* closing the socket drops its memberships */
  if (g->fd >= 0)
    close (g->fd);
  g->fd = -1;
  g_clear_pointer (&g->groups, g_free);
  g->n_groups = 0;
}
