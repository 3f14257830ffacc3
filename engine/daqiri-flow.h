/* daqiri flow rules: one text syntax for every engine and for the `flows` property.
 *
 *   flows  := rule { ';' rule }          (empty rules between ';' are ignored)
 *   rule   := token { whitespace token }
 *   token  := key '=' value
 *   key    := proto | src | dst | src-port | dst-port | ethertype | vlan | mark | queue
 *
 *   proto      udp | tcp | icmp | 0..255           (IP protocol; implies IPv4)
 *   src, dst   A.B.C.D[/0..32]                     (IPv4; implies ethertype 0x0800)
 *   src-port, dst-port  0..65535                   (implies proto udp or tcp when proto absent)
 *   ethertype  0x0600..0xffff or decimal           (after any VLAN tag)
 *   vlan       0..4095                             (802.1Q VLAN id)
 *   mark       0..4294967295                       (flow id delivered with every match)
 *   queue      0..1023                             (RX queue that receives the match)
 *
 * A packet matches a rule when it matches every key given in the rule; it is delivered
 * with the mark of the first rule (in text order) it matches. With no rules every packet
 * is delivered, with flow id 0. Each key may appear at most once per rule.
 */
#ifndef DAQIRI_FLOW_H
#define DAQIRI_FLOW_H

#include <glib.h>

G_BEGIN_DECLS

#define DQ_FLOW_MAX_RULES 256
#define DQ_FLOW_MAX_QUEUE 1023

typedef enum {
  DQ_FLOW_PROTO     = 1 << 0,
  DQ_FLOW_SRC       = 1 << 1,
  DQ_FLOW_DST       = 1 << 2,
  DQ_FLOW_SRC_PORT  = 1 << 3,
  DQ_FLOW_DST_PORT  = 1 << 4,
  DQ_FLOW_ETHERTYPE = 1 << 5,
  DQ_FLOW_VLAN      = 1 << 6,
  DQ_FLOW_MARK      = 1 << 7,
  DQ_FLOW_QUEUE     = 1 << 8,
} DqFlowKeys;

typedef struct {
  guint32 keys;         /* DqFlowKeys present in the rule */
  guint8 proto;         /* valid with DQ_FLOW_PROTO */
  guint8 src_prefix;    /* 0..32 */
  guint8 dst_prefix;
  guint32 src;          /* IPv4, host byte order, already masked by the prefix */
  guint32 dst;
  guint16 src_port;
  guint16 dst_port;
  guint16 ethertype;
  guint16 vlan;
  guint32 mark;
  guint16 queue;
} DqFlowRule;

/* Parses `text` (NULL or blank: no rules). On success stores a newly allocated array
 * (g_free) in *rules and its length in *n_rules. On failure sets DQ_ERROR_FLOW with a
 * message naming the rule (1-based index and text), the token and what is allowed. */
gboolean dq_flow_parse (const char *text, DqFlowRule **rules, guint *n_rules,
    GError **error);

/* Canonical text of one rule ("proto=udp dst=10.0.0.0/8 dst-port=5000 mark=7"). */
char *dq_flow_rule_to_string (const DqFlowRule *rule);

/* Index of the first rule that the Ethernet frame matches, or -1. The frame starts at
 * the Ethernet header; `vlan` is the VLAN id the NIC or kernel stripped from it, or -1
 * when none was stripped (an in-band 802.1Q tag is parsed from the frame). Reads only
 * within [frame, frame + len): short or malformed frames never match a rule that needs
 * the missing bytes. */
int dq_flow_match (const DqFlowRule *rules, guint n_rules, const guint8 *frame,
    guint len, int vlan);

/* Classic BPF (struct sock_filter, 8 bytes an instruction) for the rules.
 *
 * DQ_FLOW_BPF_FILTER: a socket filter (SO_ATTACH_FILTER) that accepts a packet matching
 * any rule (returning `snaplen`) and rejects others (0). With no rules: accept all.
 * Rules with a `queue` key count only when their queue equals `queue` (pass -1 to
 * ignore queue keys).
 *
 * DQ_FLOW_BPF_FANOUT: a PACKET_FANOUT_CBPF program returning the queue index of the first
 * matching rule that has a `queue` key, and the packet's receive hash (SKF_AD_RXHASH) for
 * every other packet (the kernel takes it modulo the number of queues).
 *
 * The program reads VLAN presence/id through the SKF_AD_VLAN_TAG(_PRESENT) ancillary
 * loads (the kernel strips the tag before AF_PACKET sees the frame). Returns a newly
 * allocated array (g_free) of *n_insns instructions, or NULL with DQ_ERROR_FLOW when
 * the program would exceed BPF_MAXINSNS. */
typedef enum {
  DQ_FLOW_BPF_FILTER,
  DQ_FLOW_BPF_FANOUT,
} DqFlowBpfKind;

gpointer dq_flow_compile_bpf (const DqFlowRule *rules, guint n_rules, DqFlowBpfKind kind,
    int queue, guint32 snaplen, guint *n_insns, GError **error);

G_END_DECLS

#endif /* DAQIRI_FLOW_H */
