/* GstDaqiriClock: the port clock (NIC hardware clock, emulated clock, or the kernel clock
 * for afpacket) as a GstClock; GstDaqiriTimeMap: port time carried over to another clock.
 *
 * Waits. GstSystemClock (1.22) waits for an entry at time T by reading gst_clock_get_time(),
 * which is our port time, and sleeping T - now on CLOCK_MONOTONIC; when the sleep ends it
 * reads the clock again and sleeps once more if T is still ahead. So the port time need not
 * be on any POSIX clock (a free-running NIC counter that started near 0 is fine): a wait
 * never ends before T (less GstSystemClock's 100 ns of slack), and it ends late only by
 * the rate difference over the wait (a port clock 100 ppm fast: 100 us late after a 1 s
 * wait). */
#include "gstdaqiriclock.h"

#include <string.h>
#include <time.h>

GST_DEBUG_CATEGORY_STATIC (daqiriclock_debug);
#define GST_CAT_DEFAULT daqiriclock_debug

struct _GstDaqiriClock {
  GstSystemClock parent;
  DqPort *port;
};

G_DEFINE_TYPE_WITH_CODE (GstDaqiriClock, gst_daqiri_clock, GST_TYPE_SYSTEM_CLOCK,
    GST_DEBUG_CATEGORY_INIT (
        daqiriclock_debug, "daqiriclock", 0, "daqiri port clock and time mapping"));

static GstClockTime
daqiri_clock_get_internal_time (GstClock *clock)
{
  return dq_port_time (GST_DAQIRI_CLOCK (clock)->port);
}

static void
daqiri_clock_finalize (GObject *object)
{
  dq_port_unref (GST_DAQIRI_CLOCK (object)->port);
  G_OBJECT_CLASS (gst_daqiri_clock_parent_class)->finalize (object);
}

static void
gst_daqiri_clock_class_init (GstDaqiriClockClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = daqiri_clock_finalize;
  GST_CLOCK_CLASS (klass)->get_internal_time = daqiri_clock_get_internal_time;
}

static void
gst_daqiri_clock_init (GstDaqiriClock *self)
{
  GST_OBJECT_FLAG_SET (self, GST_CLOCK_FLAG_CAN_SET_MASTER);
}

GstClock *
gst_daqiri_clock_new (DqPort *port)
{
  const DqPortInfo *info = dq_port_info (port);
  char *name = g_strdup_printf ("daqiri-%s", dq_port_device (port));
  /* the clock type only names the clock (and its resolution): the waits are relative,
   * see above. A NIC clock counts in ns like CLOCK_MONOTONIC. */
  GstClockType type =
      info->clock_id == CLOCK_REALTIME ? GST_CLOCK_TYPE_REALTIME : GST_CLOCK_TYPE_MONOTONIC;
  GstDaqiriClock *clock =
      g_object_new (GST_TYPE_DAQIRI_CLOCK, "name", name, "clock-type", type, NULL);
  g_free (name);
  clock->port = dq_port_ref (port);
  gst_object_ref_sink (clock);
  return GST_CLOCK (clock);
}

DqPort *
gst_daqiri_clock_get_port (GstDaqiriClock *clock)
{
  return clock->port;
}

/* ---- GstDaqiriTimeMap ------------------------------------------------------------ */

#define SAMPLE_INTERVAL_MIN (10 * GST_MSECOND)
#define SAMPLE_INTERVAL_MAX (2 * GST_SECOND)
/* reads of (clock, port, clock) per sample; the tightest bracket is kept, unless even that
 * is wider than SAMPLE_WIDTH_MAX (the thread was preempted each time): then none */
#define SAMPLE_READS 3
#define SAMPLE_WIDTH_MAX (1 * GST_MSECOND)
/* a pair this far off the line means a clock was set: start over from it */
#define RESTART_ERROR (10 * GST_MSECOND)
/* a conversion moves at most 1/SLEW_DIVISOR of the elapsed port time towards a new line */
#define SLEW_DIVISOR 20
/* fits whose rate is off 1 by more than 1/MAX_RATE_ERROR are refused */
#define MAX_RATE_ERROR 1000

static GstClockTime
line_at (const GstDaqiriTimeLine *line, guint64 port_time)
{
  return gst_clock_adjust_with_calibration (
      NULL, port_time, line->xbase, line->b, line->num, line->den);
}

static int
posix_clock_of (GstClockType type)
{
  switch (type) {
    case GST_CLOCK_TYPE_REALTIME: return CLOCK_REALTIME;
    case GST_CLOCK_TYPE_MONOTONIC: return CLOCK_MONOTONIC;
    case GST_CLOCK_TYPE_TAI: return CLOCK_TAI;
    default: return -1;
  }
}

/* Whether the internal time of @clock is the time of @port's clock. */
static gboolean
clock_reads_port_time (GstClock *clock, DqPort *port)
{
  if (port == NULL)
    return FALSE;
  int id = dq_port_info (port)->clock_id;
  if (GST_IS_DAQIRI_CLOCK (clock)) {
    DqPort *other = GST_DAQIRI_CLOCK (clock)->port;
    return other == port || (id >= 0 && dq_port_info (other)->clock_id == id);
  }
  /* the plain system clock reads its POSIX clock (a subclass may read anything) */
  if (id >= 0 && G_OBJECT_TYPE (clock) == GST_TYPE_SYSTEM_CLOCK) {
    GstClockType type;
    g_object_get (clock, "clock-type", &type, NULL);
    return posix_clock_of (type) == id;
  }
  return FALSE;
}

static void
time_map_restart (GstDaqiriTimeMap *map)
{
  map->n_pairs = 0;
  map->next_slot = 0;
  map->interval = SAMPLE_INTERVAL_MIN;
  map->next_sample = 0;
  map->have_line = FALSE;
  map->pending = FALSE;
}

void
gst_daqiri_time_map_init (GstDaqiriTimeMap *map, DqPort *port)
{
  g_type_ensure (GST_TYPE_DAQIRI_CLOCK); /* its debug category */
  memset (map, 0, sizeof *map);
  map->port = port;
  map->mode = GST_DAQIRI_TIME_MAP_NONE;
  time_map_restart (map);
}

void
gst_daqiri_time_map_clear (GstDaqiriTimeMap *map)
{
  gst_clear_object (&map->clock);
  gst_daqiri_time_map_init (map, map->port);
}

void
gst_daqiri_time_map_set_clock (GstDaqiriTimeMap *map, GstClock *clock)
{
  if (clock != NULL)
    gst_object_ref (clock);
  gst_daqiri_time_map_clear (map);
  map->clock = clock;
  if (clock == NULL)
    return;
  map->mode = clock_reads_port_time (clock, map->port) ? GST_DAQIRI_TIME_MAP_DIRECT
                                                       : GST_DAQIRI_TIME_MAP_FITTED;
  GST_DEBUG ("port %s -> clock %" GST_PTR_FORMAT ": %s",
      map->port ? dq_port_device (map->port) : "(none)", clock,
      map->mode == GST_DAQIRI_TIME_MAP_DIRECT ? "same clock, exact" : "fitted");
}

static gboolean
rate_ok (GstClockTime num, GstClockTime den)
{
  if (den == 0)
    return FALSE;
  GstClockTime diff = num > den ? num - den : den - num;
  return diff <= den / MAX_RATE_ERROR;
}

void
gst_daqiri_time_map_add_observation (
    GstDaqiriTimeMap *map, guint64 port_time, GstClockTime clock_time)
{
  if (map->have_line) {
    GstClockTime predicted = line_at (map->pending ? &map->target : &map->line, port_time);
    GstClockTime miss = predicted > clock_time ? predicted - clock_time : clock_time - predicted;
    if (miss > RESTART_ERROR) {
      GST_WARNING ("port %s: the clocks moved by %" GST_STIME_FORMAT " against each "
                   "other (a clock was set?); mapping starts over",
          map->port ? dq_port_device (map->port) : "(none)",
          GST_STIME_ARGS (GST_CLOCK_DIFF (predicted, clock_time)));
      time_map_restart (map);
      map->n_restarts++;
    }
  }

  GstClockTime *pair = &map->xy[2 * (gsize) map->next_slot];
  pair[0] = port_time;
  pair[1] = clock_time;
  map->next_slot = (map->next_slot + 1) % GST_DAQIRI_TIME_MAP_WINDOW;
  if (map->n_pairs < GST_DAQIRI_TIME_MAP_WINDOW)
    map->n_pairs++;
  /* the window filled again: sample half as often, so it spans twice the time */
  if (map->next_slot == 0)
    map->interval = MIN (map->interval * 2, SAMPLE_INTERVAL_MAX);
  map->next_sample = port_time + map->interval;

  /* the offset of this pair, until there are enough pairs for a fit */
  GstDaqiriTimeLine fresh = { port_time, clock_time, 1, 1 };
  if (map->n_pairs >= GST_DAQIRI_TIME_MAP_MIN_FIT) {
    GstClockTime num, den, b, xbase;
    gdouble r_squared;
    if (gst_calculate_linear_regression (
            map->xy, map->scratch, map->n_pairs, &num, &den, &b, &xbase, &r_squared)) {
      if (rate_ok (num, den)) {
        fresh.xbase = xbase;
        fresh.b = b;
        fresh.num = num;
        fresh.den = den;
        map->n_fits++;
        GST_LOG ("fit over %u pairs: clock = %" G_GUINT64_FORMAT " + (port - %" G_GUINT64_FORMAT
                 ") * %.9f (r^2 %f)",
            map->n_pairs, b, xbase, (double) num / (double) den, r_squared);
      } else {
        map->n_rejected++;
        GST_DEBUG ("fit refused: rate %.9f", (double) num / (double) den);
      }
    }
  }

  if (!map->have_line) {
    map->line = fresh;
    map->have_line = TRUE;
  } else {
    map->target = fresh;
    map->pending = TRUE;
  }
}

/* Reads the two clocks back to back a few times; the pair with the tightest bracket
 * (port time against the middle of the two clock reads) is observed. */
static void
time_map_sample (GstDaqiriTimeMap *map)
{
  guint64 best_port = 0;
  GstClockTime best_clock = GST_CLOCK_TIME_NONE;
  GstClockTime best_width = GST_CLOCK_TIME_NONE;

  for (guint i = 0; i < SAMPLE_READS; i++) {
    GstClockTime before = gst_clock_get_time (map->clock);
    guint64 port = dq_port_time (map->port);
    GstClockTime after = gst_clock_get_time (map->clock);
    if (!GST_CLOCK_TIME_IS_VALID (before) || !GST_CLOCK_TIME_IS_VALID (after) || after < before)
      continue;
    if (after - before < best_width) {
      best_width = after - before;
      best_port = port;
      best_clock = before + best_width / 2;
    }
  }
  if (!GST_CLOCK_TIME_IS_VALID (best_clock) || best_width > SAMPLE_WIDTH_MAX) {
    GST_DEBUG ("no sample: the clocks could not be read within %" GST_TIME_FORMAT,
        GST_TIME_ARGS (SAMPLE_WIDTH_MAX));
    return;
  }
  map->n_samples++;
  gst_daqiri_time_map_add_observation (map, best_port, best_clock);
}

/* The line in use at @port_time, slewed towards a pending target. */
static GstClockTime
time_map_apply (GstDaqiriTimeMap *map, guint64 port_time)
{
  GstClockTime out;

  if (map->pending) {
    GstClockTime cur = line_at (&map->line, port_time);
    GstClockTime want = line_at (&map->target, port_time);
    guint64 step = port_time > map->last_port ? (port_time - map->last_port) / SLEW_DIVISOR : 0;
    if (want > cur && want - cur > step) {
      out = cur + step;
    } else if (cur > want && cur - want > step) {
      out = cur - step;
    } else {
      out = want;
      map->line = map->target;
      map->pending = FALSE;
    }
    if (map->pending) {
      /* continue from where this conversion landed, at the target's rate */
      map->line.xbase = port_time;
      map->line.b = out;
      map->line.num = map->target.num;
      map->line.den = map->target.den;
    }
  } else {
    out = line_at (&map->line, port_time);
  }
  if (port_time > map->last_port)
    map->last_port = port_time;
  return out;
}

GstClockTime
gst_daqiri_time_map_convert (GstDaqiriTimeMap *map, guint64 port_time)
{
  switch (map->mode) {
    case GST_DAQIRI_TIME_MAP_DIRECT: {
      GstClockTime internal, external, num, den;
      gst_clock_get_calibration (map->clock, &internal, &external, &num, &den);
      return gst_clock_adjust_with_calibration (NULL, port_time, internal, external, num, den);
    }
    case GST_DAQIRI_TIME_MAP_FITTED:
      if (map->port != NULL && (!map->have_line || port_time >= map->next_sample)) {
        time_map_sample (map);
        /* times that run ahead of the port clock's reading must not sample each time */
        map->next_sample = MAX (map->next_sample, port_time + map->interval);
      }
      if (!map->have_line)
        return GST_CLOCK_TIME_NONE;
      return time_map_apply (map, port_time);
    default: return GST_CLOCK_TIME_NONE;
  }
}
