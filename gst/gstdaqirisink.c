/**
 * SECTION:element-daqirisink
 * @title: daqirisink
 * @short_description: send raw Ethernet packets in bursts
 *
 * daqirisink sends every packet of every buffer it receives on a port. A buffer with a
 * #GstDaqiriPacketMeta (caps application/x-daqiri-packets, as daqirisrc produces) is a
 * burst: each listed packet is one Ethernet frame, sent unchanged, the whole burst handed
 * to the NIC at once. A buffer without the meta is one frame. Packets whose descriptor
 * points outside the buffer are never read; they are counted in #GstDaqiriSink:stats as
 * malformed. The sink waits for ring space rather than drop a packet.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 daqirisrc device=afpacket:eth1 ! daqirisink device=afpacket:eth2
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqirisink.h"
#include "gstdaqirielement.h"

#include <gst/daqiri/daqiripacketmeta.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (daqirisink_debug);
#define GST_CAT_DEFAULT daqirisink_debug

#define DEFAULT_DEVICE NULL
#define DEFAULT_RING_SIZE (G_GUINT64_CONSTANT (4) << 20)
#define MIN_RING_SIZE (G_GUINT64_CONSTANT (64) << 10)
#define MAX_RING_SIZE (G_GUINT64_CONSTANT (1) << 30)
#define DEFAULT_MAX_PACKET_SIZE 9216

enum {
  PROP_0,
  PROP_DEVICE,
  PROP_RING_SIZE,
  PROP_MAX_PACKET_SIZE,
  PROP_STATS,
};

struct _GstDaqiriSink {
  GstBaseSink parent;

  /* properties, protected by the object lock */
  gchar *device;
  guint64 ring_size;
  guint max_packet_size;

  /* between start and stop */
  DqPort *port;
  DqTxQueue *txq;
  gint flushing;

  /* the frames of the burst being sent */
  const guint8 **frames;
  guint32 *lengths;
  guint capacity;

  guint64 malformed;
  DqTxStats past;
};

#define gst_daqiri_sink_parent_class parent_class
G_DEFINE_TYPE (GstDaqiriSink, gst_daqiri_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (daqirisink, "daqirisink", GST_RANK_NONE, GST_TYPE_DAQIRI_SINK);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static void
add_stats (DqTxStats * sum, const DqTxStats * s)
{
  sum->packets += s->packets;
  sum->bytes += s->bytes;
  sum->bursts += s->bursts;
  sum->errors += s->errors;
  sum->ring_full_waits += s->ring_full_waits;
}

/* object lock held */
static void
collect_stats (GstDaqiriSink * self, DqTxStats * sum)
{
  *sum = self->past;
  if (self->txq != NULL) {
    DqTxStats s;
    dq_txq_stats (self->txq, &s);
    add_stats (sum, &s);
  }
}

static GstStructure *
make_stats (GstDaqiriSink * self)
{
  DqTxStats s;

  GST_OBJECT_LOCK (self);
  collect_stats (self, &s);
  guint64 malformed = self->malformed;
  GST_OBJECT_UNLOCK (self);
  return gst_structure_new ("application/x-daqiri-sink-stats",
      "packets", G_TYPE_UINT64, s.packets,
      "bytes", G_TYPE_UINT64, s.bytes,
      "bursts", G_TYPE_UINT64, s.bursts,
      "errors", G_TYPE_UINT64, s.errors,
      "malformed", G_TYPE_UINT64, malformed,
      "ring-full-waits", G_TYPE_UINT64, s.ring_full_waits, NULL);
}

static void
gst_daqiri_sink_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_DEVICE:
      g_free (self->device);
      self->device = g_value_dup_string (value);
      break;
    case PROP_RING_SIZE:
      self->ring_size = g_value_get_uint64 (value);
      break;
    case PROP_MAX_PACKET_SIZE:
      self->max_packet_size = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_daqiri_sink_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (self));
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_DEVICE:
      g_value_set_string (value, self->device);
      break;
    case PROP_RING_SIZE:
      g_value_set_uint64 (value, self->ring_size);
      break;
    case PROP_MAX_PACKET_SIZE:
      g_value_set_uint (value, self->max_packet_size);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static gboolean
gst_daqiri_sink_start (GstBaseSink * bsink)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);
  GError *error = NULL;

  GST_OBJECT_LOCK (self);
  gchar *device = g_strdup (self->device);
  DqTxConfig config = {
    .ring_bytes = self->ring_size,
    .max_packet_size = self->max_packet_size,
  };
  memset (&self->past, 0, sizeof self->past);
  self->malformed = 0;
  GST_OBJECT_UNLOCK (self);

  DqPort *port = gst_daqiri_open_port (GST_ELEMENT_CAST (self), device);
  g_free (device);
  if (port == NULL)
    return FALSE;
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
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static gboolean
gst_daqiri_sink_stop (GstBaseSink * bsink)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);

  GST_OBJECT_LOCK (self);
  DqTxStats final;
  collect_stats (self, &final);
  self->past = final;
  DqTxQueue *txq = self->txq;
  DqPort *port = self->port;
  self->txq = NULL;
  self->port = NULL;
  GST_OBJECT_UNLOCK (self);

  dq_txq_destroy (txq);
  dq_port_unref (port);
  return TRUE;
}

static gboolean
gst_daqiri_sink_unlock (GstBaseSink * bsink)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);

  g_atomic_int_set (&self->flushing, 1);
  GST_OBJECT_LOCK (self);
  if (self->txq != NULL)
    dq_txq_wakeup (self->txq);
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static gboolean
gst_daqiri_sink_unlock_stop (GstBaseSink * bsink)
{
  g_atomic_int_set (&GST_DAQIRI_SINK (bsink)->flushing, 0);
  return TRUE;
}

static void
ensure_capacity (GstDaqiriSink * self, guint n)
{
  if (n <= self->capacity)
    return;
  self->capacity = MAX (n, 256);
  self->frames = g_renew (const guint8 *, self->frames, self->capacity);
  self->lengths = g_renew (guint32, self->lengths, self->capacity);
}

static GstFlowReturn
send_frames (GstDaqiriSink * self, guint n)
{
  guint sent = 0;

  while (sent < n) {
    GError *error = NULL;
    int r = dq_txq_send (self->txq, self->frames + sent, self->lengths + sent, n - sent,
        &error);
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

static GstFlowReturn
gst_daqiri_sink_render (GstBaseSink * bsink, GstBuffer * buffer)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);
  GstMapInfo map;

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
    n = 1;
  } else {
    ensure_capacity (self, meta->n_packets);
    for (guint i = 0; i < meta->n_packets; i++) {
      const GstDaqiriPacket *p = &meta->packets[i];
      /* a descriptor is only trusted as far as the buffer goes */
      if ((gsize) p->offset > map.size || (gsize) p->length > map.size - p->offset) {
        bad++;
        continue;
      }
      self->frames[n] = map.data + p->offset;
      self->lengths[n] = p->length;
      n++;
    }
  }
  if (bad > 0) {
    GST_OBJECT_LOCK (self);
    self->malformed += bad;
    GST_OBJECT_UNLOCK (self);
    GST_WARNING_OBJECT (self, "%" G_GUINT64_FORMAT " packet descriptors point outside "
        "the %" G_GSIZE_FORMAT "-byte buffer; not sent", bad, map.size);
  }

  GstFlowReturn ret = n > 0 ? send_frames (self, n) : GST_FLOW_OK;
  gst_buffer_unmap (buffer, &map);
  return ret;
}

static gboolean
gst_daqiri_sink_event (GstBaseSink * bsink, GstEvent * event)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (bsink);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && self->txq != NULL) {
    /* everything queued leaves the ring before EOS is reported */
    GError *error = NULL;
    if (!dq_txq_flush (self->txq, &error)) {
      GST_WARNING_OBJECT (self, "flush at EOS: %s", error ? error->message : "woken");
      g_clear_error (&error);
    }
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (bsink, event);
}

static void
gst_daqiri_sink_finalize (GObject * object)
{
  GstDaqiriSink *self = GST_DAQIRI_SINK (object);

  g_free (self->device);
  g_free (self->frames);
  g_free (self->lengths);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_daqiri_sink_class_init (GstDaqiriSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *basesink_class = GST_BASE_SINK_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY;

  gobject_class->set_property = gst_daqiri_sink_set_property;
  gobject_class->get_property = gst_daqiri_sink_get_property;
  gobject_class->finalize = gst_daqiri_sink_finalize;

  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_string ("device", "Device",
          "Port to send on, as ENGINE:NAME: afpacket:IFACE for any Linux interface. "
          "Ports are shared between elements that name the same device",
          DEFAULT_DEVICE, rw));
  g_object_class_install_property (gobject_class, PROP_RING_SIZE,
      g_param_spec_uint64 ("ring-size", "Ring size",
          "Transmit ring memory in bytes", MIN_RING_SIZE, MAX_RING_SIZE,
          DEFAULT_RING_SIZE, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_PACKET_SIZE,
      g_param_spec_uint ("max-packet-size", "Max packet size",
          "Largest frame that can be sent, in bytes from the Ethernet header; larger "
          "frames are not sent and are counted as errors", 64, 65535,
          DEFAULT_MAX_PACKET_SIZE, rw));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counters: packets, bytes, bursts, errors (refused by the port: too short or "
          "too long), malformed (descriptor outside its buffer), ring-full-waits",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class, "daqiri packet sink",
      "Sink/Network",
      "Sends raw Ethernet packets in bursts: every packet of a daqiri burst, or each "
      "buffer as one frame", "daqiri developers");

  basesink_class->start = GST_DEBUG_FUNCPTR (gst_daqiri_sink_start);
  basesink_class->stop = GST_DEBUG_FUNCPTR (gst_daqiri_sink_stop);
  basesink_class->unlock = GST_DEBUG_FUNCPTR (gst_daqiri_sink_unlock);
  basesink_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_daqiri_sink_unlock_stop);
  basesink_class->render = GST_DEBUG_FUNCPTR (gst_daqiri_sink_render);
  basesink_class->event = GST_DEBUG_FUNCPTR (gst_daqiri_sink_event);

  GST_DEBUG_CATEGORY_INIT (daqirisink_debug, "daqirisink", 0, "daqiri packet sink");
}

static void
gst_daqiri_sink_init (GstDaqiriSink * self)
{
  self->device = g_strdup (DEFAULT_DEVICE);
  self->ring_size = DEFAULT_RING_SIZE;
  self->max_packet_size = DEFAULT_MAX_PACKET_SIZE;
  /* packets leave as soon as they arrive; buffers are not held back to their PTS */
  gst_base_sink_set_sync (GST_BASE_SINK (self), FALSE);
}
