/* What the emulated ConnectX knows about packets: header parsing for checksum offload
 * and verification, and the RSS hash. Reads only within [frame, frame + len). */
#ifndef DAQIRI_MLX5_EMU_NET_H
#define DAQIRI_MLX5_EMU_NET_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  guint l3_offset; /* IPv4/IPv6 header, 0 if none */
  guint l4_offset; /* TCP/UDP header, 0 if none (or a fragment) */
  guint l4_len;    /* TCP/UDP header + payload by the IP length */
  guint8 l3_type;  /* MLX5_CQE_L3_HDR_TYPE_* */
  guint8 l4_type;  /* MLX5_CQE_L4_HDR_TYPE_*: NONE, UDP or one of the three TCP kinds */
  guint8 proto;    /* IP protocol */
} EmuHeaders;

void emu_parse (const guint8 *frame, guint len, EmuHeaders *h);

/* Computes the checksums `cs_flags` (MLX5_ETH_WQE_L3_CSUM / L4_CSUM) ask for, in the
 * frame (the arithmetic is dq-packet.h's). Returns the checksums written as (L3 ? 1 : 0) | (L4 ? 2 : 0). */
guint emu_csum_fill (guint8 *frame, guint len, guint8 cs_flags);

/* hds_ip_ext bits (MLX5_CQE_L2_OK | L3_OK | L4_OK) for a received frame: L3_OK when an
 * IPv4 header checksum verifies, L4_OK when the TCP/UDP checksum does (UDP checksum 0:
 * none sent, OK). */
guint8 emu_csum_verify (const guint8 *frame, guint len, const EmuHeaders *h);

/* The RSS input of a frame hashed with Toeplitz, as mlx5-rss.h defines it: IPv4 source
 * and destination address, then for TCP and UDP (not fragments) the source and
 * destination port, as on the wire; 0 for frames that are not IPv4. */
guint32 emu_rss_hash (const guint8 *frame, const EmuHeaders *h);

G_END_DECLS

#endif
