/* Mlx5PortOps "mlx5": the control path on a real ConnectX.
 *
 * The host side (rx.c, tx.c) allocates every ring in its own memory; this file turns that
 * memory into device objects with DevX:
 *
 *   open      ibv device by name / netdev / PCI address, mlx5dv_open_device(DEVX),
 *             QUERY_HCA_CAP (general + Ethernet offloads), QUERY_NIC_VPORT_CONTEXT,
 *             PD (+ pdn), ALLOC_TRANSPORT_DOMAIN, a UAR for the CQs, EQ 0, the clock
 *   cq        umem(ring [+ doorbell record]) + CREATE_CQ
 *   rq        umem(ring [+ dbr]) + CREATE_RQ (striding, RST, flush_in_error_en) +
 *             MODIFY_RQ RST->RDY (after an error CQE: ERR->RST->RDY, rq_recover) +
 *             CREATE_TIR (direct), the TIR being what steering rules point at
 *   sq        CREATE_TIS (once) + its own UAR + umem(ring [+ dbr]) + CREATE_SQ (RST) +
 *             MODIFY_SQ RST->RDY (after an error CQE: ERR->RST->RDY, sq_recover); the
 *             doorbell register is the UAR's
 *   flows     mlx5dv_dr NIC RX domain, root table; every group's rules planned together
 *             (mlx5_hw_flow_plan: priorities within one bank, half the root table's 16,
 *             so that a new rule set goes in before the old one comes out), one rule per
 *             entry with a tag action and the RQ's TIR or an RSS TIR over an RQT
 *   counters  a queue counter set per RQ (ALLOC_Q_COUNTER), read with QUERY_Q_COUNTER
 *
 * Why a DevX SQ rather than a verbs raw-packet QP: the seam gives the control path the
 * host's own SQ ring, doorbell record and completion queue. A verbs QP owns its ring
 * (allocated inside libmlx5) and needs a verbs CQ, so the host could not keep its
 * memory or its DevX CQ; a DevX SQ takes them as they are, lets us set what the verbs
 * path hides (multi-packet WQEs, timestamp format, inline mode) and is what DPDK's mlx5
 * driver uses on the same hardware.
 *
 * Mailboxes are built by hw-cmd.c, without side effects, and only issued here. Every
 * failure becomes a GError naming the device, the command, errno and the firmware
 * status and syndrome.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "hw.h"
#include "hw-cmd.h"
#include "hw-sysfs.h"
#include "../prm/mlx5-ifc.h"

/* umem access: what the device only reads (RQ and SQ WQEs, doorbell records) is
 * registered with access 0 (DAQIRI #269: 0x7 made CREATE_RQ fail on a BlueField-3's
 * ConnectX-7); the CQ ring, which the device writes, needs local write, as the kernel
 * enables writes in a umem's translation entries only for a writable umem. 0x7 is the
 * fallback when the kernel refuses the first. */
#define UMEM_ACCESS_DEVICE_READS 0
#define UMEM_ACCESS_DEVICE_WRITES IBV_ACCESS_LOCAL_WRITE
#define UMEM_ACCESS_FALLBACK \
  (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* a FD_TO_CLOCKID() of <linux/posix-timers.h>: the dynamic POSIX clock of an open
 * /dev/ptpN */
#define PHC_CLOCKID(fd) ((clockid_t) ((((unsigned int) ~(fd)) << 3) | 3))

static char *sysfs_root;

void
mlx5_hw_set_sysfs_root (const char *root)
{
  g_free (sysfs_root);
  sysfs_root = g_strdup (root);
}

static const char *
sysfs (void)
{
  return sysfs_root ? sysfs_root : "/sys";
}

typedef struct {
  struct mlx5dv_devx_umem *ring;
  struct mlx5dv_devx_umem *dbr; /* NULL when the doorbell record shares the ring's */
} HwUmems;

typedef struct {
  struct mlx5dv_devx_obj *obj;
  HwUmems mem;
} HwCq;

typedef struct {
  struct mlx5dv_devx_obj *obj;
  struct mlx5dv_devx_obj *tir; /* direct TIR: the destination of steering rules */
  guint32 tirn;
  struct mlx5dv_devx_obj *counter; /* its queue counter set, or NULL */
  guint32 counter_set_id;
  guint32 out_of_buffer_raw; /* the device's 32-bit count when last read */
  guint64 out_of_buffer;     /* ... accumulated across wraps */
  HwUmems mem;
} HwRq;

typedef struct {
  struct mlx5dv_devx_obj *obj;
  struct mlx5dv_devx_uar *uar;
  HwUmems mem;
} HwSq;

/* the flow rules of one group of RQs (the queues of one element) */
typedef struct {
  guint32 group;
  Mlx5Rq **rqs;
  guint n_rqs;
  DqFlowRule *rules;
  guint n_rules;
} HwGroup;

typedef struct {
  guint16 priority;
  guint8 criteria;
  guint8 mask[MLX5_HW_MATCH_BYTES];
  struct mlx5dv_dr_matcher *matcher;
} HwMatcher;

/* what is installed for all groups */
typedef struct {
  GPtrArray *rules;   /* struct mlx5dv_dr_rule * */
  GArray *matchers;   /* HwMatcher */
  GPtrArray *actions; /* struct mlx5dv_dr_action * */
  GPtrArray *objs;    /* RQTs and RSS TIRs, in creation order */
} HwSteering;

typedef struct {
  char *name;   /* ibv device name, mlx5_0 */
  char *netdev; /* its first network interface, or NULL */
  char *clock_name;
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  guint32 pdn;
  struct mlx5dv_devx_obj *td_obj;
  guint32 td;
  struct mlx5dv_devx_uar *cq_uar;
  guint32 eqn;
  guint page_shift;
  Mlx5HwCaps hw;
  Mlx5Caps caps;
  gboolean vport_ok;
  Mlx5HwClock clock;
  gboolean real_time; /* queues stamp the real-time clock */
  int phc_fd;         /* the PTP hardware clock, or -1 */

  GMutex lock; /* the members below */
  struct mlx5dv_devx_obj *tis;
  guint32 tisn;
  struct mlx5dv_dr_domain *dr_domain;
  struct mlx5dv_dr_table *dr_table;
  GPtrArray *groups;    /* HwGroup *, in the order they were first set */
  HwSteering *steering; /* installed for `groups`, NULL when none */
  guint bank;           /* the bank of priorities `steering` uses: 0 or 1 */
  gboolean counters_warned;
} HwDev;

/* ---------------------------------------------------------------------------------- */
/* issuing commands */

static int
error_code_for (int err)
{
  return err == EPERM || err == EACCES ? DQ_ERROR_PERMISSION : DQ_ERROR_DEVICE;
}

static void
set_cmd_error (GError **error, const HwDev *dev, const char *what, int err, const void *out)
{
  char *text = mlx5_cmd_failure_text (what, err, out);
  g_set_error (error, DQ_ERROR, error_code_for (err), "%s: %s%s", dev->name, text,
      err == EPERM || err == EACCES
          ? " (DevX raw Ethernet queues need CAP_NET_RAW; run as root or grant it)"
          : "");
  g_free (text);
}

static struct mlx5dv_devx_obj *
obj_create (HwDev *dev, const char *what, const void *in, gsize inlen, void *out, gsize outlen,
    GError **error)
{
  memset (out, 0, outlen);
  errno = 0;
  struct mlx5dv_devx_obj *obj = mlx5dv_devx_obj_create (dev->ctx, in, inlen, out, outlen);
  if (obj == NULL)
    set_cmd_error (error, dev, what, errno, out);
  return obj;
}

static gboolean
obj_modify (HwDev *dev, struct mlx5dv_devx_obj *obj, const char *what, const void *in, gsize inlen,
    GError **error)
{
  guint32 out[DEVX_ST_SZ_DW (mbox_out)] = { 0 };
  errno = 0;
  int rc = mlx5dv_devx_obj_modify (obj, in, inlen, out, sizeof out);
  if (rc != 0) {
    set_cmd_error (error, dev, what, rc > 0 ? rc : errno, out);
    return FALSE;
  }
  return TRUE;
}

static gboolean
general_cmd (HwDev *dev, const char *what, const void *in, gsize inlen, void *out, gsize outlen,
    GError **error)
{
  memset (out, 0, outlen);
  errno = 0;
  int rc = mlx5dv_devx_general_cmd (dev->ctx, in, inlen, out, outlen);
  if (rc != 0) {
    set_cmd_error (error, dev, what, rc > 0 ? rc : errno, out);
    return FALSE;
  }
  return TRUE;
}

static void
obj_destroy (struct mlx5dv_devx_obj **obj)
{
  if (*obj) {
    int rc = mlx5dv_devx_obj_destroy (*obj);
    if (rc != 0)
      g_debug ("mlx5: destroying a DevX object failed: %s", g_strerror (rc > 0 ? rc : errno));
    *obj = NULL;
  }
}

/* ---------------------------------------------------------------------------------- */
/* umems */

/* Touches every page of [addr, addr + size) with a write of the byte already there, so
 * each is a private, present page before the kernel pins it. A pin without write access
 * (access 0) of a page never written would pin the shared zero page: the device would
 * read zeros while the host writes elsewhere. Only bytes inside the range are touched:
 * they belong to the queue being created, which nothing uses yet. */
static void
prefault (void *addr, gsize size, gsize page)
{
  volatile guint8 *p = addr;
  volatile guint8 *end = p + size;
  while (p < end) {
    *p = *p;
    guintptr next = ((guintptr) p & ~(guintptr) (page - 1)) + page;
    p = (volatile guint8 *) next;
  }
}

static struct mlx5dv_devx_umem *
umem_reg (HwDev *dev, void *addr, gsize size, guint32 access, const char *what, GError **error)
{
  prefault (addr, size, (gsize) 1 << dev->page_shift);
  errno = 0;
  struct mlx5dv_devx_umem *umem = mlx5dv_devx_umem_reg (dev->ctx, addr, size, access);
  if (umem == NULL && access != UMEM_ACCESS_FALLBACK) {
    int first = errno;
    umem = mlx5dv_devx_umem_reg (dev->ctx, addr, size, UMEM_ACCESS_FALLBACK);
    if (umem)
      g_debug ("%s: the kernel refused umem access 0x%x for the %s (%s); registered with "
               "0x%x",
          dev->name, access, what, g_strerror (first), UMEM_ACCESS_FALLBACK);
    else
      errno = first;
  }
  if (umem == NULL) {
    int err = errno;
    g_set_error (error, DQ_ERROR, error_code_for (err),
        "%s: registering the %s (%" G_GSIZE_FORMAT " bytes at %p) as DevX user memory "
        "failed: %s%s",
        dev->name, what, size, addr, g_strerror (err),
        err == ENOMEM ? " (pinned memory is limited by RLIMIT_MEMLOCK: raise `ulimit -l`)" : "");
  }
  return umem;
}

static void
umems_free (HwUmems *m)
{
  if (m->dbr)
    mlx5dv_devx_umem_dereg (m->dbr);
  if (m->ring)
    mlx5dv_devx_umem_dereg (m->ring);
  m->dbr = m->ring = NULL;
}

/* Registers a queue's ring and its doorbell record. When the record follows the ring
 * closely (the layout DPDK and DAQIRI use: ring, then the record in the same
 * allocation), one umem covers both and the record is addressed by its offset in it;
 * otherwise each gets its own. Object buffers always start at umem offset 0: the kernel
 * registers the umem with the largest page size that fits, which is only valid for
 * objects placed at its start. */
static gboolean
umems_reg (HwDev *dev, HwUmems *m, Mlx5HwQueueMem *mem, void *ring, gsize ring_bytes,
    volatile guint32 *dbrec, guint32 access, const char *what, GError **error)
{
  memset (m, 0, sizeof *m);
  memset (mem, 0, sizeof *mem);
  gsize size;
  guint64 dbr_offset;
  gboolean shared = mlx5_hw_dbr_in_ring_umem ((guintptr) ring, ring_bytes, (guintptr) dbrec,
      (gsize) 1 << dev->page_shift, &size, &dbr_offset);

  char *ring_what = g_strdup_printf ("%s ring", what);
  m->ring = umem_reg (dev, ring, size, access, ring_what, error);
  g_free (ring_what);
  if (m->ring == NULL)
    return FALSE;
  mem->umem_id = m->ring->umem_id;
  mem->umem_offset = 0;
  if (shared) {
    mem->dbr_umem_id = m->ring->umem_id;
    mem->dbr_offset = dbr_offset;
    return TRUE;
  }
  char *dbr_what = g_strdup_printf ("%s doorbell record", what);
  m->dbr = umem_reg (dev, (void *) dbrec, 8, access, dbr_what, error);
  g_free (dbr_what);
  if (m->dbr == NULL) {
    umems_free (m);
    return FALSE;
  }
  mem->dbr_umem_id = m->dbr->umem_id;
  mem->dbr_offset = 0;
  return TRUE;
}

/* ---------------------------------------------------------------------------------- */
/* open / close */

static struct mlx5dv_devx_uar *
uar_alloc (HwDev *dev, gboolean *nc, GError **error)
{
  /* non-cached first: daqiri rings doorbells with 8-byte writes, which need no
   * write-combining (nor its flushes); BlueFlame where NC pages are not offered */
  errno = 0;
  struct mlx5dv_devx_uar *uar = mlx5dv_devx_alloc_uar (dev->ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
  *nc = uar != NULL;
  if (uar == NULL) {
    int first = errno;
    uar = mlx5dv_devx_alloc_uar (dev->ctx, MLX5DV_UAR_ALLOC_TYPE_BF);
    if (uar == NULL)
      g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
          "%s: allocating a UAR (doorbell page) failed: %s (non-cached), %s (BlueFlame)", dev->name,
          g_strerror (first), g_strerror (errno));
  }
  return uar;
}

static gboolean
query_caps (HwDev *dev, GError **error)
{
  guint32 in[DEVX_ST_SZ_DW (query_hca_cap_in)];
  guint32 *out = g_malloc (DEVX_ST_SZ_BYTES (query_hca_cap_out));
  gboolean ok;

  memset (in, 0, sizeof in);
  mlx5_cmd_build_query_hca_cap (in, MLX5_HCA_CAP_GENERAL);
  ok = general_cmd (dev, "QUERY_HCA_CAP (general)", in, sizeof in, out,
      DEVX_ST_SZ_BYTES (query_hca_cap_out), error);
  if (ok)
    mlx5_hw_caps_parse_general (&dev->hw, out);
  if (ok && dev->hw.eth_net_offloads) {
    memset (in, 0, sizeof in);
    mlx5_cmd_build_query_hca_cap (in, MLX5_HCA_CAP_ETHERNET_OFFLOADS);
    ok = general_cmd (dev, "QUERY_HCA_CAP (Ethernet offloads)", in, sizeof in, out,
        DEVX_ST_SZ_BYTES (query_hca_cap_out), error);
    if (ok)
      mlx5_hw_caps_parse_eth (&dev->hw, out);
  }
  g_free (out);
  return ok;
}

static gboolean
query_vport (HwDev *dev, guint *mtu, guint8 mac[6])
{
  guint32 in[DEVX_ST_SZ_DW (query_nic_vport_context_in)];
  guint32 out[DEVX_ST_SZ_DW (query_nic_vport_context_out)];
  memset (in, 0, sizeof in);
  mlx5_cmd_build_query_nic_vport_context (in);
  GError *err = NULL;
  if (!general_cmd (dev, "QUERY_NIC_VPORT_CONTEXT", in, sizeof in, out, sizeof out, &err)) {
    g_debug ("%s", err->message);
    g_error_free (err);
    return FALSE;
  }
  mlx5_hw_vport_parse (out, &dev->hw.min_wqe_inline_mode, mtu, mac);
  return TRUE;
}

static void hw_close (gpointer priv);

static struct ibv_device *
find_device (const char *spec, struct ibv_device ***list_out, GError **error)
{
  errno = 0;
  int n = 0;
  struct ibv_device **list = ibv_get_device_list (&n);
  int list_errno = errno;
  GPtrArray *names = g_ptr_array_new ();
  GPtrArray *others = g_ptr_array_new ();
  for (int i = 0; list && i < n; i++)
    g_ptr_array_add (
        mlx5dv_is_supported (list[i]) ? names : others, (gpointer) ibv_get_device_name (list[i]));

  char *none = NULL;
  if (list == NULL)
    none = g_strdup_printf ("this machine has no RDMA devices (ibv_get_device_list: %s)",
        g_strerror (list_errno ? list_errno : ENODEV));
  else if (others->len > 0) {
    g_ptr_array_add (others, NULL);
    char *o = g_strjoinv (", ", (char **) others->pdata);
    none = g_strdup_printf ("no RDMA device here is a ConnectX (mlx5); others: %s", o);
    g_free (o);
  }
  int index =
      mlx5_hw_resolve (sysfs (), (const char *const *) names->pdata, names->len, spec, none, error);
  struct ibv_device *dev = NULL;
  if (index >= 0) {
    const char *name = g_ptr_array_index (names, index);
    for (int i = 0; list && i < n && dev == NULL; i++)
      if (strcmp (ibv_get_device_name (list[i]), name) == 0)
        dev = list[i];
  }
  g_free (none);
  g_ptr_array_unref (names);
  g_ptr_array_unref (others);
  if (dev == NULL && list)
    ibv_free_device_list (list);
  *list_out = dev ? list : NULL;
  return dev;
}

static gpointer
hw_open (const char *spec, DqPortInfo *info, Mlx5Caps *caps, GError **error)
{
  struct ibv_device **list = NULL;
  struct ibv_device *ibdev = find_device (spec, &list, error);
  if (ibdev == NULL)
    return NULL;

  HwDev *dev = g_new0 (HwDev, 1);
  g_mutex_init (&dev->lock);
  dev->groups = g_ptr_array_new ();
  dev->phc_fd = -1;
  dev->name = g_strdup (ibv_get_device_name (ibdev));
  dev->page_shift = (guint) g_bit_storage ((gulong) sysconf (_SC_PAGESIZE)) - 1;

  struct mlx5dv_context_attr attr = { .flags = MLX5DV_CONTEXT_FLAGS_DEVX };
  errno = 0;
  dev->ctx = mlx5dv_open_device (ibdev, &attr);
  int open_errno = errno;
  ibv_free_device_list (list);
  if (dev->ctx == NULL) {
    g_set_error (error, DQ_ERROR, error_code_for (open_errno),
        "%s: opening the device with DevX failed: %s%s", dev->name, g_strerror (open_errno),
        open_errno == EOPNOTSUPP || open_errno == EPROTONOSUPPORT
            ? " (the firmware or kernel offers no DevX here; a ConnectX-5 or later with "
              "kernel >= 5.4 and rdma-core >= 28 does)"
            : "");
    hw_close (dev);
    return NULL;
  }

  /* capabilities */
  struct mlx5dv_context dv;
  memset (&dv, 0, sizeof dv);
  dv.comp_mask = MLX5DV_CONTEXT_MASK_STRIDING_RQ;
  int rc = mlx5dv_query_device (dev->ctx, &dv);
  if (rc != 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "%s: mlx5dv_query_device failed: %s", dev->name,
        g_strerror (rc > 0 ? rc : errno));
    hw_close (dev);
    return NULL;
  }
  if (!query_caps (dev, error)) {
    hw_close (dev);
    return NULL;
  }
  char *detected = mlx5_hw_caps_describe (&dev->hw, &dv);
  g_debug ("%s: capabilities: %s", dev->name, detected);
  g_free (detected);
  GError *cap_err = NULL;
  if (!mlx5_hw_caps_check (&dev->hw, &dv, &cap_err)) {
    g_set_error (error, DQ_ERROR, cap_err->code, "%s: %s", dev->name, cap_err->message);
    g_error_free (cap_err);
    hw_close (dev);
    return NULL;
  }
  if (!dev->hw.csum_cap)
    g_warning ("%s: HCA capability csum_cap is 0: received packets are never flagged "
               "checksum-ok, and TX queues need tx-csum=off",
        dev->name);

  /* protection domain, transport domain, the CQs' UAR, EQ 0 */
  dev->pd = ibv_alloc_pd (dev->ctx);
  if (dev->pd == NULL) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "%s: allocating a protection domain failed: %s",
        dev->name, g_strerror (errno));
    hw_close (dev);
    return NULL;
  }
  struct mlx5dv_pd dvpd;
  struct mlx5dv_obj obj;
  memset (&obj, 0, sizeof obj);
  obj.pd.in = dev->pd;
  obj.pd.out = &dvpd;
  rc = mlx5dv_init_obj (&obj, MLX5DV_OBJ_PD);
  if (rc != 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "%s: reading the protection domain number (mlx5dv_init_obj) failed: %s", dev->name,
        g_strerror (rc > 0 ? rc : errno));
    hw_close (dev);
    return NULL;
  }
  dev->pdn = dvpd.pdn;

  {
    guint32 in[DEVX_ST_SZ_DW (alloc_transport_domain_in)] = { 0 };
    guint32 out[DEVX_ST_SZ_DW (alloc_transport_domain_out)];
    mlx5_cmd_build_alloc_transport_domain (in);
    dev->td_obj = obj_create (dev, "ALLOC_TRANSPORT_DOMAIN", in, sizeof in, out, sizeof out, error);
    if (dev->td_obj == NULL) {
      hw_close (dev);
      return NULL;
    }
    dev->td = DEVX_GET (alloc_transport_domain_out, out, transport_domain);
  }

  gboolean nc;
  dev->cq_uar = uar_alloc (dev, &nc, error);
  if (dev->cq_uar == NULL) {
    hw_close (dev);
    return NULL;
  }
  rc = mlx5dv_devx_query_eqn (dev->ctx, 0, &dev->eqn);
  if (rc != 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "%s: querying the event queue of vector 0 failed: %s", dev->name,
        g_strerror (rc > 0 ? rc : errno));
    hw_close (dev);
    return NULL;
  }

  /* the port: MAC and MTU of its network interface, else of the vport */
  char **netdevs = mlx5_hw_sys_netdevs_of (sysfs (), dev->name);
  dev->netdev = g_strdup (netdevs[0]);
  g_strfreev (netdevs);
  guint vport_mtu = 0;
  guint8 vport_mac[6] = { 0 };
  dev->vport_ok = query_vport (dev, &vport_mtu, vport_mac);
  gboolean have_mac = dev->netdev && mlx5_hw_sys_netdev_mac (sysfs (), dev->netdev, info->mac);
  gboolean have_mtu = dev->netdev && mlx5_hw_sys_netdev_mtu (sysfs (), dev->netdev, &info->mtu);
  if (!have_mac && dev->vport_ok)
    memcpy (info->mac, vport_mac, 6);
  if (!have_mtu)
    info->mtu = mlx5_hw_vport_mtu_to_netdev (dev->vport_ok ? vport_mtu : 0);

  /* the clock: real time where the device stamps it and its PHC can be read, else the
   * free-running counter converted with the kernel's clock info, else none (mlx5_hw_clock_choose) */
  gboolean phc_ok = FALSE;
  char *phc = NULL;
  if (dv.flags & MLX5DV_CONTEXT_FLAGS_REAL_TIME_TS) {
    phc = mlx5_hw_sys_phc_of (sysfs (), dev->name);
    if (phc) {
      dev->phc_fd = open (phc, O_RDONLY | O_CLOEXEC);
      struct timespec ts;
      phc_ok = dev->phc_fd >= 0 && clock_gettime (PHC_CLOCKID (dev->phc_fd), &ts) == 0;
      if (!phc_ok)
        g_debug (
            "%s: cannot read the PTP hardware clock %s (%s)", dev->name, phc, g_strerror (errno));
    }
  }
  struct mlx5dv_clock_info ci;
  rc = mlx5dv_get_clock_info (dev->ctx, &ci);
  int ci_errno = rc == 0 ? 0 : rc > 0 ? rc : errno ? errno : EIO;
  /* nothing daqiri does yet needs NIC time: send scheduling on WAIT-on-time would */
  gboolean need_hw_ts = FALSE;
  char *warning = NULL;
  GError *clock_err = NULL;
  if (!mlx5_hw_clock_choose (&dev->hw, (dv.flags & MLX5DV_CONTEXT_FLAGS_REAL_TIME_TS) != 0, phc_ok,
          ci_errno, need_hw_ts, &dev->clock, &warning, &clock_err)) {
    g_set_error (error, DQ_ERROR, clock_err->code, "%s: %s", dev->name, clock_err->message);
    g_error_free (clock_err);
    g_free (phc);
    hw_close (dev);
    return NULL;
  }
  if (dev->clock != MLX5_HW_CLOCK_REAL_TIME && dev->phc_fd >= 0) {
    close (dev->phc_fd);
    dev->phc_fd = -1;
  }
  dev->real_time = dev->clock == MLX5_HW_CLOCK_REAL_TIME;
  if (dev->clock == MLX5_HW_CLOCK_REAL_TIME)
    dev->clock_name =
        g_strdup_printf ("%s real-time clock (PTP hardware clock %s)", dev->name, phc);
  else if (dev->clock == MLX5_HW_CLOCK_FREE_RUNNING)
    dev->clock_name = g_strdup_printf (
        "%s hardware clock (free-running, %u kHz)", dev->name, dev->hw.device_frequency_khz);
  else
    dev->clock_name = g_strdup ("CLOCK_MONOTONIC (kernel; the NIC clock cannot be read)");
  if (warning)
    g_warning ("%s: %s", dev->name, warning);
  g_free (warning);
  g_free (phc);

  /* what the host side sizes its rings by */
  mlx5_hw_caps_fill (&dev->caps, &dev->hw, &dv, dev->real_time);
  dev->caps.no_hw_ts = dev->clock == MLX5_HW_CLOCK_NONE;
  *caps = dev->caps;

  info->clock_id = dev->clock == MLX5_HW_CLOCK_NONE ? CLOCK_MONOTONIC : -1;
  info->clock_name = dev->clock_name;
  g_debug ("%s: opened (pdn 0x%x, td 0x%x, eqn %u, %s UAR page %u, %s); strides 2^%u..2^%u "
           "x 2^%u..2^%u B, WQ <= 2^%u, CQ <= 2^%u",
      dev->name, dev->pdn, dev->td, dev->eqn, nc ? "non-cached" : "BlueFlame", dev->cq_uar->page_id,
      dev->clock_name, dev->caps.min_log_strides, dev->caps.max_log_strides,
      dev->caps.min_log_stride_size, dev->caps.max_log_stride_size, dev->caps.max_log_wqes,
      dev->caps.max_log_cq_size);
  return dev;
}

static void steering_free (HwSteering *st);
static void group_free (HwGroup *g);

static void
hw_close (gpointer priv)
{
  HwDev *dev = priv;
  if (dev == NULL)
    return;
  steering_free (dev->steering);
  for (guint i = 0; i < dev->groups->len; i++)
    group_free (g_ptr_array_index (dev->groups, i));
  g_ptr_array_unref (dev->groups);
  if (dev->dr_table)
    mlx5dv_dr_table_destroy (dev->dr_table);
  if (dev->dr_domain)
    mlx5dv_dr_domain_destroy (dev->dr_domain);
  obj_destroy (&dev->tis);
  obj_destroy (&dev->td_obj);
  if (dev->cq_uar)
    mlx5dv_devx_free_uar (dev->cq_uar);
  if (dev->pd)
    ibv_dealloc_pd (dev->pd);
  if (dev->ctx)
    ibv_close_device (dev->ctx);
  if (dev->phc_fd >= 0)
    close (dev->phc_fd);
  g_mutex_clear (&dev->lock);
  g_free (dev->clock_name);
  g_free (dev->netdev);
  g_free (dev->name);
  g_free (dev);
}

/* ---------------------------------------------------------------------------------- */
/* memory regions */

static gboolean
hw_mr_reg (gpointer priv, void *addr, gsize size, guint32 *lkey, gpointer *handle, GError **error)
{
  HwDev *dev = priv;
  /* local write only: relaxed ordering caused local protection errors on some
   * aarch64 hosts (DAQIRI), and nothing remote touches these buffers */
  errno = 0;
  struct ibv_mr *mr = ibv_reg_mr (dev->pd, addr, size, IBV_ACCESS_LOCAL_WRITE);
  if (mr == NULL) {
    int err = errno;
    g_set_error (error, DQ_ERROR, error_code_for (err),
        "%s: registering %" G_GSIZE_FORMAT " bytes of packet memory at %p (ibv_reg_mr) "
        "failed: %s%s",
        dev->name, size, addr, g_strerror (err),
        err == ENOMEM ? " (pinned memory is limited by RLIMIT_MEMLOCK: raise `ulimit -l`)" : "");
    return FALSE;
  }
  *lkey = mr->lkey;
  *handle = mr;
  return TRUE;
}

/* GPU device memory (GPUDirect RDMA through a dma-buf: the kernel's dma-buf support for the
 * NVIDIA driver, no nvidia-peermem needed) */
static gboolean
hw_mr_reg_dmabuf (gpointer priv, int fd, guint64 offset, gsize size, void *iova, guint32 *lkey,
    gpointer *handle, GError **error)
{
  HwDev *dev = priv;
  errno = 0;
  struct ibv_mr *mr = ibv_reg_dmabuf_mr (
      dev->pd, offset, size, (guint64) (guintptr) iova, fd, IBV_ACCESS_LOCAL_WRITE);
  if (mr == NULL) {
    int err = errno;
    g_set_error (error, DQ_ERROR, error_code_for (err),
        "%s: registering %" G_GSIZE_FORMAT " bytes of GPU memory at %p (ibv_reg_dmabuf_mr, "
        "dma-buf fd %d offset %" G_GUINT64_FORMAT ") failed: %s (GPUDirect RDMA needs the "
        "NVIDIA open kernel modules with dma-buf support and an rdma-core/kernel that "
        "take dma-bufs; without them use daqirisrc gpudirect=false: pinned host memory)",
        dev->name, size, iova, fd, offset, g_strerror (err));
    return FALSE;
  }
  *lkey = mr->lkey;
  *handle = mr;
  return TRUE;
}

static void
hw_mr_dereg (gpointer priv, gpointer handle)
{
  if (handle)
    ibv_dereg_mr (handle);
}

/* ---------------------------------------------------------------------------------- */
/* CQ */

static gboolean
hw_cq_create (gpointer priv, Mlx5Cq *cq, GError **error)
{
  HwDev *dev = priv;
  if (!mlx5_hw_cq_check (cq, &dev->caps, error))
    return FALSE;
  HwCq *h = g_new0 (HwCq, 1);
  Mlx5HwQueueMem mem;
  if (!umems_reg (dev, &h->mem, &mem, cq->ring, (gsize) 64 << cq->log_size, cq->dbrec,
          UMEM_ACCESS_DEVICE_WRITES, "CQ", error)) {
    g_free (h);
    return FALSE;
  }
  guint32 in[DEVX_ST_SZ_DW (create_cq_in)] = { 0 };
  guint32 out[DEVX_ST_SZ_DW (create_cq_out)];
  mlx5_cmd_build_create_cq (in, cq, &mem, dev->cq_uar->page_id, dev->eqn, dev->page_shift);
  char *what = g_strdup_printf ("CREATE_CQ (2^%u CQEs of 64 bytes)", cq->log_size);
  h->obj = obj_create (dev, what, in, sizeof in, out, sizeof out, error);
  g_free (what);
  if (h->obj == NULL) {
    umems_free (&h->mem);
    g_free (h);
    return FALSE;
  }
  cq->cqn = DEVX_GET (create_cq_out, out, cqn);
  cq->priv = h;
  return TRUE;
}

static void
hw_cq_destroy (gpointer priv, Mlx5Cq *cq)
{
  HwCq *h = cq->priv;
  if (h == NULL)
    return;
  obj_destroy (&h->obj);
  umems_free (&h->mem);
  g_free (h);
  cq->priv = NULL;
}

/* ---------------------------------------------------------------------------------- */
/* RQ */

static void groups_drop_rq (HwDev *dev, Mlx5Rq *rq);

static gboolean
hw_rq_create (gpointer priv, Mlx5Rq *rq, GError **error)
{
  HwDev *dev = priv;
  if (!mlx5_hw_rq_check (rq, &dev->caps, error))
    return FALSE;
  HwRq *h = g_new0 (HwRq, 1);
  Mlx5HwQueueMem mem;
  if (!umems_reg (dev, &h->mem, &mem, rq->wqes, (gsize) 32 << rq->log_wqes, rq->dbrec,
          UMEM_ACCESS_DEVICE_READS, "RQ", error)) {
    g_free (h);
    return FALSE;
  }

  /* a queue counter set of its own, for the out-of-buffer drops; a port has few
   * (max_qp_cnt), so running out costs the count, not the queue */
  {
    guint32 cin[DEVX_ST_SZ_DW (alloc_q_counter_in)] = { 0 };
    guint32 cout[DEVX_ST_SZ_DW (alloc_q_counter_out)];
    GError *cerr = NULL;
    mlx5_cmd_build_alloc_q_counter (cin);
    h->counter = obj_create (dev, "ALLOC_Q_COUNTER", cin, sizeof cin, cout, sizeof cout, &cerr);
    if (h->counter) {
      h->counter_set_id = DEVX_GET (alloc_q_counter_out, cout, counter_set_id);
    } else {
      g_mutex_lock (&dev->lock);
      if (!dev->counters_warned)
        g_warning ("%s; out-of-buffer drops of this and later RX queues read 0", cerr->message);
      dev->counters_warned = TRUE;
      g_mutex_unlock (&dev->lock);
      g_error_free (cerr);
    }
  }

  guint32 in[DEVX_ST_SZ_DW (create_rq_in)] = { 0 };
  guint32 out[DEVX_ST_SZ_DW (create_rq_out)];
  mlx5_cmd_build_create_rq (in, rq, rq->cq->cqn, dev->pdn, &mem, dev->page_shift,
      mlx5_hw_ts_format (dev->real_time), h->counter_set_id);
  char *what = rq->split_header != 0
      ? g_strdup_printf ("CREATE_RQ (header-data split: 2^%u WQEs of %u header and %u payload "
                         "bytes, CQ 0x%x, %s timestamps)",
            rq->log_wqes, rq->split_header, rq->split_payload, rq->cq->cqn,
            dev->real_time ? "real-time" : "free-running")
      : g_strdup_printf ("CREATE_RQ (striding: 2^%u WQEs of 2^%u strides of %u "
                         "bytes, CQ 0x%x, %s timestamps)",
            rq->log_wqes, rq->log_strides, 1u << rq->log_stride_size, rq->cq->cqn,
            dev->real_time ? "real-time" : "free-running");
  h->obj = obj_create (dev, what, in, sizeof in, out, sizeof out, error);
  g_free (what);
  if (h->obj == NULL)
    goto fail;
  rq->rqn = DEVX_GET (create_rq_out, out, rqn);

  guint32 mod[DEVX_ST_SZ_DW (modify_rq_in)] = { 0 };
  mlx5_cmd_build_modify_rq_rdy (mod, rq->rqn);
  if (!obj_modify (dev, h->obj, "MODIFY_RQ (RST to RDY)", mod, sizeof mod, error))
    goto fail;

  guint32 tin[DEVX_ST_SZ_DW (create_tir_in)] = { 0 };
  guint32 tout[DEVX_ST_SZ_DW (create_tir_out)];
  mlx5_cmd_build_create_tir_direct (tin, rq->rqn, dev->td);
  h->tir = obj_create (dev, "CREATE_TIR (direct)", tin, sizeof tin, tout, sizeof tout, error);
  if (h->tir == NULL)
    goto fail;
  h->tirn = DEVX_GET (create_tir_out, tout, tirn);
  rq->priv = h;
  return TRUE;

fail:
  obj_destroy (&h->tir);
  obj_destroy (&h->obj);
  obj_destroy (&h->counter);
  umems_free (&h->mem);
  g_free (h);
  rq->rqn = 0;
  return FALSE;
}

static void
hw_rq_destroy (gpointer priv, Mlx5Rq *rq)
{
  HwDev *dev = priv;
  HwRq *h = rq->priv;
  if (h == NULL)
    return;
  /* rules pointing at this RQ's TIR, or at an RQT listing it, go first */
  groups_drop_rq (dev, rq);
  obj_destroy (&h->tir);
  obj_destroy (&h->obj);
  obj_destroy (&h->counter);
  umems_free (&h->mem);
  g_free (h);
  rq->priv = NULL;
}

/* MODIFY_RQ ERR -> RST, then RST -> RDY: the WQE counter starts again at 0 */
static gboolean
hw_rq_recover (gpointer priv, Mlx5Rq *rq, GError **error)
{
  HwDev *dev = priv;
  HwRq *h = rq->priv;
  guint32 rst[DEVX_ST_SZ_DW (modify_rq_in)] = { 0 };
  guint32 rdy[DEVX_ST_SZ_DW (modify_rq_in)] = { 0 };

  mlx5_cmd_build_modify_rq_state (rst, rq->rqn, MLX5_RQC_STATE_ERR, MLX5_RQC_STATE_RST);
  mlx5_cmd_build_modify_rq_rdy (rdy, rq->rqn);
  return obj_modify (dev, h->obj, "MODIFY_RQ (ERR to RST)", rst, sizeof rst, error) &&
      obj_modify (dev, h->obj, "MODIFY_RQ (RST to RDY)", rdy, sizeof rdy, error);
}

static void
hw_rq_counters (gpointer priv, Mlx5Rq *rq, Mlx5RqCounters *counters)
{
  HwDev *dev = priv;
  HwRq *h = rq->priv;
  memset (counters, 0, sizeof *counters);
  if (h == NULL || h->counter == NULL)
    return;
  guint32 in[DEVX_ST_SZ_DW (query_q_counter_in)] = { 0 };
  guint32 out[DEVX_ST_SZ_DW (query_q_counter_out)] = { 0 };
  mlx5_cmd_build_query_q_counter (in, h->counter_set_id);
  g_mutex_lock (&dev->lock);
  if (mlx5dv_devx_obj_query (h->counter, in, sizeof in, out, sizeof out) == 0) {
    guint32 raw = mlx5_hw_q_counter_out_of_buffer (out);
    h->out_of_buffer += (guint32) (raw - h->out_of_buffer_raw);
    h->out_of_buffer_raw = raw;
  }
  counters->out_of_buffer = h->out_of_buffer;
  g_mutex_unlock (&dev->lock);
}

/* ---------------------------------------------------------------------------------- */
/* SQ */

static gboolean
tis_get (HwDev *dev, guint32 *tisn, GError **error)
{
  gboolean ok = TRUE;
  g_mutex_lock (&dev->lock);
  if (dev->tis == NULL) {
    guint32 in[DEVX_ST_SZ_DW (create_tis_in)] = { 0 };
    guint32 out[DEVX_ST_SZ_DW (create_tis_out)];
    mlx5_cmd_build_create_tis (in, dev->td);
    dev->tis = obj_create (dev, "CREATE_TIS", in, sizeof in, out, sizeof out, error);
    if (dev->tis)
      dev->tisn = DEVX_GET (create_tis_out, out, tisn);
    ok = dev->tis != NULL;
  }
  *tisn = dev->tisn;
  g_mutex_unlock (&dev->lock);
  return ok;
}

static gboolean
check_tx_inline (HwDev *dev, GError **error)
{
  static const char *const names[] = { "none", "L2", "IP", "TCP/UDP" };
  guint need = mlx5_hw_tx_inline_mode (&dev->hw, dev->vport_ok);
  if (need == MLX5_INLINE_MODE_NONE)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
      "%s: this port requires packet headers inline in send WQEs (minimum inline mode "
      "%s, as ConnectX-4 Lx ports do); daqiri's send path does not inline headers",
      dev->name, names[need & 3]);
  return FALSE;
}

static gboolean
hw_sq_create (gpointer priv, Mlx5Sq *sq, GError **error)
{
  HwDev *dev = priv;
  guint32 tisn;
  if (!mlx5_hw_sq_check (sq, &dev->caps, error) || !check_tx_inline (dev, error) ||
      !tis_get (dev, &tisn, error))
    return FALSE;

  HwSq *h = g_new0 (HwSq, 1);
  gboolean nc;
  h->uar = uar_alloc (dev, &nc, error);
  if (h->uar == NULL) {
    g_free (h);
    return FALSE;
  }
  Mlx5HwQueueMem mem;
  if (!umems_reg (dev, &h->mem, &mem, sq->wqes, (gsize) 64 << sq->log_wqebbs, sq->dbrec,
          UMEM_ACCESS_DEVICE_READS, "SQ", error))
    goto fail;

  gboolean mpw = mlx5_hw_tx_allow_mpw (&dev->hw);
  guint32 in[DEVX_ST_SZ_DW (create_sq_in)] = { 0 };
  guint32 out[DEVX_ST_SZ_DW (create_sq_out)];
  mlx5_cmd_build_create_sq (in, sq, sq->cq->cqn, dev->pdn, tisn, h->uar->page_id, &mem,
      dev->page_shift, mlx5_hw_ts_format (dev->real_time), mpw);
  char *what = g_strdup_printf (
      "CREATE_SQ (2^%u WQE basic blocks, CQ 0x%x, TIS 0x%x)", sq->log_wqebbs, sq->cq->cqn, tisn);
  h->obj = obj_create (dev, what, in, sizeof in, out, sizeof out, error);
  g_free (what);
  if (h->obj == NULL)
    goto fail;
  sq->sqn = DEVX_GET (create_sq_out, out, sqn);

  guint32 mod[DEVX_ST_SZ_DW (modify_sq_in)] = { 0 };
  mlx5_cmd_build_modify_sq_rdy (mod, sq->sqn);
  if (!obj_modify (dev, h->obj, "MODIFY_SQ (RST to RDY)", mod, sizeof mod, error))
    goto fail;

  /* the doorbell register at offset 0x800 of the UAR page. A non-cached page takes the
   * 8-byte doorbell only (bf_size 0: no BlueFlame buffer to alternate); a BlueFlame
   * page has two buffers of half the BlueFlame register each, written alternately. */
  sq->bf_reg = h->uar->reg_addr;
  sq->bf_size = mlx5_hw_bf_size (nc, dev->hw.log_bf_reg_size);
  sq->priv = h;
  return TRUE;

fail:
  obj_destroy (&h->obj);
  umems_free (&h->mem);
  mlx5dv_devx_free_uar (h->uar);
  g_free (h);
  sq->sqn = 0;
  return FALSE;
}

/* MODIFY_SQ ERR -> RST, then RST -> RDY: WQE indices start again at 0 */
static gboolean
hw_sq_recover (gpointer priv, Mlx5Sq *sq, GError **error)
{
  HwDev *dev = priv;
  HwSq *h = sq->priv;
  guint32 rst[DEVX_ST_SZ_DW (modify_sq_in)] = { 0 };
  guint32 rdy[DEVX_ST_SZ_DW (modify_sq_in)] = { 0 };

  mlx5_cmd_build_modify_sq_state (rst, sq->sqn, MLX5_SQC_STATE_ERR, MLX5_SQC_STATE_RST);
  mlx5_cmd_build_modify_sq_rdy (rdy, sq->sqn);
  return obj_modify (dev, h->obj, "MODIFY_SQ (ERR to RST)", rst, sizeof rst, error) &&
      obj_modify (dev, h->obj, "MODIFY_SQ (RST to RDY)", rdy, sizeof rdy, error);
}

static void
hw_sq_destroy (gpointer priv, Mlx5Sq *sq)
{
  HwSq *h = sq->priv;
  if (h == NULL)
    return;
  obj_destroy (&h->obj);
  umems_free (&h->mem);
  mlx5dv_devx_free_uar (h->uar);
  g_free (h);
  sq->priv = NULL;
  sq->bf_reg = NULL;
}

/* ---------------------------------------------------------------------------------- */
/* steering */

/* The steering of the port is rebuilt whole whenever a group changes: the priority a
 * rule needs depends on every earlier rule of every group (mlx5_hw_flow_plan). The root
 * table's priorities are split in two banks of MLX5_HW_BANK_PRIORITIES; a rebuild
 * installs the new rules in the bank the old ones do not use, and removes the old ones
 * only then: a flow that both rule sets steer alike never loses a packet (a priority of
 * its own keeps an identical match legal), and a rebuild that fails leaves the old rules
 * as they were. Rule changes are rare (state and property changes); a rebuild costs a
 * few firmware commands per rule. */

static void
group_free (HwGroup *g)
{
  if (g) {
    g_free (g->rqs);
    g_free (g->rules);
    g_free (g);
  }
}

static void
steering_free (HwSteering *st)
{
  if (st == NULL)
    return;
  for (guint i = 0; i < st->rules->len; i++)
    mlx5dv_dr_rule_destroy (g_ptr_array_index (st->rules, i));
  for (guint i = 0; i < st->matchers->len; i++)
    mlx5dv_dr_matcher_destroy (g_array_index (st->matchers, HwMatcher, i).matcher);
  for (guint i = 0; i < st->actions->len; i++)
    mlx5dv_dr_action_destroy (g_ptr_array_index (st->actions, i));
  /* RSS TIRs were created after their RQTs: destroy in reverse */
  for (guint i = st->objs->len; i-- > 0;) {
    struct mlx5dv_devx_obj *o = g_ptr_array_index (st->objs, i);
    obj_destroy (&o);
  }
  g_ptr_array_unref (st->rules);
  g_array_unref (st->matchers);
  g_ptr_array_unref (st->actions);
  g_ptr_array_unref (st->objs);
  g_free (st);
}

static gboolean
dr_ensure (HwDev *dev, GError **error)
{
  if (dev->dr_table)
    return TRUE;
  errno = 0;
  if (dev->dr_domain == NULL)
    dev->dr_domain = mlx5dv_dr_domain_create (dev->ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  if (dev->dr_domain == NULL) {
    int err = errno;
    g_set_error (error, DQ_ERROR, error_code_for (err),
        "%s: creating the receive steering domain (mlx5dv_dr_domain_create NIC_RX) "
        "failed: %s",
        dev->name, g_strerror (err));
    return FALSE;
  }
  /* level 0, the root table: the firmware steers there itself, which needs no
   * software-steering rights; its 16 priorities come before the kernel's own rules */
  dev->dr_table = mlx5dv_dr_table_create (dev->dr_domain, 0);
  if (dev->dr_table == NULL) {
    g_set_error (error, DQ_ERROR, error_code_for (errno),
        "%s: creating the root steering table failed: %s", dev->name, g_strerror (errno));
    return FALSE;
  }
  return TRUE;
}

static struct mlx5dv_flow_match_parameters *
match_params (const guint8 *buf)
{
  struct mlx5dv_flow_match_parameters *p = g_malloc0 (sizeof *p + MLX5_HW_MATCH_BYTES);
  p->match_sz = MLX5_HW_MATCH_BYTES;
  memcpy (p->match_buf, buf, MLX5_HW_MATCH_BYTES);
  return p;
}

static struct mlx5dv_dr_action *
action_keep (HwSteering *st, struct mlx5dv_dr_action *a)
{
  if (a)
    g_ptr_array_add (st->actions, a);
  return a;
}

/* A group's destinations while one steering is built: the action of each RQ index and
 * RSS way (dest_slot), and the group's RQT once made (0: none yet). */
typedef struct {
  struct mlx5dv_dr_action **actions;
  guint32 rqtn;
} HwDests;

/* an RQ index as itself, then MLX5_HW_FLOW_DEST_RSS, _RSS_UDP, _RSS_TCP, _RSS_IP */
static guint
dest_slot (guint dest, guint n_rqs)
{
  return dest < n_rqs ? dest : n_rqs + (G_MAXUINT - dest);
}

/* the RQT listing every RQ of the group, made once per steering */
static gboolean
group_rqt (HwDev *dev, HwSteering *st, const HwGroup *g, HwDests *d, GError **error)
{
  if (d->rqtn != 0)
    return TRUE;
  GError *rqt_err = NULL;
  if (!mlx5_hw_rqt_check (g->n_rqs, dev->hw.log_max_rqt_size, &rqt_err)) {
    g_set_error (error, DQ_ERROR, rqt_err->code, "%s: %s", dev->name, rqt_err->message);
    g_error_free (rqt_err);
    return FALSE;
  }
  guint32 *rqns = g_new (guint32, g->n_rqs);
  for (guint i = 0; i < g->n_rqs; i++)
    rqns[i] = g->rqs[i]->rqn;
  guint size = mlx5_hw_rqt_size (g->n_rqs);
  gsize inlen = mlx5_cmd_create_rqt_in_bytes (size);
  void *in = g_malloc0 (inlen);
  guint32 out[DEVX_ST_SZ_DW (create_rqt_out)];
  mlx5_cmd_build_create_rqt (in, rqns, g->n_rqs);
  g_free (rqns);
  char *what = g_strdup_printf ("CREATE_RQT (%u entries over %u RQs)", size, g->n_rqs);
  struct mlx5dv_devx_obj *rqt = obj_create (dev, what, in, inlen, out, sizeof out, error);
  g_free (what);
  g_free (in);
  if (rqt == NULL)
    return FALSE;
  g_ptr_array_add (st->objs, rqt);
  d->rqtn = DEVX_GET (create_rqt_out, out, rqtn);
  return TRUE;
}

/* a Toeplitz TIR over the group's RQT for one kind of traffic */
static struct mlx5dv_devx_obj *
rss_tir (HwDev *dev, HwSteering *st, const HwGroup *g, HwDests *d, guint dest, GError **error)
{
  static const struct {
    guint dest;
    guint8 l4_proto;
    const char *what;
  } kinds[] = {
    { MLX5_HW_FLOW_DEST_RSS_UDP, 17, "CREATE_TIR (RSS, Toeplitz over IPv4/UDP)" },
    { MLX5_HW_FLOW_DEST_RSS_TCP, 6, "CREATE_TIR (RSS, Toeplitz over IPv4/TCP)" },
    { MLX5_HW_FLOW_DEST_RSS_IP, 0, "CREATE_TIR (RSS, Toeplitz over IPv4 addresses)" },
  };
  guint k = 0;
  while (k < G_N_ELEMENTS (kinds) - 1 && kinds[k].dest != dest)
    k++;
  if (!group_rqt (dev, st, g, d, error))
    return NULL;
  guint32 tin[DEVX_ST_SZ_DW (create_tir_in)] = { 0 };
  guint32 tout[DEVX_ST_SZ_DW (create_tir_out)];
  mlx5_cmd_build_create_tir_rss (tin, d->rqtn, dev->td, mlx5_rss_default_key (), kinds[k].l4_proto);
  struct mlx5dv_devx_obj *tir =
      obj_create (dev, kinds[k].what, tin, sizeof tin, tout, sizeof tout, error);
  if (tir != NULL)
    g_ptr_array_add (st->objs, tir);
  return tir;
}

/* the destination action of a group's RQ index or RSS way, created once per rebuild */
static struct mlx5dv_dr_action *
dest_action (HwDev *dev, HwSteering *st, const HwGroup *g, HwDests *d, guint dest, GError **error)
{
  guint slot = dest_slot (dest, g->n_rqs);
  g_return_val_if_fail (d->actions != NULL, NULL);
  if (d->actions[slot])
    return d->actions[slot];

  struct mlx5dv_devx_obj *tir;
  if (dest < g->n_rqs || g->n_rqs == 1) {
    /* an RQ, or RSS over one: its direct TIR */
    Mlx5Rq *rq = g->rqs[dest < g->n_rqs ? dest : 0];
    tir = ((HwRq *) rq->priv)->tir;
  } else {
    tir = rss_tir (dev, st, g, d, dest, error);
    if (tir == NULL)
      return NULL;
  }
  errno = 0;
  d->actions[slot] = action_keep (st, mlx5dv_dr_action_create_dest_devx_tir (tir));
  if (d->actions[slot] == NULL)
    g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
        "%s: creating a steering destination (TIR) action failed: %s", dev->name,
        g_strerror (errno));
  return d->actions[slot];
}

/* the matcher of a priority and mask, shared by every rule with both */
static struct mlx5dv_dr_matcher *
matcher_get (HwDev *dev, HwSteering *st, const Mlx5HwFlowEntry *e)
{
  for (guint i = 0; i < st->matchers->len; i++) {
    HwMatcher *m = &g_array_index (st->matchers, HwMatcher, i);
    if (m->priority == e->priority && m->criteria == e->criteria &&
        memcmp (m->mask, e->mask, MLX5_HW_MATCH_BYTES) == 0)
      return m->matcher;
  }
  struct mlx5dv_flow_match_parameters *mask = match_params (e->mask);
  errno = 0;
  HwMatcher m;
  m.matcher = mlx5dv_dr_matcher_create (dev->dr_table, e->priority, e->criteria, mask);
  g_free (mask);
  if (m.matcher == NULL)
    return NULL;
  m.priority = e->priority;
  m.criteria = e->criteria;
  memcpy (m.mask, e->mask, MLX5_HW_MATCH_BYTES);
  g_array_append_val (st->matchers, m);
  return m.matcher;
}

static gboolean
entry_install (HwDev *dev, HwSteering *st, const HwGroup *g, const Mlx5HwFlowEntry *e,
    HwDests *dests, GError **error)
{
  struct mlx5dv_dr_action *actions[2];
  guint n = 0;
  if (e->tag) {
    /* the tag first: it must precede the terminating destination */
    errno = 0;
    actions[n] = action_keep (st, mlx5dv_dr_action_create_tag (e->tag));
    if (actions[n] == NULL) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "%s: creating the tag action for mark %u failed: %s", dev->name, e->tag,
          g_strerror (errno));
      return FALSE;
    }
    n++;
  }
  actions[n] = dest_action (dev, st, g, dests, e->dest, error);
  if (actions[n] == NULL)
    return FALSE;
  n++;

  struct mlx5dv_dr_matcher *m = matcher_get (dev, st, e);
  int err = errno;
  struct mlx5dv_dr_rule *r = NULL;
  if (m) {
    struct mlx5dv_flow_match_parameters *value = match_params (e->value);
    errno = 0;
    r = mlx5dv_dr_rule_create (m, value, n, actions);
    err = errno;
    g_free (value);
    if (r)
      g_ptr_array_add (st->rules, r);
  }
  if (r == NULL) {
    const char *call = m ? "mlx5dv_dr_rule_create" : "mlx5dv_dr_matcher_create";
    if (e->rule == G_MAXUINT) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "%s: installing the rule that steers every packet to the RX queues failed: "
          "%s (%s at priority %u)",
          dev->name, g_strerror (err), call, e->priority);
    } else {
      char *text = dq_flow_rule_to_string (&g->rules[e->rule]);
      g_set_error (error, DQ_ERROR, DQ_ERROR_FLOW,
          "%s: installing flow rule %u (\"%s\") failed: %s (%s at priority %u)", dev->name,
          e->rule + 1, text, g_strerror (err), call, e->priority);
      g_free (text);
    }
    return FALSE;
  }
  return TRUE;
}

static GArray *
groups_plan (GPtrArray *groups, GError **error)
{
  Mlx5HwFlowGroup *fg = g_new0 (Mlx5HwFlowGroup, MAX (groups->len, 1));
  for (guint i = 0; i < groups->len; i++) {
    const HwGroup *g = g_ptr_array_index (groups, i);
    fg[i].n_rqs = g->n_rqs;
    fg[i].rules = g->rules;
    fg[i].n_rules = g->n_rules;
  }
  GArray *plan = mlx5_hw_flow_plan (fg, groups->len, MLX5_HW_BANK_PRIORITIES, error);
  g_free (fg);
  return plan;
}

/* installs the rules of `groups` in priority bank `bank`; NULL and nothing left behind on
 * failure */
static HwSteering *
steering_build (HwDev *dev, GPtrArray *groups, guint bank, GError **error)
{
  GArray *plan = groups_plan (groups, error);
  if (plan == NULL)
    return NULL;
  HwSteering *st = g_new0 (HwSteering, 1);
  st->rules = g_ptr_array_new ();
  st->matchers = g_array_new (FALSE, FALSE, sizeof (HwMatcher));
  st->actions = g_ptr_array_new ();
  st->objs = g_ptr_array_new ();
  HwDests *dests = g_new0 (HwDests, groups->len);
  for (guint i = 0; i < groups->len; i++)
    dests[i].actions = g_new0 (struct mlx5dv_dr_action *,
        ((HwGroup *) g_ptr_array_index (groups, i))->n_rqs + MLX5_HW_FLOW_DESTS_RSS);
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < plan->len; i++) {
    Mlx5HwFlowEntry e = g_array_index (plan, Mlx5HwFlowEntry, i);
    e.priority = (guint16) (e.priority + bank * MLX5_HW_BANK_PRIORITIES);
    ok = entry_install (dev, st, g_ptr_array_index (groups, e.group), &e, &dests[e.group], error);
  }
  for (guint i = 0; i < groups->len; i++)
    g_free (dests[i].actions);
  g_free (dests);
  g_array_unref (plan);
  if (!ok) {
    steering_free (st);
    return NULL;
  }
  return st;
}

/* replaces the installed steering by that of `groups`, the new rules in place before the
 * old ones go; with the lock held. On failure the old rules stay. */
static gboolean
steering_apply (HwDev *dev, GPtrArray *groups, GError **error)
{
  HwSteering *next = NULL;
  guint bank = dev->steering != NULL ? dev->bank ^ 1u : 0;

  if (groups->len > 0) {
    if (!dr_ensure (dev, error))
      return FALSE;
    next = steering_build (dev, groups, bank, error);
    if (next == NULL)
      return FALSE;
  }
  steering_free (dev->steering);
  dev->steering = next;
  dev->bank = bank;
  return TRUE;
}

static gboolean
hw_flows_set (gpointer priv, guint32 group, Mlx5Rq **rqs, guint n_rqs, const DqFlowRule *rules,
    guint n_rules, GError **error)
{
  HwDev *dev = priv;
  for (guint i = 0; i < n_rqs; i++) {
    if (rqs[i] == NULL || rqs[i]->priv == NULL) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_CONFIG,
          "%s: steering to RX queue %u, which was not created", dev->name, i);
      return FALSE;
    }
  }

  HwGroup *g = NULL;
  if (n_rqs > 0) {
    g = g_new0 (HwGroup, 1);
    g->group = group;
    g->rqs = g_memdup2 (rqs, n_rqs * sizeof *rqs);
    g->n_rqs = n_rqs;
    g->rules = n_rules ? g_memdup2 (rules, n_rules * sizeof *rules) : NULL;
    g->n_rules = n_rules;
  }

  g_mutex_lock (&dev->lock);
  /* the new list: the group replaced in place (it keeps its position), removed, or
   * appended */
  GPtrArray *next = g_ptr_array_new ();
  HwGroup *old = NULL;
  for (guint i = 0; i < dev->groups->len; i++) {
    HwGroup *o = g_ptr_array_index (dev->groups, i);
    if (o->group == group) {
      old = o;
      if (g)
        g_ptr_array_add (next, g);
    } else {
      g_ptr_array_add (next, o);
    }
  }
  if (old == NULL && g)
    g_ptr_array_add (next, g);
  if (old == NULL && g == NULL) {
    /* removing a group that has nothing installed */
    g_ptr_array_unref (next);
    g_mutex_unlock (&dev->lock);
    return TRUE;
  }

  /* check the whole plan before touching what is installed */
  GArray *plan = groups_plan (next, error);
  gboolean ok = plan != NULL;
  if (plan)
    g_array_unref (plan);
  if (ok)
    ok = steering_apply (dev, next, error);
  if (ok) {
    g_ptr_array_unref (dev->groups);
    dev->groups = next;
    group_free (old);
  } else {
    g_ptr_array_unref (next);
    group_free (g);
  }
  g_mutex_unlock (&dev->lock);
  return ok;
}

/* drops the groups that steer to `rq`, before its TIR goes */
static void
groups_drop_rq (HwDev *dev, Mlx5Rq *rq)
{
  g_mutex_lock (&dev->lock);
  GPtrArray *next = g_ptr_array_new ();
  GPtrArray *gone = g_ptr_array_new ();
  for (guint i = 0; i < dev->groups->len; i++) {
    HwGroup *g = g_ptr_array_index (dev->groups, i);
    gboolean uses = FALSE;
    for (guint q = 0; q < g->n_rqs && !uses; q++)
      uses = g->rqs[q] == rq;
    g_ptr_array_add (uses ? gone : next, g);
  }
  if (gone->len > 0) {
    GError *err = NULL;
    if (!steering_apply (dev, next, &err)) {
      /* the old rules point at the queue that goes away: none at all is what is left */
      g_warning ("%s: %s; no packets reach the RX queues", dev->name, err->message);
      g_error_free (err);
      steering_free (dev->steering);
      dev->steering = NULL;
    }
    for (guint i = 0; i < gone->len; i++)
      group_free (g_ptr_array_index (gone, i));
    g_ptr_array_unref (dev->groups);
    dev->groups = next;
  } else {
    g_ptr_array_unref (next);
  }
  g_ptr_array_unref (gone);
  g_mutex_unlock (&dev->lock);
}

/* ---------------------------------------------------------------------------------- */
/* clock */

static void
hw_clock_info (gpointer priv, Mlx5ClockInfo *info)
{
  HwDev *dev = priv;
  memset (info, 0, sizeof *info);
  if (dev->clock == MLX5_HW_CLOCK_NONE)
    return; /* all zero: every timestamp converts to 0 */
  if (dev->real_time) {
    /* CQE timestamps are seconds << 32 | ns (mlx5_hw_rt_ts_to_ns), not cycles: there is
     * nothing to scale. An identity conversion keeps mlx5dv_ts_to_ns() harmless. */
    info->mult = 1;
    info->mask = G_MAXUINT64;
    return;
  }
  struct mlx5dv_clock_info ci;
  if (mlx5dv_get_clock_info (dev->ctx, &ci) != 0)
    return;
  info->nsec = ci.nsec;
  info->last_cycles = ci.last_cycles;
  info->frac = ci.frac;
  info->mult = ci.mult;
  info->shift = ci.shift;
  info->mask = ci.mask;
}

static guint64
hw_clock_now (gpointer priv)
{
  HwDev *dev = priv;
  if (dev->real_time || dev->clock == MLX5_HW_CLOCK_NONE) {
    struct timespec ts;
    clockid_t id = dev->real_time ? PHC_CLOCKID (dev->phc_fd) : CLOCK_MONOTONIC;
    if (clock_gettime (id, &ts) != 0)
      return 0;
    return (guint64) ts.tv_sec * G_GUINT64_CONSTANT (1000000000) + (guint64) ts.tv_nsec;
  }
  /* the free-running counter now, converted the way CQE timestamps are */
  struct ibv_values_ex values;
  memset (&values, 0, sizeof values);
  values.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  struct mlx5dv_clock_info ci;
  if (ibv_query_rt_values_ex (dev->ctx, &values) != 0 ||
      !(values.comp_mask & IBV_VALUES_MASK_RAW_CLOCK) || mlx5dv_get_clock_info (dev->ctx, &ci) != 0)
    return 0;
  /* libmlx5 returns the raw cycle count in tv_nsec (tv_sec 0) */
  guint64 cycles = (guint64) values.raw_clock.tv_sec * G_GUINT64_CONSTANT (1000000000) +
      (guint64) values.raw_clock.tv_nsec;
  return mlx5dv_ts_to_ns (&ci, cycles);
}

const Mlx5PortOps mlx5_hw_port_ops = {
  .name = "mlx5",
  .open = hw_open,
  .close = hw_close,
  .mr_reg = hw_mr_reg,
  .mr_dereg = hw_mr_dereg,
  .mr_reg_dmabuf = hw_mr_reg_dmabuf,
  .cq_create = hw_cq_create,
  .cq_destroy = hw_cq_destroy,
  .rq_create = hw_rq_create,
  .rq_destroy = hw_rq_destroy,
  .rq_recover = hw_rq_recover,
  .sq_create = hw_sq_create,
  .sq_destroy = hw_sq_destroy,
  .sq_recover = hw_sq_recover,
  .flows_set = hw_flows_set,
  .rq_counters = hw_rq_counters,
  .clock_now = hw_clock_now,
  .clock_info = hw_clock_info,
};
