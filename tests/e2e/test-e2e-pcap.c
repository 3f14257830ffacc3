/* The pcap engine through the elements, against tcpdump and tshark:
 *
 *   appsrc (test packets, known timestamps) ! daqirisink device=pcap:F
 *     then `tcpdump -r F -xx` and `tshark -r F`: every frame's bytes and every timestamp,
 *     to the nanosecond, as the packets' own timestamps (the sink records them);
 *   tcpdump -w F on a veth pair (root, a private network namespace), fed by
 *   daqiritestsrc ! daqirisink device=afpacket:...
 *     then daqirisrc device=pcap:F ! appsink: every packet intact, once, in order, with the
 *     mark of its flow rule, and EOS at the end of the file;
 *   daqirisrc on a missing file: the pipeline does not start, the error names the file.
 */
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsrc.h>
#include <gst/daqiri/daqiri.h>
#include <gst/daqiri/daqiritestpacket.h>

#include "dq-check-suite.h"
#include "dq-netns.h"
#include "dq-receiver.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define TX_IF "dqpc0"
#define RX_IF "dqpc1"
#define N_RECORD 300
#define N_CAPTURE 2000
#define T0 G_GUINT64_CONSTANT (1700000000000000007)

static DqNetns *netns;
static gchar *tmpdir;

static guint
record_len (guint i)
{
  return 60 + (i * 131) % 1400;
}

static guint64
record_time (guint i)
{
  return T0 + (guint64) i * 1234567;
}

/* The output of a command (stdout), failing the test when it does not run */
static gchar *
run_tool (const gchar *cmdline)
{
  gchar *out = NULL, *err = NULL;
  gint status = 0;
  GError *error = NULL;
  fail_unless (g_spawn_command_line_sync (cmdline, &out, &err, &status, &error), "%s: %s", cmdline,
      error ? error->message : "?");
  fail_unless (g_spawn_check_wait_status (status, NULL), "%s failed: %s", cmdline, err);
  g_free (err);
  return out;
}

GST_START_TEST (test_recorded_read_by_tools)
{
  gchar *path = g_build_filename (tmpdir, "rec.pcap", NULL);
  GstElement *p = dq_check_launch ("appsrc name=in caps=application/x-daqiri-packets "
                                   "format=time ! daqirisink device=pcap:%s",
      path);
  GstElement *in = gst_bin_get_by_name (GST_BIN (p), "in");
  play (p);
  GstDaqiriTestPacketParams params;
  gst_daqiri_test_packet_params_init (&params);
  guint8 *frames[N_RECORD];
  for (guint b = 0; b < N_RECORD / 30; b++) {
    gsize size = 0;
    for (guint i = b * 30; i < b * 30 + 30; i++)
      size += record_len (i);
    GstBuffer *buf = gst_buffer_new_allocate (NULL, size, NULL);
    GstMapInfo map;
    gst_buffer_map (buf, &map, GST_MAP_WRITE);
    GstDaqiriPacket pk[30];
    gsize off = 0;
    for (guint k = 0; k < 30; k++) {
      guint i = b * 30 + k;
      gst_daqiri_test_packet_write (&params, map.data + off, record_len (i), i, i % 3);
      frames[i] = g_memdup2 (map.data + off, record_len (i));
      pk[k] = (GstDaqiriPacket){
        .offset = (guint32) off, .length = record_len (i), .timestamp = record_time (i)
      };
      off += record_len (i);
    }
    gst_buffer_unmap (buf, &map);
    gst_buffer_add_daqiri_packet_meta (buf, pk, 30);
    fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (in), buf), GST_FLOW_OK);
  }
  gst_app_src_end_of_stream (GST_APP_SRC (in));
  GstMessage *m = gst_bus_timed_pop_filtered (
      GST_ELEMENT_BUS (p), 5 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS);
  gst_message_unref (m);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (in);
  gst_object_unref (p);

  /* tcpdump: a header line with the time, then the frame in hex, 16 bytes a line */
  gchar *cmd = g_strdup_printf ("tcpdump -r %s -nn --nano -tt -xx", path);
  gchar *out = run_tool (cmd);
  g_free (cmd);
  gchar **lines = g_strsplit (out, "\n", -1);
  GByteArray *bytes = g_byte_array_new ();
  gint n = -1;
  for (guint l = 0;; l++) {
    gboolean hex = lines[l] != NULL && g_str_has_prefix (lines[l], "\t0x");
    if (!hex && n >= 0) {
      fail_unless_equals_int (bytes->len, record_len (n));
      fail_unless (memcmp (bytes->data, frames[n], bytes->len) == 0, "frame %d differs", n);
    }
    if (lines[l] == NULL)
      break;
    if (hex) {
      /* "\t0x0010:  4500 0046 ..." */
      const gchar *h = strchr (lines[l], ':') + 1;
      for (; *h != '\0'; h++) {
        if (g_ascii_isxdigit (h[0]) && g_ascii_isxdigit (h[1])) {
          guint8 v = (guint8) (g_ascii_xdigit_value (h[0]) << 4 | g_ascii_xdigit_value (h[1]));
          g_byte_array_append (bytes, &v, 1);
          h++;
        }
      }
      continue;
    }
    if (lines[l][0] == '\0')
      continue;
    n++;
    g_byte_array_set_size (bytes, 0);
    guint64 sec = g_ascii_strtoull (lines[l], NULL, 10);
    guint64 nsec = g_ascii_strtoull (strchr (lines[l], '.') + 1, NULL, 10);
    fail_unless_equals_uint64 (sec * 1000000000 + nsec, record_time (n));
  }
  fail_unless_equals_int (n + 1, N_RECORD);
  g_strfreev (lines);
  g_free (out);
  g_byte_array_unref (bytes);

  /* tshark: time, length and the UDP ports of every frame */
  cmd = g_strdup_printf ("tshark -r %s -T fields -e frame.time_epoch -e frame.len "
                         "-e udp.dstport",
      path);
  out = run_tool (cmd);
  g_free (cmd);
  lines = g_strsplit (out, "\n", -1);
  guint rows = 0;
  for (guint l = 0; lines[l] != NULL && lines[l][0] != '\0'; l++, rows++) {
    guint64 t = record_time (l);
    gchar *want = g_strdup_printf ("%" G_GUINT64_FORMAT ".%09" G_GUINT64_FORMAT "\t%u\t%u",
        t / 1000000000, t % 1000000000, record_len (l), params.dst_port + l % 3);
    fail_unless_equals_string (lines[l], want);
    g_free (want);
  }
  fail_unless_equals_int (rows, N_RECORD);
  g_strfreev (lines);
  g_free (out);
  for (guint i = 0; i < N_RECORD; i++)
    g_free (frames[i]);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_tcpdump_capture_replayed)
{
  if (netns == NULL) {
    g_printerr ("SKIP tcpdump capture: needs root for a veth pair\n");
    return;
  }
  gchar *path = g_build_filename (tmpdir, "tcpdump.pcap", NULL);
  gchar *argv[] = { "tcpdump", "-i", RX_IF, "-w", path, "-U", "--time-stamp-precision=nano", "-c",
    g_strdup_printf ("%u", N_CAPTURE), "udp", NULL };
  GPid pid;
  GError *error = NULL;
  fail_unless (g_spawn_async (NULL, argv, NULL,
                   G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                       G_SPAWN_STDERR_TO_DEV_NULL,
                   NULL, NULL, &pid, &error),
      "tcpdump: %s", error ? error->message : "?");
  g_free (argv[8]);
  g_usleep (G_USEC_PER_SEC); /* tcpdump opens its socket */
  gchar *launch = g_strdup_printf ("daqiritestsrc num-packets=%u burst-packets=32 n-flows=%u "
                                   "packet-size-min=60 packet-size-max=1500 rate=100000 ! "
                                   "daqirisink name=tx device=afpacket:" TX_IF,
      N_CAPTURE, DQ_E2E_N_FLOWS);
  GstStructure *tx = run_sender (launch);
  g_free (launch);
  fail_unless_equals_uint64 (stat_u64 (tx, "packets"), N_CAPTURE);
  gst_structure_free (tx);
  int status = -1;
  for (int i = 0; i < 100 && waitpid (pid, &status, WNOHANG) == 0; i++)
    g_usleep (50000);
  if (!WIFEXITED (status)) {
    kill (pid, SIGTERM);
    waitpid (pid, &status, 0);
  }
  g_spawn_close_pid (pid);
  fail_unless (WIFEXITED (status) && WEXITSTATUS (status) == 0, "tcpdump did not finish");

  Receiver r;
  gchar *dev = g_strdup_printf ("pcap:%s", path);
  GstElement *rx = ordered_receiver (&r, N_CAPTURE, dev, "burst-packets=64");
  g_free (dev);
  fail_unless_equals_int (receiver_wait (&r, N_CAPTURE, 5000), N_CAPTURE);
  GstMessage *m = gst_bus_timed_pop_filtered (
      GST_ELEMENT_BUS (rx), 5 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS, "no EOS at the end");
  gst_message_unref (m);
  g_mutex_lock (&r.lock);
  fail_unless_equals_int (r.received, N_CAPTURE);
  fail_unless_equals_int (r.bad, 0);
  fail_unless_equals_int (r.duplicates, 0);
  fail_unless_equals_int (r.out_of_order, 0);
  fail_unless_equals_int (r.wrong_flow, 0);
  fail_unless_equals_uint64 (r.bytes, test_packet_bytes (N_CAPTURE, 60, 1500));
  g_mutex_unlock (&r.lock);
  receiver_pipeline_free (&r, rx);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_missing_file)
{
  GstElement *p = gst_parse_launch ("daqirisrc device=pcap:/nonexistent/in.pcap ! fakesink", NULL);
  fail_unless (p != NULL);
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  GstMessage *m = gst_bus_pop_filtered (GST_ELEMENT_BUS (p), GST_MESSAGE_ERROR);
  fail_unless (m != NULL);
  GError *e = NULL;
  gchar *dbg = NULL;
  gst_message_parse_error (m, &e, &dbg);
  gchar *all = g_strdup_printf ("%s %s", e->message, dbg ? dbg : "");
  fail_unless (strstr (all, "/nonexistent/in.pcap") != NULL, "%s", all);
  fail_unless (strstr (all, "cannot read the capture") != NULL, "%s", all);
  g_free (all);
  g_free (dbg);
  g_error_free (e);
  gst_message_unref (m);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
}

GST_END_TEST;

int
main (int argc, char **argv)
{
  netns = dq_netns_setup_optional (TX_IF, RX_IF, "the tcpdump capture");
  gst_check_init (&argc, &argv);
  tmpdir = g_dir_make_tmp ("dq-e2e-pcap-XXXXXX", NULL);
  TCase *tc;
  Suite *s = dq_check_suite_new ("daqiri-e2e-pcap", "pcap", 60, &tc);
  tcase_add_test (tc, test_recorded_read_by_tools);
  tcase_add_test (tc, test_tcpdump_capture_replayed);
  tcase_add_test (tc, test_missing_file);
  int failed = gst_check_run_suite (s, "e2e-pcap", __FILE__);
  gchar *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
  (void) !system (cmd);
  g_free (cmd);
  g_free (tmpdir);
  if (netns != NULL)
    dq_netns_free (netns);
  return failed != 0;
}
