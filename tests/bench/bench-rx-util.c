/* bench-rx-util.c — the helpers the orchestrator, the sender and the receivers of bench-rx
 * share: see bench-rx.h. */
#include "bench-rx.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

guint64
rusage_cpu_ns (const struct rusage *ru)
{
  return ((guint64) ru->ru_utime.tv_sec + (guint64) ru->ru_stime.tv_sec) * NS_PER_S +
      ((guint64) ru->ru_utime.tv_usec + (guint64) ru->ru_stime.tv_usec) * 1000;
}

void
sleep_ms (gint ms)
{
  struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };
  while (nanosleep (&ts, &ts) != 0 && errno == EINTR)
    ;
}

gboolean
write_all (int fd, const char *data, gsize len)
{
  while (len > 0) {
    ssize_t r = write (fd, data, len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return FALSE;
    data += r;
    len -= (gsize) r;
  }
  return TRUE;
}

/* Writes one '\n'-terminated line. */
gboolean
send_line (int fd, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  gchar *text = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  gchar *line = g_strconcat (text, "\n", NULL);
  gboolean ok = write_all (fd, line, strlen (line));
  g_free (line);
  g_free (text);
  return ok;
}

/* Reads the next line (without '\n') into `out`. Returns 1 for a line, 0 when
 * timeout_ms (-1: none) passed first, -1 at end of file or on an error. */
int
read_line (LineReader *lr, char *out, gsize out_size, gint timeout_ms)
{
  gint64 deadline = timeout_ms < 0 ? -1 : dq_bench_mono_ns () + (gint64) timeout_ms * NS_PER_MS;
  for (;;) {
    char *nl = memchr (lr->buf, '\n', lr->len);
    if (nl != NULL) {
      gsize n = (gsize) (nl - lr->buf);
      gsize copy = MIN (n, out_size - 1);
      memcpy (out, lr->buf, copy);
      out[copy] = '\0';
      memmove (lr->buf, nl + 1, lr->len - n - 1);
      lr->len -= n + 1;
      return 1;
    }
    if (lr->len == sizeof lr->buf)
      lr->len = 0; /* an absurdly long line: drop it */
    int wait = -1;
    if (deadline >= 0) {
      gint64 left = deadline - dq_bench_mono_ns ();
      wait = left <= 0 ? 0 : (int) ((left + NS_PER_MS - 1) / NS_PER_MS);
    }
    struct pollfd pfd = { .fd = lr->fd, .events = POLLIN };
    int r = poll (&pfd, 1, wait);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0) {
      if (wait == 0)
        return 0;
      continue;
    }
    ssize_t got = read (lr->fd, lr->buf + lr->len, sizeof lr->buf - lr->len);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return -1;
    lr->len += (gsize) got;
  }
}

void
pin_cpu (int cpu)
{
  long n = sysconf (_SC_NPROCESSORS_ONLN);
  if (n < 2)
    return; /* one CPU: nothing to separate */
  cpu_set_t set;
  CPU_ZERO (&set);
  CPU_SET (cpu, &set);
  if (sched_setaffinity (0, sizeof set, &set) != 0)
    fprintf (stderr, "bench-rx: sched_setaffinity(cpu %d): %s\n", cpu, g_strerror (errno));
}

gboolean
write_file (const char *path, const char *value)
{
  int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return FALSE;
  gboolean ok = write_all (fd, value, strlen (value));
  close (fd);
  return ok;
}

/* In the namespace just entered: no IPv6 (no router solicitations, MLD or DAD frames on
 * the link), no ICMP errors (a closed UDP port would answer with port unreachables,
 * frames that the packet sockets of the next run would see). Best effort. */
void
quiet_namespace (void)
{
  write_file ("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
  write_file ("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
  write_file ("/proc/sys/net/ipv4/icmp_msgs_per_sec", "0");
  write_file ("/proc/sys/net/ipv4/icmp_msgs_burst", "0");
}

/* Runs `ip ARGS...` in the current network namespace. */
gboolean
run_ip (GError **error, const char *first, ...)
{
  GPtrArray *argv = g_ptr_array_new ();
  va_list ap;

  g_ptr_array_add (argv, (gpointer) "ip");
  va_start (ap, first);
  for (const char *a = first; a != NULL; a = va_arg (ap, const char *))
    g_ptr_array_add (argv, (gpointer) a);
  va_end (ap);
  g_ptr_array_add (argv, NULL);

  gchar *err_text = NULL;
  gint status = 0;
  gboolean ok = g_spawn_sync (NULL, (gchar **) argv->pdata, NULL,
      G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err_text, &status,
      error);
  if (ok && !g_spawn_check_wait_status (status, NULL)) {
    gchar *cmd = g_strjoinv (" ", (gchar **) argv->pdata);
    g_set_error (error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED, "`%s` failed: %s", cmd,
        err_text ? g_strstrip (err_text) : "");
    g_free (cmd);
    ok = FALSE;
  }
  g_free (err_text);
  g_ptr_array_free (argv, TRUE);
  return ok;
}

/* Asks the kernel about interface `ifname` (a SIOCGIF* request) into `ifr`; FALSE when
 * it cannot answer. */
static gboolean
iface_query (const char *ifname, unsigned long request, struct ifreq *ifr)
{
  int fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return FALSE;
  memset (ifr, 0, sizeof *ifr);
  g_strlcpy (ifr->ifr_name, ifname, sizeof ifr->ifr_name);
  gboolean ok = ioctl (fd, request, ifr) == 0;
  close (fd);
  return ok;
}

gboolean
iface_mac (const char *ifname, guint8 mac[6])
{
  struct ifreq ifr;
  if (!iface_query (ifname, SIOCGIFHWADDR, &ifr))
    return FALSE;
  memcpy (mac, ifr.ifr_hwaddr.sa_data, 6);
  return TRUE;
}

gchar *
mac_to_string (const guint8 mac[6])
{
  return g_strdup_printf (
      "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
}

gboolean
mac_parse (const char *text, guint8 mac[6])
{
  unsigned int m[6];
  if (sscanf (text, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
    return FALSE;
  for (int i = 0; i < 6; i++)
    mac[i] = (guint8) m[i];
  return TRUE;
}

gboolean
iface_running (const char *ifname)
{
  struct ifreq ifr;
  return iface_query (ifname, SIOCGIFFLAGS, &ifr) && (ifr.ifr_flags & IFF_RUNNING);
}
