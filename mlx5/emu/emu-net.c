/* Packet knowledge of the emulated ConnectX: the headers its checksum offload, checksum
 * verification and RSS look at. Every read is bounded by the frame length. */
#include "emu-net.h"
#include "emu.h"

#include <infiniband/mlx5dv.h>

#include "dq-packet.h"
#include "mlx5-dma.h"
#include "mlx5-rss.h"

#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88a8
#define TCP_FLAG_ACK 0x10

void
emu_parse (const guint8 *frame, guint len, EmuHeaders *h)
{
  guint off = DQ_PACKET_ETH_LEN;

  h->l3_offset = 0;
  h->l4_offset = 0;
  h->l4_len = 0;
  h->l3_type = MLX5_CQE_L3_HDR_TYPE_NONE;
  h->l4_type = MLX5_CQE_L4_HDR_TYPE_NONE;
  h->proto = 0;
  if (len < DQ_PACKET_ETH_LEN)
    return;
  guint16 type = dq_packet_get16 (frame + 12);
  /* one VLAN tag is looked through (the device does not strip it: vsd) */
  if (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ) {
    if (len < DQ_PACKET_ETH_LEN + 4)
      return;
    type = dq_packet_get16 (frame + 16);
    off += 4;
  }
  if (type == ETHERTYPE_IPV6) {
    if (len >= off + 40 && (frame[off] >> 4) == 6) {
      h->l3_offset = off;
      h->l3_type = MLX5_CQE_L3_HDR_TYPE_IPV6;
      h->proto = frame[off + 6];
    }
    return;
  }
  if (type != DQ_PACKET_ETHERTYPE_IPV4 || len < off + 20)
    return;
  const guint8 *ip = frame + off;
  guint ihl = (guint) (ip[0] & 0xf) * 4;
  guint total = dq_packet_get16 (ip + 2);
  if ((ip[0] >> 4) != 4 || ihl < 20 || len < off + ihl || total < ihl || off + total > len)
    return;
  h->l3_offset = off;
  h->l3_type = MLX5_CQE_L3_HDR_TYPE_IPV4;
  h->proto = ip[9];
  /* fragments: only the first has the L4 header, and none has the whole L4 payload */
  if (dq_packet_get16 (ip + 6) & 0x3fff)
    return;
  guint l4 = off + ihl;
  guint l4_len = total - ihl;
  guint tcp_hdr = l4_len >= 20 ? (frame[l4 + 12] >> 4) * 4u : 0;
  if (h->proto == DQ_PACKET_PROTO_UDP && l4_len >= 8) {
    h->l4_type = MLX5_CQE_L4_HDR_TYPE_UDP;
  } else if (h->proto == DQ_PACKET_PROTO_TCP && tcp_hdr >= 20 && tcp_hdr <= l4_len) {
    /* the CQE tells TCP segments apart by the ACK flag and whether payload follows */
    if (!(frame[l4 + 13] & TCP_FLAG_ACK))
      h->l4_type = MLX5_CQE_L4_HDR_TYPE_TCP_NO_ACK;
    else if (l4_len > tcp_hdr)
      h->l4_type = MLX5_CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA;
    else
      h->l4_type = MLX5_CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA;
  } else {
    return;
  }
  h->l4_offset = l4;
  h->l4_len = l4_len;
}

static guint
l4_csum_offset (const EmuHeaders *h)
{
  return h->l4_type == MLX5_CQE_L4_HDR_TYPE_UDP ? DQ_PACKET_UDP_CSUM_OFFSET
                                                : DQ_PACKET_TCP_CSUM_OFFSET;
}

guint
emu_csum_fill (guint8 *frame, guint len, guint8 cs_flags)
{
  EmuHeaders h;
  guint done = 0;

  emu_parse (frame, len, &h);
  if (h.l3_type != MLX5_CQE_L3_HDR_TYPE_IPV4)
    return 0;
  guint8 *ip = frame + h.l3_offset;
  if (cs_flags & MLX5_ETH_WQE_L3_CSUM) {
    dq_packet_fill_ipv4_csum (ip);
    done |= 1;
  }
  if ((cs_flags & MLX5_ETH_WQE_L4_CSUM) && h.l4_offset != 0) {
    guint8 *l4 = frame + h.l4_offset;
    guint at = l4_csum_offset (&h);
    dq_packet_put16 (l4 + at, 0);
    guint16 csum = dq_csum_l4 (ip, h.proto, l4, h.l4_len);
    /* UDP sends a computed 0 as 0xffff: 0 means "no checksum" */
    if (h.l4_type == MLX5_CQE_L4_HDR_TYPE_UDP)
      csum = dq_csum_udp_field (csum);
    dq_packet_put16 (l4 + at, csum);
    done |= 2;
  }
  return done;
}

guint8
emu_csum_verify (const guint8 *frame, guint len, const EmuHeaders *h)
{
  guint8 ok = MLX5_CQE_L2_OK;

  if (h->l3_type != MLX5_CQE_L3_HDR_TYPE_IPV4)
    return ok;
  const guint8 *ip = frame + h->l3_offset;
  if (dq_csum_ipv4_ok (ip))
    ok |= MLX5_CQE_L3_OK;
  if (h->l4_offset != 0) {
    const guint8 *l4 = frame + h->l4_offset;
    /* UDP checksum 0: the sender computed none */
    gboolean none = h->l4_type == MLX5_CQE_L4_HDR_TYPE_UDP &&
        dq_packet_get16 (l4 + DQ_PACKET_UDP_CSUM_OFFSET) == 0;
    if (none || dq_csum_l4_ok (ip, h->proto, l4, h->l4_len))
      ok |= MLX5_CQE_L4_OK;
  }
  return ok;
}

/* Toeplitz: for each set input bit i (most significant first) XOR in the 32 key bits
 * that start at key bit i. The key is the one the hardware path programs (mlx5-rss.h). */
guint32
emu_toeplitz (const guint8 *data, guint len)
{
  const guint8 *rss_key = mlx5_rss_default_key ();
  guint32 result = 0;
  guint64 window = 0;

  len = MIN (len, MLX5_RSS_KEY_LEN - 4);
  for (guint k = 0; k < 8; k++)
    window = (window << 8) | rss_key[k];
  for (guint i = 0; i < len; i++) {
    for (guint b = 0; b < 8; b++) {
      if (data[i] & (0x80 >> b))
        result ^= (guint32) (window >> (32 - b));
    }
    window = (window << 8) | (i + 8 < MLX5_RSS_KEY_LEN ? rss_key[i + 8] : 0);
  }
  return result;
}

guint32
emu_rss_hash (const guint8 *frame, const EmuHeaders *h)
{
  guint8 in[12];

  if (h->l3_type != MLX5_CQE_L3_HDR_TYPE_IPV4)
    return 0;
  const guint8 *ip = frame + h->l3_offset;
  for (guint i = 0; i < 8; i++)
    in[i] = ip[12 + i];
  if (h->l4_offset == 0)
    return emu_toeplitz (in, 8);
  for (guint i = 0; i < 4; i++)
    in[8 + i] = frame[h->l4_offset + i];
  return emu_toeplitz (in, 12);
}
