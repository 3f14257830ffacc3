/* afpacket engine, TX queues: one TPACKET_V2 ring per queue with PACKET_QDISC_BYPASS;
 * frames are copied into slots, flagged TP_STATUS_SEND_REQUEST and sent by one send() per
 * burst (see afpacket.c for the engine as a whole).
 *
 * Pacing (DqTxConfig.rate_bps): the socket's SO_MAX_PACING_RATE, which the kernel's fq
 * qdisc honours for every socket's packets; the queue then goes through the qdisc (no
 * PACKET_QDISC_BYPASS), and it is refused unless every TX queue of the interface has fq
 * (the root, or each child of a root mq), read by netlink.
 *
 * Sending at a time (DqTxConfig.scheduled): the etf qdisc ("earliest txtime first") sends
 * each frame at the time its socket gave it (SO_TXTIME; SCM_TXTIME per sendmsg()), on its
 * own clock, and it must sit on every TX queue (the root, or each child of a root mq,
 * mqprio or taprio): read by netlink at creation, refused naming the qdisc otherwise. The
 * queue goes through the qdisc. One sendmsg()'s time applies to every frame it sends, so
 * frames flagged together share a time: a frame with another time than those flagged
 * before it waits until they were sent. etf refuses a frame whose time has passed when it
 * reaches the qdisc, and drops one that expires in it, so frames sent as soon as possible
 * (time 0, late frames sent) are given now + AFP_TXTIME_LEAD_NS; etf also refuses a frame
 * before the last it sent, and sends in time order, so no frame is given a time before
 * the one given ahead of it (the order given is kept). A frame more than
 * DQ_TX_HORIZON_NS ahead is held by the sender (after the frames before it went to the
 * kernel); a frame whose time has passed is late, sent at once or dropped. etf reports a
 * frame it dropped because its time passed in the queue on the socket's error queue
 * (SOF_TXTIME_REPORT_ERRORS): counted in DqTxStats.errors. A frame etf refuses on the way
 * in stays flagged in the ring (the kernel hands such a slot back to SEND_REQUEST) and
 * goes out with the next sendmsg(), at that one's later time.
 */
#include "afpacket-private.h"

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <sys/timex.h>

/* Frames sent as soon as possible on an etf queue leave this long after the sendmsg():
 * the time the frame takes from our clock read to the qdisc, with room to spare. */
#define AFP_TXTIME_LEAD_NS G_GUINT64_CONSTANT (200000)
/* A held sender looks at the port clock at least this often: CLOCK_REALTIME may be
 * stepped while it waits. */
#define AFP_TX_HOLD_SLICE_NS G_GINT64_CONSTANT (10000000)

typedef struct {
  AfpPort *port;
  int fd;
  int wake_fd;
  guint8 *ring;
  gsize ring_size;
  gsize slot_size;
  guint n_slots;
  guint max_packet;
  guint frame_limit; /* port MTU + Ethernet header, refreshed when exceeded */

  /* sender state, one sending thread */
  guint head;      /* next slot to fill */
  guint tail;      /* oldest slot handed to the kernel */
  guint in_flight; /* slots handed to the kernel, not yet reclaimed */

  /* sending at a time (DqTxConfig.scheduled), through etf */
  gboolean txtime;
  DqTxLate late;
  clockid_t txtime_clock; /* etf's, and the socket's SO_TXTIME clock */
  gint64 txtime_offset;   /* port clock -> txtime_clock, read once per burst */
  guint64 txtime_last;    /* the latest time given to the kernel, on txtime_clock */

  DqTxCounters tx;
} AfpTxQueue;

/* TX ring geometry: a slot is the power of two >= TPACKET2_HDRLEN + max_packet_size;
 * blocks are 64 KiB (or one slot, or one page, whichever is larger) and the ring holds
 * ring_bytes / block blocks; slots never straddle blocks, so slot i is at i * slot. */
static gboolean
tx_geometry_check (
    AfpTxQueue *txq, const DqTxConfig *config, gsize *block, guint *n_blocks, GError **error)
{
  gsize page = page_size ();
  gsize ring = config->ring_bytes ? config->ring_bytes : AFP_TX_DEFAULT_RING;

  txq->max_packet =
      config->max_packet_size ? config->max_packet_size : afp_default_max_packet (txq->port);
  if (!afp_check_max_packet ("TX", txq->port, txq->max_packet, error))
    return FALSE;
  txq->slot_size = (gsize) 1 << dq_log2_ceil (TPACKET2_HDRLEN + txq->max_packet);
  *block = MAX (MAX (txq->slot_size, page), (gsize) 64 << 10);
  while (*block > txq->slot_size && *block > page && ring / *block < 2)
    *block /= 2;
  gsize min_ring = MAX (2 * txq->slot_size, 2 * page);
  if (ring < min_ring || ring > AFP_RING_MAX || ring / *block < 1) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "afpacket:%s: TX ring-size %" G_GSIZE_FORMAT " is out of range for "
        "max-packet-size %u (allowed %" G_GSIZE_FORMAT " .. %" G_GSIZE_FORMAT
        ", or 0 for %" G_GSIZE_FORMAT ")",
        txq->port->ifname, ring, txq->max_packet, min_ring, AFP_RING_MAX, AFP_TX_DEFAULT_RING);
    return FALSE;
  }
  g_assert (dq_is_pow2 (*block) && *block % txq->slot_size == 0);
  *n_blocks = (guint) (ring / *block);
  txq->n_slots = (guint) (*n_blocks * (*block / txq->slot_size));
  return TRUE;
}

static gboolean
tx_ring_map (AfpTxQueue *txq, gsize block, guint n_blocks, GError **error)
{
  struct tpacket_req req;

  memset (&req, 0, sizeof req);
  req.tp_block_size = (unsigned int) block;
  req.tp_block_nr = n_blocks;
  req.tp_frame_size = (unsigned int) txq->slot_size;
  req.tp_frame_nr = txq->n_slots;
  if (setsockopt (txq->fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof req) != 0) {
    int err = errno;
    g_set_error (error, DQ_ERROR, err == ENOMEM ? DQ_ERROR_CONFIG : DQ_ERROR_IO,
        "afpacket:%s: cannot create the TX ring (%u slots of %" G_GSIZE_FORMAT " bytes): %s",
        txq->port->ifname, txq->n_slots, txq->slot_size, g_strerror (err));
    return FALSE;
  }
  txq->ring_size = block * n_blocks;
  void *ring =
      mmap (NULL, txq->ring_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, txq->fd, 0);
  if (ring == MAP_FAILED) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO,
        "afpacket:%s: cannot map the TX ring (%" G_GSIZE_FORMAT " bytes): %s", txq->port->ifname,
        txq->ring_size, g_strerror (errno));
    txq->ring_size = 0;
    return FALSE;
  }
  txq->ring = ring;
  return TRUE;
}

void
afp_txq_destroy (gpointer priv)
{
  AfpTxQueue *txq = priv;

  if (txq == NULL)
    return;
  if (txq->ring != NULL)
    munmap (txq->ring, txq->ring_size);
  if (txq->fd >= 0)
    close (txq->fd);
  if (txq->wake_fd >= 0)
    close (txq->wake_fd);
  g_free (txq);
}

/* ---- the qdiscs in the way ---- */

void
afp_qdiscs_init (AfpQdiscs *q)
{
  memset (q, 0, sizeof *q);
  q->etf_clockid = -1;
  q->etf_clocks = TRUE;
}

/* a qdisc of kind `kind` somewhere under the root */
static void
qdiscs_note_child (AfpQdiscs *q, const char *kind)
{
  q->children++;
  for (guint k = 0; k < q->n_child_kinds; k++)
    if (strcmp (q->child_kinds[k], kind) == 0)
      return;
  if (q->n_child_kinds < AFP_QDISC_CHILD_KINDS)
    g_strlcpy (q->child_kinds[q->n_child_kinds++], kind, AFP_QDISC_KIND_SIZE);
}

/* an etf qdisc, with its TCA_OPTIONS (len bytes of attributes at opts; NULL: none) */
static void
qdiscs_note_etf (AfpQdiscs *q, const struct rtattr *opts, int len)
{
  int clockid = -1;
  for (const struct rtattr *a = opts; opts != NULL && RTA_OK (a, len); a = RTA_NEXT (a, len)) {
    struct tc_etf_qopt qopt;
    if (a->rta_type != TCA_ETF_PARMS || RTA_PAYLOAD (a) < sizeof qopt)
      continue;
    memcpy (&qopt, RTA_DATA (a), sizeof qopt);
    clockid = qopt.clockid;
    if (qopt.flags & TC_ETF_DEADLINE_MODE_ON)
      q->etf_deadline = TRUE;
  }
  if (q->etf == 0)
    q->etf_clockid = clockid;
  else if (clockid != q->etf_clockid)
    q->etf_clocks = FALSE;
  q->etf++;
}

void
afp_qdiscs_note (AfpQdiscs *q, int ifindex, const struct nlmsghdr *nh)
{
  if (nh->nlmsg_type != RTM_NEWQDISC || nh->nlmsg_len < NLMSG_LENGTH (sizeof (struct tcmsg)))
    return;
  const struct tcmsg *tc = NLMSG_DATA (nh);
  if (tc->tcm_ifindex != ifindex)
    return;
  char kind[AFP_QDISC_KIND_SIZE] = "";
  const struct rtattr *opts = NULL;
  int opts_len = 0;
  int len = (int) (nh->nlmsg_len - NLMSG_LENGTH (sizeof *tc));
  for (const struct rtattr *a =
           (const struct rtattr *) ((const guint8 *) tc + NLMSG_ALIGN (sizeof *tc));
       RTA_OK (a, len); a = RTA_NEXT (a, len)) {
    if (a->rta_type == TCA_KIND && RTA_PAYLOAD (a) > 0)
      g_strlcpy (kind, RTA_DATA (a), MIN (sizeof kind, RTA_PAYLOAD (a) + 1));
    if (a->rta_type == TCA_OPTIONS) {
      opts = RTA_DATA (a);
      opts_len = (int) RTA_PAYLOAD (a);
    }
  }
  gboolean under_root = q->root_seen && tc->tcm_parent != TC_H_ROOT &&
      TC_H_MAJ (tc->tcm_parent) != TC_H_MAJ (TC_H_INGRESS) &&
      TC_H_MAJ (tc->tcm_parent) == TC_H_MAJ (q->root_handle);
  if (tc->tcm_parent == TC_H_ROOT) {
    q->root_seen = TRUE;
    g_strlcpy (q->root, kind, sizeof q->root);
    q->root_handle = tc->tcm_handle;
  } else if (under_root) {
    qdiscs_note_child (q, kind);
  } else {
    return; /* ingress, clsact */
  }
  if (strcmp (kind, "etf") == 0)
    qdiscs_note_etf (q, opts, opts_len);
}

/* The interface's qdiscs, by netlink (RTM_GETQDISC dump). FALSE with *error when netlink
 * fails. */
static gboolean
qdiscs_read (AfpPort *port, AfpQdiscs *q, GError **error)
{
  int fd = socket (AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  struct {
    struct nlmsghdr nh;
    struct tcmsg tc;
  } req = { .nh = { .nlmsg_len = sizeof req,
                .nlmsg_type = RTM_GETQDISC,
                .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
                .nlmsg_seq = 1 },
    .tc = { .tcm_family = AF_UNSPEC } };
  gboolean done = FALSE, ok = fd >= 0 && send (fd, &req, sizeof req, 0) == (ssize_t) sizeof req;

  afp_qdiscs_init (q);
  while (ok && !done) {
    guint8 buf[16384];
    ssize_t n = recv (fd, buf, sizeof buf, 0);
    if (n <= 0) {
      ok = FALSE;
      break;
    }
    for (struct nlmsghdr *nh = (struct nlmsghdr *) buf; NLMSG_OK (nh, (guint) n);
         nh = NLMSG_NEXT (nh, n)) {
      if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
        done = TRUE;
        ok = nh->nlmsg_type == NLMSG_DONE;
        break;
      }
      afp_qdiscs_note (q, port->ifindex, nh);
    }
  }
  if (!ok)
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO,
        "afpacket:%s: cannot read the interface's qdiscs by netlink: %s", port->ifname,
        g_strerror (errno));
  if (fd >= 0)
    close (fd);
  return ok;
}

/* Whether every TX queue has a qdisc of `kind`: the root is one, or the root is one of
 * `parents` (NULL-terminated; qdiscs with a child per TX queue) and everything under it
 * is `kind`. */
static gboolean
qdiscs_everywhere (const AfpQdiscs *q, const char *kind, const char *const *parents)
{
  if (strcmp (q->root, kind) == 0)
    return TRUE;
  if (q->children == 0 || q->n_child_kinds != 1 || strcmp (q->child_kinds[0], kind) != 0)
    return FALSE;
  for (guint k = 0; parents[k] != NULL; k++)
    if (strcmp (q->root, parents[k]) == 0)
      return TRUE;
  return FALSE;
}

/* "'noqueue'", "'mq' over 'fq_codel'", "'mqprio' over 'etf', 'pfifo_fast'", "none" */
static char *
qdiscs_describe (const AfpQdiscs *q)
{
  if (q->root[0] == '\0')
    return g_strdup ("none");
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "'%s'", q->root);
  for (guint k = 0; k < q->n_child_kinds; k++)
    g_string_append_printf (s, "%s'%s'", k == 0 ? " over " : ", ", q->child_kinds[k]);
  if (q->n_child_kinds == AFP_QDISC_CHILD_KINDS)
    g_string_append (s, ", ...");
  return g_string_free (s, FALSE);
}

/* CLOCK_TAI, CLOCK_REALTIME: the clocks a send time can be converted to */
static const char *
txtime_clock_name (int clockid)
{
  switch (clockid) {
    case CLOCK_TAI: return "CLOCK_TAI";
    case CLOCK_REALTIME: return "CLOCK_REALTIME";
    default: return NULL;
  }
}

gboolean
afp_qdiscs_check_etf (const AfpQdiscs *q, const char *ifname, GError **error)
{
  static const char *const etf_parents[] = { "mq", "mqprio", "taprio", NULL };

  if (!qdiscs_everywhere (q, "etf", etf_parents)) {
    g_autofree char *has = qdiscs_describe (q);
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "afpacket:%s: schedule (sending at a time) needs the etf qdisc, which sends each "
        "frame of a packet socket at its SO_TXTIME, on every TX queue of the interface "
        "(tc qdisc replace dev %s root etf clockid CLOCK_TAI delta 200000; on a "
        "multi-queue device one etf under each class of mqprio or taprio); it has %s",
        ifname, ifname, has);
    return FALSE;
  }
  if (q->etf_deadline) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "afpacket:%s: schedule (sending at a time): the interface's etf qdisc is in "
        "deadline_mode, which sends frames before their time (allowed: etf without "
        "deadline_mode)",
        ifname);
    return FALSE;
  }
  if (!q->etf_clocks || txtime_clock_name (q->etf_clockid) == NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "afpacket:%s: schedule (sending at a time): the interface's etf qdiscs run on %s "
        "%d (allowed: all on CLOCK_TAI, or all on CLOCK_REALTIME)",
        ifname, q->etf_clocks ? "clockid" : "different clocks, the first on clockid",
        q->etf_clockid);
    return FALSE;
  }
  return TRUE;
}

/* Pacing through fq: refused naming the qdisc there is when fq is not on every TX
 * queue; else the socket's pacing rate (bytes/s) and the qdisc in the way. */
static gboolean
tx_pacing_set (AfpTxQueue *txq, guint64 rate_bps, GError **error)
{
  static const char *const fq_parents[] = { "mq", NULL };
  AfpQdiscs q;
  if (!qdiscs_read (txq->port, &q, error))
    return FALSE;
  if (!qdiscs_everywhere (&q, "fq", fq_parents)) {
    g_autofree char *has = qdiscs_describe (&q);
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "afpacket:%s: rate %" G_GUINT64_FORMAT " bit/s needs the fq qdisc, which paces "
        "packet sockets, on the interface (tc qdisc replace dev %s root fq); it has %s",
        txq->port->ifname, rate_bps, txq->port->ifname, has);
    return FALSE;
  }
  guint64 bytes = MAX (rate_bps / 8, 1);
  if (setsockopt (txq->fd, SOL_SOCKET, SO_MAX_PACING_RATE, &bytes, sizeof bytes) != 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO,
        "afpacket:%s: setsockopt (SO_MAX_PACING_RATE, %" G_GUINT64_FORMAT " bytes/s) failed: %s",
        txq->port->ifname, bytes, g_strerror (errno));
    return FALSE;
  }
  return TRUE;
}

/* ---- sending at a time: send times on etf's clock ---- */

gsize
afp_txtime_control (AfpTxtimeControl *control, guint64 txtime)
{
  memset (control, 0, sizeof *control);
  control->header.cmsg_level = SOL_SOCKET;
  control->header.cmsg_type = SCM_TXTIME;
  control->header.cmsg_len = CMSG_LEN (sizeof txtime);
  memcpy (CMSG_DATA (&control->header), &txtime, sizeof txtime);
  return sizeof control->bytes;
}

gboolean
afp_clock_offset (clockid_t clock, gint64 *offset_ns)
{
  if (clock == CLOCK_REALTIME) {
    *offset_ns = 0;
    return TRUE;
  }
  if (clock != CLOCK_TAI)
    return FALSE;
  /* CLOCK_TAI is CLOCK_REALTIME + the timekeeper's TAI offset, whole seconds (0 until
   * something, ptp4l or chrony, sets it) */
  struct timex tx;
  memset (&tx, 0, sizeof tx);
  if (adjtimex (&tx) < 0)
    return FALSE;
  *offset_ns = (gint64) tx.tai * G_GINT64_CONSTANT (1000000000);
  return TRUE;
}

guint64
afp_port_time_on_clock (guint64 port_ns, gint64 offset_ns)
{
  return port_ns + (guint64) offset_ns;
}

/* the port clock (afp_port_time) */
static guint64
tx_port_now (void)
{
  return dq_clock_ns (CLOCK_REALTIME);
}

/* The time, on etf's clock, for frames of port time t (0: as soon as possible): t, but
 * never earlier than now + AFP_TXTIME_LEAD_NS, nor than the time given before. */
static guint64
tx_txtime_for (AfpTxQueue *txq, guint64 t)
{
  guint64 soon = afp_port_time_on_clock (tx_port_now (), txq->txtime_offset) + AFP_TXTIME_LEAD_NS;
  guint64 txtime = t != 0 ? afp_port_time_on_clock (t, txq->txtime_offset) : 0;
  txtime = MAX (MAX (txtime, soon), txq->txtime_last);
  txq->txtime_last = txtime;
  return txtime;
}

/* etf on every TX queue, and the socket's SO_TXTIME on its clock */
static gboolean
tx_txtime_set (AfpTxQueue *txq, const DqTxConfig *config, GError **error)
{
  AfpQdiscs q;
  if (!qdiscs_read (txq->port, &q, error) || !afp_qdiscs_check_etf (&q, txq->port->ifname, error))
    return FALSE;
  txq->txtime_clock = q.etf_clockid;
  if (!afp_clock_offset (txq->txtime_clock, &txq->txtime_offset)) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO,
        "afpacket:%s: cannot read the offset of %s from CLOCK_REALTIME (adjtimex): %s",
        txq->port->ifname, txtime_clock_name (txq->txtime_clock), g_strerror (errno));
    return FALSE;
  }
  struct sock_txtime st = { .clockid = txq->txtime_clock, .flags = SOF_TXTIME_REPORT_ERRORS };
  if (setsockopt (txq->fd, SOL_SOCKET, SO_TXTIME, &st, sizeof st) != 0) {
    int err = errno;
    g_set_error (error, DQ_ERROR, err == EPERM ? DQ_ERROR_PERMISSION : DQ_ERROR_IO,
        "afpacket:%s: setsockopt (SO_TXTIME, %s) failed: %s%s", txq->port->ifname,
        txtime_clock_name (txq->txtime_clock), g_strerror (err),
        err == EPERM ? " (sending at a time on this clock needs CAP_NET_ADMIN)" : "");
    return FALSE;
  }
  txq->txtime = TRUE;
  txq->late = config->late;
  return TRUE;
}

gpointer
afp_txq_create (gpointer port_priv, const DqTxConfig *config, GError **error)
{
  AfpTxQueue *txq = g_new0 (AfpTxQueue, 1);
  gsize block;
  guint n_blocks;

  txq->port = port_priv;
  txq->fd = -1;
  txq->wake_fd = -1;
  txq->frame_limit = port_frame_limit (txq->port->mtu);
  if (config->scheduled && config->rate_bps != 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "afpacket:%s: rate %" G_GUINT64_FORMAT " bit/s and schedule (sending at a time) "
        "cannot be combined on this engine: pacing needs the fq qdisc and sending at a time "
        "the etf qdisc, and a TX queue has one qdisc (allowed with schedule: rate 0, and "
        "times that space the frames)",
        txq->port->ifname, config->rate_bps);
    goto fail;
  }
  if (!tx_geometry_check (txq, config, &block, &n_blocks, error))
    goto fail;
  txq->wake_fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (txq->wake_fd < 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "afpacket:%s: eventfd() failed: %s",
        txq->port->ifname, g_strerror (errno));
    goto fail;
  }
  txq->fd = afp_packet_socket_open (txq->port, "TX", error);
  if (txq->fd < 0)
    goto fail;
  /* PACKET_LOSS: a frame the kernel refuses is skipped (slot back to AVAILABLE) instead
   * of stopping the ring at TP_STATUS_WRONG_FORMAT with no way to step over it. We
   * check frames before they enter the ring, so this should never trigger. */
  if (!afp_packet_set_int (
          txq->fd, PACKET_VERSION, TPACKET_V2, txq->port, "PACKET_VERSION (TPACKET_V2)", error) ||
      !afp_packet_set_int (txq->fd, PACKET_LOSS, 1, txq->port, "PACKET_LOSS", error))
    goto fail;
  /* paced frames go through fq, timed ones through etf; the others straight to the
   * driver */
  if (config->scheduled           ? !tx_txtime_set (txq, config, error)
          : config->rate_bps != 0 ? !tx_pacing_set (txq, config->rate_bps, error)
                                  : !afp_packet_set_int (txq->fd, PACKET_QDISC_BYPASS, 1, txq->port,
                                        "PACKET_QDISC_BYPASS", error))
    goto fail;
  /* Frames in flight are charged to the send buffer; a send buffer smaller than the ring
   * would stop the kernel half way through it. */
  int sndbuf = (int) MIN (2 * (gsize) block * n_blocks, (gsize) G_MAXINT / 2);
  if (setsockopt (txq->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf) != 0)
    (void) setsockopt (txq->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  if (!tx_ring_map (txq, block, n_blocks, error))
    goto fail;
  /* protocol 0: the socket only sends, it never receives */
  if (!afp_packet_bind (txq->fd, txq->port, 0, error))
    goto fail;
  return txq;

fail:
  afp_txq_destroy (txq);
  return NULL;
}

static struct tpacket2_hdr *
tx_slot (AfpTxQueue *txq, guint index)
{
  return (struct tpacket2_hdr *) (txq->ring + (gsize) index * txq->slot_size);
}

/* Takes back, in ring order, the slots the kernel is done with. */
static void
tx_slots_reclaim (AfpTxQueue *txq)
{
  guint64 errors = 0;

  while (txq->in_flight > 0) {
    struct tpacket2_hdr *hdr = tx_slot (txq, txq->tail);
    /* the kernel sets AVAILABLE (maybe with timestamp bits) once the frame left */
    guint32 status = __atomic_load_n (&hdr->tp_status, __ATOMIC_ACQUIRE);
    if (status & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING))
      break;
    if (status & TP_STATUS_WRONG_FORMAT) {
      errors++;
      __atomic_store_n (&hdr->tp_status, TP_STATUS_AVAILABLE, __ATOMIC_RELAXED);
    }
    txq->tail = (txq->tail + 1) % txq->n_slots;
    txq->in_flight--;
  }
  if (errors > 0)
    dq_counter_add (&txq->tx.errors, errors);
}

static struct tpacket2_hdr *
tx_slot_next (AfpTxQueue *txq)
{
  if (txq->in_flight == txq->n_slots) {
    tx_slots_reclaim (txq);
    if (txq->in_flight == txq->n_slots)
      return NULL;
  }
  return tx_slot (txq, txq->head);
}

/* Asks the kernel to send every slot flagged TP_STATUS_SEND_REQUEST; on an etf queue at
 * the time for port time t (tx_txtime_for; 0: as soon as possible). */
static gboolean
tx_kick (AfpTxQueue *txq, guint64 t, GError **error)
{
  AfpTxtimeControl control;
  struct msghdr msg = { 0 };
  if (txq->txtime) {
    msg.msg_control = &control;
    msg.msg_controllen = afp_txtime_control (&control, tx_txtime_for (txq, t));
  }
  if (sendmsg (txq->fd, &msg, MSG_DONTWAIT) >= 0)
    return TRUE;
  int err = errno;
  /* no memory for an skb, the device queue is full, or the qdisc refused the frame: the
   * slots stay flagged and go out with the next kick */
  if (err == EAGAIN || err == ENOBUFS || err == EINTR)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "afpacket:%s: send failed: %s%s", txq->port->ifname,
      g_strerror (err),
      err == ENETDOWN ? " (the interface is down; queued frames go out once it is up)" : "");
  return FALSE;
}

/* Takes the socket's error queue: etf reports there each frame it refused (time already
 * passed on the way in: the slot stays flagged, the frame goes out with a later kick) or
 * dropped (time passed in the qdisc: lost, counted in errors). */
static void
tx_txtime_errors_take (AfpTxQueue *txq)
{
  guint64 lost = 0;

  for (;;) {
    union {
      struct cmsghdr header;
      guint8 bytes[CMSG_SPACE (sizeof (struct sock_extended_err) + 64)];
    } control;
    struct msghdr msg = { .msg_control = &control, .msg_controllen = sizeof control };
    if (recvmsg (txq->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
      break;
    for (struct cmsghdr *c = CMSG_FIRSTHDR (&msg); c != NULL; c = CMSG_NXTHDR (&msg, c)) {
      struct sock_extended_err ee;
      if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_TX_TIMESTAMP ||
          c->cmsg_len < CMSG_LEN (sizeof ee))
        continue;
      memcpy (&ee, CMSG_DATA (c), sizeof ee);
      lost += ee.ee_origin == SO_EE_ORIGIN_TXTIME && ee.ee_code == SO_EE_CODE_TXTIME_MISSED;
    }
  }
  if (lost > 0)
    dq_counter_add (&txq->tx.errors, lost);
}

/* Waits for the kernel to finish a slot. Returns 1 to try again, 0 when woken, -1 on
 * error. `slice_ns` bounds the wait: the kernel's POLLOUT looks at its own head, which
 * is not always the slot we wait for. */
static int
tx_wait (AfpTxQueue *txq, short events, gint64 slice_ns, GError **error)
{
  struct pollfd pfd[2] = {
    { .fd = txq->fd, .events = events },
    { .fd = txq->wake_fd, .events = POLLIN },
  };
  struct timespec ts = ns_to_timespec (slice_ns);

  if (ppoll (pfd, 2, &ts, NULL) < 0 && errno != EINTR) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "afpacket:%s: poll() failed: %s", txq->port->ifname,
        g_strerror (errno));
    return -1;
  }
  if (pfd[1].revents & POLLIN) {
    dq_eventfd_drain (txq->wake_fd);
    return 0;
  }
  /* POLLERR while the error queue holds etf's reports: take them, or the next poll
   * returns at once */
  if ((pfd[0].revents & POLLERR) && txq->txtime)
    tx_txtime_errors_take (txq);
  return 1;
}

/* ---- send scheduling (daqiri-engine.h: dq_tx_verdict) ---- */

/* Holds the sender until port time t is within the horizon: FALSE when woken first. */
static gboolean
tx_hold (AfpTxQueue *txq, guint64 t)
{
  dq_counter_add (&txq->tx.held, 1);
  for (;;) {
    guint64 now = tx_port_now ();
    if (t <= now + DQ_TX_HORIZON_NS)
      return TRUE;
    struct pollfd pfd = { .fd = txq->wake_fd, .events = POLLIN };
    struct timespec ts =
        ns_to_timespec ((gint64) MIN (t - DQ_TX_HORIZON_NS - now, (guint64) AFP_TX_HOLD_SLICE_NS));
    if (ppoll (&pfd, 1, &ts, NULL) > 0 && (pfd.revents & POLLIN)) {
      dq_eventfd_drain (txq->wake_fd);
      return FALSE;
    }
  }
}

static guint
tx_frame_limit (AfpTxQueue *txq, const guint8 *frame)
{
  if (frame[12] == 0x81 && frame[13] == 0x00)
    return txq->frame_limit + AFP_VLAN_HLEN;
  return txq->frame_limit;
}

/* Frames the kernel would refuse never enter the ring: shorter than an Ethernet header,
 * longer than max_packet_size, or longer than the interface takes. */
static gboolean
tx_frame_acceptable (AfpTxQueue *txq, const guint8 *frame, guint32 len)
{
  guint mtu;

  if (len < ETH_HLEN || len > txq->max_packet)
    return FALSE;
  if (len <= tx_frame_limit (txq, frame))
    return TRUE;
  /* maybe the MTU grew since we last looked */
  if (!afp_port_read_mtu (txq->port->ifname, &mtu))
    return FALSE;
  txq->frame_limit = port_frame_limit (mtu);
  return len <= tx_frame_limit (txq, frame);
}

/* A free slot for the next frame, waiting while the ring is full (the *flagged frames,
 * of port time t, are sent first). NULL when woken (*woken) or on error (*failed). */
static struct tpacket2_hdr *
tx_slot_wait (
    AfpTxQueue *txq, guint64 t, guint *flagged, gboolean *woken, gboolean *failed, GError **error)
{
  struct tpacket2_hdr *hdr = tx_slot_next (txq);
  if (hdr != NULL)
    return hdr;
  dq_counter_add (&txq->tx.ring_full_waits, 1);
  short events = POLLOUT;
  while (hdr == NULL) {
    if (!tx_kick (txq, t, error)) {
      *failed = TRUE;
      return NULL;
    }
    *flagged = 0;
    guint before = txq->in_flight;
    int r = tx_wait (txq, events, AFP_WAIT_SLICE_NS, error);
    *failed = r < 0;
    *woken = r == 0;
    if (r <= 0)
      return NULL;
    hdr = tx_slot_next (txq);
    /* POLLOUT without progress: the kernel's head is free but ours is not */
    events = (hdr == NULL && txq->in_flight == before) ? 0 : POLLOUT;
  }
  return hdr;
}

int
afp_txq_send (gpointer priv, const guint8 *const *frames, const guint32 *lengths,
    const guint64 *times, guint n, GError **error)
{
  AfpTxQueue *txq = priv;
  guint queued = 0, consumed = 0;
  guint64 bytes = 0, errors = 0, scheduled = 0, late = 0, dropped = 0;
  gboolean failed = FALSE, woken = FALSE;
  /* frames flagged and not yet sent, all of one port time (0: as soon as possible) */
  guint flagged = 0;
  guint64 flagged_time = 0;

  if (txq->txtime)
    (void) afp_clock_offset (txq->txtime_clock, &txq->txtime_offset);
  for (; consumed < n && !failed && !woken; consumed++) {
    guint i = consumed;
    if (!tx_frame_acceptable (txq, frames[i], lengths[i])) {
      errors++;
      continue;
    }
    guint64 t = times != NULL ? times[i] : 0;
    gboolean is_late = FALSE;
    if (t != 0) {
      DqTxVerdict v = dq_tx_verdict (t, tx_port_now (), txq->late, &is_late);
      if (v == DQ_TX_HOLD) {
        /* the frames before it leave while it waits */
        if (flagged > 0 && !tx_kick (txq, flagged_time, error)) {
          failed = TRUE;
          break;
        }
        flagged = 0;
        if (!tx_hold (txq, t)) {
          woken = TRUE;
          break;
        }
        v = dq_tx_verdict (t, tx_port_now (), txq->late, &is_late);
      }
      if (v == DQ_TX_DROP) {
        late++;
        dropped++;
        continue;
      }
    }
    /* late frames that are sent go as soon as possible */
    guint64 at = is_late ? 0 : t;
    /* one sendmsg() gives its frames one time: those flagged with another go first */
    if (flagged > 0 && at != flagged_time) {
      if (!tx_kick (txq, flagged_time, error)) {
        failed = TRUE;
        break;
      }
      flagged = 0;
    }
    struct tpacket2_hdr *hdr = tx_slot_wait (txq, at, &flagged, &woken, &failed, error);
    if (hdr == NULL)
      break; /* frame i stays unconsumed */
    memcpy ((guint8 *) hdr + AFP_TX_DATA_OFFSET, frames[i], lengths[i]);
    hdr->tp_len = lengths[i];
    /* the kernel reads the frame once it sees SEND_REQUEST: publish with release */
    __atomic_store_n (&hdr->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
    txq->head = (txq->head + 1) % txq->n_slots;
    txq->in_flight++;
    flagged++;
    flagged_time = at;
    queued++;
    bytes += lengths[i];
    scheduled += t != 0;
    late += is_late;
  }

  if (queued > 0) {
    GError *kick_error = NULL;
    if (!tx_kick (txq, flagged > 0 ? flagged_time : 0, failed ? &kick_error : error))
      failed = TRUE;
    g_clear_error (&kick_error);
  }
  if (txq->txtime)
    tx_txtime_errors_take (txq);
  dq_tx_counters_add_burst (&txq->tx, queued, bytes, errors);
  if (scheduled > 0)
    dq_counter_add (&txq->tx.scheduled, scheduled);
  if (late > 0)
    dq_counter_add (&txq->tx.late, late);
  if (dropped > 0)
    dq_counter_add (&txq->tx.late_dropped, dropped);
  return failed ? -1 : (int) consumed;
}

gboolean
afp_txq_flush (gpointer priv, GError **error)
{
  AfpTxQueue *txq = priv;

  for (;;) {
    tx_slots_reclaim (txq);
    if (txq->in_flight == 0)
      break;
    if (!tx_kick (txq, 0, error))
      return FALSE;
    tx_slots_reclaim (txq);
    if (txq->in_flight == 0)
      break;
    int r = tx_wait (txq, 0, AFP_TX_FLUSH_SLICE_NS, error);
    if (r <= 0)
      return FALSE;
  }
  /* etf reports a frame it dropped before it lets go of the frame's slot */
  if (txq->txtime)
    tx_txtime_errors_take (txq);
  return TRUE;
}

void
afp_txq_wakeup (gpointer priv)
{
  AfpTxQueue *txq = priv;
  dq_eventfd_signal (txq->wake_fd);
}

guint
afp_txq_max_frame (gpointer priv)
{
  AfpTxQueue *txq = priv;
  guint mtu;
  /* the MTU may have changed since the last frame */
  if (afp_port_read_mtu (txq->port->ifname, &mtu))
    txq->frame_limit = port_frame_limit (mtu);
  return MIN (txq->max_packet, txq->frame_limit + AFP_VLAN_HLEN);
}

void
afp_txq_stats (gpointer priv, DqTxStats *stats)
{
  AfpTxQueue *txq = priv;
  dq_tx_counters_read (&txq->tx, stats);
}
