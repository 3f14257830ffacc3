/* The daqiri plugin: daqirisrc, daqirisink, daqiritestsrc, daqirireorder, daqiripay. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>
#include <gst/daqiri/daqiripacketmeta.h>

#include "gstdaqirisrc.h"
#include "gstdaqirisink.h"
#include "gstdaqiritestsrc.h"
#include "gstdaqirireorder.h"
#include "gstdaqiripay.h"
#ifdef DQ_HAVE_CUDA
#include "gstdaqiricudamem.h"
#endif

static gboolean
plugin_init (GstPlugin *plugin)
{
  gboolean ok = FALSE;

  /* register the meta once here, so every streaming thread can use it at once */
  gst_daqiri_packet_meta_get_info ();
#ifdef DQ_HAVE_CUDA
  /* GPU memory for applications too: gst_allocator_find (GST_DAQIRI_CUDA_MEMORY_TYPE) */
  gst_allocator_register (GST_DAQIRI_CUDA_MEMORY_TYPE, gst_daqiri_cuda_allocator_get ());
#endif
  ok |= GST_ELEMENT_REGISTER (daqirisrc, plugin);
  ok |= GST_ELEMENT_REGISTER (daqirisink, plugin);
  ok |= GST_ELEMENT_REGISTER (daqiritestsrc, plugin);
  ok |= GST_ELEMENT_REGISTER (daqirireorder, plugin);
  ok |= GST_ELEMENT_REGISTER (daqiripay, plugin);
  return ok;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, daqiri,
    "Raw Ethernet packets between NICs and CPU or GPU memory, in bursts, at line rate", plugin_init,
    VERSION, GST_LICENSE, GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
