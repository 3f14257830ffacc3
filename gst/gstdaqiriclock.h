/* GstDaqiriClock: a GstClock that reads a daqiri port's clock; and GstDaqiriTimeMap, which
 * carries port times over to any other GstClock. */
#ifndef GST_DAQIRI_CLOCK_H
#define GST_DAQIRI_CLOCK_H

#include <gst/gst.h>
#include "daqiri-engine.h"

G_BEGIN_DECLS

#define GST_TYPE_DAQIRI_CLOCK (gst_daqiri_clock_get_type ())
G_DECLARE_FINAL_TYPE (GstDaqiriClock, gst_daqiri_clock, GST, DAQIRI_CLOCK, GstSystemClock);

/* The clock holds a reference on @port. Its time is the port time in ns. */
GstClock *gst_daqiri_clock_new (DqPort *port);
DqPort *gst_daqiri_clock_get_port (GstDaqiriClock *clock);

/* ---- port time -> time of another clock ------------------------------------------ */

/* Observation pairs kept for the fit, and the fewest that are fitted (fewer: the offset
 * of the latest pair is used). */
#define GST_DAQIRI_TIME_MAP_WINDOW 32
#define GST_DAQIRI_TIME_MAP_MIN_FIT 8

typedef enum {
  GST_DAQIRI_TIME_MAP_NONE,   /* no clock set */
  GST_DAQIRI_TIME_MAP_DIRECT, /* the clock's internal time is the port time */
  GST_DAQIRI_TIME_MAP_FITTED, /* another clock: a fit over observed pairs */
} GstDaqiriTimeMapMode;

/* clock time = b + (port time - xbase) * num / den, as gst_clock_adjust_with_calibration */
typedef struct {
  GstClockTime xbase;
  GstClockTime b;
  GstClockTime num;
  GstClockTime den;
} GstDaqiriTimeLine;

/* The map from a port's clock to one GstClock. Plain state of one thread (the streaming
 * thread); embed it and call init/clear. With the clock reading the port clock (a
 * GstDaqiriClock of the port, or a GstSystemClock on the POSIX clock the port time is on)
 * the map is the clock's own calibration: exact. With any other clock it is a linear
 * regression (gst_calculate_linear_regression) over a window of (port time, clock time)
 * pairs: each the tightest of 3 back-to-back reads (none if even that spans over 1 ms),
 * sampled every 10 ms of port time at first, the interval doubling each time the window
 * fills, up to 2 s. Each new fit (or, with fewer than MIN_FIT pairs, the
 * latest pair's offset) is reached by slewing: a conversion moves at most 1/20 of the
 * port time since the previous conversion away from the line in use, so converted times
 * never step backwards. A pair that misses the line by more than 10 ms (a clock was set)
 * restarts the window and is taken at once. */
typedef struct {
  DqPort *port;    /* not owned; NULL: pairs only from add_observation */
  GstClock *clock; /* owned reference; NULL: none */
  GstDaqiriTimeMapMode mode;

  /* FITTED */
  GstClockTime xy[2 * GST_DAQIRI_TIME_MAP_WINDOW]; /* port, clock, port, clock ... */
  GstClockTime scratch[2 * GST_DAQIRI_TIME_MAP_WINDOW];
  guint n_pairs;       /* valid pairs in xy */
  guint next_slot;     /* where the next pair goes */
  guint64 interval;    /* port ns between samples */
  guint64 next_sample; /* port time at which a burst triggers the next sample */
  gboolean have_line;
  gboolean pending;       /* slewing from `line` towards `target` */
  GstDaqiriTimeLine line; /* in use */
  GstDaqiriTimeLine target;
  guint64 last_port; /* latest port time converted */

  /* counters, for logs and tests */
  guint64 n_samples;
  guint64 n_fits;
  guint64 n_rejected; /* fits refused: rate off by more than 1000 ppm */
  guint64 n_restarts;
} GstDaqiriTimeMap;

void gst_daqiri_time_map_init (GstDaqiriTimeMap *map, DqPort *port);
void gst_daqiri_time_map_clear (GstDaqiriTimeMap *map);
/* Starts over for @clock (a new reference is taken; NULL: no clock). */
void gst_daqiri_time_map_set_clock (GstDaqiriTimeMap *map, GstClock *clock);
/* The time of the map's clock at which the port clock read @port_time. In FITTED mode
 * this may first sample the two clocks (when a sample is due and the map has a port). */
GstClockTime gst_daqiri_time_map_convert (GstDaqiriTimeMap *map, guint64 port_time);
/* Adds one observed pair (FITTED mode), as a sample does. */
void gst_daqiri_time_map_add_observation (
    GstDaqiriTimeMap *map, guint64 port_time, GstClockTime clock_time);

G_END_DECLS

#endif
