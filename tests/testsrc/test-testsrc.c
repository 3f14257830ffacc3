/* Tests of the daqiri test-packet format (libgstdaqiri) and of daqiritestsrc. */
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/daqiri/daqiri.h>
#include <string.h>

#include "dq-check-suite.h"
#include "dq-test-csum.h"

/* ---- an independent reading of the wire format ---------------------------------- */

static guint16
rd16 (const guint8 *p)
{
  return (guint16) (p[0] << 8 | p[1]);
}

static guint32
rd32 (const guint8 *p)
{
  return (guint32) p[0] << 24 | (guint32) p[1] << 16 | (guint32) p[2] << 8 | p[3];
}

/* Asserts every byte of a test packet against the format, computed here from scratch. */
static void
assert_frame (const guint8 *f, gsize len, const guint8 dst_mac[6], const guint8 src_mac[6],
    guint32 src_ip, guint32 dst_ip, guint src_port, guint dst_port, gboolean udp_csum, guint32 seq,
    guint32 flow)
{
  fail_unless (len >= 60);
  fail_unless (memcmp (f, dst_mac, 6) == 0);
  fail_unless (memcmp (f + 6, src_mac, 6) == 0);
  fail_unless_equals_int (rd16 (f + 12), 0x0800);
  fail_unless_equals_int (f[14], 0x45);
  fail_unless_equals_int (f[15], 0);
  fail_unless_equals_int (rd16 (f + 16), len - 14);
  fail_unless_equals_int (rd16 (f + 18), 0);
  fail_unless_equals_int (rd16 (f + 20), 0x4000);
  fail_unless_equals_int (f[22], 64);
  fail_unless_equals_int (f[23], 17);
  fail_unless_equals_int (rd16 (f + 24), dq_test_ipv4_csum (f + 14));
  fail_unless_equals_int (rd32 (f + 26), src_ip);
  fail_unless_equals_int (rd32 (f + 30), dst_ip);
  fail_unless_equals_int (rd16 (f + 34), src_port);
  fail_unless_equals_int (rd16 (f + 36), dst_port + flow);
  fail_unless_equals_int (rd16 (f + 38), len - 34);
  fail_unless_equals_int (rd16 (f + 40), udp_csum ? dq_test_l4_csum (f + 14) : 0);
  fail_unless_equals_int (rd32 (f + 42), seq);
  fail_unless_equals_int (rd32 (f + 46), flow);
  for (gsize j = 8; j < len - 42; j++) {
    guint8 want = (guint8) ((seq * 31u + (guint32) j * 7u + flow) & 0xff);
    if (f[42 + j] != want)
      fail (
          "payload byte %" G_GSIZE_FORMAT " of seq %u is %u, expected %u", j, seq, f[42 + j], want);
  }
}

static const guint8 default_src_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const guint8 default_dst_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };

static void
assert_default_frame (const guint8 *f, gsize len, gboolean udp_csum, guint32 seq, guint32 flow)
{
  assert_frame (f, len, default_dst_mac, default_src_mac, 0x0a000001, 0x0a000002, 5000, 6000,
      udp_csum, seq, flow);
}

/* ---- the library ------------------------------------------------------------------ */

GST_START_TEST (test_params_defaults)
{
  GstDaqiriTestPacketParams p;

  memset (&p, 0xab, sizeof p);
  gst_daqiri_test_packet_params_init (&p);
  fail_unless (memcmp (p.src_mac, default_src_mac, 6) == 0);
  fail_unless (memcmp (p.dst_mac, default_dst_mac, 6) == 0);
  fail_unless_equals_int (p.src_ip, 0x0a000001);
  fail_unless_equals_int (p.dst_ip, 0x0a000002);
  fail_unless_equals_int (p.src_port, 5000);
  fail_unless_equals_int (p.dst_port, 6000);
  fail_unless (p.udp_checksum);
}

GST_END_TEST;

GST_START_TEST (test_write_layout)
{
  GstDaqiriTestPacketParams p;
  guint8 frame[100];

  gst_daqiri_test_packet_params_init (&p);
  fail_unless_equals_int (gst_daqiri_test_packet_write (&p, frame, 100, 0x01020304, 3), 100);
  /* a few bytes spelled out by hand */
  fail_unless_equals_int (frame[16], 0);
  fail_unless_equals_int (frame[17], 86); /* IPv4 total length */
  fail_unless_equals_int (frame[36], 6003 >> 8);
  fail_unless_equals_int (frame[37], 6003 & 0xff);
  fail_unless_equals_int (frame[38], 0);
  fail_unless_equals_int (frame[39], 66); /* UDP length */
  fail_unless_equals_int (frame[42], 1);
  fail_unless_equals_int (frame[45], 4);
  fail_unless_equals_int (frame[49], 3);
  /* payload byte 8: (0x01020304 * 31 + 56 + 3) & 0xff = (4 * 31 + 59) & 0xff = 183 */
  fail_unless_equals_int (frame[50], 183);
  fail_unless_equals_int (frame[51], 190);
  assert_default_frame (frame, 100, TRUE, 0x01020304, 3);

  /* the macro agrees with the formula */
  for (guint j = 8; j < 300; j++)
    fail_unless_equals_int (GST_DAQIRI_TEST_PACKET_BYTE (77, 5, j), (77 * 31 + j * 7 + 5) & 0xff);

  guint32 seq = 0, flow = 0;
  fail_unless (gst_daqiri_test_packet_check (&p, frame, 100, &seq, &flow));
  fail_unless_equals_int (seq, 0x01020304);
  fail_unless_equals_int (flow, 3);
  fail_unless (gst_daqiri_test_packet_check (NULL, frame, 100, NULL, NULL));
  fail_unless (gst_daqiri_test_packet_explain (&p, frame, 100) == NULL);
}

GST_END_TEST;

/* Every size 60..1600 and the largest ones, many sequence numbers and flows, both
 * checksum settings: the frame matches the independent reading and passes the check. */
GST_START_TEST (test_write_every_size)
{
  GstDaqiriTestPacketParams p;
  const guint max = GST_DAQIRI_TEST_PACKET_MAX_SIZE;
  guint8 *frame = g_malloc (max + 16);
  static const guint big[] = { 9216, 9217, 65535, 65548, 65549 };

  gst_daqiri_test_packet_params_init (&p);
  fail_unless_equals_int (max, 65549);
  for (guint c = 0; c < 2; c++) {
    p.udp_checksum = c == 0;
    for (guint len = 60; len <= 1600 + G_N_ELEMENTS (big); len++) {
      guint real = len <= 1600 ? len : big[len - 1601];
      guint32 seq = len * 2654435761u;
      guint32 flow = len % 7;
      memset (frame, 0xee, max + 16);
      fail_unless_equals_int (gst_daqiri_test_packet_write (&p, frame, real, seq, flow), real);
      /* nothing written past the frame */
      for (guint i = real; i < max + 16 && i < real + 16; i++)
        fail_unless_equals_int (frame[i], 0xee);
      assert_default_frame (frame, real, p.udp_checksum, seq, flow);
      guint32 got_seq, got_flow;
      fail_unless (gst_daqiri_test_packet_check (&p, frame, real, &got_seq, &got_flow),
          "len %u: %s", real, gst_daqiri_test_packet_explain (&p, frame, real));
      fail_unless_equals_int (got_seq, seq);
      fail_unless_equals_int (got_flow, flow);
    }
  }
  g_free (frame);
}

GST_END_TEST;

GST_START_TEST (test_write_bad_arguments)
{
  GstDaqiriTestPacketParams p;
  guint8 *frame = g_malloc (65600);

  gst_daqiri_test_packet_params_init (&p);
  memset (frame, 0x5a, 65600);
  fail_unless_equals_int (gst_daqiri_test_packet_write (&p, frame, 59, 0, 0), 0);
  fail_unless_equals_int (gst_daqiri_test_packet_write (&p, frame, 0, 0, 0), 0);
  fail_unless_equals_int (gst_daqiri_test_packet_write (&p, frame, 65550, 0, 0), 0);
  /* port 6000 + 59535 = 65535 is the last one; one more flow overflows */
  fail_unless_equals_int (gst_daqiri_test_packet_write (&p, frame, 60, 0, 59536), 0);
  fail_unless_equals_int (gst_daqiri_test_packet_write (&p, frame, 60, 0, G_MAXUINT32), 0);
  for (guint i = 0; i < 65600; i++)
    fail_unless_equals_int (frame[i], 0x5a);
  fail_unless_equals_int (gst_daqiri_test_packet_write (&p, frame, 60, 9, 59535), 60);
  fail_unless_equals_int (rd16 (frame + 36), 65535);
  fail_unless (gst_daqiri_test_packet_check (&p, frame, 60, NULL, NULL));
  g_free (frame);
}

GST_END_TEST;

/* A UDP checksum that computes to 0 goes out as 0xffff (0 would mean "none"). */
GST_START_TEST (test_udp_checksum_zero)
{
  GstDaqiriTestPacketParams p;
  guint8 frame[64];
  guint32 seq;

  gst_daqiri_test_packet_params_init (&p);
  for (seq = 0; seq < 4000000; seq++) {
    gst_daqiri_test_packet_write (&p, frame, 64, seq, 0);
    if (rd16 (frame + 40) == 0xffff)
      break;
  }
  fail_unless (seq < 4000000, "no packet with checksum 0xffff found");
  GST_INFO ("seq %u has UDP checksum 0xffff", seq);
  assert_default_frame (frame, 64, TRUE, seq, 0);
  fail_unless (gst_daqiri_test_packet_check (&p, frame, 64, NULL, NULL));
  /* set to 0 the field reads as "no checksum": refused when the parameters ask for one,
   * accepted without them */
  frame[40] = frame[41] = 0;
  fail_if (gst_daqiri_test_packet_check (&p, frame, 64, NULL, NULL));
  fail_unless (gst_daqiri_test_packet_check (NULL, frame, 64, NULL, NULL));
}

GST_END_TEST;

GST_START_TEST (test_udp_checksum_off)
{
  GstDaqiriTestPacketParams p, on;
  guint8 frame[200];

  gst_daqiri_test_packet_params_init (&p);
  on = p;
  p.udp_checksum = FALSE;
  fail_unless_equals_int (gst_daqiri_test_packet_write (&p, frame, 200, 42, 1), 200);
  fail_unless_equals_int (rd16 (frame + 40), 0);
  fail_unless (gst_daqiri_test_packet_check (&p, frame, 200, NULL, NULL));
  fail_unless (gst_daqiri_test_packet_check (NULL, frame, 200, NULL, NULL));
  fail_if (gst_daqiri_test_packet_check (&on, frame, 200, NULL, NULL));
  fail_unless (gst_daqiri_test_packet_explain (&on, frame, 200) != NULL);

  gst_daqiri_test_packet_write (&on, frame, 200, 42, 1);
  fail_if (gst_daqiri_test_packet_check (&p, frame, 200, NULL, NULL));
}

GST_END_TEST;

/* Flipping any single bit of a frame makes the check fail, except where the flipped
 * frame is another valid test packet: without a UDP checksum a sequence number that
 * differs above its low byte (the pattern depends on seq * 31 mod 256 only); without the
 * parameters also the MACs, and without both the ports and the flow index above its low
 * byte. A checksum flipped to 0 reads as "none", which only the parameters refuse. */
static void
flip_every_bit (const GstDaqiriTestPacketParams *p, guint len, guint32 seq, guint32 flow)
{
  guint8 *frame = g_malloc (len);
  guint exempt_with = 0, exempt_without = 0;

  fail_unless_equals_int (gst_daqiri_test_packet_write (p, frame, len, seq, flow), len);
  fail_unless (gst_daqiri_test_packet_check (p, frame, len, NULL, NULL));
  for (guint i = 0; i < len; i++) {
    for (guint b = 0; b < 8; b++) {
      frame[i] ^= (guint8) (1u << b);
      gboolean seq_high = i >= 42 && i <= 44;
      gboolean flow_high = i >= 46 && i <= 48;
      gboolean ports = i >= 34 && i <= 37;
      gboolean csum_zero = (i == 40 || i == 41) && rd16 (frame + 40) == 0;

      if (!p->udp_checksum && seq_high) {
        exempt_with++;
      } else if (gst_daqiri_test_packet_check (p, frame, len, NULL, NULL)) {
        fail ("len %u: bit %u of byte %u flipped and the check passed", len, b, i);
      }
      if (i < 12 || csum_zero || (!p->udp_checksum && (seq_high || flow_high || ports))) {
        exempt_without++;
      } else if (gst_daqiri_test_packet_check (NULL, frame, len, NULL, NULL)) {
        fail ("len %u: bit %u of byte %u flipped and the check without params passed", len, b, i);
      }
      frame[i] ^= (guint8) (1u << b);
    }
  }
  fail_unless (gst_daqiri_test_packet_check (p, frame, len, NULL, NULL));
  /* the exemptions are the few bits named above, never more */
  fail_unless (exempt_with <= 24);
  fail_unless (exempt_without <= 96 + 24 + 24 + 32 + 1);
  g_free (frame);
}

GST_START_TEST (test_check_bit_flips)
{
  GstDaqiriTestPacketParams p;
  static const guint lens[] = { 60, 61, 97, 256, 1024, 1514 };

  gst_daqiri_test_packet_params_init (&p);
  for (guint i = 0; i < G_N_ELEMENTS (lens); i++)
    flip_every_bit (&p, lens[i], 1000 + i * 7919, i);
  p.udp_checksum = FALSE;
  p.src_ip = 0xc0a80101;
  p.dst_port = 1234;
  for (guint i = 0; i < G_N_ELEMENTS (lens); i++)
    flip_every_bit (&p, lens[i], G_MAXUINT32 - i, 17 * i);
}

GST_END_TEST;

/* A header field changed with the checksums made right again: the field checks
 * themselves must catch it, and say which field. */
static void
refresh_checksums (guint8 *f, gsize len)
{
  guint16 ip = dq_test_ipv4_csum (f + 14);
  f[24] = (guint8) (ip >> 8);
  f[25] = (guint8) ip;
  if (rd16 (f + 40) != 0) {
    guint16 udp = dq_test_l4_csum (f + 14);
    f[40] = (guint8) (udp >> 8);
    f[41] = (guint8) udp;
  }
}

GST_START_TEST (test_check_fields)
{
  static const struct {
    guint offset;
    guint8 value;
    gboolean needs_params;
    const gchar *names;
  } forged[] = {
    { 12, 0x86, FALSE, "ethertype" },
    { 14, 0x46, FALSE, "IPv4 version" },
    { 15, 0x10, FALSE, "DSCP" },
    { 19, 0x01, FALSE, "identification" },
    { 20, 0x00, FALSE, "flags" },
    { 21, 0x01, FALSE, "fragment" },
    { 22, 63, FALSE, "TTL" },
    { 23, 6, FALSE, "protocol" },
    { 0, 0x03, TRUE, "destination MAC" },
    { 11, 0x09, TRUE, "source MAC" },
    { 29, 0x07, TRUE, "IPv4 source" },
    { 33, 0x07, TRUE, "IPv4 destination" },
    { 35, 0x07, TRUE, "UDP source port" },
    { 37, 0x07, TRUE, "UDP destination port" },
  };
  GstDaqiriTestPacketParams p;
  guint8 frame[80], copy[80];

  gst_daqiri_test_packet_params_init (&p);
  gst_daqiri_test_packet_write (&p, frame, 80, 4242, 0);
  for (guint i = 0; i < G_N_ELEMENTS (forged); i++) {
    memcpy (copy, frame, 80);
    copy[forged[i].offset] = forged[i].value;
    refresh_checksums (copy, 80);
    fail_unless_equals_int (rd16 (copy + 24), dq_test_ipv4_csum (copy + 14));
    const gchar *why = gst_daqiri_test_packet_explain (&p, copy, 80);
    fail_unless (why != NULL, "byte %u = %u passed", forged[i].offset, forged[i].value);
    fail_unless (
        strstr (why, forged[i].names) != NULL, "\"%s\" does not name %s", why, forged[i].names);
    fail_if (gst_daqiri_test_packet_check (&p, copy, 80, NULL, NULL));
    fail_unless_equals_int (
        gst_daqiri_test_packet_check (NULL, copy, 80, NULL, NULL), forged[i].needs_params);
  }
  /* a different flow index with the port to match is another valid packet */
  memcpy (copy, frame, 80);
  copy[49] = 1;
  copy[37] = (guint8) (6001 & 0xff);
  for (guint j = 8; j < 80 - 42; j++)
    copy[42 + j] = (guint8) ((4242 * 31 + j * 7 + 1) & 0xff);
  refresh_checksums (copy, 80);
  guint32 flow = 0;
  fail_unless (gst_daqiri_test_packet_check (&p, copy, 80, NULL, &flow));
  fail_unless_equals_int (flow, 1);
}

GST_END_TEST;

/* A frame cut short at any length, or padded by a byte, fails; each copy is exactly as
 * long as the length given, so a read past it is a valgrind error. */
GST_START_TEST (test_check_truncated)
{
  GstDaqiriTestPacketParams p;
  static const guint lens[] = { 60, 77, 1024 };

  gst_daqiri_test_packet_params_init (&p);
  for (guint k = 0; k < G_N_ELEMENTS (lens); k++) {
    guint len = lens[k];
    guint8 *frame = g_malloc (len + 1);
    gst_daqiri_test_packet_write (&p, frame, len, 5 + k, 0);
    frame[len] = 0;
    for (guint cut = 0; cut < len; cut++) {
      guint8 *copy = g_memdup2 (frame, MAX (cut, 1));
      fail_if (gst_daqiri_test_packet_check (&p, copy, cut, NULL, NULL), "len %u", cut);
      fail_if (gst_daqiri_test_packet_check (NULL, copy, cut, NULL, NULL), "len %u", cut);
      fail_unless (gst_daqiri_test_packet_explain (NULL, copy, cut) != NULL);
      g_free (copy);
    }
    fail_if (gst_daqiri_test_packet_check (&p, frame, len + 1, NULL, NULL));
    fail_unless (gst_daqiri_test_packet_check (&p, frame, len, NULL, NULL));
    g_free (frame);
  }
  fail_if (gst_daqiri_test_packet_check (&p, NULL, 60, NULL, NULL));
}

GST_END_TEST;

/* Every round of n = max - min + 1 sequence numbers gets every size exactly once, in an
 * order that is neither sorted nor the same from round to round. */
GST_START_TEST (test_size_coverage)
{
  static const guint ranges[][2] = {
    { 60, 61 },
    { 60, 63 },
    { 60, 64 },
    { 60, 1514 },
    { 64, 9216 },
    { 100, 1000 },
    { 60, 65549 },
  };

  fail_unless_equals_int (gst_daqiri_test_packet_size (60, 60, 12345), 60);
  fail_unless_equals_int (gst_daqiri_test_packet_size (200, 100, 7), 200);
  for (guint r = 0; r < G_N_ELEMENTS (ranges); r++) {
    const guint min = ranges[r][0], max = ranges[r][1], n = max - min + 1;
    guint *seen = g_new0 (guint, n);
    guint *first_round = g_new (guint, n);
    guint rounds = n > 10000 ? 2 : 3;
    for (guint round = 0; round < rounds; round++) {
      guint ascending = 0, same_as_first = 0, prev = 0;
      memset (seen, 0, n * sizeof (guint));
      for (guint i = 0; i < n; i++) {
        guint32 seq = round * n + i;
        guint s = gst_daqiri_test_packet_size (min, max, seq);
        fail_unless (s >= min && s <= max, "size %u outside %u..%u", s, min, max);
        if (i < 1000)
          fail_unless_equals_int (gst_daqiri_test_packet_size (min, max, seq), s);
        seen[s - min]++;
        if (i > 0 && s > prev)
          ascending++;
        prev = s;
        if (round == 0)
          first_round[i] = s;
        else if (first_round[i] == s)
          same_as_first++;
      }
      for (guint i = 0; i < n; i++)
        fail_unless_equals_int (seen[i], 1);
      if (n >= 64) {
        /* a sorted or reversed sweep would give n - 1 or 0 */
        fail_unless (
            ascending > n / 4 && ascending < 3 * n / 4, "%u of %u ascending", ascending, n);
        if (round > 0)
          fail_unless (
              same_as_first < n / 8, "round %u repeats %u sizes of round 0", round, same_as_first);
      }
    }
    g_free (seen);
    g_free (first_round);
  }
}

GST_END_TEST;

/* ---- the element ------------------------------------------------------------------ */

typedef struct {
  guint64 next_seq;
  guint flows;
  guint size_min;
  guint size_max;
  GstDaqiriTestPacketParams params;
  guint64 packets;
  guint64 bytes;
  guint buffers;
} Expect;

static void
expect_init (Expect *e, guint flows, guint size_min, guint size_max)
{
  memset (e, 0, sizeof *e);
  e->flows = flows;
  e->size_min = size_min;
  e->size_max = size_max;
  gst_daqiri_test_packet_params_init (&e->params);
}

/* Checks one burst buffer packet by packet; returns its packet count. */
static guint
check_burst (GstBuffer *buf, Expect *e)
{
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
  GstMapInfo map;

  fail_unless (meta != NULL);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_READ));
  fail_unless (((guintptr) map.data & 63) == 0, "burst not 64-byte aligned");
  fail_unless (gst_daqiri_packet_meta_validate (meta, map.size, NULL));
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buf), e->next_seq);
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET_END (buf), e->next_seq + meta->n_packets);

  guint32 end = 0;
  for (guint i = 0; i < meta->n_packets; i++) {
    const GstDaqiriPacket *pk = &meta->packets[i];
    const guint32 seq = (guint32) e->next_seq;
    const guint32 flow = (guint32) (e->next_seq % e->flows);
    guint32 got_seq = 0, got_flow = 0;

    fail_unless_equals_int (pk->offset % 64, 0);
    fail_unless (pk->offset >= end, "packet %u overlaps the one before", i);
    fail_unless_equals_int (
        pk->length, gst_daqiri_test_packet_size (e->size_min, e->size_max, seq));
    fail_unless_equals_int (pk->flow_id, flow);
    fail_unless_equals_int (pk->flags, 0);
    fail_unless_equals_uint64 (pk->timestamp, 0);
    const guint8 *f = map.data + pk->offset;
    fail_unless (gst_daqiri_test_packet_check (&e->params, f, pk->length, &got_seq, &got_flow),
        "seq %u: %s", seq, gst_daqiri_test_packet_explain (&e->params, f, pk->length));
    fail_unless_equals_int (got_seq, seq);
    fail_unless_equals_int (got_flow, flow);
    fail_unless_equals_int (rd16 (f + 24), dq_test_ipv4_csum (f + 14));
    fail_unless_equals_int (rd16 (f + 40), e->params.udp_checksum ? dq_test_l4_csum (f + 14) : 0);
    end = pk->offset + pk->length;
    e->bytes += pk->length;
    e->next_seq++;
  }
  /* the buffer ends with the last frame */
  fail_unless_equals_int (map.size, end);
  gst_buffer_unmap (buf, &map);
  e->packets += meta->n_packets;
  e->buffers++;
  return meta->n_packets;
}

/* A harness around a daqiritestsrc with the properties of the NULL-terminated list. */
static GstHarness *src_harness (const gchar *first_property, ...) G_GNUC_NULL_TERMINATED;

static GstHarness *
src_harness (const gchar *first_property, ...)
{
  GstHarness *h = gst_harness_new ("daqiritestsrc");
  va_list args;

  va_start (args, first_property);
  g_object_set_valist (G_OBJECT (h->element), first_property, args);
  va_end (args);
  return h;
}

/* Pulls the next burst into *buf and checks it with check_burst (); FALSE at EOS. */
static gboolean
pull_burst (GstHarness *h, Expect *e, GstBuffer **buf)
{
  if (!gst_harness_pull_until_eos (h, buf) || *buf == NULL)
    return FALSE;
  check_burst (*buf, e);
  return TRUE;
}

static void
assert_stats (GstElement *el, guint64 packets, guint64 bytes, guint64 bursts)
{
  GstStructure *s = NULL;
  guint64 v;

  g_object_get (el, "stats", &s, NULL);
  fail_unless (s != NULL);
  fail_unless (gst_structure_get_uint64 (s, "packets", &v));
  fail_unless_equals_uint64 (v, packets);
  fail_unless (gst_structure_get_uint64 (s, "bytes", &v));
  fail_unless_equals_uint64 (v, bytes);
  fail_unless (gst_structure_get_uint64 (s, "bursts", &v));
  fail_unless_equals_uint64 (v, bursts);
  gst_structure_free (s);
}

GST_START_TEST (test_src_defaults)
{
  GstElement *el = gst_element_factory_make ("daqiritestsrc", NULL);
  guint64 u64;
  guint u, u2;
  gboolean b, live;
  gchar *smac, *dmac, *src, *dst;

  fail_unless (el != NULL);
  g_object_get (el, "num-packets", &u64, "burst-packets", &u, "udp-checksum", &b, "is-live", &live,
      "src-mac", &smac, "dst-mac", &dmac, "src", &src, "dst", &dst, NULL);
  fail_unless_equals_uint64 (u64, 0);
  fail_unless_equals_int (u, 64);
  fail_unless (b);
  fail_if (live);
  fail_unless_equals_string (smac, "02:00:00:00:00:01");
  fail_unless_equals_string (dmac, "02:00:00:00:00:02");
  fail_unless_equals_string (src, "10.0.0.1");
  fail_unless_equals_string (dst, "10.0.0.2");
  g_free (smac);
  g_free (dmac);
  g_free (src);
  g_free (dst);
  g_object_get (el, "packet-size-min", &u, "packet-size-max", &u2, NULL);
  fail_unless_equals_int (u, 60);
  fail_unless_equals_int (u2, 60);
  g_object_get (el, "n-flows", &u, "src-port", &u2, NULL);
  fail_unless_equals_int (u, 1);
  fail_unless_equals_int (u2, 5000);
  g_object_get (el, "dst-port", &u, "rate", &u64, NULL);
  fail_unless_equals_int (u, 6000);
  fail_unless_equals_uint64 (u64, 0);

  GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (el), "packet-size-max");
  fail_unless_equals_int (G_PARAM_SPEC_UINT (ps)->minimum, 60);
  fail_unless_equals_int (G_PARAM_SPEC_UINT (ps)->maximum, 9216);
  fail_unless (ps->flags & GST_PARAM_MUTABLE_READY);
  ps = g_object_class_find_property (G_OBJECT_GET_CLASS (el), "burst-packets");
  fail_unless_equals_int (G_PARAM_SPEC_UINT (ps)->minimum, 1);
  fail_unless_equals_int (G_PARAM_SPEC_UINT (ps)->maximum, 65535);
  assert_stats (el, 0, 0, 0);
  gst_object_unref (el);
}

GST_END_TEST;

/* n-flows and its deprecated alias flows are one value: the alias is marked deprecated
 * (what gst-inspect shows), either name sets it, both read it back, and a launch line with
 * flows= still makes that many flows. */
GST_START_TEST (test_src_flows_alias)
{
  GstElement *el = gst_element_factory_make ("daqiritestsrc", NULL);
  GObjectClass *klass = G_OBJECT_GET_CLASS (el);
  GParamSpec *n_flows = g_object_class_find_property (klass, "n-flows");
  GParamSpec *flows = g_object_class_find_property (klass, "flows");
  guint n = 0, alias = 0;

  fail_unless (n_flows != NULL && flows != NULL);
  fail_if (n_flows->flags & G_PARAM_DEPRECATED);
  fail_unless (flows->flags & G_PARAM_DEPRECATED);
  fail_unless_equals_string (g_param_spec_get_blurb (flows), "Deprecated: use n-flows");
  fail_unless (flows->flags & G_PARAM_READWRITE);
  fail_unless (flows->flags & GST_PARAM_MUTABLE_READY);
  fail_unless_equals_int (G_PARAM_SPEC_UINT (flows)->minimum, G_PARAM_SPEC_UINT (n_flows)->minimum);
  fail_unless_equals_int (G_PARAM_SPEC_UINT (flows)->maximum, G_PARAM_SPEC_UINT (n_flows)->maximum);
  fail_unless_equals_int (
      G_PARAM_SPEC_UINT (flows)->default_value, G_PARAM_SPEC_UINT (n_flows)->default_value);
  fail_unless_equals_int (G_PARAM_SPEC_UINT (n_flows)->maximum, 65535);

  g_object_set (el, "n-flows", 7, NULL);
  g_object_get (el, "n-flows", &n, "flows", &alias, NULL);
  fail_unless_equals_int (n, 7);
  fail_unless_equals_int (alias, 7);
  g_object_set (el, "flows", 9, NULL);
  g_object_get (el, "n-flows", &n, "flows", &alias, NULL);
  fail_unless_equals_int (n, 9);
  fail_unless_equals_int (alias, 9);
  /* as gst-launch sets it */
  gst_util_set_object_arg (G_OBJECT (el), "flows", "11");
  g_object_get (el, "n-flows", &n, NULL);
  fail_unless_equals_int (n, 11);
  gst_object_unref (el);

  GstHarness *h = gst_harness_new_parse ("daqiritestsrc num-packets=100 burst-packets=16 "
                                         "packet-size-min=60 packet-size-max=200 flows=5");
  Expect e;
  GstBuffer *buf = NULL;
  expect_init (&e, 5, 60, 200);
  gst_harness_play (h);
  while (pull_burst (h, &e, &buf))
    gst_buffer_unref (buf);
  fail_unless_equals_uint64 (e.packets, 100);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* num-packets not a multiple of burst-packets: exactly that many packets, then EOS;
 * every packet with the expected sequence number, flow and size. */
GST_START_TEST (test_src_count_and_eos)
{
  GstHarness *h = src_harness ("num-packets", (guint64) 1000, "burst-packets", 64,
      "packet-size-min", 60, "packet-size-max", 300, "n-flows", 3, NULL);
  GstBuffer *buf = NULL;
  Expect e;

  expect_init (&e, 3, 60, 300);
  gst_harness_play (h);

  guint sizes[64] = { 0 };
  guint n_sizes = 0;
  while (gst_harness_pull_until_eos (h, &buf) && buf != NULL) {
    fail_unless (!GST_BUFFER_PTS_IS_VALID (buf));
    guint n = check_burst (buf, &e);
    if (n_sizes < G_N_ELEMENTS (sizes))
      sizes[n_sizes++] = n;
    gst_buffer_unref (buf);
  }
  fail_unless (buf == NULL, "no EOS");
  fail_unless_equals_uint64 (e.packets, 1000);
  fail_unless_equals_int (e.buffers, 16);
  for (guint i = 0; i < 15; i++)
    fail_unless_equals_int (sizes[i], 64);
  fail_unless_equals_int (sizes[15], 1000 - 15 * 64);
  assert_stats (h->element, 1000, e.bytes, 16);

  /* caps carry the largest frame */
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstStructure *s = gst_caps_get_structure (caps, 0);
  gint mps = 0;
  fail_unless (gst_structure_has_name (s, "application/x-daqiri-packets"));
  fail_unless (gst_structure_get_int (s, "max-packet-size", &mps));
  fail_unless_equals_int (mps, 300);
  gst_caps_unref (caps);

  gst_harness_teardown (h);
}

GST_END_TEST;

/* num-packets smaller than one burst, and a restart that begins again at seq 0 */
GST_START_TEST (test_src_short_and_restart)
{
  GstHarness *h = src_harness ("num-packets", (guint64) 5, "burst-packets", 256, NULL);
  GstBuffer *buf;
  Expect e;

  for (guint run = 0; run < 2; run++) {
    expect_init (&e, 1, 60, 60);
    gst_harness_play (h);
    /* the harness remembers the first EOS for good, so look at the events themselves */
    buf = gst_harness_pull (h);
    fail_unless (buf != NULL);
    fail_unless_equals_int (check_burst (buf, &e), 5);
    gst_buffer_unref (buf);
    GstEvent *ev;
    while ((ev = gst_harness_pull_event (h)) != NULL && GST_EVENT_TYPE (ev) != GST_EVENT_EOS)
      gst_event_unref (ev);
    fail_unless (ev != NULL, "no EOS");
    gst_event_unref (ev);
    fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
    assert_stats (h->element, 5, 300, 1);
    fail_unless_equals_int (
        gst_element_set_state (h->element, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Addresses, ports, no checksum and many flows end up in every packet. */
GST_START_TEST (test_src_addresses)
{
  GstHarness *h = src_harness ("num-packets", (guint64) 700, "burst-packets", 100,
      "packet-size-min", 128, "packet-size-max", 128, "n-flows", 300, "src-mac",
      "AA:bb:CC:dd:EE:ff", "dst-mac", "0e:1f:20:31:42:53", "src", "192.168.7.9", "dst", "239.1.2.3",
      "src-port", 1, "dst-port", 65235, "udp-checksum", FALSE, NULL);
  GstBuffer *buf = NULL;
  Expect e;
  static const guint8 smac[6] = { 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff };
  static const guint8 dmac[6] = { 0x0e, 0x1f, 0x20, 0x31, 0x42, 0x53 };

  expect_init (&e, 300, 128, 128);
  memcpy (e.params.src_mac, smac, 6);
  memcpy (e.params.dst_mac, dmac, 6);
  e.params.src_ip = 0xc0a80709;
  e.params.dst_ip = 0xef010203;
  e.params.src_port = 1;
  e.params.dst_port = 65235;
  e.params.udp_checksum = FALSE;
  gst_harness_play (h);
  while (pull_burst (h, &e, &buf)) {
    GstMapInfo map;
    GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
    guint64 first_seq = GST_BUFFER_OFFSET (buf);
    gst_buffer_map (buf, &map, GST_MAP_READ);
    for (guint i = 0; i < meta->n_packets; i++)
      assert_frame (map.data + meta->packets[i].offset, meta->packets[i].length, dmac, smac,
          0xc0a80709, 0xef010203, 1, 65235, FALSE, (guint32) (first_seq + i),
          (guint32) ((first_seq + i) % 300));
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
  }
  fail_unless_equals_uint64 (e.packets, 700);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Sizes spread over the whole range: two rounds of 60..1514 give every size twice. */
GST_START_TEST (test_src_sizes_cover_range)
{
  const guint n = 1514 - 60 + 1;
  GstHarness *h = src_harness ("num-packets", (guint64) 2 * n, "burst-packets", 256,
      "packet-size-min", 60, "packet-size-max", 1514, "n-flows", 2, NULL);
  GstBuffer *buf = NULL;
  guint *seen = g_new0 (guint, n);
  Expect e;

  expect_init (&e, 2, 60, 1514);
  gst_harness_play (h);
  while (pull_burst (h, &e, &buf)) {
    GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
    for (guint i = 0; i < meta->n_packets; i++)
      seen[meta->packets[i].length - 60]++;
    gst_buffer_unref (buf);
  }
  for (guint i = 0; i < n; i++)
    fail_unless_equals_int (seen[i], 2);
  g_free (seen);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Bursts come from a pool: buffers handed back are reused, not reallocated. The test
 * clock holds the source between bursts, so each burst is back before the next. */
GST_START_TEST (test_src_pool_reuse)
{
  GstHarness *h = src_harness ("rate", (guint64) 1000000, "burst-packets", 32, "packet-size-max",
      1500, "is-live", TRUE, NULL);
  GHashTable *blocks = g_hash_table_new (NULL, NULL);
  Expect e;

  expect_init (&e, 1, 60, 1500);
  gst_harness_play (h);
  for (guint i = 0; i < 200; i++) {
    fail_unless (gst_harness_crank_single_clock_wait (h));
    GstBuffer *buf = gst_harness_pull (h);
    GstMapInfo map;
    fail_unless (buf != NULL);
    check_burst (buf, &e);
    gst_buffer_map (buf, &map, GST_MAP_READ);
    g_hash_table_add (blocks, map.data);
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
  }
  fail_unless_equals_int (g_hash_table_size (blocks), 2);
  g_hash_table_unref (blocks);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Live, paced on the harness's test clock: each burst waits for its last packet's due
 * time, and its PTS is its first packet's due time, exactly. */
GST_START_TEST (test_src_live_test_clock)
{
  GstHarness *h = src_harness ("rate", (guint64) 1000, "burst-packets", 10, "is-live", TRUE,
      "num-packets", (guint64) 50, NULL);
  GstTestClock *clock = gst_harness_get_testclock (h);
  Expect e;

  expect_init (&e, 1, 60, 60);
  gst_harness_play (h);

  for (guint k = 0; k < 5; k++) {
    GstClockID id;
    gst_test_clock_wait_for_next_pending_id (clock, &id);
    /* the last packet of burst k is packet 10 k + 9, due at (10 k + 9) ms */
    fail_unless_equals_uint64 (gst_clock_id_get_time (id), (10 * k + 9) * GST_MSECOND);
    gst_clock_id_unref (id);
    fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
    fail_unless (gst_harness_crank_single_clock_wait (h));
    GstBuffer *buf = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), GST_MSECOND * 10 * k);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (buf), 10 * GST_MSECOND);
    fail_unless_equals_int (check_burst (buf, &e), 10);
    gst_buffer_unref (buf);
  }
  GstBuffer *buf = NULL;
  fail_unless (gst_harness_pull_until_eos (h, &buf) && buf == NULL);

  /* a buffer stamped with its first packet's time leaves with its last packet */
  GstQuery *q = gst_query_new_latency ();
  GstPad *pad = gst_element_get_static_pad (h->element, "src");
  gboolean live;
  GstClockTime min, max;
  fail_unless (gst_pad_query (pad, q));
  gst_query_parse_latency (q, &live, &min, &max);
  fail_unless (live);
  fail_unless_equals_uint64 (min, 9 * GST_MSECOND);
  gst_query_unref (q);
  gst_object_unref (pad);
  gst_object_unref (clock);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Live: PLAYING -> PAUSED ends the wait for the next burst without losing a packet, and
 * back in PLAYING the bursts go on where they stopped, on the same schedule. */
GST_START_TEST (test_src_live_pause_resume)
{
  GstHarness *h = src_harness ("rate", (guint64) 1000, "burst-packets", 10, "is-live", TRUE, NULL);
  GstTestClock *clock = gst_harness_get_testclock (h);
  Expect e;

  expect_init (&e, 1, 60, 60);
  gst_harness_play (h);
  for (guint k = 0; k < 4; k++) {
    if (k == 2) {
      /* the source now waits for burst 2; pause in the middle of that wait */
      gst_test_clock_wait_for_next_pending_id (clock, NULL);
      fail_unless_equals_int (
          gst_element_set_state (h->element, GST_STATE_PAUSED), GST_STATE_CHANGE_NO_PREROLL);
      fail_unless_equals_int (gst_test_clock_peek_id_count (clock), 0);
      fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
      fail_unless_equals_int (
          gst_element_set_state (h->element, GST_STATE_PLAYING), GST_STATE_CHANGE_SUCCESS);
    }
    GstClockID id;
    gst_test_clock_wait_for_next_pending_id (clock, &id);
    fail_unless_equals_uint64 (gst_clock_id_get_time (id), (10 * k + 9) * GST_MSECOND);
    gst_clock_id_unref (id);
    fail_unless (gst_harness_crank_single_clock_wait (h));
    GstBuffer *buf = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), GST_MSECOND * 10 * k);
    fail_unless_equals_int (check_burst (buf, &e), 10);
    gst_buffer_unref (buf);
  }
  fail_unless_equals_uint64 (e.packets, 40);
  gst_object_unref (clock);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Live at 20000 packets/s on the system clock: PTS step by exactly the burst's share; after
 * 0.5 s, measured on the pipeline clock from the first burst's PTS, no burst has left before
 * its last packet was due, and the source is at most 0.2 s behind (a slow streaming thread on a
 * loaded machine; a source at half the rate is 0.25 s behind); then tear-down while the source
 * waits for the next burst's time. */
GST_START_TEST (test_src_rate_live)
{
  GstHarness *h = src_harness ("rate", (guint64) 20000, "burst-packets", 50, "is-live", TRUE, NULL);
  Expect e;

  gst_harness_use_systemclock (h);
  expect_init (&e, 1, 60, 60);
  gst_harness_play (h);
  GstBuffer *buf = gst_harness_pull (h);
  GstClockTime prev_pts = GST_BUFFER_PTS (buf);
  const GstClockTime pts0 = prev_pts;
  fail_unless (GST_CLOCK_TIME_IS_VALID (prev_pts));
  check_burst (buf, &e);
  gst_buffer_unref (buf);
  GstClock *clock = gst_element_get_clock (h->element);
  fail_unless (clock != NULL);
  const GstClockTime base = gst_element_get_base_time (h->element);

  g_usleep (G_USEC_PER_SEC / 2);
  const guint n = gst_harness_buffers_in_queue (h);
  const GstClockTime now = gst_clock_get_time (clock) - base; /* running time, after n */
  gst_object_unref (clock);
  const guint64 before = e.packets;
  for (guint i = 0; i < n; i++) {
    buf = gst_harness_pull (h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buf) - prev_pts, 50 * GST_SECOND / 20000);
    prev_pts = GST_BUFFER_PTS (buf);
    check_burst (buf, &e);
    gst_buffer_unref (buf);
  }
  /* packet k is due at pts0 + k / 20000 s: by `now`, packets 0 .. due - 1 were */
  fail_unless (now >= pts0);
  const guint64 due = gst_util_uint64_scale (now - pts0, 20000, GST_SECOND) + 1;
  GST_INFO ("%" G_GUINT64_FORMAT
            " packets pushed %.4f s after the first was due, %" G_GUINT64_FORMAT " due",
      e.packets, (now - pts0) / 1e9, due);
  fail_unless (now - pts0 >= GST_SECOND / 2, "slept %.4f s", (now - pts0) / 1e9);
  fail_unless (e.packets <= due,
      "%" G_GUINT64_FORMAT " packets pushed, only %" G_GUINT64_FORMAT " due", e.packets, due);
  fail_unless (e.packets + 4000 >= due,
      "%" G_GUINT64_FORMAT " packets pushed, %" G_GUINT64_FORMAT " due: more than 0.2 s behind",
      e.packets, due);
  fail_unless (e.packets > before);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Not live, a fixed count at 20000 packets/s: each burst leaves when its last packet is
 * due, on the monotonic clock, from the first burst (which is after the start), so the last
 * one (..9999) cannot arrive sooner than 9999 / 20000 s after the start; nor, at that rate,
 * much later than the first one (0.4 s of slack for a loaded machine; a source at half the
 * rate takes 1 s; start-up, slow under valgrind, is not counted); EOS follows; PTS count from
 * 0 by the burst's share of the rate. The bursts are checked only afterwards, so a slow check
 * (valgrind) does not distort the timing. */
GST_START_TEST (test_src_rate_count)
{
  GstHarness *h = src_harness (
      "rate", (guint64) 20000, "burst-packets", 64, "num-packets", (guint64) 10000, NULL);
  GPtrArray *bursts = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  GstBuffer *buf = NULL;
  gint64 t1 = 0, t_first = 0;
  Expect e;

  expect_init (&e, 1, 60, 60);
  const gint64 t0 = g_get_monotonic_time ();
  gst_harness_play (h);
  while (gst_harness_pull_until_eos (h, &buf) && buf != NULL) {
    t1 = g_get_monotonic_time ();
    if (bursts->len == 0)
      t_first = t1;
    g_ptr_array_add (bursts, buf);
  }
  fail_unless_equals_int (bursts->len, (10000 + 63) / 64);
  fail_unless (buf == NULL, "no EOS");

  for (guint i = 0; i < bursts->len; i++) {
    buf = g_ptr_array_index (bursts, i);
    const guint64 first_seq = e.next_seq;
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), first_seq * GST_SECOND / 20000);
    guint n = check_burst (buf, &e);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (buf),
        (first_seq + n) * GST_SECOND / 20000 - first_seq * GST_SECOND / 20000);
  }
  fail_unless_equals_uint64 (e.packets, 10000);
  g_ptr_array_unref (bursts);

  /* microseconds: t0 rounded down, t1 up to 1 us below the time it was read */
  const gint64 elapsed_us = t1 - t0, due_us = (gint64) 9999 * G_USEC_PER_SEC / 20000;
  GST_INFO (
      "start to the last burst at 20000/s: %.4f s, due after %.4f", elapsed_us / 1e6, due_us / 1e6);
  fail_unless (elapsed_us + 1 >= due_us,
      "the last burst arrived %.4f s after the start, "
      "before its last packet was due (%.4f s)",
      elapsed_us / 1e6, due_us / 1e6);
  fail_unless (t1 - t_first <= due_us + 400000,
      "the last burst arrived %.4f s after the "
      "first, due %.4f s after the first packet",
      (t1 - t_first) / 1e6, due_us / 1e6);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Starts @el and returns the text of the ERROR it posts (the start must fail). */
static gchar *
start_error (GstElement *el)
{
  GstBus *bus = gst_bus_new ();
  GError *err = NULL;
  gchar *text;

  gst_element_set_bus (el, bus);
  fail_unless_equals_int (gst_element_set_state (el, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no ERROR message");
  gst_message_parse_error (msg, &err, NULL);
  text = g_strdup (err->message);
  GST_INFO ("error: %s", text);
  g_error_free (err);
  gst_message_unref (msg);
  gst_element_set_state (el, GST_STATE_NULL);
  gst_element_set_bus (el, NULL);
  gst_object_unref (bus);
  return text;
}

static void
assert_contains (const gchar *text, const gchar *part)
{
  fail_unless (strstr (text, part) != NULL, "\"%s\" does not mention \"%s\"", text, part);
}

/* Starts @el, which must fail with an ERROR that mentions each of @mentions (up to a NULL),
 * and drops @el. */
static void
expect_start_error (GstElement *el, const gchar *const *mentions)
{
  gchar *text = start_error (el);
  for (; *mentions != NULL; mentions++)
    assert_contains (text, *mentions);
  g_free (text);
  gst_object_unref (el);
}

GST_START_TEST (test_src_bad_properties)
{
  static const struct {
    const gchar *prop;
    const gchar *value;
    const gchar *mentions[4];
  } bad_strings[] = {
    { "src-mac", "02:00:00:00:00", { "'src-mac'", "\"02:00:00:00:00\"", "02:00:00:00:00:01" } },
    { "dst-mac", "zz:00:00:00:00:01", { "'dst-mac'", "\"zz:00:00:00:00:01\"", ":" } },
    { "dst-mac", "02-00-00-00-00-01", { "'dst-mac'", "\"02-00-00-00-00-01\"", ":" } },
    { "src-mac", "02:00:00:00:00:011", { "'src-mac'", "\"02:00:00:00:00:011\"", "hex" } },
    { "src", "10.0.0.256", { "'src'", "\"10.0.0.256\"", "10.0.0.1" } },
    { "dst", "host.example", { "'dst'", "\"host.example\"", "IPv4" } },
  };

  for (guint i = 0; i < G_N_ELEMENTS (bad_strings); i++) {
    GstElement *el = gst_element_factory_make ("daqiritestsrc", NULL);
    g_object_set (el, bad_strings[i].prop, bad_strings[i].value, NULL);
    expect_start_error (el, bad_strings[i].mentions);
  }

  GstElement *el = gst_element_factory_make ("daqiritestsrc", NULL);
  g_object_set (el, "packet-size-min", 1000, "packet-size-max", 200, NULL);
  static const gchar *const sizes_mentions[] = { "'packet-size-min' (1000)",
    "'packet-size-max' (200)", NULL };
  expect_start_error (el, sizes_mentions);

  el = gst_element_factory_make ("daqiritestsrc", NULL);
  g_object_set (el, "dst-port", 65000, "n-flows", 1000, NULL);
  static const gchar *const ports_mentions[] = { "'dst-port' (65000)", "'n-flows' (1000)", "65999",
    "64536", NULL };
  expect_start_error (el, ports_mentions);

  /* the last port that fits is fine */
  el = gst_element_factory_make ("daqiritestsrc", NULL);
  g_object_set (el, "dst-port", 64536, "n-flows", 1000, NULL);
  fail_unless (gst_element_set_state (el, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (el, GST_STATE_NULL);
  gst_object_unref (el);
}

GST_END_TEST;

/* A whole pipeline to EOS, as gst-launch runs it. */
GST_START_TEST (test_src_pipeline)
{
  GError *err = NULL;
  GstElement *pipe =
      gst_parse_launch ("daqiritestsrc name=src num-packets=3000 "
                        "burst-packets=256 packet-size-min=60 packet-size-max=1024 n-flows=8 ! "
                        "fakesink sync=false",
          &err);
  fail_unless (pipe != NULL && err == NULL);
  GstBus *bus = gst_element_get_bus (pipe);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  GstMessage *msg =
      gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
  gst_message_unref (msg);
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipe), "src");
  guint64 bytes = 0;
  for (guint32 s = 0; s < 3000; s++)
    bytes += gst_daqiri_test_packet_size (60, 1024, s);
  assert_stats (src, 3000, bytes, (3000 + 255) / 256);
  gst_object_unref (src);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipe);
}

GST_END_TEST;

static Suite *
testsrc_suite (void)
{
  TCase *lib;
  Suite *s = dq_check_suite_new ("daqiritestsrc", "testpacket", 0, &lib);

  tcase_add_test (lib, test_params_defaults);
  tcase_add_test (lib, test_write_layout);
  tcase_add_test (lib, test_write_every_size);
  tcase_add_test (lib, test_write_bad_arguments);
  tcase_add_test (lib, test_udp_checksum_zero);
  tcase_add_test (lib, test_udp_checksum_off);
  tcase_add_test (lib, test_check_bit_flips);
  tcase_add_test (lib, test_check_fields);
  tcase_add_test (lib, test_check_truncated);
  tcase_add_test (lib, test_size_coverage);

  TCase *el = dq_check_add_tcase (s, "element", 0);
  tcase_add_test (el, test_src_defaults);
  tcase_add_test (el, test_src_flows_alias);
  tcase_add_test (el, test_src_count_and_eos);
  tcase_add_test (el, test_src_short_and_restart);
  tcase_add_test (el, test_src_addresses);
  tcase_add_test (el, test_src_sizes_cover_range);
  tcase_add_test (el, test_src_pool_reuse);
  tcase_add_test (el, test_src_live_test_clock);
  tcase_add_test (el, test_src_live_pause_resume);
  tcase_add_test (el, test_src_rate_live);
  tcase_add_test (el, test_src_rate_count);
  tcase_add_test (el, test_src_bad_properties);
  tcase_add_test (el, test_src_pipeline);
  return s;
}

GST_CHECK_MAIN (testsrc);
