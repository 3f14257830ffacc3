/* Small helpers the engines share: clocks in nanoseconds, statistics counters that one
 * thread adds to while any other reads them, the send-time rule of scheduled sends, eventfd
 * wakeups. Internal to the engines (not installed). */
#ifndef DAQIRI_ENGINE_UTIL_H
#define DAQIRI_ENGINE_UTIL_H

#include <glib.h>
#include "daqiri-engine.h"
#include <errno.h>
#include <time.h>
#include <unistd.h>

G_BEGIN_DECLS

static inline guint64
dq_clock_ns (clockid_t clock)
{
  struct timespec ts;
  clock_gettime (clock, &ts);
  return (guint64) ts.tv_sec * G_GUINT64_CONSTANT (1000000000) + (guint64) ts.tv_nsec;
}

/* CLOCK_MONOTONIC, signed: deadlines and differences */
static inline gint64
dq_mono_ns (void)
{
  return (gint64) dq_clock_ns (CLOCK_MONOTONIC);
}

static inline void
dq_counter_add (guint64 *counter, guint64 value)
{
  __atomic_fetch_add (counter, value, __ATOMIC_RELAXED);
}

static inline guint64
dq_counter_get (guint64 *counter)
{
  return __atomic_load_n (counter, __ATOMIC_RELAXED);
}

/* A registration of payload memory (dq_txq_register): its range and the engine's handle */
struct _DqTxMemory {
  const guint8 *base;
  gsize size;
  gpointer handle;
};

/* Ring arithmetic. */
static inline gboolean
dq_is_pow2 (guint64 v)
{
  return v != 0 && (v & (v - 1)) == 0;
}

static inline guint
dq_log2_floor (guint64 v)
{
  return v == 0 ? 0 : 63 - (guint) __builtin_clzll (v);
}

/* v rounded up to a multiple of a (a > 0) */
static inline guint64
dq_round_up (guint64 v, guint64 a)
{
  return (v + a - 1) / a * a;
}

/* the smallest n with 2^n >= v */
static inline guint
dq_log2_ceil (guint64 v)
{
  return v <= 1 ? 0 : dq_log2_floor (v - 1) + 1;
}

/* The counters of a TX queue (its sending thread adds, any thread reads: DqTxStats). */
typedef struct {
  guint64 packets;
  guint64 bytes;
  guint64 bursts;
  guint64 errors;
  guint64 ring_full_waits;
  guint64 scheduled;
  guint64 held;
  guint64 late;
  guint64 late_dropped;
} DqTxCounters;

static inline void
dq_tx_counters_read (DqTxCounters *c, DqTxStats *stats)
{
  stats->packets = dq_counter_get (&c->packets);
  stats->bytes = dq_counter_get (&c->bytes);
  stats->bursts = dq_counter_get (&c->bursts);
  stats->errors = dq_counter_get (&c->errors);
  stats->ring_full_waits = dq_counter_get (&c->ring_full_waits);
  stats->scheduled = dq_counter_get (&c->scheduled);
  stats->held = dq_counter_get (&c->held);
  stats->late = dq_counter_get (&c->late);
  stats->late_dropped = dq_counter_get (&c->late_dropped);
}

/* For engines that can send neither at a time nor paced: refuses DqTxConfig.scheduled
 * and rate_bps, naming the device `what` and, in `instead`, what to use. */
static inline gboolean
dq_tx_config_refuse_timing (
    const char *what, const DqTxConfig *config, const char *instead, GError **error)
{
  if (config->scheduled) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: sending at a time (schedule) is not possible on this engine; %s", what, instead);
    return FALSE;
  }
  if (config->rate_bps != 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: rate %" G_GUINT64_FORMAT " bit/s: pacing is not possible on this engine "
        "(allowed here: 0); %s",
        what, config->rate_bps, instead);
    return FALSE;
  }
  return TRUE;
}

/* Send scheduling (daqiri-engine.h), the rule every engine that sends at a time follows. */
typedef enum {
  DQ_TX_SEND, /* now: at its time, or as soon as possible (no time, or late) */
  DQ_TX_HOLD, /* beyond the horizon: the sender waits first */
  DQ_TX_DROP, /* late, and late frames are dropped */
} DqTxVerdict;

/* What becomes of a frame with send time t (0: none) while the port clock reads `now`, on
 * a queue whose late frames go as `late` says; *is_late: its time has passed. */
static inline DqTxVerdict
dq_tx_verdict (guint64 t, guint64 now, DqTxLate late, gboolean *is_late)
{
  *is_late = FALSE;
  if (t == 0)
    return DQ_TX_SEND;
  if (t > now + DQ_TX_HORIZON_NS)
    return DQ_TX_HOLD;
  if (t > now)
    return DQ_TX_SEND;
  *is_late = TRUE;
  return late == DQ_TX_LATE_DROP ? DQ_TX_DROP : DQ_TX_SEND;
}

/* One send's outcome: packets, bytes and a burst when anything went out; the frames
 * refused as errors. */
static inline void
dq_tx_counters_add_burst (DqTxCounters *c, guint64 sent, guint64 bytes, guint64 errors)
{
  if (sent > 0) {
    dq_counter_add (&c->packets, sent);
    dq_counter_add (&c->bytes, bytes);
    dq_counter_add (&c->bursts, 1);
  }
  if (errors > 0)
    dq_counter_add (&c->errors, errors);
}

/* Wakes a waiter on an eventfd (its counter + 1), and takes the wakeups back. */
static inline void
dq_eventfd_signal (int fd)
{
  guint64 one = 1;
  ssize_t r;
  do
    r = write (fd, &one, sizeof one);
  while (r < 0 && errno == EINTR);
}

static inline void
dq_eventfd_drain (int fd)
{
  guint64 value;
  ssize_t r;
  do
    r = read (fd, &value, sizeof value);
  while (r < 0 && errno == EINTR);
}

G_END_DECLS

#endif
