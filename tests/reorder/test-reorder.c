/* Tests of daqirireorder and daqiripay (system memory, the CPU twin of the reorder kernels). */
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/daqiri/daqiripacketmeta.h>
#include <gst/app/gstappsrc.h>
#include <gst/app/gstappsink.h>
#include <gst/video/video.h>
#include <string.h>
#include <unistd.h>

#include "dq-netns.h"
#include "dq-test-csum.h"

#define FRAME_META "GstDaqiriFrameMeta"

/* ---- helpers ------------------------------------------------------------------------- */

static guint
frame_uint (GstBuffer *buf, const gchar *field)
{
  GstCustomMeta *m = gst_buffer_get_custom_meta (buf, FRAME_META);
  guint v = G_MAXUINT;
  fail_unless (m != NULL);
  fail_unless (gst_structure_get_uint (gst_custom_meta_get_structure (m), field, &v), "%s", field);
  return v;
}

static guint64
frame_batch (GstBuffer *buf)
{
  GstCustomMeta *m = gst_buffer_get_custom_meta (buf, FRAME_META);
  guint64 v = G_MAXUINT64;
  fail_unless (m != NULL);
  fail_unless (gst_structure_get_uint64 (gst_custom_meta_get_structure (m), "batch-id", &v));
  return v;
}

/* batch id, packets, missing, duplicates, late, short, flags of an output frame */
static void
assert_frame_meta (GstBuffer *buf, guint64 batch, guint packets, guint missing, guint dups,
    guint late, guint shrt, guint flags)
{
  fail_unless_equals_uint64 (frame_batch (buf), batch);
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), batch);
  fail_unless_equals_int (frame_uint (buf, "packets"), packets);
  fail_unless_equals_int (frame_uint (buf, "missing"), missing);
  fail_unless_equals_int (frame_uint (buf, "duplicates"), dups);
  fail_unless_equals_int (frame_uint (buf, "late"), late);
  fail_unless_equals_int (frame_uint (buf, "short"), shrt);
  if (flags != G_MAXUINT)
    fail_unless_equals_int (frame_uint (buf, "flags"), flags);
}

static void
assert_bytes (GstBuffer *buf, const guint8 *want, gsize size)
{
  GstMapInfo map;
  fail_unless_equals_uint64 (gst_buffer_get_size (buf), size);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
  for (gsize i = 0; i < size; i++)
    if (map.data[i] != want[i])
      fail ("byte %" G_GSIZE_FORMAT ": 0x%02x, expected 0x%02x", i, map.data[i], want[i]);
  gst_buffer_unmap (buf, &map);
}

/* the stats structure of the harness's element named r (gst_structure_free it) */
static GstStructure *
r_stats (GstHarness *h)
{
  GstStructure *s = NULL;
  GstElement *e = gst_bin_get_by_name (GST_BIN (h->element), "r");
  fail_unless (e != NULL);
  g_object_get (e, "stats", &s, NULL);
  gst_object_unref (e);
  fail_unless (s != NULL);
  return s;
}

/* one field of the stats of the harness's element named r */
static guint64
stat (GstHarness *h, const gchar *field)
{
  GstStructure *s = r_stats (h);
  guint64 v = G_MAXUINT64;
  fail_unless (gst_structure_get_uint64 (s, field, &v), "%s", field);
  gst_structure_free (s);
  return v;
}

/* One expected stats field of the harness's element named r. */
typedef struct {
  const gchar *field;
  guint64 value;
} WantStat;

/* Checks the n fields of want against one read of r's stats; a field missing from the stats
 * fails too. */
static void
assert_stats (GstHarness *h, const WantStat *want, guint n)
{
  GstStructure *s = r_stats (h);
  for (guint i = 0; i < n; i++) {
    guint64 v = G_MAXUINT64;
    fail_unless (gst_structure_get_uint64 (s, want[i].field, &v), "%s", want[i].field);
    fail_unless (v == want[i].value, "stats %s: %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT,
        want[i].field, v, want[i].value);
  }
  gst_structure_free (s);
}

#define F_COMPLETE 1u
#define F_PUSHED 2u
#define F_FLUSHED 4u

/* A frame of size random bytes (g_free it). */
static guint8 *
random_frame (gsize size)
{
  guint8 *frame = g_malloc (size);
  for (gsize i = 0; i < size; i++)
    frame[i] = (guint8) g_random_int ();
  return frame;
}

/* The f-th frame of a stream to push: a copy of frame's size bytes, PTS f ms. */
static GstBuffer *
frame_buffer (const guint8 *frame, gsize size, guint f)
{
  GstBuffer *buf = gst_buffer_new_memdup (frame, size);
  GST_BUFFER_PTS (buf) = f * GST_MSECOND;
  return buf;
}

/* ---- (a) daqiripay ! daqirireorder returns the frames bit for bit -------------------- */

static void
round_trip (guint payload_size, guint ppb, guint seq_bits, guint batch_bits, guint n_frames)
{
  /* sequence right after the UDP header; the batch field (bits 368..) after it when used */
  guint payload_offset = batch_bits ? 50 : 46;
  gchar *fields = g_strdup_printf ("seq-offset=336 seq-bits=%u batch-offset=368 batch-bits=%u "
                                   "packets-per-batch=%u payload-offset=%u payload-size=%u",
      seq_bits, batch_bits, ppb, payload_offset, payload_size);
  gchar *launch = g_strdup_printf ("daqiripay %s ! daqirireorder name=r %s", fields, fields);
  GstHarness *h = gst_harness_new_parse (launch);
  gsize frame_size = (gsize) payload_size * ppb;
  guint8 **frames = g_new (guint8 *, n_frames);

  gst_harness_set_src_caps_str (h, "application/x-daqiri-frame");
  for (guint f = 0; f < n_frames; f++) {
    frames[f] = random_frame (frame_size);
    fail_unless_equals_int (
        gst_harness_push (h, frame_buffer (frames[f], frame_size, f)), GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  fail_unless_equals_int (gst_harness_buffers_received (h), n_frames);
  for (guint f = 0; f < n_frames; f++) {
    GstBuffer *out = gst_harness_pull (h);
    assert_bytes (out, frames[f], frame_size);
    assert_frame_meta (out, f, ppb, 0, 0, 0, 0, F_COMPLETE);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), f * GST_MSECOND);
    gst_buffer_unref (out);
    g_free (frames[f]);
  }
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstStructure *s = gst_caps_get_structure (caps, 0);
  gint elements = 0, p = 0;
  fail_unless (gst_structure_has_name (s, "application/x-daqiri-frame"));
  fail_unless_equals_string (gst_structure_get_string (s, "element-type"), "u8");
  fail_unless (gst_structure_get_int (s, "elements", &elements));
  fail_unless (gst_structure_get_int (s, "packets-per-batch", &p));
  fail_unless_equals_int (elements, frame_size);
  fail_unless_equals_int (p, ppb);
  gst_caps_unref (caps);

  const WantStat stats[] = {
    { "packets", (guint64) n_frames * ppb },
    { "batches", n_frames },
    { "complete", n_frames },
    { "missing", 0 },
    { "duplicates", 0 },
    { "short", 0 },
  };
  assert_stats (h, stats, G_N_ELEMENTS (stats));
  g_free (frames);
  g_free (launch);
  g_free (fields);
  gst_harness_teardown (h);
}

GST_START_TEST (test_round_trip)
{
  round_trip (1, 1, 32, 0, 10);
  round_trip (7, 8, 32, 0, 12);
  round_trip (1024, 4, 32, 16, 8);
  round_trip (1472, 3, 16, 16, 6);
  /* an 8-bit sequence wraps every 32 frames of 8 packets: ids keep growing across the wraps */
  round_trip (64, 8, 8, 0, 80);
  /* a 10-bit batch field wraps at frame 1024, with 4-bit sequence numbers */
  round_trip (16, 16, 4, 10, 1100);
}

GST_END_TEST;

/* daqiripay's packets, byte for byte: header, fields, lengths, checksum */
GST_START_TEST (test_pay_packets)
{
  GstHarness *h = gst_harness_new_parse (
      "daqiripay src-mac=02:11:22:33:44:55 "
      "dst-mac=02:66:77:88:99:aa src=192.168.1.2 dst=192.168.1.3 src-port=1000 "
      "dst-port=2000 seq-offset=336 seq-bits=16 batch-offset=352 batch-bits=8 "
      "packets-per-batch=2 payload-offset=46 payload-size=3");
  const guint8 frame[6] = { 1, 2, 3, 4, 5, 6 };
  gst_harness_set_src_caps_str (h, "application/octet-stream");
  for (guint f = 0; f < 2; f++) {
    GstBuffer *in = gst_buffer_new_memdup (frame, 6);
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  }
  gst_buffer_unref (gst_harness_pull (h));
  GstBuffer *out = gst_harness_pull (h); /* batch 1 */
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (out);
  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->n_packets, 2);
  GstMapInfo map;
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  for (guint s = 0; s < 2; s++) {
    const guint8 *p = map.data + meta->packets[s].offset;
    fail_unless_equals_int (meta->packets[s].length, 60);
    guint8 want[60] = {
      0x02,
      0x66,
      0x77,
      0x88,
      0x99,
      0xaa,
      0x02,
      0x11,
      0x22,
      0x33,
      0x44,
      0x55,
      0x08,
      0x00,
      0x45,
      0x00,
      0x00,
      46,
      0x00,
      0x00,
      0x40,
      0x00,
      64,
      17,
      0,
      0,
      192,
      168,
      1,
      2,
      192,
      168,
      1,
      3,
      0x03,
      0xe8,
      0x07,
      0xd0,
      0x00,
      26,
      0x00,
      0x00,
      0x00,
      (guint8) (2 + s),
      0x01,
      0x00,
      (guint8) (1 + 3 * s),
      (guint8) (2 + 3 * s),
      (guint8) (3 + 3 * s),
    };
    /* the IPv4 header checksum by the tests' reference */
    const guint16 csum = dq_test_ipv4_csum (want + 14);
    want[24] = (guint8) (csum >> 8);
    want[25] = (guint8) csum;
    for (guint i = 0; i < 60; i++)
      if (p[i] != want[i])
        fail ("packet %u byte %u: 0x%02x, expected 0x%02x", s, i, p[i], want[i]);
  }
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ---- (b) shuffles, duplicates, losses, short and malformed packets --------------------- */

/* Packets of 8 bytes: 16-bit sequence at byte 0, payload of 4 bytes at byte 4. */
#define PKT 8
static guint8
pay_byte (guint seq, guint k)
{
  return (guint8) (seq * 7 + k + 1);
}

typedef struct {
  gint seq;             /* -1: a short packet (5 bytes); -2: a descriptor past the end */
  gboolean dup_payload; /* payload 0xee (a duplicate must lose) */
} P;

static GstBuffer *
burst (const P *p, guint n, GstClockTime pts)
{
  guint8 *data = g_malloc0 (MAX (n * PKT, 1));
  GstDaqiriPacket *d = g_new0 (GstDaqiriPacket, n);
  for (guint i = 0; i < n; i++) {
    guint8 *q = data + i * PKT;
    d[i].offset = i * PKT;
    d[i].length = PKT;
    d[i].timestamp = 12345;
    if (p[i].seq == -1) {
      d[i].length = 5;
      continue;
    }
    if (p[i].seq == -2) {
      d[i].offset = n * PKT + 100;
      continue;
    }
    q[0] = (guint8) (p[i].seq >> 8);
    q[1] = (guint8) p[i].seq;
    for (guint k = 0; k < 4; k++)
      q[4 + k] = p[i].dup_payload ? 0xee : pay_byte ((guint) p[i].seq, k);
  }
  GstBuffer *buf = gst_buffer_new_wrapped (data, MAX (n * PKT, 1));
  gst_buffer_add_daqiri_packet_meta (buf, d, n);
  g_free (d);
  GST_BUFFER_PTS (buf) = pts;
  return buf;
}

/* the frame of batch b with the given slots present */
static void
expect_frame (GstBuffer *out, guint b, guint present_mask)
{
  guint8 want[16] = { 0 };
  for (guint s = 0; s < 4; s++)
    if (present_mask & (1u << s))
      for (guint k = 0; k < 4; k++)
        want[s * 4 + k] = pay_byte (b * 4 + s, k);
  assert_bytes (out, want, 16);
}

/* What the next output frame must be: the batch id, the slots present (bit s: slot s, see
 * expect_frame), the frame meta's packets, missing, duplicates, late, short and flags
 * (G_MAXUINT: any) and the PTS (GST_CLOCK_TIME_NONE: any). */
typedef struct {
  guint batch, present, packets, missing, dups, late, shrt, flags;
  GstClockTime pts;
} WantFrame;

/* Checks out's bytes, frame meta and PTS against want, then unrefs out. */
static void
check_frame (GstBuffer *out, const WantFrame *want)
{
  expect_frame (out, want->batch, want->present);
  assert_frame_meta (out, want->batch, want->packets, want->missing, want->dups, want->late,
      want->shrt, want->flags);
  if (want->pts != GST_CLOCK_TIME_NONE)
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), want->pts);
  gst_buffer_unref (out);
}

/* Pulls n frames from h (blocking) and checks them in order against want[0..n-1]. */
static void
pull_frames (GstHarness *h, const WantFrame *want, guint n)
{
  for (guint i = 0; i < n; i++)
    check_frame (gst_harness_pull (h), &want[i]);
}

#define REORDER_B \
  "daqirireorder name=r seq-offset=0 seq-bits=16 payload-offset=4 payload-size=4 " \
  "packets-per-batch=4 window=2"

/* video-format: the same frames pushed as raw video (rows packed: 4 UYVY pixels = 8 bytes a
 * row, 2 rows = one batch of 4 packets of 4 bytes) */
GST_START_TEST (test_reorder_video)
{
  GstHarness *h = gst_harness_new_parse (REORDER_B " video-format=uyvy width=4 height=2 "
                                                   "framerate=25/1");
  gst_harness_set_src_caps_str (h, "application/x-daqiri-packets");
  const P b1[] = { { 2 }, { 0 }, { 3 }, { 1 }, { 5 }, { 4 }, { 7 }, { 6 } };
  fail_unless_equals_int (gst_harness_push (h, burst (b1, G_N_ELEMENTS (b1), 1000)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 2);
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstStructure *st = gst_caps_get_structure (caps, 0);
  gint w = 0, hgt = 0, fn = 0, fd = 0;
  fail_unless_equals_string (gst_structure_get_name (st), "video/x-raw");
  fail_unless_equals_string (gst_structure_get_string (st, "format"), "UYVY");
  fail_unless (gst_structure_get_int (st, "width", &w) &&
      gst_structure_get_int (st, "height", &hgt) &&
      gst_structure_get_fraction (st, "framerate", &fn, &fd));
  fail_unless_equals_int (w, 4);
  fail_unless_equals_int (hgt, 2);
  fail_unless_equals_int (fn, 25);
  fail_unless_equals_int (fd, 1);
  fail_unless (gst_caps_features_is_equal (
      gst_caps_get_features (caps, 0), GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY));
  gst_caps_unref (caps);
  for (guint b = 0; b < 2; b++)
    check_frame (gst_harness_pull (h), &(WantFrame){ b, 0xf, 4, 0, 0, 0, 0, G_MAXUINT, 1000 });
  gst_harness_teardown (h);
}

GST_END_TEST;

/* 10-bit 4:2:2 video: packets of 16-bit sequence (byte 0) and RPAY bytes of pgroups (byte 4);
 * rows straddle packets */
#define RPAY 12
static guint8
row_byte (guint seq, guint k)
{
  /* the first packet holds the extremes: all bits set, the second none */
  if (seq == 0)
    return 0xff;
  if (seq == 1)
    return 0x00;
  return (guint8) (seq * 37 + k * 11 + 5);
}

static GstBuffer *
row_burst (const guint *seqs, guint n, GstClockTime pts)
{
  const guint len = 4 + RPAY;
  guint8 *data = g_malloc0 (n * len);
  GstDaqiriPacket *d = g_new0 (GstDaqiriPacket, n);
  for (guint i = 0; i < n; i++) {
    guint8 *q = data + i * len;
    d[i].offset = i * len;
    d[i].length = len;
    q[0] = (guint8) (seqs[i] >> 8);
    q[1] = (guint8) seqs[i];
    for (guint k = 0; k < RPAY; k++)
      q[4 + k] = row_byte (seqs[i], k);
  }
  GstBuffer *buf = gst_buffer_new_wrapped (data, n * len);
  gst_buffer_add_daqiri_packet_meta (buf, d, n);
  g_free (d);
  GST_BUFFER_PTS (buf) = pts;
  return buf;
}

/* The packed frame of batch b (ppb packets of RPAY bytes, lost ones zero), as sent. */
static guint8 *
packed_frame (guint b, guint ppb, guint lost_mask)
{
  guint8 *f = g_malloc0 (ppb * RPAY);
  for (guint s = 0; s < ppb; s++)
    if (!(lost_mask & (1u << s)))
      for (guint k = 0; k < RPAY; k++)
        f[s * RPAY + k] = row_byte (b * ppb + s, k);
  return f;
}

/* Sample j of a row of pgroups read bit by bit: 10 bits from bit 10 * j, MSB first. */
static guint
pgroup_sample (const guint8 *row, guint j)
{
  guint v = 0;
  for (guint i = 0; i < 10; i++) {
    guint bit = 10 * j + i;
    v = (v << 1) | ((row[bit / 8] >> (7 - bit % 8)) & 1u);
  }
  return v;
}

/* An I422_10LE frame holds the pgroups of `packed` (w x h): Cb, Y0, Cr, Y1 of pgroup x go to
 * U[x], Y[2x], V[x], Y[2x + 1], 16-bit little-endian, where the frame's video meta says.
 * Two oracles: the bit reader above, and GStreamer's own UYVP unpacker (to AYUV64, each
 * component the 10-bit value in its top bits). */
static void
assert_i422_10 (GstBuffer *out, const GstVideoInfo *info, const guint8 *packed)
{
  GstVideoFrame f;
  guint w = GST_VIDEO_INFO_WIDTH (info), h = GST_VIDEO_INFO_HEIGHT (info);
  const GstVideoFormatInfo *uyvp = gst_video_format_get_info (GST_VIDEO_FORMAT_UYVP);
  guint16 *ayuv = g_new (guint16, 4 * w);
  GstVideoMeta *vmeta = gst_buffer_get_video_meta (out);
  fail_unless (vmeta != NULL);
  fail_unless_equals_int (vmeta->format, GST_VIDEO_FORMAT_I422_10LE);
  fail_unless_equals_int (vmeta->n_planes, 3);
  fail_unless (gst_video_frame_map (&f, info, out, GST_MAP_READ));
  for (guint r = 0; r < h; r++) {
    const guint8 *row = packed + r * (w * 5 / 2);
    gpointer data[GST_VIDEO_MAX_PLANES] = { (gpointer) packed };
    gint stride[GST_VIDEO_MAX_PLANES] = { (gint) (w * 5 / 2) };
    uyvp->unpack_func (uyvp, 0, ayuv, data, stride, 0, (gint) r, (gint) w);
    for (guint j = 0; j < 2 * w; j++) {
      /* sample j of the row: Cb, Y0, Cr, Y1 of pgroup j / 4 */
      static const guint plane_of[4] = { 1, 0, 2, 0 };
      static const guint ayuv_of[4] = { 2, 1, 3, 1 };
      guint x = j / 4, plane = plane_of[j % 4];
      guint col = plane == 0 ? 2 * x + (j % 4 == 3) : x;
      guint pixel = 2 * x + (j % 4 == 3);
      const guint8 *p = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&f, plane) +
          r * GST_VIDEO_FRAME_PLANE_STRIDE (&f, plane) + 2 * col;
      guint got = GST_READ_UINT16_LE (p), want = pgroup_sample (row, j);
      guint gst = ayuv[4 * pixel + ayuv_of[j % 4]] >> 6;
      if (got != want || got != gst)
        fail ("row %u, plane %u, sample %u: 0x%03x, expected 0x%03x (GStreamer's UYVP "
              "unpack: 0x%03x)",
            r, plane, col, got, want, gst);
    }
  }
  gst_video_frame_unmap (&f);
  g_free (ayuv);
}

#define REORDER_ROWS \
  "daqirireorder name=r seq-offset=0 seq-bits=16 payload-offset=4 " \
  "payload-size=12 packets-per-batch=5 window=2"

/* video-format=I422_10LE: 8 x 3 pictures of pgroups (rows of 20 bytes, 5 packets of 12 bytes)
 * unpacked into planes; a lost packet's pgroups are zeros */
GST_START_TEST (test_reorder_i422_10)
{
  GstHarness *h = gst_harness_new_parse (REORDER_ROWS " video-format=i422-10le width=8 "
                                                      "height=3 framerate=50/1");
  gst_harness_set_src_caps_str (h, "application/x-daqiri-packets");
  /* batch 0 shuffled; batch 1 without slot 2 (seq 7) and batch 2 with one packet: both
   * flushed at EOS */
  const guint b1[] = { 3, 0, 4, 2, 1, 9, 5, 8, 6 };
  const guint b2[] = { 10 };
  fail_unless_equals_int (
      gst_harness_push (h, row_burst (b1, G_N_ELEMENTS (b1), 1000)), GST_FLOW_OK);
  fail_unless_equals_int (
      gst_harness_push (h, row_burst (b2, G_N_ELEMENTS (b2), 2000)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 3);

  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstStructure *st = gst_caps_get_structure (caps, 0);
  gint w = 0, hgt = 0;
  fail_unless_equals_string (gst_structure_get_name (st), "video/x-raw");
  fail_unless_equals_string (gst_structure_get_string (st, "format"), "I422_10LE");
  fail_unless (
      gst_structure_get_int (st, "width", &w) && gst_structure_get_int (st, "height", &hgt));
  fail_unless_equals_int (w, 8);
  fail_unless_equals_int (hgt, 3);
  fail_unless (gst_caps_features_is_equal (
      gst_caps_get_features (caps, 0), GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY));
  GstVideoInfo info;
  fail_unless (gst_video_info_from_caps (&info, caps));
  gst_caps_unref (caps);

  const guint lost[] = { 0, 1u << 2, 0x1e };
  const guint packets[] = { 5, 4, 1 }, flags[] = { F_COMPLETE, F_FLUSHED, F_FLUSHED };
  for (guint b = 0; b < 3; b++) {
    GstBuffer *out = gst_harness_pull (h);
    fail_unless_equals_uint64 (gst_buffer_get_size (out), info.size);
    guint8 *packed = packed_frame (b, 5, lost[b]);
    assert_i422_10 (out, &info, packed);
    g_free (packed);
    assert_frame_meta (out, b, packets[b], 5 - packets[b], 0, 0, 0, flags[b]);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), b < 2 ? 1000 : 2000);
    gst_buffer_unref (out);
  }
  fail_unless_equals_uint64 (stat (h, "batches"), 3);
  fail_unless_equals_uint64 (stat (h, "missing"), 1 + 4);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* video-format=UYVP: the same pgroups pushed as they are (8 x 3: rows of 20 bytes, no padding) */
GST_START_TEST (test_reorder_uyvp)
{
  GstHarness *h = gst_harness_new_parse (REORDER_ROWS " video-format=uyvp width=8 height=3");
  gst_harness_set_src_caps_str (h, "application/x-daqiri-packets");
  const guint b1[] = { 4, 3, 2, 1, 0 };
  fail_unless_equals_int (gst_harness_push (h, row_burst (b1, G_N_ELEMENTS (b1), 0)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless_equals_string (
      gst_structure_get_string (gst_caps_get_structure (caps, 0), "format"), "UYVP");
  gst_caps_unref (caps);
  GstBuffer *out = gst_harness_pull (h);
  guint8 *packed = packed_frame (0, 5, 0);
  assert_bytes (out, packed, 60);
  g_free (packed);
  assert_frame_meta (out, 0, 5, 0, 0, 0, 0, F_COMPLETE);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_reorder_losses)
{
  GstHarness *h = gst_harness_new_parse (REORDER_B);
  gst_harness_set_src_caps_str (h, "application/x-daqiri-packets");

  /* burst 1: batch 0 and 1 interleaved, a duplicate of seq 1, a short packet */
  const P b1[] = { { 1 }, { 4 }, { 0 }, { 6 }, { 1, TRUE }, { -1 }, { 2 } };
  fail_unless_equals_int (gst_harness_push (h, burst (b1, G_N_ELEMENTS (b1), 1000)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  /* burst 2 completes both */
  const P b2[] = { { 7 }, { 5 }, { 3 } };
  fail_unless_equals_int (gst_harness_push (h, burst (b2, G_N_ELEMENTS (b2), 2000)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 2);
  /* burst 3: batch 2 and 3 one packet each, a late packet of batch 0, a descriptor outside */
  const P b3[] = { { 9 }, { 2 }, { 13 }, { -2 } };
  fail_unless_equals_int (gst_harness_push (h, burst (b3, G_N_ELEMENTS (b3), 3000)), GST_FLOW_OK);
  /* a buffer without a packet meta is dropped */
  fail_unless_equals_int (
      gst_harness_push (h, gst_buffer_new_allocate (NULL, 64, NULL)), GST_FLOW_OK);
  /* burst 4: batch 4 moves the window past batch 2 */
  const P b4[] = { { 16 } };
  fail_unless_equals_int (gst_harness_push (h, burst (b4, G_N_ELEMENTS (b4), 4000)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 3);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 5);

  const WantFrame want[] = {
    /* batch, present, packets, missing, dups, late, short, flags, PTS */
    { 0, 0xf, 4, 0, 1, 0, 1, F_COMPLETE, 1000 },
    { 1, 0xf, 4, 0, 0, 0, 0, F_COMPLETE, 1000 },
    { 2, 0x2, 1, 3, 0, 1, 1, F_PUSHED, 3000 },
    { 3, 0x2, 1, 3, 0, 0, 0, F_FLUSHED, 3000 },
    { 4, 0x1, 1, 3, 0, 0, 0, F_FLUSHED, 4000 },
  };
  pull_frames (h, want, G_N_ELEMENTS (want));

  const WantStat stats[] = {
    { "packets", 15 },
    { "batches", 5 },
    { "complete", 2 },
    { "pushed", 1 },
    { "flushed", 2 },
    { "missing", 9 },
    { "duplicates", 1 },
    { "late", 1 },
    { "short", 2 },
    { "skipped", 0 },
    { "no-frame", 0 },
  };
  assert_stats (h, stats, G_N_ELEMENTS (stats));
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_reorder_timeout)
{
  GstHarness *h = gst_harness_new_parse (REORDER_B " timeout=1500");
  /* a clock that stands still: only the PTS of newer bursts time batches out here */
  gst_harness_use_testclock (h);
  gst_harness_set_src_caps_str (h, "application/x-daqiri-packets");
  const P a[] = { { 0 }, { 2 } };
  fail_unless_equals_int (gst_harness_push (h, burst (a, 2, 0)), GST_FLOW_OK);
  const P b[] = { { 5 } };
  fail_unless_equals_int (gst_harness_push (h, burst (b, 1, 1000)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  /* 2000 - 0 > 1500: batch 0 is flushed, batch 1 (first at 1000) is not yet */
  fail_unless_equals_int (gst_harness_push (h, burst (b, 0, 2000)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  check_frame (gst_harness_pull (h), &(WantFrame){ 0, 0x5, 2, 2, 0, 0, 0, F_FLUSHED, 0 });
  fail_unless_equals_int (gst_harness_push (h, burst (b, 0, 2600)), GST_FLOW_OK);
  check_frame (gst_harness_pull (h), &(WantFrame){ 1, 0x2, 1, 3, 0, 0, 0, F_FLUSHED, 1000 });
  fail_unless_equals_uint64 (stat (h, "flushed"), 2);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* In PLAYING the clock times batches out too: a stream that stops does not leave its last
 * batch waiting. The test clock stands at 10 s when the burst (PTS 3 s) arrives; the batch
 * is flushed once the clock is 20 ms past that, and not before. */
GST_START_TEST (test_reorder_timeout_clock)
{
  GstHarness *h = gst_harness_new_parse (REORDER_B " timeout=20000000");
  gst_harness_use_testclock (h);
  GstTestClock *clock = gst_harness_get_testclock (h);
  gst_test_clock_set_time (clock, 10 * GST_SECOND);
  gst_harness_set_src_caps_str (h, "application/x-daqiri-packets");
  const P a[] = { { 0 }, { 2 }, { 3 } };
  fail_unless_equals_int (gst_harness_push (h, burst (a, 3, 3 * GST_SECOND)), GST_FLOW_OK);
  g_usleep (50000);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  gst_test_clock_advance_time (clock, 19 * GST_MSECOND);
  g_usleep (50000);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  gst_test_clock_advance_time (clock, 2 * GST_MSECOND);
  GstBuffer *out = NULL;
  for (int i = 0; i < 500 && out == NULL; i++) {
    out = gst_harness_try_pull (h);
    if (out == NULL)
      g_usleep (2000);
  }
  fail_unless (out != NULL, "the batch was not flushed by the clock");
  check_frame (out, &(WantFrame){ 0, 0xd, 3, 1, 0, 0, 0, F_FLUSHED, 3 * GST_SECOND });
  fail_unless_equals_uint64 (stat (h, "flushed"), 1);
  gst_object_unref (clock);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* random bytes and random descriptors (many outside the burst): nothing read outside a packet
 * (run under ASan), every descriptor counted */
GST_START_TEST (test_reorder_malformed)
{
  GstHarness *h = gst_harness_new_parse (
      "daqirireorder name=r seq-offset=3 seq-bits=7 "
      "batch-offset=20 batch-bits=5 payload-offset=6 payload-size=10 packets-per-batch=3 "
      "input-type=int4 output-type=bf16");
  GRand *rand = g_rand_new_with_seed (7);
  guint64 total = 0, outside = 0;
  gst_harness_set_src_caps_str (h, "application/x-daqiri-packets");
  for (guint b = 0; b < 300; b++) {
    guint size = g_rand_int_range (rand, 1, 400), n = g_rand_int_range (rand, 0, 40);
    guint8 *data = g_malloc (size);
    GstDaqiriPacket *d = g_new0 (GstDaqiriPacket, MAX (n, 1));
    for (guint i = 0; i < size; i++)
      data[i] = (guint8) g_rand_int (rand);
    for (guint i = 0; i < n; i++) {
      d[i].offset = g_rand_int_range (rand, 0, size + 50);
      d[i].length = g_rand_int_range (rand, 0, 40);
      if (g_rand_int_range (rand, 0, 10) == 0)
        d[i].length = G_MAXUINT32 - g_rand_int_range (rand, 0, 3);
      if ((guint64) d[i].offset + d[i].length > size)
        outside++;
    }
    total += n;
    GstBuffer *buf = gst_buffer_new_wrapped (data, size);
    gst_buffer_add_daqiri_packet_meta (buf, d, n);
    g_free (d);
    GST_BUFFER_PTS (buf) = b * 1000;
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_uint64 (stat (h, "packets"), total);
  fail_unless (stat (h, "short") >= outside);
  fail_unless (gst_harness_buffers_received (h) > 0);
  g_rand_free (rand);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* FLUSH_STOP forgets the stream: the open batch is dropped, the next packet starts a new
 * window; an open batch at teardown gives its frame back */
GST_START_TEST (test_reorder_flush)
{
  GstHarness *h = gst_harness_new_parse (REORDER_B);
  GstSegment seg;
  gst_harness_set_src_caps_str (h, "application/x-daqiri-packets");
  const P a[] = { { 0 }, { 1 } };
  fail_unless_equals_int (gst_harness_push (h, burst (a, 2, 100)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  gst_segment_init (&seg, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  const P b[] = { { 10 }, { 8 }, { 11 }, { 9 }, { 12 } };
  fail_unless_equals_int (gst_harness_push (h, burst (b, 5, 200)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  check_frame (gst_harness_pull (h), &(WantFrame){ 2, 0xf, 4, 0, 0, 0, 0, F_COMPLETE, 200 });
  /* the dropped batch 0 counts as emitted and flushed, with its 2 missing slots */
  const WantStat stats[] = {
    { "batches", 2 },
    { "complete", 1 },
    { "flushed", 1 },
    { "missing", 2 },
    { "packets", 7 },
  };
  assert_stats (h, stats, G_N_ELEMENTS (stats));
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A stream without losses to EOS, bursts of 10 packets over batches of 4 (a burst moves the
 * window past batches it completed), window 1, 2 and 4: every frame COMPLETE and only that (a
 * complete batch is never PUSHED), nothing skipped (the empty ids the window holds at EOS were
 * never passed); then the same with batch 3 lost whole: that one id is skipped. */
static void
lossless_run (guint window, gint lost_batch)
{
  gchar *launch = g_strdup_printf ("daqirireorder name=r seq-offset=0 seq-bits=16 "
                                   "payload-offset=4 payload-size=4 packets-per-batch=4 window=%u",
      window);
  GstHarness *h = gst_harness_new_parse (launch);
  gst_harness_set_src_caps_str (h, "application/x-daqiri-packets");
  for (guint b = 0; b < 6; b++) {
    P p[10];
    guint n = 0;
    for (guint i = 0; i < 10; i++)
      if ((gint) ((b * 10 + i) / 4) != lost_batch)
        p[n++] = (P){ (gint) (b * 10 + i), FALSE };
    fail_unless_equals_int (gst_harness_push (h, burst (p, n, 1000 * (b + 1))), GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  const guint n_frames = lost_batch >= 0 ? 14 : 15;
  fail_unless_equals_int (gst_harness_buffers_received (h), n_frames);
  for (guint b = 0; b < 15; b++) {
    if ((gint) b == lost_batch)
      continue;
    check_frame (gst_harness_pull (h),
        &(WantFrame){ b, 0xf, 4, 0, 0, 0, 0, F_COMPLETE, GST_CLOCK_TIME_NONE });
  }
  const WantStat stats[] = {
    { "packets", 4 * n_frames },
    { "batches", n_frames },
    { "complete", n_frames },
    { "pushed", 0 },
    { "flushed", 0 },
    { "missing", 0 },
    { "skipped", lost_batch >= 0 ? 1 : 0 },
  };
  assert_stats (h, stats, G_N_ELEMENTS (stats));
  gst_harness_teardown (h);
  g_free (launch);
}

GST_START_TEST (test_reorder_lossless)
{
  for (guint window = 1; window <= 4; window *= 2) {
    lossless_run (window, -1);
    lossless_run (window, 3);
  }
}

GST_END_TEST;

/* ---- (c) int16 network order -> fp32 ------------------------------------------------- */

GST_START_TEST (test_convert_int16_fp32)
{
  GstHarness *h = gst_harness_new_parse (
      "daqirireorder name=r seq-offset=0 seq-bits=16 "
      "payload-offset=4 payload-size=8 packets-per-batch=2 input-type=int16 output-type=fp32 "
      "byte-order=network");
  const gint16 v[8] = { 1, -1, 32767, -32768, 0, 256, -300, 12345 };
  guint8 data[2 * 12] = { 0 };
  /* slot 1 first */
  for (guint i = 0; i < 2; i++) {
    guint seq = 1 - i;
    guint8 *q = data + i * 12;
    q[1] = (guint8) seq;
    for (guint k = 0; k < 4; k++) {
      guint16 u = (guint16) v[seq * 4 + k];
      q[4 + 2 * k] = (guint8) (u >> 8);
      q[5 + 2 * k] = (guint8) u;
    }
  }
  GstDaqiriPacket d[2] = { { 0, 12, 0, 0, 0 }, { 12, 12, 0, 0, 0 } };
  GstBuffer *buf = gst_buffer_new_memdup (data, sizeof data);
  gst_buffer_add_daqiri_packet_meta (buf, d, 2);
  gst_harness_set_src_caps_str (h, "application/x-daqiri-packets");
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull (h);
  const gfloat want[8] = { 1.0f, -1.0f, 32767.0f, -32768.0f, 0.0f, 256.0f, -300.0f, 12345.0f };
  assert_bytes (out, (const guint8 *) want, sizeof want);
  assert_frame_meta (out, 0, 2, 0, 0, 0, 0, F_COMPLETE);
  gst_buffer_unref (out);

  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstCaps *want_caps =
      gst_caps_from_string ("application/x-daqiri-frame, "
                            "element-type=(string)fp32, elements=(int)8, packets-per-batch=(int)2");
  fail_unless (gst_caps_is_equal (caps, want_caps), "caps %" GST_PTR_FORMAT, caps);
  gst_caps_unref (caps);
  gst_caps_unref (want_caps);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ---- (d) bad properties: an ERROR naming the property, the value, what is allowed ------- */

static gchar *
start_error (const gchar *launch)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (launch, &err);
  fail_unless (p != NULL && err == NULL);
  fail_unless_equals_int (gst_element_set_state (p, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  GstBus *bus = gst_element_get_bus (p);
  GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (m != NULL);
  gst_message_parse_error (m, &err, NULL);
  gchar *text = g_strdup (err->message);
  g_error_free (err);
  gst_message_unref (m);
  gst_object_unref (bus);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (p);
  return text;
}

static void
assert_start_error (const gchar *launch, const gchar *want)
{
  gchar *text = start_error (launch);
  fail_unless (strstr (text, want) != NULL, "error \"%s\" lacks \"%s\"", text, want);
  g_free (text);
}

GST_START_TEST (test_bad_properties)
{
  assert_start_error ("fakesrc ! daqirireorder input-type=fp32 output-type=fp32 ! fakesink",
      "input type 7 (fp32) is not an input type; allowed: same, int4, int8, int16, int32");
  assert_start_error ("fakesrc ! daqirireorder input-type=int16 ! fakesink",
      "input type int16 with output type same: set both to same");
  assert_start_error ("fakesrc ! daqirireorder seq-bits=4 packets-per-batch=2 window=8 ! "
                      "fakesink",
      "window 8 is too large: at most 4 batches");
  /* a batch over more than half the sequence numbers without a batch field never completes;
   * the pipeline does not start, and the error names the properties and what is allowed */
  assert_start_error ("fakesrc ! daqirireorder seq-bits=1 packets-per-batch=4 ! fakesink",
      "packets-per-batch 4 exceeds half the 2 sequence numbers of a 1-bit sequence field "
      "without a batch field (batch-bits 0), so no batch could ever complete; allowed: "
      "packets-per-batch 1..1, or a batch field (batch-bits)");
  assert_start_error ("fakesrc ! daqirireorder seq-bits=1 batch-bits=8 packets-per-batch=4 ! "
                      "fakesink",
      "packets-per-batch 4 exceeds the 2 sequence numbers of a 1-bit sequence "
      "field");
  assert_start_error ("fakesrc ! daqirireorder payload-offset=65000 payload-size=1000 ! "
                      "fakesink",
      "payload-offset 65000 + payload-size 1000 exceeds 65536 bytes");
  /* memory=cuda needs CUDA in the build and a GPU: otherwise a clear error (CI has no GPU;
   * tests/reorder/test-reorder-gpu.c covers the GPU) */
  GError *perr = NULL;
  GstElement *gp = gst_parse_launch ("fakesrc ! daqirireorder memory=cuda ! fakesink", &perr);
  fail_unless (gp != NULL && perr == NULL);
  if (gst_element_set_state (gp, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE) {
    gchar *text = start_error ("fakesrc ! daqirireorder memory=cuda ! fakesink");
#ifdef HAVE_CUDA_BUILD
    const char *why = "no GPU can be used";
#else
    const char *why = "built without CUDA";
#endif
    fail_unless (
        strstr (text, "property 'memory' is cuda, but ") != NULL && strstr (text, why) != NULL,
        "error \"%s\" lacks \"%s\"", text, why);
    fail_unless (strstr (text, "allowed: memory=system") != NULL);
    g_free (text);
  }
  gst_element_set_state (gp, GST_STATE_NULL);
  gst_object_unref (gp);
  /* the same for daqirisrc's ring (the emulated port needs no root) */
  gp = gst_parse_launch ("daqirisrc device=emu:memcheck memory=cuda ! fakesink", &perr);
  fail_unless (gp != NULL && perr == NULL);
  if (gst_element_set_state (gp, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE) {
    gchar *text = start_error ("daqirisrc device=emu:memcheck memory=cuda ! fakesink");
    fail_unless (strstr (text, "property 'memory' is cuda, but ") != NULL &&
            strstr (text, "allowed: memory=system") != NULL,
        "error \"%s\"", text);
    g_free (text);
  }
  gst_element_set_state (gp, GST_STATE_NULL);
  gst_object_unref (gp);
  assert_start_error ("fakesrc ! daqirireorder video-format=uyvy ! fakesink",
      "property 'video-format' is UYVY, but width 0 x height 0 is no picture");
  assert_start_error ("fakesrc ! daqirireorder video-format=uyvy width=8 height=2 ! fakesink",
      "a frame of 1 bytes (packets-per-batch 1 x payload 1) is not a UYVY picture of 8 x 2 "
      "(32 bytes, rows of 16 bytes)");
  assert_start_error ("fakesrc ! daqirireorder packets-per-batch=6 payload-size=1 "
                      "video-format=rgb width=3 height=2 ! fakesink",
      "is not a RGB picture of 3 x 2 "
      "(24 bytes, rows of 12 bytes)");
  assert_start_error ("fakesrc ! daqirireorder memory=cuda video-format=gray8 width=4 height=1 "
                      "packets-per-batch=4 ! fakesink",
      "property 'video-format' is GRAY8: allowed with "
      "memory=cuda: UYVY, YUY2, RGBA, BGRA, RGBx, BGRx, ARGB, ABGR, RGB, BGR, I422_10LE");
  assert_start_error ("fakesrc ! daqirireorder video-format=i420 width=4 height=2 ! fakesink",
      "property 'video-format' is I420: allowed with memory=system: UYVY, YUY2, RGBA, BGRA, "
      "RGBx, BGRx, ARGB, ABGR, RGB, BGR, I422_10LE, GRAY8, GRAY16_LE, GRAY16_BE, UYVP");
  /* 10-bit 4:2:2: even widths; the frame holds width*height*5/2 bytes; UYVP rows unpadded,
   * in system memory only (GstCudaMemory has no UYVP) */
  assert_start_error ("fakesrc ! daqirireorder video-format=i422-10le width=7 height=2 "
                      "packets-per-batch=5 payload-size=7 ! fakesink",
      "property 'width' is 7: video-format "
      "I422_10LE takes 10-bit 4:2:2 pgroups of 2 pixels; allowed: even widths");
  assert_start_error ("fakesrc ! daqirireorder video-format=i422-10le width=8 height=2 "
                      "packets-per-batch=3 payload-size=10 ! fakesink",
      "a frame of 30 bytes "
      "(packets-per-batch 3 x payload 10) is not an I422_10LE picture of 8 x 2 carried as "
      "10-bit 4:2:2 pgroups (8*2*5/2 = 40 bytes)");
  assert_start_error ("fakesrc ! daqirireorder video-format=uyvp width=3 height=2 ! fakesink",
      "property 'width' is 3: video-format UYVP takes 10-bit 4:2:2 pgroups of 2 pixels");
  assert_start_error ("fakesrc ! daqirireorder video-format=uyvp width=4 height=2 "
                      "packets-per-batch=2 payload-size=10 ! fakesink",
      "property 'width' is 4: UYVP rows of "
      "4*5/2 = 10 bytes are padded to 12 bytes in GStreamer's UYVP layout, but the frame "
      "carries them without padding; allowed: widths that are a multiple of 8");
  assert_start_error ("fakesrc ! daqirireorder video-format=uyvp width=8 height=2 "
                      "packets-per-batch=3 payload-size=10 ! fakesink",
      "a frame of 30 bytes "
      "(packets-per-batch 3 x payload 10) is not a UYVP picture of 8 x 2 (40 bytes, rows of "
      "20 bytes)");
  assert_start_error ("fakesrc ! daqirireorder memory=cuda video-format=uyvp width=8 height=2 "
                      "packets-per-batch=4 payload-size=10 ! fakesink",
      "property 'video-format' is UYVP: "
      "allowed with memory=cuda: UYVY, YUY2, RGBA, BGRA, RGBx, BGRx, ARGB, ABGR, RGB, BGR, "
      "I422_10LE");
  /* GstCudaMemory video needs CUDA in the build, GstCuda and a GPU: CI has no GPU */
  const gchar *cuda_video[] = {
    "fakesrc ! daqirireorder memory=cuda video-format=uyvy width=2 height=2 "
    "packets-per-batch=2 payload-size=4 ! fakesink",
    "fakesrc ! daqirireorder memory=cuda video-format=i422-10le width=8 height=2 "
    "packets-per-batch=4 payload-size=10 ! fakesink",
  };
  for (guint i = 0; i < G_N_ELEMENTS (cuda_video); i++) {
    GstElement *cp = gst_parse_launch (cuda_video[i], NULL);
    fail_unless (cp != NULL);
    gboolean fails = gst_element_set_state (cp, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE;
    gst_element_set_state (cp, GST_STATE_NULL);
    gst_object_unref (cp);
    if (!fails)
      continue; /* a GPU with GstCuda: test-reorder-gpu covers it */
    gchar *text = start_error (cuda_video[i]);
    fail_unless (strstr (text, "needs GstCuda: ") != NULL ||
            strstr (text, "built without CUDA") != NULL ||
            strstr (text, "no GPU can be used") != NULL,
        "error \"%s\"", text);
    g_free (text);
  }
  assert_start_error ("fakesrc ! daqiripay src-mac=02:00:zz ! fakesink",
      "property 'src-mac': \"02:00:zz\" is not a MAC address; expected six two-digit hex");
  assert_start_error ("fakesrc ! daqiripay dst=10.0.0.300 ! fakesink",
      "property 'dst': \"10.0.0.300\" is not an IPv4 address");
  assert_start_error ("fakesrc ! daqiripay seq-offset=150 ! fakesink",
      "a sequence or batch field lies in the IPv4 header");
  assert_start_error ("fakesrc ! daqiripay payload-offset=40 ! fakesink",
      "header template (42 bytes) runs into the payload at offset 40");
}

GST_END_TEST;

/* a frame of the wrong size is an error that names the sizes */
GST_START_TEST (test_pay_wrong_size)
{
  GstHarness *h = gst_harness_new_parse ("daqiripay payload-size=100 packets-per-batch=2");
  gst_harness_set_src_caps_str (h, "application/octet-stream");
  fail_unless_equals_int (
      gst_harness_push (h, gst_buffer_new_allocate (NULL, 150, NULL)), GST_FLOW_ERROR);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ---- (e) pay -> reorder over a port: two pipelines in this process ------------------------ *
 *   appsrc ! daqiripay ! daqirisink device=TX
 *   daqirisrc device=RX ! daqirireorder ! appsink
 * on the emulated ConnectX (one port, its TX looped to its RX), on DPDK's net_ring (the same),
 * and on the afpacket engine over a veth pair in a private network namespace (root). The
 * frames come back bit for bit, complete, in order. */

#define RT_FIELDS \
  "seq-offset=336 seq-bits=16 batch-offset=352 batch-bits=16 " \
  "packets-per-batch=16 payload-offset=48 payload-size=1000"
#define AFP_TX_IF "dqrtx0"
#define AFP_RX_IF "dqrrx0"

static gboolean have_netns;

static GstElement *
launch (const gchar *desc)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);
  fail_unless (p != NULL && err == NULL, "%s: %s", desc, err ? err->message : "");
  return p;
}

/* in_place: the sink lends TX slots (emu), so daqiripay writes every packet into them */
static void
port_round_trip (const gchar *rx_device, const gchar *tx_device, gboolean in_place)
{
  const guint n_frames = 40;
  const gsize frame_size = 16 * 1000;
  gchar *desc = g_strdup_printf ("daqirisrc device=%s ! daqirireorder name=r " RT_FIELDS
                                 " ! appsink name=out sync=false",
      rx_device);
  GstElement *rx = launch (desc);
  g_free (desc);
  desc = g_strdup_printf ("appsrc name=in format=time caps=application/x-daqiri-frame ! "
                          "daqiripay " RT_FIELDS " ! daqirisink name=tx device=%s sync=false",
      tx_device);
  GstElement *tx = launch (desc);
  g_free (desc);
  /* daqirisrc opens its queue in READY -> PAUSED, within set_state: the receiver is ready
   * when this returns (the live pipeline itself completes PLAYING with the first buffer) */
  fail_if (gst_element_set_state (rx, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE);
  fail_if (gst_element_set_state (tx, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE);

  GstElement *in = gst_bin_get_by_name (GST_BIN (tx), "in");
  guint8 **frames = g_new (guint8 *, n_frames);
  for (guint f = 0; f < n_frames; f++) {
    frames[f] = random_frame (frame_size);
    fail_unless_equals_int (
        gst_app_src_push_buffer (GST_APP_SRC (in), frame_buffer (frames[f], frame_size, f)),
        GST_FLOW_OK);
  }
  gst_app_src_end_of_stream (GST_APP_SRC (in));
  gst_object_unref (in);
  GstBus *bus = gst_element_get_bus (tx);
  GstMessage *m =
      gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS, "sender did not finish");
  gst_message_unref (m);
  gst_object_unref (bus);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (tx), "tx");
  GstStructure *st = NULL;
  guint64 sent = 0, placed = 0, copies = 0;
  g_object_get (sink, "stats", &st, NULL);
  fail_unless (gst_structure_get_uint64 (st, "packets", &sent) &&
      gst_structure_get_uint64 (st, "in-place", &placed) &&
      gst_structure_get_uint64 (st, "copies", &copies));
  fail_unless_equals_uint64 (sent, n_frames * 16);
  fail_unless_equals_uint64 (placed, in_place ? n_frames * 16 : 0);
  fail_unless_equals_uint64 (copies, in_place ? 0 : n_frames * 16);
  gst_structure_free (st);
  gst_object_unref (sink);

  GstElement *out = gst_bin_get_by_name (GST_BIN (rx), "out");
  for (guint f = 0; f < n_frames; f++) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (out), 10 * GST_SECOND);
    fail_unless (sample != NULL, "frame %u did not arrive over %s", f, rx_device);
    GstBuffer *b = gst_sample_get_buffer (sample);
    assert_bytes (b, frames[f], frame_size);
    /* complete, and only that (never PUSHED, whatever moved the window past it) */
    assert_frame_meta (b, f, 16, 0, 0, 0, 0, F_COMPLETE);
    gst_sample_unref (sample);
    g_free (frames[f]);
  }
  gst_object_unref (out);
  g_free (frames);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (tx);
  gst_object_unref (rx);
}

#ifdef HAVE_MLX5_EMU
GST_START_TEST (test_emu_round_trip)
{
  port_round_trip ("emu:reorder-rt", "emu:reorder-rt", TRUE);
}

GST_END_TEST;
#endif

#ifdef HAVE_DPDK
GST_START_TEST (test_dpdk_round_trip)
{
  port_round_trip ("dpdk:net_ring0", "dpdk:net_ring0", FALSE);
}

GST_END_TEST;
#endif

GST_START_TEST (test_afpacket_round_trip)
{
  if (!have_netns) {
    g_printerr ("not root: skipping the pay -> reorder round trip over veth\n");
    return;
  }
  port_round_trip ("afpacket:" AFP_RX_IF, "afpacket:" AFP_TX_IF, FALSE);
}

GST_END_TEST;

static Suite *
reorder_suite (void)
{
  Suite *s = suite_create ("daqirireorder");
  TCase *tc = tcase_create ("general");
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_round_trip);
  tcase_add_test (tc, test_pay_packets);
  tcase_add_test (tc, test_reorder_losses);
  tcase_add_test (tc, test_reorder_video);
  tcase_add_test (tc, test_reorder_i422_10);
  tcase_add_test (tc, test_reorder_uyvp);
  tcase_add_test (tc, test_reorder_timeout);
  tcase_add_test (tc, test_reorder_timeout_clock);
  tcase_add_test (tc, test_reorder_malformed);
  tcase_add_test (tc, test_reorder_flush);
  tcase_add_test (tc, test_reorder_lossless);
  tcase_add_test (tc, test_convert_int16_fp32);
  tcase_add_test (tc, test_bad_properties);
  tcase_add_test (tc, test_pay_wrong_size);
#ifdef HAVE_MLX5_EMU
  tcase_add_test (tc, test_emu_round_trip);
#endif
#ifdef HAVE_DPDK
  tcase_add_test (tc, test_dpdk_round_trip);
#endif
  tcase_add_test (tc, test_afpacket_round_trip);
  return s;
}

int
main (int argc, char **argv)
{
  /* as root: a veth pair in a private namespace, entered before any thread exists */
  DqNetns *ns = dq_netns_setup_optional (AFP_TX_IF, AFP_RX_IF, "the afpacket round trip");
  have_netns = ns != NULL;
  gst_check_init (&argc, &argv);
  int failed = gst_check_run_suite (reorder_suite (), "reorder", __FILE__);
  if (ns != NULL)
    dq_netns_free (ns);
  return failed ? 1 : 0;
}
