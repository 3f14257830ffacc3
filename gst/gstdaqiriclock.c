/* GstDaqiriClock: the port clock (NIC hardware clock, emulated clock, or the kernel clock
 * for afpacket) as a GstClock. Waits are done by GstSystemClock; the port clocks all
 * advance at one ns per ns, so its relative waits hold. */
#include "gstdaqiriclock.h"

struct _GstDaqiriClock {
  GstSystemClock parent;
  DqPort *port;
};

G_DEFINE_TYPE (GstDaqiriClock, gst_daqiri_clock, GST_TYPE_SYSTEM_CLOCK);

static GstClockTime
daqiri_clock_get_internal_time (GstClock * clock)
{
  return dq_port_time (GST_DAQIRI_CLOCK (clock)->port);
}

static void
daqiri_clock_finalize (GObject * object)
{
  dq_port_unref (GST_DAQIRI_CLOCK (object)->port);
  G_OBJECT_CLASS (gst_daqiri_clock_parent_class)->finalize (object);
}

static void
gst_daqiri_clock_class_init (GstDaqiriClockClass * klass)
{
  G_OBJECT_CLASS (klass)->finalize = daqiri_clock_finalize;
  GST_CLOCK_CLASS (klass)->get_internal_time = daqiri_clock_get_internal_time;
}

static void
gst_daqiri_clock_init (GstDaqiriClock * self)
{
  GST_OBJECT_FLAG_SET (self, GST_CLOCK_FLAG_CAN_SET_MASTER);
}

GstClock *
gst_daqiri_clock_new (DqPort * port)
{
  const DqPortInfo *info = dq_port_info (port);
  char *name = g_strdup_printf ("daqiri-%s", dq_port_device (port));
  /* GstSystemClock waits on clock-type; pick the POSIX clock the port time is on, so a
   * wait for port time T ends when the port clock reads T */
  GstClockType type = info->clock_id == CLOCK_REALTIME ? GST_CLOCK_TYPE_REALTIME :
      GST_CLOCK_TYPE_MONOTONIC;
  GstDaqiriClock *clock = g_object_new (GST_TYPE_DAQIRI_CLOCK, "name", name,
      "clock-type", type, NULL);
  g_free (name);
  clock->port = dq_port_ref (port);
  gst_object_ref_sink (clock);
  return GST_CLOCK (clock);
}

DqPort *
gst_daqiri_clock_get_port (GstDaqiriClock * clock)
{
  return clock->port;
}
