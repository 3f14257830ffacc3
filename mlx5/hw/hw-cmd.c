/* DevX mailbox builders, capability parsing, failure text and steering match buffers.
 * Pure functions: see hw-cmd.h. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "hw-cmd.h"
#include "../mlx5-dma.h"
#include "../prm/mlx5-ifc.h"

/* ---------------------------------------------------------------------------------- */
/* encodings */

guint
mlx5_hw_page_size_encode (guint page_shift)
{
  g_return_val_if_fail (page_shift >= MLX5_ADAPTER_PAGE_SHIFT, 0);
  return page_shift - MLX5_ADAPTER_PAGE_SHIFT;
}

guint
mlx5_hw_log_strides_encode (guint log_strides)
{
  /* 9..16 -> 0..7; with ext_stride_num_range 3..8 -> 0xa..0xf (negative in 4 bits) */
  return (guint) ((int) log_strides - MLX5_MIN_SINGLE_WQE_LOG_NUM_STRIDES) & 0xf;
}

guint
mlx5_hw_log_stride_size_encode (guint log_stride_size)
{
  g_return_val_if_fail (log_stride_size >= MLX5_MIN_SINGLE_STRIDE_LOG_NUM_BYTES, 0);
  return log_stride_size - MLX5_MIN_SINGLE_STRIDE_LOG_NUM_BYTES;
}

guint
mlx5_hw_ts_format (gboolean real_time)
{
  /* Ask for real time only where the device said it stamps it (DAQIRI #283: REAL_TIME
   * on a device without it fails CREATE_RQ with syndrome 0x43d98f). FREE_RUNNING rather
   * than DEFAULT: DEFAULT follows the firmware's configuration, and the clock
   * conversion must know which of the two it got. */
  return real_time ? MLX5_TIMESTAMP_FORMAT_REAL_TIME : MLX5_TIMESTAMP_FORMAT_FREE_RUNNING;
}

/* ---------------------------------------------------------------------------------- */
/* builders */

void
mlx5_cmd_build_query_hca_cap (void *in, guint cap_type)
{
  DEVX_SET (query_hca_cap_in, in, opcode, MLX5_CMD_OP_QUERY_HCA_CAP);
  DEVX_SET (query_hca_cap_in, in, op_mod, MLX5_HCA_CAP_OP_MOD (cap_type, TRUE));
}

void
mlx5_cmd_build_query_nic_vport_context (void *in)
{
  /* other_vport 0, vport_number 0: our own function's vport */
  DEVX_SET (query_nic_vport_context_in, in, opcode, MLX5_CMD_OP_QUERY_NIC_VPORT_CONTEXT);
}

void
mlx5_cmd_build_alloc_transport_domain (void *in)
{
  DEVX_SET (alloc_transport_domain_in, in, opcode, MLX5_CMD_OP_ALLOC_TRANSPORT_DOMAIN);
}

void
mlx5_cmd_build_create_cq (void *in, const Mlx5Cq *cq, const Mlx5HwQueueMem *mem, guint32 uar_page,
    guint32 eqn, guint page_shift)
{
  DEVX_SET (create_cq_in, in, opcode, MLX5_CMD_OP_CREATE_CQ);
  /* 64-byte CQEs, no moderation: the CQ is polled, never armed; the EQ and UAR page are
   * still required fields */
  DEVX_SET (create_cq_in, in, cq_context.cqe_sz, MLX5_CQE_SIZE_64);
  if (cq->comp != MLX5_CQ_COMP_NONE) {
    /* mini-CQEs with the flow tag (the packet's mark) and stride index: what the ring
     * code reads per packet; the rest comes from the title */
    DEVX_SET (create_cq_in, in, cq_context.cqe_comp_en, 1);
    DEVX_SET (create_cq_in, in, cq_context.mini_cqe_res_format, MLX5_CQE_FORMAT_FTAG_STRIDX);
    DEVX_SET (create_cq_in, in, cq_context.cqe_comp_layout,
        cq->comp == MLX5_CQ_COMP_ENHANCED ? MLX5_CQE_COMPRESS_LAYOUT_ENHANCED
                                          : MLX5_CQE_COMPRESS_LAYOUT_BASIC);
  }
  DEVX_SET (create_cq_in, in, cq_context.log_cq_size, cq->log_size);
  DEVX_SET (create_cq_in, in, cq_context.uar_page, uar_page);
  DEVX_SET (create_cq_in, in, cq_context.c_eqn_or_apu_element, eqn);
  DEVX_SET (create_cq_in, in, cq_context.log_page_size, mlx5_hw_page_size_encode (page_shift));
  DEVX_SET (create_cq_in, in, cq_context.dbr_umem_valid, 1);
  DEVX_SET (create_cq_in, in, cq_context.dbr_umem_id, mem->dbr_umem_id);
  DEVX_SET64 (create_cq_in, in, cq_context.dbr_addr, mem->dbr_offset);
  DEVX_SET (create_cq_in, in, cq_umem_valid, 1);
  DEVX_SET (create_cq_in, in, cq_umem_id, mem->umem_id);
  DEVX_SET64 (create_cq_in, in, cq_umem_offset, mem->umem_offset);
}

void
mlx5_cmd_build_alloc_q_counter (void *in)
{
  DEVX_SET (alloc_q_counter_in, in, opcode, MLX5_CMD_OP_ALLOC_Q_COUNTER);
}

void
mlx5_cmd_build_query_q_counter (void *in, guint32 counter_set_id)
{
  DEVX_SET (query_q_counter_in, in, opcode, MLX5_CMD_OP_QUERY_Q_COUNTER);
  DEVX_SET (query_q_counter_in, in, counter_set_id, counter_set_id);
}

guint32
mlx5_hw_q_counter_out_of_buffer (const void *out)
{
  return DEVX_GET (query_q_counter_out, out, out_of_buffer);
}

/* A work queue's ring and doorbell record, both in registered umem: the wq context that
 * CREATE_RQ and CREATE_SQ share */
static void
wq_set_umem (void *wq, const Mlx5HwQueueMem *mem)
{
  DEVX_SET (wq, wq, dbr_umem_valid, 1);
  DEVX_SET (wq, wq, dbr_umem_id, mem->dbr_umem_id);
  DEVX_SET64 (wq, wq, dbr_addr, mem->dbr_offset);
  DEVX_SET (wq, wq, wq_umem_valid, 1);
  DEVX_SET (wq, wq, wq_umem_id, mem->umem_id);
  DEVX_SET64 (wq, wq, wq_umem_offset, mem->umem_offset);
}

void
mlx5_cmd_build_create_rq (void *in, const Mlx5Rq *rq, guint32 cqn, guint32 pdn,
    const Mlx5HwQueueMem *mem, guint page_shift, guint ts_format, guint32 counter_set_id)
{
  DEVX_SET (create_rq_in, in, opcode, MLX5_CMD_OP_CREATE_RQ);
  /* vsd: keep VLAN tags in the packet bytes, as the other engines deliver them */
  DEVX_SET (create_rq_in, in, ctx.vsd, 1);
  DEVX_SET (create_rq_in, in, ctx.flush_in_error_en, 1);
  DEVX_SET (create_rq_in, in, ctx.state, MLX5_RQC_STATE_RST);
  DEVX_SET (create_rq_in, in, ctx.ts_format, ts_format);
  DEVX_SET (create_rq_in, in, ctx.cqn, cqn);
  /* out-of-buffer drops of this RQ count in this queue counter set */
  DEVX_SET (create_rq_in, in, ctx.counter_set_id, counter_set_id);

  /* a striding WQE is 32 bytes: a 16-byte next segment and one 16-byte data segment; a
   * header-data split WQE too: two 16-byte data segments */
  DEVX_SET (create_rq_in, in, ctx.wq.log_wq_stride, 5);
  DEVX_SET (create_rq_in, in, ctx.wq.log_wq_sz, rq->log_wqes);
  DEVX_SET (create_rq_in, in, ctx.wq.pd, pdn);
  DEVX_SET (create_rq_in, in, ctx.wq.log_wq_pg_sz, mlx5_hw_page_size_encode (page_shift));
  if (rq->split_header != 0) {
    DEVX_SET (create_rq_in, in, ctx.wq.wq_type, MLX5_WQ_TYPE_CYCLIC);
  } else {
    DEVX_SET (create_rq_in, in, ctx.wq.wq_type, MLX5_WQ_TYPE_CYCLIC_STRIDING_RQ);
    DEVX_SET (create_rq_in, in, ctx.wq.single_wqe_log_num_of_strides,
        mlx5_hw_log_strides_encode (rq->log_strides));
    DEVX_SET (create_rq_in, in, ctx.wq.single_stride_log_num_of_bytes,
        mlx5_hw_log_stride_size_encode (rq->log_stride_size));
  }
  wq_set_umem (DEVX_ADDR_OF (create_rq_in, in, ctx.wq), mem);
}

void
mlx5_cmd_build_modify_rq_state (void *in, guint32 rqn, guint from, guint to)
{
  DEVX_SET (modify_rq_in, in, opcode, MLX5_CMD_OP_MODIFY_RQ);
  DEVX_SET (modify_rq_in, in, rq_state, from); /* the current state */
  DEVX_SET (modify_rq_in, in, rqn, rqn);
  DEVX_SET (modify_rq_in, in, ctx.state, to);
}

void
mlx5_cmd_build_modify_rq_rdy (void *in, guint32 rqn)
{
  mlx5_cmd_build_modify_rq_state (in, rqn, MLX5_RQC_STATE_RST, MLX5_RQC_STATE_RDY);
}

void
mlx5_cmd_build_create_tis (void *in, guint32 transport_domain)
{
  DEVX_SET (create_tis_in, in, opcode, MLX5_CMD_OP_CREATE_TIS);
  DEVX_SET (create_tis_in, in, ctx.transport_domain, transport_domain);
}

void
mlx5_cmd_build_create_sq (void *in, const Mlx5Sq *sq, guint32 cqn, guint32 pdn, guint32 tisn,
    guint32 uar_page, const Mlx5HwQueueMem *mem, guint page_shift, guint ts_format,
    gboolean allow_multi_pkt_send_wqe, guint min_wqe_inline_mode)
{
  DEVX_SET (create_sq_in, in, opcode, MLX5_CMD_OP_CREATE_SQ);
  DEVX_SET (create_sq_in, in, ctx.flush_in_error_en, 1);
  /* eMPW (opcode 0x29) WQEs are refused unless the SQ allows multi-packet WQEs */
  DEVX_SET (create_sq_in, in, ctx.allow_multi_pkt_send_wqe, allow_multi_pkt_send_wqe ? 1 : 0);
  /* what the port requires inline (NONE or L2; the send path carries as much) */
  DEVX_SET (create_sq_in, in, ctx.min_wqe_inline_mode, min_wqe_inline_mode);
  DEVX_SET (create_sq_in, in, ctx.state, MLX5_SQC_STATE_RST);
  DEVX_SET (create_sq_in, in, ctx.ts_format, ts_format);
  DEVX_SET (create_sq_in, in, ctx.cqn, cqn);
  DEVX_SET (create_sq_in, in, ctx.tis_lst_sz, 1);
  DEVX_SET (create_sq_in, in, ctx.tis_num_0, tisn);

  DEVX_SET (create_sq_in, in, ctx.wq.wq_type, MLX5_WQ_TYPE_CYCLIC);
  DEVX_SET (create_sq_in, in, ctx.wq.log_wq_stride, 6); /* 64-byte WQE basic blocks */
  DEVX_SET (create_sq_in, in, ctx.wq.log_wq_sz, sq->log_wqebbs);
  DEVX_SET (create_sq_in, in, ctx.wq.pd, pdn);
  DEVX_SET (create_sq_in, in, ctx.wq.uar_page, uar_page);
  DEVX_SET (create_sq_in, in, ctx.wq.log_wq_pg_sz, mlx5_hw_page_size_encode (page_shift));
  wq_set_umem (DEVX_ADDR_OF (create_sq_in, in, ctx.wq), mem);
}

void
mlx5_cmd_build_modify_sq_state (void *in, guint32 sqn, guint from, guint to)
{
  DEVX_SET (modify_sq_in, in, opcode, MLX5_CMD_OP_MODIFY_SQ);
  DEVX_SET (modify_sq_in, in, sq_state, from); /* the current state */
  DEVX_SET (modify_sq_in, in, sqn, sqn);
  DEVX_SET (modify_sq_in, in, ctx.state, to);
}

void
mlx5_cmd_build_modify_sq_rdy (void *in, guint32 sqn)
{
  mlx5_cmd_build_modify_sq_state (in, sqn, MLX5_SQC_STATE_RST, MLX5_SQC_STATE_RDY);
}

void
mlx5_cmd_build_modify_sq_rate (void *in, guint32 sqn, guint rate_limit_index)
{
  mlx5_cmd_build_modify_sq_state (in, sqn, MLX5_SQC_STATE_RDY, MLX5_SQC_STATE_RDY);
  DEVX_SET64 (modify_sq_in, in, modify_bitmask, MLX5_MODIFY_SQ_BITMASK_PP_RATE_LIMIT_INDEX);
  DEVX_SET (modify_sq_in, in, ctx.packet_pacing_rate_limit_index, rate_limit_index);
}

void
mlx5_cmd_build_pp_context (void *ctx, guint64 rate_bps, guint typical_packet_size)
{
  guint64 kbps = (rate_bps + 999) / 1000;
  DEVX_SET (set_pp_rate_limit_context, ctx, rate_limit, (guint32) MIN (kbps, G_MAXUINT32));
  DEVX_SET (set_pp_rate_limit_context, ctx, typical_packet_size, MIN (typical_packet_size, 0xffff));
}

void
mlx5_cmd_build_create_tir_direct (void *in, guint32 rqn, guint32 transport_domain)
{
  DEVX_SET (create_tir_in, in, opcode, MLX5_CMD_OP_CREATE_TIR);
  DEVX_SET (create_tir_in, in, ctx.disp_type, MLX5_TIRC_DISP_TYPE_DIRECT);
  DEVX_SET (create_tir_in, in, ctx.inline_rqn, rqn);
  DEVX_SET (create_tir_in, in, ctx.rx_hash_fn, MLX5_RX_HASH_FN_NONE);
  DEVX_SET (create_tir_in, in, ctx.transport_domain, transport_domain);
}

guint
mlx5_hw_rqt_size (guint n_rqns)
{
  return mlx5_rss_rqt_size (n_rqns);
}

gsize
mlx5_cmd_create_rqt_in_bytes (guint size)
{
  return DEVX_ST_SZ_BYTES (create_rqt_in) + (gsize) size * DEVX_ST_SZ_BYTES (rq_num);
}

void
mlx5_cmd_build_create_rqt (void *in, const guint32 *rqns, guint n_rqns)
{
  g_return_if_fail (n_rqns > 0);
  guint size = mlx5_hw_rqt_size (n_rqns);

  DEVX_SET (create_rqt_in, in, opcode, MLX5_CMD_OP_CREATE_RQT);
  DEVX_SET (create_rqt_in, in, rqt_context.rqt_max_size, size);
  DEVX_SET (create_rqt_in, in, rqt_context.rqt_actual_size, size);
  guint8 *entries = DEVX_ADDR_OF (create_rqt_in, in, rqt_context.rq_num);
  for (guint i = 0; i < size; i++)
    DEVX_SET (rq_num, entries + i * DEVX_ST_SZ_BYTES (rq_num), rq_num, rqns[i % n_rqns]);
}

void
mlx5_cmd_build_create_tir_rss (void *in, guint32 rqtn, guint32 transport_domain,
    const guint8 key[MLX5_HW_TOEPLITZ_KEY_LEN], guint8 l4_proto)
{
  guint32 fields = MLX5_HASH_FIELD_SEL_SRC_IP | MLX5_HASH_FIELD_SEL_DST_IP;

  DEVX_SET (create_tir_in, in, opcode, MLX5_CMD_OP_CREATE_TIR);
  DEVX_SET (create_tir_in, in, ctx.disp_type, MLX5_TIRC_DISP_TYPE_INDIRECT);
  DEVX_SET (create_tir_in, in, ctx.indirect_table, rqtn);
  DEVX_SET (create_tir_in, in, ctx.rx_hash_fn, MLX5_RX_HASH_FN_TOEPLITZ);
  DEVX_SET (create_tir_in, in, ctx.transport_domain, transport_domain);
  /* the key is a byte string, first byte first */
  memcpy (
      DEVX_ADDR_OF (create_tir_in, in, ctx.rx_hash_toeplitz_key), key, MLX5_HW_TOEPLITZ_KEY_LEN);
  DEVX_SET (
      create_tir_in, in, ctx.rx_hash_field_selector_outer.l3_prot_type, MLX5_L3_PROT_TYPE_IPV4);
  if (l4_proto == 17 || l4_proto == 6) {
    DEVX_SET (create_tir_in, in, ctx.rx_hash_field_selector_outer.l4_prot_type,
        l4_proto == 17 ? MLX5_L4_PROT_TYPE_UDP : MLX5_L4_PROT_TYPE_TCP);
    fields |= MLX5_HASH_FIELD_SEL_L4_SPORT | MLX5_HASH_FIELD_SEL_L4_DPORT;
  }
  DEVX_SET (create_tir_in, in, ctx.rx_hash_field_selector_outer.selected_fields, fields);
}

/* ---------------------------------------------------------------------------------- */
/* output side */

guint
mlx5_cmd_out_status (const void *out)
{
  return DEVX_GET (mbox_out, out, status);
}

guint32
mlx5_cmd_out_syndrome (const void *out)
{
  return DEVX_GET (mbox_out, out, syndrome);
}

const char *
mlx5_cmd_status_str (guint status)
{
  switch (status) {
    case MLX5_CMD_STAT_OK: return "OK";
    case MLX5_CMD_STAT_INT_ERR: return "internal error";
    case MLX5_CMD_STAT_BAD_OP_ERR: return "bad operation";
    case MLX5_CMD_STAT_BAD_PARAM_ERR: return "bad parameter";
    case MLX5_CMD_STAT_BAD_SYS_STATE_ERR: return "bad system state";
    case MLX5_CMD_STAT_BAD_RES_ERR: return "bad resource";
    case MLX5_CMD_STAT_RES_BUSY: return "resource busy";
    case MLX5_CMD_STAT_LIM_ERR: return "limits exceeded";
    case MLX5_CMD_STAT_BAD_RES_STATE_ERR: return "bad resource state";
    case MLX5_CMD_STAT_IX_ERR: return "bad index";
    case MLX5_CMD_STAT_NO_RES_ERR: return "no resources";
    case MLX5_CMD_STAT_BAD_QP_STATE_ERR: return "bad QP state";
    case MLX5_CMD_STAT_BAD_PKT_ERR: return "bad packet";
    case MLX5_CMD_STAT_BAD_SIZE_OUTS_CQES_ERR: return "bad size, too many outstanding CQEs";
    case MLX5_CMD_STAT_BAD_INP_LEN_ERR: return "bad input length";
    case MLX5_CMD_STAT_BAD_OUTP_LEN_ERR: return "bad output length";
    default: return "unknown status";
  }
}

char *
mlx5_cmd_failure_text (const char *command, int err, const void *out)
{
  guint status = out ? mlx5_cmd_out_status (out) : 0;
  const char *errtext = err ? g_strerror (err) : "no error code";
  if (status == MLX5_CMD_STAT_OK)
    /* refused before the firmware saw it (kernel checks, resources, privileges) */
    return g_strdup_printf ("%s failed: %s", command, errtext);
  return g_strdup_printf ("%s failed: %s; firmware status 0x%x (%s), syndrome 0x%x", command,
      errtext, status, mlx5_cmd_status_str (status), mlx5_cmd_out_syndrome (out));
}

void
mlx5_hw_caps_parse_general (Mlx5HwCaps *caps, const void *out)
{
#define GEN(field) DEVX_GET (query_hca_cap_out, out, capability.cmd_hca_cap.field)
  caps->port_type = GEN (port_type);
  caps->log_max_qp_sz = GEN (log_max_qp_sz);
  caps->log_max_cq_sz = GEN (log_max_cq_sz);
  caps->log_max_wq_sz = GEN (log_max_wq_sz);
  caps->log_max_rqt_size = GEN (log_max_rqt_size);
  caps->striding_rq = GEN (striding_rq);
  caps->ext_stride_num_range = GEN (ext_stride_num_range);
  caps->log_min_stride_sz_rq = GEN (log_min_stride_sz_rq);
  caps->log_max_stride_sz_rq = GEN (log_max_stride_sz_rq);
  caps->general_obj_types =
      DEVX_GET64 (query_hca_cap_out, out, capability.cmd_hca_cap.general_obj_types);
  caps->sq_ts_format = GEN (sq_ts_format);
  caps->rq_ts_format = GEN (rq_ts_format);
  caps->device_frequency_khz = GEN (device_frequency_khz);
  caps->wait_on_time = GEN (wait_on_time);
  caps->wait_on_data = GEN (wait_on_data);
  caps->cqe_compression = GEN (cqe_compression);
  caps->enhanced_cqe_compression = GEN (enhanced_cqe_compression);
  caps->mini_cqe_resp_flow_tag = GEN (mini_cqe_resp_flow_tag);
  caps->mini_cqe_resp_stride_index = GEN (mini_cqe_resp_stride_index);
  caps->qos = GEN (qos);
  caps->bf = GEN (bf);
  caps->log_bf_reg_size = GEN (log_bf_reg_size);
  caps->eth_net_offloads = GEN (eth_net_offloads);
#undef GEN
}

void
mlx5_hw_caps_parse_eth (Mlx5HwCaps *caps, const void *out)
{
#define ETH(field) \
  DEVX_GET (query_hca_cap_out, out, capability.per_protocol_networking_offload_caps.field)
  caps->csum_cap = ETH (csum_cap);
  caps->multi_pkt_send_wqe = ETH (multi_pkt_send_wqe);
  caps->enhanced_multi_pkt_send_wqe = ETH (enhanced_multi_pkt_send_wqe);
  caps->wqe_inline_mode = ETH (wqe_inline_mode);
#undef ETH
}

void
mlx5_hw_caps_parse_qos (Mlx5HwCaps *caps, const void *out)
{
#define QOS(field) DEVX_GET (query_hca_cap_out, out, capability.qos_cap.field)
  caps->packet_pacing = QOS (packet_pacing);
  caps->packet_pacing_typical_size = QOS (packet_pacing_typical_size);
  caps->packet_pacing_min_rate = QOS (packet_pacing_min_rate);
  caps->packet_pacing_max_rate = QOS (packet_pacing_max_rate);
#undef QOS
}

void
mlx5_hw_vport_parse (const void *out, guint *min_wqe_inline_mode, guint *mtu, guint8 mac[6])
{
  if (min_wqe_inline_mode)
    *min_wqe_inline_mode =
        DEVX_GET (query_nic_vport_context_out, out, nic_vport_context.min_wqe_inline_mode);
  if (mtu)
    *mtu = DEVX_GET (query_nic_vport_context_out, out, nic_vport_context.mtu);
  if (mac) {
    guint32 hi = DEVX_GET (
        query_nic_vport_context_out, out, nic_vport_context.permanent_address.mac_addr_47_32);
    guint32 lo = DEVX_GET (
        query_nic_vport_context_out, out, nic_vport_context.permanent_address.mac_addr_31_0);
    mac[0] = (guint8) (hi >> 8);
    mac[1] = (guint8) hi;
    mac[2] = (guint8) (lo >> 24);
    mac[3] = (guint8) (lo >> 16);
    mac[4] = (guint8) (lo >> 8);
    mac[5] = (guint8) lo;
  }
}

/* ---------------------------------------------------------------------------------- */
/* bring-up requirements */

static gboolean cap_error (GError **error, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static gboolean
cap_error (GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *text = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error_literal (error, DQ_ERROR, DQ_ERROR_DEVICE, text);
  g_free (text);
  return FALSE;
}

/* the smallest log2 strides per WQE the encoding allows: 3..8 only with the extended
 * range (wq.single_wqe_log_num_of_strides is log2 - 9 in 4-bit two's complement) */
static guint
min_log_strides (const Mlx5HwCaps *hw, const struct mlx5dv_striding_rq_caps *s)
{
  guint encodable =
      hw->ext_stride_num_range ? MLX5_HW_NEED_MIN_LOG_STRIDES : MLX5_MIN_SINGLE_WQE_LOG_NUM_STRIDES;
  return MAX (s->min_single_wqe_log_num_of_strides, encodable);
}

gboolean
mlx5_hw_caps_check (const Mlx5HwCaps *hw, const struct mlx5dv_context *dv, GError **error)
{
  if (hw->port_type != MLX5_CAP_PORT_TYPE_ETH)
    return cap_error (error,
        "HCA capability port_type is %u (InfiniBand); daqiri needs %u (Ethernet): switch "
        "the port with `mlxconfig -d <pci> set LINK_TYPE_P1=2` and reset the device",
        hw->port_type, MLX5_CAP_PORT_TYPE_ETH);
  if (!hw->eth_net_offloads)
    return cap_error (error,
        "HCA capability eth_net_offloads is 0; daqiri needs 1 (checksum offload, inline "
        "mode and multi-packet send are read from the Ethernet offload capabilities)");
  if (!hw->striding_rq)
    return cap_error (error,
        "HCA capability striding_rq is 0; daqiri needs 1 (it receives into striding, "
        "multi-packet RQs: ConnectX-5 and later)");

  const struct mlx5dv_striding_rq_caps *s = &dv->striding_rq_caps;
  if (!(dv->comp_mask & MLX5DV_CONTEXT_MASK_STRIDING_RQ))
    return cap_error (error,
        "mlx5dv_query_device gave no striding RQ capabilities "
        "(MLX5DV_CONTEXT_MASK_STRIDING_RQ); daqiri needs them (rdma-core >= 28)");
  if (!(s->supported_qpts & (1u << IBV_QPT_RAW_PACKET)))
    return cap_error (error,
        "striding RQ supported_qpts is 0x%x; daqiri needs raw packet queues (bit %u, "
        "IBV_QPT_RAW_PACKET)",
        s->supported_qpts, (guint) IBV_QPT_RAW_PACKET);
  guint lo = MAX (s->min_single_stride_log_num_of_bytes, MLX5_HW_NEED_MIN_LOG_STRIDE_SIZE);
  guint hi = MIN (s->max_single_stride_log_num_of_bytes, MLX5_HW_NEED_MAX_LOG_STRIDE_SIZE);
  if (lo > hi)
    return cap_error (error,
        "striding RQ stride sizes are 2^%u..2^%u bytes "
        "(min/max_single_stride_log_num_of_bytes); daqiri needs one of 2^%u..2^%u",
        s->min_single_stride_log_num_of_bytes, s->max_single_stride_log_num_of_bytes,
        MLX5_HW_NEED_MIN_LOG_STRIDE_SIZE, MLX5_HW_NEED_MAX_LOG_STRIDE_SIZE);
  lo = MAX (min_log_strides (hw, s), MLX5_HW_NEED_MIN_LOG_STRIDES);
  hi = MIN (s->max_single_wqe_log_num_of_strides, MLX5_HW_NEED_MAX_LOG_STRIDES);
  if (lo > hi)
    return cap_error (error,
        "striding RQ strides per WQE are 2^%u..2^%u "
        "(min/max_single_wqe_log_num_of_strides, ext_stride_num_range %u); daqiri needs "
        "one of 2^%u..2^%u",
        s->min_single_wqe_log_num_of_strides, s->max_single_wqe_log_num_of_strides,
        hw->ext_stride_num_range ? 1u : 0u, MLX5_HW_NEED_MIN_LOG_STRIDES,
        MLX5_HW_NEED_MAX_LOG_STRIDES);

  static const struct {
    const char *name;
    gsize offset;
    const char *what;
  } sizes[] = {
    { "log_max_wq_sz", G_STRUCT_OFFSET (Mlx5HwCaps, log_max_wq_sz), "an RX ring of 4 WQEs" },
    { "log_max_qp_sz", G_STRUCT_OFFSET (Mlx5HwCaps, log_max_qp_sz), "a TX ring of 4 slots" },
    { "log_max_cq_sz", G_STRUCT_OFFSET (Mlx5HwCaps, log_max_cq_sz), "their CQs" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++) {
    guint v = G_STRUCT_MEMBER (guint, hw, sizes[i].offset);
    if (v < MLX5_HW_NEED_LOG_WQ_SZ)
      return cap_error (error, "HCA capability %s is %u; daqiri needs at least %u (%s)",
          sizes[i].name, v, MLX5_HW_NEED_LOG_WQ_SZ, sizes[i].what);
  }
  return TRUE;
}

static const char *
ts_format_cap_str (guint cap)
{
  switch (cap) {
    case MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING: return "free-running only";
    case MLX5_TIMESTAMP_FORMAT_CAP_REAL_TIME: return "real time only";
    case MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING_AND_REAL_TIME: return "both";
    default: return "unknown";
  }
}

gboolean
mlx5_hw_clock_choose (const Mlx5HwCaps *hw, gboolean real_time_ts, gboolean phc_readable,
    int clock_info_errno, gboolean need_hw_ts, Mlx5HwClock *clock, char **warning, GError **error)
{
  gboolean rq_rt = hw->rq_ts_format != MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING;
  gboolean sq_rt = hw->sq_ts_format != MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING;
  gboolean rq_free = hw->rq_ts_format != MLX5_TIMESTAMP_FORMAT_CAP_REAL_TIME;
  gboolean sq_free = hw->sq_ts_format != MLX5_TIMESTAMP_FORMAT_CAP_REAL_TIME;

  *warning = NULL;
  if (real_time_ts && phc_readable && rq_rt && sq_rt) {
    *clock = MLX5_HW_CLOCK_REAL_TIME;
    return TRUE;
  }
  if (!rq_free || !sq_free) {
    const char *why = !real_time_ts ? "rdma-core reports no real-time timestamps "
                                      "(MLX5DV_CONTEXT_FLAGS_REAL_TIME_TS)"
        : !phc_readable             ? "its PTP hardware clock cannot be read"
                                    : "the other queue kind cannot stamp real time";
    return cap_error (error,
        "HCA capabilities rq_ts_format %u (%s) and sq_ts_format %u (%s): the queues cannot "
        "stamp the free-running counter, and real time is out because %s; daqiri needs "
        "free-running stamps (format 0 or 2) or a readable real-time clock",
        hw->rq_ts_format, ts_format_cap_str (hw->rq_ts_format), hw->sq_ts_format,
        ts_format_cap_str (hw->sq_ts_format), why);
  }
  if (clock_info_errno == 0) {
    *clock = MLX5_HW_CLOCK_FREE_RUNNING;
    return TRUE;
  }
  if (need_hw_ts)
    return cap_error (error,
        "reading the clock conversion (mlx5dv_get_clock_info) failed: %s; hardware "
        "timestamps are needed, and raw CQE timestamps cannot be turned into time "
        "without it",
        g_strerror (clock_info_errno));
  *clock = MLX5_HW_CLOCK_NONE;
  *warning = g_strdup_printf (
      "reading the clock conversion (mlx5dv_get_clock_info) failed: %s; packets carry no "
      "hardware timestamps (timestamp 0, no TS_HW flag) and port time is CLOCK_MONOTONIC",
      g_strerror (clock_info_errno));
  return TRUE;
}

gboolean
mlx5_hw_rqt_check (guint n_rqs, guint log_max_rqt_size, GError **error)
{
  guint size = mlx5_hw_rqt_size (n_rqs);
  if (log_max_rqt_size < 31 && size <= (1u << log_max_rqt_size))
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
      "RSS over %u RX queues needs an indirection table (RQT) of %u entries; the device "
      "allows %u (HCA capability log_max_rqt_size %u)",
      n_rqs, size, log_max_rqt_size < 31 ? 1u << log_max_rqt_size : 0u, log_max_rqt_size);
  return FALSE;
}

char *
mlx5_hw_caps_describe (const Mlx5HwCaps *hw, const struct mlx5dv_context *dv)
{
  const struct mlx5dv_striding_rq_caps *s = &dv->striding_rq_caps;
  return g_strdup_printf (
      "port_type %u, eth_net_offloads %u, striding_rq %u, ext_stride_num_range %u, "
      "striding RQ (rdma-core): supported_qpts 0x%x, stride 2^%u..2^%u bytes, strides "
      "2^%u..2^%u; log_max_wq_sz %u, log_max_qp_sz %u, log_max_cq_sz %u, "
      "log_max_rqt_size %u, log_min/max_stride_sz_rq %u/%u, rq_ts_format %u, "
      "sq_ts_format %u, device_frequency_khz %u, wait_on_time %u, wait_on_data %u, bf %u, "
      "log_bf_reg_size %u, general_obj_types 0x%" G_GINT64_MODIFIER "x, csum_cap %u, "
      "multi_pkt_send_wqe %u, enhanced_multi_pkt_send_wqe %u, wqe_inline_mode %u, "
      "cqe_compression %u, enhanced_cqe_compression %u, mini_cqe_resp_flow_tag %u, "
      "mini_cqe_resp_stride_index %u, rdma-core flags 0x%" G_GINT64_MODIFIER "x",
      hw->port_type, hw->eth_net_offloads ? 1u : 0u, hw->striding_rq ? 1u : 0u,
      hw->ext_stride_num_range ? 1u : 0u, s->supported_qpts, s->min_single_stride_log_num_of_bytes,
      s->max_single_stride_log_num_of_bytes, s->min_single_wqe_log_num_of_strides,
      s->max_single_wqe_log_num_of_strides, hw->log_max_wq_sz, hw->log_max_qp_sz, hw->log_max_cq_sz,
      hw->log_max_rqt_size, hw->log_min_stride_sz_rq, hw->log_max_stride_sz_rq, hw->rq_ts_format,
      hw->sq_ts_format, hw->device_frequency_khz, hw->wait_on_time ? 1u : 0u,
      hw->wait_on_data ? 1u : 0u, hw->bf ? 1u : 0u, hw->log_bf_reg_size, hw->general_obj_types,
      hw->csum_cap ? 1u : 0u, hw->multi_pkt_send_wqe, hw->enhanced_multi_pkt_send_wqe ? 1u : 0u,
      hw->wqe_inline_mode, hw->cqe_compression ? 1u : 0u, hw->enhanced_cqe_compression ? 1u : 0u,
      hw->mini_cqe_resp_flow_tag ? 1u : 0u, hw->mini_cqe_resp_stride_index ? 1u : 0u,
      (guint64) dv->flags);
}

/* ---------------------------------------------------------------------------------- */
/* decisions */

void
mlx5_hw_caps_fill (
    Mlx5Caps *caps, const Mlx5HwCaps *hw, const struct mlx5dv_context *dv, gboolean real_time)
{
  memset (caps, 0, sizeof *caps);
  const struct mlx5dv_striding_rq_caps *s = &dv->striding_rq_caps;
  if ((dv->comp_mask & MLX5DV_CONTEXT_MASK_STRIDING_RQ) &&
      (s->supported_qpts & (1u << IBV_QPT_RAW_PACKET))) {
    caps->min_log_stride_size = s->min_single_stride_log_num_of_bytes;
    caps->max_log_stride_size = s->max_single_stride_log_num_of_bytes;
    caps->min_log_strides = min_log_strides (hw, s);
    caps->max_log_strides = s->max_single_wqe_log_num_of_strides;
  }
  caps->tx_csum = hw->eth_net_offloads && hw->csum_cap;
  caps->max_log_wqes = hw->log_max_wq_sz;
  caps->max_log_wqebbs =
      hw->log_max_qp_sz ? MIN (hw->log_max_wq_sz, hw->log_max_qp_sz) : hw->log_max_wq_sz;
  caps->max_log_cq_size = hw->log_max_cq_sz;
  caps->real_time_ts = real_time;
  caps->device_frequency_khz = hw->device_frequency_khz;
  caps->wait_on_time = hw->wait_on_time;
  caps->tx_empw = hw->eth_net_offloads && hw->enhanced_multi_pkt_send_wqe;
  caps->cqe_comp_basic =
      hw->cqe_compression && hw->mini_cqe_resp_flow_tag && hw->mini_cqe_resp_stride_index;
  caps->cqe_comp_enhanced = caps->cqe_comp_basic && hw->enhanced_cqe_compression;
  if (hw->qos && hw->packet_pacing && hw->packet_pacing_max_rate != 0) {
    caps->pp_min_bps = (guint64) MAX (hw->packet_pacing_min_rate, 1u) * 1000;
    caps->pp_max_bps = (guint64) hw->packet_pacing_max_rate * 1000;
  }
}

guint
mlx5_hw_tx_inline_mode (const Mlx5HwCaps *hw, gboolean vport_ok)
{
  if (!hw->eth_net_offloads)
    return MLX5_INLINE_MODE_NONE;
  switch (hw->wqe_inline_mode) {
    case MLX5_CAP_INLINE_MODE_L2: return MLX5_INLINE_MODE_L2;
    case MLX5_CAP_INLINE_MODE_VPORT_CONTEXT:
      return vport_ok ? hw->min_wqe_inline_mode : MLX5_INLINE_MODE_L2;
    default: return MLX5_INLINE_MODE_NONE;
  }
}

gboolean
mlx5_hw_tx_allow_mpw (const Mlx5HwCaps *hw)
{
  return hw->eth_net_offloads && (hw->enhanced_multi_pkt_send_wqe || hw->multi_pkt_send_wqe != 0);
}

guint
mlx5_hw_bf_size (gboolean non_cached, guint log_bf_reg_size)
{
  if (non_cached)
    return 0;
  /* a device that reports no size has the usual 512-byte register */
  return (log_bf_reg_size ? 1u << log_bf_reg_size : 512u) / 2;
}

guint
mlx5_hw_vport_mtu_to_netdev (guint vport_mtu)
{
  /* 14 (Ethernet) + 4 (VLAN) + 4 (FCS), as mlx5e converts it */
  return vport_mtu > 22 ? vport_mtu - 22 : 1500;
}

gboolean
mlx5_hw_dbr_in_ring_umem (guintptr ring, gsize ring_bytes, guintptr dbrec, gsize page,
    gsize *umem_bytes, guint64 *dbr_offset)
{
  gboolean shared = dbrec >= ring + ring_bytes && dbrec + 8 <= ring + ring_bytes + page;
  *umem_bytes = shared ? (gsize) (dbrec + 8 - ring) : ring_bytes;
  *dbr_offset = shared ? (guint64) (dbrec - ring) : 0;
  return shared;
}

/* ---------------------------------------------------------------------------------- */
/* geometry checks */

static gboolean
check_ptr (const void *p, guint align, const char *what, GError **error)
{
  if (p == NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG, "mlx5: %s is not set", what);
    return FALSE;
  }
  if (((guintptr) p) % align != 0) {
    g_set_error (
        error, DQ_ERROR, DQ_ERROR_CONFIG, "mlx5: %s at %p is not %u-byte aligned", what, p, align);
    return FALSE;
  }
  return TRUE;
}

/* A queue's ring (64-byte aligned) and doorbell record (8-byte aligned), `queue` naming
 * it in the error */
static gboolean
check_ring (const void *ring, const void *dbrec, const char *queue, GError **error)
{
  char what[48];
  g_snprintf (what, sizeof what, "the %s ring", queue);
  if (!check_ptr (ring, 64, what, error))
    return FALSE;
  g_snprintf (what, sizeof what, "the %s doorbell record", queue);
  return check_ptr (dbrec, 8, what, error);
}

/* A work queue completes into a CQ created before it */
static gboolean
check_cq_created (const Mlx5Cq *cq, const char *queue, GError **error)
{
  if (cq != NULL && cq->priv != NULL)
    return TRUE;
  g_set_error (
      error, DQ_ERROR, DQ_ERROR_CONFIG, "mlx5: the %s's completion queue was not created", queue);
  return FALSE;
}

/* A queue of 2^log_size `units` within the device's 2^max; `queue` is "a CQ" and the like */
static gboolean
check_log_size (guint log_size, guint max, const char *queue, const char *units, GError **error)
{
  if (log_size <= max)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "mlx5: %s of 2^%u %s is larger than the device allows (2^%u)", queue, log_size, units, max);
  return FALSE;
}

gboolean
mlx5_hw_cq_check (const Mlx5Cq *cq, const Mlx5Caps *caps, GError **error)
{
  return check_ring (cq->ring, (const void *) cq->dbrec, "CQ", error) &&
      check_log_size (cq->log_size, caps->max_log_cq_size, "a CQ", "CQEs", error);
}

gboolean
mlx5_hw_rq_check (const Mlx5Rq *rq, const Mlx5Caps *caps, GError **error)
{
  if (!check_ring (rq->wqes, (const void *) rq->dbrec, "RQ", error) ||
      !check_cq_created (rq->cq, "RQ", error))
    return FALSE;
  if (rq->split_header != 0)
    goto wqes; /* header-data split: a cyclic RQ, no strides */
  if (caps->max_log_strides == 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "mlx5: this device has no striding (multi-packet) receive queues");
    return FALSE;
  }
  if (rq->log_stride_size < caps->min_log_stride_size ||
      rq->log_stride_size > caps->max_log_stride_size) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "mlx5: a stride of %u bytes is outside what the device allows (%u..%u bytes)",
        1u << rq->log_stride_size, 1u << caps->min_log_stride_size,
        1u << caps->max_log_stride_size);
    return FALSE;
  }
  if (rq->log_strides < caps->min_log_strides || rq->log_strides > caps->max_log_strides) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "mlx5: %u strides per WQE is outside what the device allows (%u..%u)",
        1u << rq->log_strides, 1u << caps->min_log_strides, 1u << caps->max_log_strides);
    return FALSE;
  }
wqes:
  return check_log_size (rq->log_wqes, caps->max_log_wqes, "an RQ", "WQEs", error);
}

gboolean
mlx5_hw_sq_check (const Mlx5Sq *sq, const Mlx5Caps *caps, GError **error)
{
  return check_ring (sq->wqes, (const void *) sq->dbrec, "SQ", error) &&
      check_cq_created (sq->cq, "SQ", error) &&
      check_log_size (sq->log_wqebbs, caps->max_log_wqebbs, "an SQ", "WQE basic blocks", error);
}

/* ---------------------------------------------------------------------------------- */
/* steering */

#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17
#define ETHERTYPE_IPV4 0x0800

enum {
  F_ETHERTYPE,
  F_IP_PROTOCOL,
  F_SRC_IPV4,
  F_DST_IPV4,
  F_UDP_SPORT,
  F_UDP_DPORT,
  F_TCP_SPORT,
  F_TCP_DPORT,
  F_CVLAN_TAG,
  F_SVLAN_TAG,
  F_FIRST_VID,
};

#define MATCH_SET(buf, field, v) DEVX_SET (fte_match_set_lyr_2_4, buf, field, v)

static void
match_set (Mlx5HwFlowEntry *e, guint what, guint32 value, guint32 mask)
{
  guint8 *m = e->mask, *v = e->value;
  switch (what) {
#define CASE(id, field) \
  case id: \
    MATCH_SET (m, field, mask); \
    MATCH_SET (v, field, value &mask); \
    break
    CASE (F_ETHERTYPE, ethertype);
    CASE (F_IP_PROTOCOL, ip_protocol);
    CASE (F_SRC_IPV4, src_ipv4_src_ipv6.ipv4_layout.ipv4);
    CASE (F_DST_IPV4, dst_ipv4_dst_ipv6.ipv4_layout.ipv4);
    CASE (F_UDP_SPORT, udp_sport);
    CASE (F_UDP_DPORT, udp_dport);
    CASE (F_TCP_SPORT, tcp_sport);
    CASE (F_TCP_DPORT, tcp_dport);
    CASE (F_CVLAN_TAG, cvlan_tag);
    CASE (F_SVLAN_TAG, svlan_tag);
    CASE (F_FIRST_VID, first_vid);
#undef CASE
    default: g_assert_not_reached ();
  }
  if (mask)
    e->criteria = MLX5_MATCH_OUTER_HEADERS;
}

static guint32
prefix_mask (guint prefix)
{
  return prefix == 0 ? 0 : 0xffffffffu << (32 - MIN (prefix, 32u));
}

static void flow_error (GError **error, guint group, const DqFlowRule *rule, guint index,
    const char *fmt, ...) G_GNUC_PRINTF (5, 6);

static void
flow_error (GError **error, guint group, const DqFlowRule *rule, guint index, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *what = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  char *text = dq_flow_rule_to_string (rule);
  if (group == 0)
    g_set_error (
        error, DQ_ERROR, DQ_ERROR_FLOW, "flow rule %u (\"%s\"): %s", index + 1, text, what);
  else
    g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
        "flow rule %u (\"%s\") of queue group "
        "%u: %s",
        index + 1, text, group + 1, what);
  g_free (text);
  g_free (what);
}

/* appends the entries of one rule: its L4 variants times its VLAN variants */
static gboolean
flow_plan_rule (
    GArray *out, guint group, const DqFlowRule *r, guint index, guint n_rqs, GError **error)
{
  Mlx5HwFlowEntry base;
  memset (&base, 0, sizeof base);
  base.group = group;
  base.rule = index;
  base.dest = MLX5_HW_FLOW_DEST_RSS;

  if (r->keys & DQ_FLOW_QUEUE) {
    if (r->queue >= n_rqs) {
      flow_error (error, group, r, index,
          "queue %u does not exist; there %s %u RX "
          "queue%s (0..%u)",
          r->queue, n_rqs == 1 ? "is" : "are", n_rqs, n_rqs == 1 ? "" : "s", n_rqs - 1);
      return FALSE;
    }
    base.dest = r->queue;
  }
  if (r->keys & DQ_FLOW_MARK) {
    if (r->mark > MLX5_HW_MAX_TAG) {
      flow_error (error, group, r, index,
          "mark %u does not fit the 24 bits a ConnectX "
          "delivers with each packet (0..%u)",
          r->mark, MLX5_HW_MAX_TAG);
      return FALSE;
    }
    base.tag = r->mark;
  }

  const guint ip_keys =
      DQ_FLOW_PROTO | DQ_FLOW_SRC | DQ_FLOW_DST | DQ_FLOW_SRC_PORT | DQ_FLOW_DST_PORT;
  if (r->keys & DQ_FLOW_ETHERTYPE)
    match_set (&base, F_ETHERTYPE, r->ethertype, 0xffff);
  else if (r->keys & ip_keys)
    match_set (&base, F_ETHERTYPE, ETHERTYPE_IPV4, 0xffff);
  if (r->keys & DQ_FLOW_PROTO)
    match_set (&base, F_IP_PROTOCOL, r->proto, 0xff);
  if ((r->keys & DQ_FLOW_SRC) && r->src_prefix > 0)
    match_set (&base, F_SRC_IPV4, r->src, prefix_mask (r->src_prefix));
  if ((r->keys & DQ_FLOW_DST) && r->dst_prefix > 0)
    match_set (&base, F_DST_IPV4, r->dst, prefix_mask (r->dst_prefix));

  /* L4 variants: the NIC has one port field pair for UDP and one for TCP */
  guint8 l4[2];
  guint n_l4 = 0;
  if (r->keys & (DQ_FLOW_SRC_PORT | DQ_FLOW_DST_PORT)) {
    if (r->keys & DQ_FLOW_PROTO) {
      if (r->proto != IP_PROTO_UDP && r->proto != IP_PROTO_TCP) {
        flow_error (error, group, r, index, "ports need proto udp or tcp");
        return FALSE;
      }
      l4[n_l4++] = r->proto;
    } else {
      l4[n_l4++] = IP_PROTO_UDP;
      l4[n_l4++] = IP_PROTO_TCP;
    }
  } else {
    l4[n_l4++] = 0;
  }

  for (guint i = 0; i < n_l4; i++) {
    Mlx5HwFlowEntry e = base;
    if (l4[i] != 0) {
      gboolean udp = l4[i] == IP_PROTO_UDP;
      match_set (&e, F_IP_PROTOCOL, l4[i], 0xff);
      if (r->keys & DQ_FLOW_SRC_PORT)
        match_set (&e, udp ? F_UDP_SPORT : F_TCP_SPORT, r->src_port, 0xffff);
      if (r->keys & DQ_FLOW_DST_PORT)
        match_set (&e, udp ? F_UDP_DPORT : F_TCP_DPORT, r->dst_port, 0xffff);
    }
    if (r->keys & DQ_FLOW_VLAN) {
      /* the first tag is an 802.1Q (cvlan) or an 802.1ad (svlan) one; the NIC says which */
      for (guint t = 0; t < 2; t++) {
        Mlx5HwFlowEntry ev = e;
        match_set (&ev, t == 0 ? F_CVLAN_TAG : F_SVLAN_TAG, 1, 1);
        match_set (&ev, F_FIRST_VID, r->vlan, 0xfff);
        g_array_append_val (out, ev);
      }
    } else {
      g_array_append_val (out, e);
    }
  }
  return TRUE;
}

/* A group's RSS entry, to the TIR of its traffic (see mlx5_hw_flow_plan). */
static void
flow_plan_rss (GArray *out, const Mlx5HwFlowEntry *e)
{
  Mlx5HwFlowEntry x = *e;

  if (DEVX_GET (fte_match_set_lyr_2_4, e->mask, ip_protocol) != 0) {
    guint proto = DEVX_GET (fte_match_set_lyr_2_4, e->value, ip_protocol);
    x.dest = proto == IP_PROTO_UDP ? MLX5_HW_FLOW_DEST_RSS_UDP
        : proto == IP_PROTO_TCP    ? MLX5_HW_FLOW_DEST_RSS_TCP
                                   : MLX5_HW_FLOW_DEST_RSS_IP;
    g_array_append_val (out, x);
    return;
  }
  gboolean ethertype_set = DEVX_GET (fte_match_set_lyr_2_4, e->mask, ethertype) != 0;
  if (!ethertype_set || DEVX_GET (fte_match_set_lyr_2_4, e->value, ethertype) == ETHERTYPE_IPV4) {
    for (guint i = 0; i < 2; i++) {
      Mlx5HwFlowEntry l4 = *e;
      match_set (&l4, F_ETHERTYPE, ETHERTYPE_IPV4, 0xffff);
      match_set (&l4, F_IP_PROTOCOL, i == 0 ? IP_PROTO_UDP : IP_PROTO_TCP, 0xff);
      l4.dest = i == 0 ? MLX5_HW_FLOW_DEST_RSS_UDP : MLX5_HW_FLOW_DEST_RSS_TCP;
      g_array_append_val (out, l4);
    }
  }
  x.dest = MLX5_HW_FLOW_DEST_RSS_IP;
  g_array_append_val (out, x);
}

/* some packet matches both: no field both match on has different values */
static gboolean
entries_overlap (const Mlx5HwFlowEntry *a, const Mlx5HwFlowEntry *b)
{
  for (guint k = 0; k < MLX5_HW_MATCH_BYTES; k++)
    if ((a->value[k] ^ b->value[k]) & a->mask[k] & b->mask[k])
      return FALSE;
  return TRUE;
}

/* every packet b matches, a matches too */
static gboolean
entry_covers (const Mlx5HwFlowEntry *a, const Mlx5HwFlowEntry *b)
{
  for (guint k = 0; k < MLX5_HW_MATCH_BYTES; k++)
    if ((a->mask[k] & ~b->mask[k]) || ((a->value[k] ^ b->value[k]) & a->mask[k]))
      return FALSE;
  return TRUE;
}

static gboolean
same_action (const Mlx5HwFlowEntry *a, const Mlx5HwFlowEntry *b)
{
  return a->group == b->group && a->dest == b->dest && a->tag == b->tag;
}

GArray *
mlx5_hw_flow_plan (
    const Mlx5HwFlowGroup *groups, guint n_groups, guint n_priorities, GError **error)
{
  g_return_val_if_fail (n_priorities > 0 && n_priorities <= G_MAXUINT16 + 1u, NULL);
  GArray *all = g_array_new (FALSE, TRUE, sizeof (Mlx5HwFlowEntry));

  /* every group's rules in order, then the catch-alls of the groups without rules */
  for (guint g = 0; g < n_groups; g++) {
    if (groups[g].n_rqs == 0) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW, "queue group %u has no RX queues", g + 1);
      g_array_unref (all);
      return NULL;
    }
    for (guint i = 0; i < groups[g].n_rules; i++) {
      if (!flow_plan_rule (all, g, &groups[g].rules[i], i, groups[g].n_rqs, error)) {
        g_array_unref (all);
        return NULL;
      }
    }
  }
  for (guint g = 0; g < n_groups; g++) {
    if (groups[g].n_rules == 0) {
      Mlx5HwFlowEntry e;
      memset (&e, 0, sizeof e);
      e.group = g;
      e.rule = G_MAXUINT;
      e.dest = MLX5_HW_FLOW_DEST_RSS;
      g_array_append_val (all, e);
    }
  }

  /* RSS over several RQs: the TIR of each entry's traffic */
  GArray *spread = g_array_new (FALSE, TRUE, sizeof (Mlx5HwFlowEntry));
  for (guint i = 0; i < all->len; i++) {
    const Mlx5HwFlowEntry *e = &g_array_index (all, Mlx5HwFlowEntry, i);
    if (e->dest == MLX5_HW_FLOW_DEST_RSS && groups[e->group].n_rqs > 1)
      flow_plan_rss (spread, e);
    else
      g_array_append_val (spread, *e);
  }
  g_array_unref (all);
  all = spread;

  /* priorities: one level above every earlier overlapping entry that acts otherwise;
   * entries an earlier one covers can never match and are left out */
  GArray *plan = g_array_new (FALSE, TRUE, sizeof (Mlx5HwFlowEntry));
  for (guint i = 0; i < all->len; i++) {
    Mlx5HwFlowEntry *e = &g_array_index (all, Mlx5HwFlowEntry, i);
    gboolean shadowed = FALSE;
    guint level = 0;
    for (guint j = 0; j < plan->len && !shadowed; j++) {
      const Mlx5HwFlowEntry *p = &g_array_index (plan, Mlx5HwFlowEntry, j);
      if (p->group == e->group && p->rule == e->rule && same_action (p, e))
        continue; /* variants of one rule: disjoint */
      if (entry_covers (p, e))
        shadowed = TRUE;
      else if (!same_action (p, e) && entries_overlap (p, e))
        level = MAX (level, (guint) p->priority + 1);
    }
    if (shadowed)
      continue;
    if (level >= n_priorities) {
      const Mlx5HwFlowGroup *g = &groups[e->group];
      if (e->rule == G_MAXUINT)
        g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
            "queue group %u (no flow rules: "
            "everything) comes after flow rules of other groups that overlap in %u "
            "levels; the NIC's steering table has %u",
            e->group + 1, level, n_priorities);
      else
        flow_error (error, e->group, &g->rules[e->rule], e->rule,
            "it overlaps earlier "
            "rules with other actions %u levels deep; the NIC's steering table has %u "
            "priorities (make the rules disjoint or fewer)",
            level, n_priorities);
      g_array_unref (plan);
      g_array_unref (all);
      return NULL;
    }
    e->priority = (guint16) level;
    g_array_append_val (plan, *e);
  }
  g_array_unref (all);
  return plan;
}
