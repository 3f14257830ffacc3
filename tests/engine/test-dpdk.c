/* dpdk engine tests, on DPDK's virtual devices (no NIC, no hugepages):
 *
 *   net_ring       TX queue 0 loops back to RX queue 0 inside the process
 *   net_pcap       RX from a pcap file this test writes, TX into a pcap file that DPDK
 *                  writes and this test reads back
 *   net_af_packet  a veth pair in a private network namespace (root), the other end
 *                  driven by the afpacket engine: frames no DPDK code wrote, and frames
 *                  the afpacket engine checks
 *
 * Frames are Ethernet/IPv4/UDP with a 32-bit sequence number at byte 42 and a payload
 * pattern derived from it; every test checks bytes, order, counts and counters.
 */
#include "daqiri-engine.h"
#include "dq-netns.h"
#include "dq-test-port.h"

#include <glib/gstdio.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define FRAME_MAX 1514
#define SEQ_OFFSET 42
#define MS G_GINT64_CONSTANT (1000000)
#define TX_IF "dqdtx0"
#define RX_IF "dqdrx0"

static gboolean have_netns;
static guint32 next_group = 0x5500;

/* ---------------------------------------------------------------------------------- */
/* frames */

static guint
frame_len (guint32 seq)
{
  /* 60 .. 1514, every size hit */
  return 60 + (seq * 7919u) % (FRAME_MAX - 60 + 1);
}

static guint16
frame_dport (guint32 seq)
{
  return (guint16) (6000 + seq % 4);
}

static void
frame_build (guint8 *f, guint32 seq, guint len)
{
  static const guint8 hdr[42] = { 0x02, 0, 0, 0, 0x0b, 0x01, 0x02, 0, 0, 0, 0x0a, 0x01, 0x08, 0x00,
    0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x13, 0x88, 0, 0, 0, 0, 0,
    0 };
  memcpy (f, hdr, sizeof hdr);
  guint16 ip_len = (guint16) (len - 14), udp_len = (guint16) (len - 34);
  f[16] = ip_len >> 8;
  f[17] = ip_len & 0xff;
  guint16 dport = frame_dport (seq);
  f[36] = dport >> 8;
  f[37] = dport & 0xff;
  f[38] = udp_len >> 8;
  f[39] = udp_len & 0xff;
  f[42] = seq >> 24;
  f[43] = (seq >> 16) & 0xff;
  f[44] = (seq >> 8) & 0xff;
  f[45] = seq & 0xff;
  for (guint i = 46; i < len; i++)
    f[i] = (guint8) (seq * 31 + i);
}

static guint32
frame_seq (const guint8 *f)
{
  return ((guint32) f[42] << 24) | ((guint32) f[43] << 16) | ((guint32) f[44] << 8) | f[45];
}

/* TRUE when the frame is exactly what frame_build (seq, len) wrote */
static gboolean
frame_check (const guint8 *f, guint len, guint32 seq)
{
  guint8 want[FRAME_MAX];
  if (len != frame_len (seq))
    return FALSE;
  frame_build (want, seq, len);
  return memcmp (f, want, len) == 0;
}

/* ---------------------------------------------------------------------------------- */
/* helpers */

static DqRxConfig
rx_config (guint burst_packets, guint64 timeout_ns, gsize ring)
{
  DqRxConfig c = {
    .burst_packets = burst_packets,
    .burst_timeout_ns = timeout_ns,
    .ring_bytes = ring,
    .n_queues = 1,
    .group_id = next_group++,
  };
  return c;
}

static DqTxQueue *
txq_or_fail (DqPort *port)
{
  DqTxConfig c = { 0 };
  return dq_test_txq_create (port, &c);
}

/* A net_ring0 port with one RX queue (the given geometry) and the TX queue: the link's
 * two ends are the one port, whose TX queue 0 loops back to RX queue 0. */
static DqTestLink
ring_open (guint burst_packets, guint64 timeout_ns, gsize ring_bytes)
{
  DqTestLink l;
  DqRxConfig rc = rx_config (burst_packets, timeout_ns, ring_bytes);
  DqTxConfig tc = { 0 };
  dq_test_link_open (&l, "dpdk:net_ring0", &tc, "dpdk:net_ring0", &rc);
  return l;
}

typedef struct {
  DqTxQueue *txq;
  guint32 first, n;
  guint chunk;
  guint pause_us;  /* sleep after each chunk */
  const int *seen; /* frames the receiver has taken (Check.seen), or NULL ... */
  guint max_ahead; /* ... then at most this many sent and not yet taken */
  int consumed;
} Sender;

/* Before a chunk: while more than max_ahead frames are sent and not yet taken, wait (a
 * receiver that stops taking them for 2 s is given up on: the test then fails by counts). */
static void
sender_wait_receiver (const Sender *s)
{
  if (s->seen == NULL)
    return;
  int last = g_atomic_int_get (s->seen);
  gint64 until = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
  while (g_atomic_int_get (&s->consumed) - g_atomic_int_get (s->seen) > (int) s->max_ahead &&
      g_get_monotonic_time () < until) {
    g_usleep (100);
    if (g_atomic_int_get (s->seen) != last) {
      last = g_atomic_int_get (s->seen);
      until = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
    }
  }
}

static gpointer
sender_run (gpointer data)
{
  Sender *s = data;
  guint8 (*buf)[FRAME_MAX] = g_malloc (sizeof (*buf) * s->chunk);
  const guint8 **frames = g_new (const guint8 *, s->chunk);
  guint32 *lens = g_new (guint32, s->chunk);
  guint32 seq = s->first;

  s->consumed = 0;
  while (seq < s->first + s->n) {
    sender_wait_receiver (s);
    guint k = MIN (s->chunk, s->first + s->n - seq);
    for (guint i = 0; i < k; i++) {
      lens[i] = frame_len (seq + i);
      frame_build (buf[i], seq + i, lens[i]);
      frames[i] = buf[i];
    }
    GError *error = NULL;
    int r = dq_txq_send (s->txq, frames, lens, k, &error);
    g_assert_no_error (error);
    if (r > 0) {
      g_atomic_int_add (&s->consumed, r);
      seq += (guint32) r;
    }
    if (r < (int) k)
      break; /* woken */
    if (s->pause_us > 0)
      g_usleep (s->pause_us);
  }
  g_free (lens);
  g_free (frames);
  g_free (buf);
  return NULL;
}

typedef struct {
  guint32 next_seq;
  guint received;
  guint bad;
  guint out_of_order;
  guint ts_backwards;
  guint wrong_flow;
  guint64 last_ts;
  guint max_burst;
  gboolean check_flow;
  int seen; /* `received`, published for a sender that waits for it */
} Check;

static void
check_burst (Check *c, const DqBurst *b)
{
  g_assert_cmpuint (b->memory, ==, DQ_MEMORY_HOST);
  c->max_burst = MAX (c->max_burst, b->n_packets);
  for (guint i = 0; i < b->n_packets; i++) {
    const DqPacket *p = &b->packets[i];
    g_assert_cmpuint ((gsize) p->offset + p->length, <=, b->size);
    const guint8 *f = b->data + p->offset;
    guint32 seq = frame_seq (f);
    if (!frame_check (f, p->length, seq))
      c->bad++;
    if (seq != c->next_seq)
      c->out_of_order++;
    c->next_seq = seq + 1;
    if (p->timestamp < c->last_ts)
      c->ts_backwards++;
    c->last_ts = p->timestamp;
    if (c->check_flow && p->flow_id != 100u + frame_dport (seq) - 6000u)
      c->wrong_flow++;
    c->received++;
  }
}

/* Polls until n packets arrived or a poll times out (timeout_ms). */
static void
receive (DqRxQueue *rxq, Check *c, guint n, guint timeout_ms)
{
  while (c->received < n) {
    DqBurst b;
    GError *error = NULL;
    int r = dq_rxq_poll (rxq, &b, (gint64) timeout_ms * MS, &error);
    g_assert_no_error (error);
    if (r == 0)
      break;
    check_burst (c, &b);
    g_atomic_int_set (&c->seen, (int) c->received);
    dq_rxq_release (rxq, &b);
  }
}

static void
assert_clean (const Check *c, guint n)
{
  g_assert_cmpuint (c->bad, ==, 0);
  g_assert_cmpuint (c->out_of_order, ==, 0);
  g_assert_cmpuint (c->ts_backwards, ==, 0);
  g_assert_cmpuint (c->wrong_flow, ==, 0);
  g_assert_cmpuint (c->received, ==, n);
}

/* Receives the n frames the sender thread th sends, joins it, checks that it sent them all and
 * that they arrived clean; the queue's stats, which count all n. */
static DqRxStats
receive_all_sent (DqRxQueue *rxq, Check *c, GThread *th, const Sender *s, guint n)
{
  receive (rxq, c, n, 2000);
  g_thread_join (th);
  g_assert_cmpint (s->consumed, ==, (int) n);
  assert_clean (c, n);
  DqRxStats rs;
  dq_rxq_stats (rxq, &rs);
  g_assert_cmpuint (rs.packets, ==, n);
  return rs;
}

/* ---------------------------------------------------------------------------------- */
/* net_ring */

/* 100 000 frames of 60..1514 bytes sent by a thread, received in order, byte for byte;
 * bursts never longer than burst-packets; counters exact on both sides. */
static void
test_ring_loopback (void)
{
  const guint n = 100000;
  DqPort *port = dq_test_port_open ("dpdk:net_ring0");
  const DqPortInfo *info = dq_port_info (port);
  g_assert_cmpstr (info->name, ==, "dpdk");
  g_assert_cmpint (info->clock_id, ==, CLOCK_REALTIME);
  g_assert_cmpuint (info->mtu, ==, 1500);
  g_assert_false (info->device_dma); /* the PMD's mbufs are copied into the ring */

  DqRxConfig rc = rx_config (64, 1 * MS, 0);
  DqRxQueue *rxq = dq_test_rxq_create (port, &rc);
  g_assert_cmpuint (dq_rxq_ring_bytes (rxq), <=, (gsize) 64 << 20);
  g_assert_cmpuint (dq_rxq_ring_bytes (rxq), >=, (gsize) 32 << 20);
  DqTxQueue *txq = txq_or_fail (port);

  guint64 t_before = dq_port_time (port);
  Sender s = { .txq = txq, .first = 0, .n = n, .chunk = 100 };
  GThread *th = g_thread_new ("sender", sender_run, &s);
  Check c = { 0 };
  receive (rxq, &c, n, 2000);
  g_thread_join (th);
  guint64 t_after = dq_port_time (port);

  g_assert_cmpint (s.consumed, ==, (int) n);
  assert_clean (&c, n);
  g_assert_cmpuint (c.max_burst, <=, 64);
  g_assert_cmpuint (c.last_ts, >=, t_before);
  g_assert_cmpuint (c.last_ts, <=, t_after);

  guint64 bytes = 0;
  for (guint i = 0; i < n; i++)
    bytes += frame_len (i);
  DqRxStats rs;
  DqTxStats ts;
  dq_rxq_stats (rxq, &rs);
  dq_txq_stats (txq, &ts);
  g_assert_cmpuint (rs.packets, ==, n);
  g_assert_cmpuint (rs.bytes, ==, bytes);
  g_assert_cmpuint (rs.drops_ring_full, ==, 0);
  g_assert_cmpuint (rs.drops_filtered, ==, 0);
  g_assert_cmpuint (rs.truncated, ==, 0);
  g_assert_cmpuint (rs.bursts, >=, n / 64);
  g_assert_cmpuint (ts.packets, ==, n);
  g_assert_cmpuint (ts.bytes, ==, bytes);
  g_assert_cmpuint (ts.errors, ==, 0);

  dq_txq_destroy (txq);
  dq_rxq_destroy (rxq);
  dq_port_unref (port);
}

/* Flow rules run in software: marks per destination port, the rest filtered and
 * counted. */
static void
test_ring_flows (void)
{
  const guint n = 4000;
  DqPort *port = dq_test_port_open ("dpdk:net_ring0");
  DqFlowRule *rules;
  guint n_rules;
  GError *error = NULL;
  g_assert_true (dq_flow_parse ("proto=udp dst-port=6000 mark=100; proto=udp "
                                "dst-port=6002 mark=102",
      &rules, &n_rules, &error));
  DqRxConfig rc = rx_config (32, 1 * MS, 0);
  rc.flows = rules;
  rc.n_flows = n_rules;
  DqRxQueue *rxq = dq_test_rxq_create (port, &rc);
  DqTxQueue *txq = txq_or_fail (port);

  Sender s = { .txq = txq, .first = 0, .n = n, .chunk = 64 };
  GThread *th = g_thread_new ("sender", sender_run, &s);
  guint got = 0, wrong = 0, bad = 0;
  DqBurst b;
  while (got < n / 2) {
    int r = dq_rxq_poll (rxq, &b, 2000 * MS, &error);
    g_assert_no_error (error);
    if (r == 0)
      break;
    for (guint i = 0; i < b.n_packets; i++) {
      const guint8 *f = b.data + b.packets[i].offset;
      guint32 seq = frame_seq (f);
      guint dport = frame_dport (seq);
      if (!frame_check (f, b.packets[i].length, seq))
        bad++;
      if ((dport != 6000 && dport != 6002) || b.packets[i].flow_id != 100 + dport - 6000)
        wrong++;
      got++;
    }
    dq_rxq_release (rxq, &b);
  }
  g_thread_join (th);
  /* and nothing after them: the other half is filtered */
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 50 * MS, &error), ==, 0);
  g_assert_cmpuint (bad, ==, 0);
  g_assert_cmpuint (wrong, ==, 0);
  g_assert_cmpuint (got, ==, n / 2);
  DqRxStats rs;
  dq_rxq_stats (rxq, &rs);
  g_assert_cmpuint (rs.packets, ==, n / 2);
  g_assert_cmpuint (rs.drops_filtered, ==, n / 2);

  g_free (rules);
  dq_txq_destroy (txq);
  dq_rxq_destroy (rxq);
  dq_port_unref (port);
}

/* truncated counts delivered packets only, as on every engine: frames the rules filter
 * are not counted however long they were. */
static void
test_ring_truncated_after_filter (void)
{
  const guint n = 400, max_packet = 128;
  DqPort *port = dq_test_port_open ("dpdk:net_ring0");
  DqFlowRule *rules;
  guint n_rules;
  GError *error = NULL;
  g_assert_true (dq_flow_parse ("proto=udp dst-port=6001 mark=1", &rules, &n_rules, &error));
  DqRxConfig rc = rx_config (32, 1 * MS, 0);
  rc.flows = rules;
  rc.n_flows = n_rules;
  rc.max_packet_size = max_packet;
  DqRxQueue *rxq = dq_test_rxq_create (port, &rc);
  DqTxQueue *txq = txq_or_fail (port);

  guint want = 0, want_truncated = 0;
  for (guint seq = 0; seq < n; seq++) {
    if (frame_dport (seq) == 6001) {
      want++;
      want_truncated += frame_len (seq) > max_packet;
    }
  }
  Sender s = { .txq = txq, .first = 0, .n = n, .chunk = 64 };
  GThread *th = g_thread_new ("sender", sender_run, &s);
  guint got = 0, flagged = 0;
  DqBurst b;
  while (got < want && dq_rxq_poll (rxq, &b, 2000 * MS, &error) == 1) {
    for (guint i = 0; i < b.n_packets; i++)
      flagged += (b.packets[i].flags & DQ_PACKET_FLAG_TRUNCATED) != 0;
    got += b.n_packets;
    dq_rxq_release (rxq, &b);
  }
  g_assert_no_error (error);
  g_thread_join (th);
  g_assert_cmpuint (got, ==, want);
  g_assert_cmpuint (flagged, ==, want_truncated);
  DqRxStats rs;
  dq_rxq_stats (rxq, &rs);
  g_assert_cmpuint (rs.packets, ==, want);
  g_assert_cmpuint (rs.truncated, ==, want_truncated);
  g_assert_cmpuint (rs.drops_filtered, ==, n - want);

  g_free (rules);
  dq_txq_destroy (txq);
  dq_rxq_destroy (rxq);
  dq_port_unref (port);
}

/* A partial burst is handed out after burst-timeout, not at the end of the poll's own
 * timeout; an empty poll returns 0 at its timeout. */
static void
test_ring_burst_timeout (void)
{
  DqTestLink ring = ring_open (256, 5 * MS, 0);
  DqRxQueue *rxq = ring.rxq;
  GError *error = NULL;
  DqBurst b;

  gint64 t0 = g_get_monotonic_time ();
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 30 * MS, &error), ==, 0);
  gint64 waited = g_get_monotonic_time () - t0;
  g_assert_cmpint (waited, >=, 30000);
  g_assert_cmpint (waited, <, 1000000);

  Sender s = { .txq = ring.txq, .first = 0, .n = 5, .chunk = 5 };
  sender_run (&s);
  g_assert_cmpint (s.consumed, ==, 5);
  t0 = g_get_monotonic_time ();
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 2000 * MS, &error), ==, 1);
  waited = g_get_monotonic_time () - t0;
  g_assert_cmpuint (b.n_packets, ==, 5);
  g_assert_cmpint (waited, >=, 4000);
  g_assert_cmpint (waited, <, 1000000);
  Check c = { 0 };
  check_burst (&c, &b);
  assert_clean (&c, 5);
  dq_rxq_release (rxq, &b);
  dq_test_link_close (&ring);
}

/* Polls that return at once (timeout 0, as daqirisrc's first look at its queues) leave a
 * partial burst open: 300 packets make one burst of burst-packets 256, filled over several
 * device reads of 32, then one of the other 44 after burst-timeout (1 s). */
static void
test_ring_burst_fills_across_polls (void)
{
  DqTestLink ring = ring_open (256, 1000 * MS, 0);
  Sender s = { .txq = ring.txq, .first = 0, .n = 300, .chunk = 100 };
  sender_run (&s);
  g_assert_cmpint (s.consumed, ==, 300);

  GError *error = NULL;
  DqBurst b;
  Check c = { 0 };
  guint polls = 0;
  int r;
  while ((r = dq_rxq_poll (ring.rxq, &b, 0, &error)) == 0 && polls < 100000)
    polls++;
  g_assert_no_error (error);
  g_assert_cmpint (r, ==, 1);
  g_assert_cmpuint (b.n_packets, ==, 256);
  g_assert_cmpuint (polls, >=, 7); /* 8 reads of 32, the last one completes the burst */
  check_burst (&c, &b);
  dq_rxq_release (ring.rxq, &b);

  gint64 t0 = g_get_monotonic_time ();
  g_assert_cmpint (dq_rxq_poll (ring.rxq, &b, 3000 * MS, &error), ==, 1);
  g_assert_cmpint (g_get_monotonic_time () - t0, >=, 900000);
  g_assert_cmpuint (b.n_packets, ==, 44);
  check_burst (&c, &b);
  dq_rxq_release (ring.rxq, &b);
  assert_clean (&c, 300);
  dq_test_link_close (&ring);
}

/* A reader that holds every burst: the ring fills, polling stops, the net_ring device
 * queue fills, the sender waits (counted), and nothing is lost; once the bursts are
 * released the stream resumes where it stopped. Bursts are released out of order. */
static void
test_ring_held_bursts (void)
{
  const guint n = 6000;
  DqPort *port = dq_test_port_open ("dpdk:net_ring0");
  /* 4 blocks of 32 packets of up to 1536 bytes (48 KiB each); a long burst timeout
   * keeps every burst whole (even when the sender is scheduled late) */
  DqRxConfig rc = rx_config (32, 1000 * MS, 4 * 49152);
  DqRxQueue *rxq = dq_test_rxq_create (port, &rc);
  g_assert_cmpuint (dq_rxq_ring_bytes (rxq), ==, 4 * 49152);
  DqTxQueue *txq = txq_or_fail (port);
  GError *error = NULL;

  Sender s = { .txq = txq, .first = 0, .n = n, .chunk = 50 };
  GThread *th = g_thread_new ("sender", sender_run, &s);
  DqBurst held[4];
  Check c = { 0 };
  for (guint i = 0; i < 4; i++) {
    g_assert_cmpint (dq_rxq_poll (rxq, &held[i], 2000 * MS, &error), ==, 1);
    g_assert_cmpuint (held[i].n_packets, ==, 32);
    check_burst (&c, &held[i]);
  }
  /* ring full: no burst while all four are held, however long the sender keeps sending, and
   * the sender comes to wait (within 5 s: it has about 1150 frames to send until then) */
  DqBurst b;
  DqTxStats ts;
  const gint64 until = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
  do {
    g_assert_cmpint (dq_rxq_poll (rxq, &b, 50 * MS, &error), ==, 0);
    g_assert_no_error (error);
    dq_txq_stats (txq, &ts);
  } while (ts.ring_full_waits == 0 && g_get_monotonic_time () < until);
  g_assert_cmpuint (ts.ring_full_waits, >, 0);
  g_assert_cmpint (g_atomic_int_get (&s.consumed), <, (int) n);

  /* release out of order: the ring continues in order once block 0 is free */
  dq_rxq_release (rxq, &held[2]);
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 50 * MS, &error), ==, 0);
  dq_rxq_release (rxq, &held[0]);
  dq_rxq_release (rxq, &held[3]);
  dq_rxq_release (rxq, &held[1]);
  DqRxStats rs = receive_all_sent (rxq, &c, th, &s, n);
  g_assert_cmpuint (rs.drops_ring_full, ==, 0);

  dq_txq_destroy (txq);
  dq_rxq_destroy (rxq);
  dq_port_unref (port);
}

/* A poll without timeout returns 0 when woken; a sender stuck on a full device returns
 * what it consumed when woken. */
static void
test_ring_wakeups (void)
{
  DqTestLink ring = ring_open (32, 1 * MS, 2 * 49152);
  DqTxQueue *txq = ring.txq;

  DqTestPoll poll;
  dq_test_poll_start (&poll, ring.rxq, -1);
  g_usleep (20000);
  gint64 t0 = g_get_monotonic_time ();
  dq_rxq_wakeup (ring.rxq);
  g_assert_cmpint (dq_test_poll_join (&poll), ==, 0);
  g_assert_cmpint (g_get_monotonic_time () - t0, <, 200000);

  /* nobody polls: the device queue (1024) fills and the sender waits until woken */
  Sender s = { .txq = txq, .first = 0, .n = 5000, .chunk = 5000 };
  GThread *th = g_thread_new ("sender", sender_run, &s);
  g_usleep (50000);
  dq_txq_wakeup (txq);
  g_thread_join (th);
  g_assert_cmpint (s.consumed, >=, 1000);
  g_assert_cmpint (s.consumed, <, 5000);
  DqTxStats ts;
  dq_txq_stats (txq, &ts);
  g_assert_cmpuint (ts.packets, ==, (guint64) s.consumed);
  g_assert_cmpuint (ts.ring_full_waits, >, 0);
  dq_test_link_close (&ring);
}

/* Frames the device cannot take are refused and counted, the good ones sent. */
static void
test_ring_bad_frames (void)
{
  DqTestLink ring = ring_open (32, 1 * MS, 0);
  guint8 good[3][FRAME_MAX], big[4000] = { 0 }, tiny[10] = { 0 };
  const guint8 *frames[5] = { tiny, good[0], big, good[1], good[2] };
  guint32 lens[5] = { 10, 0, 4000, 0, 0 };
  for (guint i = 0; i < 3; i++) {
    guint idx = i == 0 ? 1 : i + 2;
    lens[idx] = frame_len (i);
    frame_build (good[i], i, lens[idx]);
  }
  GError *error = NULL;
  g_assert_cmpint (dq_txq_send (ring.txq, frames, lens, 5, &error), ==, 5);
  g_assert_no_error (error);
  Check c = { 0 };
  receive (ring.rxq, &c, 3, 200);
  assert_clean (&c, 3);
  DqTxStats ts;
  dq_txq_stats (ring.txq, &ts);
  g_assert_cmpuint (ts.packets, ==, 3);
  g_assert_cmpuint (ts.errors, ==, 2);
  dq_test_link_close (&ring);
}


/* Bad devices and configurations: clear errors naming the value and what is allowed. */
static void
test_bad_input (void)
{
  GError *error = NULL;
  g_assert_null (dq_port_open ("dpdk:", &error));
  dq_test_expect_error (
      error, DQ_ERROR_DEVICE, (const char *[]){ "needs a name after 'dpdk:'", NULL });
  error = NULL;
  g_assert_null (dq_port_open ("dpdk:net_nosuchdriver0", &error));
  dq_test_expect_error (error, DQ_ERROR_DEVICE,
      (const char *[]){ "net_nosuchdriver0", "cannot probe", "DAQIRI_DPDK_EAL_ARGS", NULL });

  DqPort *port = dq_test_port_open ("dpdk:net_ring0");
  /* the same device under another string */
  error = NULL;
  g_assert_null (dq_port_open ("dpdk:net_ring0,nodeaction=x", &error));
  dq_test_expect_error (error, DQ_ERROR_BUSY, (const char *[]){ "already open", NULL });

  DqRxConfig rc = rx_config (256, 1 * MS, 65536);
  error = NULL;
  g_assert_null (dq_rxq_create (port, &rc, &error));
  dq_test_expect_error (
      error, DQ_ERROR_CONFIG, (const char *[]){ "ring-size 65536", "burst-packets", NULL });

  rc = rx_config (32, 1 * MS, 0);
  rc.max_packet_size = 70000;
  error = NULL;
  g_assert_null (dq_rxq_create (port, &rc, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG,
      (const char *[]){ "max-packet-size 70000", "allowed 64 .. 65535", NULL });
  /* larger than an mbuf: capped (the device has no longer frames to deliver) */
  rc.max_packet_size = 9216;
  error = NULL;
  DqRxQueue *big = dq_rxq_create (port, &rc, &error);
  g_assert_no_error (error);
  dq_rxq_destroy (big);

  rc = rx_config (32, 1 * MS, 0);
  rc.n_queues = 1000;
  error = NULL;
  g_assert_null (dq_rxq_create (port, &rc, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG, (const char *[]){ "queues 1000", NULL });

  DqFlowRule *rules;
  guint n_rules;
  g_assert_true (dq_flow_parse ("proto=udp queue=1", &rules, &n_rules, NULL));
  rc = rx_config (32, 1 * MS, 0);
  rc.n_queues = 2;
  rc.flows = rules;
  rc.n_flows = n_rules;
  error = NULL;
  g_assert_null (dq_rxq_create (port, &rc, &error));
  dq_test_expect_error (error, DQ_ERROR_FLOW,
      (const char *[]){ "flow rule 1", "names queue 1", "rte_flow: ", "RSS alone", NULL });
  rc.n_queues = 1;
  error = NULL;
  g_assert_null (dq_rxq_create (port, &rc, &error));
  dq_test_expect_error (error, DQ_ERROR_FLOW, (const char *[]){ "queue=0 .. 0", NULL });
  g_free (rules);

  /* one queue index, one user */
  rc = rx_config (32, 1 * MS, 0);
  DqRxQueue *rxq = dq_test_rxq_create (port, &rc);
  error = NULL;
  g_assert_null (dq_rxq_create (port, &rc, &error));
  dq_test_expect_error (error, DQ_ERROR_BUSY, (const char *[]){ "RX queue 0 is in use", NULL });
  /* and no reconfiguration under a running queue */
  rc.n_queues = 2;
  rc.queue_index = 1;
  error = NULL;
  g_assert_null (dq_rxq_create (port, &rc, &error));
  dq_test_expect_error (error, DQ_ERROR_BUSY, (const char *[]){ "runs 1 RX queue", NULL });
  dq_rxq_destroy (rxq);

  DqTxConfig tc = { .max_packet_size = 20 };
  error = NULL;
  g_assert_null (dq_txq_create (port, &tc, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG, (const char *[]){ "max-packet-size 20", NULL });
  tc = (DqTxConfig){ .scheduled = TRUE };
  error = NULL;
  g_assert_null (dq_txq_create (port, &tc, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG, (const char *[]){ "schedule", "tx_pp", NULL });
  tc = (DqTxConfig){ .rate_bps = 5000000 };
  error = NULL;
  g_assert_null (dq_txq_create (port, &tc, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG, (const char *[]){ "rate 5000000 bit/s", NULL });
  dq_port_unref (port);
}

/* Several queues on one net_ring port: queue i receives what TX queue i sends; with one
 * TX queue everything arrives on queue 0 and queue 1 stays empty, but both poll and
 * release independently, and the device is reconfigured once every queue is gone. */
static void
test_ring_two_queues (void)
{
  DqPort *port = dq_test_port_open ("dpdk:net_ring0");
  DqRxConfig rc = rx_config (32, 1 * MS, 0);
  rc.n_queues = 2;
  DqRxQueue *q0 = dq_test_rxq_create (port, &rc);
  rc.queue_index = 1;
  DqRxQueue *q1 = dq_test_rxq_create (port, &rc);
  DqTxQueue *txq = txq_or_fail (port);
  Sender s = { .txq = txq, .first = 0, .n = 500, .chunk = 100 };
  sender_run (&s);
  Check c = { 0 };
  receive (q0, &c, 500, 200);
  assert_clean (&c, 500);
  DqBurst b;
  GError *error = NULL;
  g_assert_cmpint (dq_rxq_poll (q1, &b, 10 * MS, &error), ==, 0);
  /* while running: a rule naming a queue needs rte_flow, which net_ring has not; rules
   * without a queue key are taken */
  DqFlowRule *rules;
  guint n_rules;
  g_assert_true (dq_flow_parse ("proto=udp mark=5; proto=tcp queue=1", &rules, &n_rules, NULL));
  g_assert_false (dq_rxq_set_flows (q1, DQ_RX_FILTER_RULES, rules, n_rules, &error));
  dq_test_expect_error (error, DQ_ERROR_FLOW,
      (const char *[]){ "flow rule 2", "proto=tcp queue=1", "rte_flow: ", NULL });
  error = NULL;
  g_assert_true (dq_rxq_set_flows (q1, DQ_RX_FILTER_RULES, rules, 1, &error));
  g_assert_no_error (error);
  g_free (rules);
  dq_rxq_destroy (q1);
  dq_rxq_destroy (q0);

  /* back to one queue while a sender exists */
  rc = rx_config (32, 1 * MS, 0);
  DqRxQueue *q = dq_test_rxq_create (port, &rc);
  s.first = 500;
  sender_run (&s);
  Check c2 = { .next_seq = 500 };
  receive (q, &c2, 500, 200);
  assert_clean (&c2, 500);
  dq_rxq_destroy (q);
  dq_txq_destroy (txq);
  dq_port_unref (port);
}

/* ---------------------------------------------------------------------------------- */
/* net_pcap: files in and out */

static void
pcap_write_header (FILE *f)
{
  guint32 magic = 0xa1b2c3d4, snap = 65535, link = 1, zero = 0;
  guint16 major = 2, minor = 4;
  fwrite (&magic, 4, 1, f);
  fwrite (&major, 2, 1, f);
  fwrite (&minor, 2, 1, f);
  fwrite (&zero, 4, 1, f);
  fwrite (&zero, 4, 1, f);
  fwrite (&snap, 4, 1, f);
  fwrite (&link, 4, 1, f);
}

/* Reads a classic pcap file (microsecond or nanosecond magic, host byte order) and
 * checks that it holds frames first .. first+n-1 in order. */
static void
pcap_check (const char *path, guint32 first, guint n)
{
  gchar *data;
  gsize size;
  GError *error = NULL;
  g_assert_true (g_file_get_contents (path, &data, &size, &error));
  g_assert_cmpuint (size, >=, 24);
  guint32 magic;
  memcpy (&magic, data, 4);
  g_assert_true (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d);
  gsize at = 24;
  guint count = 0;
  while (at + 16 <= size) {
    guint32 incl, orig;
    memcpy (&incl, data + at + 8, 4);
    memcpy (&orig, data + at + 12, 4);
    at += 16;
    g_assert_cmpuint (at + incl, <=, size);
    g_assert_cmpuint (incl, ==, orig);
    const guint8 *f = (const guint8 *) data + at;
    g_assert_cmpuint (frame_seq (f), ==, first + count);
    g_assert_true (frame_check (f, incl, first + count));
    at += incl;
    count++;
  }
  g_assert_cmpuint (at, ==, size);
  g_assert_cmpuint (count, ==, n);
  g_free (data);
}

/* Frames from a pcap file this test wrote arrive byte for byte; frames sent land in the
 * pcap file DPDK writes, byte for byte. */
static void
test_pcap_files (void)
{
  const guint n = 3000;
  gchar *dir = g_dir_make_tmp ("dq-dpdk-XXXXXX", NULL);
  gchar *in = g_build_filename (dir, "in.pcap", NULL);
  gchar *out = g_build_filename (dir, "out.pcap", NULL);
  FILE *f = fopen (in, "wb");
  g_assert_nonnull (f);
  pcap_write_header (f);
  for (guint32 seq = 0; seq < n; seq++) {
    guint8 frame[FRAME_MAX];
    guint32 len = frame_len (seq), sec = 1000 + seq, usec = seq % 1000000;
    frame_build (frame, seq, len);
    fwrite (&sec, 4, 1, f);
    fwrite (&usec, 4, 1, f);
    fwrite (&len, 4, 1, f);
    fwrite (&len, 4, 1, f);
    fwrite (frame, 1, len, f);
  }
  fclose (f);

  gchar *device = g_strdup_printf ("dpdk:net_pcap0,rx_pcap=%s,tx_pcap=%s", in, out);
  DqPort *port = dq_test_port_open (device);
  DqRxConfig rc = rx_config (128, 1 * MS, 0);
  DqRxQueue *rxq = dq_test_rxq_create (port, &rc);
  Check c = { 0 };
  receive (rxq, &c, n, 500);
  assert_clean (&c, n);
  /* the file is read once: then the stream ends, and stays ended */
  DqBurst b;
  GError *error = NULL;
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 20 * MS, &error), ==, DQ_RXQ_END);
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 20 * MS, &error), ==, DQ_RXQ_END);
  g_assert_no_error (error);

  DqTxQueue *txq = txq_or_fail (port);
  Sender s = { .txq = txq, .first = 7, .n = 2500, .chunk = 64 };
  sender_run (&s);
  g_assert_cmpint (s.consumed, ==, 2500);
  g_assert_true (dq_txq_flush (txq, &error));
  g_assert_no_error (error);
  dq_txq_destroy (txq);
  dq_rxq_destroy (rxq);
  dq_port_unref (port); /* closes the device: DPDK flushes the file */
  pcap_check (out, 7, 2500);

  g_unlink (in);
  g_unlink (out);
  g_rmdir (dir);
  g_free (device);
  g_free (in);
  g_free (out);
  g_free (dir);
}

/* ---------------------------------------------------------------------------------- */
/* net_af_packet over veth: the other end is the afpacket engine */

static void
test_af_packet_veth (void)
{
  if (!have_netns) {
    g_test_skip ("needs root for a network namespace");
    return;
  }
  const guint n = 20000;
  /* the PMD's own ring: 16384 frames of 2 KiB */
  DqPort *dpdk = dq_test_port_open ("dpdk:net_af_packet0,iface=" RX_IF ",qpairs=1,"
                                    "blocksz=4096,framesz=2048,framecnt=16384");
  DqPort *afp = dq_test_port_open ("afpacket:" TX_IF);

  /* a kernel interface takes multicast only for joined groups, which dpdk does not join:
   * a rule naming a group is refused, naming it */
  guint n_rules;
  DqFlowRule *group = dq_test_rules_parse ("proto=udp dst=239.1.2.3 mark=1", &n_rules);
  DqRxConfig grc = rx_config (64, 1 * MS, 0);
  grc.flows = group;
  grc.n_flows = n_rules;
  GError *error = NULL;
  g_assert_null (dq_rxq_create (dpdk, &grc, &error));
  dq_test_expect_error (error, DQ_ERROR_FLOW,
      (const char *const[]){ "multicast group 239.1.2.3", "afpacket engine joins", NULL });
  g_free (group);

  /* afpacket -> dpdk */
  DqRxConfig rc = rx_config (64, 1 * MS, 0);
  DqRxQueue *rxq = dq_test_rxq_create (dpdk, &rc);
  DqTxQueue *afp_tx = txq_or_fail (afp);
  /* paced (about 250 kpps), and never more than half the PMD's ring ahead of the receiver:
   * its socket drops silently when that ring overflows */
  Check c = { 0 };
  Sender s = { .txq = afp_tx,
    .first = 0,
    .n = n,
    .chunk = 250,
    .pause_us = 1000,
    .seen = &c.seen,
    .max_ahead = 8192 };
  GThread *th = g_thread_new ("sender", sender_run, &s);
  receive_all_sent (rxq, &c, th, &s, n);

  /* dpdk -> afpacket */
  DqRxConfig arc = rx_config (64, 1 * MS, 0);
  DqRxQueue *afp_rx = dq_test_rxq_create (afp, &arc);
  DqTxQueue *txq = txq_or_fail (dpdk);
  Sender s2 = { .txq = txq, .first = 0, .n = 2000, .chunk = 32 };
  sender_run (&s2);
  g_assert_cmpint (s2.consumed, ==, 2000);
  Check c2 = { 0 };
  receive (afp_rx, &c2, 2000, 1000);
  assert_clean (&c2, 2000);

  dq_txq_destroy (txq);
  dq_rxq_destroy (afp_rx);
  dq_txq_destroy (afp_tx);
  dq_rxq_destroy (rxq);
  dq_port_unref (afp);
  dq_port_unref (dpdk);
}

/* A bad EAL argument list: a clear error that names the variable; later opens give it
 * again (the EAL starts once per process: in a child process of its own here). */
static void
test_bad_eal_args (void)
{
  if (g_test_subprocess ()) {
    g_setenv ("DAQIRI_DPDK_EAL_ARGS", "--no-such-eal-option -m 64", TRUE);
    for (int i = 0; i < 2; i++) {
      GError *error = NULL;
      g_assert_null (dq_port_open ("dpdk:net_null0", &error));
      dq_test_expect_error (error, DQ_ERROR_DEVICE,
          (const char *[]){
              "EAL did not start", "--no-such-eal-option", "from DAQIRI_DPDK_EAL_ARGS", NULL });
    }
    g_setenv ("DAQIRI_DPDK_EAL_ARGS", "'unbalanced", TRUE);
    return;
  }
  g_test_trap_subprocess (NULL, 20 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  DqNetns *ns = NULL;
  gboolean subprocess = FALSE;
  for (int i = 1; i < argc; i++)
    subprocess |= strcmp (argv[i], "--GTestSubprocess") == 0;
  if (!subprocess)
    ns = dq_netns_setup_optional (TX_IF, RX_IF, "the net_af_packet case");
  have_netns = ns != NULL;

  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/dpdk/ring/loopback", test_ring_loopback);
  g_test_add_func ("/dpdk/ring/flows", test_ring_flows);
  g_test_add_func ("/dpdk/ring/truncated-after-filter", test_ring_truncated_after_filter);
  g_test_add_func ("/dpdk/ring/burst-timeout", test_ring_burst_timeout);
  g_test_add_func ("/dpdk/ring/burst-fills-across-polls", test_ring_burst_fills_across_polls);
  g_test_add_func ("/dpdk/ring/held-bursts", test_ring_held_bursts);
  g_test_add_func ("/dpdk/ring/wakeups", test_ring_wakeups);
  g_test_add_func ("/dpdk/ring/bad-frames", test_ring_bad_frames);
  g_test_add_func ("/dpdk/ring/two-queues", test_ring_two_queues);
  g_test_add_func ("/dpdk/bad-input", test_bad_input);
  g_test_add_func ("/dpdk/bad-eal-args", test_bad_eal_args);
  g_test_add_func ("/dpdk/pcap/files", test_pcap_files);
  g_test_add_func ("/dpdk/af-packet/veth", test_af_packet_veth);
  int r = g_test_run ();
  if (ns != NULL)
    dq_netns_free (ns);
  return r;
}
