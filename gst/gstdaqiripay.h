#ifndef GST_DAQIRI_PAY_H
#define GST_DAQIRI_PAY_H

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_DAQIRI_PAY (gst_daqiri_pay_get_type ())
G_DECLARE_FINAL_TYPE (GstDaqiriPay, gst_daqiri_pay, GST, DAQIRI_PAY, GstElement);

GST_ELEMENT_REGISTER_DECLARE (daqiripay);

G_END_DECLS

#endif
