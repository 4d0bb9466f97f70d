#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Data-parallel training (docs/training.md, Data parallel): the same data, seed, batch and shard size give
# byte-identical checkpoints (model file and sidecar) on 1, 2 and 4 devices of any mix, for the MLP and a
# conv net, also across the epoch's shorter last batch, with a streamed board among them and when a run is
# resumed on another number of devices; the shard size itself does change the bits (so the comparison can
# fail); and the misuses are one-line errors. (vsim:rtl, the synthesised RTL, would take 30 s a run here; it
# is vsim's twin, bit for bit, in train_net_backends.sh.)
set -eu
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
BOARD=ref:n=2,ub=1024,wb=16384,acc=512,payload=516,novec=1,notra=1 # the iCEBreaker's configuration: streamed

# 1000 samples: 15 batches of 64 and one of 40 (shards 16, 16, 8)
MLP=(--layers 784,256,10 --batch 64 --train-limit 1000 --test-limit 200 --seed 5 --epochs 1)
CNN=(--arch conv4k3p1,relu,maxpool2,conv8k3p1,relu,avgpool2,fc10 --batch 64 --train-limit 300 --test-limit 64
     --seed 2 --epochs 1)

same() { # same A B: the checkpoint pairs are byte for byte the same
  cmp "$1" "$2" && cmp "$1.state" "$2.state" || { echo "FAIL $1 and $2 differ"; exit 1; }
}

run() { # run NAME ARGS...: trains, saving $T/NAME.st
  local name=$1; shift
  "$B/ntpu" train "$@" --save "$T/$name.st" > "$T/$name.log" 2>&1 || { cat "$T/$name.log"; echo "FAIL $name"; exit 1; }
}

for model in MLP CNN; do
  if [ $model = MLP ]; then args=("${MLP[@]}"); else args=("${CNN[@]}"); fi
  run ${model}_1 "${args[@]}" --shard 16 -d ref
  run ${model}_2 "${args[@]}" --shard 16 -d vsim -d ref
  run ${model}_4 "${args[@]}" --shard 16 -d ref -d vsim -d $BOARD -d ref
  same "$T/${model}_1.st" "$T/${model}_2.st"
  same "$T/${model}_1.st" "$T/${model}_4.st"
  # the losses, and the test accuracy that the 4 devices evaluate in parts
  metrics() { grep -o 'train loss .* test accuracy [0-9.]*' "$T/$1.log"; }
  [ "$(metrics ${model}_1)" = "$(metrics ${model}_4)" ] || { echo "FAIL $model: other metrics on 4 devices"; exit 1; }
  echo "$model: shards of 16 on 1, 2 and 4 devices: identical checkpoints, $(metrics ${model}_4)"
  # shards of 32 sum in another order: other bits (the comparison above can fail)
  run ${model}_s32 "${args[@]}" --shard 32 -d ref -d ref
  if cmp -s "$T/${model}_1.st" "$T/${model}_s32.st"; then echo "FAIL $model: --shard 32 gave --shard 16's bits"; exit 1; fi
done

# One shard of the whole batch is a plain step, also with more devices than shards
run plain "${MLP[@]}" -d ref
run whole "${MLP[@]}" -d ref -d vsim --shard 64
same "$T/plain.st" "$T/whole.st"
echo "shards of the whole batch on 2 devices: the plain run's checkpoint"

# The simulated iCEBreaker whole (its UART is slow: two steps of a small model, about 6 s) beside ref
SMALL=(--layers 784,8,10 --batch 8 --train-limit 16 --test-limit 16 --seed 2 --epochs 1 --shard 4)
run board "${SMALL[@]}" -d vsim:board=icebreaker -d ref
run board_ref "${SMALL[@]}" -d ref
same "$T/board.st" "$T/board_ref.st"
echo "the simulated iCEBreaker beside ref: identical"

# Two epochs on 4 devices against one epoch on 2 resumed on 1 (the shard size comes from the checkpoint)
run two "${MLP[@]}" --epochs 2 --shard 16 -d ref -d ref -d ref -d ref
run half "${MLP[@]}" --shard 16 -d ref -d vsim
"$B/ntpu" train -d ref --resume "$T/half.st" --epochs 2 --test-limit 200 --save "$T/half.st" > "$T/resume.log" 2>&1 ||
  { cat "$T/resume.log"; echo "FAIL resume"; exit 1; }
# the tensors, bit for bit; the metadata differs in the schedule's length (the resumed run was made for 1 epoch)
cmp "$T/two.st" "$T/half.st" && /usr/bin/python3 tests/cli/st_compare.py "$T/two.st" "$T/half.st" > /dev/null ||
  { echo "FAIL the resumed run differs"; exit 1; }
echo "resumed on 1 device after 2: the 4-device run's checkpoint"

# Misuse: one line each, exit status 1, nothing written
err() { # err WHAT ARGS...
  local what=$1; shift
  if "$B/ntpu" "$@" > "$T/err.out" 2> "$T/err.txt"; then echo "FAIL $what: accepted"; exit 1; fi
  [ "$(wc -l < "$T/err.txt")" = 1 ] || { cat "$T/err.txt"; echo "FAIL $what: not one line"; exit 1; }
  echo "$what: $(cat "$T/err.txt")"
}
err "shard over the batch" train "${MLP[@]}" -d ref --shard 65 --save "$T/no.st"
err "shard of 0" train "${MLP[@]}" -d ref --shard 0 --save "$T/no.st"
err "another shard on resume" train -d ref --resume "$T/half.st" --epochs 3 --shard 32
err "device optimizer on 2 devices" train "${MLP[@]}" -d ref -d vsim --device-optimizer --save "$T/no.st"
err "an unknown device in the list" train "${MLP[@]}" -d ref -d nosuch --save "$T/no.st"
err "--threads and no ref" train "${MLP[@]}" -d vsim -d vsim:rtl --threads 2
err "two devices for info" info -d ref -d vsim
[ ! -e "$T/no.st" ] || { echo "FAIL a refused run wrote a checkpoint"; exit 1; }
echo "PASS train_parallel"
