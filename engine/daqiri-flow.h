/* daqiri flow rules: one text syntax for every engine and for the `flows` property.
 *
 *   flows  := rule { ';' rule }          (empty rules are ignored and not counted)
 *   rule   := token { whitespace token }  (whitespace: space, tab, newline, CR, VT, FF)
 *   token  := key '=' value
 *   key    := proto | src | dst | src-port | dst-port | ethertype | vlan | mark | queue
 *
 *   proto      udp | tcp | icmp | 0..255           (IP protocol, names in any case;
 *                                                   implies IPv4)
 *   src, dst   A.B.C.D[/0..32]                     (IPv4; implies ethertype 0x0800;
 *                                                   octets without leading zeros;
 *                                                   host bits are masked off)
 *   src-port, dst-port  0..65535                   (implies proto udp or tcp when proto absent)
 *   ethertype  0x0600..0xffff or decimal           (after any VLAN tag)
 *   vlan       0..4095                             (802.1Q VLAN id)
 *   mark       0..4294967295                       (flow id delivered with every match)
 *   queue      0..1023                             (RX queue that receives the match)
 *
 * Numbers are decimal (ethertype also 0x hex): no sign, no trailing characters. A packet
 * matches a rule when it matches every key given in the rule; it is delivered with the
 * mark of the first rule (in text order) it matches. With no rules every packet is
 * delivered, with flow id 0. Each key may appear at most once per rule; ports need proto
 * udp or tcp (or none), and an ethertype other than 0x0800 cannot join IPv4 keys. A rule
 * with only mark and/or queue matches every packet.
 */
#ifndef DAQIRI_FLOW_H
#define DAQIRI_FLOW_H

#include <glib.h>

G_BEGIN_DECLS

#define DQ_FLOW_MAX_RULES 256
#define DQ_FLOW_MAX_QUEUE 1023

typedef enum {
  DQ_FLOW_PROTO = 1 << 0,
  DQ_FLOW_SRC = 1 << 1,
  DQ_FLOW_DST = 1 << 2,
  DQ_FLOW_SRC_PORT = 1 << 3,
  DQ_FLOW_DST_PORT = 1 << 4,
  DQ_FLOW_ETHERTYPE = 1 << 5,
  DQ_FLOW_VLAN = 1 << 6,
  DQ_FLOW_MARK = 1 << 7,
  DQ_FLOW_QUEUE = 1 << 8,
} DqFlowKeys;

typedef struct {
  guint32 keys;      /* DqFlowKeys written in the rule (implied ones are not added) */
  guint8 proto;      /* valid with DQ_FLOW_PROTO */
  guint8 src_prefix; /* 0..32 */
  guint8 dst_prefix;
  guint32 src; /* IPv4, host byte order, already masked by the prefix */
  guint32 dst;
  guint16 src_port;
  guint16 dst_port;
  guint16 ethertype;
  guint16 vlan;
  guint32 mark;
  guint16 queue;
} DqFlowRule;

/* Parses `text` (NULL or blank: no rules). On success stores a newly allocated array
 * (g_free; NULL when there are no rules) in *rules and its length in *n_rules; either
 * may be NULL to only validate. On failure sets DQ_ERROR_FLOW with a message naming the
 * rule (1-based, counting non-empty rules, and its text), the token and what is allowed,
 * e.g. `flow rule 2 ("proto=udp dst-port=99999"): 'dst-port=99999' is out of range;
 * dst-port takes 0..65535`. User text in messages is escaped (printable ASCII only) and
 * cut after 64 bytes. Linear in the length of `text`. */
gboolean dq_flow_parse (const char *text, DqFlowRule **rules, guint *n_rules, GError **error);

/* Whether the rule names one multicast group: dst one address (a prefix of 32) of
 * 224.0.0.0/4; its address in *group (host order). An engine receives such a group only
 * after joining it on the interface. */
gboolean dq_flow_rule_group (const DqFlowRule *rule, guint32 *group);

/* Canonical text of one rule ("proto=udp dst=10.0.0.0/8 dst-port=5000 mark=7"). */
char *dq_flow_rule_to_string (const DqFlowRule *rule);

/* Index of the first rule that the Ethernet frame matches, or -1 (always -1 for
 * n_rules 0: "deliver everything" is the caller's decision). The frame starts at the
 * Ethernet header; `vlan` is the VLAN id (or TCI: only the low 12 bits count) the NIC or
 * kernel stripped from it, or -1 when none was stripped (then one in-band 802.1Q or
 * 802.1ad tag is parsed from the frame). Reads only within [frame, frame + len): short or
 * malformed frames never match a rule that needs the missing bytes. What rules need:
 *   vlan        a stripped tag, or a whole in-band tag (18 bytes)
 *   ethertype   14 bytes, 18 with an in-band tag
 *   proto/src/dst  a whole IPv4 header: ethertype 0x0800, version 4, IHL >= 5, IHL * 4
 *               bytes present
 *   ports       also UDP or TCP, fragment offset 0, and the 4 port bytes present
 * Parses the headers once, then tests the rules; no allocation. */
int dq_flow_match (
    const DqFlowRule *rules, guint n_rules, const guint8 *frame, guint len, int vlan);

/* What the rules say of a received frame: FALSE when there are rules and none matches (the
 * frame is filtered); else TRUE with *flow_id the mark of the first rule that matches (0
 * without rules or without a mark key). `vlan` as for dq_flow_match(). */
gboolean dq_flow_classify (const DqFlowRule *rules, guint n_rules, const guint8 *frame, guint len,
    int vlan, guint32 *flow_id);

/* Checks that the `queue` key of every rule names one of n_queues queues (0 .. n_queues-1).
 * On failure sets DQ_ERROR_FLOW naming `what` (the device), the rule and the queues
 * allowed. */
gboolean dq_flow_rules_check_queues (
    const char *what, const DqFlowRule *rules, guint n_rules, guint n_queues, GError **error);

/* The rules that apply to RX queue `queue`, in order: those without a queue key and those
 * naming `queue`. Returns a newly allocated array (g_free; never NULL) of *n_out rules. */
DqFlowRule *dq_flow_rules_for_queue (
    const DqFlowRule *rules, guint n_rules, guint queue, guint *n_out);

/* Classic BPF (struct sock_filter, 8 bytes an instruction) for the rules.
 *
 * Both accept exactly the packets dq_flow_match() matches, given the same VLAN.
 *
 * DQ_FLOW_BPF_FILTER: a socket filter (SO_ATTACH_FILTER on a SOCK_RAW packet socket)
 * that accepts a packet matching any rule (returning `snaplen`, the bytes to keep:
 * 0xffffffff for all) and rejects others (0). With no rules at all: accept all. Rules
 * with a `queue` key count only when their queue equals `queue` (pass -1 to ignore queue
 * keys); when rules exist but none counts for `queue`, every packet is rejected.
 *
 * DQ_FLOW_BPF_FANOUT: a PACKET_FANOUT_CBPF program returning the queue index of the first
 * matching rule among those with a `queue` key, and the packet's receive hash
 * (SKF_AD_RXHASH) for every other packet (the kernel takes it modulo the number of
 * queues). Where the skb carries no hash (0: veth, locally sent packets, NICs without
 * RSS) it returns a hash of the IPv4 addresses, protocol and ports instead, so flows
 * still spread. `queue` and `snaplen` are ignored. The kernel runs it on received packets
 * with the Ethernet header already pulled; the program reads relative to the MAC header
 * (SKF_LL_OFF) and uses SKF_AD_PKTTYPE to tell received from outgoing packets.
 *
 * The program reads VLAN presence/id through the SKF_AD_VLAN_TAG(_PRESENT) ancillary
 * loads (the kernel strips the tag before AF_PACKET sees the frame) and parses one
 * in-band tag otherwise. At most 15 instructions a rule: DQ_FLOW_MAX_RULES rules fit.
 * Returns a newly allocated array (g_free) of *n_insns instructions, or NULL with
 * DQ_ERROR_FLOW when the program would exceed BPF_MAXINSNS. */
typedef enum {
  DQ_FLOW_BPF_FILTER,
  DQ_FLOW_BPF_FANOUT,
} DqFlowBpfKind;

gpointer dq_flow_compile_bpf (const DqFlowRule *rules, guint n_rules, DqFlowBpfKind kind, int queue,
    guint32 snaplen, guint *n_insns, GError **error);

G_END_DECLS

#endif /* DAQIRI_FLOW_H */
