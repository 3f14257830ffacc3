/* GstDaqiriClock: a GstClock that reads a daqiri port's clock. */
#ifndef GST_DAQIRI_CLOCK_H
#define GST_DAQIRI_CLOCK_H

#include <gst/gst.h>
#include "daqiri-engine.h"

G_BEGIN_DECLS

#define GST_TYPE_DAQIRI_CLOCK (gst_daqiri_clock_get_type ())
G_DECLARE_FINAL_TYPE (GstDaqiriClock, gst_daqiri_clock, GST, DAQIRI_CLOCK, GstSystemClock);

/* The clock holds a reference on @port. Its time is the port time in ns. */
GstClock *gst_daqiri_clock_new (DqPort * port);
DqPort *gst_daqiri_clock_get_port (GstDaqiriClock * clock);

G_END_DECLS

#endif
