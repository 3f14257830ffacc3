/* Helpers of the mlx5 tests (see test-util.h). */
#include "test-util.h"

#include <string.h>
#include <sys/mman.h>

#include "dq-packet.h"
#include "dq-test-csum.h"

static const guint8 dst_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const guint8 src_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

guint8
tu_payload_byte (guint32 seq, guint i)
{
  return (guint8) (seq * 31 + i * 7 + (seq >> 8));
}

static guint
l4_header_len (guint8 proto)
{
  return proto == TU_PROTO_TCP ? 20 : 8;
}

static guint
seq_offset (const TuFrameSpec *spec)
{
  if (spec->proto == 0)
    return 14;
  return 14 + 20 + spec->ip_options * 4 + l4_header_len (spec->proto);
}

guint
tu_ipv4_csum_offset (const guint8 *frame)
{
  return dq_packet_get16 (frame + 12) == 0x0800 ? 14 + 10 : 0;
}

guint
tu_l4_csum_offset (const guint8 *frame)
{
  if (dq_packet_get16 (frame + 12) != 0x0800)
    return 0;
  guint l4 = 14 + (frame[14] & 0xf) * 4;
  if (frame[23] == TU_PROTO_UDP)
    return l4 + 6;
  if (frame[23] == TU_PROTO_TCP)
    return l4 + 16;
  return 0;
}

guint16
tu_ipv4_csum (const guint8 *frame)
{
  return dq_test_ipv4_csum (frame + 14);
}

guint16
tu_l4_csum (const guint8 *frame)
{
  return tu_l4_csum_offset (frame) != 0 ? dq_test_l4_csum (frame + 14) : 0;
}

void
tu_frame_build (guint8 *f, const TuFrameSpec *spec, guint32 seq)
{
  guint len = spec->len;
  guint at = seq_offset (spec);

  if (spec->proto == 0) {
    dq_packet_write_eth (f, dst_mac, src_mac, 0x88b5);
  } else {
    dq_packet_write_eth (f, dst_mac, src_mac, DQ_PACKET_ETHERTYPE_IPV4);
    guint ihl = 20 + spec->ip_options * 4;
    guint8 *ip = f + 14;
    dq_packet_write_ipv4 (
        ip, (guint16) (len - 14), (guint16) seq, spec->proto, spec->src, spec->dst);
    ip[0] = (guint8) (0x40 | (ihl / 4));
    dq_packet_put16 (ip + 10, spec->good_csums ? 0 : 0xdead);
    memset (ip + 20, 1, ihl - 20); /* NOP options */
    guint8 *l4 = ip + ihl;
    if (spec->proto == TU_PROTO_UDP) {
      dq_packet_write_udp (l4, spec->sport, spec->dport, (guint16) (len - 14 - ihl));
      dq_packet_put16 (l4 + 6, spec->good_csums ? 0 : 0xbeef);
    } else if (spec->proto == TU_PROTO_TCP) {
      dq_packet_put16 (l4, spec->sport);
      dq_packet_put16 (l4 + 2, spec->dport);
      dq_packet_put32 (l4 + 4, seq);
      dq_packet_put32 (l4 + 8, 0);
      l4[12] = 5 << 4;
      l4[13] = 0x18;
      dq_packet_put16 (l4 + 14, 1024);
      dq_packet_put16 (l4 + 16, spec->good_csums ? 0 : 0x1234);
      dq_packet_put16 (l4 + 18, 0);
    } else {
      /* ICMP or other: 8 bytes of header, nothing the device checks */
      dq_packet_put16 (l4, spec->sport);
      dq_packet_put16 (l4 + 2, spec->dport);
      memset (l4 + 4, 0, 4);
    }
  }
  dq_packet_put32 (f + at, seq);
  for (guint i = at + 4; i < len; i++)
    f[i] = tu_payload_byte (seq, i);
  if (spec->proto != 0 && spec->good_csums) {
    guint off = tu_l4_csum_offset (f);
    if (off != 0)
      dq_packet_put16 (f + off, tu_l4_csum (f));
    dq_packet_put16 (f + 24, tu_ipv4_csum (f));
  }
}

guint32
tu_frame_seq (const guint8 *f, guint len)
{
  guint at = dq_packet_get16 (f + 12) == 0x0800
      ? 14 + (f[14] & 0xf) * 4 + (f[23] == TU_PROTO_TCP ? 20 : 8)
      : 14;
  if (len < at + 4)
    return G_MAXUINT32;
  return ((guint32) f[at] << 24) | ((guint32) f[at + 1] << 16) | ((guint32) f[at + 2] << 8) |
      f[at + 3];
}

gboolean
tu_frame_check (const guint8 *f, guint len, const TuFrameSpec *spec, guint32 seq, char **why)
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
    if ((skip1 && (i == skip1 || i == skip1 + 1)) || (skip2 && (i == skip2 || i == skip2 + 1)))
      continue;
    if (f[i] != expect[i]) {
      *why = g_strdup_printf ("seq %u: byte %u is %02x, expected %02x", seq, i, f[i], expect[i]);
      ok = FALSE;
    }
  }
  g_free (expect);
  return ok;
}

guint64
tu_wire_ticks (const guint *lens, guint k, guint overhead, guint64 freq_hz, guint64 rate_bps)
{
  __extension__ unsigned __int128 bits = 0;
  for (guint j = 0; j < k; j++)
    bits += 8 * (unsigned __int128) (MAX (lens[j], 60u) + overhead);
  return (guint64) (bits * freq_hz / rate_bps);
}

/* ---- GPU device memory played on the CPU ---- */

static gpointer
device_alloc (gsize size, gpointer user)
{
  TuDeviceMem *d = user;
  d->mem = mmap (NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  g_assert_true (d->mem != MAP_FAILED);
  d->backing = g_malloc0 (size);
  d->size = size;
  return d->mem;
}

static void
device_free (gpointer mem, gsize size, gpointer user)
{
  TuDeviceMem *d = user;
  g_assert_true (mem == d->mem && size == d->size);
  munmap (d->mem, size);
  g_free (d->backing);
  d->mem = d->backing = NULL;
}

static gboolean
device_write (gpointer dst, gconstpointer src, gsize n, gpointer user)
{
  TuDeviceMem *d = user;
  guint8 *to = dst;
  g_assert_true (to >= d->mem && n <= d->size && (gsize) (to - d->mem) <= d->size - n);
  if (d->failing_writes > 0) {
    d->failing_writes--;
    return FALSE;
  }
  memcpy (d->backing + (to - d->mem), src, n);
  d->writes++;
  d->bytes += n;
  return TRUE;
}

static gboolean
device_read (gpointer dst, gconstpointer src, gsize n, gpointer user)
{
  TuDeviceMem *d = user;
  const guint8 *from = src;
  g_assert_true (from >= d->mem && n <= d->size && (gsize) (from - d->mem) <= d->size - n);
  memcpy (dst, d->backing + (from - d->mem), n);
  d->reads++;
  return TRUE;
}

static gboolean
device_export (gpointer mem, gsize size, int *fd, guint64 *offset, gpointer user, GError **error)
{
  TuDeviceMem *d = user;
  d->exports++;
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG, "no dma-buf here");
  return FALSE;
}

DqRingMemory
tu_device_memory (TuDeviceMem *d)
{
  memset (d, 0, sizeof *d);
  DqRingMemory m = { .kind = DQ_MEMORY_CUDA,
    .alloc = device_alloc,
    .free = device_free,
    .user = d,
    .export_dmabuf = device_export,
    .write = device_write,
    .read = device_read };
  return m;
}

const guint8 *
tu_device_view (const TuDeviceMem *d, const guint8 *p)
{
  return d->backing + (p - d->mem);
}

void
tu_assert_refused (GError **error, const char *input, const char *says)
{
  g_assert_nonnull (*error);
  if (strstr ((*error)->message, says) == NULL)
    g_error ("'%s': got '%s', expected '%s'", input, (*error)->message, says);
  g_clear_error (error);
}
