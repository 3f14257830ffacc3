/* bench-reorder.c — reorder throughput, side by side in one run:
 *   CPU: the CPU twin's bytes/s on one core against memcpy of the same payloads (always);
 *   GPU: reorder against a device-to-device copy of the same payload bytes and against the
 *        reference design (one 128-thread block per packet, bench-kernels.cu), for payloads of
 *        64, 256, 1024 and 8192 bytes and batches of 1024..65536 packets; microseconds per
 *        1024-packet batch, and where it goes (gpu-batch1024-split: host time per submit and
 *        poll call, GPU time per submission queued behind a spinning kernel, latency of one
 *        submission alone and its GPU time (events on either side), the same for an empty
 *        kernel, the floor of a lone submission (a launch whose kernel writes a word the host
 *        spins on; its GPU time likewise) and the reference's batch alone (launch, stream
 *        synchronized); gpu-batch16384-split: the same for the 64 B target's 16384-packet
 *        batch, device descriptors); gpu-launch-params: the host's
 *        time per launch of an empty kernel with 8, 512 and 1408 bytes of parameters (in focus
 *        runs too); gpu-code-fetch: cycles of code an SM has not run lately against the same
 *        code again; int4/int8/int16 -> fp16/bf16/fp32
 *        against the plain reorder of the same packets, alternated three times (median).
 * One submission = one batch (descriptors in device memory unless "desc=host", "desc=packed" or
 * "desc=words": staged by the library, packed words in pinned memory, or stride words there as
 * daqirireorder takes daqirisrc memory=cuda bursts; the words on a pool of power-of-two strides
 * where a batch spans more than 2^18 of the pool's own, beside device descriptors on it:
 * words_stride), packets shuffled within the batch, nothing lost; except gpu-burst: submissions
 * of several consecutive batches, what a batch costs when a burst carries many (beside the
 * reference launched alike, and launched one batch at a time as the design does: ref_batch_us;
 * and with packed descriptors and stride words in pinned memory). The streamed regime is
 * gpu-burst with 65536 packets per submission for batches of 1024..16384 packets (and
 * gpu-reorder's 65536-packet batches): a stream submitted as a receive ring under heavy traffic
 * hands it over. The targets count the one-batch regime; the summary gives the streamed figures
 * beside them. Bandwidths count bytes read + bytes written. Input pools are several times the
 * L2; sequence numbers wrap exactly at the end of the pool, so cycling through it gives
 * ever-increasing batch ids.
 * Lines starting "bench " are machine-readable (key=value); the last line is the summary.
 * Environment: DQ_BENCH_QUICK=1 for a short run; DQ_BENCH_FOCUS=1 for the one-batch cases the
 * targets read only (no CPU part, no bursts, no conversions), to run two builds alternately;
 * with it, DQ_BENCH_CASES=PAYLOADxPACKETS,... (e.g. 2048x16384,8192x65536) for other one-batch
 * cases instead, and DQ_BENCH_BURSTS=PAYLOADxPACKETSxBATCHES,... (e.g. 64x1024x8) for gpu-burst
 * cases after them; DQ_BENCH_INFLIGHT=N for N submissions in flight (default 8). */
#include <math.h>
#include <stdarg.h>

#include "dq-bench-util.h"
#include "dq-test-util.h"

static int quick, focus;

/* seconds, monotonic */
static double
now (void)
{
  return (double) dq_bench_mono_ns () * 1e-9;
}

static uint32_t
log2u (uint64_t v)
{
  uint32_t l = 0;
  while ((1ull << l) < v)
    l++;
  return l;
}

/* A pool of nb batches of ppb packets: stride bytes apart (a multiple of 64, or with pow2 the
 * power of two that holds a packet, as a ring of strides that size), header with the BE
 * sequence number in its last 4 bytes before the payload, packets of each batch in a random
 * order. */
typedef struct {
  uint32_t P, ppb, nb, stride, off;
  uint8_t *data;
  size_t size;
  DqReorderPacket *desc;
} Pool;

static void
pool_make (Pool *p, uint32_t P, uint32_t ppb, uint32_t off, uint64_t target_bytes, uint32_t min_nb,
    int pow2)
{
  memset (p, 0, sizeof *p);
  p->P = P;
  p->ppb = ppb;
  p->off = off;
  p->stride = (off + P + 63) & ~63u;
  if (pow2)
    p->stride = 1u << log2u (p->stride);
  uint64_t per = (uint64_t) ppb * p->stride;
  uint32_t nb = min_nb;
  while ((uint64_t) nb * per < target_bytes)
    nb *= 2;
  p->nb = nb;
  p->size = (size_t) nb * per;
  p->data = malloc (p->size);
  p->desc = malloc ((size_t) nb * ppb * sizeof *p->desc);
  if (!p->data || !p->desc) {
    fprintf (stderr, "out of memory for a %zu-byte pool\n", p->size);
    exit (2);
  }
  DqRng rng = { 42 + P + ppb };
  uint32_t *perm = malloc (ppb * sizeof *perm);
  uint8_t *pattern = malloc (P + 256);
  for (uint32_t j = 0; j < P + 256; j++)
    pattern[j] = (uint8_t) (j * 31 + 7);
  for (uint32_t b = 0; b < nb; b++) {
    for (uint32_t s = 0; s < ppb; s++)
      perm[s] = s;
    for (uint32_t s = ppb; s > 1; s--) {
      uint32_t k = dqt_below (&rng, s), t = perm[s - 1];
      perm[s - 1] = perm[k];
      perm[k] = t;
    }
    for (uint32_t k = 0; k < ppb; k++) {
      uint32_t s = perm[k];
      size_t o = ((size_t) b * ppb + s) * p->stride;
      uint8_t *pk = p->data + o;
      memset (pk, 0, off);
      uint32_t seq = b * ppb + s;
      pk[off - 4] = (uint8_t) (seq >> 24);
      pk[off - 3] = (uint8_t) (seq >> 16);
      pk[off - 2] = (uint8_t) (seq >> 8);
      pk[off - 1] = (uint8_t) seq;
      memcpy (pk + off, pattern + (seq & 255), P); /* differs from packet to packet */
      p->desc[(size_t) b * ppb + k] = (DqReorderPacket){ (uint32_t) o, off + P, 0, 0, o };
    }
  }
  free (perm);
  free (pattern);
}

static void
pool_free (Pool *p)
{
  free (p->data);
  free (p->desc);
}

static DqReorderConfig
pool_cfg (const Pool *p, DqElemType in, DqElemType out)
{
  DqReorderConfig c;
  dq_reorder_config_init (&c);
  c.seq_bit_offset = (p->off - 4) * 8;
  c.seq_bit_width = log2u ((uint64_t) p->nb * p->ppb); /* wraps exactly at the pool's end */
  c.seq_bit_offset += 32 - c.seq_bit_width;
  c.packets_per_batch = p->ppb;
  c.payload_offset = p->off;
  c.payload_size = p->P;
  c.input_type = in;
  c.output_type = out;
  c.window = 2;
  return c;
}

/* ---- CPU --------------------------------------------------------------------------------- */

static double cpu_min_ratio = 1e9;

/* What the CPU benchmark's passes work on: the reorderer, its pool of packets, and the
 * four frames the reorderer fills in turn (fsz bytes each). */
typedef struct {
  DqReorderCpu *c;
  const Pool *p;
  uint8_t *const *frames;
  uint64_t fsz, npk;
  uint32_t ppb, burst, P;
} CpuBench;

/* Calls pass until min_t seconds have gone by; returns the units (packets, frames) the
 * passes did per second, each pass returning how many it did given how many were done
 * before it. */
static double
units_per_second (const CpuBench *b, double min_t, uint64_t (*pass) (const CpuBench *, uint64_t))
{
  uint64_t done = 0;
  double t0 = now (), t;
  do {
    done += pass (b, done);
    t = now () - t0;
  } while (t < min_t);
  return (double) done / t;
}

/* reorder: bursts of `burst` packets, frames back at once */
static uint64_t
pass_reorder (const CpuBench *b, uint64_t done)
{
  for (uint64_t k = 0; k < b->npk; k += b->burst) {
    DqReorderCompletion out;
    dq_reorder_cpu_push (b->c, b->p->data, b->p->size, b->p->desc + k, b->burst, &out);
    for (uint32_t j = 0; j < out.n_batches; j++)
      dq_reorder_cpu_add_frame (b->c, out.batches[j].frame, NULL);
  }
  return b->npk;
}

/* memcpy of the same payloads to the same slots, in the same order */
static uint64_t
pass_memcpy (const CpuBench *b, uint64_t done)
{
  const Pool *p = b->p;
  for (uint64_t k = 0; k < b->npk; k++) {
    const DqReorderPacket *d = &p->desc[k];
    uint32_t slot = (uint32_t) ((d->offset / p->stride) % b->ppb);
    memcpy (b->frames[k / b->ppb & 3] + (size_t) slot * b->P, p->data + d->offset + p->off, b->P);
  }
  return b->npk;
}

/* one bulk memcpy of a frame's bytes */
static uint64_t
pass_bulk (const CpuBench *b, uint64_t done)
{
  memcpy (b->frames[done & 3], b->p->data + (done & 1) * 64, b->fsz);
  return 1;
}

static void
bench_cpu (uint32_t P)
{
  const uint32_t ppb = 1024, burst = 256;
  Pool p;
  pool_make (&p, P, ppb, 64, quick ? (8u << 20) : (64u << 20), 4, 0);
  DqReorderConfig cfg = pool_cfg (&p, DQ_ELEM_SAME, DQ_ELEM_SAME);
  DqReorderCpu *c = dq_reorder_cpu_new (&cfg, NULL, 0);
  uint64_t fsz = dq_reorder_frame_size (&cfg);
  uint8_t *frames[4];
  for (int i = 0; i < 4; i++) {
    frames[i] = malloc (fsz);
    memset (frames[i], 0, fsz);
    dq_reorder_cpu_add_frame (c, frames[i], NULL);
  }
  CpuBench b = { c, &p, frames, fsz, (uint64_t) p.nb * ppb, ppb, burst, P };
  const double min_t = quick ? 0.05 : 0.3;
  double reorder_bps = units_per_second (&b, min_t, pass_reorder) * P;
  double memcpy_bps = units_per_second (&b, min_t, pass_memcpy) * P;
  double bulk_bps = units_per_second (&b, min_t, pass_bulk) * fsz;
  double r = reorder_bps / memcpy_bps;
  if (r < cpu_min_ratio)
    cpu_min_ratio = r;
  printf ("bench cpu-reorder payload=%u burst=%u ppb=%u MBps=%.0f memcpy_MBps=%.0f "
          "bulk_memcpy_MBps=%.0f vs_memcpy=%.2f vs_bulk=%.2f\n",
      P, burst, ppb, reorder_bps / 1e6, memcpy_bps / 1e6, bulk_bps / 1e6, r,
      reorder_bps / bulk_bps);
  fflush (stdout);
  dq_reorder_cpu_free (c);
  for (int i = 0; i < 4; i++)
    free (frames[i]);
  pool_free (&p);
}

/* ---- GPU --------------------------------------------------------------------------------- */

#ifndef DQ_BENCH_NO_CUDA
int bench_reference_reorder (void *stream, void *out, const void *const *dev_in, uint32_t n,
    uint32_t len, uint32_t off, uint32_t seq_off, uint32_t seq_w, uint32_t ppb);
int bench_d2d (void *stream, void *dst, const void *src, size_t bytes);
void *bench_event_new (void);
void bench_event_free (void *e);
int bench_event_record (void *e, void *stream);
double bench_event_ms (void *a, void *b);
void *bench_stream_new (void);
int bench_sync (void);
int bench_empty_launches (void *stream, uint32_t n);
int bench_empty_launches_params (void *stream, uint32_t n, uint32_t bytes);
int bench_code_fetch (double *cold_cycles, double *warm_cycles, int *blocks);
int bench_spin (void *stream, double us);
int bench_flag_launch (void *stream, unsigned long long *flag, unsigned long long v);

typedef struct {
  Pool hp;
  uint8_t *d_data;
  DqReorderPacket *d_desc;
  DqReorderPacket *m_desc; /* the descriptors in pinned host memory the GPU reads */
  uint64_t *m_packed;      /* the same packed, offset | length << 32 */
  uint32_t *m_words;       /* the same as stride words (gpool_words) */
  uint32_t word_shift;     /* their strides: the largest power of two the pool's stride is of */
  void **d_ptrs;
} GPool;

static void
gpool_make (GPool *g, uint32_t P, uint32_t ppb, uint32_t off, uint64_t target, int pow2)
{
  pool_make (&g->hp, P, ppb, off, target, 4, pow2);
  Pool *p = &g->hp;
  size_t nd = (size_t) p->nb * ppb;
  g->d_data = dq_cuda_malloc (p->size);
  g->d_desc = dq_cuda_malloc (nd * sizeof *g->d_desc);
  g->d_ptrs = dq_cuda_malloc (nd * sizeof (void *));
  g->m_desc = dq_cuda_malloc_host (nd * sizeof *g->m_desc);
  g->m_packed = dq_cuda_malloc_host (nd * sizeof *g->m_packed);
  g->m_words = dq_cuda_malloc_host (nd * sizeof *g->m_words);
  void **hp = malloc (nd * sizeof (void *));
  if (!g->d_data || !g->d_desc || !g->d_ptrs || !g->m_desc || !g->m_packed || !g->m_words || !hp) {
    fprintf (stderr, "GPU pool of %zu bytes: %s\n", p->size, dq_cuda_last_error ());
    exit (2);
  }
  for (size_t k = 0; k < nd; k++)
    hp[k] = g->d_data + p->desc[k].offset;
  dq_cuda_memcpy (g->d_data, p->data, p->size);
  dq_cuda_memcpy (g->d_desc, p->desc, nd * sizeof *g->d_desc);
  dq_cuda_memcpy (g->d_ptrs, hp, nd * sizeof (void *));
  memcpy (g->m_desc, p->desc, nd * sizeof *g->m_desc);
  for (size_t k = 0; k < nd; k++)
    g->m_packed[k] = p->desc[k].offset | (uint64_t) p->desc[k].length << 32;
  free (hp);
}

static void
gpool_free (GPool *g)
{
  dq_cuda_free (g->d_data);
  dq_cuda_free (g->d_desc);
  dq_cuda_free (g->d_ptrs);
  dq_cuda_free_host (g->m_desc);
  dq_cuda_free_host (g->m_packed);
  dq_cuda_free_host (g->m_words);
  pool_free (&g->hp);
}

/* The pool's descriptors as stride words for submissions of `per` batches, each word relative
 * to its submission's first byte (as a source's burst lies in one receive WQE); FALSE where a
 * submission spans more strides than a word indexes (the element's bursts never do). */
static int
gpool_words (GPool *g, uint32_t per)
{
  const Pool *p = &g->hp;
  const size_t span = (size_t) per * p->ppb * p->stride;
  g->word_shift = 0;
  while (g->word_shift < DQ_REORDER_WORD_MAX_SHIFT && !(p->stride >> g->word_shift & 1))
    g->word_shift++;
  if (span > (size_t) (DQ_REORDER_WORD_INDEX_MASK + 1) << g->word_shift)
    return 0;
  for (size_t k = 0; k < (size_t) p->nb * p->ppb; k++) {
    const size_t base = k / ((size_t) per * p->ppb) * span;
    g->m_words[k] = (uint32_t) ((p->desc[k].offset - base) >> g->word_shift) |
        p->desc[k].length << DQ_REORDER_WORD_LENGTH_SHIFT;
  }
  return 1;
}

static uint32_t
batches_for (uint64_t batch_bytes)
{
  uint64_t k = (quick ? (256ull << 20) : (4ull << 30)) / (batch_bytes ? batch_bytes : 1);
  if (k < 16)
    k = 16;
  if (k > (quick ? 300u : 4000u))
    k = quick ? 300 : 4000;
  return (uint32_t) k;
}

/* Where a submission's descriptors are: device memory (submit_device), host memory (submit: the
 * context stages them), pinned host memory the kernels read across the bus (submit_device), the
 * same packed, 8 bytes a packet (submit_packed, every packet the batch's first's timestamp), or
 * as stride words, 4 bytes a packet (submit_words, the same stamps; daqirireorder's path). */
enum { DESC_DEVICE, DESC_HOST, DESC_PINNED, DESC_PACKED, DESC_WORDS };

/* The n packets of the pool from packet `first` in one submission, their descriptors as `desc`
 * says (DESC_WORDS: made by gpool_words for this submission size; the submission's own bytes,
 * as a source's burst). */
static int
submit_desc (DqReorderGpu *ctx, GPool *g, int desc, size_t first, uint32_t n)
{
  const Pool *p = &g->hp;
  switch (desc) {
    case DESC_HOST:
      return dq_reorder_gpu_submit (ctx, g->d_data, p->size, p->desc + first, n, NULL);
    case DESC_PINNED:
      return dq_reorder_gpu_submit_device (ctx, g->d_data, p->size, g->m_desc + first, n, NULL);
    case DESC_PACKED:
      return dq_reorder_gpu_submit_packed (
          ctx, g->d_data, p->size, g->m_packed + first, n, p->desc[first].timestamp, NULL);
    case DESC_WORDS:
      return dq_reorder_gpu_submit_words (ctx, g->d_data + first * p->stride,
          (size_t) n * p->stride, g->m_words + first, g->word_shift, n, p->desc[first].timestamp,
          NULL);
    default:
      return dq_reorder_gpu_submit_device (ctx, g->d_data, p->size, g->d_desc + first, n, NULL);
  }
}

/* Reorder K batches back to back; returns ms (GPU time between events). */
static void
recycle (DqReorderGpu *ctx, const DqReorderCompletion *c)
{
  for (uint32_t j = 0; j < c->n_batches; j++)
    if (c->batches[j].frame)
      dq_reorder_gpu_add_frame (ctx, c->batches[j].frame, NULL);
}

/* A context for batches of ppb packets with `inflight` submission slots and nf frames of
 * device memory given to it (freed by ctx_free). */
static DqReorderGpu *
ctx_new (const DqReorderConfig *cfg, uint32_t ppb, uint32_t inflight, int nf, void **frames)
{
  DqReorderGpuOptions o = { ppb, inflight, 2 * (uint32_t) nf, -1, NULL };
  char msg[256];
  DqReorderGpu *ctx = dq_reorder_gpu_new (cfg, &o, msg, sizeof msg);
  if (!ctx) {
    fprintf (stderr, "dq_reorder_gpu_new: %s\n", msg);
    exit (2);
  }
  uint64_t fsz = dq_reorder_frame_size (cfg);
  for (int i = 0; i < nf; i++) {
    frames[i] = dq_cuda_malloc (fsz);
    dq_reorder_gpu_add_frame (ctx, frames[i], NULL);
  }
  return ctx;
}

static void
ctx_free (DqReorderGpu *ctx, int nf, void **frames)
{
  dq_reorder_gpu_free (ctx);
  for (int i = 0; i < nf; i++)
    dq_cuda_free (frames[i]);
}

static double
run_reorder (
    GPool *g, const DqReorderConfig *cfg, uint32_t K, uint32_t per, int desc, uint64_t *no_frame)
{
  Pool *p = &g->hp;
  /* frames: the window, and each submission in flight may complete all its batches */
  /* submissions in flight: 8 (a submission takes ~22 us from submit to its completion seen by
   * the host, so with 4 the host waited and paced one-batch submissions to ~6 us; H200, side by
   * side: 64 B x 16384 5.5-6.9 against 6.6 us, 1 KB x 16384 10.5 against 11.7 us).
   * DQ_BENCH_INFLIGHT=N: N, for side-by-side runs. */
  uint32_t infl = 8;
  if (getenv ("DQ_BENCH_INFLIGHT"))
    infl = (uint32_t) atoi (getenv ("DQ_BENCH_INFLIGHT"));
  if (!infl)
    infl = 1;
  const int NF = (int) infl * ((int) per + 1) + (int) cfg->window + 6;
  void **frames = malloc (NF * sizeof *frames);
  const uint32_t n = per * p->ppb;
  DqReorderGpu *ctx = ctx_new (cfg, n, infl, NF, frames);
  void *e0 = bench_event_new (), *e1 = bench_event_new ();
  void *stream = dq_reorder_gpu_stream (ctx);
  uint32_t warm = 4;
  DqReorderCompletion c;
  for (uint32_t k = 0; k < warm + K; k++) {
    if (k == warm)
      bench_event_record (e0, stream);
    const size_t first = (size_t) ((uint64_t) k * per % p->nb) * p->ppb;
    for (;;) {
      int rc = submit_desc (ctx, g, desc, first, n);
      if (rc == 0)
        break;
      if (rc != DQ_REORDER_BUSY) {
        fprintf (stderr, "submit: %s\n", dq_reorder_gpu_error (ctx));
        exit (2);
      }
      if (dq_reorder_gpu_poll (ctx, 1, &c) == 1)
        recycle (ctx, &c);
    }
    /* completions: recycle frames without waiting */
    while (dq_reorder_gpu_poll (ctx, 0, &c) == 1)
      recycle (ctx, &c);
  }
  bench_event_record (e1, stream);
  while (dq_reorder_gpu_poll (ctx, 1, &c) == 1)
    ;
  double ms = bench_event_ms (e0, e1);
  *no_frame = c.stats.no_frame;
  if (c.stats.complete != c.stats.batches)
    fprintf (stderr, "warning: %llu of %llu batches incomplete\n",
        (unsigned long long) (c.stats.batches - c.stats.complete),
        (unsigned long long) c.stats.batches);
  bench_event_free (e0);
  bench_event_free (e1);
  ctx_free (ctx, NF, frames);
  free (frames);
  return ms;
}

/* Batch k of the pool (cycling), one a submission, with its descriptors as `desc` says. */
static int
split_submit (DqReorderGpu *ctx, GPool *g, int desc, uint32_t k)
{
  return submit_desc (ctx, g, desc, (size_t) (k % g->hp.nb) * g->hp.ppb, g->hp.ppb);
}

/* Where a small batch's time goes: the host's time per submit call and per poll call; the GPU's
 * own time per submission, with Q submissions queued behind a spinning kernel (so that the host's
 * launch rate does not pace them); the latency of one submission alone (submit, poll with wait)
 * and its GPU time; the same for an empty kernel, and the floor and the reference alone. */
static void
bench_batch_split (GPool *g, const DqReorderConfig *cfg, int desc)
{
  Pool *p = &g->hp;
  enum { Q = 48, NF = Q + 8, LAT = 31 };
  void *frames[NF];
  DqReorderGpu *ctx = ctx_new (cfg, p->ppb, Q, NF, frames);
  void *e0 = bench_event_new (), *e1 = bench_event_new ();
  void *stream = dq_reorder_gpu_stream (ctx);
  DqReorderCompletion c;
  uint32_t k = 0;
  for (int w = 0; w < 4; w++) {
    split_submit (ctx, g, desc, k++);
    while (dq_reorder_gpu_poll (ctx, 1, &c) == 1)
      recycle (ctx, &c);
  }
  double gpu_us = 0, submit_us = 0, enqueue_us = 0, notready_us = 0, ready_us = 0;
  const int rounds = 3;
  for (int r = 0; r < rounds; r++) {
    bench_spin (stream, Q * 40.0);
    bench_event_record (e0, stream);
    double t0 = now ();
    for (int q = 0; q < Q; q++)
      if (split_submit (ctx, g, desc, k++) != 0) {
        fprintf (stderr, "submit: %s\n", dq_reorder_gpu_error (ctx));
        exit (2);
      }
    double t1 = now ();
    bench_event_record (e1, stream);
    const int NR = 100;
    for (int q = 0; q < NR; q++)
      dq_reorder_gpu_poll (ctx, 0, &c);
    double t2 = now ();
    gpu_us += bench_event_ms (e0, e1) * 1e3 / Q;
    double t3 = now ();
    int got = 0;
    while (dq_reorder_gpu_poll (ctx, 0, &c) == 1) {
      recycle (ctx, &c);
      got++;
    }
    double t4 = now ();
    submit_us += (t1 - t0) * 1e6 / Q;
    enqueue_us += (t1 - t0) * 1e6;
    notready_us += (t2 - t1) * 1e6 / NR;
    ready_us += (t4 - t3) * 1e6 / (got ? got : 1);
  }
  double lat[LAT];
  for (int r = 0; r < LAT; r++) {
    double t0 = now ();
    split_submit (ctx, g, desc, k++);
    dq_reorder_gpu_poll (ctx, 1, &c);
    lat[r] = (now () - t0) * 1e6;
    recycle (ctx, &c);
  }
  /* the GPU's own time for a submission alone: events on either side of it */
  double lone_gpu[LAT];
  for (int r = 0; r < LAT; r++) {
    bench_event_record (e0, stream);
    split_submit (ctx, g, desc, k++);
    bench_event_record (e1, stream);
    dq_reorder_gpu_poll (ctx, 1, &c);
    recycle (ctx, &c);
    lone_gpu[r] = bench_event_ms (e0, e1) * 1e3;
  }
  dq_bench_sort_doubles (lat, LAT);
  dq_bench_sort_doubles (lone_gpu, LAT);
  /* the floor of a lone submission (one launch whose kernel writes a word the host spins on) and
   * the reference's batch alone (its launch, then the stream synchronized), the same way */
  double flag_lat[LAT], ref_lat[LAT], flag_gpu[LAT];
  unsigned long long *flag = dq_cuda_malloc_host (sizeof *flag);
  void *ref_out = dq_cuda_malloc ((size_t) p->ppb * p->P);
  if (!flag || !ref_out) {
    fprintf (stderr, "out of memory for the latency floor\n");
    exit (2);
  }
  *flag = 0;
  for (int r = 0; r < LAT; r++) {
    const unsigned long long v = (unsigned long long) r + 1;
    double t0 = now ();
    bench_flag_launch (stream, flag, v);
    while (__atomic_load_n (flag, __ATOMIC_ACQUIRE) != v)
      ;
    flag_lat[r] = (now () - t0) * 1e6;
    bench_event_record (e0, stream);
    bench_flag_launch (stream, flag, v + 1000);
    bench_event_record (e1, stream);
    flag_gpu[r] = bench_event_ms (e0, e1) * 1e3;
    t0 = now ();
    bench_reference_reorder (stream, ref_out,
        (const void *const *) (g->d_ptrs + (size_t) (r % p->nb) * p->ppb), p->ppb, p->P, p->off,
        (p->off - 4) * 8, 32, p->ppb);
    dq_cuda_stream_synchronize (stream);
    ref_lat[r] = (now () - t0) * 1e6;
  }
  dq_bench_sort_doubles (flag_lat, LAT);
  dq_bench_sort_doubles (ref_lat, LAT);
  dq_bench_sort_doubles (flag_gpu, LAT);
  dq_cuda_free_host (flag);
  dq_cuda_free (ref_out);
  /* the empty kernel, the same ways */
  bench_spin (stream, 2000.0);
  bench_event_record (e0, stream);
  double t0 = now ();
  bench_empty_launches (stream, 200);
  double empty_host_us = (now () - t0) * 1e6 / 200;
  bench_event_record (e1, stream);
  double empty_gpu_us = bench_event_ms (e0, e1) * 1e3 / 200;
  printf (
      "bench gpu-batch%u-split payload=%u desc=%s host_submit_us=%.2f host_poll_ready_us=%.2f "
      "host_poll_notready_us=%.2f gpu_queued_us=%.2f enqueue_us=%.0f spin_us=%.0f "
      "latency_us_min=%.2f latency_us_med=%.2f floor_latency_us_med=%.2f ref_latency_us_med=%.2f "
      "lone_gpu_us_med=%.2f floor_gpu_us_med=%.2f empty_host_us=%.2f empty_gpu_queued_us=%.2f\n",
      p->ppb, p->P,
      desc == DESC_HOST         ? "host"
          : desc == DESC_PACKED ? "packed"
          : desc == DESC_WORDS  ? "words"
                                : "device",
      submit_us / rounds, ready_us / rounds, notready_us / rounds, gpu_us / rounds,
      enqueue_us / rounds, Q * 40.0, lat[0], lat[LAT / 2], flag_lat[LAT / 2], ref_lat[LAT / 2],
      lone_gpu[LAT / 2], flag_gpu[LAT / 2], empty_host_us, empty_gpu_us);
  fflush (stdout);
  bench_event_free (e0);
  bench_event_free (e1);
  ctx_free (ctx, NF, frames);
}

/* Records e1 on stream, frees both events and returns the milliseconds from e0 to e1. */
static double
event_span_ms (void *stream, void *e0, void *e1)
{
  bench_event_record (e1, stream);
  double ms = bench_event_ms (e0, e1);
  bench_event_free (e0);
  bench_event_free (e1);
  return ms;
}

static double
run_reference (GPool *g, void *stream, uint32_t K, uint32_t per)
{
  Pool *p = &g->hp;
  void *out = dq_cuda_malloc ((size_t) p->ppb * p->P);
  void *e0 = bench_event_new (), *e1 = bench_event_new ();
  for (uint32_t k = 0; k < K + 4; k++) {
    if (k == 4)
      bench_event_record (e0, stream);
    bench_reference_reorder (stream, out,
        (const void *const *) (g->d_ptrs + (size_t) ((uint64_t) k * per % p->nb) * p->ppb),
        per * p->ppb, p->P, p->off, (p->off - 4) * 8, 32, p->ppb);
  }
  double ms = event_span_ms (stream, e0, e1);
  dq_cuda_free (out);
  return ms;
}

static double
run_copy (GPool *g, void *stream, uint32_t K, uint32_t per)
{
  Pool *p = &g->hp;
  size_t bytes = (size_t) per * p->ppb * p->P;
  void *out = dq_cuda_malloc (bytes);
  void *e0 = bench_event_new (), *e1 = bench_event_new ();
  size_t span = p->size - bytes;
  for (uint32_t k = 0; k < K + 4; k++) {
    if (k == 4)
      bench_event_record (e0, stream);
    size_t at = span ? ((size_t) ((uint64_t) k * per % p->nb) * p->ppb * p->stride) % span : 0;
    bench_d2d (stream, out, g->d_data + (at & ~(size_t) 255), bytes);
  }
  double ms = event_span_ms (stream, e0, e1);
  dq_cuda_free (out);
  return ms;
}

/* results for the summary: [0] over every batch size, [1] over batches >= 16384 packets (the
 * throughput regime; small batches are bound by launch latency) */
static double r64_vs_ref[2] = { 1e9, 1e9 }, r64_vs_ref_max = 0, r256_vs_copy[2] = { 1e9, 1e9 },
              r1k_vs_copy[2] = { 1e9, 1e9 }, us_1024 = 0, us_1024_host = 0, conv_min = 1e9,
              host_vs_device = 0, packed_vs_device = 0, words_vs_device = 0;

static void
take_min (double *m, double v, uint32_t ppb)
{
  if (v < m[0])
    m[0] = v;
  if (ppb >= 16384 && v < m[1])
    m[1] = v;
}

/* the streamed regime (submissions of 65536 packets), over batch sizes 1024..65536 */
static double st64_ref_min = 1e9, st64_ref_max = 0, st256_copy_min = 1e9, st1k_copy_min = 1e9;

static void
take_streamed (uint32_t P, double vs_ref, double vs_copy)
{
  if (P == 64) {
    st64_ref_min = vs_ref < st64_ref_min ? vs_ref : st64_ref_min;
    st64_ref_max = vs_ref > st64_ref_max ? vs_ref : st64_ref_max;
  }
  if (P == 256 && vs_copy < st256_copy_min)
    st256_copy_min = vs_copy;
  if (P >= 1024 && vs_copy < st1k_copy_min)
    st1k_copy_min = vs_copy;
}

static void
bench_gpu_reorder (uint32_t P, uint32_t ppb, uint32_t off, void *stream)
{
  GPool g;
  const uint64_t target = quick ? (64ull << 20) : (256ull << 20);
  gpool_make (&g, P, ppb, off, target, 0);
  DqReorderConfig cfg = pool_cfg (&g.hp, DQ_ELEM_SAME, DQ_ELEM_SAME);
  uint64_t batch_bytes = (uint64_t) ppb * P * 2;
  uint32_t K = batches_for (batch_bytes);
  uint64_t nf = 0;
  double ms = run_reorder (&g, &cfg, K, 1, DESC_DEVICE, &nf);
  /* descriptors in host memory (staged); in pinned memory, as records and packed */
  double ms_host = run_reorder (&g, &cfg, K, 1, DESC_HOST, &nf);
  double ms_pinned = run_reorder (&g, &cfg, K, 1, DESC_PINNED, &nf);
  double ms_packed = run_reorder (&g, &cfg, K, 1, DESC_PACKED, &nf);
  /* as stride words (daqirireorder's path): where a batch spans more of the pool's 64-byte
   * strides than a word indexes, beside device descriptors on a pool of power-of-two strides
   * (a ring whose stride holds a packet, as a receive WQE's batch never spans more) */
  double ms_words, ms_words_dev = ms;
  uint32_t words_stride = g.hp.stride;
  if (gpool_words (&g, 1)) {
    ms_words = run_reorder (&g, &cfg, K, 1, DESC_WORDS, &nf);
  } else {
    GPool g2;
    gpool_make (&g2, P, ppb, off, target, 1);
    DqReorderConfig cfg2 = pool_cfg (&g2.hp, DQ_ELEM_SAME, DQ_ELEM_SAME);
    words_stride = g2.hp.stride;
    ms_words_dev = run_reorder (&g2, &cfg2, K, 1, DESC_DEVICE, &nf);
    ms_words = gpool_words (&g2, 1) ? run_reorder (&g2, &cfg2, K, 1, DESC_WORDS, &nf) : NAN;
    gpool_free (&g2);
  }
  double ms_ref = run_reference (&g, stream, K, 1);
  double ms_copy = run_copy (&g, stream, K, 1);
  double gb = (double) K * batch_bytes / 1e9;
  double gbps = gb / (ms / 1e3), ref = gb / (ms_ref / 1e3), cp = gb / (ms_copy / 1e3);
  printf ("bench gpu-reorder payload=%u ppb=%u offset=%u batches=%u GBps=%.1f copy_GBps=%.1f "
          "ref_GBps=%.1f vs_copy=%.3f vs_ref=%.2f us_per_batch=%.2f us_host_desc=%.2f "
          "host_vs_device=%.2f us_pinned_desc=%.2f pinned_vs_device=%.2f us_packed_desc=%.2f "
          "packed_vs_device=%.2f us_words_desc=%.2f words_vs_device=%.2f words_stride=%u "
          "ref_us_per_batch=%.2f Mpps=%.0f no_frame=%llu\n",
      P, ppb, off, K, gbps, cp, ref, gbps / cp, gbps / ref, ms * 1e3 / K, ms_host * 1e3 / K,
      ms_host / ms, ms_pinned * 1e3 / K, ms_pinned / ms, ms_packed * 1e3 / K, ms_packed / ms,
      ms_words * 1e3 / K, ms_words / ms_words_dev, words_stride, ms_ref * 1e3 / K,
      (double) K * ppb / (ms / 1e3) / 1e6, (unsigned long long) nf);
  if (ms_host / ms > host_vs_device)
    host_vs_device = ms_host / ms;
  if (ms_packed / ms > packed_vs_device)
    packed_vs_device = ms_packed / ms;
  if (ms_words / ms_words_dev > words_vs_device)
    words_vs_device = ms_words / ms_words_dev;
  fflush (stdout);
  if (off == 64) {
    if (P == 64) {
      take_min (r64_vs_ref, gbps / ref, ppb);
      if (gbps / ref > r64_vs_ref_max)
        r64_vs_ref_max = gbps / ref;
    }
    if (P == 256)
      take_min (r256_vs_copy, gbps / cp, ppb);
    if (P >= 1024)
      take_min (r1k_vs_copy, gbps / cp, ppb);
    if (ppb == 65536)
      take_streamed (P, gbps / ref, gbps / cp);
  }
  if (ppb == 1024 && P == 64 && off == 64) {
    us_1024 = ms * 1e3 / K;
    us_1024_host = ms_host * 1e3 / K;
    bench_batch_split (&g, &cfg, DESC_DEVICE);
    bench_batch_split (&g, &cfg, DESC_HOST);
    bench_batch_split (&g, &cfg, DESC_PACKED);
    bench_batch_split (&g, &cfg, DESC_WORDS);
  }
  if (ppb == 16384 && P == 64 && off == 64) /* the 64 B target's batch: the same split */
    bench_batch_split (&g, &cfg, DESC_DEVICE);
  gpool_free (&g);
}

/* Bursts of `per` consecutive batches of ppb packets in one submission (as a receive ring under
 * heavy traffic hands them over): what a batch costs once the fixed cost of a submission is
 * shared; the copy and the reference do the same bytes and packets per launch. */
static double us_burst64 = 0;

static void
bench_gpu_burst (uint32_t P, uint32_t ppb, uint32_t per, uint32_t window, void *stream)
{
  GPool g;
  /* at least one burst (the pool holds a power of two of batches, so a whole number of them) */
  uint64_t target = quick ? (64ull << 20) : (256ull << 20);
  if (target < (uint64_t) per * ppb * (P + 128))
    target = (uint64_t) per * ppb * (P + 128);
  gpool_make (&g, P, ppb, 64, target, 0);
  if (g.hp.nb % per) {
    fprintf (
        stderr, "bench gpu-burst: a pool of %u batches does not hold bursts of %u\n", g.hp.nb, per);
    exit (2);
  }
  DqReorderConfig cfg = pool_cfg (&g.hp, DQ_ELEM_SAME, DQ_ELEM_SAME);
  cfg.window = window;
  uint64_t batch_bytes = (uint64_t) ppb * P * 2;
  uint32_t K = batches_for (batch_bytes * per);
  uint64_t nf = 0;
  double ms = run_reorder (&g, &cfg, K, per, DESC_DEVICE, &nf);
  /* descriptors in pinned memory, packed, and as stride words (as daqirireorder takes daqirisrc
   * memory=cuda bursts) where a burst fits a word's strides */
  uint64_t nf_packed = 0, nf_words = 0;
  double ms_packed = run_reorder (&g, &cfg, K, per, DESC_PACKED, &nf_packed);
  double ms_words =
      gpool_words (&g, per) ? run_reorder (&g, &cfg, K, per, DESC_WORDS, &nf_words) : NAN;
  double ms_ref = run_reference (&g, stream, K, per);
  /* the reference as the design runs it: one launch a batch */
  double ms_ref1 = run_reference (&g, stream, K * per, 1);
  double ms_copy = run_copy (&g, stream, K, per);
  double gb = (double) K * per * batch_bytes / 1e9;
  double gbps = gb / (ms / 1e3), ref = gb / (ms_ref / 1e3), cp = gb / (ms_copy / 1e3);
  double us = ms * 1e3 / ((double) K * per);
  printf ("bench gpu-burst payload=%u ppb=%u batches_per_burst=%u window=%u bursts=%u "
          "us_per_batch=%.3f us_per_burst=%.2f GBps=%.1f copy_GBps=%.1f ref_GBps=%.1f vs_copy=%.3f "
          "vs_ref=%.2f ref_batch_us=%.3f vs_ref_batch=%.2f packed_us_per_batch=%.3f "
          "packed_vs_ref_batch=%.2f words_us_per_batch=%.3f words_vs_ref_batch=%.2f "
          "no_frame=%llu\n",
      P, ppb, per, window, K, us, ms * 1e3 / K, gbps, cp, ref, gbps / cp, gbps / ref,
      ms_ref1 * 1e3 / ((double) K * per), ms_ref1 / ms, ms_packed * 1e3 / ((double) K * per),
      ms_ref1 / ms_packed, ms_words * 1e3 / ((double) K * per), ms_ref1 / ms_words,
      (unsigned long long) (nf + nf_packed + nf_words));
  fflush (stdout);
  if (P == 64 && ppb == 1024 && per == 64 && window >= per)
    us_burst64 = us;
  if ((uint64_t) per * ppb == 65536 && window >= per)
    take_streamed (P, gbps / ref, gbps / cp);
  gpool_free (&g);
}

/* The next case of a DQ_BENCH_* list: `count` nonzero numbers joined by 'x' into v, the list
 * moved past them and their comma; 0 at its end or at anything else. */
static int
next_case (const char **list, unsigned *v, int count)
{
  const char *s = *list;
  for (int i = 0; i < count; i++) {
    char *end;
    unsigned long x = strtoul (s, &end, 10);
    if (end == s || x == 0 || x > UINT32_MAX || (i + 1 < count && *end != 'x'))
      return 0;
    v[i] = (unsigned) x;
    s = i + 1 < count ? end + 1 : end;
  }
  if (*s != ',' && *s != '\0')
    return 0;
  *list = *s == ',' ? s + 1 : s;
  return 1;
}

/* The median of three. */
static double
median3 (const double v[3])
{
  double a = v[0], b = v[1], c = v[2];
  if (a > b) {
    double t = a;
    a = b;
    b = t;
  }
  if (b > c) {
    double t = b;
    b = c;
    c = t;
  }
  return a > b ? a : b;
}

/* A conversion against the plain reorder of the same packets (the same pool, 1 KB payloads,
 * 4096-packet batches), side by side: three rounds, each the plain reorder then the conversion,
 * and the median of the rounds' ratios (a single run of either varies by up to a fifth). */
static void
bench_gpu_convert (DqElemType in, DqElemType out)
{
  const uint32_t P = 1024, ppb = 4096;
  GPool g;
  gpool_make (&g, P, ppb, 64, quick ? (64ull << 20) : (256ull << 20), 0);
  const DqReorderConfig cfg = pool_cfg (&g.hp, in, out);
  const DqReorderConfig plain = pool_cfg (&g.hp, DQ_ELEM_SAME, DQ_ELEM_SAME);
  const uint32_t lout = dq_reorder_output_payload_size (&cfg);
  const uint64_t batch_bytes = (uint64_t) ppb * (P + lout), plain_bytes = (uint64_t) ppb * P * 2;
  const uint32_t K = batches_for (batch_bytes), Kp = batches_for (plain_bytes);
  double gbps[3], ratio[3], pkt[3];
  for (int k = 0; k < 3; k++) {
    uint64_t nf;
    const double ms_p = run_reorder (&g, &plain, Kp, 1, DESC_DEVICE, &nf);
    const double ms = run_reorder (&g, &cfg, K, 1, DESC_DEVICE, &nf);
    const double gp = (double) Kp * plain_bytes / 1e9 / (ms_p / 1e3);
    gbps[k] = (double) K * batch_bytes / 1e9 / (ms / 1e3);
    ratio[k] = gbps[k] / gp;
    pkt[k] = ((double) K / ms) / ((double) Kp / ms_p); /* packet rates, over the plain one */
  }
  const double r = median3 (ratio);
  if (r < conv_min)
    conv_min = r;
  printf ("bench gpu-convert in=%s out=%s payload=%u out_payload=%u ppb=%u GBps=%.1f "
          "vs_reorder=%.3f vs_reorder_runs=%.3f/%.3f/%.3f packet_rate_vs_reorder=%.3f\n",
      dq_elem_type_name (in), dq_elem_type_name (out), P, lout, ppb, median3 (gbps), r, ratio[0],
      ratio[1], ratio[2], median3 (pkt));
  fflush (stdout);
  gpool_free (&g);
}

/* The host's time per launch of an empty kernel by the size of its parameters (8, 512 and
 * 1408 bytes; K1's take 1392), the sizes alternated in three rounds (median): on a host where
 * a launch costs about as much as the GPU's chain per submission, this is the other bound of
 * one batch per submission. */
static void
bench_launch_params (void *stream)
{
  static const uint32_t bytes[3] = { 8, 512, 1408 };
  double us[3][3];
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 3; k++) {
      bench_sync ();
      const double t0 = now ();
      bench_empty_launches_params (stream, 1000, bytes[k]);
      us[k][r] = (now () - t0) * 1e6 / 1000;
    }
  bench_sync ();
  printf ("bench gpu-launch-params host_us_8=%.2f host_us_512=%.2f host_us_1408=%.2f\n",
      median3 (us[0]), median3 (us[1]), median3 (us[2]));
  fflush (stdout);
}

#endif

int
main (void)
{
  quick = getenv ("DQ_BENCH_QUICK") != NULL;
  focus = getenv ("DQ_BENCH_FOCUS") != NULL;
  static const uint32_t sizes[4] = { 64, 256, 1024, 8192 };
  for (int i = 0; i < 4 && !focus; i++)
    bench_cpu (sizes[i]);
  char cpu_line[160];
  snprintf (cpu_line, sizeof cpu_line, "CPU twin %.2fx per-packet memcpy (min over 64..8192 B)",
      cpu_min_ratio);
#ifdef DQ_BENCH_NO_CUDA
  printf ("bench-reorder summary: %s; GPU part not built (no nvcc)\n", cpu_line);
  return 0;
#else
  char msg[256];
  if (!dq_cuda_available (msg, sizeof msg)) {
    printf ("bench-reorder summary: %s; GPU part skipped: %s\n", cpu_line, msg);
    return 0;
  }
  char info[256];
  dq_cuda_device_info (info, sizeof info);
  printf ("device: %s\n", info);
  void *stream = bench_stream_new ();
  bench_launch_params (stream);
  if (focus) {
    static const uint32_t cases[7][2] = { { 64, 1024 }, { 64, 16384 }, { 256, 16384 },
      { 1024, 4096 }, { 1024, 16384 }, { 1024, 65536 }, { 8192, 16384 } };
    /* DQ_BENCH_CASES=PAYLOADxPACKETS,...: other one-batch cases instead */
    const char *list = getenv ("DQ_BENCH_CASES");
    unsigned v[3];
    if (list) {
      while (next_case (&list, v, 2) && v[1] <= (1u << 20))
        bench_gpu_reorder (v[0], v[1], 64, stream);
    } else {
      for (int i = 0; i < 7; i++)
        bench_gpu_reorder (cases[i][0], cases[i][1], 64, stream);
    }
    /* DQ_BENCH_BURSTS=PAYLOADxPACKETSxBATCHES,...: gpu-burst cases, the window the burst */
    list = getenv ("DQ_BENCH_BURSTS");
    while (list && next_case (&list, v, 3) && (uint64_t) v[1] * v[2] <= (1u << 20) &&
        v[2] <= DQ_REORDER_MAX_WINDOW)
      bench_gpu_burst (v[0], v[1], v[2], v[2], stream);
    printf ("bench-reorder focus: batches of 16384 packets: 64B %.2fx one-block-per-packet, "
            "256B %.1f%% of copy, >=1KB %.1f%% of copy; 1024-packet batch %.2f us; the "
            "element's stride words at most %.2fx device (target 1.2x), packed %.2fx, staged "
            "%.2fx\n",
        r64_vs_ref[1], r256_vs_copy[1] * 100, r1k_vs_copy[1] * 100, us_1024, words_vs_device,
        packed_vs_device, host_vs_device);
    return bench_sync () == 0 ? 0 : 1;
  }
  {
    /* the floor: back-to-back empty kernels, one and two per "batch" */
    void *e0 = bench_event_new (), *e1 = bench_event_new ();
    bench_empty_launches (stream, 100);
    bench_event_record (e0, stream);
    bench_empty_launches (stream, 2000);
    double ms = event_span_ms (stream, e0, e1);
    printf ("bench gpu-launch empty_kernel_us=%.2f two_kernels_us=%.2f\n", ms * 1e3 / 2000,
        2 * ms * 1e3 / 2000);
  }
  {
    /* what code costs that an SM has not run lately (the finalizer's, on whichever SM takes
     * the last ticket): the same ~60 KB of straight-line code, first and second pass */
    double cold = 0, warm = 0;
    int blocks = 0;
    if (bench_code_fetch (&cold, &warm, &blocks) == 0)
      printf ("bench gpu-code-fetch steps=4096 blocks=%d cold_cycles=%.0f warm_cycles=%.0f "
              "cold_vs_warm=%.2f\n",
          blocks, cold, warm, warm > 0 ? cold / warm : 0.0);
    else
      fprintf (stderr, "bench gpu-code-fetch: the kernel could not run\n");
  }
  static const uint32_t ppbs[4] = { 1024, 4096, 16384, 65536 };
  for (int si = 0; si < 4; si++)
    for (int bi = 0; bi < 4; bi++) {
      if (quick && bi > 1)
        continue;
      bench_gpu_reorder (sizes[si], ppbs[bi], 64, stream);
    }
  for (int si = 0; si < 4; si++)
    bench_gpu_reorder (sizes[si], 16384, 46, stream); /* misaligned payloads (UDP + 4) */
  /* the streamed regime: 65536 packets per submission, the window holding the burst (the
   * parallel path); then small bursts, and one spanning 32 windows of 2 (packets beyond the
   * window at the burst's start take the finalizer's serial path) */
  static const uint32_t st_ppbs[3] = { 1024, 4096, 16384 };
  for (int si = 0; si < 4; si++)
    for (int bi = 0; bi < 3; bi++) {
      if (quick && (si == 3 || bi > 0))
        continue;
      bench_gpu_burst (sizes[si], st_ppbs[bi], 65536 / st_ppbs[bi], 65536 / st_ppbs[bi], stream);
    }
  bench_gpu_burst (64, 1024, 8, 8, stream);
  bench_gpu_burst (64, 1024, 64, 2, stream);
  static const DqElemType ins[3] = { DQ_ELEM_INT4, DQ_ELEM_INT8, DQ_ELEM_INT16 };
  static const DqElemType outs[3] = { DQ_ELEM_FP16, DQ_ELEM_BF16, DQ_ELEM_FP32 };
  for (int a = 0; a < 3; a++)
    for (int o = 0; o < 3; o++)
      bench_gpu_convert (ins[a], outs[o]);
  /* targets on the throughput regime (batches >= 16384 packets), the batch latency on 1024 */
  int met = (r64_vs_ref[1] >= 5) + (r256_vs_copy[1] >= 0.5) + (r1k_vs_copy[1] >= 0.85) +
      (us_1024 <= 3.0) + (conv_min >= 0.8);
  int st_met = (st64_ref_min >= 5) + (st256_copy_min >= 0.5) + (st1k_copy_min >= 0.85) +
      (us_burst64 <= 3.0) + (conv_min >= 0.8);
  printf (
      "bench-reorder summary: batches >= 16384 packets: 64B %.1fx one-block-per-packet "
      "(target 5x), 256B %.0f%% of copy (50%%), >=1KB %.0f%% of copy (85%%); all batch sizes: 64B "
      "%.1fx..%.1fx, 256B %.0f%%, >=1KB %.0f%%; 1024-packet batch %.2f us with device "
      "descriptors, %.2f us host (3 us), %.2f us in bursts of 64 batches; conversions min %.0f%% of plain reorder (80%%); %s; "
      "targets met %d/5 (one batch per submission); streamed (submissions of 65536 packets, "
      "batches 1024..65536): 64B %.1fx..%.1fx, 256B %.0f%%, >=1KB %.1f%%, 1024-packet batch "
      "%.2f us: targets met %d/5\n",
      r64_vs_ref[1], r256_vs_copy[1] * 100, r1k_vs_copy[1] * 100, r64_vs_ref[0], r64_vs_ref_max,
      r256_vs_copy[0] * 100, r1k_vs_copy[0] * 100, us_1024, us_1024_host, us_burst64,
      conv_min * 100, cpu_line, met, st64_ref_min, st64_ref_max, st256_copy_min * 100,
      st1k_copy_min * 100, us_burst64, st_met);
  return bench_sync () == 0 ? 0 : 1;
#endif
}
