#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Data-parallel training across mpirun's ranks on localhost (docs/training.md, Data parallel; decision
# 0039): 2 and 3 ranks, each with its own -d list, write byte for byte the checkpoint one process writes
# on one device (MLP and conv net); a rank killed mid-run ends the other within 10 s with one line naming
# it, the last checkpoint is whole, and --resume in one process ends where an uninterrupted run does; a
# rank that cannot open its device stops the run with its reason.
set -eu
B=${BUILD:-build}
command -v mpirun > /dev/null || { echo "FAIL mpirun is missing (make deps installs openmpi-bin)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI runs as root
MPIRUN=(mpirun --oversubscribe -n)

MLP=(--layers 784,256,10 --batch 64 --train-limit 1000 --test-limit 200 --seed 5 --epochs 1 --shard 16)
CNN=(--arch conv4k3p1,relu,maxpool2,fc10 --batch 64 --train-limit 300 --test-limit 64 --seed 2 --epochs 1 --shard 16)

same() {
  cmp "$1" "$2" && cmp "$1.state" "$2.state" || { echo "FAIL $1 and $2 differ"; exit 1; }
}

for model in MLP CNN; do
  if [ $model = MLP ]; then args=("${MLP[@]}"); else args=("${CNN[@]}"); fi
  "$B/ntpu" train "${args[@]}" -d ref --save "$T/$model.1.st" > /dev/null 2>&1
  "${MPIRUN[@]}" 2 "$B/ntpu" train "${args[@]}" -d ref --save "$T/$model.2.st" > "$T/$model.2.log" 2>&1 ||
    { cat "$T/$model.2.log"; echo "FAIL $model on 2 ranks"; exit 1; }
  # 3 ranks, one of them with two devices (vsim and ref): 4 workers in all
  "${MPIRUN[@]}" 1 "$B/ntpu" train "${args[@]}" -d ref --save "$T/$model.3.st" : \
    -n 1 "$B/ntpu" train "${args[@]}" -d vsim -d ref --save "$T/$model.3.st" : \
    -n 1 "$B/ntpu" train "${args[@]}" -d ref --save "$T/$model.3.st" > "$T/$model.3.log" 2>&1 ||
    { cat "$T/$model.3.log"; echo "FAIL $model on 3 ranks"; exit 1; }
  same "$T/$model.1.st" "$T/$model.2.st"
  same "$T/$model.1.st" "$T/$model.3.st"
  grep -q "on 4 devices of all ranks" "$T/$model.3.log" || { cat "$T/$model.3.log"; echo "FAIL the first line"; exit 1; }
  echo "$model: 1 process, 2 ranks and 3 ranks (4 devices): identical checkpoints"
done

# A rank killed mid-run (SIGKILL, rank 1)
LONG=(--layers 784,256,10 --batch 64 --train-limit 6400 --test-limit 200 --seed 7 --epochs 2 --shard 16)
"$B/ntpu" train "${LONG[@]}" -d ref --save "$T/full.st" > /dev/null 2>&1
"${MPIRUN[@]}" 2 "$B/ntpu" train "${LONG[@]}" -d ref --save "$T/k.st" --save-every 5 > "$T/k.out" 2> "$T/k.err" &
job=$!
for _ in $(seq 1 1500); do [ -e "$T/k.st" ] && break; sleep 0.02; done
rank1=
for p in $(pgrep -f "ntpu train .*$T/k.st" || true); do
  tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && rank1=$p
done
[ -n "$rank1" ] || { wait $job || true; cat "$T/k.err"; echo "FAIL rank 1 not found (did the run end first?)"; exit 1; }
t0=$(date +%s%N)
kill -9 "$rank1"
if wait $job; then echo "FAIL mpirun exited 0 after a rank was killed"; exit 1; fi
ms=$((($(date +%s%N) - t0) / 1000000))
lost=$(grep -c "^ntpu: rank 0: rank 1 (pid $rank1) was lost" "$T/k.err" || true)
[ "$lost" = 1 ] || { cat "$T/k.err"; echo "FAIL rank 0 did not name the lost rank in one line"; exit 1; }
[ "$ms" -lt 10000 ] || { echo "FAIL the run took $ms ms to end after the kill"; exit 1; }
echo "rank 1 killed: rank 0 stopped after $ms ms: $(grep '^ntpu: rank 0' "$T/k.err")"
"$B/ntpu" eval -d ref --model "$T/k.st" --test-limit 100 > /dev/null
"$B/ntpu" train -d ref --resume "$T/k.st" --save "$T/k.st" --epochs 2 --test-limit 200 > "$T/resume.log" 2>&1 ||
  { cat "$T/resume.log"; echo "FAIL resume"; exit 1; }
cmp "$T/full.st" "$T/k.st" && /usr/bin/python3 tests/cli/st_compare.py "$T/full.st" "$T/k.st" > /dev/null ||
  { echo "FAIL the resumed run differs from the uninterrupted one"; exit 1; }
echo "resumed in one process: the uninterrupted run's checkpoint"

# A rank that cannot open its device: its reason, and no hang
if "${MPIRUN[@]}" 1 "$B/ntpu" train "${MLP[@]}" -d ref : -n 1 "$B/ntpu" train "${MLP[@]}" -d nosuch \
  > "$T/bad.out" 2> "$T/bad.err"; then
  echo "FAIL a rank without its device ran"
  exit 1
fi
grep -q "^ntpu: rank 1: cannot open device 'nosuch'" "$T/bad.err" || { cat "$T/bad.err"; echo "FAIL no reason"; exit 1; }
echo "a rank without its device: $(grep '^ntpu: rank 1' "$T/bad.err")"
echo "PASS train_mpi"
