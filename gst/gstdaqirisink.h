#ifndef GST_DAQIRI_SINK_H
#define GST_DAQIRI_SINK_H

#include <gst/gst.h>
#include <gst/base/gstbasesink.h>

G_BEGIN_DECLS

#define GST_TYPE_DAQIRI_SINK (gst_daqiri_sink_get_type ())
G_DECLARE_FINAL_TYPE (GstDaqiriSink, gst_daqiri_sink, GST, DAQIRI_SINK, GstBaseSink);

GST_ELEMENT_REGISTER_DECLARE (daqirisink);

G_END_DECLS

#endif
