/* daqiripay: frames -> packet bursts (application/x-daqiri-packets), the inverse of
 * daqirireorder.
 *
 * Every input buffer is one frame of packets-per-batch * payload-size bytes: caps
 * application/x-daqiri-frame (daqirireorder's), video/x-raw (daqirireorder video-format=...) or
 * application/octet-stream (bytes of no other type), in system memory, daqiri's GPU memory
 * (memory:DaqiriCUDA, frames only) or GstCudaMemory (memory:CUDAMemory, read through a CPU
 * map); the fields of the caps are not read. It leaves as one burst of packets-per-batch
 * Ethernet/IPv4/UDP packets (dq_packetize_cpu): header template, zeros, payload slot s of the
 * frame at payload-offset, sequence number batch * packets-per-batch + s (mod 2^seq-bits) at
 * seq-offset and, with batch-bits > 0, the batch number at batch-offset; IPv4 total length and
 * checksum and UDP length filled in (UDP checksum 0). Frame n of the stream is batch n. The burst
 * carries a GstDaqiriPacketMeta and the frame's PTS.
 *
 * Where the packets are written: when downstream offers a pool of TX slots (daqirisink on an
 * engine that lends them, gstdaqiritxpool.h), straight into the slots — packet s of the frame
 * into the next free slot, one buffer per run of slots lent (a frame may take several runs
 * where the ring wraps), so the sink sends them without a copy. Otherwise into a system
 * memory burst of packets-per-batch packets, one per frame.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqiripay.h"
#include "gstdaqirielement.h"
#include "gstdaqirireorder.h"
#include "gstdaqiritxpool.h"

#include <gst/daqiri/daqiri.h>
#include <stdio.h>
#include <string.h>

#include "daqiri-reorder.h"
#include "dq-packet.h"

GST_DEBUG_CATEGORY_STATIC (daqiripay_debug);
#define GST_CAT_DEFAULT daqiripay_debug

#define HEADER_LEN DQ_PACKET_PAYLOAD_OFFSET /* Ethernet 14 + IPv4 20 + UDP 8 */
#define DEFAULT_SEQ_OFFSET (HEADER_LEN * 8)
#define DEFAULT_PAYLOAD_OFFSET (HEADER_LEN + 4)
#define DEFAULT_PAYLOAD_SIZE 1024

enum {
  PROP_0,
  PROP_SRC_MAC,
  PROP_DST_MAC,
  PROP_SRC_IP,
  PROP_DST_IP,
  PROP_SRC_PORT,
  PROP_DST_PORT,
  PROP_SEQ_OFFSET,
  PROP_SEQ_BITS,
  PROP_BATCH_OFFSET,
  PROP_BATCH_BITS,
  PROP_PACKETS_PER_BATCH,
  PROP_PAYLOAD_OFFSET,
  PROP_PAYLOAD_SIZE,
};

struct _GstDaqiriPay {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties (object lock) */
  GstDaqiriAddresses addrs;
  DqReorderConfig cfg;

  /* streaming state */
  DqReorderConfig run_cfg;
  DqPacketizeTemplate tmpl;
  guint8 header[HEADER_LEN];
  guint64 batch;
  gboolean caps_sent;
  DqReorderPacket *pkts;
  GstBufferPool *slot_pool; /* downstream's TX slots, when offered */
};

G_DEFINE_TYPE (GstDaqiriPay, gst_daqiri_pay, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (daqiripay, "daqiripay", GST_RANK_NONE, GST_TYPE_DAQIRI_PAY);

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_DAQIRI_FRAME_MEDIA_TYPE
            "; " GST_DAQIRI_FRAME_MEDIA_TYPE "(" GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA
            "); " GST_DAQIRI_FRAME_MEDIA_TYPE "(memory:CUDAMemory); "
            "video/x-raw; video/x-raw(memory:CUDAMemory); application/octet-stream"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE (
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (GST_DAQIRI_PACKETS_MEDIA_TYPE));

static gboolean
start (GstDaqiriPay *self)
{
  char msg[256];
  guint8 *h = self->header;

  memset (h, 0, sizeof self->header);
  GST_OBJECT_LOCK (self);
  self->run_cfg = self->cfg;
  GstDaqiriAddresses addrs;
  gst_daqiri_addresses_copy (&self->addrs, &addrs);
  GST_OBJECT_UNLOCK (self);

  GstDaqiriAddressValues v;
  gboolean ok = gst_daqiri_addresses_take (GST_ELEMENT_CAST (self), &addrs, &v);
  gst_daqiri_addresses_clear (&addrs);
  if (!ok)
    return FALSE;
  /* the headers of a packet without payload: packetize writes every packet's lengths
   * and IPv4 header checksum */
  DqPacketHeaders headers = {
    .src_ip = v.src_ip, .dst_ip = v.dst_ip, .src_port = v.src_port, .dst_port = v.dst_port
  };
  memcpy (headers.dst_mac, v.dst_mac, 6);
  memcpy (headers.src_mac, v.src_mac, 6);
  dq_packet_write_headers (h, HEADER_LEN, &headers);

  self->tmpl = (DqPacketizeTemplate){ .header = self->header,
    .header_len = HEADER_LEN,
    .ipv4_offset = DQ_PACKET_IPV4_OFFSET,
    .udp_offset = DQ_PACKET_UDP_OFFSET,
    .packet_stride = 0,
    .min_length = 60 };
  self->tmpl.packet_stride = dq_packetize_packet_length (&self->run_cfg, &self->tmpl);
  if (dq_packetize_validate (&self->run_cfg, &self->tmpl, msg, sizeof msg) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", msg),
        ("the Ethernet/IPv4/UDP header takes bytes 0..%d", HEADER_LEN - 1));
    return FALSE;
  }
  self->pkts = g_new (DqReorderPacket, self->run_cfg.packets_per_batch);
  self->batch = 0;
  self->caps_sent = FALSE;
  return TRUE;
}

/* The frame's bytes where the CPU can read them: mapped, or, for a frame in daqiri's GPU
 * memory (daqirireorder memory=cuda), copied to the host (*copy, g_free it). NULL with an
 * error posted. */
static const guint8 *
frame_bytes (GstDaqiriPay *self, GstBuffer *in, GstMapInfo *map, guint8 **copy)
{
  *copy = NULL;
  if (gst_buffer_n_memory (in) == 1 &&
      gst_memory_is_type (gst_buffer_peek_memory (in, 0), GST_DAQIRI_CUDA_MEMORY_TYPE)) {
#ifdef DQ_HAVE_CUDA
    if (gst_buffer_map (in, map, GST_MAP_READ | GST_DAQIRI_MAP_CUDA)) {
      *copy = g_malloc (MAX (map->size, 1));
      int r = dq_cuda_memcpy (*copy, map->data, map->size);
      gst_buffer_unmap (in, map);
      if (r == 0)
        return *copy;
      g_clear_pointer (copy, g_free);
    }
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("cannot copy the frame from GPU memory: %s", dq_cuda_last_error ()), (NULL));
#else
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("a frame in GPU memory, but this build has no "
         "CUDA"),
        (NULL));
#endif
    return NULL;
  }
  if (!gst_buffer_map (in, map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("cannot map the frame"), (NULL));
    return NULL;
  }
  return map->data;
}

static void
frame_bytes_done (GstBuffer *in, GstMapInfo *map, guint8 *copy)
{
  if (copy)
    g_free (copy);
  else
    gst_buffer_unmap (in, map);
}

/* Asks downstream for a pool of TX slots that holds our packets; takes it when offered. */
static void
negotiate_slot_pool (GstDaqiriPay *self)
{
  GstCaps *caps = gst_pad_get_current_caps (self->srcpad);
  if (caps == NULL)
    return;
  GstQuery *query = gst_query_new_allocation (caps, TRUE);
  GstBufferPool *pool = NULL;
  guint size = 0, min = 0, max = 0;
  if (gst_pad_peer_query (self->srcpad, query) && gst_query_get_n_allocation_pools (query) > 0)
    gst_query_parse_nth_allocation_pool (query, 0, &pool, &size, &min, &max);
  if (pool != NULL && gst_buffer_pool_has_option (pool, GST_BUFFER_POOL_OPTION_DAQIRI_TX_SLOTS)) {
    GstStructure *config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, size, min, max);
    gst_daqiri_tx_pool_config_set_burst (
        config, self->run_cfg.packets_per_batch, self->tmpl.packet_stride);
    if (gst_buffer_pool_set_config (pool, config) && gst_buffer_pool_set_active (pool, TRUE)) {
      GST_INFO_OBJECT (self, "writing packets into downstream's TX slots");
      self->slot_pool = g_steal_pointer (&pool);
    } else {
      GST_INFO_OBJECT (self, "downstream's TX slots do not hold %u-byte packets: copying",
          self->tmpl.packet_stride);
    }
  }
  if (pool)
    gst_object_unref (pool);
  gst_query_unref (query);
  gst_caps_unref (caps);
}

/* One frame into runs of TX slots: packet s into slot j of the run, each run pushed. */
static GstFlowReturn
pay_into_slots (GstDaqiriPay *self, GstBuffer *in, const guint8 *frame)
{
  const DqReorderConfig *cfg = &self->run_cfg;
  const guint32 plen = self->tmpl.packet_stride;
  guint32 done = 0;
  GstFlowReturn ret = GST_FLOW_OK;

  while (done < cfg->packets_per_batch && ret == GST_FLOW_OK) {
    GstBuffer *out = NULL;
    ret = gst_buffer_pool_acquire_buffer (self->slot_pool, &out, NULL);
    if (ret != GST_FLOW_OK)
      break;
    GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (out);
    GstMapInfo map;
    if (meta == NULL || meta->n_packets == 0 || !gst_buffer_map (out, &map, GST_MAP_WRITE)) {
      gst_buffer_unref (out);
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("a TX slot buffer without slots"), (NULL));
      return GST_FLOW_ERROR;
    }
    guint n = MIN (meta->n_packets, cfg->packets_per_batch - done);
    int rc = 0;
    for (guint j = 0; j < n && rc == 0; j++) {
      GstDaqiriPacket *slot = &meta->packets[j];
      if (slot->length < plen || slot->offset > map.size - plen) {
        rc = -1;
        break;
      }
      rc = dq_packetize_cpu_range (cfg, &self->tmpl, frame, self->batch, done + j, 1,
          map.data + slot->offset, slot->length, NULL);
      slot->length = plen;
    }
    gst_buffer_unmap (out, &map);
    if (rc != 0) {
      gst_buffer_unref (out);
      GST_ELEMENT_ERROR (
          self, STREAM, FAILED, ("cannot write a %u-byte packet into a TX slot", plen), (NULL));
      return GST_FLOW_ERROR;
    }
    meta->n_packets = n;
    GST_BUFFER_PTS (out) = GST_BUFFER_PTS (in);
    GST_BUFFER_DURATION (out) = done == 0 ? GST_BUFFER_DURATION (in) : 0;
    GST_BUFFER_OFFSET (out) = self->batch;
    done += n;
    ret = gst_pad_push (self->srcpad, out);
  }
  return ret;
}

static GstFlowReturn
gst_daqiri_pay_chain (GstPad *pad, GstObject *parent, GstBuffer *in)
{
  GstDaqiriPay *self = GST_DAQIRI_PAY (parent);
  const DqReorderConfig *cfg = &self->run_cfg;
  GstMapInfo imap, omap;

  if (!self->pkts) {
    gst_buffer_unref (in);
    return GST_FLOW_FLUSHING;
  }
  gsize frame_size = (gsize) cfg->packets_per_batch * cfg->payload_size;
  if (gst_buffer_get_size (in) != frame_size) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("a frame of %" G_GSIZE_FORMAT " bytes; expected packets-per-batch %u x payload-size "
         "%u = %" G_GSIZE_FORMAT " bytes",
            gst_buffer_get_size (in), cfg->packets_per_batch, cfg->payload_size, frame_size),
        (NULL));
    gst_buffer_unref (in);
    return GST_FLOW_ERROR;
  }
  if (!self->caps_sent) {
    GstCaps *caps = gst_caps_new_empty_simple (GST_DAQIRI_PACKETS_MEDIA_TYPE);
    gboolean ok = gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
    gst_caps_unref (caps);
    if (!ok) {
      gst_buffer_unref (in);
      return GST_FLOW_NOT_NEGOTIATED;
    }
    self->caps_sent = TRUE;
    negotiate_slot_pool (self);
  }
  guint8 *copy;
  const guint8 *frame = frame_bytes (self, in, &imap, &copy);
  if (frame == NULL) {
    gst_buffer_unref (in);
    return GST_FLOW_ERROR;
  }
  if (self->slot_pool) {
    GstFlowReturn ret = pay_into_slots (self, in, frame);
    frame_bytes_done (in, &imap, copy);
    gst_buffer_unref (in);
    self->batch++;
    return ret;
  }

  gsize out_size = (gsize) cfg->packets_per_batch * self->tmpl.packet_stride;
  GstBuffer *out = gst_buffer_new_allocate (NULL, out_size, NULL);
  if (!out || !gst_buffer_map (out, &omap, GST_MAP_WRITE)) {
    if (out)
      gst_buffer_unref (out);
    frame_bytes_done (in, &imap, copy);
    gst_buffer_unref (in);
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("cannot allocate a burst of %" G_GSIZE_FORMAT " bytes", out_size), (NULL));
    return GST_FLOW_ERROR;
  }
  int rc =
      dq_packetize_cpu (cfg, &self->tmpl, frame, self->batch, omap.data, omap.size, self->pkts);
  gst_buffer_unmap (out, &omap);
  frame_bytes_done (in, &imap, copy);
  if (rc != 0) {
    gst_buffer_unref (out);
    gst_buffer_unref (in);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("packetize failed"), (NULL));
    return GST_FLOW_ERROR;
  }
  gst_buffer_add_daqiri_packet_meta (
      out, (const GstDaqiriPacket *) self->pkts, cfg->packets_per_batch);
  GST_BUFFER_PTS (out) = GST_BUFFER_PTS (in);
  GST_BUFFER_DURATION (out) = GST_BUFFER_DURATION (in);
  GST_BUFFER_OFFSET (out) = self->batch;
  self->batch++;
  gst_buffer_unref (in);
  return gst_pad_push (self->srcpad, out);
}

static gboolean
gst_daqiri_pay_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    /* the frame caps (the template's) are not read: the output caps replace them */
    GstDaqiriPay *self = GST_DAQIRI_PAY (parent);
    GstCaps *caps = gst_caps_new_empty_simple (GST_DAQIRI_PACKETS_MEDIA_TYPE);
    gst_event_unref (event);
    self->caps_sent = gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
    gst_caps_unref (caps);
    if (self->caps_sent && self->slot_pool == NULL)
      negotiate_slot_pool (self);
    return self->caps_sent;
  }
  return gst_pad_event_default (pad, parent, event);
}

static GstStateChangeReturn
gst_daqiri_pay_change_state (GstElement *element, GstStateChange transition)
{
  GstDaqiriPay *self = GST_DAQIRI_PAY (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && !start (self))
    return GST_STATE_CHANGE_FAILURE;
  ret = GST_ELEMENT_CLASS (gst_daqiri_pay_parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    g_clear_pointer (&self->pkts, g_free);
    if (self->slot_pool) {
      gst_buffer_pool_set_active (self->slot_pool, FALSE);
      gst_clear_object (&self->slot_pool);
    }
  }
  return ret;
}

static void
gst_daqiri_pay_set_property (GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstDaqiriPay *self = GST_DAQIRI_PAY (object);

  GST_OBJECT_LOCK (self);
  if (!gst_daqiri_addresses_set (&self->addrs, PROP_SRC_MAC, prop_id, value) &&
      !gst_daqiri_field_set (&self->cfg, PROP_SEQ_OFFSET, prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_daqiri_pay_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstDaqiriPay *self = GST_DAQIRI_PAY (object);

  GST_OBJECT_LOCK (self);
  if (!gst_daqiri_addresses_get (&self->addrs, PROP_SRC_MAC, prop_id, value) &&
      !gst_daqiri_field_get (&self->cfg, PROP_SEQ_OFFSET, prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_daqiri_pay_finalize (GObject *object)
{
  GstDaqiriPay *self = GST_DAQIRI_PAY (object);
  gst_daqiri_addresses_clear (&self->addrs);
  g_free (self->pkts);
  G_OBJECT_CLASS (gst_daqiri_pay_parent_class)->finalize (object);
}

static void
gst_daqiri_pay_init (GstDaqiriPay *self)
{
  dq_reorder_config_init (&self->cfg);
  self->cfg.seq_bit_offset = DEFAULT_SEQ_OFFSET;
  self->cfg.payload_offset = DEFAULT_PAYLOAD_OFFSET;
  self->cfg.payload_size = DEFAULT_PAYLOAD_SIZE;
  gst_daqiri_addresses_init (&self->addrs);
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad, gst_daqiri_pay_chain);
  gst_pad_set_event_function (self->sinkpad, gst_daqiri_pay_sink_event);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
}

#define RW_READY (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)

static void
gst_daqiri_pay_class_init (GstDaqiriPayClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  GST_DEBUG_CATEGORY_INIT (daqiripay_debug, "daqiripay", 0, "daqiri frame packetizer");

  gobject_class->set_property = gst_daqiri_pay_set_property;
  gobject_class->get_property = gst_daqiri_pay_get_property;
  gobject_class->finalize = gst_daqiri_pay_finalize;
  element_class->change_state = gst_daqiri_pay_change_state;

  gst_daqiri_install_address_properties (gobject_class, PROP_SRC_MAC, NULL);
  DqReorderConfig d;
  dq_reorder_config_init (&d);
  d.seq_bit_offset = DEFAULT_SEQ_OFFSET;
  d.payload_offset = DEFAULT_PAYLOAD_OFFSET;
  d.payload_size = DEFAULT_PAYLOAD_SIZE;
  static const char *const notes[GST_DAQIRI_N_FIELDS] = { "the header takes bits 0..335", NULL,
    NULL, NULL, NULL, "at least 42", "frame bytes" };
  gst_daqiri_install_field_properties (gobject_class, PROP_SEQ_OFFSET, &d, notes);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "daqiri frame packetizer",
      "Codec/Payloader/Network",
      "Cuts frames into UDP/IPv4/Ethernet packet bursts with "
      "sequence and batch numbers (the inverse of daqirireorder)",
      "daqiri");
}
