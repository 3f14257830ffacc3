/* The control path of the emulated ConnectX (Mlx5PortOps). On hardware these calls are
 * DevX commands (CREATE_CQ, CREATE_RQ + MODIFY_RQ to RDY, CREATE_SQ, memory
 * registration) and mlx5dv_dr rules; here they hand the host's ring memory to the device
 * model, after the parameter checks a device would make. */
#include "emu-private.h"

#include "mlx5-dma.h"
#include "mlx5-rss.h"

#include <string.h>

#define EMU_MAX_LOG_WQES 16
#define EMU_MAX_LOG_CQ 22
#define EMU_MAX_LOG_WQEBBS 15
/* lkey = MR index << 8 | this byte (the "key" part of a real lkey) */
#define EMU_LKEY_KEY 0x5a

static gpointer
emu_open (const char *name, DqPortInfo *info, Mlx5Caps *caps, GError **error)
{
  EmuPort *p = emu_port_open (name, error);
  if (p == NULL)
    return NULL;
  info->clock_name = p->clock_name;
  info->clock_id = -1;
  memcpy (info->mac, p->cfg.mac, 6);
  info->mtu = p->cfg.mtu;
  memset (caps, 0, sizeof *caps);
  caps->min_log_stride_size = EMU_MIN_LOG_STRIDE_SIZE;
  caps->max_log_stride_size = EMU_MAX_LOG_STRIDE_SIZE;
  caps->min_log_strides = EMU_MIN_LOG_STRIDES;
  caps->max_log_strides = EMU_MAX_LOG_STRIDES;
  caps->max_log_wqes = EMU_MAX_LOG_WQES;
  caps->max_log_cq_size = EMU_MAX_LOG_CQ;
  caps->max_log_wqebbs = EMU_MAX_LOG_WQEBBS;
  caps->real_time_ts = p->cfg.real_time;
  caps->device_frequency_khz = p->cfg.freq_khz;
  caps->tx_csum = TRUE;
  caps->wait_on_time = TRUE;
  caps->tx_empw = TRUE;
  caps->tx_inline_bytes = p->cfg.inline_l2 ? MLX5_ETH_L2_INLINE_SIZE : 0;
  caps->pp_min_bps = EMU_PP_MIN_RATE;
  caps->pp_max_bps = p->cfg.rate_bps;
  /* compressed completions in both layouts, with FTAG_STRIDX mini-CQEs, as a
   * ConnectX-6 Dx or later */
  caps->cqe_comp_basic = TRUE;
  caps->cqe_comp_enhanced = TRUE;
  return p;
}

static void
emu_close (gpointer dev)
{
  emu_port_close (dev);
}

static gboolean
bad_param (EmuPort *p, const char *what, GError **error)
{
  g_set_error (
      error, DQ_ERROR, DQ_ERROR_DEVICE, "emu:%s: %s failed: bad parameter", p->cfg.name, what);
  return FALSE;
}

static void
steer_group_free (EmuSteerGroup *g)
{
  g_free (g->rqs);
  g_free (g->rules);
  g_free (g);
}

/* Steering that still names `erq` loses it: every group sending to it goes. */
static void
steer_drop_rq (EmuPort *p, EmuRq *erq)
{
  for (guint i = p->groups->len; i > 0; i--) {
    EmuSteerGroup *g = g_ptr_array_index (p->groups, i - 1);
    for (guint j = 0; j < g->n_rqs; j++) {
      if (g->rqs[j] == erq) {
        g_ptr_array_remove_index (p->groups, i - 1);
        steer_group_free (g);
        break;
      }
    }
  }
}

static void
sq_free (EmuSq *esq)
{
  g_free (esq->bf);
  g_free (esq);
}

/* Enters `mr` in the IOMMU table: its lkey names its slot. */
static void
mr_enter (EmuPort *p, EmuMr *mr, guint32 *lkey, gpointer *handle)
{
  g_mutex_lock (&p->lock);
  guint idx;
  for (idx = 0; idx < p->mrs->len; idx++)
    if (g_ptr_array_index (p->mrs, idx) == NULL)
      break;
  if (idx == p->mrs->len)
    g_ptr_array_add (p->mrs, NULL);
  mr->lkey = (idx << 8) | EMU_LKEY_KEY;
  p->mrs->pdata[idx] = mr;
  g_mutex_unlock (&p->lock);
  *lkey = mr->lkey;
  *handle = mr;
}

static gboolean
emu_mr_reg (gpointer dev, void *addr, gsize size, guint32 *lkey, gpointer *handle, GError **error)
{
  EmuPort *p = dev;
  if (addr == NULL || size == 0)
    return bad_param (p, "memory registration", error);
  EmuMr *mr = g_new0 (EmuMr, 1);
  mr->addr = addr;
  mr->size = size;
  mr_enter (p, mr, lkey, handle);
  return TRUE;
}

/* Device memory: the device writes a host shadow and copies from it, and reads it by
 * copies (see EmuMr). */
static gboolean
emu_mr_reg_device (gpointer dev, void *addr, gsize size, const DqRingMemory *memory, guint32 *lkey,
    gpointer *handle, GError **error)
{
  EmuPort *p = dev;
  if (addr == NULL || size == 0 || (memory->write == NULL && memory->read == NULL))
    return bad_param (p, "device memory registration", error);
  guint8 *shadow = memory->write != NULL ? g_try_malloc0 (size) : NULL;
  if (memory->write != NULL && shadow == NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "emu:%s: cannot allocate the %" G_GSIZE_FORMAT "-byte host shadow of the device-memory "
        "ring; allowed: a smaller ring-size",
        p->cfg.name, size);
    return FALSE;
  }
  EmuMr *mr = g_new0 (EmuMr, 1);
  mr->addr = addr;
  mr->size = size;
  mr->device = TRUE;
  mr->shadow = shadow;
  mr->memory = *memory;
  mr_enter (p, mr, lkey, handle);
  return TRUE;
}

static void
emu_mr_dereg (gpointer dev, gpointer handle)
{
  EmuPort *p = dev;
  EmuMr *mr = handle;
  g_mutex_lock (&p->lock);
  guint idx = mr->lkey >> 8;
  if (idx < p->mrs->len && p->mrs->pdata[idx] == mr) {
    p->mrs->pdata[idx] = NULL;
    g_free (mr->shadow);
    g_free (mr);
  }
  g_mutex_unlock (&p->lock);
}

static gboolean
emu_cq_create (gpointer dev, Mlx5Cq *cq, GError **error)
{
  EmuPort *p = dev;
  if (cq->ring == NULL || cq->dbrec == NULL || ((uintptr_t) cq->ring & 63) != 0 ||
      cq->log_size > EMU_MAX_LOG_CQ || cq->comp > MLX5_CQ_COMP_ENHANCED)
    return bad_param (p, "CREATE_CQ", error);
  EmuCq *ecq = g_new0 (EmuCq, 1);
  ecq->ring = cq->ring;
  ecq->dbrec = cq->dbrec;
  ecq->log_size = cq->log_size;
  ecq->comp = cq->comp;
  g_mutex_lock (&p->lock);
  ecq->cqn = p->next_id++;
  g_ptr_array_add (p->cqs, ecq);
  g_mutex_unlock (&p->lock);
  cq->cqn = ecq->cqn;
  cq->priv = ecq;
  return TRUE;
}

static void
emu_cq_destroy (gpointer dev, Mlx5Cq *cq)
{
  EmuPort *p = dev;
  g_mutex_lock (&p->lock);
  /* A CQ goes after its queues. Queues still attached stop here, so the device never
   * completes into a CQ that is gone (their destroy later finds nothing to free). */
  for (guint i = p->rqs->len; i > 0; i--) {
    EmuRq *rq = g_ptr_array_index (p->rqs, i - 1);
    if (rq->cq == cq->priv) {
      g_warning ("emu:%s: CQ %u destroyed before its RQ %u", p->cfg.name, rq->cq->cqn, rq->rqn);
      steer_drop_rq (p, rq);
      g_ptr_array_remove_index (p->rqs, i - 1);
    }
  }
  for (guint i = p->sqs->len; i > 0; i--) {
    EmuSq *sq = g_ptr_array_index (p->sqs, i - 1);
    if (sq->cq == cq->priv) {
      g_warning ("emu:%s: CQ %u destroyed before its SQ %u", p->cfg.name, sq->cq->cqn, sq->sqn);
      g_ptr_array_remove_index (p->sqs, i - 1);
      sq_free (sq);
    }
  }
  g_ptr_array_remove (p->cqs, cq->priv);
  emu_steering_changed (p);
  g_mutex_unlock (&p->lock);
  cq->priv = NULL;
}

static gboolean
cq_known (EmuPort *p, Mlx5Cq *cq)
{
  return cq != NULL && cq->priv != NULL && g_ptr_array_find (p->cqs, cq->priv, NULL);
}

/* A queue on a CQ the device knows gets the CQ, the next number and its place in `table`;
 * FALSE, with nothing entered, when the CQ is unknown. */
static gboolean
queue_attach (EmuPort *p, Mlx5Cq *cq, GPtrArray *table, gpointer q, EmuCq **q_cq, guint32 *qn)
{
  g_mutex_lock (&p->lock);
  if (!cq_known (p, cq)) {
    g_mutex_unlock (&p->lock);
    return FALSE;
  }
  *q_cq = cq->priv;
  *qn = p->next_id++;
  g_ptr_array_add (table, q);
  g_mutex_unlock (&p->lock);
  return TRUE;
}

static gboolean
emu_rq_create (gpointer dev, Mlx5Rq *rq, GError **error)
{
  EmuPort *p = dev;
  gboolean striding_ok = rq->log_strides >= EMU_MIN_LOG_STRIDES &&
      rq->log_strides <= EMU_MAX_LOG_STRIDES && rq->log_stride_size >= EMU_MIN_LOG_STRIDE_SIZE &&
      rq->log_stride_size <= EMU_MAX_LOG_STRIDE_SIZE;
  gboolean cyclic_ok = rq->split_header != 0 && rq->split_payload != 0;
  if (rq->wqes == NULL || rq->dbrec == NULL || rq->log_wqes > EMU_MAX_LOG_WQES ||
      !(rq->split_header != 0 ? cyclic_ok : striding_ok))
    return bad_param (p, "CREATE_RQ", error);
  EmuRq *erq = g_new0 (EmuRq, 1);
  erq->wqes = rq->wqes;
  erq->dbrec = rq->dbrec;
  erq->log_wqes = rq->log_wqes;
  erq->log_strides = rq->log_strides;
  erq->log_stride_size = rq->log_stride_size;
  erq->split_header = rq->split_header;
  if (!queue_attach (p, rq->cq, p->rqs, erq, &erq->cq, &erq->rqn)) {
    g_free (erq);
    return bad_param (p, "CREATE_RQ (unknown CQ)", error);
  }
  rq->rqn = erq->rqn;
  rq->priv = erq;
  return TRUE;
}

static void
emu_rq_destroy (gpointer dev, Mlx5Rq *rq)
{
  EmuPort *p = dev;
  g_mutex_lock (&p->lock);
  steer_drop_rq (p, rq->priv);
  g_ptr_array_remove (p->rqs, rq->priv);
  emu_steering_changed (p);
  g_mutex_unlock (&p->lock);
  rq->priv = NULL;
}

/* MODIFY_RQ ERR -> RST -> RDY: the WQE counter starts again at 0 */
static gboolean
emu_rq_recover (gpointer dev, Mlx5Rq *rq, GError **error)
{
  EmuPort *p = dev;
  g_mutex_lock (&p->lock);
  EmuRq *erq = rq->priv;
  if (erq == NULL || !g_ptr_array_find (p->rqs, erq, NULL)) {
    g_mutex_unlock (&p->lock);
    return bad_param (p, "MODIFY_RQ (unknown RQ)", error);
  }
  erq->in_error = FALSE;
  erq->hw_wqe = 0;
  erq->hw_stride = 0;
  erq->region = NULL;
  erq->region_mr = NULL; /* nothing is staged between device passes */
  g_mutex_unlock (&p->lock);
  return TRUE;
}

static gboolean
emu_sq_create (gpointer dev, Mlx5Sq *sq, GError **error)
{
  EmuPort *p = dev;
  if (sq->wqes == NULL || sq->dbrec == NULL || sq->log_wqebbs > EMU_MAX_LOG_WQEBBS)
    return bad_param (p, "CREATE_SQ", error);
  EmuSq *esq = g_new0 (EmuSq, 1);
  esq->wqes = sq->wqes;
  esq->dbrec = sq->dbrec;
  esq->log_wqebbs = sq->log_wqebbs;
  esq->bf = g_malloc0 ((gsize) 2 * EMU_BF_SIZE);
  if (!queue_attach (p, sq->cq, p->sqs, esq, &esq->cq, &esq->sqn)) {
    sq_free (esq);
    return bad_param (p, "CREATE_SQ (unknown CQ)", error);
  }
  sq->sqn = esq->sqn;
  sq->bf_reg = (volatile guint64 *) esq->bf;
  sq->bf_size = EMU_BF_SIZE;
  sq->priv = esq;
  emu_port_kick (p);
  return TRUE;
}

/* Locks the port for a MODIFY_SQ of `sq`; NULL, unlocked and with the error, when the
 * device does not know the SQ. */
static EmuSq *
sq_modify_begin (EmuPort *p, Mlx5Sq *sq, GError **error)
{
  g_mutex_lock (&p->lock);
  EmuSq *esq = sq->priv;
  if (esq != NULL && g_ptr_array_find (p->sqs, esq, NULL))
    return esq;
  g_mutex_unlock (&p->lock);
  bad_param (p, "MODIFY_SQ (unknown SQ)", error);
  return NULL;
}

/* MODIFY_SQ ERR -> RST -> RDY: WQE indices start again at 0 */
static gboolean
emu_sq_recover (gpointer dev, Mlx5Sq *sq, GError **error)
{
  EmuPort *p = dev;
  EmuSq *esq = sq_modify_begin (p, sq, error);
  if (esq == NULL)
    return FALSE;
  esq->in_error = FALSE;
  esq->hw_ci = 0;
  esq->db_end = 0;
  esq->stray_since = 0;
  esq->has_release = FALSE;
  esq->pace_ready = 0;
  esq->empw_next = 0;
  esq->empw_checked = FALSE;
  g_mutex_unlock (&p->lock);
  return TRUE;
}

/* The SQ's packet pacing rate (0: none), within caps' pp range */
static gboolean
emu_sq_set_rate (gpointer dev, Mlx5Sq *sq, guint64 rate_bps, guint typical_size, GError **error)
{
  EmuPort *p = dev;
  if (rate_bps != 0 && (rate_bps < EMU_PP_MIN_RATE || rate_bps > p->cfg.rate_bps))
    return bad_param (p, "SET_PP_RATE_LIMIT (rate out of range)", error);
  EmuSq *esq = sq_modify_begin (p, sq, error);
  if (esq == NULL)
    return FALSE;
  esq->rate_bps = rate_bps;
  memset (&esq->pace, 0, sizeof esq->pace);
  esq->pace_ready = 0;
  g_mutex_unlock (&p->lock);
  return TRUE;
}

static void
emu_sq_destroy (gpointer dev, Mlx5Sq *sq)
{
  EmuPort *p = dev;
  EmuSq *esq = sq->priv;
  g_mutex_lock (&p->lock);
  gboolean known = g_ptr_array_remove (p->sqs, esq);
  g_mutex_unlock (&p->lock);
  if (known)
    sq_free (esq);
  sq->priv = NULL;
  sq->bf_reg = NULL;
}

static gboolean
emu_flows_set (gpointer dev, guint32 group, Mlx5Rq **rqs, guint n_rqs, const DqFlowRule *rules,
    guint n_rules, GError **error)
{
  EmuPort *p = dev;
  EmuSteerGroup *g = NULL;

  for (guint i = 0; i < n_rules; i++) {
    if ((rules[i].keys & DQ_FLOW_QUEUE) && rules[i].queue >= n_rqs) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "emu:%s: flow rule %u sends to queue "
          "%u of %u (allowed queue=0 .. %u)",
          p->cfg.name, i + 1, rules[i].queue, n_rqs, n_rqs > 0 ? n_rqs - 1 : 0);
      return FALSE;
    }
    if ((rules[i].keys & DQ_FLOW_MARK) && rules[i].mark > MLX5_FLOW_TAG_BITS) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "emu:%s: flow rule %u: mark %u does "
          "not fit the 24-bit flow tag (allowed mark=0 .. %u)",
          p->cfg.name, i + 1, rules[i].mark, MLX5_FLOW_TAG_BITS);
      return FALSE;
    }
  }
  if (n_rqs > 0) {
    g = g_new0 (EmuSteerGroup, 1);
    g->group = group;
    g->n_rqs = n_rqs;
    g->rqs = g_new0 (EmuRq *, n_rqs);
    g->rqt_size = mlx5_rss_rqt_size (n_rqs);
    g->n_rules = n_rules;
    g->rules = g_memdup2 (rules, sizeof (DqFlowRule) * MAX (n_rules, 1));
  }

  g_mutex_lock (&p->lock);
  for (guint i = 0; g != NULL && i < n_rqs; i++) {
    if (rqs[i] == NULL || rqs[i]->priv == NULL || !g_ptr_array_find (p->rqs, rqs[i]->priv, NULL)) {
      g_mutex_unlock (&p->lock);
      steer_group_free (g);
      return bad_param (p, "steering rule (unknown RQ)", error);
    }
    g->rqs[i] = rqs[i]->priv;
  }
  guint at = p->groups->len;
  for (guint i = 0; i < p->groups->len; i++) {
    EmuSteerGroup *old = g_ptr_array_index (p->groups, i);
    if (old->group == group) {
      g_ptr_array_remove_index (p->groups, i);
      steer_group_free (old);
      at = i;
      break;
    }
  }
  if (g != NULL)
    g_ptr_array_insert (p->groups, (gint) at, g);
  emu_steering_changed (p);
  /* the spec's generator (gen=LEN) starts once a receive queue is there to take it */
  gboolean gen_start = g != NULL && p->cfg.gen_len > 0 && !p->gen_from_spec;
  if (gen_start)
    p->gen_from_spec = TRUE;
  g_mutex_unlock (&p->lock);
  if (gen_start) {
    EmuGenConfig gc = {
      .frame_len = p->cfg.gen_len,
      .count = p->cfg.gen_count,
      .rate_pps = p->cfg.gen_rate,
      .first_seq = 0,
      .lossless = p->cfg.gen_lossless,
    };
    /* the length was checked against the MTU with the spec */
    if (!emu_port_generate (p, &gc, error))
      return FALSE;
  }
  emu_port_kick (p);
  return TRUE;
}

static void
emu_rq_counters (gpointer dev, Mlx5Rq *rq, Mlx5RqCounters *counters)
{
  EmuPort *p = dev;
  EmuRq *erq = rq->priv;
  g_mutex_lock (&p->lock);
  gboolean known = erq != NULL && g_ptr_array_find (p->rqs, erq, NULL);
  counters->out_of_buffer = known ? erq->out_of_buffer : 0;
  g_mutex_unlock (&p->lock);
}

static guint64
emu_clock_now (gpointer dev)
{
  EmuPort *p = dev;
  return emu_ticks_to_ns (p, emu_port_ticks (p));
}

/* A snapshot for mlx5dv_ts_to_ns-style conversion: ns = ticks * 10^6 / f_kHz as
 * nsec + ((delta * mult + frac) >> shift). shift is the largest <= 31 that keeps mult in
 * 32 bits; at 1 GHz mult = 2^31, frac = 0: exact. */
static void
emu_clock_info (gpointer dev, Mlx5ClockInfo *info)
{
  EmuPort *p = dev;
  guint64 khz = p->cfg.freq_khz;
  guint64 ticks = emu_port_ticks (p);
  guint shift = 31;

  while (shift > 0 && ((G_GUINT64_CONSTANT (1000000) << shift) / khz) > G_MAXUINT32)
    shift--;
  __extension__ unsigned __int128 scaled = (unsigned __int128) ticks * 1000000;
  info->last_cycles = ticks;
  info->nsec = (guint64) (scaled / khz);
  info->frac = (guint64) (((scaled % khz) << shift) / khz);
  info->mult = (guint32) ((G_GUINT64_CONSTANT (1000000) << shift) / khz);
  info->shift = shift;
  info->mask = G_MAXUINT64;
}

const Mlx5PortOps emu_port_ops = {
  .name = "emu",
  .open = emu_open,
  .close = emu_close,
  .mr_reg = emu_mr_reg,
  .mr_dereg = emu_mr_dereg,
  .mr_reg_device = emu_mr_reg_device,
  .cq_create = emu_cq_create,
  .cq_destroy = emu_cq_destroy,
  .rq_create = emu_rq_create,
  .rq_destroy = emu_rq_destroy,
  .rq_recover = emu_rq_recover,
  .sq_create = emu_sq_create,
  .sq_destroy = emu_sq_destroy,
  .sq_recover = emu_sq_recover,
  .sq_set_rate = emu_sq_set_rate,
  .flows_set = emu_flows_set,
  .rq_counters = emu_rq_counters,
  .clock_now = emu_clock_now,
  .clock_info = emu_clock_info,
};
