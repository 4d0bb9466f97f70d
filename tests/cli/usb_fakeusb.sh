#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The usb transport against simulated pico-ice boards (usb_fakeusb.c defines the libusb calls): open
# errors (no board, two boards, wrong serial, another product, protocol major, FPGA not configured),
# the requests at open, 64-byte packets with short and zero-length ones, timeouts, unplugging mid-write,
# ntpu_open("usb") plus int8 and bf16 matmuls bit-identical to ref, and bitstream loading (loaded,
# malformed, another part, refused with CDONE low). Built with ASan/UBSan and with TSan
# (tests/cli/lib/fakeusb.sh).
set -u
. "$(dirname "$0")/lib/fakeusb.sh"
fakeusb_run -Ifirmware/pico-ice tests/cli/usb_fakeusb.c host/src/transport/transport_usb.c \
  host/src/transport/usb_proto.c host/src/transport/usb_bulk.c host/src/transport/rx_queue.c tests/cli/fakeusb_core.c tests/cli/fakeusb_vendor.c tests/cli/fakeusb_checks.c
