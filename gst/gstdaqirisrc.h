#ifndef GST_DAQIRI_SRC_H
#define GST_DAQIRI_SRC_H

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS

#define GST_TYPE_DAQIRI_SRC (gst_daqiri_src_get_type ())
G_DECLARE_FINAL_TYPE (GstDaqiriSrc, gst_daqiri_src, GST, DAQIRI_SRC, GstPushSrc);

GST_ELEMENT_REGISTER_DECLARE (daqirisrc);

G_END_DECLS

#endif
