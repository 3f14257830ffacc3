/* test-cuda-emu-sched.cc — the CUDA emulator's scheduling (cuda/cuda-emu.h): resident blocks
 * interleave, each with its own shared memory (static and dynamic); a block may wait for another
 * resident one; blocks that can only wait for each other are reported as a deadlock. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda-emu.h"

namespace {

int failures;

void
check (bool ok, const char *what)
{
  printf ("%s: %s\n", ok ? "ok" : "FAIL", what);
  if (!ok)
    failures++;
}

/* every thread writes a value of its block into shared memory, lets the other resident blocks run
 * (every thread of the block yields, so another block's threads write theirs in between), and
 * counts what no longer holds */
__global__ void
shared_kernel (unsigned *wrong, unsigned *switched, volatile unsigned *last_block)
{
  __shared__ unsigned mine[64];
  __shared__ unsigned owner;
  const unsigned t = threadIdx.x, b = blockIdx.x;
  if (t == 0)
    owner = b;
  mine[t] = b * 1000 + t;
  __syncthreads ();
  for (int k = 0; k < 4; k++) {
    if (t == 0) {
      if (*last_block != b)
        atomicAdd (switched, 1u);
      *last_block = b;
    }
    dq_emu_yield ();
    __syncthreads ();
  }
  if (owner != b || mine[t] != b * 1000 + t)
    atomicAdd (wrong, 1u);
}

/* block b waits until block b + 1 has finished: the chain only completes if the blocks run
 * side by side */
__global__ void
chain_kernel (volatile unsigned *done, unsigned *order, unsigned *pos)
{
  const unsigned b = blockIdx.x;
  if (threadIdx.x == 0 && b + 1 < gridDim.x)
    while (!done[b + 1])
      dq_emu_yield ();
  __syncthreads ();
  if (threadIdx.x == 0) {
    order[atomicAdd (pos, 1u)] = b;
    done[b] = 1;
  }
}

/* the first of two launches: its blocks let others run a few times before they finish */
__global__ void
first_kernel (volatile unsigned *done)
{
  for (int k = 0; k < 4; k++)
    dq_emu_yield ();
  __syncthreads ();
  if (threadIdx.x == 0)
    done[blockIdx.x] = 1;
}

/* the second, overlapping the first: notes whether the first was complete when it started, and
 * whether it is after pdl_wait (dq_emu_grid_dependency_sync) */
__global__ void
second_kernel (volatile unsigned *done, unsigned first_grid, unsigned *early, unsigned *late)
{
  bool all = true;
  for (unsigned b = 0; b < first_grid; b++)
    all = all && done[b];
  if (threadIdx.x == 0 && !all)
    atomicAdd (early, 1u);
  dq_emu_grid_dependency_sync ();
  all = true;
  for (unsigned b = 0; b < first_grid; b++)
    all = all && done[b];
  if (!all)
    atomicAdd (late, 1u);
}

/* every block waits for a flag nobody sets */
__global__ void
stuck_kernel (volatile unsigned *never)
{
  if (threadIdx.x == 0)
    while (!*never)
      dq_emu_yield ();
  __syncthreads ();
}

/* every thread writes a value of its block into the block's dynamic shared memory, lets the
 * other resident blocks run a few times, and counts what no longer holds */
__global__ void
dynamic_kernel (unsigned *wrong)
{
  unsigned *dyn = (unsigned *) dq_emu_dynamic_shared ();
  const unsigned t = threadIdx.x, b = blockIdx.x;
  dyn[t] = b * 100 + t;
  for (int k = 0; k < 4; k++) {
    dq_emu_yield ();
    __syncthreads ();
    if (dyn[t] != b * 100 + t)
      atomicAdd (wrong, 1u);
  }
}

} /* namespace */

int
main (void)
{
  /* the blocks' shared memory stays theirs while others run */
  /* (the launch captures its arguments by value: pointers) */
  unsigned wrong = 0, switched = 0, last = ~0u;
  unsigned *wrong_p = &wrong, *switched_p = &switched, *last_p = &last;
  DQ_LAUNCH (shared_kernel, 12, 64, 0, wrong_p, switched_p, last_p);
  check (wrong == 0, "each resident block keeps its own shared memory");
  /* a block's first turn counts once; more means blocks took turns before finishing */
  check (dq_emu_resident () == 1 ? switched == 12 : switched > 12,
      "resident blocks run in turns (a block yields, another runs)");

  /* a block waits for another resident block */
  const unsigned R = dq_emu_resident ();
  unsigned done[16] = { 0 }, order[16] = { 0 }, pos = 0;
  unsigned *done_p = done, *order_p = order, *pos_p = &pos;
  DQ_LAUNCH (chain_kernel, R, 32, 0, done_p, order_p, pos_p);
  bool in_order = pos == R;
  for (unsigned k = 0; k < R && in_order; k++)
    in_order = order[k] == R - 1 - k;
  check (in_order, "blocks waiting for each other in a chain finish last to first");

  /* a launch overlapping the one before it (programmatic dependent launch) */
  unsigned first_done[2] = { 0 }, early = 0, late = 0;
  unsigned *first_done_p = first_done, *early_p = &early, *late_p = &late;
  dq_emu_launch_overlapped (dim3 (2), dim3 (32), [=] () { first_kernel (first_done_p); });
  dq_emu_launch_overlapped (
      dim3 (2), dim3 (32), [=] () { second_kernel (first_done_p, 2, early_p, late_p); });
  check (
      first_done[0] && first_done[1], "an overlapped launch returns with the one before complete");
  dq_emu_synchronize ();
  check (late == 0, "pdl_wait returns once the launch before is complete");
  check (R < 3 || early > 0, "an overlapped launch starts before the one before is complete");

  /* each resident block has dynamic shared memory of its own */
  unsigned dyn_wrong = 0, *dyn_wrong_p = &dyn_wrong;
  dq_emu_launch (
      dim3 (8), dim3 (64), [=] () { dynamic_kernel (dyn_wrong_p); }, 64 * sizeof (unsigned));
  check (dyn_wrong == 0, "each resident block keeps its own dynamic shared memory");

  /* blocks that can only wait are a deadlock: the emulator aborts with a message */
  fflush (stdout);
  pid_t child = fork ();
  if (child == 0) {
    unsigned never = 0, *never_p = &never;
    DQ_LAUNCH (stuck_kernel, 2, 32, 0, never_p);
    _exit (0);
  }
  int status = 0;
  waitpid (child, &status, 0);
  check (WIFSIGNALED (status) && WTERMSIG (status) == SIGABRT,
      "blocks that only wait for each other abort as a deadlock");

  printf ("test-cuda-emu-sched: %s (%d failed)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
