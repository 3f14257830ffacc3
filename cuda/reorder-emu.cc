/* reorder-emu.cc — reorder.cu built as plain C++ on cuda-emu.h, for the CI test of the kernels
 * (test-cuda-emu). Not part of any product build. */
#define DQ_CUDA_EMU 1
#define DQ_CLAIM_TAG_BITS 3    /* claims are reset every 7 generations: that path runs too */
#define DQ_ZERO_LIST_BATCHES 1 /* and the full missing-slot list */
#define DQ_ZERO_LIST_MIN 0
#define DQ_PARAM_AHEAD 2   /* frames from the parameters and from the ring in memory */
#define DQ_POST_TAG_BITS 4 /* early start's posts cleared every 16 submissions */
#include "reorder.cu"
