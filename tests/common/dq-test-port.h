/* Engine helpers for tests and benchmarks: opening a port or a receive queue, or parsing
 * a transmit queue or a link of both, or parsing flow rules, that a program cannot go on
 * without, polling a receive queue in a thread of its own, and checking an engine error.
 * The helpers' source is compiled into each program that uses them (dq_test_port_dep), so
 * that they call the engine registry that program links, whether the engine library or the
 * plugin's own objects. */
#ifndef DAQIRI_TEST_DQ_TEST_PORT_H
#define DAQIRI_TEST_DQ_TEST_PORT_H

#include "daqiri-engine.h"

/* The port of device, opened with dq_port_open: never NULL (the caller dq_port_unrefs
 * it). A port that does not open, or that opens with an error set anyway, ends the
 * program with a message that names the device and the engine's error, which fails the
 * test that asked for it. */
DqPort *dq_test_port_open (const char *device);

/* A receive queue of port, made with dq_rxq_create from config: never NULL (the caller
 * dq_rxq_destroys it). A queue that is not made, or made with an error set, fails the
 * test with the engine's error. */
DqRxQueue *dq_test_rxq_create (DqPort *port, const DqRxConfig *config);

/* A transmit queue of port, made with dq_txq_create from config: never NULL (the caller
 * dq_txq_destroys it); one that is not made fails the test with the engine's error. */
DqTxQueue *dq_test_txq_create (DqPort *port, const DqTxConfig *config);

/* The statistics of a queue (dq_rxq_stats, dq_txq_stats), as a value. */
DqRxStats dq_test_rx_stats (DqRxQueue *rxq);
DqTxStats dq_test_tx_stats (DqTxQueue *txq);

/* A poll of a receive queue in a thread of its own, for a test that wakes a blocked
 * poll: dq_test_poll_start starts it, dq_test_poll_join waits for it to return. `result`
 * is what dq_rxq_poll returned (-2 while it has not returned; a poll error fails the test),
 * `returned_at` when it returned (g_get_monotonic_time in ns), `cpu_ns` the CPU time the
 * thread spent in it. A burst the poll gets is released at once. */
typedef struct {
  DqRxQueue *rxq;
  gint64 timeout_ns;
  int result;
  gint64 returned_at;
  gint64 cpu_ns;
  GThread *thread;
} DqTestPoll;

/* Starts the poll of rxq, for at most timeout_ns (-1: until woken). */
void dq_test_poll_start (DqTestPoll *p, DqRxQueue *rxq, gint64 timeout_ns);
/* Waits for the poll to return; returns its result. */
int dq_test_poll_join (DqTestPoll *p);

/* Two ends of a link: a transmit queue on one device and a receive queue on another that
 * receives what it sends. */
typedef struct {
  DqPort *tx_port, *rx_port;
  DqTxQueue *txq;
  DqRxQueue *rxq;
} DqTestLink;

/* Opens the ports and makes the queues (as dq_test_port_open and the _create helpers). */
void dq_test_link_open (DqTestLink *l, const char *tx_device, const DqTxConfig *tx,
    const char *rx_device, const DqRxConfig *rx);
/* Destroys the queues and lets the ports go. */
void dq_test_link_close (DqTestLink *l);

/* The flow rules of text, parsed with dq_flow_parse, their count in *n (the caller
 * g_frees them). A text that does not parse fails the test with the parser's error. */
DqFlowRule *dq_test_rules_parse (const char *text, guint *n);

/* Asserts that `error` is set, has DQ_ERROR code `code` and mentions every string of the
 * NULL-terminated `parts`; frees it. */
void dq_test_expect_error (GError *error, int code, const char *const *parts);

#endif
