/* The tests' reference Internet checksum (see dq-test-csum.h). */
#include "dq-test-csum.h"

#include <stdlib.h>
#include <string.h>

uint16_t
dq_test_rfc1071 (const uint8_t *data, size_t len)
{
  uint32_t acc = 0;

  for (size_t i = 0; i < len; i += 2) {
    uint32_t word = (uint32_t) data[i] << 8;
    if (i + 1 < len)
      word |= data[i + 1];
    acc += word;
    /* fold as we go, so the accumulator never overflows */
    if (acc > 0xffff)
      acc = (acc & 0xffff) + (acc >> 16);
  }
  return (uint16_t) ~acc;
}

uint16_t
dq_test_ipv4_csum (const uint8_t *ip)
{
  uint8_t hdr[60];
  size_t ihl = (size_t) (ip[0] & 0xf) * 4;

  memcpy (hdr, ip, ihl);
  hdr[10] = 0;
  hdr[11] = 0;
  return dq_test_rfc1071 (hdr, ihl);
}

uint16_t
dq_test_l4_csum (const uint8_t *ip)
{
  size_t ihl = (size_t) (ip[0] & 0xf) * 4;
  size_t total = (size_t) ip[2] << 8 | ip[3];
  size_t at;

  if (ip[9] == 17)
    at = 6;
  else if (ip[9] == 6)
    at = 16;
  else
    return 0;
  size_t seg_len = total - ihl;
  uint8_t *buf = malloc (12 + seg_len);
  if (buf == NULL)
    abort ();
  memcpy (buf, ip + 12, 8); /* source and destination address */
  buf[8] = 0;
  buf[9] = ip[9];
  buf[10] = (uint8_t) (seg_len >> 8);
  buf[11] = (uint8_t) seg_len;
  memcpy (buf + 12, ip + ihl, seg_len);
  buf[12 + at] = 0;
  buf[12 + at + 1] = 0;
  uint16_t csum = dq_test_rfc1071 (buf, 12 + seg_len);
  free (buf);
  if (csum == 0 && ip[9] == 17)
    csum = 0xffff;
  return csum;
}
