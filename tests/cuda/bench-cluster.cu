/* bench-cluster.cu — a design benchmark, not the library: a model of pass 1 of the persistent
 * control block (cuda/reorder-persist.cuh) on one SM, against the same work spread over a
 * thread-block cluster of 2 or 4 SMs (sm_90) whose blocks claim in the first block's shared
 * memory through distributed shared memory, and on one SM with untaken code in its loops.
 *
 * The library's control block runs pass 1 of every job on one SM (512 threads). Its clock stamps
 * on the H200 give pass 1's first loop about 2 100 cycles for a 1024-packet job whether the block
 * has 512 threads (two packets a thread) or 1024 (one): the loop is bound by what the SM issues
 * for the job, not by one thread's chain, which points at more SMs, or at less work a packet.
 * This program measures both on a model of pass 1 with the library's steps per packet (and
 * lighter sums), its cost per phase stamped:
 *
 *   loop 1  every packet: its entry (kCache of them a thread kept in registers, loaded ahead
 *           during the job before, the rest from global memory), the key's unwrap against the
 *           highest key and its place relative to the window (late, in it, beyond), the record's
 *           generation tag, an atomic minimum of (tag, arrival index + 1) on the slot's claim
 *           word, the class byte written out;
 *   barrier
 *   loop 2  every claimed packet: a compare-and-swap telling the earliest arrival (which marks
 *           the slot filled) from a duplicate, the copy item (source, destination, length)
 *           written out; per warp the winners, duplicates, highest key and earliest winner
 *           summed (one warp-reduce instruction each) into the first block's shared memory;
 *   barrier
 *   sum     warp 0 of the first block sums the warps' parts, checks them, marks the record's next
 *           generation (the window's move, modelled as one store); every thread loads the next
 *           job's first round;
 *   barrier
 *
 * A cluster of C blocks takes the packets T, T + C * 512, ... (T = block rank * 512 + thread);
 * the claim words, tags and warp parts stay in the first block, read and updated by the others
 * through distributed shared memory; the barriers are cluster barriers (C = 1: block barriers
 * and the block's own shared memory, as the library). One batch per job (packets_per_batch =
 * the job's packets, shuffled), a window of two records. Not modelled: thread 0's sequential
 * steps, the other stages, loss, late and deferred packets (the stream has none). Checked: every
 * job's winners = its packets and no duplicates, and the last job's copy items against the
 * expected ones (exit 1 otherwise).
 *
 * Timed by the first block's thread 0 (clock64 from a job's start to the next job's, and each
 * phase: loop 1, its barrier, loop 2, its barrier, the sums) and by the host's events over the
 * whole kernel.
 *
 *   bench-cluster                       the default set (jobs of 1024, 4096, 16384 packets;
 *                                       clusters of 1, 2, 4 blocks; then 1 block with untaken
 *                                       code in its loops, and 1 with the library's accounting)
 *   bench-cluster PACKETS CLUSTER [JOBS [lean|bulky|library]]  one configuration
 * Lines starting "bench " are machine-readable (key=value); the last line is the summary. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace {

constexpr uint32_t kThreads = 512;           /* a block of the model, as the control block */
constexpr uint32_t kWarps = kThreads / 32;
constexpr uint32_t kW = 2;                   /* window (records) */
constexpr uint32_t kMaxCluster = 4;
constexpr uint32_t kPool = 8;                /* distinct shuffles, cycled through */
constexpr uint32_t kLen = 64;                /* payload bytes (only their addresses are used) */
constexpr uint64_t kData = 1ull << 40;      /* the payloads' base: never dereferenced */
constexpr uint64_t kFrame = 1ull << 41;     /* the frames' base (variant kLib): the same */

/* the variants: the model as above; with untaken code in its loops; with the library's
 * accounting (below) */
enum Variant { kLean = 0, kBulky = 1, kLib = 2 };
static const char *const kVariantName[3] = { "lean", "bulky", "library" };

/* Variant kLib adds what the library's pass 1 does beyond the model: each thread's first round
 * keeps its timestamps in registers too; the second loop keeps each thread's winners' record,
 * count, earliest arrival and that packet's timestamp (a thread whose winners change record
 * flushes them by atomics), reads the job's data base, the item array and the record's frame
 * from shared memory for every packet and writes 24-byte copy items; a warp's sums are the
 * library's (its highest key in 64 bits, counts packed two to a word, its winners' record,
 * count, earliest arrival and timestamp where they all went to one record); warp 0 sums them
 * record by record into the records' counts and first timestamps. */
struct Item24 {
  uint64_t src, dst;
  uint32_t len, pad;
};

/* a warp's part of the sums, variant kLib */
struct LibPart {
  int64_t max_key;
  uint64_t ts;
  uint32_t r, filled, first, ts_known;
  uint32_t shorts_late, dups_acc;
};

/* a warp's part of the sums */
struct WarpPart {
  uint32_t won, dups;
  int32_t maxd;
  uint32_t first;
};

/* the first block's shared state (dynamic shared memory, then the claim words) */
struct Ctl {
  uint32_t tag[kW];                          /* the records' generation tags (<< 16), falling */
  WarpPart part[kMaxCluster * kWarps];
  /* variant kLib */
  uint64_t frame[kW], first_ts[kW];
  uint32_t filled[kW];
  uint64_t data;
  Item24 *items;
  LibPart lpart[kWarps];
};

struct Args {
  const uint4 *ent;                          /* kPool x n entries: (key offset, data offset, len, 0) */
  uint8_t *cls;                              /* n class bytes */
  uint4 *items;                              /* n copy items: source lo/hi, destination offset, len */
  Item24 *items24;                           /* the same, variant kLib */
  const unsigned long long *ts;              /* kPool x n arrival stamps (variant kLib) */
  unsigned long long *cycles;                /* per job, by the first block's thread 0 */
  unsigned long long *phase;                 /* per job 5: the ends of loop 1, its barrier, loop 2,
                                              * its barrier, the sums (from the job's start) */
  unsigned long long *bad;                   /* jobs whose sums were wrong */
  uint32_t n, shift, jobs;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr uint32_t kCache = 4;               /* first-round packets a thread keeps in registers */
constexpr uint8_t kClaim = 1, kLate = 2, kBeyond = 3;
constexpr uint32_t kNoIndex = ~0u;

__device__ __forceinline__ uint32_t
cl_rank ()
{
  uint32_t r;
  asm volatile ("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

/* every thread of the C blocks: a cluster barrier, or the block's own where C = 1 */
template <uint32_t C>
__device__ __forceinline__ void
cl_sync ()
{
  if (C > 1)
    asm volatile ("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
        ::: "memory");
  else
    __syncthreads ();
}

/* the generic address of *p in block `rank` of the cluster */
template <typename T>
__device__ __forceinline__ T *
cl_map (T *p, uint32_t rank)
{
  uint64_t r;
  asm volatile ("mapa.u64 %0, %1, %2;" : "=l"(r) : "l"(p), "r"(rank));
  return (T *) r;
}

/* Code that never runs here (32-bit divisions by values the compiler cannot know): the bulky
 * variant puts it beside every packet's steps in both loops, as the library's loops carry their
 * rare paths (packets beyond the window, other configurations); on sm_90 that kernel is 186 KB
 * of code against the lean one's 13 KB */
__device__ __forceinline__ uint32_t
bulk (uint32_t x, uint32_t s)
{
  uint32_t acc = 0;
#pragma unroll
  for (uint32_t u = 0; u < 48; u++) {
    acc += x / (s + u + 3);
    x = x * 7 + acc % (s + 13);
  }
  return acc;
}
#endif

/* a thread's winners in one record (variant kLib, as the library's RecAcc) */
struct Acc {
  uint32_t r, filled, first;
  uint64_t ts;
  bool ts_known;
};

template <uint32_t C, int kVar>
__global__ void __launch_bounds__ (kThreads, 1)
pass1_model (Args a)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr bool kL = kVar == kLib;
  extern __shared__ uint4 dyn[];
  Ctl *own = (Ctl *) dyn;
  uint32_t *own_claims = (uint32_t *) (own + 1);
  const uint32_t t = threadIdx.x, lane = t & 31, warp = t / 32;
  const uint32_t rank = C > 1 ? cl_rank () : 0;
  Ctl *S = C > 1 ? cl_map (own, 0) : own;
  uint32_t *claims = C > 1 ? cl_map (own_claims, 0) : own_claims;
  const uint32_t n = a.n, T = rank * kThreads + t, stride = C * kThreads;
  if (rank == 0) {
    for (uint32_t k = t; k < kW * n; k += kThreads)
      own_claims[k] = ~0u;
    if (t < kW) {
      own->tag[t] = 0x7fffu << 16;
      own->frame[t] = kFrame + (uint64_t) t * n * kLen;
      own->first_ts[t] = 0;
      own->filled[t] = 0;
    }
    if (t == 0) {
      own->data = kData;
      own->items = a.items24;
    }
  }
  uint4 ce[kCache];
  unsigned long long cts[kCache];
#pragma unroll
  for (uint32_t g = 0; g < kCache; g++) {
    const uint32_t i = T + g * stride;
    ce[g] = i < n ? a.ent[i] : make_uint4 (0, 0, 0, 0);
    cts[g] = kL && i < n ? a.ts[i] : 0;
  }
  cl_sync<C> ();
  unsigned long long t0 = clock64 ();
  for (uint32_t j = 0; j < a.jobs; j++) {
    unsigned long long ph[5];
    const uint4 *ent = a.ent + (size_t) (j % kPool) * n;
    const uint32_t kbase = j * n;            /* the job's keys: kbase + its shuffle */
    const int64_t B = j;                     /* the window's first batch */
    const int64_t H0 = (int64_t) kbase - 1;  /* the highest key so far */
    const int64_t off = H0 - (B << a.shift);
    const uint32_t h0lo = (uint32_t) H0, span = kW << a.shift, rB = (uint32_t) B & (kW - 1);
    int32_t maxd = INT32_MIN;
    uint32_t won = 0, dups = 0, late = 0, first = ~0u;
    uint32_t cw[kCache];
    uint8_t ccls[kCache];
    /* loop 1: place and claim */
    for (uint32_t base = T, q = 0; base < n; base += kCache * stride, q++) {
      uint4 e4[kCache];
#pragma unroll
      for (uint32_t g = 0; g < kCache; g++)
        if (base + g * stride < n)
          e4[g] = q == 0 ? ce[g] : ent[base + g * stride];
#pragma unroll
      for (uint32_t g = 0; g < kCache; g++) {
        const uint32_t i = base + g * stride;
        if (i >= n)
          break;
        const uint32_t key = kbase + e4[g].x;
        const int32_t d1 = (int32_t) (key - h0lo - 1u);       /* 32-bit keys: no sign shift */
        maxd = d1 > maxd ? d1 : maxd;
        const int64_t kd = off + d1 + 1;
        uint8_t cls;
        uint32_t w = 0;
        if (kd < 0) {
          cls = kLate;
          late++;
        } else if ((uint64_t) kd >= span) {
          cls = kBeyond;
          if (kVar == kBulky)
            cls = (uint8_t) (kBeyond + (bulk ((uint32_t) kd, a.shift) & 0x10));
        } else {
          const uint32_t r = (rB + ((uint32_t) kd >> a.shift)) & (kW - 1);
          w = r << a.shift | ((uint32_t) kd & (n - 1));
          const uint32_t tag = S->tag[r];
          const uint32_t old = atomicMin (&claims[w], tag | (i + 1));
          cls = kClaim;
          if (old == tag)
            dups++;
        }
        a.cls[i] = cls;
        if (q == 0) {
          cw[g] = w;
          ccls[g] = cls;
        }
      }
    }
    ph[0] = clock64 ();
    cl_sync<C> ();
    ph[1] = clock64 ();
    /* loop 2: winners and duplicates, the copy items */
    Acc ra = { 0, 0, kNoIndex, 0, false };
    bool multi = false;
    for (uint32_t base = T, q = 0; base < n; base += kCache * stride, q++) {
      uint4 e4[kCache];
      uint32_t w4[kCache];
      uint8_t c4[kCache];
#pragma unroll
      for (uint32_t g = 0; g < kCache; g++) {
        const uint32_t i = base + g * stride;
        if (q == 0) {
          e4[g] = ce[g];
          w4[g] = cw[g];
          c4[g] = ccls[g];
        } else if (i < n) {
          e4[g] = ent[i];
          c4[g] = a.cls[i];
          const uint32_t kd = kbase + e4[g].x - (uint32_t) (B << a.shift);
          w4[g] = (((rB + (kd >> a.shift)) & (kW - 1)) << a.shift) | (kd & (n - 1));
        }
      }
#pragma unroll
      for (uint32_t g = 0; g < kCache; g++) {
        const uint32_t i = base + g * stride;
        if (i >= n)
          break;
        if (kVar == kBulky && c4[g] >= kBeyond) {
          a.items[i] = make_uint4 (bulk (e4[g].x, a.shift), 0, 0, 0);
          continue;
        }
        Item24 it = { 0, 0, e4[g].z, 0 };
        if (kL)
          it.src = S->data + e4[g].y;
        if (c4[g] == kClaim) {
          const uint32_t r = w4[g] >> a.shift, slot = w4[g] & (n - 1);
          const uint32_t tag = S->tag[r], mine = tag | (i + 1);
          if (atomicCAS (&claims[w4[g]], mine, tag) == mine) {
            won++;
            if (kL) {
              if (ra.filled && ra.r != r) {
                atomicAdd (&S->filled[ra.r], ra.filled);
                ra = Acc { r, 0, kNoIndex, 0, false };
                multi = true;
              }
              ra.r = r;
              ra.filled++;
              if (i < ra.first) {
                ra.first = i;
                ra.ts = q == 0 ? cts[g] : 0;
                ra.ts_known = q == 0;
              }
              const uint64_t fr = S->frame[r];
              if (fr)
                it.dst = fr + (uint64_t) slot * kLen;
            } else {
              first = i < first ? i : first;
              const uint64_t src = kData + e4[g].y;
              a.items[i] = make_uint4 ((uint32_t) src, (uint32_t) (src >> 32),
                  (uint32_t) (r * n + slot) * kLen, e4[g].z);
            }
          } else {
            dups++;
          }
        }
        if (kL)
          S->items[i] = it;
      }
    }
    if (!kL) {
      const WarpPart wp = { __reduce_add_sync (~0u, won), __reduce_add_sync (~0u, dups),
        __reduce_max_sync (~0u, maxd), __reduce_min_sync (~0u, first) };
      if (lane == 0)
        S->part[rank * kWarps + warp] = wp;
    } else {
      /* the library's warp sums */
      const unsigned full = ~0u;
      const int64_t maxK = H0 + maxd + 1;
      const int hi = (int) (maxK >> 32);
      const int mh = __reduce_max_sync (full, hi);
      const uint32_t ml = __reduce_max_sync (full, hi == mh ? (uint32_t) maxK : 0u);
      const unsigned busy = __ballot_sync (full, ra.filled != 0);
      LibPart w = { (int64_t) (((uint64_t) (uint32_t) mh << 32) | ml), 0, 0, 0, kNoIndex, 0,
        __reduce_add_sync (full, late << 16), __reduce_add_sync (full, dups | won << 16) };
      const bool spread = __ballot_sync (full, multi) != 0;
      if (busy) {
        const uint32_t lead = (uint32_t) __ffs ((int) busy) - 1;
        w.r = __shfl_sync (full, ra.r, (int) lead);
        if (!spread && __ballot_sync (full, ra.filled == 0 || ra.r == w.r) == full) {
          w.filled = __reduce_add_sync (full, ra.filled);
          w.first = __reduce_min_sync (full, ra.filled ? ra.first : kNoIndex);
          const int mlane = __ffs ((int) __ballot_sync (full, ra.filled && ra.first == w.first)) - 1;
          w.ts = __shfl_sync (full, (unsigned long long) ra.ts, mlane);
          w.ts_known = __shfl_sync (full, ra.ts_known ? 1u : 0u, mlane);
        } else {
          if (ra.filled)
            atomicAdd (&S->filled[ra.r], ra.filled);
          w.r = 0;
        }
      }
      if (lane == 0)
        S->lpart[warp] = w;
    }
    ph[2] = clock64 ();
    cl_sync<C> ();
    ph[3] = clock64 ();
    /* warp 0 of the first block: the sums, checked; the record's next generation */
    if (rank == 0 && warp == 0) {
      bool ok;
      if (!kL) {
        /* up to 64 warps' parts: lanes take lane and lane + 32 */
        WarpPart p = { 0, 0, INT32_MIN, ~0u };
        for (uint32_t k = lane; k < C * kWarps; k += 32) {
          const WarpPart q = own->part[k];
          p.won += q.won;
          p.dups += q.dups;
          p.maxd = q.maxd > p.maxd ? q.maxd : p.maxd;
          p.first = q.first < p.first ? q.first : p.first;
        }
        const uint32_t sw = __reduce_add_sync (~0u, p.won), sd = __reduce_add_sync (~0u, p.dups);
        const int32_t sm = __reduce_max_sync (~0u, p.maxd);
        const uint32_t sf = __reduce_min_sync (~0u, p.first);
        ok = sw == n && sd == 0 && sm == (int32_t) n - 1 && sf == 0;
      } else {
        /* the library's p_sum: the warps' parts record by record */
        const unsigned full = ~0u;
        LibPart w = { INT64_MIN, 0, 0, 0, kNoIndex, 0, 0, 0 };
        if (lane < kWarps)
          w = own->lpart[lane];
        const int hi = (int) (w.max_key >> 32);
        const int mh = __reduce_max_sync (full, hi);
        const uint32_t mlo = __reduce_max_sync (full, hi == mh ? (uint32_t) w.max_key : 0u);
        const int64_t hk = (int64_t) (((uint64_t) (uint32_t) mh << 32) | mlo);
        const uint32_t da = __reduce_add_sync (full, w.dups_acc);
        const uint32_t sl = __reduce_add_sync (full, w.shorts_late);
        uint32_t firsts = kNoIndex;
        for (unsigned left = __ballot_sync (full, w.filled != 0); left;) {
          const uint32_t r = __shfl_sync (full, w.r, __ffs ((int) left) - 1);
          const bool in = w.filled && w.r == r;
          const uint32_t f = __reduce_add_sync (full, in ? w.filled : 0);
          const uint32_t m = __reduce_min_sync (full, in ? w.first : kNoIndex);
          if (in && w.first == m) {
            const uint32_t pre = own->filled[r];
            own->filled[r] = pre + f;
            if (pre == 0)
              own->first_ts[r] = w.ts_known ? w.ts : a.ts[(size_t) (j % kPool) * n + m];
          }
          firsts = m < firsts ? m : firsts;
          left &= ~__ballot_sync (full, in);
        }
        __syncwarp ();
        ok = own->filled[rB] == n && (da & 0xffffu) == 0 && (da >> 16) == n && sl == 0 &&
            hk == (int64_t) kbase + n - 1 && firsts == 0 &&
            own->first_ts[rB] == a.ts[(size_t) (j % kPool) * n];
        __syncwarp ();
        if (lane == 0) {
          own->filled[rB] = 0;               /* the window's move: the record reset */
          own->first_ts[rB] = 0;
        }
      }
      if (lane == 0) {
        if (!ok)
          atomicAdd (a.bad, 1ull);
        own->tag[rB] -= 1u << 16;            /* the window's move: the record's next use */
        ph[4] = clock64 ();
        for (int k = 0; k < 5; k++)
          a.phase[(size_t) j * 5 + k] = ph[k] - t0;
        a.cycles[j] = ph[4] - t0;
        t0 = ph[4];
      }
    }
    /* the next job's first round, loaded ahead */
    const uint4 *nent = a.ent + (size_t) ((j + 1) % kPool) * n;
#pragma unroll
    for (uint32_t g = 0; g < kCache; g++) {
      const uint32_t i = T + g * stride;
      ce[g] = i < n ? nent[i] : make_uint4 (0, 0, 0, 0);
      cts[g] = kL && i < n ? a.ts[(size_t) ((j + 1) % kPool) * n + i] : 0;
    }
    cl_sync<C> ();
  }
#else
  __trap ();
#endif
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf (stderr, "bench-cluster: %s: %s\n", #x, cudaGetErrorString (e_)); exit (2); } } while (0)

struct Result {
  double us_per_job, cycles_med;
  bool ok;
};

template <uint32_t C, int kVar>
cudaError_t
launch (const Args &a, size_t smem)
{
  cudaError_t e = cudaFuncSetAttribute (pass1_model<C, kVar>,
      cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem);
  if (e != cudaSuccess)
    return e;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3 (C);
  cfg.blockDim = dim3 (kThreads);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = C;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx (&cfg, pass1_model<C, kVar>, a);
}

int
cmp_ull (const void *x, const void *y)
{
  const unsigned long long a = *(const unsigned long long *) x, b = *(const unsigned long long *) y;
  return a < b ? -1 : a > b;
}

Result
run (uint32_t n, uint32_t cluster, int variant, uint32_t jobs, double clock_ghz)
{
  /* entries: kPool shuffles of 0..n-1 (the key's offset from the job's first key) */
  uint4 *h = (uint4 *) malloc ((size_t) kPool * n * sizeof *h);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  uint32_t *perm = (uint32_t *) malloc (n * sizeof *perm);
  for (uint32_t p = 0; p < kPool; p++) {
    for (uint32_t s = 0; s < n; s++)
      perm[s] = s;
    for (uint32_t s = n - 1; s > 0; s--) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const uint32_t k = (uint32_t) (x % (s + 1)), tmp = perm[s];
      perm[s] = perm[k];
      perm[k] = tmp;
    }
    for (uint32_t i = 0; i < n; i++)
      h[(size_t) p * n + i] = make_uint4 (perm[i], (p * n + i) * 128u, kLen, 0);
  }
  /* arrival stamps (variant kLib): any distinct values */
  unsigned long long *hts = (unsigned long long *) malloc ((size_t) kPool * n * sizeof *hts);
  for (size_t k = 0; k < (size_t) kPool * n; k++)
    hts[k] = 1000000007ull + k * 977;
  Args a = {};
  uint4 *ent, *items;
  Item24 *items24;
  unsigned long long *ts;
  uint8_t *cls;
  unsigned long long *cycles, *phase, *bad;
  CK (cudaMalloc (&ent, (size_t) kPool * n * sizeof *ent));
  CK (cudaMemcpy (ent, h, (size_t) kPool * n * sizeof *ent, cudaMemcpyHostToDevice));
  CK (cudaMalloc (&cls, n));
  CK (cudaMalloc (&items, (size_t) n * sizeof *items));
  CK (cudaMalloc (&items24, (size_t) n * sizeof *items24));
  CK (cudaMalloc (&ts, (size_t) kPool * n * sizeof *ts));
  CK (cudaMemcpy (ts, hts, (size_t) kPool * n * sizeof *ts, cudaMemcpyHostToDevice));
  CK (cudaMalloc (&cycles, (size_t) jobs * sizeof *cycles));
  CK (cudaMalloc (&phase, (size_t) jobs * 5 * sizeof *phase));
  CK (cudaMalloc (&bad, sizeof *bad));
  CK (cudaMemset (bad, 0, sizeof *bad));
  a.ent = ent;
  a.cls = cls;
  a.items = items;
  a.items24 = items24;
  a.ts = ts;
  a.cycles = cycles;
  a.phase = phase;
  a.bad = bad;
  a.n = n;
  a.shift = (uint32_t) __builtin_ctz (n);
  a.jobs = jobs;
  const size_t smem = sizeof (Ctl) + (size_t) kW * n * sizeof (uint32_t);
  cudaEvent_t e0, e1;
  CK (cudaEventCreate (&e0));
  CK (cudaEventCreate (&e1));
  CK (cudaEventRecord (e0));
  cudaError_t e = variant == kBulky ? launch<1, kBulky> (a, smem)
      : variant == kLib ? launch<1, kLib> (a, smem)
      : cluster == 1 ? launch<1, kLean> (a, smem)
      : cluster == 2 ? launch<2, kLean> (a, smem) : launch<4, kLean> (a, smem);
  if (e != cudaSuccess) {
    fprintf (stderr, "bench-cluster: launch of %u packets, cluster %u: %s\n", n, cluster,
        cudaGetErrorString (e));
    exit (2);
  }
  CK (cudaEventRecord (e1));
  CK (cudaEventSynchronize (e1));
  float ms = 0;
  CK (cudaEventElapsedTime (&ms, e0, e1));
  unsigned long long hbad = 0;
  CK (cudaMemcpy (&hbad, bad, sizeof hbad, cudaMemcpyDeviceToHost));
  unsigned long long *hc = (unsigned long long *) malloc ((size_t) jobs * sizeof *hc);
  CK (cudaMemcpy (hc, cycles, (size_t) jobs * sizeof *hc, cudaMemcpyDeviceToHost));
  const uint32_t skip = jobs / 10;
  qsort (hc + skip, jobs - skip, sizeof *hc, cmp_ull);
  const double med = (double) hc[skip + (jobs - skip) / 2];
  /* the phases' medians: each one's length (the first from the job before's sums) */
  unsigned long long *hp = (unsigned long long *) malloc ((size_t) jobs * 5 * sizeof *hp);
  CK (cudaMemcpy (hp, phase, (size_t) jobs * 5 * sizeof *hp, cudaMemcpyDeviceToHost));
  unsigned long long pm[5];
  for (int k = 0; k < 5; k++) {
    for (uint32_t j = skip; j < jobs; j++)
      hc[j] = hp[(size_t) j * 5 + k] - (k ? hp[(size_t) j * 5 + k - 1] : 0);
    qsort (hc + skip, jobs - skip, sizeof *hc, cmp_ull);
    pm[k] = hc[skip + (jobs - skip) / 2];
  }
  free (hp);
  /* the last job's copy items: source, destination (record rl's frame, the key's slot), length */
  uint4 *hi = (uint4 *) malloc ((size_t) n * sizeof *hi);
  Item24 *hi24 = (Item24 *) malloc ((size_t) n * sizeof *hi24);
  CK (cudaMemcpy (hi, items, (size_t) n * sizeof *hi, cudaMemcpyDeviceToHost));
  CK (cudaMemcpy (hi24, items24, (size_t) n * sizeof *hi24, cudaMemcpyDeviceToHost));
  const uint32_t jl = jobs - 1, rl = jl & (kW - 1);
  uint32_t wrong = 0;
  for (uint32_t i = 0; i < n; i++) {
    const uint4 en = h[(size_t) (jl % kPool) * n + i];
    const uint64_t src = kData + en.y, dst = (uint64_t) (rl * n + en.x) * kLen;
    if (variant == kLib) {
      if (hi24[i].src != src || hi24[i].dst != kFrame + dst || hi24[i].len != kLen)
        wrong++;
    } else {
      const uint4 want = make_uint4 ((uint32_t) src, (uint32_t) (src >> 32), (uint32_t) dst,
          kLen);
      if (memcmp (&hi[i], &want, sizeof want) != 0)
        wrong++;
    }
  }
  free (hi24);
  free (hts);
  const Result res = { ms * 1e3 / jobs, med, hbad == 0 && wrong == 0 };
  printf ("bench gpu-cluster-pass1 packets=%u cluster=%u variant=%s threads=%u jobs=%u us_per_job=%.3f "
      "cycles_per_job_med=%.0f us_from_cycles=%.3f cycles_loop1=%llu cycles_barrier1=%llu "
      "cycles_loop2=%llu cycles_barrier2=%llu cycles_sums=%llu bad_jobs=%llu wrong_items=%u "
      "ok=%d\n", n, cluster, kVariantName[variant], cluster * kThreads, jobs, res.us_per_job, med,
      med / (clock_ghz * 1e3), pm[0], pm[1], pm[2], pm[3], pm[4], hbad, wrong, res.ok ? 1 : 0);
  free (hi);
  free (hc);
  free (perm);
  free (h);
  CK (cudaEventDestroy (e0));
  CK (cudaEventDestroy (e1));
  CK (cudaFree (ent));
  CK (cudaFree (cls));
  CK (cudaFree (items));
  CK (cudaFree (items24));
  CK (cudaFree (ts));
  CK (cudaFree (cycles));
  CK (cudaFree (phase));
  CK (cudaFree (bad));
  return res;
}

}  /* namespace */

int
main (int argc, char **argv)
{
  int ndev = 0;
  if (cudaGetDeviceCount (&ndev) != cudaSuccess || ndev == 0) {
    printf ("bench-cluster summary: skipped: no CUDA device\n");
    return 0;
  }
  cudaDeviceProp prop;
  CK (cudaGetDeviceProperties (&prop, 0));
  if (prop.major < 9) {
    printf ("bench-cluster summary: skipped: thread-block clusters need sm_90 or later (%s is "
        "sm_%d%d)\n", prop.name, prop.major, prop.minor);
    return 0;
  }
  int khz = 0;
  CK (cudaDeviceGetAttribute (&khz, cudaDevAttrClockRate, 0));
  const double ghz = khz / 1e6;
  printf ("device: %s sm_%d%d, %d SMs, clock %.0f MHz\n", prop.name, prop.major, prop.minor,
      prop.multiProcessorCount, ghz * 1e3);
  if (argc >= 3) {
    const uint32_t n = (uint32_t) strtoul (argv[1], NULL, 0);
    const uint32_t c = (uint32_t) strtoul (argv[2], NULL, 0);
    const uint32_t jobs = argc >= 4 ? (uint32_t) strtoul (argv[3], NULL, 0) : 2000;
    int variant = kLean;
    for (int v = 0; v < 3 && argc >= 5; v++)
      if (strcmp (argv[4], kVariantName[v]) == 0)
        variant = v;
    if (n < 32 || n > 16384 || (n & (n - 1)) || (c != 1 && c != 2 && c != 4) || jobs < 10 ||
        (argc >= 5 && strcmp (argv[4], kVariantName[variant]) != 0) ||
        (variant != kLean && c != 1)) {
      fprintf (stderr, "usage: bench-cluster [PACKETS CLUSTER [JOBS [lean|bulky|library]]]: "
          "PACKETS a power of two 32..16384, CLUSTER 1, 2 or 4 (1 unless lean), JOBS >= 10\n");
      return 2;
    }
    return run (n, c, variant, jobs, ghz).ok ? 0 : 1;
  }
  /* per size: 1, 2 and 4 SMs, then 1 SM with the untaken code in its loops, then 1 SM with the
   * library's accounting */
  static const uint32_t sizes[3] = { 1024, 4096, 16384 };
  static const uint32_t clusters[5] = { 1, 2, 4, 1, 1 };
  static const int variants[5] = { kLean, kLean, kLean, kBulky, kLib };
  double us[3][5];
  bool ok = true;
  for (int s = 0; s < 3; s++)
    for (int c = 0; c < 5; c++) {
      const Result r = run (sizes[s], clusters[c], variants[c], sizes[s] >= 16384 ? 1000 : 4000,
          ghz);
      us[s][c] = r.us_per_job;
      ok = ok && r.ok;
    }
  printf ("bench-cluster summary: pass 1 modelled (a design benchmark, not the library), us per "
      "job on 1 / 2 / 4 SMs (1 SM with untaken code in its loops; 1 SM with the library's "
      "accounting): 1024 packets %.2f / %.2f / %.2f (%.2f; %.2f), 4096 %.2f / %.2f / %.2f (%.2f; "
      "%.2f), 16384 %.2f / %.2f / %.2f (%.2f; %.2f); %s\n", us[0][0], us[0][1], us[0][2],
      us[0][3], us[0][4], us[1][0], us[1][1], us[1][2], us[1][3], us[1][4], us[2][0], us[2][1],
      us[2][2], us[2][3], us[2][4], ok ? "sums and copy items correct" : "WRONG RESULTS");
  return ok ? 0 : 1;
}
