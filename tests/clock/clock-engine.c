/* The "clocktest" engine (see clock-engine.h). */
#include "clock-engine.h"

#include <gst/check/gsttestclock.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CT_MAX_PACKETS 16
#define CT_PACKET_BYTES 64

GstClock *ct_sim_clock;

typedef struct {
  char *name;
  gboolean sim;
  gboolean posix;
  gint64 ppm;
  guint64 offset;
  guint64 ref; /* base-clock time when the port was opened */
  guint64 jitter;
  guint64 bursts;
  guint64 step;
  guint packets;
  gulong slow_us;
  GMutex lock;
  guint32 rng;
} CtPort;

typedef struct {
  CtPort *port;
  guint64 produced;
  guint64 packets;
  guint64 bytes;
  GMutex lock;
  GCond cond;
  gboolean woken;
  guint8 data[CT_MAX_PACKETS * CT_PACKET_BYTES];
} CtRxq;

static GMutex ports_lock;
static GHashTable *ports; /* name -> CtPort, the open ones */

static GstClockTime
base_now (CtPort *sp)
{
  if (sp->sim)
    return gst_clock_get_time (ct_sim_clock);
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (GstClockTime) ts.tv_sec * GST_SECOND + (GstClockTime) ts.tv_nsec;
}

static guint64
port_at (CtPort *sp, GstClockTime base)
{
  if (sp->posix)
    return base;
  gint64 d = (gint64) (base - sp->ref);
  return (guint64) ((gint64) sp->offset + d + d * sp->ppm / 1000000);
}

static GstClockTime
base_at (CtPort *sp, guint64 port_time)
{
  if (sp->posix)
    return port_time;
  __extension__ __int128 d = (gint64) (port_time - sp->offset);
  return sp->ref + (GstClockTime) (gint64) (d * 1000000 / (1000000 + sp->ppm));
}

static CtPort *
lookup (const char *device)
{
  const char *name = strchr (device, ':');
  g_assert_nonnull (name);
  char *n = g_strndup (name + 1, strcspn (name + 1, ","));
  g_mutex_lock (&ports_lock);
  CtPort *sp = ports ? g_hash_table_lookup (ports, n) : NULL;
  g_mutex_unlock (&ports_lock);
  g_free (n);
  g_assert_nonnull (sp);
  return sp;
}

guint64
ct_port_time_at (const char *device, GstClockTime base)
{
  return port_at (lookup (device), base);
}

GstClockTime
ct_base_time_at (const char *device, guint64 port_time)
{
  return base_at (lookup (device), port_time);
}

static gpointer
ct_port_open (const char *arg, DqPortInfo *info, GError **error)
{
  char **parts = g_strsplit (arg, ",", -1);
  CtPort *sp = g_new0 (CtPort, 1);
  sp->name = g_strdup (parts[0]);
  sp->offset = GST_MSECOND;
  sp->bursts = 1000;
  sp->step = 10 * GST_MSECOND;
  sp->packets = 4;
  sp->rng = 12345;
  for (guint i = 1; parts[i] != NULL; i++) {
    const char *kv = parts[i];
    const char *eq = strchr (kv, '=');
    gint64 v = eq ? g_ascii_strtoll (eq + 1, NULL, 10) : 0;
    if (strcmp (kv, "sim") == 0)
      sp->sim = TRUE;
    else if (strcmp (kv, "posix") == 0)
      sp->posix = TRUE;
    else if (g_str_has_prefix (kv, "ppm="))
      sp->ppm = v;
    else if (g_str_has_prefix (kv, "offset="))
      sp->offset = (guint64) v;
    else if (g_str_has_prefix (kv, "jitter="))
      sp->jitter = (guint64) v;
    else if (g_str_has_prefix (kv, "bursts="))
      sp->bursts = (guint64) v;
    else if (g_str_has_prefix (kv, "step="))
      sp->step = (guint64) v;
    else if (g_str_has_prefix (kv, "slow="))
      sp->slow_us = (gulong) v;
    else if (g_str_has_prefix (kv, "packets="))
      sp->packets = CLAMP ((guint) v, 1, CT_MAX_PACKETS);
    else {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG, "clocktest: unknown key '%s'", kv);
      g_strfreev (parts);
      g_free (sp->name);
      g_free (sp);
      return NULL;
    }
  }
  g_strfreev (parts);
  g_assert_true (!sp->sim || GST_IS_TEST_CLOCK (ct_sim_clock));
  g_mutex_init (&sp->lock);
  sp->ref = base_now (sp);

  info->clock_name = sp->posix ? "clocktest (CLOCK_MONOTONIC)" : "clocktest (NIC-like)";
  info->clock_id = sp->posix ? CLOCK_MONOTONIC : -1;
  info->mtu = 1500;
  g_mutex_lock (&ports_lock);
  if (ports == NULL)
    ports = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_insert (ports, sp->name, sp);
  g_mutex_unlock (&ports_lock);
  return sp;
}

static void
ct_port_close (gpointer priv)
{
  CtPort *sp = priv;
  g_mutex_lock (&ports_lock);
  g_hash_table_remove (ports, sp->name);
  g_mutex_unlock (&ports_lock);
  g_mutex_clear (&sp->lock);
  g_free (sp->name);
  g_free (sp);
}

static guint64
ct_port_time (gpointer priv)
{
  CtPort *sp = priv;
  if (sp->slow_us > 0)
    g_usleep (sp->slow_us);
  guint64 t = port_at (sp, base_now (sp));
  if (sp->jitter == 0)
    return t;
  g_mutex_lock (&sp->lock);
  sp->rng = sp->rng * 1103515245u + 12345u;
  guint64 r = (sp->rng >> 8) % (2 * sp->jitter + 1);
  g_mutex_unlock (&sp->lock);
  return t + r - sp->jitter;
}

static gpointer
ct_rxq_create (gpointer port, const DqRxConfig *config, GError **error)
{
  CtRxq *q = g_new0 (CtRxq, 1);
  q->port = port;
  g_mutex_init (&q->lock);
  g_cond_init (&q->cond);
  return q;
}

static void
ct_rxq_destroy (gpointer rxq)
{
  CtRxq *q = rxq;
  g_mutex_clear (&q->lock);
  g_cond_clear (&q->cond);
  g_free (q);
}

static int
ct_rxq_poll (gpointer rxq, DqBurst *burst, gint64 timeout_ns, GError **error)
{
  CtRxq *q = rxq;
  CtPort *sp = q->port;

  if (q->produced >= sp->bursts) {
    gint64 wait_us = MIN (timeout_ns, 100 * GST_MSECOND) / 1000;
    g_mutex_lock (&q->lock);
    gint64 until = g_get_monotonic_time () + wait_us;
    while (!q->woken && g_cond_wait_until (&q->cond, &q->lock, until))
      ;
    q->woken = FALSE;
    g_mutex_unlock (&q->lock);
    return 0;
  }
  if (sp->sim)
    gst_test_clock_advance_time (GST_TEST_CLOCK (ct_sim_clock), sp->step);

  /* the first packet arrived between 1 us and 0.5 ms before the burst is handed out */
  guint64 now = port_at (sp, base_now (sp));
  guint64 age = GST_USECOND + (q->produced * 7919 * GST_USECOND) % (500 * GST_USECOND);
  DqPacket *pk = g_new0 (DqPacket, sp->packets);
  for (guint i = 0; i < sp->packets; i++) {
    pk[i].offset = i * CT_PACKET_BYTES;
    pk[i].length = CT_PACKET_BYTES;
    pk[i].flags = DQ_PACKET_FLAG_TS_HW;
    pk[i].timestamp = now - age - (sp->packets - 1 - i) * GST_USECOND;
  }
  burst->data = q->data;
  burst->size = (gsize) sp->packets * CT_PACKET_BYTES;
  burst->n_packets = sp->packets;
  burst->packets = pk;
  burst->memory = DQ_MEMORY_HOST;
  burst->range = pk;
  q->produced++;
  q->packets += sp->packets;
  q->bytes += burst->size;
  return 1;
}

static void
ct_rxq_release (gpointer rxq, DqBurst *burst)
{
  g_free (burst->range);
}

static void
ct_rxq_wakeup (gpointer rxq)
{
  CtRxq *q = rxq;
  g_mutex_lock (&q->lock);
  q->woken = TRUE;
  g_cond_signal (&q->cond);
  g_mutex_unlock (&q->lock);
}

static void
ct_rxq_stats (gpointer rxq, DqRxStats *stats)
{
  CtRxq *q = rxq;
  stats->packets = q->packets;
  stats->bytes = q->bytes;
  stats->bursts = q->produced;
}

static gsize
ct_rxq_ring_bytes (gpointer rxq)
{
  return sizeof ((CtRxq *) rxq)->data;
}

static gpointer
ct_txq_create (gpointer port, const DqTxConfig *config, GError **error)
{
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG, "clocktest ports do not send");
  return NULL;
}

static const DqEngineOps ct_ops = {
  .name = "clocktest",
  .description = "test port with a controlled clock",
  .port_open = ct_port_open,
  .port_close = ct_port_close,
  .port_time = ct_port_time,
  .rxq_create = ct_rxq_create,
  .rxq_destroy = ct_rxq_destroy,
  .rxq_poll = ct_rxq_poll,
  .rxq_release = ct_rxq_release,
  .rxq_wakeup = ct_rxq_wakeup,
  .rxq_stats = ct_rxq_stats,
  .rxq_ring_bytes = ct_rxq_ring_bytes,
  .txq_create = ct_txq_create,
};

void
ct_engine_register (void)
{
  dq_engine_register (&ct_ops);
}
