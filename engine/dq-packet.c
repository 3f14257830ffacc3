/* Ethernet/IPv4/UDP headers and the Internet checksum (see dq-packet.h). */
#include "dq-packet.h"

#include <string.h>

void
dq_packet_write_eth (
    uint8_t *frame, const uint8_t dst_mac[6], const uint8_t src_mac[6], uint16_t ethertype)
{
  memcpy (frame, dst_mac, 6);
  memcpy (frame + 6, src_mac, 6);
  dq_packet_put16 (frame + 12, ethertype);
}

void
dq_packet_write_ipv4 (
    uint8_t *ip, uint16_t total_len, uint16_t id, uint8_t proto, uint32_t src_ip, uint32_t dst_ip)
{
  ip[0] = 0x45; /* version 4, 5 words of header */
  ip[1] = 0;
  dq_packet_put16 (ip + 2, total_len);
  dq_packet_put16 (ip + 4, id);
  dq_packet_put16 (ip + 6, DQ_PACKET_IPV4_FLAG_DF);
  ip[8] = DQ_PACKET_IPV4_TTL;
  ip[9] = proto;
  dq_packet_put32 (ip + 12, src_ip);
  dq_packet_put32 (ip + 16, dst_ip);
  dq_packet_fill_ipv4_csum (ip);
}

void
dq_packet_write_udp (uint8_t *udp, uint16_t src_port, uint16_t dst_port, uint16_t len)
{
  dq_packet_put16 (udp, src_port);
  dq_packet_put16 (udp + 2, dst_port);
  dq_packet_put16 (udp + 4, len);
  dq_packet_put16 (udp + DQ_PACKET_UDP_CSUM_OFFSET, 0);
}

int
dq_packet_write_headers (uint8_t *frame, size_t frame_len, const DqPacketHeaders *h)
{
  if (frame_len < DQ_PACKET_PAYLOAD_OFFSET || frame_len > DQ_PACKET_MAX_LEN)
    return -1;
  dq_packet_write_eth (frame, h->dst_mac, h->src_mac, DQ_PACKET_ETHERTYPE_IPV4);
  dq_packet_write_ipv4 (frame + DQ_PACKET_IPV4_OFFSET,
      (uint16_t) (frame_len - DQ_PACKET_IPV4_OFFSET), h->ip_id, DQ_PACKET_PROTO_UDP, h->src_ip,
      h->dst_ip);
  dq_packet_write_udp (frame + DQ_PACKET_UDP_OFFSET, h->src_port, h->dst_port,
      (uint16_t) (frame_len - DQ_PACKET_UDP_OFFSET));
  return 0;
}

uint64_t
dq_csum_add (uint64_t sum, const void *p, size_t len)
{
  const uint8_t *b = p;
  size_t i;

  for (i = 0; i + 1 < len; i += 2)
    sum += (uint32_t) b[i] << 8 | b[i + 1];
  if (i < len)
    sum += (uint32_t) b[i] << 8;
  return sum;
}

uint16_t
dq_csum_fold (uint64_t sum)
{
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t) sum;
}

static size_t
ipv4_header_len (const uint8_t *ip)
{
  return (size_t) (ip[0] & 0xf) * 4;
}

uint64_t
dq_csum_pseudo_ipv4 (const uint8_t *ip, uint8_t proto, uint32_t l4_len)
{
  return dq_csum_add32 (dq_csum_add (0, ip + 12, 8) + proto, l4_len);
}

uint16_t
dq_csum_ipv4 (const uint8_t *ip)
{
  const size_t after = DQ_PACKET_IPV4_CSUM_OFFSET + 2;
  uint64_t sum = dq_csum_add (0, ip, DQ_PACKET_IPV4_CSUM_OFFSET);

  return dq_csum_finish (dq_csum_add (sum, ip + after, ipv4_header_len (ip) - after));
}

void
dq_packet_fill_ipv4_csum (uint8_t *ip)
{
  dq_packet_put16 (ip + DQ_PACKET_IPV4_CSUM_OFFSET, dq_csum_ipv4 (ip));
}

uint16_t
dq_csum_l4 (const uint8_t *ip, uint8_t proto, const uint8_t *l4, uint32_t l4_len)
{
  return dq_csum_finish (dq_csum_add (dq_csum_pseudo_ipv4 (ip, proto, l4_len), l4, l4_len));
}

int
dq_csum_ipv4_ok (const uint8_t *ip)
{
  return dq_csum_fold (dq_csum_add (0, ip, ipv4_header_len (ip))) == 0xffff;
}

int
dq_csum_l4_ok (const uint8_t *ip, uint8_t proto, const uint8_t *l4, uint32_t l4_len)
{
  return dq_csum_fold (dq_csum_add (dq_csum_pseudo_ipv4 (ip, proto, l4_len), l4, l4_len)) == 0xffff;
}

/* HC' = ~(~HC + ~m + m'), all in ones' complement arithmetic */
uint16_t
dq_csum_update16 (uint16_t csum, uint16_t old_word, uint16_t new_word)
{
  uint64_t sum = (uint16_t) ~csum;

  sum += (uint16_t) ~old_word;
  sum += new_word;
  return dq_csum_finish (sum);
}

uint16_t
dq_csum_update32 (uint16_t csum, uint32_t old_value, uint32_t new_value)
{
  uint64_t sum = (uint16_t) ~csum;

  sum = dq_csum_add32 (sum, ~old_value);
  sum = dq_csum_add32 (sum, new_value);
  return dq_csum_finish (sum);
}
