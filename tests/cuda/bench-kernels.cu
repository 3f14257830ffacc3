/* bench-kernels.cu — the benchmark's baselines and timing helpers (C ABI for bench-reorder.c).
 *
 * reference_reorder: the reference design, one thread block of 128 threads per packet, in
 * arrival order; the block reads the packet's big-endian sequence number, picks slot seq % ppb and
 * copies the payload there (16-byte accesses when source and destination allow, else 8, 4, 1). No
 * bounds checks, no duplicate handling, no zero-fill: the cost floor of that design. It lives here
 * only, as a baseline.
 *
 * code_fetch_kernel: what running code an SM has not run lately costs (the reorder's finalizer
 * is a different block on a different SM at each submission). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

namespace {

__device__ __forceinline__ uint32_t
be_bits (const uint8_t *p, uint32_t off, uint32_t w)
{
  uint32_t v = 0;
  for (uint32_t i = 0; i < w; i++) {
    uint32_t bit = off + i;
    v = (v << 1) | ((p[bit >> 3] >> (7 - (bit & 7))) & 1u);
  }
  return v;
}

__global__ void
reference_reorder (uint8_t *out, const uint8_t *const *in, uint32_t len, uint32_t off,
    uint32_t seq_off, uint32_t seq_w, uint32_t ppb)
{
  const uint8_t *pkt = in[blockIdx.x];
  if (!pkt)
    return;
  const uint32_t seq = be_bits (pkt, seq_off, seq_w);
  const uint8_t *src = pkt + off;
  uint8_t *dst = out + (size_t) (seq % ppb) * len;
  const uintptr_t a = (uintptr_t) src | (uintptr_t) dst;
  uint32_t done = 0;
  if ((a & 15) == 0) {
    for (uint32_t i = threadIdx.x; i < len / 16; i += blockDim.x)
      ((uint4 *) dst)[i] = ((const uint4 *) src)[i];
    done = len / 16 * 16;
  } else if ((a & 7) == 0) {
    for (uint32_t i = threadIdx.x; i < len / 8; i += blockDim.x)
      ((uint2 *) dst)[i] = ((const uint2 *) src)[i];
    done = len / 8 * 8;
  } else if ((a & 3) == 0) {
    for (uint32_t i = threadIdx.x; i < len / 4; i += blockDim.x)
      ((uint32_t *) dst)[i] = ((const uint32_t *) src)[i];
    done = len / 4 * 4;
  }
  for (uint32_t i = done + threadIdx.x; i < len; i += blockDim.x)
    dst[i] = src[i];
}

__global__ void
empty_kernel (int *never)
{
  if (never && threadIdx.x == 1024)
    *never = 1;
}

/* Occupies the stream for ns nanoseconds (GPU clock), so that work queued behind it runs back to
 * back at the GPU's own pace, not the host's launch rate. */
__global__ void
spin_kernel (unsigned long long ns)
{
  unsigned long long t0, t;
  asm volatile ("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do
    asm volatile ("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - t0 < ns);
}

/* Code fetch: 4096 steps of straight-line code (8 independent chains, so that the SM issues about
 * one instruction per cycle when the code is in its instruction cache), about 60 KB of code
 * (sm_90, CUDA 13). */
__device__ __forceinline__ void
straight_code (uint32_t (&a)[8])
{
#pragma unroll
  for (int i = 0; i < 4096; i++)
    asm volatile ("{.reg .u32 t; shf.l.wrap.b32 t, %0, %0, 7; add.u32 %0, t, %1;}"
        : "+r"(a[i & 7]) : "r"((uint32_t) i * 2654435761u));
}

/* A copy of the code that never runs (the first part of the kernel's code), then the timed copy
 * twice: the first pass fetches its code (cold, on this SM), the second runs it from the SM's
 * instruction cache. Cycles per pass into out[2 * block], out[2 * block + 1]. */
__global__ void
code_fetch_kernel (unsigned long long *out, uint32_t seed)
{
  uint32_t a[8];
  for (int j = 0; j < 8; j++)
    a[j] = seed + (uint32_t) j;
  if (seed == 0x9e3779b9u)
    straight_code (a);
  long long t[3];
  for (int r = 0; r < 2; r++) {
    t[r] = clock64 ();
    straight_code (a);
  }
  t[2] = clock64 ();
  uint32_t sum = 0;
  for (int j = 0; j < 8; j++)
    sum += a[j];
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = (unsigned long long) (t[1] - t[0]);
    /* (the sum's test keeps the chains' results, so the code stays) */
    out[2 * blockIdx.x + 1] = (unsigned long long) (t[2] - t[1]) + (sum == 0x12345678u);
  }
}

/* Empty kernels whose parameters take 512 and 1408 bytes (K1's are 1392): what the size of a
 * launch's parameters costs the host */
struct ParamBytes512 {
  unsigned long long w[64];
};
struct ParamBytes1408 {
  unsigned long long w[176];
};

template <typename P>
__global__ void
empty_kernel_params (const __grid_constant__ P p)
{
  if (p.w[0] == 1 && threadIdx.x == 1024)
    __trap ();
}

}  // namespace

extern "C" {

/* Code fetch on every SM: mean cycles of the first (cold) and second (warm) pass of the same
 * ~60 KB of straight-line code, one block per SM. 0 on success. */
int
bench_code_fetch (double *cold_cycles, double *warm_cycles, int *blocks)
{
  int dev = 0, sms = 0;
  if (cudaGetDevice (&dev) != cudaSuccess ||
      cudaDeviceGetAttribute (&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
    return -1;
  unsigned long long *d = NULL;
  unsigned long long *h = (unsigned long long *) calloc ((size_t) sms * 2, sizeof *h);
  if (!h || cudaMalloc (&d, (size_t) sms * 2 * sizeof *d) != cudaSuccess) {
    free (h);
    return -1;
  }
  code_fetch_kernel<<<sms, 32>>> (d, 1);
  int rc = cudaMemcpy (h, d, (size_t) sms * 2 * sizeof *d, cudaMemcpyDeviceToHost) == cudaSuccess
      ? 0 : -1;
  double c = 0, w = 0;
  for (int b = 0; b < sms; b++) {
    c += (double) h[2 * b];
    w += (double) h[2 * b + 1];
  }
  *cold_cycles = c / sms;
  *warm_cycles = w / sms;
  *blocks = sms;
  cudaFree (d);
  free (h);
  return rc;
}

int
bench_spin (void *stream, double us)
{
  spin_kernel<<<1, 32, 0, (cudaStream_t) stream>>> ((unsigned long long) (us * 1e3));
  return cudaGetLastError () == cudaSuccess ? 0 : -1;
}

/* n back-to-back empty launches (one block): the launch floor of a stream */
int
bench_empty_launches (void *stream, uint32_t n)
{
  for (uint32_t k = 0; k < n; k++)
    empty_kernel<<<1, 32, 0, (cudaStream_t) stream>>> (NULL);
  return cudaGetLastError () == cudaSuccess ? 0 : -1;
}

/* n back-to-back empty launches (one block) with `bytes` of parameters (8, 512 or 1408) */
int
bench_empty_launches_params (void *stream, uint32_t n, uint32_t bytes)
{
  if (bytes <= 8)
    return bench_empty_launches (stream, n);
  if (bytes <= 512) {
    ParamBytes512 p = {};
    for (uint32_t k = 0; k < n; k++)
      empty_kernel_params<<<1, 32, 0, (cudaStream_t) stream>>> (p);
  } else {
    ParamBytes1408 p = {};
    for (uint32_t k = 0; k < n; k++)
      empty_kernel_params<<<1, 32, 0, (cudaStream_t) stream>>> (p);
  }
  return cudaGetLastError () == cudaSuccess ? 0 : -1;
}

int
bench_reference_reorder (void *stream, void *out, const void *const *dev_in, uint32_t n,
    uint32_t len, uint32_t off, uint32_t seq_off, uint32_t seq_w, uint32_t ppb)
{
  reference_reorder<<<n, 128, 0, (cudaStream_t) stream>>> ((uint8_t *) out,
      (const uint8_t *const *) dev_in, len, off, seq_off, seq_w, ppb);
  return cudaGetLastError () == cudaSuccess ? 0 : -1;
}

int
bench_d2d (void *stream, void *dst, const void *src, size_t bytes)
{
  return cudaMemcpyAsync (dst, src, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t) stream)
      == cudaSuccess ? 0 : -1;
}

/* Events: a pair per measurement. */
void *
bench_event_new (void)
{
  cudaEvent_t e = NULL;
  if (cudaEventCreate (&e) != cudaSuccess)
    return NULL;
  return (void *) e;
}

void
bench_event_free (void *e)
{
  if (e)
    cudaEventDestroy ((cudaEvent_t) e);
}

int
bench_event_record (void *e, void *stream)
{
  return cudaEventRecord ((cudaEvent_t) e, (cudaStream_t) stream) == cudaSuccess ? 0 : -1;
}

/* Milliseconds between two recorded events, after waiting for the second; < 0 on error. */
double
bench_event_ms (void *a, void *b)
{
  float ms = 0;
  if (cudaEventSynchronize ((cudaEvent_t) b) != cudaSuccess ||
      cudaEventElapsedTime (&ms, (cudaEvent_t) a, (cudaEvent_t) b) != cudaSuccess)
    return -1;
  return ms;
}

void *
bench_stream_new (void)
{
  cudaStream_t s = NULL;
  if (cudaStreamCreateWithFlags (&s, cudaStreamNonBlocking) != cudaSuccess)
    return NULL;
  return (void *) s;
}

int
bench_sync (void)
{
  cudaError_t e = cudaDeviceSynchronize ();
  if (e != cudaSuccess)
    fprintf (stderr, "cuda: %s\n", cudaGetErrorString (e));
  return e == cudaSuccess ? 0 : -1;
}

}  // extern "C"
