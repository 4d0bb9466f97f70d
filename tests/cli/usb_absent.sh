#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `ntpu -d usb` with no pico-ice attached: exit status 1, nothing on stdout, exactly one line on stderr that
# starts with "ntpu: " and names the board (pico-ice, 1209:0001). It must hold whether libusb can see USB at
# all (no devices) or not (libusb_init fails), so the check is on the message, not on which of the two it was.
# Bad usb options, a malformed bitstream and `ntpu flash` on another device must fail the same way, before
# any USB access. With a 1209:0001 device attached "absent" is untrue for the checks that look for the board:
# each is reported as skipped, and the script exits 77 (tests/run.sh counts it as skipped, not passed) unless
# something failed.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/absent.sh"
absent_scan 1209:0001

# A bitstream that passes the host's checks (a UP5K header as icepack writes it), and one that does not.
printf '\xff\x00\x00\xff\x7e\xaa\x99\x7e\x51\x00\x01\x05\x92\x00\x20\x62\x02\xb3\x82\x00\x00\x72\x01\x50\x11\x00\x01\x01\x00\x00\x01\x06\x00' > "$T/up5k.bin"
printf '\xff\x00\x00\xff\x7e\xaa\x99\x7e\x62\x03\x67\x72\x01\x10\x01\x01\x00\x00\x01\x06\x00' > "$T/hx8k.bin"
printf '.comment\n.device 5k\n' > "$T/design.asc"

board='pico-ice|1209:0001'
expect_error 1209:0001 "info" "$board" "$B/ntpu" -d usb info
expect_error 1209:0001 "info --json" "$board" "$B/ntpu" -d usb info --json
expect_error 1209:0001 "info, device from NTPU_DEVICE" "$board" env NTPU_DEVICE=usb "$B/ntpu" info
expect_error 1209:0001 "a serial that is not there" "$board" "$B/ntpu" -d usb:serial=NOPE123 info
expect_error 1209:0001 "a matmul" "$board" "$B/ntpu" -d usb bench
expect_error 1209:0001 "flash a good bitstream" "$board" "$B/ntpu" flash -d usb "$T/up5k.bin"
expect_error - "unknown option" "unknown usb option 'baud=3000000'.*serial=S" "$B/ntpu" -d usb:baud=3000000 info
expect_error - "empty serial" "usb serial= needs 1 to 63 characters" "$B/ntpu" -d usb:serial= info
expect_error - "flash: no sync word" "no iCE40 sync word" "$B/ntpu" flash -d usb "$T/design.asc"
expect_error - "flash: another part" "HX8K.*the pico-ice has an iCE40UP5K" "$B/ntpu" flash -d usb "$T/hx8k.bin"
expect_error - "flash: empty file" "the bitstream is empty" "$B/ntpu" flash -d usb /dev/null
expect_error - "flash: no file" "cannot open bitstream" "$B/ntpu" flash -d usb "$T/missing.bin"
expect_error - "flash on ref" "flash loads a bitstream over the pico-ice's USB" "$B/ntpu" flash -d ref "$T/up5k.bin"

absent_finish usb
