/* reorder-finalize.cuh — the finalizer of a K1 submission (the last block to take its ticket):
 * frames, fixups, deferred packets, emitted and completed batches, the results, the state's
 * write-back and hand-over; and the tail that shares its work list. Part of reorder-kernels.cuh,
 * included there only, inside namespace dqk (see the design comment at its top). */

/* ---- the finalizer ----------------------------------------------------------------------- */

struct Fin {
  DevState s;
  int64_t x[kThreads];
  int64_t bincl[kThreads];
  uint32_t slot[kThreads];
  uint32_t idx[kThreads];
  uint8_t late[kThreads];
  uint32_t bpos[kThreads + 1];
  int64_t tmp64[kThreads / 32];
  uint32_t tmp32[kThreads / 32];
  uint32_t n_out, n_rel, n_copy, n_zero;
  uint32_t late_count, accepted, dups;
  uint32_t nb, flag;
  uint32_t run, run_no_frame;    /* complete batches in a row at the window's base */
  int64_t maxK, H0, target;
  uint8_t reset[DQ_REORDER_MAX_WINDOW];
  uint32_t any_reset;            /* some reset[] is set */
  uint32_t win_open, win_first;  /* the results header's window: open batches, the oldest */
  FrameEnt ring[kRingAhead];     /* the free ring's next entries */
  uint64_t ring_base;
  uint32_t ring_n;
};

/* Frames for the window's records that want one (wants_frame, with since_stamp), in batch-id
 * order (block-wide). The free ring lives in host memory: its next entries were fetched into
 * f.ring at the finalizer's start, in one round trip. */
__device__ void
fill_frames (const Params &p, Fin &f, uint64_t since_stamp = kNoStamp)
{
  DevState &s = f.s;
  const uint32_t t = threadIdx.x;
  __syncthreads ();
  bool want = false;
  DevRec *R = NULL;
  if (t < p.W) {
    R = &s.rec[rec_index (p, s.B + t)];
    want = wants_frame (R->frame, R->filled, R->first_stamp, since_stamp);
  }
  const uint64_t head = s.free_head;
  uint32_t wanted;
  const uint32_t rank = frame_rank (p, want, f.tmp32, &wanted);
  if (want && head + rank < p.free_tail) {
    const uint64_t k = head + rank - f.ring_base;
    const FrameEnt e = k < f.ring_n ? f.ring[k] : ring_entry (p, head + rank);
    R->frame = e.ptr;
    R->user = e.user;
  }
  __syncthreads ();
  if (t == 0)
    s.free_head = head_after (head, wanted, p.free_tail);
  __syncthreads ();
}

__device__ void
new_generation (Fin &f, uint32_t r)
{
  DevRec &R = f.s.rec[r];
  R.gen++;
  if ((R.gen & kTagMask) == 0) {
    R.gen++;                      /* tag kTagMask is the one of never-claimed (all-ones) words */
    f.reset[r] = 1;
    f.any_reset = 1;
  }
  R.filled = R.dups = 0;
  R.first_stamp = kNoStamp;
  R.first_ts = 0;
  R.has_first = 0;
}

/* After new generations were started: clear the claims of records whose tags wrapped. */
__device__ void
apply_resets (const Params &p, Fin &f)
{
  __syncthreads ();
  const bool any = f.any_reset != 0;
  if (any) {
    for (uint32_t r = 0; r < p.W; r++) {
      if (!f.reset[r])
        continue;
      unsigned long long *c = p.claims + (size_t) r * p.ppb;
      for (uint32_t s = threadIdx.x; s < p.ppb; s += blockDim.x)
        c[s] = ~0ull;
    }
    __syncthreads ();
    if (threadIdx.x < p.W)
      f.reset[threadIdx.x] = 0;
  }
  __syncthreads ();
  if (any && threadIdx.x == 0)
    f.any_reset = 0;
}

/* The result entry of record R emitted for `cause`. */
__device__ __forceinline__ DqReorderBatch
batch_entry (const Params &p, const DevRec &R, uint32_t cause)
{
  DqReorderBatch b;
  memset (&b, 0, sizeof b);
  b.batch_id = (uint64_t) R.id;
  b.frame = (void *) R.frame;
  b.frame_user = R.frame ? (void *) R.user : NULL;
  b.first_timestamp = R.first_ts;
  b.packets = R.filled;
  b.missing = p.ppb - R.filled;
  b.duplicates = R.dups;
  b.flags = cause | (R.filled == p.ppb ? DQ_BATCH_COMPLETE : 0) |
      (R.frame ? 0 : DQ_BATCH_NO_FRAME);
  return b;
}

/* Emit record r (block-wide): the result entry, the missing-slot list. */
__device__ void
emit (const Params &p, Fin &f, uint32_t r, uint32_t cause)
{
  DevRec &R = f.s.rec[r];
  const uint32_t filled = R.filled;
  if (threadIdx.x == 0) {
    const DqReorderBatch b = batch_entry (p, R, cause);
    if (f.n_out < p.res_cap)
      p.res_batches[f.n_out] = b;
    f.n_out++;
    DqReorderStats &st = f.s.stats;
    st.batches++;
    if (b.missing)
      st.partial++;
    else
      st.complete++;
    if (!R.frame)
      st.no_frame++;
    st.missing_slots += b.missing;
  }
  if (R.frame && filled < p.ppb) {
    const uint32_t tag = tag_of (R.gen);
    const unsigned long long *c = p.claims + (size_t) r * p.ppb;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (uint32_t base = warp * 32; base < p.ppb; base += kThreads) {
      uint32_t s = base + lane;
      bool missing = s < p.ppb && (uint32_t) (__ldcg (c + s) >> 48) != tag;
      uint32_t mask = __ballot_sync (0xffffffffu, missing);
      uint32_t ovf = 0;
      if (lane == 0 && mask) {
        uint32_t k = atomicAdd (&f.n_zero, 1u);
        if (k < p.zcap) {
          p.zeros[k].dst = (uint64_t) ((uint8_t *) R.frame + (size_t) base * p.lout);
          p.zeros[k].mask = mask;
        } else {
          ovf = 1;      /* the list is full: this warp clears its 32 slots itself */
        }
      }
      if (__shfl_sync (0xffffffffu, ovf, 0))
        for (uint32_t k = 0; k < 32; k++)
          if (mask & (1u << k))
            team_zero ((uint8_t *) R.frame + (size_t) (base + k) * p.lout, p.lout, lane, 32);
    }
  }
  __syncthreads ();
}

/* Move the window base to newB (block-wide). */
__device__ void
advance (const Params &p, Fin &f, int64_t newB, uint32_t cause)
{
  const int64_t B = f.s.B;
  const int64_t W = p.W;
  const int64_t end = newB < B + W ? newB : B + W;
  for (int64_t y = B; y < end; y++) {
    const uint32_t r = rec_index (p, y);
    const bool filled = f.s.rec[r].filled != 0;
    __syncthreads ();           /* every thread has read `filled` before thread 0 resets it */
    if (filled)
      emit (p, f, r, cause);
    else if (threadIdx.x == 0)
      f.s.stats.skipped++;
    if (threadIdx.x == 0) {
      DevRec &R = f.s.rec[r];
      if (R.filled) {
        R.frame = 0;
        R.user = 0;
      }
      int64_t k = (newB - y + W - 1) / W;
      R.id = y + k * W;
      new_generation (f, r);
    }
    __syncthreads ();
  }
  if (threadIdx.x == 0) {
    if (newB - B > W)
      f.s.stats.skipped += (uint64_t) (newB - B - W);
    f.s.B = newB;
  }
  fill_frames (p, f);
  apply_resets (p, f);
}

/* Emits the complete batches at the window's base and moves the window past them: all of them
 * at once, one thread each (what advance () by one, again and again, would do: the same
 * entries in the same order, and the frames handed out afterwards in batch-id order). */
__device__ void
complete_batches (const Params &p, Fin &f)
{
  const uint32_t t = threadIdx.x;
  __syncthreads ();
  if (t == 0) {
    f.run = p.W;
    f.run_no_frame = 0;
  }
  __syncthreads ();
  const int64_t B = f.s.B;
  const uint32_t k = complete_run (p, B, [&] (uint32_t r) { return f.s.rec[r].filled; }, &f.run);
  if (k == 0)
    return;
  const bool mine = t < k;
  const uint32_t r = mine ? rec_index (p, B + t) : 0;
  bool framed = true;
  if (mine) {
    DevRec &R = f.s.rec[r];
    framed = R.frame != 0;
    if (f.n_out + t < p.res_cap)
      p.res_batches[f.n_out + t] = batch_entry (p, R, 0);
    if (!framed)
      atomicAdd (&f.run_no_frame, 1u);
  }
  __syncthreads ();
  if (mine) {
    DevRec &R = f.s.rec[r];
    R.frame = 0;
    R.user = 0;
    R.id = B + t + p.W;
    new_generation (f, r);
  }
  __syncthreads ();
  if (t == 0) {
    DqReorderStats &st = f.s.stats;
    st.batches += k;
    st.complete += k;
    st.no_frame += f.run_no_frame;
    f.n_out += k;
    f.s.B = B + k;
  }
  fill_frames (p, f);
  apply_resets (p, f);
}

__device__ void
start_window (const Params &p, Fin &f, int64_t x0)
{
  if (threadIdx.x == 0) {
    f.s.initialized = 1;
    f.s.B = x0;
    for (uint32_t i = 0; i < p.W; i++) {
      uint32_t r = rec_index (p, x0 + i);
      f.s.rec[r].id = x0 + i;
      new_generation (f, r);
    }
  }
  fill_frames (p, f);
  apply_resets (p, f);
}

__device__ void
push_copy (const Params &p, Fin &f, uint32_t i, uint64_t frame, uint32_t slot)
{
  uint32_t k = atomicAdd (&f.n_copy, 1u);
  CopyItem &c = p.copies[k];
  const uint2 d = desc_offlen (p, i);
  c.pkt = (uint64_t) (p.data + d.x);
  c.len = d.y;
  c.dst = frame + (uint64_t) slot * p.lout;
}

/* Records whose first packet came in this burst: its timestamp. Thread t may know it already:
 * known_ts is the timestamp of the packet with stamp known (kNoStamp: none), for record t. */
__device__ void
first_timestamps (const Params &p, Fin &f, uint64_t stamp0, uint64_t known = kNoStamp,
    uint64_t known_ts = 0)
{
  __syncthreads ();
  if (threadIdx.x < p.W) {
    DevRec &R = f.s.rec[threadIdx.x];
    if (!R.has_first && R.first_stamp != kNoStamp && R.first_stamp >= stamp0 &&
        R.first_stamp < stamp0 + p.n) {
      R.first_ts = R.first_stamp == known ? known_ts
          : desc_ts (p, (uint32_t) (R.first_stamp - stamp0));
      R.has_first = 1;
    }
  }
  __syncthreads ();
}

/* The deferred packets (beyond the window at burst start, or all of the first burst), in arrival
 * order: chunks of kThreads; in a chunk, a prefix max gives the window after each packet, and the
 * packets between two moves of the window are claimed together. */
__device__ void
run_deferred (const Params &p, Fin &f, bool fresh, uint64_t stamp0)
{
  const uint32_t t = threadIdx.x;
  /* compact the deferred indices, in order, into aux */
  uint32_t nd = 0;
  for (uint32_t c0 = 0; c0 < p.n; c0 += kThreads) {
    uint32_t i = c0 + t;
    uint32_t d = (i < p.n && __ldcg (p.cls + i) == DQ_PKT_DEFERRED) ? 1u : 0u;
    uint32_t tot;
    uint32_t at = block_excl_sum (d, f.tmp32, &tot);
    if (d)
      p.aux[nd + at] = i;
    nd += tot;
  }
  __syncthreads ();

  int64_t Bcur = f.s.B;
  for (uint32_t c0 = 0; c0 < nd; c0 += kThreads) {
    const uint32_t m = nd - c0 < (uint32_t) kThreads ? nd - c0 : (uint32_t) kThreads;
    int64_t v = INT64_MIN, x = 0;
    uint32_t slot = 0, i = 0;
    bool ok = false;
    if (t < m) {
      i = p.aux[c0 + t];          /* written by this block above: plain load */
      int64_t K = __ldcg ((const long long *) p.pk_x + i);
      uint32_t seq = __ldcg (p.pk_seq + i);
      if (fresh)
        K = dq_unwrap ((uint32_t) K, f.H0, p.key_bits);
      if (fresh)
        atomicMax ((long long *) &f.maxK, (long long) K);
      ok = locate (p, K, seq, x, slot);
      if (ok)
        v = x - (int64_t) p.W + 1;
    }
    int64_t incl = block_incl_max (v, f.tmp64);
    if (incl < Bcur)
      incl = Bcur;
    f.bincl[t] = incl;
    __syncthreads ();
    int64_t excl = t == 0 ? Bcur : f.bincl[t - 1];
    bool late = t < m && (!ok || x < excl);
    bool bnd = t < m && !late && incl > excl;
    f.x[t] = x;
    f.slot[t] = slot;
    f.idx[t] = i;
    f.late[t] = late;
    if (late)
      atomicAdd (&f.late_count, 1u);
    /* boundary positions: where the window moves */
    uint32_t nb;
    uint32_t at = block_excl_sum (bnd ? 1u : 0u, f.tmp32, &nb);
    if (bnd)
      f.bpos[at] = t;
    if (t == 0)
      f.nb = nb;
    __syncthreads ();
    nb = f.nb;
    /* epochs: [0, bpos[0]), [bpos[0], bpos[1]), ... ; each after its window move */
    for (uint32_t e = 0; e <= nb; e++) {
      uint32_t e0 = e == 0 ? 0 : f.bpos[e - 1];
      uint32_t e1 = e < nb ? f.bpos[e] : m;
      if (e > 0)
        advance (p, f, f.bincl[e0], DQ_BATCH_PUSHED);
      if (e0 == e1)
        continue;
      unsigned long long want = 0;
      uint32_t r = 0;
      bool mine = t >= e0 && t < e1 && !f.late[t];
      if (mine) {
        r = rec_index (p, f.x[t]);
        DevRec &R = f.s.rec[r];
        uint64_t stamp = (stamp0 + f.idx[t]) & kStampMask;
        want = ((unsigned long long) tag_of (R.gen) << 48) | stamp;
        unsigned long long old = atomicMin (p.claims + (size_t) r * p.ppb + f.slot[t], want);
        if ((uint32_t) (old >> 48) != tag_of (R.gen)) {
          atomicAdd (&R.filled, 1u);
          atomicAdd (&f.accepted, 1u);
        } else {
          atomicAdd (&R.dups, 1u);
          atomicAdd (&f.dups, 1u);
        }
        atomicMin ((unsigned long long *) &R.first_stamp, (unsigned long long) stamp0 + f.idx[t]);
      }
      __syncthreads ();
      if (mine && f.s.rec[r].frame &&
          __ldcg (p.claims + (size_t) r * p.ppb + f.slot[t]) == want)
        push_copy (p, f, f.idx[t], f.s.rec[r].frame, f.slot[t]);
      first_timestamps (p, f, stamp0);
    }
    Bcur = f.s.B;
    __syncthreads ();
  }
}

/* `ready` = this submission, once the previous one's is in: a finalizer that started early may
 * get here before its predecessor has handed over, and `ready` must never go back (the blocks of
 * submission s + kSets - 1 read ready >= s as "the scratch reset by the finalizer of s is done"; a
 * predecessor's later store would undo a hand-over and leave the next blocks waiting for good).
 * One thread. */
__device__ __forceinline__ void
publish_ready (const Params &p)
{
  wait_ready (p);
  st_release64 (&p.sync->ready, p.job_seq);   /* cumulative: the block's writes too */
}

/* The state and the scratch are the next submission's now: its blocks stop waiting (block-wide;
 * after the state's write-back, or after the last part of the tail). */
__device__ __forceinline__ void
hand_over (const Params &p)
{
  __syncthreads ();
  if (threadIdx.x == 0)
    publish_ready (p);
}

#ifdef DQ_CUDA_EMU
/* The emulator's check of early start: the window this submission's blocks claimed against
 * (computed by them, or loaded from the state) is the one the finalizer has at the same point
 * (after the frames handed out at the burst's start). */
__device__ void
check_window (const Params &p, Fin &f)
{
  __syncthreads ();
  if (threadIdx.x != 0)
    return;
  uint32_t w[kWinWords];
  bool tags = true;
  for (uint32_t k = 0; k < kWinHead + kWinRec * p.W; k++) {
    w[k] = (uint32_t) p.post_win[k];
    tags = tags && (p.post_win[k] & ~kPostValue) == post_tag (p.job_seq);
  }
  const int64_t B = (int64_t) win_u64 (w, 0);
  const uint64_t stamp = win_u64 (w, 4), head = win_u64 (w, 6);
  bool ok = tags && B == f.s.B && (int64_t) win_u64 (w, 2) == f.s.H && stamp == f.s.stamp &&
      head == f.s.free_head && w[8] == f.s.initialized;
  for (uint32_t r = 0; r < p.W; r++) {
    const DevRec &R = f.s.rec[r];
    const uint32_t *q = w + kWinHead + kWinRec * r;
    const uint64_t f0 = win_u64 (q, 4), first = f0 < p.sc->first[r] ? f0 : p.sc->first[r];
    ok = ok && win_u64 (q, 0) == R.frame && q[2] == R.gen &&
        q[3] + p.sc->filled[r] == R.filled && first == R.first_stamp;
  }
  if (!ok) {
    fprintf (stderr, "reorder: submission %llu claimed against a window its finalizer does not "
        "have (B %lld / %lld, stamp %llu / %llu, head %llu / %llu)\n",
        (unsigned long long) p.job_seq, (long long) B, (long long) f.s.B,
        (unsigned long long) stamp, (unsigned long long) f.s.stamp,
        (unsigned long long) head, (unsigned long long) f.s.free_head);
    abort ();
  }
}
#endif

/* What the finalizer reads first, every load issued at once (one round trip): the scratch's
 * counters and this submission's per-record counts as the other blocks left them (L2, not this
 * SM's L1), and this thread's first word of the state. */
struct FinLoads {
  uint32_t shorts, nf, nd;         /* the submission's short, fixup and deferred packets */
  uint32_t late, accepted, dups;   /* thread 0's */
  unsigned long long mk;           /* thread 0's: the largest key + 2^63 (0: none) */
  uint32_t c_filled, c_dups;       /* record t's counts */
  uint64_t c_first, c_ts;          /* its earliest arrival in the burst, and that one's timestamp */
  uint64_t w;                      /* this thread's first word of the state (not early) */
};

/* The counts, and the state's first words unless the previous finalizer may still be running
 * (early); the first packets' timestamps are loaded later, once their stamps are in. */
__device__ __forceinline__ FinLoads
load_counts (const Params &p, bool early, uint32_t state_words)
{
  const uint32_t t = threadIdx.x;
  FinLoads c;
  c.shorts = __ldcg (&p.sc->n_short);
  c.nf = __ldcg (&p.sc->n_fixup);
  c.nd = __ldcg (&p.sc->n_deferred);
  c.late = c.accepted = c.dups = 0;
  c.mk = 0;
  if (t == 0) {
    c.late = __ldcg (&p.sc->n_late);
    c.accepted = __ldcg (&p.sc->n_accepted);
    c.dups = __ldcg (&p.sc->n_dups);
    c.mk = __ldcg (&p.sc->maxK);
  }
  c.c_filled = c.c_dups = 0;
  c.c_first = kNoStamp;
  c.c_ts = 0;
  if (t < p.W) {
    c.c_filled = __ldcg (&p.sc->filled[t]);
    c.c_dups = __ldcg (&p.sc->dups[t]);
    c.c_first = ld_cg64 (&p.sc->first[t]);
  }
  c.w = 0;
  if (!early && t < state_words)
    c.w = ld_cg64 ((const uint64_t *) p.st + t);
  return c;
}

/* The finalizer's own counts start from the blocks' (thread 0). */
__device__ __forceinline__ void
start_counts (Fin &f, const FinLoads &c)
{
  f.n_out = f.n_rel = f.n_copy = f.n_zero = 0;
  f.late_count = c.late;
  f.accepted = c.accepted;
  f.dups = c.dups;
  f.maxK = c.mk ? (int64_t) (c.mk - (1ull << 63)) : INT64_MIN;
  f.flag = 0;
}

/* The state into shared memory: where this block started early, from the previous finalizer's
 * mailbox word by word as it writes them (or once it has handed over, on a GPU without the
 * mailbox); else from the state, its first words (c.w) loaded already. */
__device__ __forceinline__ void
load_state (const Params &p, Fin &f, bool early, uint32_t state_words, uint64_t w)
{
  const uint32_t t = threadIdx.x;
  const uint64_t *st_src = (const uint64_t *) p.st;
  uint64_t *st_dst = (uint64_t *) &f.s;
  if (early && DQ_HAVE_MAIL) {
    for (uint32_t k = t; k < state_words; k += blockDim.x) {
      uint64_t v, tag;
      for (;;) {
        mail_get (p.mail + k, v, tag);
        if (tag + 1 >= p.job_seq)
          break;
        pause_ns (0);
      }
      st_dst[k] = v;
    }
  } else {
    if (early) {
      /* the previous finalizer done with the state */
      if (t == 0)
        wait_ready (p);
      __syncthreads ();
      if (t < state_words)
        w = ld_cg64 (st_src + t);
    }
    if (t < state_words)
      st_dst[t] = w;
    for (uint32_t k = t + blockDim.x; k < state_words; k += blockDim.x)
      st_dst[k] = ld_cg64 (st_src + k);
  }
}

/* This submission's per-record counts into the state's records (no claims to reset yet). */
__device__ __forceinline__ void
merge_counts (const Params &p, Fin &f, const FinLoads &c)
{
  const uint32_t t = threadIdx.x;
  if (t < DQ_REORDER_MAX_WINDOW)
    f.reset[t] = 0;
  if (t == 0)
    f.any_reset = 0;
  __syncthreads ();
  if (t < p.W) {
    DevRec &R = f.s.rec[t];
    R.filled += c.c_filled;
    R.dups += c.c_dups;
    if (c.c_first < R.first_stamp)
      R.first_stamp = c.c_first;
  }
}

/* The free ring's next entries (from the parameters, or host memory in one round trip). */
__device__ __forceinline__ void
prefetch_ring (const Params &p, Fin &f)
{
  const uint32_t t = threadIdx.x;
  const uint64_t head = f.s.free_head;
  const uint64_t avail = p.free_tail - head;
  const uint32_t n = avail < kRingAhead ? (uint32_t) avail : kRingAhead;
  if (t < n)
    f.ring[t] = ring_entry (p, head + t);
  if (t == 0) {
    f.ring_base = head;
    f.ring_n = n;
  }
  __syncthreads ();
}

/* Frames for the empty records at the start of a reorder job (those the blocks claimed with:
 * check_window) or of a flush that keeps the stream. */
__device__ __forceinline__ void
frames_at_start (const Params &p, Fin &f, bool was_init, uint64_t stamp0)
{
  if (was_init && p.kind == DQ_JOB_REORDER) {
    fill_frames (p, f, stamp0);
#ifdef DQ_CUDA_EMU
    check_window (p, f);
#endif
  } else if (was_init && p.kind == DQ_JOB_FLUSH && p.flush_mode != DQ_FLUSH_RESET)
    fill_frames (p, f);
}

/* Fixups: a packet that took a slot from a later arrival of the same burst is copied, if it
 * still holds the slot and the batch has a frame. */
__device__ __forceinline__ void
settle_fixups (const Params &p, Fin &f, uint32_t nf, uint64_t stamp0)
{
  for (uint32_t k = threadIdx.x; k < nf; k += blockDim.x) {
    uint32_t i = __ldcg (p.aux + k);
    int64_t x = __ldcg ((const long long *) p.pk_x + i);
    uint32_t slot = __ldcg (p.pk_seq + i);
    uint32_t r = rec_index (p, x);
    unsigned long long want = ((unsigned long long) tag_of (f.s.rec[r].gen) << 48) |
        ((stamp0 + i) & kStampMask);
    if (f.s.rec[r].frame && __ldcg (p.claims + (size_t) r * p.ppb + slot) == want)
      push_copy (p, f, i, f.s.rec[r].frame, slot);
  }
}

/* The deferred packets (run_deferred); on the first burst ever the window first starts at the
 * batch of the first valid packet, whose key is the head. */
__device__ __forceinline__ void
place_deferred (const Params &p, Fin &f, bool was_init, uint64_t stamp0)
{
  const uint32_t t = threadIdx.x;
  bool fresh = !was_init;
  if (fresh) {
    uint32_t fv = __ldcg (&p.sc->first_valid);
    uint32_t key = (uint32_t) __ldcg ((const long long *) p.pk_x + fv);
    uint32_t seq = __ldcg (p.pk_seq + fv);
    int64_t x0 = 0;
    uint32_t s0;
    locate (p, (int64_t) key, seq, x0, s0);
    if (t == 0) {
      f.H0 = key;
      f.s.H = key;
      f.maxK = key;
    }
    start_window (p, f, x0);
  } else if (t == 0) {
    f.H0 = f.s.H;
  }
  __syncthreads ();
  run_deferred (p, f, fresh, stamp0);
}

/* A reorder job: fixups, the records' first timestamps, the deferred packets, the head past
 * the largest key, then the complete batches at the base. c_first and c_ts of thread t: record
 * t's earliest arrival in the burst and its timestamp, taken where the blocks' stamp is this
 * state's. */
__device__ __forceinline__ void
finalize_reorder (const Params &p, Fin &f, const FinLoads &c, bool was_init, uint64_t stamp,
    uint64_t stamp0)
{
  settle_fixups (p, f, c.nf, stamp0);
  first_timestamps (p, f, stamp0, stamp == stamp0 ? c.c_first : kNoStamp, c.c_ts);
  if (c.nd)
    place_deferred (p, f, was_init, stamp0);
  __syncthreads ();
  if (threadIdx.x == 0 && f.s.initialized && f.maxK > f.s.H)
    f.s.H = f.maxK;
  if (f.s.initialized)
    complete_batches (p, f);
}

/* DQ_FLUSH_OLDEST: the window moves past the oldest batch holding packets (emitting it), then
 * the complete batches after it go too. */
__device__ __forceinline__ void
flush_oldest (const Params &p, Fin &f)
{
  if (threadIdx.x == 0) {
    f.flag = 0;
    for (uint32_t i = 0; i < p.W && !f.flag; i++)
      if (f.s.rec[rec_index (p, f.s.B + i)].filled) {
        f.flag = 1;
        f.target = f.s.B + i + 1;
      }
  }
  __syncthreads ();
  if (f.flag) {
    advance (p, f, f.target, DQ_BATCH_FLUSHED);
    complete_batches (p, f);
  }
}

/* DQ_FLUSH_RESET: every batch holding packets emitted, the window's other frames given back,
 * and the stream forgotten (the free ring's frames: release_free_frames). */
__device__ __forceinline__ void
flush_reset (const Params &p, Fin &f)
{
  const uint32_t t = threadIdx.x;
  for (uint32_t i = 0; i < p.W; i++) {
    uint32_t r = rec_index (p, f.s.B + i);
    if (f.s.rec[r].filled)
      emit (p, f, r, DQ_BATCH_FLUSHED);
    else if (t == 0)
      f.s.stats.skipped++;
    if (t == 0 && f.s.rec[r].filled) {
      f.s.rec[r].frame = 0;
      f.s.rec[r].user = 0;
    }
    __syncthreads ();
  }
  if (t == 0) {
    for (uint32_t i = 0; i < p.W; i++) {
      uint32_t r = rec_index (p, f.s.B + i);
      DevRec &R = f.s.rec[r];
      if (R.frame && f.n_rel < p.rel_cap)
        p.res_released[f.n_rel++] = DqReorderFrame { (void *) R.frame, (void *) R.user };
      R.frame = 0;
      R.user = 0;
    }
    for (uint32_t r = 0; r < p.W; r++) {
      f.s.rec[r].id = 0;
      new_generation (f, r);
    }
    f.s.initialized = 0;
    f.s.B = f.s.H = 0;
  }
  apply_resets (p, f);
}

/* A flush of an initialized window. */
__device__ __forceinline__ void
finalize_flush (const Params &p, Fin &f)
{
  if (p.flush_mode == DQ_FLUSH_OLDEST)
    flush_oldest (p, f);
  else if (p.flush_mode == DQ_FLUSH_ALL)
    advance (p, f, f.s.B + p.W, DQ_BATCH_FLUSHED);
  else
    flush_reset (p, f);
}

/* DQ_FLUSH_RESET: the free ring's frames not handed out go back too (thread 0). */
__device__ __forceinline__ void
release_free_frames (const Params &p, Fin &f)
{
  while (f.s.free_head < p.free_tail) {
    const FrameEnt e = ring_entry (p, f.s.free_head);
    if (f.n_rel < p.rel_cap)
      p.res_released[f.n_rel++] = DqReorderFrame { (void *) e.ptr, (void *) e.user };
    f.s.free_head++;
  }
}

/* The window for the results header: open batches, and the oldest (one thread per record). */
__device__ __forceinline__ void
count_open (const Params &p, Fin &f)
{
  const uint32_t t = threadIdx.x;
  if (t == 0) {
    f.win_open = 0;
    f.win_first = p.W;
  }
  __syncthreads ();
  if (f.s.initialized && t < p.W && f.s.rec[rec_index (p, f.s.B + t)].filled) {
    atomicAdd (&f.win_open, 1u);
    atomicMin (&f.win_first, t);
  }
  __syncthreads ();
}

/* The tail's work list into the scratch for the next submission; then the helpers go (before
 * the results go to host memory, so that the release has no writes across the bus to wait
 * for). Thread 0. */
__device__ __forceinline__ void
release_helpers (const Params &p, const Fin &f, bool quiet, bool work)
{
  p.sc->n_copy = f.n_copy;
  p.sc->n_zero = f.n_zero < p.zcap ? f.n_zero : p.zcap;
  if (!quiet)
    st_release64 (&p.sc->go, 2 * p.job_seq + (work ? 1 : 0));
}

/* The submission's counts into the running totals; the late and short packets not reported yet
 * go with its first emitted batch. Thread 0. */
__device__ __forceinline__ void
add_totals (const Params &p, Fin &f, uint32_t shorts)
{
  DqReorderStats &st = f.s.stats;
  uint32_t late = f.late_count;
  if (p.kind == DQ_JOB_REORDER)
    st.packets += p.n;
  st.accepted += f.accepted;
  st.duplicates += f.dups;
  st.late += late;
  st.short_packets += shorts;
  st.pending_late += late;
  st.pending_short += shorts;
  uint32_t nout = f.n_out < p.res_cap ? f.n_out : p.res_cap;
  if (nout) {
    uint32_t l = st.pending_late > 0xffffffffull ? 0xffffffffu : (uint32_t) st.pending_late;
    uint32_t s = st.pending_short > 0xffffffffull ? 0xffffffffu : (uint32_t) st.pending_short;
    p.res_batches[0].late = l;
    p.res_batches[0].short_packets = s;
    st.pending_late -= l;
    st.pending_short -= s;
  }
}

/* The results header: counts, totals and the window after this submission. Thread 0. */
__device__ __forceinline__ ResHdr
results_header (const Params &p, const Fin &f, uint32_t shorts)
{
  ResHdr h;
  memset (&h, 0, sizeof h);
  h.n_batches = f.n_out < p.res_cap ? f.n_out : p.res_cap;
  h.n_released = f.n_rel;
  h.job_short = shorts;
  h.kind = p.kind;
  h.free_head = f.s.free_head;
  h.stats = f.s.stats;
  h.window.initialized = f.s.initialized;
  if (f.s.initialized) {
    h.window.base = (uint64_t) f.s.B;
    h.window.open = f.win_open;
    if (f.win_open) {
      const DevRec &R = f.s.rec[rec_index (p, f.s.B + f.win_first)];
      h.window.oldest_id = (uint64_t) R.id;
      h.window.oldest_first_timestamp = R.first_ts;
    }
  }
  return h;
}

/* The state for the next submission: its early finalizer's mail first. */
__device__ __forceinline__ void
write_state (const Params &p, const Fin &f, uint32_t state_words)
{
  const uint64_t *src = (const uint64_t *) &f.s;
  uint64_t *dst = (uint64_t *) p.st_out;
  for (uint32_t k = threadIdx.x; k < state_words; k += blockDim.x) {
    if (DQ_HAVE_MAIL)
      mail_put (p.mail + k, src[k], p.job_seq);
    dst[k] = src[k];
  }
}

/* The previous submission's scratch (its finalizer and the blocks of this one are done with
 * it), for the submission after next; `go` stays: its helpers may not have seen it yet. */
__device__ __forceinline__ void
reset_scratch (const Params &p)
{
  const uint32_t t = threadIdx.x;
  Scratch *z = p.sc_prev;
  if (t == 0) {
    z->blocks_done = 0;
    z->n_short = z->n_late = z->n_deferred = z->n_fixup = z->n_accepted = z->n_dups = 0;
    z->first_valid = 0xffffffffu;
    z->maxK = 0;
    z->n_copy = z->n_zero = 0;
    z->tail_done = 0;
  }
  if (t < p.W) {
    z->filled[t] = 0;
    z->dups[t] = 0;
    z->first[t] = kNoStamp;
  }
}

/* The emitted batches' entries into host memory. */
__device__ __forceinline__ void
copy_results (const Params &p, const Fin &f)
{
  const uint32_t words = (f.n_out < p.res_cap ? f.n_out : p.res_cap) * sizeof (DqReorderBatch) / 8;
  const uint64_t *src = (const uint64_t *) p.res_batches;
  uint64_t *dst = (uint64_t *) p.res_out;
  for (uint32_t k = threadIdx.x; k < words; k += blockDim.x)
    dst[k] = ld_cg64 (src + k);
}

/* Returns whether the tail has work (then the tail's last part hands over, else finalize).
 * early: this block started early (the previous finalizer may still be running); stamp: the
 * arrival stamp of this burst's first packet, as this block's window had it. */
__device__ bool
finalize (const Params &p, Fin &f, bool early, uint64_t stamp)
{
  const uint32_t t = threadIdx.x;
  const uint32_t state_words = (uint32_t) (offsetof (DevState, rec) + p.W * sizeof (DevRec)) / 8;
  FinLoads c = load_counts (p, early, state_words);
  /* a reorder job with no fixups and no deferred packets leaves the tail nothing (only they
   * list copies, and only the deferred path and flushes emit partial batches): the helpers may
   * leave now, not after the finalizer */
  const bool quiet = p.kind == DQ_JOB_REORDER && c.nf == 0 && c.nd == 0;
  if (quiet && t == 0)
    *(volatile unsigned long long *) &p.sc->go = 2 * p.job_seq;   /* no data to publish */
  if (t == 0)
    start_counts (f, c);
  /* the timestamp of each record's first packet in this burst (read at its first use), off the
   * chain of hand-overs: loaded while this block waits for the previous finalizer, else while
   * the state's words come in */
  if (c.c_first != kNoStamp && c.c_first - stamp < p.n)
    c.c_ts = desc_ts (p, (uint32_t) (c.c_first - stamp));
  load_state (p, f, early, state_words, c.w);
  merge_counts (p, f, c);
  prefetch_ring (p, f);
  const bool was_init = f.s.initialized != 0;
  const uint64_t stamp0 = f.s.stamp;

  frames_at_start (p, f, was_init, stamp0);
  if (p.kind == DQ_JOB_REORDER)
    finalize_reorder (p, f, c, was_init, stamp, stamp0);
  else if (p.kind == DQ_JOB_FLUSH && was_init)
    finalize_flush (p, f);
  if (p.kind == DQ_JOB_FLUSH && p.flush_mode == DQ_FLUSH_RESET && t == 0)
    release_free_frames (p, f);
  count_open (p, f);

  const bool work = f.n_copy || f.n_zero;
  ResHdr h;                        /* thread 0's */
  if (t == 0) {
    release_helpers (p, f, quiet, work);
    add_totals (p, f, c.shorts);
    h = results_header (p, f, c.shorts);
    if (p.kind == DQ_JOB_REORDER)
      f.s.stamp = stamp0 + p.n;
  }
  __syncthreads ();
  write_state (p, f, state_words);
  reset_scratch (p);
  if (!work)
    hand_over (p);
  /* the results into host memory last: no fence above waits for writes across the bus */
  copy_results (p, f);
  if (t == 0)
    *p.res = h;
  return work;
}

/* ---- the tail: the finalizer's work list ------------------------------------------------- */

/* Part `part` of `parts` (one block each) of the finalizer's work list: the payloads of deferred
 * and fixup winners, the zero-fill of the missing slots of emitted batches. Empty in the steady
 * state (no loss, no in-burst duplicate race). Not inlined: inlined, its movers made all of K1
 * slower (H200, 1024 packets: 11.1 against 9.2 µs per submission). */
__device__ __noinline__ void
tail (const Params &p, uint32_t part, uint32_t parts)
{
  const uint32_t nc = __ldcg (&p.sc->n_copy), nz = __ldcg (&p.sc->n_zero);
  move_payloads (p, ItemJobs { p.copies, p.pay_off }, nc, part * kThreads + threadIdx.x,
      parts * kThreads);
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warps = parts * (kThreads / 32);
  for (uint32_t w = part * (kThreads / 32) + (threadIdx.x >> 5); w < nz; w += warps) {
    const ZeroItem z = p.zeros[w];
    for (uint32_t k = 0; k < 32; k++)
      if (z.mask & (1u << k))
        team_zero ((uint8_t *) z.dst + (size_t) k * p.lout, p.lout, lane, 32);
  }
}

/* The tail's part `part` of `parts`, once every block of the submission has moved its payloads
 * (a fixup rewrites a slot that a later arrival's block copied); the last part done hands over. */
__device__ void
run_tail (const Params &p, uint32_t part, uint32_t parts)
{
  if (threadIdx.x == 0)
    for (unsigned ns = 32; ld_acquire64 (p.slot_moved) < p.slot_through;
        ns = ns < 1024 ? 2 * ns : ns)
      pause_ns (ns);
  __syncthreads ();
  tail (p, part, parts);
  __syncthreads ();
  if (threadIdx.x == 0) {
    __threadfence ();
    if (atomicAdd (&p.sc->tail_done, 1u) == parts - 1) {
      __threadfence ();           /* the other parts' writes (seen through the counter) first */
      publish_ready (p);
    }
  }
}
