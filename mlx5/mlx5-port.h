/* The mlx5 engine's seam between the host-side ring code (identical on a real ConnectX and
 * on the emulated one) and the control path (who creates the rings, where doorbells go,
 * where the clock is read).
 *
 * The host side allocates every ring in its own memory — CQ buffers, RQ and SQ WQE rings,
 * doorbell records, packet buffers — with the PRM layouts (rdma-core's mlx5dv.h structs)
 * and then asks the control path, through Mlx5PortOps, to turn that memory into device
 * objects: on hardware DevX umem registration + CREATE_CQ/CREATE_RQ/CREATE_SQ/CREATE_TIR,
 * a memory region for the packet buffers, and mlx5dv_dr steering rules; on the emulator,
 * handing the same pointers to the emulated device. After creation the datapath never
 * calls the control path again except for doorbells through the pointers it got back
 * (RQ/CQ doorbell records in host memory, the SQ doorbell record plus the UAR/BlueFlame
 * register) — and the datapath never asks which kind of device it drives.
 *
 * No GStreamer here; plain C on GLib and rdma-core's headers.
 */
#ifndef DAQIRI_MLX5_PORT_H
#define DAQIRI_MLX5_PORT_H

#include <glib.h>
#include <stdint.h>

#include "daqiri-engine.h"

G_BEGIN_DECLS

typedef struct _Mlx5Port Mlx5Port;

/* Whether and how a CQ compresses completions (mlx5-dma.h): not at all, or in the basic
 * or the enhanced layout, with mini-CQEs of format FTAG_STRIDX. */
typedef enum {
  MLX5_CQ_COMP_NONE,
  MLX5_CQ_COMP_BASIC,
  MLX5_CQ_COMP_ENHANCED,
} Mlx5CqComp;

/* A completion queue: 2^log_size 64-byte CQEs. */
typedef struct {
  guint8 *ring;            /* 64-byte aligned, 2^log_size * 64 bytes, set to 0xff
                                 * (opcode INVALID, owner 1) before creation */
  volatile guint32 *dbrec; /* [0] = consumer index (be32, 24 bits) */
  guint log_size;
  Mlx5CqComp comp; /* RQ CQs only; the device must support it (Mlx5Caps.cqe_comp_*) */
  guint32 cqn;     /* set by cq_create */
  gpointer priv;   /* control path's handle */
} Mlx5Cq;

/* A striding (multi-packet) receive queue: 2^log_wqes WQEs of 32 bytes (next segment +
 * one data segment), each pointing at a region of 2^log_strides strides of
 * 2^log_stride_size bytes inside the packet buffer. */
typedef struct {
  guint8 *wqes;            /* 2^log_wqes * 32 bytes */
  volatile guint32 *dbrec; /* [MLX5_RCV_DBR] = producer counter (be32, 16 bits) */
  guint log_wqes;
  guint log_strides;     /* strides per WQE, log2 */
  guint log_stride_size; /* bytes per stride, log2 */
  guint8 *buf;           /* packet buffer: 2^log_wqes regions */
  gsize buf_size;
  guint32 lkey; /* of the packet buffer, set by mr_reg */
  Mlx5Cq *cq;
  guint32 rqn; /* set by rq_create */
  gpointer priv;
  /* header-data split when split_header != 0: a cyclic RQ instead, whose WQE i has two
   * data segments, split_header bytes at hdr_buf + i * hdr_stride (host memory, hdr_lkey)
   * and split_payload bytes at buf + i * split_payload (log_strides and log_stride_size
   * unused); the device writes the first split_header bytes of a packet into the first,
   * the rest into the second, and one CQE per packet (byte_cnt its length, wqe_counter
   * its WQE's counter) */
  guint split_header, split_payload, hdr_stride;
  guint8 *hdr_buf;
  guint32 hdr_lkey;
} Mlx5Rq;

/* A send queue of 2^log_wqebbs 64-byte WQE basic blocks. */
typedef struct {
  guint8 *wqes;            /* 2^log_wqebbs * 64 bytes */
  volatile guint32 *dbrec; /* [MLX5_SND_DBR] = producer counter (be32, 16 bits) */
  guint log_wqebbs;
  Mlx5Cq *cq;
  guint32 sqn;              /* set by sq_create: the QPN/SQN in ctrl segments */
  volatile guint64 *bf_reg; /* set by sq_create: the UAR/BlueFlame doorbell register */
  guint bf_size;            /* bytes of one BlueFlame buffer (the offset toggles) */
  gpointer priv;
} Mlx5Sq;

/* Conversion of raw CQE timestamps to ns, as mlx5dv_clock_info / mlx5dv_ts_to_ns define. */
typedef struct {
  guint64 nsec;
  guint64 last_cycles;
  guint64 frac;
  guint32 mult;
  guint32 shift;
  guint64 mask;
} Mlx5ClockInfo;

typedef struct {
  /* strides: limits the device accepts (log2) */
  guint min_log_stride_size, max_log_stride_size;
  guint min_log_strides, max_log_strides;
  guint max_log_wqes;
  guint max_log_cq_size;
  guint max_log_wqebbs;  /* SQ size limit, log2 of 64-byte WQEBBs (log_max_qp_sz) */
  gboolean real_time_ts; /* CQE timestamps are in the real-time format (seconds in
                                 * the high 32 bits, ns in the low 32), not raw ticks */
  guint64 device_frequency_khz;
  gboolean no_hw_ts;              /* CQE timestamps cannot be turned into time (no clock
                                 * conversion): packets carry timestamp 0 and no
                                 * DQ_PACKET_FLAG_TS_HW */
  gboolean tx_csum;               /* send WQEs can ask for L3/L4 checksums */
  gboolean wait_on_time;          /* WAIT WQEs on time (send scheduling; needs real_time_ts too) */
  guint64 pp_min_bps, pp_max_bps; /* packet pacing: the rates an SQ takes (0: none) */
  gboolean tx_empw;               /* enhanced multi-packet send WQEs allowed on its SQs */
  guint tx_inline_bytes;          /* bytes of each frame a send WQE must carry inline (0, or
                          * MLX5_ETH_L2_INLINE_SIZE for a port of minimum inline mode L2) */
  /* compressed RQ completions with FTAG_STRIDX mini-CQEs (cqe_compression,
   * mini_cqe_resp_flow_tag, mini_cqe_resp_stride_index), and in the enhanced layout too
   * (enhanced_cqe_compression) */
  gboolean cqe_comp_basic, cqe_comp_enhanced;
} Mlx5Caps;

/* Counters the device keeps per RQ (on hardware: a queue counter set). */
typedef struct {
  guint64 out_of_buffer; /* packets dropped: no posted WQE had room */
} Mlx5RqCounters;

typedef struct {
  const char *name; /* "mlx5" or "emu" */

  /* opens the device by the name after the engine prefix; fills info and caps */
  gpointer (*open) (const char *name, DqPortInfo *info, Mlx5Caps *caps, GError **error);
  void (*close) (gpointer dev);

  /* registers host memory the device reads or writes packets in; returns its lkey */
  gboolean (*mr_reg) (
      gpointer dev, void *addr, gsize size, guint32 *lkey, gpointer *handle, GError **error);
  void (*mr_dereg) (gpointer dev, gpointer handle);
  /* registers device memory reached through a dma-buf (GPU memory: GPUDirect RDMA) at
   * virtual address iova, `offset` bytes into the dma-buf `fd`; NULL: not possible on this
   * device. The handle goes to mr_dereg. */
  gboolean (*mr_reg_dmabuf) (gpointer dev, int fd, guint64 offset, gsize size, void *iova,
      guint32 *lkey, gpointer *handle, GError **error);
  /* registers device memory at [addr, addr + size) that the CPU cannot address, which the
   * device reaches only by DMA copies (the emulated ConnectX): memory->write(dst, src, n,
   * user) for what it writes (received packets), memory->read for what it reads (sent
   * payloads); NULL: not this device. The handle goes to mr_dereg. */
  gboolean (*mr_reg_device) (gpointer dev, void *addr, gsize size, const DqRingMemory *memory,
      guint32 *lkey, gpointer *handle, GError **error);

  gboolean (*cq_create) (gpointer dev, Mlx5Cq *cq, GError **error);
  void (*cq_destroy) (gpointer dev, Mlx5Cq *cq);
  /* creates the RQ and moves it to ready; the host posts WQEs by writing them and the
   * doorbell record */
  gboolean (*rq_create) (gpointer dev, Mlx5Rq *rq, GError **error);
  void (*rq_destroy) (gpointer dev, Mlx5Rq *rq);
  /* an RQ the device put in ERR (an error CQE; every WQE flushed) back to RDY: ERR -> RST
   * -> RDY; its WQE counter starts again at 0 (the host has set the doorbell record to 0) */
  gboolean (*rq_recover) (gpointer dev, Mlx5Rq *rq, GError **error);
  gboolean (*sq_create) (gpointer dev, Mlx5Sq *sq, GError **error);
  void (*sq_destroy) (gpointer dev, Mlx5Sq *sq);
  /* an SQ the device put in ERR back to RDY: ERR -> RST -> RDY; WQE indices start again
   * at 0 (the host has set the doorbell record to 0) */
  gboolean (*sq_recover) (gpointer dev, Mlx5Sq *sq, GError **error);
  /* packet pacing: the SQ sends no more than rate_bps bits of frames a second (0: no
   * limit), frames of typically `typical_size` bytes; rate within caps.pp_min_bps ..
   * pp_max_bps. NULL: not this device. */
  gboolean (*sq_set_rate) (
      gpointer dev, Mlx5Sq *sq, guint64 rate_bps, guint typical_size, GError **error);

  /* steers the port's packets to a group of RQs (the queues of one element, identified
   * by `group`): the rules (none: everything) with a tag action carrying each rule's
   * mark (24 bits); rules with a queue key go to rqs[queue], the others are spread over
   * all n_rqs RQs (RSS, Toeplitz over the IPv4 addresses and L4 ports). Replaces the
   * group's earlier rule set; n_rqs 0 removes it. A packet is taken by the first group
   * (in the order they were set) whose rules it matches; groups without rules take what
   * no rule took. */
  gboolean (*flows_set) (gpointer dev, guint32 group, Mlx5Rq **rqs, guint n_rqs,
      const DqFlowRule *rules, guint n_rules, GError **error);

  /* the kernel network interface in front of the device (its ifindex), on which multicast
   * groups the rules name are joined so that the NIC takes their frames; 0: none. NULL:
   * the device takes every frame on its cable (the emulated ConnectX). */
  int (*netdev_ifindex) (gpointer dev);

  /* the device's counters of one RQ */
  void (*rq_counters) (gpointer dev, Mlx5Rq *rq, Mlx5RqCounters *counters);

  /* the port clock now, ns (the domain of the converted CQE timestamps); and the
   * parameters that turn raw CQE timestamps into ns (unused with caps.real_time_ts) */
  guint64 (*clock_now) (gpointer dev);
  void (*clock_info) (gpointer dev, Mlx5ClockInfo *info);
} Mlx5PortOps;

G_END_DECLS

#endif /* DAQIRI_MLX5_PORT_H */
