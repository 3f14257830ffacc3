/* Building the suite of a GStreamer check program (gst/check): the suite with its first
 * test case, and more test cases, each with its timeout; parsing a test's pipeline. Header
 * only. */
#ifndef DAQIRI_TEST_DQ_CHECK_SUITE_H
#define DAQIRI_TEST_DQ_CHECK_SUITE_H

#include <gst/check/gstcheck.h>

/* Adds to suite s a new test case named `name`, whose tests time out after timeout_s
 * seconds (0: check's default, CK_DEFAULT_TIMEOUT of the environment), and returns it for
 * tcase_add_test. */
static inline TCase *
dq_check_add_tcase (Suite *s, const char *name, double timeout_s)
{
  TCase *tc = tcase_create (name);
  if (timeout_s > 0)
    tcase_set_timeout (tc, timeout_s);
  suite_add_tcase (s, tc);
  return tc;
}

/* A new suite named suite_name with one test case, made as dq_check_add_tcase makes it
 * from tcase_name and timeout_s, in *tc. */
static inline Suite *
dq_check_suite_new (const char *suite_name, const char *tcase_name, double timeout_s, TCase **tc)
{
  Suite *s = suite_create (suite_name);
  *tc = dq_check_add_tcase (s, tcase_name, timeout_s);
  return s;
}

/* Parses the pipeline that printf-style `format` describes. The test fails, naming the
 * description and the parser's message, unless it parses without error. */
static inline GstElement *dq_check_launch (const char *format, ...) G_GNUC_PRINTF (1, 2);
static inline GstElement *
dq_check_launch (const char *format, ...)
{
  va_list args;
  va_start (args, format);
  gchar *desc = g_strdup_vprintf (format, args);
  va_end (args);
  GError *error = NULL;
  GstElement *p = gst_parse_launch (desc, &error);
  fail_unless (p != NULL && error == NULL, "%s: %s", desc, error != NULL ? error->message : "");
  g_clear_error (&error);
  g_free (desc);
  return p;
}

#endif
