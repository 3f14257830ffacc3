/* reorder-priv.h — helpers shared by the CPU twin (C) and the kernels (CUDA): the same source
 * decides bit fields, unwrapping and element decoding on both sides. Internal to cuda/. */
#ifndef DAQIRI_REORDER_PRIV_H
#define DAQIRI_REORDER_PRIV_H

#include <stdint.h>
#include "daqiri-reorder.h"

#ifdef __CUDACC__
#define DQ_HD __host__ __device__ __forceinline__
#else
#define DQ_HD static inline
#endif

/* Element sizes in bits (0 for SAME). */
DQ_HD uint32_t
dq_elem_bits (uint32_t t)
{
  switch (t) {
    case DQ_ELEM_INT4: return 4;
    case DQ_ELEM_INT8: return 8;
    case DQ_ELEM_INT16:
    case DQ_ELEM_FP16:
    case DQ_ELEM_BF16: return 16;
    case DQ_ELEM_INT32:
    case DQ_ELEM_FP32: return 32;
    case DQ_ELEM_FP64: return 64;
    default: return 0;
  }
}

/* u / d by one multiply-high, for the kernels' flat ranges of 16-byte units (a division by a
 * run-time divisor is some twenty instructions a unit): with inv = ceil (2^32 / d),
 * floor (u * inv / 2^32) == u / d for 2 <= d <= 256 and u < 2^17, since u * inv / 2^32 exceeds
 * u / d by less than u / 2^32 < 1 / d while the fraction of u / d is at most 1 - 1 / d.
 * test-reorder-cpu checks every such d and u. */
DQ_HD uint32_t
dq_unit_inv (uint32_t d)
{
  return 0xffffffffu / d + 1;
}

DQ_HD uint32_t
dq_unit_quot (uint32_t u, uint32_t inv)
{
  return (uint32_t) (((uint64_t) u * inv) >> 32);
}

/* Bytes [bit_offset / 8, (bit_offset + width + 7) / 8) must be readable. width 1..32. */
DQ_HD uint32_t
dq_bits_get_raw (const uint8_t *p, uint32_t bit_offset, uint32_t width)
{
  uint32_t first = bit_offset >> 3;
  uint32_t last = (bit_offset + width - 1) >> 3;
  uint64_t acc = 0;
  for (uint32_t b = first; b <= last; b++)
    acc = (acc << 8) | p[b];
  /* acc holds (last - first + 1) bytes; drop the bits after the field, then mask */
  uint32_t tail = (last + 1) * 8 - (bit_offset + width);
  acc >>= tail;
  return (uint32_t) (acc & ((width == 32) ? 0xffffffffull : ((1ull << width) - 1)));
}

/* k's distance from head, less one, for a `bits`-bit value k (bits 1..32; head_lo: the low 32
 * bits of head), sign-extended from `bits` bits in 32-bit arithmetic: the distance lies in
 * (-2^(bits-1), 2^(bits-1)]. */
DQ_HD int32_t
dq_unwrap_d1 (uint32_t k, uint32_t head_lo, uint32_t bits)
{
  const uint32_t s = 32 - bits;
  return (int32_t) ((k - head_lo - 1u) << s) >> s;
}

/* Unwrap a `bits`-bit value k to the 64-bit value nearest head: head + d, d in (-2^(b-1), 2^(b-1)]. */
DQ_HD int64_t
dq_unwrap (uint32_t k, int64_t head, uint32_t bits)
{
  return head + dq_unwrap_d1 (k, (uint32_t) head, bits) + 1;
}

/* Element e of an input payload as int32 (the payload holds at least the element's bytes). */
DQ_HD int32_t
dq_decode_elem (const uint8_t *src, uint32_t e, uint32_t in_type, uint32_t network)
{
  switch (in_type) {
    case DQ_ELEM_INT4: {
      uint32_t b = src[e >> 1];
      uint32_t n = (e & 1) ? (b & 0xf) : (b >> 4);
      return (n & 8) ? (int32_t) (n | 0xfffffff0u) : (int32_t) n;
    }
    case DQ_ELEM_INT8: return (int32_t) (int8_t) src[e];
    case DQ_ELEM_INT16: {
      uint32_t b0 = src[2 * e], b1 = src[2 * e + 1];
      uint32_t v = network ? ((b0 << 8) | b1) : ((b1 << 8) | b0);
      return (int32_t) (int16_t) (uint16_t) v;
    }
    case DQ_ELEM_INT32: {
      const uint8_t *q = src + 4 * (size_t) e;
      uint32_t v = network
          ? (((uint32_t) q[0] << 24) | ((uint32_t) q[1] << 16) | ((uint32_t) q[2] << 8) | q[3])
          : (((uint32_t) q[3] << 24) | ((uint32_t) q[2] << 16) | ((uint32_t) q[1] << 8) | q[0]);
      return (int32_t) v;
    }
    default: return 0;
  }
}

/* Number of input elements in `len` payload bytes. */
DQ_HD uint32_t
dq_elem_count (uint32_t in_type, uint32_t len)
{
  const uint32_t bytes = dq_elem_bits (in_type) / 8;
  return in_type == DQ_ELEM_INT4 ? 2 * len : bytes ? len / bytes : 0;
}

/* One 10-bit 4:2:2 pgroup (5 bytes, big-endian, MSB first; daqiri-reorder.h) into its four
 * samples: c[0] = Cb, c[1] = Y0, c[2] = Cr, c[3] = Y1. */
DQ_HD void
dq_uyvp_pgroup (const uint8_t *p, uint32_t c[4])
{
  const uint32_t b0 = p[0], b1 = p[1], b2 = p[2], b3 = p[3], b4 = p[4];
  c[0] = (b0 << 2) | (b1 >> 6);
  c[1] = ((b1 & 0x3fu) << 4) | (b2 >> 4);
  c[2] = ((b2 & 0x0fu) << 6) | (b3 >> 2);
  c[3] = ((b3 & 0x03u) << 8) | b4;
}

/* Per-batch state shared by both implementations' reasoning (not memory layout). */
enum {
  DQ_PKT_SHORT = 0,
  DQ_PKT_LATE = 1,
  DQ_PKT_PLACED = 2,   /* in the window at burst start */
  DQ_PKT_DEFERRED = 3, /* beyond it (or the first burst): handled in arrival order after */
};

#include <stddef.h>
#ifdef __cplusplus
extern "C"
#endif
    /* snprintf into msg (if any); returns -1 */
    int
    dq_set_msg (char *msg, size_t len, const char *fmt, ...)
        __attribute__ ((format (printf, 3, 4)));

#endif /* DAQIRI_REORDER_PRIV_H */
