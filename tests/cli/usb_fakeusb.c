/* SPDX-License-Identifier: Apache-2.0 */
/* The "usb" transport (host/src/transport/transport_usb.c) against a fake libusb: with
 * fakeusb_core.c (the transfers, the event loop, unplugging) this file defines every libusb
 * function the usb and ftdi transports call (the library's device.c pulls in both), and behind
 * them simulated pico-ice boards at the level of their USB interface
 * (firmware/pico-ice/usb_requests.h, docs/firmware.md): descriptors with VID:PID, product and
 * serial strings; the vendor requests (version, status, reset, load begin/end, clock); bulk OUT
 * taken a few packets per round, as a firmware that NAKs while its ring is full; bulk IN in
 * 64-byte packets, where a short packet ends a transfer and a zero-length packet follows a full
 * one when nothing more is there; unplugging. The FPGA behind is a loopback or the golden model
 * (sim/ref), and runs only while "configured": a load sets CDONE when the bytes hold the iCE40
 * sync word and, after it, the wakeup command (01 06).
 *
 * Built and run by usb_fakeusb.sh, linked against libntpu.a but not against libusb. No real USB
 * is touched. The run bounds itself with alarm(): a hang is a failure. Exit status 0 when every
 * check passes. */
#include <libusb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../host/ice40_bits.h" /* the bitstream header the unit tests build too */
#include "fakeusb_checks.h"
#include "fakeusb_core.h"
#include "internal.h"
#include "ntpu/ntpu.h"
#include "ntpu_ref.h"
#include "usb_requests.h"

/* ------------------------------------------------------------------ the fake boards */

enum fk_board { FK_ECHO, FK_REF };

#define FK_MAXDEV 3
#define FK_LOG 64

typedef struct fk_dev {
    const char *serial, *product;
    uint8_t major, minor;
    int denied;
} fk_dev;

static struct libusb_device fk_devs[FK_MAXDEV] = {{0}, {1}, {2}};
static fk_dev fk_dev_cfg[FK_MAXDEV];
static size_t fk_ndev;
static int fk_initfail, fk_listfail, fk_busy, fk_board;
static int fk_stall_version; /* GET_VERSION stalls: some other firmware on the test PID */
/* The FPGA and the firmware's state (of the one board that is opened). */
static int fk_cdone, fk_loading, fk_creset_held;
static uint16_t fk_clock_div = 4;
static uint8_t *fk_load;
static size_t fk_load_len, fk_load_cap;
static struct {
    uint8_t *buf;
    size_t len, cap;
} fk_fifo; /* loopback: bytes written, waiting to be read back */
static ntpu_ref *fk_ref;
static int fk_zlp_owed;  /* the last IN packet was a full one and nothing followed yet */
static size_t fk_zlps;   /* zero-length packets sent */
static size_t fk_shorts; /* transfers ended by a short packet */
static size_t fk_written, fk_dropped;
static size_t fk_out_per_round = 4096; /* bulk OUT bytes a board takes per 1 ms round */
static size_t fk_empty;                /* IN transfers that completed with 0 bytes */
typedef struct fk_req {
    int dev;
    uint8_t rt, req;
    uint16_t value, index, len;
} fk_req;
static fk_req fk_ctrl[FK_LOG];
static size_t fk_nctrl;

/* A fresh bus with boards of these serials, all ours, protocol 1.0, FPGA configured. */
static void fk_reset_bus(int board, size_t ndev, const char *const *serials)
{
    pthread_mutex_lock(&fk_mu);
    fk_ndev = ndev;
    for (size_t i = 0; i < ndev; i++)
        fk_dev_cfg[i] = (fk_dev){serials[i], "nanoTPU pico-ice", 1, 0, 0};
    fk_initfail = fk_listfail = fk_busy = fk_stall_version = 0;
    fk_board = board;
    fk_core_reset();
    fk_cdone = 1;
    fk_loading = fk_creset_held = 0;
    fk_clock_div = 4;
    fk_load_len = 0;
    free(fk_fifo.buf);
    memset(&fk_fifo, 0, sizeof fk_fifo);
    ntpu_ref_free(fk_ref);
    fk_ref = board == FK_REF ? ntpu_ref_new(NULL) : NULL;
    fk_zlp_owed = 0;
    fk_zlps = fk_shorts = fk_written = fk_dropped = fk_empty = 0;
    fk_out_per_round = 4096;
    fk_nctrl = 0;
    pthread_mutex_unlock(&fk_mu);
}

static void fk_reset(int board)
{
    static const char *const one[] = {"E6614C311B7A5F2D"};
    fk_reset_bus(board, 1, one);
}

static int fk_get(const int *v)
{
    pthread_mutex_lock(&fk_mu);
    int x = *v;
    pthread_mutex_unlock(&fk_mu);
    return x;
}

/* The FPGA runs a design: the firmware bridges bytes to it. */
static int fpga_runs(void)
{
    return fk_cdone && !fk_loading && !fk_creset_held;
}

/* Bytes the FPGA has for the host (fk_mu held). */
static size_t board_pending(void)
{
    if (!fpga_runs())
        return 0;
    return fk_board == FK_ECHO ? fk_fifo.len : ntpu_ref_pending(fk_ref);
}

static void board_read(uint8_t *out, size_t n)
{
    if (fk_board == FK_ECHO) {
        memcpy(out, fk_fifo.buf, n);
        memmove(fk_fifo.buf, fk_fifo.buf + n, fk_fifo.len - n);
        fk_fifo.len -= n;
    } else {
        ntpu_ref_read(fk_ref, out, n);
    }
}

static void grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return;
    *cap = need * 2;
    *buf = realloc(*buf, *cap);
    if (!*buf)
        abort();
}

/* Bulk OUT bytes into the firmware: bitstream while loading, link bytes to a running FPGA,
 * dropped otherwise (docs/firmware.md). */
static void board_write(const uint8_t *in, size_t n)
{
    if (fk_loading) {
        grow(&fk_load, &fk_load_cap, fk_load_len + n);
        memcpy(fk_load + fk_load_len, in, n);
        fk_load_len += n;
        return;
    }
    if (!fpga_runs()) {
        fk_dropped += n;
        return;
    }
    fk_written += n;
    if (fk_board == FK_ECHO) {
        grow(&fk_fifo.buf, &fk_fifo.cap, fk_fifo.len + n);
        memcpy(fk_fifo.buf + fk_fifo.len, in, n);
        fk_fifo.len += n;
    } else {
        ntpu_ref_write(fk_ref, in, n);
    }
}

/* CDONE after a load: the sync word, and the wakeup command somewhere after it. */
static int load_configures(void)
{
    static const uint8_t sync[4] = {0x7E, 0xAA, 0x99, 0x7E};
    for (size_t i = 0; i + 4 <= fk_load_len; i++)
        if (!memcmp(fk_load + i, sync, 4)) {
            for (size_t j = i + 4; j + 2 <= fk_load_len; j++)
                if (fk_load[j] == 0x01 && fk_load[j + 1] == 0x06)
                    return 1;
            return 0;
        }
    return 0;
}

/* One vendor request to the firmware (fk_mu held). Returns the data length or a libusb error. */
static int firmware_request(int dev, uint8_t rt, uint8_t req, uint16_t value, unsigned char *data, uint16_t len)
{
    switch (req) {
    case NTPU_USB_REQ_GET_VERSION:
        if (rt != NTPU_USB_REQTYPE_IN || len < 2 || fk_stall_version)
            return LIBUSB_ERROR_PIPE;
        data[0] = fk_dev_cfg[dev].major;
        data[1] = fk_dev_cfg[dev].minor;
        return 2;
    case NTPU_USB_REQ_GET_STATUS:
        if (rt != NTPU_USB_REQTYPE_IN || len < NTPU_USB_STATUS_LEN)
            return LIBUSB_ERROR_PIPE;
        memset(data, 0, NTPU_USB_STATUS_LEN);
        data[0] = (uint8_t)((fk_cdone ? NTPU_USB_STATUS_CDONE : 0) | (fk_creset_held ? 0 : NTPU_USB_STATUS_RUNNING) |
                            (fk_loading ? NTPU_USB_STATUS_LOADING : 0));
        ntpu_wr16(data + 2, fk_clock_div);
        ntpu_wr32(data + 4, (uint32_t)fk_load_len);
        return NTPU_USB_STATUS_LEN;
    case NTPU_USB_REQ_FPGA_RESET:
        fk_creset_held = value == 1;
        fk_cdone = 0; /* the FPGA boots from its own flash: this fake has none */
        return 0;
    case NTPU_USB_REQ_FPGA_LOAD_BEGIN:
        if (rt != NTPU_USB_REQTYPE_OUT)
            return LIBUSB_ERROR_PIPE;
        fk_loading = 1;
        fk_cdone = 0;
        fk_load_len = 0;
        fk_fifo.len = 0; /* the link's queued bytes are dropped */
        return 0;
    case NTPU_USB_REQ_FPGA_LOAD_END:
        if (rt != NTPU_USB_REQTYPE_IN || len < 1)
            return LIBUSB_ERROR_PIPE;
        fk_loading = 0;
        fk_cdone = load_configures();
        if (fk_cdone && fk_board == FK_REF) { /* a freshly configured FPGA */
            ntpu_ref_free(fk_ref);
            fk_ref = ntpu_ref_new(NULL);
        }
        data[0] = (uint8_t)fk_cdone;
        return 1;
    case NTPU_USB_REQ_SET_FPGA_CLOCK: fk_clock_div = value; return 0;
    }
    return LIBUSB_ERROR_PIPE;
}

/* Moves what the board has into an IN transfer in 64-byte packets (fk_mu held). Returns 1 when
 * the transfer completes: a short packet (a zero-length one included) or a full buffer. */
static int fill_in(struct libusb_transfer *t, size_t *done)
{
    for (;;) {
        size_t avail = board_pending();
        if (!avail) {
            if (fk_zlp_owed) { /* nothing after a full packet: the firmware sends a ZLP */
                fk_zlp_owed = 0;
                fk_zlps++;
                return 1;
            }
            return 0;
        }
        size_t n = avail < NTPU_USB_PACKET ? avail : NTPU_USB_PACKET;
        board_read(t->buffer + *done, n);
        *done += n;
        fk_zlp_owed = n == NTPU_USB_PACKET;
        if (n < NTPU_USB_PACKET) {
            fk_shorts++;
            return 1;
        }
        if (*done + NTPU_USB_PACKET > (size_t)t->length)
            return 1;
    }
}

/* ------------------------------------------------------------------ libusb */

int LIBUSB_CALL libusb_init(libusb_context **ctx)
{
    if (fk_initfail)
        return LIBUSB_ERROR_OTHER;
    *ctx = calloc(1, sizeof **ctx);
    fk_inits++;
    return 0;
}

ssize_t LIBUSB_CALL libusb_get_device_list(libusb_context *ctx, libusb_device ***list)
{
    (void)ctx;
    if (fk_listfail)
        return LIBUSB_ERROR_NO_MEM;
    *list = calloc(fk_ndev + 1, sizeof **list);
    for (size_t i = 0; i < fk_ndev; i++)
        (*list)[i] = &fk_devs[i];
    return (ssize_t)fk_ndev;
}

int LIBUSB_CALL libusb_get_device_descriptor(libusb_device *dev, struct libusb_device_descriptor *d)
{
    (void)dev;
    memset(d, 0, sizeof *d);
    d->idVendor = NTPU_USB_VID;
    d->idProduct = NTPU_USB_PID;
    d->iManufacturer = 1;
    d->iProduct = 2;
    d->iSerialNumber = 3;
    return 0;
}

/* Called by the ftdi transport only. */
int LIBUSB_CALL libusb_get_max_packet_size(libusb_device *dev, unsigned char endpoint)
{
    (void)dev;
    return endpoint == NTPU_USB_EP_IN ? NTPU_USB_PACKET : LIBUSB_ERROR_NOT_FOUND;
}

int LIBUSB_CALL libusb_open(libusb_device *dev, libusb_device_handle **h)
{
    if (fk_dev_cfg[dev->id].denied)
        return LIBUSB_ERROR_ACCESS;
    *h = calloc(1, sizeof **h);
    (*h)->dev = dev;
    fk_opens++;
    return 0;
}

/* Called by the ftdi transport only. */
int LIBUSB_CALL libusb_get_string_descriptor_ascii(libusb_device_handle *h, uint8_t idx, unsigned char *data,
                                                   int length)
{
    const fk_dev *d = &fk_dev_cfg[h->dev->id];
    const char *s = idx == 1 ? "nanoTPU" : idx == 2 ? d->product : idx == 3 ? d->serial : NULL;
    if (!s)
        return LIBUSB_ERROR_INVALID_PARAM;
    return snprintf((char *)data, (size_t)length, "%s", s) < length ? (int)strlen(s) : length - 1;
}

int LIBUSB_CALL libusb_claim_interface(libusb_device_handle *h, int iface)
{
    (void)h;
    if (iface != 0)
        return LIBUSB_ERROR_NOT_FOUND;
    if (fk_busy)
        return LIBUSB_ERROR_BUSY;
    fk_claims++;
    return 0;
}

int LIBUSB_CALL libusb_control_transfer(libusb_device_handle *h, uint8_t rt, uint8_t req, uint16_t value,
                                        uint16_t index, unsigned char *data, uint16_t len, unsigned int timeout)
{
    (void)timeout;
    pthread_mutex_lock(&fk_mu);
    int r;
    if (fk_nctrl < FK_LOG)
        fk_ctrl[fk_nctrl++] = (fk_req){h->dev->id, rt, req, value, index, len};
    if (fk_unplugged)
        r = LIBUSB_ERROR_NO_DEVICE;
    else if ((rt & 0x60) != 0x40 || index != 0 || (rt & 0x80 ? !data : len != 0))
        r = LIBUSB_ERROR_PIPE; /* not a vendor request as the firmware takes them */
    else
        r = firmware_request(h->dev->id, rt, req, value, data, len);
    pthread_mutex_unlock(&fk_mu);
    return r;
}

int fk_model_has_endpoint(uint8_t ep)
{
    return ep == NTPU_USB_EP_IN || ep == NTPU_USB_EP_OUT;
}

/* A write moves fk_out_per_round bytes a round, as a firmware that NAKs; a
 * read takes what the board has, in 64-byte packets. */
int fk_model_move(fk_xfer *x)
{
    struct libusb_transfer *t = x->t;
    t->status = LIBUSB_TRANSFER_COMPLETED;
    if (!(t->endpoint & 0x80)) {
        size_t n = (size_t)t->length - x->done;
        n = n < fk_out_per_round ? n : fk_out_per_round;
        board_write(t->buffer + x->done, n);
        x->done += n;
        return x->done == (size_t)t->length;
    }
    int finish = fill_in(t, &x->done);
    fk_empty += finish && x->done == 0;
    return finish;
}

/* ------------------------------------------------------------------ checks */

static void check_all_closed(const char *what)
{
    CHECK(fk_inits == fk_exits && fk_opens == fk_closes && fk_claims == fk_releases && fk_allocs == fk_frees,
          "%s: something left open: init %d/%d open %d/%d claim %d/%d transfers %d/%d", what, fk_inits, fk_exits,
          fk_opens, fk_closes, fk_claims, fk_releases, fk_allocs, fk_frees);
}

static void expect_open_error(const char *what, const char *opts, ntpu_status want, const char *needle)
{
    ntpu_transport tp = {0};
    char err[NTPU_ERRMSG_LEN] = "";
    ntpu_status st = ntpu_transport_usb_open(opts, &tp, err, sizeof err);
    CHECK(st == want, "%s: status %d, expected %d (%s)", what, st, want, err);
    CHECK(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", what, err, needle);
    CHECK(!strchr(err, '\n'), "%s: message has a newline", what);
    check_all_closed(what);
    printf("ok   open error, %s: %s\n", what, err);
}

static void test_open_errors(void)
{
    static const char *const two[] = {"AAAA", "BBBB"};
    fk_reset_bus(FK_ECHO, 0, NULL);
    expect_open_error("no board", NULL, NTPU_ERR_NO_DEVICE,
                      "no nanoTPU pico-ice board found (VID:PID 1209:0001); is it plugged in");
    fk_reset(FK_ECHO);
    fk_initfail = 1;
    expect_open_error("no USB", NULL, NTPU_ERR_NO_DEVICE, "libusb_init: Other error");
    fk_reset(FK_ECHO);
    fk_listfail = 1;
    expect_open_error("no device list", NULL, NTPU_ERR_NO_DEVICE, "cannot list USB devices");
    fk_reset(FK_ECHO);
    fk_dev_cfg[0].denied = 1;
    expect_open_error("permission denied", NULL, NTPU_ERR_NO_DEVICE, "permission denied: add a udev rule");
    fk_reset(FK_ECHO);
    fk_busy = 1;
    expect_open_error("interface busy", NULL, NTPU_ERR_NO_DEVICE, "interface 0 of the pico-ice is in use");
    fk_reset_bus(FK_ECHO, 2, two);
    expect_open_error("two boards, no serial", NULL, NTPU_ERR_INVALID_ARG,
                      "2 nanoTPU pico-ice boards found (serials: AAAA, BBBB): name one with usb:serial=S");
    fk_reset_bus(FK_ECHO, 2, two);
    expect_open_error("a serial that is not there", "serial=NOPE", NTPU_ERR_NO_DEVICE,
                      "no nanoTPU pico-ice board with serial 'NOPE' (found: AAAA, BBBB)");
    fk_reset(FK_ECHO);
    fk_dev_cfg[0].product = "Someone's Gadget";
    expect_open_error("another product on the test PID", NULL, NTPU_ERR_NO_DEVICE,
                      "Other products use that VID:PID: Someone's Gadget");
    fk_reset(FK_ECHO);
    fk_dev_cfg[0].major = 2;
    fk_dev_cfg[0].minor = 1;
    expect_open_error("firmware protocol 2.1", NULL, NTPU_ERR_UNSUPPORTED,
                      "firmware protocol 2.1, this host speaks 1.x: update nanoTPU on this host");
    fk_reset(FK_ECHO);
    fk_cdone = 0;
    expect_open_error("FPGA not configured", NULL, NTPU_ERR_NO_DEVICE,
                      "the FPGA on the pico-ice is not configured (CDONE low): load the nanoTPU bitstream");
    fk_reset(FK_ECHO);
    fk_stall_version = 1;
    expect_open_error(
        "another firmware", NULL, NTPU_ERR_IO,
        "the pico-ice refused GET_VERSION (request 0x01): Pipe error; is it running the nanoTPU firmware");
    fk_reset(FK_ECHO);
    expect_open_error("bad option", "baud=3000000", NTPU_ERR_INVALID_ARG, "unknown usb option 'baud=3000000'");
    CHECK(fk_inits == 0, "bad options must fail before libusb_init");
}

static int open_tp(const char *opts, ntpu_transport *tp)
{
    char err[NTPU_ERRMSG_LEN] = "";
    ntpu_status st = ntpu_transport_usb_open(opts, tp, err, sizeof err);
    CHECK(st == NTPU_OK, "open '%s': %s", opts ? opts : "", err);
    return st == NTPU_OK;
}

static void test_setup(void)
{
    fk_reset(FK_ECHO);
    ntpu_transport tp;
    if (!open_tp(NULL, &tp))
        return;
    CHECK(fk_nctrl == 2, "%zu control requests at open, expected 2", fk_nctrl);
    CHECK(fk_ctrl[0].rt == 0xC0 && fk_ctrl[0].req == 0x01 && fk_ctrl[0].value == 0 && fk_ctrl[0].len == 2,
          "GET_VERSION: 0x%02X 0x%02X len %u", fk_ctrl[0].rt, fk_ctrl[0].req, fk_ctrl[0].len);
    CHECK(fk_ctrl[1].rt == 0xC0 && fk_ctrl[1].req == 0x02 && fk_ctrl[1].len == 8, "GET_STATUS: 0x%02X 0x%02X len %u",
          fk_ctrl[1].rt, fk_ctrl[1].req, fk_ctrl[1].len);
    CHECK(fk_claims == 1 && fk_opens == 1, "claimed %d, opened %d", fk_claims, fk_opens);
    CHECK(tp.ops->starts_in_sync == 0 && tp.ops->max_unanswered_tx_bytes == 0 && tp.ops->max_payload_cap == 516,
          "link limits: in sync %d, unanswered %zu, payload cap %u", tp.ops->starts_in_sync,
          tp.ops->max_unanswered_tx_bytes, tp.ops->max_payload_cap);
    char err[NTPU_ERRMSG_LEN];
    uint8_t b = 0x5A, r = 0;
    size_t got = 0;
    CHECK(tp.ops->send(tp.ctx, &b, 1, err, sizeof err) == NTPU_OK, "send: %s", err);
    CHECK(tp.ops->recv(tp.ctx, &r, 1, 1000, &got, err, sizeof err) == NTPU_OK && r == 0x5A, "recv: %s", err);
    CHECK(fk_eps_seen[NTPU_USB_EP_IN] && fk_eps_seen[NTPU_USB_EP_OUT], "endpoints 0x81 and 0x01 used");
    tp.ops->close(tp.ctx);
    CHECK(fk_releases == 1 && fk_closes == 1 && fk_exits == 1, "close: released %d, closed %d, exited %d", fk_releases,
          fk_closes, fk_exits);
    check_all_closed("setup");

    /* Two boards: the serial picks one; a higher minor is accepted. */
    static const char *const two[] = {"AAAA", "BBBB"};
    fk_reset_bus(FK_ECHO, 2, two);
    fk_dev_cfg[1].minor = 3;
    if (open_tp("serial=BBBB", &tp)) {
        CHECK(fk_nctrl >= 1 && fk_ctrl[0].dev == 1, "serial=BBBB opened device %d", fk_ctrl[0].dev);
        CHECK(fk_opens == 2 && fk_closes == 1, "the board not chosen is closed again: %d/%d", fk_opens, fk_closes);
        tp.ops->close(tp.ctx);
    }
    check_all_closed("serial=BBBB");
    printf("ok   setup: GET_VERSION and GET_STATUS at open, interface 0, endpoints, link limits, serial choice\n");
}

static void *unplug_later(void *arg)
{
    unsigned ms = (unsigned)(uintptr_t)arg;
    struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};
    nanosleep(&ts, NULL);
    fk_unplug();
    return NULL;
}

static void test_data_path(void)
{
    fk_reset(FK_ECHO);
    ntpu_transport tp;
    if (!open_tp(NULL, &tp))
        return;
    char err[NTPU_ERRMSG_LEN];
    size_t got;
    /* 300 KB out in one call (several bulk-OUT chunks, taken 4 KB a round), back in reads of every size. */
    enum { TOTAL = 300000 };
    uint8_t *out = malloc(TOTAL), *in = malloc(TOTAL);
    fk_fill_pattern(out, TOTAL);
    fk_check_round_trip(&tp, out, in, TOTAL, (const size_t[]){1, 7, 63, 64, 65, 4096, 40000});
    CHECK(fk_zlps > 0 && fk_shorts > 0, "zero-length packets %zu, short packets %zu", fk_zlps, fk_shorts);

    /* A read that fills its whole buffer ends without a short packet; the ZLP then lands in the next
     * read, which completes with 0 bytes: nothing may be lost or invented. */
    pthread_mutex_lock(&fk_mu);
    fk_out_per_round = 1u << 20;
    pthread_mutex_unlock(&fk_mu);
    CHECK(tp.ops->send(tp.ctx, out, 3 * 16384, err, sizeof err) == NTPU_OK, "send 48 KB: %s", err);
    CHECK(tp.ops->recv(tp.ctx, in, 3 * 16384, 2000, &got, err, sizeof err) == NTPU_OK && got == 3 * 16384 &&
              !memcmp(in, out, 3 * 16384),
          "48 KB in whole transfers: got %zu (%s)", got, err);
    /* The ZLP may come a round after the last data. */
    size_t empty = 0;
    for (uint64_t until = ms_now() + 500; !empty && ms_now() < until;) {
        pthread_mutex_lock(&fk_mu);
        empty = fk_empty;
        pthread_mutex_unlock(&fk_mu);
    }
    CHECK(empty > 0, "no read completed with 0 bytes");

    fk_check_idle_and_short_reads(&tp, out, in);

    /* A board that stops taking bytes: the write times out (NTPU_ERR_TIMEOUT, not fatal), and the
     * transport works again once the board takes bytes again. */
    pthread_mutex_lock(&fk_mu);
    fk_out_per_round = 0;
    pthread_mutex_unlock(&fk_mu);
    uint64_t t0 = ms_now();
    ntpu_status st = tp.ops->send(tp.ctx, out, 1000, err, sizeof err);
    uint64_t dt = ms_now() - t0;
    CHECK(st == NTPU_ERR_TIMEOUT && strstr(err, "took 0 of 1000 bytes in 5000 ms"), "stalled write: status %d: %s", st,
          err);
    CHECK(dt >= 4900 && dt < 9000, "stalled write took %llu ms", (unsigned long long)dt);
    pthread_mutex_lock(&fk_mu);
    fk_out_per_round = 4096;
    pthread_mutex_unlock(&fk_mu);
    CHECK(tp.ops->send(tp.ctx, out, 5, err, sizeof err) == NTPU_OK, "write after a timeout: %s", err);
    CHECK(tp.ops->recv(tp.ctx, in, 5, 1000, &got, err, sizeof err) == NTPU_OK && !memcmp(in, out, 5),
          "read after a timeout: %s", err);

    /* Unplugged in the middle of a 2 MB write (taken 4 KB a round): NTPU_ERR_NO_DEVICE, soon, on
     * every later call too. */
    pthread_mutex_lock(&fk_mu);
    fk_out_per_round = 4096;
    pthread_mutex_unlock(&fk_mu);
    enum { BIG = 2 << 20 };
    uint8_t *big = calloc(1, BIG);
    pthread_t th;
    pthread_create(&th, NULL, unplug_later, (void *)(uintptr_t)50);
    t0 = ms_now();
    st = tp.ops->send(tp.ctx, big, BIG, err, sizeof err);
    dt = ms_now() - t0;
    pthread_join(th, NULL);
    CHECK(st == NTPU_ERR_NO_DEVICE && strstr(err, "unplugged"), "send during unplug: status %d: %s", st, err);
    CHECK(dt < 3000, "send took %llu ms to notice the unplug", (unsigned long long)dt);
    CHECK(fk_written < BIG, "the unplug came after the write had finished (%zu bytes)", fk_written);
    /* The bytes the loopback held before the unplug still come first, then the error. */
    size_t drained = 0;
    do {
        st = tp.ops->recv(tp.ctx, in, 4096, 1000, &got, err, sizeof err);
        drained += got;
    } while (st == NTPU_OK && drained <= BIG);
    CHECK(st == NTPU_ERR_NO_DEVICE && strstr(err, "unplugged"), "recv after unplug: status %d: %s", st, err);
    CHECK(drained <= fk_written, "recv after unplug: %zu bytes came, %zu were written", drained, fk_written);
    st = tp.ops->send(tp.ctx, out, 100, err, sizeof err);
    CHECK(st == NTPU_ERR_NO_DEVICE, "send after unplug: status %d: %s", st, err);
    t0 = ms_now();
    tp.ops->close(tp.ctx);
    CHECK(ms_now() - t0 < 3000, "close after unplug took %llu ms", (unsigned long long)(ms_now() - t0));
    check_all_closed("close after unplug");
    free(big);
    free(out);
    free(in);
    printf("ok   data path: 300 KB round trip, 64-byte packets, short packets and ZLPs, empty reads, timeouts, "
           "partial reads, a stalled write, unplug mid-write\n");
}

/* C = A.B on the device string dev; returns the status. */
static ntpu_status matmul_on(const char *devstr, ntpu_dtype dt, const void *A, const void *B, void *C, size_t M,
                             size_t K, size_t N, char *why, size_t whylen)
{
    ntpu_device *dev = NULL;
    ntpu_status st = ntpu_open(devstr, &dev);
    if (st == NTPU_OK)
        st = ntpu_matmul(dev, dt, A, B, C, M, K, N);
    snprintf(why, whylen, "%s", ntpu_last_error(dev));
    ntpu_close(dev);
    return st;
}

/* The whole library over the fake board with the golden model behind it, against the golden
 * model in-process: int8 and bf16, bit for bit. */
static void test_library(void)
{
    enum { M = 37, K = 53, N = 29 };
    static int8_t A8[M * K], B8[K * N];
    static int32_t C8[M * N], R8[M * N];
    static float Af[M * K], Bf[K * N], Cf[M * N], Rf[M * N];
    for (int i = 0; i < M * K; i++) {
        A8[i] = (int8_t)(i * 37 % 251 - 125);
        Af[i] = (float)((i * 7919) % 2001 - 1000) / 37.0f;
    }
    for (int i = 0; i < K * N; i++) {
        B8[i] = (int8_t)(i * 91 % 253 - 126);
        Bf[i] = (float)((i * 104729) % 1999 - 999) / 113.0f;
    }
    char why[NTPU_ERRMSG_LEN];
    fk_reset(FK_REF);
    ntpu_status st = matmul_on("usb", NTPU_DTYPE_INT8, A8, B8, C8, M, K, N, why, sizeof why);
    CHECK(st == NTPU_OK, "int8 matmul over usb: %s", why);
    CHECK(matmul_on("ref", NTPU_DTYPE_INT8, A8, B8, R8, M, K, N, why, sizeof why) == NTPU_OK, "ref: %s", why);
    CHECK(st != NTPU_OK || !memcmp(C8, R8, sizeof C8), "int8 over usb differs from ref");
    check_all_closed("int8 matmul");
    fk_reset(FK_REF);
    st =
        matmul_on("usb:serial=E6614C311B7A5F2D,timeout_ms=3000", NTPU_DTYPE_BF16, Af, Bf, Cf, M, K, N, why, sizeof why);
    CHECK(st == NTPU_OK, "bf16 matmul over usb: %s", why);
    CHECK(matmul_on("ref", NTPU_DTYPE_BF16, Af, Bf, Rf, M, K, N, why, sizeof why) == NTPU_OK, "ref: %s", why);
    CHECK(st != NTPU_OK || !memcmp(Cf, Rf, sizeof Cf), "bf16 over usb differs from ref");
    CHECK(fk_dropped == 0, "%zu link bytes dropped by the firmware", fk_dropped);
    check_all_closed("bf16 matmul");
    printf("ok   ntpu_open(\"usb\") and %dx%dx%d matmuls, int8 and bf16, bit-identical to ref\n", M, K, N);

    /* Unplugged while the library works: NTPU_ERR_NO_DEVICE, no hang. */
    fk_reset(FK_REF);
    ntpu_device *dev = NULL;
    st = ntpu_open("usb", &dev);
    CHECK(st == NTPU_OK, "open: %s", ntpu_last_error(dev));
    pthread_t th;
    pthread_create(&th, NULL, unplug_later, (void *)(uintptr_t)100);
    uint64_t t0 = ms_now();
    int rounds = 0;
    while (st == NTPU_OK && rounds < 100000 && ms_now() - t0 < 20000) {
        st = ntpu_matmul(dev, NTPU_DTYPE_INT8, A8, B8, C8, M, K, N);
        rounds++;
    }
    pthread_join(th, NULL);
    char e[NTPU_ERRMSG_LEN];
    snprintf(e, sizeof e, "%s", ntpu_last_error(dev));
    CHECK(st == NTPU_ERR_NO_DEVICE && strstr(e, "unplugged"), "matmul during unplug: status %d after %d rounds: %s", st,
          rounds, e);
    CHECK(ms_now() - t0 < 10000, "the unplug took %llu ms to surface", (unsigned long long)(ms_now() - t0));
    ntpu_close(dev);
    check_all_closed("unplug under the library");
    printf("ok   unplugged during matmuls: %s (after %d matmuls)\n", e, rounds);
}

static void test_bitstream(void)
{
    enum { DATA = 104000 };
    uint8_t *b = malloc(DATA + 64);
    char err[NTPU_ERRMSG_LEN] = "";
    /* Malformed: refused before anything is opened or sent. */
    fk_reset(FK_REF);
    const uint8_t junk[] = "not a bitstream";
    ntpu_status st = ntpu_usb_load_bitstream(NULL, junk, sizeof junk, err, sizeof err);
    CHECK(st == NTPU_ERR_FORMAT && strstr(err, "no iCE40 sync word"), "junk: status %d: %s", st, err);
    size_t n = ice40_bits_make(b, 872, 272, DATA, 0);
    st = ntpu_usb_load_bitstream(NULL, b, n, err, sizeof err);
    CHECK(st == NTPU_ERR_FORMAT && strstr(err, "HX8K"), "an HX8K bitstream: status %d: %s", st, err);
    CHECK(fk_inits == 0 && fk_nctrl == 0, "a malformed bitstream reached USB (%d inits, %zu requests)", fk_inits,
          fk_nctrl);

    /* An unconfigured board: open says so; a load configures it, and then the link works. */
    fk_reset(FK_REF);
    fk_cdone = 0;
    ntpu_device *dev = NULL;
    st = ntpu_open("usb", &dev);
    CHECK(st == NTPU_ERR_NO_DEVICE && strstr(ntpu_last_error(dev), "CDONE low"), "unconfigured: %d: %s", st,
          ntpu_last_error(dev));
    ntpu_close(dev);
    fk_nctrl = 0;
    n = ice40_bits_make(b, 692, 336, DATA, 0);
    uint64_t t0 = ms_now();
    st = ntpu_usb_load_bitstream(NULL, b, n, err, sizeof err);
    CHECK(st == NTPU_OK, "load: status %d: %s", st, err);
    CHECK(fk_nctrl == 3 && fk_ctrl[0].req == NTPU_USB_REQ_GET_VERSION &&
              fk_ctrl[1].req == NTPU_USB_REQ_FPGA_LOAD_BEGIN && fk_ctrl[1].rt == 0x40 &&
              fk_ctrl[2].req == NTPU_USB_REQ_FPGA_LOAD_END && fk_ctrl[2].rt == 0xC0 && fk_ctrl[2].len == 1,
          "load requests: %zu, expected GET_VERSION, FPGA_LOAD_BEGIN, FPGA_LOAD_END", fk_nctrl);
    CHECK(fk_load_len == n && fk_get(&fk_cdone) && !fk_get(&fk_loading), "the board got %zu of %zu bytes, CDONE %d",
          fk_load_len, n, fk_cdone);
    check_all_closed("load");
    int8_t A[4 * 5] = {1, -2, 3, -4, 5, 6, 7, 8, 9, 10, -11, 12, 13, 14, 15, 16, 17, 18, 19, -20}, B[5 * 3] = {0};
    int32_t C[4 * 3];
    for (int i = 0; i < 15; i++)
        B[i] = (int8_t)(i - 7);
    CHECK(matmul_on("usb", NTPU_DTYPE_INT8, A, B, C, 4, 5, 3, err, sizeof err) == NTPU_OK, "after load: %s", err);
    CHECK(C[0] == 1 * -7 + -2 * -4 + 3 * -1 + -4 * 2 + 5 * 5, "after load: C[0] = %d", (int)C[0]);
    printf("ok   bitstream loaded (%zu bytes, %.2f s): FPGA_LOAD_BEGIN, bulk OUT, FPGA_LOAD_END -> CDONE 1\n", n,
           (ms_now() - t0) / 1000.0);

    /* Refused: a bitstream cut before its wakeup passes the host's checks, and the FPGA says no. */
    n = ice40_bits_make(b, 692, 336, DATA, 1);
    st = ntpu_usb_load_bitstream(NULL, b, n, err, sizeof err);
    CHECK(st == NTPU_ERR_DEVICE && !strcmp(err, "the FPGA refused the bitstream (CDONE stayed low)"),
          "refused: status %d: %s", st, err);
    check_all_closed("refused load");
    st = ntpu_open("usb", &dev);
    CHECK(st == NTPU_ERR_NO_DEVICE && strstr(ntpu_last_error(dev), "CDONE low"), "after refusal: %d: %s", st,
          ntpu_last_error(dev));
    ntpu_close(dev);

    /* A protocol the host does not speak stops the load before FPGA_LOAD_BEGIN. */
    fk_reset(FK_REF);
    fk_dev_cfg[0].major = 0;
    n = ice40_bits_make(b, 692, 336, DATA, 0);
    st = ntpu_usb_load_bitstream(NULL, b, n, err, sizeof err);
    CHECK(st == NTPU_ERR_UNSUPPORTED && strstr(err, "update the board's firmware") && fk_nctrl == 1,
          "old firmware: status %d, %zu requests: %s", st, fk_nctrl, err);
    check_all_closed("old firmware");
    free(b);
    printf("ok   bitstreams refused: malformed (before USB), another part, CDONE low, old firmware\n");
}

static void run_checks(void)
{
    test_open_errors();
    test_setup();
    test_data_path();
    test_library();
    test_bitstream();
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep the lines before a sanitizer abort */
    alarm(240);                       /* a hang anywhere fails the run (SIGALRM) */
    run_checks();
    fk_reset(FK_ECHO);
    ntpu_ref_free(fk_ref);
    free(fk_fifo.buf);
    free(fk_load);
    if (fk_failures) {
        printf("FAIL: %d checks failed\n", fk_failures);
        return 1;
    }
    printf("PASS usb transport over a fake libusb (simulated pico-ice)\n");
    return 0;
}
