#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `ntpu matmul` on NumPy-made 300x200 by 200x150 matrices, on ref and vsim: int8 equals NumPy's int32
# matmul exactly; bf16 equals a sequential float32 loop over bf16-rounded inputs bit for bit and lies
# within the bound of docs/numerics.md of the float64 product.
set -eu
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PY=/usr/bin/python3 # Debian's interpreter: the one that sees python3-numpy

$PY - "$T" <<'PY'
import sys, numpy as np
d = sys.argv[1]
r = np.random.default_rng(2026)
np.save(f"{d}/A8.npy", r.integers(-128, 128, (300, 200), dtype=np.int8))
np.save(f"{d}/B8.npy", r.integers(-128, 128, (200, 150), dtype=np.int8))
np.save(f"{d}/Af.npy", r.standard_normal((300, 200), dtype=np.float32))
np.save(f"{d}/Bf.npy", r.standard_normal((200, 150), dtype=np.float32))
PY

for dev in ref vsim; do
  "$B/ntpu" matmul -d $dev --dtype int8 "$T/A8.npy" "$T/B8.npy" -o "$T/C8_$dev.npy"
  "$B/ntpu" matmul -d $dev --dtype bf16 "$T/Af.npy" "$T/Bf.npy" -o "$T/Cf_$dev.npy"
done

$PY - "$T" <<'PY'
import sys, numpy as np
d = sys.argv[1]
def bf16(x):  # round float32 to bf16 (RNE), returned as float32; inputs here are finite normals
    u = x.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)
A8, B8 = np.load(f"{d}/A8.npy"), np.load(f"{d}/B8.npy")
want8 = A8.astype(np.int32) @ B8.astype(np.int32)
A, B = bf16(np.load(f"{d}/Af.npy")), bf16(np.load(f"{d}/Bf.npy"))
seq = np.zeros((A.shape[0], B.shape[1]), np.float32)
for k in range(A.shape[1]):           # the device's order: one fp32 rounding per k, ascending
    seq = seq + A[:, k:k+1] * B[k:k+1, :]
exact = A.astype(np.float64) @ B.astype(np.float64)
bound = A.shape[1] * 2.0**-24 * (np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)) + 1e-30
for dev in ("ref", "vsim"):
    C8, Cf = np.load(f"{d}/C8_{dev}.npy"), np.load(f"{d}/Cf_{dev}.npy")
    assert C8.dtype == np.int32 and C8.shape == (300, 150), (C8.dtype, C8.shape)
    assert np.array_equal(C8, want8), f"{dev}: int8 result differs from NumPy in {np.sum(C8 != want8)} places"
    assert Cf.dtype == np.float32 and Cf.shape == (300, 150), (Cf.dtype, Cf.shape)
    assert np.array_equal(Cf.view(np.uint32), seq.view(np.uint32)), \
        f"{dev}: bf16 result differs from the sequential fp32 loop in {np.sum(Cf != seq)} places"
    err = np.abs(Cf.astype(np.float64) - exact)
    assert np.all(err <= bound), f"{dev}: bf16 error {err.max()} over the bound"
    print(f"{dev}: int8 300x200x150 equals NumPy; bf16 bit-identical to the fp32 loop, "
          f"max error {err.max():.3g} (bound {bound.max():.3g})")
PY
echo "PASS matmul_numpy"
