#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Training a model too big for the iCEBreaker's memories: `ntpu train` streams it (and says so once), on the
# bit-level board simulation (vsim:board=icebreaker) and on the golden model with the board's configuration,
# with exactly the losses, accuracies and checkpoint of the resident path on a device that holds the model.
# A streamed run resumed from its checkpoint ends where an uninterrupted one does. The board run is kept
# tiny (2 steps of 784-8-10, about 6 s): the simulated UART is slow.
set -eu
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
BOARD=ref:n=2,ub=1024,wb=16384,acc=512,payload=516,novec=1,notra=1 # fpga/boards/icebreaker/board.mk
ARGS=(--layers 784,8,10 --batch 8 --train-limit 16 --test-limit 16 --epochs 1 --seed 2 --optimizer adam --lr 0.01)
declare -A DEVS=([vsim_board]=vsim:board=icebreaker [ref_board]=$BOARD [ref]=ref)
for run in vsim_board ref_board ref; do
  "$B/ntpu" train -d "${DEVS[$run]}" "${ARGS[@]}" --save "$T/$run.st" --log "$T/$run.csv" > "$T/$run.out" \
    2> "$T/$run.err" || { cat "$T/$run.out" "$T/$run.err"; exit 1; }
  cut -d, -f1-5 "$T/$run.csv" > "$T/$run.metrics" # epoch, steps, train loss and accuracy, test accuracy
  n=$(grep -c "does not fit the device's memories" "$T/$run.err" || true)
  want=1; [ "$run" = ref ] && want=0
  [ "$n" = "$want" ] || { echo "$run: expected $want notes about streaming, got $n:"; cat "$T/$run.err"; exit 1; }
done
grep "does not fit" "$T/vsim_board.err"
cat "$T/vsim_board.metrics"
for run in ref_board ref; do
  cmp "$T/vsim_board.metrics" "$T/$run.metrics" || { echo "losses or accuracies differ: vsim_board vs $run"; exit 1; }
  /usr/bin/python3 tests/cli/st_compare.py "$T/vsim_board.st" "$T/$run.st"
done

# --resume of a streamed model: 2 epochs straight vs 1 + 1 on the board's configuration.
LONG=(-d "$BOARD" --layers 784,8,10 --batch 8 --train-limit 40 --test-limit 16 --seed 4 --optimizer momentum --lr 0.05)
"$B/ntpu" train "${LONG[@]}" --epochs 2 --save "$T/full.st" > /dev/null 2>&1
"$B/ntpu" train "${LONG[@]}" --epochs 1 --save "$T/half.st" > /dev/null 2>&1
"$B/ntpu" train -d "$BOARD" --resume "$T/half.st" --epochs 2 --test-limit 16 --save "$T/half.st" > /dev/null 2>&1
/usr/bin/python3 tests/cli/st_compare.py "$T/full.st" "$T/half.st"
echo "PASS train_stream_board"
