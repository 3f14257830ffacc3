/* Test helper: an emulated ConnectX port opened through its control path (emu_port_ops,
 * as the engine opens it), with RX queues steered and a TX queue on the host rings
 * (mlx5/rx.c, tx.c), and the frames it receives copied out. For the emulator tests
 * (test-emu.c: configuration and the receive side; test-emu-tx.c: the send side). */
#ifndef DAQIRI_TEST_EMU_RIG_H
#define DAQIRI_TEST_EMU_RIG_H

#include "emu.h"
#include "mini-port.h"

#define S_NS G_GINT64_CONSTANT (1000000000)

typedef struct {
  gpointer dev;
  EmuPort *port;
  DqPortInfo info;
  Mlx5Caps caps;
  Mlx5Rxq *rx[4];
  guint n_rx;
  Mlx5Txq *tx;
} Rig;

void rig_open (Rig *r, const char *spec);
/* an RX queue of 2^log_stride-byte strides, 2^log_strides a WQE, 2^log_wqes WQEs */
Mlx5Rxq *rig_rx (Rig *r, guint log_stride, guint log_strides, guint log_wqes);
/* steers everything (or `rules`) to the rig's RQs as group `group` */
void rig_steer (Rig *r, guint32 group, const DqFlowRule *rules, guint n_rules);
Mlx5Txq *rig_tx (Rig *r, gsize ring, guint max_packet, gboolean csum);
/* Opens a rig whose TX ring of `ring` bytes (frames of up to 1518 bytes, checksum offload
 * if csum) sends into one RX queue taking all traffic: 2 KiB strides, 8 per WQE,
 * 2^log_wqes WQEs. Returns the TX ring. */
Mlx5Txq *rig_open_loop (Rig *r, const char *spec, guint log_wqes, gsize ring, gboolean csum);
void rig_close (Rig *r);

/* A received packet, copied out. */
typedef struct {
  guint8 *data;
  guint len;
  guint32 flow_id;
  guint32 flags;
  guint64 ts;
  guint queue;
} RxPkt;

/* an array of RxPkt that frees their data */
GArray *rxpkts_new (void);
/* Polls queue `qi` of the rig until `want` packets (in `out`) or `timeout_ms`; each
 * burst is checked (one WQE region, packets inside it) and released at once. */
void rig_poll (Rig *r, guint qi, GArray *out, guint want, guint timeout_ms);
/* sends the n frames, waiting for slots (10 s at most) */
void send_all (Mlx5Txq *tx, guint8 **frames, guint32 *lens, guint n);
/* waits until the device is idle (5 s at most) */
void wait_idle (Rig *r);

#endif
