/* afpacket engine, TX queues: one TPACKET_V2 ring per queue with PACKET_QDISC_BYPASS;
 * frames are copied into slots, flagged TP_STATUS_SEND_REQUEST and sent by one send() per
 * burst (see afpacket.c for the engine as a whole).
 *
 * Pacing (DqTxConfig.rate_bps): the socket's SO_MAX_PACING_RATE, which the kernel's fq
 * qdisc honours for every socket's packets; the queue then goes through the qdisc (no
 * PACKET_QDISC_BYPASS), and it is refused unless every TX queue of the interface has fq
 * (the root, or each child of a root mq), read by netlink. */
#include "afpacket-private.h"

#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

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

/* The kinds of the interface's qdiscs, by netlink (RTM_GETQDISC dump): the root's in
 * root (NUL-terminated, "" when none is seen), and whether every child of the root is fq.
 * FALSE with *error when netlink fails. */
static gboolean
qdisc_kinds (AfpPort *port, char *root, gsize root_size, gboolean *children_fq, GError **error)
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
  guint32 root_handle = 0;
  gboolean done = FALSE, ok = fd >= 0 && send (fd, &req, sizeof req, 0) == (ssize_t) sizeof req;

  root[0] = '\0';
  *children_fq = TRUE;
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
      const struct tcmsg *tc = NLMSG_DATA (nh);
      if (nh->nlmsg_type != RTM_NEWQDISC || tc->tcm_ifindex != port->ifindex)
        continue;
      const char *kind = "";
      int len = (int) (nh->nlmsg_len - NLMSG_LENGTH (sizeof *tc));
      for (struct rtattr *a = (struct rtattr *) ((guint8 *) tc + NLMSG_ALIGN (sizeof *tc));
           RTA_OK (a, len); a = RTA_NEXT (a, len))
        if (a->rta_type == TCA_KIND && RTA_PAYLOAD (a) > 0)
          kind = RTA_DATA (a);
      if (tc->tcm_parent == TC_H_ROOT) {
        g_strlcpy (root, kind, root_size);
        root_handle = tc->tcm_handle;
      } else if (TC_H_MAJ (tc->tcm_parent) != 0 && strcmp (kind, "fq") != 0) {
        /* children are listed after their root in a dump */
        if (root_handle != 0 && TC_H_MAJ (tc->tcm_parent) == TC_H_MAJ (root_handle))
          *children_fq = FALSE;
      }
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

/* Pacing through fq: refused naming the qdisc there is when fq is not on every TX
 * queue; else the socket's pacing rate (bytes/s) and the qdisc in the way. */
static gboolean
tx_pacing_set (AfpTxQueue *txq, guint64 rate_bps, GError **error)
{
  char root[IFNAMSIZ + 16];
  gboolean children_fq;
  if (!qdisc_kinds (txq->port, root, sizeof root, &children_fq, error))
    return FALSE;
  gboolean fq = strcmp (root, "fq") == 0 || (strcmp (root, "mq") == 0 && children_fq);
  if (!fq) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "afpacket:%s: rate %" G_GUINT64_FORMAT " bit/s needs the fq qdisc, which paces "
        "packet sockets, on the interface (tc qdisc replace dev %s root fq); it has '%s'",
        txq->port->ifname, rate_bps, txq->port->ifname, root[0] ? root : "none");
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
  if (config->scheduled) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "afpacket:%s: sending at a time (schedule) is not possible on this engine (the "
        "kernel's etf qdisc and SO_TXTIME are not driven); the mlx5 and emu engines schedule "
        "in the NIC",
        txq->port->ifname);
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
  /* paced frames go through fq; the others straight to the driver */
  if (config->rate_bps != 0 ? !tx_pacing_set (txq, config->rate_bps, error)
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

/* Asks the kernel to send every slot flagged TP_STATUS_SEND_REQUEST. */
static gboolean
tx_kick (AfpTxQueue *txq, GError **error)
{
  if (send (txq->fd, NULL, 0, MSG_DONTWAIT) >= 0)
    return TRUE;
  int err = errno;
  /* no memory for an skb, or the device queue is full: the slots stay flagged and go
   * out with the next kick */
  if (err == EAGAIN || err == ENOBUFS || err == EINTR)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "afpacket:%s: send failed: %s%s", txq->port->ifname,
      g_strerror (err),
      err == ENETDOWN ? " (the interface is down; queued frames go out once it is up)" : "");
  return FALSE;
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
  return 1;
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

int
afp_txq_send (gpointer priv, const guint8 *const *frames, const guint32 *lengths,
    const guint64 *times, guint n, GError **error)
{
  AfpTxQueue *txq = priv;
  guint queued = 0, consumed = 0;
  guint64 bytes = 0, errors = 0;
  gboolean failed = FALSE, woken = FALSE;

  for (; consumed < n && !failed && !woken; consumed++) {
    guint i = consumed;
    if (!tx_frame_acceptable (txq, frames[i], lengths[i])) {
      errors++;
      continue;
    }
    struct tpacket2_hdr *hdr = tx_slot_next (txq);
    if (hdr == NULL) {
      dq_counter_add (&txq->tx.ring_full_waits, 1);
      short events = POLLOUT;
      while (hdr == NULL) {
        if (!tx_kick (txq, error)) {
          failed = TRUE;
          break;
        }
        guint before = txq->in_flight;
        int r = tx_wait (txq, events, AFP_WAIT_SLICE_NS, error);
        if (r < 0)
          failed = TRUE;
        if (r == 0)
          woken = TRUE;
        if (r <= 0)
          break;
        hdr = tx_slot_next (txq);
        /* POLLOUT without progress: the kernel's head is free but ours is not */
        events = (hdr == NULL && txq->in_flight == before) ? 0 : POLLOUT;
      }
      if (hdr == NULL)
        break; /* frame i stays unconsumed */
    }
    memcpy ((guint8 *) hdr + AFP_TX_DATA_OFFSET, frames[i], lengths[i]);
    hdr->tp_len = lengths[i];
    /* the kernel reads the frame once it sees SEND_REQUEST: publish with release */
    __atomic_store_n (&hdr->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
    txq->head = (txq->head + 1) % txq->n_slots;
    txq->in_flight++;
    queued++;
    bytes += lengths[i];
  }

  if (queued > 0) {
    GError *kick_error = NULL;
    if (!tx_kick (txq, failed ? &kick_error : error))
      failed = TRUE;
    g_clear_error (&kick_error);
  }
  dq_tx_counters_add_burst (&txq->tx, queued, bytes, errors);
  return failed ? -1 : (int) consumed;
}

gboolean
afp_txq_flush (gpointer priv, GError **error)
{
  AfpTxQueue *txq = priv;

  for (;;) {
    tx_slots_reclaim (txq);
    if (txq->in_flight == 0)
      return TRUE;
    if (!tx_kick (txq, error))
      return FALSE;
    tx_slots_reclaim (txq);
    if (txq->in_flight == 0)
      return TRUE;
    int r = tx_wait (txq, 0, AFP_TX_FLUSH_SLICE_NS, error);
    if (r <= 0)
      return FALSE;
  }
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
