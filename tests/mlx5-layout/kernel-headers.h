/* What the tests that read the Linux kernel's include/linux/mlx5 headers as data
 * (test-ifc, test-dma-consts) share: where Debian's linux-headers-*-common put those
 * headers, and how a mismatch is reported. A test reports every mismatch with fail() and
 * goes on, so that one run lists them all; at the end it fails when `failures` is not 0. */
#ifndef DAQIRI_TEST_KERNEL_HEADERS_H
#define DAQIRI_TEST_KERNEL_HEADERS_H

#include <glib.h>

/* mismatches reported so far */
extern guint failures;

/* Prints "FAIL: <message>" on stderr and counts it in `failures`. */
void fail (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

/* The exit status of the test, at its end, having compared with `n_kernels` kernels: 1
 * when `failures` is not 0 (their count printed), 77 (meson's skip) when there was no
 * kernel to compare with ("SKIP: " and `skip_why` printed), else 0. */
int kernel_test_status (guint n_kernels, const char *skip_why);

/* The folders /usr/src/linux-headers-* /include/linux/mlx5 that hold every file named in
 * `files` (NULL-terminated), in the order /usr/src lists them; none when there is no
 * /usr/src. The caller g_ptr_array_unrefs the array (it frees the paths). */
GPtrArray *kernel_mlx5_dirs (const char *const *files);

/* The number that capture group 1 of the regular expression `pattern` (compiled with
 * `flags`) finds first in `text`, read as a C integer literal (0x.. hex, else decimal), in
 * *value; FALSE when nothing matches. A pattern that does not compile is reported on
 * stderr and matches nothing. */
gboolean kernel_text_number (
    const char *text, const char *pattern, GRegexCompileFlags flags, guint64 *value);

#endif
