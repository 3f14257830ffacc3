/* test-unpack-cpu.c — the CPU unpack of 10-bit 4:2:2 pgroups (SMPTE ST 2110-20, GStreamer's
 * UYVP) to planar I422_10LE, dq_unpack_uyvp_to_i422_10: hand-worked pgroups, every bit
 * position, pitched planes, refused sizes. No GPU, no GLib. */
#include "dq-test-util.h"

/* ---- 10-bit 4:2:2 pgroups -> planar I422_10LE ------------------------------------------- */

static uint32_t
le16_at (const uint8_t *p)
{
  return (uint32_t) p[0] | ((uint32_t) p[1] << 8);
}

/* One pgroup through the unpack (a 2 x 1 picture): the four samples Cb, Y0, Cr, Y1. */
static void
unpack_one (const uint8_t pg[5], uint32_t out[4])
{
  uint8_t y[4], u[2], v[2];
  CHECK_EQ (dq_unpack_uyvp_to_i422_10 (pg, 2, 1, y, 4, u, 2, v, 2), 0);
  out[0] = le16_at (u);
  out[1] = le16_at (y);
  out[2] = le16_at (v);
  out[3] = le16_at (y + 2);
}

static void
test_uyvp_vectors (void)
{
  dq_test_name = "uyvp-vectors";
  /* worked by hand from the bit layout: Cb[9:2] | Cb[1:0] Y0[9:4] | Y0[3:0] Cr[9:6] |
   * Cr[5:0] Y1[9:8] | Y1[7:0] */
  static const struct {
    uint8_t pg[5];
    uint32_t cb, y0, cr, y1;
  } v[] = {
    { { 0x00, 0x00, 0x00, 0x00, 0x00 }, 0x000, 0x000, 0x000, 0x000 },
    { { 0xff, 0xff, 0xff, 0xff, 0xff }, 0x3ff, 0x3ff, 0x3ff, 0x3ff },
    /* video black and white (Y 0x040 / 0x3ac, chroma 0x200), as ST 2110-20 senders emit them */
    { { 0x80, 0x04, 0x08, 0x00, 0x40 }, 0x200, 0x040, 0x200, 0x040 },
    { { 0x80, 0x3a, 0xc8, 0x03, 0xac }, 0x200, 0x3ac, 0x200, 0x3ac },
    { { 0x80, 0x04, 0x0e, 0xb1, 0x55 }, 0x200, 0x040, 0x3ac, 0x155 },
    /* each sample alone at its extremes */
    { { 0xff, 0xc0, 0x00, 0x00, 0x00 }, 0x3ff, 0x000, 0x000, 0x000 },
    { { 0x00, 0x3f, 0xf0, 0x00, 0x00 }, 0x000, 0x3ff, 0x000, 0x000 },
    { { 0x00, 0x00, 0x0f, 0xfc, 0x00 }, 0x000, 0x000, 0x3ff, 0x000 },
    { { 0x00, 0x00, 0x00, 0x03, 0xff }, 0x000, 0x000, 0x000, 0x3ff },
    /* alternating bits: 1010101010 0101010101 1010101010 0101010101 */
    { { 0xaa, 0x95, 0x5a, 0xa9, 0x55 }, 0x2aa, 0x155, 0x2aa, 0x155 },
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    uint32_t c[4];
    unpack_one (v[i].pg, c);
    CHECK_EQ (c[0], v[i].cb);
    CHECK_EQ (c[1], v[i].y0);
    CHECK_EQ (c[2], v[i].cr);
    CHECK_EQ (c[3], v[i].y1);
  }
  /* every bit position: bit k (MSB first) alone, and every bit but k; bit k is bit
   * 9 - k % 10 of sample k / 10 (Cb, Y0, Cr, Y1 in that order) */
  for (uint32_t k = 0; k < 40; k++) {
    uint8_t one[5] = { 0 }, all[5];
    one[k / 8] = (uint8_t) (0x80u >> (k % 8));
    for (int b = 0; b < 5; b++)
      all[b] = (uint8_t) ~one[b];
    uint32_t c[4], d[4];
    unpack_one (one, c);
    unpack_one (all, d);
    for (uint32_t s = 0; s < 4; s++) {
      uint32_t want = s == k / 10 ? 1u << (9 - k % 10) : 0;
      CHECK_EQ (c[s], want);
      CHECK_EQ (d[s], 0x3ffu & ~want);
    }
  }
}

/* A 6 x 3 picture into pitched planes with odd padding: every sample where it belongs,
 * little-endian, the high 6 bits zero, the padding and the bytes around untouched. */
static void
test_uyvp_picture (void)
{
  dq_test_name = "uyvp-picture";
  enum { W = 6, H = 3, YP = 2 * W + 5, UP = W + 3, VP = W + 1, GUARD = 16 };
  uint32_t cb[H][W / 2], cr[H][W / 2], yv[H][W];
  uint8_t *src = malloc ((size_t) dq_uyvp_picture_size (W, H)); /* exact: ASan sees overreads */
  CHECK_EQ (dq_uyvp_picture_size (W, H), 45);
  CHECK_EQ (dq_uyvp_picture_size (1920, 1080), 5184000);
  DqRng rng = { 0x422a10u };
  for (int r = 0; r < H; r++)
    for (int x = 0; x < W / 2; x++) {
      /* the first pgroup of the first row holds the extremes */
      cb[r][x] = r + x == 0 ? 0x000 : (uint32_t) dqt_rand (&rng) & 0x3ffu;
      yv[r][2 * x] = r + x == 0 ? 0x3ff : (uint32_t) dqt_rand (&rng) & 0x3ffu;
      cr[r][x] = r + x == 0 ? 0x3ff : (uint32_t) dqt_rand (&rng) & 0x3ffu;
      yv[r][2 * x + 1] = r + x == 0 ? 0x000 : (uint32_t) dqt_rand (&rng) & 0x3ffu;
      /* packed with the bit helper (a different route than the unpack's shifts) */
      uint8_t *pg = src + (r * (W / 2) + x) * 5;
      dq_bits_set (pg, 0, 10, cb[r][x]);
      dq_bits_set (pg, 10, 10, yv[r][2 * x]);
      dq_bits_set (pg, 20, 10, cr[r][x]);
      dq_bits_set (pg, 30, 10, yv[r][2 * x + 1]);
    }
  uint8_t ybuf[GUARD + H * YP + GUARD], ubuf[GUARD + H * UP + GUARD], vbuf[GUARD + H * VP + GUARD];
  memset (ybuf, 0xee, sizeof ybuf);
  memset (ubuf, 0xee, sizeof ubuf);
  memset (vbuf, 0xee, sizeof vbuf);
  uint8_t *y = ybuf + GUARD, *u = ubuf + GUARD, *v = vbuf + GUARD;
  CHECK_EQ (dq_unpack_uyvp_to_i422_10 (src, W, H, y, YP, u, UP, v, VP), 0);
  for (int r = 0; r < H; r++) {
    for (int x = 0; x < W; x++) {
      CHECK_EQ (y[r * YP + 2 * x], yv[r][x] & 0xff);
      CHECK_EQ (y[r * YP + 2 * x + 1], yv[r][x] >> 8);
    }
    for (int x = 0; x < W / 2; x++) {
      CHECK_EQ (le16_at (u + r * UP + 2 * x), cb[r][x]);
      CHECK_EQ (le16_at (v + r * VP + 2 * x), cr[r][x]);
    }
  }
  CHECK_EQ (le16_at (y), 0x3ff);
  CHECK_EQ (le16_at (y + 2), 0x000);
  CHECK_EQ (le16_at (u), 0x000);
  CHECK_EQ (le16_at (v), 0x3ff);
  /* padding of every row and the guards: untouched */
  for (size_t i = 0; i < sizeof ybuf; i++) {
    long o = (long) i - GUARD;
    if (o < 0 || o >= H * YP || o % YP >= 2 * W)
      CHECK_EQ (ybuf[i], 0xee);
  }
  for (size_t i = 0; i < sizeof ubuf; i++) {
    long o = (long) i - GUARD;
    if (o < 0 || o >= H * UP || o % UP >= W)
      CHECK_EQ (ubuf[i], 0xee);
  }
  for (size_t i = 0; i < sizeof vbuf; i++) {
    long o = (long) i - GUARD;
    if (o < 0 || o >= H * VP || o % VP >= W)
      CHECK_EQ (vbuf[i], 0xee);
  }

  /* refused: odd width, pitches narrower than a row, NULL planes (nothing written) */
  char msg[200];
  CHECK_EQ (dq_unpack_uyvp_validate (5, 2, 10, 5, 5, msg, sizeof msg), -1);
  CHECK (strstr (msg, "width 5 is odd") != NULL && strstr (msg, "allowed: even widths") != NULL);
  CHECK_EQ (dq_unpack_uyvp_validate (W, H, 2 * W - 1, UP, VP, msg, sizeof msg), -1);
  CHECK (strstr (msg, "Y pitch of 11 bytes is smaller than a row of 6 16-bit samples (12 bytes)") !=
      NULL);
  CHECK_EQ (dq_unpack_uyvp_validate (W, H, YP, UP, W - 1, msg, sizeof msg), -1);
  CHECK (strstr (msg, "V pitch of 5 bytes") != NULL);
  CHECK_EQ (dq_unpack_uyvp_validate (W, H, YP, W - 2, VP, msg, sizeof msg), -1);
  CHECK (strstr (msg, "U pitch of 4 bytes") != NULL);
  CHECK_EQ (dq_unpack_uyvp_validate (W, H, 2 * W, W, W, msg, sizeof msg), 0);
  uint8_t before[sizeof ybuf];
  memcpy (before, ybuf, sizeof ybuf);
  CHECK_EQ (dq_unpack_uyvp_to_i422_10 (src, 5, H, y, YP, u, UP, v, VP), -1);
  CHECK_EQ (dq_unpack_uyvp_to_i422_10 (src, W, H, y, 2 * W - 1, u, UP, v, VP), -1);
  CHECK_EQ (dq_unpack_uyvp_to_i422_10 (src, W, H, y, YP, NULL, UP, v, VP), -1);
  CHECK_EQ (dq_unpack_uyvp_to_i422_10 (NULL, W, H, y, YP, u, UP, v, VP), -1);
  /* an empty picture is nothing to do */
  CHECK_EQ (dq_unpack_uyvp_to_i422_10 (NULL, 0, H, NULL, 0, NULL, 0, NULL, 0), 0);
  CHECK_EQ (dq_unpack_uyvp_to_i422_10 (src, W, 0, y, 0, u, 0, v, 0), 0);
  CHECK (memcmp (before, ybuf, sizeof ybuf) == 0);
  free (src);
}

int
main (void)
{
  test_uyvp_vectors ();
  test_uyvp_picture ();
  return dq_test_summary ("test-unpack-cpu");
}
