#include "dq-test-port.h"

DqPort *
dq_test_port_open (const char *device)
{
  GError *error = NULL;
  DqPort *port = dq_port_open (device, &error);
  if (port == NULL || error != NULL)
    g_error ("device %s does not open: %s", device, error != NULL ? error->message : "no error");
  return port;
}
