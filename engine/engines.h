/* The engines built into this library; engine.c registers them on first use. */
#ifndef DAQIRI_ENGINES_H
#define DAQIRI_ENGINES_H

#include "daqiri-engine.h"

extern const DqEngineOps dq_afpacket_engine;

#endif
