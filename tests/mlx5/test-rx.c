/* Host RX ring (mlx5/rx.c) against a device played by the test itself: CQEs written by
 * hand, byte for byte as the PRM lays them out, including malformed ones the emulated
 * ConnectX never writes. The test's device (MiniDev, on the port of mini-port.h) is
 * deliberately minimal and independent of mlx5/emu: it reads the WQEs and doorbell
 * record the host wrote and fills strides in order, with filler CQEs at the end of a
 * WQE.
 */
#include "mini-port.h"
#include "mlx5-mem.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------- */
/* a device played by the test */

#define TEST_LKEY 0x00abcd01u

/* the port, and where the device is in the RQ */
typedef struct {
  MiniPort port;
  guint32 hw_wqe; /* WQE counter the device fills */
  guint32 hw_stride;
  guint64 oob; /* packets without a posted WQE */
} MiniDev;

static void
mini_init (MiniDev *d)
{
  memset (d, 0, sizeof *d);
  mini_port_init (&d->port, TEST_LKEY);
}

/* a raw CQE (any values, for malformed input) */
static void
mini_cqe_raw (MiniDev *d, guint8 opcode, guint16 wqe_id, guint16 stride, guint32 byte_cnt,
    guint64 ts, guint32 tag, guint8 hds_ip_ext, guint8 l4_l3)
{
  volatile struct mlx5_cqe64 *cqe = mini_port_cqe_next (&d->port);
  cqe->wqe_id = htobe16 (wqe_id);
  cqe->wqe_counter = htobe16 (stride);
  cqe->byte_cnt = htobe32 (byte_cnt);
  cqe->timestamp = htobe64 (ts);
  cqe->sop_drop_qpn = htobe32 (tag);
  cqe->hds_ip_ext = hds_ip_ext;
  cqe->l4_hdr_type_etc = l4_l3;
  mini_port_cqe_publish (&d->port, cqe, opcode);
}

static guint32
mini_posted (MiniDev *d)
{
  guint32 pi = be32toh (d->port.rq->dbrec[MLX5_RCV_DBR]) & 0xffff;
  return (pi - d->hw_wqe) & 0xffff;
}

static guint32
mini_strides (MiniDev *d)
{
  return 1u << d->port.rq->log_strides;
}

static void
mini_wqe_done_if_full (MiniDev *d)
{
  if (d->hw_stride == mini_strides (d)) {
    d->hw_wqe++;
    d->hw_stride = 0;
  }
}

/* Receives one frame of `len` bytes filled with `fill`: the way the PRM says a striding
 * RQ does. Returns FALSE (and counts) when no posted WQE has room. */
static gboolean
mini_rx (MiniDev *d, guint len, guint8 fill, guint64 ts, guint32 tag)
{
  guint32 stride_size = 1u << d->port.rq->log_stride_size;
  guint32 need = (len + stride_size - 1) / stride_size;

  if (mini_posted (d) == 0) {
    d->oob++;
    return FALSE;
  }
  if (d->hw_stride + need > mini_strides (d)) {
    guint32 left = mini_strides (d) - d->hw_stride;
    mini_cqe_raw (d, MLX5_CQE_RESP_SEND, d->hw_wqe & ((1u << d->port.rq->log_wqes) - 1),
        (guint16) d->hw_stride, MLX5_MPRQ_FILLER_FLAG | (left << 16), 0, 0, 0, 0);
    d->hw_stride += left;
    mini_wqe_done_if_full (d);
    if (mini_posted (d) == 0) {
      d->oob++;
      return FALSE;
    }
  }
  guint32 slot = d->hw_wqe & ((1u << d->port.rq->log_wqes) - 1);
  const struct mlx5_mprq_wqe *wqe =
      (const struct mlx5_mprq_wqe *) (d->port.rq->wqes + (gsize) slot * 32);
  g_assert_cmpuint (be32toh (wqe->dseg.lkey), ==, TEST_LKEY);
  g_assert_cmpuint (be32toh (wqe->dseg.byte_count), ==, mini_strides (d) * stride_size);
  guint8 *region = (guint8 *) (uintptr_t) be64toh (wqe->dseg.addr);
  g_assert_true (region >= d->port.mr_addr &&
      region + mini_strides (d) * stride_size <= d->port.mr_addr + d->port.mr_size);
  memset (region + (gsize) d->hw_stride * stride_size, fill, len);
  mini_cqe_raw (d, MLX5_CQE_RESP_SEND, (guint16) slot, (guint16) d->hw_stride, (need << 16) | len,
      ts, tag, MLX5_CQE_L2_OK | MLX5_CQE_L3_OK | MLX5_CQE_L4_OK,
      (MLX5_CQE_L4_HDR_TYPE_UDP << 4) | (MLX5_CQE_L3_HDR_TYPE_IPV4 << 2));
  d->hw_stride += need;
  mini_wqe_done_if_full (d);
  return TRUE;
}

static Mlx5Rxq *
rxq_new_small (MiniDev *d, guint log_stride, guint log_strides, guint log_wqes)
{
  return mini_rxq_new (
      &mini_port_ops, &d->port, &mini_port_caps, log_stride, log_strides, log_wqes);
}

/* the host re-posted `reposts` WQEs, and the device never contradicted the ring */
static void
assert_reposts (Mlx5Rxq *q, guint64 reposts)
{
  Mlx5RxCounters c;
  mlx5_rxq_counters (q, &c);
  g_assert_cmpuint (c.reposts, ==, reposts);
  g_assert_cmpuint (c.device_errors, ==, 0);
}

/* The burst holds one packet, at WQE `wqe` from stride `stride`, of `len` bytes that end
 * in `last`. */
static void
assert_one_packet (Mlx5Rxq *q, Mlx5RxBurst *b, const DqPacket *p, guint16 wqe, guint32 stride,
    guint32 len, guint8 last)
{
  g_assert_cmpuint (b->n_packets, ==, 1);
  g_assert_cmpuint (b->wqe, ==, wqe);
  g_assert_cmpuint (b->first_stride, ==, stride);
  g_assert_cmpuint (p[0].length, ==, len);
  g_assert_cmpuint (mlx5_rxq_burst_data (q, b)[len - 1], ==, last);
}

/* Polls the next burst of up to `max` packets into *b and pkts: FALSE once the CQ has
 * none. */
static gboolean
next_burst (Mlx5Rxq *q, Mlx5RxBurst *b, DqPacket *pkts, guint max)
{
  *b = (Mlx5RxBurst){ 0 };
  mlx5_rxq_poll (q, b, pkts, max);
  return b->n_packets > 0;
}

/* ---------------------------------------------------------------------------------- */

/* the geometry chosen on the port of `caps` for a ring of `ring` bytes (0: the default),
 * frames of up to `max_packet` bytes, and `stride` and `strides` (0: chosen); it must be
 * allowed */
static Mlx5RxGeometry
geometry (const Mlx5Caps *caps, gsize ring, guint max_packet, guint stride, guint strides)
{
  Mlx5RxGeometry geo;
  GError *error = NULL;
  g_assert_true (
      mlx5_rx_geometry_choose (caps, "t", ring, max_packet, stride, strides, &geo, &error));
  g_assert_no_error (error);
  return geo;
}

/* the same choice on device `name` must be refused with a configuration error that says
 * `says`, and `also` where not NULL */
static void
expect_geometry_refused (const Mlx5Caps *caps, const char *name, gsize ring, guint max_packet,
    guint stride, guint strides, const char *says, const char *also)
{
  Mlx5RxGeometry geo;
  GError *error = NULL;
  g_assert_false (
      mlx5_rx_geometry_choose (caps, name, ring, max_packet, stride, strides, &geo, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message, says));
  if (also != NULL)
    g_assert_nonnull (strstr (error->message, also));
  g_clear_error (&error);
}

static void
test_geometry (void)
{
  /* defaults: 64-byte strides (a 1518-byte frame takes 24), 512 per WQE (32 KiB), 2048
   * WQEs in 64 MiB, CQ 2^20 */
  Mlx5RxGeometry geo = geometry (&mini_port_caps, 0, 1518, 0, 0);
  g_assert_cmpuint (geo.log_stride_size, ==, 6);
  g_assert_cmpuint (geo.log_strides, ==, 9);
  g_assert_cmpuint (geo.log_wqes, ==, 11);
  g_assert_cmpuint (geo.log_cq_size, ==, 20);

  static const struct {
    gsize ring;
    guint max_packet, stride;
    guint log_stride_size, log_strides, log_wqes;
  } cases[] = {
    /* a 100 MB ring rounds down to a power of two: 95 MiB / 32 KiB = 3051 -> 2048 */
    { 100000000, 100, 0, 6, 9, 11 },
    /* a stride given: 128 bytes; 95 MiB / 64 KiB = 1525 -> 1024 */
    { 100000000, 100, 128, 7, 9, 10 },
    /* jumbo frames span strides: 9018 bytes need 141 of 64 -> still 512 per WQE; 65535
     * bytes need 1024 (64 KiB WQEs: 1024 in 64 MiB) */
    { 0, 9018, 0, 6, 9, 11 },
    { 0, 65535, 0, 6, 10, 10 },
    /* a small ring lowers the strides per WQE to keep 4 WQEs (256 of 64 bytes) */
    { 65536, 1518, 0, 6, 8, 2 },
    /* ... down to the device minimum (2 KiB strides: 8 per WQE) */
    { 65536, 1518, 2048, 11, 3, 2 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    geo = geometry (&mini_port_caps, cases[i].ring, cases[i].max_packet, cases[i].stride, 0);
    g_assert_cmpuint (geo.log_stride_size, ==, cases[i].log_stride_size);
    g_assert_cmpuint (geo.log_strides, ==, cases[i].log_strides);
    g_assert_cmpuint (geo.log_wqes, ==, cases[i].log_wqes);
    g_assert_cmpuint (geo.log_cq_size, ==, geo.log_strides + geo.log_wqes);
  }

  /* the CQ limit caps the WQE count */
  Mlx5Caps caps = mini_port_caps;
  caps.max_log_cq_size = 12;
  geo = geometry (&caps, 0, 1518, 0, 0);
  g_assert_cmpuint (geo.log_wqes + geo.log_strides, ==, 12);
  g_assert_cmpuint (geo.log_cq_size, ==, 12);
  /* ... but a ring-size asked for is refused, not cut (64 MiB needs 2^20 CQEs) */
  expect_geometry_refused (&caps, "emu:t", 64 << 20, 1518, 0, 0,
      "emu:t: ring-size 67108864 is more than one receive queue holds with 512 strides of 64 "
      "bytes per WQE: at most 8 WQEs (the device's CQ limit) (allowed: ring-size <= 262144, "
      "or a larger stride=N in the device string)",
      NULL);
  /* and the RQ's own limit of 2^15 WQEs: 1 GiB of 32 KiB regions (with a CQ of 2^24) */
  caps.max_log_cq_size = 24;
  geo = geometry (&caps, 1u << 30, 1518, 0, 0);
  g_assert_cmpuint (geo.log_wqes, ==, 15);
  expect_geometry_refused (
      &caps, "t", 2u << 30, 1518, 0, 0, "at most 32768 WQEs (the RQ's WQE limit)", NULL);

  /* errors name the value and what is allowed */
  expect_geometry_refused (&mini_port_caps, "emu:t", 0, 1518, 100, 0,
      "emu:t: stride 100 is not allowed "
      "(allowed: a power of two 64 .. 8192)",
      NULL);
  expect_geometry_refused (&mini_port_caps, "t", 0, 1518, 2048, 5,
      "strides 5 per WQE is not allowed "
      "(allowed: a power of two 8 .. 65536)",
      NULL);
  expect_geometry_refused (&mini_port_caps, "t", 0, 9018, 1024, 8,
      "cannot hold max-packet-size 9018 "
      "(allowed: strides >= 16)",
      NULL);
  /* 4 WQEs of 32 strides (a 1518-byte frame needs 24) of 64 bytes */
  expect_geometry_refused (&mini_port_caps, "t", 4096, 1518, 0, 0, "ring-size 4096 is too small",
      "(allowed: ring-size >= 8192)");
  expect_geometry_refused (&mini_port_caps, "t", 0, 70000, 0, 0,
      "max-packet-size 70000 is out of range "
      "(allowed 1 .. 65535)",
      NULL);
}

/* the WQEs the host posts, the doorbell record, and a first burst */
static void
test_post_and_poll (void)
{
  MiniDev d;
  mini_init (&d);
  d.port.clock.nsec = 5000;
  d.port.clock.last_cycles = 1000;
  Mlx5Rxq *q = rxq_new_small (&d, 6, 4, 2); /* 64-byte strides, 16 per WQE, 4 WQEs */

  g_assert_true (d.port.mr_registered);
  g_assert_cmpuint (d.port.mr_size, ==, 4 * 16 * 64);
  g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, 4);
  for (guint i = 0; i < 4; i++) {
    const guint8 *w = d.port.rq->wqes + i * 32;
    for (guint b = 0; b < 16; b++)
      g_assert_cmpuint (w[b], ==, 0); /* next segment left zero */
    const struct mlx5_wqe_data_seg *ds = (const struct mlx5_wqe_data_seg *) (w + 16);
    g_assert_cmpuint (be32toh (ds->byte_count), ==, 1024);
    g_assert_cmpuint (be32toh (ds->lkey), ==, TEST_LKEY);
    g_assert_cmpuint (be64toh (ds->addr), ==, (guint64) (uintptr_t) (d.port.mr_addr + i * 1024));
  }

  Mlx5RxBurst b = { 0 };
  DqPacket pkts[8];
  g_assert_false (mlx5_rxq_cq_ready (q));
  g_assert_false (mlx5_rxq_poll (q, &b, pkts, 8));
  g_assert_cmpuint (b.n_packets, ==, 0);

  g_assert_true (mini_rx (&d, 60, 0xa1, 1010, 0x123456));
  g_assert_true (mini_rx (&d, 100, 0xa2, 1020, 7));           /* 2 strides */
  g_assert_true (mini_rx (&d, 64, 0xa3, 990, 0x1000000 | 9)); /* before the snapshot */
  g_assert_true (mlx5_rxq_cq_ready (q));
  g_assert_false (mlx5_rxq_poll (q, &b, pkts, 8)); /* CQ ran dry, WQE not used up */
  g_assert_cmpuint (b.n_packets, ==, 3);
  g_assert_cmpuint (b.wqe, ==, 0);
  g_assert_cmpuint (b.first_stride, ==, 0);
  g_assert_cmpuint (b.strides, ==, 4);
  g_assert_cmpuint (pkts[0].offset, ==, 0);
  g_assert_cmpuint (pkts[0].length, ==, 60);
  g_assert_cmpuint (pkts[1].offset, ==, 64);
  g_assert_cmpuint (pkts[1].length, ==, 100);
  g_assert_cmpuint (pkts[2].offset, ==, 192);
  g_assert_cmpuint (pkts[2].length, ==, 64);
  g_assert_cmpuint (pkts[0].flow_id, ==, 0x123456);
  g_assert_cmpuint (pkts[1].flow_id, ==, 7);
  g_assert_cmpuint (pkts[2].flow_id, ==, 9); /* only the 24-bit tag */
  g_assert_cmpuint (pkts[0].timestamp, ==, 5010);
  g_assert_cmpuint (pkts[1].timestamp, ==, 5020);
  g_assert_cmpuint (pkts[2].timestamp, ==, 4990);
  g_assert_cmpuint (pkts[0].flags, ==, DQ_PACKET_FLAG_TS_HW | DQ_PACKET_FLAG_CSUM_OK);
  guint8 *data = mlx5_rxq_burst_data (q, &b);
  g_assert_true (data == d.port.mr_addr);
  g_assert_cmpuint (mlx5_rxq_burst_size (q, &b), ==, 192 + 64);
  g_assert_cmpuint (data[0], ==, 0xa1);
  g_assert_cmpuint (data[59], ==, 0xa1);
  g_assert_cmpuint (data[64], ==, 0xa2);
  g_assert_cmpuint (data[163], ==, 0xa2);
  g_assert_cmpuint (data[192 + 63], ==, 0xa3);
  /* CQ doorbell record: consumer index after the poll */
  g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, 3);

  /* the burst continues with the next packet of the same WQE */
  g_assert_true (mini_rx (&d, 64, 0xa4, 1030, 0));
  g_assert_false (mlx5_rxq_poll (q, &b, pkts, 8));
  g_assert_cmpuint (b.n_packets, ==, 4);
  g_assert_cmpuint (pkts[3].offset, ==, 256);
  g_assert_cmpuint (b.strides, ==, 5);

  /* max packets completes a burst */
  Mlx5RxBurst b2 = { 0 };
  g_assert_true (mini_rx (&d, 64, 0xa5, 1040, 0));
  g_assert_true (mini_rx (&d, 64, 0xa6, 1050, 0));
  g_assert_true (mlx5_rxq_poll (q, &b2, pkts, 1));
  g_assert_cmpuint (b2.n_packets, ==, 1);
  g_assert_cmpuint (b2.first_stride, ==, 5);
  g_assert_cmpuint (mlx5_rxq_burst_data (q, &b2)[0], ==, 0xa5);

  Mlx5RxCounters c;
  mlx5_rxq_counters (q, &c);
  g_assert_cmpuint (c.packets, ==, 5);
  g_assert_cmpuint (c.bytes, ==, 60 + 100 + 64 + 64 + 64);
  mlx5_rxq_free (q);
  g_assert_false (d.port.mr_registered);
}

/* checksum flags from hds_ip_ext and the L4 type */
static void
test_csum_flags (void)
{
  MiniDev d;
  mini_init (&d);
  Mlx5Rxq *q = rxq_new_small (&d, 6, 4, 2);
  const struct {
    guint8 ok, l4;
    guint32 flags;
  } cases[] = {
    { MLX5_CQE_L2_OK | MLX5_CQE_L3_OK | MLX5_CQE_L4_OK, MLX5_CQE_L4_HDR_TYPE_UDP,
        DQ_PACKET_FLAG_CSUM_OK },
    { MLX5_CQE_L2_OK | MLX5_CQE_L3_OK, MLX5_CQE_L4_HDR_TYPE_UDP, 0 },
    { MLX5_CQE_L2_OK | MLX5_CQE_L4_OK, MLX5_CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA, 0 },
    { MLX5_CQE_L2_OK | MLX5_CQE_L3_OK | MLX5_CQE_L4_OK, MLX5_CQE_L4_HDR_TYPE_TCP_NO_ACK,
        DQ_PACKET_FLAG_CSUM_OK },
    { MLX5_CQE_L2_OK | MLX5_CQE_L3_OK, MLX5_CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA, 0 },
    { MLX5_CQE_L2_OK | MLX5_CQE_L3_OK, MLX5_CQE_L4_HDR_TYPE_NONE, DQ_PACKET_FLAG_CSUM_OK },
    { MLX5_CQE_L2_OK, MLX5_CQE_L4_HDR_TYPE_NONE, 0 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    mini_cqe_raw (&d, MLX5_CQE_RESP_SEND, 0, (guint16) i, (1u << 16) | 60, 0, 0, cases[i].ok,
        (guint8) (cases[i].l4 << 4));
  Mlx5RxBurst b = { 0 };
  DqPacket pkts[8];
  mlx5_rxq_poll (q, &b, pkts, 8);
  g_assert_cmpuint (b.n_packets, ==, G_N_ELEMENTS (cases));
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    g_assert_cmpuint (pkts[i].flags, ==, DQ_PACKET_FLAG_TS_HW | cases[i].flags);
  mlx5_rxq_free (q);
}

/* filler CQEs end a WQE (and a burst); WQEs are re-posted strictly in ring order */
static void
test_filler_and_ring_order (void)
{
  MiniDev d;
  mini_init (&d);
  Mlx5Rxq *q = rxq_new_small (&d, 6, 4, 2); /* 16 strides per WQE */
  Mlx5RxBurst b0 = { 0 }, b1 = { 0 };
  DqPacket p0[32], p1[32];

  /* 7 packets of 2 strides = 14 strides; the 8th (3 strides) does not fit: filler of 2 */
  for (guint i = 0; i < 7; i++)
    g_assert_true (mini_rx (&d, 128, (guint8) i, 0, 0));
  g_assert_true (mini_rx (&d, 150, 0x77, 0, 0));
  g_assert_true (mlx5_rxq_poll (q, &b0, p0, 32)); /* complete: the WQE is used up */
  g_assert_cmpuint (b0.n_packets, ==, 7);
  g_assert_cmpuint (b0.wqe, ==, 0);
  g_assert_cmpuint (b0.strides, ==, 14);
  g_assert_false (mlx5_rxq_poll (q, &b1, p1, 32));
  assert_one_packet (q, &b1, p1, 1, 0, 150, 0x77);
  Mlx5RxCounters c;
  mlx5_rxq_counters (q, &c);
  g_assert_cmpuint (c.fillers, ==, 1);

  /* fill WQE 1 up with single-stride packets */
  for (guint i = 0; i < 13; i++)
    g_assert_true (mini_rx (&d, 64, 0x10, 0, 0));
  g_assert_true (mlx5_rxq_poll (q, &b1, p1, 32));
  g_assert_cmpuint (b1.n_packets, ==, 14);
  g_assert_cmpuint (b1.strides, ==, 16);

  /* releasing WQE 1 first re-posts nothing: WQE 0 is older */
  mlx5_rxq_release (q, b1.wqe, b1.strides);
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 0);
  g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, 4);
  /* a partial release of WQE 0 is not enough */
  mlx5_rxq_release (q, b0.wqe, 10);
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 0);
  mlx5_rxq_release (q, b0.wqe, 4);
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 2); /* WQE 0, then WQE 1 */
  g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, 6);
  assert_reposts (q, 2);
  mlx5_rxq_free (q);
}

/* Many passes over every ring: owner bit parity of the CQ, the 16-bit RQ counter, the
 * 24-bit CQ counter in the doorbell records, bytes of every packet. Held bursts make
 * the device run out of WQEs (counted); releasing them recovers. */
static void
test_wrap_around (void)
{
  MiniDev d;
  mini_init (&d);
  Mlx5Rxq *q = rxq_new_small (&d, 6, 3, 2); /* 8 strides per WQE, 4 WQEs, CQ 32 */
  guint64 sent = 0, received = 0, expected_oob = 0;
  GRand *rand = g_rand_new_with_seed (42);
  guint32 next_check = 0;

  for (guint round = 0; round < 3000; round++) {
    /* the device receives up to 12 frames of 1..4 strides */
    guint n = g_rand_int_range (rand, 1, 13);
    for (guint i = 0; i < n; i++) {
      guint len = g_rand_int_range (rand, 1, 257);
      guint8 fill = (guint8) (sent & 0xff);
      if (mini_rx (&d, len, fill, sent, (guint32) (sent & 0xffffff)))
        sent++;
      else
        expected_oob++;
    }
    /* the host drains the CQ in bursts of up to 5 and releases them all */
    Mlx5RxBurst b;
    DqPacket pkts[5];
    while (next_burst (q, &b, pkts, 5)) {
      guint8 *data = mlx5_rxq_burst_data (q, &b);
      for (guint i = 0; i < b.n_packets; i++) {
        g_assert_cmpuint (pkts[i].timestamp, ==, next_check);
        g_assert_cmpuint (pkts[i].flow_id, ==, next_check & 0xffffff);
        g_assert_cmpuint (data[pkts[i].offset], ==, next_check & 0xff);
        g_assert_cmpuint (data[pkts[i].offset + pkts[i].length - 1], ==, next_check & 0xff);
        g_assert_cmpuint (pkts[i].offset + pkts[i].length, <=, mlx5_rxq_burst_size (q, &b));
        next_check++;
        received++;
      }
      mlx5_rxq_release (q, b.wqe, b.strides);
    }
    mlx5_rxq_refill (q);
    /* doorbell records always say exactly where the host is */
    g_assert_cmpuint (be32toh (d.port.cq->dbrec[0]), ==, d.port.cq_pi & 0xffffff);
  }
  g_assert_cmpuint (received, ==, sent);
  g_assert_cmpuint (d.oob, ==, expected_oob);
  g_assert_cmpuint (d.port.cq_pi, >, 40 * 32); /* the CQ wrapped 40+ times */
  g_assert_cmpuint (d.hw_wqe, >, 1000);

  /* hold everything: the device runs out of WQEs and counts; release: it recovers */
  GArray *held = g_array_new (FALSE, FALSE, sizeof (Mlx5RxBurst));
  guint64 oob_before = d.oob;
  for (guint i = 0; i < 100; i++)
    mini_rx (&d, 64, 0x55, 0, 0);
  Mlx5RxBurst b;
  DqPacket pkts[64];
  while (next_burst (q, &b, pkts, 64))
    g_array_append_val (held, b);
  g_assert_cmpuint (d.oob - oob_before, >=, 100 - 32);
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 0);
  for (guint i = 0; i < held->len; i++) {
    Mlx5RxBurst *h = &g_array_index (held, Mlx5RxBurst, i);
    mlx5_rxq_release (q, h->wqe, h->strides);
  }
  g_array_free (held, TRUE);
  g_assert_cmpuint (mlx5_rxq_refill (q), >=, 3);
  g_assert_true (mini_rx (&d, 64, 0x66, 0, 0));
  mlx5_rxq_free (q);
  g_rand_free (rand);
}

/* the 16-bit counters wrap: wqe_id (ring index) and the RQ doorbell counter */
static void
test_counter_wrap (void)
{
  MiniDev d;
  mini_init (&d);
  Mlx5Rxq *q = rxq_new_small (&d, 6, 3, 2);

  for (guint i = 0; i < 70000 * 8 / 4; i++) {
    g_assert_true (mini_rx (&d, 200, (guint8) i, 0, 0)); /* 4 strides: 2 per WQE */
    Mlx5RxBurst b = { 0 };
    DqPacket pkts[4];
    mlx5_rxq_poll (q, &b, pkts, 4);
    g_assert_cmpuint (b.n_packets, ==, 1);
    g_assert_cmpuint (mlx5_rxq_burst_data (q, &b)[199], ==, (guint8) i);
    mlx5_rxq_release (q, b.wqe, b.strides);
    mlx5_rxq_refill (q);
  }
  g_assert_cmpuint (d.hw_wqe, ==, 70000);
  g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, (70000 + 4) & 0xffff);
  assert_reposts (q, 70000);
  mlx5_rxq_free (q);
}

/* CQEs that contradict the ring are counted and never followed */
static void
test_malformed_cqes (void)
{
  MiniDev d;
  mini_init (&d);
  Mlx5Rxq *q = rxq_new_small (&d, 6, 3, 2); /* 8 strides per WQE */
  Mlx5RxBurst b = { 0 };
  DqPacket pkts[16];
  Mlx5RxCounters c;

  mini_cqe_raw (&d, MLX5_CQE_RESP_SEND, 0xffff, 0, (1u << 16) | 60, 0, 0, 0, 0); /* WQE */
  mini_cqe_raw (&d, MLX5_CQE_RESP_SEND, 0, 0x7fff, (1u << 16) | 60, 0, 0, 0, 0); /* stride */
  mini_cqe_raw (&d, MLX5_CQE_RESP_SEND, 0, 2, (0u << 16) | 60, 0, 0, 0, 0);      /* 0 strides */
  mini_cqe_raw (&d, MLX5_CQE_RESP_SEND, 0, 3, (1u << 16) | 65, 0, 0, 0, 0);      /* too long */
  mini_cqe_raw (&d, MLX5_CQE_RESP_SEND, 0, 4, (1u << 16) | 0, 0, 0, 0, 0);       /* empty */
  mini_cqe_raw (&d, MLX5_CQE_REQ, 0, 5, (1u << 16) | 60, 0, 0, 0, 0);            /* opcode */
  mini_cqe_raw (&d, MLX5_CQE_RESP_SEND, 0, 5, (0x7fffu << 16) | 60, 0, 0, 0, 0); /* past */
  g_assert_false (mlx5_rxq_poll (q, &b, pkts, 16));
  g_assert_cmpuint (b.n_packets, ==, 0);
  mlx5_rxq_counters (q, &c);
  g_assert_cmpuint (c.device_errors, ==, 7);
  g_assert_cmpuint (c.packets, ==, 0);
  /* the cursor moved 1 stride for each, except the opcode one (no strides known) and
   * the last one, which took the rest of the WQE: WQE 0 is complete and re-posted */
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 1);
  g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, 5);

  /* the ring goes on at WQE 1 */
  d.hw_wqe = 1;
  d.hw_stride = 0;
  g_assert_true (mini_rx (&d, 64, 0xee, 0, 0));
  g_assert_false (mlx5_rxq_poll (q, &b, pkts, 16));
  g_assert_cmpuint (b.n_packets, ==, 1);
  g_assert_cmpuint (b.wqe, ==, 1);
  g_assert_cmpuint (mlx5_rxq_burst_data (q, &b)[0], ==, 0xee);
  mlx5_rxq_counters (q, &c);
  g_assert_cmpuint (c.device_errors, ==, 7);
  mlx5_rxq_free (q);
}

/* an error CQE as the device writes it: syndrome, and where it stopped */
static void
mini_err_cqe (MiniDev *d, guint16 wqe, guint16 stride, guint32 strides, guint8 syndrome)
{
  volatile struct mlx5_cqe64 *cqe = mini_port_cqe_next (&d->port);
  volatile struct mlx5_err_cqe *err = (volatile struct mlx5_err_cqe *) cqe;
  cqe->wqe_id = htobe16 (wqe);
  cqe->wqe_counter = htobe16 (stride);
  cqe->byte_cnt = htobe32 (strides << 16);
  err->syndrome = syndrome;
  err->vendor_err_synd = 0x42;
  mini_port_cqe_publish (&d->port, cqe, MLX5_CQE_RESP_ERR);
}

/* The device in ERR (flush_in_error_en): the rest of the current WQE and every posted one
 * completed with flush errors. */
static void
mini_flush (MiniDev *d)
{
  guint32 mask = (1u << d->port.rq->log_wqes) - 1;
  while (mini_posted (d) > 0) {
    mini_err_cqe (d, (guint16) (d->hw_wqe & mask), (guint16) d->hw_stride,
        mini_strides (d) - d->hw_stride, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
    d->hw_wqe++;
    d->hw_stride = 0;
  }
}

/* Error CQEs as hardware has them: counted with their syndrome, their strides given back
 * at once; the RQ then in ERR, every posted WQE flushed, and the host posting nothing until
 * all came back, then recovering the RQ (ERR -> RST -> RDY with the doorbell record at 0)
 * and posting again from ring slot 0. */
static void
test_error_cqe (void)
{
  MiniDev d;
  mini_init (&d);
  Mlx5Rxq *q = rxq_new_small (&d, 6, 3, 2); /* 8 strides per WQE, 4 WQEs */
  Mlx5RxBurst b = { 0 };
  DqPacket pkts[16];
  Mlx5RxCounters c;

  g_assert_true (mini_rx (&d, 64, 0x01, 0, 0));
  /* an error for a 2-stride packet at stride 1; the device stops and flushes */
  mini_err_cqe (&d, 0, 1, 2, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  d.hw_stride += 2;
  mini_flush (&d);                                 /* WQE 0 from stride 3, WQEs 1 .. 3 whole */
  g_assert_true (mlx5_rxq_poll (q, &b, pkts, 16)); /* WQE 0 is used up */
  g_assert_cmpuint (b.n_packets, ==, 1);
  g_assert_cmpuint (b.strides, ==, 1);
  g_assert_true (mlx5_rxq_in_error (q));
  mlx5_rxq_counters (q, &c);
  g_assert_cmpuint (c.cqe_errors, ==, 1);
  g_assert_cmpuint (c.flushed, ==, 1);
  g_assert_cmpuint (c.last_syndrome, ==, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  g_assert_cmpuint (c.last_vendor_syndrome, ==, 0x42);
  /* WQEs 1 .. 3 are not back yet: nothing is posted, nothing recovered */
  mlx5_rxq_release (q, b.wqe, b.strides);
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 0);
  g_assert_cmpuint (d.port.rq_recoveries, ==, 0);

  Mlx5RxBurst b2 = { 0 };
  g_assert_false (mlx5_rxq_poll (q, &b2, pkts, 16));
  g_assert_cmpuint (b2.n_packets, ==, 0);
  mlx5_rxq_counters (q, &c);
  g_assert_cmpuint (c.flushed, ==, 4);
  g_assert_cmpuint (c.cqe_errors, ==, 1); /* flushes are no errors of their own */
  /* all back: ERR -> RST -> RDY with the doorbell record at 0, then slots 0 .. 3 posted */
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 4);
  g_assert_cmpuint (d.port.rq_recoveries, ==, 1);
  g_assert_cmpuint (d.port.rq_dbr_at_reset, ==, 0);
  g_assert_false (mlx5_rxq_in_error (q));
  g_assert_cmpuint (be32toh (d.port.rq->dbrec[MLX5_RCV_DBR]), ==, 4);
  mlx5_rxq_counters (q, &c);
  g_assert_cmpuint (c.recoveries, ==, 1);

  /* the device's counters start again at 0 too: the next packet is at WQE 0, stride 0 */
  d.hw_wqe = 0;
  d.hw_stride = 0;
  g_assert_true (mini_rx (&d, 100, 0x07, 0, 0));
  Mlx5RxBurst b3 = { 0 };
  g_assert_false (mlx5_rxq_poll (q, &b3, pkts, 16));
  assert_one_packet (q, &b3, pkts, 0, 0, 100, 0x07);

  /* an error whose position is wrong gives up the rest of the WQE; recovery again */
  mini_err_cqe (&d, 3, 0, 1, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  d.hw_stride = mini_strides (&d);
  mini_wqe_done_if_full (&d);
  mini_flush (&d);
  g_assert_true (mlx5_rxq_poll (q, &b3, pkts, 16));
  g_assert_cmpuint (b3.n_packets, ==, 1);
  mlx5_rxq_release (q, b3.wqe, b3.strides);
  Mlx5RxBurst b4 = { 0 };
  mlx5_rxq_poll (q, &b4, pkts, 16);
  g_assert_cmpuint (mlx5_rxq_refill (q), ==, 4);
  mlx5_rxq_counters (q, &c);
  g_assert_cmpuint (c.cqe_errors, ==, 2);
  g_assert_cmpuint (c.flushed, ==, 7);
  g_assert_cmpuint (c.recoveries, ==, 2);
  g_assert_cmpuint (c.last_syndrome, ==, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  mlx5_rxq_free (q);
}

/* our clock conversion is rdma-core's mlx5dv_ts_to_ns, value for value */
static void
test_ts_to_ns (void)
{
  GRand *rand = g_rand_new_with_seed (7);
  for (guint i = 0; i < 100000; i++) {
    struct mlx5dv_clock_info ci = {
      .nsec = g_rand_int (rand) * (guint64) 1000 + 1000000000000ull,
      .last_cycles = ((guint64) g_rand_int (rand) << 32) | g_rand_int (rand),
      .frac = g_rand_int_range (rand, 0, 1 << 20),
      .mult = g_rand_int_range (rand, 1 << 20, G_MAXINT32),
      .shift = 28,
      .mask = (i & 1) ? G_MAXUINT64 : ((1ull << 41) - 1),
    };
    Mlx5ClockInfo mine = { .nsec = ci.nsec,
      .last_cycles = ci.last_cycles,
      .frac = ci.frac,
      .mult = ci.mult,
      .shift = ci.shift,
      .mask = ci.mask };
    gint64 d = g_rand_int_range (rand, -400000000, 400000000);
    guint64 ts = ci.last_cycles + (guint64) d;
    g_assert_cmpuint (mlx5_ts_to_ns (&mine, ts), ==, mlx5dv_ts_to_ns (&ci, ts));
  }
  g_rand_free (rand);
  g_assert_cmpuint (mlx5_rt_ts_to_ns ((5ull << 32) | 123), ==, 5000000123ull);
}

/* real-time CQE timestamps (sec << 32 | ns) are taken as they are */
static void
test_real_time_ts (void)
{
  MiniDev d;
  mini_init (&d);
  Mlx5Caps caps = mini_port_caps;
  caps.real_time_ts = TRUE;
  Mlx5Rxq *q = mini_rxq_new (&mini_port_ops, &d.port, &caps, 6, 3, 2);
  g_assert_true (mini_rx (&d, 64, 1, (1700000000ull << 32) | 999999999, 0));
  Mlx5RxBurst b = { 0 };
  DqPacket pkts[2];
  mlx5_rxq_poll (q, &b, pkts, 2);
  g_assert_cmpuint (pkts[0].timestamp, ==, 1700000000999999999ull);
  mlx5_rxq_free (q);
}

/* The kernel page size of the mapping that holds addr, from /proc/self/smaps (0: unknown).
 * A mapping starts with a line "LO-HI PERMS ..."; its fields follow, KernelPageSize among
 * them. */
static guint
smaps_page_kib (gpointer addr)
{
  gchar *text = NULL;
  guint kib = 0;
  if (!g_file_get_contents ("/proc/self/smaps", &text, NULL, NULL))
    return 0;
  gchar **lines = g_strsplit (text, "\n", -1);
  gboolean inside = FALSE;
  const guint64 a = (guint64) (gsize) addr;
  for (gchar **l = lines; *l != NULL && kib == 0; l++) {
    guint64 lo, hi;
    char perms[8];
    if (g_ascii_isxdigit ((*l)[0]) &&
        sscanf (*l, "%" G_GINT64_MODIFIER "x-%" G_GINT64_MODIFIER "x %7s", &lo, &hi, perms) == 3)
      inside = a >= lo && a < hi;
    else if (inside && sscanf (*l, "KernelPageSize: %u kB", &kib) != 1)
      kib = 0;
  }
  g_strfreev (lines);
  g_free (text);
  return kib;
}

/* Writes a /proc/sys value (g_file_set_contents would try a temporary file there). */
static gboolean
sysctl_write (const char *path, const char *value)
{
  FILE *f = fopen (path, "w");
  if (f == NULL)
    return FALSE;
  gboolean ok = fputs (value, f) >= 0;
  return fclose (f) == 0 && ok;
}

/* Packet buffers on reserved huge pages when there are enough, plain pages otherwise. As
 * root the test reserves 40 pages for itself and gives them back. */
static void
test_huge_pages (void)
{
  const gsize size = (gsize) 64 << 20;
  const char *knob = "/proc/sys/vm/nr_hugepages";
  gchar *old = NULL;
  /* no huge pages reserved for us: plain pages */
  gpointer plain = mlx5_mem_map (size + 4096);
  g_assert_nonnull (plain);
  g_assert_cmpuint (smaps_page_kib (plain), ==, 4);
  mlx5_mem_unmap (plain, size + 4096);

  if (geteuid () != 0 || !g_file_get_contents (knob, &old, NULL, NULL)) {
    g_test_skip ("needs root to reserve huge pages");
    return;
  }
  guint before = (guint) g_ascii_strtoull (old, NULL, 10);
  gchar *want = g_strdup_printf ("%u", before + 40);
  gboolean set = sysctl_write (knob, want);
  g_free (want);
  gchar *now = NULL;
  guint reserved = 0;
  if (set && g_file_get_contents (knob, &now, NULL, NULL))
    reserved = (guint) g_ascii_strtoull (now, NULL, 10) - before;
  g_free (now);
  if (reserved >= 32) {
    gpointer huge = mlx5_mem_map (size);
    g_assert_nonnull (huge);
    g_assert_cmpuint (smaps_page_kib (huge), ==, 2048);
    memset (huge, 0x5a, size); /* every page is there: reserved at mmap */
    g_assert_cmpuint (((guint8 *) huge)[size - 1], ==, 0x5a);
    mlx5_mem_unmap (huge, size);
  }
  g_assert_true (sysctl_write (knob, old));
  g_free (old);
  if (reserved < 32)
    g_test_skip ("the kernel reserved fewer than 32 huge pages");
}

/* ---------------------------------------------------------------------------------- */
/* how a ring in GPU device memory is registered */

/* what the registration hooks saw and answer */
typedef struct {
  gboolean export_ok, dmabuf_ok, reg_ok;
  int fd; /* the dma-buf handed out */
  guint exports, dmabuf_regs, regs;
} RegPlay;

static RegPlay reg_play;

static gboolean
reg_export (gpointer mem, gsize size, int *fd, guint64 *offset, gpointer user, GError **error)
{
  reg_play.exports++;
  if (!reg_play.export_ok) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG, "export refused");
    return FALSE;
  }
  reg_play.fd = memfd_create ("ring", 0);
  g_assert_cmpint (reg_play.fd, >=, 0);
  *fd = reg_play.fd;
  *offset = 4096;
  return TRUE;
}

static gboolean
reg_dmabuf (gpointer dev, int fd, guint64 offset, gsize size, void *iova, guint32 *lkey,
    gpointer *handle, GError **error)
{
  reg_play.dmabuf_regs++;
  g_assert_cmpint (fd, ==, reg_play.fd);
  g_assert_cmpuint (offset, ==, 4096);
  if (!reg_play.dmabuf_ok) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "ibv_reg_dmabuf_mr refused");
    return FALSE;
  }
  return mini_port_ops.mr_reg (dev, iova, size, lkey, handle, error);
}

static gboolean
reg_plain (gpointer dev, void *addr, gsize size, guint32 *lkey, gpointer *handle, GError **error)
{
  reg_play.regs++;
  if (!reg_play.reg_ok) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "ibv_reg_mr refused");
    return FALSE;
  }
  return mini_port_ops.mr_reg (dev, addr, size, lkey, handle, error);
}

/* One ring creation with the hooks answering as asked; the placement, or -1 and the
 * error's message in *message when refused. */
static int
reg_try (gboolean export_ok, gboolean dmabuf_ok, gboolean reg_ok, gchar **message)
{
  MiniPort port;
  Mlx5PortOps ops = mini_port_ops;
  ops.mr_reg = reg_plain;
  ops.mr_reg_dmabuf = reg_dmabuf;
  DqRingMemory mem = { .kind = DQ_MEMORY_CUDA, .export_dmabuf = reg_export };
  Mlx5RxGeometry geo = {
    .log_stride_size = 6, .log_strides = 3, .log_wqes = 2, .log_cq_size = 5, .memory = &mem
  };
  GError *error = NULL;
  memset (&reg_play, 0, sizeof reg_play);
  reg_play.export_ok = export_ok;
  reg_play.dmabuf_ok = dmabuf_ok;
  reg_play.reg_ok = reg_ok;
  reg_play.fd = -1;
  mini_port_init (&port, TEST_LKEY);
  Mlx5Rxq *q = mlx5_rxq_new (&ops, &port, &mini_port_caps, &geo, &error);
  /* the dma-buf is closed once registered, or refused */
  if (reg_play.fd >= 0)
    g_assert_cmpint (fcntl (reg_play.fd, F_GETFD), ==, -1);
  if (q == NULL) {
    g_assert_nonnull (error);
    *message = g_strdup (error->message);
    g_error_free (error);
    return -1;
  }
  g_assert_no_error (error);
  g_assert_true (port.mr_registered);
  int placement = (int) mlx5_rxq_placement (q);
  mlx5_rxq_free (q);
  g_assert_false (port.mr_registered);
  return placement;
}

/* dma-buf first; where it fails, the device pointer (nvidia-peermem); both failing
 * name both reasons */
static void
test_register_gpu_ring (void)
{
  gchar *msg = NULL;
  g_assert_cmpint (reg_try (TRUE, TRUE, TRUE, &msg), ==, DQ_RING_GPU_DMABUF);
  g_assert_cmpuint (reg_play.exports + reg_play.dmabuf_regs, ==, 2);
  g_assert_cmpuint (reg_play.regs, ==, 0);

  g_assert_cmpint (reg_try (TRUE, FALSE, TRUE, &msg), ==, DQ_RING_GPU_PEERMEM);
  g_assert_cmpuint (reg_play.dmabuf_regs, ==, 1);
  g_assert_cmpuint (reg_play.regs, ==, 1);

  g_assert_cmpint (reg_try (FALSE, TRUE, TRUE, &msg), ==, DQ_RING_GPU_PEERMEM);
  g_assert_cmpuint (reg_play.dmabuf_regs, ==, 0);

  g_assert_cmpint (reg_try (TRUE, FALSE, FALSE, &msg), ==, -1);
  g_assert_nonnull (strstr (msg, "ibv_reg_dmabuf_mr refused"));
  g_assert_nonnull (strstr (msg, "nvidia-peermem"));
  g_assert_nonnull (strstr (msg, "ibv_reg_mr refused"));
  g_free (msg);
  g_assert_cmpstr (dq_ring_placement_name (DQ_RING_GPU_PEERMEM), ==, "gpu-peermem");
  g_assert_cmpstr (dq_ring_placement_name (DQ_RING_GPU_DMABUF), ==, "gpu-dmabuf");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5/rx/huge-pages", test_huge_pages);
  g_test_add_func ("/mlx5/rx/geometry", test_geometry);
  g_test_add_func ("/mlx5/rx/post-and-poll", test_post_and_poll);
  g_test_add_func ("/mlx5/rx/csum-flags", test_csum_flags);
  g_test_add_func ("/mlx5/rx/filler-and-ring-order", test_filler_and_ring_order);
  g_test_add_func ("/mlx5/rx/wrap-around", test_wrap_around);
  g_test_add_func ("/mlx5/rx/counter-wrap", test_counter_wrap);
  g_test_add_func ("/mlx5/rx/malformed-cqes", test_malformed_cqes);
  g_test_add_func ("/mlx5/rx/error-cqe", test_error_cqe);
  g_test_add_func ("/mlx5/rx/ts-to-ns", test_ts_to_ns);
  g_test_add_func ("/mlx5/rx/real-time-ts", test_real_time_ts);
  g_test_add_func ("/mlx5/rx/register-gpu-ring", test_register_gpu_ring);
  return g_test_run ();
}
