/* The datapath's PRM constants against an independent source: the Linux kernel's
 * include/linux/mlx5/device.h, qp.h and cq.h (Debian's linux-headers-*-common), read as
 * data.
 *
 * The table below holds every PRM constant the host ring code (mlx5/rx.c, mlx5/tx.c) and
 * the emulated ConnectX (mlx5/emu/) use: those of mlx5/mlx5-dma.h, the emulator's
 * striding RQ bounds (emu-private.h) and the rdma-core (mlx5dv.h) constants they share.
 * Each is compared with one of:
 *   - a kernel constant of the same meaning, by name: `#define NAME value` or an enum
 *     member (`NAME = 1 << 3,`, other constants, implicit increments), the value an
 *     expression the small evaluator below computes;
 *   - where the kernel has the number inside an accessor or a struct rather than under
 *     a name (the multi-packet CQE's filler bit and stride count, the L4 header type's
 *     bits), that number, found by a pattern;
 *   - where kernel 6.1 has neither, a value cited from reference/daqiri-facts.md or the
 *     PRM (used only when the kernel read lacks the name).
 * Every object-like MLX5_* macro of mlx5-dma.h, and every MLX5_* name the ring code and
 * the emulator use, must be in the table (or be one of the host's own tunables), so
 * nothing goes unchecked.
 *
 * The parser checks itself first: a sample text with known values, a wrong value that
 * must be reported as a mismatch, and kernel names of known value. Every kernel found
 * under /usr/src is checked; DAQIRI_KERNEL_MLX5_INCLUDE=/path/include/linux/mlx5 names
 * one. Without one, the self-check and the cited values are checked and the test exits
 * 77 (skipped).
 */
#include <stdio.h>
#include <string.h>

#include <glib.h>
#include <infiniband/mlx5dv.h>

#include "emu-private.h"
#include "kernel-headers.h"
#include "mlx5-dma.h"

/* ------------------------------------------------------------------------------------ */
/* the table */

typedef enum {
  BY_NAME,    /* `kernel` is the name of a kernel constant */
  BY_PATTERN, /* `kernel` is a regular expression whose group 1 is a number */
} How;

typedef struct {
  const char *ours; /* our constant, or an expression of it */
  guint64 value;    /* as compiled */
  How how;
  const char *kernel; /* NULL: the kernel has no such constant */
  guint shift;        /* BY_PATTERN: the number is compared shifted left this far */
  gboolean width;     /* BY_PATTERN: the number is a field width in bits: 2^n - 1 */
  const char *cited;  /* where the kernel read lacks it: the source of cited_value */
  guint64 cited_value;
} Const;

#define K(ours, name) \
  { \
#ours, (guint64) (ours), BY_NAME, name, 0, FALSE, NULL, 0 \
  }
#define KP(ours, pattern, shift) \
  { \
#ours, (guint64) (ours), BY_PATTERN, pattern, shift, FALSE, NULL, 0 \
  }
#define KW(ours, pattern) \
  { \
#ours, (guint64) (ours), BY_PATTERN, pattern, 0, TRUE, NULL, 0 \
  }
/* by name where the kernel defines it (later kernels), else the cited value */
#define KC(ours, name, cite, v) \
  { \
#ours, (guint64) (ours), BY_NAME, name, 0, FALSE, cite, v \
  }
#define KPC(ours, pattern, cite, v) \
  { \
#ours, (guint64) (ours), BY_PATTERN, pattern, 0, FALSE, cite, v \
  }
#define CITED(ours, cite, v) \
  { \
#ours, (guint64) (ours), BY_NAME, NULL, 0, FALSE, cite, v \
  }

/* the accessor bodies of device.h the patterns read */
#define FN(name) name "\\s*\\([^)]*\\)\\s*\\{[^}]*?return\\s*"
#define NUM "(0x[0-9a-fA-F]+|[0-9]+)"
#define BC_HIGH "\\s*&\\s*be16_to_cpu\\s*\\(\\s*bc->filler_consumed_strides\\s*\\)"
#define MPWRQ_BC "struct\\s+mpwrq_cqe_bc\\s*\\{\\s*__be16\\s+filler_consumed_strides\\s*;\\s*"

static const Const consts[] = {
  /* mlx5-dma.h: the CQE and the striding RQ WQE */
  CITED (MLX5_CQE_SIZE, "daqiri-facts §4.1: 64 B CQEs (cqe_sz 0)", 64),
  CITED (MLX5_MPRQ_WQE_SIZE, "daqiri-facts §4.1: log_wq_stride 5 for MPRQ = 32 B WQE", 32),
  CITED (MLX5_LOG_MPRQ_WQE_SIZE, "daqiri-facts §4.1: log_wq_stride 5 for MPRQ", 5),
  /* the multi-packet CQE's byte_cnt: struct mpwrq_cqe_bc puts filler and strides in the
   * high 16 bits (filler_consumed_strides, then the 16-bit byte_cnt) */
  KP (MLX5_MPRQ_FILLER_FLAG, FN ("mpwrq_is_filler_cqe") NUM BC_HIGH, 16),
  KP (MLX5_MPRQ_STRIDES_SHIFT, MPWRQ_BC "__be([0-9]+)\\s+byte_cnt\\s*;", 0),
  KP (MLX5_MPRQ_STRIDES_MASK, FN ("mpwrq_get_cqe_bc_consumed_strides") NUM BC_HIGH, 0),
  KW (MLX5_MPRQ_LEN_MASK, MPWRQ_BC "__be([0-9]+)\\s+byte_cnt\\s*;"),
  K (MLX5_MPRQ_MAX_LOG_STRIDES, "MLX5_MPWQE_LOG_NUM_STRIDES_MAX"),
  /* mlx5-dma.h: compressed completions (device.h: the format accessor, the layouts and
   * the mini-CQE array; FTAG_STRIDX and the enhanced layout's 7 mini-CQEs a CQE are not
   * in kernel 6.1) */
  KP (MLX5_CQE_FORMAT_SHIFT, FN ("mlx5_get_cqe_format") "\\(\\s*cqe->op_own\\s*>>\\s*" NUM, 0),
  KP (MLX5_CQE_FORMAT_MASK,
      FN ("mlx5_get_cqe_format") "\\(\\s*cqe->op_own\\s*>>\\s*[0-9]+\\s*\\)\\s*&\\s*" NUM, 0),
  K (MLX5_COMPRESSED, "MLX5_COMPRESSED"),
  K (MLX5_MINI_CQE_ARRAY_SIZE, "MLX5_MINI_CQE_ARRAY_SIZE"),
  K (MLX5_CQE_COMPRESS_LAYOUT_BASIC, "MLX5_CQE_COMPRESS_LAYOUT_BASIC"),
  K (MLX5_CQE_COMPRESS_LAYOUT_ENHANCED, "MLX5_CQE_COMPRESS_LAYOUT_ENHANCED"),
  CITED (MLX5_CQE_FORMAT_FTAG_STRIDX,
      "DPDK drivers/common/mlx5/mlx5_prm.h: MLX5_CQE_RESP_FORMAT_FTAG_STRIDX = 0x2", 0x2),
  CITED (MLX5_ENH_MINI_CQES,
      "Linux en_rx.c mlx5e_decompress_enhanced_cqe, DPDK mlx5_rx.c mlx5_rx_poll_len: the "
      "count less one in op_own bits 7..4 (MLX5_CQE_NUM_MINIS), mini-CQEs in bytes 0..55",
      7),
  /* mlx5-dma.h: the control segment (fm_ce_se, qpn_ds) */
  K (MLX5_WQE_CTRL_CE_MASK, "MLX5_WQE_CTRL_CQ_UPDATE_AND_EQE"), /* CE = 3: every bit */
  CITED (MLX5_WQE_CTRL_CQ_ONLY_FIRST_ERR, "daqiri-facts §4.6: ONLY_FIRST_ERR = 0x04", 0x04),
  K (MLX5_WQE_DS_MASK, "MLX5_WQE_CTRL_DS_MASK"),
  /* mlx5-dma.h: the inline Ethernet header of minimum inline mode L2 (the kernel's en.h
   * has MLX5E_MIN_INLINE, not in the public headers) */
  CITED (MLX5_ETH_L2_INLINE_SIZE,
      "PRM Ethernet segment: L2 inline = Ethernet header + one VLAN tag, 14 + 4 bytes", 18),
  /* mlx5-dma.h: the WAIT WQE of send scheduling (not in kernel 6.1) */
  CITED (MLX5_OPCODE_WAIT, "daqiri-facts §4.6: MLX5_OPCODE_WAIT 0x0F", 0x0f),
  CITED (MLX5_OPC_MOD_WAIT_TIME, "daqiri-facts §4.6: opmod 2 = WAIT_TIME", 2),
  CITED (MLX5_WAIT_COND_CYCLIC_SMALLER, "daqiri-facts §4.6: MLX5_WAIT_COND_CYCLIC_SMALLER 5", 5),
  CITED (MLX5_WAIT_TIME_MASK, "daqiri-facts §4.6: mask = (8 << 32) - 1, an 8-second window",
      0x7ffffffffULL),
  CITED (
      MLX5_WAIT_WINDOW_NS, "daqiri-facts §4.6: the mask's cyclic window, 8 s in ns", 8000000000ULL),
  K (MLX5_WQE_DS_SIZE, "MLX5_SEND_WQE_DS"),
  /* mlx5-dma.h: the flow tag is the width of the steering's flow_tag (mlx5_ifc.h) */
  KW (MLX5_FLOW_TAG_BITS,
      "struct\\s+mlx5_ifc_flow_context_bits\\s*\\{[^}]*?u8\\s+flow_tag\\[" NUM "\\]"),
  /* mlx5-dma.h: the CQE's l4_l3_hdr_type */
  KP (MLX5_CQE_L4_HDR_SHIFT, FN ("get_cqe_l4_hdr_type") "\\(\\s*cqe->l4_l3_hdr_type\\s*>>\\s*" NUM,
      0),
  KP (MLX5_CQE_L4_HDR_MASK,
      FN ("get_cqe_l4_hdr_type") "\\(\\s*cqe->l4_l3_hdr_type\\s*>>\\s*[0-9]+\\s*\\)\\s*&\\s*" NUM,
      0),
  /* kernel 6.1 has no get_cqe_l3_hdr_type; later kernels do */
  KPC (MLX5_CQE_L3_HDR_SHIFT, FN ("get_cqe_l3_hdr_type") "\\(\\s*cqe->l4_l3_hdr_type\\s*>>\\s*" NUM,
      "PRM CQE format: l3_hdr_type is bits 3..2 of byte 0x1d", 2),
  K (MLX5_CQE_L4_HDR_TYPE_NONE, "CQE_L4_HDR_TYPE_NONE"),
  K (MLX5_CQE_L4_HDR_TYPE_TCP_NO_ACK, "CQE_L4_HDR_TYPE_TCP_NO_ACK"),
  K (MLX5_CQE_L4_HDR_TYPE_UDP, "CQE_L4_HDR_TYPE_UDP"),
  K (MLX5_CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA, "CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA"),
  K (MLX5_CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA, "CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA"),

  /* emu-private.h: the striding RQ bounds the emulated device enforces */
  K (EMU_MIN_LOG_STRIDE_SIZE, "MLX5_MPWQE_LOG_STRIDE_SZ_BASE"),
  K (EMU_MAX_LOG_STRIDE_SIZE, "MLX5_MPWQE_LOG_STRIDE_SZ_MAX"),
  K (EMU_MIN_LOG_STRIDES, "MLX5_MPWQE_LOG_NUM_STRIDES_EXT_BASE"),
  K (EMU_MAX_LOG_STRIDES, "MLX5_MPWQE_LOG_NUM_STRIDES_MAX"),

  /* rdma-core's mlx5dv.h, as the ring code and the emulator use it: CQE opcodes (cq.h) */
  K (MLX5_CQE_OWNER_MASK, "MLX5_CQE_OWNER_MASK"),
  K (MLX5_CQE_REQ, "MLX5_CQE_REQ"),
  K (MLX5_CQE_RESP_SEND, "MLX5_CQE_RESP_SEND"),
  K (MLX5_CQE_REQ_ERR, "MLX5_CQE_REQ_ERR"),
  K (MLX5_CQE_RESP_ERR, "MLX5_CQE_RESP_ERR"),
  K (MLX5_CQE_INVALID, "MLX5_CQE_INVALID"),
  K (MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, "MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR"),
  K (MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR"),
  K (MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, "MLX5_CQE_SYNDROME_LOCAL_PROT_ERR"),
  K (MLX5_CQE_SYNDROME_WR_FLUSH_ERR, "MLX5_CQE_SYNDROME_WR_FLUSH_ERR"),
  /* the CQE's checksum bits and L3 header types (device.h) */
  K (MLX5_CQE_L2_OK, "CQE_L2_OK"),
  K (MLX5_CQE_L3_OK, "CQE_L3_OK"),
  K (MLX5_CQE_L4_OK, "CQE_L4_OK"),
  /* kernel 6.1 has no L3 header types; later kernels name IPv6 and IPv4 */
  CITED (MLX5_CQE_L3_HDR_TYPE_NONE, "PRM CQE format: l3_hdr_type 0 = none", 0x0),
  KC (MLX5_CQE_L3_HDR_TYPE_IPV6, "CQE_L3_HDR_TYPE_IPV6", "PRM CQE format: l3_hdr_type 1 = IPv6",
      0x1),
  KC (MLX5_CQE_L3_HDR_TYPE_IPV4, "CQE_L3_HDR_TYPE_IPV4", "PRM CQE format: l3_hdr_type 2 = IPv4",
      0x2),
  /* send WQEs (device.h, qp.h) */
  K (MLX5_OPCODE_NOP, "MLX5_OPCODE_NOP"),
  K (MLX5_OPCODE_SEND, "MLX5_OPCODE_SEND"),
  K (MLX5_OPCODE_ENHANCED_MPSW, "MLX5_OPCODE_ENHANCED_MPSW"),
  K (MLX5_WQE_CTRL_CQ_UPDATE, "MLX5_WQE_CTRL_CQ_UPDATE"),
  K (MLX5_ETH_WQE_L3_CSUM, "MLX5_ETH_WQE_L3_CSUM"),
  K (MLX5_ETH_WQE_L4_CSUM, "MLX5_ETH_WQE_L4_CSUM"),
  K (MLX5_INLINE_SEG, "MLX5_INLINE_SEG"),
  K (MLX5_SEND_WQE_BB, "MLX5_SEND_WQE_BB"),
  K (1u << MLX5_SEND_WQE_SHIFT, "MLX5_SEND_WQE_BB"),
  /* doorbell record indices (qp.h) */
  K (MLX5_RCV_DBR, "MLX5_RCV_DBR"),
  K (MLX5_SND_DBR, "MLX5_SND_DBR"),
};

/* MLX5_* names the ring code uses that are not PRM constants: the host's own tunables
 * (rx.h, tx.h), counters (mlx5-mem.h) and the RSS setup the hardware path and the
 * emulator share (mlx5-rss.h) */
static const char *const not_prm_prefixes[] = { "MLX5_RX_", "MLX5_TX_", "MLX5_COUNTER_",
  "MLX5_CQ_COMP_", "MLX5_RSS_" };

/* ------------------------------------------------------------------------------------ */
/* the parser: `#define NAME expr` and enum members, their values computed on demand */

typedef struct {
  GHashTable *exprs; /* name -> expression text (the first definition wins) */
  GString *text;     /* every file read, comments removed, for the patterns */
  GPtrArray *files;  /* the paths read */
} KText;

static KText *
ktext_new (void)
{
  KText *k = g_new0 (KText, 1);
  k->exprs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  k->text = g_string_new (NULL);
  k->files = g_ptr_array_new_with_free_func (g_free);
  return k;
}

static void
ktext_free (KText *k)
{
  g_hash_table_unref (k->exprs);
  g_string_free (k->text, TRUE);
  g_ptr_array_unref (k->files);
  g_free (k);
}

/* C source without comments, with backslash-newline continuations joined */
static char *
strip_comments (const char *src)
{
  GString *out = g_string_sized_new (strlen (src));
  for (const char *p = src; *p;) {
    if (p[0] == '/' && p[1] == '*') {
      const char *end = strstr (p + 2, "*/");
      g_string_append_c (out, ' ');
      p = end ? end + 2 : p + strlen (p);
    } else if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n')
        p++;
    } else if (p[0] == '\\' && p[1] == '\n') {
      g_string_append_c (out, ' ');
      p += 2;
    } else {
      g_string_append_c (out, *p++);
    }
  }
  return g_string_free (out, FALSE);
}

static gboolean
ident_start (char c)
{
  return g_ascii_isalpha (c) || c == '_';
}

static gboolean
ident_char (char c)
{
  return g_ascii_isalnum (c) || c == '_';
}

/* only blanks between the line's start and p */
static gboolean
line_start (const char *text, const char *p)
{
  while (p > text && (p[-1] == ' ' || p[-1] == '\t'))
    p--;
  return p == text || p[-1] == '\n';
}

static void
define (KText *k, const char *name, gsize name_len, const char *expr, gsize expr_len)
{
  char *n = g_strndup (name, name_len);
  if (g_hash_table_contains (k->exprs, n)) {
    g_free (n);
    return;
  }
  char *e = g_strstrip (g_strndup (expr, expr_len));
  g_hash_table_insert (k->exprs, n, e);
}

/* the members of an enum body [p, end): `NAME`, `NAME = expr`, separated by commas
 * outside parentheses; a member without a value is the one before plus 1 (the first 0) */
static void
parse_enum_body (KText *k, const char *p, const char *end)
{
  char *prev = NULL;
  while (p < end) {
    while (p < end && (g_ascii_isspace (*p) || *p == ','))
      p++;
    if (p < end && *p == '#') { /* a preprocessor line inside the enum */
      while (p < end && *p != '\n')
        p++;
      continue;
    }
    if (p >= end || !ident_start (*p))
      break;
    const char *name = p;
    while (p < end && ident_char (*p))
      p++;
    gsize name_len = (gsize) (p - name);
    while (p < end && g_ascii_isspace (*p))
      p++;
    char *expr;
    if (p < end && *p == '=') {
      const char *e = ++p;
      int depth = 0;
      while (p < end && (depth > 0 || *p != ',')) {
        if (*p == '(')
          depth++;
        else if (*p == ')')
          depth--;
        p++;
      }
      expr = g_strndup (e, (gsize) (p - e));
    } else {
      expr = prev ? g_strdup_printf ("(%s) + 1", prev) : g_strdup ("0");
    }
    define (k, name, name_len, expr, strlen (expr));
    g_free (expr);
    g_free (prev);
    prev = g_strndup (name, name_len);
  }
  g_free (prev);
}

static void
ktext_add (KText *k, const char *src)
{
  char *text = strip_comments (src);
  g_string_append (k->text, text);
  g_string_append_c (k->text, '\n');
  for (const char *p = text; *p;) {
    /* #define NAME body (object-like: no parenthesis right after the name) */
    if (*p == '#' && line_start (text, p)) {
      const char *q = p + 1;
      while (*q == ' ' || *q == '\t')
        q++;
      const char *eol = strchr (q, '\n');
      if (eol == NULL)
        eol = q + strlen (q);
      if (g_str_has_prefix (q, "define") && (q[6] == ' ' || q[6] == '\t')) {
        q += 6;
        while (*q == ' ' || *q == '\t')
          q++;
        const char *name = q;
        while (ident_char (*q))
          q++;
        if (q > name && *q != '(' && q < eol)
          define (k, name, (gsize) (q - name), q, (gsize) (eol - q));
      }
      p = *eol ? eol + 1 : eol;
      continue;
    }
    /* enum [tag] { ... } */
    if (g_str_has_prefix (p, "enum") && !ident_char (p[4]) && (p == text || !ident_char (p[-1]))) {
      const char *q = p + 4;
      while (g_ascii_isspace (*q))
        q++;
      while (ident_char (*q))
        q++;
      while (g_ascii_isspace (*q))
        q++;
      if (*q == '{') {
        const char *end = strchr (q, '}');
        if (end) {
          parse_enum_body (k, q + 1, end);
          p = end + 1;
          continue;
        }
      }
      p += 4;
      continue;
    }
    p++;
  }
  g_free (text);
}

static gboolean
ktext_add_file (KText *k, const char *path, GError **error)
{
  char *src;
  if (!g_file_get_contents (path, &src, NULL, error))
    return FALSE;
  ktext_add (k, src);
  g_free (src);
  g_ptr_array_add (k->files, g_strdup (path));
  return TRUE;
}

/* An integer expression: literals (0x.., decimal, u/l suffixes), names the text defines,
 * ( ) ~ ! - + * / % << >> & ^ |, BIT(n) and GENMASK(h, l). */
typedef struct {
  KText *k;
  const char *p;
  int depth; /* names being expanded, against cycles */
  gboolean bad;
} Eval;

static gboolean eval_name (KText *k, const char *name, int depth, guint64 *value);

static void
skip_space (Eval *e)
{
  while (g_ascii_isspace (*e->p))
    e->p++;
}

static guint64 eval_binary (Eval *e, int level);

static guint64
eval_primary (Eval *e)
{
  skip_space (e);
  const char *p = e->p;
  if (*p == '(') {
    e->p++;
    guint64 v = eval_binary (e, 0);
    skip_space (e);
    if (*e->p != ')') {
      e->bad = TRUE;
      return 0;
    }
    e->p++;
    return v;
  }
  if (*p == '~' || *p == '-' || *p == '!' || *p == '+') {
    e->p++;
    guint64 v = eval_primary (e);
    return *p == '~' ? ~v : *p == '-' ? (guint64) - (gint64) v : *p == '!' ? !v : v;
  }
  if (g_ascii_isdigit (*p)) {
    char *end;
    guint64 v = g_ascii_strtoull (p, &end, 0);
    while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L')
      end++;
    e->p = end;
    return v;
  }
  if (ident_start (*p)) {
    const char *q = p;
    while (ident_char (*q))
      q++;
    char *name = g_strndup (p, (gsize) (q - p));
    e->p = q;
    guint64 v = 0;
    if (strcmp (name, "BIT") == 0 || strcmp (name, "GENMASK") == 0) {
      skip_space (e);
      if (*e->p != '(') {
        e->bad = TRUE;
      } else {
        e->p++;
        guint64 a = eval_binary (e, 0), b = 0;
        skip_space (e);
        if (name[0] == 'G') {
          if (*e->p == ',') {
            e->p++;
            b = eval_binary (e, 0);
            skip_space (e);
          } else {
            e->bad = TRUE;
          }
        }
        if (*e->p != ')' || a > 63 || b > a)
          e->bad = TRUE;
        else
          e->p++;
        if (!e->bad)
          v = name[0] == 'B' ? G_GUINT64_CONSTANT (1) << a : ((G_MAXUINT64 >> (63 - a)) >> b) << b;
      }
    } else if (!eval_name (e->k, name, e->depth + 1, &v)) {
      e->bad = TRUE;
    }
    g_free (name);
    return v;
  }
  e->bad = TRUE;
  return 0;
}

/* binary operators, loosest first */
static const char *const levels[][3] = {
  { "|", NULL, NULL },
  { "^", NULL, NULL },
  { "&", NULL, NULL },
  { "<<", ">>", NULL },
  { "+", "-", NULL },
  { "*", "/", "%" },
};

static const char *
match_op (Eval *e, int level)
{
  skip_space (e);
  for (int i = 0; i < 3 && levels[level][i]; i++) {
    const char *op = levels[level][i];
    gsize n = strlen (op);
    if (strncmp (e->p, op, n) != 0)
      continue;
    /* `&` is not `&&`, `|` not `||`, `<` alone is no operator here */
    if (n == 1 && (e->p[1] == op[0] || e->p[1] == '='))
      continue;
    e->p += n;
    return op;
  }
  return NULL;
}

static guint64
eval_binary (Eval *e, int level)
{
  if (level == (int) G_N_ELEMENTS (levels))
    return eval_primary (e);
  guint64 v = eval_binary (e, level + 1);
  const char *op;
  while (!e->bad && (op = match_op (e, level)) != NULL) {
    guint64 r = eval_binary (e, level + 1);
    switch (op[0]) {
      case '|': v |= r; break;
      case '^': v ^= r; break;
      case '&': v &= r; break;
      case '<': v = r < 64 ? v << r : 0; break;
      case '>': v = r < 64 ? v >> r : 0; break;
      case '+': v += r; break;
      case '-': v -= r; break;
      case '*': v *= r; break;
      default:
        if (r == 0)
          e->bad = TRUE;
        else
          v = op[0] == '/' ? v / r : v % r;
        break;
    }
  }
  return v;
}

static gboolean
eval_expr (KText *k, const char *expr, int depth, guint64 *value)
{
  Eval e = { k, expr, depth, FALSE };
  guint64 v = eval_binary (&e, 0);
  skip_space (&e);
  if (e.bad || *e.p != '\0')
    return FALSE;
  *value = v;
  return TRUE;
}

/* the value of a name the text defines; FALSE when undefined or not computable */
static gboolean
eval_name (KText *k, const char *name, int depth, guint64 *value)
{
  const char *expr = g_hash_table_lookup (k->exprs, name);
  if (expr == NULL || depth > 32)
    return FALSE;
  return eval_expr (k, expr, depth, value);
}

/* the number group 1 of `pattern` finds in the text */
static gboolean
eval_pattern (KText *k, const char *pattern, guint64 *value)
{
  return kernel_text_number (k->text->str, pattern, G_REGEX_DOTALL, value);
}

/* ------------------------------------------------------------------------------------ */
/* the comparison */

/* One constant against the kernel's text `k` (NULL: none read). TRUE when it agrees;
 * else FALSE and *why says with what. *from says what it was compared with. */
static gboolean
check_const (const Const *c, KText *k, char **why, const char **from)
{
  guint64 want = 0;
  gboolean found = FALSE;
  *why = NULL;
  *from = NULL;
  if (k && c->kernel) {
    if (c->how == BY_NAME) {
      found = eval_name (k, c->kernel, 0, &want);
    } else if (eval_pattern (k, c->kernel, &want)) {
      found = TRUE;
      if (c->width)
        want = want >= 64 ? G_MAXUINT64 : (G_GUINT64_CONSTANT (1) << want) - 1;
      else
        want <<= c->shift;
    }
    if (found)
      *from = c->how == BY_NAME ? c->kernel : "the kernel's accessor or layout";
  }
  if (!found && c->cited) {
    want = c->cited_value;
    found = TRUE;
    *from = c->cited;
  }
  if (!found) {
    if (k == NULL)
      return TRUE; /* nothing to compare with here: counted by the caller */
    *why = g_strdup_printf ("%s: the kernel defines no %s %s, and nothing is cited", c->ours,
        c->how == BY_NAME ? "constant" : "match for", c->kernel);
    return FALSE;
  }
  if (want != c->value) {
    *why = g_strdup_printf ("%s is 0x%" G_GINT64_MODIFIER "x, %s says 0x%" G_GINT64_MODIFIER "x",
        c->ours, c->value, *from, want);
    return FALSE;
  }
  return TRUE;
}

static void
check_all (KText *k, const char *where)
{
  guint by_kernel = 0, by_cite = 0;
  for (guint i = 0; i < G_N_ELEMENTS (consts); i++) {
    char *why;
    const char *from;
    if (!check_const (&consts[i], k, &why, &from)) {
      fail ("%s (%s)", why, where);
      g_free (why);
      continue;
    }
    if (from == NULL)
      continue;
    if (consts[i].cited && strcmp (from, consts[i].cited) == 0)
      by_cite++;
    else
      by_kernel++;
  }
  g_print ("%s: %u constants equal to the kernel's, %u to the cited values\n", where, by_kernel,
      by_cite);
}

/* ------------------------------------------------------------------------------------ */
/* nothing unchecked */

static gboolean
in_table (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (consts); i++) {
    const char *o = consts[i].ours;
    gsize n = strlen (name);
    /* the name itself, or inside an expression of it (`1u << MLX5_SEND_WQE_SHIFT`) */
    for (const char *p = strstr (o, name); p; p = strstr (p + 1, name))
      if ((p == o || !ident_char (p[-1])) && !ident_char (p[n]))
        return TRUE;
  }
  return FALSE;
}

static gboolean
not_prm (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (not_prm_prefixes); i++)
    if (g_str_has_prefix (name, not_prm_prefixes[i]))
      return TRUE;
  return FALSE;
}

/* every MLX5_* name used (outside comments) in `path` is in the table */
static void
check_uses (const char *path, GHashTable *seen)
{
  char *src;
  GError *err = NULL;
  if (!g_file_get_contents (path, &src, NULL, &err)) {
    fail ("cannot read %s: %s", path, err->message);
    g_error_free (err);
    return;
  }
  char *text = strip_comments (src);
  g_free (src);
  GRegex *re = g_regex_new ("\\bMLX5_[A-Z0-9_]+\\b", 0, 0, NULL);
  GMatchInfo *mi = NULL;
  g_regex_match (re, text, 0, &mi);
  while (g_match_info_matches (mi)) {
    char *name = g_match_info_fetch (mi, 0);
    if (!in_table (name) && !not_prm (name) && !g_hash_table_contains (seen, name)) {
      fail ("%s uses %s, which the test's table lacks: add it", path, name);
      g_hash_table_add (seen, g_strdup (name));
    }
    g_free (name);
    g_match_info_next (mi, NULL);
  }
  g_match_info_free (mi);
  g_regex_unref (re);
  g_free (text);
}

/* every object-like MLX5_* macro mlx5-dma.h defines, and every MLX5_* name of the ring
 * code and the emulator, is in the table */
static void
check_complete (void)
{
  GHashTable *seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  char *dma_h = g_build_filename (DQ_MLX5_SRC_DIR, "mlx5-dma.h", NULL);
  KText *ours = ktext_new ();
  GError *err = NULL;
  if (!ktext_add_file (ours, dma_h, &err)) {
    fail ("cannot read %s: %s", dma_h, err->message);
    g_error_free (err);
  }
  GHashTableIter it;
  gpointer key;
  guint defined = 0;
  g_hash_table_iter_init (&it, ours->exprs);
  while (g_hash_table_iter_next (&it, &key, NULL)) {
    if (!g_str_has_prefix (key, "MLX5_"))
      continue;
    defined++;
    if (!in_table (key))
      fail ("%s defines %s, which the test's table lacks: add it", dma_h, (const char *) key);
  }
  ktext_free (ours);
  g_free (dma_h);

  static const char *const files[] = { "rx.c", "tx.c", "mlx5-dma.h" };
  for (guint i = 0; i < G_N_ELEMENTS (files); i++) {
    char *p = g_build_filename (DQ_MLX5_SRC_DIR, files[i], NULL);
    check_uses (p, seen);
    g_free (p);
  }
  char *emu_dir = g_build_filename (DQ_MLX5_SRC_DIR, "emu", NULL);
  GDir *d = g_dir_open (emu_dir, 0, &err);
  guint emu_files = 0;
  if (d == NULL) {
    fail ("cannot list %s: %s", emu_dir, err->message);
    g_clear_error (&err);
  } else {
    const char *name;
    while ((name = g_dir_read_name (d)) != NULL) {
      if (!g_str_has_suffix (name, ".c") && !g_str_has_suffix (name, ".h"))
        continue;
      char *p = g_build_filename (emu_dir, name, NULL);
      check_uses (p, seen);
      g_free (p);
      emu_files++;
    }
    g_dir_close (d);
  }
  g_free (emu_dir);
  g_hash_table_unref (seen);
  if (defined < 10 || emu_files < 3)
    fail ("read only %u MLX5_ macros of mlx5-dma.h and %u emulator sources", defined, emu_files);
  g_print ("table: %u constants; mlx5-dma.h's %u MLX5_ macros and the MLX5_ names of rx.c, "
           "tx.c and %u emulator sources are in it\n",
      (guint) G_N_ELEMENTS (consts), defined, emu_files);
}

/* ------------------------------------------------------------------------------------ */
/* the parser checks itself */

static const char sample[] = "#define DQ_A 0x10\n"
                             "#define DQ_F(x) ((x) + 1)\n"
                             "  # define DQ_SPACED 7U\n"
                             "/* DQ_COMMENTED = 5, */\n"
                             "enum { DQ_B = 1 << 3, DQ_C, DQ_D = DQ_B | 0x2,\n"
                             "  DQ_E = GENMASK(3, 2), DQ_G = (DQ_A >> 4) + 1U, DQ_K = BIT(5) };\n"
                             "enum dq_tag {\n\tDQ_H,\n\tDQ_I, // one\n\tDQ_L = DQ_I * 3 - 1,\n"
                             "#ifdef DQ_X\n\tDQ_M,\n#endif\n};\n"
                             "#define DQ_J (DQ_A * \\\n 2)\n"
                             "#define DQ_UNKNOWN (DQ_NOWHERE + 1)\n"
                             "static inline u8 dq_get(u8 x)\n{\n\treturn (x >> 4) & 0x7;\n}\n";

/* a name and the value it is known to have */
typedef struct {
  const char *name;
  guint64 value;
} KnownValue;

/* every known name evaluates in `k` (the text `where`) to its value */
static void
check_known (KText *k, const KnownValue *known, guint n, const char *where)
{
  for (guint i = 0; i < n; i++) {
    guint64 v;
    if (!eval_name (k, known[i].name, 0, &v))
      fail ("parser: %s not found in %s", known[i].name, where);
    else if (v != known[i].value)
      fail ("parser: %s in %s parsed as 0x%" G_GINT64_MODIFIER
            "x, known to be 0x%" G_GINT64_MODIFIER "x",
          known[i].name, where, v, known[i].value);
  }
}

static void
self_check_sample (void)
{
  static const KnownValue known[] = {
    { "DQ_A", 16 },
    { "DQ_SPACED", 7 },
    { "DQ_B", 8 },
    { "DQ_C", 9 },
    { "DQ_D", 10 },
    { "DQ_E", 12 },
    { "DQ_G", 2 },
    { "DQ_K", 32 },
    { "DQ_H", 0 },
    { "DQ_I", 1 },
    { "DQ_L", 2 },
    { "DQ_M", 3 },
    { "DQ_J", 32 },
  };
  static const char *const absent[] = { "DQ_F", "DQ_COMMENTED", "DQ_UNKNOWN", "DQ_NOWHERE" };
  KText *k = ktext_new ();
  ktext_add (k, sample);
  check_known (k, known, G_N_ELEMENTS (known), "the sample");
  for (guint i = 0; i < G_N_ELEMENTS (absent); i++) {
    guint64 v;
    if (eval_name (k, absent[i], 0, &v))
      fail ("parser: %s has a value (0x%" G_GINT64_MODIFIER "x), the sample gives it none",
          absent[i], v);
  }

  /* the comparison reports a wrong value, and takes a right one, by name and pattern */
  const Const good = { "DQ_OURS", 10, BY_NAME, "DQ_D", 0, FALSE, NULL, 0 };
  const Const wrong = { "DQ_OURS", 4, BY_NAME, "DQ_D", 0, FALSE, NULL, 0 };
  const Const missing = { "DQ_OURS", 4, BY_NAME, "DQ_NOWHERE", 0, FALSE, NULL, 0 };
  const Const cited = { "DQ_OURS", 4, BY_NAME, "DQ_NOWHERE", 0, FALSE, "a citation", 5 };
  const Const pat = { "DQ_OURS", 0x40, BY_PATTERN, FN ("dq_get") "\\(\\s*x\\s*>>\\s*" NUM, 4, FALSE,
    NULL, 0 };
  const Const pat_wrong = { "DQ_OURS", 0x7, BY_PATTERN,
    FN ("dq_get") "\\(\\s*x\\s*>>\\s*[0-9]+\\s*\\)\\s*&\\s*" NUM, 0, TRUE, NULL, 0 };
  struct {
    const Const *c;
    gboolean agrees;
  } cases[] = { { &good, TRUE }, { &wrong, FALSE }, { &missing, FALSE }, { &cited, FALSE },
    { &pat, TRUE }, { &pat_wrong, FALSE } };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    char *why;
    const char *from;
    gboolean agrees = check_const (cases[i].c, k, &why, &from);
    if (agrees != cases[i].agrees)
      fail ("comparison: case %u (%s 0x%" G_GINT64_MODIFIER "x against %s) %s", i, cases[i].c->ours,
          cases[i].c->value, cases[i].c->kernel,
          agrees ? "agreed, and should not" : "disagreed, and should not");
    else if (!agrees && why == NULL)
      fail ("comparison: case %u disagreed without saying why", i);
    else if (!agrees)
      g_print ("self-check, expected: %s\n", why);
    g_free (why);
  }
  ktext_free (k);
}

/* names of known value in a real kernel: literal, implicit, by another member, by a
 * #define expression, by a shift */
static void
self_check_kernel (KText *k, const char *where)
{
  static const KnownValue known[] = {
    { "MLX5_CQE_INVALID", 15 },
    { "MLX5_COMPRESSED", 3 },
    { "MLX5_HW_START_PADDING", 0x80000000u },
    { "MLX5_SEND_WQEBB_NUM_DS", 4 },
    { "MLX5_WQE_CTRL_CQ_UPDATE_AND_EQE", 0xc },
    { "MLX5_FENCE_MODE_SMALL_AND_FENCE", 0x80 },
  };
  check_known (k, known, G_N_ELEMENTS (known), where);
}

/* ------------------------------------------------------------------------------------ */

/* include/linux/mlx5 folders with device.h and qp.h */
static GPtrArray *
find_kernel_dirs (void)
{
  static const char *const need[] = { "device.h", "qp.h", NULL };
  const char *env = g_getenv ("DAQIRI_KERNEL_MLX5_INCLUDE");
  if (env && *env) {
    GPtrArray *found = g_ptr_array_new_with_free_func (g_free);
    g_ptr_array_add (found, g_strdup (env));
    return found;
  }
  return kernel_mlx5_dirs (need);
}

static void
check_kernel (const char *dir)
{
  /* device.h and qp.h define the constants; cq.h the CQE opcodes and syndromes;
   * mlx5_ifc.h the flow tag's width */
  static const char *const names[] = { "device.h", "qp.h", "cq.h", "mlx5_ifc.h" };
  KText *k = ktext_new ();
  for (guint i = 0; i < G_N_ELEMENTS (names); i++) {
    char *p = g_build_filename (dir, names[i], NULL);
    GError *err = NULL;
    if (!ktext_add_file (k, p, &err)) {
      fail ("%s: %s", p, err->message);
      g_error_free (err);
    }
    g_free (p);
  }
  self_check_kernel (k, dir);
  check_all (k, dir);
  ktext_free (k);
}

int
main (int argc, char **argv)
{
  (void) argc;
  (void) argv;
  self_check_sample ();
  check_complete ();
  check_all (NULL, "cited values");

  GPtrArray *dirs = find_kernel_dirs ();
  for (guint i = 0; i < dirs->len; i++)
    check_kernel (g_ptr_array_index (dirs, i));
  guint n_kernels = dirs->len;
  g_ptr_array_unref (dirs);

  return kernel_test_status (n_kernels,
      "no kernel include/linux/mlx5/device.h and qp.h to compare with: install "
      "Debian's linux-headers-6.1.0-*-common (scripts/deps.sh does) or set "
      "DAQIRI_KERNEL_MLX5_INCLUDE=/path/to/include/linux/mlx5; the parser and the "
      "cited values were checked only");
}
