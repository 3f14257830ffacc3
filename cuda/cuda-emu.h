/* cuda-emu.h — just enough of CUDA to run reorder.cu's kernels on the CPU, for CI (no GPU there).
 *
 * Every CUDA thread of a block is a fiber (ucontext), run by the host thread that called in (one
 * at a time; an overlapped launch may go on in another thread's call); __syncthreads,
 * __syncwarp and the warp shuffles/ballots switch between fibers until all living threads of the
 * block (or warp) have arrived. Blocks start in a random order and up to DQ_EMU_RESIDENT of them
 * (default 3) are resident at once, like a GPU holding a few: a block runs until none of its
 * threads can go on (all at a barrier, or waiting for another block: pause_ns yields), then a
 * random other resident block runs, and within a block the next thread is picked at random. So
 * races between blocks (the claim atomics, the last-block ticket, blocks waiting for the
 * finalizer) and between threads take a different interleaving per seed (DQ_EMU_SEED). Each
 * resident block has its own shared memory: the __shared__ variables live in one section, which
 * is saved and restored when another block runs. Atomics are plain read-modify-writes: fibers
 * only switch at the sync points and yields. Resident blocks that all wait for each other (or
 * for a block not yet started) are reported as a deadlock and abort the program.
 * Device memory is host memory. A launch runs to its end before it returns, except one with
 * programmatic stream serialization (dq_emu_launch_overlapped: K1 after K1), whose blocks start
 * once the previous launch's have all started and run beside them; it returns once the previous
 * one is complete, part of the way through itself, and goes on at the next launch or
 * synchronizing call (copies, frees, stream and event synchronization, an event query that
 * answers "ready"); pdl_wait waits for the launch before. Mapped host memory is host memory.
 * Events are complete once queried (or pretend not to be: DQ_CUDA_EMU_EVENT_LAG below). The
 * conversion intrinsics use the CPU twin's functions: this emulates the kernels' control flow
 * and data movement, not the GPU's arithmetic (that is what test-cuda-gpu checks on a real
 * device).
 *
 * Not a general CUDA emulator: only what reorder.cu uses. */
#ifndef DQ_CUDA_EMU_H
#define DQ_CUDA_EMU_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <functional>

#include "daqiri-reorder.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__ ((noinline))
#define __restrict__ __restrict
#define __shared__ static __attribute__ ((section ("dq_emu_shared")))
#define __grid_constant__
#define __align__(n) __attribute__ ((aligned (n)))
#define __launch_bounds__(...)

struct dim3 {
  unsigned x, y, z;
  dim3 (unsigned a = 1, unsigned b = 1, unsigned c = 1) : x (a), y (b), z (c)
  {}
};
struct uint2 {
  unsigned x, y;
};
static inline uint2
make_uint2 (unsigned a, unsigned b)
{
  uint2 v = { a, b };
  return v;
}
struct uint4 {
  unsigned x, y, z, w;
};
static inline uint4
make_uint4 (unsigned a, unsigned b, unsigned c, unsigned d)
{
  uint4 v = { a, b, c, d };
  return v;
}

/* ---- fibers ---------------------------------------------------------------------------------- */

struct DqEmuThread {
  dim3 tid, bid, grid, bdim;
};
extern DqEmuThread *dq_emu_cur;
/* a launch; it runs, with any launch still in flight, before this returns */
void dq_emu_launch (
    dim3 grid, dim3 block, const std::function<void ()> &body, size_t dyn_shared = 0);
/* a launch with programmatic stream serialization: its blocks may start once every block of the
 * launch before it has started; this returns once that one is complete, this one's blocks
 * having run part of the way (the rest runs at the next launch or synchronizing call) */
void dq_emu_launch_overlapped (
    dim3 grid, dim3 block, const std::function<void ()> &body, size_t dyn_shared = 0);
/* the calling block's dynamic shared memory */
void *dq_emu_dynamic_shared ();
/* every launch complete (the synchronizing calls below: copies, frees, events, streams) */
void dq_emu_synchronize ();
/* pdl_wait: until the launch before the calling thread's is complete */
void dq_emu_grid_dependency_sync ();
void dq_emu_syncthreads ();
void dq_emu_syncwarp ();
/* a thread waiting for another block: lets the other resident blocks run */
void dq_emu_yield ();
/* blocks resident at once (DQ_EMU_RESIDENT, 1..16, default 3) */
unsigned dq_emu_resident ();
/* warp exchange: every living lane of the calling warp deposits v; returns the lanes' values */
const uint64_t *dq_emu_warp_exchange (uint64_t v);

/* __syncthreads_or: every living thread of the block gives v; all get whether any was nonzero */
int dq_emu_syncthreads_or (int v);

/* sm_90's transaction barriers and bulk copies, as move_bulk (reorder-move.cuh) uses them, late
 * on purpose: a bulk load is done (and its bytes counted on its barrier) only when the issuing
 * thread next tests that barrier, and only at the second test; a bulk store reads its shared
 * memory only when the issuing thread waits for its stores (dq_emu_bulk_wait). So a piece read
 * before its barrier says so, or a slot loaded again before its store has read it, gives wrong
 * bytes in CI. The barrier word: pending bytes (bits 0-31), pending
 * arrivals (32-47), arrivals a phase (48-62), phase parity (63). */
void dq_emu_bar_init (uint64_t *bar, unsigned count);
/* one arrival that also expects `bytes` more (mbarrier.arrive.expect_tx), then the bulk load */
void dq_emu_bulk_load (void *dst, const void *src, unsigned bytes, uint64_t *bar);
/* whether the phase of this parity is complete (mbarrier.try_wait.parity) */
bool dq_emu_bar_test (uint64_t *bar, unsigned parity);
void dq_emu_bulk_store (void *dst, const void *src, unsigned bytes);
/* the calling thread's stores done */
void dq_emu_bulk_wait ();

/* sm_80's asynchronous copies into shared memory (cp.async, commit_group, wait_group), as
 * move_async (reorder-move.cuh) uses them, late on purpose: a copy lands only when its thread
 * waits with no more than n of its groups newer than the copy's still pending. So shared memory
 * read before the wait that covers it gives wrong bytes in CI. */
void dq_emu_async_copy (void *dst, const void *src, unsigned bytes);
void dq_emu_async_commit ();
void dq_emu_async_wait (unsigned n);

#define threadIdx (dq_emu_cur->tid)
#define blockIdx (dq_emu_cur->bid)
#define blockDim (dq_emu_cur->bdim)
#define gridDim (dq_emu_cur->grid)
#define __syncthreads() dq_emu_syncthreads ()
#define __syncwarp(...) dq_emu_syncwarp ()
#define __syncthreads_or(v) dq_emu_syncthreads_or ((v) ? 1 : 0)
#define __threadfence() \
  do { \
  } while (0)
#define __threadfence_system() \
  do { \
  } while (0)

/* The shuffles' exchange: gives v (a type of at most 8 bytes) to the calling thread's warp
 * through dq_emu_warp_exchange and returns the value of the same type that lane `from` of
 * the warp gave. */
template <typename T>
static inline T
dq_emu_shfl_from (T v, unsigned from)
{
  uint64_t bits = 0;
  memcpy (&bits, &v, sizeof v);
  const uint64_t *all = dq_emu_warp_exchange (bits);
  T r;
  uint64_t got = all[from];
  memcpy (&r, &got, sizeof r);
  return r;
}

template <typename T>
static inline T
__shfl_sync (unsigned, T v, int src, int width = 32)
{
  unsigned lane = threadIdx.x & 31, base = lane - lane % (unsigned) width;
  return dq_emu_shfl_from (v, base + (unsigned) src % (unsigned) width);
}

template <typename T>
static inline T
__shfl_up_sync (unsigned, T v, unsigned d, int width = 32)
{
  unsigned lane = threadIdx.x & 31;
  /* a lane fewer than d into its segment keeps its own value */
  return dq_emu_shfl_from (v, lane % (unsigned) width < d ? lane : lane - d);
}

static inline int
__popc (unsigned v)
{
  return __builtin_popcount (v);
}
static inline int
__ffs (int v)
{
  return __builtin_ffs (v);
}

template <typename T>
static inline T
__shfl_xor_sync (unsigned, T v, int m)
{
  return dq_emu_shfl_from (v, (threadIdx.x & 31) ^ (unsigned) m);
}

static inline unsigned
__ballot_sync (unsigned, int pred)
{
  const uint64_t *all = dq_emu_warp_exchange (pred ? 1 : 0);
  unsigned lane = threadIdx.x & 31, warp0 = (threadIdx.x & ~31u);
  unsigned m = 0;
  for (unsigned k = 0; k < 32 && warp0 + k < blockDim.x; k++)
    m |= (all[k] ? 1u : 0u) << k;
  (void) lane;
  return m;
}

/* ---- atomics (fibers switch only at sync points) -------------------------------------------- */

/* One read-modify-write of *p, new value next (old): atomic here because fibers switch only
 * at sync points. Returns the old value, as the CUDA atomics do. */
template <typename T, typename F>
static inline T
dq_emu_atomic_rmw (T *p, F next)
{
  T o = *p;
  *p = next (o);
  return o;
}
template <typename T>
static inline T
atomicAdd (T *p, T v)
{
  return dq_emu_atomic_rmw (p, [v] (T o) { return o + v; });
}
template <typename T>
static inline T
atomicSub (T *p, T v)
{
  return dq_emu_atomic_rmw (p, [v] (T o) { return o - v; });
}
template <typename T>
static inline T
atomicExch (T *p, T v)
{
  return dq_emu_atomic_rmw (p, [v] (T) { return v; });
}
template <typename T>
static inline T
atomicMin (T *p, T v)
{
  return dq_emu_atomic_rmw (p, [v] (T o) { return v < o ? v : o; });
}
template <typename T>
static inline T
atomicMax (T *p, T v)
{
  return dq_emu_atomic_rmw (p, [v] (T o) { return v > o ? v : o; });
}
template <typename T>
static inline T
atomicCAS (T *p, T cmp, T v)
{
  return dq_emu_atomic_rmw (p, [cmp, v] (T o) { return o == cmp ? v : o; });
}

/* ---- loads and bit intrinsics --------------------------------------------------------------- */

template <typename T>
static inline T
__ldg (const T *p)
{
  return *p;
}
template <typename T>
static inline T
__ldcg (const T *p)
{
  return *p;
}
template <typename T>
static inline void
__stcg (T *p, T v)
{
  *p = v;
}

static inline unsigned
__funnelshift_r (unsigned lo, unsigned hi, unsigned shift)
{
  return (unsigned) (((((uint64_t) hi) << 32) | lo) >> (shift & 31));
}

static inline unsigned
__byte_perm (unsigned x, unsigned y, unsigned s)
{
  uint8_t b[8];
  for (int k = 0; k < 4; k++) {
    b[k] = (uint8_t) (x >> (8 * k));
    b[4 + k] = (uint8_t) (y >> (8 * k));
  }
  unsigned r = 0;
  for (int k = 0; k < 4; k++)
    r |= (unsigned) b[(s >> (4 * k)) & 7] << (8 * k);
  return r;
}

/* ---- conversions: the CPU twin's ------------------------------------------------------------ */

struct __half {
  uint16_t x;
};
struct __nv_bfloat16 {
  uint16_t x;
};
static inline float
__int2float_rn (int v)
{
  return (float) v;
}
static inline double
__int2double_rn (int v)
{
  return (double) v;
}
static inline __half
__float2half_rn (float f)
{
  __half h = { dq_float_to_half_rn (f) };
  return h;
}
static inline __nv_bfloat16
__float2bfloat16_rn (float f)
{
  __nv_bfloat16 h = { dq_float_to_bf16_rn (f) };
  return h;
}
static inline unsigned short
__half_as_ushort (__half h)
{
  return h.x;
}
static inline unsigned short
__bfloat16_as_ushort (__nv_bfloat16 h)
{
  return h.x;
}
static inline unsigned
__float_as_uint (float f)
{
  unsigned u;
  memcpy (&u, &f, 4);
  return u;
}
static inline long long
__double_as_longlong (double d)
{
  long long u;
  memcpy (&u, &d, 8);
  return u;
}

/* ---- runtime API ---------------------------------------------------------------------------- */

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
enum {
  cudaSuccess = 0,
  cudaErrorNotReady = 600,
  cudaStreamNonBlocking = 1,
  cudaEventDisableTiming = 2,
  cudaHostAllocMapped = 2,
  cudaHostAllocPortable = 1,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDefault = 4,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMemoryClockRate = 36,
};
struct cudaDeviceProp {
  char name[256];
  int major, minor, multiProcessorCount, l2CacheSize;
  size_t totalGlobalMem;
};

static inline const char *
cudaGetErrorString (cudaError_t)
{
  return "emulated CUDA error";
}
static inline cudaError_t
cudaGetDeviceCount (int *n)
{
  *n = 1;
  return cudaSuccess;
}
static inline cudaError_t
cudaGetDevice (int *d)
{
  *d = 0;
  return cudaSuccess;
}
static inline cudaError_t
cudaSetDevice (int)
{
  return cudaSuccess;
}
static inline cudaError_t
cudaGetDeviceProperties (cudaDeviceProp *p, int)
{
  memset (p, 0, sizeof *p);
  strcpy (p->name, "daqiri CUDA emulator (CPU fibers)");
  p->major = 9;
  p->multiProcessorCount = 2;
  p->totalGlobalMem = 1ull << 32;
  p->l2CacheSize = 1 << 20;
  return cudaSuccess;
}
template <class K>
static inline cudaError_t
cudaOccupancyMaxActiveBlocksPerMultiprocessor (int *n, K, int, size_t)
{
  *n = 3; /* what __launch_bounds__ (kThreads, 3) promises */
  return cudaSuccess;
}
static inline cudaError_t
cudaDriverGetVersion (int *v)
{
  *v = 0;
  return cudaSuccess;
}
static inline cudaError_t
cudaRuntimeGetVersion (int *v)
{
  *v = 0;
  return cudaSuccess;
}
static inline cudaError_t
cudaDeviceGetAttribute (int *v, int, int)
{
  *v = 0;
  return cudaSuccess;
}
template <typename T>
static inline cudaError_t
cudaMalloc (T **p, size_t n)
{
  *p = (T *) malloc (n ? n : 1);
  if (*p)
    memset ((void *) *p, 0xcd, n); /* device memory is not zeroed */
  return *p ? cudaSuccess : 2;
}
static inline cudaError_t
cudaFree (void *p)
{
  dq_emu_synchronize ();
  free (p);
  return cudaSuccess;
}
template <typename T>
static inline cudaError_t
cudaHostAlloc (T **p, size_t n, unsigned)
{
  *p = (T *) malloc (n ? n : 1);
  return *p ? cudaSuccess : 2;
}
static inline cudaError_t
cudaFreeHost (void *p)
{
  return cudaFree (p);
}
template <typename T>
static inline cudaError_t
cudaHostGetDevicePointer (T **d, void *h, unsigned)
{
  *d = (T *) h;
  return cudaSuccess;
}
static inline cudaError_t
cudaMemcpy (void *d, const void *s, size_t n, int)
{
  dq_emu_synchronize ();
  memmove (d, s, n);
  return cudaSuccess;
}
static inline cudaError_t
cudaMemcpy2D (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int)
{
  dq_emu_synchronize ();
  for (size_t r = 0; r < h; r++)
    memmove ((char *) d + r * dp, (const char *) s + r * sp, w);
  return cudaSuccess;
}
static inline cudaError_t
cudaMemcpyAsync (void *d, const void *s, size_t n, int kind, cudaStream_t)
{
  return cudaMemcpy (d, s, n, kind);
}
static inline cudaError_t
cudaMemset (void *d, int v, size_t n)
{
  dq_emu_synchronize ();
  memset (d, v, n);
  return cudaSuccess;
}
static inline cudaError_t
cudaMemsetAsync (void *d, int v, size_t n, cudaStream_t)
{
  return cudaMemset (d, v, n);
}
static inline cudaError_t
cudaStreamCreateWithFlags (cudaStream_t *s, unsigned)
{
  *s = (void *) 1;
  return cudaSuccess;
}
static inline cudaError_t
cudaStreamDestroy (cudaStream_t)
{
  dq_emu_synchronize ();
  return cudaSuccess;
}
static inline cudaError_t
cudaStreamSynchronize (cudaStream_t)
{
  dq_emu_synchronize ();
  return cudaSuccess;
}
/* Events: a query that answers "ready" and a synchronize first run every launch in flight to its
 * end (one stream: what was launched before the event is then complete); with
 * DQ_CUDA_EMU_EVENT_LAG=N in the environment a recorded event answers "not ready" to its first
 * N queries, as a GPU still working would; cudaEventSynchronize makes it ready. So that callers'
 * paths for work still in flight run in CI too. */
struct DqEmuEvent {
  int pending;
};
static inline int
dq_emu_event_lag ()
{
  static int lag = -1;
  if (lag < 0) {
    const char *s = getenv ("DQ_CUDA_EMU_EVENT_LAG");
    lag = s ? atoi (s) : 0;
    if (lag < 0)
      lag = 0;
  }
  return lag;
}
static inline cudaError_t
cudaEventCreateWithFlags (cudaEvent_t *e, unsigned)
{
  *e = new DqEmuEvent{ 0 };
  return cudaSuccess;
}
static inline cudaError_t
cudaEventDestroy (cudaEvent_t e)
{
  delete (DqEmuEvent *) e;
  return cudaSuccess;
}
static inline cudaError_t
cudaEventRecord (cudaEvent_t e, cudaStream_t)
{
  ((DqEmuEvent *) e)->pending = dq_emu_event_lag ();
  return cudaSuccess;
}
static inline cudaError_t
cudaEventQuery (cudaEvent_t e)
{
  DqEmuEvent *ev = (DqEmuEvent *) e;
  if (ev->pending > 0) {
    ev->pending--;
    return cudaErrorNotReady;
  }
  dq_emu_synchronize ();
  return cudaSuccess;
}
static inline cudaError_t
cudaEventSynchronize (cudaEvent_t e)
{
  ((DqEmuEvent *) e)->pending = 0;
  dq_emu_synchronize ();
  return cudaSuccess;
}
static inline cudaError_t
cudaGetLastError ()
{
  return cudaSuccess;
}

#define DQ_LAUNCH(kernel, grid, block, stream, ...) \
  dq_emu_launch (dim3 (grid), dim3 (block), [=] () { kernel (__VA_ARGS__); })

#endif /* DQ_CUDA_EMU_H */
