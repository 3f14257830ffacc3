/* PRM bit layouts of the DevX commands daqiri issues to a ConnectX, in the form rdma-core's
 * DEVX_SET/DEVX_GET/DEVX_ADDR_OF macros (infiniband/mlx5dv.h) expect: one
 * `struct mlx5_ifc_<name>_bits` per PRM layout, one u8 array element per bit, so that
 * offsetof() is the bit offset and sizeof() the bit width of a field.
 *
 * Only the fields daqiri sets or reads are named; every other bit is `reserved_at_<hex
 * bit offset>`. Field names are the PRM's. Each layout is cross-checked at test time
 * against the Linux kernel's include/linux/mlx5/mlx5_ifc.h, read as data
 * (tests/mlx5-layout/test-ifc.c); the few fields that kernel 6.1 does not define (DevX
 * umem fields, wait_on_time/wait_on_data) are checked against the offsets recorded in
 * reference/daqiri-facts.md §4.9.
 *
 * Mailboxes are big-endian; DEVX_SET/GET convert. Fields wider than 32 bits take
 * DEVX_SET64/GET64 and must be 64-bit aligned.
 */
#ifndef DAQIRI_MLX5_IFC_H
#define DAQIRI_MLX5_IFC_H

#include <stdint.h>

typedef uint8_t u8;

/* ---- command opcodes (PRM "Command Reference") ---- */
enum {
  MLX5_CMD_OP_QUERY_HCA_CAP = 0x100,
  MLX5_CMD_OP_CREATE_CQ = 0x400,
  MLX5_CMD_OP_QUERY_NIC_VPORT_CONTEXT = 0x754,
  MLX5_CMD_OP_ALLOC_Q_COUNTER = 0x771,
  MLX5_CMD_OP_QUERY_Q_COUNTER = 0x773,
  MLX5_CMD_OP_ALLOC_TRANSPORT_DOMAIN = 0x816,
  MLX5_CMD_OP_CREATE_TIR = 0x900,
  MLX5_CMD_OP_CREATE_SQ = 0x904,
  MLX5_CMD_OP_MODIFY_SQ = 0x905,
  MLX5_CMD_OP_CREATE_RQ = 0x908,
  MLX5_CMD_OP_MODIFY_RQ = 0x909,
  MLX5_CMD_OP_CREATE_TIS = 0x912,
  MLX5_CMD_OP_CREATE_RQT = 0x916,
};

/* QUERY_HCA_CAP op_mod = capability type << 1 | current (1) or maximum (0) */
enum {
  MLX5_HCA_CAP_GENERAL = 0x0,
  MLX5_HCA_CAP_ETHERNET_OFFLOADS = 0x1,
  MLX5_HCA_CAP_QOS = 0xc,
};
#define MLX5_HCA_CAP_OP_MOD(type, current) (((type) << 1) | ((current) ? 1 : 0))

/* command status, the byte at bit 0 of every output mailbox */
enum {
  MLX5_CMD_STAT_OK = 0x0,
  MLX5_CMD_STAT_INT_ERR = 0x1,
  MLX5_CMD_STAT_BAD_OP_ERR = 0x2,
  MLX5_CMD_STAT_BAD_PARAM_ERR = 0x3,
  MLX5_CMD_STAT_BAD_SYS_STATE_ERR = 0x4,
  MLX5_CMD_STAT_BAD_RES_ERR = 0x5,
  MLX5_CMD_STAT_RES_BUSY = 0x6,
  MLX5_CMD_STAT_LIM_ERR = 0x8,
  MLX5_CMD_STAT_BAD_RES_STATE_ERR = 0x9,
  MLX5_CMD_STAT_IX_ERR = 0xa,
  MLX5_CMD_STAT_NO_RES_ERR = 0xf,
  MLX5_CMD_STAT_BAD_QP_STATE_ERR = 0x10,
  MLX5_CMD_STAT_BAD_PKT_ERR = 0x30,
  MLX5_CMD_STAT_BAD_SIZE_OUTS_CQES_ERR = 0x40,
  MLX5_CMD_STAT_BAD_INP_LEN_ERR = 0x50,
  MLX5_CMD_STAT_BAD_OUTP_LEN_ERR = 0x51,
};

/* cmd_hca_cap.port_type */
enum {
  MLX5_CAP_PORT_TYPE_IB = 0x0,
  MLX5_CAP_PORT_TYPE_ETH = 0x1,
};

/* cmd_hca_cap.sq_ts_format / rq_ts_format: what the device can stamp */
enum {
  MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING = 0x0,
  MLX5_TIMESTAMP_FORMAT_CAP_REAL_TIME = 0x1,
  MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING_AND_REAL_TIME = 0x2,
};

/* rqc.ts_format / sqc.ts_format: what this queue stamps into its CQEs */
enum {
  MLX5_TIMESTAMP_FORMAT_FREE_RUNNING = 0x0,
  MLX5_TIMESTAMP_FORMAT_DEFAULT = 0x1,
  MLX5_TIMESTAMP_FORMAT_REAL_TIME = 0x2,
};

/* per_protocol_networking_offload_caps.wqe_inline_mode */
enum {
  MLX5_CAP_INLINE_MODE_L2 = 0x0,
  MLX5_CAP_INLINE_MODE_VPORT_CONTEXT = 0x1,
  MLX5_CAP_INLINE_MODE_NOT_REQUIRED = 0x2,
};

/* nic_vport_context.min_wqe_inline_mode and sqc.min_wqe_inline_mode */
enum {
  MLX5_INLINE_MODE_NONE = 0x0,
  MLX5_INLINE_MODE_L2 = 0x1,
  MLX5_INLINE_MODE_IP = 0x2,
  MLX5_INLINE_MODE_TCP_UDP = 0x3,
};

enum {
  MLX5_CQE_SIZE_64 = 0x0,
  MLX5_CQE_SIZE_128 = 0x1,
};

enum {
  MLX5_WQ_TYPE_CYCLIC = 0x1,
  MLX5_WQ_TYPE_CYCLIC_STRIDING_RQ = 0x3,
};

enum {
  MLX5_RQC_STATE_RST = 0x0,
  MLX5_RQC_STATE_RDY = 0x1,
  MLX5_RQC_STATE_ERR = 0x3,
};

enum {
  MLX5_SQC_STATE_RST = 0x0,
  MLX5_SQC_STATE_RDY = 0x1,
  MLX5_SQC_STATE_ERR = 0x3,
};

enum {
  MLX5_TIRC_DISP_TYPE_DIRECT = 0x0,
  MLX5_TIRC_DISP_TYPE_INDIRECT = 0x1,
};

enum {
  MLX5_RX_HASH_FN_NONE = 0x0,
  MLX5_RX_HASH_FN_INVERTED_XOR8 = 0x1,
  MLX5_RX_HASH_FN_TOEPLITZ = 0x2,
};

/* rx_hash_field_select */
enum {
  MLX5_L3_PROT_TYPE_IPV4 = 0x0,
  MLX5_L3_PROT_TYPE_IPV6 = 0x1,
};
enum {
  MLX5_L4_PROT_TYPE_TCP = 0x0,
  MLX5_L4_PROT_TYPE_UDP = 0x1,
};
enum {
  MLX5_HASH_FIELD_SEL_SRC_IP = 1u << 0,
  MLX5_HASH_FIELD_SEL_DST_IP = 1u << 1,
  MLX5_HASH_FIELD_SEL_L4_SPORT = 1u << 2,
  MLX5_HASH_FIELD_SEL_L4_DPORT = 1u << 3,
};

/* steering match_criteria_enable bits (which fte_match_param part a matcher uses) */
enum {
  MLX5_MATCH_OUTER_HEADERS = 1u << 0,
};

/* striding RQ encodings: wq.single_wqe_log_num_of_strides = log2(strides) - 9 (4-bit two's
 * complement, so 3..8 need the ext_stride_num_range cap), wq.single_stride_log_num_of_bytes
 * = log2(stride bytes) - 6 */
#define MLX5_MIN_SINGLE_WQE_LOG_NUM_STRIDES 9
#define MLX5_MIN_SINGLE_STRIDE_LOG_NUM_BYTES 6

/* page sizes in WQ/CQ contexts are log2(bytes) relative to the 4 KiB adapter page */
#define MLX5_ADAPTER_PAGE_SHIFT 12

/* ---- generic mailbox headers ---- */

struct mlx5_ifc_mbox_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0x40];
};

struct mlx5_ifc_mbox_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x40];
};

/* ---- QUERY_HCA_CAP ---- */

struct mlx5_ifc_query_hca_cap_in_bits {
  u8 opcode[0x10];
  u8 reserved_at_10[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0x40];
};

/* general device capabilities (op_mod 0x0/0x1) */
struct mlx5_ifc_cmd_hca_cap_bits {
  u8 reserved_at_0[0x88];
  u8 log_max_qp_sz[0x8];
  u8 reserved_at_90[0x38];
  u8 log_max_cq_sz[0x8];
  u8 reserved_at_d0[0xe6];
  u8 port_type[0x2];
  u8 reserved_at_1b8[0x49];
  u8 striding_rq[0x1];
  u8 reserved_at_202[0x19];
  u8 qos[0x1];
  u8 eth_net_offloads[0x1];
  u8 reserved_at_21d[0x43];
  u8 bf[0x1];
  u8 reserved_at_261[0xa];
  u8 log_bf_reg_size[0x5];
  u8 reserved_at_270[0x123];
  u8 log_max_rqt_size[0x5];
  u8 reserved_at_398[0x8];
  u8 ext_stride_num_range[0x1];
  u8 reserved_at_3a1[0x2];
  u8 log_max_stride_sz_rq[0x5];
  u8 reserved_at_3a8[0x3];
  u8 log_min_stride_sz_rq[0x5];
  u8 reserved_at_3b0[0x2b];
  u8 log_max_wq_sz[0x5];
  u8 reserved_at_3e0[0x20];
  u8 general_obj_types[0x40];
  u8 sq_ts_format[0x2];
  u8 rq_ts_format[0x2];
  u8 reserved_at_444[0x9c];
  u8 device_frequency_khz[0x20];
  u8 reserved_at_500[0xb0];
  u8 enhanced_cqe_compression[0x1];
  u8 reserved_at_5b1[0x9];
  u8 mini_cqe_resp_flow_tag[0x1];
  u8 reserved_at_5bb[0x1];
  u8 mini_cqe_resp_stride_index[0x1];
  u8 reserved_at_5bd[0x2];
  u8 cqe_compression[0x1];
  u8 reserved_at_5c0[0xcb];
  u8 wait_on_data[0x1];
  u8 wait_on_time[0x1];
  u8 reserved_at_68d[0x173];
};

/* Ethernet offload capabilities (op_mod 0x2/0x3) */
struct mlx5_ifc_per_protocol_networking_offload_caps_bits {
  u8 csum_cap[0x1];
  u8 vlan_cap[0x1];
  u8 reserved_at_2[0xe];
  u8 multi_pkt_send_wqe[0x2];
  u8 wqe_inline_mode[0x2];
  u8 reserved_at_14[0x6];
  u8 enhanced_multi_pkt_send_wqe[0x1];
  u8 reserved_at_1b[0x7e5];
};

/* QoS capabilities (op_mod 0x18/0x19): packet pacing, rates in kb/s */
struct mlx5_ifc_qos_cap_bits {
  u8 packet_pacing[0x1];
  u8 reserved_at_1[0x5];
  u8 packet_pacing_typical_size[0x1];
  u8 reserved_at_7[0x39];
  u8 packet_pacing_max_rate[0x20];
  u8 packet_pacing_min_rate[0x20];
  u8 reserved_at_80[0x780];
};

union mlx5_ifc_hca_cap_union_bits {
  struct mlx5_ifc_cmd_hca_cap_bits cmd_hca_cap;
  struct mlx5_ifc_per_protocol_networking_offload_caps_bits per_protocol_networking_offload_caps;
  struct mlx5_ifc_qos_cap_bits qos_cap;
  u8 reserved_at_0[0x8000];
};

struct mlx5_ifc_query_hca_cap_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x40];
  union mlx5_ifc_hca_cap_union_bits capability;
};

/* ---- QUERY_NIC_VPORT_CONTEXT ---- */

struct mlx5_ifc_query_nic_vport_context_in_bits {
  u8 opcode[0x10];
  u8 reserved_at_10[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0x40];
};

struct mlx5_ifc_mac_address_layout_bits {
  u8 reserved_at_0[0x10];
  u8 mac_addr_47_32[0x10];
  u8 mac_addr_31_0[0x20];
};

struct mlx5_ifc_nic_vport_context_bits {
  u8 reserved_at_0[0x5];
  u8 min_wqe_inline_mode[0x3];
  u8 reserved_at_8[0x128];
  u8 mtu[0x10];
  u8 reserved_at_140[0x660];
  struct mlx5_ifc_mac_address_layout_bits permanent_address;
  u8 reserved_at_7e0[0x20];
};

struct mlx5_ifc_query_nic_vport_context_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x40];
  struct mlx5_ifc_nic_vport_context_bits nic_vport_context;
};

/* ---- ALLOC_TRANSPORT_DOMAIN ---- */

struct mlx5_ifc_alloc_transport_domain_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0x40];
};

struct mlx5_ifc_alloc_transport_domain_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x8];
  u8 transport_domain[0x18];
  u8 reserved_at_60[0x20];
};

/* ---- queue counters (ALLOC_Q_COUNTER, QUERY_Q_COUNTER) ---- */

struct mlx5_ifc_alloc_q_counter_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0x40];
};

struct mlx5_ifc_alloc_q_counter_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x18];
  u8 counter_set_id[0x8];
  u8 reserved_at_60[0x20];
};

struct mlx5_ifc_query_q_counter_in_bits {
  u8 opcode[0x10];
  u8 reserved_at_10[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0x80];
  u8 clear[0x1];
  u8 reserved_at_c1[0x37];
  u8 counter_set_id[0x8];
};

struct mlx5_ifc_query_q_counter_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x140];
  u8 out_of_buffer[0x20];
  u8 reserved_at_1a0[0x660];
};

/* ---- CQ ---- */

struct mlx5_ifc_cqc_bits {
  u8 reserved_at_0[0x6];
  u8 dbr_umem_valid[0x1];
  u8 reserved_at_7[0x1];
  u8 cqe_sz[0x3];
  u8 reserved_at_b[0x6];
  u8 cqe_comp_en[0x1];
  u8 mini_cqe_res_format[0x2];
  u8 reserved_at_14[0xa];
  u8 cqe_comp_layout[0x2];
  u8 dbr_umem_id[0x20];
  u8 reserved_at_40[0x23];
  u8 log_cq_size[0x5];
  u8 uar_page[0x18];
  u8 reserved_at_80[0x20];
  u8 c_eqn_or_apu_element[0x20];
  u8 reserved_at_c0[0x3];
  u8 log_page_size[0x5];
  u8 reserved_at_c8[0xf8];
  u8 dbr_addr[0x40];
};

struct mlx5_ifc_create_cq_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0x40];
  struct mlx5_ifc_cqc_bits cq_context;
  u8 cq_umem_offset[0x40];
  u8 cq_umem_id[0x20];
  u8 cq_umem_valid[0x1];
  u8 reserved_at_2e1[0x59f];
};

struct mlx5_ifc_create_cq_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x8];
  u8 cqn[0x18];
  u8 reserved_at_60[0x20];
};

/* ---- work queue, shared by RQ and SQ contexts ---- */

struct mlx5_ifc_wq_bits {
  u8 wq_type[0x4];
  u8 reserved_at_4[0x44];
  u8 pd[0x18];
  u8 reserved_at_60[0x8];
  u8 uar_page[0x18];
  u8 dbr_addr[0x40];
  u8 reserved_at_c0[0x4c];
  u8 log_wq_stride[0x4];
  u8 reserved_at_110[0x3];
  u8 log_wq_pg_sz[0x5];
  u8 reserved_at_118[0x3];
  u8 log_wq_sz[0x5];
  u8 dbr_umem_valid[0x1];
  u8 wq_umem_valid[0x1];
  u8 reserved_at_122[0x12];
  u8 single_wqe_log_num_of_strides[0x4];
  u8 two_byte_shift_en[0x1];
  u8 reserved_at_139[0x4];
  u8 single_stride_log_num_of_bytes[0x3];
  u8 dbr_umem_id[0x20];
  u8 wq_umem_id[0x20];
  u8 wq_umem_offset[0x40];
  u8 reserved_at_1c0[0x440];
};

/* ---- RQ ---- */

struct mlx5_ifc_rqc_bits {
  u8 reserved_at_0[0x3];
  u8 vsd[0x1];
  u8 reserved_at_4[0x4];
  u8 state[0x4];
  u8 reserved_at_c[0x1];
  u8 flush_in_error_en[0x1];
  u8 reserved_at_e[0xc];
  u8 ts_format[0x2];
  u8 reserved_at_1c[0x2c];
  u8 cqn[0x18];
  u8 counter_set_id[0x8];
  u8 reserved_at_68[0x118];
  struct mlx5_ifc_wq_bits wq;
};

struct mlx5_ifc_create_rq_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0xc0];
  struct mlx5_ifc_rqc_bits ctx;
};

struct mlx5_ifc_create_rq_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x8];
  u8 rqn[0x18];
  u8 reserved_at_60[0x20];
};

struct mlx5_ifc_modify_rq_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 rq_state[0x4];
  u8 reserved_at_44[0x4];
  u8 rqn[0x18];
  u8 reserved_at_60[0x20];
  u8 modify_bitmask[0x40];
  u8 reserved_at_c0[0x40];
  struct mlx5_ifc_rqc_bits ctx;
};

/* ---- SQ and TIS ---- */

struct mlx5_ifc_sqc_bits {
  u8 reserved_at_0[0x3];
  u8 flush_in_error_en[0x1];
  u8 allow_multi_pkt_send_wqe[0x1];
  u8 min_wqe_inline_mode[0x3];
  u8 state[0x4];
  u8 reserved_at_c[0xe];
  u8 ts_format[0x2];
  u8 reserved_at_1c[0x2c];
  u8 cqn[0x18];
  u8 reserved_at_60[0x90];
  u8 packet_pacing_rate_limit_index[0x10];
  u8 tis_lst_sz[0x10];
  u8 reserved_at_110[0x58];
  u8 tis_num_0[0x18];
  struct mlx5_ifc_wq_bits wq;
};

struct mlx5_ifc_create_sq_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0xc0];
  struct mlx5_ifc_sqc_bits ctx;
};

struct mlx5_ifc_create_sq_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x8];
  u8 sqn[0x18];
  u8 reserved_at_60[0x20];
};

struct mlx5_ifc_modify_sq_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 sq_state[0x4];
  u8 reserved_at_44[0x4];
  u8 sqn[0x18];
  u8 reserved_at_60[0x20];
  u8 modify_bitmask[0x40];
  u8 reserved_at_c0[0x40];
  struct mlx5_ifc_sqc_bits ctx;
};

/* MODIFY_SQ modify_bitmask: which context fields a RDY -> RDY modify changes */
enum {
  MLX5_MODIFY_SQ_BITMASK_PP_RATE_LIMIT_INDEX = 0x1,
};

/* A packet pacing rate (mlx5dv_pp_alloc takes this context, the kernel the index) */
struct mlx5_ifc_set_pp_rate_limit_context_bits {
  u8 rate_limit[0x20]; /* kb/s */
  u8 burst_upper_bound[0x20];
  u8 reserved_at_40[0x10];
  u8 typical_packet_size[0x10];
  u8 reserved_at_60[0x120];
};

struct mlx5_ifc_tisc_bits {
  u8 reserved_at_0[0x128];
  u8 transport_domain[0x18];
  u8 reserved_at_140[0x3c0];
};

struct mlx5_ifc_create_tis_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0xc0];
  struct mlx5_ifc_tisc_bits ctx;
};

struct mlx5_ifc_create_tis_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x8];
  u8 tisn[0x18];
  u8 reserved_at_60[0x20];
};

/* ---- TIR ---- */

struct mlx5_ifc_rx_hash_field_select_bits {
  u8 l3_prot_type[0x1];
  u8 l4_prot_type[0x1];
  u8 selected_fields[0x1e];
};

struct mlx5_ifc_tirc_bits {
  u8 reserved_at_0[0x20];
  u8 disp_type[0x4];
  u8 reserved_at_24[0xc4];
  u8 inline_rqn[0x18];
  u8 rx_hash_symmetric[0x1];
  u8 reserved_at_101[0x7];
  u8 indirect_table[0x18];
  u8 rx_hash_fn[0x4];
  u8 reserved_at_124[0x4];
  u8 transport_domain[0x18];
  u8 rx_hash_toeplitz_key[10][0x20];
  struct mlx5_ifc_rx_hash_field_select_bits rx_hash_field_selector_outer;
  u8 reserved_at_2a0[0x4e0];
};

struct mlx5_ifc_create_tir_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0xc0];
  struct mlx5_ifc_tirc_bits ctx;
};

struct mlx5_ifc_create_tir_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x8];
  u8 tirn[0x18];
  u8 reserved_at_60[0x20];
};

/* ---- RQT (the indirection table of an RSS TIR) ---- */

struct mlx5_ifc_rq_num_bits {
  u8 reserved_at_0[0x8];
  u8 rq_num[0x18];
};

struct mlx5_ifc_rqtc_bits {
  u8 reserved_at_0[0xb0];
  u8 rqt_max_size[0x10];
  u8 reserved_at_c0[0x10];
  u8 rqt_actual_size[0x10];
  u8 reserved_at_e0[0x6a0];
  struct mlx5_ifc_rq_num_bits rq_num[]; /* rqt_max_size entries follow the context */
};

struct mlx5_ifc_create_rqt_in_bits {
  u8 opcode[0x10];
  u8 uid[0x10];
  u8 reserved_at_20[0x10];
  u8 op_mod[0x10];
  u8 reserved_at_40[0xc0];
  struct mlx5_ifc_rqtc_bits rqt_context;
};

struct mlx5_ifc_create_rqt_out_bits {
  u8 status[0x8];
  u8 reserved_at_8[0x18];
  u8 syndrome[0x20];
  u8 reserved_at_40[0x8];
  u8 rqtn[0x18];
  u8 reserved_at_60[0x20];
};

/* ---- steering match parameters (mlx5dv_dr matcher masks and rule values) ---- */

struct mlx5_ifc_ipv4_layout_bits {
  u8 reserved_at_0[0x60];
  u8 ipv4[0x20];
};

struct mlx5_ifc_ipv6_layout_bits {
  u8 ipv6[16][0x8];
};

union mlx5_ifc_ipv6_layout_ipv4_layout_auto_bits {
  struct mlx5_ifc_ipv6_layout_bits ipv6_layout;
  struct mlx5_ifc_ipv4_layout_bits ipv4_layout;
  u8 reserved_at_0[0x80];
};

struct mlx5_ifc_fte_match_set_lyr_2_4_bits {
  u8 reserved_at_0[0x30];
  u8 ethertype[0x10];
  u8 reserved_at_40[0x34];
  u8 first_vid[0xc];
  u8 ip_protocol[0x8];
  u8 reserved_at_88[0x8];
  u8 cvlan_tag[0x1];
  u8 svlan_tag[0x1];
  u8 reserved_at_92[0xe];
  u8 tcp_sport[0x10];
  u8 tcp_dport[0x10];
  u8 reserved_at_c0[0x20];
  u8 udp_sport[0x10];
  u8 udp_dport[0x10];
  union mlx5_ifc_ipv6_layout_ipv4_layout_auto_bits src_ipv4_src_ipv6;
  union mlx5_ifc_ipv6_layout_ipv4_layout_auto_bits dst_ipv4_dst_ipv6;
};

struct mlx5_ifc_fte_match_param_bits {
  struct mlx5_ifc_fte_match_set_lyr_2_4_bits outer_headers;
  u8 reserved_at_200[0xe00];
};

/* Whole-layout sizes (bits), as the PRM defines them: a slip in any reserved gap above
 * moves every later field, so the build stops here. */
#define MLX5_IFC_ASSERT_BITS(name, bits) \
  _Static_assert(sizeof (struct mlx5_ifc_##name##_bits) == (bits), #name " is not " #bits " bits")
MLX5_IFC_ASSERT_BITS (mbox_in, 0x80);
MLX5_IFC_ASSERT_BITS (mbox_out, 0x80);
MLX5_IFC_ASSERT_BITS (query_hca_cap_in, 0x80);
MLX5_IFC_ASSERT_BITS (cmd_hca_cap, 0x800);
MLX5_IFC_ASSERT_BITS (per_protocol_networking_offload_caps, 0x800);
MLX5_IFC_ASSERT_BITS (qos_cap, 0x800);
MLX5_IFC_ASSERT_BITS (query_hca_cap_out, 0x8080);
MLX5_IFC_ASSERT_BITS (set_pp_rate_limit_context, 0x180);
MLX5_IFC_ASSERT_BITS (query_nic_vport_context_in, 0x80);
MLX5_IFC_ASSERT_BITS (nic_vport_context, 0x800);
MLX5_IFC_ASSERT_BITS (query_nic_vport_context_out, 0x880);
MLX5_IFC_ASSERT_BITS (alloc_transport_domain_in, 0x80);
MLX5_IFC_ASSERT_BITS (alloc_transport_domain_out, 0x80);
MLX5_IFC_ASSERT_BITS (alloc_q_counter_in, 0x80);
MLX5_IFC_ASSERT_BITS (alloc_q_counter_out, 0x80);
MLX5_IFC_ASSERT_BITS (query_q_counter_in, 0x100);
MLX5_IFC_ASSERT_BITS (query_q_counter_out, 0x800);
MLX5_IFC_ASSERT_BITS (cqc, 0x200);
MLX5_IFC_ASSERT_BITS (create_cq_in, 0x880);
MLX5_IFC_ASSERT_BITS (create_cq_out, 0x80);
MLX5_IFC_ASSERT_BITS (wq, 0x600);
MLX5_IFC_ASSERT_BITS (rqc, 0x780);
MLX5_IFC_ASSERT_BITS (create_rq_in, 0x880);
MLX5_IFC_ASSERT_BITS (create_rq_out, 0x80);
MLX5_IFC_ASSERT_BITS (modify_rq_in, 0x880);
MLX5_IFC_ASSERT_BITS (sqc, 0x780);
MLX5_IFC_ASSERT_BITS (create_sq_in, 0x880);
MLX5_IFC_ASSERT_BITS (create_sq_out, 0x80);
MLX5_IFC_ASSERT_BITS (modify_sq_in, 0x880);
MLX5_IFC_ASSERT_BITS (tisc, 0x500);
MLX5_IFC_ASSERT_BITS (create_tis_in, 0x600);
MLX5_IFC_ASSERT_BITS (create_tis_out, 0x80);
MLX5_IFC_ASSERT_BITS (rx_hash_field_select, 0x20);
MLX5_IFC_ASSERT_BITS (tirc, 0x780);
MLX5_IFC_ASSERT_BITS (create_tir_in, 0x880);
MLX5_IFC_ASSERT_BITS (create_tir_out, 0x80);
MLX5_IFC_ASSERT_BITS (rq_num, 0x20);
MLX5_IFC_ASSERT_BITS (rqtc, 0x780);
MLX5_IFC_ASSERT_BITS (create_rqt_in, 0x880);
MLX5_IFC_ASSERT_BITS (create_rqt_out, 0x80);
MLX5_IFC_ASSERT_BITS (fte_match_set_lyr_2_4, 0x200);
MLX5_IFC_ASSERT_BITS (fte_match_param, 0x1000);
#undef MLX5_IFC_ASSERT_BITS

#endif /* DAQIRI_MLX5_IFC_H */
