/* reorder.cu — the GPU context of the reorder kernels (DqReorderGpu, daqiri-reorder.h): memory,
 * submissions, their launches and completions. The kernels and the design
 * of the device side are in reorder-kernels.cuh (one translation unit with this file, so that
 * the launches see the kernels). */
#include "reorder-kernels.cuh"

#include <dlfcn.h>
#include <unistd.h>
#ifdef DQ_CUDA_EMU
#include <map>
#include <mutex>
#endif

namespace dqk {

/* ---- host side --------------------------------------------------------------------------- */

__thread char g_err[256];

int
cuda_fail (char *msg, size_t len, const char *what, cudaError_t e)
{
  snprintf (g_err, sizeof g_err, "%s: %s (%d)", what, cudaGetErrorString (e), (int) e);
  if (msg && len)
    snprintf (msg, len, "%s", g_err);
  return -1;
}

/* Packets per block: waves of `wave` blocks (at most what the GPU holds at once), as few full
 * waves as hold the burst at one packet per thread at most (the control phase), so that no
 * partial last wave leaves SMs idle while it runs; at least ~4 KiB of payload per block. */
uint32_t
packets_per_block (uint32_t n, uint32_t bytes, uint32_t wave)
{
  const uint64_t per_wave = (uint64_t) wave * kThreads;
  const uint64_t waves = n ? (n + per_wave - 1) / per_wave : 1;
  const uint64_t blocks = waves * wave;
  uint32_t per = (uint32_t) ((n + blocks - 1) / blocks);
  uint32_t min_per = (4096 + bytes - 1) / (bytes ? bytes : 1);
  if (per < min_per)
    per = min_per;
  if (per > (uint32_t) kThreads)
    per = kThreads;
  return per ? per : 1;
}

}  /* namespace dqk */

using namespace dqk;

struct Slot {
  uint64_t *stage;             /* pinned, mapped: host submissions' descriptors, packed */
  ResHdr *res;                 /* pinned, mapped */
  uint64_t *stage_d;           /* the same two, as the device sees them */
  ResHdr *res_d;
  DqReorderBatch *batches;
  DqReorderBatch *batches_d;   /* device: the finalizer writes here, then copies to batches */
  DqReorderFrame *released;
  cudaEvent_t done;
  int state;                   /* 0 free, 1 in flight */
  void *user;
  uint32_t kind;
  uint64_t seq;                /* a K1 submission's job_seq (its ResHdr.done), else 0 */
  uint64_t blocks;             /* K1 blocks launched from this slot so far */
};

struct _DqReorderGpu {
  DqReorderConfig cfg;
  DqReorderGpuOptions opt;
  Params base;
  cudaStream_t stream;
  int own_stream;
  int sms;
  uint32_t resident;            /* blocks of reorder_main the GPU runs at once */
  uint32_t stage;               /* K1's dynamic shared memory for staged copies (bytes) */
  DevState *st;                 /* 2, by job_seq % 2 (Mail) */
  Mail *mail;                   /* one per word of the state */
  Scratch *sc;                  /* kSets for K1 (by job_seq % kSets), then gather's */
  unsigned long long *post_win; /* early start's posts (reorder-kernels.cuh): kSets windows, */
  unsigned long long *post_blk; /* by job_seq % kSets, and kSets x post_cap blocks' words */
  uint32_t post_cap;            /* K1's largest grid */
  Sync *sync;
  unsigned long long *slot_moved;   /* per slot: its K1 blocks done moving (Params.slot_moved) */
  unsigned long long *claims;
  uint8_t *cls;
  int64_t *pk_x;
  uint32_t *pk_seq, *aux;
  CopyItem *copies;
  ZeroItem *zeros;
  FrameEnt *ring;              /* pinned, mapped */
  uint64_t tail, head_known;
  Slot *slots;
  uint32_t next, oldest, inflight;
  cudaEvent_t last_event;
  int pdl;                     /* programmatic dependent launch usable (sm_90 on) */
  int chain;                   /* the last launch on the stream was K1: the next may overlap it */
  uint64_t job_seq;            /* K1 submissions, numbered from 1 */
  int early;                   /* early start allowed (DQ_REORDER_NO_EARLY unset) */
  int posts;                   /* from the posts (DQ_REORDER_NO_POSTS unset) */
  uint32_t quiet;              /* not-ready polls since the last event query */
  uint32_t prev_grid, prev_n, prev_per_block, prev_kind;   /* the last K1 submission */
  uint64_t prev_free_tail;
  DqReorderStats stats;
  DqReorderWindow window;
  char err[256];
};

/* The sequence number's and the batch id's bit fields in a packet, from cfg, into a kernel's
 * parameters (Params, PacketizeParams). */
template <class P>
static void
set_key_fields (P &p, const DqReorderConfig *cfg)
{
  p.seq_off = cfg->seq_bit_offset;
  p.seq_w = cfg->seq_bit_width;
  p.batch_off = cfg->batch_bit_offset;
  p.batch_w = cfg->batch_bit_width;
}

/* K1's copies through shared memory (sm_90 on, reorder-move.cuh: bulk and asynchronous): the
 * shared memory each of the blocks an SM holds (registers bound them) can have beside K1's own,
 * up to 48 KiB; none where that would hold fewer blocks per SM, or is under 16 KiB.
 * DQ_REORDER_NO_BULK=1 turns both off (for side-by-side benchmarks). */
static cudaError_t
k1_stage (DqReorderGpu *ctx, const cudaDeviceProp &pr, int per_sm)
{
  ctx->stage = 0;
#ifdef DQ_CUDA_EMU
  /* as on an H200 (the emulator's bulk copies: cuda-emu.h) */
  (void) pr;
  (void) per_sm;
  ctx->stage = 48u << 10;
  return cudaSuccess;
#else
  if (getenv ("DQ_REORDER_NO_BULK"))
    return cudaSuccess;
  cudaFuncAttributes fa;
  cudaError_t e = cudaFuncGetAttributes (&fa, reorder_main);
  if (e != cudaSuccess)
    return e;
  const size_t room = pr.sharedMemPerMultiprocessor / (size_t) per_sm;
  const size_t own = fa.sharedSizeBytes + pr.reservedSharedMemPerBlock;
  size_t stage = room > own ? (room - own) & ~(size_t) 4095 : 0;
  if (stage > (48u << 10))
    stage = 48u << 10;
  if (stage < (16u << 10))
    return cudaSuccess;
  e = cudaFuncSetAttribute (reorder_main, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) stage);
  if (e != cudaSuccess)
    return e;
  int n = 0;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor (&n, reorder_main, kThreads, stage);
  if (e != cudaSuccess)
    return e;
  if (n >= per_sm)
    ctx->stage = (uint32_t) stage;
  return cudaSuccess;
#endif
}

/* Launches K1: overlapping the previous K1 where that is the stream's last launch (see
 * reorder-kernels.cuh), a plain launch otherwise. */
static cudaError_t
launch_k1 (DqReorderGpu *ctx, uint32_t grid, const Params &p)
{
  const bool overlap = ctx->pdl && ctx->chain;
#ifdef DQ_CUDA_EMU
  const size_t dyn = p.bulk_slots || p.async_copy ? ctx->stage : 0;
  if (overlap)
    dq_emu_launch_overlapped (dim3 (grid), dim3 (kThreads), [=] () { reorder_main (p); }, dyn);
  else
    dq_emu_launch (dim3 (grid), dim3 (kThreads), [=] () { reorder_main (p); }, dyn);
  return cudaGetLastError ();
#else
  cudaLaunchConfig_t lc = {};
  cudaLaunchAttribute at[1];
  lc.gridDim = dim3 (grid);
  lc.blockDim = dim3 (kThreads);
  lc.stream = ctx->stream;
  lc.dynamicSmemBytes = p.bulk_slots || p.async_copy ? ctx->stage : 0;
  if (overlap) {
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    lc.attrs = at;
    lc.numAttrs = 1;
  }
  return cudaLaunchKernelEx (&lc, reorder_main, p);
#endif
}

/* Early start's posts all zero (no tag), on the context's stream. */
static cudaError_t
clear_posts (DqReorderGpu *ctx)
{
  const cudaError_t e = cudaMemsetAsync (ctx->post_win, 0, kSets * kWinWords * 8, ctx->stream);
  return e != cudaSuccess ? e
      : cudaMemsetAsync (ctx->post_blk, 0, kSets * (size_t) ctx->post_cap * 16, ctx->stream);
}

#define CK(call, what) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    cuda_fail (ctx ? ctx->err : NULL, ctx ? sizeof ctx->err : 0, what, e_); goto fail; } } while (0)

extern "C" {

int
dq_cuda_available (char *msg, size_t len)
{
  int n = 0;
  cudaError_t e = cudaGetDeviceCount (&n);
  if (e != cudaSuccess) {
    if (msg && len)
      snprintf (msg, len, "no CUDA device: %s", cudaGetErrorString (e));
    return 0;
  }
  if (n == 0) {
    if (msg && len)
      snprintf (msg, len, "no CUDA device: none found");
    return 0;
  }
  return 1;
}

void
dq_cuda_device_info (char *buf, size_t len)
{
  int dev = 0, drv = 0, rt = 0;
  cudaDeviceProp pr;
  if (cudaGetDevice (&dev) != cudaSuccess || cudaGetDeviceProperties (&pr, dev) != cudaSuccess) {
    snprintf (buf, len, "no device");
    return;
  }
  cudaDriverGetVersion (&drv);
  cudaRuntimeGetVersion (&rt);
  int clk = 0, mclk = 0;
  cudaDeviceGetAttribute (&clk, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute (&mclk, cudaDevAttrMemoryClockRate, dev);
  snprintf (buf, len, "%s sm_%d%d, %d SMs, %.1f GiB, L2 %d MiB, clock %d MHz, mem clock %d MHz, "
      "driver %d, runtime %d", pr.name, pr.major, pr.minor, pr.multiProcessorCount,
      (double) pr.totalGlobalMem / (1 << 30), pr.l2CacheSize >> 20, clk / 1000, mclk / 1000, drv, rt);
}

void *
dq_cuda_malloc (size_t size)
{
  void *p = NULL;
  cudaError_t e = cudaMalloc (&p, size ? size : 1);
  if (e != cudaSuccess) {
    cuda_fail (NULL, 0, "cudaMalloc", e);
    return NULL;
  }
  return p;
}

#ifdef DQ_CUDA_EMU
/* The emulator's "pinned, mapped" allocations, so that dq_cuda_host_mapped tells them from
 * other host memory as the driver does. */
static std::mutex emu_pinned_lock;
static std::map<uintptr_t, size_t> emu_pinned;
#endif

void *
dq_cuda_malloc_host (size_t size)
{
  void *p = NULL;
  /* portable: pinned and mapped in every context, so that a pipeline's GstCudaContext may
   * read it too (daqirisrc's ring wrapped as GstCudaMemory) */
  cudaError_t e = cudaHostAlloc (&p, size ? size : 1,
      cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess) {
    cuda_fail (NULL, 0, "cudaHostAlloc", e);
    return NULL;
  }
#ifdef DQ_CUDA_EMU
  std::lock_guard<std::mutex> g (emu_pinned_lock);
  emu_pinned[(uintptr_t) p] = size ? size : 1;
#endif
  return p;
}

void
dq_cuda_free (void *p)
{
  if (p)
    cudaFree (p);
}

void
dq_cuda_free_host (void *p)
{
  if (!p)
    return;
#ifdef DQ_CUDA_EMU
  {
    std::lock_guard<std::mutex> g (emu_pinned_lock);
    emu_pinned.erase ((uintptr_t) p);
  }
#endif
  cudaFreeHost (p);
}

int
dq_cuda_host_mapped (const void *p)
{
#ifdef DQ_CUDA_EMU
  std::lock_guard<std::mutex> g (emu_pinned_lock);
  auto it = emu_pinned.upper_bound ((uintptr_t) p);
  if (it == emu_pinned.begin ())
    return 0;
  --it;
  return (uintptr_t) p < it->first + it->second;
#else
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes (&a, p) != cudaSuccess) {
    cudaGetLastError ();
    return 0;
  }
  return a.type == cudaMemoryTypeHost && a.devicePointer == p;
#endif
}

int
dq_cuda_export_dmabuf (void *dev_ptr, size_t size, int *fd, uint64_t *offset)
{
  *fd = -1;
  *offset = 0;
#ifdef DQ_CUDA_EMU
  (void) dev_ptr;
  (void) size;
  snprintf (g_err, sizeof g_err, "dma-buf export: not on the CUDA emulator");
  return -1;
#else
  /* the driver call (the runtime has none): libcuda.so.1 is loaded already by the runtime */
  typedef int (*GetHandle) (void *handle, unsigned long long dptr, size_t size, int type,
      unsigned long long flags);
  static GetHandle get_handle;
  if (get_handle == NULL) {
    void *lib = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL)
      lib = dlopen ("libcuda.so.1", RTLD_NOW);
    get_handle = lib ? (GetHandle) dlsym (lib, "cuMemGetHandleForAddressRange") : NULL;
    if (get_handle == NULL) {
      snprintf (g_err, sizeof g_err, "dma-buf export: the CUDA driver has no "
          "cuMemGetHandleForAddressRange (driver 515 or newer needed)");
      return -1;
    }
  }
  /* the exported range is whole host pages: the allocation's pages around the buffer */
  const uintptr_t page = (uintptr_t) sysconf (_SC_PAGESIZE);
  const uintptr_t p = (uintptr_t) dev_ptr, base = p & ~(page - 1);
  const size_t len = (size_t) (((p + size + page - 1) & ~(page - 1)) - base);
  int handle = -1;
  const int dma_buf_fd = 1;     /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD */
  int r = get_handle (&handle, (unsigned long long) base, len, dma_buf_fd, 0);
  if (r != 0 || handle < 0) {
    snprintf (g_err, sizeof g_err, "dma-buf export of %zu bytes of GPU memory at %p "
        "(cuMemGetHandleForAddressRange) failed: CUresult %d%s", len, (void *) base, r,
        r == 801 ? " (not supported: the NVIDIA open kernel modules and a kernel with "
        "dma-buf support are needed)" : "");
    return -1;
  }
  *fd = handle;
  *offset = (uint64_t) (p - base);
  return 0;
#endif
}

int
dq_cuda_memcpy (void *dst, const void *src, size_t size)
{
  cudaError_t e = cudaMemcpy (dst, src, size, cudaMemcpyDefault);
  return e == cudaSuccess ? 0 : cuda_fail (NULL, 0, "cudaMemcpy", e);
}

int
dq_cuda_memcpy2d (void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
    size_t height)
{
  cudaError_t e = cudaMemcpy2D (dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDefault);
  return e == cudaSuccess ? 0 : cuda_fail (NULL, 0, "cudaMemcpy2D", e);
}

int
dq_cuda_memset (void *p, int v, size_t size)
{
  cudaError_t e = cudaMemset (p, v, size);
  return e == cudaSuccess ? 0 : cuda_fail (NULL, 0, "cudaMemset", e);
}

int
dq_cuda_stream_synchronize (void *stream)
{
  cudaError_t e = cudaStreamSynchronize ((cudaStream_t) stream);
  return e == cudaSuccess ? 0 : cuda_fail (NULL, 0, "cudaStreamSynchronize", e);
}

int
dq_cuda_unpack_uyvp_to_i422_10 (const void *src, uint32_t width, uint32_t height, void *y,
    size_t y_pitch, void *u, size_t u_pitch, void *v, size_t v_pitch, void *stream)
{
  if (dq_unpack_uyvp_validate (width, height, y_pitch, u_pitch, v_pitch, g_err,
          sizeof g_err) != 0)
    return -1;
  if (width == 0 || height == 0)
    return 0;
  if (!src || !y || !u || !v) {
    snprintf (g_err, sizeof g_err, "unpack UYVP: a NULL source or plane pointer");
    return -1;
  }
  UnpackParams q;
  memset (&q, 0, sizeof q);
  q.src = (const uint8_t *) src;
  q.y = (uint8_t *) y;
  q.u = (uint8_t *) u;
  q.v = (uint8_t *) v;
  q.y_pitch = y_pitch;
  q.u_pitch = u_pitch;
  q.v_pitch = v_pitch;
  q.pgroups = width / 2;
  /* narrow pictures get narrow blocks (whole warps); rows wider than a block take several */
  const uint32_t threads = q.pgroups >= (uint32_t) kThreads ? (uint32_t) kThreads
      : (q.pgroups + 31) / 32 * 32;
  q.tiles_per_row = (q.pgroups + threads - 1) / threads;
  q.tiles = (uint64_t) q.tiles_per_row * height;
  /* enough blocks to fill any GPU several times over; the kernel strides over the rest */
  const uint32_t grid = q.tiles < 8192 ? (uint32_t) q.tiles : 8192;
  (void) cudaGetLastError ();     /* an earlier, non-sticky error is not this launch's */
  DQ_LAUNCH (unpack_uyvp_main, grid, threads, (cudaStream_t) stream, q);
  cudaError_t e = cudaGetLastError ();
  return e == cudaSuccess ? 0 : cuda_fail (NULL, 0, "unpack UYVP kernel launch", e);
}

const char *
dq_cuda_last_error (void)
{
  return g_err;
}

const char *
dq_reorder_gpu_error (DqReorderGpu *ctx)
{
  return ctx ? ctx->err : g_err;
}

void
dq_reorder_gpu_free (DqReorderGpu *ctx)
{
  if (!ctx)
    return;
  if (ctx->stream)
    cudaStreamSynchronize (ctx->stream);
  if (ctx->slots) {
    for (uint32_t k = 0; k < ctx->opt.max_inflight; k++) {
      Slot *s = &ctx->slots[k];
      if (s->stage)
        cudaFreeHost (s->stage);
      if (s->res)
        cudaFreeHost (s->res);
      if (s->batches_d)
        cudaFree (s->batches_d);
      if (s->done)
        cudaEventDestroy (s->done);
    }
    free (ctx->slots);
  }
  cudaFree (ctx->st);
  cudaFree (ctx->mail);
  cudaFree (ctx->sc);
  cudaFree (ctx->post_win);
  cudaFree (ctx->post_blk);
  cudaFree (ctx->sync);
  cudaFree (ctx->slot_moved);
  cudaFree (ctx->claims);
  cudaFree (ctx->cls);
  cudaFree (ctx->pk_x);
  cudaFree (ctx->pk_seq);
  cudaFree (ctx->aux);
  cudaFree (ctx->copies);
  cudaFree (ctx->zeros);
  if (ctx->ring)
    cudaFreeHost (ctx->ring);
  if (ctx->own_stream && ctx->stream)
    cudaStreamDestroy (ctx->stream);
  free (ctx);
}

DqReorderGpu *
dq_reorder_gpu_new (const DqReorderConfig *cfg, const DqReorderGpuOptions *opts, char *msg,
    size_t msg_len)
{
  if (dq_reorder_config_validate (cfg, msg, msg_len) != 0)
    return NULL;
  DqReorderGpu *ctx = (DqReorderGpu *) calloc (1, sizeof *ctx);
  if (!ctx)
    return NULL;
  ctx->cfg = *cfg;
  if (opts)
    ctx->opt = *opts;
  else
    ctx->opt.device = -1;
  DqReorderGpuOptions &o = ctx->opt;
  if (!o.max_packets)
    o.max_packets = 4096;
  if (!o.max_inflight)
    o.max_inflight = 4;
  if (!o.max_frames)
    o.max_frames = 256;
  const uint32_t W = dq_reorder_window (cfg), ppb = cfg->packets_per_batch;
  const uint32_t res_cap = o.max_packets + W + 1, rel_cap = W + o.max_frames;
  const uint32_t zcap = DQ_ZERO_LIST_BATCHES * W * ((ppb + 31) / 32) + DQ_ZERO_LIST_MIN;
  int dev = 0;
  cudaDeviceProp pr;
  DevState init;
  Scratch zs;
  FrameEnt *ring_d = NULL;

  if (o.device >= 0)
    CK (cudaSetDevice (o.device), "cudaSetDevice");
  CK (cudaGetDevice (&dev), "cudaGetDevice");
  CK (cudaGetDeviceProperties (&pr, dev), "cudaGetDeviceProperties");
  ctx->sms = pr.multiProcessorCount;
  /* DQ_REORDER_NO_PDL in the environment: plain launches (for side-by-side benchmarks) */
  ctx->pdl = pr.major >= 9 && !getenv ("DQ_REORDER_NO_PDL");
  /* DQ_REORDER_NO_EARLY: every submission waits for the previous finalizer (side by side) */
  ctx->early = !getenv ("DQ_REORDER_NO_EARLY");
  /* DQ_REORDER_NO_POSTS: early start from the previous submission's last ticket (side by side) */
  ctx->posts = !getenv ("DQ_REORDER_NO_POSTS");
  {
    int per_sm = 0;
    CK (cudaOccupancyMaxActiveBlocksPerMultiprocessor (&per_sm, reorder_main, kThreads, 0),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    per_sm = per_sm > 0 ? per_sm : 1;
    ctx->resident = (uint32_t) per_sm * (uint32_t) ctx->sms;
    if (pr.major >= 9)
      CK (k1_stage (ctx, pr, per_sm), "K1's shared memory");
  }
  if (o.stream) {
    ctx->stream = (cudaStream_t) o.stream;
  } else {
    CK (cudaStreamCreateWithFlags (&ctx->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    ctx->own_stream = 1;
  }
  CK (cudaMalloc (&ctx->st, 2 * sizeof (DevState)), "cudaMalloc(state)");
  CK (cudaMalloc (&ctx->mail, sizeof (DevState) / 8 * sizeof (Mail)), "cudaMalloc(mailbox)");
  CK (cudaMemsetAsync (ctx->mail, 0, sizeof (DevState) / 8 * sizeof (Mail), ctx->stream),
      "cudaMemset(mailbox)");
  CK (cudaMalloc (&ctx->sc, (kSets + 1) * sizeof (Scratch)), "cudaMalloc(scratch)");
  /* K1's grid: at most one block per kThreads packets beyond a wave (packets_per_block) */
  ctx->post_cap = o.max_packets / kThreads + ctx->resident + 2;
  CK (cudaMalloc (&ctx->post_win, kSets * kWinWords * 8), "cudaMalloc(posts)");
  CK (cudaMalloc (&ctx->post_blk, kSets * (size_t) ctx->post_cap * 16), "cudaMalloc(posts)");
  CK (clear_posts (ctx), "cudaMemset(posts)");
  CK (cudaMalloc (&ctx->sync, sizeof (Sync)), "cudaMalloc(sync)");
  CK (cudaMemsetAsync (ctx->sync, 0, sizeof (Sync), ctx->stream), "cudaMemset(sync)");
  CK (cudaMalloc (&ctx->slot_moved, o.max_inflight * 8), "cudaMalloc(slot counters)");
  CK (cudaMemsetAsync (ctx->slot_moved, 0, o.max_inflight * 8, ctx->stream),
      "cudaMemset(slot counters)");
  CK (cudaMalloc (&ctx->claims, (size_t) W * ppb * 8), "cudaMalloc(claims)");
  CK (cudaMalloc (&ctx->cls, o.max_packets), "cudaMalloc(cls)");
  CK (cudaMalloc (&ctx->pk_x, (size_t) o.max_packets * 8), "cudaMalloc(pk_x)");
  CK (cudaMalloc (&ctx->pk_seq, (size_t) o.max_packets * 4), "cudaMalloc(pk_seq)");
  CK (cudaMalloc (&ctx->aux, (size_t) o.max_packets * 4), "cudaMalloc(aux)");
  CK (cudaMalloc (&ctx->copies, (size_t) o.max_packets * sizeof (CopyItem)), "cudaMalloc(copies)");
  CK (cudaMalloc (&ctx->zeros, (size_t) zcap * sizeof (ZeroItem)), "cudaMalloc(zeros)");
  CK (cudaHostAlloc (&ctx->ring, (size_t) o.max_frames * sizeof (FrameEnt), cudaHostAllocMapped),
      "cudaHostAlloc(frame ring)");
  CK (cudaMemsetAsync (ctx->claims, 0xff, (size_t) W * ppb * 8, ctx->stream), "cudaMemset(claims)");
  memset (&init, 0, sizeof init);
  for (uint32_t r = 0; r < DQ_REORDER_MAX_WINDOW; r++) {
    init.rec[r].gen = 1;
    init.rec[r].first_stamp = kNoStamp;
  }
  for (int k = 0; k < 2; k++)
    CK (cudaMemcpyAsync (ctx->st + k, &init, sizeof init, cudaMemcpyHostToDevice, ctx->stream),
        "cudaMemcpy(state)");
  memset (&zs, 0, sizeof zs);
  zs.first_valid = 0xffffffffu;
  for (uint32_t r = 0; r < DQ_REORDER_MAX_WINDOW; r++)
    zs.first[r] = kNoStamp;
  for (uint32_t k = 0; k < kSets + 1; k++)
    CK (cudaMemcpyAsync (ctx->sc + k, &zs, sizeof zs, cudaMemcpyHostToDevice, ctx->stream),
        "cudaMemcpy(scratch)");
  CK (cudaStreamSynchronize (ctx->stream), "cudaStreamSynchronize");

  ctx->slots = (Slot *) calloc (o.max_inflight, sizeof (Slot));
  if (!ctx->slots)
    goto fail;
  for (uint32_t k = 0; k < o.max_inflight; k++) {
    Slot *s = &ctx->slots[k];
    CK (cudaHostAlloc ((void **) &s->stage, (size_t) o.max_packets * 2 * sizeof *s->stage,
        cudaHostAllocMapped), "cudaHostAlloc(descriptors)");
    size_t rb = sizeof (ResHdr) + (size_t) res_cap * sizeof (DqReorderBatch) +
        (size_t) rel_cap * sizeof (DqReorderFrame);
    CK (cudaHostAlloc (&s->res, rb, cudaHostAllocMapped), "cudaHostAlloc(results)");
    memset (s->res, 0, rb);
    s->batches = (DqReorderBatch *) (s->res + 1);
    s->released = (DqReorderFrame *) (s->batches + res_cap);
    CK (cudaMalloc (&s->batches_d, (size_t) res_cap * sizeof (DqReorderBatch)),
        "cudaMalloc(result batches)");
    CK (cudaEventCreateWithFlags (&s->done, cudaEventDisableTiming), "cudaEventCreate");
    CK (cudaHostGetDevicePointer (&s->stage_d, s->stage, 0), "cudaHostGetDevicePointer");
    CK (cudaHostGetDevicePointer (&s->res_d, s->res, 0), "cudaHostGetDevicePointer");
  }

  {
    Params &p = ctx->base;
    memset (&p, 0, sizeof p);
    set_key_fields (p, cfg);
    p.ppb = ppb;
    p.pay_off = cfg->payload_offset;
    p.lin = cfg->payload_size;
    p.lout = dq_reorder_output_payload_size (cfg);
    p.need = dq_reorder_min_packet_length (cfg);
    p.W = W;
    p.key_bits = cfg->batch_bit_width ? cfg->batch_bit_width : cfg->seq_bit_width;
    p.in_type = cfg->input_type;
    p.out_type = cfg->output_type;
    p.network = cfg->byte_order == DQ_BYTE_ORDER_NETWORK;
    p.converts = (uint32_t) dq_reorder_converts (cfg);
    p.ppb_pow2 = (ppb & (ppb - 1)) == 0;
    while ((1u << p.ppb_shift) < ppb)
      p.ppb_shift++;
    p.mail = ctx->mail;
    p.sc = ctx->sc;
    p.sync = ctx->sync;
    p.claims = ctx->claims;
    p.cls = ctx->cls;
    p.pk_x = ctx->pk_x;
    p.pk_seq = ctx->pk_seq;
    p.aux = ctx->aux;
    p.copies = ctx->copies;
    p.zeros = ctx->zeros;
    p.zcap = zcap;
    CK (cudaHostGetDevicePointer (&ring_d, ctx->ring, 0), "cudaHostGetDevicePointer");
    p.ring = ring_d;
    p.ring_cap = o.max_frames;
    p.res_cap = res_cap;
    p.rel_cap = rel_cap;
#ifdef DQ_CUDA_EMU
    /* helpers wait for the finalizer while holding their places: one place stays for the
     * blocks that have not taken their tickets yet */
    p.helpers = dq_emu_resident () - 1;
#else
    p.helpers = (uint32_t) ctx->sms;
#endif
    /* plain copies of payloads in whole 16-byte units through shared memory
     * (reorder-move.cuh): bulk copies from kBulkMin, asynchronous 16-byte copies from kAsyncMin
     * (DQ_REORDER_NO_ASYNC=1: not these, for side-by-side benchmarks) */
    if (ctx->stage && !p.converts && p.lin == p.lout && p.lin % 16 == 0) {
      if (p.lin >= kBulkMin)
        p.bulk_slots = ctx->stage / kBulkPiece < kBulkSlots ? ctx->stage / kBulkPiece : kBulkSlots;
      else if (p.lin >= kAsyncMin && ctx->stage >= kAsyncStage && !getenv ("DQ_REORDER_NO_ASYNC"))
        p.async_copy = 1;
    }
  }
  return ctx;

fail:
  if (msg && msg_len)
    snprintf (msg, msg_len, "%s", ctx->err[0] ? ctx->err : "out of memory");
  dq_reorder_gpu_free (ctx);
  return NULL;
}

int
dq_reorder_gpu_add_frame (DqReorderGpu *ctx, void *frame, void *user)
{
  if (!frame) {
    snprintf (ctx->err, sizeof ctx->err, "add_frame: NULL frame");
    return DQ_REORDER_ERROR;
  }
  if (ctx->tail - ctx->head_known >= ctx->opt.max_frames) {
    snprintf (ctx->err, sizeof ctx->err, "add_frame: the free-frame queue holds %u frames "
        "(max_frames); poll completions first", ctx->opt.max_frames);
    return DQ_REORDER_BUSY;
  }
  FrameEnt *e = &ctx->ring[ctx->tail % ctx->opt.max_frames];
  e->ptr = (uint64_t) frame;
  e->user = (uint64_t) user;
  ctx->tail++;
  return DQ_REORDER_OK;
}

static Slot *
take_slot (DqReorderGpu *ctx)
{
  if (ctx->inflight == ctx->opt.max_inflight) {
    snprintf (ctx->err, sizeof ctx->err, "all %u submission slots hold unpolled completions",
        ctx->opt.max_inflight);
    return NULL;
  }
  Slot *s = &ctx->slots[ctx->next];
  s->seq = 0;
  return s;
}

static int
launched (DqReorderGpu *ctx, Slot *s, void *user, uint32_t kind)
{
  cudaError_t e = cudaGetLastError ();
  if (e == cudaSuccess)
    e = cudaEventRecord (s->done, ctx->stream);
  if (e != cudaSuccess)
    return cuda_fail (ctx->err, sizeof ctx->err, "kernel launch", e);
  s->state = 1;
  s->user = user;
  s->kind = kind;
  ctx->last_event = s->done;
  ctx->next = (ctx->next + 1) % ctx->opt.max_inflight;
  ctx->inflight++;
  return DQ_REORDER_OK;
}

static Params
job_params (DqReorderGpu *ctx, Slot *s)
{
  Params p = ctx->base;
  p.res = s->res_d;
  p.res_out = (DqReorderBatch *) (p.res + 1);
  p.res_released = (DqReorderFrame *) (p.res_out + p.res_cap);
  p.res_batches = s->batches_d;
  p.free_tail = ctx->tail;
  /* the free ring's entries from the GPU's last reported position on: it may be further on by
   * the frames the submissions in flight take, which kParamAhead covers in the common case */
  const uint64_t avail = ctx->tail - ctx->head_known;
  p.ahead_base = ctx->head_known;
  p.ahead_n = avail < kParamAhead ? (uint32_t) avail : kParamAhead;
  for (uint32_t k = 0; k < p.ahead_n; k++)
    p.ahead[k] = ctx->ring[(ctx->head_known + k) % ctx->opt.max_frames];
  return p;
}

/* Packs a host submission's descriptors into the slot's pinned memory as the kernels read them:
 * offsets and lengths (8 bytes a packet), then the timestamps (read only for each batch's first
 * packet), so that a third of DqReorderPacket's bytes cross the bus. */
static void
stage_descriptors (DqReorderGpu *ctx, Slot *s, const DqReorderPacket *pkts, uint32_t n,
    const uint64_t *stamp, Params *p)
{
  const uint32_t cap = ctx->opt.max_packets;
  uint64_t *ol = s->stage, *ts = s->stage + cap;
  for (uint32_t i = 0; i < n; i++)
    ol[i] = (uint64_t) pkts[i].offset | (uint64_t) pkts[i].length << 32;
  if (stamp)
    ts[0] = *stamp;
  else
    for (uint32_t i = 0; i < n; i++)
      ts[i] = pkts[i].timestamp;
  p->desc = (const uint8_t *) s->stage_d;
  p->desc_ts = (const uint8_t *) (s->stage_d + cap);
  p->desc_stride = sizeof *ol;
  p->ts_stride = stamp ? 0 : sizeof *ts;
}

/* The runs of a dq_reorder_gpu_submit_word_runs call, as submit takes them. */
struct WordRuns {
  const DqReorderWordRun *runs;
  uint32_t n;
};

/* Copies a submission's runs of stride words into the slot's pinned memory as one array, each
 * word's stride index counted from the submission's data (saturated at the index mask: outside
 * it), and where each run starts and its timestamp into the parameters (empty runs left out). */
static void
stage_word_runs (Slot *s, const WordRuns &wr, uint32_t shift, Params *p)
{
  const DqReorderWordRun *runs = wr.runs;
  const uint32_t n_runs = wr.n;
  uint32_t *w = (uint32_t *) s->stage;
  uint32_t at = 0;
  p->n_runs = 0;
  for (uint32_t k = 0; k < n_runs; k++) {
    if (runs[k].n == 0)
      continue;
    const uint32_t base = (uint32_t) (runs[k].offset >> shift); /* at most the mask */
    const uint32_t *x = runs[k].words;
    for (uint32_t i = 0; i < runs[k].n; i++) {
      const uint32_t idx = (x[i] & DQ_REORDER_WORD_INDEX_MASK) + base;
      w[at + i] = (x[i] & ~DQ_REORDER_WORD_INDEX_MASK) |
          (idx < DQ_REORDER_WORD_INDEX_MASK ? idx : DQ_REORDER_WORD_INDEX_MASK);
    }
    p->run_start[p->n_runs] = at;
    p->run_ts[p->n_runs++] = runs[k].timestamp;
    at += runs[k].n;
  }
  p->desc = (const uint8_t *) s->stage_d;
  p->desc_stride = sizeof *w;
  p->desc_shift = shift;
}

/* Where a submission's descriptors are: host records the library stages, records the kernels
 * read where they lie, packed words (offset | length << 32) or stride words (offset >> shift |
 * length << 18) the kernels read where they lie, runs of stride words the library stages. */
enum DescWhere { DESC_STAGED, DESC_RECORDS, DESC_PACKED, DESC_WORDS, DESC_WORD_RUNS };

/* One submission. pkts: descriptors as `where` says (DESC_PACKED: uint64_t words, DESC_WORDS:
 * uint32_t words in strides of 1 << shift bytes, either with a stamp; DESC_WORD_RUNS: a
 * WordRuns, their timestamps their own); stamp: NULL, or the timestamp every packet takes (the
 * descriptors' own unread). */
static int
submit (DqReorderGpu *ctx, const void *data, size_t size, const void *pkts, DescWhere where,
    uint32_t shift, const uint64_t *stamp, uint32_t n, uint32_t kind, uint32_t mode, void *out,
    void *user)
{
  if (n > ctx->opt.max_packets) {
    snprintf (ctx->err, sizeof ctx->err, "burst of %u packets exceeds max_packets %u", n,
        ctx->opt.max_packets);
    return DQ_REORDER_ERROR;
  }
  Slot *s = take_slot (ctx);
  if (!s)
    return DQ_REORDER_BUSY;
  Params p = job_params (ctx, s);
  p.kind = kind;
  p.flush_mode = mode;
  p.n = n;
  p.data = (const uint8_t *) data;
  p.data_size = size;
  p.out = (uint8_t *) out;
  if (where == DESC_WORD_RUNS) {
    stage_word_runs (s, *(const WordRuns *) pkts, shift, &p);
  } else if (where != DESC_STAGED) {
    p.desc = (const uint8_t *) pkts;
    p.desc_stride = where == DESC_WORDS ? sizeof (uint32_t)
        : where == DESC_PACKED          ? sizeof (uint64_t)
                                        : sizeof (DqReorderPacket);
    p.desc_shift = shift;
    if (stamp) {
      s->stage[0] = *stamp;
      p.desc_ts = (const uint8_t *) s->stage_d;
      p.ts_stride = 0;
    } else {
      p.desc_ts = p.desc + offsetof (DqReorderPacket, timestamp);
      p.ts_stride = sizeof (DqReorderPacket);
    }
  } else if (n) {
    stage_descriptors (ctx, s, (const DqReorderPacket *) pkts, n, stamp, &p);
  }
  /* K1 in waves of a third of the blocks the GPU holds, so that the next submission's blocks
   * are resident beside this one's and run their claims and finalizer while its payloads move
   * (whole-GPU waves: ~13 points less of copy bandwidth at 1 KB x 16384); conversions, more
   * work per byte, in waves of half (H200, 1 KB x 4096: int16 -> fp16 930 against 870 GB/s,
   * int4 -> fp16 1440 against 1210; whole-GPU waves 705 and 1325) */
  const uint32_t div = p.converts ? 2 : 3;
  const uint32_t wave = kind == DQ_JOB_GATHER ? ctx->resident
      : (ctx->resident / div ? ctx->resident / div : 1);
  p.per_block = packets_per_block (n, p.lin > p.lout ? p.lin : p.lout, wave);
  const uint32_t grid = n ? (n + p.per_block - 1) / p.per_block : 1;
  if (kind == DQ_JOB_GATHER) {
    p.sc = ctx->sc + kSets;
    DQ_LAUNCH (gather_main, grid, kThreads, ctx->stream, p);
    ctx->chain = 0;
  } else {
    const uint64_t seq = ++ctx->job_seq;
    p.job_seq = seq;
    p.slot_moved = ctx->slot_moved + (s - ctx->slots);
    p.slot_through = s->blocks + grid;
    p.sc = ctx->sc + seq % kSets;
    p.st = ctx->st + (seq - 1) % 2;
    p.st_out = ctx->st + seq % 2;
    p.sc_prev = ctx->sc + (seq - 1) % kSets;
    p.post_win = ctx->post_win + seq % kSets * kWinWords;
    p.post_win_prev = ctx->post_win + (seq - 1) % kSets * kWinWords;
    p.post_blk = ctx->post_blk + seq % kSets * 2 * ctx->post_cap;
    p.post_blk_prev = ctx->post_blk + (seq - 1) % kSets * 2 * ctx->post_cap;
    /* the posts' tags repeat: cleared before the K1 after them, which does not start early
     * (nor overlaps the previous K1: the clear comes between them on the stream) */
    const bool clear = (seq & kPostTagMask) == 0;
    if (clear) {
      const cudaError_t e = clear_posts (ctx);
      if (e != cudaSuccess)
        return cuda_fail (ctx->err, sizeof ctx->err, "clearing the posts", e);
      ctx->chain = 0;
    }
    /* early start (reorder-kernels.cuh, the posts) where the submission's chain (round trips,
     * claims) is a good part of its time: up to 64 MiB moved, in + out, and plain copies of
     * payloads under kBulkMin at any size (H200, side by side: 1 KB x 16384 11.8 against 12.4
     * us, 2 KB x 16384 18.6 against 19.6, 8 KB x 4096 18.0 against 18.8, 1 KB x 65536 40.7
     * against 41.1; 8 KB x 8192 and x 16384 0.5-1 % slower with it) */
    const bool chain_bound = (uint64_t) n * (p.lin + p.lout) <= (64ull << 20) ||
        (!p.converts && p.lin < kBulkMin);
    p.early = ctx->early && chain_bound && !clear && seq > 1 && kind == DQ_JOB_REORDER &&
        ctx->prev_kind == DQ_JOB_REORDER;
    /* from the previous submission's posts where its blocks' fit the block-wide read, else
     * from its last ticket (DQ_REORDER_NO_POSTS: always, for side-by-side benchmarks) */
    p.posts = ctx->posts && ctx->prev_grid <= kPostMaxGrid;
    p.prev_grid = ctx->prev_grid;
    p.prev_n = ctx->prev_n;
    p.prev_per_block = ctx->prev_per_block;
    p.prev_free_tail = ctx->prev_free_tail;
    ctx->prev_grid = grid;
    ctx->prev_n = n;
    ctx->prev_per_block = p.per_block;
    ctx->prev_kind = kind;
    ctx->prev_free_tail = p.free_tail;
    cudaError_t e = launch_k1 (ctx, grid, p);
    if (e != cudaSuccess)
      return cuda_fail (ctx->err, sizeof ctx->err, "reorder kernel launch", e);
    ctx->chain = 1;
    s->seq = seq;
    s->blocks = p.slot_through;   /* only a launched kernel's blocks will count there */
  }
  return launched (ctx, s, user, kind);
}

int
dq_reorder_gpu_submit (DqReorderGpu *ctx, const void *data, size_t size,
    const DqReorderPacket *pkts, uint32_t n, void *user)
{
  return submit (ctx, data, size, pkts, DESC_STAGED, 0, NULL, n, DQ_JOB_REORDER, 0, NULL, user);
}

int
dq_reorder_gpu_submit_device (DqReorderGpu *ctx, const void *data, size_t size,
    const DqReorderPacket *dev_pkts, uint32_t n, void *user)
{
  return submit (
      ctx, data, size, dev_pkts, DESC_RECORDS, 0, NULL, n, DQ_JOB_REORDER, 0, NULL, user);
}

int
dq_reorder_gpu_submit_stamped (DqReorderGpu *ctx, const void *data, size_t size,
    const DqReorderPacket *pkts, int pkts_readable, uint32_t n, uint64_t timestamp, void *user)
{
  return submit (ctx, data, size, pkts, pkts_readable ? DESC_RECORDS : DESC_STAGED, 0, &timestamp,
      n, DQ_JOB_REORDER, 0, NULL, user);
}

int
dq_reorder_gpu_submit_packed (DqReorderGpu *ctx, const void *data, size_t size,
    const uint64_t *packed, uint32_t n, uint64_t timestamp, void *user)
{
  return submit (ctx, data, size, packed, DESC_PACKED, 0, &timestamp, n, DQ_JOB_REORDER, 0, NULL,
      user);
}

int
dq_reorder_gpu_submit_words (DqReorderGpu *ctx, const void *data, size_t size,
    const uint32_t *words, uint32_t shift, uint32_t n, uint64_t timestamp, void *user)
{
  if (shift > DQ_REORDER_WORD_MAX_SHIFT) {
    snprintf (ctx->err, sizeof ctx->err, "stride words: shift %u is out of range (0..%u)", shift,
        DQ_REORDER_WORD_MAX_SHIFT);
    return DQ_REORDER_ERROR;
  }
  return submit (ctx, data, size, words, DESC_WORDS, shift, &timestamp, n, DQ_JOB_REORDER, 0,
      NULL, user);
}

int
dq_reorder_gpu_submit_word_runs (DqReorderGpu *ctx, const void *data, size_t size,
    const DqReorderWordRun *runs, uint32_t n_runs, uint32_t shift, void *user)
{
  const char *why = NULL;
  uint64_t n = 0;
  if (shift > DQ_REORDER_WORD_MAX_SHIFT)
    why = "shift";
  else if (n_runs == 0 || n_runs > DQ_REORDER_MAX_RUNS || !runs)
    why = "n_runs";
  else if (size > (size_t) DQ_REORDER_WORD_INDEX_MASK << shift)
    why = "data_size";
  for (uint32_t k = 0; !why && k < n_runs; k++) {
    if (runs[k].offset > size || runs[k].offset & ((1ull << shift) - 1)) {
      snprintf (ctx->err, sizeof ctx->err,
          "stride-word runs: run %u's offset %llu is not a multiple of the %u-byte stride "
          "within data_size %zu",
          k, (unsigned long long) runs[k].offset, 1u << shift, size);
      return DQ_REORDER_ERROR;
    }
    if (runs[k].n && !runs[k].words)
      why = "words";
    n += runs[k].n;
  }
  if (why) {
    snprintf (ctx->err, sizeof ctx->err,
        "stride-word runs: %s out of range (shift 0..%u, 1..%u runs with words, data_size at "
        "most %u strides); shift %u, %u runs, data_size %zu",
        why, DQ_REORDER_WORD_MAX_SHIFT, DQ_REORDER_MAX_RUNS, DQ_REORDER_WORD_INDEX_MASK, shift,
        n_runs, size);
    return DQ_REORDER_ERROR;
  }
  if (n > ctx->opt.max_packets) {
    snprintf (ctx->err, sizeof ctx->err, "stride-word runs of %llu packets exceed max_packets %u",
        (unsigned long long) n, ctx->opt.max_packets);
    return DQ_REORDER_ERROR;
  }
  const WordRuns wr = { runs, n_runs };
  return submit (ctx, data, size, &wr, DESC_WORD_RUNS, shift, NULL, (uint32_t) n, DQ_JOB_REORDER,
      0, NULL, user);
}

int
dq_reorder_gpu_flush (DqReorderGpu *ctx, DqFlushMode mode, void *user)
{
  if (mode != DQ_FLUSH_OLDEST && mode != DQ_FLUSH_ALL && mode != DQ_FLUSH_RESET) {
    snprintf (ctx->err, sizeof ctx->err, "flush mode %d unknown", (int) mode);
    return DQ_REORDER_ERROR;
  }
  return submit (ctx, NULL, 0, NULL, DESC_STAGED, 0, NULL, 0, DQ_JOB_FLUSH, (uint32_t) mode, NULL,
      user);
}

int
dq_reorder_gpu_gather (DqReorderGpu *ctx, const void *data, size_t size,
    const DqReorderPacket *pkts, uint32_t n, void *out, void *user)
{
  return submit (ctx, data, size, pkts, DESC_STAGED, 0, NULL, n, DQ_JOB_GATHER, 0, out, user);
}

int
dq_reorder_gpu_packetize (DqReorderGpu *ctx, const DqPacketizeTemplate *tmpl,
    const void *frame, uint64_t batch_id, void *out, size_t out_size, void *user)
{
  const DqReorderConfig *cfg = &ctx->cfg;
  if (dq_packetize_validate (cfg, tmpl, ctx->err, sizeof ctx->err) != 0)
    return DQ_REORDER_ERROR;
  uint32_t plen = dq_packetize_packet_length (cfg, tmpl), ppb = cfg->packets_per_batch;
  if ((uint64_t) (ppb - 1) * tmpl->packet_stride + plen > out_size) {
    snprintf (ctx->err, sizeof ctx->err, "packetize: %u packets of stride %u need %llu bytes, "
        "out has %zu", ppb, tmpl->packet_stride,
        (unsigned long long) ((uint64_t) (ppb - 1) * tmpl->packet_stride + plen), out_size);
    return DQ_REORDER_ERROR;
  }
  Slot *s = take_slot (ctx);
  if (!s)
    return DQ_REORDER_BUSY;
  PacketizeParams q;
  memset (&q, 0, sizeof q);
  if (tmpl->header_len)
    memcpy (q.header, tmpl->header, tmpl->header_len);
  q.header_len = tmpl->header_len;
  q.ipv4_off = tmpl->ipv4_offset;
  q.udp_off = tmpl->udp_offset;
  q.stride = tmpl->packet_stride;
  q.plen = plen;
  q.ppb = ppb;
  q.pay_off = cfg->payload_offset;
  q.pay_size = cfg->payload_size;
  set_key_fields (q, cfg);
  q.batch_id = batch_id;
  q.frame = (const uint8_t *) frame;
  q.out = (uint8_t *) out;
  q.res = s->res_d;
  const uint32_t per_block = kThreads / 32;
  DQ_LAUNCH (packetize_main, (ppb + per_block - 1) / per_block, kThreads, ctx->stream, q);
  ctx->chain = 0;
  return launched (ctx, s, user, DQ_JOB_PACKETIZE);
}

#ifdef DQ_CUDA_EMU
#define DQ_EMU_BUILD 1
#else
#define DQ_EMU_BUILD 0
#endif

/* not-ready polls of a K1 submission between two event queries */
static const uint32_t kQuietPolls = 64;

/* A K1 submission complete: its done word written (mark_done, reorder-kernels.cuh), and what
 * the kernel wrote before it visible (acquire). */
static bool
k1_done (const Slot *s)
{
  return s->seq && __atomic_load_n (&s->res->done, __ATOMIC_ACQUIRE) == s->seq;
}

/* One turn of a host thread's wait (the cores' spin-wait hint). */
static inline void
spin_turn (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __asm__ __volatile__ ("pause" ::: "memory");
#elif defined(__aarch64__)
  __asm__ __volatile__ ("yield" ::: "memory");
#endif
}

/* Whether slot s's kernels are done: 1, 0 (not yet, without wait) or an error. A K1 submission
 * by its done word, which its finalizer writes last: no call into the runtime while the word is
 * not written, except the event every kQuietPolls polls or turns of a wait, so that a failed
 * kernel is reported; a wait spins on the word, which lands as the kernel ends (an event's
 * completion is seen microseconds later). Other submissions by their event; on the emulator,
 * which runs kernels inside event queries and synchronizations, every submission. */
static int
slot_done (DqReorderGpu *ctx, Slot *s, int wait)
{
  for (;;) {
    if (k1_done (s))
      return 1;
    if (s->seq && !DQ_EMU_BUILD && ++ctx->quiet < kQuietPolls) {
      if (!wait)
        return 0;
      spin_turn ();
      continue;
    }
    ctx->quiet = 0;
    const bool sync = wait && (DQ_EMU_BUILD || !s->seq);
    const cudaError_t e = sync ? cudaEventSynchronize (s->done) : cudaEventQuery (s->done);
    if (e == cudaErrorNotReady) {
      if (!wait)
        return 0;
      continue;
    }
    if (e != cudaSuccess)
      return cuda_fail (ctx->err, sizeof ctx->err, "reorder kernels", e);
    if (s->seq && !k1_done (s)) {
      snprintf (ctx->err, sizeof ctx->err, "reorder kernel %llu completed without its done word",
          (unsigned long long) s->seq);
      return DQ_REORDER_ERROR;
    }
    return 1;
  }
}

int
dq_reorder_gpu_poll (DqReorderGpu *ctx, int wait, DqReorderCompletion *out)
{
  if (!ctx->inflight)
    return 0;
  Slot *s = &ctx->slots[ctx->oldest];
  const int done = slot_done (ctx, s, wait);
  if (done != 1)
    return done;
  const ResHdr *h = s->res;
  memset (out, 0, sizeof *out);
  out->user = s->user;
  out->kind = (DqJobKind) s->kind;
  out->job_short = h->job_short;
  if (s->kind == DQ_JOB_REORDER || s->kind == DQ_JOB_FLUSH) {
    out->n_batches = h->n_batches;
    out->batches = s->batches;
    out->n_released = h->n_released;
    out->released = s->released;
    ctx->stats = h->stats;
    ctx->window = h->window;
    ctx->head_known = h->free_head;
  }
  out->stats = ctx->stats;
  out->window = ctx->window;
  s->state = 0;
  ctx->oldest = (ctx->oldest + 1) % ctx->opt.max_inflight;
  ctx->inflight--;
  return 1;
}

uint32_t
dq_reorder_gpu_inflight (DqReorderGpu *ctx)
{
  return ctx->inflight;
}

void *
dq_reorder_gpu_stream (DqReorderGpu *ctx)
{
  return (void *) ctx->stream;
}

void *
dq_reorder_gpu_event (DqReorderGpu *ctx)
{
  return (void *) ctx->last_event;
}

}  /* extern "C" */
