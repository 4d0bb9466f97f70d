/* SPDX-License-Identifier: Apache-2.0 */
/* The pico-ice's FPGA in simulation: the Verilator model of fpga/boards/pico-ice/ntpu_pico_ice_top.sv,
 * built from rtl/ with the parameters of its bitstream (board.mk, CONFIG=core), driven at pin level as the
 * emulated RP2040 (sim/rp2040/) drives it: the clock on GP24, and SPI1's SCK, MOSI and select. Time is
 * counted in the RP2040's instructions (48 MHz): the FPGA's clock period is `div` of them. */
#ifndef NTPU_VSIM_PICO_ICE_H
#define NTPU_VSIM_PICO_ICE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vsim_pico_ice vsim_pico_ice;

vsim_pico_ice *vsim_pico_ice_new(void); /* NULL when out of memory */
void vsim_pico_ice_free(vsim_pico_ice *f);
/* Configuration done (CDONE rose): a fresh design, starting its power-on reset at time now. */
void vsim_pico_ice_configured(vsim_pico_ice *f, uint64_t now);
/* The link select pin changes at time now (the FPGA clock runs up to it first). */
void vsim_pico_ice_select(vsim_pico_ice *f, uint64_t now, uint32_t div, int level);
/* One SPI byte, mode 0, MSB first, bit_time instructions a bit, starting at now or when the previous
 * one ended, whichever is later. Returns the byte on MISO, sampled at each rising edge of SCK. */
uint8_t vsim_pico_ice_xfer(vsim_pico_ice *f, uint64_t now, uint32_t div, uint8_t mosi, uint32_t bit_time);

typedef struct vsim_pico_ice_stats {
    uint64_t cycles;      /* FPGA clock cycles since the last configuration */
    uint64_t link_errors; /* rising edges of link_err after the power-on reset ended */
    int in_reset;         /* link_err has not yet fallen since the configuration */
} vsim_pico_ice_stats;
void vsim_pico_ice_get_stats(const vsim_pico_ice *f, vsim_pico_ice_stats *out);

#ifdef __cplusplus
}
#endif

#endif
