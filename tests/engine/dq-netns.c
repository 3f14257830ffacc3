/* Test helper: a private network namespace with a veth pair (see dq-netns.h). */
#include "dq-netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define NETNS_RUN_DIR "/run/netns"
#define MAX_LIVE 8

struct _DqNetns {
  char *name;
  char *path; /* NETNS_RUN_DIR/name */
  char *veth_a;
  char *veth_b;
  gboolean deleted;
};

/* Paths of the namespaces this process created and has not deleted yet, in static
 * storage so that a signal handler can remove them (umount2 + unlink are
 * async-signal-safe; that is all `ip netns del` does). */
static char live_paths[MAX_LIVE][sizeof NETNS_RUN_DIR + 64];
static volatile sig_atomic_t live_used[MAX_LIVE];
static gboolean handlers_installed;
static guint name_counter;

static void
live_remove_all (void)
{
  for (int i = 0; i < MAX_LIVE; i++) {
    if (live_used[i]) {
      umount2 (live_paths[i], MNT_DETACH);
      unlink (live_paths[i]);
      live_used[i] = 0;
    }
  }
}

static void
on_fatal_signal (int sig)
{
  live_remove_all ();
  signal (sig, SIG_DFL);
  raise (sig);
}

static void
cleanup_handlers_install (void)
{
  static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGTRAP };
  struct sigaction sa;

  if (handlers_installed)
    return;
  handlers_installed = TRUE;
  atexit (live_remove_all);
  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_fatal_signal;
  sigemptyset (&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  for (guint i = 0; i < G_N_ELEMENTS (sigs); i++)
    sigaction (sigs[i], &sa, NULL);
}

static int
live_add (const char *path)
{
  for (int i = 0; i < MAX_LIVE; i++) {
    if (!live_used[i]) {
      g_strlcpy (live_paths[i], path, sizeof live_paths[i]);
      live_used[i] = 1;
      return i;
    }
  }
  return -1;
}

static void
live_forget (const char *path)
{
  for (int i = 0; i < MAX_LIVE; i++)
    if (live_used[i] && strcmp (live_paths[i], path) == 0)
      live_used[i] = 0;
}

static char *
ip_program (void)
{
  static const char *const fallback[] = { "/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip" };
  char *path = g_find_program_in_path ("ip");
  if (path != NULL)
    return path;
  for (guint i = 0; i < G_N_ELEMENTS (fallback); i++)
    if (g_file_test (fallback[i], G_FILE_TEST_IS_EXECUTABLE))
      return g_strdup (fallback[i]);
  return NULL;
}

/* Runs `ip ARGV...`; on failure the error carries the command line and ip's stderr.
 * With `out`, ip's stdout is returned there (g_free). */
static gboolean
ip_run (GPtrArray *args, char **out, GError **error)
{
  char *ip = ip_program ();
  if (ip == NULL) {
    g_set_error (
        error, G_SPAWN_ERROR, G_SPAWN_ERROR_NOENT, "the `ip` command (iproute2) was not found");
    return FALSE;
  }
  g_ptr_array_insert (args, 0, ip); /* args owns it now */
  g_ptr_array_add (args, NULL);

  char *err_text = NULL;
  int status = 0;
  gboolean ok = g_spawn_sync (NULL, (char **) args->pdata, NULL,
      out != NULL ? 0 : G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, out, &err_text, &status, error);
  if (ok && !g_spawn_check_wait_status (status, NULL)) {
    char *cmd = g_strjoinv (" ", (char **) args->pdata);
    g_set_error (error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED, "`%s` failed: %s", cmd,
        err_text != NULL ? g_strstrip (err_text) : "");
    g_free (cmd);
    ok = FALSE;
  }
  g_free (err_text);
  return ok;
}

static gboolean
ip_runv (const char *netns, GError **error, const char *first, va_list ap)
{
  GPtrArray *args = g_ptr_array_new_with_free_func (g_free);
  if (netns != NULL) {
    g_ptr_array_add (args, g_strdup ("-n"));
    g_ptr_array_add (args, g_strdup (netns));
  }
  for (const char *a = first; a != NULL; a = va_arg (ap, const char *))
    g_ptr_array_add (args, g_strdup (a));
  gboolean ok = ip_run (args, NULL, error);
  g_ptr_array_unref (args);
  return ok;
}

static gboolean G_GNUC_NULL_TERMINATED
ip_cmd (const char *netns, GError **error, const char *first, ...)
{
  va_list ap;
  va_start (ap, first);
  gboolean ok = ip_runv (netns, error, first, ap);
  va_end (ap);
  return ok;
}

gboolean
dq_netns_ip (DqNetns *ns, GError **error, const char *first_arg, ...)
{
  va_list ap;
  va_start (ap, first_arg);
  gboolean ok = ip_runv (ns->name, error, first_arg, ap);
  va_end (ap);
  return ok;
}

static gboolean
write_file (const char *path, const char *text)
{
  int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return FALSE;
  gboolean ok = write (fd, text, strlen (text)) == (ssize_t) strlen (text);
  close (fd);
  return ok;
}

static gboolean
setns_path (const char *path, GError **error)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "open %s: %s", path,
        g_strerror (errno));
    return FALSE;
  }
  int r = setns (fd, CLONE_NEWNET);
  int err = errno;
  close (fd);
  if (r != 0) {
    g_set_error (
        error, G_FILE_ERROR, g_file_error_from_errno (err), "setns %s: %s", path, g_strerror (err));
    return FALSE;
  }
  return TRUE;
}

/* IPv6 off for every link of the namespace, before the links exist: no link-local
 * address, so no DAD, router solicitation or MLD packets on the test links. The
 * /proc/sys/net view follows the calling thread's namespace, so step in and back. */
static gboolean
netns_disable_ipv6 (DqNetns *ns, GError **error)
{
  int home = open ("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (home < 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
        "open /proc/thread-self/ns/net: %s", g_strerror (errno));
    return FALSE;
  }
  if (!setns_path (ns->path, error)) {
    close (home);
    return FALSE;
  }
  gboolean have_ipv6 = g_file_test ("/proc/sys/net/ipv6", G_FILE_TEST_IS_DIR);
  gboolean ok = !have_ipv6 ||
      (write_file ("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1") &&
          write_file ("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1"));
  int err = errno;
  if (setns (home, CLONE_NEWNET) != 0)
    g_error ("cannot return to the original network namespace: %s", g_strerror (errno));
  close (home);
  if (!ok) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err),
        "cannot disable IPv6 in %s: %s", ns->name, g_strerror (err));
    return FALSE;
  }
  return TRUE;
}

DqNetns *
dq_netns_new (const char *veth_a, const char *veth_b, guint mtu, GError **error)
{
  g_return_val_if_fail (veth_a != NULL && veth_b != NULL, NULL);

  DqNetns *ns = g_new0 (DqNetns, 1);
  ns->name = g_strdup_printf ("dqt-%d-%u", (int) getpid (), name_counter++);
  ns->path = g_build_filename (NETNS_RUN_DIR, ns->name, NULL);
  ns->veth_a = g_strdup (veth_a);
  ns->veth_b = g_strdup (veth_b);
  if (strlen (ns->path) >= sizeof live_paths[0]) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NAMETOOLONG, "name too long");
    ns->deleted = TRUE;
    dq_netns_free (ns);
    return NULL;
  }

  cleanup_handlers_install ();
  if (!ip_cmd (NULL, error, "netns", "add", ns->name, NULL)) {
    ns->deleted = TRUE;
    dq_netns_free (ns);
    return NULL;
  }
  live_add (ns->path);

  char mtu_text[16];
  g_snprintf (mtu_text, sizeof mtu_text, "%u", mtu);
  if (!netns_disable_ipv6 (ns, error) ||
      !dq_netns_ip (
          ns, error, "link", "add", veth_a, "type", "veth", "peer", "name", veth_b, NULL) ||
      (mtu != 0 && !dq_netns_set_mtu (ns, veth_a, mtu, error)) ||
      (mtu != 0 && !dq_netns_set_mtu (ns, veth_b, mtu, error)) ||
      !dq_netns_ip (ns, error, "link", "set", "dev", veth_a, "up", NULL) ||
      !dq_netns_ip (ns, error, "link", "set", "dev", veth_b, "up", NULL) ||
      !dq_netns_wait_up (ns, veth_a, 5000, error) || !dq_netns_wait_up (ns, veth_b, 5000, error)) {
    dq_netns_free (ns);
    return NULL;
  }
  return ns;
}

gboolean
dq_netns_enter (DqNetns *ns, GError **error)
{
  GDir *tasks = g_dir_open ("/proc/self/task", 0, NULL);
  guint n_threads = 0;
  if (tasks != NULL) {
    while (g_dir_read_name (tasks) != NULL)
      n_threads++;
    g_dir_close (tasks);
  }
  if (n_threads > 1) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
        "dq_netns_enter: the process already has %u threads; enter the namespace before "
        "creating any, or the others stay in the old namespace",
        n_threads);
    return FALSE;
  }
  return setns_path (ns->path, error);
}

/* The kernel brings a link's operational state (and, for a link whose carrier came
 * back, its qdisc) up asynchronously, in the linkwatch work: frames sent before that
 * are dropped. */
gboolean
dq_netns_wait_up (DqNetns *ns, const char *ifname, guint timeout_ms, GError **error)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  for (;;) {
    GPtrArray *args = g_ptr_array_new_with_free_func (g_free);
    char *out = NULL;
    g_ptr_array_add (args, g_strdup ("-n"));
    g_ptr_array_add (args, g_strdup (ns->name));
    g_ptr_array_add (args, g_strdup ("-o"));
    g_ptr_array_add (args, g_strdup ("link"));
    g_ptr_array_add (args, g_strdup ("show"));
    g_ptr_array_add (args, g_strdup ("dev"));
    g_ptr_array_add (args, g_strdup (ifname));
    gboolean ok = ip_run (args, &out, error);
    g_ptr_array_unref (args);
    gboolean up = ok && out != NULL && strstr (out, " state UP ") != NULL;
    g_free (out);
    if (!ok)
      return FALSE;
    if (up)
      return TRUE;
    if (g_get_monotonic_time () > deadline) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
          "%s in %s did not come up within %u ms", ifname, ns->name, timeout_ms);
      return FALSE;
    }
    g_usleep (2000);
  }
}

gboolean
dq_netns_set_mtu (DqNetns *ns, const char *ifname, guint mtu, GError **error)
{
  char text[16];
  g_snprintf (text, sizeof text, "%u", mtu);
  return dq_netns_ip (ns, error, "link", "set", "dev", ifname, "mtu", text, NULL);
}

const char *
dq_netns_name (DqNetns *ns)
{
  return ns->name;
}

void
dq_netns_free (DqNetns *ns)
{
  if (ns == NULL)
    return;
  if (!ns->deleted) {
    GError *error = NULL;
    if (!ip_cmd (NULL, &error, "netns", "del", ns->name, NULL)) {
      /* do by hand what `ip netns del` does */
      umount2 (ns->path, MNT_DETACH);
      unlink (ns->path);
      g_clear_error (&error);
    }
    live_forget (ns->path);
  }
  g_free (ns->name);
  g_free (ns->path);
  g_free (ns->veth_a);
  g_free (ns->veth_b);
  g_free (ns);
}

DqNetns *
dq_netns_setup_or_skip (const char *veth_a, const char *veth_b, guint mtu)
{
  GError *error = NULL;

  if (geteuid () != 0) {
    fprintf (stderr, "SKIP: this test needs root (network namespaces, AF_PACKET)\n");
    exit (DQ_NETNS_EXIT_SKIP);
  }
  DqNetns *ns = dq_netns_new (veth_a, veth_b, mtu, &error);
  if (ns == NULL) {
    fprintf (
        stderr, "SKIP: cannot create a network namespace with a veth pair: %s\n", error->message);
    g_error_free (error);
    exit (DQ_NETNS_EXIT_SKIP);
  }
  if (!dq_netns_enter (ns, &error)) {
    fprintf (stderr, "SKIP: cannot enter network namespace %s: %s\n", ns->name, error->message);
    g_error_free (error);
    dq_netns_free (ns);
    exit (DQ_NETNS_EXIT_SKIP);
  }
  return ns;
}

DqNetns *
dq_netns_setup_optional (const char *veth_a, const char *veth_b, const char *what)
{
  GError *error = NULL;

  if (geteuid () != 0)
    return NULL;
  DqNetns *ns = dq_netns_new (veth_a, veth_b, 0, &error);
  if (ns != NULL && !dq_netns_enter (ns, &error))
    g_clear_pointer (&ns, dq_netns_free);
  if (ns == NULL) {
    fprintf (stderr, "no network namespace (%s): %s is skipped\n", error->message, what);
    g_error_free (error);
  }
  return ns;
}
