/* Mlx5PortOps "mlx5": the control path on a real ConnectX.
 *
 * The host side (rx.c, tx.c) allocates every ring in its own memory; this file turns that
 * memory into device objects with DevX:
 *
 *   open      ibv device by name / netdev / PCI address, mlx5dv_open_device(DEVX),
 *             QUERY_HCA_CAP (general + Ethernet offloads), QUERY_NIC_VPORT_CONTEXT,
 *             PD (+ pdn), ALLOC_TRANSPORT_DOMAIN, a UAR for the CQs, EQ 0, the clock
 *   cq        umem(ring [+ doorbell record]) + CREATE_CQ
 *   rq        umem(ring [+ dbr]) + CREATE_RQ (striding, or cyclic for header-data split;
 *             RST, flush_in_error_en) +
 *             MODIFY_RQ RST->RDY (after an error CQE: ERR->RST->RDY, rq_recover) +
 *             CREATE_TIR (direct), the TIR being what steering rules point at
 *   sq        CREATE_TIS (once) + its own UAR + umem(ring [+ dbr]) + CREATE_SQ (RST) +
 *             MODIFY_SQ RST->RDY (after an error CQE: ERR->RST->RDY, sq_recover); the
 *             doorbell register is the UAR's
 *   flows     (hw-steer.c) mlx5dv_dr NIC RX domain, root table; every group's rules
 *             planned together (mlx5_hw_flow_plan: priorities within one bank, half the
 *             root table's 16, so that a new rule set goes in before the old one comes
 *             out), one rule per entry with a tag action and the RQ's TIR or an RSS TIR
 *             (UDP, TCP or other IPv4) over an RQT
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
#include <net/if.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "hw-private.h"
#include "hw-sysfs.h"
#include "../mlx5-dma.h"
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


/* ---------------------------------------------------------------------------------- */
/* issuing commands */

int
hw_error_code_for (int err)
{
  return err == EPERM || err == EACCES ? DQ_ERROR_PERMISSION : DQ_ERROR_DEVICE;
}

static void
set_cmd_error (GError **error, const HwDev *dev, const char *what, int err, const void *out)
{
  char *text = mlx5_cmd_failure_text (what, err, out);
  g_set_error (error, DQ_ERROR, hw_error_code_for (err), "%s: %s%s", dev->name, text,
      err == EPERM || err == EACCES
          ? " (DevX raw Ethernet queues need CAP_NET_RAW; run as root or grant it)"
          : "");
  g_free (text);
}

struct mlx5dv_devx_obj *
hw_obj_create (HwDev *dev, const char *what, const void *in, gsize inlen, void *out, gsize outlen,
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

void
hw_obj_destroy (struct mlx5dv_devx_obj **obj)
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
    g_set_error (error, DQ_ERROR, hw_error_code_for (err),
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

/* QUERY_HCA_CAP of one capability type (current values) into `out`, a query_hca_cap_out */
static gboolean
query_hca_cap (HwDev *dev, guint cap_type, const char *what, guint32 *out, GError **error)
{
  guint32 in[DEVX_ST_SZ_DW (query_hca_cap_in)];
  memset (in, 0, sizeof in);
  mlx5_cmd_build_query_hca_cap (in, cap_type);
  return general_cmd (dev, what, in, sizeof in, out, DEVX_ST_SZ_BYTES (query_hca_cap_out), error);
}

static gboolean
query_caps (HwDev *dev, GError **error)
{
  guint32 *out = g_malloc (DEVX_ST_SZ_BYTES (query_hca_cap_out));
  gboolean ok;

  ok = query_hca_cap (dev, MLX5_HCA_CAP_GENERAL, "QUERY_HCA_CAP (general)", out, error);
  if (ok)
    mlx5_hw_caps_parse_general (&dev->hw, out);
  if (ok && dev->hw.eth_net_offloads) {
    ok = query_hca_cap (
        dev, MLX5_HCA_CAP_ETHERNET_OFFLOADS, "QUERY_HCA_CAP (Ethernet offloads)", out, error);
    if (ok)
      mlx5_hw_caps_parse_eth (&dev->hw, out);
  }
  /* packet pacing is optional: a device that will not say has none */
  if (ok && dev->hw.qos && query_hca_cap (dev, MLX5_HCA_CAP_QOS, "QUERY_HCA_CAP (QoS)", out, NULL))
    mlx5_hw_caps_parse_qos (&dev->hw, out);
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
    g_set_error (error, DQ_ERROR, hw_error_code_for (open_errno),
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
    dev->td_obj =
        hw_obj_create (dev, "ALLOC_TRANSPORT_DOMAIN", in, sizeof in, out, sizeof out, error);
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
  dev->tx_inline_mode = mlx5_hw_tx_inline_mode (&dev->hw, dev->vport_ok);
  if (dev->tx_inline_mode == MLX5_INLINE_MODE_L2)
    dev->caps.tx_inline_bytes = MLX5_ETH_L2_INLINE_SIZE;
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


static void
hw_close (gpointer priv)
{
  HwDev *dev = priv;
  if (dev == NULL)
    return;
  hw_steering_free (dev->steering);
  for (guint i = 0; i < dev->groups->len; i++)
    hw_group_free (g_ptr_array_index (dev->groups, i));
  g_ptr_array_unref (dev->groups);
  if (dev->dr_table)
    mlx5dv_dr_table_destroy (dev->dr_table);
  if (dev->dr_domain)
    mlx5dv_dr_domain_destroy (dev->dr_domain);
  hw_obj_destroy (&dev->tis);
  hw_obj_destroy (&dev->td_obj);
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
    g_set_error (error, DQ_ERROR, hw_error_code_for (err),
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
    g_set_error (error, DQ_ERROR, hw_error_code_for (err),
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

static void
hw_cq_free (HwCq *h)
{
  hw_obj_destroy (&h->obj);
  umems_free (&h->mem);
  g_free (h);
}

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
  h->obj = hw_obj_create (dev, what, in, sizeof in, out, sizeof out, error);
  g_free (what);
  if (h->obj == NULL) {
    hw_cq_free (h);
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
  hw_cq_free (h);
  cq->priv = NULL;
}

/* ---------------------------------------------------------------------------------- */
/* RQ */


static void
hw_rq_free (HwRq *h)
{
  hw_obj_destroy (&h->tir);
  hw_obj_destroy (&h->obj);
  hw_obj_destroy (&h->counter);
  umems_free (&h->mem);
  g_free (h);
}

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
    h->counter = hw_obj_create (dev, "ALLOC_Q_COUNTER", cin, sizeof cin, cout, sizeof cout, &cerr);
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
  h->obj = hw_obj_create (dev, what, in, sizeof in, out, sizeof out, error);
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
  h->tir = hw_obj_create (dev, "CREATE_TIR (direct)", tin, sizeof tin, tout, sizeof tout, error);
  if (h->tir == NULL)
    goto fail;
  h->tirn = DEVX_GET (create_tir_out, tout, tirn);
  rq->priv = h;
  return TRUE;

fail:
  hw_rq_free (h);
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
  hw_groups_drop_rq (dev, rq);
  hw_rq_free (h);
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
    dev->tis = hw_obj_create (dev, "CREATE_TIS", in, sizeof in, out, sizeof out, error);
    if (dev->tis)
      dev->tisn = DEVX_GET (create_tis_out, out, tisn);
    ok = dev->tis != NULL;
  }
  *tisn = dev->tisn;
  g_mutex_unlock (&dev->lock);
  return ok;
}

/* The Ethernet header inline (mode L2, caps.tx_inline_bytes) is what daqiri's send WQEs
 * carry; a port that wants the IP or TCP/UDP headers inline too is refused. */
static gboolean
check_tx_inline (HwDev *dev, GError **error)
{
  static const char *const names[] = { "none", "L2", "IP", "TCP/UDP" };
  guint need = dev->tx_inline_mode;
  if (need <= MLX5_INLINE_MODE_L2)
    return TRUE;
  g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
      "%s: this port requires packet headers inline in send WQEs up to the %s header "
      "(minimum inline mode %s); daqiri's send WQEs carry the Ethernet header inline (L2) "
      "only",
      dev->name, names[need & 3], names[need & 3]);
  return FALSE;
}

static void
hw_sq_free (HwSq *h)
{
  hw_obj_destroy (&h->obj);
  if (h->pp != NULL)
    mlx5dv_pp_free (h->pp);
  umems_free (&h->mem);
  mlx5dv_devx_free_uar (h->uar);
  g_free (h);
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
      dev->page_shift, mlx5_hw_ts_format (dev->real_time), mpw, dev->tx_inline_mode);
  char *what = g_strdup_printf (
      "CREATE_SQ (2^%u WQE basic blocks, CQ 0x%x, TIS 0x%x)", sq->log_wqebbs, sq->cq->cqn, tisn);
  h->obj = hw_obj_create (dev, what, in, sizeof in, out, sizeof out, error);
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
  hw_sq_free (h); /* no pacing rate yet */
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

/* Packet pacing: the kernel allocates the rate's index (mlx5dv_pp_alloc, as DPDK's mlx5
 * driver does), MODIFY_SQ RDY -> RDY points the SQ at it; the earlier rate is freed after. */
static gboolean
hw_sq_set_rate (gpointer priv, Mlx5Sq *sq, guint64 rate_bps, guint typical_size, GError **error)
{
  HwDev *dev = priv;
  HwSq *h = sq->priv;
  struct mlx5dv_pp *pp = NULL;
  if (rate_bps != 0) {
    guint32 ctx[DEVX_ST_SZ_DW (set_pp_rate_limit_context)] = { 0 };
    mlx5_cmd_build_pp_context (
        ctx, rate_bps, dev->hw.packet_pacing_typical_size ? typical_size : 0);
    pp = mlx5dv_pp_alloc (dev->ctx, sizeof ctx, ctx, 0);
    if (pp == NULL) {
      g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
          "mlx5:%s: rate %" G_GUINT64_FORMAT " bit/s: mlx5dv_pp_alloc failed: %s (the device's "
          "table of pacing rates may be full)",
          dev->name, rate_bps, g_strerror (errno));
      return FALSE;
    }
  }
  guint32 mod[DEVX_ST_SZ_DW (modify_sq_in)] = { 0 };
  mlx5_cmd_build_modify_sq_rate (mod, sq->sqn, pp != NULL ? pp->index : 0);
  if (!obj_modify (dev, h->obj, "MODIFY_SQ (packet pacing rate)", mod, sizeof mod, error)) {
    if (pp != NULL)
      mlx5dv_pp_free (pp);
    return FALSE;
  }
  if (h->pp != NULL)
    mlx5dv_pp_free (h->pp);
  h->pp = pp;
  return TRUE;
}

static void
hw_sq_destroy (gpointer priv, Mlx5Sq *sq)
{
  HwSq *h = sq->priv;
  if (h == NULL)
    return;
  hw_sq_free (h);
  sq->priv = NULL;
  sq->bf_reg = NULL;
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

/* The netdev's ifindex: the kernel's mlx5 driver programs the NIC's multicast filter for
 * the groups joined on it */
static int
hw_netdev_ifindex (gpointer priv)
{
  HwDev *dev = priv;
  return dev->netdev != NULL ? (int) if_nametoindex (dev->netdev) : 0;
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
  .sq_set_rate = hw_sq_set_rate,
  .flows_set = hw_flows_set,
  .netdev_ifindex = hw_netdev_ifindex,
  .rq_counters = hw_rq_counters,
  .clock_now = hw_clock_now,
  .clock_info = hw_clock_info,
};
