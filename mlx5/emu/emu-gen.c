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

#include <string.h>

#include "dq-packet.h"

#define GEN_UDP_CSUM_OFFSET (DQ_PACKET_UDP_OFFSET + DQ_PACKET_UDP_CSUM_OFFSET)
/* the pattern follows the sequence number; both start at an even offset from the UDP
 * header, so their 16-bit words are the checksum's words */
#define GEN_PATTERN_OFFSET (EMU_GEN_SEQ_OFFSET + 4)

G_STATIC_ASSERT (EMU_GEN_SEQ_OFFSET == DQ_PACKET_PAYLOAD_OFFSET);

void
emu_gen_template (EmuGen *g, const guint8 dst_mac[6])
{
  guint len = g->cfg.frame_len;
  guint8 *f = g->frame;
  DqPacketHeaders h = { .src_mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0xfe },
    .src_ip = 0x0a000001,
    .dst_ip = 0x0a000002,
    .src_port = 1000,
    .dst_port = 5000 };

  memcpy (h.dst_mac, dst_mac, 6);
  memset (f, 0, len);
  dq_packet_write_headers (f, len, &h);

  /* what every frame's checksum has: the pseudo header (addresses, protocol, UDP
   * length) and the UDP header with its checksum field 0 */
  g->csum_base = dq_csum_pseudo_ipv4 (
      f + DQ_PACKET_IPV4_OFFSET, DQ_PACKET_PROTO_UDP, len - DQ_PACKET_UDP_OFFSET);
  g->csum_base = dq_csum_add (g->csum_base, f + DQ_PACKET_UDP_OFFSET, DQ_PACKET_UDP_LEN);

  /* pattern[j] = j & 0xff: frame k's pattern bytes are pattern[(k & 0xff) + i] */
  for (guint j = 0; j < len + 256; j++)
    g->pattern[j] = (guint8) j;
  for (guint r = 0; r < 256; r++)
    g->pattern_sum[r] = dq_csum_fold (
        dq_csum_add (0, g->pattern + r + GEN_PATTERN_OFFSET, len - GEN_PATTERN_OFFSET));
}

void
emu_gen_frame (EmuGen *g, guint64 k)
{
  guint len = g->cfg.frame_len;
  guint32 seq = g->cfg.first_seq + (guint32) k;
  guint r = (guint) (k & 0xff);
  guint8 *f = g->frame;

  dq_packet_put32 (f + EMU_GEN_SEQ_OFFSET, seq);
  memcpy (f + GEN_PATTERN_OFFSET, g->pattern + r + GEN_PATTERN_OFFSET, len - GEN_PATTERN_OFFSET);

  guint64 sum = dq_csum_add32 (g->csum_base, seq) + g->pattern_sum[r];
  dq_packet_put16 (f + GEN_UDP_CSUM_OFFSET, dq_csum_udp_field (dq_csum_finish (sum)));
}

void
emu_gen_start (EmuGen *g, guint64 start_ticks, guint64 freq_hz)
{
  g->produced = 0;
  g->start_ticks = start_ticks;
  g->due_ticks = start_ticks;
  g->due_rem = 0;
  g->step_ticks = g->cfg.rate_pps != 0 ? freq_hz / g->cfg.rate_pps : 0;
  g->step_rem = g->cfg.rate_pps != 0 ? freq_hz % g->cfg.rate_pps : 0;
}

void
emu_gen_advance (EmuGen *g)
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
