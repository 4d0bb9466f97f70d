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
failures=0
skipped=0

attached=0
for d in /sys/bus/usb/devices/*; do
  if [ "$(cat "$d/idVendor" 2>/dev/null)" = 1209 ] && [ "$(cat "$d/idProduct" 2>/dev/null)" = 0001 ]; then
    echo "note: a 1209:0001 device is attached at $d"
    attached=1
  fi
done

# expect_error NEEDS_ABSENT WHAT REGEX COMMAND...: COMMAND fails with one line on stderr that matches REGEX.
# NEEDS_ABSENT 1: the check looks for the board, so it is skipped when one is attached.
expect_error() {
  local need=$1 what=$2 want=$3; shift 3
  if [ "$need" = 1 ] && [ "$attached" = 1 ]; then
    echo "SKIP $what: needs no 1209:0001 device attached"; skipped=$((skipped + 1)); return
  fi
  "$@" > "$T/out" 2> "$T/err"
  local rc=$? lines bytes
  lines=$(wc -l < "$T/err")
  bytes=$(wc -c < "$T/out")
  if [ "$rc" = 1 ] && [ "$lines" = 1 ] && [ "$bytes" = 0 ] && grep -q '^ntpu: ' "$T/err" && grep -Eq "$want" "$T/err"; then
    echo "ok   $what: $(cat "$T/err")"
  else
    echo "FAIL $what: exit $rc, $lines lines on stderr, $bytes bytes on stdout:"
    sed 's/^/     /' "$T/err" "$T/out"
    failures=$((failures + 1))
  fi
}

# A bitstream that passes the host's checks (a UP5K header as icepack writes it), and one that does not.
printf '\xff\x00\x00\xff\x7e\xaa\x99\x7e\x51\x00\x01\x05\x92\x00\x20\x62\x02\xb3\x82\x00\x00\x72\x01\x50\x11\x00\x01\x01\x00\x00\x01\x06\x00' > "$T/up5k.bin"
printf '\xff\x00\x00\xff\x7e\xaa\x99\x7e\x62\x03\x67\x72\x01\x10\x01\x01\x00\x00\x01\x06\x00' > "$T/hx8k.bin"
printf '.comment\n.device 5k\n' > "$T/design.asc"

board='pico-ice|1209:0001'
expect_error 1 "info" "$board" "$B/ntpu" -d usb info
expect_error 1 "info --json" "$board" "$B/ntpu" -d usb info --json
expect_error 1 "info, device from NTPU_DEVICE" "$board" env NTPU_DEVICE=usb "$B/ntpu" info
expect_error 1 "a serial that is not there" "$board" "$B/ntpu" -d usb:serial=NOPE123 info
expect_error 1 "a matmul" "$board" "$B/ntpu" -d usb bench
expect_error 1 "flash a good bitstream" "$board" "$B/ntpu" flash -d usb "$T/up5k.bin"
expect_error - "unknown option" "unknown usb option 'baud=3000000'.*serial=S" "$B/ntpu" -d usb:baud=3000000 info
expect_error - "empty serial" "usb serial= needs 1 to 63 characters" "$B/ntpu" -d usb:serial= info
expect_error - "flash: no sync word" "no iCE40 sync word" "$B/ntpu" flash -d usb "$T/design.asc"
expect_error - "flash: another part" "HX8K.*the pico-ice has an iCE40UP5K" "$B/ntpu" flash -d usb "$T/hx8k.bin"
expect_error - "flash: empty file" "the bitstream is empty" "$B/ntpu" flash -d usb /dev/null
expect_error - "flash: no file" "cannot open bitstream" "$B/ntpu" flash -d usb "$T/missing.bin"
expect_error - "flash on ref" "flash loads a bitstream over the pico-ice's USB" "$B/ntpu" flash -d ref "$T/up5k.bin"

if [ "$failures" != 0 ]; then
  echo "FAIL usb without a board: $failures checks failed"; exit 1
fi
if [ "$skipped" != 0 ]; then
  echo "SKIP usb without a board: $skipped checks skipped (a 1209:0001 device is attached), the rest passed"; exit 77
fi
echo "usb without a board: all errors are one clear line"
