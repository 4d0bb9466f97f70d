/* SPDX-License-Identifier: Apache-2.0 */
/* libntpu: the nanoTPU host library.
 *
 * Opens a device (the C golden model, the Verilator RTL, or later a board),
 * moves data to and from its memories, and runs matrix multiplications on it,
 * tiling any shape onto the N x N systolic array. This header is the API
 * reference; docs/isa.md and docs/protocol.md describe the device underneath.
 *
 * Conventions (docs/decisions/0027-api-1.0.md; docs/api.md is the guide):
 * - Names are ntpu_<object>_<action>: ntpu_model_train_step, ntpu_program_run,
 *   ntpu_npy_read. The device is the library's own object: its calls are
 *   ntpu_<action> (ntpu_open, ntpu_matmul, ntpu_fence). Types are ntpu_<object>,
 *   macros and enum values NTPU_*.
 * - Every fallible call returns an ntpu_status. NTPU_OK is 0, errors are negative.
 * - Detail: ntpu_last_error(h) is one line on the most recent failure, where h is
 *   the device the failing call worked on (itself, or through a model, quantized
 *   model or program of that device; ntpu_open fills *out also when it fails), or
 *   NULL for a call that involves no device (the files of data.h, safetensors.h
 *   and ntpu_npy_*, the parsers of optim.h). The status says what kind of failure
 *   it was; the text is for people.
 * - A handle (ntpu_device) is used by one thread at a time; different handles are
 *   independent. The library's only state outside a handle is the per-thread text
 *   that ntpu_last_error(NULL) returns.
 * - The caller owns every buffer it passes in; the library copies what it needs
 *   before returning. What the library hands out has exactly one release call:
 *   ntpu_close for a device (what ntpu_open opened), ntpu_<object>_free for every
 *   other object (model, qmodel, program, tensor, dataset, safetensors). Each
 *   takes NULL as a no-op.
 * - The library never aborts, exits or prints.
 * - Matrices are dense, row-major (C order), without padding between rows.
 */
#ifndef NTPU_NTPU_H
#define NTPU_NTPU_H

#include <stddef.h>
#include <stdint.h>

#include "ntpu/export.h"
#include "ntpu/numerics.h"
#include "ntpu/protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ status */

typedef enum ntpu_status {
    NTPU_OK = 0,
    NTPU_ERR_INVALID_ARG = -1, /* a bad argument; nothing was sent, device state unchanged       */
    NTPU_ERR_NO_DEVICE = -2,   /* no such device, or this build cannot reach it; no handle usable  */
    NTPU_ERR_IO = -3,          /* the link failed and did not recover: corrupted and lost frames
                                * are sent again by the library itself (docs/protocol.md), so
                                * this means 32 recoveries in a row got nothing through, or the
                                * transport itself failed. Commands since the last successful
                                * call may or may not have run; every call fails so until
                                * ntpu_reset_link succeeds                                       */
    NTPU_ERR_TIMEOUT = -4,     /* the device did not answer in time; as NTPU_ERR_IO              */
    NTPU_ERR_DEVICE = -5,      /* the device rejected a command (ntpu_last_error names the status
                                * and the command); that command did nothing, the link is in sync
                                * and the rest of the call's commands ran                        */
    NTPU_ERR_NO_MEMORY = -6,   /* host allocation failed; nothing was sent for the failing step  */
    NTPU_ERR_UNSUPPORTED = -7, /* the device lacks what was asked (e.g. a dtype); nothing sent    */
    NTPU_ERR_FILE = -8,        /* a file could not be opened, read or written                     */
    NTPU_ERR_FORMAT = -9,      /* a file is malformed or of a kind the library does not read      */
} ntpu_status;

/* A short English name for a status ("invalid argument", ...). Never NULL; an
 * unknown value gives "unknown status". */
NTPU_API const char *ntpu_status_str(ntpu_status s);

/* Name of a device status byte (NTPU_DEV_*): "OK", "ERR_CRC", ... Never NULL. */
NTPU_API const char *ntpu_dev_status_str(unsigned dev_status);

/* ------------------------------------------------------------------ devices */

typedef struct ntpu_device ntpu_device; /* opaque; one thread at a time per handle */

/* The library's version (also the pkg-config file's). */
#define NTPU_LIB_VERSION "1.0.0"

/* The longest device string ntpu_open takes (a vsim:trace= path can be long). */
#define NTPU_DEVICE_STRING_MAX 4096

/* Opens a device. `device` is a device string:
 *   "ref[:n=N,ub=R,wb=R,acc=R,os=R,pm=R,payload=B,novec=1,notra=1]"
 *                                          the C golden model, in-process; the
 *                                          options override its configuration:
 *                                          n 2..64, ub and acc 1..65536 rows,
 *                                          wb n..65536 rows, os (optimizer-state
 *                                          memory) and pm (program memory)
 *                                          0..65536 rows, 0 leaving out the
 *                                          memory and its feature (ADAM,
 *                                          PROGRAM) as the boards' cores do,
 *                                          payload 73..65535 bytes; novec=1 /
 *                                          notra=1 leave out the vector unit /
 *                                          TRANSPOSE_A (as the iCEBreaker's core)
 *   "vsim[:trace=FILE]"                    the Verilator model of the RTL (with
 *                                          vsim's faster simulation forms,
 *                                          held to rtl/ cycle by cycle)
 *   "vsim:rtl"                             the same core built from rtl/ alone,
 *                                          exactly what synthesis reads (slower)
 *   "vsim:board=B[,config=C,trace=FILE,ber=P,drop=P,seed=N]"
 *                                          board B's top (icebreaker, ulx3s;
 *                                          config C of its board.mk, e.g. n8)
 *                                          simulated from rtl/ with its
 *                                          bitstream's parameters, behind its
 *                                          UART pins at bit level,
 *                                          optionally with bit errors and lost
 *                                          bytes (docs/boards.md)
 *   "ftdi[:serial=S,board=B,baud=R,interface=A|B]"
 *                                          a board behind an FTDI chip over
 *                                          libusb (iCEBreaker, ULX3S; docs/boards.md)
 *   "usb[:serial=S]"                       a board behind a microcontroller
 *                                          running firmware/ over libusb
 *                                          (pico-ice; docs/boards.md)
 * Every kind also takes faults=RATE[,fault_seed=S] (a transport that flips and
 * drops link bytes, docs/protocol.md) and timeout_ms=T (how long the link waits
 * for a reply).
 * NULL or "" means the NTPU_DEVICE environment variable if it is set and not
 * empty, else "vsim".
 * On NTPU_OK, *out is a ready handle (the ID block has been read). On failure,
 * *out is still a handle that carries only the reason (read it with
 * ntpu_last_error(*out); every other call on it fails with NTPU_ERR_NO_DEVICE)
 * and must be released with ntpu_close -- unless the failure is
 * NTPU_ERR_NO_MEMORY for the handle itself, or out is NULL: then *out is NULL
 * and the reason is in ntpu_last_error(NULL).
 * Errors: NTPU_ERR_INVALID_ARG (out NULL, unknown device kind or option),
 * NTPU_ERR_NO_DEVICE, NTPU_ERR_IO, NTPU_ERR_TIMEOUT, NTPU_ERR_NO_MEMORY,
 * NTPU_ERR_UNSUPPORTED (the device speaks an unknown protocol version). */
NTPU_API ntpu_status ntpu_open(const char *device, ntpu_device **out);

/* Closes the device and frees the handle. Replies not yet read are dropped.
 * NULL is a no-op. */
NTPU_API void ntpu_close(ntpu_device *dev);

/* One line describing the most recent failure on this handle ("" if none yet),
 * or with dev NULL the most recent failure in this thread of a call that
 * involves no device (see the conventions above). The text stays valid until
 * the next call on the handle (for NULL: the next such call in the thread).
 * Never NULL. Successful calls do not clear it. */
NTPU_API const char *ntpu_last_error(const ntpu_device *dev);

/* Identity and configuration of the device, read from its ID block at open. */
typedef struct ntpu_info {
    unsigned version_major, version_minor; /* protocol version (1.0) */
    unsigned rows, cols;                   /* array size N x N */
    unsigned dtypes;                       /* NTPU_DTYPE_INT8_BIT | NTPU_DTYPE_BF16_BIT */
    unsigned features;                     /* NTPU_FEATURE_*_BIT: TRANSPOSE (LOAD_W transposed),
                                            * TRANSPOSE_A (1.1), VECTOR (1.1), OPTIM (1.3),
                                            * PROGRAM (1.4), ADAM (1.4) */
    unsigned max_payload;                  /* largest frame payload, bytes */
    uint32_t ub_rows, wb_rows, acc_rows;   /* memory sizes in rows of N lanes */
    uint32_t pm_rows;                      /* program memory rows of 2N bytes (1.4, NTPU_FEATURE_PROGRAM_BIT);
                                            * 0 without programs */
    uint32_t os_rows;                      /* optimizer-state rows (1.4, NTPU_FEATURE_ADAM_BIT); 0: none */
    uint32_t clock_hz;                     /* 0 in simulation */
    unsigned platform;                     /* 0 golden model, 1 RTL */
    const char *platform_name;             /* "golden model", "RTL", ... (static) */
    char device[128];                      /* the device string that was opened (a longer one cut, ending "...") */
} ntpu_info;

/* Fills *out. Sends nothing. Errors: NTPU_ERR_INVALID_ARG (NULL argument),
 * NTPU_ERR_NO_DEVICE (a handle whose open failed). */
NTPU_API ntpu_status ntpu_get_info(const ntpu_device *dev, ntpu_info *out);

/* ------------------------------------------------------------------ low level
 *
 * One call per device command. Commands that return no data (write_rows,
 * load_w, matmul_tile) are queued and pipelined: they return once the command
 * is sent, without waiting for the device's reply. The replies are checked by
 * the next call that waits (ntpu_read_rows, ntpu_fence, ntpu_read_status,
 * ntpu_read_counters, ntpu_matmul); a device error in any of them is reported
 * there as NTPU_ERR_DEVICE. Arguments are checked against the ID block before
 * anything is sent, so a correct program sees no device errors. */

/* Writes `rows` rows to memory `mem` (NTPU_MEM_UB, NTPU_MEM_WB, NTPU_MEM_ACC, NTPU_MEM_OS)
 * starting at row `addr`. data: rows x N lanes, row-major, host byte order;
 * uint16_t lanes for UB and WB (bf16 bits, or int8 in the low byte), uint32_t
 * lanes for ACC (int32 or fp32 bits). Split into as many frames as needed.
 * Queued (see above). Errors: NTPU_ERR_INVALID_ARG (bad mem, range past the
 * memory's end, data NULL with rows > 0), NTPU_ERR_IO and NTPU_ERR_TIMEOUT (while
 * reading older replies to make room), NTPU_ERR_NO_MEMORY. */
NTPU_API ntpu_status ntpu_write_rows(ntpu_device *dev, enum ntpu_mem mem, uint32_t addr, uint32_t rows,
                                     const void *data);

/* Reads `rows` rows of memory `mem` from row `addr` into data (layout as for
 * ntpu_write_rows). Waits for the data; sees every earlier command's effect.
 * Errors: as ntpu_write_rows, and NTPU_ERR_DEVICE (this or an earlier queued
 * command was rejected). On error, data is unspecified. */
NTPU_API ntpu_status ntpu_read_rows(ntpu_device *dev, enum ntpu_mem mem, uint32_t addr, uint32_t rows, void *data);

/* LOAD_W: loads the N x N weight tile at WB rows wb_addr .. wb_addr+N-1 as the
 * array's pending weights, transposed if `transpose` is non-zero (needs
 * NTPU_FEATURE_TRANSPOSE_BIT). Queued. Errors: NTPU_ERR_INVALID_ARG (range),
 * NTPU_ERR_UNSUPPORTED (transpose without the feature), link errors. */
NTPU_API ntpu_status ntpu_load_w(ntpu_device *dev, uint32_t wb_addr, int transpose);

typedef enum ntpu_dtype {
    NTPU_DTYPE_INT8 = 0, /* int8 x int8 -> int32, wrapping */
    NTPU_DTYPE_BF16 = 1, /* bf16 x bf16 -> fp32 (docs/numerics.md) */
} ntpu_dtype;

/* MATMUL: for each of `rows` UB rows from ub_addr, multiplies the row (N lanes)
 * by the active weights and writes (or, with accumulate non-zero, adds to) the N
 * lanes of the ACC row at the same offset from acc_addr. See docs/isa.md.
 * Queued. Errors: NTPU_ERR_INVALID_ARG (bad dtype, rows 0 or > 65535, range),
 * NTPU_ERR_UNSUPPORTED (dtype not on this device), link errors. */
NTPU_API ntpu_status ntpu_matmul_tile(ntpu_device *dev, ntpu_dtype dtype, uint32_t ub_addr, uint32_t acc_addr,
                                      uint32_t rows, int accumulate);

/* MATMUL with TRANSPOSE_A (protocol 1.1): row m of the stream is column m mod N
 * of the N x N block of UB rows from ub_addr + (m / N) * stride; rows must be a
 * multiple of N. With an activation X stored as k-tiles of bp rows, ub_addr =
 * x + j*N and stride = bp stream the rows of X^T for batch block j: the weight
 * gradient X^T.dY without a host transpose. Queued. Without
 * NTPU_FEATURE_TRANSPOSE_A_BIT (e.g. the iCEBreaker) the library reads each block,
 * writes it back transposed, runs a plain MATMUL on it and restores it: the same
 * results bit for bit, not queued. Errors: as ntpu_matmul_tile. */
NTPU_API ntpu_status ntpu_matmul_tile_transpose_a(ntpu_device *dev, ntpu_dtype dtype, uint32_t ub_addr, uint32_t stride,
                                                  uint32_t acc_addr, uint32_t rows, int accumulate);

/* Vector unit (protocol 1.1, docs/isa.md). All queued; errors: NTPU_ERR_INVALID_ARG
 * (a range past a memory's end, reserved flags), link errors. On a device without
 * the unit (NTPU_FEATURE_VECTOR_BIT clear) the library does the same work on the
 * host, bit for bit: it reads the operands (waiting for earlier commands, so an
 * earlier device error shows here as NTPU_ERR_DEVICE), computes, and queues the
 * write of the result; NTPU_ERR_NO_MEMORY if the host runs out.
 * ACT: for `rows` ACC rows from src: x (+ ACC[aux] with NTPU_ACT_BIAS) (ReLU with
 * NTPU_ACT_RELU), written by the flags' output field: NTPU_OUT_UB / NTPU_OUT_WB
 * (rounded to bf16), NTPU_OUT_ACC (fp32), NTPU_OUT_INT8 (int32 mode, requantized
 * with ACC[aux+1] multipliers and ACC[aux+2] shifts, to UB). */
NTPU_API ntpu_status ntpu_vec_act(ntpu_device *dev, unsigned flags, uint32_t src, uint32_t dst, uint32_t rows,
                                  uint32_t aux);

/* RELU_GRAD: ACC[src + r] where the bf16 UB[mask + r] is > 0, else +0, written
 * per `out` (NTPU_OUT_UB, NTPU_OUT_WB or NTPU_OUT_ACC). */
NTPU_API ntpu_status ntpu_vec_relu_grad(ntpu_device *dev, unsigned out, uint32_t src, uint32_t dst, uint32_t rows,
                                        uint32_t mask);

/* COLSUM: ACC[dst] = (accumulate ? ACC[dst] : +0) + the fp32 sum of ACC rows
 * src .. src+rows-1, in ascending order. */
NTPU_API ntpu_status ntpu_vec_colsum(ntpu_device *dev, uint32_t src, uint32_t dst, uint32_t rows, int accumulate);

/* OPTIM (protocol 1.3, feature NTPU_FEATURE_OPTIM_BIT): for `rows` ACC rows of
 * fp32 parameters at p and gradients at g, with lr, wd (and mu) in the ACC rows
 * aux, aux+1 (aux+2), one value per lane:
 *   flags 0 (SGD):                  p = p - lr * (g + wd * p)
 *   NTPU_OPTIM_MOMENTUM (momentum): s = mu * s + (g + wd * p); p = p - lr * s,
 *                                   s being the `rows` ACC rows right after p's
 * each operation one fp32 rounding (ntpu_optim_f32, docs/isa.md). Queued.
 * Errors: NTPU_ERR_INVALID_ARG (reserved flags, a range past ACC's end),
 * NTPU_ERR_UNSUPPORTED (the device has no OPTIM; nothing was sent), link errors. */
NTPU_API ntpu_status ntpu_vec_optim(ntpu_device *dev, unsigned flags, uint32_t p, uint32_t g, uint32_t rows,
                                    uint32_t aux);

/* OPTIM ADAM (protocol 1.4, feature NTPU_FEATURE_ADAM_BIT): Adam (decoupled 0)
 * or AdamW (1) on `rows` ACC rows of fp32 parameters at p with gradients at g;
 * the first moments are the OS rows s .. s+rows-1, the second moments the
 * `rows` OS rows after them; the NTPU_ADAM_AUX_ROWS constant rows at aux hold
 * NTPU_ADAM_K_* (numerics.h), one value per lane. Each element is
 * ntpu_adam_f32 (docs/isa.md). Queued.
 * Errors: NTPU_ERR_INVALID_ARG (a range past ACC's or OS's end),
 * NTPU_ERR_UNSUPPORTED (the device has no ADAM; nothing was sent), link errors. */
NTPU_API ntpu_status ntpu_vec_optim_adam(ntpu_device *dev, int decoupled, uint32_t p, uint32_t g, uint32_t rows,
                                         uint32_t aux, uint32_t s);

/* MATMUL's convolution addressing (protocol 1.5, feature NTPU_FEATURE_CONV_BIT;
 * docs/isa.md, "Version 1.5"). A feature map lives in UB as channel tiles:
 * pixel-major, the mb samples of a micro-batch innermost, N channels a row. */
typedef enum ntpu_conv_mode {
    NTPU_CONV_FORWARD = 0,     /* CONV: row m = sample m % mb of output pixel (oy, ox) = m / mb (out_w wide)
                                * reads input pixel (oy*stride + dy, ox*stride + dx), a zero row outside */
    NTPU_CONV_TRANSPOSED = 1,  /* CONV with CONV_T: reads input pixel ((oy + dy)/stride, (ox + dx)/stride)
                                * where both divide exactly, else a zero row (the backward's dX) */
    NTPU_CONV_WEIGHT_GRAD = 2, /* CONV with TRANSPOSE_A: rows/N blocks in the order (ky, kx, t), t innermost
                                * over CT = rows/(N*k*k) channel tiles: block (ky, kx, t) is the N x N UB block
                                * at ub_addr + t*tile_stride + ((dy+ky)*in_w + dx+kx)*mb, read transposed
                                * (zero outside); also needs NTPU_FEATURE_TRANSPOSE_A_BIT */
} ntpu_conv_mode;

/* One CONV MATMUL's geometry; the fields a mode does not name are ignored. */
typedef struct ntpu_conv_addr {
    ntpu_conv_mode mode;
    uint32_t ub_addr;     /* the input map (tile 0 for NTPU_CONV_WEIGHT_GRAD) */
    uint32_t acc_addr;    /* the result: rows ACC rows from here */
    uint32_t rows;        /* rows of the stream, 0..65535 */
    unsigned in_h, in_w;  /* the input map's size in pixels, 1..255 */
    unsigned mb;          /* samples per pixel (rows of a pixel), 1..255 */
    unsigned out_w;       /* forward / transposed: output map width, 1..255 */
    unsigned stride;      /* forward / transposed: 1..255 */
    unsigned k;           /* weight gradient: kernel size, 1..255 */
    uint32_t tile_stride; /* weight gradient: UB rows from one channel tile to the next, 0..65535 */
    int dy, dx;           /* offsets: -128..127 (forward, transposed), -32768..32767 (weight gradient) */
} ntpu_conv_addr;

/* MATMUL with the addressing *c (see ntpu_conv_addr): rows of activations
 * gathered from a feature map in UB, times the active weights, into (or with
 * accumulate non-zero, added to) ACC rows c->acc_addr .. + c->rows - 1. Queued.
 * Errors: NTPU_ERR_INVALID_ARG (bad dtype or mode, a field out of its range, a
 * zero size, weight-gradient rows not a multiple of N*k*k, a range past UB's or
 * ACC's end as the device computes it), NTPU_ERR_UNSUPPORTED (the device has no
 * CONV, or no TRANSPOSE_A for the weight gradient, or not the dtype; nothing
 * was sent), link errors. */
NTPU_API ntpu_status ntpu_matmul_tile_conv(ntpu_device *dev, ntpu_dtype dtype, const ntpu_conv_addr *c, int accumulate);

/* POOL (protocol 1.5, feature NTPU_FEATURE_POOL_BIT): pooling with k x k
 * windows, stride k, of one channel tile of a micro-batch: the map has
 * in_h*in_w*mb rows (pixel-major, samples innermost), the pooled map
 * (in_h/k)*(in_w/k)*mb (rows and columns past the last whole window are not
 * read). mode NTPU_POOL_MODE_MAX: UB map src -> UB dst, argmax (wy*k + wx) to UB
 * aux; NTPU_POOL_MODE_AVG: the bf16 mean, ACC[aux] holding fp32(1/k^2) per lane;
 * NTPU_POOL_MODE_MAX_GRAD / NTPU_POOL_MODE_AVG_GRAD: fp32 ACC pooled gradients
 * src -> ACC map dst (+0 where no window reads), aux as the forward's. Ranges in
 * one memory must not overlap. Queued. Errors: NTPU_ERR_INVALID_ARG (mode, k 0
 * or over in_h or in_w, mb 0, a field over 255, overlap, a range past a memory's
 * end), NTPU_ERR_UNSUPPORTED (the device has no POOL; nothing was sent), link
 * errors. */
NTPU_API ntpu_status ntpu_vec_pool(ntpu_device *dev, unsigned mode, uint32_t src, uint32_t dst, uint32_t aux,
                                   unsigned in_h, unsigned in_w, unsigned mb, unsigned k);

/* Waits until every earlier command has finished on the device and every reply
 * has been checked. Errors: NTPU_ERR_DEVICE (a queued command was rejected),
 * NTPU_ERR_IO, NTPU_ERR_TIMEOUT. */
NTPU_API ntpu_status ntpu_fence(ntpu_device *dev);

/* The device's STATUS block (docs/isa.md). */
typedef struct ntpu_device_status {
    unsigned busy;       /* 1 if an accepted command is still executing */
    unsigned last_error; /* last non-OK device status sent (NTPU_DEV_*), 0 if none */
    uint32_t errors;     /* replies sent with a non-OK status */
    uint32_t commands;   /* commands executed with status OK */
    uint32_t dropped;    /* bytes dropped while hunting for a frame start */
} ntpu_device_status;

/* Reads the STATUS block into *out (after the effects of every earlier command).
 * Errors: NTPU_ERR_INVALID_ARG, NTPU_ERR_DEVICE (from an earlier queued
 * command; *out is still filled), NTPU_ERR_IO, NTPU_ERR_TIMEOUT. */
NTPU_API ntpu_status ntpu_read_status(ntpu_device *dev, ntpu_device_status *out);

/* The device's performance counters (docs/isa.md, COUNTERS). Only `macs` is
 * the same on every backend; the golden model estimates the others. */
typedef struct ntpu_counters {
    uint64_t cycles;       /* clock cycles */
    uint64_t array_busy;   /* cycles in which a row entered the array */
    uint64_t macs;         /* multiply-accumulates: rows x N x N per MATMUL */
    uint64_t stall_link;   /* idle, waiting for command bytes */
    uint64_t stall_weight; /* a MATMUL waiting for its weight tile */
    uint64_t stall_hazard; /* waiting for earlier work to drain */
    uint64_t stall_tx;     /* reply bytes held back by the host */
    uint64_t rx_bytes;     /* bytes the device received */
    uint64_t tx_bytes;     /* bytes the device sent */
} ntpu_counters;

/* Reads the counters into *out; with clear non-zero the device zeroes them
 * after reading. Errors: as ntpu_read_status. */
NTPU_API ntpu_status ntpu_read_counters(ntpu_device *dev, ntpu_counters *out, int clear);

/* Array utilization of a counter snapshot: macs / (N * N * cycles), at most 1
 * for counters that make sense; 0 when cycles is 0 or an argument is NULL. */
NTPU_API double ntpu_counters_utilization(const ntpu_device *dev, const ntpu_counters *c);

/* Resynchronizes the link (docs/protocol.md): flushes whatever frame the device
 * may be part-way through, then asks it with SYNC which SEQ it expects next.
 * Commands still unanswered are abandoned: they may or may not have run. Use it
 * after NTPU_ERR_IO or NTPU_ERR_TIMEOUT, when the library's own recovery (it
 * sends lost frames again) gave up; every call fails with NTPU_ERR_IO until
 * this succeeds.
 * Errors: NTPU_ERR_IO, NTPU_ERR_TIMEOUT, NTPU_ERR_INVALID_ARG. */
NTPU_API ntpu_status ntpu_reset_link(ntpu_device *dev);

/* Host-side traffic totals since open (all frames, both directions). */
typedef struct ntpu_link_stats {
    uint64_t tx_bytes, rx_bytes;   /* bytes sent to / received from the device */
    uint64_t tx_frames, rx_frames; /* frames sent / replies received */
    uint64_t resyncs;              /* explicit resynchronizations: at open, ntpu_reset_link */
    uint64_t recoveries;           /* faults recovered from: SYNC exchanges after a bad or missing reply */
    uint64_t retransmits;          /* frames sent again after a recovery */
} ntpu_link_stats;

/* Fills *out. Sends nothing. Errors: NTPU_ERR_INVALID_ARG, NTPU_ERR_NO_DEVICE. */
NTPU_API ntpu_status ntpu_get_link_stats(const ntpu_device *dev, ntpu_link_stats *out);

/* ------------------------------------------------------------------ matmul */

/* C = A . B on the device, for any M, K, N >= 1 (N here is C's column count,
 * not the array size).
 *   NTPU_DTYPE_INT8: A int8_t[M][K], B int8_t[K][N] -> C int32_t[M][N], exact
 *                    with two's-complement wrap-around (as NumPy's int32 matmul).
 *   NTPU_DTYPE_BF16: A float[M][K], B float[K][N], each rounded to bf16 (RNE,
 *                    ntpu_bf16_from_f32) on the way in -> C float[M][N], equal
 *                    bit for bit to: acc = +0.0f; for k ascending:
 *                    acc = ntpu_mac_bf16(acc, A[m][k], B[k][n]).
 * The library tiles, pads and pipelines; it uses (and overwrites) all of the
 * device's UB, WB and ACC, and the array's weights: a model on the same device
 * first saves what only the device holds, and writes its weights again at its
 * next use (nn.h). C must not overlap A or B.
 * Errors: NTPU_ERR_INVALID_ARG (NULL pointer, a size of 0, bad dtype, sizes whose
 * product overflows size_t), NTPU_ERR_UNSUPPORTED (dtype not on this device),
 * NTPU_ERR_NO_MEMORY, NTPU_ERR_DEVICE, NTPU_ERR_IO, NTPU_ERR_TIMEOUT. On any error
 * C is unspecified. */
NTPU_API ntpu_status ntpu_matmul(ntpu_device *dev, ntpu_dtype dtype, const void *A, const void *B, void *C, size_t M,
                                 size_t K, size_t N);

/* As ntpu_matmul with NTPU_DTYPE_BF16, for inputs already in bf16 (uint16_t bit
 * patterns): A uint16_t[M][K], B uint16_t[K][N] -> C float[M][N]. */
NTPU_API ntpu_status ntpu_matmul_bf16(ntpu_device *dev, const uint16_t *A, const uint16_t *B, float *C, size_t M,
                                      size_t K, size_t N);

/* ------------------------------------------------------------------ .npy files */

typedef enum ntpu_elem {
    NTPU_ELEM_INT8 = 0,    /* '<i1' / '|i1' */
    NTPU_ELEM_INT32 = 1,   /* '<i4' */
    NTPU_ELEM_FLOAT32 = 2, /* '<f4' */
    NTPU_ELEM_UINT16 = 3,  /* '<u2': raw bf16 bit patterns */
} ntpu_elem;

/* Size in bytes of one element; 0 for an unknown value. */
NTPU_API size_t ntpu_elem_size(ntpu_elem e);

/* A 1-D or 2-D dense array, C order, host byte order. For ndim 1, shape[1] is 1. */
typedef struct ntpu_tensor {
    ntpu_elem elem;
    int ndim;        /* 1 or 2 */
    size_t shape[2]; /* rows, columns */
    void *data;      /* shape[0] * shape[1] elements */
} ntpu_tensor;

/* Reads a NumPy .npy file (format 1.0, 2.0 or 3.0; little-endian or
 * byte-order-free dtype; C order; 1-D or 2-D; int8, int32, float32 or uint16).
 * On NTPU_OK, *out owns freshly allocated data: release it with
 * ntpu_tensor_free. On failure *out is zeroed and ntpu_last_error(NULL) says in
 * one line, naming the file, what is wrong with it.
 * Errors: NTPU_ERR_INVALID_ARG, NTPU_ERR_FILE (cannot open or read),
 * NTPU_ERR_FORMAT (bad magic, truncated, bad header, fortran_order, big-endian,
 * unsupported dtype or rank, data shorter than the shape), NTPU_ERR_NO_MEMORY. */
NTPU_API ntpu_status ntpu_npy_read(const char *path, ntpu_tensor *out);

/* Writes t to path as .npy (format 1.0, little-endian, C order), replacing the
 * file whole: path is either untouched or complete, as a fresh temporary file
 * beside it is renamed over it (links followed; a device, FIFO or pipe is
 * written in place). Errors (detail in ntpu_last_error(NULL)):
 * NTPU_ERR_INVALID_ARG (bad tensor, empty path), NTPU_ERR_FILE,
 * NTPU_ERR_NO_MEMORY. */
NTPU_API ntpu_status ntpu_npy_write(const char *path, const ntpu_tensor *t);

/* Frees t->data and zeroes *t. NULL and a zeroed tensor are no-ops. */
NTPU_API void ntpu_tensor_free(ntpu_tensor *t);

#ifdef __cplusplus
}
#endif

#endif
