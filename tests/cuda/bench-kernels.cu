/* bench-kernels.cu — the benchmark's baselines and timing helpers (C ABI for bench-reorder.c).
 *
 * reference_reorder: the reference design as its published semantics describe it, launch and
 * per-packet work alike, so that the comparison is with what its users run: one 128-thread block
 * per packet in arrival order over a device array of packet pointers; every setting a run-time
 * argument (sequence and batch fields, slot limit, input and output element types, byte order),
 * so the element conversions are compiled in beside the plain copy; the block reads the
 * big-endian sequence number, block 0 writes the batch id, slot = seq % ppb (skipped past the
 * slot limit), then copies the payload (16-byte accesses when source and destination allow, else
 * 8, 4, 1) or converts its elements from 32-bit word loads (misaligned words combined from two
 * aligned ones inside the packet, else read by bytes). No bounds checks, no duplicate handling,
 * no zero-fill. It lives here only, as a baseline. Faithful down to the types the design's
 * source gives its arguments and counters, which decide how the compiler builds the
 * per-packet work: side by side with the design's kernel built from its published source, on
 * the same packets on an H100, within 0.3 % at 64 B to 1 KB x 1 024 to 65 536 packets.
 *
 * code_fetch_kernel: what running code an SM has not run lately costs (the reorder's finalizer
 * is a different block on a different SM at each submission). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

namespace {

/* The big-endian bit field, one bit a step, with the design's own argument and counter types
 * (16-bit offset, 8-bit width and counter, the byte and the bit position as 8-bit values), and
 * the pointer array read as restrict-qualified, as the design's kernel declares it: with 32-bit
 * types, a plain pointer array and one alignment case instead of the cascade below, the
 * reference ran 20 % faster than the design's kernel (64 B x 65 536: 106 against 133 us on an
 * H100, side by side). */
__device__ __forceinline__ uint32_t
be_bits (const uint8_t *p, uint16_t off, uint8_t w)
{
  uint32_t v = 0;
  for (uint8_t i = 0; i < w; ++i) {
    const uint32_t bit = (uint32_t) off + (uint32_t) i;
    const uint8_t byte = p[bit / 8u];
    const uint8_t pos = (uint8_t) (7u - bit % 8u);
    v = (v << 1) | (uint32_t) ((byte >> pos) & 1u);
  }
  return v;
}

/* Copies len bytes in units of T from where `done` bytes are copied, threads striding by the
 * block; returns the bytes copied so far. */
template <typename T>
__device__ __forceinline__ uint32_t
ref_copy_units (uint8_t *__restrict__ dst, const uint8_t *__restrict__ src, uint32_t len,
    uint32_t done)
{
  const uint32_t units = (len - done) / (uint32_t) sizeof (T);
  for (uint32_t i = threadIdx.x; i < units; i += blockDim.x)
    ((T *) (dst + done))[i] = ((const T *) (src + done))[i];
  return done + units * (uint32_t) sizeof (T);
}

/* The reference design's element types and byte order (its ABI's codes). */
enum { REF_SAME, REF_INT4, REF_INT8, REF_INT16, REF_INT32, REF_FP16, REF_BF16, REF_FP32, REF_FP64 };

/* 4 bytes at a, as a little-endian word: one load when aligned; two aligned words combined when
 * both lie inside [lo, hi); else byte by byte. */
__device__ __forceinline__ uint32_t
ref_word (const uint8_t *a, const uint8_t *lo, const uint8_t *hi)
{
  const uintptr_t k = (uintptr_t) a & 3;
  if (k == 0)
    return *(const uint32_t *) a;
  const uint32_t *w = (const uint32_t *) (a - k);
  if ((const uint8_t *) w >= lo && (const uint8_t *) (w + 2) <= hi)
    return __byte_perm (w[0], w[1], (uint32_t) (k | (k + 1) << 4 | (k + 2) << 8 | (k + 3) << 12));
  return (uint32_t) a[0] | (uint32_t) a[1] << 8 | (uint32_t) a[2] << 16 | (uint32_t) a[3] << 24;
}

__device__ __forceinline__ void
ref_put (uint8_t *dst, uint32_t e, int32_t v, uint32_t to)
{
  switch (to) {
  case REF_FP16:
    ((__half *) dst)[e] = __float2half_rn ((float) v);
    break;
  case REF_BF16:
    ((__nv_bfloat16 *) dst)[e] = __float2bfloat16_rn ((float) v);
    break;
  case REF_FP32:
    ((float *) dst)[e] = (float) v;
    break;
  case REF_FP64:
    ((double *) dst)[e] = (double) v;
    break;
  case REF_INT32:
    ((int32_t *) dst)[e] = v;
    break;
  default:
    break;
  }
}

/* Converts the elements of one 32-bit word (word index w of the payload) into dst. */
__device__ __forceinline__ void
ref_convert_word (uint8_t *dst, uint32_t w, uint32_t x, uint32_t ti, uint32_t to, bool network)
{
  switch (ti) {
  case REF_INT4:
    for (uint32_t j = 0; j < 8; j++) {
      const uint32_t byte = (x >> (8 * (j >> 1))) & 0xff;
      const uint32_t nib = (j & 1) ? byte & 0xf : byte >> 4;
      ref_put (dst, w * 8 + j, (int32_t) (nib & 8 ? nib | ~0xfu : nib), to);
    }
    break;
  case REF_INT8:
    for (uint32_t j = 0; j < 4; j++)
      ref_put (dst, w * 4 + j, (int8_t) (x >> (8 * j)), to);
    break;
  case REF_INT16:
    for (uint32_t j = 0; j < 2; j++) {
      uint16_t h = (uint16_t) (x >> (16 * j));
      if (network)
        h = (uint16_t) (h << 8 | h >> 8);
      ref_put (dst, w * 2 + j, (int16_t) h, to);
    }
    break;
  case REF_INT32:
    ref_put (dst, w, (int32_t) (network ? __byte_perm (x, 0, 0x0123) : x), to);
    break;
  default:
    break;
  }
}

__global__ void
reference_reorder (uint8_t *__restrict__ out, const uint8_t *const *__restrict__ in,
    uint32_t in_len, uint32_t out_len,
    uint32_t off, uint32_t n, uint16_t seq_off, uint8_t seq_w, uint16_t batch_off,
    uint8_t batch_w, uint8_t has_batch, uint32_t ppb, uint32_t max_slot, uint8_t ti, uint8_t to,
    uint8_t network, unsigned long long *batch_id)
{
  if (blockIdx.x >= n)
    return;
  const uint8_t *pkt = in[blockIdx.x];
  if (!pkt)
    return;
  const uint32_t seq = be_bits (pkt, seq_off, seq_w);
  if (blockIdx.x == 0 && threadIdx.x == 0 && batch_id)
    *batch_id = has_batch ? be_bits (pkt, batch_off, batch_w) : seq / ppb;
  const uint32_t slot = seq % ppb;
  if (slot > max_slot)
    return;
  const uint8_t *src = pkt + off;
  uint8_t *dst = out + (size_t) slot * out_len;
  if (ti != REF_SAME && to != REF_SAME) {
    const uint32_t words = in_len / 4;
    for (uint32_t w = threadIdx.x; w < words; w += blockDim.x)
      ref_convert_word (dst, w, ref_word (src + 4 * w, pkt, src + in_len), ti, to, network);
    return;
  }
  /* 16-byte units where source and destination allow, then 8, then 4 on what is left, then
   * bytes, each step taken when the addresses and the bytes done so far allow it */
  const uintptr_t a = (uintptr_t) src | (uintptr_t) dst;
  uint32_t done = 0;
  if ((a & 15) == 0)
    done = ref_copy_units<uint4> (dst, src, in_len, done);
  if (((a | done) & 7) == 0)
    done = ref_copy_units<uint2> (dst, src, in_len, done);
  if (((a | done) & 3) == 0)
    done = ref_copy_units<uint32_t> (dst, src, in_len, done);
  for (uint32_t i = done + threadIdx.x; i < in_len; i += blockDim.x)
    dst[i] = src[i];
}

__global__ void
empty_kernel (int *never)
{
  if (never && threadIdx.x == 1024)
    *never = 1;
}

/* Writes v into a word of pinned, mapped host memory after a system-wide fence, as a
 * submission's last block writes its done word: one launch and the word's way back to the host. */
__global__ void
flag_kernel (unsigned long long *flag, unsigned long long v)
{
  if (threadIdx.x == 0) {
    __threadfence_system ();
    *(volatile unsigned long long *) flag = v;
  }
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

/* One launch of flag_kernel (one block of 32 threads): with the host spinning on the word, the
 * floor of a lone submission's latency (launch, a kernel that starts and ends, the word back). */
int
bench_flag_launch (void *stream, unsigned long long *flag, unsigned long long v)
{
  flag_kernel<<<1, 32, 0, (cudaStream_t) stream>>> (flag, v);
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

/* One batch as the reference design launches it: plain copy (element types SAME), no batch
 * field, slot limit ppb - 1, the batch id written to device memory. */
int
bench_reference_reorder (void *stream, void *out, const void *const *dev_in, uint32_t n,
    uint32_t len, uint32_t off, uint32_t seq_off, uint32_t seq_w, uint32_t ppb)
{
  static unsigned long long *id_d;
  if (!id_d && cudaMalloc ((void **) &id_d, sizeof *id_d) != cudaSuccess)
    return -1;
  reference_reorder<<<n, 128, 0, (cudaStream_t) stream>>> ((uint8_t *) out,
      (const uint8_t *const *) dev_in, len, len, off, n, (uint16_t) seq_off, (uint8_t) seq_w, 0,
      0, 0, ppb, ppb - 1, REF_SAME, REF_SAME, 0, id_d);
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
