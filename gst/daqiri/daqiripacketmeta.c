/* GstDaqiriPacketMeta: per-packet descriptors of a daqiri burst buffer. */
#include "daqiripacketmeta.h"

#include <string.h>

GType
gst_daqiri_packet_meta_api_get_type (void)
{
  static GType type;
  static const gchar *tags[] = { NULL };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("GstDaqiriPacketMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* the split fields took two pointers' worth of the padding: the size is the first one's */
G_STATIC_ASSERT (sizeof (GstDaqiriPacketMeta) ==
    G_STRUCT_OFFSET (GstDaqiriPacketMeta, header_size) + GST_PADDING * sizeof (gpointer));

static gboolean
packet_meta_init (GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  GstDaqiriPacketMeta *pmeta = (GstDaqiriPacketMeta *) meta;

  pmeta->n_packets = 0;
  pmeta->packets = NULL;
  pmeta->release = NULL;
  pmeta->release_data = NULL;
  pmeta->header_size = pmeta->header_stride = pmeta->payload_stride = 0;
  pmeta->_word_shift = 0;
  pmeta->_words = NULL;
  return TRUE;
}

static void
packet_meta_free (GstMeta *meta, GstBuffer *buffer)
{
  GstDaqiriPacketMeta *pmeta = (GstDaqiriPacketMeta *) meta;

  if (pmeta->release != NULL)
    pmeta->release (pmeta->release_data);
  pmeta->release = NULL;
  pmeta->packets = NULL;
  pmeta->_word_shift = 0;
  pmeta->_words = NULL;
  pmeta->n_packets = 0;
}

/* A copy of a region keeps the packets that lie wholly inside it, rebased to its start. */
static gboolean
packet_meta_transform (
    GstBuffer *dest, GstMeta *meta, GstBuffer *buffer, GQuark type, gpointer data)
{
  GstDaqiriPacketMeta *src = (GstDaqiriPacketMeta *) meta;

  if (!GST_META_TRANSFORM_IS_COPY (type))
    return FALSE;

  GstMetaTransformCopy *copy = data;
  gsize start = 0, end = G_MAXSIZE;
  /* a part of a split burst would lose its payloads: only a whole copy keeps the meta */
  if (src->header_size != 0 && copy->region)
    return FALSE;
  if (copy->region) {
    start = copy->offset;
    end = copy->size == (gsize) -1 ? G_MAXSIZE : copy->offset + copy->size;
  }

  GstDaqiriPacket *kept = g_new (GstDaqiriPacket, MAX (src->n_packets, 1));
  guint n = 0;
  for (guint i = 0; i < src->n_packets; i++) {
    const GstDaqiriPacket *p = &src->packets[i];
    if (p->offset < start || (gsize) p->offset + p->length > end)
      continue;
    kept[n] = *p;
    kept[n].offset = (guint32) (p->offset - start);
    n++;
  }
  /* the meta owns `kept` from here: its release frees it */
  GstDaqiriPacketMeta *out = gst_buffer_add_daqiri_packet_meta_full (dest, kept, n, g_free, kept);
  if (out == NULL) {
    g_free (kept);
    return FALSE;
  }
  out->header_size = src->header_size;
  out->header_stride = src->header_stride;
  out->payload_stride = src->payload_stride;
  return TRUE;
}

const GstMetaInfo *
gst_daqiri_packet_meta_get_info (void)
{
  static const GstMetaInfo *info;

  if (g_once_init_enter ((GstMetaInfo **) &info)) {
    const GstMetaInfo *mi = gst_meta_register (GST_DAQIRI_PACKET_META_API_TYPE,
        "GstDaqiriPacketMeta", sizeof (GstDaqiriPacketMeta), packet_meta_init, packet_meta_free,
        packet_meta_transform);
    g_once_init_leave ((GstMetaInfo **) &info, (GstMetaInfo *) mi);
  }
  return info;
}

GstDaqiriPacketMeta *
gst_buffer_add_daqiri_packet_meta_full (GstBuffer *buffer, GstDaqiriPacket *packets,
    guint n_packets, GDestroyNotify release, gpointer release_data)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  g_return_val_if_fail (packets != NULL || n_packets == 0, NULL);

  GstDaqiriPacketMeta *meta =
      (GstDaqiriPacketMeta *) gst_buffer_add_meta (buffer, GST_DAQIRI_PACKET_META_INFO, NULL);
  if (meta == NULL)
    return NULL;
  meta->n_packets = n_packets;
  meta->packets = packets;
  meta->release = release;
  meta->release_data = release_data;
  return meta;
}

GstDaqiriPacketMeta *
gst_buffer_add_daqiri_packet_meta (
    GstBuffer *buffer, const GstDaqiriPacket *packets, guint n_packets)
{
  g_return_val_if_fail (packets != NULL || n_packets == 0, NULL);

  GstDaqiriPacket *copy = g_new (GstDaqiriPacket, MAX (n_packets, 1));
  if (n_packets > 0)
    memcpy (copy, packets, n_packets * sizeof (GstDaqiriPacket));
  /* the meta owns `copy` from here: its release frees it */
  GstDaqiriPacketMeta *meta =
      gst_buffer_add_daqiri_packet_meta_full (buffer, copy, n_packets, g_free, copy);
  if (meta == NULL)
    g_free (copy);
  return meta;
}

/* the bytes of p in the header memory */
static gsize
header_part (const GstDaqiriPacketMeta *meta, const GstDaqiriPacket *p)
{
  return meta->header_size != 0 ? MIN (p->length, meta->header_size) : p->length;
}

gboolean
gst_daqiri_packet_meta_validate (const GstDaqiriPacketMeta *meta, gsize size, guint *bad_index)
{
  for (guint i = 0; i < meta->n_packets; i++) {
    const GstDaqiriPacket *p = &meta->packets[i];
    if ((gsize) p->offset > size || header_part (meta, p) > size - p->offset) {
      if (bad_index != NULL)
        *bad_index = i;
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
gst_daqiri_packet_meta_validate_split (
    const GstDaqiriPacketMeta *meta, gsize header_bytes, gsize payload_bytes, guint *bad_index)
{
  if (meta->header_size == 0 || meta->header_stride == 0)
    return gst_daqiri_packet_meta_validate (meta, header_bytes, bad_index);
  if (!gst_daqiri_packet_meta_validate (meta, header_bytes, bad_index))
    return FALSE;
  for (guint i = 0; i < meta->n_packets; i++) {
    const GstDaqiriPacket *p = &meta->packets[i];
    gsize at = gst_daqiri_packet_payload_offset (meta, p);
    gsize rest = p->length - header_part (meta, p);
    if (rest > meta->payload_stride || at > payload_bytes || rest > payload_bytes - at) {
      if (bad_index != NULL)
        *bad_index = i;
      return FALSE;
    }
  }
  return TRUE;
}

GstDaqiriPacketMeta *
gst_daqiri_buffer_get_packet_meta (GstBuffer *buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  return gst_buffer_get_daqiri_packet_meta (buffer);
}

guint
gst_daqiri_packet_meta_get_n_packets (const GstDaqiriPacketMeta *meta)
{
  g_return_val_if_fail (meta != NULL, 0);
  return meta->n_packets;
}

gboolean
gst_daqiri_packet_meta_get_packet (
    const GstDaqiriPacketMeta *meta, guint index, GstDaqiriPacket *packet)
{
  g_return_val_if_fail (meta != NULL && packet != NULL, FALSE);
  memset (packet, 0, sizeof *packet);
  if (index >= meta->n_packets)
    return FALSE;
  *packet = meta->packets[index];
  return TRUE;
}

gboolean
gst_daqiri_packet_meta_get_segments (const GstDaqiriPacketMeta *meta, guint index,
    guint *header_offset, guint *header_length, guint64 *payload_offset, guint *payload_length)
{
  g_return_val_if_fail (meta != NULL, FALSE);
  *header_offset = *header_length = *payload_length = 0;
  *payload_offset = 0;
  if (index >= meta->n_packets)
    return FALSE;
  const GstDaqiriPacket *p = &meta->packets[index];
  *header_offset = p->offset;
  *header_length = p->length;
  if (meta->header_size == 0 || meta->header_stride == 0)
    return TRUE;
  *header_length = MIN (p->length, meta->header_size);
  *payload_length = p->length - *header_length;
  *payload_offset = gst_daqiri_packet_payload_offset (meta, p);
  return TRUE;
}

const GstStructure *
gst_daqiri_buffer_get_frame_info (GstBuffer *buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  /* registered by daqirireorder; a buffer without one (or before the plugin loaded) has none */
  if (gst_meta_get_info ("GstDaqiriFrameMeta") == NULL)
    return NULL;
  GstCustomMeta *meta = gst_buffer_get_custom_meta (buffer, "GstDaqiriFrameMeta");
  return meta != NULL ? gst_custom_meta_get_structure (meta) : NULL;
}
