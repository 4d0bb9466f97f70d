/* SPDX-License-Identifier: Apache-2.0 */
/* pico-ice (rev 3) wiring between the RP2040 and the iCE40, from the board's netlist. ICE_SI is the
 * FPGA's configuration input, ICE_SO its output; ICE_SSN is also the FPGA flash's chip select. */
#ifndef NTPU_PINS_H
#define NTPU_PINS_H

#define PIN_ICE_SI 8   /* SPI1 RX */
#define PIN_ICE_SSN 9  /* SPI1 CSn; 10 k pull-up */
#define PIN_ICE_SCK 10 /* SPI1 SCK */
#define PIN_ICE_SO 11  /* SPI1 TX */
#define PIN_LINK_SEL 0 /* the link's select, active low: the first pin of the 8-bit bus (ICE 27) */
#define PIN_ICE_CDONE 26
#define PIN_ICE_CRESET 27

#endif
