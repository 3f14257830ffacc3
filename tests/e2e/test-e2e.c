/* End to end on the afpacket engine, over a veth pair in a private network namespace
 * (created and removed here). The scenario every engine runs (daqiritestsrc ! daqirisink
 * -> daqirisrc) is test-e2e-device.c; here what is the afpacket engine's own:
 *
 *   daqirisrc ! daqirisink forwarding every packet unchanged over a second veth pair;
 *   peers that no daqiri code drives: tcpreplay sends to daqirisrc, tcpdump captures what
 *   daqirisink sends;
 *   stress: a downstream that holds every buffer until the ring runs dry, and 200
 *   PLAYING -> NULL -> PLAYING cycles under traffic.
 *
 * Every byte, the count, the flow id of every packet, timestamps and drops are checked.
 *
 * Needs root; skipped (exit 77) without it. */
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsink.h>
#include <gst/daqiri/daqiri.h>
#include <gst/daqiri/daqiritestpacket.h>

#include "dq-netns.h"
#include "dq-receiver.h"
#include "dq-check-suite.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#define TX_IF "dqtx0"
#define RX_IF "dqrx0"
#define FW_OUT_IF "dqfw0" /* a second veth pair: dqfw0 -> dqfw1 */
#define FW_IN_IF "dqfw1"
#define N_FLOWS DQ_E2E_N_FLOWS

static gchar *tmpdir;

/* daqirisrc ! daqirisink forwards every packet unchanged, in order, burst by burst:
 * testsrc -> dqtx0 => dqrx0 -> [daqirisrc ! daqirisink] -> dqfw0 => dqfw1 -> checker */
GST_START_TEST (test_forward_unchanged)
{
  const guint n = 50000;
  Receiver r;
  receiver_init (&r, n);
  GstElement *rx = receiver_pipeline (&r, "afpacket:" FW_IN_IF, "ring-size=134217728");

  GError *error = NULL;
  GstElement *fw =
      gst_parse_launch ("daqirisrc name=src device=afpacket:" RX_IF
                        " ring-size=134217728 ! daqirisink name=tx device=afpacket:" FW_OUT_IF,
          &error);
  fail_unless (fw != NULL);
  fail_unless (gst_element_set_state (fw, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);

  GstStructure *tx = run_testsrc (n,
      "burst-packets=64 packet-size-min=60 packet-size-max=1500 n-flows=" G_STRINGIFY (
          N_FLOWS) " rate=200000",
      "afpacket:" TX_IF);
  gst_structure_free (tx);

  assert_all_received (&r, rx, n);
  GstStructure *fs = element_stats (fw, "src");
  GstStructure *ft = element_stats (fw, "tx");
  fail_unless_equals_uint64 (stat_u64 (fs, "packets"), n);
  fail_unless_equals_uint64 (stat_u64 (ft, "packets"), n);
  fail_unless_equals_uint64 (stat_u64 (ft, "bytes"), stat_u64 (fs, "bytes"));
  fail_unless_equals_uint64 (stat_u64 (ft, "errors"), 0);
  fail_unless_equals_uint64 (stat_u64 (ft, "malformed"), 0);
  gst_structure_free (fs);
  gst_structure_free (ft);
  gst_element_set_state (fw, GST_STATE_NULL);
  gst_object_unref (fw);
  receiver_pipeline_free (&r, rx);
}

GST_END_TEST;

/* ---- pcap files, for the external peers ---- */

static void
write_pcap (const gchar *path, guint n, guint min_size, guint max_size)
{
  FILE *f = fopen (path, "wb");
  GstDaqiriTestPacketParams params;
  guint8 frame[2048];

  fail_unless (f != NULL);
  gst_daqiri_test_packet_params_init (&params);
  guint32 hdr[6] = { 0xa1b23c4d, 0x00040002, 0, 0, 65535, 1 }; /* ns pcap, Ethernet */
  fail_unless (fwrite (hdr, sizeof hdr, 1, f) == 1);
  for (guint seq = 0; seq < n; seq++) {
    guint len = gst_daqiri_test_packet_size (min_size, max_size, seq);
    fail_unless (gst_daqiri_test_packet_write (&params, frame, len, seq, seq % N_FLOWS) == len);
    guint32 rec[4] = { seq / 1000, (seq % 1000) * 1000, len, len };
    fail_unless (fwrite (rec, sizeof rec, 1, f) == 1);
    fail_unless (fwrite (frame, len, 1, f) == 1);
  }
  fclose (f);
}

/* Calls @fn for every record of a pcap file (µs or ns, either byte order). */
static guint
read_pcap (const gchar *path, Receiver *r)
{
  gchar *data;
  gsize size;
  guint n = 0;

  fail_unless (g_file_get_contents (path, &data, &size, NULL));
  fail_unless (size >= 24);
  guint32 magic;
  memcpy (&magic, data, 4);
  fail_unless (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d, "pcap magic %08x", magic);
  gsize off = 24;
  while (off + 16 <= size) {
    guint32 rec[4];
    memcpy (rec, data + off, sizeof rec);
    off += 16;
    fail_unless (rec[2] <= size - off);
    g_mutex_lock (&r->lock);
    receiver_check_frame (r, (const guint8 *) data + off, rec[2], 0, 0);
    g_mutex_unlock (&r->lock);
    off += rec[2];
    n++;
  }
  g_free (data);
  return n;
}

/* whether a program is missing, and so the check `what` is skipped */
static gboolean
skip_without (const gchar *program, const gchar *what)
{
  gchar *p = g_find_program_in_path (program);
  g_free (p);
  if (p == NULL)
    g_printerr ("%s not installed: skipping %s\n", program, what);
  return p == NULL;
}

/* tcpreplay (no daqiri code) sends; daqirisrc receives every packet intact */
GST_START_TEST (test_tcpreplay_to_daqirisrc)
{
  if (skip_without ("tcpreplay", "the external sender check"))
    return;
  const guint n = 20000;
  gchar *pcap = g_build_filename (tmpdir, "replay.pcap", NULL);
  write_pcap (pcap, n, 60, 1500);

  Receiver r;
  receiver_init (&r, n);
  GstElement *rx = receiver_pipeline (&r, "afpacket:" RX_IF, NULL);
  gchar *out = NULL, *err = NULL;
  gint status = 0;
  const gchar *argv[] = { "tcpreplay", "-q", "--pps=100000", "-i", TX_IF, pcap, NULL };
  fail_unless (g_spawn_sync (
      NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &status, NULL));
  fail_unless (g_spawn_check_wait_status (status, NULL), "tcpreplay: %s %s", out, err);
  g_free (out);
  g_free (err);

  guint got = receiver_wait (&r, n, 2000);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  fail_unless_equals_int (r.wrong_flow, 0);
  fail_unless_equals_int (got, n);
  receiver_pipeline_free (&r, rx);
  g_unlink (pcap);
  g_free (pcap);
}

GST_END_TEST;

/* daqirisink sends; tcpdump (no daqiri code) captures every packet intact */
GST_START_TEST (test_daqirisink_to_tcpdump)
{
  if (skip_without ("tcpdump", "the external receiver check"))
    return;
  const guint n = 20000;
  gchar *pcap = g_build_filename (tmpdir, "capture.pcap", NULL);
  gchar *count = g_strdup_printf ("%u", n);
  const gchar *argv[] = { "tcpdump", "-i", RX_IF, "-w", pcap, "-c", count, "-U", "-B", "65536",
    "-Z", "root", "udp", NULL };
  GPid pid;
  gint err_fd;
  fail_unless (g_spawn_async_with_pipes (NULL, (gchar **) argv, NULL,
      G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, NULL, NULL, &err_fd,
      NULL));
  /* tcpdump says "listening on" once its socket is up */
  GString *said = g_string_new (NULL);
  gchar c;
  while (strstr (said->str, "listening on") == NULL && read (err_fd, &c, 1) == 1)
    g_string_append_c (said, c);
  fail_unless (strstr (said->str, "listening on") != NULL, "tcpdump: %s", said->str);
  g_string_free (said, TRUE);

  GstStructure *tx = run_testsrc (n,
      "burst-packets=32 packet-size-min=60 packet-size-max=1500 n-flows=" G_STRINGIFY (
          N_FLOWS) " rate=100000",
      "afpacket:" TX_IF);
  fail_unless_equals_uint64 (stat_u64 (tx, "packets"), n);
  gst_structure_free (tx);

  gint status = 0;
  for (guint i = 0; i < 100 && waitpid (pid, &status, WNOHANG) == 0; i++)
    g_usleep (50000);
  if (waitpid (pid, &status, WNOHANG) == 0) {
    kill (pid, SIGINT);
    waitpid (pid, &status, 0);
  }
  close (err_fd);
  g_spawn_close_pid (pid);

  Receiver r;
  receiver_init (&r, n);
  guint records = read_pcap (pcap, &r);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  fail_unless_equals_int (records, n);
  fail_unless_equals_int (r.received, n);
  receiver_clear (&r);
  g_unlink (pcap);
  g_free (pcap);
  g_free (count);
}

GST_END_TEST;

/* A downstream that holds every buffer: the ring runs dry, the drops are counted (sent =
 * received + dropped), a warning is posted, and once the buffers are released the stream
 * comes back. */
GST_START_TEST (test_held_buffers_exhaust_ring)
{
  const guint n = 20000;
  Receiver r;
  receiver_init (&r, 2 * n);
  r.hold = TRUE;
  GstElement *rx = receiver_pipeline (&r, "afpacket:" RX_IF, "ring-size=1048576 burst-packets=64");

  GstStructure *tx = run_testsrc (n,
      "burst-packets=32 packet-size-min=1000 packet-size-max=1000 n-flows=1 rate=200000",
      "afpacket:" TX_IF);
  gst_structure_free (tx);
  receiver_wait (&r, n, 500);

  GstStructure *s = element_stats (rx, "src");
  guint64 packets = stat_u64 (s, "packets");
  guint64 drops = stat_u64 (s, "drops-ring-full");
  gst_structure_free (s);
  /* 1 MiB holds about a thousand 1000-byte frames, far fewer than were sent */
  fail_unless (packets < n / 4, "ring held %" G_GUINT64_FORMAT " packets", packets);
  fail_unless (drops > 0);
  fail_unless_equals_uint64 (packets + drops, n);
  fail_unless_equals_int (r.received, packets);
  fail_unless_equals_int (r.bad, 0);

  /* the warning reaches the bus */
  assert_warning_posted (rx, "ring was full");

  /* release everything: the stream recovers */
  g_mutex_lock (&r.lock);
  r.hold = FALSE;
  g_ptr_array_set_size (r.held, 0);
  memset (r.seen, 0, 2 * n);
  r.received = 0;
  r.n_expected = 2 * n;
  g_mutex_unlock (&r.lock);
  tx = run_testsrc (2000,
      "burst-packets=32 packet-size-min=1000 packet-size-max=1000 n-flows=1 rate=50000",
      "afpacket:" TX_IF);
  gst_structure_free (tx);
  fail_unless_equals_int (receiver_wait (&r, 2000, 2000), 2000);
  fail_unless_equals_int (r.bad, 0);

  receiver_pipeline_free (&r, rx);
}

GST_END_TEST;

/* 200 PLAYING -> NULL -> PLAYING cycles under traffic, some buffers outliving the element's
 * run: no crash, no leak, each run receives intact packets */
GST_START_TEST (test_state_cycles_under_traffic)
{
  GError *error = NULL;
  GstElement *sender = gst_parse_launch (
      "daqiritestsrc rate=50000 burst-packets=16 "
      "packet-size-min=60 packet-size-max=1500 n-flows=4 ! daqirisink device=afpacket:" TX_IF,
      &error);
  fail_unless (sender != NULL);
  fail_unless (gst_element_set_state (sender, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);

  Receiver r;
  receiver_init (&r, G_MAXUINT32 / 2);
  r.hold = TRUE;
  GstElement *rx = receiver_pipeline_new (&r, "afpacket:" RX_IF, "ring-size=262144");

  for (guint cycle = 0; cycle < 200; cycle++) {
    guint before = r.buffers;
    fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
    /* keep the newest few buffers across the NULL transition, free the rest */
    gboolean got = receiver_wait_buffer (&r, before, 2000, 4);
    fail_unless (got, "cycle %u received nothing", cycle);
    fail_unless (gst_element_set_state (rx, GST_STATE_NULL) == GST_STATE_CHANGE_SUCCESS);
  }
  /* the held buffers still read fine after their element stopped */
  receiver_assert_held_intact (&r);
  fail_unless_equals_int (r.bad, 0);
  gst_element_set_state (sender, GST_STATE_NULL);
  gst_object_unref (sender);
  gst_object_unref (rx);
  receiver_clear (&r);
}

GST_END_TEST;

static Suite *
e2e_suite (void)
{
  TCase *tc;
  Suite *s = dq_check_suite_new ("daqiri-e2e", "veth", 300, &tc);
  tcase_add_test (tc, test_forward_unchanged);
  tcase_add_test (tc, test_tcpreplay_to_daqirisrc);
  tcase_add_test (tc, test_daqirisink_to_tcpdump);
  tcase_add_test (tc, test_held_buffers_exhaust_ring);
  tcase_add_test (tc, test_state_cycles_under_traffic);
  return s;
}

int
main (int argc, char **argv)
{
  /* before any thread exists: every thread created later is in the namespace */
  DqNetns *ns = dq_netns_setup_or_skip (TX_IF, RX_IF, 0);
  GError *error = NULL;
  if (!dq_netns_ip (
          ns, &error, "link", "add", FW_OUT_IF, "type", "veth", "peer", "name", FW_IN_IF, NULL) ||
      !dq_netns_ip (ns, &error, "link", "set", FW_OUT_IF, "up", NULL) ||
      !dq_netns_ip (ns, &error, "link", "set", FW_IN_IF, "up", NULL) ||
      !dq_netns_wait_up (ns, FW_OUT_IF, 5000, &error) ||
      !dq_netns_wait_up (ns, FW_IN_IF, 5000, &error)) {
    g_printerr ("second veth pair: %s\n", error->message);
    dq_netns_free (ns);
    return 1;
  }

  tmpdir = g_dir_make_tmp ("daqiri-e2e-XXXXXX", NULL);
  gst_check_init (&argc, &argv);
  int failed = gst_check_run_suite (e2e_suite (), "e2e", __FILE__);
  g_rmdir (tmpdir);
  g_free (tmpdir);
  dq_netns_free (ns);
  return failed != 0;
}
