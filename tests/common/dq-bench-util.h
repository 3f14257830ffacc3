/* Small helpers the benchmarks share: a monotonic clock and the calling thread's CPU clock in
 * nanoseconds, and an ascending sort of doubles from which a benchmark takes the minimum,
 * maximum and median of its repeated runs (each benchmark picks its own median of an even
 * count). Header-only and plain C (no GLib), so that the GPU benchmarks, which run where
 * there is no GLib, use it too. */
#ifndef DAQIRI_TEST_DQ_BENCH_UTIL_H
#define DAQIRI_TEST_DQ_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns: only differences mean anything (elapsed time). */
static inline int64_t
dq_bench_mono_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CLOCK_THREAD_CPUTIME_ID in ns: the CPU time the calling thread has used (differences). */
static inline int64_t
dq_bench_thread_cpu_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* qsort's comparison of two doubles, ascending. */
static inline int
dq_bench_cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Sorts v[0..n) ascending in place: v[0] is the minimum, v[n - 1] the maximum. */
static inline void
dq_bench_sort_doubles (double *v, size_t n)
{
  qsort (v, n, sizeof *v, dq_bench_cmp_double);
}

#endif
