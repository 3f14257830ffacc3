/* The built-in generator's frames (see emu.h, emu_port_generate): Ethernet/IPv4/UDP
 * from 10.0.0.1:1000 to 10.0.0.2:5000, the big-endian sequence number first_seq + k at
 * offset 42 and pattern byte i = (k + i) & 0xff after it.
 *
 * Only the sequence number and the pattern change from one frame to the next, so the
 * template is made once and each frame changes it in place. The UDP checksum is the
 * fold of three parts: everything that stays (pseudo header and UDP header), the two
 * sequence number words, and the pattern's words, which depend only on k mod 256 (a
 * table of 256 sums made with the template). Partial one's complement sums fold to the
 * same checksum as the sum of the whole datagram, so the frames are the ones a
 * from-scratch checksum gives (test-emu-model checks it).
 *
 * Paced, frame k is due at start + floor (k * f / rate) ticks: the count keeps that
 * tick and the remainder, so each frame adds instead of dividing.
 */
#include "emu-private.h"
#include "emu-net.h"

#include <infiniband/mlx5dv.h>
#include <string.h>

#define GEN_IP_OFFSET 14
#define GEN_UDP_OFFSET 34
#define GEN_UDP_CSUM_OFFSET (GEN_UDP_OFFSET + 6)
/* the pattern follows the sequence number; both start at an even offset from the UDP
 * header, so their 16-bit words are the checksum's words */
#define GEN_PATTERN_OFFSET (EMU_GEN_SEQ_OFFSET + 4)

void
emu_gen_template (EmuGen * g, const guint8 dst_mac[6])
{
  guint len = g->cfg.frame_len;
  guint8 *f = g->frame;
  static const guint8 src_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0xfe };

  memset (f, 0, len);
  memcpy (f, dst_mac, 6);
  memcpy (f + 6, src_mac, 6);
  f[12] = 0x08;
  f[13] = 0x00;
  guint8 *ip = f + GEN_IP_OFFSET;
  ip[0] = 0x45;
  ip[2] = (guint8) ((len - 14) >> 8);
  ip[3] = (guint8) (len - 14);
  ip[6] = 0x40;                 /* don't fragment */
  ip[8] = 64;
  ip[9] = 17;
  ip[12] = 10;
  ip[15] = 1;
  ip[16] = 10;
  ip[19] = 2;
  guint8 *udp = f + GEN_UDP_OFFSET;
  udp[0] = 1000 >> 8;
  udp[1] = 1000 & 0xff;
  udp[2] = 5000 >> 8;
  udp[3] = 5000 & 0xff;
  udp[4] = (guint8) ((len - 34) >> 8);
  udp[5] = (guint8) (len - 34);
  emu_csum_fill (f, len, MLX5_ETH_WQE_L3_CSUM);

  /* what every frame's checksum has: the pseudo header (addresses, protocol, UDP
   * length) and the UDP header with its checksum field 0 */
  g->csum_base = emu_csum_add (0, ip + 12, 8) + ip[9] + (len - 34);
  g->csum_base = emu_csum_add (g->csum_base, udp, 8);

  /* pattern[j] = j & 0xff: frame k's pattern bytes are pattern[(k & 0xff) + i] */
  for (guint j = 0; j < len + 256; j++)
    g->pattern[j] = (guint8) j;
  for (guint r = 0; r < 256; r++)
    g->pattern_sum[r] = emu_csum_fold (emu_csum_add (0, g->pattern + r + GEN_PATTERN_OFFSET,
            len - GEN_PATTERN_OFFSET));
}

void
emu_gen_frame (EmuGen * g, guint64 k)
{
  guint len = g->cfg.frame_len;
  guint32 seq = g->cfg.first_seq + (guint32) k;
  guint r = (guint) (k & 0xff);
  guint8 *f = g->frame;

  f[EMU_GEN_SEQ_OFFSET] = (guint8) (seq >> 24);
  f[EMU_GEN_SEQ_OFFSET + 1] = (guint8) (seq >> 16);
  f[EMU_GEN_SEQ_OFFSET + 2] = (guint8) (seq >> 8);
  f[EMU_GEN_SEQ_OFFSET + 3] = (guint8) seq;
  memcpy (f + GEN_PATTERN_OFFSET, g->pattern + r + GEN_PATTERN_OFFSET,
      len - GEN_PATTERN_OFFSET);

  guint32 sum = g->csum_base + (seq >> 16) + (seq & 0xffff) + g->pattern_sum[r];
  guint16 csum = (guint16) ~emu_csum_fold (sum);
  /* UDP sends a computed 0 as 0xffff: 0 means "no checksum" */
  if (csum == 0)
    csum = 0xffff;
  f[GEN_UDP_CSUM_OFFSET] = (guint8) (csum >> 8);
  f[GEN_UDP_CSUM_OFFSET + 1] = (guint8) csum;
}

void
emu_gen_start (EmuGen * g, guint64 start_ticks, guint64 freq_hz)
{
  g->produced = 0;
  g->start_ticks = start_ticks;
  g->due_ticks = start_ticks;
  g->due_rem = 0;
  g->step_ticks = g->cfg.rate_pps != 0 ? freq_hz / g->cfg.rate_pps : 0;
  g->step_rem = g->cfg.rate_pps != 0 ? freq_hz % g->cfg.rate_pps : 0;
}

void
emu_gen_advance (EmuGen * g)
{
  __atomic_store_n (&g->produced, g->produced + 1, __ATOMIC_RELAXED);
  /* frame k is due at start + floor (k * f / rate) */
  g->due_ticks += g->step_ticks;
  g->due_rem += g->step_rem;
  if (g->due_rem >= g->cfg.rate_pps && g->cfg.rate_pps != 0) {
    g->due_rem -= g->cfg.rate_pps;
    g->due_ticks++;
  }
}
