/* SPDX-License-Identifier: Apache-2.0 */
/* The pico-ice path end to end, without a board: libntpu's usb transport (unchanged) over a fake libusb
 * whose device is the real firmware image on the emulated RP2040 (sim/rp2040/), whose SPI link drives the
 * Verilator model of the pico-ice board top (sim/vsim/vsim_pico_ice.cpp) at pin level. Loads a bitstream
 * through `ntpu_usb_load_bitstream` (the FPGA's configuration logic is sim/rp2040/fpga_model.c; CDONE
 * starts the design from power-on), then runs tests/cosim/board_uart.c's checks with device=usb: int8 and
 * bf16 matmuls and Adam steps bit-identical to the golden model, and no byte lost on the link. Then the
 * link's throughput in emulated time, each way. Usage: emu_usb_path IMAGE.bin [small=1] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../host/ice40_bits.h"
#include "emu_libusb.h"
#include "internal.h"
#include "pico_ice.h"

int board_uart_main(int argc, char **argv); /* tests/cosim/board_uart.c, built with -Dmain=board_uart_main */

/* The link's throughput each way in emulated time: the weight buffer (64 KB on this board) written, then
 * read back. Bytes are the link's, frames included, as the FPGA's SPI target sees them. */
static int throughput(struct rp2040 *s)
{
    ntpu_device *dev;
    if (ntpu_open("usb", &dev) != NTPU_OK) {
        printf("FAIL ntpu_open(usb) again: %s\n", ntpu_last_error(dev));
        return 1;
    }
    ntpu_info info;
    ntpu_get_info(dev, &info);
    size_t rows = info.wb_rows, n = rows * info.cols;
    uint16_t *w = malloc(n * sizeof *w), *r = malloc(n * sizeof *r);
    for (size_t i = 0; i < n; i++) {
        w[i] = (uint16_t)(i * 2654435761u >> 7);
    }
    uint64_t t0 = s->icount;
    uint32_t in0 = s->fpga.link_bytes_in, out0 = s->fpga.link_bytes_out;
    int ok = ntpu_write_rows(dev, NTPU_MEM_WB, 0, (uint32_t)rows, w) == NTPU_OK && ntpu_fence(dev) == NTPU_OK;
    uint64_t t1 = s->icount;
    uint32_t in1 = s->fpga.link_bytes_in, out1 = s->fpga.link_bytes_out;
    ok = ok && ntpu_read_rows(dev, NTPU_MEM_WB, 0, (uint32_t)rows, r) == NTPU_OK;
    uint64_t t2 = s->icount;
    uint32_t out2 = s->fpga.link_bytes_out;
    ok = ok && memcmp(w, r, n * sizeof *w) == 0;
    double up = (in1 - in0) / ((double)(t1 - t0) / SIM_CLK_HZ), down = (out2 - out1) / ((double)(t2 - t1) / SIM_CLK_HZ);
    printf("%s link throughput (emulated time): host -> FPGA %u bytes in %.1f ms = %.0f kB/s; FPGA -> host %u bytes in "
           "%.1f ms = %.0f kB/s (%zu weight-buffer rows written and read back%s)\n",
           ok ? "ok  " : "FAIL", in1 - in0, (t1 - t0) * 1e3 / SIM_CLK_HZ, up / 1e3, out2 - out1,
           (t2 - t1) * 1e3 / SIM_CLK_HZ, down / 1e3, rows, ok ? ", equal" : ": failed or differ");
    (void)out0;
    free(w);
    free(r);
    ntpu_close(dev);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s ntpu-pico-ice.bin [small=1]\n", argv[0]);
        return 2;
    }
    static uint8_t image[SIM_FLASH_SIZE];
    FILE *f = fopen(argv[1], "rb");
    size_t len = f ? fread(image, 1, sizeof image, f) : 0;
    if (f) {
        fclose(f);
    }
    static pico_ice p;
    char err[256] = "";
    if (len == 0 || pico_ice_boot(&p, image, len, err, sizeof err) != 0) {
        printf("FAIL %s\n", len ? err : "cannot read the image");
        return 1;
    }
    struct rp2040 *s = &p.s;
    emu_libusb_attach(&p.h);
    printf("ok   the firmware booted, enumerated and configured on the emulated RP2040\n");

    static uint8_t bits[4096];
    size_t nbits = ice40_bits_make(bits, 692, 336, 2000, 0);
    ntpu_status st = ntpu_usb_load_bitstream(NULL, bits, nbits, err, sizeof err);
    vsim_pico_ice_stats fs;
    vsim_pico_ice_get_stats(p.fpga, &fs);
    if (st != NTPU_OK || !s->fpga.cdone || !fs.in_reset) {
        printf("FAIL loading a %zu-byte bitstream: %s (CDONE %d)\n", nbits, st == NTPU_OK ? "no error" : err,
               s->fpga.cdone);
        return 1;
    }
    printf("ok   a %zu-byte UP5K bitstream loaded through ntpu_usb_load_bitstream: CDONE high, the design starts\n",
           nbits);

    uint64_t icount0 = s->icount;
    uint32_t in0 = s->fpga.link_bytes_in, out0 = s->fpga.link_bytes_out;
    char *args[4] = {"board_uart", "device=usb", argc > 2 ? argv[2] : NULL, NULL};
    int rc = board_uart_main(argc > 2 ? 3 : 2, args);
    vsim_pico_ice_get_stats(p.fpga, &fs);
    double secs = (double)(s->icount - icount0) / SIM_CLK_HZ;
    printf("     emulated %.3f s: %u link bytes into the FPGA, %u out, %u transactions; %llu FPGA cycles; "
           "%u USB NAKs\n",
           secs, s->fpga.link_bytes_in - in0, s->fpga.link_bytes_out - out0, s->fpga.link_txns,
           (unsigned long long)fs.cycles, p.h.naks);
    if (rc == 0 && (fs.link_errors != 0 || s->fpga.link_errors != 0 || p.h.errors != 0 || s->error[0])) {
        printf("FAIL link errors: %llu seen by the FPGA, %u framing, %u USB protocol; %s\n",
               (unsigned long long)fs.link_errors, s->fpga.link_errors, p.h.errors, s->error);
        rc = 1;
    }
    if (rc == 0) {
        rc = throughput(s);
    }
    pico_ice_free(&p);
    return rc;
}
