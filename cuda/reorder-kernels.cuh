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
 *                     state; or, early start (the posts, early_window), once the previous
 *                     submission's blocks have all posted their counts (else once its last ticket
 *                     is taken) and it had no deferred packets and no fixups, the window its
 *                     finalizer will leave, computed here. Block 0 posts the window the burst
 *                     claims against for the next submission; every block posts its counts
 *                     before its ticket.
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
 *                     shift, when both lie inside the packet; else bytes), 16-byte stores; on
 *                     sm_90 on, plain copies of payloads from 2 KiB whose addresses are all
 *                     16-byte aligned go through the SM's copy engine instead (move_bulk: slots
 *                     in the launch's dynamic shared memory), and on sm_80 on, those from 512 B
 *                     up to 2 KiB through asynchronous 16-byte copies into the same memory
 *                     (move_async). The finalizer moves its own block's
 *                     payloads after finalizing.
 *                     Finalizer: the last block to take a ticket settles fixups, runs the
 *                     deferred packets in arrival order in epochs (a block-wide prefix max gives the
 *                     window after each packet; packets between two moves of the window are claimed
 *                     together), emits batches, lists missing slots, completes batches, hands out
 *                     frames, writes the state back and hands it over (Sync.ready, a release),
 *                     then copies the results into mapped host memory (after the release, so that
 *                     it waits for no write across the bus). The state's words also go to a
 *                     mailbox (Mail), from which the next finalizer, when it started early,
 *                     takes them without waiting for the hand-over.
 *                     Tail: the finalizer's work list (payloads of deferred and fixup winners,
 *                     zero-fill of the missing slots of emitted batches), shared by the finalizer
 *                     and up to `helpers` blocks (one per SM) that took their tickets before it and
 *                     wait for it (a flag holding the submission's number: released with the work
 *                     list, or set at the finalizer's start when none can arise). This
 *                     cannot deadlock: a helper waits only once every block has its ticket, so the
 *                     finalizer is running. Empty in the steady state (no loss, no in-burst
 *                     duplicate race): the helpers then just leave. With work, the tail first
 *                     waits for every block's payloads (Params.slot_moved: a fixup rewrites a
 *                     slot a later arrival copied) and its last part hands the state over.
 *
 * Launch: K1 with programmatic stream serialization (sm_90 on) when the previous launch on the
 * stream was the context's own K1: every block allows the next launch at its start, so the next
 * submission's blocks are scheduled while this one runs, read their descriptors and headers, and
 * wait for the hand-over flag (not for this kernel's end) before touching the state: their claims
 * and their finalizer run while this submission's payloads are still moving. Before it exits,
 * the finalizer waits for the previous kernel to complete (cudaGridDependencySynchronize), so
 * that completions stay in submission order and an emitted frame holds every payload; the other
 * blocks leave as soon as they are done. Gather, packetize
 * and the unpack of 10-bit 4:2:2 pgroups to planar I422_10LE are plain single launches, and the
 * K1 after one of them is launched plainly too. Completion: an event recorded after the
 * submission (the unpack belongs to no context: it runs on the caller's stream); for K1 also a
 * word in its results header (ResHdr.done) that the finalizer's block writes last (mark_done),
 * which the host reads without a call into the CUDA runtime (a completed event's query cost
 * 0.6-0.8 us a poll on the H200's host, the word 0.1). The free-frame
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

/* Scratch and posts: kSets of each, by job_seq % kSets (see the posts) */
constexpr uint32_t kSets = 4;

struct Scratch {           /* per submission (kSets, by job_seq % kSets) */
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

/* Early start's posts: what a submission's blocks publish for the next submission's, in tagged
 * 64-bit words (bits 48..63 the submission's tag, post_tag (); bits 0..47 the value), each
 * written and read as one word, so that a reader takes a word as soon as it carries the right
 * tag: no flag, no fence and no second round trip between the last block of a submission and
 * the blocks of the next. With the window and the counts they carry, the next submission's
 * blocks compute the window its finalizer will leave, in the steady state (no deferred packets,
 * no fixups, no tag wrap, the frames among the parameters' ring entries), and claim without
 * waiting for that finalizer ("early start"). kSets sets, by job_seq % kSets (as the scratch:
 * the scratch of submission s is read by its finalizer and by the blocks of s + 1, and reset by
 * the finalizer of s + 1, which the blocks of s + kSets wait for before they post or add to
 * theirs; four sets, not three: with three, each submission's blocks waited for the hand-over
 * of the finalizer two submissions back, which came late enough to be on the chain).
 *
 * The window a submission's blocks claim against (before their packets), posted by its block 0,
 * 32 bits a word (kWin* below): B, H, the stamp and the free ring's head after the frames handed
 * out at the burst's start (two words each, low half first), whether the state is initialized,
 * then per record its frame (two words), generation, first claimers and earliest arrival (two).
 *
 * Each block's part of the counts, two words, posted once its claims are done:
 *   [0] bit 40: the block cannot say it here (deferred packets, fixups, more than two records
 *       touched): the next submission's blocks take the previous submission's last ticket and
 *       its scratch instead; bits 0..32: its largest key above the window's H (0: none above)
 *   [1] two records, 24 bits each (the first at bit 0): bit 23 set, bits 17..22 the record,
 *       bits 8..16 its first claimers in the block, bits 0..7 the index in the block of its
 *       earliest packet.
 *
 * Tags repeat every 2^DQ_POST_TAG_BITS submissions; the host clears the posts then, before a
 * submission that it launches without early start, so that no word left from an older
 * submission can carry a tag that looks current. */
#ifndef DQ_POST_TAG_BITS
#define DQ_POST_TAG_BITS 15
#endif
constexpr uint64_t kPostTagMask = (1ull << DQ_POST_TAG_BITS) - 1;
constexpr uint64_t kPostValue = (1ull << 48) - 1;
constexpr uint32_t kWinHead = 9, kWinRec = 6;
constexpr uint32_t kWinWords = kWinHead + kWinRec * DQ_REORDER_MAX_WINDOW;
constexpr uint64_t kPostFallback = 1ull << 40;
constexpr uint32_t kPostMaxGrid = 2 * kThreads;   /* posts read block-wide, two per thread */

/* Hand-over between submissions (never reset; zero at start). The next submission's blocks may
 * run while this one's still move payloads: they wait only for `ready`. */
struct Sync {
  unsigned long long ready;  /* job_seq of the last submission done with the state and scratch */
};

/* The state's words as a finalizer leaves them, each with the number of the submission that
 * wrote it, in one 16-byte atomic (sm_90 on; the emulator: a word, then its tag). A finalizer
 * that started early takes the state from here as soon as its predecessor has written it, not
 * after that one's hand-over (a release that waits for every store of its block, then the flag,
 * then the state's loads: three round trips on the finalizers' chain). A submission starts
 * early only after one with no deferred packets and no fixups, whose tail has no work, so
 * nothing changes that state after it is put here. The state itself is double-buffered (by
 * job_seq % 2, read the one before), so that an early finalizer's write-back never meets its
 * predecessor's: the one it overwrites was handed over (`ready`) before this submission's
 * blocks started early. */
struct Mail {
  unsigned long long v, tag;
};

#if defined (DQ_CUDA_EMU) || (defined (__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
#define DQ_HAVE_MAIL 1
#else
#define DQ_HAVE_MAIL 0
#endif

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
  /* K1: the submission's number, written last (mark_done): the host reads its completion here,
   * with no call into the CUDA runtime */
  unsigned long long done;
};

static_assert (sizeof (DqReorderBatch) % 8 == 0, "result entries are copied in 8-byte words");

struct FrameEnt {
  uint64_t ptr, user;
};

struct Params {
  /* job */
  const uint8_t *data;
  uint64_t data_size;
  const uint8_t *desc;     /* packet i's offset (+0) and length (+4) at desc + i * desc_stride,
                            * or its stride word there (desc_stride 4: 1 << desc_shift bytes) */
  const uint8_t *desc_ts;  /* its timestamp at desc_ts + i * ts_stride (n_runs 0) */
  uint32_t desc_stride, ts_stride, desc_shift;
  /* several bursts' runs (dq_reorder_gpu_submit_word_runs): run k from packet run_start[k]
   * on, every packet of it taking run_ts[k] */
  uint32_t n_runs;
  uint32_t run_start[DQ_REORDER_MAX_RUNS];
  uint64_t run_ts[DQ_REORDER_MAX_RUNS];
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
  DevState *st, *st_out;   /* the state as the previous submission left it; this one's */
  Mail *mail;              /* the state's words, one per entry (Mail) */
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
  Sync *sync;
  /* blocks done moving, counted per host slot (never reset: a slot takes its next submission
   * only once this one's completion was read, so no other submission counts there meanwhile),
   * and what it reaches once this submission's blocks are done (run_tail, mark_done) */
  unsigned long long *slot_moved;
  uint64_t slot_through;
  /* early start: this submission's posts and those of the K1 submission before it (job_seq -
   * 1), its scratch, and what of its parameters the window after it depends on; posts: this
   * submission's blocks take the previous one's counts from its posts (else from its last
   * ticket and its scratch) */
  unsigned long long *post_win, *post_win_prev;   /* kWinWords each */
  unsigned long long *post_blk, *post_blk_prev;   /* two words a block */
  Scratch *sc_prev;
  uint32_t prev_grid, prev_n, prev_per_block, early, posts;
  uint64_t prev_free_tail;
  /* bulk copies (move_bulk): slots of kBulkPiece bytes in the launch's dynamic shared memory;
   * 0: not these */
  uint32_t bulk_slots;
  /* asynchronous copies (move_async) through the launch's dynamic shared memory (set only
   * where bulk_slots is 0); with neither, the registers' path */
  uint32_t async_copy;
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
 * and its memory is visible. Without it (older GPUs, no PDL launch) both are no-ops and the
 * stream orders kernels as usual. The emulator starts the next launch's blocks once every block
 * of this one has started, and waits in pdl_wait as a GPU does. */
__device__ __forceinline__ void pdl_trigger ()
{
#if !defined (DQ_CUDA_EMU) && defined (__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion ();
#endif
}

__device__ __forceinline__ void pdl_wait ()
{
#if defined (DQ_CUDA_EMU)
  dq_emu_grid_dependency_sync ();
#elif defined (__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
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

/* Posts: tagged words, written and read whole (relaxed: each word is its own message). */
__device__ __forceinline__ uint64_t post_tag (uint64_t job_seq)
{
  return ((kPostTagMask + 1) | (job_seq & kPostTagMask)) << 48;
}

__device__ __forceinline__ void post_put (unsigned long long *w, uint64_t tag, uint64_t v)
{
#ifdef DQ_CUDA_EMU
  *(volatile unsigned long long *) w = tag | v;
#else
  asm volatile ("st.relaxed.gpu.global.u64 [%0], %1;" :: "l" (w), "l" (tag | v) : "memory");
#endif
}

/* a 64-bit value as two words, the low half first */
__device__ __forceinline__ void post_put64 (unsigned long long *w, uint64_t tag, uint64_t v)
{
  post_put (w, tag, (uint32_t) v);
  post_put (w + 1, tag, v >> 32);
}

__device__ __forceinline__ uint64_t post_get (const unsigned long long *w)
{
#ifdef DQ_CUDA_EMU
  return *(const volatile unsigned long long *) w;
#else
  uint64_t v;
  asm volatile ("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l" (v) : "l" (w) : "memory");
  return v;
#endif
}

/* a posted window's 64-bit value from its two words' values */
__device__ __forceinline__ uint64_t win_u64 (const uint32_t *w, uint32_t k)
{
  return w[k] | (uint64_t) w[k + 1] << 32;
}

/* two words in one access (each still a word of its own) */
__device__ __forceinline__ void post_get2 (const unsigned long long *w, uint64_t &a, uint64_t &b)
{
#ifdef DQ_CUDA_EMU
  a = *(const volatile unsigned long long *) w;
  b = *(const volatile unsigned long long *) (w + 1);
#else
  asm volatile ("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l" (a), "=l" (b) : "l" (w)
      : "memory");
#endif
}

/* The finalizer's mailbox (Mail): put a word with its tag; get both as one was put. */
__device__ __forceinline__ void mail_put (Mail *m, uint64_t v, uint64_t tag)
{
#if defined (DQ_CUDA_EMU)
  *(volatile unsigned long long *) &m->v = v;
  __atomic_store_n (&m->tag, tag, __ATOMIC_RELEASE);
#elif DQ_HAVE_MAIL
  asm volatile ("{\n\t.reg .b128 d, b;\n\tmov.b128 b, {%1, %2};\n\t"
      "atom.relaxed.gpu.global.exch.b128 d, [%0], b;\n\t}"
      :: "l" (m), "l" (v), "l" (tag) : "memory");
#else
  (void) m;
  (void) v;
  (void) tag;
#endif
}

__device__ __forceinline__ void mail_get (const Mail *m, uint64_t &v, uint64_t &tag)
{
#if defined (DQ_CUDA_EMU)
  tag = __atomic_load_n (&m->tag, __ATOMIC_ACQUIRE);
  v = *(const volatile unsigned long long *) &m->v;
#elif DQ_HAVE_MAIL
  /* a compare-and-swap that writes back what it compares with: an atomic 16-byte read */
  asm volatile ("{\n\t.reg .b128 d, c;\n\tmov.b128 c, {%2, %2};\n\t"
      "atom.relaxed.gpu.global.cas.b128 d, [%3], c, c;\n\tmov.b128 {%0, %1}, d;\n\t}"
      : "=l" (v), "=l" (tag) : "l" (0ull), "l" (m) : "memory");
#else
  (void) m;
  v = tag = 0;
#endif
}

__device__ __forceinline__ void pause_ns (unsigned ns)
{
#ifdef DQ_CUDA_EMU
  (void) ns;
  dq_emu_yield ();
#else
  __nanosleep (ns);
#endif
}

/* One thread: until the previous submission's finalizer has handed the state over (Sync.ready) */
__device__ __forceinline__ void wait_ready (const Params &p)
{
  while (ld_acquire64 (&p.sync->ready) + 1 < p.job_seq)
    pause_ns (0);
}

/* Packet i's offset (x) and length (y), one load; its timestamp. The descriptors are the
 * caller's DqReorderPacket array, a host submission's packed copy (reorder.cu,
 * stage_descriptors) or the caller's packed words (offsets and lengths 8 bytes apart, timestamps
 * in an array of their own), or 4-byte stride words (desc_stride 4: the offset in strides of
 * 1 << desc_shift bytes in the low bits, the length above), the caller's or a submission of
 * runs' copy (stage_word_runs: its timestamps in the parameters). A word's offset stays below
 * 2^32 (index mask and shift bounded in daqiri-reorder.h). */
__device__ __forceinline__ uint2 desc_offlen (const Params &p, uint32_t i)
{
  if (p.desc_stride == sizeof (uint32_t)) {
    const uint32_t w = __ldcg ((const unsigned int *) p.desc + i);
    return make_uint2 ((w & DQ_REORDER_WORD_INDEX_MASK) << p.desc_shift,
        w >> DQ_REORDER_WORD_LENGTH_SHIFT);
  }
  const uint64_t v = ld_cg64 (p.desc + (size_t) i * p.desc_stride);
  return make_uint2 ((uint32_t) v, (uint32_t) (v >> 32));
}

__device__ __forceinline__ uint64_t desc_ts (const Params &p, uint32_t i)
{
  if (p.n_runs) {
    uint32_t k = 0;
    while (k + 1 < p.n_runs && p.run_start[k + 1] <= i)
      k++;
    return p.run_ts[k];
  }
  return ld_cg64 (p.desc_ts + (size_t) i * p.ts_stride);
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

#include "reorder-move.cuh"     /* payload movers (included only here) */

/* the launch's dynamic shared memory */
__device__ __forceinline__ uint8_t *
dyn_shared ()
{
#ifdef DQ_CUDA_EMU
  return (uint8_t *) dq_emu_dynamic_shared ();
#else
  extern __shared__ __align__ (16) uint8_t dq_dyn[];
  return dq_dyn;
#endif
}

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

/* ---- window rules ------------------------------------------------------------------------ */

/* What the finalizer decides and the blocks of a submission forecast (K1's prologue, early
 * start): one definition of each rule, so that the two cannot disagree. */

/* A record takes a frame from the free ring when it has none and no packets: none counted
 * (since == kNoStamp), or none arrived before the stamp `since` (the finalizer committing what
 * the blocks of a burst decided at its start, after they placed packets). */
__device__ __forceinline__ bool
wants_frame (uint64_t frame, uint32_t filled, uint64_t first, uint64_t since)
{
  return !frame && (since == kNoStamp ? filled == 0 : first == kNoStamp || first >= since);
}

/* The records wanting a frame take the free ring's entries in batch-id order (thread t: the
 * record at B + t): this thread's rank among them; *wanted (thread 0): how many. With a window
 * of at most 32 batches one warp holds it: ranks by ballot, no barrier. Block-wide. */
__device__ __forceinline__ uint32_t
frame_rank (const Params &p, bool want, uint32_t *tmp32, uint32_t *wanted)
{
  if (p.W <= 32) {
    const uint32_t m = __ballot_sync (0xffffffffu, want);
    *wanted = __popc (m);
    return __popc (m & ((1u << (threadIdx.x & 31)) - 1));
  }
  return block_excl_sum (want ? 1u : 0u, tmp32, wanted);
}

/* The free ring's head after `wanted` frames were asked for, the ring filled up to `tail`. */
__device__ __forceinline__ uint64_t
head_after (uint64_t head, uint32_t wanted, uint64_t tail)
{
  const uint64_t avail = tail > head ? tail - head : 0;
  return head + (wanted < avail ? wanted : avail);
}

/* Complete batches in a row at the window's base (B): the first t < W whose record is not
 * complete; filled (r) is the count of record r. *run must hold p.W, set before the caller's
 * last barrier. Block-wide. */
template <typename Filled>
__device__ __forceinline__ uint32_t
complete_run (const Params &p, int64_t B, Filled filled, uint32_t *run)
{
  const uint32_t t = threadIdx.x;
  if (t < p.W && filled (rec_index (p, B + t)) != p.ppb)
    atomicMin (run, t);
  __syncthreads ();
  return *run;
}

#include "reorder-finalize.cuh" /* the finalizer and its tail (included only here) */

/* ---- K1 ---------------------------------------------------------------------------------- */

/* How a K1 block takes the previous submission: wait for its finalizer's state; early start
 * from its posts; early start from its last ticket and its scratch. */
enum Take : uint32_t { kTakeState, kTakePosts, kTakeTicket };

/* K1's block state (its shared memory overlays the finalizer's) */
struct Blk {
  int64_t B, H;
  uint32_t initialized;
  uint64_t stamp, head;
  uint64_t frame[DQ_REORDER_MAX_WINDOW];
  uint32_t tag[DQ_REORDER_MAX_WINDOW];
  uint32_t filled[DQ_REORDER_MAX_WINDOW], dups[DQ_REORDER_MAX_WINDOW];
  unsigned long long first[DQ_REORDER_MAX_WINDOW];
  uint32_t tmp32[kThreads / 32];
  uint32_t n_short, n_late, n_def, n_acc, n_dup, n_fix;
  unsigned long long maxK;
  uint32_t ticket, tail_work;
  /* the window as it stood before this burst (posted) */
  uint32_t gen[DQ_REORDER_MAX_WINDOW], tot[DQ_REORDER_MAX_WINDOW];
  unsigned long long pre_first[DQ_REORDER_MAX_WINDOW];
  uint64_t head_after;           /* after the frames handed out at the burst's start */
  uint32_t early, bad, run;      /* early start taken; its window cannot be computed; run */
  /* early start: how the previous submission is taken (Take), the window its blocks posted
   * (kWin* words), its counts (from its posts: first claimers, earliest index in its burst,
   * largest key above its H; from its scratch: first claimers, earliest stamp, maxK) and
   * whether one of its blocks could not post its part (fallback) */
  uint32_t take, fallback;
  uint32_t wv[kWinWords];
  uint32_t add_tot[DQ_REORDER_MAX_WINDOW];
  unsigned long long add_first[DQ_REORDER_MAX_WINDOW];
  unsigned long long add_key;
  /* this block's post: the records it touched (at most two said) */
  uint32_t n_rec, rec_post[2];
};

union Smem {
  Fin fin;
  Blk blk;
};

#include "reorder-early.cuh"    /* early start (included only here) */

/* The submission complete, for the host (ResHdr.done), by the finalizer's block once the
 * previous submission is (pdl_wait): every block of this one done moving its payloads (its
 * slot's count), and its tail (work) done; then everything the submission wrote, made visible to the system,
 * before the word. What an event recorded after the kernel would say, a little earlier.
 * Block-wide. */
__device__ void
mark_done (const Params &p, bool work)
{
  __syncthreads ();                /* the results this block wrote, before thread 0's fence */
  if (threadIdx.x != 0)
    return;
  while (ld_acquire64 (p.slot_moved) < p.slot_through)
    pause_ns (64);
  if (work)                        /* its last part hands over after its writes */
    while (ld_acquire64 (&p.sync->ready) < p.job_seq)
      pause_ns (64);
  __threadfence_system ();
  *(volatile unsigned long long *) &p.res->done = p.job_seq;
}

/* This thread's packet of the burst: its descriptor and header fields. */
struct Pkt {
  uint32_t i;                      /* index in the burst */
  bool has;                        /* this thread has a packet */
  bool in_bounds;                  /* inside the burst memory and long enough for the fields */
  uint32_t off, len, seq, key;
};

/* Read before waiting for the previous submission: they do not depend on it (only the burst
 * memory and the descriptors, which no kernel of the context writes). */
__device__ __forceinline__ Pkt
read_packet (const Params &p)
{
  Pkt k;
  k.i = blockIdx.x * p.per_block + threadIdx.x;
  k.has = threadIdx.x < p.per_block && k.i < p.n;
  k.off = k.len = k.seq = k.key = 0;
  k.in_bounds = false;
  if (k.has) {
    const uint2 d = desc_offlen (p, k.i);
    k.off = d.x;
    k.len = d.y;
    k.in_bounds = (uint64_t) k.off + k.len <= p.data_size && k.len >= p.need;
    if (k.in_bounds) {
      k.seq = dq_bits_get_raw (p.data + k.off, p.seq_off, p.seq_w);
      k.key = p.batch_w ? dq_bits_get_raw (p.data + k.off, p.batch_off, p.batch_w) : k.seq;
    }
  }
  return k;
}

/* How the block takes the previous submission (b.take): once its finalizer is done with the
 * state (ready), or, with early start, once this submission's scratch and posts are free (the
 * finalizer of job_seq - kSets + 1 handed over), its claims and counts in (its blocks may still
 * be moving payloads). The block's counts start at zero. Block-wide. */
__device__ __forceinline__ void
choose_take (const Params &p, Blk &b)
{
  const uint32_t t = threadIdx.x;
  if (t == 0) {
    b.early = 0;
    b.bad = 0;
    b.n_short = b.n_late = b.n_def = b.n_acc = b.n_dup = b.n_fix = 0;
    b.maxK = 0;
    b.n_rec = 0;
    b.fallback = 0;
    b.add_key = 0;
    uint32_t take = kTakeState;
    for (;;) {
      const uint64_t ready = ld_acquire64 (&p.sync->ready);
      if (ready + 1 >= p.job_seq)
        break;
      if (p.early && ready + kSets - 1 >= p.job_seq) {
        take = p.posts ? kTakePosts : kTakeTicket;
        break;
      }
      pause_ns (32);
    }
    b.take = take;
  }
  if (t < p.W) {
    b.add_tot[t] = 0;
    b.add_first[t] = kNoStamp;
  }
  __syncthreads ();
}

/* Early start (b.take is not kTakeState): the previous submission's window and counts from its
 * posts as they land, or else from its last ticket (then b.early only where it had no deferred
 * packets and no fixups: else this waits for its finalizer). Block-wide. */
__device__ __forceinline__ void
take_previous (const Params &p, Blk &b)
{
  const uint32_t t = threadIdx.x;
  const bool posts = b.take == kTakePosts && take_posts (p, b);
  if (!posts) {
    if (t == 0)
      while (ld_acquire32 (&p.sc_prev->blocks_done) != p.prev_grid)
        pause_ns (32);       /* the ticket counter's line takes the last tickets' atomics */
    __syncthreads ();        /* the block's loads after thread 0's acquire */
    take_scratch (p, b);
    if (t == 0 && !b.early)
      wait_ready (p);
    __syncthreads ();
  }
  early_take (p, b, posts);
}

/* The window as the previous finalizer left it in the state (no early start). */
__device__ __forceinline__ void
load_window (const Params &p, Blk &b)
{
  const uint32_t t = threadIdx.x;
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

/* The records' claim tags, their earliest arrivals before this burst, and no counts yet.
 * Block-wide. */
__device__ __forceinline__ void
open_burst (const Params &p, Blk &b)
{
  const uint32_t t = threadIdx.x;
  __syncthreads ();
  if (t < p.W) {
    b.tag[t] = tag_of (b.gen[t]);
    b.pre_first[t] = b.first[t];
    b.first[t] = kNoStamp;
    b.filled[t] = 0;
    b.dups[t] = 0;
  }
  __syncthreads ();
}

/* The frames the finalizer will hand out at the start of this burst (fill_frames with "no
 * packets before this burst": the finalizer sees this burst's too), and the free ring's head
 * after them. Block-wide. */
__device__ __forceinline__ void
frames_at_burst_start (const Params &p, Blk &b)
{
  const uint32_t t = threadIdx.x;
  if (b.initialized && p.kind == DQ_JOB_REORDER) {
    bool want = false;
    uint32_t r = 0;
    if (t < p.W) {
      r = rec_index (p, b.B + t);
      want = wants_frame (b.frame[r], b.tot[r], b.pre_first[r], b.stamp);
    }
    uint32_t wanted;
    const uint32_t rank = frame_rank (p, want, b.tmp32, &wanted);
    if (want && b.head + rank < p.free_tail)
      b.frame[r] = ring_entry (p, b.head + rank).ptr;
    if (t == 0)
      b.head_after = head_after (b.head, wanted, p.free_tail);
  } else if (t == 0) {
    b.head_after = b.head;
  }
  __syncthreads ();
}

/* Block 0: the window this burst claims against, posted for the next submission's early
 * start. */
__device__ __forceinline__ void
post_window (const Params &p, const Blk &b)
{
  const uint32_t t = threadIdx.x;
  const uint64_t tag = post_tag (p.job_seq);
  unsigned long long *w = p.post_win;
  if (t == 0) {
    post_put64 (w, tag, (uint64_t) b.B);
    post_put64 (w + 2, tag, (uint64_t) b.H);
    post_put64 (w + 4, tag, b.stamp);
    post_put64 (w + 6, tag, b.head_after);
    post_put (w + 8, tag, b.initialized);
  }
  if (t < p.W) {
    unsigned long long *q = w + kWinHead + kWinRec * t;
    post_put64 (q, tag, b.frame[t]);
    post_put (q + 2, tag, b.gen[t]);
    post_put (q + 3, tag, b.tot[t]);
    post_put64 (q + 4, tag, b.pre_first[t]);
  }
}

/* A packet of batch x, inside the window, claims its slot with (tag, arrival stamp): the
 * earliest arrival wins whatever the thread order. The first claimer (so far) copies, if the
 * batch has a frame; one that took the slot from a later arrival that may be copying now leaves
 * a fixup for the finalizer. Returns the payload's move (none: dst NULL). */
__device__ __forceinline__ Job
claim_slot (const Params &p, Blk &b, const Pkt &k, int64_t x, uint32_t slot)
{
  const uint8_t *pkt = p.data + k.off;
  const uint32_t r = rec_index (p, x);
  const uint64_t stamp = b.stamp + k.i;
  p.cls[k.i] = DQ_PKT_PLACED;
  unsigned long long want = ((unsigned long long) b.tag[r] << 48) | (stamp & kStampMask);
  unsigned long long old = atomicMin (p.claims + (size_t) r * p.ppb + slot, want);
  atomicMin (&b.first[r], (unsigned long long) stamp);
  if ((uint32_t) (old >> 48) != b.tag[r]) {
    atomicAdd (&b.filled[r], 1u);
    atomicAdd (&b.n_acc, 1u);
    if (b.frame[r])
      return Job { pkt + p.pay_off, pkt, pkt + k.len,
          (uint8_t *) b.frame[r] + (size_t) slot * p.lout };
  } else {
    atomicAdd (&b.dups[r], 1u);
    atomicAdd (&b.n_dup, 1u);
    if ((old & kStampMask) > (stamp & kStampMask)) {
      uint32_t f = atomicAdd (&p.sc->n_fixup, 1u);
      atomicAdd (&b.n_fix, 1u);
      p.aux[f] = k.i;
      p.pk_x[k.i] = x;
      p.pk_seq[k.i] = slot;
    }
  }
  return Job { NULL, NULL, NULL, NULL };
}

/* Control, one thread per packet of the block: short, late, deferred (beyond the window, or the
 * stream not started: the finalizer takes it in arrival order) or placed (claim_slot); counted
 * in the block's totals. Returns the payload's move (none: dst NULL). */
__device__ __forceinline__ Job
control_packet (const Params &p, Blk &b, const Pkt &k)
{
  const Job none = { NULL, NULL, NULL, NULL };
  if (!k.has)
    return none;
  if (!k.in_bounds) {
    p.cls[k.i] = DQ_PKT_SHORT;
    atomicAdd (&b.n_short, 1u);
    return none;
  }
  if (!b.initialized) {
    p.cls[k.i] = DQ_PKT_DEFERRED;
    p.pk_x[k.i] = k.key;
    p.pk_seq[k.i] = k.seq;
    atomicAdd (&b.n_def, 1u);
    atomicMin (&p.sc->first_valid, k.i);
    return none;
  }
  const int64_t K = dq_unwrap (k.key, b.H, p.key_bits);
  int64_t x = 0;
  uint32_t slot = 0;
  atomicMax (&b.maxK, (unsigned long long) K + (1ull << 63));
  if (!locate (p, K, k.seq, x, slot) || x < b.B) {
    p.cls[k.i] = DQ_PKT_LATE;
    atomicAdd (&b.n_late, 1u);
    return none;
  }
  if (x >= b.B + (int64_t) p.W) {
    p.cls[k.i] = DQ_PKT_DEFERRED;
    p.pk_x[k.i] = K;
    p.pk_seq[k.i] = k.seq;
    atomicAdd (&b.n_def, 1u);
    return none;
  }
  return claim_slot (p, b, k, x, slot);
}

/* The block's counts into the submission's scratch: per record (and the records it touched, at
 * most two said in its post), then its totals. */
__device__ __forceinline__ void
add_counts (const Params &p, Blk &b)
{
  const uint32_t t = threadIdx.x;
  if (t < p.W && (b.filled[t] || b.dups[t])) {
    atomicAdd (&p.sc->filled[t], b.filled[t]);
    atomicAdd (&p.sc->dups[t], b.dups[t]);
    atomicMin (&p.sc->first[t], b.first[t]);
    const uint32_t k = atomicAdd (&b.n_rec, 1u);
    if (k < 2)
      b.rec_post[k] = 1u << 23 | t << 17 | b.filled[t] << 8 |
          (uint32_t) (b.first[t] - b.stamp - (uint64_t) blockIdx.x * p.per_block);
  }
  if (t == 0) {
    if (b.n_short) atomicAdd (&p.sc->n_short, b.n_short);
    if (b.n_late) atomicAdd (&p.sc->n_late, b.n_late);
    if (b.n_def) atomicAdd (&p.sc->n_deferred, b.n_def);
    if (b.n_acc) atomicAdd (&p.sc->n_accepted, b.n_acc);
    if (b.n_dup) atomicAdd (&p.sc->n_dups, b.n_dup);
    if (b.maxK) atomicMax (&p.sc->maxK, b.maxK);
  }
}

/* The block's post (its largest key above H and its records, or that it cannot say them), then
 * its ticket: a release of its claims and counts (before it by the barrier), an acquire of the
 * others', for the finalizer. Thread 0. */
__device__ __forceinline__ void
post_and_take_ticket (const Params &p, Blk &b)
{
  const uint64_t tag = post_tag (p.job_seq);
  const int64_t K = (int64_t) (b.maxK - (1ull << 63));
  const uint32_t nr = b.n_rec;
  uint64_t w0 = b.maxK && K > b.H ? (uint64_t) (K - b.H) : 0, w1 = 0;
  if (b.n_def || b.n_fix || nr > 2)
    w0 = kPostFallback;
  else
    w1 = (nr > 0 ? b.rec_post[0] : 0) | (uint64_t) (nr > 1 ? b.rec_post[1] : 0) << 24;
  post_put (p.post_blk + 2 * blockIdx.x, tag, w0);
  post_put (p.post_blk + 2 * blockIdx.x + 1, tag, w1);
  b.ticket = atom_add_acq_rel (&p.sc->blocks_done, 1u);
}

/* The block's payloads (jobs[0 .. nj)): plain copies through shared memory (the launch gave it)
 * where every job is aligned, large payloads by the SM's copy engine, smaller ones by
 * asynchronous 16-byte copies; else through registers. Then the slot's count of blocks done
 * moving. Block-wide. */
__device__ __forceinline__ void
move_block (const Params &p, const Job *jobs, uint32_t nj)
{
  const uint32_t t = threadIdx.x;
  bool staged = false;
#if DQ_HAVE_BULK || DQ_HAVE_ASYNC
  if ((p.bulk_slots || p.async_copy) && !__syncthreads_or (t < nj && jobs[t].dst
      && (((uintptr_t) jobs[t].src | (uintptr_t) jobs[t].dst) & 15))) {
#if DQ_HAVE_BULK
    if (p.bulk_slots) {
      move_bulk (jobs, nj, p.lin, dyn_shared (), p.bulk_slots);
      staged = true;
    }
#endif
#if DQ_HAVE_ASYNC
    if (p.async_copy) {
      move_async (jobs, nj, p.lin, dyn_shared ());
      staged = true;
    }
#endif
  }
#endif
  if (!staged)
    move_payloads (p, SharedJobs { jobs }, nj, t, kThreads);
  __syncthreads ();
  if (t == 0) {
    __threadfence ();
    atomicAdd (p.slot_moved, 1ull);
  }
}

/* A helper (ticket < helpers): waits for the finalizer to say whether its tail has work, and
 * takes part `ticket` of it if so. Block-wide. */
__device__ __forceinline__ void
help_finalizer (const Params &p, Blk &b, uint32_t ticket, uint32_t helpers)
{
  if (threadIdx.x == 0) {
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
  const Pkt k = read_packet (p);
  /* the previous submission: its state once its finalizer is done with it, or its window and
   * counts (early start, the steady state: it had no deferred packets and no fixups) */
  choose_take (p, b);
  if (b.take != kTakeState)
    take_previous (p, b);
  if (b.early)
    early_window (p, b);
  if (!b.early)
    load_window (p, b);
  open_burst (p, b);
  frames_at_burst_start (p, b);
  if (blockIdx.x == 0)
    post_window (p, b);

  const Job job = control_packet (p, b, k);
  if (t < p.per_block)
    jobs[t] = job;
  __syncthreads ();
  /* the counts (posted for the next submission, and into the scratch), then the ticket: the
   * finalizer needs the claims, not the payloads */
  add_counts (p, b);
  __syncthreads ();
  if (t == 0)
    post_and_take_ticket (p, b);
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
    const uint64_t stamp = b.stamp;
    __syncthreads ();              /* the finalizer's shared memory overlays b */
    work = finalize (p, sm.fin, early, stamp);
  }
  const uint32_t nj = !p.n ? 0 : p.n - blockIdx.x * p.per_block < p.per_block
      ? p.n - blockIdx.x * p.per_block : p.per_block;
  move_block (p, jobs, nj);
  if (finalizer) {
    if (work)
      run_tail (p, helpers, helpers + 1);
  } else if (ticket < helpers) {
    help_finalizer (p, b, ticket, helpers);
  }
  /* the previous submission complete before this one is: its payloads are in the frames this
   * one's results may hand out, and its completion event stays ordered before this one's. One
   * block waiting is enough for that (this kernel completes when its last block does); the
   * others leave at once, so that the SMs' room for blocks is free for the next submissions
   * (every block waiting held it until the previous kernel's finalizer left, and the blocks of
   * the submission three on waited for it: 6.3 against 5.x us a 64 B x 16 384 submission) */
  if (finalizer) {
    pdl_wait ();
    mark_done (p, work);
  }
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
    const uint2 d = desc_offlen (p, i);
    const uint32_t off = d.x, len = d.y;
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
