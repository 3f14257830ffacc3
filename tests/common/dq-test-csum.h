/* The tests' reference Internet checksum: RFC 1071 written here from the RFC, sharing no
 * code with engine/dq-packet.c, so that tests can check the product's checksums (and the
 * checksums of the frames they build with dq-packet.h) against an independent
 * computation. Plain C (the CUDA tests have no GLib); reads only the bytes named. */
#ifndef DAQIRI_TEST_DQ_TEST_CSUM_H
#define DAQIRI_TEST_DQ_TEST_CSUM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* RFC 1071 over len bytes: the 16-bit big-endian words (an odd last byte padded with
 * zero) added with end-around carry, complemented. Over data that holds a correct
 * checksum it gives 0. */
uint16_t dq_test_rfc1071 (const uint8_t *data, size_t len);

/* The header checksum the IPv4 header at ip must carry (header length from ip[0]),
 * computed over a copy with the checksum field zeroed. */
uint16_t dq_test_ipv4_csum (const uint8_t *ip);

/* The TCP (ip[9] == 6) or UDP (17) checksum the segment behind the IPv4 header at ip
 * must carry on the wire, its length taken from the IPv4 total length: computed over an
 * explicitly built pseudo header and a copy of the segment with the checksum field
 * zeroed; a UDP checksum computed as 0 is 0xffff. 0 for other protocols. */
uint16_t dq_test_l4_csum (const uint8_t *ip);

#ifdef __cplusplus
}
#endif

#endif
