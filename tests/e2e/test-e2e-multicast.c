/* Multicast on afpacket: a flow rule naming a group joins it on the interface.
 *
 *   appsrc ! udpsink host=239.7.7.7 multicast-iface=dqmc0       (GStreamer's own sender)
 *   daqirisrc device=afpacket:dqmc1 flows="proto=udp dst=239.7.7.7 dst-port=5004 mark=7"
 *
 * over a veth pair in a private network namespace (root; skipped, exit 77, without).
 * Checked: the group is joined on dqmc1 once the source runs and left when its queue goes
 * away (/proc/net/igmp of the namespace); every datagram arrives once and in order with its
 * mark, to the group's MAC (01:00:5e + the low 23 bits) and address, its payload intact,
 * and one to another group is not delivered; changing `flows` while PLAYING to another
 * group leaves the first and joins the second, whose datagrams then arrive.
 */
#include <gst/check/gstcheck.h>
#include <gst/app/gstappsrc.h>
#include <gst/daqiri/daqiri.h>

#include "dq-netns.h"
#include "dq-receiver.h"
#include "dq-check-suite.h"

#include <string.h>

#define TX_IF "dqmc0"
#define RX_IF "dqmc1"
#define PORT 5004
#define N_DATAGRAMS 300
#define PAYLOAD 200

static DqNetns *netns;

/* Whether `ifname` holds the membership of group a.b.c.d (/proc/net/igmp of this
 * namespace: a line per device, then one per group, its address as the kernel stores it,
 * network byte order printed as a host-order hex number) */
static gboolean
igmp_joined (const char *ifname, const char *group)
{
  gchar *text = NULL;
  gboolean in_dev = FALSE, found = FALSE;
  fail_unless (g_file_get_contents ("/proc/net/igmp", &text, NULL, NULL));
  gchar **lines = g_strsplit (text, "\n", -1);
  for (guint i = 1; lines[i] != NULL && !found; i++) {
    const gchar *l = lines[i];
    if (l[0] != '\t' && l[0] != '\0') {
      gchar **f = g_strsplit_set (l, " \t", -1);
      guint k = 0;
      while (f[k] != NULL && f[k][0] == '\0')
        k++;
      /* "Idx Device : Count Querier": the device is the second field */
      guint fields = 0;
      in_dev = FALSE;
      for (; f[k] != NULL; k++) {
        if (f[k][0] == '\0')
          continue;
        if (++fields == 2)
          in_dev = strcmp (f[k], ifname) == 0;
      }
      g_strfreev (f);
      continue;
    }
    if (!in_dev)
      continue;
    guint32 v = (guint32) g_ascii_strtoull (l + strspn (l, "\t "), NULL, 16);
    gchar *addr =
        g_strdup_printf ("%u.%u.%u.%u", v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24);
    found = strcmp (addr, group) == 0;
    g_free (addr);
  }
  g_strfreev (lines);
  g_free (text);
  return found;
}

typedef struct {
  Receiver r;
  guint bad, wrong_group;
  guint32 next_seq;
  guint32 mark;
  guint8 last_octet; /* of the group the datagrams must go to */
} Mc;

/* A datagram as udpsink sent it: to the group's MAC and address and our port, the
 * sequence number next in line, the flow's mark, every payload byte (under the lock) */
static void
mc_packet (Receiver *r, const GstDaqiriPacket *p, const guint8 *f, gpointer data)
{
  Mc *mc = data;
  const guint8 mac[6] = { 0x01, 0x00, 0x5e, 7, 7, mc->last_octet };
  if (p->length != 42 + PAYLOAD || memcmp (f, mac, 6) != 0 || f[30] != 239 || f[31] != 7 ||
      f[32] != 7 || f[33] != mc->last_octet || GST_READ_UINT16_BE (f + 36) != PORT) {
    mc->wrong_group++;
    return;
  }
  guint32 seq = GST_READ_UINT32_BE (f + 42);
  gboolean ok = p->flow_id == mc->mark && seq == mc->next_seq;
  for (guint j = 4; ok && j < PAYLOAD; j++)
    ok = f[42 + j] == (guint8) (seq * 3 + j);
  if (!ok)
    mc->bad++;
  mc->next_seq = seq + 1;
  r->received++;
}

/* Sends datagrams seq0 .. seq0+n-1 to group 239.7.7.<octet> through udpsink */
static void
send_datagrams (guint8 octet, guint32 seq0, guint n)
{
  gchar *desc = g_strdup_printf ("appsrc name=in ! udpsink host=239.7.7.%u port=%u "
                                 "multicast-iface=" TX_IF " sync=false",
      octet, PORT);
  GError *error = NULL;
  GstElement *p = gst_parse_launch (desc, &error);
  g_free (desc);
  fail_unless (p != NULL, "%s", error ? error->message : "?");
  GstElement *in = gst_bin_get_by_name (GST_BIN (p), "in");
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  for (guint32 s = seq0; s < seq0 + n; s++) {
    guint8 *d = g_malloc (PAYLOAD);
    GST_WRITE_UINT32_BE (d, s);
    for (guint j = 4; j < PAYLOAD; j++)
      d[j] = (guint8) (s * 3 + j);
    gst_app_src_push_buffer (GST_APP_SRC (in), gst_buffer_new_wrapped (d, PAYLOAD));
    g_usleep (200);
  }
  gst_app_src_end_of_stream (GST_APP_SRC (in));
  GstMessage *m = gst_bus_timed_pop_filtered (
      GST_ELEMENT_BUS (p), 5 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS, "udpsink did not finish");
  gst_message_unref (m);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (in);
  gst_object_unref (p);
}

/* whether the membership becomes `joined` within 2 s (a change of flows is applied by the
 * source's streaming thread) */
static gboolean
igmp_becomes (const char *ifname, const char *group, gboolean joined)
{
  for (int i = 0; i < 200; i++) {
    if (igmp_joined (ifname, group) == joined)
      return TRUE;
    g_usleep (10000);
  }
  return FALSE;
}

/* Waits for n datagrams (and a little longer for any that must not come), then checks
 * every one was right */
static void
assert_received (Mc *mc, guint n)
{
  fail_unless_equals_int (receiver_wait (&mc->r, n, 5000), n);
  g_usleep (50000);
  g_mutex_lock (&mc->r.lock);
  fail_unless_equals_int (mc->r.received, n);
  fail_unless_equals_int (mc->bad, 0);
  fail_unless_equals_int (mc->wrong_group, 0);
  g_mutex_unlock (&mc->r.lock);
}

GST_START_TEST (test_join_receive_leave)
{
  fail_unless (dq_netns_ip (netns, NULL, "addr", "add", "10.77.0.1/24", "dev", TX_IF, NULL));
  fail_unless (dq_netns_ip (netns, NULL, "addr", "add", "10.77.0.2/24", "dev", RX_IF, NULL));
  fail_if (igmp_joined (RX_IF, "239.7.7.7"));

  Mc mc = { .mark = 7, .last_octet = 7 };
  receiver_init (&mc.r, N_DATAGRAMS + 1000);
  GError *error = NULL;
  GstElement *rx = gst_parse_launch ("daqirisrc name=src device=afpacket:" RX_IF
                                     " flows=\"proto=udp dst=239.7.7.7 dst-port=5004 mark=7\" "
                                     "! appsink name=out sync=false",
      &error);
  fail_unless (rx != NULL, "%s", error ? error->message : "?");
  GstElement *out = gst_bin_get_by_name (GST_BIN (rx), "out");
  receiver_attach_full (&mc.r, out, mc_packet, &mc);
  play (rx);
  fail_unless (igmp_joined (RX_IF, "239.7.7.7"), "the group is not joined on " RX_IF);
  fail_if (igmp_joined (TX_IF, "239.7.7.7"));

  send_datagrams (7, 0, N_DATAGRAMS);
  /* another group: not joined, not in the rules, never delivered */
  send_datagrams (9, 0, 20);
  assert_received (&mc, N_DATAGRAMS);

  /* another group while PLAYING: the first is left, the second joined and received */
  GstElement *src = gst_bin_get_by_name (GST_BIN (rx), "src");
  g_object_set (src, "flows", "proto=udp dst=239.7.7.8 dst-port=5004 mark=8", NULL);
  gst_object_unref (src);
  fail_unless (igmp_becomes (RX_IF, "239.7.7.8", TRUE), "the new group is not joined");
  fail_unless (igmp_becomes (RX_IF, "239.7.7.7", FALSE), "the old group is not left");
  g_mutex_lock (&mc.r.lock);
  mc.r.received = 0;
  mc.next_seq = 1000;
  mc.mark = 8;
  mc.last_octet = 8;
  g_mutex_unlock (&mc.r.lock);
  send_datagrams (8, 1000, 100);
  assert_received (&mc, 100);

  /* the queue gone (stopped, and the last burst downstream held released with the
   * pipeline): no membership left */
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (out);
  gst_object_unref (rx);
  fail_unless (igmp_becomes (RX_IF, "239.7.7.8", FALSE), "still a member after the stop");
  fail_if (igmp_joined (RX_IF, "239.7.7.7"));
  receiver_clear (&mc.r);
}

GST_END_TEST;

static Suite *
mc_suite (void)
{
  TCase *tc;
  Suite *s = dq_check_suite_new ("daqiri-e2e-multicast", "afpacket", 60, &tc);
  tcase_add_test (tc, test_join_receive_leave);
  return s;
}

int
main (int argc, char **argv)
{
  netns = dq_netns_setup_or_skip (TX_IF, RX_IF, 0);
  gst_check_init (&argc, &argv);
  int failed = gst_check_run_suite (mc_suite (), "e2e-multicast", __FILE__);
  dq_netns_free (netns);
  return failed != 0;
}
