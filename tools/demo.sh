#!/usr/bin/env bash
# make demo: a bf16 and an int8 matmul on the simulated RTL (vsim), checked bit for bit against the
# golden model (ref), with the device's performance counters.
set -eu
NTPU=${1:-build/ntpu}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

/usr/bin/python3 - "$T" <<'PY'
import sys, numpy as np
r = np.random.default_rng(1)
np.save(sys.argv[1] + "/A.npy", r.standard_normal((96, 80), dtype=np.float32))
np.save(sys.argv[1] + "/B.npy", r.standard_normal((80, 64), dtype=np.float32))
np.save(sys.argv[1] + "/A8.npy", r.integers(-128, 128, (96, 80), dtype=np.int8))
np.save(sys.argv[1] + "/B8.npy", r.integers(-128, 128, (80, 64), dtype=np.int8))
PY

echo "== the device"
"$NTPU" info -d vsim
for dt in bf16 int8; do
  a=A.npy b=B.npy; [ $dt = int8 ] && a=A8.npy b=B8.npy
  echo
  echo "== $dt matmul (96x80)·(80x64) on the RTL (vsim), then on the golden model (ref)"
  "$NTPU" matmul -d vsim --dtype $dt "$T/$a" "$T/$b" -o "$T/C_vsim.npy"
  "$NTPU" matmul -d ref --dtype $dt "$T/$a" "$T/$b" -o "$T/C_ref.npy"
  if cmp -s "$T/C_vsim.npy" "$T/C_ref.npy"; then
    echo "RTL and golden model agree bit for bit."
  else
    echo "MISMATCH between the RTL and the golden model" >&2
    exit 1
  fi
done
echo
echo "Next: 'build/ntpu bench' for cycles, utilization and simulator speed; 'make test' for the test suite."
