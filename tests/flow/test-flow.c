/* Tests of the flow-rule module: the parser and its messages, the canonical text, the
 * software matcher on hand-built frames, and the classic BPF programs, run both in an
 * interpreter here (against the software matcher) and by the kernel. */
#include "daqiri-engine.h"
#include "daqiri-flow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define IP4(a, b, c, d) \
  ((guint32) (a) << 24 | (guint32) (b) << 16 | (guint32) (c) << 8 | (guint32) (d))

#define PORT_KEYS (DQ_FLOW_SRC_PORT | DQ_FLOW_DST_PORT)
#define IPV4_KEYS (DQ_FLOW_PROTO | DQ_FLOW_SRC | DQ_FLOW_DST | PORT_KEYS)
#define ALL_KEYS 0x1ffu
#define KEYS_TEXT \
  "keys are proto, src, dst, src-port, dst-port, ethertype, vlan, mark, queue"

#define PICK(pool) ((pool)[g_test_rand_int_range (0, G_N_ELEMENTS (pool))])

static gboolean
chance (int percent)
{
  return g_test_rand_int_range (0, 100) < percent;
}

/* ------------------------------------------------------------------------------------ */
/* parser helpers */

static DqFlowRule *
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

static DqFlowRule
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

/* Messages are single-line printable ASCII, short whatever the input. */
static void
assert_message_safe (const char *message)
{
  const char *p;

  g_assert_true (g_str_has_prefix (message, "flow rule "));
  g_assert_true (g_utf8_validate (message, -1, NULL));
  for (p = message; *p; p++) {
    g_assert_cmpint ((guchar) *p, >=, 0x20);
    g_assert_cmpint ((guchar) *p, <, 0x7f);
  }
  g_assert_cmpuint (strlen (message), <, 1024);
}

/* The message of the DQ_ERROR_FLOW that parsing `text` must raise (g_free). */
static char *
parse_error (const char *text)
{
  GError *error = NULL;
  DqFlowRule *rules = (DqFlowRule *) & error;   /* must be reset to NULL */
  guint n = 77;
  char *message;

  g_assert_false (dq_flow_parse (text, &rules, &n, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_FLOW);
  g_assert_null (rules);
  g_assert_cmpuint (n, ==, 0);
  assert_message_safe (error->message);
  message = g_strdup (error->message);
  g_error_free (error);
  return message;
}

static void
expect_error (const char *text, ...)
{
  char *message = parse_error (text);
  const char *part;
  va_list args;

  va_start (args, text);
  while ((part = va_arg (args, const char *)) != NULL) {
    if (!strstr (message, part))
      g_error ("parsing \"%s\": message \"%s\" lacks \"%s\"", text, message, part);
  }
  va_end (args);
  g_free (message);
}

static gboolean
rule_equal (const DqFlowRule *a, const DqFlowRule *b)
{
  return a->keys == b->keys && a->proto == b->proto && a->src_prefix == b->src_prefix
      && a->dst_prefix == b->dst_prefix && a->src == b->src && a->dst == b->dst
      && a->src_port == b->src_port && a->dst_port == b->dst_port
      && a->ethertype == b->ethertype && a->vlan == b->vlan && a->mark == b->mark
      && a->queue == b->queue;
}

static void
assert_rule_equal (const DqFlowRule *got, const DqFlowRule *want)
{
  if (!rule_equal (got, want)) {
    g_autofree char *g = dq_flow_rule_to_string (got);
    g_autofree char *w = dq_flow_rule_to_string (want);

    g_error ("rule \"%s\" (keys 0x%x) != \"%s\" (keys 0x%x)", g, got->keys, w,
        want->keys);
  }
}

/* to_string, parse back, compare: the canonical text must say exactly the rule. */
static void
assert_round_trip (const DqFlowRule *rule)
{
  g_autofree char *text = dq_flow_rule_to_string (rule);
  DqFlowRule back = parse_one (text);
  g_autofree char *again = dq_flow_rule_to_string (&back);

  assert_rule_equal (&back, rule);
  g_assert_cmpstr (again, ==, text);
}

/* ------------------------------------------------------------------------------------ */
/* parser */

static void
test_parse_empty (void)
{
  static const char *const blanks[] = {
    "", " ", "\t\n", ";", ";;", " ; \n\t; ", ";;;;;;;;", "\r\n\v\f",
  };
  GError *error = NULL;
  DqFlowRule *rules = (DqFlowRule *) & error;
  guint n = 5, i;

  g_assert_true (dq_flow_parse (NULL, &rules, &n, &error));
  g_assert_no_error (error);
  g_assert_null (rules);
  g_assert_cmpuint (n, ==, 0);

  for (i = 0; i < G_N_ELEMENTS (blanks); i++) {
    rules = (DqFlowRule *) & error;
    n = 5;
    g_assert_true (dq_flow_parse (blanks[i], &rules, &n, &error));
    g_assert_no_error (error);
    g_assert_null (rules);
    g_assert_cmpuint (n, ==, 0);
  }

  /* validation only: both outputs may be NULL */
  g_assert_true (dq_flow_parse ("proto=udp; mark=3", NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_false (dq_flow_parse ("proto=udq", NULL, NULL, NULL));
}

typedef struct {
  const char *text;
  DqFlowRule rule;
} ValidCase;

static void
test_parse_valid_values (void)
{
  static const ValidCase cases[] = {
    {"proto=udp", {.keys = DQ_FLOW_PROTO,.proto = 17}},
    {"proto=tcp", {.keys = DQ_FLOW_PROTO,.proto = 6}},
    {"proto=icmp", {.keys = DQ_FLOW_PROTO,.proto = 1}},
    {"proto=UDP", {.keys = DQ_FLOW_PROTO,.proto = 17}},
    {"proto=0", {.keys = DQ_FLOW_PROTO,.proto = 0}},
    {"proto=255", {.keys = DQ_FLOW_PROTO,.proto = 255}},
    {"proto=047", {.keys = DQ_FLOW_PROTO,.proto = 47}},
    {"src=10.1.2.3", {.keys = DQ_FLOW_SRC,.src = IP4 (10, 1, 2, 3),.src_prefix = 32}},
    {"src=10.1.2.3/8", {.keys = DQ_FLOW_SRC,.src = IP4 (10, 0, 0, 0),.src_prefix = 8}},
    {"src=10.1.2.3/0", {.keys = DQ_FLOW_SRC,.src = 0,.src_prefix = 0}},
    {"src=10.1.2.3/32", {.keys = DQ_FLOW_SRC,.src = IP4 (10, 1, 2, 3),.src_prefix = 32}},
    {"src=10.1.2.255/31", {.keys = DQ_FLOW_SRC,.src = IP4 (10, 1, 2, 254),
            .src_prefix = 31}},
    {"src=0.0.0.0", {.keys = DQ_FLOW_SRC,.src = 0,.src_prefix = 32}},
    {"dst=255.255.255.255", {.keys = DQ_FLOW_DST,.dst = 0xffffffffu,.dst_prefix = 32}},
    {"dst=192.168.7.9/20", {.keys = DQ_FLOW_DST,.dst = IP4 (192, 168, 0, 0),
            .dst_prefix = 20}},
    {"dst=1.2.3.4/1", {.keys = DQ_FLOW_DST,.dst = 0,.dst_prefix = 1}},
    {"src-port=0", {.keys = DQ_FLOW_SRC_PORT,.src_port = 0}},
    {"src-port=65535", {.keys = DQ_FLOW_SRC_PORT,.src_port = 65535}},
    {"dst-port=05000", {.keys = DQ_FLOW_DST_PORT,.dst_port = 5000}},
    {"dst-port=65535", {.keys = DQ_FLOW_DST_PORT,.dst_port = 65535}},
    {"ethertype=0x0600", {.keys = DQ_FLOW_ETHERTYPE,.ethertype = 0x0600}},
    {"ethertype=0xffff", {.keys = DQ_FLOW_ETHERTYPE,.ethertype = 0xffff}},
    {"ethertype=0X86DD", {.keys = DQ_FLOW_ETHERTYPE,.ethertype = 0x86dd}},
    {"ethertype=0x00000806", {.keys = DQ_FLOW_ETHERTYPE,.ethertype = 0x0806}},
    {"ethertype=1536", {.keys = DQ_FLOW_ETHERTYPE,.ethertype = 0x0600}},
    {"ethertype=65535", {.keys = DQ_FLOW_ETHERTYPE,.ethertype = 0xffff}},
    {"vlan=0", {.keys = DQ_FLOW_VLAN,.vlan = 0}},
    {"vlan=4095", {.keys = DQ_FLOW_VLAN,.vlan = 4095}},
    {"mark=0", {.keys = DQ_FLOW_MARK,.mark = 0}},
    {"mark=4294967295", {.keys = DQ_FLOW_MARK,.mark = 4294967295u}},
    {"queue=0", {.keys = DQ_FLOW_QUEUE,.queue = 0}},
    {"queue=1023", {.keys = DQ_FLOW_QUEUE,.queue = 1023}},
    /* implied and redundant keys */
    {"dst-port=53", {.keys = DQ_FLOW_DST_PORT,.dst_port = 53}},
    {"proto=6 src-port=80", {.keys = DQ_FLOW_PROTO | DQ_FLOW_SRC_PORT,.proto = 6,
            .src_port = 80}},
    {"ethertype=0x0800 proto=udp", {.keys = DQ_FLOW_ETHERTYPE | DQ_FLOW_PROTO,
            .ethertype = 0x0800,.proto = 17}},
    {"vlan=7 ethertype=0x88f7 mark=9", {.keys = DQ_FLOW_VLAN | DQ_FLOW_ETHERTYPE |
            DQ_FLOW_MARK,.vlan = 7,.ethertype = 0x88f7,.mark = 9}},
    {"queue=3 mark=1 dst-port=5000 src-port=4000 dst=10.0.0.0/8 src=1.2.3.4 proto=udp "
          "vlan=12", {.keys = ALL_KEYS & ~DQ_FLOW_ETHERTYPE,.proto = 17,
            .src = IP4 (1, 2, 3, 4),.src_prefix = 32,.dst = IP4 (10, 0, 0, 0),
            .dst_prefix = 8,.src_port = 4000,.dst_port = 5000,.vlan = 12,.mark = 1,
        .queue = 3}},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    DqFlowRule rule = parse_one (cases[i].text);

    assert_rule_equal (&rule, &cases[i].rule);
    assert_round_trip (&rule);
  }
}

typedef struct {
  const char *token;
  gboolean out_of_range;        /* else "is not valid" */
} BadValue;

#define ALLOWED_IPV4 \
  "an IPv4 address A.B.C.D (octets 0..255) with an optional /0..32 prefix"

/* Each key at and past its limits; the whole message is compared. */
static void
test_parse_invalid_values (void)
{
  static const struct {
    const char *key;
    const char *allowed;
    BadValue bad[16];
  } keys[] = {
    {"proto", "udp, tcp, icmp or a protocol number 0..255", {
            {"256", TRUE}, {"-1", TRUE}, {"99999999999999999999999", TRUE},
            {"0x11", FALSE}, {"17x", FALSE}, {"udpp", FALSE}, {"+17", FALSE},
            {"ud", FALSE}, {"1 7", FALSE}, {NULL, FALSE}}},
    {"src", ALLOWED_IPV4, {
            {"1.2.3", FALSE}, {"256.1.1.1", FALSE}, {"1.2.3.4/33", TRUE},
            {"1.2.3.4/-1", TRUE}, {"x1.2.3.4", FALSE}, {"1.2.3.4x", FALSE},
            {"0001.2.3.4", FALSE}, {"01.2.3.4", FALSE}, {"1.2.3.4/", FALSE},
            {"1.2.3.4/0x8", FALSE}, {"1..2.3", FALSE}, {"1.2.3.4.5", FALSE},
            {".1.2.3", FALSE}, {"1.2.3.4/8/8", FALSE}, {"1.2.3.-4", FALSE},
            {NULL, FALSE}}},
    {"dst", ALLOWED_IPV4, {
            {"1.2.3.1000", FALSE}, {"1.2.3.4/99999999999999999999", TRUE},
            {"::1", FALSE}, {"10.0.0.0/ 8", FALSE}, {NULL, FALSE}}},
    {"src-port", "0..65535", {
            {"65536", TRUE}, {"-1", TRUE}, {"0x10", FALSE}, {"5000x", FALSE},
            {"+5", FALSE}, {"18446744073709551617", TRUE}, {"5.0", FALSE},
            {NULL, FALSE}}},
    {"dst-port", "0..65535", {
            {"99999", TRUE}, {"-0", TRUE}, {"0x0", FALSE}, {"5,6", FALSE},
            {NULL, FALSE}}},
    {"ethertype", "0x0600..0xffff (hex with 0x, or decimal 1536..65535)", {
            {"0x05ff", TRUE}, {"0x10000", TRUE}, {"1535", TRUE}, {"65536", TRUE},
            {"0", TRUE}, {"-1", TRUE}, {"0x", FALSE}, {"0xg00", FALSE},
            {"0x86dd1", TRUE}, {"x86dd", FALSE}, {"0x86ddq", FALSE},
            {"0x0800000000000000000000", TRUE}, {NULL, FALSE}}},
    {"vlan", "0..4095", {
            {"4096", TRUE}, {"-1", TRUE}, {"0x1", FALSE}, {"1a", FALSE},
            {NULL, FALSE}}},
    {"mark", "0..4294967295", {
            {"4294967296", TRUE}, {"-1", TRUE}, {"0x1", FALSE},
            {"18446744073709551616", TRUE}, {"7e3", FALSE}, {NULL, FALSE}}},
    {"queue", "0..1023", {
            {"1024", TRUE}, {"-1", TRUE}, {"0x3", FALSE}, {"three", FALSE},
            {NULL, FALSE}}},
  };
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (keys); i++) {
    for (j = 0; keys[i].bad[j].token; j++) {
      const BadValue *bad = &keys[i].bad[j];
      g_autofree char *token = g_strdup_printf ("%s=%s", keys[i].key, bad->token);
      g_autofree char *message = NULL;
      g_autofree char *want = NULL;

      if (strchr (bad->token, ' ')) {
        /* a space ends the token: the rest is a token of its own */
        message = parse_error (token);
        g_assert_nonnull (strstr (message, "flow rule 1 (\""));
        continue;
      }
      message = parse_error (token);
      want = g_strdup_printf ("flow rule 1 (\"%s\"): '%s' is %s; %s takes %s", token,
          token, bad->out_of_range ? "out of range" : "not valid", keys[i].key,
          keys[i].allowed);
      g_assert_cmpstr (message, ==, want);
    }
  }
}

static void
test_parse_structure_errors (void)
{
  g_autofree char *message = NULL;

  message = parse_error ("proto=udp dst-port=5000; proto=udp dst-port=99999");
  g_assert_cmpstr (message, ==, "flow rule 2 (\"proto=udp dst-port=99999\"): "
      "'dst-port=99999' is out of range; dst-port takes 0..65535");

  expect_error ("udp", "flow rule 1 (\"udp\"): 'udp' is not key=value; " KEYS_TEXT, NULL);
  expect_error ("proto=udp dst-port 5000", "flow rule 1 (\"proto=udp dst-port 5000\")",
      "'dst-port' is not key=value", NULL);
  expect_error ("protoo=udp", "unknown key 'protoo' in 'protoo=udp'; " KEYS_TEXT, NULL);
  expect_error ("Proto=udp", "unknown key 'Proto'", KEYS_TEXT, NULL);
  expect_error ("=5", "unknown key '' in '=5'", NULL);
  expect_error ("dst_port=5", "unknown key 'dst_port'", NULL);
  expect_error ("dst-port=", "'dst-port=' has no value; dst-port takes 0..65535", NULL);
  expect_error ("mark=5 queue=", "'queue=' has no value; queue takes 0..1023", NULL);
  expect_error ("proto==udp", "'proto==udp' is not valid", NULL);
  expect_error ("dst-port=5 dst-port=6", "'dst-port=6' repeats key dst-port "
      "(already 'dst-port=5'); each key may appear once per rule", NULL);
  expect_error ("mark=1 mark=1", "'mark=1' repeats key mark", NULL);
  expect_error ("proto=icmp dst-port=5", "flow rule 1 (\"proto=icmp dst-port=5\"): "
      "'dst-port=5' needs proto udp or tcp, but the rule has 'proto=icmp'", NULL);
  expect_error ("src-port=1 proto=47", "'src-port=1' needs proto udp or tcp, but the "
      "rule has 'proto=47'", NULL);
  expect_error ("ethertype=0x86dd src=1.2.3.4", "'ethertype=0x86dd' conflicts with "
      "'src=1.2.3.4': proto, src, dst and ports match IPv4 only (ethertype 0x0800)",
      NULL);
  expect_error ("dst-port=5 ethertype=0x86dd", "'ethertype=0x86dd' conflicts with "
      "'dst-port=5'", NULL);
  expect_error ("proto=udp ethertype=2054", "'ethertype=2054' conflicts with "
      "'proto=udp'", NULL);
  /* rules are counted without the empty ones */
  expect_error (";; proto=udp ;;\n; bogus ;", "flow rule 2 (\"bogus\"): 'bogus' is not "
      "key=value", NULL);
  expect_error ("proto=udp,dst-port=5", "'proto=udp,dst-port=5' is not valid", NULL);
  /* whitespace inside the rule is shown escaped, quotes and backslashes too */
  expect_error ("mark=1\tqueue=x", "flow rule 1 (\"mark=1\\tqueue=x\"): 'queue=x'", NULL);
  expect_error ("mark=\"5\"", "flow rule 1 (\"mark=\\\"5\\\"\"): 'mark=\\\"5\\\"' is not "
      "valid", NULL);
  expect_error ("mark=5\\", "'mark=5\\\\' is not valid", NULL);
  /* control and non-ASCII bytes are escaped, never copied raw */
  expect_error ("proto=udp\x01", "'proto=udp\\x01' is not valid", NULL);
  expect_error ("proto=ud\xc3\xa9", "'proto=ud\\xc3\\xa9' is not valid", NULL);
  expect_error ("\xff\xfe=1", "unknown key '\\xff\\xfe' in '\\xff\\xfe=1'", NULL);
  expect_error ("mark=1 \x7f", "'\\x7f' is not key=value", NULL);
}

static void
test_parse_whitespace (void)
{
  guint n = 0;
  DqFlowRule *rules = parse_ok (" proto=udp\tdst-port=5\n;\r\n dst=1.2.3.4 ;\n\n"
      "  \t mark=3   vlan=9\v;;", &n);

  g_assert_cmpuint (n, ==, 3);
  g_assert_cmpuint (rules[0].keys, ==, DQ_FLOW_PROTO | DQ_FLOW_DST_PORT);
  g_assert_cmpuint (rules[0].proto, ==, 17);
  g_assert_cmpuint (rules[0].dst_port, ==, 5);
  g_assert_cmpuint (rules[1].keys, ==, DQ_FLOW_DST);
  g_assert_cmphex (rules[1].dst, ==, IP4 (1, 2, 3, 4));
  g_assert_cmpuint (rules[1].dst_prefix, ==, 32);
  g_assert_cmpuint (rules[2].keys, ==, DQ_FLOW_MARK | DQ_FLOW_VLAN);
  g_assert_cmpuint (rules[2].mark, ==, 3);
  g_assert_cmpuint (rules[2].vlan, ==, 9);
  g_free (rules);
}

static void
test_parse_rule_count (void)
{
  GString *text = g_string_new (NULL);
  g_autofree char *message = NULL;
  DqFlowRule *rules;
  guint i, n = 0;

  for (i = 0; i < DQ_FLOW_MAX_RULES; i++)
    g_string_append_printf (text, "dst-port=%u mark=%u;%s", i, i + 1,
        i % 7 ? "" : ";\n ;");
  rules = parse_ok (text->str, &n);
  g_assert_cmpuint (n, ==, 256);
  for (i = 0; i < n; i++) {
    g_assert_cmpuint (rules[i].dst_port, ==, i);
    g_assert_cmpuint (rules[i].mark, ==, i + 1);
  }
  g_free (rules);

  g_string_append (text, " ; ; proto=tcp ;");
  message = parse_error (text->str);
  g_assert_cmpstr (message, ==, "flow rule 257 (\"proto=tcp\"): too many rules; at most "
      "256 are allowed");
  g_string_free (text, TRUE);
}

static char *
repeat (const char *piece, gsize total)
{
  GString *s = g_string_sized_new (total + 16);

  while (s->len < total)
    g_string_append (s, piece);
  return g_string_free (s, FALSE);
}

/* Megabyte inputs: a linear pass, short messages. */
static void
test_parse_huge (void)
{
  const gsize MB = 1 << 20;
  g_autofree char *semis = repeat (";", MB);
  g_autofree char *spaces = repeat (" \t\n", MB);
  g_autofree char *rules_text = repeat ("mark=1 ;", MB);
  g_autofree char *letters = repeat ("a", MB);
  g_autofree char *one_token = NULL;
  g_autofree char *message = NULL;
  g_autofree char *garbage = g_malloc (MB + 1);
  GString *wide = g_string_new ("mark=1");
  DqFlowRule *rules;
  gint64 start = g_get_monotonic_time ();
  guint n, i;

  rules = parse_ok (semis, &n);
  g_assert_cmpuint (n, ==, 0);
  rules = parse_ok (spaces, &n);
  g_assert_cmpuint (n, ==, 0);

  message = parse_error (rules_text);
  g_assert_cmpstr (message, ==, "flow rule 257 (\"mark=1\"): too many rules; at most 256 "
      "are allowed");
  g_clear_pointer (&message, g_free);

  /* the rule text and the token are cut to 64 bytes in the message */
  message = parse_error (letters);
  g_assert_nonnull (strstr (message, "flow rule 1 (\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\"): 'aaaa"));
  g_assert_true (g_str_has_suffix (message, "...' is not key=value; " KEYS_TEXT));
  g_clear_pointer (&message, g_free);

  one_token = g_strconcat ("mark=", letters, NULL);
  message = parse_error (one_token);
  g_assert_nonnull (strstr (message, "is not valid; mark takes 0..4294967295"));
  g_clear_pointer (&message, g_free);

  /* one rule a megabyte wide */
  g_string_append (wide, spaces);
  g_string_append (wide, "queue=2");
  g_string_append (wide, spaces);
  rules = parse_ok (wide->str, &n);
  g_assert_cmpuint (n, ==, 1);
  g_assert_cmpuint (rules[0].keys, ==, DQ_FLOW_MARK | DQ_FLOW_QUEUE);
  g_assert_cmpuint (rules[0].queue, ==, 2);
  g_free (rules);
  g_string_free (wide, TRUE);

  /* random bytes: the first rule fails, the message is short and clean */
  for (i = 0; i < MB; i++)
    garbage[i] = (char) g_test_rand_int_range (1, 256);
  garbage[MB] = '\0';
  g_assert_false (dq_flow_parse (garbage, NULL, NULL, NULL));
  message = parse_error (garbage);
  g_clear_pointer (&message, g_free);

  g_test_message ("megabyte inputs parsed in %" G_GINT64_FORMAT " ms",
      (g_get_monotonic_time () - start) / 1000);
}

static gboolean
rule_is_sane (const DqFlowRule *r)
{
  guint32 src_mask = r->src_prefix ? 0xffffffffu << (32 - r->src_prefix) : 0;
  guint32 dst_mask = r->dst_prefix ? 0xffffffffu << (32 - r->dst_prefix) : 0;

  if (r->keys == 0 || (r->keys & ~ALL_KEYS))
    return FALSE;
  if (r->src_prefix > 32 || r->dst_prefix > 32)
    return FALSE;
  if ((r->keys & DQ_FLOW_SRC) && (r->src & ~src_mask))
    return FALSE;
  if ((r->keys & DQ_FLOW_DST) && (r->dst & ~dst_mask))
    return FALSE;
  if (r->vlan > 4095 || r->queue > DQ_FLOW_MAX_QUEUE)
    return FALSE;
  if ((r->keys & DQ_FLOW_ETHERTYPE) && r->ethertype < 0x0600)
    return FALSE;
  if ((r->keys & PORT_KEYS) && (r->keys & DQ_FLOW_PROTO) && r->proto != 6
      && r->proto != 17)
    return FALSE;
  if ((r->keys & DQ_FLOW_ETHERTYPE) && (r->keys & IPV4_KEYS) && r->ethertype != 0x0800)
    return FALSE;
  return TRUE;
}

/* Random strings of the syntax's own pieces, salted with random bytes. */
static void
test_parse_fuzz (void)
{
  static const char *const pieces[] = {
    "proto", "src", "dst", "src-port", "dst-port", "ethertype", "vlan", "mark", "queue",
    "=", "=", "=", ";", ";", " ", " ", "\t", "\n", ".", "/", "-", "x", "0x", "0", "1",
    "9", "255", "256", "32", "33", "65535", "65536", "4095", "4096", "1023", "1024",
    "udp", "tcp", "icmp", "4294967295", "4294967296", "10.0.0.1", "1.2.3.4/8",
    "0x0800", "0x86dd", "0600", "proto=udp", "dst-port=5000", "src=10.0.0.0/8 ",
    "mark=7 ", "queue=3 ", "vlan=100 ", "ethertype=0x88f7 ", "; ",
  };
  static const char *const keys[] = {
    "proto", "src", "dst", "src-port", "dst-port", "ethertype", "vlan", "mark", "queue",
  };
  static const char *const values[] = {
    "0", "1", "6", "17", "udp", "tcp", "icmp", "255", "256", "1023", "1024", "4095",
    "0x0800", "0x86dd", "1536", "65535", "65536", "10.0.0.1", "10.0.0.0/8", "1.2.3.4/32",
    "1.2.3.4/33", "4294967295", "-1", "",
  };
  const guint iterations = 200000;
  guint i, n_ok = 0, n_rules_total = 0;

  for (i = 0; i < iterations; i++) {
    GString *s = g_string_new (NULL);
    GError *error = NULL;
    DqFlowRule *rules = NULL;
    guint n = 0, j, pieces_n = (guint) g_test_rand_int_range (1, 14);

    if (chance (10)) {
      /* pure noise */
      for (j = 0; j < pieces_n * 3; j++)
        g_string_append_c (s, (char) g_test_rand_int_range (1, 256));
    } else if (chance (30)) {
      /* whole tokens, mostly valid, near their limits */
      for (j = 0; j < pieces_n % 4 + 1; j++)
        g_string_append_printf (s, "%s%s=%s", chance (30) ? ";" : " ", PICK (keys),
            PICK (values));
    } else {
      for (j = 0; j < pieces_n; j++) {
        if (chance (4))
          g_string_append_c (s, (char) g_test_rand_int_range (1, 256));
        else
          g_string_append (s, PICK (pieces));
      }
    }

    if (dq_flow_parse (s->str, &rules, &n, &error)) {
      g_assert_no_error (error);
      g_assert_cmpuint (n, <=, DQ_FLOW_MAX_RULES);
      for (j = 0; j < n; j++) {
        if (!rule_is_sane (&rules[j]))
          g_error ("\"%s\" gave an inconsistent rule %u", g_strescape (s->str, NULL), j);
        assert_round_trip (&rules[j]);
      }
      n_ok++;
      n_rules_total += n;
      g_free (rules);
    } else {
      g_assert_error (error, DQ_ERROR, DQ_ERROR_FLOW);
      g_assert_null (rules);
      assert_message_safe (error->message);
      g_error_free (error);
    }
    g_string_free (s, TRUE);
  }
  g_test_message ("fuzz: %u of %u strings parsed, %u rules", n_ok, iterations,
      n_rules_total);
  /* the generator must reach both outcomes often enough to mean something */
  g_assert_cmpuint (n_ok, >, iterations / 40);
  g_assert_cmpuint (n_ok, <, iterations - iterations / 10);
}

/* ------------------------------------------------------------------------------------ */
/* canonical text */

static void
test_to_string_canonical (void)
{
  static const struct {
    const char *in;
    const char *out;
  } cases[] = {
    {"dst-port=5000 mark=7 dst=10.1.2.3/8 proto=17", "proto=udp dst=10.0.0.0/8 "
          "dst-port=5000 mark=7"},
    {"ethertype=2054", "ethertype=0x0806"},
    {"src=1.2.3.4/32", "src=1.2.3.4"},
    {"src=1.2.3.4/0", "src=0.0.0.0/0"},
    {"proto=47", "proto=47"},
    {"proto=TCP", "proto=tcp"},
    {"proto=1", "proto=icmp"},
    {"queue=1023 vlan=4095 mark=4294967295 src-port=00", "src-port=0 vlan=4095 "
          "mark=4294967295 queue=1023"},
    {"ethertype=0x0800 proto=udp src=0.0.0.0 dst=255.255.255.255 src-port=1 "
          "dst-port=65535 vlan=0 mark=0 queue=0", "proto=udp src=0.0.0.0 "
          "dst=255.255.255.255 src-port=1 dst-port=65535 ethertype=0x0800 vlan=0 "
          "mark=0 queue=0"},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    DqFlowRule rule = parse_one (cases[i].in);
    g_autofree char *text = dq_flow_rule_to_string (&rule);

    g_assert_cmpstr (text, ==, cases[i].out);
    assert_round_trip (&rule);
  }
}

/* ---- random rules (also used by the BPF tests) ---- */

static const guint16 pool_vlan[] = { 0, 1, 100, 4095 };
static const guint16 pool_ethertype[] = {
  0x0800, 0x86dd, 0x0806, 0x8100, 0x88a8, 0x0600,
};
static const guint8 pool_proto[] = { 1, 6, 17, 47 };
static const guint32 pool_addr[] = {
  IP4 (10, 0, 0, 1), IP4 (10, 0, 0, 2), IP4 (10, 1, 0, 1), IP4 (192, 168, 1, 1), 0,
  0xffffffffu,
};
static const guint8 pool_prefix[] = { 0, 8, 16, 24, 31, 32, 32, 32 };
static const guint16 pool_port[] = { 0, 53, 5000, 5001, 65535 };

static guint32
mask_of (guint prefix)
{
  return prefix ? 0xffffffffu << (32 - prefix) : 0;
}

/* A rule the parser would accept, with values that random frames often hit. */
static DqFlowRule
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

static void
test_to_string_round_trip (void)
{
  guint i;

  for (i = 0; i < 20000; i++) {
    DqFlowRule r = random_rule (40, DQ_FLOW_MAX_QUEUE + 1);

    r.mark = chance (50) ? r.mark : 0;
    if (r.keys & DQ_FLOW_PROTO && !(r.keys & PORT_KEYS))
      r.proto = (guint8) g_test_rand_int_range (0, 256);
    if (r.keys & DQ_FLOW_SRC) {
      r.src_prefix = (guint8) g_test_rand_int_range (0, 33);
      r.src = (guint32) g_test_rand_int () & mask_of (r.src_prefix);
    }
    if (r.keys & DQ_FLOW_ETHERTYPE && !(r.keys & IPV4_KEYS))
      r.ethertype = (guint16) g_test_rand_int_range (0x0600, 0x10000);
    assert_round_trip (&r);
  }
}

/* ------------------------------------------------------------------------------------ */
/* frames */

typedef struct {
  guint16 tag_tpid;             /* 0: no in-band tag */
  guint16 tag_tci;
  guint16 ethertype;
  guint8 version;
  guint8 ihl;                   /* 32-bit words; the builder writes at least 5 */
  guint8 proto;
  guint16 frag;                 /* flags and fragment offset */
  guint32 src, dst;
  guint16 sport, dport;
  guint payload;
} FrameSpec;

#define FRAME_MAX 256

static FrameSpec
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

static void
put16 (guint8 *p, guint v)
{
  p[0] = (guint8) (v >> 8);
  p[1] = (guint8) v;
}

static void
put32 (guint8 *p, guint32 v)
{
  put16 (p, v >> 16);
  put16 (p + 2, v & 0xffff);
}

/* Writes the frame; the IPv4-looking bytes follow the ethertype whatever it is, and
 * IPv4 options hold decoy bytes that read as port 4444 at the wrong offset. */
static guint
build_frame (const FrameSpec *s, guint8 *buf)
{
  guint l2 = 12, l3, hl = MAX (s->ihl, 5) * 4u, i;

  memset (buf, 0, FRAME_MAX);
  for (i = 0; i < 6; i++) {
    buf[i] = (guint8) (0x02 + i);
    buf[6 + i] = (guint8) (0x12 + i);
  }
  if (s->tag_tpid) {
    put16 (buf + 12, s->tag_tpid);
    put16 (buf + 14, s->tag_tci);
    l2 = 16;
  }
  put16 (buf + l2, s->ethertype);
  l3 = l2 + 2;
  buf[l3] = (guint8) (s->version << 4 | (s->ihl & 0x0f));
  put16 (buf + l3 + 2, hl + 8 + s->payload);
  put16 (buf + l3 + 4, 0x1234);
  put16 (buf + l3 + 6, s->frag);
  buf[l3 + 8] = 64;
  buf[l3 + 9] = s->proto;
  put32 (buf + l3 + 12, s->src);
  put32 (buf + l3 + 16, s->dst);
  for (i = 20; i < hl; i += 2)
    put16 (buf + l3 + i, 4444);
  put16 (buf + l3 + hl, s->sport);
  put16 (buf + l3 + hl + 2, s->dport);
  put16 (buf + l3 + hl + 4, 8 + s->payload);
  for (i = 0; i < s->payload; i++)
    buf[l3 + hl + 8 + i] = (guint8) (0xa0 + i);
  g_assert_cmpuint (l3 + hl + 8 + s->payload, <=, FRAME_MAX);
  return l3 + hl + 8 + s->payload;
}

/* dq_flow_match on an exact-size heap copy, so that ASan and valgrind see any read past
 * the end. */
static int
match_exact (const DqFlowRule *rules, guint n, const guint8 *frame, guint len, int vlan)
{
  guint8 *copy = g_memdup2 (frame, len);
  int m = dq_flow_match (rules, n, copy, len, vlan);

  g_free (copy);
  return m;
}

static int
match_text (const char *rules_text, const FrameSpec *spec, int vlan)
{
  guint8 frame[FRAME_MAX];
  guint n, len = build_frame (spec, frame);
  DqFlowRule *rules = parse_ok (rules_text, &n);
  int m = match_exact (rules, n, frame, len, vlan);

  g_free (rules);
  return m;
}

static void
test_match_protocols (void)
{
  const char *rules = "proto=tcp dst-port=80; proto=udp dst-port=5000 mark=1; "
      "dst-port=5001; src=10.0.0.0/8; proto=icmp";
  FrameSpec udp = ipv4_spec (17, IP4 (10, 1, 1, 1), IP4 (192, 168, 0, 1), 1234, 5000);
  FrameSpec tcp = ipv4_spec (6, IP4 (11, 1, 1, 1), IP4 (192, 168, 0, 1), 1234, 80);
  FrameSpec icmp = ipv4_spec (1, IP4 (11, 1, 1, 1), IP4 (192, 168, 0, 1), 0, 5001);
  guint n;
  DqFlowRule *none;

  g_assert_cmpint (match_text (rules, &udp, -1), ==, 1);
  udp.dport = 5001;
  g_assert_cmpint (match_text (rules, &udp, -1), ==, 2);
  udp.dport = 7;
  g_assert_cmpint (match_text (rules, &udp, -1), ==, 3);
  udp.src = IP4 (11, 0, 0, 1);
  g_assert_cmpint (match_text (rules, &udp, -1), ==, -1);
  udp.src = IP4 (10, 255, 255, 255);
  g_assert_cmpint (match_text (rules, &udp, -1), ==, 3);
  udp.src = IP4 (9, 255, 255, 255);
  g_assert_cmpint (match_text (rules, &udp, -1), ==, -1);

  g_assert_cmpint (match_text (rules, &tcp, -1), ==, 0);
  tcp.dport = 5001;             /* ports without proto: TCP too */
  g_assert_cmpint (match_text (rules, &tcp, -1), ==, 2);
  tcp.dport = 5000;             /* proto=udp rule */
  g_assert_cmpint (match_text (rules, &tcp, -1), ==, -1);

  /* ICMP: the bytes where ports would be say 5001; port rules must not look */
  g_assert_cmpint (match_text (rules, &icmp, -1), ==, 4);
  g_assert_cmpint (match_text ("dst-port=5001", &icmp, -1), ==, -1);
  g_assert_cmpint (match_text ("proto=47 dst=192.168.0.0/16", &icmp, -1), ==, -1);
  icmp.proto = 47;
  g_assert_cmpint (match_text ("proto=47 dst=192.168.0.0/16", &icmp, -1), ==, 0);
  g_assert_cmpint (match_text ("src-port=0 dst-port=5001", &icmp, -1), ==, -1);

  /* src/dst prefixes */
  g_assert_cmpint (match_text ("dst=192.168.0.1", &tcp, -1), ==, 0);
  g_assert_cmpint (match_text ("dst=192.168.0.2", &tcp, -1), ==, -1);
  g_assert_cmpint (match_text ("dst=192.168.0.0/31", &tcp, -1), ==, 0);
  g_assert_cmpint (match_text ("dst=0.0.0.0/0 src=11.1.1.0/24", &tcp, -1), ==, 0);
  g_assert_cmpint (match_text ("dst=0.0.0.0/0 src=11.1.2.0/24", &tcp, -1), ==, -1);
  g_assert_cmpint (match_text ("src-port=1234 dst-port=5000", &tcp, -1), ==, 0);
  g_assert_cmpint (match_text ("src-port=1235 dst-port=5000", &tcp, -1), ==, -1);

  /* a rule without match keys matches everything, even an empty frame */
  g_assert_cmpint (match_text ("proto=udp; mark=5; queue=1", &tcp, -1), ==, 1);
  none = parse_ok ("mark=5", &n);
  g_assert_cmpint (dq_flow_match (none, n, NULL, 0, -1), ==, 0);
  g_assert_cmpint (dq_flow_match (none, 0, NULL, 0, -1), ==, -1);
  g_free (none);
}

static void
test_match_vlan (void)
{
  FrameSpec f = ipv4_spec (17, IP4 (10, 0, 0, 1), IP4 (10, 0, 0, 2), 1000, 5000);
  FrameSpec qinq;

  /* stripped tag, given as an argument */
  g_assert_cmpint (match_text ("vlan=100", &f, -1), ==, -1);
  g_assert_cmpint (match_text ("vlan=100", &f, 100), ==, 0);
  g_assert_cmpint (match_text ("vlan=100", &f, 5), ==, -1);
  g_assert_cmpint (match_text ("vlan=100", &f, 0xe064), ==, 0);   /* PCP bits ignored */
  g_assert_cmpint (match_text ("vlan=0", &f, 0), ==, 0);
  g_assert_cmpint (match_text ("vlan=100 dst-port=5000", &f, 100), ==, 0);
  g_assert_cmpint (match_text ("dst-port=5000", &f, 4095), ==, 0);

  /* in-band 802.1Q and 802.1ad tags */
  f.tag_tpid = 0x8100;
  f.tag_tci = 0xa000 | 100;
  g_assert_cmpint (match_text ("vlan=100", &f, -1), ==, 0);
  g_assert_cmpint (match_text ("vlan=101", &f, -1), ==, -1);
  g_assert_cmpint (match_text ("vlan=100 proto=udp dst-port=5000 src=10.0.0.1", &f, -1),
      ==, 0);
  g_assert_cmpint (match_text ("dst-port=5000", &f, -1), ==, 0);
  g_assert_cmpint (match_text ("ethertype=0x0800", &f, -1), ==, 0);
  g_assert_cmpint (match_text ("ethertype=0x8100", &f, -1), ==, -1);
  f.tag_tpid = 0x88a8;
  g_assert_cmpint (match_text ("vlan=100 dst-port=5000", &f, -1), ==, 0);
  f.tag_tpid = 0x9100;          /* not a tag we parse: the ethertype is 0x9100 */
  g_assert_cmpint (match_text ("vlan=100", &f, -1), ==, -1);
  g_assert_cmpint (match_text ("dst-port=5000", &f, -1), ==, -1);
  g_assert_cmpint (match_text ("ethertype=0x9100", &f, -1), ==, 0);

  /* a stripped tag and a second one in the frame: only the stripped one is read */
  qinq = f;
  qinq.tag_tpid = 0x8100;
  qinq.tag_tci = 200;
  g_assert_cmpint (match_text ("vlan=200", &qinq, 100), ==, -1);
  g_assert_cmpint (match_text ("vlan=100", &qinq, 100), ==, 0);
  g_assert_cmpint (match_text ("ethertype=0x8100 vlan=100", &qinq, 100), ==, 0);
  g_assert_cmpint (match_text ("proto=udp", &qinq, 100), ==, -1);
  g_assert_cmpint (match_text ("vlan=200 proto=udp", &qinq, -1), ==, 0);
}

static void
test_match_ipv4_options (void)
{
  guint ihl;

  for (ihl = 5; ihl <= 15; ihl++) {
    FrameSpec f = ipv4_spec (6, IP4 (1, 1, 1, 1), IP4 (2, 2, 2, 2), 2000, 3000);

    f.ihl = (guint8) ihl;
    g_assert_cmpint (match_text ("dst-port=3000", &f, -1), ==, 0);
    g_assert_cmpint (match_text ("src-port=2000 proto=tcp", &f, -1), ==, 0);
    /* the options read as 4444 only at a wrong offset */
    g_assert_cmpint (match_text ("dst-port=4444", &f, -1), ==, -1);
    g_assert_cmpint (match_text ("src-port=4444", &f, -1), ==, -1);
    f.tag_tpid = 0x8100;
    f.tag_tci = 9;
    g_assert_cmpint (match_text ("vlan=9 dst-port=3000", &f, -1), ==, 0);
  }
}

static void
test_match_bad_ipv4 (void)
{
  guint ihl;
  FrameSpec f;

  for (ihl = 0; ihl < 5; ihl++) {
    f = ipv4_spec (17, IP4 (1, 1, 1, 1), IP4 (2, 2, 2, 2), 2000, 3000);
    f.ihl = (guint8) ihl;
    g_assert_cmpint (match_text ("ethertype=0x0800", &f, -1), ==, 0);
    g_assert_cmpint (match_text ("dst-port=3000", &f, -1), ==, -1);
    g_assert_cmpint (match_text ("proto=udp", &f, -1), ==, -1);
    g_assert_cmpint (match_text ("src=0.0.0.0/0", &f, -1), ==, -1);
  }
  /* not version 4 */
  f = ipv4_spec (17, IP4 (1, 1, 1, 1), IP4 (2, 2, 2, 2), 2000, 3000);
  f.version = 6;
  g_assert_cmpint (match_text ("proto=udp", &f, -1), ==, -1);
  g_assert_cmpint (match_text ("ethertype=0x0800", &f, -1), ==, 0);
  f.version = 5;
  g_assert_cmpint (match_text ("src=1.1.1.1", &f, -1), ==, -1);
}

static void
test_match_fragments (void)
{
  static const struct {
    guint16 frag;
    gboolean first;
  } frags[] = {
    {0x0000, TRUE}, {0x2000, TRUE}, {0x4000, TRUE}, {0x8000, TRUE}, {0x0001, FALSE},
    {0x2001, FALSE}, {0x1fff, FALSE}, {0x3fff, FALSE}, {0x0100, FALSE},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (frags); i++) {
    FrameSpec f = ipv4_spec (17, IP4 (1, 1, 1, 1), IP4 (2, 2, 2, 2), 2000, 3000);

    f.frag = frags[i].frag;
    g_assert_cmpint (match_text ("dst-port=3000", &f, -1), ==, frags[i].first ? 0 : -1);
    g_assert_cmpint (match_text ("proto=udp src-port=2000", &f, -1), ==,
        frags[i].first ? 0 : -1);
    /* the IPv4 header is in every fragment */
    g_assert_cmpint (match_text ("proto=udp src=1.1.1.1 dst=2.2.2.2", &f, -1), ==, 0);
  }
}

/* Every length from 0 to the whole frame: a rule matches exactly when the bytes it needs
 * are there. */
static void
check_truncations (const FrameSpec *spec, int vlan, guint ip_at)
{
  struct {
    const char *text;
    guint need;
  } rules[] = {
    {"dst-port=5000", ip_at + 24 + 4},
    {"proto=tcp src-port=1111", ip_at + 24 + 4},
    {"vlan=100 dst=10.0.0.0/8 dst-port=5000", ip_at + 24 + 4},
    {"proto=tcp", ip_at + 24},
    {"src=10.0.0.1", ip_at + 24},
    {"ethertype=0x0800", ip_at},
    {"vlan=100", vlan >= 0 ? 0 : ip_at},
    {"mark=1", 0},
  };
  GString *all = g_string_new (NULL);
  DqFlowRule parsed[G_N_ELEMENTS (rules)], *list;
  guint8 frame[FRAME_MAX];
  guint full = build_frame (spec, frame), len, i, n;

  for (i = 0; i < G_N_ELEMENTS (rules); i++) {
    parsed[i] = parse_one (rules[i].text);
    g_string_append_printf (all, "%s;", rules[i].text);
  }
  list = parse_ok (all->str, &n);
  g_assert_cmpuint (n, ==, G_N_ELEMENTS (rules));

  for (len = 0; len <= full; len++) {
    int first = -1;

    for (i = 0; i < G_N_ELEMENTS (rules); i++) {
      gboolean want = len >= rules[i].need;

      g_assert_cmpint (match_exact (&parsed[i], 1, frame, len, vlan), ==, want ? 0 : -1);
      if (want && first < 0)
        first = (int) i;
    }
    g_assert_cmpint (match_exact (list, n, frame, len, vlan), ==, first);
  }
  g_free (list);
  g_string_free (all, TRUE);
}

static void
test_match_truncated (void)
{
  FrameSpec f = ipv4_spec (6, IP4 (10, 0, 0, 1), IP4 (10, 0, 0, 2), 1111, 5000);

  f.ihl = 6;
  f.payload = 10;
  check_truncations (&f, 100, 14);
  f.tag_tpid = 0x8100;
  f.tag_tci = 100;
  check_truncations (&f, -1, 18);
  f.tag_tpid = 0x88a8;
  check_truncations (&f, -1, 18);
}

static void
test_match_non_ipv4 (void)
{
  static const guint16 types[] = { 0x86dd, 0x0806, 0x88f7, 0x0600, 0x05dc, 0x0000 };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (types); i++) {
    /* IPv4-looking bytes after a different ethertype */
    FrameSpec f = ipv4_spec (17, IP4 (1, 1, 1, 1), IP4 (2, 2, 2, 2), 2000, 3000);
    g_autofree char *mine = g_strdup_printf ("ethertype=0x%04x", types[i]);
    int want_mine = types[i] >= 0x0600 ? 0 : -1;

    f.ethertype = types[i];
    g_assert_cmpint (match_text ("dst-port=3000", &f, -1), ==, -1);
    g_assert_cmpint (match_text ("proto=udp", &f, -1), ==, -1);
    g_assert_cmpint (match_text ("src=1.1.1.1", &f, -1), ==, -1);
    g_assert_cmpint (match_text ("ethertype=0x0800", &f, -1), ==, -1);
    if (want_mine == 0)
      g_assert_cmpint (match_text (mine, &f, -1), ==, 0);
    g_assert_cmpint (match_text ("proto=udp; mark=9", &f, -1), ==, 1);
  }
}

/* ------------------------------------------------------------------------------------ */
/* a reference reading of the frame, written independently of flow.c */

#define NONE (-1)

typedef struct {
  gint32 vlan;
  gint32 ethertype;
  gboolean ipv4;
  guint8 proto;
  guint32 src, dst;
  gint32 sport, dport;
} RefFields;

static guint
be16_at (const guint8 *p)
{
  return (guint) p[0] << 8 | p[1];
}

static void
ref_fields (const guint8 *f, guint len, int vlan, RefFields *r)
{
  const guint8 *ip;
  guint type, l3 = 14, hl, frag_offset;

  memset (r, 0, sizeof *r);
  r->vlan = vlan >= 0 ? vlan & 0xfff : NONE;
  r->ethertype = r->sport = r->dport = NONE;
  if (len < 14)
    return;
  type = be16_at (f + 12);
  if (vlan < 0 && (type == 0x8100 || type == 0x88a8)) {
    if (len < 18)
      return;
    r->vlan = (gint32) (be16_at (f + 14) & 0xfff);
    type = be16_at (f + 16);
    l3 = 18;
  }
  r->ethertype = (gint32) type;
  if (type != 0x0800 || len < l3 + 20)
    return;
  ip = f + l3;
  hl = (ip[0] & 0xfu) * 4;
  if (ip[0] >> 4 != 4 || hl < 20 || len < l3 + hl)
    return;
  r->ipv4 = TRUE;
  r->proto = ip[9];
  r->src = (guint32) be16_at (ip + 12) << 16 | be16_at (ip + 14);
  r->dst = (guint32) be16_at (ip + 16) << 16 | be16_at (ip + 18);
  frag_offset = be16_at (ip + 6) & 0x1fff;
  if (frag_offset == 0 && (r->proto == 6 || r->proto == 17) && len >= l3 + hl + 4) {
    r->sport = (gint32) be16_at (ip + hl);
    r->dport = (gint32) be16_at (ip + hl + 2);
  }
}

static gboolean
ref_rule_matches (const DqFlowRule *r, const RefFields *f)
{
  if ((r->keys & DQ_FLOW_VLAN) && f->vlan != r->vlan)
    return FALSE;
  if ((r->keys & DQ_FLOW_ETHERTYPE) && f->ethertype != r->ethertype)
    return FALSE;
  if ((r->keys & IPV4_KEYS) && !f->ipv4)
    return FALSE;
  if ((r->keys & DQ_FLOW_PROTO) && f->proto != r->proto)
    return FALSE;
  if ((r->keys & DQ_FLOW_SRC) && (f->src & mask_of (r->src_prefix)) != r->src)
    return FALSE;
  if ((r->keys & DQ_FLOW_DST) && (f->dst & mask_of (r->dst_prefix)) != r->dst)
    return FALSE;
  if ((r->keys & DQ_FLOW_SRC_PORT) && f->sport != r->src_port)
    return FALSE;
  if ((r->keys & DQ_FLOW_DST_PORT) && f->dport != r->dst_port)
    return FALSE;
  return TRUE;
}

static int
ref_match (const DqFlowRule *rules, guint n, const RefFields *f)
{
  guint i;

  for (i = 0; i < n; i++)
    if (ref_rule_matches (&rules[i], f))
      return (int) i;
  return -1;
}

/* The fanout program's hash for packets without a receive hash (flow-bpf.c). */
static guint32
ref_hash (const RefFields *f)
{
  guint32 absent = 0xffffffffu;
  guint32 sport = f->sport >= 0 ? (guint32) f->sport : absent;
  guint32 dport = f->dport >= 0 ? (guint32) f->dport : absent;
  guint32 h = sport << 16 ^ dport;

  h ^= f->ipv4 ? f->src ^ f->dst ^ f->proto : absent ^ absent ^ absent;
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

/* ------------------------------------------------------------------------------------ */
/* a classic BPF interpreter with the kernel's rules */

/* What the kernel keeps beside the frame, and where skb->data points into it. */
typedef struct {
  guint32 vlan_present;
  guint32 vlan_tci;
  guint32 rxhash;
  guint32 pkttype;              /* PACKET_HOST ... PACKET_OUTGOING */
  guint data_offset;            /* 14 for a received packet in a fanout program, else 0 */
} BpfAux;

static guint
load_size (guint16 code)
{
  switch (BPF_SIZE (code)) {
    case BPF_W:
      return 4;
    case BPF_H:
      return 2;
    default:
      return 1;
  }
}

static gboolean
bpf_load (const guint8 *pkt, guint len, guint64 offset, guint size, guint32 *out)
{
  guint32 v = 0;
  guint i;

  if (offset + size > len)
    return FALSE;
  for (i = 0; i < size; i++)
    v = v << 8 | pkt[offset + i];
  *out = v;
  return TRUE;
}

static guint32
bpf_ancillary (const BpfAux *aux, guint32 what)
{
  switch (what) {
    case SKF_AD_VLAN_TAG_PRESENT:
      return aux->vlan_present;
    case SKF_AD_VLAN_TAG:
      return aux->vlan_tci;
    case SKF_AD_RXHASH:
      return aux->rxhash;
    case SKF_AD_PKTTYPE:
      return aux->pkttype;
    default:
      g_error ("unexpected ancillary load %u", what);
  }
  return 0;
}

static guint32
bpf_alu (guint op, guint32 a, guint32 operand, gboolean *div_zero)
{
  switch (op) {
    case BPF_ADD:
      return a + operand;
    case BPF_SUB:
      return a - operand;
    case BPF_MUL:
      return a * operand;
    case BPF_DIV:
      *div_zero = operand == 0;
      return operand ? a / operand : 0;
    case BPF_MOD:
      *div_zero = operand == 0;
      return operand ? a % operand : 0;
    case BPF_AND:
      return a & operand;
    case BPF_OR:
      return a | operand;
    case BPF_XOR:
      return a ^ operand;
    case BPF_LSH:
      return operand < 32 ? a << operand : 0;
    case BPF_RSH:
      return operand < 32 ? a >> operand : 0;
    case BPF_NEG:
      return -a;
    default:
      g_error ("unexpected ALU op 0x%x", op);
  }
  return 0;
}

static gboolean
bpf_jump_taken (guint op, guint32 a, guint32 operand)
{
  switch (op) {
    case BPF_JEQ:
      return a == operand;
    case BPF_JGT:
      return a > operand;
    case BPF_JGE:
      return a >= operand;
    case BPF_JSET:
      return (a & operand) != 0;
    default:
      g_error ("unexpected jump op 0x%x", op);
  }
  return FALSE;
}

/* A packet load at `offset` as the kernel resolves it: from skb->data when it is not
 * negative, from the MAC header (the frame's first byte) at SKF_LL_OFF. */
static gboolean
bpf_load_packet (const guint8 *frame, guint frame_len, const BpfAux *aux, gint32 offset,
    guint size, guint32 *out)
{
  if (offset >= 0)
    return bpf_load (frame + aux->data_offset, frame_len - aux->data_offset,
        (guint64) offset, size, out);
  if (offset >= SKF_NET_OFF)
    g_error ("unexpected network-relative load %d", offset);
  if (offset < SKF_LL_OFF)
    return FALSE;
  return bpf_load (frame, frame_len, (guint64) (offset - SKF_LL_OFF), size, out);
}

/* Runs the program on the frame (which starts at its Ethernet header); a load outside
 * the frame ends it with 0, as in the kernel. */
static guint32
bpf_run (const struct sock_filter *prog, guint n, const guint8 *frame, guint frame_len,
    const BpfAux *aux)
{
  guint32 a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
  guint len = frame_len - aux->data_offset;     /* skb->len */
  guint pc = 0;

  g_assert_cmpuint (aux->data_offset, <=, frame_len);

  for (;;) {
    const struct sock_filter *in;
    gboolean div_zero = FALSE;
    guint32 operand;

    g_assert_cmpuint (pc, <, n);
    in = &prog[pc++];
    operand = BPF_SRC (in->code) == BPF_X ? x : in->k;

    switch (BPF_CLASS (in->code)) {
      case BPF_LD:
        switch (BPF_MODE (in->code)) {
          case BPF_ABS:
            if (in->k >= (guint32) SKF_AD_OFF)
              a = bpf_ancillary (aux, in->k - (guint32) SKF_AD_OFF);
            else if (!bpf_load_packet (frame, frame_len, aux, (gint32) in->k,
                    load_size (in->code), &a))
              return 0;
            break;
          case BPF_IND:
            /* the kernel adds in 32 bits and reads the sum as signed */
            if (!bpf_load_packet (frame, frame_len, aux, (gint32) (x + in->k),
                    load_size (in->code), &a))
              return 0;
            break;
          case BPF_LEN:
            a = len;
            break;
          case BPF_IMM:
            a = in->k;
            break;
          case BPF_MEM:
            g_assert_cmpuint (in->k, <, BPF_MEMWORDS);
            a = mem[in->k];
            break;
          default:
            g_error ("unexpected load 0x%x", in->code);
        }
        break;
      case BPF_LDX:
        switch (BPF_MODE (in->code)) {
          case BPF_IMM:
            x = in->k;
            break;
          case BPF_MEM:
            g_assert_cmpuint (in->k, <, BPF_MEMWORDS);
            x = mem[in->k];
            break;
          case BPF_LEN:
            x = len;
            break;
          case BPF_MSH:
            if (in->k >= len)
              return 0;
            x = 4u * (frame[aux->data_offset + in->k] & 0xf);
            break;
          default:
            g_error ("unexpected ldx 0x%x", in->code);
        }
        break;
      case BPF_ST:
        g_assert_cmpuint (in->k, <, BPF_MEMWORDS);
        mem[in->k] = a;
        break;
      case BPF_STX:
        g_assert_cmpuint (in->k, <, BPF_MEMWORDS);
        mem[in->k] = x;
        break;
      case BPF_ALU:
        a = bpf_alu (BPF_OP (in->code), a, operand, &div_zero);
        if (div_zero)
          return 0;
        break;
      case BPF_JMP:
        if (BPF_OP (in->code) == BPF_JA)
          pc += in->k;
        else
          pc += bpf_jump_taken (BPF_OP (in->code), a, operand) ? in->jt : in->jf;
        break;
      case BPF_RET:
        return BPF_RVAL (in->code) == BPF_A ? a : in->k;
      case BPF_MISC:
        if (BPF_MISCOP (in->code) == BPF_TAX)
          x = a;
        else
          a = x;
        break;
      default:
        g_error ("unexpected class 0x%x", in->code);
    }
  }
}

/* The checks of the kernel's bpf_check_classic(): size, jumps inside the program,
 * a final return, and no read of scratch memory that some path leaves unwritten. */
static void
assert_program_valid (const struct sock_filter *prog, guint n)
{
  guint16 *valid_at;
  guint16 valid = 0;
  guint pc;

  g_assert_cmpuint (n, >=, 1);
  g_assert_cmpuint (n, <=, BPF_MAXINSNS);
  g_assert_cmpuint (BPF_CLASS (prog[n - 1].code), ==, BPF_RET);
  valid_at = g_new (guint16, n);
  memset (valid_at, 0xff, n * sizeof (guint16));
  for (pc = 0; pc < n; pc++) {
    const struct sock_filter *in = &prog[pc];

    valid &= valid_at[pc];
    switch (BPF_CLASS (in->code)) {
      case BPF_ST:
      case BPF_STX:
        g_assert_cmpuint (in->k, <, BPF_MEMWORDS);
        valid |= 1u << in->k;
        break;
      case BPF_LD:
      case BPF_LDX:
        if (BPF_MODE (in->code) == BPF_MEM) {
          g_assert_cmpuint (in->k, <, BPF_MEMWORDS);
          g_assert_true (valid & (1u << in->k));
        }
        break;
      case BPF_JMP:
        if (BPF_OP (in->code) == BPF_JA) {
          g_assert_cmpuint (in->k, <, n - pc - 1);
          valid_at[pc + 1 + in->k] &= valid;
        } else {
          g_assert_cmpuint (pc + 1 + in->jt, <, n);
          g_assert_cmpuint (pc + 1 + in->jf, <, n);
          valid_at[pc + 1 + in->jt] &= valid;
          valid_at[pc + 1 + in->jf] &= valid;
        }
        valid = 0xffff;
        break;
      default:
        break;
    }
  }
  g_free (valid_at);
}

static struct sock_filter *
compile_ok (const DqFlowRule *rules, guint n_rules, DqFlowBpfKind kind, int queue,
    guint32 snaplen, guint *n_insns)
{
  GError *error = NULL;
  struct sock_filter *prog = dq_flow_compile_bpf (rules, n_rules, kind, queue, snaplen,
      n_insns, &error);

  g_assert_no_error (error);
  g_assert_nonnull (prog);
  assert_program_valid (prog, *n_insns);
  return prog;
}

/* ------------------------------------------------------------------------------------ */
/* BPF against the software matcher */

typedef struct {
  const DqFlowRule *rules;
  guint n_rules;
  int queue;                    /* the filter's queue */
  DqFlowRule queue_rules[64];   /* rules that count for `queue` */
  guint n_queue_rules;
  DqFlowRule fanout_rules[64];  /* rules with a queue key */
  guint n_fanout_rules;
  guint32 snaplen;
  struct sock_filter *filter_all, *filter_queue, *fanout;
  guint n_filter_all, n_filter_queue, n_fanout;
} ProgramSet;

static void
program_set_init (ProgramSet *ps, const DqFlowRule *rules, guint n, int queue,
    guint32 snaplen)
{
  guint i;

  g_assert_cmpuint (n, <=, G_N_ELEMENTS (ps->queue_rules));
  memset (ps, 0, sizeof *ps);
  ps->rules = rules;
  ps->n_rules = n;
  ps->queue = queue;
  ps->snaplen = snaplen;
  for (i = 0; i < n; i++) {
    if (!(rules[i].keys & DQ_FLOW_QUEUE) || rules[i].queue == queue)
      ps->queue_rules[ps->n_queue_rules++] = rules[i];
    if (rules[i].keys & DQ_FLOW_QUEUE)
      ps->fanout_rules[ps->n_fanout_rules++] = rules[i];
  }
  ps->filter_all = compile_ok (rules, n, DQ_FLOW_BPF_FILTER, -1, snaplen,
      &ps->n_filter_all);
  ps->filter_queue = compile_ok (rules, n, DQ_FLOW_BPF_FILTER, queue, snaplen,
      &ps->n_filter_queue);
  ps->fanout = compile_ok (rules, n, DQ_FLOW_BPF_FANOUT, queue, snaplen, &ps->n_fanout);
}

static void
program_set_clear (ProgramSet *ps)
{
  g_free (ps->filter_all);
  g_free (ps->filter_queue);
  g_free (ps->fanout);
}

typedef struct {
  guint frames;
  guint accepted;
  guint queued;
  guint hashed_sw;
} Tally;

/* One frame through the three programs, against dq_flow_match and the reference. */
static void
check_frame (const ProgramSet *ps, const guint8 *frame, guint len, const BpfAux *aux,
    Tally *tally)
{
  int vlan = aux->vlan_present ? (int) (aux->vlan_tci & 0x0fff) : -1;
  guint8 *copy = g_memdup2 (frame, len);
  RefFields ref;
  BpfAux fanout_aux;
  int m, m_queue, m_fanout;
  guint32 got, want;

  g_assert_cmpuint (aux->data_offset, ==, 0);
  ref_fields (copy, len, vlan, &ref);
  m = dq_flow_match (ps->rules, ps->n_rules, copy, len, vlan);
  g_assert_cmpint (m, ==, ref_match (ps->rules, ps->n_rules, &ref));

  got = bpf_run (ps->filter_all, ps->n_filter_all, copy, len, aux);
  want = ps->n_rules == 0 || m >= 0 ? ps->snaplen : 0;
  g_assert_cmpuint (got, ==, want);
  tally->accepted += want != 0;

  m_queue = dq_flow_match (ps->queue_rules, ps->n_queue_rules, copy, len, vlan);
  got = bpf_run (ps->filter_queue, ps->n_filter_queue, copy, len, aux);
  want = ps->n_rules == 0 || m_queue >= 0 ? ps->snaplen : 0;
  g_assert_cmpuint (got, ==, want);

  /* a fanout program sees received packets with the Ethernet header pulled */
  fanout_aux = *aux;
  if (aux->pkttype != PACKET_OUTGOING && len >= 14)
    fanout_aux.data_offset = 14;
  else
    fanout_aux.pkttype = PACKET_OUTGOING;
  m_fanout = dq_flow_match (ps->fanout_rules, ps->n_fanout_rules, copy, len, vlan);
  got = bpf_run (ps->fanout, ps->n_fanout, copy, len, &fanout_aux);
  if (m_fanout >= 0) {
    want = ps->fanout_rules[m_fanout].queue;
    tally->queued++;
  } else if (aux->rxhash) {
    want = aux->rxhash;
  } else {
    want = ref_hash (&ref);
    tally->hashed_sw++;
  }
  g_assert_cmpuint (got, ==, want);
  tally->frames++;
  g_free (copy);
}

/* A frame from the same small value pools as random_rule(), often broken. */
static guint
random_frame (guint8 *frame, BpfAux *aux)
{
  static const guint16 frags[] = { 0, 0, 0, 0x2000, 0x4000, 0x0001, 0x2001, 0x1fff };
  static const guint16 tpids[] = { 0x8100, 0x8100, 0x88a8, 0x9100 };
  FrameSpec s;
  guint len, i;

  memset (&s, 0, sizeof s);
  s.ethertype = chance (75) ? 0x0800 : PICK (pool_ethertype);
  if (chance (25)) {
    s.tag_tpid = PICK (tpids);
    s.tag_tci = (guint16) (g_test_rand_int_range (0, 16) << 12 | PICK (pool_vlan));
  }
  s.version = chance (95) ? 4 : (guint8) g_test_rand_int_range (0, 16);
  s.ihl = chance (80) ? 5 : (guint8) g_test_rand_int_range (0, 16);
  s.proto = chance (90) ? PICK (pool_proto) : (guint8) g_test_rand_int_range (0, 256);
  s.frag = chance (90) ? PICK (frags) : (guint16) g_test_rand_int_range (0, 0x10000);
  s.src = chance (90) ? PICK (pool_addr) : (guint32) g_test_rand_int ();
  s.dst = chance (90) ? PICK (pool_addr) : (guint32) g_test_rand_int ();
  s.sport = chance (90) ? PICK (pool_port) : (guint16) g_test_rand_int_range (0, 65536);
  s.dport = chance (90) ? PICK (pool_port) : (guint16) g_test_rand_int_range (0, 65536);
  s.payload = (guint) g_test_rand_int_range (0, 40);
  len = build_frame (&s, frame);

  if (chance (30))
    len = (guint) g_test_rand_int_range (0, (gint32) len + 1);
  if (chance (5)) {
    for (i = 0; i < 3 && len > 0; i++)
      frame[g_test_rand_int_range (0, (gint32) len)] = (guint8) g_test_rand_int ();
  }

  memset (aux, 0, sizeof *aux);
  if (chance (30)) {
    aux->vlan_present = 1;
    aux->vlan_tci = (guint32) (g_test_rand_int_range (0, 16) << 12 | PICK (pool_vlan));
  }
  aux->rxhash = chance (40) ? 0 : (guint32) g_test_rand_int ();
  aux->pkttype = chance (50) ? PACKET_OUTGOING : (guint32) g_test_rand_int_range (0, 4);
  return len;
}

/* The crafted frames of the match tests, at every length, with and without a stripped
 * tag. */
static void
check_crafted_frames (const ProgramSet *ps, Tally *tally)
{
  static const guint16 tpids[] = { 0, 0x8100, 0x88a8 };
  guint t, ihl, len, full, stripped;
  guint8 frame[FRAME_MAX];

  for (t = 0; t < G_N_ELEMENTS (tpids); t++) {
    for (ihl = 4; ihl <= 7; ihl++) {
      FrameSpec s = ipv4_spec ((guint8) PICK (pool_proto), PICK (pool_addr),
          PICK (pool_addr), PICK (pool_port), PICK (pool_port));

      s.tag_tpid = tpids[t];
      s.tag_tci = PICK (pool_vlan);
      s.ihl = (guint8) ihl;
      s.payload = 2;
      full = build_frame (&s, frame);
      for (stripped = 0; stripped < 2; stripped++) {
        BpfAux aux = { stripped, 0x2000u | PICK (pool_vlan), 0, 0, 0 };

        for (len = 0; len <= full; len++) {
          aux.rxhash = len % 3 ? (guint32) g_test_rand_int () : 0;
          aux.pkttype = len % 2 ? PACKET_HOST : PACKET_OUTGOING;
          check_frame (ps, frame, len, &aux, tally);
        }
      }
    }
  }
}

static void
test_bpf_equivalence (void)
{
  static const guint sizes[] = { 0, 1, 1, 2, 2, 3, 4, 6, 10, 24 };
  const guint n_sets = 1000, frames_per_set = 110;
  Tally tally = { 0 };
  guint set, i;

  for (set = 0; set < n_sets; set++) {
    DqFlowRule rules[24];
    ProgramSet ps;
    guint n = PICK (sizes);
    int queue = g_test_rand_int_range (0, 4);
    guint32 snaplen =
        chance (50) ? 0xffffffffu : (guint32) g_test_rand_int_range (1, 9000);
    int percent = PICK (((const int[]) { 15, 25, 40 }));

    for (i = 0; i < n; i++) {
      rules[i] = random_rule (percent, 4);
      assert_round_trip (&rules[i]);    /* a rule the parser accepts */
    }
    program_set_init (&ps, rules, n, queue, snaplen);
    for (i = 0; i < frames_per_set; i++) {
      guint8 frame[FRAME_MAX];
      BpfAux aux;
      guint len = random_frame (frame, &aux);

      check_frame (&ps, frame, len, &aux, &tally);
    }
    if (set % 50 == 0)
      check_crafted_frames (&ps, &tally);
    program_set_clear (&ps);
  }
  g_test_message ("%u frames: %u accepted, %u sent to a rule's queue, %u hashed in BPF",
      tally.frames, tally.accepted, tally.queued, tally.hashed_sw);
  g_assert_cmpuint (tally.frames, >=, 100000);
  /* the pools must make both outcomes common, or the comparison proves little */
  g_assert_cmpuint (tally.accepted, >, tally.frames / 5);
  g_assert_cmpuint (tally.accepted, <, tally.frames - tally.frames / 5);
  g_assert_cmpuint (tally.queued, >, tally.frames / 20);
  g_assert_cmpuint (tally.hashed_sw, >, tally.frames / 20);
}

/* Exact programs for the simplest cases. */
static void
test_bpf_trivial (void)
{
  DqFlowRule rules[2];
  struct sock_filter *prog;
  guint8 frame[FRAME_MAX];
  BpfAux aux = { 0, 0, 0, PACKET_OUTGOING, 0 };
  guint n, len;
  FrameSpec s = ipv4_spec (17, IP4 (10, 0, 0, 1), IP4 (10, 0, 0, 2), 1, 2);

  len = build_frame (&s, frame);

  /* no rules: accept all, one instruction */
  prog = compile_ok (NULL, 0, DQ_FLOW_BPF_FILTER, -1, 1500, &n);
  g_assert_cmpuint (n, ==, 1);
  g_assert_cmpuint (prog[0].code, ==, BPF_RET | BPF_K);
  g_assert_cmpuint (prog[0].k, ==, 1500);
  g_assert_cmpuint (bpf_run (prog, n, NULL, 0, &aux), ==, 1500);
  g_free (prog);

  /* only rules of another queue: nothing is for this queue */
  rules[0] = parse_one ("dst-port=2 queue=1");
  rules[1] = parse_one ("dst-port=3 queue=2");
  prog = compile_ok (rules, 2, DQ_FLOW_BPF_FILTER, 0, 1500, &n);
  g_assert_cmpuint (n, ==, 1);
  g_assert_cmpuint (prog[0].k, ==, 0);
  g_free (prog);
  prog = compile_ok (rules, 2, DQ_FLOW_BPF_FILTER, 1, 1500, &n);
  g_assert_cmpuint (bpf_run (prog, n, frame, len, &aux), ==, 1500);
  g_free (prog);
  prog = compile_ok (rules, 2, DQ_FLOW_BPF_FANOUT, -1, 0, &n);
  g_assert_cmpuint (bpf_run (prog, n, frame, len, &aux), ==, 1);
  aux.rxhash = 77;
  s.dport = 3;
  len = build_frame (&s, frame);
  g_assert_cmpuint (bpf_run (prog, n, frame, len, &aux), ==, 2);
  s.dport = 4;
  len = build_frame (&s, frame);
  g_assert_cmpuint (bpf_run (prog, n, frame, len, &aux), ==, 77);
  g_free (prog);

  /* a rule without match keys ends the program early */
  rules[0] = parse_one ("mark=3");
  rules[1] = parse_one ("dst-port=3");
  prog = compile_ok (rules, 2, DQ_FLOW_BPF_FILTER, -1, 100, &n);
  g_assert_cmpuint (bpf_run (prog, n, NULL, 0, &aux), ==, 100);
  g_assert_cmpuint (prog[n - 1].code, ==, BPF_RET | BPF_K);
  g_assert_cmpuint (prog[n - 1].k, ==, 100);
  g_free (prog);
}

/* The fallback hash spreads flows when the kernel gives no receive hash. */
static void
test_bpf_fanout_hash (void)
{
  struct sock_filter *prog;
  guint n, i, counts[4] = { 0 };
  BpfAux aux = { 0, 0, 0, PACKET_OUTGOING, 0 };
  guint8 frame[FRAME_MAX];

  prog = compile_ok (NULL, 0, DQ_FLOW_BPF_FANOUT, -1, 0, &n);
  for (i = 0; i < 4000; i++) {
    FrameSpec s = ipv4_spec (17, IP4 (10, 0, 0, 1), IP4 (10, 0, 0, 2), 40000,
        (guint16) (5000 + i));
    guint len = build_frame (&s, frame);
    RefFields ref;
    guint32 h = bpf_run (prog, n, frame, len, &aux);

    ref_fields (frame, len, -1, &ref);
    g_assert_cmpuint (h, ==, ref_hash (&ref));
    counts[h % 4]++;
    /* the same flow, another packet: the same member */
    s.payload = 30;
    len = build_frame (&s, frame);
    g_assert_cmpuint (bpf_run (prog, n, frame, len, &aux), ==, h);
  }
  for (i = 0; i < 4; i++)
    g_assert_cmpuint (counts[i], >, 800);       /* 1000 each, if uniform */

  /* flows that differ only in the high bits of an address spread too */
  memset (counts, 0, sizeof counts);
  for (i = 0; i < 256; i++) {
    FrameSpec s = ipv4_spec (6, IP4 (i, 0, 0, 1), IP4 (10, 0, 0, 2), 1, 2);
    guint len = build_frame (&s, frame);

    counts[bpf_run (prog, n, frame, len, &aux) % 4]++;
  }
  for (i = 0; i < 4; i++)
    g_assert_cmpuint (counts[i], >, 32);
  g_free (prog);
}

/* 256 rules of every key: within BPF_MAXINSNS, and the last rule still reachable. */
static DqFlowRule *
big_rule_set (guint *n)
{
  GString *text = g_string_new (NULL);
  DqFlowRule *rules;
  guint i;

  for (i = 0; i < DQ_FLOW_MAX_RULES; i++)
    g_string_append_printf (text, "vlan=%u proto=udp src=10.%u.0.0/16 "
        "dst=192.168.%u.0/24 src-port=%u dst-port=%u mark=%u queue=%u;", i, i, i,
        1000 + i, 2000 + i, i, i % 4);
  rules = parse_ok (text->str, n);
  g_assert_cmpuint (*n, ==, DQ_FLOW_MAX_RULES);
  g_string_free (text, TRUE);
  return rules;
}

static void
test_bpf_long_programs (void)
{
  guint n_rules, n, i;
  DqFlowRule *rules = big_rule_set (&n_rules), *more;
  struct sock_filter *prog;
  GError *error = NULL;
  guint8 frame[FRAME_MAX];
  BpfAux aux = { 1, 255, 99, PACKET_OUTGOING, 0 };
  FrameSpec s = ipv4_spec (17, IP4 (10, 255, 3, 4), IP4 (192, 168, 255, 9), 1255, 2255);
  guint len = build_frame (&s, frame);

  prog = compile_ok (rules, n_rules, DQ_FLOW_BPF_FILTER, -1, 9000, &n);
  g_test_message ("256 rules: %u filter instructions", n);
  g_assert_cmpuint (n, >, 3800);
  g_assert_cmpuint (bpf_run (prog, n, frame, len, &aux), ==, 9000);
  aux.vlan_tci = 254;
  g_assert_cmpuint (bpf_run (prog, n, frame, len, &aux), ==, 0);
  g_free (prog);

  aux.vlan_tci = 255;
  prog = compile_ok (rules, n_rules, DQ_FLOW_BPF_FANOUT, -1, 0, &n);
  g_test_message ("256 rules: %u fanout instructions", n);
  g_assert_cmpuint (bpf_run (prog, n, frame, len, &aux), ==, 255 % 4);
  aux.vlan_tci = 254;
  g_assert_cmpuint (bpf_run (prog, n, frame, len, &aux), ==, 99);
  g_free (prog);

  /* more rules than fit (built by hand: the parser stops at 256) */
  more = g_new (DqFlowRule, 300);
  for (i = 0; i < 300; i++)
    more[i] = rules[i % n_rules];
  g_assert_null (dq_flow_compile_bpf (more, 300, DQ_FLOW_BPF_FILTER, -1, 100, &n,
          &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_FLOW);
  g_assert_nonnull (strstr (error->message, "300 flow rules need more than 4096 BPF "
          "instructions"));
  g_clear_error (&error);
  g_free (more);
  g_free (rules);
}

/* ------------------------------------------------------------------------------------ */
/* the kernel */

static void
attach_filter (int fd, const struct sock_filter *prog, guint n)
{
  struct sock_fprog fprog;

  memset (&fprog, 0, sizeof fprog);     /* padding too: it goes to the kernel */
  fprog.len = (unsigned short) n;
  fprog.filter = (struct sock_filter *) prog;
  if (setsockopt (fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog) != 0)
    g_error ("SO_ATTACH_FILTER of %u instructions: %s", n, g_strerror (errno));
}

/* The kernel's checker accepts every program we make (no privilege needed). */
static void
test_bpf_kernel_accepts (void)
{
  guint n_rules, n, set, i;
  DqFlowRule *big = big_rule_set (&n_rules);
  int fd = socket (AF_INET, SOCK_DGRAM, 0);
  struct sock_filter *prog;

  g_assert_cmpint (fd, >=, 0);
  prog = compile_ok (big, n_rules, DQ_FLOW_BPF_FILTER, -1, 0xffffffffu, &n);
  attach_filter (fd, prog, n);
  g_free (prog);
  prog = compile_ok (big, n_rules, DQ_FLOW_BPF_FILTER, 2, 0xffffffffu, &n);
  attach_filter (fd, prog, n);
  g_free (prog);
  /* the same checker guards PACKET_FANOUT_DATA */
  prog = compile_ok (big, n_rules, DQ_FLOW_BPF_FANOUT, -1, 0, &n);
  attach_filter (fd, prog, n);
  g_free (prog);
  g_free (big);

  for (set = 0; set < 200; set++) {
    DqFlowRule rules[16];
    guint n_set = (guint) g_test_rand_int_range (0, 17);

    for (i = 0; i < n_set; i++)
      rules[i] = random_rule (30, 4);
    prog = compile_ok (rules, n_set, set % 2 ? DQ_FLOW_BPF_FANOUT : DQ_FLOW_BPF_FILTER,
        g_test_rand_int_range (-1, 4), 1500, &n);
    attach_filter (fd, prog, n);
    g_free (prog);
  }
  close (fd);
}

static int
udp_receiver (guint16 *port)
{
  struct sockaddr_in sin = { 0 };
  socklen_t sin_len = sizeof sin;
  int fd = socket (AF_INET, SOCK_DGRAM, 0);

  g_assert_cmpint (fd, >=, 0);
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  g_assert_cmpint (bind (fd, (struct sockaddr *) &sin, sizeof sin), ==, 0);
  g_assert_cmpint (getsockname (fd, (struct sockaddr *) &sin, &sin_len), ==, 0);
  *port = ntohs (sin.sin_port);
  return fd;
}

static void
send_udp (int fd, guint16 port, guint32 seq)
{
  struct sockaddr_in sin = { 0 };
  guint8 payload[100];

  memset (payload, 0x5a, sizeof payload);
  put32 (payload, seq);
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  sin.sin_port = htons (port);
  g_assert_cmpint (sendto (fd, payload, sizeof payload, 0, (struct sockaddr *) &sin,
          sizeof sin), ==, sizeof payload);
}

/* A packet socket on lo, or -1 without CAP_NET_RAW. Bound with no protocol first, so
 * that nothing queues before the filter is on. */
static int
packet_socket_lo (void)
{
  int fd = socket (AF_PACKET, SOCK_RAW, 0);

  if (fd < 0 && (errno == EPERM || errno == EACCES || errno == EAFNOSUPPORT))
    return -1;
  g_assert_cmpint (fd, >=, 0);
  return fd;
}

static void
bind_lo (int fd)
{
  struct sockaddr_ll sll = { 0 };

  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons (ETH_P_ALL);
  sll.sll_ifindex = (int) if_nametoindex ("lo");
  g_assert_cmpint (sll.sll_ifindex, >, 0);
  g_assert_cmpint (bind (fd, (struct sockaddr *) &sll, sizeof sll), ==, 0);
}

typedef void (*FrameFunc) (const guint8 *frame, guint len, gssize wire, gpointer data);

/* Reads frames until none came for 200 ms. */
static void
drain (int fd, FrameFunc func, gpointer data)
{
  guint8 buf[2048];
  struct pollfd pfd = { fd, POLLIN, 0 };

  while (poll (&pfd, 1, 200) > 0) {
    gssize r = recv (fd, buf, sizeof buf, MSG_DONTWAIT | MSG_TRUNC);

    if (r < 0)
      break;
    if (func)
      func (buf, (guint) MIN ((gsize) r, sizeof buf), r, data);
  }
}

typedef struct {
  guint16 port;                 /* the flow's destination port */
  guint32 seen;                 /* bit i: packet with sequence number i */
  guint others;                 /* UDP frames to another of our ports */
  guint16 other_ports[24];
  guint16 *flow_ports;          /* ports of flows that no rule names */
  guint n_flow_ports;
  guint flows_seen;             /* bit i: a frame of flow_ports[i] */
  gssize min_len, max_len;
} Capture;

static void
capture_frame (const guint8 *frame, guint len, gssize wire, gpointer data)
{
  Capture *c = data;
  RefFields ref;
  guint i;

  ref_fields (frame, len, -1, &ref);
  if (!ref.ipv4 || ref.proto != 17 || ref.dport < 0)
    return;
  for (i = 0; i < c->n_flow_ports; i++)
    if (ref.dport == c->flow_ports[i])
      c->flows_seen |= 1u << i;
  for (i = 0; i < G_N_ELEMENTS (c->other_ports); i++)
    if (c->other_ports[i] && ref.dport == c->other_ports[i])
      c->others++;
  if (ref.dport != c->port)
    return;
  c->min_len = c->min_len ? MIN (c->min_len, wire) : wire;
  c->max_len = MAX (c->max_len, wire);
  /* payload after 14 + 20 + 8 bytes: the sequence number */
  if (len >= 46)
    c->seen |= 1u << (be16_at (frame + 44) & 31);
}

/* A filter on a real packet socket: only the flow's packets come, cut to snaplen. */
static void
test_bpf_kernel_filter (void)
{
  int fd = packet_socket_lo (), tx, rx1, rx2;
  guint16 p1, p2;
  guint n_rules, n, i;
  DqFlowRule *rules;
  struct sock_filter *prog;
  g_autofree char *text = NULL;
  Capture c = { 0 };

  if (fd < 0) {
    g_test_skip ("no CAP_NET_RAW: cannot open an AF_PACKET socket");
    return;
  }
  rx1 = udp_receiver (&p1);
  rx2 = udp_receiver (&p2);
  tx = socket (AF_INET, SOCK_DGRAM, 0);
  text = g_strdup_printf ("proto=udp dst=127.0.0.1 dst-port=%u mark=1", p1);
  rules = parse_ok (text, &n_rules);
  prog = compile_ok (rules, n_rules, DQ_FLOW_BPF_FILTER, -1, 64, &n);
  attach_filter (fd, prog, n);
  bind_lo (fd);

  for (i = 0; i < 8; i++) {
    send_udp (tx, p2, i);
    send_udp (tx, p1, i);
  }
  c.port = p1;
  c.other_ports[0] = p2;
  drain (fd, capture_frame, &c);
  g_assert_cmphex (c.seen, ==, 0xff);
  g_assert_cmpuint (c.others, ==, 0);
  /* 14 + 20 + 8 + 100 bytes on the wire, cut to the filter's 64 */
  g_assert_cmpint (c.min_len, ==, 64);
  g_assert_cmpint (c.max_len, ==, 64);

  g_free (prog);
  g_free (rules);
  close (fd);
  close (tx);
  close (rx1);
  close (rx2);
}

/* PACKET_FANOUT_CBPF: rule flows to their queue, the rest spread by hash. */
static void
test_bpf_kernel_fanout (void)
{
  int fds[2], tx, rx[2 + 16];
  guint16 ports[2 + 16];
  Capture c[2];
  guint n_rules, n, i, j;
  DqFlowRule *rules;
  struct sock_filter *prog;
  struct sock_fprog fprog;
  g_autofree char *text = NULL;
  int group = (getpid () & 0xffff) | (PACKET_FANOUT_CBPF << 16);

  fds[0] = packet_socket_lo ();
  if (fds[0] < 0) {
    g_test_skip ("no CAP_NET_RAW: cannot open an AF_PACKET socket");
    return;
  }
  fds[1] = packet_socket_lo ();
  for (i = 0; i < G_N_ELEMENTS (rx); i++)
    rx[i] = udp_receiver (&ports[i]);
  tx = socket (AF_INET, SOCK_DGRAM, 0);

  /* member 1 gets ports[0], member 0 gets ports[1] */
  text = g_strdup_printf ("dst-port=%u queue=1; proto=udp dst-port=%u queue=0; "
      "dst-port=%u", ports[0], ports[1], ports[2]);
  rules = parse_ok (text, &n_rules);
  prog = compile_ok (rules, n_rules, DQ_FLOW_BPF_FANOUT, -1, 0, &n);
  memset (&fprog, 0, sizeof fprog);
  fprog.len = (unsigned short) n;
  fprog.filter = prog;
  for (i = 0; i < 2; i++) {
    bind_lo (fds[i]);
    if (setsockopt (fds[i], SOL_PACKET, PACKET_FANOUT, &group, sizeof group) != 0)
      g_error ("PACKET_FANOUT: %s", g_strerror (errno));
  }
  if (setsockopt (fds[0], SOL_PACKET, PACKET_FANOUT_DATA, &fprog, sizeof fprog) != 0)
    g_error ("PACKET_FANOUT_DATA: %s", g_strerror (errno));
  for (i = 0; i < 2; i++)
    drain (fds[i], NULL, NULL);

  for (i = 0; i < 16; i++) {
    send_udp (tx, ports[0], i);
    send_udp (tx, ports[1], i);
    send_udp (tx, ports[2 + i], i);
  }
  for (i = 0; i < 2; i++) {
    memset (&c[i], 0, sizeof c[i]);
    c[i].port = ports[1 - i];
    c[i].other_ports[0] = ports[i];
    c[i].flow_ports = ports + 2;
    c[i].n_flow_ports = 16;
    drain (fds[i], capture_frame, &c[i]);
  }
  for (i = 0; i < 2; i++) {
    g_assert_cmphex (c[i].seen, ==, 0xffff);
    g_assert_cmpuint (c[i].others, ==, 0);
    /* the flows no queue rule names are spread over both members */
    g_assert_cmphex (c[i].flows_seen, !=, 0);
  }
  g_assert_cmphex (c[0].flows_seen | c[1].flows_seen, ==, 0xffff);

  g_free (prog);
  g_free (rules);
  for (j = 0; j < 2; j++)
    close (fds[j]);
  for (i = 0; i < G_N_ELEMENTS (rx); i++)
    close (rx[i]);
  close (tx);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/flow/parse/empty", test_parse_empty);
  g_test_add_func ("/flow/parse/valid-values", test_parse_valid_values);
  g_test_add_func ("/flow/parse/invalid-values", test_parse_invalid_values);
  g_test_add_func ("/flow/parse/structure-errors", test_parse_structure_errors);
  g_test_add_func ("/flow/parse/whitespace", test_parse_whitespace);
  g_test_add_func ("/flow/parse/rule-count", test_parse_rule_count);
  g_test_add_func ("/flow/parse/huge", test_parse_huge);
  g_test_add_func ("/flow/parse/fuzz", test_parse_fuzz);
  g_test_add_func ("/flow/to-string/canonical", test_to_string_canonical);
  g_test_add_func ("/flow/to-string/round-trip", test_to_string_round_trip);
  g_test_add_func ("/flow/match/protocols", test_match_protocols);
  g_test_add_func ("/flow/match/vlan", test_match_vlan);
  g_test_add_func ("/flow/match/ipv4-options", test_match_ipv4_options);
  g_test_add_func ("/flow/match/bad-ipv4", test_match_bad_ipv4);
  g_test_add_func ("/flow/match/fragments", test_match_fragments);
  g_test_add_func ("/flow/match/truncated", test_match_truncated);
  g_test_add_func ("/flow/match/non-ipv4", test_match_non_ipv4);
  g_test_add_func ("/flow/bpf/trivial", test_bpf_trivial);
  g_test_add_func ("/flow/bpf/equivalence", test_bpf_equivalence);
  g_test_add_func ("/flow/bpf/fanout-hash", test_bpf_fanout_hash);
  g_test_add_func ("/flow/bpf/long-programs", test_bpf_long_programs);
  g_test_add_func ("/flow/bpf/kernel-accepts", test_bpf_kernel_accepts);
  g_test_add_func ("/flow/bpf/kernel-filter", test_bpf_kernel_filter);
  g_test_add_func ("/flow/bpf/kernel-fanout", test_bpf_kernel_fanout);

  return g_test_run ();
}
