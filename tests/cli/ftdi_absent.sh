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
failures=0
skipped=0

attached=" "
for d in /sys/bus/usb/devices/*; do
  pid=$(cat "$d/idProduct" 2>/dev/null)
  if [ "$(cat "$d/idVendor" 2>/dev/null)" = 0403 ] && { [ "$pid" = 6010 ] || [ "$pid" = 6015 ]; }; then
    echo "note: an FTDI board chip (0403:$pid) is attached at $d"
    attached="$attached$pid "
  fi
done

# expect_error ABSENT WHAT REGEX COMMAND...: COMMAND fails with one line on stderr that matches REGEX. ABSENT is
# the product IDs the command looks for ("6010 6015", "6015"), which must not be attached, or "-".
expect_error() {
  local need=$1 what=$2 want=$3 id; shift 3
  for id in $need; do
    case "$attached" in *" $id "*)
      echo "SKIP $what: needs no 0403:$id attached"; skipped=$((skipped + 1)); return ;;
    esac
  done
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

board='FT2232H|board'
expect_error "6010 6015" "info" "$board" "$B/ntpu" -d ftdi info
expect_error "6010 6015" "info --json" "$board" "$B/ntpu" -d ftdi info --json
expect_error "6010 6015" "info, device from NTPU_DEVICE" "$board" env NTPU_DEVICE=ftdi "$B/ntpu" info
expect_error "6010 6015" "info on interface A at 12 Mbaud" "$board" "$B/ntpu" -d ftdi:interface=A,baud=12000000 info
expect_error "6010 6015" "a serial that is not there" "$board" "$B/ntpu" -d ftdi:serial=NOPE123 info
expect_error "6010 6015" "a matmul" "$board" "$B/ntpu" -d ftdi bench
expect_error 6015 "the ULX3S" "no FT231X \(0403:6015\) found on USB: is the ULX3S plugged in" "$B/ntpu" \
  -d ftdi:board=ulx3s info
expect_error - "the ULX3S on a channel it lacks" "FT231X of the ULX3S has no interface B" "$B/ntpu" \
  -d ftdi:board=ulx3s,interface=B info
expect_error - "bad baud" "baud 'fast'" "$B/ntpu" -d ftdi:baud=fast info
expect_error - "impossible baud" "cannot make 9000000 baud" "$B/ntpu" -d ftdi:baud=9000000 info --json
expect_error - "bad interface" "interface 'C'" "$B/ntpu" -d ftdi:interface=C info
expect_error - "unknown option" "unknown ftdi option" "$B/ntpu" -d ftdi:port=/dev/ttyUSB1 info

if [ "$failures" != 0 ]; then
  echo "FAIL ftdi without a board: $failures checks failed"; exit 1
fi
if [ "$skipped" != 0 ]; then
  echo "SKIP ftdi without a board: $skipped checks skipped (a board is attached), the rest passed"; exit 77
fi
echo "ftdi without a board: all errors are one clear line"
