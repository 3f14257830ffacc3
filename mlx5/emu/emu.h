/* The emulated ConnectX: a software device that plays the NIC's side of the mlx5 rings,
 * byte for byte as the PRM lays them out, so that the host ring code (mlx5/rx.c, tx.c)
 * runs unchanged against it. It is what the "emu" engine drives (device=emu:NAME).
 *
 * A port is named; every user of the same name shares it (the first one creates it, the
 * last close destroys it). Its device thread executes what the host posted: it takes
 * SQ doorbells from the UAR page (checked against the doorbell record and the ring),
 * reads the WQEs they name, sends the frames onto the port's "cable", receives
 * frames from the cable (or injected by a test), steers them to RQs by the flow rules,
 * writes them into the strides of the RQ's current WQE and writes the CQEs. Every host
 * address it follows is checked against registered memory first (an IOMMU): an address
 * outside it gives an error CQE, never a stray read or write.
 *
 * Port configuration: the part of the device string after "emu:",
 *
 *   NAME[,KEY=VALUE]...        NAME: 1..32 of [A-Za-z0-9_.-]; each KEY at most once
 *
 *   rate=RATE       line rate: a number with k, m or g (10^3, 10^6, 10^9 bit/s), or
 *                   plain bit/s; 1m .. 1600g. Default 100g.
 *   freq=FREQ       device clock frequency: a number with hz, khz, mhz or ghz (plain
 *                   number: kHz, as the device_frequency_khz capability); 1mhz .. 10ghz.
 *                   Default 1000000khz (1 GHz: one tick per ns).
 *   clock=free|rt   free: CQE timestamps are raw ticks of a free-running counter (the
 *                   host converts them with the clock info). rt: the real-time format,
 *                   seconds << 32 | ns of CLOCK_REALTIME (needs freq=1ghz). Default free.
 *   mtu=68..9978    largest IP packet; frames up to MTU + 18 bytes (Ethernet header and
 *                   one VLAN tag; no FCS) are received and sent, longer ones are dropped
 *                   (received) or refused with an error CQE (sent). Default 1500.
 *   mac=XX:XX:XX:XX:XX:XX   default: 02:00:00 + three bytes hashed from NAME.
 *   peer=NAME|none  where the cable from this port's TX goes: the RX of port NAME (it
 *                   need not exist yet: frames sent while it does not are lost and
 *                   counted), or nowhere (the device then checks the DMA of the frames
 *                   it sends but reads none of their bytes). Default: this port's own RX
 *                   (loopback).
 *   pause=on|off    802.3x flow control on the cable: a frame whose receiving RQ has no
 *                   room holds the sender back instead of being dropped (to another port:
 *                   up to 256 frames wait at its input, then the sender waits). Frames
 *                   injected with emu_port_inject() ignore pause (a sender that does not
 *                   honour it); the generator follows its own `lossless`. Default on.
 *   overhead=0..64  wire bytes per frame besides the frame itself (default 24: preamble
 *                   and SFD 8, FCS 4, inter-frame gap 12).
 *   loss=EVERY[+PHASE]  the port's input loses frames PHASE, PHASE + EVERY, PHASE + 2 EVERY,
 *                   ... of those arriving (0-based; EVERY 2 .. 1000000, PHASE < EVERY;
 *                   default PHASE 0), counted in rx_fault_drops: a lossy path. Default none.
 *   inline=none|l2  l2: the port's minimum inline mode is L2, as on SR-IOV and e-switch
 *                   ports: a SEND WQE must carry the frame's first 18 bytes (all of a
 *                   shorter frame) inline in its Ethernet segment, else it completes with
 *                   a local QP operation error. Default none.
 *   gen=LEN         the built-in generator (emu_port_generate) feeds the port's RX with
 *                   LEN-byte UDP frames (60 .. MTU + 18), from the moment the port has
 *                   its first receive queue (steered), on the port's device thread:
 *                   traffic without a sender. Default: no generator. With it:
 *     gen-rate=PPS    frames per second (k, m, g allowed: 10m), or 0: as fast as the
 *                     device thread makes them (timestamps back to back at line rate).
 *                     Default 0.
 *     gen-count=N     frames in all (k, m, g allowed), 0: endless. Default 0.
 *     gen-lossless=on|off  a frame its RQ has no room for waits (on) or is dropped and
 *                     counted as rx_out_of_buffer (off, as on a wire). Default off.
 *
 * e.g. "emu:x", "emu:a,peer=b,rate=25g", "emu:b,peer=a,rate=25g,freq=156250khz",
 * "emu:g,gen=64,gen-rate=10m" (10 million 64-byte frames a second to whoever listens).
 * A second user of a port may repeat keys only with the same values.
 *
 * Line-rate model. A frame of L bytes (without FCS; shorter than 60 counts as 60, the
 * minimum frame) occupies W = 8 * (max (L, 60) + overhead) bits on the wire. Frames
 * that find the wire busy follow back to back: in a train that started at tick T0 (the
 * tick at which the wire was free and the first frame was there), frame k starts at
 *
 *     T_k = T0 + floor (S_k * f / R),   S_k = W_0 + ... + W_(k-1)
 *
 * ticks, f the clock frequency in Hz and R the rate in bit/s. T_k is frame k's
 * timestamp: its TX CQE's (when asked for) and its RX CQE's at the receiving port (the
 * cable adds no delay; the receiving port serializes what arrives from all sources the
 * same way). At 100 Gb/s and 1 GHz, 576-byte frames are 4800 bits, 48 ns apart; with
 * overhead=0 they are 4608 bits, 46.08 ns apart (the "46 ns" of raw frame bits).
 *
 * A frame is there for the wire when its SQ gets to it: the device executes an SQ at
 * once, so frames posted together are ready together (at the doorbell that gave the SQ
 * work, or behind the SQ's previous WQE); pause holds a frame back to when room came.
 * Send scheduling: a WAIT WQE on time (mlx5-dma.h; needs clock=rt) holds the SQ until the
 * port clock passes its time, and the SEND behind it is ready at that time (or when the
 * SQ got to the WAIT, if later). An eMPW WQE (mlx5-dma.h) is checked whole first (every
 * data segment through the IOMMU, every length) and then sends its frames one by one as
 * SENDs go. Packet pacing (Mlx5PortOps.sq_set_rate): the SQ's frames
 * pass a wire of the SQ's rate first (the same formula, no overhead, bits of frame only),
 * then the port's; the device executes a paced frame no more than 1 ms before that wire
 * lets it go, so a paced SQ holds the sender back as a real one does.
 *
 * Compressed completions: the device has the capabilities of a ConnectX-6 Dx or later
 * (basic and enhanced layouts, flow tag and stride index mini-CQEs), used when the host
 * creates a CQ with them (the engine key cqe-comp=, mlx5-engine.h). Runs of a pass's
 * packet completions of one WQE that differ only in length, flow tag, stride and time are
 * folded into sessions of up to 64; the title's time stands for the session's (emu-cq.c).
 */
#ifndef DAQIRI_MLX5_EMU_H
#define DAQIRI_MLX5_EMU_H

#include <glib.h>

#include "mlx5-port.h"

G_BEGIN_DECLS

typedef struct _EmuPort EmuPort;

/* The control path of the emulated device, for the mlx5 engine. */
extern const Mlx5PortOps emu_port_ops;

/* Opens (creates or shares) the port a "NAME[,KEY=VALUE]..." spec names. */
EmuPort *emu_port_open (const char *spec, GError **error);
void emu_port_close (EmuPort *port);

/* The open port called `name`, with a reference (emu_port_unref), or NULL. The
 * reference keeps the object, not the port open. */
EmuPort *emu_port_lookup (const char *name);
void emu_port_unref (EmuPort *port);

const char *emu_port_name (EmuPort *port);

/* Puts a frame on the port's receive wire, as if a peer had sent it now. Copies it.
 * FALSE when 65536 frames are already waiting (the frame is not queued). */
gboolean emu_port_inject (EmuPort *port, const guint8 *frame, guint len);

/* The built-in traffic generator: Ethernet/IPv4/UDP frames of `frame_len` bytes, from
 * 10.0.0.1:1000 (02:00:00:00:00:fe) to 10.0.0.2:5000 (the port's MAC), checksums
 * right, the big-endian sequence number first_seq + k at offset 42 (UDP payload) and
 * payload byte i of the frame = (k + i) & 0xff after it. Frames arrive `rate_pps`
 * per second, or back to back at line rate when 0; `count` frames (0: until stopped).
 * `lossless`: a frame whose RQ has no room waits instead of being dropped. Starting a
 * generator replaces a running one; count 0 with rate 0 and frame_len 0 stops it. */
typedef struct {
  guint frame_len; /* 60 .. MTU + 18 */
  guint64 count;
  guint64 rate_pps;
  guint32 first_seq;
  gboolean lossless;
} EmuGenConfig;

gboolean emu_port_generate (EmuPort *port, const EmuGenConfig *config, GError **error);
/* frames the current generator produced so far */
guint64 emu_port_generated (EmuPort *port);

/* Fault injection (for tests). */
/* the next n frames that arrive at the port are lost on the wire (counted) */
void emu_port_fault_rx_drop (EmuPort *port, guint n);
/* after `skip` more packets are written into an RQ, the next one completes with an
 * error CQE of `syndrome` instead (its strides are consumed, no data written) */
void emu_port_fault_rx_error (EmuPort *port, guint skip, guint8 syndrome);
/* after `skip` more SEND WQEs, the next one completes with an error CQE (not sent) */
void emu_port_fault_tx_error (EmuPort *port, guint skip, guint8 syndrome);
/* a stalled device executes nothing until un-stalled (doorbells, frames wait) */
void emu_port_fault_stall (EmuPort *port, gboolean stall);

/* Counters, like a NIC's: totals of the port since it was created. */
typedef struct {
  guint64 rx_packets_phy; /* frames that arrived on the wire */
  guint64 rx_bytes_phy;
  guint64 rx_packets; /* frames written into an RQ */
  guint64 rx_bytes;
  guint64 rx_out_of_buffer; /* dropped: the RQ had no posted WQE with room */
  guint64 rx_steer_miss;    /* dropped: no flow rule and no catch-all took it */
  guint64 rx_oversize;      /* dropped: longer than MTU + 18, or shorter than 14 */
  guint64 rx_fault_drops;   /* dropped by emu_port_fault_rx_drop() and loss= */
  guint64 rx_fillers;       /* filler CQEs written */
  guint64 rx_cqe_errors;    /* error CQEs written on RQs (flushes not counted) */
  guint64 rx_flushed;       /* flush-error CQEs: WQEs completed unused by an RQ in ERR */
  guint64 rx_cq_overruns;   /* dropped: the RQ's CQ was full */
  guint64 tx_packets;       /* frames sent */
  guint64 tx_bytes;
  guint64 tx_cqes;          /* TX CQEs written (errors included) */
  guint64 tx_cqe_errors;    /* (flushes not counted) */
  guint64 tx_flushed;       /* flush-error CQEs: WQEs an SQ in ERR completed unsent */
  guint64 tx_no_link;       /* frames sent while the cable led nowhere */
  guint64 tx_waits;         /* WAIT WQEs passed (send scheduling) */
  guint64 tx_empw_wqes;     /* eMPW WQEs executed to their end */
  guint64 tx_first_start;   /* ticks: when the first frame sent went on the wire */
  guint64 tx_last_start;    /* ticks: when the latest frame sent went on the wire */
  guint64 tx_csum_l3;       /* IPv4 header checksums computed */
  guint64 tx_csum_l4;       /* TCP/UDP checksums computed */
  guint64 pause_waits;      /* times a sender waited for RX room (pause) */
  guint64 iommu_faults;     /* DMA outside registered memory refused */
  guint64 dma_write_errors; /* copies into device memory that failed */
  guint64 dma_read_errors;  /* copies out of device memory that failed (the WQE fails) */
  guint64 tx_device_reads;  /* payload segments sent from device memory (copies out) */
  guint64 doorbell_errors;  /* SQ doorbells ignored: a UAR write naming another SQ or
                            * no posted WQE, a doorbell record past the ring or moved
                            * without a UAR write */
} EmuCounters;

void emu_port_counters (EmuPort *port, EmuCounters *counters);

/* Device time: ticks of the port's clock now, and its parameters. */
guint64 emu_port_ticks (EmuPort *port);
guint64 emu_port_freq_hz (EmuPort *port);
guint64 emu_port_rate_bps (EmuPort *port);

/* Waits until the device is idle: nothing posted is left unexecuted, no frame waits
 * to be received, the generator is done; or the device is stalled (nothing will
 * happen). FALSE on timeout (e.g. a sender held back by pause). */
gboolean emu_port_wait_idle (EmuPort *port, gint64 timeout_ns);

/* Toeplitz hash (the RSS hash function) of `data` with the 40-byte key the emulated
 * device uses: mlx5-rss.h's, the one the hardware path programs. Exposed for tests. */
guint32 emu_toeplitz (const guint8 *data, guint len);

G_END_DECLS

#endif /* DAQIRI_MLX5_EMU_H */
