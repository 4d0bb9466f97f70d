#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Killing `ntpu train` mid-run loses at most the steps since its last checkpoint and never leaves a broken
# one; --resume then ends with exactly the weights and optimizer state of an uninterrupted run. Both with
# SIGKILL (no chance to clean up) and with Ctrl-C (SIGINT: the run saves its last step and stops). A
# checkpoint is a pair, the model file FILE and its sidecar FILE.state (docs/training.md): both compared.
set -eu
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ARGS=(-d ref --train-limit 6400 --test-limit 500 --epochs 2 --batch 64 --seed 3)

"$B/ntpu" train "${ARGS[@]}" --save "$T/full.st" > "$T/full.log" 2>&1

killed_pid=
for sig in KILL INT; do
  ck="$T/ck_$sig.st"
  "$B/ntpu" train "${ARGS[@]}" --save "$ck" --save-every 7 > "$T/run_$sig.log" 2>&1 &
  pid=$!
  [ "$sig" = KILL ] && killed_pid=$pid
  # The signal as soon as the first checkpoint (step 7) is there: 200 steps take about half a second on
  # a fast machine, and a run that ends first leaves nothing to resume.
  for _ in $(seq 1 3000); do [ -e "$ck" ] && break; sleep 0.01; done
  kill -s $sig $pid 2>/dev/null || true
  if wait $pid; then echo "note: the $sig run finished before the signal arrived"; fi
  # whatever is on disk now must be a whole, loadable checkpoint
  "$B/ntpu" eval -d ref --model "$ck" --test-limit 100 > /dev/null
  step=$(/usr/bin/python3 -c "import json,struct,sys; b=open(sys.argv[1],'rb').read(); n=struct.unpack('<Q',b[:8])[0]; print(json.loads(b[8:8+n])['__metadata__']['step'])" "$ck.state")
  echo "after SIG$sig the checkpoint holds step $step of 200"
  "$B/ntpu" train -d ref --resume "$ck" --save "$ck" --epochs 2 --test-limit 500 > "$T/resume_$sig.log" 2>&1
  /usr/bin/python3 tests/cli/st_compare.py "$T/full.st" "$ck"
done
# No run leaves a temporary file behind (ntpu_outfile's "NAME.tmpPID.K", or ".ntpu-tmpPID.K" beside a
# long NAME), except the run killed by SIGKILL: cut off mid-save, nothing can remove its files (the
# model file's and the sidecar's, FILE.state.new); the next load finishes a save stopped between renames.
temps=$(ls -A "$T" | grep -E '\.(ntpu-)?tmp[0-9]+\.[0-9]+$|\.new$' || true)
stray=$(echo "$temps" | grep -vE "^(ck_KILL\.st(\.state\.new)?)?\.(ntpu-)?tmp$killed_pid\.[0-9]+$" | grep . || true)
kept=$(echo "$temps" | grep -E "^(ck_KILL\.st(\.state\.new)?)?\.(ntpu-)?tmp$killed_pid\.[0-9]+$" || true)
[ -n "$kept" ] && echo "note: SIGKILL cut a save short and left $kept"
if [ -n "$stray" ]; then
  echo "FAIL a temporary checkpoint file was left behind:" $stray
  ls -A "$T"
  exit 1
fi
echo "PASS train_resume"
