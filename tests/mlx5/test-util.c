/* Helpers of the mlx5 tests (see test-util.h). */
#include "test-util.h"

#include <string.h>

static const guint8 dst_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const guint8 src_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

guint8
tu_payload_byte (guint32 seq, guint i)
{
  return (guint8) (seq * 31 + i * 7 + (seq >> 8));
}

static void
put16 (guint8 * p, guint v)
{
  p[0] = (guint8) (v >> 8);
  p[1] = (guint8) v;
}

static void
put32 (guint8 * p, guint32 v)
{
  put16 (p, v >> 16);
  put16 (p + 2, v & 0xffff);
}

static guint
get16 (const guint8 * p)
{
  return ((guint) p[0] << 8) | p[1];
}

static guint
l4_header_len (guint8 proto)
{
  return proto == TU_PROTO_TCP ? 20 : 8;
}

static guint
seq_offset (const TuFrameSpec * spec)
{
  if (spec->proto == 0)
    return 14;
  return 14 + 20 + spec->ip_options * 4 + l4_header_len (spec->proto);
}

/* RFC 1071: add 16-bit words in a 32-bit accumulator, fold the carries, complement */
static guint16
rfc1071 (const guint8 * a, guint alen, const guint8 * b, guint blen)
{
  guint32 acc = 0;
  for (guint i = 0; i < alen; i += 2)
    acc += (guint32) (a[i] << 8) + (i + 1 < alen ? a[i + 1] : 0);
  for (guint i = 0; i < blen; i += 2)
    acc += (guint32) (b[i] << 8) + (i + 1 < blen ? b[i + 1] : 0);
  while (acc > 0xffff)
    acc = (acc >> 16) + (acc & 0xffff);
  return (guint16) ~acc;
}

guint
tu_ipv4_csum_offset (const guint8 * frame)
{
  return get16 (frame + 12) == 0x0800 ? 14 + 10 : 0;
}

guint
tu_l4_csum_offset (const guint8 * frame)
{
  if (get16 (frame + 12) != 0x0800)
    return 0;
  guint l4 = 14 + (frame[14] & 0xf) * 4;
  if (frame[23] == TU_PROTO_UDP)
    return l4 + 6;
  if (frame[23] == TU_PROTO_TCP)
    return l4 + 16;
  return 0;
}

guint16
tu_ipv4_csum (const guint8 * frame)
{
  guint8 hdr[60];
  guint ihl = (frame[14] & 0xf) * 4;
  memcpy (hdr, frame + 14, ihl);
  hdr[10] = hdr[11] = 0;
  return rfc1071 (hdr, ihl, NULL, 0);
}

guint16
tu_l4_csum (const guint8 * frame)
{
  guint off = tu_l4_csum_offset (frame);
  if (off == 0)
    return 0;
  guint ihl = (frame[14] & 0xf) * 4;
  guint l4 = 14 + ihl;
  guint l4_len = get16 (frame + 16) - ihl;
  guint8 pseudo[12];
  memcpy (pseudo, frame + 26, 8);       /* source and destination address */
  pseudo[8] = 0;
  pseudo[9] = frame[23];
  put16 (pseudo + 10, l4_len);
  guint8 *seg = g_memdup2 (frame + l4, l4_len);
  seg[off - l4] = seg[off - l4 + 1] = 0;
  guint16 c = rfc1071 (pseudo, sizeof pseudo, seg, l4_len);
  g_free (seg);
  if (c == 0 && frame[23] == TU_PROTO_UDP)
    c = 0xffff;
  return c;
}

void
tu_frame_build (guint8 * f, const TuFrameSpec * spec, guint32 seq)
{
  guint len = spec->len;
  guint at = seq_offset (spec);

  memcpy (f, dst_mac, 6);
  memcpy (f + 6, src_mac, 6);
  if (spec->proto == 0) {
    put16 (f + 12, 0x88b5);
  } else {
    put16 (f + 12, 0x0800);
    guint ihl = 20 + spec->ip_options * 4;
    guint8 *ip = f + 14;
    ip[0] = (guint8) (0x40 | (ihl / 4));
    ip[1] = 0;
    put16 (ip + 2, len - 14);
    put16 (ip + 4, seq & 0xffff);
    put16 (ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = spec->proto;
    put16 (ip + 10, spec->good_csums ? 0 : 0xdead);
    put32 (ip + 12, spec->src);
    put32 (ip + 16, spec->dst);
    for (guint i = 20; i < ihl; i++)
      ip[i] = (guint8) (i == 20 ? 1 : 1);       /* NOP options */
    guint8 *l4 = ip + ihl;
    put16 (l4, spec->sport);
    put16 (l4 + 2, spec->dport);
    if (spec->proto == TU_PROTO_UDP) {
      put16 (l4 + 4, len - 14 - ihl);
      put16 (l4 + 6, spec->good_csums ? 0 : 0xbeef);
    } else if (spec->proto == TU_PROTO_TCP) {
      put32 (l4 + 4, seq);
      put32 (l4 + 8, 0);
      l4[12] = 5 << 4;
      l4[13] = 0x18;
      put16 (l4 + 14, 1024);
      put16 (l4 + 16, spec->good_csums ? 0 : 0x1234);
      put16 (l4 + 18, 0);
    } else {
      /* ICMP or other: 8 bytes of header, nothing the device checks */
      memset (l4 + 4, 0, 4);
    }
  }
  put32 (f + at, seq);
  for (guint i = at + 4; i < len; i++)
    f[i] = tu_payload_byte (seq, i);
  if (spec->proto != 0 && spec->good_csums) {
    guint off = tu_l4_csum_offset (f);
    if (off != 0)
      put16 (f + off, tu_l4_csum (f));
    put16 (f + 24, tu_ipv4_csum (f));
  }
}

guint32
tu_frame_seq (const guint8 * f, guint len)
{
  guint at = get16 (f + 12) == 0x0800 ? 14 + (f[14] & 0xf) * 4 + (f[23] == TU_PROTO_TCP ?
      20 : 8) : 14;
  if (len < at + 4)
    return G_MAXUINT32;
  return ((guint32) f[at] << 24) | ((guint32) f[at + 1] << 16) | ((guint32) f[at + 2] << 8)
      | f[at + 3];
}

gboolean
tu_frame_check (const guint8 * f, guint len, const TuFrameSpec * spec, guint32 seq,
    char **why)
{
  guint8 *expect = g_malloc (spec->len);
  gboolean ok = TRUE;

  tu_frame_build (expect, spec, seq);
  if (len != spec->len) {
    *why = g_strdup_printf ("seq %u: length %u, expected %u", seq, len, spec->len);
    g_free (expect);
    return FALSE;
  }
  guint skip1 = spec->proto ? tu_ipv4_csum_offset (expect) : 0;
  guint skip2 = spec->proto ? tu_l4_csum_offset (expect) : 0;
  for (guint i = 0; i < len && ok; i++) {
    if ((skip1 && (i == skip1 || i == skip1 + 1)) || (skip2 && (i == skip2 ||
                i == skip2 + 1)))
      continue;
    if (f[i] != expect[i]) {
      *why = g_strdup_printf ("seq %u: byte %u is %02x, expected %02x", seq, i, f[i],
          expect[i]);
      ok = FALSE;
    }
  }
  g_free (expect);
  return ok;
}

guint64
tu_wire_ticks (const guint * lens, guint k, guint overhead, guint64 freq_hz,
    guint64 rate_bps)
{
  __extension__ unsigned __int128 bits = 0;
  for (guint j = 0; j < k; j++)
    bits += 8 * (unsigned __int128) (MAX (lens[j], 60u) + overhead);
  return (guint64) (bits * freq_hz / rate_bps);
}
