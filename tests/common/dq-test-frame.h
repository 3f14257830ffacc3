/* The addresses of the tests' and benchmarks' own frames: Ethernet/IPv4/UDP from
 * 02:00:00:00:00:01, 10.0.0.1 to 02:00:00:00:00:02, 10.0.0.2, between the ports given, for
 * dq_packet_write_headers. Header only, plain C (the CUDA tests have no GLib). Frames that
 * model another sender (the emulated port's generator, a reference capture) set their own. */
#ifndef DAQIRI_TEST_DQ_TEST_FRAME_H
#define DAQIRI_TEST_DQ_TEST_FRAME_H

#include "dq-packet.h"

static inline DqPacketHeaders
dq_test_headers (uint16_t src_port, uint16_t dst_port)
{
  const DqPacketHeaders h = { .dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
    .src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
    .src_ip = 0x0a000001,
    .dst_ip = 0x0a000002,
    .src_port = src_port,
    .dst_port = dst_port };
  return h;
}

#endif
