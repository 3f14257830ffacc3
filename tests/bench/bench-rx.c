/* bench-rx: what receiving a packet costs the receiving process, side by side.
 *
 * The same UDP traffic (a fixed number of frames, 64-byte and 1024-byte payloads) goes
 * over a veth pair to three receivers, one after the other, each its own process:
 *
 *   daqirisrc  `daqirisrc device=afpacket:dqbrx ! fakesink`, a GStreamer pipeline
 *   udpsrc     `udpsrc port=5004 ! fakesink`, the kernel's UDP stack and GStreamer
 *   bare       a bare TPACKET_V3 loop with daqiri's default ring geometry that reads each
 *              packet header and releases each block: the floor
 *   engine     (only when asked for with --receivers) the afpacket engine alone, as
 *              daqirisrc configures it (bursts of 256, 1 ms timeout, the default ring),
 *              polled and released in a loop through the engine API: daqirisrc's cost
 *              without GStreamer and the element
 *   dpdk       (only when asked for with --receivers, in builds with DPDK) `daqirisrc
 *              device=dpdk:net_af_packet0,iface=dqbrx,... ! fakesink`: the dpdk engine on
 *              DPDK's af_packet driver, mbufs copied into bursts — the A/B baseline
 *
 * For each run: CPU ns per packet = (user + system time of the receiver process while it
 * received) / packets it delivered downstream; drops = sent - received, next to the
 * kernel's own drop counter; peak RSS of the receiver process.
 *
 * Processes and namespaces:
 *
 *   bench-rx (orchestrator)   unshare(CLONE_NEWNET) first thing: it lives in the receive
 *    |                        namespace, which holds dqbrx (10.199.0.2/24)
 *    +- sender                fork, unshare(CLONE_NEWNET): the send namespace, which holds
 *    |                        dqbtx (10.199.0.1/24); raw AF_PACKET, sendmmsg; CPU 0
 *    +- receiver              fork + exec of this binary with --child=MODE; CPU 1; one
 *                             per run, talks to the orchestrator over two pipes (fd 3, 4)
 *
 * Both namespaces are anonymous: the kernel removes them, and the veth pair with them,
 * when the last process inside exits, however the benchmark ends (error, signal,
 * SIGKILL). Every child has PR_SET_PDEATHSIG so none outlives the orchestrator. Nothing
 * touches the namespace the benchmark was started in. Neighbour entries are static, IPv6
 * is off on both ends and ICMP errors are off on the receive side, so the only frames on
 * the link are the benchmark's.
 *
 * The receiver's CPU time is read with getrusage(RUSAGE_SELF) inside the receiver (all
 * its threads) when it reports ready (set up, PLAYING, 100 ms settled) and when it has
 * seen no packet for --idle-ms after the sender finished: the window covers receiving
 * and the idle wait, not process start, gst_init, pipeline set-up or tear-down. Nothing
 * is subtracted: the receivers sleep in poll() while idle, and idle_cpu_ns reports what
 * the wait cost (well under a ms for bare and udpsrc; a few ms for daqirisrc ! fakesink,
 * whose engine polls in 1 ms slices while the sink holds the last buffer). The
 * whole-process figure (wait4) is reported too.
 *
 * This file is the orchestrator and the sender; the receivers are in bench-rx-receivers.c,
 * and bench-rx.h states what a receiver does and says.
 *
 * Usage (root):  bench-rx [--packets N] [--rate PPS] [--payloads 64,1024] [--repeat N]
 *                bench-rx --soak SECONDS       daqirisrc at full rate, RSS every 10 s
 */
#include <gst/gst.h>

#include "bench-rx.h"
#include "dq-packet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef DQ_BENCH_PLUGIN_DIR
#define DQ_BENCH_PLUGIN_DIR ""
#endif

#define SOAK_SAMPLE_S 10

/* daqirisrc's defaults on a 1500-MTU port (engine/afpacket.c rx_geometry_choose with
 * ring-size 64 MiB, max-packet-size 9216, burst-timeout 1 ms): 256 blocks of 256 KiB */
#define BARE_BLOCK_SIZE (256u << 10)
#define BARE_BLOCKS 256u
#define BARE_RETIRE_MS 1u

/* ---------------------------------------------------------------------------------- */
/* options */

static gint64 opt_packets = 2000000;
static gint64 opt_rate = 0;
static gchar *opt_payloads = NULL;
static gchar *opt_receivers = NULL;
static gint opt_repeat = 3;
static gint opt_idle_ms = 300;
static gint opt_stall_ms = 0;
static gint opt_soak = 0;
static gint opt_soak_payload = 64;
static gchar *opt_sink = NULL;
static gchar *opt_src_props = NULL;
static gchar *opt_wrap = NULL;
static gchar *opt_plugin_dir = NULL;
static gint opt_block_size = BARE_BLOCK_SIZE;
static gint opt_blocks = BARE_BLOCKS;
static gint opt_retire_ms = BARE_RETIRE_MS;
static gboolean opt_bare_prefetch = FALSE;
/* receiver child mode */
static gchar *opt_child = NULL;
static gchar *opt_pipeline = NULL;

static GOptionEntry entries[] = { { "packets", 'n', 0, G_OPTION_ARG_INT64, &opt_packets,
                                      "Frames sent per run (default 2000000)", "N" },
  { "rate", 'r', 0, G_OPTION_ARG_INT64, &opt_rate,
      "Send at this many packets/s (default 0: as fast as the sender can)", "PPS" },
  { "payloads", 0, 0, G_OPTION_ARG_STRING, &opt_payloads,
      "UDP payload sizes in bytes, comma-separated (default 64,1024)", "LIST" },
  { "receivers", 0, 0, G_OPTION_ARG_STRING, &opt_receivers,
      "Receivers to run: bare, daqirisrc, udpsrc, dpdk, engine (default bare,daqirisrc,udpsrc)",
      "LIST" },
  { "repeat", 0, 0, G_OPTION_ARG_INT, &opt_repeat,
      "Runs per receiver and payload, interleaved; the median is reported (default 3)", "N" },
  { "idle-ms", 0, 0, G_OPTION_ARG_INT, &opt_idle_ms,
      "A receiver stops after this long without packets once the sender finished "
      "(default 300)",
      "MS" },
  { "stall-ms", 0, 0, G_OPTION_ARG_INT, &opt_stall_ms,
      "Stop each receiver (SIGSTOP) for this long, 300 ms into the traffic: how long a "
      "stall its ring absorbs (default 0: no stall)",
      "MS" },
  { "soak", 0, 0, G_OPTION_ARG_INT, &opt_soak,
      "Instead of the comparison: daqirisrc at full rate for this long, RSS sampled every "
      "10 s",
      "SECONDS" },
  { "soak-payload", 0, 0, G_OPTION_ARG_INT, &opt_soak_payload,
      "Payload size of the soak (default 64)", "BYTES" },
  { "sink", 0, 0, G_OPTION_ARG_STRING, &opt_sink,
      "Sink of the GStreamer receivers (default \"fakesink\")", "DESC" },
  { "daqirisrc-props", 0, 0, G_OPTION_ARG_STRING, &opt_src_props,
      "Extra daqirisrc properties, e.g. \"burst-packets=64\" (default none)", "PROPS" },
  { "wrap", 0, 0, G_OPTION_ARG_STRING, &opt_wrap,
      "Run every receiver under this command, e.g. \"valgrind --tool=callgrind\"", "CMD" },
  { "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_plugin_dir,
      "Directory with the daqiri plugin (default: the build's gst/)", "DIR" },
  { "bare-block-size", 0, 0, G_OPTION_ARG_INT, &opt_block_size,
      "Block size of the bare loop's ring (default 262144, as daqirisrc)", "BYTES" },
  { "bare-blocks", 0, 0, G_OPTION_ARG_INT, &opt_blocks,
      "Blocks of the bare loop's ring (default 256, as daqirisrc)", "N" },
  { "bare-retire-ms", 0, 0, G_OPTION_ARG_INT, &opt_retire_ms,
      "Block retire timeout of the bare loop (default 1, as daqirisrc)", "MS" },
  { "bare-prefetch", 0, 0, G_OPTION_ARG_NONE, &opt_bare_prefetch,
      "Let the bare loop prefetch packet headers ahead (not the floor: shows what "
      "prefetching would save)",
      NULL },
  { "child", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt_child, NULL, NULL },
  { "pipeline", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt_pipeline, NULL, NULL },
  { NULL, 0, 0, G_OPTION_ARG_NONE, NULL, NULL, NULL } };

/* ---------------------------------------------------------------------------------- */
/* small helpers */

static G_GNUC_PRINTF (1, 2) G_GNUC_NORETURN void die (const char *fmt, ...)
{
  va_list ap;
  fputs ("bench-rx: ", stderr);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  exit (1);
}

/* value of "key=value" in a space-separated line, or UNKNOWN */
static guint64
line_value (const char *line, const char *key)
{
  gsize klen = strlen (key);
  for (const char *p = line; (p = strstr (p, key)) != NULL; p += klen) {
    if ((p == line || p[-1] == ' ') && p[klen] == '=')
      return g_ascii_strtoull (p + klen + 1, NULL, 10);
  }
  return UNKNOWN;
}

/* ---------------------------------------------------------------------------------- */
/* orchestrator */

typedef struct {
  pid_t pid;
  int ctl; /* write end */
  LineReader status;
} Child;

static char self_exe[4096];
static volatile pid_t sender_pid = -1;
static volatile pid_t receiver_pid = -1;

static void
on_signal (int sig)
{
  /* the namespaces go away with the last process in them */
  if (receiver_pid > 0)
    kill (receiver_pid, SIGKILL);
  if (sender_pid > 0)
    kill (sender_pid, SIGKILL);
  static const char msg[] = "\nbench-rx: interrupted; receiver and sender killed, "
                            "namespaces released\n";
  ssize_t r = write (STDERR_FILENO, msg, sizeof msg - 1);
  (void) r;
  _exit (128 + sig);
}

/* fd at exactly `target` in a child about to exec, without CLOEXEC */
static void
place_fd (int fd, int target)
{
  if (fd == target)
    fcntl (fd, F_SETFD, 0);
  else
    dup2 (fd, target);
}

/* Forks a child with a pipe each way. The child gets 0 back, with the read end of the
 * orchestrator's control pipe in *ctl_fd and the write end of its status pipe in
 * *status_fd; the orchestrator gets the child's pid, and `c` holds its own ends. */
static pid_t
child_fork (Child *c, int *ctl_fd, int *status_fd)
{
  int to[2], from[2];
  if (pipe2 (to, O_CLOEXEC) != 0 || pipe2 (from, O_CLOEXEC) != 0)
    die ("pipe: %s", g_strerror (errno));
  fflush (NULL);
  pid_t pid = fork ();
  if (pid < 0)
    die ("fork: %s", g_strerror (errno));
  if (pid == 0) {
    close (to[1]);
    close (from[0]);
    *ctl_fd = to[0];
    *status_fd = from[1];
    return 0;
  }
  close (to[0]);
  close (from[1]);
  c->pid = pid;
  c->ctl = to[1];
  memset (&c->status, 0, sizeof c->status);
  c->status.fd = from[0];
  return pid;
}

static void
sender_start (Child *c)
{
  int ctl_fd, status_fd;
  pid_t pid = child_fork (c, &ctl_fd, &status_fd);
  if (pid == 0)
    bench_rx_sender_main (ctl_fd, status_fd);
  sender_pid = pid;
}

/* expects a line starting with `prefix`; dies with the child's error otherwise */
static void
expect_line (Child *c, const char *who, const char *prefix, char *line, gsize size, gint timeout_ms)
{
  int r = read_line (&c->status, line, size, timeout_ms);
  if (r <= 0)
    die ("%s: %s", who, r == 0 ? "no answer" : "exited");
  if (g_str_has_prefix (line, "error "))
    die ("%s: %s", who, line + 6);
  if (!g_str_has_prefix (line, prefix))
    die ("%s: unexpected \"%s\"", who, line);
}

/* The veth pair: dqbrx here (the receive namespace), dqbtx in the sender's namespace. */
static void
network_setup (Child *sender)
{
  GError *error = NULL;
  char line[256];
  gchar *pid = g_strdup_printf ("%d", (int) sender->pid);
  guint8 rx_mac[6], tx_mac[6];

  expect_line (sender, "sender", "ns", line, sizeof line, 10000);
  if (!run_ip (&error, "link", "add", RX_IFACE, "type", "veth", "peer", "name", TX_IFACE, NULL) ||
      !run_ip (&error, "link", "set", TX_IFACE, "netns", pid, NULL) ||
      !run_ip (&error, "addr", "add", RX_ADDR "/24", "dev", RX_IFACE, NULL) ||
      !run_ip (&error, "link", "set", RX_IFACE, "up", NULL))
    die ("network setup: %s", error->message);
  if (!iface_mac (RX_IFACE, rx_mac))
    die ("no MAC address on %s", RX_IFACE);
  gchar *mac = mac_to_string (rx_mac);
  send_line (sender->ctl, "setup %s", mac);
  g_free (mac);
  expect_line (sender, "sender", "mac ", line, sizeof line, 10000);
  if (!mac_parse (line + 4, tx_mac))
    die ("sender: bad MAC \"%s\"", line);
  if (!run_ip (&error, "neigh", "replace", TX_ADDR, "lladdr", line + 4, "dev", RX_IFACE, "nud",
          "permanent", NULL))
    die ("network setup: %s", error->message);
  for (int i = 0; i < 500 && !iface_running (RX_IFACE); i++)
    sleep_ms (10);
  if (!iface_running (RX_IFACE))
    die ("%s has no carrier", RX_IFACE);
  g_free (pid);
}

/* ---- counters of the receive namespace ---- */

typedef struct {
  guint64 if_rx_packets;
  guint64 if_rx_dropped;
  guint64 udp_in;
  guint64 udp_rcvbuf_errors;
  guint64 udp_no_ports;
  guint64 icmp_out;
} NetCounters;

static void
net_counters (NetCounters *nc)
{
  gchar *text = NULL;
  memset (nc, 0, sizeof *nc);
  if (g_file_get_contents ("/proc/net/dev", &text, NULL, NULL)) {
    gchar **lines = g_strsplit (text, "\n", -1);
    for (gchar **l = lines; *l; l++) {
      gchar *p = g_strstrip (*l);
      if (g_str_has_prefix (p, RX_IFACE ":")) {
        /* bytes packets errs drop ... */
        guint64 bytes, pkts, errs, drop;
        if (sscanf (p + strlen (RX_IFACE ":"),
                "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
                " %" G_GUINT64_FORMAT,
                &bytes, &pkts, &errs, &drop) == 4) {
          nc->if_rx_packets = pkts;
          nc->if_rx_dropped = drop;
        }
      }
    }
    g_strfreev (lines);
    g_free (text);
  }
  if (g_file_get_contents ("/proc/net/snmp", &text, NULL, NULL)) {
    gchar **lines = g_strsplit (text, "\n", -1);
    for (guint i = 0; lines[i] && lines[i + 1]; i++) {
      gboolean udp =
          g_str_has_prefix (lines[i], "Udp: ") && g_str_has_prefix (lines[i + 1], "Udp: ");
      gboolean icmp =
          g_str_has_prefix (lines[i], "Icmp: ") && g_str_has_prefix (lines[i + 1], "Icmp: ");
      if (!udp && !icmp)
        continue;
      gchar **names = g_strsplit (strchr (lines[i], ' ') + 1, " ", -1);
      gchar **values = g_strsplit (strchr (lines[i + 1], ' ') + 1, " ", -1);
      for (guint k = 0; names[k] && values[k]; k++) {
        guint64 v = g_ascii_strtoull (values[k], NULL, 10);
        if (udp && strcmp (names[k], "InDatagrams") == 0)
          nc->udp_in = v;
        else if (udp && strcmp (names[k], "RcvbufErrors") == 0)
          nc->udp_rcvbuf_errors = v;
        else if (udp && strcmp (names[k], "NoPorts") == 0)
          nc->udp_no_ports = v;
        else if (icmp && strcmp (names[k], "OutMsgs") == 0)
          nc->icmp_out = v;
      }
      g_strfreev (names);
      g_strfreev (values);
      i++;
    }
    g_strfreev (lines);
    g_free (text);
  }
}

/* ---- receivers ---- */

static gchar *
receiver_pipeline (const char *receiver)
{
  const char *sink = opt_sink ? opt_sink : "fakesink";
  if (strcmp (receiver, "daqirisrc") == 0)
    return g_strdup_printf ("daqirisrc name=src device=afpacket:" RX_IFACE " %s ! %s name=sink",
        opt_src_props ? opt_src_props : "", sink);
  if (strcmp (receiver, "dpdk") == 0)
    return g_strdup_printf ("daqirisrc name=src device=dpdk:net_af_packet0,iface=" RX_IFACE
                            ",qpairs=1,blocksz=4096,framesz=2048,framecnt=16384 %s ! %s name=sink",
        opt_src_props ? opt_src_props : "", sink);
  return g_strdup_printf ("udpsrc name=src port=%d ! %s name=sink", UDP_DST_PORT, sink);
}

static void
receiver_start (const char *receiver, Child *c)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);
  if (opt_wrap != NULL) {
    gchar **wrap = NULL;
    GError *error = NULL;
    if (!g_shell_parse_argv (opt_wrap, NULL, &wrap, &error))
      die ("--wrap: %s", error->message);
    for (gchar **w = wrap; *w; w++)
      g_ptr_array_add (argv, g_strdup (*w));
    g_strfreev (wrap);
  }
  g_ptr_array_add (argv, g_strdup (self_exe));
  if (strcmp (receiver, "bare") == 0) {
    g_ptr_array_add (argv, g_strdup ("--child=bare"));
    g_ptr_array_add (argv, g_strdup_printf ("--bare-block-size=%d", opt_block_size));
    g_ptr_array_add (argv, g_strdup_printf ("--bare-blocks=%d", opt_blocks));
    g_ptr_array_add (argv, g_strdup_printf ("--bare-retire-ms=%d", opt_retire_ms));
    if (opt_bare_prefetch)
      g_ptr_array_add (argv, g_strdup ("--bare-prefetch"));
  } else if (strcmp (receiver, "engine") == 0) {
    g_ptr_array_add (argv, g_strdup ("--child=engine"));
  } else {
    gchar *pipeline = receiver_pipeline (receiver);
    g_ptr_array_add (argv, g_strdup ("--child=gst"));
    g_ptr_array_add (argv, g_strdup_printf ("--pipeline=%s", pipeline));
    g_free (pipeline);
  }
  g_ptr_array_add (argv, g_strdup_printf ("--idle-ms=%d", opt_idle_ms));
  g_ptr_array_add (argv, NULL);

  int ctl_fd, status_fd;
  pid_t pid = child_fork (c, &ctl_fd, &status_fd);
  if (pid == 0) {
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    pin_cpu (1);
    /* out of the way of 3 and 4 first, then into place */
    int a = fcntl (ctl_fd, F_DUPFD_CLOEXEC, 10);
    int b = fcntl (status_fd, F_DUPFD_CLOEXEC, 10);
    place_fd (a, CHILD_CTL_FD);
    place_fd (b, CHILD_STATUS_FD);
    signal (SIGPIPE, SIG_DFL);
    execvp ((const char *) argv->pdata[0], (char *const *) argv->pdata);
    send_line (
        CHILD_STATUS_FD, "error exec %s: %s", (const char *) argv->pdata[0], g_strerror (errno));
    _exit (127);
  }
  receiver_pid = pid;
  g_ptr_array_free (argv, TRUE);
}

/* what one run of one receiver measured */
typedef struct {
  const char *receiver;
  guint payload;
  gchar *error;
  guint64 sent;
  gint64 send_ns;
  guint64 received;
  guint64 buffers;
  guint64 kernel_drops;
  guint64 cpu_ns;
  guint64 idle_cpu_ns;
  guint64 cpu_ns_process;
  guint64 peak_rss_kib;
  guint64 ring_bytes;
  guint64 stats_packets;
  guint64 if_rx_packets;
  guint64 if_rx_dropped;
  guint64 icmp_out;
  guint64 max_gap_us;
  guint64 max_gap_end_ms;
  guint64 runq_delay_us;
  guint64 sleeps;
  gboolean timed_out;
  double ns_per_packet;
} Run;

static void
run_finish_child (Child *c, Run *run)
{
  int status = 0;
  struct rusage ru;
  close (c->ctl);
  while (wait4 (c->pid, &status, 0, &ru) < 0 && errno == EINTR)
    ;
  receiver_pid = -1;
  close (c->status.fd);
  run->cpu_ns_process = rusage_cpu_ns (&ru);
  run->peak_rss_kib = (guint64) ru.ru_maxrss;
  if (run->error == NULL && !(WIFEXITED (status) && WEXITSTATUS (status) == 0))
    run->error = g_strdup_printf ("receiver exited with status 0x%x", status);
}

static gint
receiver_timeout_ms (void)
{
  return opt_wrap ? 600000 : 60000;
}

/* Waits for the receiver's "ready"; FALSE (run->error set) if it failed. */
static gboolean
receiver_wait_ready (Child *rc, Run *run)
{
  char line[1024];
  int r = read_line (&rc->status, line, sizeof line, receiver_timeout_ms ());
  if (r > 0 && strcmp (line, "ready") == 0)
    return TRUE;
  if (r > 0 && g_str_has_prefix (line, "error "))
    run->error = g_strdup (line + 6);
  else
    run->error = g_strdup (r == 0 ? "receiver not ready in time" : "receiver exited");
  kill (rc->pid, SIGKILL);
  return FALSE;
}

static void
receiver_collect (Child *rc, Run *run)
{
  char line[1024];
  int r = read_line (&rc->status, line, sizeof line, receiver_timeout_ms ());
  if (r > 0 && g_str_has_prefix (line, "result ")) {
    run->received = line_value (line, "received");
    run->buffers = line_value (line, "buffers");
    run->cpu_ns = line_value (line, "cpu_ns");
    run->idle_cpu_ns = line_value (line, "idle_cpu_ns");
    run->timed_out = line_value (line, "timed_out") == 1;
    run->stats_packets = line_value (line, "stats_packets");
    run->ring_bytes = line_value (line, "ring_bytes");
    run->max_gap_us = line_value (line, "max_gap_us");
    run->max_gap_end_ms = line_value (line, "max_gap_end_ms");
    run->runq_delay_us = line_value (line, "runq_delay_us");
    run->sleeps = line_value (line, "sleeps");
    if (run->kernel_drops == UNKNOWN)
      run->kernel_drops = line_value (line, "kernel_drops");
  } else {
    run->error = g_strdup (
        r > 0 && g_str_has_prefix (line, "error ") ? line + 6 : "no result from the receiver");
    kill (rc->pid, SIGKILL);
  }
}

static void
run_one (Child *sender, const char *receiver, guint payload, guint64 count, Run *run)
{
  char line[256];
  NetCounters before, after;
  Child rc;

  memset (run, 0, sizeof *run);
  run->receiver = receiver;
  run->payload = payload;
  run->kernel_drops = UNKNOWN;

  receiver_start (receiver, &rc);
  if (receiver_wait_ready (&rc, run)) {
    net_counters (&before);
    send_line (sender->ctl, "send %" G_GUINT64_FORMAT " %u %" G_GINT64_FORMAT " 0", count, payload,
        opt_rate);
    if (opt_stall_ms > 0) {
      /* the receiver stops taking packets for a while; the ring has to hold them */
      if (read_line (&sender->status, line, sizeof line, 300) != 0)
        die ("--stall-ms: the sender finished within 300 ms; send more packets");
      kill (rc.pid, SIGSTOP);
      sleep_ms (opt_stall_ms);
      kill (rc.pid, SIGCONT);
    }
    expect_line (sender, "sender", "sent ", line, sizeof line, -1);
    if (sscanf (line, "sent %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT, &run->sent, &run->send_ns) !=
        2)
      die ("sender: bad answer \"%s\"", line);
    send_line (rc.ctl, "done %" G_GUINT64_FORMAT, run->sent);
    receiver_collect (&rc, run);
    net_counters (&after);
    run->if_rx_packets = after.if_rx_packets - before.if_rx_packets;
    run->if_rx_dropped = after.if_rx_dropped - before.if_rx_dropped;
    run->icmp_out = after.icmp_out - before.icmp_out;
    if (strcmp (receiver, "udpsrc") == 0)
      run->kernel_drops = after.udp_rcvbuf_errors - before.udp_rcvbuf_errors;
  }
  run_finish_child (&rc, run);
  if (run->received > 0 && run->received != UNKNOWN && run->cpu_ns != UNKNOWN)
    run->ns_per_packet = (double) run->cpu_ns / (double) run->received;
}

/* ---- output ---- */

static void
json_string (GString *out, const char *s)
{
  g_string_append_c (out, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      g_string_append_printf (out, "\\%c", *s);
    else if ((guchar) *s < 0x20)
      g_string_append_printf (out, "\\u%04x", (guchar) *s);
    else
      g_string_append_c (out, *s);
  }
  g_string_append_c (out, '"');
}

static void
json_u64 (GString *out, const char *key, guint64 v)
{
  if (v == UNKNOWN)
    g_string_append_printf (out, ", \"%s\": null", key);
  else
    g_string_append_printf (out, ", \"%s\": %" G_GUINT64_FORMAT, key, v);
}

/* An element of a JSON array of counts: null for UNKNOWN, a separator before all but the
 * first (index `i`) */
static void
json_u64_element (GString *out, guint i, guint64 v)
{
  if (v == UNKNOWN)
    g_string_append_printf (out, "%snull", i ? ", " : "");
  else
    g_string_append_printf (out, "%s%" G_GUINT64_FORMAT, i ? ", " : "", v);
}

/* the sender's rate over its run, packets/s (0 unmeasured) */
static double
send_pps (const Run *r)
{
  return r->send_ns > 0 ? (double) r->sent * 1e9 / (double) r->send_ns : 0.0;
}

static guint64
drops_of (const Run *r)
{
  if (r->error != NULL || r->received == UNKNOWN)
    return UNKNOWN;
  return r->sent > r->received ? r->sent - r->received : 0;
}

static int
cmp_ns (const void *a, const void *b)
{
  const Run *x = *(const Run *const *) a, *y = *(const Run *const *) b;
  return x->ns_per_packet < y->ns_per_packet ? -1 : x->ns_per_packet > y->ns_per_packet;
}

/* the results of every repetition of one (receiver, payload) */
typedef struct {
  const char *receiver;
  guint payload;
  GPtrArray *runs;   /* Run* */
  const Run *median; /* NULL if every run failed */
  guint64 drops_all; /* drops summed over the repetitions */
  guint64 received_all;
  guint64 sent_all;
  double ns_min, ns_max;
} Cell;

static void
cell_finish (Cell *c)
{
  GPtrArray *ok = g_ptr_array_new ();
  c->drops_all = 0;
  for (guint i = 0; i < c->runs->len; i++) {
    Run *r = g_ptr_array_index (c->runs, i);
    guint64 d = drops_of (r);
    if (d == UNKNOWN || r->ns_per_packet <= 0) {
      c->drops_all = UNKNOWN;
      continue;
    }
    if (c->drops_all != UNKNOWN)
      c->drops_all += d;
    c->received_all += r->received;
    c->sent_all += r->sent;
    g_ptr_array_add (ok, r);
  }
  if (ok->len > 0) {
    qsort (ok->pdata, ok->len, sizeof (gpointer), cmp_ns);
    c->median = g_ptr_array_index (ok, ok->len / 2);
    c->ns_min = ((const Run *) g_ptr_array_index (ok, 0))->ns_per_packet;
    c->ns_max = ((const Run *) g_ptr_array_index (ok, ok->len - 1))->ns_per_packet;
  }
  g_ptr_array_free (ok, TRUE);
}

static void
cell_print_json (const Cell *c)
{
  GString *out = g_string_new ("{\"receiver\": ");
  json_string (out, c->receiver);
  g_string_append_printf (
      out, ", \"payload_bytes\": %u, \"frame_bytes\": %u", c->payload, PAYLOAD_OFF + c->payload);
  const Run *m = c->median;
  if (m == NULL) {
    const Run *r0 = g_ptr_array_index (c->runs, 0);
    g_string_append (out, ", \"error\": ");
    json_string (out, r0->error ? r0->error : "no packets received");
    g_string_append (out, "}");
    printf ("%s\n", out->str);
    g_string_free (out, TRUE);
    return;
  }
  json_u64 (out, "sent", m->sent);
  json_u64 (out, "received", m->received);
  json_u64 (out, "drops", drops_of (m));
  json_u64 (out, "kernel_drops", m->kernel_drops);
  g_string_append_printf (out, ", \"cpu_ns_per_packet\": %.1f", m->ns_per_packet);
  json_u64 (out, "peak_rss_kib", m->peak_rss_kib);
  json_u64 (out, "cpu_ns", m->cpu_ns);
  json_u64 (out, "idle_cpu_ns", m->idle_cpu_ns);
  json_u64 (out, "cpu_ns_process", m->cpu_ns_process);
  json_u64 (out, "buffers", m->buffers);
  g_string_append_printf (out, ", \"packets_per_buffer\": %.1f",
      m->buffers > 0 && m->buffers != UNKNOWN ? (double) m->received / (double) m->buffers : 0.0);
  json_u64 (out, "ring_bytes", m->ring_bytes);
  json_u64 (out, "stats_packets", m->stats_packets);
  json_u64 (out, "max_gap_us", m->max_gap_us);
  json_u64 (out, "runq_delay_us", m->runq_delay_us);
  json_u64 (out, "sleeps", m->sleeps);
  json_u64 (out, "if_rx_packets", m->if_rx_packets);
  json_u64 (out, "if_rx_dropped", m->if_rx_dropped);
  json_u64 (out, "icmp_out", m->icmp_out);
  g_string_append_printf (out, ", \"send_pps\": %.0f", send_pps (m));
  g_string_append_printf (out, ", \"rate_pps\": %" G_GINT64_FORMAT, opt_rate);
  g_string_append_printf (out, ", \"repeat\": %u, \"cpu_ns_per_packet_all\": [", c->runs->len);
  for (guint i = 0; i < c->runs->len; i++) {
    const Run *r = g_ptr_array_index (c->runs, i);
    g_string_append_printf (out, "%s%.1f", i ? ", " : "", r->ns_per_packet);
  }
  g_string_append (out, "], \"drops_all\": [");
  for (guint i = 0; i < c->runs->len; i++) {
    json_u64_element (out, i, drops_of (g_ptr_array_index (c->runs, i)));
  }
  g_string_append (out, "], \"kernel_drops_all\": [");
  for (guint i = 0; i < c->runs->len; i++) {
    json_u64_element (out, i, ((const Run *) g_ptr_array_index (c->runs, i))->kernel_drops);
  }
  g_string_append (out, "], \"send_pps_all\": [");
  for (guint i = 0; i < c->runs->len; i++) {
    g_string_append_printf (
        out, "%s%.0f", i ? ", " : "", send_pps (g_ptr_array_index (c->runs, i)));
  }
  g_string_append (out, "]");
  json_u64 (out, "drops_all_repeats", c->drops_all);
  json_u64 (out, "sent_all_repeats", c->sent_all);
  if (m->timed_out)
    g_string_append (out, ", \"timed_out\": true");
  g_string_append (out, "}");
  printf ("%s\n", out->str);
  g_string_free (out, TRUE);
}

static Cell *
find_cell (GPtrArray *cells, const char *receiver, guint payload)
{
  for (guint i = 0; i < cells->len; i++) {
    Cell *c = g_ptr_array_index (cells, i);
    if (c->payload == payload && strcmp (c->receiver, receiver) == 0)
      return c->median ? c : NULL;
  }
  return NULL;
}

static const char *
pass (gboolean ok)
{
  return ok ? "PASS" : "FAIL";
}

static gchar *
drops_text (const Cell *c)
{
  if (c == NULL || c->drops_all == UNKNOWN)
    return g_strdup ("?");
  return g_strdup_printf ("%" G_GUINT64_FORMAT, c->drops_all);
}


/* drops of a cell over its runs, and what the runs that dropped looked like */
static gchar *
drops_detail (const Cell *c)
{
  if (c == NULL || c->drops_all == UNKNOWN)
    return g_strdup ("?");
  if (c->drops_all == 0)
    return g_strdup ("0");
  guint n = 0;
  guint64 gap = 0, runq = 0;
  for (guint i = 0; i < c->runs->len; i++) {
    const Run *r = g_ptr_array_index (c->runs, i);
    guint64 d = drops_of (r);
    if (d == UNKNOWN || d == 0)
      continue;
    n++;
    if (r->max_gap_us != UNKNOWN)
      gap = MAX (gap, r->max_gap_us);
    if (r->runq_delay_us != UNKNOWN)
      runq = MAX (runq, r->runq_delay_us);
  }
  return g_strdup_printf (
      "%" G_GUINT64_FORMAT " (in %u of %u runs; there the longest gap "
      "between deliveries was %.0f ms and the receiver waited %.0f ms in all for its CPU)",
      c->drops_all, n, c->runs->len, (double) gap / 1e3, (double) runq / 1e3);
}

static gchar *
fmt_ns (const Cell *c)
{
  if (c == NULL)
    return g_strdup ("?");
  double v = c->median->ns_per_packet;
  return v >= 100.0 ? g_strdup_printf ("%.0f", v) : g_strdup_printf ("%.1f", v);
}

/* the table, the ratios with their targets, and the one-line summary */
static void
print_report (GPtrArray *cells, const guint *payloads, guint n_payloads)
{
  printf ("\n%-8s %-10s %10s %10s %8s %8s %9s %17s %8s %8s %8s\n", "payload", "receiver", "sent",
      "received", "drops", "k.drops", "ns/pkt", "(min..max)", "pkt/buf", "RSS MiB", "ring MiB");
  for (guint i = 0; i < cells->len; i++) {
    const Cell *c = g_ptr_array_index (cells, i);
    const Run *m = c->median;
    if (m == NULL) {
      const Run *r0 = g_ptr_array_index (c->runs, 0);
      printf ("%-8u %-10s failed: %s\n", c->payload, c->receiver,
          r0->error ? r0->error : "no packets received");
      continue;
    }
    gchar *range = g_strdup_printf ("(%.1f..%.1f)", c->ns_min, c->ns_max);
    gchar *kd = m->kernel_drops == UNKNOWN
        ? g_strdup ("-")
        : g_strdup_printf ("%" G_GUINT64_FORMAT, m->kernel_drops);
    gchar *ring = m->ring_bytes == UNKNOWN || m->ring_bytes == 0
        ? g_strdup ("-")
        : g_strdup_printf ("%.1f", (double) m->ring_bytes / 1048576.0);
    printf ("%-8u %-10s %10" G_GUINT64_FORMAT " %10" G_GUINT64_FORMAT " %8" G_GUINT64_FORMAT
            " %8s %9.1f %17s %8.1f %8.1f %8s\n",
        c->payload, c->receiver, m->sent, m->received, drops_of (m), kd, m->ns_per_packet, range,
        m->buffers && m->buffers != UNKNOWN ? (double) m->received / (double) m->buffers : 0.0,
        (double) m->peak_rss_kib / 1024.0, ring);
    g_free (range);
    g_free (kd);
    g_free (ring);
  }
  printf ("(median of %d run(s) by ns/pkt, min..max over all; drops = sent - received in "
          "that run; k.drops = the kernel's count: tp_drops (bare), drops-ring-full "
          "(daqirisrc), UDP RcvbufErrors (udpsrc); pkt/buf: packets per buffer, per ring "
          "block for bare)\n\n",
      opt_repeat);

  GString *summary = g_string_new ("bench-rx:");
  guint n_pass = 0, n_targets = 0;
  guint64 ring_bytes = UNKNOWN;
  for (guint p = 0; p < n_payloads; p++) {
    const Cell *d = find_cell (cells, "daqirisrc", payloads[p]);
    const Cell *u = find_cell (cells, "udpsrc", payloads[p]);
    const Cell *b = find_cell (cells, "bare", payloads[p]);
    gchar *dn = fmt_ns (d), *un = fmt_ns (u), *bn = fmt_ns (b);
    gchar *dd = drops_text (d), *ud = drops_text (u), *bd = drops_text (b);
    GString *rel = g_string_new ("");

    n_targets += 3;
    printf ("%uB:", payloads[p]);
    if (d != NULL && u != NULL) {
      double ratio = u->median->ns_per_packet / d->median->ns_per_packet;
      gboolean ok = ratio >= 20.0;
      n_pass += ok;
      printf (" udpsrc/daqirisrc = %.1f (target >= 20: %s);", ratio, pass (ok));
      g_string_append_printf (rel, "1/%.0f of udpsrc", ratio);
    } else {
      printf (" udpsrc/daqirisrc = ? (FAIL);");
    }
    if (d != NULL && b != NULL) {
      double ratio = d->median->ns_per_packet / b->median->ns_per_packet;
      gboolean ok = ratio <= 3.0;
      n_pass += ok;
      printf (" daqirisrc/bare = %.2f (target <= 3: %s);", ratio, pass (ok));
      g_string_append_printf (rel, "%s%.1fx bare", rel->len ? ", " : "", ratio);
      ok = d->drops_all != UNKNOWN && b->drops_all != UNKNOWN &&
          (b->drops_all > 0 || d->drops_all == 0);
      n_pass += ok;
      gchar *ddet = drops_detail (d), *bdet = drops_detail (b);
      printf ("\n      drops over %d run(s): daqirisrc %s, bare %s (target: none where bare "
              "has none: %s)",
          opt_repeat, ddet, bdet, pass (ok));
      g_free (ddet);
      g_free (bdet);
    } else {
      printf (" daqirisrc/bare = ? (FAIL); drops ? (FAIL)");
    }
    const Cell *k = find_cell (cells, "dpdk", payloads[p]);
    if (k != NULL && d != NULL)
      printf ("\n      dpdk engine (af_packet driver, copies): %.1f ns/pkt = %.2fx daqirisrc "
              "on afpacket (no target)",
          k->median->ns_per_packet, k->median->ns_per_packet / d->median->ns_per_packet);
    printf ("\n");
    if (d != NULL && d->median->ring_bytes != UNKNOWN)
      ring_bytes = d->median->ring_bytes;

    g_string_append_printf (summary,
        "%s %uB daqirisrc %s ns/pkt (udpsrc %s, bare %s%s%s), "
        "drops %s/%s/%s",
        p ? ";" : "", payloads[p], dn, un, bn, rel->len ? "; " : "", rel->str, dd, ud, bd);
    g_string_free (rel, TRUE);
    g_free (dn);
    g_free (un);
    g_free (bn);
    g_free (dd);
    g_free (ud);
    g_free (bd);
  }
  gboolean ring_ok = ring_bytes != UNKNOWN && ring_bytes <= ((guint64) 64 << 20);
  n_targets++;
  n_pass += ring_ok;
  if (ring_bytes != UNKNOWN) {
    printf ("ring per queue at the defaults: %.1f MiB (target <= 64 MiB: %s)\n",
        (double) ring_bytes / 1048576.0, pass (ring_ok));
    g_string_append_printf (summary, "; ring %.0f MiB/queue", (double) ring_bytes / 1048576.0);
  } else {
    printf ("ring per queue at the defaults: unknown (FAIL)\n");
  }
  printf ("drops in the summary: daqirisrc/udpsrc/bare, summed over %d run(s)\n", opt_repeat);
  g_string_append_printf (summary, "; targets %u/%u PASS", n_pass, n_targets);
  printf ("%s\n", summary->str);
  g_string_free (summary, TRUE);
}

/* ---- soak ---- */

/* VmRSS and RssAnon of a process, KiB */
static gboolean
proc_rss (pid_t pid, guint64 *rss, guint64 *anon)
{
  gchar *path = g_strdup_printf ("/proc/%d/status", (int) pid);
  gchar *text = NULL;
  gboolean ok = g_file_get_contents (path, &text, NULL, NULL);
  g_free (path);
  if (!ok)
    return FALSE;
  const char *p = strstr (text, "VmRSS:");
  const char *a = strstr (text, "RssAnon:");
  *rss = p ? g_ascii_strtoull (p + 6, NULL, 10) : 0;
  *anon = a ? g_ascii_strtoull (a + 8, NULL, 10) : 0;
  g_free (text);
  return p != NULL;
}

static int
soak_main (Child *sender)
{
  char line[256];
  Run run;
  Child rc;
  GArray *rss = g_array_new (FALSE, FALSE, sizeof (guint64));
  GArray *anon = g_array_new (FALSE, FALSE, sizeof (guint64));
  guint64 rss_ready = 0, anon_ready = 0, r, a;

  memset (&run, 0, sizeof run);
  run.receiver = "daqirisrc";
  run.payload = (guint) opt_soak_payload;
  run.kernel_drops = UNKNOWN;
  receiver_start ("daqirisrc", &rc);
  if (!receiver_wait_ready (&rc, &run)) {
    run_finish_child (&rc, &run);
    die ("soak: daqirisrc: %s", run.error);
  }
  proc_rss (rc.pid, &rss_ready, &anon_ready);
  fprintf (stderr, "bench-rx: soak %d s, daqirisrc, %dB payload, %s\n", opt_soak, opt_soak_payload,
      opt_rate ? "paced" : "full rate");
  /* the sender runs a little longer than the soak, so the last sample sees traffic */
  send_line (sender->ctl, "send 0 %d %" G_GINT64_FORMAT " %" G_GINT64_FORMAT, opt_soak_payload,
      opt_rate, (gint64) opt_soak * 1000 + 500);
  gint64 start = dq_bench_mono_ns ();
  gint64 next = start + SOAK_SAMPLE_S * NS_PER_S;
  for (;;) {
    gint64 left = next - dq_bench_mono_ns ();
    int got =
        read_line (&sender->status, line, sizeof line, left > 0 ? (gint) (left / NS_PER_MS) : 0);
    if (got < 0)
      die ("sender exited");
    if (got > 0)
      break;
    if (next - start > (gint64) opt_soak * NS_PER_S)
      continue; /* past the last sample: wait for the sender */
    if (proc_rss (rc.pid, &r, &a)) {
      g_array_append_val (rss, r);
      g_array_append_val (anon, a);
      fprintf (stderr,
          "bench-rx: soak %3" G_GINT64_FORMAT " s: RSS %" G_GUINT64_FORMAT
          " KiB (anon %" G_GUINT64_FORMAT " KiB)\n",
          (next - start) / NS_PER_S, r, a);
    }
    next += SOAK_SAMPLE_S * NS_PER_S;
  }
  if (sscanf (line, "sent %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT, &run.sent, &run.send_ns) != 2)
    die ("sender: bad answer \"%s\"", line);
  send_line (rc.ctl, "done %" G_GUINT64_FORMAT, run.sent);
  receiver_collect (&rc, &run);
  run_finish_child (&rc, &run);
  if (run.error != NULL)
    die ("soak: daqirisrc: %s", run.error);
  if (rss->len == 0)
    die ("soak: no RSS sample (soak shorter than %d s?)", SOAK_SAMPLE_S);

  guint64 first = g_array_index (rss, guint64, 0);
  guint64 last = g_array_index (rss, guint64, rss->len - 1);
  guint64 max = 0;
  for (guint i = 0; i < rss->len; i++)
    max = MAX (max, g_array_index (rss, guint64, i));
  double change = 100.0 * ((double) last - (double) first) / (double) first;
  double max_change = 100.0 * ((double) max - (double) first) / (double) first;
  gboolean ok = change >= -1.0 && change <= 1.0 && max_change <= 1.0;

  GString *out = g_string_new ("{\"receiver\": \"daqirisrc\", \"mode\": \"soak\"");
  g_string_append_printf (
      out, ", \"seconds\": %d, \"payload_bytes\": %d", opt_soak, opt_soak_payload);
  json_u64 (out, "sent", run.sent);
  json_u64 (out, "received", run.received);
  json_u64 (out, "drops", drops_of (&run));
  json_u64 (out, "kernel_drops", run.kernel_drops);
  g_string_append_printf (out, ", \"cpu_ns_per_packet\": %.1f",
      run.received ? (double) run.cpu_ns / (double) run.received : 0.0);
  json_u64 (out, "peak_rss_kib", run.peak_rss_kib);
  json_u64 (out, "ring_bytes", run.ring_bytes);
  json_u64 (out, "rss_ready_kib", rss_ready);
  json_u64 (out, "rss_first_kib", first);
  json_u64 (out, "rss_last_kib", last);
  json_u64 (out, "rss_max_kib", max);
  g_string_append_printf (
      out, ", \"rss_change_pct\": %.3f, \"rss_max_change_pct\": %.3f", change, max_change);
  json_u64 (out, "anon_first_kib", g_array_index (anon, guint64, 0));
  json_u64 (out, "anon_last_kib", g_array_index (anon, guint64, anon->len - 1));
  g_string_append (out, ", \"rss_samples_kib\": [");
  for (guint i = 0; i < rss->len; i++)
    g_string_append_printf (
        out, "%s%" G_GUINT64_FORMAT, i ? ", " : "", g_array_index (rss, guint64, i));
  g_string_append (out, "]}");
  printf ("%s\n", out->str);
  printf ("bench-rx soak: daqirisrc %d s at %.2f Mpps, %uB: RSS first %" G_GUINT64_FORMAT
          " KiB, last %" G_GUINT64_FORMAT " KiB, max %" G_GUINT64_FORMAT " KiB, change %+.2f%% "
          "(max %+.2f%%; target within +-1%%: %s), drops %" G_GUINT64_FORMAT "\n",
      opt_soak, run.send_ns > 0 ? (double) run.sent * 1e3 / (double) run.send_ns : 0.0,
      (guint) opt_soak_payload, first, last, max, change, max_change, pass (ok), drops_of (&run));
  g_string_free (out, TRUE);
  g_array_free (rss, TRUE);
  g_array_free (anon, TRUE);
  g_free (run.error);
  return 0;
}

/* ---- main ---- */

static guint
parse_list (const char *text, const char *const *allowed, gchar ***out)
{
  gchar **items = g_strsplit (text, ",", -1);
  guint n = 0;
  for (guint i = 0; items[i]; i++) {
    g_strstrip (items[i]);
    if (allowed != NULL && !g_strv_contains (allowed, items[i]))
      die ("unknown receiver \"%s\" (allowed: bare, daqirisrc, udpsrc, dpdk, engine)", items[i]);
    n++;
  }
  *out = items;
  return n;
}

static void
setup_gst_env (void)
{
  const char *dir = opt_plugin_dir ? opt_plugin_dir : DQ_BENCH_PLUGIN_DIR;
  gchar *plugin = g_build_filename (dir, "libgstdaqiri.so", NULL);
  if (!g_file_test (plugin, G_FILE_TEST_EXISTS))
    fprintf (stderr, "bench-rx: warning: %s does not exist; set --plugin-dir\n", plugin);
  g_free (plugin);
  g_setenv ("GST_PLUGIN_PATH_1_0", dir, TRUE);
  gchar *registry = g_build_filename (dir, "bench-registry.bin", NULL);
  g_setenv ("GST_REGISTRY_1_0", registry, TRUE);
  g_free (registry);
}

int
main (int argc, char **argv)
{
  GError *error = NULL;
  GOptionContext *octx = g_option_context_new (
      "- receive CPU cost per packet: daqirisrc vs udpsrc vs a bare TPACKET_V3 loop");
  g_option_context_add_main_entries (octx, entries, NULL);
  if (!g_option_context_parse (octx, &argc, &argv, &error))
    die ("%s", error->message);
  g_option_context_free (octx);

  if (opt_child != NULL) {
    const BenchRxReceiver receiver = { .mode = opt_child,
      .pipeline = opt_pipeline,
      .idle_ms = opt_idle_ms,
      .bare_block_size = (gsize) opt_block_size,
      .bare_blocks = (guint) opt_blocks,
      .bare_retire_ms = (guint) opt_retire_ms,
      .bare_prefetch = opt_bare_prefetch };
    int status = bench_rx_receiver_main (&receiver);
    if (status < 0)
      die ("bad --child");
    return status;
  }

  if (opt_packets <= 0 || opt_rate < 0 || opt_repeat < 1 || opt_idle_ms < 1 || opt_stall_ms < 0 ||
      opt_soak < 0 || opt_block_size <= 0 || opt_blocks < 2 || opt_retire_ms < 1)
    die ("an option is out of range (see --help)");
  static const char *const receivers_allowed[] = { "bare", "daqirisrc", "udpsrc", "dpdk", "engine",
    NULL };
  gchar **receivers = NULL, **payload_texts = NULL;
  guint n_receivers = parse_list (
      opt_receivers ? opt_receivers : "bare,daqirisrc,udpsrc", receivers_allowed, &receivers);
  guint n_payloads = parse_list (opt_payloads ? opt_payloads : "64,1024", NULL, &payload_texts);
  guint *payloads = g_new0 (guint, n_payloads + 1);
  for (guint i = 0; i < n_payloads; i++) {
    guint64 v = g_ascii_strtoull (payload_texts[i], NULL, 10);
    if (v < MIN_PAYLOAD || v > MAX_PAYLOAD)
      die ("payload %s is out of range (%d .. %d)", payload_texts[i], MIN_PAYLOAD, MAX_PAYLOAD);
    payloads[i] = (guint) v;
  }
  if (opt_soak > 0 && (opt_soak_payload < MIN_PAYLOAD || opt_soak_payload > MAX_PAYLOAD))
    die ("--soak-payload is out of range (%d .. %d)", MIN_PAYLOAD, MAX_PAYLOAD);

  if (geteuid () != 0) {
    fprintf (stderr,
        "bench-rx: needs root (network namespaces, veth, raw sockets); "
        "skipped\n");
    g_strfreev (receivers);
    g_strfreev (payload_texts);
    g_free (payloads);
    return 77;
  }
  ssize_t len = readlink ("/proc/self/exe", self_exe, sizeof self_exe - 1);
  if (len <= 0)
    die ("readlink /proc/self/exe: %s", g_strerror (errno));
  self_exe[len] = '\0';
  setup_gst_env ();

  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGHUP, &sa, NULL);
  sigaction (SIGQUIT, &sa, NULL);
  signal (SIGPIPE, SIG_IGN);

  /* from here on this process lives in the (anonymous) receive namespace */
  if (unshare (CLONE_NEWNET) != 0)
    die ("unshare(CLONE_NEWNET): %s", g_strerror (errno));
  quiet_namespace ();
  pin_cpu (0);
  Child sender;
  sender_start (&sender);
  network_setup (&sender);

  long cpus = sysconf (_SC_NPROCESSORS_ONLN);
  if (opt_soak > 0)
    printf ("# bench-rx soak: daqirisrc for %d s, %s, veth %s -> %s in private "
            "namespaces, sender cpu 0, receiver cpu 1%s, sink \"%s\"\n",
        opt_soak, opt_rate ? "paced" : "full speed", TX_IFACE, RX_IFACE,
        cpus < 2 ? " (one CPU: not pinned)" : "", opt_sink ? opt_sink : "fakesink");
  else
    printf ("# bench-rx: %" G_GINT64_FORMAT " packets per run, %s, %d run(s) each, veth "
            "%s -> %s in private namespaces, sender cpu 0, receiver cpu 1%s, sink \"%s\", "
            "idle stop %d ms\n",
        opt_packets, opt_rate ? "paced" : "full speed", opt_repeat, TX_IFACE, RX_IFACE,
        cpus < 2 ? " (one CPU: not pinned)" : "", opt_sink ? opt_sink : "fakesink", opt_idle_ms);
  if (opt_rate)
    printf ("# rate %" G_GINT64_FORMAT " packets/s\n", opt_rate);
  if (opt_bare_prefetch)
    printf ("# the bare loop prefetches headers (--bare-prefetch): not the floor as "
            "specified\n");
  if (opt_stall_ms > 0)
    printf ("# every receiver is stopped for %d ms, 300 ms into the traffic "
            "(--stall-ms)\n",
        opt_stall_ms);
  fflush (stdout);

  int rc = 0;
  if (opt_soak > 0) {
    rc = soak_main (&sender);
  } else {
    GPtrArray *cells = g_ptr_array_new ();
    for (guint p = 0; p < n_payloads; p++) {
      for (guint k = 0; k < n_receivers; k++) {
        Cell *c = g_new0 (Cell, 1);
        c->receiver = receivers[k];
        c->payload = payloads[p];
        c->runs = g_ptr_array_new ();
        g_ptr_array_add (cells, c);
      }
    }
    for (gint rep = 0; rep < opt_repeat; rep++) {
      for (guint i = 0; i < cells->len; i++) {
        Cell *c = g_ptr_array_index (cells, i);
        Run *run = g_new0 (Run, 1);
        run_one (&sender, c->receiver, c->payload, (guint64) opt_packets, run);
        g_ptr_array_add (c->runs, run);
        if (run->error != NULL)
          fprintf (stderr, "bench-rx: [%d/%d] %uB %-9s failed: %s\n", rep + 1, opt_repeat,
              c->payload, c->receiver, run->error);
        else
          fprintf (stderr,
              "bench-rx: [%d/%d] %uB %-9s sent %" G_GUINT64_FORMAT " (%.2f Mpps)"
              ", received %" G_GUINT64_FORMAT " (kernel drops %" G_GINT64_FORMAT "), %.1f "
              "ns/pkt, idle cost %.2f ms, longest gap %.1f ms (ended %" G_GUINT64_FORMAT
              " ms after ready), waited %.1f ms for the CPU\n",
              rep + 1, opt_repeat, c->payload, c->receiver, run->sent,
              run->send_ns > 0 ? (double) run->sent * 1e3 / (double) run->send_ns : 0.0,
              run->received,
              run->kernel_drops == UNKNOWN ? (gint64) -1 : (gint64) run->kernel_drops,
              run->ns_per_packet, (double) run->idle_cpu_ns / 1e6, (double) run->max_gap_us / 1e3,
              run->max_gap_end_ms, (double) run->runq_delay_us / 1e3);
      }
    }
    for (guint i = 0; i < cells->len; i++) {
      Cell *c = g_ptr_array_index (cells, i);
      cell_finish (c);
      cell_print_json (c);
    }
    print_report (cells, payloads, n_payloads);
    for (guint i = 0; i < cells->len; i++) {
      Cell *c = g_ptr_array_index (cells, i);
      for (guint j = 0; j < c->runs->len; j++) {
        Run *run = g_ptr_array_index (c->runs, j);
        g_free (run->error);
        g_free (run);
      }
      g_ptr_array_free (c->runs, TRUE);
      g_free (c);
    }
    g_ptr_array_free (cells, TRUE);
  }

  send_line (sender.ctl, "quit");
  close (sender.ctl);
  while (waitpid (sender.pid, NULL, 0) < 0 && errno == EINTR)
    ;
  sender_pid = -1;
  g_strfreev (receivers);
  g_strfreev (payload_texts);
  g_free (payloads);
  return rc;
}
