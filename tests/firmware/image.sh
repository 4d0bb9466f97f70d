#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The built pico-ice image (make firmware) through build/tools/uf2 check, then copies of it damaged one
# way each: every damaged copy must be refused with exit 1 and exactly one line on stderr. Last, make
# flash-firmware with no RPI-RP2 drive must fail with one line.
set -u
B=${BUILD:-build}
UF2=$B/firmware/pico-ice/ntpu-pico-ice.uf2
TOOL=$B/tools/uf2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
rc=0

if ! "$TOOL" check "$UF2"; then
  echo "FAIL the built image is refused"; exit 1
fi
echo "ok   the built image passes"
# The boot2 the build stamped holds its own CRC: recompute it here, independently of the tool.
/usr/bin/python3 - "$UF2" <<'PY' || rc=1
import struct, sys
data = open(sys.argv[1], "rb").read()
boot2 = data[32:32 + 256]
crc = 0xFFFFFFFF
for b in boot2[:252]:
    crc ^= b << 24
    for _ in range(8):
        crc = ((crc << 1) ^ 0x04C11DB7 if crc & 0x80000000 else crc << 1) & 0xFFFFFFFF
stored = struct.unpack("<I", boot2[252:256])[0]
if crc != stored:
    sys.exit(f"FAIL boot2 CRC: stored 0x{stored:08x}, recomputed 0x{crc:08x}")
print(f"ok   boot2 CRC 0x{crc:08x} recomputed in Python")
PY

# The code that runs while the flash is out of XIP mode (.ramfunc, in .data) must not reach flash: no
# call out of it, no branch or literal outside SRAM.
ELF=$B/firmware/pico-ice/ntpu-pico-ice.elf
dis=$(arm-none-eabi-objdump -d -j .data "$ELF")
if ! grep -q '<flash_read_unique_id>:' <<< "$dis"; then
  echo "FAIL flash_read_unique_id is not in SRAM"; rc=1
elif grep -E '\s(bl|blx|bx)\s' <<< "$dis" | grep -v 'bx\s*lr' | grep -q .; then
  echo "FAIL code in SRAM calls out:"; grep -E '\s(bl|blx|bx)\s' <<< "$dis"; rc=1
elif grep -oE '(b\.n|b[a-z]{2}\.n|b)\s+[0-9a-f]{8}' <<< "$dis" | awk '{print $2}' | grep -vq '^2000'; then
  echo "FAIL code in SRAM branches outside SRAM"; rc=1
else
  echo "ok   flash_read_unique_id runs from SRAM and calls nothing"
fi

# damage NAME OFFSET BYTES: writes BYTES (hex, little-endian as in the file) at OFFSET of a copy.
damage() {
  local name=$1 off=$2 hex=$3 f="$T/$1.uf2"
  cp "$UF2" "$f"
  printf "$(echo "$hex" | sed 's/../\\x&/g')" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
  "$TOOL" check "$f" > "$T/out" 2> "$T/err"; local st=$?
  local lines; lines=$(wc -l < "$T/err")
  if [ "$st" = 1 ] && [ "$lines" = 1 ]; then
    echo "ok   $name refused: $(cat "$T/err")"
  else
    echo "FAIL $name: exit $st, $lines lines on stderr"; cat "$T/err"; rc=1
  fi
}
damage boot2-byte 40 ff                   # a boot2 code byte: its CRC no longer matches
damage boot2-crc 284 00000000             # the CRC itself
damage magic0 512 00000000                # block 1's first magic
damage magic-end 1020 00000000            # block 1's closing magic
damage family 540 882bed68                # the SAMD21's family ID
damage flags 520 00000000                 # no family-ID flag
damage block-number 532 05000000          # block 1 numbered 5
damage address 524 80010010               # block 1 at an unaligned address
damage reset-vector 548 00010010          # an even (ARM) reset vector
damage stack-pointer 544 00000040         # SP outside SRAM
head -c 700 "$UF2" > "$T/short.uf2"
if "$TOOL" check "$T/short.uf2" 2> "$T/err" && :; then echo "FAIL a truncated file passed"; rc=1
else echo "ok   truncated file refused: $(cat "$T/err")"; fi

out=$(RPI_RP2_DIR="$T/none" make -s --no-print-directory BUILD="$B" flash-firmware 2>&1 >/dev/null); st=$?
if [ "$st" != 0 ] && [ "$(printf '%s\n' "$out" | grep -c .)" = 1 ] && [[ "$out" == *"no RPI-RP2 drive"* ]]; then
  echo "ok   flash-firmware without a drive: $out"
else
  echo "FAIL flash-firmware without a drive: exit $st, said: $out"; rc=1
fi
exit $rc
