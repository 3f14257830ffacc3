/* afpacket engine: any Linux network interface through AF_PACKET sockets.
 *
 * RX: one TPACKET_V3 ring per queue. The kernel fills a block with packets and hands the
 * whole block over (TP_STATUS_USER); the block is cut into bursts of at most burst_packets
 * packets, each a contiguous range of the block, and the block goes back to the kernel
 * once the walk is done and every burst cut from it was released. Flow rules run twice:
 * as a classic BPF socket filter in the kernel (only matching packets enter the ring) and
 * in software on delivery, to find each packet's mark. Several queues of one element
 * share the traffic through PACKET_FANOUT (a CBPF program: the rules' queue keys, else a
 * flow hash). Rules change while receiving: the software rules are published first
 * (rx-rules.h), then the socket filter and the fanout program are replaced, each in one
 * setsockopt(), so a packet that both rule sets deliver is never dropped.
 *
 * TX (afpacket-tx.c): one TPACKET_V2 ring per queue with PACKET_QDISC_BYPASS (no qdisc,
 * and no copy to packet taps: tcpdump on the sending interface does not see these
 * frames); frames are copied into slots, flagged TP_STATUS_SEND_REQUEST and sent by one
 * send() per burst. Paced queues go through the fq qdisc, queues that send at a time
 * through etf, one sendmsg() per distinct time.
 *
 * Timestamps are the kernel's software receive time, on CLOCK_REALTIME.
 */
#include "afpacket-private.h"
#include "mcast.h"

/* ---------------------------------------------------------------------------------- */
/* helpers */

gboolean
afp_port_read_mtu (const char *ifname, guint *mtu)
{
  struct ifreq ifr;
  int s = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  gboolean ok = FALSE;

  if (s < 0)
    return FALSE;
  memset (&ifr, 0, sizeof ifr);
  g_strlcpy (ifr.ifr_name, ifname, sizeof ifr.ifr_name);
  if (ioctl (s, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0) {
    *mtu = (guint) ifr.ifr_mtu;
    ok = TRUE;
  }
  int err = errno;
  close (s);
  errno = err;
  return ok;
}

static char *
list_interfaces (void)
{
  struct if_nameindex *list = if_nameindex ();
  GString *names = g_string_new (NULL);

  if (list != NULL) {
    for (struct if_nameindex *i = list; i->if_index != 0 && i->if_name != NULL; i++) {
      if (names->len > 0)
        g_string_append (names, ", ");
      g_string_append (names, i->if_name);
    }
    if_freenameindex (list);
  }
  if (names->len == 0)
    g_string_append (names, "(none)");
  return g_string_free (names, FALSE);
}

/* An AF_PACKET SOCK_RAW socket with protocol 0: it receives nothing until it is bound
 * with a protocol, so options and filters can be set before any packet arrives. */
int
afp_packet_socket_open (const AfpPort *port, const char *what, GError **error)
{
  int fd = socket (AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd >= 0)
    return fd;

  int err = errno;
  if (err == EPERM || err == EACCES)
    g_set_error (error, DQ_ERROR, DQ_ERROR_PERMISSION,
        "afpacket:%s: opening the %s AF_PACKET socket needs CAP_NET_RAW: run as root or "
        "grant the capability (setcap cap_net_raw+ep) (%s)",
        port->ifname, what, g_strerror (err));
  else
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO,
        "afpacket:%s: cannot open the %s AF_PACKET socket: %s", port->ifname, what,
        g_strerror (err));
  return -1;
}

static gboolean
packet_setsockopt (int fd, int level, int name, const void *value, socklen_t len,
    const AfpPort *port, const char *what, GError **error)
{
  if (setsockopt (fd, level, name, value, len) == 0)
    return TRUE;
  int err = errno;
  g_set_error (error, DQ_ERROR, err == EPERM ? DQ_ERROR_PERMISSION : DQ_ERROR_IO,
      "afpacket:%s: setting %s failed: %s", port->ifname, what, g_strerror (err));
  return FALSE;
}

gboolean
afp_packet_set_int (
    int fd, int name, int value, const AfpPort *port, const char *what, GError **error)
{
  return packet_setsockopt (fd, SOL_PACKET, name, &value, sizeof value, port, what, error);
}

gboolean
afp_packet_bind (int fd, const AfpPort *port, guint16 protocol, GError **error)
{
  struct sockaddr_ll sll;

  memset (&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons (protocol);
  sll.sll_ifindex = port->ifindex;
  if (bind (fd, (struct sockaddr *) &sll, sizeof sll) == 0)
    return TRUE;
  int err = errno;
  g_set_error (error, DQ_ERROR, err == ENODEV ? DQ_ERROR_DEVICE : DQ_ERROR_IO,
      "afpacket:%s: binding to the interface failed: %s", port->ifname, g_strerror (err));
  return FALSE;
}

static gboolean
packet_attach_filter (
    int fd, struct sock_filter *insns, guint n_insns, const AfpPort *port, GError **error)
{
  struct sock_fprog prog = { .len = (unsigned short) n_insns, .filter = insns };
  return packet_setsockopt (fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog, port,
      "the socket filter (SO_ATTACH_FILTER)", error);
}

/* ---------------------------------------------------------------------------------- */
/* port */

static gpointer
afp_port_open (const char *arg, DqPortInfo *info, GError **error)
{
  if (strlen (arg) >= IF_NAMESIZE) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "afpacket:%s: an interface name has at most %d characters", arg, IF_NAMESIZE - 1);
    return NULL;
  }
  unsigned int ifindex = if_nametoindex (arg);
  if (ifindex == 0) {
    char *names = list_interfaces ();
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "afpacket:%s: no network interface '%s' in this network namespace; found: %s", arg, arg,
        names);
    g_free (names);
    return NULL;
  }

  int s = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    g_set_error (
        error, DQ_ERROR, DQ_ERROR_IO, "afpacket:%s: socket() failed: %s", arg, g_strerror (errno));
    return NULL;
  }
  struct ifreq ifr;
  memset (&ifr, 0, sizeof ifr);
  g_strlcpy (ifr.ifr_name, arg, sizeof ifr.ifr_name);
  if (ioctl (s, SIOCGIFHWADDR, &ifr) != 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "afpacket:%s: cannot read the hardware address: %s", arg, g_strerror (errno));
    close (s);
    return NULL;
  }
  /* Bursts carry Ethernet frames: interfaces without an Ethernet header (tun, ip
   * tunnels, ...) would deliver bare IP packets. */
  if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER && ifr.ifr_hwaddr.sa_family != ARPHRD_LOOPBACK) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "afpacket:%s: not an Ethernet interface (ARPHRD type %u); the afpacket engine "
        "needs Ethernet framing",
        arg, ifr.ifr_hwaddr.sa_family);
    close (s);
    return NULL;
  }
  memcpy (info->mac, ifr.ifr_hwaddr.sa_data, sizeof info->mac);
  close (s);

  guint mtu;
  if (!afp_port_read_mtu (arg, &mtu)) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "afpacket:%s: cannot read the MTU: %s", arg,
        g_strerror (errno));
    return NULL;
  }
  AfpPort *port = g_new0 (AfpPort, 1);
  port->ifindex = (int) ifindex;
  port->mtu = mtu;
  g_strlcpy (port->ifname, arg, sizeof port->ifname);
  g_mutex_init (&port->lock);
  port->fanouts = g_array_new (FALSE, FALSE, sizeof (AfpFanout));
  info->mtu = port->mtu;
  info->clock_id = CLOCK_REALTIME;
  info->clock_name = "CLOCK_REALTIME (kernel software timestamps)";
  return port;
}

static void
afp_port_close (gpointer priv)
{
  AfpPort *port = priv;

  g_array_unref (port->fanouts);
  g_mutex_clear (&port->lock);
  g_free (port);
}

static guint64
afp_port_time (gpointer priv)
{
  return dq_clock_ns (CLOCK_REALTIME);
}

/* max_packet_size 0 means: a full-MTU frame with one VLAN tag. */
guint
afp_default_max_packet (const AfpPort *port)
{
  return MIN (port->mtu + ETH_HLEN + AFP_VLAN_HLEN, AFP_MAX_PACKET);
}

gboolean
afp_check_max_packet (const char *dir, const AfpPort *port, guint max_packet, GError **error)
{
  if (max_packet >= AFP_MIN_PACKET && max_packet <= AFP_MAX_PACKET)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "afpacket:%s: %s max-packet-size %u is out of range (allowed %u .. %u, or 0 for "
      "MTU + 18)",
      port->ifname, dir, max_packet, AFP_MIN_PACKET, AFP_MAX_PACKET);
  return FALSE;
}

/* ---------------------------------------------------------------------------------- */
/* RX queue */

typedef struct _AfpBurstRec AfpBurstRec;

/* A burst record: the packet array handed out with one burst. Records are recycled
 * through the queue's free list; a new one is allocated only when the list is empty. */
struct _AfpBurstRec {
  DqBurstLink link;
  guint block; /* ring block the burst was cut from */
  DqPacket packets[];
};

typedef struct {
  gsize block_size;
  guint n_blocks;
  guint retire_tov_ms;
  guint max_packet;
} AfpRxGeometry;

typedef struct {
  AfpPort *port;
  int fd;
  int wake_fd;
  int ep_fd;          /* epoll: socket (edge-triggered) + wake_fd */
  gboolean in_fanout; /* a member of port's fanout group `group_id` */
  guint32 group_id;
  guint8 *ring;
  gsize ring_size;
  gsize block_size;
  guint n_blocks;

  /* per block: 1 while the poller walks it + 1 per burst in flight; the block goes
   * back to the kernel when this drops to 0 */
  gint *block_refs;
  /* per block: seq_num the kernel gave the block when we last walked it */
  guint64 *walked_seq;

  /* poller state, touched by the polling thread only */
  guint cur;        /* next block in ring order */
  gboolean walking; /* block cur is being cut into bursts */
  guint8 *walk_pkt; /* next packet header in block cur */
  guint walk_left;  /* packets of block cur not yet delivered */

  guint burst_packets; /* packets a record holds */
  DqRxRules rules;     /* the software classifier's */
  DqGroups groups;     /* multicast groups the rules name (queue 0 of a set joins) */

  /* what a change of the rules needs (dq_rxq_set_flows), and what the queue set had
   * before, to go back to when the change fails half way */
  guint queue_index;
  guint n_queues;
  guint max_packet;
  DqRxFilter filter;
  DqFlowRule *all_rules;
  guint n_all_rules;

  DqBurstPool recs;

  guint64 packets;
  guint64 bytes;
  guint64 bursts;
  guint64 truncated;
  guint64 drops_filtered;

  GMutex stats_lock;
  guint64 kernel_drops;
} AfpRxQueue;

/* RX ring geometry.
 *  - block size: a power of two and a multiple of the page size, at most 1 MiB. It is
 *    halved while the ring would have fewer than 8 blocks, but never below one page nor
 *    below the room one max_packet_size frame takes (frame + AFP_RX_BLOCK_OVERHEAD): a
 *    block is the unit the kernel hands over (latency) and the unit of reuse.
 *  - blocks: ring_bytes / block size, the remainder unused; at least 2, so that the
 *    kernel can fill one block while the other is read.
 *  - retire timeout: burst_timeout_ns rounded up to whole ms (the kernel's unit), >= 1:
 *    a partly filled block is handed over after that long.
 */
static gboolean
rx_geometry_choose (
    const AfpPort *port, const DqRxConfig *config, AfpRxGeometry *geo, GError **error)
{
  gsize page = page_size ();
  gsize ring = config->ring_bytes ? config->ring_bytes : AFP_RX_DEFAULT_RING;
  guint max_packet =
      config->max_packet_size ? config->max_packet_size : afp_default_max_packet (port);

  if (!afp_check_max_packet ("RX", port, max_packet, error))
    return FALSE;
  if (ring < 2 * page || ring > AFP_RING_MAX) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "afpacket:%s: RX ring-size %" G_GSIZE_FORMAT " is out of range (allowed %" G_GSIZE_FORMAT
        " .. %" G_GSIZE_FORMAT ", or 0 for %" G_GSIZE_FORMAT ")",
        port->ifname, ring, 2 * page, AFP_RING_MAX, AFP_RX_DEFAULT_RING);
    return FALSE;
  }

  gsize need = (gsize) max_packet + AFP_RX_BLOCK_OVERHEAD;
  gsize block = MAX (AFP_RX_MAX_BLOCK, page);
  while (block > page && block / 2 >= need &&
      (ring / block < AFP_RX_MIN_BLOCKS ||
          (ring / block < AFP_RX_PREFERRED_BLOCKS && block > AFP_RX_MIN_PREFERRED_BLOCK)))
    block /= 2;
  while (block < need)
    block *= 2;
  if (ring / block < 2) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "afpacket:%s: RX ring-size %" G_GSIZE_FORMAT " is too small for max-packet-size "
        "%u: the ring needs at least 2 blocks of %" G_GSIZE_FORMAT " bytes (allowed: "
        "ring-size >= %" G_GSIZE_FORMAT ")",
        port->ifname, ring, max_packet, block, 2 * block);
    return FALSE;
  }

  guint64 tov = (config->burst_timeout_ns + 999999) / 1000000;
  geo->block_size = block;
  geo->n_blocks = (guint) (ring / block);
  geo->retire_tov_ms = (guint) CLAMP (tov, 1, G_MAXUINT32);
  geo->max_packet = max_packet;
  return TRUE;
}

/* Rules with a queue key must name one of the element's queues. */
static gboolean
rx_rules_check (AfpRxQueue *rxq, const DqFlowRule *rules, guint n_rules, GError **error)
{
  char what[IF_NAMESIZE + 16];

  g_snprintf (what, sizeof what, "afpacket:%s", rxq->port->ifname);
  return dq_flow_rules_check_queues (what, rules, n_rules, rxq->n_queues, error);
}

static gboolean
rx_ring_map (AfpRxQueue *rxq, const AfpRxGeometry *geo, GError **error)
{
  struct tpacket_req3 req;

  memset (&req, 0, sizeof req);
  req.tp_block_size = (unsigned int) geo->block_size;
  req.tp_block_nr = geo->n_blocks;
  /* TPACKET_V3 packs packets of any size into a block; the frame fields only have to
   * be consistent (frame_nr = blocks * frames per block). */
  req.tp_frame_size = (unsigned int) geo->block_size;
  req.tp_frame_nr = geo->n_blocks;
  req.tp_retire_blk_tov = geo->retire_tov_ms;
  if (setsockopt (rxq->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0) {
    int err = errno;
    g_set_error (error, DQ_ERROR, err == ENOMEM ? DQ_ERROR_CONFIG : DQ_ERROR_IO,
        "afpacket:%s: cannot create the RX ring (%u blocks of %" G_GSIZE_FORMAT " bytes): %s",
        rxq->port->ifname, geo->n_blocks, geo->block_size, g_strerror (err));
    return FALSE;
  }

  rxq->ring_size = geo->block_size * geo->n_blocks;
  void *ring =
      mmap (NULL, rxq->ring_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, rxq->fd, 0);
  if (ring == MAP_FAILED) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO,
        "afpacket:%s: cannot map the RX ring (%" G_GSIZE_FORMAT " bytes): %s", rxq->port->ifname,
        rxq->ring_size, g_strerror (errno));
    rxq->ring_size = 0;
    return FALSE;
  }
  rxq->ring = ring;
  rxq->block_size = geo->block_size;
  rxq->n_blocks = geo->n_blocks;
  rxq->block_refs = g_new0 (gint, geo->n_blocks);
  rxq->walked_seq = g_new0 (guint64, geo->n_blocks);
  return TRUE;
}

/* what the queue set has now */
static void
rx_rules_remember (AfpRxQueue *rxq, DqRxFilter filter, const DqFlowRule *rules, guint n_rules)
{
  g_free (rxq->all_rules);
  rxq->filter = filter;
  rxq->all_rules = n_rules ? g_memdup2 (rules, n_rules * sizeof *rules) : NULL;
  rxq->n_all_rules = n_rules;
}

/* The socket filter of this queue as classic BPF (returning the snap length): the flow
 * rules; or, with no rules or DQ_RX_FILTER_ALL, one instruction that keeps max_packet
 * bytes; or, with DQ_RX_FILTER_NONE, one that drops everything. NULL with *error when the
 * rules do not fit a program. */
static struct sock_filter *
rx_filter_compile (AfpRxQueue *rxq, DqRxFilter filter, const DqFlowRule *rules, guint n_rules,
    guint *n_insns, GError **error)
{
  if (filter == DQ_RX_FILTER_NONE || filter == DQ_RX_FILTER_ALL || n_rules == 0) {
    guint32 keep = filter == DQ_RX_FILTER_NONE ? 0 : rxq->max_packet;
    struct sock_filter *insn = g_new (struct sock_filter, 1);
    *insn = (struct sock_filter) BPF_STMT (BPF_RET | BPF_K, keep);
    *n_insns = 1;
    return insn;
  }
  int queue = rxq->n_queues > 1 ? (int) rxq->queue_index : -1;
  return dq_flow_compile_bpf (
      rules, n_rules, DQ_FLOW_BPF_FILTER, queue, rxq->max_packet, n_insns, error);
}

/* The fanout program of the queue set: the rules' queue keys, else the flow hash (no
 * rule, or DQ_RX_FILTER_ALL: every packet by its hash). */
static struct sock_filter *
rx_fanout_compile (
    DqRxFilter filter, const DqFlowRule *rules, guint n_rules, guint *n_insns, GError **error)
{
  if (filter != DQ_RX_FILTER_RULES)
    n_rules = 0;
  return dq_flow_compile_bpf (rules, n_rules, DQ_FLOW_BPF_FANOUT, -1, 0, n_insns, error);
}

/* Installs a compiled program: SO_ATTACH_FILTER replaces the socket's filter at once,
 * PACKET_FANOUT_DATA the fanout group's program. Frees `insns`. */
static gboolean
rx_filter_install (AfpRxQueue *rxq, struct sock_filter *insns, guint n_insns, GError **error)
{
  gboolean ok = packet_attach_filter (rxq->fd, insns, n_insns, rxq->port, error);
  g_free (insns);
  return ok;
}

static gboolean
rx_fanout_install (AfpRxQueue *rxq, struct sock_filter *insns, guint n_insns, GError **error)
{
  struct sock_fprog prog = { .len = (unsigned short) n_insns, .filter = insns };
  gboolean ok = packet_setsockopt (rxq->fd, SOL_PACKET, PACKET_FANOUT_DATA, &prog, sizeof prog,
      rxq->port, "the fanout program (PACKET_FANOUT_DATA)", error);
  g_free (insns);
  return ok;
}

static AfpFanout *
port_fanout_find (AfpPort *port, guint32 group_id)
{
  for (guint i = 0; i < port->fanouts->len; i++) {
    AfpFanout *f = &g_array_index (port->fanouts, AfpFanout, i);
    if (f->group_id == group_id)
      return f;
  }
  return NULL;
}

static void
port_fanout_leave (AfpPort *port, guint32 group_id)
{
  g_mutex_lock (&port->lock);
  for (guint i = 0; i < port->fanouts->len; i++) {
    AfpFanout *f = &g_array_index (port->fanouts, AfpFanout, i);
    if (f->group_id == group_id && --f->members == 0) {
      g_array_remove_index_fast (port->fanouts, i);
      break;
    }
  }
  g_mutex_unlock (&port->lock);
}

/* setsockopt (PACKET_FANOUT). The group receives through its own hook, so the members'
 * PACKET_IGNORE_OUTGOING does not apply there: the group needs the flag too (Linux >=
 * 6.2; without it, older kernels). */
static int
fanout_setsockopt (int fd, guint16 id, int type_flags)
{
  int arg = (int) id | ((type_flags | PACKET_FANOUT_FLAG_IGNORE_OUTGOING) << 16);
  if (setsockopt (fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg) == 0)
    return 0;
  if (errno != EINVAL)
    return -1;
  arg = (int) id | (type_flags << 16);
  return setsockopt (fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg);
}

/* Joins the fanout group that spreads the port's traffic over the element's queues: a
 * CBPF program shared by the group sends by the rules' queue keys, else by flow hash.
 * Fanout ids are 16 bits per network namespace: instead of group_id & 0xffff, which
 * two elements could share, the first queue of a group asks the kernel for an unused
 * id (PACKET_FANOUT_FLAG_UNIQUEID) and the port hands it to the group's other queues. */
static gboolean
rx_fanout_join (AfpRxQueue *rxq, const DqRxConfig *config, GError **error)
{
  AfpPort *port = rxq->port;
  int type = PACKET_FANOUT_CBPF;

  g_mutex_lock (&port->lock);
  AfpFanout *group = port_fanout_find (port, config->group_id);
  guint16 id = group != NULL ? group->fanout_id : 0;
  int r = group != NULL ? fanout_setsockopt (rxq->fd, id, type)
                        : fanout_setsockopt (rxq->fd, 0, type | PACKET_FANOUT_FLAG_UNIQUEID);
  int err = errno;
  if (r == 0 && group == NULL) {
    /* read back the id the kernel chose */
    int val = 0;
    socklen_t len = sizeof val;
    if (getsockopt (rxq->fd, SOL_PACKET, PACKET_FANOUT, &val, &len) == 0) {
      AfpFanout f = { .group_id = config->group_id, .fanout_id = (guint16) (val & 0xffff) };
      g_array_append_val (port->fanouts, f);
      group = port_fanout_find (port, config->group_id);
      id = f.fanout_id;
    } else {
      r = -1;
      err = errno;
    }
  }
  if (r == 0) {
    group->members++;
    rxq->in_fanout = TRUE;
    rxq->group_id = config->group_id;
  }
  g_mutex_unlock (&port->lock);

  if (r != 0) {
    g_set_error (error, DQ_ERROR, err == EINVAL || err == ENOSPC ? DQ_ERROR_BUSY : DQ_ERROR_IO,
        "afpacket:%s: queue %u of group %u cannot join its fanout group "
        "(cbpf, kernel id %u): %s",
        rxq->port->ifname, config->queue_index, config->group_id, id, g_strerror (err));
    return FALSE;
  }

  guint n_insns = 0;
  struct sock_filter *insns =
      rx_fanout_compile (config->filter, config->flows, config->n_flows, &n_insns, error);
  return insns != NULL && rx_fanout_install (rxq, insns, n_insns, error);
}

/* this queue's socket filter for `config` */
static gboolean
rx_filter_attach (AfpRxQueue *rxq, const DqRxConfig *config, GError **error)
{
  guint n_insns = 0;
  struct sock_filter *insns =
      rx_filter_compile (rxq, config->filter, config->flows, config->n_flows, &n_insns, error);
  return insns != NULL && rx_filter_install (rxq, insns, n_insns, error);
}

/* Order matters: the socket (protocol 0) receives nothing until bound, so the ring, the
 * filter and PACKET_IGNORE_OUTGOING are in place before the first packet can arrive.
 * A fanout member must be bound before it joins; in between it would receive packets
 * outside the group, so it binds with a drop-all filter, joins, and only then attaches
 * its real filter. */
static gboolean
rx_socket_setup (
    AfpRxQueue *rxq, const DqRxConfig *config, const AfpRxGeometry *geo, GError **error)
{
  if (!afp_packet_set_int (
          rxq->fd, PACKET_VERSION, TPACKET_V3, rxq->port, "PACKET_VERSION (TPACKET_V3)", error))
    return FALSE;
  if (!rx_ring_map (rxq, geo, error))
    return FALSE;

  if (config->n_queues > 1) {
    struct sock_filter drop[] = { BPF_STMT (BPF_RET | BPF_K, 0) };
    if (!packet_attach_filter (rxq->fd, drop, G_N_ELEMENTS (drop), rxq->port, error))
      return FALSE;
  } else if (!rx_filter_attach (rxq, config, error)) {
    return FALSE;
  }
  if (!afp_packet_set_int (
          rxq->fd, PACKET_IGNORE_OUTGOING, 1, rxq->port, "PACKET_IGNORE_OUTGOING", error))
    return FALSE;
  if (!afp_packet_bind (rxq->fd, rxq->port, ETH_P_ALL, error))
    return FALSE;
  if (config->n_queues > 1) {
    if (!rx_fanout_join (rxq, config, error))
      return FALSE;
    if (!rx_filter_attach (rxq, config, error))
      return FALSE;
  }
  return TRUE;
}

static void
afp_rxq_destroy (gpointer priv)
{
  AfpRxQueue *rxq = priv;

  if (rxq == NULL)
    return;
  if (rxq->ring != NULL)
    munmap (rxq->ring, rxq->ring_size);
  if (rxq->fd >= 0)
    close (rxq->fd);
  if (rxq->in_fanout)
    port_fanout_leave (rxq->port, rxq->group_id);
  if (rxq->wake_fd >= 0)
    close (rxq->wake_fd);
  if (rxq->ep_fd >= 0)
    close (rxq->ep_fd);
  dq_burst_pool_clear (&rxq->recs);
  g_free (rxq->block_refs);
  g_free (rxq->walked_seq);
  dq_rx_rules_clear (&rxq->rules);
  dq_groups_clear (&rxq->groups);
  g_free (rxq->all_rules);
  g_mutex_clear (&rxq->stats_lock);
  g_free (rxq);
}

/* The packet socket edge-triggered: TPACKET_V3 wakes the socket once for every block it
 * hands over, and an edge-triggered epoll reports exactly those wakeups. A level-
 * triggered poll reports "readable" for as long as we hold the block before the one
 * the kernel fills — a downstream that keeps one buffer would make it spin. */
static gboolean
rx_epoll_setup (AfpRxQueue *rxq, GError **error)
{
  struct epoll_event sock_ev = { .events = EPOLLIN | EPOLLET, .data.u32 = 0 };
  struct epoll_event wake_ev = { .events = EPOLLIN, .data.u32 = 1 };

  rxq->ep_fd = epoll_create1 (EPOLL_CLOEXEC);
  if (rxq->ep_fd < 0 || epoll_ctl (rxq->ep_fd, EPOLL_CTL_ADD, rxq->fd, &sock_ev) < 0 ||
      epoll_ctl (rxq->ep_fd, EPOLL_CTL_ADD, rxq->wake_fd, &wake_ev) < 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "afpacket:%s: epoll setup failed: %s",
        rxq->port->ifname, g_strerror (errno));
    return FALSE;
  }
  return TRUE;
}

/* The memberships of the groups the rules name, on the port's interface */
static gboolean
afp_rx_groups_sync (
    AfpRxQueue *rxq, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, GError **error)
{
  gchar *what = g_strdup_printf ("afpacket:%s", rxq->port->ifname);
  gboolean ok =
      dq_groups_sync (&rxq->groups, rxq->port->ifindex, what, filter, rules, n_rules, error);
  g_free (what);
  return ok;
}

static gpointer
afp_rxq_create (gpointer port_priv, const DqRxConfig *config, GError **error)
{
  AfpPort *port = port_priv;
  AfpRxGeometry geo;

  /* ring_memory and header_size are refused by the engine layer (DqPortInfo) */
  if (!rx_geometry_choose (port, config, &geo, error))
    return NULL;

  AfpRxQueue *rxq = g_new0 (AfpRxQueue, 1);
  rxq->port = port;
  rxq->fd = -1;
  rxq->wake_fd = -1;
  rxq->ep_fd = -1;
  dq_groups_init (&rxq->groups);
  g_mutex_init (&rxq->stats_lock);
  /* a block cannot hold more packets than this, so larger records would never fill */
  rxq->burst_packets =
      (guint) MIN ((gsize) config->burst_packets, geo.block_size / AFP_RX_MIN_PACKET_ROOM);
  dq_burst_pool_init (
      &rxq->recs, sizeof (AfpBurstRec) + rxq->burst_packets * sizeof (DqPacket), NULL);

  rxq->queue_index = config->queue_index;
  rxq->n_queues = config->n_queues;
  rxq->max_packet = geo.max_packet;
  if (!rx_rules_check (rxq, config->flows, config->n_flows, error))
    goto fail;
  if (config->queue_index == 0 &&
      !afp_rx_groups_sync (rxq, config->filter, config->flows, config->n_flows, error))
    goto fail;
  dq_rx_rules_init (
      &rxq->rules, config->filter, config->flows, config->n_flows, config->queue_index);
  rx_rules_remember (rxq, config->filter, config->flows, config->n_flows);
  rxq->wake_fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (rxq->wake_fd < 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "afpacket:%s: eventfd() failed: %s", port->ifname,
        g_strerror (errno));
    goto fail;
  }
  rxq->fd = afp_packet_socket_open (port, "RX", error);
  if (rxq->fd < 0)
    goto fail;
  if (!rx_socket_setup (rxq, config, &geo, error))
    goto fail;
  if (!rx_epoll_setup (rxq, error))
    goto fail;
  return rxq;

fail:
  afp_rxq_destroy (rxq);
  return NULL;
}

static struct tpacket_block_desc *
ring_block_desc (AfpRxQueue *rxq, guint block)
{
  return (struct tpacket_block_desc *) (rxq->ring + (gsize) block * rxq->block_size);
}

static guint32
ring_block_status (struct tpacket_block_desc *desc)
{
  /* The kernel fills a block, then publishes it by setting TP_STATUS_USER after a
   * write barrier: everything read after this acquire load is the filled block. */
  return __atomic_load_n (&desc->hdr.bh1.block_status, __ATOMIC_ACQUIRE);
}

/* Block `cur` holds packets we have not seen: the kernel handed it over, and it is not
 * a block we walked that is still held (its status stays TP_STATUS_USER until the last
 * burst of it is released; the kernel gives every block it opens a new seq_num). */
static gboolean
ring_block_ready (AfpRxQueue *rxq)
{
  struct tpacket_block_desc *desc = ring_block_desc (rxq, rxq->cur);
  if (!(ring_block_status (desc) & TP_STATUS_USER))
    return FALSE;
  return desc->hdr.bh1.seq_num != rxq->walked_seq[rxq->cur];
}

static void
ring_block_release (AfpRxQueue *rxq, guint block)
{
  struct tpacket_block_desc *desc = ring_block_desc (rxq, block);
  /* Hand the block back: every read of its packets, in any thread, happened before the
   * last reference was dropped; release order keeps them before the kernel's reuse. */
  __atomic_store_n (&desc->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
}

static void
ring_block_put (AfpRxQueue *rxq, guint block)
{
  if (g_atomic_int_dec_and_test (&rxq->block_refs[block]))
    ring_block_release (rxq, block);
}

static void
ring_block_walk_begin (AfpRxQueue *rxq)
{
  struct tpacket_block_desc *desc = ring_block_desc (rxq, rxq->cur);

  rxq->walked_seq[rxq->cur] = desc->hdr.bh1.seq_num;
  g_atomic_int_set (&rxq->block_refs[rxq->cur], 1);
  rxq->walk_pkt = (guint8 *) desc + desc->hdr.bh1.offset_to_first_pkt;
  rxq->walk_left = desc->hdr.bh1.num_pkts;
  rxq->walking = TRUE;
}

static void
ring_block_walk_end (AfpRxQueue *rxq)
{
  guint block = rxq->cur;

  rxq->walking = FALSE;
  rxq->walk_left = 0;
  rxq->cur = (rxq->cur + 1) % rxq->n_blocks;
  ring_block_put (rxq, block);
}

/* Cuts the next burst (at most burst_packets packets) from block `cur`. Returns the
 * number of packets delivered; packets that match no rule are skipped. */
static guint
rx_burst_cut (AfpRxQueue *rxq, DqBurst *burst)
{
  guint8 *block = (guint8 *) ring_block_desc (rxq, rxq->cur);
  AfpBurstRec *rec = dq_burst_pool_get (&rxq->recs);
  guint8 *first = NULL, *end = NULL;
  guint n = 0;
  guint64 bytes = 0, truncated = 0, filtered = 0;

  dq_rx_rules_adopt (&rxq->rules);
  while (rxq->walk_left > 0 && n < rxq->burst_packets) {
    struct tpacket3_hdr *hdr = (struct tpacket3_hdr *) rxq->walk_pkt;
    gsize at = (gsize) (rxq->walk_pkt - block);

    /* the kernel wrote these offsets; never follow one out of the block */
    if (G_UNLIKELY (at + sizeof *hdr > rxq->block_size ||
            at + hdr->tp_mac + (gsize) hdr->tp_snaplen > rxq->block_size)) {
      g_warning ("afpacket:%s: malformed packet header in RX block %u; skipping the rest "
                 "of the block",
          rxq->port->ifname, rxq->cur);
      rxq->walk_left = 0;
      break;
    }
    guint8 *frame = rxq->walk_pkt + hdr->tp_mac;
    rxq->walk_left--;
    rxq->walk_pkt += hdr->tp_next_offset;
    /* the other CPU just wrote the next header: start loading it now */
    __builtin_prefetch (rxq->walk_pkt);

    int vlan = -1;
    guint32 flags = 0;
    if (hdr->tp_status & TP_STATUS_VLAN_VALID) {
      vlan = hdr->hv1.tp_vlan_tci & 0x0fff;
      flags |= DQ_PACKET_FLAG_VLAN | ((guint32) vlan << 16);
    }
    guint32 flow_id;
    if (!dq_rx_rules_classify (&rxq->rules, frame, hdr->tp_snaplen, vlan, &flow_id)) {
      filtered++;
      continue;
    }
    if (hdr->tp_snaplen < hdr->tp_len) {
      flags |= DQ_PACKET_FLAG_TRUNCATED;
      truncated++;
    }
    if (first == NULL)
      first = (guint8 *) hdr;

    DqPacket *pkt = &rec->packets[n++];
    pkt->offset = (guint32) (frame - first);
    pkt->length = hdr->tp_snaplen;
    pkt->flow_id = flow_id;
    pkt->flags = flags;
    pkt->timestamp = (guint64) hdr->tp_sec * G_GUINT64_CONSTANT (1000000000) + hdr->tp_nsec;
    end = frame + hdr->tp_snaplen;
    bytes += hdr->tp_snaplen;
  }

  if (n > 0) {
    g_atomic_int_inc (&rxq->block_refs[rxq->cur]);
    rec->block = rxq->cur;
    burst->data = first;
    burst->size = (gsize) (end - first);
    burst->n_packets = n;
    burst->packets = rec->packets;
    burst->memory = DQ_MEMORY_HOST;
    burst->range = rec;
    dq_counter_add (&rxq->packets, n);
    dq_counter_add (&rxq->bytes, bytes);
    dq_counter_add (&rxq->bursts, 1);
    dq_counter_add (&rxq->truncated, truncated);
  } else {
    dq_burst_pool_put (&rxq->recs, rec);
  }
  if (filtered > 0)
    dq_counter_add (&rxq->drops_filtered, filtered);
  if (rxq->walk_left == 0)
    ring_block_walk_end (rxq);
  return n;
}

/* The socket reported an error (POLLERR). ENETDOWN means the link went down: the
 * kernel re-attaches the socket when the interface comes back up, so keep waiting,
 * unless the interface is gone altogether. */
static int
rx_socket_error (AfpRxQueue *rxq, GError **error)
{
  int err = 0;
  socklen_t len = sizeof err;
  char name[IF_NAMESIZE];

  if (getsockopt (rxq->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
    err = errno;
  if (err == 0 || err == ENETDOWN) {
    if (if_indextoname ((unsigned int) rxq->port->ifindex, name) == NULL) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "afpacket:%s: the interface was removed",
          rxq->port->ifname);
      return -1;
    }
    return 1;
  }
  g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "afpacket:%s: receive error: %s", rxq->port->ifname,
      g_strerror (err));
  return -1;
}

/* epoll_pwait2 (ns timeouts, Linux >= 5.11); where the kernel (or valgrind) does not have
 * it, epoll_wait with the timeout rounded up to whole ms. */
static int
epoll_wait_ns (int ep_fd, struct epoll_event *ev, int n, const struct timespec *ts)
{
  static gint no_pwait2;
  if (!g_atomic_int_get (&no_pwait2)) {
    int r = epoll_pwait2 (ep_fd, ev, n, ts, NULL);
    if (r >= 0 || errno != ENOSYS)
      return r;
    g_atomic_int_set (&no_pwait2, 1);
  }
  int ms = -1;
  if (ts != NULL) {
    gint64 ns = (gint64) ts->tv_sec * G_GINT64_CONSTANT (1000000000) + ts->tv_nsec;
    ms = (int) MIN ((ns + 999999) / 1000000, G_MAXINT);
  }
  return epoll_wait (ep_fd, ev, n, ms);
}

/* Waits for the kernel to hand over a block, for a wakeup, or for the deadline
 * (monotonic ns, -1 for none). Returns 1 to look at the ring again, 0 when woken or
 * timed out, -1 on error. The caller looked at the ring just before: a block handed
 * over since then has already queued its edge, so none is missed. */
static int
rx_wait (AfpRxQueue *rxq, gint64 deadline, GError **error)
{
  struct timespec ts, *tsp = NULL;
  struct epoll_event ev[2];

  if (deadline >= 0) {
    gint64 wait_ns = deadline - dq_mono_ns ();
    if (wait_ns <= 0)
      return 0;
    ts = ns_to_timespec (wait_ns);
    tsp = &ts;
  }
  int r = epoll_wait_ns (rxq->ep_fd, ev, G_N_ELEMENTS (ev), tsp);
  if (r < 0) {
    if (errno == EINTR)
      return 1;
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "afpacket:%s: epoll_wait() failed: %s",
        rxq->port->ifname, g_strerror (errno));
    return -1;
  }
  if (r == 0)
    return 0;
  gboolean woken = FALSE;
  for (int i = 0; i < r; i++) {
    if (ev[i].data.u32 == 1) {
      dq_eventfd_drain (rxq->wake_fd);
      woken = TRUE;
    } else if (ev[i].events & EPOLLERR) {
      return rx_socket_error (rxq, error);
    }
  }
  return woken ? 0 : 1;
}

static int
afp_rxq_poll (gpointer priv, DqBurst *burst, gint64 timeout_ns, GError **error)
{
  AfpRxQueue *rxq = priv;
  gint64 deadline = -1;
  gboolean have_deadline = FALSE;

  for (;;) {
    if (rxq->walking) {
      if (rx_burst_cut (rxq, burst) > 0)
        return 1;
      continue;
    }
    if (ring_block_ready (rxq)) {
      ring_block_walk_begin (rxq);
      continue;
    }
    if (!have_deadline) {
      deadline = timeout_ns < 0 ? -1 : dq_mono_ns () + timeout_ns;
      have_deadline = TRUE;
    }
    int r = rx_wait (rxq, deadline, error);
    if (r <= 0)
      return r;
  }
}

static void
afp_rxq_release (gpointer priv, DqBurst *burst)
{
  AfpRxQueue *rxq = priv;
  AfpBurstRec *rec = burst->range;

  g_return_if_fail (rec != NULL);
  guint block = rec->block;
  dq_burst_pool_release (&rxq->recs, burst);
  ring_block_put (rxq, block);
}

static void
afp_rxq_wakeup (gpointer priv)
{
  AfpRxQueue *rxq = priv;
  dq_eventfd_signal (rxq->wake_fd);
}

static void
afp_rxq_stats (gpointer priv, DqRxStats *stats)
{
  AfpRxQueue *rxq = priv;
  struct tpacket_stats_v3 st;
  socklen_t len = sizeof st;

  /* reading PACKET_STATISTICS resets the kernel's counters: accumulate them */
  g_mutex_lock (&rxq->stats_lock);
  memset (&st, 0, sizeof st);
  if (getsockopt (rxq->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
    rxq->kernel_drops += st.tp_drops;
  stats->drops_ring_full = rxq->kernel_drops;
  g_mutex_unlock (&rxq->stats_lock);

  stats->packets = dq_counter_get (&rxq->packets);
  stats->bytes = dq_counter_get (&rxq->bytes);
  stats->bursts = dq_counter_get (&rxq->bursts);
  stats->truncated = dq_counter_get (&rxq->truncated);
  stats->drops_filtered = dq_counter_get (&rxq->drops_filtered);
}

/* Both programs are compiled before anything changes; the software rules go first, so
 * that a packet the new socket filter lets in finds them (or, adopted a burst later, the
 * old ones, which deliver it too when both sets do). */
static gboolean
afp_rxq_set_flows (
    gpointer priv, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, GError **error)
{
  AfpRxQueue *rxq = priv;
  guint n_filter = 0, n_fanout = 0;
  struct sock_filter *fanout = NULL;

  if (!rx_rules_check (rxq, rules, n_rules, error))
    return FALSE;
  struct sock_filter *insns = rx_filter_compile (rxq, filter, rules, n_rules, &n_filter, error);
  if (insns == NULL)
    return FALSE;
  /* the groups first: a rule whose group cannot be joined changes nothing */
  if (rxq->queue_index == 0 && !afp_rx_groups_sync (rxq, filter, rules, n_rules, error)) {
    g_free (insns);
    return FALSE;
  }
  if (rxq->in_fanout) {
    fanout = rx_fanout_compile (filter, rules, n_rules, &n_fanout, error);
    if (fanout == NULL) {
      g_free (insns);
      return FALSE;
    }
  }
  dq_rx_rules_publish (&rxq->rules, filter, rules, n_rules, rxq->queue_index);
  gboolean ok = rx_filter_install (rxq, insns, n_filter, error);
  if (ok && fanout != NULL)
    ok = rx_fanout_install (rxq, g_steal_pointer (&fanout), n_fanout, error);
  g_free (fanout);
  if (!ok) {
    /* the kernel refused a program it had taken before (memory): put back the old rules */
    GError *again = NULL;
    dq_rx_rules_publish (
        &rxq->rules, rxq->filter, rxq->all_rules, rxq->n_all_rules, rxq->queue_index);
    if (rxq->queue_index == 0)
      afp_rx_groups_sync (rxq, rxq->filter, rxq->all_rules, rxq->n_all_rules, NULL);
    insns = rx_filter_compile (rxq, rxq->filter, rxq->all_rules, rxq->n_all_rules, &n_filter, NULL);
    if (insns == NULL || !rx_filter_install (rxq, insns, n_filter, &again))
      g_warning ("afpacket:%s: the earlier socket filter could not be put back either: %s",
          rxq->port->ifname, again ? again->message : "no memory");
    g_clear_error (&again);
    return FALSE;
  }
  rx_rules_remember (rxq, filter, rules, n_rules);
  return TRUE;
}

static gsize
afp_rxq_ring_bytes (gpointer priv)
{
  AfpRxQueue *rxq = priv;
  return rxq->ring_size;
}

const DqEngineOps dq_afpacket_engine = {
  .name = "afpacket",
  .description = "any Linux network interface through AF_PACKET (TPACKET_V3 RX ring, "
                 "TPACKET_V2 TX ring, fanout for several queues)",
  .port_open = afp_port_open,
  .port_close = afp_port_close,
  .port_time = afp_port_time,
  .rxq_create = afp_rxq_create,
  .rxq_destroy = afp_rxq_destroy,
  .rxq_poll = afp_rxq_poll,
  .rxq_release = afp_rxq_release,
  .rxq_wakeup = afp_rxq_wakeup,
  .rxq_stats = afp_rxq_stats,
  .rxq_ring_bytes = afp_rxq_ring_bytes,
  .rxq_set_flows = afp_rxq_set_flows,
  .txq_create = afp_txq_create,
  .txq_destroy = afp_txq_destroy,
  .txq_send = afp_txq_send,
  .txq_max_frame = afp_txq_max_frame,
  .txq_flush = afp_txq_flush,
  .txq_wakeup = afp_txq_wakeup,
  .txq_stats = afp_txq_stats,
};
