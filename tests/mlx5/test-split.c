/* Header-data split on the emulated ConnectX, through the host ring code (mlx5/rx.c) and
 * the control path, without the engine: the geometry and its refusals; every packet's
 * first header_size bytes in the host header ring and the rest in the payload ring, byte
 * for byte, across ring wrap-around and burst ends; a payload ring in device memory the
 * CPU cannot touch, written by batched copies; an error completion mid-stream, the flush,
 * the recovery, and every packet accounted for.
 */
#include "emu.h"
#include "mini-port.h"
#include "test-util.h"

#include <string.h>

#define HEADER 42

typedef struct {
  gpointer dev;
  EmuPort *port;
  DqPortInfo info;
  Mlx5Caps caps;
  Mlx5Rxq *rx;
  guint header_size, hdr_stride, payload_stride;
} Rig;

static void
rig_open (Rig *r, const char *spec, gsize ring, const DqRingMemory *memory)
{
  GError *error = NULL;
  memset (r, 0, sizeof *r);
  r->dev = emu_port_ops.open (spec, &r->info, &r->caps, &error);
  g_assert_no_error (error);
  r->port = r->dev;
  Mlx5RxGeometry geo;
  g_assert_true (
      mlx5_rx_geometry_split (&r->caps, "t", ring, 1518, r->info.mtu + 18, HEADER, &geo, &error));
  g_assert_no_error (error);
  geo.memory = memory;
  r->rx = mlx5_rxq_new (&emu_port_ops, r->dev, &r->caps, &geo, &error);
  g_assert_no_error (error);
  mlx5_rxq_split_layout (r->rx, &r->header_size, &r->hdr_stride, &r->payload_stride);
  Mlx5Rq *rq = mlx5_rxq_rq (r->rx);
  g_assert_true (emu_port_ops.flows_set (r->dev, 1, &rq, 1, NULL, 0, &error));
  g_assert_no_error (error);
}

static void
rig_close (Rig *r)
{
  mlx5_rxq_free (r->rx);
  emu_port_ops.close (r->dev);
}

/* the size of test frame k: 60 .. 1514, some shorter than the header slot */
static guint
frame_len (guint32 k)
{
  return k % 7 == 0 ? 60 : 60 + (k * 131) % 1455;
}

static void
inject (Rig *r, guint32 first, guint32 n)
{
  guint8 frame[1514];
  for (guint32 k = first; k < first + n; k++) {
    TuFrameSpec spec = { .len = frame_len (k), .proto = TU_PROTO_UDP, .good_csums = TRUE };
    tu_frame_build (frame, &spec, k);
    g_assert_true (emu_port_inject (r->port, frame, spec.len));
  }
}

/* What a drain saw. */
typedef struct {
  guint32 next;  /* the sequence number expected next */
  guint packets; /* checked */
  guint bursts;
  guint max_burst;
} Seen;

/* Checks one packet: its header bytes at `hdr`, the rest at `payload` (read through
 * `payload_view`, the host's view of the payload memory: itself, or a device memory's
 * backing copy). */
static void
check_packet (Rig *r, const DqPacket *pkt, const guint8 *hdr, const guint8 *payload, guint32 seq)
{
  guint8 want[1514];
  guint len = frame_len (seq);
  TuFrameSpec spec = { .len = len, .proto = TU_PROTO_UDP, .good_csums = TRUE };
  tu_frame_build (want, &spec, seq);
  g_assert_cmpuint (pkt->length, ==, len);
  guint head = MIN (len, r->header_size);
  g_assert_cmpmem (hdr, head, want, head);
  if (len > head)
    g_assert_cmpmem (payload, len - head, want + head, len - head);
  g_assert_true (pkt->flags & DQ_PACKET_FLAG_CSUM_OK);
}

/* Polls until `want` packets came, checking each in sequence from s->next; every burst is
 * released at once and the ring refilled.
 * payload_view maps a payload pointer to where the test reads it. */
static void
drain (Rig *r, Seen *s, guint want, const guint8 *(*payload_view) (const guint8 *, gpointer),
    gpointer user)
{
  DqPacket pkts[64];
  gint64 deadline = g_get_monotonic_time () + 5 * G_TIME_SPAN_SECOND;
  guint got = 0;
  while (got < want && g_get_monotonic_time () < deadline) {
    Mlx5RxBurst b = { 0 };
    mlx5_rxq_refill (r->rx);
    mlx5_rxq_poll (r->rx, &b, pkts, G_N_ELEMENTS (pkts));
    if (b.n_packets == 0) {
      g_usleep (100);
      continue;
    }
    const guint8 *hdr = mlx5_rxq_burst_data (r->rx, &b);
    const guint8 *pay = mlx5_rxq_burst_payload (r->rx, &b);
    g_assert_cmpuint (b.strides, ==, b.n_packets);
    g_assert_cmpuint (
        mlx5_rxq_burst_payload_size (r->rx, &b), ==, (gsize) b.n_packets * r->payload_stride);
    for (guint i = 0; i < b.n_packets; i++) {
      const DqPacket *pkt = &pkts[i];
      g_assert_cmpuint (pkt->offset, ==, i * r->hdr_stride);
      const guint8 *p = pay + (pkt->offset / r->hdr_stride) * r->payload_stride;
      check_packet (r, pkt, hdr + pkt->offset, payload_view ? payload_view (p, user) : p, s->next);
      s->next++;
    }
    g_assert_cmpuint (mlx5_rxq_burst_size (r->rx, &b), ==,
        (gsize) (b.n_packets - 1) * r->hdr_stride +
            MIN (pkts[b.n_packets - 1].length, r->header_size));
    got += b.n_packets;
    s->packets += b.n_packets;
    s->bursts++;
    s->max_burst = MAX (s->max_burst, b.n_packets);
    mlx5_rxq_release (r->rx, b.wqe, b.strides);
  }
  /* everything back on the ring before the next frames come */
  mlx5_rxq_refill (r->rx);
  g_assert_cmpuint (got, ==, want);
}

/* ---------------------------------------------------------------------------------- */

static void
test_geometry (void)
{
  Mlx5Caps caps = mini_port_caps;
  Mlx5RxGeometry geo;
  GError *error = NULL;

  /* 1518-byte frames, 42 header bytes: payload slots of 1476 -> 1536, header slots 64 */
  g_assert_true (mlx5_rx_geometry_split (&caps, "t", 1 << 20, 1518, 1518, 42, &geo, &error));
  g_assert_cmpuint (geo.split_header, ==, 42);
  g_assert_cmpuint (geo.split_payload, ==, 1536);
  g_assert_cmpuint (geo.hdr_stride, ==, 64);
  g_assert_cmpuint (geo.log_wqes, ==, 9); /* 682 slots fit: 512 */
  g_assert_cmpuint (geo.log_cq_size, ==, 9);
  g_assert_cmpuint (geo.log_strides, ==, 0);
  /* a port MTU above max-packet-size sizes the payload slots: no frame can overflow */
  g_assert_true (mlx5_rx_geometry_split (&caps, "t", 1 << 20, 1518, 9018, 128, &geo, &error));
  g_assert_cmpuint (geo.split_payload, ==, 8896);
  g_assert_cmpuint (geo.hdr_stride, ==, 128);

  struct {
    gsize ring;
    guint max_packet, header;
    const char *says;
  } bad[] = {
    { 1 << 20, 1518, 13, "header-size 13 is not allowed (allowed: 14 .. 1024" },
    { 1 << 20, 1518, 1025, "header-size 1025 is not allowed" },
    { 1 << 20, 100, 100, "less than max-packet-size 100" },
    { 4096, 1518, 42, "ring-size 4096 is too small for header-data split" },
    { (gsize) 1 << 40, 1518, 42, "is more than one receive queue holds" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_assert_false (mlx5_rx_geometry_split (
        &caps, "t", bad[i].ring, bad[i].max_packet, 1518, bad[i].header, &geo, &error));
    g_assert_error (error, DQ_ERROR, DQ_ERROR_CONFIG);
    g_assert_nonnull (strstr (error->message, bad[i].says));
    g_clear_error (&error);
  }
}

/* 3 rounds of more packets than the ring holds: wrap-around, bursts ending at the ring end */
static void
test_round_trip (void)
{
  Rig r;
  rig_open (&r, "split0", 64 * 1536, NULL);
  guint slots = mlx5_rxq_n_wqes (r.rx);
  g_assert_cmpuint (slots, ==, 64);
  g_assert_cmpuint (r.header_size, ==, HEADER);
  Seen s = { 0 };
  for (guint round = 0; round < 3; round++) {
    inject (&r, s.next, 50);
    drain (&r, &s, 50, NULL, NULL);
  }
  g_assert_cmpuint (s.packets, ==, 150);
  g_assert_cmpuint (s.max_burst, <=, 64);
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_packets, ==, 150);
  g_assert_cmpuint (c.rx_out_of_buffer + c.rx_cqe_errors + c.iommu_faults, ==, 0);
  Mlx5RxCounters rc;
  mlx5_rxq_counters (r.rx, &rc);
  g_assert_cmpuint (rc.packets, ==, 150);
  g_assert_cmpuint (rc.device_errors, ==, 0);
  rig_close (&r);
}

static const guint8 *
device_view (const guint8 *p, gpointer user)
{
  return tu_device_view (user, p);
}

static void
test_device_payload (void)
{
  TuDeviceMem d;
  DqRingMemory dm = tu_device_memory (&d);
  Rig r;
  rig_open (&r, "split1", 256 * 1536, &dm);
  g_assert_cmpint (mlx5_rxq_placement (r.rx), ==, DQ_RING_GPU_COPY);
  Seen s = { 0 };
  emu_port_fault_stall (r.port, TRUE);
  inject (&r, 0, 200);
  emu_port_fault_stall (r.port, FALSE);
  drain (&r, &s, 200, device_view, &d);
  /* batches, not a copy per packet */
  g_assert_cmpuint (d.writes, >=, 1);
  g_assert_cmpuint (d.writes * 8, <=, 200);
  rig_close (&r);
}

/* an error completion mid-stream: the RQ flushes, the host recovers it, reception goes
 * on; delivered + lost = sent */
static void
test_error_recovery (void)
{
  Rig r;
  rig_open (&r, "split2", 64 * 1536, NULL);
  Seen s = { 0 };
  emu_port_fault_rx_error (r.port, 10, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  inject (&r, 0, 10);
  drain (&r, &s, 10, NULL, NULL);
  /* packet 10 meets the error; the ring is flushed and recovered */
  inject (&r, 10, 1);
  gint64 deadline = g_get_monotonic_time () + 5 * G_TIME_SPAN_SECOND;
  Mlx5RxCounters rc = { 0 };
  while (rc.recoveries == 0 && g_get_monotonic_time () < deadline) {
    DqPacket pkts[64];
    Mlx5RxBurst b = { 0 };
    mlx5_rxq_poll (r.rx, &b, pkts, 64);
    g_assert_cmpuint (b.n_packets, ==, 0);
    mlx5_rxq_refill (r.rx);
    mlx5_rxq_counters (r.rx, &rc);
    g_usleep (100);
  }
  g_assert_cmpuint (rc.recoveries, ==, 1);
  g_assert_cmpuint (rc.cqe_errors, ==, 1);
  /* the other 63 posted WQEs were flushed */
  g_assert_cmpuint (rc.flushed, ==, 63);
  s.next = 11;
  for (guint32 k = 11; k < 111; k += 50) {
    inject (&r, k, 50); /* less than the ring holds: injected frames do not wait */
    drain (&r, &s, 50, NULL, NULL);
  }
  EmuCounters c;
  emu_port_counters (r.port, &c);
  g_assert_cmpuint (c.rx_packets + c.rx_cqe_errors, ==, 111);
  g_assert_cmpuint (s.packets, ==, 110);
  rig_close (&r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5/split/geometry", test_geometry);
  g_test_add_func ("/mlx5/split/round-trip", test_round_trip);
  g_test_add_func ("/mlx5/split/device-payload", test_device_payload);
  g_test_add_func ("/mlx5/split/error-recovery", test_error_recovery);
  return g_test_run ();
}
