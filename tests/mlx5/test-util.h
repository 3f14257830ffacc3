/* Helpers of the mlx5 tests: frames with a sequence number and a payload derived from
 * it (headers written with engine/dq-packet.h), checksums computed independently of the
 * emulated device (the reference RFC 1071 of tests/common), the exact line-rate
 * timestamp formula of mlx5/emu/emu.h, GPU device memory played on the CPU, and the check
 * of a refused configuration. */
#ifndef DAQIRI_TEST_MLX5_UTIL_H
#define DAQIRI_TEST_MLX5_UTIL_H

#include <glib.h>

#include "daqiri-engine.h"

G_BEGIN_DECLS

#define TU_PROTO_UDP 17
#define TU_PROTO_TCP 6
#define TU_PROTO_ICMP 1
/* the sequence number: big-endian at this offset of every test frame (UDP payload) */
#define TU_SEQ_OFFSET 42

typedef struct {
  guint len;        /* whole frame, >= 46 for IPv4/UDP, >= 14 raw */
  guint8 proto;     /* TU_PROTO_*, or 0: raw ethertype 0x88b5 frame */
  guint32 src, dst; /* IPv4, host order */
  guint16 sport, dport;
  guint ip_options;    /* 32-bit words of IPv4 options (0..10) */
  gboolean good_csums; /* write correct checksums (else zero / garbage) */
} TuFrameSpec;

/* Builds a frame: Ethernet (to 02:00:00:00:00:02 from 02:00:00:00:00:01), IPv4 with the
 * L4 header of `proto`, the sequence number at TU_SEQ_OFFSET (raw frames: at 14), the
 * rest tu_payload_byte (seq, i). */
void tu_frame_build (guint8 *frame, const TuFrameSpec *spec, guint32 seq);
guint8 tu_payload_byte (guint32 seq, guint i);
/* checks a received frame against tu_frame_build's, ignoring checksum fields */
gboolean tu_frame_check (
    const guint8 *frame, guint len, const TuFrameSpec *spec, guint32 seq, char **why);
guint32 tu_frame_seq (const guint8 *frame, guint len);

/* RFC 1071 checksums of a frame built by tu_frame_build (0 if not applicable): the
 * IPv4 header checksum, and the TCP/UDP checksum, as they must be on the wire. */
guint16 tu_ipv4_csum (const guint8 *frame);
guint16 tu_l4_csum (const guint8 *frame);
/* where those fields are in the frame (0: none) */
guint tu_ipv4_csum_offset (const guint8 *frame);
guint tu_l4_csum_offset (const guint8 *frame);

/* mlx5/emu line-rate model: ticks from a train's first frame to frame k, given the
 * lengths of frames 0..k-1 (exact, 128-bit) */
guint64 tu_wire_ticks (
    const guint *lens, guint k, guint overhead, guint64 freq_hz, guint64 rate_bps);

/* GPU device memory played on the CPU: an address range the CPU cannot touch (PROT_NONE:
 * any direct access by the emulator or the ring code faults) whose contents live in
 * `backing`, reached only through the ring memory's write and read hooks, as a copy engine
 * reaches device memory. The next `failing_writes` writes fail. */
typedef struct {
  guint8 *mem, *backing;
  gsize size;
  guint writes, failing_writes, exports, reads;
  guint64 bytes;
} TuDeviceMem;

/* ring memory of kind DQ_MEMORY_CUDA over d (zeroed first): alloc, free, write and read
 * (counted in d->reads) as above;
 * export_dmabuf counted in d->exports and refused */
DqRingMemory tu_device_memory (TuDeviceMem *d);
/* where the test reads what the device wrote at p (inside d->mem) */
const guint8 *tu_device_view (const TuDeviceMem *d, const guint8 *p);

/* A refused device string or configuration `input`: asserts that *error is set and that its
 * message says `says` (else fails naming the input, the message and what was expected);
 * clears *error. */
void tu_assert_refused (GError **error, const char *input, const char *says);

G_END_DECLS

#endif
