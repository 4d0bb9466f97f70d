/* SPDX-License-Identifier: Apache-2.0 */
/* The RP2040 USB controller in device mode, seen from the bus one transaction at a time: registers, the
 * 4 KB DPRAM's endpoint control and buffer control words (datasheet 4.1.2.5), and the handshakes the
 * controller gives a host: an IN is answered when its buffer is FULL and AVAILABLE, an OUT taken when
 * AVAILABLE and not FULL, NAK otherwise; STALL from the buffer's STALL bit (on EP0 only with
 * EP_STALL_ARM, which every SETUP clears); no answer at all at another address. Single buffering only:
 * a double-buffered endpoint fails the run. Data toggle mismatches on OUT are counted, the packet
 * acknowledged and dropped, as USB 2.0 8.6.4 asks. */
#include <string.h>

#include "rp2040_sim.h"

#define REGS 0x50110000u
#define BC_FULL (1u << 15)
#define BC_DATA1 (1u << 13)
#define BC_STALL (1u << 11)
#define BC_AVAILABLE (1u << 10)
#define SIE_SETUP_REC (1u << 17)
#define SIE_BUS_RESET (1u << 19)

static uint32_t word(struct rp2040 *s, uint32_t off)
{
    uint32_t v;
    memcpy(&v, s->dpram + off, 4);
    return v;
}

static void put_word(struct rp2040 *s, uint32_t off, uint32_t v)
{
    memcpy(s->dpram + off, &v, 4);
}

int usb_read(struct rp2040 *s, uint32_t a, uint32_t *v)
{
    switch (a - REGS) {
    case 0x00u: *v = s->usb_addr_endp; return 1;
    case 0x40u: *v = s->usb_main_ctrl; return 1;
    case 0x4Cu: *v = s->usb_sie_ctrl; return 1;
    case 0x50u: *v = s->usb_sie_status; return 1;
    case 0x58u: *v = s->usb_buff_status; return 1;
    case 0x68u: *v = s->usb_stall_arm; return 1;
    case 0x74u: *v = s->usb_muxing; return 1;
    case 0x78u: *v = s->usb_pwr; return 1;
    default: return 0;
    }
}

int usb_write(struct rp2040 *s, uint32_t a, uint32_t v)
{
    switch (a - REGS) {
    case 0x00u: s->usb_addr_endp = v & 0x000F007Fu; return 1;
    case 0x40u: s->usb_main_ctrl = v; return 1;
    case 0x4Cu: s->usb_sie_ctrl = v; return 1;
    case 0x50u: s->usb_sie_status &= ~v; return 1; /* write 1 to clear */
    case 0x58u: s->usb_buff_status &= ~v; return 1;
    case 0x68u: s->usb_stall_arm = v & 3u; return 1;
    case 0x74u: s->usb_muxing = v; return 1;
    case 0x78u: s->usb_pwr = v; return 1;
    default: return 0;
    }
}

/* A buffer control word's AVAILABLE must be set by a write of its own, after the rest is in place
 * (4.1.2.5.1): the controller may act on the word the moment AVAILABLE appears. */
void usbd_dpram_store(struct rp2040 *s, uint32_t off, uint32_t v)
{
    if (off < 0x80u || off >= 0x100u) {
        return;
    }
    uint32_t old = word(s, off), i = (off - 0x80u) / 4u;
    if ((v & BC_AVAILABLE) && !(old & BC_AVAILABLE)) {
        if ((v ^ old) & 0xFFFFu & ~BC_AVAILABLE) {
            s->usb_bc_rule_errors++;
            rp2040_fail(s, "buffer control 0x%03x: 0x%04x -> 0x%04x sets AVAILABLE in the write that changes the rest",
                        off, old & 0xFFFFu, v & 0xFFFFu);
        } else if (s->icount - s->usb_bc_icount[i] < 3u) { /* clk_sys = clk_usb: 3 cycles, 3 instructions at least */
            s->usb_bc_rule_errors++;
            rp2040_fail(s, "buffer control 0x%03x: AVAILABLE set %llu cycles after the rest (3 clk_usb cycles needed)",
                        off, (unsigned long long)(s->icount - s->usb_bc_icount[i]));
        }
    }
    s->usb_bc_icount[i] = s->icount;
}

static int listening(struct rp2040 *s, uint8_t addr)
{
    return (s->usb_main_ctrl & 1u) && (s->usb_sie_ctrl & (1u << 16)) && (s->usb_muxing & 1u) &&
           (s->usb_pwr & 0xCu) == 0xCu && !((s->resets >> 24) & 1u) && (s->usb_addr_endp & 0x7Fu) == addr;
}

int usbd_connected(struct rp2040 *s)
{
    return listening(s, (uint8_t)(s->usb_addr_endp & 0x7Fu));
}

void usbd_bus_reset(struct rp2040 *s)
{
    s->usb_sie_status |= SIE_BUS_RESET;
}

enum usb_result usbd_setup(struct rp2040 *s, uint8_t addr, const uint8_t pkt[8])
{
    if (!listening(s, addr)) {
        return USB_TIMEOUT;
    }
    memcpy(s->dpram, pkt, 8);
    s->usb_sie_status |= SIE_SETUP_REC;
    s->usb_stall_arm = 0;
    return USB_ACK;
}

/* Finds endpoint ep's buffer control offset, buffer offset and whether completions set BUFF_STATUS;
 * 0 when the endpoint does not answer. */
static int endpoint(struct rp2040 *s, uint8_t ep, int in, uint32_t *bc, uint32_t *buf, int *irq)
{
    *bc = 0x80u + 8u * ep + (in ? 0u : 4u);
    if (ep == 0) {
        *buf = 0x100u;
        *irq = (s->usb_sie_ctrl >> 29) & 1u; /* EP0_INT_1BUF */
        return 1;
    }
    uint32_t ctrl = word(s, 0x08u + 8u * (ep - 1u) + (in ? 0u : 4u));
    if (!(ctrl >> 31)) {
        return 0;
    }
    if ((ctrl >> 30) & 1u) {
        rp2040_fail(s, "EP%u %s is double-buffered: not modelled", ep, in ? "IN" : "OUT");
        return 0;
    }
    *buf = ctrl & 0xFFC0u;
    *irq = (ctrl >> 29) & 1u;
    return 1;
}

enum usb_result usbd_in(struct rp2040 *s, uint8_t addr, uint8_t ep, uint8_t *data, uint32_t *len, int *data1)
{
    uint32_t bco, bufo;
    int irq;
    if (!listening(s, addr) || !endpoint(s, ep, 1, &bco, &bufo, &irq)) {
        return USB_TIMEOUT;
    }
    uint32_t bc = word(s, bco);
    if ((bc & BC_STALL) && (ep != 0 || (s->usb_stall_arm & 1u))) {
        return USB_STALL;
    }
    if (!(bc & BC_AVAILABLE) || !(bc & BC_FULL)) {
        return USB_NAK;
    }
    *len = bc & 0x3FFu;
    if (*len > 64u) {
        rp2040_fail(s, "EP%u IN buffer of %u bytes: more than a full-speed packet", ep, *len);
        return USB_TIMEOUT;
    }
    memcpy(data, s->dpram + bufo, *len);
    *data1 = (bc & BC_DATA1) != 0;
    put_word(s, bco, bc & ~(BC_AVAILABLE | BC_FULL));
    if (irq) {
        s->usb_buff_status |= 1u << (2u * ep);
    }
    return USB_ACK;
}

enum usb_result usbd_out(struct rp2040 *s, uint8_t addr, uint8_t ep, const uint8_t *data, uint32_t len, int data1)
{
    uint32_t bco, bufo;
    int irq;
    if (!listening(s, addr) || !endpoint(s, ep, 0, &bco, &bufo, &irq)) {
        return USB_TIMEOUT;
    }
    uint32_t bc = word(s, bco);
    if ((bc & BC_STALL) && (ep != 0 || (s->usb_stall_arm & 2u))) {
        return USB_STALL;
    }
    if (!(bc & BC_AVAILABLE) || (bc & BC_FULL)) {
        return USB_NAK;
    }
    if (data1 != ((bc & BC_DATA1) != 0)) {
        s->usb_seq_errors++;
        return USB_ACK;
    }
    if (len > (bc & 0x3FFu)) {
        rp2040_fail(s, "EP%u OUT: a %u-byte packet into a %u-byte buffer", ep, len, bc & 0x3FFu);
        return USB_TIMEOUT;
    }
    if (len) {
        memcpy(s->dpram + bufo, data, len);
    }
    put_word(s, bco, (bc & ~(BC_AVAILABLE | 0x3FFu)) | BC_FULL | len);
    if (irq) {
        s->usb_buff_status |= 1u << (2u * ep + 1u);
    }
    return USB_ACK;
}
