/* cuda-emu.cc — fibers for cuda-emu.h; see there. */
#include <stdio.h>
#include <ucontext.h>
#include <list>
#include <map>
#include <mutex>
#include <vector>
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h> /* tell valgrind about the fiber stacks */
#endif
#endif
#ifndef VALGRIND_STACK_REGISTER
#define VALGRIND_STACK_REGISTER(a, b) 0
#endif

#include "cuda-emu.h"

DqEmuThread *dq_emu_cur;

/* the __shared__ variables of every kernel (cuda-emu.h), bounds from the linker; one variable
 * here keeps the section there when a build has no other */
static char dq_emu_shared_anchor __attribute__ ((section ("dq_emu_shared"), used));
extern "C" char __start_dq_emu_shared[], __stop_dq_emu_shared[];

namespace {

constexpr size_t kStack = 64 * 1024;
/* yields in a row with no thread getting anywhere: every resident block waits for another */
constexpr unsigned long kStuck = 1u << 16;

enum { RUNNABLE = 0, AT_BLOCK = 1, AT_WARP = 2, YIELDED = 3, DONE = 4 };

struct Fiber {
  DqEmuThread t;
  ucontext_t ctx;
  char *stack;
  int state;
  unsigned slot;
};

struct Warp {
  unsigned alive, arrived, gen;
  uint64_t in[32];
  uint64_t out[2][32];
};

/* a kernel launched and not complete yet */
struct Launch {
  std::function<void ()> body;
  dim3 grid, block;
  std::vector<unsigned> order; /* its blocks, in the order they start */
  unsigned started, finished;
  bool overlap;      /* may start before the launch before it is complete */
  size_t dyn_shared; /* bytes of dynamic shared memory per block */
};
std::list<Launch> g_launches; /* oldest first */

/* a resident block: its threads are fibers slot * g_stride .. + n - 1 */
struct Slot {
  bool active;
  Launch *launch;
  unsigned n, alive, arrived;
  bool crossed; /* its threads just passed a barrier together */
  std::vector<Warp> warps;
  std::vector<unsigned> runnable, yielded;
  std::vector<char> shared; /* its shared memory while another block runs */
  std::vector<char> dyn;    /* its dynamic shared memory (never moves while it runs) */
  int any;                  /* __syncthreads_or's result */
};

ucontext_t g_sched;

struct Fibers : std::vector<Fiber> {
  ~Fibers ()
  {
    for (Fiber &f : *this)
      free (f.stack);
  }
};
Fibers g_fibers;
std::vector<Slot> g_slots;
unsigned g_stride; /* fibers per slot: the largest block launched */
Fiber *g_cur;
unsigned long g_idle; /* yields since a thread last got somewhere */
uint64_t g_rng;
int g_loaded = -1; /* the slot whose shared memory is in the section: -1 none */
/* The host calls in from several threads (an element's streaming thread and its own): one at a
 * time runs the fibers, whichever thread it is (a launch overlapped by the previous one may go on
 * in another thread's call). */
std::mutex g_mu;
thread_local bool g_running; /* this thread runs fibers: a launch from a kernel is a bug */

uint64_t
next_rand ()
{
  if (!g_rng) {
    const char *s = getenv ("DQ_EMU_SEED");
    g_rng = (s ? strtoull (s, NULL, 0) : 1) * 0x9e3779b97f4a7c15ull + 0x1234567ull;
  }
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 2685821657736338717ull;
}

void
make_runnable (unsigned i)
{
  g_fibers[i].state = RUNNABLE;
  g_slots[g_fibers[i].slot].runnable.push_back (i);
}

void
release_block (unsigned s)
{
  Slot &S = g_slots[s];
  S.arrived = 0;
  S.crossed = true;
  for (unsigned i = s * g_stride; i < s * g_stride + S.n; i++)
    if (g_fibers[i].state == AT_BLOCK)
      make_runnable (i);
}

void
release_warp (unsigned s, unsigned w)
{
  Slot &S = g_slots[s];
  Warp &W = S.warps[w];
  memcpy (W.out[W.gen & 1], W.in, sizeof W.in);
  W.gen++;
  W.arrived = 0;
  for (unsigned i = s * g_stride + w * 32; i < s * g_stride + w * 32 + 32 && i < s * g_stride + S.n;
       i++)
    if (g_fibers[i].state == AT_WARP)
      make_runnable (i);
}

void
fiber_main ()
{
  g_slots[g_cur->slot].launch->body ();
  Fiber *f = g_cur;
  Slot &S = g_slots[f->slot];
  f->state = DONE;
  g_idle = 0;
  S.alive--;
  Warp &W = S.warps[f->t.tid.x / 32];
  W.alive--;
  if (W.alive && W.arrived == W.alive)
    release_warp (f->slot, f->t.tid.x / 32);
  if (S.alive && S.arrived == S.alive)
    release_block (f->slot);
  /* returns to g_sched through uc_link */
}

/* (its own function: getcontext returns twice, which would clobber a caller's loop) */
__attribute__ ((noinline)) void
setup_fiber (unsigned i, unsigned slot, const Launch &L, unsigned block)
{
  Fiber &f = g_fibers[i];
  f.t.tid = dim3 (i - slot * g_stride, 0, 0);
  f.t.bid = dim3 (block, 0, 0);
  f.t.grid = L.grid;
  f.t.bdim = L.block;
  f.slot = slot;
  getcontext (&f.ctx);
  f.ctx.uc_stack.ss_sp = f.stack;
  f.ctx.uc_stack.ss_size = kStack;
  f.ctx.uc_link = &g_sched;
  makecontext (&f.ctx, fiber_main, 0);
  make_runnable (i);
}

void
start_block (unsigned s, Launch &L)
{
  Slot &S = g_slots[s];
  const unsigned block = L.order[L.started++];
  S.active = true;
  S.crossed = false;
  S.launch = &L;
  S.n = L.block.x * L.block.y * L.block.z;
  S.alive = S.n;
  S.arrived = 0;
  S.runnable.clear ();
  S.yielded.clear ();
  S.warps.assign ((S.n + 31) / 32, Warp ());
  S.dyn.assign (L.dyn_shared, (char) 0xcd); /* not zeroed, as on a GPU */
  for (unsigned w = 0; w < S.warps.size (); w++)
    S.warps[w].alive = (w + 1) * 32 <= S.n ? 32 : S.n - w * 32;
  for (unsigned i = s * g_stride; i < s * g_stride + S.n; i++)
    setup_fiber (i, s, L, block);
}

/* The launch whose next block may start: the oldest with blocks left, if it is the oldest
 * launch of all, or may overlap the one before it and that one has started all its blocks (on a
 * GPU: every block of it has allowed the next launch, at its start). */
Launch *
next_to_start ()
{
  Launch *prev = NULL;
  for (Launch &L : g_launches) {
    if (L.started < L.grid.x) {
      if (!prev || (L.overlap && prev->started == prev->grid.x))
        return &L;
      return NULL;
    }
    prev = &L;
  }
  return NULL;
}

void
load_shared (unsigned s)
{
  if (g_loaded == (int) s)
    return;
  const size_t n = (size_t) (__stop_dq_emu_shared - __start_dq_emu_shared);
  if (g_loaded >= 0)
    memcpy (g_slots[g_loaded].shared.data (), __start_dq_emu_shared, n);
  g_slots[s].shared.resize (n);
  memcpy (__start_dq_emu_shared, g_slots[s].shared.data (), n);
  g_loaded = (int) s;
}

/* the block to run next: the current one while it has runnable threads (but after a barrier,
 * one time in four, another one: so that blocks also interleave between their barriers), else a
 * random other resident block with runnable threads; when every resident block only has threads
 * that yielded (each waits for another block), they all try again. -1: no resident block. */
int
pick_slot (int cur)
{
  if (cur >= 0 && g_slots[cur].active && !g_slots[cur].runnable.empty ()) {
    Slot &C = g_slots[cur];
    const bool crossed = C.crossed;
    C.crossed = false;
    if (!crossed || next_rand () % 4 != 0)
      return cur;
  }
  std::vector<unsigned> ready;
  for (unsigned s = 0; s < g_slots.size (); s++)
    if (g_slots[s].active && !g_slots[s].runnable.empty ())
      ready.push_back (s);
  if (ready.empty ()) {
    bool any = false;
    for (unsigned s = 0; s < g_slots.size (); s++) {
      Slot &S = g_slots[s];
      if (!S.active)
        continue;
      any = true;
      for (unsigned i : S.yielded)
        make_runnable (i);
      S.yielded.clear ();
      if (!S.runnable.empty ())
        ready.push_back (s);
    }
    if (!any)
      return -1;
    if (ready.empty ()) {
      fprintf (stderr, "cuda-emu: resident blocks deadlocked: every thread waits at a barrier\n");
      abort ();
    }
  }
  return (int) ready[next_rand () % ready.size ()];
}

/* Finished launches leave the list in launch order (the stream's: dq_emu_grid_dependency_sync
 * waits for those before). */
void
drop_finished ()
{
  while (!g_launches.empty () && g_launches.front ().finished == g_launches.front ().grid.x)
    g_launches.pop_front ();
}

/* Runs resident blocks, starting the launches' blocks as places free up, until at most `keep`
 * launches are left (those may have run part of the way). */
void
run_until (size_t keep)
{
  g_running = true;
  int cur = -1;
  g_idle = 0;
  for (;;) {
    if (g_launches.size () <= keep)
      break;
    for (unsigned s = 0; s < g_slots.size (); s++)
      if (!g_slots[s].active) {
        Launch *L = next_to_start ();
        if (!L)
          break;
        start_block (s, *L);
      }
    cur = pick_slot (cur);
    if (cur < 0) {
      fprintf (stderr, "cuda-emu: %zu launches left and no block can start\n", g_launches.size ());
      abort ();
    }
    Slot &S = g_slots[cur];
    load_shared ((unsigned) cur);
    unsigned k = (unsigned) (next_rand () % S.runnable.size ());
    unsigned i = S.runnable[k];
    S.runnable[k] = S.runnable.back ();
    S.runnable.pop_back ();
    g_cur = &g_fibers[i];
    dq_emu_cur = &g_cur->t;
    swapcontext (&g_sched, &g_cur->ctx);
    if (S.alive == 0) {
      /* the block is done (the next one in its place finds its shared memory as a GPU leaves
       * it: undefined) */
      S.active = false;
      S.launch->finished++;
      drop_finished ();
    }
  }
  g_running = false;
}

/* Places and fibers for blocks of n threads, `places` of them at least: only with nothing
 * resident, whose fibers would move. */
void
make_places (unsigned n, unsigned places)
{
  if (n <= g_stride && g_slots.size () >= places)
    return;
  run_until (0);
  g_stride = n > g_stride ? n : g_stride;
  if (places < g_slots.size ())
    places = (unsigned) g_slots.size ();
  g_slots.assign (places, Slot ());
  g_loaded = -1;
  size_t old = g_fibers.size ();
  g_fibers.resize ((size_t) places * g_stride);
  for (size_t i = old; i < g_fibers.size (); i++) {
    g_fibers[i].stack = (char *) malloc (kStack);
    (void) VALGRIND_STACK_REGISTER (g_fibers[i].stack, g_fibers[i].stack + kStack);
  }
}

void
enqueue (dim3 grid, dim3 block, const std::function<void ()> &body, bool overlap, size_t dyn_shared)
{
  const unsigned n = block.x * block.y * block.z;
  make_places (n, dq_emu_resident ());
  g_launches.emplace_back ();
  Launch &L = g_launches.back ();
  L.body = body;
  L.grid = grid;
  L.block = block;
  L.started = L.finished = 0;
  L.overlap = overlap;
  L.dyn_shared = dyn_shared;
  /* blocks start in a random order */
  L.order.resize (grid.x);
  for (unsigned b = 0; b < grid.x; b++)
    L.order[b] = b;
  for (unsigned b = grid.x; b > 1; b--) {
    unsigned k = (unsigned) (next_rand () % b);
    unsigned tmp = L.order[b - 1];
    L.order[b - 1] = L.order[k];
    L.order[k] = tmp;
  }
  g_idle = 0;
}

/* a plain launch runs with whatever is in flight to its end; an overlapped one until the launch
 * before it is complete */
void
launch (dim3 grid, dim3 block, const std::function<void ()> &body, bool overlap, size_t dyn_shared)
{
  if (g_running) {
    fprintf (stderr, "cuda-emu: a kernel launched from a kernel\n");
    abort ();
  }
  std::lock_guard<std::mutex> lock (g_mu);
  enqueue (grid, block, body, overlap, dyn_shared);
  run_until (overlap ? 1 : 0);
}

/* A host call that runs the fibers (none from inside a kernel: it would switch away from itself) */
void
host_run ()
{
  if (g_running)
    return;
  std::lock_guard<std::mutex> lock (g_mu);
  run_until (0);
}

} /* namespace */

unsigned
dq_emu_resident ()
{
  static unsigned r;
  if (!r) {
    const char *e = getenv ("DQ_EMU_RESIDENT");
    const long v = e ? strtol (e, NULL, 10) : 3;
    r = v >= 1 && v <= 16 ? (unsigned) v : 3;
  }
  return r;
}

void
dq_emu_syncthreads ()
{
  Slot &S = g_slots[g_cur->slot];
  g_cur->state = AT_BLOCK;
  g_idle = 0;
  S.arrived++;
  if (S.arrived == S.alive)
    release_block (g_cur->slot); /* every waiter runnable again, this one too */
  swapcontext (&g_cur->ctx, &g_sched);
  dq_emu_cur = &g_cur->t;
}

const uint64_t *
dq_emu_warp_exchange (uint64_t v)
{
  unsigned lane = g_cur->t.tid.x & 31, w = g_cur->t.tid.x / 32;
  Warp &W = g_slots[g_cur->slot].warps[w];
  W.in[lane] = v;
  unsigned gen = W.gen;
  g_cur->state = AT_WARP;
  g_idle = 0;
  W.arrived++;
  if (W.arrived == W.alive)
    release_warp (g_cur->slot, w);
  swapcontext (&g_cur->ctx, &g_sched);
  dq_emu_cur = &g_cur->t;
  return W.out[gen & 1];
}

void
dq_emu_syncwarp ()
{
  (void) dq_emu_warp_exchange (0);
}

void
dq_emu_yield ()
{
  if (++g_idle > kStuck) {
    fprintf (stderr,
        "cuda-emu: resident blocks deadlocked: %lu yields and no thread got "
        "anywhere (blocks waiting for each other, or for a block not yet resident)\n",
        g_idle);
    abort ();
  }
  g_cur->state = YIELDED;
  g_slots[g_cur->slot].yielded.push_back ((unsigned) (g_cur - g_fibers.data ()));
  swapcontext (&g_cur->ctx, &g_sched);
  dq_emu_cur = &g_cur->t;
}

void
dq_emu_grid_dependency_sync ()
{
  const Launch *mine = g_slots[g_cur->slot].launch;
  while (&g_launches.front () != mine)
    dq_emu_yield ();
}

void
dq_emu_launch (dim3 grid, dim3 block, const std::function<void ()> &body, size_t dyn_shared)
{
  launch (grid, block, body, false, dyn_shared);
}

void
dq_emu_launch_overlapped (
    dim3 grid, dim3 block, const std::function<void ()> &body, size_t dyn_shared)
{
  launch (grid, block, body, true, dyn_shared);
}

int
dq_emu_syncthreads_or (int v)
{
  Slot &S = g_slots[g_cur->slot];
  dq_emu_syncthreads (); /* every thread done reading the last result */
  if (threadIdx.x == 0)
    S.any = 0;
  dq_emu_syncthreads ();
  if (v)
    S.any = 1;
  dq_emu_syncthreads ();
  return S.any;
}

/* ---- transaction barriers and bulk copies ----------------------------------------------- */

namespace {

struct BulkOp {
  const DqEmuThread *by; /* the issuing thread (its fiber, while its block runs) */
  void *dst;
  const void *src;
  unsigned bytes;
  uint64_t *bar;  /* loads: the barrier they count on */
  unsigned tests; /* loads: tests of their barrier seen */
};
std::vector<BulkOp> g_loads, g_stores;

void
bar_complete (uint64_t *bar, unsigned bytes)
{
  uint64_t w = *bar;
  const uint32_t tx = (uint32_t) w - bytes;
  w = (w & ~0xffffffffull) | tx;
  if (tx == 0 && ((w >> 32) & 0xffff) == 0) {
    /* the phase completes: parity flips, the arrivals are expected again */
    const uint64_t count = (w >> 48) & 0x7fff;
    w = ((w & (1ull << 63)) ^ (1ull << 63)) | (count << 48) | (count << 32);
  }
  *bar = w;
}

} /* namespace */

void
dq_emu_bar_init (uint64_t *bar, unsigned count)
{
  *bar = ((uint64_t) count << 48) | ((uint64_t) count << 32);
}

void
dq_emu_bulk_load (void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
  /* the arrival with its expected bytes: pending bytes up, pending arrivals down */
  uint64_t w = *bar;
  const uint32_t tx = (uint32_t) w + bytes;
  const uint64_t arrivals = ((w >> 32) & 0xffff) - 1;
  *bar = (w & ~0xffffffffffffull) | (arrivals << 32) | tx;
  g_loads.push_back (BulkOp{ dq_emu_cur, dst, src, bytes, bar, 0 });
}

bool
dq_emu_bar_test (uint64_t *bar, unsigned parity)
{
  for (size_t i = 0; i < g_loads.size (); i++) {
    BulkOp &op = g_loads[i];
    if (op.by != dq_emu_cur || op.bar != bar || ++op.tests < 2)
      continue;
    memcpy (op.dst, op.src, op.bytes);
    bar_complete (bar, op.bytes);
    g_loads.erase (g_loads.begin () + (long) i);
    i--;
  }
  return (unsigned) (*bar >> 63) != (parity & 1);
}

void
dq_emu_bulk_store (void *dst, const void *src, unsigned bytes)
{
  g_stores.push_back (BulkOp{ dq_emu_cur, dst, src, bytes, NULL, 0 });
}

void
dq_emu_bulk_wait ()
{
  for (size_t i = 0; i < g_stores.size (); i++) {
    if (g_stores[i].by != dq_emu_cur)
      continue;
    memcpy (g_stores[i].dst, g_stores[i].src, g_stores[i].bytes);
    g_stores.erase (g_stores.begin () + (long) i);
    i--;
  }
}

/* ---- asynchronous copies into shared memory --------------------------------------------- */

namespace {

struct AsyncOp {
  const DqEmuThread *by;
  void *dst;
  const void *src;
  unsigned bytes;
  uint64_t group; /* the issuer's group number; kOpen until committed */
};
constexpr uint64_t kOpen = ~0ull;
std::vector<AsyncOp> g_async;
std::map<const DqEmuThread *, uint64_t> g_async_groups; /* groups committed, by thread */

} /* namespace */

void
dq_emu_async_copy (void *dst, const void *src, unsigned bytes)
{
  g_async.push_back (AsyncOp{ dq_emu_cur, dst, src, bytes, kOpen });
}

void
dq_emu_async_commit ()
{
  const uint64_t g = g_async_groups[dq_emu_cur]++;
  for (AsyncOp &op : g_async)
    if (op.by == dq_emu_cur && op.group == kOpen)
      op.group = g;
}

void
dq_emu_async_wait (unsigned n)
{
  /* groups 0 .. committed - n - 1 complete: their copies land now */
  const uint64_t committed = g_async_groups[dq_emu_cur];
  for (size_t i = 0; i < g_async.size (); i++) {
    const AsyncOp &op = g_async[i];
    if (op.by != dq_emu_cur || op.group == kOpen || op.group + n >= committed)
      continue;
    memcpy (op.dst, op.src, op.bytes);
    g_async.erase (g_async.begin () + (long) i);
    i--;
  }
}

void *
dq_emu_dynamic_shared ()
{
  return g_slots[g_cur->slot].dyn.data ();
}

void
dq_emu_synchronize ()
{
  host_run ();
}
