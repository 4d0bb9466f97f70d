/* SPDX-License-Identifier: Apache-2.0 */
/* Controller rules followed here (RP2040 datasheet 4.1.2): a buffer control word is written without
 * AVAILABLE, then AVAILABLE is set a few cycles later; data and status stages start at DATA1; an EP0
 * stall needs both EP_STALL_ARM and the buffer's STALL bit; SET_ADDRESS takes effect only when its
 * status stage (the IN zero-length packet) has completed. Completions are handled before a new setup
 * packet, so a status stage that completes just as the next SETUP arrives is not taken for the new one.
 * A SETUP does not disarm the buffers of the transfer it abandons: usb_dev_ep0_guard() does. */
#include "usb_dev.h"
#include "rp2040.h"

#define DPRAM_SETUP (USB_DPRAM + 0x000u)
#define EP1_IN_CTRL (USB_DPRAM + 0x008u)
#define EP1_OUT_CTRL (USB_DPRAM + 0x00Cu)
#define EP0_IN_BC (USB_DPRAM + 0x080u)
#define EP0_OUT_BC (USB_DPRAM + 0x084u)
#define EP1_IN_BC (USB_DPRAM + 0x088u)
#define EP1_OUT_BC (USB_DPRAM + 0x08Cu)
#define EP0_BUF 0x100u
#define EP1_OUT_BUF 0x180u
#define EP1_IN_BUF 0x1C0u

#define EPC_ENABLE (1u << 31)
#define EPC_BULK (2u << 26)
#define EPC_INT_PER_BUFF (1u << 29) /* without it a completed buffer sets no BUFF_STATUS bit */
#define BC_FULL (1u << 15)
#define BC_LAST (1u << 14)
#define BC_DATA1 (1u << 13)
#define BC_STALL (1u << 11)
#define BC_AVAILABLE (1u << 10)
#define BC_LEN_MASK 0x3FFu

#define BS_EP0_IN (1u << 0)
#define BS_EP0_OUT (1u << 1)
#define BS_EP1_IN (1u << 2)
#define BS_EP1_OUT (1u << 3)

enum ep0_phase { EP0_IDLE, EP0_DATA_IN, EP0_STATUS_IN, EP0_STATUS_OUT };

static struct {
    struct usb_state *st;
    struct usb_reply reply; /* holds the data of the current control transfer */
    enum ep0_phase phase;
    const uint8_t *in_data;
    uint32_t in_left;
    uint8_t in_zlp; /* a zero-length packet ends the data stage: the reply is shorter than wLength and
                       a multiple of 64 */
    uint32_t ep0_pid;
    uint8_t configured;
    uint32_t out_pid, in_pid;
    uint8_t out_armed, out_full, out_halted, in_busy, in_halted;
    uint32_t out_len;
} usb;

static void bc_write(uint32_t bc, uint32_t v)
{
    REG(bc) = v;
    /* clk_sys = clk_usb here; the datasheet asks for some cycles between the two writes. */
    __asm__ volatile("nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop");
    REG(bc) = v | BC_AVAILABLE;
}

static void dpram_write(uint32_t off, const uint8_t *src, uint32_t n)
{
    volatile uint8_t *d = (volatile uint8_t *)(uintptr_t)(USB_DPRAM + off);
    for (uint32_t i = 0; i < n; i++) {
        d[i] = src[i];
    }
}

static void dpram_read(uint32_t off, uint8_t *dst, uint32_t n)
{
    const volatile uint8_t *s = (const volatile uint8_t *)(uintptr_t)(USB_DPRAM + off);
    for (uint32_t i = 0; i < n; i++) {
        dst[i] = s[i];
    }
}

static void ep0_send_next(void)
{
    uint32_t n = usb.in_left < NTPU_USB_PACKET ? usb.in_left : NTPU_USB_PACKET;
    dpram_write(EP0_BUF, usb.in_data, n);
    usb.in_data += n;
    usb.in_left -= n;
    if (n == 0) {
        usb.in_zlp = 0;
    }
    bc_write(EP0_IN_BC, BC_FULL | BC_LAST | usb.ep0_pid | n);
    usb.ep0_pid ^= BC_DATA1;
}

static void ep0_stall(void)
{
    REG(USB_EP_STALL_ARM) = 3u; /* EP0 IN and OUT */
    REG(EP0_IN_BC) = BC_STALL;
    REG(EP0_OUT_BC) = BC_STALL;
    usb.phase = EP0_IDLE;
}

static void ep0_setup(void)
{
    uint8_t raw[8];
    struct usb_setup s;
    dpram_read(DPRAM_SETUP - USB_DPRAM, raw, sizeof raw);
    usb_setup_parse(raw, &s);
    usb.st->address_pending = 0; /* a SET_ADDRESS whose status stage never completed is void (9.4.6) */
    usb_control(&s, usb.st, &usb.reply);
    if (REG(USB_SIE_STATUS) & USB_SIE_STATUS_SETUP_REC) {
        usb.phase = EP0_IDLE; /* abandoned while its handler ran: arm nothing, answer the new SETUP */
        return;
    }
    usb.ep0_pid = BC_DATA1;
    switch (usb.reply.kind) {
    case USB_REPLY_STALL: ep0_stall(); break;
    case USB_REPLY_ACK:
        usb.phase = EP0_STATUS_IN;
        usb.in_left = 0;
        usb.in_zlp = 0;
        ep0_send_next();
        break;
    case USB_REPLY_IN:
        usb.phase = EP0_DATA_IN;
        usb.in_data = usb.reply.data;
        usb.in_left = usb.reply.len;
        usb.in_zlp = usb.reply.len < s.wLength && usb.reply.len % NTPU_USB_PACKET == 0;
        ep0_send_next();
        break;
    }
}

static void ep0_in_done(void)
{
    if (usb.phase == EP0_STATUS_IN) {
        if (usb.st->address_pending) {
            REG(USB_ADDR_ENDP) = usb.st->address;
            usb.st->address_pending = 0;
        }
        usb.phase = EP0_IDLE;
    } else if (usb.phase == EP0_DATA_IN) {
        if (usb.in_left > 0 || usb.in_zlp) {
            ep0_send_next();
        } else {
            usb.phase = EP0_STATUS_OUT;
            bc_write(EP0_OUT_BC, BC_DATA1 | NTPU_USB_PACKET);
        }
    }
}

static void bus_reset(void)
{
    REG(USB_ADDR_ENDP) = 0;
    usb_ctrl_bus_reset(usb.st);
    usb_dev_configure(0);
    usb.phase = EP0_IDLE;
}

static void out_done(void)
{
    if (usb.out_armed) {
        usb.out_armed = 0;
        usb.out_full = 1;
        usb.out_len = REG(EP1_OUT_BC) & BC_LEN_MASK;
        usb.out_pid ^= BC_DATA1;
    }
}

void usb_dev_init(struct usb_state *st)
{
    usb.st = st;
    rp2040_reset(RESET_USBCTRL);
    rp2040_unreset(RESET_USBCTRL);
    for (uint32_t a = USB_DPRAM; a < USB_DPRAM + 4096u; a += 4) {
        REG(a) = 0;
    }
    REG(USB_MUXING) = USB_MUXING_TO_PHY | USB_MUXING_SOFTCON;
    /* The pico-ice does not route VBUS to a pin the controller sees: tell it the bus is powered. */
    REG(USB_PWR) = USB_PWR_VBUS_DETECT | USB_PWR_VBUS_DETECT_OVERRIDE_EN;
    REG(USB_MAIN_CTRL) = USB_MAIN_CTRL_CONTROLLER_EN;
    REG(USB_SIE_CTRL) = USB_SIE_CTRL_EP0_INT_1BUF;
    REG_SET(USB_SIE_CTRL) = USB_SIE_CTRL_PULLUP_EN;
}

void usb_dev_ep0_guard(void)
{
    if (REG(USB_SIE_STATUS) & USB_SIE_STATUS_SETUP_REC) {
        REG(EP0_IN_BC) = 0;
        REG(EP0_OUT_BC) = 0;
    }
}

void usb_dev_poll(void)
{
    usb_dev_ep0_guard();
    uint32_t sie = REG(USB_SIE_STATUS);
    if (sie & USB_SIE_STATUS_BUS_RESET) {
        REG(USB_SIE_STATUS) = USB_SIE_STATUS_BUS_RESET;
        bus_reset();
    }
    uint32_t bs = REG(USB_BUFF_STATUS);
    if (bs) {
        REG(USB_BUFF_STATUS) = bs;
    }
    if (bs & BS_EP0_IN) {
        ep0_in_done();
    }
    if (bs & BS_EP0_OUT) {
        usb.phase = EP0_IDLE; /* the status stage of an IN transfer */
    }
    if (bs & BS_EP1_OUT) {
        out_done();
    }
    if ((bs & BS_EP1_IN) && usb.in_busy) {
        usb.in_busy = 0;
        usb.in_pid ^= BC_DATA1;
    }
    if (sie & USB_SIE_STATUS_SETUP_REC) {
        REG(USB_SIE_STATUS) = USB_SIE_STATUS_SETUP_REC;
        ep0_setup();
    }
}

void usb_dev_poll_out_only(void)
{
    if (REG(USB_BUFF_STATUS) & BS_EP1_OUT) {
        REG(USB_BUFF_STATUS) = BS_EP1_OUT;
        out_done();
    }
}

int usb_dev_out_take(uint8_t *buf)
{
    if (!usb.out_full) {
        return -1;
    }
    usb.out_full = 0;
    uint32_t n = usb.out_len > NTPU_USB_PACKET ? NTPU_USB_PACKET : usb.out_len;
    dpram_read(EP1_OUT_BUF, buf, n);
    return (int)n;
}

void usb_dev_out_arm(void)
{
    if (!usb.configured || usb.out_halted || usb.out_armed || usb.out_full) {
        return;
    }
    usb.out_armed = 1;
    bc_write(EP1_OUT_BC, usb.out_pid | NTPU_USB_PACKET);
}

int usb_dev_in_busy(void)
{
    return !usb.configured || usb.in_halted || usb.in_busy;
}

void usb_dev_in_send(const uint8_t *buf, uint32_t len)
{
    dpram_write(EP1_IN_BUF, buf, len);
    usb.in_busy = 1;
    bc_write(EP1_IN_BC, BC_FULL | usb.in_pid | len);
}

/* Both directions back to DATA0 with nothing pending (a packet waiting on IN is dropped: the link
 * protocol retransmits what a recovering host lost). */
static void bulk_reset(void)
{
    REG(EP1_OUT_BC) = 0;
    REG(EP1_IN_BC) = 0;
    REG(USB_BUFF_STATUS) = BS_EP1_IN | BS_EP1_OUT;
    usb.out_pid = usb.in_pid = 0;
    usb.out_armed = usb.out_full = usb.in_busy = 0;
    usb.out_halted = usb.in_halted = 0;
}

void usb_dev_configure(uint8_t config)
{
    usb.configured = config != 0;
    bulk_reset();
    if (config) {
        REG(EP1_OUT_CTRL) = EPC_ENABLE | EPC_INT_PER_BUFF | EPC_BULK | EP1_OUT_BUF;
        REG(EP1_IN_CTRL) = EPC_ENABLE | EPC_INT_PER_BUFF | EPC_BULK | EP1_IN_BUF;
    } else {
        REG(EP1_OUT_CTRL) = 0;
        REG(EP1_IN_CTRL) = 0;
    }
}

void usb_dev_set_halt(uint8_t ep, int halt)
{
    int in = ep == NTPU_USB_EP_IN;
    uint32_t bc = in ? EP1_IN_BC : EP1_OUT_BC;
    REG(bc) = halt ? BC_STALL : 0u;
    REG(USB_BUFF_STATUS) = in ? BS_EP1_IN : BS_EP1_OUT;
    if (in) {
        usb.in_halted = (uint8_t)halt;
        usb.in_busy = 0;
        usb.in_pid = 0;
    } else {
        usb.out_halted = (uint8_t)halt;
        usb.out_armed = usb.out_full = 0;
        usb.out_pid = 0;
    }
}
