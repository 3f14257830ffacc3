/* dq-test-util.h — tiny assertion helpers, a burst builder and a random stream generator shared by
 * the cuda/ tests (plain C, no GLib: the GPU test binary runs where no GLib exists). */
#ifndef DQ_TEST_UTIL_H
#define DQ_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daqiri-reorder.h"

extern int dq_test_failures;
extern const char *dq_test_name;

#define CHECK(cond) \
  do { \
    if (!(cond)) { \
      fprintf (stderr, "%s:%d: [%s] check failed: %s\n", __FILE__, __LINE__, dq_test_name, #cond); \
      dq_test_failures++; \
    } \
  } while (0)

#define CHECK_EQ(a, b) \
  do { \
    unsigned long long va_ = (unsigned long long) (a), vb_ = (unsigned long long) (b); \
    if (va_ != vb_) { \
      fprintf (stderr, "%s:%d: [%s] %s == %s failed: 0x%llx (%llu) != 0x%llx (%llu)\n", __FILE__, \
          __LINE__, dq_test_name, #a, #b, va_, va_, vb_, vb_); \
      dq_test_failures++; \
    } \
  } while (0)

/* main's end: "PROG: N check(s) failed" (stderr) or "PROG: all checks passed"; the exit code. */
int dq_test_summary (const char *prog);

/* A burst: one byte region, descriptors into it. */
typedef struct {
  uint8_t *data;
  size_t size, cap;
  DqReorderPacket *pkts;
  uint32_t n, cap_pkts;
} DqTestBurst;

void dqt_burst_init (DqTestBurst *b);
void dqt_burst_clear (DqTestBurst *b);
void dqt_burst_free (DqTestBurst *b);
/* Append a packet of len bytes (copied from bytes, or zeros) with a timestamp; returns its data. */
uint8_t *dqt_burst_add (DqTestBurst *b, const uint8_t *bytes, uint32_t len, uint64_t ts);
/* A descriptor that points past the data (malformed). */
void dqt_burst_add_bad (DqTestBurst *b, uint32_t offset, uint32_t len);
/* Copy the burst into an exact-size allocation (so any read past it is caught by ASan/valgrind). */
uint8_t *dqt_burst_exact (const DqTestBurst *b);

/* xorshift64* */
typedef struct {
  uint64_t s;
} DqRng;
static inline uint64_t
dqt_rand (DqRng *r)
{
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return r->s * 2685821657736338717ull;
}
static inline uint32_t
dqt_below (DqRng *r, uint32_t n)
{
  return n ? (uint32_t) (dqt_rand (r) % n) : 0;
}

/* Build a packet for (batch, slot) by the packetize rule: zeros, the fields, payload bytes. */
void dqt_make_packet (const DqReorderConfig *cfg, uint64_t batch, uint32_t slot,
    const uint8_t *payload, uint8_t *pkt, uint32_t pkt_len);

/* A random stream of packets with loss, duplication, reordering (bounded displacement, or wild),
 * short/malformed packets and late resends, cut into bursts. */
typedef struct {
  uint32_t n_batches;
  double loss, dup, shorts, late; /* probabilities per packet */
  uint32_t displace;              /* max forward/backward displacement in packets */
  int wild;                       /* also: random big jumps and garbage ids */
  uint32_t max_burst;
  uint32_t first_batch; /* batch id of the first batch */
  int whole;            /* bursts of one whole batch each, its packets shuffled
                                      * (loss, duplicates, shorts and late resends still apply;
                                      * displace and max_burst do not) */
  int align16;          /* every packet at a 16-byte aligned offset (as NIC rings
                                      * place them: strides), not at varied ones */
} DqStreamSpec;

typedef struct {
  uint8_t *data; /* all packets, each at its offset */
  size_t size;
  DqReorderPacket *pkts;
  uint32_t n;
  uint32_t *burst_len; /* bursts: consecutive runs of pkts */
  uint32_t n_bursts;
  /* ground truth, for streams without wild/late (n_batches * ppb entries) */
  uint8_t *lost;     /* per (batch, slot): 1 if never sent */
  uint8_t *payloads; /* per (batch, slot): the original payload */
  uint32_t n_short, n_dup, n_late_sent;
} DqStream;

void dqt_stream_make (
    DqStream *st, const DqReorderConfig *cfg, const DqStreamSpec *spec, uint64_t seed);
void dqt_stream_free (DqStream *st);

#endif
