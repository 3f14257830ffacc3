/* Helpers of the flow-rule tests (test-flow.c, test-flow-bpf.c): parsing, comparing rules,
 * random rules, and Ethernet/IPv4 frames built from a description. */
#ifndef FLOW_TEST_UTIL_H
#define FLOW_TEST_UTIL_H

#include "daqiri-engine.h"
#include "daqiri-flow.h"
#include "dq-packet.h"

#include <string.h>

#define IP4(a, b, c, d) \
  ((guint32) (a) << 24 | (guint32) (b) << 16 | (guint32) (c) << 8 | (guint32) (d))

#define PORT_KEYS (DQ_FLOW_SRC_PORT | DQ_FLOW_DST_PORT)
#define IPV4_KEYS (DQ_FLOW_PROTO | DQ_FLOW_SRC | DQ_FLOW_DST | PORT_KEYS)
#define ALL_KEYS 0x1ffu
#define KEYS_TEXT "keys are proto, src, dst, src-port, dst-port, ethertype, vlan, mark, queue"

#define PICK(pool) ((pool)[g_test_rand_int_range (0, G_N_ELEMENTS (pool))])

static inline gboolean
chance (int percent)
{
  return g_test_rand_int_range (0, 100) < percent;
}

static inline DqFlowRule *
parse_ok (const char *text, guint *n_rules)
{
  GError *error = NULL;
  DqFlowRule *rules = NULL;
  gboolean ok = dq_flow_parse (text, &rules, n_rules, &error);

  g_assert_no_error (error);
  g_assert_true (ok);
  if (*n_rules == 0)
    g_assert_null (rules);
  return rules;
}

static inline DqFlowRule
parse_one (const char *text)
{
  guint n = 0;
  DqFlowRule *rules = parse_ok (text, &n);
  DqFlowRule rule;

  g_assert_cmpuint (n, ==, 1);
  rule = rules[0];
  g_free (rules);
  return rule;
}

static inline gboolean
rule_equal (const DqFlowRule *a, const DqFlowRule *b)
{
  return a->keys == b->keys && a->proto == b->proto && a->src_prefix == b->src_prefix &&
      a->dst_prefix == b->dst_prefix && a->src == b->src && a->dst == b->dst &&
      a->src_port == b->src_port && a->dst_port == b->dst_port && a->ethertype == b->ethertype &&
      a->vlan == b->vlan && a->mark == b->mark && a->queue == b->queue;
}

static inline void
assert_rule_equal (const DqFlowRule *got, const DqFlowRule *want)
{
  if (!rule_equal (got, want)) {
    g_autofree char *g = dq_flow_rule_to_string (got);
    g_autofree char *w = dq_flow_rule_to_string (want);

    g_error ("rule \"%s\" (keys 0x%x) != \"%s\" (keys 0x%x)", g, got->keys, w, want->keys);
  }
}

/* to_string, parse back, compare: the canonical text must say exactly the rule. */
static inline void
assert_round_trip (const DqFlowRule *rule)
{
  g_autofree char *text = dq_flow_rule_to_string (rule);
  DqFlowRule back = parse_one (text);
  g_autofree char *again = dq_flow_rule_to_string (&back);

  assert_rule_equal (&back, rule);
  g_assert_cmpstr (again, ==, text);
}

/* ---- random rules (also used by the BPF tests) ---- */

static const guint16 pool_vlan[] = { 0, 1, 100, 4095 };
static const guint16 pool_ethertype[] = {
  0x0800,
  0x86dd,
  0x0806,
  0x8100,
  0x88a8,
  0x0600,
};
static const guint8 pool_proto[] = { 1, 6, 17, 47 };
static const guint32 pool_addr[] = {
  IP4 (10, 0, 0, 1),
  IP4 (10, 0, 0, 2),
  IP4 (10, 1, 0, 1),
  IP4 (192, 168, 1, 1),
  0,
  0xffffffffu,
};
static const guint8 pool_prefix[] = { 0, 8, 16, 24, 31, 32, 32, 32 };
static const guint16 pool_port[] = { 0, 53, 5000, 5001, 65535 };

static inline guint32
mask_of (guint prefix)
{
  return prefix ? 0xffffffffu << (32 - prefix) : 0;
}

/* A rule the parser would accept, with values that random frames often hit. */
static inline DqFlowRule
random_rule (int percent_per_key, guint n_queues)
{
  DqFlowRule r;
  guint k;

  memset (&r, 0, sizeof r);
  for (k = 0; k < 9; k++)
    if (chance (percent_per_key))
      r.keys |= 1u << k;
  if (r.keys == 0)
    r.keys = chance (50) ? DQ_FLOW_MARK : DQ_FLOW_DST_PORT;

  r.proto = PICK (pool_proto);
  if ((r.keys & PORT_KEYS) && r.proto != 6 && r.proto != 17)
    r.proto = chance (50) ? 6 : 17;
  r.ethertype = (r.keys & IPV4_KEYS) ? 0x0800 : PICK (pool_ethertype);
  r.src_prefix = PICK (pool_prefix);
  r.src = PICK (pool_addr) & mask_of (r.src_prefix);
  r.dst_prefix = PICK (pool_prefix);
  r.dst = PICK (pool_addr) & mask_of (r.dst_prefix);
  r.src_port = PICK (pool_port);
  r.dst_port = PICK (pool_port);
  r.vlan = PICK (pool_vlan);
  r.mark = (guint32) g_test_rand_int ();
  r.queue = (guint16) g_test_rand_int_range (0, (gint32) n_queues);

  /* fields of absent keys stay zero, as the parser leaves them */
  if (!(r.keys & DQ_FLOW_PROTO))
    r.proto = 0;
  if (!(r.keys & DQ_FLOW_ETHERTYPE))
    r.ethertype = 0;
  if (!(r.keys & DQ_FLOW_SRC))
    r.src = r.src_prefix = 0;
  if (!(r.keys & DQ_FLOW_DST))
    r.dst = r.dst_prefix = 0;
  if (!(r.keys & DQ_FLOW_SRC_PORT))
    r.src_port = 0;
  if (!(r.keys & DQ_FLOW_DST_PORT))
    r.dst_port = 0;
  if (!(r.keys & DQ_FLOW_VLAN))
    r.vlan = 0;
  if (!(r.keys & DQ_FLOW_MARK))
    r.mark = 0;
  if (!(r.keys & DQ_FLOW_QUEUE))
    r.queue = 0;
  return r;
}

typedef struct {
  guint16 tag_tpid; /* 0: no in-band tag */
  guint16 tag_tci;
  guint16 ethertype;
  guint8 version;
  guint8 ihl; /* 32-bit words; the builder writes at least 5 */
  guint8 proto;
  guint16 frag; /* flags and fragment offset */
  guint32 src, dst;
  guint16 sport, dport;
  guint payload;
} FrameSpec;

#define FRAME_MAX 256

static inline FrameSpec
ipv4_spec (guint8 proto, guint32 src, guint32 dst, guint16 sport, guint16 dport)
{
  FrameSpec s;

  memset (&s, 0, sizeof s);
  s.ethertype = 0x0800;
  s.version = 4;
  s.ihl = 5;
  s.proto = proto;
  s.src = src;
  s.dst = dst;
  s.sport = sport;
  s.dport = dport;
  s.payload = 18;
  return s;
}

/* Writes the frame; the IPv4-looking bytes follow the ethertype whatever it is, and
 * IPv4 options hold decoy bytes that read as port 4444 at the wrong offset. */
static inline guint
build_frame (const FrameSpec *s, guint8 *buf)
{
  guint l2 = 12, l3, hl = MAX (s->ihl, 5) * 4u, i;

  memset (buf, 0, FRAME_MAX);
  for (i = 0; i < 6; i++) {
    buf[i] = (guint8) (0x02 + i);
    buf[6 + i] = (guint8) (0x12 + i);
  }
  if (s->tag_tpid) {
    dq_packet_put16 (buf + 12, s->tag_tpid);
    dq_packet_put16 (buf + 14, s->tag_tci);
    l2 = 16;
  }
  dq_packet_put16 (buf + l2, s->ethertype);
  l3 = l2 + 2;
  buf[l3] = (guint8) (s->version << 4 | (s->ihl & 0x0f));
  dq_packet_put16 (buf + l3 + 2, hl + 8 + s->payload);
  dq_packet_put16 (buf + l3 + 4, 0x1234);
  dq_packet_put16 (buf + l3 + 6, s->frag);
  buf[l3 + 8] = 64;
  buf[l3 + 9] = s->proto;
  dq_packet_put32 (buf + l3 + 12, s->src);
  dq_packet_put32 (buf + l3 + 16, s->dst);
  for (i = 20; i < hl; i += 2)
    dq_packet_put16 (buf + l3 + i, 4444);
  dq_packet_put16 (buf + l3 + hl, s->sport);
  dq_packet_put16 (buf + l3 + hl + 2, s->dport);
  dq_packet_put16 (buf + l3 + hl + 4, 8 + s->payload);
  for (i = 0; i < s->payload; i++)
    buf[l3 + hl + 8 + i] = (guint8) (0xa0 + i);
  g_assert_cmpuint (l3 + hl + 8 + s->payload, <=, FRAME_MAX);
  return l3 + hl + 8 + s->payload;
}

#endif
