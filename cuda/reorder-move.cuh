/* reorder-move.cuh — the payload movers of the reorder kernels: team copy and zero-fill, and the
 * flat movers (copy, conversions) that K1's blocks, the tail and gather run over a list of jobs.
 * Part of reorder-kernels.cuh, included there only, inside namespace dqk (it uses its Params and
 * small helpers). */

/* ---- team data movement ------------------------------------------------------------------ */

__device__ __forceinline__ uint4
shift_combine (uint4 a, uint4 b, uint32_t off)
{
  /* bytes [off, off + 16) of the 32 bytes a:b (little-endian words) */
  uint32_t w[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
  uint32_t r = (off & 3) * 8;
  uint4 o;
  switch (off >> 2) {
    case 0:
      o.x = __funnelshift_r (w[0], w[1], r); o.y = __funnelshift_r (w[1], w[2], r);
      o.z = __funnelshift_r (w[2], w[3], r); o.w = __funnelshift_r (w[3], w[4], r);
      break;
    case 1:
      o.x = __funnelshift_r (w[1], w[2], r); o.y = __funnelshift_r (w[2], w[3], r);
      o.z = __funnelshift_r (w[3], w[4], r); o.w = __funnelshift_r (w[4], w[5], r);
      break;
    case 2:
      o.x = __funnelshift_r (w[2], w[3], r); o.y = __funnelshift_r (w[3], w[4], r);
      o.z = __funnelshift_r (w[4], w[5], r); o.w = __funnelshift_r (w[5], w[6], r);
      break;
    default:
      o.x = __funnelshift_r (w[3], w[4], r); o.y = __funnelshift_r (w[4], w[5], r);
      o.z = __funnelshift_r (w[5], w[6], r); o.w = __funnelshift_r (w[6], w[7], r);
      break;
  }
  return o;
}

/* Copy len bytes src -> dst with `lanes` cooperating threads. Reads stay inside [lo, hi), which
 * holds [src, src + len): 16-byte aligned loads only where the whole 16 (or 32) bytes lie inside
 * it, single bytes elsewhere. Stores are 16-byte wherever dst allows. */
__device__ void
team_copy (uint8_t *__restrict__ dst, const uint8_t *__restrict__ src, uint32_t len,
    const uint8_t *lo, const uint8_t *hi, uint32_t lane, uint32_t lanes)
{
  uint32_t head = (uint32_t) ((16 - ((uintptr_t) dst & 15)) & 15);
  if (head > len)
    head = len;
  for (uint32_t i = lane; i < head; i += lanes)
    dst[i] = src[i];
  dst += head;
  src += head;
  len -= head;
  const uint32_t nchunk = len >> 4;
  const uint32_t a = (uint32_t) ((uintptr_t) src & 15);
  uint4 *d4 = (uint4 *) dst;
  constexpr int U = 4;
  if (a == 0) {
    const uint4 *s4 = (const uint4 *) src;
    for (uint32_t base = lane; base < nchunk; base += lanes * U) {
      uint4 v[U];
DQ_UNROLL
      for (int k = 0; k < U; k++) {
        uint32_t c = base + k * lanes;
        if (c < nchunk)
          v[k] = __ldg (s4 + c);
      }
DQ_UNROLL
      for (int k = 0; k < U; k++) {
        uint32_t c = base + k * lanes;
        if (c < nchunk)
          d4[c] = v[k];
      }
    }
  } else {
    const uint4 *S = (const uint4 *) (src - a);
    for (uint32_t base = lane; base < nchunk; base += lanes * U) {
      uint4 v[U];
DQ_UNROLL
      for (int k = 0; k < U; k++) {
        uint32_t c = base + k * lanes;
        if (c < nchunk) {
          const uint8_t *w0 = (const uint8_t *) (S + c);
          if (w0 >= lo && w0 + 32 <= hi) {
            v[k] = shift_combine (__ldg (S + c), __ldg (S + c + 1), a);
          } else {
            uint8_t b[16];
DQ_UNROLL
            for (int j = 0; j < 16; j++)
              b[j] = src[16 * c + j];
            memcpy (&v[k], b, 16);
          }
        }
      }
DQ_UNROLL
      for (int k = 0; k < U; k++) {
        uint32_t c = base + k * lanes;
        if (c < nchunk)
          d4[c] = v[k];
      }
    }
  }
  for (uint32_t i = nchunk * 16 + lane; i < len; i += lanes)
    dst[i] = src[i];
}

__device__ void
team_zero (uint8_t *dst, uint32_t len, uint32_t lane, uint32_t lanes)
{
  uint32_t head = (uint32_t) ((16 - ((uintptr_t) dst & 15)) & 15);
  if (head > len)
    head = len;
  for (uint32_t i = lane; i < head; i += lanes)
    dst[i] = 0;
  dst += head;
  len -= head;
  uint32_t nchunk = len >> 4;
  uint4 *d4 = (uint4 *) dst;
  for (uint32_t c = lane; c < nchunk; c += lanes)
    d4[c] = make_uint4 (0, 0, 0, 0);
  for (uint32_t i = nchunk * 16 + lane; i < len; i += lanes)
    dst[i] = 0;
}

/* Read nb (<= 32) bytes at p into little-endian words: one 16-byte load for 16 aligned bytes,
 * else aligned word loads where [p & ~3, +36) lies inside [lo, hi), bytes otherwise. */
template <int NB>
__device__ __forceinline__ void
load_bytes (uint32_t (&w)[(NB + 3) / 4], const uint8_t *p, const uint8_t *lo, const uint8_t *hi)
{
  constexpr int NW = (NB + 3) / 4;
  if constexpr (NB == 16) {
    /* one 16-byte load where p allows it (16-bit elements: the common case) */
    if (((uintptr_t) p & 15) == 0) {
      const uint4 v = __ldg ((const uint4 *) p);
      w[0] = v.x;
      w[1] = v.y;
      w[2] = v.z;
      w[3] = v.w;
      return;
    }
  }
  const uint32_t *base = (const uint32_t *) ((uintptr_t) p & ~(uintptr_t) 3);
  const uint32_t sh = (uint32_t) ((uintptr_t) p & 3) * 8;
  if ((const uint8_t *) base >= lo && (const uint8_t *) (base + NW + 1) <= hi) {
    uint32_t r[NW + 1];
DQ_UNROLL
    for (int k = 0; k <= NW; k++)
      r[k] = __ldg (base + k);
DQ_UNROLL
    for (int k = 0; k < NW; k++)
      w[k] = __funnelshift_r (r[k], r[k + 1], sh);
  } else {
DQ_UNROLL
    for (int k = 0; k < NW; k++) {
      uint32_t v = 0;
DQ_UNROLL
      for (int j = 0; j < 4; j++)
        if (4 * k + j < NB)
          v |= (uint32_t) p[4 * k + j] << (8 * j);
      w[k] = v;
    }
  }
}

template <int IN>
__device__ __forceinline__ int32_t
elem_from_words (const uint32_t *w, int e, uint32_t network)
{
  if (IN == DQ_ELEM_INT4) {
    uint32_t byte = (w[e >> 3] >> (((e >> 1) & 3) * 8)) & 0xffu;
    uint32_t n = (e & 1) ? (byte & 0xfu) : (byte >> 4);
    return (int32_t) (n << 28) >> 28;
  } else if (IN == DQ_ELEM_INT8) {
    return (int32_t) (int8_t) ((w[e >> 2] >> ((e & 3) * 8)) & 0xffu);
  } else if (IN == DQ_ELEM_INT16) {
    uint32_t v = (w[e >> 1] >> ((e & 1) * 16)) & 0xffffu;
    if (network)
      v = ((v & 0xffu) << 8) | (v >> 8);
    return (int32_t) (int16_t) (uint16_t) v;
  } else {
    uint32_t v = w[e];
    return (int32_t) (network ? __byte_perm (v, 0, 0x0123) : v);
  }
}

template <int OUT> struct OutT;
template <> struct OutT<DQ_ELEM_FP16> { static constexpr int size = 2; };
template <> struct OutT<DQ_ELEM_BF16> { static constexpr int size = 2; };
template <> struct OutT<DQ_ELEM_FP32> { static constexpr int size = 4; };
template <> struct OutT<DQ_ELEM_FP64> { static constexpr int size = 8; };
template <> struct OutT<DQ_ELEM_INT32> { static constexpr int size = 4; };

template <int OUT>
__device__ __forceinline__ uint64_t
encode (int32_t v)
{
  if (OUT == DQ_ELEM_FP16)
    return __half_as_ushort (__float2half_rn (__int2float_rn (v)));
  else if (OUT == DQ_ELEM_BF16)
    return __bfloat16_as_ushort (__float2bfloat16_rn (__int2float_rn (v)));
  else if (OUT == DQ_ELEM_FP32)
    return __float_as_uint (__int2float_rn (v));
  else if (OUT == DQ_ELEM_FP64)
    return (uint64_t) __double_as_longlong (__int2double_rn (v));
  else
    return (uint32_t) v;
}

template <int OUT>
__device__ __forceinline__ void
store_elem (uint8_t *dst, uint64_t bits)
{
  if (OUT == DQ_ELEM_FP16 || OUT == DQ_ELEM_BF16)
    *(uint16_t *) dst = (uint16_t) bits;
  else if (OUT == DQ_ELEM_FP64)
    *(uint64_t *) dst = bits;
  else
    *(uint32_t *) dst = (uint32_t) bits;
}

/* ---- flat payload movers ----------------------------------------------------------------- *
 * A batch of packets' payloads is moved as one flat range of units (16 output bytes each) spread
 * over many threads, several loads in flight per thread and across packets: the latency of the
 * per-packet control work is paid once per block, not once per packet. */

/* One packet's payload move: from src (NULL: write zeros), readable [lo, hi), to dst (NULL: none). */
struct Job {
  const uint8_t *src, *lo, *hi;
  uint8_t *dst;
};

__device__ __forceinline__ uint4
load16 (const uint8_t *src, const uint8_t *lo, const uint8_t *hi)
{
  const uint32_t a = (uint32_t) ((uintptr_t) src & 15);
  if (a == 0)
    return __ldg ((const uint4 *) src);
  const uint4 *S = (const uint4 *) (src - a);
  if ((const uint8_t *) S >= lo && (const uint8_t *) (S + 2) <= hi)
    return shift_combine (__ldg (S), __ldg (S + 1), a);
  uint8_t b[16];
DQ_UNROLL
  for (int j = 0; j < 16; j++)
    b[j] = src[j];
  uint4 v;
  memcpy (&v, b, 16);
  return v;
}

/* Copies of L bytes for njobs packets: unit u of the flat range goes to the thread
 * first + k * stride that owns it. */
template <class GetJob>
__device__ void
move_copy (uint32_t L, const GetJob &get, uint32_t njobs, uint32_t first, uint32_t stride)
{
  constexpr int U = 6;              /* units in flight per thread (4: ~10 points less of copy
                                     * bandwidth at 1 KB, with the smaller waves below) */
  const uint32_t upp = (L + 15) >> 4;
  const uint32_t total = njobs * upp;
  for (uint32_t base = first; base < total; base += stride * U) {
    /* per unit only what the store needs: the job is looked up again on the slow path
     * (a payload's last partial unit, or an unaligned destination) */
    uint4 v[U];
    uint8_t *dst[U];
    uint32_t off[U];
    bool fast[U];
DQ_UNROLL
    for (int k = 0; k < U; k++) {
      const uint32_t u = base + k * stride;
      dst[k] = NULL;
      off[k] = 0;
      fast[k] = false;
      v[k] = make_uint4 (0, 0, 0, 0);
      if (u < total) {
        const Job jb = get (u / upp);
        dst[k] = jb.dst;
        off[k] = (u % upp) * 16;
        fast[k] = jb.dst && off[k] + 16 <= L && ((uintptr_t) jb.dst & 15) == 0;
        if (fast[k] && jb.src)
          v[k] = load16 (jb.src + off[k], jb.lo, jb.hi);
      }
    }
DQ_UNROLL
    for (int k = 0; k < U; k++) {
      if (!dst[k])
        continue;
      if (fast[k]) {
        *(uint4 *) (dst[k] + off[k]) = v[k];
        continue;
      }
      const Job jb = get ((base + k * stride) / upp);
      const uint32_t n = L - off[k] < 16 ? L - off[k] : 16;
      for (uint32_t i = 0; i < n; i++)
        dst[k][off[k] + i] = jb.src ? jb.src[off[k] + i] : (uint8_t) 0;
    }
  }
}

/* Conversions of `count` elements per packet: unit = a group of G elements (16 output bytes). */
template <int IN, int OUT, class GetJob>
__device__ void
move_convert (uint32_t count, uint32_t network, const GetJob &get, uint32_t njobs, uint32_t first,
    uint32_t stride)
{
  constexpr int OS = OutT<OUT>::size;
  constexpr int G = 16 / OS;
  constexpr int IB = IN == DQ_ELEM_INT4 ? 4 : IN == DQ_ELEM_INT8 ? 8 : IN == DQ_ELEM_INT16 ? 16 : 32;
  constexpr int NB = G * IB / 8;          /* input bytes per group: 1..32 */
  constexpr int NW = (NB + 3) / 4;
  constexpr int U = 2;
  const uint32_t gpp = (count + G - 1) / G;
  const uint32_t total = njobs * gpp;
  for (uint32_t base = first; base < total; base += stride * U) {
    uint32_t w[U][NW];
    Job jb[U];
    uint32_t g[U];
    bool full[U];
DQ_UNROLL
    for (int k = 0; k < U; k++) {
      const uint32_t u = base + k * stride;
      jb[k] = Job { NULL, NULL, NULL, NULL };
      g[k] = 0;
      full[k] = false;
DQ_UNROLL
      for (int i = 0; i < NW; i++)
        w[k][i] = 0;
      if (u < total) {
        jb[k] = get (u / gpp);
        g[k] = u % gpp;
        full[k] = (g[k] + 1) * G <= count;
        if (jb[k].dst && jb[k].src && full[k])
          load_bytes<NB> (w[k], jb[k].src + (size_t) g[k] * NB, jb[k].lo, jb[k].hi);
      }
    }
DQ_UNROLL
    for (int k = 0; k < U; k++) {
      if (!jb[k].dst)
        continue;
      uint8_t *d = jb[k].dst + (size_t) g[k] * 16;
      if (!full[k]) {
        /* the last partial group, element by element (bytes read exactly) */
        for (uint32_t e = g[k] * G; e < count; e++)
          store_elem<OUT> (jb[k].dst + (size_t) e * OS, jb[k].src
              ? encode<OUT> (dq_decode_elem (jb[k].src, e, IN, network)) : 0);
        continue;
      }
      uint64_t e[G];
DQ_UNROLL
      for (int i = 0; i < G; i++)
        e[i] = jb[k].src ? encode<OUT> (elem_from_words<IN> (w[k], i, network)) : 0;
      if (((uintptr_t) d & 15) == 0) {
        uint4 o;
        if (OS == 2) {
          o.x = (uint32_t) e[0] | (uint32_t) e[1 % G] << 16;
          o.y = (uint32_t) e[2 % G] | (uint32_t) e[3 % G] << 16;
          o.z = (uint32_t) e[4 % G] | (uint32_t) e[5 % G] << 16;
          o.w = (uint32_t) e[6 % G] | (uint32_t) e[7 % G] << 16;
        } else if (OS == 4) {
          o.x = (uint32_t) e[0]; o.y = (uint32_t) e[1 % G]; o.z = (uint32_t) e[2 % G];
          o.w = (uint32_t) e[3 % G];
        } else {
          o.x = (uint32_t) e[0]; o.y = (uint32_t) (e[0] >> 32);
          o.z = (uint32_t) e[1 % G]; o.w = (uint32_t) (e[1 % G] >> 32);
        }
        *(uint4 *) d = o;
      } else {
DQ_UNROLL
        for (int i = 0; i < G; i++)
          store_elem<OUT> (d + i * OS, e[i]);
      }
    }
  }
}

template <int IN, class GetJob>
__device__ void
move_convert_out (const Params &p, uint32_t count, const GetJob &get, uint32_t njobs,
    uint32_t first, uint32_t stride)
{
  switch (p.out_type) {
    case DQ_ELEM_FP16: move_convert<IN, DQ_ELEM_FP16> (count, p.network, get, njobs, first, stride); break;
    case DQ_ELEM_BF16: move_convert<IN, DQ_ELEM_BF16> (count, p.network, get, njobs, first, stride); break;
    case DQ_ELEM_FP32: move_convert<IN, DQ_ELEM_FP32> (count, p.network, get, njobs, first, stride); break;
    case DQ_ELEM_FP64: move_convert<IN, DQ_ELEM_FP64> (count, p.network, get, njobs, first, stride); break;
    default: move_convert<IN, DQ_ELEM_INT32> (count, p.network, get, njobs, first, stride); break;
  }
}

/* Move njobs payloads as the configuration says (copy, or convert). */
template <class GetJob>
__device__ void
move_payloads (const Params &p, const GetJob &get, uint32_t njobs, uint32_t first, uint32_t stride)
{
  if (!p.converts) {
    move_copy (p.lin, get, njobs, first, stride);
    return;
  }
  const uint32_t count = dq_elem_count (p.in_type, p.lin);
  switch (p.in_type) {
    case DQ_ELEM_INT4: move_convert_out<DQ_ELEM_INT4> (p, count, get, njobs, first, stride); break;
    case DQ_ELEM_INT8: move_convert_out<DQ_ELEM_INT8> (p, count, get, njobs, first, stride); break;
    case DQ_ELEM_INT16: move_convert_out<DQ_ELEM_INT16> (p, count, get, njobs, first, stride); break;
    default: move_convert_out<DQ_ELEM_INT32> (p, count, get, njobs, first, stride); break;
  }
}

/* Job sources: a block's shared array, or the finalizer's copy list. */
struct SharedJobs {
  const Job *jobs;
  __device__ Job operator() (uint32_t k) const { return jobs[k]; }
};

struct ItemJobs {
  const CopyItem *items;
  uint32_t pay_off;
  __device__ Job operator() (uint32_t k) const
  {
    const uint8_t *pkt = (const uint8_t *) items[k].pkt;
    return Job { pkt + pay_off, pkt, pkt + items[k].len, (uint8_t *) items[k].dst };
  }
};

/* ---- bulk copies through shared memory (sm_90 on) ------------------------------------------ *
 * K1's block copies large payloads with its SM's copy engine (TMA) instead of its registers:
 * payloads go in pieces into slots of shared memory (cp.async.bulk, completion counted in bytes
 * on one mbarrier per slot), and from each slot to the frame as soon as the piece has landed
 * (a bulk store). Lanes 0 and 1 of every warp issue, each over its own slots and its own share
 * of the pieces (piece c to issuer c mod issuers), so that no issuer's wait for a piece or for
 * its slot to be read holds up the others. H200, side by side with the registers' path
 * (docs/benchmarks.md): 2-8 KiB payloads 5-10 % faster; 1 KiB payloads slower, so the host
 * takes this path from 2 KiB. Bulk copies take 16-byte aligned addresses and sizes only; a block with
 * any other job takes the registers' path. */
#if defined (DQ_CUDA_EMU) || (defined (__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
#define DQ_HAVE_BULK 1
#else
#define DQ_HAVE_BULK 0
#endif

constexpr uint32_t kBulkSlots = 32;         /* at most this many slots */
constexpr uint32_t kBulkPiece = 2048;       /* bytes a slot holds */
constexpr uint32_t kBulkMin = 2048;         /* payloads from this size take the path */

#if DQ_HAVE_BULK
/* The transaction barriers (one arrival a phase) and bulk copies move_bulk uses; the emulator's
 * do the same, late on purpose (cuda-emu.h). */
#ifdef DQ_CUDA_EMU
__device__ __forceinline__ void bar_init (uint64_t *b) { dq_emu_bar_init (b, 1); }
__device__ __forceinline__ void bar_init_done () {}
__device__ __forceinline__ void
bulk_load (void *dst, const void *src, uint32_t n, uint64_t *b)
{
  dq_emu_bulk_load (dst, src, n, b);
}
__device__ __forceinline__ void
bar_wait (uint64_t *b, uint32_t parity)
{
  while (!dq_emu_bar_test (b, parity)) {
  }
}
__device__ __forceinline__ void bulk_store (void *dst, const void *src, uint32_t n)
{
  dq_emu_bulk_store (dst, src, n);
}
__device__ __forceinline__ void bulk_wait_read () { dq_emu_bulk_wait (); }
__device__ __forceinline__ void bulk_wait_all () { dq_emu_bulk_wait (); }
#else
__device__ __forceinline__ uint32_t smem_addr (const void *p)
{
  return (uint32_t) __cvta_generic_to_shared (p);
}
__device__ __forceinline__ void bar_init (uint64_t *b)
{
  asm volatile ("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r" (smem_addr (b)) : "memory");
}
/* the initialized barriers visible to the copy engine's completions */
__device__ __forceinline__ void bar_init_done ()
{
  asm volatile ("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile ("fence.proxy.async.shared::cta;" ::: "memory");
}
/* n bytes global -> shared, counted on b (with this thread's arrival, expecting them) */
__device__ __forceinline__ void
bulk_load (void *dst, const void *src, uint32_t n, uint64_t *b)
{
  const uint32_t ba = smem_addr (b);
  asm volatile ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
      :: "r" (ba), "r" (n) : "memory");
  asm volatile ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1], %2, [%3];"
      :: "r" (smem_addr (dst)), "l" (src), "r" (n), "r" (ba) : "memory");
}
/* until the phase of this parity is complete */
__device__ __forceinline__ void
bar_wait (uint64_t *b, uint32_t parity)
{
  uint32_t ok = 0;
  while (!ok)
    asm volatile ("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;"
        " selp.u32 %0, 1, 0, p; }" : "=r" (ok) : "r" (smem_addr (b)), "r" (parity)
        : "memory");
}
/* n bytes shared -> global, as a group of its own */
__device__ __forceinline__ void
bulk_store (void *dst, const void *src, uint32_t n)
{
  asm volatile ("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
      :: "l" (dst), "r" (smem_addr (src)), "r" (n) : "memory");
  asm volatile ("cp.async.bulk.commit_group;" ::: "memory");
}
/* this thread's stores done reading shared memory */
__device__ __forceinline__ void bulk_wait_read ()
{
  asm volatile ("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
/* this thread's stores complete, and ordered before its later accesses */
__device__ __forceinline__ void bulk_wait_all ()
{
  asm volatile ("cp.async.bulk.wait_group 0;" ::: "memory");
  asm volatile ("fence.proxy.async.global;" ::: "memory");
}
#endif

/* The block's jobs' payloads (L bytes each, L % 16 == 0, every source and destination 16-byte
 * aligned; jobs without a destination skipped) through `stage`: nslots slots of kBulkPiece
 * bytes.
 * Every thread of the block calls it (a barrier inside); the issuers return once their stores
 * are complete and ordered before their later accesses (the caller's barrier then orders them
 * before the block's). */
__device__ void
move_bulk (const Job *jobs, uint32_t njobs, uint32_t L, uint8_t *stage, uint32_t nslots)
{
  constexpr uint32_t piece = kBulkPiece;
  /* one barrier per slot, 16 bytes apart (a barrier alone in its 16 bytes) */
  __shared__ __align__ (16) uint64_t bars[2 * kBulkSlots];
  constexpr uint32_t kPerWarp = 2;
  const uint32_t t = threadIdx.x;
  uint32_t issuers = kPerWarp * (blockDim.x / 32);
  if (issuers > nslots)
    issuers = nslots;
  const uint32_t k = nslots / issuers;           /* an issuer's slots: me * k .. */
  if (t == 0) {
    for (uint32_t s = 0; s < issuers * k; s++)
      bar_init (&bars[2 * s]);
    bar_init_done ();
  }
  __syncthreads ();
  const uint32_t me = (t >> 5) * kPerWarp + (t & 31);
  if ((t & 31) >= kPerWarp || me >= issuers)
    return;
  const uint32_t per_job = (L + piece - 1) / piece;
  const uint32_t total = njobs * per_job;
  auto skip = [&] (uint32_t &c) {
    while (c < total && !jobs[c / per_job].dst)
      c += issuers;
  };
  uint32_t lc = me, sc = me;                    /* the next piece to load, to store */
  skip (lc);
  skip (sc);
  uint32_t loaded = 0;
  auto load = [&] () {
    const uint32_t s = me * k + loaded % k;
    const uint32_t o = (lc % per_job) * piece, n = L - o < piece ? L - o : piece;
    bulk_load (stage + (size_t) s * piece, jobs[lc / per_job].src + o, n, &bars[2 * s]);
    lc += issuers;
    skip (lc);
    loaded++;
  };
  while (loaded < k && lc < total)
    load ();
  for (uint32_t done = 0; done < loaded; done++) {
    const uint32_t s = me * k + done % k;
    bar_wait (&bars[2 * s], (done / k) & 1);
    const uint32_t o = (sc % per_job) * piece, n = L - o < piece ? L - o : piece;
    bulk_store (jobs[sc / per_job].dst + o, stage + (size_t) s * piece, n);
    sc += issuers;
    skip (sc);
    if (lc < total) {
      /* the slot is free again once that store has read it */
      bulk_wait_read ();
      load ();
    }
  }
  bulk_wait_all ();
}
#endif

/* ---- asynchronous 16-byte copies through shared memory (sm_80 on) --------------------------- *
 * For plain copies from kAsyncMin up to kBulkMin (where the host gives K1 the shared memory:
 * sm_90 on, as for the bulk copies), K1's threads take the registers' flat range
 * (unit u to thread u mod kThreads) but load their units into shared memory with cp.async
 * instead of into registers: kAsyncRounds rounds of kAsyncUnits units a thread in flight, none
 * of them holding a register, each round its own commit group. A thread stores only what it
 * loaded itself, once wait_group says that round has landed, and loads a later round into the
 * same place only after that store took the bytes: no barrier between threads. H200, side by
 * side with the registers' path (docs/benchmarks.md): 1 KiB x 16384 3-4 % faster without early
 * start, 9-10 % with it (reorder.cu), 512 B x 16384 7 %; 512 B x 65536 within a few % either way.
 * Same conditions as the bulk copies: every source and destination 16-byte aligned, sizes in
 * whole units. */
#if defined (DQ_CUDA_EMU) || (defined (__CUDA_ARCH__) && __CUDA_ARCH__ >= 800)
#define DQ_HAVE_ASYNC 1
#else
#define DQ_HAVE_ASYNC 0
#endif

constexpr uint32_t kAsyncUnits = 2;         /* units a thread loads in a round */
constexpr uint32_t kAsyncRounds = 4;        /* rounds in flight (H200, docs/benchmarks.md:
                                             * with six, 1 KiB x 16384 2-3 % slower and
                                             * 1 KiB x 65536 no faster) */
constexpr uint32_t kAsyncMin = 512;         /* payloads from this size take the path */
constexpr uint32_t kAsyncStage = kAsyncRounds * kAsyncUnits * kThreads * 16;  /* bytes */

#if DQ_HAVE_ASYNC
#ifdef DQ_CUDA_EMU
__device__ __forceinline__ void
async_load16 (void *dst, const void *src)
{
  dq_emu_async_copy (dst, src, 16);
}
__device__ __forceinline__ void async_commit () { dq_emu_async_commit (); }
template <int N>
__device__ __forceinline__ void async_wait () { dq_emu_async_wait (N); }
#else
/* 16 bytes global -> shared, in L2 only (.cg) */
__device__ __forceinline__ void
async_load16 (void *dst, const void *src)
{
  asm volatile ("cp.async.cg.shared.global [%0], [%1], 16;"
      :: "r" ((uint32_t) __cvta_generic_to_shared (dst)), "l" (src) : "memory");
}
__device__ __forceinline__ void
async_commit ()
{
  asm volatile ("cp.async.commit_group;" ::: "memory");
}
/* until at most N of this thread's groups are still in flight */
template <int N>
__device__ __forceinline__ void
async_wait ()
{
  asm volatile ("cp.async.wait_group %0;" :: "n" (N) : "memory");
}
#endif

/* Thread t's units of round r in move_async (u = (r * kAsyncUnits + k) * kThreads + t, those
 * below total; upp units a job, inv = dq_unit_inv (upp)): f (k, jobs[j], u, j), j the unit's
 * job. f computes the unit's offset in its job, u - j * upp, itself, inside its checks of the
 * job: there it compiles as with the loop written out in each (the same PTX). */
template <class F>
__device__ __forceinline__ void
each_round_unit (const Job *jobs, uint32_t r, uint32_t t, uint32_t total, uint32_t inv, F f)
{
DQ_UNROLL
  for (uint32_t k = 0; k < kAsyncUnits; k++) {
    const uint32_t u = (r * kAsyncUnits + k) * kThreads + t;
    if (u < total) {
      const uint32_t j = dq_unit_quot (u, inv);
      f (k, jobs[j], u, j);
    }
  }
}

/* The block's jobs' payloads (L bytes each, L % 16 == 0, every source and destination 16-byte
 * aligned; jobs without a destination skipped, without a source zero-filled), each thread over
 * its units u = t + i * kThreads, through `stage` (kAsyncStage bytes: a thread's place for
 * unit k of round r at ((r % kAsyncRounds) * kAsyncUnits + k) * kThreads + t, so that a warp's
 * places are consecutive). A unit's job by dq_unit_quot (L from kAsyncMin to
 * kBulkMin: 32..127 units a job, at most kThreads jobs, so u < 2^15): this loop issues about as
 * many instructions as it moves units, and a division each would be most of them (H200,
 * docs/benchmarks.md: 1 KiB x 65536 1-2 % faster, 512 B x 65536 3-5 %). */
__device__ void
move_async (const Job *jobs, uint32_t njobs, uint32_t L, uint8_t *stage)
{
  constexpr uint32_t U = kAsyncUnits, R = kAsyncRounds;
  const uint32_t t = threadIdx.x;
  const uint32_t upp = L >> 4, inv = dq_unit_inv (upp);
  const uint32_t total = njobs * upp;
  const uint32_t per_round = U * kThreads;
  const uint32_t rounds = (total + per_round - 1) / per_round;
  uint4 *const place = (uint4 *) stage + t;
  /* round r, unit k: u = (r * U + k) * kThreads + t, in place (r % R * U + k) * kThreads */
  auto issue = [&] (uint32_t r) {
    each_round_unit (jobs, r, t, total, inv,
        [&] (uint32_t k, const Job &jb, uint32_t u, uint32_t j) {
      if (jb.dst && jb.src)
        async_load16 (place + (r % R * U + k) * kThreads, jb.src + (u - j * upp) * 16);
    });
    async_commit ();          /* one group a round, empty or not: wait_group counts rounds */
  };
  for (uint32_t r = 0; r < R - 1; r++)
    issue (r);
  for (uint32_t r = 0; r < rounds; r++) {
    issue (r + R - 1);        /* beyond the last round: an empty group */
    async_wait<R - 1> ();     /* round r has landed */
    each_round_unit (jobs, r, t, total, inv,
        [&] (uint32_t k, const Job &jb, uint32_t u, uint32_t j) {
      if (jb.dst)
        *(uint4 *) (jb.dst + (u - j * upp) * 16) = jb.src
            ? place[(r % R * U + k) * kThreads] : make_uint4 (0, 0, 0, 0);
    });
  }
  async_wait<0> ();
}
#endif
