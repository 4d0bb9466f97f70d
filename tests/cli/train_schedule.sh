#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ntpu train --schedule step without --step-size decays once an epoch (the same run as --step-size
# <steps per epoch>), not after every step, which would leave no learning rate after a few steps.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

run() { "$B/ntpu" train -d ref --layers 784,16,10 --train-limit 640 --test-limit 64 --epochs 3 --json "$@" 2> /dev/null; }
run --schedule step > "$T/default.json"
run --schedule step --step-size 10 > "$T/epoch.json" # 640 / 64 = 10 steps an epoch
run --schedule step --step-size 1 > "$T/every.json"
run > "$T/constant.json"
if python3 - "$T" <<'PY'
import json, sys
d = lambda n: json.load(open(f"{sys.argv[1]}/{n}.json"))
default, epoch, every, const = d("default"), d("epoch"), d("every"), d("constant")
metrics = lambda r: [(h["train_loss"], h["train_accuracy"], h["test_accuracy"]) for h in r["history"]]
assert len(metrics(default)) == 3 and metrics(default) == metrics(epoch), (metrics(default), metrics(epoch))
# The first epoch runs at the full rate, as with no schedule; decaying every step trains far less.
assert default["history"][0]["train_loss"] == const["history"][0]["train_loss"]
assert every["train_loss"] > default["train_loss"] + 0.1, (every["train_loss"], default["train_loss"])
PY
then
  echo "ok   --schedule step decays once an epoch by default"
else
  echo "FAIL --schedule step default"; failures=$((failures + 1))
fi

# A cosine run resumed with more --epochs: the rest of the schedule stretches over the longer run
# (it used to end at lr 0 with the first run, and the added epochs trained nothing).
cos() { run --optimizer sgd --lr 0.1 --schedule cosine "$@"; }
cos --epochs 1 --save "$T/c1.st" > /dev/null
run --epochs 3 --resume "$T/c1.st" --save "$T/c3.st" > "$T/longer.json" # the optimizer comes from c1.st
note=$("$B/ntpu" train -d ref --layers 784,16,10 --train-limit 640 --test-limit 64 --epochs 3 \
       --resume "$T/c1.st" --save "$T/c3b.st" 2>&1 > /dev/null | grep -c 'cosine schedule now ends with epoch 3')
if [ "$note" = 1 ] && python3 - "$T" <<'PY'
import json, sys
h = json.load(open(f"{sys.argv[1]}/longer.json"))["history"]
assert len(h) == 2, h  # epochs 2 and 3 of the resumed run
# with lr 0 both epochs gave the same loss and accuracy; with the stretched schedule they still learn
assert h[1]["train_loss"] < h[0]["train_loss"], h
PY
then
  echo "ok   --resume with more --epochs stretches a cosine schedule (and says so)"
else
  echo "FAIL cosine resume with more epochs (note lines: $note)"; failures=$((failures + 1))
fi

[ "$failures" = 0 ] && echo "PASS train_schedule" || { echo "FAIL train_schedule"; exit 1; }
