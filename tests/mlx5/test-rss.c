/* RSS of the emulated ConnectX against an independent oracle, DPDK's software Toeplitz
 * (rte_softrss), which takes the hash input as host-order 32-bit words: source address,
 * destination address, then sport << 16 | dport (struct rte_ipv4_tuple), and the key
 * as the NIC is given it.
 *
 *   hash        emu_toeplitz on random inputs, and emu_rss_hash on built frames: UDP and
 *               TCP (5-tuple: src IP, dst IP, src port, dst port, ConnectX's order),
 *               other IPv4 and fragments (addresses only), one VLAN tag looked through
 *   rqt         frames of many flows injected into an emulated port with 4 and with 3
 *               RX queues in one group (RSS, no rules): every packet lands on the RQ
 *               the oracle's hash picks from the RQT (size the next power of two,
 *               entry i = RQ i mod n), so every flow stays on one queue
 *
 * Built only where DPDK is found (the oracle is its header).
 */
#include "daqiri-engine.h"
#include "emu.h"
#include "emu-net.h"
#include "mlx5-rss.h"
#include "test-util.h"

#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wcast-align"
#include <rte_thash.h>
#pragma GCC diagnostic pop

#define MS G_GINT64_CONSTANT (1000000)
#define FRAME_LEN 64

/* the key as 32-bit-aligned bytes: rte_softrss reads it word by word */
static union {
  guint32 words[MLX5_RSS_KEY_LEN / 4];
  guint8 bytes[MLX5_RSS_KEY_LEN];
} oracle_key;

static guint32
oracle_hash (const TuFrameSpec *s, gboolean with_ports)
{
  guint32 tuple[3] = { s->src, s->dst, ((guint32) s->sport << 16) | s->dport };
  return rte_softrss (tuple, with_ports ? 3 : 2, oracle_key.bytes);
}

/* the RQ an RQT of n RQs gives a hash: written out here, not taken from mlx5-rss.h */
static guint
oracle_queue (guint32 hash, guint n)
{
  guint size = 1;
  while (size < n)
    size *= 2;
  guint entry = hash % size;
  return entry % n;
}

static void
random_spec (GRand *rand, TuFrameSpec *s, guint8 proto)
{
  memset (s, 0, sizeof *s);
  s->len = FRAME_LEN;
  s->proto = proto;
  s->src = g_rand_int (rand);
  s->dst = g_rand_int (rand);
  s->sport = (guint16) g_rand_int (rand);
  s->dport = (guint16) g_rand_int (rand);
  s->good_csums = TRUE;
}

static guint32
frame_hash (const guint8 *frame, guint len)
{
  EmuHeaders h;
  emu_parse (frame, len, &h);
  return emu_rss_hash (frame, &h);
}

/* ---------------------------------------------------------------------------------- */

/* the Toeplitz function alone: random 8- and 12-byte inputs (wire order) */
static void
test_toeplitz (void)
{
  GRand *rand = g_rand_new_with_seed (0x7e0b11);
  for (guint i = 0; i < 5000; i++) {
    guint32 words[3];
    guint8 in[12];
    for (guint w = 0; w < 3; w++) {
      words[w] = g_rand_int (rand);
      for (guint b = 0; b < 4; b++)
        in[w * 4 + b] = (guint8) (words[w] >> (24 - 8 * b));
    }
    g_assert_cmphex (emu_toeplitz (in, 12), ==, rte_softrss (words, 3, oracle_key.bytes));
    g_assert_cmphex (emu_toeplitz (in, 8), ==, rte_softrss (words, 2, oracle_key.bytes));
  }
  g_rand_free (rand);
}

/* the hash of whole frames: which fields, in which order */
static void
test_frame_hash (void)
{
  GRand *rand = g_rand_new_with_seed (0x5eed5);
  guint8 frame[FRAME_LEN + 4];
  TuFrameSpec s;
  guint spread[4] = { 0 };

  for (guint i = 0; i < 4000; i++) {
    random_spec (rand, &s, TU_PROTO_UDP);
    tu_frame_build (frame, &s, i);
    guint32 hash = frame_hash (frame, FRAME_LEN);
    g_assert_cmphex (hash, ==, oracle_hash (&s, TRUE));
    spread[oracle_queue (hash, 4)]++;

    random_spec (rand, &s, TU_PROTO_TCP);
    tu_frame_build (frame, &s, i);
    g_assert_cmphex (frame_hash (frame, FRAME_LEN), ==, oracle_hash (&s, TRUE));
  }
  /* a fair hash: every queue of 4 gets a quarter of random flows, give or take 10 % */
  for (guint q = 0; q < 4; q++) {
    g_assert_cmpuint (spread[q], >, 900);
    g_assert_cmpuint (spread[q], <, 1100);
  }

  for (guint i = 0; i < 2000; i++) {
    /* not TCP or UDP: the addresses alone */
    random_spec (rand, &s, TU_PROTO_ICMP);
    tu_frame_build (frame, &s, i);
    g_assert_cmphex (frame_hash (frame, FRAME_LEN), ==, oracle_hash (&s, FALSE));

    /* a UDP fragment (more-fragments set, or an offset): no ports to hash */
    random_spec (rand, &s, TU_PROTO_UDP);
    tu_frame_build (frame, &s, i);
    frame[20] = i % 2 ? 0x20 : 0x00; /* flags/fragment offset, big-endian at IPv4 + 6 */
    frame[21] = i % 2 ? 0x00 : 0x08;
    g_assert_cmphex (frame_hash (frame, FRAME_LEN), ==, oracle_hash (&s, FALSE));
  }

  /* one VLAN tag: the same flow, the same hash */
  random_spec (rand, &s, TU_PROTO_UDP);
  tu_frame_build (frame, &s, 1);
  guint32 untagged = frame_hash (frame, FRAME_LEN);
  memmove (frame + 16, frame + 12, FRAME_LEN - 12);
  const guint8 tag[4] = { 0x81, 0x00, 0x00, 0x07 }; /* 802.1Q, VLAN 7 */
  memcpy (frame + 12, tag, 4);
  g_assert_cmphex (frame_hash (frame, FRAME_LEN + 4), ==, untagged);
  g_assert_cmphex (untagged, ==, oracle_hash (&s, TRUE));

  /* not IPv4: hash 0 */
  s.proto = 0;
  tu_frame_build (frame, &s, 1);
  g_assert_cmphex (frame_hash (frame, FRAME_LEN), ==, 0);
  g_rand_free (rand);
}

/* Flows injected into an emulated port whose group of n queues has no rules (RSS over
 * all of them): every packet on the oracle's queue, every sequence number once. */
static void
check_rqt (guint n, guint n_flows, guint per_flow)
{
  gchar *name = g_strdup_printf ("rss%u", n);
  gchar *device = g_strdup_printf ("emu:%s,pause=off", name);
  GError *error = NULL;
  DqPort *port = dq_port_open (device, &error);
  g_assert_no_error (error);
  EmuPort *ep = emu_port_lookup (name);
  g_assert_nonnull (ep);
  DqRxQueue **qs = g_new0 (DqRxQueue *, n);
  for (guint q = 0; q < n; q++) {
    DqRxConfig cfg = { .burst_packets = 64,
      .burst_timeout_ns = 1 * MS,
      .ring_bytes = 4 << 20,
      .queue_index = q,
      .n_queues = n,
      .group_id = 0x7000 + n };
    qs[q] = dq_rxq_create (port, &cfg, &error);
    g_assert_no_error (error);
  }

  GRand *rand = g_rand_new_with_seed (0xf10f + n);
  TuFrameSpec *flows = g_new0 (TuFrameSpec, n_flows);
  guint *expect_q = g_new0 (guint, n_flows);
  guint expect_count[8] = { 0 };
  for (guint f = 0; f < n_flows; f++) {
    random_spec (rand, &flows[f], f % 5 == 4 ? TU_PROTO_TCP : TU_PROTO_UDP);
    expect_q[f] = oracle_queue (oracle_hash (&flows[f], TRUE), n);
    expect_count[expect_q[f]] += per_flow;
  }
  /* the flows interleaved, packet k of flow f has sequence number k * n_flows + f */
  guint total = n_flows * per_flow;
  guint8 frame[FRAME_LEN];
  for (guint seq = 0; seq < total; seq++) {
    tu_frame_build (frame, &flows[seq % n_flows], seq);
    g_assert_true (emu_port_inject (ep, frame, FRAME_LEN));
  }
  g_assert_true (emu_port_wait_idle (ep, 2000 * MS));

  guint8 *seen = g_new0 (guint8, total);
  guint got[8] = { 0 };
  for (guint q = 0; q < n; q++) {
    DqBurst b;
    while (dq_rxq_poll (qs[q], &b, 5 * MS, &error) == 1) {
      for (guint i = 0; i < b.n_packets; i++) {
        const guint8 *f = b.data + b.packets[i].offset;
        g_assert_cmpuint (b.packets[i].length, ==, FRAME_LEN);
        guint32 seq = tu_frame_seq (f, FRAME_LEN);
        g_assert_cmpuint (seq, <, total);
        g_assert_cmpuint (seen[seq], ==, 0);
        seen[seq] = 1;
        char *why = NULL;
        if (!tu_frame_check (f, FRAME_LEN, &flows[seq % n_flows], seq, &why))
          g_error ("queue %u: %s", q, why);
        /* the queue the oracle says, for every packet of the flow */
        g_assert_cmpuint (q, ==, expect_q[seq % n_flows]);
        got[q]++;
      }
      dq_rxq_release (qs[q], &b);
    }
    g_assert_no_error (error);
  }
  for (guint q = 0; q < n; q++) {
    g_test_message ("%u queues: queue %u took %u packets", n, q, got[q]);
    g_assert_cmpuint (got[q], ==, expect_count[q]);
    /* with hundreds of flows no queue is left out */
    g_assert_cmpuint (got[q], >, 0);
  }
  EmuCounters c;
  emu_port_counters (ep, &c);
  g_assert_cmpuint (c.rx_packets, ==, total);
  g_assert_cmpuint (c.rx_out_of_buffer, ==, 0);

  g_free (seen);
  g_free (expect_q);
  g_free (flows);
  g_rand_free (rand);
  for (guint q = 0; q < n; q++)
    dq_rxq_destroy (qs[q]);
  g_free (qs);
  emu_port_unref (ep);
  dq_port_unref (port);
  g_free (device);
  g_free (name);
}

static void
test_rqt_4 (void)
{
  check_rqt (4, 500, 8);
}

/* 3 RQs: an RQT of 4 entries, RQ 0 twice */
static void
test_rqt_3 (void)
{
  check_rqt (3, 500, 8);
}

/* the shared helpers agree with the oracle's table */
static void
test_rqt_helpers (void)
{
  g_assert_cmpuint (mlx5_rss_rqt_size (1), ==, 1);
  g_assert_cmpuint (mlx5_rss_rqt_size (3), ==, 4);
  g_assert_cmpuint (mlx5_rss_rqt_size (4), ==, 4);
  g_assert_cmpuint (mlx5_rss_rqt_size (5), ==, 8);
  for (guint32 h = 0; h < 64; h++)
    for (guint n = 1; n <= 8; n++)
      g_assert_cmpuint (
          mlx5_rss_rqt_pick (h * 0x9e3779b9u, n), ==, oracle_queue (h * 0x9e3779b9u, n));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  memcpy (oracle_key.bytes, mlx5_rss_default_key (), MLX5_RSS_KEY_LEN);
  g_test_add_func ("/mlx5/rss/toeplitz", test_toeplitz);
  g_test_add_func ("/mlx5/rss/frame-hash", test_frame_hash);
  g_test_add_func ("/mlx5/rss/rqt-helpers", test_rqt_helpers);
  g_test_add_func ("/mlx5/rss/rqt-4-queues", test_rqt_4);
  g_test_add_func ("/mlx5/rss/rqt-3-queues", test_rqt_3);
  return g_test_run ();
}
