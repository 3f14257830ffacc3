/**
 * SECTION:element-daqiritestsrc
 * @title: daqiritestsrc
 * @short_description: generate bursts of daqiri test packets
 *
 * daqiritestsrc generates UDP/IPv4/Ethernet frames in the daqiri test-packet format
 * (see daqiritestpacket.h in the daqiri library): every byte of a frame follows from the
 * addresses and ports set here, the packet's sequence number and its flow index, so a
 * receiver can check each packet with gst_daqiri_test_packet_check() and tell lost,
 * reordered, truncated and corrupted packets apart.
 *
 * Each buffer is a burst of #GstDaqiriTestSrc:burst-packets frames laid out back to back
 * in one block of system memory, every frame starting on a 64-byte boundary, with a
 * #GstDaqiriPacketMeta listing them: the same shape as the bursts daqirisrc receives.
 * When downstream offers a pool of TX slots (daqirisink on an engine that lends them),
 * the frames are written straight into the slots instead, frame i in slot i, and sent
 * from there without a copy; a burst is then cut short where the pool lends fewer slots
 * (at the end of the ring), and the next burst goes on with the next packet.
 * Packet n (counting from 0) has sequence number n (modulo 2^32), flow index
 * n mod #GstDaqiriTestSrc:n-flows (also its flow id in the meta) and a size between
 * #GstDaqiriTestSrc:packet-size-min and #GstDaqiriTestSrc:packet-size-max picked by
 * gst_daqiri_test_packet_size(). A buffer's offset is the number of its first packet and
 * its offset-end the number after its last, so a gap between buffers shows at once.
 *
 * With #GstDaqiriTestSrc:rate set, packet n is due at n / rate seconds after the first
 * burst and a burst is pushed when its last packet is due, so the average rate is exact.
 * The clock is the pipeline clock when #GstDaqiriTestSrc:is-live is set, the monotonic
 * system clock otherwise. A buffer's PTS is the due time of its first packet in running
 * time; without a rate, live buffers carry the running time at which they were made and
 * other buffers carry none.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 daqiritestsrc num-packets=10000000 burst-packets=256 ! fakesink
 * ]| as fast as the CPU can make them
 * |[
 * gst-launch-1.0 daqiritestsrc rate=1000000 n-flows=4 packet-size-max=1514 is-live=true ! \
 *     daqirisink device=afpacket:veth0
 * ]| one million packets per second on four UDP ports, 60 to 1514 bytes
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqiritestsrc.h"
#include "gstdaqirielement.h"
#include "gstdaqiritxpool.h"

#include <gst/daqiri/daqiripacketmeta.h>
#include <gst/daqiri/daqiritestpacket.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (daqiritestsrc_debug);
#define GST_CAT_DEFAULT daqiritestsrc_debug

#define DEFAULT_NUM_PACKETS 0
#define DEFAULT_BURST_PACKETS 64
#define MAX_BURST_PACKETS 65535
#define MIN_PACKET_SIZE GST_DAQIRI_TEST_PACKET_MIN_SIZE
#define MAX_PACKET_SIZE 9216
#define DEFAULT_PACKET_SIZE_MIN 60
#define DEFAULT_PACKET_SIZE_MAX 60
#define DEFAULT_FLOWS 1
#define MAX_FLOWS 65535
#define DEFAULT_RATE 0
#define DEFAULT_UDP_CHECKSUM TRUE
#define DEFAULT_IS_LIVE FALSE

/* every frame of a burst starts on a cache line */
#define FRAME_ALIGN 64
#define ALIGN_UP(x) (((x) + FRAME_ALIGN - 1) & ~(guint) (FRAME_ALIGN - 1))

enum {
  PROP_0,
  PROP_NUM_PACKETS,
  PROP_BURST_PACKETS,
  PROP_PACKET_SIZE_MIN,
  PROP_PACKET_SIZE_MAX,
  PROP_N_FLOWS,
  PROP_RATE,
  PROP_SRC_MAC, /* .. the GST_DAQIRI_N_ADDRESSES address properties (gstdaqirielement.h) */
  PROP_UDP_CHECKSUM = PROP_SRC_MAC + GST_DAQIRI_N_ADDRESSES,
  PROP_IS_LIVE,
  PROP_STATS,
  PROP_FLOWS, /* deprecated alias of n-flows */
};

struct _GstDaqiriTestSrc {
  GstPushSrc parent;

  /* properties, protected by the object lock */
  guint64 num_packets;
  guint burst_packets;
  guint packet_size_min;
  guint packet_size_max;
  guint flows;
  guint64 rate;
  GstDaqiriAddresses addrs;
  gboolean udp_checksum;

  /* what start() took from the properties; read only by the streaming thread */
  GstDaqiriTestPacketParams params;
  guint64 limit;
  guint burst;
  guint size_min;
  guint size_max;
  guint n_flows;
  guint64 pps;
  gboolean live;
  gboolean in_slots; /* writing into downstream's TX slot pool */

  /* streaming state */
  guint64 next_packet;
  guint next_flow;
  GstClock *pacing_clock; /* the clock the first due time was anchored on */
  GstClockTime epoch;     /* running time (pipeline clock) or clock time (system
                                 * clock) at which packet 0 was due */

  /* the pending wait, protected by the object lock so that unlock() and state changes
   * can end it; cond (with the object lock) wakes a wait that sits out PAUSED */
  GstClockID clock_id;
  gboolean flushing;
  gboolean paused;
  GCond cond;

  /* counters, protected by the object lock */
  guint64 packets;
  guint64 bytes;
  guint64 bursts;
};

#define gst_daqiri_test_src_parent_class parent_class
G_DEFINE_TYPE (GstDaqiriTestSrc, gst_daqiri_test_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (
    daqiritestsrc, "daqiritestsrc", GST_RANK_NONE, GST_TYPE_DAQIRI_TEST_SRC);

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_DAQIRI_PACKETS_MEDIA_TYPE ", max-packet-size = (int) [ " G_STRINGIFY (
            MIN_PACKET_SIZE) ", " G_STRINGIFY (MAX_PACKET_SIZE) " ]"));

static GstStructure *
make_stats (GstDaqiriTestSrc *self)
{
  GST_OBJECT_LOCK (self);
  GstStructure *s = gst_structure_new ("application/x-daqiri-test-src-stats", "packets",
      G_TYPE_UINT64, self->packets, "bytes", G_TYPE_UINT64, self->bytes, "bursts", G_TYPE_UINT64,
      self->bursts, NULL);
  GST_OBJECT_UNLOCK (self);
  return s;
}

/* the properties kept as plain members (flows: the deprecated alias of n-flows) */
static const GstDaqiriMember test_src_members[] = {
  GST_DAQIRI_MEMBER (PROP_NUM_PACKETS, GstDaqiriTestSrc, num_packets),
  GST_DAQIRI_MEMBER (PROP_BURST_PACKETS, GstDaqiriTestSrc, burst_packets),
  GST_DAQIRI_MEMBER (PROP_PACKET_SIZE_MIN, GstDaqiriTestSrc, packet_size_min),
  GST_DAQIRI_MEMBER (PROP_PACKET_SIZE_MAX, GstDaqiriTestSrc, packet_size_max),
  GST_DAQIRI_MEMBER (PROP_N_FLOWS, GstDaqiriTestSrc, flows),
  GST_DAQIRI_MEMBER (PROP_FLOWS, GstDaqiriTestSrc, flows),
  GST_DAQIRI_MEMBER (PROP_RATE, GstDaqiriTestSrc, rate),
  GST_DAQIRI_MEMBER (PROP_UDP_CHECKSUM, GstDaqiriTestSrc, udp_checksum),
};

static void
gst_daqiri_test_src_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (object);

  /* gst_base_src_set_live() takes the object lock itself */
  if (prop_id == PROP_IS_LIVE) {
    gst_base_src_set_live (GST_BASE_SRC (self), g_value_get_boolean (value));
    return;
  }
  GST_OBJECT_LOCK (self);
  if (!gst_daqiri_addresses_set (&self->addrs, PROP_SRC_MAC, prop_id, value) &&
      !gst_daqiri_member_set (
          self, test_src_members, G_N_ELEMENTS (test_src_members), prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_daqiri_test_src_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (self));
    return;
  }
  if (prop_id == PROP_IS_LIVE) {
    g_value_set_boolean (value, gst_base_src_is_live (GST_BASE_SRC (self)));
    return;
  }
  GST_OBJECT_LOCK (self);
  if (!gst_daqiri_addresses_get (&self->addrs, PROP_SRC_MAC, prop_id, value) &&
      !gst_daqiri_member_get (
          self, test_src_members, G_N_ELEMENTS (test_src_members), prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (self);
}

static gboolean
gst_daqiri_test_src_start (GstBaseSrc *bsrc)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (bsrc);
  GstDaqiriTestPacketParams params;
  gboolean ok = FALSE;
  gboolean live = gst_base_src_is_live (bsrc);

  GST_OBJECT_LOCK (self);
  self->live = live;
  GstDaqiriAddresses addrs;
  gst_daqiri_addresses_copy (&self->addrs, &addrs);
  guint size_min = self->packet_size_min;
  guint size_max = self->packet_size_max;
  guint flows = self->flows;
  guint dst_port = addrs.dst_port;
  gboolean udp_checksum = self->udp_checksum;
  self->limit = self->num_packets;
  self->burst = self->burst_packets;
  self->pps = self->rate;
  self->packets = self->bytes = self->bursts = 0;
  self->flushing = FALSE;
  self->paused = FALSE;
  GST_OBJECT_UNLOCK (self);

  if (size_min > size_max) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("property 'packet-size-min' (%u) is larger than property 'packet-size-max' "
         "(%u); the sizes are drawn from packet-size-min..packet-size-max, so "
         "packet-size-min must not exceed packet-size-max",
            size_min, size_max),
        (NULL));
    goto done;
  }
  if (dst_port + flows - 1 > G_MAXUINT16) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("property 'dst-port' (%u) with property 'n-flows' (%u): flow %u would use UDP "
         "port %u, beyond 65535; flow f goes to dst-port + f, so dst-port may be at "
         "most %u with %u flows",
            dst_port, flows, flows - 1, dst_port + flows - 1, G_MAXUINT16 - (flows - 1), flows),
        (NULL));
    goto done;
  }
  gst_daqiri_test_packet_params_init (&params);
  GstDaqiriAddressValues v;
  if (!gst_daqiri_addresses_take (GST_ELEMENT_CAST (self), &addrs, &v))
    goto done;
  memcpy (params.src_mac, v.src_mac, 6);
  memcpy (params.dst_mac, v.dst_mac, 6);
  params.src_ip = v.src_ip;
  params.dst_ip = v.dst_ip;
  params.src_port = v.src_port;
  params.dst_port = v.dst_port;
  params.udp_checksum = udp_checksum;

  self->params = params;
  self->size_min = size_min;
  self->size_max = size_max;
  self->n_flows = flows;
  self->next_packet = 0;
  self->next_flow = 0;
  gst_clear_object (&self->pacing_clock);
  GST_INFO_OBJECT (self,
      "%" G_GUINT64_FORMAT " packets (0: endless) in bursts of %u, "
      "%u..%u bytes, %u flow(s), %" G_GUINT64_FORMAT " packets/s (0: unpaced), %s",
      self->limit, self->burst, size_min, size_max, flows, self->pps,
      self->live ? "live" : "not live");
  ok = TRUE;

done:
  gst_daqiri_addresses_clear (&addrs);
  return ok;
}

static gboolean
gst_daqiri_test_src_stop (GstBaseSrc *bsrc)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (bsrc);

  GST_OBJECT_LOCK (self);
  GstClockID id = self->clock_id;
  self->clock_id = NULL;
  GST_OBJECT_UNLOCK (self);
  if (id != NULL)
    gst_clock_id_unref (id);
  gst_clear_object (&self->pacing_clock);
  return TRUE;
}

static gboolean
gst_daqiri_test_src_negotiate (GstBaseSrc *bsrc)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (bsrc);

  GstCaps *caps = gst_caps_new_simple (
      GST_DAQIRI_PACKETS_MEDIA_TYPE, "max-packet-size", G_TYPE_INT, (gint) self->size_max, NULL);
  gboolean ok = gst_base_src_set_caps (bsrc, caps);
  gst_caps_unref (caps);
  return ok;
}

/* Takes downstream's pool of TX slots when it offers one that holds our frames. */
static gboolean
use_slot_pool (GstDaqiriTestSrc *self, GstQuery *query, GstCaps *caps)
{
  GstBufferPool *pool = NULL;
  guint size, min, max;
  gboolean ok = FALSE;

  if (gst_query_get_n_allocation_pools (query) == 0)
    return FALSE;
  gst_query_parse_nth_allocation_pool (query, 0, &pool, &size, &min, &max);
  if (pool == NULL)
    return FALSE;
  if (gst_buffer_pool_has_option (pool, GST_BUFFER_POOL_OPTION_DAQIRI_TX_SLOTS)) {
    GstStructure *config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, size, min, max);
    gst_daqiri_tx_pool_config_set_burst (config, self->burst, self->size_max);
    ok = gst_buffer_pool_set_config (pool, config);
    if (ok)
      gst_query_set_nth_allocation_pool (query, 0, pool, size, min, max);
    GST_INFO_OBJECT (self, "downstream offers TX slots: %s",
        ok ? "writing frames into "
             "them"
           : "they do not take our frames, using our own buffers");
  }
  gst_object_unref (pool);
  return ok;
}

/* Downstream's TX slots, or else our own pool of burst-sized buffers: one allocation
 * per buffer the pool ever makes, none per burst once downstream hands buffers back. */
static gboolean
gst_daqiri_test_src_decide_allocation (GstBaseSrc *bsrc, GstQuery *query)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (bsrc);
  GstCaps *caps = NULL;
  GstAllocationParams params;

  gst_query_parse_allocation (query, &caps, NULL);
  self->in_slots = use_slot_pool (self, query, caps);
  if (self->in_slots)
    return TRUE;
  guint size = self->burst * ALIGN_UP (self->size_max);
  GstBufferPool *pool = gst_buffer_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);
  gst_allocation_params_init (&params);
  params.align = FRAME_ALIGN - 1;
  gst_buffer_pool_config_set_params (config, caps, size, 2, 0);
  gst_buffer_pool_config_set_allocator (config, NULL, &params);
  if (!gst_buffer_pool_set_config (pool, config)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("could not configure a pool of %u-byte burst buffers", size), (NULL));
    gst_object_unref (pool);
    return FALSE;
  }
  if (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_set_nth_allocation_pool (query, 0, pool, size, 2, 0);
  else
    gst_query_add_allocation_pool (query, pool, size, 2, 0);
  gst_object_unref (pool);
  return TRUE;
}

static gboolean
gst_daqiri_test_src_query (GstBaseSrc *bsrc, GstQuery *query)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (bsrc);

  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY && gst_base_src_is_live (bsrc)) {
    /* a burst leaves when its last packet is due but is stamped with its first one's
     * time: the difference is the latency */
    GST_OBJECT_LOCK (self);
    GstClockTime min = self->rate > 0
        ? gst_util_uint64_scale_ceil (self->burst_packets - 1, GST_SECOND, self->rate)
        : 0;
    GST_OBJECT_UNLOCK (self);
    gst_query_set_latency (query, TRUE, min, GST_CLOCK_TIME_NONE);
    return TRUE;
  }
  return GST_BASE_SRC_CLASS (parent_class)->query (bsrc, query);
}

static gboolean
gst_daqiri_test_src_unlock (GstBaseSrc *bsrc)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (bsrc);

  GST_OBJECT_LOCK (self);
  self->flushing = TRUE;
  if (self->clock_id != NULL)
    gst_clock_id_unschedule (self->clock_id);
  g_cond_broadcast (&self->cond);
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static gboolean
gst_daqiri_test_src_unlock_stop (GstBaseSrc *bsrc)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (bsrc);

  GST_OBJECT_LOCK (self);
  self->flushing = FALSE;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

/* Waits until @due: a running time on the pipeline clock (@on_pipeline), or a time of
 * the system clock. FLUSHING when unlock() ended the wait. A live source sits out PAUSED
 * here, then waits again against the new base time, so a burst never leaves early and no
 * packet is lost to a pause. The clock id is kept and re-armed: pacing allocates nothing
 * per burst. */
static GstFlowReturn
wait_until (GstDaqiriTestSrc *self, GstClock *clock, gboolean on_pipeline, GstClockTime due)
{
  GstFlowReturn ret = GST_FLOW_OK;

  GST_OBJECT_LOCK (self);
  for (;;) {
    /* paused, the pause is sat out here like any other wait */
    if (gst_daqiri_src_must_flush (GST_BASE_SRC (self), self->flushing, self->paused)) {
      ret = GST_FLOW_FLUSHING;
      break;
    }
    if (self->paused) {
      g_cond_wait (&self->cond, GST_OBJECT_GET_LOCK (self));
      continue;
    }
    GstClockTime target = due + (on_pipeline ? GST_ELEMENT_CAST (self)->base_time : 0);
    if (gst_clock_get_time (clock) >= target)
      break;
    GstClockID id = self->clock_id;
    if (id == NULL || !gst_clock_single_shot_id_reinit (clock, id, target)) {
      if (id != NULL)
        gst_clock_id_unref (id);
      id = self->clock_id = gst_clock_new_single_shot_id (clock, target);
    }
    gst_clock_id_ref (id);
    GST_OBJECT_UNLOCK (self);
    gst_clock_id_wait (id, NULL);
    gst_clock_id_unref (id);
    GST_OBJECT_LOCK (self);
    /* woken on time, or unscheduled by unlock() or a state change: look again */
  }
  GST_OBJECT_UNLOCK (self);
  return ret;
}

/* basesrc holds a live source in PAUSED only outside create(); the wait inside it is
 * ours to hold (and to redo against the new base time in PLAYING) */
static GstStateChangeReturn
gst_daqiri_test_src_change_state (GstElement *element, GstStateChange transition)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (element);

  switch (transition) {
    case GST_STATE_CHANGE_PLAYING_TO_PAUSED:
      GST_OBJECT_LOCK (self);
      self->paused = self->live;
      if (self->paused && self->clock_id != NULL)
        gst_clock_id_unschedule (self->clock_id);
      GST_OBJECT_UNLOCK (self);
      break;
    case GST_STATE_CHANGE_PAUSED_TO_PLAYING:
      GST_OBJECT_LOCK (self);
      self->paused = FALSE;
      if (gst_daqiri_src_undo_pause_unlock (GST_BASE_SRC (self)))
        self->flushing = FALSE;
      g_cond_broadcast (&self->cond);
      GST_OBJECT_UNLOCK (self);
      break;
    default: break;
  }
  return GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
}

/* The pipeline clock and base time for a live source that has one, or else the system
 * clock (monotonic) with no base time. */
static GstClock *
get_clock (GstDaqiriTestSrc *self, GstClockTime *base_time, gboolean *is_pipeline)
{
  GstElement *element = GST_ELEMENT_CAST (self);
  GstClock *clock = NULL;

  GST_OBJECT_LOCK (self);
  if (self->live && element->clock != NULL) {
    clock = gst_object_ref (element->clock);
    *base_time = element->base_time;
  }
  GST_OBJECT_UNLOCK (self);
  *is_pipeline = clock != NULL;
  if (clock == NULL) {
    clock = gst_system_clock_obtain ();
    *base_time = 0;
  }
  return clock;
}

/* Paces the burst of packets [first, first + n): waits until its last packet is due and
 * returns its first packet's due time as PTS. The due times are anchored at the first
 * burst (and again whenever the clock changes), never at the previous burst, so a late
 * burst does not shift the ones after it. */
static GstFlowReturn
pace_burst (
    GstDaqiriTestSrc *self, guint64 first, guint n, GstClockTime *pts, GstClockTime *duration)
{
  GstClockTime base_time;
  gboolean on_pipeline;
  GstFlowReturn ret = GST_FLOW_OK;

  *pts = GST_CLOCK_TIME_NONE;
  *duration = GST_CLOCK_TIME_NONE;
  if (self->pps == 0 && !self->live)
    return GST_FLOW_OK;

  GstClock *clock = get_clock (self, &base_time, &on_pipeline);
  GstClockTime now = gst_clock_get_time (clock);

  if (self->pps == 0) {
    /* as fast as possible: a live buffer is stamped with when it was made */
    if (on_pipeline)
      *pts = now > base_time ? now - base_time : 0;
    goto out;
  }

  GstClockTime first_due = gst_util_uint64_scale (first, GST_SECOND, self->pps);
  GstClockTime last_due = gst_util_uint64_scale (first + n - 1, GST_SECOND, self->pps);
  if (clock != self->pacing_clock) {
    /* anchor: the first packet of this burst is due now */
    GstClockTime local = on_pipeline ? (now > base_time ? now - base_time : 0) : now;
    self->epoch = local > first_due ? local - first_due : 0;
    gst_object_replace ((GstObject **) &self->pacing_clock, GST_OBJECT_CAST (clock));
    GST_DEBUG_OBJECT (self, "pacing on %" GST_PTR_FORMAT ", packet 0 due at %" GST_TIME_FORMAT,
        clock, GST_TIME_ARGS (self->epoch));
  }

  ret = wait_until (self, clock, on_pipeline, self->epoch + last_due);
  if (ret != GST_FLOW_OK)
    goto out;
  /* on the system clock running time starts with the first packet */
  *pts = (on_pipeline ? self->epoch : 0) + first_due;
  *duration = gst_util_uint64_scale (first + n, GST_SECOND, self->pps) - first_due;

out:
  gst_object_unref (clock);
  return ret;
}

/* The packet meta rides along with the pool's buffer (flagged POOLED), so its descriptor
 * array is allocated once per buffer, not once per burst. */
static GstDaqiriPacketMeta *
burst_meta (GstDaqiriTestSrc *self, GstBuffer *buf)
{
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
  if (meta != NULL)
    return meta;

  GstDaqiriPacket *packets = g_new0 (GstDaqiriPacket, self->burst);
  meta = gst_buffer_add_daqiri_packet_meta_full (buf, packets, 0, g_free, packets);
  GST_META_FLAG_SET (meta, GST_META_FLAG_POOLED);
  return meta;
}

static GstFlowReturn
gst_daqiri_test_src_create (GstPushSrc *psrc, GstBuffer **outbuf)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (psrc);
  GstBaseSrc *bsrc = GST_BASE_SRC (psrc);
  GstClockTime pts, duration;
  GstFlowReturn ret;
  GstMapInfo map;

  const guint64 first = self->next_packet;
  if (self->limit != 0 && first >= self->limit)
    return GST_FLOW_EOS;
  guint n = self->burst;
  if (self->limit != 0 && self->limit - first < n)
    n = (guint) (self->limit - first);

  GstBufferPool *pool = gst_base_src_get_buffer_pool (bsrc);
  if (pool == NULL) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("no buffer pool was negotiated"), (NULL));
    return GST_FLOW_ERROR;
  }
  GstBuffer *buf = NULL;
  ret = gst_buffer_pool_acquire_buffer (pool, &buf, NULL);
  gst_object_unref (pool);
  if (ret != GST_FLOW_OK)
    return ret;

  /* TX slots: the meta lists the slots lent, packet i goes to slot i */
  GstDaqiriPacketMeta *meta = burst_meta (self, buf);
  const gboolean in_slots = self->in_slots;
  if (in_slots)
    n = MIN (n, meta->n_packets);

  ret = pace_burst (self, first, n, &pts, &duration);
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref (buf);
    return ret;
  }

  if (!gst_buffer_map (buf, &map, GST_MAP_WRITE)) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("could not map a burst buffer"), (NULL));
    return GST_FLOW_ERROR;
  }

  gboolean fits = n > 0;
  if (!in_slots) {
    fits = map.size >= (gsize) self->burst * ALIGN_UP (self->size_max);
  } else {
    for (guint i = 0; i < n && fits; i++)
      fits = meta->packets[i].length >= self->size_max &&
          meta->packets[i].offset <= map.size - self->size_max;
  }
  if (!fits) {
    gst_buffer_unmap (buf, &map);
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("a burst buffer holds %" G_GSIZE_FORMAT " bytes in %u place(s), a burst needs up "
         "to %u frames of up to %u bytes",
            map.size, in_slots ? meta->n_packets : self->burst, n, self->size_max),
        (NULL));
    return GST_FLOW_ERROR;
  }

  GstDaqiriPacket *pkt = meta->packets;
  const GstDaqiriTestPacketParams *params = &self->params;
  const guint size_min = self->size_min, size_max = self->size_max;
  const guint n_flows = self->n_flows;
  guint flow = self->next_flow;
  guint offset = 0, end = 0;
  guint64 bytes = 0;

  for (guint i = 0; i < n; i++) {
    const guint32 seq = (guint32) (first + i);
    const guint size =
        size_min == size_max ? size_min : gst_daqiri_test_packet_size (size_min, size_max, seq);
    if (in_slots)
      offset = pkt[i].offset;
    gst_daqiri_test_packet_write (params, map.data + offset, size, seq, flow);
    pkt[i].offset = offset;
    pkt[i].length = size;
    pkt[i].flow_id = flow;
    pkt[i].flags = 0;
    pkt[i].timestamp = 0;
    end = offset + size;
    offset += ALIGN_UP (size);
    bytes += size;
    if (++flow == n_flows)
      flow = 0;
  }
  meta->n_packets = n;
  gst_buffer_unmap (buf, &map);
  gst_buffer_set_size (buf, end);

  self->next_packet = first + n;
  self->next_flow = flow;
  GST_BUFFER_PTS (buf) = pts;
  GST_BUFFER_DURATION (buf) = duration;
  GST_BUFFER_OFFSET (buf) = first;
  GST_BUFFER_OFFSET_END (buf) = first + n;

  GST_OBJECT_LOCK (self);
  self->packets += n;
  self->bytes += bytes;
  self->bursts++;
  GST_OBJECT_UNLOCK (self);

  *outbuf = buf;
  return GST_FLOW_OK;
}

static void
gst_daqiri_test_src_finalize (GObject *object)
{
  GstDaqiriTestSrc *self = GST_DAQIRI_TEST_SRC (object);

  gst_daqiri_addresses_clear (&self->addrs);
  if (self->clock_id != NULL)
    gst_clock_id_unref (self->clock_id);
  gst_clear_object (&self->pacing_clock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_daqiri_test_src_class_init (GstDaqiriTestSrcClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *pushsrc_class = GST_PUSH_SRC_CLASS (klass);
  const GParamFlags rw = GST_DAQIRI_PARAM_RW_READY;

  gobject_class->set_property = gst_daqiri_test_src_set_property;
  gobject_class->get_property = gst_daqiri_test_src_get_property;
  gobject_class->finalize = gst_daqiri_test_src_finalize;

  g_object_class_install_property (gobject_class, PROP_NUM_PACKETS,
      g_param_spec_uint64 ("num-packets", "Number of packets",
          "Packets to send before EOS (the last burst may be short); 0: never stop", 0, G_MAXUINT64,
          DEFAULT_NUM_PACKETS, rw));
  g_object_class_install_property (gobject_class, PROP_BURST_PACKETS,
      g_param_spec_uint ("burst-packets", "Burst packets", "Packets in one buffer", 1,
          MAX_BURST_PACKETS, DEFAULT_BURST_PACKETS, rw));
  g_object_class_install_property (gobject_class, PROP_PACKET_SIZE_MIN,
      g_param_spec_uint ("packet-size-min", "Smallest packet size",
          "Smallest frame in bytes, from the Ethernet header to the end of the UDP "
          "payload (no FCS); must not exceed packet-size-max",
          MIN_PACKET_SIZE, MAX_PACKET_SIZE, DEFAULT_PACKET_SIZE_MIN, rw));
  g_object_class_install_property (gobject_class, PROP_PACKET_SIZE_MAX,
      g_param_spec_uint ("packet-size-max", "Largest packet size",
          "Largest frame in bytes (no FCS); packet sizes cover packet-size-min.."
          "packet-size-max evenly in a scrambled order",
          MIN_PACKET_SIZE, MAX_PACKET_SIZE, DEFAULT_PACKET_SIZE_MAX, rw));
  g_object_class_install_property (gobject_class, PROP_N_FLOWS,
      g_param_spec_uint ("n-flows", "Number of flows",
          "Number of flows, taken in turn packet by packet: flow f is sent to UDP port "
          "dst-port + f and has flow id f in the packet meta",
          1, MAX_FLOWS, DEFAULT_FLOWS, rw));
  g_object_class_install_property (gobject_class, PROP_FLOWS,
      g_param_spec_uint ("flows", "Number of flows (deprecated)", "Deprecated: use n-flows", 1,
          MAX_FLOWS, DEFAULT_FLOWS, rw | G_PARAM_DEPRECATED));
  g_object_class_install_property (gobject_class, PROP_RATE,
      g_param_spec_uint64 ("rate", "Rate",
          "Packets per second; a burst leaves when its last packet is due. 0: as fast "
          "as possible",
          0, G_MAXUINT64, DEFAULT_RATE, rw));
  gst_daqiri_install_address_properties (
      gobject_class, PROP_SRC_MAC, "flow f uses dst-port + f, which must not exceed 65535");
  g_object_class_install_property (gobject_class, PROP_UDP_CHECKSUM,
      g_param_spec_boolean ("udp-checksum", "UDP checksum",
          "Compute the UDP checksum; off: the checksum field is 0 (none)", DEFAULT_UDP_CHECKSUM,
          rw));
  g_object_class_install_property (gobject_class, PROP_IS_LIVE,
      g_param_spec_boolean ("is-live", "Is live",
          "Act as a live source: produce only in PLAYING, pace and timestamp against "
          "the pipeline clock",
          DEFAULT_IS_LIVE, rw));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counters since the element last started: packets, bytes (frame bytes, no "
          "FCS), bursts",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "daqiri test packet source",
      "Source/Network",
      "Generates bursts of checkable UDP/IPv4/Ethernet test packets, optionally paced",
      "daqiri developers");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_daqiri_test_src_change_state);
  basesrc_class->start = GST_DEBUG_FUNCPTR (gst_daqiri_test_src_start);
  basesrc_class->stop = GST_DEBUG_FUNCPTR (gst_daqiri_test_src_stop);
  basesrc_class->negotiate = GST_DEBUG_FUNCPTR (gst_daqiri_test_src_negotiate);
  basesrc_class->decide_allocation = GST_DEBUG_FUNCPTR (gst_daqiri_test_src_decide_allocation);
  basesrc_class->query = GST_DEBUG_FUNCPTR (gst_daqiri_test_src_query);
  basesrc_class->unlock = GST_DEBUG_FUNCPTR (gst_daqiri_test_src_unlock);
  basesrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_daqiri_test_src_unlock_stop);
  pushsrc_class->create = GST_DEBUG_FUNCPTR (gst_daqiri_test_src_create);

  GST_DEBUG_CATEGORY_INIT (daqiritestsrc_debug, "daqiritestsrc", 0, "daqiri test packet source");
}

static void
gst_daqiri_test_src_init (GstDaqiriTestSrc *self)
{
  self->num_packets = DEFAULT_NUM_PACKETS;
  self->burst_packets = DEFAULT_BURST_PACKETS;
  self->packet_size_min = DEFAULT_PACKET_SIZE_MIN;
  self->packet_size_max = DEFAULT_PACKET_SIZE_MAX;
  self->flows = DEFAULT_FLOWS;
  self->rate = DEFAULT_RATE;
  gst_daqiri_addresses_init (&self->addrs);
  self->udp_checksum = DEFAULT_UDP_CHECKSUM;

  g_cond_init (&self->cond);
  gst_base_src_set_live (GST_BASE_SRC (self), DEFAULT_IS_LIVE);
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
}
