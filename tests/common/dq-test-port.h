/* Engine helpers for tests and benchmarks: opening a port a program cannot go on without,
 * and checking an engine error. The helpers' source is compiled into each program that
 * uses them (dq_test_port_dep), so that they call the engine registry that program links,
 * whether the engine library or the plugin's own objects. */
#ifndef DAQIRI_TEST_DQ_TEST_PORT_H
#define DAQIRI_TEST_DQ_TEST_PORT_H

#include "daqiri-engine.h"

/* The port of device, opened with dq_port_open: never NULL (the caller dq_port_unrefs
 * it). A port that does not open, or that opens with an error set anyway, ends the
 * program with a message that names the device and the engine's error, which fails the
 * test that asked for it. */
DqPort *dq_test_port_open (const char *device);

/* Asserts that `error` is set, has DQ_ERROR code `code` and mentions every string of the
 * NULL-terminated `parts`; frees it. */
void dq_test_expect_error (GError *error, int code, const char *const *parts);

#endif
