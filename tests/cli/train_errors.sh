#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bad input to ntpu train / eval: malformed IDX files, --layers that do not fit the data, truncated or
# foreign checkpoints, bad flags. Each must fail with exit status 1 and exactly one line on stderr.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
D=/usr/share/datasets/fashion-mnist
failures=0

expect_error() { # description, then the command
  local what=$1; shift
  "$@" > "$T/out" 2> "$T/err"
  local rc=$? lines
  lines=$(wc -l < "$T/err")
  if [ "$rc" = 1 ] && [ "$lines" = 1 ] && grep -q '^ntpu: ' "$T/err"; then
    echo "ok   $what: $(cat "$T/err")"
  else
    echo "FAIL $what: exit $rc, $lines lines on stderr:"; sed 's/^/     /' "$T/err"; failures=$((failures + 1))
  fi
}

# IDX directories with one broken file each (the other files are the real ones)
mkidx() { mkdir -p "$T/$1"; cp "$D"/t10k-* "$D"/train-labels-idx1-ubyte.gz "$T/$1/"; }
mkidx badmagic; printf '\x12\x34\x08\x03\x00\x00\x00\x01\x00\x00\x00\x1c\x00\x00\x00\x1c' > "$T/badmagic/train-images-idx3-ubyte"
mkidx badtype; printf '\x00\x00\x0d\x03\x00\x00\x00\x01\x00\x00\x00\x1c\x00\x00\x00\x1c' > "$T/badtype/train-images-idx3-ubyte"
mkidx truncated; zcat "$D/train-images-idx3-ubyte.gz" | head -c 100000 > "$T/truncated/train-images-idx3-ubyte"
mkidx badgzip; head -c 50000 "$D/train-images-idx3-ubyte.gz" > "$T/badgzip/train-images-idx3-ubyte.gz"
mkidx missing
mkidx mismatch; zcat "$D/train-images-idx3-ubyte.gz" | head -c $((16 + 784 * 10)) > "$T/mismatch/train-images-idx3-ubyte"
zcat "$D/train-labels-idx1-ubyte.gz" | head -c 8 > "$T/mismatch/hdr"
rm "$T/mismatch/train-labels-idx1-ubyte.gz"
printf '\x00\x00\x08\x01\x00\x00\x00\x0c' > "$T/mismatch/train-labels-idx1-ubyte"; head -c 12 /dev/zero >> "$T/mismatch/train-labels-idx1-ubyte"
python3 - "$T/mismatch/train-images-idx3-ubyte" <<'PY'
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[4:8]=(10).to_bytes(4,'big'); open(p,'wb').write(b)
PY
for d in badmagic badtype truncated badgzip missing mismatch; do
  expect_error "IDX $d" "$B/ntpu" train -d ref --data "$T/$d" --epochs 1
done

expect_error "--layers with too few inputs" "$B/ntpu" train -d ref --layers 700,10 --train-limit 64
expect_error "--layers with too few classes" "$B/ntpu" train -d ref --layers 784,32,5 --train-limit 64
# A test label past the class count (it was read past the logits' end, and the run "succeeded")
mkidx testlabel; cp "$D"/train-images-idx3-ubyte.gz "$T/testlabel/"; rm "$T/testlabel/t10k-labels-idx1-ubyte.gz"
zcat "$D/t10k-labels-idx1-ubyte.gz" | python3 -c "
import sys; b = bytearray(sys.stdin.buffer.read()); b[8] = 200; sys.stdout.buffer.write(b)" > "$T/testlabel/t10k-labels-idx1-ubyte"
expect_error "a test label past the classes" "$B/ntpu" train -d ref --data "$T/testlabel" --train-limit 64 --epochs 1
grep -q 'the test labels in .* need 201 classes$' "$T/err" || { echo "FAIL test label: $(cat "$T/err")"; failures=$((failures + 1)); }
expect_error "--layers not a list" "$B/ntpu" train -d ref --layers 784,x,10
expect_error "--optimizer unknown" "$B/ntpu" train -d ref --optimizer adagrad
expect_error "--epochs zero" "$B/ntpu" train -d ref --epochs 0
expect_error "--lr negative" "$B/ntpu" train -d ref --lr -1
expect_error "--batch with a space" "$B/ntpu" train -d ref --batch " 5"
expect_error "--epochs with a sign" "$B/ntpu" train -d ref --epochs +2
expect_error "--layers with a trailing comma" "$B/ntpu" train -d ref --layers 784,32,10,

# An output that cannot be written fails before any training (nothing on stdout), not after an epoch.
for o in "--save $T/nodir/m.st" "--log $T/nodir/log.csv" "--plot $T" "--save $T/nodir/m.st --resume $T/nope.st"; do
  expect_error "train $o" "$B/ntpu" train -d ref --layers 784,16,10 --train-limit 128 --test-limit 64 --epochs 1 $o
  [ -s "$T/out" ] && { echo "FAIL train $o: it trained before failing"; failures=$((failures + 1)); }
done
[ -e "$T/nodir" ] && { echo "FAIL train with an unwritable output left $T/nodir"; failures=$((failures + 1)); }
# /dev/stdout on a file (as here: expect_error sends stdout to one) cannot be replaced by name: refused
# up front. On a pipe it is written in place, and two outputs to /dev/null are not "one file".
expect_error "train --log /dev/stdout into a file" "$B/ntpu" train -d ref --layers 784,16,10 --train-limit 128 \
  --test-limit 64 --epochs 1 --log /dev/stdout
n=$("$B/ntpu" train -d ref --layers 784,16,10 --train-limit 128 --test-limit 64 --epochs 2 --log /dev/stdout \
    --plot /dev/null 2> /dev/null | grep -c '^epoch,steps,train_loss')
[ "$n" = 2 ] && echo "ok   --log /dev/stdout on a pipe: the log twice (once an epoch)" ||
  { echo "FAIL --log /dev/stdout on a pipe: $n logs"; failures=$((failures + 1)); }
# Resuming reads the earlier log's rows; from a pipe that read waited forever on the run's own output.
"$B/ntpu" train -d ref --layers 784,16,10 --train-limit 128 --test-limit 64 --epochs 1 --save "$T/p.st" > /dev/null 2>&1
n=$(timeout 60 "$B/ntpu" train -d ref --layers 784,16,10 --train-limit 128 --test-limit 64 --epochs 2 \
    --resume "$T/p.st" --log /dev/stdout 2> /dev/null | grep -c '^2,')
[ "$n" = 1 ] && echo "ok   --resume with --log /dev/stdout on a pipe" ||
  { echo "FAIL --resume with --log /dev/stdout on a pipe (hung, or $n rows)"; failures=$((failures + 1)); }
# Two outputs in one file (the log would overwrite the checkpoint), or an empty name: refused up front.
for o in "--save $T/same --log $T/same" "--plot $T/same --save $T/./same" "--resume $T/ok.st --log $T/ok.st" "--save="; do
  expect_error "train $o" "$B/ntpu" train -d ref --layers 784,16,10 --train-limit 128 --test-limit 64 --epochs 2 $o
  [ -s "$T/out" ] && { echo "FAIL train $o: it trained before failing"; failures=$((failures + 1)); }
done

"$B/ntpu" train -d ref --train-limit 128 --test-limit 64 --epochs 1 --save "$T/ok.st" > /dev/null 2>&1 || { echo "FAIL training a checkpoint"; exit 1; }
size=$(stat -c %s "$T/ok.st")
head -c $((size / 2)) "$T/ok.st" > "$T/half.st"
head -c 5 "$T/ok.st" > "$T/tiny.st"
printf 'not a checkpoint at all, just text\n' > "$T/text.st"
# foreign: a model file that does not name its architecture (it says "arhc"), given no --arch.
cp "$T/ok.st" "$T/foreign.st"; python3 - "$T/foreign.st" <<'PY'
import sys; p=sys.argv[1]; b=open(p,'rb').read(); open(p,'wb').write(b.replace(b'"arch"', b'"arhc"'))
PY
# One damaged metadata value of the sidecar each: named in the error, nothing trained or written (a NaN lr
# trained to NaN and saved it over the input; a batch index past the epoch "trained" 0 steps at 3e25
# samples/s).
setmeta() { # src dst key value
  python3 - "$@" <<'PY'
import json, struct, sys
src, dst, key, val = sys.argv[1:]
b = open(src, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
h['__metadata__'][key] = val
j = json.dumps(h).encode(); j += b' ' * (-len(j) % 8)
open(dst, 'wb').write(struct.pack('<Q', len(j)) + j + b[8 + n:])
PY
}
for kv in lr=nan lr=-5 eps=0 step=-1 beta2=1 train.batch=5000 train.batch_index=999999 train.loss_sum=nan \
          train.epoch=18446744073709551615 train.seed=+3; do
  cp "$T/ok.st" "$T/meta.st"
  setmeta "$T/ok.st.state" "$T/meta.st.state" "${kv%%=*}" "${kv#*=}"
  cp "$T/meta.st" "$T/meta0.st"; cp "$T/meta.st.state" "$T/meta0.st.state"
  expect_error "resume with $kv" "$B/ntpu" train -d ref --train-limit 128 --test-limit 64 --epochs 3 --resume "$T/meta.st" --save "$T/meta.st"
  grep -q "${kv%%=*}.* out of range\|${kv%%=*}.* past the epoch" "$T/err" || { echo "FAIL $kv not named: $(cat "$T/err")"; failures=$((failures + 1)); }
  cmp -s "$T/meta.st" "$T/meta0.st" && cmp -s "$T/meta.st.state" "$T/meta0.st.state" ||
    { echo "FAIL resume with $kv changed the checkpoint"; failures=$((failures + 1)); }
done
# Header entries a reader must not take: a fractional shape, offsets as strings (read as 0), a tensor twice.
python3 - "$T/ok.st" "$T" <<'PY'
import json, struct, sys
src, out = sys.argv[1:]
b = open(src, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; raw = b[8:8 + n].decode()
def put(name, text):
    text = text.encode(); text += b' ' * (-len(text) % 8)
    open(f'{out}/{name}.st', 'wb').write(struct.pack('<Q', len(text)) + text + b[8 + n:])
h = json.loads(raw); h['0.bias']['shape'] = [h['0.bias']['shape'][0] + 0.5]; put('fraction', json.dumps(h))
h = json.loads(raw); h['0.bias']['data_offsets'] = [str(x) for x in h['0.bias']['data_offsets']]; put('stroffsets', json.dumps(h))
i = raw.index('"0.bias"'); j = raw.index('}', i) + 1; put('twice', raw[:j] + ',' + raw[i:j] + raw[j:])
PY
for f in "fraction:bad shape" "stroffsets:not two whole numbers" "twice:appears twice"; do
  expect_error "eval of a checkpoint with a ${f%%:*} entry" "$B/ntpu" eval -d ref --model "$T/${f%%:*}.st"
  grep -q "${f#*:}" "$T/err" || { echo "FAIL ${f%%:*}: not '${f#*:}': $(cat "$T/err")"; failures=$((failures + 1)); }
done
for f in half tiny text foreign; do
  expect_error "eval of a $f checkpoint" "$B/ntpu" eval -d ref --model "$T/$f.st"
  expect_error "resume from a $f checkpoint" "$B/ntpu" train -d ref --resume "$T/$f.st"
done
expect_error "eval --int8 of a model the board's memories cannot hold" \
  "$B/ntpu" eval -d ref:n=2,ub=1024,wb=16384,acc=512,payload=516,novec=1,notra=1 --model "$T/ok.st" \
  --test-limit 8 --int8 --calib 8
grep -q 'needs 33280 UB, 101632 WB and 8911 ACC rows .* and int8 inference is not streamed$' "$T/err" ||
  { echo "FAIL eval --int8 on the board's memories: $(cat "$T/err")"; failures=$((failures + 1)); }
expect_error "--momentum with adam" "$B/ntpu" train -d ref --optimizer adam --momentum 0.95
grep -q 'momentum applies to --optimizer momentum, not adam$' "$T/err" || { echo "FAIL --momentum with adam: $(cat "$T/err")"; failures=$((failures + 1)); }
expect_error "--gamma without --schedule step" "$B/ntpu" train -d ref --gamma 0.5
expect_error "--step-size with cosine" "$B/ntpu" train -d ref --schedule cosine --step-size 10
expect_error "eval of a directory" "$B/ntpu" eval -d ref --model "$T"
grep -q 'not a file (a directory)$' "$T/err" || { echo "FAIL eval of a directory: $(cat "$T/err")"; failures=$((failures + 1)); }
expect_error "eval --calib without --int8" "$B/ntpu" eval -d ref --model "$T/ok.st" --calib 8
expect_error "eval without --model" "$B/ntpu" eval -d ref
expect_error "eval of a missing file" "$B/ntpu" eval -d ref --model "$T/nope.st"
expect_error "resume with another batch" "$B/ntpu" train -d ref --resume "$T/ok.st" --batch 32
for o in "--lr 0.1" "--optimizer sgd" "--schedule cosine"; do # options a resumed run would not use
  expect_error "resume with $o" "$B/ntpu" train -d ref --resume "$T/ok.st" --epochs 2 $o
  grep -q "^ntpu: ${o% *}: --resume continues with the checkpoint's optimizer and schedule; drop ${o% *}$" "$T/err" ||
    { echo "FAIL resume with $o: $(cat "$T/err")"; failures=$((failures + 1)); }
done
expect_error "resume of a finished run without more --epochs" "$B/ntpu" train -d ref --resume "$T/ok.st" --epochs 1
[ -s "$T/out" ] && { echo "FAIL resume of a finished run: it printed a run"; failures=$((failures + 1)); }

[ "$failures" = 0 ] && echo "PASS train_errors" || { echo "FAIL train_errors: $failures cases"; exit 1; }
