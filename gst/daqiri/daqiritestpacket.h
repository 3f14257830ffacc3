/* The daqiri test packet: the frame daqiritestsrc generates and tests and benchmarks verify.
 *
 * A test packet is one Ethernet frame (no FCS) of 60 to 65549 bytes, every byte of it
 * determined by the parameters, a sequence number and a flow index:
 *
 *   offset  bytes  field
 *        0      6  Ethernet destination MAC
 *        6      6  Ethernet source MAC
 *       12      2  ethertype 0x0800 (IPv4)
 *       14     20  IPv4 header: version 4, IHL 5, DSCP/ECN 0, total length = frame - 14,
 *                  identification 0, DF set, fragment offset 0, TTL 64, protocol 17 (UDP),
 *                  header checksum, source and destination address
 *       34      8  UDP header: source port, destination port = base port + flow,
 *                  length = frame - 34, checksum over the pseudo-header (0: not computed)
 *       42      4  payload byte 0..3: sequence number, big-endian
 *       46      4  payload byte 4..7: flow index, big-endian
 *       50    ...  payload byte j (j >= 8) = (seq * 31 + j * 7 + flow) & 0xff
 *
 * Multi-byte fields are big-endian (network order). The frame has no padding: every byte
 * after the UDP header is payload, so a receiver can tell a truncated or padded frame.
 *
 * Writing and checking:
 *
 *   GstDaqiriTestPacketParams params;
 *   gst_daqiri_test_packet_params_init (&params);
 *   guint len = gst_daqiri_test_packet_size (60, 1514, seq);
 *   gst_daqiri_test_packet_write (&params, frame, len, seq, flow);
 *   ...
 *   guint32 seq, flow;
 *   if (!gst_daqiri_test_packet_check (&params, frame, len, &seq, &flow))
 *     g_printerr ("bad packet: %s\n", gst_daqiri_test_packet_explain (&params, frame, len));
 */
#ifndef GST_DAQIRI_TEST_PACKET_H
#define GST_DAQIRI_TEST_PACKET_H

#include <glib.h>
/* GST_DAQIRI_API */
#include "daqiripacketmeta.h"

G_BEGIN_DECLS

/** Smallest test packet: the minimum Ethernet frame without FCS. */
#define GST_DAQIRI_TEST_PACKET_MIN_SIZE 60
/** Largest test packet: IPv4 total length 65535 plus the Ethernet header. */
#define GST_DAQIRI_TEST_PACKET_MAX_SIZE 65549
/** Offset of the UDP payload (the sequence number) from the start of the frame. */
#define GST_DAQIRI_TEST_PACKET_PAYLOAD_OFFSET 42
/** Offset of the first pattern byte (payload byte 8) from the start of the frame. */
#define GST_DAQIRI_TEST_PACKET_PATTERN_OFFSET 50

/** Payload byte @j (j >= 8, counted from the start of the UDP payload) of a test packet. */
#define GST_DAQIRI_TEST_PACKET_BYTE(seq, flow, j) \
  ((guint8) (((guint32) (seq) *31u + (guint32) (j) *7u + (guint32) (flow)) & 0xffu))

/**
 * GstDaqiriTestPacketParams:
 * @dst_mac: Ethernet destination address
 * @src_mac: Ethernet source address
 * @src_ip: IPv4 source address in host byte order (10.0.0.1 is 0x0a000001)
 * @dst_ip: IPv4 destination address in host byte order
 * @src_port: UDP source port
 * @dst_port: UDP destination port of flow 0; flow f goes to @dst_port + f
 * @udp_checksum: compute the UDP checksum (%FALSE: the checksum field is 0)
 *
 * What a test packet's headers contain besides the sequence number and flow index.
 */
typedef struct {
  guint8 dst_mac[6];
  guint8 src_mac[6];
  guint32 src_ip;
  guint32 dst_ip;
  guint16 src_port;
  guint16 dst_port;
  gboolean udp_checksum;
} GstDaqiriTestPacketParams;

/* Sets the defaults daqiritestsrc uses: 02:00:00:00:00:01 (src) to 02:00:00:00:00:02
 * (dst), 10.0.0.1 to 10.0.0.2, UDP port 5000 to 6000, UDP checksum on. */
GST_DAQIRI_API void gst_daqiri_test_packet_params_init (GstDaqiriTestPacketParams *params);

/* Writes the test packet with sequence number @seq of flow @flow as a frame of exactly
 * @frame_len bytes at @frame. Returns @frame_len, or 0 (nothing written) when @frame_len
 * is outside GST_DAQIRI_TEST_PACKET_MIN_SIZE..GST_DAQIRI_TEST_PACKET_MAX_SIZE or the
 * flow's port, dst_port + @flow, is beyond 65535. */
GST_DAQIRI_API guint gst_daqiri_test_packet_write (const GstDaqiriTestPacketParams *params,
    guint8 *frame, guint frame_len, guint32 seq, guint32 flow);

/* A frame size in [@min_size, @max_size] for packet @seq, the same on every call. Every
 * n = max - min + 1 consecutive sequence numbers starting at a multiple of n get every
 * size exactly once, in a scrambled order that differs from one such round to the next.
 * @max_size below @min_size counts as @min_size. */
GST_DAQIRI_API guint gst_daqiri_test_packet_size (guint min_size, guint max_size, guint32 seq);

/* Checks that the @len bytes at @frame are a whole, unmodified test packet: ethertype,
 * every IPv4 header field and the header checksum, the IPv4 and UDP lengths against
 * @len, the UDP checksum unless it is 0, and every payload byte. With @params (may be
 * NULL) it also checks the MACs, addresses, ports (dst_port + flow) and that the UDP
 * checksum is present exactly when @params->udp_checksum is set. Reads nothing outside
 * [@frame, @frame + @len). On success stores the sequence number and flow index in
 * @seq and @flow (both may be NULL). */
GST_DAQIRI_API gboolean gst_daqiri_test_packet_check (const GstDaqiriTestPacketParams *params,
    const guint8 *frame, gsize len, guint32 *seq, guint32 *flow);

/* The same checks as gst_daqiri_test_packet_check(); returns NULL when the frame passes,
 * otherwise a static string naming the first field that does not match. */
GST_DAQIRI_API const gchar *gst_daqiri_test_packet_explain (
    const GstDaqiriTestPacketParams *params, const guint8 *frame, gsize len);

G_END_DECLS

#endif
