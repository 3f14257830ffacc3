/* The emulated ConnectX's arithmetic against the plain formulas it stands for: the
 * generator's frames (incremental UDP checksum) against frames built and checksummed
 * from scratch. No device thread, no rings.
 */
#include "emu-private.h"
#include "emu-net.h"
#include "test-util.h"

#include <infiniband/mlx5dv.h>
#include <string.h>

/* ---------------------------------------------------------------------------------- */
/* the generator */

static const guint8 gen_mac[6] = { 0x02, 0x00, 0x00, 0x12, 0x34, 0x56 };

/* Generator frame k as emu.h describes it, every byte written and both checksums
 * computed over the whole frame. */
static void
ref_gen_frame (guint8 * f, guint len, guint32 first_seq, guint64 k)
{
  static const guint8 src_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0xfe };
  guint32 seq = first_seq + (guint32) k;

  memset (f, 0, len);
  memcpy (f, gen_mac, 6);
  memcpy (f + 6, src_mac, 6);
  f[12] = 0x08;
  f[14] = 0x45;
  f[16] = (guint8) ((len - 14) >> 8);
  f[17] = (guint8) (len - 14);
  f[20] = 0x40;
  f[22] = 64;
  f[23] = 17;
  f[26] = 10;                   /* 10.0.0.1 -> 10.0.0.2 */
  f[29] = 1;
  f[30] = 10;
  f[33] = 2;
  f[34] = 1000 >> 8;            /* 1000 -> 5000 */
  f[35] = 1000 & 0xff;
  f[36] = 5000 >> 8;
  f[37] = 5000 & 0xff;
  f[38] = (guint8) ((len - 34) >> 8);
  f[39] = (guint8) (len - 34);
  f[42] = (guint8) (seq >> 24);
  f[43] = (guint8) (seq >> 16);
  f[44] = (guint8) (seq >> 8);
  f[45] = (guint8) seq;
  for (guint i = 46; i < len; i++)
    f[i] = (guint8) (k + i);
  g_assert_cmpuint (emu_csum_fill (f, len, MLX5_ETH_WQE_L3_CSUM | MLX5_ETH_WQE_L4_CSUM),
      ==, 3);
}

static guint
l4_csum_of (const guint8 * f)
{
  return (guint) (f[40] << 8 | f[41]);
}

static void
check_gen (EmuGen * g, guint8 * ref, guint64 k)
{
  guint len = g->cfg.frame_len;
  emu_gen_frame (g, k);
  ref_gen_frame (ref, len, g->cfg.first_seq, k);
  if (memcmp (g->frame, ref, len) != 0) {
    guint i = 0;
    while (g->frame[i] == ref[i])
      i++;
    g_error ("generator frame: len %u first_seq %u k %" G_GUINT64_FORMAT ": byte %u is "
        "0x%02x, from scratch 0x%02x", len, g->cfg.first_seq, k, i, g->frame[i], ref[i]);
  }
}

/* Every byte of the generator's frames equals a from-scratch build: lengths around
 * the word and pattern boundaries, k over several periods of the pattern, the sequence
 * number wrapping at 2^32, k past 2^32, and the UDP checksum that computes to 0 (sent
 * as 0xffff). */
static void
test_gen_checksum (void)
{
  static const guint lens[] = { 60, 61, 62, 63, 64, 65, 66, 127, 128, 129, 301, 302, 303,
    1000, 1514, 1515, 4096, 9001, 9996
  };
  static const guint32 firsts[] = { 0, 1, 5000, 0x0000ffff, 0x00010000, 0x7fffffff,
    0xfffffeff, 0xffffffff
  };
  static const guint64 far[] = { G_GUINT64_CONSTANT (0xfffffffd),
    G_GUINT64_CONSTANT (0xfffffffe), G_GUINT64_CONSTANT (0xffffffff),
    G_GUINT64_CONSTANT (0x100000000), G_GUINT64_CONSTANT (0x100000001),
    G_GUINT64_CONSTANT (0x10000000107), G_MAXUINT64 - 1, G_MAXUINT64
  };
  EmuGen *g = g_new0 (EmuGen, 1);
  guint8 *ref = g_malloc (EMU_MAX_FRAME);
  guint frames = 0;

  for (guint li = 0; li < G_N_ELEMENTS (lens); li++) {
    for (guint fi = 0; fi < G_N_ELEMENTS (firsts); fi++) {
      g->cfg.frame_len = lens[li];
      g->cfg.first_seq = firsts[fi];
      emu_gen_template (g, gen_mac);
      guint n = lens[li] > 2000 ? 260 : 700;
      for (guint64 k = 0; k < n; k++, frames++)
        check_gen (g, ref, k);
      for (guint i = 0; i < G_N_ELEMENTS (far); i++, frames++)
        check_gen (g, ref, far[i]);
      /* frames made out of order are the same frames */
      for (guint64 k = 1000; k > 990; k--, frames++)
        check_gen (g, ref, k * 7919);
    }
  }

  /* a sequence number whose UDP checksum computes to 0 goes out as 0xffff. With seq
   * 3 the sum folds to F = ~checksum; seq words summing to 3 - F (mod 0xffff) make it
   * 0xffff, whose complement is 0 (the from-scratch build says whether it does) */
  for (guint li = 0; li < G_N_ELEMENTS (lens); li++) {
    guint len = lens[li];
    ref_gen_frame (ref, len, 0, 3);
    guint f = (guint) (~l4_csum_of (ref) & 0xffff);
    guint32 first = (guint32) ((3 + 0xffff - f) % 0xffff) - 3;
    ref_gen_frame (ref, len, first, 3);
    g_assert_cmphex (l4_csum_of (ref), ==, 0xffff);
    g->cfg.frame_len = len;
    g->cfg.first_seq = first;
    emu_gen_template (g, gen_mac);
    check_gen (g, ref, 3);
    /* and the same pattern 256 frames later, with another sequence number */
    check_gen (g, ref, 3 + 256);
  }

  /* and the checksums are right by an independent RFC 1071 computation */
  g->cfg.frame_len = 77;
  g->cfg.first_seq = 0xfffffff0;
  emu_gen_template (g, gen_mac);
  for (guint64 k = 0; k < 300; k++) {
    emu_gen_frame (g, k);
    g_assert_cmphex ((g->frame[24] << 8) | g->frame[25], ==, tu_ipv4_csum (g->frame));
    g_assert_cmphex (l4_csum_of (g->frame), ==, tu_l4_csum (g->frame));
    g_assert_cmpuint (tu_frame_seq (g->frame, 77), ==, (guint32) (0xfffffff0 + k));
  }
  g_test_message ("%u generator frames compared with from-scratch ones", frames);
  g_free (ref);
  g_free (g);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5/emu-model/gen-checksum", test_gen_checksum);
  return g_test_run ();
}
