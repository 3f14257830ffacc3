/* engine/dq-packet: headers byte for byte, and every checksum against the reference of
 * tests/common (RFC 1071 written from the RFC) and against known answers computed
 * elsewhere: a published IPv4 header, a frame checksummed with Python's struct module,
 * and the example of RFC 1624. */
#include <glib.h>
#include <string.h>

#include "dq-packet.h"
#include "dq-test-csum.h"

#define ETH 14
#define UDP (ETH + 20)

/* The IPv4 header of the Wikipedia article "Internet checksum" (and "IPv4 header
 * checksum"): 192.168.0.1 to 192.168.0.199, total length 0x73, checksum 0xb861. */
static const guint8 wikipedia_ipv4[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40,
  0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7 };

/* 02:00:00:00:00:01 to 02:00:00:00:00:02, 10.0.0.1:5000 to 10.0.0.2:6000, IPv4 id
 * 0x1234, UDP payload "daqiri\n" (7 bytes, an odd length); both checksums computed with
 * Python's struct module: IPv4 0x1494, UDP 0x6ea1. */
static const guint8 python_frame[49] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00,
  0x00, 0x01, 0x08, 0x00, 0x45, 0x00, 0x00, 0x23, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x94,
  0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0x13, 0x88, 0x17, 0x70, 0x00, 0x0f, 0x6e, 0xa1,
  0x64, 0x61, 0x71, 0x69, 0x72, 0x69, 0x0a };

static const DqPacketHeaders python_headers = {
  .dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
  .src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
  .src_ip = 0x0a000001,
  .dst_ip = 0x0a000002,
  .src_port = 5000,
  .dst_port = 6000,
  .ip_id = 0x1234,
};

static guint16
get16 (const guint8 *p)
{
  return (guint16) (p[0] << 8 | p[1]);
}

static void
set16 (guint8 *p, guint16 v)
{
  p[0] = (guint8) (v >> 8);
  p[1] = (guint8) v;
}

static void
fill_random (guint8 *p, gsize len)
{
  for (gsize i = 0; i < len; i++)
    p[i] = (guint8) g_test_rand_int_range (0, 256);
}

static void
random_headers (DqPacketHeaders *h)
{
  fill_random (h->dst_mac, 6);
  fill_random (h->src_mac, 6);
  h->src_ip = (guint32) g_test_rand_int ();
  h->dst_ip = (guint32) g_test_rand_int ();
  h->src_port = (guint16) g_test_rand_int_range (0, 65536);
  h->dst_port = (guint16) g_test_rand_int_range (0, 65536);
  h->ip_id = (guint16) g_test_rand_int_range (0, 65536);
}

/* Writes the UDP checksum of the frame's datagram with the module. */
static void
fill_udp_csum (guint8 *f)
{
  guint udp_len = get16 (f + UDP + 4);
  set16 (f + UDP + 6, 0);
  set16 (
      f + UDP + 6, dq_csum_udp_field (dq_csum_l4 (f + ETH, DQ_PACKET_PROTO_UDP, f + UDP, udp_len)));
}

/* ---- known answers ---- */

static void
test_ipv4_known_answer (void)
{
  guint8 ip[20];

  memset (ip, 0xee, sizeof ip);
  dq_packet_write_ipv4 (ip, 0x73, 0, DQ_PACKET_PROTO_UDP, 0xc0a80001, 0xc0a800c7);
  g_assert_cmpmem (ip, sizeof ip, wikipedia_ipv4, sizeof wikipedia_ipv4);
  g_assert_cmphex (dq_csum_ipv4 (wikipedia_ipv4), ==, 0xb861);
  g_assert_cmphex (dq_test_ipv4_csum (wikipedia_ipv4), ==, 0xb861);
  g_assert_true (dq_csum_ipv4_ok (wikipedia_ipv4));
  g_assert_cmphex (dq_test_rfc1071 (wikipedia_ipv4, 20), ==, 0);

  /* a changed byte no longer verifies, a rewritten checksum does again */
  ip[8] = 63;
  g_assert_false (dq_csum_ipv4_ok (ip));
  dq_packet_fill_ipv4_csum (ip);
  g_assert_true (dq_csum_ipv4_ok (ip));
  g_assert_cmphex (get16 (ip + 10), ==, dq_test_ipv4_csum (ip));
  g_assert_cmphex (get16 (ip + 10), ==, 0xb961);
}

static void
test_frame_known_answer (void)
{
  guint8 f[sizeof python_frame];

  memset (f, 0xee, sizeof f);
  g_assert_cmpint (dq_packet_write_headers (f, sizeof f, &python_headers), ==, 0);
  g_assert_cmphex (get16 (f + UDP + 6), ==, 0); /* no UDP checksum yet */
  memcpy (f + DQ_PACKET_PAYLOAD_OFFSET, "daqiri\n", 7);
  fill_udp_csum (f);
  g_assert_cmpmem (f, sizeof f, python_frame, sizeof python_frame);

  g_assert_cmphex (dq_csum_ipv4 (f + ETH), ==, 0x1494);
  /* over a segment that holds its right checksum the sum complements to 0 */
  g_assert_cmphex (dq_csum_l4 (f + ETH, DQ_PACKET_PROTO_UDP, f + UDP, 15), ==, 0);
  g_assert_true (dq_csum_l4_ok (f + ETH, DQ_PACKET_PROTO_UDP, f + UDP, 15));
  g_assert_cmphex (dq_test_ipv4_csum (f + ETH), ==, 0x1494);
  g_assert_cmphex (dq_test_l4_csum (f + ETH), ==, 0x6ea1);

  /* the last (odd) byte counts as a high byte: changing it by one changes the sum by
   * 0x100, and the frame no longer verifies */
  f[48]++;
  g_assert_false (dq_csum_l4_ok (f + ETH, DQ_PACKET_PROTO_UDP, f + UDP, 15));
  g_assert_cmphex (dq_test_l4_csum (f + ETH), ==, 0x6ea1 - 0x100);
  fill_udp_csum (f);
  g_assert_cmphex (get16 (f + UDP + 6), ==, 0x6ea1 - 0x100);
}

/* RFC 1624, section 4: HC 0xdd2f, a word 0x5555 becomes 0x3285, HC' is 0x0000 (eqn. 3;
 * eqn. 2 would give 0xffff) */
static void
test_rfc1624_example (void)
{
  g_assert_cmphex (dq_csum_update16 (0xdd2f, 0x5555, 0x3285), ==, 0x0000);
  g_assert_cmphex (dq_csum_update32 (0xdd2f, 0x12345555, 0x12343285), ==, 0x0000);
  g_assert_cmphex (dq_csum_update32 (0xdd2f, 0x55551234, 0x32851234), ==, 0x0000);
}

/* ---- headers ---- */

static void
test_headers_bytes (void)
{
  guint8 f[100];
  const DqPacketHeaders h = {
    .dst_mac = { 1, 2, 3, 4, 5, 6 },
    .src_mac = { 7, 8, 9, 10, 11, 12 },
    .src_ip = 0xc0a80102,
    .dst_ip = 0xe0000001,
    .src_port = 0xabcd,
    .dst_port = 0x0102,
    .ip_id = 0xbeef,
  };
  const guint8 want[42] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00, 0x45, 0x00, 0x00, 86,
    0xbe, 0xef, 0x40, 0x00, 64, 17, 0x00, 0x00, 192, 168, 1, 2, 224, 0, 0, 1, 0xab, 0xcd, 0x01,
    0x02, 0x00, 66, 0x00, 0x00 };

  memset (f, 0xee, sizeof f);
  g_assert_cmpint (dq_packet_write_headers (f, sizeof f, &h), ==, 0);
  g_assert_cmphex (get16 (f + ETH + 10), ==, dq_test_ipv4_csum (f + ETH));
  set16 (f + ETH + 10, 0);
  g_assert_cmpmem (f, 42, want, sizeof want);
  for (guint i = 42; i < sizeof f; i++)
    g_assert_cmphex (f[i], ==, 0xee); /* nothing written after the headers */

  /* the parts */
  guint8 part[20];
  memset (part, 0xee, sizeof part);
  dq_packet_write_eth (part, h.dst_mac, h.src_mac, 0x88b5);
  g_assert_cmpmem (part, 12, want, 12);
  g_assert_cmphex (get16 (part + 12), ==, 0x88b5);
  g_assert_cmphex (part[14], ==, 0xee);
  memset (part, 0xee, sizeof part);
  dq_packet_write_udp (part, 0xabcd, 0x0102, 66);
  g_assert_cmpmem (part, 8, want + UDP, 8);
  g_assert_cmphex (part[8], ==, 0xee);
  dq_packet_write_ipv4 (part, 86, 0xbeef, 17, 0xc0a80102, 0xe0000001);
  g_assert_true (dq_csum_ipv4_ok (part));
  set16 (part + 10, 0);
  g_assert_cmpmem (part, 20, want + ETH, 20);
}

static void
test_headers_lengths (void)
{
  static guint8 f[DQ_PACKET_MAX_LEN + 1];
  DqPacketHeaders h;

  random_headers (&h);
  /* out of range: nothing written */
  memset (f, 0xee, 64);
  g_assert_cmpint (dq_packet_write_headers (f, 41, &h), ==, -1);
  g_assert_cmpint (dq_packet_write_headers (f, 0, &h), ==, -1);
  g_assert_cmpint (dq_packet_write_headers (f, DQ_PACKET_MAX_LEN + 1, &h), ==, -1);
  for (guint i = 0; i < 64; i++)
    g_assert_cmphex (f[i], ==, 0xee);

  /* the shortest, the longest and sizes between: lengths and checksums */
  const gsize sizes[] = { 42, 43, 60, 61, 1514, 9000, 9001, 65534, DQ_PACKET_MAX_LEN };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++) {
    gsize len = sizes[i];
    g_assert_cmpint (dq_packet_write_headers (f, len, &h), ==, 0);
    g_assert_cmpuint (get16 (f + ETH + 2), ==, len - ETH);
    g_assert_cmpuint (get16 (f + UDP + 4), ==, len - UDP);
    g_assert_cmphex (get16 (f + ETH + 10), ==, dq_test_ipv4_csum (f + ETH));
    /* a payload of 0xff bytes: the largest sums the 64-bit accumulator sees */
    memset (f + DQ_PACKET_PAYLOAD_OFFSET, 0xff, len - DQ_PACKET_PAYLOAD_OFFSET);
    fill_udp_csum (f);
    g_assert_cmphex (get16 (f + UDP + 6), ==, dq_test_l4_csum (f + ETH));
    g_assert_true (dq_csum_l4_ok (f + ETH, DQ_PACKET_PROTO_UDP, f + UDP, len - UDP));
  }
}

/* ---- checksums against the reference ---- */

static void
test_random_frames (void)
{
  guint8 f[2100];

  for (guint n = 0; n < 2000; n++) {
    DqPacketHeaders h;
    gsize len = (gsize) g_test_rand_int_range (42, sizeof f + 1);
    random_headers (&h);
    g_assert_cmpint (dq_packet_write_headers (f, len, &h), ==, 0);
    fill_random (f + DQ_PACKET_PAYLOAD_OFFSET, len - DQ_PACKET_PAYLOAD_OFFSET);
    g_assert_cmphex (get16 (f + ETH + 10), ==, dq_test_ipv4_csum (f + ETH));
    g_assert_true (dq_csum_ipv4_ok (f + ETH));
    fill_udp_csum (f);
    g_assert_cmphex (get16 (f + UDP + 6), ==, dq_test_l4_csum (f + ETH));
    g_assert_true (dq_csum_l4_ok (f + ETH, DQ_PACKET_PROTO_UDP, f + UDP, len - UDP));

    /* the same bytes as TCP: the other checksum offset, the same arithmetic */
    if (len >= UDP + 20) {
      guint8 *ip = f + ETH;
      ip[9] = DQ_PACKET_PROTO_TCP;
      dq_packet_fill_ipv4_csum (ip);
      set16 (f + UDP + 16, 0);
      set16 (f + UDP + 16, dq_csum_l4 (ip, DQ_PACKET_PROTO_TCP, f + UDP, len - UDP));
      g_assert_cmphex (get16 (f + UDP + 16), ==, dq_test_l4_csum (ip));
      g_assert_true (dq_csum_l4_ok (ip, DQ_PACKET_PROTO_TCP, f + UDP, len - UDP));
    }

    /* one flipped bit anywhere in the datagram is caught */
    gsize at = (gsize) g_test_rand_int_range (UDP, len);
    f[at] ^= (guint8) (1 << g_test_rand_int_range (0, 8));
    g_assert_false (dq_csum_l4_ok (f + ETH, f[ETH + 9], f + UDP, len - UDP));
  }
}

/* Sums of parts that start at even offsets fold to the sum of the whole; odd lengths
 * pad with a zero low byte. */
static void
test_partial_sums (void)
{
  guint8 b[1001];

  for (guint n = 0; n < 500; n++) {
    gsize len = (gsize) g_test_rand_int_range (0, sizeof b + 1);
    fill_random (b, len);
    guint64 whole = dq_csum_add (0, b, len);
    g_assert_cmphex (dq_csum_finish (whole), ==, dq_test_rfc1071 (b, len));
    gsize cut = (gsize) g_test_rand_int_range (0, (gint) len / 2 + 1) * 2;
    guint64 parts = dq_csum_add (dq_csum_add (0, b, cut), b + cut, len - cut);
    g_assert_cmphex (dq_csum_fold (parts), ==, dq_csum_fold (whole));
    if (len >= 4)
      g_assert_cmphex (dq_csum_fold (dq_csum_add32 (dq_csum_add (0, b + 4, len - 4),
                           (guint32) b[0] << 24 | (guint32) b[1] << 16 | b[2] << 8 | b[3])),
          ==, dq_csum_fold (whole));
  }
  /* nothing sums to 0; the fold of a carry is one */
  g_assert_cmphex (dq_csum_finish (0), ==, 0xffff);
  g_assert_cmphex (dq_csum_fold (0x10000), ==, 1);
  g_assert_cmphex (dq_csum_fold (G_GUINT64_CONSTANT (0xffffffffffffffff)), ==, 0xffff);
}

/* A datagram whose checksum computes to 0 carries 0xffff, and verifies. */
static void
test_udp_zero_checksum (void)
{
  guint8 f[64];
  DqPacketHeaders h = python_headers;

  for (guint n = 0; n < 200; n++) {
    gsize len = (gsize) g_test_rand_int_range (46, sizeof f + 1);
    random_headers (&h);
    dq_packet_write_headers (f, len, &h);
    fill_random (f + DQ_PACKET_PAYLOAD_OFFSET, len - DQ_PACKET_PAYLOAD_OFFSET);
    /* choose the payload word at 42 so that the datagram sums to 0xffff */
    set16 (f + 42, 0);
    guint16 rest = dq_csum_fold (
        dq_csum_add (dq_csum_pseudo_ipv4 (f + ETH, 17, len - UDP), f + UDP, len - UDP));
    set16 (f + 42, (guint16) (0xffff - rest));
    g_assert_cmphex (dq_csum_l4 (f + ETH, 17, f + UDP, len - UDP), ==, 0);
    fill_udp_csum (f);
    g_assert_cmphex (get16 (f + UDP + 6), ==, 0xffff);
    g_assert_cmphex (dq_test_l4_csum (f + ETH), ==, 0xffff);
    g_assert_true (dq_csum_l4_ok (f + ETH, 17, f + UDP, len - UDP));
  }
  g_assert_cmphex (dq_csum_udp_field (0), ==, 0xffff);
  g_assert_cmphex (dq_csum_udp_field (1), ==, 1);
  g_assert_cmphex (dq_csum_udp_field (0xffff), ==, 0xffff);
}

/* ---- incremental update ---- */

/* Many random changes of the IPv4 total length, identification and addresses: each
 * incremental update equals the checksum recomputed from scratch. */
static void
test_incremental_ipv4 (void)
{
  guint8 ip[20];
  DqPacketHeaders h;

  random_headers (&h);
  dq_packet_write_ipv4 (ip, 60, h.ip_id, 17, h.src_ip, h.dst_ip);
  for (guint n = 0; n < 20000; n++) {
    guint16 csum = get16 (ip + 10);
    guint field = (guint) g_test_rand_int_range (0, 4);
    if (field < 2) {
      /* total length or identification (16 bits) */
      guint8 *p = ip + (field == 0 ? 2 : 4);
      guint16 old = get16 (p), now = (guint16) g_test_rand_int_range (0, 65536);
      set16 (p, now);
      csum = dq_csum_update16 (csum, old, now);
    } else {
      /* source or destination address (32 bits) */
      guint8 *p = ip + (field == 2 ? 12 : 16);
      guint32 old = (guint32) get16 (p) << 16 | get16 (p + 2);
      guint32 now = (guint32) g_test_rand_int ();
      set16 (p, (guint16) (now >> 16));
      set16 (p + 2, (guint16) now);
      csum = dq_csum_update32 (csum, old, now);
    }
    g_assert_cmphex (csum, ==, dq_test_ipv4_csum (ip));
    g_assert_cmphex (csum, ==, dq_csum_ipv4 (ip));
    set16 (ip + 10, csum);
  }
}

/* A UDP datagram whose sequence number (32 bits at the payload's start) and length
 * change. The length grows or shrinks over zeros after the data, so that only the length
 * fields change: the pseudo header's and the UDP header's, two updates. Every update,
 * mapped with the 0 -> 0xffff rule, equals the full recomputation, the datagrams whose
 * checksum computes to 0 included. */
static void
test_incremental_udp (void)
{
  guint8 f[300];
  const guint data_end = 201; /* random bytes before, zeros from here */
  guint8 *seq = f + DQ_PACKET_PAYLOAD_OFFSET;
  DqPacketHeaders h;
  guint zeros = 0;

  random_headers (&h);
  memset (f, 0, sizeof f);
  dq_packet_write_headers (f, data_end, &h);
  fill_random (seq, data_end - DQ_PACKET_PAYLOAD_OFFSET);
  fill_udp_csum (f);
  for (guint n = 0; n < 20000; n++) {
    guint16 csum = get16 (f + UDP + 6);
    if (n % 4 == 3) {
      guint16 old_len = get16 (f + UDP + 4);
      guint16 new_len = (guint16) g_test_rand_int_range (data_end - UDP, sizeof f - UDP + 1);
      set16 (f + UDP + 4, new_len);
      set16 (f + ETH + 2, new_len + 20);
      csum = dq_csum_update16 (dq_csum_update16 (csum, old_len, new_len), old_len, new_len);
    } else {
      guint32 old = (guint32) get16 (seq) << 16 | get16 (seq + 2);
      guint32 now = (guint32) g_test_rand_int ();
      if (n % 3 == 2) {
        /* make this one compute to 0: the sequence number's low word takes what the
         * rest of the datagram leaves to 0xffff */
        guint16 udp_len = get16 (f + UDP + 4);
        set16 (seq, (guint16) (now >> 16));
        set16 (seq + 2, 0);
        set16 (f + UDP + 6, 0);
        guint16 rest = dq_csum_fold (
            dq_csum_add (dq_csum_pseudo_ipv4 (f + ETH, 17, udp_len), f + UDP, udp_len));
        now = (now & 0xffff0000u) | (guint16) (0xffff - rest);
      }
      set16 (seq, (guint16) (now >> 16));
      set16 (seq + 2, (guint16) now);
      csum = dq_csum_update32 (csum, old, now);
    }
    csum = dq_csum_udp_field (csum);
    set16 (f + UDP + 6, csum);
    g_assert_cmphex (csum, ==, dq_test_l4_csum (f + ETH));
    g_assert_true (dq_csum_l4_ok (f + ETH, 17, f + UDP, get16 (f + UDP + 4)));
    zeros += csum == 0xffff;
  }
  /* the datagrams made to compute to 0 were there */
  g_assert_cmpuint (zeros, >=, 4000);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/packet/ipv4-known-answer", test_ipv4_known_answer);
  g_test_add_func ("/packet/frame-known-answer", test_frame_known_answer);
  g_test_add_func ("/packet/rfc1624-example", test_rfc1624_example);
  g_test_add_func ("/packet/headers-bytes", test_headers_bytes);
  g_test_add_func ("/packet/headers-lengths", test_headers_lengths);
  g_test_add_func ("/packet/random-frames", test_random_frames);
  g_test_add_func ("/packet/partial-sums", test_partial_sums);
  g_test_add_func ("/packet/udp-zero-checksum", test_udp_zero_checksum);
  g_test_add_func ("/packet/incremental-ipv4", test_incremental_ipv4);
  g_test_add_func ("/packet/incremental-udp", test_incremental_udp);
  return g_test_run ();
}
