/* Device matching over sysfs: see hw-sysfs.h. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "daqiri-engine.h"
#include "hw-sysfs.h"

static gboolean
hex_run (const char *s, gsize len, guint min, guint max, guint32 *value)
{
  if (len < min || len > max)
    return FALSE;
  guint32 v = 0;
  for (gsize i = 0; i < len; i++) {
    if (!g_ascii_isxdigit (s[i]))
      return FALSE;
    v = v << 4 | (guint32) g_ascii_xdigit_value (s[i]);
  }
  *value = v;
  return TRUE;
}

char *
mlx5_hw_pci_normalize (const char *text)
{
  if (text == NULL)
    return NULL;
  /* [domain:]bus:device.function */
  const char *dot = strrchr (text, '.');
  const char *c2 = strrchr (text, ':');
  if (dot == NULL || c2 == NULL || dot < c2)
    return NULL;
  const char *c1 = NULL;
  for (const char *p = text; p < c2; p++)
    if (*p == ':')
      c1 = p;
  guint32 domain = 0, bus, dev, fn;
  const char *bus_start = c1 ? c1 + 1 : text;
  if (c1 && !hex_run (text, (gsize) (c1 - text), 1, 8, &domain))
    return NULL;
  if (!hex_run (bus_start, (gsize) (c2 - bus_start), 1, 2, &bus) ||
      !hex_run (c2 + 1, (gsize) (dot - c2 - 1), 1, 2, &dev) ||
      !hex_run (dot + 1, strlen (dot + 1), 1, 1, &fn))
    return NULL;
  if (dev > 0x1f || fn > 7)
    return NULL;
  return g_strdup_printf ("%04x:%02x:%02x.%x", domain, bus, dev, fn);
}

char *
mlx5_hw_sys_pci_of (const char *root, const char *ibdev)
{
  char *link = g_build_filename (root, "class", "infiniband", ibdev, "device", NULL);
  char *real = realpath (link, NULL);
  g_free (link);
  if (real == NULL)
    return NULL;
  char *base = g_path_get_basename (real);
  free (real);
  char *pci = mlx5_hw_pci_normalize (base);
  g_free (base);
  return pci;
}

static gint
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

static char **
list_dir (const char *dir)
{
  GPtrArray *names = g_ptr_array_new ();
  GDir *d = g_dir_open (dir, 0, NULL);
  if (d) {
    const char *name;
    while ((name = g_dir_read_name (d)) != NULL)
      g_ptr_array_add (names, g_strdup (name));
    g_dir_close (d);
  }
  g_ptr_array_sort (names, compare_strings);
  g_ptr_array_add (names, NULL);
  return (char **) g_ptr_array_free (names, FALSE);
}

char **
mlx5_hw_sys_netdevs_of (const char *root, const char *ibdev)
{
  char *dir = g_build_filename (root, "class", "infiniband", ibdev, "device", "net", NULL);
  char **names = list_dir (dir);
  g_free (dir);
  return names;
}

char *
mlx5_hw_sys_phc_of (const char *root, const char *ibdev)
{
  char *dir = g_build_filename (root, "class", "infiniband", ibdev, "device", "ptp", NULL);
  char **names = list_dir (dir);
  g_free (dir);
  char *phc = NULL;
  for (char **n = names; *n && phc == NULL; n++)
    if (g_str_has_prefix (*n, "ptp"))
      phc = g_strconcat ("/dev/", *n, NULL);
  g_strfreev (names);
  return phc;
}

static char *
read_attr (const char *root, const char *netdev, const char *attr)
{
  char *path = g_build_filename (root, "class", "net", netdev, attr, NULL);
  char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    text = NULL;
  g_free (path);
  if (text)
    g_strstrip (text);
  return text;
}

gboolean
mlx5_hw_sys_netdev_mac (const char *root, const char *netdev, guint8 mac[6])
{
  char *text = read_attr (root, netdev, "address");
  if (text == NULL)
    return FALSE;
  gboolean ok = strlen (text) == 17;
  for (guint i = 0; ok && i < 6; i++) {
    guint32 v = 0;
    gsize at = (gsize) 3 * i;
    ok = hex_run (text + at, 2, 2, 2, &v) && (i == 5 || text[at + 2] == ':');
    mac[i] = (guint8) v;
  }
  g_free (text);
  return ok;
}

gboolean
mlx5_hw_sys_netdev_mtu (const char *root, const char *netdev, guint *mtu)
{
  char *text = read_attr (root, netdev, "mtu");
  if (text == NULL)
    return FALSE;
  guint64 v;
  gboolean ok = g_ascii_string_to_unsigned (text, 10, 68, G_MAXUINT16, &v, NULL);
  g_free (text);
  if (ok)
    *mtu = (guint) v;
  return ok;
}

char *
mlx5_hw_describe_devices (const char *root, const char *const *names, guint n)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < n; i++) {
    char *pci = mlx5_hw_sys_pci_of (root, names[i]);
    char **netdevs = mlx5_hw_sys_netdevs_of (root, names[i]);
    if (i > 0)
      g_string_append (s, ", ");
    g_string_append (s, names[i]);
    if (pci || netdevs[0]) {
      g_string_append (s, " (");
      if (pci)
        g_string_append (s, pci);
      for (char **nd = netdevs; *nd; nd++)
        g_string_append_printf (s, "%s%s", nd == netdevs && !pci ? "" : ", ", *nd);
      g_string_append_c (s, ')');
    }
    g_free (pci);
    g_strfreev (netdevs);
  }
  return g_string_free (s, FALSE);
}

static int
index_of (const char *const *names, guint n, const char *name)
{
  for (guint i = 0; i < n; i++)
    if (g_strcmp0 (names[i], name) == 0)
      return (int) i;
  return -1;
}

int
mlx5_hw_resolve (const char *root, const char *const *names, guint n, const char *spec,
    const char *none_detail, GError **error)
{
  int found = -1;
  if (spec && *spec) {
    /* the RDMA device name */
    found = index_of (names, n, spec);

    /* a PCI address */
    char *pci = found < 0 ? mlx5_hw_pci_normalize (spec) : NULL;
    for (guint i = 0; pci && found < 0 && i < n; i++) {
      char *p = mlx5_hw_sys_pci_of (root, names[i]);
      if (g_strcmp0 (p, pci) == 0)
        found = (int) i;
      g_free (p);
    }
    g_free (pci);

    /* a network interface of the device */
    for (guint i = 0; found < 0 && i < n; i++) {
      char **netdevs = mlx5_hw_sys_netdevs_of (root, names[i]);
      if (g_strv_contains ((const char *const *) netdevs, spec))
        found = (int) i;
      g_strfreev (netdevs);
    }
    if (found < 0 && strchr (spec, '/') == NULL && strcmp (spec, ".") != 0 &&
        strcmp (spec, "..") != 0) {
      char *dir = g_build_filename (root, "class", "net", spec, "device", "infiniband", NULL);
      char **ibdevs = list_dir (dir);
      g_free (dir);
      for (char **ib = ibdevs; found < 0 && *ib; ib++)
        found = index_of (names, n, *ib);
      g_strfreev (ibdevs);
    }
  }
  if (found >= 0)
    return found;

  /* the user's text, printable ASCII only */
  char *shown = g_strescape (spec ? spec : "", NULL);
  if (n == 0) {
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE, "no mlx5 device matches '%s'; found none: %s",
        shown, none_detail ? none_detail : "this machine has no RDMA devices");
  } else {
    char *list = mlx5_hw_describe_devices (root, names, n);
    g_set_error (error, DQ_ERROR, DQ_ERROR_DEVICE,
        "no mlx5 device matches '%s'; found: %s (name a device, one of its network "
        "interfaces or its PCI address)",
        shown, list);
    g_free (list);
  }
  g_free (shown);
  return -1;
}
