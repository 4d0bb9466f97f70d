#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ntpu tune (docs/training.md, Tuning): the same command twice writes the same journal and finds the same
# best trial; two devices of other kinds (ref and vsim), in one process or on two mpirun ranks, give the
# journal of two ref devices; a study killed
# mid-way (SIGKILL) and run again ends with exactly the journal and result of one that was not, training
# only what was missing; ASHA trains fewer epochs than random search over the same trials; bad input is one
# line, exit 1, and leaves a journal as it was.
set -eu
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
BASE=(--trials 8 --epochs 4 --train-limit 1200 --val 300 --test-limit 300 --seed 3
      --space "lr=log:1e-3:3e-2 batch=32,64 hidden=16,24 optimizer=adam,momentum")
STUDY=("${BASE[@]}" --min-epochs 1 --eta 2)

run() { # run NAME ARGS...: the study with journal NAME.j, its table in NAME.out
  local name=$1; shift
  "$B/ntpu" tune "${STUDY[@]}" --journal "$name.j" "$@" > "$name.out" 2> "$name.err" ||
    { cat "$name.err"; echo "FAIL $name"; exit 1; }
}
B=$(cd "$OLDPWD" && cd "$B" && pwd)

run a -d ref --csv a.csv --plot a.svg
run b -d ref
cmp a.j b.j || { echo "FAIL the same command wrote two journals"; exit 1; }
[ "$(grep '^best' a.out | sed 's/(model.*//')" = "$(grep '^best' b.out | sed 's/(model.*//')" ] ||
  { echo "FAIL two bests"; exit 1; }
echo "the same study twice: identical journals ($(wc -l < a.j) lines); $(grep '^best' a.out | cut -c1-80)..."
[ "$(wc -l < a.csv)" = 9 ] && grep -q '^trial,lr,batch,optimizer' a.csv && grep -q '<polyline' a.svg ||
  { echo "FAIL the CSV or the plot"; exit 1; }

run two_ref -d ref -d ref
run mixed -d vsim -d ref
cmp two_ref.j mixed.j || { echo "FAIL vsim and ref as workers gave another journal than two ref"; exit 1; }
echo "workers ref + vsim: the journal of ref + ref"

# Across mpirun's ranks: rank 0 with ref, rank 1 with vsim, the journal of one process with two devices
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI runs as root
mpirun --oversubscribe -n 1 "$B/ntpu" tune "${STUDY[@]}" -d ref --journal mpi.j : \
  -n 1 "$B/ntpu" tune "${STUDY[@]}" -d vsim --journal mpi.j > mpi.out 2>&1 || { cat mpi.out; echo "FAIL mpirun"; exit 1; }
cmp two_ref.j mpi.j || { echo "FAIL 2 ranks wrote another journal than 1 process with 2 devices"; exit 1; }
echo "2 ranks (ref, vsim): the journal of one process on ref + ref"

# SIGKILL once the journal holds 5 jobs, then the same command again
"$B/ntpu" tune "${STUDY[@]}" -d ref --journal k.j > k1.out 2>&1 &
pid=$!
for _ in $(seq 1 3000); do [ -e k.j ] && [ "$(wc -l < k.j)" -ge 6 ] && break; sleep 0.01; done
kill -9 $pid 2> /dev/null || true
wait $pid 2> /dev/null || true
kept=$(($(wc -l < k.j) - 1))
[ "$kept" -lt "$(($(wc -l < a.j) - 1))" ] || { echo "FAIL the study ended before the kill"; exit 1; }
run k -d ref
cmp a.j k.j || { echo "FAIL the resumed study's journal differs"; exit 1; }
[ "$(grep '^best' a.out | sed 's/(model.*//')" = "$(grep '^best' k.out | sed 's/(model.*//')" ] ||
  { echo "FAIL the resumed study found another best"; exit 1; }
grep -q "the rest from k.j" k.out || { cat k.out; echo "FAIL"; exit 1; }
echo "killed after $kept jobs, run again: the same journal and best; $(grep '^epochs trained' k.out)"

"$B/ntpu" tune "${BASE[@]}" --journal r.j -d ref --method random > r.out 2>&1 || { cat r.out; echo "FAIL random"; exit 1; }
asha=$(sed -n 's/^epochs trained: \([0-9]*\).*/\1/p' a.out)
rand=$(sed -n 's/^epochs trained: \([0-9]*\).*/\1/p' r.out)
[ "$rand" = 32 ] && [ "$asha" -lt "$rand" ] || { echo "FAIL ASHA $asha epochs, random $rand"; exit 1; }
echo "ASHA trained $asha epochs, random search $rand"

err() { # err WHAT ARGS...: refused in one line
  local what=$1; shift
  if "$B/ntpu" tune "$@" > err.out 2> err.txt; then echo "FAIL $what: accepted"; exit 1; fi
  [ "$(wc -l < err.txt)" = 1 ] || { cat err.txt; echo "FAIL $what: not one line"; exit 1; }
  echo "$what: $(cat err.txt)"
}
cp a.j before.j
err "another study's journal" "${STUDY[@]}" --seed 4 -d ref --journal a.j
cmp a.j before.j || { echo "FAIL a refused study changed the journal"; exit 1; }
err "an unknown key" -d ref --space "learning_rate=0.1" --journal no.j
err "a reversed range" -d ref --space "lr=log:1e-1:1e-3" --journal no.j
err "a batch of 0" -d ref --space "batch=0,64" --journal no.j
err "a range for a list key" -d ref --space "optimizer=log:1:2" --journal no.j
err "a missing space file" -d ref --space-file nosuch.txt --journal no.j
err "min above max" -d ref --min-epochs 5 --epochs 4 --journal no.j
err "no training images left" -d ref --train-limit 100 --val 100 --journal no.j
err "eta for random" -d ref --method random --eta 3 --journal no.j
[ ! -e no.j ] || { echo "FAIL a refused study wrote a journal"; exit 1; }
echo "PASS tune"
