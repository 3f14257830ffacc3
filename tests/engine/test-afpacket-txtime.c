/* afpacket engine, sending at a time (DqTxConfig.scheduled): through SO_TXTIME and the
 * kernel's etf qdisc.
 *
 * Without a network namespace (not root): the control message that carries a frame's
 * time, byte for byte; the conversion of the port clock (CLOCK_REALTIME) to CLOCK_TAI
 * against the kernel's clocks; the reading of the qdiscs (netlink RTM_NEWQDISC messages
 * built here, as the kernel dumps them) and what is accepted or refused from them.
 *
 * In a private namespace with a veth pair (root): the kernel takes the control message as
 * SCM_TXTIME; a TX queue is refused on the veth's qdisc (noqueue, then pfifo), naming it
 * and what is needed. Where `tc` can put etf on the veth (not every kernel has it), frames
 * are sent at times and their receive timestamps on the other end are checked against
 * those times, with the held, late and dropped counts; elsewhere that case is skipped,
 * saying why.
 */
#include "afpacket-private.h"
#include "dq-netns.h"
#include "dq-test-port.h"

#include <linux/net_tstamp.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#define TX_IF "dqtt0"
#define RX_IF "dqtr0"
#define TX_DEVICE "afpacket:dqtt0"
#define RX_DEVICE "afpacket:dqtr0"
#define NS_PER_S G_GINT64_CONSTANT (1000000000)
#define MS G_GUINT64_CONSTANT (1000000)
#define US G_GUINT64_CONSTANT (1000)
#define ETHERTYPE_TEST 0x88b5
#define FRAME_LEN 100
/* the etf qdisc put on the veth: it hands a frame to the driver this long before its
 * time, and a veth delivers it at once */
#define ETF_DELTA_NS (200 * US)

static DqNetns *netns;

/* TRUE where the veth pair is set up; otherwise the test is skipped. */
static gboolean
have_netns (void)
{
  if (netns == NULL)
    g_test_skip ("needs root: a veth pair in a network namespace");
  return netns != NULL;
}

/* ---------------------------------------------------------------------------------- */
/* the control message */

static void
test_control_bytes (void)
{
  const guint64 t = G_GUINT64_CONSTANT (0x0123456789abcdef);
  AfpTxtimeControl control;

  /* what was there before does not leak into the message */
  memset (&control, 0xa5, sizeof control);
  gsize len = afp_txtime_control (&control, t);
  g_assert_cmpuint (len, ==, CMSG_SPACE (sizeof (guint64)));

  /* as the kernel walks it: one message, SOL_SOCKET / SCM_TXTIME, 8 bytes of time */
  struct msghdr msg = { .msg_control = &control, .msg_controllen = len };
  struct cmsghdr *c = CMSG_FIRSTHDR (&msg);
  g_assert_nonnull (c);
  g_assert_cmpint (c->cmsg_level, ==, SOL_SOCKET);
  g_assert_cmpint (c->cmsg_type, ==, SCM_TXTIME);
  g_assert_cmpuint (c->cmsg_len, ==, CMSG_LEN (sizeof (guint64)));
  guint64 read_back;
  memcpy (&read_back, CMSG_DATA (c), sizeof read_back);
  g_assert_cmpuint (read_back, ==, t);
  g_assert_null (CMSG_NXTHDR (&msg, c));

#if G_BYTE_ORDER == G_LITTLE_ENDIAN && GLIB_SIZEOF_SIZE_T == 8 && SOL_SOCKET == 1 && \
    SCM_TXTIME == 61
  /* byte for byte on a little-endian LP64 machine with the generic socket numbers
   * (x86-64, arm64): cmsg_len 24 (size_t), cmsg_level 1, cmsg_type 61, the time */
  static const guint8 want[24] = { 24, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 61, 0, 0, 0, 0xef, 0xcd,
    0xab, 0x89, 0x67, 0x45, 0x23, 0x01 };
  g_assert_cmpuint (len, ==, sizeof want);
  g_assert_cmpmem (control.bytes, len, want, sizeof want);
#endif
}

/* ---------------------------------------------------------------------------------- */
/* the port clock on CLOCK_TAI */

static void
test_tai_offset (void)
{
  gint64 offset = -1;

  g_assert_true (afp_clock_offset (CLOCK_REALTIME, &offset));
  g_assert_cmpint (offset, ==, 0);
  g_assert_false (afp_clock_offset (CLOCK_MONOTONIC, &offset));

  g_assert_true (afp_clock_offset (CLOCK_TAI, &offset));
  /* the kernel's TAI offset is whole seconds: 0 until set, 37 s since 2017 */
  g_assert_cmpint (offset % NS_PER_S, ==, 0);
  g_assert_cmpint (offset, >=, 0);
  g_assert_cmpint (offset, <=, 64 * NS_PER_S);
  g_assert_cmpuint (
      afp_port_time_on_clock (1000, 37 * NS_PER_S), ==, G_GUINT64_CONSTANT (37000001000));

  /* CLOCK_TAI read between two reads of CLOCK_REALTIME lies between their conversions,
   * to the ns (both clocks are the same timekeeper's); tries again when the reads were
   * far apart (the thread was preempted) */
  gboolean tight = FALSE;
  for (int k = 0; k < 100 && !tight; k++) {
    guint64 before = dq_clock_ns (CLOCK_REALTIME);
    guint64 tai = dq_clock_ns (CLOCK_TAI);
    guint64 after = dq_clock_ns (CLOCK_REALTIME);
    if (after - before > 100 * US)
      continue;
    tight = TRUE;
    g_assert_cmpuint (afp_port_time_on_clock (before, offset), <=, tai);
    g_assert_cmpuint (afp_port_time_on_clock (after, offset), >=, tai);
  }
  g_assert_true (tight);
}

/* ---------------------------------------------------------------------------------- */
/* the qdiscs: RTM_NEWQDISC messages as a dump gives them */

#define IFINDEX 7
#define ETF_NONE NULL

/* One qdisc of interface `ifindex` into q: its parent, handle and kind, and for an etf
 * qdisc its options (TCA_OPTIONS holding TCA_ETF_PARMS) */
static void
note (AfpQdiscs *q, int ifindex, guint32 parent, guint32 handle, const char *kind,
    const struct tc_etf_qopt *etf)
{
  union {
    struct nlmsghdr align;
    guint8 bytes[512];
  } m;
  memset (&m, 0, sizeof m);
  struct nlmsghdr *nh = &m.align;
  nh->nlmsg_type = RTM_NEWQDISC;
  nh->nlmsg_flags = NLM_F_MULTI;
  nh->nlmsg_len = NLMSG_LENGTH (sizeof (struct tcmsg));
  struct tcmsg *tc = NLMSG_DATA (nh);
  tc->tcm_family = AF_UNSPEC;
  tc->tcm_ifindex = ifindex;
  tc->tcm_parent = parent;
  tc->tcm_handle = handle;

  struct rtattr *a = (struct rtattr *) (m.bytes + NLMSG_ALIGN (nh->nlmsg_len));
  a->rta_type = TCA_KIND;
  a->rta_len = (unsigned short) RTA_LENGTH (strlen (kind) + 1);
  memcpy (RTA_DATA (a), kind, strlen (kind) + 1);
  nh->nlmsg_len = NLMSG_ALIGN (nh->nlmsg_len) + RTA_ALIGN (a->rta_len);
  if (etf != NULL) {
    struct rtattr *opts = (struct rtattr *) (m.bytes + nh->nlmsg_len);
    opts->rta_type = TCA_OPTIONS;
    struct rtattr *parms = RTA_DATA (opts);
    parms->rta_type = TCA_ETF_PARMS;
    parms->rta_len = (unsigned short) RTA_LENGTH (sizeof *etf);
    memcpy (RTA_DATA (parms), etf, sizeof *etf);
    opts->rta_len = (unsigned short) RTA_LENGTH (RTA_ALIGN (parms->rta_len));
    nh->nlmsg_len += RTA_ALIGN (opts->rta_len);
  }
  g_assert_cmpuint (nh->nlmsg_len, <=, sizeof m);
  afp_qdiscs_note (q, IFINDEX, nh);
}

static const struct tc_etf_qopt etf_tai = { .delta = 200000, .clockid = CLOCK_TAI };
static const struct tc_etf_qopt etf_realtime = { .delta = 200000, .clockid = CLOCK_REALTIME };
static const struct tc_etf_qopt etf_monotonic = { .delta = 200000, .clockid = CLOCK_MONOTONIC };
static const struct tc_etf_qopt etf_deadline = {
  .delta = 200000, .clockid = CLOCK_TAI, .flags = TC_ETF_DEADLINE_MODE_ON
};

/* mqprio 8001: over n children 8001:1.., etf on TAI but child `other` (-1: none) of kind
 * other_kind */
static void
note_mqprio (AfpQdiscs *q, const char *root, guint n, int other, const char *other_kind)
{
  afp_qdiscs_init (q);
  note (q, IFINDEX, TC_H_ROOT, 0x80010000, root, ETF_NONE);
  for (guint k = 0; k < n; k++) {
    gboolean etf = (int) k != other;
    note (q, IFINDEX, 0x80010000 | (k + 1), 0x80020000 + (k << 16), etf ? "etf" : other_kind,
        etf ? &etf_tai : ETF_NONE);
  }
}

static void
expect_refused (const AfpQdiscs *q, const char *const *parts)
{
  GError *error = NULL;
  g_assert_false (afp_qdiscs_check_etf (q, "eth9", &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG, parts);
}

static void
expect_accepted (const AfpQdiscs *q, int clockid)
{
  GError *error = NULL;
  g_assert_true (afp_qdiscs_check_etf (q, "eth9", &error));
  g_assert_no_error (error);
  g_assert_cmpint (q->etf_clockid, ==, clockid);
}

static void
test_qdiscs (void)
{
  AfpQdiscs q;

  /* a veth's: noqueue at the root, nothing under it */
  afp_qdiscs_init (&q);
  note (&q, IFINDEX, TC_H_ROOT, 0, "noqueue", ETF_NONE);
  g_assert_cmpstr (q.root, ==, "noqueue");
  g_assert_cmpuint (q.children, ==, 0);
  g_assert_cmpuint (q.etf, ==, 0);
  expect_refused (&q,
      (const char *[]){ "afpacket:eth9", "schedule", "needs the etf qdisc", "every TX queue",
          "tc qdisc replace dev eth9 root etf clockid CLOCK_TAI delta 200000", "mqprio or taprio",
          "it has 'noqueue'", NULL });

  /* no qdisc listed at all */
  afp_qdiscs_init (&q);
  expect_refused (&q, (const char *[]){ "needs the etf qdisc", "it has none", NULL });

  /* etf at the root of a single-queue device, on CLOCK_TAI or CLOCK_REALTIME; another
   * interface's qdiscs and the ingress side do not count */
  afp_qdiscs_init (&q);
  note (&q, IFINDEX + 1, TC_H_ROOT, 0, "pfifo_fast", ETF_NONE);
  note (&q, IFINDEX, TC_H_ROOT, 0x10000, "etf", &etf_tai);
  note (&q, IFINDEX, TC_H_INGRESS, 0xffff0000, "ingress", ETF_NONE);
  note (&q, IFINDEX + 1, 0x00000001, 0x20000, "fq_codel", ETF_NONE);
  g_assert_cmpstr (q.root, ==, "etf");
  g_assert_cmpuint (q.children, ==, 0);
  g_assert_cmpuint (q.etf, ==, 1);
  expect_accepted (&q, CLOCK_TAI);
  afp_qdiscs_init (&q);
  note (&q, IFINDEX, TC_H_ROOT, 0x10000, "etf", &etf_realtime);
  expect_accepted (&q, CLOCK_REALTIME);

  /* etf under every class of mqprio, taprio or mq */
  note_mqprio (&q, "mqprio", 4, -1, NULL);
  g_assert_cmpuint (q.children, ==, 4);
  g_assert_cmpuint (q.etf, ==, 4);
  expect_accepted (&q, CLOCK_TAI);
  note_mqprio (&q, "taprio", 2, -1, NULL);
  expect_accepted (&q, CLOCK_TAI);
  note_mqprio (&q, "mq", 8, -1, NULL);
  expect_accepted (&q, CLOCK_TAI);

  /* one TX queue without etf: refused, naming what is there */
  note_mqprio (&q, "mqprio", 4, 2, "pfifo_fast");
  g_assert_cmpuint (q.children, ==, 4);
  g_assert_cmpuint (q.etf, ==, 3);
  expect_refused (&q, (const char *[]){ "it has 'mqprio' over 'etf', 'pfifo_fast'", NULL });
  /* etf under a root that does not give each TX queue its own child */
  note_mqprio (&q, "htb", 2, -1, NULL);
  expect_refused (&q, (const char *[]){ "it has 'htb' over 'etf'", NULL });
  /* a multi-queue NIC's default: mq 0: over fq_codel :1, :2 (handle 0, parents of major 0) */
  afp_qdiscs_init (&q);
  note (&q, IFINDEX, TC_H_ROOT, 0, "mq", ETF_NONE);
  note (&q, IFINDEX, 0x00000001, 0, "fq_codel", ETF_NONE);
  note (&q, IFINDEX, 0x00000002, 0, "fq_codel", ETF_NONE);
  g_assert_cmpuint (q.children, ==, 2);
  expect_refused (&q, (const char *[]){ "it has 'mq' over 'fq_codel'", NULL });

  /* deadline mode sends frames before their time */
  afp_qdiscs_init (&q);
  note (&q, IFINDEX, TC_H_ROOT, 0x10000, "etf", &etf_deadline);
  g_assert_true (q.etf_deadline);
  expect_refused (&q,
      (const char *[]){
          "afpacket:eth9", "deadline_mode", "allowed: etf without deadline_mode", NULL });

  /* clocks: one of CLOCK_TAI and CLOCK_REALTIME, the same on every queue */
  afp_qdiscs_init (&q);
  note (&q, IFINDEX, TC_H_ROOT, 0x10000, "etf", &etf_monotonic);
  expect_refused (&q,
      (const char *[]){ "clockid 1", "allowed: all on CLOCK_TAI, or all on CLOCK_REALTIME", NULL });
  afp_qdiscs_init (&q);
  note (&q, IFINDEX, TC_H_ROOT, 0x80010000, "mqprio", ETF_NONE);
  note (&q, IFINDEX, 0x80010001, 0x80020000, "etf", &etf_tai);
  note (&q, IFINDEX, 0x80010002, 0x80030000, "etf", &etf_realtime);
  g_assert_false (q.etf_clocks);
  expect_refused (&q, (const char *[]){ "different clocks", "clockid 11", NULL });
}

/* ---------------------------------------------------------------------------------- */
/* on a veth pair (root) */

/* Runs `tc ARGS...` (args NULL-terminated) in the test's namespace, which the process is
 * in; FALSE with what tc said in *why (freed by the caller) when it fails */
static gboolean
tc (const char *const *args, char **why)
{
  GPtrArray *argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) "tc");
  for (guint k = 0; args[k] != NULL; k++)
    g_ptr_array_add (argv, (gpointer) args[k]);
  g_ptr_array_add (argv, NULL);

  char *err = NULL;
  int status = 0;
  GError *error = NULL;
  gboolean ok = g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                    NULL, &err, &status, &error) &&
      g_spawn_check_wait_status (status, &error);
  if (!ok)
    *why = g_strdup_printf ("%s (%s)", err != NULL ? g_strstrip (err) : "", error->message);
  g_clear_error (&error);
  g_free (err);
  g_ptr_array_free (argv, TRUE);
  return ok;
}

static void
tc_or_fail (const char *const *args)
{
  char *why = NULL;
  if (!tc (args, &why)) {
    char *cmd = g_strjoinv (" ", (char **) args);
    g_error ("tc %s failed: %s", cmd, why);
  }
}

static void
frame_build (guint8 *f, guint32 seq)
{
  memset (f, 0, FRAME_LEN);
  memset (f, 0xff, 6);
  static const guint8 src[6] = { 0x02, 0x00, 0x00, 0x00, 0x0a, 0x01 };
  memcpy (f + 6, src, 6);
  f[12] = ETHERTYPE_TEST >> 8;
  f[13] = ETHERTYPE_TEST & 0xff;
  f[14] = (guint8) (seq >> 24);
  f[15] = (guint8) (seq >> 16);
  f[16] = (guint8) (seq >> 8);
  f[17] = (guint8) seq;
  for (guint i = 18; i < FRAME_LEN; i++)
    f[i] = (guint8) (seq * 7u + i);
}

static int
packet_socket_on (const char *ifname, guint16 protocol)
{
  int fd = socket (AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons (protocol));
  g_assert_cmpint (fd, >=, 0);
  struct sockaddr_ll sll = { .sll_family = AF_PACKET,
    .sll_protocol = htons (protocol),
    .sll_ifindex = (int) if_nametoindex (ifname) };
  g_assert_cmpint (sll.sll_ifindex, >, 0);
  g_assert_cmpint (bind (fd, (struct sockaddr *) &sll, sizeof sll), ==, 0);
  return fd;
}

/* The kernel reads afp_txtime_control's message as SCM_TXTIME: refused on a socket
 * without SO_TXTIME (only that message needs it), taken with it (the frame arrives: the
 * veth's noqueue ignores the time), refused when its length is not 8 bytes. */
static void
test_control_kernel (void)
{
  if (!have_netns ())
    return;
  int tx = packet_socket_on (TX_IF, 0);
  int rx = packet_socket_on (RX_IF, ETHERTYPE_TEST);
  guint8 frame[FRAME_LEN], got[FRAME_LEN + 16];
  frame_build (frame, 77);
  struct iovec iov = { .iov_base = frame, .iov_len = FRAME_LEN };
  AfpTxtimeControl control;
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control };
  msg.msg_controllen = afp_txtime_control (&control, dq_clock_ns (CLOCK_TAI) + MS);

  errno = 0;
  g_assert_cmpint (sendmsg (tx, &msg, 0), ==, -1);
  g_assert_cmpint (errno, ==, EINVAL);

  struct sock_txtime st = { .clockid = CLOCK_TAI };
  g_assert_cmpint (setsockopt (tx, SOL_SOCKET, SO_TXTIME, &st, sizeof st), ==, 0);
  g_assert_cmpint (sendmsg (tx, &msg, 0), ==, FRAME_LEN);
  struct pollfd pfd = { .fd = rx, .events = POLLIN };
  g_assert_cmpint (poll (&pfd, 1, 2000), ==, 1);
  g_assert_cmpint (recv (rx, got, sizeof got, MSG_DONTWAIT), ==, FRAME_LEN);
  g_assert_cmpmem (got, FRAME_LEN, frame, FRAME_LEN);

  control.header.cmsg_len = CMSG_LEN (sizeof (guint32));
  errno = 0;
  g_assert_cmpint (sendmsg (tx, &msg, 0), ==, -1);
  g_assert_cmpint (errno, ==, EINVAL);
  close (tx);
  close (rx);
}

static void
expect_tx_refused (DqPort *port, const DqTxConfig *c, const char *const *parts)
{
  GError *error = NULL;
  g_assert_null (dq_txq_create (port, c, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG, parts);
}

/* Without etf a scheduled queue is refused, naming the qdisc the kernel reports */
static void
test_refused (void)
{
  if (!have_netns ())
    return;
  DqPort *port = dq_test_port_open (TX_DEVICE);
  DqTxConfig t = { .max_packet_size = 1500, .scheduled = TRUE };
  expect_tx_refused (port, &t,
      (const char *[]){ TX_DEVICE, "schedule", "needs the etf qdisc",
          "tc qdisc replace dev dqtt0 root etf clockid CLOCK_TAI delta 200000", "it has 'noqueue'",
          NULL });

  /* another qdisc, read as it is now; pacing names it too */
  tc_or_fail ((const char *[]){ "qdisc", "replace", "dev", TX_IF, "root", "pfifo", NULL });
  expect_tx_refused (port, &t, (const char *[]){ "needs the etf qdisc", "it has 'pfifo'", NULL });
  DqTxConfig paced = { .max_packet_size = 1500, .rate_bps = 1000000000 };
  expect_tx_refused (
      port, &paced, (const char *[]){ "needs the fq qdisc", "it has 'pfifo'", NULL });
  tc_or_fail ((const char *[]){ "qdisc", "del", "dev", TX_IF, "root", NULL });
  expect_tx_refused (port, &t, (const char *[]){ "it has 'noqueue'", NULL });

  /* pacing and sending at a time need different qdiscs */
  t.rate_bps = 1000000000;
  expect_tx_refused (port, &t,
      (const char *[]){ TX_DEVICE, "rate 1000000000 bit/s and schedule", "cannot be combined", "fq",
          "etf", NULL });
  dq_port_unref (port);
}

/* ---- with etf on the veth ---- */

typedef DqTestLink EtfLink;

static void
etf_link_open (EtfLink *l, DqTxLate late)
{
  DqRxConfig rc = {
    .burst_packets = 64, .burst_timeout_ns = MS, .max_packet_size = 1518, .n_queues = 1
  };
  DqTxConfig tc = { .max_packet_size = 1500, .scheduled = TRUE, .late = late };
  dq_test_link_open (l, TX_DEVICE, &tc, RX_DEVICE, &rc);
}

/* Receives test frames until `n` came or `timeout_ns` passed: their sequence numbers and
 * receive timestamps (port clock), in arrival order. Returns how many came. */
static guint
etf_receive (EtfLink *l, guint32 *seqs, guint64 *stamps, guint n, guint64 timeout_ns)
{
  guint got = 0;
  guint64 until = dq_clock_ns (CLOCK_MONOTONIC) + timeout_ns;
  while (got < n && dq_clock_ns (CLOCK_MONOTONIC) < until) {
    DqBurst b;
    GError *error = NULL;
    int r = dq_rxq_poll (l->rxq, &b, 10 * (gint64) MS, &error);
    g_assert_no_error (error);
    if (r != 1)
      continue;
    for (guint k = 0; k < b.n_packets && got < n; k++) {
      const guint8 *p = b.data + b.packets[k].offset;
      if (b.packets[k].length < 18 || p[12] != (ETHERTYPE_TEST >> 8) ||
          p[13] != (ETHERTYPE_TEST & 0xff))
        continue;
      seqs[got] = (guint32) p[14] << 24 | (guint32) p[15] << 16 | (guint32) p[16] << 8 | p[17];
      stamps[got++] = b.packets[k].timestamp;
    }
    dq_rxq_release (l->rxq, &b);
  }
  return got;
}

/* a frame sent at time t arrives no earlier than t - delta (etf hands it to the veth
 * then) and soon after t */
static void
assert_departed_at (guint64 stamp, guint64 t)
{
  g_assert_cmpuint (stamp, >=, t - ETF_DELTA_NS - 50 * US);
  g_assert_cmpuint (stamp, <=, t + 2 * MS);
}

static gpointer
wake_later (gpointer txq)
{
  g_usleep (100000);
  dq_txq_wakeup (txq);
  return NULL;
}

static void
test_etf_send (void)
{
  if (!have_netns ())
    return;
  char *why = NULL;
  if (!tc ((const char *[]){ "qdisc", "replace", "dev", TX_IF, "root", "etf", "clockid",
               "CLOCK_TAI", "delta", "200000", NULL },
          &why)) {
    char *msg = g_strdup_printf (
        "this kernel cannot put etf on a veth (tc qdisc replace dev %s root etf: %s): real "
        "sending at a time is not checked here",
        TX_IF, why);
    g_test_skip (msg);
    g_free (msg);
    g_free (why);
    return;
  }

  /* frames 0..5 at 20 ms + 2 ms k; frame 6 late (dropped); frame 7 as soon as possible,
   * which is after frame 5: the order is kept */
  EtfLink l;
  etf_link_open (&l, DQ_TX_LATE_DROP);
  guint8 frames[8][FRAME_LEN];
  const guint8 *fp[8];
  guint32 lengths[8];
  guint64 times[8];
  guint64 now = dq_port_time (l.tx_port);
  for (guint k = 0; k < 8; k++) {
    frame_build (frames[k], k);
    fp[k] = frames[k];
    lengths[k] = FRAME_LEN;
    times[k] = now + 20 * MS + 2 * MS * k;
  }
  times[6] = now - MS;
  times[7] = 0;
  GError *error = NULL;
  g_assert_cmpint (dq_txq_send_at (l.txq, fp, lengths, times, 8, &error), ==, 8);
  g_assert_no_error (error);
  guint32 seqs[8];
  guint64 stamps[8];
  g_assert_cmpuint (etf_receive (&l, seqs, stamps, 8, 500 * MS), ==, 7);
  for (guint k = 0; k < 6; k++) {
    g_assert_cmpuint (seqs[k], ==, k);
    assert_departed_at (stamps[k], times[k]);
  }
  g_assert_cmpuint (seqs[6], ==, 7);
  g_assert_cmpuint (stamps[6], >=, stamps[5]);
  DqTxStats s = dq_test_tx_stats (l.txq);
  g_assert_cmpuint (s.packets, ==, 7);
  g_assert_cmpuint (s.scheduled, ==, 6);
  g_assert_cmpuint (s.late, ==, 1);
  g_assert_cmpuint (s.late_dropped, ==, 1);
  g_assert_cmpuint (s.held, ==, 0);
  g_assert_cmpuint (s.errors, ==, 0);

  /* beyond the horizon: the sending call holds the frame until it is 1 s ahead */
  now = dq_port_time (l.tx_port);
  times[0] = now + DQ_TX_HORIZON_NS + 300 * MS;
  g_assert_cmpint (dq_txq_send_at (l.txq, fp, lengths, times, 1, &error), ==, 1);
  guint64 returned = dq_port_time (l.tx_port);
  g_assert_cmpuint (returned, >=, times[0] - DQ_TX_HORIZON_NS);
  g_assert_cmpuint (etf_receive (&l, seqs, stamps, 1, 2 * NS_PER_S), ==, 1);
  g_assert_cmpuint (seqs[0], ==, 0);
  assert_departed_at (stamps[0], times[0]);
  g_assert_cmpuint (dq_test_tx_stats (l.txq).held, ==, 1);

  /* a wakeup ends the hold: the frame is not consumed and never sent */
  times[0] = dq_port_time (l.tx_port) + DQ_TX_HORIZON_NS + 5 * NS_PER_S;
  GThread *waker = g_thread_new ("wake", wake_later, l.txq);
  g_assert_cmpint (dq_txq_send_at (l.txq, fp, lengths, times, 1, &error), ==, 0);
  g_assert_no_error (error);
  g_thread_join (waker);
  s = dq_test_tx_stats (l.txq);
  g_assert_cmpuint (s.held, ==, 2);
  g_assert_cmpuint (s.packets, ==, 8);
  g_assert_true (dq_txq_flush (l.txq, &error));
  g_assert_cmpuint (etf_receive (&l, seqs, stamps, 1, 100 * MS), ==, 0);
  dq_test_link_close (&l);

  /* late frames sent: at once, counted late and scheduled */
  etf_link_open (&l, DQ_TX_LATE_SEND);
  now = dq_port_time (l.tx_port);
  times[0] = now - 5 * MS;
  g_assert_cmpint (dq_txq_send_at (l.txq, fp, lengths, times, 1, &error), ==, 1);
  g_assert_cmpuint (etf_receive (&l, seqs, stamps, 1, 500 * MS), ==, 1);
  g_assert_cmpuint (stamps[0], >=, now);
  g_assert_cmpuint (stamps[0], <=, now + 5 * MS);
  s = dq_test_tx_stats (l.txq);
  g_assert_cmpuint (s.scheduled, ==, 1);
  g_assert_cmpuint (s.late, ==, 1);
  g_assert_cmpuint (s.late_dropped, ==, 0);
  dq_test_link_close (&l);

  tc_or_fail ((const char *[]){ "qdisc", "del", "dev", TX_IF, "root", NULL });
}

int
main (int argc, char **argv)
{
  /* before any thread exists: threads inherit the namespace */
  netns = dq_netns_setup_optional (TX_IF, RX_IF, "the cases on a veth pair");

  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/afpacket-txtime/control/bytes", test_control_bytes);
  g_test_add_func ("/afpacket-txtime/tai-offset", test_tai_offset);
  g_test_add_func ("/afpacket-txtime/qdiscs", test_qdiscs);
  g_test_add_func ("/afpacket-txtime/control/kernel", test_control_kernel);
  g_test_add_func ("/afpacket-txtime/refused", test_refused);
  g_test_add_func ("/afpacket-txtime/etf-send", test_etf_send);
  int rc = g_test_run ();

  if (netns != NULL)
    dq_netns_free (netns);
  return rc;
}
