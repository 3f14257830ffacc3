/* The steering plans of the hardware control path (mlx5_hw_flow_plan in mlx5/hw/hw-cmd.c):
 * daqirisrc's flow rules turned into flow-table entries, run on known rule sets. Each
 * entry's match mask and value are checked field by field at their fte_match_set_lyr_2_4
 * bit offsets, written here as numbers, and must hold nothing else; then the entries'
 * priorities, destinations (a queue, RSS over all, RSS over IP only) and tags, the split of
 * rules over several flow groups, and the refusals with their exact messages. */
#include <string.h>

#include <glib.h>

#include "daqiri-engine.h"
#include "dq-test-port.h"
#include "hw-cmd.h"
#include "mlx5-ifc.h"
#include "prm-bits.h"

static GArray *
plan_one (const char *text, guint n_rqs, GError **error)
{
  guint n = 0;
  DqFlowRule *rules = dq_test_rules_parse (text, &n);
  Mlx5HwFlowGroup g = { .n_rqs = n_rqs, .rules = rules, .n_rules = n };
  GArray *plan = mlx5_hw_flow_plan (&g, 1, MLX5_HW_ROOT_PRIORITIES, error);
  g_free (rules);
  return plan;
}

/* the plan of `text`, which must succeed with `n_entries` entries */
static GArray *
plan_entries (const char *text, guint n_rqs, guint n_entries)
{
  GError *err = NULL;
  GArray *plan = plan_one (text, n_rqs, &err);
  g_assert_no_error (err);
  g_assert_cmpuint (plan->len, ==, n_entries);
  return plan;
}

/* The plan of `text` over n_rqs queues, which must fail with DQ_ERROR_FLOW and exactly
 * `message`. */
static void
expect_plan_error (const char *text, guint n_rqs, const char *message)
{
  GError *err = NULL;
  GArray *plan = plan_one (text, n_rqs, &err);
  g_assert_null (plan);
  g_assert_error (err, DQ_ERROR, DQ_ERROR_FLOW);
  g_assert_cmpstr (err->message, ==, message);
  g_clear_error (&err);
}

static const Mlx5HwFlowEntry *
entry (GArray *plan, guint i)
{
  g_assert_cmpuint (i, <, plan->len);
  return &g_array_index (plan, Mlx5HwFlowEntry, i);
}

/* a match field at its fte_match_set_lyr_2_4 offset, in mask and value */
typedef struct {
  gsize off;
  guint width;
  guint32 mask, value;
} MatchField;

#define M_ETHERTYPE 0x30, 16
#define M_FIRST_VID 0x74, 12
#define M_IP_PROTOCOL 0x80, 8
#define M_CVLAN_TAG 0x90, 1
#define M_SVLAN_TAG 0x91, 1
#define M_TCP_SPORT 0xa0, 16
#define M_TCP_DPORT 0xb0, 16
#define M_UDP_SPORT 0xe0, 16
#define M_UDP_DPORT 0xf0, 16
#define M_SRC_IPV4 0x160, 32
#define M_DST_IPV4 0x1e0, 32

/* the entry matches exactly these fields: everything else in the mask is zero */
static void
expect_match (const Mlx5HwFlowEntry *e, const MatchField *fields, guint n)
{
  guint8 m[MLX5_HW_MATCH_BYTES], v[MLX5_HW_MATCH_BYTES];
  memcpy (m, e->mask, sizeof m);
  memcpy (v, e->value, sizeof v);
  for (guint i = 0; i < n; i++) {
    g_assert_cmphex (bits_get (e->mask, fields[i].off, fields[i].width), ==, fields[i].mask);
    g_assert_cmphex (bits_get (e->value, fields[i].off, fields[i].width), ==, fields[i].value);
    bits_set (m, fields[i].off, fields[i].width, 0);
    bits_set (v, fields[i].off, fields[i].width, 0);
  }
  assert_zero (m, sizeof m);
  assert_zero (v, sizeof v);
  g_assert_cmpuint (e->criteria, ==, n ? MLX5_MATCH_OUTER_HEADERS : 0);
}

/* the entry matches IPv4 protocol `proto`, UDP (17) or TCP (6), from port `sport` to `dport` */
static void
expect_ports_match (const Mlx5HwFlowEntry *e, guint32 proto, guint32 sport, guint32 dport)
{
  MatchField f[] = {
    { M_ETHERTYPE, 0xffff, 0x0800 },
    { M_IP_PROTOCOL, 0xff, proto },
    { M_UDP_SPORT, 0xffff, sport },
    { M_UDP_DPORT, 0xffff, dport },
  };
  if (proto == 6) {
    f[2] = (MatchField){ M_TCP_SPORT, 0xffff, sport };
    f[3] = (MatchField){ M_TCP_DPORT, 0xffff, dport };
  }
  expect_match (e, f, G_N_ELEMENTS (f));
}

/* the entry matches a first VLAN tag `vid` over `ethertype`: an 802.1Q tag, or with
 * `s_tag` an 802.1ad one */
static void
expect_vlan_match (const Mlx5HwFlowEntry *e, gboolean s_tag, guint32 ethertype, guint32 vid)
{
  MatchField f[] = {
    { M_ETHERTYPE, 0xffff, ethertype },
    { M_CVLAN_TAG, 1, 1 },
    { M_FIRST_VID, 0xfff, vid },
  };
  if (s_tag)
    f[1] = (MatchField){ M_SVLAN_TAG, 1, 1 };
  expect_match (e, f, G_N_ELEMENTS (f));
}

static void
test_plan_catch_all (void)
{
  GError *err = NULL;
  GArray *plan = mlx5_hw_flow_plan (NULL, 0, MLX5_HW_ROOT_PRIORITIES, &err);
  g_assert_no_error (err);
  g_assert_cmpuint (plan->len, ==, 0);
  g_array_unref (plan);

  plan = plan_entries (NULL, 1, 1); /* several RQs: test_plan_rss_kinds */
  const Mlx5HwFlowEntry *e = entry (plan, 0);
  expect_match (e, NULL, 0);
  g_assert_cmpuint (e->tag, ==, 0);
  g_assert_cmpuint (e->dest, ==, MLX5_HW_FLOW_DEST_RSS);
  g_assert_cmpuint (e->priority, ==, 0);
  g_assert_cmpuint (e->rule, ==, G_MAXUINT);
  g_assert_cmpuint (e->group, ==, 0);
  g_array_unref (plan);
}

static void
test_plan_fields (void)
{
  GError *err = NULL;
  /* the matcher fields of mlx5dv_dr as our layout names them */
  g_assert_cmphex (__devx_bit_off (fte_match_set_lyr_2_4, ethertype), ==, 0x30);
  g_assert_cmphex (
      __devx_bit_off (fte_match_set_lyr_2_4, src_ipv4_src_ipv6.ipv4_layout.ipv4), ==, 0x160);
  g_assert_cmphex (
      __devx_bit_off (fte_match_set_lyr_2_4, dst_ipv4_dst_ipv6.ipv4_layout.ipv4), ==, 0x1e0);
  g_assert_cmpuint (DEVX_ST_SZ_BYTES (fte_match_set_lyr_2_4), ==, MLX5_HW_MATCH_BYTES);

  GArray *plan = plan_entries ("proto=udp dst-port=5000 mark=7 queue=1", 2, 1);
  const Mlx5HwFlowEntry *e = entry (plan, 0);
  MatchField udp[] = {
    { M_ETHERTYPE, 0xffff, 0x0800 },
    { M_IP_PROTOCOL, 0xff, 17 },
    { M_UDP_DPORT, 0xffff, 5000 },
  };
  expect_match (e, udp, G_N_ELEMENTS (udp));
  g_assert_cmpuint (DEVX_GET (fte_match_set_lyr_2_4, e->value, udp_dport), ==, 5000);
  g_assert_cmpuint (e->tag, ==, 7);
  g_assert_cmpuint (e->dest, ==, 1);
  g_assert_cmpuint (e->priority, ==, 0);
  g_array_unref (plan);

  /* ports without a protocol: a UDP and a TCP entry */
  plan = plan_entries ("src-port=53 dst-port=5353 mark=3", 1, 2);
  expect_ports_match (entry (plan, 0), 17, 53, 5353);
  expect_ports_match (entry (plan, 1), 6, 53, 5353);
  g_assert_cmpuint (entry (plan, 0)->priority, ==, 0);
  g_assert_cmpuint (entry (plan, 1)->priority, ==, 0);
  g_assert_cmpuint (entry (plan, 1)->tag, ==, 3);
  g_assert_cmpuint (entry (plan, 1)->dest, ==, MLX5_HW_FLOW_DEST_RSS);
  g_array_unref (plan);

  /* addresses with prefixes; a /0 matches everything and sets no mask */
  plan = plan_entries ("src=10.0.0.0/8 dst=192.168.1.7", 1, 1);
  MatchField ip[] = {
    { M_ETHERTYPE, 0xffff, 0x0800 },
    { M_SRC_IPV4, 0xff000000, 0x0a000000 },
    { M_DST_IPV4, 0xffffffff, 0xc0a80107 },
  };
  expect_match (entry (plan, 0), ip, G_N_ELEMENTS (ip));
  g_array_unref (plan);
  plan = plan_one ("dst=0.0.0.0/0 proto=icmp", 1, &err);
  g_assert_no_error (err);
  MatchField icmp[] = { { M_ETHERTYPE, 0xffff, 0x0800 }, { M_IP_PROTOCOL, 0xff, 1 } };
  expect_match (entry (plan, 0), icmp, G_N_ELEMENTS (icmp));
  g_array_unref (plan);

  /* a VLAN id: an 802.1Q and an 802.1ad first tag */
  plan = plan_entries ("vlan=100 ethertype=0x88b5 mark=16777215", 1, 2);
  expect_vlan_match (entry (plan, 0), FALSE, 0x88b5, 100);
  expect_vlan_match (entry (plan, 1), TRUE, 0x88b5, 100);
  g_assert_cmpuint (entry (plan, 0)->tag, ==, 0xffffff);
  g_assert_cmpuint (entry (plan, 0)->priority, ==, 0);
  g_assert_cmpuint (entry (plan, 1)->priority, ==, 0);
  g_array_unref (plan);

  /* both: 2 x 2 entries */
  plan = plan_entries ("vlan=5 dst-port=1", 1, 4);
  g_array_unref (plan);

  /* only a mark: everything, tagged */
  plan = plan_entries ("mark=9", 1, 1);
  expect_match (entry (plan, 0), NULL, 0);
  g_assert_cmpuint (entry (plan, 0)->tag, ==, 9);
  g_assert_cmpuint (entry (plan, 0)->rule, ==, 0);
  g_array_unref (plan);
}

static void
test_plan_priorities (void)
{
  /* disjoint rules share priority 0; the broad UDP rule comes after the one it overlaps
   * with another queue (5000 -> 0), not after the one with its own action (5001 -> 1) */
  GArray *plan =
      plan_entries ("dst-port=5000 queue=0; dst-port=5001 queue=1; proto=udp queue=1", 2, 5);
  const guint want_rule[5] = { 0, 0, 1, 1, 2 };
  const guint want_prio[5] = { 0, 0, 0, 0, 1 };
  const guint want_dest[5] = { 0, 0, 1, 1, 1 };
  for (guint i = 0; i < 5; i++) {
    g_assert_cmpuint (entry (plan, i)->rule, ==, want_rule[i]);
    g_assert_cmpuint (entry (plan, i)->priority, ==, want_prio[i]);
    g_assert_cmpuint (entry (plan, i)->dest, ==, want_dest[i]);
  }
  g_array_unref (plan);

  /* an entry an earlier one always takes first can never match: left out */
  plan = plan_entries ("proto=udp mark=1; proto=udp dst-port=9 mark=2; mark=3; mark=4", 1, 2);
  g_assert_cmpuint (entry (plan, 0)->tag, ==, 1);
  g_assert_cmpuint (entry (plan, 0)->priority, ==, 0);
  g_assert_cmpuint (entry (plan, 1)->tag, ==, 3);
  g_assert_cmpuint (entry (plan, 1)->priority, ==, 1);
  g_array_unref (plan);

  /* nested prefixes, narrowest first: each overlaps all before it with another mark;
   * 16 fit the root table's 16 priorities, 17 do not */
  GString *text = g_string_new (NULL);
  for (guint i = 0; i < 16; i++)
    g_string_append_printf (text, "src=10.0.0.0/%u mark=%u;", 32 - i, i + 1);
  plan = plan_entries (text->str, 1, 16);
  for (guint i = 0; i < 16; i++)
    g_assert_cmpuint (entry (plan, i)->priority, ==, i);
  g_array_unref (plan);
  g_string_append (text, "src=10.0.0.0/16 mark=17");
  expect_plan_error (text->str, 1,
      "flow rule 17 (\"src=10.0.0.0/16 mark=17\"): it "
      "overlaps earlier rules with other actions 16 levels deep; the NIC's steering table "
      "has 16 priorities (make the rules disjoint or fewer)");
  g_string_free (text, TRUE);
}

static void
test_plan_errors (void)
{
  GError *err = NULL;
  expect_plan_error ("proto=udp; queue=2", 2,
      "flow rule 2 (\"queue=2\"): queue 2 does not exist; "
      "there are 2 RX queues (0..1)");
  expect_plan_error ("queue=1", 1,
      "flow rule 1 (\"queue=1\"): queue 1 does not exist; "
      "there is 1 RX queue (0..0)");
  expect_plan_error ("dst-port=80 mark=16777216", 1,
      "flow rule 1 (\"dst-port=80 mark=16777216\"): mark "
      "16777216 does not fit the 24 bits a ConnectX delivers with each packet "
      "(0..16777215)");

  Mlx5HwFlowGroup empty = { .n_rqs = 0 };
  GArray *plan = mlx5_hw_flow_plan (&empty, 1, MLX5_HW_ROOT_PRIORITIES, &err);
  g_assert_null (plan);
  g_assert_cmpstr (err->message, ==, "queue group 1 has no RX queues");
  g_clear_error (&err);

  /* the group is named when there are several */
  guint n;
  DqFlowRule *r = dq_test_rules_parse ("mark=4294967295", &n);
  Mlx5HwFlowGroup two[2] = { { .n_rqs = 1 }, { .n_rqs = 1, .rules = r, .n_rules = n } };
  plan = mlx5_hw_flow_plan (two, 2, MLX5_HW_ROOT_PRIORITIES, &err);
  g_assert_null (plan);
  g_assert_cmpstr (err->message, ==,
      "flow rule 1 (\"mark=4294967295\") of queue group 2: "
      "mark 4294967295 does not fit the 24 bits a ConnectX delivers with each packet "
      "(0..16777215)");
  g_clear_error (&err);
  g_free (r);
}

static void
test_plan_groups (void)
{
  GError *err = NULL;
  guint na, nb;
  DqFlowRule *a = dq_test_rules_parse ("dst-port=5000 mark=1", &na);
  DqFlowRule *b = dq_test_rules_parse ("proto=udp dst-port=5000 mark=2; proto=tcp mark=3", &nb);

  /* A's rules, B's rules, then the catch-alls of the groups without rules in set order:
   * C takes what no rule took; D's catch-all can never match */
  Mlx5HwFlowGroup g[4] = {
    { .n_rqs = 2, .rules = a, .n_rules = na },
    { .n_rqs = 1 },
    { .n_rqs = 3, .rules = b, .n_rules = nb },
    { .n_rqs = 1 },
  };
  GArray *plan = mlx5_hw_flow_plan (g, 4, MLX5_HW_ROOT_PRIORITIES, &err);
  g_assert_no_error (err);
  /* A udp, A tcp (prio 0); B's UDP 5000 is A's: left out; B tcp (overlaps A's TCP 5000
   * with another group: prio 1); group 1's catch-all (prio 2); group 3's: left out */
  g_assert_cmpuint (plan->len, ==, 4);
  const guint want_group[4] = { 0, 0, 2, 1 };
  const guint want_prio[4] = { 0, 0, 1, 2 };
  const guint want_tag[4] = { 1, 1, 3, 0 };
  for (guint i = 0; i < 4; i++) {
    g_assert_cmpuint (entry (plan, i)->group, ==, want_group[i]);
    g_assert_cmpuint (entry (plan, i)->priority, ==, want_prio[i]);
    g_assert_cmpuint (entry (plan, i)->tag, ==, want_tag[i]);
  }
  g_assert_cmpuint (entry (plan, 3)->rule, ==, G_MAXUINT);
  g_assert_cmpuint (entry (plan, 3)->dest, ==, MLX5_HW_FLOW_DEST_RSS);
  g_array_unref (plan);
  g_free (a);
  g_free (b);
}

/* RSS over several RQs: each entry to the TIR that hashes its traffic, an entry that does
 * not fix the protocol split into UDP and TCP before the rest */
static void
test_plan_rss_kinds (void)
{
  /* a group without rules: UDP and TCP (prio 0), then everything else (prio 1) */
  GArray *plan = plan_entries (NULL, 4, 3);
  const MatchField udp[] = { { M_ETHERTYPE, 0xffff, 0x0800 }, { M_IP_PROTOCOL, 0xff, 17 } };
  const MatchField tcp[] = { { M_ETHERTYPE, 0xffff, 0x0800 }, { M_IP_PROTOCOL, 0xff, 6 } };
  expect_match (entry (plan, 0), udp, 2);
  expect_match (entry (plan, 1), tcp, 2);
  expect_match (entry (plan, 2), NULL, 0);
  g_assert_cmpuint (entry (plan, 0)->dest, ==, MLX5_HW_FLOW_DEST_RSS_UDP);
  g_assert_cmpuint (entry (plan, 1)->dest, ==, MLX5_HW_FLOW_DEST_RSS_TCP);
  g_assert_cmpuint (entry (plan, 2)->dest, ==, MLX5_HW_FLOW_DEST_RSS_IP);
  g_assert_cmpuint (entry (plan, 0)->priority, ==, 0);
  g_assert_cmpuint (entry (plan, 1)->priority, ==, 0);
  g_assert_cmpuint (entry (plan, 2)->priority, ==, 1);
  for (guint i = 0; i < 3; i++)
    g_assert_cmpuint (entry (plan, i)->rule, ==, G_MAXUINT);
  g_array_unref (plan);

  /* a rule that fixes the protocol: one entry, its TIR; ports without a protocol: UDP and
   * TCP, each to its own */
  plan = plan_entries ("proto=icmp mark=1; proto=tcp mark=2; dst-port=9 mark=3", 2, 3);
  g_assert_cmpuint (entry (plan, 0)->dest, ==, MLX5_HW_FLOW_DEST_RSS_IP);
  g_assert_cmpuint (entry (plan, 1)->dest, ==, MLX5_HW_FLOW_DEST_RSS_TCP);
  /* UDP port 9; TCP port 9 is left out: "proto=tcp" takes it first */
  g_assert_cmpuint (entry (plan, 2)->dest, ==, MLX5_HW_FLOW_DEST_RSS_UDP);
  g_assert_cmpuint (entry (plan, 2)->tag, ==, 3);
  g_array_unref (plan);
  plan = plan_entries ("dst-port=9 mark=3", 2, 2);
  g_assert_cmpuint (entry (plan, 0)->dest, ==, MLX5_HW_FLOW_DEST_RSS_UDP);
  g_assert_cmpuint (entry (plan, 1)->dest, ==, MLX5_HW_FLOW_DEST_RSS_TCP);
  g_assert_cmpuint (entry (plan, 1)->priority, ==, 0);
  g_array_unref (plan);

  /* a rule on IPv4 addresses: UDP, TCP, then the rest of it, all with its tag; a non-IPv4
   * ethertype: addresses (hash 0: one RQ) */
  plan = plan_entries ("dst=10.0.0.0/8 mark=5; ethertype=0x88b5 mark=6", 2, 4);
  const MatchField dst_udp[] = { { M_ETHERTYPE, 0xffff, 0x0800 }, { M_IP_PROTOCOL, 0xff, 17 },
    { M_DST_IPV4, 0xff000000, 0x0a000000 } };
  const MatchField dst_rest[] = { { M_ETHERTYPE, 0xffff, 0x0800 },
    { M_DST_IPV4, 0xff000000, 0x0a000000 } };
  const MatchField other[] = { { M_ETHERTYPE, 0xffff, 0x88b5 } };
  expect_match (entry (plan, 0), dst_udp, 3);
  expect_match (entry (plan, 2), dst_rest, 2);
  expect_match (entry (plan, 3), other, 1);
  g_assert_cmpuint (entry (plan, 2)->dest, ==, MLX5_HW_FLOW_DEST_RSS_IP);
  g_assert_cmpuint (entry (plan, 2)->priority, ==, 1);
  g_assert_cmpuint (entry (plan, 3)->dest, ==, MLX5_HW_FLOW_DEST_RSS_IP);
  g_assert_cmpuint (entry (plan, 3)->priority, ==, 0);
  for (guint i = 0; i < 3; i++)
    g_assert_cmpuint (entry (plan, i)->tag, ==, 5);
  g_array_unref (plan);

  /* one RQ, or a queue key: no RSS, no split */
  plan = plan_entries (NULL, 1, 1);
  g_assert_cmpuint (entry (plan, 0)->dest, ==, MLX5_HW_FLOW_DEST_RSS);
  g_array_unref (plan);
  plan = plan_entries ("queue=1 mark=4", 2, 1);
  g_assert_cmpuint (entry (plan, 0)->dest, ==, 1);
  g_array_unref (plan);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mlx5-layout/plan/catch-all", test_plan_catch_all);
  g_test_add_func ("/mlx5-layout/plan/fields", test_plan_fields);
  g_test_add_func ("/mlx5-layout/plan/priorities", test_plan_priorities);
  g_test_add_func ("/mlx5-layout/plan/errors", test_plan_errors);
  g_test_add_func ("/mlx5-layout/plan/groups", test_plan_groups);
  g_test_add_func ("/mlx5-layout/plan/rss-kinds", test_plan_rss_kinds);
  return g_test_run ();
}
