#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ntpu selftest on the golden model and on the RTL: exit 0, every check PASS, nothing on stderr; --json
# gives one object with failed 0, skipped 0 and status "pass" for every check. A check the device cannot
# run is SKIP (not PASS) and does not fail the run; checks that find a fault fail it.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

# ref:...,novec=1 has no vector unit, ref:...,novec=1,notra=1 is the iCEBreaker's shape (no vector unit,
# no TRANSPOSE_A): the training check runs through the library's host fallbacks and must not be skipped.
# vsim:trace= is the traced model, whose harness drives the gated clocks in two evals a cycle rather
# than one (docs/decisions/0021-vsim-clock-gates.md).
for dev in ref vsim "vsim:trace=$T/trace.fst" ref:n=2,ub=100,wb=64,acc=50 \
  ref:n=2,ub=1024,wb=16384,acc=512,payload=516,novec=1 ref:n=2,ub=1024,wb=16384,acc=512,payload=516,novec=1,notra=1 \
  ref:faults=0.0003,fault_seed=2; do
  "$B/ntpu" selftest -d "$dev" > "$T/out" 2> "$T/err"
  rc=$?
  checks=$(grep -c '^PASS ' "$T/out")
  trained=1
  case "$dev" in *novec=1*) grep -q '^PASS train step: 20-12-5 MLP' "$T/out" || trained=0 ;; esac
  if [ "$rc" = 0 ] && [ "$checks" -ge 9 ] && ! grep -qv '^PASS ' "$T/out" && [ ! -s "$T/err" ] &&
     [ "$trained" = 1 ]; then
    echo "ok   selftest -d $dev: $checks checks passed"
  else
    echo "FAIL selftest -d $dev: exit $rc, $checks PASS lines:"; sed 's/^/     /' "$T/out" "$T/err"
    failures=$((failures + 1))
  fi
done
if [ -s "$T/trace.fst" ]; then
  echo "ok   selftest -d vsim:trace=FILE wrote $(wc -c < "$T/trace.fst") bytes of trace"
else
  echo "FAIL selftest -d vsim:trace=FILE wrote no trace"; failures=$((failures + 1))
fi

"$B/ntpu" --json -d vsim selftest > "$T/json" 2> "$T/err"
rc=$?
if [ "$rc" = 0 ] && [ ! -s "$T/err" ] && python3 - "$T/json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
c = o["checks"]
assert o["device"] == "vsim" and o["failed"] == 0 and o["skipped"] == 0 and o["passed"] == len(c) >= 9, o
assert all(x["status"] == "pass" and x["pass"] is True and x["name"] and x["detail"] for x in c), c
assert {"id", "link", "memory UB", "memory WB", "memory ACC"} <= {x["name"] for x in c}
PY
then
  echo "ok   selftest --json -d vsim"
else
  echo "FAIL selftest --json -d vsim: exit $rc"; sed 's/^/     /' "$T/json" "$T/err"; failures=$((failures + 1))
fi

# A device that cannot be opened: one error line, exit 1.
"$B/ntpu" selftest -d nosuch > "$T/out" 2> "$T/err"
rc=$?
if [ "$rc" = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] && grep -q '^ntpu: ' "$T/err"; then
  echo "ok   selftest -d nosuch: $(cat "$T/err")"
else
  echo "FAIL selftest -d nosuch: exit $rc"; sed 's/^/     /' "$T/err"; failures=$((failures + 1))
fi

# The checks can fail: the CLI relinked against a device with one wrong bit (selftest_fault.c).
# On ref the matmuls are compared with a plain C loop, not with the golden model itself, so a wrong result
# shows there too; on vsim a golden model that disagrees with the loop fails the check as well.
# -Ihost/src: the CLI writes its own files through the library's internal io/outfile.h; -Ifirmware/pico-ice:
# `ntpu flash` checks bitstreams with the usb transport's functions, which name the firmware's requests.
# $(pkg-config ... ompi-c): ntpu train joins mpirun's jobs through Open MPI (host/tools/ranks.c).
if gcc -std=c11 -Wall -Wextra -Wpedantic -Werror -O1 -D_POSIX_C_SOURCE=200809L -Ihost/include -Ihost/src -Ifirmware/pico-ice \
     $(pkg-config --cflags ompi-c) host/tools/*.c tests/cli/selftest_fault.c \
     -Wl,--wrap=ntpu_read_rows,--wrap=ntpu_matmul,--wrap=ntpu_get_info "$B/libntpu.a" \
     -lstdc++ -lusb-1.0 -lunicorn -lcjson -lz -lm -lpthread $(pkg-config --libs ompi-c) -o "$T/ntpu-fault" \
     2> "$T/cc.log"; then
  for f in "ref:mem:FAIL memory ACC: walking ones: row 4096 lane 3 wrote 0x00000008, read 0x00000028:1" \
           "ref:matmul:FAIL matmul int8 17x23x19: C[0][5] is 0xffff80cc, a plain C loop gives 0xffff80cd:4" \
           "vsim:golden:FAIL matmul bf16 16x8x24: C[0][5] is 0x45600e00, as a plain C loop gives; the golden model gives 0x45600e01:4"; do
    dev=${f%%:*}; rest=${f#*:}; fault=${rest%%:*}; rest=${rest#*:}; want=${rest%:*}; nfail=${rest##*:}
    NTPU_FAULT=$fault "$T/ntpu-fault" selftest -d "$dev" > "$T/out" 2> "$T/err"
    rc=$?
    if [ "$rc" = 1 ] && grep -qF "$want" "$T/out" && [ "$(grep -c '^FAIL ' "$T/out")" = "$nfail" ] &&
       [ "$(grep -c '^PASS ' "$T/out")" = $((10 - nfail)) ] &&
       [ "$(tail -1 "$T/err")" = "ntpu: selftest: $nfail of 10 checks failed" ]; then
      echo "ok   fault $fault on $dev: $(tail -1 "$T/err")"
    else
      echo "FAIL fault $fault on $dev: exit $rc, expected '$want' and $nfail FAIL lines:"
      sed 's/^/     /' "$T/out" "$T/err"
      failures=$((failures + 1))
    fi
  done
  # What the device does not have is SKIP, neither PASS nor FAIL: no bf16 skips its two matmuls and the
  # training; the run still exits 0.
  NTPU_FAULT=nobf16 "$T/ntpu-fault" selftest -d ref > "$T/out" 2> "$T/err"
  rc=$?
  if [ "$rc" = 0 ] && [ ! -s "$T/err" ] && [ "$(grep -c '^PASS ' "$T/out")" = 7 ] &&
     [ "$(grep -c '^SKIP ' "$T/out")" = 3 ] && [ "$(grep -c '^SKIP matmul bf16 .*: the device has no bf16$' "$T/out")" = 2 ] &&
     grep -q '^SKIP train step: the device has no bf16$' "$T/out" && ! grep -q '^FAIL ' "$T/out"; then
    echo "ok   no bf16: $(grep -c '^SKIP ' "$T/out") checks SKIP, exit 0"
  else
    echo "FAIL no bf16: exit $rc, expected 7 PASS and 3 SKIP lines:"; sed 's/^/     /' "$T/out" "$T/err"
    failures=$((failures + 1))
  fi
  NTPU_FAULT=nobf16 "$T/ntpu-fault" --json selftest -d ref > "$T/json" 2> "$T/err"
  rc=$?
  if [ "$rc" = 0 ] && [ ! -s "$T/err" ] && python3 - "$T/json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
c = o["checks"]
assert (o["passed"], o["failed"], o["skipped"]) == (7, 0, 3) and len(c) == 10, o
skipped = [x["name"] for x in c if x["status"] == "skip"]
assert skipped == ["matmul bf16 17x23x19", "matmul bf16 16x8x24", "train step"], skipped
assert all(x["pass"] is (x["status"] == "pass") for x in c), c
PY
  then
    echo "ok   no bf16 --json: skipped 3, passed 7"
  else
    echo "FAIL no bf16 --json: exit $rc"; sed 's/^/     /' "$T/json" "$T/err"; failures=$((failures + 1))
  fi
else
  echo "FAIL building the fault-injecting ntpu:"; sed 's/^/     /' "$T/cc.log" | head -20; failures=$((failures + 1))
fi

"$B/ntpu" selftest --help | grep -q '^usage: ntpu selftest' || { echo "FAIL selftest --help"; failures=$((failures + 1)); }

[ "$failures" = 0 ] && echo "PASS selftest.sh" || { echo "FAIL selftest.sh: $failures failures"; exit 1; }
