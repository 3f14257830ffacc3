/* reorder-persist.cuh — the persistent mode of the reorder context (DqReorderGpuOptions.persistent):
 * one kernel, launched once with the context, takes every reorder and flush job the host posts,
 * with no launch per submission. Same results as reorder-cpu.c bit for bit. Part of reorder.cu's
 * translation unit, included after reorder-kernels.cuh (whose helpers, movers and Params it uses).
 *
 * The host posts job j (numbered from 1) into ring entry (j - 1) % R of mapped host memory (R =
 * max_inflight), its number written last; it reads job j's completion from that entry's flag
 * and results. Three stages on different blocks of the one grid (a cooperative launch: all
 * resident), each working on a different job, meeting through device memory:
 *
 *   parse    `parsers` blocks in `parse_groups` groups taking turns on jobs (group g the jobs
 *            g + 1, g + 1 + G, ...): a group reads the job's entry across the bus in one round
 *            trip and its blocks split the packets: descriptor, bounds, the header fields (key,
 *            sequence) into the ring slot's entries; its block 0 also hands the job's header on
 *            and copies the free-ring entries the host added for it into device memory. Where
 *            PArgs.psum, the blocks also sum their packets by batch (count, highest key, earliest
 *            arrival and its timestamp: PJs) and check that no two packets of the job share a key
 *            (PJs.clash, kPSeen), and the last block of a job merges the sums. The last block
 *            of a job releases its slot (parsed[]). Polls across the bus are plain
 *            volatile loads, then one acquire: a system-scope acquire at every poll slows the
 *            whole GPU down.
 *   control  one block owning the whole state in shared memory: the window's records and one claim
 *            word per slot of every record (window * packets_per_batch 32-bit words, in dynamic
 *            shared memory), so that no job waits for a previous one's state to travel through
 *            memory. Pass 1 in parallel: unwrap, locate, claim with a shared-memory atomicMin of
 *            (generation tag << 16 | arrival index + 1), so the earliest arrival of a slot wins
 *            whatever the thread order; a second look tells winners from duplicates and writes
 *            every packet's destination (dst[]: one 8-byte word a packet, 0 where it is not
 *            copied; the movers take its source and length from the parse stage's entry); each
 *            warp sums its part (counts, highest key, its winners'
 *            record, count, earliest arrival and its timestamp) and warp 0 adds the warps' sums
 *            into the records, with no atomics where a warp's winners share one record. Where the
 *            job's batches are all late or in the window and the parse stage summed them (the
 *            steady state: p_fast), pass 1 only claims and writes the destinations, counting
 *            duplicates per record, and warp 0 takes the counts, the highest key and the first
 *            timestamps from the sums; where the job's keys are distinct too, the claims are one
 *            look with plain loads and stores (p_pass1_distinct). Pass 2 (packets beyond the
 *            window, the first burst ever), the window's moves, emitted batches, frames and the
 *            results run on one thread in arrival order, exactly as the CPU twin does, from
 *            shared memory: in the steady state that is the one complete batch of the job. The
 *            results go to device memory; they, the destinations and the missing slots' zero runs
 *            of the emitted batches are published to the movers (published[]). Control never
 *            writes across the bus: a release after such writes would wait for them. While
 *            thread 0 runs the sequential steps, warps 1.. load the next job's front (its header,
 *            their first round of entries, the free ring's next entries); warp 0 loads its own
 *            first round beside the next job's setup. Thread 64 publishes a job during the next
 *            one's last part, after its front (a release at GPU scope costs about as much as the
 *            setup), or at the next one's top where that was not posted yet.
 *   move     the other blocks, in `move_groups` groups taking turns on jobs as the parse
 *            groups do (so one job's chain of round trips does not bound the rate): the job's
 *            payloads (copy or conversion, reorder-move.cuh) and zero runs; the last block of a
 *            job copies the results into the ring slot's mapped host memory and writes the
 *            job's number into its completion flag (a release at system scope, after
 *            everything the job wrote). Jobs of different groups may complete out of order; the
 *            host takes them in order, so a batch is handed out only once every job that
 *            wrote into its frame is complete (a job only writes slots it claimed, and only
 *            zero-fills slots nobody claimed, so two groups never write the same bytes).
 *
 * A claim word: tag_of (gen) << 16 with the low half 0 once the slot is filled in that
 * generation; while a job claims, tag << 16 | (arrival index + 1). A record's new generation has
 * a smaller tag, so stale words never win and need no clearing (every kTagMask generations the
 * record's words are reset, as K1 does). Hence at most 65534 packets per job.
 *
 * Ring slots: the host has at most R jobs unpolled, and polls job j - R before posting j, so
 * every stage is done with a slot (its entries, items, zero runs, results) before it is reused.
 * The stages themselves only wait for the stage before them. Job kind kPJobStop ends them all
 * (the host posts one per parse group; control passes one on to each move group).
 *
 * In the emulator (cuda-emu.h) the grid is a persistent launch that runs whenever the host
 * calls in; the control block's claim words are its dynamic shared memory there too. */

namespace dqk {

#ifndef DQ_PTHREADS
#define DQ_PTHREADS 512
#endif
constexpr uint32_t kPThreads = DQ_PTHREADS;   /* every block of the persistent grid */
constexpr uint32_t kPMaxPackets = 65534;      /* arrival index + 1 in a claim word's low half */
constexpr uint32_t kPJobStop = 0x7fffffffu;   /* job kind: end the kernel */
constexpr uint32_t kPFramesAhead = 2 * DQ_REORDER_MAX_WINDOW;  /* free-ring entries prefetched */
constexpr uint32_t kPNoIndex = 0xffffffffu;
constexpr uint32_t kPGroup = 4;               /* packets a parse thread loads at once */
constexpr int64_t kPLate = INT64_MIN;         /* a packet's batch before the stream's start */

enum : uint8_t { kPShort = 0, kPLateCls, kPDeferred, kPClaiming, kPDup };

/* A job as the host posts it (mapped host memory): every field, then seq (a release). */
struct PJob {
  uint64_t data, data_size, desc;
  uint64_t free_tail, prev_tail;   /* frames added before this job, and before the previous */
  uint32_t n, kind, mode, pad;
  unsigned long long seq;          /* the job's number once posted */
};

/* A job as the parse stage hands it to control (device memory, per ring slot). */
struct PHdr {
  uint64_t data, free_tail;
  uint32_t n, kind, mode, pad;
};

/* A job's packets summed by batch in the parse stage (where the key is the sequence number, the
 * batch a power of two of at least 2 packets, the window a power of two: PArgs.psum), so that
 * control's pass 1 needs no per-packet accounting where the window takes every batch as it is
 * (p_fast): the packets that are not short grouped by the key's high bits (key >> ppb_shift,
 * the batch modulo the key's range): rep the group's highest key, count its packets, first its
 * earliest arrival and ts that packet's timestamp. A block sums its share into kPGrps groups (by
 * the low bits of the batch; over where two batches meet there); the group's last block merges
 * the blocks' sums into the job's. */
constexpr uint32_t kPGrps = 8;
constexpr uint32_t kPParsePer = 2;            /* parse blocks per group */
static_assert (kPParsePer * kPGrps <= 32, "one warp merges a job's blocks' sums");

struct PGrp {
  uint32_t rep, count, first, pad;
  uint64_t ts;
};

struct PJs {
  uint32_t nb, shorts, over;       /* nb: groups in g (a block's: in place, count 0 where unused) */
  uint32_t clash;                  /* two packets of the job may share a key (0: they do not) */
  PGrp g[kPGrps];
};

/* The parse stage's check that a job's keys are distinct (PJs.clash): each parse group has a
 * table of kPSeen words; a packet that is not short takes the word of its key's low bits with an
 * atomic maximum of the job's number. Finding the job's number there (or a later one's: the
 * group's blocks may be on different jobs) marks the job, so two packets of one job with the
 * same key always do; keys that only share low bits mark it too, which costs speed only. The
 * words need no clearing: job numbers only grow. */
constexpr uint32_t kPSeen = 65536;

/* What control publishes to the movers (device memory, per ring slot): the job's packets (their
 * entries' offsets and lengths from `data` on, and the destinations control wrote: PArgs.dst,
 * or, where `frame` is not 0, each packet that is not short to its slot in that frame: p_whole),
 * zero runs (n_short from the list's front, n_long from its back), and result entries (batches,
 * released frames) to copy out. */
struct PPub {
  uint32_t n_items, n_short, n_long, n_out, n_rel, stop;
  uint64_t data;
  uint64_t frame;
};

/* Zero runs up to this many bytes are written by one warp each (all the move group's warps at
 * once: a loss pattern of many short gaps costs no round trip per gap); longer ones by the
 * whole group, one after another. */
constexpr uint64_t kPShortRun = 16384;

struct ZeroRun {
  uint64_t dst;
  uint64_t len;
};

struct PArgs {
  const PJob *jobs;                /* R, mapped host */
  unsigned long long *done;        /* R, mapped host: the job's number once complete */
  ResHdr *const *res;              /* R: each ring slot's results (mapped host) */
  uint8_t *resd;                   /* R x res_bytes: the same, as control writes them (device) */
  size_t res_bytes;
  uint32_t res_cap, rel_cap;
  PHdr *hdr;                       /* R */
  uint4 *ent;                      /* R x maxp: key, sequence, offset, length (0: short) */
  unsigned long long *ts;          /* R x maxp */
  unsigned long long *dst;         /* R x maxp: a packet's destination (0: not copied), by control */
  ZeroRun *zeros;                  /* R x zcap */
  PPub *pub;                       /* R */
  unsigned long long *parsed, *published;   /* R each: the job's number once handed on */
  unsigned long long *parse_done, *move_done;   /* R each: blocks done with the slot's jobs */
  int64_t *px;                     /* maxp: a deferred packet's batch id (kPLate: none) */
  uint32_t *pslot;                 /* maxp: its slot; a claim's word (after the first round) */
  uint8_t *pcls;                   /* maxp */
  FrameEnt *frames;                /* the free ring's entries, copied to device memory */
  PJs *bsum;                       /* R x parsers per group: each parse block's sums */
  PJs *jsum;                       /* R: the job's */
  unsigned long long *seen;        /* parse_groups x kPSeen: the keys' check (PJs.clash; psum) */
  uint32_t psum;                   /* the parse stage sums the jobs by batch (PJs) */
  uint32_t R, maxp, zcap, parsers, movers;
  uint32_t parse_groups;           /* parsers is a multiple of it */
  uint32_t move_groups;            /* movers is a multiple of it; at most parse_groups */
};

/* ---- memory order across the bus --------------------------------------------------------- */

__device__ __forceinline__ uint64_t ld_acquire_sys64 (const unsigned long long *p)
{
#ifdef DQ_CUDA_EMU
  return __atomic_load_n (p, __ATOMIC_ACQUIRE);
#else
  uint64_t v;
  asm volatile ("ld.acquire.sys.global.u64 %0, [%1];" : "=l" (v) : "l" (p) : "memory");
  return v;
#endif
}

__device__ __forceinline__ void st_release_sys64 (unsigned long long *p, uint64_t v)
{
#ifdef DQ_CUDA_EMU
  __atomic_store_n (p, v, __ATOMIC_RELEASE);
#else
  asm volatile ("st.release.sys.global.u64 [%0], %1;" :: "l" (p), "l" (v) : "memory");
#endif
}

__device__ __forceinline__ uint64_t ld_volatile64 (const void *p)
{
  return *(const volatile unsigned long long *) p;
}

/* One block of a stage is done with job j: the last of `blocks` gets true. *count counts the
 * blocks done with the jobs of j's ring slot (R jobs apart: the host has posted j only after
 * polling j - R, so they never overlap), while the stage's blocks may be on different jobs.
 * s: job j's slot.
 * After the block's barrier, on thread 0. */
/* Job j's ring slot r and the turns the ring made before it, (j - 1) = round * R + r, stepped
 * from job to job without a 64-bit division (a stage's loop steps by its number of groups, at
 * most R). */
struct PSlot {
  uint32_t r;
  uint64_t round;
  __device__ void step (uint32_t G, uint32_t R)
  {
    r += G;
    if (r >= R) {
      r -= R;
      round++;
    }
  }
};

__device__ __forceinline__ bool
last_block_of (unsigned long long *count, const PSlot &s, uint32_t blocks)
{
  /* an acquire-release atomic, not fences: the block's stores (ordered before it by the
   * barrier) are released with it, and the last one acquires every other block's */
#ifdef DQ_CUDA_EMU
  const uint64_t old = atomicAdd (count, 1ull);
#else
  uint64_t old;
  asm volatile ("atom.acq_rel.gpu.global.add.u64 %0, [%1], 1;" : "=l" (old) : "l" (count)
      : "memory");
#endif
  return old + 1 == (s.round + 1) * blocks;
}

/* Exclusive prefix sum over the block (kPThreads); *total: the sum. */
__device__ uint32_t
p_excl_sum (uint32_t v, uint32_t *tmp, uint32_t *total)
{
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr uint32_t kWarps = kPThreads / 32;
  uint32_t x = v;
DQ_UNROLL
  for (int d = 1; d < 32; d <<= 1) {
    const uint32_t o = __shfl_up_sync (0xffffffffu, x, d);
    if (lane >= (uint32_t) d)
      x += o;
  }
  if (lane == 31)
    tmp[warp] = x;
  __syncthreads ();
  if (threadIdx.x == 0)
    for (uint32_t w = 1; w < kWarps; w++)
      tmp[w] += tmp[w - 1];
  __syncthreads ();
  const uint32_t before = (warp ? tmp[warp - 1] : 0) + x - v;
  *total = tmp[kWarps - 1];
  __syncthreads ();
  return before;
}

/* Warp-wide sums and extremes (every lane of the warp calls): one warp-reduce instruction each
 * (two for 64 bits) from sm_80 on, five dependent shuffle steps before it and in the emulator. */
#if defined (__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define DQ_WARP_REDUX 1
__device__ __forceinline__ uint32_t
redux_extreme (uint32_t v, bool max)
{
  return max ? __reduce_max_sync (0xffffffffu, v) : __reduce_min_sync (0xffffffffu, v);
}

__device__ __forceinline__ int32_t
redux_extreme (int32_t v, bool max)
{
  return max ? __reduce_max_sync (0xffffffffu, v) : __reduce_min_sync (0xffffffffu, v);
}

__device__ __forceinline__ int64_t
redux_extreme (int64_t v, bool max)
{
  /* the high words' extreme (signed), then the low words' (unsigned) among the lanes that hold
   * it */
  const int hi = (int) (v >> 32);
  const uint32_t lo = (uint32_t) v;
  const int mh = max ? __reduce_max_sync (0xffffffffu, hi) : __reduce_min_sync (0xffffffffu, hi);
  const uint32_t ml = redux_extreme (hi == mh ? lo : (max ? 0u : 0xffffffffu), max);
  return (int64_t) (((uint64_t) (uint32_t) mh << 32) | ml);
}
#endif

__device__ __forceinline__ uint32_t
warp_sum (uint32_t v)
{
#ifdef DQ_WARP_REDUX
  return __reduce_add_sync (0xffffffffu, v);
#else
DQ_UNROLL
  for (int d = 16; d > 0; d >>= 1)
    v += __shfl_xor_sync (0xffffffffu, v, d);
  return v;
#endif
}

/* min or max over the warp */
template <typename T, bool kMax>
__device__ __forceinline__ T
warp_extreme (T v)
{
#ifdef DQ_WARP_REDUX
  return redux_extreme (v, kMax);
#else
DQ_UNROLL
  for (int d = 16; d > 0; d >>= 1) {
    const T o = __shfl_xor_sync (0xffffffffu, v, d);
    v = (kMax ? o > v : o < v) ? o : v;
  }
  return v;
#endif
}

/* ---- parse ------------------------------------------------------------------------------- */

/* A parse block's sums of its share of the job (shared memory): group h holds the packets whose
 * batch (key >> shift) is bm[h], h = bm % kPGrps. */
struct PBlockSum {
  uint32_t bm[kPGrps], rep[kPGrps], count[kPGrps], first[kPGrps];
  uint32_t shorts, over, clash;
};

/* A thread's run of packets in one batch (count 0: none). */
struct PRun {
  uint32_t rep, count, first;
};

__device__ __forceinline__ void
psum_add (PBlockSum &s, const PRun &x, uint32_t shift)
{
  const uint32_t bm = x.rep >> shift, h = bm & (kPGrps - 1);
  const uint32_t old = atomicCAS (&s.bm[h], ~0u, bm);
  if (old != ~0u && old != bm) {
    s.over = 1;
    return;
  }
  atomicMax (&s.rep[h], x.rep);
  atomicAdd (&s.count[h], x.count);
  atomicMin (&s.first[h], x.first);
}

/* packet i (not short) of key `key`, taken in arrival order by its thread */
__device__ __forceinline__ void
psum_packet (PBlockSum &s, PRun &x, uint32_t key, uint32_t i, uint32_t shift)
{
  if (x.count && key >> shift != x.rep >> shift) {
    psum_add (s, x, shift);
    x.count = 0;
  }
  if (!x.count) {
    x.rep = key;
    x.first = i;
  } else if (key > x.rep) {
    x.rep = key;
  }
  x.count++;
}

/* Each warp's runs, merged by batch and added (every thread of the block). */
__device__ void
psum_block (PBlockSum &s, const PRun &x, uint32_t shorts, uint32_t shift)
{
  const unsigned full = 0xffffffffu;
  const uint32_t lane = threadIdx.x & 31;
  for (unsigned left = __ballot_sync (full, x.count != 0); left;) {
    const uint32_t lead = (uint32_t) __ffs ((int) left) - 1;
    const uint32_t bm = __shfl_sync (full, x.rep >> shift, (int) lead);
    const bool in = x.count && x.rep >> shift == bm;
    const PRun w = { warp_extreme<uint32_t, true> (in ? x.rep : 0u), warp_sum (in ? x.count : 0u),
      warp_extreme<uint32_t, false> (in ? x.first : ~0u) };
    if (lane == lead)
      psum_add (s, w, shift);
    left &= ~__ballot_sync (full, in);
  }
  const uint32_t sh = warp_sum (shorts);
  if (lane == 0 && sh)
    atomicAdd (&s.shorts, sh);
}

/* The job's sums from its parse blocks' (warp 0 of the group's last block); bsum: the job's
 * `per` blocks' sums. Batches of different blocks that meet are merged; more than kPGrps
 * batches in all make the sums `over`. */
__device__ void
psum_job (const PJs *bsum, uint32_t per, uint32_t shift, PJs *dst)
{
  const unsigned full = 0xffffffffu;
  const uint32_t lane = threadIdx.x & 31;
  PGrp e = { 0, 0, ~0u, 0, 0 };
  uint32_t sh = 0, ov = 0, cl = 0;
  if (lane < per * kPGrps) {
    const uint64_t *w = (const uint64_t *) &bsum[lane / kPGrps].g[lane % kPGrps];
    const uint64_t w0 = ld_cg64 (w), w1 = ld_cg64 (w + 1);
    e = PGrp { (uint32_t) w0, (uint32_t) (w0 >> 32), (uint32_t) w1, 0, ld_cg64 (w + 2) };
  }
  if (lane < per) {
    sh = __ldcg (&bsum[lane].shorts);
    ov = __ldcg (&bsum[lane].over);
    cl = __ldcg (&bsum[lane].clash);
  }
  const uint32_t shorts = warp_sum (sh);
  const bool over = __ballot_sync (full, ov != 0) != 0;
  const bool clash = __ballot_sync (full, cl != 0) != 0;
  uint32_t k = 0;
  for (unsigned left = __ballot_sync (full, e.count != 0); left; k++) {
    const uint32_t lead = (uint32_t) __ffs ((int) left) - 1;
    const uint32_t bm = __shfl_sync (full, e.rep >> shift, (int) lead);
    const bool in = e.count && e.rep >> shift == bm;
    const uint32_t rep = warp_extreme<uint32_t, true> (in ? e.rep : 0u);
    const uint32_t count = warp_sum (in ? e.count : 0u);
    const uint32_t first = warp_extreme<uint32_t, false> (in ? e.first : ~0u);
    const unsigned holder = __ballot_sync (full, in && e.first == first);
    const uint64_t ts = __shfl_sync (full, e.ts, __ffs ((int) holder) - 1);
    if (lane == 0 && k < kPGrps)
      dst->g[k] = PGrp { rep, count, first, 0, ts };
    left &= ~__ballot_sync (full, in);
  }
  if (lane == 0) {
    dst->nb = k < kPGrps ? k : kPGrps;
    dst->shorts = shorts;
    dst->over = over || k > kPGrps;
    dst->clash = clash;
  }
}

__device__ void
p_parse (const Params &p, const PArgs &a, uint32_t pb)
{
  __shared__ PJob job;
  __shared__ uint64_t words[sizeof (PJob) / 8];
  __shared__ PBlockSum bs;
  __shared__ uint32_t last;
  const uint32_t t = threadIdx.x;
  /* groups of blocks take turns: group g the jobs g + 1, g + 1 + G, ...; its blocks split each */
  const uint32_t G = a.parse_groups, per = a.parsers / G, g = pb % G, b = pb / G;
  unsigned long long *const seen = a.psum ? a.seen + (size_t) g * kPSeen : nullptr;
  PSlot sl = { g, 0 };
  for (uint64_t j = g + 1;; j += G, sl.step (G, a.R)) {
    const uint32_t r = sl.r;
    const PJob *e = &a.jobs[r];
    if (t == 0) {
      /* plain volatile polls across the bus (a system-scope acquire at every poll slows the
       * whole GPU down), then one acquire */
      while (ld_volatile64 (&e->seq) != j)
        pause_ns (20);
      (void) ld_acquire_sys64 (&e->seq);
    }
    if (t < kPGrps) {
      bs.bm[t] = bs.first[t] = ~0u;
      bs.rep[t] = bs.count[t] = 0;
    }
    if (t == 0)
      bs.shorts = bs.over = bs.clash = 0;
    __syncthreads ();
    /* the entry's words, one per thread, in one round trip across the bus (ordered after the
     * acquire by the barrier) */
    if (t < sizeof (PJob) / 8)
      words[t] = ld_volatile64 ((const uint64_t *) e + t);
    __syncthreads ();
    if (t == 0)
      memcpy (&job, words, sizeof job);
    __syncthreads ();
    const uint32_t kind = job.kind, n = job.kind == DQ_JOB_REORDER ? job.n : 0;
    const uint8_t *data = (const uint8_t *) job.data, *desc = (const uint8_t *) job.desc;
    /* kPGroup packets per thread at a time: every descriptor load of the group in flight
     * together, then every header load (the loads of one packet depend on each other) */
    const uint32_t stride = per * kPThreads, shift = p.ppb_shift;
    PRun run = { 0, 0, 0 };
    uint32_t shorts = 0;
    bool clash = false;
    for (uint32_t i0 = b * kPThreads + t; i0 < n; i0 += kPGroup * stride) {
      uint32_t off[kPGroup], len[kPGroup], seq[kPGroup], key[kPGroup];
      unsigned long long ts[kPGroup];
DQ_UNROLL
      for (uint32_t g = 0; g < kPGroup; g++) {
        const uint32_t i = i0 + g * stride;
        off[g] = len[g] = 0;
        ts[g] = 0;
        if (i < n) {
          off[g] = desc_u32 (desc, i, 0);
          len[g] = desc_u32 (desc, i, 4);
          ts[g] = desc_ts (desc, i);
        }
      }
DQ_UNROLL
      for (uint32_t g = 0; g < kPGroup; g++) {
        const bool ok = (uint64_t) off[g] + len[g] <= job.data_size && len[g] >= p.need;
        seq[g] = key[g] = 0;
        if (!ok)
          len[g] = 0;
        if (ok) {
          seq[g] = dq_bits_get_raw (data + off[g], p.seq_off, p.seq_w);
          key[g] = p.batch_w ? dq_bits_get_raw (data + off[g], p.batch_off, p.batch_w) : seq[g];
        }
      }
DQ_UNROLL
      for (uint32_t g = 0; g < kPGroup; g++) {
        const uint32_t i = i0 + g * stride;
        if (i < n) {
          a.ent[(size_t) r * a.maxp + i] = make_uint4 (key[g], seq[g], off[g], len[g]);
          a.ts[(size_t) r * a.maxp + i] = ts[g];
          if (a.psum) {
            if (len[g]) {
              psum_packet (bs, run, key[g], i, shift);
              clash |= atomicMax (&seen[key[g] & (kPSeen - 1)], (unsigned long long) j) >= j;
            } else {
              shorts++;
            }
          }
        }
      }
    }
    if (a.psum) {
      psum_block (bs, run, shorts, shift);
      if (clash)
        bs.clash = 1;
    }
    if (b == 0) {
      if (t == 0)
        a.hdr[r] = PHdr { job.data, job.free_tail, n, kind, job.mode, 0 };
      for (uint64_t h = job.prev_tail + t; kind != kPJobStop && h < job.free_tail; h += kPThreads) {
        const FrameEnt *e = &p.ring[h % p.ring_cap];
        a.frames[h % p.ring_cap] = FrameEnt { ld_volatile64 (&e->ptr), ld_volatile64 (&e->user) };
      }
    }
    __syncthreads ();
    if (a.psum) {     /* the block's sums, with their first packets' timestamps (this block's) */
      PJs *d = &a.bsum[(size_t) r * per + b];
      if (t < kPGrps)
        d->g[t] = PGrp { bs.rep[t], bs.count[t], bs.first[t], 0,
          bs.count[t] ? a.ts[(size_t) r * a.maxp + bs.first[t]] : 0 };
      if (t == 0) {
        d->shorts = bs.shorts;
        d->over = bs.over;
        d->clash = bs.clash;
      }
      __syncthreads ();
    }
    if (t == 0)
      last = last_block_of (&a.parse_done[r], sl, per);
    __syncthreads ();
    if (last) {
      if (a.psum && t < 32)
        psum_job (&a.bsum[(size_t) r * per], per, shift, &a.jsum[r]);
      if (t == 0)
        st_release64 (&a.parsed[r], j);
    }
    if (kind == kPJobStop)
      return;
  }
}

/* ---- control ----------------------------------------------------------------------------- */

struct PRec {
  int64_t id;
  uint64_t frame, user, first_ts;
  uint32_t filled, dups, gen, first_idx;   /* first_idx: pass 1's earliest winner (per job) */
  uint32_t ts_set;               /* pass 1: first_ts taken from the winner's registers */
  uint32_t jd;                   /* pass 1 on the parse stage's sums: the job's duplicates */
};

/* A warp's part of pass 1, summed by warp 0: its counts, its highest key, and its winners when
 * they all went to one record (r; filled 0 otherwise): how many, the earliest arrival among
 * them and that packet's timestamp where a thread had it in registers. */
struct PWarp {
  int64_t max_key;               /* INT64_MIN: no packet that is not short */
  uint64_t ts;
  uint32_t r, filled, first, ts_known;
  uint32_t shorts_late;          /* shorts | late << 16 (each at most kPMaxPackets) */
  uint32_t dups_acc;             /* duplicates | winners << 16 */
};

struct PCtl {
  int64_t B, H, H0;
  uint64_t head;                 /* free-ring frames handed out */
  uint32_t initialized, fresh, any_def;
  uint32_t want_frame;           /* a record may want a frame (has none, holds no packet); 0 only
                                  * where fill_frames found none that does */
  uint32_t any;                  /* the job has a packet that is not short */
  uint32_t first_valid;          /* the job's first packet that is not short */
  uint32_t n_out, n_rel, n_short, n_long, late, shorts, acc, dups;
  DqReorderStats stats;
  PRec rec[DQ_REORDER_MAX_WINDOW];
  uint32_t pre_filled[DQ_REORDER_MAX_WINDOW];
  /* the job (a copy of jn[b]: b its buffer) */
  PHdr job;
  PHdr jn[2];                    /* the headers of this job and the next, loaded ahead */
  PJs js[2];                     /* their sums by batch (PArgs.psum), loaded with them */
  const PJs *jsc;                /* this job's */
  uint32_t r;
  ResHdr *res;
  DqReorderBatch *out;
  DqReorderFrame *rel;
  unsigned long long *dst;       /* this job's packets' destinations */
  ZeroRun *zeros;
  FrameEnt fp[2][kPFramesAhead]; /* free-ring entries from fp_base[b] on, loaded ahead */
  uint64_t fp_base[2];
  const FrameEnt *fpre;          /* this job's: entries [fpre_base, + fpre_n) */
  uint64_t fpre_base;
  uint32_t fpre_n;
  uint64_t head_set;             /* head after this job's setup: the next job's entries are
                                  * loaded ahead from here (thread 0 only takes frames after it) */
  uint32_t tmp[kPThreads / 32];
  uint32_t seq_done;             /* thread 0 is done with the job's sequential part */
  uint32_t ahead[2];             /* warp 1 loaded a job's front ahead (it was posted), by the
                                  * job's buffer (b): set for the next job while this one's is
                                  * cleared, with no barrier between them on p_whole's path */
  uint32_t cold;                 /* pass 1: deferred packets, or a warp's winners in several
                                  * records (merged by atomics): the general tail */
  uint64_t whole;                /* the job is the window's base batch whole (p_whole): its
                                  * frame; 0: not */
  PWarp pw[kPThreads / 32];      /* pass 1's summary of each warp */
};

/* pass 2's packets of one chunk, in arrival order */
struct PDef {
  int64_t x;
  uint32_t slot, i;
};

/* The control block's dynamic shared memory: its state (PCtl), the claim words (window *
 * packets_per_batch), pass 2's list (kPThreads); the host sizes the launch with this. Kept out
 * of static shared memory, which the emulator copies at every switch between blocks. */
__host__ __device__ inline size_t p_align16 (size_t v) { return (v + 15) & ~(size_t) 15; }
__host__ __device__ inline size_t p_claims_off () { return p_align16 (sizeof (PCtl)); }
__host__ __device__ inline size_t
p_list_off (uint32_t W, uint32_t ppb)
{
  return p_claims_off () + p_align16 ((size_t) W * ppb * sizeof (uint32_t));
}
__host__ __device__ inline size_t
p_smem_size (uint32_t W, uint32_t ppb)
{
  return p_list_off (W, ppb) + kPThreads * sizeof (PDef);
}

/* The sequential part: thread 0 only, the CPU twin's steps on the shared-memory state. */
struct PSeq {
  const Params &p;
  const PArgs &a;
  PCtl &c;
  uint32_t *claims;

  __device__ uint32_t filled_word (uint32_t r) const { return tag_of (c.rec[r].gen) << 16; }

  __device__ FrameEnt frame_at (uint64_t h) const
  {
    const uint64_t k = h - c.fpre_base;
    if (k < c.fpre_n)
      return c.fpre[k];
    const FrameEnt *e = &a.frames[h % p.ring_cap];
    return FrameEnt { ld_cg64 (&e->ptr), ld_cg64 (&e->user) };
  }

  __device__ void new_generation (uint32_t r) const
  {
    PRec &R = c.rec[r];
    R.gen++;
    if ((R.gen & kTagMask) == 0) {
      R.gen++;                    /* the tag of never-claimed (all-ones) words */
      for (uint32_t s = 0; s < p.ppb; s++)
        claims[(size_t) r * p.ppb + s] = ~0u;
    }
    R.filled = R.dups = 0;
    R.first_ts = 0;
  }

  __device__ void rec_reset (uint32_t r, int64_t id) const
  {
    c.rec[r].id = id;
    new_generation (r);
  }

  __device__ void fill_frames () const
  {
    uint32_t want = 0;
    for (uint32_t i = 0; i < p.W; i++) {
      PRec &R = c.rec[rec_index (p, c.B + i)];
      if (!R.frame && R.filled == 0) {
        if (c.head < c.job.free_tail) {
          const FrameEnt e = frame_at (c.head++);
          R.frame = e.ptr;
          R.user = e.user;
        }
        want |= R.frame == 0;
      }
    }
    c.want_frame = want;
  }

  __device__ void zero_run (uint64_t dst, uint64_t len) const
  {
    if (c.n_short + c.n_long < a.zcap) {
      if (len <= kPShortRun)
        c.zeros[c.n_short++] = ZeroRun { dst, len };
      else
        c.zeros[a.zcap - 1 - c.n_long++] = ZeroRun { dst, len };
      return;
    }
    for (uint64_t k = 0; k < len; k++)     /* beyond the list's bound (see its size): here */
      ((uint8_t *) dst)[k] = 0;
  }

  __device__ void emit (uint32_t r, uint32_t cause) const
  {
    PRec &R = c.rec[r];
    const DqReorderBatch b = batch_entry (p, R, cause);
    if (c.n_out < a.res_cap)
      c.out[c.n_out++] = b;
    c.stats.batches++;
    if (b.missing)
      c.stats.partial++;
    else
      c.stats.complete++;
    if (!R.frame)
      c.stats.no_frame++;
    c.stats.missing_slots += b.missing;
    if (R.frame && b.missing) {
      const uint32_t fw = filled_word (r);
      const uint32_t *w = claims + (size_t) r * p.ppb;
      for (uint32_t s = 0; s < p.ppb;) {
        /* filled slots four at a time where the words allow a 16-byte load */
        if (s + 4 <= p.ppb && ((uintptr_t) (w + s) & 15) == 0) {
          const uint4 q = *(const uint4 *) (w + s);
          if (q.x == fw && q.y == fw && q.z == fw && q.w == fw) {
            s += 4;
            continue;
          }
        }
        if (w[s] == fw) {
          s++;
          continue;
        }
        uint32_t e = s + 1;
        while (e < p.ppb && w[e] != fw)
          e++;
        zero_run (R.frame + (uint64_t) s * p.lout, (uint64_t) (e - s) * p.lout);
        s = e;
      }
    }
    R.frame = 0;
    R.user = 0;
    c.want_frame = 1;
  }

  __device__ void advance (int64_t newB, uint32_t cause) const
  {
    const int64_t W = (int64_t) p.W;
    const int64_t end = newB < c.B + W ? newB : c.B + W;
    for (int64_t y = c.B; y < end; y++) {
      const uint32_t r = rec_index (p, y);
      if (c.rec[r].filled)
        emit (r, cause);
      else
        c.stats.skipped++;
      /* the id in [newB, newB + W) with the same record (no 64-bit division in the steady
       * state, where the window moves by less than its width) */
      const int64_t d = newB - y, k = d <= W ? 1 : (d + W - 1) / W;
      rec_reset (r, y + k * W);
    }
    if (newB - c.B > W)
      c.stats.skipped += (uint64_t) (newB - c.B - W);
    c.B = newB;
    fill_frames ();
  }

  /* advance (c.B + 1, 0) where the base's batch is complete (record r), the steady state's one
   * step per job: nothing missing, so no zero runs; of fill_frames' records only the one reset
   * here can want a frame (the others got one when they were reset or when frames were added,
   * unless the ring ran dry). Every read of the shared state comes before the first store
   * through a result pointer, which could otherwise alias it and make every later read wait. */
  __device__ void complete_base (uint32_t r) const
  {
    PRec &R = c.rec[r];
    const PRec old = R;
    if (((old.gen + 1) & kTagMask) == 0) {     /* the claim words' reset: the general step */
      advance (c.B + 1, 0);
      return;
    }
    const int64_t B = c.B;
    const uint64_t head = c.head;
    const uint32_t n_out = c.n_out;
    DqReorderBatch *const out = c.out;
    const bool take = head < c.job.free_tail;
    const FrameEnt e = take ? frame_at (head) : FrameEnt { 0, 0 };
    c.stats.batches++;
    c.stats.complete++;
    if (!old.frame)
      c.stats.no_frame++;
    R = PRec { B + (int64_t) p.W, e.ptr, e.user, 0, 0, 0, old.gen + 1, old.first_idx, old.ts_set,
      0 };
    if (!e.ptr)
      c.want_frame = 1;
    c.B = B + 1;
    c.head = head + (take ? 1 : 0);
    if (n_out < a.res_cap) {
      c.n_out = n_out + 1;
      out[n_out] = batch_entry (p, old, 0);
    }
  }

  __device__ void complete_batches () const
  {
    for (;;) {
      const uint32_t r = rec_index (p, c.B);
      if (c.rec[r].filled != p.ppb)
        return;
      complete_base (r);
    }
  }

  __device__ void start_window (int64_t x0) const
  {
    c.initialized = 1;
    c.B = x0;
    for (uint32_t i = 0; i < p.W; i++)
      rec_reset (rec_index (p, x0 + i), x0 + i);
    fill_frames ();
  }

  /* pass 2's step for packet i of batch x, slot `slot` */
  __device__ void deferred (int64_t x, uint32_t slot, uint32_t i) const
  {
    if (x == kPLate || x < c.B) {
      c.late++;
      return;
    }
    if (x >= c.B + (int64_t) p.W)
      advance (x - (int64_t) p.W + 1, DQ_BATCH_PUSHED);
    const uint32_t r = rec_index (p, x);
    PRec &R = c.rec[r];
    if (R.filled == 0)
      R.first_ts = ld_cg64 (&a.ts[(size_t) c.r * a.maxp + i]);
    uint32_t *w = claims + (size_t) r * p.ppb + slot;
    const uint32_t fw = filled_word (r);
    if (*w == fw) {
      R.dups++;
      c.stats.duplicates++;
      return;
    }
    *w = fw;
    R.filled++;
    c.stats.accepted++;
    if (R.frame)
      c.dst[i] = R.frame + (uint64_t) slot * p.lout;
  }

  __device__ void flush (uint32_t mode) const
  {
    if (c.initialized && mode == DQ_FLUSH_OLDEST) {
      fill_frames ();
      for (uint32_t i = 0; i < p.W; i++) {
        if (c.rec[rec_index (p, c.B + i)].filled) {
          advance (c.B + i + 1, DQ_BATCH_FLUSHED);
          complete_batches ();
          break;
        }
      }
    } else if (c.initialized && mode == DQ_FLUSH_ALL) {
      fill_frames ();
      advance (c.B + (int64_t) p.W, DQ_BATCH_FLUSHED);
    } else if (mode == DQ_FLUSH_RESET) {
      for (uint32_t i = 0; c.initialized && i < p.W; i++) {
        const uint32_t r = rec_index (p, c.B + i);
        if (c.rec[r].filled)
          emit (r, DQ_BATCH_FLUSHED);
        else
          c.stats.skipped++;
      }
      for (uint32_t i = 0; c.initialized && i < p.W; i++) {
        PRec &R = c.rec[rec_index (p, c.B + i)];
        if (R.frame && c.n_rel < a.rel_cap)
          c.rel[c.n_rel++] = DqReorderFrame { (void *) R.frame, (void *) R.user };
        R.frame = R.user = 0;
        c.want_frame = 1;
      }
      for (uint32_t i = 0; c.initialized && i < p.W; i++)
        rec_reset (i, 0);
      c.initialized = 0;
      c.B = c.H = 0;
      while (c.head < c.job.free_tail) {
        const FrameEnt e = frame_at (c.head++);
        if (c.n_rel < a.rel_cap)
          c.rel[c.n_rel++] = DqReorderFrame { (void *) e.ptr, (void *) e.user };
      }
    }
  }

  /* the results header (the twin's end_call) */
  __device__ void finish (uint32_t kind) const
  {
    /* every read of the shared state first (see complete_base) */
    DqReorderStats S = c.stats;
    const uint32_t late = c.late, shorts = c.shorts, n_out = c.n_out;
    ResHdr h = {};
    h.n_batches = n_out;
    h.n_released = c.n_rel;
    h.job_short = shorts;
    h.kind = kind;
    h.free_head = c.head;
    h.window.initialized = c.initialized;
    if (h.window.initialized) {
      const int64_t B = c.B;
      h.window.base = (uint64_t) B;
      for (uint32_t i = 0; i < p.W; i++) {
        const PRec &R = c.rec[rec_index (p, B + i)];
        if (!R.filled)
          continue;
        if (!h.window.open) {
          h.window.oldest_id = (uint64_t) R.id;
          h.window.oldest_first_timestamp = R.first_ts;
        }
        h.window.open++;
      }
    }
    ResHdr *const res = c.res;
    DqReorderBatch *const out = c.out;
    S.late += late;
    S.short_packets += shorts;
    S.pending_late += late;
    S.pending_short += shorts;
    uint32_t l = 0, s = 0;
    if (n_out) {
      l = S.pending_late > 0xffffffffull ? 0xffffffffu : (uint32_t) S.pending_late;
      s = S.pending_short > 0xffffffffull ? 0xffffffffu : (uint32_t) S.pending_short;
      S.pending_late -= l;
      S.pending_short -= s;
    }
    c.stats = S;
    h.stats = S;
    if (n_out) {
      out[0].late = l;
      out[0].short_packets = s;
    }
    *res = h;
  }
};

/* A thread's winners in one record (its packets mostly share one): the earliest arrival among
 * them, and its timestamp where it came from the thread's first round (registers). */
struct RecAcc {
  uint32_t r, filled, first;
  uint64_t ts;
  bool ts_known;
};

/* merged into the record by atomics (the general tail: first_ts from the winners' look) */
__device__ __forceinline__ void
rec_flush (PCtl &c, const RecAcc &x)
{
  if (x.filled) {
    atomicAdd (&c.rec[x.r].filled, x.filled);
    atomicMin (&c.rec[x.r].first_idx, x.first);
  }
}

/* Warp 0 after pass 1: the warps' summaries summed into the job's counters and each record's
 * winners into the record; returns the highest key. Common tail: one lane per record sets its
 * count and, where it was empty at the burst's start, its first timestamp. General tail
 * (`cold`): counts and earliest arrivals by atomics beside the ones of warps whose winners
 * spread over records; the timestamps are the winners' look's. */
__device__ int64_t
p_sum (const PArgs &a, PCtl &c, bool cold)
{
  constexpr uint32_t kWarps = kPThreads / 32;
  const unsigned full = 0xffffffffu;
  const uint32_t lane = threadIdx.x & 31;
  PWarp w = { INT64_MIN, 0, 0, 0, kPNoIndex, 0, 0, 0 };
  if (lane < kWarps)
    w = c.pw[lane];
  const int64_t hk = warp_extreme<int64_t, true> (w.max_key);
  const uint32_t sl = warp_sum (w.shorts_late), da = warp_sum (w.dups_acc);
  for (unsigned left = __ballot_sync (full, w.filled != 0); left;) {
    const uint32_t r = __shfl_sync (full, w.r, __ffs ((int) left) - 1);
    const bool in = w.filled && w.r == r;
    const uint32_t f = warp_sum (in ? w.filled : 0);
    const uint32_t m = warp_extreme<uint32_t, false> (in ? w.first : kPNoIndex);
    if (in && w.first == m) {
      PRec &R = c.rec[r];
      if (cold) {
        atomicAdd (&R.filled, f);
        atomicMin (&R.first_idx, m);
      } else {
        const uint32_t pre = R.filled;
        R.filled = pre + f;
        if (pre == 0)
          R.first_ts = w.ts_known ? w.ts : ld_cg64 (&a.ts[(size_t) c.r * a.maxp + m]);
      }
    }
    left &= ~__ballot_sync (full, in);
  }
  __syncwarp ();       /* the records' writes before thread 0 reads them */
  if (lane == 0) {
    c.shorts = sl & 0xffffu;
    c.late = sl >> 16;
    c.dups = da & 0xffffu;
    c.acc = da >> 16;
    c.any = hk != INT64_MIN;
  }
  return hk;
}

/* A key placed relative to the window (p_pass1 where the configuration allows it, and p_fast's
 * jobs): kd, the key less the window's first key, from the key's unwrap in 32 bits; in the window
 * where 0 <= kd < span, then in record rec (kd) at slot kd & (ppb - 1). */
struct PRel {
  uint32_t h0lo, span, rB;
  int64_t off;                   /* H0 - the window's first key */
  __device__ PRel (const Params &p, const PCtl &c)
      : h0lo ((uint32_t) c.H0), span (p.W << p.ppb_shift), rB ((uint32_t) c.B & (p.W - 1)),
        off (c.H0 - (int64_t) ((uint64_t) c.B << p.ppb_shift)) {}
  __device__ int64_t kd (const Params &p, uint32_t key) const
  {
    return off + dq_unwrap_d1 (key, h0lo, p.key_bits) + 1;
  }
  __device__ bool in (int64_t d) const { return d >= 0 && (uint64_t) d < span; }
  __device__ uint32_t rec (const Params &p, int64_t d) const
  {
    return (rB + ((uint32_t) d >> p.ppb_shift)) & (p.W - 1);
  }
};

/* Pass 1 (block-wide): shorts, late, beyond the window (deferred), claims; then, after a
 * barrier, winners and duplicates, and every packet's destination. A thread takes its packets
 * kPCache at a time with every load of the round in flight together (a dependent load per
 * packet would cost a memory round trip each). Every thread has a first round (ce, cts: kPCache
 * packets kPThreads apart; warps 1.. load theirs while thread 0 finishes the job before,
 * p_front, warp 0 beside the next job's setup) that stays in registers across the barrier,
 * timestamps included; the packets from kPFirst on (1024 with 512 threads) go in further rounds
 * through the per-packet arrays. Two packets a round: the control block's chain is shorter with
 * the rounds' code unrolled twice than four times (3.44-3.54 us per 1024-packet batch against
 * 3.81-3.96 on the H200), and a 1024-packet job is still one round; jobs of thousands of packets
 * pay for it with half the loads in flight (docs/benchmarks.md). */
constexpr uint32_t kPCache = 2;
constexpr uint32_t kPFirst = kPCache * kPThreads;

/* A thread's rounds: its first, then the others. */
struct PRound {
  uint32_t base;
  bool first;
  __device__ explicit PRound (uint32_t t) : base (t), first (true) {}
  __device__ void next (uint32_t t)
  {
    base = first ? kPFirst + t : base + kPCache * kPThreads;
    first = false;
  }
};

/* A thread's first round of ring slot r's entries and timestamps, loaded before the job's
 * packet count is known (entries beyond it are not used). */
__device__ __forceinline__ void
p_first_round (const PArgs &a, uint32_t r, uint4 (&ce)[kPCache], unsigned long long (&cts)[kPCache])
{
  const PRound q (threadIdx.x);
DQ_UNROLL
  for (uint32_t g = 0; g < kPCache; g++) {
    const uint32_t i = q.base + g * kPThreads;
    ce[g] = i < a.maxp ? a.ent[(size_t) r * a.maxp + i] : make_uint4 (0, 0, 0, 0);
    cts[g] = i < a.maxp ? a.ts[(size_t) r * a.maxp + i] : 0;
  }
}

/* The record of claim word w (record * packets_per_batch + slot). */
__device__ __forceinline__ uint32_t
p_word_rec (const Params &p, uint32_t w)
{
  return p.ppb_pow2 ? w >> p.ppb_shift : w / p.ppb;
}

/* The record a thread's packets last went to (they mostly share one): its claim tag and frame
 * in registers, loaded again only when the record changes (neither changes during pass 1). */
struct PCur {
  uint32_t r = kPNoIndex, tag = 0;
  uint64_t frame = 0;
  __device__ __forceinline__ void at (const PCtl &c, uint32_t rr)
  {
    if (rr != r) {
      r = rr;
      tag = tag_of (c.rec[rr].gen) << 16;
      frame = c.rec[rr].frame;
    }
  }
};

/* A round's entries: the first round's from the registers, the others' loaded (every load of
 * the round in flight together). */
__device__ __forceinline__ void
p_round_entries (const PRound &q, uint32_t n, const uint4 (&ce)[kPCache], const uint4 *ent,
    uint4 (&e4)[kPCache])
{
DQ_UNROLL
  for (uint32_t g = 0; g < kPCache; g++)
    if (q.base + g * kPThreads < n)
      e4[g] = q.first ? ce[g] : ent[q.base + g * kPThreads];
}

/* A round's classes and claim words for pass 1's second look: the first round's kept in
 * registers by the first look, the others' from the per-packet arrays. */
__device__ __forceinline__ void
p_round_claims (const PArgs &a, const PRound &q, uint32_t n, const uint8_t (&ccls)[kPCache],
    const uint32_t (&cw)[kPCache], uint8_t (&c4)[kPCache], uint32_t (&w4)[kPCache])
{
DQ_UNROLL
  for (uint32_t g = 0; g < kPCache; g++) {
    const uint32_t i = q.base + g * kPThreads;
    if (q.first) {
      c4[g] = ccls[g];
      w4[g] = cw[g];
    } else if (i < n) {
      c4[g] = a.pcls[i];
      w4[g] = a.pslot[i];
    }
  }
}

/* Pass 1's second look at packet i, claimed in record r, slot `slot` (claim word w): whether it
 * won the slot. The winner marks the slot filled and gets its destination where the record has
 * a frame; a duplicate finds another arrival's index there, or the mark (one atomic: no plain
 * read beside the winner's write). */
__device__ __forceinline__ bool
p_second_look (const Params &p, const PCtl &c, uint32_t *claims, PCur &cur, uint32_t w,
    uint32_t r, uint32_t slot, uint32_t i, unsigned long long &dst)
{
  cur.at (c, r);
  const uint32_t mine = cur.tag | (i + 1);
  if (atomicCAS (&claims[w], mine, cur.tag) != mine)
    return false;
  if (cur.frame)
    dst = cur.frame + (uint64_t) slot * p.lout;
  return true;
}

__device__ __forceinline__ bool
p_pass1 (const Params &p, const PArgs &a, PCtl &c, uint32_t *claims, const uint4 (&ce)[kPCache],
    const unsigned long long (&cts)[kPCache], int64_t &hk)
{
  const uint32_t t = threadIdx.x, n = c.job.n;
  const uint4 *ent = a.ent + (size_t) c.r * a.maxp;
  const int64_t H0 = c.H0, B = c.B;
  const bool fresh = c.fresh != 0;
  int64_t maxK = INT64_MIN;
  uint32_t shorts = 0, late = 0, dups = 0, any_def = 0;
  /* the records' counts at the burst's start (read before the first barrier below, after
   * which winners add to them) */
  for (uint32_t k = t; k < p.W; k += kPThreads)
    c.pre_filled[k] = c.rec[k].filled;
  /* Where the window allows (no batch field, power-of-two batches and window: the steady
   * state's configurations), a key is placed relative to the window's first key: its unwrap in
   * 32 bits (dq_unwrap_d1: the distance to H0 sign-extended from key_bits), then one 64-bit add
   * and one compare for late, in the window or beyond; no 64-bit shifts or compares per packet.
   * Else the twin's steps (dq_unwrap, locate). A claim is named by its word's index (record *
   * packets_per_batch + slot). */
  const bool rel = !fresh && !p.batch_w && p.ppb_pow2 && (p.W & (p.W - 1)) == 0;
  const PRel pr (p, c);
  int32_t maxd = INT32_MIN;      /* rel: the highest unwrapped key - H0 - 1 */
  bool anyv = false;
  /* the first round's placements, kept */
  uint32_t cw[kPCache];
  uint8_t ccls[kPCache];
  PCur cur;                      /* the record this thread's packets last went to */
  for (PRound q (t); q.base < n; q.next (t)) {
    const bool first = q.first;
    uint4 e4[kPCache];
    p_round_entries (q, n, ce, ent, e4);
DQ_UNROLL
    for (uint32_t g = 0; g < kPCache; g++) {
      const uint32_t i = q.base + g * kPThreads;
      if (i >= n)
        break;
      const uint4 e = e4[g];
      uint8_t cls = kPShort;
      int64_t x = kPLate;
      uint32_t slot = 0, w = 0, r = 0;
      if (e.w == 0) {
        shorts++;
      } else if (rel) {
        const int32_t d1 = dq_unwrap_d1 (e.x, pr.h0lo, p.key_bits);
        maxd = d1 > maxd ? d1 : maxd;
        anyv = true;
        const int64_t kd = pr.off + d1 + 1;       /* the key - the window's first key */
        if (kd < 0) {
          cls = kPLateCls;
          late++;
        } else if ((uint64_t) kd >= pr.span) {
          cls = kPDeferred;
          any_def = 1;
          locate (p, H0 + d1 + 1, e.y, x, slot);     /* at or after the window's first key */
        } else {
          cls = kPClaiming;
          r = pr.rec (p, kd);
          w = r << p.ppb_shift | ((uint32_t) kd & (p.ppb - 1));
        }
      } else {
        const int64_t K = dq_unwrap (e.x, H0, p.key_bits);
        if (K > maxK)
          maxK = K;
        const bool found = locate (p, K, e.y, x, slot);
        if (!found)
          x = kPLate;
        if (fresh || (found && x >= B + (int64_t) p.W)) {
          cls = kPDeferred;
          any_def = 1;
        } else if (!found || x < B) {
          cls = kPLateCls;
          late++;
        } else {
          cls = kPClaiming;
          r = rec_index (p, x);
          w = r * p.ppb + slot;
        }
      }
      if (cls == kPClaiming) {
        cur.at (c, r);
        const uint32_t old = atomicMin (&claims[w], cur.tag | (i + 1));
        if (old == cur.tag) {
          cls = kPDup;
          dups++;
          atomicAdd (&c.rec[r].dups, 1u);
        }
      }
      a.pcls[i] = cls;                /* pass 2 looks for kPDeferred */
      if (first) {
        cw[g] = w;
        ccls[g] = cls;
      }
      if (cls == kPDeferred) {
        a.px[i] = x;
        a.pslot[i] = slot;
      } else if (!first) {
        a.pslot[i] = w;
      }
    }
  }
  __syncthreads ();
  unsigned long long *const dst = c.dst;
  uint32_t acc = 0, won = 0;
  bool multi = false;            /* this thread's winners went to more than one record */
  RecAcc ra = { 0, 0, kPNoIndex, 0, false };
  for (PRound q (t); q.base < n; q.next (t)) {
    const bool first = q.first;
    uint32_t w4[kPCache];
    uint8_t c4[kPCache];
    p_round_claims (a, q, n, ccls, cw, c4, w4);
DQ_UNROLL
    for (uint32_t g = 0; g < kPCache; g++) {
      const uint32_t i = q.base + g * kPThreads;
      if (i >= n)
        break;
      unsigned long long d = 0;
      if (c4[g] == kPClaiming) {
        const uint32_t r = p_word_rec (p, w4[g]);
        if (p_second_look (p, c, claims, cur, w4[g], r, w4[g] - r * p.ppb, i, d)) {
          acc++;
          if (first)
            won |= 1u << g;
          if (ra.filled && ra.r != r) {
            rec_flush (c, ra);
            ra = RecAcc { r, 0, kPNoIndex, 0, false };
            multi = true;
          }
          ra.r = r;
          ra.filled++;
          if (i < ra.first) {
            ra.first = i;
            ra.ts = first ? cts[g] : 0;
            ra.ts_known = first;
          }
        } else {
          dups++;
          atomicAdd (&c.rec[r].dups, 1u);
        }
      }
      __stcg (&dst[i], d);
    }
  }
  /* the warp's summary (lane 0), its winners merged by atomics where they span records */
  const unsigned full = 0xffffffffu;
  const uint32_t lane = t & 31;
  const unsigned busy = __ballot_sync (full, ra.filled != 0);
  if (rel) {     /* the highest key from the highest distance: one 32-bit reduce */
    const int32_t md = warp_extreme<int32_t, true> (maxd);
    maxK = __ballot_sync (full, anyv) ? H0 + md + 1 : INT64_MIN;
  } else {
    maxK = warp_extreme<int64_t, true> (maxK);
  }
  const uint32_t da = warp_sum (dups | acc << 16);
  PWarp w = { maxK, 0, 0, 0, kPNoIndex, 0, warp_sum (shorts | late << 16), da };
  const bool spread = __ballot_sync (full, multi) != 0;
  bool holds_first = false;      /* this lane placed the warp's earliest winner */
  if (busy) {
    const uint32_t lead = (uint32_t) __ffs ((int) busy) - 1;
    w.r = __shfl_sync (full, ra.r, (int) lead);
    if (!spread && __ballot_sync (full, ra.filled == 0 || ra.r == w.r) == full) {
      w.filled = da >> 16;       /* every winner of the warp went to record w.r */
      w.first = warp_extreme<uint32_t, false> (ra.filled ? ra.first : kPNoIndex);
      holds_first = ra.filled && ra.first == w.first;
    } else {
      rec_flush (c, ra);
      w.r = 0;
    }
  }
  const bool def = __ballot_sync (full, any_def) != 0;
  PWarp &mine = c.pw[t / 32];
  if (lane == 0) {
    mine = w;
    if (def)
      c.any_def = 1;
    if (def || spread || (busy && !w.filled))
      c.cold = 1;
  }
  __syncwarp ();
  if (holds_first) {             /* its timestamp, where the lane has it in registers */
    mine.ts = ra.ts;
    mine.ts_known = ra.ts_known;
  }
  __syncthreads ();
  const bool cold = c.cold != 0;
  if (t < 32)
    hk = p_sum (a, c, cold);
  if (!cold)
    return false;
  __syncthreads ();
  /* the general tail: a record that was empty at the burst's start gets pass 1's earliest
   * packet's timestamp (the earliest arrival placed in it); from the registers of the thread
   * that placed it where that was in its first round, else loaded (p_first_ts, after the
   * barrier that ends pass 1) */
  const PRound q0 (t);     /* won: packets of the first round only */
DQ_UNROLL
  for (uint32_t g = 0; g < kPCache; g++) {
    if (!(won & (1u << g)))
      continue;
    const uint32_t r = p_word_rec (p, cw[g]);
    if (c.rec[r].first_idx == q0.base + g * kPThreads && c.pre_filled[r] == 0) {
      c.rec[r].first_ts = cts[g];
      c.rec[r].ts_set = 1;
    }
  }
  return true;
}

/* A parse group's batch placed in the window: kd, the place of its highest key (rep) as PRel
 * gives it. False where the group's packets need not all unwrap into that key's batch: the key
 * lies less than a batch above the unwrap's lower end. */
__device__ __forceinline__ bool
p_group_at (const Params &p, const PCtl &c, uint32_t rep, int64_t &kd)
{
  const int32_t d1 = dq_unwrap_d1 (rep, (uint32_t) c.H0, p.key_bits);
  kd = c.H0 - (int64_t) ((uint64_t) c.B << p.ppb_shift) + d1 + 1;
  return (int64_t) d1 >= (int64_t) p.ppb - ((int64_t) 1 << (p.key_bits - 1));
}

/* Whether pass 1 takes the job's accounting from the parse stage's sums (every thread alike,
 * after the job's top barrier): a window placed as p_pass1's relative one, sums not over, and
 * every batch of the job late or in the window (no packet for pass 2). The packets of a batch
 * all unwrap into the batch of its highest key (rep) where that key lies at least a batch above
 * the unwrap's lower end; a batch nearer to it sends the job down the general pass. */
__device__ __forceinline__ bool
p_fast (const Params &p, const PArgs &a, const PCtl &c)
{
  if (!a.psum || c.fresh || c.jsc->over)
    return false;
  const uint32_t lane = threadIdx.x & 31;
  bool ok = true;
  if (lane < c.jsc->nb) {
    int64_t kd;
    ok = p_group_at (p, c, c.jsc->g[lane].rep, kd) &&
        kd < (int64_t) ((uint64_t) p.W << p.ppb_shift);
  }
  return __ballot_sync (0xffffffffu, !ok) == 0;
}

/* Where the parse stage's sums show the job to be the window's base batch whole: one batch, as
 * many packets as slots, no two with the same key (so every slot once), and its record empty and
 * with a frame. Then every packet wins its slot and the batch is complete, emitted and its record
 * given a new generation at the job's end, so its claim words are never read again: pass 1 has
 * nothing to do per packet (the movers place each packet by its key: PPub.frame) and the job's
 * accounting is p_sum_fast's. Returns the frame (0: not such a job). One thread, in the job's
 * setup (the state is the one the job before left). */
__device__ uint64_t
p_whole (const Params &p, const PCtl &c)
{
  const PJs &js = *c.jsc;
  if (js.nb != 1 || js.clash || js.over || js.g[0].count != p.ppb)
    return 0;
  int64_t kd;
  if (!p_group_at (p, c, js.g[0].rep, kd) || kd < 0 || kd >= (int64_t) p.ppb)
    return 0;
  const PRec &R = c.rec[(uint32_t) c.B & (p.W - 1)];
  return R.filled == 0 ? R.frame : 0;
}

/* The job's counters and its batches' records from the parse stage's sums (warp 0, after pass
 * 1): a batch's winners are its packets less its duplicates (jd), its record's first timestamp
 * its earliest packet's where the record was empty (that packet won its slot). Returns the
 * highest key (on lane 0; on every lane where the job has more than one batch). */
__device__ int64_t
p_sum_fast (const Params &p, PCtl &c)
{
  const PJs &js = *c.jsc;
  const uint32_t lane = threadIdx.x & 31;
  int64_t K = INT64_MIN;
  uint32_t late = 0, acc = 0, dups = 0;
  if (lane < js.nb) {
    const PGrp g = js.g[lane];
    K = c.H0 + dq_unwrap_d1 (g.rep, (uint32_t) c.H0, p.key_bits) + 1;
    const int64_t kd = K - (int64_t) ((uint64_t) c.B << p.ppb_shift);
    if (kd < 0) {
      late = g.count;
    } else {
      PRec &R = c.rec[((uint32_t) c.B + (uint32_t) (kd >> p.ppb_shift)) & (p.W - 1)];
      dups = R.jd;
      acc = g.count - dups;
      R.jd = 0;
      R.dups += dups;
      if (R.filled == 0)
        R.first_ts = g.ts;
      R.filled += acc;
    }
  }
  int64_t hk = K;
  if (js.nb > 1) {     /* else one batch (the steady state's job) or none: all on lane 0 */
    hk = warp_extreme<int64_t, true> (K);
    late = warp_sum (late);
    acc = warp_sum (acc);
    dups = warp_sum (dups);
    __syncwarp ();     /* the records' writes before thread 0 reads them */
  }
  if (lane == 0) {
    c.shorts = js.shorts;
    c.late = late;
    c.acc = acc;
    c.dups = dups;
    c.any = js.nb != 0;
  }
  return hk;
}

/* Pass 1 where p_fast holds (block-wide): p_pass1's claims and destinations without its
 * accounting, which the parse stage's sums give (p_sum_fast); a duplicate is counted on its
 * record (jd). */
__device__ __forceinline__ void
p_pass1_fast (const Params &p, const PArgs &a, PCtl &c, uint32_t *claims,
    const uint4 (&ce)[kPCache], int64_t &hk)
{
  const uint32_t t = threadIdx.x, n = c.job.n;
  const uint4 *ent = a.ent + (size_t) c.r * a.maxp;
  const PRel rel (p, c);
  uint32_t cw[kPCache];
  uint8_t ccls[kPCache];
  PCur cur;
  for (PRound q (t); q.base < n; q.next (t)) {
    const bool first = q.first;
    uint4 e4[kPCache];
    p_round_entries (q, n, ce, ent, e4);
DQ_UNROLL
    for (uint32_t g = 0; g < kPCache; g++) {
      const uint32_t i = q.base + g * kPThreads;
      if (i >= n)
        break;
      const uint4 e = e4[g];
      uint8_t cls = kPShort;
      uint32_t w = 0;
      if (e.w) {
        const int64_t kd = rel.kd (p, e.x);
        cls = kPLateCls;
        if (rel.in (kd)) {       /* (none beyond: p_fast) */
          cls = kPClaiming;
          const uint32_t r = rel.rec (p, kd);
          w = r << p.ppb_shift | ((uint32_t) kd & (p.ppb - 1));
          cur.at (c, r);
          if (atomicMin (&claims[w], cur.tag | (i + 1)) == cur.tag) {
            cls = kPDup;
            atomicAdd (&c.rec[r].jd, 1u);
          }
        }
      }
      if (first) {
        cw[g] = w;
        ccls[g] = cls;
      } else {
        a.pcls[i] = cls;
        a.pslot[i] = w;
      }
    }
  }
  __syncthreads ();
  unsigned long long *const dst = c.dst;
  for (PRound q (t); q.base < n; q.next (t)) {
    uint32_t w4[kPCache];
    uint8_t c4[kPCache];
    p_round_claims (a, q, n, ccls, cw, c4, w4);
DQ_UNROLL
    for (uint32_t g = 0; g < kPCache; g++) {
      const uint32_t i = q.base + g * kPThreads;
      if (i >= n)
        break;
      unsigned long long d = 0;
      if (c4[g] == kPClaiming) {
        const uint32_t r = w4[g] >> p.ppb_shift;
        if (!p_second_look (p, c, claims, cur, w4[g], r, w4[g] & (p.ppb - 1), i, d))
          atomicAdd (&c.rec[r].jd, 1u);
      }
      __stcg (&dst[i], d);
    }
  }
  __syncthreads ();
  if (t < 32)
    hk = p_sum_fast (p, c);
}

/* Destinations are stored with st.global.cg (__stcg): a plain store through a pointer loaded from
 * memory is a generic one, which the compiler orders before the shared-memory accesses after it
 * (about 90 cycles a 1024-packet job on the H200, measured when they were 24-byte copy items). */

/* Pass 1 where p_fast holds and the parse stage found the job's keys distinct (no PJs.clash): no
 * two packets of the job share a slot, so a slot's claim word only tells whether a job before
 * filled it (a duplicate) and is marked filled with a plain store; one look, no atomics but a
 * duplicate's count, and the destinations in the same loop. Block-wide. */
__device__ __forceinline__ void
p_pass1_distinct (const Params &p, const PArgs &a, PCtl &c, uint32_t *claims,
    const uint4 (&ce)[kPCache], int64_t &hk)
{
  const uint32_t t = threadIdx.x, n = c.job.n;
  const uint4 *ent = a.ent + (size_t) c.r * a.maxp;
  const PRel rel (p, c);
  unsigned long long *const dst = c.dst;
  PCur cur;
  for (PRound q (t); q.base < n; q.next (t)) {
    uint4 e4[kPCache];
    p_round_entries (q, n, ce, ent, e4);
DQ_UNROLL
    for (uint32_t g = 0; g < kPCache; g++) {
      const uint32_t i = q.base + g * kPThreads;
      if (i >= n)
        break;
      const uint4 e = e4[g];
      unsigned long long d = 0;
      if (e.w) {
        const int64_t kd = rel.kd (p, e.x);
        if (rel.in (kd)) {       /* else late (none beyond: p_fast) */
          const uint32_t r = rel.rec (p, kd), slot = (uint32_t) kd & (p.ppb - 1);
          uint32_t *const w = &claims[r << p.ppb_shift | slot];
          cur.at (c, r);
          if (*w == cur.tag) {
            atomicAdd (&c.rec[r].jd, 1u);
          } else {
            *w = cur.tag;
            if (cur.frame)
              d = cur.frame + (uint64_t) slot * p.lout;
          }
        }
      }
      __stcg (&dst[i], d);
    }
  }
  __syncthreads ();
  if (t < 32)
    hk = p_sum_fast (p, c);
}

/* Pass 1's first timestamps not taken from registers (thread 0, after pass 1's last barrier). */
__device__ __forceinline__ void
p_first_ts (const Params &p, const PArgs &a, PCtl &c)
{
  const unsigned long long *tsv = a.ts + (size_t) c.r * a.maxp;
  for (uint32_t r = 0; r < p.W; r++) {
    PRec &R = c.rec[r];
    if (R.first_idx != kPNoIndex && c.pre_filled[r] == 0 && !R.ts_set)
      R.first_ts = ld_cg64 (&tsv[R.first_idx]);
    R.first_idx = kPNoIndex;
    R.ts_set = 0;
  }
}

/* Pass 2: the deferred packets in arrival order, a chunk of kPThreads packets at a time listed
 * in shared memory, run by thread 0. Block-wide. */
__device__ void
p_pass2 (const Params &p, const PArgs &a, PCtl &c, const PSeq &q, PDef *list)
{
  const uint32_t t = threadIdx.x, n = c.job.n;
  for (uint32_t base = 0; base < n; base += kPThreads) {
    const uint32_t i = base + t;
    const bool d = i < n && a.pcls[i] == kPDeferred;
    uint32_t count;
    const uint32_t pos = p_excl_sum (d ? 1u : 0u, c.tmp, &count);
    if (d)
      list[pos] = PDef { a.px[i], a.pslot[i], i };
    __syncthreads ();
    if (t == 0)
      for (uint32_t k = 0; k < count; k++)
        q.deferred (list[k].x, list[k].slot, list[k].i);
    __syncthreads ();
  }
}

/* The front of job j (ring slot r) on warps 1.. of the control block, each warp on its own:
 * the threads' first round (ce, cts); on warp 1 also the header into c.jn[b] and the free ring's
 * entries from the job before's base on into c.fp[b] (frames at or beyond the job's tail are not
 * used). Ahead
 * (while thread 0 finishes the job before), a warp gives up once thread 0 is done and the job
 * is not there yet (false): the host may be waiting for the job before to post it. */
__device__ bool
p_front (const Params &p, const PArgs &a, PCtl &c, uint64_t j, uint32_t r, uint32_t b,
    uint4 (&ce)[kPCache], unsigned long long (&cts)[kPCache], bool ahead)
{
  const uint32_t t = threadIdx.x;
  uint32_t got = 0;
  if ((t & 31) == 0) {
    for (;;) {
      if (ld_acquire64 (&a.parsed[r]) == j) {
        got = 1;
        break;
      }
      if (ahead && atomicAdd (&c.seq_done, 0u))
        break;
      pause_ns (20);
    }
  }
  if (!__shfl_sync (0xffffffffu, got, 0))
    return false;
  if (ahead && t == 32)
    c.ahead[b] = 1;
  __syncwarp ();      /* the warp's loads after lane 0's acquire */
  p_first_round (a, r, ce, cts);
  if (t < 64) {
    /* from the head after the job before's setup: read here, before thread 32 (this warp) sets
     * it anew */
    const uint64_t base = c.head_set;
    if (t == 32) {
      c.jn[b] = a.hdr[r];
      c.fp_base[b] = base;
    }
    if (a.psum && t - 32 < sizeof (PJs) / 8)
      ((uint64_t *) &c.js[b])[t - 32] = ld_cg64 ((const uint64_t *) &a.jsum[r] + (t - 32));
    const uint32_t h0 = (uint32_t) (base % p.ring_cap), room = p.ring_cap - h0;
    for (uint32_t k = t - 32; k < kPFramesAhead; k += 32) {
      const uint32_t kk = k % p.ring_cap;
      const FrameEnt *e = &a.frames[kk >= room ? kk - room : h0 + kk];
      c.fp[b][k] = FrameEnt { ld_cg64 (&e->ptr), ld_cg64 (&e->user) };
    }
  }
  __syncwarp ();      /* warp 1's entries before thread 32's setup reads them */
  return true;
}

/* The job's state before its passes (one thread): the header loaded ahead, the result and item
 * areas of its ring slot, the counters, the free ring's entries loaded ahead, and the frames
 * added since the last job. */
__device__ void
p_setup (const PArgs &a, PCtl &c, const PSeq &q, uint32_t r, uint32_t b)
{
  const PHdr job = c.jn[b];
  const uint64_t base = c.fp_base[b];
  const uint64_t avail = job.free_tail > base ? job.free_tail - base : 0;
  ResHdr *const res = (ResHdr *) (a.resd + (size_t) r * a.res_bytes);
  c.job = job;
  c.jsc = &c.js[b];
  c.r = r;
  c.res = res;
  c.out = (DqReorderBatch *) (res + 1);
  c.rel = (DqReorderFrame *) ((DqReorderBatch *) (res + 1) + a.res_cap);
  c.dst = a.dst + (size_t) r * a.maxp;
  c.zeros = a.zeros + (size_t) r * a.zcap;
  c.n_out = c.n_rel = c.n_short = c.n_long = 0;
  c.late = c.shorts = c.acc = c.dups = 0;
  c.any_def = c.fresh = c.any = c.cold = 0;
  c.first_valid = kPNoIndex;
  c.seq_done = 0;
  c.whole = 0;
  c.fpre = c.fp[b];
  c.fpre_base = base;
  c.fpre_n = avail < kPFramesAhead ? (uint32_t) avail : kPFramesAhead;
  if (job.kind == DQ_JOB_REORDER) {
    c.stats.packets += job.n;
    if (c.initialized && c.want_frame && c.head < job.free_tail)
      q.fill_frames ();     /* frames added since the last job, for records that want one */
    c.H0 = c.H;
    if (c.initialized && a.psum)
      c.whole = p_whole (q.p, c);
  }
  c.head_set = c.head;
}

__device__ void
p_control (const Params &p, const PArgs &a)
{
  uint8_t *dyn = dyn_shared ();
  PCtl &c = *(PCtl *) dyn;
  uint32_t *claims = (uint32_t *) (dyn + p_claims_off ());
  PDef *list = (PDef *) (dyn + p_list_off (p.W, p.ppb));
  const uint32_t t = threadIdx.x;
  const PSeq q { p, a, c, claims };

  for (size_t k = t; k < (size_t) p.W * p.ppb; k += kPThreads)
    claims[k] = ~0u;
  if (t == 0) {
    memset (&c, 0, sizeof c);
    for (uint32_t r = 0; r < DQ_REORDER_MAX_WINDOW; r++) {
      c.rec[r].gen = 1;
      c.rec[r].first_idx = kPNoIndex;
    }
  }
  __syncthreads ();

  /* A job's chain: its setup (thread 32) while warp 0 loads its first round (and thread 64
   * publishes the job before where this one was not posted ahead), pass 1 and pass 2 (every
   * thread), then the sequential part and the results (thread 0) while warps 1.. load the next
   * job's front. */
  static_assert (kPThreads >= 64, "the control block loads ahead on warps 1..");
  static_assert (sizeof (PJs) % 8 == 0 && sizeof (PJs) / 8 <= 32, "warp 1 loads a job's sums");
  constexpr uint32_t kRelease = kPThreads >= 96 ? 64 : 32;   /* publishes the job before */
  uint4 ce[kPCache];
  unsigned long long cts[kPCache];
  bool have = false;          /* this thread's front of the job is loaded */
  int64_t hk = INT64_MIN;     /* warp 0: pass 1's highest key */
  PSlot sl = { 0, 0 };
  uint32_t prev_r = 0;
  for (uint64_t j = 1;; prev_r = sl.r, j++, sl.step (1, a.R)) {
    const uint32_t r = sl.r, b = (uint32_t) (j & 1);
    /* the job before: published (the release waits for its stores, the whole block's: they
     * precede the barrier that ended it). Here where this job was not found posted ahead,
     * before its thread may wait for it (the host may be waiting for the job before to post
     * it); else by the same thread after its front of the next job, off the chain, when the
     * stores have long reached memory (the release then costs half as much) */
    bool release_late = false;
    if (t == kRelease && j > 1) {
      if (c.ahead[b ^ 1])
        release_late = true;
      else
        st_release64 (&a.published[prev_r], j - 1);
    }
    /* warp 0's first round, beside the setup where warp 1 found the job posted already (else
     * after the barrier, which orders it after warps 1..'s acquire of the job) */
    bool w0 = false;
    if (t < 32) {
      if (__shfl_sync (0xffffffffu, t == 0 ? c.ahead[b ^ 1] : 0u, 0)) {
        p_first_round (a, r, ce, cts);
        w0 = true;
      }
    }
    if (t >= 32 && !have)
      p_front (p, a, c, j, r, b ^ 1, ce, cts, false);
    if (t == 32)
      p_setup (a, c, q, r, b ^ 1);
    __syncthreads ();
    if (t == 0)
      c.ahead[b ^ 1] = 0;   /* read above; warp 1 sets it again for the job after the next */
    if (t < 32 && !w0)
      p_first_round (a, r, ce, cts);
    const uint32_t kind = c.job.kind;
    if (kind == kPJobStop) {
      if (release_late)
        st_release64 (&a.published[prev_r], j - 1);
      /* one stop for each move group: this job and the next ones, which the host posted as
       * stops too (one per parse group, and there are no more move groups than those) */
      if (t < a.move_groups) {
        const uint32_t rs = (uint32_t) ((j - 1 + t) % a.R);
        a.pub[rs] = PPub { 0, 0, 0, 0, 0, 1, 0, 0 };
        st_release64 (&a.published[rs], j + t);
      }
      return;
    }
    if (kind == DQ_JOB_REORDER) {
      const uint32_t n = c.job.n;
      if (!c.initialized) {       /* the same for every thread: thread 0 sets it after this */
        const uint4 *ent = a.ent + (size_t) r * a.maxp;
        for (uint32_t i = t; i < n; i += kPThreads)
          if (ent[i].w)
            atomicMin (&c.first_valid, i);
        __syncthreads ();
        if (t == 0 && c.first_valid != kPNoIndex) {
          /* the first packet ever seen starts the window: every packet of this burst waits
           * for pass 2 */
          const uint4 e = ent[c.first_valid];
          int64_t x0;
          uint32_t s0;
          c.H = (int64_t) e.x;
          locate (p, c.H, e.y, x0, s0);
          q.start_window (x0);
          c.fresh = 1;
          c.H0 = c.H;
        }
        __syncthreads ();
      }
      bool tail = true;     /* the general tail: first timestamps loaded, pass 2 */
      if (c.whole) {        /* nothing per packet (p_whole) */
        if (t < 32)
          hk = p_sum_fast (p, c);
        tail = false;
      } else if (c.initialized && p_fast (p, a, c)) {
        if (c.jsc->clash)
          p_pass1_fast (p, a, c, claims, ce, hk);
        else
          p_pass1_distinct (p, a, c, claims, ce, hk);
        tail = false;
      } else if (c.initialized) {
        tail = p_pass1 (p, a, c, claims, ce, cts, hk);
      } else {
        for (uint32_t i = t; i < n; i += kPThreads)     /* every packet short */
          c.dst[i] = 0;
        if (t == 0)
          c.shorts = n;
      }
      if (tail) {
        __syncthreads ();
        if (t == 0)
          p_first_ts (p, a, c);
        if (c.any_def)
          p_pass2 (p, a, c, q, list);
      }
    }
    /* thread 0: the sequential part and the results; warps 1..: the next job's front */
    if (t == 0) {
      if (kind == DQ_JOB_FLUSH) {
        q.flush (c.job.mode);
        q.finish (DQ_JOB_FLUSH);
      } else {
        c.stats.accepted += c.acc;
        c.stats.duplicates += c.dups;
        if (c.any) {
          c.H = hk > c.H ? hk : c.H;
          q.complete_batches ();
        }
        q.finish (DQ_JOB_REORDER);
      }
      a.pub[r] = PPub { kind == DQ_JOB_REORDER ? c.job.n : 0, c.n_short, c.n_long, c.n_out,
        c.n_rel, 0, c.job.data, c.whole };
      atomicExch (&c.seq_done, 1u);
      /* warp 0 loads its next first round at the top: set here, so that the registers are free
       * above (the values stay live across the loop for warps 1..) */
DQ_UNROLL
      for (uint32_t g = 0; g < kPCache; g++) {
        ce[g] = make_uint4 (0, 0, 0, 0);
        cts[g] = 0;
      }
    } else if (t >= 32) {
      PSlot nx = sl;
      nx.step (1, a.R);
      have = p_front (p, a, c, j + 1, nx.r, b, ce, cts, true);
      if (release_late)
        st_release64 (&a.published[prev_r], j - 1);
    }
    __syncthreads ();
  }
}

/* ---- move -------------------------------------------------------------------------------- */

/* Job sources of the movers: packet k at its entry's offset from the job's data, of its entry's
 * length (the parse stage's), to the destination control gave it (0: none), or, where the job
 * has a frame (p_whole), to its slot there (the key's low bits; a short packet nowhere). Plain
 * loads: a packet's every 16-byte unit looks its job up, and after the block's acquire of the
 * job (p_move) the entry comes from L2 once and then from this SM's L1. */
struct EntJobs {
  const uint4 *ent;
  const unsigned long long *dst;
  const uint8_t *data;
  uint64_t frame;
  uint32_t pay_off, slot_mask, lout;
  __device__ Job operator() (uint32_t k) const
  {
    const uint4 e = ent[k];
    const uint8_t *pkt = data + e.z;
    const uint64_t d = frame ? (e.w ? frame + (uint64_t) (e.x & slot_mask) * lout : 0) : dst[k];
    return Job { pkt + pay_off, pkt, pkt + e.w, (uint8_t *) d };
  }
};

/* The last move block of job j (ring slot r): the results control wrote into device memory,
 * the header and the entries in use, into the slot's mapped host memory. Block-wide. */
__device__ void
p_copy_results (const PArgs &a, uint32_t r, const PPub &pub, uint64_t *dst)
{
  static_assert (sizeof (ResHdr) % 8 == 0 && sizeof (DqReorderFrame) % 8 == 0,
      "results are copied in 8-byte words");
  const uint64_t *src = (const uint64_t *) (a.resd + (size_t) r * a.res_bytes);
  const uint32_t head = (uint32_t) ((sizeof (ResHdr) + pub.n_out * sizeof (DqReorderBatch)) / 8);
  const uint32_t rel0 = (uint32_t) ((sizeof (ResHdr) + a.res_cap * sizeof (DqReorderBatch)) / 8);
  const uint32_t words = head + pub.n_rel * (uint32_t) (sizeof (DqReorderFrame) / 8);
  for (uint32_t k = threadIdx.x; k < words; k += kPThreads) {
    const uint32_t w = k < head ? k : rel0 + (k - head);
    dst[w] = ld_cg64 (&src[w]);
  }
}

__device__ void
p_move (const Params &p, const PArgs &a, uint32_t m)
{
  __shared__ PPub pub;
  __shared__ uint64_t *res;
  __shared__ uint32_t last;
  const uint32_t t = threadIdx.x;
  /* groups of blocks take turns, as the parse groups do */
  const uint32_t G = a.move_groups, per = a.movers / G, g = m % G;
  const uint32_t first = m / G * kPThreads + t, stride = per * kPThreads;
  PSlot sl = { g, 0 };
  for (uint64_t j = g + 1;; j += G, sl.step (G, a.R)) {
    const uint32_t r = sl.r;
    if (t == 0) {
      while (ld_acquire64 (&a.published[r]) != j)
        pause_ns (20);
      pub = a.pub[r];
      res = (uint64_t *) a.res[r];
    }
    __syncthreads ();
    if (pub.stop)
      return;
    move_payloads (p, EntJobs { a.ent + (size_t) r * a.maxp, a.dst + (size_t) r * a.maxp,
        (const uint8_t *) pub.data, pub.frame, p.pay_off, p.ppb - 1, p.lout }, pub.n_items,
        first, stride);
    const ZeroRun *zr = a.zeros + (size_t) r * a.zcap;
    for (uint32_t k = first / 32; k < pub.n_short; k += stride / 32) {   /* a warp each */
      const ZeroRun z = zr[k];
      team_zero ((uint8_t *) z.dst, (uint32_t) z.len, t & 31, 32);
    }
    for (uint32_t k = 0; k < pub.n_long; k++) {
      const ZeroRun z = zr[a.zcap - 1 - k];
      /* runs are at most a frame: pieces of at most 2 GiB for team_zero's 32-bit length */
      for (uint64_t o = 0; o < z.len; o += 1ull << 31) {
        const uint64_t len = z.len - o < (1ull << 31) ? z.len - o : (1ull << 31);
        team_zero ((uint8_t *) (z.dst + o), (uint32_t) len, first, stride);
      }
    }
    __syncthreads ();
    if (t == 0)
      last = last_block_of (&a.move_done[r], sl, per);
    __syncthreads ();
    if (last) {
      p_copy_results (a, r, pub, res);
      __syncthreads ();
      if (t == 0)
        st_release_sys64 (&a.done[r], j);
    }
  }
}

/* The persistent grid: block 0 control, then `parsers` parse blocks, then the movers. */
__global__ void __launch_bounds__ (kPThreads)
reorder_persist (const __grid_constant__ Params p, const __grid_constant__ PArgs a)
{
  if (blockIdx.x == 0)
    p_control (p, a);
  else if (blockIdx.x <= a.parsers)
    p_parse (p, a, blockIdx.x - 1);
  else
    p_move (p, a, blockIdx.x - 1 - a.parsers);
}

}  /* namespace dqk */
