#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The same training run on the RTL (vsim, and vsim:rtl: the core from rtl/ alone, what synthesis reads),
# on the golden model (ref), and on the golden model behind a
# link that flips and drops bytes (the host retransmits, docs/protocol.md): bit-identical losses, test
# accuracies, weights and optimizer state.
set -eu
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ARGS=(--train-limit 320 --test-limit 128 --epochs 2 --batch 64 --seed 11 --optimizer momentum --lr 0.05)
declare -A DEVS=([ref]=ref [vsim]=vsim [rtl]=vsim:rtl [faulty]=ref:faults=0.0003,fault_seed=4,payload=516)
for dev in ref vsim rtl faulty; do
  "$B/ntpu" train -d "${DEVS[$dev]}" "${ARGS[@]}" --save "$T/$dev.st" --log "$T/$dev.csv" > "$T/$dev.log" 2>&1 \
    || { cat "$T/$dev.log"; exit 1; }
done
cut -d, -f1-5 "$T/ref.csv" > "$T/ref.metrics"   # epoch, steps, train loss and accuracy, test accuracy
cut -d, -f1-5 "$T/vsim.csv" > "$T/vsim.metrics"
cat "$T/vsim.metrics"
cmp "$T/ref.metrics" "$T/vsim.metrics" || { echo "losses or accuracies differ between ref and vsim"; exit 1; }
/usr/bin/python3 tests/cli/st_compare.py "$T/ref.st" "$T/vsim.st"
cut -d, -f1-5 "$T/rtl.csv" > "$T/rtl.metrics"
cmp "$T/ref.metrics" "$T/rtl.metrics" || { echo "losses or accuracies differ between ref and vsim:rtl"; exit 1; }
/usr/bin/python3 tests/cli/st_compare.py "$T/ref.st" "$T/rtl.st"
cut -d, -f1-5 "$T/faulty.csv" > "$T/faulty.metrics"
cmp "$T/ref.metrics" "$T/faulty.metrics" || { echo "losses or accuracies differ between ref and ref with link faults"; exit 1; }
/usr/bin/python3 tests/cli/st_compare.py "$T/ref.st" "$T/faulty.st"
grep -h "^epoch" "$T/vsim.log"
echo "PASS train_vsim_ref"
