/* The emulated ConnectX under the host rings (emu-rig.h). */
#include "emu-rig.h"

#include <string.h>

void
rig_open (Rig *r, const char *spec)
{
  GError *error = NULL;
  memset (r, 0, sizeof *r);
  r->dev = emu_port_ops.open (spec, &r->info, &r->caps, &error);
  g_assert_no_error (error);
  r->port = r->dev;
}

Mlx5Rxq *
rig_rx (Rig *r, guint log_stride, guint log_strides, guint log_wqes)
{
  Mlx5Rxq *q = mini_rxq_new (&emu_port_ops, r->dev, &r->caps, log_stride, log_strides, log_wqes);
  r->rx[r->n_rx++] = q;
  return q;
}

/* steers everything (or `rules`) to the rig's RQs as group `group` */
void
rig_steer (Rig *r, guint32 group, const DqFlowRule *rules, guint n_rules)
{
  Mlx5Rq *rqs[4];
  GError *error = NULL;
  for (guint i = 0; i < r->n_rx; i++)
    rqs[i] = mlx5_rxq_rq (r->rx[i]);
  g_assert_true (emu_port_ops.flows_set (r->dev, group, rqs, r->n_rx, rules, n_rules, &error));
  g_assert_no_error (error);
}

Mlx5Txq *
rig_tx (Rig *r, gsize ring, guint max_packet, gboolean csum)
{
  r->tx = mini_txq_new (&emu_port_ops, r->dev, &r->caps, ring, max_packet, 0, csum);
  return r->tx;
}

/* Opens a rig whose TX ring of `ring` bytes (frames of up to 1518 bytes, checksum offload
 * if csum) sends into one RX queue taking all traffic: 2 KiB strides, 8 per WQE,
 * 2^log_wqes WQEs. Returns the TX ring. */
Mlx5Txq *
rig_open_loop (Rig *r, const char *spec, guint log_wqes, gsize ring, gboolean csum)
{
  rig_open (r, spec);
  rig_rx (r, 11, 3, log_wqes);
  rig_steer (r, 1, NULL, 0);
  return rig_tx (r, ring, 1518, csum);
}

void
rig_close (Rig *r)
{
  if (r->tx != NULL)
    mlx5_txq_free (r->tx);
  for (guint i = 0; i < r->n_rx; i++)
    mlx5_rxq_free (r->rx[i]);
  emu_port_ops.close (r->dev);
}

static void
rxpkt_clear (gpointer p)
{
  g_free (((RxPkt *) p)->data);
}

GArray *
rxpkts_new (void)
{
  GArray *a = g_array_new (FALSE, TRUE, sizeof (RxPkt));
  g_array_set_clear_func (a, rxpkt_clear);
  return a;
}

/* Polls queue `qi` of the rig until `want` packets (in `out`) or `timeout_ms`; each
 * burst is checked (one WQE region, packets inside it) and released at once. */
void
rig_poll (Rig *r, guint qi, GArray *out, guint want, guint timeout_ms)
{
  Mlx5Rxq *q = r->rx[qi];
  gint64 deadline = g_get_monotonic_time () + timeout_ms * 1000;
  gsize region = (gsize) mlx5_rxq_stride_size (q) * mlx5_rxq_strides_per_wqe (q);
  DqPacket pkts[64];

  while (out->len < want && g_get_monotonic_time () < deadline) {
    Mlx5RxBurst b = { 0 };
    mlx5_rxq_refill (q);
    mlx5_rxq_poll (q, &b, pkts, 64);
    if (b.n_packets == 0) {
      g_usleep (20);
      continue;
    }
    guint8 *data = mlx5_rxq_burst_data (q, &b);
    gsize size = mlx5_rxq_burst_size (q, &b);
    /* the burst lies in its WQE's region */
    g_assert_cmpuint ((gsize) b.first_stride * mlx5_rxq_stride_size (q) + size, <=, region);
    for (guint i = 0; i < b.n_packets; i++) {
      g_assert_cmpuint (pkts[i].offset + pkts[i].length, <=, size);
      RxPkt p = { .data = g_memdup2 (data + pkts[i].offset, pkts[i].length),
        .len = pkts[i].length,
        .flow_id = pkts[i].flow_id,
        .flags = pkts[i].flags,
        .ts = pkts[i].timestamp,
        .queue = qi };
      g_array_append_val (out, p);
    }
    mlx5_rxq_release (q, b.wqe, b.strides);
  }
  mlx5_rxq_refill (q);
}

void
send_all (Mlx5Txq *tx, guint8 **frames, guint32 *lens, guint n)
{
  guint done = 0;
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (done < n) {
    done += mlx5_txq_send (tx, (const guint8 *const *) frames + done, lens + done, n - done);
    g_assert_cmpint (g_get_monotonic_time (), <, deadline);
    if (done < n)
      g_usleep (10);
  }
}

void
wait_idle (Rig *r)
{
  g_assert_true (emu_port_wait_idle (r->port, 5 * S_NS));
}
