/* dq-test-util.c — see dq-test-util.h */
#include "dq-test-util.h"

int dq_test_failures;
const char *dq_test_name = "?";

int
dq_test_summary (const char *prog)
{
  if (dq_test_failures) {
    fprintf (stderr, "%s: %d check(s) failed\n", prog, dq_test_failures);
    return 1;
  }
  printf ("%s: all checks passed\n", prog);
  return 0;
}

static void *
xrealloc (void *p, size_t n)
{
  void *q = realloc (p, n ? n : 1);
  if (!q) {
    fprintf (stderr, "out of memory (%zu bytes)\n", n);
    exit (2);
  }
  return q;
}

void
dqt_burst_init (DqTestBurst *b)
{
  memset (b, 0, sizeof *b);
}

void
dqt_burst_clear (DqTestBurst *b)
{
  b->size = 0;
  b->n = 0;
}

void
dqt_burst_free (DqTestBurst *b)
{
  free (b->data);
  free (b->pkts);
  memset (b, 0, sizeof *b);
}

static void
add_desc (DqTestBurst *b, uint32_t offset, uint32_t len, uint64_t ts)
{
  if (b->n == b->cap_pkts) {
    b->cap_pkts = b->cap_pkts ? b->cap_pkts * 2 : 16;
    b->pkts = xrealloc (b->pkts, b->cap_pkts * sizeof *b->pkts);
  }
  b->pkts[b->n++] = (DqReorderPacket){ offset, len, 0, 0, ts };
}

uint8_t *
dqt_burst_add (DqTestBurst *b, const uint8_t *bytes, uint32_t len, uint64_t ts)
{
  if (b->size + len > b->cap) {
    while (b->size + len > b->cap)
      b->cap = b->cap ? b->cap * 2 : 4096;
    b->data = xrealloc (b->data, b->cap);
  }
  uint8_t *p = b->data + b->size;
  if (bytes)
    memcpy (p, bytes, len);
  else
    memset (p, 0, len);
  add_desc (b, (uint32_t) b->size, len, ts);
  b->size += len;
  return p;
}

void
dqt_burst_add_bad (DqTestBurst *b, uint32_t offset, uint32_t len)
{
  add_desc (b, offset, len, 0);
}

uint8_t *
dqt_burst_exact (const DqTestBurst *b)
{
  uint8_t *p = malloc (b->size ? b->size : 1);
  if (!p)
    exit (2);
  if (b->size)
    memcpy (p, b->data, b->size);
  return p;
}

void
dqt_make_packet (const DqReorderConfig *cfg, uint64_t batch, uint32_t slot, const uint8_t *payload,
    uint8_t *pkt, uint32_t pkt_len)
{
  uint32_t ppb = cfg->packets_per_batch;
  uint64_t seqmask = cfg->seq_bit_width == 32 ? 0xffffffffull : (1ull << cfg->seq_bit_width) - 1;
  uint64_t bmask = cfg->batch_bit_width == 32 ? 0xffffffffull : (1ull << cfg->batch_bit_width) - 1;
  memset (pkt, 0, pkt_len);
  memcpy (pkt + cfg->payload_offset, payload, cfg->payload_size);
  dq_bits_set (
      pkt, cfg->seq_bit_offset, cfg->seq_bit_width, (uint32_t) ((batch * ppb + slot) & seqmask));
  if (cfg->batch_bit_width)
    dq_bits_set (pkt, cfg->batch_bit_offset, cfg->batch_bit_width, (uint32_t) (batch & bmask));
}

typedef struct {
  double key;
  uint64_t batch;
  uint32_t slot;
  int kind; /* 0 original, 1 dup (other payload), 2 short, 3 malformed, 4 garbage id */
  uint32_t extra;
} Ev;

static int
ev_cmp (const void *a, const void *b)
{
  const Ev *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key ? 1 : 0;
}

void
dqt_stream_make (DqStream *st, const DqReorderConfig *cfg, const DqStreamSpec *sp, uint64_t seed)
{
  DqRng rng = { seed * 0x9e3779b97f4a7c15ull + 1 };
  uint32_t ppb = cfg->packets_per_batch, L = cfg->payload_size;
  uint32_t need = dq_reorder_min_packet_length (cfg);
  size_t total = (size_t) sp->n_batches * ppb;
  uint32_t W = dq_reorder_window (cfg);

  memset (st, 0, sizeof *st);
  st->lost = calloc (total ? total : 1, 1);
  st->payloads = malloc (total * L + 1);
  for (size_t i = 0; i < total * L; i++)
    st->payloads[i] = (uint8_t) dqt_rand (&rng);

  size_t cap = total * 2 + 64, n = 0;
  Ev *ev = malloc (cap * sizeof *ev);
  for (size_t i = 0; i < total; i++) {
    if ((double) dqt_below (&rng, 1000000) / 1e6 < sp->loss) {
      st->lost[i] = 1;
      continue;
    }
    double jitter =
        sp->displace ? (double) dqt_below (&rng, 2 * sp->displace + 1) - sp->displace : 0;
    const double key = sp->whole
        ? (double) (i / ppb * ppb) + (double) dqt_below (&rng, ppb * 1000) / 1000.0
        : (double) i + jitter + 0.5 * (double) dqt_below (&rng, 1000) / 1000.0;
    ev[n++] = (Ev){ key, sp->first_batch + i / ppb, (uint32_t) (i % ppb), 0, 0 };
  }
  qsort (ev, n, sizeof *ev, ev_cmp);
  /* duplicates after their original, shorts and garbage anywhere: rebuild with insertions */
  Ev *out = malloc ((n * 3 + 64) * sizeof *out);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    out[m++] = ev[i];
    if ((double) dqt_below (&rng, 1000000) / 1e6 < sp->dup) {
      out[m] = ev[i];
      out[m].kind = 1;
      out[m].extra = (uint32_t) dqt_rand (&rng);
      m++;
      st->n_dup++;
    }
    if ((double) dqt_below (&rng, 1000000) / 1e6 < sp->shorts) {
      out[m] = ev[i];
      out[m].kind = 2 + (int) dqt_below (&rng, 2);
      out[m].extra = dqt_below (&rng, need);
      m++;
      st->n_short++;
    }
    if (sp->wild && dqt_below (&rng, 1000) < 3) {
      out[m] = ev[i];
      out[m].kind = 4;
      out[m].extra = (uint32_t) dqt_rand (&rng);
      m++;
    }
    if (sp->wild && dqt_below (&rng, 1000) < 5 && ev[i].batch > W + 2) {
      /* a resend of an old batch: late (or, in a wild stream, whatever the window says) */
      out[m] = ev[i];
      out[m].batch = ev[i].batch - W - 2 - dqt_below (&rng, 3);
      out[m].kind = 1;
      out[m].extra = (uint32_t) dqt_rand (&rng);
      m++;
    }
  }
  if (sp->wild) {
    /* a few local swaps across the whole stream, including dups moved before originals */
    for (size_t k = 0; m > 1 && k < m / 50; k++) {
      size_t a = dqt_below (&rng, (uint32_t) m), b = a + 1 + dqt_below (&rng, 8);
      if (b < m) {
        Ev t = out[a];
        out[a] = out[b];
        out[b] = t;
      }
    }
  }
  /* late resends at the very end: batches well behind the final window */
  /* (no further back than half the batch-id range: beyond, an id reads as ahead) */
  uint32_t n_late = 0;
  uint64_t ids =
      cfg->batch_bit_width ? (1ull << cfg->batch_bit_width) : (1ull << cfg->seq_bit_width) / ppb;
  uint32_t back = ids / 2 > sp->n_batches ? sp->n_batches : (uint32_t) (ids / 2);
  if (sp->late > 0 && back > W + 3) {
    n_late = (uint32_t) (sp->late * (double) n) + 1;
    for (uint32_t k = 0; k < n_late; k++) {
      uint32_t b = sp->n_batches - back + 1 + dqt_below (&rng, back - W - 3);
      out[m++] =
          (Ev){ 0, sp->first_batch + b, dqt_below (&rng, ppb), 1, (uint32_t) dqt_rand (&rng) };
    }
  }
  st->n_late_sent = n_late;

  /* materialize */
  size_t dcap = m * (need + 48) + 64;
  st->data = malloc (dcap);
  st->pkts = malloc ((m ? m : 1) * sizeof *st->pkts);
  size_t off = 0;
  uint8_t *tmp = malloc (L);
  for (size_t i = 0; i < m; i++) {
    Ev *e = &out[i];
    uint32_t len = need + dqt_below (&rng, 17);
    uint64_t ts = 1000000 + i * 7;
    if (e->kind == 3) {
      /* a descriptor pointing past the data: filled in after we know the size */
      st->pkts[i] = (DqReorderPacket){ 0xfffffff0u, 64, 0, 0, ts };
      continue;
    }
    uint8_t *pkt = st->data + off;
    size_t idx = (size_t) (e->batch - sp->first_batch) * ppb + e->slot;
    const uint8_t *pl = (e->kind == 0 && idx < total) ? st->payloads + idx * L : tmp;
    if (pl == tmp)
      for (uint32_t j = 0; j < L; j++)
        tmp[j] = (uint8_t) (e->extra >> (8 * (j & 3))) ^ (uint8_t) j;
    dqt_make_packet (cfg, e->batch, e->slot, pl, pkt, len);
    if (e->kind == 2)
      len = e->extra; /* cut short: less than every field needs */
    if (e->kind == 4) {
      /* garbage: random sequence/batch field values */
      dq_bits_set (pkt, cfg->seq_bit_offset, cfg->seq_bit_width, e->extra);
      if (cfg->batch_bit_width)
        dq_bits_set (pkt, cfg->batch_bit_offset, cfg->batch_bit_width, e->extra >> 7);
    }
    st->pkts[i] = (DqReorderPacket){ (uint32_t) off, len, 0, 0, ts };
    off += need + 16 + dqt_below (&rng, 4) * 4 + dqt_below (&rng, 3); /* varied alignment */
    if (sp->align16)
      off = (off + 15) & ~(size_t) 15;
  }
  free (tmp);
  st->size = off;
  st->n = (uint32_t) m;

  /* cut into bursts: the late resends in bursts of their own at the end */
  st->burst_len = malloc ((m + 1) * sizeof *st->burst_len);
  size_t i = 0, body = m - n_late;
  while (i < body) {
    uint32_t b = sp->whole ? ppb : 1 + dqt_below (&rng, sp->max_burst ? sp->max_burst : 1);
    if (i + b > body)
      b = (uint32_t) (body - i);
    st->burst_len[st->n_bursts++] = b;
    i += b;
  }
  while (i < m) {
    uint32_t b = (uint32_t) (m - i);
    st->burst_len[st->n_bursts++] = b;
    i += b;
  }
  free (ev);
  free (out);
}

void
dqt_stream_free (DqStream *st)
{
  free (st->data);
  free (st->pkts);
  free (st->burst_len);
  free (st->lost);
  free (st->payloads);
  memset (st, 0, sizeof *st);
}
