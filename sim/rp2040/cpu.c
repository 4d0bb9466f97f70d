/* SPDX-License-Identifier: Apache-2.0 */
/* The core and the memory map: Unicorn's Cortex-M0, flash at 0x10000000 (readable only while the SSI is
 * set up for XIP), 264 KB of SRAM, and the peripheral windows. The APB/AHB windows decode the atomic
 * aliases (+0x1000 XOR, +0x2000 SET, +0x3000 CLR) here, once, for every register model; a block still
 * held in reset by RESETS refuses access, as the bus would hang on silicon. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp2040_sim.h"

#define BOOT2_ADDR 0x20041F00u
#define USB_DPRAM 0x50100000u
#define USB_REGS 0x50110000u
#define SSI_BASE 0x18000000u
#define SIO_BASE 0xD0000000u
#define PPB_PAGE 0xE000E000u

void rp2040_fail(struct rp2040 *s, const char *fmt, ...)
{
    if (s->error[0] == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->error, sizeof s->error, fmt, ap);
        va_end(ap);
    }
    uc_emu_stop(s->uc);
}

/* Blocks that RESETS holds: the window's base and its RESET bit. */
static const struct {
    uint32_t base;
    uint32_t bit;
    const char *name;
} reset_blocks[] = {
    {0x40014000u, 5, "IO_BANK0"}, {0x40018000u, 6, "IO_QSPI"}, {0x4001C000u, 8, "PADS_BANK0"},
    {0x4002C000u, 13, "PLL_USB"}, {0x40040000u, 17, "SPI1"},   {0x40054000u, 21, "TIMER"},
    {USB_REGS, 24, "USBCTRL"},
};

static int in_reset(struct rp2040 *s, uint32_t base)
{
    for (size_t i = 0; i < sizeof reset_blocks / sizeof reset_blocks[0]; i++) {
        if (reset_blocks[i].base == base && (s->resets >> reset_blocks[i].bit) & 1u) {
            rp2040_fail(s, "access to %s (0x%08x) while RESETS holds it in reset", reset_blocks[i].name, base);
            return 1;
        }
    }
    return 0;
}

static int reg_read(struct rp2040 *s, uint32_t a, uint32_t *v)
{
    if (a >= SSI_BASE && a < SSI_BASE + 0x1000u) {
        return ssi_read(s, a, v);
    }
    if (a >= USB_REGS && a < USB_REGS + 0x1000u) {
        return usb_read(s, a, v);
    }
    if (a >= 0x40014000u && a < 0x40020000u) {
        return gpio_read(s, a, v);
    }
    if (a >= 0x40040000u && a < 0x40044000u) {
        return spi_read(s, a, v);
    }
    return clocks_read(s, a, v);
}

static int reg_write(struct rp2040 *s, uint32_t a, uint32_t v)
{
    if (a >= SSI_BASE && a < SSI_BASE + 0x1000u) {
        return ssi_write(s, a, v);
    }
    if (a >= USB_REGS && a < USB_REGS + 0x1000u) {
        return usb_write(s, a, v);
    }
    if (a >= 0x40014000u && a < 0x40020000u) {
        return gpio_write(s, a, v);
    }
    if (a >= 0x40040000u && a < 0x40044000u) {
        return spi_write(s, a, v);
    }
    return clocks_write(s, a, v);
}

/* Registers whose reads or writes have side effects an alias cannot be built from. */
static int no_alias(uint32_t a)
{
    return a == SSI_BASE + 0x60u || a == 0x40040008u || a == USB_REGS + 0x50u || a == USB_REGS + 0x58u;
}

static uint64_t win_read(uc_engine *uc, uint64_t off, unsigned size, void *user)
{
    struct sim_window *w = user;
    struct rp2040 *s = w->s;
    uint32_t addr = w->base + (uint32_t)off, v = 0;
    (void)uc;
    uint32_t reg = addr & ~0x3000u, block = addr & ~0x3FFFu;
    if (w->base == SIO_BASE || w->base == PPB_PAGE) {
        reg = addr;
        block = w->base;
    }
    if (size != 4 || (addr & 3u)) {
        rp2040_fail(s, "%u-byte read of register 0x%08x: only 32-bit access is modelled", size, addr);
        return 0;
    }
    if (in_reset(s, block)) {
        return 0;
    }
    int ok;
    if (w->base == SIO_BASE) {
        ok = sio_read(s, reg, &v);
    } else if (w->base == PPB_PAGE) {
        ok = reg == 0xE000ED08u;
        v = s->vtor;
    } else {
        ok = reg_read(s, reg, &v);
    }
    if (!ok) {
        rp2040_fail(s, "read of unmodelled register 0x%08x", addr);
    }
    return v;
}

static void win_write(uc_engine *uc, uint64_t off, unsigned size, uint64_t value, void *user)
{
    struct sim_window *w = user;
    struct rp2040 *s = w->s;
    uint32_t addr = w->base + (uint32_t)off, v = (uint32_t)value, old = 0;
    (void)uc;
    uint32_t reg = addr & ~0x3000u, block = addr & ~0x3FFFu, alias = (addr >> 12) & 3u;
    if (w->base == SIO_BASE || w->base == PPB_PAGE) {
        reg = addr;
        block = w->base;
        alias = 0;
    }
    if (size != 4 || (addr & 3u)) {
        rp2040_fail(s, "%u-byte write of register 0x%08x: only 32-bit access is modelled", size, addr);
        return;
    }
    if (in_reset(s, block)) {
        return;
    }
    if (w->base == PPB_PAGE) {
        if (reg != 0xE000ED08u) {
            rp2040_fail(s, "write of unmodelled register 0x%08x", addr);
            return;
        }
        s->vtor = v;
        return;
    }
    if (w->base == SIO_BASE) {
        if (!sio_write(s, reg, v)) {
            rp2040_fail(s, "write of unmodelled register 0x%08x", addr);
        }
        return;
    }
    if (alias) {
        if (no_alias(reg)) {
            rp2040_fail(s, "atomic alias write 0x%08x to a FIFO or write-1-to-clear register", addr);
            return;
        }
        if (!reg_read(s, reg, &old)) {
            rp2040_fail(s, "alias write of unmodelled register 0x%08x", addr);
            return;
        }
        v = alias == 1 ? old ^ v : alias == 2 ? old | v : old & ~v;
    }
    if (!reg_write(s, reg, v)) {
        rp2040_fail(s, "write of unmodelled register 0x%08x (value 0x%08x)", addr, v);
    }
}

static void hook_code(uc_engine *uc, uint64_t addr, uint32_t size, void *user)
{
    struct rp2040 *s = user;
    (void)size;
    if (addr >= SIM_FLASH_BASE && addr < SIM_FLASH_BASE + SIM_FLASH_SIZE && !s->xip) {
        rp2040_fail(s, "instruction fetch from flash at 0x%08x while the SSI is not in XIP mode", (uint32_t)addr);
    }
    if (++s->icount >= s->budget) {
        uc_emu_stop(uc);
    }
}

static void hook_flash_read(uc_engine *uc, uc_mem_type type, uint64_t addr, int size, int64_t v, void *user)
{
    struct rp2040 *s = user;
    (void)uc, (void)type, (void)size, (void)v;
    if (!s->xip) {
        rp2040_fail(s, "data read from flash at 0x%08x while the SSI is not in XIP mode", (uint32_t)addr);
    }
}

static void hook_dpram_write(uc_engine *uc, uc_mem_type type, uint64_t addr, int size, int64_t v, void *user)
{
    (void)uc, (void)type;
    if (size == 4) {
        usbd_dpram_store(user, (uint32_t)addr - USB_DPRAM, (uint32_t)v);
    }
}

static bool hook_unmapped(uc_engine *uc, uc_mem_type type, uint64_t addr, int size, int64_t v, void *user)
{
    struct rp2040 *s = user;
    uint32_t pc = 0;
    (void)v;
    uc_reg_read(uc, UC_ARM_REG_PC, &pc);
    rp2040_fail(s, "%s of unmapped address 0x%08x (%d bytes) at pc 0x%08x",
                type == UC_MEM_FETCH_UNMAPPED   ? "fetch"
                : type == UC_MEM_WRITE_UNMAPPED ? "write"
                                                : "read",
                (uint32_t)addr, size, pc);
    return false;
}

static void hook_intr(uc_engine *uc, uint32_t intno, void *user)
{
    uint32_t pc = 0;
    uc_reg_read(uc, UC_ARM_REG_PC, &pc);
    rp2040_fail(user, "exception %u at pc 0x%08x (a fault or bkpt: the firmware takes none on purpose)", intno, pc);
}

/* CRC-32/MPEG-2, as the boot ROM checks boot2. */
static uint32_t crc32_mpeg2(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= (uint32_t)p[i] << 24;
        for (int b = 0; b < 8; b++) {
            c = (c & 0x80000000u) ? (c << 1) ^ 0x04C11DB7u : c << 1;
        }
    }
    return c;
}

int rp2040_init(struct rp2040 *s, const uint8_t *image, size_t len)
{
    memset(s, 0, sizeof *s);
    s->flash = malloc(SIM_FLASH_SIZE);
    s->sram = calloc(1, SIM_SRAM_SIZE);
    if (!s->flash || !s->sram || len > SIM_FLASH_SIZE || len < 256) {
        snprintf(s->error, sizeof s->error, "no memory, or an image of %zu bytes", len);
        return -1;
    }
    memset(s->flash, 0xFF, SIM_FLASH_SIZE);
    memcpy(s->flash, image, len);
    uint32_t crc =
        (uint32_t)image[252] | (uint32_t)image[253] << 8 | (uint32_t)image[254] << 16 | (uint32_t)image[255] << 24;
    if (crc32_mpeg2(image, 252) != crc) {
        snprintf(s->error, sizeof s->error,
                 "boot2 CRC 0x%08x does not match bytes 252..255 (0x%08x): the boot ROM "
                 "would fall back to USB boot",
                 crc32_mpeg2(image, 252), crc);
        return -1;
    }
    static const uint8_t uid[8] = {0xE6, 0x61, 0x38, 0x97, 0x83, 0x2B, 0x4A, 0x27};
    memcpy(s->flash_uid, uid, sizeof uid);
    /* What the boot ROM leaves: everything in reset but the QSPI pins it booted through. */
    s->resets = 0x01FFFFFFu & ~((1u << 6) | (1u << 9));
    s->pll_pwr = 0x2Du;
    s->pll_prim = 0x77000u;
    s->pll_cs = 1;
    s->budget = UINT64_MAX;
    for (int i = 0; i < SIM_NPINS; i++) {
        s->pads[i] = 0x56u; /* IE, 4 mA, pull-down, Schmitt: the reset value */
        s->gpio_ctrl[i] = 0x1Fu;
    }
    s->fpga.creset = 1;
    s->fpga.ss = 1;
    s->fpga.sel = 1;
    s->flash_cs = 1;

    uc_err e = uc_open(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS, &s->uc);
    if (e == UC_ERR_OK) {
        e = uc_ctl_set_cpu_model(s->uc, UC_CPU_ARM_CORTEX_M0);
    }
    if (e == UC_ERR_OK) {
        e = uc_mem_map_ptr(s->uc, SIM_FLASH_BASE, SIM_FLASH_SIZE, UC_PROT_READ | UC_PROT_EXEC, s->flash);
    }
    if (e == UC_ERR_OK) {
        e = uc_mem_map_ptr(s->uc, SIM_SRAM_BASE, SIM_SRAM_SIZE, UC_PROT_ALL, s->sram);
    }
    if (e == UC_ERR_OK) {
        e = uc_mem_map_ptr(s->uc, USB_DPRAM, sizeof s->dpram, UC_PROT_READ | UC_PROT_WRITE, s->dpram);
    }
    static const struct sim_window map[5] = {
        {NULL, SSI_BASE, 0x4000u}, {NULL, 0x40000000u, 0x70000u}, {NULL, USB_REGS, 0x4000u},
        {NULL, SIO_BASE, 0x1000u}, {NULL, PPB_PAGE, 0x1000u},
    };
    for (size_t i = 0; e == UC_ERR_OK && i < 5; i++) {
        s->win[i] = map[i];
        s->win[i].s = s;
        e = uc_mmio_map(s->uc, map[i].base, map[i].size, win_read, &s->win[i], win_write, &s->win[i]);
    }
    uc_hook h;
    if (e == UC_ERR_OK) {
        e = uc_hook_add(s->uc, &h, UC_HOOK_CODE, (void *)hook_code, s, 1, 0);
    }
    if (e == UC_ERR_OK) {
        e = uc_hook_add(s->uc, &h, UC_HOOK_MEM_READ, (void *)hook_flash_read, s, SIM_FLASH_BASE,
                        SIM_FLASH_BASE + SIM_FLASH_SIZE - 1);
    }
    if (e == UC_ERR_OK) {
        e = uc_hook_add(s->uc, &h, UC_HOOK_MEM_WRITE, (void *)hook_dpram_write, s, USB_DPRAM, USB_DPRAM + 0xFFu);
    }
    if (e == UC_ERR_OK) {
        e = uc_hook_add(s->uc, &h, UC_HOOK_MEM_UNMAPPED, (void *)hook_unmapped, s, 1, 0);
    }
    if (e == UC_ERR_OK) {
        e = uc_hook_add(s->uc, &h, UC_HOOK_INTR, (void *)hook_intr, s, 1, 0);
    }
    if (e != UC_ERR_OK) {
        snprintf(s->error, sizeof s->error, "unicorn: %s", uc_strerror(e));
        return -1;
    }
    /* The boot ROM's hand-over: boot2 in the top 256 bytes of SRAM, entered with a stack below it. */
    memcpy(s->sram + (BOOT2_ADDR - SIM_SRAM_BASE), image, 256);
    uint32_t sp = 0x20042000u, pc = BOOT2_ADDR | 1u, lr = 0xFFFFFFFFu;
    uc_reg_write(s->uc, UC_ARM_REG_SP, &sp);
    uc_reg_write(s->uc, UC_ARM_REG_LR, &lr);
    uc_reg_write(s->uc, UC_ARM_REG_PC, &pc);
    return 0;
}

void rp2040_free(struct rp2040 *s)
{
    if (s->uc) {
        uc_close(s->uc);
    }
    free(s->flash);
    free(s->sram);
    s->uc = NULL;
    s->flash = s->sram = NULL;
}

int rp2040_run(struct rp2040 *s, uint64_t n)
{
    if (s->error[0]) {
        return -1;
    }
    uint32_t pc;
    uc_reg_read(s->uc, UC_ARM_REG_PC, &pc);
    s->budget = s->icount + n;
    uc_err e = uc_emu_start(s->uc, pc | 1u, 0xFFFFFFFEu, 0, 0);
    if (e != UC_ERR_OK && !s->error[0]) {
        uc_reg_read(s->uc, UC_ARM_REG_PC, &pc);
        rp2040_fail(s, "unicorn: %s at pc 0x%08x", uc_strerror(e), pc);
    }
    return s->error[0] ? -1 : 0;
}
