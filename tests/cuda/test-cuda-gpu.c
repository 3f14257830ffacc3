/* test-cuda-gpu.c — every GPU job against its CPU twin, bit for bit: reorder (all conversions,
 * 1..8192-byte payloads, loss, duplication, reordering, short/malformed and late packets, garbage
 * ids, frame shortage, flushes and resets, pipelined submissions; packets at varied offsets, and
 * all 16-byte aligned for the bulk copies of large payloads), gather, packetize and the unpack
 * of 10-bit 4:2:2 pgroups into planar I422_10LE.
 *
 * Built twice: test-cuda-gpu links the real kernels (exit 77 without a usable GPU), test-cuda-emu
 * links the same kernels built on cuda-emu.h (CI, smaller sizes). Prints one summary line.
 * Environment: DQ_TEST_QUICK=1 runs a reduced set (e.g. under compute-sanitizer);
 * DQ_TEST_ONLY=NAME runs the reorder case NAME only. */
#include <stdarg.h>

#include "dq-packet.h"
#include "dq-test-util.h"

#include <sys/stat.h>
#include <unistd.h>

/* stream sizes: 8x larger on a GPU, except in quick mode */
#ifdef DQ_TEST_EMU
#define SCALE 1
#else
#define SCALE (quick ? 1 : 8)
#endif

static uint64_t n_cases, n_subs, n_batches, n_bytes;
static int quick;

static void *
dmalloc (size_t n)
{
  void *p = dq_cuda_malloc (n);
  if (!p) {
    fprintf (stderr, "dq_cuda_malloc(%zu): %s\n", n, dq_cuda_last_error ());
    exit (1);
  }
  return p;
}

static void
dcopy (void *dst, const void *src, size_t n)
{
  if (n && dq_cuda_memcpy (dst, src, n) != 0) {
    fprintf (stderr, "dq_cuda_memcpy: %s\n", dq_cuda_last_error ());
    exit (1);
  }
}

/* ---- a deep copy of a completion (the CPU's arrays are reused by its next call) ----------- */

typedef struct {
  DqReorderCompletion c;
  DqReorderBatch *b;
  DqReorderFrame *r;
} Saved;

static void
save (Saved *s, const DqReorderCompletion *c)
{
  s->c = *c;
  s->b = malloc ((c->n_batches + 1) * sizeof *s->b);
  s->r = malloc ((c->n_released + 1) * sizeof *s->r);
  if (c->n_batches)
    memcpy (s->b, c->batches, c->n_batches * sizeof *s->b);
  if (c->n_released)
    memcpy (s->r, c->released, c->n_released * sizeof *s->r);
  s->c.batches = s->b;
  s->c.released = s->r;
}

static void
unsave (Saved *s)
{
  free (s->b);
  free (s->r);
}

/* ---- the reorder rig: CPU and GPU side by side ------------------------------------------- */

typedef struct {
  DqReorderConfig cfg;
  DqReorderCpu *cpu;
  DqReorderGpu *gpu;
  uint32_t n_frames;
  uint64_t fsize;
  uint8_t **hframes; /* CPU frames */
  uint8_t **dframes; /* GPU frames */
  uint8_t *scratch;  /* a GPU frame copied back */
  /* frames held by "downstream" for a while before they come back */
  uint32_t *held;
  uint32_t n_held, hold;
  const char *name;
  int failed;
} Rig;

static void
fail (Rig *r, const char *fmt, ...)
{
  va_list ap;
  if (r->failed++ > 8)
    return;
  fprintf (stderr, "[%s] ", r->name);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  dq_test_failures++;
}

static void
give_frame (Rig *r, uint32_t tok)
{
  CHECK_EQ (dq_reorder_cpu_add_frame (r->cpu, r->hframes[tok - 1], (void *) (uintptr_t) tok), 0);
  CHECK_EQ (dq_reorder_gpu_add_frame (r->gpu, r->dframes[tok - 1], (void *) (uintptr_t) tok), 0);
}

static void
rig_init (Rig *r, const char *name, const DqReorderConfig *cfg, uint32_t n_frames, uint32_t hold,
    uint32_t max_packets)
{
  char msg[256];
  memset (r, 0, sizeof *r);
  r->name = name;
  r->cfg = *cfg;
  r->cpu = dq_reorder_cpu_new (cfg, msg, sizeof msg);
  if (!r->cpu) {
    fprintf (stderr, "[%s] new: %s\n", name, msg);
    exit (1);
  }
  r->n_frames = n_frames;
  r->hold = hold;
  r->fsize = dq_reorder_frame_size (cfg);
  r->hframes = calloc (n_frames, sizeof *r->hframes);
  r->dframes = calloc (n_frames, sizeof *r->dframes);
  r->held = calloc (n_frames + 1, sizeof *r->held);
  r->scratch = malloc (r->fsize);
  for (uint32_t i = 0; i < n_frames; i++) {
    r->hframes[i] = malloc (r->fsize);
    memset (r->hframes[i], 0xa5, r->fsize);
    r->dframes[i] = dmalloc (r->fsize);
    dcopy (r->dframes[i], r->hframes[i], r->fsize);
  }
  DqReorderGpuOptions o = { max_packets, 4, n_frames + 8, -1, NULL };
  r->gpu = dq_reorder_gpu_new (cfg, &o, msg, sizeof msg);
  if (!r->gpu) {
    fprintf (stderr, "[%s] new: %s\n", name, msg);
    exit (1);
  }
  for (uint32_t i = 0; i < n_frames; i++)
    give_frame (r, i + 1);
}

static void
rig_free (Rig *r)
{
  dq_reorder_cpu_free (r->cpu);
  dq_reorder_gpu_free (r->gpu);
  for (uint32_t i = 0; i < r->n_frames; i++) {
    free (r->hframes[i]);
    dq_cuda_free (r->dframes[i]);
  }
  free (r->hframes);
  free (r->dframes);
  free (r->held);
  free (r->scratch);
}

static int verbose;

static void
compare (Rig *r, const DqReorderCompletion *c, const DqReorderCompletion *g, uint32_t sub)
{
  n_subs++;
  if (verbose) {
    fprintf (stderr, "[%s] sub %u: %u batches (", r->name, sub, c->n_batches);
    for (uint32_t k = 0; k < c->n_batches; k++)
      fprintf (stderr, " %llu:%x:%u:%u", (unsigned long long) c->batches[k].batch_id,
          c->batches[k].flags, c->batches[k].packets,
          (uint32_t) (uintptr_t) c->batches[k].frame_user);
    fprintf (stderr, " ) base %llu open %u released %u\n", (unsigned long long) c->window.base,
        c->window.open, c->n_released);
  }
  if (c->n_batches != g->n_batches || c->n_released != g->n_released) {
    fail (r, "submission %u: cpu %u batches %u released, gpu %u batches %u released", sub,
        c->n_batches, c->n_released, g->n_batches, g->n_released);
    return;
  }
  if (memcmp (&c->stats, &g->stats, sizeof c->stats) != 0) {
    fail (r,
        "submission %u: stats differ (cpu accepted %llu dup %llu late %llu short %llu "
        "batches %llu skipped %llu; gpu %llu %llu %llu %llu %llu %llu)",
        sub, (unsigned long long) c->stats.accepted, (unsigned long long) c->stats.duplicates,
        (unsigned long long) c->stats.late, (unsigned long long) c->stats.short_packets,
        (unsigned long long) c->stats.batches, (unsigned long long) c->stats.skipped,
        (unsigned long long) g->stats.accepted, (unsigned long long) g->stats.duplicates,
        (unsigned long long) g->stats.late, (unsigned long long) g->stats.short_packets,
        (unsigned long long) g->stats.batches, (unsigned long long) g->stats.skipped);
  }
  if (memcmp (&c->window, &g->window, sizeof c->window) != 0)
    fail (r,
        "submission %u: window differs (cpu base %llu open %u oldest %llu ts %llu; gpu %llu "
        "%u %llu %llu)",
        sub, (unsigned long long) c->window.base, c->window.open,
        (unsigned long long) c->window.oldest_id,
        (unsigned long long) c->window.oldest_first_timestamp, (unsigned long long) g->window.base,
        g->window.open, (unsigned long long) g->window.oldest_id,
        (unsigned long long) g->window.oldest_first_timestamp);
  if (c->job_short != g->job_short)
    fail (r, "submission %u: job_short cpu %u gpu %u", sub, c->job_short, g->job_short);
  for (uint32_t k = 0; k < c->n_batches; k++) {
    const DqReorderBatch *a = &c->batches[k], *b = &g->batches[k];
    n_batches++;
    if (a->batch_id != b->batch_id || a->frame_user != b->frame_user || a->packets != b->packets ||
        a->missing != b->missing || a->duplicates != b->duplicates || a->late != b->late ||
        a->short_packets != b->short_packets || a->flags != b->flags ||
        a->first_timestamp != b->first_timestamp) {
      fail (r,
          "submission %u batch %u: cpu id %llu frame %p pk %u miss %u dup %u late %u short %u "
          "flags %x ts %llu | gpu id %llu frame %p pk %u miss %u dup %u late %u short %u flags %x "
          "ts %llu",
          sub, k, (unsigned long long) a->batch_id, a->frame_user, a->packets, a->missing,
          a->duplicates, a->late, a->short_packets, a->flags,
          (unsigned long long) a->first_timestamp, (unsigned long long) b->batch_id, b->frame_user,
          b->packets, b->missing, b->duplicates, b->late, b->short_packets, b->flags,
          (unsigned long long) b->first_timestamp);
      continue;
    }
    if (!a->frame)
      continue;
    uint32_t tok = (uint32_t) (uintptr_t) a->frame_user;
    if (b->frame != r->dframes[tok - 1])
      fail (r, "submission %u batch %u: gpu frame pointer is not frame %u's", sub, k, tok);
    dcopy (r->scratch, b->frame, r->fsize);
    n_bytes += r->fsize;
    if (memcmp (r->scratch, a->frame, r->fsize) != 0) {
      uint64_t at = 0;
      while (r->scratch[at] == ((uint8_t *) a->frame)[at])
        at++;
      uint32_t lout = dq_reorder_output_payload_size (&r->cfg);
      fail (r,
          "submission %u batch %llu: frame bytes differ from byte %llu (slot %llu, offset "
          "%llu): cpu %02x gpu %02x",
          sub, (unsigned long long) a->batch_id, (unsigned long long) at,
          (unsigned long long) (at / lout), (unsigned long long) (at % lout),
          ((uint8_t *) a->frame)[at], r->scratch[at]);
    }
  }
  for (uint32_t k = 0; k < c->n_released; k++)
    if (c->released[k].user != g->released[k].user)
      fail (r, "submission %u: released frame %u: cpu %p gpu %p", sub, k, c->released[k].user,
          g->released[k].user);
}

/* Frames come back: emitted ones after `hold` submissions, released ones at once. */
static void
recycle (Rig *r, const DqReorderCompletion *c)
{
  for (uint32_t k = 0; k < c->n_batches; k++)
    if (c->batches[k].frame)
      r->held[r->n_held++] = (uint32_t) (uintptr_t) c->batches[k].frame_user;
  for (uint32_t k = 0; k < c->n_released; k++)
    give_frame (r, (uint32_t) (uintptr_t) c->released[k].user);
  while (r->n_held > r->hold) {
    give_frame (r, r->held[0]);
    memmove (r->held, r->held + 1, (r->n_held - 1) * sizeof *r->held);
    r->n_held--;
  }
}

static void
gpu_wait (Rig *r, DqReorderCompletion *g)
{
  int rc = dq_reorder_gpu_poll (r->gpu, 1, g);
  if (rc != 1) {
    fprintf (stderr, "[%s] poll: %d %s\n", r->name, rc, dq_reorder_gpu_error (r->gpu));
    exit (1);
  }
}

static void
step_flush (Rig *r, DqFlushMode mode, uint32_t sub)
{
  DqReorderCompletion c, g;
  CHECK_EQ (dq_reorder_cpu_flush (r->cpu, mode, &c), 0);
  CHECK_EQ (dq_reorder_gpu_flush (r->gpu, mode, NULL), 0);
  gpu_wait (r, &g);
  compare (r, &c, &g, sub);
  recycle (r, &c);
}

typedef struct {
  const char *name;
  DqReorderConfig cfg;
  DqStreamSpec spec;
  uint32_t n_frames, hold;
  uint32_t flush_every; /* a timeout flush every so many bursts (0: never) */
  uint32_t pipeline;    /* submissions in flight before polling (1..4) */
  uint32_t resend;      /* the last packets of a burst sent again first in the next */
  uint64_t seed;
} Case;

/* Zeroes c and names it: fmt with its arguments printed into name, a buffer of size bytes that
 * must outlive every use of c. */
static void __attribute__ ((format (printf, 4, 5)))
case_start (Case *c, char *name, size_t size, const char *fmt, ...)
{
  va_list ap;
  memset (c, 0, sizeof *c);
  va_start (ap, fmt);
  vsnprintf (name, size, fmt, ap);
  va_end (ap);
  c->name = name;
}

/* Every burst but the first starts with the last k packets of the burst before sent again (the
 * same bytes): duplicates of slots a job before filled, in bursts whose own keys are distinct. */
static void
stream_resend (DqStream *st, uint32_t k)
{
  DqReorderPacket *pk = malloc ((st->n + (size_t) st->n_bursts * k + 1) * sizeof *pk);
  CHECK (pk != NULL);
  if (pk == NULL)
    return;
  uint32_t n = 0, pos = 0;
  for (uint32_t b = 0; b < st->n_bursts; b++) {
    const uint32_t len = st->burst_len[b], prev = b ? st->burst_len[b - 1] : 0;
    const uint32_t again = prev < k ? prev : k;
    memcpy (pk + n, st->pkts + pos - again, again * sizeof *pk);
    memcpy (pk + n + again, st->pkts + pos, len * sizeof *pk);
    n += again + len;
    pos += len;
    st->burst_len[b] = again + len;
  }
  free (st->pkts);
  st->pkts = pk;
  st->n = n;
}

static void
run_reorder_case (const Case *cs)
{
  const char *only = getenv ("DQ_TEST_ONLY");
  if (only && strcmp (only, cs->name) != 0)
    return;
  DqStream st;
  dqt_stream_make (&st, &cs->cfg, &cs->spec, cs->seed);
  if (cs->resend)
    stream_resend (&st, cs->resend);
  uint32_t maxb = 1;
  for (uint32_t k = 0; k < st.n_bursts; k++)
    if (st.burst_len[k] > maxb)
      maxb = st.burst_len[k];
  Rig r;
  uint8_t *ddata = dmalloc (st.size);
  dcopy (ddata, st.data, st.size);
  rig_init (&r, cs->name, &cs->cfg, cs->n_frames, cs->hold, maxb);
  DqRng rng = { cs->seed + 99 };
  n_cases++;

  uint32_t pos = 0, sub = 0;
  Saved q[4];
  uint32_t nq = 0, pipe = cs->pipeline ? cs->pipeline : 1;
  for (uint32_t k = 0; k < st.n_bursts && r.failed == 0; k++) {
    DqReorderCompletion c, g;
    const DqReorderPacket *pk = st.pkts + pos;
    CHECK_EQ (dq_reorder_cpu_push (r.cpu, st.data, st.size, pk, st.burst_len[k], &c), 0);
    int rc = dq_reorder_gpu_submit (r.gpu, ddata, st.size, pk, st.burst_len[k], NULL);
    if (rc != 0) {
      fprintf (stderr, "[%s] submit: %d %s\n", cs->name, rc, dq_reorder_gpu_error (r.gpu));
      exit (1);
    }
    pos += st.burst_len[k];
    save (&q[nq++], &c);
    /* frames can only come back once the GPU's results are compared: recycle after polling */
    if (nq == pipe || k + 1 == st.n_bursts) {
      for (uint32_t j = 0; j < nq; j++) {
        gpu_wait (&r, &g);
        compare (&r, &q[j].c, &g, sub++);
        recycle (&r, &q[j].c);
        unsave (&q[j]);
      }
      nq = 0;
    }
    if (nq == 0 && cs->flush_every && dqt_below (&rng, cs->flush_every) == 0)
      step_flush (&r, DQ_FLUSH_OLDEST, sub++);
  }
  for (uint32_t j = 0; j < nq; j++)
    unsave (&q[j]);
  step_flush (&r, DQ_FLUSH_ALL, sub++);
  step_flush (&r, DQ_FLUSH_RESET, sub++);
  /* after the reset: the stream again from the start (a new window) */
  pos = 0;
  for (uint32_t k = 0; k < st.n_bursts && k < 8 && r.failed == 0; k++) {
    DqReorderCompletion c, g;
    CHECK_EQ (dq_reorder_cpu_push (r.cpu, st.data, st.size, st.pkts + pos, st.burst_len[k], &c), 0);
    CHECK_EQ (
        dq_reorder_gpu_submit (r.gpu, ddata, st.size, st.pkts + pos, st.burst_len[k], NULL), 0);
    pos += st.burst_len[k];
    gpu_wait (&r, &g);
    compare (&r, &c, &g, sub++);
    recycle (&r, &c);
  }
  step_flush (&r, DQ_FLUSH_RESET, sub++);
  rig_free (&r);
  dq_cuda_free (ddata);
  dqt_stream_free (&st);
}

static DqReorderConfig
cfg_make (uint32_t ppb, uint32_t payload, uint32_t pay_off, DqElemType in, DqElemType out,
    DqByteOrder order)
{
  DqReorderConfig c;
  dq_reorder_config_init (&c);
  c.seq_bit_offset = 8 * (pay_off >= 4 ? pay_off - 4 : 0);
  c.seq_bit_width = 32;
  c.packets_per_batch = ppb;
  c.payload_offset = pay_off;
  c.payload_size = payload;
  c.input_type = in;
  c.output_type = out;
  c.byte_order = order;
  return c;
}

static void
reorder_cases (void)
{
  static const DqElemType ins[4] = { DQ_ELEM_INT4, DQ_ELEM_INT8, DQ_ELEM_INT16, DQ_ELEM_INT32 };
  static const DqElemType outs[5] = { DQ_ELEM_FP16, DQ_ELEM_BF16, DQ_ELEM_FP32, DQ_ELEM_FP64,
    DQ_ELEM_INT32 };
  static const uint32_t sizes[] = { 1, 3, 17, 64, 100, 256, 1000, 1024, 4095, 8192 };
  static const uint32_t offsets[] = { 46, 64, 43, 48 };
  uint64_t seed = 1;
  char name[128];

  /* plain copies: every size, aligned and misaligned payloads, tame and wild streams */
  for (uint32_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    for (int wild = 0; wild < 2; wild++) {
      uint32_t L = sizes[si];
      uint32_t ppb = L >= 4096 ? 16 * SCALE : 32 * SCALE;
      Case c;
      case_start (&c, name, sizeof name, "copy-%u-%s", L, wild ? "wild" : "tame");
      c.cfg = cfg_make (
          ppb, L, offsets[(si + wild) % 4], DQ_ELEM_SAME, DQ_ELEM_SAME, DQ_BYTE_ORDER_HOST);
      c.cfg.window = 2 + (si % 3);
      DqStreamSpec sp = { quick ? 6 : 12, wild ? 0.05 : 0.01, wild ? 0.05 : 0.01, 0.02, 0.01,
        ppb / 3, wild, wild ? 600 : 200 * SCALE, 5 };
      c.spec = sp;
      c.n_frames = c.cfg.window + 3;
      c.hold = 1;
      c.flush_every = wild ? 7 : 0;
      c.pipeline = 1 + (uint32_t) (seed % 4);
      c.seed = seed++;
      run_reorder_case (&c);
      if (quick && si > 4)
        break;
    }
  }
  /* plain copies with every packet 16-byte aligned, as NIC rings place them: on sm_90 (and the
   * emulator) the paths through shared memory (move_bulk from 2 KiB, move_async from 512 B),
   * with loss, duplicates, fixups and flushes */
  for (int k = 0; k < 8; k++) {
    static const uint32_t aligned_sizes[4] = { 2048, 8192, 1024, 512 };
    const uint32_t L = aligned_sizes[k / 2];
    const int wild = k & 1;
    if (quick && k != 1 && k != 2 && k != 5)
      continue;
    const uint32_t ppb = (L == 8192 ? 16 : 32) * SCALE;
    Case c;
    case_start (&c, name, sizeof name, "copy-aligned-%u-%s", L, wild ? "wild" : "tame");
    c.cfg = cfg_make (ppb, L, 64, DQ_ELEM_SAME, DQ_ELEM_SAME, DQ_BYTE_ORDER_HOST);
    c.cfg.window = 2 + (uint32_t) k % 3;
    DqStreamSpec sp = { quick ? 6 : 12, wild ? 0.05 : 0.01, wild ? 0.05 : 0.01, 0.02, 0.01, ppb / 3,
      wild, wild ? 600 : 200 * SCALE, 5, 0, 1 };
    c.spec = sp;
    c.n_frames = c.cfg.window + 3;
    c.hold = 1;
    c.flush_every = wild ? 7 : 0;
    c.pipeline = 1 + (uint32_t) k % 4;
    c.seed = 900 + (uint64_t) k; /* the other cases' seeds as before */
    run_reorder_case (&c);
  }
  /* every conversion, host and network order, odd and even sizes */
  for (int a = 0; a < 4; a++)
    for (int o = 0; o < 5; o++)
      for (int net = 0; net < 2; net++) {
        if (quick && (a + o + net) % 3)
          continue;
        uint32_t L = (a * 5 + o + net) % 3 == 0 ? 1024 : (a * 5 + o + net) % 3 == 1 ? 77 : 256;
        if (ins[a] == DQ_ELEM_INT32 && L < 4)
          L = 4;
        Case c;
        case_start (&c, name, sizeof name, "convert-%s-%s-%s-%u", dq_elem_type_name (ins[a]),
            dq_elem_type_name (outs[o]), net ? "net" : "host", L);
        c.cfg = cfg_make (16 * SCALE, L, offsets[(a + o) % 4], ins[a], outs[o],
            net ? DQ_BYTE_ORDER_NETWORK : DQ_BYTE_ORDER_HOST);
        DqStreamSpec sp = { quick ? 4 : 8, 0.03, 0.03, 0.02, 0.01, 5, (a + o) % 2, 150 * SCALE, 0 };
        c.spec = sp;
        c.n_frames = 8;
        c.hold = 2;
        c.pipeline = 2;
        c.seed = seed++;
        run_reorder_case (&c);
      }
  /* batch-field mode with narrow wrapping fields; frame shortage; big windows; small ppb */
  for (int k = 0; k < (quick ? 2 : 6); k++) {
    Case c;
    case_start (&c, name, sizeof name, "field-%d", k);
    dq_reorder_config_init (&c.cfg);
    c.cfg.seq_bit_offset = 16 + (uint32_t) k;
    c.cfg.seq_bit_width = 12;
    c.cfg.batch_bit_offset = 3;
    c.cfg.batch_bit_width = 5 + (uint32_t) k % 3;
    c.cfg.packets_per_batch = 64;
    c.cfg.payload_offset = 7 + (uint32_t) k;
    c.cfg.payload_size = 24 + 40 * (uint32_t) k;
    c.cfg.window = 3;
    DqStreamSpec sp = { quick ? 20 : 60, 0.05, 0.03, 0.02, 0.01, 20, k & 1, 97, 25 };
    c.spec = sp;
    c.n_frames = k == 2 ? 2 : 8; /* k == 2: not enough frames (NO_FRAME) */
    c.hold = k == 2 ? 3 : 1;
    c.flush_every = 11;
    c.pipeline = 1 + (uint32_t) k % 4;
    c.seed = seed++;
    run_reorder_case (&c);
  }
  /* clean streams (no loss, no duplicates, in order up to a few packets), many submissions in
   * flight: the steady state, where a submission starts before the previous finalizer is done
   * (early start); few frames, so that some batches find none and frames come back between
   * submissions */
  for (int k = 0; k < 3; k++) {
    Case c;
    case_start (&c, name, sizeof name, "steady-%d", k);
    c.cfg = cfg_make (64, k == 1 ? 100 : 32, 64, DQ_ELEM_SAME, DQ_ELEM_SAME, DQ_BYTE_ORDER_HOST);
    c.cfg.window = 2 + (uint32_t) k;
    DqStreamSpec sp = { quick ? 60 : 240, 0, 0, 0, 0, 4, 0, k == 0 ? 32 : k == 1 ? 64 : 150, 9 };
    c.spec = sp;
    c.n_frames = k == 2 ? c.cfg.window + 8 : c.cfg.window + 1;
    c.hold = k == 2 ? 1 : 3;
    c.pipeline = 4;
    c.seed = seed++;
    run_reorder_case (&c);
  }
  /* bursts of one whole batch each, shuffled (a receive ring handing over one frame at a time),
   * also where a batch finds no frame (k == 1) or a packet is lost, duplicated or short (k == 2) */
  for (int k = 0; k < 3; k++) {
    Case c;
    case_start (&c, name, sizeof name, "whole-%d", k);
    c.cfg = cfg_make (k == 1 ? 128 : 64, 48, 64, DQ_ELEM_SAME, DQ_ELEM_SAME, DQ_BYTE_ORDER_HOST);
    c.cfg.window = k == 1 ? 2 : 4;
    DqStreamSpec sp = { quick ? 40 : 160, 0, 0, 0, 0, 0, 0, 0, 7 };
    if (k == 2) {
      sp.loss = 0.002;
      sp.dup = 0.002;
      sp.shorts = 0.002;
    }
    sp.whole = 1;
    c.spec = sp;
    c.n_frames = k == 1 ? c.cfg.window + 1 : c.cfg.window + 4;
    c.hold = k == 1 ? 3 : 1;
    c.pipeline = 4;
    c.seed = 2000 + (uint64_t) k; /* the other cases keep their seeds */
    run_reorder_case (&c);
  }
  /* clean streams whose bursts each start with the last packets of the burst before sent again:
   * duplicates of slots filled by the job before, in bursts that are otherwise in order */
  for (int k = 0; k < 2; k++) {
    Case c;
    case_start (&c, name, sizeof name, "resend-%d", k);
    c.cfg = cfg_make (64, 48, 64, DQ_ELEM_SAME, DQ_ELEM_SAME, DQ_BYTE_ORDER_HOST);
    c.cfg.window = 4;
    DqStreamSpec sp = { quick ? 40 : 120, 0, 0, 0, 0, k ? 6 : 0, 0, 48, 3 };
    c.spec = sp;
    c.n_frames = c.cfg.window + 4;
    c.hold = 1;
    c.pipeline = 4;
    c.resend = 1 + 4 * (uint32_t) k;
    c.seed = 1000 + (uint64_t) k; /* the other cases keep their seeds */
    run_reorder_case (&c);
  }
  for (int k = 0; k < (quick ? 2 : 4); k++) {
    Case c;
    case_start (&c, name, sizeof name, "small-ppb-%d", k);
    c.cfg = cfg_make (1 + 3 * (uint32_t) k, 8 + 8 * (uint32_t) k, 12, DQ_ELEM_SAME, DQ_ELEM_SAME,
        DQ_BYTE_ORDER_HOST);
    c.cfg.seq_bit_width = 16;
    c.cfg.seq_bit_offset = 48;
    c.cfg.window = k == 3 ? 64 : 8;
    DqStreamSpec sp = { quick ? 30 : 200, 0.05, 0.05, 0.03, 0.01, 6, k & 1, 300, 3 };
    c.spec = sp;
    c.n_frames = c.cfg.window + 16;
    c.hold = 4;
    c.pipeline = 3;
    c.seed = seed++;
    run_reorder_case (&c);
  }
}

/* How stream_through hands the kernels a burst's descriptors. */
typedef enum {
  DESC_DEVICE, /* DqReorderPacket records in device memory (submit_device) */
  DESC_PACKED, /* offset | length << 32 in pinned, mapped host memory (submit_packed) */
  DESC_WORDS,  /* stride words in pinned, mapped host memory (submit_words) */
  DESC_RUNS,   /* 1 to 4 bursts' stride words a submission (submit_word_runs) */
} DescMode;

/* Stride words need every packet of a burst on a stride from the burst's start: the stream
 * rewritten as a ring would hold it, each burst from a 64-byte stride of its own, each packet
 * from the next stride after the one before; descriptors pointing outside the data point
 * outside the burst (the largest stride index). cpu: the offsets and lengths the words say,
 * relative to their burst; base: each burst's first byte, and the end (n_bursts + 1). */
#define WORD_SHIFT 6
static uint8_t *
stream_to_strides (const DqStream *st, uint32_t *words, DqReorderPacket *cpu, size_t *base)
{
  const size_t stride = (size_t) 1 << WORD_SHIFT;
  uint8_t *out = calloc (st->size + (size_t) st->n * stride + stride, 1);
  CHECK (out != NULL);
  size_t at = 0;
  uint32_t pos = 0;
  for (uint32_t k = 0; k < st->n_bursts; k++) {
    base[k] = at;
    size_t in_burst = 0;
    for (uint32_t i = pos; i < pos + st->burst_len[k]; i++) {
      const DqReorderPacket *p = &st->pkts[i];
      CHECK (p->length <= DQ_REORDER_WORD_MAX_LENGTH);
      cpu[i] = *p;
      if ((size_t) p->offset + p->length > st->size) {
        words[i] = DQ_REORDER_WORD_INDEX_MASK | p->length << DQ_REORDER_WORD_LENGTH_SHIFT;
        cpu[i].offset = DQ_REORDER_WORD_INDEX_MASK << WORD_SHIFT;
        continue;
      }
      memcpy (out + at + in_burst, st->data + p->offset, p->length);
      words[i] = (uint32_t) (in_burst >> WORD_SHIFT) | p->length << DQ_REORDER_WORD_LENGTH_SHIFT;
      cpu[i].offset = (uint32_t) in_burst;
      in_burst += (p->length + stride - 1) / stride * stride;
      if (p->length == 0)
        in_burst += stride;
    }
    CHECK (in_burst <= (size_t) DQ_REORDER_WORD_INDEX_MASK << WORD_SHIFT);
    at += in_burst;
    pos += st->burst_len[k];
  }
  base[st->n_bursts] = at;
  return out;
}

/* The bursts of submission k (DESC_RUNS: 1, 2, 3, 4, 1, ... bursts a submission; else one). */
static uint32_t
bursts_in (DescMode mode, uint32_t k)
{
  return mode == DESC_RUNS ? 1 + k % 4 : 1;
}

/* A stream's bursts through the GPU beside the CPU twin, compared submission by submission,
 * its descriptors as `mode` says; in the pinned modes every packet of a burst takes its first
 * packet's timestamp (how daqirireorder takes daqirisrc memory=cuda bursts; the CPU twin gets
 * the same stamps). DESC_RUNS: the CPU twin takes a submission's bursts as one, each packet's
 * offset counted from the first burst's start. */
static void
stream_through (const char *name, const DqReorderConfig *cfg, DqStream *st, DescMode mode)
{
  uint32_t maxb = 1;
  for (uint32_t k = 0, sub = 0; k < st->n_bursts; sub++) {
    uint32_t n = 0;
    for (uint32_t e = k + bursts_in (mode, sub); k < e && k < st->n_bursts; k++)
      n += st->burst_len[k];
    if (n > maxb)
      maxb = n;
  }
  /* the bytes the CPU twin reads, at host_data + base[k] for burst k (0 outside DESC_WORDS) */
  const uint8_t *host_data = st->data;
  size_t data_size = st->size;
  size_t *base = calloc (st->n_bursts + 1, sizeof *base);
  uint8_t *relocated = NULL;
  DqReorderPacket *dpk = NULL, *stamped = NULL;
  uint64_t *packed = NULL;
  uint32_t *words = NULL;
  if (mode != DESC_DEVICE) {
    stamped = malloc ((size_t) st->n * sizeof *stamped);
    memcpy (stamped, st->pkts, (size_t) st->n * sizeof *stamped);
  }
  if (mode == DESC_PACKED) {
    packed = dq_cuda_malloc_host ((size_t) st->n * sizeof *packed);
    CHECK (packed != NULL);
    for (uint32_t i = 0; i < st->n; i++)
      packed[i] = st->pkts[i].offset | (uint64_t) st->pkts[i].length << 32;
  } else if (mode == DESC_WORDS || mode == DESC_RUNS) {
    words = dq_cuda_malloc_host ((size_t) st->n * sizeof *words);
    CHECK (words != NULL);
    relocated = stream_to_strides (st, words, stamped, base);
    host_data = relocated;
    data_size = base[st->n_bursts];
  } else {
    dpk = dmalloc ((size_t) st->n * sizeof *dpk);
    dcopy (dpk, st->pkts, (size_t) st->n * sizeof *dpk);
  }
  uint8_t *ddata = dmalloc (data_size);
  dcopy (ddata, host_data, data_size);
  Rig r;
  rig_init (&r, name, cfg, 6, 0, maxb);
  n_cases++;
  uint32_t pos = 0;
  for (uint32_t k = 0, sub = 0; k < st->n_bursts && !r.failed; sub++) {
    const uint32_t n = st->burst_len[k];
    DqReorderCompletion c, g;
    if (mode == DESC_RUNS) {
      const uint32_t k0 = k, pos0 = pos;
      DqReorderWordRun runs[4];
      uint32_t m = 0;
      for (; m < bursts_in (mode, sub) && k < st->n_bursts; m++, k++) {
        const uint32_t nb = st->burst_len[k];
        const uint64_t stamp = nb ? st->pkts[pos].timestamp : 0;
        runs[m] = (DqReorderWordRun){ words + pos, nb, base[k] - base[k0], stamp };
        for (uint32_t i = pos; i < pos + nb; i++) {
          stamped[i].timestamp = stamp;
          if (stamped[i].offset != DQ_REORDER_WORD_INDEX_MASK << WORD_SHIFT)
            stamped[i].offset += (uint32_t) (base[k] - base[k0]);
        }
        pos += nb;
      }
      const size_t gsize = base[k] - base[k0];
      CHECK_EQ (
          dq_reorder_cpu_push (r.cpu, host_data + base[k0], gsize, stamped + pos0, pos - pos0, &c),
          0);
      CHECK_EQ (dq_reorder_gpu_submit_word_runs (
                    r.gpu, ddata + base[k0], gsize, runs, m, WORD_SHIFT, NULL),
          0);
    } else if (mode == DESC_DEVICE) {
      CHECK_EQ (dq_reorder_cpu_push (r.cpu, st->data, st->size, st->pkts + pos, n, &c), 0);
      CHECK_EQ (dq_reorder_gpu_submit_device (r.gpu, ddata, st->size, dpk + pos, n, NULL), 0);
    } else {
      const uint64_t stamp = n ? st->pkts[pos].timestamp : 0;
      for (uint32_t i = 0; i < n; i++)
        stamped[pos + i].timestamp = stamp;
      /* DESC_WORDS: the burst's own bytes, as a source's ring holds them; DESC_PACKED: the
       * whole stream (base 0) */
      const size_t bsize = mode == DESC_WORDS ? base[k + 1] - base[k] : data_size;
      CHECK_EQ (dq_reorder_cpu_push (r.cpu, host_data + base[k], bsize, stamped + pos, n, &c), 0);
      CHECK_EQ (mode == DESC_WORDS
              ? dq_reorder_gpu_submit_words (
                    r.gpu, ddata + base[k], bsize, words + pos, WORD_SHIFT, n, stamp, NULL)
              : dq_reorder_gpu_submit_packed (r.gpu, ddata, bsize, packed + pos, n, stamp, NULL),
          0);
    }
    if (mode != DESC_RUNS) {
      pos += n;
      k++;
    }
    gpu_wait (&r, &g);
    compare (&r, &c, &g, sub);
    recycle (&r, &c);
  }
  step_flush (&r, DQ_FLUSH_ALL, 9999);
  rig_free (&r);
  free (stamped);
  free (relocated);
  free (base);
  dq_cuda_free_host (packed);
  dq_cuda_free_host (words);
  dq_cuda_free (dpk);
  dq_cuda_free (ddata);
}

/* Big bursts through the device-descriptor path: 64..8192-byte payloads, large batches. */
static void
large_cases (void)
{
  static const uint32_t sizes[] = { 64, 256, 1024, 8192 };
  static const DqElemType conv[][2] = {
    { DQ_ELEM_SAME, DQ_ELEM_SAME },
    { DQ_ELEM_INT8, DQ_ELEM_FP16 },
    { DQ_ELEM_INT16, DQ_ELEM_BF16 },
    { DQ_ELEM_INT4, DQ_ELEM_FP32 },
  };
  for (uint32_t si = 0; si < 4; si++)
    for (uint32_t ci = 0; ci < 4; ci++) {
      if (quick && ci != si)
        continue;
      uint32_t L = sizes[si];
      uint32_t ppb = (L == 8192 ? 256 : 2048) * SCALE / 8;
      DqReorderConfig cfg = cfg_make (ppb, L, 64 - (ci & 1) * 18, conv[ci][0], conv[ci][1],
          (ci & 2) ? DQ_BYTE_ORDER_NETWORK : DQ_BYTE_ORDER_HOST);
      cfg.window = 2;
      char name[64];
      snprintf (name, sizeof name, "large-%u-%s-%s", L, dq_elem_type_name (conv[ci][0]),
          dq_elem_type_name (conv[ci][1]));
      DqStreamSpec sp = { 6, 0.002, 0.002, 0.001, 0.0, 50, 0, ppb, 0 };
      DqStream st;
      dqt_stream_make (&st, &cfg, &sp, 1000 + si * 4 + ci);
      stream_through (name, &cfg, &st, DESC_DEVICE);
      dqt_stream_free (&st);
    }
}

/* The same through the packed-descriptor, stride-word and stride-word-run paths, 64- and
 * 1024-byte payloads. */
static void
packed_cases (void)
{
  static const uint32_t sizes[] = { 64, 1024 };
  static const char *names[] = { "packed", "words", "runs" };
  for (uint32_t ci = 0; ci < 6; ci++) {
    const uint32_t si = ci & 1;
    const DescMode mode = ci < 2 ? DESC_PACKED : ci < 4 ? DESC_WORDS : DESC_RUNS;
    uint32_t L = sizes[si];
    DqReorderConfig cfg = cfg_make (1024 * SCALE / 8, L, 64 - si * 18, DQ_ELEM_SAME, DQ_ELEM_SAME,
        si ? DQ_BYTE_ORDER_NETWORK : DQ_BYTE_ORDER_HOST);
    cfg.window = 2;
    char name[64];
    snprintf (name, sizeof name, "%s-%u", names[ci / 2], L);
    DqStreamSpec sp = { 6, 0.002, 0.002, 0.001, 0.0, 50, 0, cfg.packets_per_batch, 0 };
    DqStream st;
    dqt_stream_make (&st, &cfg, &sp, 3000 + si);
    stream_through (name, &cfg, &st, mode);
    dqt_stream_free (&st);
  }
}

/* Copies the GPU's osz bytes of output at device address dout into go and checks them
 * against the CPU twin's, ho, byte for byte; counts one case of osz bytes. */
static void
check_gpu_output (const uint8_t *ho, uint8_t *go, const uint8_t *dout, size_t osz)
{
  dcopy (go, dout, osz);
  CHECK (memcmp (ho, go, osz) == 0);
  n_bytes += osz;
  n_subs++;
  n_cases++;
}

static void
gather_cases (void)
{
  dq_test_name = "gather";
  static const DqElemType conv[][2] = {
    { DQ_ELEM_SAME, DQ_ELEM_SAME },
    { DQ_ELEM_INT4, DQ_ELEM_FP16 },
    { DQ_ELEM_INT8, DQ_ELEM_BF16 },
    { DQ_ELEM_INT16, DQ_ELEM_FP32 },
    { DQ_ELEM_INT32, DQ_ELEM_FP64 },
    { DQ_ELEM_INT32, DQ_ELEM_INT32 },
  };
  for (uint32_t ci = 0; ci < 6; ci++) {
    DqReorderConfig cfg = cfg_make (8, 8 + 99 * ci, 40 + ci, conv[ci][0], conv[ci][1],
        ci & 1 ? DQ_BYTE_ORDER_NETWORK : DQ_BYTE_ORDER_HOST);
    DqStreamSpec sp = { 10, 0.0, 0.0, 0.1, 0.0, 3, 0, 64, 0 };
    DqStream st;
    dqt_stream_make (&st, &cfg, &sp, 500 + ci);
    DqReorderGpuOptions o = { st.n, 2, 4, -1, NULL };
    char msg[200];
    DqReorderGpu *g = dq_reorder_gpu_new (&cfg, &o, msg, sizeof msg);
    if (!g) {
      fprintf (stderr, "gather new: %s\n", msg);
      exit (1);
    }
    uint32_t lout = dq_reorder_output_payload_size (&cfg);
    size_t osz = (size_t) st.n * lout;
    uint8_t *ho = malloc (osz), *go = malloc (osz), *d = dmalloc (st.size), *dout = dmalloc (osz);
    dcopy (d, st.data, st.size);
    memset (go, 0x5a, osz);
    dcopy (dout, go, osz);
    uint32_t s = dq_gather_cpu (&cfg, st.data, st.size, st.pkts, st.n, ho);
    DqReorderCompletion c;
    CHECK_EQ (dq_reorder_gpu_gather (g, d, st.size, st.pkts, st.n, dout, (void *) 7), 0);
    CHECK_EQ (dq_reorder_gpu_poll (g, 1, &c), 1);
    CHECK (c.user == (void *) 7);
    CHECK_EQ (c.kind, DQ_JOB_GATHER);
    CHECK_EQ (c.job_short, s);
    CHECK_EQ (s, st.n_short);
    check_gpu_output (ho, go, dout, osz);
    free (ho);
    free (go);
    dq_cuda_free (d);
    dq_cuda_free (dout);
    dq_reorder_gpu_free (g);
    dqt_stream_free (&st);
  }
}

static void
packetize_cases (void)
{
  dq_test_name = "packetize";
  const DqPacketHeaders h = { .dst_mac = { 2, 0, 0, 0, 0, 2 }, .src_mac = { 2, 0, 0, 0, 0, 1 } };
  uint8_t hdr[42];
  CHECK_EQ (dq_packet_write_headers (hdr, sizeof hdr, &h), 0);
  for (uint32_t k = 0; k < 4; k++) {
    DqReorderConfig cfg;
    dq_reorder_config_init (&cfg);
    cfg.seq_bit_offset = 42 * 8 + k;
    cfg.seq_bit_width = 24 + k;
    cfg.batch_bit_offset = 42 * 8 + 28 + k;
    cfg.batch_bit_width = k ? 4 : 0;
    cfg.packets_per_batch = 100 * (k + 1);
    cfg.payload_offset = 48 + k;
    cfg.payload_size = k == 3 ? 8000 : 1 + 333 * k;
    DqPacketizeTemplate t = { hdr, 42, 14, 34, 0, 60 };
    t.packet_stride = (dq_packetize_packet_length (&cfg, &t) + 63) & ~63u;
    size_t osz = (size_t) cfg.packets_per_batch * t.packet_stride;
    size_t fsz = (size_t) cfg.packets_per_batch * cfg.payload_size;
    uint8_t *frame = malloc (fsz), *ho = malloc (osz), *go = malloc (osz);
    for (size_t i = 0; i < fsz; i++)
      frame[i] = (uint8_t) (i * 7 + k);
    memset (ho, 0x5a, osz);
    memset (go, 0x5a, osz);
    uint8_t *df = dmalloc (fsz), *dout = dmalloc (osz);
    dcopy (df, frame, fsz);
    dcopy (dout, go, osz);
    CHECK_EQ (dq_packetize_cpu (&cfg, &t, frame, 1234567 + k, ho, osz, NULL), 0);
    DqReorderGpuOptions o = { 16, 2, 4, -1, NULL };
    DqReorderGpu *g = dq_reorder_gpu_new (&cfg, &o, NULL, 0);
    CHECK (g != NULL);
    DqReorderCompletion c;
    CHECK_EQ (dq_reorder_gpu_packetize (g, &t, df, 1234567 + k, dout, osz, NULL), 0);
    CHECK_EQ (dq_reorder_gpu_poll (g, 1, &c), 1);
    CHECK_EQ (c.kind, DQ_JOB_PACKETIZE);
    check_gpu_output (ho, go, dout, osz);
    dq_reorder_gpu_free (g);
    free (frame);
    free (ho);
    free (go);
    dq_cuda_free (df);
    dq_cuda_free (dout);
  }
}

/* 10-bit 4:2:2 pgroups -> planar I422_10LE: the kernel against the CPU twin on random pictures,
 * the three planes pitched inside one allocation (as GstCudaMemory lays them out) with even and
 * odd padding, some at odd addresses (the kernel's byte stores), narrow pictures (one partial
 * block), rows of several blocks, and more rows than the grid has blocks (its stride loop).
 * The whole allocation is compared: samples, padding and the bytes around. */
static void
unpack_cases (void)
{
  dq_test_name = "unpack-uyvp";
  static const struct {
    uint32_t w, h, ypad, cpad, shift; /* shift: the planes start this many bytes in */
    int big;                          /* GPU only, not in quick mode */
  } pics[] = {
    { 2, 1, 0, 0, 0, 0 },
    { 2, 3, 1, 3, 1, 0 },
    { 6, 5, 5, 3, 0, 0 },
    { 64, 4, 0, 0, 0, 0 },
    { 510, 3, 2, 0, 0, 0 },  /* 255 pgroups: one block, one thread idle */
    { 514, 2, 62, 6, 0, 0 }, /* 257: two blocks a row */
    { 1026, 3, 3, 1, 1, 0 },
    { 640, 7, 256, 896, 0, 0 },
    { 2, 9000, 1, 2, 0, 0 }, /* 9000 rows of one pgroup: more tiles than blocks */
    { 1920, 1080, 256, 1152, 0, 1 },
    { 3840, 64, 0, 0, 0, 1 },
    { 4098, 33, 7, 5, 1, 1 },
  };
  DqReorderConfig cfg = cfg_make (4, 8, 8, DQ_ELEM_SAME, DQ_ELEM_SAME, DQ_BYTE_ORDER_HOST);
  DqReorderGpuOptions o = { 8, 2, 4, -1, NULL };
  DqReorderGpu *g = dq_reorder_gpu_new (&cfg, &o, NULL, 0);
  CHECK (g != NULL);
  DqRng rng = { 0x10b17422u };
  for (size_t k = 0; k < sizeof pics / sizeof pics[0]; k++) {
#ifdef DQ_TEST_EMU
    if (pics[k].big)
      continue;
#else
    if (pics[k].big && quick)
      continue;
#endif
    const uint32_t w = pics[k].w, h = pics[k].h;
    const size_t yp = 2 * (size_t) w + pics[k].ypad, up = w + pics[k].cpad,
                 vp = w + pics[k].cpad + (k & 1);
    /* Y, U, V one after the other with a gap of 3 bytes, 16 bytes before and after */
    const size_t yo = 16 + pics[k].shift, uo = yo + h * yp + 3, vo = uo + h * up + 3;
    const size_t total = vo + h * vp + 16;
    const size_t n_src = (size_t) dq_uyvp_picture_size (w, h);
    uint8_t *src = malloc (n_src), *hcpu = malloc (total), *hgpu = malloc (total);
    for (size_t i = 0; i < n_src; i++)
      src[i] = (uint8_t) dqt_rand (&rng);
    /* the extremes in the first pgroup */
    memcpy (src, "\xff\xc0\x0f\xfc\x00", 5);
    memset (hcpu, 0xa5, total);
    uint8_t *dsrc = dmalloc (n_src), *dpl = dmalloc (total);
    dcopy (dsrc, src, n_src);
    dcopy (dpl, hcpu, total);
    CHECK_EQ (
        dq_unpack_uyvp_to_i422_10 (src, w, h, hcpu + yo, yp, hcpu + uo, up, hcpu + vo, vp), 0);
    /* on the default stream, or on a reorder context's */
    void *stream = k & 1 ? dq_reorder_gpu_stream (g) : NULL;
    int r = dq_cuda_unpack_uyvp_to_i422_10 (
        dsrc, w, h, dpl + yo, yp, dpl + uo, up, dpl + vo, vp, stream);
    CHECK_EQ (r, 0);
    if (r != 0)
      fprintf (stderr, "unpack %ux%u: %s\n", w, h, dq_cuda_last_error ());
    CHECK_EQ (dq_cuda_stream_synchronize (stream), 0);
    dcopy (hgpu, dpl, total);
    if (memcmp (hcpu, hgpu, total) != 0) {
      size_t i = 0;
      while (hcpu[i] == hgpu[i])
        i++;
      fprintf (stderr,
          "[unpack-uyvp] %ux%u (pitches %zu, %zu, %zu): first difference at byte "
          "%zu: CPU 0x%02x, GPU 0x%02x\n",
          w, h, yp, up, vp, i, hcpu[i], hgpu[i]);
      dq_test_failures++;
    }
    /* the extremes landed: Cb 0x3ff, Y0 0, Cr 0x3ff, Y1 0 */
    CHECK_EQ (hgpu[uo] | hgpu[uo + 1] << 8, 0x3ff);
    CHECK_EQ (hgpu[vo] | hgpu[vo + 1] << 8, 0x3ff);
    CHECK_EQ (hgpu[yo] | hgpu[yo + 1] << 8 | hgpu[yo + 2] << 16 | hgpu[yo + 3] << 24, 0);
    CHECK_EQ (hgpu[yo - 1], 0xa5);
    CHECK_EQ (hgpu[vo + (h - 1) * vp + w], 0xa5);
    n_bytes += total;
    n_subs++;
    n_cases++;
    dq_cuda_free (dsrc);
    dq_cuda_free (dpl);
    free (src);
    free (hcpu);
    free (hgpu);
  }
  /* refused before any launch, with the reason */
  uint8_t *d = dmalloc (64);
  CHECK_EQ (dq_cuda_unpack_uyvp_to_i422_10 (d, 3, 1, d, 6, d, 2, d, 2, NULL), -1);
  CHECK (strstr (dq_cuda_last_error (), "width 3 is odd") != NULL);
  CHECK_EQ (dq_cuda_unpack_uyvp_to_i422_10 (d, 4, 2, d, 7, d, 4, d, 4, NULL), -1);
  CHECK (strstr (dq_cuda_last_error (), "Y pitch of 7 bytes") != NULL);
  CHECK_EQ (dq_cuda_unpack_uyvp_to_i422_10 (d, 4, 2, d, 8, NULL, 4, d, 4, NULL), -1);
  CHECK (strstr (dq_cuda_last_error (), "NULL") != NULL);
  CHECK_EQ (dq_cuda_unpack_uyvp_to_i422_10 (NULL, 0, 0, NULL, 0, NULL, 0, NULL, 0, NULL), 0);
  dq_cuda_free (d);
  dq_reorder_gpu_free (g);
}

/* The API's edges: busy slots, a full frame queue, bad arguments. */
static void
api_cases (void)
{
  dq_test_name = "api";
  DqReorderConfig cfg = cfg_make (4, 8, 8, DQ_ELEM_SAME, DQ_ELEM_SAME, DQ_BYTE_ORDER_HOST);
  DqReorderGpuOptions o = { 8, 2, 3, -1, NULL };
  char msg[256];
  DqReorderGpu *g = dq_reorder_gpu_new (&cfg, &o, msg, sizeof msg);
  CHECK (g != NULL);
  uint8_t *f = dmalloc (64);
  CHECK_EQ (dq_reorder_gpu_add_frame (g, f, NULL), 0);
  CHECK_EQ (dq_reorder_gpu_add_frame (g, f, NULL), 0);
  CHECK_EQ (dq_reorder_gpu_add_frame (g, f, NULL), 0);
  CHECK_EQ (dq_reorder_gpu_add_frame (g, f, NULL), DQ_REORDER_BUSY);
  CHECK_EQ (dq_reorder_gpu_add_frame (g, NULL, NULL), DQ_REORDER_ERROR);
  DqReorderPacket pk[9];
  memset (pk, 0, sizeof pk);
  CHECK_EQ (dq_reorder_gpu_submit (g, f, 64, pk, 9, NULL), DQ_REORDER_ERROR);
  CHECK (strstr (dq_reorder_gpu_error (g), "max_packets") != NULL);
  const uint32_t word = 64u << DQ_REORDER_WORD_LENGTH_SHIFT;
  CHECK_EQ (
      dq_reorder_gpu_submit_words (g, f, 64, &word, DQ_REORDER_WORD_MAX_SHIFT + 1, 1, 0, NULL),
      DQ_REORDER_ERROR);
  CHECK (strstr (dq_reorder_gpu_error (g), "shift 15 is out of range (0..14)") != NULL);
  const uint32_t five[5] = { word, word, word, word, word };
  DqReorderWordRun runs[2] = { { five, 5, 0, 0 }, { five, 5, 64, 0 } };
  CHECK_EQ (dq_reorder_gpu_submit_word_runs (g, f, 128, runs, 2, 6, NULL), DQ_REORDER_ERROR);
  CHECK (strstr (dq_reorder_gpu_error (g), "runs of 10 packets exceed max_packets 8") != NULL);
  runs[1].offset = 96;
  CHECK_EQ (dq_reorder_gpu_submit_word_runs (g, f, 128, runs, 2, 6, NULL), DQ_REORDER_ERROR);
  CHECK (strstr (dq_reorder_gpu_error (g),
             "run 1's offset 96 is not a multiple of the 64-byte stride within data_size 128") !=
      NULL);
  CHECK_EQ (dq_reorder_gpu_submit_word_runs (g, f, 128, runs, 0, 6, NULL), DQ_REORDER_ERROR);
  CHECK (strstr (dq_reorder_gpu_error (g), "n_runs out of range") != NULL);
  CHECK_EQ (dq_reorder_gpu_submit_word_runs (
                g, f, (size_t) DQ_REORDER_WORD_INDEX_MASK + 1, runs, 1, 0, NULL),
      DQ_REORDER_ERROR);
  CHECK (strstr (dq_reorder_gpu_error (g), "data_size out of range") != NULL);
  CHECK_EQ (dq_reorder_gpu_submit (g, f, 64, pk, 1, (void *) 1), 0);
  CHECK_EQ (dq_reorder_gpu_submit (g, f, 64, pk, 1, (void *) 2), 0);
  CHECK_EQ (dq_reorder_gpu_submit (g, f, 64, pk, 1, (void *) 3), DQ_REORDER_BUSY);
  CHECK_EQ (dq_reorder_gpu_inflight (g), 2);
  CHECK (dq_reorder_gpu_stream (g) != NULL && dq_reorder_gpu_event (g) != NULL);
  DqReorderCompletion c;
  CHECK_EQ (dq_reorder_gpu_poll (g, 1, &c), 1);
  CHECK (c.user == (void *) 1);
  CHECK_EQ (c.job_short, 1); /* a zero-length packet */
  CHECK_EQ (dq_reorder_gpu_poll (g, 1, &c), 1);
  CHECK (c.user == (void *) 2);
  CHECK_EQ (dq_reorder_gpu_poll (g, 0, &c), 0);
  CHECK_EQ (dq_reorder_gpu_flush (g, (DqFlushMode) 9, NULL), DQ_REORDER_ERROR);
  CHECK_EQ (c.stats.short_packets, 2);
  dq_reorder_gpu_free (g);
  cfg.payload_size = 0;
  CHECK (dq_reorder_gpu_new (&cfg, &o, msg, sizeof msg) == NULL);
  CHECK (strstr (msg, "payload-size is 0") != NULL);
  dq_cuda_free (f);
}

/* GPUDirect RDMA by dma-buf (daqirisrc memory=cuda gpudirect=true on a ConnectX): export a
 * dma-buf of device memory. Where the driver or kernel has no support the reason is printed
 * (not a failure: that is the machine); where it works, the fd and offset must be right. */
static void
dmabuf_case (void)
{
#ifndef DQ_TEST_EMU
  const size_t size = 4u << 20;
  void *mem = dq_cuda_malloc (size);
  CHECK (mem != NULL);
  if (mem == NULL)
    return;
  int fd = -1;
  uint64_t offset = 0;
  if (dq_cuda_export_dmabuf ((uint8_t *) mem + 4096, size - 8192, &fd, &offset) != 0) {
    printf ("dma-buf export: not available on this machine: %s\n", dq_cuda_last_error ());
    CHECK (fd == -1);
  } else {
    struct stat st;
    CHECK (fd >= 0 && fstat (fd, &st) == 0);
    CHECK (offset == (((uintptr_t) mem + 4096) & 4095));
    printf ("dma-buf export: fd %d, offset %llu\n", fd, (unsigned long long) offset);
    close (fd);
  }
  dq_cuda_free (mem);
#endif
}

int
main (void)
{
  char msg[256], info[256];
  if (!dq_cuda_available (msg, sizeof msg)) {
    printf ("SKIP: %s\n", msg);
    return 77;
  }
  dq_cuda_device_info (info, sizeof info);
  printf ("device: %s\n", info);
  quick = getenv ("DQ_TEST_QUICK") != NULL;
  verbose = getenv ("DQ_TEST_VERBOSE") != NULL;
  api_cases ();
  packetize_cases ();
  unpack_cases ();
  gather_cases ();
  reorder_cases ();
  large_cases ();
  packed_cases ();
  dmabuf_case ();
  printf ("test-cuda-%s: %s: %llu cases, %llu submissions, %llu batches, %.1f MB compared bit for "
          "bit with the CPU twin%s\n",
#ifdef DQ_TEST_EMU
      "emu",
#else
      "gpu",
#endif
      dq_test_failures ? "FAIL" : "PASS", (unsigned long long) n_cases, (unsigned long long) n_subs,
      (unsigned long long) n_batches, (double) n_bytes / 1e6,
      dq_test_failures ? "; see the errors above" : "");
  return dq_test_failures ? 1 : 0;
}
