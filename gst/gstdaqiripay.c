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
 *
 * A frame in daqiri's GPU memory (daqirireorder memory=cuda) goes one of three ways:
 *  - two-segment (two-segment=true, and daqirisink says in the allocation query that it
 *    sends payloads from where they lie, GST_DAQIRI_TWO_SEGMENT): a header-data split burst
 *    whose memory 0 holds the packets' first payload-offset bytes (made on the CPU) and
 *    memory 1 is the frame itself; nothing is copied out of the GPU, and the frame is held
 *    until the NIC has read it. Only where a packet is exactly its headers and its payload
 *    (the sequence and batch fields before payload-offset, no padding:
 *    dq_packetize_split_ok); else as below.
 *  - memory=cuda: the packets are made on the GPU (dq_reorder_gpu_packetize) and copied to
 *    the host once, into the TX slots or a system memory burst.
 *  - memory=system: the frame is copied to the host and packetized there.
 * stats counts each way, and the bytes copied out of GPU memory.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqiripay.h"
#include "gstdaqirielement.h"
#include "gstdaqirireorder.h"
#include "gstdaqiritxmem.h"
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
  /* the GST_DAQIRI_N_ADDRESSES address properties from PROP_SRC_MAC, then the
   * GST_DAQIRI_N_FIELDS field properties from PROP_SEQ_OFFSET (gstdaqirielement.h) */
  PROP_SRC_MAC,
  PROP_SEQ_OFFSET = PROP_SRC_MAC + GST_DAQIRI_N_ADDRESSES,
  PROP_MEMORY = PROP_SEQ_OFFSET + GST_DAQIRI_N_FIELDS,
  PROP_TWO_SEGMENT,
  PROP_STATS,
};

struct _GstDaqiriPay {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties (object lock) */
  GstDaqiriAddresses addrs;
  DqReorderConfig cfg;
  GstDaqiriMemory memory;
  gboolean two_segment;

  /* streaming state */
  DqReorderConfig run_cfg;
  DqPacketizeTemplate tmpl;
  guint8 header[HEADER_LEN];
  guint64 batch;
  gboolean caps_sent;
  DqReorderPacket *pkts;
  GstBufferPool *slot_pool;  /* downstream's TX slots, when offered */
  gboolean sink_two_segment; /* downstream sends payloads from where they lie */
  gboolean run_two_segment;  /* GPU frames go out two-segment (properties and layout) */
  GstDaqiriMemory run_memory;
#ifdef DQ_HAVE_CUDA
  DqReorderGpu *gpu; /* memory=cuda: the packetize kernel's context, and its output */
  guint8 *dev_out;
#endif

  /* counters (object lock) */
  guint64 frames, packets, two_segment_packets, gpu_packets, host_copy_bytes;
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
  self->run_memory = self->memory;
  gboolean two_segment = self->two_segment;
  self->frames = self->packets = self->two_segment_packets = 0;
  self->gpu_packets = self->host_copy_bytes = 0;
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
#ifndef DQ_HAVE_CUDA
  if (self->run_memory == GST_DAQIRI_MEMORY_CUDA) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("memory=cuda: this build has no CUDA (allowed: memory=system)"), (NULL));
    return FALSE;
  }
#endif
  self->run_two_segment = two_segment && dq_packetize_split_ok (&self->run_cfg, &self->tmpl);
  if (two_segment && !self->run_two_segment)
    GST_INFO_OBJECT (self,
        "GPU frames cannot go out two-segment: a packet is not its first "
        "payload-offset bytes followed by its payload (a sequence or batch "
        "field after the payload, or padding to 60 bytes)");
  self->pkts = g_new (DqReorderPacket, self->run_cfg.packets_per_batch);
  self->batch = 0;
  self->caps_sent = FALSE;
  self->sink_two_segment = FALSE;
  return TRUE;
}

static void
stop (GstDaqiriPay *self)
{
  g_clear_pointer (&self->pkts, g_free);
  if (self->slot_pool) {
    gst_buffer_pool_set_active (self->slot_pool, FALSE);
    gst_clear_object (&self->slot_pool);
  }
#ifdef DQ_HAVE_CUDA
  g_clear_pointer (&self->gpu, dq_reorder_gpu_free);
  g_clear_pointer (&self->dev_out, dq_cuda_free);
#endif
}

static void
count (GstDaqiriPay *self, guint64 packets, guint64 two_segment, guint64 gpu, guint64 copied)
{
  GST_OBJECT_LOCK (self);
  self->packets += packets;
  self->two_segment_packets += two_segment;
  self->gpu_packets += gpu;
  self->host_copy_bytes += copied;
  GST_OBJECT_UNLOCK (self);
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
      if (r == 0) {
        count (self, 0, 0, 0, map->size);
        return *copy;
      }
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

/* Whether downstream said it sends header-data split bursts two-segment */
static gboolean
query_two_segment (GstQuery *query)
{
  guint index;
  const GstStructure *params = NULL;
  gboolean yes = FALSE;
  if (gst_query_find_allocation_meta (query, GST_DAQIRI_PACKET_META_API_TYPE, &index))
    gst_query_parse_nth_allocation_meta (query, index, &params);
  return params != NULL && gst_structure_get_boolean (params, GST_DAQIRI_TWO_SEGMENT, &yes) && yes;
}

/* Asks downstream for a pool of TX slots that holds our packets, and takes it when offered;
 * and whether it sends two-segment. */
static void
negotiate_downstream (GstDaqiriPay *self)
{
  GstCaps *caps = gst_pad_get_current_caps (self->srcpad);
  if (caps == NULL)
    return;
  GstQuery *query = gst_query_new_allocation (caps, TRUE);
  GstBufferPool *pool = NULL;
  guint size = 0, min = 0, max = 0;
  gboolean answered = gst_pad_peer_query (self->srcpad, query);
  self->sink_two_segment = answered && query_two_segment (query);
  if (answered && gst_query_get_n_allocation_pools (query) > 0)
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

/* Writes packets first .. first+k-1 of the frame into slots 0 .. k-1 of a lent run (slot j
 * at meta->packets[j].offset in map, at least plen bytes each); FALSE with an error posted */
typedef gboolean (*SlotWriter) (GstDaqiriPay *self, gconstpointer src, guint32 first, guint k,
    const GstMapInfo *map, const GstDaqiriPacketMeta *meta);

/* One frame into runs of TX slots: packet s into slot j of the run, each run pushed. */
static GstFlowReturn
pay_runs (GstDaqiriPay *self, GstBuffer *in, SlotWriter write, gconstpointer src)
{
  const guint32 n = self->run_cfg.packets_per_batch, plen = self->tmpl.packet_stride;
  guint32 done = 0;
  GstFlowReturn ret = GST_FLOW_OK;

  while (done < n && ret == GST_FLOW_OK) {
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
    guint k = MIN (meta->n_packets, n - done);
    gboolean ok = TRUE;
    for (guint j = 0; j < k && ok; j++)
      ok = meta->packets[j].length >= plen && map.size >= plen &&
          meta->packets[j].offset <= map.size - plen;
    if (!ok)
      GST_ELEMENT_ERROR (
          self, STREAM, FAILED, ("a %u-byte packet does not fit a TX slot", plen), (NULL));
    ok = ok && write (self, src, done, k, &map, meta);
    gst_buffer_unmap (out, &map);
    if (!ok) {
      gst_buffer_unref (out);
      return GST_FLOW_ERROR;
    }
    for (guint j = 0; j < k; j++)
      meta->packets[j].length = plen;
    meta->n_packets = k;
    GST_BUFFER_PTS (out) = GST_BUFFER_PTS (in);
    GST_BUFFER_DURATION (out) = done == 0 ? GST_BUFFER_DURATION (in) : 0;
    GST_BUFFER_OFFSET (out) = self->batch;
    done += k;
    ret = gst_pad_push (self->srcpad, out);
  }
  return ret;
}

/* pay_runs' writer for packets made on the CPU from the frame in host memory */
static gboolean
write_cpu_packets (GstDaqiriPay *self, gconstpointer frame, guint32 first, guint k,
    const GstMapInfo *map, const GstDaqiriPacketMeta *meta)
{
  const guint32 plen = self->tmpl.packet_stride;
  for (guint j = 0; j < k; j++)
    if (dq_packetize_cpu_range (&self->run_cfg, &self->tmpl, frame, self->batch, first + j, 1,
            map->data + meta->packets[j].offset, plen, NULL) != 0) {
      GST_ELEMENT_ERROR (
          self, STREAM, FAILED, ("cannot write a %u-byte packet into a TX slot", plen), (NULL));
      return FALSE;
    }
  return TRUE;
}

static GstFlowReturn
push_burst (GstDaqiriPay *self, GstBuffer *in, GstBuffer *out)
{
  gst_buffer_add_daqiri_packet_meta (
      out, (const GstDaqiriPacket *) self->pkts, self->run_cfg.packets_per_batch);
  GST_BUFFER_PTS (out) = GST_BUFFER_PTS (in);
  GST_BUFFER_DURATION (out) = GST_BUFFER_DURATION (in);
  GST_BUFFER_OFFSET (out) = self->batch;
  return gst_pad_push (self->srcpad, out);
}

static GstBuffer *
burst_alloc (GstDaqiriPay *self, gsize size, GstMapInfo *map)
{
  GstBuffer *out = gst_buffer_new_allocate (NULL, size, NULL);
  if (out != NULL && gst_buffer_map (out, map, GST_MAP_WRITE))
    return out;
  if (out)
    gst_buffer_unref (out);
  GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
      ("cannot allocate a burst of %" G_GSIZE_FORMAT " bytes", size), (NULL));
  return NULL;
}

/* The frame's packets made on the CPU: into downstream's TX slots, or a burst */
static GstFlowReturn
pay_on_cpu (GstDaqiriPay *self, GstBuffer *in)
{
  const DqReorderConfig *cfg = &self->run_cfg;
  GstMapInfo imap, omap;
  guint8 *copy;
  const guint8 *frame = frame_bytes (self, in, &imap, &copy);
  if (frame == NULL)
    return GST_FLOW_ERROR;
  if (self->slot_pool) {
    count (self, cfg->packets_per_batch, 0, 0, 0);
    GstFlowReturn ret = pay_runs (self, in, write_cpu_packets, frame);
    frame_bytes_done (in, &imap, copy);
    return ret;
  }
  gsize out_size = (gsize) cfg->packets_per_batch * self->tmpl.packet_stride;
  GstBuffer *out = burst_alloc (self, out_size, &omap);
  if (out == NULL) {
    frame_bytes_done (in, &imap, copy);
    return GST_FLOW_ERROR;
  }
  int rc =
      dq_packetize_cpu (cfg, &self->tmpl, frame, self->batch, omap.data, omap.size, self->pkts);
  gst_buffer_unmap (out, &omap);
  frame_bytes_done (in, &imap, copy);
  if (rc != 0) {
    gst_buffer_unref (out);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("packetize failed"), (NULL));
    return GST_FLOW_ERROR;
  }
  count (self, cfg->packets_per_batch, 0, 0, 0);
  return push_burst (self, in, out);
}

/* A GPU frame two-segment: the packets' headers in system memory, the frame as their
 * payloads (gstdaqiripay.c's top); the burst holds the frame until the sink is done. */
static GstFlowReturn
pay_two_segment (GstDaqiriPay *self, GstBuffer *in)
{
  const DqReorderConfig *cfg = &self->run_cfg;
  guint32 n = cfg->packets_per_batch, hlen = cfg->payload_offset;
  guint32 plen = self->tmpl.packet_stride;
  GstMapInfo map;
  GstBuffer *out = burst_alloc (self, (gsize) n * hlen, &map);
  if (out == NULL)
    return GST_FLOW_ERROR;
  int rc = dq_packetize_headers_cpu (cfg, &self->tmpl, self->batch, 0, n, map.data, map.size, hlen);
  gst_buffer_unmap (out, &map);
  if (rc != 0) {
    gst_buffer_unref (out);
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("writing the packets' headers failed"), (NULL));
    return GST_FLOW_ERROR;
  }
  gst_buffer_append_memory (out, gst_memory_ref (gst_buffer_peek_memory (in, 0)));
  for (guint32 s = 0; s < n; s++)
    self->pkts[s] = (DqReorderPacket){ s * hlen, plen, 0, 0, 0 };
  GstDaqiriPacketMeta *meta =
      gst_buffer_add_daqiri_packet_meta (out, (const GstDaqiriPacket *) self->pkts, n);
  meta->header_size = hlen;
  meta->header_stride = hlen;
  meta->payload_stride = cfg->payload_size;
  GST_BUFFER_PTS (out) = GST_BUFFER_PTS (in);
  GST_BUFFER_DURATION (out) = GST_BUFFER_DURATION (in);
  GST_BUFFER_OFFSET (out) = self->batch;
  count (self, n, n, 0, 0);
  return gst_pad_push (self->srcpad, out);
}

#ifdef DQ_HAVE_CUDA
/* Copies packets first .. first+n-1 of the GPU output to dst, dst_stride bytes apart */
static gboolean
gpu_out_copy (GstDaqiriPay *self, guint8 *dst, gsize dst_stride, guint32 first, guint32 n)
{
  guint32 plen = self->tmpl.packet_stride;
  if (dq_cuda_memcpy2d (dst, dst_stride, self->dev_out + (gsize) first * plen, plen, plen, n) !=
      0) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("cannot copy packets from GPU memory: %s", dq_cuda_last_error ()), (NULL));
    return FALSE;
  }
  count (self, 0, 0, 0, (guint64) n * plen);
  return TRUE;
}

/* The packetize kernel over the frame, into dev_out (made at the first frame) */
static gboolean
gpu_packetize (GstDaqiriPay *self, GstBuffer *in)
{
  const DqReorderConfig *cfg = &self->run_cfg;
  gsize size = (gsize) cfg->packets_per_batch * self->tmpl.packet_stride;
  char msg[256] = "";
  if (self->gpu == NULL) {
    DqReorderGpuOptions opts = { .device = -1 };
    self->gpu = dq_reorder_gpu_new (cfg, &opts, msg, sizeof msg);
    self->dev_out = self->gpu != NULL ? dq_cuda_malloc (size) : NULL;
    if (self->dev_out == NULL) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("memory=cuda: cannot set up the GPU"),
          ("%s", self->gpu != NULL ? dq_cuda_last_error () : msg));
      return FALSE;
    }
  }
  GstMapInfo map;
  if (!gst_buffer_map (in, &map, GST_MAP_READ | GST_DAQIRI_MAP_CUDA)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("cannot map the GPU frame"), (NULL));
    return FALSE;
  }
  DqReorderCompletion c;
  int rc = dq_reorder_gpu_packetize (
      self->gpu, &self->tmpl, map.data, self->batch, self->dev_out, size, NULL);
  if (rc == 0)
    rc = dq_reorder_gpu_poll (self->gpu, 1, &c) == 1 ? 0 : -1;
  gst_buffer_unmap (in, &map);
  if (rc != 0) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("packetize on the GPU failed"),
        ("%s", dq_reorder_gpu_error (self->gpu)));
    return FALSE;
  }
  return TRUE;
}

/* pay_runs' writer for packets made on the GPU: one strided copy into the run (the pool's
 * slots are evenly spaced) */
static gboolean
write_gpu_packets (GstDaqiriPay *self, gconstpointer unused, guint32 first, guint k,
    const GstMapInfo *map, const GstDaqiriPacketMeta *meta)
{
  const guint32 plen = self->tmpl.packet_stride;
  gsize stride = k > 1 ? (gsize) meta->packets[1].offset - meta->packets[0].offset : plen;
  gboolean even = stride >= plen;
  for (guint j = 2; j < k && even; j++)
    even = (gsize) meta->packets[j].offset - meta->packets[j - 1].offset == stride;
  if (!even) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("the TX slots of a run are not evenly spaced %u bytes or more apart", plen), (NULL));
    return FALSE;
  }
  return gpu_out_copy (self, map->data + meta->packets[0].offset, stride, first, k);
}

/* memory=cuda: the packets made on the GPU, then copied once into the TX slots or a burst */
static GstFlowReturn
pay_on_gpu (GstDaqiriPay *self, GstBuffer *in)
{
  const DqReorderConfig *cfg = &self->run_cfg;
  const guint32 n = cfg->packets_per_batch, plen = self->tmpl.packet_stride;
  if (!gpu_packetize (self, in))
    return GST_FLOW_ERROR;
  count (self, n, 0, n, 0);
  if (self->slot_pool == NULL) {
    GstMapInfo map;
    GstBuffer *out = burst_alloc (self, (gsize) n * plen, &map);
    if (out == NULL)
      return GST_FLOW_ERROR;
    gboolean ok = gpu_out_copy (self, map.data, plen, 0, n);
    gst_buffer_unmap (out, &map);
    if (!ok) {
      gst_buffer_unref (out);
      return GST_FLOW_ERROR;
    }
    for (guint32 s = 0; s < n; s++)
      self->pkts[s] = (DqReorderPacket){ s * plen, plen, 0, 0, 0 };
    return push_burst (self, in, out);
  }
  return pay_runs (self, in, write_gpu_packets, NULL);
}
#endif

static GstFlowReturn
gst_daqiri_pay_chain (GstPad *pad, GstObject *parent, GstBuffer *in)
{
  GstDaqiriPay *self = GST_DAQIRI_PAY (parent);
  const DqReorderConfig *cfg = &self->run_cfg;

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
    negotiate_downstream (self);
  }
  gboolean gpu_frame = gst_buffer_n_memory (in) == 1 &&
      gst_memory_is_type (gst_buffer_peek_memory (in, 0), GST_DAQIRI_CUDA_MEMORY_TYPE);
  GstFlowReturn ret;
  if (gpu_frame && self->run_two_segment && self->sink_two_segment)
    ret = pay_two_segment (self, in);
#ifdef DQ_HAVE_CUDA
  else if (gpu_frame && self->run_memory == GST_DAQIRI_MEMORY_CUDA)
    ret = pay_on_gpu (self, in);
#endif
  else
    ret = pay_on_cpu (self, in);
  GST_OBJECT_LOCK (self);
  self->frames++;
  GST_OBJECT_UNLOCK (self);
  self->batch++;
  gst_buffer_unref (in);
  return ret;
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
      negotiate_downstream (self);
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
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    stop (self);
  return ret;
}

static void
gst_daqiri_pay_set_property (GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstDaqiriPay *self = GST_DAQIRI_PAY (object);

  GST_OBJECT_LOCK (self);
  if (prop_id == PROP_MEMORY)
    self->memory = g_value_get_enum (value);
  else if (prop_id == PROP_TWO_SEGMENT)
    self->two_segment = g_value_get_boolean (value);
  else if (!gst_daqiri_addresses_set (&self->addrs, PROP_SRC_MAC, prop_id, value) &&
      !gst_daqiri_field_set (&self->cfg, PROP_SEQ_OFFSET, prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_daqiri_pay_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstDaqiriPay *self = GST_DAQIRI_PAY (object);

  GST_OBJECT_LOCK (self);
  if (prop_id == PROP_MEMORY)
    g_value_set_enum (value, self->memory);
  else if (prop_id == PROP_TWO_SEGMENT)
    g_value_set_boolean (value, self->two_segment);
  else if (prop_id == PROP_STATS)
    g_value_take_boxed (value,
        gst_structure_new ("application/x-daqiri-pay-stats", "frames", G_TYPE_UINT64, self->frames,
            "packets", G_TYPE_UINT64, self->packets, "two-segment", G_TYPE_UINT64,
            self->two_segment_packets, "gpu-packetized", G_TYPE_UINT64, self->gpu_packets,
            "host-copy-bytes", G_TYPE_UINT64, self->host_copy_bytes, NULL));
  else if (!gst_daqiri_addresses_get (&self->addrs, PROP_SRC_MAC, prop_id, value) &&
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
  self->memory = GST_DAQIRI_MEMORY_SYSTEM;
  self->two_segment = TRUE;
  gst_daqiri_addresses_init (&self->addrs);
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad, gst_daqiri_pay_chain);
  gst_pad_set_event_function (self->sinkpad, gst_daqiri_pay_sink_event);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);
  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);
}

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
  g_object_class_install_property (gobject_class, PROP_MEMORY,
      g_param_spec_enum ("memory", "Memory",
          "Where the packets of a frame in daqiri GPU memory (daqirireorder memory=cuda) are "
          "made when they do not go out two-segment: system (the frame copied to the host, "
          "packets made on the CPU) or cuda (packets made on the GPU, then copied to the host "
          "once, into the sink's TX slots where it offers them; needs a build with CUDA). "
          "Frames in system memory are always packetized on the CPU",
          GST_TYPE_DAQIRI_MEMORY, GST_DAQIRI_MEMORY_SYSTEM, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_TWO_SEGMENT,
      g_param_spec_boolean ("two-segment", "Two-segment",
          "A frame in daqiri GPU memory goes out as header-data split bursts (headers made on "
          "the CPU, payloads read by the NIC from the frame where it lies: no copy out of the "
          "GPU) when the sink sends that way (daqirisink on mlx5 and emu ports) and every "
          "packet is its first payload-offset bytes followed by its payload (sequence and "
          "batch fields before payload-offset, packets of at least 60 bytes)",
          TRUE, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counters: frames, packets, two-segment (packets whose payload stayed in the GPU "
          "frame), gpu-packetized (packets made on the GPU, memory=cuda), host-copy-bytes "
          "(bytes this element copied out of GPU memory)",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "daqiri frame packetizer",
      "Codec/Payloader/Network",
      "Cuts frames into UDP/IPv4/Ethernet packet bursts with "
      "sequence and batch numbers (the inverse of daqirireorder)",
      "daqiri");
}
