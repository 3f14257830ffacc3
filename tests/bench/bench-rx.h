/* bench-rx.h — what the parts of bench-rx share.
 *
 * bench-rx.c is the orchestrator; bench-rx-sender.c the sender; bench-rx-receivers.c the
 * receivers (a GStreamer pipeline, the bare TPACKET_V3 loop, the afpacket engine alone);
 * bench-rx-util.c the helpers every side uses.
 *
 * The sender is a forked child of the orchestrator, in a network namespace of its own
 * (which holds TX_IFACE), on CPU 0. It speaks in lines too: "ns" once in its namespace;
 * then "setup RXMAC" (TX_IFACE has been moved in) -> "mac TXMAC"; then any number of
 * "send COUNT PAYLOAD RATE MAX_MS" -> "sent N ELAPSED_NS" (COUNT 0: until MAX_MS passed,
 * RATE 0: as fast as it can); "quit" or end of file ends it. An error is "error TEXT".
 *
 * A receiver runs in its own process, this binary started again with --child=MODE, its
 * options from the command line, CHILD_CTL_FD open for reading from the orchestrator and
 * CHILD_STATUS_FD for writing to it, on CPU 1. It speaks in lines (send_line, read_line):
 *
 *   receiver -> "ready"       set up and receiving on RX_IFACE: its CPU time counts from here
 *   orch.    -> "done N"      the sender finished, N frames sent
 *   receiver -> "result received=... buffers=... cpu_ns=... idle_cpu_ns=... timed_out=...
 *                max_gap_us=... max_gap_end_ms=... runq_delay_us=... sleeps=..." and its
 *                own keys (kernel_drops=, ring_bytes=, stats_packets=, ...), once it has seen
 *                no packet for idle_ms after "done"; then it exits 0
 *   receiver -> "error TEXT"  instead of either, when it cannot go on; then it exits 1
 *
 * A receiver that loses its orchestrator (the control pipe closes) exits 1. Values it
 * cannot know are UNKNOWN. */
#ifndef DAQIRI_BENCH_RX_H
#define DAQIRI_BENCH_RX_H

#include <glib.h>
#include <sys/resource.h>

#include "dq-bench-util.h"

#define RX_IFACE "dqbrx"
#define TX_IFACE "dqbtx"
#define RX_ADDR "10.199.0.2"
#define TX_ADDR "10.199.0.1"
#define UDP_DST_PORT 5004
#define PAYLOAD_OFF 42    /* Ethernet (14) + IPv4 (20) + UDP (8) headers, then the payload */
#define MIN_PAYLOAD 16    /* UDP payload: magic, sequence number */
#define MAX_PAYLOAD 1458  /* the most a 1500-byte MTU takes */
#define CHILD_CTL_FD 3    /* orchestrator -> receiver */
#define CHILD_STATUS_FD 4 /* receiver -> orchestrator */
#define NS_PER_S G_GINT64_CONSTANT (1000000000)
#define NS_PER_MS G_GINT64_CONSTANT (1000000)
#define UNKNOWN G_MAXUINT64

/* What a receiver is to do: --child=MODE and the options that go with it. */
typedef struct {
  const char *mode;     /* "gst", "bare" or "engine" */
  const char *pipeline; /* gst: the pipeline, with elements named src and sink */
  gint idle_ms;         /* stop after this long without packets once "done" came */
  gsize bare_block_size;
  guint bare_blocks;
  guint bare_retire_ms;
  gboolean bare_prefetch; /* bare: prefetch packet headers ahead */
} BenchRxReceiver;

/* Runs the receiver in this process; its exit status, or -1 for an unknown mode. */
int bench_rx_receiver_main (const BenchRxReceiver *receiver);

/* Runs the sender on the pipe ends ctl_fd (read) and status_fd (write); never returns. */
G_GNUC_NORETURN void bench_rx_sender_main (int ctl_fd, int status_fd);

/* user + system time of a struct rusage, in ns */
guint64 rusage_cpu_ns (const struct rusage *ru);

/* sleeps ms milliseconds, signals or not */
void sleep_ms (gint ms);

/* Writes all of data; FALSE on an error. */
gboolean write_all (int fd, const char *data, gsize len);

/* Writes one '\n'-terminated line. */
gboolean send_line (int fd, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

/* Buffered line reader over a pipe. */
typedef struct {
  int fd;
  char buf[4096];
  gsize len;
} LineReader;

/* Reads the next line (without '\n') into `out`. Returns 1 for a line, 0 when
 * timeout_ms (-1: none) passed first, -1 at end of file or on an error. */
int read_line (LineReader *lr, char *out, gsize out_size, gint timeout_ms);

/* Pins this thread to CPU `cpu` (nothing where there is one CPU). */
void pin_cpu (int cpu);

/* Writes `value` to the file at `path`; FALSE when it cannot. */
gboolean write_file (const char *path, const char *value);

/* In the namespace just entered: no IPv6, no ICMP errors. Best effort. */
void quiet_namespace (void);

/* Runs `ip ARGS...` (NULL-terminated) in the current network namespace. */
gboolean run_ip (GError **error, const char *first, ...) G_GNUC_NULL_TERMINATED;

/* The MAC address of `ifname`; FALSE when the kernel does not answer. */
gboolean iface_mac (const char *ifname, guint8 mac[6]);

/* TRUE when `ifname` has a carrier. */
gboolean iface_running (const char *ifname);

/* "xx:xx:xx:xx:xx:xx", to g_free */
gchar *mac_to_string (const guint8 mac[6]);

/* Parses "xx:xx:xx:xx:xx:xx"; FALSE if it is not one. */
gboolean mac_parse (const char *text, guint8 mac[6]);

#endif
