#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checkpoints of another architecture (docs/training.md, Checkpoints): `ntpu eval --arch` and `ntpu train
# --resume` refuse them with one line naming what differs (exit 1); a PyTorch state_dict without metadata
# needs --arch; a sidecar FILE.state of other weights is refused; a checkpoint of the earlier single-file
# format (ntpu-mlp-1) still gives the same logits.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

expect_error() { # description, text the error must contain, then the command
  local what=$1 want=$2; shift 2
  "$@" > "$T/out" 2> "$T/err"
  local rc=$? lines
  lines=$(wc -l < "$T/err")
  if [ "$rc" = 1 ] && [ "$lines" = 1 ] && grep -q '^ntpu: ' "$T/err" && grep -qF -- "$want" "$T/err"; then
    echo "ok   $what: $(cat "$T/err")"
  else
    echo "FAIL $what (want '$want'): exit $rc, $lines lines on stderr:"; sed 's/^/     /' "$T/err"
    failures=$((failures + 1))
  fi
}

RUN=(-d ref --train-limit 256 --test-limit 64 --epochs 1 --optimizer adam)
"$B/ntpu" train "${RUN[@]}" --layers 784,16,10 --save "$T/a.st" > /dev/null 2>&1 || { echo "FAIL training"; exit 1; }
"$B/ntpu" train "${RUN[@]}" --layers 784,16,10 --seed 9 --save "$T/b.st" > /dev/null 2>&1 || { echo "FAIL training"; exit 1; }
"$B/ntpu" eval -d ref --model "$T/a.st" --test-limit 64 --logits "$T/a.npy" > /dev/null || { echo "FAIL eval"; exit 1; }

expect_error "eval --arch of another width" "holds a model of arch fc16,relu,fc10 (input 1x28x28), not fc32,relu,fc10 (input 1x28x28)" \
  "$B/ntpu" eval -d ref --model "$T/a.st" --arch fc32,relu,fc10 --test-limit 64
expect_error "eval --arch of another depth" "not fc16,relu,fc16,relu,fc10 (input 1x28x28)" \
  "$B/ntpu" eval -d ref --model "$T/a.st" --arch fc16,relu,fc16,relu,fc10 --test-limit 64
# --layers 784,16,10 and --arch fc16,relu,fc10 on 28 x 28 images are one model (inputs flattened first).
"$B/ntpu" eval -d ref --model "$T/a.st" --arch fc16,relu,fc10 --test-limit 64 --logits "$T/same.npy" > /dev/null &&
  cmp -s "$T/a.npy" "$T/same.npy" && echo "ok   --arch of the same MLP: the same logits" ||
  { echo "FAIL --arch of the same MLP"; failures=$((failures + 1)); }
expect_error "eval --arch malformed" "--arch:" "$B/ntpu" eval -d ref --model "$T/a.st" --arch fc16,,fc10 --test-limit 64
expect_error "resume with other --layers" "other --layers" \
  "$B/ntpu" train -d ref --resume "$T/a.st" --layers 784,32,10 --epochs 2 --test-limit 64

# The model file without its metadata, as PyTorch's save_file writes it; one tensor reshaped; one added.
python3 - "$T" <<'PY'
import json, struct, sys
t = sys.argv[1]
b = open(f"{t}/a.st", "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); data = b[8 + n:]
def put(name, header, extra=b""):
    j = json.dumps(header).encode(); j += b" " * (-len(j) % 8)
    open(f"{t}/{name}", "wb").write(struct.pack("<Q", len(j)) + j + data + extra)
h.pop("__metadata__"); put("torch.st", h)
r = json.loads(json.dumps(h)); r["2.weight"]["shape"] = [20, 8]; put("reshaped.st", r)
x = json.loads(json.dumps(h)); x["3.weight"] = {"dtype": "F32", "shape": [1], "data_offsets": [len(data), len(data) + 4]}
put("extra.st", x, b"\0\0\0\0")
PY
expect_error "eval of a state_dict without --arch" "names no architecture" \
  "$B/ntpu" eval -d ref --model "$T/torch.st" --test-limit 64
expect_error "eval --arch with a tensor of another shape" "tensor 2.weight has shape [20, 8], the arch needs [10, 16]" \
  "$B/ntpu" eval -d ref --model "$T/reshaped.st" --arch fc16,relu,fc10 --test-limit 64
expect_error "eval --arch of a narrower model" "tensor 0.weight has shape [16, 784], the arch needs [8, 784]" \
  "$B/ntpu" eval -d ref --model "$T/torch.st" --arch fc8,relu,fc10 --test-limit 64
expect_error "eval --arch of a deeper model" "holds no tensor 4.weight" \
  "$B/ntpu" eval -d ref --model "$T/torch.st" --arch fc16,relu,fc10,relu,fc10 --test-limit 64
expect_error "eval --arch with an extra tensor" "extra tensor 3.weight" \
  "$B/ntpu" eval -d ref --model "$T/extra.st" --arch fc16,relu,fc10 --test-limit 64
"$B/ntpu" eval -d ref --model "$T/torch.st" --arch fc16,relu,fc10 --test-limit 64 --logits "$T/torch.npy" > /dev/null &&
  cmp -s "$T/a.npy" "$T/torch.npy" && echo "ok   a state_dict with --arch: the checkpoint's logits" ||
  { echo "FAIL a state_dict with --arch: other logits"; failures=$((failures + 1)); }

# A sidecar of other weights (b's beside a's model file)
cp "$T/a.st" "$T/mix.st"; cp "$T/b.st.state" "$T/mix.st.state"
expect_error "eval with a sidecar of other weights" "does not belong to" \
  "$B/ntpu" eval -d ref --model "$T/mix.st" --test-limit 64
expect_error "resume with a sidecar of other weights" "does not belong to" \
  "$B/ntpu" train -d ref --resume "$T/mix.st" --epochs 2 --test-limit 64

# The earlier single-file format: fc<l>. names, the state and metadata in the file.
python3 - "$T" <<'PY'
import json, struct, sys
t = sys.argv[1]
def read(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
    return h.pop("__metadata__"), {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in h.items()}, h
mm, md, mh = read(f"{t}/a.st"); sm, sd, sh = read(f"{t}/a.st.state")
meta = {k: v for k, v in sm.items() if k not in ("format", "arch", "input", "model_crc32")}
meta.update(format="ntpu-mlp-1", sizes="784,16,10")
header, blobs, at = {"__metadata__": meta}, [], 0
for name, h, d in [(k, mh[k], md[k]) for k in mh] + [(k, sh[k], sd[k]) for k in sh]:
    i, rest = name.split(".", 1)
    new = f"fc{int(i) // 2}.{rest}"
    header[new] = {"dtype": "F32", "shape": h["shape"], "data_offsets": [at, at + len(d)]}; blobs.append(d); at += len(d)
j = json.dumps(header).encode(); j += b" " * (-len(j) % 8)
open(f"{t}/legacy.st", "wb").write(struct.pack("<Q", len(j)) + j + b"".join(blobs))
PY
"$B/ntpu" eval -d ref --model "$T/legacy.st" --test-limit 64 --logits "$T/legacy.npy" > /dev/null &&
  cmp -s "$T/a.npy" "$T/legacy.npy" && echo "ok   an ntpu-mlp-1 checkpoint: the same logits" ||
  { echo "FAIL an ntpu-mlp-1 checkpoint"; failures=$((failures + 1)); }
"$B/ntpu" train -d ref --resume "$T/legacy.st" --epochs 2 --test-limit 64 --save "$T/legacy2.st" > /dev/null 2>&1 &&
  "$B/ntpu" train -d ref --resume "$T/a.st" --epochs 2 --test-limit 64 --save "$T/a2.st" > /dev/null 2>&1 &&
  python3 tests/cli/st_compare.py "$T/a2.st" "$T/legacy2.st" > /dev/null &&
  echo "ok   --resume of an ntpu-mlp-1 checkpoint: the same run" ||
  { echo "FAIL --resume of an ntpu-mlp-1 checkpoint"; failures=$((failures + 1)); }

[ "$failures" = 0 ] && echo "PASS checkpoint_arch" || { echo "FAIL checkpoint_arch: $failures cases"; exit 1; }
