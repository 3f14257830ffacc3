/* Finding a ConnectX by the name a user gives: its RDMA device name (mlx5_0), one of its
 * network interfaces (enp8s0f0np0), or its PCI address (0000:08:00.0 or 08:00.0).
 *
 * Everything is read below a sysfs root passed in ("/sys" on a real system), so tests
 * can build a fake tree:
 *   ROOT/class/infiniband/<ibdev>/device          -> the PCI function (its name is the
 *                                                    PCI address)
 *   ROOT/class/infiniband/<ibdev>/device/net/<if>  the function's network interfaces
 *   ROOT/class/infiniband/<ibdev>/device/ptp/ptpN  its PTP hardware clock, if any
 *   ROOT/class/net/<if>/device/infiniband/<ibdev>  the same relation seen from the netdev
 *   ROOT/class/net/<if>/address, /mtu
 */
#ifndef DAQIRI_MLX5_HW_SYSFS_H
#define DAQIRI_MLX5_HW_SYSFS_H

#include <glib.h>

G_BEGIN_DECLS

/* Normalises a PCI address: "08:00.0" -> "0000:08:00.0", hex digits in lower case.
 * Returns NULL when `text` is not a PCI address (domain of 4..8 hex digits, optional;
 * bus 2 hex digits; device 2 hex digits <= 1f; function 0..7). */
char *mlx5_hw_pci_normalize (const char *text);

/* PCI address of an RDMA device (from its `device` link), or NULL */
char *mlx5_hw_sys_pci_of (const char *root, const char *ibdev);
/* its network interfaces, sorted, NULL-terminated (g_strfreev); never NULL */
char **mlx5_hw_sys_netdevs_of (const char *root, const char *ibdev);
/* its PTP hardware clock device ("/dev/ptp2"), or NULL */
char *mlx5_hw_sys_phc_of (const char *root, const char *ibdev);
/* the MAC address and MTU of a network interface */
gboolean mlx5_hw_sys_netdev_mac (const char *root, const char *netdev, guint8 mac[6]);
gboolean mlx5_hw_sys_netdev_mtu (const char *root, const char *netdev, guint *mtu);

/* "mlx5_0 (0000:08:00.0, enp8s0f0np0), mlx5_1 (0000:08:00.1, enp8s0f1np1)" */
char *mlx5_hw_describe_devices (const char *root, const char *const *names, guint n);

/* Which of the RDMA devices `names[0..n)` (those the verbs library can open) `spec`
 * names: by device name, by one of its network interfaces, or by PCI address. Returns
 * the index, or -1 with DQ_ERROR_DEVICE: "no mlx5 device matches 'mlx5_3'; found: mlx5_0
 * (0000:08:00.0, enp8s0f0np0), ..." or, with n == 0, "...; found none: this machine has
 * no RDMA devices" followed by `none_detail` when given (why the list is empty). */
int mlx5_hw_resolve (const char *root, const char *const *names, guint n, const char *spec,
    const char *none_detail, GError **error);

G_END_DECLS

#endif /* DAQIRI_MLX5_HW_SYSFS_H */
