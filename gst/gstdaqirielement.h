/* Helpers shared by the daqiri elements. */
#ifndef GST_DAQIRI_ELEMENT_H
#define GST_DAQIRI_ELEMENT_H

#include <gst/gst.h>
#include <gst/base/gstbasesrc.h>
#include "daqiri-engine.h"
#include "daqiri-reorder.h"

G_BEGIN_DECLS

/* Posts an ERROR for an engine GError: the domain/code picked from the engine error. */
void gst_daqiri_post_engine_error (GstElement *element, const char *what, GError *error,
    const char *file, const char *function, int line);
#define GST_DAQIRI_POST_ENGINE_ERROR(el, what, err) \
  gst_daqiri_post_engine_error ( \
      GST_ELEMENT_CAST (el), (what), (err), __FILE__, GST_FUNCTION, __LINE__)

/* Opens the port named by the `device` property or posts an ERROR naming the property,
 * the value and what is allowed. */
DqPort *gst_daqiri_open_port (GstElement *element, const char *device);

/* The Ethernet/IPv4/UDP addresses daqiritestsrc and daqiripay put in their packets, as
 * properties in this order: src-mac, dst-mac, src, dst, src-port, dst-port (numbered first_id
 * .. first_id + GST_DAQIRI_N_ADDRESSES - 1). The text as set, and what it means once taken. */
#define GST_DAQIRI_N_ADDRESSES 6

typedef struct {
  gchar *src_mac, *dst_mac, *src, *dst;
  guint src_port, dst_port;
} GstDaqiriAddresses;

typedef struct {
  guint8 src_mac[6], dst_mac[6];
  guint32 src_ip, dst_ip; /* host byte order */
  guint16 src_port, dst_port;
} GstDaqiriAddressValues;

/* the defaults: 02:00:00:00:00:01 -> :02, 10.0.0.1:5000 -> 10.0.0.2:6000 */
void gst_daqiri_addresses_init (GstDaqiriAddresses *a);
void gst_daqiri_addresses_clear (GstDaqiriAddresses *a);
/* `dst_port_note` (or NULL) is added to dst-port's blurb */
void gst_daqiri_install_address_properties (
    GObjectClass *klass, guint first_id, const char *dst_port_note);
/* Set / get the address of property `prop_id` (FALSE: not an address property); with the
 * object lock held. */
gboolean gst_daqiri_addresses_set (
    GstDaqiriAddresses *a, guint first_id, guint prop_id, const GValue *value);
gboolean gst_daqiri_addresses_get (
    const GstDaqiriAddresses *a, guint first_id, guint prop_id, GValue *value);
/* Parses a copy of the addresses (taken under the object lock, see _copy), or posts an ERROR
 * naming the property, the value and the form allowed. */
void gst_daqiri_addresses_copy (const GstDaqiriAddresses *from, GstDaqiriAddresses *to);
gboolean gst_daqiri_addresses_take (
    GstElement *element, const GstDaqiriAddresses *a, GstDaqiriAddressValues *v);

/* The packet fields daqirireorder and daqiripay share, as properties in this order: seq-offset,
 * seq-bits, batch-offset, batch-bits, packets-per-batch, payload-offset, payload-size. An
 * element numbers them first_id .. first_id + GST_DAQIRI_N_FIELDS - 1. */
#define GST_DAQIRI_N_FIELDS 7

/* Installs the field properties with `defaults`; `notes` (NULL, or one entry a field, each
 * NULL or text) is added to a field's blurb. */
void gst_daqiri_install_field_properties (
    GObjectClass *klass, guint first_id, const DqReorderConfig *defaults, const char *const *notes);
/* Set / get the field of property `prop_id` (FALSE: not a field property). Call with the
 * object lock held. */
gboolean gst_daqiri_field_set (
    DqReorderConfig *cfg, guint first_id, guint prop_id, const GValue *value);
gboolean gst_daqiri_field_get (
    const DqReorderConfig *cfg, guint first_id, guint prop_id, GValue *value);

/* Where an element's buffers live: the `memory` property of daqirisrc and daqirireorder. */
typedef enum {
  GST_DAQIRI_MEMORY_SYSTEM = 0,
  GST_DAQIRI_MEMORY_CUDA = 1,
} GstDaqiriMemory;
#define GST_TYPE_DAQIRI_MEMORY (gst_daqiri_memory_get_type ())
GType gst_daqiri_memory_get_type (void);

/* The flags of a property that may change only up to READY (most of the elements'). */
#define GST_DAQIRI_PARAM_RW_READY \
  (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)

/* A property kept as a plain member of the element's instance struct: the property's id and
 * the member's offset (GST_DAQIRI_MEMBER). An element lists its plain properties in one table
 * and its set_property/get_property copy between the GValue and the member through it, by the
 * value's type: string (the old one freed), boolean, uint, uint64, enum (an int-sized C enum).
 * Call with the object lock held. FALSE: `prop_id` is not in the table. */
typedef struct {
  guint id;
  gsize offset;
} GstDaqiriMember;
#define GST_DAQIRI_MEMBER(id, Type, member) \
  { \
    (id), G_STRUCT_OFFSET (Type, member) \
  }

gboolean gst_daqiri_member_set (gpointer instance, const GstDaqiriMember *members, guint n_members,
    guint prop_id, const GValue *value);
gboolean gst_daqiri_member_get (gconstpointer instance, const GstDaqiriMember *members,
    guint n_members, guint prop_id, GValue *value);
/* The same for an element's set_property / get_property: they take the object lock
 * themselves. FALSE: `prop_id` is not in the table (the caller warns). */
gboolean gst_daqiri_member_set_locked (GObject *object, const GstDaqiriMember *members,
    guint n_members, guint prop_id, const GValue *value);
gboolean gst_daqiri_member_get_locked (
    GObject *object, const GstDaqiriMember *members, guint n_members, guint prop_id, GValue *value);

/* A new allocator of `type` (a GstAllocator subtype) that the process keeps for good: its
 * floating reference sunk, and flagged as an object the leak tracer may find alive at exit. */
GstAllocator *gst_daqiri_allocator_new_kept (GType type);

/* With CUDA built in and a usable GPU: TRUE. Else posts an ERROR naming `property` (set to
 * cuda) and why, and returns FALSE. */
gboolean gst_daqiri_cuda_usable (GstElement *element, const char *property);

/* The sources' pause (daqirisrc, daqiritestsrc): basesrc (1.24 on) also calls unlock() when a
 * live source goes from PLAYING to PAUSED. While paused with its pad not flushing, that unlock()
 * is no flush: create() keeps going (returning FLUSHING would stop the task for good if PLAYING
 * came back first). Whether create() is to stop, given the source's unlock() and pause flags: */
gboolean gst_daqiri_src_must_flush (GstBaseSrc *src, gboolean unlocked, gboolean paused);
/* On PAUSED -> PLAYING: whether to clear the flag the pause's unlock() set (basesrc calls
 * unlock_stop() only before the next create(), too late for the one in progress). */
gboolean gst_daqiri_src_undo_pause_unlock (GstBaseSrc *src);

G_END_DECLS

#endif
