/* RSS as daqiri sets it up on a ConnectX, one definition for the hardware control path
 * (mlx5/hw: the RQT and the indirect TIR it creates) and the emulated device (mlx5/emu:
 * the hash it computes and the RQ it picks), so that both spread a flow alike.
 *
 * What a caller may rely on:
 *  - The hash is Toeplitz with the 40-byte key mlx5_rss_default_key () (the key of
 *    Microsoft's RSS specification, 6d5a56da...), first key byte first, as the TIR's
 *    rx_hash_toeplitz_key holds it.
 *  - The hash input is the fields as they lie on the wire (network byte order), in the
 *    order a ConnectX takes them: IPv4 source address, destination address, then the
 *    L4 source port and destination port (12 bytes) for TCP and UDP; the two addresses
 *    alone (8 bytes) for other IPv4 packets and for fragments. This is the input of
 *    DPDK's rte_softrss over host-order words (src, dst, sport << 16 | dport).
 *  - An RQT for n RQs has mlx5_rss_rqt_size (n) entries (the next power of two), entry
 *    i naming RQ i mod n; a packet goes to the entry its hash's low bits pick
 *    (hash & (size - 1)), so one flow always lands on one RQ.
 * Plain C, no state; nothing here talks to a device.
 */
#ifndef DAQIRI_MLX5_RSS_H
#define DAQIRI_MLX5_RSS_H

#include <glib.h>

G_BEGIN_DECLS

#define MLX5_RSS_KEY_LEN 40

/* the default Toeplitz key: one copy, whoever asks */
static inline const guint8 *
mlx5_rss_default_key (void)
{
  static const guint8 key[MLX5_RSS_KEY_LEN] = { 0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
    0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
    0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01,
    0xfa };
  return key;
}

/* entries of the RQT for n RQs: the next power of two >= n (1 for n = 0) */
static inline guint
mlx5_rss_rqt_size (guint n_rqs)
{
  guint size = 1;
  while (size < n_rqs)
    size <<= 1;
  return size;
}

/* the RQ (0 .. n_rqs - 1) that the RQT over n_rqs RQs gives a packet of hash `hash` */
static inline guint
mlx5_rss_rqt_pick (guint32 hash, guint n_rqs)
{
  return (hash & (mlx5_rss_rqt_size (n_rqs) - 1)) % MAX (n_rqs, 1);
}

G_END_DECLS

#endif /* DAQIRI_MLX5_RSS_H */
