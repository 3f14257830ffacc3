/* The daqiri test packet: writing, sizing and checking (format in daqiritestpacket.h).
 *
 * Writing is on the generator's hot path, so it never walks the payload twice. The
 * pattern byte j is (c + 7 j) mod 256 with c = seq * 31 + flow; 7 is invertible mod 256
 * (7 * 183 = 1281 = 5 * 256 + 1), so that byte is 7 (j + 183 c) mod 256: the same
 * 256-byte sequence 7 i mod 256, entered at phase 183 c. The payload is copied from one
 * table of that sequence, and its ones' complement sum, which the UDP checksum needs, is
 * read off prefix sums of the same table: whole periods plus one partial run.
 *
 * Checking is the independent second opinion: it computes every expected byte from the
 * formula and every checksum by summing the frame's words, sharing no table with the
 * writer (the checksums come from dq-packet.h, summed over the frame). */
#include "daqiritestpacket.h"

#include <gst/gst.h>
#include <string.h>

#include "dq-packet.h"

#define IPV4_OFFSET DQ_PACKET_IPV4_OFFSET
#define UDP_OFFSET DQ_PACKET_UDP_OFFSET
#define PAYLOAD_OFFSET GST_DAQIRI_TEST_PACKET_PAYLOAD_OFFSET
#define PATTERN_OFFSET GST_DAQIRI_TEST_PACKET_PATTERN_OFFSET
#define PATTERN_PERIOD 256
/* the inverse of 7 mod 256 */
#define PATTERN_STEP_INVERSE 183

G_STATIC_ASSERT (PAYLOAD_OFFSET == DQ_PACKET_PAYLOAD_OFFSET);
G_STATIC_ASSERT (GST_DAQIRI_TEST_PACKET_MAX_SIZE == DQ_PACKET_MAX_LEN);
G_STATIC_ASSERT (PATTERN_OFFSET == PAYLOAD_OFFSET + 8);
G_STATIC_ASSERT ((7 * PATTERN_STEP_INVERSE) % 256 == 1);

/* pattern[i] = 7 i mod 256 over two periods and two bytes, so that a run of up to one
 * period and a word pair can start at any phase without wrapping */
static guint8 pattern[2 * PATTERN_PERIOD + 2];
/* word_sum[p][t]: sum of the t big-endian words pattern[2i + p] << 8 | pattern[2i + p + 1],
 * i < t: the partial sums for runs that start at an even (p = 0) or odd (p = 1) phase */
static guint32 word_sum[2][PATTERN_PERIOD + 1];

static void
init_pattern_tables (void)
{
  static gsize done;

  if (!g_once_init_enter (&done))
    return;
  for (guint i = 0; i < G_N_ELEMENTS (pattern); i++)
    pattern[i] = (guint8) ((7 * i) & 0xff);
  for (guint p = 0; p < 2; p++) {
    word_sum[p][0] = 0;
    for (guint t = 0; t < PATTERN_PERIOD; t++)
      word_sum[p][t + 1] =
          word_sum[p][t] + ((guint32) pattern[2 * t + p] << 8 | pattern[2 * t + p + 1]);
  }
  g_once_init_leave (&done, 1);
}

/* ones' complement sum of @n bytes of the pattern starting at @phase, as big-endian words
 * (an odd last byte is the high byte of a word padded with zero) */
static guint64
pattern_sum (guint phase, guint n)
{
  const guint p = phase & 1;
  const guint first = phase >> 1;
  guint64 sum = (guint64) (n / PATTERN_PERIOD) * (word_sum[p][PATTERN_PERIOD / 2] - word_sum[p][0]);
  guint rem = n % PATTERN_PERIOD;

  sum += word_sum[p][first + rem / 2] - word_sum[p][first];
  if (rem & 1)
    sum += (guint32) pattern[phase + rem - 1] << 8;
  return sum;
}

/* Copies @n < 256 bytes in 16-, 8- or 4-byte moves, the last one overlapping the one
 * before; a variable-length memcpy() of a few bytes is several times slower. */
static inline void
copy_short (guint8 *dst, const guint8 *src, guint n)
{
  if (n >= 16) {
    guint8 *const last = dst + n - 16;
    while (dst < last) {
      memcpy (dst, src, 16);
      dst += 16;
      src += 16;
    }
    memcpy (last, src - (dst - last), 16);
  } else if (n >= 8) {
    memcpy (dst, src, 8);
    memcpy (dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    memcpy (dst, src, 4);
    memcpy (dst + n - 4, src + n - 4, 4);
  } else {
    for (guint i = 0; i < n; i++)
      dst[i] = src[i];
  }
}

static void
pattern_fill (guint8 *dst, guint phase, guint n)
{
  while (n >= PATTERN_PERIOD) {
    memcpy (dst, pattern + phase, PATTERN_PERIOD);
    dst += PATTERN_PERIOD;
    n -= PATTERN_PERIOD;
  }
  copy_short (dst, pattern + phase, n);
}

void
gst_daqiri_test_packet_params_init (GstDaqiriTestPacketParams *params)
{
  static const guint8 src_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
  static const guint8 dst_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

  g_return_if_fail (params != NULL);

  memset (params, 0, sizeof *params);
  memcpy (params->src_mac, src_mac, 6);
  memcpy (params->dst_mac, dst_mac, 6);
  params->src_ip = 0x0a000001;
  params->dst_ip = 0x0a000002;
  params->src_port = 5000;
  params->dst_port = 6000;
  params->udp_checksum = TRUE;
}

guint
gst_daqiri_test_packet_write (const GstDaqiriTestPacketParams *params, guint8 *frame,
    guint frame_len, guint32 seq, guint32 flow)
{
  g_return_val_if_fail (params != NULL, 0);
  g_return_val_if_fail (frame != NULL, 0);

  if (frame_len < GST_DAQIRI_TEST_PACKET_MIN_SIZE || frame_len > GST_DAQIRI_TEST_PACKET_MAX_SIZE)
    return 0;
  if ((guint64) params->dst_port + flow > G_MAXUINT16)
    return 0;
  init_pattern_tables ();

  const guint udp_len = frame_len - UDP_OFFSET;
  const guint n_pattern = frame_len - PATTERN_OFFSET;
  DqPacketHeaders headers = {
    .src_ip = params->src_ip,
    .dst_ip = params->dst_ip,
    .src_port = params->src_port,
    .dst_port = (guint16) (params->dst_port + flow),
  };
  memcpy (headers.dst_mac, params->dst_mac, 6);
  memcpy (headers.src_mac, params->src_mac, 6);
  dq_packet_write_headers (frame, frame_len, &headers);

  /* payload */
  guint8 *payload = frame + PAYLOAD_OFFSET;
  GST_WRITE_UINT32_BE (payload, seq);
  GST_WRITE_UINT32_BE (payload + 4, flow);
  /* pattern byte 8 is pattern[(8 + 183 c) mod 256], see the top of the file */
  const guint c = (seq * 31u + flow) & 0xff;
  const guint phase = (8 + PATTERN_STEP_INVERSE * c) & 0xff;
  pattern_fill (frame + PATTERN_OFFSET, phase, n_pattern);

  /* the UDP checksum covers the pseudo-header, the UDP header (its checksum field still
   * 0), the sequence number and flow index, and the pattern, whose sum comes from the
   * tables */
  if (params->udp_checksum) {
    const guint8 *ip = frame + IPV4_OFFSET;
    guint8 *udp = frame + UDP_OFFSET;
    guint64 sum = dq_csum_pseudo_ipv4 (ip, DQ_PACKET_PROTO_UDP, udp_len);
    sum = dq_csum_add (sum, udp, PATTERN_OFFSET - UDP_OFFSET);
    sum += pattern_sum (phase, n_pattern);
    GST_WRITE_UINT16_BE (udp + DQ_PACKET_UDP_CSUM_OFFSET, dq_csum_udp_field (dq_csum_finish (sum)));
  }
  return frame_len;
}

/* A bijection of [0, mask]: multiply by odd constants and xor-shift, both invertible
 * modulo a power of two. */
static inline guint64
scramble (guint64 x, guint64 mask, guint shift, guint64 key)
{
  x = (x * 0x2545f491u + key) & mask;
  x ^= x >> shift;
  x = (x * 0x9e3779b1u) & mask;
  x ^= x >> shift;
  return x;
}

guint
gst_daqiri_test_packet_size (guint min_size, guint max_size, guint32 seq)
{
  if (max_size <= min_size)
    return min_size;

  const guint64 n = (guint64) max_size - min_size + 1;
  const guint bits = g_bit_storage (n - 1);
  const guint64 mask = (G_GUINT64_CONSTANT (1) << bits) - 1;
  const guint shift = (bits + 1) / 2;
  const guint64 key = (seq / n) * G_GUINT64_CONSTANT (0x9e3779b97f4a7c15);

  /* cycle-walking: apply the bijection of [0, 2^bits) until the value falls inside
   * [0, n); that restricts it to a bijection of [0, n), and since 2^bits < 2 n it takes
   * under two steps on average */
  guint64 x = seq % n;
  do {
    x = scramble (x, mask, shift, key);
  } while (x >= n);
  return (guint) (min_size + x);
}

static const gchar *
check_frame (const GstDaqiriTestPacketParams *params, const guint8 *frame, gsize len,
    guint32 *seq_out, guint32 *flow_out)
{
  if (frame == NULL)
    return "no frame";
  if (len < GST_DAQIRI_TEST_PACKET_MIN_SIZE)
    return "frame shorter than 60 bytes";
  if (len > GST_DAQIRI_TEST_PACKET_MAX_SIZE)
    return "frame longer than 65549 bytes";

  if (GST_READ_UINT16_BE (frame + 12) != DQ_PACKET_ETHERTYPE_IPV4)
    return "ethertype is not IPv4";

  const guint8 *ip = frame + IPV4_OFFSET;
  if (ip[0] != 0x45)
    return "IPv4 version/header length is not 4/20 bytes";
  if (ip[1] != 0)
    return "IPv4 DSCP/ECN is not 0";
  if (GST_READ_UINT16_BE (ip + 2) != len - IPV4_OFFSET)
    return "IPv4 total length does not match the frame length";
  if (GST_READ_UINT16_BE (ip + 4) != 0)
    return "IPv4 identification is not 0";
  if (GST_READ_UINT16_BE (ip + 6) != DQ_PACKET_IPV4_FLAG_DF)
    return "IPv4 flags/fragment offset are not DF/0";
  if (ip[8] != DQ_PACKET_IPV4_TTL)
    return "IPv4 TTL is not 64";
  if (ip[9] != DQ_PACKET_PROTO_UDP)
    return "IPv4 protocol is not UDP";
  if (!dq_csum_ipv4_ok (ip))
    return "IPv4 header checksum is wrong";

  const guint8 *udp = frame + UDP_OFFSET;
  const guint udp_len = GST_READ_UINT16_BE (udp + 4);
  if (udp_len != len - UDP_OFFSET)
    return "UDP length does not match the frame length";

  const guint8 *payload = frame + PAYLOAD_OFFSET;
  const guint32 seq = GST_READ_UINT32_BE (payload);
  const guint32 flow = GST_READ_UINT32_BE (payload + 4);

  if (params != NULL) {
    if (memcmp (frame, params->dst_mac, 6) != 0)
      return "Ethernet destination MAC differs from the parameters";
    if (memcmp (frame + 6, params->src_mac, 6) != 0)
      return "Ethernet source MAC differs from the parameters";
    if (GST_READ_UINT32_BE (ip + 12) != params->src_ip)
      return "IPv4 source address differs from the parameters";
    if (GST_READ_UINT32_BE (ip + 16) != params->dst_ip)
      return "IPv4 destination address differs from the parameters";
    if (GST_READ_UINT16_BE (udp) != params->src_port)
      return "UDP source port differs from the parameters";
    if ((guint64) params->dst_port + flow != GST_READ_UINT16_BE (udp + 2))
      return "UDP destination port is not the parameters' port plus the flow index";
  }

  const guint16 csum = GST_READ_UINT16_BE (udp + 6);
  if (params != NULL && (csum != 0) != (params->udp_checksum != FALSE))
    return params->udp_checksum ? "UDP checksum is missing"
                                : "UDP checksum is present but the parameters say none";
  if (csum != 0) {
    if (!dq_csum_l4_ok (ip, DQ_PACKET_PROTO_UDP, udp, udp_len))
      return "UDP checksum is wrong";
  }

  /* every pattern byte; the differences are OR-ed rather than tested one by one so the
   * loop stays branch-free */
  guint8 expected = GST_DAQIRI_TEST_PACKET_BYTE (seq, flow, 8);
  guint8 diff = 0;
  for (gsize i = PATTERN_OFFSET; i < len; i++) {
    diff |= frame[i] ^ expected;
    expected = (guint8) (expected + 7);
  }
  if (diff != 0)
    return "payload pattern is wrong";

  if (seq_out != NULL)
    *seq_out = seq;
  if (flow_out != NULL)
    *flow_out = flow;
  return NULL;
}

gboolean
gst_daqiri_test_packet_check (const GstDaqiriTestPacketParams *params, const guint8 *frame,
    gsize len, guint32 *seq, guint32 *flow)
{
  return check_frame (params, frame, len, seq, flow) == NULL;
}

const gchar *
gst_daqiri_test_packet_explain (
    const GstDaqiriTestPacketParams *params, const guint8 *frame, gsize len)
{
  return check_frame (params, frame, len, NULL, NULL);
}
