/* Helpers shared by the daqiri elements. */
#include "gstdaqirielement.h"

void
gst_daqiri_post_engine_error (GstElement * element, const char *what, GError * error,
    const char *file, const char *function, int line)
{
  gint code;

  switch (error->domain == DQ_ERROR ? error->code : -1) {
    case DQ_ERROR_DEVICE:
      code = GST_RESOURCE_ERROR_NOT_FOUND;
      break;
    case DQ_ERROR_PERMISSION:
      code = GST_RESOURCE_ERROR_NOT_AUTHORIZED;
      break;
    case DQ_ERROR_CONFIG:
    case DQ_ERROR_FLOW:
      code = GST_RESOURCE_ERROR_SETTINGS;
      break;
    case DQ_ERROR_BUSY:
      code = GST_RESOURCE_ERROR_BUSY;
      break;
    default:
      code = GST_RESOURCE_ERROR_FAILED;
      break;
  }
  gst_element_message_full (element, GST_MESSAGE_ERROR, GST_RESOURCE_ERROR, code,
      g_strdup_printf ("%s: %s", what, error->message), NULL, file, function, line);
}

DqPort *
gst_daqiri_open_port (GstElement * element, const char *device)
{
  if (device == NULL || *device == '\0') {
    char *engines = g_strjoinv (":IFACE, ", (char **) dq_engine_names ());
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
        ("property 'device' is not set"),
        ("set device to ENGINE:NAME, with these engines built in: %s:IFACE "
            "(for example device=afpacket:eth0)", engines));
    g_free (engines);
    return NULL;
  }
  GError *error = NULL;
  DqPort *port = dq_port_open (device, &error);
  if (port == NULL) {
    GST_DAQIRI_POST_ENGINE_ERROR (element, "property 'device'", error);
    g_error_free (error);
  }
  return port;
}
