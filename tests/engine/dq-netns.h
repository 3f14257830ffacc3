/* Test helper: a private network namespace with a veth pair inside it.
 *
 *   DqNetns *ns = dq_netns_setup_or_skip ("dqtx0", "dqrx0", 1500);  // first thing in main()
 *   ... g_test_init (), tests, threads ...
 *   dq_netns_free (ns);
 *
 * The namespace is named "dqt-<pid>-<n>", has IPv6 switched off (no router solicitations,
 * MLD or DAD on the links), holds both ends of the veth pair, links up. Entering it moves
 * the calling thread: do it from main() before any other thread exists, threads created
 * later inherit it. The namespace is removed by dq_netns_free(), at exit, and on
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGABRT/SIGSEGV/SIGBUS/SIGTRAP
 * (g_error) (best effort). Uses `ip` (iproute2).
 */
#ifndef DQ_NETNS_H
#define DQ_NETNS_H

#include <glib.h>

G_BEGIN_DECLS

/* exit status that makes meson report a test as skipped */
#define DQ_NETNS_EXIT_SKIP 77

typedef struct _DqNetns DqNetns;

/* Creates the namespace and the veth pair veth_a <-> veth_b in it; mtu 0 keeps the
 * default. Needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN). */
DqNetns *dq_netns_new (const char *veth_a, const char *veth_b, guint mtu, GError **error);

/* Moves the calling thread into the namespace. Fails if the process has more than one
 * thread (the others would stay behind). */
gboolean dq_netns_enter (DqNetns *ns, GError **error);

/* Runs `ip -n NAME ARGS...` (NULL-terminated). */
gboolean dq_netns_ip (
    DqNetns *ns, GError **error, const char *first_arg, ...) G_GNUC_NULL_TERMINATED;

/* Waits until the link's operational state is UP: after `ip link set up` (of it or of
 * its veth peer) the kernel finishes bringing it up asynchronously, and frames sent
 * before that are dropped. dq_netns_new() waits for both ends. */
gboolean dq_netns_wait_up (DqNetns *ns, const char *ifname, guint timeout_ms, GError **error);

gboolean dq_netns_set_mtu (DqNetns *ns, const char *ifname, guint mtu, GError **error);

const char *dq_netns_name (DqNetns *ns);

/* Deletes the namespace (and the veth pair with it). The process stays in the
 * namespace it entered until it exits; the namespace goes away then. */
void dq_netns_free (DqNetns *ns);

/* For test programs: skips the whole program (exit 77, with a message on stderr) when
 * not root or when namespaces cannot be created; otherwise creates and enters. */
DqNetns *dq_netns_setup_or_skip (const char *veth_a, const char *veth_b, guint mtu);

/* For programs where only some cases need the veth pair: as root, creates and enters the
 * namespace (NULL, with a message naming `what` that is skipped, when that fails); not root:
 * NULL. Call from main() before any other thread exists. */
DqNetns *dq_netns_setup_optional (const char *veth_a, const char *veth_b, const char *what);

G_END_DECLS

#endif /* DQ_NETNS_H */
