/* The emulated-ConnectX benchmarks' shared setup: see bench-emu-util.h. */
#include "bench-emu-util.h"
#include "dq-linked-plugin.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>


gboolean
bench_emu_init (const char *who)
{
  g_unsetenv ("GST_PLUGIN_PATH_1_0");
  g_unsetenv ("GST_PLUGIN_PATH");
  gst_init (NULL, NULL);
  if (!dq_register_linked_plugin ()) {
    g_printerr ("%s: cannot register the daqiri plugin\n", who);
    return FALSE;
  }
  return TRUE;
}

gboolean
bench_parse_args (
    const char *who, const char *summary, const GOptionEntry *entries, int *argc, char ***argv)
{
  GOptionContext *ctx = g_option_context_new (summary);
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  GError *err = NULL;
  gboolean parsed = g_option_context_parse (ctx, argc, argv, &err);
  if (!parsed) {
    g_printerr ("%s: %s\n", who, err->message);
    g_error_free (err);
  }
  g_option_context_free (ctx);
  return parsed;
}

int
bench_out_of_range (const char *who, const char *ranges)
{
  if (ranges != NULL)
    g_printerr ("%s: an option is out of range (%s)\n", who, ranges);
  else
    g_printerr ("%s: an option is out of range\n", who);
  return 2;
}

gboolean
bench_pinning (gboolean no_pin)
{
  return !no_pin && sysconf (_SC_NPROCESSORS_ONLN) >= 2;
}

static GstPadProbeReturn
note_src_thread (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  g_atomic_int_set ((gint *) user_data, (gint) syscall (SYS_gettid));
  return GST_PAD_PROBE_REMOVE;
}

gboolean
bench_build (Bench *b, char *port_name, char *launch, char **error)
{
  GError *err = NULL;
  memset (b, 0, sizeof *b);
  b->port_name = port_name;
  b->launch = launch;
  b->pipeline = gst_parse_launch (launch, &err);
  if (b->pipeline == NULL) {
    *error = g_strdup (err ? err->message : "cannot build the pipeline");
    g_clear_error (&err);
    return FALSE;
  }
  b->src = gst_bin_get_by_name (GST_BIN (b->pipeline), "src");
  GstPad *pad = b->src != NULL ? gst_element_get_static_pad (b->src, "src") : NULL;
  if (pad != NULL) {
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, note_src_thread, &b->src_tid, NULL);
    gst_object_unref (pad);
  }
  return TRUE;
}

pid_t
bench_src_thread (Bench *b)
{
  return (pid_t) g_atomic_int_get (&b->src_tid);
}

gboolean
bench_pause (Bench *b, char **error)
{
  if (gst_element_set_state (b->pipeline, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE ||
      (b->port = emu_port_lookup (b->port_name)) == NULL) {
    if (!bench_bus_error (b->pipeline, error))
      *error = g_strdup ("the pipeline does not start");
    return FALSE;
  }
  return TRUE;
}

gboolean
bench_play (Bench *b, char **error)
{
  if (gst_element_set_state (b->pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    if (!bench_bus_error (b->pipeline, error))
      *error = g_strdup ("the pipeline does not start");
    return FALSE;
  }
  return TRUE;
}

void
bench_clear (Bench *b)
{
  if (b->port != NULL)
    emu_port_unref (b->port);
  if (b->src != NULL)
    gst_object_unref (b->src);
  if (b->pipeline != NULL) {
    gst_element_set_state (b->pipeline, GST_STATE_NULL);
    gst_object_unref (b->pipeline);
  }
  g_free (b->launch);
  g_free (b->port_name);
}

void
bench_print_json_error (GString *s, const char *error)
{
  gchar *e = g_strescape (error ? error : "?", NULL);
  g_string_append_printf (s, ",\"error\":\"%s\"}", e);
  g_free (e);
  g_print ("%s\n", s->str);
  g_string_free (s, TRUE);
}

gboolean
bench_bus_error (GstElement *pipeline, char **error)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  gst_object_unref (bus);
  if (msg == NULL)
    return FALSE;
  GError *err = NULL;
  gst_message_parse_error (msg, &err, NULL);
  *error = g_strdup (err->message);
  g_error_free (err);
  gst_message_unref (msg);
  return TRUE;
}

void
bench_thread_sched_ns (pid_t tid, guint64 *run_ns, guint64 *wait_ns)
{
  char path[64], buf[128];
  *run_ns = *wait_ns = 0;
  g_snprintf (path, sizeof path, "/proc/self/task/%d/schedstat", (int) tid);
  FILE *f = fopen (path, "r");
  if (f == NULL)
    return;
  if (fgets (buf, sizeof buf, f) != NULL) {
    char *end = NULL;
    *run_ns = g_ascii_strtoull (buf, &end, 10);
    *wait_ns = g_ascii_strtoull (end, NULL, 10);
  }
  fclose (f);
}

/* The thread of this process whose name (comm) is `name`, or 0. */
static pid_t
thread_by_name (const char *name)
{
  DIR *d = opendir ("/proc/self/task");
  pid_t found = 0;
  struct dirent *e;

  if (d == NULL)
    return 0;
  while (found == 0 && (e = readdir (d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char path[300], comm[64] = "";
    g_snprintf (path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen (path, "r");
    if (f == NULL)
      continue;
    if (fgets (comm, sizeof comm, f) != NULL) {
      comm[strcspn (comm, "\n")] = '\0';
      if (strcmp (comm, name) == 0)
        found = (pid_t) atoi (e->d_name);
    }
    fclose (f);
  }
  closedir (d);
  return found;
}

void
bench_find_threads (Bench *b, gulong poll_us, pid_t *src_tid, pid_t *dev_tid)
{
  char *dev_thread = g_strdup_printf ("emu:%s", b->port_name);
  *src_tid = *dev_tid = 0;
  for (guint i = 0; i < 200 && (*src_tid == 0 || *dev_tid == 0); i++) {
    *src_tid = bench_src_thread (b);
    *dev_tid = thread_by_name (dev_thread);
    if (*src_tid == 0 || *dev_tid == 0)
      g_usleep (poll_us);
  }
  g_free (dev_thread);
}

void
bench_pin (const char *who, pid_t tid, int cpu)
{
  cpu_set_t set;
  CPU_ZERO (&set);
  CPU_SET (cpu, &set);
  if (sched_setaffinity (tid, sizeof set, &set) != 0)
    g_printerr (
        "%s: cannot pin thread %d to CPU %d: %s\n", who, (int) tid, cpu, g_strerror (errno));
}
