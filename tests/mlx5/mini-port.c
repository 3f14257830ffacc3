/* A ConnectX played by the ring tests: see mini-port.h. */
#include "mini-port.h"

#include <string.h>

static gboolean
mini_mr_reg (gpointer dev, void *addr, gsize size, guint32 *lkey, gpointer *handle, GError **error)
{
  MiniPort *p = dev;
  p->mr_registered = TRUE;
  p->mr_addr = addr;
  p->mr_size = size;
  *lkey = p->lkey;
  *handle = p;
  return TRUE;
}

static void
mini_mr_dereg (gpointer dev, gpointer handle)
{
  MiniPort *p = dev;
  g_assert_true (handle == p);
  p->mr_registered = FALSE;
}

static gboolean
mini_cq_create (gpointer dev, Mlx5Cq *cq, GError **error)
{
  MiniPort *p = dev;
  p->cq = cq;
  cq->cqn = 7;
  return TRUE;
}

static void
mini_cq_destroy (gpointer dev, Mlx5Cq *cq)
{
  MiniPort *p = dev;
  p->cq = NULL;
}

static gboolean
mini_rq_create (gpointer dev, Mlx5Rq *rq, GError **error)
{
  MiniPort *p = dev;
  p->rq = rq;
  rq->rqn = 9;
  return TRUE;
}

static void
mini_rq_destroy (gpointer dev, Mlx5Rq *rq)
{
  MiniPort *p = dev;
  p->rq = NULL;
}

static gboolean
mini_rq_recover (gpointer dev, Mlx5Rq *rq, GError **error)
{
  MiniPort *p = dev;
  g_assert_true (rq == p->rq);
  p->rq_recoveries++;
  p->rq_dbr_at_reset = be32toh (rq->dbrec[MLX5_RCV_DBR]);
  return TRUE;
}

static gboolean
mini_sq_create (gpointer dev, Mlx5Sq *sq, GError **error)
{
  MiniPort *p = dev;
  p->sq = sq;
  sq->sqn = MINI_PORT_SQN;
  sq->bf_reg = (volatile guint64 *) p->bf;
  sq->bf_size = MINI_PORT_BF_SIZE;
  return TRUE;
}

static gboolean
mini_sq_recover (gpointer dev, Mlx5Sq *sq, GError **error)
{
  MiniPort *p = dev;
  g_assert_true (sq == p->sq);
  g_assert_cmpuint (sq->dbrec[MLX5_SND_DBR], ==, 0);
  p->sq_recoveries++;
  return TRUE;
}

static void
mini_sq_destroy (gpointer dev, Mlx5Sq *sq)
{
  MiniPort *p = dev;
  p->sq = NULL;
}

static void
mini_clock_info (gpointer dev, Mlx5ClockInfo *info)
{
  MiniPort *p = dev;
  *info = p->clock;
}

const Mlx5PortOps mini_port_ops = {
  .name = "mini",
  .mr_reg = mini_mr_reg,
  .mr_dereg = mini_mr_dereg,
  .cq_create = mini_cq_create,
  .cq_destroy = mini_cq_destroy,
  .rq_create = mini_rq_create,
  .rq_destroy = mini_rq_destroy,
  .rq_recover = mini_rq_recover,
  .sq_create = mini_sq_create,
  .sq_destroy = mini_sq_destroy,
  .sq_recover = mini_sq_recover,
  .clock_info = mini_clock_info,
};

const Mlx5Caps mini_port_caps = {
  .min_log_stride_size = 6,
  .max_log_stride_size = 13,
  .min_log_strides = 3,
  .max_log_strides = 16,
  .max_log_wqes = 16,
  .max_log_cq_size = 22,
  .max_log_wqebbs = 15,
  .device_frequency_khz = 1000000,
};

/* identity clock: ns = ticks */
void
mini_port_init (MiniPort *p, guint32 lkey)
{
  memset (p, 0, sizeof *p);
  p->lkey = lkey;
  p->clock.mult = 1u << 31;
  p->clock.shift = 31;
  p->clock.mask = G_MAXUINT64;
}

volatile struct mlx5_cqe64 *
mini_port_cqe_next (MiniPort *p)
{
  guint32 mask = (1u << p->cq->log_size) - 1;
  volatile struct mlx5_cqe64 *cqe =
      (volatile struct mlx5_cqe64 *) (p->cq->ring + (gsize) (p->cq_pi & mask) * 64);
  guint32 ci = be32toh (p->cq->dbrec[0]) & 0xffffff;
  g_assert_cmpuint ((p->cq_pi - ci) & 0xffffff, <, 1u << p->cq->log_size);
  memset ((void *) cqe, 0, 63);
  return cqe;
}

void
mini_port_cqe_publish (MiniPort *p, volatile struct mlx5_cqe64 *cqe, guint8 opcode)
{
  mlx5_dma_wmb ();
  cqe->op_own = (guint8) (opcode << 4) | ((p->cq_pi >> p->cq->log_size) & 1);
  p->cq_pi++;
}

Mlx5Rxq *
mini_rxq_new (const Mlx5PortOps *ops, gpointer dev, const Mlx5Caps *caps, guint log_stride,
    guint log_strides, guint log_wqes)
{
  Mlx5RxGeometry geo = { .log_stride_size = log_stride,
    .log_strides = log_strides,
    .log_wqes = log_wqes,
    .log_cq_size = log_strides + log_wqes };
  GError *error = NULL;
  Mlx5Rxq *q = mlx5_rxq_new (ops, dev, caps, &geo, &error);
  g_assert_no_error (error);
  g_assert_nonnull (q);
  return q;
}

Mlx5Txq *
mini_txq_new (const Mlx5PortOps *ops, gpointer dev, const Mlx5Caps *caps, gsize ring,
    guint max_packet, guint signal_every, gboolean csum)
{
  Mlx5TxConfig cfg = { .csum = csum, .inline_bytes = caps->tx_inline_bytes };
  GError *error = NULL;
  g_assert_true (mlx5_tx_geometry_choose (caps, "t", ring, max_packet, signal_every, &cfg, &error));
  g_assert_no_error (error);
  Mlx5Txq *q = mlx5_txq_new (ops, dev, &cfg, &error);
  g_assert_no_error (error);
  g_assert_nonnull (q);
  return q;
}
