#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every stop of `ntpu train` is safe (issue 26, docs/training.md "Checkpoints"):
#  - SIGKILL at 20 random moments of a run that checkpoints every step (so many land inside a save):
#    each time the directory holds one whole, loadable checkpoint, the next start removes what the
#    killed save left, and --resume ends with exactly an uninterrupted run's weights and optimizer state;
#  - SIGINT and SIGTERM: the run finishes its step, checkpoints, exits non-zero with one line; resumes
#    exactly;
#  - a full disk during --save (an LD_PRELOAD shim: ENOSPC on the checkpoint's files) keeps the old
#    checkpoint, leaves no temporary file and ends the run with one line;
#  - --log to a FIFO whose reader went away ends the run with one line instead of blocking;
#  - a run that diverges (the loss NaN) stops with one line, its last finite checkpoint kept; a
#    checkpoint holding a NaN weight is refused with one line.
set -eu
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ARGS=(-d ref --layers 784,64,10 --train-limit 1920 --test-limit 200 --epochs 2 --batch 64 --seed 5)
STEPS=60
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# temps DIR: what a save leaves while it runs (ntpu_outfile's NAME.tmpPID.K, .ntpu-tmpPID.K, FILE.state.new)
temps() { ls -A "$1" | grep -E '\.(ntpu-)?tmp[0-9]+\.[0-9]+$|\.state\.new$' || true; }
state_step() {
  /usr/bin/python3 -c "import json,struct,sys; b=open(sys.argv[1],'rb').read(); n=struct.unpack('<Q',b[:8])[0]; print(json.loads(b[8:8+n])['__metadata__']['step'])" "$1"
}
# whole DIR: the checkpoint in DIR loads (ntpu eval reads the model and finishes an interrupted save)
whole() { "$B/ntpu" eval -d ref --model "$1/ck.st" --test-limit 50 > /dev/null 2> "$1/eval.err" || { fail "$1: no whole checkpoint: $(cat "$1/eval.err")"; return 1; }; }
# resumes DIR: --resume continues the run to its end, bit-identical to the uninterrupted one, and leaves no temporary file
resumes() {
  # (whole() has loaded it, which finishes a save cut between its renames.) Killed after its last
  # checkpoint, while it exited: nothing is left to resume, the checkpoint is the end.
  if [ "$(state_step "$1/ck.st.state")" != "$STEPS" ]; then
    "$B/ntpu" train -d ref --resume "$1/ck.st" --save "$1/ck.st" --epochs 2 --test-limit 200 > "$1/resume.log" 2>&1 ||
      { fail "$1: --resume failed: $(tail -1 "$1/resume.log")"; return 1; }
  fi
  /usr/bin/python3 tests/cli/st_compare.py "$T/full.st" "$1/ck.st" > "$1/cmp.log" 2>&1 ||
    { fail "$1: resumed run differs: $(cat "$1/cmp.log")"; return 1; }
  local left; left=$(temps "$1")
  [ -z "$left" ] || { fail "$1: temporary files after the next start: $left"; return 1; }
}

# An uninterrupted run, timed from the moment its first checkpoint is there to its end: the window
# the kills below fall in.
"$B/ntpu" train "${ARGS[@]}" --save "$T/full.st" --save-every 1 > "$T/full.log" 2>&1 &
pid=$!
for _ in $(seq 1 3000); do [ -e "$T/full.st.state" ] && break; sleep 0.001; done
t0=$(date +%s%N)
wait $pid
run_ms=$((($(date +%s%N) - t0) / 1000000))
echo "an uninterrupted run: $STEPS steps, a checkpoint after each, $run_ms ms after its first"

# --- SIGKILL at 20 random moments: seeded, so a failure can be repeated (KILL_SEED=N). A run that
# finished before its moment (a busy machine is slower or faster than the timed run) is tried again.
seed=${KILL_SEED:-$(date +%s)}
echo "SIGKILL moments from seed $seed"
RANDOM=$seed
inside=0 kills=0 tries=0
while [ "$kills" -lt 20 ] && [ "$tries" -lt 60 ]; do
  tries=$((tries + 1))
  d="$T/kill$tries"; mkdir "$d"
  "$B/ntpu" train "${ARGS[@]}" --save "$d/ck.st" --save-every 1 > "$d/run.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 3000); do [ -e "$d/ck.st.state" ] && break; sleep 0.001; done
  delay_ms=$((RANDOM % (run_ms * 9 / 10 + 1)))
  sleep "$(printf '0.%03d' $((delay_ms % 1000)))"; sleep $((delay_ms / 1000))
  if kill -KILL $pid 2> /dev/null; then kills=$((kills + 1)); fi
  wait $pid 2> /dev/null || true
  [ -n "$(temps "$d")" ] && inside=$((inside + 1)) # the kill cut a save short
  step=$(state_step "$d/ck.st.state" 2> /dev/null || echo "?")
  whole "$d" && resumes "$d" || echo "     (try $tries: killed after ${delay_ms} ms, checkpoint at step $step)"
done
echo "$kills runs killed in $tries tries, $inside of them inside a save"
[ "$kills" = 20 ] || fail "only $kills of $tries runs were still running when killed"

# --- SIGINT and SIGTERM: finish the step, checkpoint, one line, exit non-zero
for sig in INT TERM; do
  d="$T/sig$sig"; mkdir "$d"
  "$B/ntpu" train "${ARGS[@]}" --save "$d/ck.st" --save-every 5 > "$d/run.log" 2> "$d/err.log" &
  pid=$!
  for _ in $(seq 1 3000); do [ -e "$d/ck.st.state" ] && break; sleep 0.001; done
  kill -s $sig $pid
  if wait $pid; then
    echo "note: the SIG$sig run finished before the signal"
  else
    last=$(grep -v '^epoch ' "$d/err.log" | grep -c . || true)
    grep -q '^ntpu: interrupted; the checkpoint holds the last completed step' "$d/err.log" && [ "$last" = 1 ] ||
      fail "SIG$sig: not one line: $(cat "$d/err.log")"
  fi
  echo "after SIG$sig the checkpoint holds step $(state_step "$d/ck.st.state") of $STEPS"
  whole "$d" && resumes "$d" || true
done

# --- a full disk during --save keeps the old checkpoint
cc -shared -fPIC -O1 -o "$T/enospc.so" tests/cli/enospc_preload.c -ldl
d="$T/full_disk"; mkdir "$d"
"$B/ntpu" train "${ARGS[@]}" --epochs 1 --save "$d/ck.st" > /dev/null 2>&1
cp "$d/ck.st" "$T/before.st"; cp "$d/ck.st.state" "$T/before.st.state"
if NTPU_TEST_ENOSPC="$d/ck.st" LD_PRELOAD="$T/enospc.so" "$B/ntpu" train -d ref --resume "$d/ck.st" --save "$d/ck.st" \
     --epochs 2 --test-limit 200 > "$d/run.log" 2> "$d/err.log"; then
  fail "a run whose saves hit a full disk exited 0"
fi
msg=$(grep -v '^epoch ' "$d/err.log" || true)
echo "full disk: $msg"
{ [ "$(echo "$msg" | grep -c .)" = 1 ] && echo "$msg" | grep -q 'No space left on device'; } || fail "full disk: not one line naming the cause"
cmp -s "$d/ck.st" "$T/before.st" && cmp -s "$d/ck.st.state" "$T/before.st.state" || fail "full disk: the old checkpoint changed"
[ -z "$(temps "$d")" ] || fail "full disk: temporary files left: $(temps "$d")"

# --- --log to a FIFO whose reader goes away after the first epoch
d="$T/fifo"; mkdir "$d"; mkfifo "$d/log.csv"
cat "$d/log.csv" > "$d/got.csv" & reader=$!
if timeout 120 "$B/ntpu" train "${ARGS[@]}" --epochs 3 --save "$d/ck.st" --log "$d/log.csv" > /dev/null 2> "$d/err.log"; then
  fail "--log to a FIFO without a reader: exited 0"
fi
rc=$?
wait $reader || true
msg=$(grep -v '^epoch ' "$d/err.log" || true)
echo "FIFO reader gone: $msg"
[ "$rc" != 124 ] || fail "--log to a FIFO whose reader went away: the run hung"
echo "$msg" | grep -q 'no process has been reading the FIFO for 5 s' || fail "--log FIFO: the cause not named"
grep -q '^1,' "$d/got.csv" || fail "--log FIFO: the reader did not get the first epoch"
[ "$(state_step "$d/ck.st.state")" = 60 ] || fail "--log FIFO: the second epoch's checkpoint was not kept"

# --- a run that diverges stops at once, and neither saves nor loads a model that is not finite
d="$T/diverge"; mkdir "$d"
if "$B/ntpu" train "${ARGS[@]}" --optimizer sgd --lr 1e30 --save "$d/ck.st" --save-every 1 > /dev/null 2> "$d/err.log"; then
  fail "a diverging run exited 0"
fi
msg=$(grep -v '^epoch ' "$d/err.log" || true)
echo "diverged: $msg"
{ [ "$(echo "$msg" | grep -c .)" = 1 ] && echo "$msg" | grep -q 'diverged'; } || fail "diverging: not one line naming it"
whole "$d" || true
/usr/bin/python3 - "$d/ck.st" "$d/nan.st" << 'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
start = json.loads(b[8:8 + n])["0.weight"]["data_offsets"][0]
b[8 + n + start + 4 * 7:8 + n + start + 4 * 8] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(b)
PY
if "$B/ntpu" eval -d ref --model "$d/nan.st" --test-limit 50 > /dev/null 2> "$d/nan.err"; then
  fail "a checkpoint with a NaN weight loaded"
fi
grep -q 'tensor 0.weight holds a NaN or infinity (element 7)' "$d/nan.err" && [ "$(grep -c . "$d/nan.err")" = 1 ] ||
  fail "NaN weights: not one line naming the tensor: $(cat "$d/nan.err")"

[ "$failures" = 0 ] || exit 1
echo "PASS train_kill"
