/* bench-rx-sender.c — the sender of bench-rx: see bench-rx.h for the contract. */
#include "bench-rx.h"

#include "dq-packet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define UDP_SRC_PORT 40000
#define BENCH_MAGIC G_GUINT64_CONSTANT (0x4451424e43485258) /* "DQBNCHRX" */
#define SEND_BATCH 64

/* the frame: Ethernet (14) + IPv4 (20) + UDP (8) + payload (magic, seq, pattern) */
#define ETH_OFF 0
#define IP_OFF 14
#define UDP_OFF 34
#define SEQ_OFF (PAYLOAD_OFF + 8)

static void
put64 (guint8 *p, guint64 v)
{
  for (int i = 7; i >= 0; i--, v >>= 8)
    p[i] = (guint8) v;
}

typedef struct {
  int fd;
  guint8 src_mac[6];
  guint8 dst_mac[6];
  guint8 *frames; /* SEND_BATCH frames of frame_len bytes */
  guint frame_len;
  struct iovec iov[SEND_BATCH];
  struct mmsghdr msgs[SEND_BATCH];
} Sender;

/* Builds SEND_BATCH copies of the frame with `payload` bytes of UDP payload: magic,
 * sequence number (filled in per packet), then a byte pattern. */
static void
sender_build (Sender *s, guint payload)
{
  guint len = PAYLOAD_OFF + payload;
  guint8 f[PAYLOAD_OFF + MAX_PAYLOAD];
  DqPacketHeaders h = { .src_ip = ntohl (inet_addr (TX_ADDR)),
    .dst_ip = ntohl (inet_addr (RX_ADDR)),
    .src_port = UDP_SRC_PORT,
    .dst_port = UDP_DST_PORT };

  memcpy (h.dst_mac, s->dst_mac, 6);
  memcpy (h.src_mac, s->src_mac, 6);
  memset (f, 0, sizeof f);
  dq_packet_write_headers (f + ETH_OFF, len, &h);
  put64 (f + PAYLOAD_OFF, BENCH_MAGIC);
  for (guint i = 16; i < payload; i++)
    f[PAYLOAD_OFF + i] = (guint8) i;

  /* the UDP checksum with sequence number 0; each stamp updates it (RFC 1624) */
  dq_packet_put16 (f + UDP_OFF + 6,
      dq_csum_udp_field (dq_csum_l4 (f + IP_OFF, DQ_PACKET_PROTO_UDP, f + UDP_OFF, 8 + payload)));

  g_free (s->frames);
  s->frames = g_malloc ((gsize) len * SEND_BATCH);
  s->frame_len = len;
  for (guint i = 0; i < SEND_BATCH; i++) {
    memcpy (s->frames + (gsize) i * len, f, len);
    s->iov[i].iov_base = s->frames + (gsize) i * len;
    s->iov[i].iov_len = len;
    memset (&s->msgs[i], 0, sizeof s->msgs[i]);
    s->msgs[i].msg_hdr.msg_iov = &s->iov[i];
    s->msgs[i].msg_hdr.msg_iovlen = 1;
  }
}

static void
sender_stamp (guint8 *f, guint64 seq)
{
  guint8 *at = f + SEQ_OFF;
  guint16 csum = dq_packet_get16 (f + UDP_OFF + 6);

  csum = dq_csum_update32 (csum, dq_packet_get32 (at), (guint32) (seq >> 32));
  csum = dq_csum_update32 (csum, dq_packet_get32 (at + 4), (guint32) seq);
  put64 (at, seq);
  dq_packet_put16 (f + UDP_OFF + 6, dq_csum_udp_field (csum));
}

/* Sends `count` frames (0: until max_ns passed), at `rate` packets/s (0: as fast as
 * possible). Returns the frames the kernel accepted. */
static guint64
sender_run (Sender *s, guint64 count, guint64 rate, gint64 max_ns, gint64 *elapsed)
{
  guint batch = SEND_BATCH;
  if (rate > 0)
    batch = (guint) CLAMP (rate / 20000, 1, SEND_BATCH);
  gint64 start = dq_bench_mono_ns ();
  guint64 seq = 0;

  for (;;) {
    gint64 now = dq_bench_mono_ns ();
    if ((count > 0 && seq >= count) || (max_ns > 0 && now - start >= max_ns))
      break;
    guint n = batch;
    if (count > 0 && count - seq < n)
      n = (guint) (count - seq);
    if (rate > 0) {
      gint64 due = start + (gint64) (seq * (guint64) NS_PER_S / rate);
      if (due > now) {
        struct timespec ts = { due / NS_PER_S, due % NS_PER_S };
        while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
          ;
      }
    }
    for (guint i = 0; i < n; i++)
      sender_stamp (s->frames + (gsize) i * s->frame_len, seq + i);
    guint done = 0;
    while (done < n) {
      int r = sendmmsg (s->fd, s->msgs + done, n - done, 0);
      if (r < 0) {
        if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN) {
          sched_yield ();
          continue;
        }
        fprintf (stderr, "bench-rx sender: sendmmsg: %s\n", g_strerror (errno));
        *elapsed = dq_bench_mono_ns () - start;
        return seq + done;
      }
      done += (guint) r;
    }
    seq += n;
  }
  *elapsed = dq_bench_mono_ns () - start;
  return seq;
}

void
bench_rx_sender_main (int ctl_fd, int status_fd)
{
  LineReader ctl = { .fd = ctl_fd };
  char line[256];
  GError *error = NULL;
  Sender s;

  memset (&s, 0, sizeof s);
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  pin_cpu (0);
  if (unshare (CLONE_NEWNET) != 0) {
    send_line (status_fd, "error unshare(CLONE_NEWNET): %s", g_strerror (errno));
    _exit (1);
  }
  quiet_namespace ();
  send_line (status_fd, "ns");

  /* "setup RXMAC" once the orchestrator moved dqbtx in here */
  if (read_line (&ctl, line, sizeof line, -1) <= 0 || !g_str_has_prefix (line, "setup ") ||
      !mac_parse (line + 6, s.dst_mac))
    _exit (1);
  gchar *rx_mac = g_strdup (line + 6);
  if (!run_ip (&error, "addr", "add", TX_ADDR "/24", "dev", TX_IFACE, NULL) ||
      !run_ip (&error, "link", "set", TX_IFACE, "up", NULL) ||
      !run_ip (&error, "neigh", "replace", RX_ADDR, "lladdr", rx_mac, "dev", TX_IFACE, "nud",
          "permanent", NULL) ||
      !iface_mac (TX_IFACE, s.src_mac)) {
    send_line (status_fd, "error sender setup: %s", error ? error->message : "no MAC");
    _exit (1);
  }
  g_free (rx_mac);

  s.fd = socket (AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); /* 0: receives nothing */
  struct sockaddr_ll sll;
  memset (&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET;
  sll.sll_ifindex = (int) if_nametoindex (TX_IFACE);
  int one = 1;
  if (s.fd < 0 || bind (s.fd, (struct sockaddr *) &sll, sizeof sll) != 0 ||
      setsockopt (s.fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0) {
    send_line (status_fd, "error sender socket: %s", g_strerror (errno));
    _exit (1);
  }
  gchar *mac = mac_to_string (s.src_mac);
  send_line (status_fd, "mac %s", mac);
  g_free (mac);

  /* "send COUNT PAYLOAD RATE MAX_MS" -> "sent N ELAPSED_NS"; "quit" */
  while (read_line (&ctl, line, sizeof line, -1) > 0) {
    guint64 count, rate, max_ms;
    guint payload;
    if (sscanf (line, "send %" G_GUINT64_FORMAT " %u %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT,
            &count, &payload, &rate, &max_ms) != 4)
      break;
    sender_build (&s, payload);
    gint64 elapsed = 0;
    guint64 sent = sender_run (&s, count, rate, (gint64) max_ms * NS_PER_MS, &elapsed);
    send_line (status_fd, "sent %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT, sent, elapsed);
  }
  _exit (0);
}
