/**
 * SECTION:element-daqirisink
 * @title: daqirisink
 * @short_description: send raw Ethernet packets in bursts
 *
 * daqirisink sends every packet of every buffer it receives on a port. A buffer with a
 * #GstDaqiriPacketMeta (caps application/x-daqiri-packets, as daqirisrc produces) is a
 * burst: each listed packet is one Ethernet frame, sent unchanged, the whole burst handed
 * to the NIC at once. A buffer without the meta is one frame; plain frames of no daqiri type
 * come as application/octet-stream. The buffers must be CPU-readable: bursts in GPU memory
 * are not taken (their caps features are refused). Packets whose descriptor
 * points outside the buffer are never read; they are counted in #GstDaqiriSink:stats as
 * malformed. The sink waits for ring space rather than drop a packet.
 *
 * Where the engine lets frames be written into its TX ring (mlx5, emu), the sink answers
 * the allocation query with a buffer pool over the ring's slots (buffer pool option
 * "GstBufferPoolOptionDaqiriTxSlots"): each buffer is a run of slots with a
 * #GstDaqiriPacketMeta listing them (packet i = slot i: offset, capacity). A producer
 * that writes frame i into slot i, sets the lengths and n_packets and pushes the buffer
 * has its frames sent where they are, without a copy (counted as in-place in the stats).
 * Every other buffer is copied into the ring (counted as copies), on a TX queue of its
 * own, so the two kinds may interleave on the wire. daqiritestsrc uses the pool.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 daqirisrc device=afpacket:eth1 ! daqirisink device=afpacket:eth2
 * ]| forwarding: every frame copied into eth2's ring
 * |[
 * gst-launch-1.0 daqiritestsrc num-packets=1000000 ! daqirisink device=emu:x \
 *     daqirisrc device=emu:x ! fakesink
 * ]| the test source writes straight into the emulated ConnectX's TX slots
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqirisink.h"
#include "gstdaqiriclock.h"
#include "gstdaqirielement.h"
#include "gstdaqiritxmem.h"
#include "gstdaqiritxpool.h"

#include <gst/daqiri/daqiripacketmeta.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (daqirisink_debug);
#define GST_CAT_DEFAULT daqirisink_debug

#define DEFAULT_DEVICE NULL
#define DEFAULT_RING_SIZE (G_GUINT64_CONSTANT (4) << 20)
#define MIN_RING_SIZE (G_GUINT64_CONSTANT (64) << 10)
#define MAX_RING_SIZE (G_GUINT64_CONSTANT (1) << 30)
#define DEFAULT_MAX_PACKET_SIZE 9216

#define MAX_RATE G_GUINT64_CONSTANT (1600000000000)

enum {
  PROP_0,
  PROP_DEVICE,
  PROP_RING_SIZE,
  PROP_MAX_PACKET_SIZE,
  PROP_SCHEDULE,
  PROP_LATE,
  PROP_RATE,
  PROP_STATS,
};

typedef enum {
  GST_DAQIRI_SCHEDULE_NONE,
  GST_DAQIRI_SCHEDULE_PTS,
} GstDaqiriSchedule;

#define GST_TYPE_DAQIRI_SCHEDULE (gst_daqiri_schedule_get_type ())
static GType
gst_daqiri_schedule_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = { { GST_DAQIRI_SCHEDULE_NONE,
                                           "Every packet as soon as it arrives", "none" },
    { GST_DAQIRI_SCHEDULE_PTS,
        "Every packet at its time: the buffer's PTS plus the packet's offset", "pts" },
    { 0, NULL, NULL } };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstDaqiriSchedule", values));
  return type;
}

typedef enum {
  GST_DAQIRI_LATE_SEND = DQ_TX_LATE_SEND,
  GST_DAQIRI_LATE_DROP = DQ_TX_LATE_DROP,
} GstDaqiriLate;

#define GST_TYPE_DAQIRI_LATE (gst_daqiri_late_get_type ())
static GType
gst_daqiri_late_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = { { GST_DAQIRI_LATE_SEND, "Sent at once", "send" },
    { GST_DAQIRI_LATE_DROP, "Not sent (counted)", "drop" }, { 0, NULL, NULL } };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstDaqiriLate", values));
  return type;
}

struct _GstDaqiriSink {
  GstBaseSink parent;

  /* properties, protected by the object lock */
  gchar *device;
  guint64 ring_size;
  guint max_packet_size;
  GstDaqiriSchedule schedule;
  GstDaqiriLate late;
  guint64 rate;

  /* between start and stop */
  DqPort *port;
  DqTxQueue *txq;        /* copies */
  gboolean can_lend;     /* the engine lends TX slots */
  gboolean stamps;       /* the port stores frames with their time (DqPortInfo.stamps_frames):
                          * each gets its packet timestamp */
  GstDaqiriTxRing *ring; /* the pool's TX queue, made at the first allocation
                                 * query; written in place */
  gint flushing;

  /* the frames of the burst being sent, and their send times (schedule=pts); with
   * header-data split their payload segments */
  const guint8 **frames;
  guint32 *lengths;
  guint64 *times;
  DqTxPayload *payloads;
  guint capacity;

  /* two-segment sends: the payload memory registered with txq, and the buffers sent from
   * where they lie, each held until its frames completed (PendingSend, oldest first) */
  GstDaqiriTxRegs *regs;
  GQueue pending;
  /* split bursts joined for an engine that sends whole frames */
  guint8 *joined;
  gsize joined_size;

  /* frames the port does not send: the longest it takes (refreshed when a frame is
   * longer), and whether a warning said so already (streaming thread) */
  guint max_frame;
  gboolean warned_oversize, warned_undersize;

  /* counters, protected by the object lock */
  guint64 oversize;
  guint64 undersize;
  guint64 malformed;
  guint64 in_place;
  guint64 copies;
  guint64 two_segment;
  guint64 joins;
  guint64 registrations;
  DqTxStats past;
};

typedef struct {
  guint64 mark; /* dq_txq_posted() after its frames */
  GstBuffer *buffer;
} PendingSend;

#define gst_daqiri_sink_parent_class parent_class
G_DEFINE_TYPE (GstDaqiriSink, gst_daqiri_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (daqirisink, "daqirisink", GST_RANK_NONE, GST_TYPE_DAQIRI_SINK);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK,
    GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_DAQIRI_PACKETS_MEDIA_TYPE "; application/octet-stream"));

static void
add_stats (DqTxStats *sum, const DqTxStats *s)
{
  sum->packets += s->packets;
  sum->bytes += s->bytes;
  sum->bursts += s->bursts;
  sum->errors += s->errors;
  sum->ring_full_waits += s->ring_full_waits;
  sum->scheduled += s->scheduled;
  sum->held += s->held;
  sum->late += s->late;
  sum->late_dropped += s->late_dropped;
  sum->wqes += s->wqes;
}

/* both queues; object lock held */
static void
collect_stats (GstDaqiriSink *self, DqTxStats *sum)
{
  DqTxStats s;

  *sum = self->past;
  if (self->txq != NULL) {
    dq_txq_stats (self->txq, &s);
    add_stats (sum, &s);
  }
  if (self->ring != NULL) {
    gst_daqiri_tx_ring_stats (self->ring, &s);
    add_stats (sum, &s);
  }
}

static GstStructure *
make_stats (GstDaqiriSink *self)
{
  DqTxStats s;

  GST_OBJECT_LOCK (self);
  collect_stats (self, &s);
  guint64 malformed = self->malformed;
  guint64 oversize = self->oversize, undersize = self->undersize;
  guint64 in_place = self->in_place;
  guint64 copies = self->copies;
  guint64 two_segment = self->two_segment, joins = self->joins;
  guint64 registrations = self->registrations;
  GST_OBJECT_UNLOCK (self);
  return gst_structure_new ("application/x-daqiri-sink-stats", "packets", G_TYPE_UINT64, s.packets,
      "bytes", G_TYPE_UINT64, s.bytes, "bursts", G_TYPE_UINT64, s.bursts, "errors", G_TYPE_UINT64,
      s.errors, "malformed", G_TYPE_UINT64, malformed, "oversize", G_TYPE_UINT64, oversize,
      "undersize", G_TYPE_UINT64, undersize, "in-place", G_TYPE_UINT64, in_place, "copies",
      G_TYPE_UINT64, copies, "ring-full-waits", G_TYPE_UINT64, s.ring_full_waits, "wqes",
      G_TYPE_UINT64, s.wqes, "scheduled", G_TYPE_UINT64, s.scheduled, "held", G_TYPE_UINT64, s.held,
      "late", G_TYPE_UINT64, s.late, "late-dropped", G_TYPE_UINT64, s.late_dropped, "two-segment",
      G_TYPE_UINT64, two_segment, "joined", G_TYPE_UINT64, joins, "registrations", G_TYPE_UINT64,
      registrations, NULL);
}

/* the properties kept as plain members */
static const GstDaqiriMember sink_members[] = {
  GST_DAQIRI_MEMBER (PROP_DEVICE, GstDaqiriSink, device),
  GST_DAQIRI_MEMBER (PROP_RING_SIZE, GstDaqiriSink, ring_size),
  GST_DAQIRI_MEMBER (PROP_MAX_PACKET_SIZE, GstDaqiriSink, max_packet_size),
  GST_DAQIRI_MEMBER (PROP_SCHEDULE, GstDaqiriSink, schedule),
  GST_DAQIRI_MEMBER (PROP_LATE, GstDaqiriSink, late),
  GST_DAQIRI_MEMBER (PROP_RATE, GstDaqiriSink, rate),
};

/* The TX queue configuration the properties ask for; object lock held */
static DqTxConfig
tx_config (GstDaqiriSink *self)
{
  DqTxConfig config = {
    .ring_bytes = self->ring_size,
    .max_packet_size = self->max_packet_size,
    .scheduled = self->schedule == GST_DAQIRI_SCHEDULE_PTS,
    .late = (DqTxLate) self->late,
    .rate_bps = self->rate,
  };
  return config;
}

static void
gst_daqiri_sink_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  if (!gst_daqiri_member_set_locked (
          object, sink_members, G_N_ELEMENTS (sink_members), prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
gst_daqiri_sink_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (self));
    return;
  }
  if (!gst_daqiri_member_get_locked (
          object, sink_members, G_N_ELEMENTS (sink_members), prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

/* Lets go of the buffers sent from where they lie whose frames the device is done with:
 * those posted up to `done` */
static void
release_sent (GstDaqiriSink *self, guint64 done)
{
  PendingSend *p;
  while ((p = g_queue_peek_head (&self->pending)) != NULL && p->mark <= done) {
    g_queue_pop_head (&self->pending);
    gst_buffer_unref (p->buffer);
    g_free (p);
  }
}

static gboolean
gst_daqiri_sink_start (GstBaseSink *bsink)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);
  GError *error = NULL;

  GST_OBJECT_LOCK (self);
  gchar *device = g_strdup (self->device);
  DqTxConfig config = tx_config (self);
  memset (&self->past, 0, sizeof self->past);
  self->malformed = self->in_place = self->copies = 0;
  self->two_segment = self->joins = self->registrations = 0;
  self->oversize = self->undersize = 0;
  self->warned_oversize = self->warned_undersize = FALSE;
  GST_OBJECT_UNLOCK (self);

  DqPort *port = gst_daqiri_open_port (GST_ELEMENT_CAST (self), device);
  g_free (device);
  if (port == NULL)
    return FALSE;
  /* a capture file stores each frame with a time: the queue takes times */
  gboolean stamps = dq_port_info (port)->stamps_frames;
  config.scheduled = config.scheduled || stamps;
  DqTxQueue *txq = dq_txq_create (port, &config, &error);
  if (txq == NULL) {
    GST_DAQIRI_POST_ENGINE_ERROR (self, "transmit queue", error);
    g_error_free (error);
    dq_port_unref (port);
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  self->port = port;
  self->txq = txq;
  self->stamps = stamps;
  self->regs = dq_txq_can_split (txq) ? gst_daqiri_tx_regs_new (txq) : NULL;
  self->max_frame = dq_txq_max_frame (txq);
  self->can_lend = dq_txq_can_acquire (txq);
  GST_OBJECT_UNLOCK (self);
  GST_INFO_OBJECT (self, "sending on %s; %s", dq_port_device (port),
      self->can_lend ? "upstream can write in place (TX slot pool)" : "frames are copied");
  return TRUE;
}

static gboolean
gst_daqiri_sink_stop (GstBaseSink *bsink)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);

  GST_OBJECT_LOCK (self);
  DqTxStats final;
  collect_stats (self, &final);
  self->past = final;
  DqTxQueue *txq = self->txq;
  DqPort *port = self->port;
  GstDaqiriTxRing *ring = self->ring;
  GstDaqiriTxRegs *regs = self->regs;
  self->regs = NULL;
  self->txq = NULL;
  self->port = NULL;
  self->ring = NULL;
  self->can_lend = FALSE;
  GST_OBJECT_UNLOCK (self);

  /* pool buffers upstream still holds keep the ring; they get no new slots */
  if (ring != NULL) {
    gst_daqiri_tx_ring_close (ring);
    gst_daqiri_tx_ring_unref (ring);
  }
  /* registrations go before the queue; the buffers sent from where they lie after it, once
   * nothing can read them */
  gst_daqiri_tx_regs_free (regs);
  dq_txq_destroy (txq);
  release_sent (self, G_MAXUINT64);
  dq_port_unref (port);
  return TRUE;
}

/* The ring of the pool: a TX queue of its own, made once per run of the element. NULL
 * when the engine does not lend slots. */
static GstDaqiriTxRing *
ensure_ring (GstDaqiriSink *self)
{
  GstDaqiriTxRing *ring = NULL;
  GError *error = NULL;

  GST_OBJECT_LOCK (self);
  if (self->ring != NULL || !self->can_lend || self->port == NULL) {
    ring = self->ring ? gst_daqiri_tx_ring_ref (self->ring) : NULL;
    GST_OBJECT_UNLOCK (self);
    return ring;
  }
  DqTxConfig config = tx_config (self);
  DqTxQueue *txq = dq_txq_create (self->port, &config, &error);
  if (txq != NULL)
    ring = gst_daqiri_tx_ring_new (txq, &error);
  if (ring != NULL) {
    /* render reads it without the lock */
    g_atomic_pointer_set (&self->ring, gst_daqiri_tx_ring_ref (ring));
  } else {
    /* copies still work: say why there is no pool and do not try again */
    self->can_lend = FALSE;
    if (txq != NULL)
      dq_txq_destroy (txq);
  }
  GST_OBJECT_UNLOCK (self);
  if (ring == NULL) {
    GST_WARNING_OBJECT (
        self, "no TX slot pool, frames will be copied: %s", error ? error->message : "?");
    g_clear_error (&error);
  }
  return ring;
}

static gboolean
gst_daqiri_sink_propose_allocation (GstBaseSink *bsink, GstQuery *query)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);
  GstCaps *caps = NULL;

  /* txq is fixed from start to stop */
  GstStructure *params = gst_structure_new ("daqiri-packets", GST_DAQIRI_TWO_SEGMENT,
      G_TYPE_BOOLEAN, self->txq != NULL && dq_txq_can_split (self->txq), NULL);
  gst_query_add_allocation_meta (query, GST_DAQIRI_PACKET_META_API_TYPE, params);
  gst_structure_free (params);
  GstDaqiriTxRing *ring = ensure_ring (self);
  if (ring == NULL)
    return TRUE;

  gst_query_parse_allocation (query, &caps, NULL);
  guint max_run = gst_daqiri_tx_ring_max_run (ring);
  guint size = max_run * gst_daqiri_tx_ring_stride (ring);
  GstBufferPool *pool = gst_daqiri_tx_pool_new (ring);
  GstStructure *config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, size, 0, 0);
  gst_daqiri_tx_pool_config_set_burst (config, max_run, gst_daqiri_tx_ring_slot_size (ring));
  gboolean ok = gst_buffer_pool_set_config (pool, config);
  if (ok)
    gst_query_add_allocation_pool (query, pool, size, 0, 0);
  else
    GST_WARNING_OBJECT (self, "could not configure the TX slot pool");
  GST_DEBUG_OBJECT (self,
      "proposed %" GST_PTR_FORMAT ": up to %u slots of %u bytes per "
      "buffer",
      pool, max_run, gst_daqiri_tx_ring_slot_size (ring));
  gst_object_unref (pool);
  gst_daqiri_tx_ring_unref (ring);
  return TRUE;
}

static gboolean
gst_daqiri_sink_unlock (GstBaseSink *bsink)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);

  g_atomic_int_set (&self->flushing, 1);
  GST_OBJECT_LOCK (self);
  if (self->txq != NULL)
    dq_txq_wakeup (self->txq);
  if (self->ring != NULL)
    gst_daqiri_tx_ring_wakeup (self->ring);
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static gboolean
gst_daqiri_sink_unlock_stop (GstBaseSink *bsink)
{
  g_atomic_int_set (&GST_DAQIRI_SINK (bsink)->flushing, 0);
  return TRUE;
}

static void
ensure_capacity (GstDaqiriSink *self, guint n)
{
  if (n <= self->capacity)
    return;
  self->capacity = MAX (n, 256);
  self->frames = g_renew (const guint8 *, self->frames, self->capacity);
  self->lengths = g_renew (guint32, self->lengths, self->capacity);
  self->times = g_renew (guint64, self->times, self->capacity);
  self->payloads = g_renew (DqTxPayload, self->payloads, self->capacity);
}

/* ---- schedule=pts: when each packet leaves ---- */

/* The port time at which the pipeline clock reaches `when`: exact for a GstDaqiriClock of
 * this port; for any other clock through the tightest of three back-to-back reads of
 * both clocks. 0 when there is no clock. */
static guint64
clock_to_port_time (GstDaqiriSink *self, GstClockTime when)
{
  GstClock *clock = gst_element_get_clock (GST_ELEMENT_CAST (self));
  guint64 port_ns = 0;
  if (clock == NULL)
    return 0;
  if (GST_IS_DAQIRI_CLOCK (clock) &&
      gst_daqiri_clock_get_port (GST_DAQIRI_CLOCK (clock)) == self->port) {
    GstClockTime internal, external, num, den;
    gst_clock_get_calibration (clock, &internal, &external, &num, &den);
    port_ns = gst_clock_unadjust_with_calibration (clock, when, internal, external, num, den);
  } else {
    guint64 best = G_MAXUINT64, port_at = 0;
    GstClockTime clock_at = 0;
    for (int k = 0; k < 3; k++) {
      guint64 p0 = dq_port_time (self->port);
      GstClockTime c = gst_clock_get_time (clock);
      guint64 p1 = dq_port_time (self->port);
      if (p1 - p0 < best) {
        best = p1 - p0;
        port_at = p0 + (p1 - p0) / 2;
        clock_at = c;
      }
    }
    port_ns = port_at + (guint64) ((gint64) when - (gint64) clock_at);
  }
  gst_object_unref (clock);
  return port_ns;
}

/* The port time at which the buffer is due: its PTS as running time, plus the base
 * time, the pipeline latency and ts-offset, on the pipeline clock. 0 (as soon as
 * possible) without a PTS, outside the segment, or without a clock. */
static guint64
buffer_port_time (GstDaqiriSink *self, GstBuffer *buffer)
{
  GstBaseSink *bsink = GST_BASE_SINK_CAST (self);
  GstClockTime pts = GST_BUFFER_PTS (buffer);
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return 0;
  GstClockTime rt = gst_segment_to_running_time (&bsink->segment, GST_FORMAT_TIME, pts);
  if (!GST_CLOCK_TIME_IS_VALID (rt))
    return 0;
  gint64 when = (gint64) (rt + gst_element_get_base_time (GST_ELEMENT_CAST (self)) +
                    gst_base_sink_get_latency (bsink)) +
      gst_base_sink_get_ts_offset (bsink);
  if (when <= 0)
    return 0;
  return MAX (clock_to_port_time (self, (GstClockTime) when), 1);
}

/* The send time of packet p of a burst due at `base` (schedule=pts): base plus its
 * timestamp's offset from the first packet's (GstDaqiriPacketMeta). On a port that stores
 * frames with their time (a capture file) without schedule: the packet's own timestamp. */
static inline guint64
packet_time (
    GstDaqiriSink *self, guint64 base, const GstDaqiriPacket *first, const GstDaqiriPacket *p)
{
  if (self->stamps && self->schedule != GST_DAQIRI_SCHEDULE_PTS)
    return p->timestamp;
  if (base == 0 || first->timestamp == 0 || p->timestamp < first->timestamp)
    return base;
  return base + (p->timestamp - first->timestamp);
}

static GstFlowReturn
send_frames (GstDaqiriSink *self, guint n, gboolean timed, gboolean split)
{
  guint sent = 0;

  while (sent < n) {
    GError *error = NULL;
    const guint64 *times = timed || self->stamps ? self->times + sent : NULL;
    int r = split ? dq_txq_send_split (self->txq, self->frames + sent, self->lengths + sent,
                        self->payloads + sent, times, n - sent, &error)
                  : dq_txq_send_at (self->txq, self->frames + sent, self->lengths + sent, times,
                        n - sent, &error);
    if (r < 0) {
      GST_DAQIRI_POST_ENGINE_ERROR (self, "send", error);
      g_error_free (error);
      return GST_FLOW_ERROR;
    }
    sent += (guint) r;
    /* woken before the end: by a flush, or by a wakeup left over from an earlier one */
    if (sent < n && g_atomic_int_get (&self->flushing))
      return GST_FLOW_FLUSHING;
  }
  return GST_FLOW_OK;
}

/* Whether the port sends a frame of `len` bytes; a frame it does not send is counted by
 * its reason, and the first of each reason is warned about with its size and the limit. */
static gboolean
frame_sendable (GstDaqiriSink *self, guint32 len)
{
  if (len > self->max_frame)
    self->max_frame = dq_txq_max_frame (self->txq); /* the MTU may have grown */
  if (len >= 14 && len <= self->max_frame)
    return TRUE;
  gboolean over = len > self->max_frame;
  GST_OBJECT_LOCK (self);
  if (over)
    self->oversize++;
  else
    self->undersize++;
  guint max_packet = self->max_packet_size;
  GST_OBJECT_UNLOCK (self);
  if (over && !self->warned_oversize) {
    self->warned_oversize = TRUE;
    GST_ELEMENT_WARNING (self, STREAM, FAILED, ("a frame is too long to send"),
        ("a frame of %u bytes is longer than %s sends: at most %u bytes (max-packet-size %u, "
         "port MTU %u); such frames are not sent and are counted in stats oversize",
            len, dq_port_device (self->port), self->max_frame, max_packet,
            dq_port_info (self->port)->mtu));
  } else if (!over && !self->warned_undersize) {
    self->warned_undersize = TRUE;
    GST_ELEMENT_WARNING (self, STREAM, FAILED, ("a frame is too short to send"),
        ("a frame of %u bytes is shorter than an Ethernet header (14 bytes); such frames are "
         "not sent and are counted in stats undersize",
            len));
  }
  return FALSE;
}

typedef enum {
  IN_PLACE_SENT,
  IN_PLACE_NO, /* not a run of our ring laid out slot by slot: copy */
  IN_PLACE_ERROR,
} InPlace;

/* A buffer from our pool whose packet i lies at the start of slot i is sent where it
 * is. Anything else (another ring's run, frames not where the slots are, a descriptor
 * outside the buffer) is left to the copy path. */
static InPlace
render_in_place (GstDaqiriSink *self, GstBuffer *buffer, guint64 due)
{
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buffer);
  GstDaqiriTxRing *ring = g_atomic_pointer_get (&self->ring);
  GError *error = NULL;

  if (ring == NULL || meta == NULL || gst_buffer_n_memory (buffer) != 1)
    return IN_PLACE_NO;
  GstMemory *mem = gst_buffer_peek_memory (buffer, 0);
  if (!gst_is_daqiri_tx_slot_memory (mem) || gst_daqiri_tx_slot_memory_ring (mem) != ring)
    return IN_PLACE_NO;
  const DqTxSlots *run = gst_daqiri_tx_slot_memory_run (mem);
  gsize size = mem->size;
  if (meta->n_packets > run->n_slots)
    return IN_PLACE_NO;
  ensure_capacity (self, meta->n_packets);
  for (guint i = 0; i < meta->n_packets; i++) {
    const GstDaqiriPacket *p = &meta->packets[i];
    if ((gsize) mem->offset + p->offset != (gsize) i * run->stride || p->length > run->slot_size ||
        (gsize) p->offset > size || (gsize) p->length > size - p->offset)
      return IN_PLACE_NO;
    self->lengths[i] = p->length;
    self->times[i] = packet_time (self, due, &meta->packets[0], p);
  }
  int r = gst_daqiri_tx_slot_memory_commit (
      mem, meta->n_packets, self->lengths, due != 0 ? self->times : NULL, &error);
  if (r < 0) {
    GST_DAQIRI_POST_ENGINE_ERROR (self, "send in place", error);
    g_error_free (error);
    return IN_PLACE_ERROR;
  }
  if (r == 0)
    return IN_PLACE_NO; /* sent before (the same buffer twice): copy it again */
  GST_OBJECT_LOCK (self);
  self->in_place += meta->n_packets;
  GST_OBJECT_UNLOCK (self);
  return IN_PLACE_SENT;
}

/* ---- header-data split bursts (daqirisrc header-size, daqiripay with GPU frames) ---- */

static void
count_malformed (GstDaqiriSink *self, guint64 bad, gsize size)
{
  if (bad == 0)
    return;
  GST_OBJECT_LOCK (self);
  self->malformed += bad;
  GST_OBJECT_UNLOCK (self);
  GST_WARNING_OBJECT (self,
      "%" G_GUINT64_FORMAT " packet descriptors point outside "
      "the %" G_GSIZE_FORMAT "-byte buffer; not sent",
      bad, size);
}

/* The packets of a split burst as headers (frames[], lengths[]) and payload offsets into
 * the payload memory (payloads[].length, and the offset in payloads[].data); a packet
 * whose parts are not inside their memories is counted as malformed, one the port does not
 * send by its reason. Returns how many go. */
static guint
split_packets (GstDaqiriSink *self, const GstDaqiriPacketMeta *meta, const GstMapInfo *hmap,
    gsize payload_size, guint64 due)
{
  guint n = 0;
  guint64 bad = 0;
  ensure_capacity (self, meta->n_packets);
  for (guint i = 0; i < meta->n_packets; i++) {
    const GstDaqiriPacket *p = &meta->packets[i];
    guint32 hlen = MIN (p->length, meta->header_size);
    guint32 plen = p->length - hlen;
    gsize poff = meta->header_stride != 0 ? gst_daqiri_packet_payload_offset (meta, p) : 0;
    if ((gsize) p->offset > hmap->size || hlen > hmap->size - p->offset ||
        (plen > 0 &&
            (meta->header_stride == 0 || poff > payload_size || plen > payload_size - poff))) {
      bad++;
      continue;
    }
    if (!frame_sendable (self, p->length))
      continue;
    self->frames[n] = hmap->data + p->offset;
    self->lengths[n] = hlen;
    self->payloads[n] = (DqTxPayload){ NULL, GSIZE_TO_POINTER (poff), plen };
    self->times[n] = packet_time (self, due, &meta->packets[0], p);
    n++;
  }
  count_malformed (self, bad, hmap->size);
  return n;
}

/* Two-segment sends: each header copied into a slot, its payload read where it lies; the
 * buffer is held until the device is done with its frames. */
static GstFlowReturn
send_two_segment (GstDaqiriSink *self, GstBuffer *buffer, GstMemory *pmem, guint n, gboolean timed)
{
  GError *error = NULL;
  const guint8 *pdata;
  guint64 made = gst_daqiri_tx_regs_made (self->regs);
  DqTxMemory *reg = gst_daqiri_tx_regs_get (self->regs, pmem, &pdata, &error);
  if (reg == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("cannot send payloads from where they lie"),
        ("%s: %s", dq_port_device (self->port), error->message));
    g_error_free (error);
    return GST_FLOW_ERROR;
  }
  for (guint i = 0; i < n; i++) {
    self->payloads[i].memory = reg;
    self->payloads[i].data = pdata + GPOINTER_TO_SIZE (self->payloads[i].data);
  }
  GstFlowReturn ret = send_frames (self, n, timed, TRUE);
  guint64 mark = dq_txq_posted (self->txq);
  gst_daqiri_tx_regs_used (self->regs, reg, mark);
  PendingSend *p = g_new (PendingSend, 1);
  p->mark = mark;
  p->buffer = gst_buffer_ref (buffer);
  g_queue_push_tail (&self->pending, p);
  release_sent (self, dq_txq_completed (self->txq));
  GST_OBJECT_LOCK (self);
  if (ret == GST_FLOW_OK)
    self->two_segment += n;
  self->registrations += gst_daqiri_tx_regs_made (self->regs) - made;
  GST_OBJECT_UNLOCK (self);
  return ret;
}

/* An engine that sends whole frames: header and payload joined by a copy */
static GstFlowReturn
send_joined (GstDaqiriSink *self, GstMemory *pmem, guint n, gboolean timed)
{
  GstMapInfo pmap;
  if (!gst_memory_map (pmem, &pmap, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("cannot read the burst's payloads"),
        ("%s sends whole frames from host memory and the payloads are not CPU-readable (GPU "
         "memory?); allowed: a mlx5 or emu port (two-segment sends), or payloads in system "
         "memory (daqirisrc memory=system)",
            dq_port_device (self->port)));
    return GST_FLOW_ERROR;
  }
  gsize total = 0;
  for (guint i = 0; i < n; i++)
    total += self->lengths[i] + self->payloads[i].length;
  if (total > self->joined_size) {
    self->joined_size = MAX (total, (gsize) 64 * 1024);
    self->joined = g_realloc (self->joined, self->joined_size);
  }
  guint8 *at = self->joined;
  for (guint i = 0; i < n; i++) {
    guint32 hlen = self->lengths[i], plen = self->payloads[i].length;
    memcpy (at, self->frames[i], hlen);
    memcpy (at + hlen, pmap.data + GPOINTER_TO_SIZE (self->payloads[i].data), plen);
    self->frames[i] = at;
    self->lengths[i] = hlen + plen;
    at += hlen + plen;
  }
  GstFlowReturn ret = send_frames (self, n, timed, FALSE);
  gst_memory_unmap (pmem, &pmap);
  GST_OBJECT_LOCK (self);
  if (ret == GST_FLOW_OK) {
    self->copies += n;
    self->joins += n;
  }
  GST_OBJECT_UNLOCK (self);
  return ret;
}

static GstFlowReturn
render_split (GstDaqiriSink *self, GstBuffer *buffer, const GstDaqiriPacketMeta *meta,
    gboolean timed, guint64 due)
{
  if (gst_buffer_n_memory (buffer) != 2) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("a header-data split burst without its payloads"),
        ("the burst's packets are split after %u bytes, so it must hold two memories "
         "(headers, payloads); it holds %u",
            meta->header_size, gst_buffer_n_memory (buffer)));
    return GST_FLOW_ERROR;
  }
  GstMemory *hmem = gst_buffer_peek_memory (buffer, 0);
  GstMemory *pmem = gst_buffer_peek_memory (buffer, 1);
  GstMapInfo hmap;
  if (!gst_memory_map (hmem, &hmap, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("cannot read the burst's headers"),
        ("the headers of a split burst must be CPU-readable (memory 0)"));
    return GST_FLOW_ERROR;
  }
  guint n = split_packets (self, meta, &hmap, pmem->size, due);
  GstFlowReturn ret = GST_FLOW_OK;
  if (n > 0)
    ret = self->regs != NULL ? send_two_segment (self, buffer, pmem, n, timed)
                             : send_joined (self, pmem, n, timed);
  gst_memory_unmap (hmem, &hmap);
  return ret;
}

static GstFlowReturn
gst_daqiri_sink_render (GstBaseSink *bsink, GstBuffer *buffer)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);
  GstMapInfo map;

  /* schedule is fixed from start to stop: read without the lock */
  gboolean timed = self->schedule == GST_DAQIRI_SCHEDULE_PTS;
  guint64 due = timed ? buffer_port_time (self, buffer) : 0;
  GstDaqiriPacketMeta *split = gst_buffer_get_daqiri_packet_meta (buffer);
  if (split != NULL && split->header_size != 0)
    return render_split (self, buffer, split, timed, due);
  switch (render_in_place (self, buffer, due)) {
    case IN_PLACE_SENT: return GST_FLOW_OK;
    case IN_PLACE_ERROR: return GST_FLOW_ERROR;
    case IN_PLACE_NO: break;
  }
  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("cannot read the buffer to send"),
        ("gst_buffer_map failed (memory not CPU-readable?)"));
    return GST_FLOW_ERROR;
  }

  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buffer);
  guint n = 0;
  guint64 bad = 0;
  if (meta == NULL) {
    ensure_capacity (self, 1);
    self->frames[0] = map.data;
    self->lengths[0] = (guint32) MIN (map.size, G_MAXUINT32);
    self->times[0] = due;
    n = frame_sendable (self, self->lengths[0]) ? 1 : 0;
  } else {
    ensure_capacity (self, meta->n_packets);
    for (guint i = 0; i < meta->n_packets; i++) {
      const GstDaqiriPacket *p = &meta->packets[i];
      /* a descriptor is only trusted as far as the buffer goes */
      if ((gsize) p->offset > map.size || (gsize) p->length > map.size - p->offset) {
        bad++;
        continue;
      }
      if (!frame_sendable (self, p->length))
        continue;
      self->frames[n] = map.data + p->offset;
      self->lengths[n] = p->length;
      self->times[n] = packet_time (self, due, &meta->packets[0], p);
      n++;
    }
  }
  count_malformed (self, bad, map.size);

  GstFlowReturn ret = n > 0 ? send_frames (self, n, timed, FALSE) : GST_FLOW_OK;
  gst_buffer_unmap (buffer, &map);
  if (ret == GST_FLOW_OK && n > 0) {
    GST_OBJECT_LOCK (self);
    self->copies += n;
    GST_OBJECT_UNLOCK (self);
  }
  return ret;
}

static gboolean
gst_daqiri_sink_event (GstBaseSink *bsink, GstEvent *event)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && self->txq != NULL) {
    /* everything queued leaves the rings before EOS is reported */
    GstDaqiriTxRing *ring = g_atomic_pointer_get (&self->ring);
    GError *error = NULL;
    if (!dq_txq_flush (self->txq, &error) ||
        (ring != NULL && !gst_daqiri_tx_ring_flush (ring, &error))) {
      GST_WARNING_OBJECT (self, "flush at EOS: %s", error ? error->message : "woken");
      g_clear_error (&error);
    }
    release_sent (self, dq_txq_completed (self->txq));
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (bsink, event);
}

static void
gst_daqiri_sink_finalize (GObject *object)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (object);

  g_free (self->device);
  g_free (self->frames);
  g_free (self->lengths);
  g_free (self->times);
  g_free (self->payloads);
  g_free (self->joined);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_daqiri_sink_class_init (GstDaqiriSinkClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *basesink_class = GST_BASE_SINK_CLASS (klass);
  const GParamFlags rw = GST_DAQIRI_PARAM_RW_READY;

  gobject_class->set_property = gst_daqiri_sink_set_property;
  gobject_class->get_property = gst_daqiri_sink_get_property;
  gobject_class->finalize = gst_daqiri_sink_finalize;

  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_string ("device", "Device",
          "Port to send on, as ENGINE:NAME: afpacket:IFACE for any Linux interface, "
          "mlx5:DEV for a ConnectX, emu:NAME for the emulated ConnectX, dpdk:DEVARGS for a "
          "DPDK device (builds with DPDK), pcap:FILE to record into a capture file (each "
          "packet with its timestamp, nanoseconds; builds with libpcap). Ports are shared "
          "between elements that name the "
          "same device",
          DEFAULT_DEVICE, rw));
  g_object_class_install_property (gobject_class, PROP_RING_SIZE,
      g_param_spec_uint64 ("ring-size", "Ring size", "Transmit ring memory in bytes", MIN_RING_SIZE,
          MAX_RING_SIZE, DEFAULT_RING_SIZE, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_PACKET_SIZE,
      g_param_spec_uint ("max-packet-size", "Max packet size",
          "Largest frame that can be sent, in bytes from the Ethernet header; larger "
          "frames are not sent and are counted as errors",
          64, 65535, DEFAULT_MAX_PACKET_SIZE, rw));
  g_object_class_install_property (gobject_class, PROP_SCHEDULE,
      g_param_spec_enum ("schedule", "Schedule",
          "When packets leave. none: as soon as they arrive. pts: each at its time on the "
          "port clock, the buffer's PTS (as running time + base time + latency + ts-offset "
          "on the pipeline clock) plus the packet's timestamp minus the burst's first "
          "packet's timestamp (GstDaqiriPacketMeta): a received burst keeps its spacing. "
          "Packets more than 1 s ahead are held (the sender waits; order is kept). mlx5 "
          "and emu engines with a real-time port clock (ConnectX-7: WAIT on time; emu: "
          "clock=rt); afpacket where every TX queue of the interface has the etf qdisc "
          "(SO_TXTIME; refused naming the qdisc otherwise); dpdk refuses it",
          GST_TYPE_DAQIRI_SCHEDULE, GST_DAQIRI_SCHEDULE_NONE, rw));
  g_object_class_install_property (gobject_class, PROP_LATE,
      g_param_spec_enum ("late", "Late packets",
          "With schedule=pts: what becomes of a packet whose time has passed when it is "
          "handed to the port (counted in stats late, and late-dropped)",
          GST_TYPE_DAQIRI_LATE, GST_DAQIRI_LATE_SEND, rw));
  g_object_class_install_property (gobject_class, PROP_RATE,
      g_param_spec_uint64 ("rate", "Rate",
          "Pacing in the NIC: at most this many bits of Ethernet frames (header to payload "
          "end, no FCS) a second leave each transmit queue; 0: no limit. mlx5 (packet "
          "pacing, within the device's range) and emu engines; afpacket through the fq "
          "qdisc (SO_MAX_PACING_RATE), refused without fq on the interface; dpdk refuses it",
          0, MAX_RATE, 0, rw));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counters: packets, bytes, bursts, errors (refused by the kernel or the NIC), "
          "malformed (descriptor outside its buffer), oversize (frames longer than the port "
          "sends: max-packet-size or its MTU; a warning names the first), undersize (frames "
          "under 14 bytes), in-place (packets handed "
          "to the port from the TX slots upstream wrote them into, no copy), copies "
          "(packets copied into the ring), ring-full-waits, wqes (mlx5/emu: send WQEs; "
          "small frames go several to an enhanced multi-packet WQE); with schedule=pts: "
          "scheduled "
          "(sent with a time), held (held back beyond 1 s ahead), late (time passed when "
          "handed to the port), late-dropped",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class, "daqiri packet sink", "Sink/Network",
      "Sends raw Ethernet packets in bursts: every packet of a daqiri burst, or each "
      "buffer as one frame",
      "daqiri developers");

  basesink_class->start = GST_DEBUG_FUNCPTR (gst_daqiri_sink_start);
  basesink_class->stop = GST_DEBUG_FUNCPTR (gst_daqiri_sink_stop);
  basesink_class->unlock = GST_DEBUG_FUNCPTR (gst_daqiri_sink_unlock);
  basesink_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_daqiri_sink_unlock_stop);
  basesink_class->render = GST_DEBUG_FUNCPTR (gst_daqiri_sink_render);
  basesink_class->propose_allocation = GST_DEBUG_FUNCPTR (gst_daqiri_sink_propose_allocation);
  basesink_class->event = GST_DEBUG_FUNCPTR (gst_daqiri_sink_event);

  GST_DEBUG_CATEGORY_INIT (daqirisink_debug, "daqirisink", 0, "daqiri packet sink");
  gst_type_mark_as_plugin_api (GST_TYPE_DAQIRI_SCHEDULE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_DAQIRI_LATE, 0);
}

static void
gst_daqiri_sink_init (GstDaqiriSink *self)
{
  self->device = g_strdup (DEFAULT_DEVICE);
  self->ring_size = DEFAULT_RING_SIZE;
  self->max_packet_size = DEFAULT_MAX_PACKET_SIZE;
  /* packets leave as soon as they arrive; buffers are not held back to their PTS */
  gst_base_sink_set_sync (GST_BASE_SINK (self), FALSE);
  /* nothing to preroll: a pipeline with a live source elsewhere (daqirisrc) and this
   * sink behind a non-live one (daqiritestsrc) does not wait on its first buffer, whose
   * late arrival could leave the sink in PAUSED */
  gst_base_sink_set_async_enabled (GST_BASE_SINK (self), FALSE);
  /* a kept last sample would hold NIC memory: a run of TX slots, or a receive ring
   * range when forwarding from daqirisrc */
  gst_base_sink_set_last_sample_enabled (GST_BASE_SINK (self), FALSE);
}
