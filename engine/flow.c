/* daqiri flow rules: the text parser, the canonical text of a rule, and the software
 * matcher that engines without steering hardware run on every received frame. */
#include "daqiri-flow.h"
#include "daqiri-engine.h"

#include <stdarg.h>
#include <string.h>

#define N_KEYS 9
#define PORT_KEYS (DQ_FLOW_SRC_PORT | DQ_FLOW_DST_PORT)
#define IPV4_KEYS (DQ_FLOW_PROTO | DQ_FLOW_SRC | DQ_FLOW_DST | PORT_KEYS)

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_VLAN 0x8100 /* 802.1Q */
#define ETHERTYPE_QINQ 0x88a8 /* 802.1ad service tag */
#define IPPROTO_NUM_ICMP 1
#define IPPROTO_NUM_TCP 6
#define IPPROTO_NUM_UDP 17

#define ALL_KEYS_TEXT "proto, src, dst, src-port, dst-port, ethertype, vlan, mark, queue"

/* Bytes of user text quoted in an error message; the rest is cut to "...". */
#define SHOW_MAX 64

typedef enum {
  VALUE_OK,
  VALUE_INVALID, /* not in the syntax of the key */
  VALUE_RANGE,   /* well formed, but outside what the key takes */
} ValueResult;

typedef ValueResult (*ValueParser) (const char *s, gsize len, DqFlowRule *rule);

typedef struct {
  const char *name;
  ValueParser parse;
  const char *allowed; /* completes "<key> takes ..." in messages */
} KeyInfo;

/* One rule while it is being parsed: where it is, for messages. */
typedef struct {
  guint number;     /* 1-based, counting non-empty rules */
  const char *text; /* the rule without surrounding whitespace */
  gsize len;
  const char *token[N_KEYS]; /* the token that set each key */
  gsize token_len[N_KEYS];
} RuleText;

static guint32
prefix_mask (guint prefix)
{
  if (prefix == 0)
    return 0;
  if (prefix >= 32)
    return 0xffffffffu;
  return 0xffffffffu << (32 - prefix);
}

static guint
key_index (guint32 key)
{
  return (guint) g_bit_nth_lsf (key, -1);
}

/* ---- user text in messages ---- */

/* s[0..len) made safe to quote: printable ASCII stays, quotes, backslashes, control
 * and non-ASCII bytes are escaped (so the message is valid UTF-8 whatever the input),
 * and the text is cut after SHOW_MAX bytes (so a megabyte of input gives a short
 * message). */
static char *
show_text (const char *s, gsize len)
{
  GString *out = g_string_sized_new (MIN (len, SHOW_MAX) + 8);
  gsize i;

  for (i = 0; i < len && i < SHOW_MAX; i++) {
    guchar c = (guchar) s[i];

    switch (c) {
      case '\t': g_string_append (out, "\\t"); break;
      case '\n': g_string_append (out, "\\n"); break;
      case '\r': g_string_append (out, "\\r"); break;
      case '"':
      case '\\':
        g_string_append_c (out, '\\');
        g_string_append_c (out, (char) c);
        break;
      default:
        if (c < 0x20 || c >= 0x7f)
          g_string_append_printf (out, "\\x%02x", c);
        else
          g_string_append_c (out, (char) c);
        break;
    }
  }
  if (len > SHOW_MAX)
    g_string_append (out, "...");
  return g_string_free (out, FALSE);
}

static gboolean rule_error (const RuleText *rt, GError **error, const char *format, ...)
    G_GNUC_PRINTF (3, 4);

/* Sets DQ_ERROR_FLOW as 'flow rule N ("text"): detail' and returns FALSE. */
static gboolean
rule_error (const RuleText *rt, GError **error, const char *format, ...)
{
  va_list args;
  char *detail, *text;

  va_start (args, format);
  detail = g_strdup_vprintf (format, args);
  va_end (args);
  text = show_text (rt->text, rt->len);
  g_set_error (
      error, DQ_ERROR, DQ_ERROR_FLOW, "flow rule %u (\"%s\"): %s", rt->number, text, detail);
  g_free (text);
  g_free (detail);
  return FALSE;
}

/* ---- values ---- */

/* The digits s[first..len) in `base` (10 or 16), at least one: no sign, no space. Values
 * above `max` are VALUE_RANGE, but only once the whole string proved to be digits. */
static ValueResult
parse_digits (const char *s, gsize len, gsize first, guint base, guint64 max, guint64 *out)
{
  guint64 v = 0;
  gboolean over = FALSE;
  gsize i;

  if (len <= first)
    return VALUE_INVALID;
  for (i = first; i < len; i++) {
    gint digit = base == 16 ? g_ascii_xdigit_value (s[i]) : g_ascii_digit_value (s[i]);

    if (digit < 0)
      return VALUE_INVALID;
    /* callers pass max <= 2^32, so v stays far below 2^64 until it passes max */
    if (!over) {
      v = v * base + (guint64) digit;
      over = v > max;
    }
  }
  if (over)
    return VALUE_RANGE;
  *out = v;
  return VALUE_OK;
}

/* Decimal digits only: no base prefix. */
static ValueResult
parse_decimal (const char *s, gsize len, guint64 max, guint64 *out)
{
  return parse_digits (s, len, 0, 10, max, out);
}

/* "0x" or "0X" followed by hex digits. */
static ValueResult
parse_hex (const char *s, gsize len, guint64 max, guint64 *out)
{
  if (len < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
    return VALUE_INVALID;
  return parse_digits (s, len, 2, 16, max, out);
}

static gboolean
is_negative_number (const char *s, gsize len)
{
  guint64 ignored;

  return len >= 2 && s[0] == '-' &&
      parse_decimal (s + 1, len - 1, G_MAXUINT32, &ignored) != VALUE_INVALID;
}

/* A number in [min, max]; hex only where the key allows it. "-5" is a number, just
 * out of range, and is reported so. */
static ValueResult
parse_number (const char *s, gsize len, guint64 min, guint64 max, gboolean hex, guint64 *out)
{
  ValueResult r;

  if (is_negative_number (s, len))
    return VALUE_RANGE;
  if (hex && len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    r = parse_hex (s, len, max, out);
  else
    r = parse_decimal (s, len, max, out);
  if (r == VALUE_OK && *out < min)
    return VALUE_RANGE;
  return r;
}

/* A.B.C.D[/N]. Each octet 0..255 in at most three decimal digits, without leading
 * zeros (inet_aton would read "010" as octal 8: refuse the ambiguity). The address is
 * stored masked by the prefix, as the matcher compares it. */
static ValueResult
parse_ipv4_prefix (const char *s, gsize len, guint32 *addr, guint8 *prefix)
{
  const char *slash = memchr (s, '/', len);
  gsize addr_len = slash ? (gsize) (slash - s) : len;
  guint64 bits = 32;
  guint32 a = 0;
  gsize i = 0;
  guint octet;

  for (octet = 0; octet < 4; octet++) {
    gsize start;
    guint v = 0;

    if (octet > 0) {
      if (i >= addr_len || s[i] != '.')
        return VALUE_INVALID;
      i++;
    }
    start = i;
    while (i < addr_len && g_ascii_isdigit (s[i]) && i - start < 4) {
      v = v * 10 + (guint) (s[i] - '0');
      i++;
    }
    if (i == start || i - start > 3 || v > 255 || (s[start] == '0' && i - start > 1))
      return VALUE_INVALID;
    a = a << 8 | v;
  }
  if (i != addr_len)
    return VALUE_INVALID;
  if (slash) {
    ValueResult r = parse_number (slash + 1, len - addr_len - 1, 0, 32, FALSE, &bits);

    if (r != VALUE_OK)
      return r;
  }
  *prefix = (guint8) bits;
  *addr = a & prefix_mask ((guint) bits);
  return VALUE_OK;
}

static ValueResult
parse_proto (const char *s, gsize len, DqFlowRule *rule)
{
  static const struct {
    const char *name;
    guint8 number;
  } names[] = {
    { "udp", IPPROTO_NUM_UDP },
    { "tcp", IPPROTO_NUM_TCP },
    { "icmp", IPPROTO_NUM_ICMP },
  };
  guint64 v;
  ValueResult r;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (names); i++) {
    if (len == strlen (names[i].name) && g_ascii_strncasecmp (s, names[i].name, len) == 0) {
      rule->proto = names[i].number;
      return VALUE_OK;
    }
  }
  r = parse_number (s, len, 0, 255, FALSE, &v);
  if (r == VALUE_OK)
    rule->proto = (guint8) v;
  return r;
}

static ValueResult
parse_src (const char *s, gsize len, DqFlowRule *rule)
{
  return parse_ipv4_prefix (s, len, &rule->src, &rule->src_prefix);
}

static ValueResult
parse_dst (const char *s, gsize len, DqFlowRule *rule)
{
  return parse_ipv4_prefix (s, len, &rule->dst, &rule->dst_prefix);
}

/* A 16-bit field's number, min..max (max <= 0xffff): stored in *field when it is one. */
static ValueResult
parse_u16 (const char *s, gsize len, guint64 min, guint64 max, gboolean hex, guint16 *field)
{
  guint64 v;
  ValueResult r = parse_number (s, len, min, max, hex, &v);

  if (r == VALUE_OK)
    *field = (guint16) v;
  return r;
}

static ValueResult
parse_src_port (const char *s, gsize len, DqFlowRule *rule)
{
  return parse_u16 (s, len, 0, G_MAXUINT16, FALSE, &rule->src_port);
}

static ValueResult
parse_dst_port (const char *s, gsize len, DqFlowRule *rule)
{
  return parse_u16 (s, len, 0, G_MAXUINT16, FALSE, &rule->dst_port);
}

/* Ethertypes start at 0x0600: smaller values in that field are 802.3 lengths. */
static ValueResult
parse_ethertype (const char *s, gsize len, DqFlowRule *rule)
{
  return parse_u16 (s, len, 0x0600, 0xffff, TRUE, &rule->ethertype);
}

static ValueResult
parse_vlan (const char *s, gsize len, DqFlowRule *rule)
{
  return parse_u16 (s, len, 0, 4095, FALSE, &rule->vlan);
}

static ValueResult
parse_mark (const char *s, gsize len, DqFlowRule *rule)
{
  guint64 v;
  ValueResult r = parse_number (s, len, 0, G_MAXUINT32, FALSE, &v);

  if (r == VALUE_OK)
    rule->mark = (guint32) v;
  return r;
}

static ValueResult
parse_queue (const char *s, gsize len, DqFlowRule *rule)
{
  return parse_u16 (s, len, 0, DQ_FLOW_MAX_QUEUE, FALSE, &rule->queue);
}

#define ALLOWED_IPV4 "an IPv4 address A.B.C.D (octets 0..255) with an optional /0..32 prefix"

/* Indexed by the bit number of the DqFlowKeys value. */
static const KeyInfo key_info[N_KEYS] = {
  { "proto", parse_proto, "udp, tcp, icmp or a protocol number 0..255" },
  { "src", parse_src, ALLOWED_IPV4 },
  { "dst", parse_dst, ALLOWED_IPV4 },
  { "src-port", parse_src_port, "0..65535" },
  { "dst-port", parse_dst_port, "0..65535" },
  { "ethertype", parse_ethertype, "0x0600..0xffff (hex with 0x, or decimal 1536..65535)" },
  { "vlan", parse_vlan, "0..4095" },
  { "mark", parse_mark, "0..4294967295" },
  { "queue", parse_queue, "0..1023" },
};

G_STATIC_ASSERT (DQ_FLOW_QUEUE == 1 << (N_KEYS - 1));
G_STATIC_ASSERT (DQ_FLOW_MAX_QUEUE == 1023);

static int
lookup_key (const char *s, gsize len)
{
  guint i;

  for (i = 0; i < N_KEYS; i++)
    if (len == strlen (key_info[i].name) && memcmp (s, key_info[i].name, len) == 0)
      return (int) i;
  return -1;
}

/* ---- rules ---- */

/* 'dst-port=x' is <what>; dst-port takes <allowed> */
static gboolean
value_error (const RuleText *rt, GError **error, const char *tok, gsize len, const char *what,
    const KeyInfo *info)
{
  g_autofree char *shown = show_text (tok, len);

  return rule_error (rt, error, "'%s' %s; %s takes %s", shown, what, info->name, info->allowed);
}

static gboolean
parse_token (RuleText *rt, const char *tok, gsize len, DqFlowRule *rule, GError **error)
{
  const char *eq = memchr (tok, '=', len);
  const KeyInfo *info;
  gsize key_len;
  int k;

  if (!eq) {
    g_autofree char *shown = show_text (tok, len);

    return rule_error (rt, error, "'%s' is not key=value; keys are " ALL_KEYS_TEXT, shown);
  }
  key_len = (gsize) (eq - tok);
  k = lookup_key (tok, key_len);
  if (k < 0) {
    g_autofree char *key = show_text (tok, key_len);
    g_autofree char *shown = show_text (tok, len);

    return rule_error (rt, error, "unknown key '%s' in '%s'; keys are " ALL_KEYS_TEXT, key, shown);
  }
  info = &key_info[k];
  if (rule->keys & (1u << k)) {
    g_autofree char *shown = show_text (tok, len);
    g_autofree char *first = show_text (rt->token[k], rt->token_len[k]);

    return rule_error (rt, error,
        "'%s' repeats key %s (already '%s'); each key may "
        "appear once per rule",
        shown, info->name, first);
  }
  if (key_len + 1 == len)
    return value_error (rt, error, tok, len, "has no value", info);

  switch (info->parse (eq + 1, len - key_len - 1, rule)) {
    case VALUE_OK: break;
    case VALUE_INVALID: return value_error (rt, error, tok, len, "is not valid", info);
    case VALUE_RANGE:
    default: return value_error (rt, error, tok, len, "is out of range", info);
  }
  rule->keys |= 1u << k;
  rt->token[k] = tok;
  rt->token_len[k] = len;
  return TRUE;
}

/* The first token (in key order) of the keys in `keys`, shown. */
static char *
show_first_token (const RuleText *rt, guint32 keys)
{
  guint k = key_index (keys);

  return show_text (rt->token[k], rt->token_len[k]);
}

/* Keys that are each fine alone but cannot match together. */
static gboolean
check_conflicts (const RuleText *rt, const DqFlowRule *rule, GError **error)
{
  if ((rule->keys & PORT_KEYS) && (rule->keys & DQ_FLOW_PROTO) && rule->proto != IPPROTO_NUM_UDP &&
      rule->proto != IPPROTO_NUM_TCP) {
    g_autofree char *port = show_first_token (rt, rule->keys & PORT_KEYS);
    g_autofree char *proto = show_first_token (rt, DQ_FLOW_PROTO);

    return rule_error (
        rt, error, "'%s' needs proto udp or tcp, but the rule has '%s'", port, proto);
  }
  if ((rule->keys & DQ_FLOW_ETHERTYPE) && (rule->keys & IPV4_KEYS) &&
      rule->ethertype != ETHERTYPE_IPV4) {
    g_autofree char *ethertype = show_first_token (rt, DQ_FLOW_ETHERTYPE);
    g_autofree char *ipv4 = show_first_token (rt, rule->keys & IPV4_KEYS);

    return rule_error (rt, error,
        "'%s' conflicts with '%s': proto, src, dst and ports "
        "match IPv4 only (ethertype 0x0800)",
        ethertype, ipv4);
  }
  return TRUE;
}

/* Tokens are separated by blanks of any kind: space, tab, newline, CR, VT, FF. */
static gboolean
is_space (char c)
{
  return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Tokens of rt->text, separated by whitespace. */
static gboolean
parse_rule (RuleText *rt, DqFlowRule *rule, GError **error)
{
  const char *p = rt->text, *end = rt->text + rt->len;

  memset (rule, 0, sizeof *rule);
  while (p < end) {
    const char *tok;

    while (p < end && is_space (*p))
      p++;
    tok = p;
    while (p < end && !is_space (*p))
      p++;
    if (p > tok && !parse_token (rt, tok, (gsize) (p - tok), rule, error))
      return FALSE;
  }
  return check_conflicts (rt, rule, error);
}

gboolean
dq_flow_parse (const char *text, DqFlowRule **rules, guint *n_rules, GError **error)
{
  DqFlowRule *parsed = NULL;
  guint n = 0;
  const char *p = text;

  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (rules)
    *rules = NULL;
  if (n_rules)
    *n_rules = 0;

  /* One pass over the text: each byte is looked at a bounded number of times, so
   * megabytes of input cost milliseconds. */
  while (p && *p) {
    const char *end = strchrnul (p, ';');
    const char *start = p, *stop = end;
    RuleText rt;

    while (start < stop && is_space (*start))
      start++;
    while (stop > start && is_space (stop[-1]))
      stop--;
    p = *end ? end + 1 : end;
    if (start == stop)
      continue; /* empty rule: ";;", a trailing ';' or blank lines */

    memset (&rt, 0, sizeof rt);
    rt.number = n + 1;
    rt.text = start;
    rt.len = (gsize) (stop - start);
    if (n == DQ_FLOW_MAX_RULES) {
      rule_error (&rt, error, "too many rules; at most %u are allowed", DQ_FLOW_MAX_RULES);
      goto failed;
    }
    if (!parsed)
      parsed = g_new (DqFlowRule, DQ_FLOW_MAX_RULES);
    if (!parse_rule (&rt, &parsed[n], error))
      goto failed;
    n++;
  }

  if (rules && n > 0)
    *rules = g_renew (DqFlowRule, parsed, n);
  else
    g_free (parsed);
  if (n_rules)
    *n_rules = n;
  return TRUE;

failed:
  g_free (parsed);
  return FALSE;
}

/* ---- canonical text ---- */

static void append_token (GString *s, const char *format, ...) G_GNUC_PRINTF (2, 3);

static void
append_token (GString *s, const char *format, ...)
{
  va_list args;

  if (s->len > 0)
    g_string_append_c (s, ' ');
  va_start (args, format);
  g_string_append_vprintf (s, format, args);
  va_end (args);
}

static void
append_ipv4 (GString *s, const char *key, guint32 addr, guint prefix)
{
  append_token (
      s, "%s=%u.%u.%u.%u", key, addr >> 24, (addr >> 16) & 0xff, (addr >> 8) & 0xff, addr & 0xff);
  if (prefix < 32)
    g_string_append_printf (s, "/%u", prefix);
}

static const char *
proto_name (guint8 proto)
{
  switch (proto) {
    case IPPROTO_NUM_UDP: return "udp";
    case IPPROTO_NUM_TCP: return "tcp";
    case IPPROTO_NUM_ICMP: return "icmp";
    default: return NULL;
  }
}

char *
dq_flow_rule_to_string (const DqFlowRule *rule)
{
  GString *s = g_string_new (NULL);
  guint32 keys;

  g_return_val_if_fail (rule != NULL, NULL);

  keys = rule->keys;
  if (keys & DQ_FLOW_PROTO) {
    if (proto_name (rule->proto))
      append_token (s, "proto=%s", proto_name (rule->proto));
    else
      append_token (s, "proto=%u", rule->proto);
  }
  if (keys & DQ_FLOW_SRC)
    append_ipv4 (s, "src", rule->src, rule->src_prefix);
  if (keys & DQ_FLOW_DST)
    append_ipv4 (s, "dst", rule->dst, rule->dst_prefix);
  if (keys & DQ_FLOW_SRC_PORT)
    append_token (s, "src-port=%u", rule->src_port);
  if (keys & DQ_FLOW_DST_PORT)
    append_token (s, "dst-port=%u", rule->dst_port);
  if (keys & DQ_FLOW_ETHERTYPE)
    append_token (s, "ethertype=0x%04x", rule->ethertype);
  if (keys & DQ_FLOW_VLAN)
    append_token (s, "vlan=%u", rule->vlan);
  if (keys & DQ_FLOW_MARK)
    append_token (s, "mark=%u", rule->mark);
  if (keys & DQ_FLOW_QUEUE)
    append_token (s, "queue=%u", rule->queue);
  return g_string_free (s, FALSE);
}

/* ---- matching ---- */

enum {
  HAVE_VLAN = 1 << 0,
  HAVE_ETHERTYPE = 1 << 1,
  HAVE_IPV4 = 1 << 2,  /* proto, src, dst */
  HAVE_PORTS = 1 << 3, /* UDP or TCP, first fragment, ports within the frame */
};

/* The header fields of one frame that rules test, each valid with its HAVE_ bit. */
typedef struct {
  guint have;
  guint16 vlan;
  guint16 ethertype;
  guint8 proto;
  guint32 src;
  guint32 dst;
  guint16 src_port;
  guint16 dst_port;
} FrameFields;

static inline guint16
read_be16 (const guint8 *p)
{
  return (guint16) (p[0] << 8 | p[1]);
}

static inline guint32
read_be32 (const guint8 *p)
{
  return (guint32) p[0] << 24 | (guint32) p[1] << 16 | (guint32) p[2] << 8 | p[3];
}

/* Reads the fields once; every read is preceded by a check that it lies below len. */
static inline void
read_frame_fields (const guint8 *frame, guint len, int vlan, FrameFields *f)
{
  guint l3 = 14, ihl, ver_ihl;
  guint16 type;

  /* a few stores; keeps the compiler sure that no field is read unset */
  memset (f, 0, sizeof *f);
  if (vlan >= 0) {
    f->have |= HAVE_VLAN;
    f->vlan = (guint16) (vlan & 0x0fff); /* the VID bits of a TCI */
  }
  if (len < 14)
    return;
  type = read_be16 (frame + 12);
  /* One in-band tag, when the NIC or kernel left it in the frame. */
  if (vlan < 0 && (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ)) {
    if (len < 18)
      return;
    f->have |= HAVE_VLAN;
    f->vlan = read_be16 (frame + 14) & 0x0fff;
    type = read_be16 (frame + 16);
    l3 = 18;
  }
  f->have |= HAVE_ETHERTYPE;
  f->ethertype = type;

  if (type != ETHERTYPE_IPV4 || len - l3 < 20)
    return;
  ver_ihl = frame[l3];
  if ((ver_ihl >> 4) != 4 || (ver_ihl & 0x0f) < 5)
    return;
  ihl = (ver_ihl & 0x0f) * 4u;
  if (len - l3 < ihl)
    return; /* options cut off: not a whole IPv4 header */
  f->have |= HAVE_IPV4;
  f->proto = frame[l3 + 9];
  f->src = read_be32 (frame + l3 + 12);
  f->dst = read_be32 (frame + l3 + 16);

  /* Only the first fragment (offset 0) carries the transport header. */
  if (read_be16 (frame + l3 + 6) & 0x1fff)
    return;
  if (f->proto != IPPROTO_NUM_UDP && f->proto != IPPROTO_NUM_TCP)
    return;
  if (len - l3 - ihl < 4)
    return;
  f->have |= HAVE_PORTS;
  f->src_port = read_be16 (frame + l3 + ihl);
  f->dst_port = read_be16 (frame + l3 + ihl + 2);
}

static inline gboolean
rule_matches (const DqFlowRule *r, const FrameFields *f)
{
  guint32 keys = r->keys;

  if ((keys & DQ_FLOW_VLAN) && (!(f->have & HAVE_VLAN) || f->vlan != r->vlan))
    return FALSE;
  if ((keys & DQ_FLOW_ETHERTYPE) && (!(f->have & HAVE_ETHERTYPE) || f->ethertype != r->ethertype))
    return FALSE;
  if (!(keys & IPV4_KEYS))
    return TRUE;

  if (!(f->have & HAVE_IPV4))
    return FALSE;
  if ((keys & DQ_FLOW_PROTO) && f->proto != r->proto)
    return FALSE;
  if ((keys & DQ_FLOW_SRC) && (f->src & prefix_mask (r->src_prefix)) != r->src)
    return FALSE;
  if ((keys & DQ_FLOW_DST) && (f->dst & prefix_mask (r->dst_prefix)) != r->dst)
    return FALSE;
  if (!(keys & PORT_KEYS))
    return TRUE;

  /* HAVE_PORTS only for UDP and TCP: ports without proto match either */
  if (!(f->have & HAVE_PORTS))
    return FALSE;
  if ((keys & DQ_FLOW_SRC_PORT) && f->src_port != r->src_port)
    return FALSE;
  if ((keys & DQ_FLOW_DST_PORT) && f->dst_port != r->dst_port)
    return FALSE;
  return TRUE;
}

int
dq_flow_match (const DqFlowRule *rules, guint n_rules, const guint8 *frame, guint len, int vlan)
{
  FrameFields f;
  guint i;

  if (n_rules == 0)
    return -1;
  read_frame_fields (frame, len, vlan, &f);
  for (i = 0; i < n_rules; i++)
    if (rule_matches (&rules[i], &f))
      return (int) i;
  return -1;
}

gboolean
dq_flow_rules_check_queues (
    const char *what, const DqFlowRule *rules, guint n_rules, guint n_queues, GError **error)
{
  for (guint i = 0; i < n_rules; i++) {
    const DqFlowRule *rule = &rules[i];
    if ((rule->keys & DQ_FLOW_QUEUE) && rule->queue >= n_queues) {
      char *text = dq_flow_rule_to_string (rule);
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "%s: flow rule %u (%s) sends to queue "
          "%u, but there %s only %u queue%s (allowed queue=0 .. %u)",
          what, i + 1, text, rule->queue, n_queues == 1 ? "is" : "are", n_queues,
          n_queues == 1 ? "" : "s", n_queues - 1);
      g_free (text);
      return FALSE;
    }
  }
  return TRUE;
}

DqFlowRule *
dq_flow_rules_for_queue (const DqFlowRule *rules, guint n_rules, guint queue, guint *n_out)
{
  DqFlowRule *out = g_new0 (DqFlowRule, MAX (n_rules, 1));
  guint n = 0;

  for (guint i = 0; i < n_rules; i++)
    if (!(rules[i].keys & DQ_FLOW_QUEUE) || rules[i].queue == queue)
      out[n++] = rules[i];
  *n_out = n;
  return out;
}

gboolean
dq_flow_classify (const DqFlowRule *rules, guint n_rules, const guint8 *frame, guint len, int vlan,
    guint32 *flow_id)
{
  *flow_id = 0;
  if (n_rules == 0)
    return TRUE;
  int idx = dq_flow_match (rules, n_rules, frame, len, vlan);
  if (idx < 0)
    return FALSE;
  if (rules[idx].keys & DQ_FLOW_MARK)
    *flow_id = rules[idx].mark;
  return TRUE;
}

gboolean
dq_flow_rule_group (const DqFlowRule *rule, guint32 *group)
{
  if (!(rule->keys & DQ_FLOW_DST) || rule->dst_prefix != 32 ||
      (rule->dst & 0xf0000000u) != 0xe0000000u)
    return FALSE;
  *group = rule->dst;
  return TRUE;
}
