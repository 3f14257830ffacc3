/* Tests of the flow-rule module's parser and its messages, the canonical text, the
 * software matcher on hand-built frames (the classic BPF programs: test-flow-bpf.c), and the
 * per-flow receive counters. */
#include "flow-test-util.h"
#include "flow-counters.h"

#include <string.h>

/* ------------------------------------------------------------------------------------ */
/* parser helpers */



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
  DqFlowRule *rules = (DqFlowRule *) &error; /* must be reset to NULL */
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

/* Parsing `text` fails with a message that holds each of `parts` (up to a NULL). */
static void
expect_error (const char *text, const char *const *parts)
{
  char *message = parse_error (text);

  for (; *parts != NULL; parts++) {
    if (!strstr (message, *parts))
      g_error ("parsing \"%s\": message \"%s\" lacks \"%s\"", text, message, *parts);
  }
  g_free (message);
}



/* ------------------------------------------------------------------------------------ */
/* parser */

static void
test_parse_empty (void)
{
  static const char *const blanks[] = { "", " ", "\t\n", ";", ";;", " ; \n\t; ", ";;;;;;;;",
    "\r\n\v\f" };
  GError *error = NULL;
  DqFlowRule *rules = (DqFlowRule *) &error;
  guint n = 5, i;

  g_assert_true (dq_flow_parse (NULL, &rules, &n, &error));
  g_assert_no_error (error);
  g_assert_null (rules);
  g_assert_cmpuint (n, ==, 0);

  for (i = 0; i < G_N_ELEMENTS (blanks); i++) {
    rules = (DqFlowRule *) &error;
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
    { "proto=udp", { .keys = DQ_FLOW_PROTO, .proto = 17 } },
    { "proto=tcp", { .keys = DQ_FLOW_PROTO, .proto = 6 } },
    { "proto=icmp", { .keys = DQ_FLOW_PROTO, .proto = 1 } },
    { "proto=UDP", { .keys = DQ_FLOW_PROTO, .proto = 17 } },
    { "proto=0", { .keys = DQ_FLOW_PROTO, .proto = 0 } },
    { "proto=255", { .keys = DQ_FLOW_PROTO, .proto = 255 } },
    { "proto=047", { .keys = DQ_FLOW_PROTO, .proto = 47 } },
    { "src=10.1.2.3", { .keys = DQ_FLOW_SRC, .src = IP4 (10, 1, 2, 3), .src_prefix = 32 } },
    { "src=10.1.2.3/8", { .keys = DQ_FLOW_SRC, .src = IP4 (10, 0, 0, 0), .src_prefix = 8 } },
    { "src=10.1.2.3/0", { .keys = DQ_FLOW_SRC, .src = 0, .src_prefix = 0 } },
    { "src=10.1.2.3/32", { .keys = DQ_FLOW_SRC, .src = IP4 (10, 1, 2, 3), .src_prefix = 32 } },
    { "src=10.1.2.255/31", { .keys = DQ_FLOW_SRC, .src = IP4 (10, 1, 2, 254), .src_prefix = 31 } },
    { "src=0.0.0.0", { .keys = DQ_FLOW_SRC, .src = 0, .src_prefix = 32 } },
    { "dst=255.255.255.255", { .keys = DQ_FLOW_DST, .dst = 0xffffffffu, .dst_prefix = 32 } },
    { "dst=192.168.7.9/20",
        { .keys = DQ_FLOW_DST, .dst = IP4 (192, 168, 0, 0), .dst_prefix = 20 } },
    { "dst=1.2.3.4/1", { .keys = DQ_FLOW_DST, .dst = 0, .dst_prefix = 1 } },
    { "src-port=0", { .keys = DQ_FLOW_SRC_PORT, .src_port = 0 } },
    { "src-port=65535", { .keys = DQ_FLOW_SRC_PORT, .src_port = 65535 } },
    { "dst-port=05000", { .keys = DQ_FLOW_DST_PORT, .dst_port = 5000 } },
    { "dst-port=65535", { .keys = DQ_FLOW_DST_PORT, .dst_port = 65535 } },
    { "ethertype=0x0600", { .keys = DQ_FLOW_ETHERTYPE, .ethertype = 0x0600 } },
    { "ethertype=0xffff", { .keys = DQ_FLOW_ETHERTYPE, .ethertype = 0xffff } },
    { "ethertype=0X86DD", { .keys = DQ_FLOW_ETHERTYPE, .ethertype = 0x86dd } },
    { "ethertype=0x00000806", { .keys = DQ_FLOW_ETHERTYPE, .ethertype = 0x0806 } },
    { "ethertype=1536", { .keys = DQ_FLOW_ETHERTYPE, .ethertype = 0x0600 } },
    { "ethertype=65535", { .keys = DQ_FLOW_ETHERTYPE, .ethertype = 0xffff } },
    { "vlan=0", { .keys = DQ_FLOW_VLAN, .vlan = 0 } },
    { "vlan=4095", { .keys = DQ_FLOW_VLAN, .vlan = 4095 } },
    { "mark=0", { .keys = DQ_FLOW_MARK, .mark = 0 } },
    { "mark=4294967295", { .keys = DQ_FLOW_MARK, .mark = 4294967295u } },
    { "queue=0", { .keys = DQ_FLOW_QUEUE, .queue = 0 } },
    { "queue=1023", { .keys = DQ_FLOW_QUEUE, .queue = 1023 } },
    /* implied and redundant keys */
    { "dst-port=53", { .keys = DQ_FLOW_DST_PORT, .dst_port = 53 } },
    { "proto=6 src-port=80",
        { .keys = DQ_FLOW_PROTO | DQ_FLOW_SRC_PORT, .proto = 6, .src_port = 80 } },
    { "ethertype=0x0800 proto=udp",
        { .keys = DQ_FLOW_ETHERTYPE | DQ_FLOW_PROTO, .ethertype = 0x0800, .proto = 17 } },
    { "vlan=7 ethertype=0x88f7 mark=9",
        { .keys = DQ_FLOW_VLAN | DQ_FLOW_ETHERTYPE | DQ_FLOW_MARK,
            .vlan = 7,
            .ethertype = 0x88f7,
            .mark = 9 } },
    { "queue=3 mark=1 dst-port=5000 src-port=4000 dst=10.0.0.0/8 src=1.2.3.4 proto=udp "
      "vlan=12",
        { .keys = ALL_KEYS & ~DQ_FLOW_ETHERTYPE,
            .proto = 17,
            .src = IP4 (1, 2, 3, 4),
            .src_prefix = 32,
            .dst = IP4 (10, 0, 0, 0),
            .dst_prefix = 8,
            .src_port = 4000,
            .dst_port = 5000,
            .vlan = 12,
            .mark = 1,
            .queue = 3 } },
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
  gboolean out_of_range; /* else "is not valid" */
} BadValue;

#define ALLOWED_IPV4 "an IPv4 address A.B.C.D (octets 0..255) with an optional /0..32 prefix"

/* Each key at and past its limits; the whole message is compared. */
static void
test_parse_invalid_values (void)
{
  static const struct {
    const char *key;
    const char *allowed;
    BadValue bad[16];
  } keys[] = {
    { "proto", "udp, tcp, icmp or a protocol number 0..255",
        { { "256", TRUE }, { "-1", TRUE }, { "99999999999999999999999", TRUE }, { "0x11", FALSE },
            { "17x", FALSE }, { "udpp", FALSE }, { "+17", FALSE }, { "ud", FALSE },
            { "1 7", FALSE }, { NULL, FALSE } } },
    { "src", ALLOWED_IPV4,
        { { "1.2.3", FALSE }, { "256.1.1.1", FALSE }, { "1.2.3.4/33", TRUE },
            { "1.2.3.4/-1", TRUE }, { "x1.2.3.4", FALSE }, { "1.2.3.4x", FALSE },
            { "0001.2.3.4", FALSE }, { "01.2.3.4", FALSE }, { "1.2.3.4/", FALSE },
            { "1.2.3.4/0x8", FALSE }, { "1..2.3", FALSE }, { "1.2.3.4.5", FALSE },
            { ".1.2.3", FALSE }, { "1.2.3.4/8/8", FALSE }, { "1.2.3.-4", FALSE },
            { NULL, FALSE } } },
    { "dst", ALLOWED_IPV4,
        { { "1.2.3.1000", FALSE }, { "1.2.3.4/99999999999999999999", TRUE }, { "::1", FALSE },
            { "10.0.0.0/ 8", FALSE }, { NULL, FALSE } } },
    { "src-port", "0..65535",
        { { "65536", TRUE }, { "-1", TRUE }, { "0x10", FALSE }, { "5000x", FALSE }, { "+5", FALSE },
            { "18446744073709551617", TRUE }, { "5.0", FALSE }, { NULL, FALSE } } },
    { "dst-port", "0..65535",
        { { "99999", TRUE }, { "-0", TRUE }, { "0x0", FALSE }, { "5,6", FALSE },
            { NULL, FALSE } } },
    { "ethertype", "0x0600..0xffff (hex with 0x, or decimal 1536..65535)",
        { { "0x05ff", TRUE }, { "0x10000", TRUE }, { "1535", TRUE }, { "65536", TRUE },
            { "0", TRUE }, { "-1", TRUE }, { "0x", FALSE }, { "0xg00", FALSE }, { "0x86dd1", TRUE },
            { "x86dd", FALSE }, { "0x86ddq", FALSE }, { "0x0800000000000000000000", TRUE },
            { NULL, FALSE } } },
    { "vlan", "0..4095",
        { { "4096", TRUE }, { "-1", TRUE }, { "0x1", FALSE }, { "1a", FALSE }, { NULL, FALSE } } },
    { "mark", "0..4294967295",
        { { "4294967296", TRUE }, { "-1", TRUE }, { "0x1", FALSE },
            { "18446744073709551616", TRUE }, { "7e3", FALSE }, { NULL, FALSE } } },
    { "queue", "0..1023",
        { { "1024", TRUE }, { "-1", TRUE }, { "0x3", FALSE }, { "three", FALSE },
            { NULL, FALSE } } },
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
      want = g_strdup_printf ("flow rule 1 (\"%s\"): '%s' is %s; %s takes %s", token, token,
          bad->out_of_range ? "out of range" : "not valid", keys[i].key, keys[i].allowed);
      g_assert_cmpstr (message, ==, want);
    }
  }
}

static void
test_parse_structure_errors (void)
{
  g_autofree char *message = NULL;

  message = parse_error ("proto=udp dst-port=5000; proto=udp dst-port=99999");
  g_assert_cmpstr (message, ==,
      "flow rule 2 (\"proto=udp dst-port=99999\"): "
      "'dst-port=99999' is out of range; dst-port takes 0..65535");

  /* a rule text, and the parts its message must hold */
  static const struct {
    const char *text;
    const char *parts[3];
  } bad_rules[] = {
    { "udp", { "flow rule 1 (\"udp\"): 'udp' is not key=value; " KEYS_TEXT } },
    { "proto=udp dst-port 5000",
        { "flow rule 1 (\"proto=udp dst-port 5000\")", "'dst-port' is not key=value" } },
    { "protoo=udp", { "unknown key 'protoo' in 'protoo=udp'; " KEYS_TEXT } },
    { "Proto=udp", { "unknown key 'Proto'", KEYS_TEXT } },
    { "=5", { "unknown key '' in '=5'" } },
    { "dst_port=5", { "unknown key 'dst_port'" } },
    { "dst-port=", { "'dst-port=' has no value; dst-port takes 0..65535" } },
    { "mark=5 queue=", { "'queue=' has no value; queue takes 0..1023" } },
    { "proto==udp", { "'proto==udp' is not valid" } },
    { "dst-port=5 dst-port=6",
        { "'dst-port=6' repeats key dst-port "
          "(already 'dst-port=5'); each key may appear once per rule" } },
    { "mark=1 mark=1", { "'mark=1' repeats key mark" } },
    { "proto=icmp dst-port=5",
        { "flow rule 1 (\"proto=icmp dst-port=5\"): "
          "'dst-port=5' needs proto udp or tcp, but the rule has 'proto=icmp'" } },
    { "src-port=1 proto=47",
        { "'src-port=1' needs proto udp or tcp, but the rule has 'proto=47'" } },
    { "ethertype=0x86dd src=1.2.3.4",
        { "'ethertype=0x86dd' conflicts with "
          "'src=1.2.3.4': proto, src, dst and ports match IPv4 only (ethertype 0x0800)" } },
    { "dst-port=5 ethertype=0x86dd", { "'ethertype=0x86dd' conflicts with 'dst-port=5'" } },
    { "proto=udp ethertype=2054", { "'ethertype=2054' conflicts with 'proto=udp'" } },
    /* rules are counted without the empty ones */
    { ";; proto=udp ;;\n; bogus ;", { "flow rule 2 (\"bogus\"): 'bogus' is not key=value" } },
    { "proto=udp,dst-port=5", { "'proto=udp,dst-port=5' is not valid" } },
    /* whitespace inside the rule is shown escaped, quotes and backslashes too */
    { "mark=1\tqueue=x", { "flow rule 1 (\"mark=1\\tqueue=x\"): 'queue=x'" } },
    { "mark=\"5\"", { "flow rule 1 (\"mark=\\\"5\\\"\"): 'mark=\\\"5\\\"' is not valid" } },
    { "mark=5\\", { "'mark=5\\\\' is not valid" } },
    /* control and non-ASCII bytes are escaped, never copied raw */
    { "proto=udp\x01", { "'proto=udp\\x01' is not valid" } },
    { "proto=ud\xc3\xa9", { "'proto=ud\\xc3\\xa9' is not valid" } },
    { "\xff\xfe=1", { "unknown key '\\xff\\xfe' in '\\xff\\xfe=1'" } },
    { "mark=1 \x7f", { "'\\x7f' is not key=value" } },
  };

  for (guint i = 0; i < G_N_ELEMENTS (bad_rules); i++)
    expect_error (bad_rules[i].text, bad_rules[i].parts);
}

static void
test_parse_whitespace (void)
{
  guint n = 0;
  DqFlowRule *rules = parse_ok (" proto=udp\tdst-port=5\n;\r\n dst=1.2.3.4 ;\n\n"
                                "  \t mark=3   vlan=9\v;;",
      &n);

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
    g_string_append_printf (text, "dst-port=%u mark=%u;%s", i, i + 1, i % 7 ? "" : ";\n ;");
  rules = parse_ok (text->str, &n);
  g_assert_cmpuint (n, ==, 256);
  for (i = 0; i < n; i++) {
    g_assert_cmpuint (rules[i].dst_port, ==, i);
    g_assert_cmpuint (rules[i].mark, ==, i + 1);
  }
  g_free (rules);

  g_string_append (text, " ; ; proto=tcp ;");
  message = parse_error (text->str);
  g_assert_cmpstr (message, ==,
      "flow rule 257 (\"proto=tcp\"): too many rules; at most "
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
  g_assert_cmpstr (message, ==,
      "flow rule 257 (\"mark=1\"): too many rules; at most 256 "
      "are allowed");
  g_clear_pointer (&message, g_free);

  /* the rule text and the token are cut to 64 bytes in the message */
  message = parse_error (letters);
  g_assert_nonnull (strstr (message,
      "flow rule 1 (\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
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
  if ((r->keys & PORT_KEYS) && (r->keys & DQ_FLOW_PROTO) && r->proto != 6 && r->proto != 17)
    return FALSE;
  if ((r->keys & DQ_FLOW_ETHERTYPE) && (r->keys & IPV4_KEYS) && r->ethertype != 0x0800)
    return FALSE;
  return TRUE;
}

/* Random strings of the syntax's own pieces, salted with random bytes. */
static void
test_parse_fuzz (void)
{
  static const char *const pieces[] = { "proto", "src", "dst", "src-port", "dst-port", "ethertype",
    "vlan", "mark", "queue", "=", "=", "=", ";", ";", " ", " ", "\t", "\n", ".", "/", "-", "x",
    "0x", "0", "1", "9", "255", "256", "32", "33", "65535", "65536", "4095", "4096", "1023", "1024",
    "udp", "tcp", "icmp", "4294967295", "4294967296", "10.0.0.1", "1.2.3.4/8", "0x0800", "0x86dd",
    "0600", "proto=udp", "dst-port=5000", "src=10.0.0.0/8 ", "mark=7 ", "queue=3 ", "vlan=100 ",
    "ethertype=0x88f7 ", "; " };
  static const char *const keys[] = { "proto", "src", "dst", "src-port", "dst-port", "ethertype",
    "vlan", "mark", "queue" };
  static const char *const values[] = { "0", "1", "6", "17", "udp", "tcp", "icmp", "255", "256",
    "1023", "1024", "4095", "0x0800", "0x86dd", "1536", "65535", "65536", "10.0.0.1", "10.0.0.0/8",
    "1.2.3.4/32", "1.2.3.4/33", "4294967295", "-1", "" };
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
        g_string_append_printf (s, "%s%s=%s", chance (30) ? ";" : " ", PICK (keys), PICK (values));
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
  g_test_message ("fuzz: %u of %u strings parsed, %u rules", n_ok, iterations, n_rules_total);
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
    { "dst-port=5000 mark=7 dst=10.1.2.3/8 proto=17",
        "proto=udp dst=10.0.0.0/8 "
        "dst-port=5000 mark=7" },
    { "ethertype=2054", "ethertype=0x0806" },
    { "src=1.2.3.4/32", "src=1.2.3.4" },
    { "src=1.2.3.4/0", "src=0.0.0.0/0" },
    { "proto=47", "proto=47" },
    { "proto=TCP", "proto=tcp" },
    { "proto=1", "proto=icmp" },
    { "queue=1023 vlan=4095 mark=4294967295 src-port=00",
        "src-port=0 vlan=4095 "
        "mark=4294967295 queue=1023" },
    { "ethertype=0x0800 proto=udp src=0.0.0.0 dst=255.255.255.255 src-port=1 "
      "dst-port=65535 vlan=0 mark=0 queue=0",
        "proto=udp src=0.0.0.0 "
        "dst=255.255.255.255 src-port=1 dst-port=65535 ethertype=0x0800 vlan=0 "
        "mark=0 queue=0" },
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    DqFlowRule rule = parse_one (cases[i].in);
    g_autofree char *text = dq_flow_rule_to_string (&rule);

    g_assert_cmpstr (text, ==, cases[i].out);
    assert_round_trip (&rule);
  }
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
  tcp.dport = 5001; /* ports without proto: TCP too */
  g_assert_cmpint (match_text (rules, &tcp, -1), ==, 2);
  tcp.dport = 5000; /* proto=udp rule */
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
  g_assert_cmpint (match_text ("vlan=100", &f, 0xe064), ==, 0); /* PCP bits ignored */
  g_assert_cmpint (match_text ("vlan=0", &f, 0), ==, 0);
  g_assert_cmpint (match_text ("vlan=100 dst-port=5000", &f, 100), ==, 0);
  g_assert_cmpint (match_text ("dst-port=5000", &f, 4095), ==, 0);

  /* in-band 802.1Q and 802.1ad tags */
  f.tag_tpid = 0x8100;
  f.tag_tci = 0xa000 | 100;
  g_assert_cmpint (match_text ("vlan=100", &f, -1), ==, 0);
  g_assert_cmpint (match_text ("vlan=101", &f, -1), ==, -1);
  g_assert_cmpint (match_text ("vlan=100 proto=udp dst-port=5000 src=10.0.0.1", &f, -1), ==, 0);
  g_assert_cmpint (match_text ("dst-port=5000", &f, -1), ==, 0);
  g_assert_cmpint (match_text ("ethertype=0x0800", &f, -1), ==, 0);
  g_assert_cmpint (match_text ("ethertype=0x8100", &f, -1), ==, -1);
  f.tag_tpid = 0x88a8;
  g_assert_cmpint (match_text ("vlan=100 dst-port=5000", &f, -1), ==, 0);
  f.tag_tpid = 0x9100; /* not a tag we parse: the ethertype is 0x9100 */
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
    { 0x0000, TRUE },
    { 0x2000, TRUE },
    { 0x4000, TRUE },
    { 0x8000, TRUE },
    { 0x0001, FALSE },
    { 0x2001, FALSE },
    { 0x1fff, FALSE },
    { 0x3fff, FALSE },
    { 0x0100, FALSE },
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (frags); i++) {
    FrameSpec f = ipv4_spec (17, IP4 (1, 1, 1, 1), IP4 (2, 2, 2, 2), 2000, 3000);

    f.frag = frags[i].frag;
    g_assert_cmpint (match_text ("dst-port=3000", &f, -1), ==, frags[i].first ? 0 : -1);
    g_assert_cmpint (match_text ("proto=udp src-port=2000", &f, -1), ==, frags[i].first ? 0 : -1);
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
    { "dst-port=5000", ip_at + 24 + 4 },
    { "proto=tcp src-port=1111", ip_at + 24 + 4 },
    { "vlan=100 dst=10.0.0.0/8 dst-port=5000", ip_at + 24 + 4 },
    { "proto=tcp", ip_at + 24 },
    { "src=10.0.0.1", ip_at + 24 },
    { "ethertype=0x0800", ip_at },
    { "vlan=100", vlan >= 0 ? 0 : ip_at },
    { "mark=1", 0 },
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
/* per-flow counters */

static void
test_counters (void)
{
  DqFlowCounters *fc = dq_flow_counters_new ();
  const DqPacket burst1[] = { { .flow_id = 5, .length = 100 }, { .flow_id = 5, .length = 60 },
    { .flow_id = 7, .length = 1500 }, { .flow_id = 5, .length = 64 },
    { .flow_id = 0, .length = 42 } };
  const DqPacket burst2[] = { { .flow_id = 7, .length = 9000 } };
  dq_flow_counters_add (fc, burst1, G_N_ELEMENTS (burst1));
  dq_flow_counters_add (fc, burst2, G_N_ELEMENTS (burst2));
  dq_flow_counters_add (fc, burst2, 0);

  guint n = 0;
  guint64 overflow = 1;
  DqFlowCount *c = dq_flow_counters_get (fc, &n, &overflow);
  g_assert_cmpuint (n, ==, 3);
  g_assert_cmpuint (overflow, ==, 0);
  const guint32 ids[] = { 0, 5, 7 };
  const guint64 packets[] = { 1, 3, 2 }, bytes[] = { 42, 224, 10500 };
  for (guint i = 0; i < 3; i++) {
    g_assert_cmpuint (c[i].flow_id, ==, ids[i]);
    g_assert_cmpuint (c[i].packets, ==, packets[i]);
    g_assert_cmpuint (c[i].bytes, ==, bytes[i]);
  }
  g_free (c);

  /* past the limit, further flow ids are counted together; known ones go on */
  DqPacket *many = g_new0 (DqPacket, DQ_FLOW_COUNTERS_MAX + 2);
  for (guint i = 0; i < DQ_FLOW_COUNTERS_MAX + 2; i++) {
    many[i].flow_id = 1000 + i;
    many[i].length = 1;
  }
  many[DQ_FLOW_COUNTERS_MAX + 1].flow_id = 5;
  dq_flow_counters_add (fc, many, DQ_FLOW_COUNTERS_MAX + 2);
  c = dq_flow_counters_get (fc, &n, &overflow);
  g_assert_cmpuint (n, ==, DQ_FLOW_COUNTERS_MAX);
  /* 3 known + 4093 new fit; 4 new ones do not */
  g_assert_cmpuint (overflow, ==, 4);
  g_assert_cmpuint (c[1].flow_id, ==, 5);
  g_assert_cmpuint (c[1].packets, ==, 4);
  g_free (c);
  g_free (many);

  dq_flow_counters_reset (fc);
  c = dq_flow_counters_get (fc, &n, &overflow);
  g_assert_cmpuint (n, ==, 0);
  g_assert_cmpuint (overflow, ==, 0);
  g_free (c);
  dq_flow_counters_free (fc);
}

/* a rule names a multicast group only with one address of 224.0.0.0/4 */
static void
test_rule_group (void)
{
  static const struct {
    const char *text;
    gboolean group;
    guint32 addr;
  } cases[] = {
    { "dst=239.1.2.3", TRUE, 0xef010203u },
    { "proto=udp dst=224.0.0.1 dst-port=5004 mark=3", TRUE, 0xe0000001u },
    { "dst=239.255.255.255/32", TRUE, 0xefffffffu },
    { "dst=239.0.0.0/8", FALSE, 0 },
    { "dst=10.0.0.1", FALSE, 0 },
    { "dst=240.0.0.1", FALSE, 0 },
    { "src=239.1.2.3", FALSE, 0 },
    { "proto=udp dst-port=5004", FALSE, 0 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    DqFlowRule *rules = NULL;
    guint n = 0;
    GError *error = NULL;
    g_assert_true (dq_flow_parse (cases[i].text, &rules, &n, &error));
    g_assert_no_error (error);
    g_assert_cmpuint (n, ==, 1);
    guint32 group = 0;
    g_assert_cmpint (dq_flow_rule_group (&rules[0], &group), ==, cases[i].group);
    if (cases[i].group)
      g_assert_cmphex (group, ==, cases[i].addr);
    g_free (rules);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/flow/parse/empty", test_parse_empty);
  g_test_add_func ("/flow/rule-group", test_rule_group);
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
  g_test_add_func ("/flow/counters", test_counters);

  return g_test_run ();
}
