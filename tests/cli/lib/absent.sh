# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/cli/*_absent.sh: checks that a command fails with one clear line when the USB device it
# looks for is not there, and skips (rather than passes) such a check when that device is attached. Needs
# $T, a scratch directory. Not a test itself (tests/run.sh runs tests/cli/*.sh only).
failures=0
skipped=0
attached=" "

# absent_scan VID:PID...: notes and remembers which of these devices are attached.
absent_scan() {
  local d id want
  for d in /sys/bus/usb/devices/*; do
    id="$(cat "$d/idVendor" 2>/dev/null):$(cat "$d/idProduct" 2>/dev/null)"
    for want in "$@"; do
      if [ "$id" = "$want" ]; then
        echo "note: a $id device is attached at $d"; attached="$attached$id "
      fi
    done
  done
}

# expect_error ABSENT WHAT REGEX COMMAND...: COMMAND exits 1 with nothing on stdout and one line on stderr that
# starts with "ntpu: " and matches REGEX. ABSENT is the VID:PIDs the command looks for ("0403:6010 0403:6015"),
# which must not be attached, or "-".
expect_error() {
  local need=$1 what=$2 want=$3 id; shift 3
  for id in $need; do
    case "$attached" in *" $id "*)
      echo "SKIP $what: needs no $id device attached"; skipped=$((skipped + 1)); return ;;
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

# absent_finish NAME: exits 1 if a check failed, 77 (skipped, for tests/run.sh) if one was skipped, else 0.
absent_finish() {
  if [ "$failures" != 0 ]; then
    echo "FAIL $1 without a board: $failures checks failed"; exit 1
  fi
  if [ "$skipped" != 0 ]; then
    echo "SKIP $1 without a board: $skipped checks skipped (a device it looks for is attached), the rest passed"
    exit 77
  fi
  echo "$1 without a board: all errors are one clear line"
}
