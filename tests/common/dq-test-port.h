/* Opening a port in a test or benchmark that cannot go on without it. The helper's source
 * is compiled into each program that uses it (dq_test_port_dep), so that it calls the
 * engine registry that program links, whether the engine library or the plugin's own
 * objects. */
#ifndef DAQIRI_TEST_DQ_TEST_PORT_H
#define DAQIRI_TEST_DQ_TEST_PORT_H

#include "daqiri-engine.h"

/* The port of device, opened with dq_port_open: never NULL (the caller dq_port_unrefs
 * it). A port that does not open, or that opens with an error set anyway, ends the
 * program with a message that names the device and the engine's error, which fails the
 * test that asked for it. */
DqPort *dq_test_port_open (const char *device);

#endif
