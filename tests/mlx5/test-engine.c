/* The mlx5 engine over emulated ports (device=emu:NAME), through the engine API only
 * (plus mlx5/emu's inject and fault hooks): 1 000 000 packets TX -> cable -> RX with
 * every byte and sequence number checked, burst timeout and wakeup, ring exhaustion
 * and recovery, flow rules over a group of queues, truncation, TX errors and wakeups,
 * device-string options.
 *
 * DQ_TEST_PACKETS overrides the packet count of the loopback test (valgrind runs).
 */
#include "daqiri-engine.h"
#include "dq-test-port.h"
#include "emu.h"
#include "test-util.h"

#include <stdlib.h>
#include <string.h>

#define MS G_GINT64_CONSTANT (1000000)

static guint32 next_group = 0x5000;

static DqPort *
port_open (const char *device)
{
  GError *error = NULL;
  DqPort *port = dq_port_open (device, &error);
  g_assert_no_error (error);
  return port;
}

static DqRxQueue *
rxq_new (DqPort *port, guint burst, guint64 timeout_ns, gsize ring, guint max_packet,
    const DqFlowRule *flows, guint n_flows, guint queue, guint n_queues, guint32 group)
{
  DqRxConfig cfg = { .burst_packets = burst,
    .burst_timeout_ns = timeout_ns,
    .ring_bytes = ring,
    .max_packet_size = max_packet,
    .flows = flows,
    .n_flows = n_flows,
    .queue_index = queue,
    .n_queues = n_queues,
    .group_id = group };
  return dq_test_rxq_create (port, &cfg);
}

static DqTxQueue *
txq_new (DqPort *port, gsize ring, guint max_packet)
{
  DqTxConfig cfg = { .ring_bytes = ring, .max_packet_size = max_packet };
  return dq_test_txq_create (port, &cfg);
}

/* An emulated port opened through the engine (device "emu:NAME[,KEYS]"), the emulator's
 * own handle on it, and one RX queue alone in its group. */
typedef struct {
  DqPort *port;
  EmuPort *ep;
  DqRxQueue *rxq;
} EmuRx;

static void
emu_rx_open (
    EmuRx *r, const char *device, guint burst, guint64 timeout_ns, gsize ring, guint max_packet)
{
  const char *name = device + strlen ("emu:");
  gchar *port_name = g_strndup (name, strcspn (name, ","));
  r->port = port_open (device);
  r->rxq = rxq_new (r->port, burst, timeout_ns, ring, max_packet, NULL, 0, 0, 1, next_group++);
  r->ep = emu_port_lookup (port_name);
  g_assert_nonnull (r->ep);
  g_free (port_name);
}

static void
emu_rx_close (EmuRx *r)
{
  emu_port_unref (r->ep);
  dq_rxq_destroy (r->rxq);
  dq_port_unref (r->port);
}

/* Injects frame `seq` of `spec` into the port, without waiting for the device. */
static void
inject_frame (EmuPort *ep, const TuFrameSpec *spec, guint32 seq)
{
  guint8 *frame = g_malloc (spec->len);
  tu_frame_build (frame, spec, seq);
  g_assert_true (emu_port_inject (ep, frame, spec->len));
  g_free (frame);
}

/* Injects frames first .. first + count - 1 of `spec` into the port and waits until the
 * device has taken them all. */
static void
inject_frames (EmuPort *ep, const TuFrameSpec *spec, guint32 first, guint32 count)
{
  for (guint32 s = first; s < first + count; s++)
    inject_frame (ep, spec, s);
  g_assert_true (emu_port_wait_idle (ep, 1000 * MS));
}

/* Frame `seq` of a run of UDP frames whose lengths vary: base + (seq * step) % span bytes. */
static TuFrameSpec
varied_frame (guint32 seq, guint base, guint step, guint span)
{
  TuFrameSpec spec = {
    .len = base + (seq * step) % span, .proto = TU_PROTO_UDP, .good_csums = TRUE
  };
  return spec;
}

/* Injects frames 0 .. n - 1 of that run while the device is stalled, so that it takes them
 * in passes of many, and waits until it has; returns their bytes. */
static guint64
inject_varied_frames (EmuPort *ep, guint n, guint base, guint step, guint span)
{
  guint64 bytes = 0;
  emu_port_fault_stall (ep, TRUE);
  for (guint32 s = 0; s < n; s++) {
    TuFrameSpec spec = varied_frame (s, base, step, span);
    inject_frame (ep, &spec, s);
    bytes += spec.len;
  }
  emu_port_fault_stall (ep, FALSE);
  g_assert_true (emu_port_wait_idle (ep, 2000 * MS));
  return bytes;
}

/* dq_rxq_create refuses `cfg` on the port with DQ_ERROR `code` and an error that says
 * `says` (NULL: any message) */
static void
expect_rxq_refused (DqPort *p, const DqRxConfig *cfg, int code, const char *says)
{
  GError *error = NULL;
  g_assert_null (dq_rxq_create (p, cfg, &error));
  g_assert_error (error, DQ_ERROR, code);
  if (says != NULL)
    g_assert_nonnull (strstr (error->message, says));
  g_clear_error (&error);
}

/* The configuration of an RX queue alone in a new group, its ring in `rm`: bursts of
 * `burst` packets or 1 ms. */
static DqRxConfig
ring_memory_config (guint burst, gsize ring, const DqRingMemory *rm)
{
  DqRxConfig cfg = { .burst_packets = burst,
    .burst_timeout_ns = 1 * MS,
    .ring_bytes = ring,
    .n_queues = 1,
    .group_id = next_group++,
    .ring_memory = rm };
  return cfg;
}

/* ---------------------------------------------------------------------------------- */

static void
test_registry (void)
{
  GError *error = NULL;
  gboolean found = FALSE;
  for (const char *const *n = dq_engine_names (); *n != NULL; n++)
    found |= strcmp (*n, "emu") == 0;
  g_assert_true (found);

  DqPort *p = port_open ("emu:reg0,mac=02:11:22:33:44:55,mtu=9000");
  const DqPortInfo *info = dq_port_info (p);
  const guint8 mac[6] = { 2, 0x11, 0x22, 0x33, 0x44, 0x55 };
  g_assert_cmpstr (info->name, ==, "emu");
  g_assert_cmpmem (info->mac, 6, mac, 6);
  g_assert_cmpuint (info->mtu, ==, 9000);
  g_assert_cmpint (info->clock_id, ==, -1);
  g_assert_cmpstr (info->clock_name, ==, "emu:reg0 device clock (1000000 kHz, free-running)");
  /* the device writes its rings (by copies): memory=cuda may put them in GPU memory */
  g_assert_true (info->device_dma);
  /* port time is the device clock in ns: it advances with real time */
  guint64 t0 = dq_port_time (p);
  g_usleep (2000);
  guint64 t1 = dq_port_time (p);
  g_assert_cmpuint (t1 - t0, >=, 2 * MS);
  g_assert_cmpuint (t1 - t0, <, 500 * MS);

  /* the same device string: the same DqPort; another string naming the same emulated
   * port: another DqPort on the shared device */
  DqPort *same = port_open ("emu:reg0,mac=02:11:22:33:44:55,mtu=9000");
  g_assert_true (same == p);
  DqPort *shared = port_open ("emu:reg0");
  g_assert_true (shared != p);
  g_assert_cmpuint (dq_port_info (shared)->mtu, ==, 9000);
  g_assert_null (dq_port_open ("emu:reg0,mtu=1500", &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_BUSY);
  g_clear_error (&error);

  const struct {
    const char *device, *message;
  } bad[] = {
    { "emu:", "needs a name after 'emu:'" },
    { "emu:x y", "the port name must be" },
    { "emu:e1,stride=100",
        "emu:e1: stride=100 is not allowed (allowed: a power of two 64 .. "
        "8192)" },
    { "emu:e1,strides=4", "strides=4 is not allowed (allowed: a power of two 8 .. 65536)" },
    { "emu:e1,tx-csum=perhaps", "tx-csum=perhaps is not allowed (allowed: on or off)" },
    { "emu:e1,tx-signal=0", "tx-signal=0 is not allowed (allowed: 1 .. 16384)" },
    { "emu:e1,rate=1t", "rate=1t is not allowed" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_assert_null (dq_port_open (bad[i].device, &error));
    tu_assert_refused (&error, bad[i].device, bad[i].message);
  }
  dq_port_unref (same);
  dq_port_unref (shared);
  dq_port_unref (p);
  g_assert_null (emu_port_lookup ("reg0"));
}

static void
test_config_errors (void)
{
  DqPort *p = port_open ("emu:cfgerr");
  GError *error = NULL;
  DqFlowRule rule = { .keys = DQ_FLOW_QUEUE, .queue = 2 };
  DqRxConfig cfg = {
    .burst_packets = 8, .n_queues = 2, .flows = &rule, .n_flows = 1, .group_id = next_group++
  };

  expect_rxq_refused (p, &cfg, DQ_ERROR_FLOW,
      "sends to queue 2, but there are only 2 queues "
      "(allowed queue=0 .. 1)");
  rule.keys = DQ_FLOW_MARK;
  rule.mark = 0x1000000;
  expect_rxq_refused (p, &cfg, DQ_ERROR_FLOW,
      "mark 16777216 does not fit the NIC's 24-bit "
      "flow tag (allowed mark=0 .. 16777215)");
  cfg.n_flows = 0;
  cfg.ring_bytes = 4096;
  expect_rxq_refused (p, &cfg, DQ_ERROR_CONFIG, "emu:cfgerr: ring-size 4096 is too small");
  cfg.ring_bytes = 0;
  cfg.max_packet_size = 70000;
  expect_rxq_refused (p, &cfg, DQ_ERROR_CONFIG, NULL);
  /* a queue index taken twice */
  cfg.max_packet_size = 0;
  cfg.ring_bytes = 1 << 20;
  DqRxQueue *q0 = dq_rxq_create (p, &cfg, &error);
  g_assert_no_error (error);
  expect_rxq_refused (p, &cfg, DQ_ERROR_BUSY, NULL);
  DqTxConfig tcfg = { .ring_bytes = 1000 };
  g_assert_null (dq_txq_create (p, &tcfg, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message, "TX ring-size 1000 is too small"));
  g_clear_error (&error);
  dq_rxq_destroy (q0);
  dq_port_unref (p);
}

/* ---------------------------------------------------------------------------------- */
/* 1 000 000 packets through TX -> cable -> RX */

#define LB_BATCH 32

static guint
lb_len (guint32 seq)
{
  static const guint sizes[16] = { 60, 64, 1518, 128, 64, 576, 200, 60, 1024, 64, 300, 1500, 64, 90,
    750, 64 };
  return sizes[seq % 16] - (seq / 16) % 7;
}

/* frame seq: a raw ethertype frame, the sequence at 14, 64-bit words from 18 on */
static void
lb_fill (guint8 *f, guint32 seq, guint len)
{
  static const guint8 hdr[14] = { 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5 };
  memcpy (f, hdr, 14);
  f[14] = (guint8) (seq >> 24);
  f[15] = (guint8) (seq >> 16);
  f[16] = (guint8) (seq >> 8);
  f[17] = (guint8) seq;
  guint64 w = (guint64) seq * G_GUINT64_CONSTANT (0x9e3779b97f4a7c15);
  for (guint i = 18; i < len; i += 8, w += 0x0101010101010101ull) {
    guint n = MIN (8u, len - i);
    memcpy (f + i, &w, n);
  }
}

typedef struct {
  DqTxQueue *txq;
  guint32 total;
} LbSender;

static gpointer
lb_send_thread (gpointer data)
{
  LbSender *s = data;
  guint8 (*frames)[1518] = g_malloc (LB_BATCH * 1518);
  const guint8 *fp[LB_BATCH];
  guint32 lens[LB_BATCH];
  GError *error = NULL;

  for (guint32 seq = 0; seq < s->total;) {
    guint n = MIN (LB_BATCH, s->total - seq);
    for (guint i = 0; i < n; i++) {
      lens[i] = lb_len (seq + i);
      lb_fill (frames[i], seq + i, lens[i]);
      fp[i] = frames[i];
    }
    guint done = 0;
    while (done < n) {
      int r = dq_txq_send (s->txq, fp + done, lens + done, n - done, &error);
      g_assert_no_error (error);
      g_assert_cmpint (r, >, 0);
      done += (guint) r;
    }
    seq += n;
  }
  g_assert_true (dq_txq_flush (s->txq, &error));
  g_free (frames);
  return NULL;
}

static void
test_loopback_million (void)
{
  const char *env = g_getenv ("DQ_TEST_PACKETS");
  guint32 total = env != NULL ? (guint32) atoi (env) : 1000000;
  EmuRx rig;
  emu_rx_open (&rig, "emu:million", 64, 100 * 1000, 16 << 20, 0);
  DqRxQueue *rxq = rig.rxq;
  LbSender s = { .txq = txq_new (rig.port, 0, 0), .total = total };
  guint8 expect[1518];
  guint32 next = 0;
  guint64 bytes = 0, last_ts = 0, bursts = 0;
  GError *error = NULL;

  GThread *sender = g_thread_new ("lb-send", lb_send_thread, &s);
  gint64 deadline = g_get_monotonic_time () + 240 * G_USEC_PER_SEC;
  while (next < total) {
    DqBurst b;
    int r = dq_rxq_poll (rxq, &b, 100 * MS, &error);
    g_assert_no_error (error);
    g_assert_cmpint (g_get_monotonic_time (), <, deadline);
    if (r == 0)
      continue;
    bursts++;
    g_assert_cmpuint (b.n_packets, <=, 64);
    for (guint i = 0; i < b.n_packets; i++) {
      const DqPacket *pkt = &b.packets[i];
      guint len = lb_len (next);
      g_assert_cmpuint (pkt->offset + pkt->length, <=, b.size);
      if (pkt->length != len)
        g_error ("seq %u: length %u, expected %u", next, pkt->length, len);
      lb_fill (expect, next, len);
      if (memcmp (b.data + pkt->offset, expect, len) != 0) {
        guint32 got = tu_frame_seq (b.data + pkt->offset, pkt->length);
        g_error ("packet %u: bytes differ (sequence field %u)", next, got);
      }
      g_assert_cmpuint (pkt->flow_id, ==, 0);
      g_assert_cmpuint (pkt->flags & DQ_PACKET_FLAG_TS_HW, !=, 0);
      g_assert_cmpuint (pkt->timestamp, >, last_ts);
      last_ts = pkt->timestamp;
      bytes += len;
      next++;
    }
    dq_rxq_release (rxq, &b);
  }
  g_thread_join (sender);

  DqRxStats rs;
  DqTxStats ts;
  dq_rxq_stats (rxq, &rs);
  dq_txq_stats (s.txq, &ts);
  g_assert_cmpuint (rs.packets, ==, total);
  g_assert_cmpuint (rs.bytes, ==, bytes);
  g_assert_cmpuint (rs.bursts, ==, bursts);
  g_assert_cmpuint (rs.drops_ring_full, ==, 0);
  g_assert_cmpuint (rs.truncated, ==, 0);
  g_assert_cmpuint (ts.packets, ==, total);
  g_assert_cmpuint (ts.bytes, ==, bytes);
  g_assert_cmpuint (ts.errors, ==, 0);
  EmuCounters c;
  emu_port_counters (rig.ep, &c);
  g_assert_cmpuint (c.tx_packets, ==, total);
  g_assert_cmpuint (c.rx_packets, ==, total);
  g_assert_cmpuint (c.rx_bytes, ==, bytes);
  g_assert_cmpuint (c.rx_out_of_buffer, ==, 0);
  g_assert_cmpuint (c.rx_cqe_errors + c.tx_cqe_errors + c.iommu_faults, ==, 0);
  g_test_message ("%u packets, %" G_GUINT64_FORMAT " bytes, %" G_GUINT64_FORMAT " bursts, "
                  "%" G_GUINT64_FORMAT " fillers, %" G_GUINT64_FORMAT " pause waits",
      total, bytes, bursts, c.rx_fillers, c.pause_waits);
  dq_txq_destroy (s.txq);
  emu_rx_close (&rig);
}

/* ---------------------------------------------------------------------------------- */

typedef struct {
  DqRxQueue *rxq;
  gint64 delay_us;
} Waker;

static gpointer
waker_thread (gpointer data)
{
  Waker *w = data;
  g_usleep (w->delay_us);
  dq_rxq_wakeup (w->rxq);
  return NULL;
}

/* partial bursts wait for burst-timeout; a wakeup ends a wait */
static void
test_burst_timeout_wakeup (void)
{
  EmuRx rig;
  emu_rx_open (&rig, "emu:bt0", 64, 20 * MS, 1 << 20, 0);
  DqRxQueue *rxq = rig.rxq;
  TuFrameSpec spec = { .len = 128, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  DqBurst b;
  GError *error = NULL;

  gint64 start = g_get_monotonic_time ();
  inject_frames (rig.ep, &spec, 0, 3);
  /* not full, its WQE not used up, not old enough: nothing yet (the 1 ms poll may see the
   * burst only where this thread was held up past the burst timeout; `waited` tells) */
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 0, &error), ==, 0);
  int r = dq_rxq_poll (rxq, &b, 1 * MS, &error);
  if (r == 0)
    r = dq_rxq_poll (rxq, &b, 1000 * MS, &error);
  g_assert_cmpint (r, ==, 1);
  gint64 waited = g_get_monotonic_time () - start;
  g_assert_cmpint (waited, >=, 20000);
  g_assert_cmpuint (b.n_packets, ==, 3);
  for (guint i = 0; i < 3; i++) {
    g_assert_cmpuint (tu_frame_seq (b.data + b.packets[i].offset, 128), ==, i);
    /* two 64-byte strides each (the default stride) */
    g_assert_cmpuint (b.packets[i].offset, ==, i * 128);
    g_assert_cmpuint (b.packets[i].flags, ==, DQ_PACKET_FLAG_TS_HW | DQ_PACKET_FLAG_CSUM_OK);
  }
  g_assert_cmpuint (b.size, ==, 2 * 128 + 128);
  g_assert_cmpuint (b.packets[2].timestamp, <=, dq_port_time (rig.port));
  dq_rxq_release (rxq, &b);
  g_assert_null (b.range);

  /* a wakeup from another thread ends a long wait with 0 */
  Waker w = { .rxq = rxq, .delay_us = 20000 };
  GThread *t = g_thread_new ("waker", waker_thread, &w);
  start = g_get_monotonic_time ();
  g_assert_cmpint (dq_rxq_poll (rxq, &b, -1, &error), ==, 0);
  g_assert_cmpint (g_get_monotonic_time () - start, <, 2 * G_USEC_PER_SEC);
  g_thread_join (t);
  g_assert_no_error (error);
  emu_rx_close (&rig);
}

/* An RX ring in memory the caller provides (how daqirisrc memory=cuda gets GPU-accessible
 * memory): allocated through the hook at create, the bursts lie inside it and say its kind,
 * freed through the hook at destroy. */
typedef struct {
  guint allocs, frees, exports;
  guint8 *mem;
  gsize size;
  /* descriptor memory (desc_alloc): the blocks given out, or none when desc_fail */
  guint desc_allocs, desc_frees;
  guint8 *desc[64];
  gsize desc_size;
  gboolean desc_fail;
} HookLog;

static gpointer
hook_alloc (gsize size, gpointer user)
{
  HookLog *log = user;
  g_assert_cmpuint (size % 4096, ==, 0);
  log->mem = aligned_alloc (4096, size);
  memset (log->mem, 0, size);
  log->size = size;
  log->allocs++;
  return log->mem;
}

static void
hook_free (gpointer mem, gsize size, gpointer user)
{
  HookLog *log = user;
  g_assert_true (mem == log->mem);
  g_assert_cmpuint (size, ==, log->size);
  log->frees++;
  free (mem);
}

static gpointer
hook_desc_alloc (gsize size, gpointer user)
{
  HookLog *log = user;
  if (log->desc_fail || log->desc_allocs == G_N_ELEMENTS (log->desc))
    return NULL;
  log->desc_size = size;
  return log->desc[log->desc_allocs++] = g_malloc (size);
}

static void
hook_desc_free (gpointer mem, gpointer user)
{
  HookLog *log = user;
  gboolean known = FALSE;
  for (guint i = 0; i < log->desc_allocs; i++)
    known |= log->desc[i] == mem;
  g_assert_true (known);
  log->desc_frees++;
  g_free (mem);
}

/* Whether a burst's packet array lies in a block the hook gave out. */
static gboolean
in_desc_block (const HookLog *log, const DqBurst *b)
{
  for (guint i = 0; i < log->desc_allocs; i++)
    if ((const guint8 *) b->packets >= log->desc[i] &&
        (const guint8 *) (b->packets + b->n_packets) <= log->desc[i] + log->desc_size)
      return TRUE;
  return FALSE;
}

static gboolean
hook_export_dmabuf (
    gpointer mem, gsize size, int *fd, guint64 *offset, gpointer user, GError **error)
{
  HookLog *log = user;
  log->exports++;
  *fd = -1;
  *offset = 0;
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG, "no dma-buf here");
  return FALSE;
}

/* Receives 40 frames into the hook's ring memory on emu:NAME, checking every byte; where
 * the hook gives descriptor memory, every burst's packet array lies in it. */
static void
ring_memory_receive (const char *name, DqRingMemory *rm, HookLog *log)
{
  DqPort *p = port_open (name);
  DqRxConfig cfg = ring_memory_config (16, 1 << 20, rm);
  GError *error = NULL;
  DqRxQueue *rxq = dq_rxq_create (p, &cfg, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (log->allocs, ==, 1);
  g_assert_cmpuint (log->size, ==, dq_rxq_ring_bytes (rxq));
  g_assert_cmpstr (dq_ring_placement_name (dq_rxq_ring_placement (rxq)), ==, "gpu-mapped-host");

  EmuPort *ep = emu_port_lookup (name + strlen ("emu:"));
  TuFrameSpec spec = { .len = 200, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  guint8 frame[200];
  inject_frames (ep, &spec, 0, 40);
  guint got = 0;
  DqBurst b;
  while (got < 40 && dq_rxq_poll (rxq, &b, 200 * MS, &error) == 1) {
    g_assert_cmpint (b.memory, ==, DQ_MEMORY_CUDA);
    g_assert_true (b.data >= log->mem && b.data + b.size <= log->mem + log->size);
    g_assert_true (in_desc_block (log, &b) == (rm->desc_alloc != NULL && !log->desc_fail));
    /* with descriptor memory, the stride words right behind the packet array: the emulated
     * port's 64-byte strides */
    g_assert_true ((b.words != NULL) == (rm->desc_alloc != NULL));
    if (b.words != NULL) {
      g_assert_cmpuint (b.word_shift, ==, 6);
      g_assert_true (b.words == (const guint32 *) (b.packets + 16));
    }
    for (guint i = 0; i < b.n_packets; i++) {
      tu_frame_build (frame, &spec, got);
      g_assert_cmpuint (b.packets[i].length, ==, 200);
      g_assert_true (memcmp (b.data + b.packets[i].offset, frame, 200) == 0);
      if (b.words != NULL) {
        g_assert_cmpuint (b.packets[i].offset % 64, ==, 0);
        g_assert_cmphex (b.words[i], ==, b.packets[i].offset / 64 | 200u << 18);
      }
      got++;
    }
    dq_rxq_release (rxq, &b);
  }
  g_assert_no_error (error);
  g_assert_cmpuint (got, ==, 40);
  emu_port_unref (ep);
  dq_rxq_destroy (rxq);
  g_assert_cmpuint (log->frees, ==, 1);
  g_assert_cmpuint (log->desc_frees, ==, log->desc_allocs);
  dq_port_unref (p);
}

static void
test_ring_memory_hook (void)
{
  HookLog log = { 0 };
  DqRingMemory rm = {
    .kind = DQ_MEMORY_CUDA, .alloc = hook_alloc, .free = hook_free, .user = &log
  };
  ring_memory_receive ("emu:hook0", &rm, &log);
  g_assert_cmpuint (log.desc_allocs, ==, 0);

  /* descriptor memory from the hook: the packet arrays lie in it, and go back through it;
   * where it gives none, ordinary memory serves */
  {
    HookLog dlog = { 0 };
    DqRingMemory dm = rm;
    dm.user = &dlog;
    dm.desc_alloc = hook_desc_alloc;
    dm.desc_free = hook_desc_free;
    ring_memory_receive ("emu:hook2", &dm, &dlog);
    g_assert_cmpuint (dlog.desc_allocs, >, 0);
    g_assert_cmpuint (dlog.desc_size, >=, 16 * (sizeof (DqPacket) + sizeof (guint32)));
    HookLog flog = { .desc_fail = TRUE };
    dm.user = &flog;
    ring_memory_receive ("emu:hook3", &dm, &flog);
    g_assert_cmpuint (flog.desc_allocs, ==, 0);
  }

  DqRxConfig cfg = ring_memory_config (16, 1 << 20, &rm);
  GError *error = NULL;

  /* GPU device memory (a hook that exports a dma-buf): the emulated ConnectX cannot take
   * it and says so; nothing is exported, the memory goes back through the hook */
  {
    HookLog dlog = { 0 };
    DqRingMemory dm = rm;
    dm.user = &dlog;
    dm.export_dmabuf = hook_export_dmabuf;
    DqRxConfig dcfg = cfg;
    dcfg.ring_memory = &dm;
    dcfg.group_id = next_group++;
    DqPort *dp = port_open ("emu:hook1");
    expect_rxq_refused (dp, &dcfg, DQ_ERROR_CONFIG, "GPU device memory cannot be registered");
    g_assert_cmpuint (dlog.exports, ==, 0);
    g_assert_cmpuint (dlog.allocs, ==, 1);
    g_assert_cmpuint (dlog.frees, ==, 1);
    dq_port_unref (dp);
  }

  /* an engine that can only receive into host memory says so */
  DqPort *lo = dq_port_open ("afpacket:lo", &error);
  if (lo != NULL) {
    expect_rxq_refused (lo, &cfg, DQ_ERROR_CONFIG, "mlx5 or emu engine");
    dq_port_unref (lo);
  }
  g_clear_error (&error);
}

/* The ring in device memory on the emulated ConnectX: every byte arrives through the copy
 * hook, in batches, before the CQE that reports it; the ring code never touches it. */
static void
test_device_ring_memory (void)
{
  TuDeviceMem d;
  DqRingMemory dm = tu_device_memory (&d);
  DqPort *p = port_open ("emu:devmem0");
  g_assert_true (dq_port_info (p)->device_dma);
  DqRxConfig cfg = ring_memory_config (64, 4 << 20, &dm);
  GError *error = NULL;
  DqRxQueue *rxq = dq_rxq_create (p, &cfg, &error);
  g_assert_no_error (error);
  EmuPort *ep = emu_port_lookup ("devmem0");
  g_assert_cmpstr (dq_ring_placement_name (dq_rxq_ring_placement (rxq)), ==, "gpu-copy");

  /* 2000 frames of 64 .. 1514 bytes, taken by the device in passes of many */
  const guint n = 2000;
  guint8 frame[1514];
  guint64 sent_bytes = inject_varied_frames (ep, n, 64, 97, 1451);

  guint got = 0;
  DqBurst b;
  while (got < n && dq_rxq_poll (rxq, &b, 200 * MS, &error) == 1) {
    g_assert_cmpint (b.memory, ==, DQ_MEMORY_CUDA);
    g_assert_true (b.data >= d.mem && b.data + b.size <= d.mem + d.size);
    const guint8 *data = tu_device_view (&d, b.data);
    for (guint i = 0; i < b.n_packets; i++, got++) {
      TuFrameSpec spec = varied_frame (got, 64, 97, 1451);
      tu_frame_build (frame, &spec, got);
      g_assert_cmpuint (b.packets[i].length, ==, spec.len);
      g_assert_cmpmem (data + b.packets[i].offset, spec.len, frame, spec.len);
    }
    dq_rxq_release (rxq, &b);
  }
  g_assert_no_error (error);
  g_assert_cmpuint (got, ==, n);
  /* batches: a copy per EMU_STAGED_CQES CQEs, per region or per device pass, never one
   * per frame */
  g_assert_cmpuint (d.writes, >=, 1);
  g_assert_cmpuint (d.writes * 16, <=, n);
  g_assert_cmpuint (d.bytes, >=, sent_bytes);
  g_assert_cmpuint (d.exports, ==, 0); /* no dma-buf: the emulator copies */

  /* a failed copy is counted; the CQEs still come (the NIC cannot take them back) */
  EmuCounters c;
  emu_port_counters (ep, &c);
  g_assert_cmpuint (c.dma_write_errors, ==, 0);
  g_assert_cmpuint (c.iommu_faults, ==, 0);
  d.failing_writes = 1;
  TuFrameSpec spec = { .len = 300, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  inject_frames (ep, &spec, 0, 1);
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 500 * MS, &error), ==, 1);
  g_assert_cmpuint (b.n_packets, ==, 1);
  dq_rxq_release (rxq, &b);
  emu_port_counters (ep, &c);
  g_assert_cmpuint (c.dma_write_errors, ==, 1);

  emu_port_unref (ep);
  dq_rxq_destroy (rxq);
  g_assert_null (d.mem);
  dq_port_unref (p);
}

static gpointer
plain_desc_alloc (gsize size, gpointer user)
{
  return g_malloc0 (size);
}

static void
plain_desc_free (gpointer mem, gpointer user)
{
  g_free (mem);
}

/* Header-data split through the engine: each burst's headers in host memory, the rest of
 * every packet in the payload ring (here GPU memory played by TuDeviceMem), byte for byte;
 * no packed offsets (they would be the headers'), though the memory gives descriptor
 * memory; other engines refuse header-size. */
static void
test_header_split (void)
{
  TuDeviceMem d;
  DqRingMemory dm = tu_device_memory (&d);
  dm.desc_alloc = plain_desc_alloc;
  dm.desc_free = plain_desc_free;
  DqPort *p = port_open ("emu:split0");
  DqRxConfig cfg = ring_memory_config (32, 1 << 20, &dm);
  cfg.header_size = 42;
  GError *error = NULL;
  DqRxQueue *rxq = dq_rxq_create (p, &cfg, &error);
  g_assert_no_error (error);
  EmuPort *ep = emu_port_lookup ("split0");

  const guint n = 300;
  guint8 frame[1514];
  inject_varied_frames (ep, n, 60, 89, 1455);

  guint got = 0;
  DqBurst b;
  gpointer ring_base;
  gsize ring_size;
  g_assert_true (dq_rxq_ring_range (rxq, &ring_base, &ring_size));
  g_assert_true (ring_base == d.mem);
  g_assert_cmpuint (ring_size, ==, d.size);
  while (got < n && dq_rxq_poll (rxq, &b, 200 * MS, &error) == 1) {
    g_assert_cmpuint (b.header_size, ==, 42);
    g_assert_cmpuint (b.header_stride, ==, 64);
    g_assert_cmpint (b.memory, ==, DQ_MEMORY_HOST);
    g_assert_cmpint (b.payload_memory, ==, DQ_MEMORY_CUDA);
    g_assert_null (b.words);
    g_assert_true (b.payload >= d.mem && b.payload + b.payload_size <= d.mem + d.size);
    for (guint i = 0; i < b.n_packets; i++, got++) {
      const DqPacket *pkt = &b.packets[i];
      TuFrameSpec spec = varied_frame (got, 60, 89, 1455);
      tu_frame_build (frame, &spec, got);
      g_assert_cmpuint (pkt->length, ==, spec.len);
      g_assert_cmpuint (pkt->flow_id, ==, 0);
      g_assert_cmpmem (b.data + pkt->offset, 42, frame, 42);
      const guint8 *payload = tu_device_view (
          &d, b.payload + (gsize) (pkt->offset / b.header_stride) * b.payload_stride);
      g_assert_cmpmem (payload, spec.len - 42, frame + 42, spec.len - 42);
    }
    dq_rxq_release (rxq, &b);
  }
  g_assert_no_error (error);
  g_assert_cmpuint (got, ==, n);
  DqRxStats st;
  dq_rxq_stats (rxq, &st);
  g_assert_cmpuint (st.packets, ==, n);
  g_assert_cmpuint (st.drops_ring_full + st.errors, ==, 0);
  emu_port_unref (ep);
  dq_rxq_destroy (rxq);
  dq_port_unref (p);

  /* a header size the ring cannot take, and an engine without split, say so */
  p = port_open ("emu:split1");
  cfg.ring_memory = NULL;
  cfg.header_size = 8;
  cfg.group_id = next_group++;
  expect_rxq_refused (p, &cfg, DQ_ERROR_CONFIG, "header-size 8 is not allowed");
  dq_port_unref (p);
  DqPort *lo = dq_port_open ("afpacket:lo", &error);
  if (lo != NULL) {
    cfg.header_size = 42;
    g_assert_null (dq_rxq_create (lo, &cfg, &error));
    g_assert_error (error, DQ_ERROR, DQ_ERROR_CONFIG);
    g_assert_nonnull (strstr (error->message, "header-size 42"));
    g_assert_nonnull (strstr (error->message, "mlx5 or emu engine"));
    dq_port_unref (lo);
  }
  g_clear_error (&error);
}

/* Downstream holding bursts: the NIC drops (counted in drops_ring_full), never
 * overwrites held memory; releasing recovers. */
static void
test_ring_full (void)
{
  /* 64 KiB: 4 WQEs of 8 strides of 2 KiB (the stride key) = 32 packets */
  EmuRx rig;
  emu_rx_open (&rig, "emu:rf0,stride=2048", 8, 1 * MS, 64 << 10, 0);
  DqRxQueue *rxq = rig.rxq;
  EmuPort *ep = rig.ep;
  TuFrameSpec spec = { .len = 1000, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  DqBurst held[8];
  guint n_held = 0, got = 0;
  GError *error = NULL;

  g_assert_cmpuint (dq_rxq_ring_bytes (rxq), ==, 64 << 10);
  inject_frames (ep, &spec, 0, 100);
  while (got < 32) {
    g_assert_cmpint (dq_rxq_poll (rxq, &held[n_held], 100 * MS, &error), ==, 1);
    for (guint i = 0; i < held[n_held].n_packets; i++)
      g_assert_cmpuint (
          tu_frame_seq (held[n_held].data + held[n_held].packets[i].offset, 1000), ==, got + i);
    got += held[n_held].n_packets;
    n_held++;
  }
  g_assert_cmpuint (got, ==, 32);
  DqRxStats st;
  dq_rxq_stats (rxq, &st);
  g_assert_cmpuint (st.drops_ring_full, ==, 68);
  g_assert_cmpuint (st.packets, ==, 32);
  /* held data stays intact while more frames arrive and are dropped */
  inject_frames (ep, &spec, 100, 10);
  DqBurst b;
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 5 * MS, &error), ==, 0);
  dq_rxq_stats (rxq, &st);
  g_assert_cmpuint (st.drops_ring_full, ==, 78);
  for (guint h = 0, seq = 0; h < n_held; h++) {
    for (guint i = 0; i < held[h].n_packets; i++, seq++) {
      char *why = NULL;
      if (!tu_frame_check (held[h].data + held[h].packets[i].offset, 1000, &spec, seq, &why))
        g_error ("%s", why);
    }
  }
  /* release out of order: the last first */
  for (guint h = n_held; h > 0; h--)
    dq_rxq_release (rxq, &held[h - 1]);
  /* the polling thread re-posts the WQEs the next time it polls */
  g_assert_cmpint (dq_rxq_poll (rxq, &b, 0, &error), ==, 0);
  for (guint32 s = 200; s < 240; s++) {
    inject_frame (ep, &spec, s);
    g_assert_cmpint (dq_rxq_poll (rxq, &b, 1000 * MS, &error), ==, 1);
    g_assert_cmpuint (b.n_packets, ==, 1);
    g_assert_cmpuint (tu_frame_seq (b.data + b.packets[0].offset, 1000), ==, s);
    dq_rxq_release (rxq, &b);
  }
  dq_rxq_stats (rxq, &st);
  g_assert_cmpuint (st.drops_ring_full, ==, 78);
  emu_rx_close (&rig);
}

/* Flow rules over a group of two queues: installed once both exist; queue keys and
 * marks; rules without a queue spread by RSS; removed with the queues. */
static void
test_flows (void)
{
  DqPort *p = port_open ("emu:fl0,pause=off");
  EmuPort *ep = emu_port_lookup ("fl0");
  DqFlowRule *rules = NULL;
  guint n_rules = 0;
  GError *error = NULL;
  guint32 group = next_group++;
  TuFrameSpec spec = { .len = 100,
    .proto = TU_PROTO_UDP,
    .src = 0x0a000001,
    .dst = 0x0a000002,
    .sport = 1000,
    .good_csums = TRUE };
  guint8 frame[100];
  EmuCounters c;

  g_assert_true (dq_flow_parse (
      "proto=udp dst-port=5000 mark=7 queue=1; proto=udp mark=3", &rules, &n_rules, &error));
  DqRxQueue *q0 = rxq_new (p, 64, 1 * MS, 1 << 20, 0, rules, n_rules, 0, 2, group);
  /* half a group: not steered yet */
  spec.dport = 5000;
  tu_frame_build (frame, &spec, 1);
  g_assert_true (emu_port_inject (ep, frame, 100));
  g_assert_true (emu_port_wait_idle (ep, 1000 * MS));
  emu_port_counters (ep, &c);
  g_assert_cmpuint (c.rx_steer_miss, ==, 1);

  DqRxQueue *q1 = rxq_new (p, 64, 1 * MS, 1 << 20, 0, rules, n_rules, 1, 2, group);
  guint sent_other = 0;
  for (guint32 s = 0; s < 40; s++) {
    spec.dport = s % 2 ? 5000 : (guint16) (6000 + s);
    spec.sport = (guint16) (1000 + s * 77);
    tu_frame_build (frame, &spec, s);
    g_assert_true (emu_port_inject (ep, frame, 100));
    sent_other += s % 2 ? 0 : 1;
  }
  g_assert_true (emu_port_wait_idle (ep, 1000 * MS));
  guint counts[2] = { 0 }, marks7 = 0, marks3 = 0;
  DqRxQueue *qs[2] = { q0, q1 };
  for (guint qi = 0; qi < 2; qi++) {
    DqBurst b;
    while (dq_rxq_poll (qs[qi], &b, 5 * MS, &error) == 1) {
      for (guint i = 0; i < b.n_packets; i++) {
        guint32 s = tu_frame_seq (b.data + b.packets[i].offset, 100);
        if (s % 2) {
          g_assert_cmpuint (qi, ==, 1);
          g_assert_cmpuint (b.packets[i].flow_id, ==, 7);
          marks7++;
        } else {
          g_assert_cmpuint (b.packets[i].flow_id, ==, 3);
          marks3++;
        }
        counts[qi]++;
      }
      dq_rxq_release (qs[qi], &b);
    }
  }
  g_assert_cmpuint (marks7, ==, 20);
  g_assert_cmpuint (marks3, ==, sent_other);
  g_assert_cmpuint (counts[0], >, 0); /* RSS put some of rule 2's packets on queue 0 */
  g_assert_cmpuint (counts[0] + counts[1], ==, 40);

  /* destroying a queue takes the group's rules away */
  dq_rxq_destroy (q1);
  g_assert_true (emu_port_inject (ep, frame, 100));
  g_assert_true (emu_port_wait_idle (ep, 1000 * MS));
  emu_port_counters (ep, &c);
  g_assert_cmpuint (c.rx_steer_miss, ==, 2);
  dq_rxq_destroy (q0);
  g_free (rules);
  emu_port_unref (ep);
  dq_port_unref (p);
}

/* frames longer than max-packet-size are reported truncated */
static void
test_truncate (void)
{
  EmuRx rig;
  emu_rx_open (&rig, "emu:tr0", 4, 1 * MS, 1 << 20, 100);
  TuFrameSpec spec = { .len = 300, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  DqBurst b;
  GError *error = NULL;

  inject_frame (rig.ep, &spec, 9);
  spec.len = 100;
  inject_frame (rig.ep, &spec, 10);
  g_assert_cmpint (dq_rxq_poll (rig.rxq, &b, 1000 * MS, &error), ==, 1);
  if (b.n_packets < 2) {
    dq_rxq_release (rig.rxq, &b);
    g_error ("expected both packets in one burst");
  }
  g_assert_cmpuint (b.packets[0].length, ==, 100);
  g_assert_cmpuint (b.packets[0].flags & DQ_PACKET_FLAG_TRUNCATED, !=, 0);
  g_assert_cmpuint (b.packets[1].length, ==, 100);
  g_assert_cmpuint (b.packets[1].flags & DQ_PACKET_FLAG_TRUNCATED, ==, 0);
  /* 300 bytes took 5 strides of 64: the next packet starts after them */
  g_assert_cmpuint (b.packets[1].offset, ==, 320);
  dq_rxq_release (rig.rxq, &b);
  DqRxStats st;
  dq_rxq_stats (rig.rxq, &st);
  g_assert_cmpuint (st.truncated, ==, 1);
  emu_rx_close (&rig);
}

typedef struct {
  DqTxQueue *txq;
  int result;
  guint n;
} BlockedSend;

static gpointer
blocked_send_thread (gpointer data)
{
  BlockedSend *bs = data;
  guint8 frame[64] = { 0 };
  const guint8 **fp = g_new (const guint8 *, bs->n);
  guint32 *lens = g_new (guint32, bs->n);
  for (guint i = 0; i < bs->n; i++) {
    fp[i] = frame;
    lens[i] = 64;
  }
  bs->result = dq_txq_send (bs->txq, fp, lens, bs->n, NULL);
  g_free (fp);
  g_free (lens);
  return NULL;
}

typedef struct {
  DqTxQueue *txq;
  gboolean result;
} FlushCall;

static gpointer
flush_thread (gpointer data)
{
  FlushCall *fc = data;
  fc->result = dq_txq_flush (fc->txq, NULL);
  return NULL;
}

/* TX: refused frames are consumed and counted; a full ring makes send wait (a wakeup
 * ends the wait with fewer consumed); flush waits for the device. */
static void
test_tx (void)
{
  DqPort *p = port_open ("emu:tx0,pause=off,peer=none");
  DqTxQueue *txq = txq_new (p, 8 * 2048, 0); /* 8 slots */
  EmuPort *ep = emu_port_lookup ("tx0");
  guint8 f[2000] = { 0 };
  const guint8 *fp[4] = { f, f, f, f };
  guint32 lens[4] = { 13, 60, 1519, 1518 };
  GError *error = NULL;
  DqTxStats st;
  EmuCounters c;

  g_assert_cmpint (dq_txq_send (txq, fp, lens, 4, &error), ==, 4);
  g_assert_no_error (error);
  g_assert_true (dq_txq_flush (txq, &error));
  dq_txq_stats (txq, &st);
  g_assert_cmpuint (st.packets, ==, 2);
  g_assert_cmpuint (st.bytes, ==, 60 + 1518);
  g_assert_cmpuint (st.errors, ==, 2);
  emu_port_counters (ep, &c);
  g_assert_cmpuint (c.tx_packets, ==, 2);
  g_assert_cmpuint (c.tx_no_link, ==, 2);

  /* a stalled device: 8 slots fill, the 9th frame waits until woken */
  emu_port_fault_stall (ep, TRUE);
  BlockedSend bs = { .txq = txq, .n = 12 };
  GThread *t = g_thread_new ("blocked-send", blocked_send_thread, &bs);
  g_usleep (30000);
  dq_txq_wakeup (txq);
  g_thread_join (t);
  g_assert_cmpint (bs.result, ==, 8);
  dq_txq_stats (txq, &st);
  g_assert_cmpuint (st.ring_full_waits, ==, 1);
  /* flush ends on a wakeup too (FALSE: not everything left) */
  FlushCall fc = { .txq = txq };
  t = g_thread_new ("flush", flush_thread, &fc);
  g_usleep (20000);
  dq_txq_wakeup (txq);
  g_thread_join (t);
  g_assert_false (fc.result);
  emu_port_fault_stall (ep, FALSE);
  g_assert_true (dq_txq_flush (txq, &error));
  emu_port_counters (ep, &c);
  g_assert_cmpuint (c.tx_packets, ==, 10);
  emu_port_unref (ep);
  dq_txq_destroy (txq);
  dq_port_unref (p);
}

/* Two-segment sends through the engine API: frames whose payloads lie in registered host
 * memory and in device memory the CPU cannot touch arrive byte for byte; posted and
 * completed count the frames, every one done after a flush; a stalled device keeps them
 * posted, not completed; a payload outside its registration is refused with nothing sent,
 * a header the port cannot take is counted; an engine without it says so. */
static void
test_tx_split (void)
{
  EmuRx r;
  emu_rx_open (&r, "emu:txsplit0", 64, 1 * MS, 1 << 21, 0);
  DqTxQueue *txq = txq_new (r.port, 64 * 2048, 0);
  GError *error = NULL;
  g_assert_true (dq_txq_can_split (txq));
  const gsize size = 256 * 1024;
  guint8 *host = g_malloc0 (size);
  TuDeviceMem d;
  DqRingMemory dm = tu_device_memory (&d);
  guint8 *dev = dm.alloc (size, dm.user);
  DqTxMemory *hmem = dq_txq_register (txq, host, size, NULL, &error);
  g_assert_no_error (error);
  DqTxMemory *dmem = dq_txq_register (txq, dev, size, &dm, &error);
  g_assert_no_error (error);

  const guint n = 400, batch = 50;
  guint8 hdr[50][64], frame[1518];
  const guint8 *headers[50];
  guint32 hlens[50];
  DqTxPayload pl[50];
  gsize at = 0;
  for (guint b = 0; b < n / batch; b++) {
    gboolean on_dev = b % 2;
    for (guint i = 0; i < batch; i++) {
      guint32 s = b * batch + i;
      TuFrameSpec spec = { .len = 60 + (s * 131) % 1459, .proto = TU_PROTO_UDP };
      tu_frame_build (frame, &spec, s);
      hlens[i] = 14 + s % 40;
      memcpy (hdr[i], frame, hlens[i]);
      headers[i] = hdr[i];
      guint32 plen = spec.len - hlens[i];
      if (at + plen > size)
        at = 0;
      memcpy ((on_dev ? d.backing : host) + at, frame + hlens[i], plen);
      pl[i] = (DqTxPayload){ on_dev ? dmem : hmem, (on_dev ? dev : host) + at, plen };
      at += plen;
    }
    g_assert_cmpint (dq_txq_send_split (txq, headers, hlens, pl, NULL, batch, &error), ==, batch);
    g_assert_no_error (error);
    /* nothing is overwritten before the device took it: wait for this batch */
    g_assert_true (dq_txq_flush (txq, &error));
  }
  g_assert_cmpuint (dq_txq_posted (txq), ==, n);
  g_assert_cmpuint (dq_txq_completed (txq), ==, n);

  guint got = 0;
  DqBurst bu;
  while (got < n && dq_rxq_poll (r.rxq, &bu, 500 * MS, &error) == 1) {
    for (guint i = 0; i < bu.n_packets; i++, got++) {
      TuFrameSpec spec = { .len = 60 + (got * 131) % 1459, .proto = TU_PROTO_UDP };
      char *why = NULL;
      g_assert_cmpuint (bu.packets[i].length, ==, spec.len);
      if (!tu_frame_check (bu.data + bu.packets[i].offset, spec.len, &spec, got, &why))
        g_error ("frame %u: %s", got, why);
    }
    dq_rxq_release (r.rxq, &bu);
  }
  g_assert_cmpuint (got, ==, n);
  EmuCounters c;
  emu_port_counters (r.ep, &c);
  g_assert_cmpuint (c.tx_device_reads, ==, n / 2);

  /* a stalled device: posted, not completed, until it runs */
  emu_port_fault_stall (r.ep, TRUE);
  g_assert_cmpint (dq_txq_send_split (txq, headers, hlens, pl, NULL, 4, &error), ==, 4);
  g_assert_cmpuint (dq_txq_posted (txq), ==, n + 4);
  g_assert_cmpuint (dq_txq_completed (txq), ==, n);
  emu_port_fault_stall (r.ep, FALSE);
  g_assert_true (dq_txq_flush (txq, &error));
  g_assert_cmpuint (dq_txq_completed (txq), ==, n + 4);

  /* outside the registration: refused, nothing sent */
  DqTxPayload bad = { hmem, host + size - 10, 11 };
  g_assert_cmpint (dq_txq_send_split (txq, headers, hlens, &bad, NULL, 1, &error), ==, -1);
  g_assert_error (error, DQ_ERROR, DQ_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message, "outside its registered memory"));
  g_clear_error (&error);
  /* a header of 0 bytes before a payload, a frame over the MTU: counted as errors */
  DqTxStats before, after;
  dq_txq_stats (txq, &before);
  guint32 zero = 0, big = 100;
  DqTxPayload over = { hmem, host, 1500 };
  g_assert_cmpint (dq_txq_send_split (txq, headers, &zero, &pl[0], NULL, 1, &error), ==, 1);
  g_assert_cmpint (dq_txq_send_split (txq, headers, &big, &over, NULL, 1, &error), ==, 1);
  dq_txq_stats (txq, &after);
  g_assert_cmpuint (after.errors - before.errors, ==, 2);
  g_assert_cmpuint (after.packets, ==, before.packets);
  g_assert_cmpuint (dq_txq_posted (txq), ==, n + 4);

  dq_txq_unregister (txq, hmem);
  dq_txq_unregister (txq, dmem);
  dq_txq_destroy (txq);
  dm.free (dev, size, dm.user);
  g_free (host);
  emu_rx_close (&r);

  DqPort *lo = dq_port_open ("afpacket:lo", &error);
  if (lo != NULL) {
    DqTxQueue *ltx = txq_new (lo, 0, 0);
    g_assert_false (dq_txq_can_split (ltx));
    g_assert_null (dq_txq_register (ltx, frame, sizeof frame, NULL, &error));
    g_assert_error (error, DQ_ERROR, DQ_ERROR_CONFIG);
    g_assert_nonnull (strstr (error->message, "no two-segment sends"));
    g_assert_cmpuint (dq_txq_posted (ltx), ==, 0);
    dq_txq_destroy (ltx);
    dq_port_unref (lo);
  }
  g_clear_error (&error);
}

/* device-string options the engine takes: RX stride geometry, TX checksum offload and
 * source MAC stamping */
static void
test_options (void)
{
  DqPort *p = port_open ("emu:opt0,stride=256,strides=64,tx-csum=off,tx-eth-src=on,"
                         "mac=02:0a:0b:0c:0d:0e");
  DqRxQueue *rxq = rxq_new (p, 64, 1 * MS, 1 << 20, 0, NULL, 0, 0, 1, next_group++);
  DqTxQueue *txq = txq_new (p, 0, 0);
  TuFrameSpec spec = { .len = 600, .proto = TU_PROTO_UDP }; /* bad checksums */
  guint8 frame[600];
  const guint8 *fp[1] = { frame };
  guint32 lens[1] = { 600 };
  DqBurst b;
  GError *error = NULL;

  /* 1 MiB = 64 WQEs of 64 strides of 256 bytes */
  g_assert_cmpuint (dq_rxq_ring_bytes (rxq), ==, 1 << 20);
  tu_frame_build (frame, &spec, 1);
  g_assert_cmpint (dq_txq_send (txq, fp, lens, 1, &error), ==, 1);
  tu_frame_build (frame, &spec, 2);
  g_assert_cmpint (dq_txq_send (txq, fp, lens, 1, &error), ==, 1);
  guint got = 0;
  while (got < 2) {
    g_assert_cmpint (dq_rxq_poll (rxq, &b, 1000 * MS, &error), ==, 1);
    for (guint i = 0; i < b.n_packets; i++) {
      const guint8 *d = b.data + b.packets[i].offset;
      const guint8 mac[6] = { 2, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e };
      g_assert_cmpmem (d + 6, 6, mac, 6);
      /* no offload: the checksums arrive as sent (wrong) */
      g_assert_cmpuint (b.packets[i].flags & DQ_PACKET_FLAG_CSUM_OK, ==, 0);
      g_assert_cmpuint ((d[24] << 8) | d[25], ==, 0xdead);
      g_assert_cmpuint (tu_frame_seq (d, 600), ==, got + 1);
      if (i > 0)
        g_assert_cmpuint (b.packets[i].offset - b.packets[i - 1].offset, ==, 3 * 256);
      got++;
    }
    dq_rxq_release (rxq, &b);
  }
  dq_txq_destroy (txq);
  dq_rxq_destroy (rxq);
  dq_port_unref (p);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5/engine/ring-memory-hook", test_ring_memory_hook);
  g_test_add_func ("/mlx5/engine/device-ring-memory", test_device_ring_memory);
  g_test_add_func ("/mlx5/engine/header-split", test_header_split);
  g_test_add_func ("/mlx5/engine/registry", test_registry);
  g_test_add_func ("/mlx5/engine/config-errors", test_config_errors);
  g_test_add_func ("/mlx5/engine/loopback-million", test_loopback_million);
  g_test_add_func ("/mlx5/engine/burst-timeout-wakeup", test_burst_timeout_wakeup);
  g_test_add_func ("/mlx5/engine/ring-full", test_ring_full);
  g_test_add_func ("/mlx5/engine/flows", test_flows);
  g_test_add_func ("/mlx5/engine/truncate", test_truncate);
  g_test_add_func ("/mlx5/engine/tx", test_tx);
  g_test_add_func ("/mlx5/engine/tx-split", test_tx_split);
  g_test_add_func ("/mlx5/engine/options", test_options);
  return g_test_run ();
}
