/* SPDX-License-Identifier: Apache-2.0 */
/* The link to the FPGA (rtl/ntpu_spi_target.sv is the other end): SPI1 as controller at 3 MHz, mode 0, on
 * GP10 (SCK), GP11 (to the FPGA's ICE_SO pin, an input of the user design), GP8 (from ICE_SI), with its
 * own select on GP0; GP9 (the FPGA flash's chip select) is held high so the flash never takes link bytes
 * for commands. Flow control: link_flow.h. */
#ifndef NTPU_SPI_LINK_H
#define NTPU_SPI_LINK_H

#include <stdint.h>

void spi_link_attach(void);
void spi_link_detach(void);
int spi_link_attached(void);
/* One transaction: offers tx[0..have) and room for `room` bytes; *sent and *received say what moved. */
void spi_link_exchange(const uint8_t *tx, uint8_t have, uint8_t *rx, uint8_t room, uint8_t *sent, uint8_t *received);

#endif
