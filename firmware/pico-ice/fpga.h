/* SPDX-License-Identifier: Apache-2.0 */
/* The iCE40's configuration pins: CRESET_B (GP27), CDONE (GP26) and the SPI configuration port
 * (SS GP9, SCK GP10, SI GP8), loaded by bit-banging: the FPGA's SI is the RP2040's SPI1 RX pin, which the
 * SPI peripheral cannot drive. */
#ifndef NTPU_FPGA_H
#define NTPU_FPGA_H

#include <stdint.h>

enum fpga_state {
    FPGA_HELD,    /* CRESET_B low */
    FPGA_BOOTING, /* released with SS high: the FPGA reads its own flash and drives the bus */
    FPGA_LOADING, /* between fpga_load_begin and fpga_load_end */
    FPGA_RUNNING, /* CDONE high, the link owns the bus */
    FPGA_FAILED,  /* a load ended without CDONE */
};

/* Claims the pins and lets the FPGA boot from its flash (its power-on behaviour). */
void fpga_init(void);
enum fpga_state fpga_state(void);
int fpga_cdone(void);
/* hold 1: CRESET_B low and the bus released; 0: reset and boot from the FPGA's flash. */
void fpga_reset(int hold);
/* The configuration sequence up to the first bitstream byte (CRESET_B low with SS low, ~1.2 ms wait,
 * 8 clocks with SS high, SS low). */
void fpga_load_begin(void);
void fpga_load_bytes(const uint8_t *p, uint32_t n);
/* SS high, clocks until CDONE rises (at most 2000), then 56 more for the I/O to start; returns CDONE. */
int fpga_load_end(void);
uint32_t fpga_loaded_bytes(void);
/* The FPGA has finished booting from its flash: FPGA_BOOTING becomes FPGA_RUNNING when CDONE is high. */
void fpga_poll(void);

#endif
