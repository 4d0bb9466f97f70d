#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The usb transport against simulated pico-ice boards (usb_fakeusb.c defines the libusb calls): open
# errors (no board, two boards, wrong serial, another product, protocol major, FPGA not configured),
# the requests at open, 64-byte packets with short and zero-length ones, timeouts, unplugging mid-write,
# ntpu_open("usb") plus int8 and bf16 matmuls bit-identical to ref, and bitstream loading (loaded,
# malformed, another part, refused with CDONE low). Built twice: with AddressSanitizer and
# UndefinedBehaviorSanitizer, and with ThreadSanitizer for the transport's event thread.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
CC=${CC:-gcc}
FLAGS="-std=c11 -Wall -Wextra -Wpedantic -Werror -O1 -g -fno-omit-frame-pointer -D_POSIX_C_SOURCE=200809L
       -Ihost/include -Ihost/src -Isim/ref -Ifirmware/pico-ice -I/usr/include/libusb-1.0"
SRCS="tests/cli/usb_fakeusb.c host/src/transport/transport_usb.c host/src/transport/usb_proto.c
      host/src/transport/usb_bulk.c host/src/transport/rx_queue.c"
# No -lusb-1.0: every libusb symbol comes from the fake. The rest of the library comes from the archive.
LIBS="$B/libntpu.a -lstdc++ -lcjson -lz -lm -lpthread"
rc=0
for san in "address,undefined -fno-sanitize-recover=all" thread; do
  name=${san%% *}
  if ! $CC $FLAGS -fsanitize=$san $SRCS $LIBS -o "$T/fake-$name" 2> "$T/cc.log"; then
    echo "FAIL building with -fsanitize=$san:"; sed 's/^/     /' "$T/cc.log" | head -20; rc=1; continue
  fi
  echo "== -fsanitize=$name"
  # The program bounds itself with alarm(); timeout is a second guard.
  TSAN_OPTIONS="halt_on_error=1" timeout 300 "$T/fake-$name" || rc=1
done
exit $rc
