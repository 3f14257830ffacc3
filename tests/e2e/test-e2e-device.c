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

#include "dq-netns.h"
#include "dq-receiver.h"
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
  const gchar *rx_props; /* more daqirisrc properties */
  guint rate;            /* daqiritestsrc pace, packets/s; 0: as the sink takes them */
  gboolean lends_slots;  /* daqirisink proposes its pool of TX slots */
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
  { "emu", "emu:e2e", "emu:e2e", "", 0, TRUE, NULL, NULL },
  /* the kernel drops what the receiving socket's ring cannot take: a ring for every
   * packet, and a pace the veth pair keeps up with */
  { "afpacket", "afpacket:" AFP_TX_IF, "afpacket:" AFP_RX_IF, "ring-size=134217728", 250000, FALSE,
      afpacket_setup, afpacket_teardown },
  /* a full device queue holds the sender back */
  { "dpdk", "dpdk:net_ring0", "dpdk:net_ring0", "", 0, FALSE, NULL, NULL },
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

GST_START_TEST (test_send_receive)
{
  const Engine *e = engine;
  const guint n = N_PACKETS;
  Receiver r;
  receiver_init (&r, n);
  r.check_order = TRUE;
  gchar *props = g_strdup_printf ("burst-packets=%u %s", RX_BURST, e->rx_props);
  GstElement *rx = receiver_pipeline (&r, e->rx_device, props);
  g_free (props);

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
  gst_structure_free (s);
  fail_unless (r.max_burst <= RX_BURST, "a buffer of %u packets", r.max_burst);
  fail_unless (r.buffers >= n / RX_BURST);

  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (rx);
  receiver_clear (&r);
}

GST_END_TEST;

static Suite *
e2e_device_suite (void)
{
  /* check keeps the names: strings that outlive the run */
  Suite *s = suite_create ("daqiri-e2e-device");
  TCase *tc = tcase_create (engine->name);

  tcase_set_timeout (tc, 120);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_send_receive);
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
