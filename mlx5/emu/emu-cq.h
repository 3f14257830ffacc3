/* The emulated device's side of a completion queue, shared by its receive (emu-rx.c) and
 * send (emu.c) queues: room by the host's consumer index, CQEs made field by field in the
 * PRM layout and handed over owner byte last. Internal to mlx5/emu. */
#ifndef DAQIRI_MLX5_EMU_CQ_H
#define DAQIRI_MLX5_EMU_CQ_H

#include "emu-private.h"
#include "mlx5-dma.h"

G_BEGIN_DECLS

static inline gboolean
cq_has_room (EmuCq *cq, guint n)
{
  guint32 ci = be32toh (__atomic_load_n (&cq->dbrec[0], __ATOMIC_ACQUIRE)) & 0xffffff;
  guint32 used = (cq->pi - ci) & 0xffffff;
  return used + cq->staged + n <= (1u << cq->log_size);
}

/* Sets the `size`-byte big-endian field at byte `offset` of the CQE (to the value's low
 * bytes, as a store of that size would). */
static inline void
cqe_set (EmuCqe *c, guint offset, guint size, guint64 value)
{
  if (size < 8)
    value &= (G_GUINT64_CONSTANT (1) << (8 * size)) - 1;
  c->w[offset / 8] |= value << (8 * (8 - offset % 8 - size));
}

/* a field of the CQE layout (struct mlx5_cqe64), or of the error CQE (mlx5_err_cqe) */
#define CQE_SET(c, field, value) \
  cqe_set ((c), G_STRUCT_OFFSET (struct mlx5_cqe64, field), \
      sizeof (((struct mlx5_cqe64 *) NULL)->field), (value))
#define ERR_CQE_SET(c, field, value) \
  cqe_set ((c), G_STRUCT_OFFSET (struct mlx5_err_cqe, field), \
      sizeof (((struct mlx5_err_cqe *) NULL)->field), (value))

/* Writes the CQE into the next slot of the CQ and passes it to the host: bytes 0 .. 55
 * in seven 8-byte stores, then, after a barrier, the last word in one 8-byte store with
 * op_own (the opcode, and the owner bit: the wrap parity of the producer index). Until
 * then the slot's old op_own keeps the host away from it. */
static inline void
cq_post (EmuCq *cq, EmuCqe *c, guint8 opcode)
{
  guint32 mask = (1u << cq->log_size) - 1;
  volatile guint64 *dst = (volatile guint64 *) (cq->ring + ((gsize) (cq->pi & mask) << 6));
#pragma GCC unroll 7
  for (guint i = 0; i < 7; i++)
    dst[i] = htobe64 (c->w[i]);
  CQE_SET (c, op_own, (guint8) (opcode << 4) | ((cq->pi >> cq->log_size) & MLX5_CQE_OWNER_MASK));
  /* everything else before ownership passes to the host */
  mlx5_dma_wmb ();
  dst[7] = htobe64 (c->w[7]);
  cq->pi++;
}

/* An error CQE: syndrome and vendor syndrome, the failing WQE's opcode and QPN, and
 * wqe_counter; the error layout shares wqe_id and byte_cnt with a good CQE. */
static inline EmuCqe
cqe_error (guint8 syndrome, guint8 wqe_opcode, guint32 qpn, guint16 wqe_id, guint16 wqe_counter,
    guint32 byte_cnt)
{
  EmuCqe c = { { 0 } };
  CQE_SET (&c, wqe_id, wqe_id);
  CQE_SET (&c, byte_cnt, byte_cnt);
  ERR_CQE_SET (&c, syndrome, syndrome);
  ERR_CQE_SET (&c, s_wqe_opcode_qpn, ((guint32) wqe_opcode << 24) | (qpn & 0xffffff));
  ERR_CQE_SET (&c, wqe_counter, wqe_counter);
  return c;
}

static inline void
cq_error (EmuCq *cq, guint8 opcode, guint8 syndrome, guint8 wqe_opcode, guint32 qpn, guint16 wqe_id,
    guint16 wqe_counter, guint32 byte_cnt)
{
  EmuCqe c = cqe_error (syndrome, wqe_opcode, qpn, wqe_id, wqe_counter, byte_cnt);
  cq_post (cq, &c, opcode);
}

G_END_DECLS

#endif /* DAQIRI_MLX5_EMU_CQ_H */
