/* SPDX-License-Identifier: Apache-2.0 */
/* An emulated RP2040 for the pico-ice firmware: one Cortex-M0 core under Unicorn, XIP flash, SRAM, and
 * register models of the peripherals the firmware touches. Anything else it touches stops the run with a
 * message naming the address, so a gap in the models is found rather than read as 0. */
#ifndef NTPU_RP2040_SIM_H
#define NTPU_RP2040_SIM_H

#include <stddef.h>
#include <stdint.h>

#include <unicorn/unicorn.h>

#define SIM_FLASH_BASE 0x10000000u
#define SIM_FLASH_SIZE (2u << 20)
#define SIM_SRAM_BASE 0x20000000u
#define SIM_SRAM_SIZE (264u << 10)
#define SIM_CLK_HZ 48000000u /* one instruction is taken as one clk_sys cycle */
#define SIM_NPINS 30

/* The FPGA's user design at pin level (the Verilator pico-ice board top: sim/vsim/vsim_pico_ice.cpp). When
 * fpga_model.design is set, link bytes go through its pins instead of the byte-level far end below. Time is
 * the emulated instruction count (SIM_CLK_HZ); div is the FPGA clock's divider from 48 MHz, 0 if stopped. */
struct fpga_design {
    void *ctx;
    void (*configured)(void *ctx, uint64_t now);                      /* CDONE rose: the design starts from power-on */
    void (*select)(void *ctx, uint64_t now, uint32_t div, int level); /* the link select pin (GP0) */
    /* One byte, MSB first, mode 0, each bit taking bit_time instructions; returns the FPGA's byte. */
    uint8_t (*xfer)(void *ctx, uint64_t now, uint32_t div, uint8_t mosi, uint32_t bit_time);
};

/* iCE40 configuration port and the link's far end (fpga_model.c). */
struct fpga_model {
    int creset, ss, sck, si, cdone;
    int spi_mode; /* CRESET_B released with SS low: the next bytes are a bitstream */
    int loaded;   /* the bytes since SS low held the sync word and more */
    uint32_t nbits, shift, clocks_after;
    uint8_t cfg[8192]; /* bytes clocked in with SS low since the last CRESET_B release */
    uint32_t ncfg;
    /* link: header state and a loopback FIFO */
    int sel, pos, plan_send, plan_recv, plan_total, hdr_have, hdr_room, fpga_room, fpga_have;
    uint8_t fifo[256];
    /* The far end: a loopback FIFO, or whatever these name (the golden model, in the tests). */
    const struct fpga_design *design;
    void *far;
    uint32_t (*far_have)(void *far);       /* bytes it has for the RP2040 */
    void (*far_put)(void *far, uint8_t b); /* a byte from the RP2040 */
    uint8_t (*far_get)(void *far);         /* its next byte */
    uint64_t sck_rise, sck_min_period;     /* instructions between SCK rising edges while configuring */
    uint32_t fifo_head, fifo_tail, link_bytes_in, link_bytes_out, link_errors, link_txns;
};

struct rp2040;
struct sim_window { /* one uc_mmio_map region: its callbacks' context */
    struct rp2040 *s;
    uint32_t base, size;
};

struct rp2040 {
    uc_engine *uc;
    struct sim_window win[5];
    uint8_t *flash, *sram, dpram[4096];
    uint64_t icount; /* instructions run: the emulated time base */
    uint64_t budget; /* stop the current run at this icount */
    char error[256]; /* set when the run must stop: the first failure */
    int xip;         /* the SSI is set up for execute-in-place */
    uint32_t vtor;
    /* RESETS, CLOCKS, XOSC, PLL_USB, WATCHDOG tick, TIMER */
    uint32_t resets, clk[32], xosc_ctrl, xosc_startup, pll_cs, pll_pwr, pll_fbdiv, pll_prim, wd_tick;
    uint64_t timer_start; /* icount when the timer last started counting */
    int timer_running;
    /* IO_BANK0, PADS_BANK0, SIO */
    uint32_t gpio_ctrl[SIM_NPINS], pads[SIM_NPINS], sio_out, sio_oe, qspi_ss_ctrl;
    /* SSI and the flash behind it */
    uint32_t ssi[64];
    uint8_t ssi_rx[16];
    uint32_t ssi_rx_n, flash_cmd_pos;
    uint8_t flash_cmd, flash_uid[8];
    int flash_cs;
    /* SPI1 */
    uint32_t spi_cr0, spi_cr1, spi_cpsr;
    uint8_t spi_rx[8];
    uint32_t spi_rx_n;
    uint64_t spi_done[8]; /* when each queued byte has finished shifting (icount) */
    /* USB controller */
    uint32_t usb_addr_endp, usb_main_ctrl, usb_sie_ctrl, usb_sie_status, usb_buff_status, usb_stall_arm, usb_muxing,
        usb_pwr, usb_seq_errors, usb_bc_rule_errors;
    uint64_t usb_bc_icount[32]; /* when each buffer control word was last written */
    struct fpga_model fpga;
};

/* Boots like the boot ROM: checks boot2's CRC, copies it to 0x20041F00 and runs it from there. */
int rp2040_init(struct rp2040 *s, const uint8_t *image, size_t len);
void rp2040_free(struct rp2040 *s);
/* Runs n more instructions (or until an error); 0 on success, -1 with s->error set. */
int rp2040_run(struct rp2040 *s, uint64_t n);
void rp2040_fail(struct rp2040 *s, const char *fmt, ...);

/* Register blocks: each returns 0 when it does not know the offset (the caller then stops the run). */
int clocks_read(struct rp2040 *s, uint32_t addr, uint32_t *v);
int clocks_write(struct rp2040 *s, uint32_t addr, uint32_t v);
int gpio_read(struct rp2040 *s, uint32_t addr, uint32_t *v);
int gpio_write(struct rp2040 *s, uint32_t addr, uint32_t v);
int sio_read(struct rp2040 *s, uint32_t addr, uint32_t *v);
int sio_write(struct rp2040 *s, uint32_t addr, uint32_t v);
int ssi_read(struct rp2040 *s, uint32_t addr, uint32_t *v);
int ssi_write(struct rp2040 *s, uint32_t addr, uint32_t v);
int spi_read(struct rp2040 *s, uint32_t addr, uint32_t *v);
int spi_write(struct rp2040 *s, uint32_t addr, uint32_t v);
int usb_read(struct rp2040 *s, uint32_t addr, uint32_t *v);
int usb_write(struct rp2040 *s, uint32_t addr, uint32_t v);
/* A pin's level as the pad sees it: the SIO output, a peripheral's, the FPGA's, or the pulls. */
int gpio_level(struct rp2040 *s, int pin);
/* The SIO outputs changed: the FPGA's configuration port samples its pins. */
void fpga_pins_changed(struct rp2040 *s);
/* One SPI1 byte exchanged with the FPGA's link side. */
uint8_t fpga_link_xfer(struct rp2040 *s, uint8_t tx, uint32_t bit_time);
/* The FPGA clock's divider from 48 MHz (CLK_GPOUT2 on GP24); 0 when it is stopped. */
uint32_t fpga_clock_div(struct rp2040 *s);
uint64_t timer_us(struct rp2040 *s);

/* The device side of the USB controller, seen from the bus (usb_device.c). */
enum usb_result { USB_ACK, USB_NAK, USB_STALL, USB_TIMEOUT };
/* The controller is on the bus with its pull-up (it would answer its address). */
int usbd_connected(struct rp2040 *s);
void usbd_bus_reset(struct rp2040 *s);
enum usb_result usbd_setup(struct rp2040 *s, uint8_t addr, const uint8_t pkt[8]);
enum usb_result usbd_in(struct rp2040 *s, uint8_t addr, uint8_t ep, uint8_t *buf, uint32_t *len, int *data1);
enum usb_result usbd_out(struct rp2040 *s, uint8_t addr, uint8_t ep, const uint8_t *buf, uint32_t len, int data1);
/* Checks the buffer control rule on a DPRAM store (AVAILABLE set in a write of its own). */
void usbd_dpram_store(struct rp2040 *s, uint32_t off, uint32_t v);

#endif
