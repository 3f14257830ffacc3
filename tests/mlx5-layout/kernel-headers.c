/* The kernel-header tests' shared lookup and reporting: see kernel-headers.h. */
#include "kernel-headers.h"

#include <stdarg.h>

guint failures;

void
fail (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_printerr ("FAIL: %s\n", msg);
  g_free (msg);
  failures++;
}

int
kernel_test_status (guint n_kernels, const char *skip_why)
{
  if (failures) {
    g_printerr ("%u mismatches\n", failures);
    return 1;
  }
  if (n_kernels == 0) {
    g_print ("SKIP: %s\n", skip_why);
    return 77;
  }
  return 0;
}

/* TRUE when dir holds every one of files as a regular file */
static gboolean
has_files (const char *dir, const char *const *files)
{
  for (guint i = 0; files[i] != NULL; i++) {
    char *p = g_build_filename (dir, files[i], NULL);
    gboolean ok = g_file_test (p, G_FILE_TEST_IS_REGULAR);
    g_free (p);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

gboolean
kernel_text_number (const char *text, const char *pattern, GRegexCompileFlags flags, guint64 *value)
{
  GError *err = NULL;
  GRegex *re = g_regex_new (pattern, flags, 0, &err);
  if (re == NULL) {
    g_printerr ("bad pattern %s: %s\n", pattern, err->message);
    g_error_free (err);
    return FALSE;
  }
  GMatchInfo *mi = NULL;
  gboolean found = g_regex_match (re, text, 0, &mi);
  if (found) {
    char *v = g_match_info_fetch (mi, 1);
    *value = g_ascii_strtoull (v, NULL, 0);
    g_free (v);
  }
  g_match_info_free (mi);
  g_regex_unref (re);
  return found;
}

GPtrArray *
kernel_mlx5_dirs (const char *const *files)
{
  GPtrArray *found = g_ptr_array_new_with_free_func (g_free);
  GDir *d = g_dir_open ("/usr/src", 0, NULL);
  if (d == NULL)
    return found;
  const char *name;
  while ((name = g_dir_read_name (d)) != NULL) {
    if (!g_str_has_prefix (name, "linux-headers-"))
      continue;
    char *dir = g_build_filename ("/usr/src", name, "include", "linux", "mlx5", NULL);
    if (has_files (dir, files))
      g_ptr_array_add (found, dir);
    else
      g_free (dir);
  }
  g_dir_close (d);
  return found;
}
