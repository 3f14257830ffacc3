/* daqirireorder memory=cuda against memory=system, on a GPU.
 *
 *   appsrc (bursts in system memory) ! daqirireorder memory=M ... ! appsink
 *
 * The same randomized stream (packets shuffled across batch boundaries, lost, duplicated,
 * short, with descriptors past the end of the burst) goes through both; every frame must
 * match: bytes (the GPU frames read back through GST_DAQIRI_MAP_CUDA), PTS, offset (batch
 * id) and the frame meta; and the stats of both elements must be equal. Also: the GPU
 * frames carry the caps feature memory:DaqiriCUDA, are daqiri CUDA memory, and refuse a
 * CPU map (GstCudaMemory frames, asked for with memory:CUDAMemory caps, are GstCudaMemory and
 * read back by a CPU map). Raw video with memory=cuda (UYVY copied, I422_10LE unpacked from
 * 10-bit 4:2:2 pgroups by the kernel) goes out as GstCudaMemory and is compared after
 * cudadownload. The emulated NIC's ring in GPU memory (device memory it fills by copies, and
 * pinned host memory) feeds the GPU kernels: bursts
 * as daqiri GPU memory, and as GstCudaMemory on GStreamer >= 1.24 (on 1.22 the element must
 * refuse with a message naming the missing call). Exit 77 (skipped) without a GPU. Prints one
 * summary line. Built with DQ_TEST_EMU it runs against the plugin built on the CUDA emulator
 * (tests/reorder/emu-plugin), in CI: everything but what needs GstCuda.
 */
#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/daqiri/daqiri.h>

#include <gmodule.h>
#include <stdio.h>
#include <string.h>

#include "daqiri-reorder.h"
#include "gpu-test-pull.h"
#include "gpu-test-start.h"

#ifdef DQ_TEST_EMU
/* Against the plugin on the CUDA emulator, GPU memory is host memory: the test's own CUDA calls
 * are plain host calls (linking the emulator here too would make a second emulator). */
#define dq_cuda_memcpy(dst, src, size) emu_memcpy ((dst), (src), (size))
static int
emu_memcpy (void *dst, const void *src, size_t size)
{
  memcpy (dst, src, size);
  return 0;
}
#define dq_cuda_last_error() "none"
#endif

#define PAYLOAD_OFFSET 8

typedef struct {
  const char *name;
  const char *props;    /* daqirireorder properties besides memory */
  const char *gpu_tail; /* elements after daqirireorder in the memory=cuda run */
  const char *tail;     /* elements after daqirireorder in both runs */
  gboolean gpu_bursts;  /* the memory=cuda run gets its bursts in GPU memory */
  guint payload;        /* input payload bytes per packet */
  guint ppb;
  guint n_bursts;
  guint max_burst;
} Case;

static const Case cases[] = {
  { "copy 256 B x 64",
      "seq-offset=0 seq-bits=32 packets-per-batch=64 payload-offset=8 "
      "payload-size=256 window=8",
      NULL, NULL, FALSE, 256, 64, 300, 300 },
  /* bursts already in GPU memory (daqiri's allocator, found by name), read where they are */
  { "copy 256 B x 64, GPU bursts",
      "seq-offset=0 seq-bits=32 packets-per-batch=64 "
      "payload-offset=8 payload-size=256 window=8",
      NULL, NULL, TRUE, 256, 64, 300, 300 },
  { "int16->fp32 1000 B x 16",
      "seq-offset=0 seq-bits=16 packets-per-batch=16 "
      "payload-offset=8 payload-size=1000 input-type=int16 output-type=fp32 "
      "byte-order=network window=4",
      NULL, NULL, FALSE, 1000, 16, 200, 64 },
  { "int4->fp16 64 B x 1024, batch field",
      "seq-offset=0 seq-bits=16 batch-offset=32 "
      "batch-bits=16 packets-per-batch=1024 payload-offset=8 payload-size=64 "
      "input-type=int4 output-type=fp16 window=2",
      NULL, NULL, FALSE, 64, 1024, 100, 1024 },
  /* raw video: GstCudaMemory of the pipeline's CUDA context, read back by cudadownload;
   * rows of 640 UYVY pixels (1280 bytes, so the GPU pitch differs from the row) */
  { "UYVY 640x48 GstCudaMemory -> cudadownload",
      "seq-offset=0 seq-bits=16 "
      "packets-per-batch=48 payload-offset=8 payload-size=1280 video-format=uyvy width=640 "
      "height=48 framerate=50/1 window=4",
      "cudadownload ! video/x-raw,format=UYVY", NULL, FALSE, 1280, 48, 150, 100 },
  /* generic frames as GstCudaMemory when downstream asks for memory:CUDAMemory: filled in
   * place, cut to the frame's 1750 bytes (not a whole number of the pool's RGBA pixels),
   * read back by a CPU map (GstCuda downloads) */
  { "copy 250 B x 7, GstCudaMemory frames",
      "seq-offset=0 seq-bits=32 packets-per-batch=7 "
      "payload-offset=8 payload-size=250 window=4",
      "application/x-daqiri-frame(memory:CUDAMemory)", NULL, FALSE, 250, 7, 200, 40 },
  /* 10-bit 4:2:2 pgroups unpacked by the GPU kernel into the planes of GstCudaMemory
   * I422_10LE frames (their pitches and offsets), read back by cudadownload, against the CPU
   * unpack of memory=system: one row of 640 pixels (1600 bytes) a packet; and rows of 1920
   * pixels (4800 bytes) across packets of 1200 bytes that arrive in GPU memory */
  { "I422_10LE 640x48 GstCudaMemory -> cudadownload",
      "seq-offset=0 seq-bits=16 "
      "packets-per-batch=48 payload-offset=8 payload-size=1600 video-format=i422-10le "
      "width=640 height=48 framerate=50/1 window=4",
      "cudadownload ! video/x-raw,format=I422_10LE", NULL, FALSE, 1600, 48, 150, 100 },
  { "I422_10LE 1920x36 GstCudaMemory -> cudadownload, GPU bursts",
      "seq-offset=0 seq-bits=16 "
      "packets-per-batch=144 payload-offset=8 payload-size=1200 video-format=i422-10le "
      "width=1920 height=36 window=4",
      "cudadownload ! video/x-raw,format=I422_10LE", NULL, TRUE, 1200, 144, 60, 300 },
  /* frames in GPU memory into daqiripay: the packets it makes are those of system frames */
  { "GPU frames -> daqiripay",
      "seq-offset=0 seq-bits=32 packets-per-batch=64 "
      "payload-offset=8 payload-size=256 window=8",
      NULL,
      "daqiripay seq-offset=336 "
      "packets-per-batch=64 payload-offset=46 payload-size=256",
      FALSE, 256, 64, 100, 300 },
};

typedef struct {
  GstBuffer **frames; /* host copies, in push order */
  guint n, cap;
  GstClockTime *pts;
  guint64 *offset;
  gchar **meta; /* the frame meta as text */
  gboolean feature_ok;
  gboolean cpu_map_refused;
  gboolean gstcuda_caps;
  int primary; /* the announced CUDA context wraps the primary: 1, 0, -1 none */
  gchar *stats;
  gchar *error; /* why the pipeline did not start */
} Run;

/* Builds the bursts of one case: deterministic from the seed. */
static GPtrArray *
make_bursts (const Case *c, guint32 seed)
{
  GRand *rand = g_rand_new_with_seed (seed);
  GPtrArray *bursts = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  guint pkt_len = PAYLOAD_OFFSET + c->payload;
  guint32 seq = 1000;
  for (guint b = 0; b < c->n_bursts; b++) {
    guint n = 1 + g_rand_int_range (rand, 0, (gint32) c->max_burst);
    guint8 *data = g_malloc0 ((gsize) n * pkt_len + 16);
    GstDaqiriPacket *d = g_new0 (GstDaqiriPacket, n);
    guint32 *seqs = g_new (guint32, n);
    for (guint i = 0; i < n; i++)
      seqs[i] = seq++;
    /* shuffle nearby packets (across batch boundaries), duplicate some, lose some */
    for (guint i = 0; i < n; i++) {
      guint step = (guint) g_rand_int_range (rand, 0, 40);
      guint j = MIN (n - 1, i + step);
      guint32 t = seqs[i];
      seqs[i] = seqs[j];
      seqs[j] = t;
    }
    for (guint i = 0; i < n; i++) {
      guint8 *q = data + (gsize) i * pkt_len;
      guint32 s = seqs[i];
      gint r = g_rand_int_range (rand, 0, 1000);
      if (r < 10 && i > 0)
        s = seqs[i - 1]; /* duplicate */
      else if (r < 12)
        s += c->ppb; /* a batch ahead: may push the window */
      q[0] = (guint8) (s >> 8);
      q[1] = (guint8) s;
      q[2] = (guint8) (s >> 24);
      q[3] = (guint8) (s >> 16);
      /* the 16-bit cases read bytes 0..1; the 32-bit case bytes 0..3 as one field */
      if (strstr (c->props, "seq-bits=32")) {
        q[0] = (guint8) (s >> 24);
        q[1] = (guint8) (s >> 16);
        q[2] = (guint8) (s >> 8);
        q[3] = (guint8) s;
      }
      guint batch = s / c->ppb;
      q[4] = (guint8) (batch >> 8);
      q[5] = (guint8) batch;
      for (guint k = 0; k < c->payload; k++)
        q[PAYLOAD_OFFSET + k] = (guint8) g_rand_int (rand);
      d[i].offset = i * pkt_len;
      d[i].length = pkt_len;
      if (r >= 990)
        d[i].length = PAYLOAD_OFFSET + c->payload / 2; /* short */
      else if (r >= 985)
        d[i].offset = n * pkt_len + 4; /* past the end */
    }
    GstBuffer *buf = gst_buffer_new_wrapped (data, (gsize) n * pkt_len);
    gst_buffer_add_daqiri_packet_meta (buf, d, n);
    GST_BUFFER_PTS (buf) = (GstClockTime) b * 1000000;
    g_ptr_array_add (bursts, buf);
    g_free (d);
    g_free (seqs);
  }
  g_rand_free (rand);
  return bursts;
}

/* The burst with its data moved into daqiri's GPU memory (same meta, same PTS). */
static GstBuffer *
burst_to_gpu (GstBuffer *host)
{
  GstAllocator *cuda = gst_allocator_find (GST_DAQIRI_CUDA_MEMORY_TYPE);
  if (cuda == NULL)
    return NULL;
  gsize size = gst_buffer_get_size (host);
  GstMemory *mem = gst_allocator_alloc (cuda, size, NULL);
  gst_object_unref (cuda);
  if (mem == NULL)
    return NULL;
  GstMapInfo dst, src;
  gboolean ok = gst_memory_map (mem, &dst, GST_MAP_WRITE | GST_DAQIRI_MAP_CUDA);
  if (ok) {
    gst_buffer_map (host, &src, GST_MAP_READ);
    ok = dq_cuda_memcpy (dst.data, src.data, size) == 0;
    gst_buffer_unmap (host, &src);
    gst_memory_unmap (mem, &dst);
  }
  if (!ok) {
    gst_memory_unref (mem);
    return NULL;
  }
  GstBuffer *gpu = gst_buffer_new ();
  gst_buffer_append_memory (gpu, mem);
  gst_buffer_copy_into (gpu, host, GST_BUFFER_COPY_METADATA, 0, -1);
  return gpu;
}

/* Whether the CUDA context daqirireorder announced (have-context on the bus) is device 0's
 * primary context: its handle against cuDevicePrimaryCtxRetain's. 1 yes, 0 no, -1 none. */
static int
announced_primary (GstElement *pipeline)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *m;
  int result = -1;
  while (result == -1 && (m = gst_bus_pop_filtered (bus, GST_MESSAGE_HAVE_CONTEXT)) != NULL) {
    GstContext *ctx = NULL;
    gst_message_parse_have_context (m, &ctx);
    GObject *cuda_ctx = NULL;
    const GValue *v = ctx && strcmp (gst_context_get_context_type (ctx), "gst.cuda.context") == 0
        ? gst_structure_get_value (gst_context_get_structure (ctx), "gst.cuda.context")
        : NULL;
    if (v && G_VALUE_HOLDS_OBJECT (v) && (cuda_ctx = g_value_dup_object (v)) != NULL) {
      GModule *gc = g_module_open ("libgstcuda-1.0.so.0", G_MODULE_BIND_LAZY);
      GModule *cu = g_module_open ("libcuda.so.1", G_MODULE_BIND_LAZY);
      gpointer (*get_handle) (GObject *) = NULL;
      int (*retain) (gpointer *, int) = NULL, (*release) (int) = NULL;
      if (gc && cu &&
          g_module_symbol (gc, "gst_cuda_context_get_handle", (gpointer *) &get_handle) &&
          g_module_symbol (cu, "cuDevicePrimaryCtxRetain", (gpointer *) &retain) &&
          g_module_symbol (cu, "cuDevicePrimaryCtxRelease_v2", (gpointer *) &release)) {
        gpointer primary = NULL;
        if (retain (&primary, 0) == 0) {
          result = get_handle (cuda_ctx) == primary;
          release (0);
        }
      }
      g_object_unref (cuda_ctx);
    }
    if (ctx)
      gst_context_unref (ctx);
    gst_message_unref (m);
  }
  gst_object_unref (bus);
  return result;
}

static gchar *
meta_text (GstBuffer *buf)
{
  GstCustomMeta *m = gst_buffer_get_custom_meta (buf, "GstDaqiriFrameMeta");
  return m ? gst_structure_to_string (gst_custom_meta_get_structure (m)) : g_strdup ("none");
}

/* The pipeline `desc` (freed here) describes, or NULL with the parser's message printed. */
static GstElement *
launch (gchar *desc)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch (desc, &err);
  if (p == NULL)
    g_printerr ("%s: %s\n", desc, err->message);
  g_clear_error (&err);
  g_free (desc);
  return p;
}

static gboolean
run_case (const Case *c, GPtrArray *bursts, const char *memory, Run *run)
{
  gboolean cuda = strcmp (memory, "cuda") == 0;
  const char *tail = cuda && c->gpu_tail ? c->gpu_tail : c->tail;
  gboolean gpu_in = cuda && c->gpu_bursts;
  GstElement *p = launch (g_strdup_printf (
      "appsrc name=in format=time caps=application/x-daqiri-packets%s "
      "! daqirireorder name=r memory=%s %s ! %s%sappsink name=out sync=false",
      gpu_in ? "(memory:DaqiriCUDA)" : "", memory, c->props, tail ? tail : "", tail ? " ! " : ""));
  if (p == NULL)
    return FALSE;
  GstElement *in = gst_bin_get_by_name (GST_BIN (p), "in");
  GstElement *out = gst_bin_get_by_name (GST_BIN (p), "out");
  GstElement *r = gst_bin_get_by_name (GST_BIN (p), "r");
  g_object_set (out, "max-buffers", 0, "drop", FALSE, NULL);
  if (gst_element_set_state (p, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    run->error = dq_bus_error (p);
    if (run->error != NULL)
      g_printerr ("memory=%s does not start: %s\n", memory, run->error);
    gst_element_set_state (p, GST_STATE_NULL);
    gst_object_unref (in);
    gst_object_unref (out);
    gst_object_unref (r);
    gst_object_unref (p);
    return FALSE;
  }
  for (guint i = 0; i < bursts->len; i++) {
    GstBuffer *b = g_ptr_array_index (bursts, i);
    GstBuffer *in_buf = gpu_in ? burst_to_gpu (b) : gst_buffer_copy_deep (b);
    if (in_buf == NULL) {
      g_printerr ("cannot put a burst into GPU memory\n");
      break;
    }
    gst_app_src_push_buffer (GST_APP_SRC (in), in_buf);
  }
  gst_app_src_end_of_stream (GST_APP_SRC (in));

  /* a GstCudaMemory run: the caps daqirireorder pushed carry memory:CUDAMemory; the samples
   * are what cudadownload made of them (system memory) */
  if (tail && cuda && c->gpu_tail) {
    GstPad *pad = gst_element_get_static_pad (r, "src");
    GstCaps *caps = NULL;
    for (int i = 0; i < 500 && caps == NULL; i++) {
      caps = gst_pad_get_current_caps (pad);
      if (caps == NULL)
        g_usleep (2000);
    }
    run->gstcuda_caps =
        caps && gst_caps_features_contains (gst_caps_get_features (caps, 0), "memory:CUDAMemory");
    if (caps)
      gst_caps_unref (caps);
    gst_object_unref (pad);
  }
  /* generic frames in GstCudaMemory: the tail is a caps filter, the samples GstCudaMemory */
  gboolean gstcuda_frames = cuda && c->gpu_tail && g_str_has_prefix (c->gpu_tail, "application/");
  if (tail)
    cuda = FALSE; /* the samples are what the tail made: system memory */
  run->feature_ok = TRUE;
  run->cpu_map_refused = TRUE;
  for (;;) {
    GstSample *s = gst_app_sink_pull_sample (GST_APP_SINK (out));
    if (s == NULL)
      break;
    GstBuffer *buf = gst_sample_get_buffer (s);
    GstCaps *caps = gst_sample_get_caps (s);
    gboolean has_feature = gst_caps_features_contains (
        gst_caps_get_features (caps, 0), GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA);
    if (has_feature != cuda)
      run->feature_ok = FALSE;
    GstMemory *mem = gst_buffer_peek_memory (buf, 0);
    gsize size = gst_buffer_get_size (buf);
    if (gstcuda_frames && !gst_memory_is_type (mem, "gst.cuda.memory"))
      run->feature_ok = FALSE;
    guint8 *host = g_malloc (size);
    if (cuda) {
      GstMapInfo map;
      if (!gst_memory_is_type (mem, GST_DAQIRI_CUDA_MEMORY_TYPE))
        run->feature_ok = FALSE;
      if (gst_buffer_map (buf, &map, GST_MAP_READ)) {
        run->cpu_map_refused = FALSE;
        gst_buffer_unmap (buf, &map);
      }
      if (!gst_buffer_map (buf, &map, GST_MAP_READ | GST_DAQIRI_MAP_CUDA)) {
        g_printerr ("GST_DAQIRI_MAP_CUDA map failed\n");
        memset (host, 0xa5, size);
      } else {
        if (dq_cuda_memcpy (host, map.data, size) != 0)
          g_printerr ("device to host copy failed: %s\n", dq_cuda_last_error ());
        gst_buffer_unmap (buf, &map);
      }
    } else {
      gst_buffer_extract (buf, 0, host, size);
    }
    if (run->n == run->cap) {
      run->cap = MAX (16, run->cap * 2);
      run->frames = g_renew (GstBuffer *, run->frames, run->cap);
      run->pts = g_renew (GstClockTime, run->pts, run->cap);
      run->offset = g_renew (guint64, run->offset, run->cap);
      run->meta = g_renew (gchar *, run->meta, run->cap);
    }
    run->frames[run->n] = gst_buffer_new_wrapped (host, size);
    run->pts[run->n] = GST_BUFFER_PTS (buf);
    run->offset[run->n] = GST_BUFFER_OFFSET (buf);
    run->meta[run->n] = meta_text (buf);
    run->n++;
    gst_sample_unref (s);
  }
  run->primary = announced_primary (p);
  GstStructure *st;
  g_object_get (r, "stats", &st, NULL);
  run->stats = gst_structure_to_string (st);
  gst_structure_free (st);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (in);
  gst_object_unref (out);
  gst_object_unref (r);
  gst_object_unref (p);
  return TRUE;
}

/* The emulated ConnectX's generator into daqirisrc memory=M ! daqirireorder memory=M: the
 * bursts lie in GPU-accessible ring memory with M = cuda. Returns the frames' bytes, in
 * order, concatenated (NULL when the pipeline fails); *frames how many. */
#define EMU_FRAMES 400
#define EMU_PPB 64

/* What a run's bursts and frames say: each frame's PTS is that of the burst that brought its
 * batch's first packet (packet k has sequence number k, in order), grouped submissions or not. */
typedef struct {
  GMutex lock;
  GArray *bursts; /* (packets so far, PTS) per burst into daqirireorder (lock) */
  guint n_bursts;
  guint64 submissions; /* daqirireorder's stats */
  gboolean pts_ok;
} EmuCheck;

typedef struct {
  guint64 end; /* packets up to the end of this burst */
  GstClockTime pts;
} BurstAt;

static GstPadProbeReturn
note_burst (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (GST_PAD_PROBE_INFO_BUFFER (info));
  EmuCheck *check = data;
  g_mutex_lock (&check->lock);
  GArray *a = check->bursts;
  BurstAt b = { (a->len ? g_array_index (a, BurstAt, a->len - 1).end : 0) +
        (meta ? meta->n_packets : 0),
    GST_BUFFER_PTS (GST_PAD_PROBE_INFO_BUFFER (info)) };
  g_array_append_val (a, b);
  g_mutex_unlock (&check->lock);
  return GST_PAD_PROBE_OK;
}

/* Whether a frame of batch `batch` has the PTS of the burst holding packet batch * EMU_PPB. */
static gboolean
frame_pts_ok (GArray *bursts, guint64 batch, GstClockTime pts)
{
  for (guint k = 0; k < bursts->len; k++)
    if (g_array_index (bursts, BurstAt, k).end > batch * EMU_PPB)
      return g_array_index (bursts, BurstAt, k).pts == pts;
  return FALSE;
}

static GByteArray *
emu_source_run (const char *memory, gboolean gpudirect, guint header_size, const char *filter,
    guint *frames, gchar **caps_out, gchar **ring_out, gchar **error, EmuCheck *check)
{
  static guint serial;
  GstElement *p = launch (g_strdup_printf (
      "daqirisrc name=s device=emu:gpu%u,gen=64,gen-count=%u,"
      "gen-lossless=1 memory=%s gpudirect=%s header-size=%u burst-packets=128 ! %s%s"
      "daqirireorder name=r memory=%s seq-offset=336 seq-bits=32 packets-per-batch=%u "
      "payload-offset=46 payload-size=18 ! appsink name=out sync=false",
      serial++, EMU_FRAMES * EMU_PPB, memory, gpudirect ? "true" : "false", header_size,
      filter ? filter : "", filter ? " ! " : "", memory, EMU_PPB));
  memset (check, 0, sizeof *check);
  if (p == NULL)
    return NULL;
  GstElement *out = gst_bin_get_by_name (GST_BIN (p), "out");
  GstElement *src = gst_bin_get_by_name (GST_BIN (p), "s");
  GstElement *r = gst_bin_get_by_name (GST_BIN (p), "r");
  GstPad *rsink = gst_element_get_static_pad (r, "sink");
  g_mutex_init (&check->lock);
  check->bursts = g_array_new (FALSE, FALSE, sizeof (BurstAt));
  check->pts_ok = TRUE;
  gst_pad_add_probe (rsink, GST_PAD_PROBE_TYPE_BUFFER, note_burst, check, NULL);
  GByteArray *bytes = NULL;
  *frames = 0;
  if (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE) {
    bytes = g_byte_array_new ();
    GstSample *sample;
    /* until all frames are in, an error is posted, or 10 s pass without a frame */
    while (*frames < EMU_FRAMES && (sample = dq_pull_sample (out, &p, 1, 20, error)) != NULL) {
      GstBuffer *buf = gst_sample_get_buffer (sample);
      GstMapInfo map;
      gsize size = gst_buffer_get_size (buf);
      guint8 *host = g_malloc (size);
      gboolean cuda = strcmp (memory, "cuda") == 0;
      /* the probe ran on the streaming thread before the frame was made */
      g_mutex_lock (&check->lock);
      check->pts_ok = check->pts_ok &&
          frame_pts_ok (check->bursts, GST_BUFFER_OFFSET (buf), GST_BUFFER_PTS (buf));
      g_mutex_unlock (&check->lock);
      if (gst_buffer_map (buf, &map, cuda ? GST_MAP_READ | GST_DAQIRI_MAP_CUDA : GST_MAP_READ)) {
        if (cuda)
          dq_cuda_memcpy (host, map.data, size);
        else
          memcpy (host, map.data, size);
        gst_buffer_unmap (buf, &map);
      }
      g_byte_array_append (bytes, host, (guint) size);
      g_free (host);
      (*frames)++;
      gst_sample_unref (sample);
    }
    GstPad *pad = gst_element_get_static_pad (src, "src");
    GstCaps *caps = gst_pad_get_current_caps (pad);
    *caps_out = caps ? gst_caps_to_string (caps) : g_strdup ("none");
    if (caps)
      gst_caps_unref (caps);
    gst_object_unref (pad);
    GstStructure *st = NULL;
    g_object_get (src, "stats", &st, NULL);
    *ring_out = g_strdup (st ? gst_structure_get_string (st, "ring-memory") : NULL);
    if (st)
      gst_structure_free (st);
    g_object_get (r, "stats", &st, NULL);
    check->submissions = 0;
    if (st && !gst_structure_get_uint64 (st, "submissions", &check->submissions))
      check->pts_ok = FALSE;
    if (st)
      gst_structure_free (st);
  }
  if (*error == NULL)
    *error = dq_bus_error (p);
  gst_element_set_state (p, GST_STATE_NULL);
  check->n_bursts = check->bursts->len;
  g_array_unref (check->bursts);
  g_mutex_clear (&check->lock);
  gst_object_unref (rsink);
  gst_object_unref (r);
  gst_object_unref (src);
  gst_object_unref (out);
  gst_object_unref (p);
  return bytes;
}

/* daqirisrc header-size=42 memory=cuda on the emulated ConnectX's generator: each burst's
 * headers in system memory and the rest of every packet in GPU device memory, copied back
 * and checked byte for byte against what emu.h says the generator writes. TRUE when every
 * byte of `count` packets is right; *packets how many were checked. */
static gboolean
split_readback_case (guint count, guint *packets)
{
  GstElement *p = launch (g_strdup_printf ("daqirisrc device=emu:gpusplit,gen=200,gen-count=%u,"
                                           "gen-lossless=1 memory=cuda header-size=42 ! "
                                           "appsink name=out sync=false",
      count));
  if (p == NULL)
    return FALSE;
  GstElement *out = gst_bin_get_by_name (GST_BIN (p), "out");
  guint k = 0, bad = 0;
  guint8 *host = NULL;
  gsize host_size = 0;
  if (gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE) {
    GstSample *sample;
    while (k < count &&
        (sample = gst_app_sink_try_pull_sample (GST_APP_SINK (out), 5 * GST_SECOND)) != NULL) {
      GstBuffer *buf = gst_sample_get_buffer (sample);
      GstDaqiriPacketMeta *meta = gst_buffer_get_daqiri_packet_meta (buf);
      GstMapInfo hm, pm;
      gboolean ok = meta && meta->header_size == 42 && gst_buffer_n_memory (buf) == 2 &&
          gst_memory_is_type (gst_buffer_peek_memory (buf, 1), GST_DAQIRI_CUDA_MEMORY_TYPE);
      if (ok && gst_memory_map (gst_buffer_peek_memory (buf, 0), &hm, GST_MAP_READ)) {
        if (gst_memory_map (
                gst_buffer_peek_memory (buf, 1), &pm, GST_MAP_READ | GST_DAQIRI_MAP_CUDA)) {
          if (pm.size > host_size) {
            host_size = pm.size;
            host = g_realloc (host, host_size);
          }
          ok = gst_daqiri_packet_meta_validate_split (meta, hm.size, pm.size, NULL) &&
              dq_cuda_memcpy (host, pm.data, pm.size) == 0;
          for (guint i = 0; ok && i < meta->n_packets; i++, k++) {
            const GstDaqiriPacket *pkt = &meta->packets[i];
            const guint8 *h = hm.data + pkt->offset;
            const guint8 *rest = host + gst_daqiri_packet_payload_offset (meta, pkt);
            ok = pkt->length == 200 && GST_READ_UINT16_BE (h + 12) == 0x0800 && h[23] == 17 &&
                GST_READ_UINT16_BE (h + 36) == 5000 && GST_READ_UINT32_BE (rest) == k;
            for (guint b = 46; ok && b < 200; b++)
              ok = rest[b - 42] == (guint8) (k + b);
          }
          gst_memory_unmap (gst_buffer_peek_memory (buf, 1), &pm);
        } else {
          ok = FALSE;
        }
        gst_memory_unmap (gst_buffer_peek_memory (buf, 0), &hm);
      } else {
        ok = FALSE;
      }
      bad += !ok;
      gst_sample_unref (sample);
      if (!ok)
        break;
    }
  }
  g_free (host);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_object_unref (out);
  gst_object_unref (p);
  *packets = k;
  return bad == 0 && k == count;
}

static void
run_clear (Run *run)
{
  for (guint i = 0; i < run->n; i++) {
    gst_buffer_unref (run->frames[i]);
    g_free (run->meta[i]);
  }
  g_free (run->frames);
  g_free (run->pts);
  g_free (run->offset);
  g_free (run->meta);
  g_free (run->stats);
  g_free (run->error);
  memset (run, 0, sizeof *run);
}

/* A flush in the middle of a stream, bursts pushed from this thread into daqirireorder's sink
 * pad: the frames that reach its src pad, as text (batch id, meta, a checksum of the bytes). */
typedef struct {
  GMutex lock;
  GPtrArray *frames;
  gboolean cuda;
} Seen;

static GstPadProbeReturn
seen_frame (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  Seen *seen = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstMapInfo map;
  gsize size = gst_buffer_get_size (buf);
  guint8 *host = g_malloc0 (size);
  if (gst_buffer_map (buf, &map, seen->cuda ? GST_MAP_READ | GST_DAQIRI_MAP_CUDA : GST_MAP_READ)) {
    if (seen->cuda)
      dq_cuda_memcpy (host, map.data, size);
    else
      memcpy (host, map.data, size);
    gst_buffer_unmap (buf, &map);
  }
  gchar *meta = meta_text (buf);
  gchar *sum = g_compute_checksum_for_data (G_CHECKSUM_SHA256, host, size);
  gchar *text =
      g_strdup_printf ("pts %" G_GUINT64_FORMAT " %s %s", GST_BUFFER_PTS (buf), meta, sum);
  g_mutex_lock (&seen->lock);
  g_ptr_array_add (seen->frames, text);
  g_mutex_unlock (&seen->lock);
  g_free (sum);
  g_free (meta);
  g_free (host);
  return GST_PAD_PROBE_OK;
}

/* Pushes bursts [0, n) with a flush (FLUSH_START, FLUSH_STOP, a new segment) before burst
 * `at`, then EOS. *split: how many frames came before the flush. FALSE if the pipeline fails. */
static gboolean
flush_run (const Case *c, GPtrArray *bursts, guint at, const char *memory, Seen *seen, guint *split,
    guint64 *packets)
{
  GstElement *p = launch (g_strdup_printf (
      "daqirireorder name=r memory=%s %s ! fakesink async=false", memory, c->props));
  if (p == NULL)
    return FALSE;
  GstElement *r = gst_bin_get_by_name (GST_BIN (p), "r");
  GstPad *sink = gst_element_get_static_pad (r, "sink");
  GstPad *rsrc = gst_element_get_static_pad (r, "src");
  GstPad *src = gst_pad_new ("src", GST_PAD_SRC);
  g_mutex_init (&seen->lock);
  seen->frames = g_ptr_array_new_with_free_func (g_free);
  seen->cuda = strcmp (memory, "cuda") == 0;
  gst_pad_add_probe (rsrc, GST_PAD_PROBE_TYPE_BUFFER, seen_frame, seen, NULL);
  gboolean ok = gst_pad_link (src, sink) == GST_PAD_LINK_OK && gst_pad_set_active (src, TRUE) &&
      gst_element_set_state (p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE;
  GstSegment seg;
  gst_segment_init (&seg, GST_FORMAT_TIME);
  if (ok) {
    GstCaps *caps = gst_caps_from_string ("application/x-daqiri-packets");
    gst_pad_push_event (src, gst_event_new_stream_start ("flush"));
    gst_pad_push_event (src, gst_event_new_caps (caps));
    gst_caps_unref (caps);
    gst_pad_push_event (src, gst_event_new_segment (&seg));
  }
  for (guint i = 0; ok && i < bursts->len; i++) {
    if (i == at) {
      ok = gst_pad_push_event (src, gst_event_new_flush_start ()) &&
          gst_pad_push_event (src, gst_event_new_flush_stop (TRUE));
      g_mutex_lock (&seen->lock);
      *split = seen->frames->len;
      g_mutex_unlock (&seen->lock);
      gst_pad_push_event (src, gst_event_new_segment (&seg));
    }
    ok = ok &&
        gst_pad_push (src, gst_buffer_copy_deep (g_ptr_array_index (bursts, i))) == GST_FLOW_OK;
  }
  /* EOS: everything in flight is pushed before the event goes on */
  ok = ok && gst_pad_push_event (src, gst_event_new_eos ());
  GstStructure *st;
  g_object_get (r, "stats", &st, NULL);
  gst_structure_get_uint64 (st, "packets", packets);
  gst_structure_free (st);
  gst_element_set_state (p, GST_STATE_NULL);
  gst_pad_set_active (src, FALSE);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (rsrc);
  gst_object_unref (r);
  gst_object_unref (p);
  return ok;
}

/* The flush against memory=system: frames after it identical (the reset forgot everything,
 * frames and bursts in flight included); before it, memory=cuda may have fewer (bursts still
 * on the GPU at the flush are dropped with it), the same ones. */
static gboolean
flush_case (const Case *c)
{
  GPtrArray *bursts = make_bursts (c, 0x5eedf00du);
  Seen sys = { 0 }, gpu = { 0 };
  guint split_sys = 0, split_gpu = 0;
  guint64 pk_sys = 0, pk_gpu = 0;
  const guint at = bursts->len / 2;
  gboolean ok = flush_run (c, bursts, at, "system", &sys, &split_sys, &pk_sys) &&
      flush_run (c, bursts, at, "cuda", &gpu, &split_gpu, &pk_gpu);
  const guint post_sys = sys.frames ? sys.frames->len - split_sys : 0;
  const guint post_gpu = gpu.frames ? gpu.frames->len - split_gpu : 0;
  if (ok && (split_gpu > split_sys || post_gpu != post_sys || post_sys == 0 || pk_sys != pk_gpu))
    ok = FALSE;
  for (guint i = 0; ok && i < split_gpu; i++)
    ok = strcmp (g_ptr_array_index (sys.frames, i), g_ptr_array_index (gpu.frames, i)) == 0;
  for (guint i = 0; ok && i < post_sys; i++)
    ok = strcmp (g_ptr_array_index (sys.frames, split_sys + i),
             g_ptr_array_index (gpu.frames, split_gpu + i)) == 0;
  printf ("%s flush mid-stream (%s): before it %u frames on the CPU, %u on the GPU; after it "
          "%u and %u; packets %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT "\n",
      ok ? "PASS" : "FAIL", c->name, split_sys, split_gpu, post_sys, post_gpu, pk_sys, pk_gpu);
  for (guint k = 0; k < 2; k++) {
    Seen *s = k ? &gpu : &sys;
    if (s->frames) {
      g_ptr_array_unref (s->frames);
      g_mutex_clear (&s->lock);
    }
  }
  g_ptr_array_unref (bursts);
  return ok;
}

/* A lossless stream: bursts of `per_burst` packets in sequence order (16-bit sequence numbers
 * from 1000, payload-size bytes each). */
static GPtrArray *
lossless_bursts (guint n_bursts, guint per_burst, guint payload)
{
  GPtrArray *bursts = g_ptr_array_new_with_free_func ((GDestroyNotify) gst_buffer_unref);
  guint pkt_len = PAYLOAD_OFFSET + payload;
  guint32 seq = 1000;
  for (guint b = 0; b < n_bursts; b++) {
    guint8 *data = g_malloc0 ((gsize) per_burst * pkt_len);
    GstDaqiriPacket *d = g_new0 (GstDaqiriPacket, per_burst);
    for (guint i = 0; i < per_burst; i++, seq++) {
      guint8 *q = data + (gsize) i * pkt_len;
      q[0] = (guint8) (seq >> 8);
      q[1] = (guint8) seq;
      for (guint k = 0; k < payload; k++)
        q[PAYLOAD_OFFSET + k] = (guint8) (seq + k);
      d[i].offset = i * pkt_len;
      d[i].length = pkt_len;
    }
    GstBuffer *buf = gst_buffer_new_wrapped (data, (gsize) per_burst * pkt_len);
    gst_buffer_add_daqiri_packet_meta (buf, d, per_burst);
    GST_BUFFER_PTS (buf) = (GstClockTime) b * 1000000;
    g_ptr_array_add (bursts, buf);
    g_free (d);
  }
  return bursts;
}

/* A lossless stream to EOS on both backends, bursts of 10 packets over batches of 4 (a burst
 * moves the window past batches it completed): every frame is COMPLETE and nothing else (a
 * complete batch is never PUSHED, with window 1 neither), and the stats count every batch
 * complete and none pushed, flushed or skipped (the empty ids the window holds at EOS are
 * not skipped). */
static gboolean
lossless_case (guint window)
{
  gchar *props = g_strdup_printf ("seq-offset=0 seq-bits=16 packets-per-batch=4 "
                                  "payload-offset=8 payload-size=16 window=%u",
      window);
  const Case c = { "lossless", props, NULL, NULL, FALSE, 16, 4, 20, 10 };
  GPtrArray *bursts = lossless_bursts (c.n_bursts, c.max_burst, c.payload);
  const guint n_frames = c.n_bursts * c.max_burst / c.ppb;
  gchar *want_stats = g_strdup_printf ("batches=(guint64)%u, complete=(guint64)%u, "
                                       "flushed=(guint64)0, pushed=(guint64)0, skipped=(guint64)0,",
      n_frames, n_frames);
  gboolean ok = TRUE;
  for (guint k = 0; k < 2; k++) {
    const char *memory = k ? "cuda" : "system";
    Run run = { 0 };
    gboolean run_ok = run_case (&c, bursts, memory, &run) && run.n == n_frames &&
        strstr (run.stats, want_stats) != NULL;
    for (guint i = 0; run_ok && i < run.n; i++) {
      /* batch 250 holds sequence numbers 1000..1003 */
      guint8 want[4 * 16];
      for (guint s = 0; s < 4; s++)
        for (guint b = 0; b < 16; b++)
          want[s * 16 + b] = (guint8) (1000 + 4 * i + s + b);
      run_ok = run.offset[i] == 250 + i && strstr (run.meta[i], "flags=(uint)1,") &&
          gst_buffer_memcmp (run.frames[i], 0, want, sizeof want) == 0;
      if (!run_ok)
        printf ("  lossless window %u, memory=%s: frame %u: batch %" G_GUINT64_FORMAT ", %s\n",
            window, memory, i, run.offset[i], run.meta[i]);
    }
    printf ("%s lossless stream to EOS, window %u, memory=%s: %u / %u frames; %s\n",
        run_ok ? "PASS" : "FAIL", window, memory, run.n, n_frames,
        run.stats ? run.stats : "no stats");
    ok = ok && run_ok;
    run_clear (&run);
  }
  g_free (want_stats);
  g_free (props);
  g_ptr_array_unref (bursts);
  return ok;
}

int
main (int argc, char **argv)
{
  dq_gpu_test_start ("reorder-gpu", &argc, &argv);

  guint failed = 0, passed = 0;
  guint64 frames_total = 0, bytes_total = 0;
  for (guint ci = 0; ci < G_N_ELEMENTS (cases); ci++) {
    const Case *c = &cases[ci];
#ifdef DQ_TEST_EMU
    /* on the CUDA emulator there is no GstCuda (it needs the driver): those cases wait for a
     * GPU */
    if (c->gpu_tail) {
      if (!g_str_has_prefix (c->gpu_tail, "application/")) {
        printf ("SKIP %s: needs GstCuda and a GPU\n", c->name);
        continue;
      }
      /* generic frames that downstream takes only as GstCudaMemory, which the emulator (no
       * CUDA driver) cannot make: refused, saying why and what is allowed */
      GPtrArray *bursts = make_bursts (c, 0x5eed0000u + ci);
      Run gpu = { 0 };
      gboolean started = run_case (c, bursts, "cuda", &gpu);
      gboolean ok = !started && gpu.error &&
          strstr (gpu.error, "only as GstCudaMemory (memory:CUDAMemory)") &&
          strstr (gpu.error, "allowed here: memory:DaqiriCUDA");
      printf ("%s %s, refused without the CUDA driver: %s\n", ok ? "PASS" : "FAIL", c->name,
          gpu.error ? gpu.error : "no error");
      if (ok)
        passed++;
      else
        failed++;
      run_clear (&gpu);
      g_ptr_array_unref (bursts);
      continue;
    }
#endif
    GPtrArray *bursts = make_bursts (c, 0x5eed0000u + ci);
    Run sys = { 0 }, gpu = { 0 };
    gboolean ok = run_case (c, bursts, "system", &sys) && run_case (c, bursts, "cuda", &gpu);
    guint mismatches = 0;
    if (ok) {
      if (sys.n != gpu.n || sys.n == 0) {
        printf ("  %s: %u frames on the CPU, %u on the GPU\n", c->name, sys.n, gpu.n);
        ok = FALSE;
      }
      for (guint i = 0; ok && i < sys.n; i++) {
        GstMapInfo a, b;
        gst_buffer_map (sys.frames[i], &a, GST_MAP_READ);
        gst_buffer_map (gpu.frames[i], &b, GST_MAP_READ);
        gboolean same = a.size == b.size && memcmp (a.data, b.data, a.size) == 0 &&
            sys.pts[i] == gpu.pts[i] && sys.offset[i] == gpu.offset[i] &&
            strcmp (sys.meta[i], gpu.meta[i]) == 0;
        if (!same && mismatches++ < 3)
          printf ("  %s: frame %u (batch %" G_GUINT64_FORMAT ") differs: %s | %s\n", c->name, i,
              sys.offset[i], sys.meta[i], gpu.meta[i]);
        bytes_total += a.size;
        gst_buffer_unmap (sys.frames[i], &a);
        gst_buffer_unmap (gpu.frames[i], &b);
      }
      frames_total += sys.n;
      if (mismatches > 0)
        ok = FALSE;
      if (ok && strcmp (sys.stats, gpu.stats) != 0) {
        printf ("  %s: stats differ:\n    %s\n    %s\n", c->name, sys.stats, gpu.stats);
        ok = FALSE;
      }
      if (!gpu.feature_ok || !sys.feature_ok) {
        printf ("  %s: caps feature / memory type wrong\n", c->name);
        ok = FALSE;
      }
      if (c->gpu_tail && gpu.primary != 1) {
        printf (
            "  %s: the CUDA context announced is not the primary one (%d)\n", c->name, gpu.primary);
        ok = FALSE;
      }
      if (c->gpu_tail && !gpu.gstcuda_caps) {
        printf ("  %s: daqirireorder did not push memory:CUDAMemory caps\n", c->name);
        ok = FALSE;
      }
      if (!gpu.cpu_map_refused) {
        printf ("  %s: a CPU map of GPU memory succeeded\n", c->name);
        ok = FALSE;
      }
    }
    printf ("%s %s: %u frames, %u mismatches; %s\n", ok ? "PASS" : "FAIL", c->name, sys.n,
        mismatches, sys.stats ? sys.stats : "");
    if (ok)
      passed++;
    else
      failed++;
    run_clear (&sys);
    run_clear (&gpu);
    g_ptr_array_unref (bursts);
  }
  if (flush_case (&cases[0]))
    passed++;
  else
    failed++;
  for (guint window = 1; window <= 4; window += 3) {
    if (lossless_case (window))
      passed++;
    else
      failed++;
  }
  /* the ring itself in GPU memory: device memory (gpudirect=true: the emulated NIC copies
   * into it in batches, as a NIC's DMA would) or pinned host memory (gpudirect=false: the
   * emulated NIC writes it, the GPU reads across the bus); the kernels read it. The bursts
   * as daqiri's GPU memory, and as GstCudaMemory (asked for by a caps filter), which
   * GStreamer 1.22 cannot make: there the element must fail saying so */
  guint gmaj, gmin, gmic, gnano;
  gst_version (&gmaj, &gmin, &gmic, &gnano);
  const gboolean can_wrap = gmaj > 1 || (gmaj == 1 && gmin >= 24);
  for (guint variant = 0; variant < 4; variant++) {
    const gboolean gstcuda = variant == 2;
    const gboolean gpudirect = variant != 1;
    /* header-data split: the headers in host memory, the payloads in the GPU ring */
    const guint header_size = variant == 3 ? 42 : 0;
    const char *filter = gstcuda ? "application/x-daqiri-packets(memory:CUDAMemory)" : NULL;
    const char *feature = gstcuda ? "memory:CUDAMemory" : GST_CAPS_FEATURE_MEMORY_DAQIRI_CUDA;
#ifdef DQ_TEST_EMU
    if (gstcuda)
      continue; /* GstCuda needs the driver */
#endif
    guint nf_sys = 0, nf_gpu = 0;
    gchar *caps_sys = NULL, *caps_gpu = NULL, *err_sys = NULL, *err_gpu = NULL;
    gchar *ring_sys = NULL, *ring_gpu = NULL;
    EmuCheck ck_sys, ck_gpu;
    GByteArray *sys =
        emu_source_run ("system", FALSE, 0, NULL, &nf_sys, &caps_sys, &ring_sys, &err_sys, &ck_sys);
    GByteArray *gpu = emu_source_run (
        "cuda", gpudirect, header_size, filter, &nf_gpu, &caps_gpu, &ring_gpu, &err_gpu, &ck_gpu);
    /* where the rings were: device memory written by copies, or pinned host memory */
    const char *ring_want = gpudirect ? "gpu-copy" : "gpu-mapped-host";
    gboolean ring_ok = g_strcmp0 (ring_sys, "host") == 0 && g_strcmp0 (ring_gpu, ring_want) == 0;
    g_free (ring_sys);
    g_free (ring_gpu);
    if (gstcuda && !can_wrap) {
      gboolean ok = nf_gpu == 0 && err_gpu &&
          strstr (err_gpu, "gst_cuda_allocator_alloc_wrapped") &&
          strstr (err_gpu, "memory:CUDAMemory");
      printf ("%s daqirisrc memory=cuda ! memory:CUDAMemory on GStreamer %s: %s\n",
          ok ? "PASS" : "FAIL", gst_version_string (), err_gpu ? err_gpu : "no error");
      if (ok)
        passed++;
      else
        failed++;
      g_free (caps_sys);
      g_free (caps_gpu);
      g_free (err_sys);
      g_free (err_gpu);
      if (sys)
        g_byte_array_unref (sys);
      if (gpu)
        g_byte_array_unref (gpu);
      continue;
    }
    /* every frame has the PTS of the burst that brought its first packet; the GPU's bursts
     * (stride words, not split) go in groups while earlier ones are in flight: on the
     * emulator, where its events lag as a GPU's work does, fewer submissions than bursts */
    gboolean grouped = ck_gpu.submissions > 0 && ck_gpu.submissions <= ck_gpu.n_bursts;
#ifdef DQ_TEST_EMU
    if (g_getenv ("DQ_CUDA_EMU_EVENT_LAG") && header_size == 0)
      grouped = grouped && ck_gpu.submissions < ck_gpu.n_bursts;
#endif
    const gboolean runs_ok = ck_sys.pts_ok && ck_gpu.pts_ok && grouped;
    if (!runs_ok)
      printf ("  emu source: frame PTS %s / %s, %" G_GUINT64_FORMAT " submissions for %u bursts "
              "(memory=cuda)\n",
          ck_sys.pts_ok ? "right" : "wrong", ck_gpu.pts_ok ? "right" : "wrong", ck_gpu.submissions,
          ck_gpu.n_bursts);
    gboolean caps_ok =
        caps_gpu && strstr (caps_gpu, feature) && caps_sys && !strstr (caps_sys, "memory:");
    gboolean ok = sys && gpu && nf_sys == EMU_FRAMES && nf_gpu == EMU_FRAMES &&
        sys->len == gpu->len && memcmp (sys->data, gpu->data, sys->len) == 0 && caps_ok &&
        ring_ok && runs_ok;
    if (!ring_ok)
      printf ("  emu source: rings not in the memory asked for (%s wanted)\n", ring_want);
    /* the frames hold the generator's pattern: payload byte i of packet k is k + 46 + i */
    if (ok) {
      for (guint k = 0; k < EMU_FRAMES * EMU_PPB && ok; k++)
        for (guint i = 0; i < 18 && ok; i++)
          ok = sys->data[k * 18 + i] == (guint8) (k + 46 + i);
      if (!ok)
        printf ("  emu source: the frames do not hold the generator's bytes\n");
    }
    printf ("%s emu:gen -> daqirisrc memory=cuda gpudirect=%s header-size=%u (%s) -> "
            "daqirireorder memory=cuda: %u / %u frames, %u bytes, %" G_GUINT64_FORMAT
            " submissions for %u bursts; caps %s%s%s\n",
        ok ? "PASS" : "FAIL", gpudirect ? "true" : "false", header_size, feature, nf_gpu, nf_sys,
        sys ? sys->len : 0, ck_gpu.submissions, ck_gpu.n_bursts, caps_gpu ? caps_gpu : "none",
        err_gpu ? "; error: " : "", err_gpu ? err_gpu : "");
    g_free (caps_sys);
    g_free (caps_gpu);
    g_free (err_sys);
    g_free (err_gpu);
    if (ok)
      passed++;
    else
      failed++;
    frames_total += nf_gpu;
    bytes_total += gpu ? gpu->len : 0;
    if (sys)
      g_byte_array_unref (sys);
    if (gpu)
      g_byte_array_unref (gpu);
  }
  {
    guint checked = 0;
    gboolean ok = split_readback_case (2000, &checked);
    printf ("%s emu:gen -> daqirisrc memory=cuda header-size=42: %u / 2000 packets, headers in "
            "system memory and payloads copied back from GPU memory, every byte as generated\n",
        ok ? "PASS" : "FAIL", checked);
    if (ok)
      passed++;
    else
      failed++;
  }
  printf ("reorder-gpu: %u frames, %" G_GUINT64_FORMAT " bytes compared; %u passed, %u failed\n",
      (guint) frames_total, bytes_total, passed, failed);
  return failed ? 1 : 0;
}
