/* The emulated ConnectX's compressed completions (a CQ created with compression,
 * Mlx5Cq.comp; layouts and mini-CQE format in mlx5-dma.h).
 *
 * Which completions the device folds: consecutive packet CQEs of one RQ and one WQE
 * whose fields are equal except those a FTAG_STRIDX mini-CQE carries (byte count, flow
 * tag, stride index) and the timestamp, which the title's stands for; at most
 * EMU_CQE_COMP_MAX to a session. Fillers, error and flush CQEs and the send queues' CQEs
 * are never folded: they end the session and are written in full. A session also ends
 * with the device pass that made it (emu_cq_zip_flush, as a ConnectX's compression
 * timer ends one when completions stop coming), so a host sees every completion of a
 * pass once the pass is done.
 *
 * Basic layout: the session's completions are held until it ends; then its mini-CQE
 * arrays are written (array 0 in the slot after the title's, array k > 0 in slot title +
 * 8k, unused entries 0) and last the title: the first completion's CQE with byte_cnt =
 * the session's count and format MLX5_COMPRESSED. A session of one completion is that
 * completion's CQE. The session's other slots are not written.
 *
 * Enhanced layout: the first completion is written in full at once (the title); the
 * completions after it gather in a compressed CQE, written when it holds 7 (or the
 * session ends): mini-CQEs in bytes 0..55, 56..61 zero, byte 62 the validity iteration
 * count, op_own the count minus one, format MLX5_COMPRESSED and the owner bit. Every
 * CQE of the CQ gets byte 62 (cq_write). The slots after a compressed CQE's, one for each
 * mini-CQE after its first, are not written.
 *
 * The mini-CQE's byte count is the CQE's byte_cnt cut to 24 bits: the packet's length,
 * and in bits 23..16 the low bits of its stride count, which a host derives from the
 * length instead (the full count does not fit). */
#include "emu-cq.h"

#include <string.h>

/* Whether a packet's CQE may join the session whose title is `t`: every field but
 * byte_cnt (bytes 44..47), the timestamp (48..55), the flow tag (57..59) and wqe_counter
 * (60..61) equal. */
static gboolean
zip_matches (const EmuCqe *t, const EmuCqe *c)
{
  for (guint i = 0; i < 5; i++)
    if (t->w[i] != c->w[i])
      return FALSE;
  return (t->w[5] >> 32) == (c->w[5] >> 32) && (t->w[7] >> 56) == (c->w[7] >> 56);
}

/* The FTAG_STRIDX mini-CQE of a packet's CQE, as a big-endian word's value: flow tag
 * bits 15..0, stride index, flow tag bits 23..16, byte_cnt bits 23..0. */
static guint64
zip_mini (const EmuCqe *c)
{
  guint64 tag = (c->w[7] >> 32) & MLX5_FLOW_TAG_BITS;
  guint64 stride = (c->w[7] >> 16) & 0xffff;
  guint64 byte_cnt = c->w[5] & 0xffffff;
  return (tag & 0xffff) << 48 | stride << 32 | (tag >> 16) << 24 | byte_cnt;
}

static volatile guint64 *
zip_slot (EmuCq *cq, guint32 idx)
{
  guint32 mask = (1u << cq->log_size) - 1;
  return (volatile guint64 *) (cq->ring + ((gsize) (idx & mask) << 6));
}

/* Basic layout: the held session of n >= 2 completions at the producer index t: the
 * mini-CQE arrays, then the title (cq_write orders them before its last word). */
static void
zip_write_basic_session (EmuCq *cq)
{
  EmuCqZip *z = &cq->zip;
  guint32 t = cq->pi;
  for (guint a = 0; a * MLX5_MINI_CQE_ARRAY_SIZE < z->n; a++) {
    volatile guint64 *dst = zip_slot (cq, t + (a == 0 ? 1 : a * MLX5_MINI_CQE_ARRAY_SIZE));
    for (guint j = 0; j < MLX5_MINI_CQE_ARRAY_SIZE; j++) {
      guint i = a * MLX5_MINI_CQE_ARRAY_SIZE + j;
      dst[j] = htobe64 (i < z->n ? z->mini[i] : 0);
    }
  }
  EmuCqe title = z->title;
  title.w[5] = (title.w[5] & ~G_GUINT64_CONSTANT (0xffffffff)) | z->n;
  cq_write (cq, t, &title, (guint8) (MLX5_CQE_RESP_SEND << 4 | MLX5_COMPRESSED << 2));
}

/* Enhanced layout: the pending mini-CQEs as one compressed CQE at the producer index. */
static void
zip_write_compressed_cqe (EmuCq *cq)
{
  EmuCqZip *z = &cq->zip;
  EmuCqe c = { { 0 } };
  guint first = z->n - z->pending;
  for (guint i = 0; i < z->pending; i++)
    c.w[i] = z->mini[first + i];
  cq_write (cq, cq->pi, &c, (guint8) ((z->pending - 1) << 4 | MLX5_COMPRESSED << 2));
  cq->pi += z->pending;
  cq->held -= z->pending;
  z->pending = 0;
}

void
emu_cq_zip_flush (EmuCq *cq)
{
  EmuCqZip *z = &cq->zip;
  if (!z->open)
    return;
  if (cq->comp == MLX5_CQ_COMP_ENHANCED) {
    if (z->pending > 0)
      zip_write_compressed_cqe (cq);
  } else if (z->n == 1) {
    cq_write (cq, cq->pi, &z->title, (guint8) (MLX5_CQE_RESP_SEND << 4));
    cq->pi++;
    cq->held--;
  } else {
    zip_write_basic_session (cq);
    cq->pi += z->n;
    cq->held -= z->n;
  }
  z->open = FALSE;
  z->n = 0;
}

void
emu_cq_post_packet (EmuCq *cq, const EmuCqe *c, guint32 rqn)
{
  EmuCqZip *z = &cq->zip;
  if (cq->comp == MLX5_CQ_COMP_NONE) {
    EmuCqe copy = *c;
    cq_post (cq, &copy, MLX5_CQE_RESP_SEND);
    return;
  }
  if (cq->comp == MLX5_CQ_COMP_ENHANCED) {
    if (z->open && z->rqn == rqn && z->n + 1 < EMU_CQE_COMP_MAX && zip_matches (&z->title, c)) {
      z->mini[z->n++] = zip_mini (c);
      z->pending++;
      cq->held++;
      if (z->pending == MLX5_ENH_MINI_CQES)
        zip_write_compressed_cqe (cq);
      return;
    }
    emu_cq_zip_flush (cq);
    /* the title: written at once, in full */
    cq_write (cq, cq->pi, c, (guint8) (MLX5_CQE_RESP_SEND << 4));
    cq->pi++;
    z->open = TRUE;
    z->title = *c;
    z->rqn = rqn;
    z->n = 0;
    z->pending = 0;
    return;
  }
  if (z->open && z->rqn == rqn && z->n < EMU_CQE_COMP_MAX && zip_matches (&z->title, c)) {
    z->mini[z->n++] = zip_mini (c);
    cq->held++;
    return;
  }
  emu_cq_zip_flush (cq);
  z->open = TRUE;
  z->title = *c;
  z->rqn = rqn;
  z->mini[0] = zip_mini (c);
  z->n = 1;
  cq->held++;
}
