/* Inside the emulated ConnectX: the port, its device objects and their device-side
 * state. Shared by the device model (emu.c, its receive side emu-rx.c), its control path
 * (emu-port.c) and the configuration parser (emu-config.c). */
#ifndef DAQIRI_MLX5_EMU_PRIVATE_H
#define DAQIRI_MLX5_EMU_PRIVATE_H

#include "emu.h"

G_BEGIN_DECLS

#define EMU_NAME_MAX 32
#define EMU_DEFAULT_RATE G_GUINT64_CONSTANT (100000000000)
#define EMU_DEFAULT_FREQ_KHZ 1000000
#define EMU_DEFAULT_MTU 1500
#define EMU_DEFAULT_OVERHEAD 24
#define EMU_MIN_FRAME 60
#define EMU_MAX_FRAME 65535
#define EMU_BF_SIZE 256
/* the lowest packet pacing rate an SQ takes, bit/s (the highest: the line rate) */
#define EMU_PP_MIN_RATE G_GUINT64_CONSTANT (1000000)
#define EMU_INPUT_MAX 65536
/* a cable with pause holds the sender back while this many frames wait at the peer */
#define EMU_PEER_PAUSE 256

/* The PRM's bounds of a striding RQ, which the device enforces: log2 of the stride size
 * 6..13, log2 of the strides per WQE 3..16 (the extended range) */
#define EMU_MIN_LOG_STRIDE_SIZE 6
#define EMU_MAX_LOG_STRIDE_SIZE 13
#define EMU_MIN_LOG_STRIDES 3
#define EMU_MAX_LOG_STRIDES 16

/* which keys a spec gave explicitly */
enum {
  EMU_KEY_RATE = 1 << 0,
  EMU_KEY_FREQ = 1 << 1,
  EMU_KEY_MTU = 1 << 2,
  EMU_KEY_MAC = 1 << 3,
  EMU_KEY_PEER = 1 << 4,
  EMU_KEY_PAUSE = 1 << 5,
  EMU_KEY_CLOCK = 1 << 6,
  EMU_KEY_OVERHEAD = 1 << 7,
  EMU_KEY_GEN = 1 << 8,
  EMU_KEY_GEN_RATE = 1 << 9,
  EMU_KEY_GEN_COUNT = 1 << 10,
  EMU_KEY_GEN_LOSSLESS = 1 << 11,
  EMU_KEY_INLINE = 1 << 12,
  EMU_KEY_LOSS = 1 << 13,
};

typedef struct {
  char name[EMU_NAME_MAX + 1];
  guint32 keys;
  guint64 rate_bps;
  guint64 freq_khz;
  guint mtu;
  guint8 mac[6];
  char peer[EMU_NAME_MAX + 1]; /* "" : this port */
  gboolean peer_none;
  gboolean pause;
  gboolean real_time;
  guint overhead;
  gboolean inline_l2; /* send WQEs must carry the Ethernet header inline (inline=l2) */
  guint loss_every;   /* loss=EVERY[+PHASE]: 0, or every EVERY-th frame in is lost */
  guint loss_phase;
  /* the generator the spec asks for (gen_len 0: none), started with the first RQ */
  guint gen_len;
  guint64 gen_rate;
  guint64 gen_count;
  gboolean gen_lossless;
} EmuConfig;

/* Parses "NAME[,KEY=VALUE]..." (see emu.h); unset keys get their defaults. */
gboolean emu_config_parse (const char *spec, EmuConfig *cfg, GError **error);
/* A second user's spec against the port's: keys it gives must agree. */
gboolean emu_config_compatible (const EmuConfig *port, const EmuConfig *other, GError **error);

/* A CQE being made: its 64 bytes as eight big-endian words, word i = bytes 8i .. 8i + 7
 * (byte 8i the most significant), every field zero until set. */
typedef struct {
  guint64 w[8];
} EmuCqe;

/* A CQE held back until the data it reports is copied to device memory. */
typedef struct {
  EmuCqe cqe;
  guint8 opcode;
  gboolean packet; /* a packet's CQE, which a compressed CQ may fold into a session */
} EmuStagedCqe;

#define EMU_STAGED_CQES 256

/* A registered memory region: what the IOMMU lets the device touch. Device memory (GPU
 * memory the CPU cannot address; `device` set) is reached by copies, as a copy engine
 * would: what the device writes is composed in a host shadow and copied over with
 * memory.write in batches; what it sends is copied out with memory.read. */
typedef struct {
  guint8 *addr;
  gsize size;
  guint32 lkey;
  gboolean used;
  gboolean device;
  guint8 *shadow; /* device memory the device writes: its host shadow */
  DqRingMemory memory;
} EmuMr;

/* The completions a compressed CQ holds for a session not written yet (emu-cq.c). */
#define EMU_CQE_COMP_MAX 64
typedef struct {
  gboolean open; /* basic: n > 0; enhanced: the title is written, mini-CQEs may follow */
  guint n;       /* basic: completions held, the title's first; enhanced: mini-CQEs after
                  * the title so far */
  guint pending; /* enhanced: mini-CQEs held for the next compressed CQE */
  guint32 rqn;   /* the RQ the session's completions are of */
  EmuCqe title;
  guint64 mini[EMU_CQE_COMP_MAX]; /* FTAG_STRIDX mini-CQEs, word values */
} EmuCqZip;

/* Device-side copy of a CQ's context (the host's ring, doorbell record, size). */
typedef struct {
  guint8 *ring;
  volatile guint32 *dbrec;
  guint log_size;
  guint32 cqn;
  guint32 pi;     /* CQ indices written (a compressed CQE or session takes several) */
  guint32 staged; /* CQEs held back until their data is copied (device-memory RQs) */
  Mlx5CqComp comp;
  guint32 held; /* CQ indices of completions the session holds, not written yet */
  EmuCqZip zip;
} EmuCq;

/* compressed CQs (emu-cq.c): a packet's CQE of RQ `rqn`, which may join a session; and
 * the session written out (at the end of each device pass, and before any other CQE) */
void emu_cq_post_packet (EmuCq *cq, const EmuCqe *c, guint32 rqn);
void emu_cq_zip_flush (EmuCq *cq);

typedef struct {
  guint8 *wqes;
  volatile guint32 *dbrec;
  guint log_wqes;
  guint log_strides;
  guint log_stride_size;
  EmuCq *cq;
  guint32 rqn;
  /* header-data split (split_header != 0): a cyclic RQ, one packet per WQE of two data
   * segments (Mlx5Rq) */
  guint split_header;

  /* device state: the WQE being filled */
  guint32 hw_wqe;    /* WQE counter */
  guint32 hw_stride; /* next free stride in it */
  guint8 *region;    /* its region, checked against the MRs; NULL: none yet */
  gboolean in_error; /* ERR: every posted WQE is flushed, nothing is received */
  guint64 out_of_buffer;

  /* a region in device memory: `region` is its host shadow, `region_mr` says where it
   * goes; the frames written since the last copy span [dirty_lo, dirty_hi) of it and
   * their CQEs wait in `staged` until the copy is done */
  EmuMr *region_mr;
  guint8 *region_device;
  gsize dirty_lo, dirty_hi;
  guint n_staged;
  EmuStagedCqe staged[EMU_STAGED_CQES];
} EmuRq;

/* A train of frames on a wire (the formula in emu.h): it started at tick `anchor`, and
 * the S bits sent since take S * f / R ticks, kept exactly as a quotient and a
 * remainder: S * f = ticks * R + rem. The step of the last frame size, W * f =
 * step_ticks * R + step_rem, is kept too: each frame then costs additions, not a
 * division (W * f < 2^64: W <= 8 * (65535 + 64) bits, f <= 10 GHz). */
typedef struct {
  guint64 anchor;
  guint64 ticks;
  guint64 rem;
  guint64 step_bits; /* 0: no step yet */
  guint64 step_ticks;
  guint64 step_rem;
} EmuWire;

/* The tick at which a frame of `bits` wire bits that is ready at tick `at` starts on
 * wire `w` (clock `freq_hz`, line rate `rate_bps`); the frame is then on the wire. */
guint64 emu_wire_start (EmuWire *w, guint64 freq_hz, guint64 rate_bps, guint64 at, guint64 bits);
/* The tick at which a frame ready at tick `at` would start, without sending it. */
guint64 emu_wire_next (const EmuWire *w, guint64 at);

typedef struct {
  guint8 *wqes;
  volatile guint32 *dbrec;
  guint log_wqebbs;
  EmuCq *cq;
  guint32 sqn;
  guint8 *bf;     /* the UAR/BlueFlame page the host writes doorbells to: two buffers of
                  * EMU_BF_SIZE, each starting with the 8-byte doorbell register */
  guint32 hw_ci;  /* WQEBBs executed */
  guint32 db_end; /* one past the WQE index the latest valid doorbell named: the
                   * device executes WQEs that start before it */
  /* a doorbell record that moved without a doorbell: its value, since when (monotonic
   * us, 0: none) and whether it was counted */
  guint32 stray_pi;
  gint64 stray_since;
  gboolean stray_counted;
  gboolean in_error; /* ERR: every WQE the doorbells cover is flushed, nothing is sent */
  /* send scheduling: where the SQ's execution is in time (the tick of its latest WAIT's
   * release or SEND), the tick at which the device took its latest doorbell, and once a
   * WAIT passed, the tick `release` at which the SEND behind it is ready (valid with
   * has_release) */
  guint64 model_now;
  guint64 db_tick;
  guint64 release;
  gboolean has_release;
  /* packet pacing (rate_bps 0: none): the SQ's frames leave no faster than rate_bps bits
   * of frame a second, as if on a wire of that rate with no overhead; a frame the pacer
   * holds back was ready at tick pace_ready (0: none held) */
  guint64 rate_bps;
  EmuWire pace;
  guint64 pace_ready;
  /* the eMPW WQE at hw_ci: checked whole, and packets of it already sent */
  gboolean empw_checked;
  guint empw_next;
} EmuSq;

/* The steering rules of one group of RQs. */
typedef struct {
  guint32 group;
  EmuRq **rqs;
  guint n_rqs;
  guint rqt_size; /* RSS indirection table: next power of two >= n_rqs */
  DqFlowRule *rules;
  guint n_rules;
} EmuSteerGroup;


typedef struct {
  guint len;
  gboolean lossless;  /* from a cable with pause: waits for RX room */
  guint64 arrival_ns; /* CLOCK_MONOTONIC (or REALTIME with clock=rt) */
  guint8 data[];
} EmuFrame;

/* What a received frame's CQE gets from steering and its headers. */
typedef struct {
  guint32 tag;       /* flow tag (24 bits) */
  guint32 hash;      /* RSS hash, 0 without RSS */
  guint8 hds_ip_ext; /* L2/L3/L4 OK */
  guint8 l4_l3;      /* l4_hdr_type_etc */
} EmuRxMeta;

/* the generator's sequence number: UDP payload, after the 42 bytes of headers */
#define EMU_GEN_SEQ_OFFSET 42

typedef struct {
  EmuGenConfig cfg;
  gboolean active;
  guint64 produced; /* frames made (read by emu_port_generated) */
  guint64 start_ticks;
  /* paced: frame `produced` is due at start + floor (produced * f / rate), kept as
   * due_ticks (that tick) and due_rem (produced * f mod rate); each frame adds
   * f = step_ticks * rate + step_rem */
  guint64 due_ticks;
  guint64 due_rem;
  guint64 step_ticks;
  guint64 step_rem;
  /* the template's steering, the same for all its frames: the RQ (NULL: none) and the
   * CQE fields, made at the port's steer_version `steer_version` (0: not yet) */
  guint32 steer_version;
  EmuRq *steer_rq;
  EmuRxMeta steer_meta;
  /* the frame: the template, with the sequence number, pattern and UDP checksum of the
   * last frame made */
  guint8 frame[EMU_MAX_FRAME];
  /* the UDP checksum's parts that the template fixes: the sum of the pseudo header and
   * the UDP header (checksum 0), and the pattern's sum for each k mod 256 (folded) */
  guint64 csum_base;
  guint16 pattern_sum[256];
  /* byte j is j & 0xff: frame k's pattern starts at (k & 0xff) */
  guint8 pattern[EMU_MAX_FRAME + 256];
} EmuGen;

/* the generator's frames (emu-gen.c): the template for g->cfg, sent to `dst_mac`; and
 * frame k (first_seq + k, pattern (k + i) & 0xff, checksums right) in g->frame */
void emu_gen_template (EmuGen *g, const guint8 dst_mac[6]);
void emu_gen_frame (EmuGen *g, guint64 k);
/* the generator's count: frame 0 is due at `start_ticks` (clock `freq_hz`), and frame
 * `produced` is due at g->due_ticks; advance counts a frame made */
void emu_gen_start (EmuGen *g, guint64 start_ticks, guint64 freq_hz);
void emu_gen_advance (EmuGen *g);

struct _EmuPort {
  gint refcount; /* the object */
  gint users;    /* opens; protected by the registry lock */
  EmuConfig cfg;
  char *clock_name;
  guint64 freq_hz;

  GMutex lock;    /* device objects and device state; the device thread
                                 * holds it for one pass */
  GPtrArray *mrs; /* EmuMr*, index = lkey >> 8 */
  GPtrArray *cqs, *rqs, *sqs;
  GPtrArray *groups;     /* EmuSteerGroup*, in the order they were set */
  guint32 steer_version; /* changes with the groups (never 0): steering cached
                                 * before is stale */
  guint32 next_id;

  EmuWire tx_wire, rx_wire;
  EmuGen *gen;
  gboolean gen_from_spec; /* the spec's generator was started (under lock) */

  /* faults (under lock) */
  guint fault_rx_drop;
  guint64 rx_arrived;    /* frames that arrived at the port's input (loss=) */
  gint64 fault_rx_error; /* -1: none; else packets to let through first */
  guint8 fault_rx_syndrome;
  gint64 fault_tx_error;
  guint8 fault_tx_syndrome;
  gboolean stalled;

  /* frames from outside: injected, or sent by another port's cable */
  GMutex in_lock;
  GQueue input; /* EmuFrame* */

  GThread *thread;
  gint stop;
  GMutex wake_lock;
  GCond wake_cond;
  gint busy; /* a pass found work (for wait_idle) */

  EmuCounters c; /* written under lock, read atomically */
  guint8 bounce[EMU_MAX_FRAME];
};

/* The steering groups changed (under the port lock). */
static inline void
emu_steering_changed (EmuPort *p)
{
  if (++p->steer_version == 0)
    p->steer_version = 1;
}

/* device-side object management (emu.c), called with port->lock held */
EmuMr *emu_mr_lookup (EmuPort *port, guint32 lkey);
void emu_port_kick (EmuPort *port);
guint64 emu_port_now_ns (EmuPort *port);
guint64 emu_ticks_to_ns (EmuPort *port, guint64 ticks);
gboolean emu_dma_ok (EmuPort *port, guint32 lkey, guint64 addr, guint64 len, guint8 **ptr);

G_END_DECLS

#endif
