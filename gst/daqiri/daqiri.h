/* daqiri public library: everything an application needs to read daqiri packet bursts. */
#ifndef GST_DAQIRI_H
#define GST_DAQIRI_H

#include <gst/daqiri/daqiripacketmeta.h>
#include <gst/daqiri/daqiritestpacket.h>

#endif
