/* Memory ordering between the host and a device that reads and writes host memory by
 * DMA, and the small helpers both sides of the mlx5 rings share (CQE ownership, clock
 * conversion). Used by the host ring code (rx.c, tx.c) and by the emulated device.
 *
 * The barriers follow rdma-core's util/udma_barrier.h in meaning (the code is ours):
 *   mlx5_dma_wmb   host stores (WQEs) are visible to the device before a later store
 *                  (the doorbell record) is
 *   mlx5_dma_rmb   a load that saw a device-written flag (a CQE's owner bit) is ordered
 *                  before the loads of what the flag guards (the rest of the CQE, packet
 *                  data)
 *   mlx5_dma_mb    every earlier load and store before every later store (reads of CQEs
 *                  done before the consumer index that lets the device overwrite them)
 *   mlx5_wc_flush  write-combined stores (BlueFlame) leave the CPU before the next one
 * On x86 (TSO) the first three only have to stop the compiler; the WC flush is sfence.
 * The emulated device is another CPU thread, so the same barriers order its view too.
 */
#ifndef DAQIRI_MLX5_DMA_H
#define DAQIRI_MLX5_DMA_H

#include <glib.h>
#include <endian.h>
#include <stdint.h>

#include <infiniband/mlx5dv.h>

#include "mlx5-port.h"

G_BEGIN_DECLS

#if defined(__x86_64__) || defined(__i386__)
#define mlx5_dma_wmb() __asm__ __volatile__("" ::: "memory")
#define mlx5_dma_rmb() __asm__ __volatile__("" ::: "memory")
#define mlx5_dma_mb() __asm__ __volatile__("" ::: "memory")
#define mlx5_wc_flush() __asm__ __volatile__("sfence" ::: "memory")
#define mlx5_cpu_relax() __asm__ __volatile__("pause" ::: "memory")
#elif defined(__aarch64__)
#define mlx5_dma_wmb() __asm__ __volatile__("dmb oshst" ::: "memory")
#define mlx5_dma_rmb() __asm__ __volatile__("dmb oshld" ::: "memory")
#define mlx5_dma_mb() __asm__ __volatile__("dmb osh" ::: "memory")
#define mlx5_wc_flush() __asm__ __volatile__("dsb st" ::: "memory")
#define mlx5_cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define mlx5_dma_wmb() __atomic_thread_fence (__ATOMIC_SEQ_CST)
#define mlx5_dma_rmb() __atomic_thread_fence (__ATOMIC_SEQ_CST)
#define mlx5_dma_mb() __atomic_thread_fence (__ATOMIC_SEQ_CST)
#define mlx5_wc_flush() __atomic_thread_fence (__ATOMIC_SEQ_CST)
#define mlx5_cpu_relax() \
  do { \
  } while (0)
#endif

/* Bytes of one CQE (cqe_sz 0 in the CQ context), of an RQ WQE of a striding RQ (16-byte
 * next segment + one 16-byte data segment, log_wq_stride 5) and of an SQ WQE basic block. */
#define MLX5_CQE_SIZE 64
#define MLX5_MPRQ_WQE_SIZE 32
#define MLX5_LOG_MPRQ_WQE_SIZE 5

/* Multi-packet (striding RQ) CQE byte_cnt: bit 31 = filler (the strides were skipped,
 * no packet), bits 30..16 = strides the packet (or filler) consumed, bits 15..0 = packet
 * bytes. Linux's device.h reads them in mpwrq_is_filler_cqe () and
 * mpwrq_get_cqe_consumed_strides () (struct mpwrq_cqe_bc, mask 0x7fff). */
#define MLX5_MPRQ_FILLER_FLAG 0x80000000u
#define MLX5_MPRQ_STRIDES_SHIFT 16
#define MLX5_MPRQ_STRIDES_MASK 0x7fffu
#define MLX5_MPRQ_LEN_MASK 0xffffu

/* A striding RQ WQE covers at most 2^16 strides (single_wqe_log_num_of_strides <= 16 in
 * the extended range) and wqe_id / wqe_counter are 16 bits. */
#define MLX5_MPRQ_MAX_LOG_STRIDES 16

/* fm_ce_se completion mode (CE, bits 3..2): 0 = CQE only on error, 1 = only on the first
 * error, 2 = always (MLX5_WQE_CTRL_CQ_UPDATE), 3 = always and an event. An unsignalled
 * WQE uses 1: completion mode 0 can stall an SQ that mixes WAIT and SEND WQEs. */
#define MLX5_WQE_CTRL_CE_MASK (3u << 2)
#define MLX5_WQE_CTRL_CQ_ONLY_FIRST_ERR (1u << 2)

/* Send scheduling: a WAIT WQE (opcode WAIT, opmod WAIT_TIME in bits 31..24 of
 * opmod_idx_opcode) holds the SQ until the condition of its wait segment holds; it takes
 * one WQEBB: the control segment and a 32-byte wait segment (3 DS). For time, `value`
 * and `mask` are in the real-time format (seconds << 32 | ns) and CYCLIC_SMALLER holds
 * once the port's real-time clock, both masked, has passed `value`: with the mask of the
 * low 3 bits of the seconds and all of the ns, in a cyclic window of 8 s (a time up to
 * 4 s ahead is waited for, one up to 4 s behind has passed). */
#define MLX5_OPCODE_WAIT 0x0fu
#define MLX5_OPC_MOD_WAIT_TIME 2u
#define MLX5_WAIT_COND_CYCLIC_SMALLER 5u
#define MLX5_WAIT_TIME_MASK ((G_GUINT64_CONSTANT (8) << 32) - 1)
#define MLX5_WAIT_WINDOW_NS (G_GUINT64_CONSTANT (8000000000))

/* The wait segment (every field big-endian) */
typedef struct {
  guint32 operation;
  guint32 lkey;
  guint32 va_high;
  guint32 va_low;
  guint64 value;
  guint64 mask;
} Mlx5WaitSeg;

/* Enhanced multi-packet send WQE (eMPW): opcode ENHANCED_MPSW, the control segment, a
 * 16-byte Ethernet segment (cs_flags for every packet, no inline headers), then one data
 * segment per packet, each a whole frame: 2 + k DS, (2 + k + 3) / 4 WQEBBs, wrapping to
 * the ring's start as any WQE does. One CQE (when asked) completes all its packets. */
#define MLX5_OPCODE_ENHANCED_MPSW 0x29u

/* Inline headers: a port whose minimum inline mode is L2 takes send WQEs that carry the
 * frame's first bytes, the Ethernet header and one VLAN tag, in the Ethernet segment
 * (inline_hdr_sz; 2 bytes in its first 16, the rest in the next 16-byte unit); the data
 * segment points past them. */
#define MLX5_ETH_L2_INLINE_SIZE 18

/* qpn_ds: the low 6 bits count the WQE's 16-byte data segments (DS) */
#define MLX5_WQE_DS_MASK 0x3fu
#define MLX5_WQE_DS_SIZE 16

/* The 24-bit flow tag the steering TAG action sets, in the CQE's sop_drop_qpn */
#define MLX5_FLOW_TAG_BITS 0xffffffu

/* l4_hdr_type_etc (byte 29 of the CQE): L4 header type in bits 6..4, L3 in 3..2
 * (rdma-core's MLX5_CQE_L3_HDR_TYPE_*). The L4 type tells UDP from the three kinds of
 * TCP segment: without the ACK flag, with ACK and no payload, with ACK and payload. */
#define MLX5_CQE_L4_HDR_SHIFT 4
#define MLX5_CQE_L4_HDR_MASK 0x7
#define MLX5_CQE_L3_HDR_SHIFT 2
#define MLX5_CQE_L4_HDR_TYPE_NONE 0x0
#define MLX5_CQE_L4_HDR_TYPE_TCP_NO_ACK 0x1
#define MLX5_CQE_L4_HDR_TYPE_UDP 0x2
#define MLX5_CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA 0x3
#define MLX5_CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA 0x4

/* Compressed completions (CQ context cqe_comp_en). The device folds a run of RQ
 * completions that differ only in a few fields into one "title" CQE, holding the fields
 * they share, and 8-byte mini-CQEs, one per completion; op_own bits 3..2 (the CQE format)
 * are MLX5_COMPRESSED on a CQE that starts compressed data. Every completion still takes
 * one CQ index: the mini-CQEs fill some of their session's slots and the rest are left
 * unwritten (reserved), so compression saves PCIe writes and reads, not CQ entries.
 * Layouts (cqe_comp_layout):
 *   BASIC     the title is the compressed CQE: byte_cnt = the session's completions N
 *             (N >= 2), its other fields the shared ones, owner bit as for any CQE. The
 *             N mini-CQEs follow in arrays of MLX5_MINI_CQE_ARRAY_SIZE, one 64-byte slot
 *             each: array 0 in the slot after the title, array k > 0 in slot title + 8k;
 *             the session's N indices are title .. title + N - 1. Only the title has an
 *             owner bit: software rewrites op_own of the session's other slots once it
 *             has read them, or a stale byte would pass for a CQE a lap later.
 *   ENHANCED  the title is the last full CQE before the compressed ones (a completion of
 *             its own). Each compressed CQE holds up to MLX5_ENH_MINI_CQES mini-CQEs in
 *             bytes 0..55, their count minus one in op_own bits 7..4, and takes that many
 *             indices; several may follow one title. Validity is byte 62
 *             (validity_iteration_count; rdma-core's `signature`) = the index's lap over
 *             the ring, 8 bits, on every CQE; nothing is rewritten by software.
 * Mini-CQE format FTAG_STRIDX (mini_cqe_res_format 2), big-endian: bytes 0..1 flow tag
 * bits 15..0, 2..3 stride index (wqe_counter), 4 flow tag bits 23..16, 5..7 the low 24
 * bits of byte_cnt (bits 15..0 the packet's bytes; the stride count does not fit, so a
 * reader derives it from the length). Everything else (wqe_id, checksum bits, header
 * types, timestamp) is the title's. */
#define MLX5_CQE_FORMAT_SHIFT 2
#define MLX5_CQE_FORMAT_MASK 0x3u
#define MLX5_COMPRESSED 0x3u
#define MLX5_MINI_CQE_ARRAY_SIZE 8
#define MLX5_ENH_MINI_CQES 7
#define MLX5_CQE_COMPRESS_LAYOUT_BASIC 0
#define MLX5_CQE_COMPRESS_LAYOUT_ENHANCED 1
#define MLX5_CQE_FORMAT_FTAG_STRIDX 0x2u

/* The opcode of a CQE, and whether the CQE at consumer index `ci` of a CQ of 2^log_size
 * entries belongs to software: its owner bit equals the wrap parity of ci (the device
 * flips the owner value it writes on each pass over the ring; the ring starts filled
 * with 0xff: owner 1, opcode INVALID, so nothing is owned before the first write). */
static inline guint8
mlx5_cqe_opcode (const volatile struct mlx5_cqe64 *cqe)
{
  return cqe->op_own >> 4;
}

/* the format of a CQE, op_own bits 3..2 (MLX5_COMPRESSED: compressed data starts here) */
static inline guint8
mlx5_cqe_format (guint8 op_own)
{
  return (op_own >> MLX5_CQE_FORMAT_SHIFT) & MLX5_CQE_FORMAT_MASK;
}

static inline gboolean
mlx5_cqe_sw_owned (const volatile struct mlx5_cqe64 *cqe, guint32 ci, guint log_size)
{
  guint8 op_own = cqe->op_own;
  return (op_own >> 4) != MLX5_CQE_INVALID &&
      (op_own & MLX5_CQE_OWNER_MASK) == ((ci >> log_size) & 1);
}

/* Counts an error CQE as an RQ or SQ keeps it: a flush (WR_FLUSH_ERR) in *flushed, any
 * other error in *cqe_errors with its syndromes as the last seen. The counters are read by
 * other threads (relaxed atomics). */
static inline void
mlx5_err_cqe_count (const volatile struct mlx5_cqe64 *cqe, guint64 *flushed, guint64 *cqe_errors,
    guint8 *last_syndrome, guint8 *last_vendor_syndrome)
{
  const volatile struct mlx5_err_cqe *err = (const volatile struct mlx5_err_cqe *) cqe;
  if (err->syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR) {
    __atomic_store_n (flushed, *flushed + 1, __ATOMIC_RELAXED);
    return;
  }
  __atomic_store_n (cqe_errors, *cqe_errors + 1, __ATOMIC_RELAXED);
  __atomic_store_n (last_syndrome, err->syndrome, __ATOMIC_RELAXED);
  __atomic_store_n (last_vendor_syndrome, err->vendor_err_synd, __ATOMIC_RELAXED);
}

/* Raw free-running device ticks to ns, the arithmetic of rdma-core's mlx5dv_ts_to_ns():
 * the clock info is a snapshot (last_cycles -> nsec, plus frac in 2^-shift ns); a
 * timestamp within half the counter range after the snapshot is added, one before it
 * subtracted. Valid while |ts - last_cycles| * mult < 2^64: refresh the snapshot often
 * (every 0.5 s at most for a 1 GHz counter with mult 2^31). */
static inline guint64
mlx5_ts_to_ns (const Mlx5ClockInfo *ci, guint64 ts)
{
  guint64 delta = (ts - ci->last_cycles) & ci->mask;
  if (delta > ci->mask / 2) {
    delta = (ci->last_cycles - ts) & ci->mask;
    return ci->nsec - (((delta * ci->mult) - ci->frac) >> ci->shift);
  }
  return ci->nsec + (((delta * ci->mult) + ci->frac) >> ci->shift);
}

/* A real-time CQE timestamp: seconds in the high 32 bits, ns in the low 32. */
static inline guint64
mlx5_rt_ts_to_ns (guint64 ts)
{
  return (ts >> 32) * G_GUINT64_CONSTANT (1000000000) + (ts & 0xffffffffu);
}

/* ns to the real-time format of CQE timestamps and WAIT times */
static inline guint64
mlx5_ns_to_rt_ts (guint64 ns)
{
  return ((ns / G_GUINT64_CONSTANT (1000000000)) << 32) | (ns % G_GUINT64_CONSTANT (1000000000));
}

G_END_DECLS

#endif /* DAQIRI_MLX5_DMA_H */
