/* Send scheduling and packet pacing on the emulated ConnectX, through the engine API:
 *
 *   schedule  frames leave at their times to the ns: the RX timestamps of the loopback
 *             equal the times asked for, and frames that find the wire busy follow the
 *             line-rate model's exact formula (tests/mlx5/test-util.h)
 *   late      frames whose time has passed: sent at once or dropped, counted exactly
 *   held      a frame 2 s ahead does not leave within 1 s (and is not sent when the
 *             sender is woken); one 1.5 s ahead is held, then leaves at its time
 *   refusals  a port clock that is not real time, times on a queue made without
 *             scheduling, rates out of range
 *   rate      1, 10 and 50 Gb/s held for one second of the port clock, within 1 %
 */
#include "daqiri-engine.h"
#include "emu.h"
#include "test-util.h"
#include "dq-test-port.h"

#include <string.h>

#define MS G_GUINT64_CONSTANT (1000000)
#define FRAME 200

static guint32 next_group = 0x7000;

typedef struct {
  DqPort *port;
  EmuPort *ep;
  DqRxQueue *rxq;
  DqTxQueue *txq;
} Rig;

/* A port `device` (emu:NAME,...), an RX queue on it unless `peer` says the cable leads
 * elsewhere, and a TX queue made with `tc`. */
static void
rig_open (Rig *r, const char *device, const DqTxConfig *tc, gboolean rx)
{
  r->port = dq_test_port_open (device);
  const char *name = device + strlen ("emu:");
  gchar *port_name = g_strndup (name, strcspn (name, ","));
  r->ep = emu_port_lookup (port_name);
  g_free (port_name);
  r->rxq = NULL;
  if (rx) {
    DqRxConfig rc = { .burst_packets = 64,
      .burst_timeout_ns = 1 * MS,
      .ring_bytes = 16 << 20,
      .max_packet_size = 2048,
      .n_queues = 1,
      .group_id = next_group++ };
    r->rxq = dq_test_rxq_create (r->port, &rc);
  }
  r->txq = dq_test_txq_create (r->port, tc);
}

static void
rig_close (Rig *r)
{
  dq_txq_destroy (r->txq);
  if (r->rxq != NULL)
    dq_rxq_destroy (r->rxq);
  emu_port_unref (r->ep);
  dq_port_unref (r->port);
}

static const TuFrameSpec spec = {
  .len = FRAME, .proto = TU_PROTO_UDP, .src = 0x0a000001, .dst = 0x0a000002, .dport = 5000
};

/* Sends frames first .. first + n - 1 with times[] (NULL: none). */
static void
send_frames (Rig *r, guint32 first, guint n, const guint64 *times)
{
  guint8 *buf = g_malloc ((gsize) n * FRAME);
  const guint8 **frames = g_new (const guint8 *, n);
  guint32 *lens = g_new (guint32, n);
  for (guint i = 0; i < n; i++) {
    tu_frame_build (buf + (gsize) i * FRAME, &spec, first + i);
    frames[i] = buf + (gsize) i * FRAME;
    lens[i] = FRAME;
  }
  GError *error = NULL;
  g_assert_cmpint (dq_txq_send_at (r->txq, frames, lens, times, n, &error), ==, n);
  g_assert_no_error (error);
  g_free (buf);
  g_free (frames);
  g_free (lens);
}

/* Receives n frames in order, frame i with sequence number seqs[i] (NULL: first + i),
 * storing their timestamps. */
static void
receive_seqs (Rig *r, guint32 first, const guint32 *seqs, guint n, guint64 *stamps)
{
  guint got = 0;
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (got < n) {
    g_assert_cmpint (g_get_monotonic_time (), <, deadline);
    DqBurst b;
    GError *error = NULL;
    int rc = dq_rxq_poll (r->rxq, &b, 20 * MS, &error);
    g_assert_no_error (error);
    if (rc == 0)
      continue;
    for (guint i = 0; i < b.n_packets; i++) {
      const DqPacket *p = &b.packets[i];
      g_assert_cmpuint (got, <, n);
      char *why = NULL;
      guint32 want = seqs != NULL ? seqs[got] : first + got;
      if (!tu_frame_check (b.data + p->offset, p->length, &spec, want, &why))
        g_error ("frame %u: %s", want, why);
      stamps[got++] = p->timestamp;
    }
    dq_rxq_release (r->rxq, &b);
  }
}

static void
receive_frames (Rig *r, guint32 first, guint n, guint64 *stamps)
{
  receive_seqs (r, first, NULL, n, stamps);
}

static void
assert_nothing_more (Rig *r)
{
  DqBurst b;
  GError *error = NULL;
  g_assert_cmpint (dq_rxq_poll (r->rxq, &b, 30 * MS, &error), ==, 0);
  g_assert_no_error (error);
}

static guint64
port_now (Rig *r)
{
  return dq_port_time (r->port);
}

/* ---------------------------------------------------------------------------------- */

/* Every frame leaves at its time: spaced ones at exactly their times, a group with one
 * time back to back from it, as the line-rate model puts frames on a busy wire; frames
 * without a time between scheduled ones go right after them. */
static void
test_schedule (void)
{
  DqTxConfig tc = { .max_packet_size = 2048, .scheduled = TRUE };
  Rig r;
  rig_open (&r, "emu:sch0,clock=rt", &tc, TRUE);

  const guint n = 300;
  guint64 times[300], stamps[300];
  guint64 t0 = port_now (&r) + 100 * MS;
  for (guint i = 0; i < 200; i++)
    times[i] = t0 + (guint64) i * 37123; /* ~37 us apart: the wire is idle at each */
  /* 100 frames at one time: back to back from it */
  guint64 tg = t0 + 200 * 37123 + 5 * MS;
  for (guint i = 200; i < n; i++)
    times[i] = tg;
  send_frames (&r, 0, n, times);
  receive_frames (&r, 0, n, stamps);
  assert_nothing_more (&r);

  for (guint i = 0; i < 200; i++)
    if (stamps[i] != times[i])
      g_error ("frame %u left at %" G_GUINT64_FORMAT ", asked %" G_GUINT64_FORMAT
               " (%+" G_GINT64_FORMAT " ns)",
          i, stamps[i], times[i], (gint64) (stamps[i] - times[i]));
  guint lens[100];
  for (guint k = 0; k < 100; k++)
    lens[k] = FRAME;
  for (guint k = 0; k < 100; k++) {
    guint64 want = tg + tu_wire_ticks (lens, k, 24, 1000000000, G_GUINT64_CONSTANT (100000000000));
    g_assert_cmpuint (stamps[200 + k], ==, want);
  }

  DqTxStats st;
  dq_txq_stats (r.txq, &st);
  g_assert_cmpuint (st.packets, ==, n);
  g_assert_cmpuint (st.scheduled, ==, n);
  g_assert_cmpuint (st.late, ==, 0);
  g_assert_cmpuint (st.held, ==, 0);
  EmuCounters c;
  emu_port_counters (r.ep, &c);
  g_assert_cmpuint (c.tx_waits, ==, n);

  /* unscheduled frames (time 0) behind a scheduled one: right behind it, no WAIT */
  guint64 t1 = port_now (&r) + 100 * MS;
  guint64 mixed[4] = { t1, 0, 0, t1 + 1 * MS };
  send_frames (&r, n, 4, mixed);
  receive_frames (&r, n, 4, stamps);
  g_assert_cmpuint (stamps[0], ==, t1);
  g_assert_cmpuint (stamps[1], ==, t1 + tu_wire_ticks (lens, 1, 24, 1000000000, 100000000000));
  g_assert_cmpuint (stamps[2], ==, t1 + tu_wire_ticks (lens, 2, 24, 1000000000, 100000000000));
  g_assert_cmpuint (stamps[3], ==, t1 + 1 * MS);
  emu_port_counters (r.ep, &c);
  g_assert_cmpuint (c.tx_waits, ==, n + 2);
  dq_txq_stats (r.txq, &st);
  g_assert_cmpuint (st.scheduled, ==, n + 2);
  rig_close (&r);
}

/* Frames whose time has passed: with late=send they go at once (no WAIT), with
 * late=drop they are not sent; both counted exactly, the frames around them on time. */
static void
test_late (void)
{
  for (int drop = 0; drop <= 1; drop++) {
    DqTxConfig tc = {
      .max_packet_size = 2048, .scheduled = TRUE, .late = drop ? DQ_TX_LATE_DROP : DQ_TX_LATE_SEND
    };
    Rig r;
    rig_open (&r, drop ? "emu:late1,clock=rt" : "emu:late0,clock=rt", &tc, TRUE);
    guint64 now = port_now (&r);
    /* 10 on time, 5 late (one of them 3 s late, inside the WAIT's window), 10 on time */
    guint64 times[25];
    for (guint i = 0; i < 25; i++)
      times[i] = now + 100 * MS + (guint64) i * 100000;
    for (guint i = 10; i < 15; i++)
      times[i] = now - (i == 12 ? 3000 * MS : 1 * MS);
    send_frames (&r, 0, 25, times);
    guint64 stamps[25];
    if (drop) {
      guint32 seqs[20];
      guint64 got[20];
      for (guint i = 0; i < 20; i++)
        seqs[i] = i < 10 ? i : i + 5;
      receive_seqs (&r, 0, seqs, 20, got);
      for (guint i = 0; i < 20; i++)
        stamps[seqs[i]] = got[i];
    } else {
      receive_frames (&r, 0, 25, stamps);
      /* sent at once: right behind frame 9, back to back */
      for (guint i = 10; i < 15; i++)
        g_assert_cmpuint (stamps[i], ==,
            stamps[9] + (guint64) (i - 9) * (FRAME + 24) * 8 / 100); /* 100 Gb/s, 1 GHz */
    }
    assert_nothing_more (&r);
    for (guint i = 0; i < 25; i++)
      if (i < 10 || i >= 15)
        g_assert_cmpuint (stamps[i], ==, times[i]);
    DqTxStats st;
    dq_txq_stats (r.txq, &st);
    g_assert_cmpuint (st.late, ==, 5);
    g_assert_cmpuint (st.late_dropped, ==, drop ? 5 : 0);
    g_assert_cmpuint (st.packets, ==, drop ? 20 : 25);
    g_assert_cmpuint (st.scheduled, ==, drop ? 20 : 25);
    EmuCounters c;
    emu_port_counters (r.ep, &c);
    g_assert_cmpuint (c.tx_waits, ==, 20);
    g_assert_cmpuint (c.tx_packets, ==, drop ? 20 : 25);
    rig_close (&r);
  }
}

typedef struct {
  Rig *rig;
  guint64 time;
  guint32 seq;
  int consumed;
} Sender;

static gpointer
sender_run (gpointer data)
{
  Sender *s = data;
  guint8 frame[FRAME];
  tu_frame_build (frame, &spec, s->seq);
  const guint8 *frames[1] = { frame };
  guint32 lens[1] = { FRAME };
  GError *error = NULL;
  s->consumed = dq_txq_send_at (s->rig->txq, frames, lens, &s->time, 1, &error);
  g_assert_no_error (error);
  return NULL;
}

/* A frame 2 s ahead is held by the sender for 1 s (the horizon), then waits in the
 * device behind its WAIT: in a run that ends after 1.2 s it never leaves. A wakeup ends a
 * send that holds a frame, without it. One 1.5 s ahead is held for 0.5 s, handed to the
 * device with its WAIT and leaves at its time. */
static void
test_held (void)
{
  DqTxConfig tc = { .max_packet_size = 2048, .scheduled = TRUE };
  Rig r;
  rig_open (&r, "emu:held0,clock=rt", &tc, TRUE);

  Sender s = { .rig = &r, .time = port_now (&r) + 2000 * MS, .seq = 0, .consumed = -2 };
  GThread *th = g_thread_new ("sender", sender_run, &s);
  g_usleep (1200 * 1000);
  g_thread_join (th);
  g_assert_cmpint (s.consumed, ==, 1);
  EmuCounters c;
  emu_port_counters (r.ep, &c);
  g_assert_cmpuint (c.tx_packets, ==, 0);
  g_assert_cmpuint (c.tx_waits, ==, 0);
  DqTxStats st;
  dq_txq_stats (r.txq, &st);
  g_assert_cmpuint (st.held, ==, 1);
  assert_nothing_more (&r);
  rig_close (&r);
  rig_open (&r, "emu:held1,clock=rt", &tc, TRUE);

  s = (Sender){ .rig = &r, .time = port_now (&r) + 3000 * MS, .seq = 0, .consumed = -2 };
  th = g_thread_new ("sender", sender_run, &s);
  g_usleep (500 * 1000);
  dq_txq_wakeup (r.txq);
  g_thread_join (th);
  g_assert_cmpint (s.consumed, ==, 0);
  dq_txq_stats (r.txq, &st);
  g_assert_cmpuint (st.held, ==, 1);
  g_assert_cmpuint (st.packets, ==, 0);

  guint64 t = port_now (&r) + 1500 * MS;
  gint64 start = g_get_monotonic_time ();
  send_frames (&r, 7, 1, &t);
  /* held until 1 s before its time */
  g_assert_cmpint (g_get_monotonic_time () - start, >=, 450 * 1000);
  guint64 stamp;
  receive_frames (&r, 7, 1, &stamp);
  g_assert_cmpuint (stamp, ==, t);
  g_assert_cmpuint (port_now (&r), >=, t);
  dq_txq_stats (r.txq, &st);
  g_assert_cmpuint (st.held, ==, 2);
  g_assert_cmpuint (st.packets, ==, 1);
  g_assert_cmpuint (st.scheduled, ==, 1);
  emu_port_counters (r.ep, &c);
  g_assert_cmpuint (c.tx_packets, ==, 1);
  rig_close (&r);
}


static void
test_refusals (void)
{
  GError *error = NULL;
  DqPort *port = dq_port_open ("emu:ref0", &error);
  g_assert_no_error (error);
  DqTxConfig tc = { .max_packet_size = 2048, .scheduled = TRUE };
  g_assert_null (dq_txq_create (port, &tc, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG,
      (const char *const[]){ "emu:ref0", "schedule", "real-time port clock", "clock=rt", NULL });
  error = NULL;

  tc = (DqTxConfig){ .max_packet_size = 2048 };
  DqTxQueue *txq = dq_txq_create (port, &tc, &error);
  g_assert_no_error (error);
  guint8 frame[64] = { 0 };
  const guint8 *frames[1] = { frame };
  guint32 lens[1] = { 64 };
  guint64 t = 1;
  g_assert_cmpint (dq_txq_send_at (txq, frames, lens, &t, 1, &error), ==, -1);
  dq_test_expect_error (
      error, DQ_ERROR_CONFIG, (const char *const[]){ "send times", "without scheduling", NULL });
  error = NULL;
  dq_txq_destroy (txq);

  tc.rate_bps = 999999;
  g_assert_null (dq_txq_create (port, &tc, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG,
      (const char *const[]){
          "rate 999999 bit/s is out of range", "allowed 1000000 .. 100000000000", NULL });
  error = NULL;
  tc.rate_bps = G_GUINT64_CONSTANT (100000000001);
  g_assert_null (dq_txq_create (port, &tc, &error));
  dq_test_expect_error (error, DQ_ERROR_CONFIG, (const char *const[]){ "out of range", NULL });
  dq_port_unref (port);
}

/* One second of the port clock at each rate: jumbo frames written in place into the TX
 * slots, the cable leading nowhere (the device reads no payload bytes), the departures
 * of the first and the last frame from the device's counters. */
static void
test_rate (void)
{
  const guint64 rates[] = { G_GUINT64_CONSTANT (1000000000), G_GUINT64_CONSTANT (10000000000),
    G_GUINT64_CONSTANT (50000000000) };
  const guint frame = 9000;
  for (guint r_i = 0; r_i < G_N_ELEMENTS (rates); r_i++) {
    guint64 rate = rates[r_i];
    /* 16384 slots: 23 ms of frames at 50 Gb/s, so that a sender held up by a busy machine
     * does not leave the queue empty */
    DqTxConfig tc = { .max_packet_size = 9018, .ring_bytes = (gsize) 256 << 20, .rate_bps = rate };
    gchar *device = g_strdup_printf ("emu:rate%u,peer=none,mtu=9000", r_i);
    Rig r;
    rig_open (&r, device, &tc, FALSE);
    g_free (device);

    /* frames for one second at the rate, and one more: its start ends the second */
    guint64 n = rate / (8 * (guint64) frame) + 1;
    guint64 sent = 0;
    gint64 wall0 = g_get_monotonic_time ();
    guint32 lens[512];
    for (guint i = 0; i < G_N_ELEMENTS (lens); i++)
      lens[i] = frame;
    while (sent < n) {
      DqTxSlots slots;
      GError *error = NULL;
      guint want = (guint) MIN (n - sent, G_N_ELEMENTS (lens));
      int rc = dq_txq_acquire (r.txq, want, frame, &slots, -1, &error);
      g_assert_no_error (error);
      g_assert_cmpint (rc, ==, 1);
      guint k = MIN (want, slots.n_slots);
      g_assert_cmpint (dq_txq_commit (r.txq, &slots, k, lens, &error), ==, k);
      sent += k;
    }
    GError *error = NULL;
    g_assert_true (dq_txq_flush (r.txq, &error));
    gint64 wall = g_get_monotonic_time () - wall0;
    EmuCounters c;
    emu_port_counters (r.ep, &c);
    g_assert_cmpuint (c.tx_packets, ==, n);
    guint64 span = c.tx_last_start - c.tx_first_start;
    double got = (double) ((n - 1) * 8 * (guint64) frame) * 1e9 / (double) span;
    double err = (got - (double) rate) / (double) rate;
    g_print ("# rate %" G_GUINT64_FORMAT " bit/s: %.6g bit/s over %.6f s of port time "
             "(%+.4f %%), %.3f s of wall time\n",
        rate, got, (double) span / 1e9, 100 * err, (double) wall / 1e6);
    g_assert_cmpfloat (ABS (err), <, 0.01);
    /* the device held the frames: a second of port time took about a second */
    g_assert_cmpfloat ((double) span, >, 0.99e9);
    g_assert_cmpint (wall, >, 950 * 1000);
    rig_close (&r);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5/tx-timing/schedule", test_schedule);
  g_test_add_func ("/mlx5/tx-timing/late", test_late);
  g_test_add_func ("/mlx5/tx-timing/held", test_held);
  g_test_add_func ("/mlx5/tx-timing/refusals", test_refusals);
  g_test_add_func ("/mlx5/tx-timing/rate", test_rate);
  return g_test_run ();
}
