/* The emulated ConnectX's arithmetic against the plain formulas it stands for: the
 * generator's frames (incremental UDP checksum) against frames built and checksummed
 * from scratch; the line-rate model and the generator's pacing (quotient and remainder
 * carried from frame to frame) against the 128-bit divisions of the formulas in emu.h;
 * and the CQEs the device writes, all 64 bytes, against the PRM's byte offsets.
 */
#include "dq-packet.h"
#include "emu-private.h"
#include "emu-net.h"
#include "mlx5-dma.h"
#include "test-util.h"

#include <infiniband/mlx5dv.h>
#include <string.h>

__extension__ typedef unsigned __int128 U128;

/* ---------------------------------------------------------------------------------- */
/* the generator */

static const guint8 gen_mac[6] = { 0x02, 0x00, 0x00, 0x12, 0x34, 0x56 };

/* Generator frame k as emu.h describes it: the headers (dq-packet.h), every payload
 * byte, and both checksums computed over the whole frame. */
static void
ref_gen_frame (guint8 *f, guint len, guint32 first_seq, guint64 k)
{
  DqPacketHeaders h = { .src_mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0xfe },
    .src_ip = 0x0a000001,
    .dst_ip = 0x0a000002,
    .src_port = 1000,
    .dst_port = 5000 };
  guint32 seq = first_seq + (guint32) k;

  memcpy (h.dst_mac, gen_mac, 6);
  memset (f, 0, len);
  g_assert_cmpint (dq_packet_write_headers (f, len, &h), ==, 0);
  dq_packet_put32 (f + 42, seq);
  for (guint i = 46; i < len; i++)
    f[i] = (guint8) (k + i);
  g_assert_cmpuint (emu_csum_fill (f, len, MLX5_ETH_WQE_L3_CSUM | MLX5_ETH_WQE_L4_CSUM), ==, 3);
}

static guint
l4_csum_of (const guint8 *f)
{
  return (guint) (f[40] << 8 | f[41]);
}

static void
check_gen (EmuGen *g, guint8 *ref, guint64 k)
{
  guint len = g->cfg.frame_len;
  emu_gen_frame (g, k);
  ref_gen_frame (ref, len, g->cfg.first_seq, k);
  if (memcmp (g->frame, ref, len) != 0) {
    guint i = 0;
    while (g->frame[i] == ref[i])
      i++;
    g_error ("generator frame: len %u first_seq %u k %" G_GUINT64_FORMAT ": byte %u is "
             "0x%02x, from scratch 0x%02x",
        len, g->cfg.first_seq, k, i, g->frame[i], ref[i]);
  }
}

/* Every byte of the generator's frames equals a from-scratch build: lengths around
 * the word and pattern boundaries, k over several periods of the pattern, the sequence
 * number wrapping at 2^32, k past 2^32, and the UDP checksum that computes to 0 (sent
 * as 0xffff). */
static void
test_gen_checksum (void)
{
  static const guint lens[] = { 60, 61, 62, 63, 64, 65, 66, 127, 128, 129, 301, 302, 303, 1000,
    1514, 1515, 4096, 9001, 9996 };
  static const guint32 firsts[] = { 0, 1, 5000, 0x0000ffff, 0x00010000, 0x7fffffff, 0xfffffeff,
    0xffffffff };
  static const guint64 far[] = { G_GUINT64_CONSTANT (0xfffffffd), G_GUINT64_CONSTANT (0xfffffffe),
    G_GUINT64_CONSTANT (0xffffffff), G_GUINT64_CONSTANT (0x100000000),
    G_GUINT64_CONSTANT (0x100000001), G_GUINT64_CONSTANT (0x10000000107), G_MAXUINT64 - 1,
    G_MAXUINT64 };
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

/* ---------------------------------------------------------------------------------- */
/* the line-rate model */

/* The formula of emu.h as the device computed it before: the train's bits, and two
 * 128-bit divisions per frame. */
typedef struct {
  guint64 anchor;
  guint64 bits;
} RefWire;

static guint64
ref_wire_start (RefWire *w, guint64 f, guint64 r, guint64 at, guint64 bits)
{
  U128 sent = (U128) w->bits * f;
  guint64 busy_until = w->anchor + (guint64) ((sent + r - 1) / r);
  if (at >= busy_until) {
    w->anchor = at;
    w->bits = 0;
  }
  guint64 start = w->anchor + (guint64) ((U128) w->bits * f / r);
  w->bits += bits;
  return start;
}

static guint64
ref_busy_until (const RefWire *w, guint64 f, guint64 r)
{
  return w->anchor + (guint64) (((U128) w->bits * f + r - 1) / r);
}

/* Frame starts equal the formula's, frame by frame: rates and clock frequencies from
 * the ends of their ranges and odd ones between, sizes from the minimum frame to the
 * largest (with the largest overhead), trains long enough for S * f to pass 2^64, and
 * frames ready just before, at and just after the wire's end of train. */
static void
test_wire_model (void)
{
  static const guint64 rates[] = { 1000000, 9999991, 1000000000, 10000000000ull, 25000000000ull,
    40000000000ull, 100000000000ull, 123456789012ull, 400000000000ull, 1600000000000ull };
  static const guint64 freqs[] = { 1000000, 156250000, 999999000, 1000000000, 3333333000ull,
    10000000000ull };
  GRand *rand = g_rand_new_with_seed (20260530);
  guint64 frames = 0, trains = 0;

  for (guint ri = 0; ri < G_N_ELEMENTS (rates); ri++) {
    for (guint fi = 0; fi < G_N_ELEMENTS (freqs); fi++) {
      guint64 r = rates[ri], f = freqs[fi];
      RefWire ref = { 0 };
      EmuWire w = { 0 };
      guint64 at = g_rand_int (rand);
      for (guint n = 0; n < 6000; n++, frames++) {
        guint64 bits;
        switch (g_rand_int_range (rand, 0, 4)) {
          case 0: bits = 8 * (60 + 24); break;
          case 1: bits = 8 * (576 + 24); break;
          case 2: bits = 8 * (guint64) g_rand_int_range (rand, 60, 9997 + 64); break;
          default: bits = 8 * (guint64) (65535 + 64); break;
        }
        /* when the next frame is ready: within the train, at its end +- 1, later */
        guint64 end = ref_busy_until (&ref, f, r);
        switch (g_rand_int_range (rand, 0, 8)) {
          case 0: at = end - 1; break;
          case 1: at = end; break;
          case 2: at = end + 1; break;
          case 3: at = end + g_rand_int_range (rand, 0, 1000000); break;
          default:
            /* back to back: ready before the wire is free */
            break;
        }
        if (at >= end)
          trains++;
        guint64 want = ref_wire_start (&ref, f, r, at, bits);
        guint64 got = emu_wire_start (&w, f, r, at, bits);
        if (got != want)
          g_error ("wire: rate %" G_GUINT64_FORMAT " freq %" G_GUINT64_FORMAT " frame %u "
                   "(%" G_GUINT64_FORMAT " bits, ready at %" G_GUINT64_FORMAT
                   "): starts at %" G_GUINT64_FORMAT ", the formula says %" G_GUINT64_FORMAT,
              r, f, n, bits, at, got, want);
      }
      /* a train of 6000 frames of the largest size: S * f passes 2^64 at 10 GHz */
      at = ref_busy_until (&ref, f, r) + 5;
      for (guint n = 0; n < 6000; n++, frames++) {
        guint64 bits = 8 * (guint64) (65535 + 64);
        guint64 want = ref_wire_start (&ref, f, r, at, bits);
        guint64 got = emu_wire_start (&w, f, r, at, bits);
        g_assert_cmpuint (got, ==, want);
      }
      if (f == 10000000000ull)
        g_assert_cmpuint (ref.bits, >, G_MAXUINT64 / f);
    }
  }
  /* a third of the random frames start a train (end, end + 1, later) */
  g_assert_cmpuint (trains, >, G_N_ELEMENTS (rates) * G_N_ELEMENTS (freqs) * 6000 / 4);
  g_test_message ("%" G_GUINT64_FORMAT " frame starts, %" G_GUINT64_FORMAT " trains, "
                  "equal to the formula's",
      frames, trains);
  g_rand_free (rand);
}

/* The paced generator: frame k is due at start + floor (k * f / rate). */
static void
test_gen_pacing (void)
{
  static const guint64 rates[] = { 1, 3, 50000, 100000, 999983, 10000000, 14880952, 1000000000,
    3000000000ull };
  static const guint64 freqs[] = { 1000000, 156250000, 1000000000, 3333333000ull, 10000000000ull };
  EmuGen *g = g_new0 (EmuGen, 1);
  guint64 start = G_GUINT64_CONSTANT (0x123456789a);

  for (guint ri = 0; ri < G_N_ELEMENTS (rates); ri++) {
    for (guint fi = 0; fi < G_N_ELEMENTS (freqs); fi++) {
      g->cfg.rate_pps = rates[ri];
      emu_gen_start (g, start, freqs[fi]);
      for (guint64 k = 0; k < 200000; k++) {
        guint64 want = start + (guint64) ((U128) k * freqs[fi] / rates[ri]);
        if (g->due_ticks != want)
          g_error ("pacing: rate %" G_GUINT64_FORMAT " freq %" G_GUINT64_FORMAT
                   " frame %" G_GUINT64_FORMAT " due at %" G_GUINT64_FORMAT
                   ", the formula says %" G_GUINT64_FORMAT,
              rates[ri], freqs[fi], k, g->due_ticks, want);
        g_assert_cmpuint (g->produced, ==, k);
        emu_gen_advance (g);
      }
    }
  }
  g_free (g);
}

/* ---------------------------------------------------------------------------------- */
/* CQEs, byte for byte */

static void
put_be (guint8 *cqe, guint offset, guint size, guint64 v)
{
  for (guint i = 0; i < size; i++)
    cqe[offset + i] = (guint8) (v >> (8 * (size - 1 - i)));
}

static void
check_cqe (const guint8 *got, const guint8 *want, const char *what)
{
  for (guint i = 0; i < 64; i++)
    if (got[i] != want[i])
      g_error ("%s CQE: byte %u is 0x%02x, the PRM layout says 0x%02x", what, i, got[i], want[i]);
}

/* RQ CQEs as the device writes them into a CQ the host filled with 0xff: a packet
 * (RSS hash, checksum and header bits, byte count, timestamp, flow tag, first stride,
 * opcode and owner), a filler, the packet after it in the next WQE and an error CQE;
 * every byte the PRM does not give a value is 0. Two RQs share the CQ; RSS picks one. */
static void
test_cqe_bytes (void)
{
  GError *error = NULL;
  DqPortInfo info;
  Mlx5Caps caps;
  gpointer dev = emu_port_ops.open ("cqebytes,pause=off", &info, &caps, &error);
  g_assert_no_error (error);
  EmuPort *port = dev;

  /* a CQ of 8, and two RQs of 2 WQEs of 8 strides of 64 bytes */
  guint8 *cq_ring = g_aligned_alloc (8, 64, 64);
  memset (cq_ring, 0xff, 8 * 64);
  guint32 *cq_db = g_new0 (guint32, 2);
  guint8 *buf = g_aligned_alloc0 (4, 512, 64);
  Mlx5Cq cq = { .ring = cq_ring, .dbrec = cq_db, .log_size = 3 };
  Mlx5Rq rq[2];
  Mlx5Rq *rqs[2] = { &rq[0], &rq[1] };
  gpointer mr;
  guint32 lkey;
  g_assert_true (emu_port_ops.mr_reg (dev, buf, 2048, &lkey, &mr, &error));
  g_assert_true (emu_port_ops.cq_create (dev, &cq, &error));
  for (guint q = 0; q < 2; q++) {
    rq[q] = (Mlx5Rq){ .wqes = g_aligned_alloc0 (2, 32, 64),
      .dbrec = g_new0 (guint32, 2),
      .log_wqes = 1,
      .log_strides = 3,
      .log_stride_size = 6,
      .buf = buf + 1024 * q,
      .buf_size = 1024,
      .lkey = lkey,
      .cq = &cq };
    g_assert_true (emu_port_ops.rq_create (dev, &rq[q], &error));
    for (guint i = 0; i < 2; i++) {
      struct mlx5_mprq_wqe *w = (struct mlx5_mprq_wqe *) (rq[q].wqes + 32 * i);
      w->dseg.byte_count = htobe32 (512);
      w->dseg.lkey = htobe32 (lkey);
      w->dseg.addr = htobe64 ((guint64) (uintptr_t) (rq[q].buf + 512 * i));
    }
    rq[q].dbrec[MLX5_RCV_DBR] = htobe32 (2);
  }
  DqFlowRule rule = { .keys = DQ_FLOW_PROTO | DQ_FLOW_MARK, .proto = 17, .mark = 0xabcdef };
  g_assert_true (emu_port_ops.flows_set (dev, 1, rqs, 2, &rule, 1, &error));

  /* 100 bytes (2 strides), then 400 bytes (7: a filler for the 6 left, then WQE 1),
   * then a packet that completes with an error (1 stride) */
  TuFrameSpec spec = { .len = 100,
    .proto = TU_PROTO_UDP,
    .src = 0x0a010203,
    .dst = 0x0a040506,
    .sport = 1234,
    .dport = 4321,
    .good_csums = TRUE };
  guint8 frame[400];
  tu_frame_build (frame, &spec, 1);
  g_assert_true (emu_port_inject (port, frame, 100));
  spec.len = 400;
  tu_frame_build (frame, &spec, 2);
  g_assert_true (emu_port_inject (port, frame, 400));
  g_assert_true (emu_port_wait_idle (port, G_GINT64_CONSTANT (5000000000)));
  emu_port_fault_rx_error (port, 0, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  spec.len = 60;
  tu_frame_build (frame, &spec, 3);
  g_assert_true (emu_port_inject (port, frame, 60));
  g_assert_true (emu_port_wait_idle (port, G_GINT64_CONSTANT (5000000000)));
  guint64 now = emu_port_ticks (port);

  /* the Toeplitz hash of addresses and ports picks the RQ: entry hash & 1 of the
   * indirection table, RQ hash & 1; the flow tag is the rule's mark */
  const guint8 rss_in[12] = { 10, 1, 2, 3, 10, 4, 5, 6, 1234 >> 8, 1234 & 0xff, 4321 >> 8,
    4321 & 0xff };
  guint32 hash = emu_toeplitz (rss_in, 12);
  guint32 rqn = rq[hash & 1].rqn;
  guint8 want[64];
  /* the PRM's l4_hdr_type_etc of an IPv4/UDP frame: L4 type 2 (UDP) in bits 6..4, L3
   * type 2 (IPv4) in bits 3..2 */
  guint8 l4_l3 = 0x28;
  guint64 ts0 = be64toh (*(guint64 *) (cq_ring + 48));
  g_assert_cmpuint (ts0, >, 0);
  g_assert_cmpuint (ts0, <=, now);
  memset (want, 0, 64);
  put_be (want, 2, 2, 0);                                      /* wqe_id */
  put_be (want, 12, 4, hash);                                  /* rss_hash_result */
  want[28] = MLX5_CQE_L2_OK | MLX5_CQE_L3_OK | MLX5_CQE_L4_OK; /* hds_ip_ext */
  want[29] = l4_l3;                                            /* l4_hdr_type_etc */
  put_be (want, 44, 4, 2u << 16 | 100);                        /* byte_cnt: strides, bytes */
  put_be (want, 48, 8, ts0);                                   /* timestamp */
  put_be (want, 56, 4, 0xabcdef);                              /* sop_drop_qpn: flow tag */
  put_be (want, 60, 2, 0);                                     /* wqe_counter: first stride */
  want[63] = MLX5_CQE_RESP_SEND << 4 | 0;                      /* op_own: first lap, owner 0 */
  check_cqe (cq_ring, want, "packet");

  memset (want, 0, 64);
  put_be (want, 2, 2, 0);
  put_be (want, 44, 4, 0x80000000u | 6u << 16); /* filler, 6 strides */
  put_be (want, 60, 2, 2);
  want[63] = MLX5_CQE_RESP_SEND << 4;
  check_cqe (cq_ring + 64, want, "filler");

  /* back to back at 100 Gb/s, 1 GHz: 100 + 24 bytes are 9.92 ns, unless the wire had
   * gone idle between the two */
  guint64 ts2 = be64toh (*(guint64 *) (cq_ring + 128 + 48));
  g_assert_cmpuint (ts2, >=, ts0 + 9);
  memset (want, 0, 64);
  put_be (want, 2, 2, 1);
  put_be (want, 12, 4, hash);
  want[28] = MLX5_CQE_L2_OK | MLX5_CQE_L3_OK | MLX5_CQE_L4_OK;
  want[29] = l4_l3;
  put_be (want, 44, 4, 7u << 16 | 400);
  put_be (want, 48, 8, ts2);
  put_be (want, 56, 4, 0xabcdef);
  put_be (want, 60, 2, 0);
  want[63] = MLX5_CQE_RESP_SEND << 4;
  check_cqe (cq_ring + 128, want, "second packet");

  /* the error layout: syndrome 55, opcode and QPN 56..59, wqe_counter 60..61; wqe_id
   * and byte_cnt where a good CQE has them */
  memset (want, 0, 64);
  put_be (want, 2, 2, 1);
  put_be (want, 44, 4, 1u << 16);
  want[55] = MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
  put_be (want, 56, 4, rqn & 0xffffff);
  put_be (want, 60, 2, 7);
  want[63] = MLX5_CQE_RESP_ERR << 4;
  check_cqe (cq_ring + 192, want, "error");
  /* and nothing after them */
  for (guint i = 256; i < 512; i++)
    g_assert_cmpuint (cq_ring[i], ==, 0xff);

  emu_port_ops.flows_set (dev, 1, NULL, 0, NULL, 0, &error);
  for (guint q = 0; q < 2; q++) {
    emu_port_ops.rq_destroy (dev, &rq[q]);
    g_aligned_free (rq[q].wqes);
    g_free ((gpointer) rq[q].dbrec);
  }
  emu_port_ops.cq_destroy (dev, &cq);
  emu_port_ops.mr_dereg (dev, mr);
  emu_port_ops.close (dev);
  g_aligned_free (buf);
  g_aligned_free (cq_ring);
  g_free (cq_db);
}

/* The L4 header type the device reports, as the PRM numbers it: UDP 2, and TCP by the
 * segment's ACK flag and payload (1 no ACK, 3 ACK without payload, 4 ACK with payload). */
static void
test_l4_types (void)
{
  static const struct {
    guint8 proto, tcp_flags;
    guint len;
    guint8 want;
  } cases[] = {
    { TU_PROTO_UDP, 0, 100, 0x2 },
    { TU_PROTO_TCP, 0x02, 54, 0x1 },  /* SYN */
    { TU_PROTO_TCP, 0x02, 100, 0x1 }, /* SYN with data */
    { TU_PROTO_TCP, 0x10, 54, 0x3 },  /* a bare ACK */
    { TU_PROTO_TCP, 0x11, 54, 0x3 },  /* FIN, ACK */
    { TU_PROTO_TCP, 0x18, 100, 0x4 }, /* PSH, ACK with data */
    { TU_PROTO_TCP, 0x10, 55, 0x4 },  /* one payload byte */
    { TU_PROTO_ICMP, 0, 100, 0x0 },
  };
  guint8 frame[128];
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    TuFrameSpec spec = { .len = cases[i].len, .proto = cases[i].proto, .src = 1, .dst = 2 };
    tu_frame_build (frame, &spec, i);
    if (cases[i].proto == TU_PROTO_TCP)
      frame[14 + 20 + 13] = cases[i].tcp_flags;
    EmuHeaders h;
    emu_parse (frame, cases[i].len, &h);
    if (h.l4_type != cases[i].want)
      g_error ("case %u: proto %u flags 0x%02x len %u: L4 type %u, the PRM's %u", i, cases[i].proto,
          cases[i].tcp_flags, cases[i].len, h.l4_type, cases[i].want);
    g_assert_cmpuint (h.l3_type, ==, 0x2);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5/emu-model/gen-checksum", test_gen_checksum);
  g_test_add_func ("/mlx5/emu-model/gen-pacing", test_gen_pacing);
  g_test_add_func ("/mlx5/emu-model/wire", test_wire_model);
  g_test_add_func ("/mlx5/emu-model/cqe-bytes", test_cqe_bytes);
  g_test_add_func ("/mlx5/emu-model/l4-types", test_l4_types);
  return g_test_run ();
}
