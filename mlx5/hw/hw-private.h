/* What the ConnectX control path's files share (hw-port.c: open, queues, memory, clock;
 * hw-steer.c: flow steering): the device and queue objects and the DevX command calls.
 * Internal to mlx5/hw. */
#ifndef DAQIRI_MLX5_HW_PRIVATE_H
#define DAQIRI_MLX5_HW_PRIVATE_H

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "hw.h"
#include "hw-cmd.h"

G_BEGIN_DECLS

typedef struct {
  struct mlx5dv_devx_umem *ring;
  struct mlx5dv_devx_umem *dbr; /* NULL when the doorbell record shares the ring's */
} HwUmems;

typedef struct {
  struct mlx5dv_devx_obj *obj;
  HwUmems mem;
} HwCq;

typedef struct {
  struct mlx5dv_devx_obj *obj;
  struct mlx5dv_devx_obj *tir; /* direct TIR: the destination of steering rules */
  guint32 tirn;
  struct mlx5dv_devx_obj *counter; /* its queue counter set, or NULL */
  guint32 counter_set_id;
  guint32 out_of_buffer_raw; /* the device's 32-bit count when last read */
  guint64 out_of_buffer;     /* ... accumulated across wraps */
  HwUmems mem;
} HwRq;

typedef struct {
  struct mlx5dv_devx_obj *obj;
  struct mlx5dv_devx_uar *uar;
  HwUmems mem;
  struct mlx5dv_pp *pp; /* its packet pacing rate, NULL: none */
} HwSq;

/* the flow rules of one group of RQs (the queues of one element) */
typedef struct {
  guint32 group;
  Mlx5Rq **rqs;
  guint n_rqs;
  DqFlowRule *rules;
  guint n_rules;
} HwGroup;

typedef struct {
  guint16 priority;
  guint8 criteria;
  guint8 mask[MLX5_HW_MATCH_BYTES];
  struct mlx5dv_dr_matcher *matcher;
} HwMatcher;

/* what is installed for all groups */
typedef struct {
  GPtrArray *rules;   /* struct mlx5dv_dr_rule * */
  GArray *matchers;   /* HwMatcher */
  GPtrArray *actions; /* struct mlx5dv_dr_action * */
  GPtrArray *objs;    /* RQTs and RSS TIRs, in creation order */
} HwSteering;

typedef struct {
  char *name;   /* ibv device name, mlx5_0 */
  char *netdev; /* its first network interface, or NULL */
  char *clock_name;
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  guint32 pdn;
  struct mlx5dv_devx_obj *td_obj;
  guint32 td;
  struct mlx5dv_devx_uar *cq_uar;
  guint32 eqn;
  guint page_shift;
  Mlx5HwCaps hw;
  Mlx5Caps caps;
  gboolean vport_ok;
  guint tx_inline_mode; /* MLX5_INLINE_MODE_* its send WQEs must carry, from the caps */
  Mlx5HwClock clock;
  gboolean real_time; /* queues stamp the real-time clock */
  int phc_fd;         /* the PTP hardware clock, or -1 */

  GMutex lock; /* the members below */
  struct mlx5dv_devx_obj *tis;
  guint32 tisn;
  struct mlx5dv_dr_domain *dr_domain;
  struct mlx5dv_dr_table *dr_table;
  GPtrArray *groups;    /* HwGroup *, in the order they were first set */
  HwSteering *steering; /* installed for `groups`, NULL when none */
  guint bank;           /* the bank of priorities `steering` uses: 0 or 1 */
  gboolean counters_warned;
} HwDev;

/* ---- DevX commands (hw-port.c) ---- */

/* the DQ_ERROR code of an errno */
int hw_error_code_for (int err);
/* creates a DevX object; NULL with *error naming `what`, the status and the syndrome */
struct mlx5dv_devx_obj *hw_obj_create (HwDev *dev, const char *what, const void *in, gsize inlen,
    void *out, gsize outlen, GError **error);
/* destroys *obj (if any) and clears it */
void hw_obj_destroy (struct mlx5dv_devx_obj **obj);

/* ---- steering (hw-steer.c), with dev->lock held except hw_flows_set ---- */

void hw_group_free (HwGroup *g);
void hw_steering_free (HwSteering *st);
/* Mlx5PortOps.flows_set */
gboolean hw_flows_set (gpointer priv, guint32 group, Mlx5Rq **rqs, guint n_rqs,
    const DqFlowRule *rules, guint n_rules, GError **error);
/* an RQ going away: the groups that name it lose it */
void hw_groups_drop_rq (HwDev *dev, Mlx5Rq *rq);

G_END_DECLS

#endif /* DAQIRI_MLX5_HW_PRIVATE_H */
