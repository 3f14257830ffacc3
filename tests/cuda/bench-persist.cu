/* bench-persist.cu — a design benchmark, not the library: how fast a persistent kernel could take
 * one batch per submission, with no launch per submission.
 *
 * cuda/reorder.cu launches one kernel per submission; on the H200 machine a launch alone costs
 * the host 3.3-4.8 µs, so a batch per submission cannot go below that, whatever the kernel does.
 * This program measures the other way: one kernel launched once, jobs posted into mapped host
 * memory, a pipeline of three stages on different SMs, each stage working on a different job:
 *
 *   parse   `parsers` blocks in `parser_groups` groups (group g takes jobs g, g + G, ...): a
 *           block polls the job's entry in the host ring (16 bytes: first packet, count, job
 *           number + 1, one load across the bus), reads its share of the packets' descriptors
 *           and big-endian 32-bit sequence numbers (bounds-checked against the packet length),
 *           writes (offset, sequence) entries into a ring slot; the last block of the job
 *           releases the slot to the control stage.
 *   control one block of 1024 threads: the window (`kW` batches, one bitmap of claimed slots
 *           each and a count, in shared memory: no state round trip between jobs), the claims
 *           (earlier batches late, later than the window late too here, a slot claimed twice a
 *           duplicate), the copy list (source, destination per packet), the batches completed
 *           at the window's base; a publishing warp releases the copy list while the other 31
 *           warps go on to the next job.
 *   move    `movers` blocks in `mover_groups` groups: 16-byte copies of the copy list's payloads
 *           into frames (batch b in frame b % kFrames); the last block of a job writes its
 *           completion flag into mapped host memory.
 *
 * The host posts job j once job j - depth is complete (depth 0: every job posted before the
 * kernel starts), and reads completions in order. Not modelled: the free-frame ring, loss and
 * deferred packets, result entries, conversions; batch ids are the sequence number / ppb. What it
 * shows is the floor of the design: the per-job cost of its serial stage (control) and its
 * latency. Checked: every job completes every batch, no late or duplicate packets, and the last
 * kFrames frames equal the expected payloads byte for byte (exit 1 otherwise).
 *
 *   bench-persist                              the default set of configurations
 *   bench-persist PPB PAYLOAD DEPTH [JOBS]     one configuration
 * Lines starting "bench " are machine-readable (key=value); the last line is the summary. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

namespace {

constexpr int kCtlThreads = 1024;            /* the control block */
constexpr int kPubWarp = kCtlThreads - 32;   /* first thread of the publishing warp */
constexpr int kThreads = 256;                /* parse and move blocks */
constexpr int kRing = 16;                    /* parse and copy-list ring slots (jobs) */
constexpr int kW = 4;                        /* window (batches) */
constexpr int kMaxPackets = 16384;           /* per job */
constexpr int kPerThread = (kMaxPackets + kPubWarp - 1) / kPubWarp;
constexpr uint32_t kFrames = 8;
constexpr uint32_t kPool = 64;               /* distinct batches in the packet pool */
constexpr uint32_t kSeqOff = 42, kPayOff = 64;
constexpr uint32_t kBad = ~0u;

struct HostJob {
  uint32_t first, n;
  uint64_t seq;                              /* job number + 1 once posted */
};

struct Item {
  uint64_t src, dst;                         /* dst 0: nothing to copy */
};

struct Ctl {
  unsigned long long ready;                  /* jobs whose copy list is published */
  unsigned long long parsed_blocks[kRing];   /* parse blocks done, per slot (cumulative) */
  unsigned long long parsed[kRing];          /* job + 1 once parsed, per slot */
  unsigned long long moved_blocks[kRing];    /* move blocks done, per slot (cumulative) */
  unsigned long long moved[kRing];           /* job + 1 once moved, per slot */
  unsigned long long late, dups, batches;
};

struct Args {
  const HostJob *jobs;                       /* mapped host ring */
  uint32_t jcap;
  volatile uint64_t *flags;                  /* mapped host: job + 1 once complete */
  const uint2 *desc;                         /* (offset, length) per packet */
  const uint8_t *data;
  uint64_t data_size;
  uint8_t *frames;
  uint32_t ppb, ppb_shift, lin;
  uint2 *parsed;                             /* kRing x kMaxPackets: (offset or kBad, seq) */
  uint32_t *parsed_n;                        /* kRing */
  Item *items;                               /* kRing x kMaxPackets */
  uint32_t *items_n;                         /* kRing */
  Ctl *ctl;
  uint32_t parsers, parser_groups, movers, mover_groups;
  uint64_t njobs;
};

__device__ __forceinline__ uint64_t
ld_acquire (const unsigned long long *p)
{
  uint64_t v;
  asm volatile ("ld.acquire.gpu.global.u64 %0, [%1];" : "=l" (v) : "l" (p) : "memory");
  return v;
}

__device__ __forceinline__ void
st_release (unsigned long long *p, uint64_t v)
{
  asm volatile ("st.release.gpu.global.u64 [%0], %1;" :: "l" (p), "l" (v) : "memory");
}

__device__ __forceinline__ void
st_release_sys (volatile uint64_t *p, uint64_t v)
{
  asm volatile ("st.release.sys.global.u64 [%0], %1;" :: "l" (p), "l" (v) : "memory");
}

__device__ __forceinline__ void
wait_at_least (const unsigned long long *p, uint64_t v)
{
  while (ld_acquire (p) < v)
    __nanosleep (20);
}

/* named barriers: 0 all 1024 threads, 1 the 31 claiming warps, 2 claimers + publisher (arrive) */
__device__ __forceinline__ void
bar_sync (int id, int n)
{
  asm volatile ("bar.sync %0, %1;" :: "r" (id), "r" (n) : "memory");
}

__device__ __forceinline__ void
bar_arrive (int id, int n)
{
  asm volatile ("bar.arrive %0, %1;" :: "r" (id), "r" (n) : "memory");
}

/* a job's last block of a stage: after every block's stores (fence, then the count) */
__device__ __forceinline__ bool
last_of_job (unsigned long long *count, uint64_t j, uint32_t blocks)
{
  __threadfence ();
  return atomicAdd (count, 1ull) + 1 == (j / kRing + 1) * blocks;
}

__device__ void
parse_stage (const Args &a, uint32_t g, uint32_t w, uint32_t blocks)
{
  __shared__ uint32_t first_sh, n_sh;
  const uint32_t t = threadIdx.x;
  for (uint64_t j = g; j < a.njobs; j += a.parser_groups) {
    if (t == 0) {
      uint64_t lo, hi;
      for (;;) {
        asm volatile ("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l" (lo), "=l" (hi)
            : "l" (&a.jobs[j % a.jcap]) : "memory");
        if (hi == j + 1)
          break;
        __nanosleep (20);
      }
      first_sh = (uint32_t) lo;
      n_sh = (uint32_t) (lo >> 32) < kMaxPackets ? (uint32_t) (lo >> 32) : kMaxPackets;
      if (j >= kRing)                     /* the slot: control done with job j - kRing */
        wait_at_least (&a.ctl->ready, j - kRing + 1);
    }
    __syncthreads ();
    const uint32_t n = n_sh, first = first_sh;
    uint2 *out = a.parsed + (j % kRing) * kMaxPackets;
    for (uint32_t i = w * kThreads + t; i < n; i += blocks * kThreads) {
      const uint2 d = a.desc[first + i];
      uint2 e = make_uint2 (kBad, 0);
      if ((uint64_t) d.x + d.y <= a.data_size && d.y >= kPayOff + a.lin) {
        const uint8_t *pk = a.data + d.x;
        e = make_uint2 (d.x, ((uint32_t) pk[kSeqOff] << 24) | ((uint32_t) pk[kSeqOff + 1] << 16) |
            ((uint32_t) pk[kSeqOff + 2] << 8) | pk[kSeqOff + 3]);
      }
      out[i] = e;
    }
    __syncthreads ();
    if (t == 0) {
      if (w == 0)
        a.parsed_n[j % kRing] = n;
      if (last_of_job (&a.ctl->parsed_blocks[j % kRing], j, blocks))
        st_release (&a.ctl->parsed[j % kRing], j + 1);
    }
    __syncthreads ();
  }
}

__device__ void
control_stage (const Args &a)
{
  __shared__ uint32_t filled[kW];
  __shared__ uint32_t claimed[kW][kMaxPackets / 32];
  __shared__ unsigned long long base;        /* batch id at the window's base */
  __shared__ uint32_t n_late, n_dups, done_mask, job_n;
  __shared__ unsigned long long batches;
  const uint32_t t = threadIdx.x;
  const uint32_t words = a.ppb / 32;
  if (t < kW)
    filled[t] = 0;
  for (uint32_t k = t; k < kW * (kMaxPackets / 32); k += kCtlThreads)
    (&claimed[0][0])[k] = 0;
  if (t == 0) {
    base = 0;
    n_late = n_dups = done_mask = 0;
    batches = 0;
  }
  __syncthreads ();
  if (t >= kPubWarp) {
    /* the publishing warp: once a job's claims are in, complete the batches at the base (the
     * claimers wait for that only), then release the copy list */
    for (uint64_t j = 0; j < a.njobs; j++) {
      bar_sync (0, kCtlThreads);
      if (t == kPubWarp) {
        uint32_t m = 0;
        while (filled[base & (kW - 1)] == a.ppb) {
          m |= 1u << (base & (kW - 1));
          filled[base & (kW - 1)] = 0;
          base++;
          batches++;
        }
        done_mask = m;
      }
      const uint32_t n = job_n;
      __syncwarp ();
      bar_arrive (2, kCtlThreads);
      if (t == kPubWarp) {
        a.items_n[j % kRing] = n;
        st_release (&a.ctl->ready, j + 1);
      }
    }
    if (t == kPubWarp) {
      a.ctl->batches = batches;
      a.ctl->late = n_late;
      a.ctl->dups = n_dups;
    }
    return;
  }
  uint64_t slot_free = 0;                    /* thread 0: moved[] of the slot, last read */
  for (uint64_t j = 0; j < a.njobs; j++) {
    if (t == 0) {
      wait_at_least (&a.ctl->parsed[j % kRing], j + 1);
      job_n = *(volatile uint32_t *) &a.parsed_n[j % kRing];
      if (j >= kRing)                     /* the copy-list slot: job j - kRing moved */
        while (slot_free < j - kRing + 1) {
          slot_free = ld_acquire (&a.ctl->moved[j % kRing]);
          if (slot_free < j - kRing + 1)
            __nanosleep (20);
        }
    }
    bar_sync (1, kPubWarp);
    const uint32_t n = job_n;
    const uint2 *in = a.parsed + (j % kRing) * kMaxPackets;
    Item *items = a.items + (j % kRing) * kMaxPackets;
    const uint64_t b0 = base;
    const uint32_t rounds = (n + kPubWarp - 1) / kPubWarp;
    uint2 e[kPerThread];
#pragma unroll
    for (int k = 0; k < kPerThread; k++) {
      const uint32_t i = t + k * kPubWarp;
      e[k] = i < n ? in[i] : make_uint2 (kBad, 0);
    }
#pragma unroll
    for (int k = 0; k < kPerThread; k++) {
      if ((uint32_t) k >= rounds)
        break;                               /* uniform */
      const uint32_t i = t + k * kPubWarp;
      Item it = { 0, 0 };
      int rec = -1;
      if (i < n && e[k].x != kBad) {
        const uint32_t seq = e[k].y;
        const uint32_t slot = seq & (a.ppb - 1);
        const uint32_t ahead = ((seq >> a.ppb_shift) - (uint32_t) b0) & (kPool - 1);
        if (ahead >= kW) {
          atomicAdd (&n_late, 1u);
        } else {
          const uint64_t b = b0 + ahead;
          const uint32_t r = (uint32_t) b & (kW - 1), bit = 1u << (slot & 31);
          if (atomicOr (&claimed[r][slot >> 5], bit) & bit) {
            atomicAdd (&n_dups, 1u);
          } else {
            rec = (int) r;
            it.src = (uint64_t) (a.data + e[k].x + kPayOff);
            it.dst = (uint64_t) (a.frames +
                ((uint64_t) ((uint32_t) b & (kFrames - 1)) * a.ppb + slot) * a.lin);
          }
        }
      }
      if (i < n)
        items[i] = it;
      for (int r = 0; r < kW; r++) {      /* one shared atomic per warp and record */
        const uint32_t m = __ballot_sync (0xffffffffu, rec == r);
        if (m && (t & 31) == 0)
          atomicAdd (&filled[r], (uint32_t) __popc (m));
      }
    }
    bar_sync (0, kCtlThreads);               /* the publisher takes over */
    bar_sync (2, kCtlThreads);               /* the base has moved */
    const uint32_t m = done_mask;
    for (uint32_t r = 0; r < kW; r++)
      if (m & (1u << r))
        for (uint32_t k = t; k < words; k += kPubWarp)
          claimed[r][k] = 0;
  }
}

__device__ void
move_stage (const Args &a, uint32_t g, uint32_t w, uint32_t blocks)
{
  constexpr int U = 4;                       /* 16-byte units in flight per thread */
  __shared__ uint32_t n_sh;
  const uint32_t t = threadIdx.x;
  const uint32_t upp = a.lin / 16;
  for (uint64_t j = g; j < a.njobs; j += a.mover_groups) {
    if (t == 0) {
      wait_at_least (&a.ctl->ready, j + 1);
      n_sh = *(volatile uint32_t *) &a.items_n[j % kRing];
    }
    __syncthreads ();
    const Item *items = a.items + (j % kRing) * kMaxPackets;
    const uint32_t total = n_sh * upp, step = blocks * kThreads;
    for (uint32_t u0 = w * kThreads + t; u0 < total; u0 += step * U) {
      Item it[U];
      uint4 v[U];
#pragma unroll
      for (int k = 0; k < U; k++) {
        const uint32_t u = u0 + k * step;
        it[k] = u < total ? items[u / upp] : Item { 0, 0 };
      }
#pragma unroll
      for (int k = 0; k < U; k++)
        if (it[k].dst)
          v[k] = *(const uint4 *) (it[k].src + ((u0 + k * step) % upp) * 16);
#pragma unroll
      for (int k = 0; k < U; k++)
        if (it[k].dst)
          *(uint4 *) (it[k].dst + ((u0 + k * step) % upp) * 16) = v[k];
    }
    __syncthreads ();
    if (t == 0 && last_of_job (&a.ctl->moved_blocks[j % kRing], j, blocks)) {
      st_release (&a.ctl->moved[j % kRing], j + 1);
      st_release_sys (&a.flags[j % a.jcap], j + 1);
    }
    __syncthreads ();
  }
}

__global__ void __launch_bounds__ (kCtlThreads)
persist_main (const __grid_constant__ Args a)
{
  const uint32_t b = blockIdx.x;
  if (b == 0) {
    control_stage (a);
  } else if (threadIdx.x < kThreads && b <= a.movers) {
    const uint32_t per = a.movers / a.mover_groups;
    move_stage (a, (b - 1) / per, (b - 1) % per, per);
  } else if (threadIdx.x < kThreads) {
    const uint32_t per = a.parsers / a.parser_groups;
    parse_stage (a, (b - 1 - a.movers) / per, (b - 1 - a.movers) % per, per);
  }
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf (stderr, "bench-persist: %s: %s\n", #x, cudaGetErrorString (e_)); exit (2); } } while (0)

double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Result {
  double us_per_batch;
  int ok;
};

/* One configuration: a pool of kPool batches of ppb packets (each batch's packets in a random
 * order), jobs cycling through it. */
Result
run (uint32_t ppb, uint32_t lin, uint32_t depth, uint64_t njobs, uint32_t parsers,
    uint32_t parser_groups, uint32_t movers, uint32_t mover_groups)
{
  const uint32_t stride = (kPayOff + lin + 63) / 64 * 64;
  const uint64_t npk = (uint64_t) kPool * ppb;
  uint8_t *hdata = (uint8_t *) calloc (npk, stride);
  uint2 *hdesc = (uint2 *) malloc (npk * sizeof *hdesc);
  uint32_t *order = (uint32_t *) malloc (ppb * sizeof *order);
  if (!hdata || !hdesc || !order) {
    fprintf (stderr, "bench-persist: out of memory\n");
    exit (2);
  }
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (uint32_t b = 0; b < kPool; b++) {
    for (uint32_t i = 0; i < ppb; i++)
      order[i] = i;
    for (uint32_t i = ppb - 1; i > 0; i--) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      const uint32_t k = (uint32_t) ((rng >> 33) % (i + 1)), x = order[i];
      order[i] = order[k];
      order[k] = x;
    }
    for (uint32_t i = 0; i < ppb; i++) {
      const uint64_t k = (uint64_t) b * ppb + i;
      uint8_t *pk = hdata + k * stride;
      const uint32_t q = b * ppb + order[i];
      pk[kSeqOff] = (uint8_t) (q >> 24);
      pk[kSeqOff + 1] = (uint8_t) (q >> 16);
      pk[kSeqOff + 2] = (uint8_t) (q >> 8);
      pk[kSeqOff + 3] = (uint8_t) q;
      for (uint32_t x = 0; x < lin; x++)
        pk[kPayOff + x] = (uint8_t) (q * 7 + x);
      hdesc[k] = make_uint2 ((uint32_t) (k * stride), stride);
    }
  }
  Args a;
  memset (&a, 0, sizeof a);
  uint8_t *data;
  uint2 *desc;
  CK (cudaMalloc (&data, npk * stride));
  CK (cudaMalloc (&desc, npk * sizeof *desc));
  CK (cudaMemcpy (data, hdata, npk * stride, cudaMemcpyHostToDevice));
  CK (cudaMemcpy (desc, hdesc, npk * sizeof *desc, cudaMemcpyHostToDevice));
  CK (cudaMalloc (&a.frames, (size_t) kFrames * ppb * lin));
  CK (cudaMalloc (&a.parsed, (size_t) kRing * kMaxPackets * sizeof (uint2)));
  CK (cudaMalloc (&a.parsed_n, kRing * sizeof (uint32_t)));
  CK (cudaMalloc (&a.items, (size_t) kRing * kMaxPackets * sizeof (Item)));
  CK (cudaMalloc (&a.items_n, kRing * sizeof (uint32_t)));
  CK (cudaMalloc (&a.ctl, sizeof (Ctl)));
  CK (cudaMemset (a.ctl, 0, sizeof (Ctl)));
  const uint32_t jcap = depth == 0 ? (uint32_t) njobs : 1024;
  HostJob *jobs;
  uint64_t *flags;
  CK (cudaHostAlloc (&jobs, jcap * sizeof *jobs, cudaHostAllocMapped));
  CK (cudaHostAlloc (&flags, jcap * sizeof *flags, cudaHostAllocMapped));
  memset (jobs, 0, jcap * sizeof *jobs);
  memset (flags, 0, jcap * sizeof *flags);
  CK (cudaHostGetDevicePointer ((void **) &a.jobs, jobs, 0));
  CK (cudaHostGetDevicePointer ((void **) &a.flags, flags, 0));
  a.jcap = jcap;
  a.desc = desc;
  a.data = data;
  a.data_size = npk * stride;
  a.ppb = ppb;
  a.ppb_shift = (uint32_t) __builtin_ctz (ppb);
  a.lin = lin;
  a.parsers = parsers;
  a.parser_groups = parser_groups;
  a.movers = movers;
  a.mover_groups = mover_groups;
  a.njobs = njobs;

  volatile HostJob *vj = jobs;
  volatile uint64_t *vf = flags;
  if (depth == 0)
    for (uint64_t j = 0; j < njobs; j++) {
      vj[j].first = (uint32_t) ((j % kPool) * ppb);
      vj[j].n = ppb;
      vj[j].seq = j + 1;
    }
  /* every block resident at once: the stages wait for each other */
  int per_sm = 0, sms = 0;
  CK (cudaOccupancyMaxActiveBlocksPerMultiprocessor (&per_sm, persist_main, kCtlThreads, 0));
  CK (cudaDeviceGetAttribute (&sms, cudaDevAttrMultiProcessorCount, 0));
  if ((uint64_t) per_sm * (uint64_t) sms < 1 + movers + parsers) {
    fprintf (stderr, "bench-persist: %u blocks do not fit at once (%d per SM, %d SMs)\n",
        1 + movers + parsers, per_sm, sms);
    exit (2);
  }
  cudaStream_t stream;
  CK (cudaStreamCreateWithFlags (&stream, cudaStreamNonBlocking));
  persist_main<<<1 + movers + parsers, kCtlThreads, 0, stream>>> (a);
  CK (cudaGetLastError ());
  const uint64_t warm = njobs / 10;
  uint64_t done = 0;
  double t0 = 0;
  const double start = now ();
  int stuck = 0;
  for (uint64_t j = 0; j < njobs && !stuck; j++) {
    for (;;) {
      while (done < njobs && vf[done % jcap] == done + 1)
        done++;
      if (depth == 0 ? done > j : j < done + depth)
        break;
      if (now () - start > 10) {
        stuck = 1;
        break;
      }
    }
    if (j == warm)
      t0 = now ();
    if (depth != 0 && !stuck) {
      volatile HostJob *h = &vj[j % jcap];
      h->first = (uint32_t) ((j % kPool) * ppb);
      h->n = ppb;
      __atomic_thread_fence (__ATOMIC_RELEASE);
      h->seq = j + 1;
    }
  }
  while (!stuck && done < njobs) {
    while (done < njobs && vf[done % jcap] == done + 1)
      done++;
    if (now () - start > 10)
      stuck = 1;
  }
  const double t1 = now ();
  Result r = { (t1 - t0) * 1e6 / (double) (njobs - warm), 0 };
  if (stuck) {
    fprintf (stderr, "bench-persist: ppb=%u payload=%u: %llu of %llu jobs complete after 10 s (%s)\n",
        ppb, lin, (unsigned long long) done, (unsigned long long) njobs,
        cudaGetErrorString (cudaStreamQuery (stream)));
    exit (2);                                /* the kernel may still spin: leave */
  }
  CK (cudaStreamSynchronize (stream));
  Ctl c;
  CK (cudaMemcpy (&c, a.ctl, sizeof c, cudaMemcpyDeviceToHost));
  uint8_t *hf = (uint8_t *) malloc ((size_t) kFrames * ppb * lin);
  if (!hf) {
    fprintf (stderr, "bench-persist: out of memory\n");
    exit (2);
  }
  CK (cudaMemcpy (hf, a.frames, (size_t) kFrames * ppb * lin, cudaMemcpyDeviceToHost));
  uint64_t bad = 0;
  for (uint64_t b = njobs - kFrames; b < njobs; b++)
    for (uint32_t s = 0; s < ppb; s++) {
      const uint32_t q = (uint32_t) ((b % kPool) * ppb + s);
      const uint8_t *p = hf + ((b % kFrames) * ppb + s) * lin;
      for (uint32_t x = 0; x < lin; x++)
        bad += p[x] != (uint8_t) (q * 7 + x);
    }
  r.ok = bad == 0 && c.batches == njobs && c.late == 0 && c.dups == 0;
  printf ("bench gpu-persist ppb=%u payload=%u depth=%u jobs=%llu parsers=%u/%u movers=%u/%u "
      "us_per_batch=%.3f batches=%llu late=%llu dups=%llu bad_bytes=%llu ok=%d\n", ppb, lin, depth,
      (unsigned long long) njobs, parsers, parser_groups, movers, mover_groups, r.us_per_batch,
      c.batches, c.late, c.dups, (unsigned long long) bad, r.ok);
  fflush (stdout);
  free (hf);
  CK (cudaStreamDestroy (stream));
  CK (cudaFreeHost (jobs));
  CK (cudaFreeHost (flags));
  CK (cudaFree (a.ctl));
  CK (cudaFree (a.items_n));
  CK (cudaFree (a.items));
  CK (cudaFree (a.parsed_n));
  CK (cudaFree (a.parsed));
  CK (cudaFree (a.frames));
  CK (cudaFree (desc));
  CK (cudaFree (data));
  free (order);
  free (hdesc);
  free (hdata);
  return r;
}

int
pow2_in (uint32_t v, uint32_t lo, uint32_t hi)
{
  return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

}  /* namespace */

int
main (int argc, char **argv)
{
  int n_dev = 0;
  if (cudaGetDeviceCount (&n_dev) != cudaSuccess || n_dev == 0) {
    printf ("bench-persist summary: skipped: no CUDA device\n");
    return 77;
  }
  if (argc >= 4) {
    const uint32_t ppb = (uint32_t) atoi (argv[1]), lin = (uint32_t) atoi (argv[2]);
    const uint32_t depth = (uint32_t) atoi (argv[3]);
    const uint64_t njobs = argc > 4 ? (uint64_t) atoll (argv[4]) : 20000;
    if (!pow2_in (ppb, 32, kMaxPackets) || lin < 16 || lin > 8192 || lin % 16 ||
        njobs < 2 * kFrames || depth > 1000) {
      fprintf (stderr, "usage: bench-persist [PPB PAYLOAD DEPTH [JOBS]]: PPB a power of two "
          "32..%d, PAYLOAD a multiple of 16 in 16..8192, DEPTH 0..1000 (0: all jobs posted "
          "first), JOBS >= %u\n", kMaxPackets, 2 * kFrames);
      return 2;
    }
    const uint32_t movers = ppb * lin >= (1u << 20) ? 64 : 32;
    return run (ppb, lin, depth, njobs, 16, 8, movers, 8).ok ? 0 : 1;
  }
  struct { uint32_t ppb, lin, depth; } cases[] = {
    { 1024, 64, 0 }, { 1024, 64, 64 }, { 1024, 64, 32 }, { 1024, 64, 16 }, { 1024, 64, 8 },
    { 1024, 64, 1 }, { 1024, 256, 32 }, { 1024, 1024, 32 }, { 16384, 64, 32 },
  };
  int ok = 1;
  double us[sizeof cases / sizeof cases[0]];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const uint32_t movers = cases[i].ppb * cases[i].lin >= (1u << 20) ? 64 : 32;
    const Result r = run (cases[i].ppb, cases[i].lin, cases[i].depth,
        cases[i].depth == 1 ? 4000 : 20000, 16, 8, movers, 8);
    us[i] = r.us_per_batch;
    ok &= r.ok;
  }
  printf ("bench-persist summary: one kernel, jobs posted in host memory (a design floor, not the "
      "library): 1024 x 64 B %.2f us per batch posted ahead, %.2f / %.2f / %.2f / %.2f us with "
      "64 / 32 / 16 / 8 in flight, %.1f us alone; 1024 x 256 B %.2f, 1024 x 1 KB %.2f, "
      "16384 x 64 B %.2f us (32 in flight); frames %s\n", us[0], us[1], us[2], us[3], us[4],
      us[5], us[6], us[7], us[8], ok ? "correct" : "WRONG");
  return ok ? 0 : 1;
}
