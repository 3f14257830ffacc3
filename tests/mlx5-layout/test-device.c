/* Finding a ConnectX by name, network interface or PCI address (mlx5/hw/hw-sysfs.c) on a
 * fake sysfs tree built the way the kernel lays it out, and opening "mlx5_0" through the
 * hardware port ops on a machine without RDMA devices: the user gets told what exists. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <infiniband/verbs.h>

#include "daqiri-engine.h"
#include "hw.h"
#include "hw-sysfs.h"

static char *root;

static char *
at (const char *rel)
{
  return g_build_filename (root, rel, NULL);
}

static void
make_dir (const char *rel)
{
  char *p = at (rel);
  g_assert_cmpint (g_mkdir_with_parents (p, 0755), ==, 0);
  g_free (p);
}

static void
make_link (const char *target, const char *rel)
{
  char *p = at (rel);
  char *dir = g_path_get_dirname (p);
  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_assert_cmpint (symlink (target, p), ==, 0);
  g_free (dir);
  g_free (p);
}

static void
make_file (const char *rel, const char *text)
{
  char *p = at (rel);
  g_assert_true (g_file_set_contents (p, text, -1, NULL));
  g_free (p);
}

/* a PCI function with an RDMA device and (optionally) a network interface, linked from
 * class/infiniband and class/net as sysfs does */
static void
make_function (const char *pci, const char *ibdev, const char *netdev, const char *mac)
{
  char *dev = g_strdup_printf ("devices/pci0000:00/%s", pci);
  char *ib = g_strdup_printf ("%s/infiniband/%s", dev, ibdev);
  char *ib_device = g_strdup_printf ("%s/device", ib);
  char *up = g_strdup_printf ("../../../%s", pci);
  make_dir (ib);
  make_link (up, ib_device);
  char *cls = g_strdup_printf ("class/infiniband/%s", ibdev);
  char *cls_target = g_strdup_printf ("../../%s", ib);
  make_link (cls_target, cls);
  if (netdev) {
    char *nd = g_strdup_printf ("%s/net/%s", dev, netdev);
    make_dir (nd);
    char *nd_device = g_strdup_printf ("%s/device", nd);
    make_link (up, nd_device);
    char *addr = g_strdup_printf ("%s/address", nd);
    char *mac_line = g_strdup_printf ("%s\n", mac);
    make_file (addr, mac_line);
    char *mtu = g_strdup_printf ("%s/mtu", nd);
    make_file (mtu, "9000\n");
    char *ncls = g_strdup_printf ("class/net/%s", netdev);
    char *ncls_target = g_strdup_printf ("../../%s", nd);
    make_link (ncls_target, ncls);
    g_free (nd);
    g_free (nd_device);
    g_free (addr);
    g_free (mac_line);
    g_free (mtu);
    g_free (ncls);
    g_free (ncls_target);
  }
  g_free (dev);
  g_free (ib);
  g_free (ib_device);
  g_free (up);
  g_free (cls);
  g_free (cls_target);
}

static void
build_tree (void)
{
  GError *err = NULL;
  root = g_dir_make_tmp ("daqiri-sysfs-XXXXXX", &err);
  g_assert_no_error (err);
  make_function ("0000:08:00.0", "mlx5_0", "enp8s0f0np0", "0c:42:a1:b2:c3:d4");
  make_function ("0000:08:00.1", "mlx5_1", "enp8s0f1np1", "0c:42:a1:b2:c3:d5");
  make_function ("0000:0a:00.0", "mlx5_2", NULL, NULL);
  make_dir ("devices/pci0000:00/0000:08:00.0/ptp/ptp3");
  /* a network interface that only class/net relates to the device (a representor, or a
   * netdev another namespace lists) */
  make_dir ("class/net/rep0");
  make_link ("../../../devices/pci0000:00/0000:08:00.1", "class/net/rep0/device");
  make_file ("class/net/bad0", "");
}

static int
rm_tree (const char *path)
{
  GDir *d = g_dir_open (path, 0, NULL);
  if (d) {
    const char *name;
    while ((name = g_dir_read_name (d)) != NULL) {
      char *p = g_build_filename (path, name, NULL);
      if (g_file_test (p, G_FILE_TEST_IS_SYMLINK) || !g_file_test (p, G_FILE_TEST_IS_DIR))
        g_unlink (p);
      else
        rm_tree (p);
      g_free (p);
    }
    g_dir_close (d);
  }
  return g_rmdir (path);
}

/* ------------------------------------------------------------------------------------ */

static void
test_pci_normalize (void)
{
  static const char *const ok[][2] = {
    { "0000:08:00.0", "0000:08:00.0" },
    { "08:00.0", "0000:08:00.0" },
    { "0000:0A:1f.7", "0000:0a:1f.7" },
    { "8:0.1", "0000:08:00.1" },
    { "10000:00:01.0", "10000:00:01.0" },
    { "1:af:00.0", "0001:af:00.0" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (ok); i++) {
    char *n = mlx5_hw_pci_normalize (ok[i][0]);
    g_assert_cmpstr (n, ==, ok[i][1]);
    g_free (n);
  }
  static const char *const bad[] = { "mlx5_0", "enp8s0f0np0", "08:00", "08:00.8", "08:20.0",
    "0000:08:00.0x", ":08:00.0", "08:00.", "zz:00.0", "123:00.0", "000000000:08:00.0", "08.00:0",
    "", "0000:08:00.00" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    char *n = mlx5_hw_pci_normalize (bad[i]);
    if (n)
      g_error ("'%s' was taken for a PCI address: %s", bad[i], n);
  }
  g_assert_null (mlx5_hw_pci_normalize (NULL));
}

static void
test_sysfs_reads (void)
{
  char *pci = mlx5_hw_sys_pci_of (root, "mlx5_0");
  g_assert_cmpstr (pci, ==, "0000:08:00.0");
  g_free (pci);
  pci = mlx5_hw_sys_pci_of (root, "mlx5_2");
  g_assert_cmpstr (pci, ==, "0000:0a:00.0");
  g_free (pci);
  g_assert_null (mlx5_hw_sys_pci_of (root, "mlx5_9"));

  char **nd = mlx5_hw_sys_netdevs_of (root, "mlx5_1");
  g_assert_cmpuint (g_strv_length (nd), ==, 1);
  g_assert_cmpstr (nd[0], ==, "enp8s0f1np1");
  g_strfreev (nd);
  nd = mlx5_hw_sys_netdevs_of (root, "mlx5_2");
  g_assert_cmpuint (g_strv_length (nd), ==, 0);
  g_strfreev (nd);

  char *phc = mlx5_hw_sys_phc_of (root, "mlx5_0");
  g_assert_cmpstr (phc, ==, "/dev/ptp3");
  g_free (phc);
  g_assert_null (mlx5_hw_sys_phc_of (root, "mlx5_1"));

  guint8 mac[6];
  const guint8 want[6] = { 0x0c, 0x42, 0xa1, 0xb2, 0xc3, 0xd5 };
  g_assert_true (mlx5_hw_sys_netdev_mac (root, "enp8s0f1np1", mac));
  g_assert_cmpmem (mac, 6, want, 6);
  g_assert_false (mlx5_hw_sys_netdev_mac (root, "bad0", mac));
  g_assert_false (mlx5_hw_sys_netdev_mac (root, "nothere", mac));
  guint mtu = 0;
  g_assert_true (mlx5_hw_sys_netdev_mtu (root, "enp8s0f0np0", &mtu));
  g_assert_cmpuint (mtu, ==, 9000);
  g_assert_false (mlx5_hw_sys_netdev_mtu (root, "nothere", &mtu));

  const char *const names[] = { "mlx5_0", "mlx5_1", "mlx5_2" };
  char *d = mlx5_hw_describe_devices (root, names, 3);
  g_assert_cmpstr (d, ==,
      "mlx5_0 (0000:08:00.0, enp8s0f0np0), mlx5_1 (0000:08:00.1, "
      "enp8s0f1np1), mlx5_2 (0000:0a:00.0)");
  g_free (d);
}

static void
test_resolve (void)
{
  const char *const names[] = { "mlx5_0", "mlx5_1", "mlx5_2" };
  static const struct {
    const char *spec;
    int index;
  } cases[] = {
    { "mlx5_0", 0 },
    { "mlx5_1", 1 },
    { "mlx5_2", 2 },
    { "enp8s0f0np0", 0 },
    { "enp8s0f1np1", 1 },
    { "rep0", 1 },
    { "0000:08:00.0", 0 },
    { "08:00.1", 1 },
    { "0000:0A:00.0", 2 },
    { "a:0.0", 2 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    GError *err = NULL;
    int idx = mlx5_hw_resolve (root, names, 3, cases[i].spec, NULL, &err);
    g_assert_no_error (err);
    if (idx != cases[i].index)
      g_error ("'%s' resolved to %d, not %d", cases[i].spec, idx, cases[i].index);
  }

  GError *err = NULL;
  g_assert_cmpint (mlx5_hw_resolve (root, names, 2, "mlx5_3", NULL, &err), ==, -1);
  g_assert_error (err, DQ_ERROR, DQ_ERROR_DEVICE);
  g_assert_cmpstr (err->message, ==,
      "no mlx5 device matches 'mlx5_3'; found: mlx5_0 "
      "(0000:08:00.0, enp8s0f0np0), mlx5_1 (0000:08:00.1, enp8s0f1np1) (name a device, one "
      "of its network interfaces or its PCI address)");
  g_clear_error (&err);

  /* only what the verbs library lists counts: mlx5_2 is in sysfs but not offered */
  g_assert_cmpint (mlx5_hw_resolve (root, names, 2, "0000:0a:00.0", NULL, &err), ==, -1);
  g_assert_true (
      g_str_has_prefix (err->message, "no mlx5 device matches '0000:0a:00.0'; found: mlx5_0"));
  g_clear_error (&err);

  g_assert_cmpint (mlx5_hw_resolve (root, names, 0, "mlx5_0", NULL, &err), ==, -1);
  g_assert_error (err, DQ_ERROR, DQ_ERROR_DEVICE);
  g_assert_cmpstr (err->message, ==,
      "no mlx5 device matches 'mlx5_0'; found none: this "
      "machine has no RDMA devices");
  g_clear_error (&err);

  g_assert_cmpint (mlx5_hw_resolve (root, NULL, 0, "eth0",
                       "no RDMA device here is a "
                       "ConnectX (mlx5); others: rxe0",
                       &err),
      ==, -1);
  g_assert_cmpstr (err->message, ==,
      "no mlx5 device matches 'eth0'; found none: no RDMA "
      "device here is a ConnectX (mlx5); others: rxe0");
  g_clear_error (&err);

  /* user text is shown escaped; path-like names look nowhere outside the tree */
  g_assert_cmpint (mlx5_hw_resolve (root, names, 1, "bad\nname", NULL, &err), ==, -1);
  g_assert_true (g_str_has_prefix (err->message, "no mlx5 device matches 'bad\\nname'"));
  g_clear_error (&err);
  g_assert_cmpint (mlx5_hw_resolve (root, names, 3, "../../devices", NULL, &err), ==, -1);
  g_clear_error (&err);
  g_assert_cmpint (mlx5_hw_resolve (root, names, 3, "", NULL, &err), ==, -1);
  g_assert_true (g_str_has_prefix (err->message, "no mlx5 device matches ''; found: "));
  g_clear_error (&err);
}

/* ------------------------------------------------------------------------------------ */
/* the port ops on this machine */

static gboolean
machine_has_rdma (int *list_errno)
{
  int n = 0;
  errno = 0;
  struct ibv_device **list = ibv_get_device_list (&n);
  *list_errno = errno;
  if (list)
    ibv_free_device_list (list);
  return list != NULL && n > 0;
}

static void
check_open_fails (const char *spec, const char *sysfs_root)
{
  int list_errno;
  if (machine_has_rdma (&list_errno)) {
    g_test_skip ("this machine has RDMA devices");
    return;
  }
  mlx5_hw_set_sysfs_root (sysfs_root);
  DqPortInfo info;
  Mlx5Caps caps;
  memset (&info, 0, sizeof info);
  memset (&caps, 0, sizeof caps);
  GError *err = NULL;
  gpointer dev = mlx5_hw_port_ops.open (spec, &info, &caps, &err);
  g_assert_null (dev);
  g_assert_error (err, DQ_ERROR, DQ_ERROR_DEVICE);
  char *want;
  int n = 0;
  errno = 0;
  struct ibv_device **list = ibv_get_device_list (&n);
  int e = errno;
  if (list) {
    /* an RDMA stack with no device in it */
    ibv_free_device_list (list);
    want = g_strdup_printf ("no mlx5 device matches '%s'; found none: this machine has no "
                            "RDMA devices",
        spec);
  } else {
    want = g_strdup_printf ("no mlx5 device matches '%s'; found none: this machine has no "
                            "RDMA devices (ibv_get_device_list: %s)",
        spec, g_strerror (e ? e : ENODEV));
  }
  g_test_message ("%s", err->message);
  g_assert_cmpstr (err->message, ==, want);
  g_free (want);
  g_error_free (err);
  mlx5_hw_set_sysfs_root (NULL);
}

static void
test_open_no_devices (void)
{
  check_open_fails ("mlx5_0", NULL);
  /* the fake tree lists devices, but the verbs library has none to open */
  check_open_fails ("mlx5_0", root);
  check_open_fails ("08:00.0", root);
  check_open_fails ("enp8s0f0np0", NULL);
  g_assert_cmpstr (mlx5_hw_port_ops.name, ==, "mlx5");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  build_tree ();
  g_test_add_func ("/mlx5-layout/device/pci-normalize", test_pci_normalize);
  g_test_add_func ("/mlx5-layout/device/sysfs-reads", test_sysfs_reads);
  g_test_add_func ("/mlx5-layout/device/resolve", test_resolve);
  g_test_add_func ("/mlx5-layout/device/open-no-devices", test_open_no_devices);
  int rc = g_test_run ();
  g_assert_cmpint (rm_tree (root), ==, 0);
  g_free (root);
  return rc;
}
