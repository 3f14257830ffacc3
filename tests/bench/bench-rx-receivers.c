/* bench-rx-receivers.c — the receivers of bench-rx, each run as a child process: see
 * bench-rx.h for the contract. */
#include "bench-rx.h"

#include <gst/daqiri/daqiripacketmeta.h>

#include "daqiri-engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define SETTLE_MS 100
#define TICK_MS 10

/* the options of the receiver this process runs */
static const BenchRxReceiver *opts;

/* user + system time of every thread of this process */
static guint64
self_cpu_ns (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return rusage_cpu_ns (&ru);
}


/* voluntary context switches of every thread of this process: how often it slept */
static guint64
self_sleeps (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return (guint64) ru.ru_nvcsw;
}

/* Time the threads of this process spent runnable but waiting for a CPU (schedstat's
 * run_delay), summed: large when other work on the receiver's CPU delayed it. */
static guint64
self_runq_delay_ns (void)
{
  guint64 sum = 0;
  GDir *dir = g_dir_open ("/proc/self/task", 0, NULL);
  if (dir == NULL)
    return 0;
  const char *tid;
  while ((tid = g_dir_read_name (dir)) != NULL) {
    gchar *path = g_strdup_printf ("/proc/self/task/%s/schedstat", tid);
    gchar *text = NULL;
    if (g_file_get_contents (path, &text, NULL, NULL)) {
      guint64 run_ns, delay_ns;
      if (sscanf (text, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &run_ns, &delay_ns) == 2)
        sum += delay_ns;
      g_free (text);
    }
    g_free (path);
  }
  g_dir_close (dir);
  return sum;
}

/* ---------------------------------------------------------------------------------- */
/* receiver side: counting until the traffic is over */

/* Decides when a receiver is done: the orchestrator said the sender finished and no
 * packet arrived for idle_ns since then. Also remembers the CPU time at the last packet,
 * so the cost of the idle wait can be reported. */
typedef struct {
  gint64 idle_ns;
  gboolean done;
  gint64 done_at;
  guint64 count;
  gint64 last_change;
  gboolean quiet;    /* the count did not change at the last look */
  guint64 cpu_quiet; /* CPU time when the current quiet spell was noticed */
  gboolean timed_out;
} IdleTracker;

static void
idle_init (IdleTracker *t, gint idle_ms)
{
  memset (t, 0, sizeof *t);
  t->idle_ns = (gint64) idle_ms * NS_PER_MS;
  t->last_change = dq_bench_mono_ns ();
  t->quiet = TRUE;
  t->cpu_quiet = self_cpu_ns ();
}

/* TRUE when the receiver should stop. Called at every look at the counter: each tick
 * of the GStreamer receivers, each wakeup without a full block of the bare loop. */
static gboolean
idle_update (IdleTracker *t, guint64 count, gint64 now)
{
  if (count != t->count) {
    t->count = count;
    t->last_change = now;
    t->quiet = FALSE;
  } else if (!t->quiet) {
    /* first look without news: what the CPU spends from here on is the idle wait */
    t->quiet = TRUE;
    t->cpu_quiet = self_cpu_ns ();
  }
  if (!t->done)
    return FALSE;
  if (now - t->done_at > 60 * NS_PER_S) {
    t->timed_out = TRUE; /* packets still trickling in a minute later */
    return TRUE;
  }
  return now - MAX (t->last_change, t->done_at) >= t->idle_ns;
}

/* Reads the orchestrator's "done" line if there is one; FALSE if it went away. */
static gboolean
idle_read_ctl (IdleTracker *t, LineReader *ctl)
{
  char line[256];
  int r;
  while ((r = read_line (ctl, line, sizeof line, 0)) > 0) {
    if (g_str_has_prefix (line, "done") && !t->done) {
      t->done = TRUE;
      t->done_at = dq_bench_mono_ns ();
    }
  }
  return r == 0;
}

static G_GNUC_NORETURN void
child_fail (const char *what, const char *detail)
{
  gchar *text = g_strdup_printf ("%s: %s", what, detail ? detail : "");
  for (char *p = text; *p; p++)
    if (*p == '\n')
      *p = ' ';
  send_line (CHILD_STATUS_FD, "error %s", text);
  fprintf (stderr, "bench-rx receiver (%s): %s\n", opts->mode, text);
  g_free (text);
  exit (1);
}

/* ---- receiver: a GStreamer pipeline (daqirisrc or udpsrc) ---- */

static guint64 probe_packets;
static guint64 probe_buffers;

/* The longest time between two deliveries while packets flowed, and when it ended (from
 * "ready"): a receiver that stalls longer than the ring lasts drops packets. */
typedef struct {
  gint64 start;
  gint64 last;
  gint64 max_gap;
  gint64 max_gap_end;
} GapMeter;

static GapMeter gaps; /* written by the streaming thread only */

/* A receiver's measuring window, from "ready" to the stop `idle` decides: the process's CPU
 * time, run-queue delay and sleeps at both ends. */
typedef struct {
  IdleTracker idle;
  guint64 cpu0, runq0, sleeps0;
  guint64 cpu1, runq1, sleeps1;
} Window;

/* Opens the window and tells the orchestrator the receiver is ready. */
static void
window_open (Window *w)
{
  w->cpu0 = self_cpu_ns ();
  w->runq0 = self_runq_delay_ns ();
  w->sleeps0 = self_sleeps ();
  idle_init (&w->idle, opts->idle_ms);
  __atomic_store_n (&gaps.start, dq_bench_mono_ns (), __ATOMIC_RELEASE);
  send_line (CHILD_STATUS_FD, "ready");
}

/* Closes the window: call as soon as the receive loop stops. */
static void
window_close (Window *w)
{
  w->cpu1 = self_cpu_ns ();
  w->runq1 = self_runq_delay_ns ();
  w->sleeps1 = self_sleeps ();
}

/* Sends the result line: what every receiver reports, then `extra` (" key=value ..."). */
static void
window_report (const Window *w, guint64 received, guint64 buffers, const char *extra)
{
  send_line (CHILD_STATUS_FD,
      "result received=%" G_GUINT64_FORMAT " buffers=%" G_GUINT64_FORMAT
      " cpu_ns=%" G_GUINT64_FORMAT " idle_cpu_ns=%" G_GUINT64_FORMAT
      " timed_out=%d max_gap_us=%" G_GINT64_FORMAT " max_gap_end_ms=%" G_GINT64_FORMAT
      " runq_delay_us=%" G_GUINT64_FORMAT " sleeps=%" G_GUINT64_FORMAT "%s",
      received, buffers, w->cpu1 - w->cpu0,
      w->cpu1 - MIN (w->cpu1, MAX (w->idle.cpu_quiet, w->cpu0)), w->idle.timed_out,
      gaps.max_gap / 1000, gaps.max_gap_end / NS_PER_MS,
      (w->runq1 - MIN (w->runq0, w->runq1)) / 1000, w->sleeps1 - MIN (w->sleeps0, w->sleeps1),
      extra);
}

static void
gap_note (GapMeter *g, gint64 now)
{
  if (g->last != 0 && now - g->last > g->max_gap) {
    g->max_gap = now - g->last;
    g->max_gap_end = now - g->start;
  }
  g->last = now;
}

static void
count_buffer (GstBuffer *buf)
{
  /* packets delivered downstream: a daqiri burst carries meta->n_packets of them, any
   * other buffer (udpsrc) one */
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
  __atomic_fetch_add (&probe_packets, meta ? meta->n_packets : 1, __ATOMIC_RELAXED);
  __atomic_fetch_add (&probe_buffers, 1, __ATOMIC_RELAXED);
  gap_note (&gaps, dq_bench_mono_ns ());
}

static gboolean
count_list_item (GstBuffer **buf, guint idx, gpointer user_data)
{
  count_buffer (*buf);
  return TRUE;
}

static GstPadProbeReturn
count_probe (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER)
    count_buffer (GST_PAD_PROBE_INFO_BUFFER (info));
  else if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST)
    gst_buffer_list_foreach (GST_PAD_PROBE_INFO_BUFFER_LIST (info), count_list_item, NULL);
  return GST_PAD_PROBE_OK;
}

/* the text of the first ERROR message on the bus, or NULL */
static gchar *
bus_error (GstBus *bus)
{
  GstMessage *msg;
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR)) != NULL) {
    GError *err = NULL;
    gchar *dbg = NULL;
    gst_message_parse_error (msg, &err, &dbg);
    gchar *text = g_strdup_printf ("%s (%s)", err->message, dbg ? dbg : "");
    g_clear_error (&err);
    g_free (dbg);
    gst_message_unref (msg);
    return text;
  }
  return NULL;
}

static guint64
stats_u64 (const GstStructure *s, const char *field)
{
  guint64 v;
  return s != NULL && gst_structure_get_uint64 (s, field, &v) ? v : UNKNOWN;
}

static int
child_gst_main (void)
{
  LineReader ctl = { .fd = CHILD_CTL_FD };
  GError *err = NULL;

  gst_init (NULL, NULL);
  GstElement *pipeline = gst_parse_launch (opts->pipeline, &err);
  if (pipeline == NULL)
    child_fail ("gst_parse_launch", err ? err->message : opts->pipeline);
  if (err != NULL)
    child_fail ("gst_parse_launch", err->message);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  if (sink == NULL || src == NULL)
    child_fail ("pipeline", "needs elements named src and sink");
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (
      pad, GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, count_probe, NULL, NULL);
  gst_object_unref (pad);

  GstBus *bus = gst_element_get_bus (pipeline);
  /* the sink of a live pipeline completes PLAYING only with the first buffer: wait for
   * the source (live: PLAYING without preroll) */
  GstState state = GST_STATE_NULL;
  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE ||
      gst_element_get_state (src, &state, NULL, 10 * GST_SECOND) == GST_STATE_CHANGE_FAILURE ||
      state != GST_STATE_PLAYING) {
    gchar *text = bus_error (bus);
    child_fail ("cannot start the pipeline", text ? text : "(no error message)");
  }
  sleep_ms (SETTLE_MS); /* streaming thread negotiated and waiting in poll */
  gchar *text = bus_error (bus);
  if (text != NULL)
    child_fail ("pipeline error", text);

  Window w;
  window_open (&w);

  for (;;) {
    struct pollfd pfd = { .fd = CHILD_CTL_FD, .events = POLLIN };
    poll (&pfd, 1, TICK_MS);
    if (!idle_read_ctl (&w.idle, &ctl))
      exit (1); /* the orchestrator is gone */
    guint64 n = __atomic_load_n (&probe_packets, __ATOMIC_RELAXED);
    if (idle_update (&w.idle, n, dq_bench_mono_ns ()))
      break;
    if ((text = bus_error (bus)) != NULL)
      child_fail ("pipeline error", text);
  }
  window_close (&w);

  GstStructure *stats = NULL;
  if (g_object_class_find_property (G_OBJECT_GET_CLASS (src), "stats") != NULL)
    g_object_get (src, "stats", &stats, NULL);
  gchar *extra =
      g_strdup_printf (" stats_packets=%" G_GUINT64_FORMAT " stats_bursts=%" G_GUINT64_FORMAT
                       " kernel_drops=%" G_GUINT64_FORMAT " ring_bytes=%" G_GUINT64_FORMAT,
          stats_u64 (stats, "packets"), stats_u64 (stats, "bursts"),
          stats_u64 (stats, "drops-ring-full"), stats_u64 (stats, "ring-bytes"));
  window_report (&w, __atomic_load_n (&probe_packets, __ATOMIC_RELAXED),
      __atomic_load_n (&probe_buffers, __ATOMIC_RELAXED), extra);
  g_free (extra);
  if (stats != NULL)
    gst_structure_free (stats);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return 0;
}

/* ---- receiver: the bare TPACKET_V3 loop ---- */

static int
child_bare_main (void)
{
  LineReader ctl = { .fd = CHILD_CTL_FD };
  const gsize block_size = opts->bare_block_size;
  const guint n_blocks = opts->bare_blocks;

  /* protocol 0: nothing arrives before bind(), when the ring is in place */
  int fd = socket (AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0)
    child_fail ("socket(AF_PACKET)", g_strerror (errno));
  int version = TPACKET_V3;
  if (setsockopt (fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) != 0)
    child_fail ("PACKET_VERSION", g_strerror (errno));
  struct tpacket_req3 req;
  memset (&req, 0, sizeof req);
  req.tp_block_size = (unsigned int) block_size;
  req.tp_block_nr = n_blocks;
  req.tp_frame_size = (unsigned int) block_size;
  req.tp_frame_nr = n_blocks;
  req.tp_retire_blk_tov = opts->bare_retire_ms;
  if (setsockopt (fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0)
    child_fail ("PACKET_RX_RING", g_strerror (errno));
  guint8 *ring =
      mmap (NULL, block_size * n_blocks, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (ring == MAP_FAILED)
    child_fail ("mmap", g_strerror (errno));
  int one = 1;
  if (setsockopt (fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) != 0)
    child_fail ("PACKET_IGNORE_OUTGOING", g_strerror (errno));
  struct sockaddr_ll sll;
  memset (&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons (ETH_P_ALL);
  sll.sll_ifindex = (int) if_nametoindex (RX_IFACE);
  if (sll.sll_ifindex == 0 || bind (fd, (struct sockaddr *) &sll, sizeof sll) != 0)
    child_fail ("bind " RX_IFACE, g_strerror (errno));

  struct tpacket_stats_v3 st;
  socklen_t st_len = sizeof st;
  getsockopt (fd, SOL_PACKET, PACKET_STATISTICS, &st, &st_len); /* resets the counters */

  guint64 received = 0, blocks = 0, snap_bytes = 0;
  guint cur = 0;
  Window w;
  window_open (&w);

  for (;;) {
    struct tpacket_block_desc *desc =
        (struct tpacket_block_desc *) (ring + (gsize) cur * block_size);
    if (__atomic_load_n (&desc->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) {
      guint n = desc->hdr.bh1.num_pkts;
      const guint8 *p = (const guint8 *) desc + desc->hdr.bh1.offset_to_first_pkt;
      for (guint i = 0; i < n; i++) {
        const struct tpacket3_hdr *h = (const struct tpacket3_hdr *) p;
        snap_bytes += h->tp_snaplen;
        p += h->tp_next_offset;
        if (opts->bare_prefetch) /* the header three packets on, if sizes stay the same */
          __builtin_prefetch (p + 2 * (gsize) h->tp_next_offset);
      }
      received += n;
      blocks++;
      gap_note (&gaps, dq_bench_mono_ns ());
      __atomic_store_n (&desc->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
      cur = (cur + 1) % n_blocks;
      continue;
    }
    struct pollfd pfd[2] = {
      { .fd = fd, .events = POLLIN },
      { .fd = CHILD_CTL_FD, .events = POLLIN },
    };
    poll (pfd, 2, TICK_MS);
    if (!idle_read_ctl (&w.idle, &ctl))
      exit (1);
    if (idle_update (&w.idle, received, dq_bench_mono_ns ()))
      break;
  }
  window_close (&w);

  memset (&st, 0, sizeof st);
  st_len = sizeof st;
  getsockopt (fd, SOL_PACKET, PACKET_STATISTICS, &st, &st_len);
  gchar *extra = g_strdup_printf (" kernel_drops=%u ring_bytes=%" G_GSIZE_FORMAT
                                  " snap_bytes=%" G_GUINT64_FORMAT,
      st.tp_drops, block_size * n_blocks, snap_bytes);
  window_report (&w, received, blocks, extra);
  g_free (extra);
  munmap (ring, block_size * n_blocks);
  close (fd);
  return 0;
}

/* ---- receiver: the afpacket engine alone ---- */

static int
child_engine_main (void)
{
  LineReader ctl = { .fd = CHILD_CTL_FD };
  GError *error = NULL;
  DqPort *port = dq_port_open ("afpacket:" RX_IFACE, &error);
  if (port == NULL)
    child_fail ("dq_port_open", error->message);
  /* daqirisrc's defaults */
  DqRxConfig rc = { .burst_packets = 256, .burst_timeout_ns = NS_PER_MS, .n_queues = 1 };
  DqRxQueue *rxq = dq_rxq_create (port, &rc, &error);
  if (rxq == NULL)
    child_fail ("dq_rxq_create", error->message);
  sleep_ms (SETTLE_MS);

  guint64 received = 0, bursts = 0;
  Window w;
  window_open (&w);

  for (;;) {
    DqBurst b;
    int r = dq_rxq_poll (rxq, &b, (gint64) TICK_MS * NS_PER_MS, &error);
    if (r < 0)
      child_fail ("dq_rxq_poll", error->message);
    if (r == 1) {
      received += b.n_packets;
      bursts++;
      gap_note (&gaps, dq_bench_mono_ns ());
      dq_rxq_release (rxq, &b);
      if ((bursts & 63) != 0)
        continue;
    }
    struct pollfd pfd = { .fd = CHILD_CTL_FD, .events = POLLIN };
    poll (&pfd, 1, 0);
    if (!idle_read_ctl (&w.idle, &ctl))
      exit (1);
    if (idle_update (&w.idle, received, dq_bench_mono_ns ()))
      break;
  }
  window_close (&w);

  DqRxStats st;
  dq_rxq_stats (rxq, &st);
  gchar *extra = g_strdup_printf (" stats_packets=%" G_GUINT64_FORMAT
                                  " kernel_drops=%" G_GUINT64_FORMAT " ring_bytes=%" G_GSIZE_FORMAT,
      st.packets, st.drops_ring_full, dq_rxq_ring_bytes (rxq));
  window_report (&w, received, bursts, extra);
  g_free (extra);
  dq_rxq_destroy (rxq);
  dq_port_unref (port);
  return 0;
}

int
bench_rx_receiver_main (const BenchRxReceiver *receiver)
{
  opts = receiver;
  if (strcmp (receiver->mode, "bare") == 0)
    return child_bare_main ();
  if (strcmp (receiver->mode, "engine") == 0)
    return child_engine_main ();
  if (strcmp (receiver->mode, "gst") == 0 && receiver->pipeline != NULL)
    return child_gst_main ();
  return -1;
}
