/* SPDX-License-Identifier: Apache-2.0 */
/* The "ftdi" transport (host/src/transport/transport_ftdi.c) against a fake libusb: with
 * fakeusb_core.c (the transfers, the event loop, unplugging) this file defines every libusb
 * function the transport calls, and behind them a
 * simulated FT2232H (or FT231X) that packs what the "board" sends into 512-byte (64) bulk-IN
 * packets with two status bytes each (a status-only packet every 1 ms latency
 * period when there is nothing), completes transfers on an event loop like
 * libusb's, and can be unplugged. The board behind it is either a loopback
 * FIFO or the golden model (sim/ref), so the second half of the test runs
 * ntpu_open("ftdi") and a matmul through the whole library.
 *
 * Built and run by ftdi_fakeusb.sh, linked against libntpu.a but not against
 * libusb. No real USB is touched. Exit status 0 when every check passes. */
#include <libusb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fakeusb_checks.h"
#include "fakeusb_core.h"
#include "internal.h"
#include "ntpu/ntpu.h"
#include "ntpu_ref.h"

/* ------------------------------------------------------------------ the fake chip */

enum fk_mode { FK_NONE, FK_INITFAIL, FK_LISTFAIL, FK_DENIED, FK_BUSY, FK_TWO, FK_ECHO, FK_REF, FK_SILENT };

#define FK_LOG 64

static int fk_mode;
/* The chip: an FT2232H at high speed (512-byte packets, two channels), or an FT231X (64, one). */
static uint16_t fk_pid = 0x6010;
static size_t fk_packet = 512;
static struct libusb_device fk_devs[2] = {{0}, {1}};
static uint8_t fk_line = 0x60; /* line status of the next packet with data */
static struct {
    uint8_t *buf;
    size_t len, cap;
} fk_fifo; /* loopback: bytes written, waiting to be read back */
static ntpu_ref *fk_ref;
typedef struct fk_req {
    uint8_t rt, req;
    uint16_t value, index;
} fk_req;
static fk_req fk_ctrl[FK_LOG];
static size_t fk_nctrl;
static int fk_detaches, fk_attaches;
/* Whether a transfer on endpoint ep was submitted; read under the lock (the transport's thread submits). */
static int fk_seen(int ep);
static size_t fk_written; /* bytes the board received */

static int fk_seen(int ep)
{
    pthread_mutex_lock(&fk_mu);
    int seen = fk_eps_seen[ep];
    pthread_mutex_unlock(&fk_mu);
    return seen;
}

static void fk_reset_chip(int mode, uint16_t pid)
{
    pthread_mutex_lock(&fk_mu);
    fk_mode = mode;
    fk_pid = pid;
    fk_packet = pid == 0x6015 ? 64 : 512;
    fk_core_reset();
    fk_line = 0x60;
    free(fk_fifo.buf);
    memset(&fk_fifo, 0, sizeof fk_fifo);
    ntpu_ref_free(fk_ref);
    fk_ref = mode == FK_REF ? ntpu_ref_new(NULL) : NULL;
    fk_nctrl = 0;
    fk_detaches = fk_attaches = 0;
    fk_written = 0;
    pthread_mutex_unlock(&fk_mu);
}

static void fk_set_line(uint8_t line)
{
    pthread_mutex_lock(&fk_mu);
    fk_line = line;
    pthread_mutex_unlock(&fk_mu);
}

static void fk_reset(int mode)
{
    fk_reset_chip(mode, 0x6010);
}

/* Bytes the board has ready for the host (fk_mu held). */
static size_t board_pending(void)
{
    if (fk_mode == FK_ECHO)
        return fk_fifo.len;
    if (fk_mode == FK_REF)
        return ntpu_ref_pending(fk_ref);
    return 0;
}

static void board_read(uint8_t *out, size_t n)
{
    if (fk_mode == FK_ECHO) {
        memcpy(out, fk_fifo.buf, n);
        memmove(fk_fifo.buf, fk_fifo.buf + n, fk_fifo.len - n);
        fk_fifo.len -= n;
    } else if (fk_mode == FK_REF) {
        ntpu_ref_read(fk_ref, out, n);
    }
}

static void board_write(const uint8_t *in, size_t n)
{
    fk_written += n;
    if (fk_mode == FK_ECHO) {
        if (fk_fifo.len + n > fk_fifo.cap) {
            fk_fifo.cap = (fk_fifo.len + n) * 2;
            fk_fifo.buf = realloc(fk_fifo.buf, fk_fifo.cap);
            if (!fk_fifo.buf)
                abort();
        }
        memcpy(fk_fifo.buf + fk_fifo.len, in, n);
        fk_fifo.len += n;
    } else if (fk_mode == FK_REF) {
        ntpu_ref_write(fk_ref, in, n);
    }
}

/* Fills a bulk-IN transfer the way the chip does: fk_packet - 2 data bytes per
 * packet, a short packet ends the transfer (fk_mu held). */
static int fill_in(struct libusb_transfer *t)
{
    int o = 0;
    for (;;) {
        size_t avail = board_pending();
        if (avail == 0 || t->length - o < 3)
            break;
        size_t data = fk_packet - 2;
        size_t n = avail < data ? avail : data;
        if (n > (size_t)(t->length - o - 2))
            n = (size_t)(t->length - o - 2);
        t->buffer[o] = 0x31;
        t->buffer[o + 1] = fk_line;
        fk_line = 0x60;
        board_read(t->buffer + o + 2, n);
        o += (int)n + 2;
        if (n < data)
            break;
    }
    return o;
}

int LIBUSB_CALL libusb_init(libusb_context **ctx)
{
    if (fk_mode == FK_INITFAIL)
        return LIBUSB_ERROR_OTHER;
    *ctx = calloc(1, sizeof **ctx);
    fk_inits++;
    return 0;
}

ssize_t LIBUSB_CALL libusb_get_device_list(libusb_context *ctx, libusb_device ***list)
{
    (void)ctx;
    if (fk_mode == FK_LISTFAIL)
        return LIBUSB_ERROR_NO_MEM;
    size_t n = fk_mode == FK_NONE ? 0 : fk_mode == FK_TWO ? 2 : 1;
    *list = calloc(n + 1, sizeof **list);
    for (size_t i = 0; i < n; i++)
        (*list)[i] = &fk_devs[i];
    return (ssize_t)n;
}

int LIBUSB_CALL libusb_get_device_descriptor(libusb_device *dev, struct libusb_device_descriptor *d)
{
    (void)dev;
    memset(d, 0, sizeof *d);
    d->idVendor = 0x0403;
    d->idProduct = fk_pid;
    d->iSerialNumber = 3;
    return 0;
}

int LIBUSB_CALL libusb_get_max_packet_size(libusb_device *dev, unsigned char endpoint)
{
    (void)dev;
    if (fk_pid == 0x6015)
        return endpoint == 0x81 ? (int)fk_packet : LIBUSB_ERROR_NOT_FOUND;
    return endpoint == 0x81 || endpoint == 0x83 ? (int)fk_packet : LIBUSB_ERROR_NOT_FOUND;
}

int LIBUSB_CALL libusb_open(libusb_device *dev, libusb_device_handle **h)
{
    if (fk_mode == FK_DENIED)
        return LIBUSB_ERROR_ACCESS;
    *h = calloc(1, sizeof **h);
    (*h)->dev = dev;
    fk_opens++;
    return 0;
}

int LIBUSB_CALL libusb_get_string_descriptor_ascii(libusb_device_handle *h, uint8_t idx, unsigned char *data,
                                                   int length)
{
    if (idx != 3)
        return LIBUSB_ERROR_INVALID_PARAM;
    return snprintf((char *)data, (size_t)length, "FAKE%04d", 1 + h->dev->id);
}

int LIBUSB_CALL libusb_kernel_driver_active(libusb_device_handle *h, int iface)
{
    (void)h;
    (void)iface;
    return fk_detaches > fk_attaches ? 0 : 1; /* ftdi_sio holds it until we detach */
}

int LIBUSB_CALL libusb_detach_kernel_driver(libusb_device_handle *h, int iface)
{
    (void)h;
    (void)iface;
    fk_detaches++;
    return 0;
}

int LIBUSB_CALL libusb_attach_kernel_driver(libusb_device_handle *h, int iface)
{
    (void)h;
    (void)iface;
    fk_attaches++;
    return 0;
}

int LIBUSB_CALL libusb_claim_interface(libusb_device_handle *h, int iface)
{
    (void)h;
    (void)iface;
    if (fk_mode == FK_BUSY)
        return LIBUSB_ERROR_BUSY;
    fk_claims++;
    return 0;
}

int LIBUSB_CALL libusb_control_transfer(libusb_device_handle *h, uint8_t rt, uint8_t req, uint16_t value,
                                        uint16_t index, unsigned char *data, uint16_t len, unsigned int timeout)
{
    (void)h;
    (void)data;
    (void)timeout;
    pthread_mutex_lock(&fk_mu);
    int r = 0;
    if (fk_unplugged)
        r = LIBUSB_ERROR_NO_DEVICE;
    else if (fk_nctrl < FK_LOG)
        fk_ctrl[fk_nctrl++] = (fk_req){rt, req, value, index};
    pthread_mutex_unlock(&fk_mu);
    return r ? r : len;
}

int fk_model_has_endpoint(uint8_t ep)
{
    (void)ep;
    return 1;
}

/* A write goes to the board whole; a read waits for data, or for the latency
 * timer, which sends the status bytes alone. */
int fk_model_move(fk_xfer *x)
{
    struct libusb_transfer *t = x->t;
    t->status = LIBUSB_TRANSFER_COMPLETED;
    if (!(t->endpoint & 0x80)) {
        board_write(t->buffer, (size_t)t->length);
        x->done = (size_t)t->length;
    } else if (board_pending()) {
        x->done = (size_t)fill_in(t);
    } else if (ms_now() >= x->at_ms + 1) {
        t->buffer[0] = 0x31;
        t->buffer[1] = 0x60;
        x->done = 2;
    } else {
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ checks */

static void expect_open_error(int mode, const char *opts, ntpu_status want, const char *needle)
{
    fk_reset(mode);
    ntpu_transport tp = {0};
    char err[NTPU_ERRMSG_LEN] = "";
    ntpu_status st = ntpu_transport_ftdi_open(opts, &tp, err, sizeof err);
    CHECK(st == want, "mode %d opts '%s': status %d, expected %d (%s)", mode, opts ? opts : "", st, want, err);
    CHECK(strstr(err, needle) != NULL, "mode %d: message '%s' lacks '%s'", mode, err, needle);
    CHECK(!strchr(err, '\n'), "mode %d: message has a newline", mode);
    CHECK(fk_inits == fk_exits && fk_opens == fk_closes && fk_claims == fk_releases && fk_detaches == fk_attaches,
          "mode %d: something left open: init %d/%d open %d/%d claim %d/%d detach %d/%d", mode, fk_inits, fk_exits,
          fk_opens, fk_closes, fk_claims, fk_releases, fk_detaches, fk_attaches);
    printf("ok   open error (mode %d, '%s'): %s\n", mode, opts ? opts : "", err);
}

static void test_open_errors(void)
{
    expect_open_error(FK_NONE, NULL, NTPU_ERR_NO_DEVICE, "no FT2232H (0403:6010) or FT231X (0403:6015) found on USB");
    expect_open_error(FK_INITFAIL, NULL, NTPU_ERR_NO_DEVICE, "libusb_init: Other error");
    expect_open_error(FK_LISTFAIL, NULL, NTPU_ERR_NO_DEVICE, "cannot list USB devices");
    expect_open_error(FK_DENIED, NULL, NTPU_ERR_NO_DEVICE, "permission denied opening 0403:6010");
    expect_open_error(FK_DENIED, "serial=FAKE0001", NTPU_ERR_NO_DEVICE, "udev rule (see docs/boards.md)");
    expect_open_error(FK_BUSY, NULL, NTPU_ERR_NO_DEVICE, "interface B of the FT2232H is in use");
    expect_open_error(FK_TWO, NULL, NTPU_ERR_INVALID_ARG, "more than one FT2232H (0403:6010) or FT231X");
    expect_open_error(FK_TWO, "serial=NOPE", NTPU_ERR_NO_DEVICE,
                      "with serial 'NOPE' on USB (found: FAKE0001, FAKE0002)");
    expect_open_error(FK_ECHO, "baud=fast", NTPU_ERR_INVALID_ARG, "baud 'fast'");
    CHECK(fk_inits == 0, "bad options must fail before libusb_init");
}

static int open_tp(const char *opts, ntpu_transport *tp)
{
    char err[NTPU_ERRMSG_LEN] = "";
    ntpu_status st = ntpu_transport_ftdi_open(opts, tp, err, sizeof err);
    CHECK(st == NTPU_OK, "open '%s': %s", opts ? opts : "", err);
    return st == NTPU_OK;
}

static void test_setup_requests(void)
{
    fk_reset(FK_ECHO);
    ntpu_transport tp;
    if (!open_tp(NULL, &tp))
        return;
    /* reset, bit mode reset, 3 Mbaud, 8N1, no flow control, latency 1 ms, purge both */
    static const uint16_t want[][4] = {{0x00, 0x0000, 0x0002}, {0x0B, 0x0000, 0x0002}, {0x03, 0x0004, 0x0202},
                                       {0x04, 0x0008, 0x0002}, {0x02, 0x0000, 0x0002}, {0x09, 0x0001, 0x0002},
                                       {0x00, 0x0001, 0x0002}, {0x00, 0x0002, 0x0002}};
    CHECK(fk_nctrl == 8, "%zu control requests at open, expected 8", fk_nctrl);
    for (size_t i = 0; i < fk_nctrl && i < 8; i++)
        CHECK(fk_ctrl[i].rt == 0x40 && fk_ctrl[i].req == want[i][0] && fk_ctrl[i].value == want[i][1] &&
                  fk_ctrl[i].index == want[i][2],
              "request %zu: 0x%02X 0x%02X 0x%04X 0x%04X", i, fk_ctrl[i].rt, fk_ctrl[i].req, fk_ctrl[i].value,
              fk_ctrl[i].index);
    CHECK(fk_detaches == 1 && fk_claims == 1, "kernel driver detached %d, claimed %d", fk_detaches, fk_claims);
    CHECK(tp.ops->starts_in_sync == 0, "a board must be resynchronized at open");
    tp.ops->close(tp.ctx);
    CHECK(fk_releases == 1 && fk_attaches == 1 && fk_closes == 1 && fk_exits == 1,
          "close: released %d, reattached %d, closed %d, exited %d", fk_releases, fk_attaches, fk_closes, fk_exits);
    CHECK(fk_allocs == fk_frees, "transfers: %d allocated, %d freed", fk_allocs, fk_frees);
    CHECK(fk_seen(0x83) && !fk_seen(0x81), "interface B reads endpoint 0x83");

    fk_reset(FK_ECHO);
    if (!open_tp("interface=A,baud=115200", &tp))
        return;
    CHECK(fk_nctrl == 8 && fk_ctrl[2].req == 0x03 && fk_ctrl[2].value == 0xC068 && fk_ctrl[2].index == 0x0201,
          "115200 baud on A: value 0x%04X index 0x%04X", fk_ctrl[2].value, fk_ctrl[2].index);
    CHECK(fk_ctrl[0].index == 1 && fk_ctrl[5].index == 1, "channel A is index 1");
    uint8_t b = 0x5A, r = 0;
    size_t got = 0;
    char err[NTPU_ERRMSG_LEN];
    CHECK(tp.ops->send(tp.ctx, &b, 1, err, sizeof err) == NTPU_OK, "send on A: %s", err);
    CHECK(tp.ops->recv(tp.ctx, &r, 1, 1000, &got, err, sizeof err) == NTPU_OK && r == 0x5A, "recv on A: %s", err);
    CHECK(fk_seen(0x81) && fk_seen(0x02) && !fk_seen(0x83) && !fk_seen(0x04),
          "interface A uses endpoints 0x02 and 0x81");
    tp.ops->close(tp.ctx);
    printf("ok   setup requests, endpoints and close\n");
}

/* The ULX3S's FT231X: found without options, one channel (A: index 1, endpoints 0x02 and 0x81), the
 * FT-X baud encoding at the board's 3 Mbaud (value 0), 64-byte packets on the way in. */
static void test_ft231x(void)
{
    fk_reset_chip(FK_ECHO, 0x6015);
    ntpu_transport tp;
    if (!open_tp(NULL, &tp))
        return;
    static const uint16_t want[][4] = {{0x00, 0x0000, 0x0001}, {0x0B, 0x0000, 0x0001}, {0x03, 0x0000, 0x0000},
                                       {0x04, 0x0008, 0x0001}, {0x02, 0x0000, 0x0001}, {0x09, 0x0001, 0x0001},
                                       {0x00, 0x0001, 0x0001}, {0x00, 0x0002, 0x0001}};
    CHECK(fk_nctrl == 8, "FT231X: %zu control requests at open, expected 8", fk_nctrl);
    for (size_t i = 0; i < fk_nctrl && i < 8; i++)
        CHECK(fk_ctrl[i].req == want[i][0] && fk_ctrl[i].value == want[i][1] && fk_ctrl[i].index == want[i][2],
              "FT231X request %zu: 0x%02X 0x%04X 0x%04X", i, fk_ctrl[i].req, fk_ctrl[i].value, fk_ctrl[i].index);
    enum { TOTAL = 20000 };
    uint8_t *out = malloc(TOTAL), *in = malloc(TOTAL);
    for (size_t i = 0; i < TOTAL; i++)
        out[i] = (uint8_t)(i * 37u + (i >> 6));
    char err[NTPU_ERRMSG_LEN];
    size_t got = 0;
    CHECK(tp.ops->send(tp.ctx, out, TOTAL, err, sizeof err) == NTPU_OK, "FT231X send: %s", err);
    CHECK(tp.ops->recv(tp.ctx, in, TOTAL, 2000, &got, err, sizeof err) == NTPU_OK && got == TOTAL,
          "FT231X recv: %zu of %d bytes: %s", got, TOTAL, err);
    CHECK(memcmp(in, out, TOTAL) == 0, "FT231X: the bytes came back changed (status bytes not stripped per 64?)");
    CHECK(fk_seen(0x81) && fk_seen(0x02) && !fk_seen(0x83), "FT231X uses endpoints 0x02 and 0x81");
    free(out);
    free(in);
    tp.ops->close(tp.ctx);
    CHECK(fk_allocs == fk_frees && fk_releases == 1, "FT231X: not closed cleanly");

    /* Naming the other board, or a channel the chip lacks, is a clear error. */
    fk_reset_chip(FK_ECHO, 0x6015);
    char e2[NTPU_ERRMSG_LEN] = "";
    CHECK(ntpu_transport_ftdi_open("board=icebreaker", &tp, e2, sizeof e2) == NTPU_ERR_NO_DEVICE &&
              strstr(e2, "no FT2232H (0403:6010) found on USB: is the iCEBreaker plugged in?"),
          "board=icebreaker with only a ULX3S: '%s'", e2);
    fk_reset_chip(FK_ECHO, 0x6015);
    CHECK(ntpu_transport_ftdi_open("interface=B", &tp, e2, sizeof e2) == NTPU_ERR_INVALID_ARG &&
              strstr(e2, "the FT231X of the ULX3S has no interface B"),
          "interface=B on an FT231X: '%s'", e2);
    CHECK(fk_opens == fk_closes && fk_inits == fk_exits, "FT231X: open error left something open");
    fk_reset(FK_NONE);
    printf("ok   FT231X (ULX3S): setup requests, 64-byte packets, wrong board and channel\n");
}

static void test_data_path(void)
{
    fk_reset(FK_ECHO);
    ntpu_transport tp;
    if (!open_tp(NULL, &tp))
        return;
    char err[NTPU_ERRMSG_LEN];
    size_t got;
    /* 300 KB out in one call (several bulk-OUT chunks), back in reads of every size. */
    enum { TOTAL = 300000 };
    uint8_t *out = malloc(TOTAL), *in = malloc(TOTAL);
    fk_fill_pattern(out, TOTAL);
    fk_check_round_trip(&tp, out, in, TOTAL, (const size_t[]){1, 7, 509, 510, 511, 4096, 40000});
    fk_check_idle_and_short_reads(&tp, out, in);

    /* The chip reports an overrun: the next error message says so. */
    fk_set_line(0x62);
    tp.ops->send(tp.ctx, out, 5, err, sizeof err);
    ntpu_status st = tp.ops->recv(tp.ctx, in, 6, 200, &got, err, sizeof err);
    CHECK(st == NTPU_ERR_TIMEOUT && got == 5 && strstr(err, "overrun"), "overrun: status %d got %zu: %s", st, got, err);

    /* Unplugged: bytes already queued still come, then NTPU_ERR_IO, on every later call too. */
    tp.ops->send(tp.ctx, out, 3, err, sizeof err);
    st = tp.ops->recv(tp.ctx, in, 3, 1000, &got, err, sizeof err); /* let them reach the queue */
    CHECK(st == NTPU_OK && got == 3, "before unplug: status %d", st);
    fk_unplug();
    st = tp.ops->recv(tp.ctx, in, 1, 1000, &got, err, sizeof err);
    CHECK(st == NTPU_ERR_IO && strstr(err, "unplugged"), "recv after unplug: status %d: %s", st, err);
    st = tp.ops->send(tp.ctx, out, 100, err, sizeof err);
    CHECK(st == NTPU_ERR_IO && strstr(err, "unplugged"), "send after unplug: status %d: %s", st, err);
    tp.ops->close(tp.ctx);
    CHECK(fk_allocs == fk_frees && fk_closes == 1 && fk_exits == 1, "close after unplug: transfers %d/%d", fk_allocs,
          fk_frees);
    free(out);
    free(in);
    printf("ok   data path: 300 KB round trip, timeouts, partial reads, overrun report, unplug\n");
}

/* The whole library over the fake chip with the golden model as the board. */
static void test_library(void)
{
    fk_reset(FK_REF);
    ntpu_device *dev = NULL;
    ntpu_status st = ntpu_open("ftdi", &dev);
    CHECK(st == NTPU_OK, "ntpu_open(\"ftdi\"): %s", ntpu_last_error(dev));
    if (st != NTPU_OK) {
        ntpu_close(dev);
        return;
    }
    ntpu_info info;
    ntpu_get_info(dev, &info);
    CHECK(info.rows >= 2 && info.rows == info.cols, "info: %ux%u", info.rows, info.cols);
    /* Open resynchronizes: max_payload (capped at 516 for this transport) + 8 zeros, then a SYNC; the
     * bytes in flight stay under the transport's limit. */
    CHECK(fk_written >= 516 + 8 + 9 && fk_written <= 1500, "open wrote %zu bytes", fk_written);
    enum { M = 37, K = 53, N = 29 };
    int8_t A[M * K], B[K * N];
    int32_t C[M * N];
    for (int i = 0; i < M * K; i++)
        A[i] = (int8_t)(i * 37 % 251 - 125);
    for (int i = 0; i < K * N; i++)
        B[i] = (int8_t)(i * 91 % 253 - 126);
    st = ntpu_matmul(dev, NTPU_DTYPE_INT8, A, B, C, M, K, N);
    CHECK(st == NTPU_OK, "matmul: %s", ntpu_last_error(dev));
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int32_t s = 0;
            for (int k = 0; k < K; k++)
                s += A[m * K + k] * B[k * N + n];
            bad += C[m * N + n] != s;
        }
    CHECK(bad == 0, "matmul through ftdi: %d wrong elements", bad);
    ntpu_close(dev);
    CHECK(fk_allocs == fk_frees && fk_exits == 1 && fk_attaches == 1, "ntpu_close did not close the transport");
    printf("ok   ntpu_open(\"ftdi\") and a %dx%dx%d int8 matmul through the fake FT2232H and the golden model\n", M, K,
           N);

    /* A board that answers nothing (FPGA not configured): one line, with a hint. */
    fk_reset(FK_SILENT);
    uint64_t t0 = ms_now();
    st = ntpu_open("ftdi", &dev);
    char e[NTPU_ERRMSG_LEN];
    snprintf(e, sizeof e, "%s", ntpu_last_error(dev));
    CHECK(st == NTPU_ERR_TIMEOUT, "silent board: status %d (%s)", st, e);
    CHECK(strstr(e, "bitstream") && !strchr(e, '\n'), "silent board message: %s", e);
    ntpu_close(dev);
    CHECK(fk_allocs == fk_frees && fk_exits == 1, "silent board: transport not closed");
    printf("ok   silent board: %s (%.1f s)\n", e, (ms_now() - t0) / 1000.0);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep the lines before a sanitizer abort */
    test_open_errors();
    test_setup_requests();
    test_ft231x();
    test_data_path();
    test_library();
    fk_reset(FK_NONE);
    if (fk_failures) {
        printf("FAIL: %d checks failed\n", fk_failures);
        return 1;
    }
    printf("PASS ftdi transport over a fake libusb\n");
    return 0;
}
