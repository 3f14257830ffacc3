/* Classic BPF for flow rules: a socket filter (SO_ATTACH_FILTER) and a
 * PACKET_FANOUT_CBPF demultiplexer, both with the semantics of dq_flow_match().
 *
 * Every program starts with the same header reader. It walks Ethernet, one VLAN tag
 * and IPv4 once, checking the frame length before each load, and leaves the fields
 * that rules test in the scratch memory M[] (ABSENT where the frame lacks them). The
 * rules follow as short blocks that test those slots and fall through to the next
 * block on the first mismatch, so every conditional jump stays far below the 255
 * instructions that jt/jf can reach, however many rules there are.
 *
 * The length checks matter: a load beyond the frame ends a classic BPF program with
 * return value 0, which would reject (or send to fanout member 0) a short frame that a
 * rule needing fewer bytes should match.
 *
 * Where the frame starts differs between the two kinds. A socket filter on a SOCK_RAW
 * packet socket runs after packet_rcv() pushed the link-layer header back, so offset 0
 * is the Ethernet header. A fanout program runs earlier, in packet_rcv_fanout(): on a
 * received packet eth_type_trans() has already pulled the 14-byte Ethernet header
 * (offset 0 is the network header), on an outgoing copy it has not. The fanout program
 * therefore reads the frame relative to the MAC header (SKF_LL_OFF + offset), and
 * learns the frame length as skb->len plus the 14 pulled bytes unless the packet type
 * is PACKET_OUTGOING. */
#include "daqiri-flow.h"
#include "daqiri-engine.h"

#include <linux/filter.h>
#include <linux/if_packet.h>

#define PORT_KEYS (DQ_FLOW_SRC_PORT | DQ_FLOW_DST_PORT)
#define IPV4_KEYS (DQ_FLOW_PROTO | DQ_FLOW_SRC | DQ_FLOW_DST | PORT_KEYS)
#define MATCH_KEYS (IPV4_KEYS | DQ_FLOW_ETHERTYPE | DQ_FLOW_VLAN)

/* Slots of the scratch memory M[]. */
enum {
  M_ETHERTYPE, /* after any VLAN tag */
  M_VLAN,      /* VID of the stripped or in-band tag */
  M_PROTO,     /* ABSENT unless the frame has a whole IPv4 header */
  M_SRC,       /* valid only where M_PROTO is */
  M_DST,
  M_SRC_PORT, /* ABSENT unless UDP/TCP, first fragment, ports in the frame */
  M_DST_PORT,
  M_L3,  /* offset of the IPv4 header */
  M_L4,  /* offset of the transport header */
  M_LEN, /* frame length from the Ethernet header */
  N_SLOTS
};

G_STATIC_ASSERT (N_SLOTS <= BPF_MEMWORDS);

/* No rule value equals it: ethertypes, VIDs, protocols and ports are all narrower. */
#define ABSENT 0xffffffffu

#define JEQ_K (BPF_JMP | BPF_JEQ | BPF_K)
#define JGE_K (BPF_JMP | BPF_JGE | BPF_K)
#define ETH_HLEN_PULLED 14 /* what eth_type_trans() pulls on receive */

/* ---- a tiny assembler with forward labels ---- */

#define NEXT G_MAXUINT /* jump target: the following instruction */
#define UNBOUND G_MAXUINT

typedef enum {
  FIX_JT,
  FIX_JF,
  FIX_K, /* BPF_JA: the 32-bit k holds the offset */
} FixField;

typedef struct {
  guint insn;
  guint label;
  FixField field;
} Fixup;

typedef struct {
  GArray *insns;  /* struct sock_filter */
  GArray *labels; /* guint: instruction index, or UNBOUND */
  GArray *fixups; /* Fixup */
  guint32 base;   /* added to the k of packet loads: 0 or SKF_LL_OFF */
} Prog;

static void
prog_init (Prog *p, guint32 base)
{
  p->base = base;
  p->insns = g_array_new (FALSE, TRUE, sizeof (struct sock_filter));
  p->labels = g_array_new (FALSE, FALSE, sizeof (guint));
  p->fixups = g_array_new (FALSE, FALSE, sizeof (Fixup));
}

static guint
prog_len (const Prog *p)
{
  return p->insns->len;
}

static guint
new_label (Prog *p)
{
  guint unbound = UNBOUND;

  g_array_append_val (p->labels, unbound);
  return p->labels->len - 1;
}

static void
bind_label (Prog *p, guint label)
{
  g_array_index (p->labels, guint, label) = prog_len (p);
}

static void
add_fixup (Prog *p, guint label, FixField field)
{
  Fixup fix = { prog_len (p) - 1, label, field };

  if (label != NEXT)
    g_array_append_val (p->fixups, fix);
}

static void
stmt (Prog *p, guint16 code, guint32 k)
{
  struct sock_filter insn = { code, 0, 0, k };

  g_array_append_val (p->insns, insn);
}

/* A conditional jump to labels jt / jf (NEXT: fall through). */
static void
jump (Prog *p, guint16 code, guint32 k, guint jt, guint jf)
{
  stmt (p, code, k);
  add_fixup (p, jt, FIX_JT);
  add_fixup (p, jf, FIX_JF);
}

static void
jump_always (Prog *p, guint label)
{
  stmt (p, BPF_JMP | BPF_JA, 0);
  add_fixup (p, label, FIX_K);
}

/* An ancillary load: data the kernel keeps beside the frame (SKF_AD_*). */
static void
load_ancillary (Prog *p, guint32 what)
{
  stmt (p, BPF_LD | BPF_W | BPF_ABS, (guint32) SKF_AD_OFF + what);
}

/* Resolves the labels; frees the assembler and returns the instructions. */
static struct sock_filter *
prog_finish (Prog *p, guint n_rules, guint *n_insns, GError **error)
{
  struct sock_filter *insns;
  guint i, n = prog_len (p);
  gboolean ok = TRUE;

  if (n > BPF_MAXINSNS) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
        "%u flow rules need more than %u BPF "
        "instructions, the most a kernel filter may have; use fewer rules or fewer "
        "keys per rule",
        n_rules, BPF_MAXINSNS);
    ok = FALSE;
  }
  for (i = 0; ok && i < p->fixups->len; i++) {
    const Fixup *fix = &g_array_index (p->fixups, Fixup, i);
    struct sock_filter *insn = &g_array_index (p->insns, struct sock_filter, fix->insn);
    guint target = g_array_index (p->labels, guint, fix->label);
    guint offset;

    g_assert (target != UNBOUND && target > fix->insn);
    offset = target - fix->insn - 1;
    if (fix->field == FIX_K) {
      insn->k = offset;
    } else if (offset > G_MAXUINT8) {
      /* cannot happen with the short blocks below; refuse rather than mis-jump */
      g_set_error (
          error, DQ_ERROR, DQ_ERROR_FLOW, "internal error: BPF jump of %u instructions", offset);
      ok = FALSE;
    } else if (fix->field == FIX_JT) {
      insn->jt = (guint8) offset;
    } else {
      insn->jf = (guint8) offset;
    }
  }

  g_array_free (p->labels, TRUE);
  g_array_free (p->fixups, TRUE);
  insns = (struct sock_filter *) g_array_free (p->insns, FALSE);
  if (!ok) {
    g_free (insns);
    return NULL;
  }
  *n_insns = n;
  return insns;
}

/* A load of `size` (BPF_B/H/W) at `offset` from the Ethernet header, plus X when
 * `mode` is BPF_IND. */
static void
load_frame (Prog *p, guint16 mode, guint16 size, guint32 offset)
{
  stmt (p, BPF_LD | mode | size, p->base + offset);
}

/* ---- the header reader ---- */

/* M_LEN for a socket filter: the frame starts at offset 0. */
static void
emit_frame_len_filter (Prog *p)
{
  stmt (p, BPF_LD | BPF_W | BPF_LEN, 0);
  stmt (p, BPF_ST, M_LEN);
}

/* M_LEN for a fanout program: received packets had the Ethernet header pulled. */
static void
emit_frame_len_fanout (Prog *p)
{
  guint outgoing = new_label (p), have_len = new_label (p);

  load_ancillary (p, SKF_AD_PKTTYPE);
  jump (p, JEQ_K, PACKET_OUTGOING, outgoing, NEXT);
  stmt (p, BPF_LD | BPF_W | BPF_LEN, 0);
  stmt (p, BPF_ALU | BPF_ADD | BPF_K, ETH_HLEN_PULLED);
  jump_always (p, have_len);
  bind_label (p, outgoing);
  stmt (p, BPF_LD | BPF_W | BPF_LEN, 0);
  bind_label (p, have_len);
  stmt (p, BPF_ST, M_LEN);
}

/* Fills M[] from the frame; mirrors read_frame_fields() in flow.c. M_LEN must be set. */
static void
emit_read_fields (Prog *p)
{
  guint inband = new_label (p), tagged = new_label (p), have_type = new_label (p);
  guint ports = new_label (p), done = new_label (p);
  guint slot;

  /* The kernel's checker refuses a read of M[] that some path reaches unwritten. */
  stmt (p, BPF_LD | BPF_IMM, ABSENT);
  for (slot = 0; slot < N_SLOTS; slot++)
    if (slot != M_LEN)
      stmt (p, BPF_ST, slot);

  /* A tag stripped by the NIC or kernel lives beside the frame. */
  load_ancillary (p, SKF_AD_VLAN_TAG_PRESENT);
  jump (p, JEQ_K, 0, inband, NEXT);
  load_ancillary (p, SKF_AD_VLAN_TAG);
  stmt (p, BPF_ALU | BPF_AND | BPF_K, 0x0fff); /* the TCI also holds PCP and DEI */
  stmt (p, BPF_ST, M_VLAN);
  stmt (p, BPF_LD | BPF_MEM, M_LEN);
  jump (p, JGE_K, 14, NEXT, done);
  stmt (p, BPF_LDX | BPF_IMM, 14);
  load_frame (p, BPF_ABS, BPF_H, 12);
  jump_always (p, have_type);

  /* Nothing stripped: one in-band 802.1Q or 802.1ad tag is read from the frame. */
  bind_label (p, inband);
  stmt (p, BPF_LD | BPF_MEM, M_LEN);
  jump (p, JGE_K, 14, NEXT, done);
  stmt (p, BPF_LDX | BPF_IMM, 14);
  load_frame (p, BPF_ABS, BPF_H, 12);
  jump (p, JEQ_K, 0x8100, tagged, NEXT);
  jump (p, JEQ_K, 0x88a8, tagged, have_type);
  bind_label (p, tagged);
  stmt (p, BPF_LD | BPF_MEM, M_LEN);
  jump (p, JGE_K, 18, NEXT, done);
  load_frame (p, BPF_ABS, BPF_H, 14);
  stmt (p, BPF_ALU | BPF_AND | BPF_K, 0x0fff);
  stmt (p, BPF_ST, M_VLAN);
  stmt (p, BPF_LDX | BPF_IMM, 18);
  load_frame (p, BPF_ABS, BPF_H, 16);

  /* A: ethertype, X: where the IPv4 header would start. It is 14 or 18, and fanout
   * loads are MAC-relative, so the header length comes from an indirect load rather
   * than BPF_MSH (fixed, data-relative offset). */
  bind_label (p, have_type);
  stmt (p, BPF_ST, M_ETHERTYPE);
  jump (p, JEQ_K, 0x0800, NEXT, done);
  stmt (p, BPF_STX, M_L3);
  stmt (p, BPF_LD | BPF_MEM, M_LEN);
  stmt (p, BPF_ALU | BPF_SUB | BPF_X, 0);
  jump (p, JGE_K, 20, NEXT, done);
  load_frame (p, BPF_IND, BPF_B, 0);
  stmt (p, BPF_ALU | BPF_AND | BPF_K, 0xf0);
  jump (p, JEQ_K, 0x40, NEXT, done); /* version 4 */
  load_frame (p, BPF_IND, BPF_B, 0);
  stmt (p, BPF_ALU | BPF_AND | BPF_K, 0x0f);
  jump (p, JGE_K, 5, NEXT, done); /* IHL counts 32-bit words, at least 5 */
  stmt (p, BPF_ALU | BPF_LSH | BPF_K, 2);
  stmt (p, BPF_ALU | BPF_ADD | BPF_X, 0);
  stmt (p, BPF_ST, M_L4);
  stmt (p, BPF_MISC | BPF_TAX, 0);
  stmt (p, BPF_LD | BPF_MEM, M_LEN);
  jump (p, BPF_JMP | BPF_JGE | BPF_X, 0, NEXT, done); /* options within the frame */

  stmt (p, BPF_LDX | BPF_MEM, M_L3);
  load_frame (p, BPF_IND, BPF_W, 12);
  stmt (p, BPF_ST, M_SRC);
  load_frame (p, BPF_IND, BPF_W, 16);
  stmt (p, BPF_ST, M_DST);
  load_frame (p, BPF_IND, BPF_B, 9);
  stmt (p, BPF_ST, M_PROTO);

  /* Only the first fragment (offset 0) carries the transport header. */
  load_frame (p, BPF_IND, BPF_H, 6);
  jump (p, BPF_JMP | BPF_JSET | BPF_K, 0x1fff, done, NEXT);
  load_frame (p, BPF_IND, BPF_B, 9);
  jump (p, JEQ_K, 6, ports, NEXT);
  jump (p, JEQ_K, 17, NEXT, done);
  bind_label (p, ports);
  stmt (p, BPF_LDX | BPF_MEM, M_L4);
  stmt (p, BPF_LD | BPF_MEM, M_LEN);
  stmt (p, BPF_ALU | BPF_SUB | BPF_X, 0);
  jump (p, JGE_K, 4, NEXT, done);
  load_frame (p, BPF_IND, BPF_H, 0);
  stmt (p, BPF_ST, M_SRC_PORT);
  load_frame (p, BPF_IND, BPF_H, 2);
  stmt (p, BPF_ST, M_DST_PORT);
  bind_label (p, done);
}

/* ---- rules ---- */

static void
emit_equal (Prog *p, guint slot, guint32 value, guint fail)
{
  stmt (p, BPF_LD | BPF_MEM, slot);
  jump (p, JEQ_K, value, NEXT, fail);
}

static void
emit_prefix (Prog *p, guint slot, guint32 addr, guint prefix, guint fail)
{
  if (prefix == 0) {
    /* any address; a hand-made rule with host bits under /0 matches none (as in C) */
    if (addr != 0)
      jump_always (p, fail);
    return;
  }
  stmt (p, BPF_LD | BPF_MEM, slot);
  if (prefix < 32)
    stmt (p, BPF_ALU | BPF_AND | BPF_K, 0xffffffffu << (32 - prefix));
  jump (p, JEQ_K, addr, NEXT, fail);
}

/* Returns `verdict` when the frame matches the rule, else falls through. At most 15
 * instructions, so 256 rules fit in BPF_MAXINSNS with the header reader. */
static void
emit_rule (Prog *p, const DqFlowRule *r, guint32 verdict)
{
  guint fail = new_label (p);
  guint32 keys = r->keys;

  if (keys & DQ_FLOW_VLAN)
    emit_equal (p, M_VLAN, r->vlan, fail);
  /* a whole IPv4 header (tested below) already means ethertype 0x0800 */
  if ((keys & DQ_FLOW_ETHERTYPE) && !((keys & IPV4_KEYS) && r->ethertype == 0x0800))
    emit_equal (p, M_ETHERTYPE, r->ethertype, fail);

  if (keys & IPV4_KEYS) {
    if (keys & DQ_FLOW_PROTO) {
      emit_equal (p, M_PROTO, r->proto, fail);
    } else if (!(keys & PORT_KEYS)) {
      /* src/dst alone: require the IPv4 header (port slots imply it by themselves) */
      stmt (p, BPF_LD | BPF_MEM, M_PROTO);
      jump (p, JEQ_K, ABSENT, fail, NEXT);
    }
    if (keys & DQ_FLOW_SRC)
      emit_prefix (p, M_SRC, r->src, r->src_prefix, fail);
    if (keys & DQ_FLOW_DST)
      emit_prefix (p, M_DST, r->dst, r->dst_prefix, fail);
    if (keys & DQ_FLOW_SRC_PORT)
      emit_equal (p, M_SRC_PORT, r->src_port, fail);
    if (keys & DQ_FLOW_DST_PORT)
      emit_equal (p, M_DST_PORT, r->dst_port, fail);
  }
  stmt (p, BPF_RET | BPF_K, verdict);
  bind_label (p, fail);
}

static gboolean
rule_matches_all (const DqFlowRule *r)
{
  return (r->keys & MATCH_KEYS) == 0;
}

static void
emit_filter (Prog *p, const DqFlowRule *rules, guint n_rules, int queue, guint32 snaplen)
{
  gboolean have_fields = FALSE;
  guint i;

  if (n_rules == 0) {
    stmt (p, BPF_RET | BPF_K, snaplen);
    return;
  }
  for (i = 0; i < n_rules && prog_len (p) <= BPF_MAXINSNS; i++) {
    const DqFlowRule *r = &rules[i];

    if (queue >= 0 && (r->keys & DQ_FLOW_QUEUE) && r->queue != (guint) queue)
      continue; /* this rule sends its packets to another queue */
    if (!have_fields) {
      emit_frame_len_filter (p);
      emit_read_fields (p);
    }
    have_fields = TRUE;
    emit_rule (p, r, snaplen);
    if (rule_matches_all (r))
      return; /* nothing after it can be reached */
  }
  stmt (p, BPF_RET | BPF_K, 0);
}

/* A ^= A >> shift, through X. */
static void
emit_xor_shift (Prog *p, guint32 shift)
{
  stmt (p, BPF_MISC | BPF_TAX, 0);
  stmt (p, BPF_ALU | BPF_RSH | BPF_K, shift);
  stmt (p, BPF_ALU | BPF_XOR | BPF_X, 0);
}

/* When the skb carries no receive hash (0: the NIC gave none and nothing computed
 * one, common on veth and for locally sent packets), hash the fields read above so
 * that flows still spread over the fanout members:
 *   h = sport << 16 ^ dport ^ src ^ dst ^ proto   (absent fields count as 0xffffffff)
 *   h ^= h >> 16; h *= 0x7feb352d; h ^= h >> 15; h *= 0x846ca68b; h ^= h >> 16 */
static void
emit_hash (Prog *p)
{
  guint done = new_label (p);
  static const guint8 xor_slots[] = { M_DST_PORT, M_SRC, M_DST, M_PROTO };
  guint i;

  load_ancillary (p, SKF_AD_RXHASH);
  jump (p, JEQ_K, 0, NEXT, done);
  stmt (p, BPF_LD | BPF_MEM, M_SRC_PORT);
  stmt (p, BPF_ALU | BPF_LSH | BPF_K, 16);
  for (i = 0; i < G_N_ELEMENTS (xor_slots); i++) {
    stmt (p, BPF_MISC | BPF_TAX, 0);
    stmt (p, BPF_LD | BPF_MEM, xor_slots[i]);
    stmt (p, BPF_ALU | BPF_XOR | BPF_X, 0);
  }
  emit_xor_shift (p, 16);
  stmt (p, BPF_ALU | BPF_MUL | BPF_K, 0x7feb352d);
  emit_xor_shift (p, 15);
  stmt (p, BPF_ALU | BPF_MUL | BPF_K, 0x846ca68b);
  emit_xor_shift (p, 16);
  bind_label (p, done);
  stmt (p, BPF_RET | BPF_A, 0);
}

static void
emit_fanout (Prog *p, const DqFlowRule *rules, guint n_rules)
{
  guint i;

  emit_frame_len_fanout (p);
  emit_read_fields (p);
  for (i = 0; i < n_rules && prog_len (p) <= BPF_MAXINSNS; i++) {
    const DqFlowRule *r = &rules[i];

    if (!(r->keys & DQ_FLOW_QUEUE))
      continue; /* spread by hash with the unmatched packets */
    emit_rule (p, r, r->queue);
    if (rule_matches_all (r))
      return;
  }
  emit_hash (p);
}

gpointer
dq_flow_compile_bpf (const DqFlowRule *rules, guint n_rules, DqFlowBpfKind kind, int queue,
    guint32 snaplen, guint *n_insns, GError **error)
{
  Prog p;

  g_return_val_if_fail (rules != NULL || n_rules == 0, NULL);
  g_return_val_if_fail (n_insns != NULL, NULL);
  g_return_val_if_fail (kind == DQ_FLOW_BPF_FILTER || kind == DQ_FLOW_BPF_FANOUT, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (kind == DQ_FLOW_BPF_FILTER) {
    prog_init (&p, 0);
    emit_filter (&p, rules, n_rules, queue, snaplen);
  } else {
    prog_init (&p, (guint32) SKF_LL_OFF);
    emit_fanout (&p, rules, n_rules);
  }
  return prog_finish (&p, n_rules, n_insns, error);
}
