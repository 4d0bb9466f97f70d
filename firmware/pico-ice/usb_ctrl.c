/* SPDX-License-Identifier: Apache-2.0 */
/* Descriptors and control requests (usb_ctrl.h). Full speed only, bus powered, one configuration with
 * one vendor interface. The MS OS 2.0 descriptors make Windows bind WinUSB with no driver or .inf. */
#include "usb_ctrl.h"

#include <stddef.h>

#define LE16(x) (uint8_t)((x) % 256), (uint8_t)((x) / 256)

enum { DESC_DEVICE = 1, DESC_CONFIG = 2, DESC_STRING = 3, DESC_INTERFACE = 4, DESC_ENDPOINT = 5, DESC_BOS = 15 };
enum {
    REQ_GET_STATUS = 0,
    REQ_CLEAR_FEATURE = 1,
    REQ_SET_FEATURE = 3,
    REQ_SET_ADDRESS = 5,
    REQ_GET_DESCRIPTOR = 6,
    REQ_GET_CONFIGURATION = 8,
    REQ_SET_CONFIGURATION = 9,
    REQ_GET_INTERFACE = 10,
    REQ_SET_INTERFACE = 11,
};
#define FEATURE_ENDPOINT_HALT 0
#define MSOS20_INDEX 7
#define WINDOWS_8_1 0x06030000u
#define BOS_LEN 33

/* bcdUSB 2.01: Windows reads the BOS (and so the MS OS 2.0 capability) only from 2.01 devices. Device
 * class 0: the interface says what it is. Strings 1, 2, 3: manufacturer, product, serial. */
static const uint8_t device_descriptor[18] = {
    18, DESC_DEVICE, LE16(0x0201), 0, 0, 0, 64, LE16(NTPU_USB_VID), LE16(NTPU_USB_PID), LE16(0x0100), 1, 2, 3, 1};

/* Configuration 1: one interface, bus powered, 250 mA. Interface 0: vendor class 0xFF, two bulk
 * endpoints of 64 bytes, OUT then IN. Byte arrays only: no padding, the struct is the wire layout. */
static const struct {
    uint8_t config[9], interface[9], ep_out[7], ep_in[7];
} config_descriptor = {
    {9, DESC_CONFIG, LE16(32), 1, 1, 0, 0x80, 125},
    {9, DESC_INTERFACE, 0, 0, 2, 0xFF, 0, 0, 0},
    {7, DESC_ENDPOINT, NTPU_USB_EP_OUT, 2, LE16(NTPU_USB_PACKET), 0},
    {7, DESC_ENDPOINT, NTPU_USB_EP_IN, 2, LE16(NTPU_USB_PACKET), 0},
};

/* One capability, the MS OS 2.0 platform capability: UUID D8DD60DF-4589-4CC7-9CD2-659D9E648A9F in GUID
 * byte order, dwWindowsVersion 0x06030000 (8.1 and later), the set's length and the vendor request that
 * returns it. */
static const struct {
    uint8_t bos[5], cap[4], uuid[16], msos[8];
} bos_descriptor = {
    {5, DESC_BOS, LE16(BOS_LEN), 1},
    {28, 16, 5, 0},
    {0xDF, 0x60, 0xDD, 0xD8, 0x89, 0x45, 0xC7, 0x4C, 0x9C, 0xD2, 0x65, 0x9D, 0x9E, 0x64, 0x8A, 0x9F},
    {0x00, 0x00, 0x03, 0x06, LE16(USB_MSOS20_LEN), NTPU_USB_REQ_MS_OS_20, 0},
};

_Static_assert(sizeof config_descriptor == 32 && sizeof bos_descriptor == BOS_LEN, "descriptor padding");

static const char *const strings[] = {NULL, "nanoTPU", "nanoTPU pico-ice"};
/* The interface GUID the host's WinUSB path opens; one for every nanoTPU pico-ice. */
static const char interface_guid[] = "{6AD53CD9-ED11-4716-A5DC-DC10643CAD73}";

static uint8_t *put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
    return put16(put16(p, (uint16_t)v), (uint16_t)(v >> 16));
}

/* ASCII to UTF-16LE, n characters (the NULs a multi-string needs come from the caller's count). */
static uint8_t *put_utf16(uint8_t *p, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p = put16(p, (uint8_t)s[i]);
    }
    return p;
}

static size_t cstrlen(const char *s)
{
    size_t n = 0;
    while (s[n]) {
        n++;
    }
    return n;
}

static void build_msos20(uint8_t *out)
{
    static const char name[] = "DeviceInterfaceGUIDs";
    uint8_t *p = out;
    p = put16(p, 10); /* set header */
    p = put16(p, 0x00);
    p = put32(p, WINDOWS_8_1);
    p = put16(p, USB_MSOS20_LEN);
    p = put16(p, 20); /* compatible ID "WINUSB", no sub-compatible ID */
    p = put16(p, 0x03);
    static const uint8_t winusb[16] = {'W', 'I', 'N', 'U', 'S', 'B'};
    for (size_t i = 0; i < sizeof winusb; i++) {
        *p++ = winusb[i];
    }
    /* Registry property DeviceInterfaceGUIDs, REG_MULTI_SZ: the GUID, its NUL and the list's NUL. */
    const uint16_t name_len = (uint16_t)(2 * sizeof name);
    const uint16_t data_len = (uint16_t)(2 * (sizeof interface_guid + 1));
    p = put16(p, (uint16_t)(10 + name_len + data_len));
    p = put16(p, 0x04);
    p = put16(p, 7);
    p = put16(p, name_len);
    p = put_utf16(p, name, sizeof name);
    p = put16(p, data_len);
    p = put_utf16(p, interface_guid, sizeof interface_guid);
    put16(p, 0);
}

void usb_setup_parse(const uint8_t raw[8], struct usb_setup *s)
{
    s->bmRequestType = raw[0];
    s->bRequest = raw[1];
    s->wValue = (uint16_t)(raw[2] | raw[3] << 8);
    s->wIndex = (uint16_t)(raw[4] | raw[5] << 8);
    s->wLength = (uint16_t)(raw[6] | raw[7] << 8);
}

void usb_ctrl_bus_reset(struct usb_state *st)
{
    st->configuration = 0;
    st->address = 0;
    st->address_pending = 0;
    st->halted_out = 0;
    st->halted_in = 0;
}

void usb_ctrl_init(struct usb_state *st, const struct usb_board_ops *ops, const uint8_t flash_id[8])
{
    static const char hex[] = "0123456789ABCDEF";
    st->ops = ops;
    usb_ctrl_bus_reset(st);
    for (int i = 0; i < 8; i++) {
        st->serial[2 * i] = hex[flash_id[i] >> 4];
        st->serial[2 * i + 1] = hex[flash_id[i] & 15];
    }
    st->serial[USB_SERIAL_LEN] = 0;
    build_msos20(st->msos20);
}

static void reply_in(struct usb_reply *r, const uint8_t *data, uint16_t len)
{
    r->kind = USB_REPLY_IN;
    r->data = data;
    r->len = len;
}

static void reply_buf(struct usb_reply *r, uint16_t len)
{
    reply_in(r, r->buf, len);
}

static void get_descriptor(const struct usb_setup *s, const struct usb_state *st, struct usb_reply *r)
{
    uint8_t type = (uint8_t)(s->wValue >> 8), index = (uint8_t)s->wValue;
    switch (type) {
    case DESC_DEVICE: reply_in(r, device_descriptor, sizeof device_descriptor); return;
    case DESC_CONFIG:
        if (index == 0) {
            reply_in(r, (const uint8_t *)&config_descriptor, sizeof config_descriptor);
        }
        return;
    case DESC_BOS: reply_in(r, (const uint8_t *)&bos_descriptor, sizeof bos_descriptor); return;
    case DESC_STRING: break;
    default: return; /* device qualifier included: a full-speed-only device stalls it (9.6.2) */
    }
    if (index == 0) {
        static const uint8_t langids[4] = {4, DESC_STRING, LE16(0x0409)};
        reply_in(r, langids, sizeof langids);
        return;
    }
    const char *str = index == 3 ? st->serial : index < 3 ? strings[index] : NULL;
    if (str == NULL) {
        return;
    }
    size_t n = cstrlen(str);
    r->buf[0] = (uint8_t)(2 + 2 * n);
    r->buf[1] = DESC_STRING;
    put_utf16(r->buf + 2, str, n);
    reply_buf(r, r->buf[0]);
}

/* ep: 0x01 or 0x81 are the bulk endpoints; 1 when it names one, with its halt flag in *flag. */
static int bulk_endpoint(struct usb_state *st, uint16_t ep, uint8_t **flag)
{
    if (ep == NTPU_USB_EP_OUT || ep == NTPU_USB_EP_IN) {
        *flag = ep == NTPU_USB_EP_OUT ? &st->halted_out : &st->halted_in;
        return 1;
    }
    return 0;
}

static void get_status(const struct usb_setup *s, struct usb_state *st, struct usb_reply *r)
{
    uint8_t *halted;
    r->buf[0] = r->buf[1] = 0; /* bus powered, no remote wakeup, not halted */
    switch (s->bmRequestType) {
    case 0x80: break;
    case 0x81:
        if (s->wIndex != 0) {
            return;
        }
        break;
    case 0x82:
        if (bulk_endpoint(st, s->wIndex, &halted)) {
            r->buf[0] = *halted;
        } else if ((s->wIndex & 0x7F) != 0) {
            return;
        }
        break;
    default: return;
    }
    reply_buf(r, 2);
}

static void set_feature(const struct usb_setup *s, struct usb_state *st, struct usb_reply *r, int set)
{
    uint8_t *halted;
    if (s->bmRequestType != 0x02 || s->wValue != FEATURE_ENDPOINT_HALT) {
        return; /* no remote wakeup, no test modes at full speed */
    }
    if ((s->wIndex & 0x7F) == 0) {
        r->kind = USB_REPLY_ACK; /* EP0's halt clears itself at the next SETUP */
        return;
    }
    if (st->configuration == 0 || !bulk_endpoint(st, s->wIndex, &halted)) {
        return;
    }
    *halted = (uint8_t)set;
    st->ops->set_halt(st->ops->ctx, (uint8_t)s->wIndex, set);
    r->kind = USB_REPLY_ACK;
}

static void standard_request(const struct usb_setup *s, struct usb_state *st, struct usb_reply *r)
{
    switch (s->bRequest) {
    case REQ_GET_STATUS: get_status(s, st, r); return;
    case REQ_CLEAR_FEATURE: set_feature(s, st, r, 0); return;
    case REQ_SET_FEATURE: set_feature(s, st, r, 1); return;
    case REQ_SET_ADDRESS:
        if (s->bmRequestType == 0x00 && s->wValue <= 127 && s->wIndex == 0) {
            st->address = (uint8_t)s->wValue;
            st->address_pending = 1;
            r->kind = USB_REPLY_ACK;
        }
        return;
    case REQ_GET_DESCRIPTOR:
        if (s->bmRequestType == 0x80) {
            get_descriptor(s, st, r);
        }
        return;
    case REQ_GET_CONFIGURATION:
        if (s->bmRequestType == 0x80) {
            r->buf[0] = st->configuration;
            reply_buf(r, 1);
        }
        return;
    case REQ_SET_CONFIGURATION:
        if (s->bmRequestType == 0x00 && s->wValue <= 1) {
            st->configuration = (uint8_t)s->wValue;
            st->halted_out = st->halted_in = 0;
            st->ops->configure(st->ops->ctx, st->configuration);
            r->kind = USB_REPLY_ACK;
        }
        return;
    case REQ_GET_INTERFACE:
        if (s->bmRequestType == 0x81 && s->wIndex == 0 && st->configuration) {
            r->buf[0] = 0;
            reply_buf(r, 1);
        }
        return;
    case REQ_SET_INTERFACE:
        /* Alternate setting 0 is the only one; selecting it resets the endpoints (9.1.1.5). */
        if (s->bmRequestType == 0x01 && s->wIndex == 0 && s->wValue == 0 && st->configuration) {
            st->halted_out = st->halted_in = 0;
            st->ops->configure(st->ops->ctx, st->configuration);
            r->kind = USB_REPLY_ACK;
        }
        return;
    default: return;
    }
}

static void vendor_request(const struct usb_setup *s, struct usb_state *st, struct usb_reply *r)
{
    const struct usb_board_ops *ops = st->ops;
    int in = s->bmRequestType == NTPU_USB_REQTYPE_IN;
    switch (s->bRequest) {
    case NTPU_USB_REQ_GET_VERSION:
        if (in) {
            r->buf[0] = NTPU_USB_PROTO_MAJOR;
            r->buf[1] = NTPU_USB_PROTO_MINOR;
            reply_buf(r, 2);
        }
        return;
    case NTPU_USB_REQ_GET_STATUS:
        if (in) {
            ops->fpga_status(ops->ctx, r->buf);
            reply_buf(r, NTPU_USB_STATUS_LEN);
        }
        return;
    case NTPU_USB_REQ_FPGA_RESET:
        if (!in && s->wValue <= 1) {
            ops->fpga_reset(ops->ctx, s->wValue);
            r->kind = USB_REPLY_ACK;
        }
        return;
    case NTPU_USB_REQ_FPGA_LOAD_BEGIN:
        if (!in) {
            ops->fpga_load_begin(ops->ctx);
            r->kind = USB_REPLY_ACK;
        }
        return;
    case NTPU_USB_REQ_FPGA_LOAD_END:
        if (in && s->wLength >= 1) {
            r->buf[0] = (uint8_t)(ops->fpga_load_end(ops->ctx) != 0);
            reply_buf(r, 1);
        }
        return;
    case NTPU_USB_REQ_SET_FPGA_CLOCK:
        if (!in) {
            ops->fpga_clock(ops->ctx, s->wValue);
            r->kind = USB_REPLY_ACK;
        }
        return;
    case NTPU_USB_REQ_MS_OS_20:
        if (in && s->wIndex == MSOS20_INDEX) {
            reply_in(r, st->msos20, USB_MSOS20_LEN);
        }
        return;
    default: return;
    }
}

void usb_control(const struct usb_setup *s, struct usb_state *st, struct usb_reply *r)
{
    r->kind = USB_REPLY_STALL;
    r->data = NULL;
    r->len = 0;
    if (!(s->bmRequestType & 0x80) && s->wLength != 0) {
        return; /* no OUT data stage anywhere */
    }
    switch (s->bmRequestType & 0x60) {
    case 0x00: standard_request(s, st, r); break;
    case 0x40:
        if (s->bmRequestType == NTPU_USB_REQTYPE_IN || s->bmRequestType == NTPU_USB_REQTYPE_OUT) {
            vendor_request(s, st, r);
        }
        break;
    default: break;
    }
    if (r->kind == USB_REPLY_IN && r->len > s->wLength) {
        r->len = s->wLength;
    }
    if (r->kind == USB_REPLY_IN && s->wLength == 0) {
        r->kind = USB_REPLY_ACK; /* no data stage was asked for: only the status stage */
    }
}
