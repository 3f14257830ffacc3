/* The emulated ConnectX's receive side (emu-rx.c) as the rest of the device calls it:
 * all with the port lock held, on the device thread. Internal to mlx5/emu. */
#ifndef DAQIRI_MLX5_EMU_RX_H
#define DAQIRI_MLX5_EMU_RX_H

#include "emu-private.h"
#include "emu-net.h"

G_BEGIN_DECLS

/* the RQ a frame goes to (NULL: no group takes it), its tag and hash in *m */
EmuRq *emu_steer (EmuPort *p, const guint8 *frame, guint len, const EmuHeaders *h, EmuRxMeta *m);
/* the CQE's l4_hdr_type_etc for the frame's headers */
guint8 emu_rx_l4_l3 (const EmuHeaders *h);
/* whether a frame of len bytes can be written into rq now */
gboolean emu_rq_has_room (EmuPort *p, EmuRq *rq, guint len);
/* receives a frame already steered to rq (NULL: nobody takes it) at device time `at`;
 * FALSE when lossless and there is no room (the frame waits) */
gboolean emu_rx_steered (EmuPort *p, const guint8 *frame, guint len, guint64 at, gboolean lossless,
    EmuRq *rq, EmuRxMeta *m, const EmuHeaders *h);
/* steers and receives a frame; known_ok >= 0: its checksum flags are known */
gboolean emu_rx_frame (
    EmuPort *p, const guint8 *frame, guint len, guint64 at, gboolean lossless, gint known_ok);
/* device memory: copies what was written since the last copy, then posts the CQEs waiting
 * for it (at the end of each device pass) */
void emu_rq_commit (EmuPort *p, EmuRq *rq);
/* an RQ in ERR: flushes the WQEs posted since (every device pass); TRUE if there were */
gboolean emu_rq_flush_posted (EmuPort *p, EmuRq *rq);
/* the largest frame (without FCS) the port takes */
guint emu_max_frame (EmuPort *p);
/* the device time at which a frame of len bytes that reaches the wire w at `at` starts,
 * behind the frames before it (emu.h's line-rate formula) */
guint64 emu_port_wire_start (EmuPort *p, EmuWire *w, guint64 at, guint len);
/* the CQE timestamp of device time `ticks` */
guint64 emu_cqe_timestamp (EmuPort *p, guint64 ticks);

G_END_DECLS

#endif /* DAQIRI_MLX5_EMU_RX_H */
