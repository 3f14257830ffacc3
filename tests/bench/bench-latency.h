/* bench-latency.h — the afpacket half of bench-latency: a veth pair in a network
 * namespace of the benchmark's own, and a paced sender on it (bench-latency-veth.c).
 *
 * bench_veth_setup() creates the namespace (dq-netns.h: IPv6 off, both ends of the pair
 * in it, removed at exit and on a fatal signal) and moves the calling thread into it;
 * call it from main() before any other thread exists. Nothing has an address, so the only
 * frames on the link are the sender's. The sender is a thread pinned to CPU 0 that puts
 * 64-byte UDP frames on BENCH_VETH_TX with sendmmsg() on a raw AF_PACKET socket (no
 * qdisc), each when it is due at `rate` frames a second (spinning on CLOCK_MONOTONIC,
 * not sleeping: a sleep's timer slack is tens of µs); when it falls behind it sends what
 * is due, up to 64 frames a call, so at a rate it cannot reach it sends as fast as it
 * can. veth hands each frame to the receive side in the sending call's softirq, on CPU 0:
 * that is where the kernel stamps it for the receiver's TPACKET_V3 ring. */
#ifndef DAQIRI_TEST_BENCH_LATENCY_H
#define DAQIRI_TEST_BENCH_LATENCY_H

#include <glib.h>
#include <sys/types.h>

#define BENCH_VETH_TX "dqltx"
#define BENCH_VETH_RX "dqlrx"
#define BENCH_VETH_FRAME 64

/* Creates the namespace and the veth pair, enters it. FALSE, with *error set, when it
 * cannot (not root, no `ip`, ...). */
gboolean bench_veth_setup (GError **error);

/* Removes the namespace (also done at exit). */
void bench_veth_teardown (void);

typedef struct _BenchSender BenchSender;

/* Starts the sender thread; NULL, with *error set, when its socket cannot be made. */
BenchSender *bench_sender_start (guint64 rate, GError **error);

/* The sender's thread id (for its scheduler statistics), once it runs. */
pid_t bench_sender_tid (BenchSender *s);

/* The kernel's softirq thread of CPU 0 (ksoftirqd/0), or 0: it runs the softirqs (the
 * veth receive, the block retire timer) that CPU 0 has no time for right away. */
pid_t bench_ksoftirqd0 (void);

/* ns that process `pid` waited for a CPU while runnable (/proc/PID/schedstat), 0 when it
 * cannot be read. */
guint64 bench_pid_runq_ns (pid_t pid);

/* Stops the sender and frees it; *sent frames were sent over *elapsed_ns. */
void bench_sender_stop (BenchSender *s, guint64 *sent, gint64 *elapsed_ns);

#endif
