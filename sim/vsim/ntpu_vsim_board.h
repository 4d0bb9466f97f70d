/* SPDX-License-Identifier: Apache-2.0 */
/* A whole board in simulation: the Verilator model of a board top (one per
 * configuration in the BOARD_SIM_CONFIGS of fpga/boards/<board>/board.mk, built
 * from rtl/ with the parameters of that configuration's bitstream; a PLL is the
 * generic pass-through) behind a C ABI, reached through its UART pins at bit
 * level, as the board's USB-UART chip reaches the real board.
 *
 * Host to board: queued bytes leave on the uart_rx pin back to back at the
 * line rate, 8N1, each bit CLOCK_HZ / BAUD cycles. Board to host: a UART
 * receiver model samples the uart_tx pin in the middle of each bit and checks
 * the stop bit; a byte with a low stop bit is lost (a framing error).
 * Optional noise: bit errors flip the line level for a whole bit of a byte on
 * the wire, either way; dropped bytes never reach the other end. Time is the
 * board's clock: a byte costs 10 * CLOCK_HZ / BAUD cycles each way.
 * One thread at a time per model. */
#ifndef NTPU_VSIM_BOARD_H
#define NTPU_VSIM_BOARD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ntpu_vsim_board ntpu_vsim_board;

/* Creates the board, powers it up and waits out its power-on reset (until the
 * LED it lights during reset goes dark). opts: the part of the device string
 * after "vsim:", comma-separated, and it must name the board:
 *   board=B           icebreaker or ulx3s (the boards with BOARD_SIM_CONFIGS)
 *   config=C          one of the board's BOARD_SIM_CONFIGS (default: its first)
 *   trace=FILE        an FST waveform of the whole board to FILE
 *   ber=P             probability per transmitted bit (each way) that the line
 *                     carries the opposite level for that bit; 0 .. 0.5
 *   drop=P            probability per byte (each way) that it is lost whole; 0 .. 1
 *   seed=N            seed of the noise (default 1): a run is repeatable
 * Returns NULL on a bad option, an unwritable trace file or a board that never
 * leaves reset, with a one-line reason in err (errlen bytes) when err is not
 * NULL. */
ntpu_vsim_board *ntpu_vsim_board_new(const char *opts, char *err, size_t errlen);
void ntpu_vsim_board_free(ntpu_vsim_board *b); /* flushes and closes the trace; NULL is a no-op */

/* Queues n bytes to send to the board. Does not clock. */
void ntpu_vsim_board_write(ntpu_vsim_board *b, const uint8_t *buf, size_t n);

/* Clocks the board, sending queued bytes, until n bytes have been received into
 * buf, or until idle_limit consecutive cycles pass in which no byte finishes on
 * either wire. Returns the number of bytes received. */
size_t ntpu_vsim_board_read(ntpu_vsim_board *b, uint8_t *buf, size_t n, uint64_t idle_limit);

typedef struct ntpu_vsim_board_stats {
    uint64_t cycles;         /* board clock cycles since power-up */
    uint32_t clock_hz;       /* the board's clock */
    uint32_t baud;           /* its UART's bit rate */
    uint64_t tx_bytes;       /* bytes the host put on the wire */
    uint64_t rx_bytes;       /* bytes the host received and kept */
    uint64_t flipped_bits;   /* bits the noise inverted, both ways */
    uint64_t dropped_bytes;  /* bytes the noise dropped, both ways */
    uint64_t framing_errors; /* bytes the host's receiver lost to a low stop bit */
    /* Times the board's error LED lit after power-up: its receiver saw a framing
     * error or its FIFO had no room for a byte. The LED stays lit for 2^24
     * cycles, so further errors meanwhile do not count again. */
    uint64_t red_led;
} ntpu_vsim_board_stats;

void ntpu_vsim_board_get_stats(const ntpu_vsim_board *b, ntpu_vsim_board_stats *out);

#ifdef __cplusplus
}
#endif

#endif
