/* Reading what the GPU element tests' pipelines (test-reorder-gpu, test-pay-gpu) deliver to
 * an appsink, and the error a pipeline posts meanwhile. Header only. */
#ifndef DAQIRI_TEST_GPU_TEST_PULL_H
#define DAQIRI_TEST_GPU_TEST_PULL_H

#include <gst/gst.h>
#include <gst/app/gstappsink.h>

/* The message of the first ERROR on the bus of `pipeline` (to g_free), or NULL. */
static inline gchar *
dq_bus_error (GstElement *pipeline)
{
  GstMessage *m = gst_bus_pop_filtered (GST_ELEMENT_BUS (pipeline), GST_MESSAGE_ERROR);
  if (m == NULL)
    return NULL;
  GError *e;
  gst_message_parse_error (m, &e, NULL);
  gchar *text = g_strdup (e->message);
  g_error_free (e);
  gst_message_unref (m);
  return text;
}

/* The next sample of appsink `out`, waited for half a second at a time: NULL once one of the
 * `n` pipelines has posted an error (its message in *error) or after max_idle half seconds
 * in a row without a sample. */
static inline GstSample *
dq_pull_sample (
    GstElement *out, GstElement *const *pipelines, guint n, guint max_idle, gchar **error)
{
  for (guint idle = 0; idle < max_idle; idle++) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (out), GST_SECOND / 2);
    if (sample != NULL)
      return sample;
    for (guint i = 0; i < n; i++)
      if ((*error = dq_bus_error (pipelines[i])) != NULL)
        return NULL;
  }
  return NULL;
}

#endif
