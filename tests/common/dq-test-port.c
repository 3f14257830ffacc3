#include "dq-test-port.h"
#include "dq-bench-util.h"

#include <string.h>

DqPort *
dq_test_port_open (const char *device)
{
  GError *error = NULL;
  DqPort *port = dq_port_open (device, &error);
  if (port == NULL || error != NULL)
    g_error ("device %s does not open: %s", device, error != NULL ? error->message : "no error");
  return port;
}

/* the queue a _create call returned, which must be there and without an error */
static gpointer
expect_created (gpointer queue, GError *error)
{
  g_assert_no_error (error);
  g_assert_nonnull (queue);
  return queue;
}

DqRxQueue *
dq_test_rxq_create (DqPort *port, const DqRxConfig *config)
{
  GError *error = NULL;
  DqRxQueue *rxq = dq_rxq_create (port, config, &error);
  return expect_created (rxq, error);
}

DqTxQueue *
dq_test_txq_create (DqPort *port, const DqTxConfig *config)
{
  GError *error = NULL;
  DqTxQueue *txq = dq_txq_create (port, config, &error);
  return expect_created (txq, error);
}

DqRxStats
dq_test_rx_stats (DqRxQueue *rxq)
{
  DqRxStats s;
  dq_rxq_stats (rxq, &s);
  return s;
}

DqTxStats
dq_test_tx_stats (DqTxQueue *txq)
{
  DqTxStats s;
  dq_txq_stats (txq, &s);
  return s;
}

static gpointer
poll_thread (gpointer data)
{
  DqTestPoll *p = data;
  DqBurst b;
  GError *error = NULL;
  gint64 cpu0 = dq_bench_thread_cpu_ns ();
  p->result = dq_rxq_poll (p->rxq, &b, p->timeout_ns, &error);
  p->returned_at = g_get_monotonic_time () * 1000;
  p->cpu_ns = dq_bench_thread_cpu_ns () - cpu0;
  g_assert_no_error (error);
  if (p->result == 1)
    dq_rxq_release (p->rxq, &b);
  return NULL;
}

void
dq_test_poll_start (DqTestPoll *p, DqRxQueue *rxq, gint64 timeout_ns)
{
  p->rxq = rxq;
  p->timeout_ns = timeout_ns;
  p->result = -2;
  p->returned_at = 0;
  p->cpu_ns = 0;
  p->thread = g_thread_new ("poller", poll_thread, p);
}

int
dq_test_poll_join (DqTestPoll *p)
{
  g_thread_join (p->thread);
  p->thread = NULL;
  return p->result;
}

void
dq_test_link_open (DqTestLink *l, const char *tx_device, const DqTxConfig *tx,
    const char *rx_device, const DqRxConfig *rx)
{
  l->tx_port = dq_test_port_open (tx_device);
  l->rx_port = dq_test_port_open (rx_device);
  l->rxq = dq_test_rxq_create (l->rx_port, rx);
  l->txq = dq_test_txq_create (l->tx_port, tx);
}

void
dq_test_link_close (DqTestLink *l)
{
  dq_txq_destroy (l->txq);
  dq_rxq_destroy (l->rxq);
  dq_port_unref (l->rx_port);
  dq_port_unref (l->tx_port);
}

DqFlowRule *
dq_test_rules_parse (const char *text, guint *n)
{
  DqFlowRule *rules = NULL;
  GError *error = NULL;
  g_assert_true (dq_flow_parse (text, &rules, n, &error));
  g_assert_no_error (error);
  return rules;
}

void
dq_test_expect_error (GError *error, int code, const char *const *parts)
{
  g_assert_nonnull (error);
  g_assert_true (error->domain == DQ_ERROR);
  g_assert_cmpint (error->code, ==, code);
  for (; *parts != NULL; parts++)
    if (strstr (error->message, *parts) == NULL)
      g_error ("'%s' does not mention '%s'", error->message, *parts);
  g_error_free (error);
}
