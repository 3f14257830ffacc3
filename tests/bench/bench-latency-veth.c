/* bench-latency-veth.c — bench-latency's veth pair and paced sender: see bench-latency.h. */
#include "bench-latency.h"

#include "dq-bench-util.h"
#include "dq-netns.h"
#include "dq-packet.h"

#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SEND_BATCH 64

static DqNetns *netns;

gboolean
bench_veth_setup (GError **error)
{
  if (geteuid () != 0) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_PERM,
        "needs root (a network namespace with a veth pair, AF_PACKET sockets)");
    return FALSE;
  }
  netns = dq_netns_new (BENCH_VETH_TX, BENCH_VETH_RX, 0, error);
  if (netns == NULL)
    return FALSE;
  if (!dq_netns_enter (netns, error)) {
    g_clear_pointer (&netns, dq_netns_free);
    return FALSE;
  }
  return TRUE;
}

void
bench_veth_teardown (void)
{
  g_clear_pointer (&netns, dq_netns_free);
}

pid_t
bench_ksoftirqd0 (void)
{
  GDir *d = g_dir_open ("/proc", 0, NULL);
  const char *e;
  pid_t found = 0;

  while (d != NULL && found == 0 && (e = g_dir_read_name (d)) != NULL) {
    if (!g_ascii_isdigit (e[0]))
      continue;
    char *path = g_strdup_printf ("/proc/%s/comm", e), *comm = NULL;
    if (g_file_get_contents (path, &comm, NULL, NULL) &&
        strcmp (g_strchomp (comm), "ksoftirqd/0") == 0)
      found = (pid_t) atoi (e);
    g_free (comm);
    g_free (path);
  }
  if (d != NULL)
    g_dir_close (d);
  return found;
}

guint64
bench_pid_runq_ns (pid_t pid)
{
  char *path = g_strdup_printf ("/proc/%d/schedstat", (int) pid), *text = NULL;
  guint64 wait = 0;
  if (pid > 0 && g_file_get_contents (path, &text, NULL, NULL)) {
    char *end = NULL;
    g_ascii_strtoull (text, &end, 10);
    wait = g_ascii_strtoull (end, NULL, 10);
  }
  g_free (text);
  g_free (path);
  return wait;
}

struct _BenchSender {
  guint64 rate;
  int fd;
  gint stop;
  gint tid;
  guint64 sent;
  gint64 elapsed_ns;
  GThread *thread;
  guint8 frames[SEND_BATCH][BENCH_VETH_FRAME];
  struct iovec iov[SEND_BATCH];
  struct mmsghdr msgs[SEND_BATCH];
};

static gboolean
iface_mac (int fd, const char *ifname, guint8 mac[6])
{
  struct ifreq ifr;
  memset (&ifr, 0, sizeof ifr);
  g_strlcpy (ifr.ifr_name, ifname, sizeof ifr.ifr_name);
  if (ioctl (fd, SIOCGIFHWADDR, &ifr) != 0)
    return FALSE;
  memcpy (mac, ifr.ifr_hwaddr.sa_data, 6);
  return TRUE;
}

static gpointer
sender_run (gpointer user_data)
{
  BenchSender *s = user_data;
  cpu_set_t set;

  g_atomic_int_set (&s->tid, (gint) syscall (SYS_gettid));
  prctl (PR_SET_TIMERSLACK, 1UL); /* wake when due, not up to 50 µs later */
  if (sysconf (_SC_NPROCESSORS_ONLN) >= 2) {
    CPU_ZERO (&set);
    CPU_SET (0, &set);
    sched_setaffinity (0, sizeof set, &set);
  }
  gint64 start = dq_bench_mono_ns (), now = start;
  guint64 seq = 0;
  while (!g_atomic_int_get (&s->stop)) {
    now = dq_bench_mono_ns ();
    /* frames due by now: seq is the next frame's number, due at start + seq / rate */
    guint64 due = (guint64) (now - start) * s->rate / G_GUINT64_CONSTANT (1000000000) + 1;
    if (due <= seq) {
      /* sleep until the next frame is due, CPU 0 free meanwhile for the softirqs */
      gint64 at = start + (gint64) (seq * G_GUINT64_CONSTANT (1000000000) / s->rate);
      struct timespec ts = { at / 1000000000, at % 1000000000 };
      clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
      continue;
    }
    guint n = (guint) MIN (due - seq, SEND_BATCH);
    int r = sendmmsg (s->fd, s->msgs, n, 0);
    if (r > 0)
      seq += (guint) r;
    else if (r < 0 && errno != EINTR && errno != ENOBUFS && errno != EAGAIN)
      break;
  }
  s->sent = seq;
  s->elapsed_ns = now - start;
  return NULL;
}

BenchSender *
bench_sender_start (guint64 rate, GError **error)
{
  BenchSender *s = g_new0 (BenchSender, 1);
  struct sockaddr_ll sll;
  int one = 1;
  guint8 rx_mac[6];
  DqPacketHeaders h = {
    .src_ip = 0x0ac70001, .dst_ip = 0x0ac70002, .src_port = 40000, .dst_port = 5004
  };

  s->rate = rate;
  s->fd = socket (AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); /* protocol 0: receives nothing */
  memset (&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET;
  sll.sll_ifindex = (int) if_nametoindex (BENCH_VETH_TX);
  if (s->fd < 0 || sll.sll_ifindex == 0 ||
      bind (s->fd, (struct sockaddr *) &sll, sizeof sll) != 0 ||
      setsockopt (s->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0 ||
      !iface_mac (s->fd, BENCH_VETH_TX, h.src_mac) || !iface_mac (s->fd, BENCH_VETH_RX, rx_mac)) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
        "the sender's raw socket on %s: %s", BENCH_VETH_TX, g_strerror (errno));
    if (s->fd >= 0)
      close (s->fd);
    g_free (s);
    return NULL;
  }
  memcpy (h.dst_mac, rx_mac, 6);
  for (guint i = 0; i < SEND_BATCH; i++) {
    dq_packet_write_headers (s->frames[i], BENCH_VETH_FRAME, &h);
    s->iov[i].iov_base = s->frames[i];
    s->iov[i].iov_len = BENCH_VETH_FRAME;
    s->msgs[i].msg_hdr.msg_iov = &s->iov[i];
    s->msgs[i].msg_hdr.msg_iovlen = 1;
  }
  s->thread = g_thread_new ("lat-sender", sender_run, s);
  return s;
}

pid_t
bench_sender_tid (BenchSender *s)
{
  for (guint i = 0; i < 1000 && g_atomic_int_get (&s->tid) == 0; i++)
    g_usleep (100);
  return (pid_t) g_atomic_int_get (&s->tid);
}

void
bench_sender_stop (BenchSender *s, guint64 *sent, gint64 *elapsed_ns)
{
  g_atomic_int_set (&s->stop, 1);
  g_thread_join (s->thread);
  *sent = s->sent;
  *elapsed_ns = s->elapsed_ns;
  close (s->fd);
  g_free (s);
}
