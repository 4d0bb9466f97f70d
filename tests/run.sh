#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test suite that `make test` built and prints one closing line: "N passed, N failed, N skipped".
# Exit status 0 when nothing failed. A command-line test that exits 77 could not run here (ftdi_absent.sh
# with a board attached): it is counted as skipped, not passed, and named.
set -u
B=${BUILD:-build}
passed=0
failed=0
skipped=0
failures=()
skips=()

record() { # name status
  if [ "$2" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$1"); fi
}

# Criterion's closing line as "passing failing crashing"; nothing when the log has none (the binary
# crashed, was killed or did not start).
criterion_summary() { # log
  sed -nE 's/.*Synthesis: Tested: [0-9]+ \| Passing: ([0-9]+) \| Failing: ([0-9]+) \| Crashing: ([0-9]+).*/\1 \2 \3/p' \
    "$1" | tail -1
}
# A Criterion run is clean when it exited 0 and its summary is there and counts no failing or crashing test.
criterion_clean() { # exit status, log
  local s
  s=$(criterion_summary "$2")
  [ "$1" = 0 ] && [ -n "$s" ] && [ "${s#* }" = "0 0" ]
}

echo "== Criterion unit tests"
mkdir -p "$B/tests"
log="$B/tests/criterion.log"
t0=$SECONDS
"$B/tests/host_tests" --jobs 2 > "$log" 2>&1; rc=$?
grep -E '^\[(FAIL|----)\]|Synthesis' "$log" || true
echo "     ($((SECONDS - t0)) s)"
read -r n_ok n_fail n_crash <<< "$(criterion_summary "$log")"
if [ -n "${n_ok:-}" ]; then
  # Each failing or crashing test counts; a non-zero exit the summary does not account for (a sanitizer
  # report at exit, a crash after the summary) counts as one more failure.
  passed=$((passed + n_ok))
  failed=$((failed + n_fail + n_crash))
  if ! criterion_clean "$rc" "$log"; then
    [ $((n_fail + n_crash)) = 0 ] && failed=$((failed + 1))
    failures+=("criterion (exit $rc)")
  fi
else
  tail -20 "$log"; echo "FAIL criterion: exit $rc and no summary"; record "criterion (exit $rc, no summary)" 1
fi

echo "== RTL benches (Icarus Verilog)"
for t in ${RTL_BENCHES:-}; do
  dir="$B/tests/rtl/$t"
  if [ -f "tests/rtl/$t/gen.c" ]; then
    ${CC:-gcc} ${CPPFLAGS:-} -std=c11 -O2 -Wno-psabi -o "$dir/gen" "tests/rtl/$t/gen.c" sim/ref/*.c -lz -lm \
      && "$dir/gen" "$dir" || { echo "FAIL $t (vector generator)"; record "$t" 1; continue; }
  fi
  log="$dir/run.log"; t0=$SECONDS
  (cd "$dir" && timeout 900 vvp -n tb.vvp +dir="$PWD") > "$log" 2>&1; rc=$?
  if [ "$rc" = 0 ] && grep -q '^PASS' "$log" && ! grep -q -E '^(FAIL|ERROR)' "$log"; then
    echo "ok   $t ($((SECONDS - t0)) s): $(grep '^PASS' "$log" | head -1)"; record "$t" 0
  else
    echo "FAIL $t (exit $rc):"; tail -5 "$log" | sed 's/^/     /'; record "$t" 1
  fi
done

echo "== RTL benches built by Verilator (the simulation-only forms vsim runs)"
for t in ${VERILATOR_BENCHES:-}; do
  dir="$B/tests/rtl/$t"  # the vectors the Icarus run above generated
  log="$B/tests/rtl-verilator/$t/run.log"
  vtb="$(cd "$B/tests/rtl-verilator/$t" && pwd)/Vtb"  # B may be relative; the bench runs in $dir
  t0=$SECONDS
  (cd "$dir" && timeout 900 "$vtb" +dir="$PWD") > "$log" 2>&1; rc=$?
  if [ "$rc" = 0 ] && grep -q '^PASS' "$log" && ! grep -q -E '^(FAIL|ERROR)' "$log"; then
    echo "ok   $t (Verilator, $((SECONDS - t0)) s): $(grep '^PASS' "$log" | head -1)"; record "$t (Verilator)" 0
  else
    echo "FAIL $t (Verilator, exit $rc):"; tail -5 "$log" | sed 's/^/     /'; record "$t (Verilator)" 1
  fi
done

# runs.txt with each line that names @BOARD@ once for every simulated board configuration
# (build/board-sims/list.txt, from the board.mk files: mk/board_sim.mk), as "<board>,config=<config>".
expand_boards() {
  local line b c
  while IFS= read -r line; do
    if [[ "$line" == *@BOARD@* ]]; then
      while read -r b c; do echo "${line//@BOARD@/$b,config=$c}"; done < "$B/board-sims/list.txt"
    else
      echo "$line"
    fi
  done < "$1"
}
echo "== Differential and end-to-end tests (ref vs vsim)"
if [ ! -s "$B/board-sims/list.txt" ]; then echo "FAIL no simulated boards ($B/board-sims/list.txt)"; record boards 1; fi
while read -r t args; do
  case "$t" in ''|'#'*) continue ;; esac
  envs=()  # a line may start with VAR=value words: the run's environment
  while [[ "$t" == *=* ]]; do envs+=("$t"); read -r t args <<< "$args"; done
  name="${envs[*]:+${envs[*]} }$t${args:+ $args}"; file=${name// /_}; log="$B/tests/cosim/${file//\//_}.log" # arguments may be paths
  t0=$SECONDS
  timeout 1800 env ${envs[@]+"${envs[@]}"} "$B/tests/cosim/$t" $args < /dev/null > "$log" 2>&1; rc=$?
  tail -3 "$log" | sed 's/^/     /'
  if [ "$rc" = 0 ]; then echo "ok   $name ($((SECONDS - t0)) s)"; else echo "FAIL $name (exit $rc)"; fi
  record "$name" "$rc"
done < <(expand_boards tests/cosim/runs.txt)

echo "== vsim in lockstep with plain eval() and with rtl/'s core (sim/vsim/lockstep.h)"
# A run passes when it passes as usual and compared some cycles (a run that compared none, the check
# not built in, fails too); a differential run must also have had cycles with the input region
# skipped and the ctl clock gated, the fast paths the check is for.
lockstep_ok() { [ "$1" = 0 ] && grep -qE '^lockstep: [1-9][0-9]* cycles equal to plain' "$2" \
  && grep -qE "^lockstep: [1-9][0-9]* cycles equal to rtl/'s core" "$2"; }
lockstep_fast() { grep -qE '^lockstep: .*input region skipped in [1-9][0-9]*, no ctl edge in [1-9]' "$1"; }
log="$B/tests/lockstep/criterion.log"
"$B/tests/lockstep/host_tests" --jobs 2 > "$log" 2>&1; rc=$?
grep -E 'Synthesis' "$log" | sed 's/^/     /'
if lockstep_ok "$rc" "$log" && criterion_clean "$rc" "$log"; then
  echo "ok   lockstep criterion ($(grep -cE '^lockstep: [0-9]+ cycles equal to plain' "$log") models checked)"; record "lockstep criterion" 0
else
  grep -E '^lockstep:.*unlike|^\[FAIL' "$log" | head -5 | sed 's/^/     /'; echo "FAIL lockstep criterion (exit $rc)"
  record "lockstep criterion" 1
fi
while read -r t args; do
  case "$t" in ''|'#'*) continue ;; esac
  name="lockstep $t${args:+ $args}"; file=${args// /_}; log="$B/tests/lockstep/${t}${args:+_${file//\//_}}.log"
  t0=$SECONDS
  timeout 1800 "$B/tests/lockstep/cosim/$t" $args < /dev/null > "$log" 2>&1; rc=$?
  grep -E '^lockstep:' "$log" | tail -2 | sed 's/^/     /'
  if lockstep_ok "$rc" "$log" && lockstep_fast "$log"; then
    echo "ok   $name ($((SECONDS - t0)) s)"; record "$name" 0
  else
    tail -3 "$log" | sed 's/^/     /'; echo "FAIL $name (exit $rc)"; record "$name" 1
  fi
done < tests/cosim/lockstep_runs.txt

echo "== Firmware (pico-ice): the image tool and the USB requests on the host, the built image, the image emulated, the whole path"
log="$B/tests/firmware.log"
"$B/tests/firmware_tests" --jobs 2 > "$log" 2>&1; rc=$?
grep -E '^\[(FAIL|----)\]|Synthesis' "$log" | sed 's/^/     /'
if criterion_clean "$rc" "$log"; then echo "ok   firmware criterion"; else echo "FAIL firmware criterion (exit $rc)"; fi
criterion_clean "$rc" "$log"; record "firmware criterion" $?
log="$B/tests/firmware-image.log"
BUILD="$B" bash tests/firmware/image.sh > "$log" 2>&1; rc=$?
grep -E '^(ok|FAIL)' "$log" | sed 's/^/     /' | tail -4
if [ "$rc" = 0 ]; then echo "ok   firmware image"; else echo "FAIL firmware image (exit $rc)"; fi
record "firmware image" "$rc"
log="$B/tests/firmware-emu.log"
ASAN_OPTIONS=detect_leaks=0 timeout 600 "$B/tests/emu_pico_ice" "$B/firmware/pico-ice/ntpu-pico-ice.bin" > "$log" 2>&1; rc=$?
grep -E '^(FAIL|PASS)|loopback:|CDONE' "$log" | sed 's/^/     /' | tail -6
if [ "$rc" = 0 ] && grep -q '^PASS' "$log"; then echo "ok   firmware on the emulated RP2040"; else echo "FAIL firmware on the emulated RP2040 (exit $rc)"; rc=1; fi
record "firmware emulated" "$rc"
log="$B/tests/firmware-emu-path.log"
timeout 900 "$B/tests/emu_usb_path" "$B/firmware/pico-ice/ntpu-pico-ice.bin" > "$log" 2>&1; rc=$?
grep -E '^(FAIL|PASS)|^ok|emulated [0-9]' "$log" | sed 's/^/     /' | tail -8
if [ "$rc" = 0 ] && grep -q '^PASS board_uart' "$log" && grep -q '^ok   link throughput' "$log"; then
  echo "ok   the usb transport, the firmware on the emulated RP2040 and the pico-ice board top's RTL, end to end"
else
  echo "FAIL the emulated pico-ice path (exit $rc; $log)"; rc=1
fi
record "pico-ice emulated end to end" "$rc"

echo "== Fuzz targets (tests/fuzz/, libFuzzer under ASan and UBSan): each over its seed corpus, then fuzzed 5 s from it"
for t in ${FUZZ_TARGETS:-}; do
  log="$B/tests/fuzz-$t.log"
  "$B/fuzz/fuzz_$t" -rss_limit_mb=2048 -timeout=30 tests/fuzz/corpus/"$t"/* > "$log" 2>&1; rc=$?
  n=$(grep -c '^Executed ' "$log")
  if [ "$rc" = 0 ] && [ "$n" -gt 0 ]; then
    # A short campaign with a fixed seed, new inputs in a scratch directory: the same run every time.
    scratch=$(mktemp -d); cp tests/fuzz/corpus/"$t"/* "$scratch"/
    "$B/fuzz/fuzz_$t" -seed=1 -max_total_time=5 -rss_limit_mb=2048 -timeout=30 -dict=tests/fuzz/"$t".dict \
      -artifact_prefix="$B/tests/fuzz-$t-" "$scratch" >> "$log" 2>&1; rc=$?
    rm -rf "$scratch"
    runs=$(grep -o '^Done [0-9]* runs' "$log" | tail -1 | cut -d' ' -f2)
  fi
  if [ "$rc" = 0 ] && [ "$n" -gt 0 ]; then echo "ok   fuzz_$t: $n corpus inputs, then ${runs:-?} runs"; else echo "FAIL fuzz_$t (exit $rc; $log)"; rc=1; fi
  record "fuzz_$t corpus" "$rc"
done

echo "== Command-line tests"
for t in tests/cli/*.sh; do
  [ -e "$t" ] || continue
  name=$(basename "$t" .sh); log="$B/tests/cli-$name.log"
  t0=$SECONDS
  BUILD="$B" timeout 1200 bash "$t" > "$log" 2>&1; rc=$?
  tail -3 "$log" | sed 's/^/     /'
  if [ "$rc" = 77 ]; then
    echo "skip $name"; skipped=$((skipped + 1)); skips+=("$name"); continue
  fi
  if [ "$rc" = 0 ]; then echo "ok   $name ($((SECONDS - t0)) s)"; else echo "FAIL $name (exit $rc)"; fi
  record "$name" "$rc"
done

[ ${#skips[@]} -gt 0 ] && echo "skipped: ${skips[*]}"
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
