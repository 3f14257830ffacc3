/* reorder-cpu.c — the CPU twin: reorder state machine, payload conversion, gather, packetize.
 *
 * This is the oracle of the GPU path: it states the semantics of daqiri-reorder.h as a plain
 * sequential program. The kernels in reorder.cu must produce the same bytes and counters. */
#include <stdlib.h>
#include <string.h>

#include "reorder-priv.h"
#include "dq-packet.h"

/* ---- payload conversion ------------------------------------------------------------------ */

static void
put_u16 (uint8_t *p, uint16_t v)
{
  memcpy (p, &v, 2);
}

/* Write the converted payload: src holds cfg->payload_size readable bytes. */
static void
convert_payload (const DqReorderConfig *cfg, int converts, uint8_t *dst, const uint8_t *src)
{
  if (!converts) {
    memcpy (dst, src, cfg->payload_size);
    return;
  }
  uint32_t in = cfg->input_type, out = cfg->output_type;
  uint32_t net = cfg->byte_order == DQ_BYTE_ORDER_NETWORK;
  uint32_t count = dq_elem_count (in, cfg->payload_size);

  for (uint32_t e = 0; e < count; e++) {
    int32_t v = dq_decode_elem (src, e, in, net);
    switch (out) {
      case DQ_ELEM_FP16: put_u16 (dst + 2 * (size_t) e, dq_float_to_half_rn ((float) v)); break;
      case DQ_ELEM_BF16: put_u16 (dst + 2 * (size_t) e, dq_float_to_bf16_rn ((float) v)); break;
      case DQ_ELEM_FP32: {
        float f = (float) v;
        memcpy (dst + 4 * (size_t) e, &f, 4);
        break;
      }
      case DQ_ELEM_FP64: {
        double d = (double) v;
        memcpy (dst + 8 * (size_t) e, &d, 8);
        break;
      }
      case DQ_ELEM_INT32: memcpy (dst + 4 * (size_t) e, &v, 4); break;
      default: break;
    }
  }
}

/* ---- reorder state ----------------------------------------------------------------------- */

typedef struct {
  int64_t id;     /* the batch id this record holds */
  uint8_t *frame; /* NULL: none */
  void *user;
  uint32_t filled, dups;
  uint64_t first_ts;
  uint8_t *claimed; /* one bit per slot */
} CpuRec;

struct _DqReorderCpu {
  DqReorderConfig cfg;
  uint32_t W, ppb, lout, need, key_bits;
  uint32_t w_mask, ppb_mask, ppb_shift; /* for powers of two (masks 0 otherwise) */
  int converts;

  int initialized;
  int64_t B; /* window base */
  int64_t H; /* unwrap head: the largest unwrapped key seen */
  CpuRec rec[DQ_REORDER_MAX_WINDOW];

  DqReorderFrame *fifo; /* free frames */
  size_t fifo_cap, fifo_head, fifo_len;

  DqReorderStats stats;

  DqReorderBatch *out; /* this call's emitted batches */
  uint32_t n_out, cap_out;
  DqReorderFrame *rel; /* this call's released frames */
  uint32_t n_rel, cap_rel;

  uint8_t *cls; /* per packet of the burst */
  uint32_t *key, *seq;
  uint32_t cap_pkts;
  int oom;
};

static CpuRec *
rec_of (DqReorderCpu *c, int64_t id)
{
  return &c->rec[c->w_mask ? (uint64_t) id & c->w_mask : (uint64_t) id % c->W];
}

DqReorderCpu *
dq_reorder_cpu_new (const DqReorderConfig *cfg, char *msg, size_t msg_len)
{
  if (dq_reorder_config_validate (cfg, msg, msg_len) != 0)
    return NULL;
  DqReorderCpu *c = calloc (1, sizeof *c);
  if (!c)
    return NULL;
  c->cfg = *cfg;
  c->W = dq_reorder_window (cfg);
  c->ppb = cfg->packets_per_batch;
  c->lout = dq_reorder_output_payload_size (cfg);
  c->need = dq_reorder_min_packet_length (cfg);
  c->key_bits = cfg->batch_bit_width ? cfg->batch_bit_width : cfg->seq_bit_width;
  c->converts = dq_reorder_converts (cfg);
  if ((c->W & (c->W - 1)) == 0 && c->W > 1)
    c->w_mask = c->W - 1;
  if ((c->ppb & (c->ppb - 1)) == 0 && c->ppb > 1) {
    c->ppb_mask = c->ppb - 1;
    while ((1u << c->ppb_shift) < c->ppb)
      c->ppb_shift++;
  }
  size_t bm = (c->ppb + 7) / 8;
  for (uint32_t r = 0; r < c->W; r++) {
    c->rec[r].claimed = calloc (1, bm);
    if (!c->rec[r].claimed) {
      dq_reorder_cpu_free (c);
      if (msg && msg_len)
        dq_set_msg (msg, msg_len, "out of memory for %u slot bitmaps", c->W);
      return NULL;
    }
  }
  return c;
}

void
dq_reorder_cpu_free (DqReorderCpu *c)
{
  if (!c)
    return;
  for (uint32_t r = 0; r < DQ_REORDER_MAX_WINDOW; r++)
    free (c->rec[r].claimed);
  free (c->fifo);
  free (c->out);
  free (c->rel);
  free (c->cls);
  free (c->key);
  free (c->seq);
  free (c);
}

static int
grow (void **p, uint32_t *cap, uint32_t want, size_t elem)
{
  if (want <= *cap)
    return 0;
  uint32_t n = *cap ? *cap : 16;
  while (n < want)
    n *= 2;
  void *q = realloc (*p, (size_t) n * elem);
  if (!q)
    return -1;
  *p = q;
  *cap = n;
  return 0;
}

int
dq_reorder_cpu_add_frame (DqReorderCpu *c, void *frame, void *user)
{
  if (!frame)
    return -1;
  if (c->fifo_len == c->fifo_cap) {
    size_t n = c->fifo_cap ? c->fifo_cap * 2 : 16;
    DqReorderFrame *q = malloc (n * sizeof *q);
    if (!q)
      return -1;
    for (size_t i = 0; i < c->fifo_len; i++)
      q[i] = c->fifo[(c->fifo_head + i) % c->fifo_cap];
    free (c->fifo);
    c->fifo = q;
    c->fifo_cap = n;
    c->fifo_head = 0;
  }
  c->fifo[(c->fifo_head + c->fifo_len) % c->fifo_cap] = (DqReorderFrame){ frame, user };
  c->fifo_len++;
  return 0;
}

static int
pop_frame (DqReorderCpu *c, DqReorderFrame *f)
{
  if (!c->fifo_len)
    return 0;
  *f = c->fifo[c->fifo_head];
  c->fifo_head = (c->fifo_head + 1) % c->fifo_cap;
  c->fifo_len--;
  return 1;
}

/* Every record in the window that has neither a frame nor packets takes a free frame, in
 * batch-id order. Run after each move of the window and at the end of every call. */
static void
fill_frames (DqReorderCpu *c)
{
  for (uint32_t i = 0; i < c->W; i++) {
    CpuRec *r = rec_of (c, c->B + i);
    DqReorderFrame f;
    if (!r->frame && r->filled == 0 && pop_frame (c, &f)) {
      r->frame = f.data;
      r->user = f.user;
    }
  }
}

static void
rec_reset (DqReorderCpu *c, CpuRec *r, int64_t id)
{
  r->id = id;
  r->filled = r->dups = 0;
  r->first_ts = 0;
  memset (r->claimed, 0, (c->ppb + 7) / 8);
}

static void
emit (DqReorderCpu *c, CpuRec *r, uint32_t cause)
{
  if (grow ((void **) &c->out, &c->cap_out, c->n_out + 1, sizeof *c->out) != 0) {
    c->oom = 1;
    return;
  }
  DqReorderBatch *b = &c->out[c->n_out++];
  memset (b, 0, sizeof *b);
  b->batch_id = (uint64_t) r->id;
  b->frame = r->frame;
  b->frame_user = r->frame ? r->user : NULL;
  b->first_timestamp = r->first_ts;
  b->packets = r->filled;
  b->missing = c->ppb - r->filled;
  b->duplicates = r->dups;
  b->flags = cause;
  if (r->filled == c->ppb)
    b->flags |= DQ_BATCH_COMPLETE;
  if (!r->frame)
    b->flags |= DQ_BATCH_NO_FRAME;
  if (r->frame && b->missing) {
    for (uint32_t s = 0; s < c->ppb; s++)
      if (!(r->claimed[s >> 3] & (1u << (s & 7))))
        memset (r->frame + (size_t) s * c->lout, 0, c->lout);
  }
  c->stats.batches++;
  if (b->missing)
    c->stats.partial++;
  else
    c->stats.complete++;
  if (!r->frame)
    c->stats.no_frame++;
  c->stats.missing_slots += b->missing;
  r->frame = NULL;
  r->user = NULL;
}

/* Move the window base to newB (> B): emit the batches leaving it that hold packets (cause),
 * count the others as skipped, rebind their records to the ids entering it. */
static void
advance (DqReorderCpu *c, int64_t newB, uint32_t cause)
{
  int64_t end = newB < c->B + (int64_t) c->W ? newB : c->B + (int64_t) c->W;
  for (int64_t y = c->B; y < end; y++) {
    CpuRec *r = rec_of (c, y);
    if (r->filled)
      emit (c, r, cause);
    else
      c->stats.skipped++;
    /* the id in [newB, newB + W) with the same record */
    int64_t k = (newB - y + (int64_t) c->W - 1) / (int64_t) c->W;
    rec_reset (c, r, y + k * (int64_t) c->W);
  }
  if (newB - c->B > (int64_t) c->W)
    c->stats.skipped += (uint64_t) (newB - c->B - (int64_t) c->W);
  c->B = newB;
  fill_frames (c);
}

static void
complete_batches (DqReorderCpu *c)
{
  while (rec_of (c, c->B)->filled == c->ppb)
    advance (c, c->B + 1, 0);
}

static void
place (DqReorderCpu *c, int64_t x, uint32_t slot, const uint8_t *pkt, uint64_t ts)
{
  CpuRec *r = rec_of (c, x);
  uint8_t bit = (uint8_t) (1u << (slot & 7));
  if (r->filled == 0)
    r->first_ts = ts;
  if (r->claimed[slot >> 3] & bit) {
    r->dups++;
    c->stats.duplicates++;
    return;
  }
  r->claimed[slot >> 3] |= bit;
  r->filled++;
  c->stats.accepted++;
  if (r->frame)
    convert_payload (
        &c->cfg, c->converts, r->frame + (size_t) slot * c->lout, pkt + c->cfg.payload_offset);
}

/* Batch id and slot of an unwrapped key; 0 if before the stream's start (late). */
static int
locate (const DqReorderCpu *c, int64_t K, uint32_t seq, int64_t *x, uint32_t *slot)
{
  if (K < 0)
    return 0;
  if (c->cfg.batch_bit_width) {
    *x = K;
    *slot = c->ppb_mask ? seq & c->ppb_mask : seq % c->ppb;
  } else if (c->ppb_mask || c->ppb == 1) {
    *x = K >> c->ppb_shift;
    *slot = (uint32_t) ((uint64_t) K & c->ppb_mask);
  } else {
    *x = K / c->ppb;
    *slot = (uint32_t) (K % c->ppb);
  }
  return 1;
}

static void
begin_call (DqReorderCpu *c)
{
  c->n_out = 0;
  c->n_rel = 0;
  c->oom = 0;
}

static void
add_released (DqReorderCpu *c, void *data, void *user)
{
  if (grow ((void **) &c->rel, &c->cap_rel, c->n_rel + 1, sizeof *c->rel) != 0) {
    c->oom = 1;
    return;
  }
  c->rel[c->n_rel++] = (DqReorderFrame){ data, user };
}

static void
end_call (DqReorderCpu *c, uint32_t late, uint32_t shorts, DqJobKind kind, DqReorderCompletion *out)
{
  c->stats.late += late;
  c->stats.short_packets += shorts;
  c->stats.pending_late += late;
  c->stats.pending_short += shorts;
  if (c->n_out) {
    uint32_t l = c->stats.pending_late > UINT32_MAX ? UINT32_MAX : (uint32_t) c->stats.pending_late;
    uint32_t s =
        c->stats.pending_short > UINT32_MAX ? UINT32_MAX : (uint32_t) c->stats.pending_short;
    c->out[0].late = l;
    c->out[0].short_packets = s;
    c->stats.pending_late -= l;
    c->stats.pending_short -= s;
  }
  if (!out)
    return;
  memset (out, 0, sizeof *out);
  out->kind = kind;
  out->n_batches = c->n_out;
  out->batches = c->out;
  out->n_released = c->n_rel;
  out->released = c->rel;
  out->job_short = shorts;
  out->stats = c->stats;
  out->window.initialized = (uint32_t) c->initialized;
  if (c->initialized) {
    out->window.base = (uint64_t) c->B;
    for (uint32_t i = 0; i < c->W; i++) {
      CpuRec *r = rec_of (c, c->B + i);
      if (r->filled) {
        if (!out->window.open) {
          out->window.oldest_id = (uint64_t) r->id;
          out->window.oldest_first_timestamp = r->first_ts;
        }
        out->window.open++;
      }
    }
  }
}

/* Start the window at batch x0: records for [x0, x0 + W), frames in id order. */
static void
start_window (DqReorderCpu *c, int64_t x0)
{
  c->initialized = 1;
  c->B = x0;
  for (uint32_t i = 0; i < c->W; i++)
    rec_reset (c, rec_of (c, x0 + i), x0 + i);
  fill_frames (c);
}

int
dq_reorder_cpu_push (DqReorderCpu *c, const void *data, size_t data_size,
    const DqReorderPacket *pkts, uint32_t n, DqReorderCompletion *out)
{
  const uint8_t *base = data;
  uint32_t late = 0, shorts = 0;

  begin_call (c);
  if (n && (!pkts || (!data && data_size)))
    return -1;
  if (n > c->cap_pkts) {
    uint8_t *cls = realloc (c->cls, n);
    if (cls)
      c->cls = cls;
    uint32_t *key = realloc (c->key, (size_t) n * sizeof (uint32_t));
    if (key)
      c->key = key;
    uint32_t *seq = realloc (c->seq, (size_t) n * sizeof (uint32_t));
    if (seq)
      c->seq = seq;
    if (!cls || !key || !seq)
      return -1;
    c->cap_pkts = n;
  }
  c->stats.packets += n;
  if (c->initialized)
    fill_frames (c); /* frames added since the last call */

  /* pass 1, one look at each packet: bounds (the descriptor inside the burst, the packet long
   * enough for every field read), fields, and placing those inside the window as it stood at
   * the start of the burst. The first packet ever seen starts the window: then every valid
   * packet of that burst goes to pass 2. */
  int fresh = 0, any = 0;
  int64_t H0 = c->H, maxK = c->H;
  const uint32_t hdr = c->cfg.seq_bit_offset / 8;
  for (uint32_t i = 0; i < n; i++) {
    const DqReorderPacket *p = &pkts[i];
    /* the header and payload of a packet a few ahead: the two lines this loop waits for */
    if (i + 8 < n && pkts[i + 8].offset < data_size) {
      __builtin_prefetch (base + pkts[i + 8].offset + hdr);
      __builtin_prefetch (base + pkts[i + 8].offset + c->cfg.payload_offset);
    }
    if ((uint64_t) p->offset + p->length > data_size || p->length < c->need) {
      c->cls[i] = DQ_PKT_SHORT;
      shorts++;
      continue;
    }
    const uint8_t *pkt = base + p->offset;
    uint32_t seq = dq_bits_get_raw (pkt, c->cfg.seq_bit_offset, c->cfg.seq_bit_width);
    uint32_t key = c->cfg.batch_bit_width
        ? dq_bits_get_raw (pkt, c->cfg.batch_bit_offset, c->cfg.batch_bit_width)
        : seq;
    c->seq[i] = seq;
    c->key[i] = key;
    if (!c->initialized) {
      int64_t x0;
      uint32_t s0;
      H0 = maxK = key;
      locate (c, H0, seq, &x0, &s0);
      start_window (c, x0);
      fresh = 1;
    }
    any = 1;
    int64_t K = dq_unwrap (key, H0, c->key_bits), x;
    uint32_t slot;
    if (K > maxK)
      maxK = K;
    /* a packet of a window not yet started, or beyond the window: pass 2 */
    c->cls[i] = DQ_PKT_DEFERRED;
    if (fresh)
      continue;
    if (!locate (c, K, seq, &x, &slot) || x < c->B) {
      c->cls[i] = DQ_PKT_LATE;
      late++;
    } else if (x < c->B + (int64_t) c->W) {
      c->cls[i] = DQ_PKT_PLACED;
      place (c, x, slot, pkt, p->timestamp);
    }
  }

  if (any) {
    /* pass 2: packets beyond it, in arrival order, moving it */
    for (uint32_t i = 0; i < n; i++) {
      if (c->cls[i] != DQ_PKT_DEFERRED)
        continue;
      int64_t K = dq_unwrap (c->key[i], H0, c->key_bits), x;
      uint32_t slot;
      if (!locate (c, K, c->seq[i], &x, &slot) || x < c->B) {
        late++;
        continue;
      }
      if (x >= c->B + (int64_t) c->W)
        advance (c, x - (int64_t) c->W + 1, DQ_BATCH_PUSHED);
      place (c, x, slot, base + pkts[i].offset, pkts[i].timestamp);
    }
    c->H = maxK;
    complete_batches (c);
  }
  end_call (c, late, shorts, DQ_JOB_REORDER, out);
  return c->oom ? -1 : 0;
}

int
dq_reorder_cpu_flush (DqReorderCpu *c, DqFlushMode mode, DqReorderCompletion *out)
{
  begin_call (c);
  if (c->initialized && mode == DQ_FLUSH_OLDEST) {
    fill_frames (c);
    for (uint32_t i = 0; i < c->W; i++) {
      if (rec_of (c, c->B + i)->filled) {
        advance (c, c->B + i + 1, DQ_BATCH_FLUSHED);
        complete_batches (c);
        break;
      }
    }
  } else if (c->initialized && mode == DQ_FLUSH_ALL) {
    fill_frames (c);
    advance (c, c->B + (int64_t) c->W, DQ_BATCH_FLUSHED);
  } else if (mode == DQ_FLUSH_RESET) {
    /* emit what holds packets, then give back every other frame: the window's in id order,
     * then the free queue's */
    for (uint32_t i = 0; c->initialized && i < c->W; i++) {
      CpuRec *r = rec_of (c, c->B + i);
      if (r->filled)
        emit (c, r, DQ_BATCH_FLUSHED);
      else
        c->stats.skipped++;
    }
    for (uint32_t i = 0; c->initialized && i < c->W; i++) {
      CpuRec *r = rec_of (c, c->B + i);
      if (r->frame)
        add_released (c, r->frame, r->user);
      r->frame = NULL;
      r->user = NULL;
    }
    for (uint32_t i = 0; c->initialized && i < c->W; i++)
      rec_reset (c, &c->rec[i], 0);
    c->initialized = 0;
    c->B = c->H = 0;
    DqReorderFrame f;
    while (pop_frame (c, &f))
      add_released (c, f.data, f.user);
  }
  end_call (c, 0, 0, DQ_JOB_FLUSH, out);
  return c->oom ? -1 : 0;
}

/* ---- gather ------------------------------------------------------------------------------ */

uint32_t
dq_gather_cpu (const DqReorderConfig *cfg, const void *data, size_t data_size,
    const DqReorderPacket *pkts, uint32_t n, void *out)
{
  const uint8_t *base = data;
  uint32_t lout = dq_reorder_output_payload_size (cfg);
  uint32_t need = cfg->payload_offset + cfg->payload_size;
  int converts = dq_reorder_converts (cfg);
  uint32_t shorts = 0;

  for (uint32_t i = 0; i < n; i++) {
    uint8_t *dst = (uint8_t *) out + (size_t) i * lout;
    const DqReorderPacket *p = &pkts[i];
    if ((uint64_t) p->offset + p->length > data_size || p->length < need) {
      memset (dst, 0, lout);
      shorts++;
      continue;
    }
    convert_payload (cfg, converts, dst, base + p->offset + cfg->payload_offset);
  }
  return shorts;
}

/* ---- packetize --------------------------------------------------------------------------- */


uint32_t
dq_packetize_packet_length (const DqReorderConfig *cfg, const DqPacketizeTemplate *tmpl)
{
  uint32_t len = cfg->payload_offset + cfg->payload_size;
  uint32_t f = dq_reorder_min_packet_length (cfg);
  if (f > len)
    len = f;
  if (tmpl && tmpl->min_length > len)
    len = tmpl->min_length;
  return len;
}

static int
overlaps (uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
  return a0 < b1 && b0 < a1;
}

int
dq_packetize_validate (
    const DqReorderConfig *cfg, const DqPacketizeTemplate *t, char *msg, size_t len)
{
  if (dq_reorder_config_validate (cfg, msg, len) != 0)
    return -1;
  if (!t)
    return dq_set_msg (msg, len, "no packet template given");
  if (cfg->input_type != DQ_ELEM_SAME)
    return dq_set_msg (msg, len,
        "packetize sends the frame bytes as they are: set input and output "
        "type to same (input type is %u)",
        cfg->input_type);
  if (t->header_len > DQ_PACKETIZE_MAX_HEADER || (t->header_len && !t->header))
    return dq_set_msg (msg, len, "header template of %u bytes: allowed 0..%u bytes", t->header_len,
        DQ_PACKETIZE_MAX_HEADER);
  if (t->header_len > cfg->payload_offset)
    return dq_set_msg (msg, len, "header template (%u bytes) runs into the payload at offset %u",
        t->header_len, cfg->payload_offset);
  uint32_t plen = dq_packetize_packet_length (cfg, t);
  if (t->min_length > DQ_REORDER_MAX_FRAME_BYTES)
    return dq_set_msg (
        msg, len, "min-length %u exceeds %u bytes", t->min_length, DQ_REORDER_MAX_FRAME_BYTES);
  if (t->packet_stride < plen)
    return dq_set_msg (
        msg, len, "packet stride %u is smaller than the packet (%u bytes)", t->packet_stride, plen);
  uint64_t p0 = (uint64_t) cfg->payload_offset * 8, p1 = p0 + (uint64_t) cfg->payload_size * 8;
  uint64_t s0 = cfg->seq_bit_offset, s1 = s0 + cfg->seq_bit_width;
  uint64_t b0 = cfg->batch_bit_offset, b1 = b0 + cfg->batch_bit_width;
  if (overlaps (s0, s1, p0, p1))
    return dq_set_msg (msg, len, "the sequence field (bit %u) overlaps the payload (byte %u)",
        cfg->seq_bit_offset, cfg->payload_offset);
  if (cfg->batch_bit_width && overlaps (b0, b1, p0, p1))
    return dq_set_msg (msg, len, "the batch field (bit %u) overlaps the payload (byte %u)",
        cfg->batch_bit_offset, cfg->payload_offset);
  if (cfg->batch_bit_width && overlaps (b0, b1, s0, s1))
    return dq_set_msg (msg, len, "the batch field (bit %u) overlaps the sequence field (bit %u)",
        cfg->batch_bit_offset, cfg->seq_bit_offset);
  if (t->ipv4_offset != DQ_PACKETIZE_NONE) {
    if ((uint64_t) t->ipv4_offset + 20 > t->header_len)
      return dq_set_msg (msg, len, "IPv4 header at %u does not fit the %u-byte template",
          t->ipv4_offset, t->header_len);
    uint32_t ihl = (t->header[t->ipv4_offset] & 0xfu) * 4u;
    if (ihl < 20 || (uint64_t) t->ipv4_offset + ihl > t->header_len)
      return dq_set_msg (msg, len, "IPv4 header length %u at offset %u does not fit the template",
          ihl, t->ipv4_offset);
    uint64_t i0 = (uint64_t) t->ipv4_offset * 8, i1 = i0 + (uint64_t) ihl * 8;
    if (overlaps (s0, s1, i0, i1) || (cfg->batch_bit_width && overlaps (b0, b1, i0, i1)))
      return dq_set_msg (
          msg, len, "a sequence or batch field lies in the IPv4 header at %u", t->ipv4_offset);
  }
  if (t->udp_offset != DQ_PACKETIZE_NONE) {
    if ((uint64_t) t->udp_offset + 8 > t->header_len)
      return dq_set_msg (msg, len, "UDP header at %u does not fit the %u-byte template",
          t->udp_offset, t->header_len);
    uint64_t u0 = (uint64_t) t->udp_offset * 8, u1 = u0 + 64;
    if (overlaps (s0, s1, u0, u1) || (cfg->batch_bit_width && overlaps (b0, b1, u0, u1)))
      return dq_set_msg (
          msg, len, "a sequence or batch field lies in the UDP header at %u", t->udp_offset);
  }
  return 0;
}

int
dq_packetize_cpu (const DqReorderConfig *cfg, const DqPacketizeTemplate *t, const void *frame,
    uint64_t batch_id, void *out, size_t out_size, DqReorderPacket *pkts)
{
  return dq_packetize_cpu_range (
      cfg, t, frame, batch_id, 0, cfg->packets_per_batch, out, out_size, pkts);
}

/* Packet s's bytes other than the payload, in p (zeroed before): the template, the sequence
 * and batch fields, the IPv4 total length and checksum and the UDP length of a packet of
 * plen bytes */
static void
packetize_fields (const DqReorderConfig *cfg, const DqPacketizeTemplate *t, uint64_t batch_id,
    uint32_t s, uint32_t plen, uint8_t *p)
{
  uint32_t seq_mask = cfg->seq_bit_width == 32 ? 0xffffffffu : (1u << cfg->seq_bit_width) - 1;
  uint32_t batch_mask = cfg->batch_bit_width == 32 ? 0xffffffffu : (1u << cfg->batch_bit_width) - 1;
  if (t->header_len)
    memcpy (p, t->header, t->header_len);
  uint32_t seq = (uint32_t) ((batch_id * cfg->packets_per_batch + s) & seq_mask);
  dq_bits_set (p, cfg->seq_bit_offset, cfg->seq_bit_width, seq);
  if (cfg->batch_bit_width)
    dq_bits_set (
        p, cfg->batch_bit_offset, cfg->batch_bit_width, (uint32_t) (batch_id & batch_mask));
  if (t->ipv4_offset != DQ_PACKETIZE_NONE) {
    uint8_t *ip = p + t->ipv4_offset;
    dq_packet_put16 (ip + 2, (uint16_t) (plen - t->ipv4_offset));
    dq_packet_fill_ipv4_csum (ip);
  }
  if (t->udp_offset != DQ_PACKETIZE_NONE) {
    uint8_t *udp = p + t->udp_offset;
    dq_packet_put16 (udp + 4, (uint16_t) (plen - t->udp_offset));
    dq_packet_put16 (udp + 6, 0);
  }
}

int
dq_packetize_split_ok (const DqReorderConfig *cfg, const DqPacketizeTemplate *t)
{
  uint64_t p0 = (uint64_t) cfg->payload_offset * 8;
  return dq_packetize_validate (cfg, t, NULL, 0) == 0 &&
      dq_packetize_packet_length (cfg, t) == cfg->payload_offset + cfg->payload_size &&
      (uint64_t) cfg->seq_bit_offset + cfg->seq_bit_width <= p0 &&
      (cfg->batch_bit_width == 0 || (uint64_t) cfg->batch_bit_offset + cfg->batch_bit_width <= p0);
}

int
dq_packetize_headers_cpu (const DqReorderConfig *cfg, const DqPacketizeTemplate *t,
    uint64_t batch_id, uint32_t first, uint32_t n, void *out, size_t out_size,
    uint32_t header_stride)
{
  if (!dq_packetize_split_ok (cfg, t))
    return -1;
  uint32_t ppb = cfg->packets_per_batch, hlen = cfg->payload_offset;
  uint32_t plen = dq_packetize_packet_length (cfg, t);
  if (n == 0 || first >= ppb || n > ppb - first || header_stride < hlen ||
      (uint64_t) (n - 1) * header_stride + hlen > out_size)
    return -1;
  for (uint32_t j = 0; j < n; j++) {
    uint8_t *p = (uint8_t *) out + (size_t) j * header_stride;
    memset (p, 0, hlen);
    packetize_fields (cfg, t, batch_id, first + j, plen, p);
  }
  return 0;
}

int
dq_packetize_cpu_range (const DqReorderConfig *cfg, const DqPacketizeTemplate *t, const void *frame,
    uint64_t batch_id, uint32_t first, uint32_t n, void *out, size_t out_size,
    DqReorderPacket *pkts)
{
  if (dq_packetize_validate (cfg, t, NULL, 0) != 0)
    return -1;
  uint32_t ppb = cfg->packets_per_batch;
  uint32_t plen = dq_packetize_packet_length (cfg, t);
  if (n == 0 || first >= ppb || n > ppb - first ||
      (uint64_t) (n - 1) * t->packet_stride + plen > out_size)
    return -1;
  for (uint32_t j = 0; j < n; j++) {
    uint32_t s = first + j;
    uint8_t *p = (uint8_t *) out + (size_t) j * t->packet_stride;
    memset (p, 0, plen);
    memcpy (p + cfg->payload_offset, (const uint8_t *) frame + (size_t) s * cfg->payload_size,
        cfg->payload_size);
    packetize_fields (cfg, t, batch_id, s, plen, p);
    if (pkts)
      pkts[j] = (DqReorderPacket){ (uint32_t) ((size_t) j * t->packet_stride), plen, 0, 0, 0 };
  }
  return 0;
}

/* ---- 10-bit 4:2:2 pgroups -> planar I422_10LE (daqiri-reorder.h) ---- */

static void
put_le16 (uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t) v;
  p[1] = (uint8_t) (v >> 8);
}

int
dq_unpack_uyvp_to_i422_10 (const uint8_t *src, uint32_t width, uint32_t height, uint8_t *y,
    size_t y_pitch, uint8_t *u, size_t u_pitch, uint8_t *v, size_t v_pitch)
{
  if (dq_unpack_uyvp_validate (width, height, y_pitch, u_pitch, v_pitch, NULL, 0) != 0)
    return -1;
  if (width == 0 || height == 0)
    return 0;
  if (!src || !y || !u || !v)
    return -1;
  const uint32_t pgroups = width / 2;
  const size_t row = (size_t) pgroups * 5;
  for (uint32_t r = 0; r < height; r++) {
    const uint8_t *s = src + (size_t) r * row;
    uint8_t *yr = y + (size_t) r * y_pitch;
    uint8_t *ur = u + (size_t) r * u_pitch;
    uint8_t *vr = v + (size_t) r * v_pitch;
    for (uint32_t x = 0; x < pgroups; x++) {
      uint32_t c[4];
      dq_uyvp_pgroup (s + (size_t) x * 5, c);
      put_le16 (ur + 2 * (size_t) x, c[0]);
      put_le16 (yr + 4 * (size_t) x, c[1]);
      put_le16 (vr + 2 * (size_t) x, c[2]);
      put_le16 (yr + 4 * (size_t) x + 2, c[3]);
    }
  }
  return 0;
}
