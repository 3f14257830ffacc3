/* Many queues under traffic, end to end over the emulated ConnectX:
 *
 *   frames injected into emu:NAME   ->   daqirisrc device=emu:NAME queues=4 ! appsink
 *
 *   spread      64 UDP flows: every packet arrives once, the packets of one burst (one
 *               queue's ring range) all belong to flows the oracle puts on one queue,
 *               and the stats' queue-packets are exactly the oracle's counts
 *   fairness    the rings pre-filled (downstream far slower than the input: all of it
 *               waits), equal input per queue: over the first half of what is
 *               delivered, each queue's share is its input share (1/4) within one
 *               burst per queue; unequal input (one queue 4x the others): the light
 *               queues are emptied while the heavy one still has packets, none waits
 *               behind it
 *   two-srcs    two daqirisrc on one port, each with rules whose queue key names its
 *               queues (and one RSS rule): each gets exactly its flows, on its queues
 *
 * The oracle is DPDK's software Toeplitz, rte_softrss (input: host-order words src,
 * dst, sport << 16 | dport; key mlx5-rss.h's), and an RQT of the next power of two
 * entries, entry i = queue i mod n. Built only where DPDK is found.
 */
#include "config.h"

#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/daqiri/daqiri.h>

#include "dq-packet.h"
#include "emu.h"
#include "mlx5-rss.h"
#include "dq-check-linked.h"
#include "dq-check-suite.h"

#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wcast-align"
#include <rte_thash.h>
#pragma GCC diagnostic pop

#define FRAME_LEN 64
#define SEQ_OFFSET DQ_PACKET_PAYLOAD_OFFSET
#define SRC_IP 0x0a000001
#define DST_IP 0x0a000002
#define BURST 64


static union {
  guint32 words[MLX5_RSS_KEY_LEN / 4];
  guint8 bytes[MLX5_RSS_KEY_LEN];
} oracle_key;

/* a UDP flow 10.0.0.1:sport -> 10.0.0.2:dport */
typedef struct {
  guint16 sport, dport;
} Flow;

static guint
oracle_queue (const Flow *f, guint n)
{
  guint32 tuple[3] = { SRC_IP, DST_IP, ((guint32) f->sport << 16) | f->dport };
  guint32 hash = rte_softrss (tuple, 3, oracle_key.bytes);
  guint size = 1;
  while (size < n)
    size *= 2;
  return (hash % size) % n;
}

static void
build_frame (guint8 *frame, const Flow *f, guint32 seq)
{
  DqPacketHeaders h = { .dst_mac = { 2, 0, 0, 0, 0, 2 },
    .src_mac = { 2, 0, 0, 0, 0, 1 },
    .src_ip = SRC_IP,
    .dst_ip = DST_IP,
    .src_port = f->sport,
    .dst_port = f->dport };
  memset (frame, 0, FRAME_LEN);
  fail_unless (dq_packet_write_headers (frame, FRAME_LEN, &h) == 0);
  dq_packet_put32 (frame + SEQ_OFFSET, seq);
}

/* Injects `counts[f]` packets of each flow, the flows interleaved; packet k overall
 * has sequence number k. Returns the flow of each sequence number. */
static guint *
inject (EmuPort *port, const Flow *flows, guint n_flows, const guint *counts, guint *total)
{
  guint sum = 0, max = 0;
  for (guint f = 0; f < n_flows; f++) {
    sum += counts[f];
    max = MAX (max, counts[f]);
  }
  guint *flow_of = g_new0 (guint, sum);
  guint8 frame[FRAME_LEN];
  guint seq = 0;
  for (guint k = 0; k < max; k++) {
    for (guint f = 0; f < n_flows; f++) {
      if (k >= counts[f])
        continue;
      build_frame (frame, &flows[f], seq);
      fail_unless (emu_port_inject (port, frame, FRAME_LEN));
      flow_of[seq++] = f;
    }
  }
  fail_unless (emu_port_wait_idle (port, 5 * GST_SECOND));
  *total = sum;
  return flow_of;
}

/* One delivered packet: its sequence number and UDP ports, its flow id, its buffer. */
typedef struct {
  guint32 seq;
  guint16 sport, dport;
  guint32 flow_id;
  guint buffer;
} Got;

/* Pulls buffers until `n` packets came (or 10 s without one). */
static GArray *
pull_packets (GstElement *pipeline, const gchar *sink_name, guint n)
{
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), sink_name);
  GArray *got = g_array_new (FALSE, FALSE, sizeof (Got));
  guint n_buffers = 0;
  while (got->len < n) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 10 * GST_SECOND);
    fail_unless (sample != NULL, "%s: %u of %u packets came", sink_name, got->len, n);
    GstBuffer *buf = gst_sample_get_buffer (sample);
    GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
    fail_unless (meta != NULL);
    fail_unless (meta->n_packets > 0 && meta->n_packets <= BURST);
    GstMapInfo map;
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    for (guint i = 0; i < meta->n_packets; i++) {
      const guint8 *fr = map.data + meta->packets[i].offset;
      fail_unless_equals_int (meta->packets[i].length, FRAME_LEN);
      Got g = { .seq = dq_packet_get32 (fr + SEQ_OFFSET),
        .sport = dq_packet_get16 (fr + DQ_PACKET_UDP_OFFSET),
        .dport = dq_packet_get16 (fr + DQ_PACKET_UDP_OFFSET + 2),
        .flow_id = meta->packets[i].flow_id,
        .buffer = n_buffers };
      g_array_append_val (got, g);
    }
    gst_buffer_unmap (buf, &map);
    gst_sample_unref (sample);
    n_buffers++;
  }
  gst_object_unref (sink);
  return got;
}

/* the stats' queue-packets of the source called `name` */
static void
queue_packets (GstElement *pipeline, const gchar *name, guint64 *out, guint n)
{
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), name);
  GstStructure *st = NULL;
  g_object_get (src, "stats", &st, NULL);
  fail_unless (st != NULL);
  const GValue *arr = gst_structure_get_value (st, "queue-packets");
  fail_unless (arr != NULL && GST_VALUE_HOLDS_ARRAY (arr));
  fail_unless_equals_int (gst_value_array_get_size (arr), n);
  for (guint q = 0; q < n; q++)
    out[q] = g_value_get_uint64 (gst_value_array_get_value (arr, q));
  gst_structure_free (st);
  gst_object_unref (src);
}

/* A pipeline in PAUSED (its queues exist, nothing is polled yet) and its port. */
static GstElement *
paused_pipeline (const gchar *launch, const gchar *port_name, EmuPort **port)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (launch, &err);
  fail_unless (p != NULL, "%s", err ? err->message : "?");
  fail_unless (gst_element_set_state (p, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE);
  *port = emu_port_lookup (port_name);
  fail_unless (*port != NULL);
  return p;
}

static void
stop_pipeline (GstElement *p, EmuPort *port)
{
  emu_port_unref (port);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
}

/* Every sequence number below `total` once; returns the oracle queue of each packet's
 * burst, checking that one burst's packets all have one oracle queue. */
static guint *
check_delivery (GArray *got, const guint *flow_of, const Flow *flows, guint total, guint n_queues)
{
  guint8 *seen = g_new0 (guint8, total);
  guint *queue_of = g_new0 (guint, got->len);
  guint burst_queue = G_MAXUINT, burst = G_MAXUINT;
  fail_unless_equals_int (got->len, total);
  for (guint i = 0; i < got->len; i++) {
    const Got *g = &g_array_index (got, Got, i);
    fail_unless (g->seq < total, "sequence number %u of %u", g->seq, total);
    fail_unless (!seen[g->seq], "sequence number %u twice", g->seq);
    seen[g->seq] = 1;
    const Flow *f = &flows[flow_of[g->seq]];
    fail_unless_equals_int (g->sport, f->sport);
    fail_unless_equals_int (g->dport, f->dport);
    guint q = oracle_queue (f, n_queues);
    if (g->buffer != burst) {
      burst = g->buffer;
      burst_queue = q;
    }
    fail_unless_equals_int (q, burst_queue); /* one burst, one queue */
    queue_of[i] = q;
  }
  g_free (seen);
  return queue_of;
}

/* A single-source test's pipeline, PAUSED: daqirisrc name=src on emu:NAME (no pause)
 * with 4 queues, bursts of BURST packets and 4 MiB rings, into appsink name=sink; and its
 * port. */
static GstElement *
four_queue_pipeline (const gchar *port_name, EmuPort **port)
{
  gchar *launch = g_strdup_printf ("daqirisrc name=src device=emu:%s,pause=off "
                                   "queues=4 burst-packets=%u ring-size=4194304 ! "
                                   "appsink name=sink sync=false",
      port_name, BURST);
  GstElement *p = paused_pipeline (launch, port_name, port);
  g_free (launch);
  return p;
}

/* What a single-source test got: the flow of each sequence number, every packet pulled
 * from the sink, and the oracle queue of each (check_delivery). */
typedef struct {
  guint total;
  guint *flow_of;
  GArray *got;
  guint *queue_of;
} Delivery;

/* Injects counts[f] packets of each flow into the port, sets the pipeline PLAYING, pulls
 * every packet from its sink "sink" and checks them (check_delivery) over nq queues. */
static void
deliver (GstElement *p, EmuPort *port, const Flow *flows, guint n_flows, const guint *counts,
    guint nq, Delivery *d)
{
  d->flow_of = inject (port, flows, n_flows, counts, &d->total);
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  d->got = pull_packets (p, "sink", d->total);
  d->queue_of = check_delivery (d->got, d->flow_of, flows, d->total, nq);
}

/* frees what deliver filled in */
static void
delivery_clear (Delivery *d)
{
  g_free (d->queue_of);
  g_array_unref (d->got);
  g_free (d->flow_of);
}

/* ---- the tests ---- */

/* 64 flows of 100..163 packets over 4 queues: once each, spread as the oracle says */
GST_START_TEST (test_spread)
{
  const guint n_flows = 64, per_flow = 100, nq = 4;
  EmuPort *port;
  GstElement *p = four_queue_pipeline ("rss-spread", &port);
  Flow flows[64];
  guint counts[64], expect[4] = { 0 };
  /* random ports (a hash is linear: consecutive ports would split evenly whatever the
   * key), and a different packet count per flow, so that the counts tell queues apart */
  GRand *rand = g_rand_new_with_seed (0x0e2e);
  for (guint f = 0; f < n_flows; f++) {
    flows[f] = (Flow){ (guint16) g_rand_int_range (rand, 1024, 65536),
      (guint16) g_rand_int_range (rand, 1024, 65536) };
    counts[f] = per_flow + f;
    expect[oracle_queue (&flows[f], nq)] += counts[f];
  }
  g_rand_free (rand);
  Delivery d;
  deliver (p, port, flows, n_flows, counts, nq, &d);

  guint64 stats[4], from_bursts[4] = { 0 };
  queue_packets (p, "src", stats, nq);
  for (guint i = 0; i < d.got->len; i++)
    from_bursts[d.queue_of[i]]++;
  for (guint q = 0; q < nq; q++) {
    GST_INFO ("queue %u: %" G_GUINT64_FORMAT " packets (oracle %u)", q, stats[q], expect[q]);
    fail_unless_equals_uint64 (stats[q], expect[q]);
    fail_unless_equals_uint64 (from_bursts[q], expect[q]);
  }
  /* a flow stays on one queue: its packets' bursts all map to the same oracle queue */
  EmuCounters c;
  emu_port_counters (port, &c);
  fail_unless_equals_uint64 (c.rx_packets, d.total);
  fail_unless_equals_uint64 (c.rx_out_of_buffer, 0);

  delivery_clear (&d);
  stop_pipeline (p, port);
}
GST_END_TEST;

/* n_flows flows whose oracle queues are 0..nq-1 in turn (flow f on queue f mod nq) */
static void
balanced_flows (Flow *flows, guint n_flows, guint nq)
{
  guint sport = 2000;
  for (guint f = 0; f < n_flows; f++) {
    do
      flows[f] = (Flow){ (guint16) sport++, 5000 };
    while (oracle_queue (&flows[f], nq) != f % nq);
  }
}

/* The fairness runs' setup: a new four-queue pipeline of the emulated port `name` (*port),
 * n_flows flows (at most 64) spread evenly over the nq queues, `heavy` packets of each flow
 * of queue 0 and `light` of each other flow pre-filled and delivered into *d. Returns the
 * pipeline, for stop_pipeline. */
static GstElement *
deliver_fair (const char *name, guint n_flows, guint nq, guint heavy, guint light, EmuPort **port,
    Delivery *d)
{
  Flow flows[64];
  guint counts[64];
  g_assert (n_flows <= G_N_ELEMENTS (flows));
  GstElement *p = four_queue_pipeline (name, port);
  balanced_flows (flows, n_flows, nq);
  for (guint f = 0; f < n_flows; f++)
    counts[f] = f % nq == 0 ? heavy : light;
  deliver (p, *port, flows, n_flows, counts, nq, d);
  return p;
}

/* Rings pre-filled with equal input per queue: the first half of the delivered packets
 * is shared out equally (the input shares) within one burst per queue. */
GST_START_TEST (test_fair_equal)
{
  const guint n_flows = 64, per_flow = 256, nq = 4;
  EmuPort *port;
  Delivery d;
  GstElement *p = deliver_fair ("rss-fair", n_flows, nq, per_flow, per_flow, &port, &d);

  /* every queue had total / 4 waiting: in the first half, each delivered its share of
   * 1/4 (total / 8 packets) within one burst */
  guint window = d.total / 2, in_window[4] = { 0 };
  for (guint i = 0; i < window; i++)
    in_window[d.queue_of[i]]++;
  for (guint q = 0; q < nq; q++) {
    GST_INFO ("queue %u: %u of the first %u packets (share %.4f, input share 0.25)", q,
        in_window[q], window, (double) in_window[q] / window);
    fail_unless (in_window[q] + BURST >= window / nq && in_window[q] <= window / nq + BURST,
        "queue %u delivered %u of the first %u packets; its input share is %u (+-%u)", q,
        in_window[q], window, window / nq, BURST);
  }
  guint64 stats[4];
  queue_packets (p, "src", stats, nq);
  for (guint q = 0; q < nq; q++)
    fail_unless_equals_uint64 (stats[q], d.total / nq);

  delivery_clear (&d);
  stop_pipeline (p, port);
}
GST_END_TEST;

/* Queue 0 has 4x the packets of each other queue: the others are emptied within their
 * round-robin turns (4 x their input, plus a burst each), and queue 0 is served as often
 * as they are meanwhile: no queue waits behind another. */
GST_START_TEST (test_fair_heavy_queue)
{
  const guint n_flows = 64, light = 128, nq = 4;
  EmuPort *port;
  Delivery d;
  GstElement *p = deliver_fair ("rss-heavy", n_flows, nq, 4 * light, light, &port, &d);

  guint light_input = light * n_flows / nq; /* packets of each light queue */
  guint last[4] = { 0 }, heavy_before = 0;
  for (guint i = 0; i < d.got->len; i++)
    last[d.queue_of[i]] = i;
  guint light_done = MAX (MAX (last[1], last[2]), last[3]);
  for (guint i = 0; i <= light_done; i++)
    heavy_before += d.queue_of[i] == 0;
  GST_INFO ("light queues emptied by packet %u of %u; queue 0 delivered %u by then", light_done + 1,
      d.total, heavy_before);
  fail_unless (light_done + 1 <= nq * light_input + nq * BURST,
      "the light queues took until packet %u; round robin ends them by %u", light_done + 1,
      nq * light_input + nq * BURST);
  fail_unless (heavy_before + BURST >= light_input,
      "queue 0 delivered %u while the others delivered %u each", heavy_before, light_input);

  delivery_clear (&d);
  stop_pipeline (p, port);
}
GST_END_TEST;

/* Two daqirisrc on one port, each with rules naming its own queues (and B with an RSS
 * rule over its two): each gets exactly its flows, each queue exactly what its rules
 * send it, the flow ids of the rules; a flow neither takes is dropped by the port. */
GST_START_TEST (test_two_sources)
{
  EmuPort *port;
  GstElement *p =
      paused_pipeline ("daqirisrc name=a device=emu:rss-two,pause=off queues=2 burst-packets=64 "
                       "ring-size=1048576 flows=\"proto=udp dst-port=5000 queue=0 mark=1; "
                       "proto=udp dst-port=5001 queue=1 mark=2\" ! appsink name=sink-a sync=false "
                       "daqirisrc name=b device=emu:rss-two,pause=off queues=2 burst-packets=64 "
                       "ring-size=1048576 flows=\"proto=udp dst-port=6000 queue=1 mark=3; "
                       "proto=udp dst-port=6001 queue=0 mark=4; proto=udp dst-port=6002 mark=5\" ! "
                       "appsink name=sink-b sync=false",
          "rss-two", &port);
  /* flows 0-1 for a, 2-3 and 4..19 (RSS) for b, 20 for nobody */
  Flow flows[21];
  guint counts[21];
  flows[0] = (Flow){ 1000, 5000 };
  flows[1] = (Flow){ 1001, 5001 };
  flows[2] = (Flow){ 1002, 6000 };
  flows[3] = (Flow){ 1003, 6001 };
  for (guint f = 4; f < 20; f++)
    flows[f] = (Flow){ (guint16) (3000 + f), 6002 };
  flows[20] = (Flow){ 1004, 7000 };
  guint64 expect_b[2] = { 0 };
  for (guint f = 0; f < 21; f++)
    counts[f] = 50 + f;
  expect_b[1] += counts[2];
  expect_b[0] += counts[3];
  for (guint f = 4; f < 20; f++)
    expect_b[oracle_queue (&flows[f], 2)] += counts[f];
  guint n_b = 0;
  for (guint f = 2; f < 20; f++)
    n_b += counts[f];

  guint total;
  guint *flow_of = inject (port, flows, 21, counts, &total);
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  GArray *got_a = pull_packets (p, "sink-a", counts[0] + counts[1]);
  GArray *got_b = pull_packets (p, "sink-b", n_b);

  const guint32 marks[] = { 1, 2, 3, 4 };
  for (guint i = 0; i < got_a->len; i++) {
    const Got *g = &g_array_index (got_a, Got, i);
    guint f = flow_of[g->seq];
    fail_unless (f < 2, "a got flow %u (dst port %u)", f, g->dport);
    fail_unless_equals_int (g->flow_id, marks[f]);
  }
  for (guint i = 0; i < got_b->len; i++) {
    const Got *g = &g_array_index (got_b, Got, i);
    guint f = flow_of[g->seq];
    fail_unless (f >= 2 && f < 20, "b got flow %u (dst port %u)", f, g->dport);
    fail_unless_equals_int (g->flow_id, f < 4 ? marks[f] : 5);
  }
  guint64 qa[2], qb[2];
  queue_packets (p, "a", qa, 2);
  queue_packets (p, "b", qb, 2);
  fail_unless_equals_uint64 (qa[0], counts[0]);
  fail_unless_equals_uint64 (qa[1], counts[1]);
  fail_unless_equals_uint64 (qb[0], expect_b[0]);
  fail_unless_equals_uint64 (qb[1], expect_b[1]);

  /* nothing more came, and the port dropped flow 20 for want of a rule */
  GstElement *sink = gst_bin_get_by_name (GST_BIN (p), "sink-a");
  fail_unless (gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 50 * GST_MSECOND) == NULL);
  gst_object_unref (sink);
  EmuCounters c;
  emu_port_counters (port, &c);
  fail_unless_equals_uint64 (c.rx_steer_miss, counts[20]);
  fail_unless_equals_uint64 (c.rx_packets, total - counts[20]);

  g_array_unref (got_a);
  g_array_unref (got_b);
  g_free (flow_of);
  stop_pipeline (p, port);
}
GST_END_TEST;

static Suite *
e2e_rss_suite (void)
{
  TCase *tc;
  Suite *s = dq_check_suite_new ("daqiri-e2e-rss", "rss", 120, &tc);
  memcpy (oracle_key.bytes, mlx5_rss_default_key (), MLX5_RSS_KEY_LEN);
  tcase_add_test (tc, test_spread);
  tcase_add_test (tc, test_fair_equal);
  tcase_add_test (tc, test_fair_heavy_queue);
  tcase_add_test (tc, test_two_sources);
  return s;
}

DQ_CHECK_LINKED_MAIN (e2e_rss_suite, "e2e-rss");
