/* SPDX-License-Identifier: Apache-2.0 */
/* The real pico-ice firmware image on the emulated RP2040 (sim/rp2040/): boot through boot2, enumerate
 * as a host would (checking USB 2.0 chapter 9 on the way), load a fake bitstream and a bad one through
 * the vendor requests and bulk OUT, and loop bytes through the provisional SPI link to the FPGA model's
 * loopback. Prints each check; exits 1 on any failure. Usage: emu_pico_ice IMAGE.bin */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "rp2040_sim.h"
#include "ntpu_ref.h"
#include "usb_host.h"
#include "usb_requests.h"

#define USB_MSOS20_LEN_WANT 162 /* the BOS's wMSOSDescriptorSetTotalLength */

static int failures;

static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures += !ok;
}

static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* A string descriptor's UTF-16LE text as ASCII; "" when malformed. */
static void string_of(const uint8_t *d, int n, char *out)
{
    out[0] = 0;
    if (n < 2 || d[0] != n || d[1] != 3 || n % 2) {
        return;
    }
    int k = 0;
    for (int i = 2; i < n; i += 2) {
        out[k++] = d[i + 1] ? '?' : (char)d[i];
    }
    out[k] = 0;
}

static void enumerate(struct usb_host *h)
{
    struct rp2040 *s = h->s;
    uint8_t d[512];
    char str[128];

    usbd_bus_reset(s);
    usbh_wait_us(h, 100);
    int n = usbh_control_in(h, 0x80, 6, 0x0100, 0, 64, d);
    check(n == 18, "GET_DESCRIPTOR(device, 64) at address 0, as Linux asks first: one short packet of %d bytes", n);
    n = usbh_control_in(h, 0x80, 6, 0x0100, 0, 8, d);
    check(n == 8 && d[0] == 18 && d[1] == 1 && d[7] == 64,
          "GET_DESCRIPTOR(device, 8) at address 0: %d bytes, bLength %u, bDescriptorType %u, bMaxPacketSize0 %u", n,
          d[0], d[1], d[7]);

    usbd_bus_reset(s);
    usbh_wait_us(h, 100);
    usbh_setup_only(h, 0x00, 5, 9, 0, 0); /* SET_ADDRESS(9) abandoned before its status stage */
    usbh_wait_us(h, 200);
    int c = usbh_control_nodata(h, 0x02, 1, 0, 0); /* CLEAR_FEATURE(ENDPOINT_HALT, EP0): a no-data request */
    usbh_wait_us(h, 2000);
    n = usbh_control_in(h, 0x80, 6, 0x0100, 0, 8, d);
    check(c == 0 && n == 8, "SET_ADDRESS(9) abandoned, then a no-data request: the device still answers at address 0");
    n = usbh_control_nodata(h, 0x00, 5, 5, 0);
    check(n == 0, "SET_ADDRESS(5): status stage completed at address 0 (so the address was not applied early)");
    usbh_wait_us(h, 2000); /* SET_ADDRESS recovery interval, USB 2.0 9.2.6.3 */
    static const uint8_t probe[8] = {0x80, 6, 0, 1, 0, 0, 8, 0};
    check(usbd_setup(s, 0, probe) == USB_TIMEOUT, "after the status stage: no answer at address 0");
    h->addr = 5;

    n = usbh_control_in(h, 0x80, 6, 0x0100, 0, 18, d);
    check(n == 18 && d[0] == 18 && d[1] == 1 && le16(d + 2) == 0x0201 && d[7] == 64 && le16(d + 8) == NTPU_USB_VID &&
              le16(d + 10) == NTPU_USB_PID && d[14] == 1 && d[15] == 2 && d[16] == 3 && d[17] == 1,
          "GET_DESCRIPTOR(device, 18) at address 5: %d bytes, bcdUSB %04x, %04x:%04x, strings %u/%u/%u, %u "
          "configuration",
          n, le16(d + 2), le16(d + 8), le16(d + 10), d[14], d[15], d[16], d[17]);

    n = usbh_control_in(h, 0x80, 6, 0x0200, 0, 9, d);
    uint16_t total = n == 9 ? le16(d + 2) : 0;
    check(n == 9 && d[0] == 9 && d[1] == 2 && total >= 9, "GET_DESCRIPTOR(configuration, 9): wTotalLength %u", total);
    n = usbh_control_in(h, 0x80, 6, 0x0200, 0, total, d);
    int walk = 0, ifaces = 0, eps = 0, good_eps = 0, bad = n != total;
    while (!bad && walk < n) {
        uint8_t len = d[walk], type = d[walk + 1];
        if (len < 2 || walk + len > n) {
            bad = 1;
            break;
        }
        ifaces += type == 4 && len == 9;
        if (type == 4) {
            bad |= d[walk + 4] != 2 || d[walk + 5] != 0xFF;
        }
        if (type == 5 && len == 7) {
            eps++;
            good_eps += (d[walk + 2] == NTPU_USB_EP_OUT || d[walk + 2] == NTPU_USB_EP_IN) && d[walk + 3] == 2 &&
                        le16(d + walk + 4) == 64;
        }
        walk += len;
    }
    check(!bad && walk == total && d[4] == 1 && ifaces == 1 && eps == 2 && good_eps == 2,
          "GET_DESCRIPTOR(configuration, %u): descriptors walk to %d, 1 vendor interface, bulk 0x01 and 0x81 of 64 "
          "bytes",
          total, walk);

    n = usbh_control_in(h, 0x80, 6, 0x0300, 0, 255, d);
    check(n == 4 && d[0] == 4 && d[1] == 3 && le16(d + 2) == 0x0409, "string 0: LANGID 0x%04x",
          n >= 4 ? le16(d + 2) : 0);
    static const char *const want[] = {NULL, "nanoTPU", "nanoTPU pico-ice"};
    char serial[17];
    for (int i = 0; i < 8; i++) {
        snprintf(serial + 2 * i, 3, "%02X", s->flash_uid[i]);
    }
    for (int i = 1; i <= 3; i++) {
        n = usbh_control_in(h, 0x80, 6, (uint16_t)(0x0300 | i), 0x0409, 255, d);
        string_of(d, n, str);
        check(strcmp(str, i == 3 ? serial : want[i]) == 0, "string %d: \"%s\"%s", i, str,
              i == 3 ? " (the flash model's unique ID, read with command 0x4B)" : "");
    }

    n = usbh_control_in(h, 0x80, 6, 0x0F00, 0, 5, d);
    total = n == 5 ? le16(d + 2) : 0;
    n = usbh_control_in(h, 0x80, 6, 0x0F00, 0, total, d);
    check(n == total && total > 5 && d[0] == 5 && d[1] == 15 && d[5] == 28 && d[6] == 16 && d[7] == 5,
          "BOS: wTotalLength %u, %u capability, a platform capability of %u bytes", total, d[4], d[5]);

    n = usbh_control_in(h, 0x80, 6, 0x0600, 0, 10, d);
    check(n == USBH_STALL, "GET_DESCRIPTOR(device qualifier): STALL (full-speed only)");
    n = usbh_control_in(h, 0x80, 0x33, 0, 0, 4, d);
    check(n == USBH_STALL, "an unknown standard request: STALL");

    /* Hosts abandon control transfers (a timeout, a process closing the device): the controller keeps the
     * abandoned buffer armed, and the next transfer must not get its bytes. */
    usbh_setup_only(h, 0x80, 6, 0x0100, 0, 18);
    usbh_wait_us(h, 200);
    n = usbh_control_in(h, 0x80, 6, 0x0300, 0, 255, d);
    check(n == 4 && d[1] == 3,
          "a data stage abandoned, then string 0: %d bytes of type %u (not the abandoned "
          "device descriptor)",
          n, n > 1 ? d[1] : 0);
    usbh_setup_only(h, 0x00, 9, 0, 0, 0);
    usbh_wait_us(h, 200);
    n = usbh_control_in(h, 0x80, 8, 0, 0, 1, d);
    check(n == 1, "a status stage abandoned (SET_CONFIGURATION(0)), then GET_CONFIGURATION: %d byte(s)", n);

    check(usbh_control_nodata(h, 0x00, 9, 1, 0) == 0, "SET_CONFIGURATION(1)");
    n = usbh_control_in(h, 0x80, 8, 0, 0, 1, d);
    check(n == 1 && d[0] == 1, "GET_CONFIGURATION: %d", n == 1 ? d[0] : -1);
    h->bulk_in_data1 = h->bulk_out_data1 = 0;

    n = usbh_control_in(h, 0x80, 0, 0, 0, 2, d);
    check(n == 2 && d[0] == 0 && d[1] == 0, "GET_STATUS(device): bus powered, no remote wakeup");
    n = usbh_control_in(h, NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_MS_OS_20, 0, 7, USB_MSOS20_LEN_WANT, d);
    check(n == USB_MSOS20_LEN_WANT && le16(d) == 10 && le16(d + 8) == USB_MSOS20_LEN_WANT &&
              memcmp(d + 14, "WINUSB", 6) == 0,
          "vendor MS_OS_20: %d bytes in three packets (DATA1, DATA0, DATA1), set header, WINUSB", n);
    n = usbh_control_in(h, NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_GET_VERSION, 0, 0, 2, d);
    check(n == 2 && d[0] == NTPU_USB_PROTO_MAJOR && d[1] == NTPU_USB_PROTO_MINOR, "vendor GET_VERSION: %u.%u", d[0],
          d[1]);
    n = usbh_control_in(h, NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_GET_STATUS, 0, 0, 8, d);
    check(n == 8 && !(d[0] & NTPU_USB_STATUS_CDONE) && le16(d + 2) == 4,
          "vendor GET_STATUS: flags 0x%02x (no CDONE: the FPGA's flash holds no design), clock divider %u", d[0],
          le16(d + 2));
}

/* FPGA_LOAD_BEGIN, the bytes on bulk OUT, FPGA_LOAD_END: returns its answer (CDONE) or -1. With probe,
 * a GET_STATUS after each packet, its SETUP arriving while the packet is clocked in and after an abandoned
 * data stage: each must answer LOADING and a count, not the abandoned bytes. */
static int load(struct usb_host *h, const uint8_t *bits, uint32_t len, int probe)
{
    uint8_t d[64];
    if (usbh_control_nodata(h, NTPU_USB_REQTYPE_OUT, NTPU_USB_REQ_FPGA_LOAD_BEGIN, 0, 0) != 0) {
        return -1;
    }
    int good = 0, probes = 0;
    for (uint32_t off = 0; off < len; off += 64) {
        if (probe) {
            usbh_setup_only(h, 0x80, 6, 0x0100, 0, 18);
            usbh_wait_us(h, 200);
        }
        if (usbh_bulk_out(h, bits + off, len - off < 64 ? len - off : 64) != 0) {
            return -1;
        }
        if (probe) {
            int n = usbh_control_in(h, NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_GET_STATUS, 0, 0, 8, d);
            good += n == 8 && (d[0] & NTPU_USB_STATUS_LOADING);
            probes++;
        }
    }
    if (probe) {
        check(good == probes,
              "GET_STATUS while bitstream packets are clocked in, each after an abandoned data "
              "stage: %d of %d answered LOADING",
              good, probes);
    }
    int n = usbh_control_in(h, NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_FPGA_LOAD_END, 0, 0, 1, d);
    return n == 1 ? d[0] : -1;
}

static void bitstreams(struct usb_host *h)
{
    struct rp2040 *s = h->s;
    uint8_t bits[300], d[8];
    for (uint32_t i = 0; i < sizeof bits; i++) {
        bits[i] = (uint8_t)(i * 37u + 11u);
    }
    /* The iCE40 preamble: 0xFF 0x00, a comment, then the sync word 0x7EAA997E. */
    static const uint8_t head[] = {0xFF, 0x00, 'n', 't', 'p', 'u', 0x00, 0xFF, 0x7E, 0xAA, 0x99, 0x7E};
    memcpy(bits, head, sizeof head);
    int r = load(h, bits, sizeof bits, 1);
    check(r == 1 && s->fpga.cdone == 1, "good bitstream (%zu bytes): FPGA_LOAD_END answers %d, CDONE pin %d",
          sizeof bits, r, s->fpga.cdone);
    check(s->fpga.ncfg == sizeof bits && memcmp(s->fpga.cfg, bits, sizeof bits) == 0,
          "the FPGA model received %u bytes MSB first with SS low, equal to those sent", s->fpga.ncfg);
    /* The iCE40 takes SCK up to 25 MHz: at 48 MHz a period under 2 cycles would be too fast. */
    uint64_t per = s->fpga.sck_min_period;
    check(per >= 2, "configuration clock: SCK period at least %llu cycles (%.1f MHz at most)", (unsigned long long)per,
          48.0 / (double)(per ? per : 1));
    int n = usbh_control_in(h, NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_GET_STATUS, 0, 0, 8, d);
    uint32_t count = (uint32_t)d[4] | (uint32_t)d[5] << 8 | (uint32_t)d[6] << 16 | (uint32_t)d[7] << 24;
    check(n == 8 && (d[0] & NTPU_USB_STATUS_CDONE) && (d[0] & NTPU_USB_STATUS_RUNNING) && count == sizeof bits,
          "GET_STATUS after the load: flags 0x%02x, %u bitstream bytes", d[0], count);
}

static void bad_bitstream(struct usb_host *h)
{
    struct rp2040 *s = h->s;
    uint8_t bits[200];
    for (uint32_t i = 0; i < sizeof bits; i++) {
        bits[i] = (uint8_t)(i * 13u + 5u);
    }
    bits[0] = 0xFF, bits[1] = 0x00;
    int r = load(h, bits, sizeof bits, 0);
    check(r == 0 && s->fpga.cdone == 0 && s->fpga.ncfg == sizeof bits,
          "bad bitstream (%zu bytes, no sync word): FPGA_LOAD_END answers %d, CDONE pin %d, %u bytes received",
          sizeof bits, r, s->fpga.cdone, s->fpga.ncfg);
}

/* Bytes out on bulk OUT, back on bulk IN through the firmware, the SPI link and the FPGA's loopback. */
static void loopback(struct usb_host *h, uint32_t total)
{
    struct rp2040 *s = h->s;
    uint8_t *tx = malloc(total), *rx = malloc(total + 64), pkt[64];
    uint32_t sent = 0, got = 0, zlps = 0;
    for (uint32_t i = 0; i < total; i++) {
        tx[i] = (uint8_t)(i * 7u + (i >> 8));
    }
    uint32_t in0 = s->fpga.link_bytes_in, out0 = s->fpga.link_bytes_out, txn0 = s->fpga.link_txns;
    uint64_t start = s->icount;
    while (got < total && s->icount - start < 200000000u && !s->error[0] && h->errors == 0) {
        if (sent < total) {
            uint32_t n = total - sent < 64 ? total - sent : 64;
            enum usb_result r = usbd_out(s, h->addr, 1, tx + sent, n, h->bulk_out_data1);
            if (r == USB_ACK && !s->usb_seq_errors) {
                sent += n;
                h->bulk_out_data1 ^= 1;
            } else if (r != USB_NAK) {
                check(0, "bulk OUT during the loopback: result %d", (int)r);
                break;
            }
        }
        int n = usbh_bulk_in_once(h, pkt);
        if (n >= 0) {
            if (got + (uint32_t)n > total) {
                check(0, "bulk IN: %u bytes more than were sent", got + (uint32_t)n - total);
                break;
            }
            memcpy(rx + got, pkt, (size_t)n);
            got += (uint32_t)n;
            zlps += n == 0;
        } else if (n != -3) {
            break;
        }
        rp2040_run(s, 3000);
    }
    check(sent == total && got == total && memcmp(tx, rx, total) == 0,
          "loopback: %u bytes sent on bulk OUT, %u received on bulk IN, equal (%u zero-length packets, %u link "
          "transactions, %llu instructions)",
          sent, got, zlps, s->fpga.link_txns - txn0, (unsigned long long)(s->icount - start));
    if (got == total && total % 64u == 0) { /* a read of a multiple of 64 bytes ends with a zero-length packet */
        int n = -3;
        for (int i = 0; i < 100 && n == -3; i++) {
            n = usbh_bulk_in_once(h, pkt);
            rp2040_run(s, 3000);
        }
        check(n == 0, "after %u bytes (a multiple of 64), bulk IN ends with a zero-length packet", total);
    }
    check(s->fpga.link_bytes_in - in0 == total && s->fpga.link_bytes_out - out0 == total && s->fpga.link_errors == 0,
          "link: %u bytes into the FPGA, %u out, no framing error", s->fpga.link_bytes_in - in0,
          s->fpga.link_bytes_out - out0);
    free(tx);
    free(rx);
}

/* Bulk OUT with nobody reading IN: the firmware and the FPGA fill up, then the host sees only NAKs; the
 * bytes all come back once it reads. */
static void flow_control(struct usb_host *h)
{
    struct rp2040 *s = h->s;
    uint8_t tx[4096], rx[4096 + 64], pkt[64];
    uint32_t sent = 0, got = 0;
    for (uint32_t i = 0; i < sizeof tx; i++) {
        tx[i] = (uint8_t)(i ^ (i >> 7));
    }
    uint64_t naked = 0;
    while (sent < sizeof tx && naked < 2000000u && !s->error[0]) {
        enum usb_result r = usbd_out(s, h->addr, 1, tx + sent, 64, h->bulk_out_data1);
        if (r == USB_ACK && !s->usb_seq_errors) {
            sent += 64, h->bulk_out_data1 ^= 1, naked = 0;
        } else if (r == USB_NAK) {
            naked += 3000;
        } else {
            break;
        }
        rp2040_run(s, 3000);
    }
    check(sent > 0 && sent < sizeof tx, "flow control: with bulk IN unread, bulk OUT NAKs after %u bytes", sent);
    for (uint64_t spent = 0; got < sent && spent < 100000000u && !s->error[0]; spent += 3000) {
        int n = usbh_bulk_in_once(h, pkt);
        if (n > 0 && got + (uint32_t)n <= sent) {
            memcpy(rx + got, pkt, (size_t)n);
            got += (uint32_t)n;
        } else if (n != -3 && n != 0) {
            break;
        }
        rp2040_run(s, 3000);
    }
    check(got == sent && memcmp(tx, rx, sent) == 0, "flow control: all %u bytes then came back on bulk IN, equal", got);
}

/* SET_FEATURE(ENDPOINT_HALT) stalls bulk IN; CLEAR_FEATURE lifts it and restarts the toggle at DATA0. */
static void halt(struct usb_host *h)
{
    uint8_t pkt[64];
    check(usbh_control_nodata(h, 0x02, 3, 0, NTPU_USB_EP_IN) == 0, "SET_FEATURE(ENDPOINT_HALT, 0x81)");
    check(usbh_bulk_in_once(h, pkt) == USBH_STALL, "bulk IN while halted: STALL");
    check(usbh_control_nodata(h, 0x02, 1, 0, NTPU_USB_EP_IN) == 0, "CLEAR_FEATURE(ENDPOINT_HALT, 0x81)");
    h->bulk_in_data1 = 0;
    check(usbh_bulk_in_once(h, pkt) == -3, "bulk IN after the halt is cleared: NAK (nothing to send)");
    check(usbh_control_nodata(h, 0x02, 3, 0, NTPU_USB_EP_OUT) == 0, "SET_FEATURE(ENDPOINT_HALT, 0x01)");
    check(usbd_out(h->s, h->addr, 1, pkt, 8, h->bulk_out_data1) == USB_STALL, "bulk OUT while halted: STALL");
    check(usbh_control_nodata(h, 0x02, 1, 0, NTPU_USB_EP_OUT) == 0, "CLEAR_FEATURE(ENDPOINT_HALT, 0x01)");
    h->bulk_out_data1 = 0;
    check(usbh_bulk_out(h, pkt, 0) == 0, "a zero-length packet on bulk OUT at DATA0 after the halt: taken");
    uint8_t d[4];
    check(usbh_control_nodata(h, 0x80, 6, 0x0100, 0) == 0 && usbh_control_in(h, 0x80, 0, 0, 0, 2, d) == 2,
          "GET_DESCRIPTOR with wLength 0: no data stage, an IN status stage; the next request works");
}

static uint32_t ref_have(void *far)
{
    size_t n;
    ntpu_ref_peek(far, &n);
    return n > 64 ? 64u : (uint32_t)n;
}

static void ref_put(void *far, uint8_t b)
{
    ntpu_ref_write(far, &b, 1);
}

static uint8_t ref_get(void *far)
{
    uint8_t b = 0;
    ntpu_ref_read(far, &b, 1);
    return b;
}

/* docs/protocol.md's frame: SOF, SEQ, LEN, payload, CRC-32 (zlib's) over SEQ, LEN and the payload. */
static uint32_t frame(uint8_t *out, uint8_t sof, uint8_t seq, const uint8_t *payload, uint16_t len)
{
    out[0] = sof, out[1] = seq, out[2] = (uint8_t)len, out[3] = (uint8_t)(len >> 8);
    memcpy(out + 4, payload, len);
    uint32_t crc = (uint32_t)crc32(0L, out + 1, 3u + len);
    for (int i = 0; i < 4; i++) {
        out[4 + len + i] = (uint8_t)(crc >> (8 * i));
    }
    return 8u + len;
}

/* An INFO command through USB, the firmware, the SPI link and the golden model as the FPGA's design;
 * its reply must be the frame a golden model answers directly. */
static void golden_info(struct usb_host *h)
{
    struct rp2040 *s = h->s;
    ntpu_ref *ref = ntpu_ref_new(NULL), *direct = ntpu_ref_new(NULL);
    uint8_t cmd[16], want[128], got[128 + 64], pkt[64], op = 0x01; /* INFO */
    uint32_t n = frame(cmd, 0xA5, 0, &op, 1), wn, gn = 0;
    ntpu_ref_write(direct, cmd, n);
    wn = (uint32_t)ntpu_ref_read(direct, want, sizeof want);
    s->fpga.far = ref, s->fpga.far_have = ref_have, s->fpga.far_put = ref_put, s->fpga.far_get = ref_get;
    int ok = usbh_bulk_out(h, cmd, n) == 0;
    for (uint64_t spent = 0; ok && gn < wn && spent < 20000000u && !s->error[0]; spent += 3000) {
        int k = usbh_bulk_in_once(h, pkt);
        if (k > 0 && gn + (uint32_t)k <= sizeof got) {
            memcpy(got + gn, pkt, (size_t)k);
            gn += (uint32_t)k;
        }
        rp2040_run(s, 3000);
    }
    uint8_t check_frame[128];
    int crc_ok = gn >= 8 && gn - 8u == (uint32_t)(got[2] | got[3] << 8) &&
                 frame(check_frame, 0x5A, got[1], got + 4, (uint16_t)(gn - 8u)) == gn &&
                 memcmp(check_frame, got, gn) == 0;
    check(ok && gn == wn && wn > 8 && memcmp(got, want, wn) == 0 && crc_ok && got[4] == 0,
          "golden model as the FPGA: INFO (%u-byte frame) through bulk OUT, the link and sim/ref, a %u-byte reply "
          "(CRC good, status %u) equal to the model's own",
          n, gn, gn > 4 ? got[4] : 255);
    s->fpga.far = NULL;
    ntpu_ref_free(ref);
    ntpu_ref_free(direct);
}

/* The abandoned data stage again, now with the SETUP arriving at points of a 64-byte link transaction:
 * the next transfer's first IN comes a SETUP's bus time after it. */
static void abandoned_busy(struct usb_host *h)
{
    uint8_t d[64], pkt[64];
    int bad = 0, tries = 0;
    for (uint32_t k = 0; k < 24 && !h->s->error[0]; k++, tries++) {
        usbh_setup_only(h, 0x80, 6, 0x0100, 0, 18);
        usbh_wait_us(h, 200);
        memset(pkt, (int)k, sizeof pkt);
        usbh_bulk_out(h, pkt, sizeof pkt);
        rp2040_run(h->s, 100u * k);
        int n = usbh_control_in(h, 0x80, 6, 0x0300, 0, 255, d);
        bad += !(n == 4 && d[1] == 3);
        for (uint32_t got = 0, spent = 0; got < sizeof pkt && spent < 1000000u; spent += 3000) {
            int m = usbh_bulk_in_once(h, d);
            got += m > 0 ? (uint32_t)m : 0u;
            rp2040_run(h->s, 3000);
        }
    }
    check(bad == 0,
          "with 64-byte link transactions running: %d of %d transfers after an abandoned data stage got "
          "the abandoned bytes",
          bad, tries);
}

/* SET_FPGA_CLOCK: GP24 is CLK_GPOUT2 = clk_usb / divider, or a low SIO output when stopped. */
static void fpga_clock(struct usb_host *h)
{
    struct rp2040 *s = h->s;
    uint8_t d[8];
    int r = usbh_control_nodata(h, NTPU_USB_REQTYPE_OUT, NTPU_USB_REQ_SET_FPGA_CLOCK, 2, 0);
    int n = usbh_control_in(h, NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_GET_STATUS, 0, 0, 8, d);
    uint32_t ctrl = s->clk[0x18 / 4], div = s->clk[0x1C / 4];
    check(r == 0 && n == 8 && le16(d + 2) == 2 && (ctrl & (1u << 11)) && ((ctrl >> 5) & 0xFu) == 7u && div == 2u << 8 &&
              (s->gpio_ctrl[24] & 0x1Fu) == 8u,
          "SET_FPGA_CLOCK(2): GP24 is CLK_GPOUT2 from clk_usb / %u = %u MHz, GET_STATUS says %u", div >> 8,
          div ? 48u * 256u / div : 0u, le16(d + 2));
    r = usbh_control_nodata(h, NTPU_USB_REQTYPE_OUT, NTPU_USB_REQ_SET_FPGA_CLOCK, 0, 0);
    check(r == 0 && !(s->clk[0x18 / 4] & (1u << 11)) && (s->gpio_ctrl[24] & 0x1Fu) == 5u && gpio_level(s, 24) == 0,
          "SET_FPGA_CLOCK(0): CLK_GPOUT2 disabled, GP24 held low");
    usbh_control_nodata(h, NTPU_USB_REQTYPE_OUT, NTPU_USB_REQ_SET_FPGA_CLOCK, 4, 0);
}

/* A bus reset while configured: address 0, unconfigured; enumeration again, then the link still works. */
static void re_enumerate(struct usb_host *h)
{
    struct rp2040 *s = h->s;
    uint8_t d[18];
    usbd_bus_reset(s);
    usbh_wait_us(h, 100);
    h->addr = 0;
    int r = usbh_control_nodata(h, 0x00, 5, 6, 0);
    usbh_wait_us(h, 2000);
    h->addr = 6;
    int n = usbh_control_in(h, 0x80, 6, 0x0100, 0, 18, d);
    int c = usbh_control_in(h, 0x80, 8, 0, 0, 1, d + 17);
    check(r == 0 && n == 18 && c == 1 && d[17] == 0, "bus reset while configured: SET_ADDRESS(6), the device "
                                                     "descriptor at 6, GET_CONFIGURATION 0");
    check(usbh_control_nodata(h, 0x00, 9, 1, 0) == 0, "SET_CONFIGURATION(1) again");
    h->bulk_in_data1 = h->bulk_out_data1 = 0;
}

/* FPGA_RESET: 1 holds CRESET_B low (CDONE drops), 0 lets the FPGA boot from its own flash (no design
 * there: CDONE stays low, the status says running). */
static void fpga_reset(struct usb_host *h)
{
    struct rp2040 *s = h->s;
    uint8_t d[8];
    int r = usbh_control_nodata(h, NTPU_USB_REQTYPE_OUT, NTPU_USB_REQ_FPGA_RESET, 1, 0);
    int n = usbh_control_in(h, NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_GET_STATUS, 0, 0, 8, d);
    check(r == 0 && n == 8 && gpio_level(s, 27) == 0 && s->fpga.cdone == 0 && d[0] == 0,
          "FPGA_RESET(1): CRESET_B low, CDONE low, GET_STATUS flags 0x%02x", d[0]);
    r = usbh_control_nodata(h, NTPU_USB_REQTYPE_OUT, NTPU_USB_REQ_FPGA_RESET, 0, 0);
    n = usbh_control_in(h, NTPU_USB_REQTYPE_IN, NTPU_USB_REQ_GET_STATUS, 0, 0, 8, d);
    check(r == 0 && n == 8 && gpio_level(s, 27) == 1 && !s->fpga.spi_mode && d[0] == NTPU_USB_STATUS_RUNNING,
          "FPGA_RESET(0): CRESET_B released with SS high (boot from the FPGA's flash), flags 0x%02x", d[0]);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s ntpu-pico-ice.bin\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* each check's line out before a crash could lose it */
    FILE *f = fopen(argv[1], "rb");
    static uint8_t image[SIM_FLASH_SIZE];
    size_t len = f ? fread(image, 1, sizeof image, f) : 0;
    if (f) {
        fclose(f);
    }
    if (len == 0) {
        fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
        return 2;
    }
    static struct rp2040 s;
    if (rp2040_init(&s, image, len) != 0) {
        printf("FAIL boot: %s\n", s.error);
        return 1;
    }
    check(1, "boot2 CRC checked, boot2 copied to 0x20041F00 (%zu-byte image)", len);
    while (!usbd_connected(&s) && s.icount < 20000000u && rp2040_run(&s, 10000) == 0) {
    }
    check(usbd_connected(&s) && s.xip,
          "boot: boot2 set up XIP, the firmware ran from flash and connected to USB after %llu instructions (%llu us "
          "on the timer)",
          (unsigned long long)s.icount, (unsigned long long)timer_us(&s));
    uint32_t vco = (s.pll_cs & 0x3Fu) ? 12u * s.pll_fbdiv / (s.pll_cs & 0x3Fu) : 0;
    uint32_t post = ((s.pll_prim >> 16) & 7u) * ((s.pll_prim >> 12) & 7u);
    check(vco == 1200 && post == 25 && (s.clk[0x44 / 4] == 0) && s.xosc_startup > 0,
          "clocks: PLL_USB VCO %u MHz / %u = %u MHz, clk_sys on its aux source", vco, post, post ? vco / post : 0);
    if (s.error[0] || !usbd_connected(&s)) {
        printf("FAIL %s\n", s.error[0] ? s.error : "the firmware never connected");
        return 1;
    }
    struct usb_host h = {.s = &s, .nak_budget = 20000000u};
    enumerate(&h);
    if (!s.error[0]) {
        bitstreams(&h);
    }
    if (!s.error[0]) {
        loopback(&h, 1000);
    }
    if (!s.error[0]) {
        loopback(&h, 64 * 5);
    }
    if (!s.error[0]) {
        flow_control(&h);
    }
    if (!s.error[0]) {
        halt(&h);
    }
    if (!s.error[0]) {
        loopback(&h, 200);
    }
    if (!s.error[0]) {
        golden_info(&h);
    }
    if (!s.error[0]) {
        abandoned_busy(&h);
    }
    if (!s.error[0]) {
        fpga_clock(&h);
    }
    if (!s.error[0]) {
        re_enumerate(&h);
    }
    if (!s.error[0]) {
        bitstreams(&h);
    }
    if (!s.error[0]) {
        loopback(&h, 130);
    }
    if (!s.error[0]) {
        bad_bitstream(&h);
    }
    if (!s.error[0]) {
        fpga_reset(&h);
    }
    check(s.usb_bc_rule_errors == 0, "buffer control words: AVAILABLE always set in a write of its own");
    if (s.error[0]) {
        check(0, "emulation stopped: %s", s.error);
    }
    check(h.errors == 0, "USB host: %u protocol errors, %u NAKs", h.errors, h.naks);
    printf("%s: %d failure%s, %llu instructions (%llu ms emulated)\n", failures ? "FAIL" : "PASS", failures,
           failures == 1 ? "" : "s", (unsigned long long)s.icount,
           (unsigned long long)(s.icount / (SIM_CLK_HZ / 1000u)));
    rp2040_free(&s);
    return failures ? 1 : 0;
}
