/* The DevX command builders of the hardware control path (mlx5/hw/hw-cmd.c), run on
 * known inputs. Every mailbox is checked twice per field: with DEVX_GET through our
 * layouts, and bit by bit at the PRM offset written here as a number (from
 * reference/daqiri-facts.md §4.9 and the kernel's mlx5_ifc.h), so a builder that writes
 * the right value into a wrongly placed field fails too. Each checked field is then
 * cleared in a copy, and the copy must come out all zero: a builder sets nothing it was
 * not asked to. Also: capability and counter parsing from fake output mailboxes, the
 * failure text and the geometry checks. (The steering plans: test-plan.c.) */
#include <errno.h>
#include <string.h>

#include <glib.h>
#include <infiniband/mlx5dv.h>

#include "daqiri-engine.h"
#include "dq-test-port.h"
#include "hw-cmd.h"
#include "mlx5-ifc.h"
#include "prm-bits.h"


/* the field `fld` of layout `typ`: at bit `off`, `width` bits wide, holds `val` */
#define EXPECT(typ, buf, copy, fld, off, width, val) \
  G_STMT_START \
  { \
    g_assert_cmphex (__devx_bit_off (typ, fld), ==, (off)); \
    g_assert_cmphex (__devx_bit_sz (typ, fld), ==, (width)); \
    if ((width) <= 32) \
      g_assert_cmphex (DEVX_GET (typ, buf, fld), ==, (val)); \
    else \
      g_assert_cmphex (DEVX_GET64 (typ, buf, fld), ==, (val)); \
    g_assert_cmphex (bits_get (buf, off, width), ==, (val)); \
    bits_set (copy, off, width, 0); \
  } \
  G_STMT_END

/* zero the mailbox `in`, build it with `call`, and copy it into `copy`, where each
 * EXPECT clears the field it checked */
#define BUILD_MAILBOX(in, copy, call) \
  G_STMT_START \
  { \
    memset (in, 0, sizeof in); \
    call; \
    memcpy (copy, in, sizeof in); \
  } \
  G_STMT_END

/* the work queue context that an RQ's and an SQ's context both hold, at bit 0x280 of
 * their CREATE mailboxes */
#define EXPECT_WQ(typ, in, copy, kind, pdn, dbr, log_stride, page_code, log_size, dbr_umem, umem) \
  G_STMT_START \
  { \
    EXPECT (typ, in, copy, ctx.wq.wq_type, 0x280, 4, kind); \
    EXPECT (typ, in, copy, ctx.wq.pd, 0x2c8, 24, pdn); \
    EXPECT (typ, in, copy, ctx.wq.dbr_addr, 0x300, 64, dbr); \
    EXPECT (typ, in, copy, ctx.wq.log_wq_stride, 0x38c, 4, log_stride); \
    EXPECT (typ, in, copy, ctx.wq.log_wq_pg_sz, 0x393, 5, page_code); \
    EXPECT (typ, in, copy, ctx.wq.log_wq_sz, 0x39b, 5, log_size); \
    EXPECT (typ, in, copy, ctx.wq.dbr_umem_valid, 0x3a0, 1, 1); \
    EXPECT (typ, in, copy, ctx.wq.wq_umem_valid, 0x3a1, 1, 1); \
    EXPECT (typ, in, copy, ctx.wq.dbr_umem_id, 0x3c0, 32, dbr_umem); \
    EXPECT (typ, in, copy, ctx.wq.wq_umem_id, 0x3e0, 32, umem); \
    EXPECT (typ, in, copy, ctx.wq.wq_umem_offset, 0x400, 64, 0); \
  } \
  G_STMT_END

#define PAGE_4K 12
#define PAGE_64K 16

/* ------------------------------------------------------------------------------------ */
/* encodings */

static void
test_encodings (void)
{
  /* page sizes relative to the 4 KiB adapter page (DAQIRI #269: GH200's 64 KiB pages) */
  g_assert_cmpuint (mlx5_hw_page_size_encode (PAGE_4K), ==, 0);
  g_assert_cmpuint (mlx5_hw_page_size_encode (PAGE_64K), ==, 4);
  g_assert_cmpuint (mlx5_hw_page_size_encode (21), ==, 9);
  /* strides per WQE: log - 9 in 4 bits, two's complement below 512 */
  g_assert_cmpuint (mlx5_hw_log_strides_encode (9), ==, 0);
  g_assert_cmpuint (mlx5_hw_log_strides_encode (10), ==, 1);
  g_assert_cmpuint (mlx5_hw_log_strides_encode (16), ==, 7);
  g_assert_cmpuint (mlx5_hw_log_strides_encode (8), ==, 0xf);
  g_assert_cmpuint (mlx5_hw_log_strides_encode (6), ==, 0xd);
  g_assert_cmpuint (mlx5_hw_log_strides_encode (3), ==, 0xa);
  /* stride bytes: log - 6 */
  g_assert_cmpuint (mlx5_hw_log_stride_size_encode (6), ==, 0);
  g_assert_cmpuint (mlx5_hw_log_stride_size_encode (11), ==, 5);
  g_assert_cmpuint (mlx5_hw_log_stride_size_encode (13), ==, 7);
  /* real time only where the device stamps it; else free running, never DEFAULT */
  g_assert_cmpuint (mlx5_hw_ts_format (FALSE), ==, 0);
  g_assert_cmpuint (mlx5_hw_ts_format (TRUE), ==, 2);
  /* real-time CQE timestamps: seconds << 32 | ns */
  g_assert_cmpuint (mlx5_hw_rt_ts_to_ns (G_GUINT64_CONSTANT (0x0000000500000007)), ==,
      G_GUINT64_CONSTANT (5000000007));
  g_assert_cmpuint (mlx5_hw_rt_ts_to_ns ((G_GUINT64_CONSTANT (1700000000) << 32) | 999999999u), ==,
      G_GUINT64_CONSTANT (1700000000999999999));
}

/* ------------------------------------------------------------------------------------ */
/* small commands */

/* QUERY_HCA_CAP of the capability page `type` asks for op_mod `op_mod` */
static void
check_query_hca_cap (guint type, guint op_mod)
{
  guint8 in[DEVX_ST_SZ_BYTES (query_hca_cap_in)], copy[sizeof in];
  g_assert_cmpuint (sizeof in, ==, 16);
  BUILD_MAILBOX (in, copy, mlx5_cmd_build_query_hca_cap (in, type));
  EXPECT (query_hca_cap_in, in, copy, opcode, 0x0, 16, 0x100);
  EXPECT (query_hca_cap_in, in, copy, op_mod, 0x30, 16, op_mod);
  assert_zero (copy, sizeof copy);
}

static void
test_query_hca_cap (void)
{
  check_query_hca_cap (MLX5_HCA_CAP_GENERAL, 0x1);           /* general, current */
  check_query_hca_cap (MLX5_HCA_CAP_ETHERNET_OFFLOADS, 0x3); /* Ethernet, current */
  g_assert_cmpuint (DEVX_ST_SZ_BYTES (query_hca_cap_out), ==, 0x1010);
}

static void
test_small_commands (void)
{
  guint8 in[16], copy[16];

  BUILD_MAILBOX (in, copy, mlx5_cmd_build_query_nic_vport_context (in));
  EXPECT (query_nic_vport_context_in, in, copy, opcode, 0x0, 16, 0x754);
  EXPECT (query_nic_vport_context_in, in, copy, op_mod, 0x30, 16, 0);
  assert_zero (copy, sizeof copy);

  BUILD_MAILBOX (in, copy, mlx5_cmd_build_alloc_transport_domain (in));
  EXPECT (alloc_transport_domain_in, in, copy, opcode, 0x0, 16, 0x816);
  assert_zero (copy, sizeof copy);

  BUILD_MAILBOX (in, copy, mlx5_cmd_build_alloc_q_counter (in));
  EXPECT (alloc_q_counter_in, in, copy, opcode, 0x0, 16, 0x771);
  assert_zero (copy, sizeof copy);

  guint8 qin[DEVX_ST_SZ_BYTES (query_q_counter_in)], qcopy[sizeof qin];
  BUILD_MAILBOX (qin, qcopy, mlx5_cmd_build_query_q_counter (qin, 0x2a));
  EXPECT (query_q_counter_in, qin, qcopy, opcode, 0x0, 16, 0x773);
  EXPECT (query_q_counter_in, qin, qcopy, clear, 0xc0, 1, 0);
  EXPECT (query_q_counter_in, qin, qcopy, counter_set_id, 0xf8, 8, 0x2a);
  assert_zero (qcopy, sizeof qcopy);

  guint8 tin[DEVX_ST_SZ_BYTES (create_tis_in)], tcopy[sizeof tin];
  BUILD_MAILBOX (tin, tcopy, mlx5_cmd_build_create_tis (tin, 0x12345));
  EXPECT (create_tis_in, tin, tcopy, opcode, 0x0, 16, 0x912);
  EXPECT (create_tis_in, tin, tcopy, ctx.transport_domain, 0x228, 24, 0x12345);
  assert_zero (tcopy, sizeof tcopy);
}

/* ------------------------------------------------------------------------------------ */
/* CQ */

/* comp: MLX5_CQ_COMP_NONE leaves the compression fields 0 (assert_zero); the others set
 * cqe_comp_en@0x11, mini_cqe_res_format@0x12/2 = 2 (FTAG_STRIDX, DPDK's
 * MLX5_CQE_RESP_FORMAT_FTAG_STRIDX) and cqe_comp_layout@0x1e/2 (the kernel's
 * cqe_compression_layout: 0 basic, 1 enhanced), offsets in the CQ context */
static void
check_create_cq (guint page_shift, guint page_code, Mlx5CqComp comp)
{
  guint8 ring[64];
  guint32 dbrec[2];
  Mlx5Cq cq = { .ring = ring, .dbrec = dbrec, .log_size = 13, .comp = comp };
  Mlx5HwQueueMem mem = {
    .umem_id = 0x11, .umem_offset = 0x40, .dbr_umem_id = 0x22, .dbr_offset = 0x1c0
  };
  guint8 in[DEVX_ST_SZ_BYTES (create_cq_in)], copy[sizeof in];
  g_assert_cmpuint (sizeof in, ==, 0x110);
  BUILD_MAILBOX (in, copy, mlx5_cmd_build_create_cq (in, &cq, &mem, 0x3c5, 0x1a, page_shift));
  EXPECT (create_cq_in, in, copy, opcode, 0x0, 16, 0x400);
  EXPECT (create_cq_in, in, copy, cq_context.dbr_umem_valid, 0x86, 1, 1);
  EXPECT (create_cq_in, in, copy, cq_context.cqe_sz, 0x88, 3, 0); /* 64 bytes */
  if (comp != MLX5_CQ_COMP_NONE) {
    EXPECT (create_cq_in, in, copy, cq_context.cqe_comp_en, 0x91, 1, 1);
    EXPECT (create_cq_in, in, copy, cq_context.mini_cqe_res_format, 0x92, 2, 2);
    EXPECT (create_cq_in, in, copy, cq_context.cqe_comp_layout, 0x9e, 2,
        comp == MLX5_CQ_COMP_ENHANCED ? 1 : 0);
  }
  EXPECT (create_cq_in, in, copy, cq_context.dbr_umem_id, 0xa0, 32, 0x22);
  EXPECT (create_cq_in, in, copy, cq_context.log_cq_size, 0xe3, 5, 13);
  EXPECT (create_cq_in, in, copy, cq_context.uar_page, 0xe8, 24, 0x3c5);
  /* the low byte is DAQIRI's c_eqn@0xb8 */
  g_assert_cmphex (bits_get (in, 0x80 + 0xb8, 8), ==, 0x1a);
  EXPECT (create_cq_in, in, copy, cq_context.c_eqn_or_apu_element, 0x120, 32, 0x1a);
  EXPECT (create_cq_in, in, copy, cq_context.log_page_size, 0x143, 5, page_code);
  EXPECT (create_cq_in, in, copy, cq_context.dbr_addr, 0x240, 64, 0x1c0);
  EXPECT (create_cq_in, in, copy, cq_umem_offset, 0x280, 64, 0x40);
  EXPECT (create_cq_in, in, copy, cq_umem_id, 0x2c0, 32, 0x11);
  EXPECT (create_cq_in, in, copy, cq_umem_valid, 0x2e0, 1, 1);
  assert_zero (copy, sizeof copy);
}

static void
test_create_cq (void)
{
  check_create_cq (PAGE_4K, 0, MLX5_CQ_COMP_NONE);
  check_create_cq (PAGE_64K, 4, MLX5_CQ_COMP_NONE);
  check_create_cq (PAGE_4K, 0, MLX5_CQ_COMP_BASIC);
  check_create_cq (PAGE_4K, 0, MLX5_CQ_COMP_ENHANCED);

  /* and the bytes themselves, without our layout: the CQ context starts at byte 0x10;
   * byte 0x12 (bits 0x90..0x97) holds cqe_comp_en (bit 0x91: 0x40) and format 2 (bits
   * 0x92..0x93 = 10b: 0x20), byte 0x13 ends with the layout (bits 0x9e..0x9f = 01b) */
  guint8 ring[64];
  guint32 dbrec[2];
  Mlx5Cq cq = { .ring = ring, .dbrec = dbrec, .log_size = 13, .comp = MLX5_CQ_COMP_ENHANCED };
  Mlx5HwQueueMem mem = { 0 };
  guint8 in[DEVX_ST_SZ_BYTES (create_cq_in)];
  memset (in, 0, sizeof in);
  mlx5_cmd_build_create_cq (in, &cq, &mem, 0, 0, PAGE_4K);
  g_assert_cmphex (in[0x12], ==, 0x60);
  g_assert_cmphex (in[0x13], ==, 0x01);
}

/* ------------------------------------------------------------------------------------ */
/* RQ */

/* split_header != 0: a header-data split RQ (cyclic, two data segments per WQE), no
 * striding fields */
static void
check_create_rq (guint page_shift, guint page_code, guint log_strides, guint strides_code,
    gboolean real_time, guint split_header)
{
  guint8 wqes[64];
  guint32 dbrec[2];
  Mlx5Rq rq = { .wqes = wqes,
    .dbrec = dbrec,
    .log_wqes = 6,
    .log_strides = log_strides,
    .log_stride_size = 11,
    .split_header = split_header,
    .split_payload = 1536 };
  Mlx5HwQueueMem mem = {
    .umem_id = 0xaa01, .umem_offset = 0, .dbr_umem_id = 0xbb02, .dbr_offset = 0x800
  };
  guint8 in[DEVX_ST_SZ_BYTES (create_rq_in)], copy[sizeof in];
  g_assert_cmpuint (sizeof in, ==, 0x110);
  BUILD_MAILBOX (in, copy,
      mlx5_cmd_build_create_rq (
          in, &rq, 0x4567, 0x89ab, &mem, page_shift, mlx5_hw_ts_format (real_time), 0x21));
  EXPECT (create_rq_in, in, copy, opcode, 0x0, 16, 0x908);
  /* rqc at 0x100 */
  EXPECT (create_rq_in, in, copy, ctx.vsd, 0x103, 1, 1);
  EXPECT (create_rq_in, in, copy, ctx.state, 0x108, 4, 0); /* RST */
  EXPECT (create_rq_in, in, copy, ctx.flush_in_error_en, 0x10d, 1, 1);
  EXPECT (create_rq_in, in, copy, ctx.ts_format, 0x11a, 2, real_time ? 2 : 0);
  EXPECT (create_rq_in, in, copy, ctx.cqn, 0x148, 24, 0x4567);
  EXPECT (create_rq_in, in, copy, ctx.counter_set_id, 0x160, 8, 0x21);
  /* wq at 0x280: cyclic or striding, 32 B WQEs, 2^6 of them */
  EXPECT_WQ (
      create_rq_in, in, copy, split_header ? 1 : 3, 0x89ab, 0x800, 5, page_code, 6, 0xbb02, 0xaa01);
  EXPECT (create_rq_in, in, copy, ctx.wq.single_wqe_log_num_of_strides, 0x3b4, 4,
      split_header ? 0 : strides_code);
  EXPECT (create_rq_in, in, copy, ctx.wq.two_byte_shift_en, 0x3b8, 1, 0);
  EXPECT (create_rq_in, in, copy, ctx.wq.single_stride_log_num_of_bytes, 0x3bd, 3,
      split_header ? 0 : 5);
  assert_zero (copy, sizeof copy);
}

static void
test_create_rq (void)
{
  check_create_rq (PAGE_4K, 0, 9, 0, FALSE, 0);
  check_create_rq (PAGE_64K, 4, 9, 0, FALSE, 0);
  check_create_rq (PAGE_4K, 0, 6, 0xd, TRUE, 0);
  check_create_rq (PAGE_64K, 4, 16, 7, TRUE, 0);
  check_create_rq (PAGE_4K, 0, 0, 0, FALSE, 42);
}

/* a MODIFY_RQ mailbox that takes RQ `rqn` from state `from` to `to` and sets nothing else */
static void
expect_modify_rq (const guint8 *in, guint8 *copy, guint32 rqn, guint from, guint to)
{
  EXPECT (modify_rq_in, in, copy, opcode, 0x0, 16, 0x909);
  EXPECT (modify_rq_in, in, copy, rq_state, 0x40, 4, from);
  EXPECT (modify_rq_in, in, copy, rqn, 0x48, 24, rqn);
  EXPECT (modify_rq_in, in, copy, modify_bitmask, 0x80, 64, 0);
  EXPECT (modify_rq_in, in, copy, ctx.state, 0x108, 4, to);
  assert_zero (copy, DEVX_ST_SZ_BYTES (modify_rq_in));
}

static void
test_modify_rq (void)
{
  guint8 in[DEVX_ST_SZ_BYTES (modify_rq_in)], copy[sizeof in];
  BUILD_MAILBOX (in, copy, mlx5_cmd_build_modify_rq_rdy (in, 0xabcdef));
  expect_modify_rq (in, copy, 0xabcdef, 0, 1); /* RST to RDY */

  /* recovery's first step: ERR (3) to RST (0), the PRM's rq_state codes */
  BUILD_MAILBOX (
      in, copy, mlx5_cmd_build_modify_rq_state (in, 0x12, MLX5_RQC_STATE_ERR, MLX5_RQC_STATE_RST));
  expect_modify_rq (in, copy, 0x12, 3, 0);
}

/* ------------------------------------------------------------------------------------ */
/* SQ */

static void
check_create_sq (guint page_shift, guint page_code, gboolean real_time, gboolean mpw, guint inl)
{
  guint8 wqes[64];
  guint32 dbrec[2];
  Mlx5Sq sq = { .wqes = wqes, .dbrec = dbrec, .log_wqebbs = 12 };
  Mlx5HwQueueMem mem = { .umem_id = 7, .umem_offset = 0, .dbr_umem_id = 7, .dbr_offset = 0x40000 };
  guint8 in[DEVX_ST_SZ_BYTES (create_sq_in)], copy[sizeof in];
  BUILD_MAILBOX (in, copy,
      mlx5_cmd_build_create_sq (in, &sq, 0x321, 0x654, 0x987, 0x5a5, &mem, page_shift,
          mlx5_hw_ts_format (real_time), mpw, inl));
  EXPECT (create_sq_in, in, copy, opcode, 0x0, 16, 0x904);
  /* sqc at 0x100 */
  EXPECT (create_sq_in, in, copy, ctx.flush_in_error_en, 0x103, 1, 1);
  EXPECT (create_sq_in, in, copy, ctx.allow_multi_pkt_send_wqe, 0x104, 1, mpw ? 1 : 0);
  EXPECT (create_sq_in, in, copy, ctx.min_wqe_inline_mode, 0x105, 3, inl);
  EXPECT (create_sq_in, in, copy, ctx.state, 0x108, 4, 0);
  EXPECT (create_sq_in, in, copy, ctx.ts_format, 0x11a, 2, real_time ? 2 : 0);
  EXPECT (create_sq_in, in, copy, ctx.cqn, 0x148, 24, 0x321);
  EXPECT (create_sq_in, in, copy, ctx.tis_lst_sz, 0x200, 16, 1);
  EXPECT (create_sq_in, in, copy, ctx.tis_num_0, 0x268, 24, 0x987);
  /* wq at 0x280: cyclic, 64 B WQEBBs, 2^12 of them */
  EXPECT_WQ (create_sq_in, in, copy, 1, 0x654, 0x40000, 6, page_code, 12, 7, 7);
  EXPECT (create_sq_in, in, copy, ctx.wq.uar_page, 0x2e8, 24, 0x5a5);
  assert_zero (copy, sizeof copy);
}

static void
test_create_sq (void)
{
  check_create_sq (PAGE_4K, 0, FALSE, TRUE, MLX5_INLINE_MODE_NONE);
  check_create_sq (PAGE_64K, 4, TRUE, FALSE, MLX5_INLINE_MODE_L2);
}

/* a MODIFY_SQ mailbox that takes SQ `sqn` from state `from` to RDY, changing the context
 * fields `bitmask` names (bit 0: the rate's index) and setting nothing else */
static void
expect_modify_sq (
    const guint8 *in, guint8 *copy, guint32 sqn, guint from, guint64 bitmask, guint rate_index)
{
  EXPECT (modify_sq_in, in, copy, opcode, 0x0, 16, 0x905);
  EXPECT (modify_sq_in, in, copy, sq_state, 0x40, 4, from);
  EXPECT (modify_sq_in, in, copy, sqn, 0x48, 24, sqn);
  EXPECT (modify_sq_in, in, copy, modify_bitmask, 0x80, 64, bitmask);
  EXPECT (modify_sq_in, in, copy, ctx.state, 0x108, 4, 1);
  EXPECT (modify_sq_in, in, copy, ctx.packet_pacing_rate_limit_index, 0x100 + 0xf0, 16, rate_index);
  assert_zero (copy, DEVX_ST_SZ_BYTES (modify_sq_in));
}

static void
test_modify_sq (void)
{
  guint8 in[DEVX_ST_SZ_BYTES (modify_sq_in)], copy[sizeof in];
  BUILD_MAILBOX (in, copy, mlx5_cmd_build_modify_sq_rdy (in, 0x1234));
  expect_modify_sq (in, copy, 0x1234, 0, 0, 0); /* RST to RDY */

  /* packet pacing: RDY -> RDY, bit 0 of modify_bitmask, the rate's index */
  BUILD_MAILBOX (in, copy, mlx5_cmd_build_modify_sq_rate (in, 0x1234, 0x2a));
  expect_modify_sq (in, copy, 0x1234, 1, 1, 0x2a);

  /* the rate's context for mlx5dv_pp_alloc: kb/s rounded up, the typical size */
  guint8 ctx[DEVX_ST_SZ_BYTES (set_pp_rate_limit_context)], cctx[sizeof ctx];
  BUILD_MAILBOX (
      ctx, cctx, mlx5_cmd_build_pp_context (ctx, G_GUINT64_CONSTANT (10000000001), 1500));
  EXPECT (set_pp_rate_limit_context, ctx, cctx, rate_limit, 0x0, 32, 10000001);
  EXPECT (set_pp_rate_limit_context, ctx, cctx, typical_packet_size, 0x50, 16, 1500);
  assert_zero (cctx, sizeof cctx);
}

/* ------------------------------------------------------------------------------------ */
/* TIR, RQT */

static void
test_create_tir_direct (void)
{
  guint8 in[DEVX_ST_SZ_BYTES (create_tir_in)], copy[sizeof in];
  BUILD_MAILBOX (in, copy, mlx5_cmd_build_create_tir_direct (in, 0x00c0de, 0x77));
  EXPECT (create_tir_in, in, copy, opcode, 0x0, 16, 0x900);
  EXPECT (create_tir_in, in, copy, ctx.disp_type, 0x120, 4, 0); /* direct */
  EXPECT (create_tir_in, in, copy, ctx.inline_rqn, 0x1e8, 24, 0x00c0de);
  EXPECT (create_tir_in, in, copy, ctx.rx_hash_fn, 0x220, 4, 0);
  EXPECT (create_tir_in, in, copy, ctx.transport_domain, 0x228, 24, 0x77);
  assert_zero (copy, sizeof copy);
}

static void
test_create_rqt (void)
{
  g_assert_cmpuint (mlx5_hw_rqt_size (1), ==, 1);
  g_assert_cmpuint (mlx5_hw_rqt_size (2), ==, 2);
  g_assert_cmpuint (mlx5_hw_rqt_size (3), ==, 4);
  g_assert_cmpuint (mlx5_hw_rqt_size (5), ==, 8);
  g_assert_cmpuint (mlx5_cmd_create_rqt_in_bytes (4), ==, 0x110 + 16);

  const guint32 rqns[3] = { 0x100, 0x200, 0xabcdef };
  gsize len = mlx5_cmd_create_rqt_in_bytes (4);
  guint8 *in = g_malloc0 (len), *copy = g_malloc (len);
  mlx5_cmd_build_create_rqt (in, rqns, 3);
  memcpy (copy, in, len);
  EXPECT (create_rqt_in, in, copy, opcode, 0x0, 16, 0x916);
  EXPECT (create_rqt_in, in, copy, rqt_context.rqt_max_size, 0x1b0, 16, 4);
  EXPECT (create_rqt_in, in, copy, rqt_context.rqt_actual_size, 0x1d0, 16, 4);
  /* the entries follow the 0x780-bit context: 32 bits each, RQN in the low 24 */
  g_assert_cmphex (__devx_bit_off (create_rqt_in, rqt_context.rq_num), ==, 0x880);
  const guint32 want[4] = { 0x100, 0x200, 0xabcdef, 0x100 };
  for (guint i = 0; i < 4; i++) {
    gsize at = 0x880 + i * 0x20;
    g_assert_cmphex (bits_get (in, at, 8), ==, 0);
    g_assert_cmphex (bits_get (in, at + 8, 24), ==, want[i]);
    bits_set (copy, at + 8, 24, 0);
  }
  assert_zero (copy, len);
  g_free (in);
  g_free (copy);
}

/* one TIR per kind of traffic: UDP and TCP hash addresses and ports, the rest addresses */
static void
test_create_tir_rss (void)
{
  static const struct {
    guint8 l4_proto;
    guint32 l4_prot_type, fields;
  } kinds[] = {
    { 17, 1, 0xf }, /* UDP: src/dst IP, src/dst port */
    { 6, 0, 0xf },  /* TCP */
    { 0, 0, 0x3 },  /* the rest: src/dst IP */
  };
  for (guint k = 0; k < G_N_ELEMENTS (kinds); k++) {
    guint8 in[DEVX_ST_SZ_BYTES (create_tir_in)], copy[sizeof in];
    BUILD_MAILBOX (in, copy,
        mlx5_cmd_build_create_tir_rss (
            in, 0x4242, 0x77, mlx5_rss_default_key (), kinds[k].l4_proto));
    EXPECT (create_tir_in, in, copy, opcode, 0x0, 16, 0x900);
    EXPECT (create_tir_in, in, copy, ctx.disp_type, 0x120, 4, 1); /* indirect */
    EXPECT (create_tir_in, in, copy, ctx.indirect_table, 0x208, 24, 0x4242);
    EXPECT (create_tir_in, in, copy, ctx.rx_hash_fn, 0x220, 4, 2); /* Toeplitz */
    EXPECT (create_tir_in, in, copy, ctx.transport_domain, 0x228, 24, 0x77);
    EXPECT (create_tir_in, in, copy, ctx.rx_hash_field_selector_outer.l3_prot_type, 0x380, 1,
        0); /* IPv4 */
    EXPECT (create_tir_in, in, copy, ctx.rx_hash_field_selector_outer.l4_prot_type, 0x381, 1,
        kinds[k].l4_prot_type);
    EXPECT (create_tir_in, in, copy, ctx.rx_hash_field_selector_outer.selected_fields, 0x382, 30,
        kinds[k].fields);
    /* the key, first byte first, at bit 0x240 (byte 0x48) */
    g_assert_cmphex (__devx_bit_off (create_tir_in, ctx.rx_hash_toeplitz_key), ==, 0x240);
    static const guint8 key[40] = { 0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
      0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77,
      0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa };
    g_assert_cmpmem (in + 0x48, 40, key, 40);
    memset (copy + 0x48, 0, 40);
    assert_zero (copy, sizeof copy);
  }
}

/* ------------------------------------------------------------------------------------ */
/* output side */

static void
test_failure_text (void)
{
  guint8 out[DEVX_ST_SZ_BYTES (create_rq_out)];
  memset (out, 0, sizeof out);
  bits_set (out, 0x0, 8, 0x3);
  bits_set (out, 0x20, 32, 0x43d98f);
  g_assert_cmpuint (mlx5_cmd_out_status (out), ==, 3);
  g_assert_cmphex (mlx5_cmd_out_syndrome (out), ==, 0x43d98f);
  char *t = mlx5_cmd_failure_text ("CREATE_RQ", EREMOTEIO, out);
  g_assert_cmpstr (t, ==,
      "CREATE_RQ failed: Remote I/O error; firmware status 0x3 "
      "(bad parameter), syndrome 0x43d98f");
  g_free (t);

  /* refused before the firmware: no status to show */
  memset (out, 0, sizeof out);
  t = mlx5_cmd_failure_text ("CREATE_CQ", EPERM, out);
  g_assert_cmpstr (t, ==, "CREATE_CQ failed: Operation not permitted");
  g_free (t);
  t = mlx5_cmd_failure_text ("ALLOC_TRANSPORT_DOMAIN", ENOMEM, NULL);
  g_assert_cmpstr (t, ==, "ALLOC_TRANSPORT_DOMAIN failed: Cannot allocate memory");
  g_free (t);

  bits_set (out, 0x0, 8, 0xf);
  bits_set (out, 0x20, 32, 0x1);
  t = mlx5_cmd_failure_text ("CREATE_SQ", EIO, out);
  g_assert_cmpstr (t, ==,
      "CREATE_SQ failed: Input/output error; firmware status 0xf "
      "(no resources), syndrome 0x1");
  g_free (t);

  g_assert_cmpstr (mlx5_cmd_status_str (0x5), ==, "bad resource");
  g_assert_cmpstr (mlx5_cmd_status_str (0x50), ==, "bad input length");
  g_assert_cmpstr (mlx5_cmd_status_str (0x7), ==, "unknown status");
}

#define CAP 0x80 /* cmd_hca_cap / the Ethernet offload page at bit 0x80 of the output */

/* the general capabilities of a ConnectX-6 Dx as daqiri reads them (kernel offsets) */
static void
cx6_general (guint8 *out)
{
  memset (out, 0, DEVX_ST_SZ_BYTES (query_hca_cap_out));
  bits_set (out, CAP + 0x88, 8, 15);       /* log_max_qp_sz */
  bits_set (out, CAP + 0xc8, 8, 22);       /* log_max_cq_sz */
  bits_set (out, CAP + 0x1b6, 2, 1);       /* port_type Ethernet */
  bits_set (out, CAP + 0x201, 1, 1);       /* striding_rq */
  bits_set (out, CAP + 0x21c, 1, 1);       /* eth_net_offloads */
  bits_set (out, CAP + 0x393, 5, 8);       /* log_max_rqt_size */
  bits_set (out, CAP + 0x3a0, 1, 1);       /* ext_stride_num_range */
  bits_set (out, CAP + 0x3db, 5, 16);      /* log_max_wq_sz */
  bits_set (out, CAP + 0x440, 2, 2);       /* sq_ts_format both */
  bits_set (out, CAP + 0x442, 2, 2);       /* rq_ts_format both */
  bits_set (out, CAP + 0x4e0, 32, 156250); /* device_frequency_khz */
}

static void
test_caps_parse (void)
{
  guint8 *out = g_malloc (DEVX_ST_SZ_BYTES (query_hca_cap_out));
  /* the ConnectX-6 Dx's page, with more fields set and two changed */
  cx6_general (out);
  bits_set (out, CAP + 0x260, 1, 1);  /* bf */
  bits_set (out, CAP + 0x26b, 5, 9);  /* log_bf_reg_size */
  bits_set (out, CAP + 0x3a3, 5, 13); /* log_max_stride_sz_rq */
  bits_set (out, CAP + 0x3ab, 5, 6);  /* log_min_stride_sz_rq */
  bits_set (out, CAP + 0x400, 64, G_GUINT64_CONSTANT (0x0000000400000040));
  bits_set (out, CAP + 0x442, 2, 1);        /* rq_ts_format real time */
  bits_set (out, CAP + 0x4e0, 32, 1000000); /* device_frequency_khz */
  bits_set (out, CAP + 0x5b0, 1, 1);        /* enhanced_cqe_compression */
  bits_set (out, CAP + 0x5ba, 1, 1);        /* mini_cqe_resp_flow_tag (DPDK's offset) */
  bits_set (out, CAP + 0x5bc, 1, 0);        /* mini_cqe_resp_stride_index */
  bits_set (out, CAP + 0x5bf, 1, 1);        /* cqe_compression */
  bits_set (out, CAP + 0x68b, 1, 0);        /* wait_on_data */
  bits_set (out, CAP + 0x68c, 1, 1);        /* wait_on_time (facts §4.7) */
  Mlx5HwCaps caps;
  memset (&caps, 0, sizeof caps);
  mlx5_hw_caps_parse_general (&caps, out);
  g_assert_cmpuint (caps.log_max_qp_sz, ==, 15);
  g_assert_cmpuint (caps.log_max_cq_sz, ==, 22);
  g_assert_cmpuint (caps.port_type, ==, MLX5_CAP_PORT_TYPE_ETH);
  g_assert_true (caps.striding_rq);
  g_assert_true (caps.eth_net_offloads);
  g_assert_true (caps.bf);
  g_assert_cmpuint (caps.log_bf_reg_size, ==, 9);
  g_assert_cmpuint (caps.log_max_rqt_size, ==, 8);
  g_assert_true (caps.ext_stride_num_range);
  g_assert_cmpuint (caps.log_max_stride_sz_rq, ==, 13);
  g_assert_cmpuint (caps.log_min_stride_sz_rq, ==, 6);
  g_assert_cmpuint (caps.log_max_wq_sz, ==, 16);
  g_assert_cmphex (caps.general_obj_types, ==, G_GUINT64_CONSTANT (0x0000000400000040));
  g_assert_cmpuint (caps.sq_ts_format, ==, 2);
  g_assert_cmpuint (caps.rq_ts_format, ==, 1);
  g_assert_cmpuint (caps.device_frequency_khz, ==, 1000000);
  g_assert_false (caps.wait_on_data);
  g_assert_true (caps.wait_on_time);
  g_assert_true (caps.enhanced_cqe_compression);
  g_assert_true (caps.mini_cqe_resp_flow_tag);
  g_assert_false (caps.mini_cqe_resp_stride_index);
  g_assert_true (caps.cqe_compression);
  g_assert_false (caps.qos);
  memset (out, 0, DEVX_ST_SZ_BYTES (query_hca_cap_out));
  bits_set (out, CAP + 0x21b, 1, 1); /* qos */
  mlx5_hw_caps_parse_general (&caps, out);
  g_assert_true (caps.qos);

  /* the QoS page: packet pacing from 1 Mb/s to 100 Gb/s, typical packet size taken */
  memset (out, 0, DEVX_ST_SZ_BYTES (query_hca_cap_out));
  bits_set (out, CAP + 0x0, 1, 1);           /* packet_pacing */
  bits_set (out, CAP + 0x6, 1, 1);           /* packet_pacing_typical_size */
  bits_set (out, CAP + 0x40, 32, 100000000); /* packet_pacing_max_rate, kb/s */
  bits_set (out, CAP + 0x60, 32, 1000);      /* packet_pacing_min_rate */
  mlx5_hw_caps_parse_qos (&caps, out);
  g_assert_true (caps.packet_pacing);
  g_assert_true (caps.packet_pacing_typical_size);
  g_assert_cmpuint (caps.packet_pacing_max_rate, ==, 100000000);
  g_assert_cmpuint (caps.packet_pacing_min_rate, ==, 1000);

  /* the Ethernet offload page over the same union */
  memset (out, 0, DEVX_ST_SZ_BYTES (query_hca_cap_out));
  bits_set (out, CAP + 0x0, 1, 1);  /* csum_cap */
  bits_set (out, CAP + 0x10, 2, 2); /* multi_pkt_send_wqe */
  bits_set (out, CAP + 0x12, 2, 1); /* wqe_inline_mode VPORT_CONTEXT */
  bits_set (out, CAP + 0x1a, 1, 1); /* enhanced_multi_pkt_send_wqe */
  mlx5_hw_caps_parse_eth (&caps, out);
  g_assert_true (caps.csum_cap);
  g_assert_cmpuint (caps.multi_pkt_send_wqe, ==, 2);
  g_assert_cmpuint (caps.wqe_inline_mode, ==, MLX5_CAP_INLINE_MODE_VPORT_CONTEXT);
  g_assert_true (caps.enhanced_multi_pkt_send_wqe);
  g_free (out);

  guint8 vout[DEVX_ST_SZ_BYTES (query_nic_vport_context_out)];
  memset (vout, 0, sizeof vout);
  bits_set (vout, 0x80 + 0x5, 3, MLX5_INLINE_MODE_L2);
  bits_set (vout, 0x80 + 0x130, 16, 9022);
  bits_set (vout, 0x80 + 0x7a0 + 0x10, 16, 0x0c42);
  bits_set (vout, 0x80 + 0x7a0 + 0x20, 32, 0xa1b2c3d4);
  guint mode = 0, mtu = 0;
  guint8 mac[6];
  mlx5_hw_vport_parse (vout, &mode, &mtu, mac);
  g_assert_cmpuint (mode, ==, MLX5_INLINE_MODE_L2);
  g_assert_cmpuint (mtu, ==, 9022);
  const guint8 want_mac[6] = { 0x0c, 0x42, 0xa1, 0xb2, 0xc3, 0xd4 };
  g_assert_cmpmem (mac, 6, want_mac, 6);

  guint8 qout[DEVX_ST_SZ_BYTES (query_q_counter_out)];
  memset (qout, 0, sizeof qout);
  bits_set (qout, 0x180, 32, 123456789);
  g_assert_cmpuint (mlx5_hw_q_counter_out_of_buffer (qout), ==, 123456789);
}

/* ------------------------------------------------------------------------------------ */
/* bring-up requirements, from fabricated QUERY_HCA_CAP outputs */

static void
cx6_dv (struct mlx5dv_context *dv)
{
  memset (dv, 0, sizeof *dv);
  dv->comp_mask = MLX5DV_CONTEXT_MASK_STRIDING_RQ;
  dv->striding_rq_caps.min_single_stride_log_num_of_bytes = 6;
  dv->striding_rq_caps.max_single_stride_log_num_of_bytes = 13;
  dv->striding_rq_caps.min_single_wqe_log_num_of_strides = 3;
  dv->striding_rq_caps.max_single_wqe_log_num_of_strides = 16;
  dv->striding_rq_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
}

static void
caps_from (Mlx5HwCaps *hw, const guint8 *general, gboolean csum)
{
  memset (hw, 0, sizeof *hw);
  mlx5_hw_caps_parse_general (hw, general);
  guint8 *eth = g_malloc0 (DEVX_ST_SZ_BYTES (query_hca_cap_out));
  bits_set (eth, CAP + 0x0, 1, csum ? 1 : 0); /* csum_cap */
  bits_set (eth, CAP + 0x12, 2, 2);           /* wqe_inline_mode NOT_REQUIRED */
  mlx5_hw_caps_parse_eth (hw, eth);
  g_free (eth);
}

/* Compressed completions from the general capabilities: both mini-CQE formats the ring
 * code reads and cqe_compression give the basic layout, enhanced_cqe_compression the
 * enhanced one too; without one of the three, none (and the CQ stays uncompressed). */
static void
test_caps_cqe_comp (void)
{
  static const struct {
    guint comp, enhanced, flow_tag, stride_index;
    gboolean want_basic, want_enhanced;
  } cases[] = {
    { 0, 0, 0, 0, FALSE, FALSE }, /* a device without compression */
    { 1, 0, 1, 1, TRUE, FALSE },  /* basic only (ConnectX-5 class) */
    { 1, 1, 1, 1, TRUE, TRUE },   /* both (ConnectX-6 Dx and later) */
    { 1, 1, 0, 1, FALSE, FALSE }, /* no flow tag mini-CQEs: the mark would be lost */
    { 1, 1, 1, 0, FALSE, FALSE }, /* no stride index mini-CQEs */
    { 0, 1, 1, 1, FALSE, FALSE }, /* enhanced alone means nothing */
  };
  guint8 *out = g_malloc (DEVX_ST_SZ_BYTES (query_hca_cap_out));
  struct mlx5dv_context dv;
  cx6_dv (&dv);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    cx6_general (out);
    bits_set (out, CAP + 0x5bf, 1, cases[i].comp);
    bits_set (out, CAP + 0x5b0, 1, cases[i].enhanced);
    bits_set (out, CAP + 0x5ba, 1, cases[i].flow_tag);
    bits_set (out, CAP + 0x5bc, 1, cases[i].stride_index);
    Mlx5HwCaps hw;
    caps_from (&hw, out, TRUE);
    Mlx5Caps caps;
    mlx5_hw_caps_fill (&caps, &hw, &dv, FALSE);
    if (caps.cqe_comp_basic != cases[i].want_basic ||
        caps.cqe_comp_enhanced != cases[i].want_enhanced)
      g_error ("case %u: basic %d enhanced %d, want %d %d", i, caps.cqe_comp_basic,
          caps.cqe_comp_enhanced, cases[i].want_basic, cases[i].want_enhanced);
    char *text = mlx5_hw_caps_describe (&hw, &dv);
    char *want = g_strdup_printf ("cqe_compression %u, enhanced_cqe_compression %u, "
                                  "mini_cqe_resp_flow_tag %u, mini_cqe_resp_stride_index %u",
        cases[i].comp, cases[i].enhanced, cases[i].flow_tag, cases[i].stride_index);
    g_assert_nonnull (strstr (text, want));
    g_free (want);
    g_free (text);
  }
  g_free (out);
}

/* the capabilities of the ConnectX-6 blob with one general field changed */
static void
cx6_caps_with (Mlx5HwCaps *hw, gsize off, guint width, guint64 value)
{
  guint8 *out = g_malloc (DEVX_ST_SZ_BYTES (query_hca_cap_out));
  cx6_general (out);
  bits_set (out, CAP + off, width, value);
  caps_from (hw, out, TRUE);
  g_free (out);
}

/* the check must fail with a device error that says `expect` */
static void
assert_caps_refused (const Mlx5HwCaps *hw, const struct mlx5dv_context *dv, const char *expect)
{
  GError *error = NULL;
  g_assert_false (mlx5_hw_caps_check (hw, dv, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_DEVICE);
  if (strstr (error->message, expect) == NULL)
    g_error ("\"%s\" does not say \"%s\"", error->message, expect);
  g_error_free (error);
}

/* the ConnectX-6 blob with one general field changed must fail the check, naming it */
static void
assert_general_refused (gsize off, guint width, guint64 value, const char *expect)
{
  Mlx5HwCaps hw;
  cx6_caps_with (&hw, off, width, value);
  struct mlx5dv_context dv;
  cx6_dv (&dv);
  assert_caps_refused (&hw, &dv, expect);
}

static void
assert_dv_refused (const struct mlx5dv_context *dv, gboolean ext, const char *expect)
{
  Mlx5HwCaps hw;
  cx6_caps_with (&hw, 0x3a0, 1, ext ? 1 : 0); /* ext_stride_num_range */
  assert_caps_refused (&hw, dv, expect);
}

static void
test_caps_check (void)
{
  guint8 *out = g_malloc (DEVX_ST_SZ_BYTES (query_hca_cap_out));
  cx6_general (out);
  Mlx5HwCaps hw;
  caps_from (&hw, out, TRUE);
  struct mlx5dv_context dv;
  cx6_dv (&dv);
  GError *error = NULL;
  g_assert_true (mlx5_hw_caps_check (&hw, &dv, &error));
  g_assert_no_error (error);
  Mlx5Caps caps;
  mlx5_hw_caps_fill (&caps, &hw, &dv, FALSE);
  g_assert_true (caps.tx_csum);
  g_assert_cmpuint (caps.min_log_strides, ==, 3);
  g_assert_cmpuint (caps.wait_on_time, ==, hw.wait_on_time);
  /* no QoS page: no packet pacing; with one, its rates in bit/s */
  g_assert_cmpuint (caps.pp_max_bps, ==, 0);
  hw.qos = TRUE;
  hw.packet_pacing = TRUE;
  hw.packet_pacing_min_rate = 1000;
  hw.packet_pacing_max_rate = 100000000;
  mlx5_hw_caps_fill (&caps, &hw, &dv, FALSE);
  g_assert_cmpuint (caps.pp_min_bps, ==, G_GUINT64_CONSTANT (1000000));
  g_assert_cmpuint (caps.pp_max_bps, ==, G_GUINT64_CONSTANT (100000000000));
  hw.packet_pacing = FALSE;
  mlx5_hw_caps_fill (&caps, &hw, &dv, FALSE);
  g_assert_cmpuint (caps.pp_max_bps, ==, 0);
  char *text = mlx5_hw_caps_describe (&hw, &dv);
  g_assert_nonnull (strstr (text, "striding_rq 1, ext_stride_num_range 1"));
  g_assert_nonnull (strstr (text, "rq_ts_format 2, sq_ts_format 2"));
  g_assert_nonnull (strstr (text, "csum_cap 1"));
  g_free (text);

  /* no checksum offload: not an open error, but TX with tx-csum=on is refused */
  caps_from (&hw, out, FALSE);
  g_assert_true (mlx5_hw_caps_check (&hw, &dv, NULL));
  mlx5_hw_caps_fill (&caps, &hw, &dv, FALSE);
  g_assert_false (caps.tx_csum);
  g_free (out);

  assert_general_refused (0x1b6, 2, 0,
      "HCA capability port_type is 0 (InfiniBand); daqiri "
      "needs 1 (Ethernet)");
  assert_general_refused (0x21c, 1, 0, "HCA capability eth_net_offloads is 0; daqiri needs 1");
  assert_general_refused (0x201, 1, 0, "HCA capability striding_rq is 0; daqiri needs 1");
  assert_general_refused (0x3db, 5, 1,
      "HCA capability log_max_wq_sz is 1; daqiri needs at "
      "least 2");
  assert_general_refused (0x88, 8, 0, "HCA capability log_max_qp_sz is 0");
  assert_general_refused (0xc8, 8, 1, "HCA capability log_max_cq_sz is 1");

  /* rdma-core's striding RQ capabilities */
  struct mlx5dv_context bad;
  cx6_dv (&bad);
  bad.comp_mask = 0;
  assert_dv_refused (&bad, TRUE, "no striding RQ capabilities");
  cx6_dv (&bad);
  bad.striding_rq_caps.supported_qpts = 1u << IBV_QPT_UD;
  assert_dv_refused (&bad, TRUE, "striding RQ supported_qpts is 0x10; daqiri needs raw packet");
  cx6_dv (&bad);
  bad.striding_rq_caps.min_single_stride_log_num_of_bytes = 14;
  bad.striding_rq_caps.max_single_stride_log_num_of_bytes = 15;
  assert_dv_refused (&bad, TRUE, "stride sizes are 2^14..2^15 bytes");
  cx6_dv (&bad);
  bad.striding_rq_caps.max_single_wqe_log_num_of_strides = 8;
  /* 2^3..2^8 strides: encodable only with the extended range */
  assert_dv_refused (&bad, FALSE, "strides per WQE are 2^3..2^8");
}

/* mlx5_hw_clock_choose must succeed and pick `want`; it starts from another clock, so
 * that a call that picks none is seen */
static void
expect_clock (const Mlx5HwCaps *hw, gboolean real_time_ts, gboolean phc_readable,
    int clock_info_errno, gboolean need_hw_ts, char **warning, Mlx5HwClock want)
{
  Mlx5HwClock clock = want == MLX5_HW_CLOCK_NONE ? MLX5_HW_CLOCK_FREE_RUNNING : MLX5_HW_CLOCK_NONE;
  GError *error = NULL;
  g_assert_true (mlx5_hw_clock_choose (
      hw, real_time_ts, phc_readable, clock_info_errno, need_hw_ts, &clock, warning, &error));
  g_assert_no_error (error);
  g_assert_cmpint (clock, ==, want);
}

static void
test_clock_choose (void)
{
  Mlx5HwCaps hw;
  memset (&hw, 0, sizeof hw);
  hw.rq_ts_format = hw.sq_ts_format = MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING_AND_REAL_TIME;
  Mlx5HwClock clock = MLX5_HW_CLOCK_NONE;
  char *warning = NULL;
  GError *error = NULL;

  /* real time where rdma-core says so, the PHC reads and the queues can stamp it */
  expect_clock (&hw, TRUE, TRUE, 0, FALSE, &warning, MLX5_HW_CLOCK_REAL_TIME);
  g_assert_null (warning);
  /* ... even when the clock conversion fails: real time needs none */
  expect_clock (&hw, TRUE, TRUE, EOPNOTSUPP, TRUE, &warning, MLX5_HW_CLOCK_REAL_TIME);
  /* an unreadable PHC: free-running */
  expect_clock (&hw, TRUE, FALSE, 0, FALSE, &warning, MLX5_HW_CLOCK_FREE_RUNNING);
  /* queues that stamp only free-running: free-running */
  hw.rq_ts_format = MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING;
  expect_clock (&hw, TRUE, TRUE, 0, FALSE, &warning, MLX5_HW_CLOCK_FREE_RUNNING);

  /* no clock conversion: without a need for NIC time, no NIC time and a warning */
  expect_clock (&hw, FALSE, FALSE, EOPNOTSUPP, FALSE, &warning, MLX5_HW_CLOCK_NONE);
  g_assert_nonnull (strstr (warning, "mlx5dv_get_clock_info) failed: "));
  g_assert_nonnull (strstr (warning, "port time is CLOCK_MONOTONIC"));
  g_free (warning);
  /* ... and an error when hardware timestamps are needed */
  g_assert_false (
      mlx5_hw_clock_choose (&hw, FALSE, FALSE, EOPNOTSUPP, TRUE, &clock, &warning, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "hardware timestamps are needed"));
  g_clear_error (&error);

  /* queues that stamp real time only, and no real-time clock to read */
  hw.rq_ts_format = MLX5_TIMESTAMP_FORMAT_CAP_REAL_TIME;
  g_assert_false (mlx5_hw_clock_choose (&hw, TRUE, FALSE, 0, FALSE, &clock, &warning, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "rq_ts_format 1 (real time only)"));
  g_assert_nonnull (strstr (error->message, "PTP hardware clock cannot be read"));
  g_clear_error (&error);
  g_assert_false (mlx5_hw_clock_choose (&hw, FALSE, FALSE, 0, FALSE, &clock, &warning, &error));
  g_assert_nonnull (strstr (error->message, "MLX5DV_CONTEXT_FLAGS_REAL_TIME_TS"));
  g_clear_error (&error);
}

static void
test_rqt_check (void)
{
  GError *error = NULL;
  g_assert_true (mlx5_hw_rqt_check (8, 3, &error));
  g_assert_true (mlx5_hw_rqt_check (5, 3, &error));
  g_assert_no_error (error);
  g_assert_false (mlx5_hw_rqt_check (9, 3, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_FLOW);
  g_assert_cmpstr (error->message, ==,
      "RSS over 9 RX queues needs an indirection table (RQT) of 16 entries; the device "
      "allows 8 (HCA capability log_max_rqt_size 3)");
  g_clear_error (&error);
}

/* ------------------------------------------------------------------------------------ */
/* decisions taken from the capabilities */

static void
test_decisions (void)
{
  Mlx5HwCaps hw = { .log_max_wq_sz = 16,
    .log_max_qp_sz = 15,
    .log_max_cq_sz = 22,
    .device_frequency_khz = 156250,
    .ext_stride_num_range = TRUE };
  struct mlx5dv_context dv;
  cx6_dv (&dv);
  Mlx5Caps caps;
  mlx5_hw_caps_fill (&caps, &hw, &dv, FALSE);
  g_assert_cmpuint (caps.min_log_stride_size, ==, 6);
  g_assert_cmpuint (caps.max_log_stride_size, ==, 13);
  g_assert_cmpuint (caps.min_log_strides, ==, 3);
  g_assert_cmpuint (caps.max_log_strides, ==, 16);
  g_assert_cmpuint (caps.max_log_wqes, ==, 16);
  g_assert_cmpuint (caps.max_log_wqebbs, ==, 15);
  g_assert_cmpuint (caps.max_log_cq_size, ==, 22);
  g_assert_false (caps.real_time_ts);
  g_assert_cmpuint (caps.device_frequency_khz, ==, 156250);
  mlx5_hw_caps_fill (&caps, &hw, &dv, TRUE);
  g_assert_true (caps.real_time_ts);
  /* fewer than 2^9 strides per WQE only with the extended range */
  hw.ext_stride_num_range = FALSE;
  mlx5_hw_caps_fill (&caps, &hw, &dv, FALSE);
  g_assert_cmpuint (caps.min_log_strides, ==, 9);
  hw.ext_stride_num_range = TRUE;
  /* no striding RQ for raw packet queues (or the kernel did not answer the mask): no
   * stride limits, which the RQ check turns into a clear error */
  dv.striding_rq_caps.supported_qpts = 1u << IBV_QPT_UD;
  mlx5_hw_caps_fill (&caps, &hw, &dv, FALSE);
  g_assert_cmpuint (caps.max_log_strides, ==, 0);
  g_assert_cmpuint (caps.max_log_stride_size, ==, 0);
  dv.striding_rq_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
  dv.comp_mask = 0;
  mlx5_hw_caps_fill (&caps, &hw, &dv, FALSE);
  g_assert_cmpuint (caps.max_log_strides, ==, 0);
  hw.log_max_qp_sz = 0;
  mlx5_hw_caps_fill (&caps, &hw, &dv, FALSE);
  g_assert_cmpuint (caps.max_log_wqebbs, ==, 16);

  /* send WQE inline requirement */
  memset (&hw, 0, sizeof hw);
  g_assert_cmpuint (mlx5_hw_tx_inline_mode (&hw, TRUE), ==, MLX5_INLINE_MODE_NONE);
  hw.eth_net_offloads = TRUE;
  hw.wqe_inline_mode = MLX5_CAP_INLINE_MODE_NOT_REQUIRED;
  g_assert_cmpuint (mlx5_hw_tx_inline_mode (&hw, FALSE), ==, MLX5_INLINE_MODE_NONE);
  hw.wqe_inline_mode = MLX5_CAP_INLINE_MODE_L2;
  g_assert_cmpuint (mlx5_hw_tx_inline_mode (&hw, TRUE), ==, MLX5_INLINE_MODE_L2);
  hw.wqe_inline_mode = MLX5_CAP_INLINE_MODE_VPORT_CONTEXT;
  hw.min_wqe_inline_mode = MLX5_INLINE_MODE_NONE;
  g_assert_cmpuint (mlx5_hw_tx_inline_mode (&hw, TRUE), ==, MLX5_INLINE_MODE_NONE);
  hw.min_wqe_inline_mode = MLX5_INLINE_MODE_IP;
  g_assert_cmpuint (mlx5_hw_tx_inline_mode (&hw, TRUE), ==, MLX5_INLINE_MODE_IP);
  g_assert_cmpuint (mlx5_hw_tx_inline_mode (&hw, FALSE), ==, MLX5_INLINE_MODE_L2);

  /* multi-packet WQEs */
  memset (&hw, 0, sizeof hw);
  hw.enhanced_multi_pkt_send_wqe = TRUE;
  g_assert_false (mlx5_hw_tx_allow_mpw (&hw));
  hw.eth_net_offloads = TRUE;
  g_assert_true (mlx5_hw_tx_allow_mpw (&hw));
  hw.enhanced_multi_pkt_send_wqe = FALSE;
  g_assert_false (mlx5_hw_tx_allow_mpw (&hw));
  hw.multi_pkt_send_wqe = 1;
  g_assert_true (mlx5_hw_tx_allow_mpw (&hw));

  /* the BlueFlame buffer the datapath alternates between */
  g_assert_cmpuint (mlx5_hw_bf_size (TRUE, 9), ==, 0);
  g_assert_cmpuint (mlx5_hw_bf_size (FALSE, 9), ==, 256);
  g_assert_cmpuint (mlx5_hw_bf_size (FALSE, 10), ==, 512);
  g_assert_cmpuint (mlx5_hw_bf_size (FALSE, 0), ==, 256);

  g_assert_cmpuint (mlx5_hw_vport_mtu_to_netdev (1522), ==, 1500);
  g_assert_cmpuint (mlx5_hw_vport_mtu_to_netdev (9022), ==, 9000);
  g_assert_cmpuint (mlx5_hw_vport_mtu_to_netdev (0), ==, 1500);

  /* doorbell record placement */
  gsize bytes;
  guint64 off;
  g_assert_true (mlx5_hw_dbr_in_ring_umem (0x10000, 0x2000, 0x12000, 4096, &bytes, &off));
  g_assert_cmpuint (bytes, ==, 0x2008);
  g_assert_cmpuint (off, ==, 0x2000);
  g_assert_true (mlx5_hw_dbr_in_ring_umem (0x10000, 0x2000, 0x12ff8, 4096, &bytes, &off));
  g_assert_cmpuint (bytes, ==, 0x3000);
  g_assert_cmpuint (off, ==, 0x2ff8);
  /* past the page after the ring, inside the ring, or before it: a umem of its own */
  g_assert_false (mlx5_hw_dbr_in_ring_umem (0x10000, 0x2000, 0x12ffc, 4096, &bytes, &off));
  g_assert_cmpuint (bytes, ==, 0x2000);
  g_assert_cmpuint (off, ==, 0);
  g_assert_false (mlx5_hw_dbr_in_ring_umem (0x10000, 0x2000, 0x11000, 4096, &bytes, &off));
  g_assert_false (mlx5_hw_dbr_in_ring_umem (0x10000, 0x2000, 0x0ff00, 4096, &bytes, &off));
  g_assert_true (mlx5_hw_dbr_in_ring_umem (0x10000, 0x2000, 0x1c000, 65536, &bytes, &off));
  g_assert_cmpuint (off, ==, 0xc000);
}

/* ------------------------------------------------------------------------------------ */
/* geometry checks */

static Mlx5Caps
sample_caps (void)
{
  Mlx5Caps caps;
  memset (&caps, 0, sizeof caps);
  caps.min_log_stride_size = 6;
  caps.max_log_stride_size = 13;
  caps.min_log_strides = 3;
  caps.max_log_strides = 16;
  caps.max_log_wqes = 16;
  caps.max_log_cq_size = 22;
  caps.max_log_wqebbs = 15;
  return caps;
}

/* `errp` is read after the call that fills it (arguments are evaluated in no set order) */
static void
expect_ok (gboolean ok, GError **errp)
{
  g_assert_true (ok);
  g_assert_no_error (*errp);
}

static void
expect_error (gboolean ok, GError **errp, int code, const char *message)
{
  g_assert_false (ok);
  g_assert_error (*errp, DQ_ERROR, code);
  g_assert_cmpstr ((*errp)->message, ==, message);
  g_clear_error (errp);
}

static void
test_geometry (void)
{
  Mlx5Caps caps = sample_caps ();
  static guint8 ring[256] __attribute__ ((aligned (64)));
  guint32 dbrec[2];
  int created = 1;
  GError *err = NULL;

  Mlx5Cq cq = { .ring = ring, .dbrec = dbrec, .log_size = 22, .priv = &created };
  expect_ok (mlx5_hw_cq_check (&cq, &caps, &err), &err);
  cq.log_size = 23;
  expect_error (mlx5_hw_cq_check (&cq, &caps, &err), &err, DQ_ERROR_CONFIG,
      "mlx5: a CQ of 2^23 CQEs is larger than the device allows (2^22)");
  cq.log_size = 10;
  cq.ring = ring + 8;
  err = NULL;
  g_assert_false (mlx5_hw_cq_check (&cq, &caps, &err));
  g_assert_error (err, DQ_ERROR, DQ_ERROR_CONFIG);
  g_assert_true (g_str_has_suffix (err->message, "is not 64-byte aligned"));
  g_clear_error (&err);
  cq.ring = ring;

  Mlx5Rq rq = {
    .wqes = ring, .dbrec = dbrec, .log_wqes = 6, .log_strides = 9, .log_stride_size = 11, .cq = &cq
  };
  expect_ok (mlx5_hw_rq_check (&rq, &caps, &err), &err);
  rq.log_stride_size = 5;
  expect_error (mlx5_hw_rq_check (&rq, &caps, &err), &err, DQ_ERROR_CONFIG,
      "mlx5: a stride of 32 bytes is outside what the device allows (64..8192 bytes)");
  rq.log_stride_size = 11;
  rq.log_strides = 17;
  expect_error (mlx5_hw_rq_check (&rq, &caps, &err), &err, DQ_ERROR_CONFIG,
      "mlx5: 131072 strides per WQE is outside what the device allows (8..65536)");
  rq.log_strides = 9;
  rq.log_wqes = 17;
  expect_error (mlx5_hw_rq_check (&rq, &caps, &err), &err, DQ_ERROR_CONFIG,
      "mlx5: an RQ of 2^17 WQEs is larger than the device allows (2^16)");
  rq.log_wqes = 6;
  cq.priv = NULL;
  expect_error (mlx5_hw_rq_check (&rq, &caps, &err), &err, DQ_ERROR_CONFIG,
      "mlx5: the RQ's completion queue was not created");
  cq.priv = &created;
  Mlx5Caps none = caps;
  none.min_log_strides = none.max_log_strides = 0;
  expect_error (mlx5_hw_rq_check (&rq, &none, &err), &err, DQ_ERROR_DEVICE,
      "mlx5: this device has no striding (multi-packet) receive queues");
  rq.dbrec = NULL;
  expect_error (mlx5_hw_rq_check (&rq, &caps, &err), &err, DQ_ERROR_CONFIG,
      "mlx5: the RQ doorbell record is not set");
  rq.dbrec = dbrec;

  Mlx5Sq sq = { .wqes = ring, .dbrec = dbrec, .log_wqebbs = 15, .cq = &cq };
  expect_ok (mlx5_hw_sq_check (&sq, &caps, &err), &err);
  sq.log_wqebbs = 16;
  expect_error (mlx5_hw_sq_check (&sq, &caps, &err), &err, DQ_ERROR_CONFIG,
      "mlx5: an SQ of 2^16 WQE basic blocks is larger than the device allows (2^15)");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5-layout/cmd/encodings", test_encodings);
  g_test_add_func ("/mlx5-layout/cmd/query-hca-cap", test_query_hca_cap);
  g_test_add_func ("/mlx5-layout/cmd/small-commands", test_small_commands);
  g_test_add_func ("/mlx5-layout/cmd/create-cq", test_create_cq);
  g_test_add_func ("/mlx5-layout/cmd/create-rq", test_create_rq);
  g_test_add_func ("/mlx5-layout/cmd/modify-rq", test_modify_rq);
  g_test_add_func ("/mlx5-layout/cmd/create-sq", test_create_sq);
  g_test_add_func ("/mlx5-layout/cmd/modify-sq", test_modify_sq);
  g_test_add_func ("/mlx5-layout/cmd/create-tir-direct", test_create_tir_direct);
  g_test_add_func ("/mlx5-layout/cmd/create-rqt", test_create_rqt);
  g_test_add_func ("/mlx5-layout/cmd/create-tir-rss", test_create_tir_rss);
  g_test_add_func ("/mlx5-layout/cmd/failure-text", test_failure_text);
  g_test_add_func ("/mlx5-layout/cmd/caps-parse", test_caps_parse);
  g_test_add_func ("/mlx5-layout/cmd/decisions", test_decisions);
  g_test_add_func ("/mlx5-layout/cmd/caps-check", test_caps_check);
  g_test_add_func ("/mlx5-layout/cmd/caps-cqe-comp", test_caps_cqe_comp);
  g_test_add_func ("/mlx5-layout/cmd/clock-choose", test_clock_choose);
  g_test_add_func ("/mlx5-layout/cmd/rqt-check", test_rqt_check);
  g_test_add_func ("/mlx5-layout/cmd/geometry", test_geometry);
  return g_test_run ();
}
