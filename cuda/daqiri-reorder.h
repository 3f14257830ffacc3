/* daqiri-reorder.h — packet bursts to frames: reorder, gather, convert, packetize; 10-bit 4:2:2
 * pgroups unpacked to planar video.
 *
 * Plain C ABI. Nothing here includes CUDA or GStreamer: CUDA objects cross this boundary as
 * void pointers (cudaStream_t, cudaEvent_t, device pointers). The CPU twin (DqReorderCpu,
 * dq_gather_cpu, dq_packetize_cpu) is always built; the GPU API (DqReorderGpu, dq_cuda_*) exists
 * only in builds with CUDA (meson option -Dcuda), and then gives bit-identical results.
 *
 * Packets and batches
 * -------------------
 * A burst is one contiguous memory region plus an array of packet descriptors (DqReorderPacket,
 * binary identical to the engine's DqPacket and to GstDaqiriPacket). A packet's sequence number
 * is the big-endian bit string seq_bit_width bits long that starts seq_bit_offset bits into the
 * frame (bit 0 is the most significant bit of frame byte 0); the batch field likewise. Its
 * payload is payload_size bytes at payload_offset.
 *
 * Batch id and slot:
 *   - without a batch field: the sequence number is unwrapped to a 64-bit count S (see below);
 *     batch = S / packets_per_batch, slot = S % packets_per_batch.
 *   - with a batch field: the field is unwrapped to a 64-bit batch id; slot = seq % packets_per_batch.
 * Unwrapping: a w-bit value k becomes the 64-bit value nearest to the head H (the largest unwrapped
 * value of the packets before this burst) that has the same low w bits, taking the value ahead
 * when two are equally near: k' = H + d, d in (-2^(w-1), 2^(w-1)]. The first packet ever seen
 * starts at its own value. So batch ids keep growing across wraps of the field, and the field
 * must be wide enough that one burst never moves it by half its range (the window is limited to
 * half the range for the same reason).
 *
 * The window. Batches are keyed by batch id (never by arrival count, so a lost packet never
 * shifts later batches). The window holds the ids [B, B + window); the first packet ever seen
 * sets B to its batch. For each burst (one push/submit), in two passes:
 *   1. every packet whose batch is inside the window as it stood at the start of the burst is
 *      placed, whatever its position in the burst; a packet of a batch below B is late (counted,
 *      dropped);
 *   2. then the packets beyond the window, in arrival order: one below the (moved) window is late;
 *      one at id x >= B + window moves the window to B = x - window + 1 first: each batch that
 *      leaves the window and holds packets is emitted (flag PUSHED, missing slots zero-filled),
 *      batches that never got a packet are skipped (counted);
 *   3. at the end of the burst, while batch B has every slot filled it is emitted (COMPLETE) and
 *      B moves on by one. Batches are emitted in id order, always.
 * Placing: the first packet (in arrival order) for a slot wins; later ones are duplicates
 * (counted, dropped). A packet shorter than max(payload_offset + payload_size, the bytes holding
 * the fields), or whose descriptor lies outside the burst memory, is short (counted, dropped): no
 * byte outside a packet's own length is ever read.
 *
 * Frames. The caller owns the frame memory (packets_per_batch * output payload bytes each) and
 * hands frames over with add_frame (a FIFO). At the start of every call and after every move of
 * the window, each batch of the window that has neither a frame nor packets takes the next free
 * frame, in batch-id order; an emitted batch leaves with its frame (returned in DqReorderBatch).
 * A batch that receives packets while it has no frame keeps counting them, drops their data, and
 * is emitted with DQ_BATCH_NO_FRAME and frame NULL. DQ_FLUSH_RESET gives every unused frame back.
 *
 * The GPU context runs each submission as one kernel on its stream (reorder-kernels.cuh); results
 * (DqReorderCompletion) are polled in submission order; the burst memory and the frames of the
 * emitted batches may be used once the submission's completion has been polled. On sm_90 and
 * later a reorder submission that follows another on the stream starts while the previous one
 * finishes (programmatic dependent launch) and reads its descriptors, header fields and payloads
 * then: a caller that writes burst memory or descriptors with its own kernel on the
 * context's stream must make that kernel complete first (an event wait, or a synchronize),
 * not merely enqueue it before the submission.
 *
 * Conversions (input type -> output type, elements packed contiguously, no scaling):
 *   int4 (two per byte, high nibble first, two's complement), int8, int16, int32 (little-endian
 *   for DQ_BYTE_ORDER_HOST, big-endian for DQ_BYTE_ORDER_NETWORK) -> fp16, bf16 (round to nearest
 *   even through float, as __float2half_rn / __float2bfloat16_rn; fp16 overflows to +-inf), fp32
 *   (round to nearest even), fp64, int32. A trailing partial element is ignored. Both types SAME:
 *   the payload bytes are copied. int32 -> int32 in host order is a plain copy too.
 */
#ifndef DAQIRI_REORDER_H
#define DAQIRI_REORDER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DQ_REORDER_MAX_WINDOW 64u
#define DQ_REORDER_MAX_FRAME_BYTES 65536u /* packet bytes a field or payload may reach */
#define DQ_REORDER_MAX_PPB (1u << 24)     /* packets per batch */

/* Element types; the codes are those of the reference kernels. */
typedef enum {
  DQ_ELEM_SAME = 0,
  DQ_ELEM_INT4 = 1,
  DQ_ELEM_INT8 = 2,
  DQ_ELEM_INT16 = 3,
  DQ_ELEM_INT32 = 4,
  DQ_ELEM_FP16 = 5,
  DQ_ELEM_BF16 = 6,
  DQ_ELEM_FP32 = 7,
  DQ_ELEM_FP64 = 8,
} DqElemType;

typedef enum {
  DQ_BYTE_ORDER_HOST = 0,    /* multi-byte input elements are little-endian */
  DQ_BYTE_ORDER_NETWORK = 1, /* big-endian */
} DqByteOrder;

typedef struct {
  uint32_t seq_bit_offset; /* from frame byte 0, MSB first */
  uint32_t seq_bit_width;  /* 1..32 */
  uint32_t batch_bit_offset;
  uint32_t batch_bit_width;   /* 0: no batch field (batch = seq / packets_per_batch); else 1..32 */
  uint32_t packets_per_batch; /* slots per frame, 1..DQ_REORDER_MAX_PPB */
  uint32_t payload_offset;    /* bytes from frame start */
  uint32_t payload_size;      /* input payload bytes per packet, >= 1 */
  DqElemType input_type;      /* SAME, INT4, INT8, INT16, INT32 */
  DqElemType output_type;     /* SAME, FP16, BF16, FP32, FP64, INT32 */
  DqByteOrder byte_order;
  uint32_t window; /* batches open at once, 1..DQ_REORDER_MAX_WINDOW; 0: default */
} DqReorderConfig;

/* Binary identical to DqPacket (engine/daqiri-engine.h) and GstDaqiriPacket. */
typedef struct {
  uint32_t offset; /* of the first byte, from the burst's data */
  uint32_t length; /* bytes present */
  uint32_t flow_id;
  uint32_t flags;
  uint64_t timestamp; /* ns */
} DqReorderPacket;

typedef enum {
  DQ_BATCH_COMPLETE = 1u << 0, /* every slot arrived */
  DQ_BATCH_PUSHED = 1u << 1,   /* emitted because a packet beyond the window moved it */
  DQ_BATCH_FLUSHED = 1u << 2,  /* emitted by a flush (timeout, end of stream, reset) */
  DQ_BATCH_NO_FRAME = 1u << 3, /* no free frame: counted only, frame is NULL */
} DqBatchFlags;

typedef struct {
  uint64_t batch_id;        /* unwrapped, see above */
  void *frame;              /* the frame given with add_frame, or NULL (NO_FRAME) */
  void *frame_user;         /* its user pointer */
  uint64_t first_timestamp; /* timestamp of the first packet (in arrival order) placed in it */
  uint32_t packets;         /* slots filled */
  uint32_t missing;         /* slots zero-filled: packets_per_batch - packets */
  uint32_t duplicates;      /* packets dropped because their slot was already filled */
  uint32_t late;            /* late packets since the previous emitted batch (see below) */
  uint32_t short_packets;   /* short/malformed packets since the previous emitted batch */
  uint32_t flags;           /* DqBatchFlags */
} DqReorderBatch;
/* late and short_packets of a batch count the packets dropped as late or short in the
 * submissions since the one that emitted the previous batch, this one's included; so the sum over
 * all emitted batches plus DqReorderStats' pending ones gives the totals. */

typedef struct {
  uint64_t packets;  /* descriptors submitted */
  uint64_t accepted; /* placed: the first packet of its slot */
  uint64_t duplicates;
  uint64_t late;
  uint64_t short_packets;
  uint64_t batches;       /* emitted */
  uint64_t complete;      /* emitted with every slot */
  uint64_t partial;       /* emitted with missing slots */
  uint64_t skipped;       /* batch ids the window passed that never got a packet */
  uint64_t no_frame;      /* emitted without a frame */
  uint64_t missing_slots; /* zero-filled slots over all emitted batches */
  uint64_t pending_late;  /* late/short not yet reported in a DqReorderBatch */
  uint64_t pending_short;
} DqReorderStats;

typedef struct {
  uint32_t initialized;            /* 0 until the first valid packet (and after a reset) */
  uint32_t open;                   /* batches in the window holding packets */
  uint64_t base;                   /* B: the oldest batch id still accepted */
  uint64_t oldest_id;              /* the oldest batch holding packets (valid when open > 0) */
  uint64_t oldest_first_timestamp; /* its first packet's timestamp: the element's timeout clock */
} DqReorderWindow;

typedef struct {
  void *data;
  void *user;
} DqReorderFrame;

typedef enum {
  DQ_FLUSH_OLDEST = 0, /* emit the oldest batch holding packets (timeout), then any complete
                          * batches after it */
  DQ_FLUSH_ALL = 1,    /* emit every batch holding packets (end of stream); the window moves
                          * past them and keeps its place */
  DQ_FLUSH_RESET = 2,  /* emit every batch holding packets, give back every frame not
                          * emitted (in `released`), and forget the stream: the next packet
                          * starts a new window */
} DqFlushMode;

typedef enum {
  DQ_JOB_REORDER = 0,
  DQ_JOB_FLUSH,
  DQ_JOB_GATHER,
  DQ_JOB_PACKETIZE,
} DqJobKind;

/* What one push/flush (CPU) or one submission (GPU) produced. Pointers stay valid until the
 * next call on the same context. */
typedef struct {
  void *user; /* the submission's user pointer (GPU); NULL on the CPU */
  DqJobKind kind;
  uint32_t n_batches;
  const DqReorderBatch *batches; /* emitted, in batch-id order */
  uint32_t n_released;
  const DqReorderFrame *released; /* frames given back unused (DQ_FLUSH_RESET) */
  uint32_t job_short;             /* short packets in this submission (all job kinds) */
  DqReorderStats stats;           /* running totals after this submission */
  DqReorderWindow window;         /* after this submission */
} DqReorderCompletion;

/* ---- configuration ---------------------------------------------------------------------- */

/* Defaults: seq = 32 bits at bit 0, no batch field, 1 packet per batch, payload 1 byte at
 * offset 4, SAME/SAME, host order, window 0 (auto). */
void dq_reorder_config_init (DqReorderConfig *cfg);

/* 0 when cfg is usable; else -1 and, if msg, a sentence naming the field, its value and what is
 * allowed. */
int dq_reorder_config_validate (const DqReorderConfig *cfg, char *msg, size_t msg_len);

/* For a valid cfg: */
uint32_t dq_reorder_window (const DqReorderConfig *cfg);     /* effective window */
uint32_t dq_reorder_max_window (const DqReorderConfig *cfg); /* largest allowed */
int dq_reorder_converts (const DqReorderConfig *cfg);        /* 1: element conversion */
uint32_t dq_reorder_output_payload_size (const DqReorderConfig *cfg);
uint64_t dq_reorder_frame_size (const DqReorderConfig *cfg); /* ppb * output payload */
uint32_t dq_reorder_min_packet_length (const DqReorderConfig *cfg);
const char *dq_elem_type_name (DqElemType t);

/* ---- CPU twin (system memory; the oracle of the GPU path) -------------------------------- */

typedef struct _DqReorderCpu DqReorderCpu;

DqReorderCpu *dq_reorder_cpu_new (const DqReorderConfig *cfg, char *msg, size_t msg_len);
void dq_reorder_cpu_free (DqReorderCpu *ctx);
/* Queue a free frame (dq_reorder_frame_size bytes). */
int dq_reorder_cpu_add_frame (DqReorderCpu *ctx, void *frame, void *user);
/* Process one burst now. data: the burst memory (data_size bytes). 0 on success. */
int dq_reorder_cpu_push (DqReorderCpu *ctx, const void *data, size_t data_size,
    const DqReorderPacket *pkts, uint32_t n, DqReorderCompletion *out);
int dq_reorder_cpu_flush (DqReorderCpu *ctx, DqFlushMode mode, DqReorderCompletion *out);

/* Arrival-order gather: payload of packet i -> out + i * output payload size (converted as cfg
 * says); a short packet's slot is zero-filled and counted. Returns the number of short packets. */
uint32_t dq_gather_cpu (const DqReorderConfig *cfg, const void *data, size_t data_size,
    const DqReorderPacket *pkts, uint32_t n, void *out);

/* Packetize: the inverse of reorder. cfg must copy (types SAME). For slot s of the frame, packet s
 * is written at out + s * packet_stride: the header template, zeros up to the payload, the payload
 * (frame bytes [s * payload_size, (s + 1) * payload_size)), the sequence number
 * (batch_id * packets_per_batch + s) mod 2^seq_bit_width and, if configured, the batch field
 * batch_id mod 2^batch_bit_width at their bit offsets; then the IPv4 total length and header
 * checksum and the UDP length (checksum 0) when their offsets are given. */
#define DQ_PACKETIZE_NONE 0xffffffffu
typedef struct {
  const uint8_t *header;  /* copied to the start of every packet */
  uint32_t header_len;    /* <= payload_offset, <= DQ_PACKETIZE_MAX_HEADER */
  uint32_t ipv4_offset;   /* IPv4 header offset in the packet, or DQ_PACKETIZE_NONE */
  uint32_t udp_offset;    /* UDP header offset, or DQ_PACKETIZE_NONE */
  uint32_t packet_stride; /* bytes between packet starts in out */
  uint32_t min_length;    /* zero-pad packets to this length (60 for Ethernet), or 0 */
} DqPacketizeTemplate;
#define DQ_PACKETIZE_MAX_HEADER 256u

/* 0 if tmpl suits cfg, else -1 and a message. */
int dq_packetize_validate (
    const DqReorderConfig *cfg, const DqPacketizeTemplate *tmpl, char *msg, size_t msg_len);
uint32_t dq_packetize_packet_length (const DqReorderConfig *cfg, const DqPacketizeTemplate *tmpl);
/* Writes packets_per_batch packets (out_size >= ppb * packet_stride) and, if pkts, their
 * descriptors. 0 on success, -1 if tmpl/out_size do not fit. */
int dq_packetize_cpu (const DqReorderConfig *cfg, const DqPacketizeTemplate *tmpl,
    const void *frame, uint64_t batch_id, void *out, size_t out_size, DqReorderPacket *pkts);
/* The same for slots first .. first+n-1 only: packet j (slot first + j) at out + j * stride,
 * descriptor j in pkts[j]. -1 also when the range leaves the frame. */
int dq_packetize_cpu_range (const DqReorderConfig *cfg, const DqPacketizeTemplate *tmpl,
    const void *frame, uint64_t batch_id, uint32_t first, uint32_t n, void *out, size_t out_size,
    DqReorderPacket *pkts);

/* Two-segment sends (a packet's payload sent from the frame where it lies): whether every
 * byte of the packets other than the payload lies before it (the sequence and batch fields,
 * no padding after the payload), so that a packet is its first payload_offset bytes
 * followed by the payload. 1 if so. */
int dq_packetize_split_ok (const DqReorderConfig *cfg, const DqPacketizeTemplate *tmpl);
/* Those first payload_offset bytes of slots first .. first+n-1 (as dq_packetize_cpu_range
 * writes them), packet j's at out + j * header_stride. -1 unless dq_packetize_split_ok, or
 * when the range leaves the frame or out. */
int dq_packetize_headers_cpu (const DqReorderConfig *cfg, const DqPacketizeTemplate *tmpl,
    uint64_t batch_id, uint32_t first, uint32_t n, void *out, size_t out_size,
    uint32_t header_stride);

/* ---- 10-bit 4:2:2 video: pgroups -> planar I422_10LE ----------------------------------------
 *
 * SMPTE ST 2110-20 / RFC 4175 carry 10-bit 4:2:2 (YCbCr-4:2:2, depth 10) as pgroups: 5 bytes per
 * 2 pixels holding Cb, Y0, Cr, Y1, four 10-bit values packed big-endian, MSB first:
 *   byte0 = Cb[9:2]   byte1 = Cb[1:0] Y0[9:4]   byte2 = Y0[3:0] Cr[9:6]   byte3 = Cr[5:0] Y1[9:8]
 *   byte4 = Y1[7:0]
 * (GStreamer's UYVP.) A picture of width x height (width even) is height rows of width / 2
 * pgroups, rows contiguous: dq_uyvp_picture_size bytes, as the reorder frame holds them when
 * packets carry the rows' bytes in order.
 *
 * Unpacking writes planar I422_10LE: Y (width x height), U = Cb and V = Cr (width / 2 x
 * height), each sample 16-bit little-endian holding the 10-bit value in its low bits (the high
 * 6 bits zero). Row r of a plane starts at plane + r * pitch; only the 2 * (samples per row)
 * bytes of a row are written, never a pitch's padding. Plane pointers and pitches need no
 * alignment. width or height 0: nothing to do. */

/* Bytes of a packed picture: width / 2 * 5 * height (width even). */
uint64_t dq_uyvp_picture_size (uint32_t width, uint32_t height);
/* 0 when the sizes can be unpacked (width even, each pitch at least its row of samples), else
 * -1 and, if msg, a sentence naming the value and what is allowed. */
int dq_unpack_uyvp_validate (uint32_t width, uint32_t height, size_t y_pitch, size_t u_pitch,
    size_t v_pitch, char *msg, size_t msg_len);
/* The CPU twin: src is dq_uyvp_picture_size (width, height) bytes. 0, or -1 when
 * dq_unpack_uyvp_validate refuses the sizes or a pointer is NULL (nothing written). */
int dq_unpack_uyvp_to_i422_10 (const uint8_t *src, uint32_t width, uint32_t height, uint8_t *y,
    size_t y_pitch, uint8_t *u, size_t u_pitch, uint8_t *v, size_t v_pitch);

/* Bit helpers (MSB-first big-endian bit strings), exposed for tests and generators. */
uint32_t dq_bits_get (const uint8_t *p, uint32_t bit_offset, uint32_t width);
void dq_bits_set (uint8_t *p, uint32_t bit_offset, uint32_t width, uint32_t value);
/* Scalar conversions exactly as the GPU does them. */
uint16_t dq_float_to_half_rn (float f);
uint16_t dq_float_to_bf16_rn (float f);

/* ---- GPU (builds with CUDA only) -------------------------------------------------------- */

typedef struct _DqReorderGpu DqReorderGpu;

typedef struct {
  uint32_t max_packets;  /* largest burst per submission; 0: 4096 */
  uint32_t max_inflight; /* submissions in flight; 0: 4 */
  uint32_t max_frames;   /* capacity of the free-frame queue; 0: 256 */
  int device;            /* CUDA device ordinal; -1: the current one */
  void *stream;          /* cudaStream_t to work on; NULL: the context makes its own */
} DqReorderGpuOptions;

/* Error codes of the GPU calls (the message: dq_reorder_gpu_error). */
#define DQ_REORDER_OK 0
#define DQ_REORDER_ERROR (-1) /* CUDA failed or bad arguments */
#define DQ_REORDER_BUSY (-2)  /* every submission slot holds an unpolled completion: poll */

/* Whether a CUDA device can be used. 1 yes; 0 no, and msg says why ("no CUDA device: ..."). */
int dq_cuda_available (char *msg, size_t msg_len);
/* One line about the device (name, SMs, memory, clocks). */
void dq_cuda_device_info (char *buf, size_t len);
void *dq_cuda_malloc (size_t size);      /* device memory, NULL on failure */
void *dq_cuda_malloc_host (size_t size); /* pinned, mapped host memory */
void dq_cuda_free (void *dev_ptr);
void dq_cuda_free_host (void *host_ptr);
/* 1 when host memory at p is pinned and mapped at the same address for the device (as
 * dq_cuda_malloc_host's is), so that kernels read it across the bus; else 0. The CUDA
 * emulator answers the same for its own dq_cuda_malloc_host allocations. */
int dq_cuda_host_mapped (const void *p);
int dq_cuda_memcpy (void *dst, const void *src, size_t size); /* synchronous, any direction */
/* Synchronous copy of `height` rows of `width` bytes between pitched buffers, any direction. */
int dq_cuda_memcpy2d (
    void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width, size_t height);
int dq_cuda_memset (void *dev_ptr, int value, size_t size);
/* A dma-buf fd (Linux) covering `size` bytes of device memory at dev_ptr, for a NIC to reach
 * it (GPUDirect RDMA by dma-buf): the whole pages around it, dev_ptr at *offset into the
 * dma-buf. The caller closes *fd. 0, or -1 (dq_cuda_last_error says why: no support in the
 * driver or kernel, or not on the emulator). */
int dq_cuda_export_dmabuf (void *dev_ptr, size_t size, int *fd, uint64_t *offset);
/* Waits for the work queued on a stream (cudaStream_t; NULL: the default stream). */
int dq_cuda_stream_synchronize (void *stream);
/* The unpack of dq_unpack_uyvp_to_i422_10 (same bytes, bit for bit) as a kernel queued on
 * `stream` (cudaStream_t; NULL: the default stream): src and the planes are device-accessible
 * memory. Asynchronous: the planes are written once the stream has run it (e.g. after
 * dq_cuda_stream_synchronize). 0, or -1 when the sizes are refused, a pointer is NULL or the
 * launch fails (dq_cuda_last_error says which). */
int dq_cuda_unpack_uyvp_to_i422_10 (const void *src, uint32_t width, uint32_t height, void *y,
    size_t y_pitch, void *u, size_t u_pitch, void *v, size_t v_pitch, void *stream);
const char *dq_cuda_last_error (void);

DqReorderGpu *dq_reorder_gpu_new (
    const DqReorderConfig *cfg, const DqReorderGpuOptions *opts, char *msg, size_t msg_len);
/* Waits for the work in flight, then frees everything (not the frames, not the caller's stream). */
void dq_reorder_gpu_free (DqReorderGpu *ctx);
const char *dq_reorder_gpu_error (DqReorderGpu *ctx);
int dq_reorder_gpu_add_frame (DqReorderGpu *ctx, void *dev_frame, void *user);
/* Enqueue one burst. dev_data: device-accessible burst memory; pkts: host descriptors, copied
 * before the call returns. The burst memory may be reused once the submission's completion has
 * been polled (or once dq_reorder_gpu_event of it has completed). */
int dq_reorder_gpu_submit (DqReorderGpu *ctx, const void *dev_data, size_t data_size,
    const DqReorderPacket *pkts, uint32_t n, void *user);
/* The same with the descriptors already in device memory (dev_pkts, read by the kernels). */
int dq_reorder_gpu_submit_device (DqReorderGpu *ctx, const void *dev_data, size_t data_size,
    const DqReorderPacket *dev_pkts, uint32_t n, void *user);
/* One burst whose packets all take the timestamp `timestamp` (their descriptors' own are not
 * read): pkts in host memory (staged, as dq_reorder_gpu_submit), or with pkts_readable where
 * the kernels read them until the completion is polled (device memory, or pinned host memory
 * mapped for the device: dq_cuda_host_mapped), with no copy on the host. */
int dq_reorder_gpu_submit_stamped (DqReorderGpu *ctx, const void *dev_data, size_t data_size,
    const DqReorderPacket *pkts, int pkts_readable, uint32_t n, uint64_t timestamp, void *user);
/* One burst whose descriptors the kernels read packed where they lie, a third of a
 * DqReorderPacket's bytes: packed[i] = offset | (uint64_t) length << 32, in device memory or
 * pinned host memory mapped for the device, read until the completion is polled; every packet
 * takes `timestamp`. */
int dq_reorder_gpu_submit_packed (DqReorderGpu *ctx, const void *dev_data, size_t data_size,
    const uint64_t *packed, uint32_t n, uint64_t timestamp, void *user);
/* The same with 4-byte stride words, a sixth of a DqReorderPacket's bytes, for bursts whose
 * packets all start on strides of 1 << shift bytes from dev_data: words[i] = offset >> shift |
 * length << DQ_REORDER_WORD_LENGTH_SHIFT (offsets up to DQ_REORDER_WORD_INDEX_MASK strides,
 * lengths up to DQ_REORDER_WORD_MAX_LENGTH bytes, shift at most DQ_REORDER_WORD_MAX_SHIFT). */
#define DQ_REORDER_WORD_LENGTH_SHIFT 18
#define DQ_REORDER_WORD_INDEX_MASK ((1u << DQ_REORDER_WORD_LENGTH_SHIFT) - 1)
#define DQ_REORDER_WORD_MAX_LENGTH ((1u << (32 - DQ_REORDER_WORD_LENGTH_SHIFT)) - 1)
#define DQ_REORDER_WORD_MAX_SHIFT 14
int dq_reorder_gpu_submit_words (DqReorderGpu *ctx, const void *dev_data, size_t data_size,
    const uint32_t *words, uint32_t shift, uint32_t n, uint64_t timestamp, void *user);
/* Several bursts of one buffer (a receive ring) as one submission, taken in run order as one
 * burst of all their packets: run k's n stride words (as dq_reorder_gpu_submit_words, in any
 * host memory, copied before the call returns) count their strides from dev_data + offset (a
 * multiple of 1 << shift, at most data_size), and its packets take its timestamp. A stride
 * index that, counted from dev_data, passes DQ_REORDER_WORD_INDEX_MASK takes that index: outside
 * the data, as data_size is at most DQ_REORDER_WORD_INDEX_MASK << shift. 1 to
 * DQ_REORDER_MAX_RUNS runs, max_packets packets in all. */
#define DQ_REORDER_MAX_RUNS 32
typedef struct {
  const uint32_t *words;
  uint32_t n;
  uint64_t offset;    /* bytes from dev_data to the stride the run's indexes count from */
  uint64_t timestamp; /* ns: every packet of the run */
} DqReorderWordRun;
int dq_reorder_gpu_submit_word_runs (DqReorderGpu *ctx, const void *dev_data, size_t data_size,
    const DqReorderWordRun *runs, uint32_t n_runs, uint32_t shift, void *user);
int dq_reorder_gpu_flush (DqReorderGpu *ctx, DqFlushMode mode, void *user);
/* Gather (as dq_gather_cpu) into dev_out; job_short of the completion counts short packets. */
int dq_reorder_gpu_gather (DqReorderGpu *ctx, const void *dev_data, size_t data_size,
    const DqReorderPacket *pkts, uint32_t n, void *dev_out, void *user);
/* Packetize (as dq_packetize_cpu) one device frame into dev_out; descriptors, if wanted, are
 * computed on the host by dq_packetize_cpu's rule (pkts[s].offset = s * stride). */
int dq_reorder_gpu_packetize (DqReorderGpu *ctx, const DqPacketizeTemplate *tmpl,
    const void *dev_frame, uint64_t batch_id, void *dev_out, size_t out_size, void *user);
/* Next completion in submission order: 1 one returned, 0 none ready (wait = 0), -1 error. A
 * reorder or flush submission is done once a word its kernel writes last into mapped memory
 * says so: no call into the CUDA runtime while it is not (its event is still asked every 64th
 * such poll, so that a failed kernel is reported); wait = 1 synchronizes on the submission's
 * event. */
int dq_reorder_gpu_poll (DqReorderGpu *ctx, int wait, DqReorderCompletion *out);
/* Submissions not yet polled. */
uint32_t dq_reorder_gpu_inflight (DqReorderGpu *ctx);
void *dq_reorder_gpu_stream (DqReorderGpu *ctx); /* cudaStream_t */
void *dq_reorder_gpu_event (DqReorderGpu *ctx);  /* cudaEvent_t after the last submission */

#ifdef __cplusplus
}
#endif

#endif /* DAQIRI_REORDER_H */
