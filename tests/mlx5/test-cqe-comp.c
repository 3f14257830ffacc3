/* Compressed completions (mlx5-dma.h has the layouts, rx.c the host side, emu-cq.c the
 * emulated device's).
 *
 * First against a device played by the test (the port of mini-port.h): CQ rings written
 * byte by byte as the basic and the enhanced layouts have them, values computed here, and
 * decoded by the host ring code: packets, titles, sessions over two polls and across the
 * ring's end, the slots the host must make invalid (basic) or give their validity byte
 * (enhanced), malformed sessions (counts out of range, no title, mini-CQEs that do not
 * name the ring's position) counted and never read beyond their array, and the CQ of a
 * quarter of the ring with its window of posted WQEs.
 *
 * Then against the emulated ConnectX: the bytes it writes for sessions of the longest
 * length, and the same frames through a compressed and an uncompressed CQ giving the same
 * packets (bytes, lengths, places, flow tags, flags, counters) with timestamps exact
 * where a full CQE carries them and the title's where a mini-CQE does, over ring wraps,
 * fillers, frames of another kind and an error completion. Last the engine key
 * (cqe-comp=) and its stats.
 */
#include "emu-rig.h"
#include "mlx5-mem.h"
#include "test-util.h"

#include <string.h>

#define TEST_LKEY 0x00abc001u
#define CSUM_FLAGS (MLX5_CQE_L2_OK | MLX5_CQE_L3_OK | MLX5_CQE_L4_OK)
#define UDP_IPV4 ((MLX5_CQE_L4_HDR_TYPE_UDP << 4) | (MLX5_CQE_L3_HDR_TYPE_IPV4 << 2))
#define PKT_FLAGS (DQ_PACKET_FLAG_CSUM_OK | DQ_PACKET_FLAG_TS_HW)

/* ---------------------------------------------------------------------------------- */
/* a device played by the test, writing CQEs at any index */

typedef struct {
  MiniPort port;
  Mlx5Rxq *q;
  Mlx5CqComp comp;
} ZDev;

static void
put_be (volatile guint8 *p, guint off, guint n, guint64 v)
{
  for (guint i = 0; i < n; i++)
    p[off + i] = (guint8) (v >> (8 * (n - 1 - i)));
}

/* a ring of 2^lw strides of 2^ls bytes a WQE, 2^lq WQEs, a CQ of 2^log_cq */
static void
zdev_open (ZDev *d, guint ls, guint lw, guint lq, guint log_cq, Mlx5CqComp comp)
{
  memset (d, 0, sizeof *d);
  mini_port_init (&d->port, TEST_LKEY);
  d->comp = comp;
  Mlx5RxGeometry geo = { .log_stride_size = ls,
    .log_strides = lw,
    .log_wqes = lq,
    .log_cq_size = log_cq,
    .cqe_comp = comp };
  GError *error = NULL;
  d->q = mlx5_rxq_new (&mini_port_ops, &d->port, &mini_port_caps, &geo, &error);
  g_assert_no_error (error);
  g_assert_true (d->port.cq->comp == comp);
}

static guint32
zmask (ZDev *d)
{
  return (1u << d->port.cq->log_size) - 1;
}

static volatile guint8 *
zslot (ZDev *d, guint32 idx)
{
  return d->port.cq->ring + (gsize) (idx & zmask (d)) * 64;
}

static guint32
zlap (ZDev *d, guint32 idx)
{
  return idx >> d->port.cq->log_size;
}

/* the last word of a slot: byte 62 (the enhanced layout's validity byte) and op_own */
static void
zpublish (ZDev *d, guint32 idx, guint8 op_own_hi)
{
  volatile guint8 *c = zslot (d, idx);
  if (d->comp == MLX5_CQ_COMP_ENHANCED)
    c[62] = (guint8) zlap (d, idx);
  mlx5_dma_wmb ();
  c[63] = op_own_hi | (zlap (d, idx) & 1);
}

/* the shared fields of a packet's CQE: wqe_id, checksum bits, header types, byte_cnt,
 * timestamp, flow tag, wqe_counter */
static void
zfields (volatile guint8 *c, guint16 wqe, guint16 stride, guint32 byte_cnt, guint64 ts, guint32 tag)
{
  for (guint i = 0; i < 62; i++)
    c[i] = 0;
  put_be (c, 2, 2, wqe);
  c[28] = CSUM_FLAGS;
  c[29] = UDP_IPV4;
  put_be (c, 44, 4, byte_cnt);
  put_be (c, 48, 8, ts);
  put_be (c, 56, 4, tag);
  put_be (c, 60, 2, stride);
}

/* a full CQE: a packet of `len` bytes in `strides` strides (a filler with `filler`) */
static void
zfull (ZDev *d, guint32 idx, guint16 wqe, guint16 stride, guint32 strides, guint32 len,
    gboolean filler, guint64 ts, guint32 tag)
{
  guint32 bc = (filler ? MLX5_MPRQ_FILLER_FLAG : 0) | strides << 16 | len;
  zfields (zslot (d, idx), wqe, stride, bc, ts, tag);
  zpublish (d, idx, MLX5_CQE_RESP_SEND << 4);
}

/* an FTAG_STRIDX mini-CQE as the word's value: tag 15..0, stride, tag 23..16, byte_cnt
 * 23..0 (the stride count's low byte over the length) */
static guint64
zmini (guint32 tag, guint16 stride, guint32 strides, guint32 len)
{
  return (guint64) (tag & 0xffff) << 48 | (guint64) stride << 32 | (guint64) (tag >> 16) << 24 |
      (guint64) (strides & 0xff) << 16 | len;
}

static void
zput_minis (volatile guint8 *c, const guint64 *minis, guint n)
{
  for (guint i = 0; i < n; i++)
    put_be (c, 8 * i, 8, minis[i]);
}

/* A basic session at `title`: array 0 in the next slot, array k in title + 8k, then the
 * title (byte_cnt = n, format MLX5_COMPRESSED). The session's other slots get `stale`:
 * a CQE a device would have left there a lap before (0x20 | owner: a packet's op_own). */
static void
zbasic (ZDev *d, guint32 title, guint16 wqe, guint16 stride, guint64 ts, const guint64 *minis,
    guint n, guint8 stale)
{
  for (guint32 i = 1; i < n; i++) {
    volatile guint8 *c = zslot (d, title + i);
    for (guint b = 0; b < 64; b++)
      c[b] = 0;
    c[63] = stale;
  }
  for (guint a = 0; a * 8 < n; a++)
    zput_minis (zslot (d, title + (a == 0 ? 1 : 8 * a)), minis + 8 * a, MIN (8, n - 8 * a));
  zfields (zslot (d, title), wqe, stride, n, ts, 0);
  zpublish (d, title, MLX5_CQE_RESP_SEND << 4 | MLX5_COMPRESSED << 2);
}

/* An enhanced compressed CQE of k mini-CQEs at idx; the k - 1 reserved slots after it get
 * `stale_vic` in byte 62 (-1: left as it is, as the device leaves it) and a packet's
 * op_own. */
static void
zenhanced (ZDev *d, guint32 idx, const guint64 *minis, guint k, gint stale_vic)
{
  for (guint32 i = 1; i < k; i++) {
    volatile guint8 *c = zslot (d, idx + i);
    for (guint b = 0; b < 62; b++)
      c[b] = 0;
    if (stale_vic >= 0)
      c[62] = (guint8) stale_vic;
    c[63] = MLX5_CQE_RESP_SEND << 4;
  }
  volatile guint8 *c = zslot (d, idx);
  for (guint b = 0; b < 62; b++)
    c[b] = 0;
  zput_minis (c, minis, k);
  zpublish (d, idx, (guint8) ((k - 1) << 4 | MLX5_COMPRESSED << 2));
}

static Mlx5RxCounters
zcounters (ZDev *d)
{
  Mlx5RxCounters c;
  mlx5_rxq_counters (d->q, &c);
  return c;
}

/* Polls up to `max` packets into p: the poll must return `more` (TRUE: a WQE used up, or
 * the CQ has more) and give `n` packets. */
static Mlx5RxBurst
zpoll (ZDev *d, DqPacket *p, guint max, gboolean more, guint n)
{
  Mlx5RxBurst b = { 0 };
  if (more)
    g_assert_true (mlx5_rxq_poll (d->q, &b, p, max));
  else
    g_assert_false (mlx5_rxq_poll (d->q, &b, p, max));
  g_assert_cmpuint (b.n_packets, ==, n);
  return b;
}

/* the ring counted `packets` packets, `compressed` of them from mini-CQEs, and no device
 * errors */
static void
zassert_counted (ZDev *d, guint64 packets, guint64 compressed)
{
  Mlx5RxCounters c = zcounters (d);
  g_assert_cmpuint (c.packets, ==, packets);
  g_assert_cmpuint (c.compressed, ==, compressed);
  g_assert_cmpuint (c.device_errors, ==, 0);
}

static void
zassert_pkt (const DqPacket *p, guint32 offset, guint32 len, guint32 tag, guint64 ts)
{
  g_assert_cmpuint (p->offset, ==, offset);
  g_assert_cmpuint (p->length, ==, len);
  g_assert_cmphex (p->flow_id, ==, tag);
  g_assert_cmpuint (p->timestamp, ==, ts);
  g_assert_cmphex (p->flags, ==, PKT_FLAGS);
}

/* ---------------------------------------------------------------------------------- */
/* the layouts, decoded by the host */

/* The basic layout: a full CQE, then a session of 11 completions (two mini-CQE arrays,
 * in the slots after the title and title + 8) ending the WQE; a session read over two
 * polls; a filler and an error after sessions. */
static void
test_basic_layout (void)
{
  ZDev d;
  /* 64-byte strides, 16 a WQE, 4 WQEs, CQ 32: 2 WQEs posted ahead of the reader */
  zdev_open (&d, 6, 4, 2, 5, MLX5_CQ_COMP_BASIC);
  g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, 2);
  g_assert_cmpuint (mlx5_rxq_cq_bytes (d.q), ==, 32 * 64);

  static const guint32 lens[11] = { 60, 64, 100, 128, 65, 1, 64, 64, 64, 70, 64 };
  guint64 minis[11];
  guint32 stride = 1, strides[11];
  zfull (&d, 0, 0, 0, 1, 60, FALSE, 100, 0x000001);
  for (guint i = 0; i < 11; i++) {
    strides[i] = (lens[i] + 63) / 64;
    minis[i] = zmini (0xa0b0c0 + i, (guint16) stride, strides[i], lens[i]);
    stride += strides[i];
  }
  g_assert_cmpuint (stride, ==, 16);
  zbasic (&d, 1, 0, 1, 200, minis, 11, MLX5_CQE_RESP_SEND << 4);

  DqPacket p[32];
  Mlx5RxBurst b = zpoll (&d, p, 32, TRUE, 12); /* WQE 0 used up */
  g_assert_cmpuint (b.wqe, ==, 0);
  g_assert_cmpuint (b.strides, ==, 16);
  zassert_pkt (&p[0], 0, 60, 0x000001, 100);
  stride = 1;
  for (guint i = 0; i < 11; i++) {
    /* the title's time and checksum bits; the mini-CQE's place, length and tag */
    zassert_pkt (&p[1 + i], stride * 64, lens[i], 0xa0b0c0 + i, 200);
    stride += strides[i];
  }
  g_assert_cmpuint (mlx5_rxq_burst_size (d.q, &b), ==, 15 * 64 + 64);
  /* every index of the session passed, the doorbell record says so */
  g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, 12);
  /* the session's slots but the title's are INVALID now; the title and the rest as they
   * were */
  g_assert_cmphex (zslot (&d, 1)[63], ==, MLX5_CQE_RESP_SEND << 4 | MLX5_COMPRESSED << 2);
  for (guint i = 2; i < 12; i++)
    g_assert_cmphex (zslot (&d, i)[63], ==, MLX5_CQE_INVALID << 4);
  g_assert_cmphex (zslot (&d, 12)[63], ==, 0xff);
  zassert_counted (&d, 12, 11);
  Mlx5RxCounters c = zcounters (&d);
  g_assert_cmpuint (c.bytes, ==, 60 + 60 + 64 + 100 + 128 + 65 + 1 + 64 * 4 + 70);

  /* WQE 1: a session of 5 read in two polls (3, then 2), then a filler */
  guint64 m5[5];
  for (guint i = 0; i < 5; i++)
    m5[i] = zmini (0x10 + i, (guint16) (2 * i), 2, 128);
  zbasic (&d, 12, 1, 0, 300, m5, 5, 0);
  zfull (&d, 17, 1, 10, 6, 0, TRUE, 0, 0);
  Mlx5RxBurst b1 = zpoll (&d, p, 3, TRUE, 3); /* max packets */
  g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, 15);
  g_assert_true (mlx5_rxq_cq_ready (d.q));        /* the session's rest */
  Mlx5RxBurst b2 = zpoll (&d, p + 3, 8, TRUE, 2); /* the filler ends WQE 1 */
  g_assert_cmpuint (b2.wqe, ==, 1);
  g_assert_cmpuint (b2.first_stride, ==, 6);
  for (guint i = 0; i < 5; i++)
    zassert_pkt (&p[i], (i < 3 ? 2 * i : 2 * (i - 3)) * 64, 128, 0x10 + i, 300);
  g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, 18);
  c = zcounters (&d);
  g_assert_cmpuint (c.fillers, ==, 1);
  g_assert_cmpuint (c.compressed, ==, 16);

  /* the window: with WQEs 0 and 1 read and given back, WQEs 2 and 3 are posted */
  mlx5_rxq_release (d.q, b.wqe, b.strides);
  mlx5_rxq_release (d.q, b1.wqe, b1.strides);
  mlx5_rxq_release (d.q, b2.wqe, b2.strides);
  g_assert_cmpuint (mlx5_rxq_refill (d.q), ==, 2);
  g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, 4);

  /* WQE 2: a session of 2, then an error CQE for the strides after it */
  guint64 m2[2] = { zmini (7, 0, 1, 64), zmini (8, 1, 1, 64) };
  zbasic (&d, 18, 2, 0, 400, m2, 2, 0);
  volatile guint8 *e = zslot (&d, 20);
  zfields (e, 2, 2, 3u << 16, 0, 0);
  e[55] = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
  zpublish (&d, 20, MLX5_CQE_RESP_ERR << 4);
  zpoll (&d, p, 8, FALSE, 2);
  zassert_pkt (&p[0], 0, 64, 7, 400);
  zassert_pkt (&p[1], 64, 64, 8, 400);
  g_assert_true (mlx5_rxq_in_error (d.q));
  g_assert_cmpuint (zcounters (&d).cqe_errors, ==, 1);
  zassert_counted (&d, 19, 18);
  mlx5_rxq_free (d.q);
}

/* The enhanced layout: a full CQE (the title) and compressed CQEs of 7 and 3 mini-CQEs
 * after it, then a new title with 2; validity by byte 62; the reserved slots are not read
 * and, lap 0 being one of every 128th, get the lap in byte 62. */
static void
test_enhanced_layout (void)
{
  ZDev d;
  zdev_open (&d, 6, 4, 2, 5, MLX5_CQ_COMP_ENHANCED);
  zfull (&d, 0, 0, 0, 1, 60, FALSE, 500, 0x050505);
  guint64 m[10];
  for (guint i = 0; i < 10; i++)
    m[i] = zmini (0xc00000 | i, (guint16) (1 + i), 1, 50 + i);
  zenhanced (&d, 1, m, 7, 0x55);
  zenhanced (&d, 8, m + 7, 3, 0x55);
  zfull (&d, 11, 0, 11, 2, 100, FALSE, 600, 0x000006);
  guint64 m2[2] = { zmini (0xffffff, 13, 1, 64), zmini (0x000001, 14, 2, 65) };
  zenhanced (&d, 12, m2, 2, 0x55);

  DqPacket p[32];
  Mlx5RxBurst b = zpoll (&d, p, 32, TRUE, 14);
  g_assert_cmpuint (b.strides, ==, 16);
  zassert_pkt (&p[0], 0, 60, 0x050505, 500);
  for (guint i = 0; i < 10; i++)
    zassert_pkt (&p[1 + i], (1 + i) * 64, 50 + i, 0xc00000 | i, 500);
  zassert_pkt (&p[11], 11 * 64, 100, 0x000006, 600);
  zassert_pkt (&p[12], 13 * 64, 64, 0xffffff, 600);
  zassert_pkt (&p[13], 14 * 64, 65, 0x000001, 600);
  g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, 14);
  /* what the device wrote is as it was; the reserved slots have the lap (0) in byte 62 */
  static const guint32 written[] = { 0, 1, 8, 11, 12 };
  for (guint i = 0; i < G_N_ELEMENTS (written); i++)
    g_assert_cmphex (zslot (&d, written[i])[62], ==, 0);
  for (guint i = 2; i < 14; i++) {
    if (i == 8 || i == 11 || i == 12)
      continue;
    g_assert_cmphex (zslot (&d, i)[62], ==, 0);
    g_assert_cmphex (zslot (&d, i)[63], ==, MLX5_CQE_RESP_SEND << 4);
  }
  g_assert_false (mlx5_rxq_cq_ready (d.q));
  zassert_counted (&d, 14, 12);
  mlx5_rxq_free (d.q);
}

/* Sessions across the ring's end: indices of the next lap, validity by that lap's parity
 * (basic) or byte 62 (enhanced). A lap later, the slots a session left behind must not
 * pass for CQEs: a basic mini-CQE array whose last byte reads as a packet's op_own of the
 * next lap's parity (made INVALID by the host), and an enhanced reserved slot whose byte
 * 62 holds the next lap (overwritten on lap 0, one of every 128th). */
static void
check_wrap (Mlx5CqComp comp)
{
  ZDev d;
  /* 16 strides a WQE, 4 WQEs, CQ 16: one WQE posted ahead of the reader */
  zdev_open (&d, 6, 4, 2, 4, comp);
  g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, 1);
  DqPacket p[32];
  guint64 seen = 0;

  /* WQE 0: 8 full CQEs of 2 strides, indices 0..7 */
  for (guint i = 0; i < 8; i++)
    zfull (&d, i, 0, (guint16) (2 * i), 2, 128, FALSE, 1000 + i, i);
  Mlx5RxBurst b = zpoll (&d, p, 32, TRUE, 8);
  mlx5_rxq_release (d.q, b.wqe, b.strides);
  g_assert_cmpuint (mlx5_rxq_refill (d.q), ==, 1); /* WQE 1; never more than one ahead */
  g_assert_cmpuint (mlx5_rxq_refill (d.q), ==, 0);
  seen += 8;

  /* WQE 1: 5 full CQEs (indices 8..12), then 6 compressed completions from index 13,
   * indices 13..18 = slots 13..15 and 0..2 of lap 1; then a filler at index 19 */
  for (guint i = 0; i < 5; i++)
    zfull (&d, 8 + i, 1, (guint16) i, 1, 64, FALSE, 2000 + i, 0x100 + i);
  guint64 m[8];
  for (guint i = 0; i < 6; i++)
    m[i] = zmini (0x200 + i, (guint16) (5 + i), 1, 64);
  if (comp == MLX5_CQ_COMP_BASIC) {
    /* mini-CQE 7 of array 0 (unused) ends in 0x21: a packet's op_own for lap 1 */
    m[6] = 0;
    m[7] = 0x21;
    zbasic (&d, 13, 1, 5, 3000, m, 6, 0x21);
    put_be (zslot (&d, 14), 48, 8, m[6]);
    put_be (zslot (&d, 14), 56, 8, m[7]);
  } else {
    /* the title: index 12; a compressed CQE of 6 at index 13, its reserved slots holding
     * lap 1 in byte 62 */
    zenhanced (&d, 13, m, 6, 1);
  }
  zfull (&d, 19, 1, 11, 5, 0, TRUE, 0, 0);
  b = zpoll (&d, p, 32, TRUE, 11);
  for (guint i = 0; i < 5; i++)
    zassert_pkt (&p[i], i * 64, 64, 0x100 + i, 2000 + i);
  for (guint i = 0; i < 6; i++)
    zassert_pkt (&p[5 + i], (5 + i) * 64, 64, 0x200 + i, comp == MLX5_CQ_COMP_BASIC ? 3000 : 2004);
  g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, 20);
  mlx5_rxq_release (d.q, b.wqe, b.strides);
  g_assert_cmpuint (mlx5_rxq_refill (d.q), ==, 1);
  seen += 11;

  /* WQE 2: 10 full CQEs, indices 20..29 (slots 4..13 of lap 1), then nothing: index 30
   * is slot 14, the basic session's array 0 or an enhanced reserved slot */
  for (guint i = 0; i < 10; i++)
    zfull (&d, 20 + i, 2, (guint16) i, 1, 64, FALSE, 4000 + i, 0x300 + i);
  b = zpoll (&d, p, 32, FALSE, 10);
  g_assert_false (mlx5_rxq_cq_ready (d.q));
  if (comp == MLX5_CQ_COMP_BASIC)
    g_assert_cmphex (zslot (&d, 30)[63], ==, MLX5_CQE_INVALID << 4);
  else
    g_assert_cmphex (zslot (&d, 30)[62], ==, 0); /* lap 0's scrub */
  zassert_counted (&d, seen + 10, 6);
  mlx5_rxq_free (d.q);
}

static void
test_wrap (void)
{
  check_wrap (MLX5_CQ_COMP_BASIC);
  check_wrap (MLX5_CQ_COMP_ENHANCED);
}

/* The enhanced layout over 300 laps of a CQ of 16 whose slots 2..7 and 10..15 are always
 * reserved (a title and 7 mini-CQEs, twice a lap): they were never written by the device,
 * so byte 62 of the CQ's first fill (0xff) would pass for lap 255; the host's writes on
 * laps 0 and 128 keep it from that. On lap 255 the device writes only indices 0 and 1, as
 * full CQEs, and the host must find index 2 empty. */
static void
test_enhanced_scrub (void)
{
  ZDev d;
  zdev_open (&d, 6, 4, 2, 4, MLX5_CQ_COMP_ENHANCED);
  DqPacket p[32];
  for (guint32 lap = 0; lap < 255; lap++) {
    guint16 wqe = (guint16) (lap & 3);
    guint32 base = lap * 16;
    guint64 m[7];
    for (guint h = 0; h < 2; h++) {
      zfull (&d, base + 8 * h, wqe, (guint16) (8 * h), 1, 64, FALSE, lap, h);
      for (guint i = 0; i < 7; i++)
        m[i] = zmini (lap, (guint16) (8 * h + 1 + i), 1, 64);
      zenhanced (&d, base + 8 * h + 1, m, 7, -1);
    }
    Mlx5RxBurst b = zpoll (&d, p, 32, TRUE, 16);
    g_assert_cmpuint (p[15].flow_id, ==, lap);
    mlx5_rxq_release (d.q, b.wqe, b.strides);
    g_assert_cmpuint (mlx5_rxq_refill (d.q), ==, 1);
    /* the reserved slots: the host wrote the lap on laps 0 and 128 only */
    g_assert_cmphex (zslot (&d, 2)[62], ==, lap >= 128 ? 128 : 0);
  }
  zfull (&d, 255 * 16, 255 & 3, 0, 1, 64, FALSE, 255, 0);
  zfull (&d, 255 * 16 + 1, 255 & 3, 1, 1, 64, FALSE, 255, 1);
  zpoll (&d, p, 32, FALSE, 2);
  g_assert_false (mlx5_rxq_cq_ready (d.q));
  zassert_counted (&d, 255 * 16 + 2, 255 * 14);
  mlx5_rxq_free (d.q);
}

/* Sessions that cannot be read are counted as device errors, read no byte beyond their
 * array (AddressSanitizer checks that), and the ring goes on: the rest of the WQE is given
 * back and the next WQE's packets come out right. */
static void
test_malformed_basic (void)
{
  ZDev d;
  zdev_open (&d, 6, 4, 2, 5, MLX5_CQ_COMP_BASIC); /* CQ 32 */
  DqPacket p[64];
  guint64 m[2] = { zmini (1, 0, 1, 64), zmini (2, 1, 1, 64) };
  guint32 idx = 0;

  /* titles counting 0, 1 and 33 (more than the CQ) completions, and one of another
   * opcode: each taken alone, each giving up the rest of a WQE */
  static const guint32 counts[] = { 0, 1, 33 };
  for (guint i = 0; i < G_N_ELEMENTS (counts); i++) {
    zfields (zslot (&d, idx), (guint16) i, 0, counts[i], 0, 0);
    zpublish (&d, idx, MLX5_CQE_RESP_SEND << 4 | MLX5_COMPRESSED << 2);
    idx++;
  }
  zfields (zslot (&d, idx), 3, 0, 2, 0, 0);
  zpublish (&d, idx, MLX5_CQE_REQ << 4 | MLX5_COMPRESSED << 2);
  idx++;
  zpoll (&d, p, 64, FALSE, 0);
  Mlx5RxCounters c = zcounters (&d);
  g_assert_cmpuint (c.device_errors, ==, 4);
  g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, 4);

  /* WQE 4 (slot 0 again): a session whose mini-CQEs name a stride the reader is not at,
   * an empty packet and one longer than the WQE's rest (each gives back one stride, the
   * last the WQE's rest) */
  guint64 bad[4] = { zmini (1, 0, 1, 64), zmini (2, 5, 1, 64), zmini (3, 2, 0, 0),
    zmini (4, 3, 0xff, 9000) };
  zbasic (&d, idx, 0, 0, 7, bad, 4, 0);
  idx += 4;
  zpoll (&d, p, 64, TRUE, 1); /* the first was right */
  zassert_pkt (&p[0], 0, 64, 1, 7);
  c = zcounters (&d);
  g_assert_cmpuint (c.device_errors, ==, 7);
  /* the last took the WQE's rest: WQE 0 .. 3 of this lap done */
  g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, idx);

  /* and a good session after all that, in the next WQE */
  zbasic (&d, idx, 1, 0, 9, m, 2, 0);
  zpoll (&d, p, 64, FALSE, 2);
  zassert_pkt (&p[0], 0, 64, 1, 9);
  zassert_pkt (&p[1], 64, 64, 2, 9);
  g_assert_cmpuint (zcounters (&d).device_errors, ==, 7);
  mlx5_rxq_free (d.q);
}

static void
test_malformed_enhanced (void)
{
  ZDev d;
  zdev_open (&d, 6, 4, 2, 5, MLX5_CQ_COMP_ENHANCED);
  DqPacket p[64];
  guint64 m[16];
  for (guint i = 0; i < 16; i++)
    m[i] = zmini (i, (guint16) (1 + i), 1, 64);
  guint32 idx = 0;

  /* a compressed CQE with no title before it: its 3 indices passed, WQE 0 given up */
  zenhanced (&d, idx, m, 3, 0);
  idx += 3;
  Mlx5RxBurst b = zpoll (&d, p, 64, FALSE, 0);
  g_assert_cmpuint (zcounters (&d).device_errors, ==, 1);
  g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, 3);

  /* a title, then counts of 8 and 15 mini-CQEs (op_own 7 and 14 in bits 7..4): more than
   * a CQE holds; never read */
  static const guint counts[] = { 8, 15 };
  for (guint i = 0; i < G_N_ELEMENTS (counts); i++) {
    zfull (&d, idx, (guint16) (1 + i), 0, 1, 64, FALSE, 11, 0x77);
    volatile guint8 *c = zslot (&d, idx + 1);
    for (guint k = 0; k < 62; k++)
      c[k] = 0xaa;
    zpublish (&d, idx + 1, (guint8) ((counts[i] - 1) << 4 | MLX5_COMPRESSED << 2));
    idx += 1 + counts[i];
  }
  b = zpoll (&d, p, 64, TRUE, 1); /* the title, then WQE 1 given up */
  zassert_pkt (&p[0], 0, 64, 0x77, 11);
  b = zpoll (&d, p, 64, TRUE, 1);
  g_assert_cmpuint (b.wqe, ==, 2);
  Mlx5RxCounters c = zcounters (&d);
  g_assert_cmpuint (c.device_errors, ==, 3);
  g_assert_cmpuint (c.compressed, ==, 0);
  g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, idx);

  /* WQE 3: a title, and mini-CQEs of another stride (counted, one stride given back each)
   * among right ones */
  zfull (&d, idx, 3, 0, 1, 64, FALSE, 12, 0x78);
  guint64 mix[4] = { zmini (1, 1, 1, 64), zmini (2, 9, 1, 64), zmini (3, 3, 1, 64),
    zmini (4, 4, 1, 0) };
  zenhanced (&d, idx + 1, mix, 4, 0);
  idx += 5;
  b = zpoll (&d, p, 64, FALSE, 3);
  zassert_pkt (&p[0], 0, 64, 0x78, 12);
  zassert_pkt (&p[1], 64, 64, 1, 12);
  zassert_pkt (&p[2], 3 * 64, 64, 3, 12);
  c = zcounters (&d);
  g_assert_cmpuint (c.device_errors, ==, 5);
  g_assert_cmpuint (c.compressed, ==, 2);
  mlx5_rxq_free (d.q);
}

/* The compressed geometry: a quarter of the ring's strides, at least 4 WQEs' worth. */
static void
test_geometry (void)
{
  Mlx5RxGeometry geo;
  GError *error = NULL;
  g_assert_true (mlx5_rx_geometry_choose (&mini_port_caps, "t", 0, 1518, 0, 0, &geo, &error));
  g_assert_cmpuint (geo.log_cq_size, ==, 20); /* 64 MiB of CQ */
  mlx5_rx_geometry_compress (&geo, MLX5_CQ_COMP_NONE);
  g_assert_cmpuint (geo.log_cq_size, ==, 20);
  g_assert_true (geo.cqe_comp == MLX5_CQ_COMP_NONE);
  mlx5_rx_geometry_compress (&geo, MLX5_CQ_COMP_ENHANCED);
  g_assert_cmpuint (geo.log_cq_size, ==, 18); /* 16 MiB: a quarter */
  g_assert_true (geo.cqe_comp == MLX5_CQ_COMP_ENHANCED);
  g_assert_cmpuint ((guint64) 64 << geo.log_cq_size, ==, (guint64) 16 << 20);

  static const struct {
    guint log_wqes, want_window;
  } cases[] = { { 2, 2 }, { 3, 2 }, { 4, 2 }, { 5, 3 }, { 15, 13 } };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    Mlx5RxGeometry g = { .log_stride_size = 6,
      .log_strides = 5,
      .log_wqes = cases[i].log_wqes,
      .log_cq_size = 5 + cases[i].log_wqes };
    mlx5_rx_geometry_compress (&g, MLX5_CQ_COMP_BASIC);
    g_assert_cmpuint (g.log_cq_size, ==, 5 + MIN (cases[i].want_window, cases[i].log_wqes));
  }

  /* what the key asks for against what the device has */
  Mlx5Caps caps = mini_port_caps;
  Mlx5CqComp comp = MLX5_CQ_COMP_BASIC;
  g_assert_true (mlx5_rx_cqe_comp_choose (&caps, "t", MLX5_RX_CQE_COMP_ON, &comp, &error));
  g_assert_true (comp == MLX5_CQ_COMP_NONE);
  g_assert_false (mlx5_rx_cqe_comp_choose (&caps, "mlx5:x", MLX5_RX_CQE_COMP_BASIC, &comp, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_CONFIG);
  g_assert_cmpstr (error->message, ==,
      "mlx5:x: cqe-comp=basic is not possible: the device does not compress completions with "
      "flow tag and stride index mini-CQEs (HCA capabilities cqe_compression, "
      "mini_cqe_resp_flow_tag, mini_cqe_resp_stride_index) (allowed: cqe-comp=off, on (which "
      "is off here))");
  g_clear_error (&error);
  caps.cqe_comp_basic = TRUE;
  g_assert_true (mlx5_rx_cqe_comp_choose (&caps, "t", MLX5_RX_CQE_COMP_ON, &comp, &error));
  g_assert_true (comp == MLX5_CQ_COMP_BASIC);
  g_assert_false (
      mlx5_rx_cqe_comp_choose (&caps, "mlx5:x", MLX5_RX_CQE_COMP_ENHANCED, &comp, &error));
  g_assert_nonnull (strstr (error->message, "(allowed: cqe-comp=off, on, basic)"));
  g_clear_error (&error);
  caps.cqe_comp_enhanced = TRUE;
  g_assert_true (mlx5_rx_cqe_comp_choose (&caps, "t", MLX5_RX_CQE_COMP_ON, &comp, &error));
  g_assert_true (comp == MLX5_CQ_COMP_ENHANCED);
  g_assert_true (mlx5_rx_cqe_comp_choose (&caps, "t", MLX5_RX_CQE_COMP_BASIC, &comp, &error));
  g_assert_true (comp == MLX5_CQ_COMP_BASIC);
  g_assert_true (mlx5_rx_cqe_comp_choose (&caps, "t", MLX5_RX_CQE_COMP_OFF, &comp, &error));
  g_assert_true (comp == MLX5_CQ_COMP_NONE);
  g_assert_no_error (error);
}

/* The window of posted WQEs: with a CQ of 2 WQEs' strides the device never has more than
 * 2 WQEs posted ahead of what the host has read, whatever the host gave back. */
static void
test_window (void)
{
  ZDev d;
  zdev_open (&d, 6, 3, 3, 4, MLX5_CQ_COMP_BASIC); /* 8 strides, 8 WQEs, CQ 16 */
  g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, 2);
  g_assert_cmpuint (mlx5_rxq_refill (d.q), ==, 0); /* the rest waits for the reader */
  DqPacket p[16];
  guint32 idx = 0;
  for (guint w = 0; w < 20; w++) {
    /* the device fills one WQE with a session of 8 */
    guint64 m[8];
    for (guint i = 0; i < 8; i++)
      m[i] = zmini (w, (guint16) i, 1, 64);
    zbasic (&d, idx, (guint16) (w & 7), 0, w, m, 8, 0);
    idx += 8;
    Mlx5RxBurst b = zpoll (&d, p, 16, TRUE, 8);
    g_assert_cmpuint (b.wqe, ==, w & 7);
    mlx5_rxq_release (d.q, b.wqe, b.strides);
    /* one WQE read: one more posted, the window stays 2 */
    g_assert_cmpuint (mlx5_rxq_refill (d.q), ==, 1);
    g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, w + 3);
  }
  Mlx5RxCounters c = zcounters (&d);
  g_assert_cmpuint (c.packets, ==, 160);
  g_assert_cmpuint (c.reposts, ==, 20);
  mlx5_rxq_free (d.q);
}

/* ---------------------------------------------------------------------------------- */
/* the emulated ConnectX */

/* the CQE the emulator must write for a packet: the shared fields (zfields), the rest 0 */
static void
cqe_want (guint8 *want, guint16 wqe, guint32 byte_cnt, guint64 ts, guint32 tag, guint16 stride)
{
  memset (want, 0, 64);
  zfields (want, wqe, stride, byte_cnt, ts, tag);
}

static void
bytes_equal (
    const guint8 *got, const guint8 *want, guint from, guint to, const char *what, guint32 idx)
{
  for (guint i = from; i < to; i++)
    if (got[i] != want[i])
      g_error ("%s at CQ index %u: byte %u is 0x%02x, want 0x%02x", what, idx, i, got[i], want[i]);
}

/* The bytes the emulated device writes for 66 frames of 60 bytes in one device pass into
 * a WQE of 128 strides: the longest session (64 completions: EMU_CQE_COMP_MAX), then one
 * of 2. Basic: titles at 0 and 64 (byte_cnt 64 and 2, format 3), mini-CQE arrays in
 * slots 1, 8, 16 .. 56 and 65. Enhanced: full CQEs at 0 and 64 (the titles), compressed
 * CQEs of 7 at 1, 8 .. 57 and of 1 at 65, byte 62 the lap. Every other slot as the host
 * filled it. */
static void
check_emu_bytes (Mlx5CqComp comp)
{
  GError *error = NULL;
  DqPortInfo info;
  Mlx5Caps caps;
  char *spec = g_strdup_printf ("zbytes%u,pause=off", comp);
  gpointer dev = emu_port_ops.open (spec, &info, &caps, &error);
  g_assert_no_error (error);
  g_free (spec);
  EmuPort *port = dev;
  g_assert_true (caps.cqe_comp_basic);
  g_assert_true (caps.cqe_comp_enhanced);

  guint8 *ring = g_aligned_alloc (128, 64, 64);
  memset (ring, 0xff, 128 * 64);
  guint32 *cq_db = g_new0 (guint32, 2);
  guint8 *buf = g_aligned_alloc0 (2, 128 * 64, 64);
  Mlx5Cq cq = { .ring = ring, .dbrec = cq_db, .log_size = 7, .comp = comp };
  gpointer mr;
  guint32 lkey;
  g_assert_true (emu_port_ops.mr_reg (dev, buf, 2 * 128 * 64, &lkey, &mr, &error));
  g_assert_true (emu_port_ops.cq_create (dev, &cq, &error));
  Mlx5Rq rq = { .wqes = g_aligned_alloc0 (2, 32, 64),
    .dbrec = g_new0 (guint32, 2),
    .log_wqes = 1,
    .log_strides = 7,
    .log_stride_size = 6,
    .buf = buf,
    .buf_size = 2 * 128 * 64,
    .lkey = lkey,
    .cq = &cq };
  g_assert_true (emu_port_ops.rq_create (dev, &rq, &error));
  for (guint i = 0; i < 2; i++) {
    struct mlx5_mprq_wqe *w = (struct mlx5_mprq_wqe *) (rq.wqes + 32 * i);
    w->dseg.byte_count = htobe32 (128 * 64);
    w->dseg.lkey = htobe32 (lkey);
    w->dseg.addr = htobe64 ((guint64) (uintptr_t) (buf + 128 * 64 * i));
  }
  rq.dbrec[MLX5_RCV_DBR] = htobe32 (2);
  Mlx5Rq *rqs[1] = { &rq };
  DqFlowRule rule = { .keys = DQ_FLOW_MARK, .mark = 0xa1b2c3 };
  g_assert_true (emu_port_ops.flows_set (dev, 1, rqs, 1, &rule, 1, &error));

  /* all 66 in one pass */
  emu_port_fault_stall (port, TRUE);
  TuFrameSpec fs = {
    .len = 60, .proto = TU_PROTO_UDP, .src = 1, .dst = 2, .sport = 1, .dport = 2, .good_csums = TRUE
  };
  guint8 frame[60];
  for (guint i = 0; i < 66; i++) {
    tu_frame_build (frame, &fs, i);
    g_assert_true (emu_port_inject (port, frame, 60));
  }
  emu_port_fault_stall (port, FALSE);
  g_assert_true (emu_port_wait_idle (port, 5 * S_NS));
  EmuCounters ec;
  emu_port_counters (port, &ec);
  g_assert_cmpuint (ec.rx_packets, ==, 66);

  guint8 want[64];
  guint32 mini_bc = 1u << 16 | 60;
  static const guint32 titles[2] = { 0, 64 };
  static const guint counts[2] = { 64, 2 };
  gboolean written[128] = { FALSE };
  for (guint s = 0; s < 2; s++) {
    guint32 t = titles[s];
    const guint8 *title = ring + t * 64;
    guint64 ts = 0;
    for (guint b = 48; b < 56; b++)
      ts = ts << 8 | title[b];
    g_assert_cmpuint (ts, >, 0);
    if (comp == MLX5_CQ_COMP_BASIC) {
      /* the title: the first completion's CQE, byte_cnt the count */
      cqe_want (want, 0, counts[s], ts, 0xa1b2c3, (guint16) t);
      want[63] = MLX5_CQE_RESP_SEND << 4 | MLX5_COMPRESSED << 2;
      bytes_equal (title, want, 0, 64, "basic title", t);
      written[t] = TRUE;
      for (guint a = 0; a * 8 < counts[s]; a++) {
        guint32 slot = t + (a == 0 ? 1 : 8 * a);
        memset (want, 0, 64);
        for (guint j = 0; j < 8 && a * 8 + j < counts[s]; j++)
          put_be (want, 8 * j, 8, zmini (0xa1b2c3, (guint16) (t + a * 8 + j), 1, 60));
        bytes_equal (ring + slot * 64, want, 0, 64, "mini-CQE array", slot);
        written[slot] = TRUE;
      }
    } else {
      cqe_want (want, 0, mini_bc, ts, 0xa1b2c3, (guint16) t);
      want[62] = 0; /* lap 0 */
      want[63] = MLX5_CQE_RESP_SEND << 4;
      bytes_equal (title, want, 0, 64, "title (full CQE)", t);
      written[t] = TRUE;
      guint32 idx = t + 1;
      for (guint i = 1; i < counts[s];) {
        guint k = MIN (7, counts[s] - i);
        memset (want, 0, 64);
        for (guint j = 0; j < k; j++)
          put_be (want, 8 * j, 8, zmini (0xa1b2c3, (guint16) (t + i + j), 1, 60));
        want[62] = 0;
        want[63] = (guint8) ((k - 1) << 4 | MLX5_COMPRESSED << 2);
        bytes_equal (ring + idx * 64, want, 0, 64, "compressed CQE", idx);
        written[idx] = TRUE;
        idx += k;
        i += k;
      }
      g_assert_cmpuint (idx, ==, t + counts[s]);
    }
  }
  for (guint i = 0; i < 128; i++)
    for (guint b = 0; !written[i] && b < 64; b++)
      g_assert_cmphex (ring[i * 64 + b], ==, 0xff);
  /* and the packets are where the mini-CQEs say */
  for (guint i = 0; i < 66; i++) {
    const guint8 *at = buf + i * 64;
    tu_frame_build (frame, &fs, i);
    g_assert_cmpmem (at, 60, frame, 60);
  }

  emu_port_ops.flows_set (dev, 1, NULL, 0, NULL, 0, &error);
  emu_port_ops.rq_destroy (dev, &rq);
  emu_port_ops.cq_destroy (dev, &cq);
  emu_port_ops.mr_dereg (dev, mr);
  emu_port_ops.close (dev);
  g_aligned_free (rq.wqes);
  g_free ((gpointer) rq.dbrec);
  g_aligned_free (buf);
  g_aligned_free (ring);
  g_free (cq_db);
}

static void
test_emu_bytes (void)
{
  check_emu_bytes (MLX5_CQ_COMP_BASIC);
  check_emu_bytes (MLX5_CQ_COMP_ENHANCED);
}

/* A received packet, for the round trips: where it lies, what it says, its bytes. */
typedef struct {
  guint32 seq;
  guint32 wqe, pos; /* ring slot of its WQE, byte offset in the WQE's region */
  guint32 len, flow, flags;
  guint64 ts;
} RtPkt;

typedef struct {
  GArray *pkts;
  Mlx5RxCounters c;
  EmuCounters ec;
  gsize cq_bytes;
} RtRun;

#define RT_ROUNDS 12
#define RT_FRAMES 150
#define RT_ERROR_ROUND 3
#define RT_ERROR_AT 70

static const guint rt_lens[] = { 60, 64, 65, 128, 200, 300, 60, 60, 60, 60, 1000, 60, 60, 70 };

/* frame i of a round: its length, UDP destination port (5000, 6000, 7000 in runs of 5)
 * and checksums (every 17th is wrong: another kind of completion) */
static void
rt_frame (guint8 *frame, guint32 seq, guint i, guint *len)
{
  static const guint16 dports[3] = { 5000, 6000, 7000 };
  TuFrameSpec fs = { .len = rt_lens[i % G_N_ELEMENTS (rt_lens)],
    .proto = TU_PROTO_UDP,
    .src = 0x0a000001,
    .dst = 0x0a000002,
    .sport = 1000,
    .dport = dports[(i / 5) % 3],
    .good_csums = i % 17 != 16 };
  tu_frame_build (frame, &fs, seq);
  *len = fs.len;
}

/* Takes every completion of the queue until it is empty and out of the error state: each
 * packet checked against the frame sent, recorded, its burst given back. */
static void
rt_drain (Mlx5Rxq *q, guint8 **frames, guint32 first_seq, GArray *out)
{
  DqPacket pkts[64];
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  for (;;) {
    g_assert_cmpint (g_get_monotonic_time (), <, deadline);
    mlx5_rxq_refill (q);
    Mlx5RxBurst b = { 0 };
    mlx5_rxq_poll (q, &b, pkts, 64);
    if (b.n_packets == 0) {
      if (!mlx5_rxq_cq_ready (q) && !mlx5_rxq_in_error (q))
        break;
      continue;
    }
    const guint8 *data = mlx5_rxq_burst_data (q, &b);
    for (guint i = 0; i < b.n_packets; i++) {
      guint32 seq = tu_frame_seq (data + pkts[i].offset, pkts[i].length);
      g_assert_cmpuint (seq - first_seq, <, RT_FRAMES);
      g_assert_cmpmem (
          data + pkts[i].offset, pkts[i].length, frames[seq - first_seq], pkts[i].length);
      RtPkt p = { .seq = seq,
        .wqe = b.wqe,
        .pos = b.first_stride * mlx5_rxq_stride_size (q) + pkts[i].offset,
        .len = pkts[i].length,
        .flow = pkts[i].flow_id,
        .flags = pkts[i].flags,
        .ts = pkts[i].timestamp };
      g_array_append_val (out, p);
    }
    mlx5_rxq_release (q, b.wqe, b.strides);
  }
}

/* RT_ROUNDS rounds of RT_FRAMES frames through the port's cable into one RQ (64-byte
 * strides, 64 a WQE, 64 WQEs) whose CQ compresses as `comp` says: each round sent while
 * the device is stalled, so that it leaves back to back in one device pass; in round
 * RT_ERROR_ROUND frame RT_ERROR_AT completes with an error (the rest of the pass is lost,
 * the host recovers the RQ). */
static void
rt_run (Mlx5CqComp comp, RtRun *run)
{
  Rig r;
  char *spec = g_strdup_printf ("zrt%u,pause=off", comp);
  rig_open (&r, spec);
  g_free (spec);
  Mlx5RxGeometry geo = { .log_stride_size = 6, .log_strides = 6, .log_wqes = 6, .log_cq_size = 12 };
  mlx5_rx_geometry_compress (&geo, comp);
  GError *error = NULL;
  Mlx5Rxq *q = mlx5_rxq_new (&emu_port_ops, r.dev, &r.caps, &geo, &error);
  g_assert_no_error (error);
  r.rx[r.n_rx++] = q;
  DqFlowRule rules[3] = {
    { .keys = DQ_FLOW_PROTO | DQ_FLOW_DST_PORT | DQ_FLOW_MARK,
        .proto = 17,
        .dst_port = 5000,
        .mark = 0x123456 },
    { .keys = DQ_FLOW_DST_PORT | DQ_FLOW_MARK, .dst_port = 6000, .mark = 0xa5b6c7 },
    { .keys = DQ_FLOW_MARK, .mark = 0x000001 },
  };
  rig_steer (&r, 1, rules, 3);
  rig_tx (&r, 512 * 1024, 1518, FALSE);

  guint8 *frames[RT_FRAMES];
  guint32 lens[RT_FRAMES];
  for (guint i = 0; i < RT_FRAMES; i++)
    frames[i] = g_malloc (1518);
  run->pkts = g_array_new (FALSE, FALSE, sizeof (RtPkt));
  for (guint round = 0; round < RT_ROUNDS; round++) {
    guint32 first = round * RT_FRAMES;
    for (guint i = 0; i < RT_FRAMES; i++) {
      guint len;
      rt_frame (frames[i], first + i, i, &len);
      lens[i] = len;
    }
    emu_port_fault_stall (r.port, TRUE);
    if (round == RT_ERROR_ROUND)
      emu_port_fault_rx_error (r.port, RT_ERROR_AT, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
    send_all (r.tx, frames, lens, RT_FRAMES);
    emu_port_fault_stall (r.port, FALSE);
    wait_idle (&r);
    rt_drain (q, frames, first, run->pkts);
  }
  mlx5_rxq_counters (q, &run->c);
  emu_port_counters (r.port, &run->ec);
  run->cq_bytes = mlx5_rxq_cq_bytes (q);
  for (guint i = 0; i < RT_FRAMES; i++)
    g_free (frames[i]);
  rig_close (&r);
}

/* the time of frame i of a round from the round's first: back to back at 100 Gb/s */
static guint64
rt_wire (guint i)
{
  guint lens[RT_FRAMES];
  for (guint k = 0; k < RT_FRAMES; k++)
    lens[k] = rt_lens[k % G_N_ELEMENTS (rt_lens)];
  return tu_wire_ticks (
      lens, i, 24, G_GUINT64_CONSTANT (1000000000), G_GUINT64_CONSTANT (100000000000));
}

/* Every packet's time: exactly the line-rate model's from its round's first packet, or,
 * with compression (`shared`), that of the packet before it (its title's, or a packet of
 * the same title's); returns how many took another's time. */
static guint
rt_check_times (const RtRun *run, gboolean shared)
{
  guint64 t0 = 0;
  guint others = 0;
  for (guint k = 0; k < run->pkts->len; k++) {
    const RtPkt *p = &g_array_index (run->pkts, RtPkt, k);
    guint i = p->seq % RT_FRAMES;
    if (i == 0)
      t0 = p->ts; /* a round's first packet: a full CQE or a basic title's own time */
    if (p->ts == t0 + rt_wire (i))
      continue;
    g_assert_true (shared);
    g_assert_cmpuint (k, >, 0);
    g_assert_cmpuint (p->ts, ==, g_array_index (run->pkts, RtPkt, k - 1).ts);
    others++;
  }
  return others;
}

/* The same frames through an uncompressed CQ and through a basic and an enhanced
 * compressed one: the same packets (sequence, bytes, WQE, place, length, flow tag,
 * flags), the same counters, times exact or the title's, a CQ of a quarter. */
static void
test_round_trip (void)
{
  RtRun off, on[2];
  rt_run (MLX5_CQ_COMP_NONE, &off);
  rt_run (MLX5_CQ_COMP_BASIC, &on[0]);
  rt_run (MLX5_CQ_COMP_ENHANCED, &on[1]);

  /* every frame but the failed one and the rest of its pass */
  guint want = RT_ROUNDS * RT_FRAMES - (RT_FRAMES - RT_ERROR_AT);
  g_assert_cmpuint (off.pkts->len, ==, want);
  g_assert_cmpuint (off.c.compressed, ==, 0);
  g_assert_cmpuint (rt_check_times (&off, FALSE), ==, 0);
  g_assert_cmpuint (off.cq_bytes, ==, 64 * 64 * 64); /* a CQE a stride */
  for (guint l = 0; l < 2; l++) {
    RtRun *o = &on[l];
    g_assert_cmpuint (o->pkts->len, ==, off.pkts->len);
    for (guint k = 0; k < off.pkts->len; k++) {
      const RtPkt *a = &g_array_index (off.pkts, RtPkt, k);
      const RtPkt *b = &g_array_index (o->pkts, RtPkt, k);
      if (a->seq != b->seq || a->wqe != b->wqe || a->pos != b->pos || a->len != b->len ||
          a->flow != b->flow || a->flags != b->flags)
        g_error ("layout %u, packet %u: seq %u/%u wqe %u/%u pos %u/%u len %u/%u flow 0x%x/0x%x "
                 "flags 0x%x/0x%x",
            l, k, a->seq, b->seq, a->wqe, b->wqe, a->pos, b->pos, a->len, b->len, a->flow, b->flow,
            a->flags, b->flags);
    }
    g_assert_cmpuint (o->c.packets, ==, off.c.packets);
    g_assert_cmpuint (o->c.bytes, ==, off.c.bytes);
    g_assert_cmpuint (o->c.fillers, ==, off.c.fillers);
    g_assert_cmpuint (o->c.cqe_errors, ==, 1);
    g_assert_cmpuint (o->c.recoveries, ==, 1);
    g_assert_cmpuint (o->c.device_errors, ==, 0);
    /* flush completions: one per WQE posted when the error came, fewer with the window */
    g_assert_cmpuint (o->c.flushed, >=, 1);
    g_assert_cmpuint (o->c.compressed, >, want / 4);
    guint others = rt_check_times (o, TRUE);
    g_assert_cmpuint (others, >, 0);
    g_assert_cmpuint (others, <=, o->c.compressed);
    if (l == 1) /* enhanced: every mini-CQE's packet has its title's time */
      g_assert_cmpuint (others, ==, o->c.compressed);
    g_assert_cmpuint (o->ec.rx_packets, ==, off.ec.rx_packets);
    g_assert_cmpuint (o->ec.rx_fillers, ==, off.ec.rx_fillers);
    g_assert_cmpuint (o->ec.rx_cqe_errors, ==, 1);
    g_assert_cmpuint (o->ec.rx_out_of_buffer, ==, off.ec.rx_out_of_buffer);
    g_assert_cmpuint (o->ec.rx_cq_overruns, ==, 0);
    g_assert_cmpuint (o->cq_bytes * 4, ==, off.cq_bytes);
    g_array_free (o->pkts, TRUE);
  }
  g_assert_cmpuint (off.c.packets, ==, want);
  g_assert_cmpuint (off.c.fillers, >, RT_ROUNDS);
  g_assert_cmpuint (off.ec.rx_cq_overruns, ==, 0);
  g_array_free (off.pkts, TRUE);
}

/* The engine key: values, its errors, the CQ it gives at the default ring, and packets
 * through it with the generator. */
static void
test_engine_key (void)
{
  GError *error = NULL;
  g_assert_null (dq_port_open ("emu:zk0,cqe-comp=maybe", &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_CONFIG);
  g_assert_cmpstr (error->message, ==,
      "emu:zk0: cqe-comp=maybe is not allowed (allowed: off or 0, on or 1, basic, enhanced)");
  g_clear_error (&error);

  static const struct {
    const char *device;
    gsize cq_bytes; /* at the default 64 MiB ring of 64-byte strides */
    gboolean compressed;
  } cases[] = {
    { "emu:zk1", 64u << 20, FALSE },
    { "emu:zk2,cqe-comp=off", 64u << 20, FALSE },
    { "emu:zk3,cqe-comp=on", 16u << 20, TRUE },
    { "emu:zk4,cqe-comp=1", 16u << 20, TRUE },
    { "emu:zk5,cqe-comp=basic", 16u << 20, TRUE },
    { "emu:zk6,cqe-comp=enhanced", 16u << 20, TRUE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    char *device = g_strdup_printf ("%s,gen=128,gen-count=20000,gen-lossless=on", cases[i].device);
    DqPort *port = dq_port_open (device, &error);
    g_assert_no_error (error);
    DqRxConfig cfg = { .burst_packets = 256,
      .burst_timeout_ns = 1000000,
      .max_packet_size = 1518,
      .n_queues = 1,
      .group_id = 0x7700 + i };
    DqRxQueue *rxq = dq_rxq_create (port, &cfg, &error);
    g_assert_no_error (error);
    guint64 got = 0;
    guint32 next = 0;
    gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
    while (got < 20000) {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      DqBurst b;
      int r = dq_rxq_poll (rxq, &b, 1000000, &error);
      g_assert_no_error (error);
      if (r == 0)
        continue;
      for (guint k = 0; k < b.n_packets; k++) {
        const guint8 *f = b.data + b.packets[k].offset;
        g_assert_cmpuint (b.packets[k].length, ==, 128);
        guint32 seq = (guint32) f[42] << 24 | (guint32) f[43] << 16 | (guint32) f[44] << 8 | f[45];
        g_assert_cmpuint (seq, ==, next);
        next++;
      }
      got += b.n_packets;
      dq_rxq_release (rxq, &b);
    }
    DqRxStats st;
    dq_rxq_stats (rxq, &st);
    g_assert_cmpuint (st.packets, ==, 20000);
    g_assert_cmpuint (st.cq_bytes, ==, cases[i].cq_bytes);
    if (cases[i].compressed)
      g_assert_cmpuint (st.compressed, >, 0);
    else
      g_assert_cmpuint (st.compressed, ==, 0);
    dq_rxq_destroy (rxq);

    /* header-data split keeps one full CQE per packet */
    DqRxConfig split = cfg;
    split.header_size = 42;
    split.ring_bytes = 1 << 20;
    split.group_id += 0x100;
    rxq = dq_rxq_create (port, &split, &error);
    g_assert_no_error (error);
    dq_rxq_stats (rxq, &st);
    /* payload slots of 1536 bytes (1518 - 42 rounded up to 64): 682 in 1 MiB, 512 taken,
     * one full CQE each */
    g_assert_cmpuint (st.cq_bytes, ==, 64u * 512);
    g_assert_cmpuint (st.compressed, ==, 0);
    dq_rxq_destroy (rxq);
    dq_port_unref (port);
    g_free (device);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5/cqe-comp/geometry", test_geometry);
  g_test_add_func ("/mlx5/cqe-comp/basic-layout", test_basic_layout);
  g_test_add_func ("/mlx5/cqe-comp/enhanced-layout", test_enhanced_layout);
  g_test_add_func ("/mlx5/cqe-comp/wrap", test_wrap);
  g_test_add_func ("/mlx5/cqe-comp/enhanced-scrub", test_enhanced_scrub);
  g_test_add_func ("/mlx5/cqe-comp/malformed-basic", test_malformed_basic);
  g_test_add_func ("/mlx5/cqe-comp/malformed-enhanced", test_malformed_enhanced);
  g_test_add_func ("/mlx5/cqe-comp/window", test_window);
  g_test_add_func ("/mlx5/cqe-comp/emu-bytes", test_emu_bytes);
  g_test_add_func ("/mlx5/cqe-comp/round-trip", test_round_trip);
  g_test_add_func ("/mlx5/cqe-comp/engine-key", test_engine_key);
  return g_test_run ();
}
