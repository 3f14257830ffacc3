/* The start of a GStreamer check program that runs the plugin's own objects, linked in
 * (dq-linked-plugin.h): header only; such a program depends on dq_linked_plugin_dep and
 * dq_check_suite_dep. */
#ifndef DAQIRI_TEST_DQ_CHECK_LINKED_H
#define DAQIRI_TEST_DQ_CHECK_LINKED_H

#include <gst/check/gstcheck.h>

#include "dq-linked-plugin.h"

/* Initialises gst/check with the linked-in plugin registered and nothing else of that
 * name: the plugin paths are unset first, since a plugin file of the same name would
 * replace it; daqirisrc must come from this program. Ends the program otherwise. */
static inline void
dq_check_init_linked (int *argc, char ***argv)
{
  g_unsetenv ("GST_PLUGIN_PATH_1_0");
  g_unsetenv ("GST_PLUGIN_PATH");
  gst_check_init (argc, argv);
  if (!dq_register_linked_plugin ())
    g_error ("cannot register the linked-in daqiri plugin");
  GstPluginFeature *f = gst_registry_lookup_feature (gst_registry_get (), "daqirisrc");
  GstPlugin *plugin = f ? gst_plugin_feature_get_plugin (f) : NULL;
  if (plugin == NULL || gst_plugin_get_filename (plugin) != NULL)
    g_error ("daqirisrc comes from %s, not from this program",
        plugin ? gst_plugin_get_filename (plugin) : "nowhere");
  gst_object_unref (plugin);
  gst_object_unref (f);
}

/* The main() of such a program, as GST_CHECK_MAIN makes one: runs the suite that
 * suite_func() returns under the name `name`; fails when a test failed. */
#define DQ_CHECK_LINKED_MAIN(suite_func, name) \
  int main (int argc, char **argv) \
  { \
    dq_check_init_linked (&argc, &argv); \
    return gst_check_run_suite (suite_func (), name, __FILE__) != 0; \
  }

#endif
