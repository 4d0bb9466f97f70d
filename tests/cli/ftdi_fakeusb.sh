#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ftdi transport against a simulated FT2232H (ftdi_fakeusb.c defines the libusb calls): open errors,
# the setup requests, a 300 KB round trip through the status-byte stripping, timeouts, unplugging, and
# ntpu_open plus a matmul with the golden model as the board. Built with ASan/UBSan and with TSan
# (tests/cli/lib/fakeusb.sh).
set -u
. "$(dirname "$0")/lib/fakeusb.sh"
fakeusb_run "" tests/cli/ftdi_fakeusb.c host/src/transport/transport_ftdi.c host/src/transport/ftdi_proto.c \
  host/src/transport/usb_bulk.c host/src/transport/rx_queue.c tests/cli/fakeusb_core.c tests/cli/fakeusb_checks.c
