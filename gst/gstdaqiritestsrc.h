#ifndef GST_DAQIRI_TEST_SRC_H
#define GST_DAQIRI_TEST_SRC_H

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS

#define GST_TYPE_DAQIRI_TEST_SRC (gst_daqiri_test_src_get_type ())
G_DECLARE_FINAL_TYPE (GstDaqiriTestSrc, gst_daqiri_test_src, GST, DAQIRI_TEST_SRC, GstPushSrc);

GST_ELEMENT_REGISTER_DECLARE (daqiritestsrc);

G_END_DECLS

#endif
