#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ftdi transport against a simulated FT2232H (ftdi_fakeusb.c defines the libusb calls): open errors,
# the setup requests, a 300 KB round trip through the status-byte stripping, timeouts, unplugging, and
# ntpu_open plus a matmul with the golden model as the board. Built twice: with AddressSanitizer and
# UndefinedBehaviorSanitizer, and with ThreadSanitizer for the transport's event thread.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
CC=${CC:-gcc}
FLAGS="-std=c11 -Wall -Wextra -Wpedantic -Werror -O1 -g -fno-omit-frame-pointer -D_POSIX_C_SOURCE=200809L
       -Ihost/include -Ihost/src -Isim/ref -I/usr/include/libusb-1.0"
SRCS="tests/cli/ftdi_fakeusb.c host/src/transport/transport_ftdi.c host/src/transport/ftdi_proto.c
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
  TSAN_OPTIONS="halt_on_error=1" "$T/fake-$name" || rc=1
done
exit $rc
