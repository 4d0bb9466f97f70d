#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The simulated iCEBreaker (vsim:board=icebreaker): ntpu info reports the parameters the board's bitstream
# is built with (fpga/boards/icebreaker/board.mk), ntpu selftest passes through the bit-level UART, and bad
# options fail with one line on stderr and exit 1.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
DEV=vsim:board=icebreaker

# What `make fpga BOARD=icebreaker` builds.
params=$(MAKEFLAGS= make -s --no-print-directory -f fpga/boards/icebreaker/board.mk -f mk/board_params.mk \
         CONFIG=core board-params)
param() { echo "$params" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
n=$(param N); clock=$(param CLOCK_HZ); payload=$(param MAX_PAYLOAD); ub=$(param UB_ROWS)
if "$B/ntpu" --json info -d $DEV > "$T/info" 2> "$T/err" && python3 - "$T/info" "$n" "$clock" "$payload" "$ub" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
n, clock, payload, ub = map(int, sys.argv[2:])
assert o["device"] == "vsim:board=icebreaker", o
assert o["rows"] == n and o["cols"] == n, o
assert o["clock_hz"] == clock and o["max_payload"] == min(payload, 516) and o["ub_rows"] == ub, o
PY
then
  echo "ok   info -d $DEV: ${n}x$n, $clock Hz, payload $payload, UB $ub rows, as board.mk"
else
  echo "FAIL info -d $DEV (board.mk: $params):"; sed 's/^/     /' "$T/info" "$T/err"; failures=$((failures + 1))
fi

start=$(date +%s.%N)
"$B/ntpu" selftest -d $DEV > "$T/out" 2> "$T/err"
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
checks=$(grep -c '^PASS ' "$T/out")
if [ "$rc" = 0 ] && [ "$checks" -ge 9 ] && ! grep -qv '^PASS ' "$T/out" && [ ! -s "$T/err" ]; then
  echo "ok   selftest -d $DEV: $checks checks passed in $secs s"
else
  echo "FAIL selftest -d $DEV: exit $rc, $checks PASS lines:"; sed 's/^/     /' "$T/out" "$T/err"
  failures=$((failures + 1))
fi

for bad in "vsim:board=nosuch:unknown board 'nosuch'" "vsim:board=ulx3s,config=x:board 'ulx3s' has no configuration 'x'" "vsim:board=icebreaker,ber=0.7:ber='0.7' is not a probability" \
           "vsim:board=icebreaker,drop=x:drop='x' is not a probability" "vsim:board=icebreaker,seed=-1:seed='-1'" \
           "vsim:board=icebreaker,baud=9600:unknown option 'baud=9600'" "vsim:board=icebreaker,trace=:trace= needs"; do
  dev=${bad%:*}; want=${bad##*:}
  "$B/ntpu" info -d "$dev" > "$T/out" 2> "$T/err"
  rc=$?
  if [ "$rc" = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] && [ ! -s "$T/out" ] && grep -qF "$want" "$T/err"; then
    echo "ok   info -d $dev: $(cat "$T/err")"
  else
    echo "FAIL info -d $dev: exit $rc, expected one line with '$want':"; sed 's/^/     /' "$T/out" "$T/err"
    failures=$((failures + 1))
  fi
done

[ "$failures" = 0 ] && echo "PASS board_sim.sh" || { echo "FAIL board_sim.sh: $failures failures"; exit 1; }
