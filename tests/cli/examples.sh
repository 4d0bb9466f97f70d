#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The examples build with the command their header comment gives a user, and run on ref:
# matmul.c against the build tree, train_mlp.c through pkg-config against an installed-like prefix.
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

# matmul.c: " *   make && cc ... -o matmul", run from the repository's root.
cmd=$(sed -n 's/^ \*   make && \(cc .*\) -o matmul$/\1/p' host/examples/matmul.c)
if [ -n "$cmd" ] && $cmd -o "$T/matmul" 2> "$T/cc.log" && "$T/matmul" ref > "$T/out" 2>&1 &&
   grep -q 'matches the host' "$T/out"; then
  echo "ok   examples/matmul.c: built with its own command, matches on ref"
else
  echo "FAIL examples/matmul.c: '$cmd'"; sed 's/^/     /' "$T/cc.log" "$T/out" 2> /dev/null; failures=$((failures + 1))
fi

# train_mlp.c: " *   cc train_mlp.c $(pkg-config --cflags --libs ntpu) -o train_mlp", against a prefix laid out as
# make install lays it out.
P=$T/prefix
case "$B" in /*) LIB=$B ;; *) LIB=$PWD/$B ;; esac
mkdir -p "$P/lib/pkgconfig" "$P/include"
ln -s "$PWD/host/include/ntpu" "$P/include/ntpu"
ln -s "$LIB/libntpu.so" "$P/lib/libntpu.so"
ln -s "$LIB/libntpu.so" "$P/lib/libntpu.so.1"
sed -e "s|@PREFIX@|$P|g" -e 's|@VERSION@|0|g' host/ntpu.pc.in > "$P/lib/pkgconfig/ntpu.pc"
cmd=$(sed -n 's/^ \*   \(cc train_mlp.c .*\) -o train_mlp$/\1/p' host/examples/train_mlp.c)
if [ -n "$cmd" ] &&
   (cd host/examples && PKG_CONFIG_PATH=$P/lib/pkgconfig eval "$cmd -o $T/train_mlp") 2> "$T/cc.log" &&
   LD_LIBRARY_PATH=$P/lib "$T/train_mlp" ref 256 1 > "$T/out" 2>&1 &&
   grep -q '^epoch 1: train loss' "$T/out" && grep -q '^int8 inference: test accuracy' "$T/out"; then
  echo "ok   examples/train_mlp.c: built through pkg-config, trains on ref"
else
  echo "FAIL examples/train_mlp.c: '$cmd'"; sed 's/^/     /' "$T/cc.log" "$T/out" 2> /dev/null
  failures=$((failures + 1))
fi

# A bad count is a usage line and exit 1, not a run on all 60,000 images.
for a in "ref -5 1" "ref abc" "ref 64 0"; do
  if LD_LIBRARY_PATH=$P/lib "$T/train_mlp" $a > "$T/out" 2>&1; [ $? = 1 ] && grep -q '^usage: train_mlp' "$T/out"; then
    echo "ok   train_mlp $a: $(cat "$T/out")"
  else
    echo "FAIL train_mlp $a:"; sed 's/^/     /' "$T/out"; failures=$((failures + 1))
  fi
done

[ "$failures" = 0 ] && echo "PASS examples" || { echo "FAIL examples"; exit 1; }
