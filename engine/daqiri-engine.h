/* daqiri engine API: ports, RX/TX queues, bursts, flows, clock, stats.
 *
 * Plain C on GLib; no GStreamer. An engine (afpacket, mlx5, emu, ...) registers a
 * DqEngineOps table; ports are opened by a device string ("afpacket:eth1", "emu:x",
 * "mlx5_0") and shared, refcounted, between every user that names the same device.
 *
 * The receive contract: dq_rxq_poll() returns a DqBurst, a run of packets that all lie in
 * one contiguous ring range [data, data + size). The range stays owned by the caller until
 * dq_rxq_release() hands it back (from any thread, in any order); the engine reuses ring
 * memory only after every burst that covers it was released. Holding bursts makes the ring
 * run dry: the engine then drops packets and counts them (DqRxStats.drops_ring_full), it
 * never overwrites held memory.
 *
 * The send contract: dq_txq_send() copies frames into the TX ring. Engines whose ring is
 * memory the caller may write (mlx5, emu) also hand out TX slots to write frames in
 * place: dq_txq_acquire() lends a run of free slots (a DqTxSlots), the caller writes
 * frame i into slot i and dq_txq_commit() sends them, no copy; dq_txq_cancel() gives
 * them back unsent. One run of slots per queue is out at a time; dq_txq_send() is
 * refused (DQ_ERROR_BUSY) while it is. dq_txq_can_acquire() tells whether the engine
 * has in-place sending at all.
 *
 * Send scheduling: a TX queue created with DqTxConfig.scheduled takes a time per frame
 * (dq_txq_send_at, dq_txq_commit_at): the port-clock ns (dq_port_time) at which the frame
 * leaves, 0 for "as soon as possible". Frames leave in the order given, each no earlier
 * than its time: a frame more than DQ_TX_HORIZON_NS ahead of the port clock is held by
 * the sending call until it is within that horizon (the frames behind it wait with it);
 * a frame whose time has passed when it is posted is late: sent at once or dropped
 * (DqTxConfig.late), and counted. Engines that cannot send at a time refuse
 * `scheduled` at creation (DQ_ERROR_CONFIG, naming what is missing).
 *
 * Steering: DqRxConfig.flows and .filter say what a queue set receives when it is created;
 * dq_rxq_set_flows() changes both while the queues receive (every engine). A change never
 * loses a packet of a flow that the old and the new rules deliver alike: hardware
 * installs the new rules before it removes the old ones, software classifiers swap rule
 * sets between bursts. On failure the queue keeps what it had.
 *
 * Two-segment sends (header-data split on the send side; dq_txq_can_split()): frame i is
 * header_lengths[i] bytes at headers[i], copied into a TX slot, followed by payloads[i],
 * which the device reads where it lies (one WQE of two data segments), in memory
 * registered with the queue (dq_txq_register: host memory, or GPU memory that a ConnectX
 * reads by GPUDirect RDMA and the emulated one by copies). The payload bytes must stay as
 * they are until the device is done with the frame: the frames handed to the device so
 * far, dq_txq_posted(), read after the sending call, is the mark; they are done once
 * dq_txq_completed() reaches it (sent, or lost to an error: no longer read either way).
 *
 * Threads: a TX queue is driven by one thread at a time (send, acquire, commit, cancel,
 * flush; the caller serializes them); dq_txq_wakeup() and dq_txq_stats() may be called
 * from any thread at any time.
 */
#ifndef DAQIRI_ENGINE_H
#define DAQIRI_ENGINE_H

#include <glib.h>
#include "daqiri-flow.h"

G_BEGIN_DECLS

#define DQ_ERROR (dq_error_quark ())
GQuark dq_error_quark (void);

typedef enum {
  DQ_ERROR_DEVICE,     /* no such device, or it cannot be opened */
  DQ_ERROR_CONFIG,     /* a configuration value is out of range */
  DQ_ERROR_PERMISSION, /* the process lacks a privilege (CAP_NET_RAW, ...) */
  DQ_ERROR_FLOW,       /* a flow rule is malformed or not supported by this engine */
  DQ_ERROR_IO,         /* a system call failed */
  DQ_ERROR_BUSY,       /* the resource is in use (queue index taken, ...) */
} DqError;

/* Per-packet descriptor. Binary identical to the public GstDaqiriPacket. */
typedef struct {
  guint32 offset;    /* of the first byte, from DqBurst.data */
  guint32 length;    /* bytes present in the ring (<= wire length) */
  guint32 flow_id;   /* mark of the first flow rule that matched, 0 without rules */
  guint32 flags;     /* DqPacketFlags */
  guint64 timestamp; /* port clock, ns */
} DqPacket;

typedef enum {
  DQ_PACKET_FLAG_TRUNCATED = 1 << 0, /* the frame was longer than the ring slot */
  DQ_PACKET_FLAG_VLAN = 1 << 1,      /* a VLAN tag was stripped; vid in DqPacket flags >> 16 */
  DQ_PACKET_FLAG_TS_HW = 1 << 2,     /* timestamp taken by the NIC */
  DQ_PACKET_FLAG_CSUM_OK = 1 << 3,   /* L3/L4 checksums verified by the NIC */
} DqPacketFlags;

#define DQ_PACKET_VLAN_ID(flags) ((guint16) (((flags) >> 16) & 0x0fff))

typedef enum {
  DQ_MEMORY_HOST,
  DQ_MEMORY_CUDA,
} DqMemoryKind;

/* Where an RX queue's ring lies and how its device reaches it. */
typedef enum {
  DQ_RING_HOST,        /* host memory */
  DQ_RING_GPU_MAPPED,  /* GPU-accessible host memory (pinned, mapped for the GPU) */
  DQ_RING_GPU_DMABUF,  /* GPU device memory, registered with the NIC by dma-buf */
  DQ_RING_GPU_PEERMEM, /* GPU device memory, registered by its device pointer
                        * (nvidia-peermem), where the dma-buf way failed */
  DQ_RING_GPU_COPY,    /* GPU device memory the emulated device writes by copies */
} DqRingPlacement;

/* "host", "gpu-mapped-host", "gpu-dmabuf", "gpu-peermem", "gpu-copy" */
const char *dq_ring_placement_name (DqRingPlacement placement);

/* dq_rxq_poll(): the queue's stream has ended */
#define DQ_RXQ_END 2

typedef struct _DqPort DqPort;
typedef struct _DqRxQueue DqRxQueue;
typedef struct _DqTxQueue DqTxQueue;

/* A stride word (DqBurst.words): the packet's offset in strides of 1 << word_shift bytes in its
 * low DQ_BURST_WORD_LENGTH_SHIFT bits, its length in bytes in the rest: offsets up to 2^18 - 1
 * strides of up to 1 << DQ_BURST_WORD_MAX_SHIFT bytes, lengths up to DQ_BURST_WORD_MAX_LENGTH. */
#define DQ_BURST_WORD_LENGTH_SHIFT 18
#define DQ_BURST_WORD_INDEX_MASK ((1u << DQ_BURST_WORD_LENGTH_SHIFT) - 1)
#define DQ_BURST_WORD_MAX_LENGTH ((1u << (32 - DQ_BURST_WORD_LENGTH_SHIFT)) - 1)
#define DQ_BURST_WORD_MAX_SHIFT 14

/* A burst of received packets in ring memory. With header-data split (DqRxConfig
 * header_size), `data` holds the packets' headers, header_stride bytes apart (a packet's
 * DqPacket.offset is its header's), each the first MIN (length, header_size) bytes of the
 * packet; the rest of packet i lies in `payload` at (offset / header_stride) *
 * payload_stride, in payload_memory. The header_size bytes before `payload` are memory of
 * the same ring (readable, never this burst's), so a payload can be addressed as if its
 * headers preceded it. */
typedef struct {
  guint8 *data; /* start of the ring range */
  gsize size;   /* bytes of the ring range; every packet lies inside */
  guint n_packets;
  DqPacket *packets; /* owned by the queue; valid until released */
  DqMemoryKind memory;
  /* header-data split; header_size 0 and payload NULL without */
  guint header_size, header_stride, payload_stride;
  guint8 *payload;
  gsize payload_size;
  DqMemoryKind payload_memory;
  /* NULL, or the packets' offsets and lengths again as 4-byte stride words (a sixth of a
   * DqPacket's bytes), beside `packets` in the descriptor memory of the ring
   * (DqRingMemory.desc_alloc), for a processor that reads them across a bus: words[i] =
   * packets[i].offset >> word_shift | packets[i].length << DQ_BURST_WORD_LENGTH_SHIFT (see
   * below). Engines that take such memory write them where every packet starts on a stride of
   * 1 << word_shift bytes, without header-data split; valid while packets is. */
  const guint32 *words;
  guint word_shift;
  /*< private >*/
  gpointer range; /* engine token that identifies the ring range */
} DqBurst;

/* Where an RX queue's packet buffer lives when not in plain host memory: memory the
 * element allocates (GPU-accessible memory: CUDA pinned, device-mapped host memory), given to
 * engines that can receive into it. The bursts then say `kind`. alloc returns zeroed,
 * page-aligned memory of `size` bytes (a multiple of the page size) or NULL.
 * export_dmabuf, when set, says the memory is GPU device memory that the CPU must not touch
 * and that a NIC reaches through a dma-buf (GPUDirect RDMA): it gives a dma-buf fd covering
 * [mem, mem + size) at *offset into it (the caller closes the fd), or FALSE with *error set.
 * write, set with it, copies n host bytes to dst inside such memory (a copy-engine DMA; TRUE
 * once done): how a device played by software (the emulated ConnectX) writes it; read
 * copies n bytes from src inside it to the host (how that device reads payloads it sends,
 * dq_txq_register).
 * Only engines whose device writes the ring itself take such memory (mlx5 on a ConnectX by
 * dma-buf, the emulated ConnectX by write); the others refuse it. */
typedef struct {
  DqMemoryKind kind;
  gpointer (*alloc) (gsize size, gpointer user);
  void (*free) (gpointer mem, gsize size, gpointer user);
  gpointer user;
  gboolean (*export_dmabuf) (
      gpointer mem, gsize size, int *fd, guint64 *offset, gpointer user, GError **error);
  gboolean (*write) (gpointer dst, gconstpointer src, gsize n, gpointer user);
  gboolean (*read) (gpointer dst, gconstpointer src, gsize n, gpointer user);
  /* optional: host memory for the queue's packet descriptors (DqBurst.packets) that the
   * processor owning the ring reads directly (e.g. pinned and mapped for a GPU), NULL when
   * none can be had (the queue then takes ordinary host memory); desc_free gives it back */
  gpointer (*desc_alloc) (gsize size, gpointer user);
  void (*desc_free) (gpointer mem, gpointer user);
} DqRingMemory;

/* What a queue set delivers: what its flow rules match (with no rules: everything), every
 * packet (the rules ignored: flow id 0, spread over the queues by flow hash), or nothing
 * (a ConnectX hands the traffic back to the kernel; software engines drop it and count it
 * in DqRxStats.drops_filtered). */
typedef enum {
  DQ_RX_FILTER_RULES,
  DQ_RX_FILTER_ALL,
  DQ_RX_FILTER_NONE,
} DqRxFilter;

typedef struct {
  guint burst_packets;      /* max packets in one burst, >= 1 */
  guint64 burst_timeout_ns; /* flush a partial burst after this long */
  gsize ring_bytes;         /* ring memory of this queue */
  guint max_packet_size;    /* largest frame kept whole; longer ones are truncated */
  const DqFlowRule *flows;  /* every rule of the queue set (the same array for each
                               * queue); a queue takes those without a queue key and
                               * those naming its index */
  guint n_flows;
  guint queue_index;               /* 0 .. n_queues-1 */
  guint n_queues;                  /* queues that share this port's traffic (fanout) */
  guint32 group_id;                /* identifies the set of queues of one element */
  const DqRingMemory *ring_memory; /* NULL: host memory; engines that cannot receive
                                     * into other memory refuse it (DQ_ERROR_CONFIG) */
  DqRxFilter filter;               /* default DQ_RX_FILTER_RULES */
  guint header_size; /* header-data split: the first header_size bytes of each packet in a
                      * host ring, the rest in the ring of ring_memory (see DqBurst);
                      * 0: none. mlx5 and emu engines only (others: DQ_ERROR_CONFIG) */
} DqRxConfig;

/* How far ahead of the port clock a scheduled frame is handed to the device */
#define DQ_TX_HORIZON_NS G_GUINT64_CONSTANT (1000000000)

/* What becomes of a scheduled frame whose time has passed */
typedef enum {
  DQ_TX_LATE_SEND, /* sent at once */
  DQ_TX_LATE_DROP, /* not sent (counted in DqTxStats.late_dropped) */
} DqTxLate;

typedef struct {
  gsize ring_bytes;      /* TX ring memory */
  guint max_packet_size; /* largest frame that can be sent */
  gboolean scheduled;    /* frames carry send times (see the top) */
  DqTxLate late;
  guint64 rate_bps; /* pacing: at most this many bits of frames (Ethernet header to
                     * payload end, no FCS) a second leave the queue; 0: no limit.
                     * Engines that cannot pace refuse it (DQ_ERROR_CONFIG). */
} DqTxConfig;

typedef struct {
  guint64 packets;
  guint64 bytes;
  guint64 bursts;
  guint64 drops_ring_full; /* dropped because no ring space was free */
  guint64 drops_filtered;  /* not matching any flow (engines that filter in software) */
  guint64 truncated;
  guint64 errors;     /* error completions: each cost the packet (or WQE) it named */
  guint64 recoveries; /* times the queue was brought back from the error state */
  guint64 compressed; /* mlx5/emu: packets that came in compressed completions (mini-CQEs) */
  guint64 cq_bytes;   /* mlx5/emu: memory of the queue's completion queue; 0 elsewhere */
} DqRxStats;

typedef struct {
  guint64 packets;
  guint64 bytes;
  guint64 bursts;
  guint64 errors;          /* packets the kernel or NIC refused */
  guint64 ring_full_waits; /* times the sender waited for ring space */
  guint64 scheduled;       /* frames sent with a time (late ones included) */
  guint64 held;            /* frames held back by the sender, beyond DQ_TX_HORIZON_NS */
  guint64 late;            /* frames whose time had passed (sent or dropped) */
  guint64 late_dropped;    /* late frames not sent (DQ_TX_LATE_DROP) */
  guint64 wqes;            /* mlx5/emu: send WQEs (an eMPW WQE carries up to 32 frames);
                            * 0 on other engines */
} DqTxStats;

/* A run of TX slots lent by dq_txq_acquire(): slot i (0 <= i < n_slots) is the
 * slot_size bytes at data + i * stride, in NIC-visible memory. */
typedef struct {
  guint8 *data;    /* slot 0 */
  guint n_slots;   /* >= 1 */
  guint stride;    /* bytes from one slot to the next (>= slot_size) */
  guint slot_size; /* the longest frame a slot holds */
  DqMemoryKind memory;
  /*< private >*/
  gpointer token; /* engine token of the lent run; NULL once given back */
} DqTxSlots;

/* Memory registered with a TX queue for payload segments (dq_txq_register) */
typedef struct _DqTxMemory DqTxMemory;

/* A frame's payload segment: `length` bytes at `data`, inside `memory`'s range (length 0:
 * the frame is its header alone; memory and data are not read) */
typedef struct {
  DqTxMemory *memory;
  gconstpointer data;
  guint32 length;
} DqTxPayload;

typedef struct {
  const char *name;       /* e.g. "afpacket" */
  const char *clock_name; /* e.g. "CLOCK_REALTIME (kernel)" */
  int clock_id;           /* POSIX clock the port time is on, or -1 for a NIC clock */
  guint8 mac[6];
  guint mtu;
  gboolean device_dma;    /* the device itself writes the receive rings, so a ring can be GPU
                        * device memory (a ConnectX by GPUDirect RDMA, the emulated
                        * ConnectX by DMA copies); FALSE where the host's software copies
                        * into them (afpacket, dpdk): such engines take no ring_memory */
  gboolean header_split;  /* the device splits packets into a header and a payload ring
                          * (DqRxConfig.header_size); FALSE: header_size must be 0 */
  gboolean stamps_frames; /* the port stores each frame with a time rather than sending it
                           * (a capture file): a sender passes each frame's own time
                           * (its packet timestamp) as its send time, on a queue made
                           * `scheduled`; nothing waits */
} DqPortInfo;

/* ---- the engine table ---- */

typedef struct {
  const char *name; /* device prefix, "afpacket" for "afpacket:IFACE" */
  const char *description;

  gpointer (*port_open) (const char *arg, DqPortInfo *info, GError **error);
  void (*port_close) (gpointer port);
  guint64 (*port_time) (gpointer port);

  gpointer (*rxq_create) (gpointer port, const DqRxConfig *config, GError **error);
  void (*rxq_destroy) (gpointer rxq);
  /* 1: burst returned; 0: timeout or woken; DQ_RXQ_END: the port will never receive
   * again (a capture file read to its end), every packet before was delivered; -1: error */
  int (*rxq_poll) (gpointer rxq, DqBurst *burst, gint64 timeout_ns, GError **error);
  void (*rxq_release) (gpointer rxq, DqBurst *burst);
  void (*rxq_wakeup) (gpointer rxq);
  void (*rxq_stats) (gpointer rxq, DqRxStats *stats);
  gsize (*rxq_ring_bytes) (gpointer rxq);
  /* NULL: the ring is always host memory */
  DqRingPlacement (*rxq_ring_placement) (gpointer rxq);
  /* see dq_rxq_ring_range(); NULL: not known */
  gboolean (*rxq_ring_range) (gpointer rxq, gpointer *base, gsize *size);
  /* see dq_rxq_set_flows(); NULL: the engine cannot change its rules while receiving */
  gboolean (*rxq_set_flows) (
      gpointer rxq, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, GError **error);

  gpointer (*txq_create) (gpointer port, const DqTxConfig *config, GError **error);
  void (*txq_destroy) (gpointer txq);
  /* Sends the n frames in order, waiting for ring space. Returns how many frames were
   * consumed: queued for sending, or refused (too short, too long) and counted in
   * DqTxStats.errors. That is n unless a wakeup ended the wait early; then the caller
   * passes the rest again. -1 with *error set when the port failed. `times`: NULL, or
   * a send time per frame (only on a queue created `scheduled`). */
  int (*txq_send) (gpointer txq, const guint8 *const *frames, const guint32 *lengths,
      const guint64 *times, guint n, GError **error);
  gboolean (*txq_flush) (gpointer txq, GError **error);
  void (*txq_wakeup) (gpointer txq);
  void (*txq_stats) (gpointer txq, DqTxStats *stats);
  /* the longest frame the queue sends now (max-packet-size, the port's MTU + headers) */
  guint (*txq_max_frame) (gpointer txq);

  /* In-place sending; all three NULL for an engine that only copies.
   * txq_acquire lends up to max_frames free, contiguous slots of at least frame_size
   * bytes, waiting up to timeout_ns (-1: until woken) for ring space. 1: *slots filled;
   * 0: timeout or woken (txq_wakeup); -1 with *error: frame_size larger than the
   * queue's slots (DQ_ERROR_CONFIG), or a run is already lent (DQ_ERROR_BUSY).
   * txq_commit sends frames 0 .. n-1 of the run (frame i in slot i, lengths[i] bytes)
   * with one doorbell and takes the rest of the run back; frames too short or too long
   * are not sent and count in DqTxStats.errors. Returns n (every frame consumed), or -1
   * with *error when the run is not the one lent or n > n_slots (nothing is sent).
   * txq_cancel takes the run back unsent. Both clear slots->token. `times` as for
   * txq_send; a wakeup while a frame is held ends the commit early: the rest of the run
   * is taken back unsent and counted in DqTxStats.errors. */
  int (*txq_acquire) (gpointer txq, guint max_frames, guint frame_size, DqTxSlots *slots,
      gint64 timeout_ns, GError **error);
  int (*txq_commit) (gpointer txq, DqTxSlots *slots, guint n, const guint32 *lengths,
      const guint64 *times, GError **error);
  void (*txq_cancel) (gpointer txq, DqTxSlots *slots);

  /* Two-segment sends; all four NULL for an engine without them. txq_register returns the
   * engine's handle of [base, base + size) (memory as dq_txq_register), txq_unregister
   * drops it. txq_send_split is txq_send with frame i = headers[i] (header_lengths[i]
   * bytes) then payloads[i] (inside its registered range, checked by the caller); a frame
   * whose total length or header the queue does not take is refused and counted in
   * DqTxStats.errors. txq_progress gives the frames handed to the device and those it
   * completed (both counted since the queue was made), reading completions first. */
  gpointer (*txq_register) (
      gpointer txq, gpointer base, gsize size, const DqRingMemory *memory, GError **error);
  void (*txq_unregister) (gpointer txq, gpointer handle);
  int (*txq_send_split) (gpointer txq, const guint8 *const *headers, const guint32 *header_lengths,
      const DqTxPayload *payloads, const guint64 *times, guint n, GError **error);
  void (*txq_progress) (gpointer txq, guint64 *posted, guint64 *completed);
} DqEngineOps;

void dq_engine_register (const DqEngineOps *ops);
/* names of the registered engines, NULL-terminated, static */
const char *const *dq_engine_names (void);

/* ---- ports ---- */

DqPort *dq_port_open (const char *device, GError **error);
DqPort *dq_port_ref (DqPort *port);
void dq_port_unref (DqPort *port);
const DqPortInfo *dq_port_info (DqPort *port);
const char *dq_port_device (DqPort *port);
guint64 dq_port_time (DqPort *port);

/* ---- RX ---- */

DqRxQueue *dq_rxq_create (DqPort *port, const DqRxConfig *config, GError **error);
void dq_rxq_destroy (DqRxQueue *rxq);
int dq_rxq_poll (DqRxQueue *rxq, DqBurst *burst, gint64 timeout_ns, GError **error);
void dq_rxq_release (DqRxQueue *rxq, DqBurst *burst);
void dq_rxq_wakeup (DqRxQueue *rxq);
void dq_rxq_stats (DqRxQueue *rxq, DqRxStats *stats);
gsize dq_rxq_ring_bytes (DqRxQueue *rxq);
DqRingPlacement dq_rxq_ring_placement (DqRxQueue *rxq);
/* The queue's packet buffer (with header-data split: its payload ring), in which every
 * burst's data (payload) lies, in the memory dq_rxq_ring_placement() names: what a sender
 * registers once to send payloads from it (dq_txq_register). FALSE where the engine does
 * not say. */
gboolean dq_rxq_ring_range (DqRxQueue *rxq, gpointer *base, gsize *size);
/* Replaces the filter and the flow rules of the queue set `rxq` belongs to while it
 * receives, from any thread (one change at a time per queue set). `rules` is the whole
 * set, as DqRxConfig.flows; call it for every queue of the set, each takes its share. On
 * failure (DQ_ERROR_FLOW: a rule the engine cannot install, a queue key beyond the set)
 * the queue keeps its earlier filter and rules. */
gboolean dq_rxq_set_flows (
    DqRxQueue *rxq, DqRxFilter filter, const DqFlowRule *rules, guint n_rules, GError **error);

/* ---- TX ---- */

DqTxQueue *dq_txq_create (DqPort *port, const DqTxConfig *config, GError **error);
void dq_txq_destroy (DqTxQueue *txq);
int dq_txq_send (
    DqTxQueue *txq, const guint8 *const *frames, const guint32 *lengths, guint n, GError **error);
/* Scheduled sending (see the top): times[i] is frame i's send time, port-clock ns (0: as
 * soon as possible). A queue not created `scheduled` refuses it (DQ_ERROR_CONFIG). */
int dq_txq_send_at (DqTxQueue *txq, const guint8 *const *frames, const guint32 *lengths,
    const guint64 *times, guint n, GError **error);
gboolean dq_txq_flush (DqTxQueue *txq, GError **error);
void dq_txq_wakeup (DqTxQueue *txq);
void dq_txq_stats (DqTxQueue *txq, DqTxStats *stats);
/* The longest frame (bytes from the Ethernet header, no FCS) the queue sends now: the
 * lower of its max_packet_size and what the port's MTU allows (MTU + 18 on mlx5/emu,
 * MTU + 14, or + 18 with a VLAN tag, on afpacket). Longer frames, and frames under 14
 * bytes, are refused and counted in DqTxStats.errors. */
guint dq_txq_max_frame (DqTxQueue *txq);

/* In-place sending (see the send contract above). dq_txq_acquire() on an engine without
 * it fails with DQ_ERROR_CONFIG; dq_txq_commit() and dq_txq_cancel() of a run whose
 * token is NULL do nothing (commit returns 0). */
gboolean dq_txq_can_acquire (DqTxQueue *txq);
int dq_txq_acquire (DqTxQueue *txq, guint max_frames, guint frame_size, DqTxSlots *slots,
    gint64 timeout_ns, GError **error);
int dq_txq_commit (
    DqTxQueue *txq, DqTxSlots *slots, guint n, const guint32 *lengths, GError **error);
int dq_txq_commit_at (DqTxQueue *txq, DqTxSlots *slots, guint n, const guint32 *lengths,
    const guint64 *times, GError **error);
void dq_txq_cancel (DqTxQueue *txq, DqTxSlots *slots);

/* Two-segment sends (see the send contract above). dq_txq_register() registers
 * [base, base + size) for payload segments: `memory` NULL for host memory, else GPU
 * device memory described as for a ring (kind DQ_MEMORY_CUDA, export_dmabuf for a
 * ConnectX, read for the emulated one). Fails with DQ_ERROR_CONFIG on an engine without
 * two-segment sends or memory its device cannot reach. dq_txq_unregister() only once no
 * frame that points into it is still posted (see dq_txq_completed); any thread. */
gboolean dq_txq_can_split (DqTxQueue *txq);
DqTxMemory *dq_txq_register (
    DqTxQueue *txq, gpointer base, gsize size, const DqRingMemory *memory, GError **error);
void dq_txq_unregister (DqTxQueue *txq, DqTxMemory *mem);
/* As dq_txq_send_at (times may be NULL), frame i being headers[i] then payloads[i]. A
 * payload outside its registered range is refused (DQ_ERROR_CONFIG, nothing sent). */
int dq_txq_send_split (DqTxQueue *txq, const guint8 *const *headers, const guint32 *header_lengths,
    const DqTxPayload *payloads, const guint64 *times, guint n, GError **error);
/* Frames handed to the device so far, and frames it is done with (reads completions);
 * equal, and 0, on engines that copy every frame before the sending call returns. */
guint64 dq_txq_posted (DqTxQueue *txq);
guint64 dq_txq_completed (DqTxQueue *txq);

G_END_DECLS

#endif /* DAQIRI_ENGINE_H */
