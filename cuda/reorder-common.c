/* reorder-common.c — configuration, sizes, bit fields and scalar conversions (CPU and GPU builds
 * share it). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "reorder-priv.h"

void
dq_reorder_config_init (DqReorderConfig *cfg)
{
  memset (cfg, 0, sizeof *cfg);
  cfg->seq_bit_offset = 0;
  cfg->seq_bit_width = 32;
  cfg->batch_bit_width = 0;
  cfg->packets_per_batch = 1;
  cfg->payload_offset = 4;
  cfg->payload_size = 1;
  cfg->input_type = DQ_ELEM_SAME;
  cfg->output_type = DQ_ELEM_SAME;
  cfg->byte_order = DQ_BYTE_ORDER_HOST;
  cfg->window = 0;
}

const char *
dq_elem_type_name (DqElemType t)
{
  switch (t) {
    case DQ_ELEM_SAME: return "same";
    case DQ_ELEM_INT4: return "int4";
    case DQ_ELEM_INT8: return "int8";
    case DQ_ELEM_INT16: return "int16";
    case DQ_ELEM_INT32: return "int32";
    case DQ_ELEM_FP16: return "fp16";
    case DQ_ELEM_BF16: return "bf16";
    case DQ_ELEM_FP32: return "fp32";
    case DQ_ELEM_FP64: return "fp64";
    default: return "unknown";
  }
}

int
dq_set_msg (char *msg, size_t len, const char *fmt, ...)
{
  if (msg && len) {
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (msg, len, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized): va_start above
    va_end (ap);
  }
  return -1;
}

int
dq_reorder_converts (const DqReorderConfig *cfg)
{
  if (cfg->input_type == DQ_ELEM_SAME || cfg->output_type == DQ_ELEM_SAME)
    return 0;
  /* int32 -> int32 in host order changes nothing: a copy (as the reference decides) */
  if (cfg->input_type == DQ_ELEM_INT32 && cfg->output_type == DQ_ELEM_INT32 &&
      cfg->byte_order == DQ_BYTE_ORDER_HOST)
    return 0;
  return 1;
}

uint32_t
dq_reorder_output_payload_size (const DqReorderConfig *cfg)
{
  if (!dq_reorder_converts (cfg))
    return cfg->payload_size;
  return dq_elem_count (cfg->input_type, cfg->payload_size) * (dq_elem_bits (cfg->output_type) / 8);
}

uint64_t
dq_reorder_frame_size (const DqReorderConfig *cfg)
{
  return (uint64_t) cfg->packets_per_batch * dq_reorder_output_payload_size (cfg);
}

static uint32_t
field_end_bytes (uint32_t bit_offset, uint32_t width)
{
  return width ? (uint32_t) (((uint64_t) bit_offset + width + 7) / 8) : 0;
}

uint32_t
dq_reorder_min_packet_length (const DqReorderConfig *cfg)
{
  uint32_t need = cfg->payload_offset + cfg->payload_size;
  uint32_t s = field_end_bytes (cfg->seq_bit_offset, cfg->seq_bit_width);
  uint32_t b = field_end_bytes (cfg->batch_bit_offset, cfg->batch_bit_width);
  if (s > need)
    need = s;
  if (b > need)
    need = b;
  return need;
}

/* The window must be small enough that a packet anywhere in it unwraps to its own batch: with a
 * batch field, window <= 2^(bits-1) ids; without, window * ppb <= 2^(seq bits - 1) sequence
 * numbers. At least 1 either way. */
uint32_t
dq_reorder_max_window (const DqReorderConfig *cfg)
{
  uint64_t lim;
  if (cfg->batch_bit_width)
    lim = 1ull << (cfg->batch_bit_width - 1);
  else
    lim =
        (1ull << (cfg->seq_bit_width - 1)) / (cfg->packets_per_batch ? cfg->packets_per_batch : 1);
  if (lim > DQ_REORDER_MAX_WINDOW)
    lim = DQ_REORDER_MAX_WINDOW;
  return lim ? (uint32_t) lim : 1;
}

uint32_t
dq_reorder_window (const DqReorderConfig *cfg)
{
  uint32_t max = dq_reorder_max_window (cfg);
  if (cfg->window)
    return cfg->window;
  return max < 4 ? max : 4;
}

static int
valid_input (uint32_t t)
{
  return t == DQ_ELEM_SAME || t == DQ_ELEM_INT4 || t == DQ_ELEM_INT8 || t == DQ_ELEM_INT16 ||
      t == DQ_ELEM_INT32;
}

static int
valid_output (uint32_t t)
{
  return t == DQ_ELEM_SAME || t == DQ_ELEM_FP16 || t == DQ_ELEM_BF16 || t == DQ_ELEM_FP32 ||
      t == DQ_ELEM_FP64 || t == DQ_ELEM_INT32;
}

int
dq_reorder_config_validate (const DqReorderConfig *cfg, char *msg, size_t len)
{
  const uint64_t max_bits = (uint64_t) DQ_REORDER_MAX_FRAME_BYTES * 8;

  if (!cfg)
    return dq_set_msg (msg, len, "no configuration given");
  if (cfg->seq_bit_width < 1 || cfg->seq_bit_width > 32)
    return dq_set_msg (msg, len, "seq-bits is %u; allowed: 1..32", cfg->seq_bit_width);
  if ((uint64_t) cfg->seq_bit_offset + cfg->seq_bit_width > max_bits)
    return dq_set_msg (msg, len,
        "the sequence field (bit %u, %u bits) ends past byte %u of the packet", cfg->seq_bit_offset,
        cfg->seq_bit_width, DQ_REORDER_MAX_FRAME_BYTES);
  if (cfg->batch_bit_width > 32)
    return dq_set_msg (
        msg, len, "batch-bits is %u; allowed: 0 (no batch field) or 1..32", cfg->batch_bit_width);
  if (cfg->batch_bit_width && (uint64_t) cfg->batch_bit_offset + cfg->batch_bit_width > max_bits)
    return dq_set_msg (msg, len,
        "the batch field (bit %u, %u bits) ends past byte %u of the packet", cfg->batch_bit_offset,
        cfg->batch_bit_width, DQ_REORDER_MAX_FRAME_BYTES);
  if (cfg->packets_per_batch < 1 || cfg->packets_per_batch > DQ_REORDER_MAX_PPB)
    return dq_set_msg (msg, len, "packets-per-batch is %u; allowed: 1..%u", cfg->packets_per_batch,
        DQ_REORDER_MAX_PPB);
  if (cfg->batch_bit_width && cfg->seq_bit_width < 32 &&
      cfg->packets_per_batch > (1u << cfg->seq_bit_width))
    return dq_set_msg (msg, len,
        "packets-per-batch %u exceeds the %u sequence numbers of a %u-bit "
        "sequence field, so no batch could ever complete",
        cfg->packets_per_batch, 1u << cfg->seq_bit_width, cfg->seq_bit_width);
  /* without a batch field a packet's sequence number unwraps to its batch only while a batch
   * spans at most half the sequence numbers (see dq_reorder_max_window) */
  if (!cfg->batch_bit_width && cfg->seq_bit_width < 32 &&
      cfg->packets_per_batch > (1u << (cfg->seq_bit_width - 1)))
    return dq_set_msg (msg, len,
        "packets-per-batch %u exceeds half the %u sequence numbers of a "
        "%u-bit sequence field without a batch field (batch-bits 0), so no batch could ever "
        "complete; allowed: packets-per-batch 1..%u, or a batch field (batch-bits)",
        cfg->packets_per_batch, 1u << cfg->seq_bit_width, cfg->seq_bit_width,
        1u << (cfg->seq_bit_width - 1));
  if (cfg->payload_size < 1)
    return dq_set_msg (msg, len, "payload-size is 0; allowed: 1..%u", DQ_REORDER_MAX_FRAME_BYTES);
  if ((uint64_t) cfg->payload_offset + cfg->payload_size > DQ_REORDER_MAX_FRAME_BYTES)
    return dq_set_msg (msg, len, "payload-offset %u + payload-size %u exceeds %u bytes",
        cfg->payload_offset, cfg->payload_size, DQ_REORDER_MAX_FRAME_BYTES);
  if (!valid_input (cfg->input_type))
    return dq_set_msg (msg, len,
        "input type %d (%s) is not an input type; allowed: same, int4, int8, "
        "int16, int32",
        (int) cfg->input_type, dq_elem_type_name (cfg->input_type));
  if (!valid_output (cfg->output_type))
    return dq_set_msg (msg, len,
        "output type %d (%s) is not an output type; allowed: same, fp16, bf16, "
        "fp32, fp64, int32",
        (int) cfg->output_type, dq_elem_type_name (cfg->output_type));
  if ((cfg->input_type == DQ_ELEM_SAME) != (cfg->output_type == DQ_ELEM_SAME))
    return dq_set_msg (msg, len,
        "input type %s with output type %s: set both to same (copy the "
        "payload) or both to element types (convert)",
        dq_elem_type_name (cfg->input_type), dq_elem_type_name (cfg->output_type));
  if (cfg->byte_order != DQ_BYTE_ORDER_HOST && cfg->byte_order != DQ_BYTE_ORDER_NETWORK)
    return dq_set_msg (msg, len, "byte order %d; allowed: 0 (host, little-endian), 1 (network)",
        (int) cfg->byte_order);
  if (dq_reorder_output_payload_size (cfg) == 0)
    return dq_set_msg (msg, len, "payload-size %u holds no %s element", cfg->payload_size,
        dq_elem_type_name (cfg->input_type));
  if (dq_reorder_frame_size (cfg) > (1ull << 40))
    return dq_set_msg (msg, len, "a frame of %u packets of %u bytes is larger than 1 TiB",
        cfg->packets_per_batch, dq_reorder_output_payload_size (cfg));
  if (cfg->window > dq_reorder_max_window (cfg))
    return dq_set_msg (msg, len, "window %u is too large: at most %u batches (%s)", cfg->window,
        dq_reorder_max_window (cfg),
        cfg->batch_bit_width
            ? "half the ids of the batch field, and 64"
            : "window * packets-per-batch must be at most half the sequence numbers, and 64");
  return 0;
}

uint32_t
dq_bits_get (const uint8_t *p, uint32_t bit_offset, uint32_t width)
{
  return dq_bits_get_raw (p, bit_offset, width);
}

void
dq_bits_set (uint8_t *p, uint32_t bit_offset, uint32_t width, uint32_t value)
{
  for (uint32_t i = 0; i < width; i++) {
    uint32_t bit = bit_offset + i;
    uint32_t v = (value >> (width - 1 - i)) & 1;
    uint8_t mask = (uint8_t) (0x80u >> (bit & 7));
    if (v)
      p[bit >> 3] |= mask;
    else
      p[bit >> 3] &= (uint8_t) ~mask;
  }
}

static uint32_t
rne_shift (uint32_t m, uint32_t s)
{
  /* m >> s rounded to nearest, ties to even; s in 1..31 */
  uint32_t q = m >> s;
  uint32_t r = m & ((1u << s) - 1);
  uint32_t half = 1u << (s - 1);
  if (r > half || (r == half && (q & 1)))
    q++;
  return q;
}

uint16_t
dq_float_to_half_rn (float f)
{
  uint32_t x;
  memcpy (&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;

  if (exp == 0xff) /* inf stays inf; NaN -> canonical NaN */
    return (uint16_t) (mant ? 0x7fffu : (sign | 0x7c00u));
  if (exp > 142) /* >= 2^16: beyond fp16 even before rounding */
    return (uint16_t) (sign | 0x7c00u);
  if (exp >= 113) { /* normal fp16 range (before rounding) */
    uint32_t m = ((exp - 112) << 10) | (mant >> 13);
    uint32_t r = mant & 0x1fffu;
    if (r > 0x1000u || (r == 0x1000u && (m & 1)))
      m++; /* may carry into the exponent, up to 0x7c00 = inf */
    return (uint16_t) (sign | m);
  }
  /* subnormal fp16 (or zero): value = (mant | 1 << 23) * 2^(exp - 150) = h * 2^-24 */
  if (exp == 0)
    return (uint16_t) sign; /* float zero or float subnormal (< 2^-126) -> 0 */
  uint32_t s = 126 - exp;   /* >= 14 */
  if (s > 24)
    return (uint16_t) sign;
  return (uint16_t) (sign | rne_shift (mant | 0x800000u, s));
}

uint16_t
dq_float_to_bf16_rn (float f)
{
  uint32_t x;
  memcpy (&x, &f, sizeof x);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return 0x7fffu;
  x += 0x7fffu + ((x >> 16) & 1);
  return (uint16_t) (x >> 16);
}

/* ---- 10-bit 4:2:2 pgroups (daqiri-reorder.h) ---- */

uint64_t
dq_uyvp_picture_size (uint32_t width, uint32_t height)
{
  return (uint64_t) (width / 2) * 5u * height;
}

int
dq_unpack_uyvp_validate (uint32_t width, uint32_t height, size_t y_pitch, size_t u_pitch,
    size_t v_pitch, char *msg, size_t len)
{
  if (width & 1u)
    return dq_set_msg (msg, len,
        "width %u is odd: 10-bit 4:2:2 pgroups carry 2 pixels each; "
        "allowed: even widths",
        width);
  if (width == 0 || height == 0)
    return 0;
  /* a row of samples is 2 bytes each: width of them in Y, width / 2 in U and V */
  const uint64_t y_row = 2ull * width, c_row = width;
  if (y_pitch < y_row)
    return dq_set_msg (msg, len,
        "the Y pitch of %zu bytes is smaller than a row of %u 16-bit "
        "samples (%llu bytes)",
        y_pitch, width, (unsigned long long) y_row);
  if (u_pitch < c_row || v_pitch < c_row)
    return dq_set_msg (msg, len,
        "the %s pitch of %zu bytes is smaller than a row of %u 16-bit "
        "samples (%llu bytes)",
        u_pitch < c_row ? "U" : "V", u_pitch < c_row ? u_pitch : v_pitch, width / 2,
        (unsigned long long) c_row);
  return 0;
}
