/**
 * SECTION:element-daqirisrc
 * @title: daqirisrc
 * @short_description: receive raw Ethernet packets in bursts, without a copy
 *
 * daqirisrc receives packets from a port (a NIC driven by one of daqiri's engines) and
 * pushes them downstream in bursts: one buffer per burst of up to #GstDaqiriSrc:burst-packets
 * packets that lie in one range of the receive ring, with a #GstDaqiriPacketMeta listing
 * every packet (offset, length, flow id, timestamp, flags). The buffer's memory is the ring
 * itself; when the buffer is freed the range goes back to the NIC. Downstream that holds
 * buffers too long makes the ring run dry: the NIC drops and #GstDaqiriSrc:stats counts it.
 *
 * Packets are filtered and marked by #GstDaqiriSrc:flows, and spread over
 * #GstDaqiriSrc:queues receive queues that the element polls in its streaming thread.
 * Time. Every packet's timestamp (in the meta) is port-clock ns. The element provides a
 * clock that reads the port clock while the port is open (from READY to PAUSED until back
 * to READY: #GST_ELEMENT_FLAG_PROVIDE_CLOCK is set only then, and the clock-provide and
 * clock-lost messages say when it comes and goes, as audio sources do); with it as the
 * pipeline clock a buffer's PTS is exactly
 * its first packet's port time minus the base time. On any other pipeline clock the port
 * time is mapped to that clock by a linear regression over (port time, clock time) pairs
 * sampled from the streaming thread (as decklinkvideosrc does), which follows a port clock
 * that runs at a different rate. The element sets the PTS of every buffer itself
 * (#GstBaseSrc:do-timestamp is not needed). Every buffer also carries the raw port time
 * of its first packet in a #GstReferenceTimestampMeta with the reference caps
 * `timestamp/x-daqiri-port, device=(string)DEVICE`.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 daqirisrc device=afpacket:eth1 flows="proto=udp dst-port=5000 mark=7" ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqirisrc.h"
#include "gstdaqiriburst.h"
#include "gstdaqiriclock.h"
#include "gstdaqirielement.h"
#include "flow-counters.h"
#ifdef DQ_HAVE_CUDA
#include "gstdaqiricudamem.h"
#include "gstdaqirigstcuda.h"
#endif

#include <gst/daqiri/daqiri.h>
#include <string.h>
#include <unistd.h>

GST_DEBUG_CATEGORY_STATIC (daqirisrc_debug);
#define GST_CAT_DEFAULT daqirisrc_debug

#define DEFAULT_DEVICE NULL
#define DEFAULT_FLOWS NULL
#define DEFAULT_QUEUES 1
#define MAX_QUEUES 64
#define DEFAULT_BURST_PACKETS 256
#define DEFAULT_BURST_TIMEOUT (1 * GST_MSECOND)
#define MIN_BURST_TIMEOUT (1 * GST_USECOND)
#define MAX_BURST_TIMEOUT (10 * GST_SECOND)
#define DEFAULT_RING_SIZE (G_GUINT64_CONSTANT (64) << 20)
#define MIN_RING_SIZE (G_GUINT64_CONSTANT (64) << 10)
#define MAX_RING_SIZE (G_GUINT64_CONSTANT (4) << 30)
#define DEFAULT_MAX_PACKET_SIZE 9216
#define DROP_WARNING_INTERVAL_US ((gint64) G_USEC_PER_SEC)
/* media type of the reference caps of the GstReferenceTimestampMeta with the port time */
#define PORT_TIME_REFERENCE "timestamp/x-daqiri-port"

enum {
  PROP_0,
  PROP_DEVICE,
  PROP_FLOWS,
  PROP_QUEUES,
  PROP_BURST_PACKETS,
  PROP_BURST_TIMEOUT,
  PROP_RING_SIZE,
  PROP_MAX_PACKET_SIZE,
  PROP_HEADER_SIZE,
  PROP_STATS,
  PROP_STATS_INTERVAL,
  PROP_MEMORY,
  PROP_GPUDIRECT,
  PROP_FILTER,
};

/* What the element delivers (DqRxFilter). */
typedef enum {
  GST_DAQIRI_FILTER_RULES = DQ_RX_FILTER_RULES,
  GST_DAQIRI_FILTER_ALL = DQ_RX_FILTER_ALL,
  GST_DAQIRI_FILTER_NONE = DQ_RX_FILTER_NONE,
} GstDaqiriFilter;

#define GST_TYPE_DAQIRI_FILTER (gst_daqiri_filter_get_type ())
static GType
gst_daqiri_filter_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_DAQIRI_FILTER_RULES, "What the flow rules match (everything without rules)", "rules" },
    { GST_DAQIRI_FILTER_ALL, "Every packet, flow id 0, the rules set aside", "all" },
    { GST_DAQIRI_FILTER_NONE, "Nothing (a ConnectX leaves the traffic to the kernel)", "none" },
    { 0, NULL, NULL }
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstDaqiriFilter", values));
  return type;
}

struct _GstDaqiriSrc {
  GstPushSrc parent;

  /* properties, protected by the object lock */
  gchar *device;
  gchar *flows;
  guint n_queues;
  guint burst_packets;
  guint64 burst_timeout;
  guint64 ring_size;
  guint max_packet_size;
  guint header_size;
  guint64 stats_interval;
  GstDaqiriMemory memory;
  gboolean gpudirect;
  GstDaqiriFilter filter;

  /* serializes changes of flows and filter while the queues run */
  GMutex steer_lock;

  /* between start and stop */
  DqPort *port;
  GstClock *clock;
  GstDaqiriRxRing **rings;
  guint n_rings;
  guint next_ring;
  gint flushing;
  gint paused; /* PLAYING -> PAUSED until PAUSED -> PLAYING */

  /* time, between start and stop: used by the streaming thread only */
  GstDaqiriTimeMap time_map; /* port time -> pipeline clock time */
  GstCaps *port_time_caps;   /* reference caps of the port-time meta */

  /* drop warnings and periodic stats messages */
  gint64 last_drop_check;
  guint64 drops_reported;
  gint64 last_stats_post;
  DqRxStats last_posted;

  /* totals of the queues that were stopped, so stats survive a restart */
  DqRxStats past;
  /* packets and bytes per flow id since start: added by the streaming thread */
  DqFlowCounters *flow_counts;

#ifdef DQ_HAVE_CUDA
  /* memory=cuda bursts as GstCudaMemory (downstream asked for memory:CUDAMemory): the
   * pipeline's GstCudaContext (object lock) */
  GstObject *cuda_context;
  gboolean gstcuda_bursts; /* set in negotiate, read by the streaming thread */
#endif
};

static gint next_group_id = 1;

#define gst_daqiri_src_parent_class parent_class
G_DEFINE_TYPE (GstDaqiriSrc, gst_daqiri_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (daqirisrc, "daqirisrc", GST_RANK_NONE, GST_TYPE_DAQIRI_SRC);

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
        GST_STATIC_CAPS (GST_DAQIRI_PACKETS_MEDIA_TYPE
            ", max-packet-size = (int) [ 64, 65535 ]; " GST_DAQIRI_PACKETS_MEDIA_TYPE
            "(" GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA "), "
            "max-packet-size = (int) [ 64, 65535 ]; " GST_DAQIRI_PACKETS_MEDIA_TYPE
            "(memory:CUDAMemory), "
            "max-packet-size = (int) [ 64, 65535 ]"));

static void
add_stats (DqRxStats *sum, const DqRxStats *s)
{
  sum->packets += s->packets;
  sum->bytes += s->bytes;
  sum->bursts += s->bursts;
  sum->drops_ring_full += s->drops_ring_full;
  sum->drops_filtered += s->drops_filtered;
  sum->truncated += s->truncated;
  sum->errors += s->errors;
  sum->recoveries += s->recoveries;
}

/* totals over the running queues; object lock held */
static void
collect_stats (GstDaqiriSrc *self, DqRxStats *sum)
{
  *sum = self->past;
  for (guint i = 0; i < self->n_rings; i++) {
    DqRxStats s;
    dq_rxq_stats (gst_daqiri_rx_ring_queue (self->rings[i]), &s);
    add_stats (sum, &s);
  }
}

/* "flow-counts": packets and bytes of each flow id since start, ids ascending;
 * "flow-counts-overflow": packets of flow ids past the ones counted */
static void
add_flow_counts (GstDaqiriSrc *self, GstStructure *st)
{
  guint n = 0;
  guint64 overflow = 0;
  DqFlowCount *counts = dq_flow_counters_get (self->flow_counts, &n, &overflow);
  GValue arr = G_VALUE_INIT;
  gst_value_array_init (&arr, n);
  for (guint i = 0; i < n; i++) {
    GValue v = G_VALUE_INIT;
    g_value_init (&v, GST_TYPE_STRUCTURE);
    g_value_take_boxed (&v,
        gst_structure_new ("flow-count", "flow-id", G_TYPE_UINT, counts[i].flow_id, "packets",
            G_TYPE_UINT64, counts[i].packets, "bytes", G_TYPE_UINT64, counts[i].bytes, NULL));
    gst_value_array_append_and_take_value (&arr, &v);
  }
  g_free (counts);
  gst_structure_take_value (st, "flow-counts", &arr);
  gst_structure_set (st, "flow-counts-overflow", G_TYPE_UINT64, overflow, NULL);
}

static GstStructure *
make_stats (GstDaqiriSrc *self)
{
  DqRxStats s;
  guint64 ring_bytes = 0;

  GValue per_queue = G_VALUE_INIT;

  gst_value_array_init (&per_queue, 0);
  GST_OBJECT_LOCK (self);
  /* collect_stats, keeping each queue's packets on the way */
  s = self->past;
  for (guint i = 0; i < self->n_rings; i++) {
    DqRxQueue *rxq = gst_daqiri_rx_ring_queue (self->rings[i]);
    DqRxStats qs;
    GValue v = G_VALUE_INIT;
    ring_bytes += dq_rxq_ring_bytes (rxq);
    dq_rxq_stats (rxq, &qs);
    add_stats (&s, &qs);
    g_value_init (&v, G_TYPE_UINT64);
    g_value_set_uint64 (&v, qs.packets);
    gst_value_array_append_and_take_value (&per_queue, &v);
  }
  guint n = self->n_rings;
  DqRingPlacement placement =
      n > 0 ? dq_rxq_ring_placement (gst_daqiri_rx_ring_queue (self->rings[0])) : DQ_RING_HOST;
  GST_OBJECT_UNLOCK (self);

  GstStructure *st = gst_structure_new ("application/x-daqiri-src-stats", "packets", G_TYPE_UINT64,
      s.packets, "bytes", G_TYPE_UINT64, s.bytes, "bursts", G_TYPE_UINT64, s.bursts, "drops",
      G_TYPE_UINT64, s.drops_ring_full, "drops-ring-full", G_TYPE_UINT64, s.drops_ring_full,
      "drops-filtered", G_TYPE_UINT64, s.drops_filtered, "truncated", G_TYPE_UINT64, s.truncated,
      "errors", G_TYPE_UINT64, s.errors, "recoveries", G_TYPE_UINT64, s.recoveries, "queues",
      G_TYPE_UINT, n, "ring-bytes", G_TYPE_UINT64, ring_bytes, "ring-memory", G_TYPE_STRING,
      dq_ring_placement_name (placement), NULL);
  /* packets of each running queue, queue 0 first */
  gst_structure_take_value (st, "queue-packets", &per_queue);
  add_flow_counts (self, st);
  return st;
}

/* the properties kept as plain members */
static const GstDaqiriMember src_members[] = {
  GST_DAQIRI_MEMBER (PROP_DEVICE, GstDaqiriSrc, device),
  GST_DAQIRI_MEMBER (PROP_FLOWS, GstDaqiriSrc, flows),
  GST_DAQIRI_MEMBER (PROP_QUEUES, GstDaqiriSrc, n_queues),
  GST_DAQIRI_MEMBER (PROP_BURST_PACKETS, GstDaqiriSrc, burst_packets),
  GST_DAQIRI_MEMBER (PROP_BURST_TIMEOUT, GstDaqiriSrc, burst_timeout),
  GST_DAQIRI_MEMBER (PROP_RING_SIZE, GstDaqiriSrc, ring_size),
  GST_DAQIRI_MEMBER (PROP_MAX_PACKET_SIZE, GstDaqiriSrc, max_packet_size),
  GST_DAQIRI_MEMBER (PROP_HEADER_SIZE, GstDaqiriSrc, header_size),
  GST_DAQIRI_MEMBER (PROP_STATS_INTERVAL, GstDaqiriSrc, stats_interval),
  GST_DAQIRI_MEMBER (PROP_MEMORY, GstDaqiriSrc, memory),
  GST_DAQIRI_MEMBER (PROP_GPUDIRECT, GstDaqiriSrc, gpudirect),
  GST_DAQIRI_MEMBER (PROP_FILTER, GstDaqiriSrc, filter),
};

/* Puts `filter` and `flows` in place on every running queue; on failure the queues
 * changed so far go back to `old_*`. FALSE with *error set when the new ones were refused
 * (a rule the engine cannot install, a queue that does not exist). */
static gboolean
rings_steer (GstDaqiriRxRing **rings, guint n_rings, GstDaqiriFilter filter, const gchar *flows,
    GstDaqiriFilter old_filter, const gchar *old_flows, GError **error)
{
  DqFlowRule *rules = NULL, *old_rules = NULL;
  guint n_rules = 0, n_old = 0, done = 0;

  if (!dq_flow_parse (flows, &rules, &n_rules, error))
    return FALSE;
  for (; done < n_rings; done++) {
    DqRxQueue *rxq = gst_daqiri_rx_ring_queue (rings[done]);
    if (!dq_rxq_set_flows (rxq, (DqRxFilter) filter, rules, n_rules, error))
      break;
  }
  if (done < n_rings && done > 0 && dq_flow_parse (old_flows, &old_rules, &n_old, NULL)) {
    for (guint i = 0; i < done; i++)
      dq_rxq_set_flows (
          gst_daqiri_rx_ring_queue (rings[i]), (DqRxFilter) old_filter, old_rules, n_old, NULL);
  }
  g_free (old_rules);
  g_free (rules);
  return done == n_rings;
}

/* `flows` and `filter`: before start they are only kept; while the queues run they are
 * put in place first and kept only when that worked, else a warning names the problem
 * and the earlier ones stay. Packets of a flow that the earlier and the new rules
 * deliver alike are never lost in the change. */
static void
set_steering (GstDaqiriSrc *self, guint prop_id, const GValue *value)
{
  g_mutex_lock (&self->steer_lock);
  GST_OBJECT_LOCK (self);
  gchar *old_flows = g_strdup (self->flows);
  GstDaqiriFilter old_filter = self->filter;
  guint n_rings = self->n_rings;
  GstDaqiriRxRing **rings = g_new (GstDaqiriRxRing *, MAX (n_rings, 1));
  for (guint i = 0; i < n_rings; i++)
    rings[i] = gst_daqiri_rx_ring_ref (self->rings[i]);
  gst_daqiri_member_set (self, src_members, G_N_ELEMENTS (src_members), prop_id, value);
  gchar *flows = g_strdup (self->flows);
  GstDaqiriFilter filter = self->filter;
  GST_OBJECT_UNLOCK (self);

  GError *error = NULL;
  if (n_rings > 0 && !rings_steer (rings, n_rings, filter, flows, old_filter, old_flows, &error)) {
    GST_OBJECT_LOCK (self);
    g_free (self->flows);
    self->flows = g_strdup (old_flows);
    self->filter = old_filter;
    GST_OBJECT_UNLOCK (self);
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("property '%s': %s; the earlier flow rules and filter stay in place",
            prop_id == PROP_FLOWS ? "flows" : "filter", error->message),
        (NULL));
    g_error_free (error);
  } else if (n_rings > 0) {
    GST_INFO_OBJECT (self, "flow rules now \"%s\", filter %d", flows, filter);
  }
  for (guint i = 0; i < n_rings; i++)
    gst_daqiri_rx_ring_unref (rings[i]);
  g_free (rings);
  g_free (flows);
  g_free (old_flows);
  g_mutex_unlock (&self->steer_lock);
}

static void
gst_daqiri_src_set_property (GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (object);

  if (prop_id == PROP_FLOWS || prop_id == PROP_FILTER) {
    set_steering (self, prop_id, value);
    return;
  }
  if (!gst_daqiri_member_set_locked (
          object, src_members, G_N_ELEMENTS (src_members), prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
gst_daqiri_src_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, make_stats (self));
    return;
  }
  if (!gst_daqiri_member_get_locked (
          object, src_members, G_N_ELEMENTS (src_members), prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
}

static void
release_rings (GstDaqiriSrc *self)
{
  GST_OBJECT_LOCK (self);
  DqRxStats final;
  collect_stats (self, &final);
  self->past = final;
  GstDaqiriRxRing **rings = self->rings;
  guint n = self->n_rings;
  self->rings = NULL;
  self->n_rings = 0;
  GST_OBJECT_UNLOCK (self);

  /* a ring lives on while downstream still holds its bursts */
  for (guint i = 0; i < n; i++)
    gst_daqiri_rx_ring_unref (rings[i]);
  g_free (rings);
}

/* Checks that every rule's queue exists; posts an ERROR otherwise. */
static gboolean
check_flow_queues (GstDaqiriSrc *self, const DqFlowRule *rules, guint n_rules, guint n_queues)
{
  for (guint i = 0; i < n_rules; i++) {
    if ((rules[i].keys & DQ_FLOW_QUEUE) && rules[i].queue >= n_queues) {
      char *text = dq_flow_rule_to_string (&rules[i]);
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("property 'flows': rule %u (\"%s\") sends to queue %u, but property 'queues' "
           "is %u; queue takes 0..%u",
              i + 1, text, rules[i].queue, n_queues, n_queues - 1),
          (NULL));
      g_free (text);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
gst_daqiri_src_start (GstBaseSrc *bsrc)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (bsrc);
  GError *error = NULL;
  DqFlowRule *rules = NULL;
  guint n_rules = 0;

  /* a change of flows or filter meanwhile waits for the queues this start makes */
  g_mutex_lock (&self->steer_lock);
  GST_OBJECT_LOCK (self);
  gchar *device = g_strdup (self->device);
  gchar *flows = g_strdup (self->flows);
  DqRxConfig config = {
    .burst_packets = self->burst_packets,
    .burst_timeout_ns = self->burst_timeout,
    .ring_bytes = self->ring_size,
    .max_packet_size = self->max_packet_size,
    .header_size = self->header_size,
    .n_queues = self->n_queues,
    /* a fresh group for every start: queues of an earlier run live on while
     * downstream still holds their bursts, and must not be mistaken for ours */
    .group_id = (guint32) g_atomic_int_add (&next_group_id, 1) ^ ((guint32) getpid () << 16),
  };
  config.filter = (DqRxFilter) self->filter;
  GstDaqiriMemory memory = self->memory;
  gboolean gpudirect = self->gpudirect;
  memset (&self->past, 0, sizeof self->past);
  GST_OBJECT_UNLOCK (self);
  dq_flow_counters_reset (self->flow_counts);

  if (!dq_flow_parse (flows, &rules, &n_rules, &error)) {
    GST_DAQIRI_POST_ENGINE_ERROR (self, "property 'flows'", error);
    goto fail;
  }
  if (!check_flow_queues (self, rules, n_rules, config.n_queues))
    goto fail;
  if (memory == GST_DAQIRI_MEMORY_CUDA &&
      !gst_daqiri_cuda_usable (GST_ELEMENT_CAST (self), "memory"))
    goto fail;

  self->port = gst_daqiri_open_port (GST_ELEMENT_CAST (self), device);
  if (self->port == NULL)
    goto fail;
#ifdef DQ_HAVE_CUDA
  /* a device that writes its rings itself writes GPU memory directly (a ConnectX by
   * GPUDirect RDMA, the emulated ConnectX by copies); with software engines, or
   * gpudirect=false, the ring is pinned host memory that the GPU reads across the bus */
  if (memory == GST_DAQIRI_MEMORY_CUDA)
    config.ring_memory = gpudirect && dq_port_info (self->port)->device_dma
        ? gst_daqiri_cuda_device_ring_memory ()
        : gst_daqiri_cuda_ring_memory ();
#else
  (void) gpudirect;
#endif

  config.flows = rules;
  config.n_flows = n_rules;
  GstDaqiriRxRing **rings = g_new0 (GstDaqiriRxRing *, config.n_queues);
  for (guint q = 0; q < config.n_queues; q++) {
    config.queue_index = q;
    DqRxQueue *rxq = dq_rxq_create (self->port, &config, &error);
    if (rxq == NULL) {
      GST_DAQIRI_POST_ENGINE_ERROR (self, "receive queue", error);
      for (guint i = 0; i < q; i++)
        gst_daqiri_rx_ring_unref (rings[i]);
      g_free (rings);
      goto fail;
    }
    rings[q] = gst_daqiri_rx_ring_new (rxq);
  }
  GST_INFO_OBJECT (self, "%u receive queue(s), rings in %s memory", config.n_queues,
      dq_ring_placement_name (dq_rxq_ring_placement (gst_daqiri_rx_ring_queue (rings[0]))));

  GST_OBJECT_LOCK (self);
  self->rings = rings;
  self->n_rings = config.n_queues;
  self->next_ring = 0;
  self->clock = gst_daqiri_clock_new (self->port);
  GstClock *clock = gst_object_ref (self->clock);
  GST_OBJECT_FLAG_SET (self, GST_ELEMENT_FLAG_PROVIDE_CLOCK);
  GST_OBJECT_UNLOCK (self);
  /* the bin asks its children for a clock again when the pipeline next picks one */
  gst_element_post_message (
      GST_ELEMENT (self), gst_message_new_clock_provide (GST_OBJECT (self), clock, TRUE));
  gst_object_unref (clock);
  gst_daqiri_time_map_init (&self->time_map, self->port);
  self->port_time_caps =
      gst_caps_new_simple (PORT_TIME_REFERENCE, "device", G_TYPE_STRING, device, NULL);
  self->last_drop_check = self->last_stats_post = g_get_monotonic_time ();
  self->drops_reported = 0;
  memset (&self->last_posted, 0, sizeof self->last_posted);

  GST_INFO_OBJECT (self, "receiving from %s: %u queue(s), %u flow rule(s), port clock %s", device,
      config.n_queues, n_rules, dq_port_info (self->port)->clock_name);
  g_free (rules);
  g_free (device);
  g_free (flows);
  g_mutex_unlock (&self->steer_lock);
  return TRUE;

fail:
  g_clear_error (&error);
  g_clear_pointer (&self->port, dq_port_unref);
  g_free (rules);
  g_free (device);
  g_free (flows);
  g_mutex_unlock (&self->steer_lock);
  return FALSE;
}

static gboolean
gst_daqiri_src_stop (GstBaseSrc *bsrc)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (bsrc);

  release_rings (self);
  if (self->time_map.n_samples > 0)
    GST_DEBUG_OBJECT (self,
        "time map: %" G_GUINT64_FORMAT " samples, %" G_GUINT64_FORMAT " fits, %" G_GUINT64_FORMAT
        " refused, %" G_GUINT64_FORMAT " restarts",
        self->time_map.n_samples, self->time_map.n_fits, self->time_map.n_rejected,
        self->time_map.n_restarts);
  gst_daqiri_time_map_clear (&self->time_map);
  gst_daqiri_time_map_init (&self->time_map, NULL);
  gst_clear_caps (&self->port_time_caps);
  GST_OBJECT_LOCK (self);
  GstClock *clock = self->clock;
  self->clock = NULL;
  GST_OBJECT_FLAG_UNSET (self, GST_ELEMENT_FLAG_PROVIDE_CLOCK);
  GST_OBJECT_UNLOCK (self);
  if (clock != NULL) {
    /* a pipeline running on it picks another one */
    gst_element_post_message (
        GST_ELEMENT (self), gst_message_new_clock_lost (GST_OBJECT (self), clock));
    gst_object_unref (clock);
  }
  g_clear_pointer (&self->port, dq_port_unref);
  return TRUE;
}

static GstClock *
gst_daqiri_src_provide_clock (GstElement *element)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (element);
  GstClock *clock = NULL;

  GST_OBJECT_LOCK (self);
  if (self->clock != NULL)
    clock = gst_object_ref (self->clock);
  GST_OBJECT_UNLOCK (self);
  return clock;
}

#ifdef DQ_HAVE_CUDA
/* memory=cuda: bursts as GstCudaMemory (memory:CUDAMemory) of the pipeline's CUDA context
 * when downstream prefers them to daqiri's own (memory:DaqiriCUDA in *caps: what a peer that
 * takes either gets). They need GStreamer >= 1.24 (gst_cuda_allocator_alloc_wrapped); without
 * it daqiri's own are pushed if downstream takes them, else FALSE with an error posted. */
static gboolean
negotiate_gstcuda (GstDaqiriSrc *self, GstCaps **caps)
{
  GstCaps *gstcuda;
  gboolean own_ok;
  if (!gst_daqiri_gstcuda_peer_prefers (GST_BASE_SRC_PAD (self), *caps, &gstcuda, &own_ok)) {
    gst_caps_unref (gstcuda);
    return TRUE;
  }
  const gchar *why = NULL;
  GstObject *ctx = NULL;
  if (gst_daqiri_gstcuda_can_wrap (&why)) {
    ctx = gst_daqiri_gstcuda_ensure_context (GST_ELEMENT (self), &self->cuda_context);
    if (ctx == NULL)
      why = "no CUDA context (gst.cuda.context) could be found or made";
  }
  if (ctx == NULL) {
    gst_caps_unref (gstcuda);
    return gst_daqiri_gstcuda_fall_back (GST_ELEMENT (self), "bursts", own_ok, why);
  }
  gst_object_unref (ctx);
  gst_caps_replace (caps, gstcuda);
  gst_caps_unref (gstcuda);
  self->gstcuda_bursts = TRUE;
  return TRUE;
}
#endif

static gboolean
gst_daqiri_src_negotiate (GstBaseSrc *bsrc)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (bsrc);

  GST_OBJECT_LOCK (self);
  gint max = (gint) self->max_packet_size;
  gboolean cuda = self->memory == GST_DAQIRI_MEMORY_CUDA;
  gboolean split = self->header_size != 0;
  GST_OBJECT_UNLOCK (self);
  GstCaps *caps =
      gst_caps_new_simple (GST_DAQIRI_PACKETS_MEDIA_TYPE, "max-packet-size", G_TYPE_INT, max, NULL);
  if (cuda)
    gst_caps_set_features (
        caps, 0, gst_caps_features_new (GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA, NULL));
#ifdef DQ_HAVE_CUDA
  self->gstcuda_bursts = FALSE;
  /* split bursts go out as daqiri memory (two memories; GstCudaMemory would be one) */
  if (cuda && !split && !negotiate_gstcuda (self, &caps)) {
    gst_caps_unref (caps);
    return FALSE;
  }
#else
  (void) split;
#endif
  gboolean ok = gst_base_src_set_caps (bsrc, caps);
  gst_caps_unref (caps);
  return ok;
}

static gboolean
gst_daqiri_src_query (GstBaseSrc *bsrc, GstQuery *query)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (bsrc);

  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    /* min: a packet waits at most one burst timeout before its burst is handed out (its
     * PTS is its arrival time). max, how long data may wait before it is lost: the ring
     * keeps packets until downstream releases them, and a full ring drops new packets,
     * not held ones, so no buffered data ever goes stale; how long the ring lasts depends
     * on the packet rate, which nothing knows up front. So: unbounded. */
    GST_OBJECT_LOCK (self);
    GstClockTime min = self->burst_timeout;
    GST_OBJECT_UNLOCK (self);
    gst_query_set_latency (query, TRUE, min, GST_CLOCK_TIME_NONE);
    return TRUE;
  }
#ifdef DQ_HAVE_CUDA
  if (gst_daqiri_gstcuda_context_query (GST_ELEMENT (self), query, &self->cuda_context))
    return TRUE;
#endif
  return GST_BASE_SRC_CLASS (parent_class)->query (bsrc, query);
}

static GstStateChangeReturn
gst_daqiri_src_change_state (GstElement *element, GstStateChange transition)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (element);

  if (transition == GST_STATE_CHANGE_PLAYING_TO_PAUSED)
    g_atomic_int_set (&self->paused, 1);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_PLAYING) {
    g_atomic_int_set (&self->paused, 0);
    if (gst_daqiri_src_undo_pause_unlock (GST_BASE_SRC (self)))
      g_atomic_int_set (&self->flushing, 0);
  }
  return GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
}

static void
gst_daqiri_src_set_context (GstElement *element, GstContext *context)
{
#ifdef DQ_HAVE_CUDA
  gst_daqiri_gstcuda_set_context (element, context, &GST_DAQIRI_SRC (element)->cuda_context);
#endif
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

static gboolean
gst_daqiri_src_unlock (GstBaseSrc *bsrc)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (bsrc);

  g_atomic_int_set (&self->flushing, 1);
  GST_OBJECT_LOCK (self);
  for (guint i = 0; i < self->n_rings; i++)
    dq_rxq_wakeup (gst_daqiri_rx_ring_queue (self->rings[i]));
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static gboolean
gst_daqiri_src_unlock_stop (GstBaseSrc *bsrc)
{
  g_atomic_int_set (&GST_DAQIRI_SRC (bsrc)->flushing, 0);
  return TRUE;
}

/* PTS of a burst whose first packet arrived at port time `ts` (0: no timestamp): `ts`
 * on the pipeline clock (exact on the port's own clock, fitted on any other), minus the
 * base time. */
static GstClockTime
burst_pts (GstDaqiriSrc *self, guint64 ts)
{
  GstElement *element = GST_ELEMENT_CAST (self);
  GstDaqiriTimeMap *map = &self->time_map;

  /* the map holds a reference on the clock it maps to: a pointer compare is enough */
  GST_OBJECT_LOCK (self);
  GstClock *clock = element->clock;
  GstClockTime base_time = element->base_time;
  gboolean changed = clock != map->clock;
  if (changed && clock != NULL)
    gst_object_ref (clock);
  GST_OBJECT_UNLOCK (self);
  if (G_UNLIKELY (changed)) {
    gst_daqiri_time_map_set_clock (map, clock);
    if (clock != NULL)
      gst_object_unref (clock);
  }
  if (map->clock == NULL)
    return GST_CLOCK_TIME_NONE;

  GstClockTime clock_time = ts != 0 ? gst_daqiri_time_map_convert (map, ts) : GST_CLOCK_TIME_NONE;
  if (!GST_CLOCK_TIME_IS_VALID (clock_time))
    clock_time = gst_clock_get_time (map->clock); /* no time: arrival is now */
  return clock_time > base_time ? clock_time - base_time : 0;
}

/* Posts the stats with the rates since the last post as an element message. */
static void
post_stats (GstDaqiriSrc *self, const DqRxStats *s, gint64 now)
{
  double secs = (double) (now - self->last_stats_post) / G_USEC_PER_SEC;
  GstStructure *st = make_stats (self);

  gst_structure_set_name (st, "daqiri-src-stats");
  gst_structure_set (st, "packets-per-second", G_TYPE_DOUBLE,
      (double) (s->packets - self->last_posted.packets) / secs, "bytes-per-second", G_TYPE_DOUBLE,
      (double) (s->bytes - self->last_posted.bytes) / secs, NULL);
  gst_element_post_message (
      GST_ELEMENT_CAST (self), gst_message_new_element (GST_OBJECT_CAST (self), st));
  self->last_posted = *s;
  self->last_stats_post = now;
}

/* Once a second (and every stats-interval): warn about new ring-full drops, post stats. */
static void
check_stats (GstDaqiriSrc *self)
{
  gint64 now = g_get_monotonic_time ();
  gint64 interval = (gint64) (self->stats_interval / 1000);
  gboolean post = interval > 0 && now - self->last_stats_post >= interval;
  if (!post && now - self->last_drop_check < DROP_WARNING_INTERVAL_US)
    return;

  DqRxStats s;
  GST_OBJECT_LOCK (self);
  collect_stats (self, &s);
  GST_OBJECT_UNLOCK (self);
  if (post)
    post_stats (self, &s, now);
  if (now - self->last_drop_check < DROP_WARNING_INTERVAL_US)
    return;
  self->last_drop_check = now;
  if (s.drops_ring_full > self->drops_reported) {
    GST_ELEMENT_WARNING (self, RESOURCE, READ,
        ("%" G_GUINT64_FORMAT " packets dropped because the receive ring was full",
            s.drops_ring_full - self->drops_reported),
        ("downstream holds bursts too long or is too slow, or ring-size is too small "
         "(%" G_GUINT64_FORMAT " dropped in all)",
            s.drops_ring_full));
    self->drops_reported = s.drops_ring_full;
  }
}

static GstFlowReturn
gst_daqiri_src_create (GstPushSrc *psrc, GstBuffer **outbuf)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (psrc);
  GError *error = NULL;
  DqBurst burst;
  guint n = self->n_rings;
  GstDaqiriRxRing *ring = NULL;

  if (n == 0)
    return GST_FLOW_FLUSHING; /* not started */

  while (ring == NULL) {
    /* paused, it keeps receiving (basesrc drops what comes in PAUSED) */
    if (gst_daqiri_src_must_flush (GST_BASE_SRC (self), g_atomic_int_get (&self->flushing),
            g_atomic_int_get (&self->paused)))
      return GST_FLOW_FLUSHING;
    /* one pass over every queue without waiting, then wait on the next one */
    int r = 0;
    guint q = self->next_ring;
    for (guint i = 0; i < n && r == 0; i++) {
      q = (self->next_ring + i) % n;
      r = dq_rxq_poll (gst_daqiri_rx_ring_queue (self->rings[q]), &burst, 0, &error);
    }
    if (r == 0) {
      /* several queues: wake up to look at the others; also wake up once a second
       * (or every stats-interval) while nothing arrives, to report drops of a ring
       * that downstream keeps full, and to post stats */
      q = self->next_ring;
      guint64 wait = n == 1 ? (guint64) DROP_WARNING_INTERVAL_US * 1000 : self->burst_timeout;
      if (self->stats_interval > 0)
        wait = MIN (wait, self->stats_interval);
      r = dq_rxq_poll (gst_daqiri_rx_ring_queue (self->rings[q]), &burst, (gint64) wait, &error);
      if (r == 0) {
        self->next_ring = (q + 1) % n;
        check_stats (self);
      }
    }
    if (r < 0) {
      GST_DAQIRI_POST_ENGINE_ERROR (self, "receive", error);
      g_clear_error (&error);
      return GST_FLOW_ERROR;
    }
    if (r == DQ_RXQ_END) {
      GST_INFO_OBJECT (self, "queue %u: end of stream", q);
      return GST_FLOW_EOS;
    }
    if (r > 0) {
      ring = self->rings[q];
      self->next_ring = (q + 1) % n;
    }
  }

  GstBuffer *buf;
#ifdef DQ_HAVE_CUDA
  if (self->gstcuda_bursts) {
    GstObject *ctx = NULL;
    GST_OBJECT_LOCK (self);
    if (self->cuda_context)
      ctx = gst_object_ref (self->cuda_context);
    GST_OBJECT_UNLOCK (self);
    buf = ctx ? gst_daqiri_burst_buffer_new_gstcuda (ring, &burst, ctx) : NULL;
    gst_clear_object (&ctx);
    if (buf == NULL) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
          ("cannot wrap a burst of %u bytes as GstCudaMemory", (guint) burst.size), (NULL));
      return GST_FLOW_ERROR;
    }
  } else
#endif
    buf = gst_daqiri_burst_buffer_new (ring, &burst);
  dq_flow_counters_add (self->flow_counts, burst.packets, burst.n_packets);
  guint64 first_ts = burst.n_packets > 0 ? burst.packets[0].timestamp : 0;
  GST_BUFFER_PTS (buf) = burst_pts (self, first_ts);
  if (burst.n_packets > 1 && first_ts != 0) {
    guint64 last_ts = burst.packets[burst.n_packets - 1].timestamp;
    if (last_ts >= first_ts)
      GST_BUFFER_DURATION (buf) = last_ts - first_ts;
  }
  /* the raw port time, whatever the pipeline clock (the caps are shared, not copied) */
  if (first_ts != 0)
    gst_buffer_add_reference_timestamp_meta (
        buf, self->port_time_caps, first_ts, GST_BUFFER_DURATION (buf));
  check_stats (self);
  *outbuf = buf;
  return GST_FLOW_OK;
}

static void
gst_daqiri_src_finalize (GObject *object)
{
  GstDaqiriSrc *self = GST_DAQIRI_SRC (object);

  g_free (self->device);
  g_free (self->flows);
  dq_flow_counters_free (self->flow_counts);
  g_mutex_clear (&self->steer_lock);
#ifdef DQ_HAVE_CUDA
  gst_clear_object (&self->cuda_context);
#endif
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_daqiri_src_class_init (GstDaqiriSrcClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *pushsrc_class = GST_PUSH_SRC_CLASS (klass);
  const GParamFlags rw = GST_DAQIRI_PARAM_RW_READY;

  gobject_class->set_property = gst_daqiri_src_set_property;
  gobject_class->get_property = gst_daqiri_src_get_property;
  gobject_class->finalize = gst_daqiri_src_finalize;

  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_string ("device", "Device",
          "Port to receive from, as ENGINE:NAME: afpacket:IFACE for any Linux interface "
          "(eth0, veth1, lo), mlx5:DEV for a ConnectX (IB name, netdev or PCI address), "
          "emu:NAME for the emulated ConnectX, dpdk:DEVARGS for a DPDK device (net_ring0, "
          "net_pcap0,rx_pcap=FILE, a PCI address; builds with DPDK), "
          "pcap:FILE[,pace=fast|recorded][,rate=PPS] to replay a capture file (EOS at its "
          "end; builds with libpcap). Ports are shared "
          "between elements that name the same device",
          DEFAULT_DEVICE, rw));
  g_object_class_install_property (gobject_class, PROP_FLOWS,
      g_param_spec_string ("flows", "Flows",
          "Flow rules: packets matching none are dropped before they reach the ring. "
          "Rules separated by ';', each a list of key=value: proto (udp, tcp, icmp, "
          "0-255), src and dst (IPv4[/prefix]), src-port, dst-port, ethertype, vlan, "
          "mark (the flow id of every matching packet), queue. Empty: receive every "
          "packet with flow id 0. May change while PLAYING: the new rules take over "
          "without losing packets of flows both deliver alike; rules that cannot be "
          "installed post a warning and the earlier ones stay",
          DEFAULT_FLOWS, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_FILTER,
      g_param_spec_enum ("filter", "Filter",
          "What is delivered: rules, what the flow rules match; all, every packet (flow "
          "id 0, the rules set aside); none, nothing (on a ConnectX the traffic goes back "
          "to the kernel). May change while PLAYING, without restarting the queues",
          GST_TYPE_DAQIRI_FILTER, GST_DAQIRI_FILTER_RULES, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_QUEUES,
      g_param_spec_uint ("queues", "Queues",
          "Receive queues the port's traffic is spread over (by flow hash, or by the "
          "flows' queue key); the element polls them all in its streaming thread",
          1, MAX_QUEUES, DEFAULT_QUEUES, rw));
  g_object_class_install_property (gobject_class, PROP_BURST_PACKETS,
      g_param_spec_uint ("burst-packets", "Burst packets", "Most packets in one buffer", 1, 65535,
          DEFAULT_BURST_PACKETS, rw));
  g_object_class_install_property (gobject_class, PROP_BURST_TIMEOUT,
      g_param_spec_uint64 ("burst-timeout", "Burst timeout",
          "Longest time in ns a received packet waits for its burst to fill before the "
          "partial burst is pushed (the afpacket engine rounds up to whole ms)",
          MIN_BURST_TIMEOUT, MAX_BURST_TIMEOUT, DEFAULT_BURST_TIMEOUT, rw));
  g_object_class_install_property (gobject_class, PROP_RING_SIZE,
      g_param_spec_uint64 ("ring-size", "Ring size",
          "Receive ring memory per queue in bytes: packets buffered while downstream is "
          "busy",
          MIN_RING_SIZE, MAX_RING_SIZE, DEFAULT_RING_SIZE, rw));
  g_object_class_install_property (gobject_class, PROP_MAX_PACKET_SIZE,
      g_param_spec_uint ("max-packet-size", "Max packet size",
          "Largest frame kept whole, in bytes from the Ethernet header; longer frames are "
          "cut to this size and flagged truncated",
          64, 65535, DEFAULT_MAX_PACKET_SIZE, rw));
  g_object_class_install_property (gobject_class, PROP_HEADER_SIZE,
      g_param_spec_uint ("header-size", "Header size",
          "Header-data split: the first N bytes of every packet into a ring of headers in "
          "system memory, the rest into the ring of `memory` (system or GPU memory); each "
          "buffer then has two memories, headers and payloads (GstDaqiriPacketMeta "
          "header-size, header-stride, payload-stride say where each packet's parts are). "
          "0: whole packets in one ring. mlx5 and emu engines only; 14 .. 1024 and less than "
          "max-packet-size",
          0, 1024, 0, rw));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counters over all queues: packets, bytes, bursts (delivered); drops (packets "
          "lost that the element would have delivered), drops-ring-full (the same: the ring "
          "was full, downstream too slow); drops-filtered (packets a software classifier "
          "found no rule for; 0 where the NIC or the kernel filters); truncated (delivered "
          "packets cut to max-packet-size); errors (error completions, each costing the "
          "packet it named), recoveries (a queue brought back from the error state); "
          "queues; ring-bytes; ring-memory (where the rings lie: host, gpu-mapped-host, "
          "gpu-dmabuf: GPU memory the NIC writes by GPUDirect RDMA through a dma-buf, "
          "gpu-peermem: the same through nvidia-peermem, gpu-copy: GPU memory the emulated "
          "NIC writes by copies); queue-packets (an array: packets delivered from "
          "each queue, queue 0 first); flow-counts (an array of flow-count structures, "
          "flow ids ascending: flow-id, packets, bytes delivered since start, kept across "
          "changes of flows), flow-counts-overflow (packets of flow ids past the 4096 "
          "counted)",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_MEMORY,
      g_param_spec_enum ("memory", "Memory",
          "Where the receive ring lives: system memory, or cuda: GPU memory (device memory, "
          "or pinned host memory mapped for the GPU: see gpudirect; caps feature "
          "memory:DaqiriCUDA, or GstCudaMemory, memory:CUDAMemory, when downstream asks for "
          "it, with GStreamer >= 1.24) that the NIC writes and daqirireorder memory=cuda "
          "reads in place; mlx5 and emu engines only, needs a build with CUDA and a GPU",
          GST_TYPE_DAQIRI_MEMORY, GST_DAQIRI_MEMORY_SYSTEM, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_GPUDIRECT,
      g_param_spec_boolean ("gpudirect", "GPUDirect",
          "With memory=cuda, the ring in GPU device memory, written by the device itself: a "
          "ConnectX (mlx5:) by GPUDirect RDMA (a dma-buf of the memory registered with the "
          "NIC, else nvidia-peermem), the emulated ConnectX (emu:) by batched copies; "
          "stats ring-memory says which. false, or other engines: pinned host memory mapped "
          "for the GPU",
          TRUE, GST_DAQIRI_PARAM_RW_READY));
  g_object_class_install_property (gobject_class, PROP_STATS_INTERVAL,
      g_param_spec_uint64 ("stats-interval", "Stats interval",
          "Post the stats as a 'daqiri-src-stats' element message, with "
          "packets-per-second and bytes-per-second since the last one, every this many "
          "ns (0: never)",
          0, G_MAXUINT64, 0, rw | GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "daqiri packet source", "Source/Network",
      "Receives raw Ethernet packets from a NIC ring in bursts, without copies",
      "daqiri developers");

  element_class->provide_clock = GST_DEBUG_FUNCPTR (gst_daqiri_src_provide_clock);
  basesrc_class->start = GST_DEBUG_FUNCPTR (gst_daqiri_src_start);
  basesrc_class->stop = GST_DEBUG_FUNCPTR (gst_daqiri_src_stop);
  element_class->set_context = GST_DEBUG_FUNCPTR (gst_daqiri_src_set_context);
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_daqiri_src_change_state);
  basesrc_class->negotiate = GST_DEBUG_FUNCPTR (gst_daqiri_src_negotiate);
  basesrc_class->query = GST_DEBUG_FUNCPTR (gst_daqiri_src_query);
  basesrc_class->unlock = GST_DEBUG_FUNCPTR (gst_daqiri_src_unlock);
  basesrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_daqiri_src_unlock_stop);
  pushsrc_class->create = GST_DEBUG_FUNCPTR (gst_daqiri_src_create);

  gst_type_mark_as_plugin_api (GST_TYPE_DAQIRI_FILTER, 0);
  GST_DEBUG_CATEGORY_INIT (daqirisrc_debug, "daqirisrc", 0, "daqiri packet source");
}

static void
gst_daqiri_src_init (GstDaqiriSrc *self)
{
  self->device = g_strdup (DEFAULT_DEVICE);
  self->flows = g_strdup (DEFAULT_FLOWS);
  g_mutex_init (&self->steer_lock);
  self->n_queues = DEFAULT_QUEUES;
  self->burst_packets = DEFAULT_BURST_PACKETS;
  self->burst_timeout = DEFAULT_BURST_TIMEOUT;
  self->ring_size = DEFAULT_RING_SIZE;
  self->max_packet_size = DEFAULT_MAX_PACKET_SIZE;
  self->gpudirect = TRUE;
  self->flow_counts = dq_flow_counters_new ();

  gst_daqiri_time_map_init (&self->time_map, NULL);
  gst_base_src_set_live (GST_BASE_SRC (self), TRUE);
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
}
