/* Engine registry, shared ports and the thin dispatch layer over the engine tables. */
#include "daqiri-engine.h"
#include "engine-util.h"
#include "engines.h"

#include <string.h>

G_DEFINE_QUARK (daqiri - engine - error - quark, dq_error)

#define MAX_ENGINES 8

static const DqEngineOps *engines[MAX_ENGINES];
static const char *engine_names[MAX_ENGINES + 1];
static guint n_engines;
static GMutex registry_lock;

struct _DqPort {
  gint refcount; /* protected by registry_lock */
  char *device;
  const DqEngineOps *ops;
  gpointer priv;
  DqPortInfo info;
};

struct _DqRxQueue {
  DqPort *port;
  gpointer priv;
};

struct _DqTxQueue {
  DqPort *port;
  gpointer priv;
  gboolean scheduled;
};

static GHashTable *open_ports; /* device string -> DqPort, protected by registry_lock */

static void
register_locked (const DqEngineOps *ops)
{
  for (guint i = 0; i < n_engines; i++)
    if (strcmp (engines[i]->name, ops->name) == 0)
      return;
  g_return_if_fail (n_engines < MAX_ENGINES);
  engines[n_engines] = ops;
  engine_names[n_engines] = ops->name;
  n_engines++;
}

static void
ensure_builtin (void)
{
  static gsize done;
  if (g_once_init_enter (&done)) {
    g_mutex_lock (&registry_lock);
    register_locked (&dq_afpacket_engine);
#ifdef DQ_HAVE_DPDK
    register_locked (&dq_dpdk_engine);
#endif
#ifdef DQ_HAVE_PCAP
    register_locked (&dq_pcap_engine);
#endif
#ifdef DQ_HAVE_MLX5
    for (const DqEngineOps *const *e = dq_mlx5_engines (); *e != NULL; e++)
      register_locked (*e);
#endif
    g_mutex_unlock (&registry_lock);
    g_once_init_leave (&done, 1);
  }
}

void
dq_engine_register (const DqEngineOps *ops)
{
  ensure_builtin ();
  g_mutex_lock (&registry_lock);
  register_locked (ops);
  g_mutex_unlock (&registry_lock);
}

const char *const *
dq_engine_names (void)
{
  ensure_builtin ();
  return engine_names;
}

static const DqEngineOps *
find_engine (const char *device, const char **arg, GError **error)
{
  const char *colon = strchr (device, ':');
  if (colon != NULL) {
    gsize len = (gsize) (colon - device);
    for (guint i = 0; i < n_engines; i++) {
      if (strlen (engines[i]->name) == len && strncmp (engines[i]->name, device, len) == 0) {
        *arg = colon + 1;
        return engines[i];
      }
    }
  }
  char *known = g_strjoinv ("', '", (char **) engine_names);
  g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
      "device '%s' names no engine built into this daqiri; use ENGINE:ARG with ENGINE one of '%s' "
      "(for example afpacket:eth0)",
      device, known);
  g_free (known);
  return NULL;
}

DqPort *
dq_port_open (const char *device, GError **error)
{
  g_return_val_if_fail (device != NULL, NULL);
  ensure_builtin ();

  g_mutex_lock (&registry_lock);
  if (open_ports == NULL)
    open_ports = g_hash_table_new (g_str_hash, g_str_equal);
  DqPort *port = g_hash_table_lookup (open_ports, device);
  if (port != NULL) {
    port->refcount++;
    g_mutex_unlock (&registry_lock);
    return port;
  }

  const char *arg = NULL;
  const DqEngineOps *ops = find_engine (device, &arg, error);
  if (ops == NULL) {
    g_mutex_unlock (&registry_lock);
    return NULL;
  }
  if (*arg == '\0') {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "device '%s': the %s engine needs a name after '%s:'", device, ops->name, ops->name);
    g_mutex_unlock (&registry_lock);
    return NULL;
  }
  port = g_new0 (DqPort, 1);
  port->info.clock_id = -1;
  port->info.name = ops->name;
  port->priv = ops->port_open (arg, &port->info, error);
  if (port->priv == NULL) {
    g_free (port);
    g_mutex_unlock (&registry_lock);
    return NULL;
  }
  port->refcount = 1;
  port->ops = ops;
  port->device = g_strdup (device);
  g_hash_table_insert (open_ports, port->device, port);
  g_mutex_unlock (&registry_lock);
  return port;
}

DqPort *
dq_port_ref (DqPort *port)
{
  g_mutex_lock (&registry_lock);
  port->refcount++;
  g_mutex_unlock (&registry_lock);
  return port;
}

void
dq_port_unref (DqPort *port)
{
  if (port == NULL)
    return;
  g_mutex_lock (&registry_lock);
  if (--port->refcount > 0) {
    g_mutex_unlock (&registry_lock);
    return;
  }
  g_hash_table_remove (open_ports, port->device);
  g_mutex_unlock (&registry_lock);
  port->ops->port_close (port->priv);
  g_free (port->device);
  g_free (port);
}

const DqPortInfo *
dq_port_info (DqPort *port)
{
  return &port->info;
}

const char *
dq_port_device (DqPort *port)
{
  return port->device;
}

guint64
dq_port_time (DqPort *port)
{
  return port->ops->port_time (port->priv);
}

DqRxQueue *
dq_rxq_create (DqPort *port, const DqRxConfig *config, GError **error)
{
  if (config->burst_packets == 0 || config->n_queues == 0 ||
      config->queue_index >= config->n_queues) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "invalid RX queue config: burst-packets %u (allowed >= 1), queue %u of %u",
        config->burst_packets, config->queue_index, config->n_queues);
    return NULL;
  }
  if (config->ring_memory != NULL && !port->info.device_dma) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: the %s engine's software copies packets into its own host memory; receiving "
        "into GPU-accessible memory needs the mlx5 or emu engine",
        port->device, port->ops->name);
    return NULL;
  }
  if (config->header_size != 0 && !port->info.header_split) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: header-size %u: the %s engine keeps each packet whole; header-data split "
        "needs the mlx5 or emu engine (allowed here: 0)",
        port->device, config->header_size, port->ops->name);
    return NULL;
  }
  gpointer priv = port->ops->rxq_create (port->priv, config, error);
  if (priv == NULL)
    return NULL;
  DqRxQueue *rxq = g_new0 (DqRxQueue, 1);
  rxq->port = dq_port_ref (port);
  rxq->priv = priv;
  return rxq;
}

void
dq_rxq_destroy (DqRxQueue *rxq)
{
  if (rxq == NULL)
    return;
  rxq->port->ops->rxq_destroy (rxq->priv);
  dq_port_unref (rxq->port);
  g_free (rxq);
}

int
dq_rxq_poll (DqRxQueue *rxq, DqBurst *burst, gint64 timeout_ns, GError **error)
{
  /* what an engine leaves unset reads as none (no header-data split) */
  memset (burst, 0, sizeof *burst);
  return rxq->port->ops->rxq_poll (rxq->priv, burst, timeout_ns, error);
}

void
dq_rxq_release (DqRxQueue *rxq, DqBurst *burst)
{
  rxq->port->ops->rxq_release (rxq->priv, burst);
}

void
dq_rxq_wakeup (DqRxQueue *rxq)
{
  rxq->port->ops->rxq_wakeup (rxq->priv);
}

void
dq_rxq_stats (DqRxQueue *rxq, DqRxStats *stats)
{
  memset (stats, 0, sizeof *stats);
  rxq->port->ops->rxq_stats (rxq->priv, stats);
}

gsize
dq_rxq_ring_bytes (DqRxQueue *rxq)
{
  return rxq->port->ops->rxq_ring_bytes (rxq->priv);
}

gboolean
dq_rxq_ring_range (DqRxQueue *rxq, gpointer *base, gsize *size)
{
  const DqEngineOps *ops = rxq->port->ops;
  *base = NULL;
  *size = 0;
  return ops->rxq_ring_range != NULL && ops->rxq_ring_range (rxq->priv, base, size);
}

DqRingPlacement
dq_rxq_ring_placement (DqRxQueue *rxq)
{
  const DqEngineOps *ops = rxq->port->ops;
  return ops->rxq_ring_placement != NULL ? ops->rxq_ring_placement (rxq->priv) : DQ_RING_HOST;
}

const char *
dq_ring_placement_name (DqRingPlacement placement)
{
  switch (placement) {
    case DQ_RING_GPU_MAPPED: return "gpu-mapped-host";
    case DQ_RING_GPU_DMABUF: return "gpu-dmabuf";
    case DQ_RING_GPU_PEERMEM: return "gpu-peermem";
    case DQ_RING_GPU_COPY: return "gpu-copy";
    case DQ_RING_HOST:
    default: return "host";
  }
}

gboolean
dq_rxq_set_flows (
    DqRxQueue *rxq, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, GError **error)
{
  if (rxq->port->ops->rxq_set_flows == NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: the %s engine cannot change flow rules while receiving", rxq->port->device,
        rxq->port->ops->name);
    return FALSE;
  }
  return rxq->port->ops->rxq_set_flows (rxq->priv, filter, rules, n_rules, error);
}

DqTxQueue *
dq_txq_create (DqPort *port, const DqTxConfig *config, GError **error)
{
  gpointer priv = port->ops->txq_create (port->priv, config, error);
  if (priv == NULL)
    return NULL;
  DqTxQueue *txq = g_new0 (DqTxQueue, 1);
  txq->port = dq_port_ref (port);
  txq->priv = priv;
  txq->scheduled = config->scheduled;
  return txq;
}

void
dq_txq_destroy (DqTxQueue *txq)
{
  if (txq == NULL)
    return;
  txq->port->ops->txq_destroy (txq->priv);
  dq_port_unref (txq->port);
  g_free (txq);
}

int
dq_txq_send (
    DqTxQueue *txq, const guint8 *const *frames, const guint32 *lengths, guint n, GError **error)
{
  return txq->port->ops->txq_send (txq->priv, frames, lengths, NULL, n, error);
}

/* Times only on a queue made for them */
static gboolean
txq_check_times (DqTxQueue *txq, const guint64 *times, GError **error)
{
  if (times == NULL || txq->scheduled)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "%s: frames with send times on a TX queue made without scheduling (create it with "
      "DqTxConfig.scheduled)",
      txq->port->device);
  return FALSE;
}

int
dq_txq_send_at (DqTxQueue *txq, const guint8 *const *frames, const guint32 *lengths,
    const guint64 *times, guint n, GError **error)
{
  if (!txq_check_times (txq, times, error))
    return -1;
  return txq->port->ops->txq_send (txq->priv, frames, lengths, times, n, error);
}

gboolean
dq_txq_can_split (DqTxQueue *txq)
{
  const DqEngineOps *ops = txq->port->ops;
  return ops->txq_register != NULL && ops->txq_unregister != NULL && ops->txq_send_split != NULL &&
      ops->txq_progress != NULL;
}

/* Two-segment sends only on an engine that has them */
static gboolean
txq_check_split (DqTxQueue *txq, GError **error)
{
  if (dq_txq_can_split (txq))
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
      "%s: the %s engine has no two-segment sends (frames are sent whole)", txq->port->device,
      txq->port->ops->name);
  return FALSE;
}

DqTxMemory *
dq_txq_register (
    DqTxQueue *txq, gpointer base, gsize size, const DqRingMemory *memory, GError **error)
{
  if (!txq_check_split (txq, error))
    return NULL;
  if (base == NULL || size == 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: registering %" G_GSIZE_FORMAT " bytes at %p for payloads (allowed: a non-empty "
        "range)",
        txq->port->device, size, base);
    return NULL;
  }
  gpointer handle = txq->port->ops->txq_register (txq->priv, base, size, memory, error);
  if (handle == NULL)
    return NULL;
  DqTxMemory *mem = g_new (DqTxMemory, 1);
  mem->base = base;
  mem->size = size;
  mem->handle = handle;
  return mem;
}

void
dq_txq_unregister (DqTxQueue *txq, DqTxMemory *mem)
{
  if (mem == NULL)
    return;
  txq->port->ops->txq_unregister (txq->priv, mem->handle);
  g_free (mem);
}

int
dq_txq_send_split (DqTxQueue *txq, const guint8 *const *headers, const guint32 *header_lengths,
    const DqTxPayload *payloads, const guint64 *times, guint n, GError **error)
{
  if (!txq_check_split (txq, error))
    return -1;
  if (!txq_check_times (txq, times, error))
    return -1;
  for (guint i = 0; i < n; i++) {
    const DqTxPayload *p = &payloads[i];
    const guint8 *data = p->data;
    if (p->length == 0)
      continue;
    if (p->memory == NULL || data < p->memory->base ||
        (gsize) (data - p->memory->base) > p->memory->size ||
        p->length > p->memory->size - (gsize) (data - p->memory->base)) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "%s: frame %u's payload (%u bytes at %p) is outside its registered memory%s",
          txq->port->device, i, p->length, p->data, p->memory == NULL ? " (none given)" : "");
      return -1;
    }
  }
  return txq->port->ops->txq_send_split (
      txq->priv, headers, header_lengths, payloads, times, n, error);
}

/* frames posted and completed; 0 and 0 on an engine that copies every frame */
static void
txq_progress (DqTxQueue *txq, guint64 *posted, guint64 *completed)
{
  *posted = *completed = 0;
  if (dq_txq_can_split (txq))
    txq->port->ops->txq_progress (txq->priv, posted, completed);
}

guint64
dq_txq_posted (DqTxQueue *txq)
{
  guint64 posted, completed;
  txq_progress (txq, &posted, &completed);
  return posted;
}

guint64
dq_txq_completed (DqTxQueue *txq)
{
  guint64 posted, completed;
  txq_progress (txq, &posted, &completed);
  return completed;
}

gboolean
dq_txq_flush (DqTxQueue *txq, GError **error)
{
  return txq->port->ops->txq_flush (txq->priv, error);
}

guint
dq_txq_max_frame (DqTxQueue *txq)
{
  return txq->port->ops->txq_max_frame (txq->priv);
}

void
dq_txq_wakeup (DqTxQueue *txq)
{
  txq->port->ops->txq_wakeup (txq->priv);
}

void
dq_txq_stats (DqTxQueue *txq, DqTxStats *stats)
{
  memset (stats, 0, sizeof *stats);
  txq->port->ops->txq_stats (txq->priv, stats);
}

gboolean
dq_txq_can_acquire (DqTxQueue *txq)
{
  const DqEngineOps *ops = txq->port->ops;
  return ops->txq_acquire != NULL && ops->txq_commit != NULL && ops->txq_cancel != NULL;
}

int
dq_txq_acquire (DqTxQueue *txq, guint max_frames, guint frame_size, DqTxSlots *slots,
    gint64 timeout_ns, GError **error)
{
  memset (slots, 0, sizeof *slots);
  if (!dq_txq_can_acquire (txq)) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: the %s engine has no in-place "
        "sending (frames are copied with dq_txq_send)",
        txq->port->device, txq->port->ops->name);
    return -1;
  }
  if (max_frames == 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
        "%s: acquiring 0 TX slots (allowed: "
        ">= 1)",
        txq->port->device);
    return -1;
  }
  return txq->port->ops->txq_acquire (txq->priv, max_frames, frame_size, slots, timeout_ns, error);
}

int
dq_txq_commit (DqTxQueue *txq, DqTxSlots *slots, guint n, const guint32 *lengths, GError **error)
{
  return dq_txq_commit_at (txq, slots, n, lengths, NULL, error);
}

int
dq_txq_commit_at (DqTxQueue *txq, DqTxSlots *slots, guint n, const guint32 *lengths,
    const guint64 *times, GError **error)
{
  if (slots->token == NULL || !dq_txq_can_acquire (txq))
    return 0;
  if (!txq_check_times (txq, times, error))
    return -1;
  return txq->port->ops->txq_commit (txq->priv, slots, n, lengths, times, error);
}

void
dq_txq_cancel (DqTxQueue *txq, DqTxSlots *slots)
{
  if (slots->token != NULL && dq_txq_can_acquire (txq))
    txq->port->ops->txq_cancel (txq->priv, slots);
}
