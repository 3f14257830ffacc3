/* The start of a GPU element test (test-reorder-gpu, test-pay-gpu): GStreamer initialised and
 * the GPU that runs the test named on stdout, or the test skipped (exit code 77, meson's) with
 * the reason where there is none. Built with DQ_TEST_EMU, the plugin runs on the CUDA
 * emulator, which is always there. Header only. */
#ifndef DAQIRI_TEST_GPU_TEST_START_H
#define DAQIRI_TEST_GPU_TEST_START_H

#include <gst/gst.h>

#include <stdio.h>
#include <stdlib.h>

#include "daqiri-reorder.h"

/* Returns only where there is a GPU (or the emulator) to run on; `prog` prefixes the skip line. */
static inline void
dq_gpu_test_start (const char *prog, int *argc, char ***argv)
{
  gst_init (argc, argv);
#ifdef DQ_TEST_EMU
  printf ("device: the CUDA emulator (CPU fibers) in the plugin\n");
#else
  char why[256];
  if (!dq_cuda_available (why, sizeof why)) {
    printf ("%s: skipped: %s\n", prog, why);
    exit (77);
  }
  char dev[256];
  dq_cuda_device_info (dev, sizeof dev);
  printf ("device: %s\n", dev);
#endif
}

#endif
