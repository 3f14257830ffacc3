/* The engines built into this library; engine.c registers them on first use. */
#ifndef DAQIRI_ENGINES_H
#define DAQIRI_ENGINES_H

#include "daqiri-engine.h"

extern const DqEngineOps dq_afpacket_engine;

#ifdef DQ_HAVE_DPDK
extern const DqEngineOps dq_dpdk_engine;
#endif

#ifdef DQ_HAVE_PCAP
extern const DqEngineOps dq_pcap_engine;
#endif

#ifdef DQ_HAVE_MLX5
/* mlx5/mlx5-engine.h: the mlx5 engines ("emu", and "mlx5" with the hardware path) */
const DqEngineOps *const *dq_mlx5_engines (void);
#endif

#endif
