/* SPDX-License-Identifier: Apache-2.0 */
/* The pico-ice firmware's descriptors and control requests (firmware/pico-ice/usb_ctrl.c), compiled for
 * the host: descriptor lengths and totals walked the way a host walks them, chapter 9's requests
 * (SET_ADDRESS deferred to the driver, halts, configurations, STALL for the unknown), the vendor requests
 * reaching the board operations, the BOS and the MS OS 2.0 set, and the SPI link's flow-control plan. */
#include <criterion/criterion.h>
#include <string.h>

#include "link_flow.h"
#include "usb_ctrl.h"

static struct calls {
    int configure, config, set_halt, halt_ep, halt, reset, reset_hold, begin, end, clock, clock_div, status;
    int cdone;
} calls;

static void f_configure(void *ctx, uint8_t c)
{
    (void)ctx;
    calls.configure++;
    calls.config = c;
}
static void f_set_halt(void *ctx, uint8_t ep, int h)
{
    (void)ctx;
    calls.set_halt++;
    calls.halt_ep = ep;
    calls.halt = h;
}
static void f_reset(void *ctx, int hold)
{
    (void)ctx;
    calls.reset++;
    calls.reset_hold = hold;
}
static void f_begin(void *ctx)
{
    (void)ctx;
    calls.begin++;
}
static int f_end(void *ctx)
{
    (void)ctx;
    calls.end++;
    return calls.cdone;
}
static void f_clock(void *ctx, uint16_t div)
{
    (void)ctx;
    calls.clock++;
    calls.clock_div = div;
}
static void f_status(void *ctx, uint8_t out[NTPU_USB_STATUS_LEN])
{
    (void)ctx;
    calls.status++;
    for (int i = 0; i < NTPU_USB_STATUS_LEN; i++) {
        out[i] = (uint8_t)(0xA0 + i);
    }
}

static const struct usb_board_ops ops = {NULL, f_configure, f_set_halt, f_reset, f_begin, f_end, f_clock, f_status};
static const uint8_t flash_id[8] = {0xE6, 0x61, 0x38, 0x52, 0x83, 0x1B, 0x2C, 0x2F};
static struct usb_state st;
static struct usb_reply r;

static void setup(void)
{
    memset(&calls, 0, sizeof calls);
    usb_ctrl_init(&st, &ops, flash_id);
}

TestSuite(usb_ctrl, .init = setup);

static void req(uint8_t type, uint8_t request, uint16_t value, uint16_t index, uint16_t length)
{
    const uint8_t raw[8] = {type,
                            request,
                            (uint8_t)value,
                            (uint8_t)(value >> 8),
                            (uint8_t)index,
                            (uint8_t)(index >> 8),
                            (uint8_t)length,
                            (uint8_t)(length >> 8)};
    struct usb_setup s;
    usb_setup_parse(raw, &s);
    cr_assert_eq(s.wValue, value);
    cr_assert_eq(s.wLength, length);
    memset(&r, 0x55, sizeof r);
    usb_control(&s, &st, &r);
}

static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static void get_desc(uint8_t type, uint8_t index, uint16_t length)
{
    req(0x80, 6, (uint16_t)(type << 8 | index), type == 3 && index ? 0x0409 : 0, length);
}

static void stalls(const char *what)
{
    cr_assert_eq(r.kind, USB_REPLY_STALL, "%s did not stall", what);
}

/* UTF-16LE string descriptor against ASCII. */
static void string_is(const char *want)
{
    size_t n = strlen(want);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    cr_assert_eq(r.len, 2 + 2 * n);
    cr_assert_eq(r.data[0], r.len, "bLength");
    cr_assert_eq(r.data[1], 3);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(le16(r.data + 2 + 2 * i), (uint8_t)want[i], "character %zu of '%s'", i, want);
    }
}

Test(usb_ctrl, device_descriptor)
{
    get_desc(1, 0, 64);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    cr_assert_eq(r.len, 18);
    cr_assert_eq(r.data[0], 18);
    cr_assert_eq(r.data[1], 1);
    cr_assert_eq(le16(r.data + 2), 0x0201, "bcdUSB 2.01 for the BOS");
    cr_assert_eq(r.data[7], 64, "EP0 max packet");
    cr_assert_eq(le16(r.data + 8), 0x1209);
    cr_assert_eq(le16(r.data + 10), NTPU_USB_PID);
    cr_assert_eq(r.data[17], 1, "one configuration");
    get_desc(1, 0, 8); /* the first request of a Linux or Windows host */
    cr_assert_eq(r.len, 8);
}

Test(usb_ctrl, configuration_descriptor_walks_to_its_total)
{
    get_desc(2, 0, 0xFF);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    uint16_t total = le16(r.data + 2);
    cr_assert_eq(total, r.len);
    cr_assert_eq(total, 32);
    int eps = 0, ifaces = 0;
    for (uint16_t off = 0; off < total; off += r.data[off]) {
        const uint8_t *d = r.data + off;
        cr_assert(d[0] >= 2 && off + d[0] <= total, "descriptor at %u overruns", off);
        if (d[1] == 4) {
            ifaces++;
            cr_assert_eq(d[5], 0xFF, "vendor class");
            cr_assert_eq(d[4], 2, "two endpoints");
        } else if (d[1] == 5) {
            cr_assert_eq(d[0], 7);
            cr_assert_eq(d[2], eps == 0 ? NTPU_USB_EP_OUT : NTPU_USB_EP_IN);
            cr_assert_eq(d[3], 2, "bulk");
            cr_assert_eq(le16(d + 4), 64);
            eps++;
        }
    }
    cr_assert_eq(ifaces, 1);
    cr_assert_eq(eps, 2);
    get_desc(2, 0, 9); /* the header alone, to learn wTotalLength */
    cr_assert_eq(r.len, 9);
    get_desc(2, 1, 0xFF);
    stalls("configuration 1 (there is only 0)");
}

Test(usb_ctrl, strings)
{
    get_desc(3, 0, 0xFF);
    cr_assert_eq(r.len, 4);
    cr_assert_eq(le16(r.data + 2), 0x0409);
    get_desc(3, 1, 0xFF);
    string_is("nanoTPU");
    get_desc(3, 2, 0xFF);
    string_is("nanoTPU pico-ice");
    get_desc(3, 3, 0xFF);
    string_is("E6613852831B2C2F");
    get_desc(3, 3, 10);
    cr_assert_eq(r.len, 10, "cut to wLength");
    get_desc(3, 4, 0xFF);
    stalls("string 4");
}

Test(usb_ctrl, bos_and_ms_os_20_set)
{
    static const uint8_t uuid[16] = {0xDF, 0x60, 0xDD, 0xD8, 0x89, 0x45, 0xC7, 0x4C,
                                     0x9C, 0xD2, 0x65, 0x9D, 0x9E, 0x64, 0x8A, 0x9F};
    get_desc(15, 0, 0xFF);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    cr_assert_eq(r.data[0], 5);
    cr_assert_eq(le16(r.data + 2), r.len);
    cr_assert_eq(r.data[4], 1, "one capability");
    const uint8_t *cap = r.data + 5;
    cr_assert_eq(5 + cap[0], r.len);
    cr_assert_eq(cap[1], 16);
    cr_assert_eq(cap[2], 5, "platform capability");
    cr_assert_eq(memcmp(cap + 4, uuid, 16), 0, "MS OS 2.0 platform UUID");
    uint16_t set_len = le16(cap + 24);
    uint8_t vendor_code = cap[26];
    cr_assert_eq(vendor_code, NTPU_USB_REQ_MS_OS_20);

    req(0xC0, vendor_code, 0, 7, 0xFFFF);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    cr_assert_eq(r.len, set_len, "the BOS announces the set's length");
    cr_assert_eq(le16(r.data), 10);
    cr_assert_eq(le16(r.data + 2), 0, "set header");
    cr_assert_eq(le16(r.data + 8), set_len, "wTotalLength");
    uint16_t off = 10;
    int compat = 0, prop = 0;
    while (off < set_len) {
        const uint8_t *d = r.data + off;
        uint16_t len = le16(d), type = le16(d + 2);
        cr_assert(len >= 4 && off + len <= set_len, "descriptor at %u overruns", off);
        if (type == 3) {
            compat++;
            cr_assert_eq(len, 20);
            cr_assert_eq(memcmp(d + 4, "WINUSB\0\0", 8), 0);
        } else if (type == 4) {
            prop++;
            static const char name[] = "DeviceInterfaceGUIDs";
            cr_assert_eq(le16(d + 4), 7, "REG_MULTI_SZ");
            uint16_t name_len = le16(d + 6);
            cr_assert_eq(name_len, 2 * sizeof name);
            for (size_t i = 0; i < sizeof name; i++) {
                cr_assert_eq(le16(d + 8 + 2 * i), (uint8_t)name[i]);
            }
            uint16_t data_len = le16(d + 8 + name_len);
            const uint8_t *g = d + 10 + name_len;
            cr_assert_eq(len, 10 + name_len + data_len);
            cr_assert_eq(data_len, 80, "a 38-character GUID and two NULs");
            cr_assert_eq(le16(g), '{');
            cr_assert_eq(le16(g + 2 * 37), '}');
            cr_assert_eq(le16(g + 2 * 38), 0);
            cr_assert_eq(le16(g + 2 * 39), 0);
        }
        off += len;
    }
    cr_assert_eq(off, set_len);
    cr_assert_eq(compat, 1);
    cr_assert_eq(prop, 1);
    req(0xC0, vendor_code, 0, 6, 0xFFFF);
    stalls("an MS OS 2.0 index other than 7");
}

Test(usb_ctrl, set_address_is_deferred)
{
    req(0x00, 5, 42, 0, 0);
    cr_assert_eq(r.kind, USB_REPLY_ACK);
    cr_assert_eq(st.address, 42);
    cr_assert_eq(st.address_pending, 1, "the driver applies it after the status stage");
    req(0x00, 5, 128, 0, 0);
    stalls("address 128");
    usb_ctrl_bus_reset(&st);
    cr_assert_eq(st.address, 0);
    cr_assert_eq(st.address_pending, 0);
}

Test(usb_ctrl, configuration)
{
    req(0x80, 8, 0, 0, 1);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    cr_assert_eq(r.data[0], 0);
    req(0x00, 9, 1, 0, 0);
    cr_assert_eq(r.kind, USB_REPLY_ACK);
    cr_assert_eq(calls.configure, 1);
    cr_assert_eq(calls.config, 1);
    req(0x80, 8, 0, 0, 1);
    cr_assert_eq(r.data[0], 1);
    req(0x81, 10, 0, 0, 1);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    cr_assert_eq(r.data[0], 0, "alternate setting 0");
    req(0x01, 11, 0, 0, 0);
    cr_assert_eq(r.kind, USB_REPLY_ACK);
    cr_assert_eq(calls.configure, 2, "SET_INTERFACE resets the endpoints");
    req(0x01, 11, 1, 0, 0);
    stalls("alternate setting 1");
    req(0x00, 9, 2, 0, 0);
    stalls("configuration 2");
}

Test(usb_ctrl, endpoint_halt_and_status)
{
    req(0x02, 1, 0, NTPU_USB_EP_IN, 0);
    stalls("CLEAR_FEATURE before SET_CONFIGURATION");
    req(0x00, 9, 1, 0, 0);
    req(0x02, 3, 0, NTPU_USB_EP_IN, 0);
    cr_assert_eq(r.kind, USB_REPLY_ACK);
    cr_assert_eq(calls.set_halt, 1);
    cr_assert_eq(calls.halt, 1);
    req(0x82, 0, 0, NTPU_USB_EP_IN, 2);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    cr_assert_eq(r.len, 2);
    cr_assert_eq(r.data[0], 1, "halted");
    req(0x02, 1, 0, NTPU_USB_EP_IN, 0);
    cr_assert_eq(r.kind, USB_REPLY_ACK);
    cr_assert_eq(calls.set_halt, 2);
    cr_assert_eq(calls.halt_ep, NTPU_USB_EP_IN);
    cr_assert_eq(calls.halt, 0, "cleared: the driver resets the toggle to DATA0");
    req(0x82, 0, 0, NTPU_USB_EP_IN, 2);
    cr_assert_eq(r.data[0], 0);
    req(0x82, 0, 0, NTPU_USB_EP_OUT, 2);
    cr_assert_eq(r.data[0], 0);
    req(0x02, 1, 0, 0x02, 0);
    stalls("CLEAR_FEATURE on an endpoint that does not exist");
    req(0x82, 0, 0, 0x83, 2);
    stalls("GET_STATUS of an endpoint that does not exist");
    req(0x80, 0, 0, 0, 2);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    cr_assert_eq(le16(r.data), 0, "bus powered, no remote wakeup");
    req(0x00, 3, 1, 0, 0);
    stalls("SET_FEATURE(DEVICE_REMOTE_WAKEUP)");
}

Test(usb_ctrl, unknown_requests_stall)
{
    get_desc(6, 0, 10);
    stalls("GET_DESCRIPTOR(DEVICE_QUALIFIER) of a full-speed device");
    get_desc(7, 0, 10);
    stalls("other-speed configuration");
    req(0x82, 12, 0, NTPU_USB_EP_IN, 2);
    stalls("SYNCH_FRAME");
    req(0x00, 7, 0x0100, 0, 18);
    stalls("SET_DESCRIPTOR, with an OUT data stage");
    req(0x21, 0x0A, 0, 0, 0);
    stalls("a class request");
    req(0xC0, 0x7F, 0, 0, 4);
    stalls("an unknown vendor request");
    req(0x41, NTPU_USB_REQ_FPGA_RESET, 0, 0, 0);
    stalls("a vendor request to the interface");
    req(0x40, NTPU_USB_REQ_GET_VERSION, 0, 0, 0);
    stalls("GET_VERSION sent host-to-device");
    req(0x40, NTPU_USB_REQ_SET_FPGA_CLOCK, 4, 0, 2);
    stalls("a vendor OUT request with a data stage");
    cr_assert_eq(calls.clock, 0);
}

Test(usb_ctrl, vendor_requests_reach_the_board)
{
    req(0xC0, NTPU_USB_REQ_GET_VERSION, 0, 0, 64);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    cr_assert_eq(r.len, 2);
    cr_assert_eq(r.data[0], NTPU_USB_PROTO_MAJOR);
    cr_assert_eq(r.data[1], NTPU_USB_PROTO_MINOR);
    req(0xC0, NTPU_USB_REQ_GET_STATUS, 0, 0, 64);
    cr_assert_eq(r.len, NTPU_USB_STATUS_LEN);
    cr_assert_eq(r.data[7], 0xA7);
    cr_assert_eq(calls.status, 1);
    req(0x40, NTPU_USB_REQ_FPGA_RESET, 1, 0, 0);
    cr_assert_eq(r.kind, USB_REPLY_ACK);
    cr_assert_eq(calls.reset_hold, 1);
    req(0x40, NTPU_USB_REQ_FPGA_RESET, 2, 0, 0);
    stalls("FPGA_RESET 2");
    cr_assert_eq(calls.reset, 1);
    req(0x40, NTPU_USB_REQ_FPGA_LOAD_BEGIN, 0, 0, 0);
    cr_assert_eq(r.kind, USB_REPLY_ACK);
    cr_assert_eq(calls.begin, 1);
    calls.cdone = 1;
    req(0xC0, NTPU_USB_REQ_FPGA_LOAD_END, 0, 0, 1);
    cr_assert_eq(r.kind, USB_REPLY_IN);
    cr_assert_eq(r.len, 1);
    cr_assert_eq(r.data[0], 1, "CDONE");
    calls.cdone = 0;
    req(0xC0, NTPU_USB_REQ_FPGA_LOAD_END, 0, 0, 1);
    cr_assert_eq(r.data[0], 0);
    cr_assert_eq(calls.end, 2);
    req(0xC0, NTPU_USB_REQ_FPGA_LOAD_END, 0, 0, 0);
    stalls("FPGA_LOAD_END with no room for CDONE");
    req(0x40, NTPU_USB_REQ_SET_FPGA_CLOCK, 4, 0, 0);
    cr_assert_eq(r.kind, USB_REPLY_ACK);
    cr_assert_eq(calls.clock_div, 4);
    req(0xC0, NTPU_USB_REQ_GET_VERSION, 0, 0, 0);
    cr_assert_eq(r.kind, USB_REPLY_ACK, "an IN request with wLength 0 has only a status stage");
}

Test(link_flow, each_side_moves_what_the_other_can_take)
{
    struct link_plan p = link_plan(64, 64, 10, 3);
    cr_assert_eq(p.send, 10);
    cr_assert_eq(p.recv, 3);
    cr_assert_eq(p.total, 10);
    p = link_plan(0, 64, 255, 200);
    cr_assert_eq(p.send, 0);
    cr_assert_eq(p.recv, 64);
    cr_assert_eq(p.total, 64);
    p = link_plan(5, 0, 0, 9);
    cr_assert_eq(p.send, 0, "the FPGA has no room");
    cr_assert_eq(p.recv, 0, "the RP2040 has no room");
    cr_assert_eq(p.total, 0);
}
