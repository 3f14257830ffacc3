/* The pcap engine (engine/pcap.c) through the engine API, against libpcap itself as the
 * reference reader and writer:
 *  - recording: frames sent with times become records of a nanosecond capture, read back
 *    byte for byte with those exact times (frames without one get the port time);
 *  - replay: a capture written by libpcap comes back byte for byte, in order, in bursts of
 *    at most burst-packets, then the end (DQ_RXQ_END); flow rules filter and mark; a frame
 *    longer than max-packet-size is cut and flagged truncated;
 *  - pace: pace=recorded keeps the recorded spacing (no packet early), rate=PPS its rate;
 *  - refusals: a missing, a non-pcap and a non-Ethernet capture, an unwritable path, an
 *    unknown key, several queues, reading and writing one port.
 */
#include "daqiri-engine.h"
#include "dq-test-port.h"

#include <pcap/pcap.h>
#include <string.h>

#define NS G_GUINT64_CONSTANT (1000000000)

static gchar *tmpdir;

static gchar *
tmp_path (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* frame i: `len` bytes of a pattern, an Ethernet header first */
static void
frame_fill (guint8 *f, guint len, guint i)
{
  for (guint j = 0; j < len; j++)
    f[j] = (guint8) (i * 13 + j * 7);
  if (len >= 14) {
    f[12] = 0x08;
    f[13] = 0x00; /* IPv4 (not a valid header: rules on IPv4 fields do not match) */
  }
}

static guint
frame_len (guint i)
{
  return 60 + (i * 97) % 1400;
}

/* Writes n frames with libpcap, frame i recorded at t0 + i * gap_ns */
static void
capture_write (const char *path, int link, guint n, guint64 t0, guint64 gap_ns)
{
  pcap_t *dead = pcap_open_dead_with_tstamp_precision (link, 65535, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t *d = pcap_dump_open (dead, path);
  g_assert_nonnull (d);
  guint8 f[2000];
  for (guint i = 0; i < n; i++) {
    guint len = frame_len (i);
    frame_fill (f, len, i);
    guint64 t = t0 + i * gap_ns;
    struct pcap_pkthdr h = { .caplen = len, .len = len };
    h.ts.tv_sec = (time_t) (t / NS);
    h.ts.tv_usec = (suseconds_t) (t % NS);
    pcap_dump ((u_char *) d, &h, f);
  }
  pcap_dump_close (d);
  pcap_close (dead);
}

/* Writes an Ethernet capture of n frames at path (as capture_write) and opens it as the
 * port pcap:PATH, with `options` (",key=value...", or "") after the path. */
static DqPort *
replay_port (const char *path, guint n, guint64 t0, guint64 gap_ns, const char *options)
{
  capture_write (path, DLT_EN10MB, n, t0, gap_ns);
  gchar *dev = g_strdup_printf ("pcap:%s%s", path, options);
  DqPort *port = dq_test_port_open (dev);
  g_free (dev);
  return port;
}

static DqRxQueue *
rxq_new (DqPort *port, guint burst, guint max_packet, const DqFlowRule *rules, guint n_rules)
{
  DqRxConfig cfg = { .burst_packets = burst,
    .burst_timeout_ns = 1000000,
    .max_packet_size = max_packet,
    .n_queues = 1,
    .flows = rules,
    .n_flows = n_rules,
    .group_id = 1 };
  return dq_test_rxq_create (port, &cfg);
}

/* Polls until the end; calls `each` (may be NULL) per packet; returns the packets */
typedef void (*PacketFunc) (const DqBurst *b, const DqPacket *p, guint index, gpointer data);

static guint
drain (DqRxQueue *rxq, guint burst_max, PacketFunc each, gpointer data)
{
  GError *error = NULL;
  DqBurst b;
  guint got = 0;
  int r;
  while ((r = dq_rxq_poll (rxq, &b, 2 * (gint64) NS, &error)) == 1) {
    g_assert_cmpuint (b.n_packets, >=, 1);
    g_assert_cmpuint (b.n_packets, <=, burst_max);
    for (guint i = 0; i < b.n_packets; i++, got++) {
      g_assert_cmpuint ((gsize) b.packets[i].offset + b.packets[i].length, <=, b.size);
      if (each != NULL)
        each (&b, &b.packets[i], got, data);
    }
    dq_rxq_release (rxq, &b);
  }
  g_assert_no_error (error);
  g_assert_cmpint (r, ==, DQ_RXQ_END);
  /* and it stays ended */
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 0, &error), ==, DQ_RXQ_END);
  return got;
}

static void
check_whole (const DqBurst *b, const DqPacket *p, guint i, gpointer data)
{
  guint8 f[2000];
  guint len = frame_len (i);
  frame_fill (f, len, i);
  g_assert_cmpuint (p->length, ==, len);
  g_assert_cmpmem (b->data + p->offset, len, f, len);
  g_assert_cmpuint (p->flags & DQ_PACKET_FLAG_TRUNCATED, ==, 0);
  g_assert_cmpuint (p->flow_id, ==, 0);
  g_assert_cmpuint (p->timestamp, >, 0);
}

static void
test_record (void)
{
  gchar *path = tmp_path ("rec.pcap");
  gchar *dev = g_strdup_printf ("pcap:%s", path);
  DqPort *port = dq_test_port_open (dev);
  g_assert_true (dq_port_info (port)->stamps_frames);
  DqTxConfig cfg = { .scheduled = TRUE };
  DqTxQueue *txq = dq_test_txq_create (port, &cfg);
  GError *error = NULL;
  const guint n = 200;
  guint8 frames[200][2000];
  const guint8 *fp[200];
  guint32 lens[200];
  guint64 times[200];
  const guint64 t0 = G_GUINT64_CONSTANT (1700000000123456789);
  for (guint i = 0; i < n; i++) {
    lens[i] = frame_len (i);
    frame_fill (frames[i], lens[i], i);
    fp[i] = frames[i];
    times[i] = i == 7 ? 0 : t0 + i * G_GUINT64_CONSTANT (1001);
  }
  guint64 before = dq_port_time (port);
  g_assert_cmpint (dq_txq_send_at (txq, fp, lens, times, n, &error), ==, n);
  guint64 after = dq_port_time (port);
  /* too short and too long: refused, counted */
  guint32 bad[2] = { 13, 70000 };
  g_assert_cmpint (dq_txq_send_at (txq, fp, bad, NULL, 2, &error), ==, 2);
  g_assert_true (dq_txq_flush (txq, &error));
  DqTxStats st = dq_test_tx_stats (txq);
  g_assert_cmpuint (st.packets, ==, n);
  g_assert_cmpuint (st.errors, ==, 2);
  dq_txq_destroy (txq);
  dq_port_unref (port);

  /* libpcap reads it back: every byte, every time to the ns */
  char errbuf[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_offline_with_tstamp_precision (path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
  g_assert_nonnull (p);
  g_assert_cmpint (pcap_datalink (p), ==, DLT_EN10MB);
  struct pcap_pkthdr *h;
  const u_char *data;
  guint i = 0;
  while (pcap_next_ex (p, &h, &data) == 1) {
    g_assert_cmpuint (i, <, n);
    g_assert_cmpuint (h->caplen, ==, lens[i]);
    g_assert_cmpuint (h->len, ==, lens[i]);
    g_assert_cmpmem (data, lens[i], frames[i], lens[i]);
    guint64 t = (guint64) h->ts.tv_sec * NS + (guint64) h->ts.tv_usec;
    if (i == 7) {
      g_assert_cmpuint (t, >=, before); /* no time: the port time */
      g_assert_cmpuint (t, <=, after);
    } else {
      g_assert_cmpuint (t, ==, times[i]);
    }
    i++;
  }
  g_assert_cmpuint (i, ==, n);
  pcap_close (p);
  g_free (dev);
  g_free (path);
}

static void
test_replay (void)
{
  gchar *path = tmp_path ("replay.pcap");
  DqPort *port = replay_port (path, 1000, 5 * NS, 1000, "");
  DqRxQueue *rxq = rxq_new (port, 32, 0, NULL, 0);
  g_assert_cmpuint (drain (rxq, 32, check_whole, NULL), ==, 1000);
  DqRxStats st = dq_test_rx_stats (rxq);
  g_assert_cmpuint (st.packets, ==, 1000);
  g_assert_cmpuint (st.drops_filtered + st.truncated, ==, 0);
  dq_rxq_destroy (rxq);
  dq_port_unref (port);
  g_free (path);
}

static void
check_truncated (const DqBurst *b, const DqPacket *p, guint i, gpointer data)
{
  guint len = frame_len (i);
  guint8 f[2000];
  frame_fill (f, len, i);
  g_assert_cmpuint (p->length, ==, MIN (len, 200u));
  g_assert_cmpmem (b->data + p->offset, p->length, f, p->length);
  g_assert_cmpuint (!!(p->flags & DQ_PACKET_FLAG_TRUNCATED), ==, len > 200);
}

typedef struct {
  guint count;
  guint32 flow;
} Marks;

static void
check_marked (const DqBurst *b, const DqPacket *p, guint i, gpointer data)
{
  Marks *m = data;
  g_assert_cmpuint (p->flow_id, ==, m->flow);
  g_assert_cmpuint (p->length, ==, frame_len (i));
  m->count++;
}

static void
test_truncate_and_flows (void)
{
  gchar *path = tmp_path ("flows.pcap");
  DqPort *port = replay_port (path, 500, NS, 1000, "");
  DqRxQueue *rxq = rxq_new (port, 16, 200, NULL, 0);
  g_assert_cmpuint (drain (rxq, 16, check_truncated, NULL), ==, 500);
  DqRxStats st = dq_test_rx_stats (rxq);
  guint expect_trunc = 0;
  for (guint i = 0; i < 500; i++)
    expect_trunc += frame_len (i) > 200;
  g_assert_cmpuint (st.truncated, ==, expect_trunc);
  dq_rxq_destroy (rxq);

  /* every frame has ethertype IPv4: a rule on it marks them all; a rule on the UDP
   * protocol needs a valid IPv4 header, which none has: all filtered out */
  guint n_rules;
  DqFlowRule *rules = dq_test_rules_parse ("ethertype=0x0800 mark=5", &n_rules);
  rxq = rxq_new (port, 16, 0, rules, n_rules);
  Marks m = { 0, 5 };
  g_assert_cmpuint (drain (rxq, 16, check_marked, &m), ==, 500);
  g_assert_cmpuint (m.count, ==, 500);
  g_free (rules);
  dq_rxq_destroy (rxq);
  rules = dq_test_rules_parse ("proto=udp mark=9", &n_rules);
  rxq = rxq_new (port, 16, 0, rules, n_rules);
  g_assert_cmpuint (drain (rxq, 16, NULL, NULL), ==, 0);
  st = dq_test_rx_stats (rxq);
  g_assert_cmpuint (st.drops_filtered, ==, 500);
  g_free (rules);
  dq_rxq_destroy (rxq);
  dq_port_unref (port);
  g_free (path);
}

typedef struct {
  guint64 first, last;
  guint64 gap;   /* the spacing asked for */
  guint64 early; /* packets delivered more than 1 ms before first + i * gap */
} Times;

static void
note_times (const DqBurst *b, const DqPacket *p, guint i, gpointer data)
{
  Times *t = data;
  if (i == 0)
    t->first = p->timestamp;
  if (p->timestamp + 1000000 < t->first + i * t->gap)
    t->early++;
  t->last = p->timestamp;
}

static void
test_pace (void)
{
  gchar *path = tmp_path ("pace.pcap");
  /* 40 frames recorded 5 ms apart */
  DqPort *port = replay_port (path, 40, 100 * NS, 5000000, ",pace=recorded");
  DqRxQueue *rxq = rxq_new (port, 8, 0, NULL, 0);
  Times t = { .gap = 5000000 };
  gint64 start = g_get_monotonic_time ();
  g_assert_cmpuint (drain (rxq, 8, note_times, &t), ==, 40);
  gint64 took_us = g_get_monotonic_time () - start;
  /* no packet before its recorded offset from the first (a late one may be followed by
   * one on time): the span is at least 39 gaps */
  g_assert_cmpuint (t.last - t.first, >=, 39 * G_GUINT64_CONSTANT (5000000));
  g_assert_cmpint (took_us, >=, (gint64) 39 * 5000);
  g_assert_cmpuint (t.early, ==, 0);
  dq_rxq_destroy (rxq);
  dq_port_unref (port);

  /* polls that return at once leave a partial burst open until it is full (burst-timeout
   * 1 s here): 16 packets 1 ms apart come as two bursts of 8 */
  port = replay_port (path, 16, 100 * NS, 1000000, ",pace=recorded");
  DqRxConfig slow = { .burst_packets = 8, .burst_timeout_ns = NS, .n_queues = 1, .group_id = 1 };
  rxq = dq_test_rxq_create (port, &slow);
  for (guint k = 0; k < 2; k++) {
    DqBurst b;
    GError *error = NULL;
    int r;
    gint64 until = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
    while ((r = dq_rxq_poll (rxq, &b, 0, &error)) == 0 && g_get_monotonic_time () < until)
      ;
    g_assert_no_error (error);
    g_assert_cmpint (r, ==, 1);
    g_assert_cmpuint (b.n_packets, ==, 8);
    dq_rxq_release (rxq, &b);
  }
  dq_rxq_destroy (rxq);
  dq_port_unref (port);

  /* rate=1000: 40 packets in at least 39 ms */
  port = replay_port (path, 40, 100 * NS, 5000000, ",rate=1000");
  rxq = rxq_new (port, 8, 0, NULL, 0);
  t = (Times){ .gap = 1000000 };
  g_assert_cmpuint (drain (rxq, 8, note_times, &t), ==, 40);
  g_assert_cmpuint (t.last - t.first, >=, 39 * G_GUINT64_CONSTANT (1000000));
  g_assert_cmpuint (t.early, ==, 0);
  dq_rxq_destroy (rxq);
  dq_port_unref (port);
  g_free (path);
}

static void
expect_open_error (const char *device, int code, const char *const *parts)
{
  GError *error = NULL;
  DqPort *port = dq_port_open (device, &error);
  if (port != NULL) {
    /* the file is opened by the queue */
    DqRxConfig cfg = { .burst_packets = 8, .n_queues = 1, .group_id = 1 };
    g_assert_null (dq_rxq_create (port, &cfg, &error));
    dq_port_unref (port);
  }
  dq_test_expect_error (error, code, parts);
  error = NULL;
}

static void
test_refusals (void)
{
  gchar *missing = tmp_path ("missing.pcap");
  gchar *dev = g_strdup_printf ("pcap:%s", missing);
  expect_open_error (dev, DQ_ERROR_DEVICE,
      (const char *const[]){ "cannot read the capture", "missing.pcap", NULL });
  g_free (dev);

  gchar *text = tmp_path ("text.pcap");
  g_assert_true (g_file_set_contents (text, "not a capture at all\n", -1, NULL));
  dev = g_strdup_printf ("pcap:%s", text);
  expect_open_error (
      dev, DQ_ERROR_DEVICE, (const char *const[]){ "cannot read the capture", NULL });
  g_free (dev);

  gchar *raw = tmp_path ("raw.pcap");
  capture_write (raw, DLT_RAW, 3, NS, 1);
  dev = g_strdup_printf ("pcap:%s", raw);
  expect_open_error (
      dev, DQ_ERROR_DEVICE, (const char *const[]){ "link type is RAW", "Ethernet", NULL });
  g_free (dev);

  GError *error = NULL;
  g_assert_null (dq_port_open ("pcap:x.pcap,speed=2", &error));
  dq_test_expect_error (error, DQ_ERROR_DEVICE,
      (const char *const[]){ "unknown key 'speed=2'", "pace=recorded", NULL });
  error = NULL;
  g_assert_null (dq_port_open ("pcap:x.pcap,rate=0", &error));
  dq_test_expect_error (error, DQ_ERROR_DEVICE, (const char *const[]){ "1 .. 1000000000", NULL });
  error = NULL;

  DqPort *port = dq_test_port_open ("pcap:/nonexistent-dir/out.pcap");
  DqTxConfig tcfg = { 0 };
  g_assert_null (dq_txq_create (port, &tcfg, &error));
  dq_test_expect_error (error, DQ_ERROR_DEVICE,
      (const char *const[]){ "cannot write the capture", "/nonexistent-dir/out.pcap", NULL });
  error = NULL;
  dq_port_unref (port);

  /* several queues; reading and writing one port */
  port = replay_port (text, 3, NS, 1, "");
  DqRxConfig two = { .burst_packets = 8, .n_queues = 2, .group_id = 1 };
  g_assert_null (dq_rxq_create (port, &two, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG, (const char *const[]){ "queues 2", NULL });
  error = NULL;
  DqRxQueue *rxq = rxq_new (port, 8, 0, NULL, 0);
  g_assert_null (dq_txq_create (port, &tcfg, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG, (const char *const[]){ "open for reading", NULL });
  error = NULL;
  dq_rxq_destroy (rxq);
  dq_port_unref (port);
  g_free (missing);
  g_free (text);
  g_free (raw);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dq-pcap-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);
  g_test_add_func ("/pcap/record", test_record);
  g_test_add_func ("/pcap/replay", test_replay);
  g_test_add_func ("/pcap/truncate-and-flows", test_truncate_and_flows);
  g_test_add_func ("/pcap/pace", test_pace);
  g_test_add_func ("/pcap/refusals", test_refusals);
  int r = g_test_run ();
  gchar *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
  (void) !system (cmd);
  g_free (cmd);
  g_free (tmpdir);
  return r;
}
