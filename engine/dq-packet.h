/* dq-packet: Ethernet/IPv4/UDP headers and the Internet checksum (RFC 1071, RFC 1624),
 * the one place where daqiri writes packet headers or computes checksums.
 *
 * Contract:
 * - Plain C (stdint only): the engines, the emulated ConnectX, the plugin, the public
 *   library and the GLib-free CUDA tests all use it. Internal: not installed, and built
 *   with hidden visibility, so nothing of it is part of a library's ABI.
 * - Multi-byte header fields are written big-endian (network order); addresses and ports
 *   are passed in host order (10.0.0.1 is 0x0a000001).
 * - The headers written are the plain ones every daqiri packet has: Ethernet II without
 *   VLAN tag; IPv4 version 4, header length 20, DSCP/ECN 0, DF set, fragment offset 0,
 *   TTL 64; UDP. dq_packet_write_ipv4() fills the header checksum; the UDP checksum field
 *   is written 0 ("none") and filled by the caller when it wants one (dq_csum_l4()).
 * - Checksum sums are ones' complement sums of 16-bit big-endian words, kept unfolded in
 *   64 bits (dq_csum_add()); any grouping of partial sums folds to the same checksum as
 *   long as every part starts at an even offset of the summed data. An odd length counts
 *   its last byte as the high byte of a word padded with zero.
 * - The functions that take an IPv4 header trust its header length (ip[0] & 0xf, which
 *   must be >= 5) and read that many bytes; the L4 functions read l4_len bytes at l4.
 * - UDP: a computed checksum of 0 goes on the wire as 0xffff, since 0 means "none"
 *   (dq_csum_udp_field()).
 * - Incremental update (RFC 1624, eqn. 3): when one 16- or 32-bit field of checksummed
 *   data changes, the new checksum follows from the old one and the field's old and new
 *   values. For an IPv4 header or a UDP checksum (mapped with dq_csum_udp_field()) it is
 *   the checksum a full recomputation gives.
 */
#ifndef DAQIRI_DQ_PACKET_H
#define DAQIRI_DQ_PACKET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DQ_PACKET_ETH_LEN 14
#define DQ_PACKET_IPV4_LEN 20
#define DQ_PACKET_UDP_LEN 8
/* where the headers of an untagged Ethernet/IPv4/UDP frame are, and its UDP payload */
#define DQ_PACKET_IPV4_OFFSET DQ_PACKET_ETH_LEN
#define DQ_PACKET_UDP_OFFSET (DQ_PACKET_IPV4_OFFSET + DQ_PACKET_IPV4_LEN)
#define DQ_PACKET_PAYLOAD_OFFSET (DQ_PACKET_UDP_OFFSET + DQ_PACKET_UDP_LEN)
/* the longest frame: IPv4 total length 65535 plus the Ethernet header */
#define DQ_PACKET_MAX_LEN (DQ_PACKET_ETH_LEN + 65535)

#define DQ_PACKET_ETHERTYPE_IPV4 0x0800
#define DQ_PACKET_PROTO_TCP 6
#define DQ_PACKET_PROTO_UDP 17
#define DQ_PACKET_IPV4_FLAG_DF 0x4000
#define DQ_PACKET_IPV4_TTL 64
/* where the checksum field is: in the IPv4 header, the UDP header, the TCP header */
#define DQ_PACKET_IPV4_CSUM_OFFSET 10
#define DQ_PACKET_UDP_CSUM_OFFSET 6
#define DQ_PACKET_TCP_CSUM_OFFSET 16

/* What an Ethernet/IPv4/UDP frame's headers hold besides the lengths and checksums. */
typedef struct {
  uint8_t dst_mac[6];
  uint8_t src_mac[6];
  uint32_t src_ip; /* host order */
  uint32_t dst_ip;
  uint16_t src_port;
  uint16_t dst_port;
  uint16_t ip_id; /* IPv4 identification */
} DqPacketHeaders;

static inline void
dq_packet_put16 (uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t) (v >> 8);
  p[1] = (uint8_t) v;
}

static inline void
dq_packet_put32 (uint8_t *p, uint32_t v)
{
  dq_packet_put16 (p, (uint16_t) (v >> 16));
  dq_packet_put16 (p + 2, (uint16_t) v);
}

static inline uint16_t
dq_packet_get16 (const uint8_t *p)
{
  return (uint16_t) ((p[0] << 8) | p[1]);
}

static inline uint32_t
dq_packet_get32 (const uint8_t *p)
{
  return (uint32_t) dq_packet_get16 (p) << 16 | dq_packet_get16 (p + 2);
}

/* ---- headers ---- */

/* The 14-byte Ethernet header at frame: destination, source, ethertype. */
void dq_packet_write_eth (
    uint8_t *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6], uint16_t ethertype);

/* The 20-byte IPv4 header at ip (see the top for the fixed fields), header checksum
 * included. */
void dq_packet_write_ipv4 (
    uint8_t *ip, uint16_t total_len, uint16_t id, uint8_t proto, uint32_t src_ip, uint32_t dst_ip);

/* The 8-byte UDP header at udp, checksum field 0. */
void dq_packet_write_udp (uint8_t *udp, uint16_t src_port, uint16_t dst_port, uint16_t len);

/* The 42 bytes of Ethernet, IPv4 and UDP headers of a frame of frame_len bytes (IPv4 total
 * length frame_len - 14, UDP length frame_len - 34), IPv4 header checksum filled, UDP
 * checksum 0. Returns 0, or -1 (nothing written) when frame_len is outside
 * DQ_PACKET_PAYLOAD_OFFSET..DQ_PACKET_MAX_LEN. */
int dq_packet_write_headers (uint8_t *frame, size_t frame_len, const DqPacketHeaders *h);

/* ---- checksums ---- */

/* sum plus the ones' complement sum of the len bytes at p, unfolded */
uint64_t dq_csum_add (uint64_t sum, const void *p, size_t len);

/* sum plus the two 16-bit words of v */
static inline uint64_t
dq_csum_add32 (uint64_t sum, uint32_t v)
{
  return sum + (v >> 16) + (v & 0xffff);
}

/* a sum folded to 16 bits (end-around carry): the ones' complement sum */
uint16_t dq_csum_fold (uint64_t sum);

/* the checksum field for a sum: its folded ones' complement, complemented */
static inline uint16_t
dq_csum_finish (uint64_t sum)
{
  return (uint16_t) ~dq_csum_fold (sum);
}

/* a computed UDP checksum as it goes on the wire: 0 becomes 0xffff */
static inline uint16_t
dq_csum_udp_field (uint16_t csum)
{
  return csum == 0 ? 0xffff : csum;
}

/* The IPv4 pseudo header's sum: the source and destination address of the header at ip,
 * the protocol and the L4 length. */
uint64_t dq_csum_pseudo_ipv4 (const uint8_t *ip, uint8_t proto, uint32_t l4_len);

/* The header checksum of the IPv4 header at ip, its checksum field read as 0. */
uint16_t dq_csum_ipv4 (const uint8_t *ip);

/* Writes dq_csum_ipv4 (ip) into the header's checksum field. */
void dq_packet_fill_ipv4_csum (uint8_t *ip);

/* The TCP or UDP checksum (proto) of the l4_len bytes of segment at l4 behind the IPv4
 * header at ip, the segment's checksum field read as it is (the caller zeroes it): the
 * complemented sum, without the UDP 0 -> 0xffff rule. */
uint16_t dq_csum_l4 (const uint8_t *ip, uint8_t proto, const uint8_t *l4, uint32_t l4_len);

/* Whether the IPv4 header at ip, and the TCP/UDP segment at l4 with its pseudo header,
 * verify: their ones' complement sum, checksum field included, is 0xffff. (A UDP checksum
 * of 0, "none", is the caller's to accept.) */
int dq_csum_ipv4_ok (const uint8_t *ip);
int dq_csum_l4_ok (const uint8_t *ip, uint8_t proto, const uint8_t *l4, uint32_t l4_len);

/* RFC 1624: the checksum csum after a 16-bit word (or two words) of the summed data
 * changed from old to new. */
uint16_t dq_csum_update16 (uint16_t csum, uint16_t old_word, uint16_t new_word);
uint16_t dq_csum_update32 (uint16_t csum, uint32_t old_value, uint32_t new_value);

#ifdef __cplusplus
}
#endif

#endif
