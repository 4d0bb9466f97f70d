#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ntpu train --arch SPEC and ntpu eval --arch: malformed SPECs, SPECs that do not fit the images or the
# classes, --arch with --layers, a checkpoint of another arch. Each must fail with exit status 1 and exactly
# one line on stderr, naming the reason. Then an MLP given as --arch trains on the dense path: its checkpoint
# is the one --layers writes, bit for bit, also after resuming.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0
SHORT=(--train-limit 64 --test-limit 64 --epochs 1)

# description, the text stderr's one line must hold, then the command
expect_error() {
  local what=$1 want=$2; shift 2
  "$@" > "$T/out" 2> "$T/err"
  local rc=$? lines
  lines=$(wc -l < "$T/err")
  if [ "$rc" = 1 ] && [ "$lines" = 1 ] && grep -q '^ntpu: ' "$T/err" && grep -qF -- "$want" "$T/err" && [ ! -s "$T/out" ]; then
    echo "ok   $what: $(cat "$T/err")"
  else
    echo "FAIL $what: exit $rc, $lines lines on stderr (want one holding '$want'):"; sed 's/^/     /' "$T/err"
    failures=$((failures + 1))
  fi
}

# Malformed SPECs: the item's number and text, and what is wrong with it.
while IFS='|' read -r spec want; do
  expect_error "--arch '$spec'" "$want" "$B/ntpu" train -d ref "${SHORT[@]}" --arch "$spec"
done <<'EOF'
conv16k|--arch: item 1 'conv16k': no kernel size after 'k'
relu,conv16,fc10|--arch: item 2 'conv16': no 'k' and kernel size after 'conv16'
conv|--arch: item 1 'conv': no channel count after 'conv'
conv8k3s,fc10|--arch: item 1 'conv8k3s': no stride after 's'
conv8k3p3,fc10|--arch: item 1 'conv8k3p3': padding 3 is not in 0..2
conv8k3p1s2,fc10|--arch: item 1 'conv8k3p1s2': unexpected 's2'
conv0k3,fc10|--arch: item 1 'conv0k3': channel count 0 is not in 1..65536
conv8k16,fc10|--arch: item 1 'conv8k16': kernel size 16 is not in 1..15
maxpool,fc10|--arch: item 1 'maxpool': no window size after 'maxpool'
fc|--arch: item 1 'fc': no output count after 'fc'
fc10x|--arch: item 1 'fc10x': unexpected 'x' after the output count
relu2,fc10|--arch: item 1 'relu2': not a layer
conv8k3,,fc10|--arch: item 2 '': empty
fc10,|--arch: item 2 '': empty
relu, fc10|--arch: item 2 ' fc10': not a layer
conv8k3,relu|--arch: the last item must be fc<N> (the logits), not 'relu'
fc32,relu,conv8k3,fc10|--arch: item 3 'conv8k3': after a flatten or fc only fc and relu can follow
flatten,maxpool2,fc10|--arch: item 2 'maxpool2': after a flatten or fc only fc and relu can follow
EOF
expect_error "--arch empty" "--arch: the SPEC is empty" "$B/ntpu" train -d ref "${SHORT[@]}" --arch=
expect_error "--arch with a newline" "--arch: item 1 'fc1?0': unexpected '?0'" \
  "$B/ntpu" train -d ref "${SHORT[@]}" --arch "$(printf 'fc1\n0')"

# SPECs that do not fit Fashion-MNIST's 1x28x28 images and 10 classes.
expect_error "a kernel larger than its input" "--arch: item 2 'conv8k15': its input is 14x14, smaller than the 15x15 kernel" \
  "$B/ntpu" train -d ref "${SHORT[@]}" --arch conv8k15,conv8k15,fc10
expect_error "a kernel larger than its padded input" \
  "--arch: item 3 'conv8k9p2': its input is 4x4 (8x8 padded), smaller than the 9x9 kernel" \
  "$B/ntpu" train -d ref "${SHORT[@]}" --arch conv8k15,conv8k5s3,conv8k9p2,fc10
expect_error "a pool on a 1x1 input" "--arch: item 3 'maxpool2': its input is 1x1, smaller than the 2x2 window" \
  "$B/ntpu" train -d ref "${SHORT[@]}" --arch maxpool7,avgpool4,maxpool2,fc10
expect_error "a last fc smaller than the classes" \
  "--arch: the last fc has 5 outputs but the training labels in /usr/share/datasets/fashion-mnist need 10 classes" \
  "$B/ntpu" train -d ref "${SHORT[@]}" --arch conv4k3,relu,maxpool2,fc5
expect_error "--arch with --layers" "--arch and --layers both describe the model: give one" \
  "$B/ntpu" train -d ref "${SHORT[@]}" --arch fc16,relu,fc10 --layers 784,16,10
expect_error "eval --arch malformed" "--arch: item 1 'conv8': no 'k' and kernel size after 'conv8'" \
  "$B/ntpu" eval -d ref --model "$T/none.st" --test-limit 8 --arch conv8,fc10

# An MLP as --arch: the dense path, the checkpoint --layers writes bit for bit (same seed and data).
RUN=(--train-limit 256 --test-limit 64 --batch 32 --seed 5)
"$B/ntpu" train -d ref "${RUN[@]}" --epochs 1 --arch fc16,relu,fc10 --save "$T/arch.st" > "$T/arch.out" 2> /dev/null &&
  "$B/ntpu" train -d ref "${RUN[@]}" --epochs 1 --layers 784,16,10 --save "$T/layers.st" > /dev/null 2>&1 ||
  { echo "FAIL the MLP runs: $(cat "$T/arch.out")"; exit 1; }
if cmp -s "$T/arch.st" "$T/layers.st" && cmp -s "$T/arch.st.state" "$T/layers.st.state" && grep -q '^training fc16,relu,fc10 on ref ' "$T/arch.out"; then
  echo "ok   --arch fc16,relu,fc10 and --layers 784,16,10 write the same checkpoint"
else
  echo "FAIL --arch fc16,relu,fc10 and --layers 784,16,10 differ:"; head -2 "$T/arch.out"; failures=$((failures + 1))
fi
cp "$T/arch.st" "$T/arch2.st"; cp "$T/arch.st.state" "$T/arch2.st.state" # a checkpoint is a pair (docs/training.md)
cp "$T/layers.st" "$T/layers2.st"; cp "$T/layers.st.state" "$T/layers2.st.state"
"$B/ntpu" --json train -d ref "${RUN[@]}" --epochs 2 --arch fc16,relu,fc10 --resume "$T/arch2.st" --save "$T/arch2.st" \
  > "$T/arch.json" 2> /dev/null
"$B/ntpu" train -d ref "${RUN[@]}" --epochs 2 --resume "$T/layers2.st" --save "$T/layers2.st" > /dev/null 2>&1
if cmp -s "$T/arch2.st" "$T/layers2.st" && cmp -s "$T/arch2.st.state" "$T/layers2.st.state" && ! cmp -s "$T/arch2.st" "$T/arch.st" &&
   python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["arch"] == "fc16,relu,fc10" and j["layers"] == [784, 16, 10] and j["steps"] == 16, j' "$T/arch.json"; then
  echo "ok   resumed with --arch: the same checkpoint as resumed --layers; JSON arch and layers"
else
  echo "FAIL resuming with --arch: $(cat "$T/arch.json")"; failures=$((failures + 1))
fi
"$B/ntpu" --json train -d ref "${RUN[@]}" --epochs 1 --arch flatten,fc16,relu,fc10 > "$T/flat.json" 2> /dev/null
python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["arch"] == "flatten,fc16,relu,fc10" and j["layers"] == [784, 16, 10], j' \
  "$T/flat.json" && echo "ok   a written flatten is kept in the arch" || { echo "FAIL flatten,fc16,relu,fc10: $(cat "$T/flat.json")"; failures=$((failures + 1)); }

# A checkpoint of another arch: one line, nothing trained.
expect_error "--resume with another --arch" "--resume: $T/arch.st holds a model of arch fc16,relu,fc10, not fc32,relu,fc10" \
  "$B/ntpu" train -d ref "${RUN[@]}" --epochs 2 --resume "$T/arch.st" --arch fc32,relu,fc10
expect_error "--resume with a conv --arch" "--resume: $T/arch.st holds a model of arch fc16,relu,fc10, not conv4k3,fc10" \
  "$B/ntpu" train -d ref "${RUN[@]}" --epochs 2 --resume "$T/arch.st" --arch conv4k3,fc10
expect_error "--resume with a bad --arch" "--arch: item 1 'fc16x'" \
  "$B/ntpu" train -d ref "${RUN[@]}" --epochs 2 --resume "$T/arch.st" --arch fc16x,relu,fc10
expect_error "eval --arch of another MLP" "fc32,relu,fc10" \
  "$B/ntpu" eval -d ref --model "$T/arch.st" --test-limit 8 --arch fc32,relu,fc10
"$B/ntpu" eval -d ref --model "$T/arch.st" --test-limit 64 --arch fc16,relu,fc10 > "$T/eval.out" 2>&1 &&
  grep -q '^bf16  test accuracy' "$T/eval.out" && echo "ok   eval --arch of the checkpoint's own arch" ||
  { echo "FAIL eval --arch fc16,relu,fc10: $(cat "$T/eval.out")"; failures=$((failures + 1)); }

[ "$failures" = 0 ] && echo "PASS train_arch_errors" || { echo "FAIL train_arch_errors: $failures cases"; exit 1; }
