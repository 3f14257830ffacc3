/* GstDaqiriPacketMeta: the packets inside a daqiri burst buffer.
 *
 * A daqiri buffer (caps application/x-daqiri-packets) carries a burst: many packets that
 * sit in one contiguous region of memory, usually a range of the receive ring. The meta
 * lists them: per packet the byte offset from the start of the buffer's data, the length,
 * the flow id (mark of the flow rule it matched), the port-clock timestamp in ns and
 * flags. Reading packet i:
 *
 *   GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
 *   GstMapInfo map;
 *   gst_buffer_map (buf, &map, GST_MAP_READ);
 *   for (guint i = 0; i < meta->n_packets; i++) {
 *     const guint8 *frame = map.data + meta->packets[i].offset;   // Ethernet header
 *     guint len = meta->packets[i].length;
 *     ...
 *   }
 *
 * Sending at a time (daqirisink schedule=pts): packet i leaves at the buffer's PTS plus
 * packets[i].timestamp - packets[0].timestamp, so a received burst keeps its spacing; a
 * producer sets the timestamps to the offsets it wants (0 in packet i: the PTS alone).
 *
 * Header-data split (daqirisrc header-size=N; meta->header_size is N, 0 otherwise): the
 * buffer has two memories. Memory 0 holds the headers: packet i's first
 * MIN (length, header_size) bytes at packets[i].offset, header_stride bytes apart. Memory 1
 * (system or GPU memory, as daqirisrc memory= says) holds the rest of each packet, at
 * packets[i].offset / header_stride * payload_stride (gst_daqiri_packet_payload_offset).
 * Map the two memories separately (gst_buffer_peek_memory), never the buffer as a whole.
 */
#ifndef GST_DAQIRI_PACKET_META_H
#define GST_DAQIRI_PACKET_META_H

#include <gst/gst.h>

G_BEGIN_DECLS

#ifdef BUILDING_GST_DAQIRI
#define GST_DAQIRI_API __attribute__ ((visibility ("default"))) extern
#else
#define GST_DAQIRI_API extern
#endif

/** The media type of daqiri packet bursts. */
#define GST_DAQIRI_PACKETS_MEDIA_TYPE "application/x-daqiri-packets"

/* GPU memory of daqiri elements (frames of daqirireorder memory=cuda): caps carry this
 * feature; gst_memory_is_type (mem, GST_DAQIRI_CUDA_MEMORY_TYPE) tells such memory. It is
 * CUDA device memory of the primary context of the device: map it with GST_DAQIRI_MAP_CUDA
 * (the value of GstCuda's GST_MAP_CUDA) to get the device pointer; a CPU map fails. */
#define GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA "memory:DaqiriCUDA"
#define GST_DAQIRI_CUDA_MEMORY_TYPE "daqiri.cuda.memory"
#define GST_DAQIRI_MAP_CUDA ((GstMapFlags) (GST_MAP_FLAG_LAST << 1))

/**
 * GstDaqiriPacketFlags:
 * @GST_DAQIRI_PACKET_FLAG_TRUNCATED: the frame on the wire was longer than @length
 * @GST_DAQIRI_PACKET_FLAG_VLAN: a VLAN tag was stripped on receive; its id is
 *   gst_daqiri_packet_vlan_id()
 * @GST_DAQIRI_PACKET_FLAG_TS_HW: the timestamp was taken by the NIC
 * @GST_DAQIRI_PACKET_FLAG_CSUM_OK: the NIC verified the L3/L4 checksums
 */
typedef enum {
  GST_DAQIRI_PACKET_FLAG_TRUNCATED = 1 << 0,
  GST_DAQIRI_PACKET_FLAG_VLAN = 1 << 1,
  GST_DAQIRI_PACKET_FLAG_TS_HW = 1 << 2,
  GST_DAQIRI_PACKET_FLAG_CSUM_OK = 1 << 3,
} GstDaqiriPacketFlags;

/**
 * GstDaqiriPacket:
 * @offset: byte offset of the packet's first byte (its Ethernet header) in the buffer
 * @length: bytes of the packet present in the buffer
 * @flow_id: mark of the flow rule the packet matched (0 without flow rules)
 * @flags: #GstDaqiriPacketFlags in the low 16 bits; the VLAN id in bits 16..27
 * @timestamp: receive time on the port clock, in ns (0 when unknown)
 */
typedef struct {
  guint32 offset;
  guint32 length;
  guint32 flow_id;
  guint32 flags;
  guint64 timestamp;
} GstDaqiriPacket;

#define gst_daqiri_packet_vlan_id(p) ((guint16) (((p)->flags >> 16) & 0x0fff))

/**
 * GstDaqiriPacketMeta:
 * @meta: parent
 * @n_packets: number of packets
 * @packets: @n_packets descriptors, in receive order (to change them, copy the buffer first:
 *   daqirisrc's bursts also carry their offsets and lengths as stride words for GPU readers,
 *   which the copy drops)
 */
typedef struct {
  GstMeta meta;
  guint n_packets;
  GstDaqiriPacket *packets;
  /*< private >*/
  GDestroyNotify release;
  gpointer release_data;
  /*< public >*/
  /* header-data split (see the top); all 0 without; taken from the padding the first
   * version reserved, so the structure's size and layout before them are unchanged */
  guint header_size;
  guint header_stride;
  guint payload_stride;
  /*< private >*/
  /* NULL, or the packets' offsets and lengths as 4-byte stride words (offset >> _word_shift |
   * length << 18) where daqirisrc put them for a GPU reader (daqirireorder); as long-lived as
   * packets; copies drop them */
  guint _word_shift;
  const guint32 *_words;
  gpointer _gst_reserved[GST_PADDING - 3];
} GstDaqiriPacketMeta;

/* Header-data split: where packet p's bytes past the header lie in the buffer's second
 * memory. */
#define gst_daqiri_packet_payload_offset(meta, p) \
  ((gsize) ((p)->offset / (meta)->header_stride) * (meta)->payload_stride)

GST_DAQIRI_API GType gst_daqiri_packet_meta_api_get_type (void);
#define GST_DAQIRI_PACKET_META_API_TYPE (gst_daqiri_packet_meta_api_get_type ())

GST_DAQIRI_API const GstMetaInfo *gst_daqiri_packet_meta_get_info (void);
#define GST_DAQIRI_PACKET_META_INFO (gst_daqiri_packet_meta_get_info ())

#define gst_buffer_get_daqiri_packet_meta(b) \
  ((GstDaqiriPacketMeta *) gst_buffer_get_meta ((b), GST_DAQIRI_PACKET_META_API_TYPE))

/**
 * gst_buffer_add_daqiri_packet_meta:
 * @buffer: a buffer
 * @packets: (array length=n_packets): the descriptors
 * @n_packets: how many
 *
 * Adds a meta with a copy of @n_packets descriptors.
 *
 * Returns: (transfer none): the meta
 */
GST_DAQIRI_API GstDaqiriPacketMeta *gst_buffer_add_daqiri_packet_meta (
    GstBuffer *buffer, const GstDaqiriPacket *packets, guint n_packets);

/**
 * gst_buffer_add_daqiri_packet_meta_full: (skip)
 * @buffer: a buffer
 * @packets: the descriptors, used in place
 * @n_packets: how many
 * @release: (nullable): called with @release_data when the meta is freed
 * @release_data: for @release
 *
 * Adds a meta that uses @packets in place, without a copy; until @release is called
 * @packets must stay valid. This is how sources hand out per-packet arrays from their own
 * pools.
 *
 * Returns: the meta
 */
GST_DAQIRI_API GstDaqiriPacketMeta *gst_buffer_add_daqiri_packet_meta_full (GstBuffer *buffer,
    GstDaqiriPacket *packets, guint n_packets, GDestroyNotify release, gpointer release_data);

/* Checks that every packet lies inside @size bytes; FALSE names the first bad one. With
 * header-data split, @size is the header memory's and only the header parts are checked
 * (gst_daqiri_packet_meta_validate_split checks both). */
GST_DAQIRI_API gboolean gst_daqiri_packet_meta_validate (
    const GstDaqiriPacketMeta *meta, gsize size, guint *bad_index);
/* Header-data split: every packet's header part inside @header_bytes and the rest inside
 * @payload_bytes; FALSE names the first bad one. */
GST_DAQIRI_API gboolean gst_daqiri_packet_meta_validate_split (
    const GstDaqiriPacketMeta *meta, gsize header_bytes, gsize payload_bytes, guint *bad_index);

/* ---- accessors (the same as the fields and macros above, for language bindings through
 * GObject introspection: namespace GstDaqiri, e.g. GstDaqiri.buffer_get_packet_meta) ---- */

/**
 * gst_daqiri_buffer_get_packet_meta:
 * @buffer: a buffer
 *
 * Returns: (transfer none) (nullable): the buffer's #GstDaqiriPacketMeta, or %NULL
 */
GST_DAQIRI_API GstDaqiriPacketMeta *gst_daqiri_buffer_get_packet_meta (GstBuffer *buffer);

/**
 * gst_daqiri_packet_meta_get_n_packets:
 * @meta: a #GstDaqiriPacketMeta
 *
 * Returns: the number of packets
 */
GST_DAQIRI_API guint gst_daqiri_packet_meta_get_n_packets (const GstDaqiriPacketMeta *meta);

/**
 * gst_daqiri_packet_meta_get_packet:
 * @meta: a #GstDaqiriPacketMeta
 * @index: the packet, 0 .. n_packets - 1
 * @packet: (out caller-allocates): its descriptor
 *
 * Returns: %FALSE when @index is out of range (@packet zeroed)
 */
GST_DAQIRI_API gboolean gst_daqiri_packet_meta_get_packet (
    const GstDaqiriPacketMeta *meta, guint index, GstDaqiriPacket *packet);

/**
 * gst_daqiri_packet_meta_get_segments:
 * @meta: a #GstDaqiriPacketMeta
 * @index: the packet, 0 .. n_packets - 1
 * @header_offset: (out): where the packet starts in the buffer's memory 0 (the whole packet
 *   without header-data split)
 * @header_length: (out): its bytes there
 * @payload_offset: (out): where the rest starts in memory 1 (0 without split)
 * @payload_length: (out): its bytes there (0 without split)
 *
 * Where packet @index lies: with header-data split its first MIN (length, header_size)
 * bytes in memory 0 and the rest in memory 1; without, all of it in the buffer.
 *
 * Returns: %FALSE when @index is out of range (all 0)
 */
GST_DAQIRI_API gboolean gst_daqiri_packet_meta_get_segments (const GstDaqiriPacketMeta *meta,
    guint index, guint *header_offset, guint *header_length, guint64 *payload_offset,
    guint *payload_length);

/**
 * gst_daqiri_buffer_get_frame_info:
 * @buffer: a frame of daqirireorder
 *
 * The fields of the frame's GstDaqiriFrameMeta (a #GstCustomMeta: batch-id, packets,
 * missing, duplicates, late, short, flags, complete, flushed; docs/elements.md).
 *
 * Returns: (transfer none) (nullable): its structure, or %NULL without one
 */
GST_DAQIRI_API const GstStructure *gst_daqiri_buffer_get_frame_info (GstBuffer *buffer);

G_END_DECLS

#endif
