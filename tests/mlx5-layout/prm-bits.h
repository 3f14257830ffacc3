/* Raw big-endian bit access in PRM numbering (bit 0 = the MSB of byte 0), for checking a
 * mailbox or match buffer field by field at offsets written as numbers: bits_get reads a
 * field, bits_set writes one (a test clears each field it checked), assert_zero fails on the
 * first byte still set, naming it (a field written but not checked). */
#ifndef DAQIRI_TEST_PRM_BITS_H
#define DAQIRI_TEST_PRM_BITS_H

#include <glib.h>

static inline guint64
bits_get (const void *buf, gsize off, guint width)
{
  const guint8 *b = buf;
  guint64 v = 0;
  for (guint i = 0; i < width; i++) {
    gsize bit = off + i;
    v = v << 1 | ((b[bit / 8] >> (7 - bit % 8)) & 1);
  }
  return v;
}

static inline void
bits_set (void *buf, gsize off, guint width, guint64 v)
{
  guint8 *b = buf;
  for (guint i = 0; i < width; i++) {
    gsize bit = off + i;
    guint8 m = (guint8) (1u << (7 - bit % 8));
    if ((v >> (width - 1 - i)) & 1)
      b[bit / 8] |= m;
    else
      b[bit / 8] &= (guint8) ~m;
  }
}

static inline void
assert_zero (const guint8 *buf, gsize len)
{
  for (gsize i = 0; i < len; i++) {
    if (buf[i] != 0) {
      g_printerr ("byte 0x%" G_GSIZE_MODIFIER "x (bits 0x%" G_GSIZE_MODIFIER "x..) = 0x%02x "
                  "was set but not checked\n",
          i, i * 8, buf[i]);
      g_assert_cmphex (buf[i], ==, 0);
    }
  }
}

#endif
