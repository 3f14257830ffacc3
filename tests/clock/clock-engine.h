/* The "clocktest" engine: a port whose clock the tests control, for the clock tests and
 * the clock benchmark. Registered from the test process with dq_engine_register().
 *
 * device = clocktest:NAME[,KEY=VALUE]...
 *
 *   sim            the port clock follows ct_sim_clock (a GstTestClock) instead of
 *                  CLOCK_MONOTONIC; each receive poll then advances that clock by `step`
 *                  and returns a burst (the first `bursts` polls), so a long span of
 *                  time passes in a moment
 *   ppm=N          the port clock runs N parts per million fast (negative: slow)
 *   offset=NS      the port time when the port was opened (default 1 ms: a NIC counter
 *                  that starts near 0)
 *   jitter=NS      every read of the port time (not the packet timestamps) is off by a
 *                  pseudo-random amount in [-NS, NS]
 *   posix          the port time is CLOCK_MONOTONIC itself (DqPortInfo.clock_id says so)
 *   bursts=N       sim: bursts to return (default 1000); not sim: bursts returned at once
 *                  without waiting (a source as fast as the host), 0: none
 *   step=NS        sim: clock advance per burst (default 10 ms)
 *   packets=N      packets per burst, 1..16 (default 4), 1 us apart
 *   slow=US        every read of the port time takes this long (a clock behind a slow bus)
 */
#ifndef DQ_CLOCK_ENGINE_H
#define DQ_CLOCK_ENGINE_H

#include <gst/gst.h>
#include "daqiri-engine.h"

G_BEGIN_DECLS

/* the base clock of `sim` ports; set before such a port is opened */
extern GstClock *ct_sim_clock;

/* registers the engine (once) */
void ct_engine_register (void);

/* The exact port time at base-clock time @base, and back (for the port @device, open). */
guint64 ct_port_time_at (const char *device, GstClockTime base);
GstClockTime ct_base_time_at (const char *device, guint64 port_time);

G_END_DECLS

#endif
