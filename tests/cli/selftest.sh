#!/usr/bin/env bash
# ntpu selftest on the golden model and on the RTL: exit 0, every check PASS, nothing on stderr; --json
# gives one object with failed 0 and a pass:true for every check.
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
assert o["device"] == "vsim" and o["failed"] == 0 and o["passed"] == len(c) >= 9, o
assert all(x["pass"] is True and x["name"] and x["detail"] for x in c), c
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
if gcc -std=c11 -Wall -Wextra -Wpedantic -Werror -O1 -Ihost/include host/tools/*.c tests/cli/selftest_fault.c \
     -Wl,--wrap=ntpu_read_rows,--wrap=ntpu_matmul "$B/libntpu.a" -lstdc++ -lusb-1.0 -lcjson -lz -lm -lpthread \
     -o "$T/ntpu-fault" 2> "$T/cc.log"; then
  for f in "mem:FAIL memory ACC: walking ones: row 4096 lane 3 wrote 0x00000008, read 0x00000028:1" \
           "matmul:FAIL matmul int8 17x23x19: C[0][5] is :4"; do
    fault=${f%%:*}; rest=${f#*:}; want=${rest%:*}; nfail=${rest##*:}
    NTPU_FAULT=$fault "$T/ntpu-fault" selftest -d ref > "$T/out" 2> "$T/err"
    rc=$?
    if [ "$rc" = 1 ] && grep -qF "$want" "$T/out" && [ "$(grep -c '^FAIL ' "$T/out")" = "$nfail" ] &&
       [ "$(tail -1 "$T/err")" = "ntpu: selftest: $nfail of 10 checks failed" ]; then
      echo "ok   fault $fault: $(tail -1 "$T/err")"
    else
      echo "FAIL fault $fault: exit $rc, expected '$want' and $nfail FAIL lines:"; sed 's/^/     /' "$T/out" "$T/err"
      failures=$((failures + 1))
    fi
  done
else
  echo "FAIL building the fault-injecting ntpu:"; sed 's/^/     /' "$T/cc.log" | head -20; failures=$((failures + 1))
fi

"$B/ntpu" selftest --help | grep -q '^usage: ntpu selftest' || { echo "FAIL selftest --help"; failures=$((failures + 1)); }

[ "$failures" = 0 ] && echo "PASS selftest.sh" || { echo "FAIL selftest.sh: $failures failures"; exit 1; }
