/* reorder-early.cuh — K1's early start: a block takes the previous submission's window and
 * counts from its posts (or its last ticket and its scratch) and computes the window its
 * finalizer will leave, so that it claims without waiting for that finalizer. Part of
 * reorder-kernels.cuh, included there only, inside namespace dqk (see the design comment at its
 * top: the posts, early_window). */

/* One block's post (take_posts): into the block's sums of the previous submission's counts. */
__device__ __forceinline__ void
take_block (const Params &p, Blk &b, uint32_t blk, uint64_t w0, uint64_t w1)
{
  if (w0 & kPostFallback) {
    atomicMax (&b.fallback, 1u);
    return;
  }
  const unsigned long long d = w0 & ((1ull << 33) - 1);
  if (d)
    atomicMax (&b.add_key, d);
  for (uint32_t k = 0; k < 2; k++) {
    const uint32_t e = (uint32_t) (w1 >> (24 * k)) & 0xffffffu;
    if (e & (1u << 23)) {
      const uint32_t r = (e >> 17) & 63;
      atomicAdd (&b.add_tot[r], (e >> 8) & 511);
      atomicMin (&b.add_first[r], (unsigned long long) blk * p.prev_per_block + (e & 255));
    }
  }
}

/* Early start from the previous submission's posts: every thread polls its share of the words
 * (window words t and t + kThreads, blocks t and t + kThreads), keeping those that carry the
 * submission's tag, until the block has them all; one round trip after the last one lands.
 * Returns false where one of its blocks fell back (then take_scratch). Block-wide. */
__device__ bool
take_posts (const Params &p, Blk &b)
{
  const uint32_t t = threadIdx.x;
  const uint64_t tag = post_tag (p.job_seq - 1);
  const uint32_t nwin = kWinHead + kWinRec * p.W;
  const unsigned long long *pw = p.post_win_prev, *pb = p.post_blk_prev;
  uint32_t pending = (t < nwin ? 1u : 0u) | (t + kThreads < nwin ? 2u : 0u) |
      (t < p.prev_grid ? 4u : 0u) | (t + kThreads < p.prev_grid ? 8u : 0u);
  for (;;) {
    uint64_t w[2] = { 0, 0 }, c[2][2] = { { 0, 0 }, { 0, 0 } };
    DQ_UNROLL
    for (uint32_t k = 0; k < 2; k++) {
      if (pending & (1u << k))
        w[k] = post_get (pw + t + k * kThreads);
      if (pending & (4u << k))
        post_get2 (pb + 2 * (t + k * kThreads), c[k][0], c[k][1]);
    }
    DQ_UNROLL
    for (uint32_t k = 0; k < 2; k++) {
      if ((pending & (1u << k)) && (w[k] & ~kPostValue) == tag) {
        b.wv[t + k * kThreads] = (uint32_t) w[k];
        pending &= ~(1u << k);
      }
      if ((pending & (4u << k)) && (c[k][0] & ~kPostValue) == tag &&
          (c[k][1] & ~kPostValue) == tag) {
        take_block (p, b, t + k * kThreads, c[k][0], c[k][1]);
        pending &= ~(4u << k);
      }
    }
    if (!__syncthreads_or (pending))
      break;
    pause_ns (32);
  }
  return !b.fallback;
}

/* Early start from the previous submission's last ticket (thread 0 has seen it, and a barrier
 * followed): its posted window and its scratch's counts, and whether it had deferred packets
 * or fixups (b.early: it had none), in one round trip. Block-wide. */
__device__ void
take_scratch (const Params &p, Blk &b)
{
  const uint32_t t = threadIdx.x;
  const Scratch *C = p.sc_prev;
  for (uint32_t k = t; k < kWinHead + kWinRec * p.W; k += kThreads)
    b.wv[k] = (uint32_t) ld_cg64 (p.post_win_prev + k);
  if (t < p.W) {
    b.add_tot[t] = __ldcg (&C->filled[t]);
    b.add_first[t] = ld_cg64 (&C->first[t]);
  }
  if (t == 0) {
    const uint32_t nd = __ldcg (&C->n_deferred), nf = __ldcg (&C->n_fixup);
    b.add_key = ld_cg64 (&C->maxK);
    b.early = nd == 0 && nf == 0;
  }
}

/* Early start: the window the previous submission's blocks claimed against and its counts, as
 * take_posts or take_scratch left them, merged (as finalize () merges them): H past its
 * largest key, each record's first claimers and earliest arrival. Block-wide. */
__device__ void
early_take (const Params &p, Blk &b, bool posts)
{
  const uint32_t t = threadIdx.x;
  const uint32_t *w = b.wv;
  const uint64_t stamp = win_u64 (w, 4);
  if (t == 0) {
    const int64_t H = (int64_t) win_u64 (w, 2);
    const unsigned long long mk = b.add_key;
    b.B = (int64_t) win_u64 (w, 0);
    b.stamp = stamp + p.prev_n;
    b.head = win_u64 (w, 6);
    b.initialized = w[8];
    if (posts) {
      b.H = H + (int64_t) mk;
      b.early = 1;
    } else {
      b.H = mk && (int64_t) (mk - (1ull << 63)) > H ? (int64_t) (mk - (1ull << 63)) : H;
    }
    b.bad = !b.initialized;
    b.run = p.W;
  }
  if (t < p.W) {
    const uint32_t *q = w + kWinHead + kWinRec * t;
    const uint64_t f0 = win_u64 (q, 4), a = b.add_first[t];
    const uint64_t f1 = posts && a != kNoStamp ? stamp + a : a;
    b.frame[t] = win_u64 (q, 0);
    b.gen[t] = q[2];
    b.tot[t] = q[3] + b.add_tot[t];
    b.first[t] = f0 < f1 ? f0 : f1;
  }
  __syncthreads ();
}

/* Early start: the window the previous submission's finalizer will leave, from the window its
 * blocks claimed against and its counts (early_take), as finalize () computes it when that
 * submission had no deferred packets and no fixups: the complete batches at the base emitted
 * (new generations), frames for the empty records from the free ring up to the previous
 * submission's tail. Clears b.early where that cannot be done here: the window was not
 * initialized, a claim tag wraps (the finalizer then clears those claims), or a frame to hand
 * out is not among the parameters' ring entries, and then waits for the previous finalizer.
 * Block-wide. */
__device__ void
early_window (const Params &p, Blk &b)
{
  const uint32_t t = threadIdx.x;
  const uint32_t k = complete_run (p, b.B, [&] (uint32_t r) { return b.tot[r]; }, &b.run);
  if (t < k) {
    const uint32_t r = rec_index (p, b.B + t);
    const uint32_t g = b.gen[r] + 1;
    if ((g & kTagMask) == 0)
      b.bad = 1;
    b.frame[r] = 0;
    b.gen[r] = g;
    b.tot[r] = 0;
    b.first[r] = kNoStamp;
  }
  __syncthreads ();
  if (t == 0)
    b.B += k;
  __syncthreads ();
  bool want = false;
  uint32_t r = 0;
  if (t < p.W) {
    r = rec_index (p, b.B + t);
    want = wants_frame (b.frame[r], b.tot[r], b.first[r], kNoStamp);
  }
  uint32_t wanted;
  const uint32_t rank = frame_rank (p, want, b.tmp32, &wanted);
  if (want && b.head + rank < p.prev_free_tail) {
    /* from the parameters only: every block reading host memory would load the bus */
    const uint64_t e = b.head + rank - p.ahead_base;
    if (e < p.ahead_n)
      b.frame[r] = p.ahead[e].ptr;
    else
      b.bad = 1;
  }
  __syncthreads ();
  if (t == 0) {
    b.head = head_after (b.head, wanted, p.prev_free_tail);
    if (b.bad) {           /* wait for the previous finalizer after all */
      b.early = 0;
      wait_ready (p);
    }
  }
  __syncthreads ();
}
