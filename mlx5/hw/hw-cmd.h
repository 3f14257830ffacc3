/* DevX command mailboxes for the mlx5 control path, built apart from issuing them.
 *
 * Every mlx5_cmd_build_*() fills an input mailbox (zeroed by the caller, the size of the
 * command's _in layout) from plain values and touches nothing else: no device, no system
 * call. hw-port.c and hw-steer.c issue them (mlx5dv_devx_obj_create/modify,
 * mlx5dv_devx_general_cmd);
 * tests/mlx5-layout checks them field by field with DEVX_GET. The same split holds for
 * the output side (capability parsing, failure text) and for the steering match buffers.
 */
#ifndef DAQIRI_MLX5_HW_CMD_H
#define DAQIRI_MLX5_HW_CMD_H

#include <glib.h>
#include <infiniband/mlx5dv.h>

#include "../mlx5-port.h"
#include "../mlx5-rss.h"

G_BEGIN_DECLS

/* Where a queue's memory sits in DevX umems: the ring and its doorbell record may share
 * one umem (dbr_umem_id == umem_id) or not. Offsets are bytes from the umem's start. */
typedef struct {
  guint32 umem_id;
  guint64 umem_offset;
  guint32 dbr_umem_id;
  guint64 dbr_offset;
} Mlx5HwQueueMem;

/* The capabilities daqiri reads from QUERY_HCA_CAP (general + Ethernet offloads) and
 * QUERY_NIC_VPORT_CONTEXT. */
typedef struct {
  guint port_type; /* MLX5_CAP_PORT_TYPE_* */
  guint log_max_qp_sz;
  guint log_max_cq_sz;
  guint log_max_wq_sz;
  guint log_max_rqt_size;
  gboolean striding_rq;
  gboolean ext_stride_num_range;
  guint log_min_stride_sz_rq, log_max_stride_sz_rq;
  guint64 general_obj_types;
  guint sq_ts_format, rq_ts_format; /* MLX5_TIMESTAMP_FORMAT_CAP_* */
  guint32 device_frequency_khz;
  gboolean wait_on_time, wait_on_data;
  /* compressed CQEs, in the enhanced layout, and the mini-CQE formats with flow tag and
   * with stride index */
  gboolean cqe_compression, enhanced_cqe_compression;
  gboolean mini_cqe_resp_flow_tag, mini_cqe_resp_stride_index;
  gboolean qos;
  /* QoS (valid when qos): packet pacing and its rates, kb/s */
  gboolean packet_pacing;
  gboolean packet_pacing_typical_size;
  guint32 packet_pacing_min_rate, packet_pacing_max_rate;
  gboolean bf;
  guint log_bf_reg_size;
  gboolean eth_net_offloads;
  /* Ethernet offloads (valid when eth_net_offloads) */
  gboolean csum_cap;
  guint multi_pkt_send_wqe;
  gboolean enhanced_multi_pkt_send_wqe;
  guint wqe_inline_mode; /* MLX5_CAP_INLINE_MODE_* */
  /* NIC vport context */
  guint min_wqe_inline_mode; /* MLX5_INLINE_MODE_*, from the vport when
                                   * wqe_inline_mode is VPORT_CONTEXT */
} Mlx5HwCaps;

/* ---- encodings ---- */

/* log2(page bytes) as WQ/CQ contexts take it: relative to the 4 KiB adapter page.
 * page_shift 12 (4 KiB) -> 0, 16 (64 KiB) -> 4. */
guint mlx5_hw_page_size_encode (guint page_shift);
/* wq.single_wqe_log_num_of_strides: log_strides - 9 as a 4-bit two's complement */
guint mlx5_hw_log_strides_encode (guint log_strides);
/* wq.single_stride_log_num_of_bytes: log_stride_size - 6 */
guint mlx5_hw_log_stride_size_encode (guint log_stride_size);
/* rqc/sqc.ts_format for queues of a device that does (not) stamp real time */
guint mlx5_hw_ts_format (gboolean real_time);

/* ---- command builders: `in` is zeroed and DEVX_ST_SZ_BYTES(<cmd>_in) long ---- */

void mlx5_cmd_build_query_hca_cap (void *in, guint cap_type);
void mlx5_cmd_build_query_nic_vport_context (void *in);
void mlx5_cmd_build_alloc_transport_domain (void *in);
/* cq->comp other than MLX5_CQ_COMP_NONE: cqe_comp_en with FTAG_STRIDX mini-CQEs
 * (mini_cqe_res_format 2) in the basic or the enhanced layout (cqe_comp_layout 0 or 1) */
void mlx5_cmd_build_create_cq (void *in, const Mlx5Cq *cq, const Mlx5HwQueueMem *mem,
    guint32 uar_page, guint32 eqn, guint page_shift);
void mlx5_cmd_build_alloc_q_counter (void *in);
void mlx5_cmd_build_query_q_counter (void *in, guint32 counter_set_id);
/* counter_set_id 0: the RQ counts in no counter set of ours */
void mlx5_cmd_build_create_rq (void *in, const Mlx5Rq *rq, guint32 cqn, guint32 pdn,
    const Mlx5HwQueueMem *mem, guint page_shift, guint ts_format, guint32 counter_set_id);
/* MODIFY_RQ from state `from` to `to` (MLX5_RQC_STATE_RST, _RDY, _ERR) */
void mlx5_cmd_build_modify_rq_state (void *in, guint32 rqn, guint from, guint to);
void mlx5_cmd_build_modify_rq_rdy (void *in, guint32 rqn);
void mlx5_cmd_build_create_tis (void *in, guint32 transport_domain);
void mlx5_cmd_build_create_sq (void *in, const Mlx5Sq *sq, guint32 cqn, guint32 pdn, guint32 tisn,
    guint32 uar_page, const Mlx5HwQueueMem *mem, guint page_shift, guint ts_format,
    gboolean allow_multi_pkt_send_wqe, guint min_wqe_inline_mode);
/* MODIFY_SQ from state `from` to `to` (MLX5_SQC_STATE_RST, _RDY, _ERR) */
void mlx5_cmd_build_modify_sq_state (void *in, guint32 sqn, guint from, guint to);
void mlx5_cmd_build_modify_sq_rdy (void *in, guint32 sqn);
/* MODIFY_SQ RDY -> RDY that sets the packet pacing rate (the index mlx5dv_pp_alloc gave
 * for a rate; 0: no limit) */
void mlx5_cmd_build_modify_sq_rate (void *in, guint32 sqn, guint rate_limit_index);
/* the packet pacing context of a rate, for mlx5dv_pp_alloc: rate_limit in kb/s (rate_bps
 * rounded up to whole kb/s), typical_packet_size when the device takes one (0: none) */
void mlx5_cmd_build_pp_context (void *ctx, guint64 rate_bps, guint typical_packet_size);
void mlx5_cmd_build_create_tir_direct (void *in, guint32 rqn, guint32 transport_domain);

/* entries of the RQT for n RQs: the next power of two >= n (mlx5_rss_rqt_size) */
guint mlx5_hw_rqt_size (guint n_rqns);
/* bytes of a CREATE_RQT input mailbox with `size` entries */
gsize mlx5_cmd_create_rqt_in_bytes (guint size);
/* fills mlx5_hw_rqt_size (n_rqns) entries, the RQs repeated round robin */
void mlx5_cmd_build_create_rqt (void *in, const guint32 *rqns, guint n_rqns);

/* the Toeplitz key is mlx5-rss.h's, shared with the emulated device */
#define MLX5_HW_TOEPLITZ_KEY_LEN MLX5_RSS_KEY_LEN
/* An RSS TIR (Toeplitz over the RQT rqtn) hashing IPv4 source and destination address and,
 * for l4_proto 17 (UDP) or 6 (TCP), the source and destination port; l4_proto 0: the
 * addresses alone (other IPv4 packets), as mlx5-rss.h has it. */
void mlx5_cmd_build_create_tir_rss (void *in, guint32 rqtn, guint32 transport_domain,
    const guint8 key[MLX5_HW_TOEPLITZ_KEY_LEN], guint8 l4_proto);

/* ---- output side ---- */

guint mlx5_cmd_out_status (const void *out);
guint32 mlx5_cmd_out_syndrome (const void *out);
/* the PRM's name of a command status ("bad parameter"), or "unknown status" */
const char *mlx5_cmd_status_str (guint status);
/* "CREATE_RQ failed: Remote I/O error; firmware status 0x3 (bad parameter), syndrome
 * 0x43d98f" — `err` is the errno of the call; out may be NULL (nothing came back) */
char *mlx5_cmd_failure_text (const char *command, int err, const void *out);

/* the out_of_buffer counter of a QUERY_Q_COUNTER output mailbox */
guint32 mlx5_hw_q_counter_out_of_buffer (const void *out);
/* fills the general capabilities from a QUERY_HCA_CAP output mailbox */
void mlx5_hw_caps_parse_general (Mlx5HwCaps *caps, const void *out);
/* fills the Ethernet offload capabilities from a QUERY_HCA_CAP output mailbox */
void mlx5_hw_caps_parse_eth (Mlx5HwCaps *caps, const void *out);
/* fills the QoS capabilities (packet pacing) from a QUERY_HCA_CAP output mailbox */
void mlx5_hw_caps_parse_qos (Mlx5HwCaps *caps, const void *out);
/* reads min_wqe_inline_mode, mtu and the permanent MAC of a QUERY_NIC_VPORT_CONTEXT
 * output mailbox */
void mlx5_hw_vport_parse (const void *out, guint *min_wqe_inline_mode, guint *mtu, guint8 mac[6]);

/* ---- bring-up requirements: what daqiri needs of a device before it uses it ---- */

/* The stride geometry daqiri's RX rings take values from (the engine keys stride= and
 * strides=): log2 stride bytes 6..13, log2 strides per WQE 3..16. */
#define MLX5_HW_NEED_MIN_LOG_STRIDE_SIZE 6
#define MLX5_HW_NEED_MAX_LOG_STRIDE_SIZE 13
#define MLX5_HW_NEED_MIN_LOG_STRIDES 3
#define MLX5_HW_NEED_MAX_LOG_STRIDES 16
/* the smallest rings daqiri makes: an RX ring of 4 WQEs (MLX5_RX_MIN_LOG_WQES), a TX
 * ring of 4 slots (MLX5_TX_MIN_SLOTS), CQs as large */
#define MLX5_HW_NEED_LOG_WQ_SZ 2

/* Checks, before any object is created, every capability the control path and the rings
 * rely on whatever the configuration: an Ethernet port (port_type), the Ethernet offload
 * capabilities (eth_net_offloads: checksum offload, inline mode and multi-packet send
 * are read from them), striding RQs (striding_rq, and rdma-core's striding RQ caps for
 * raw packet queues) with stride sizes and counts that meet daqiri's ranges, and WQ, QP
 * and CQ sizes of at least the smallest rings. Capabilities that only some uses need
 * are checked where they are used: checksum offload (csum_cap) by a TX queue with
 * tx-csum=on, the RQT size (log_max_rqt_size) by RSS, the timestamp formats and the
 * clock by mlx5_hw_clock_choose, inline mode by SQ creation.
 * FALSE with DQ_ERROR_DEVICE naming the first capability that falls short: "HCA
 * capability striding_rq is 0; daqiri needs 1 (...)". */
gboolean mlx5_hw_caps_check (const Mlx5HwCaps *hw, const struct mlx5dv_context *dv, GError **error);

/* Where the port's time comes from. */
typedef enum {
  /* CQE timestamps are raw ticks of the free-running counter, converted with
   * mlx5dv_get_clock_info's parameters; port time likewise */
  MLX5_HW_CLOCK_FREE_RUNNING,
  /* queues stamp the real-time format (seconds << 32 | ns); port time is the PTP
   * hardware clock */
  MLX5_HW_CLOCK_REAL_TIME,
  /* no NIC time: the clock conversion cannot be read. Packets carry timestamp 0
   * without DQ_PACKET_FLAG_TS_HW (daqirisrc then stamps arrival on the pipeline clock)
   * and port time is CLOCK_MONOTONIC */
  MLX5_HW_CLOCK_NONE,
} Mlx5HwClock;

/* Picks the port clock: real time where rdma-core reports real-time timestamps
 * (real_time_ts, MLX5DV_CONTEXT_FLAGS_REAL_TIME_TS), the PTP hardware clock can be read
 * and both queue kinds can stamp it (rq_ts_format, sq_ts_format); else free-running,
 * which needs queues that can stamp it and the clock conversion (clock_info_errno 0:
 * mlx5dv_get_clock_info succeeded). Without the conversion: MLX5_HW_CLOCK_NONE when
 * need_hw_ts is FALSE (*warning says what is lost; g_free it), else an error, as when
 * the queues can stamp nothing daqiri can read. FALSE with DQ_ERROR_DEVICE naming the
 * capability or call and its value. */
gboolean mlx5_hw_clock_choose (const Mlx5HwCaps *hw, gboolean real_time_ts, gboolean phc_readable,
    int clock_info_errno, gboolean need_hw_ts, Mlx5HwClock *clock, char **warning, GError **error);

/* RSS over n_rqs RQs needs an RQT of mlx5_hw_rqt_size (n_rqs) entries: FALSE with
 * DQ_ERROR_FLOW when that is over 2^log_max_rqt_size */
gboolean mlx5_hw_rqt_check (guint n_rqs, guint log_max_rqt_size, GError **error);

/* What was detected, one "name value" per capability daqiri reads, for the debug log
 * at open ("striding_rq 1, ext_stride_num_range 1, ...") */
char *mlx5_hw_caps_describe (const Mlx5HwCaps *hw, const struct mlx5dv_context *dv);

/* ---- decisions taken from the capabilities ---- */

/* The limits the host side sizes its rings by: strides from mlx5dv_query_device (none
 * without striding RQ support for raw packet queues; fewer than 2^9 strides only with
 * ext_stride_num_range), WQ and CQ sizes from the HCA caps; an SQ (a DevX WQ) within
 * both log_max_wq_sz and log_max_qp_sz; TX checksum offload from csum_cap; compressed
 * completions where cqe_compression and both mini-CQE formats daqiri reads
 * (mini_cqe_resp_flow_tag, mini_cqe_resp_stride_index) are there, in the enhanced layout
 * too with enhanced_cqe_compression. */
void mlx5_hw_caps_fill (
    Mlx5Caps *caps, const Mlx5HwCaps *hw, const struct mlx5dv_context *dv, gboolean real_time);
/* the minimum inline mode (MLX5_INLINE_MODE_*) send WQEs of this port need: from the
 * Ethernet caps, or the vport context when they defer to it (L2 when that could not be
 * read) */
guint mlx5_hw_tx_inline_mode (const Mlx5HwCaps *hw, gboolean vport_ok);
/* whether SQs may carry multi-packet (eMPW) WQEs */
gboolean mlx5_hw_tx_allow_mpw (const Mlx5HwCaps *hw);
/* Mlx5Sq.bf_size for a UAR page: 0 on a non-cached page (8-byte doorbells only), else half
 * of the BlueFlame register (two buffers written alternately) */
guint mlx5_hw_bf_size (gboolean non_cached, guint log_bf_reg_size);
/* the netdev MTU of a vport MTU (which counts the Ethernet header, a VLAN tag and the
 * FCS); 1500 when the vport gave none */
guint mlx5_hw_vport_mtu_to_netdev (guint vport_mtu);
/* Where a queue's doorbell record goes: in the ring's umem when it follows the ring
 * within a page (one registration; *dbr_offset its offset, *umem_bytes what to
 * register), else in a umem of its own (FALSE; *umem_bytes the ring alone). */
gboolean mlx5_hw_dbr_in_ring_umem (guintptr ring, gsize ring_bytes, guintptr dbrec, gsize page,
    gsize *umem_bytes, guint64 *dbr_offset);

/* ---- queue geometry against device limits (messages name the value and the limit) ---- */

gboolean mlx5_hw_cq_check (const Mlx5Cq *cq, const Mlx5Caps *caps, GError **error);
gboolean mlx5_hw_rq_check (const Mlx5Rq *rq, const Mlx5Caps *caps, GError **error);
gboolean mlx5_hw_sq_check (const Mlx5Sq *sq, const Mlx5Caps *caps, GError **error);

/* ---- steering ---- */

#define MLX5_HW_MATCH_BYTES 64    /* fte_match_param.outer_headers */
#define MLX5_HW_MAX_TAG 0xffffffu /* CQEs carry 24 bits of flow tag */
/* destinations besides an RQ index: spread over the group's RQs (the plan's entries
 * never name it for a group of several RQs: they name the RSS TIR of their traffic) */
#define MLX5_HW_FLOW_DEST_RSS G_MAXUINT
#define MLX5_HW_FLOW_DEST_RSS_UDP (G_MAXUINT - 1) /* by IPv4 addresses and UDP ports */
#define MLX5_HW_FLOW_DEST_RSS_TCP (G_MAXUINT - 2) /* by IPv4 addresses and TCP ports */
#define MLX5_HW_FLOW_DEST_RSS_IP (G_MAXUINT - 3)  /* by IPv4 addresses (other packets) */
#define MLX5_HW_FLOW_DESTS_RSS 4                  /* the four above */
/* priorities of raw steering rules in the NIC RX root table: 0..15 (the kernel's
 * MLX5_BY_PASS_NUM_REGULAR_PRIOS) */
#define MLX5_HW_ROOT_PRIORITIES 16
/* a rule set is planned within one bank (half the priorities), so that the next one can be
 * installed in the other before the old is removed */
#define MLX5_HW_BANK_PRIORITIES (MLX5_HW_ROOT_PRIORITIES / 2)

/* The rules of one group of RQs (the queues of one element), in the order groups were
 * first set. */
typedef struct {
  guint n_rqs;
  const DqFlowRule *rules;
  guint n_rules;
} Mlx5HwFlowGroup;

/* One hardware rule: outer-header mask and value (the fte_match_set_lyr_2_4 layout,
 * what mlx5dv_dr matchers take as a 64-byte fte_match_param), the matcher priority
 * (lower matches first), the tag (0: none) and the destination: an RQ index of its group
 * or MLX5_HW_FLOW_DEST_RSS (spread over all of the group's RQs). */
typedef struct {
  guint8 mask[MLX5_HW_MATCH_BYTES];
  guint8 value[MLX5_HW_MATCH_BYTES];
  guint8 criteria; /* match_criteria_enable: MLX5_MATCH_OUTER_HEADERS or 0 */
  guint16 priority;
  guint32 tag;
  guint dest;
  guint group; /* index into the groups */
  guint rule;  /* index of the group's DqFlowRule, G_MAXUINT for the
                                   * catch-all of a group without rules */
} Mlx5HwFlowEntry;

/* Turns the flow rules of every group into hardware rules.
 *
 * A rule becomes one entry, or several when the NIC cannot express it in one: ports
 * without a protocol match UDP or TCP (two entries), a VLAN id matches an 802.1Q or an
 * 802.1ad first tag (two entries). A group without rules gets one catch-all entry to RSS,
 * after every group's rules. Entries an earlier one always takes first (same match or
 * a narrower one) are left out.
 *
 * In a group of several RQs an entry spread by RSS goes to the TIR that hashes its
 * traffic (one TIR hashes one kind): IPv4/UDP to MLX5_HW_FLOW_DEST_RSS_UDP, IPv4/TCP to
 * _RSS_TCP, the rest to _RSS_IP; an entry that does not fix the protocol becomes three,
 * UDP and TCP before the rest.
 *
 * Priorities keep the contract "first rule in text order, first group in set order":
 * an entry is placed one priority after every earlier entry it overlaps (some packet
 * matches both) and acts differently on; entries that cannot meet share a priority, so
 * any number of disjoint rules (one per UDP port, say) fit in one. More than
 * n_priorities levels: DQ_ERROR_FLOW naming the rule.
 *
 * Returns a GArray of Mlx5HwFlowEntry in install order, or NULL with DQ_ERROR_FLOW
 * naming the group's rule (a queue the group does not have, a mark wider than 24 bits,
 * too many overlapping rules). */
GArray *mlx5_hw_flow_plan (
    const Mlx5HwFlowGroup *groups, guint n_groups, guint n_priorities, GError **error);

/* ---- timestamps ---- */

/* A real-time CQE timestamp (ts_format REAL_TIME) is seconds << 32 | nanoseconds; this
 * returns ns since the clock's epoch. */
static inline guint64
mlx5_hw_rt_ts_to_ns (guint64 ts)
{
  return (ts >> 32) * G_GUINT64_CONSTANT (1000000000) + (ts & 0xffffffffu);
}

G_END_DECLS

#endif /* DAQIRI_MLX5_HW_CMD_H */
