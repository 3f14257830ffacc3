#ifndef GST_DAQIRI_REORDER_H
#define GST_DAQIRI_REORDER_H

#include <gst/gst.h>

G_BEGIN_DECLS

/** The media type of reordered frames (one batch of packets' payloads per buffer). */
#define GST_DAQIRI_FRAME_MEDIA_TYPE "application/x-daqiri-frame"
/** The name of the GstCustomMeta on every frame daqirireorder pushes. */
#define GST_DAQIRI_FRAME_META_NAME "GstDaqiriFrameMeta"

#define GST_TYPE_DAQIRI_ELEMENT_TYPE (gst_daqiri_element_type_get_type ())
GType gst_daqiri_element_type_get_type (void);
#define GST_TYPE_DAQIRI_BYTE_ORDER (gst_daqiri_byte_order_get_type ())
GType gst_daqiri_byte_order_get_type (void);

#define GST_TYPE_DAQIRI_REORDER (gst_daqiri_reorder_get_type ())
G_DECLARE_FINAL_TYPE (GstDaqiriReorder, gst_daqiri_reorder, GST, DAQIRI_REORDER, GstElement);

GST_ELEMENT_REGISTER_DECLARE (daqirireorder);

G_END_DECLS

#endif
