/* The WQE and CQE fields the mlx5 datapath reads and writes (reference/daqiri-facts.md
 * §4.2-4.6): rdma-core's mlx5dv.h structs, which rx.c and tx.c use, against the byte
 * offsets of the PRM as recorded in the facts and in the kernel's struct mlx5_cqe64
 * (include/linux/mlx5/device.h). A rdma-core release that moved a field, or a struct
 * padded differently by a compiler, fails here rather than on a NIC. */
#include <endian.h>
#include <stddef.h>
#include <string.h>

#include <glib.h>
#include <infiniband/mlx5dv.h>

#include "mlx5-dma.h"

#define SIZE(type, expected) g_assert_cmpuint (sizeof (struct type), ==, (expected))

/* A field of one of rdma-core's structs: its offset and size as the compiler lays them
 * out, and the PRM's (size 0: its size is not pinned here). */
typedef struct {
  const char *type, *field;
  gsize offset, size;
  gsize prm_offset, prm_size;
} FieldLayout;

#define FIELD(type, field, prm_offset, prm_size) \
  { \
    G_STRINGIFY (type), G_STRINGIFY (field), offsetof (struct type, field), \
        sizeof (((struct type *) 0)->field), (prm_offset), (prm_size) \
  }

static const FieldLayout fields[] = {
  /* striding RQ: the WQE (ring index) of the packet, and its first stride */
  FIELD (mlx5_cqe64, wqe_id, 2, 2),
  FIELD (mlx5_cqe64, wqe_counter, 60, 2),
  /* filler bit 31, strides consumed 30..16, bytes 15..0 */
  FIELD (mlx5_cqe64, byte_cnt, 44, 4),
  FIELD (mlx5_cqe64, timestamp, 48, 8),
  /* flow tag (MARK) in the low 24 bits */
  FIELD (mlx5_cqe64, sop_drop_qpn, 56, 4),
  FIELD (mlx5_cqe64, signature, 62, 0),
  /* opcode in the high nibble, owner bit 0 */
  FIELD (mlx5_cqe64, op_own, 63, 1),
  /* L2/L3/L4 checksum-ok bits; the header types beside them; the stripped VLAN */
  FIELD (mlx5_cqe64, flags_rqpn, 24, 0),
  FIELD (mlx5_cqe64, hds_ip_ext, 28, 1),
  FIELD (mlx5_cqe64, l4_hdr_type_etc, 29, 0),
  FIELD (mlx5_cqe64, vlan_info, 30, 0),
  FIELD (mlx5_cqe64, srqn_uidx, 32, 0),

  FIELD (mlx5_err_cqe, srqn, 32, 0),
  FIELD (mlx5_err_cqe, vendor_err_synd, 54, 0),
  FIELD (mlx5_err_cqe, syndrome, 55, 0),
  FIELD (mlx5_err_cqe, s_wqe_opcode_qpn, 56, 0),
  FIELD (mlx5_err_cqe, wqe_counter, 60, 0),
  FIELD (mlx5_err_cqe, signature, 62, 0),
  FIELD (mlx5_err_cqe, op_own, 63, 0),

  /* opmod << 24 | WQE index << 8 | opcode */
  FIELD (mlx5_wqe_ctrl_seg, opmod_idx_opcode, 0, 4),
  /* SQN << 8 | data segments (16 bytes each) */
  FIELD (mlx5_wqe_ctrl_seg, qpn_ds, 4, 4),
  FIELD (mlx5_wqe_ctrl_seg, signature, 8, 0),
  FIELD (mlx5_wqe_ctrl_seg, dci_stream_channel_id, 9, 0),
  /* fence / completion mode / solicited */
  FIELD (mlx5_wqe_ctrl_seg, fm_ce_se, 11, 1),
  FIELD (mlx5_wqe_ctrl_seg, imm, 12, 0),

  FIELD (mlx5_wqe_eth_seg, cs_flags, 4, 1),
  FIELD (mlx5_wqe_eth_seg, mss, 6, 0),
  FIELD (mlx5_wqe_eth_seg, inline_hdr_sz, 12, 2),
  FIELD (mlx5_wqe_eth_seg, inline_hdr_start, 14, 0),
  FIELD (mlx5_wqe_eth_seg, inline_hdr, 16, 0),

  FIELD (mlx5_wqe_data_seg, byte_count, 0, 4),
  FIELD (mlx5_wqe_data_seg, lkey, 4, 4),
  FIELD (mlx5_wqe_data_seg, addr, 8, 8),

  FIELD (mlx5_mprq_wqe, nseg, 0, 0),
  FIELD (mlx5_mprq_wqe, dseg, 16, 0),
};

/* Checks every field of struct `type` in `fields` against the PRM; asserts that the
 * table has at least one. */
static void
check_fields (const char *type)
{
  guint checked = 0;
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++) {
    const FieldLayout *f = &fields[i];
    if (strcmp (f->type, type) != 0)
      continue;
    if (f->offset != f->prm_offset)
      g_error ("%s.%s at byte %zu, not %zu", type, f->field, f->offset, f->prm_offset);
    if (f->prm_size != 0 && f->size != f->prm_size)
      g_error ("%s.%s of %zu bytes, not %zu", type, f->field, f->size, f->prm_size);
    checked++;
  }
  g_assert_cmpuint (checked, >, 0);
}

static void
test_cqe64 (void)
{
  SIZE (mlx5_cqe64, 64);
  check_fields ("mlx5_cqe64");
}

static void
test_err_cqe (void)
{
  SIZE (mlx5_err_cqe, 64);
  check_fields ("mlx5_err_cqe");
  /* an error CQE is read through the same 64 bytes as a good one */
  g_assert_cmpuint (
      offsetof (struct mlx5_err_cqe, op_own), ==, offsetof (struct mlx5_cqe64, op_own));
  g_assert_cmpuint (
      offsetof (struct mlx5_err_cqe, wqe_counter), ==, offsetof (struct mlx5_cqe64, wqe_counter));
}

static void
test_ctrl_seg (void)
{
  SIZE (mlx5_wqe_ctrl_seg, 16);
  check_fields ("mlx5_wqe_ctrl_seg");
}

static void
test_eth_seg (void)
{
  SIZE (mlx5_wqe_eth_seg, 32);
  check_fields ("mlx5_wqe_eth_seg");
}

static void
test_data_seg (void)
{
  SIZE (mlx5_wqe_data_seg, 16);
  check_fields ("mlx5_wqe_data_seg");
}

/* the WAIT WQE's wait segment (daqiri-facts §4.6: operation, lkey, va_high, va_low, then
 * the 64-bit value and mask), 32 bytes: with the ctrl segment 3 DS, one WQEBB */
static void
test_wait_seg (void)
{
  g_assert_cmpuint (sizeof (Mlx5WaitSeg), ==, 32);
  g_assert_cmpuint (offsetof (Mlx5WaitSeg, operation), ==, 0);
  g_assert_cmpuint (offsetof (Mlx5WaitSeg, lkey), ==, 4);
  g_assert_cmpuint (offsetof (Mlx5WaitSeg, va_high), ==, 8);
  g_assert_cmpuint (offsetof (Mlx5WaitSeg, va_low), ==, 12);
  g_assert_cmpuint (offsetof (Mlx5WaitSeg, value), ==, 16);
  g_assert_cmpuint (offsetof (Mlx5WaitSeg, mask), ==, 24);
  g_assert_cmpuint (sizeof (struct mlx5_wqe_ctrl_seg) + sizeof (Mlx5WaitSeg), ==, 3 * 16);
}

static void
test_mprq_wqe (void)
{
  /* the 32-byte striding RQ WQE (log_wq_stride 5): a 16-byte next segment, left zero,
   * then the data segment of the WQE's whole region */
  SIZE (mlx5_wqe_srq_next_seg, 16);
  SIZE (mlx5_mprq_wqe, 32);
  check_fields ("mlx5_mprq_wqe");
  g_assert_cmpuint (1u << 5, ==, sizeof (struct mlx5_mprq_wqe));
}

static void
test_constants (void)
{
  /* doorbell record slots */
  g_assert_cmpint (MLX5_RCV_DBR, ==, 0);
  g_assert_cmpint (MLX5_SND_DBR, ==, 1);
  g_assert_cmpint (MLX5_SEND_WQE_BB, ==, 64);
  /* CQE opcodes (op_own >> 4) and the owner bit */
  g_assert_cmpint (MLX5_CQE_OWNER_MASK, ==, 1);
  g_assert_cmpint (MLX5_CQE_REQ, ==, 0x0);
  g_assert_cmpint (MLX5_CQE_RESP_SEND, ==, 0x2);
  g_assert_cmpint (MLX5_CQE_REQ_ERR, ==, 0xd);
  g_assert_cmpint (MLX5_CQE_RESP_ERR, ==, 0xe);
  g_assert_cmpint (MLX5_CQE_INVALID, ==, 0xf);
  /* send opcode, completion modes in fm_ce_se bits 3..2: 2 = always (CQ_UPDATE),
   * 1 = only on the first error (what unsignalled WQEs must use, DAQIRI #269) */
  g_assert_cmpint (MLX5_OPCODE_SEND, ==, 0x0a);
  g_assert_cmpint (MLX5_WQE_CTRL_CQ_UPDATE, ==, 0x08);
  g_assert_cmpint (MLX5_WQE_CTRL_CQ_UPDATE >> 2, ==, 2);
  g_assert_cmpint (MLX5_WQE_CTRL_SOLICITED, ==, 0x02);
  /* checksum offload flags of the Ethernet segment */
  g_assert_cmpint (MLX5_ETH_WQE_L3_CSUM, ==, 0x40);
  g_assert_cmpint (MLX5_ETH_WQE_L4_CSUM, ==, 0x80);
  /* checksum-ok bits of hds_ip_ext */
  g_assert_cmpint (MLX5_CQE_L2_OK, ==, 1 << 0);
  g_assert_cmpint (MLX5_CQE_L3_OK, ==, 1 << 1);
  g_assert_cmpint (MLX5_CQE_L4_OK, ==, 1 << 2);
}

/* A CQE as a device writes it (big-endian at the PRM's byte offsets), read back through
 * rdma-core's struct: the decode the datapath does. */
static void
test_cqe_bytes (void)
{
  guint8 raw[64];
  memset (raw, 0, sizeof raw);
  raw[2] = 0x01; /* wqe_id 0x0123 */
  raw[3] = 0x23;
  raw[44] = 0x80 | 0x00; /* filler, 3 strides, 0 bytes */
  raw[45] = 0x03;
  raw[48] = 0x11; /* timestamp 0x1122334455667788 */
  raw[49] = 0x22;
  raw[50] = 0x33;
  raw[51] = 0x44;
  raw[52] = 0x55;
  raw[53] = 0x66;
  raw[54] = 0x77;
  raw[55] = 0x88;
  raw[56] = 0xaa; /* sop_drop_qpn: flow tag 0xbbccdd */
  raw[57] = 0xbb;
  raw[58] = 0xcc;
  raw[59] = 0xdd;
  raw[60] = 0x01; /* wqe_counter (first stride) 0x01ff */
  raw[61] = 0xff;
  raw[63] = 0x21; /* opcode 2, owner 1 */
  const struct mlx5_cqe64 *c = (const void *) raw;
  g_assert_cmpuint (be16toh (c->wqe_id), ==, 0x0123);
  guint32 bc = be32toh (c->byte_cnt);
  g_assert_cmpuint (bc >> 31, ==, 1);
  g_assert_cmpuint ((bc >> 16) & 0x7fff, ==, 3);
  g_assert_cmpuint (bc & 0xffff, ==, 0);
  g_assert_cmphex (be64toh (c->timestamp), ==, G_GUINT64_CONSTANT (0x1122334455667788));
  g_assert_cmphex (be32toh (c->sop_drop_qpn) & 0xffffff, ==, 0xbbccdd);
  g_assert_cmpuint (be16toh (c->wqe_counter), ==, 0x01ff);
  g_assert_cmpuint (c->op_own >> 4, ==, 2);
  g_assert_cmpuint (c->op_own & MLX5_CQE_OWNER_MASK, ==, 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5-layout/wqe/cqe64", test_cqe64);
  g_test_add_func ("/mlx5-layout/wqe/err-cqe", test_err_cqe);
  g_test_add_func ("/mlx5-layout/wqe/ctrl-seg", test_ctrl_seg);
  g_test_add_func ("/mlx5-layout/wqe/eth-seg", test_eth_seg);
  g_test_add_func ("/mlx5-layout/wqe/data-seg", test_data_seg);
  g_test_add_func ("/mlx5-layout/wqe/wait-seg", test_wait_seg);
  g_test_add_func ("/mlx5-layout/wqe/mprq-wqe", test_mprq_wqe);
  g_test_add_func ("/mlx5-layout/wqe/constants", test_constants);
  g_test_add_func ("/mlx5-layout/wqe/cqe-bytes", test_cqe_bytes);
  return g_test_run ();
}
