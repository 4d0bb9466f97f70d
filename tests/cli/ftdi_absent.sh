#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `ntpu -d ftdi` with no board attached: exit status 1, nothing on stdout, exactly one line on stderr that
# starts with "ntpu: " and names the chip (FT2232H, FT231X) or the board. It must hold whether libusb can see USB at all
# (no devices) or not (libusb_init fails), so the check is on the message, not on which of the two it was.
# Bad ftdi options must fail the same way, before any USB access.
# With a board's chip attached (FT2232H 0403:6010, FT231X 0403:6015) "absent" is untrue for the checks that look
# for that chip: each is reported as skipped, and the script exits 77 (tests/run.sh counts it as skipped, not
# passed) unless something failed. The checks of bad options run either way. A board the scan below misses
# makes the no-board checks fail: they assert the error, never an escape.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/absent.sh"
chips="0403:6010 0403:6015"
absent_scan $chips

board='FT2232H|board'
expect_error "$chips" "info" "$board" "$B/ntpu" -d ftdi info
expect_error "$chips" "info --json" "$board" "$B/ntpu" -d ftdi info --json
expect_error "$chips" "info, device from NTPU_DEVICE" "$board" env NTPU_DEVICE=ftdi "$B/ntpu" info
expect_error "$chips" "info on interface A at 12 Mbaud" "$board" "$B/ntpu" -d ftdi:interface=A,baud=12000000 info
expect_error "$chips" "a serial that is not there" "$board" "$B/ntpu" -d ftdi:serial=NOPE123 info
expect_error "$chips" "a matmul" "$board" "$B/ntpu" -d ftdi bench
expect_error 0403:6015 "the ULX3S" "no FT231X \(0403:6015\) found on USB: is the ULX3S plugged in" "$B/ntpu" \
  -d ftdi:board=ulx3s info
expect_error - "the ULX3S on a channel it lacks" "FT231X of the ULX3S has no interface B" "$B/ntpu" \
  -d ftdi:board=ulx3s,interface=B info
expect_error - "bad baud" "baud 'fast'" "$B/ntpu" -d ftdi:baud=fast info
expect_error - "impossible baud" "cannot make 9000000 baud" "$B/ntpu" -d ftdi:baud=9000000 info --json
expect_error - "bad interface" "interface 'C'" "$B/ntpu" -d ftdi:interface=C info
expect_error - "unknown option" "unknown ftdi option" "$B/ntpu" -d ftdi:port=/dev/ttyUSB1 info

absent_finish ftdi
