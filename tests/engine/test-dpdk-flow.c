/* The dpdk engine's rte_flow steering (engine/dpdk-flow.h), without a device:
 *
 *   patterns   the items of known rules, byte for byte (network order, masks); and for
 *              random rules and frames, a reference reading of the items (as rte_flow
 *              defines them) agrees with the software classifier (dq_flow_match)
 *   steering   through recording DpdkFlowOps: what is created and destroyed, in which
 *              order, for a first rule set, a change (new rules before old ones go, shared
 *              rules kept), a failure (rolled back, the earlier rules stay) and a clear
 *   check      the error a device without rte_flow gives, naming the rule and the reason
 */
#include "daqiri-engine.h"
#include "dpdk-flow.h"
#include "flow-test-util.h"

#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_errno.h>

#define PORT_ID 3

static guint16
be16 (const guint8 *p)
{
  return (guint16) (p[0] << 8 | p[1]);
}

/* ---------------------------------------------------------------------------------- */
/* patterns */

static void
assert_types (const DpdkFlowPattern *p, const enum rte_flow_item_type *want, guint n)
{
  for (guint i = 0; i < n; i++)
    g_assert_cmpint (p->items[i].type, ==, want[i]);
  g_assert_cmpint (p->items[n].type, ==, RTE_FLOW_ITEM_TYPE_END);
}

static void
test_patterns_known (void)
{
  DpdkFlowPattern pat[2];

  DqFlowRule r = parse_one ("proto=udp src=10.1.0.0/16 dst=192.168.1.7 dst-port=5000 queue=1");
  g_assert_cmpuint (dpdk_flow_patterns (&r, pat), ==, 1);
  assert_types (&pat[0],
      (const enum rte_flow_item_type[]){
          RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_IPV4, RTE_FLOW_ITEM_TYPE_UDP },
      3);
  g_assert_null (pat[0].items[0].spec);
  g_assert_null (pat[0].items[0].mask);
  const struct rte_ipv4_hdr *ip = &pat[0].ipv4_spec.hdr, *ipm = &pat[0].ipv4_mask.hdr;
  g_assert_true (pat[0].items[1].spec == &pat[0].ipv4_spec);
  g_assert_true (pat[0].items[1].mask == &pat[0].ipv4_mask);
  g_assert_cmpmem (&ip->src_addr, 4, ((const guint8[]){ 10, 1, 0, 0 }), 4);
  g_assert_cmpmem (&ipm->src_addr, 4, ((const guint8[]){ 255, 255, 0, 0 }), 4);
  g_assert_cmpmem (&ip->dst_addr, 4, ((const guint8[]){ 192, 168, 1, 7 }), 4);
  g_assert_cmpmem (&ipm->dst_addr, 4, ((const guint8[]){ 255, 255, 255, 255 }), 4);
  g_assert_cmpuint (ip->next_proto_id, ==, 17);
  g_assert_cmpuint (ipm->next_proto_id, ==, 0xff);
  g_assert_cmpmem (&pat[0].udp_spec.hdr.dst_port, 2, ((const guint8[]){ 0x13, 0x88 }), 2);
  g_assert_cmpmem (&pat[0].udp_mask.hdr.dst_port, 2, ((const guint8[]){ 0xff, 0xff }), 2);
  g_assert_cmpuint (pat[0].udp_mask.hdr.src_port, ==, 0);

  /* ports without proto: UDP and TCP */
  r = parse_one ("src-port=53 queue=1");
  g_assert_cmpuint (dpdk_flow_patterns (&r, pat), ==, 2);
  assert_types (&pat[0],
      (const enum rte_flow_item_type[]){
          RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_IPV4, RTE_FLOW_ITEM_TYPE_UDP },
      3);
  assert_types (&pat[1],
      (const enum rte_flow_item_type[]){
          RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_IPV4, RTE_FLOW_ITEM_TYPE_TCP },
      3);
  g_assert_cmpuint (pat[0].ipv4_spec.hdr.next_proto_id, ==, 17);
  g_assert_cmpuint (pat[1].ipv4_spec.hdr.next_proto_id, ==, 6);
  g_assert_cmpuint (pat[0].ipv4_mask.hdr.src_addr, ==, 0);
  g_assert_cmpmem (&pat[0].udp_spec.hdr.src_port, 2, ((const guint8[]){ 0, 53 }), 2);
  g_assert_cmpmem (&pat[1].tcp_spec.hdr.src_port, 2, ((const guint8[]){ 0, 53 }), 2);
  g_assert_cmpmem (&pat[1].tcp_mask.hdr.src_port, 2, ((const guint8[]){ 0xff, 0xff }), 2);
  g_assert_cmpuint (pat[1].tcp_mask.hdr.dst_port, ==, 0);

  /* VLAN with an inner ethertype */
  r = parse_one ("vlan=100 ethertype=0x88f7 queue=0");
  g_assert_cmpuint (dpdk_flow_patterns (&r, pat), ==, 1);
  assert_types (&pat[0],
      (const enum rte_flow_item_type[]){ RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_VLAN }, 2);
  g_assert_cmpuint (pat[0].eth_spec.has_vlan, ==, 1);
  g_assert_cmpuint (pat[0].eth_mask.has_vlan, ==, 1);
  g_assert_cmpuint (pat[0].eth_mask.hdr.ether_type, ==, 0);
  g_assert_cmpmem (&pat[0].vlan_spec.hdr.vlan_tci, 2, ((const guint8[]){ 0x00, 0x64 }), 2);
  g_assert_cmpmem (&pat[0].vlan_mask.hdr.vlan_tci, 2, ((const guint8[]){ 0x0f, 0xff }), 2);
  g_assert_cmpmem (&pat[0].vlan_spec.hdr.eth_proto, 2, ((const guint8[]){ 0x88, 0xf7 }), 2);
  g_assert_cmpmem (&pat[0].vlan_mask.hdr.eth_proto, 2, ((const guint8[]){ 0xff, 0xff }), 2);

  /* an ethertype alone, a protocol without ports, and no match key at all */
  r = parse_one ("ethertype=0x88f7");
  g_assert_cmpuint (dpdk_flow_patterns (&r, pat), ==, 1);
  assert_types (&pat[0], (const enum rte_flow_item_type[]){ RTE_FLOW_ITEM_TYPE_ETH }, 1);
  g_assert_cmpmem (&pat[0].eth_spec.hdr.ether_type, 2, ((const guint8[]){ 0x88, 0xf7 }), 2);
  g_assert_cmpuint (pat[0].eth_mask.hdr.ether_type, ==, 0xffff);
  g_assert_cmpuint (pat[0].eth_mask.has_vlan, ==, 0);
  r = parse_one ("proto=icmp queue=1");
  g_assert_cmpuint (dpdk_flow_patterns (&r, pat), ==, 1);
  assert_types (&pat[0],
      (const enum rte_flow_item_type[]){ RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_IPV4 }, 2);
  g_assert_cmpuint (pat[0].ipv4_spec.hdr.next_proto_id, ==, 1);
  r = parse_one ("mark=3 queue=1");
  g_assert_cmpuint (dpdk_flow_patterns (&r, pat), ==, 1);
  assert_types (&pat[0], (const enum rte_flow_item_type[]){ RTE_FLOW_ITEM_TYPE_ETH }, 1);
  g_assert_null (pat[0].items[0].spec);
}

static gboolean
masked_equal (const void *frame, const void *spec, const void *mask, guint n)
{
  const guint8 *f = frame, *s = spec, *m = mask;
  for (guint i = 0; i < n; i++)
    if ((f[i] & m[i]) != (s[i] & m[i]))
      return FALSE;
  return TRUE;
}

/* rte_flow's reading of a pattern on a frame: each item is the next header, its spec
 * compared under its mask (a missing spec matches any such header). */
static gboolean
items_match (const struct rte_flow_item *items, const guint8 *f, guint len)
{
  guint off = 0;
  guint16 type = 0;
  guint8 proto = 0;
  for (const struct rte_flow_item *it = items; it->type != RTE_FLOW_ITEM_TYPE_END; it++) {
    switch (it->type) {
      case RTE_FLOW_ITEM_TYPE_ETH: {
        g_assert_cmpuint (len, >=, 14);
        type = be16 (f + 12);
        const struct rte_flow_item_eth *s = it->spec, *m = it->mask;
        if (s != NULL && !masked_equal (f + 12, &s->hdr.ether_type, &m->hdr.ether_type, 2))
          return FALSE;
        if (s != NULL && m->has_vlan && s->has_vlan != (type == 0x8100))
          return FALSE;
        off = 14;
        break;
      }
      case RTE_FLOW_ITEM_TYPE_VLAN: {
        if (type != 0x8100 || len < off + 4)
          return FALSE;
        const struct rte_flow_item_vlan *s = it->spec, *m = it->mask;
        if (!masked_equal (f + off, &s->hdr, &m->hdr, 4))
          return FALSE;
        type = be16 (f + off + 2);
        off += 4;
        break;
      }
      case RTE_FLOW_ITEM_TYPE_IPV4: {
        if (type != 0x0800 || len < off + 20)
          return FALSE;
        const struct rte_flow_item_ipv4 *s = it->spec, *m = it->mask;
        if (!masked_equal (f + off, &s->hdr, &m->hdr, 20))
          return FALSE;
        proto = f[off + 9];
        off += (f[off] & 0x0f) * 4u;
        break;
      }
      case RTE_FLOW_ITEM_TYPE_UDP:
      case RTE_FLOW_ITEM_TYPE_TCP: {
        guint8 want = it->type == RTE_FLOW_ITEM_TYPE_UDP ? 17 : 6;
        if (proto != want || len < off + 4)
          return FALSE;
        /* both headers start with the two ports */
        const void *s = it->type == RTE_FLOW_ITEM_TYPE_UDP
            ? (const void *) &((const struct rte_flow_item_udp *) it->spec)->hdr
            : (const void *) &((const struct rte_flow_item_tcp *) it->spec)->hdr;
        const void *m = it->type == RTE_FLOW_ITEM_TYPE_UDP
            ? (const void *) &((const struct rte_flow_item_udp *) it->mask)->hdr
            : (const void *) &((const struct rte_flow_item_tcp *) it->mask)->hdr;
        if (!masked_equal (f + off, s, m, 4))
          return FALSE;
        break;
      }
      default: g_assert_not_reached ();
    }
  }
  return TRUE;
}

/* Random rules on random well-formed frames: a rule's patterns match a frame exactly
 * when the software classifier says the rule matches it. Rules without a vlan key meet
 * untagged frames, rules with one tagged frames (a tagged frame and a rule without vlan
 * is the driver's choice, dpdk-flow.h). */
static void
test_patterns_agree (void)
{
  guint matched = 0, tries = 0;
  for (guint round = 0; round < 20000; round++) {
    DqFlowRule rule = random_rule (35, 4);
    FrameSpec s = ipv4_spec (
        PICK (pool_proto), PICK (pool_addr), PICK (pool_addr), PICK (pool_port), PICK (pool_port));
    if (chance (25))
      s.ethertype = PICK (pool_ethertype);
    if (chance (20))
      s.ihl = 6;
    if (rule.keys & DQ_FLOW_VLAN) {
      s.tag_tpid = 0x8100;
      s.tag_tci = (guint16) (PICK (pool_vlan) | (chance (50) ? 0xa000 : 0));
      if (chance (50))
        s.tag_tci = (guint16) (rule.vlan | 0x2000);
    }
    if (s.ethertype == 0x8100 || s.ethertype == 0x88a8)
      s.ethertype = 0x0806; /* one tag at most */
    guint8 frame[FRAME_MAX];
    guint len = build_frame (&s, frame);

    DpdkFlowPattern pat[2];
    guint n = dpdk_flow_patterns (&rule, pat);
    gboolean hw = FALSE;
    for (guint k = 0; k < n; k++)
      hw |= items_match (pat[k].items, frame, len);
    gboolean sw = dq_flow_match (&rule, 1, frame, len, -1) == 0;
    if (hw != sw) {
      g_autofree char *text = dq_flow_rule_to_string (&rule);
      g_error ("rule \"%s\": patterns say %d, software %d (frame type 0x%04x tag 0x%04x proto "
               "%u ports %u/%u)",
          text, hw, sw, s.ethertype, s.tag_tci, s.proto, s.sport, s.dport);
    }
    matched += sw;
    tries++;
  }
  /* both outcomes were exercised */
  g_assert_cmpuint (matched, >, tries / 20);
  g_assert_cmpuint (matched, <, tries - tries / 20);
}

/* ---------------------------------------------------------------------------------- */
/* steering through recording ops */

typedef struct {
  GString *log;
  guint serial;
  guint16 fail_dst_port; /* create fails for a UDP item with this port (0: never) */
  int validate_result;
} Recorder;

static Recorder rec;

static const char *
item_name (enum rte_flow_item_type t)
{
  switch (t) {
    case RTE_FLOW_ITEM_TYPE_ETH: return "eth";
    case RTE_FLOW_ITEM_TYPE_VLAN: return "vlan";
    case RTE_FLOW_ITEM_TYPE_IPV4: return "ipv4";
    case RTE_FLOW_ITEM_TYPE_UDP: return "udp";
    case RTE_FLOW_ITEM_TYPE_TCP: return "tcp";
    default: return "?";
  }
}

static int
rec_validate (uint16_t port_id, const struct rte_flow_attr *attr,
    const struct rte_flow_item pattern[], const struct rte_flow_action actions[],
    struct rte_flow_error *error)
{
  g_assert_cmpuint (port_id, ==, PORT_ID);
  g_assert_true (attr->ingress);
  g_assert_cmpint (pattern[0].type, ==, RTE_FLOW_ITEM_TYPE_ETH);
  g_assert_cmpint (actions[0].type, ==, RTE_FLOW_ACTION_TYPE_QUEUE);
  g_assert_cmpint (actions[1].type, ==, RTE_FLOW_ACTION_TYPE_END);
  if (rec.validate_result != 0)
    rte_flow_error_set (
        error, -rec.validate_result, RTE_FLOW_ERROR_TYPE_UNSPECIFIED, NULL, "no flow support here");
  return rec.validate_result;
}

static struct rte_flow *
rec_create (uint16_t port_id, const struct rte_flow_attr *attr,
    const struct rte_flow_item pattern[], const struct rte_flow_action actions[],
    struct rte_flow_error *error)
{
  g_assert_cmpuint (port_id, ==, PORT_ID);
  const struct rte_flow_action_queue *q = actions[0].conf;
  g_string_append_printf (rec.log, "create p%u q%u", attr->priority, q->index);
  const struct rte_flow_item *it = pattern;
  for (; it->type != RTE_FLOW_ITEM_TYPE_END; it++)
    g_string_append_printf (rec.log, " %s", item_name (it->type));
  it--;
  if (it->type == RTE_FLOW_ITEM_TYPE_UDP && rec.fail_dst_port != 0 &&
      rte_be_to_cpu_16 (((const struct rte_flow_item_udp *) it->spec)->hdr.dst_port) ==
          rec.fail_dst_port) {
    g_string_append (rec.log, " -> fail;");
    rte_flow_error_set (error, ENOSPC, RTE_FLOW_ERROR_TYPE_ITEM, it, "table full");
    return NULL;
  }
  g_string_append_printf (rec.log, " -> #%u;", ++rec.serial);
  return (struct rte_flow *) GUINT_TO_POINTER (rec.serial);
}

static int
rec_destroy (uint16_t port_id, struct rte_flow *flow, struct rte_flow_error *error)
{
  g_assert_cmpuint (port_id, ==, PORT_ID);
  g_string_append_printf (rec.log, "destroy #%u;", GPOINTER_TO_UINT (flow));
  return 0;
}

static const DpdkFlowOps rec_ops = { rec_validate, rec_create, rec_destroy };

/* Applies `text` to the steering; returns the log of device calls it made. */
static gchar *
apply (DpdkSteering *s, const char *text, GError **error)
{
  guint n = 0;
  DqFlowRule *rules = parse_ok (text, &n);
  g_string_truncate (rec.log, 0);
  gboolean ok = dpdk_steering_apply (s, "dpdk:test", rules, n, error);
  g_assert_true (ok == (error == NULL || *error == NULL));
  g_free (rules);
  return g_strdup (rec.log->str);
}

static void
assert_apply (DpdkSteering *s, const char *text, const char *want_log)
{
  GError *error = NULL;
  g_autofree gchar *log = apply (s, text, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (log, ==, want_log);
}

static void
test_steering (void)
{
  rec = (Recorder){ .log = g_string_new (NULL) };
  DpdkSteering q0, q1;
  dpdk_steering_init (&q0, &rec_ops, PORT_ID, 0);
  dpdk_steering_init (&q1, &rec_ops, PORT_ID, 1);

  const char *a = "proto=udp dst-port=5000 queue=1 mark=1; src-port=53 queue=1 mark=2; "
                  "proto=tcp queue=0 mark=3; mark=4";
  /* each queue installs the rules naming it, at the rule's index as priority */
  assert_apply (&q1, a,
      "create p0 q1 eth ipv4 udp -> #1;"
      "create p1 q1 eth ipv4 udp -> #2;create p1 q1 eth ipv4 tcp -> #3;");
  assert_apply (&q0, a, "create p2 q0 eth ipv4 -> #4;");

  /* a change: the shared rule (new mark only) keeps #1, the new rule is created before
   * the rule that went is destroyed */
  const char *b = "proto=udp dst-port=5000 queue=1 mark=9; proto=udp dst-port=6000 queue=1";
  assert_apply (&q1, b, "create p1 q1 eth ipv4 udp -> #5;destroy #2;destroy #3;");
  assert_apply (&q1, b, "");
  assert_apply (&q0, b, "destroy #4;");

  /* a failure: what this change created goes, the earlier rules stay */
  rec.fail_dst_port = 7000;
  GError *error = NULL;
  g_autofree gchar *log =
      apply (&q1, "proto=udp dst-port=6000 queue=1; proto=udp dst-port=7000 queue=1", &error);
  g_assert_cmpstr (
      log, ==, "create p0 q1 eth ipv4 udp -> #6;create p1 q1 eth ipv4 udp -> fail;destroy #6;");
  g_assert_error (error, DQ_ERROR, DQ_ERROR_FLOW);
  for (const char *const *w = (const char *const[]){ "dpdk:test", "flow rule 2", "dst-port=7000",
           "names queue 1", "rte_flow: table full", "RSS alone", NULL };
       *w != NULL; w++)
    if (strstr (error->message, *w) == NULL)
      g_error ("'%s' not in: %s", *w, error->message);
  g_clear_error (&error);
  assert_apply (&q1, b, "");

  /* a rule moved to another index is a new rule (its priority changes) */
  assert_apply (&q1, "mark=7; proto=udp dst-port=5000 queue=1; proto=udp dst-port=6000 queue=1",
      "create p1 q1 eth ipv4 udp -> #7;create p2 q1 eth ipv4 udp -> #8;"
      "destroy #1;destroy #5;");

  g_string_truncate (rec.log, 0);
  dpdk_steering_clear (&q1);
  dpdk_steering_clear (&q0);
  g_assert_cmpstr (rec.log->str, ==, "destroy #7;destroy #8;");
  g_string_free (rec.log, TRUE);
}

/* dpdk_flow_check validates every rule naming any queue, and only with several queues */
static void
test_check (void)
{
  rec = (Recorder){ .log = g_string_new (NULL) };
  guint n = 0;
  DqFlowRule *rules = parse_ok ("mark=1; proto=udp queue=0; proto=tcp queue=1", &n);
  GError *error = NULL;
  g_assert_true (dpdk_flow_check (&rec_ops, PORT_ID, "dpdk:test", rules, n, 2, &error));
  g_assert_no_error (error);

  rec.validate_result = -ENOSYS;
  g_assert_true (dpdk_flow_check (&rec_ops, PORT_ID, "dpdk:test", rules, n, 1, &error));
  g_assert_false (dpdk_flow_check (&rec_ops, PORT_ID, "dpdk:test", rules, n, 2, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_FLOW);
  for (const char *const *w = (const char *const[]){ "dpdk:test", "flow rule 2", "proto=udp",
           "names queue 0", "rte_flow: no flow support here", NULL };
       *w != NULL; w++)
    if (strstr (error->message, *w) == NULL)
      g_error ("'%s' not in: %s", *w, error->message);
  g_clear_error (&error);
  g_free (rules);
  g_string_free (rec.log, TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/dpdk-flow/patterns/known", test_patterns_known);
  g_test_add_func ("/dpdk-flow/patterns/agree", test_patterns_agree);
  g_test_add_func ("/dpdk-flow/steering", test_steering);
  g_test_add_func ("/dpdk-flow/check", test_check);
  return g_test_run ();
}
