/* Helpers shared by the daqiri elements. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdaqirielement.h"

#include "daqiri-reorder.h"

#include <arpa/inet.h>
#include <string.h>

void
gst_daqiri_post_engine_error (GstElement *element, const char *what, GError *error,
    const char *file, const char *function, int line)
{
  gint code;

  switch (error->domain == DQ_ERROR ? error->code : -1) {
    case DQ_ERROR_DEVICE: code = GST_RESOURCE_ERROR_NOT_FOUND; break;
    case DQ_ERROR_PERMISSION: code = GST_RESOURCE_ERROR_NOT_AUTHORIZED; break;
    case DQ_ERROR_CONFIG:
    case DQ_ERROR_FLOW: code = GST_RESOURCE_ERROR_SETTINGS; break;
    case DQ_ERROR_BUSY: code = GST_RESOURCE_ERROR_BUSY; break;
    default: code = GST_RESOURCE_ERROR_FAILED; break;
  }
  gst_element_message_full (element, GST_MESSAGE_ERROR, GST_RESOURCE_ERROR, code,
      g_strdup_printf ("%s: %s", what, error->message), NULL, file, function, line);
}

DqPort *
gst_daqiri_open_port (GstElement *element, const char *device)
{
  if (device == NULL || *device == '\0') {
    char *engines = g_strjoinv (":IFACE, ", (char **) dq_engine_names ());
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS, ("property 'device' is not set"),
        ("set device to ENGINE:NAME, with these engines built in: %s:IFACE "
         "(for example device=afpacket:eth0)",
            engines));
    g_free (engines);
    return NULL;
  }
  GError *error = NULL;
  DqPort *port = dq_port_open (device, &error);
  if (port == NULL) {
    GST_DAQIRI_POST_ENGINE_ERROR (element, "property 'device'", error);
    g_error_free (error);
  }
  return port;
}

/* "aa:bb:cc:dd:ee:ff": six bytes of two hex digits each, separated by ':' */
static gboolean
parse_mac (const gchar *text, guint8 mac[6])
{
  if (text == NULL || strlen (text) != 17)
    return FALSE;
  for (guint i = 0; i < 6; i++) {
    const gchar *p = text + (gsize) 3 * i;
    gint hi = g_ascii_xdigit_value (p[0]);
    gint lo = g_ascii_xdigit_value (p[1]);
    if (hi < 0 || lo < 0 || (i < 5 && p[2] != ':'))
      return FALSE;
    mac[i] = (guint8) (hi << 4 | lo);
  }
  return TRUE;
}

/* Posts the ERROR of an address property whose value does not parse: it names the
 * property, the value, what the value is not (`what`) and the form allowed (`expected`). */
static void
refuse_address (GstElement *element, const char *property, const char *text, const char *what,
    const char *expected)
{
  GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
      ("property '%s': \"%s\" is not %s; expected %s", property, GST_STR_NULL (text), what,
          expected),
      (NULL));
}

/* A property holding a MAC address ("aa:bb:cc:dd:ee:ff") or an IPv4 address (dotted
 * decimal, stored in host byte order), or an ERROR naming the property, the value and the form
 * allowed. */
static gboolean
gst_daqiri_take_mac (GstElement *element, const char *property, const char *text, guint8 mac[6])
{
  if (parse_mac (text, mac))
    return TRUE;
  refuse_address (element, property, text, "a MAC address",
      "six two-digit hex bytes separated by ':', like 02:00:00:00:00:01");
  return FALSE;
}

static gboolean
gst_daqiri_take_ipv4 (GstElement *element, const char *property, const char *text, guint32 *addr)
{
  struct in_addr in;

  if (text != NULL && inet_pton (AF_INET, text, &in) == 1) {
    *addr = g_ntohl (in.s_addr);
    return TRUE;
  }
  refuse_address (element, property, text, "an IPv4 address",
      "four decimal numbers 0-255 separated by '.', like 10.0.0.1");
  return FALSE;
}

GType
gst_daqiri_memory_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = { { GST_DAQIRI_MEMORY_SYSTEM, "System memory", "system" },
    { GST_DAQIRI_MEMORY_CUDA, "GPU-accessible memory (caps feature memory:DaqiriCUDA)", "cuda" },
    { 0, NULL, NULL } };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstDaqiriMemory", values));
  return type;
}

GstAllocator *
gst_daqiri_allocator_new_kept (GType type)
{
  GstAllocator *allocator = g_object_new (type, NULL);

  gst_object_ref_sink (allocator);
  GST_OBJECT_FLAG_SET (allocator, GST_OBJECT_FLAG_MAY_BE_LEAKED);
  return allocator;
}

gboolean
gst_daqiri_cuda_usable (GstElement *element, const char *property)
{
#ifdef DQ_HAVE_CUDA
  char why[256];
  if (dq_cuda_available (why, sizeof why))
    return TRUE;
  GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
      ("property '%s' is cuda, but no GPU can be used: %s (allowed: %s=system)", property, why,
          property),
      (NULL));
#else
  GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
      ("property '%s' is cuda, but this daqiri was built without CUDA (no nvcc when it was "
       "built; meson feature cuda); allowed: %s=system",
          property, property),
      (NULL));
#endif
  return FALSE;
}

/* ---- the packet fields of daqirireorder and daqiripay ---- */

static guint32 *
field_ptr (DqReorderConfig *cfg, guint field)
{
  switch (field) {
    case 0: return &cfg->seq_bit_offset;
    case 1: return &cfg->seq_bit_width;
    case 2: return &cfg->batch_bit_offset;
    case 3: return &cfg->batch_bit_width;
    case 4: return &cfg->packets_per_batch;
    case 5: return &cfg->payload_offset;
    default: return &cfg->payload_size;
  }
}

void
gst_daqiri_install_field_properties (
    GObjectClass *klass, guint first_id, const DqReorderConfig *defaults, const char *const *notes)
{
  static const struct {
    const char *name, *nick, *blurb;
    guint min, max;
  } fields[GST_DAQIRI_N_FIELDS] = {
    { "seq-offset", "Sequence offset",
        "Bit offset of the sequence number from the packet "
        "start (bit 0 = MSB of byte 0)",
        0, DQ_REORDER_MAX_FRAME_BYTES * 8 - 1 },
    { "seq-bits", "Sequence bits", "Width of the sequence number (big-endian)", 1, 32 },
    { "batch-offset", "Batch offset", "Bit offset of the batch number from the packet start", 0,
        DQ_REORDER_MAX_FRAME_BYTES * 8 - 1 },
    { "batch-bits", "Batch bits",
        "Width of the batch number; 0: none (batch = sequence / "
        "packets-per-batch)",
        0, 32 },
    { "packets-per-batch", "Packets per batch", "Packets (slots) per frame", 1,
        DQ_REORDER_MAX_PPB },
    { "payload-offset", "Payload offset", "Byte offset of the payload from the packet start", 0,
        DQ_REORDER_MAX_FRAME_BYTES - 1 },
    { "payload-size", "Payload size", "Payload bytes per packet", 1, DQ_REORDER_MAX_FRAME_BYTES },
  };
  DqReorderConfig d = *defaults;
  for (guint i = 0; i < GST_DAQIRI_N_FIELDS; i++) {
    const char *blurb = fields[i].blurb;
    if (notes && notes[i]) {
      /* interned: it lives as long as the class */
      gchar *text = g_strdup_printf ("%s (%s)", fields[i].blurb, notes[i]);
      blurb = g_intern_string (text);
      g_free (text);
    }
    g_object_class_install_property (klass, first_id + i,
        g_param_spec_uint (fields[i].name, fields[i].nick, blurb, fields[i].min, fields[i].max,
            *field_ptr (&d, i), GST_DAQIRI_PARAM_RW_READY));
  }
}

gboolean
gst_daqiri_field_set (DqReorderConfig *cfg, guint first_id, guint prop_id, const GValue *value)
{
  if (prop_id < first_id || prop_id >= first_id + GST_DAQIRI_N_FIELDS)
    return FALSE;
  *field_ptr (cfg, prop_id - first_id) = g_value_get_uint (value);
  return TRUE;
}

gboolean
gst_daqiri_field_get (const DqReorderConfig *cfg, guint first_id, guint prop_id, GValue *value)
{
  if (prop_id < first_id || prop_id >= first_id + GST_DAQIRI_N_FIELDS)
    return FALSE;
  g_value_set_uint (value, *field_ptr ((DqReorderConfig *) cfg, prop_id - first_id));
  return TRUE;
}

/* ---- plain members ---- */

/* every enum property is stored in a C enum, which is int-sized */
G_STATIC_ASSERT (sizeof (GstDaqiriMemory) == sizeof (gint));

static gpointer
member_find (gconstpointer instance, const GstDaqiriMember *members, guint n_members, guint prop_id)
{
  guint i;

  for (i = 0; i < n_members; i++) {
    if (members[i].id == prop_id)
      return (guint8 *) instance + members[i].offset;
  }
  return NULL;
}

gboolean
gst_daqiri_member_set (gpointer instance, const GstDaqiriMember *members, guint n_members,
    guint prop_id, const GValue *value)
{
  gpointer m = member_find (instance, members, n_members, prop_id);

  if (m == NULL)
    return FALSE;
  switch (G_TYPE_FUNDAMENTAL (G_VALUE_TYPE (value))) {
    case G_TYPE_STRING:
      g_free (*(gchar **) m);
      *(gchar **) m = g_value_dup_string (value);
      return TRUE;
    case G_TYPE_BOOLEAN: *(gboolean *) m = g_value_get_boolean (value); return TRUE;
    case G_TYPE_UINT: *(guint *) m = g_value_get_uint (value); return TRUE;
    case G_TYPE_UINT64: *(guint64 *) m = g_value_get_uint64 (value); return TRUE;
    case G_TYPE_ENUM: *(gint *) m = g_value_get_enum (value); return TRUE;
    default: g_return_val_if_reached (FALSE);
  }
}

gboolean
gst_daqiri_member_get (gconstpointer instance, const GstDaqiriMember *members, guint n_members,
    guint prop_id, GValue *value)
{
  gconstpointer m = member_find (instance, members, n_members, prop_id);

  if (m == NULL)
    return FALSE;
  switch (G_TYPE_FUNDAMENTAL (G_VALUE_TYPE (value))) {
    case G_TYPE_STRING: g_value_set_string (value, *(gchar *const *) m); return TRUE;
    case G_TYPE_BOOLEAN: g_value_set_boolean (value, *(const gboolean *) m); return TRUE;
    case G_TYPE_UINT: g_value_set_uint (value, *(const guint *) m); return TRUE;
    case G_TYPE_UINT64: g_value_set_uint64 (value, *(const guint64 *) m); return TRUE;
    case G_TYPE_ENUM: g_value_set_enum (value, *(const gint *) m); return TRUE;
    default: g_return_val_if_reached (FALSE);
  }
}

gboolean
gst_daqiri_member_set_locked (GObject *object, const GstDaqiriMember *members, guint n_members,
    guint prop_id, const GValue *value)
{
  GST_OBJECT_LOCK (object);
  gboolean found = gst_daqiri_member_set (object, members, n_members, prop_id, value);
  GST_OBJECT_UNLOCK (object);
  return found;
}

gboolean
gst_daqiri_member_get_locked (
    GObject *object, const GstDaqiriMember *members, guint n_members, guint prop_id, GValue *value)
{
  GST_OBJECT_LOCK (object);
  gboolean found = gst_daqiri_member_get (object, members, n_members, prop_id, value);
  GST_OBJECT_UNLOCK (object);
  return found;
}

/* ---- the addresses of daqiritestsrc and daqiripay ---- */

void
gst_daqiri_addresses_init (GstDaqiriAddresses *a)
{
  a->src_mac = g_strdup ("02:00:00:00:00:01");
  a->dst_mac = g_strdup ("02:00:00:00:00:02");
  a->src = g_strdup ("10.0.0.1");
  a->dst = g_strdup ("10.0.0.2");
  a->src_port = 5000;
  a->dst_port = 6000;
}

void
gst_daqiri_addresses_clear (GstDaqiriAddresses *a)
{
  g_clear_pointer (&a->src_mac, g_free);
  g_clear_pointer (&a->dst_mac, g_free);
  g_clear_pointer (&a->src, g_free);
  g_clear_pointer (&a->dst, g_free);
}

void
gst_daqiri_addresses_copy (const GstDaqiriAddresses *from, GstDaqiriAddresses *to)
{
  to->src_mac = g_strdup (from->src_mac);
  to->dst_mac = g_strdup (from->dst_mac);
  to->src = g_strdup (from->src);
  to->dst = g_strdup (from->dst);
  to->src_port = from->src_port;
  to->dst_port = from->dst_port;
}

void
gst_daqiri_install_address_properties (
    GObjectClass *klass, guint first_id, const char *dst_port_note)
{
  const GParamFlags rw = GST_DAQIRI_PARAM_RW_READY;
  GstDaqiriAddresses d;
  gst_daqiri_addresses_init (&d);
  g_object_class_install_property (klass, first_id + 0,
      g_param_spec_string (
          "src-mac", "Source MAC", "Ethernet source address, as aa:bb:cc:dd:ee:ff", d.src_mac, rw));
  g_object_class_install_property (klass, first_id + 1,
      g_param_spec_string ("dst-mac", "Destination MAC",
          "Ethernet destination address, as aa:bb:cc:dd:ee:ff", d.dst_mac, rw));
  g_object_class_install_property (klass, first_id + 2,
      g_param_spec_string (
          "src", "Source address", "IPv4 source address, dotted decimal", d.src, rw));
  g_object_class_install_property (klass, first_id + 3,
      g_param_spec_string (
          "dst", "Destination address", "IPv4 destination address, dotted decimal", d.dst, rw));
  g_object_class_install_property (klass, first_id + 4,
      g_param_spec_uint (
          "src-port", "Source port", "UDP source port", 0, G_MAXUINT16, d.src_port, rw));
  const char *blurb = "UDP destination port";
  if (dst_port_note) {
    gchar *text = g_strdup_printf ("%s; %s", blurb, dst_port_note);
    blurb = g_intern_string (text);
    g_free (text);
  }
  g_object_class_install_property (klass, first_id + 5,
      g_param_spec_uint ("dst-port", "Destination port", blurb, 0, G_MAXUINT16, d.dst_port, rw));
  gst_daqiri_addresses_clear (&d);
}

static gchar **
address_text (GstDaqiriAddresses *a, guint i)
{
  gchar **texts[4] = { &a->src_mac, &a->dst_mac, &a->src, &a->dst };
  return texts[i];
}

gboolean
gst_daqiri_addresses_set (GstDaqiriAddresses *a, guint first_id, guint prop_id, const GValue *value)
{
  if (prop_id < first_id || prop_id >= first_id + GST_DAQIRI_N_ADDRESSES)
    return FALSE;
  guint i = prop_id - first_id;
  if (i < 4) {
    gchar **text = address_text (a, i);
    g_free (*text);
    *text = g_value_dup_string (value);
  } else if (i == 4) {
    a->src_port = g_value_get_uint (value);
  } else {
    a->dst_port = g_value_get_uint (value);
  }
  return TRUE;
}

gboolean
gst_daqiri_addresses_get (const GstDaqiriAddresses *a, guint first_id, guint prop_id, GValue *value)
{
  if (prop_id < first_id || prop_id >= first_id + GST_DAQIRI_N_ADDRESSES)
    return FALSE;
  guint i = prop_id - first_id;
  if (i < 4)
    g_value_set_string (value, *address_text ((GstDaqiriAddresses *) a, i));
  else
    g_value_set_uint (value, i == 4 ? a->src_port : a->dst_port);
  return TRUE;
}

gboolean
gst_daqiri_addresses_take (
    GstElement *element, const GstDaqiriAddresses *a, GstDaqiriAddressValues *v)
{
  v->src_port = (guint16) a->src_port;
  v->dst_port = (guint16) a->dst_port;
  return gst_daqiri_take_mac (element, "src-mac", a->src_mac, v->src_mac) &&
      gst_daqiri_take_mac (element, "dst-mac", a->dst_mac, v->dst_mac) &&
      gst_daqiri_take_ipv4 (element, "src", a->src, &v->src_ip) &&
      gst_daqiri_take_ipv4 (element, "dst", a->dst, &v->dst_ip);
}

gboolean
gst_daqiri_src_must_flush (GstBaseSrc *src, gboolean unlocked, gboolean paused)
{
  return unlocked && !(paused && !GST_PAD_IS_FLUSHING (GST_BASE_SRC_PAD (src)));
}

gboolean
gst_daqiri_src_undo_pause_unlock (GstBaseSrc *src)
{
  return !GST_PAD_IS_FLUSHING (GST_BASE_SRC_PAD (src));
}
