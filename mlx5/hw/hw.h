/* The mlx5 control path on a real ConnectX: Mlx5PortOps "mlx5" (DevX objects over rdma-core,
 * mlx5dv_dr steering, the NIC clock). See hw-port.c. */
#ifndef DAQIRI_MLX5_HW_H
#define DAQIRI_MLX5_HW_H

#include "../mlx5-port.h"

G_BEGIN_DECLS

extern const Mlx5PortOps mlx5_hw_port_ops;

/* Where device matching reads sysfs ("/sys" unless set; NULL restores it). For tests,
 * which build a fake tree; not thread-safe against a concurrent open. */
void mlx5_hw_set_sysfs_root (const char *root);

G_END_DECLS

#endif /* DAQIRI_MLX5_HW_H */
