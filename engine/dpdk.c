/* dpdk engine: any DPDK ethdev (a PCI NIC with its poll-mode driver, or a virtual device
 * such as net_ring, net_pcap, net_af_packet, net_null) as a daqiri port.
 *
 * This is the A/B baseline for the mlx5 engine and the way to NICs that have no engine of
 * their own. DPDK hands over packets one mbuf each; the engine copies them into bursts:
 * each RX queue owns a ring of bursts (ring-size bytes, cut into blocks of burst-packets ×
 * max-packet-size), packs the packets of one rte_eth_rx_burst() call after another into
 * the current block (64-byte aligned) and frees the mbufs at once. A block is one burst
 * and is refilled only after that burst was released, in ring order: a downstream that
 * holds bursts stops the polling, the device's own queue fills and the device drops and
 * counts (imissed, rx_nombuf), or a net_ring peer waits. The copy is the price of the
 * one-buffer-per-packet model, and it is what the comparison with mlx5 shows.
 *
 * Device strings: dpdk:DEVARGS, DEVARGS as DPDK takes them ("net_ring0",
 * "net_pcap0,iface=eth1", "0000:03:00.0"). The device is probed when the port opens and
 * removed when it closes. DPDK's EAL starts once per process, on the first open, with
 * DQ_DPDK_DEFAULT_EAL (no hugepages, no PCI scan, no shared config), or with the
 * whitespace-separated arguments in the environment variable DAQIRI_DPDK_EAL_ARGS (for
 * hugepages and PCI NICs: "-l 2 --in-memory -a 0000:03:00.0"). The EAL pins the thread
 * that starts it to its first lcore; the engine gives that thread its CPU set back.
 *
 * Queues: the port is configured on first use with as many RX queues as the element asks
 * for (RSS spreads the traffic when there are several) and one TX queue that every TX user
 * shares under a lock. Flow rules run in software on the copied packets (marks and
 * filtering); with several queues, a rule naming a queue is steered there by an rte_flow
 * rule where the poll-mode driver offers rte_flow (dpdk-flow.h) and refused where it does
 * not (RSS alone decides). Rules change while receiving: the new rte_flow rules are
 * created before the old ones go, and the software rule set is swapped between bursts
 * (rx-rules.h). Polling never blocks in the kernel: an empty queue is polled again after
 * a short spin, then after sleeps of DPDK_IDLE_SLEEP_NS.
 *
 * End of stream: net_pcap replaying a file (rx_pcap=, without infinite_rx=1) reads it as
 * fast as it is polled and returns nothing only at its end (or when out of mbufs, which its
 * rx_nombuf counter tells): that first empty read ends the queue (DQ_RXQ_END).
 *
 * Timestamps: CLOCK_REALTIME read when rte_eth_rx_burst() returned, shared by the packets
 * of that call (DPDK's virtual devices have no receive time of their own).
 */
#include "daqiri-engine.h"
#include "engines.h"
#include "burst-pool.h"
#include "engine-util.h"
#include "dpdk-flow.h"
#include "rx-rules.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include <rte_common.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#define DQ_DPDK_DEFAULT_EAL \
  "--no-huge --no-pci --no-shconf -m 256 --log-level=error " \
  "--no-telemetry"
#define DPDK_ENV_EAL "DAQIRI_DPDK_EAL_ARGS"

#define DPDK_RX_DEFAULT_RING ((gsize) 64 << 20)
#define DPDK_RING_MAX ((gsize) 4 << 30)
#define DPDK_MIN_PACKET 64
#define DPDK_MAX_PACKET 65535
#define DPDK_VLAN_HLEN 4
#define DPDK_ETH_HLEN 14
#define DPDK_ALIGN 64
#define DPDK_MIN_BLOCKS 2
#define DPDK_RX_BATCH 32
#define DPDK_TX_BATCH 32
#define DPDK_NB_DESC 1024
#define DPDK_MAX_RX_QUEUES 64
/* an empty queue is polled this many times before the poller starts sleeping */
#define DPDK_IDLE_SPINS 2000
#define DPDK_IDLE_SLEEP_NS 20000
#define DPDK_TX_FLUSH_TIMEOUT_NS G_GINT64_CONSTANT (1000000000)

/* ---------------------------------------------------------------------------------- */
/* helpers */

static void
idle_sleep (void)
{
  struct timespec ts = { 0, DPDK_IDLE_SLEEP_NS };
  nanosleep (&ts, NULL);
}

static gsize
align_up (gsize v, gsize a)
{
  return (v + a - 1) / a * a;
}

/* ---------------------------------------------------------------------------------- */
/* EAL: once per process */

static GMutex eal_lock;
static gboolean eal_tried;
static char *eal_failure; /* why the EAL could not start, when it could not */

/* "-l N" with N the first CPU this thread may run on: the EAL refuses a core list
 * outside the process's CPU set. */
static char *
eal_core_arg (const cpu_set_t *set)
{
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET (cpu, set))
      return g_strdup_printf ("%d", cpu);
  return g_strdup ("0");
}

static gboolean
eal_start (GError **error)
{
  g_mutex_lock (&eal_lock);
  if (!eal_tried) {
    eal_tried = TRUE;
    const char *env = g_getenv (DPDK_ENV_EAL);
    cpu_set_t cpus;
    gboolean have_cpus = pthread_getaffinity_np (pthread_self (), sizeof cpus, &cpus) == 0;
    GPtrArray *args = g_ptr_array_new_with_free_func (g_free);
    GError *parse_error = NULL;
    char **words = NULL;
    int n_words = 0;

    g_ptr_array_add (args, g_strdup ("daqiri"));
    if (env != NULL && *env != '\0') {
      if (!g_shell_parse_argv (env, &n_words, &words, &parse_error)) {
        eal_failure = g_strdup_printf (
            "%s=\"%s\" cannot be parsed: %s", DPDK_ENV_EAL, env, parse_error->message);
        g_clear_error (&parse_error);
      }
    } else {
      g_ptr_array_add (args, g_strdup ("-l"));
      g_ptr_array_add (args, have_cpus ? eal_core_arg (&cpus) : g_strdup ("0"));
      words = g_strsplit (DQ_DPDK_DEFAULT_EAL, " ", -1);
      n_words = (int) g_strv_length (words);
    }
    for (int i = 0; i < n_words; i++)
      g_ptr_array_add (args, g_strdup (words[i]));
    g_strfreev (words);

    if (eal_failure == NULL) {
      /* rte_eal_init() may permute argv: hand it a copy, keep ours for freeing */
      int argc = (int) args->len;
      char **argv = g_new0 (char *, args->len + 1);
      memcpy (argv, args->pdata, args->len * sizeof (char *));
      int r = rte_eal_init (argc, argv);
      int err = rte_errno;
      g_free (argv);
      if (have_cpus)
        pthread_setaffinity_np (pthread_self (), sizeof cpus, &cpus);
      if (r < 0) {
        char *joined = NULL;
        g_ptr_array_add (args, NULL);
        joined = g_strjoinv (" ", (char **) args->pdata + 1);
        eal_failure = g_strdup_printf ("DPDK's EAL did not start with \"%s\" (%s%s): %s", joined,
            env != NULL && *env != '\0' ? "from " : "the default; set ", DPDK_ENV_EAL,
            rte_strerror (err));
        g_free (joined);
      }
    }
    g_ptr_array_unref (args);
  }
  gboolean ok = eal_failure == NULL;
  if (!ok)
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "dpdk: %s", eal_failure);
  g_mutex_unlock (&eal_lock);
  return ok;
}

/* ---------------------------------------------------------------------------------- */
/* port */

typedef struct _DpdkRxQueue DpdkRxQueue;

typedef struct {
  char *devargs; /* as given after "dpdk:" */
  char *what;    /* "dpdk:DEVARGS" for messages */
  guint16 port_id;
  guint16 socket;
  struct rte_device *device;
  guint mtu;
  guint data_room; /* bytes an mbuf holds */
  guint max_rx_queues;
  gboolean replay; /* net_pcap reading a capture file once: its end ends the stream */

  /* configuration: protected by lock (queues come and go in any thread) */
  GMutex lock;
  gboolean started;
  guint n_rxq; /* RX queues the device is configured with */
  DpdkRxQueue *rxqs[DPDK_MAX_RX_QUEUES];
  guint n_txq_users;
  struct rte_mempool *pool;  /* mbufs of the current configuration (atomic pointer) */
  GPtrArray *old_pools;      /* of earlier configurations: TX users may still hold
                                 * mbufs of them; freed at close */
  struct rte_eth_stats base; /* device counters when it (re)started */

  /* the one TX queue, shared by every TX user */
  GMutex tx_lock;
} DpdkPort;

static gint pool_serial;

static char *
list_ports (void)
{
  GString *s = g_string_new (NULL);
  guint16 id;

  RTE_ETH_FOREACH_DEV (id)
  {
    char name[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port (id, name) == 0)
      g_string_append_printf (s, "%s%s", s->len > 0 ? ", " : "", name);
  }
  if (s->len == 0)
    g_string_append (s, "none");
  return g_string_free (s, FALSE);
}

/* The ethdev port a probed device string names. */
static gboolean
port_find (const char *devargs, guint16 *port_id)
{
  struct rte_dev_iterator it;
  guint16 id;
  gboolean found = FALSE;

  if (rte_eth_iterator_init (&it, devargs) == 0) {
    id = rte_eth_iterator_next (&it);
    if (id != RTE_MAX_ETHPORTS) {
      *port_id = id;
      found = TRUE;
    }
    rte_eth_iterator_cleanup (&it);
  }
  if (!found) {
    char *name = g_strndup (devargs, strcspn (devargs, ","));
    found = rte_eth_dev_get_port_by_name (name, port_id) == 0;
    g_free (name);
  }
  return found;
}

static gpointer
dpdk_port_open (const char *arg, DqPortInfo *info, GError **error)
{
  if (!eal_start (error))
    return NULL;

  /* DPDK takes a second probe of a device as success: look first */
  guint16 port_id;
  char *name = g_strndup (arg, strcspn (arg, ","));
  gboolean exists = rte_eth_dev_get_port_by_name (name, &port_id) == 0;
  g_free (name);
  if (exists) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_BUSY,
        "dpdk:%s: the device is already open "
        "(under another device string); name it the same way everywhere",
        arg);
    return NULL;
  }
  int r = rte_dev_probe (arg);
  if (r < 0 || !port_find (arg, &port_id)) {
    char *ports = list_ports ();
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "dpdk:%s: DPDK cannot probe the device "
        "(%s); ethdev ports: %s. Virtual devices are named net_<driver><n>[,args] "
        "(net_ring0, net_pcap0,iface=eth1); PCI devices need an EAL without --no-pci "
        "(set %s)",
        arg, r < 0 ? rte_strerror (-r) : "no ethdev port appeared", ports, DPDK_ENV_EAL);
    g_free (ports);
    return NULL;
  }

  struct rte_eth_dev_info dev_info;
  r = rte_eth_dev_info_get (port_id, &dev_info);
  if (r != 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "dpdk:%s: cannot query the device: %s", arg,
        rte_strerror (-r));
    return NULL;
  }

  DpdkPort *port = g_new0 (DpdkPort, 1);
  port->devargs = g_strdup (arg);
  port->what = g_strdup_printf ("dpdk:%s", arg);
  port->replay = g_str_has_prefix (arg, "net_pcap") && strstr (arg, "rx_pcap=") != NULL &&
      strstr (arg, "infinite_rx=1") == NULL;
  port->port_id = port_id;
  port->device = dev_info.device;
  int socket = rte_eth_dev_socket_id (port_id);
  port->socket = socket < 0 ? 0 : (guint16) socket;
  port->max_rx_queues = MIN (dev_info.max_rx_queues, DPDK_MAX_RX_QUEUES);
  guint16 mtu = 1500;
  if (rte_eth_dev_get_mtu (port_id, &mtu) != 0 || mtu == 0)
    mtu = 1500;
  port->mtu = mtu;
  guint frame = MAX (port->mtu + DPDK_ETH_HLEN + DPDK_VLAN_HLEN, RTE_MBUF_DEFAULT_DATAROOM);
  port->data_room = (guint) align_up (frame, DPDK_ALIGN);
  g_mutex_init (&port->lock);
  g_mutex_init (&port->tx_lock);
  port->old_pools = g_ptr_array_new ();

  struct rte_ether_addr mac;
  if (rte_eth_macaddr_get (port_id, &mac) == 0)
    memcpy (info->mac, mac.addr_bytes, sizeof info->mac);
  info->mtu = port->mtu;
  info->clock_id = CLOCK_REALTIME;
  info->clock_name = "CLOCK_REALTIME (read after rte_eth_rx_burst)";
  return port;
}

/* Stops the device. What its RX queues still hold is drained first: the mbufs go back to
 * the pool before it may be freed (a net_ring device's rings even outlive the device). */
static void
port_stop_locked (DpdkPort *port)
{
  if (port->started) {
    struct rte_mbuf *mbufs[DPDK_RX_BATCH];
    for (guint q = 0; q < port->n_rxq; q++) {
      for (guint round = 0; round < 1u << 16; round++) {
        guint16 n = rte_eth_rx_burst (port->port_id, (uint16_t) q, mbufs, DPDK_RX_BATCH);
        if (n == 0)
          break;
        rte_pktmbuf_free_bulk (mbufs, n);
      }
    }
    rte_eth_dev_stop (port->port_id);
    port->started = FALSE;
  }
}

static void
dpdk_port_close (gpointer priv)
{
  DpdkPort *port = priv;

  port_stop_locked (port);
  rte_eth_dev_close (port->port_id);
  /* detach the device so that the next open probes it afresh */
  if (port->device != NULL)
    rte_dev_remove (port->device);
  if (port->pool != NULL)
    rte_mempool_free (port->pool);
  for (guint i = 0; i < port->old_pools->len; i++)
    rte_mempool_free (g_ptr_array_index (port->old_pools, i));
  g_ptr_array_unref (port->old_pools);
  g_mutex_clear (&port->tx_lock);
  g_mutex_clear (&port->lock);
  g_free (port->what);
  g_free (port->devargs);
  g_free (port);
}

static guint64
dpdk_port_time (gpointer priv)
{
  return dq_clock_ns (CLOCK_REALTIME);
}

/* (Re)configures and starts the device with n_rxq RX queues and the one TX queue.
 * Called with port->lock held, with no RX queue in use, and with tx_lock held when a TX
 * user exists (so that nobody sends on a stopped device). */
static gboolean
port_configure_locked (DpdkPort *port, guint n_rxq, GError **error)
{
  struct rte_eth_dev_info dev_info;
  struct rte_eth_conf conf;
  int r;

  if (port->started && port->n_rxq == n_rxq)
    return TRUE;
  port_stop_locked (port);

  r = rte_eth_dev_info_get (port->port_id, &dev_info);
  if (r != 0)
    goto failed;

  memset (&conf, 0, sizeof conf);
  if (n_rxq > 1) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf =
        (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP) & dev_info.flow_type_rss_offloads;
    if (conf.rx_adv_conf.rss_conf.rss_hf == 0)
      conf.rxmode.mq_mode = RTE_ETH_MQ_RX_NONE;
  }
  r = rte_eth_dev_configure (port->port_id, (uint16_t) n_rxq, 1, &conf);
  if (r != 0)
    goto failed;

  uint16_t nb_rxd = DPDK_NB_DESC, nb_txd = DPDK_NB_DESC;
  r = rte_eth_dev_adjust_nb_rx_tx_desc (port->port_id, &nb_rxd, &nb_txd);
  if (r != 0)
    goto failed;

  /* mbufs: every RX descriptor filled, a peer ring (net_ring) full, every TX descriptor
   * in flight, and a batch on the way; one pool per configuration */
  guint n_mbufs = n_rxq * (2u * nb_rxd + DPDK_RX_BATCH) + 2u * nb_txd + DPDK_TX_BATCH;
  if (port->pool == NULL || port->pool->size < n_mbufs) {
    char name[RTE_MEMPOOL_NAMESIZE];
    g_snprintf (name, sizeof name, "dq%u", (guint) g_atomic_int_add (&pool_serial, 1));
    struct rte_mempool *pool = rte_pktmbuf_pool_create (
        name, n_mbufs, 256, 0, (uint16_t) (port->data_room + RTE_PKTMBUF_HEADROOM), port->socket);
    if (pool == NULL) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
          "%s: cannot create a pool of %u "
          "mbufs: %s (give the EAL more memory with -m in %s)",
          port->what, n_mbufs, rte_strerror (rte_errno), DPDK_ENV_EAL);
      return FALSE;
    }
    if (port->pool != NULL)
      g_ptr_array_add (port->old_pools, port->pool);
    g_atomic_pointer_set (&port->pool, pool);
  }
  for (guint q = 0; q < n_rxq; q++) {
    r = rte_eth_rx_queue_setup (
        port->port_id, (uint16_t) q, nb_rxd, port->socket, NULL, port->pool);
    if (r != 0)
      goto failed;
  }
  r = rte_eth_tx_queue_setup (port->port_id, 0, nb_txd, port->socket, NULL);
  if (r != 0)
    goto failed;
  r = rte_eth_dev_start (port->port_id);
  if (r != 0)
    goto failed;
  /* receive every frame, as the afpacket and mlx5 engines do; not every device can */
  (void) rte_eth_promiscuous_enable (port->port_id);
  port->started = TRUE;
  port->n_rxq = n_rxq;
  memset (&port->base, 0, sizeof port->base);
  (void) rte_eth_stats_get (port->port_id, &port->base);
  return TRUE;

failed:
  g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
      "%s: cannot set up the device with %u RX "
      "queue%s and 1 TX queue: %s",
      port->what, n_rxq, n_rxq == 1 ? "" : "s", rte_strerror (r < 0 ? -r : r));
  return FALSE;
}

/* Device drops since the device started: frames its queues had no room or no mbuf for. */
static guint64
port_device_drops (DpdkPort *port)
{
  struct rte_eth_stats st;

  if (rte_eth_stats_get (port->port_id, &st) != 0)
    return 0;
  return (st.imissed - port->base.imissed) + (st.rx_nombuf - port->base.rx_nombuf);
}

/* ---------------------------------------------------------------------------------- */
/* RX queue */

struct _DpdkRxQueue {
  DpdkPort *port;
  guint16 qid;
  gsize ring_size;
  DqBlockRing blocks; /* the ring: a burst a block */
  gsize block_size;
  guint n_blocks;
  guint burst_packets;
  guint max_packet;
  guint64 burst_timeout_ns;
  DqRxRules rules;    /* the software classifier's */
  DpdkSteering steer; /* the device's rte_flow rules naming this queue */
  guint n_queues;

  /* poller state, polling thread only */
  gint64 fill_start;                    /* monotonic ns of the burst's first packet */
  struct rte_mbuf *pend[DPDK_RX_BATCH]; /* received, not yet copied */
  guint pend_head, pend_n;
  guint64 pend_time;
  guint idle;     /* empty polls in a row */
  gboolean ended; /* a replayed file was read to its end */
  guint64 nombuf_seen;

  gint wake; /* set by wakeup, cleared by poll (atomic) */

  guint64 packets;
  guint64 bytes;
  guint64 bursts;
  guint64 truncated;
  guint64 drops_filtered;
};

/* max-packet-size as configured (0: MTU + 18), checked, then capped at what an mbuf of
 * the port holds: the device delivers and takes no longer frames anyway. */
static gboolean
port_max_packet (
    DpdkPort *port, const char *dir, guint requested, guint *max_packet, GError **error)
{
  guint v = requested != 0 ? requested : port->mtu + DPDK_ETH_HLEN + DPDK_VLAN_HLEN;
  if (v < DPDK_MIN_PACKET || v > DPDK_MAX_PACKET) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: %s max-packet-size %u is out of "
        "range (allowed %u .. %u, or 0 for MTU + 18)",
        port->what, dir, v, DPDK_MIN_PACKET, DPDK_MAX_PACKET);
    return FALSE;
  }
  *max_packet = MIN (v, port->data_room);
  return TRUE;
}

/* Steers the rules naming this queue to it when the port has several queues: every rule
 * naming a queue checked with the device, then this queue's installed (dpdk-flow.h). Called
 * with the device configured for rxq->n_queues queues. */
static gboolean
rx_steering_apply (DpdkRxQueue *rxq, const DqFlowRule *rules, guint n_rules, GError **error)
{
  DpdkPort *port = rxq->port;
  if (rxq->n_queues <= 1)
    return TRUE;
  return dpdk_flow_check (
             &dpdk_flow_ops_rte, port->port_id, port->what, rules, n_rules, rxq->n_queues, error) &&
      dpdk_steering_apply (&rxq->steer, port->what, rules, n_rules, error);
}

/* A rule naming a multicast group: the software devices (net_ring, net_null, net_pcap)
 * deliver whatever comes; a NIC or a kernel interface (net_af_packet) takes multicast frames
 * only for groups joined on it, which this engine does not do: refused, naming the group. */
static gboolean
rx_groups_check (const DpdkPort *port, const DqFlowRule *rules, guint n_rules, GError **error)
{
  static const char *const software[] = { "net_ring", "net_null", "net_pcap", NULL };
  for (guint k = 0; software[k] != NULL; k++)
    if (g_str_has_prefix (port->devargs, software[k]))
      return TRUE;
  for (guint i = 0; i < n_rules; i++) {
    guint32 g;
    if (!dq_flow_rule_group (&rules[i], &g))
      continue;
    g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
        "%s: flow rule %u names the multicast group %u.%u.%u.%u, which the dpdk engine does "
        "not join on this device (allowed: unicast destinations, any on net_ring, net_null "
        "and net_pcap; the afpacket engine joins groups)",
        port->what, i + 1, g >> 24, (g >> 16) & 0xff, (g >> 8) & 0xff, g & 0xff);
    return FALSE;
  }
  return TRUE;
}

static gboolean
rx_geometry_choose (DpdkRxQueue *rxq, const DqRxConfig *config, GError **error)
{
  DpdkPort *port = rxq->port;
  guint max_packet;

  if (!port_max_packet (port, "RX", config->max_packet_size, &max_packet, error))
    return FALSE;
  gsize ring = config->ring_bytes != 0 ? config->ring_bytes : DPDK_RX_DEFAULT_RING;
  gsize block = align_up ((gsize) config->burst_packets * align_up (max_packet, DPDK_ALIGN), 4096);
  if (ring > DPDK_RING_MAX || ring / block < DPDK_MIN_BLOCKS) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: ring-size %" G_GSIZE_FORMAT " is out "
        "of range: a burst of %u packets of up to %u bytes takes %" G_GSIZE_FORMAT " bytes "
        "and the ring must hold %u (allowed %" G_GSIZE_FORMAT " .. %" G_GSIZE_FORMAT "; or "
        "lower burst-packets or max-packet-size)",
        port->what, ring, config->burst_packets, max_packet, block, DPDK_MIN_BLOCKS,
        block * DPDK_MIN_BLOCKS, DPDK_RING_MAX);
    return FALSE;
  }
  rxq->max_packet = max_packet;
  rxq->block_size = block;
  rxq->n_blocks = (guint) (ring / block);
  rxq->ring_size = block * rxq->n_blocks;
  return TRUE;
}


static void
dpdk_rxq_destroy (gpointer priv)
{
  DpdkRxQueue *rxq = priv;
  DpdkPort *port = rxq->port;

  dpdk_steering_clear (&rxq->steer);
  if (rxq->pend_n > 0)
    rte_pktmbuf_free_bulk (rxq->pend + rxq->pend_head, rxq->pend_n);
  g_mutex_lock (&port->lock);
  if (rxq->qid < DPDK_MAX_RX_QUEUES && port->rxqs[rxq->qid] == rxq)
    port->rxqs[rxq->qid] = NULL;
  g_mutex_unlock (&port->lock);
  dq_block_ring_clear (&rxq->blocks);
  if (rxq->blocks.ring != NULL)
    munmap (rxq->blocks.ring, rxq->ring_size);
  if (rxq->rules.active != NULL)
    dq_rx_rules_clear (&rxq->rules);
  g_free (rxq);
}

static gboolean
port_rx_idle_locked (DpdkPort *port)
{
  for (guint q = 0; q < DPDK_MAX_RX_QUEUES; q++)
    if (port->rxqs[q] != NULL)
      return FALSE;
  return TRUE;
}

static gpointer
dpdk_rxq_create (gpointer port_priv, const DqRxConfig *config, GError **error)
{
  DpdkPort *port = port_priv;
  /* ring_memory and header_size are refused by the engine layer (DqPortInfo) */
  DpdkRxQueue *rxq = g_new0 (DpdkRxQueue, 1);
  rxq->port = port;
  rxq->qid = (guint16) config->queue_index;
  rxq->burst_packets = MAX (config->burst_packets, 1);
  rxq->burst_timeout_ns = config->burst_timeout_ns;

  if (config->n_queues == 0 || config->n_queues > port->max_rx_queues ||
      config->queue_index >= config->n_queues) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: queues %u is out of range (allowed "
        "1 .. %u for this device)",
        port->what, config->n_queues, port->max_rx_queues);
    rxq->qid = DPDK_MAX_RX_QUEUES;
    goto failed;
  }
  rxq->n_queues = config->n_queues;
  dpdk_steering_init (&rxq->steer, &dpdk_flow_ops_rte, port->port_id, rxq->qid);
  if (!dq_flow_rules_check_queues (
          port->what, config->flows, config->n_flows, config->n_queues, error) ||
      !rx_groups_check (port, config->flows, config->n_flows, error) ||
      !rx_geometry_choose (rxq, config, error))
    goto failed;
  dq_rx_rules_init (
      &rxq->rules, config->filter, config->flows, config->n_flows, config->queue_index);

  guint8 *ring =
      mmap (NULL, rxq->ring_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ring == MAP_FAILED) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "%s: cannot map a %" G_GSIZE_FORMAT "-byte ring: %s",
        port->what, rxq->ring_size, g_strerror (errno));
    goto failed;
  }
  dq_block_ring_init (&rxq->blocks, ring, rxq->block_size, rxq->n_blocks, rxq->burst_packets);

  g_mutex_lock (&port->lock);
  gboolean ok = TRUE;
  if (port->rxqs[rxq->qid] != NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_BUSY, "%s: RX queue %u is in use", port->what, rxq->qid);
    ok = FALSE;
  } else if (port->n_rxq != config->n_queues || !port->started) {
    if (!port_rx_idle_locked (port)) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_BUSY,
          "%s: the device runs %u RX queue%s for "
          "another user; %u cannot be set up until it stops",
          port->what, port->n_rxq, port->n_rxq == 1 ? "" : "s", config->n_queues);
      ok = FALSE;
    } else {
      g_mutex_lock (&port->tx_lock);
      ok = port_configure_locked (port, config->n_queues, error);
      g_mutex_unlock (&port->tx_lock);
    }
  }
  if (ok)
    port->rxqs[rxq->qid] = rxq;
  g_mutex_unlock (&port->lock);
  if (!ok || !rx_steering_apply (rxq, config->flows, config->n_flows, error))
    goto failed;
  return rxq;

failed:
  dpdk_rxq_destroy (rxq);
  return NULL;
}



/* Copies up to `max` bytes of a (possibly chained) mbuf to `dst`. */
static guint
mbuf_copy (guint8 *dst, const struct rte_mbuf *m, guint max)
{
  guint done = 0;
  for (; m != NULL && done < max; m = m->next) {
    guint n = MIN ((guint) m->data_len, max - done);
    memcpy (dst + done, rte_pktmbuf_mtod (m, const guint8 *), n);
    done += n;
  }
  return done;
}

/* Moves pending mbufs into the burst being filled, until it is full or they run out.
 * Returns TRUE when the burst is complete (burst-packets reached, or no room for
 * another largest packet). */
static gboolean
rx_fill_from_pending (DpdkRxQueue *rxq)
{
  DqBlockRing *blocks = &rxq->blocks;
  guint64 bytes = 0, truncated = 0, filtered = 0;
  guint delivered = 0;
  gboolean full = FALSE;

  const guint first = rxq->pend_head;

  while (rxq->pend_n > 0) {
    if (blocks->fill_n == rxq->burst_packets || !dq_block_ring_room (blocks, rxq->max_packet)) {
      full = TRUE;
      break;
    }
    struct rte_mbuf *m = rxq->pend[rxq->pend_head++];
    rxq->pend_n--;
    guint8 *dst = dq_block_ring_next (blocks);
    guint len = mbuf_copy (dst, m, rxq->max_packet);
    guint32 flags = 0;
    int vlan = -1;
    if (m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED) {
      vlan = m->vlan_tci & 0x0fff;
      flags |= DQ_PACKET_FLAG_VLAN | ((guint32) vlan << 16);
    }
    guint32 flow_id;
    if (!dq_rx_rules_classify (&rxq->rules, dst, len, vlan, &flow_id)) {
      filtered++;
      continue;
    }
    /* counted among the delivered packets only, as every engine does */
    if (m->pkt_len > len) {
      flags |= DQ_PACKET_FLAG_TRUNCATED;
      truncated++;
    }
    DqPacket *pkt = dq_block_ring_add (blocks, len, DPDK_ALIGN);
    pkt->flow_id = flow_id;
    pkt->flags = flags;
    pkt->timestamp = rxq->pend_time;
    bytes += len;
    delivered++;
  }
  /* the copied mbufs go back in one call */
  if (rxq->pend_head > first)
    rte_pktmbuf_free_bulk (rxq->pend + first, rxq->pend_head - first);
  if (delivered > 0) {
    dq_counter_add (&rxq->packets, delivered);
    dq_counter_add (&rxq->bytes, bytes);
  }
  if (truncated > 0)
    dq_counter_add (&rxq->truncated, truncated);
  if (filtered > 0)
    dq_counter_add (&rxq->drops_filtered, filtered);
  return full || blocks->fill_n == rxq->burst_packets ||
      !dq_block_ring_room (blocks, rxq->max_packet);
}

/* Hands the burst being filled out. */
static void
rx_fill_finish (DpdkRxQueue *rxq, DqBurst *burst)
{
  dq_block_ring_finish (&rxq->blocks, burst);
  dq_counter_add (&rxq->bursts, 1);
}

/* An empty read of a replayed file is its end, unless the PMD ran out of mbufs. */
static gboolean
rx_replay_at_end (DpdkRxQueue *rxq)
{
  struct rte_eth_stats st;
  if (rte_eth_stats_get (rxq->port->port_id, &st) != 0)
    return FALSE;
  if (st.rx_nombuf != rxq->nombuf_seen) {
    rxq->nombuf_seen = st.rx_nombuf;
    return FALSE;
  }
  return TRUE;
}

static int
dpdk_rxq_poll (gpointer priv, DqBurst *burst, gint64 timeout_ns, GError **error)
{
  DpdkRxQueue *rxq = priv;
  DpdkPort *port = rxq->port;
  gint64 deadline = timeout_ns < 0 ? -1 : dq_mono_ns () + timeout_ns;

  for (;;) {
    gboolean got = FALSE;

    if (g_atomic_int_compare_and_exchange (&rxq->wake, 1, 0))
      return 0;
    if (rxq->ended && rxq->blocks.fill_n == 0)
      return DQ_RXQ_END;
    /* with the ring full (block cur still held) the device keeps the packets */
    if (dq_block_ring_begin (&rxq->blocks)) {
      if (rxq->pend_n == 0 && !rxq->ended) {
        rxq->pend_head = 0;
        rxq->pend_n = rte_eth_rx_burst (port->port_id, rxq->qid, rxq->pend, DPDK_RX_BATCH);
        if (rxq->pend_n == 0 && port->replay && rx_replay_at_end (rxq)) {
          rxq->ended = TRUE;
          if (rxq->blocks.fill_n > 0) {
            rx_fill_finish (rxq, burst);
            return 1;
          }
          return DQ_RXQ_END;
        }
        if (rxq->pend_n > 0) {
          rxq->pend_time = dq_clock_ns (CLOCK_REALTIME);
          if (rxq->blocks.fill_n == 0)
            rxq->fill_start = dq_mono_ns ();
        }
      }
      if (rxq->pend_n > 0) {
        got = TRUE;
        rxq->idle = 0;
        dq_rx_rules_adopt (&rxq->rules);
        if (rx_fill_from_pending (rxq) && rxq->blocks.fill_n > 0) {
          rx_fill_finish (rxq, burst);
          return 1;
        }
      }
      /* a partial burst waits at most burst-timeout for more packets */
      if (rxq->blocks.fill_n > 0 &&
          (guint64) (dq_mono_ns () - rxq->fill_start) >= rxq->burst_timeout_ns) {
        rx_fill_finish (rxq, burst);
        return 1;
      }
    }
    /* a partial burst stays open: it goes out full or after burst-timeout, however often
     * the caller polls */
    if (deadline >= 0 && dq_mono_ns () >= deadline)
      return 0;
    if (got)
      continue;
    if (rxq->idle < DPDK_IDLE_SPINS) {
      rxq->idle++;
      rte_pause ();
    } else {
      idle_sleep ();
    }
  }
}

static void
dpdk_rxq_release (gpointer priv, DqBurst *burst)
{
  DpdkRxQueue *rxq = priv;
  dq_block_ring_release (&rxq->blocks, burst);
}

static void
dpdk_rxq_wakeup (gpointer priv)
{
  DpdkRxQueue *rxq = priv;
  g_atomic_int_set (&rxq->wake, 1);
}

static void
dpdk_rxq_stats (gpointer priv, DqRxStats *stats)
{
  DpdkRxQueue *rxq = priv;

  stats->packets = dq_counter_get (&rxq->packets);
  stats->bytes = dq_counter_get (&rxq->bytes);
  stats->bursts = dq_counter_get (&rxq->bursts);
  stats->truncated = dq_counter_get (&rxq->truncated);
  stats->drops_filtered = dq_counter_get (&rxq->drops_filtered);
  /* the device counts its drops per port: queue 0 reports them */
  stats->drops_ring_full = rxq->qid == 0 ? port_device_drops (rxq->port) : 0;
}

static gsize
dpdk_rxq_ring_bytes (gpointer priv)
{
  DpdkRxQueue *rxq = priv;
  return rxq->ring_size;
}

static gboolean
dpdk_rxq_set_flows (
    gpointer priv, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, GError **error)
{
  DpdkRxQueue *rxq = priv;
  if (!dq_flow_rules_check_queues (rxq->port->what, rules, n_rules, rxq->n_queues, error) ||
      !rx_groups_check (rxq->port, rules, n_rules, error) ||
      !rx_steering_apply (rxq, rules, n_rules, error))
    return FALSE;
  dq_rx_rules_publish (&rxq->rules, filter, rules, n_rules, rxq->qid);
  return TRUE;
}

/* ---------------------------------------------------------------------------------- */
/* TX queue: frames copied into mbufs, sent on the port's one TX queue */

typedef struct {
  DpdkPort *port;
  guint max_packet;
  gint wake; /* atomic */

  DqTxCounters tx;
} DpdkTxQueue;

static gpointer
dpdk_txq_create (gpointer port_priv, const DqTxConfig *config, GError **error)
{
  DpdkPort *port = port_priv;
  guint max_packet;

  if (!dq_tx_config_refuse_timing (port->what, config,
          "the mlx5 and emu engines schedule and pace (DPDK's own tx_pp is not used)", error) ||
      !port_max_packet (port, "TX", config->max_packet_size, &max_packet, error))
    return NULL;
  g_mutex_lock (&port->lock);
  gboolean ok = TRUE;
  if (!port->started) {
    g_mutex_lock (&port->tx_lock);
    ok = port_configure_locked (port, 1, error);
    g_mutex_unlock (&port->tx_lock);
  }
  if (ok)
    port->n_txq_users++;
  g_mutex_unlock (&port->lock);
  if (!ok)
    return NULL;

  DpdkTxQueue *txq = g_new0 (DpdkTxQueue, 1);
  txq->port = port;
  txq->max_packet = max_packet;
  return txq;
}

static void
dpdk_txq_destroy (gpointer priv)
{
  DpdkTxQueue *txq = priv;
  DpdkPort *port = txq->port;

  g_mutex_lock (&port->lock);
  port->n_txq_users--;
  g_mutex_unlock (&port->lock);
  g_free (txq);
}

/* Puts mbufs on the TX queue until all are taken, the device fails to take any for the
 * whole wait, or a wakeup comes. Returns how many were taken; the rest stay with the
 * caller. */
static guint
tx_push (DpdkTxQueue *txq, struct rte_mbuf **mbufs, guint n, gboolean *woken)
{
  DpdkPort *port = txq->port;
  guint sent = 0, spins = 0;
  gboolean waited = FALSE;

  while (sent < n) {
    g_mutex_lock (&port->tx_lock);
    guint r = port->started
        ? rte_eth_tx_burst (port->port_id, 0, mbufs + sent, (uint16_t) (n - sent))
        : 0;
    g_mutex_unlock (&port->tx_lock);
    sent += r;
    if (sent == n)
      break;
    if (r == 0) {
      if (!waited) {
        dq_counter_add (&txq->tx.ring_full_waits, 1);
        waited = TRUE;
      }
      if (g_atomic_int_compare_and_exchange (&txq->wake, 1, 0)) {
        *woken = TRUE;
        break;
      }
      if (spins < DPDK_IDLE_SPINS) {
        spins++;
        rte_pause ();
      } else {
        idle_sleep ();
      }
    }
  }
  return sent;
}

static int
dpdk_txq_send (gpointer priv, const guint8 *const *frames, const guint32 *lengths,
    const guint64 *times, guint n, GError **error)
{
  DpdkTxQueue *txq = priv;
  struct rte_mbuf *mbufs[DPDK_TX_BATCH];
  guint idx[DPDK_TX_BATCH];
  guint consumed = 0;
  guint64 queued = 0, bytes = 0, errors = 0;
  gboolean woken = FALSE;

  while (consumed < n && !woken) {
    /* this round: up to DPDK_TX_BATCH acceptable frames, idx[] their indices; the
     * refused ones in between are consumed with them */
    guint k = 0, scan = consumed;
    for (; scan < n && k < DPDK_TX_BATCH; scan++)
      if (lengths[scan] >= DPDK_ETH_HLEN && lengths[scan] <= txq->max_packet)
        idx[k++] = scan;
    if (k == 0) {
      errors += scan - consumed;
      consumed = scan;
      continue;
    }
    struct rte_mempool *pool = g_atomic_pointer_get (&txq->port->pool);
    if (rte_pktmbuf_alloc_bulk (pool, mbufs, k) != 0) {
      /* every mbuf is in flight: wait for the device to send some */
      dq_counter_add (&txq->tx.ring_full_waits, 1);
      if (g_atomic_int_compare_and_exchange (&txq->wake, 1, 0)) {
        errors += idx[0] - consumed;
        consumed = idx[0];
        woken = TRUE;
      } else {
        idle_sleep ();
      }
      continue;
    }
    for (guint j = 0; j < k; j++) {
      guint8 *dst = (guint8 *) rte_pktmbuf_append (mbufs[j], (uint16_t) lengths[idx[j]]);
      memcpy (dst, frames[idx[j]], lengths[idx[j]]);
      bytes += lengths[idx[j]];
    }
    guint sent = tx_push (txq, mbufs, k, &woken);
    queued += sent;
    if (sent < k) {
      /* woken: frame idx[sent] and the later ones stay with the caller */
      for (guint j = sent; j < k; j++)
        bytes -= lengths[idx[j]];
      rte_pktmbuf_free_bulk (mbufs + sent, k - sent);
      errors += idx[sent] - consumed - sent;
      consumed = idx[sent];
      break;
    }
    errors += (scan - consumed) - k;
    consumed = scan;
  }

  dq_tx_counters_add_burst (&txq->tx, queued, bytes, errors);
  (void) error;
  return (int) consumed;
}

/* Waits until the device has sent what it was given: rte_eth_tx_done_cleanup() frees the
 * mbufs of completed descriptors; a device without it is taken at its word. */
static gboolean
dpdk_txq_flush (gpointer priv, GError **error)
{
  DpdkTxQueue *txq = priv;
  DpdkPort *port = txq->port;
  gint64 deadline = dq_mono_ns () + DPDK_TX_FLUSH_TIMEOUT_NS;

  for (;;) {
    g_mutex_lock (&port->tx_lock);
    int r = port->started ? rte_eth_tx_done_cleanup (port->port_id, 0, 0) : 0;
    g_mutex_unlock (&port->tx_lock);
    if (r <= 0)
      return TRUE; /* nothing left in flight, or the device cannot tell */
    if (g_atomic_int_compare_and_exchange (&txq->wake, 1, 0))
      return FALSE;
    if (dq_mono_ns () >= deadline) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_IO,
          "%s: the device did not finish sending "
          "within 1 s",
          port->what);
      return FALSE;
    }
    idle_sleep ();
  }
}

static void
dpdk_txq_wakeup (gpointer priv)
{
  DpdkTxQueue *txq = priv;
  g_atomic_int_set (&txq->wake, 1);
}

static guint
dpdk_txq_max_frame (gpointer priv)
{
  DpdkTxQueue *txq = priv;
  return txq->max_packet;
}

static void
dpdk_txq_stats (gpointer priv, DqTxStats *stats)
{
  DpdkTxQueue *txq = priv;
  dq_tx_counters_read (&txq->tx, stats);
}

const DqEngineOps dq_dpdk_engine = {
  .name = "dpdk",
  .description = "any DPDK ethdev (PCI NIC or virtual device); packets copied from mbufs "
                 "into bursts",
  .port_open = dpdk_port_open,
  .port_close = dpdk_port_close,
  .port_time = dpdk_port_time,
  .rxq_create = dpdk_rxq_create,
  .rxq_destroy = dpdk_rxq_destroy,
  .rxq_poll = dpdk_rxq_poll,
  .rxq_release = dpdk_rxq_release,
  .rxq_wakeup = dpdk_rxq_wakeup,
  .rxq_stats = dpdk_rxq_stats,
  .rxq_ring_bytes = dpdk_rxq_ring_bytes,
  .rxq_set_flows = dpdk_rxq_set_flows,
  .txq_create = dpdk_txq_create,
  .txq_destroy = dpdk_txq_destroy,
  .txq_send = dpdk_txq_send,
  .txq_flush = dpdk_txq_flush,
  .txq_wakeup = dpdk_txq_wakeup,
  .txq_stats = dpdk_txq_stats,
  .txq_max_frame = dpdk_txq_max_frame,
};
