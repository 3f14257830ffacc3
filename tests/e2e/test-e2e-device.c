/* One end-to-end scenario, run on each engine (the engine is this program's argument):
 *
 *   daqiritestsrc ! daqirisink device=TX   ->   daqirisrc device=RX ! appsink
 *
 * 100 000 packets of 60..1500 bytes in 4 flows. Checked: every byte and sequence number
 * (each exactly once, in order), the flow id the flow rules give every packet, timestamps
 * that never go back, no buffer longer than burst-packets, nothing more after the last
 * packet, and the counters of both elements: packets and bytes sent = received = what
 * daqiritestsrc made, no drop, truncation, refused or malformed frame. Also what the sink
 * offers upstream: its pool of TX slots where the engine lends them (every frame then
 * written in place), none where it does not (every frame copied).
 *
 * Steering while PLAYING, on the same pair: 100 changes of `flows` under traffic, between
 * two rule sets that both deliver flows 0 and 1 with the same marks (every packet of
 * those arrives, each with its mark) and differ in flows 2 and 3 (both are delivered
 * while their rules are in place); a malformed rule string on the way posts a warning and
 * changes nothing. And `filter`: none (nothing arrives), all (every packet, flow id 0),
 * rules again (every packet with its mark), switched between streams of packets.
 *
 * Forwarding header-data split bursts: daqirisrc header-size=42 on an emulated port (fed
 * by daqiritestsrc through another one) into the engine's daqirisink: every packet
 * arrives intact and in order; the sink sent each from where it lies, header from a slot
 * and payload from the receive ring (two-segment sends: emu, one registration of that
 * ring), or joined the two parts by a copy (afpacket, dpdk).
 *
 * dpdk only: packets recorded by daqirisink into a pcap file (net_pcap tx_pcap=) are
 * replayed by daqirisrc (rx_pcap=), every one intact, and the source ends the stream
 * (EOS) at the end of the file.
 *
 *   emu       an emulated ConnectX port cabled to itself (builds with the mlx5 engine)
 *   afpacket  a veth pair in a private network namespace (root; skipped, exit 77, without)
 *   dpdk      DPDK's net_ring0 device: TX queue 0 loops back to RX queue 0 (dpdk builds)
 *
 * Engine-specific cases live with their engine: tests/e2e (afpacket peers, stress),
 * tests/e2e-emu (the emulated NIC's counters and line-rate model), tests/engine.
 */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/daqiri/daqiri.h>
#include <gst/daqiri/daqiritestpacket.h>
#include <glib/gstdio.h>

#include "dq-netns.h"
#include "dq-receiver.h"
#include "dq-check-suite.h"
#include "gstdaqiritxpool.h"

#include <string.h>

#define N_PACKETS 100000
#define SIZE_MIN 60
#define SIZE_MAX 1500
#define RX_BURST 128
#define TX_BURST 64
#define AFP_TX_IF "dqvtx0"
#define AFP_RX_IF "dqvrx0"

typedef struct {
  const gchar *name; /* the program's argument */
  const gchar *tx_device, *rx_device;
  const gchar *rx_props;    /* more daqirisrc properties */
  guint rate;               /* daqiritestsrc pace, packets/s; 0: as the sink takes them */
  gboolean lends_slots;     /* daqirisink proposes its pool of TX slots */
  gboolean counts_filtered; /* filtering in software: drops-filtered sees every packet */
  /* from main(), before any thread exists (it may end the program: exit 77, a skip) */
  void (*setup) (void);
  void (*teardown) (void);
} Engine;

static DqNetns *netns;

static void
afpacket_setup (void)
{
  netns = dq_netns_setup_or_skip (AFP_TX_IF, AFP_RX_IF, 0);
}

static void
afpacket_teardown (void)
{
  dq_netns_free (netns);
}

static const Engine engines[] = {
  /* a full receive queue pauses the sender (pause=on): no pacing needed */
  { "emu", "emu:e2e", "emu:e2e", "", 0, TRUE, FALSE, NULL, NULL },
  /* the kernel drops what the receiving socket's ring cannot take: a ring for every
   * packet, and a pace the veth pair keeps up with */
  { "afpacket", "afpacket:" AFP_TX_IF, "afpacket:" AFP_RX_IF, "ring-size=134217728", 250000, FALSE,
      FALSE, afpacket_setup, afpacket_teardown },
  /* a full device queue holds the sender back */
  { "dpdk", "dpdk:net_ring0", "dpdk:net_ring0", "", 0, FALSE, TRUE, NULL, NULL },
};

static const Engine *engine;

static GstStaticPadTemplate harness_src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

/* What daqirisink answers an allocation query with: always the packet meta; its pool of
 * TX slots exactly where the engine lends them. */
static void
assert_sink_allocation (const Engine *e)
{
  GstElement *sink = gst_element_factory_make ("daqirisink", NULL);
  fail_unless (sink != NULL);
  g_object_set (sink, "device", e->tx_device, NULL);
  /* a harnessed sink starts at once: configured first */
  GstHarness *h = gst_harness_new_full (sink, &harness_src_template, "sink", NULL, NULL);
  gst_object_unref (sink);
  gst_harness_set_src_caps_str (h, GST_DAQIRI_PACKETS_MEDIA_TYPE ", max-packet-size=(int)1500");

  GstCaps *caps = gst_caps_from_string (GST_DAQIRI_PACKETS_MEDIA_TYPE);
  GstQuery *q = gst_query_new_allocation (caps, TRUE);
  gst_caps_unref (caps);
  fail_unless (gst_pad_peer_query (h->srcpad, q));
  fail_unless (gst_query_find_allocation_meta (q, GST_DAQIRI_PACKET_META_API_TYPE, NULL));
  GstBufferPool *pool = NULL;
  if (gst_query_get_n_allocation_pools (q) > 0)
    gst_query_parse_nth_allocation_pool (q, 0, &pool, NULL, NULL, NULL);
  gst_query_unref (q);
  if (e->lends_slots) {
    fail_unless (pool != NULL, "daqirisink on %s proposed no pool", e->tx_device);
    fail_unless (gst_buffer_pool_has_option (pool, GST_BUFFER_POOL_OPTION_DAQIRI_TX_SLOTS));
    gst_object_unref (pool);
  } else {
    fail_unless (pool == NULL, "%s has no slots to lend, yet a pool was proposed", e->tx_device);
  }
  gst_harness_teardown (h);
}

/* daqirisrc's per-flow counters in `stats`: how many flow ids it lists, and the packets
 * (and *bytes) of `id`, G_MAXUINT64 when not listed */
static guint
flow_counts_n (const GstStructure *stats)
{
  const GValue *arr = gst_structure_get_value (stats, "flow-counts");
  fail_unless (arr != NULL && GST_VALUE_HOLDS_ARRAY (arr));
  return gst_value_array_get_size (arr);
}

static guint64
flow_count (const GstStructure *stats, guint id, guint64 *bytes)
{
  const GValue *arr = gst_structure_get_value (stats, "flow-counts");
  for (guint i = 0; i < flow_counts_n (stats); i++) {
    const GstStructure *c = gst_value_get_structure (gst_value_array_get_value (arr, i));
    guint fid = 0;
    guint64 packets = 0;
    fail_unless (gst_structure_get_uint (c, "flow-id", &fid));
    if (fid != id)
      continue;
    fail_unless (gst_structure_get_uint64 (c, "packets", &packets));
    fail_unless (gst_structure_get_uint64 (c, "bytes", bytes));
    return packets;
  }
  return G_MAXUINT64;
}

/* The engine's receiving pipeline, playing, for n packets from one sender (in order) */
static GstElement *
start_receiver (const Engine *e, Receiver *r, guint n)
{
  gchar *props = g_strdup_printf ("burst-packets=%u %s", RX_BURST, e->rx_props);
  GstElement *rx = ordered_receiver (r, n, e->rx_device, props);
  g_free (props);
  return rx;
}

GST_START_TEST (test_send_receive)
{
  const Engine *e = engine;
  const guint n = N_PACKETS;
  Receiver r;
  GstElement *rx = start_receiver (e, &r, n);

  assert_sink_allocation (e);

  gchar *rate = e->rate > 0 ? g_strdup_printf (" rate=%u", e->rate) : g_strdup ("");
  gchar *launch = g_strdup_printf (
      "daqiritestsrc num-packets=%u burst-packets=%u "
      "packet-size-min=%u packet-size-max=%u n-flows=%u%s ! daqirisink name=tx device=%s",
      n, TX_BURST, SIZE_MIN, SIZE_MAX, DQ_E2E_N_FLOWS, rate, e->tx_device);
  GstStructure *tx = run_sender (launch);
  g_free (launch);
  g_free (rate);

  /* every packet once, intact, in order, with its flow id; src: no drop, no truncation */
  assert_all_received (&r, rx, n);
  /* and nothing after them */
  g_usleep (50000);
  g_mutex_lock (&r.lock);
  fail_unless_equals_int (r.received, n);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  g_mutex_unlock (&r.lock);

  guint64 bytes = test_packet_bytes (n, SIZE_MIN, SIZE_MAX);
  fail_unless_equals_uint64 (r.bytes, bytes);
  fail_unless_equals_uint64 (stat_u64 (tx, "packets"), n);
  fail_unless_equals_uint64 (stat_u64 (tx, "bytes"), bytes);
  fail_unless_equals_uint64 (stat_u64 (tx, "errors"), 0);
  fail_unless_equals_uint64 (stat_u64 (tx, "malformed"), 0);
  fail_unless (stat_u64 (tx, "bursts") >= n / TX_BURST);
  /* in place where the sink lent its slots, copied where it could not */
  fail_unless_equals_uint64 (stat_u64 (tx, e->lends_slots ? "in-place" : "copies"), n);
  fail_unless_equals_uint64 (stat_u64 (tx, e->lends_slots ? "copies" : "in-place"), 0);
  gst_structure_free (tx);

  /* one buffer per burst, never more than burst-packets in one */
  GstStructure *s = element_stats (rx, "src");
  fail_unless_equals_uint64 (stat_u64 (s, "bursts"), r.buffers);
  fail_unless_equals_uint64 (stat_u64 (s, "drops-ring-full"), 0);
  fail_unless_equals_uint64 (stat_u64 (s, "drops-filtered"), 0);
  /* per flow (marks 10..13): the packets that arrived with the mark, all bytes together */
  guint64 flow_bytes = 0;
  fail_unless_equals_int (flow_counts_n (s), DQ_E2E_N_FLOWS);
  for (guint f = 0; f < DQ_E2E_N_FLOWS; f++) {
    guint64 b = 0;
    fail_unless_equals_uint64 (flow_count (s, 10 + f, &b), r.per_flow[f]);
    flow_bytes += b;
  }
  fail_unless_equals_uint64 (flow_bytes, bytes);
  gst_structure_free (s);
  fail_unless (r.max_burst <= RX_BURST, "a buffer of %u packets", r.max_burst);
  fail_unless (r.buffers >= n / RX_BURST);

  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (rx);
  receiver_clear (&r);
}

GST_END_TEST;

#define SPLIT_PACKETS 20000

GST_START_TEST (test_forward_split)
{
  const Engine *e = engine;
  const guint n = SPLIT_PACKETS;
  Receiver r;
  GstElement *rx = start_receiver (e, &r, n);
  gchar *launch = g_strdup_printf ("daqirisrc device=emu:fwd0,peer=none header-size=42 "
                                   "filter=all burst-packets=%u ! daqirisink name=fwd device=%s",
      RX_BURST, e->tx_device);
  GError *error = NULL;
  GstElement *fwd = gst_parse_launch (launch, &error);
  g_free (launch);
  fail_unless (fwd != NULL, "%s", error ? error->message : "?");
  play (fwd);

  gchar *rate = e->rate > 0 ? g_strdup_printf (" rate=%u", e->rate) : g_strdup ("");
  launch = g_strdup_printf (
      "daqiritestsrc num-packets=%u burst-packets=%u packet-size-min=%u packet-size-max=%u "
      "n-flows=%u%s ! daqirisink name=tx device=emu:feed0,peer=fwd0",
      n, TX_BURST, SIZE_MIN, SIZE_MAX, DQ_E2E_N_FLOWS, rate);
  GstStructure *tx = run_sender (launch);
  g_free (launch);
  g_free (rate);
  fail_unless_equals_uint64 (stat_u64 (tx, "packets"), n);
  gst_structure_free (tx);

  assert_all_received (&r, rx, n);
  g_mutex_lock (&r.lock);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  g_mutex_unlock (&r.lock);
  fail_unless_equals_uint64 (r.bytes, test_packet_bytes (n, SIZE_MIN, SIZE_MAX));

  GstStructure *s = element_stats (fwd, "fwd");
  gboolean two_segment = g_str_has_prefix (e->tx_device, "emu:");
  fail_unless_equals_uint64 (stat_u64 (s, "packets"), n);
  fail_unless_equals_uint64 (stat_u64 (s, "malformed"), 0);
  fail_unless_equals_uint64 (stat_u64 (s, "two-segment"), two_segment ? n : 0);
  fail_unless_equals_uint64 (stat_u64 (s, "joined"), two_segment ? 0 : n);
  fail_unless_equals_uint64 (stat_u64 (s, "copies"), two_segment ? 0 : n);
  fail_unless_equals_uint64 (stat_u64 (s, "registrations"), two_segment ? 1 : 0);
  gst_structure_free (s);
  gst_element_set_state (fwd, GST_STATE_NULL);
  gst_object_unref (fwd);
  receiver_pipeline_free (&r, rx);
}

GST_END_TEST;

/* flows 0 and 1 alike in both, flow 2 only in the first, flow 3 only in the second */
#define RULES_A \
  "proto=udp dst-port=6000 mark=10; proto=udp dst-port=6001 mark=11; " \
  "proto=udp dst-port=6002 mark=12"
#define RULES_B \
  "proto=udp dst-port=6003 mark=13; proto=udp dst-port=6001 mark=11; " \
  "proto=udp dst-port=6000 mark=10"
#define CHURN_PACKETS 40000
#define CHURN_RATE 100000
#define CHURN_CHANGES 100

/* runs daqiritestsrc with n packets at `rate` into the engine's sink; its stats */
static GstStructure *
send_paced (const Engine *e, guint n, guint rate)
{
  gchar *props = g_strdup_printf ("burst-packets=%u packet-size-min=%u packet-size-max=%u "
                                  "n-flows=%u rate=%u",
      TX_BURST, SIZE_MIN, SIZE_MAX, DQ_E2E_N_FLOWS, rate);
  GstStructure *tx = run_testsrc (n, props, e->tx_device);
  g_free (props);
  return tx;
}

static gpointer
churn_sender (gpointer e)
{
  return send_paced (e, CHURN_PACKETS, CHURN_RATE);
}

/* waits until flow `flow` has `n` packets or 5 s pass without progress */
static void
wait_flow (Receiver *r, guint flow, guint n)
{
  guint last = G_MAXUINT, still = 0;
  g_mutex_lock (&r->lock);
  while (r->per_flow[flow] < n && still < 50) {
    still = r->per_flow[flow] == last ? still + 1 : 0;
    last = r->per_flow[flow];
    g_cond_wait_until (&r->cond, &r->lock, g_get_monotonic_time () + 100 * G_TIME_SPAN_MILLISECOND);
  }
  g_mutex_unlock (&r->lock);
}

static gchar *
get_flows (GstElement *pipeline)
{
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  gchar *flows = NULL;
  g_object_get (src, "flows", &flows, NULL);
  gst_object_unref (src);
  return flows;
}

static void
set_src (GstElement *pipeline, const gchar *property, const gchar *value)
{
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  gst_util_set_object_arg (G_OBJECT (src), property, value);
  gst_object_unref (src);
}

GST_START_TEST (test_flows_change_playing)
{
  const Engine *e = engine;
  const guint n = CHURN_PACKETS, per_flow = CHURN_PACKETS / DQ_E2E_N_FLOWS;
  Receiver r;
  receiver_init (&r, n);
  gchar *props =
      g_strdup_printf ("burst-packets=%u flows=\"%s\" %s", RX_BURST, RULES_A, e->rx_props);
  GstElement *rx = receiver_pipeline (&r, e->rx_device, props);
  g_free (props);

  GThread *sender = g_thread_new ("sender", churn_sender, (gpointer) e);
  for (guint i = 0; i < CHURN_CHANGES; i++) {
    g_usleep (2000);
    if (i == CHURN_CHANGES / 2) {
      /* refused while PLAYING: a warning, and the rules in place stay */
      gchar *before = get_flows (rx);
      set_src (rx, "flows", "proto=udp dst-port=99999 mark=1");
      gchar *after = get_flows (rx);
      fail_unless_equals_string (after, before);
      g_free (before);
      g_free (after);
    }
    set_src (rx, "flows", i % 2 == 0 ? RULES_B : RULES_A);
  }
  GstStructure *tx = g_thread_join (sender);
  fail_unless_equals_uint64 (stat_u64 (tx, "packets"), n);
  gst_structure_free (tx);

  /* flows 0 and 1: every packet, each with its mark, whatever rule set was in place */
  wait_flow (&r, 0, per_flow);
  wait_flow (&r, 1, per_flow);
  g_mutex_lock (&r.lock);
  fail_unless_equals_int (r.per_flow[0], per_flow);
  fail_unless_equals_int (r.per_flow[1], per_flow);
  fail_unless_equals_int (r.wrong_flow, 0);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  /* both rule sets were in force while packets flowed */
  fail_unless (r.per_flow[2] > 0 && r.per_flow[2] <= per_flow, "flow 2: %u", r.per_flow[2]);
  fail_unless (r.per_flow[3] > 0 && r.per_flow[3] <= per_flow, "flow 3: %u", r.per_flow[3]);
  /* the source's per-flow counters went on across the 100 changes: each mark exactly what
   * arrived with it */
  GstStructure *st = element_stats (rx, "src");
  guint64 unused = 0;
  fail_unless_equals_int (flow_counts_n (st), 4);
  fail_unless_equals_uint64 (flow_count (st, 10, &unused), per_flow);
  fail_unless_equals_uint64 (flow_count (st, 11, &unused), per_flow);
  fail_unless_equals_uint64 (flow_count (st, 12, &unused), r.per_flow[2]);
  fail_unless_equals_uint64 (flow_count (st, 13, &unused), r.per_flow[3]);
  fail_unless_equals_uint64 (stat_u64 (st, "flow-counts-overflow"), 0);
  gst_structure_free (st);
  g_mutex_unlock (&r.lock);
  gchar *flows = get_flows (rx);
  fail_unless_equals_string (flows, RULES_A);
  g_free (flows);

  /* the refused string was reported, naming the property and the token */
  assert_warning_posted (rx,
      "property 'flows': flow rule 1 (\"proto=udp dst-port=99999 mark=1\"): "
      "'dst-port=99999' is out of range");

  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (rx);
  receiver_clear (&r);
}

GST_END_TEST;

/* sends n packets and waits until `expect` of them arrived (or 5 s without progress) */
static void
send_stream (const Engine *e, Receiver *r, guint n, guint expect)
{
  GstStructure *tx = send_paced (e, n, e->rate > 0 ? e->rate : CHURN_RATE);
  fail_unless_equals_uint64 (stat_u64 (tx, "packets"), n);
  gst_structure_free (tx);
  if (expect > 0)
    receiver_wait (r, expect, 5000);
  else
    g_usleep (200000);
}

GST_START_TEST (test_filter_modes_playing)
{
  const Engine *e = engine;
  const guint n = 8000;
  Receiver r;
  receiver_init (&r, n);
  gchar *props = g_strdup_printf ("burst-packets=%u %s", RX_BURST, e->rx_props);
  GstElement *rx = receiver_pipeline (&r, e->rx_device, props);
  g_free (props);

  /* none: nothing arrives */
  set_src (rx, "filter", "none");
  send_stream (e, &r, n, 0);
  g_mutex_lock (&r.lock);
  fail_unless_equals_int (r.received, 0);
  g_mutex_unlock (&r.lock);

  /* all: every packet, flow id 0 */
  set_src (rx, "filter", "all");
  send_stream (e, &r, n, n);
  g_mutex_lock (&r.lock);
  fail_unless_equals_int (r.received, n);
  fail_unless_equals_int (r.flow_id_zero, n);
  for (guint f = 0; f < DQ_E2E_N_FLOWS; f++)
    fail_unless_equals_int (r.per_flow[f], n / DQ_E2E_N_FLOWS);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  guint wrong_before = r.wrong_flow;
  g_mutex_unlock (&r.lock);

  /* rules again: every packet with its mark */
  receiver_reset (&r);
  set_src (rx, "filter", "rules");
  send_stream (e, &r, n, n);
  g_mutex_lock (&r.lock);
  fail_unless_equals_int (r.received, n);
  fail_unless_equals_int (r.flow_id_zero, 0);
  fail_unless_equals_int (r.wrong_flow, wrong_before);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  g_mutex_unlock (&r.lock);

  /* what filter=none kept out is no drop; a software classifier counts it as filtered */
  GstStructure *s = element_stats (rx, "src");
  fail_unless_equals_uint64 (stat_u64 (s, "packets"), 2 * n);
  fail_unless_equals_uint64 (stat_u64 (s, "drops-ring-full"), 0);
  fail_unless_equals_uint64 (stat_u64 (s, "drops"), 0);
  if (e->counts_filtered)
    fail_unless_equals_uint64 (stat_u64 (s, "drops-filtered"), n);
  gst_structure_free (s);

  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (rx);
  receiver_clear (&r);
}

GST_END_TEST;

GST_START_TEST (test_pcap_replay_eos)
{
  const guint n = 5000;
  gchar *dir = g_dir_make_tmp ("dq-e2e-XXXXXX", NULL);
  gchar *file = g_build_filename (dir, "rec.pcap", NULL);

  gchar *launch = g_strdup_printf ("daqiritestsrc num-packets=%u burst-packets=%u "
                                   "packet-size-min=%u packet-size-max=%u n-flows=%u ! "
                                   "daqirisink name=tx device=dpdk:net_pcap1,tx_pcap=%s",
      n, TX_BURST, SIZE_MIN, SIZE_MAX, DQ_E2E_N_FLOWS, file);
  GstStructure *tx = run_sender (launch);
  g_free (launch);
  fail_unless_equals_uint64 (stat_u64 (tx, "packets"), n);
  gst_structure_free (tx);

  Receiver r;
  gchar *device = g_strdup_printf ("dpdk:net_pcap2,rx_pcap=%s", file);
  GstElement *rx = ordered_receiver (&r, n, device, "burst-packets=128");
  g_free (device);
  GstBus *bus = gst_element_get_bus (rx);
  GstMessage *msg =
      gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no EOS at the end of the file");
  fail_unless_equals_int (GST_MESSAGE_TYPE (msg), GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_object_unref (bus);
  /* every packet came before the EOS */
  assert_all_received (&r, rx, n);

  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (rx);
  receiver_clear (&r);
  g_unlink (file);
  g_rmdir (dir);
  g_free (file);
  g_free (dir);
}

GST_END_TEST;

static Suite *
e2e_device_suite (void)
{
  /* check keeps the names: strings that outlive the run */
  TCase *tc;
  Suite *s = dq_check_suite_new ("daqiri-e2e-device", engine->name, 120, &tc);
  tcase_add_test (tc, test_send_receive);
  tcase_add_test (tc, test_forward_split);
  tcase_add_test (tc, test_flows_change_playing);
  tcase_add_test (tc, test_filter_modes_playing);
  if (strcmp (engine->name, "dpdk") == 0)
    tcase_add_test (tc, test_pcap_replay_eos);
  return s;
}

static const Engine *
engine_find (const gchar *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (engines); i++)
    if (strcmp (engines[i].name, name) == 0)
      return &engines[i];
  return NULL;
}

int
main (int argc, char **argv)
{
  engine = argc >= 2 ? engine_find (argv[1]) : NULL;
  if (engine == NULL) {
    g_printerr ("usage: %s ENGINE (allowed: emu, afpacket, dpdk)\n", argv[0]);
    return 2;
  }
  /* the engine is no option of the test framework's */
  argv[1] = argv[0];
  argc--;
  argv++;

  if (engine->setup != NULL)
    engine->setup ();
  gst_check_init (&argc, &argv);
  int failed = gst_check_run_suite (e2e_device_suite (), engine->name, __FILE__);
  if (engine->teardown != NULL)
    engine->teardown ();
  return failed != 0;
}
