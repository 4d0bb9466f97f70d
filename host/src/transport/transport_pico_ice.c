/* SPDX-License-Identifier: Apache-2.0 */
/* The "vsim:board=pico-ice" transport: the pico-ice simulated whole (sim/rp2040/pico_ice.h): the firmware
 * image `make firmware` builds, running on the emulated RP2040, with the Verilator model of the pico-ice
 * board top as its FPGA, reached through the emulated USB controller by a USB host at the transaction
 * level. At open it boots the firmware, enumerates it and loads a bitstream through the firmware's vendor
 * requests, which starts the board top from power-on. It declares the usb transport's limits (the board
 * is that transport's), and its timeouts count emulated time in which no byte moves, 1 ms a millisecond.
 * The whole path through libusb and the usb transport itself is tests/firmware/emu_usb_path.c. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pico_ice.h"

/* The start of an iCE40 bitstream: the configuration model checks only its sync word 7E AA 99 7E. */
static const uint8_t any_bitstream[] = {0xFF, 0x00, 0x00, 0xFF, 0x7E, 0xAA, 0x99, 0x7E,
                                        0x51, 0x00, 0x01, 0x05, 0x92, 0x00, 0x20, 0x01};

static ntpu_status pi_send(void *ctx, const uint8_t *buf, size_t n, char *err, size_t errlen)
{
    if (pico_ice_write(ctx, buf, n) != 0) {
        ntpu_errf(err, errlen, "vsim:board=pico-ice: out of memory");
        return NTPU_ERR_NO_MEMORY;
    }
    return NTPU_OK;
}

static ntpu_status pi_recv(void *ctx, uint8_t *buf, size_t n, unsigned timeout_ms, size_t *got, char *err,
                           size_t errlen)
{
    pico_ice *p = ctx;
    *got = pico_ice_read(p, buf, n, (uint64_t)(timeout_ms ? timeout_ms : 1) * 1000u);
    if (p->s.error[0]) {
        ntpu_errf(err, errlen, "vsim:board=pico-ice: the emulation stopped: %s", p->s.error);
        return NTPU_ERR_IO;
    }
    return *got == n ? NTPU_OK : NTPU_ERR_TIMEOUT;
}

static void pi_close(void *ctx)
{
    pico_ice_free(ctx);
    free(ctx);
}

static const ntpu_transport_ops pico_ice_ops = {
    .name = "vsim:board=pico-ice",
    .send = pi_send,
    .recv = pi_recv,
    .close = pi_close,
    .starts_in_sync = 0,
    .max_unanswered_tx_bytes = 0, /* flow control from the host to the FPGA's FIFO */
    .max_payload_cap = 516,
    .lossy = 1, /* as the usb transport declares it for the real board */
};

ntpu_status ntpu_transport_pico_ice_open(const char *opts, ntpu_transport *out, char *err, size_t errlen)
{
    if (opts && strcmp(opts, "board=pico-ice") != 0) {
        ntpu_errf(err, errlen, "vsim:board=pico-ice takes no other option ('%s')", opts);
        return NTPU_ERR_INVALID_ARG;
    }
    pico_ice *p = malloc(sizeof *p);
    if (!p) {
        ntpu_errf(err, errlen, "vsim:board=pico-ice: out of memory");
        return NTPU_ERR_NO_MEMORY;
    }
    if (pico_ice_boot(p, ntpu_pico_ice_firmware, (size_t)(ntpu_pico_ice_firmware_end - ntpu_pico_ice_firmware), err,
                      errlen) != 0 ||
        pico_ice_load(p, any_bitstream, sizeof any_bitstream, err, errlen) != 0) {
        pico_ice_free(p);
        free(p);
        return NTPU_ERR_IO;
    }
    out->ops = &pico_ice_ops;
    out->ctx = p;
    return NTPU_OK;
}
