/* For programs that link the plugin's own objects (and so share one engine registry with
 * the elements: emulated ports are per process): registers the daqiri plugin from them as
 * a static plugin. Header only. */
#ifndef DAQIRI_TEST_DQ_LINKED_PLUGIN_H
#define DAQIRI_TEST_DQ_LINKED_PLUGIN_H

#include <gst/gst.h>

/* from plugin.c (GST_PLUGIN_DEFINE), linked in */
const GstPluginDesc *gst_plugin_daqiri_get_desc (void);

/* FALSE when GStreamer refused it */
static inline gboolean
dq_register_linked_plugin (void)
{
  const GstPluginDesc *d = gst_plugin_daqiri_get_desc ();
  return gst_plugin_register_static (d->major_version, d->minor_version, d->name, d->description,
      d->plugin_init, d->version, d->license, d->source, d->package, d->origin);
}

#endif
