/* The afpacket engine's parts shared by its two files: afpacket.c (ports, RX queues, the
 * engine table) and afpacket-tx.c (TX queues). Internal to the engine. */
#ifndef DAQIRI_AFPACKET_PRIVATE_H
#define DAQIRI_AFPACKET_PRIVATE_H

#include "daqiri-engine.h"
#include "engines.h"
#include "burst-pool.h"
#include "engine-util.h"
#include "rx-rules.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

/* Linux >= 6.2; the Debian 12 UAPI headers (6.1) lack it */
#ifndef PACKET_FANOUT_FLAG_IGNORE_OUTGOING
#define PACKET_FANOUT_FLAG_IGNORE_OUTGOING 0x4000
#endif

#define AFP_RX_DEFAULT_RING ((gsize) 64 << 20)
#define AFP_TX_DEFAULT_RING ((gsize) 4 << 20)
#define AFP_RING_MAX ((gsize) 4 << 30)
#define AFP_RX_MAX_BLOCK ((gsize) 1 << 20)
/* The kernel hands a block over when it is full or when the burst timeout (>= 1 ms)
 * expires, so a ring of N blocks covers at least N ms of a stalled reader even at low
 * rates: prefer many blocks (64 MiB -> 256 blocks of 256 KiB), but not below 64 KiB a
 * block, and at least 8 blocks where the ring allows. */
#define AFP_RX_PREFERRED_BLOCKS 256
#define AFP_RX_MIN_BLOCKS 8
#define AFP_RX_MIN_PREFERRED_BLOCK ((gsize) 64 << 10)
#define AFP_MIN_PACKET 64
#define AFP_MAX_PACKET 65535
#define AFP_VLAN_HLEN 4

/* Bytes a TPACKET_V3 block spends besides the frame itself: the block descriptor
 * (48), then per packet the tpacket3_hdr + sockaddr_ll, padded so that the network
 * header is 16-aligned (mac offset 82 for Ethernet), and 8-byte alignment of the next
 * packet. Rounded up generously; a block must hold one max_packet_size frame whole. */
#define AFP_RX_BLOCK_OVERHEAD 160
/* The smallest room one packet takes in a block (headers + a 14-byte frame). */
#define AFP_RX_MIN_PACKET_ROOM 96

/* Without PACKET_TX_HAS_OFF the kernel reads a TX frame at this offset in its slot. */
#define AFP_TX_DATA_OFFSET (TPACKET2_HDRLEN - sizeof (struct sockaddr_ll))

/* How long one wait lasts while the kernel's POLLIN cannot tell us anything (see
 * rx_wait) or while TX slots are still being sent. */
#define AFP_WAIT_SLICE_NS G_GINT64_CONSTANT (1000000)
#define AFP_TX_FLUSH_SLICE_NS G_GINT64_CONSTANT (100000)

/* A fanout group of the port: the queues of one element (one DqRxConfig.group_id). */
typedef struct {
  guint32 group_id;
  guint16 fanout_id; /* the kernel's id, unique in the network namespace */
  guint members;
} AfpFanout;

typedef struct {
  int ifindex;
  char ifname[IF_NAMESIZE];
  guint mtu;

  GMutex lock;     /* protects fanouts (queues come and go in any thread) */
  GArray *fanouts; /* AfpFanout */
} AfpPort;

/* ---------------------------------------------------------------------------------- */
/* helpers */

static inline struct timespec
ns_to_timespec (gint64 ns)
{
  struct timespec ts;
  ts.tv_sec = ns / G_GINT64_CONSTANT (1000000000);
  ts.tv_nsec = ns % G_GINT64_CONSTANT (1000000000);
  return ts;
}

static inline gsize
page_size (void)
{
  long p = sysconf (_SC_PAGESIZE);
  return p > 0 ? (gsize) p : 4096;
}

/* Largest frame the interface takes: the kernel refuses (and, with PACKET_LOSS, silently
 * skips) frames longer than MTU + Ethernet header, + 4 when the frame is 802.1Q tagged. */
static inline guint
port_frame_limit (guint mtu)
{
  return mtu + ETH_HLEN;
}

/* the interface's MTU (ioctl SIOCGIFMTU); FALSE when it cannot be read */
gboolean afp_port_read_mtu (const char *ifname, guint *mtu);
/* a SOCK_RAW packet socket (protocol 0: it receives nothing until bound); -1 with *error
 * naming `what` and the privilege when refused */
int afp_packet_socket_open (const AfpPort *port, const char *what, GError **error);
/* setsockopt (SOL_PACKET, name, value); FALSE with *error naming `what` */
gboolean afp_packet_set_int (
    int fd, int name, int value, const AfpPort *port, const char *what, GError **error);
/* binds the socket to the port's interface for `protocol` */
gboolean afp_packet_bind (int fd, const AfpPort *port, guint16 protocol, GError **error);
/* max_packet_size 0 means: a full-MTU frame with one VLAN tag */
guint afp_default_max_packet (const AfpPort *port);
/* max-packet-size of direction `dir` ("RX", "TX") within AFP_MIN_PACKET .. AFP_MAX_PACKET */
gboolean afp_check_max_packet (
    const char *dir, const AfpPort *port, guint max_packet, GError **error);

/* ---------------------------------------------------------------------------------- */
/* TX queues (afpacket-tx.c): the qdiscs in the way, sending at a time */

/* The interface's qdiscs as an RTM_GETQDISC dump lists them, as far as pacing (fq) and
 * sending at a time (etf) need to know: the root, the kinds of the qdiscs under it (the
 * children of mq, mqprio or taprio, one per TX queue) and what the etf qdiscs among them
 * run on. */
#define AFP_QDISC_KIND_SIZE 16 /* TCA_KIND: at most IFNAMSIZ with its NUL */
#define AFP_QDISC_CHILD_KINDS 4
typedef struct {
  gboolean root_seen;
  char root[AFP_QDISC_KIND_SIZE]; /* "" until the root is seen */
  guint32 root_handle;
  guint children; /* qdiscs under the root */
  /* their distinct kinds, in dump order; more than AFP_QDISC_CHILD_KINDS are not kept */
  char child_kinds[AFP_QDISC_CHILD_KINDS][AFP_QDISC_KIND_SIZE];
  guint n_child_kinds;
  guint etf;             /* etf qdiscs seen, root or under it */
  int etf_clockid;       /* the first one's clock, -1 when it gave none */
  gboolean etf_clocks;   /* TRUE: they all run on etf_clockid */
  gboolean etf_deadline; /* one of them is in deadline mode */
} AfpQdiscs;

struct nlmsghdr;

void afp_qdiscs_init (AfpQdiscs *q);
/* Takes in one message of an RTM_GETQDISC dump (others, and other interfaces' qdiscs, are
 * passed over). A dump lists a root before the qdiscs under it. */
void afp_qdiscs_note (AfpQdiscs *q, int ifindex, const struct nlmsghdr *nh);
/* Sending at a time needs etf on every TX queue (the root, or every qdisc under a root
 * mq, mqprio or taprio), in its default mode (deadline mode sends frames before their
 * time) and on one clock, CLOCK_TAI or CLOCK_REALTIME. FALSE with *error
 * (DQ_ERROR_CONFIG) naming the interface, the qdiscs it has and the tc command needed. */
gboolean afp_qdiscs_check_etf (const AfpQdiscs *q, const char *ifname, GError **error);

/* The control message that gives the frames of one sendmsg() their send time: SOL_SOCKET,
 * SCM_TXTIME, the time as 8 bytes in host order (ns on the socket's SO_TXTIME clock). */
typedef union {
  struct cmsghdr header;
  guint8 bytes[CMSG_SPACE (sizeof (guint64))];
} AfpTxtimeControl;

/* Writes the message for `txtime` into *control; returns msg_controllen */
gsize afp_txtime_control (AfpTxtimeControl *control, guint64 txtime);

/* The ns to add to a time on CLOCK_REALTIME (the afpacket port clock) for the same
 * instant on `clock`: CLOCK_TAI, the kernel's TAI offset (adjtimex), CLOCK_REALTIME, 0.
 * FALSE for any other clock. */
gboolean afp_clock_offset (clockid_t clock, gint64 *offset_ns);
/* port_ns (CLOCK_REALTIME) on the clock of afp_clock_offset's offset_ns */
guint64 afp_port_time_on_clock (guint64 port_ns, gint64 offset_ns);

/* ---------------------------------------------------------------------------------- */
/* TX queues (afpacket-tx.c): the DqEngineOps entries */

gpointer afp_txq_create (gpointer port_priv, const DqTxConfig *config, GError **error);
void afp_txq_destroy (gpointer priv);
guint afp_txq_max_frame (gpointer priv);
int afp_txq_send (gpointer priv, const guint8 *const *frames, const guint32 *lengths,
    const guint64 *times, guint n, GError **error);
gboolean afp_txq_flush (gpointer priv, GError **error);
void afp_txq_wakeup (gpointer priv);
void afp_txq_stats (gpointer priv, DqTxStats *stats);

#endif /* DAQIRI_AFPACKET_PRIVATE_H */
