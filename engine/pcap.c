/* The pcap engine: a capture file as a port, read and written by libpcap.
 *
 *   pcap:FILE[,pace=fast|recorded][,rate=PPS]
 *
 * A port is read (an RX queue: the capture replayed) or written (a TX queue: frames
 * recorded), not both. Reading: one RX queue; packets are copied from libpcap into a ring
 * of blocks, one burst a block, as fast as the consumer takes them (pace=fast), at the
 * spacing the capture recorded (pace=recorded), or at rate=PPS packets a second; the flow
 * rules run in software (flow ids, filtering); at the end of the file the queue ends
 * (DQ_RXQ_END: the element sends EOS). A packet's timestamp is the port time when it was
 * delivered. Writing: each frame becomes one record of a nanosecond pcap file (link type
 * Ethernet), stamped with the time the sender gives it (DqTxConfig.scheduled: a capture
 * stores times rather than waits for them; DqPortInfo.stamps_frames) or the port time
 * when it has none. The port clock is CLOCK_REALTIME.
 */
#include "engines.h"

#include "burst-pool.h"
#include "engine-util.h"
#include "rx-rules.h"

#include <pcap/pcap.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>

#define PCAP_DEFAULT_RING ((gsize) 4 << 20)
#define PCAP_MIN_BLOCKS 2
#define PCAP_ALIGN 64
#define PCAP_SNAPLEN 65535
/* a paced replay sleeps at most this long at a time, so that a wakeup is seen */
#define PCAP_SLEEP_SLICE_NS G_GINT64_CONSTANT (2000000)

typedef enum {
  PCAP_PACE_FAST,
  PCAP_PACE_RECORDED,
  PCAP_PACE_RATE,
} PcapPace;

typedef struct {
  char *path;
  char *what; /* "pcap:PATH" for messages */
  PcapPace pace;
  guint64 rate_pps;
  GMutex lock;
  gboolean reading, writing; /* a queue of that direction exists */
} PcapPort;

/* ---------------------------------------------------------------------------------- */
/* the port */

static gboolean
port_key (PcapPort *port, const char *kv, GError **error)
{
  if (g_str_equal (kv, "pace=fast")) {
    port->pace = PCAP_PACE_FAST;
    return TRUE;
  }
  if (g_str_equal (kv, "pace=recorded")) {
    port->pace = PCAP_PACE_RECORDED;
    return TRUE;
  }
  if (g_str_has_prefix (kv, "rate=")) {
    gchar *end = NULL;
    guint64 v = g_ascii_strtoull (kv + 5, &end, 10);
    if (end != NULL && *end == '\0' && end != kv + 5 && v >= 1 && v <= 1000000000) {
      port->pace = PCAP_PACE_RATE;
      port->rate_pps = v;
      return TRUE;
    }
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "%s: '%s': rate is packets a second (allowed 1 .. 1000000000)", port->what, kv);
    return FALSE;
  }
  g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
      "%s: unknown key '%s' (allowed: pace=fast, pace=recorded, rate=PPS)", port->what, kv);
  return FALSE;
}

static void
pcap_port_close (gpointer priv)
{
  PcapPort *port = priv;
  if (port == NULL)
    return;
  g_mutex_clear (&port->lock);
  g_free (port->path);
  g_free (port->what);
  g_free (port);
}

static gpointer
pcap_port_open (const char *arg, DqPortInfo *info, GError **error)
{
  gchar **parts = g_strsplit (arg, ",", -1);
  PcapPort *port = g_new0 (PcapPort, 1);
  g_mutex_init (&port->lock);
  port->path = g_strdup (parts[0]);
  port->what = g_strdup_printf ("pcap:%s", parts[0]);
  gboolean ok = TRUE;
  for (guint i = 1; ok && parts[i] != NULL; i++)
    ok = port_key (port, parts[i], error);
  g_strfreev (parts);
  if (!ok) {
    pcap_port_close (port);
    return NULL;
  }
  info->clock_name = "CLOCK_REALTIME (system)";
  info->clock_id = CLOCK_REALTIME;
  /* a capture takes any Ethernet frame up to the snapshot length */
  info->mtu = PCAP_SNAPLEN - 18;
  info->stamps_frames = TRUE;
  return port;
}

static guint64
pcap_port_time (gpointer priv)
{
  return dq_clock_ns (CLOCK_REALTIME);
}

/* Claims the port for its one queue: FALSE when it has one */
static gboolean
port_claim (PcapPort *port, gboolean writing, GError **error)
{
  g_mutex_lock (&port->lock);
  gboolean was_reading = port->reading, was_writing = port->writing;
  if (!was_reading && !was_writing) {
    port->reading = !writing;
    port->writing = writing;
  }
  g_mutex_unlock (&port->lock);
  if (!was_reading && !was_writing)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "%s: the file is already open for %s in this process; a pcap port is read by one "
      "receive queue or written by one send queue (allowed: another file)",
      port->what, was_reading ? "reading" : "writing");
  return FALSE;
}

static void
port_release (PcapPort *port, gboolean writing)
{
  g_mutex_lock (&port->lock);
  if (writing)
    port->writing = FALSE;
  else
    port->reading = FALSE;
  g_mutex_unlock (&port->lock);
}

/* ---------------------------------------------------------------------------------- */
/* reading: the capture replayed */

typedef struct {
  PcapPort *port;
  pcap_t *pcap;
  DqBlockRing blocks; /* the ring: a burst a block */
  guint burst_packets;
  guint max_packet;
  guint64 burst_timeout_ns;
  DqRxRules rules;
  int wake_fd;

  /* polling thread only */
  gint64 fill_start;
  gboolean ended;
  /* pacing: the first packet's record time and when it was delivered (monotonic) */
  gboolean started;
  guint64 first_record_ns;
  gint64 first_mono;
  guint64 delivered;
  /* a packet read but not yet due (pace): its header and bytes are libpcap's until the
   * next pcap_next_ex */
  struct pcap_pkthdr *pend_hdr;
  const guint8 *pend_data;

  guint64 packets, bytes, bursts, truncated, drops_filtered;
} PcapRxQueue;

static void
pcap_rxq_destroy (gpointer priv)
{
  PcapRxQueue *rxq = priv;
  if (rxq == NULL)
    return;
  if (rxq->pcap != NULL)
    pcap_close (rxq->pcap);
  if (rxq->wake_fd >= 0)
    close (rxq->wake_fd);
  g_free (rxq->blocks.ring);
  dq_block_ring_clear (&rxq->blocks);
  dq_rx_rules_clear (&rxq->rules);
  port_release (rxq->port, FALSE);
  g_free (rxq);
}

static gboolean
rx_open_capture (PcapRxQueue *rxq, GError **error)
{
  char errbuf[PCAP_ERRBUF_SIZE] = "";
  PcapPort *port = rxq->port;
  rxq->pcap =
      pcap_open_offline_with_tstamp_precision (port->path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (rxq->pcap == NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "%s: cannot read the capture: %s (allowed: a pcap file of Ethernet frames)", port->what,
        errbuf);
    return FALSE;
  }
  int link = pcap_datalink (rxq->pcap);
  if (link != DLT_EN10MB) {
    const char *name = pcap_datalink_val_to_name (link);
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "%s: the capture's link type is %s (%d); allowed: Ethernet (EN10MB, 1)", port->what,
        name != NULL ? name : "unknown", link);
    return FALSE;
  }
  return TRUE;
}

static gpointer
pcap_rxq_create (gpointer port_priv, const DqRxConfig *config, GError **error)
{
  PcapPort *port = port_priv;
  if (config->n_queues != 1) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: queues %u: a capture is replayed by one queue (allowed: 1)", port->what,
        config->n_queues);
    return NULL;
  }
  guint max_packet = config->max_packet_size != 0 ? config->max_packet_size : PCAP_SNAPLEN;
  gsize ring = config->ring_bytes != 0 ? config->ring_bytes : PCAP_DEFAULT_RING;
  gsize block =
      dq_round_up ((gsize) config->burst_packets * dq_round_up (max_packet, PCAP_ALIGN), 4096);
  if (ring / block < PCAP_MIN_BLOCKS) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: ring-size %" G_GSIZE_FORMAT " is too small: a burst of %u packets of up to %u "
        "bytes takes %" G_GSIZE_FORMAT " bytes and the ring must hold %u (allowed: "
        "ring-size >= %" G_GSIZE_FORMAT ", or lower burst-packets or max-packet-size)",
        port->what, ring, config->burst_packets, max_packet, block, PCAP_MIN_BLOCKS,
        block * PCAP_MIN_BLOCKS);
    return NULL;
  }
  if (!port_claim (port, FALSE, error))
    return NULL;
  PcapRxQueue *rxq = g_new0 (PcapRxQueue, 1);
  rxq->port = port;
  rxq->wake_fd = -1;
  rxq->max_packet = max_packet;
  guint n_blocks = (guint) MIN (ring / block, 1024);
  rxq->burst_packets = config->burst_packets;
  rxq->burst_timeout_ns = config->burst_timeout_ns;
  dq_rx_rules_init (&rxq->rules, config->filter, config->flows, config->n_flows, 0);
  dq_block_ring_init (
      &rxq->blocks, g_try_malloc ((gsize) n_blocks * block), block, n_blocks, rxq->burst_packets);
  rxq->wake_fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (rxq->blocks.ring == NULL || rxq->wake_fd < 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: cannot allocate a ring of %" G_GSIZE_FORMAT " bytes", port->what,
        (gsize) n_blocks * block);
    pcap_rxq_destroy (rxq);
    return NULL;
  }
  if (!rx_open_capture (rxq, error)) {
    pcap_rxq_destroy (rxq);
    return NULL;
  }
  return rxq;
}

static guint64
record_ns (const struct pcap_pkthdr *h)
{
  /* nanosecond precision: tv_usec holds nanoseconds */
  return (guint64) h->ts.tv_sec * G_GUINT64_CONSTANT (1000000000) + (guint64) h->ts.tv_usec;
}

/* The monotonic time at which packet `index` (recorded at rec_ns) is due; 0: now */
static gint64
rx_due (PcapRxQueue *rxq, guint64 rec_ns)
{
  const PcapPort *port = rxq->port;
  switch (port->pace) {
    case PCAP_PACE_RECORDED:
      return rec_ns > rxq->first_record_ns
          ? rxq->first_mono + (gint64) (rec_ns - rxq->first_record_ns)
          : rxq->first_mono;
    case PCAP_PACE_RATE:
      return rxq->first_mono +
          (gint64) (rxq->delivered * G_GUINT64_CONSTANT (1000000000) / port->rate_pps);
    default: return 0;
  }
}

/* Copies the pending packet into the burst being filled (or filters it out) */
static void
rx_take_pending (PcapRxQueue *rxq)
{
  const struct pcap_pkthdr *h = rxq->pend_hdr;
  guint8 *dst = dq_block_ring_next (&rxq->blocks);
  guint len = MIN (h->caplen, rxq->max_packet);
  rxq->pend_hdr = NULL;
  rxq->delivered++;
  memcpy (dst, rxq->pend_data, len);
  guint32 flow_id;
  if (!dq_rx_rules_classify (&rxq->rules, dst, len, -1, &flow_id)) {
    dq_counter_add (&rxq->drops_filtered, 1);
    return;
  }
  guint32 flags = 0;
  if (h->len > len) {
    flags |= DQ_PACKET_FLAG_TRUNCATED;
    dq_counter_add (&rxq->truncated, 1);
  }
  if (rxq->blocks.fill_n == 0)
    rxq->fill_start = dq_mono_ns ();
  DqPacket *p = dq_block_ring_add (&rxq->blocks, len, PCAP_ALIGN);
  p->flow_id = flow_id;
  p->flags = flags;
  p->timestamp = dq_clock_ns (CLOCK_REALTIME);
  dq_counter_add (&rxq->packets, 1);
  dq_counter_add (&rxq->bytes, len);
}

static void
rx_finish (PcapRxQueue *rxq, DqBurst *burst)
{
  dq_block_ring_finish (&rxq->blocks, burst);
  dq_counter_add (&rxq->bursts, 1);
}

/* Waits until `until` (monotonic ns), a wakeup, or a slice: TRUE when woken */
static gboolean
rx_sleep (PcapRxQueue *rxq, gint64 until)
{
  gint64 left = MIN (until - dq_mono_ns (), PCAP_SLEEP_SLICE_NS);
  if (left <= 0)
    return FALSE;
  struct pollfd pfd = { .fd = rxq->wake_fd, .events = POLLIN };
  struct timespec ts = { left / 1000000000, left % 1000000000 };
  return ppoll (&pfd, 1, &ts, NULL) > 0;
}

static int
pcap_rxq_poll (gpointer priv, DqBurst *burst, gint64 timeout_ns, GError **error)
{
  PcapRxQueue *rxq = priv;
  gint64 deadline = timeout_ns < 0 ? -1 : dq_mono_ns () + timeout_ns;

  for (;;) {
    gboolean woken = FALSE;
    guint64 wakes = 0;
    if (read (rxq->wake_fd, &wakes, sizeof wakes) == (ssize_t) sizeof wakes)
      return 0;
    if (rxq->ended && rxq->blocks.fill_n == 0)
      return DQ_RXQ_END;
    dq_rx_rules_adopt (&rxq->rules);
    /* a burst in a free block */
    if (!dq_block_ring_begin (&rxq->blocks)) {
      woken = rx_sleep (rxq, dq_mono_ns () + 100000);
      if (woken || (deadline >= 0 && dq_mono_ns () >= deadline))
        return 0;
      continue;
    }
    if (rxq->pend_hdr == NULL && !rxq->ended) {
      int r = pcap_next_ex (rxq->pcap, &rxq->pend_hdr, &rxq->pend_data);
      if (r == PCAP_ERROR_BREAK) {
        rxq->ended = TRUE;
        rxq->pend_hdr = NULL;
      } else if (r != 1) {
        g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "%s: reading the capture failed: %s",
            rxq->port->what, pcap_geterr (rxq->pcap));
        rxq->pend_hdr = NULL;
        return -1;
      } else if (!rxq->started) {
        rxq->started = TRUE;
        rxq->first_record_ns = record_ns (rxq->pend_hdr);
        rxq->first_mono = dq_mono_ns ();
      }
    }
    if (rxq->pend_hdr != NULL) {
      gint64 due = rx_due (rxq, record_ns (rxq->pend_hdr));
      if (due <= dq_mono_ns ()) {
        rx_take_pending (rxq);
        gboolean full = rxq->blocks.fill_n == rxq->burst_packets ||
            !dq_block_ring_room (&rxq->blocks, rxq->max_packet);
        if (full) {
          rx_finish (rxq, burst);
          return 1;
        }
        continue;
      }
      /* not due yet: a partial burst goes out after burst-timeout */
      gint64 until = due;
      if (rxq->blocks.fill_n > 0)
        until = MIN (until, rxq->fill_start + (gint64) rxq->burst_timeout_ns);
      if (deadline >= 0)
        until = MIN (until, deadline);
      woken = rx_sleep (rxq, until);
    }
    if (rxq->blocks.fill_n > 0 &&
        (rxq->ended || dq_mono_ns () - rxq->fill_start >= (gint64) rxq->burst_timeout_ns)) {
      rx_finish (rxq, burst);
      return 1;
    }
    /* a partial burst stays open: it goes out full or after burst-timeout, however often
     * the caller polls */
    if (woken || (deadline >= 0 && dq_mono_ns () >= deadline))
      return 0;
  }
}

static void
pcap_rxq_release (gpointer priv, DqBurst *burst)
{
  PcapRxQueue *rxq = priv;
  dq_block_ring_release (&rxq->blocks, burst);
}

static void
pcap_rxq_wakeup (gpointer priv)
{
  PcapRxQueue *rxq = priv;
  dq_eventfd_signal (rxq->wake_fd);
}

static void
pcap_rxq_stats (gpointer priv, DqRxStats *stats)
{
  PcapRxQueue *rxq = priv;
  stats->packets = dq_counter_get (&rxq->packets);
  stats->bytes = dq_counter_get (&rxq->bytes);
  stats->bursts = dq_counter_get (&rxq->bursts);
  stats->truncated = dq_counter_get (&rxq->truncated);
  stats->drops_filtered = dq_counter_get (&rxq->drops_filtered);
}

static gsize
pcap_rxq_ring_bytes (gpointer priv)
{
  PcapRxQueue *rxq = priv;
  return (gsize) rxq->blocks.n_blocks * rxq->blocks.block_size;
}

static gboolean
pcap_rxq_set_flows (
    gpointer priv, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, GError **error)
{
  PcapRxQueue *rxq = priv;
  dq_rx_rules_publish (&rxq->rules, filter, rules, n_rules, 0);
  return TRUE;
}

/* ---------------------------------------------------------------------------------- */
/* writing: frames recorded */

typedef struct {
  PcapPort *port;
  pcap_t *dead;
  pcap_dumper_t *dumper;
  guint max_packet;
  DqTxCounters tx;
} PcapTxQueue;

static void
pcap_txq_destroy (gpointer priv)
{
  PcapTxQueue *txq = priv;
  if (txq == NULL)
    return;
  if (txq->dumper != NULL)
    pcap_dump_close (txq->dumper);
  if (txq->dead != NULL)
    pcap_close (txq->dead);
  port_release (txq->port, TRUE);
  g_free (txq);
}

static gpointer
pcap_txq_create (gpointer port_priv, const DqTxConfig *config, GError **error)
{
  PcapPort *port = port_priv;
  if (config->rate_bps != 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: rate %" G_GUINT64_FORMAT " bit/s: a capture records frames, it does not pace "
        "them (allowed here: 0)",
        port->what, config->rate_bps);
    return NULL;
  }
  if (!port_claim (port, TRUE, error))
    return NULL;
  PcapTxQueue *txq = g_new0 (PcapTxQueue, 1);
  txq->port = port;
  txq->max_packet =
      config->max_packet_size != 0 ? MIN (config->max_packet_size, PCAP_SNAPLEN) : PCAP_SNAPLEN;
  txq->dead =
      pcap_open_dead_with_tstamp_precision (DLT_EN10MB, PCAP_SNAPLEN, PCAP_TSTAMP_PRECISION_NANO);
  txq->dumper = txq->dead != NULL ? pcap_dump_open (txq->dead, port->path) : NULL;
  if (txq->dumper == NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "%s: cannot write the capture: %s", port->what,
        txq->dead != NULL ? pcap_geterr (txq->dead) : "libpcap refused");
    pcap_txq_destroy (txq);
    return NULL;
  }
  return txq;
}

static int
pcap_txq_send (gpointer priv, const guint8 *const *frames, const guint32 *lengths,
    const guint64 *times, guint n, GError **error)
{
  PcapTxQueue *txq = priv;
  guint64 sent = 0, bytes = 0, errors = 0;
  for (guint i = 0; i < n; i++) {
    if (lengths[i] < 14 || lengths[i] > txq->max_packet) {
      errors++;
      continue;
    }
    guint64 t = times != NULL && times[i] != 0 ? times[i] : dq_clock_ns (CLOCK_REALTIME);
    struct pcap_pkthdr h = { 0 };
    h.ts.tv_sec = (time_t) (t / G_GUINT64_CONSTANT (1000000000));
    h.ts.tv_usec = (suseconds_t) (t % G_GUINT64_CONSTANT (1000000000));
    h.caplen = h.len = lengths[i];
    pcap_dump ((u_char *) txq->dumper, &h, frames[i]);
    sent++;
    bytes += lengths[i];
  }
  dq_tx_counters_add_burst (&txq->tx, sent, bytes, errors);
  return (int) n;
}

static gboolean
pcap_txq_flush (gpointer priv, GError **error)
{
  PcapTxQueue *txq = priv;
  if (pcap_dump_flush (txq->dumper) == 0)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_IO, "%s: writing the capture failed", txq->port->what);
  return FALSE;
}

static void
pcap_txq_wakeup (gpointer priv)
{}

static void
pcap_txq_stats (gpointer priv, DqTxStats *stats)
{
  PcapTxQueue *txq = priv;
  dq_tx_counters_read (&txq->tx, stats);
}

static guint
pcap_txq_max_frame (gpointer priv)
{
  PcapTxQueue *txq = priv;
  return txq->max_packet;
}

const DqEngineOps dq_pcap_engine = {
  .name = "pcap",
  .description = "a capture file (libpcap): pcap:FILE[,pace=fast|recorded][,rate=PPS] "
                 "replayed by daqirisrc (EOS at its end) or recorded by daqirisink "
                 "(nanosecond timestamps)",
  .port_open = pcap_port_open,
  .port_close = pcap_port_close,
  .port_time = pcap_port_time,
  .rxq_create = pcap_rxq_create,
  .rxq_destroy = pcap_rxq_destroy,
  .rxq_poll = pcap_rxq_poll,
  .rxq_release = pcap_rxq_release,
  .rxq_wakeup = pcap_rxq_wakeup,
  .rxq_stats = pcap_rxq_stats,
  .rxq_ring_bytes = pcap_rxq_ring_bytes,
  .rxq_set_flows = pcap_rxq_set_flows,
  .txq_create = pcap_txq_create,
  .txq_destroy = pcap_txq_destroy,
  .txq_send = pcap_txq_send,
  .txq_flush = pcap_txq_flush,
  .txq_wakeup = pcap_txq_wakeup,
  .txq_stats = pcap_txq_stats,
  .txq_max_frame = pcap_txq_max_frame,
};
