/* test-reorder-cpu.c — the CPU twin against the reference's test vectors (daqiri-facts §3.6),
 * hand-made conversion and rounding edges, window/loss/duplicate/late/short behaviour, gather and
 * packetize, randomized streams checked against their ground truth. No GPU, no GLib. (The unpack
 * of 10-bit 4:2:2 pgroups: test-unpack-cpu.c.) */
#include <float.h>
#include <math.h>

#include "dq-packet.h"
#include "dq-test-frame.h"
#include "dq-test-csum.h"
#include "dq-test-util.h"
#include "reorder-priv.h"

/* ---- helpers ---------------------------------------------------------------------------- */

#define MAX_COLLECT 4096

/* A reorder context with its pool of poisoned frames, the burst a test builds (rig_add, or
 * dqt_burst_add on r->burst) and sends (rig_send), and every batch it has emitted so far. */
typedef struct {
  DqReorderCpu *ctx;
  DqReorderConfig cfg;
  DqTestBurst burst;
  uint64_t frame_size;
  uint8_t **frames;
  uint32_t n_frames;
  DqReorderBatch got[MAX_COLLECT];
  uint32_t n_got;
  DqReorderCompletion last;
} Rig;

static void
rig_init (Rig *r, const DqReorderConfig *cfg, uint32_t n_frames)
{
  char msg[256];
  memset (r, 0, sizeof *r);
  r->cfg = *cfg;
  r->ctx = dq_reorder_cpu_new (cfg, msg, sizeof msg);
  if (!r->ctx) {
    fprintf (stderr, "[%s] dq_reorder_cpu_new: %s\n", dq_test_name, msg);
    dq_test_failures++;
    exit (1);
  }
  dqt_burst_init (&r->burst);
  r->frame_size = dq_reorder_frame_size (cfg);
  r->frames = calloc (n_frames, sizeof *r->frames);
  r->n_frames = n_frames;
  for (uint32_t i = 0; i < n_frames; i++) {
    r->frames[i] = malloc (r->frame_size);
    memset (r->frames[i], 0xa5, r->frame_size); /* poison: unwritten bytes show */
    dq_reorder_cpu_add_frame (r->ctx, r->frames[i], (void *) (uintptr_t) (i + 1));
  }
}

static void
rig_take (Rig *r, const DqReorderCompletion *c)
{
  r->last = *c;
  for (uint32_t i = 0; i < c->n_batches && r->n_got < MAX_COLLECT; i++)
    r->got[r->n_got++] = c->batches[i];
}

/* Push the rig's burst (from an exact-size copy) and start a new, empty one. */
static void
rig_send (Rig *r)
{
  DqReorderCompletion c;
  const DqTestBurst *b = &r->burst;
  uint8_t *exact = dqt_burst_exact (b);
  CHECK_EQ (dq_reorder_cpu_push (r->ctx, exact, b->size, b->pkts, b->n, &c), 0);
  free (exact);
  rig_take (r, &c);
  dqt_burst_clear (&r->burst);
}

static void
rig_flush (Rig *r, DqFlushMode mode)
{
  DqReorderCompletion c;
  CHECK_EQ (dq_reorder_cpu_flush (r->ctx, mode, &c), 0);
  rig_take (r, &c);
}

static void
rig_free (Rig *r)
{
  dq_reorder_cpu_free (r->ctx);
  dqt_burst_free (&r->burst);
  for (uint32_t i = 0; i < r->n_frames; i++)
    free (r->frames[i]);
  free (r->frames);
}

/* A config: seq = BE u32 at byte 0, payload after it. */
static DqReorderConfig
cfg_simple (uint32_t ppb, uint32_t payload, uint32_t window)
{
  DqReorderConfig c;
  dq_reorder_config_init (&c);
  c.seq_bit_offset = 0;
  c.seq_bit_width = 32;
  c.packets_per_batch = ppb;
  c.payload_offset = 4;
  c.payload_size = payload;
  c.window = window;
  return c;
}

/* Puts the sequence field at bits seq_offset.. (seq_bits wide) and the batch field at bits
 * batch_offset.. (batch_bits wide; 0: none). */
static void
set_fields (DqReorderConfig *c, uint32_t seq_offset, uint32_t seq_bits, uint32_t batch_offset,
    uint32_t batch_bits)
{
  c->seq_bit_offset = seq_offset;
  c->seq_bit_width = seq_bits;
  c->batch_bit_offset = batch_offset;
  c->batch_bit_width = batch_bits;
}

/* Packet with BE u32 seq and a payload filled with `fill` + byte index. */
static void
add_seq (DqTestBurst *b, const DqReorderConfig *cfg, uint32_t seq, uint8_t fill, uint64_t ts)
{
  uint32_t len = cfg->payload_offset + cfg->payload_size;
  uint8_t *p = dqt_burst_add (b, NULL, len, ts);
  dq_bits_set (p, cfg->seq_bit_offset, cfg->seq_bit_width, seq);
  for (uint32_t i = 0; i < cfg->payload_size; i++)
    p[cfg->payload_offset + i] = (uint8_t) (fill + i);
}

/* add_seq into the rig's burst, with the rig's config. */
static void
rig_add (Rig *r, uint32_t seq, uint8_t fill, uint64_t ts)
{
  add_seq (&r->burst, &r->cfg, seq, fill, ts);
}

/* The i-th batch the rig emitted: its id, its flags, and `packets` of its slots filled (the
 * others missing). */
static void
check_batch (const Rig *r, uint32_t i, uint64_t batch_id, uint32_t flags, uint32_t packets)
{
  const int failures = dq_test_failures;
  CHECK (i < r->n_got);
  CHECK_EQ (r->got[i].batch_id, batch_id);
  CHECK_EQ (r->got[i].flags, flags);
  CHECK_EQ (r->got[i].packets, packets);
  CHECK_EQ (r->got[i].missing, r->cfg.packets_per_batch - packets);
  if (dq_test_failures != failures)
    fprintf (stderr, "[%s] (those in emitted batch %u)\n", dq_test_name, i);
}

/* The window after the rig's last push or flush: its base and its open batches. */
static void
check_window (const Rig *r, uint64_t base, uint32_t open)
{
  CHECK_EQ (r->last.window.base, base);
  CHECK_EQ (r->last.window.open, open);
}

/* The window's open batches after the last push or flush, and the oldest one's id and first
 * timestamp (the timeout clock). */
static void
check_oldest (const Rig *r, uint32_t open, uint64_t oldest_id, uint64_t oldest_timestamp)
{
  CHECK_EQ (r->last.window.open, open);
  CHECK_EQ (r->last.window.oldest_id, oldest_id);
  CHECK_EQ (r->last.window.oldest_first_timestamp, oldest_timestamp);
}

static int
slot_is (const uint8_t *frame, uint32_t slot, uint32_t size, uint8_t fill)
{
  for (uint32_t i = 0; i < size; i++)
    if (frame[(size_t) slot * size + i] != (uint8_t) (fill + i))
      return 0;
  return 1;
}

static int
slot_is_zero (const uint8_t *frame, uint32_t slot, uint32_t size)
{
  for (uint32_t i = 0; i < size; i++)
    if (frame[(size_t) slot * size + i])
      return 0;
  return 1;
}

/* Convert one payload through a 1-packet-per-batch reorder; returns the frame (static). */
static const uint8_t *
convert_one (DqElemType in, DqElemType out, DqByteOrder order, const uint8_t *payload, uint32_t len,
    uint32_t *out_len)
{
  static uint8_t result[4096];
  DqReorderConfig cfg = cfg_simple (1, len, 0);
  cfg.input_type = in;
  cfg.output_type = out;
  cfg.byte_order = order;
  Rig r;
  rig_init (&r, &cfg, 2);
  uint8_t *p = dqt_burst_add (&r.burst, NULL, 4 + len, 1);
  memcpy (p + 4, payload, len);
  rig_send (&r);
  *out_len = dq_reorder_output_payload_size (&cfg);
  CHECK_EQ (r.n_got, 1);
  if (r.n_got == 1 && *out_len <= sizeof result) {
    CHECK_EQ (r.got[0].flags, DQ_BATCH_COMPLETE);
    memcpy (result, r.got[0].frame, *out_len);
  }
  rig_free (&r);
  return result;
}

static uint16_t
rd16 (const uint8_t *p)
{
  uint16_t v;
  memcpy (&v, p, 2);
  return v;
}

static uint32_t
rd32 (const uint8_t *p)
{
  uint32_t v;
  memcpy (&v, p, 4);
  return v;
}

static uint16_t
conv16 (DqElemType in, DqElemType out, const uint8_t *bytes, uint32_t len)
{
  uint32_t ol;
  return rd16 (convert_one (in, out, DQ_BYTE_ORDER_HOST, bytes, len, &ol));
}

static uint16_t
i32_to (DqElemType out, int32_t v)
{
  uint8_t b[4];
  memcpy (b, &v, 4);
  return conv16 (DQ_ELEM_INT32, out, b, 4);
}

/* int32 (host order) to fp32: the float's bits */
static uint32_t
i32_to_fp32 (int32_t v)
{
  uint8_t b[4];
  uint32_t ol;
  memcpy (b, &v, 4);
  return rd32 (convert_one (DQ_ELEM_INT32, DQ_ELEM_FP32, DQ_BYTE_ORDER_HOST, b, 4, &ol));
}

/* ---- the kernels' index arithmetic (reorder-priv.h) ------------------------------------- */

/* the kernels' unit-to-job quotient (dq_unit_quot) equals the division over the whole range it
 * is used for, and beyond: every divisor 2..256, every u < 2^17 */
static void
test_unit_quot (void)
{
  dq_test_name = "unit-quotient";
  uint32_t wrong = 0, first_d = 0, first_u = 0;
  for (uint32_t d = 2; d <= 256; d++) {
    const uint32_t inv = dq_unit_inv (d);
    for (uint32_t u = 0; u < (1u << 17); u++)
      if (dq_unit_quot (u, inv) != u / d && !wrong++) {
        first_d = d;
        first_u = u;
      }
  }
  CHECK_EQ (wrong, 0);
  CHECK_EQ (first_d, 0);
  CHECK_EQ (first_u, 0);
  /* the + 1 matters: without it the quotient is wrong at the first multiple of 3 */
  CHECK_EQ (dq_unit_quot (3, 0xffffffffu / 3), 0);
  CHECK_EQ (dq_unit_quot (3, dq_unit_inv (3)), 1);
  CHECK_EQ (dq_unit_quot (32767, dq_unit_inv (64)), 511);
  CHECK_EQ (dq_unit_quot (32766, dq_unit_inv (127)), 258);
}

/* ---- reference vectors (daqiri-facts §3.6) ---------------------------------------------- */

static void
test_bits_vectors (void)
{
  dq_test_name = "bits-vectors";
  const uint8_t v[4] = { 0xab, 0xcd, 0xef, 0x12 };
  CHECK_EQ (dq_bits_get (v, 4, 12), 0xbcd);
  CHECK_EQ (dq_bits_get (v, 0, 32), 0xabcdef12);
  CHECK_EQ (dq_bits_get (v, 7, 3), 7);
  CHECK_EQ (dq_bits_get (v, 0, 1), 1);
  CHECK_EQ (dq_bits_get (v, 1, 1), 0);
  CHECK_EQ (dq_bits_get (v, 31, 1), 0);
  CHECK_EQ (dq_bits_get (v, 27, 5), 0x12);
  uint8_t w[6] = { 0 };
  dq_bits_set (w, 5, 32, 0xdeadbeef);
  CHECK_EQ (dq_bits_get (w, 5, 32), 0xdeadbeef);
  CHECK_EQ (w[0], 0xdeadbeef >> 29);
  CHECK_EQ (dq_bits_get (w, 0, 5), 0);
  CHECK_EQ (dq_bits_get (w, 37, 11), 0);
  dq_bits_set (w, 3, 3, 5);
  CHECK_EQ (dq_bits_get (w, 3, 3), 5);
  CHECK_EQ (dq_bits_get (w, 5, 32) & 0x7fffffff, 0xdeadbeef & 0x7fffffff);
}

static void
test_seq_batch_vector (void)
{
  dq_test_name = "seq-batch-number-vector";
  /* seq = bits 0..9, batch = bits 10..11, ppb = 1024 / 4 = 256; frame 01 60 -> seq 5, batch 2 */
  DqReorderConfig cfg = cfg_simple (256, 4, 0);
  set_fields (&cfg, 0, 10, 10, 2);
  cfg.payload_offset = 2;
  CHECK_EQ (dq_reorder_config_validate (&cfg, NULL, 0), 0);
  CHECK_EQ (dq_reorder_window (&cfg), 2); /* half of the 4 batch ids */
  const uint8_t hdr[2] = { 0x01, 0x60 };
  CHECK_EQ (dq_bits_get (hdr, 0, 10), 5);
  CHECK_EQ (dq_bits_get (hdr, 10, 2), 2);

  Rig r;
  rig_init (&r, &cfg, 4);
  uint8_t *p = dqt_burst_add (&r.burst, NULL, 6, 77);
  p[0] = 0x01;
  p[1] = 0x60;
  memcpy (p + 2, "\x11\x22\x33\x44", 4);
  rig_send (&r);
  CHECK_EQ (r.n_got, 0);
  check_oldest (&r, 1, 2, 77);
  rig_flush (&r, DQ_FLUSH_OLDEST);
  CHECK_EQ (r.n_got, 1);
  check_batch (&r, 0, 2, DQ_BATCH_FLUSHED, 1); /* 255 missing */
  CHECK_EQ (r.got[0].first_timestamp, 77);
  const uint8_t *f = r.got[0].frame;
  CHECK (f && memcmp (f + 5 * 4, "\x11\x22\x33\x44", 4) == 0);
  CHECK (f && slot_is_zero (f, 0, 4) && slot_is_zero (f, 4, 4) && slot_is_zero (f, 6, 4) &&
      slot_is_zero (f, 255, 4));
  rig_free (&r);
}

static void
test_ppb4_vector (void)
{
  dq_test_name = "ppb4-vector";
  /* ppb 4, BE u32 seq at bytes 0..3, payload 4 bytes at 4; arrivals 6,4,7,5 -> P4|P5|P6|P7, id 1 */
  DqReorderConfig cfg = cfg_simple (4, 4, 0);
  Rig r;
  rig_init (&r, &cfg, 4);
  const uint32_t seqs[4] = { 6, 4, 7, 5 };
  for (int i = 0; i < 4; i++)
    rig_add (&r, seqs[i], (uint8_t) (0x10 * seqs[i]), 100 + i);
  rig_send (&r);
  CHECK_EQ (r.n_got, 1);
  check_batch (&r, 0, 1, DQ_BATCH_COMPLETE, 4);
  CHECK_EQ (r.got[0].duplicates, 0);
  CHECK_EQ (r.got[0].first_timestamp, 100);
  CHECK (r.got[0].frame_user == (void *) 1);
  for (uint32_t s = 0; s < 4; s++)
    CHECK (slot_is (r.got[0].frame, s, 4, (uint8_t) (0x10 * (4 + s))));
  CHECK_EQ (r.last.stats.accepted, 4);
  check_window (&r, 2, 0);
  rig_free (&r);
}

/* A payload converted to int32, and the elements that must come out of it. */
typedef struct {
  DqElemType in;
  DqByteOrder order;
  uint32_t len;
  uint8_t bytes[8];
  uint32_t n;
  int32_t want[6];
} ToInt32;

static void
check_to_int32 (const ToInt32 *c)
{
  const int failures = dq_test_failures;
  uint32_t ol;
  const uint8_t *o = convert_one (c->in, DQ_ELEM_INT32, c->order, c->bytes, c->len, &ol);
  CHECK_EQ (ol, 4 * c->n);
  for (uint32_t i = 0; i < c->n; i++)
    CHECK_EQ ((int32_t) rd32 (o + 4 * i), c->want[i]);
  if (dq_test_failures != failures)
    fprintf (stderr, "[%s] (those of %s, %u bytes, %s order, to int32)\n", dq_test_name,
        dq_elem_type_name (c->in), c->len, c->order == DQ_BYTE_ORDER_NETWORK ? "network" : "host");
}

static void
test_int_vectors (void)
{
  dq_test_name = "int-vectors";
  static const ToInt32 to_int32[] = {
    { DQ_ELEM_INT4, DQ_BYTE_ORDER_HOST, 3, { 0x7f, 0x80, 0x19 }, 6, { 7, -1, -8, 0, 1, -7 } },
    /* int4 network order: nibbles are not bytes, order changes nothing */
    { DQ_ELEM_INT4, DQ_BYTE_ORDER_NETWORK, 3, { 0x7f, 0x80, 0x19 }, 6, { 7, -1, -8, 0, 1, -7 } },
    /* int16 FF FE: network -2, host -257 */
    { DQ_ELEM_INT16, DQ_BYTE_ORDER_NETWORK, 2, { 0xff, 0xfe }, 1, { -2 } },
    { DQ_ELEM_INT16, DQ_BYTE_ORDER_HOST, 2, { 0xff, 0xfe }, 1, { -257 } },
    /* int32 network 00 00 01 00 -> 256, output length = input length */
    { DQ_ELEM_INT32, DQ_BYTE_ORDER_NETWORK, 4, { 0, 0, 1, 0 }, 1, { 256 } },
    { DQ_ELEM_INT8, DQ_BYTE_ORDER_NETWORK, 3, { 0x80, 0x7f, 0xff }, 3, { -128, 127, -1 } },
    /* odd trailing bytes are ignored: int16 of 5 bytes = 2 elements */
    { DQ_ELEM_INT16, DQ_BYTE_ORDER_HOST, 5, { 0x01, 0x00, 0xff, 0x7f, 0xee }, 2, { 1, 32767 } },
  };
  for (size_t i = 0; i < sizeof to_int32 / sizeof *to_int32; i++)
    check_to_int32 (&to_int32[i]);

  uint32_t ol;
  const uint8_t i4[2] = { 0x7f, 0x80 };
  /* int4 -> fp32 of 7F 80 = [7, -1, -8, 0]; output 2 * in_len * 4 bytes */
  const uint8_t *o = convert_one (DQ_ELEM_INT4, DQ_ELEM_FP32, DQ_BYTE_ORDER_HOST, i4, 2, &ol);
  CHECK_EQ (ol, 16);
  const float wantf[4] = { 7.0f, -1.0f, -8.0f, 0.0f };
  for (int i = 0; i < 4; i++) {
    float f;
    memcpy (&f, o + 4 * i, 4);
    CHECK (f == wantf[i]);
  }
  CHECK_EQ (rd32 (o + 12), 0); /* +0, not -0 */
  /* int32 to int32 in host order is a copy, odd trailing bytes included */
  const uint8_t six[6] = { 1, 2, 3, 4, 5, 6 };
  o = convert_one (DQ_ELEM_INT32, DQ_ELEM_INT32, DQ_BYTE_ORDER_HOST, six, 6, &ol);
  CHECK_EQ (ol, 6);
  CHECK (memcmp (o, six, 6) == 0);
  /* odd trailing bytes are ignored: int32 of 7 bytes = 1 element */
  const uint8_t seven[7] = { 0x80, 0, 0, 0, 9, 9, 9 };
  o = convert_one (DQ_ELEM_INT32, DQ_ELEM_FP64, DQ_BYTE_ORDER_NETWORK, seven, 7, &ol);
  CHECK_EQ (ol, 8);
  double d;
  memcpy (&d, o, 8);
  CHECK (d == -2147483648.0);
}

static void
test_fp_vectors (void)
{
  dq_test_name = "fp-rounding-vectors";
  uint8_t b[4];
  int16_t s16 = 2049;
  memcpy (b, &s16, 2);
  CHECK_EQ (conv16 (DQ_ELEM_INT16, DQ_ELEM_FP16, b, 2), 0x6800); /* 2048.0, ties to even */
  CHECK_EQ (i32_to (DQ_ELEM_FP16, 65520), 0x7c00);               /* +inf */
  CHECK_EQ (i32_to (DQ_ELEM_FP16, 65519), 0x7bff);
  CHECK_EQ (i32_to (DQ_ELEM_BF16, 257), 0x4380); /* 256.0 */
  CHECK_EQ (i32_to (DQ_ELEM_BF16, -127), 0xc2fe);
  CHECK_EQ (i32_to_fp32 (16777217), 0x4b800000);
  /* more edges */
  CHECK_EQ (i32_to (DQ_ELEM_FP16, 2051), 0x6802); /* tie between 2050 (odd) and 2052 */
  CHECK_EQ (i32_to (DQ_ELEM_FP16, 2050), 0x6801);
  CHECK_EQ (i32_to (DQ_ELEM_FP16, -2049), 0xe800);
  CHECK_EQ (i32_to (DQ_ELEM_FP16, 0), 0x0000); /* +0 */
  CHECK_EQ (i32_to (DQ_ELEM_BF16, 0), 0x0000);
  CHECK_EQ (i32_to (DQ_ELEM_FP16, -65520), 0xfc00); /* -inf */
  CHECK_EQ (i32_to (DQ_ELEM_FP16, 65504), 0x7bff);
  CHECK_EQ (i32_to (DQ_ELEM_FP16, 2147483647), 0x7c00);
  CHECK_EQ (i32_to (DQ_ELEM_FP16, INT32_MIN), 0xfc00);
  CHECK_EQ (i32_to (DQ_ELEM_FP16, 1), 0x3c00);
  CHECK_EQ (i32_to (DQ_ELEM_FP16, -1), 0xbc00);
  CHECK_EQ (i32_to (DQ_ELEM_BF16, 2147483647), 0x4f00);
  CHECK_EQ (i32_to (DQ_ELEM_BF16, INT32_MIN), 0xcf00);
  CHECK_EQ (i32_to (DQ_ELEM_BF16, 259), 0x4382); /* tie -> even 260 */
  CHECK_EQ (i32_to (DQ_ELEM_BF16, 258), 0x4381);
  /* double rounding through float (|v| > 2^24): 2^24 + 2^16 + 1 rounds to the float
   * 2^24 + 2^16, an exact bf16 tie that goes to even 2^24; direct rounding would give 0x4b81 */
  CHECK_EQ (i32_to (DQ_ELEM_BF16, 16842753), 0x4b80);
  CHECK_EQ (i32_to (DQ_ELEM_BF16, 16842755), 0x4b81);
  CHECK_EQ (i32_to_fp32 (2147483647), 0x4f000000);
  CHECK_EQ (i32_to_fp32 (INT32_MIN), 0xcf000000);
  CHECK_EQ (i32_to_fp32 (16777219), 0x4b800002); /* tie between ...218 (odd mantissa) and ...220 */
  const uint8_t i8[2] = { 0x80, 0x7f };
  CHECK_EQ (conv16 (DQ_ELEM_INT8, DQ_ELEM_FP16, i8, 1), 0xd800);     /* -128 */
  CHECK_EQ (conv16 (DQ_ELEM_INT8, DQ_ELEM_FP16, i8 + 1, 1), 0x57f0); /* 127 */
  CHECK_EQ (conv16 (DQ_ELEM_INT8, DQ_ELEM_BF16, i8, 1), 0xc300);
  const uint8_t i4 = 0x87; /* -8, 7 */
  uint32_t ol;
  const uint8_t *o = convert_one (DQ_ELEM_INT4, DQ_ELEM_FP16, DQ_BYTE_ORDER_HOST, &i4, 1, &ol);
  CHECK_EQ (ol, 4);
  CHECK_EQ (rd16 (o), 0xc800);
  CHECK_EQ (rd16 (o + 2), 0x4700);

  /* the scalar functions on floats the integer path never produces */
  CHECK_EQ (dq_float_to_half_rn (65504.0f), 0x7bff);
  CHECK_EQ (dq_float_to_half_rn (1.0f), 0x3c00);
  CHECK_EQ (dq_float_to_half_rn (ldexpf (1.0f, -24)), 0x0001); /* smallest subnormal */
  CHECK_EQ (dq_float_to_half_rn (ldexpf (1.0f, -25)), 0x0000); /* tie -> even 0 */
  CHECK_EQ (dq_float_to_half_rn (ldexpf (1.5f, -25)), 0x0001);
  CHECK_EQ (dq_float_to_half_rn (ldexpf (3.0f, -25)), 0x0002);    /* tie 1.5 ulp -> 2 */
  CHECK_EQ (dq_float_to_half_rn (ldexpf (1023.5f, -24)), 0x0400); /* rounds into normal */
  CHECK_EQ (dq_float_to_half_rn (ldexpf (1.0f, -14)), 0x0400);
  CHECK_EQ (dq_float_to_half_rn (-0.0f), 0x8000);
  CHECK_EQ (dq_float_to_half_rn (INFINITY), 0x7c00);
  CHECK_EQ (dq_float_to_half_rn (-INFINITY), 0xfc00);
  CHECK_EQ (dq_float_to_half_rn (NAN), 0x7fff);
  CHECK_EQ (dq_float_to_half_rn (FLT_MAX), 0x7c00);
  CHECK_EQ (dq_float_to_half_rn (FLT_MIN), 0x0000);
  CHECK_EQ (dq_float_to_bf16_rn (1.0f), 0x3f80);
  CHECK_EQ (dq_float_to_bf16_rn (-0.0f), 0x8000);
  CHECK_EQ (dq_float_to_bf16_rn (FLT_MAX), 0x7f80);
  CHECK_EQ (dq_float_to_bf16_rn (INFINITY), 0x7f80);
  CHECK_EQ (dq_float_to_bf16_rn (NAN), 0x7fff);
}

/* Independent check of the fp16/bf16 rounding: the result must be a nearest representable value
 * and, on a tie, the even one. Over every int in [-2^17, 2^17] and random int32/float values. */
static double
half_value (uint16_t h)
{
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 31)
    return m ? NAN : s * INFINITY;
  if (e == 0)
    return s * ldexp (m, -24);
  return s * ldexp (1024 + m, e - 25);
}

static double
bf16_value (uint16_t h)
{
  uint32_t x = (uint32_t) h << 16;
  float f;
  memcpy (&f, &x, 4);
  return f;
}

static int
nearest_even_ok (double v, uint16_t h, double (*val) (uint16_t), double max_finite)
{
  double got = val (h);
  if (fabs (v) >= max_finite) {
    /* beyond the largest finite value: inf once past the halfway point to the next binade */
    return isinf (got) || got == (v > 0 ? max_finite : -max_finite);
  }
  uint16_t up = (uint16_t) (h + 1), dn = (uint16_t) (h - 1);
  double err = fabs (v - got);
  double e1 = fabs (v - val (up)), e2 = fabs (v - val (dn));
  if ((h & 0x7fff) != 0x7fff && !isnan (val (up)) && e1 < err)
    return 0;
  if ((h & 0x7fff) != 0 && e2 < err)
    return 0;
  if ((e1 == err && !isnan (val (up))) || ((h & 0x7fff) != 0 && e2 == err))
    return (h & 1) == 0; /* a tie: even wins */
  return 1;
}

static void
test_rounding_exhaustive (void)
{
  dq_test_name = "fp-rounding-exhaustive";
  int bad = 0;
  for (int32_t i = -(1 << 17); i <= (1 << 17) && bad < 5; i++) {
    float f = (float) i;
    uint16_t h = dq_float_to_half_rn (f), b = dq_float_to_bf16_rn (f);
    if (!nearest_even_ok (f, h, half_value, 65504.0)) {
      fprintf (stderr, "fp16(%d) = 0x%04x\n", i, h);
      bad++;
    }
    if (!nearest_even_ok (f, b, bf16_value, 3.3895313892515355e38)) {
      fprintf (stderr, "bf16(%d) = 0x%04x\n", i, b);
      bad++;
    }
  }
  DqRng rng = { 12345 };
  for (int k = 0; k < 2000000 && bad < 5; k++) {
    uint32_t x = (uint32_t) dqt_rand (&rng);
    float f;
    if (k & 1) {
      f = (float) (int32_t) x;
    } else {
      /* floats around the fp16 range, subnormals included */
      x = (x & 0x807fffffu) | ((uint32_t) (100 + dqt_below (&rng, 46)) << 23);
      memcpy (&f, &x, 4);
    }
    uint16_t h = dq_float_to_half_rn (f), b = dq_float_to_bf16_rn (f);
    if (!nearest_even_ok (f, h, half_value, 65504.0) &&
        !(fabs (f) > 65504.0 && fabs (f) < 65520.0)) {
      fprintf (stderr, "fp16(%a) = 0x%04x\n", (double) f, h);
      bad++;
    }
    if (!nearest_even_ok (f, b, bf16_value, 3.3895313892515355e38)) {
      fprintf (stderr, "bf16(%a) = 0x%04x\n", (double) f, b);
      bad++;
    }
  }
  /* between 65504 and 65520 fp16 rounds down to 65504; at 65520 and beyond it is inf */
  CHECK_EQ (dq_float_to_half_rn (65519.996f), 0x7bff);
  CHECK_EQ (dq_float_to_half_rn (65520.0f), 0x7c00);
  CHECK_EQ (bad, 0);
}

/* Every (input, output, order) pair on random odd-sized payloads against an independent decoder. */
static int64_t
indep_elem (const uint8_t *p, uint32_t e, DqElemType in, int net)
{
  switch (in) {
    case DQ_ELEM_INT4: {
      int n = (e % 2 == 0) ? p[e / 2] / 16 : p[e / 2] % 16;
      return n >= 8 ? n - 16 : n;
    }
    case DQ_ELEM_INT8: return p[e] >= 128 ? (int) p[e] - 256 : p[e];
    case DQ_ELEM_INT16: {
      int v = net ? p[2 * e] * 256 + p[2 * e + 1] : p[2 * e + 1] * 256 + p[2 * e];
      return v >= 32768 ? v - 65536 : v;
    }
    case DQ_ELEM_INT32: {
      const uint8_t *q = p + 4 * e;
      int64_t v = net ? ((int64_t) q[0] << 24) + (q[1] << 16) + (q[2] << 8) + q[3]
                      : ((int64_t) q[3] << 24) + (q[2] << 16) + (q[1] << 8) + q[0];
      return v >= 2147483648ll ? v - 4294967296ll : v;
    }
    default: return 0;
  }
}

static void
test_conversion_matrix (void)
{
  dq_test_name = "conversion-matrix";
  const DqElemType ins[4] = { DQ_ELEM_INT4, DQ_ELEM_INT8, DQ_ELEM_INT16, DQ_ELEM_INT32 };
  const DqElemType outs[5] = { DQ_ELEM_FP16, DQ_ELEM_BF16, DQ_ELEM_FP32, DQ_ELEM_FP64,
    DQ_ELEM_INT32 };
  DqRng rng = { 777 };
  uint8_t pay[64];
  for (int a = 0; a < 4; a++)
    for (int o = 0; o < 5; o++)
      for (int net = 0; net < 2; net++)
        for (uint32_t len = 1; len <= 37; len += 3) {
          if (ins[a] == DQ_ELEM_INT32 && len < 4)
            continue;
          if (ins[a] == DQ_ELEM_INT16 && len < 2)
            continue;
          for (uint32_t i = 0; i < len; i++)
            pay[i] = (uint8_t) dqt_rand (&rng);
          uint32_t ol;
          const uint8_t *r = convert_one (
              ins[a], outs[o], net ? DQ_BYTE_ORDER_NETWORK : DQ_BYTE_ORDER_HOST, pay, len, &ol);
          DqReorderConfig c = cfg_simple (1, len, 0);
          c.input_type = ins[a];
          c.output_type = outs[o];
          c.byte_order = net ? DQ_BYTE_ORDER_NETWORK : DQ_BYTE_ORDER_HOST;
          if (!dq_reorder_converts (&c)) {
            CHECK_EQ (ol, len);
            CHECK (memcmp (r, pay, len) == 0);
            continue;
          }
          uint32_t count = ins[a] == DQ_ELEM_INT4 ? 2 * len
                                                  : len /
                  (ins[a] == DQ_ELEM_INT8           ? 1
                          : ins[a] == DQ_ELEM_INT16 ? 2
                                                    : 4);
          uint32_t osz = outs[o] == DQ_ELEM_FP64                     ? 8
              : (outs[o] == DQ_ELEM_FP16 || outs[o] == DQ_ELEM_BF16) ? 2
                                                                     : 4;
          CHECK_EQ (ol, count * osz);
          for (uint32_t e = 0; e < count; e++) {
            int64_t v = indep_elem (pay, e, ins[a], net);
            const uint8_t *q = r + e * osz;
            switch (outs[o]) {
              case DQ_ELEM_FP16:
                CHECK (nearest_even_ok ((float) v, rd16 (q), half_value, 65504.0));
                break;
              case DQ_ELEM_BF16: CHECK_EQ (rd16 (q), dq_float_to_bf16_rn ((float) v)); break;
              case DQ_ELEM_FP32: {
                float f;
                memcpy (&f, q, 4);
                CHECK (f == (float) v);
                break;
              }
              case DQ_ELEM_FP64: {
                double d;
                memcpy (&d, q, 8);
                CHECK (d == (double) v);
                break;
              }
              default: CHECK_EQ ((int32_t) rd32 (q), (int32_t) v); break;
            }
          }
        }
}

/* ---- validation -------------------------------------------------------------------------- */

static void
expect_invalid (DqReorderConfig c, const char *needle)
{
  char msg[256] = "";
  CHECK_EQ (dq_reorder_config_validate (&c, msg, sizeof msg), -1);
  if (!strstr (msg, needle)) {
    fprintf (stderr, "[%s] message '%s' lacks '%s'\n", dq_test_name, msg, needle);
    dq_test_failures++;
  }
  CHECK (dq_reorder_cpu_new (&c, NULL, 0) == NULL);
}

static void
test_validation (void)
{
  dq_test_name = "validation";
  DqReorderConfig c;
  dq_reorder_config_init (&c);
  CHECK_EQ (dq_reorder_config_validate (&c, NULL, 0), 0);
  DqReorderConfig b = c;
  b.seq_bit_width = 0;
  expect_invalid (b, "seq-bits is 0");
  b = c;
  b.seq_bit_width = 33;
  expect_invalid (b, "seq-bits is 33");
  b = c;
  b.seq_bit_offset = 65536 * 8;
  expect_invalid (b, "sequence field");
  b = c;
  b.batch_bit_width = 40;
  expect_invalid (b, "batch-bits is 40");
  b = c;
  b.packets_per_batch = 0;
  expect_invalid (b, "packets-per-batch is 0");
  b = c;
  b.packets_per_batch = DQ_REORDER_MAX_PPB + 1;
  expect_invalid (b, "packets-per-batch");
  b = c;
  b.seq_bit_width = 8;
  b.batch_bit_width = 4;
  b.batch_bit_offset = 8;
  b.packets_per_batch = 512;
  expect_invalid (b, "exceeds the 256 sequence numbers");
  b = c;
  b.seq_bit_width = 1;
  b.packets_per_batch = 4;
  expect_invalid (b,
      "packets-per-batch 4 exceeds half the 2 sequence numbers of a 1-bit "
      "sequence field without a batch field");
  b.seq_bit_width = 3;
  b.packets_per_batch = 5;
  expect_invalid (b,
      "packets-per-batch 5 exceeds half the 8 sequence numbers of a 3-bit "
      "sequence field without a batch field (batch-bits 0), so no batch could ever complete; "
      "allowed: packets-per-batch 1..4, or a batch field (batch-bits)");
  b.packets_per_batch = 4;
  CHECK_EQ (dq_reorder_config_validate (&b, NULL, 0), 0);
  b = c;
  b.payload_size = 0;
  expect_invalid (b, "payload-size is 0");
  b = c;
  b.payload_offset = 65000;
  b.payload_size = 1000;
  expect_invalid (b, "payload-offset 65000");
  b = c;
  b.input_type = DQ_ELEM_FP16;
  b.output_type = DQ_ELEM_FP32;
  expect_invalid (b, "not an input type");
  b = c;
  b.input_type = DQ_ELEM_INT8;
  b.output_type = DQ_ELEM_INT8;
  expect_invalid (b, "not an output type");
  b = c;
  b.input_type = DQ_ELEM_INT8;
  expect_invalid (b, "set both to same");
  b = c;
  b.byte_order = 7;
  expect_invalid (b, "byte order 7");
  b = c;
  b.input_type = DQ_ELEM_INT32;
  b.output_type = DQ_ELEM_FP32;
  b.payload_size = 3;
  expect_invalid (b, "holds no int32 element");
  b = c;
  b.window = 65;
  expect_invalid (b, "window 65");
  b = c;
  b.seq_bit_width = 10;
  b.packets_per_batch = 256;
  b.window = 3; /* 3 * 256 > 512 */
  expect_invalid (b, "window 3 is too large: at most 2");
  b.window = 2;
  CHECK_EQ (dq_reorder_config_validate (&b, NULL, 0), 0);
  b.window = 0;
  CHECK_EQ (dq_reorder_window (&b), 2);
  b = c;
  b.batch_bit_width = 1;
  b.batch_bit_offset = 40;
  CHECK_EQ (dq_reorder_window (&b), 1);
  b.window = 2;
  expect_invalid (b, "half the ids");
  /* sizes */
  b = c;
  b.input_type = DQ_ELEM_INT4;
  b.output_type = DQ_ELEM_FP64;
  b.payload_size = 3;
  b.packets_per_batch = 10;
  CHECK_EQ (dq_reorder_output_payload_size (&b), 48);
  CHECK_EQ (dq_reorder_frame_size (&b), 480);
  CHECK_EQ (dq_reorder_min_packet_length (&b), 7);
  b.seq_bit_offset = 100;
  b.seq_bit_width = 13; /* bits 100..112 -> 15 bytes */
  CHECK_EQ (dq_reorder_min_packet_length (&b), 15);
}

/* ---- window behaviour -------------------------------------------------------------------- */

/* ppb 4, window 2, one burst: batch 1 loses slot 2. The first packet of batch 2 moves the window
 * past batch 0 (complete, but completion is only looked at when the burst ends: COMPLETE|PUSHED);
 * the first of batch 3 pushes batch 1 out, zero-filled; batches 2 and 3 complete at the end. */
static void
test_loss_push (void)
{
  dq_test_name = "loss-push";
  DqReorderConfig cfg = cfg_simple (4, 8, 2);
  Rig r;
  rig_init (&r, &cfg, 8);
  for (uint32_t s = 0; s < 16; s++)
    if (s != 6)
      rig_add (&r, s, (uint8_t) (s * 16), 1000 + s);
  rig_send (&r);
  CHECK_EQ (r.n_got, 4);
  check_batch (&r, 0, 0, DQ_BATCH_COMPLETE | DQ_BATCH_PUSHED, 4);
  check_batch (&r, 1, 1, DQ_BATCH_PUSHED, 3);
  CHECK_EQ (r.got[1].first_timestamp, 1004);
  CHECK (slot_is (r.got[1].frame, 0, 8, 64) && slot_is (r.got[1].frame, 1, 8, 80) &&
      slot_is_zero (r.got[1].frame, 2, 8) && slot_is (r.got[1].frame, 3, 8, 112));
  check_batch (&r, 2, 2, DQ_BATCH_COMPLETE, 4);
  check_batch (&r, 3, 3, DQ_BATCH_COMPLETE, 4);
  CHECK (r.got[0].frame_user == (void *) 1 && r.got[1].frame_user == (void *) 2 &&
      r.got[2].frame_user == (void *) 3 && r.got[3].frame_user == (void *) 4);
  for (uint32_t s = 0; s < 4; s++)
    CHECK (slot_is (r.got[3].frame, s, 8, (uint8_t) ((12 + s) * 16)));
  CHECK_EQ (r.last.stats.accepted, 15);
  CHECK_EQ (r.last.stats.batches, 4);
  CHECK_EQ (r.last.stats.complete, 3);
  CHECK_EQ (r.last.stats.partial, 1);
  CHECK_EQ (r.last.stats.missing_slots, 1);
  check_window (&r, 4, 0);
  /* the same stream one packet per burst: batch 0 completes on its own now */
  rig_free (&r);
  rig_init (&r, &cfg, 8);
  for (uint32_t s = 0; s < 16; s++) {
    if (s == 6)
      continue;
    rig_add (&r, s, (uint8_t) (s * 16), 1000 + s);
    rig_send (&r);
  }
  CHECK_EQ (r.n_got, 4);
  check_batch (&r, 0, 0, DQ_BATCH_COMPLETE, 4);
  check_batch (&r, 1, 1, DQ_BATCH_PUSHED, 3);
  check_batch (&r, 2, 2, DQ_BATCH_COMPLETE, 4);
  check_batch (&r, 3, 3, DQ_BATCH_COMPLETE, 4);
  rig_free (&r);
}

static void
test_duplicates (void)
{
  dq_test_name = "duplicates";
  DqReorderConfig cfg = cfg_simple (4, 4, 2);
  Rig r;
  rig_init (&r, &cfg, 4);
  rig_add (&r, 1, 0x10, 5);
  rig_add (&r, 1, 0x20, 6); /* duplicate in the same burst: first wins */
  rig_add (&r, 0, 0x30, 7);
  rig_send (&r);
  rig_add (&r, 1, 0x40, 8); /* duplicate in a later burst */
  rig_add (&r, 2, 0x50, 9);
  rig_add (&r, 3, 0x60, 10);
  rig_add (&r, 3, 0x70, 11);
  rig_send (&r);
  CHECK_EQ (r.n_got, 1);
  check_batch (&r, 0, 0, DQ_BATCH_COMPLETE, 4);
  CHECK_EQ (r.got[0].duplicates, 3);
  CHECK_EQ (r.got[0].first_timestamp, 5);
  CHECK (slot_is (r.got[0].frame, 0, 4, 0x30) && slot_is (r.got[0].frame, 1, 4, 0x10) &&
      slot_is (r.got[0].frame, 2, 4, 0x50) && slot_is (r.got[0].frame, 3, 4, 0x60));
  CHECK_EQ (r.last.stats.duplicates, 3);
  CHECK_EQ (r.last.stats.accepted, 4);
  rig_free (&r);
}

static void
test_late (void)
{
  dq_test_name = "late";
  DqReorderConfig cfg = cfg_simple (2, 4, 2);
  Rig r;
  rig_init (&r, &cfg, 8);
  rig_add (&r, 2, 1, 1); /* the stream starts at batch 1 */
  rig_add (&r, 3, 2, 2);
  rig_add (&r, 0, 3, 3); /* batch 0: before the start -> late */
  rig_send (&r);
  CHECK_EQ (r.n_got, 1);
  check_batch (&r, 0, 1, DQ_BATCH_COMPLETE, 2);
  CHECK_EQ (r.got[0].late, 1);
  rig_add (&r, 3, 4, 4); /* batch 1 was emitted: late */
  rig_add (&r, 2, 4, 4);
  rig_add (&r, 4, 5, 5);
  rig_send (&r);
  CHECK_EQ (r.n_got, 1);
  CHECK_EQ (r.last.stats.late, 3);
  CHECK_EQ (r.last.stats.pending_late, 2);
  rig_add (&r, 5, 6, 6);
  rig_send (&r);
  CHECK_EQ (r.n_got, 2);
  check_batch (&r, 1, 2, DQ_BATCH_COMPLETE, 2);
  CHECK_EQ (r.got[1].late, 2); /* the late packets since batch 1 */
  CHECK_EQ (r.last.stats.pending_late, 0);
  /* within one burst: batch 3 is in the window at the start, so placed in pass 1; then batch 6
   * moves the window from [3, 5) to [5, 7): 3 is pushed out, 4 skipped; 5 placed */
  rig_add (&r, 12, 7, 7); /* batch 6 */
  rig_add (&r, 7, 8, 8);  /* batch 3 */
  rig_add (&r, 11, 9, 9); /* batch 5 */
  rig_send (&r);
  CHECK_EQ (r.n_got, 3);
  check_batch (&r, 2, 3, DQ_BATCH_PUSHED, 1);
  CHECK_EQ (r.last.stats.late, 3);
  CHECK_EQ (r.last.stats.skipped, 1);
  check_window (&r, 5, 2);
  /* then in a later burst, batch 4 is below the window: late */
  rig_add (&r, 8, 8, 8);
  rig_send (&r);
  CHECK_EQ (r.last.stats.late, 4);
  rig_free (&r);
}

/* Pass 1 takes every packet in the window at the start of the burst, even after a packet that
 * moves the window in pass 2. */
static void
test_two_pass (void)
{
  dq_test_name = "two-pass";
  DqReorderConfig cfg = cfg_simple (2, 4, 2);
  Rig r;
  rig_init (&r, &cfg, 8);
  rig_add (&r, 0, 1, 1); /* batch 0, window [0, 2) */
  rig_send (&r);
  rig_add (&r, 6, 2, 2); /* batch 3: beyond; moves the window to [2, 4) in pass 2 */
  rig_add (&r, 1, 3, 3); /* batch 0, in the window at burst start: placed */
  rig_add (&r, 2, 4, 4); /* batch 1 likewise */
  rig_send (&r);
  CHECK_EQ (r.n_got, 2);
  check_batch (&r, 0, 0, DQ_BATCH_COMPLETE | DQ_BATCH_PUSHED, 2);
  check_batch (&r, 1, 1, DQ_BATCH_PUSHED, 1);
  CHECK (slot_is (r.got[1].frame, 0, 4, 4) && slot_is_zero (r.got[1].frame, 1, 4));
  CHECK_EQ (r.last.stats.late, 0);
  rig_free (&r);
}

static void
test_short_malformed (void)
{
  dq_test_name = "short-malformed";
  DqReorderConfig cfg = cfg_simple (2, 16, 2);
  cfg.seq_bit_offset = 8 * 20; /* seq beyond the payload: need = 24 bytes */
  cfg.payload_offset = 2;
  CHECK_EQ (dq_reorder_min_packet_length (&cfg), 24);
  Rig r;
  rig_init (&r, &cfg, 4);
  uint8_t pkt[24];
  memset (pkt, 0x11, sizeof pkt);
  dq_bits_set (pkt, cfg.seq_bit_offset, 32, 1);
  dqt_burst_add (&r.burst, pkt, 24, 1); /* ok: slot 1 */
  dqt_burst_add (&r.burst, pkt, 23, 2); /* one byte short of the seq field */
  dqt_burst_add (&r.burst, pkt, 0, 3);
  dqt_burst_add_bad (&r.burst, 1000, 24);        /* outside the burst */
  dqt_burst_add_bad (&r.burst, 0xffffffffu, 24); /* offset + length overflows 32 bits */
  dq_bits_set (pkt, cfg.seq_bit_offset, 32, 0);
  dqt_burst_add (&r.burst, pkt, 24, 4); /* ok: slot 0 */
  dqt_burst_add (&r.burst, pkt, 17, 5); /* the last packet, short: nothing past it is read */
  rig_send (&r);
  CHECK_EQ (r.n_got, 1);
  check_batch (&r, 0, 0, DQ_BATCH_COMPLETE, 2);
  CHECK_EQ (r.got[0].short_packets, 5);
  CHECK_EQ (r.last.stats.short_packets, 5);
  CHECK_EQ (r.last.job_short, 5);
  CHECK_EQ (r.last.stats.packets, 7);
  /* a burst of only short packets changes nothing but the counters */
  dqt_burst_add (&r.burst, pkt, 3, 6);
  rig_send (&r);
  CHECK_EQ (r.last.stats.pending_short, 1);
  rig_free (&r);
}

static void
test_timeout_flush (void)
{
  dq_test_name = "timeout-flush";
  DqReorderConfig cfg = cfg_simple (4, 4, 4);
  Rig r;
  rig_init (&r, &cfg, 8);
  rig_add (&r, 9, 9, 90);    /* batch 2 */
  rig_add (&r, 13, 13, 130); /* batch 3 */
  rig_add (&r, 12, 12, 120);
  rig_add (&r, 14, 14, 140);
  rig_add (&r, 15, 15, 150); /* batch 3 complete, held behind batch 2 */
  rig_send (&r);
  CHECK_EQ (r.n_got, 0);
  check_oldest (&r, 2, 2, 90);
  rig_flush (&r, DQ_FLUSH_OLDEST);
  CHECK_EQ (r.n_got, 2);
  check_batch (&r, 0, 2, DQ_BATCH_FLUSHED, 1); /* 3 missing */
  CHECK (slot_is (r.got[0].frame, 1, 4, 9) && slot_is_zero (r.got[0].frame, 0, 4) &&
      slot_is_zero (r.got[0].frame, 2, 4) && slot_is_zero (r.got[0].frame, 3, 4));
  check_batch (&r, 1, 3, DQ_BATCH_COMPLETE, 4);
  CHECK_EQ (r.got[1].first_timestamp, 130);
  check_window (&r, 4, 0);
  /* nothing open: flush does nothing */
  rig_flush (&r, DQ_FLUSH_OLDEST);
  CHECK_EQ (r.n_got, 2);
  CHECK_EQ (r.last.n_batches, 0);
  rig_free (&r);
}

static void
test_flush_all_reset (void)
{
  dq_test_name = "flush-all-reset";
  DqReorderConfig cfg = cfg_simple (4, 4, 4);
  Rig r;
  rig_init (&r, &cfg, 6);
  rig_add (&r, 1, 1, 1);  /* batch 0 */
  rig_add (&r, 10, 2, 2); /* batch 2 */
  rig_send (&r);
  rig_flush (&r, DQ_FLUSH_ALL);
  CHECK_EQ (r.n_got, 2);
  check_batch (&r, 0, 0, DQ_BATCH_FLUSHED, 1);
  check_batch (&r, 1, 2, DQ_BATCH_FLUSHED, 1);
  CHECK_EQ (r.last.window.base, 4);
  CHECK_EQ (r.last.stats.skipped, 2);
  /* the window keeps its place: batch 3 is late now, batch 4 opens */
  rig_add (&r, 15, 3, 3);
  rig_add (&r, 16, 4, 4);
  rig_send (&r);
  CHECK_EQ (r.last.stats.late, 1);
  CHECK_EQ (r.last.window.oldest_id, 4);
  /* reset: batch 4 emitted, the 4 window frames' unused 3 and the free queue's given back */
  rig_flush (&r, DQ_FLUSH_RESET);
  CHECK_EQ (r.n_got, 3);
  check_batch (&r, 2, 4, DQ_BATCH_FLUSHED, 1);
  CHECK_EQ (r.last.n_released, 3); /* 6 frames: 3 emitted, 3 in the window unused */
  CHECK_EQ (r.last.window.initialized, 0);
  uint32_t seen = 0;
  for (uint32_t i = 0; i < 3; i++)
    seen |= 1u << (uint32_t) (uintptr_t) r.got[i].frame_user;
  for (uint32_t i = 0; i < r.last.n_released; i++)
    seen |= 1u << (uint32_t) (uintptr_t) r.last.released[i].user;
  CHECK_EQ (seen, 0x7e); /* users 1..6, each once */
  /* after the reset the next packet starts a new window, even an old id */
  rig_add (&r, 0, 5, 5);
  rig_send (&r);
  CHECK_EQ (r.last.window.initialized, 1);
  CHECK_EQ (r.last.window.oldest_id, 0);
  rig_free (&r);
}

static void
test_no_frame (void)
{
  dq_test_name = "no-frame";
  DqReorderConfig cfg = cfg_simple (2, 4, 2);
  Rig r;
  rig_init (&r, &cfg, 1); /* one frame for a window of two */
  for (uint32_t s = 0; s < 4; s++)
    rig_add (&r, s, (uint8_t) s, s);
  rig_send (&r);
  CHECK_EQ (r.n_got, 2);
  check_batch (&r, 0, 0, DQ_BATCH_COMPLETE, 2);
  CHECK (r.got[0].frame == r.frames[0]);
  check_batch (&r, 1, 1, DQ_BATCH_COMPLETE | DQ_BATCH_NO_FRAME, 2);
  CHECK (r.got[1].frame == NULL);
  CHECK_EQ (r.last.stats.no_frame, 1);
  /* a frame given back now goes to the next batch that has none and no packets */
  uint8_t *f = malloc (8);
  dq_reorder_cpu_add_frame (r.ctx, f, (void *) 42);
  rig_add (&r, 4, 4, 4);
  rig_add (&r, 5, 5, 5);
  rig_send (&r);
  CHECK_EQ (r.n_got, 3);
  CHECK (r.got[2].frame == f && r.got[2].frame_user == (void *) 42);
  CHECK (slot_is (f, 0, 4, 4) && slot_is (f, 1, 4, 5));
  free (f);
  rig_free (&r);
}

/* dq_unwrap (and dq_unwrap_d1, which it is made of) against its definition: the value congruent
 * to the key modulo 2^bits whose distance from the head lies in (-2^(bits-1), 2^(bits-1)]. Every
 * key width, heads at and around the wraps, keys at the half-range edges and at random. */
static void
test_unwrap_d1 (void)
{
  dq_test_name = "unwrap-d1";
  DqRng rng = { 0x9e3779b97f4a7c15ull };
  uint32_t mismatches = 0, checked = 0;
  for (uint32_t bits = 1; bits <= 32; bits++) {
    const uint64_t m = 1ull << bits, half = m >> 1;
    const int64_t heads[] = { 0, 1, (int64_t) half - 1, (int64_t) half, (int64_t) m - 1,
      (int64_t) m, (int64_t) m + 1, 0xffffffffll, 0x100000000ll, 0x7fffffff00000000ll,
      (int64_t) (dqt_rand (&rng) >> 2), (int64_t) (dqt_rand (&rng) >> 33) };
    for (size_t h = 0; h < sizeof heads / sizeof *heads; h++) {
      const int64_t head = heads[h];
      const uint64_t hk = (uint64_t) head & (m - 1);
      const uint64_t ks[] = { hk, hk + 1, hk - 1, hk + half, hk + half - 1, hk + half + 1,
        hk - half, hk - half + 1, 0, m - 1, half, dqt_rand (&rng), dqt_rand (&rng) };
      for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        const uint32_t k = (uint32_t) (ks[i] & (m - 1));
        /* the definition: d = (k - head) mod 2^bits, taken as d - 2^bits above half */
        const uint64_t d = ((uint64_t) k - (uint64_t) head) & (m - 1);
        const int64_t want = head + (d > half ? (int64_t) d - (int64_t) m : (int64_t) d);
        const int64_t got = dq_unwrap (k, head, bits);
        const int64_t got_d1 = head + dq_unwrap_d1 (k, (uint32_t) head, bits) + 1;
        checked++;
        if ((got != want || got_d1 != want) && mismatches++ < 5)
          fprintf (stderr, "[%s] bits %u head %lld key %u: %lld / %lld, want %lld\n", dq_test_name,
              bits, (long long) head, k, (long long) got, (long long) got_d1, (long long) want);
      }
    }
  }
  CHECK_EQ (mismatches, 0);
  CHECK_EQ (checked, 32u * 12 * 13);
}

static void
test_seq_wrap (void)
{
  dq_test_name = "seq-wrap";
  /* 8-bit sequence, ppb 4 (divides 256): batch ids continue across the wrap */
  DqReorderConfig cfg = cfg_simple (4, 2, 2);
  cfg.seq_bit_width = 8;
  cfg.seq_bit_offset = 24;
  Rig r;
  rig_init (&r, &cfg, 16);
  for (uint32_t s = 248; s < 248 + 16; s++) {
    rig_add (&r, s & 0xff, (uint8_t) s, s);
    rig_send (&r);
  }
  CHECK_EQ (r.n_got, 4);
  for (uint32_t i = 0; i < 4; i++) {
    check_batch (&r, i, 62 + i, DQ_BATCH_COMPLETE, 4);
    for (uint32_t s = 0; s < 4; s++)
      CHECK (slot_is (r.got[i].frame, s, 2, (uint8_t) (248 + 4 * i + s)));
  }
  /* ppb 3 does not divide 256: unwrapped counts keep batches whole across the wrap */
  rig_free (&r);
  cfg.packets_per_batch = 3;
  cfg.window = 2;
  rig_init (&r, &cfg, 16);
  for (uint32_t s = 249; s < 249 + 12; s++) { /* 249 = 83 * 3 */
    rig_add (&r, s & 0xff, (uint8_t) s, s);
    rig_send (&r);
  }
  CHECK_EQ (r.n_got, 4);
  for (uint32_t i = 0; i < 4; i++)
    check_batch (&r, i, 83 + i, DQ_BATCH_COMPLETE, 3);
  rig_free (&r);
}

static void
test_field_wrap (void)
{
  dq_test_name = "batch-field-wrap";
  /* seq 10 bits at 0, batch 2 bits at 10 (4 ids, window 2), ppb 256, payload at 2 */
  DqReorderConfig cfg = cfg_simple (256, 2, 0);
  set_fields (&cfg, 0, 10, 10, 2);
  cfg.payload_offset = 2;
  Rig r;
  rig_init (&r, &cfg, 16);
  uint8_t pay[2], pkt[4];
  for (uint64_t batch = 2; batch < 9; batch++) {
    for (uint32_t s = 0; s < 256; s++) {
      if (batch == 5 && s == 17)
        continue;                    /* one loss */
      uint32_t slot = (s * 7) & 255; /* scrambled order */
      pay[0] = (uint8_t) batch;
      pay[1] = (uint8_t) slot;
      dqt_make_packet (&cfg, batch, slot, pay, pkt, 4);
      dqt_burst_add (&r.burst, pkt, 4, batch * 1000 + s);
    }
    rig_send (&r);
  }
  rig_flush (&r, DQ_FLUSH_ALL);
  CHECK_EQ (r.n_got, 7);
  for (uint32_t i = 0; i < r.n_got && i < 7; i++) {
    uint64_t batch = 2 + i;
    /* batch 5, one short, is pushed out by batch 7 */
    if (batch == 5)
      check_batch (&r, i, batch, DQ_BATCH_PUSHED, 255);
    else
      check_batch (&r, i, batch, DQ_BATCH_COMPLETE, 256);
    CHECK_EQ (r.got[i].first_timestamp, batch * 1000);
    const uint8_t *f = r.got[i].frame;
    uint32_t bad = 0, lost = (17 * 7) & 255;
    for (uint32_t s = 0; s < 256; s++) {
      if (batch == 5 && s == lost)
        bad += f[2 * s] != 0 || f[2 * s + 1] != 0;
      else
        bad += f[2 * s] != (uint8_t) batch || f[2 * s + 1] != (uint8_t) s;
    }
    CHECK_EQ (bad, 0);
  }
  rig_free (&r);
}

/* ---- random streams against their ground truth ------------------------------------------- */

static void
check_tame_stream (const char *name, DqReorderConfig cfg, DqStreamSpec spec, uint64_t seed)
{
  dq_test_name = name;
  DqStream st;
  dqt_stream_make (&st, &cfg, &spec, seed);
  uint32_t ppb = cfg.packets_per_batch, L = cfg.payload_size;
  Rig r;
  rig_init (&r, &cfg, spec.n_batches + 8);
  uint32_t pos = 0;
  for (uint32_t k = 0; k < st.n_bursts; k++) {
    DqReorderCompletion c;
    CHECK_EQ (dq_reorder_cpu_push (r.ctx, st.data, st.size, st.pkts + pos, st.burst_len[k], &c), 0);
    rig_take (&r, &c);
    pos += st.burst_len[k];
  }
  rig_flush (&r, DQ_FLUSH_ALL);

  /* expected: every batch with at least one packet, in order, with its original payloads */
  uint32_t gi = 0, bad = 0;
  uint64_t sum_dup = 0, sum_late = 0, sum_short = 0;
  for (uint32_t bi = 0; bi < spec.n_batches; bi++) {
    uint32_t delivered = 0;
    for (uint32_t s = 0; s < ppb; s++)
      delivered += !st.lost[(size_t) bi * ppb + s];
    if (!delivered)
      continue;
    if (gi >= r.n_got) {
      bad++;
      break;
    }
    const DqReorderBatch *g = &r.got[gi++];
    CHECK_EQ (g->batch_id, spec.first_batch + bi);
    CHECK_EQ (g->packets, delivered);
    CHECK_EQ (g->missing, ppb - delivered);
    if (delivered == ppb)
      CHECK (g->flags & DQ_BATCH_COMPLETE);
    else
      CHECK (g->flags & (DQ_BATCH_PUSHED | DQ_BATCH_FLUSHED));
    sum_dup += g->duplicates;
    for (uint32_t s = 0; s < ppb; s++) {
      const uint8_t *got = (const uint8_t *) g->frame + (size_t) s * L;
      if (st.lost[(size_t) bi * ppb + s]) {
        for (uint32_t j = 0; j < L; j++)
          bad += got[j] != 0;
      } else {
        bad += memcmp (got, st.payloads + ((size_t) bi * ppb + s) * L, L) != 0;
      }
    }
  }
  CHECK_EQ (gi, r.n_got);
  for (uint32_t i = 0; i < r.n_got; i++) {
    sum_late += r.got[i].late;
    sum_short += r.got[i].short_packets;
  }
  sum_late += r.last.stats.pending_late;
  sum_short += r.last.stats.pending_short;
  CHECK_EQ (bad, 0);
  CHECK_EQ (sum_short, st.n_short);
  CHECK_EQ (r.last.stats.short_packets, st.n_short);
  CHECK_EQ (sum_late, r.last.stats.late);
  /* every injected duplicate is either a duplicate (batch still open) or late (emitted) */
  CHECK_EQ (sum_dup + r.last.stats.late, st.n_dup + st.n_late_sent);
  CHECK (r.last.stats.late >= st.n_late_sent);
  CHECK_EQ (r.last.stats.packets, st.n);
  CHECK_EQ (r.last.stats.accepted + r.last.stats.duplicates + r.last.stats.late +
          r.last.stats.short_packets,
      st.n);
  rig_free (&r);
  dqt_stream_free (&st);
}

static void
test_random_tame (void)
{
  for (uint64_t seed = 1; seed <= 12; seed++) {
    DqReorderConfig cfg = cfg_simple (8 + (uint32_t) seed * 5, 1 + (uint32_t) (seed * 7) % 40, 0);
    cfg.payload_offset = 4 + (uint32_t) seed % 5;
    cfg.window = seed % 3 ? 2 : 4;
    DqStreamSpec sp = { 30, 0.02 * (double) (seed % 4), 0.03, 0.02, 0.01,
      cfg.packets_per_batch / 2 - 1, 0, 1 + (uint32_t) seed * 9, (uint32_t) seed * 3 };
    check_tame_stream ("random-tame", cfg, sp, seed);
  }
  /* batch field mode and a narrow wrapping sequence */
  for (uint64_t seed = 20; seed < 26; seed++) {
    DqReorderConfig cfg = cfg_simple (64, 24, 3);
    set_fields (&cfg, 16, 12, 5, 5);
    cfg.payload_offset = 6;
    DqStreamSpec sp = { 70, 0.05, 0.02, 0.02, 0.01, 20, 0, 97, 25 };
    check_tame_stream ("random-tame-field", cfg, sp, seed);
  }
  for (uint64_t seed = 30; seed < 34; seed++) {
    DqReorderConfig cfg = cfg_simple (16, 12, 2);
    cfg.seq_bit_width = 9; /* wraps every 32 batches */
    cfg.seq_bit_offset = 23;
    DqStreamSpec sp = { 100, 0.03, 0.02, 0.01, 0.0, 7, 0, 50, 0 };
    check_tame_stream ("random-tame-wrap", cfg, sp, seed);
  }
}

/* Wild streams: no ground truth, but invariants: counters add up, ids strictly increase, frames
 * complete where packets says so, nothing crashes or reads out of bounds. */
static void
test_random_wild (void)
{
  dq_test_name = "random-wild";
  for (uint64_t seed = 100; seed < 120; seed++) {
    DqReorderConfig cfg = cfg_simple (4 + (uint32_t) seed % 13, 3 + (uint32_t) seed % 29, 0);
    if (seed % 2) {
      cfg.seq_bit_width = 16;
      cfg.seq_bit_offset = 16;
    }
    if (seed % 3 == 0) {
      set_fields (&cfg, 0, 6, 8, 6);
      cfg.packets_per_batch = 8;
      cfg.payload_offset = 14;
    }
    DqStreamSpec sp = { 60, 0.1, 0.1, 0.05, 0.02, 30, 1, 40, 5 };
    DqStream st;
    dqt_stream_make (&st, &cfg, &sp, seed);
    Rig r;
    rig_init (&r, &cfg, 4);
    uint32_t pos = 0, frames_back = 0;
    uint64_t last_id = 0;
    int have_last = 0;
    for (uint32_t k = 0; k < st.n_bursts; k++) {
      DqReorderCompletion c;
      uint8_t *exact = malloc (st.size);
      memcpy (exact, st.data, st.size);
      CHECK_EQ (dq_reorder_cpu_push (r.ctx, exact, st.size, st.pkts + pos, st.burst_len[k], &c), 0);
      free (exact);
      pos += st.burst_len[k];
      for (uint32_t i = 0; i < c.n_batches; i++) {
        const DqReorderBatch *g = &c.batches[i];
        CHECK (!have_last || g->batch_id > last_id);
        last_id = g->batch_id;
        have_last = 1;
        CHECK_EQ (g->packets + g->missing, cfg.packets_per_batch);
        CHECK (g->packets > 0);
        /* frames go back at once (a tight pool) */
        if (g->frame) {
          dq_reorder_cpu_add_frame (r.ctx, g->frame, g->frame_user);
          frames_back++;
        }
      }
      CHECK_EQ (c.stats.accepted + c.stats.duplicates + c.stats.late + c.stats.short_packets,
          c.stats.packets);
    }
    rig_flush (&r, DQ_FLUSH_RESET);
    CHECK_EQ (r.last.n_released + (frames_back ? 0 : 0) >= 1, 1);
    rig_free (&r);
    dqt_stream_free (&st);
  }
}

/* ---- gather and packetize ---------------------------------------------------------------- */

/* dq_packetize_validate refuses the config with the template, saying `needle`. */
static void
expect_packetize_invalid (
    const DqReorderConfig *cfg, const DqPacketizeTemplate *t, const char *needle)
{
  char msg[200] = "";
  CHECK_EQ (dq_packetize_validate (cfg, t, msg, sizeof msg), -1);
  if (!strstr (msg, needle)) {
    fprintf (stderr, "[%s] message '%s' lacks '%s'\n", dq_test_name, msg, needle);
    dq_test_failures++;
  }
}

static void
test_gather (void)
{
  dq_test_name = "gather";
  DqReorderConfig cfg = cfg_simple (1, 6, 0);
  cfg.payload_offset = 3;
  DqTestBurst b;
  dqt_burst_init (&b);
  uint8_t p[9];
  for (int i = 0; i < 9; i++)
    p[i] = (uint8_t) (i + 1);
  dqt_burst_add (&b, p, 9, 0);
  dqt_burst_add (&b, p, 8, 0);     /* short */
  dqt_burst_add_bad (&b, 5000, 9); /* malformed */
  p[3] = 0xee;
  dqt_burst_add (&b, p, 9, 0);
  uint8_t *exact = dqt_burst_exact (&b);
  uint8_t out[24];
  memset (out, 0xa5, sizeof out);
  CHECK_EQ (dq_gather_cpu (&cfg, exact, b.size, b.pkts, b.n, out), 2);
  CHECK (memcmp (out, "\x04\x05\x06\x07\x08\x09", 6) == 0);
  CHECK (memcmp (out + 6, "\0\0\0\0\0\0\0\0\0\0\0\0", 12) == 0);
  CHECK (memcmp (out + 18, "\xee\x05\x06\x07\x08\x09", 6) == 0);
  /* with a conversion: int16 network -> fp32 */
  cfg.input_type = DQ_ELEM_INT16;
  cfg.output_type = DQ_ELEM_FP32;
  cfg.byte_order = DQ_BYTE_ORDER_NETWORK;
  float fo[6];
  CHECK_EQ (dq_gather_cpu (&cfg, exact, b.size, b.pkts, 1, fo), 0);
  CHECK (fo[0] == (float) 0x0405 && fo[1] == (float) 0x0607 && fo[2] == (float) 0x0809);
  free (exact);
  dqt_burst_free (&b);
}

static void
test_packetize_roundtrip (void)
{
  dq_test_name = "packetize-roundtrip";
  /* Ethernet + IPv4 + UDP (42 bytes), BE u32 seq at 42, batch byte at 46, payload at 48 */
  const DqPacketHeaders h = dq_test_headers (5000, 5001);
  uint8_t hdr[42];
  CHECK_EQ (dq_packet_write_headers (hdr, sizeof hdr, &h), 0);
  DqReorderConfig cfg = cfg_simple (50, 10, 0);
  set_fields (&cfg, 42 * 8, 32, 46 * 8, 8);
  cfg.payload_offset = 48;
  DqPacketizeTemplate t = { hdr, 42, 14, 34, 64, 60 };
  char msg[200];
  CHECK_EQ (dq_packetize_validate (&cfg, &t, msg, sizeof msg), 0);
  CHECK_EQ (dq_packetize_packet_length (&cfg, &t), 60);
  uint8_t frame[500], out[50 * 64];
  for (int i = 0; i < 500; i++)
    frame[i] = (uint8_t) (i * 13 + 1);
  DqReorderPacket pk[50];
  CHECK_EQ (dq_packetize_cpu (&cfg, &t, frame, 7, out, sizeof out, pk), 0);
  for (uint32_t s = 0; s < 50; s++) {
    const uint8_t *p = out + s * 64;
    CHECK_EQ (pk[s].offset, s * 64);
    CHECK_EQ (pk[s].length, 60);
    CHECK_EQ (dq_bits_get (p, 42 * 8, 32), 7 * 50 + s);
    CHECK_EQ (p[46], 7);
    CHECK_EQ (p[47], 0);
    CHECK (memcmp (p + 48, frame + s * 10, 10) == 0);
    CHECK_EQ ((p[16] << 8) | p[17], 60 - 14);   /* IPv4 total length */
    CHECK_EQ (dq_test_rfc1071 (p + 14, 20), 0); /* checksum verifies */
    CHECK_EQ ((p[38] << 8) | p[39], 60 - 34);   /* UDP length */
    CHECK_EQ (p[40] | p[41], 0);
    CHECK (memcmp (p, hdr, 14) == 0);
  }
  /* reorder them back (reversed, one burst) */
  Rig r;
  rig_init (&r, &cfg, 2);
  for (int s = 49; s >= 0; s--)
    dqt_burst_add (&r.burst, out + s * 64, 60, (uint64_t) s);
  rig_send (&r);
  CHECK_EQ (r.n_got, 1);
  check_batch (&r, 0, 7, DQ_BATCH_COMPLETE, 50);
  CHECK (memcmp (r.got[0].frame, frame, 500) == 0);
  CHECK_EQ (r.got[0].first_timestamp, 49);
  rig_free (&r);
  /* validation */
  DqPacketizeTemplate bad = t;
  bad.packet_stride = 59;
  expect_packetize_invalid (&cfg, &bad, "stride 59");
  bad = t;
  bad.header_len = 49;
  expect_packetize_invalid (&cfg, &bad, "runs into the payload");
  DqReorderConfig c2 = cfg;
  c2.seq_bit_offset = 50 * 8;
  expect_packetize_invalid (&c2, &t, "overlaps the payload");
  c2 = cfg;
  c2.seq_bit_offset = 20 * 8;
  expect_packetize_invalid (&c2, &t, "IPv4 header");
  c2 = cfg;
  c2.input_type = DQ_ELEM_INT8;
  c2.output_type = DQ_ELEM_FP16;
  expect_packetize_invalid (&c2, &t, "same");
  CHECK_EQ (dq_packetize_cpu (&cfg, &t, frame, 7, out, 49 * 64 + 59, pk), -1);
  CHECK_EQ (dq_packetize_cpu (&cfg, &t, frame, 7, out, 49 * 64 + 60, pk), 0);
  /* ranges of slots (runs of TX slots): the same bytes, piece by piece, and one at a time at
   * another stride */
  uint8_t pieces[50 * 64];
  memset (pieces, 0xee, sizeof pieces);
  const uint32_t cuts[] = { 0, 1, 17, 32, 49, 50 };
  for (int c = 0; c + 1 < 6; c++) {
    uint32_t first = cuts[c], n = cuts[c + 1] - cuts[c];
    DqReorderPacket rp[50];
    CHECK_EQ (dq_packetize_cpu_range (
                  &cfg, &t, frame, 7, first, n, pieces + first * 64, (size_t) n * 64, rp),
        0);
    CHECK_EQ (rp[0].offset, 0);
    CHECK_EQ (rp[n - 1].offset, (n - 1) * 64);
  }
  for (uint32_t sl = 0; sl < 50; sl++)
    CHECK (memcmp (pieces + sl * 64, out + sl * 64, 60) == 0);
  DqPacketizeTemplate t1 = t;
  t1.packet_stride = 60;
  for (uint32_t sl = 0; sl < 50; sl++) {
    uint8_t one[60];
    CHECK_EQ (dq_packetize_cpu_range (&cfg, &t1, frame, 7, sl, 1, one, sizeof one, NULL), 0);
    CHECK (memcmp (one, out + sl * 64, 60) == 0);
  }
  CHECK_EQ (dq_packetize_cpu_range (&cfg, &t, frame, 7, 49, 2, pieces, sizeof pieces, pk), -1);
  CHECK_EQ (dq_packetize_cpu_range (&cfg, &t, frame, 7, 50, 1, pieces, sizeof pieces, pk), -1);
  CHECK_EQ (dq_packetize_cpu_range (&cfg, &t, frame, 7, 0, 0, pieces, sizeof pieces, pk), -1);
  CHECK_EQ (dq_packetize_cpu_range (&cfg, &t, frame, 7, 10, 3, pieces, 2 * 64 + 59, pk), -1);

  /* headers only (two-segment sends): the packets' first 48 bytes, packed 48 apart, equal
   * those of the whole packets; here the 10-byte payload makes 58-byte packets padded to
   * 60, so the packet is not header + payload: refused until the payload is 12 bytes */
  uint8_t heads[50 * 48];
  CHECK_EQ (dq_packetize_split_ok (&cfg, &t), 0);
  CHECK_EQ (dq_packetize_headers_cpu (&cfg, &t, 7, 0, 50, heads, sizeof heads, 48), -1);
  DqReorderConfig c3 = cfg;
  c3.payload_size = 12;
  uint8_t out12[50 * 64], frame12[50 * 12];
  for (int i = 0; i < 50 * 12; i++)
    frame12[i] = (uint8_t) (i * 29 + 5);
  CHECK_EQ (dq_packetize_split_ok (&c3, &t), 1);
  CHECK_EQ (dq_packetize_cpu (&c3, &t, frame12, 9, out12, sizeof out12, NULL), 0);
  memset (heads, 0xee, sizeof heads);
  CHECK_EQ (dq_packetize_headers_cpu (&c3, &t, 9, 0, 50, heads, sizeof heads, 48), 0);
  for (uint32_t sl = 0; sl < 50; sl++)
    CHECK (memcmp (heads + sl * 48, out12 + sl * 64, 48) == 0);
  CHECK_EQ (dq_packetize_headers_cpu (&c3, &t, 9, 10, 5, heads, 4 * 48 + 48, 48), 0);
  CHECK (memcmp (heads, out12 + 10 * 64, 48) == 0);
  CHECK_EQ (dq_packetize_headers_cpu (&c3, &t, 9, 10, 5, heads, 4 * 48 + 47, 48), -1);
  CHECK_EQ (dq_packetize_headers_cpu (&c3, &t, 9, 48, 3, heads, sizeof heads, 48), -1);
  CHECK_EQ (dq_packetize_headers_cpu (&c3, &t, 9, 0, 5, heads, sizeof heads, 47), -1);
  /* a sequence field after the payload cannot go in the header */
  c3.seq_bit_offset = 60 * 8;
  CHECK_EQ (dq_packetize_validate (&c3, &t, msg, sizeof msg), 0);
  CHECK_EQ (dq_packetize_split_ok (&c3, &t), 0);
}

int
main (void)
{
  test_bits_vectors ();
  test_unit_quot ();
  test_seq_batch_vector ();
  test_ppb4_vector ();
  test_int_vectors ();
  test_fp_vectors ();
  test_rounding_exhaustive ();
  test_conversion_matrix ();
  test_validation ();
  test_loss_push ();
  test_duplicates ();
  test_late ();
  test_two_pass ();
  test_short_malformed ();
  test_timeout_flush ();
  test_flush_all_reset ();
  test_no_frame ();
  test_unwrap_d1 ();
  test_seq_wrap ();
  test_field_wrap ();
  test_random_tame ();
  test_random_wild ();
  test_gather ();
  test_packetize_roundtrip ();
  return dq_test_summary ("test-reorder-cpu");
}
