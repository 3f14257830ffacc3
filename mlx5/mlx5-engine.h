/* The mlx5 engines: one DqEngineOps table per control path (Mlx5PortOps), all sharing
 * the same datapath (rx.c, tx.c). "emu" drives the emulated ConnectX (emu:NAME); "mlx5"
 * a real one, when the hardware control path is built (DQ_HAVE_MLX5_HW).
 *
 * Device strings: ENGINE:NAME[,KEY=VALUE]... The engine takes these keys itself (same on
 * hardware and emulator) and hands NAME with the other keys to the control path:
 *
 *   stride=64..8192          RX stride bytes, a power of two (default 64, the device
 *                            minimum; a larger frame takes several strides of one WQE)
 *   strides=8..65536         RX strides per WQE, a power of two (default 512, fewer for
 *                            small rings)
 *   tx-signal=1..N           ask for a TX completion every N WQEs (default 32)
 *   tx-csum=on|off           L3/L4 checksum offload on every sent frame (default on)
 *   tx-eth-src=on|off        write the port's MAC into bytes 6..11 of every sent frame
 *                            (default off)
 *   cqe-comp=off|on|basic|enhanced  compressed RX completions (mlx5-dma.h, rx.h): on
 *                            takes the enhanced layout where the device has it, else the
 *                            basic one, else none; basic and enhanced are refused on a
 *                            device without them (the emulated ConnectX has both). A
 *                            packet of a mini-CQE carries its title's time, not its own,
 *                            and the CQ is a quarter of the ring's strides. Default off:
 *                            every packet its own NIC time. Not with header-data split.
 */
#ifndef DAQIRI_MLX5_ENGINE_H
#define DAQIRI_MLX5_ENGINE_H

#include "daqiri-engine.h"

G_BEGIN_DECLS

/* the engines of this library, NULL-terminated (engine/engine.c registers them) */
const DqEngineOps *const *dq_mlx5_engines (void);

extern const DqEngineOps dq_emu_engine;

G_END_DECLS

#endif
