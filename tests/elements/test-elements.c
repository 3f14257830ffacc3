/* daqirisrc / daqirisink element tests: properties, caps, meta, clock, PTS, latency, and
 * every bad-input case that has to end in a clear ERROR. Traffic tests use the loopback
 * interface (they need CAP_NET_RAW and are skipped without it). */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/base/gstbasesrc.h>
#include <gst/daqiri/daqiri.h>

#include <arpa/inet.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dq-check-suite.h"

static gboolean
have_raw_socket (void)
{
  int fd = socket (AF_PACKET, SOCK_RAW, 0);
  if (fd < 0)
    return FALSE;
  close (fd);
  return TRUE;
}

/* Sets @element (in a pipeline of its own) to PAUSED and returns the text of the first
 * ERROR it posts, or NULL when the state change worked. */
static gchar *
start_and_get_error (GstElement *element)
{
  GstElement *pipeline = gst_pipeline_new (NULL);
  gchar *text = NULL;

  /* the caller keeps its one reference: the bin takes (and gst_bin_remove drops) its own */
  if (g_object_is_floating (element))
    gst_object_ref_sink (element);
  gst_bin_add (GST_BIN (pipeline), element);
  if (GST_IS_BASE_SRC (element)) {
    GstElement *sink = gst_element_factory_make ("fakesink", NULL);
    gst_bin_add (GST_BIN (pipeline), sink);
    fail_unless (gst_element_link (element, sink));
  }
  GstStateChangeReturn ret = gst_element_set_state (pipeline, GST_STATE_PAUSED);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  if (msg != NULL) {
    GError *err = NULL;
    gchar *dbg = NULL;
    gst_message_parse_error (msg, &err, &dbg);
    text = g_strdup_printf ("%s | %s", err->message, dbg ? dbg : "");
    g_error_free (err);
    g_free (dbg);
    gst_message_unref (msg);
    fail_unless (ret == GST_STATE_CHANGE_FAILURE);
  } else {
    fail_if (ret == GST_STATE_CHANGE_FAILURE);
  }
  gst_object_unref (bus);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_bin_remove (GST_BIN (pipeline), element);
  gst_object_unref (pipeline);
  return text;
}

static void
assert_start_error (GstElement *element, const gchar *const *needles)
{
  gchar *text = start_and_get_error (element);
  fail_unless (text != NULL, "expected an ERROR");
  for (guint i = 0; needles[i] != NULL; i++)
    fail_unless (strstr (text, needles[i]) != NULL, "error '%s' lacks '%s'", text, needles[i]);
  g_free (text);
}

GST_START_TEST (test_src_defaults_and_ranges)
{
  GstElement *src = gst_element_factory_make ("daqirisrc", NULL);
  guint queues, burst, max;
  guint64 timeout, ring;
  gchar *device;

  fail_unless (src != NULL);
  g_object_get (src, "device", &device, "queues", &queues, "burst-packets", &burst, "burst-timeout",
      &timeout, "ring-size", &ring, "max-packet-size", &max, NULL);
  fail_unless (device == NULL);
  fail_unless_equals_int (queues, 1);
  fail_unless_equals_int (burst, 256);
  fail_unless_equals_uint64 (timeout, GST_MSECOND);
  fail_unless_equals_uint64 (ring, 64 * 1024 * 1024);
  fail_unless_equals_int (max, 9216);

  GParamSpecUInt *ps =
      (GParamSpecUInt *) g_object_class_find_property (G_OBJECT_GET_CLASS (src), "burst-packets");
  fail_unless_equals_int (ps->minimum, 1);
  fail_unless_equals_int (ps->maximum, 65535);
  fail_unless (((GParamSpec *) ps)->flags & GST_PARAM_MUTABLE_READY);
  GParamSpec *stats = g_object_class_find_property (G_OBJECT_GET_CLASS (src), "stats");
  fail_unless (stats->flags & G_PARAM_READABLE);
  fail_if (stats->flags & G_PARAM_WRITABLE);

  /* stats before start: every counter there and zero */
  GstStructure *s = NULL;
  g_object_get (src, "stats", &s, NULL);
  guint64 v = 1;
  fail_unless (gst_structure_get_uint64 (s, "packets", &v));
  fail_unless_equals_uint64 (v, 0);
  fail_unless (gst_structure_has_field (s, "bytes"));
  fail_unless (gst_structure_has_field (s, "drops-ring-full"));
  gst_structure_free (s);

  g_free (device);
  gst_object_unref (src);
}

GST_END_TEST;

GST_START_TEST (test_src_template_caps)
{
  GstElement *src = gst_element_factory_make ("daqirisrc", NULL);
  GstPad *pad = gst_element_get_static_pad (src, "src");
  GstCaps *caps = gst_pad_query_caps (pad, NULL);
  GstStructure *s = gst_caps_get_structure (caps, 0);

  fail_unless (gst_structure_has_name (s, GST_DAQIRI_PACKETS_MEDIA_TYPE));
  fail_unless (gst_structure_has_field (s, "max-packet-size"));
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_object_unref (src);
}

GST_END_TEST;

/* What one pad template of a daqiri element takes or makes: its media types (each present,
 * no other) and the memory features it allows besides system memory (each present, no
 * other). */
typedef struct {
  const gchar *element;
  const gchar *pad;
  const gchar *names[4];
  const gchar *features[3];
} TemplateWant;

#define FRAME_TYPE "application/x-daqiri-frame"
#define GSTCUDA_FEATURE "memory:CUDAMemory"

static const TemplateWant template_wants[] = {
  { "daqirisrc", "src", { GST_DAQIRI_PACKETS_MEDIA_TYPE },
      { GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA, GSTCUDA_FEATURE } },
  { "daqirisink", "sink", { GST_DAQIRI_PACKETS_MEDIA_TYPE, "application/octet-stream" }, { NULL } },
  { "daqiritestsrc", "src", { GST_DAQIRI_PACKETS_MEDIA_TYPE }, { NULL } },
  { "daqirireorder", "sink", { GST_DAQIRI_PACKETS_MEDIA_TYPE },
      { GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA, GSTCUDA_FEATURE } },
  { "daqirireorder", "src", { FRAME_TYPE, "video/x-raw" },
      { GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA, GSTCUDA_FEATURE } },
  { "daqiripay", "sink", { FRAME_TYPE, "video/x-raw", "application/octet-stream" },
      { GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA, GSTCUDA_FEATURE } },
  { "daqiripay", "src", { GST_DAQIRI_PACKETS_MEDIA_TYPE }, { NULL } },
};

static const TemplateWant *
template_want (const gchar *element, const gchar *pad)
{
  for (guint i = 0; i < G_N_ELEMENTS (template_wants); i++)
    if (g_str_equal (template_wants[i].element, element) &&
        g_str_equal (template_wants[i].pad, pad))
      return &template_wants[i];
  return NULL;
}

static gboolean
in_list (const gchar *const *list, guint n, const gchar *s)
{
  for (guint i = 0; i < n && list[i] != NULL; i++)
    if (g_str_equal (list[i], s))
      return TRUE;
  return FALSE;
}

/* Checks one template's caps against what it should say. */
static void
assert_template (const gchar *element, const gchar *pad, GstCaps *caps)
{
  const TemplateWant *want = template_want (element, pad);
  fail_unless (want != NULL, "%s pad '%s': a template no test expects", element, pad);
  fail_if (gst_caps_is_any (caps), "%s pad '%s' says ANY", element, pad);
  fail_if (gst_caps_is_empty (caps), "%s pad '%s' is empty", element, pad);
  fail_unless (want->names[0] != NULL);

  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    const gchar *name = gst_structure_get_name (gst_caps_get_structure (caps, i));
    fail_unless (in_list (want->names, G_N_ELEMENTS (want->names), name), "%s pad '%s' names %s",
        element, pad, name);
    GstCapsFeatures *f = gst_caps_get_features (caps, i);
    if (gst_caps_features_is_equal (f, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY))
      continue;
    fail_unless_equals_int (gst_caps_features_get_size (f), 1);
    const gchar *feature = gst_caps_features_get_nth (f, 0);
    fail_unless (in_list (want->features, G_N_ELEMENTS (want->features), feature),
        "%s pad '%s' allows %s", element, pad, feature);
  }
  for (guint n = 0; n < G_N_ELEMENTS (want->names) && want->names[n] != NULL; n++) {
    GstCaps *one = gst_caps_new_empty_simple (want->names[n]);
    fail_unless (
        gst_caps_can_intersect (caps, one), "%s pad '%s' lacks %s", element, pad, want->names[n]);
    gst_caps_unref (one);
  }
  for (guint n = 0; n < G_N_ELEMENTS (want->features) && want->features[n] != NULL; n++) {
    GstCaps *one = gst_caps_new_empty_simple (want->names[0]);
    gst_caps_set_features (one, 0, gst_caps_features_new (want->features[n], NULL));
    fail_unless (gst_caps_can_intersect (caps, one), "%s pad '%s' lacks %s with %s", element, pad,
        want->names[0], want->features[n]);
    gst_caps_unref (one);
  }
}

/* Every pad template of every element of the plugin states the caps the pad takes or makes:
 * none is ANY, and each names exactly its media types and memory features. */
GST_START_TEST (test_pad_templates_state_caps)
{
  GList *features = gst_registry_get_feature_list_by_plugin (gst_registry_get (), "daqiri");
  guint checked = 0;

  for (GList *l = features; l != NULL; l = l->next) {
    if (!GST_IS_ELEMENT_FACTORY (l->data))
      continue;
    GstElementFactory *factory = GST_ELEMENT_FACTORY (l->data);
    const gchar *element = gst_plugin_feature_get_name (GST_PLUGIN_FEATURE (factory));
    for (const GList *t = gst_element_factory_get_static_pad_templates (factory); t != NULL;
         t = t->next) {
      GstStaticPadTemplate *templ = t->data;
      GstCaps *caps = gst_static_pad_template_get_caps (templ);
      assert_template (element, templ->name_template, caps);
      gst_caps_unref (caps);
      checked++;
    }
  }
  gst_plugin_feature_list_free (features);
  fail_unless_equals_int (checked, G_N_ELEMENTS (template_wants));

  /* the pads of an element made from the factory say the same */
  GstElement *pay = gst_element_factory_make ("daqiripay", NULL);
  GstPad *pad = gst_element_get_static_pad (pay, "sink");
  GstCaps *caps = gst_pad_get_pad_template_caps (pad);
  assert_template ("daqiripay", "sink", caps);
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_object_unref (pay);
}

GST_END_TEST;

/* Audio into daqiripay or daqirisink does not link, and the error names both elements and
 * the caps; audio caps sent over a link made without checks end the stream not-negotiated. */
GST_START_TEST (test_pad_templates_refuse_audio)
{
  const gchar *targets[] = { "daqiripay", "daqirisink" };

  for (guint i = 0; i < G_N_ELEMENTS (targets); i++) {
    GstElement *src = gst_element_factory_make ("fakesrc", NULL);
    GstElement *dst = gst_element_factory_make (targets[i], NULL);
    GstElement *bin = gst_bin_new (NULL);
    gst_bin_add_many (GST_BIN (bin), src, dst, NULL);
    GstCaps *audio = gst_caps_from_string ("audio/x-raw, format=S16LE, rate=48000, "
                                           "channels=2");
    fail_if (gst_element_link_filtered (src, dst, audio), "%s linked to audio", targets[i]);
    gst_caps_unref (audio);
    gst_object_unref (bin);

    GError *err = NULL;
    gchar *launch = g_strdup_printf ("fakesrc ! audio/x-raw, format=S16LE ! %s", targets[i]);
    GstElement *pipe = gst_parse_launch (launch, &err);
    g_free (launch);
    fail_unless (err != NULL, "%s: audio linked", targets[i]);
    fail_unless (g_error_matches (err, GST_PARSE_ERROR, GST_PARSE_ERROR_LINK), "%s", err->message);
    fail_unless (strstr (err->message, "could not link fakesrc") != NULL, "%s", err->message);
    fail_unless (strstr (err->message, targets[i]) != NULL, "%s", err->message);
    fail_unless (strstr (err->message, "audio/x-raw") != NULL, "%s", err->message);
    g_error_free (err);
    gst_clear_object (&pipe);
  }

  GError *err = NULL;
  GstElement *pipe = gst_parse_launch ("appsrc name=in caps=audio/x-raw,format=S16LE ! "
                                       "daqiripay ! fakesink",
      &err);
  fail_unless (pipe != NULL && err == NULL);
  GstElement *in = gst_bin_get_by_name (GST_BIN (pipe), "in");
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  fail_unless_equals_int (
      gst_app_src_push_buffer (GST_APP_SRC (in), gst_buffer_new_allocate (NULL, 1024, NULL)),
      GST_FLOW_OK);
  GstBus *bus = gst_element_get_bus (pipe);
  GstMessage *msg = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "audio caps into daqiripay posted no ERROR");
  gchar *dbg = NULL;
  gst_message_parse_error (msg, &err, &dbg);
  fail_unless (dbg != NULL && strstr (dbg, "not-negotiated") != NULL, "%s | %s", err->message,
      dbg ? dbg : "");
  g_error_free (err);
  g_free (dbg);
  gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (in);
  gst_object_unref (pipe);
}

GST_END_TEST;

/* One start of an element that must fail: the device set before it (NULL: left as it is) and
 * what the ERROR must mention (up to four strings, NULL after the last). */
typedef struct {
  const gchar *device;
  const gchar *needles[5];
} BadStart;

/* A new element of factory started once per step, in order, on the same element (a start
 * that failed leaves it to be set and started again): each start must fail as its step says. */
static void
assert_start_errors (const gchar *factory, const BadStart *steps, guint n)
{
  GstElement *el = gst_element_factory_make (factory, NULL);
  fail_unless (el != NULL);
  for (guint i = 0; i < n; i++) {
    if (steps[i].device != NULL)
      g_object_set (el, "device", steps[i].device, NULL);
    assert_start_error (el, steps[i].needles);
  }
  gst_object_unref (el);
}

GST_START_TEST (test_src_no_device)
{
  const BadStart steps[] = { { NULL, { "'device'", "not set", "afpacket", NULL } } };
  assert_start_errors ("daqirisrc", steps, G_N_ELEMENTS (steps));
}

GST_END_TEST;

GST_START_TEST (test_src_unknown_engine)
{
  const BadStart steps[] = {
    { "nosuchengine:x", { "'device'", "nosuchengine:x", "afpacket", NULL } },
    { "afpacket:", { "'device'", "needs a name", NULL } },
  };
  assert_start_errors ("daqirisrc", steps, G_N_ELEMENTS (steps));
}

GST_END_TEST;

GST_START_TEST (test_src_missing_interface)
{
  /* the message lists the interfaces that do exist: lo always does */
  const BadStart steps[] = { { "afpacket:nosuchif0", { "'device'", "nosuchif0", "lo", NULL } } };
  assert_start_errors ("daqirisrc", steps, G_N_ELEMENTS (steps));
}

GST_END_TEST;

GST_START_TEST (test_src_bad_flows)
{
  GstElement *src = gst_element_factory_make ("daqirisrc", NULL);
  g_object_set (src, "device", "afpacket:lo", "flows",
      "proto=udp dst-port=5000 mark=1; proto=udp dst-port=99999", NULL);
  const gchar *needles[] = { "'flows'", "rule 2", "dst-port=99999", "65535", NULL };
  assert_start_error (src, needles);

  g_object_set (src, "flows", "proto=udp colour=blue", NULL);
  const gchar *needles2[] = { "'flows'", "colour", "dst-port", NULL };
  assert_start_error (src, needles2);

  /* a rule steering to a queue the element does not have */
  g_object_set (src, "flows", "proto=udp queue=3", "queues", 2, NULL);
  const gchar *needles3[] = { "'flows'", "queue 3", "'queues'", "0..1", NULL };
  assert_start_error (src, needles3);
  gst_object_unref (src);
}

GST_END_TEST;

/* GLib reports a value out of a property's range as a warning (2.74) or, in newer releases, as
 * a critical: either passes, nothing does not. The critical must not abort here
 * (G_DEBUG=fatal-criticals in the test environment). */
#define ASSERT_REFUSED(code) \
  G_STMT_START \
  { \
    GLogLevelFlags fatal_ = g_log_set_always_fatal (G_LOG_FATAL_MASK); \
    _gst_check_expecting_log = TRUE; \
    _gst_check_raised_warning = FALSE; \
    _gst_check_raised_critical = FALSE; \
    code; \
    g_log_set_always_fatal (fatal_); \
    fail_unless (_gst_check_raised_warning || _gst_check_raised_critical, \
        "expected a warning or a critical from: %s", #code); \
    _gst_check_expecting_log = FALSE; \
  } \
  G_STMT_END

GST_START_TEST (test_src_out_of_range_refused)
{
  GstElement *src = gst_element_factory_make ("daqirisrc", NULL);
  guint burst;
  guint64 ring;

  /* GLib refuses values outside the declared range and keeps the old value */
  ASSERT_REFUSED (g_object_set (src, "burst-packets", 0, NULL));
  ASSERT_REFUSED (g_object_set (src, "ring-size", (guint64) 1024, NULL));
  g_object_get (src, "burst-packets", &burst, "ring-size", &ring, NULL);
  fail_unless_equals_int (burst, 256);
  fail_unless_equals_uint64 (ring, 64 * 1024 * 1024);
  gst_object_unref (src);
}

GST_END_TEST;

GST_START_TEST (test_src_permission_denied)
{
  if (getuid () != 0) {
    GST_INFO ("not root: the permission test drops root and needs it to begin with");
    return;
  }
  /* drop root in a child and check the error names the missing privilege. The child
   * reports over a pipe and then kills itself: it must not run exit-time leak checks on a
   * copy of a multithreaded parent whose other threads did not follow it */
  int fds[2];
  fail_unless (pipe (fds) == 0);
  pid_t pid = fork ();
  fail_unless (pid >= 0);
  if (pid == 0) {
    char rc = 3;
    close (fds[0]);
    if (setgid (65534) == 0 && setuid (65534) == 0) {
      GstElement *src = gst_element_factory_make ("daqirisrc", NULL);
      g_object_set (src, "device", "afpacket:lo", NULL);
      gchar *text = start_and_get_error (src);
      rc = text != NULL && strstr (text, "CAP_NET_RAW") != NULL ? 0 : 1;
      if (rc)
        g_printerr ("permission error text: %s\n", text ? text : "(none)");
    }
    if (write (fds[1], &rc, 1) != 1)
      _exit (4);
    raise (SIGKILL);
  }
  close (fds[1]);
  char rc = 5;
  fail_unless (read (fds[0], &rc, 1) == 1, "the unprivileged child did not report");
  close (fds[0]);
  int status = 0;
  fail_unless (waitpid (pid, &status, 0) == pid);
  fail_unless_equals_int (rc, 0);
}

GST_END_TEST;

GST_START_TEST (test_sink_no_device)
{
  const BadStart steps[] = {
    { NULL, { "'device'", "not set", NULL } },
    { "afpacket:nosuchif0", { "'device'", "nosuchif0", NULL } },
  };
  assert_start_errors ("daqirisink", steps, G_N_ELEMENTS (steps));
}

GST_END_TEST;

/* ---- traffic on the loopback interface ---- */

static guint16
udp_port_for_test (void)
{
  return (guint16) (20000 + (getpid () % 20000));
}

/* Sends n datagrams numbered first..first+n-1: payload byte 0 = number, byte j = number*13+j */
static void
send_udp (guint16 port, guint first, guint n, guint size)
{
  int fd = socket (AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons (port) };
  to.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  guint8 payload[2048];

  fail_unless (fd >= 0);
  for (guint i = first; i < first + n; i++) {
    for (guint j = 0; j < size; j++)
      payload[j] = (guint8) (i * 13 + j);
    payload[0] = (guint8) i;
    fail_unless (
        sendto (fd, payload, size, 0, (struct sockaddr *) &to, sizeof to) == (ssize_t) size);
  }
  close (fd);
}

static guint64
realtime_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  return (guint64) ts.tv_sec * GST_SECOND + (guint64) ts.tv_nsec;
}

/* Pulls buffers until @n packets arrived; checks each frame's UDP payload. */
static guint
pull_and_check (GstHarness *h, guint n, guint size, guint32 mark)
{
  guint got = 0;
  guint64 last_ts = 0;
  guint64 before = realtime_ns () - 5 * GST_SECOND;

  while (got < n) {
    GstBuffer *buf = gst_harness_pull (h);
    fail_unless (buf != NULL);
    GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
    fail_unless (meta != NULL);
    fail_unless (meta->n_packets >= 1);
    fail_unless (gst_buffer_n_memory (buf) == 1);
    GstMapInfo map;
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
    fail_unless (gst_daqiri_packet_meta_validate (meta, map.size, NULL));
    for (guint i = 0; i < meta->n_packets; i++) {
      const GstDaqiriPacket *p = &meta->packets[i];
      /* Ethernet 14 + IPv4 20 + UDP 8 */
      fail_unless_equals_int (p->length, 14 + 20 + 8 + size);
      fail_unless_equals_int (p->flow_id, mark);
      fail_unless (p->timestamp >= last_ts);
      fail_unless (p->timestamp > before && p->timestamp <= realtime_ns ());
      last_ts = p->timestamp;
      const guint8 *udp = map.data + p->offset + 14 + 20;
      const guint8 *payload = udp + 8;
      fail_unless_equals_int (payload[0], (guint8) got);
      for (guint j = 1; j < size; j++)
        fail_unless_equals_int (payload[j], (guint8) (got * 13 + j));
      got++;
    }
    /* the ring is the NIC's: a write map is refused */
    GstMemory *mem = gst_buffer_peek_memory (buf, 0);
    GstMapInfo wmap;
    fail_if (gst_memory_map (mem, &wmap, GST_MAP_WRITE));
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
  }
  return got;
}

GST_START_TEST (test_src_loopback_udp)
{
  if (!have_raw_socket ()) {
    GST_INFO ("skipped: needs CAP_NET_RAW");
    return;
  }
  guint16 port = udp_port_for_test ();
  GstHarness *h = gst_harness_new_with_padnames ("daqirisrc", NULL, "src");
  gchar *flows = g_strdup_printf ("proto=udp dst=127.0.0.1 dst-port=%u mark=77", port);
  g_object_set (h->element, "device", "afpacket:lo", "flows", flows, "burst-packets", 16, NULL);
  g_free (flows);
  gst_harness_play (h);

  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  while (caps == NULL) {
    g_usleep (1000);
    caps = gst_pad_get_current_caps (h->sinkpad);
  }
  gint max = 0;
  fail_unless (gst_structure_get_int (gst_caps_get_structure (caps, 0), "max-packet-size", &max));
  fail_unless_equals_int (max, 9216);
  gst_caps_unref (caps);

  send_udp (port, 0, 100, 200);
  /* traffic on other ports never reaches the ring */
  send_udp (port + 1, 0, 50, 100);
  send_udp (port, 100, 100, 200);
  guint got = pull_and_check (h, 200, 200, 77);
  fail_unless_equals_int (got, 200);
  fail_unless (gst_harness_try_pull (h) == NULL);

  GstStructure *s = NULL;
  g_object_get (h->element, "stats", &s, NULL);
  guint64 packets = 0, bursts = 0, drops = 1;
  fail_unless (gst_structure_get_uint64 (s, "packets", &packets));
  fail_unless (gst_structure_get_uint64 (s, "bursts", &bursts));
  fail_unless (gst_structure_get_uint64 (s, "drops", &drops));
  fail_unless_equals_uint64 (packets, 200);
  fail_unless (bursts >= 200 / 16);
  fail_unless_equals_uint64 (drops, 0);
  gst_structure_free (s);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_src_latency_and_clock)
{
  if (!have_raw_socket ())
    return;
  GstHarness *h = gst_harness_new_with_padnames ("daqirisrc", NULL, "src");
  g_object_set (h->element, "device", "afpacket:lo", "burst-timeout", (guint64) (3 * GST_MSECOND),
      "flows", "proto=udp dst-port=9 mark=1", NULL);
  gst_harness_play (h);

  GstClockTime min = 0, max = 0;
  gboolean live = FALSE;
  GstQuery *q = gst_query_new_latency ();
  fail_unless (gst_pad_peer_query (h->sinkpad, q));
  gst_query_parse_latency (q, &live, &min, &max);
  fail_unless (live);
  fail_unless_equals_uint64 (min, 3 * GST_MSECOND);
  fail_unless_equals_uint64 (max, GST_CLOCK_TIME_NONE);
  gst_query_unref (q);

  GstClock *clock = gst_element_provide_clock (h->element);
  fail_unless (clock != NULL);
  guint64 now = realtime_ns ();
  GstClockTime t = gst_clock_get_time (clock);
  /* the afpacket port clock is the kernel's CLOCK_REALTIME */
  fail_unless (t + 50 * GST_MSECOND > now && t < now + 50 * GST_MSECOND);
  gst_object_unref (clock);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* PTS in a real pipeline: on the port clock exactly first-packet time - base time; on the
 * monotonic system clock, mapped within a millisecond. */
static void
check_pts_with_clock (GstClock *forced)
{
  guint16 port = udp_port_for_test () + 2;
  GstElement *pipeline = dq_check_launch ("daqirisrc name=src device=afpacket:lo "
                                          "flows=\"proto=udp dst-port=%u\" burst-packets=1 ! "
                                          "appsink name=sink sync=false",
      port);
  if (forced != NULL)
    gst_pipeline_use_clock (GST_PIPELINE (pipeline), forced);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  /* the socket exists once the state change returns; the live pipeline completes its
   * change to PLAYING with the first buffer */
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE);
  send_udp (port, 0, 5, 64);
  fail_unless (
      gst_element_get_state (pipeline, NULL, NULL, 5 * GST_SECOND) == GST_STATE_CHANGE_SUCCESS);
  GstClock *clock = gst_pipeline_get_clock (GST_PIPELINE (pipeline));
  if (forced == NULL)
    fail_unless (g_str_has_prefix (GST_OBJECT_NAME (clock), "daqiri-afpacket:lo"),
        "pipeline clock is %s", GST_OBJECT_NAME (clock));

  for (guint i = 0; i < 5; i++) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 5 * GST_SECOND);
    fail_unless (sample != NULL);
    GstBuffer *buf = gst_sample_get_buffer (sample);
    GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
    fail_unless (meta != NULL && meta->n_packets == 1);
    GstClockTime base = gst_element_get_base_time (pipeline);
    GstClockTime pts = GST_BUFFER_PTS (buf);
    fail_unless (GST_CLOCK_TIME_IS_VALID (pts));
    if (forced == NULL) {
      fail_unless_equals_uint64 (pts, meta->packets[0].timestamp - base);
    } else {
      /* the packet's realtime stamp carried onto the monotonic clock */
      GstClockTime expect =
          meta->packets[0].timestamp - realtime_ns () + gst_clock_get_time (clock) - base;
      GstClockTimeDiff d = GST_CLOCK_DIFF (expect, pts);
      fail_unless (ABS (d) < GST_MSECOND, "pts off by %" G_GINT64_FORMAT " ns", d);
    }
    gst_sample_unref (sample);
  }
  gst_object_unref (clock);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

GST_START_TEST (test_src_pts)
{
  if (!have_raw_socket ())
    return;
  check_pts_with_clock (NULL);
  GstClock *mono =
      g_object_new (GST_TYPE_SYSTEM_CLOCK, "clock-type", GST_CLOCK_TYPE_MONOTONIC, NULL);
  check_pts_with_clock (mono);
  gst_object_unref (mono);
}

GST_END_TEST;

static GstStaticPadTemplate harness_src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

/* A burst whose descriptors point outside its buffer: the good packets are sent, the bad
 * ones counted as malformed and never read. */
GST_START_TEST (test_sink_malformed_descriptors)
{
  if (!have_raw_socket ())
    return;
  /* a harnessed sink starts at once: configure it first */
  GstElement *sink = gst_element_factory_make ("daqirisink", NULL);
  g_object_set (sink, "device", "afpacket:lo", NULL);
  GstHarness *h = gst_harness_new_full (sink, &harness_src_template, "sink", NULL, NULL);
  gst_object_unref (sink);
  gst_harness_set_src_caps_str (h, GST_DAQIRI_PACKETS_MEDIA_TYPE);

  GstBuffer *buf = gst_buffer_new_allocate (NULL, 1000, NULL);
  gst_buffer_memset (buf, 0, 0, 1000);
  GstDaqiriPacket pk[5] = {
    { .offset = 0, .length = 60 },
    { .offset = 100, .length = 900 }, /* ends exactly at the end: fine */
    { .offset = 990, .length = 60 },  /* runs past the end */
    { .offset = 2000, .length = 60 }, /* starts past the end */
    { .offset = 0xffffffffu, .length = 0xffffffffu },
  };
  gst_buffer_add_daqiri_packet_meta (buf, pk, 5);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);

  /* a buffer without meta is one frame */
  GstBuffer *plain = gst_buffer_new_allocate (NULL, 64, NULL);
  gst_buffer_memset (plain, 0, 0, 64);
  fail_unless_equals_int (gst_harness_push (h, plain), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  GstStructure *s = NULL;
  g_object_get (h->element, "stats", &s, NULL);
  guint64 packets = 0, malformed = 0;
  fail_unless (gst_structure_get_uint64 (s, "packets", &packets));
  fail_unless (gst_structure_get_uint64 (s, "malformed", &malformed));
  fail_unless_equals_uint64 (packets, 3);
  fail_unless_equals_uint64 (malformed, 3);
  gst_structure_free (s);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The header-data split fields of the meta: a meta without split has them 0; validate_split
 * checks header and payload parts against their memories' sizes, malformed descriptors
 * included; a whole copy keeps the fields, a part of a split burst loses the meta. */
GST_START_TEST (test_meta_split)
{
  GstBuffer *buf = gst_buffer_new ();
  GstDaqiriPacket pk[4] = {
    { .offset = 0, .length = 100 },    /* 42 header bytes + 58 at payload 0 */
    { .offset = 64, .length = 30 },    /* all in the header slot */
    { .offset = 128, .length = 1000 }, /* 958 bytes at payload 2 * 1024 */
    { .offset = 192, .length = 42 + 1024 },
  };
  GstDaqiriPacketMeta *meta = gst_buffer_add_daqiri_packet_meta (buf, pk, 4);
  fail_unless_equals_int (meta->header_size, 0);
  fail_unless_equals_int (meta->header_stride, 0);
  fail_unless_equals_int (meta->payload_stride, 0);
  meta->header_size = 42;
  meta->header_stride = 64;
  meta->payload_stride = 1024;
  fail_unless_equals_int (gst_daqiri_packet_payload_offset (meta, &meta->packets[2]), 2048);
  guint bad = G_MAXUINT;
  fail_unless (gst_daqiri_packet_meta_validate_split (meta, 256, 4096, &bad));
  /* the header memory a byte short: the last header */
  fail_if (gst_daqiri_packet_meta_validate_split (meta, 192 + 41, 4096, &bad));
  fail_unless_equals_int (bad, 3);
  /* the payload memory short of packet 3's 1024 bytes at 3072 */
  fail_if (gst_daqiri_packet_meta_validate_split (meta, 256, 4095, &bad));
  fail_unless_equals_int (bad, 3);
  /* more than a payload slot, or descriptors far out: refused, no overflow */
  meta->packets[3].length = 42 + 1025;
  fail_if (gst_daqiri_packet_meta_validate_split (meta, 256, 1 << 20, &bad));
  fail_unless_equals_int (bad, 3);
  meta->packets[3].offset = 0xffffffc0u;
  meta->packets[3].length = 0xffffffffu;
  fail_if (gst_daqiri_packet_meta_validate_split (meta, 256, 1 << 20, &bad));
  fail_unless_equals_int (bad, 3);
  meta->packets[3].offset = 192;
  meta->packets[3].length = 42;
  /* without split validate_split is validate */
  meta->header_size = 0;
  fail_if (gst_daqiri_packet_meta_validate_split (meta, 256, 1 << 20, &bad));
  fail_unless_equals_int (bad, 2);
  meta->header_size = 42;

  GstBuffer *copy = gst_buffer_copy (buf);
  GstDaqiriPacketMeta *cm = gst_buffer_get_daqiri_packet_meta (copy);
  fail_unless (cm != NULL);
  fail_unless_equals_int (cm->n_packets, 4);
  fail_unless_equals_int (cm->header_size, 42);
  fail_unless_equals_int (cm->header_stride, 64);
  fail_unless_equals_int (cm->payload_stride, 1024);
  gst_buffer_unref (copy);
  guint8 *second = g_malloc0 (256);
  gst_buffer_append_memory (buf, gst_memory_new_wrapped (0, second, 256, 0, 256, second, g_free));
  GstBuffer *part = gst_buffer_copy_region (buf, GST_BUFFER_COPY_ALL, 64, 64);
  fail_unless (gst_buffer_get_daqiri_packet_meta (part) == NULL);
  gst_buffer_unref (part);
  gst_buffer_unref (buf);
}

GST_END_TEST;

static Suite *
elements_suite (void)
{
  TCase *tc;
  Suite *s = dq_check_suite_new ("daqiri-elements", "general", 0, &tc);

  tcase_add_test (tc, test_src_defaults_and_ranges);
  tcase_add_test (tc, test_meta_split);
  tcase_add_test (tc, test_src_template_caps);
  tcase_add_test (tc, test_pad_templates_state_caps);
  tcase_add_test (tc, test_pad_templates_refuse_audio);
  tcase_add_test (tc, test_src_no_device);
  tcase_add_test (tc, test_src_unknown_engine);
  tcase_add_test (tc, test_src_missing_interface);
  tcase_add_test (tc, test_src_bad_flows);
  tcase_add_test (tc, test_src_out_of_range_refused);
  tcase_add_test (tc, test_src_permission_denied);
  tcase_add_test (tc, test_sink_no_device);
  tcase_add_test (tc, test_src_loopback_udp);
  tcase_add_test (tc, test_src_latency_and_clock);
  tcase_add_test (tc, test_src_pts);
  tcase_add_test (tc, test_sink_malformed_descriptors);
  return s;
}

GST_CHECK_MAIN (elements);
