/* cuda-emu.cc — fibers for cuda-emu.h; see there. */
#include <stdio.h>
#include <ucontext.h>
#include <vector>
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>    /* tell valgrind about the fiber stacks */
#endif
#endif
#ifndef VALGRIND_STACK_REGISTER
#define VALGRIND_STACK_REGISTER(a, b) 0
#endif

#include "cuda-emu.h"

DqEmuThread *dq_emu_cur;
dim3 dq_emu_block, dq_emu_grid, dq_emu_block_dim;

namespace {

constexpr size_t kStack = 64 * 1024;

enum { RUNNABLE = 0, AT_BLOCK = 1, AT_WARP = 2, DONE = 3 };

struct Fiber {
  DqEmuThread t;
  ucontext_t ctx;
  char *stack;
  int state;
};

struct Warp {
  unsigned alive, arrived, gen;
  uint64_t in[32];
  uint64_t out[2][32];
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
std::vector<Warp> g_warps;
std::vector<unsigned> g_runnable;
const std::function<void ()> *g_body;
Fiber *g_cur;
unsigned g_alive, g_block_arrived;
uint64_t g_rng;

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
  g_runnable.push_back (i);
}

void
release_block ()
{
  g_block_arrived = 0;
  for (unsigned i = 0; i < g_fibers.size (); i++)
    if (g_fibers[i].state == AT_BLOCK)
      make_runnable (i);
}

void
release_warp (unsigned w)
{
  Warp &W = g_warps[w];
  memcpy (W.out[W.gen & 1], W.in, sizeof W.in);
  W.gen++;
  W.arrived = 0;
  for (unsigned i = w * 32; i < w * 32 + 32 && i < g_fibers.size (); i++)
    if (g_fibers[i].state == AT_WARP)
      make_runnable (i);
}

void
fiber_main ()
{
  (*g_body) ();
  Fiber *f = g_cur;
  f->state = DONE;
  g_alive--;
  unsigned w = f->t.tid.x / 32;
  g_warps[w].alive--;
  if (g_warps[w].alive && g_warps[w].arrived == g_warps[w].alive)
    release_warp (w);
  if (g_alive && g_block_arrived == g_alive)
    release_block ();
  /* returns to g_sched through uc_link */
}

/* (its own function: getcontext returns twice, which would clobber a caller's loop) */
__attribute__ ((noinline)) void
setup_fiber (unsigned i)
{
  Fiber &f = g_fibers[i];
  f.t.tid = dim3 (i, 0, 0);
  getcontext (&f.ctx);
  f.ctx.uc_stack.ss_sp = f.stack;
  f.ctx.uc_stack.ss_size = kStack;
  f.ctx.uc_link = &g_sched;
  makecontext (&f.ctx, fiber_main, 0);
  make_runnable (i);
}

}  /* namespace */

void
dq_emu_syncthreads ()
{
  g_cur->state = AT_BLOCK;
  g_block_arrived++;
  if (g_block_arrived == g_alive)
    release_block ();              /* every waiter runnable again, this one too */
  swapcontext (&g_cur->ctx, &g_sched);
  dq_emu_cur = &g_cur->t;
}

const uint64_t *
dq_emu_warp_exchange (uint64_t v)
{
  unsigned lane = g_cur->t.tid.x & 31, w = g_cur->t.tid.x / 32;
  Warp &W = g_warps[w];
  W.in[lane] = v;
  unsigned gen = W.gen;
  g_cur->state = AT_WARP;
  W.arrived++;
  if (W.arrived == W.alive)
    release_warp (w);
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
dq_emu_launch (dim3 grid, dim3 block, const std::function<void ()> &body)
{
  const unsigned n = block.x * block.y * block.z;
  if (g_fibers.size () < n) {
    size_t old = g_fibers.size ();
    g_fibers.resize (n);
    for (size_t i = old; i < n; i++) {
      g_fibers[i].stack = (char *) malloc (kStack);
      (void) VALGRIND_STACK_REGISTER (g_fibers[i].stack, g_fibers[i].stack + kStack);
    }
  }
  g_warps.assign ((n + 31) / 32, Warp ());
  dq_emu_grid = grid;
  dq_emu_block_dim = block;
  g_body = &body;

  /* blocks in a random order */
  std::vector<unsigned> order (grid.x);
  for (unsigned b = 0; b < grid.x; b++)
    order[b] = b;
  for (unsigned b = grid.x; b > 1; b--) {
    unsigned k = (unsigned) (next_rand () % b);
    unsigned tmp = order[b - 1];
    order[b - 1] = order[k];
    order[k] = tmp;
  }
  for (unsigned bi = 0; bi < grid.x; bi++) {
    dq_emu_block = dim3 (order[bi], 0, 0);
    g_runnable.clear ();
    g_alive = n;
    g_block_arrived = 0;
    for (unsigned w = 0; w < g_warps.size (); w++) {
      memset (&g_warps[w], 0, sizeof g_warps[w]);
      g_warps[w].alive = (w + 1) * 32 <= n ? 32 : n - w * 32;
    }
    for (unsigned i = 0; i < n; i++)
      setup_fiber (i);
    while (!g_runnable.empty ()) {
      unsigned k = (unsigned) (next_rand () % g_runnable.size ());
      unsigned i = g_runnable[k];
      g_runnable[k] = g_runnable.back ();
      g_runnable.pop_back ();
      g_cur = &g_fibers[i];
      dq_emu_cur = &g_cur->t;
      swapcontext (&g_sched, &g_cur->ctx);
    }
    if (g_alive) {
      fprintf (stderr, "cuda-emu: block %u deadlocked: %u threads wait at a barrier\n",
          order[bi], g_alive);
      abort ();
    }
  }
}
