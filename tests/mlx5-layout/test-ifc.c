/* mlx5/prm/mlx5-ifc.h against an independent source: the Linux kernel's
 * include/linux/mlx5/mlx5_ifc.h (Debian's linux-headers-*-common), read as data.
 *
 * A small parser reads the `struct|union mlx5_ifc_<name>_bits { u8 field[0xN]; ... }`
 * declarations (nested struct and union members, multi-dimensional and flexible arrays,
 * anonymous unions, the kernel's DECLARE_FLEX_ARRAY) and computes each member's bit offset and width. Then:
 *   1. the parser is checked on our own header against the compiler (offsetof/sizeof of
 *      every named member), and every named member of our header must be in the list
 *      below, so nothing goes unchecked;
 *   2. every member is compared with the kernel's member of the same struct and name
 *      (a few are named differently there: see the alias tables); members the 6.1
 *      kernel does not define (DevX umem fields, wait_on_time/wait_on_data,
 *      mini_cqe_resp_flow_tag) are checked against the offsets recorded in
 *      reference/daqiri-facts.md §4.9 (the last: DPDK's mlx5_prm.h) instead;
 *   3. whole struct sizes, and the command opcodes and enum values both headers name,
 *      must agree.
 * Every kernel header found is checked. Without one, steps 1 and the facts part run and
 * the test exits 77 (skipped). DAQIRI_KERNEL_MLX5_IFC=/path/mlx5_ifc.h names one.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <infiniband/mlx5dv.h>

#include "kernel-headers.h"
#include "mlx5-ifc.h"

/* ------------------------------------------------------------------------------------ */
/* what we declare, as the compiler lays it out */

typedef struct {
  const char *type;
  const char *member;
  gsize off;
  gsize bits; /* G_MAXSIZE: flexible array, offset only */
} OurField;

#define S(t, m) \
  { \
#t, #m, offsetof(struct mlx5_ifc_##t##_bits, m), sizeof(((struct mlx5_ifc_##t##_bits *) 0)->m) \
  }
#define U(t, m) \
  { \
#t, #m, offsetof(union mlx5_ifc_##t##_bits, m), sizeof(((union mlx5_ifc_##t##_bits *) 0)->m) \
  }
#define FLEX(t, m) \
  { \
#t, #m, offsetof(struct mlx5_ifc_##t##_bits, m), G_MAXSIZE \
  }

static const OurField our_fields[] = {
  S (mbox_in, opcode),
  S (mbox_in, uid),
  S (mbox_in, op_mod),
  S (mbox_out, status),
  S (mbox_out, syndrome),

  S (query_hca_cap_in, opcode),
  S (query_hca_cap_in, op_mod),
  S (cmd_hca_cap, log_max_qp_sz),
  S (cmd_hca_cap, log_max_cq_sz),
  S (cmd_hca_cap, port_type),
  S (cmd_hca_cap, striding_rq),
  S (cmd_hca_cap, eth_net_offloads),
  S (cmd_hca_cap, bf),
  S (cmd_hca_cap, log_bf_reg_size),
  S (cmd_hca_cap, log_max_rqt_size),
  S (cmd_hca_cap, ext_stride_num_range),
  S (cmd_hca_cap, log_max_stride_sz_rq),
  S (cmd_hca_cap, log_min_stride_sz_rq),
  S (cmd_hca_cap, log_max_wq_sz),
  S (cmd_hca_cap, general_obj_types),
  S (cmd_hca_cap, sq_ts_format),
  S (cmd_hca_cap, rq_ts_format),
  S (cmd_hca_cap, device_frequency_khz),
  S (cmd_hca_cap, enhanced_cqe_compression),
  S (cmd_hca_cap, mini_cqe_resp_flow_tag),
  S (cmd_hca_cap, mini_cqe_resp_stride_index),
  S (cmd_hca_cap, cqe_compression),
  S (cmd_hca_cap, wait_on_data),
  S (cmd_hca_cap, wait_on_time),
  S (cmd_hca_cap, qos),
  S (qos_cap, packet_pacing),
  S (qos_cap, packet_pacing_typical_size),
  S (qos_cap, packet_pacing_max_rate),
  S (qos_cap, packet_pacing_min_rate),
  S (set_pp_rate_limit_context, rate_limit),
  S (set_pp_rate_limit_context, burst_upper_bound),
  S (set_pp_rate_limit_context, typical_packet_size),
  S (per_protocol_networking_offload_caps, csum_cap),
  S (per_protocol_networking_offload_caps, vlan_cap),
  S (per_protocol_networking_offload_caps, multi_pkt_send_wqe),
  S (per_protocol_networking_offload_caps, wqe_inline_mode),
  S (per_protocol_networking_offload_caps, enhanced_multi_pkt_send_wqe),
  U (hca_cap_union, cmd_hca_cap),
  U (hca_cap_union, per_protocol_networking_offload_caps),
  U (hca_cap_union, qos_cap),
  S (query_hca_cap_out, status),
  S (query_hca_cap_out, syndrome),
  S (query_hca_cap_out, capability),

  S (query_nic_vport_context_in, opcode),
  S (query_nic_vport_context_in, op_mod),
  S (mac_address_layout, mac_addr_47_32),
  S (mac_address_layout, mac_addr_31_0),
  S (nic_vport_context, min_wqe_inline_mode),
  S (nic_vport_context, mtu),
  S (nic_vport_context, permanent_address),
  S (query_nic_vport_context_out, status),
  S (query_nic_vport_context_out, syndrome),
  S (query_nic_vport_context_out, nic_vport_context),

  S (alloc_q_counter_in, opcode),
  S (alloc_q_counter_in, uid),
  S (alloc_q_counter_in, op_mod),
  S (alloc_q_counter_out, status),
  S (alloc_q_counter_out, syndrome),
  S (alloc_q_counter_out, counter_set_id),
  S (query_q_counter_in, opcode),
  S (query_q_counter_in, op_mod),
  S (query_q_counter_in, clear),
  S (query_q_counter_in, counter_set_id),
  S (query_q_counter_out, status),
  S (query_q_counter_out, syndrome),
  S (query_q_counter_out, out_of_buffer),

  S (alloc_transport_domain_in, opcode),
  S (alloc_transport_domain_in, uid),
  S (alloc_transport_domain_in, op_mod),
  S (alloc_transport_domain_out, status),
  S (alloc_transport_domain_out, syndrome),
  S (alloc_transport_domain_out, transport_domain),

  S (cqc, dbr_umem_valid),
  S (cqc, cqe_sz),
  S (cqc, cqe_comp_en),
  S (cqc, mini_cqe_res_format),
  S (cqc, cqe_comp_layout),
  S (cqc, dbr_umem_id),
  S (cqc, log_cq_size),
  S (cqc, uar_page),
  S (cqc, c_eqn_or_apu_element),
  S (cqc, log_page_size),
  S (cqc, dbr_addr),
  S (create_cq_in, opcode),
  S (create_cq_in, uid),
  S (create_cq_in, op_mod),
  S (create_cq_in, cq_context),
  S (create_cq_in, cq_umem_offset),
  S (create_cq_in, cq_umem_id),
  S (create_cq_in, cq_umem_valid),
  S (create_cq_out, status),
  S (create_cq_out, syndrome),
  S (create_cq_out, cqn),

  S (wq, wq_type),
  S (wq, pd),
  S (wq, uar_page),
  S (wq, dbr_addr),
  S (wq, log_wq_stride),
  S (wq, log_wq_pg_sz),
  S (wq, log_wq_sz),
  S (wq, dbr_umem_valid),
  S (wq, wq_umem_valid),
  S (wq, single_wqe_log_num_of_strides),
  S (wq, two_byte_shift_en),
  S (wq, single_stride_log_num_of_bytes),
  S (wq, dbr_umem_id),
  S (wq, wq_umem_id),
  S (wq, wq_umem_offset),

  S (rqc, vsd),
  S (rqc, state),
  S (rqc, flush_in_error_en),
  S (rqc, ts_format),
  S (rqc, cqn),
  S (rqc, counter_set_id),
  S (rqc, wq),
  S (create_rq_in, opcode),
  S (create_rq_in, uid),
  S (create_rq_in, op_mod),
  S (create_rq_in, ctx),
  S (create_rq_out, status),
  S (create_rq_out, syndrome),
  S (create_rq_out, rqn),
  S (modify_rq_in, opcode),
  S (modify_rq_in, uid),
  S (modify_rq_in, op_mod),
  S (modify_rq_in, rq_state),
  S (modify_rq_in, rqn),
  S (modify_rq_in, modify_bitmask),
  S (modify_rq_in, ctx),

  S (sqc, flush_in_error_en),
  S (sqc, allow_multi_pkt_send_wqe),
  S (sqc, min_wqe_inline_mode),
  S (sqc, packet_pacing_rate_limit_index),
  S (sqc, state),
  S (sqc, ts_format),
  S (sqc, cqn),
  S (sqc, tis_lst_sz),
  S (sqc, tis_num_0),
  S (sqc, wq),
  S (create_sq_in, opcode),
  S (create_sq_in, uid),
  S (create_sq_in, op_mod),
  S (create_sq_in, ctx),
  S (create_sq_out, status),
  S (create_sq_out, syndrome),
  S (create_sq_out, sqn),
  S (modify_sq_in, opcode),
  S (modify_sq_in, uid),
  S (modify_sq_in, op_mod),
  S (modify_sq_in, sq_state),
  S (modify_sq_in, sqn),
  S (modify_sq_in, modify_bitmask),
  S (modify_sq_in, ctx),

  S (tisc, transport_domain),
  S (create_tis_in, opcode),
  S (create_tis_in, uid),
  S (create_tis_in, op_mod),
  S (create_tis_in, ctx),
  S (create_tis_out, status),
  S (create_tis_out, syndrome),
  S (create_tis_out, tisn),

  S (rx_hash_field_select, l3_prot_type),
  S (rx_hash_field_select, l4_prot_type),
  S (rx_hash_field_select, selected_fields),
  S (tirc, disp_type),
  S (tirc, inline_rqn),
  S (tirc, rx_hash_symmetric),
  S (tirc, indirect_table),
  S (tirc, rx_hash_fn),
  S (tirc, transport_domain),
  S (tirc, rx_hash_toeplitz_key),
  S (tirc, rx_hash_field_selector_outer),
  S (create_tir_in, opcode),
  S (create_tir_in, uid),
  S (create_tir_in, op_mod),
  S (create_tir_in, ctx),
  S (create_tir_out, status),
  S (create_tir_out, syndrome),
  S (create_tir_out, tirn),

  S (rq_num, rq_num),
  S (rqtc, rqt_max_size),
  S (rqtc, rqt_actual_size),
  FLEX (rqtc, rq_num),
  S (create_rqt_in, opcode),
  S (create_rqt_in, uid),
  S (create_rqt_in, op_mod),
  S (create_rqt_in, rqt_context),
  S (create_rqt_out, status),
  S (create_rqt_out, syndrome),
  S (create_rqt_out, rqtn),

  S (ipv4_layout, ipv4),
  S (ipv6_layout, ipv6),
  U (ipv6_layout_ipv4_layout_auto, ipv6_layout),
  U (ipv6_layout_ipv4_layout_auto, ipv4_layout),
  S (fte_match_set_lyr_2_4, ethertype),
  S (fte_match_set_lyr_2_4, first_vid),
  S (fte_match_set_lyr_2_4, ip_protocol),
  S (fte_match_set_lyr_2_4, cvlan_tag),
  S (fte_match_set_lyr_2_4, svlan_tag),
  S (fte_match_set_lyr_2_4, tcp_sport),
  S (fte_match_set_lyr_2_4, tcp_dport),
  S (fte_match_set_lyr_2_4, udp_sport),
  S (fte_match_set_lyr_2_4, udp_dport),
  S (fte_match_set_lyr_2_4, src_ipv4_src_ipv6),
  S (fte_match_set_lyr_2_4, dst_ipv4_dst_ipv6),
  S (fte_match_param, outer_headers),
};

/* Our structs whose kernel counterpart has another name (the kernel has no generic
 * mailbox header; any command's header has the same fields). */
static const char *const struct_alias[][2] = {
  { "mbox_in", "alloc_transport_domain_in" },
  { "mbox_out", "alloc_transport_domain_out" },
};

/* Members we name as the PRM does and the kernel otherwise. */
static const char *const member_alias[][3] = {
  { "wq", "single_wqe_log_num_of_strides", "log_wqe_num_of_strides" },
  { "wq", "single_stride_log_num_of_bytes", "log_wqe_stride_size" },
  { "cqc", "cqe_comp_layout", "cqe_compression_layout" },
};

/* reference/daqiri-facts.md §4.9 (bit offset, width) of members kernel 6.1 leaves
 * reserved (§11), and one the facts do not record (its source beside it); laid out as
 * our own fields */
typedef OurField FactField;

static const FactField fact_fields[] = {
  { "wq", "dbr_umem_id", 0x140, 0x20 },
  { "wq", "wq_umem_id", 0x160, 0x20 },
  { "wq", "wq_umem_offset", 0x180, 0x40 },
  { "cqc", "dbr_umem_id", 0x20, 0x20 },
  { "create_cq_in", "cq_umem_offset", 0x280, 0x40 },
  { "create_cq_in", "cq_umem_id", 0x2c0, 0x20 },
  { "cmd_hca_cap", "wait_on_data", 0x68b, 0x1 },
  { "cmd_hca_cap", "wait_on_time", 0x68c, 0x1 },
  /* not in §4.9: DPDK's drivers/common/mlx5/mlx5_prm.h and later kernels' mlx5_ifc.h put
   * it between mini_cqe_resp_l3_l4_tag (0x5b9) and mini_cqe_resp_stride_index (0x5bc) */
  { "cmd_hca_cap", "mini_cqe_resp_flow_tag", 0x5ba, 0x1 },
};

/* Constants whose kernel definition, where it has a literal value, must match. */
typedef struct {
  const char *name;
  guint value;
  gboolean required; /* the kernel header must define it */
} OurConst;

#define C(n, req) \
  { \
#n, n, req \
  }
static const OurConst our_consts[] = {
  C (MLX5_CMD_OP_QUERY_HCA_CAP, TRUE),
  C (MLX5_CMD_OP_CREATE_CQ, TRUE),
  C (MLX5_CMD_OP_QUERY_NIC_VPORT_CONTEXT, TRUE),
  C (MLX5_CMD_OP_ALLOC_Q_COUNTER, TRUE),
  C (MLX5_CMD_OP_QUERY_Q_COUNTER, TRUE),
  C (MLX5_CMD_OP_ALLOC_TRANSPORT_DOMAIN, TRUE),
  C (MLX5_CMD_OP_CREATE_TIR, TRUE),
  C (MLX5_CMD_OP_CREATE_SQ, TRUE),
  C (MLX5_CMD_OP_MODIFY_SQ, TRUE),
  C (MLX5_CMD_OP_CREATE_RQ, TRUE),
  C (MLX5_CMD_OP_MODIFY_RQ, TRUE),
  C (MLX5_CMD_OP_CREATE_TIS, TRUE),
  C (MLX5_CMD_OP_CREATE_RQT, TRUE),
  C (MLX5_CMD_STAT_OK, TRUE),
  C (MLX5_CMD_STAT_INT_ERR, TRUE),
  C (MLX5_CMD_STAT_BAD_OP_ERR, TRUE),
  C (MLX5_CMD_STAT_BAD_PARAM_ERR, TRUE),
  C (MLX5_CMD_STAT_BAD_SYS_STATE_ERR, TRUE),
  C (MLX5_CMD_STAT_BAD_RES_ERR, TRUE),
  C (MLX5_CMD_STAT_RES_BUSY, TRUE),
  C (MLX5_CMD_STAT_LIM_ERR, TRUE),
  C (MLX5_CMD_STAT_BAD_RES_STATE_ERR, TRUE),
  C (MLX5_CMD_STAT_IX_ERR, TRUE),
  C (MLX5_CMD_STAT_NO_RES_ERR, TRUE),
  C (MLX5_CMD_STAT_BAD_QP_STATE_ERR, TRUE),
  C (MLX5_CMD_STAT_BAD_PKT_ERR, TRUE),
  C (MLX5_CMD_STAT_BAD_SIZE_OUTS_CQES_ERR, TRUE),
  C (MLX5_CMD_STAT_BAD_INP_LEN_ERR, TRUE),
  C (MLX5_CMD_STAT_BAD_OUTP_LEN_ERR, TRUE),
  C (MLX5_CAP_PORT_TYPE_IB, FALSE),
  C (MLX5_CAP_PORT_TYPE_ETH, FALSE),
  C (MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING, FALSE),
  C (MLX5_TIMESTAMP_FORMAT_CAP_REAL_TIME, FALSE),
  C (MLX5_TIMESTAMP_FORMAT_CAP_FREE_RUNNING_AND_REAL_TIME, FALSE),
  C (MLX5_TIMESTAMP_FORMAT_FREE_RUNNING, FALSE),
  C (MLX5_TIMESTAMP_FORMAT_DEFAULT, FALSE),
  C (MLX5_TIMESTAMP_FORMAT_REAL_TIME, FALSE),
  C (MLX5_CAP_INLINE_MODE_L2, FALSE),
  C (MLX5_CAP_INLINE_MODE_VPORT_CONTEXT, FALSE),
  C (MLX5_CAP_INLINE_MODE_NOT_REQUIRED, FALSE),
  C (MLX5_WQ_TYPE_CYCLIC, TRUE),
  C (MLX5_WQ_TYPE_CYCLIC_STRIDING_RQ, TRUE),
  C (MLX5_RQC_STATE_RST, TRUE),
  C (MLX5_RQC_STATE_RDY, TRUE),
  C (MLX5_RQC_STATE_ERR, TRUE),
  C (MLX5_SQC_STATE_RST, TRUE),
  C (MLX5_SQC_STATE_RDY, TRUE),
  C (MLX5_SQC_STATE_ERR, TRUE),
  C (MLX5_TIRC_DISP_TYPE_DIRECT, TRUE),
  C (MLX5_TIRC_DISP_TYPE_INDIRECT, TRUE),
  C (MLX5_RX_HASH_FN_NONE, TRUE),
  C (MLX5_RX_HASH_FN_INVERTED_XOR8, TRUE),
  C (MLX5_RX_HASH_FN_TOEPLITZ, TRUE),
  C (MLX5_L3_PROT_TYPE_IPV4, FALSE),
  C (MLX5_L3_PROT_TYPE_IPV6, FALSE),
  C (MLX5_L4_PROT_TYPE_TCP, FALSE),
  C (MLX5_L4_PROT_TYPE_UDP, FALSE),
  C (MLX5_ADAPTER_PAGE_SHIFT, TRUE),
};

/* ------------------------------------------------------------------------------------ */
/* the parser */

typedef struct _KType KType;

typedef struct {
  const char *name;  /* NULL: an anonymous struct/union, its members visible; one of the
                      * header's tokens */
  char *type;        /* NULL: u8; else a named type */
  KType *anon;       /* the anonymous struct/union */
  gint64 count;      /* product of the dimensions; -1 unknown */
  gboolean flexible; /* `[]`: no width, only an offset */
} KMember;

struct _KType {
  char *name;
  gboolean is_union;
  gboolean broken;    /* a construct the parser does not know: offsets past it
                                 * cannot be trusted */
  GPtrArray *members; /* KMember * */
};

typedef struct {
  GHashTable *types; /* name (without mlx5_ifc_ and _bits) -> KType */
  GPtrArray *anons;  /* KType * owned */
  GPtrArray *tokens; /* char * */
  guint pos;
  char *text; /* the file, comments and preprocessor lines removed */
} KHeader;

static void
kmember_free (gpointer p)
{
  KMember *m = p;
  g_free (m->type);
  g_free (m);
}

static void
ktype_free (gpointer p)
{
  KType *t = p;
  g_free (t->name);
  g_ptr_array_unref (t->members);
  g_free (t);
}

static KType *
ktype_new (const char *name, gboolean is_union)
{
  KType *t = g_new0 (KType, 1);
  t->name = g_strdup (name);
  t->is_union = is_union;
  t->members = g_ptr_array_new_with_free_func (kmember_free);
  return t;
}

/* removes comments and preprocessor lines, keeping line structure */
static char *
strip_source (const char *src)
{
  GString *out = g_string_sized_new (strlen (src));
  const char *p = src;
  gboolean line_start = TRUE;
  while (*p) {
    if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr (p + 2, "*/");
      p = e ? e + 2 : p + strlen (p);
      g_string_append_c (out, ' ');
      continue;
    }
    if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n')
        p++;
      continue;
    }
    if (line_start) {
      const char *q = p;
      while (*q == ' ' || *q == '\t')
        q++;
      if (*q == '#') {
        /* a preprocessor line, with its continuations */
        while (*q && !(*q == '\n' && q[-1] != '\\'))
          q++;
        p = q;
        continue;
      }
    }
    line_start = *p == '\n';
    g_string_append_c (out, *p++);
  }
  return g_string_free (out, FALSE);
}

static GPtrArray *
tokenize (const char *s)
{
  GPtrArray *toks = g_ptr_array_new_with_free_func (g_free);
  const char *p = s;
  while (*p) {
    if (g_ascii_isspace (*p)) {
      p++;
    } else if (g_ascii_isalpha (*p) || *p == '_') {
      const char *b = p;
      while (g_ascii_isalnum (*p) || *p == '_')
        p++;
      g_ptr_array_add (toks, g_strndup (b, (gsize) (p - b)));
    } else if (g_ascii_isdigit (*p)) {
      const char *b = p;
      while (g_ascii_isalnum (*p))
        p++;
      g_ptr_array_add (toks, g_strndup (b, (gsize) (p - b)));
    } else {
      g_ptr_array_add (toks, g_strndup (p, 1));
      p++;
    }
  }
  return toks;
}

static const char *
tok (KHeader *h, guint i)
{
  return i < h->tokens->len ? g_ptr_array_index (h->tokens, i) : "";
}

static gboolean
is_ident (const char *t)
{
  return g_ascii_isalpha (t[0]) || t[0] == '_';
}

/* "mlx5_ifc_cqc_bits" -> "cqc"; NULL for other names */
static char *
ifc_name (const char *t)
{
  if (!g_str_has_prefix (t, "mlx5_ifc_") || !g_str_has_suffix (t, "_bits"))
    return NULL;
  return g_strndup (t + 9, strlen (t) - 9 - 5);
}

/* `[N][M]...` at h->pos: the product of the dimensions; -1 when one is not a number,
 * *flexible for a `[]` */
static gint64
parse_dims (KHeader *h, gboolean *flexible)
{
  gint64 count = 1;
  *flexible = FALSE;
  while (strcmp (tok (h, h->pos), "[") == 0) {
    const char *d = tok (h, h->pos + 1);
    if (strcmp (d, "]") == 0) {
      *flexible = TRUE;
      h->pos += 2;
      continue;
    }
    char *end = NULL;
    guint64 v = g_ascii_isdigit (d[0]) ? g_ascii_strtoull (d, &end, 0) : 0;
    if (end && *end == '\0' && v <= G_MAXINT32 && strcmp (tok (h, h->pos + 2), "]") == 0)
      count = count < 0 ? -1 : count * (gint64) v;
    else
      count = -1;
    /* skip to the closing bracket */
    while (h->pos < h->tokens->len && strcmp (tok (h, h->pos), "]") != 0)
      h->pos++;
    h->pos++;
  }
  return count;
}

static void
skip_statement (KHeader *h)
{
  int depth = 0;
  while (h->pos < h->tokens->len) {
    const char *t = tok (h, h->pos);
    if (strcmp (t, "{") == 0)
      depth++;
    else if (strcmp (t, "}") == 0) {
      if (depth == 0)
        return;
      depth--;
    } else if (strcmp (t, ";") == 0 && depth == 0) {
      h->pos++;
      return;
    }
    h->pos++;
  }
}

/* members up to the closing brace (not consumed) */
static void
parse_members (KHeader *h, KType *t)
{
  while (h->pos < h->tokens->len && strcmp (tok (h, h->pos), "}") != 0) {
    const char *k = tok (h, h->pos);
    KMember *m = g_new0 (KMember, 1);
    if (strcmp (k, "u8") == 0 && is_ident (tok (h, h->pos + 1))) {
      m->name = tok (h, h->pos + 1);
      h->pos += 2;
      m->count = parse_dims (h, &m->flexible);
    } else if ((strcmp (k, "struct") == 0 || strcmp (k, "union") == 0) &&
        strcmp (tok (h, h->pos + 1), "{") == 0) {
      m->anon = ktype_new (NULL, strcmp (k, "union") == 0);
      g_ptr_array_add (h->anons, m->anon);
      h->pos += 2;
      parse_members (h, m->anon);
      h->pos++; /* } */
      if (is_ident (tok (h, h->pos)))
        m->name = tok (h, h->pos++);
      m->count = parse_dims (h, &m->flexible);
    } else if ((strcmp (k, "struct") == 0 || strcmp (k, "union") == 0) &&
        (m->type = ifc_name (tok (h, h->pos + 1))) != NULL && is_ident (tok (h, h->pos + 2))) {
      m->name = tok (h, h->pos + 2);
      h->pos += 3;
      m->count = parse_dims (h, &m->flexible);
    } else if (strcmp (k, "DECLARE_FLEX_ARRAY") == 0 && strcmp (tok (h, h->pos + 1), "(") == 0) {
      /* DECLARE_FLEX_ARRAY(u8, name) or DECLARE_FLEX_ARRAY(struct mlx5_ifc_X_bits, name)
       * (kernel >= 6.5): a flexible array member */
      guint p = h->pos + 2;
      if (strcmp (tok (h, p), "struct") == 0 || strcmp (tok (h, p), "union") == 0)
        m->type = ifc_name (tok (h, ++p));
      else if (strcmp (tok (h, p), "u8") != 0)
        p = G_MAXUINT;
      if (p != G_MAXUINT && strcmp (tok (h, p + 1), ",") == 0 && is_ident (tok (h, p + 2)) &&
          strcmp (tok (h, p + 3), ")") == 0 && (m->type || strcmp (tok (h, p), "u8") == 0)) {
        m->name = tok (h, p + 2);
        m->flexible = TRUE;
        m->count = 0;
        h->pos = p + 4;
      } else {
        kmember_free (m);
        t->broken = TRUE;
        skip_statement (h);
        continue;
      }
    } else {
      kmember_free (m);
      t->broken = TRUE;
      skip_statement (h);
      continue;
    }
    if (strcmp (tok (h, h->pos), ";") != 0) {
      t->broken = TRUE;
      kmember_free (m);
      skip_statement (h);
      continue;
    }
    h->pos++;
    g_ptr_array_add (t->members, m);
  }
}

static KHeader *
kheader_parse (const char *path, GError **error)
{
  char *src;
  if (!g_file_get_contents (path, &src, NULL, error))
    return NULL;
  KHeader *h = g_new0 (KHeader, 1);
  h->types = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, ktype_free);
  h->anons = g_ptr_array_new_with_free_func (ktype_free);
  h->text = strip_source (src);
  g_free (src);
  h->tokens = tokenize (h->text);
  for (h->pos = 0; h->pos + 2 < h->tokens->len; h->pos++) {
    const char *k = tok (h, h->pos);
    if (strcmp (k, "struct") != 0 && strcmp (k, "union") != 0)
      continue;
    char *name = ifc_name (tok (h, h->pos + 1));
    if (name == NULL || strcmp (tok (h, h->pos + 2), "{") != 0) {
      g_free (name);
      continue;
    }
    KType *t = ktype_new (name, strcmp (k, "union") == 0);
    g_free (name);
    h->pos += 3;
    parse_members (h, t);
    if (g_hash_table_contains (h->types, t->name))
      ktype_free (t); /* a second definition (#ifdef'd): keep the first */
    else
      g_hash_table_insert (h->types, t->name, t);
  }
  return h;
}

static void
kheader_free (KHeader *h)
{
  g_hash_table_unref (h->types);
  g_ptr_array_unref (h->anons);
  g_ptr_array_unref (h->tokens);
  g_free (h->text);
  g_free (h);
}

static gint64 ktype_bits (KHeader *h, const KType *t, int depth);

/* bits of one member, -1 unknown; flexible arrays take none */
static gint64
kmember_bits (KHeader *h, const KMember *m, int depth)
{
  if (m->flexible)
    return 0;
  if (m->count < 0)
    return -1;
  gint64 unit = 1;
  if (m->anon)
    unit = ktype_bits (h, m->anon, depth + 1);
  else if (m->type) {
    KType *sub = g_hash_table_lookup (h->types, m->type);
    unit = sub ? ktype_bits (h, sub, depth + 1) : -1;
  }
  return unit < 0 ? -1 : unit * m->count;
}

static gint64
ktype_bits (KHeader *h, const KType *t, int depth)
{
  if (depth > 32)
    return -1;
  gint64 total = 0;
  for (guint i = 0; i < t->members->len; i++) {
    gint64 b = kmember_bits (h, g_ptr_array_index (t->members, i), depth);
    if (t->is_union) {
      /* a member of unknown type (defined in another header) does not count: the
       * union's reserved member gives its size */
      if (b > total)
        total = b;
    } else {
      if (b < 0)
        return -1;
      total += b;
    }
  }
  return t->broken && !t->is_union ? -1 : total;
}

/* offset and width of a member, looking into anonymous members; FALSE when absent or
 * not computable */
static gboolean
kmember_find (KHeader *h, const KType *t, const char *name, gint64 *off, gint64 *bits)
{
  gint64 at = 0;
  for (guint i = 0; i < t->members->len; i++) {
    const KMember *m = g_ptr_array_index (t->members, i);
    gint64 b = kmember_bits (h, m, 0);
    if (m->name && strcmp (m->name, name) == 0) {
      *off = at;
      *bits = m->flexible ? G_MAXINT64 : b;
      return b >= 0;
    }
    if (m->name == NULL && m->anon) {
      gint64 o2, b2;
      if (kmember_find (h, m->anon, name, &o2, &b2)) {
        *off = at + o2;
        *bits = b2;
        return TRUE;
      }
    }
    if (!t->is_union) {
      if (b < 0)
        return FALSE;
      at += b;
    }
  }
  return FALSE;
}

/* the named members of a type, recursing into anonymous ones */
static void
kmember_names (const KType *t, GPtrArray *out)
{
  for (guint i = 0; i < t->members->len; i++) {
    const KMember *m = g_ptr_array_index (t->members, i);
    if (m->name == NULL && m->anon)
      kmember_names (m->anon, out);
    else if (m->name && !g_str_has_prefix (m->name, "reserved"))
      g_ptr_array_add (out, (gpointer) m->name);
  }
}

/* ------------------------------------------------------------------------------------ */

static const char *
alias_type (const char *type)
{
  for (guint i = 0; i < G_N_ELEMENTS (struct_alias); i++)
    if (strcmp (struct_alias[i][0], type) == 0)
      return struct_alias[i][1];
  return type;
}

static const char *
alias_member (const char *type, const char *member)
{
  for (guint i = 0; i < G_N_ELEMENTS (member_alias); i++)
    if (strcmp (member_alias[i][0], type) == 0 && strcmp (member_alias[i][1], member) == 0)
      return member_alias[i][2];
  return member;
}

/* the field `member` of `type` in a list of n, or NULL */
static const OurField *
field_find (const OurField *fields, guint n, const char *type, const char *member)
{
  for (guint i = 0; i < n; i++)
    if (strcmp (fields[i].type, type) == 0 && strcmp (fields[i].member, member) == 0)
      return &fields[i];
  return NULL;
}

static const FactField *
fact_find (const char *type, const char *member)
{
  return field_find (fact_fields, G_N_ELEMENTS (fact_fields), type, member);
}

static const OurField *
our_find (const char *type, const char *member)
{
  return field_find (our_fields, G_N_ELEMENTS (our_fields), type, member);
}

/* 1. the parser on our header agrees with the compiler, and the list is complete */
static void
check_ours (KHeader *ours)
{
  guint checked = 0;
  for (guint i = 0; i < G_N_ELEMENTS (our_fields); i++) {
    const OurField *f = &our_fields[i];
    KType *t = g_hash_table_lookup (ours->types, f->type);
    gint64 off, bits;
    if (t == NULL || !kmember_find (ours, t, f->member, &off, &bits)) {
      fail ("parser: %s.%s not found in our header", f->type, f->member);
      continue;
    }
    gint64 want_bits = f->bits == G_MAXSIZE ? G_MAXINT64 : (gint64) f->bits;
    if (off != (gint64) f->off || bits != want_bits)
      fail ("parser: %s.%s parsed at 0x%" G_GINT64_MODIFIER "x/0x%" G_GINT64_MODIFIER
            "x, compiled at 0x%" G_GSIZE_MODIFIER "x/0x%" G_GSIZE_MODIFIER "x",
          f->type, f->member, off, bits, f->off, f->bits);
    checked++;
  }

  /* every named member of every layout of ours is in the list */
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, ours->types);
  while (g_hash_table_iter_next (&it, &key, &value)) {
    KType *t = value;
    GPtrArray *names = g_ptr_array_new ();
    kmember_names (t, names);
    for (guint i = 0; i < names->len; i++)
      if (our_find (t->name, g_ptr_array_index (names, i)) == NULL)
        fail ("our %s.%s is not in the test's field list: add it", t->name,
            (const char *) g_ptr_array_index (names, i));
    g_ptr_array_unref (names);
    if (t->broken)
      fail ("parser: our %s has a construct the parser does not know", t->name);
  }
  g_print ("our header: %u fields parsed as the compiler lays them out, %u layouts\n", checked,
      g_hash_table_size (ours->types));
}

/* the facts' offsets of the members the kernel may not define */
static void
check_facts (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (fact_fields); i++) {
    const FactField *ff = &fact_fields[i];
    const OurField *f = our_find (ff->type, ff->member);
    if (f == NULL) {
      fail ("facts: %s.%s is not declared by us", ff->type, ff->member);
      continue;
    }
    if (f->off != ff->off || f->bits != ff->bits)
      fail ("facts: %s.%s is at 0x%" G_GSIZE_MODIFIER "x/0x%" G_GSIZE_MODIFIER "x, the "
            "facts say 0x%" G_GSIZE_MODIFIER "x/0x%" G_GSIZE_MODIFIER "x",
          ff->type, ff->member, f->off, f->bits, ff->off, ff->bits);
  }
}

static gboolean
kernel_const (const char *text, const char *name, guint *value)
{
  char *pattern = g_strdup_printf ("(?:\\b%s\\s*=\\s*|#define\\s+%s\\s+)"
                                   "(0x[0-9a-fA-F]+|[0-9]+)\\s*(?:,|}|\\n)",
      name, name);
  guint64 v = 0;
  gboolean found = kernel_text_number (text, pattern, G_REGEX_MULTILINE, &v);
  g_free (pattern);
  if (found)
    *value = (guint) v;
  return found;
}

/* 2. and 3. against one kernel header */
static void
check_kernel (KHeader *ours, const char *path)
{
  GError *err = NULL;
  KHeader *k = kheader_parse (path, &err);
  if (k == NULL) {
    fail ("%s: %s", path, err->message);
    g_error_free (err);
    return;
  }
  /* device.h beside it holds the command status values and MLX5_ADAPTER_PAGE_SHIFT */
  char *dir = g_path_get_dirname (path);
  char *device_h = g_build_filename (dir, "device.h", NULL);
  char *device_text = NULL;
  g_file_get_contents (device_h, &device_text, NULL, NULL);
  g_free (device_h);
  g_free (dir);

  guint by_kernel = 0, by_facts = 0, sizes = 0, consts = 0;
  for (guint i = 0; i < G_N_ELEMENTS (our_fields); i++) {
    const OurField *f = &our_fields[i];
    const char *ktname = alias_type (f->type);
    const char *kmname = alias_member (f->type, f->member);
    KType *kt = g_hash_table_lookup (k->types, ktname);
    gint64 off, bits;
    if (kt && kmember_find (k, kt, kmname, &off, &bits)) {
      gint64 want_bits = f->bits == G_MAXSIZE ? G_MAXINT64 : (gint64) f->bits;
      if (off != (gint64) f->off || bits != want_bits)
        fail ("%s.%s: ours 0x%" G_GSIZE_MODIFIER "x/0x%" G_GSIZE_MODIFIER "x, the kernel's "
              "%s.%s 0x%" G_GINT64_MODIFIER "x/0x%" G_GINT64_MODIFIER "x",
            f->type, f->member, f->off, f->bits, ktname, kmname, off, bits);
      by_kernel++;
      continue;
    }
    const FactField *ff = fact_find (f->type, f->member);
    if (ff) {
      by_facts++; /* compared in check_facts () */
      continue;
    }
    fail ("%s.%s: the kernel's %s has no member %s and the facts record none", f->type, f->member,
        ktname, kmname);
  }

  /* whole layouts */
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, ours->types);
  while (g_hash_table_iter_next (&it, &key, &value)) {
    KType *t = value;
    KType *kt = g_hash_table_lookup (k->types, alias_type (t->name));
    if (kt == NULL)
      continue;
    gint64 a = ktype_bits (ours, t, 0), b = ktype_bits (k, kt, 0);
    if (a != b)
      fail ("%s is 0x%" G_GINT64_MODIFIER "x bits, the kernel's %s 0x%" G_GINT64_MODIFIER "x",
          t->name, a, kt->name, b);
    sizes++;
  }

  /* opcodes and enum values */
  for (guint i = 0; i < G_N_ELEMENTS (our_consts); i++) {
    const OurConst *c = &our_consts[i];
    guint v;
    gboolean found = kernel_const (k->text, c->name, &v) ||
        (device_text && kernel_const (device_text, c->name, &v));
    if (!found) {
      if (c->required)
        fail ("%s is not defined with a value in %s or device.h", c->name, path);
      continue;
    }
    if (v != c->value)
      fail ("%s: ours 0x%x, the kernel's 0x%x", c->name, c->value, v);
    consts++;
  }
  g_print ("%s: %u fields checked against it, %u against the facts (absent there), "
           "%u layout sizes, %u constants\n",
      path, by_kernel, by_facts, sizes, consts);
  g_free (device_text);
  kheader_free (k);
}

static GPtrArray *
find_kernel_headers (void)
{
  static const char *const need[] = { "mlx5_ifc.h", NULL };
  GPtrArray *found = g_ptr_array_new_with_free_func (g_free);
  const char *env = g_getenv ("DAQIRI_KERNEL_MLX5_IFC");
  if (env && *env) {
    g_ptr_array_add (found, g_strdup (env));
    return found;
  }
  GPtrArray *dirs = kernel_mlx5_dirs (need);
  for (guint i = 0; i < dirs->len; i++)
    g_ptr_array_add (found, g_build_filename (g_ptr_array_index (dirs, i), "mlx5_ifc.h", NULL));
  g_ptr_array_unref (dirs);
  return found;
}

int
main (int argc, char **argv)
{
  (void) argc;
  (void) argv;
  GError *err = NULL;
  KHeader *ours = kheader_parse (DQ_MLX5_IFC_H, &err);
  if (ours == NULL) {
    g_printerr ("cannot read our header %s: %s\n", DQ_MLX5_IFC_H, err->message);
    return 1;
  }
  check_ours (ours);
  check_facts ();

  GPtrArray *kernels = find_kernel_headers ();
  for (guint i = 0; i < kernels->len; i++)
    check_kernel (ours, g_ptr_array_index (kernels, i));
  guint n_kernels = kernels->len;
  g_ptr_array_unref (kernels);
  kheader_free (ours);

  return kernel_test_status (n_kernels,
      "no kernel mlx5_ifc.h to compare with: install Debian's "
      "linux-headers-6.1.0-*-common (scripts/deps.sh does) or set "
      "DAQIRI_KERNEL_MLX5_IFC=/path/to/include/linux/mlx5/mlx5_ifc.h; our layouts "
      "were checked against the compiler and the facts only");
}
