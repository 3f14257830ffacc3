/* reorder-kernels.cuh — GPU reorder, gather, packetize and the 10-bit 4:2:2 unpack, same results as
 * reorder-cpu.c bit for bit.
 *
 * One submission (a burst) runs as one kernel on the context's stream; the descriptors are read
 * where the caller left them (pinned staging for host arrays, or device memory), never copied
 * per packet:
 *
 *   K1 reorder_main   blocks of 256 threads, each taking a range of packets (4..256 of them,
 *                     sized so that the grid fills the GPU and a block moves >= 4 KiB).
 *                     Prologue: this thread's descriptor and header fields, read while the
 *                     previous submission may still be finishing (programmatic dependent launch,
 *                     below); then, once the previous submission has handed the state over, the
 *                     state; or, early start (Win, early_window), once the previous submission's
 *                     last ticket is taken and it had no deferred packets and no fixups, the
 *                     window its finalizer will leave, computed here. Block 0 publishes the window the
 *                     burst claims against (Win) for the next submission.
 *                     Control, one thread per packet: bounds, the header fields, the unwrapped
 *                     batch id; a packet inside the window as it stood at the start of the burst
 *                     claims its slot with a 64-bit atomicMin of (generation tag, arrival stamp), so
 *                     the earliest arrival wins whatever the thread order; a claimer that took the
 *                     slot from a later arrival of the same burst leaves a "fixup". Packets beyond
 *                     the window (and all of the very first burst) are deferred.
 *                     Ticket: after its claims and counts (per record into the submission's
 *                     scratch), each block takes a ticket (one acquire-release atomic); the last
 *                     one is the finalizer (which, after an early start, first waits for the
 *                     previous finalizer).
 *                     Data, all threads of the block: the first claimers' payloads as one flat range
 *                     of 16-byte units (copy, or conversion groups) with several loads in flight per
 *                     thread, 16-byte loads where aligned (else two aligned loads and a funnel
 *                     shift, when both lie inside the packet; else bytes), 16-byte stores. The
 *                     finalizer moves its own block's payloads after finalizing.
 *                     Finalizer: the last block to take a ticket settles fixups, runs the
 *                     deferred packets in arrival order in epochs (a block-wide prefix max gives the
 *                     window after each packet; packets between two moves of the window are claimed
 *                     together), emits batches, lists missing slots, completes batches, hands out
 *                     frames, writes the state back and hands it over (Sync.ready, a release),
 *                     then copies the results into mapped host memory (after the release, so that
 *                     it waits for no write across the bus).
 *                     Tail: the finalizer's work list (payloads of deferred and fixup winners,
 *                     zero-fill of the missing slots of emitted batches), shared by the finalizer
 *                     and up to `helpers` blocks (one per SM) that took their tickets before it and
 *                     wait for it (a flag holding the submission's number: released with the work
 *                     list, or set at the finalizer's start when none can arise). This
 *                     cannot deadlock: a helper waits only once every block has its ticket, so the
 *                     finalizer is running. Empty in the steady state (no loss, no in-burst
 *                     duplicate race): the helpers then just leave. With work, the tail first
 *                     waits for every block's payloads (Sync.moved: a fixup rewrites a slot a
 *                     later arrival copied) and its last part hands the state over.
 *
 * Launch: K1 with programmatic stream serialization (sm_90 on) when the previous launch on the
 * stream was the context's own K1: every block allows the next launch at its start, so the next
 * submission's blocks are scheduled while this one runs, read their descriptors and headers, and
 * wait for the hand-over flag (not for this kernel's end) before touching the state: their claims
 * and their finalizer run while this submission's payloads are still moving. Before it exits,
 * every block waits for the previous kernel to complete (cudaGridDependencySynchronize), so that
 * completions stay in submission order and an emitted frame holds every payload. Gather, packetize
 * and the unpack of 10-bit 4:2:2 pgroups to planar I422_10LE are plain single launches, and the
 * K1 after one of them is launched plainly too. Completion: an event recorded after the
 * submission (the unpack belongs to no context: it runs on the caller's stream). The free-frame
 * ring lives in host memory; its next entries (from the position the GPU last reported) also
 * ride in the parameters, so handing out a frame normally costs no round trip across the bus.
 * K1's grid: as few full waves of the blocks the GPU holds at once as the burst needs.
 *
 * The claim word of a slot is (tag << 48) | stamp, tag = 0xffff - (generation & 0xffff) of the
 * record (window position) it belongs to: a new generation (the record moved to another batch)
 * has a smaller tag, so stale claims never win and never need clearing; every 65535 generations
 * the record's claims are reset. Stamps are arrival numbers (48 bits: wrap after 2.8e14 packets).
 *
 * Built for CI as plain C++ on cuda-emu.h (reorder-emu.cc): the same source runs on CPU fibers.
 */
#ifdef DQ_CUDA_EMU
#include "cuda-emu.h"        /* CI: the same kernels on CPU fibers (cuda-emu.cc) */
#define DQ_UNROLL
#else
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define DQ_LAUNCH(kernel, grid, block, stream, ...) \
  kernel<<<(grid), (block), 0, (stream)>>> (__VA_ARGS__)
#define DQ_UNROLL _Pragma ("unroll")
#endif

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reorder-priv.h"

namespace dqk {

constexpr int kThreads = 256;
constexpr uint32_t kRingAhead = 2 * DQ_REORDER_MAX_WINDOW;   /* free-ring entries prefetched */
/* free-ring entries the host puts in the parameters (the emulator's CI build shrinks it, so
 * that frames come from both places) */
#ifndef DQ_PARAM_AHEAD
#define DQ_PARAM_AHEAD 64
#endif
constexpr uint32_t kParamAhead = DQ_PARAM_AHEAD;
constexpr uint64_t kStampMask = (1ull << 48) - 1;
constexpr uint64_t kNoStamp = ~0ull;

/* ---- device-side state ------------------------------------------------------------------- */

struct DevRec {
  int64_t id;
  uint64_t frame;          /* device pointer, 0: none */
  uint64_t user;
  uint64_t first_stamp;    /* smallest arrival stamp placed, kNoStamp: none */
  uint64_t first_ts;
  uint32_t filled, dups;
  uint32_t gen;            /* claim generation, never 0 mod kTagMask + 1 */
  uint32_t has_first;
};

struct DevState {
  int64_t B, H;
  uint64_t stamp;          /* arrival stamp of the next packet */
  uint64_t free_head;      /* frames taken from the free ring */
  uint32_t initialized, pad;
  DqReorderStats stats;
  DevRec rec[DQ_REORDER_MAX_WINDOW];
};

struct Scratch {           /* per submission (three, by job_seq % 3; see Win) */
  unsigned int blocks_done;
  unsigned int n_short, n_late, n_deferred, n_fixup, n_accepted, n_dups;
  unsigned int first_valid;
  unsigned long long maxK;  /* max unwrapped key + 2^63 (0: none) */
  unsigned int n_copy, n_zero;  /* the tail's work, written by the finalizer */
  unsigned long long go;   /* 2 * job_seq + (work list not empty), set by the finalizer once the
                            * helpers of submission job_seq may go (they wait on it) */
  unsigned int tail_done;  /* blocks done with the tail's work list */
  /* the submission's per-record counts (its blocks add; its finalizer merges them into the
   * state) */
  unsigned int filled[DQ_REORDER_MAX_WINDOW], dups[DQ_REORDER_MAX_WINDOW];
  unsigned long long first[DQ_REORDER_MAX_WINDOW];
};

/* The window a submission's blocks claimed against (before their packets), published by its
 * block 0 before its ticket. With it and the submission's counts, the next submission's blocks
 * compute the window its finalizer will leave, in the steady state (no deferred packets, no
 * fixups, no tag wrap, the frames among the parameters' ring entries), and claim without
 * waiting for that finalizer ("early start"). Scratch and Win are used by job_seq % 3: the
 * scratch of submission s is read by its finalizer and by the blocks of s + 1, and reset by the
 * finalizer of s + 1, which the blocks of s + 3 wait for. */
struct Win {
  int64_t B, H;
  uint64_t stamp, head;    /* head: after the frames handed out at the burst's start */
  uint64_t frame[DQ_REORDER_MAX_WINDOW];
  unsigned long long first[DQ_REORDER_MAX_WINDOW];   /* before the burst */
  uint32_t gen[DQ_REORDER_MAX_WINDOW];
  uint32_t filled[DQ_REORDER_MAX_WINDOW];            /* before the burst */
  uint32_t initialized, pad;
};

/* Hand-over between submissions (never reset; zero at start). The next submission's blocks may
 * run while this one's still move payloads: they wait only for `ready`. */
struct Sync {
  unsigned long long ready;  /* job_seq of the last submission done with the state and scratch */
  unsigned long long moved;  /* blocks of K1 done moving payloads, over all submissions */
};

struct CopyItem {
  uint64_t pkt;            /* packet start (read bounds: [pkt, pkt + len)) */
  uint64_t dst;
  uint32_t len, pad;
};

struct ZeroItem {
  uint64_t dst;            /* slot `base` of the frame; bit k of mask: slot base + k missing */
  uint32_t mask, pad;
};

struct ResHdr {
  uint32_t n_batches, n_released, job_short, kind;
  uint64_t free_head;
  DqReorderStats stats;
  DqReorderWindow window;
};

static_assert (sizeof (DqReorderBatch) % 8 == 0, "result entries are copied in 8-byte words");

struct FrameEnt {
  uint64_t ptr, user;
};

struct Params {
  /* job */
  const uint8_t *data;
  uint64_t data_size;
  const uint8_t *desc;     /* DqReorderPacket array (device or mapped host) */
  uint32_t n;
  uint32_t kind;           /* DqJobKind */
  uint32_t flush_mode;
  uint32_t per_block;      /* packets per block (K1, gather) */
  uint64_t free_tail;
  uint8_t *out;            /* gather output */
  /* config */
  uint32_t seq_off, seq_w, batch_off, batch_w;
  uint32_t ppb, pay_off, lin, lout, need, W, key_bits;
  uint32_t in_type, out_type, network, converts;
  uint32_t ppb_pow2, ppb_shift;
  /* memory */
  DevState *st;
  Scratch *sc;
  unsigned long long *claims;
  uint8_t *cls;
  int64_t *pk_x;
  uint32_t *pk_seq;
  uint32_t *aux;
  CopyItem *copies;
  ZeroItem *zeros;
  uint32_t zcap;
  const FrameEnt *ring;
  uint32_t ring_cap;
  /* the free ring's entries [ahead_base, ahead_base + ahead_n), copied here by the host (it
   * wrote them): the frames handed out come from the parameters, not across the bus, as long
   * as the GPU's position in the ring is within them */
  uint32_t ahead_n;
  uint64_t ahead_base;
  FrameEnt ahead[kParamAhead];
  ResHdr *res;
  DqReorderBatch *res_batches;    /* device memory: the finalizer's entries ... */
  DqReorderBatch *res_out;        /* ... copied here (mapped host memory, after res) at its end */
  DqReorderFrame *res_released;
  uint32_t res_cap, rel_cap;
  /* the tail: up to `helpers` blocks of K1 wait for the finalizer and then share its work list
   * with it; job_seq numbers the submission (never 0) */
  uint32_t helpers;
  uint64_t job_seq;
  /* K1 blocks launched up to and including this submission (its blocks are done moving
   * payloads when sync->moved reaches it) */
  uint64_t blocks_through;
  Sync *sync;
  /* early start: this submission's window and that of the K1 submission before it (job_seq -
   * 1), its scratch, and what of its parameters the window after it depends on */
  Win *win, *win_prev;
  Scratch *sc_prev;
  uint32_t prev_grid, prev_n, early;
  uint64_t prev_free_tail;
};

struct PacketizeParams {
  uint8_t header[DQ_PACKETIZE_MAX_HEADER];
  uint32_t header_len, ipv4_off, udp_off, stride, plen;
  uint32_t ppb, pay_off, pay_size, seq_off, seq_w, batch_off, batch_w;
  uint64_t batch_id;
  const uint8_t *frame;
  uint8_t *out;
  ResHdr *res;
};

/* ---- small device helpers ---------------------------------------------------------------- */

/* Claim tags: kTagMask + 1 generations between claim resets (the emulator's CI build shrinks it
 * so that the reset path runs). */
#ifndef DQ_CLAIM_TAG_BITS
#define DQ_CLAIM_TAG_BITS 16
#endif
constexpr uint32_t kTagMask = (1u << DQ_CLAIM_TAG_BITS) - 1;

/* The missing-slot list of a submission holds this many windows' worth of partial batches;
 * beyond it the finalizer zero-fills itself (slower, same bytes). */
#ifndef DQ_ZERO_LIST_BATCHES
#define DQ_ZERO_LIST_BATCHES 4
#define DQ_ZERO_LIST_MIN 1024
#endif

__device__ __forceinline__ uint32_t tag_of (uint32_t gen) { return kTagMask - (gen & kTagMask); }

__device__ __forceinline__ uint64_t ld_cg64 (const void *p)
{
  return __ldcg ((const unsigned long long *) p);
}

/* Programmatic dependent launch (sm_90 on): the next kernel on the stream may start once every
 * block of this one called pdl_trigger; pdl_wait returns once the previous kernel has completed
 * and its memory is visible. Without it (older GPUs, no PDL launch, the emulator) both are no-ops
 * and the stream orders kernels as usual. */
__device__ __forceinline__ void pdl_trigger ()
{
#if !defined (DQ_CUDA_EMU) && defined (__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion ();
#endif
}

__device__ __forceinline__ void pdl_wait ()
{
#if !defined (DQ_CUDA_EMU) && defined (__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize ();
#endif
}

/* Flags (the helpers' go, the hand-over): release stores, acquire loads while waiting. */
__device__ __forceinline__ void st_release64 (unsigned long long *p, uint64_t v)
{
#ifdef DQ_CUDA_EMU
  *(volatile unsigned long long *) p = v;
#else
  asm volatile ("st.release.gpu.global.u64 [%0], %1;" :: "l" (p), "l" (v) : "memory");
#endif
}

__device__ __forceinline__ unsigned int atom_add_acq_rel (unsigned int *p, unsigned int v)
{
#ifdef DQ_CUDA_EMU
  return atomicAdd (p, v);
#else
  unsigned int old;
  asm volatile ("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r" (old) : "l" (p), "r" (v)
      : "memory");
  return old;
#endif
}

__device__ __forceinline__ uint64_t ld_acquire64 (const unsigned long long *p)
{
#ifdef DQ_CUDA_EMU
  return *(const volatile unsigned long long *) p;
#else
  uint64_t v;
  asm volatile ("ld.acquire.gpu.global.u64 %0, [%1];" : "=l" (v) : "l" (p) : "memory");
  return v;
#endif
}

__device__ __forceinline__ uint32_t ld_acquire32 (const unsigned int *p)
{
#ifdef DQ_CUDA_EMU
  return *(const volatile unsigned int *) p;
#else
  uint32_t v;
  asm volatile ("ld.acquire.gpu.global.u32 %0, [%1];" : "=r" (v) : "l" (p) : "memory");
  return v;
#endif
}

__device__ __forceinline__ void pause_ns (unsigned ns)
{
#ifdef DQ_CUDA_EMU
  (void) ns;
#else
  __nanosleep (ns);
#endif
}

__device__ __forceinline__ uint32_t desc_u32 (const uint8_t *desc, uint32_t i, uint32_t field)
{
  return __ldcg ((const unsigned int *) (desc + (size_t) i * sizeof (DqReorderPacket) + field));
}

__device__ __forceinline__ uint64_t desc_ts (const uint8_t *desc, uint32_t i)
{
  return ld_cg64 (desc + (size_t) i * sizeof (DqReorderPacket) + 16);
}

/* Batch id and slot of an unwrapped key; false if before the stream's start. */
__device__ __forceinline__ bool
locate (const Params &p, int64_t K, uint32_t seq, int64_t &x, uint32_t &slot)
{
  if (K < 0)
    return false;
  if (p.batch_w) {
    x = K;
    slot = p.ppb_pow2 ? seq & (p.ppb - 1) : seq % p.ppb;
  } else if (p.ppb_pow2) {             /* no 64-bit division for power-of-two batches */
    x = K >> p.ppb_shift;
    slot = (uint32_t) ((uint64_t) K & (p.ppb - 1));
  } else {
    x = K / (int64_t) p.ppb;
    slot = (uint32_t) (K % (int64_t) p.ppb);
  }
  return true;
}

__device__ __forceinline__ uint32_t rec_index (const Params &p, int64_t id)
{
  return (p.W & (p.W - 1)) == 0 ? (uint32_t) ((uint64_t) id & (p.W - 1))
      : (uint32_t) ((uint64_t) id % p.W);
}

/* Free-ring entry h: from the parameters where the host put it, else from host memory. */
__device__ __forceinline__ FrameEnt
ring_entry (const Params &p, uint64_t h)
{
  const uint64_t k = h - p.ahead_base;
  if (k < p.ahead_n)
    return p.ahead[k];
  const FrameEnt *e = &p.ring[h % p.ring_cap];
  return FrameEnt { ld_cg64 (&e->ptr), ld_cg64 (&e->user) };
}

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

/* Read nb (<= 32) bytes at p into little-endian words; aligned word loads where [p & ~3, +36)
 * lies inside [lo, hi), bytes otherwise. */
template <int NB>
__device__ __forceinline__ void
load_bytes (uint32_t (&w)[(NB + 3) / 4], const uint8_t *p, const uint8_t *lo, const uint8_t *hi)
{
  constexpr int NW = (NB + 3) / 4;
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

/* ---- block primitives -------------------------------------------------------------------- */

__device__ __forceinline__ int64_t
warp_incl_max (int64_t v)
{
  const int lane = threadIdx.x & 31;
DQ_UNROLL
  for (int d = 1; d < 32; d <<= 1) {
    int64_t o = __shfl_up_sync (0xffffffffu, v, d);
    if (lane >= d && o > v)
      v = o;
  }
  return v;
}

/* Inclusive prefix max over the block (kThreads). tmp: kThreads / 32 entries. */
__device__ int64_t
block_incl_max (int64_t v, int64_t *tmp)
{
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_incl_max (v);
  if (lane == 31)
    tmp[warp] = v;
  __syncthreads ();
  if (warp == 0) {
    int64_t t = lane < kThreads / 32 ? tmp[lane] : INT64_MIN;
    t = warp_incl_max (t);
    if (lane < kThreads / 32)
      tmp[lane] = t;
  }
  __syncthreads ();
  if (warp > 0 && tmp[warp - 1] > v)
    v = tmp[warp - 1];
  __syncthreads ();
  return v;
}

/* Exclusive prefix sum of small counts over the block; *total gets the sum. */
__device__ uint32_t
block_excl_sum (uint32_t v, uint32_t *tmp, uint32_t *total)
{
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t x = v;
DQ_UNROLL
  for (int d = 1; d < 32; d <<= 1) {
    uint32_t o = __shfl_up_sync (0xffffffffu, x, d);
    if (lane >= d)
      x += o;
  }
  if (lane == 31)
    tmp[warp] = x;
  __syncthreads ();
  if (warp == 0) {
    uint32_t t = lane < kThreads / 32 ? tmp[lane] : 0;
DQ_UNROLL
    for (int d = 1; d < 32; d <<= 1) {
      uint32_t o = __shfl_up_sync (0xffffffffu, t, d);
      if (lane >= d)
        t += o;
    }
    if (lane < kThreads / 32)
      tmp[lane] = t;
  }
  __syncthreads ();
  uint32_t before = (warp > 0 ? tmp[warp - 1] : 0) + x - v;
  *total = tmp[kThreads / 32 - 1];
  __syncthreads ();
  return before;
}

/* ---- the finalizer ----------------------------------------------------------------------- */

struct Fin {
  DevState s;
  int64_t x[kThreads];
  int64_t bincl[kThreads];
  uint32_t slot[kThreads];
  uint32_t idx[kThreads];
  uint8_t late[kThreads];
  uint32_t bpos[kThreads + 1];
  int64_t tmp64[kThreads / 32];
  uint32_t tmp32[kThreads / 32];
  uint32_t n_out, n_rel, n_copy, n_zero;
  uint32_t late_count, accepted, dups;
  uint32_t nb, flag;
  uint32_t run, run_no_frame;    /* complete batches in a row at the window's base */
  int64_t maxK, H0, target;
  uint8_t reset[DQ_REORDER_MAX_WINDOW];
  uint32_t any_reset;            /* some reset[] is set */
  uint32_t win_open, win_first;  /* the results header's window: open batches, the oldest */
  FrameEnt ring[kRingAhead];     /* the free ring's next entries */
  uint64_t ring_base;
  uint32_t ring_n;
};

struct Blk {
  int64_t B, H;
  uint32_t initialized;
  uint64_t stamp, head;
  uint64_t frame[DQ_REORDER_MAX_WINDOW];
  uint32_t tag[DQ_REORDER_MAX_WINDOW];
  uint32_t filled[DQ_REORDER_MAX_WINDOW], dups[DQ_REORDER_MAX_WINDOW];
  unsigned long long first[DQ_REORDER_MAX_WINDOW];
  uint8_t empty[DQ_REORDER_MAX_WINDOW];
  uint32_t tmp32[kThreads / 32];
  uint32_t n_short, n_late, n_def, n_acc, n_dup;
  unsigned long long maxK;
  uint32_t ticket, tail_work;
  /* the window as it stood before this burst (published in Win) */
  uint32_t gen[DQ_REORDER_MAX_WINDOW], tot[DQ_REORDER_MAX_WINDOW];
  unsigned long long pre_first[DQ_REORDER_MAX_WINDOW];
  uint64_t head_after;           /* after the frames handed out at the burst's start */
  uint32_t early, bad, run;      /* early start taken; its window cannot be computed; run */
};

union Smem {
  Fin fin;
  Blk blk;
};

/* Frames for the window's records that have none and no packets, in batch-id order (block-wide:
 * one thread per record, its rank among the records wanting one by a prefix sum). With
 * since_stamp: "no packets before the stamp" (the finalizer committing what the blocks of this
 * burst decided at its start, after they placed packets). The free ring lives in host memory:
 * its next entries were fetched into f.ring at the finalizer's start, in one round trip. */
__device__ void
fill_frames (const Params &p, Fin &f, uint64_t since_stamp = kNoStamp)
{
  DevState &s = f.s;
  const uint32_t t = threadIdx.x;
  __syncthreads ();
  bool want = false;
  DevRec *R = NULL;
  if (t < p.W) {
    R = &s.rec[rec_index (p, s.B + t)];
    const bool empty = since_stamp == kNoStamp ? R->filled == 0
        : (R->first_stamp == kNoStamp || R->first_stamp >= since_stamp);
    want = !R->frame && empty;
  }
  const uint64_t head = s.free_head;
  uint32_t rank, wanted;
  if (p.W <= 32) {
    /* one warp holds the window: ranks by ballot (the other warps' are empty), no barrier */
    const uint32_t m = __ballot_sync (0xffffffffu, want);
    rank = __popc (m & ((1u << (t & 31)) - 1));
    wanted = __popc (m);
  } else {
    rank = block_excl_sum (want ? 1u : 0u, f.tmp32, &wanted);
  }
  if (want && head + rank < p.free_tail) {
    const uint64_t k = head + rank - f.ring_base;
    const FrameEnt e = k < f.ring_n ? f.ring[k] : ring_entry (p, head + rank);
    R->frame = e.ptr;
    R->user = e.user;
  }
  __syncthreads ();
  if (t == 0) {
    const uint64_t avail = p.free_tail > head ? p.free_tail - head : 0;
    s.free_head = head + (wanted < avail ? wanted : avail);
  }
  __syncthreads ();
}

__device__ void
new_generation (Fin &f, uint32_t r)
{
  DevRec &R = f.s.rec[r];
  R.gen++;
  if ((R.gen & kTagMask) == 0) {
    R.gen++;                      /* tag kTagMask is the one of never-claimed (all-ones) words */
    f.reset[r] = 1;
    f.any_reset = 1;
  }
  R.filled = R.dups = 0;
  R.first_stamp = kNoStamp;
  R.first_ts = 0;
  R.has_first = 0;
}

/* After new generations were started: clear the claims of records whose tags wrapped. */
__device__ void
apply_resets (const Params &p, Fin &f)
{
  __syncthreads ();
  const bool any = f.any_reset != 0;
  if (any) {
    for (uint32_t r = 0; r < p.W; r++) {
      if (!f.reset[r])
        continue;
      unsigned long long *c = p.claims + (size_t) r * p.ppb;
      for (uint32_t s = threadIdx.x; s < p.ppb; s += blockDim.x)
        c[s] = ~0ull;
    }
    __syncthreads ();
    if (threadIdx.x < p.W)
      f.reset[threadIdx.x] = 0;
  }
  __syncthreads ();
  if (any && threadIdx.x == 0)
    f.any_reset = 0;
}

/* The result entry of record R emitted for `cause`. */
__device__ __forceinline__ DqReorderBatch
batch_entry (const Params &p, const DevRec &R, uint32_t cause)
{
  DqReorderBatch b;
  memset (&b, 0, sizeof b);
  b.batch_id = (uint64_t) R.id;
  b.frame = (void *) R.frame;
  b.frame_user = R.frame ? (void *) R.user : NULL;
  b.first_timestamp = R.first_ts;
  b.packets = R.filled;
  b.missing = p.ppb - R.filled;
  b.duplicates = R.dups;
  b.flags = cause | (R.filled == p.ppb ? DQ_BATCH_COMPLETE : 0) |
      (R.frame ? 0 : DQ_BATCH_NO_FRAME);
  return b;
}

/* Emit record r (block-wide): the result entry, the missing-slot list. */
__device__ void
emit (const Params &p, Fin &f, uint32_t r, uint32_t cause)
{
  DevRec &R = f.s.rec[r];
  const uint32_t filled = R.filled;
  if (threadIdx.x == 0) {
    const DqReorderBatch b = batch_entry (p, R, cause);
    if (f.n_out < p.res_cap)
      p.res_batches[f.n_out] = b;
    f.n_out++;
    DqReorderStats &st = f.s.stats;
    st.batches++;
    if (b.missing)
      st.partial++;
    else
      st.complete++;
    if (!R.frame)
      st.no_frame++;
    st.missing_slots += b.missing;
  }
  if (R.frame && filled < p.ppb) {
    const uint32_t tag = tag_of (R.gen);
    const unsigned long long *c = p.claims + (size_t) r * p.ppb;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (uint32_t base = warp * 32; base < p.ppb; base += kThreads) {
      uint32_t s = base + lane;
      bool missing = s < p.ppb && (uint32_t) (__ldcg (c + s) >> 48) != tag;
      uint32_t mask = __ballot_sync (0xffffffffu, missing);
      uint32_t ovf = 0;
      if (lane == 0 && mask) {
        uint32_t k = atomicAdd (&f.n_zero, 1u);
        if (k < p.zcap) {
          p.zeros[k].dst = (uint64_t) ((uint8_t *) R.frame + (size_t) base * p.lout);
          p.zeros[k].mask = mask;
        } else {
          ovf = 1;      /* the list is full: this warp clears its 32 slots itself */
        }
      }
      if (__shfl_sync (0xffffffffu, ovf, 0))
        for (uint32_t k = 0; k < 32; k++)
          if (mask & (1u << k))
            team_zero ((uint8_t *) R.frame + (size_t) (base + k) * p.lout, p.lout, lane, 32);
    }
  }
  __syncthreads ();
}

/* Move the window base to newB (block-wide). */
__device__ void
advance (const Params &p, Fin &f, int64_t newB, uint32_t cause)
{
  const int64_t B = f.s.B;
  const int64_t W = p.W;
  const int64_t end = newB < B + W ? newB : B + W;
  for (int64_t y = B; y < end; y++) {
    const uint32_t r = rec_index (p, y);
    const bool filled = f.s.rec[r].filled != 0;
    __syncthreads ();           /* every thread has read `filled` before thread 0 resets it */
    if (filled)
      emit (p, f, r, cause);
    else if (threadIdx.x == 0)
      f.s.stats.skipped++;
    if (threadIdx.x == 0) {
      DevRec &R = f.s.rec[r];
      if (R.filled) {
        R.frame = 0;
        R.user = 0;
      }
      int64_t k = (newB - y + W - 1) / W;
      R.id = y + k * W;
      new_generation (f, r);
    }
    __syncthreads ();
  }
  if (threadIdx.x == 0) {
    if (newB - B > W)
      f.s.stats.skipped += (uint64_t) (newB - B - W);
    f.s.B = newB;
  }
  fill_frames (p, f);
  apply_resets (p, f);
}

/* Emits the complete batches at the window's base and moves the window past them: all of them
 * at once, one thread each (what advance () by one, again and again, would do: the same
 * entries in the same order, and the frames handed out afterwards in batch-id order). */
__device__ void
complete_batches (const Params &p, Fin &f)
{
  const uint32_t t = threadIdx.x;
  __syncthreads ();
  if (t == 0) {
    f.run = p.W;
    f.run_no_frame = 0;
  }
  __syncthreads ();
  if (t < p.W && f.s.rec[rec_index (p, f.s.B + t)].filled != p.ppb)
    atomicMin (&f.run, t);
  __syncthreads ();
  const uint32_t k = f.run;
  if (k == 0)
    return;
  const int64_t B = f.s.B;
  const bool mine = t < k;
  const uint32_t r = mine ? rec_index (p, B + t) : 0;
  bool framed = true;
  if (mine) {
    DevRec &R = f.s.rec[r];
    framed = R.frame != 0;
    if (f.n_out + t < p.res_cap)
      p.res_batches[f.n_out + t] = batch_entry (p, R, 0);
    if (!framed)
      atomicAdd (&f.run_no_frame, 1u);
  }
  __syncthreads ();
  if (mine) {
    DevRec &R = f.s.rec[r];
    R.frame = 0;
    R.user = 0;
    R.id = B + t + p.W;
    new_generation (f, r);
  }
  __syncthreads ();
  if (t == 0) {
    DqReorderStats &st = f.s.stats;
    st.batches += k;
    st.complete += k;
    st.no_frame += f.run_no_frame;
    f.n_out += k;
    f.s.B = B + k;
  }
  fill_frames (p, f);
  apply_resets (p, f);
}

__device__ void
start_window (const Params &p, Fin &f, int64_t x0)
{
  if (threadIdx.x == 0) {
    f.s.initialized = 1;
    f.s.B = x0;
    for (uint32_t i = 0; i < p.W; i++) {
      uint32_t r = rec_index (p, x0 + i);
      f.s.rec[r].id = x0 + i;
      new_generation (f, r);
    }
  }
  fill_frames (p, f);
  apply_resets (p, f);
}

__device__ void
push_copy (const Params &p, Fin &f, uint32_t i, uint64_t frame, uint32_t slot)
{
  uint32_t k = atomicAdd (&f.n_copy, 1u);
  CopyItem &c = p.copies[k];
  uint32_t off = desc_u32 (p.desc, i, 0), len = desc_u32 (p.desc, i, 4);
  c.pkt = (uint64_t) (p.data + off);
  c.len = len;
  c.dst = frame + (uint64_t) slot * p.lout;
}

/* Records whose first packet came in this burst: its timestamp. */
__device__ void
first_timestamps (const Params &p, Fin &f, uint64_t stamp0)
{
  __syncthreads ();
  if (threadIdx.x < p.W) {
    DevRec &R = f.s.rec[threadIdx.x];
    if (!R.has_first && R.first_stamp != kNoStamp && R.first_stamp >= stamp0 &&
        R.first_stamp < stamp0 + p.n) {
      R.first_ts = desc_ts (p.desc, (uint32_t) (R.first_stamp - stamp0));
      R.has_first = 1;
    }
  }
  __syncthreads ();
}

/* The deferred packets (beyond the window at burst start, or all of the first burst), in arrival
 * order: chunks of kThreads; in a chunk, a prefix max gives the window after each packet, and the
 * packets between two moves of the window are claimed together. */
__device__ void
run_deferred (const Params &p, Fin &f, bool fresh, uint64_t stamp0)
{
  const uint32_t t = threadIdx.x;
  /* compact the deferred indices, in order, into aux */
  uint32_t nd = 0;
  for (uint32_t c0 = 0; c0 < p.n; c0 += kThreads) {
    uint32_t i = c0 + t;
    uint32_t d = (i < p.n && __ldcg (p.cls + i) == DQ_PKT_DEFERRED) ? 1u : 0u;
    uint32_t tot;
    uint32_t at = block_excl_sum (d, f.tmp32, &tot);
    if (d)
      p.aux[nd + at] = i;
    nd += tot;
  }
  __syncthreads ();

  int64_t Bcur = f.s.B;
  for (uint32_t c0 = 0; c0 < nd; c0 += kThreads) {
    const uint32_t m = nd - c0 < (uint32_t) kThreads ? nd - c0 : (uint32_t) kThreads;
    int64_t v = INT64_MIN, x = 0;
    uint32_t slot = 0, i = 0;
    bool ok = false;
    if (t < m) {
      i = p.aux[c0 + t];          /* written by this block above: plain load */
      int64_t K = __ldcg ((const long long *) p.pk_x + i);
      uint32_t seq = __ldcg (p.pk_seq + i);
      if (fresh)
        K = dq_unwrap ((uint32_t) K, f.H0, p.key_bits);
      if (fresh)
        atomicMax ((long long *) &f.maxK, (long long) K);
      ok = locate (p, K, seq, x, slot);
      if (ok)
        v = x - (int64_t) p.W + 1;
    }
    int64_t incl = block_incl_max (v, f.tmp64);
    if (incl < Bcur)
      incl = Bcur;
    f.bincl[t] = incl;
    __syncthreads ();
    int64_t excl = t == 0 ? Bcur : f.bincl[t - 1];
    bool late = t < m && (!ok || x < excl);
    bool bnd = t < m && !late && incl > excl;
    f.x[t] = x;
    f.slot[t] = slot;
    f.idx[t] = i;
    f.late[t] = late;
    if (late)
      atomicAdd (&f.late_count, 1u);
    /* boundary positions: where the window moves */
    uint32_t nb;
    uint32_t at = block_excl_sum (bnd ? 1u : 0u, f.tmp32, &nb);
    if (bnd)
      f.bpos[at] = t;
    if (t == 0)
      f.nb = nb;
    __syncthreads ();
    nb = f.nb;
    /* epochs: [0, bpos[0]), [bpos[0], bpos[1]), ... ; each after its window move */
    for (uint32_t e = 0; e <= nb; e++) {
      uint32_t e0 = e == 0 ? 0 : f.bpos[e - 1];
      uint32_t e1 = e < nb ? f.bpos[e] : m;
      if (e > 0)
        advance (p, f, f.bincl[e0], DQ_BATCH_PUSHED);
      if (e0 == e1)
        continue;
      unsigned long long want = 0;
      uint32_t r = 0;
      bool mine = t >= e0 && t < e1 && !f.late[t];
      if (mine) {
        r = rec_index (p, f.x[t]);
        DevRec &R = f.s.rec[r];
        uint64_t stamp = (stamp0 + f.idx[t]) & kStampMask;
        want = ((unsigned long long) tag_of (R.gen) << 48) | stamp;
        unsigned long long old = atomicMin (p.claims + (size_t) r * p.ppb + f.slot[t], want);
        if ((uint32_t) (old >> 48) != tag_of (R.gen)) {
          atomicAdd (&R.filled, 1u);
          atomicAdd (&f.accepted, 1u);
        } else {
          atomicAdd (&R.dups, 1u);
          atomicAdd (&f.dups, 1u);
        }
        atomicMin ((unsigned long long *) &R.first_stamp, (unsigned long long) stamp0 + f.idx[t]);
      }
      __syncthreads ();
      if (mine && f.s.rec[r].frame &&
          __ldcg (p.claims + (size_t) r * p.ppb + f.slot[t]) == want)
        push_copy (p, f, f.idx[t], f.s.rec[r].frame, f.slot[t]);
      first_timestamps (p, f, stamp0);
    }
    Bcur = f.s.B;
    __syncthreads ();
  }
}

/* The state and the scratch are the next submission's now: its blocks stop waiting (block-wide;
 * after the state's write-back, or after the last part of the tail). */
__device__ __forceinline__ void
hand_over (const Params &p)
{
  __syncthreads ();
  if (threadIdx.x == 0)
    st_release64 (&p.sync->ready, p.job_seq);   /* cumulative: the block's writes too */
}

#ifdef DQ_CUDA_EMU
/* The emulator's check of early start: the window this submission's blocks claimed against
 * (computed by them, or loaded from the state) is the one the finalizer has at the same point
 * (after the frames handed out at the burst's start). */
__device__ void
check_window (const Params &p, Fin &f)
{
  __syncthreads ();
  if (threadIdx.x != 0)
    return;
  const Win *V = p.win;
  bool ok = V->B == f.s.B && V->H == f.s.H && V->stamp == f.s.stamp &&
      V->head == f.s.free_head && V->initialized == f.s.initialized;
  for (uint32_t r = 0; r < p.W; r++) {
    const DevRec &R = f.s.rec[r];
    const uint64_t first = V->first[r] < p.sc->first[r] ? V->first[r] : p.sc->first[r];
    ok = ok && V->frame[r] == R.frame && V->gen[r] == R.gen &&
        V->filled[r] + p.sc->filled[r] == R.filled && first == R.first_stamp;
  }
  if (!ok) {
    fprintf (stderr, "reorder: submission %llu claimed against a window its finalizer does not "
        "have (B %lld / %lld, stamp %llu / %llu, head %llu / %llu)\n",
        (unsigned long long) p.job_seq, (long long) V->B, (long long) f.s.B,
        (unsigned long long) V->stamp, (unsigned long long) f.s.stamp,
        (unsigned long long) V->head, (unsigned long long) f.s.free_head);
    abort ();
  }
}
#endif

/* Returns whether the tail has work (then the tail's last part hands over, else finalize).
 * early: this block started early (the previous finalizer may still be running). */
__device__ bool
finalize (const Params &p, Fin &f, bool early)
{
  const uint32_t t = threadIdx.x;
  /* the state (its W records) and the scratch counters, as the other blocks left them (L2,
   * not this SM's L1), in one round trip */
  const uint32_t state_words = (uint32_t) (offsetof (DevState, rec) + p.W * sizeof (DevRec)) / 8;
  const uint32_t shorts = __ldcg (&p.sc->n_short);
  const uint32_t nf = __ldcg (&p.sc->n_fixup), nd = __ldcg (&p.sc->n_deferred);
  /* a reorder job with no fixups and no deferred packets leaves the tail nothing (only they
   * list copies, and only the deferred path and flushes emit partial batches): the helpers may
   * leave now, not after the finalizer */
  const bool quiet = p.kind == DQ_JOB_REORDER && nf == 0 && nd == 0;
  if (quiet && t == 0)
    *(volatile unsigned long long *) &p.sc->go = 2 * p.job_seq;   /* no data to publish */
  if (t == 0) {
    f.n_out = f.n_rel = f.n_copy = f.n_zero = 0;
    f.late_count = __ldcg (&p.sc->n_late);
    f.accepted = __ldcg (&p.sc->n_accepted);
    f.dups = __ldcg (&p.sc->n_dups);
    unsigned long long mk = __ldcg (&p.sc->maxK);
    f.maxK = mk ? (int64_t) (mk - (1ull << 63)) : INT64_MIN;
    f.flag = 0;
  }
  if (early) {
    /* the previous finalizer done with the state */
    if (t == 0)
      while (ld_acquire64 (&p.sync->ready) + 1 < p.job_seq)
        pause_ns (0);
    __syncthreads ();
  }
  {
    const uint64_t *src = (const uint64_t *) p.st;
    uint64_t *dst = (uint64_t *) &f.s;
    for (uint32_t k = t; k < state_words; k += blockDim.x)
      dst[k] = ld_cg64 (src + k);
  }
  if (t < DQ_REORDER_MAX_WINDOW)
    f.reset[t] = 0;
  if (t == 0)
    f.any_reset = 0;
  /* this submission's per-record counts, merged below */
  uint32_t c_filled = 0, c_dups = 0;
  uint64_t c_first = kNoStamp;
  if (t < p.W) {
    c_filled = __ldcg (&p.sc->filled[t]);
    c_dups = __ldcg (&p.sc->dups[t]);
    c_first = ld_cg64 (&p.sc->first[t]);
  }
  __syncthreads ();
  if (t < p.W) {
    DevRec &R = f.s.rec[t];
    R.filled += c_filled;
    R.dups += c_dups;
    if (c_first < R.first_stamp)
      R.first_stamp = c_first;
  }
  {
    /* the free ring's next entries (from the parameters, or host memory in one round trip) */
    const uint64_t head = f.s.free_head;
    const uint64_t avail = p.free_tail - head;
    const uint32_t n = avail < kRingAhead ? (uint32_t) avail : kRingAhead;
    if (t < n)
      f.ring[t] = ring_entry (p, head + t);
    if (t == 0) {
      f.ring_base = head;
      f.ring_n = n;
    }
  }
  __syncthreads ();
  const bool was_init = f.s.initialized != 0;
  const uint64_t stamp0 = f.s.stamp;

  if (was_init && p.kind == DQ_JOB_REORDER) {
    fill_frames (p, f, stamp0);
#ifdef DQ_CUDA_EMU
    check_window (p, f);
#endif
  } else if (was_init && p.kind == DQ_JOB_FLUSH && p.flush_mode != DQ_FLUSH_RESET)
    fill_frames (p, f);

  if (p.kind == DQ_JOB_REORDER) {
    /* fixups: a packet that took a slot from a later arrival of the same burst */
    for (uint32_t k = t; k < nf; k += blockDim.x) {
      uint32_t i = __ldcg (p.aux + k);
      int64_t x = __ldcg ((const long long *) p.pk_x + i);
      uint32_t slot = __ldcg (p.pk_seq + i);
      uint32_t r = rec_index (p, x);
      unsigned long long want = ((unsigned long long) tag_of (f.s.rec[r].gen) << 48) |
          ((stamp0 + i) & kStampMask);
      if (f.s.rec[r].frame && __ldcg (p.claims + (size_t) r * p.ppb + slot) == want)
        push_copy (p, f, i, f.s.rec[r].frame, slot);
    }
    first_timestamps (p, f, stamp0);

    if (nd) {
      bool fresh = !was_init;
      if (fresh) {
        uint32_t fv = __ldcg (&p.sc->first_valid);
        uint32_t key = (uint32_t) __ldcg ((const long long *) p.pk_x + fv);
        uint32_t seq = __ldcg (p.pk_seq + fv);
        int64_t x0 = 0;
        uint32_t s0;
        locate (p, (int64_t) key, seq, x0, s0);
        if (t == 0) {
          f.H0 = key;
          f.s.H = key;
          f.maxK = key;
        }
        start_window (p, f, x0);
      } else if (t == 0) {
        f.H0 = f.s.H;
      }
      __syncthreads ();
      run_deferred (p, f, fresh, stamp0);
    }
    __syncthreads ();
    if (t == 0 && f.s.initialized && f.maxK > f.s.H)
      f.s.H = f.maxK;
    if (f.s.initialized)
      complete_batches (p, f);
  } else if (p.kind == DQ_JOB_FLUSH && was_init) {
    if (p.flush_mode == DQ_FLUSH_OLDEST) {
      if (t == 0) {
        f.flag = 0;
        for (uint32_t i = 0; i < p.W && !f.flag; i++)
          if (f.s.rec[rec_index (p, f.s.B + i)].filled) {
            f.flag = 1;
            f.target = f.s.B + i + 1;
          }
      }
      __syncthreads ();
      if (f.flag) {
        advance (p, f, f.target, DQ_BATCH_FLUSHED);
        complete_batches (p, f);
      }
    } else if (p.flush_mode == DQ_FLUSH_ALL) {
      advance (p, f, f.s.B + p.W, DQ_BATCH_FLUSHED);
    } else {
      for (uint32_t i = 0; i < p.W; i++) {
        uint32_t r = rec_index (p, f.s.B + i);
        if (f.s.rec[r].filled)
          emit (p, f, r, DQ_BATCH_FLUSHED);
        else if (t == 0)
          f.s.stats.skipped++;
        if (t == 0 && f.s.rec[r].filled) {
          f.s.rec[r].frame = 0;
          f.s.rec[r].user = 0;
        }
        __syncthreads ();
      }
      if (t == 0) {
        for (uint32_t i = 0; i < p.W; i++) {
          uint32_t r = rec_index (p, f.s.B + i);
          DevRec &R = f.s.rec[r];
          if (R.frame && f.n_rel < p.rel_cap)
            p.res_released[f.n_rel++] = DqReorderFrame { (void *) R.frame, (void *) R.user };
          R.frame = 0;
          R.user = 0;
        }
        for (uint32_t r = 0; r < p.W; r++) {
          f.s.rec[r].id = 0;
          new_generation (f, r);
        }
        f.s.initialized = 0;
        f.s.B = f.s.H = 0;
      }
      apply_resets (p, f);
    }
  }
  if (p.kind == DQ_JOB_FLUSH && p.flush_mode == DQ_FLUSH_RESET && t == 0) {
    while (f.s.free_head < p.free_tail) {
      const FrameEnt e = ring_entry (p, f.s.free_head);
      if (f.n_rel < p.rel_cap)
        p.res_released[f.n_rel++] = DqReorderFrame { (void *) e.ptr, (void *) e.user };
      f.s.free_head++;
    }
  }
  /* the window for the results header: open batches, and the oldest (one thread per record) */
  if (t == 0) {
    f.win_open = 0;
    f.win_first = p.W;
  }
  __syncthreads ();
  if (f.s.initialized && t < p.W && f.s.rec[rec_index (p, f.s.B + t)].filled) {
    atomicAdd (&f.win_open, 1u);
    atomicMin (&f.win_first, t);
  }
  __syncthreads ();

  const bool work = f.n_copy || f.n_zero;
  ResHdr h;                        /* thread 0's */
  if (t == 0) {
    /* the scratch for the next submission with the tail's work list; then the helpers go (before
     * the results go to host memory, so that the release has no writes across the bus to wait
     * for) */
    p.sc->n_copy = f.n_copy;
    p.sc->n_zero = f.n_zero < p.zcap ? f.n_zero : p.zcap;
    if (!quiet)
      st_release64 (&p.sc->go, 2 * p.job_seq + (work ? 1 : 0));
    DqReorderStats &st = f.s.stats;
    uint32_t late = f.late_count;
    if (p.kind == DQ_JOB_REORDER)
      st.packets += p.n;
    st.accepted += f.accepted;
    st.duplicates += f.dups;
    st.late += late;
    st.short_packets += shorts;
    st.pending_late += late;
    st.pending_short += shorts;
    uint32_t nout = f.n_out < p.res_cap ? f.n_out : p.res_cap;
    if (nout) {
      uint32_t l = st.pending_late > 0xffffffffull ? 0xffffffffu : (uint32_t) st.pending_late;
      uint32_t s = st.pending_short > 0xffffffffull ? 0xffffffffu : (uint32_t) st.pending_short;
      p.res_batches[0].late = l;
      p.res_batches[0].short_packets = s;
      st.pending_late -= l;
      st.pending_short -= s;
    }
    memset (&h, 0, sizeof h);
    h.n_batches = nout;
    h.n_released = f.n_rel;
    h.job_short = shorts;
    h.kind = p.kind;
    h.free_head = f.s.free_head;
    h.stats = st;
    h.window.initialized = f.s.initialized;
    if (f.s.initialized) {
      h.window.base = (uint64_t) f.s.B;
      h.window.open = f.win_open;
      if (f.win_open) {
        const DevRec &R = f.s.rec[rec_index (p, f.s.B + f.win_first)];
        h.window.oldest_id = (uint64_t) R.id;
        h.window.oldest_first_timestamp = R.first_ts;
      }
    }
    if (p.kind == DQ_JOB_REORDER)
      f.s.stamp = stamp0 + p.n;
  }
  __syncthreads ();
  {
    const uint64_t *src = (const uint64_t *) &f.s;
    uint64_t *dst = (uint64_t *) p.st;
    for (uint32_t k = t; k < state_words; k += blockDim.x)
      dst[k] = src[k];
  }
  {
    /* the previous submission's scratch (its finalizer and the blocks of this one are done with
     * it), for the submission after next; `go` stays: its helpers may not have seen it yet */
    Scratch *z = p.sc_prev;
    if (t == 0) {
      z->blocks_done = 0;
      z->n_short = z->n_late = z->n_deferred = z->n_fixup = z->n_accepted = z->n_dups = 0;
      z->first_valid = 0xffffffffu;
      z->maxK = 0;
      z->n_copy = z->n_zero = 0;
      z->tail_done = 0;
    }
    if (t < p.W) {
      z->filled[t] = 0;
      z->dups[t] = 0;
      z->first[t] = kNoStamp;
    }
  }
  if (!work)
    hand_over (p);
  /* the results into host memory last: no fence above waits for writes across the bus */
  {
    const uint32_t words = (f.n_out < p.res_cap ? f.n_out : p.res_cap) * sizeof (DqReorderBatch) / 8;
    const uint64_t *src = (const uint64_t *) p.res_batches;
    uint64_t *dst = (uint64_t *) p.res_out;
    for (uint32_t k = t; k < words; k += blockDim.x)
      dst[k] = ld_cg64 (src + k);
  }
  if (t == 0)
    *p.res = h;
  return work;
}

/* ---- the tail: the finalizer's work list ------------------------------------------------- */

/* Part `part` of `parts` (one block each) of the finalizer's work list: the payloads of deferred
 * and fixup winners, the zero-fill of the missing slots of emitted batches. Empty in the steady
 * state (no loss, no in-burst duplicate race). Not inlined: inlined, its movers made all of K1
 * slower (H200, 1024 packets: 11.1 against 9.2 µs per submission). */
__device__ __noinline__ void
tail (const Params &p, uint32_t part, uint32_t parts)
{
  const uint32_t nc = __ldcg (&p.sc->n_copy), nz = __ldcg (&p.sc->n_zero);
  move_payloads (p, ItemJobs { p.copies, p.pay_off }, nc, part * kThreads + threadIdx.x,
      parts * kThreads);
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warps = parts * (kThreads / 32);
  for (uint32_t w = part * (kThreads / 32) + (threadIdx.x >> 5); w < nz; w += warps) {
    const ZeroItem z = p.zeros[w];
    for (uint32_t k = 0; k < 32; k++)
      if (z.mask & (1u << k))
        team_zero ((uint8_t *) z.dst + (size_t) k * p.lout, p.lout, lane, 32);
  }
}

/* The tail's part `part` of `parts`, once every block of the submission has moved its payloads
 * (a fixup rewrites a slot that a later arrival's block copied); the last part done hands over. */
__device__ void
run_tail (const Params &p, uint32_t part, uint32_t parts)
{
  if (threadIdx.x == 0)
    for (unsigned ns = 32; ld_acquire64 (&p.sync->moved) < p.blocks_through;
        ns = ns < 1024 ? 2 * ns : ns)
      pause_ns (ns);
  __syncthreads ();
  tail (p, part, parts);
  __syncthreads ();
  if (threadIdx.x == 0) {
    __threadfence ();
    if (atomicAdd (&p.sc->tail_done, 1u) == parts - 1) {
      __threadfence ();           /* the other parts' writes (seen through the counter) first */
      st_release64 (&p.sync->ready, p.job_seq);
    }
  }
}

/* ---- K1 ---------------------------------------------------------------------------------- */

/* Early start: the window the previous submission's finalizer will leave, from the window its
 * blocks claimed against (Win) and its counts (its scratch), as finalize () computes it when
 * that submission had no deferred packets and no fixups: counts merged, H past the largest key,
 * the complete batches at the base emitted (new generations), frames for the empty records from
 * the free ring up to the previous submission's tail, the stamp past its packets. Clears b.early
 * where that cannot be done here: the window was not initialized, a claim tag wraps (the
 * finalizer then clears those claims), or a frame to hand out is not among the parameters' ring
 * entries. Block-wide. */
__device__ void
early_window (const Params &p, Blk &b)
{
  const uint32_t t = threadIdx.x;
  const Win *V = p.win_prev;
  const Scratch *C = p.sc_prev;
  unsigned long long mk = 0;
  if (t == 0) {
    b.B = __ldcg ((const long long *) &V->B);
    b.H = __ldcg ((const long long *) &V->H);
    b.stamp = ld_cg64 (&V->stamp) + p.prev_n;
    b.head = ld_cg64 (&V->head);
    b.initialized = __ldcg (&V->initialized);
    mk = ld_cg64 (&C->maxK);
    b.run = p.W;
  }
  if (t < p.W) {
    b.frame[t] = ld_cg64 (&V->frame[t]);
    b.gen[t] = __ldcg (&V->gen[t]);
    b.tot[t] = __ldcg (&V->filled[t]) + __ldcg (&C->filled[t]);
    const uint64_t f0 = ld_cg64 (&V->first[t]), f1 = ld_cg64 (&C->first[t]);
    b.first[t] = f0 < f1 ? f0 : f1;
  }
  __syncthreads ();
  if (t == 0) {
    if (!b.initialized)
      b.bad = 1;
    if (mk && (int64_t) (mk - (1ull << 63)) > b.H)
      b.H = (int64_t) (mk - (1ull << 63));
  }
  if (t < p.W && b.tot[rec_index (p, b.B + t)] != p.ppb)
    atomicMin (&b.run, t);
  __syncthreads ();
  const uint32_t k = b.run;
  if (t < k) {
    const uint32_t r = rec_index (p, b.B + t);
    const uint32_t g = b.gen[r] + 1;
    if ((g & kTagMask) == 0)
      b.bad = 1;
    b.frame[r] = 0;
    b.gen[r] = g;
    b.tot[r] = 0;
    b.first[r] = kNoStamp;
  }
  __syncthreads ();
  if (t == 0)
    b.B += k;
  __syncthreads ();
  bool want = false;
  uint32_t r = 0;
  if (t < p.W) {
    r = rec_index (p, b.B + t);
    want = !b.frame[r] && b.tot[r] == 0;
  }
  uint32_t wanted;
  const uint32_t rank = block_excl_sum (want ? 1u : 0u, b.tmp32, &wanted);
  if (want && b.head + rank < p.prev_free_tail) {
    /* from the parameters only: every block reading host memory would load the bus */
    const uint64_t e = b.head + rank - p.ahead_base;
    if (e < p.ahead_n)
      b.frame[r] = p.ahead[e].ptr;
    else
      b.bad = 1;
  }
  __syncthreads ();
  if (t == 0) {
    const uint64_t avail = p.prev_free_tail > b.head ? p.prev_free_tail - b.head : 0;
    b.head += wanted < avail ? wanted : avail;
    if (b.bad)
      b.early = 0;
  }
  __syncthreads ();
}

__global__ void __launch_bounds__ (kThreads, 3)
reorder_main (const __grid_constant__ Params p)
{
  __shared__ Smem sm;
  __shared__ Job jobs[kThreads];   /* this block's payloads (outside sm: the finalizer moves them
                                    * after finalizing) */
  Blk &b = sm.blk;
  const uint32_t t = threadIdx.x;

  /* the next submission's K1 may be scheduled now (it waits for this one below) */
  pdl_trigger ();
  /* this thread's packet: descriptor and header fields, read before waiting for the previous
   * submission (they do not depend on it: only the burst memory and the descriptors, which no
   * kernel of the context writes) */
  const uint32_t i = blockIdx.x * p.per_block + t;
  const bool has_pkt = t < p.per_block && i < p.n;
  uint32_t off = 0, len = 0, seq = 0, key = 0;
  bool in_bounds = false;
  if (has_pkt) {
    off = desc_u32 (p.desc, i, 0);
    len = desc_u32 (p.desc, i, 4);
    in_bounds = (uint64_t) off + len <= p.data_size && len >= p.need;
    if (in_bounds) {
      seq = dq_bits_get_raw (p.data + off, p.seq_off, p.seq_w);
      key = p.batch_w ? dq_bits_get_raw (p.data + off, p.batch_off, p.batch_w) : seq;
    }
  }
  /* the previous submission: its finalizer done with the state (ready), or, with early start,
   * its last ticket taken (its blocks may still be moving payloads) */
  if (t == 0) {
    uint32_t early = 0;
    for (;;) {
      const uint64_t ready = ld_acquire64 (&p.sync->ready);
      if (p.early && ready + 2 >= p.job_seq &&
          ld_acquire32 (&p.sc_prev->blocks_done) == p.prev_grid) {
        /* this submission's scratch is reset (by the finalizer of job_seq - 2), the previous
         * one's claims and counts are in: early start if it had no deferred packets and no
         * fixups (the steady state) */
        if (__ldcg (&p.sc_prev->n_deferred) == 0 && __ldcg (&p.sc_prev->n_fixup) == 0) {
          early = 1;
          break;
        }
      }
      if (ready + 1 >= p.job_seq)
        break;
      pause_ns (32);             /* the ticket counter's line takes the last tickets' atomics */
    }
    b.early = early;
    b.bad = 0;
    b.n_short = b.n_late = b.n_def = b.n_acc = b.n_dup = 0;
    b.maxK = 0;
  }
  __syncthreads ();
  if (b.early)
    early_window (p, b);
  if (!b.early) {
    if (t == 0)
      while (ld_acquire64 (&p.sync->ready) + 1 < p.job_seq)
        pause_ns (0);
    __syncthreads ();
    if (t == 0) {
      b.B = __ldcg ((const long long *) &p.st->B);
      b.H = __ldcg ((const long long *) &p.st->H);
      b.initialized = __ldcg (&p.st->initialized);
      b.stamp = ld_cg64 (&p.st->stamp);
      b.head = ld_cg64 (&p.st->free_head);
    }
    if (t < p.W) {
      const DevRec *R = &p.st->rec[t];
      b.frame[t] = ld_cg64 (&R->frame);
      b.gen[t] = __ldcg (&R->gen);
      b.first[t] = ld_cg64 (&R->first_stamp);
      b.tot[t] = __ldcg (&R->filled);
    }
  }
  __syncthreads ();
  if (t < p.W) {
    /* "no packets before this burst" (the finalizer's rule, which sees this burst's too) */
    b.empty[t] = b.first[t] == kNoStamp || b.first[t] >= b.stamp;
    b.tag[t] = tag_of (b.gen[t]);
    b.pre_first[t] = b.first[t];
    b.first[t] = kNoStamp;
    b.filled[t] = 0;
    b.dups[t] = 0;
  }
  __syncthreads ();
  if (b.initialized && p.kind == DQ_JOB_REORDER) {
    /* the frames the finalizer will hand out at the start of this burst (same rule, same
     * prefix sum) */
    bool want = false;
    uint32_t r = 0;
    if (t < p.W) {
      r = rec_index (p, b.B + t);
      want = !b.frame[r] && b.empty[r];
    }
    uint32_t wanted;
    const uint32_t rank = block_excl_sum (want ? 1u : 0u, b.tmp32, &wanted);
    if (want && b.head + rank < p.free_tail)
      b.frame[r] = ring_entry (p, b.head + rank).ptr;
    if (t == 0) {
      const uint64_t avail = p.free_tail > b.head ? p.free_tail - b.head : 0;
      b.head_after = b.head + (wanted < avail ? wanted : avail);
    }
  } else if (t == 0) {
    b.head_after = b.head;
  }
  __syncthreads ();
  if (blockIdx.x == 0) {
    /* the window this burst claims against, for the next submission's early start (before the
     * ticket, whose release publishes it) */
    Win *V = p.win;
    if (t == 0) {
      V->B = b.B;
      V->H = b.H;
      V->stamp = b.stamp;
      V->head = b.head_after;
      V->initialized = b.initialized;
    }
    if (t < p.W) {
      V->frame[t] = b.frame[t];
      V->gen[t] = b.gen[t];
      V->first[t] = b.pre_first[t];
      V->filled[t] = b.tot[t];
    }
  }

  /* control: one thread per packet of this block */
  Job job = { NULL, NULL, NULL, NULL };
  if (has_pkt) {
    if (!in_bounds) {
      p.cls[i] = DQ_PKT_SHORT;
      atomicAdd (&b.n_short, 1u);
    } else {
      const uint8_t *pkt = p.data + off;
      if (!b.initialized) {
        p.cls[i] = DQ_PKT_DEFERRED;
        p.pk_x[i] = key;
        p.pk_seq[i] = seq;
        atomicAdd (&b.n_def, 1u);
        atomicMin (&p.sc->first_valid, i);
      } else {
        const int64_t K = dq_unwrap (key, b.H, p.key_bits);
        int64_t x = 0;
        uint32_t slot = 0;
        atomicMax (&b.maxK, (unsigned long long) K + (1ull << 63));
        if (!locate (p, K, seq, x, slot) || x < b.B) {
          p.cls[i] = DQ_PKT_LATE;
          atomicAdd (&b.n_late, 1u);
        } else if (x >= b.B + (int64_t) p.W) {
          p.cls[i] = DQ_PKT_DEFERRED;
          p.pk_x[i] = K;
          p.pk_seq[i] = seq;
          atomicAdd (&b.n_def, 1u);
        } else {
          const uint32_t r = rec_index (p, x);
          const uint64_t stamp = b.stamp + i;
          p.cls[i] = DQ_PKT_PLACED;
          unsigned long long want = ((unsigned long long) b.tag[r] << 48) | (stamp & kStampMask);
          unsigned long long old = atomicMin (p.claims + (size_t) r * p.ppb + slot, want);
          atomicMin (&b.first[r], (unsigned long long) stamp);
          if ((uint32_t) (old >> 48) != b.tag[r]) {
            /* the first claimer (so far) copies */
            atomicAdd (&b.filled[r], 1u);
            atomicAdd (&b.n_acc, 1u);
            if (b.frame[r])
              job = Job { pkt + p.pay_off, pkt, pkt + len,
                  (uint8_t *) b.frame[r] + (size_t) slot * p.lout };
          } else {
            atomicAdd (&b.dups[r], 1u);
            atomicAdd (&b.n_dup, 1u);
            if ((old & kStampMask) > (stamp & kStampMask)) {
              /* took the slot from a later arrival that may be copying now: settle later */
              uint32_t k = atomicAdd (&p.sc->n_fixup, 1u);
              p.aux[k] = i;
              p.pk_x[i] = x;
              p.pk_seq[i] = slot;
            }
          }
        }
      }
    }
  }
  if (t < p.per_block)
    jobs[t] = job;
  __syncthreads ();
  /* the counts, then the ticket: the finalizer needs the claims, not the payloads */
  if (t < p.W && (b.filled[t] || b.dups[t])) {
    atomicAdd (&p.sc->filled[t], b.filled[t]);
    atomicAdd (&p.sc->dups[t], b.dups[t]);
    atomicMin (&p.sc->first[t], b.first[t]);
  }
  if (t == 0) {
    if (b.n_short) atomicAdd (&p.sc->n_short, b.n_short);
    if (b.n_late) atomicAdd (&p.sc->n_late, b.n_late);
    if (b.n_def) atomicAdd (&p.sc->n_deferred, b.n_def);
    if (b.n_acc) atomicAdd (&p.sc->n_accepted, b.n_acc);
    if (b.n_dup) atomicAdd (&p.sc->n_dups, b.n_dup);
    if (b.maxK) atomicMax (&p.sc->maxK, b.maxK);
  }
  __syncthreads ();
  if (t == 0)    /* release: the block's claims and counts (before it by the barrier); acquire:
                  * the others', for the finalizer */
    b.ticket = atom_add_acq_rel (&p.sc->blocks_done, 1u);
  __syncthreads ();
  /* tickets 0 .. grid - 2 move their payloads; the first `helpers` of them then wait for the
   * finalizer (grid - 1, which is already running: every block took its ticket before it) and
   * share its work list. The finalizer moves its own payloads after finalizing, so that the
   * next submission can start sooner. */
  const uint32_t ticket = b.ticket;
  const uint32_t helpers = p.helpers < gridDim.x - 1 ? p.helpers : gridDim.x - 1;
  const bool finalizer = ticket == gridDim.x - 1;
  bool work = false;
  if (finalizer) {
    const bool early = b.early != 0;
    __syncthreads ();              /* the finalizer's shared memory overlays b */
    work = finalize (p, sm.fin, early);
  }
  const uint32_t nj = p.n - blockIdx.x * p.per_block < p.per_block
      ? p.n - blockIdx.x * p.per_block : p.per_block;
  move_payloads (p, SharedJobs { jobs }, p.n ? nj : 0, t, kThreads);
  __syncthreads ();
  if (t == 0) {
    __threadfence ();
    atomicAdd (&p.sync->moved, 1ull);
  }
  if (finalizer) {
    if (work)
      run_tail (p, helpers, helpers + 1);
  } else if (ticket < helpers) {
    if (t == 0) {
      /* backing off to ~1 µs: few polls while a long finalizer (the deferred path) runs. A
       * later submission's number means this one had no work: with work, the next submission
       * waits for every part of this tail, so it cannot have reached its finalizer. */
      uint64_t go;
      for (unsigned ns = 32; ((go = ld_acquire64 (&p.sc->go)) >> 1) < p.job_seq;
          ns = ns < 1024 ? 2 * ns : ns)
        pause_ns (ns);
      b.tail_work = (go >> 1) == p.job_seq ? (uint32_t) (go & 1) : 0;
    }
    __syncthreads ();
    if (b.tail_work)
      run_tail (p, ticket, helpers + 1);
  }
  /* the previous submission complete before this one is: its payloads are in the frames this
   * one's results may hand out, and its completion event stays ordered before this one's */
  pdl_wait ();
}

/* ---- gather ------------------------------------------------------------------------------ */

__global__ void __launch_bounds__ (kThreads, 3)
gather_main (const __grid_constant__ Params p)
{
  __shared__ uint32_t n_short, last;
  __shared__ Job jobs[kThreads];
  const uint32_t t = threadIdx.x;
  if (t == 0)
    n_short = 0;
  __syncthreads ();
  const uint32_t i = blockIdx.x * p.per_block + t;
  if (t < p.per_block && i < p.n) {
    uint8_t *dst = p.out + (size_t) i * p.lout;
    const uint32_t off = desc_u32 (p.desc, i, 0), len = desc_u32 (p.desc, i, 4);
    if ((uint64_t) off + len > p.data_size || len < p.pay_off + p.lin) {
      jobs[t] = Job { NULL, NULL, NULL, dst };       /* zero-filled */
      atomicAdd (&n_short, 1u);
    } else {
      const uint8_t *pkt = p.data + off;
      jobs[t] = Job { pkt + p.pay_off, pkt, pkt + len, dst };
    }
  }
  __syncthreads ();
  const uint32_t nj = p.n - blockIdx.x * p.per_block < p.per_block
      ? p.n - blockIdx.x * p.per_block : p.per_block;
  move_payloads (p, SharedJobs { jobs }, p.n ? nj : 0, t, kThreads);
  __syncthreads ();
  if (t == 0) {
    if (n_short)
      atomicAdd (&p.sc->n_short, n_short);
    __threadfence ();
    last = atomicAdd (&p.sc->blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads ();
  if (last && t == 0) {
    __threadfence ();
    uint32_t sh = atomicExch (&p.sc->n_short, 0u);
    p.sc->blocks_done = 0;
    ResHdr h;
    memset (&h, 0, sizeof h);
    h.job_short = sh;
    h.kind = DQ_JOB_GATHER;
    *p.res = h;
  }
}

/* ---- packetize --------------------------------------------------------------------------- */

__device__ void
set_bits (uint8_t *pk, uint32_t off, uint32_t width, uint32_t value)
{
  for (uint32_t i = 0; i < width; i++) {
    uint32_t bit = off + i;
    uint32_t v = (value >> (width - 1 - i)) & 1u;
    uint8_t m = (uint8_t) (0x80u >> (bit & 7));
    pk[bit >> 3] = v ? (uint8_t) (pk[bit >> 3] | m) : (uint8_t) (pk[bit >> 3] & ~m);
  }
}

__global__ void __launch_bounds__ (kThreads, 3)
packetize_main (const __grid_constant__ PacketizeParams q)
{
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t s = blockIdx.x * (kThreads / 32) + (threadIdx.x >> 5);
  if (s >= q.ppb)
    return;
  uint8_t *pk = q.out + (size_t) s * q.stride;
  /* header template, zeros between, payload, zeros after */
  for (uint32_t k = lane; k < q.header_len; k += 32)
    pk[k] = q.header[k];
  for (uint32_t k = q.header_len + lane; k < q.pay_off; k += 32)
    pk[k] = 0;
  const uint8_t *src = q.frame + (size_t) s * q.pay_size;
  team_copy (pk + q.pay_off, src, q.pay_size, src, src + q.pay_size, lane, 32);
  for (uint32_t k = q.pay_off + q.pay_size + lane; k < q.plen; k += 32)
    pk[k] = 0;
  __syncwarp ();
  if (lane == 0) {
    uint32_t seqmask = q.seq_w == 32 ? 0xffffffffu : (1u << q.seq_w) - 1;
    set_bits (pk, q.seq_off, q.seq_w,
        (uint32_t) ((q.batch_id * q.ppb + s) & seqmask));
    if (q.batch_w) {
      uint32_t bm = q.batch_w == 32 ? 0xffffffffu : (1u << q.batch_w) - 1;
      set_bits (pk, q.batch_off, q.batch_w, (uint32_t) (q.batch_id & bm));
    }
    if (q.ipv4_off != DQ_PACKETIZE_NONE) {
      uint8_t *ip = pk + q.ipv4_off;
      uint32_t ihl = (ip[0] & 0xfu) * 4u, tl = q.plen - q.ipv4_off;
      ip[2] = (uint8_t) (tl >> 8);
      ip[3] = (uint8_t) tl;
      ip[10] = ip[11] = 0;
      uint32_t sum = 0;
      for (uint32_t k = 0; k < ihl; k += 2)
        sum += ((uint32_t) ip[k] << 8) | ip[k + 1];
      while (sum >> 16)
        sum = (sum & 0xffffu) + (sum >> 16);
      sum = ~sum & 0xffffu;
      ip[10] = (uint8_t) (sum >> 8);
      ip[11] = (uint8_t) sum;
    }
    if (q.udp_off != DQ_PACKETIZE_NONE) {
      uint8_t *udp = pk + q.udp_off;
      uint32_t ul = q.plen - q.udp_off;
      udp[4] = (uint8_t) (ul >> 8);
      udp[5] = (uint8_t) ul;
      udp[6] = udp[7] = 0;
    }
  }
  if (s == 0 && lane == 0) {
    ResHdr h;
    memset (&h, 0, sizeof h);
    h.kind = DQ_JOB_PACKETIZE;
    *q.res = h;
  }
}

/* ---- 10-bit 4:2:2 pgroups -> planar I422_10LE --------------------------------------------- */

struct UnpackParams {
  const uint8_t *src;          /* rows of pgroups, contiguous */
  uint8_t *y, *u, *v;
  size_t y_pitch, u_pitch, v_pitch;
  uint32_t pgroups;            /* per row: width / 2 */
  uint32_t tiles_per_row;      /* runs of blockDim.x pgroups in a row */
  uint64_t tiles;              /* tiles_per_row * height */
};

/* Stores of little-endian 16/32-bit samples (the GPU, like the hosts the emulation runs on, is
 * little-endian): one store where the address allows it, bytes otherwise. The alignment is the
 * same for every thread of a row (the row's base and an even offset), so a warp never
 * diverges on it. */
__device__ __forceinline__ void
st_le16 (uint8_t *p, uint32_t v)
{
  if (((uintptr_t) p & 1u) == 0) {
    *(uint16_t *) p = (uint16_t) v;
  } else {
    p[0] = (uint8_t) v;
    p[1] = (uint8_t) (v >> 8);
  }
}

__device__ __forceinline__ void
st_le16x2 (uint8_t *p, uint32_t lo, uint32_t hi)
{
  if (((uintptr_t) p & 3u) == 0) {
    *(uint32_t *) p = lo | (hi << 16);
  } else {
    st_le16 (p, lo);
    st_le16 (p + 2, hi);
  }
}

/* One thread per pgroup: a tile is blockDim.x consecutive pgroups of one row, so a warp reads
 * 32 * 5 contiguous bytes and writes 32 * 4 contiguous bytes of Y and 32 * 2 of U and of V.
 * The grid strides over the tiles (its size is capped; any picture fits). */
__global__ void __launch_bounds__ (kThreads)
unpack_uyvp_main (const __grid_constant__ UnpackParams q)
{
  for (uint64_t t = blockIdx.x; t < q.tiles; t += gridDim.x) {
    const uint64_t row = t / q.tiles_per_row;
    const uint32_t x = (uint32_t) (t - row * q.tiles_per_row) * blockDim.x + threadIdx.x;
    if (x >= q.pgroups)
      continue;
    uint32_t c[4];
    dq_uyvp_pgroup (q.src + (size_t) row * q.pgroups * 5 + (size_t) x * 5, c);
    st_le16x2 (q.y + (size_t) row * q.y_pitch + 4 * (size_t) x, c[1], c[3]);
    st_le16 (q.u + (size_t) row * q.u_pitch + 2 * (size_t) x, c[0]);
    st_le16 (q.v + (size_t) row * q.v_pitch + 2 * (size_t) x, c[2]);
  }
}

}  /* namespace dqk */
