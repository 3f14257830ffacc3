/* afpacket engine tests: a veth pair in a private network namespace; frames sent on one
 * end (by a raw socket written here, or by the engine's TX queue) are received by the
 * engine on the other end and checked byte for byte.
 *
 * Frames are Ethernet/IPv4/UDP (or raw ethertype 0x88b5) carrying a 32-bit sequence
 * number and a payload pattern derived from it; each test describes its frames with a
 * generator (seq -> addresses, ports, size, VLAN, expected mark and queue).
 */
#include "daqiri-engine.h"
#include "dq-bench-util.h"
#include "dq-netns.h"
#include "dq-packet.h"
#include "dq-test-port.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>

#define TX_IF "dqtx0"
#define RX_IF "dqrx0"
#define TX_DEVICE "afpacket:" TX_IF
#define RX_DEVICE "afpacket:" RX_IF

static const guint8 tx_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x0a, 0x01 };
static const guint8 rx_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x0b, 0x01 };

static DqNetns *netns;
static guint32 next_group_id = 0x4400;

#define FRAME_MAX 2048
#define ETHERTYPE_TEST 0x88b5
#define SEQ_OFFSET_UDP 42
#define SEQ_OFFSET_RAW 14
#define MS G_GINT64_CONSTANT (1000000)

/* ---------------------------------------------------------------------------------- */
/* frames */

typedef struct {
  guint16 ethertype; /* ETH_P_IP: UDP/IPv4, anything else: raw */
  guint32 src, dst;  /* IPv4, host order */
  guint16 sport, dport;
  int vlan;    /* -1: untagged; else 802.1Q vid on the wire */
  guint len;   /* untagged frame length */
  gint64 mark; /* expected flow id; -1: must never be delivered */
  int queue;   /* expected RX queue, -1: any */
} FrameSpec;

typedef struct {
  guint8 wire[FRAME_MAX + 4]; /* as sent */
  guint wire_len;
  guint8 rx[FRAME_MAX]; /* as received: the kernel strips the VLAN tag */
  guint rx_len;
} TestFrame;

typedef void (*FrameGen) (guint32 seq, FrameSpec *spec, gpointer ctx);

static guint
size_for_seq (guint32 seq)
{
  return 60 + (guint) (((seq * 2654435761u) >> 11) % 1441); /* 60 .. 1500 */
}

static void
spec_udp (FrameSpec *spec, guint len)
{
  memset (spec, 0, sizeof *spec);
  spec->ethertype = ETH_P_IP;
  spec->src = 0x0a000001; /* 10.0.0.1 */
  spec->dst = 0x0a000002;
  spec->sport = 4000;
  spec->dport = 5000;
  spec->vlan = -1;
  spec->len = len;
  spec->mark = 0;
  spec->queue = -1;
}

static void
frame_build (guint32 seq, const FrameSpec *spec, TestFrame *f)
{
  guint8 *b = f->rx;
  guint len = spec->len;
  guint payload = SEQ_OFFSET_RAW;

  g_assert_cmpuint (len, >=, 60);
  g_assert_cmpuint (len, <=, FRAME_MAX);
  dq_packet_write_eth (b, rx_mac, tx_mac, spec->ethertype);
  if (spec->ethertype == ETH_P_IP) {
    dq_packet_write_ipv4 (
        b + 14, (guint16) (len - 14), (guint16) seq, DQ_PACKET_PROTO_UDP, spec->src, spec->dst);
    dq_packet_write_udp (b + 34, spec->sport, spec->dport, (guint16) (len - 34));
    payload = SEQ_OFFSET_UDP;
  }
  dq_packet_put32 (b + payload, seq);
  for (guint i = payload + 4; i < len; i++)
    b[i] = (guint8) (seq * 131u + i * 7u + (i >> 8) * 3u);
  f->rx_len = len;

  if (spec->vlan >= 0) {
    memcpy (f->wire, b, 12);
    dq_packet_put16 (f->wire + 12, ETH_P_8021Q);
    dq_packet_put16 (f->wire + 14, (guint16) spec->vlan);
    memcpy (f->wire + 16, b + 12, len - 12);
    f->wire_len = len + 4;
  } else {
    memcpy (f->wire, b, len);
    f->wire_len = len;
  }
}

/* sequence number of a received (untagged) frame */
static guint32
frame_seq (const guint8 *frame, guint len)
{
  guint off = (frame[12] == 0x08 && frame[13] == 0x00) ? SEQ_OFFSET_UDP : SEQ_OFFSET_RAW;
  g_assert_cmpuint (len, >=, off + 4);
  return dq_packet_get32 (frame + off);
}

/* ---- generators ---- */

static void
gen_plain (guint32 seq, FrameSpec *spec, gpointer ctx)
{
  spec_udp (spec, size_for_seq (seq));
}

static void
gen_fixed (guint32 seq, FrameSpec *spec, gpointer ctx)
{
  spec_udp (spec, GPOINTER_TO_UINT (ctx));
}

/* ---------------------------------------------------------------------------------- */
/* a raw AF_PACKET sender on the other end of the veth pair */

#define SEND_CHUNK 64

typedef struct {
  int fd;
  TestFrame *chunk;
} Sender;

static Sender *
sender_new (const char *ifname)
{
  Sender *s = g_new0 (Sender, 1);
  struct sockaddr_ll sll;
  int sndbuf = 4 << 20;

  s->fd = socket (AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  g_assert_cmpint (s->fd, >=, 0);
  (void) setsockopt (s->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
  memset (&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = 0; /* send only */
  sll.sll_ifindex = (int) if_nametoindex (ifname);
  g_assert_cmpint (sll.sll_ifindex, >, 0);
  g_assert_cmpint (bind (s->fd, (struct sockaddr *) &sll, sizeof sll), ==, 0);
  s->chunk = g_new (TestFrame, SEND_CHUNK);
  return s;
}

static void
sender_free (Sender *s)
{
  close (s->fd);
  g_free (s->chunk);
  g_free (s);
}

/* sends frames first .. first + n - 1, sendmmsg in chunks of 64 */
static void
sender_send (Sender *s, FrameGen gen, gpointer ctx, guint32 first, guint n)
{
  struct mmsghdr msgs[SEND_CHUNK];
  struct iovec iov[SEND_CHUNK];

  for (guint done = 0; done < n;) {
    guint k = MIN (SEND_CHUNK, n - done);
    memset (msgs, 0, sizeof msgs);
    for (guint j = 0; j < k; j++) {
      FrameSpec spec;
      gen (first + done + j, &spec, ctx);
      frame_build (first + done + j, &spec, &s->chunk[j]);
      iov[j].iov_base = s->chunk[j].wire;
      iov[j].iov_len = s->chunk[j].wire_len;
      msgs[j].msg_hdr.msg_iov = &iov[j];
      msgs[j].msg_hdr.msg_iovlen = 1;
    }
    for (guint sent = 0; sent < k;) {
      int r = sendmmsg (s->fd, msgs + sent, k - sent, 0);
      if (r < 0) {
        g_assert_true (errno == ENOBUFS || errno == EAGAIN || errno == EINTR);
        g_usleep (100);
        continue;
      }
      sent += (guint) r;
    }
    done += k;
  }
}

/* ---------------------------------------------------------------------------------- */
/* receive checks */

static guint64
realtime_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  return (guint64) ts.tv_sec * G_GUINT64_CONSTANT (1000000000) + (guint64) ts.tv_nsec;
}

static gint64
mono_ns (void)
{
  return g_get_monotonic_time () * 1000;
}

/* What a stream of received frames must look like: the frames the generator makes for
 * first .. first + n - 1, minus those whose mark is -1, in order. */
typedef struct {
  FrameGen gen;
  gpointer ctx;
  guint snap;      /* max_packet_size of the receiving queue */
  guint burst_max; /* burst_packets of the receiving queue */
  GArray *expect;  /* guint32 seqs, in order */
  guint next;
  guint64 ts_lo; /* no timestamp before this (CLOCK_REALTIME ns) */
  guint64 last_ts;
  guint64 bytes;
  guint64 truncated;
  guint64 bursts;
  guint full_bursts; /* bursts with burst_max packets */
  TestFrame scratch;
} Stream;

static Stream *
stream_new (FrameGen gen, gpointer ctx, guint32 first, guint n, guint snap, guint burst_max)
{
  Stream *st = g_new0 (Stream, 1);
  st->gen = gen;
  st->ctx = ctx;
  st->snap = snap;
  st->burst_max = burst_max;
  st->expect = g_array_new (FALSE, FALSE, sizeof (guint32));
  st->ts_lo = realtime_ns ();
  for (guint32 seq = first; seq < first + n; seq++) {
    FrameSpec spec;
    gen (seq, &spec, ctx);
    if (spec.mark >= 0)
      g_array_append_val (st->expect, seq);
  }
  return st;
}

static void
stream_expect_more (Stream *st, guint32 first, guint n)
{
  for (guint32 seq = first; seq < first + n; seq++) {
    FrameSpec spec;
    st->gen (seq, &spec, st->ctx);
    if (spec.mark >= 0)
      g_array_append_val (st->expect, seq);
  }
}

static void
stream_free (Stream *st)
{
  g_array_unref (st->expect);
  g_free (st);
}

/* Checks one delivered packet against the frame the generator makes for its sequence
 * number: length, every byte, flow id, flags, timestamp bounds. */
static void
packet_check (Stream *st, const DqBurst *b, guint i, guint32 seq)
{
  const DqPacket *p = &b->packets[i];
  FrameSpec spec;

  st->gen (seq, &spec, st->ctx);
  frame_build (seq, &spec, &st->scratch);
  g_assert_cmpint (spec.mark, >=, 0);
  guint want = MIN (st->scratch.rx_len, st->snap);
  g_assert_cmpuint ((guint64) p->offset + p->length, <=, b->size);
  g_assert_cmpuint (p->length, ==, want);
  g_assert_cmpmem (b->data + p->offset, p->length, st->scratch.rx, want);
  g_assert_cmpuint (p->flow_id, ==, (guint32) spec.mark);

  guint32 flags = 0;
  if (st->scratch.rx_len > st->snap)
    flags |= DQ_PACKET_FLAG_TRUNCATED;
  if (spec.vlan >= 0)
    flags |= DQ_PACKET_FLAG_VLAN | ((guint32) spec.vlan << 16);
  g_assert_cmphex (p->flags, ==, flags);
  if (spec.vlan >= 0)
    g_assert_cmpuint (DQ_PACKET_VLAN_ID (p->flags), ==, (guint) spec.vlan);

  g_assert_cmpuint (p->timestamp, >=, st->ts_lo);
  st->bytes += p->length;
  if (flags & DQ_PACKET_FLAG_TRUNCATED)
    st->truncated++;
}

/* Checks a burst: shape (offsets inside [data, data + size), increasing, the last packet
 * ends at size), then every packet, which must be the next expected frame. */
static void
stream_check_burst (Stream *st, const DqBurst *b)
{
  g_assert_cmpuint (b->n_packets, >=, 1);
  g_assert_cmpuint (b->n_packets, <=, st->burst_max);
  g_assert_nonnull (b->data);
  g_assert_cmpint (b->memory, ==, DQ_MEMORY_HOST);
  /* the range starts at the first packet's TPACKET header, the frame follows it */
  g_assert_cmpuint (b->packets[0].offset, >=, 48);
  g_assert_cmpuint (b->packets[0].offset, <, 256);
  for (guint i = 1; i < b->n_packets; i++)
    g_assert_cmpuint (
        b->packets[i].offset, >=, b->packets[i - 1].offset + b->packets[i - 1].length);
  const DqPacket *last = &b->packets[b->n_packets - 1];
  g_assert_cmpuint (last->offset + last->length, ==, b->size);

  for (guint i = 0; i < b->n_packets; i++) {
    const DqPacket *p = &b->packets[i];
    guint32 seq = frame_seq (b->data + p->offset, p->length);
    if (st->next >= st->expect->len)
      g_error ("unexpected frame seq %u (length %u) after all %u expected frames", seq, p->length,
          st->expect->len);
    g_assert_cmpuint (seq, ==, g_array_index (st->expect, guint32, st->next));
    st->next++;
    packet_check (st, b, i, seq);
    g_assert_cmpuint (p->timestamp, >=, st->last_ts);
    st->last_ts = p->timestamp;
  }
  st->bursts++;
  if (b->n_packets == st->burst_max)
    st->full_bursts++;
}

/* Polls until every expected frame arrived; fails if nothing comes for idle_ms. With
 * `held` the bursts are kept (appended) instead of released. */
static void
stream_receive (Stream *st, DqRxQueue *rxq, gint64 idle_ms, GArray *held)
{
  while (st->next < st->expect->len) {
    DqBurst b;
    GError *error = NULL;
    int r = dq_rxq_poll (rxq, &b, idle_ms * MS, &error);
    g_assert_no_error (error);
    if (r == 0) {
      DqRxStats s = dq_test_rx_stats (rxq);
      g_error ("timed out: %u of %u frames received (next seq %u); engine stats: %" G_GUINT64_FORMAT
               " packets, %" G_GUINT64_FORMAT " ring-full drops, %" G_GUINT64_FORMAT " filtered",
          st->next, st->expect->len, g_array_index (st->expect, guint32, st->next), s.packets,
          s.drops_ring_full, s.drops_filtered);
    }
    g_assert_cmpint (r, ==, 1);
    stream_check_burst (st, &b);
    if (held != NULL)
      g_array_append_val (held, b);
    else
      dq_rxq_release (rxq, &b);
  }
}

/* Takes whatever the queue has right now (poll timeout 0), checked and released. */
static void
stream_drain (Stream *st, DqRxQueue *rxq)
{
  for (;;) {
    DqBurst b;
    GError *error = NULL;
    int r = dq_rxq_poll (rxq, &b, 0, &error);
    g_assert_no_error (error);
    if (r == 0)
      return;
    stream_check_burst (st, &b);
    dq_rxq_release (rxq, &b);
  }
}

/* Sends frames first .. first + n - 1 and receives them as they come, the way a
 * streaming thread would: a TPACKET_V3 block is handed over after burst_timeout even
 * when partly filled, so a ring nobody reads holds far less than its size. */
static void
send_and_receive (Sender *s, Stream *st, DqRxQueue *rxq, guint32 first, guint n)
{
  for (guint done = 0; done < n;) {
    guint k = MIN (256, n - done);
    sender_send (s, st->gen, st->ctx, first + done, k);
    stream_drain (st, rxq);
    done += k;
  }
  stream_receive (st, rxq, 2000, NULL);
}

/* every timestamp seen lies before `now` */
static void
stream_check_ts_hi (Stream *st)
{
  g_assert_cmpuint (st->last_ts, <=, realtime_ns ());
}

static void
assert_rx_quiet (DqRxQueue *rxq, gint64 ms)
{
  DqBurst b;
  GError *error = NULL;
  int r = dq_rxq_poll (rxq, &b, ms * MS, &error);
  g_assert_no_error (error);
  if (r == 1)
    g_error ("unexpected burst of %u packets, first seq %u", b.n_packets,
        frame_seq (b.data + b.packets[0].offset, b.packets[0].length));
  g_assert_cmpint (r, ==, 0);
}

static void
held_release (DqRxQueue *rxq, GArray *held, gboolean reverse)
{
  for (guint k = 0; k < held->len; k++) {
    guint i = reverse ? held->len - 1 - k : k;
    dq_rxq_release (rxq, &g_array_index (held, DqBurst, i));
  }
  g_array_set_size (held, 0);
}

/* ---------------------------------------------------------------------------------- */
/* engine setup */

static DqRxConfig
rx_config (guint burst_packets, gsize ring_bytes, guint max_packet)
{
  DqRxConfig c;
  memset (&c, 0, sizeof c);
  c.burst_packets = burst_packets;
  c.burst_timeout_ns = 1000000;
  c.ring_bytes = ring_bytes;
  c.max_packet_size = max_packet;
  c.n_queues = 1;
  return c;
}


/* The stats once drops_ring_full has reached `drops`, or after 2 s: the kernel counts a frame
 * when its receive path runs, which a loaded machine can put off past a short quiet poll. */
static DqRxStats
rx_stats_drops (DqRxQueue *rxq, guint64 drops)
{
  const gint64 until = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
  DqRxStats s = dq_test_rx_stats (rxq);
  while (s.drops_ring_full < drops && g_get_monotonic_time () < until) {
    g_usleep (2000);
    s = dq_test_rx_stats (rxq);
  }
  return s;
}

/* The RX tests' setup: an RX queue of config `c` on RX_DEVICE and a sender of raw frames on
 * TX_IF, the other end of the veth pair. */
typedef struct {
  DqPort *port;
  DqRxQueue *rxq;
  Sender *s;
} RxRig;

static void
rx_rig_open (RxRig *rig, DqRxConfig c)
{
  rig->port = dq_test_port_open (RX_DEVICE);
  rig->rxq = dq_test_rxq_create (rig->port, &c);
  rig->s = sender_new (TX_IF);
}

static void
rx_rig_close (RxRig *rig)
{
  sender_free (rig->s);
  dq_rxq_destroy (rig->rxq);
  dq_port_unref (rig->port);
}

/* ---------------------------------------------------------------------------------- */
/* port */

static void
test_port_info (void)
{
  DqPort *port = dq_test_port_open (RX_DEVICE);
  const DqPortInfo *info = dq_port_info (port);

  g_assert_cmpstr (info->name, ==, "afpacket");
  g_assert_cmpstr (dq_port_device (port), ==, RX_DEVICE);
  g_assert_cmpmem (info->mac, 6, rx_mac, 6);
  g_assert_cmpuint (info->mtu, ==, 1500);
  g_assert_cmpint (info->clock_id, ==, CLOCK_REALTIME);
  g_assert_nonnull (strstr (info->clock_name, "CLOCK_REALTIME"));
  g_assert_false (info->device_dma);

  guint64 before = realtime_ns ();
  guint64 t = dq_port_time (port);
  guint64 after = realtime_ns ();
  g_assert_cmpuint (t, >=, before);
  g_assert_cmpuint (t, <=, after);

  /* shared: the same device string gives the same port */
  DqPort *again = dq_test_port_open (RX_DEVICE);
  g_assert_true (again == port);
  dq_port_unref (again);
  dq_port_unref (port);

  /* a new open reads the MTU again */
  GError *error = NULL;
  g_assert_true (dq_netns_set_mtu (netns, RX_IF, 9000, &error));
  g_assert_no_error (error);
  port = dq_test_port_open (RX_DEVICE);
  g_assert_cmpuint (dq_port_info (port)->mtu, ==, 9000);
  dq_port_unref (port);
  g_assert_true (dq_netns_set_mtu (netns, RX_IF, 1500, &error));
  g_assert_no_error (error);
}

static void
test_port_bad_device (void)
{
  GError *error = NULL;

  g_assert_null (dq_port_open ("afpacket:nope0", &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_DEVICE);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "'nope0'"));
  g_assert_nonnull (strstr (error->message, "found: "));
  g_assert_nonnull (strstr (error->message, "lo"));
  g_assert_nonnull (strstr (error->message, TX_IF));
  g_assert_nonnull (strstr (error->message, RX_IF));
  g_clear_error (&error);

  g_assert_null (dq_port_open ("afpacket:abcdefghijklmnopq", &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "15 characters"));
  g_clear_error (&error);

  g_assert_null (dq_port_open ("afpacket:", &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_DEVICE);
  g_clear_error (&error);

  g_assert_null (dq_port_open ("nosuchengine:eth0", &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "afpacket"));
  g_clear_error (&error);
}

/* ---------------------------------------------------------------------------------- */
/* configuration errors */

/* Fails the test unless error is domain/code and its message mentions every string of the
 * NULL-terminated needles; then clears it. */
static void
expect_error_mentions (GError **error, GQuark domain, int code, const char *const *needles)
{
  g_assert_error (*error, domain, code);
  g_test_message ("%s", (*error)->message);
  for (guint i = 0; needles[i] != NULL; i++)
    if (strstr ((*error)->message, needles[i]) == NULL)
      g_error ("error message '%s' does not mention '%s'", (*error)->message, needles[i]);
  g_clear_error (error);
}

static void
expect_rx_error (
    DqPort *port, const DqRxConfig *c, GQuark domain, int code, const char *const *needles)
{
  GError *error = NULL;
  g_assert_null (dq_rxq_create (port, c, &error));
  expect_error_mentions (&error, domain, code, needles);
}

static void
expect_tx_error (DqPort *port, const DqTxConfig *c, const char *const *needles)
{
  GError *error = NULL;
  g_assert_null (dq_txq_create (port, c, &error));
  expect_error_mentions (&error, DQ_ERROR, DQ_ERROR_CONFIG, needles);
}

static void
test_config_errors (void)
{
  DqPort *port = dq_test_port_open (RX_DEVICE);
  gsize page = (gsize) sysconf (_SC_PAGESIZE);
  char small[32], two_pages[32];
  g_snprintf (small, sizeof small, "%" G_GSIZE_FORMAT, page);
  g_snprintf (two_pages, sizeof two_pages, "%" G_GSIZE_FORMAT, 2 * page);

  DqRxConfig c = rx_config (64, 0, 63);
  expect_rx_error (port, &c, DQ_ERROR, DQ_ERROR_CONFIG,
      (const char *[]){ "max-packet-size 63", "64 .. 65535", NULL });
  c = rx_config (64, 0, 65536);
  expect_rx_error (port, &c, DQ_ERROR, DQ_ERROR_CONFIG,
      (const char *[]){ "max-packet-size 65536", "64 .. 65535", NULL });
  c = rx_config (64, page, 1500);
  expect_rx_error (
      port, &c, DQ_ERROR, DQ_ERROR_CONFIG, (const char *[]){ "ring-size", small, two_pages, NULL });
  /* three pages cannot hold two blocks big enough for a 65535-byte frame */
  c = rx_config (64, 3 * page, 65535);
  expect_rx_error (port, &c, DQ_ERROR, DQ_ERROR_CONFIG,
      (const char *[]){ "too small", "65535", "2 blocks", NULL });
  c = rx_config (0, 0, 1500);
  expect_rx_error (
      port, &c, DQ_ERROR, DQ_ERROR_CONFIG, (const char *[]){ "burst-packets 0", NULL });
  c = rx_config (64, 0, 1500);
  c.n_queues = 2;
  c.queue_index = 2;
  expect_rx_error (port, &c, DQ_ERROR, DQ_ERROR_CONFIG, (const char *[]){ "queue 2 of 2", NULL });

  /* a rule naming a queue the element does not have */
  guint n_rules;
  DqFlowRule *rules = dq_test_rules_parse ("proto=udp mark=1; dst-port=7 queue=3 mark=2", &n_rules);
  c = rx_config (64, 0, 1500);
  c.flows = rules;
  c.n_flows = n_rules;
  c.n_queues = 2;
  expect_rx_error (
      port, &c, DQ_ERROR, DQ_ERROR_FLOW, (const char *[]){ "rule 2", "queue 3", "0 .. 1", NULL });
  g_free (rules);

  /* the smallest ring that works: 2 pages, 2 blocks */
  c = rx_config (8, 2 * page, 64);
  DqRxQueue *rxq = dq_test_rxq_create (port, &c);
  g_assert_cmpuint (dq_rxq_ring_bytes (rxq), ==, 2 * page);
  dq_rxq_destroy (rxq);
  /* default ring: 64 MiB */
  c = rx_config (8, 0, 0);
  rxq = dq_test_rxq_create (port, &c);
  g_assert_cmpuint (dq_rxq_ring_bytes (rxq), ==, 64 << 20);
  dq_rxq_destroy (rxq);

  DqTxConfig t = { .ring_bytes = 0, .max_packet_size = 70000 };
  expect_tx_error (port, &t, (const char *[]){ "max-packet-size 70000", "64 .. 65535", NULL });
  t.max_packet_size = 1500;
  t.ring_bytes = page;
  expect_tx_error (port, &t, (const char *[]){ "TX ring-size", small, NULL });
  /* pacing: through the fq qdisc, which a veth in a fresh namespace has not (its qdisc,
   * read by netlink, is named); sending at a time: test-afpacket-txtime.c */
  t = (DqTxConfig){ .max_packet_size = 1500, .rate_bps = 1000000000 };
  expect_tx_error (port, &t,
      (const char *[]){ "rate 1000000000 bit/s", "needs the fq qdisc", "it has 'noqueue'", NULL });

  dq_port_unref (port);
}

/* ---------------------------------------------------------------------------------- */
/* RX */

/* 20000 frames of 60..1500 bytes: every byte, count, order, timestamps, stats. */
static void
test_rx_frames (void)
{
  const guint n = 20000;
  RxRig rig;
  rx_rig_open (&rig, rx_config (64, 32 << 20, 1518));
  g_assert_cmpuint (dq_rxq_ring_bytes (rig.rxq), ==, 32 << 20);
  Stream *st = stream_new (gen_plain, NULL, 0, n, 1518, 64);

  gint64 t0 = mono_ns ();
  send_and_receive (rig.s, st, rig.rxq, 0, n);
  gint64 t1 = mono_ns ();
  stream_check_ts_hi (st);
  assert_rx_quiet (rig.rxq, 20);

  DqRxStats stats = dq_test_rx_stats (rig.rxq);
  g_assert_cmpuint (stats.packets, ==, n);
  g_assert_cmpuint (stats.bytes, ==, st->bytes);
  g_assert_cmpuint (stats.bursts, ==, st->bursts);
  g_assert_cmpuint (stats.drops_ring_full, ==, 0);
  g_assert_cmpuint (stats.drops_filtered, ==, 0);
  g_assert_cmpuint (stats.truncated, ==, 0);
  g_assert_cmpuint (st->full_bursts, >, 0);
  g_test_message ("rx: %u frames, %" G_GUINT64_FORMAT " bytes in %" G_GUINT64_FORMAT
                  " bursts, %.2f Mpps send+receive",
      n, stats.bytes, stats.bursts, n / ((t1 - t0) / 1e3));

  stream_free (st);
  rx_rig_close (&rig);
}

/* max_packet_size 128: longer frames arrive cut to 128 bytes and flagged. */
static void
test_rx_truncate (void)
{
  const guint n = 500;
  RxRig rig;
  rx_rig_open (&rig, rx_config (32, 1 << 20, 128));
  Stream *st = stream_new (gen_plain, NULL, 0, n, 128, 32);

  guint expect_truncated = 0;
  for (guint32 seq = 0; seq < n; seq++)
    expect_truncated += size_for_seq (seq) > 128;
  send_and_receive (rig.s, st, rig.rxq, 0, n);

  DqRxStats stats = dq_test_rx_stats (rig.rxq);
  g_assert_cmpuint (st->truncated, ==, expect_truncated);
  g_assert_cmpuint (stats.truncated, ==, expect_truncated);
  g_assert_cmpuint (stats.packets, ==, n);
  g_assert_cmpuint (stats.bytes, ==, st->bytes);
  g_assert_cmpuint (expect_truncated, >, n / 2);

  stream_free (st);
  rx_rig_close (&rig);
}

/* Nine kinds of frames, interleaved; the rules give each matching kind its mark. */
#define FLOW_RULES \
  "proto=udp dst-port=5001 mark=11; proto=udp dst-port=5002 mark=22; " \
  "src=10.9.0.0/16 mark=33; vlan=100 mark=44"

static void
gen_flows (guint32 seq, FrameSpec *spec, gpointer ctx)
{
  spec_udp (spec, 60 + (seq * 37) % 1000);
  switch (seq % 9) {
    case 0: /* rule 1 */
      spec->dport = 5001;
      spec->mark = 11;
      break;
    case 1: /* rule 2 */
      spec->dport = 5002;
      spec->mark = 22;
      break;
    case 2: /* no rule */
      spec->dport = 5003;
      spec->mark = -1;
      break;
    case 3: /* rule 3 by source prefix */
      spec->src = 0x0a090101;
      spec->dport = 5003;
      spec->mark = 33;
      break;
    case 4: /* rules 1 and 3: the first one counts */
      spec->src = 0x0a090101;
      spec->dport = 5001;
      spec->mark = 11;
      break;
    case 5: /* not IPv4 */
      spec->ethertype = ETHERTYPE_TEST;
      spec->mark = -1;
      break;
    case 6: /* rule 4 by VLAN */
      spec->vlan = 100;
      spec->dport = 5003;
      spec->mark = 44;
      break;
    case 7: /* other VLAN, no rule */
      spec->vlan = 200;
      spec->dport = 5003;
      spec->mark = -1;
      break;
    case 8: /* other VLAN, rule 2 (it does not look at VLANs) */
      spec->vlan = 200;
      spec->dport = 5002;
      spec->mark = 22;
      break;
  }
}

static void
test_rx_flows (void)
{
  const guint n = 9 * 300;
  guint n_rules;
  DqFlowRule *rules = dq_test_rules_parse (FLOW_RULES, &n_rules);
  DqRxConfig c = rx_config (64, 8 << 20, 1518);
  c.flows = rules;
  c.n_flows = n_rules;
  RxRig rig;
  rx_rig_open (&rig, c);
  Stream *st = stream_new (gen_flows, NULL, 0, n, 1518, 64);
  g_assert_cmpuint (st->expect->len, ==, 300 * 6);

  send_and_receive (rig.s, st, rig.rxq, 0, n);
  assert_rx_quiet (rig.rxq, 20);

  DqRxStats stats = dq_test_rx_stats (rig.rxq);
  g_assert_cmpuint (stats.packets, ==, 300 * 6);
  /* the kernel filter dropped the others: the software match never saw them */
  g_assert_cmpuint (stats.drops_filtered, ==, 0);
  g_assert_cmpuint (stats.drops_ring_full, ==, 0);

  stream_free (st);
  rx_rig_close (&rig);
  g_free (rules);
}

/* burst_packets 7: blocks are cut into bursts of at most 7 packets, each a contiguous
 * range of its block; held bursts stay intact; release in order. */
static void
test_rx_burst_split (void)
{
  const guint n = 500;
  DqRxConfig c = rx_config (7, 4 << 20, 1518);
  c.burst_timeout_ns = 20 * MS;
  RxRig rig;
  rx_rig_open (&rig, c);
  Stream *st = stream_new (gen_plain, NULL, 0, n, 1518, 7);
  GArray *held = g_array_new (FALSE, FALSE, sizeof (DqBurst));

  sender_send (rig.s, gen_plain, NULL, 0, n);
  stream_receive (st, rig.rxq, 2000, held);
  g_assert_cmpuint (held->len, >=, (n + 6) / 7);
  g_assert_cmpuint (st->full_bursts, >=, held->len / 2);

  /* consecutive bursts of one block do not overlap */
  guint adjacent = 0;
  for (guint i = 1; i < held->len; i++) {
    DqBurst *a = &g_array_index (held, DqBurst, i - 1);
    DqBurst *b = &g_array_index (held, DqBurst, i);
    if (b->data > a->data && b->data < a->data + (1 << 20)) {
      g_assert_true (b->data >= a->data + a->size);
      adjacent++;
    }
  }
  g_assert_cmpuint (adjacent, >, 0);

  /* everything is still there after the whole walk */
  Stream *again = stream_new (gen_plain, NULL, 0, n, 1518, 7);
  again->ts_lo = st->ts_lo;
  for (guint i = 0; i < held->len; i++)
    stream_check_burst (again, &g_array_index (held, DqBurst, i));
  g_assert_cmpuint (again->next, ==, n);
  stream_free (again);

  DqRxStats stats = dq_test_rx_stats (rig.rxq);
  g_assert_cmpuint (stats.bursts, ==, held->len);
  held_release (rig.rxq, held, FALSE);

  /* and the ring keeps working */
  stream_expect_more (st, n, 100);
  sender_send (rig.s, gen_plain, NULL, n, 100);
  stream_receive (st, rig.rxq, 2000, NULL);

  g_array_unref (held);
  stream_free (st);
  rx_rig_close (&rig);
}

/* Held bursts exhaust the ring: the kernel drops and counts every further frame,
 * held frames stay intact, and after the release (in reverse order) reception
 * continues. */
static void
test_rx_ring_full (void)
{
  RxRig rig;
  rx_rig_open (&rig, rx_config (16, 64 << 10, 1518)); /* 8 blocks of 8 KiB */
  g_assert_cmpuint (dq_rxq_ring_bytes (rig.rxq), ==, 64 << 10);
  gpointer len1000 = GUINT_TO_POINTER (1000);
  GArray *held = g_array_new (FALSE, FALSE, sizeof (DqBurst));

  Stream *st = stream_new (gen_fixed, len1000, 0, 300, 1518, 16);
  sender_send (rig.s, gen_fixed, len1000, 0, 300);
  /* take everything the ring holds, keep it */
  guint got = 0;
  for (;;) {
    DqBurst b;
    GError *error = NULL;
    int r = dq_rxq_poll (rig.rxq, &b, 50 * MS, &error);
    g_assert_no_error (error);
    if (r == 0)
      break;
    stream_check_burst (st, &b);
    got += b.n_packets;
    g_array_append_val (held, b);
  }
  g_test_message ("ring of 64 KiB held %u frames of 1000 bytes", got);
  g_assert_cmpuint (got, >=, 8);
  g_assert_cmpuint (got, <, 300);
  DqRxStats stats = rx_stats_drops (rig.rxq, 300 - got);
  g_assert_cmpuint (stats.packets, ==, got);
  g_assert_cmpuint (stats.drops_ring_full, ==, 300 - got);

  /* more traffic while everything is held: all dropped, nothing overwritten */
  sender_send (rig.s, gen_fixed, len1000, 300, 100);
  assert_rx_quiet (rig.rxq, 30);
  stats = rx_stats_drops (rig.rxq, 400 - got);
  g_assert_cmpuint (stats.drops_ring_full, ==, 400 - got);
  g_assert_cmpuint (stats.packets, ==, got);
  Stream *again = stream_new (gen_fixed, len1000, 0, got, 1518, 16);
  again->ts_lo = st->ts_lo;
  for (guint i = 0; i < held->len; i++)
    stream_check_burst (again, &g_array_index (held, DqBurst, i));
  stream_free (again);

  held_release (rig.rxq, held, TRUE);

  /* reception recovers: the next frames arrive, in order, none dropped */
  Stream *after = stream_new (gen_fixed, len1000, 400, 0, 1518, 16);
  for (guint round = 0; round < 4; round++) {
    stream_expect_more (after, 400 + round * 50, 50);
    sender_send (rig.s, gen_fixed, len1000, 400 + round * 50, 50);
    stream_receive (after, rig.rxq, 2000, NULL);
  }
  stats = dq_test_rx_stats (rig.rxq);
  g_assert_cmpuint (stats.drops_ring_full, ==, 400 - got);
  g_assert_cmpuint (stats.packets, ==, got + 200);

  stream_free (after);
  stream_free (st);
  g_array_unref (held);
  rx_rig_close (&rig);
}

/* Receives and releases until a poll of 5 ms finds nothing; every frame's sequence number in
 * [lo, hi). Returns the frames received. */
static guint
drain_seq_range (DqRxQueue *rxq, guint32 lo, guint32 hi)
{
  guint n = 0;
  for (;;) {
    DqBurst b;
    GError *error = NULL;
    int r = dq_rxq_poll (rxq, &b, 5 * MS, &error);
    g_assert_no_error (error);
    if (r == 0)
      return n;
    for (guint i = 0; i < b.n_packets; i++) {
      guint32 got_seq = frame_seq (b.data + b.packets[i].offset, b.packets[i].length);
      g_assert_cmpuint (got_seq, >=, lo);
      g_assert_cmpuint (got_seq, <, hi);
    }
    n += b.n_packets;
    dq_rxq_release (rxq, &b);
  }
}

/* One burst of a block held while the others are released and traffic wraps the ring
 * many times: the held burst's memory is never handed back, then recovery. */
static void
test_rx_partial_hold (void)
{
  RxRig rig;
  rx_rig_open (&rig, rx_config (3, 64 << 10, 1518));
  gpointer len1000 = GUINT_TO_POINTER (1000);

  Stream *st = stream_new (gen_fixed, len1000, 0, 6, 1518, 3);
  sender_send (rig.s, gen_fixed, len1000, 0, 6);
  GArray *held = g_array_new (FALSE, FALSE, sizeof (DqBurst));
  stream_receive (st, rig.rxq, 2000, held);
  /* Keep the bursts that hold frames 3..5 and give back the ones before them. Usually
   * that is bursts {0,1,2} and {3,4,5}; a slow sender can split them further (a burst
   * is handed over after burst_timeout even when it is not full). */
  GArray *keep = g_array_new (FALSE, FALSE, sizeof (DqBurst));
  guint32 keep_first = 0;
  guint keep_frames = 0;
  for (guint i = 0; i < held->len; i++) {
    DqBurst *b = &g_array_index (held, DqBurst, i);
    guint32 last = frame_seq (
        b->data + b->packets[b->n_packets - 1].offset, b->packets[b->n_packets - 1].length);
    if (last < 3) {
      dq_rxq_release (rig.rxq, b);
      continue;
    }
    if (keep->len == 0)
      keep_first = frame_seq (b->data + b->packets[0].offset, b->packets[0].length);
    keep_frames += b->n_packets;
    g_array_append_val (keep, *b);
  }
  g_array_set_size (held, 0);
  g_assert_cmpuint (keep->len, >=, 1);
  g_assert_cmpuint (keep_first, <=, 3);
  g_assert_cmpuint (keep_first + keep_frames, ==, 6);

  /* 20 rounds of 40 frames, everything else released at once; then whatever the kernel still
   * had to process, received or counted as dropped (up to 2 s) */
  guint32 seq = 6;
  guint received = 0;
  for (guint round = 0; round < 20; round++, seq += 40) {
    sender_send (rig.s, gen_fixed, len1000, seq, 40);
    received += drain_seq_range (rig.rxq, 6, seq + 40);
  }
  DqRxStats stats = dq_test_rx_stats (rig.rxq);
  const gint64 until = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
  while (received + stats.drops_ring_full < 800 && g_get_monotonic_time () < until) {
    received += drain_seq_range (rig.rxq, 6, seq);
    stats = dq_test_rx_stats (rig.rxq);
  }
  g_test_message (
      "partial hold: %u received, %" G_GUINT64_FORMAT " dropped", received, stats.drops_ring_full);
  g_assert_cmpuint (stats.drops_ring_full, >, 0);
  g_assert_cmpuint (received + stats.drops_ring_full, ==, 800);

  /* the held bursts still hold frames keep_first .. 5, bytes and timestamps intact */
  Stream *check = stream_new (gen_fixed, len1000, keep_first, keep_frames, 1518, 3);
  check->ts_lo = st->ts_lo;
  for (guint i = 0; i < keep->len; i++) {
    stream_check_burst (check, &g_array_index (keep, DqBurst, i));
    dq_rxq_release (rig.rxq, &g_array_index (keep, DqBurst, i));
  }
  g_assert_cmpuint (check->next, ==, keep_frames);
  stream_free (check);
  g_array_unref (keep);

  /* recovery */
  Stream *after = stream_new (gen_fixed, len1000, 1000, 30, 1518, 3);
  sender_send (rig.s, gen_fixed, len1000, 1000, 30);
  stream_receive (after, rig.rxq, 2000, NULL);
  g_assert_cmpuint (dq_test_rx_stats (rig.rxq).drops_ring_full, ==, stats.drops_ring_full);

  stream_free (after);
  stream_free (st);
  g_array_unref (held);
  rx_rig_close (&rig);
}

/* ---- several queues ---- */

static void
gen_fanout (guint32 seq, FrameSpec *spec, gpointer ctx)
{
  spec_udp (spec, 60 + (seq * 53) % 900);
  spec->sport = (guint16) (1000 + seq % 64);
}

#define QUEUE_RULES \
  "proto=udp dst-port=6000 queue=1 mark=1; " \
  "proto=udp dst-port=6001 queue=0 mark=2; proto=udp mark=3"

/* gen_fanout's frames, by turns for the three rules of QUEUE_RULES and, not IP, for none */
static void
gen_queue_rules (guint32 seq, FrameSpec *spec, gpointer ctx)
{
  gen_fanout (seq, spec, ctx);
  switch (seq % 4) {
    case 0:
      spec->dport = 6000;
      spec->mark = 1;
      spec->queue = 1;
      break;
    case 1:
      spec->dport = 6001;
      spec->mark = 2;
      spec->queue = 0;
      break;
    case 2:
      spec->dport = 6002;
      spec->mark = 3;
      break;
    case 3:
      spec->ethertype = ETHERTYPE_TEST;
      spec->mark = -1;
      break;
  }
}

typedef struct {
  guint n_queues;
  DqRxQueue *rxq[4];
  FrameGen gen;
  gboolean hashed; /* no rules: hash fanout */
  Stream *st;      /* checks bytes and marks; order is per queue here */
  guint8 *seen;
  guint n;
  gint last_seq[4];
  guint per_queue[4];
  int flow_queue[64];
  guint total;
} Fanout;

/* polls every queue once (timeout 0); returns the packets taken */
static guint
fanout_poll_round (Fanout *f)
{
  guint taken = 0;

  for (guint q = 0; q < f->n_queues; q++) {
    DqBurst b;
    GError *error = NULL;
    int r = dq_rxq_poll (f->rxq[q], &b, 0, &error);
    g_assert_no_error (error);
    if (r == 0)
      continue;
    for (guint i = 0; i < b.n_packets; i++) {
      guint32 seq = frame_seq (b.data + b.packets[i].offset, b.packets[i].length);
      g_assert_cmpuint (seq, <, f->n);
      g_assert_cmpuint (f->seen[seq], ==, 0);
      f->seen[seq] = 1;
      g_assert_cmpint ((gint) seq, >, f->last_seq[q]);
      f->last_seq[q] = (gint) seq;
      packet_check (f->st, &b, i, seq);
      FrameSpec spec;
      f->gen (seq, &spec, NULL);
      if (spec.queue >= 0)
        g_assert_cmpint (spec.queue, ==, (int) q);
      if (f->hashed) {
        /* hash fanout keeps a flow on one queue */
        guint flow = seq % 64;
        if (f->flow_queue[flow] < 0)
          f->flow_queue[flow] = (int) q;
        g_assert_cmpint (f->flow_queue[flow], ==, (int) q);
      }
    }
    f->per_queue[q] += b.n_packets;
    f->total += b.n_packets;
    taken += b.n_packets;
    dq_rxq_release (f->rxq[q], &b);
  }
  return taken;
}

static void
fanout_setup (Fanout *f, DqPort *port, guint n_queues, guint32 group, DqFlowRule *rules,
    guint n_rules, FrameGen gen, guint n)
{
  memset (f, 0, sizeof *f);
  f->n_queues = n_queues;
  f->gen = gen;
  f->hashed = rules == NULL;
  f->n = n;
  f->seen = g_new0 (guint8, n);
  for (guint q = 0; q < 4; q++)
    f->last_seq[q] = -1;
  for (guint i = 0; i < 64; i++)
    f->flow_queue[i] = -1;
  for (guint q = 0; q < n_queues; q++) {
    DqRxConfig c = rx_config (32, 4 << 20, 1518);
    c.n_queues = n_queues;
    c.queue_index = q;
    c.group_id = group;
    c.flows = rules;
    c.n_flows = n_rules;
    f->rxq[q] = dq_test_rxq_create (port, &c);
  }
  f->st = stream_new (gen, NULL, 0, n, 1518, 32);
}

/* everything expected arrived exactly once, and nothing else */
static void
fanout_finish (Fanout *f)
{
  for (guint q = 0; q < f->n_queues; q++) {
    assert_rx_quiet (f->rxq[q], 10);
    DqRxStats stats = dq_test_rx_stats (f->rxq[q]);
    g_assert_cmpuint (stats.packets, ==, f->per_queue[q]);
    g_assert_cmpuint (stats.drops_ring_full, ==, 0);
    g_assert_cmpuint (stats.drops_filtered, ==, 0);
    g_test_message ("queue %u of %u: %u frames", q, f->n_queues, f->per_queue[q]);
    if (f->hashed)
      g_assert_cmpuint (f->per_queue[q], >, 0);
  }
  for (guint i = 0; i < f->st->expect->len; i++)
    g_assert_cmpuint (f->seen[g_array_index (f->st->expect, guint32, i)], ==, 1);
  g_assert_cmpuint (f->total, ==, f->st->expect->len);

  g_free (f->seen);
  stream_free (f->st);
  for (guint q = 0; q < f->n_queues; q++)
    dq_rxq_destroy (f->rxq[q]);
}

/* Sends n frames while polling every queue of every group; waits for the rest. */
static void
fanout_pump (Fanout **groups, guint n_groups, FrameGen gen, guint n)
{
  Sender *s = sender_new (TX_IF);

  for (guint done = 0; done < n; done += 200) {
    sender_send (s, gen, NULL, done, MIN (200, n - done));
    for (guint g = 0; g < n_groups; g++)
      while (fanout_poll_round (groups[g]) > 0)
        ;
  }
  for (guint g = 0; g < n_groups; g++) {
    Fanout *f = groups[g];
    gint64 idle_since = mono_ns ();
    while (f->total < f->st->expect->len) {
      if (fanout_poll_round (f) > 0)
        idle_since = mono_ns ();
      else if (mono_ns () - idle_since > 2000 * MS)
        g_error ("timed out: %u of %u frames received", f->total, f->st->expect->len);
      else
        g_usleep (200);
    }
  }
  sender_free (s);
}

/* n_queues queues in one fanout group: each frame arrives exactly once, in order
 * within its queue, with its bytes and mark, in the queue its rule names; with hash
 * fanout the frames of one flow share a queue and every queue gets some. */
static void
fanout_run (guint n_queues, const char *rules_text, FrameGen gen)
{
  guint n_rules = 0;
  DqFlowRule *rules = rules_text ? dq_test_rules_parse (rules_text, &n_rules) : NULL;
  DqPort *port = dq_test_port_open (RX_DEVICE);
  Fanout f;
  Fanout *groups[] = { &f };

  fanout_setup (&f, port, n_queues, next_group_id++, rules, n_rules, gen, 4000);
  fanout_pump (groups, 1, gen, 4000);
  fanout_finish (&f);
  dq_port_unref (port);
  g_free (rules);
}

/* Two elements whose group ids agree in the low 16 bits (the width of a kernel fanout
 * id) each get their own group: each receives every frame once. */
static void
test_rx_fanout_two_groups (void)
{
  DqPort *port = dq_test_port_open (RX_DEVICE);
  Fanout a, b;
  Fanout *groups[] = { &a, &b };

  fanout_setup (&a, port, 2, 0x10077, NULL, 0, gen_fanout, 2000);
  fanout_setup (&b, port, 2, 0x20077, NULL, 0, gen_fanout, 2000);
  fanout_pump (groups, 2, gen_fanout, 2000);
  fanout_finish (&a);
  fanout_finish (&b);
  dq_port_unref (port);
}

static void
test_rx_fanout_2 (void)
{
  fanout_run (2, NULL, gen_fanout);
}

static void
test_rx_fanout_4 (void)
{
  fanout_run (4, NULL, gen_fanout);
}

static void
test_rx_fanout_queue_rules (void)
{
  fanout_run (2, QUEUE_RULES, gen_queue_rules);
}

/* ---- our own transmissions ---- */

/* Queues never see frames that leave through their own interface (PACKET_IGNORE_OUTGOING,
 * and the fanout group's own flag), only those that arrive. */
static void
outgoing_run (guint n_queues)
{
  DqPort *port = dq_test_port_open (TX_DEVICE);
  DqRxQueue *rxq[2];
  guint32 group = next_group_id++;
  for (guint q = 0; q < n_queues; q++) {
    DqRxConfig c = rx_config (32, 1 << 20, 1518);
    c.n_queues = n_queues;
    c.queue_index = q;
    c.group_id = group;
    rxq[q] = dq_test_rxq_create (port, &c);
  }
  Sender *out = sender_new (TX_IF);
  Sender *in = sender_new (RX_IF);

  sender_send (out, gen_plain, NULL, 0, 200);
  for (guint q = 0; q < n_queues; q++)
    assert_rx_quiet (rxq[q], 20);

  sender_send (in, gen_plain, NULL, 200, 200);
  /* every queue in turn until all 200 came (or 2 s), then none has more */
  guint got = 0;
  const gint64 until = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
  while (got < 200 && g_get_monotonic_time () < until)
    for (guint q = 0; q < n_queues; q++)
      got += drain_seq_range (rxq[q], 200, 400);
  g_assert_cmpuint (got, ==, 200);
  for (guint q = 0; q < n_queues; q++)
    assert_rx_quiet (rxq[q], 20);

  sender_free (in);
  sender_free (out);
  for (guint q = 0; q < n_queues; q++)
    dq_rxq_destroy (rxq[q]);
  dq_port_unref (port);
}

static void
test_rx_ignore_outgoing (void)
{
  outgoing_run (1);
  outgoing_run (2);
}

/* ---- wakeup ---- */

/* A poll without timeout blocks (using little CPU: no spinning) until woken. */
static gint64
wakeup_latency (DqRxQueue *rxq)
{
  DqTestPoll poll;
  dq_test_poll_start (&poll, rxq, -1);
  g_usleep (200 * 1000);
  g_assert_cmpint (poll.result, ==, -2); /* still blocked */
  gint64 t0 = mono_ns ();
  dq_rxq_wakeup (rxq);
  g_assert_cmpint (dq_test_poll_join (&poll), ==, 0);
  g_test_message ("blocked poll used %.3f ms CPU in 200 ms", poll.cpu_ns / 1e6);
  g_assert_cmpint (poll.cpu_ns, <, 50 * MS);
  return poll.returned_at - t0;
}

/* A wakeup that comes first makes the next poll return at once: how soon. */
static gint64
wakeup_first_latency (DqRxQueue *rxq)
{
  GError *error = NULL;
  DqBurst b;
  dq_rxq_wakeup (rxq);
  gint64 t0 = mono_ns ();
  g_assert_cmpint (dq_rxq_poll (rxq, &b, -1, &error), ==, 0);
  g_assert_no_error (error);
  return mono_ns () - t0;
}

/* The best of up to three latencies, stopping at the first under 20 ms: a thread that is woken
 * on time can still be scheduled late on a loaded machine, once; a wakeup that is missed
 * blocks the poll forever (the test's timeout). */
static gint64
latency_best (gint64 (*measure) (DqRxQueue *), DqRxQueue *rxq)
{
  gint64 best = G_MAXINT64;
  for (int k = 0; k < 3 && best >= 20 * MS; k++)
    best = MIN (best, measure (rxq));
  return best;
}

static void
test_rx_wakeup (void)
{
  RxRig rig;
  rx_rig_open (&rig, rx_config (16, 1 << 20, 1518));

  /* a timed poll with no traffic returns 0 after its timeout */
  DqBurst b;
  GError *error = NULL;
  gint64 t0 = mono_ns ();
  g_assert_cmpint (dq_rxq_poll (rig.rxq, &b, 30 * MS, &error), ==, 0);
  gint64 waited = mono_ns () - t0;
  g_assert_no_error (error);
  g_assert_cmpint (waited, >=, 30 * MS);
  g_assert_cmpint (waited, <, 200 * MS);

  /* wakeup breaks a poll that would block forever */
  gint64 latency = latency_best (wakeup_latency, rig.rxq);
  g_test_message ("wakeup latency %.3f ms", latency / 1e6);
  g_assert_cmpint (latency, <, 20 * MS);

  /* the same while a burst is held; one frame, so that nothing is left to arrive in a second
   * burst while the poller should be blocked (five could be split over two ring blocks, and the
   * poller then returned the second) */
  sender_send (rig.s, gen_plain, NULL, 0, 1);
  g_assert_cmpint (dq_rxq_poll (rig.rxq, &b, 2000 * MS, &error), ==, 1);
  g_assert_no_error (error);
  latency = latency_best (wakeup_latency, rig.rxq);
  g_test_message ("wakeup latency with a held burst %.3f ms", latency / 1e6);
  g_assert_cmpint (latency, <, 20 * MS);
  dq_rxq_release (rig.rxq, &b);

  /* a wakeup that comes first makes the next poll return at once */
  g_assert_cmpint (latency_best (wakeup_first_latency, rig.rxq), <, 20 * MS);

  rx_rig_close (&rig);
}


/* ---- releases from other threads ---- */

typedef struct {
  DqRxQueue *rxq;
  GAsyncQueue *bursts; /* DqBurst copies (g_free); `done` ends a releaser */
  GMutex lock;
  guint8 *seen; /* per seq, under lock */
  guint64 ts_lo;
  gint released; /* bursts released, atomic */
  guint seed;
} ReleaseJob;

static DqBurst release_done;

static void
releaser_check_release (ReleaseJob *job, Stream *st, DqBurst *b)
{
  for (guint i = 0; i < b->n_packets; i++) {
    guint32 seq = frame_seq (b->data + b->packets[i].offset, b->packets[i].length);
    packet_check (st, b, i, seq);
    g_mutex_lock (&job->lock);
    g_assert_cmpuint (job->seen[seq], ==, 0);
    job->seen[seq] = 1;
    g_mutex_unlock (&job->lock);
  }
  dq_rxq_release (job->rxq, b);
  g_free (b);
  g_atomic_int_inc (&job->released);
}

/* Keeps up to 4 bursts, releases a random one of them (so out of order), checking
 * every byte first: memory that went back to the kernel early would show here. */
static gpointer
releaser_thread (gpointer data)
{
  ReleaseJob *job = data;
  Stream *st = stream_new (gen_plain, NULL, 0, 0, 1518, 16);
  GRand *rand = g_rand_new_with_seed (g_atomic_int_add (&job->seed, 1));
  DqBurst *kept[4];
  guint n_kept = 0;

  st->ts_lo = job->ts_lo;
  for (;;) {
    DqBurst *b = g_async_queue_pop (job->bursts);
    if (b == &release_done)
      break;
    kept[n_kept++] = b;
    if (n_kept == G_N_ELEMENTS (kept)) {
      guint victim = (guint) g_rand_int_range (rand, 0, (gint32) n_kept);
      if (g_rand_int_range (rand, 0, 8) == 0)
        g_usleep ((gulong) g_rand_int_range (rand, 0, 300));
      releaser_check_release (job, st, kept[victim]);
      kept[victim] = kept[--n_kept];
    }
  }
  while (n_kept > 0)
    releaser_check_release (job, st, kept[--n_kept]);
  g_rand_free (rand);
  stream_free (st);
  return NULL;
}

/* The streaming thread polls while two other threads check and release the bursts in
 * random order. */
static void
test_rx_release_threads (void)
{
  const guint n = 20000;
  DqPort *port = dq_test_port_open (RX_DEVICE);
  /* at most 32 bursts are out, so at most 32 of the 64 blocks are pinned: no drops */
  DqRxConfig c = rx_config (16, 64 << 20, 1518);
  ReleaseJob job;

  memset (&job, 0, sizeof job);
  job.rxq = dq_test_rxq_create (port, &c);
  job.bursts = g_async_queue_new ();
  g_mutex_init (&job.lock);
  job.seen = g_new0 (guint8, n);
  job.ts_lo = realtime_ns ();
  job.seed = 7;
  GThread *threads[2];
  for (guint i = 0; i < 2; i++)
    threads[i] = g_thread_new ("releaser", releaser_thread, &job);
  Sender *s = sender_new (TX_IF);

  guint received = 0, polled = 0;
  gint64 idle_since = mono_ns ();
  for (guint32 sent = 0; received < n;) {
    if (sent < n) {
      sender_send (s, gen_plain, NULL, sent, MIN (256, n - sent));
      sent += MIN (256, n - sent);
    }
    for (;;) {
      /* bounded hand-over: the releasers must keep up with the ring */
      while (polled - (guint) g_atomic_int_get (&job.released) >= 32)
        g_usleep (100);
      DqBurst b;
      GError *error = NULL;
      int r = dq_rxq_poll (job.rxq, &b, sent < n ? 0 : 20 * MS, &error);
      g_assert_no_error (error);
      if (r == 0)
        break;
      received += b.n_packets;
      polled++;
      idle_since = mono_ns ();
      g_async_queue_push (job.bursts, g_memdup2 (&b, sizeof b));
    }
    if (mono_ns () - idle_since > 2000 * MS) {
      DqRxStats st = dq_test_rx_stats (job.rxq);
      g_error ("timed out: %u of %u frames received, %u bursts polled, %d released; "
               "%" G_GUINT64_FORMAT " ring-full drops",
          received, n, polled, g_atomic_int_get (&job.released), st.drops_ring_full);
    }
  }
  for (guint i = 0; i < 2; i++)
    g_async_queue_push (job.bursts, &release_done);
  for (guint i = 0; i < 2; i++)
    g_thread_join (threads[i]);

  g_assert_cmpuint (received, ==, n);
  g_assert_cmpint (g_atomic_int_get (&job.released), ==, (gint) polled);
  for (guint i = 0; i < n; i++)
    g_assert_cmpuint (job.seen[i], ==, 1);
  DqRxStats stats = dq_test_rx_stats (job.rxq);
  g_assert_cmpuint (stats.packets, ==, n);
  g_assert_cmpuint (stats.bursts, ==, polled);
  g_assert_cmpuint (stats.drops_ring_full, ==, 0);

  /* every block went back: the ring takes another full load */
  Stream *st = stream_new (gen_plain, NULL, n, 5000, 1518, 16);
  send_and_receive (s, st, job.rxq, n, 5000);
  stream_free (st);

  sender_free (s);
  g_free (job.seen);
  g_mutex_clear (&job.lock);
  g_async_queue_unref (job.bursts);
  dq_rxq_destroy (job.rxq);
  dq_port_unref (port);
}

/* ---- link down and up again ---- */

static void
link_set (const char *ifname, const char *state)
{
  GError *error = NULL;
  g_assert_true (dq_netns_ip (netns, &error, "link", "set", "dev", ifname, state, NULL));
  g_assert_no_error (error);
  if (strcmp (state, "up") == 0) {
    g_assert_true (dq_netns_wait_up (netns, TX_IF, 5000, &error));
    g_assert_true (dq_netns_wait_up (netns, RX_IF, 5000, &error));
    g_assert_no_error (error);
  }
}

static void
test_rx_link_flap (void)
{
  RxRig rig;
  rx_rig_open (&rig, rx_config (32, 4 << 20, 1518));
  Stream *st = stream_new (gen_plain, NULL, 0, 100, 1518, 32);

  send_and_receive (rig.s, st, rig.rxq, 0, 100);

  /* the socket reports ENETDOWN; polls keep timing out normally, without error */
  link_set (RX_IF, "down");
  for (guint i = 0; i < 3; i++) {
    DqBurst b;
    GError *error = NULL;
    gint64 t0 = mono_ns ();
    g_assert_cmpint (dq_rxq_poll (rig.rxq, &b, 30 * MS, &error), ==, 0);
    g_assert_no_error (error);
    g_assert_cmpint (mono_ns () - t0, >=, 30 * MS);
  }
  link_set (RX_IF, "up");
  stream_expect_more (st, 100, 100);
  send_and_receive (rig.s, st, rig.rxq, 100, 100);
  g_assert_cmpuint (dq_test_rx_stats (rig.rxq).packets, ==, 200);

  stream_free (st);
  rx_rig_close (&rig);
}

/* ---------------------------------------------------------------------------------- */
/* TX */

typedef struct {
  DqRxQueue *rxq;
  Stream *st;
  gint received; /* atomic */
} RxJob;

static gpointer
rx_thread (gpointer data)
{
  RxJob *job = data;
  Stream *st = job->st;

  while (st->next < st->expect->len) {
    DqBurst b;
    GError *error = NULL;
    int r = dq_rxq_poll (job->rxq, &b, 5000 * MS, &error);
    g_assert_no_error (error);
    if (r == 0)
      g_error ("TX test: receiver timed out after %u of %u frames", st->next, st->expect->len);
    stream_check_burst (st, &b);
    dq_rxq_release (job->rxq, &b);
    g_atomic_int_set (&job->received, (gint) st->next);
  }
  return NULL;
}

/* builds frames first .. first + n - 1 (n <= 32) into `frames` */
static void
frames_make (
    TestFrame *frames, const guint8 **ptrs, guint32 *lens, FrameGen gen, guint32 first, guint n)
{
  for (guint j = 0; j < n; j++) {
    FrameSpec spec;
    gen (first + j, &spec, NULL);
    frame_build (first + j, &spec, &frames[j]);
    ptrs[j] = frames[j].wire;
    lens[j] = frames[j].wire_len;
  }
}

/* TX queue on one end, RX queue on the other: 100 000 frames of mixed sizes,
 * byte-exact, in order, counted. */
static void
test_tx_frames (void)
{
  const guint n = 100000, burst = 32;
  DqPort *tx_port = dq_test_port_open (TX_DEVICE);
  DqPort *rx_port = dq_test_port_open (RX_DEVICE);
  DqRxConfig c = rx_config (64, 128 << 20, 1518);
  c.burst_timeout_ns = 2 * MS;
  RxJob job = { dq_test_rxq_create (rx_port, &c), NULL, 0 };
  job.st = stream_new (gen_plain, NULL, 0, n, 1518, 64);
  DqTxConfig tc = { 0, 0 }; /* defaults: 4 MiB ring, MTU-sized frames */
  DqTxQueue *txq = dq_test_txq_create (tx_port, &tc);
  GError *error = NULL;

  TestFrame *frames = g_new (TestFrame, burst);
  const guint8 *ptrs[32];
  guint32 lens[32];
  guint64 bytes = 0;
  GThread *thread = g_thread_new ("rx", rx_thread, &job);

  gint64 t0 = mono_ns ();
  for (guint32 seq = 0; seq < n; seq += burst) {
    guint k = MIN (burst, n - seq);
    frames_make (frames, ptrs, lens, gen_plain, seq, k);
    for (guint j = 0; j < k; j++)
      bytes += lens[j];
    /* keep the receiver within reach of its ring */
    while (seq - (guint32) g_atomic_int_get (&job.received) > 8192)
      g_usleep (200);
    int sent = dq_txq_send (txq, ptrs, lens, k, &error);
    g_assert_no_error (error);
    g_assert_cmpint (sent, ==, (int) k);
  }
  g_assert_true (dq_txq_flush (txq, &error));
  g_assert_no_error (error);
  gint64 t_sent = mono_ns ();
  g_thread_join (thread);
  gint64 t1 = mono_ns ();
  stream_check_ts_hi (job.st);
  assert_rx_quiet (job.rxq, 20);

  DqTxStats ts = dq_test_tx_stats (txq);
  g_assert_cmpuint (ts.packets, ==, n);
  g_assert_cmpuint (ts.bytes, ==, bytes);
  g_assert_cmpuint (ts.bursts, ==, (n + burst - 1) / burst);
  g_assert_cmpuint (ts.errors, ==, 0);
  DqRxStats rs = dq_test_rx_stats (job.rxq);
  g_assert_cmpuint (rs.packets, ==, n);
  g_assert_cmpuint (rs.bytes, ==, bytes);
  g_assert_cmpuint (rs.drops_ring_full, ==, 0);
  g_test_message ("tx: %u frames, %" G_GUINT64_FORMAT " bytes; send %.3f Mpps "
                  "(%.2f Gbit/s), end to end %.3f Mpps; %" G_GUINT64_FORMAT " ring-full waits, "
                  "%" G_GUINT64_FORMAT " rx bursts",
      n, bytes, n / ((t_sent - t0) / 1e3), bytes * 8 / (double) (t_sent - t0),
      n / ((t1 - t0) / 1e3), ts.ring_full_waits, rs.bursts);

  g_free (frames);
  dq_txq_destroy (txq);
  stream_free (job.st);
  dq_rxq_destroy (job.rxq);
  dq_port_unref (rx_port);
  dq_port_unref (tx_port);
}

/* TX frames the kernel would refuse are skipped and counted; the others go out. */
static void
gen_tx_mixed (guint32 seq, FrameSpec *spec, gpointer ctx)
{
  spec_udp (spec, 60 + seq * 40);
  if (seq == 3) {
    spec->vlan = 7; /* 1514 + tag = 1518: allowed with an 802.1Q tag */
    spec->len = 1514;
  }
}

/* The TX tests' two ends: a TX queue on TX_DEVICE (ring_bytes, max_packet; 0: defaults) and an
 * RX queue on RX_DEVICE (a 64-packet burst, rx_ring bytes) that receives what it sends. */
typedef DqTestLink TxLink;

static void
tx_link_open (TxLink *l, gsize rx_ring, gsize ring_bytes, guint max_packet)
{
  DqRxConfig c = rx_config (64, rx_ring, 1518);
  DqTxConfig tc = { ring_bytes, max_packet };
  dq_test_link_open (l, TX_DEVICE, &tc, RX_DEVICE, &c);
}

static void
test_tx_bad_frames (void)
{
  TxLink l;
  tx_link_open (&l, 1 << 20, 1 << 20, 2000);
  GError *error = NULL;

  TestFrame good[5];
  for (guint32 seq = 0; seq < 5; seq++) {
    FrameSpec spec;
    gen_tx_mixed (seq, &spec, NULL);
    frame_build (seq, &spec, &good[seq]);
  }
  static guint8 big[3000];
  memcpy (big, good[0].wire, 60);
  TestFrame *oversize = g_new (TestFrame, 1);
  FrameSpec spec;
  spec_udp (&spec, 1600); /* fits the slot (2000), but not the MTU */
  frame_build (99, &spec, oversize);

  const guint8 *ptrs[] = {
    good[0].wire,
    good[0].wire,
    good[1].wire,
    big,
    good[2].wire,
    oversize->wire,
    good[3].wire,
    good[4].wire,
    good[4].wire,
  };
  guint32 lens[] = {
    10,
    good[0].wire_len,
    good[1].wire_len,
    3000,
    good[2].wire_len,
    oversize->wire_len,
    good[3].wire_len,
    13,
    good[4].wire_len,
  };
  Stream *st = stream_new (gen_tx_mixed, NULL, 0, 5, 1518, 64);
  /* every frame is consumed: 5 queued, 4 refused and counted */
  int sent = dq_txq_send (l.txq, ptrs, lens, G_N_ELEMENTS (ptrs), &error);
  g_assert_no_error (error);
  g_assert_cmpint (sent, ==, (int) G_N_ELEMENTS (ptrs));
  g_assert_true (dq_txq_flush (l.txq, &error));

  DqTxStats ts = dq_test_tx_stats (l.txq);
  g_assert_cmpuint (ts.packets, ==, 5);
  g_assert_cmpuint (ts.errors, ==, 4);
  g_assert_cmpuint (ts.bursts, ==, 1);

  stream_receive (st, l.rxq, 2000, NULL);
  assert_rx_quiet (l.rxq, 20);
  g_assert_cmpuint (dq_test_rx_stats (l.rxq).packets, ==, 5);

  stream_free (st);
  g_free (oversize);
  dq_test_link_close (&l);
}


/* ---- small TX ring: the sender waits for slots ---- */

static void
test_tx_small_ring (void)
{
  const guint n = 3200, burst = 16;
  TxLink l;
  tx_link_open (&l, 8 << 20, 8192, 1518); /* 4 slots of 2 KiB */
  Stream *st = stream_new (gen_plain, NULL, 0, n, 1518, 64);
  TestFrame *frames = g_new (TestFrame, burst);
  const guint8 *ptrs[16];
  guint32 lens[16];

  for (guint32 seq = 0; seq < n; seq += burst) {
    GError *error = NULL;
    frames_make (frames, ptrs, lens, gen_plain, seq, burst);
    g_assert_cmpint (dq_txq_send (l.txq, ptrs, lens, burst, &error), ==, (int) burst);
    g_assert_no_error (error);
    stream_drain (st, l.rxq);
  }
  GError *error = NULL;
  g_assert_true (dq_txq_flush (l.txq, &error));
  g_assert_no_error (error);
  stream_receive (st, l.rxq, 2000, NULL);

  DqTxStats ts = dq_test_tx_stats (l.txq);
  g_test_message (
      "4-slot ring: %" G_GUINT64_FORMAT " ring-full waits for %u frames", ts.ring_full_waits, n);
  g_assert_cmpuint (ts.packets, ==, n);
  g_assert_cmpuint (ts.bytes, ==, st->bytes);
  g_assert_cmpuint (ts.errors, ==, 0);
  g_assert_cmpuint (ts.ring_full_waits, >=, n / 4 - n / burst);

  g_free (frames);
  stream_free (st);
  dq_test_link_close (&l);
}

/* A wakeup makes a sender that has to wait for a slot return early, without an error,
 * with the number of frames it consumed; those still go out. */
static void
test_tx_wakeup (void)
{
  TxLink l;
  tx_link_open (&l, 1 << 20, 8192, 1518); /* 4 slots */
  TestFrame *frames = g_new (TestFrame, 16);
  const guint8 *ptrs[16];
  guint32 lens[16];
  GError *error = NULL;
  DqTxStats ts;

  Stream *st = stream_new (gen_plain, NULL, 0, 4, 1518, 64);
  frames_make (frames, ptrs, lens, gen_plain, 0, 16);
  dq_txq_wakeup (l.txq);
  g_assert_cmpint (dq_txq_send (l.txq, ptrs, lens, 16, &error), ==, 4);
  g_assert_no_error (error);
  ts = dq_test_tx_stats (l.txq);
  g_assert_cmpuint (ts.packets, ==, 4);
  g_assert_cmpuint (ts.ring_full_waits, ==, 1);
  g_assert_true (dq_txq_flush (l.txq, &error));
  stream_receive (st, l.rxq, 2000, NULL);
  assert_rx_quiet (l.rxq, 20);

  /* the wakeup was used up: the next send goes through whole */
  frames_make (frames, ptrs, lens, gen_plain, 4, 16);
  stream_expect_more (st, 4, 16);
  g_assert_cmpint (dq_txq_send (l.txq, ptrs, lens, 16, &error), ==, 16);
  g_assert_no_error (error);
  g_assert_true (dq_txq_flush (l.txq, &error));
  stream_receive (st, l.rxq, 2000, NULL);

  stream_free (st);
  g_free (frames);
  dq_test_link_close (&l);
}

/* Interface down: the send reports it, the frames wait in the ring and leave with the
 * flush once the interface is up again. */
static void
test_tx_link_down (void)
{
  TxLink l;
  tx_link_open (&l, 1 << 20, 0, 0);
  TestFrame *frames = g_new (TestFrame, 8);
  const guint8 *ptrs[8];
  guint32 lens[8];
  GError *error = NULL;

  Stream *st = stream_new (gen_plain, NULL, 0, 8, 1518, 64);
  frames_make (frames, ptrs, lens, gen_plain, 0, 8);
  link_set (TX_IF, "down");
  g_assert_cmpint (dq_txq_send (l.txq, ptrs, lens, 8, &error), ==, -1);
  g_assert_error (error, DQ_ERROR, DQ_ERROR_IO);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "down"));
  g_clear_error (&error);
  g_assert_false (dq_txq_flush (l.txq, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_IO);
  g_clear_error (&error);
  link_set (TX_IF, "up");

  g_assert_true (dq_txq_flush (l.txq, &error));
  g_assert_no_error (error);
  stream_receive (st, l.rxq, 2000, NULL);
  DqTxStats ts = dq_test_tx_stats (l.txq);
  g_assert_cmpuint (ts.packets, ==, 8);
  g_assert_cmpuint (ts.errors, ==, 0);

  stream_free (st);
  g_free (frames);
  dq_test_link_close (&l);
}

/* ---------------------------------------------------------------------------------- */

int
main (int argc, char **argv)
{
  GError *error = NULL;

  /* before any thread exists: threads inherit the namespace */
  netns = dq_netns_setup_or_skip (TX_IF, RX_IF, 1500);
  if (!dq_netns_ip (
          netns, &error, "link", "set", "dev", TX_IF, "address", "02:00:00:00:0a:01", NULL) ||
      !dq_netns_ip (
          netns, &error, "link", "set", "dev", RX_IF, "address", "02:00:00:00:0b:01", NULL))
    g_error ("%s", error->message);

  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/afpacket/port/info", test_port_info);
  g_test_add_func ("/afpacket/port/bad-device", test_port_bad_device);
  g_test_add_func ("/afpacket/config/errors", test_config_errors);
  g_test_add_func ("/afpacket/rx/frames", test_rx_frames);
  g_test_add_func ("/afpacket/rx/truncate", test_rx_truncate);
  g_test_add_func ("/afpacket/rx/flows", test_rx_flows);
  g_test_add_func ("/afpacket/rx/burst-split", test_rx_burst_split);
  g_test_add_func ("/afpacket/rx/ring-full", test_rx_ring_full);
  g_test_add_func ("/afpacket/rx/partial-hold", test_rx_partial_hold);
  g_test_add_func ("/afpacket/rx/fanout-2", test_rx_fanout_2);
  g_test_add_func ("/afpacket/rx/fanout-4", test_rx_fanout_4);
  g_test_add_func ("/afpacket/rx/fanout-queue-rules", test_rx_fanout_queue_rules);
  g_test_add_func ("/afpacket/rx/fanout-two-groups", test_rx_fanout_two_groups);
  g_test_add_func ("/afpacket/rx/ignore-outgoing", test_rx_ignore_outgoing);
  g_test_add_func ("/afpacket/rx/wakeup", test_rx_wakeup);
  g_test_add_func ("/afpacket/rx/release-threads", test_rx_release_threads);
  g_test_add_func ("/afpacket/rx/link-flap", test_rx_link_flap);
  g_test_add_func ("/afpacket/tx/frames", test_tx_frames);
  g_test_add_func ("/afpacket/tx/bad-frames", test_tx_bad_frames);
  g_test_add_func ("/afpacket/tx/small-ring", test_tx_small_ring);
  g_test_add_func ("/afpacket/tx/wakeup", test_tx_wakeup);
  g_test_add_func ("/afpacket/tx/link-down", test_tx_link_down);
  int rc = g_test_run ();

  dq_netns_free (netns);
  return rc;
}
