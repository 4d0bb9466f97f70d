/* SPDX-License-Identifier: Apache-2.0 */
/* boot2 for the pico-ice's W25Q16 flash: standard SPI read (command 0x03) execute-in-place.
 * The boot ROM copies these 256 bytes to 0x20041F00 and runs them if bytes 252..255 hold the CRC-32/MPEG-2
 * of bytes 0..251 (tools/uf2 pads and stamps them at build time). 0x03 is the slowest read but every
 * SPI NOR flash answers it with no mode bits, no status-register quad enable and no dummy cycles, so
 * nothing here can leave the flash in a mode a later reset would not undo.
 * It programs the SSI and jumps to the vector table at 0x10000100; it never returns to the caller. */
    .syntax unified
    .cpu cortex-m0plus
    .thumb

/* SSI (Synopsys DW_apb_ssi) register offsets and fields, RP2040 datasheet 4.10. */
#define SSI_BASE        0x18000000
#define CTRLR0          0x00
#define CTRLR1          0x04
#define SSIENR          0x08
#define BAUDR           0x14
#define SPI_CTRLR0      0xF4
/* 32-bit frames (DFS_32 = 31), EEPROM read transfer mode (TMOD = 3), standard SPI (SPI_FRF = 0). */
#define CTRLR0_XIP      ((31 << 16) | (3 << 8))
/* XIP_CMD 0x03, 8-bit instruction (INST_L = 2), 24-bit address (ADDR_L = 24 / 4), both in standard SPI
 * (TRANS_TYPE = 0): each XIP access sends the command and address, then reads one 32-bit frame (CTRLR1 = 0). */
#define SPI_CTRLR0_XIP  ((0x03 << 24) | (2 << 8) | (6 << 2))
/* clk_sys / 4: the boot ROM leaves clk_sys on the ring oscillator (a few MHz); the firmware later runs
 * clk_sys at 48 MHz, which makes this 12 MHz, inside the 0x03 command's 50 MHz limit. */
#define BAUD_DIV        4
#define XIP_VECTORS     0x10000100
#define PPB_VTOR        0xE000ED08

    .section .text.boot2, "ax"
    .global ntpu_boot2
    .type ntpu_boot2, %function
    .thumb_func
ntpu_boot2:
    ldr r3, =SSI_BASE
    movs r0, #0
    str r0, [r3, #SSIENR]       /* the SSI takes a new setup only while disabled */
    movs r0, #BAUD_DIV
    str r0, [r3, #BAUDR]
    ldr r0, =CTRLR0_XIP
    str r0, [r3, #CTRLR0]
    ldr r1, =(SSI_BASE + SPI_CTRLR0)
    ldr r0, =SPI_CTRLR0_XIP
    str r0, [r1]
    movs r0, #0
    str r0, [r3, #CTRLR1]
    movs r0, #1
    str r0, [r3, #SSIENR]
    /* Enter the firmware as the core would after reset: VTOR, then SP and PC from the table. */
    ldr r0, =XIP_VECTORS
    ldr r1, =PPB_VTOR
    str r0, [r1]
    ldr r1, [r0, #0]
    ldr r2, [r0, #4]
    msr msp, r1
    bx r2
    .ltorg
