/* Flow steering on a ConnectX (see hw-private.h): flow rules of every group of RQs turned
 * into mlx5dv_dr matchers and rules in the NIC RX root table, with tag actions and TIR
 * destinations (an RQ's direct TIR, or RSS TIRs over an RQT).
 *
 * The steering of the port is rebuilt whole whenever a group changes: the priority a
 * rule needs depends on every earlier rule of every group (mlx5_hw_flow_plan). The root
 * table's priorities are split in two banks of MLX5_HW_BANK_PRIORITIES; a rebuild
 * installs the new rules in the bank the old ones do not use, and removes the old ones
 * only then: a flow that both rule sets steer alike never loses a packet (a priority of
 * its own keeps an identical match legal), and a rebuild that fails leaves the old rules
 * as they were. Rule changes are rare (state and property changes); a rebuild costs a
 * few firmware commands per rule. */
#include "hw-private.h"

#include <errno.h>
#include <string.h>

#include "mlx5-rss.h"
#include "../prm/mlx5-ifc.h"

void
hw_group_free (HwGroup *g)
{
  if (g) {
    g_free (g->rqs);
    g_free (g->rules);
    g_free (g);
  }
}

void
hw_steering_free (HwSteering *st)
{
  if (st == NULL)
    return;
  for (guint i = 0; i < st->rules->len; i++)
    mlx5dv_dr_rule_destroy (g_ptr_array_index (st->rules, i));
  for (guint i = 0; i < st->matchers->len; i++)
    mlx5dv_dr_matcher_destroy (g_array_index (st->matchers, HwMatcher, i).matcher);
  for (guint i = 0; i < st->actions->len; i++)
    mlx5dv_dr_action_destroy (g_ptr_array_index (st->actions, i));
  /* RSS TIRs were created after their RQTs: destroy in reverse */
  for (guint i = st->objs->len; i-- > 0;) {
    struct mlx5dv_devx_obj *o = g_ptr_array_index (st->objs, i);
    hw_obj_destroy (&o);
  }
  g_ptr_array_unref (st->rules);
  g_array_unref (st->matchers);
  g_ptr_array_unref (st->actions);
  g_ptr_array_unref (st->objs);
  g_free (st);
}

static gboolean
dr_ensure (HwDev *dev, GError **error)
{
  if (dev->dr_table)
    return TRUE;
  errno = 0;
  if (dev->dr_domain == NULL)
    dev->dr_domain = mlx5dv_dr_domain_create (dev->ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  if (dev->dr_domain == NULL) {
    int err = errno;
    g_set_error (error, DQ_ERROR, hw_error_code_for (err),
        "%s: creating the receive steering domain (mlx5dv_dr_domain_create NIC_RX) "
        "failed: %s",
        dev->name, g_strerror (err));
    return FALSE;
  }
  /* level 0, the root table: the firmware steers there itself, which needs no
   * software-steering rights; its 16 priorities come before the kernel's own rules */
  dev->dr_table = mlx5dv_dr_table_create (dev->dr_domain, 0);
  if (dev->dr_table == NULL) {
    g_set_error (error, DQ_ERROR, hw_error_code_for (errno),
        "%s: creating the root steering table failed: %s", dev->name, g_strerror (errno));
    return FALSE;
  }
  return TRUE;
}

static struct mlx5dv_flow_match_parameters *
match_params (const guint8 *buf)
{
  struct mlx5dv_flow_match_parameters *p = g_malloc0 (sizeof *p + MLX5_HW_MATCH_BYTES);
  p->match_sz = MLX5_HW_MATCH_BYTES;
  memcpy (p->match_buf, buf, MLX5_HW_MATCH_BYTES);
  return p;
}

static struct mlx5dv_dr_action *
action_keep (HwSteering *st, struct mlx5dv_dr_action *a)
{
  if (a)
    g_ptr_array_add (st->actions, a);
  return a;
}

/* A group's destinations while one steering is built: the action of each RQ index and
 * RSS way (dest_slot), and the group's RQT once made (0: none yet). */
typedef struct {
  struct mlx5dv_dr_action **actions;
  guint32 rqtn;
} HwDests;

/* an RQ index as itself, then MLX5_HW_FLOW_DEST_RSS, _RSS_UDP, _RSS_TCP, _RSS_IP */
static guint
dest_slot (guint dest, guint n_rqs)
{
  return dest < n_rqs ? dest : n_rqs + (G_MAXUINT - dest);
}

/* the RQT listing every RQ of the group, made once per steering */
static gboolean
group_rqt (HwDev *dev, HwSteering *st, const HwGroup *g, HwDests *d, GError **error)
{
  if (d->rqtn != 0)
    return TRUE;
  GError *rqt_err = NULL;
  if (!mlx5_hw_rqt_check (g->n_rqs, dev->hw.log_max_rqt_size, &rqt_err)) {
    g_set_error (error, DQ_ERROR, rqt_err->code, "%s: %s", dev->name, rqt_err->message);
    g_error_free (rqt_err);
    return FALSE;
  }
  guint32 *rqns = g_new (guint32, g->n_rqs);
  for (guint i = 0; i < g->n_rqs; i++)
    rqns[i] = g->rqs[i]->rqn;
  guint size = mlx5_hw_rqt_size (g->n_rqs);
  gsize inlen = mlx5_cmd_create_rqt_in_bytes (size);
  void *in = g_malloc0 (inlen);
  guint32 out[DEVX_ST_SZ_DW (create_rqt_out)];
  mlx5_cmd_build_create_rqt (in, rqns, g->n_rqs);
  g_free (rqns);
  char *what = g_strdup_printf ("CREATE_RQT (%u entries over %u RQs)", size, g->n_rqs);
  struct mlx5dv_devx_obj *rqt = hw_obj_create (dev, what, in, inlen, out, sizeof out, error);
  g_free (what);
  g_free (in);
  if (rqt == NULL)
    return FALSE;
  g_ptr_array_add (st->objs, rqt);
  d->rqtn = DEVX_GET (create_rqt_out, out, rqtn);
  return TRUE;
}

/* a Toeplitz TIR over the group's RQT for one kind of traffic */
static struct mlx5dv_devx_obj *
rss_tir (HwDev *dev, HwSteering *st, const HwGroup *g, HwDests *d, guint dest, GError **error)
{
  static const struct {
    guint dest;
    guint8 l4_proto;
    const char *what;
  } kinds[] = {
    { MLX5_HW_FLOW_DEST_RSS_UDP, 17, "CREATE_TIR (RSS, Toeplitz over IPv4/UDP)" },
    { MLX5_HW_FLOW_DEST_RSS_TCP, 6, "CREATE_TIR (RSS, Toeplitz over IPv4/TCP)" },
    { MLX5_HW_FLOW_DEST_RSS_IP, 0, "CREATE_TIR (RSS, Toeplitz over IPv4 addresses)" },
  };
  guint k = 0;
  while (k < G_N_ELEMENTS (kinds) - 1 && kinds[k].dest != dest)
    k++;
  if (!group_rqt (dev, st, g, d, error))
    return NULL;
  guint32 tin[DEVX_ST_SZ_DW (create_tir_in)] = { 0 };
  guint32 tout[DEVX_ST_SZ_DW (create_tir_out)];
  mlx5_cmd_build_create_tir_rss (tin, d->rqtn, dev->td, mlx5_rss_default_key (), kinds[k].l4_proto);
  struct mlx5dv_devx_obj *tir =
      hw_obj_create (dev, kinds[k].what, tin, sizeof tin, tout, sizeof tout, error);
  if (tir != NULL)
    g_ptr_array_add (st->objs, tir);
  return tir;
}

/* the destination action of a group's RQ index or RSS way, created once per rebuild */
static struct mlx5dv_dr_action *
dest_action (HwDev *dev, HwSteering *st, const HwGroup *g, HwDests *d, guint dest, GError **error)
{
  guint slot = dest_slot (dest, g->n_rqs);
  g_return_val_if_fail (d->actions != NULL, NULL);
  if (d->actions[slot])
    return d->actions[slot];

  struct mlx5dv_devx_obj *tir;
  if (dest < g->n_rqs || g->n_rqs == 1) {
    /* an RQ, or RSS over one: its direct TIR */
    Mlx5Rq *rq = g->rqs[dest < g->n_rqs ? dest : 0];
    tir = ((HwRq *) rq->priv)->tir;
  } else {
    tir = rss_tir (dev, st, g, d, dest, error);
    if (tir == NULL)
      return NULL;
  }
  errno = 0;
  d->actions[slot] = action_keep (st, mlx5dv_dr_action_create_dest_devx_tir (tir));
  if (d->actions[slot] == NULL)
    g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
        "%s: creating a steering destination (TIR) action failed: %s", dev->name,
        g_strerror (errno));
  return d->actions[slot];
}

/* the matcher of a priority and mask, shared by every rule with both */
static struct mlx5dv_dr_matcher *
matcher_get (HwDev *dev, HwSteering *st, const Mlx5HwFlowEntry *e)
{
  for (guint i = 0; i < st->matchers->len; i++) {
    HwMatcher *m = &g_array_index (st->matchers, HwMatcher, i);
    if (m->priority == e->priority && m->criteria == e->criteria &&
        memcmp (m->mask, e->mask, MLX5_HW_MATCH_BYTES) == 0)
      return m->matcher;
  }
  struct mlx5dv_flow_match_parameters *mask = match_params (e->mask);
  errno = 0;
  HwMatcher m;
  m.matcher = mlx5dv_dr_matcher_create (dev->dr_table, e->priority, e->criteria, mask);
  g_free (mask);
  if (m.matcher == NULL)
    return NULL;
  m.priority = e->priority;
  m.criteria = e->criteria;
  memcpy (m.mask, e->mask, MLX5_HW_MATCH_BYTES);
  g_array_append_val (st->matchers, m);
  return m.matcher;
}

static gboolean
entry_install (HwDev *dev, HwSteering *st, const HwGroup *g, const Mlx5HwFlowEntry *e,
    HwDests *dests, GError **error)
{
  struct mlx5dv_dr_action *actions[2];
  guint n = 0;
  if (e->tag) {
    /* the tag first: it must precede the terminating destination */
    errno = 0;
    actions[n] = action_keep (st, mlx5dv_dr_action_create_tag (e->tag));
    if (actions[n] == NULL) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "%s: creating the tag action for mark %u failed: %s", dev->name, e->tag,
          g_strerror (errno));
      return FALSE;
    }
    n++;
  }
  actions[n] = dest_action (dev, st, g, dests, e->dest, error);
  if (actions[n] == NULL)
    return FALSE;
  n++;

  struct mlx5dv_dr_matcher *m = matcher_get (dev, st, e);
  int err = errno;
  struct mlx5dv_dr_rule *r = NULL;
  if (m) {
    struct mlx5dv_flow_match_parameters *value = match_params (e->value);
    errno = 0;
    r = mlx5dv_dr_rule_create (m, value, n, actions);
    err = errno;
    g_free (value);
    if (r)
      g_ptr_array_add (st->rules, r);
  }
  if (r == NULL) {
    const char *call = m ? "mlx5dv_dr_rule_create" : "mlx5dv_dr_matcher_create";
    if (e->rule == G_MAXUINT) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "%s: installing the rule that steers every packet to the RX queues failed: "
          "%s (%s at priority %u)",
          dev->name, g_strerror (err), call, e->priority);
    } else {
      char *text = dq_flow_rule_to_string (&g->rules[e->rule]);
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "%s: installing flow rule %u (\"%s\") failed: %s (%s at priority %u)", dev->name,
          e->rule + 1, text, g_strerror (err), call, e->priority);
      g_free (text);
    }
    return FALSE;
  }
  return TRUE;
}

static GArray *
groups_plan (GPtrArray *groups, GError **error)
{
  Mlx5HwFlowGroup *fg = g_new0 (Mlx5HwFlowGroup, MAX (groups->len, 1));
  for (guint i = 0; i < groups->len; i++) {
    const HwGroup *g = g_ptr_array_index (groups, i);
    fg[i].n_rqs = g->n_rqs;
    fg[i].rules = g->rules;
    fg[i].n_rules = g->n_rules;
  }
  GArray *plan = mlx5_hw_flow_plan (fg, groups->len, MLX5_HW_BANK_PRIORITIES, error);
  g_free (fg);
  return plan;
}

/* installs the rules of `groups` in priority bank `bank`; NULL and nothing left behind on
 * failure */
static HwSteering *
steering_build (HwDev *dev, GPtrArray *groups, guint bank, GError **error)
{
  GArray *plan = groups_plan (groups, error);
  if (plan == NULL)
    return NULL;
  HwSteering *st = g_new0 (HwSteering, 1);
  st->rules = g_ptr_array_new ();
  st->matchers = g_array_new (FALSE, FALSE, sizeof (HwMatcher));
  st->actions = g_ptr_array_new ();
  st->objs = g_ptr_array_new ();
  HwDests *dests = g_new0 (HwDests, groups->len);
  for (guint i = 0; i < groups->len; i++)
    dests[i].actions = g_new0 (struct mlx5dv_dr_action *,
        ((HwGroup *) g_ptr_array_index (groups, i))->n_rqs + MLX5_HW_FLOW_DESTS_RSS);
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < plan->len; i++) {
    Mlx5HwFlowEntry e = g_array_index (plan, Mlx5HwFlowEntry, i);
    e.priority = (guint16) (e.priority + bank * MLX5_HW_BANK_PRIORITIES);
    ok = entry_install (dev, st, g_ptr_array_index (groups, e.group), &e, &dests[e.group], error);
  }
  for (guint i = 0; i < groups->len; i++)
    g_free (dests[i].actions);
  g_free (dests);
  g_array_unref (plan);
  if (!ok) {
    hw_steering_free (st);
    return NULL;
  }
  return st;
}

/* replaces the installed steering by that of `groups`, the new rules in place before the
 * old ones go; with the lock held. On failure the old rules stay. */
static gboolean
steering_apply (HwDev *dev, GPtrArray *groups, GError **error)
{
  HwSteering *next = NULL;
  guint bank = dev->steering != NULL ? dev->bank ^ 1u : 0;

  if (groups->len > 0) {
    if (!dr_ensure (dev, error))
      return FALSE;
    next = steering_build (dev, groups, bank, error);
    if (next == NULL)
      return FALSE;
  }
  hw_steering_free (dev->steering);
  dev->steering = next;
  dev->bank = bank;
  return TRUE;
}

gboolean
hw_flows_set (gpointer priv, guint32 group, Mlx5Rq **rqs, guint n_rqs, const DqFlowRule *rules,
    guint n_rules, GError **error)
{
  HwDev *dev = priv;
  for (guint i = 0; i < n_rqs; i++) {
    if (rqs[i] == NULL || rqs[i]->priv == NULL) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "%s: steering to RX queue %u, which was not created", dev->name, i);
      return FALSE;
    }
  }

  HwGroup *g = NULL;
  if (n_rqs > 0) {
    g = g_new0 (HwGroup, 1);
    g->group = group;
    g->rqs = g_memdup2 (rqs, n_rqs * sizeof *rqs);
    g->n_rqs = n_rqs;
    g->rules = n_rules ? g_memdup2 (rules, n_rules * sizeof *rules) : NULL;
    g->n_rules = n_rules;
  }

  g_mutex_lock (&dev->lock);
  /* the new list: the group replaced in place (it keeps its position), removed, or
   * appended */
  GPtrArray *next = g_ptr_array_new ();
  HwGroup *old = NULL;
  for (guint i = 0; i < dev->groups->len; i++) {
    HwGroup *o = g_ptr_array_index (dev->groups, i);
    if (o->group == group) {
      old = o;
      if (g)
        g_ptr_array_add (next, g);
    } else {
      g_ptr_array_add (next, o);
    }
  }
  if (old == NULL && g)
    g_ptr_array_add (next, g);
  if (old == NULL && g == NULL) {
    /* removing a group that has nothing installed */
    g_ptr_array_unref (next);
    g_mutex_unlock (&dev->lock);
    return TRUE;
  }

  /* check the whole plan before touching what is installed */
  GArray *plan = groups_plan (next, error);
  gboolean ok = plan != NULL;
  if (plan)
    g_array_unref (plan);
  if (ok)
    ok = steering_apply (dev, next, error);
  if (ok) {
    g_ptr_array_unref (dev->groups);
    dev->groups = next;
    hw_group_free (old);
  } else {
    g_ptr_array_unref (next);
    hw_group_free (g);
  }
  g_mutex_unlock (&dev->lock);
  return ok;
}

/* drops the groups that steer to `rq`, before its TIR goes */
void
hw_groups_drop_rq (HwDev *dev, Mlx5Rq *rq)
{
  g_mutex_lock (&dev->lock);
  GPtrArray *next = g_ptr_array_new ();
  GPtrArray *gone = g_ptr_array_new ();
  for (guint i = 0; i < dev->groups->len; i++) {
    HwGroup *g = g_ptr_array_index (dev->groups, i);
    gboolean uses = FALSE;
    for (guint q = 0; q < g->n_rqs && !uses; q++)
      uses = g->rqs[q] == rq;
    g_ptr_array_add (uses ? gone : next, g);
  }
  if (gone->len > 0) {
    GError *err = NULL;
    if (!steering_apply (dev, next, &err)) {
      /* the old rules point at the queue that goes away: none at all is what is left */
      g_warning ("%s: %s; no packets reach the RX queues", dev->name, err->message);
      g_error_free (err);
      hw_steering_free (dev->steering);
      dev->steering = NULL;
    }
    for (guint i = 0; i < gone->len; i++)
      hw_group_free (g_ptr_array_index (gone, i));
    g_ptr_array_unref (dev->groups);
    dev->groups = next;
  } else {
    g_ptr_array_unref (next);
  }
  g_ptr_array_unref (gone);
  g_mutex_unlock (&dev->lock);
}
