/* Helpers shared by the daqiri elements. */
#ifndef GST_DAQIRI_ELEMENT_H
#define GST_DAQIRI_ELEMENT_H

#include <gst/gst.h>
#include "daqiri-engine.h"
#include "daqiri-reorder.h"

G_BEGIN_DECLS

/* Posts an ERROR for an engine GError: the domain/code picked from the engine error. */
void gst_daqiri_post_engine_error (GstElement * element, const char *what, GError * error,
    const char *file, const char *function, int line);
#define GST_DAQIRI_POST_ENGINE_ERROR(el, what, err) \
  gst_daqiri_post_engine_error (GST_ELEMENT_CAST (el), (what), (err), __FILE__, \
      GST_FUNCTION, __LINE__)

/* Opens the port named by the `device` property or posts an ERROR naming the property,
 * the value and what is allowed. */
DqPort *gst_daqiri_open_port (GstElement * element, const char *device);

/* Parses a property holding a MAC address ("aa:bb:cc:dd:ee:ff") or an IPv4 address
 * (dotted decimal; stored in host byte order), or posts an ERROR naming the property, the
 * value and the form allowed. */
gboolean gst_daqiri_take_mac (GstElement * element, const char *property, const char *text,
    guint8 mac[6]);
gboolean gst_daqiri_take_ipv4 (GstElement * element, const char *property, const char *text,
    guint32 * addr);

/* The packet fields daqirireorder and daqiripay share, as properties in this order: seq-offset,
 * seq-bits, batch-offset, batch-bits, packets-per-batch, payload-offset, payload-size. An
 * element numbers them first_id .. first_id + GST_DAQIRI_N_FIELDS - 1. */
#define GST_DAQIRI_N_FIELDS 7

/* Installs the field properties with `defaults`; `notes` (NULL, or one entry a field, each
 * NULL or text) is added to a field's blurb. */
void gst_daqiri_install_field_properties (GObjectClass * klass, guint first_id,
    const DqReorderConfig * defaults, const char *const *notes);
/* Set / get the field of property `prop_id` (FALSE: not a field property). Call with the
 * object lock held. */
gboolean gst_daqiri_field_set (DqReorderConfig * cfg, guint first_id, guint prop_id,
    const GValue * value);
gboolean gst_daqiri_field_get (const DqReorderConfig * cfg, guint first_id, guint prop_id,
    GValue * value);

/* Where an element's buffers live: the `memory` property of daqirisrc and daqirireorder. */
typedef enum {
  GST_DAQIRI_MEMORY_SYSTEM = 0,
  GST_DAQIRI_MEMORY_CUDA = 1,
} GstDaqiriMemory;
#define GST_TYPE_DAQIRI_MEMORY (gst_daqiri_memory_get_type ())
GType gst_daqiri_memory_get_type (void);

/* With CUDA built in and a usable GPU: TRUE. Else posts an ERROR naming `property` (set to
 * cuda) and why, and returns FALSE. */
gboolean gst_daqiri_cuda_usable (GstElement * element, const char *property);

G_END_DECLS

#endif
