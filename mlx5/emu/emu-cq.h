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
  return used + cq->staged + cq->held + n <= (1u << cq->log_size);
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

/* Writes CQE `c` into the slot of CQ index `idx` and passes it to the host: bytes
 * 0 .. 55 in seven 8-byte stores, then, after a barrier, the last word in one 8-byte
 * store with op_own (`op_own_hi`: the opcode, or a compressed CQE's count, and the
 * format; and the owner bit: the wrap parity of idx) and, in the enhanced compression
 * layout, byte 62 the validity iteration count (idx's lap over the ring, mod 256). Until
 * then the slot's old op_own and byte 62 keep the host away from it. */
static inline void
cq_write (EmuCq *cq, guint32 idx, const EmuCqe *c, guint8 op_own_hi)
{
  guint32 mask = (1u << cq->log_size) - 1;
  volatile guint64 *dst = (volatile guint64 *) (cq->ring + ((gsize) (idx & mask) << 6));
#pragma GCC unroll 7
  for (guint i = 0; i < 7; i++)
    dst[i] = htobe64 (c->w[i]);
  guint64 last = (c->w[7] & ~G_GUINT64_CONSTANT (0xffff)) | op_own_hi |
      ((idx >> cq->log_size) & MLX5_CQE_OWNER_MASK);
  if (cq->comp == MLX5_CQ_COMP_ENHANCED)
    last |= (guint64) ((idx >> cq->log_size) & 0xff) << 8;
  /* everything else before ownership passes to the host */
  mlx5_dma_wmb ();
  dst[7] = htobe64 (last);
}

/* Writes the CQE into the next slot of the CQ (cq_write); a compressed CQ's open session
 * is written out first, so that completions stay in order. */
static inline void
cq_post (EmuCq *cq, EmuCqe *c, guint8 opcode)
{
  if (G_UNLIKELY (cq->comp != MLX5_CQ_COMP_NONE))
    emu_cq_zip_flush (cq);
  cq_write (cq, cq->pi, c, (guint8) (opcode << 4));
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
