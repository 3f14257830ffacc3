/* What the emulated-ConnectX benchmarks (bench-emu-rate, bench-emu-queues,
 * bench-flow-change) share: the
 * daqiri plugin linked into the program and registered statically (emulated ports are per
 * process, so the benchmark reads the port the pipeline opened), one `daqirisrc name=src`
 * pipeline and its port, and the /proc and scheduler calls that find, time and pin the
 * pipeline's threads. `who` is the program's name, the prefix of its messages on stderr.
 * Compiled into each benchmark, against the plugin's own objects. */
#ifndef DAQIRI_TEST_BENCH_EMU_UTIL_H
#define DAQIRI_TEST_BENCH_EMU_UTIL_H

#include <gst/gst.h>

#include "emu.h"

#include <sys/types.h>

/* Initialises GStreamer with only the linked-in plugin (a plugin file of the same name on
 * GST_PLUGIN_PATH would replace it, so that variable is unset first) and registers it;
 * FALSE, with a message on stderr, when it cannot be registered. */
gboolean bench_emu_init (const char *who);

/* Parses the command line against `entries` and GStreamer's options, `summary` being the
 * line --help shows; FALSE, with "who: " and the parser's message on stderr, when it does
 * not parse. The caller checks the ranges of the values itself. */
gboolean bench_parse_args (
    const char *who, const char *summary, const GOptionEntry *entries, int *argc, char ***argv);

/* Prints "who: an option is out of range" on stderr, followed by " (ranges)" where ranges
 * is not NULL; returns 2, the exit status of a refused command line. */
int bench_out_of_range (const char *who, const char *ranges);

/* Whether the benchmark's threads are to be pinned: not turned off by the user (no_pin)
 * and at least two CPUs online. */
gboolean bench_pinning (gboolean no_pin);

/* One daqirisrc pipeline of a run: built from its launch line, its source (named "src"),
 * the name of the emulated port its device string opens, that port, once looked up, and
 * the thread that pushes the source's buffers, once it pushed one (noted by a probe on the
 * source's src pad: GStreamer's pooled threads keep the names of the tasks they ran
 * before, so a thread named "src:src" may be an idle one of an earlier run). */
typedef struct {
  GstElement *pipeline;
  GstElement *src;
  char *port_name;
  char *launch;
  EmuPort *port;
  gint src_tid;
} Bench;

/* Builds the pipeline of `launch`, whose device string opens the emulated port
 * `port_name`; takes both strings (bench_clear frees them, also after a failure). FALSE,
 * with *error set, when it cannot be built. */
gboolean bench_build (Bench *b, char *port_name, char *launch, char **error);

/* Sets the pipeline PAUSED (its queues exist, nothing polls them) and looks up its
 * emulated port; FALSE, with *error set (the bus's error, or "the pipeline does not
 * start"), when either fails. */
gboolean bench_pause (Bench *b, char **error);

/* Sets the pipeline PLAYING; FALSE, with *error set (the bus's error, or "the pipeline does
 * not start"), when it fails. */
gboolean bench_play (Bench *b, char **error);

/* Stops the pipeline and lets go of what the run held, the two strings bench_build took
 * included; b may be half built. */
void bench_clear (Bench *b);

/* The first error message on the pipeline's bus, taken off it, in *error (g_free it);
 * FALSE, *error untouched, when there is none. */
gboolean bench_bus_error (GstElement *pipeline, char **error);

/* Ends the JSON object begun in s with an "error" member, error escaped ("?" when NULL),
 * prints it as one line and frees s. */
void bench_print_json_error (GString *s, const char *error);

/* /proc/self/task/TID/schedstat: ns the thread ran on a CPU and ns it was runnable but
 * waited for one; both 0 when it cannot be read. */
void bench_thread_sched_ns (pid_t tid, guint64 *run_ns, guint64 *wait_ns);

/* The source's streaming thread once it pushed a buffer, else 0. */
pid_t bench_src_thread (Bench *b);

/* Looks up to 200 times, poll_us apart, for the source's streaming thread and the device
 * thread of b's emulated port (emu:PORT); a thread not found by then is 0 in *src_tid or
 * *dev_tid. */
void bench_find_threads (Bench *b, gulong poll_us, pid_t *src_tid, pid_t *dev_tid);

/* Pins thread tid to CPU cpu; a failure is reported on stderr, not fatal. */
void bench_pin (const char *who, pid_t tid, int cpu);

#endif
