/* The mlx5 engine: DqEngineOps over the mlx5 rings (rx.c, tx.c) for any control path
 * (Mlx5PortOps). Nothing here knows whether the device is a ConnectX or the emulated
 * one; the only difference is the ops table a device prefix selects.
 *
 * RX: one striding RQ per queue. rxq_poll() reads CQEs into an open burst record; the
 * burst is handed out when it holds burst_packets packets, when its WQE is used up (a
 * burst never crosses a WQE: it is one contiguous range of one WQE's region), or when
 * its first packet waited burst_timeout_ns. Releasing a burst gives its strides back
 * (any thread); the polling thread re-posts WQEs in ring order. Queues of one element
 * (one group_id) are steered as a group once all of them exist; a change of their rules
 * while they receive replaces the group's steering in one step of the control path, which
 * installs the new rules before it removes the old ones.
 *
 * TX: one SQ per queue, frames copied into its slots (mlx5_txq_send), or written in
 * place: txq_acquire lends a run of slots that never wraps the slab end (so the run is
 * one contiguous range) and is at most half the slots; txq_commit sends the frames of
 * the run (mlx5_txq_commit) and takes the unused slots back. Waits for slots by reading
 * the TX CQ. Both directions wait with a spin, then in short sleeps on an eventfd that
 * rxq_wakeup/txq_wakeup signal.
 */
#include "mlx5-engine.h"
#include "burst-pool.h"
#include "engine-util.h"
#include "mcast.h"

#include "mlx5-dma.h"
#include "mlx5-mem.h"
#include "mlx5-port.h"
#include "rx.h"
#include "tx.h"
#include "emu.h"

#ifdef DQ_HAVE_MLX5_HW
#include "hw/hw.h"
#endif

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#define SPIN_POLLS 256
/* RX: cpu_relax()es spent spinning on an empty CQ before sleeping (~13 ns each on a
 * current x86), and the most between two looks at it */
#define SPIN_RELAXES 1536
#define SPIN_BACKOFF_MAX 64
#define SLEEP_MIN_NS G_GINT64_CONSTANT (10000)
#define SLEEP_MAX_NS G_GINT64_CONSTANT (200000)
#define CLOCK_REFRESH_NS G_GINT64_CONSTANT (250000000)
/* while packets flow, the RX poll loop reads the clock every this many polls */
#define CLOCK_READ_POLLS 32
/* the largest frame (without FCS) an mlx5 port takes: MTU + Ethernet header + one VLAN tag */
#define FRAME_OVER_MTU 18

/* ---------------------------------------------------------------------------------- */
/* helpers */

/* Sleeps up to `ns` or until the eventfd is signalled (then drained): TRUE if woken. */
static gboolean
wait_on (int fd, gint64 ns)
{
  struct pollfd pfd = { .fd = fd, .events = POLLIN };
  struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
  if (ppoll (&pfd, 1, &ts, NULL) > 0 && (pfd.revents & POLLIN)) {
    dq_eventfd_drain (fd);
    return TRUE;
  }
  return FALSE;
}

/* ---------------------------------------------------------------------------------- */
/* ports */

typedef struct _Mlx5Group Mlx5Group;
typedef struct _Mlx5EngRxq Mlx5EngRxq;

typedef struct {
  const Mlx5PortOps *ops;
  gpointer dev;
  char *what; /* "emu:x", for messages */
  Mlx5Caps caps;
  guint mtu;
  guint8 mac[6];

  /* engine keys of the device string */
  guint stride;
  guint strides;
  guint tx_signal;
  gboolean tx_csum;
  gboolean tx_eth_src;
  Mlx5RxCqeComp cqe_comp;

  GMutex lock; /* groups */
  GPtrArray *groups;
} Mlx5EngPort;

/* the RX queues of one element, steered together */
struct _Mlx5Group {
  guint32 group_id;
  guint n_queues;
  Mlx5EngRxq **queues;
  guint n_present;
  DqRxFilter filter;
  DqFlowRule *rules;
  guint n_rules;
  gboolean installed; /* steering in place (all queues there, filter not NONE) */
  DqGroups mcast;     /* multicast groups its rules name, joined on the netdev */
};

static gboolean
parse_key_uint (const char *what, const char *key, const char *value, guint min, guint max,
    gboolean pow2, guint *out, GError **error)
{
  char *end = NULL;
  guint64 v = g_ascii_strtoull (value, &end, 10);
  if (!g_ascii_isdigit (*value) || *end != '\0' || v < min || v > max ||
      (pow2 && (v & (v - 1)) != 0)) {
    char *s = g_strescape (value, NULL);
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: %s=%s is not allowed (allowed: %s%u "
        ".. %u)",
        what, key, s, pow2 ? "a power of two " : "", min, max);
    g_free (s);
    return FALSE;
  }
  *out = (guint) v;
  return TRUE;
}

static gboolean
parse_key_bool (const char *what, const char *key, const char *value, gboolean *out, GError **error)
{
  if (g_ascii_strcasecmp (value, "on") == 0 || strcmp (value, "1") == 0 ||
      g_ascii_strcasecmp (value, "true") == 0 || g_ascii_strcasecmp (value, "yes") == 0) {
    *out = TRUE;
    return TRUE;
  }
  if (g_ascii_strcasecmp (value, "off") == 0 || strcmp (value, "0") == 0 ||
      g_ascii_strcasecmp (value, "false") == 0 || g_ascii_strcasecmp (value, "no") == 0) {
    *out = FALSE;
    return TRUE;
  }
  char *s = g_strescape (value, NULL);
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "%s: %s=%s is not allowed (allowed: on or "
      "off)",
      what, key, s);
  g_free (s);
  return FALSE;
}

static gboolean
parse_key_cqe_comp (const char *what, const char *value, Mlx5RxCqeComp *out, GError **error)
{
  static const struct {
    const char *name;
    Mlx5RxCqeComp v;
  } values[] = {
    { "off", MLX5_RX_CQE_COMP_OFF },
    { "0", MLX5_RX_CQE_COMP_OFF },
    { "on", MLX5_RX_CQE_COMP_ON },
    { "1", MLX5_RX_CQE_COMP_ON },
    { "basic", MLX5_RX_CQE_COMP_BASIC },
    { "enhanced", MLX5_RX_CQE_COMP_ENHANCED },
  };
  for (guint i = 0; i < G_N_ELEMENTS (values); i++) {
    if (g_ascii_strcasecmp (value, values[i].name) == 0) {
      *out = values[i].v;
      return TRUE;
    }
  }
  char *s = g_strescape (value, NULL);
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "%s: cqe-comp=%s is not allowed (allowed: off or 0, on or 1, basic, enhanced)", what, s);
  g_free (s);
  return FALSE;
}

/* Takes the engine's keys out of "NAME,KEY=VALUE,..."; returns the rest for the control
 * path, or NULL on a bad value. */
static char *
port_take_keys (Mlx5EngPort *port, const char *arg, GError **error)
{
  char **parts = g_strsplit (arg, ",", -1);
  GString *rest = g_string_new (parts[0]);
  gboolean ok = TRUE;

  for (guint i = 1; parts[i] != NULL && ok; i++) {
    char *eq = strchr (parts[i], '=');
    if (eq == NULL) {
      g_string_append_printf (rest, ",%s", parts[i]);
      continue;
    }
    *eq = '\0';
    const char *key = parts[i], *value = eq + 1;
    if (strcmp (key, "stride") == 0)
      ok = parse_key_uint (port->what, key, value, 64, 8192, TRUE, &port->stride, error);
    else if (strcmp (key, "strides") == 0)
      ok = parse_key_uint (port->what, key, value, 8, 65536, TRUE, &port->strides, error);
    else if (strcmp (key, "tx-signal") == 0)
      ok = parse_key_uint (port->what, key, value, 1, 16384, FALSE, &port->tx_signal, error);
    else if (strcmp (key, "tx-csum") == 0)
      ok = parse_key_bool (port->what, key, value, &port->tx_csum, error);
    else if (strcmp (key, "tx-eth-src") == 0)
      ok = parse_key_bool (port->what, key, value, &port->tx_eth_src, error);
    else if (strcmp (key, "cqe-comp") == 0)
      ok = parse_key_cqe_comp (port->what, value, &port->cqe_comp, error);
    else
      g_string_append_printf (rest, ",%s=%s", key, value);
  }
  g_strfreev (parts);
  if (!ok) {
    g_string_free (rest, TRUE);
    return NULL;
  }
  return g_string_free (rest, FALSE);
}

static void
eng_port_free (Mlx5EngPort *port)
{
  if (port->groups != NULL)
    g_ptr_array_free (port->groups, TRUE);
  g_mutex_clear (&port->lock);
  g_free (port->what);
  g_free (port);
}

static gpointer
eng_port_open (const Mlx5PortOps *ops, const char *arg, DqPortInfo *info, GError **error)
{
  Mlx5EngPort *port = g_new0 (Mlx5EngPort, 1);
  port->ops = ops;
  g_mutex_init (&port->lock);
  port->groups = g_ptr_array_new ();
  port->tx_csum = TRUE;
  char *name = g_strndup (arg, strcspn (arg, ","));
  port->what = g_strdup_printf ("%s:%s", ops->name, name);
  g_free (name);

  char *rest = port_take_keys (port, arg, error);
  if (rest == NULL) {
    eng_port_free (port);
    return NULL;
  }
  port->dev = ops->open (rest, info, &port->caps, error);
  g_free (rest);
  if (port->dev == NULL) {
    eng_port_free (port);
    return NULL;
  }
  /* a layout the device does not have is refused now, not at the first queue */
  Mlx5CqComp comp;
  if (!mlx5_rx_cqe_comp_choose (&port->caps, port->what, port->cqe_comp, &comp, error)) {
    ops->close (port->dev);
    eng_port_free (port);
    return NULL;
  }
  port->mtu = info->mtu;
  memcpy (port->mac, info->mac, 6);
  /* the device writes its rings itself: a ConnectX by DMA (GPU memory through a dma-buf),
   * the emulated one by copies */
  info->device_dma = ops->mr_reg_dmabuf != NULL || ops->mr_reg_device != NULL;
  info->header_split = TRUE;
  return port;
}

static void
eng_port_close (gpointer priv)
{
  Mlx5EngPort *port = priv;
  port->ops->close (port->dev);
  eng_port_free (port);
}

static guint64
eng_port_time (gpointer priv)
{
  Mlx5EngPort *port = priv;
  return port->ops->clock_now (port->dev);
}

/* ---------------------------------------------------------------------------------- */
/* RX queues */

typedef struct _Mlx5BurstRec Mlx5BurstRec;

/* A burst's record: burst_packets descriptors, then (with pack) as many stride words. */
struct _Mlx5BurstRec {
  DqBurstLink link;
  guint32 wqe;
  guint32 strides;
  DqPacket packets[];
};

struct _Mlx5EngRxq {
  Mlx5EngPort *port;
  Mlx5Rxq *ring;
  Mlx5Group *group;
  guint queue_index;
  guint burst_packets;
  guint64 burst_timeout_ns;
  guint max_packet;
  gboolean pack;         /* the records carry DqBurst.words (descriptor memory of the ring) */
  guint log_stride_size; /* the ring's stride: DqBurst.word_shift */
  int wake_fd;

  /* polling thread */
  Mlx5BurstRec *open; /* the burst being filled */
  Mlx5RxBurst ob;
  gint64 open_since; /* when its first packet was read */
  gint64 clock_refresh_at;
  guint backoff; /* cpu_relax()es between two looks at an empty CQ */

  DqBurstPool recs;

  guint64 bursts;
  guint64 truncated;
};

static gboolean
rx_rules_check (
    Mlx5EngPort *port, const DqFlowRule *rules, guint n_rules, guint n_queues, GError **error)
{
  if (!dq_flow_rules_check_queues (port->what, rules, n_rules, n_queues, error))
    return FALSE;
  for (guint i = 0; i < n_rules; i++) {
    const DqFlowRule *rule = &rules[i];
    guint32 group;
    /* a ConnectX takes only the groups joined on its netdev: without one, none */
    if (port->ops->netdev_ifindex != NULL && dq_flow_rule_group (rule, &group) &&
        port->ops->netdev_ifindex (port->dev) <= 0) {
      char *text = dq_flow_rule_to_string (rule);
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "%s: flow rule %u (%s) names the multicast group %u.%u.%u.%u, which is joined on "
          "the device's network interface, and it has none (allowed: unicast destinations)",
          port->what, i + 1, text, group >> 24, (group >> 16) & 0xff, (group >> 8) & 0xff,
          group & 0xff);
      g_free (text);
      return FALSE;
    }
    if ((rule->keys & DQ_FLOW_MARK) && rule->mark > MLX5_FLOW_TAG_BITS) {
      char *text = dq_flow_rule_to_string (rule);
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "%s: flow rule %u (%s): mark %u does not "
          "fit the NIC's 24-bit flow tag (allowed mark=0 .. %u)",
          port->what, i + 1, text, rule->mark, MLX5_FLOW_TAG_BITS);
      g_free (text);
      return FALSE;
    }
  }
  return TRUE;
}

/* Puts the group's steering in place for `filter` and `rules` (every queue is there):
 * the rules, a catch-all over the queues (DQ_RX_FILTER_ALL), or none at all
 * (DQ_RX_FILTER_NONE: the port's traffic goes where it would without us). Port lock
 * held. On failure what was installed stays. */
static gboolean
rx_group_steer (Mlx5EngPort *port, Mlx5Group *g, DqRxFilter filter, const DqFlowRule *rules,
    guint n_rules, GError **error)
{
  /* the groups first: a group that cannot be joined changes nothing */
  if (port->ops->netdev_ifindex != NULL &&
      !dq_groups_sync (&g->mcast, port->ops->netdev_ifindex (port->dev), port->what, filter, rules,
          n_rules, error))
    return FALSE;
  if (filter == DQ_RX_FILTER_NONE) {
    if (g->installed)
      port->ops->flows_set (port->dev, g->group_id, NULL, 0, NULL, 0, NULL);
    g->installed = FALSE;
    return TRUE;
  }
  if (filter == DQ_RX_FILTER_ALL)
    n_rules = 0;
  Mlx5Rq **rqs = g_new (Mlx5Rq *, g->n_queues);
  for (guint i = 0; i < g->n_queues; i++)
    rqs[i] = mlx5_rxq_rq (g->queues[i]->ring);
  gboolean ok =
      port->ops->flows_set (port->dev, g->group_id, rqs, g->n_queues, rules, n_rules, error);
  g_free (rqs);
  if (ok)
    g->installed = TRUE;
  return ok;
}

static void
rx_group_keep_rules (Mlx5Group *g, DqRxFilter filter, const DqFlowRule *rules, guint n_rules)
{
  g_free (g->rules);
  g->filter = filter;
  g->n_rules = n_rules;
  g->rules = g_memdup2 (rules, sizeof (DqFlowRule) * MAX (n_rules, 1));
}

/* Joins the queue to its group; once every queue of the group exists, the group's
 * steering is installed. */
static gboolean
rx_group_join (Mlx5EngRxq *rxq, const DqRxConfig *config, GError **error)
{
  Mlx5EngPort *port = rxq->port;
  Mlx5Group *g = NULL;
  gboolean ok = TRUE;

  g_mutex_lock (&port->lock);
  for (guint i = 0; i < port->groups->len; i++) {
    Mlx5Group *x = g_ptr_array_index (port->groups, i);
    if (x->group_id == config->group_id)
      g = x;
  }
  if (g == NULL) {
    g = g_new0 (Mlx5Group, 1);
    dq_groups_init (&g->mcast);
    g->group_id = config->group_id;
    g->n_queues = config->n_queues;
    g->queues = g_new0 (Mlx5EngRxq *, config->n_queues);
    rx_group_keep_rules (g, config->filter, config->flows, config->n_flows);
    g_ptr_array_add (port->groups, g);
  }
  if (config->n_queues != g->n_queues || g->queues[config->queue_index] != NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_BUSY,
        "%s: RX queue %u of group %u is taken "
        "(or the group has %u queues, not %u)",
        port->what, config->queue_index, config->group_id, g->n_queues, config->n_queues);
    g_mutex_unlock (&port->lock);
    return FALSE;
  }
  g->queues[config->queue_index] = rxq;
  g->n_present++;
  rxq->group = g;
  if (g->n_present == g->n_queues)
    ok = rx_group_steer (port, g, g->filter, g->rules, g->n_rules, error);
  g_mutex_unlock (&port->lock);
  return ok;
}

static void
rx_group_leave (Mlx5EngRxq *rxq)
{
  Mlx5EngPort *port = rxq->port;
  Mlx5Group *g = rxq->group;

  if (g == NULL)
    return;
  g_mutex_lock (&port->lock);
  if (g->installed) {
    port->ops->flows_set (port->dev, g->group_id, NULL, 0, NULL, 0, NULL);
    g->installed = FALSE;
  }
  g->queues[rxq->queue_index] = NULL;
  if (--g->n_present == 0) {
    dq_groups_clear (&g->mcast);
    g_ptr_array_remove (port->groups, g);
    g_free (g->queues);
    g_free (g->rules);
    g_free (g);
  }
  g_mutex_unlock (&port->lock);
  rxq->group = NULL;
}

static void
eng_rxq_destroy (gpointer priv)
{
  Mlx5EngRxq *rxq = priv;
  if (rxq == NULL)
    return;
  rx_group_leave (rxq);
  mlx5_rxq_free (rxq->ring);
  dq_burst_pool_clear (&rxq->recs);
  if (rxq->wake_fd >= 0)
    close (rxq->wake_fd);
  g_free (rxq);
}

static gpointer
eng_rxq_create (gpointer port_priv, const DqRxConfig *config, GError **error)
{
  Mlx5EngPort *port = port_priv;
  Mlx5RxGeometry geo;
  guint max_packet = config->max_packet_size ? config->max_packet_size : port->mtu + FRAME_OVER_MTU;

  if (!rx_rules_check (port, config->flows, config->n_flows, config->n_queues, error))
    return NULL;
  if (config->header_size != 0) {
    if (!mlx5_rx_geometry_split (&port->caps, port->what, config->ring_bytes, max_packet,
            port->mtu + FRAME_OVER_MTU, config->header_size, &geo, error))
      return NULL;
  } else {
    Mlx5CqComp comp;
    if (!mlx5_rx_geometry_choose (&port->caps, port->what, config->ring_bytes, max_packet,
            port->stride, port->strides, &geo, error) ||
        !mlx5_rx_cqe_comp_choose (&port->caps, port->what, port->cqe_comp, &comp, error))
      return NULL;
    mlx5_rx_geometry_compress (&geo, comp);
  }

  Mlx5EngRxq *rxq = g_new0 (Mlx5EngRxq, 1);
  rxq->port = port;
  rxq->queue_index = config->queue_index;
  rxq->burst_packets = config->burst_packets;
  rxq->burst_timeout_ns = config->burst_timeout_ns;
  rxq->max_packet = max_packet;
  /* the stride words give the ring's offsets: none with header-data split, where a reader of
   * the payloads computes their own, nor where a length or a stride does not fit a word (a
   * burst lies in one WQE, so its stride indexes do) */
  rxq->log_stride_size = geo.log_stride_size;
  rxq->pack = config->ring_memory != NULL && config->ring_memory->desc_alloc != NULL &&
      config->header_size == 0 && max_packet <= DQ_BURST_WORD_MAX_LENGTH &&
      geo.log_stride_size <= DQ_BURST_WORD_MAX_SHIFT &&
      geo.log_strides <= DQ_BURST_WORD_LENGTH_SHIFT;
  dq_burst_pool_init (&rxq->recs,
      sizeof (Mlx5BurstRec) +
          rxq->burst_packets * (sizeof (DqPacket) + (rxq->pack ? sizeof (guint32) : 0)),
      config->ring_memory);
  rxq->wake_fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (rxq->wake_fd < 0) {
    g_set_error (
        error, DQ_ERROR, DQ_ERROR_IO, "%s: eventfd() failed: %s", port->what, g_strerror (errno));
    goto fail;
  }
  geo.memory = config->ring_memory;
  rxq->ring = mlx5_rxq_new (port->ops, port->dev, &port->caps, &geo, error);
  if (rxq->ring == NULL)
    goto fail;
  if (!rx_group_join (rxq, config, error))
    goto fail;
  rxq->clock_refresh_at = dq_mono_ns () + CLOCK_REFRESH_NS;
  rxq->backoff = 1;
  return rxq;

fail:
  eng_rxq_destroy (rxq);
  return NULL;
}

/* Hands the open burst out. */
static void
rx_burst_emit (Mlx5EngRxq *rxq, DqBurst *burst)
{
  Mlx5BurstRec *rec = rxq->open;
  guint64 truncated = 0;
  guint32 *words = rxq->pack ? (guint32 *) (rec->packets + rxq->burst_packets) : NULL;

  rec->wqe = rxq->ob.wqe;
  rec->strides = rxq->ob.strides;
  for (guint i = 0; i < rxq->ob.n_packets; i++) {
    DqPacket *p = &rec->packets[i];
    if (G_UNLIKELY (p->length > rxq->max_packet)) {
      p->length = rxq->max_packet;
      p->flags |= DQ_PACKET_FLAG_TRUNCATED;
      truncated++;
    }
    if (words != NULL)
      words[i] = p->offset >> rxq->log_stride_size | p->length << DQ_BURST_WORD_LENGTH_SHIFT;
  }
  burst->words = words;
  burst->word_shift = rxq->log_stride_size;
  burst->data = mlx5_rxq_burst_data (rxq->ring, &rxq->ob);
  burst->size = mlx5_rxq_burst_size (rxq->ring, &rxq->ob);
  burst->n_packets = rxq->ob.n_packets;
  burst->packets = rec->packets;
  burst->memory = mlx5_rxq_memory_kind (rxq->ring);
  burst->payload = mlx5_rxq_burst_payload (rxq->ring, &rxq->ob);
  burst->payload_size = mlx5_rxq_burst_payload_size (rxq->ring, &rxq->ob);
  mlx5_rxq_split_layout (
      rxq->ring, &burst->header_size, &burst->header_stride, &burst->payload_stride);
  if (burst->header_size != 0) {
    /* the headers are host memory; the ring's memory holds the payloads */
    burst->payload_memory = burst->memory;
    burst->memory = DQ_MEMORY_HOST;
  }
  burst->range = rec;
  rxq->open = NULL;
  rxq->open_since = 0;
  MLX5_COUNTER_ADD (rxq->bursts, 1);
  if (truncated > 0)
    MLX5_COUNTER_ADD (rxq->truncated, truncated);
}

static int
eng_rxq_poll (gpointer priv, DqBurst *burst, gint64 timeout_ns, GError **error)
{
  Mlx5EngRxq *rxq = priv;
  gint64 deadline = -1;
  gint64 sleep_ns = SLEEP_MIN_NS;
  guint spun = 0, flowing = 0;
  /* The clock is read once per call, then while packets flow only every few polls, and
   * whenever the CQ is empty: at millions of packets a second a clock_gettime() per
   * poll cost as much as reading the CQEs. Timeouts are checked against it when
   * nothing comes, so they keep their meaning. */
  gint64 now = dq_mono_ns ();

  for (;;) {
    /* a fresh snapshot before converting timestamps (it is only good for seconds) */
    if (now >= rxq->clock_refresh_at) {
      mlx5_rxq_clock_refresh (rxq->ring);
      rxq->clock_refresh_at = now + CLOCK_REFRESH_NS;
    }
    mlx5_rxq_refill (rxq->ring);
    if (rxq->open == NULL) {
      rxq->open = dq_burst_pool_get (&rxq->recs);
      memset (&rxq->ob, 0, sizeof rxq->ob);
    }
    guint before = rxq->ob.n_packets;
    gboolean complete = mlx5_rxq_poll (rxq->ring, &rxq->ob, rxq->open->packets, rxq->burst_packets);
    if (before == 0 && rxq->ob.n_packets > 0)
      rxq->open_since = now;
    if (rxq->ob.n_packets > 0 &&
        (complete || now - rxq->open_since >= (gint64) rxq->burst_timeout_ns)) {
      rx_burst_emit (rxq, burst);
      return 1;
    }
    if (rxq->ob.n_packets > before) {
      /* more came: the CQ may have more */
      spun = 0;
      if (++flowing == CLOCK_READ_POLLS) {
        flowing = 0;
        now = dq_mono_ns ();
      }
      continue;
    }
    flowing = 0;
    now = dq_mono_ns ();
    if (timeout_ns == 0)
      return 0;
    if (deadline < 0 && timeout_ns > 0)
      deadline = now + timeout_ns;
    if (deadline >= 0 && now >= deadline)
      return 0;
    if (spun < SPIN_RELAXES) {
      /* Wait a little after each empty look at the CQ, longer each time up to
       * SPIN_BACKOFF_MAX (and so on while traffic flows). Reading the next CQE while
       * the device writes it moves its cache line back and forth between the two (a
       * device that is a CPU thread, like the emulator, stalls on every such write);
       * looking again a moment later finds several CQEs in a row instead. */
      for (guint i = 0; i < rxq->backoff; i++)
        mlx5_cpu_relax ();
      spun += rxq->backoff;
      rxq->backoff = MIN (rxq->backoff * 2, SPIN_BACKOFF_MAX);
      continue;
    }
    /* sleep in slices: until the deadline, the open burst's timeout, or a wakeup; the
     * traffic paused, so the next looks start quick again */
    rxq->backoff = 1;
    gint64 slice = sleep_ns;
    if (deadline >= 0)
      slice = MIN (slice, deadline - now);
    if (rxq->ob.n_packets > 0)
      slice = MIN (slice, rxq->open_since + (gint64) rxq->burst_timeout_ns - now);
    if (slice > 0 && wait_on (rxq->wake_fd, slice))
      return 0;
    sleep_ns = MIN (sleep_ns * 2, SLEEP_MAX_NS);
    now = dq_mono_ns ();
  }
}

static void
eng_rxq_release (gpointer priv, DqBurst *burst)
{
  Mlx5EngRxq *rxq = priv;
  Mlx5BurstRec *rec = burst->range;

  g_return_if_fail (rec != NULL);
  mlx5_rxq_release (rxq->ring, rec->wqe, rec->strides);
  dq_burst_pool_release (&rxq->recs, burst);
}

static void
eng_rxq_wakeup (gpointer priv)
{
  Mlx5EngRxq *rxq = priv;
  dq_eventfd_signal (rxq->wake_fd);
}

static void
eng_rxq_stats (gpointer priv, DqRxStats *stats)
{
  Mlx5EngRxq *rxq = priv;
  Mlx5RxCounters c;
  Mlx5RqCounters rc = { 0 };

  mlx5_rxq_counters (rxq->ring, &c);
  rxq->port->ops->rq_counters (rxq->port->dev, mlx5_rxq_rq (rxq->ring), &rc);
  stats->packets = c.packets;
  stats->bytes = c.bytes;
  stats->bursts = MLX5_COUNTER_GET (rxq->bursts);
  stats->drops_ring_full = rc.out_of_buffer;
  stats->truncated = MLX5_COUNTER_GET (rxq->truncated);
  stats->errors = c.cqe_errors;
  stats->recoveries = c.recoveries;
  stats->compressed = c.compressed;
  stats->cq_bytes = mlx5_rxq_cq_bytes (rxq->ring);
}

static DqRingPlacement
eng_rxq_ring_placement (gpointer priv)
{
  Mlx5EngRxq *rxq = priv;
  return mlx5_rxq_placement (rxq->ring);
}

static gsize
eng_rxq_ring_bytes (gpointer priv)
{
  Mlx5EngRxq *rxq = priv;
  return mlx5_rxq_ring_bytes (rxq->ring);
}

static gboolean
eng_rxq_ring_range (gpointer priv, gpointer *base, gsize *size)
{
  Mlx5EngRxq *rxq = priv;
  *base = mlx5_rxq_ring_base (rxq->ring);
  *size = mlx5_rxq_ring_bytes (rxq->ring);
  return TRUE;
}

/* The rules belong to the group: the first queue of the group that is told of a change
 * makes it, the others find it made. */
static gboolean
eng_rxq_set_flows (
    gpointer priv, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, GError **error)
{
  Mlx5EngRxq *rxq = priv;
  Mlx5EngPort *port = rxq->port;
  Mlx5Group *g = rxq->group;
  gboolean ok = TRUE;

  if (!rx_rules_check (port, rules, n_rules, g->n_queues, error))
    return FALSE;
  g_mutex_lock (&port->lock);
  gboolean same = g->filter == filter && g->n_rules == n_rules &&
      (n_rules == 0 || memcmp (g->rules, rules, n_rules * sizeof *rules) == 0);
  if (!same) {
    if (g->n_present == g->n_queues)
      ok = rx_group_steer (port, g, filter, rules, n_rules, error);
    if (ok)
      rx_group_keep_rules (g, filter, rules, n_rules);
  }
  g_mutex_unlock (&port->lock);
  return ok;
}

/* ---------------------------------------------------------------------------------- */
/* TX queues */

typedef struct {
  Mlx5EngPort *port;
  Mlx5Txq *ring;
  guint max_packet;
  int wake_fd;

  /* in-place sending: the slab's slots, and the run lent by txq_acquire */
  guint8 *slab; /* slot 0 */
  guint n_slots;
  guint log_slot_size;
  guint8 **addrs;   /* n_slots, scratch for mlx5_txq_acquire */
  guint32 *lengths; /* n_slots, scratch for txq_commit */
  gboolean lent;
  guint8 *lent_data;
  guint lent_n;

  /* send scheduling (the engine API lets only a queue made `scheduled` pass times) */
  DqTxLate late;
  guint64 *waits; /* n_slots, scratch: the WAIT time of each frame of a run (0: none) */

  /* two-segment sends: the payload segments of a run (n_slots, scratch), and the frames
   * posted and completed, 64-bit (from the ring's 32-bit counters, as last read) */
  Mlx5TxPayload *payloads;
  guint64 posted, completed;
  guint32 posted_at, completed_at;

  DqTxCounters tx;
} Mlx5EngTxq;

/* A registration of payload memory (DqTxMemory.handle) */
typedef struct {
  guint32 lkey;
  gpointer mr;
} Mlx5EngTxMr;

static void
eng_txq_destroy (gpointer priv)
{
  Mlx5EngTxq *txq = priv;
  if (txq == NULL)
    return;
  mlx5_txq_free (txq->ring);
  if (txq->wake_fd >= 0)
    close (txq->wake_fd);
  g_free (txq->addrs);
  g_free (txq->lengths);
  g_free (txq->waits);
  g_free (txq->payloads);
  g_free (txq);
}

/* Sending at a time needs WAIT WQEs on time and a real-time clock to wait on. */
static gboolean
tx_check_schedule (Mlx5EngPort *port, GError **error)
{
  if (port->caps.wait_on_time && port->caps.real_time_ts)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "%s: sending at a time (schedule) needs the device's WAIT on time (HCA capability "
      "wait_on_time: %s) and a real-time port clock (%s)%s",
      port->what, port->caps.wait_on_time ? "yes" : "no, a ConnectX-7 has it",
      port->caps.real_time_ts ? "yes" : "no: CQE timestamps are free-running ticks",
      port->ops == &emu_port_ops ? "; the emulated ConnectX takes clock=rt" : "");
  return FALSE;
}

/* The SQ's packet pacing rate, within what the device takes. */
static gboolean
tx_set_rate (Mlx5EngPort *port, Mlx5EngTxq *txq, guint64 rate_bps, GError **error)
{
  const Mlx5Caps *c = &port->caps;
  if (port->ops->sq_set_rate == NULL || c->pp_max_bps == 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: rate %" G_GUINT64_FORMAT " bit/s: the device has no packet pacing (QoS "
        "capability packet_pacing is 0; allowed: 0)",
        port->what, rate_bps);
    return FALSE;
  }
  if (rate_bps < c->pp_min_bps || rate_bps > c->pp_max_bps) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: rate %" G_GUINT64_FORMAT " bit/s is out of range (allowed %" G_GUINT64_FORMAT
        " .. %" G_GUINT64_FORMAT ", or 0 for no limit)",
        port->what, rate_bps, c->pp_min_bps, c->pp_max_bps);
    return FALSE;
  }
  return port->ops->sq_set_rate (
      port->dev, mlx5_txq_sq (txq->ring), rate_bps, txq->max_packet, error);
}

static gpointer
eng_txq_create (gpointer port_priv, const DqTxConfig *config, GError **error)
{
  Mlx5EngPort *port = port_priv;
  Mlx5TxConfig cfg = { 0 };
  /* the device refuses longer frames with an error completion, which would stop the
   * queue: they are refused before they reach it */
  guint max_packet = config->max_packet_size
      ? MIN (config->max_packet_size, port->mtu + FRAME_OVER_MTU)
      : port->mtu + FRAME_OVER_MTU;

  if (!mlx5_tx_geometry_choose (
          &port->caps, port->what, config->ring_bytes, max_packet, port->tx_signal, &cfg, error))
    return NULL;
  cfg.csum = port->tx_csum;
  if (cfg.csum && !port->caps.tx_csum) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "%s: tx-csum=on, but the device has no checksum offload (HCA capability csum_cap "
        "is 0; allowed: tx-csum=off)",
        port->what);
    return NULL;
  }
  cfg.stamp_src_mac = port->tx_eth_src;
  cfg.inline_bytes = port->caps.tx_inline_bytes;
  cfg.empw = port->caps.tx_empw;
  memcpy (cfg.mac, port->mac, 6);
  if (config->scheduled && !tx_check_schedule (port, error))
    return NULL;

  Mlx5EngTxq *txq = g_new0 (Mlx5EngTxq, 1);
  txq->port = port;
  txq->max_packet = max_packet;
  txq->late = config->late;
  txq->wake_fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (txq->wake_fd < 0) {
    g_set_error (
        error, DQ_ERROR, DQ_ERROR_IO, "%s: eventfd() failed: %s", port->what, g_strerror (errno));
    goto fail;
  }
  txq->ring = mlx5_txq_new (port->ops, port->dev, &cfg, error);
  if (txq->ring == NULL)
    goto fail;
  txq->n_slots = mlx5_txq_n_slots (txq->ring);
  txq->log_slot_size = cfg.log_slot_size;
  txq->addrs = g_new (guint8 *, txq->n_slots);
  txq->lengths = g_new (guint32, txq->n_slots);
  txq->waits = g_new0 (guint64, txq->n_slots);
  txq->payloads = g_new0 (Mlx5TxPayload, txq->n_slots);
  if (config->rate_bps != 0 && !tx_set_rate (port, txq, config->rate_bps, error))
    goto fail;
  /* a fresh queue hands out slot 0 first: where the slab starts */
  if (mlx5_txq_acquire (txq->ring, 1, txq->addrs) == 1)
    txq->slab = txq->addrs[0];
  mlx5_txq_cancel (txq->ring);
  return txq;

fail:
  eng_txq_destroy (txq);
  return NULL;
}

static gboolean
tx_frame_ok (Mlx5EngTxq *txq, guint32 len)
{
  return len >= 14 && len <= txq->max_packet;
}

/* Frame i of a send: lengths[i] bytes, or with payloads a header of lengths[i] bytes (at
 * least the inline headers) and its payload. */
static gboolean
tx_split_frame_ok (
    Mlx5EngTxq *txq, const guint32 *lengths, const DqTxPayload *payloads, guint i, guint64 *bytes)
{
  if (payloads == NULL) {
    *bytes = lengths[i];
    return tx_frame_ok (txq, lengths[i]);
  }
  *bytes = (guint64) lengths[i] + payloads[i].length;
  guint min_header = payloads[i].length > 0 ? MAX (txq->port->caps.tx_inline_bytes, 1u) : 1;
  return lengths[i] >= min_header && *bytes <= txq->max_packet && *bytes >= 14;
}

/* Waits for free slots: TRUE when there are some, FALSE when woken. */
static gboolean
tx_wait_slots (Mlx5EngTxq *txq)
{
  gint64 sleep_ns = SLEEP_MIN_NS;
  guint spins = 0;

  dq_counter_add (&txq->tx.ring_full_waits, 1);
  for (;;) {
    mlx5_txq_reclaim (txq->ring);
    if (mlx5_txq_free_slots (txq->ring) > 0)
      return TRUE;
    if (spins < SPIN_POLLS) {
      spins++;
      mlx5_cpu_relax ();
      continue;
    }
    if (wait_on (txq->wake_fd, sleep_ns))
      return FALSE;
    sleep_ns = MIN (sleep_ns * 2, SLEEP_MAX_NS);
  }
}

static gboolean
tx_refuse_if_lent (Mlx5EngTxq *txq, const char *what, GError **error)
{
  if (!txq->lent)
    return FALSE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_BUSY,
      "%s: %s while %u TX slots are lent for "
      "writing in place (commit or cancel them first)",
      txq->port->what, what, txq->lent_n);
  return TRUE;
}

/* ---- send scheduling (daqiri-engine.h: dq_tx_verdict): times are port-clock ns ---- */

static inline guint64
tx_clock (Mlx5EngTxq *txq)
{
  return txq->port->ops->clock_now (txq->port->dev);
}

/* dq_tx_verdict on this queue; *wait: a frame sent at its time goes behind a WAIT for it,
 * t; else 0 (no time, or late: as soon as possible) */
static DqTxVerdict
tx_verdict (Mlx5EngTxq *txq, guint64 t, guint64 now, guint64 *wait)
{
  gboolean is_late;
  DqTxVerdict v = dq_tx_verdict (t, now, txq->late, &is_late);
  *wait = v == DQ_TX_SEND && !is_late ? t : 0;
  return v;
}

/* Holds the sender until time t is within the horizon: FALSE when woken first. */
static gboolean
tx_hold (Mlx5EngTxq *txq, guint64 t)
{
  dq_counter_add (&txq->tx.held, 1);
  for (;;) {
    guint64 now = tx_clock (txq);
    if (t <= now + DQ_TX_HORIZON_NS)
      return TRUE;
    guint64 left = MIN (t - DQ_TX_HORIZON_NS - now, (guint64) SLEEP_MAX_NS * 50);
    if (wait_on (txq->wake_fd, (gint64) MAX (left, 1000)))
      return FALSE;
  }
}

/* Counts k frames sent with times[] as asked and waits[] as posted */
static void
tx_count_scheduled (Mlx5EngTxq *txq, const guint64 *times, const guint64 *waits, guint k)
{
  guint64 scheduled = 0, late = 0;
  for (guint x = 0; x < k; x++) {
    scheduled += times[x] != 0;
    late += times[x] != 0 && waits[x] == 0;
  }
  dq_counter_add (&txq->tx.scheduled, scheduled);
  dq_counter_add (&txq->tx.late, late);
}

static void
tx_count_dropped (Mlx5EngTxq *txq)
{
  dq_counter_add (&txq->tx.late, 1);
  dq_counter_add (&txq->tx.late_dropped, 1);
}

/* Frames i.. that go out now as one run, each with its WAIT time in txq->waits and its
 * payload segment in txq->payloads (from index 0): good lengths, none held or dropped, at
 * most n_slots. Returns the run's end. */
static guint
tx_run_end (Mlx5EngTxq *txq, const guint32 *lengths, const DqTxPayload *payloads,
    const guint64 *times, guint i, guint n, guint64 now)
{
  guint j = i;
  guint64 bytes;
  while (j < n && j - i < txq->n_slots && tx_split_frame_ok (txq, lengths, payloads, j, &bytes) &&
      (times == NULL || tx_verdict (txq, times[j], now, &txq->waits[j - i]) == DQ_TX_SEND)) {
    if (payloads != NULL) {
      const DqTxPayload *pl = &payloads[j];
      txq->payloads[j - i] = (Mlx5TxPayload){ .addr = (guint64) (uintptr_t) pl->data,
        .lkey = pl->length > 0 ? ((const Mlx5EngTxMr *) pl->memory->handle)->lkey : 0,
        .length = pl->length };
    }
    j++;
  }
  return j;
}

/* txq_send and txq_send_split: frames (or headers, with payloads) copied into slots */
static int
tx_send_frames (Mlx5EngTxq *txq, const guint8 *const *frames, const guint32 *lengths,
    const DqTxPayload *payloads, const guint64 *times, guint n, GError **error)
{
  guint i = 0, sent = 0;
  guint64 bytes = 0, errors = 0, frame_bytes;
  guint64 now = times != NULL ? tx_clock (txq) : 0;

  if (tx_refuse_if_lent (txq, "sending copies", error))
    return -1;

  while (i < n) {
    if (!tx_split_frame_ok (txq, lengths, payloads, i, &frame_bytes)) {
      errors++;
      i++;
      continue;
    }
    if (times != NULL) {
      guint64 wait;
      DqTxVerdict v = tx_verdict (txq, times[i], now, &wait);
      if (v == DQ_TX_HOLD) {
        if (!tx_hold (txq, times[i]))
          break;
        now = tx_clock (txq);
        continue;
      }
      if (v == DQ_TX_DROP) {
        tx_count_dropped (txq);
        i++;
        continue;
      }
    }
    guint j = tx_run_end (txq, lengths, payloads, times, i, n, now);
    const guint64 *waits = times != NULL ? txq->waits : NULL;
    guint k = payloads != NULL
        ? mlx5_txq_send_split_at (txq->ring, frames + i, lengths + i, txq->payloads, waits, j - i)
        : mlx5_txq_send_at (txq->ring, frames + i, lengths + i, waits, j - i);
    if (times != NULL)
      tx_count_scheduled (txq, times + i, txq->waits, k);
    for (guint x = 0; x < k; x++)
      bytes += lengths[i + x] + (payloads != NULL ? payloads[i + x].length : 0);
    sent += k;
    i += k;
    if (i < j && !tx_wait_slots (txq))
      break;
    if (times != NULL)
      now = tx_clock (txq);
  }
  dq_tx_counters_add_burst (&txq->tx, sent, bytes, errors);
  return (int) i;
}

static int
eng_txq_send (gpointer priv, const guint8 *const *frames, const guint32 *lengths,
    const guint64 *times, guint n, GError **error)
{
  return tx_send_frames (priv, frames, lengths, NULL, times, n, error);
}

static int
eng_txq_send_split (gpointer priv, const guint8 *const *headers, const guint32 *header_lengths,
    const DqTxPayload *payloads, const guint64 *times, guint n, GError **error)
{
  return tx_send_frames (priv, headers, header_lengths, payloads, times, n, error);
}

static gpointer
eng_txq_register (
    gpointer priv, gpointer base, gsize size, const DqRingMemory *memory, GError **error)
{
  Mlx5EngTxq *txq = priv;
  Mlx5EngTxMr *reg = g_new0 (Mlx5EngTxMr, 1);
  if (!mlx5_txq_register (
          txq->ring, txq->port->what, base, size, memory, &reg->lkey, &reg->mr, error)) {
    g_free (reg);
    return NULL;
  }
  return reg;
}

static void
eng_txq_unregister (gpointer priv, gpointer handle)
{
  Mlx5EngTxq *txq = priv;
  Mlx5EngTxMr *reg = handle;
  mlx5_txq_unregister (txq->ring, reg->mr);
  g_free (reg);
}

static void
eng_txq_progress (gpointer priv, guint64 *posted, guint64 *completed)
{
  Mlx5EngTxq *txq = priv;
  guint32 c = mlx5_txq_completed (txq->ring), p = mlx5_txq_posted (txq->ring);
  txq->completed += c - txq->completed_at;
  txq->posted += p - txq->posted_at;
  txq->completed_at = c;
  txq->posted_at = p;
  *posted = txq->posted;
  *completed = txq->completed;
}

/* Tries to lend `want` slots that do not wrap the slab end (fewer when the slab ends
 * first). Returns how many were lent, 0 when not that many are free yet. */
static guint
tx_try_lend (Mlx5EngTxq *txq, guint want)
{
  guint k = mlx5_txq_acquire (txq->ring, want, txq->addrs);
  if (k == 0)
    return 0;
  guint idx = (guint) ((gsize) (txq->addrs[0] - txq->slab) >> txq->log_slot_size);
  guint target = MIN (want, txq->n_slots - idx);
  if (k < target) {
    /* not enough free yet: wait for more rather than lend a short run */
    mlx5_txq_cancel (txq->ring);
    return 0;
  }
  if (k > target) {
    mlx5_txq_cancel (txq->ring);
    k = mlx5_txq_acquire (txq->ring, target, txq->addrs);
  }
  return k;
}

static int
eng_txq_acquire (gpointer priv, guint max_frames, guint frame_size, DqTxSlots *slots,
    gint64 timeout_ns, GError **error)
{
  Mlx5EngTxq *txq = priv;
  guint slot_size = 1u << txq->log_slot_size;
  gint64 deadline = timeout_ns >= 0 ? dq_mono_ns () + timeout_ns : -1;
  gint64 sleep_ns = SLEEP_MIN_NS;
  guint spins = 0;

  if (frame_size > txq->max_packet) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: frames of %u bytes do not fit the "
        "TX slots, made for frames up to %u bytes (allowed: frame size <= %u; a larger "
        "max-packet-size makes larger slots)",
        txq->port->what, frame_size, txq->max_packet, txq->max_packet);
    return -1;
  }
  if (txq->slab == NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "%s: the TX slots are unknown", txq->port->what);
    return -1;
  }
  if (tx_refuse_if_lent (txq, "acquiring TX slots", error))
    return -1;
  /* at most half the slab: a run being written never waits for the one being sent */
  guint want = MIN (max_frames, MAX (txq->n_slots / 2, 1));
  for (;;) {
    guint k = tx_try_lend (txq, want);
    if (k > 0) {
      txq->lent = TRUE;
      txq->lent_data = txq->addrs[0];
      txq->lent_n = k;
      slots->data = txq->addrs[0];
      slots->n_slots = k;
      slots->stride = slot_size;
      slots->slot_size = MIN (slot_size, txq->max_packet);
      slots->memory = DQ_MEMORY_HOST;
      slots->token = txq;
      return 1;
    }
    if (deadline >= 0 && dq_mono_ns () >= deadline)
      return 0;
    if (spins == 0)
      dq_counter_add (&txq->tx.ring_full_waits, 1);
    if (spins < SPIN_POLLS) {
      spins++;
      mlx5_cpu_relax ();
      continue;
    }
    gint64 slice = sleep_ns;
    if (deadline >= 0)
      slice = MIN (slice, MAX (deadline - dq_mono_ns (), 1));
    if (wait_on (txq->wake_fd, slice))
      return 0;
    sleep_ns = MIN (sleep_ns * 2, SLEEP_MAX_NS);
  }
}

static gboolean
tx_run_is_lent (Mlx5EngTxq *txq, const DqTxSlots *slots)
{
  return txq->lent && slots->token == txq && slots->data == txq->lent_data &&
      slots->n_slots == txq->lent_n;
}

static void
eng_txq_cancel (gpointer priv, DqTxSlots *slots)
{
  Mlx5EngTxq *txq = priv;

  if (!tx_run_is_lent (txq, slots))
    return;
  mlx5_txq_cancel (txq->ring);
  txq->lent = FALSE;
  slots->token = NULL;
}

static int
eng_txq_commit (gpointer priv, DqTxSlots *slots, guint n, const guint32 *lengths,
    const guint64 *times, GError **error)
{
  Mlx5EngTxq *txq = priv;
  guint64 bytes = 0, errors = 0, scheduled = 0, late = 0;
  guint w = 0, sent = 0;

  if (!tx_run_is_lent (txq, slots) || n > slots->n_slots) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: committing %u frames of a run of "
        "TX slots that %s",
        txq->port->what, n,
        tx_run_is_lent (txq, slots) ? "has fewer slots" : "is not the one lent");
    return -1;
  }
  /* a frame that is refused (or dropped late) gives its slot to the next good one: the SQ
   * sends slots in ring order, with no gaps (a move only happens when a frame is not
   * sent); frames before one that is held go out first */
  guint64 now = times != NULL ? tx_clock (txq) : 0;
  guint i = 0;
  for (; i < n; i++) {
    guint32 len = lengths[i];
    if (!tx_frame_ok (txq, len)) {
      errors++;
      continue;
    }
    txq->waits[w] = 0;
    if (times != NULL) {
      DqTxVerdict v = tx_verdict (txq, times[i], now, &txq->waits[w]);
      if (v == DQ_TX_HOLD) {
        sent += mlx5_txq_commit_at (txq->ring, w - sent, txq->lengths + sent, txq->waits + sent);
        if (!tx_hold (txq, times[i]))
          break;
        now = tx_clock (txq);
        v = tx_verdict (txq, times[i], now, &txq->waits[w]);
      }
      if (v == DQ_TX_DROP) {
        tx_count_dropped (txq);
        continue;
      }
      scheduled += times[i] != 0;
      late += times[i] != 0 && txq->waits[w] == 0;
    }
    if (w != i)
      memmove (
          slots->data + (gsize) w * slots->stride, slots->data + (gsize) i * slots->stride, len);
    txq->lengths[w++] = len;
  }
  /* woken while holding: the rest of the run is not sent */
  errors += n - i;
  sent += w > sent ? mlx5_txq_commit_at (txq->ring, w - sent, txq->lengths + sent,
                         times != NULL ? txq->waits + sent : NULL)
                   : 0;
  mlx5_txq_cancel (txq->ring);
  txq->lent = FALSE;
  slots->token = NULL;
  /* sent < w cannot happen (every length was checked against the slots); if it did,
   * the rest would count as refused */
  errors += w - sent;
  for (guint x = 0; x < sent; x++)
    bytes += txq->lengths[x];
  dq_counter_add (&txq->tx.scheduled, scheduled);
  dq_counter_add (&txq->tx.late, late);
  dq_tx_counters_add_burst (&txq->tx, sent, bytes, errors);
  return (int) n;
}

static gboolean
eng_txq_flush (gpointer priv, GError **error)
{
  Mlx5EngTxq *txq = priv;
  gint64 sleep_ns = SLEEP_MIN_NS;

  for (;;) {
    mlx5_txq_reclaim (txq->ring);
    if (mlx5_txq_idle (txq->ring))
      return TRUE;
    if (wait_on (txq->wake_fd, sleep_ns))
      return FALSE;
    sleep_ns = MIN (sleep_ns * 2, SLEEP_MAX_NS);
  }
}

static void
eng_txq_wakeup (gpointer priv)
{
  Mlx5EngTxq *txq = priv;
  dq_eventfd_signal (txq->wake_fd);
}

static guint
eng_txq_max_frame (gpointer priv)
{
  Mlx5EngTxq *txq = priv;
  return txq->max_packet;
}

static void
eng_txq_stats (gpointer priv, DqTxStats *stats)
{
  Mlx5EngTxq *txq = priv;
  Mlx5TxCounters c;

  mlx5_txq_counters (txq->ring, &c);
  dq_tx_counters_read (&txq->tx, stats);
  /* errors: also the frames the device refused, and those it flushed unsent after an error
   * (an eMPW WQE carries several) */
  stats->errors += c.lost;
  stats->wqes = c.wqes;
}

/* ---------------------------------------------------------------------------------- */
/* the engine tables */

static gpointer
emu_port_open_engine (const char *arg, DqPortInfo *info, GError **error)
{
  return eng_port_open (&emu_port_ops, arg, info, error);
}

#define MLX5_ENGINE_COMMON \
  .port_close = eng_port_close, .port_time = eng_port_time, .rxq_create = eng_rxq_create, \
  .rxq_destroy = eng_rxq_destroy, .rxq_poll = eng_rxq_poll, .rxq_release = eng_rxq_release, \
  .rxq_wakeup = eng_rxq_wakeup, .rxq_stats = eng_rxq_stats, .rxq_ring_bytes = eng_rxq_ring_bytes, \
  .rxq_ring_placement = eng_rxq_ring_placement, .rxq_ring_range = eng_rxq_ring_range, \
  .rxq_set_flows = eng_rxq_set_flows, .txq_create = eng_txq_create, \
  .txq_destroy = eng_txq_destroy, .txq_send = eng_txq_send, .txq_flush = eng_txq_flush, \
  .txq_wakeup = eng_txq_wakeup, .txq_stats = eng_txq_stats, .txq_max_frame = eng_txq_max_frame, \
  .txq_acquire = eng_txq_acquire, .txq_commit = eng_txq_commit, .txq_cancel = eng_txq_cancel, \
  .txq_register = eng_txq_register, .txq_unregister = eng_txq_unregister, \
  .txq_send_split = eng_txq_send_split, .txq_progress = eng_txq_progress

const DqEngineOps dq_emu_engine = {
  .name = "emu",
  .description = "the emulated ConnectX: mlx5 striding RQ and SQ rings played by a "
                 "software device (emu:NAME[,rate=..,freq=..,peer=..]), TX looped to RX",
  .port_open = emu_port_open_engine,
  MLX5_ENGINE_COMMON,
};

#ifdef DQ_HAVE_MLX5_HW
static gpointer
hw_port_open_engine (const char *arg, DqPortInfo *info, GError **error)
{
  return eng_port_open (&mlx5_hw_port_ops, arg, info, error);
}

static const DqEngineOps dq_mlx5_hw_engine = {
  .name = "mlx5",
  .description = "NVIDIA ConnectX through DevX: striding RQ and SQ rings driven from "
                 "user space",
  .port_open = hw_port_open_engine,
  MLX5_ENGINE_COMMON,
};
#endif

static const DqEngineOps *const mlx5_engines[] = {
  &dq_emu_engine,
#ifdef DQ_HAVE_MLX5_HW
  &dq_mlx5_hw_engine,
#endif
  NULL,
};

const DqEngineOps *const *
dq_mlx5_engines (void)
{
  return mlx5_engines;
}
