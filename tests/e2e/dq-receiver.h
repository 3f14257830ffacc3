/* Test helper for end-to-end tests: a receiving pipeline (daqirisrc ! appsink) whose appsink
 * checks every packet daqiritestsrc made (gst_daqiri_test_packet_check): bytes, sequence
 * numbers (seen once each, optionally in order), the flow id the flow rules DQ_E2E_FLOWS give,
 * timestamps that never go back, and optionally the emulated ConnectX's line-rate model. Also
 * the sender side: run a pipeline to EOS and read its sink's stats. GstCheck assertions. */
#ifndef DQ_RECEIVER_H
#define DQ_RECEIVER_H

#include <gst/gst.h>
#include <gst/daqiri/daqiritestpacket.h>

G_BEGIN_DECLS

/* daqiritestsrc n-flows=4 sends to UDP ports 6000..6003; these rules mark them 10..13 */
#define DQ_E2E_N_FLOWS 4
#define DQ_E2E_MARK_BASE 10
#define DQ_E2E_FLOWS \
  "proto=udp dst-port=6000 mark=10; proto=udp dst-port=6001 mark=11; " \
  "proto=udp dst-port=6002 mark=12; proto=udp dst-port=6003 mark=13"

typedef struct _Receiver Receiver;

/* what a receiver does with each packet instead of receiver_check_frame (under its lock) */
typedef void (*ReceiverPacketFunc) (
    Receiver *r, const GstDaqiriPacket *packet, const guint8 *frame, gpointer user_data);

struct _Receiver {
  GstDaqiriTestPacketParams params;
  guint8 *seen; /* one byte per sequence number */
  guint n_expected;
  guint received;
  guint64 bytes;
  guint duplicates;
  guint bad;
  guint wrong_flow;
  guint per_flow[DQ_E2E_N_FLOWS]; /* good packets of each flow index */
  guint flow_id_zero;             /* packets delivered with flow id 0 (no rule gave it) */
  gboolean check_order;           /* one sender: sequence numbers arrive in order */
  guint out_of_order;
  gint64 last_seq;
  guint buffers;
  guint max_burst; /* the most packets one buffer carried */
  gboolean hold;   /* keep every buffer (a stalled downstream) */
  GPtrArray *held;

  /* the line-rate model (mlx5/emu/emu.h): in a train that started at T0, the frame after S
   * bits starts at T0 + floor (S * f / R); a later start means the wire was idle (new train) */
  gboolean model;
  guint64 freq_hz, rate_bps, overhead;
  guint64 t0, bits;
  guint64 trains;
  guint64 in_train;    /* packets whose time the formula gave exactly */
  guint64 model_early; /* packets earlier than the formula allows: a bug */
  guint64 last_ts;
  guint ts_backwards;

  ReceiverPacketFunc packet_func; /* NULL: receiver_check_frame */
  gpointer packet_data;

  GMutex lock;
  GCond cond;
};

void receiver_init (Receiver *r, guint n_expected);
void receiver_clear (Receiver *r);
/* forgets what arrived (for a second stream into the same receiver) */
void receiver_reset (Receiver *r);
/* checks one frame (flow_id: the mark it came with; ts: its timestamp) */
void receiver_check_frame (
    Receiver *r, const guint8 *frame, gsize len, guint32 flow_id, guint64 ts);
/* makes an appsink deliver its samples to the receiver */
void receiver_attach (Receiver *r, GstElement *appsink);
/* the same, each packet going to func (with user_data) instead of receiver_check_frame; the
 * buffers and their packet metas are still counted and validated (buffers, bad) */
void receiver_attach_full (
    Receiver *r, GstElement *appsink, ReceiverPacketFunc func, gpointer user_data);
/* waits until n packets arrived or timeout_ms passed without progress; how many arrived */
guint receiver_wait (Receiver *r, guint n, guint timeout_ms);
/* waits up to timeout_ms for a buffer after the first `before`, then lets go of all but the
 * newest `keep` held buffers; whether one came */
gboolean receiver_wait_buffer (Receiver *r, guint before, guint timeout_ms, guint keep);
/* every packet of every held buffer is a correct test packet (the caller holds the lock
 * while the pipeline runs) */
void receiver_assert_held_intact (Receiver *r);

/* the bytes daqiritestsrc sends for packets 0 .. n-1 of sizes min_size .. max_size */
guint64 test_packet_bytes (guint n, guint min_size, guint max_size);

/* Sets a pipeline PLAYING; a failure fails the test with the error the bus got. */
void play (GstElement *pipeline);
/* `daqirisrc name=src device=DEVICE flows=DQ_E2E_FLOWS EXTRA ! appsink name=sink`, PLAYING:
 * the source's queue exists when this returns */
GstElement *receiver_pipeline (Receiver *r, const gchar *device, const gchar *extra);
/* the same pipeline, attached to the receiver but left in NULL */
GstElement *receiver_pipeline_new (Receiver *r, const gchar *device, const gchar *extra);
/* receiver_init (r, n) for n packets from one sender (checked in order), then
 * receiver_pipeline (r, device, extra): the receiving pipeline (receiver_pipeline_free) */
GstElement *ordered_receiver (Receiver *r, guint n, const gchar *device, const gchar *extra);
/* the end of a test's receiving side: the pipeline set to NULL and unreffed, then the
 * receiver cleared */
void receiver_pipeline_free (Receiver *r, GstElement *rx);
/* the `stats` of the element `name` of a pipeline */
GstStructure *element_stats (GstElement *pipeline, const gchar *name);
guint64 stat_u64 (const GstStructure *s, const gchar *field);
/* runs a sender pipeline to EOS; the stats of its element "tx" */
GstStructure *run_sender (const gchar *launch);
/* run_sender of `daqiritestsrc num-packets=N PROPS ! daqirisink name=tx device=DEVICE` */
GstStructure *run_testsrc (guint n, const gchar *props, const gchar *device);
/* the pipeline's bus gets a warning whose message contains `text` within 3 s */
void assert_warning_posted (GstElement *pipeline, const gchar *text);
/* every one of packets 0 .. n-1 arrived once, correct, with its flow id; daqirisrc's stats
 * (element "src" of rx) agree and say nothing was dropped or truncated */
void assert_all_received (Receiver *r, GstElement *rx, guint n);

G_END_DECLS

#endif
