/* Tests of the flow-rule module's classic BPF programs (flow-bpf.c): run in an interpreter
 * written here, against the software matcher and an independent reading of the frame, and
 * by the kernel (socket filter and PACKET_FANOUT_CBPF on loopback). */
#include "flow-test-util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
  guint32 pkttype;   /* PACKET_HOST ... PACKET_OUTGOING */
  guint data_offset; /* 14 for a received packet in a fanout program, else 0 */
} BpfAux;

static guint
load_size (guint16 code)
{
  switch (BPF_SIZE (code)) {
    case BPF_W: return 4;
    case BPF_H: return 2;
    default: return 1;
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
    case SKF_AD_VLAN_TAG_PRESENT: return aux->vlan_present;
    case SKF_AD_VLAN_TAG: return aux->vlan_tci;
    case SKF_AD_RXHASH: return aux->rxhash;
    case SKF_AD_PKTTYPE: return aux->pkttype;
    default: g_error ("unexpected ancillary load %u", what);
  }
  return 0;
}

static guint32
bpf_alu (guint op, guint32 a, guint32 operand, gboolean *div_zero)
{
  switch (op) {
    case BPF_ADD: return a + operand;
    case BPF_SUB: return a - operand;
    case BPF_MUL: return a * operand;
    case BPF_DIV: *div_zero = operand == 0; return operand ? a / operand : 0;
    case BPF_MOD: *div_zero = operand == 0; return operand ? a % operand : 0;
    case BPF_AND: return a & operand;
    case BPF_OR: return a | operand;
    case BPF_XOR: return a ^ operand;
    case BPF_LSH: return operand < 32 ? a << operand : 0;
    case BPF_RSH: return operand < 32 ? a >> operand : 0;
    case BPF_NEG: return -a;
    default: g_error ("unexpected ALU op 0x%x", op);
  }
  return 0;
}

static gboolean
bpf_jump_taken (guint op, guint32 a, guint32 operand)
{
  switch (op) {
    case BPF_JEQ: return a == operand;
    case BPF_JGT: return a > operand;
    case BPF_JGE: return a >= operand;
    case BPF_JSET: return (a & operand) != 0;
    default: g_error ("unexpected jump op 0x%x", op);
  }
  return FALSE;
}

/* A packet load at `offset` as the kernel resolves it: from skb->data when it is not
 * negative, from the MAC header (the frame's first byte) at SKF_LL_OFF. */
static gboolean
bpf_load_packet (const guint8 *frame, guint frame_len, const BpfAux *aux, gint32 offset, guint size,
    guint32 *out)
{
  if (offset >= 0)
    return bpf_load (
        frame + aux->data_offset, frame_len - aux->data_offset, (guint64) offset, size, out);
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
  guint len = frame_len - aux->data_offset; /* skb->len */
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
            else if (!bpf_load_packet (
                         frame, frame_len, aux, (gint32) in->k, load_size (in->code), &a))
              return 0;
            break;
          case BPF_IND:
            /* the kernel adds in 32 bits and reads the sum as signed */
            if (!bpf_load_packet (
                    frame, frame_len, aux, (gint32) (x + in->k), load_size (in->code), &a))
              return 0;
            break;
          case BPF_LEN: a = len; break;
          case BPF_IMM: a = in->k; break;
          case BPF_MEM:
            g_assert_cmpuint (in->k, <, BPF_MEMWORDS);
            a = mem[in->k];
            break;
          default: g_error ("unexpected load 0x%x", in->code);
        }
        break;
      case BPF_LDX:
        switch (BPF_MODE (in->code)) {
          case BPF_IMM: x = in->k; break;
          case BPF_MEM:
            g_assert_cmpuint (in->k, <, BPF_MEMWORDS);
            x = mem[in->k];
            break;
          case BPF_LEN: x = len; break;
          case BPF_MSH:
            if (in->k >= len)
              return 0;
            x = 4u * (frame[aux->data_offset + in->k] & 0xf);
            break;
          default: g_error ("unexpected ldx 0x%x", in->code);
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
      case BPF_RET: return BPF_RVAL (in->code) == BPF_A ? a : in->k;
      case BPF_MISC:
        if (BPF_MISCOP (in->code) == BPF_TAX)
          x = a;
        else
          a = x;
        break;
      default: g_error ("unexpected class 0x%x", in->code);
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
      default: break;
    }
  }
  g_free (valid_at);
}

static struct sock_filter *
compile_ok (const DqFlowRule *rules, guint n_rules, DqFlowBpfKind kind, int queue, guint32 snaplen,
    guint *n_insns)
{
  GError *error = NULL;
  struct sock_filter *prog =
      dq_flow_compile_bpf (rules, n_rules, kind, queue, snaplen, n_insns, &error);

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
  int queue;                  /* the filter's queue */
  DqFlowRule queue_rules[64]; /* rules that count for `queue` */
  guint n_queue_rules;
  DqFlowRule fanout_rules[64]; /* rules with a queue key */
  guint n_fanout_rules;
  guint32 snaplen;
  struct sock_filter *filter_all, *filter_queue, *fanout;
  guint n_filter_all, n_filter_queue, n_fanout;
} ProgramSet;

static void
program_set_init (ProgramSet *ps, const DqFlowRule *rules, guint n, int queue, guint32 snaplen)
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
  ps->filter_all = compile_ok (rules, n, DQ_FLOW_BPF_FILTER, -1, snaplen, &ps->n_filter_all);
  ps->filter_queue = compile_ok (rules, n, DQ_FLOW_BPF_FILTER, queue, snaplen, &ps->n_filter_queue);
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
check_frame (const ProgramSet *ps, const guint8 *frame, guint len, const BpfAux *aux, Tally *tally)
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
      FrameSpec s = ipv4_spec ((guint8) PICK (pool_proto), PICK (pool_addr), PICK (pool_addr),
          PICK (pool_port), PICK (pool_port));

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
    guint32 snaplen = chance (50) ? 0xffffffffu : (guint32) g_test_rand_int_range (1, 9000);
    int percent = PICK (((const int[]){ 15, 25, 40 }));

    for (i = 0; i < n; i++) {
      rules[i] = random_rule (percent, 4);
      assert_round_trip (&rules[i]); /* a rule the parser accepts */
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
    FrameSpec s = ipv4_spec (17, IP4 (10, 0, 0, 1), IP4 (10, 0, 0, 2), 40000, (guint16) (5000 + i));
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
    g_assert_cmpuint (counts[i], >, 800); /* 1000 each, if uniform */

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
    g_string_append_printf (text,
        "vlan=%u proto=udp src=10.%u.0.0/16 "
        "dst=192.168.%u.0/24 src-port=%u dst-port=%u mark=%u queue=%u;",
        i, i, i, 1000 + i, 2000 + i, i, i % 4);
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
  g_assert_null (dq_flow_compile_bpf (more, 300, DQ_FLOW_BPF_FILTER, -1, 100, &n, &error));
  g_assert_error (error, DQ_ERROR, DQ_ERROR_FLOW);
  g_assert_nonnull (strstr (error->message,
      "300 flow rules need more than 4096 BPF "
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

  memset (&fprog, 0, sizeof fprog); /* padding too: it goes to the kernel */
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
  dq_packet_put32 (payload, seq);
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  sin.sin_port = htons (port);
  g_assert_cmpint (sendto (fd, payload, sizeof payload, 0, (struct sockaddr *) &sin, sizeof sin),
      ==, sizeof payload);
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
  guint16 port; /* the flow's destination port */
  guint32 seen; /* bit i: packet with sequence number i */
  guint others; /* UDP frames to another of our ports */
  guint16 other_ports[24];
  guint16 *flow_ports; /* ports of flows that no rule names */
  guint n_flow_ports;
  guint flows_seen; /* bit i: a frame of flow_ports[i] */
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
                          "dst-port=%u",
      ports[0], ports[1], ports[2]);
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

  g_test_add_func ("/flow/bpf/trivial", test_bpf_trivial);
  g_test_add_func ("/flow/bpf/equivalence", test_bpf_equivalence);
  g_test_add_func ("/flow/bpf/fanout-hash", test_bpf_fanout_hash);
  g_test_add_func ("/flow/bpf/long-programs", test_bpf_long_programs);
  g_test_add_func ("/flow/bpf/kernel-accepts", test_bpf_kernel_accepts);
  g_test_add_func ("/flow/bpf/kernel-filter", test_bpf_kernel_filter);
  g_test_add_func ("/flow/bpf/kernel-fanout", test_bpf_kernel_fanout);

  return g_test_run ();
}
