/* A ConnectX played by the ring tests themselves (test-rx, test-tx): a control path
 * (mini_port_ops) whose device objects are the host's own memory, deliberately minimal
 * and independent of mlx5/emu. Creating a CQ, RQ or SQ only records where the host put
 * it, so that the test can read the WQEs and doorbell records the host writes and
 * write CQEs by hand, byte for byte as the PRM lays them out (mini_port_cqe_next, then
 * mini_port_cqe_publish). Memory registration hands out the lkey given to
 * mini_port_init; rq_recover and sq_recover count and succeed (the test then plays the device's
 * counters from 0); SQs get the number MINI_PORT_SQN and a BlueFlame register in
 * MiniPort.bf (two buffers of MINI_PORT_BF_SIZE bytes); clock_info reports
 * MiniPort.clock, the identity (ns = ticks) unless the test changes it.
 *
 * mini_rxq_new and mini_txq_new create host rings of a given geometry on any control
 * path (this one or mlx5/emu's) and fail the test when the ring code refuses.
 */
#ifndef DAQIRI_TEST_MLX5_MINI_PORT_H
#define DAQIRI_TEST_MLX5_MINI_PORT_H

#include "mlx5-dma.h"
#include "rx.h"
#include "tx.h"

G_BEGIN_DECLS

#define MINI_PORT_SQN 0x123456u
#define MINI_PORT_BF_SIZE 256

typedef struct {
  guint32 lkey;        /* what mr_reg hands out */
  Mlx5ClockInfo clock; /* what clock_info reports */
  Mlx5Cq *cq;          /* the last CQ created, NULL once destroyed */
  Mlx5Rq *rq;          /* likewise the RQ */
  Mlx5Sq *sq;          /* likewise the SQ */
  gboolean mr_registered;
  guint8 *mr_addr; /* the memory registered last */
  gsize mr_size;
  guint32 cq_pi;           /* CQEs written */
  guint rq_recoveries;     /* rq_recover calls (each ERR -> RST -> RDY) */
  guint sq_recoveries;     /* likewise sq_recover */
  guint32 rq_dbr_at_reset; /* the RQ doorbell record when rq_recover was called */
  guint8 bf[2 * MINI_PORT_BF_SIZE] __attribute__ ((aligned (64)));
} MiniPort;

extern const Mlx5PortOps mini_port_ops;
/* the device's limits: strides of 64 .. 8192 bytes, 8 .. 65536 per WQE, up to 2^16
 * WQEs, 2^22 CQEs and 2^15 WQEBBs; a 1 GHz clock */
extern const Mlx5Caps mini_port_caps;

void mini_port_init (MiniPort *p, guint32 lkey);

/* the next CQE of the CQ, zeroed but for its owner byte; the host must have consumed
 * the CQE it overwrites */
volatile struct mlx5_cqe64 *mini_port_cqe_next (MiniPort *p);
/* hands the CQE to the host: opcode and owner bit written last, after a barrier */
void mini_port_cqe_publish (MiniPort *p, volatile struct mlx5_cqe64 *cqe, guint8 opcode);

/* an RX ring of 2^log_wqes WQEs of 2^log_strides strides of 2^log_stride bytes, with a
 * CQE for every stride */
Mlx5Rxq *mini_rxq_new (const Mlx5PortOps *ops, gpointer dev, const Mlx5Caps *caps, guint log_stride,
    guint log_strides, guint log_wqes);
/* a TX ring of `ring` bytes for frames of up to max_packet bytes (signal_every 0: the
 * default completion interval) */
Mlx5Txq *mini_txq_new (const Mlx5PortOps *ops, gpointer dev, const Mlx5Caps *caps, gsize ring,
    guint max_packet, guint signal_every, gboolean csum);

G_END_DECLS

#endif
