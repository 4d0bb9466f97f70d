#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What ntpu train prints when its output goes to a pipe or a file (make demo | tee, a CI log): the
# "training ..." header first, then the progress lines (stderr), each epoch's line after its progress.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

"$B/ntpu" train -d ref --layers 784,16,10 --train-limit 640 --test-limit 64 --epochs 2 > "$T/out" 2>&1
rc=$?
first=$(head -1 "$T/out")
progress=$(grep -c '^epoch 1/2: .* samples' "$T/out")
e1=$(grep -n '^epoch 1/2  train loss' "$T/out" | cut -d: -f1)
p2=$(grep -n '^epoch 2/2: ' "$T/out" | head -1 | cut -d: -f1)
if [ "$rc" = 0 ] && [[ $first == "training 784,16,10 on ref "* ]] && [ "$progress" -ge 5 ] &&
   [ -n "$e1" ] && [ -n "$p2" ] && [ "$e1" -lt "$p2" ]; then
  echo "ok   train into one pipe: header first, $progress progress lines, epoch 1 before epoch 2's progress"
else
  echo "FAIL train into one pipe: exit $rc, output:"; sed 's/^/     /' "$T/out"; failures=$((failures + 1))
fi

[ "$failures" = 0 ] && echo "PASS train_output" || { echo "FAIL train_output"; exit 1; }
