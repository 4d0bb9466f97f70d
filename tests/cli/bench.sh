#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ntpu bench on the golden model: the matmul sweep N..16N in both dtypes with every result checked, one
# training step with plausible counters, --json as one object; the link's throughput (--link) on the two
# simulated iCE40 boards; bad options get one error line. (The
# ref-vs-vsim step check and the PyTorch epoch run in `make bench`: too slow, and torch is not a test
# dependency.)
set -u
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

"$B/ntpu" bench -d ref --json > "$T/json" 2> "$T/err"
rc=$?
if [ "$rc" = 0 ] && [ ! -s "$T/err" ] && python3 - "$T/json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
runs = o["runs"]
n = runs[0]["array"]
assert sorted((r["dtype"], r["m"]) for r in runs) == sorted((d, n << k) for d in ("int8", "bf16") for k in range(5)), runs
for r in runs:
    assert r["correct"] is True and r["device"] == "ref", r
    assert r["m"] == r["k"] == r["n"] and r["macs"] == r["m"] ** 3, r
    assert 0 < r["utilization"] <= 1 and r["cycles"] * n * n >= r["macs"], r
    assert r["link_tx_bytes"] > 2 * r["m"] ** 2 and r["link_rx_bytes"] > 4 * r["m"] ** 2, r
ts = o["train_step"]
assert ts["layers"] == [784, 256, 10] and ts["batch"] == 64 and ts["agree"] is None, ts
(s,) = ts["runs"]
# forward, dW and dX MACs of 784-256-10 with every dimension padded to whole tiles of n
t = lambda x: -(-x // n) * n
want = 64 * (t(784) * t(256) + t(256) * t(10)) * 2 + 64 * t(256) * t(10)
assert s["macs"] == want, (s["macs"], want)
assert 0 < s["utilization"] <= 1 and s["link_bytes"] == s["link_tx_bytes"] + s["link_rx_bytes"] > 0, s
assert s["loss"] > 0, s
# the step with the optimizer on the device, as stored programs: within issue 5's link budget
dev = o["train_step_device_optimizer"]
assert [d["optimizer"] for d in dev] == ["sgd", "adam"], dev
for d in dev:
    assert abs(d["budget_bytes"] - 1.1 * (64 * 784 * 2 + 64 + 8)) < 0.1, d
    (r,) = d["runs"]
    assert r["programs"] is True and r["macs"] == want and r["loss"] > 0, r
    assert r["link_bytes"] == r["link_tx_bytes"] + r["link_rx_bytes"] <= d["budget_bytes"], r
# (e) the CNN's step, resident, host and device optimizer: the same bits, the items' counters sum to the step's
# with the zeroing of dW and db (decision 0035): at the step's start with the host optimizer (the profile's
# host I/O), at the end of the update with the device's (its optimizer row; the profiled first step also
# zeroes at its start)
c = o["train_step_cnn"]
assert c["batch"] == 64 and c["agree"] is True and abs(c["payload_bytes"] - (64 * 784 * 2 + 64 + 8)) < 0.1, c
assert [r["device_optimizer"] for r in c["runs"]] == [False, True], c
for r in c["runs"]:
    assert r["device"] == "ref" and r["loss"] > 0 and 0 < r["utilization"] <= 1 and r["link_frames"] > 0, r
    items = r["items"]
    assert [i["name"] for i in items] == ["conv16k3p1", "relu", "maxpool2", "conv32k3p1", "relu", "maxpool2", "flatten", "fc10"]
    zero = r["optimizer" if r["device_optimizer"] else "host_io"]["macs"]
    assert zero > 0 and sum(i["forward"]["macs"] + i["backward"]["macs"] for i in items) + zero == r["macs"], r
    assert (r["optimizer"]["cycles"] > 0) == r["device_optimizer"], r
host, device = c["runs"]
assert device["link_bytes"] < host["link_bytes"], (device["link_bytes"], host["link_bytes"])
# issue 23's acceptance 5: with the device optimizer the step moves at most 1.1 x its payload
assert abs(c["budget_bytes"] - 1.1 * c["payload_bytes"]) < 0.1 and device["link_bytes"] <= c["budget_bytes"], device
(sp,) = o["sim_speed"]
assert sp["device"] == "ref" and min(sp["int8_mac_per_s"], sp["bf16_mac_per_s"], sp["train_step_mac_per_s"]) > 0
assert o["epoch"] is None
# (f) the link: 64 KiB written and read back, checked; the golden model has no clock (0 Hz)
(lk,) = o["link_throughput"]
assert lk["device"] == "ref" and lk["correct"] is True and lk["clock_hz"] == 0, lk
assert lk["to_device_bytes"] > 65536 and lk["to_host_bytes"] > 65536 and lk["to_device_cycles"] > 0, lk
# (g) the same data-parallel steps on 1 and 2 devices: the same weights; each of 2 does half the shards
one, two = o["scaling"]
assert (one["devices"], two["devices"]) == (1, 2) and one["digest"] == two["digest"], o["scaling"]
assert one["shard"] == 32 and one["batch"] == 64 and len(two["per_device"]) == 2, o["scaling"]
c1 = one["per_device"][0]["cycles_per_step"]
assert all(0 < d["cycles_per_step"] < c1 and d["link_bytes_per_step"] > 0 for d in two["per_device"]), o["scaling"]
PY
then
  echo "ok   bench -d ref --json: sweep, training step, speeds"
else
  echo "FAIL bench -d ref --json: exit $rc"; sed 's/^/     /' "$T/json" "$T/err"; failures=$((failures + 1))
fi

"$B/ntpu" bench -d ref --size 40 > "$T/out" 2> "$T/err"
rc=$?
if [ "$rc" = 0 ] && [ "$(grep -c '^ref .* 40 .* ok$' "$T/out")" = 2 ] && grep -q '^(b) training step' "$T/out" \
  && [ "$(grep -c '^ref .* 8x8 .* all equal$' "$T/out")" = 2 ] && grep -q '^(e) training step: CNN' "$T/out"; then
  echo "ok   bench -d ref --size 40: table"
else
  echo "FAIL bench -d ref --size 40: exit $rc"; sed 's/^/     /' "$T/out" "$T/err"; failures=$((failures + 1))
fi

# A device without OPTIM (the small boards, ref:novec=1) still gets its table: the device-optimizer rows
# say why they were not run instead of the whole bench failing.
"$B/ntpu" bench -d ref:novec=1 --size 16 --json > "$T/json" 2> "$T/err"
rc=$?
if [ "$rc" = 0 ] && [ ! -s "$T/err" ] && python3 - "$T/json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert len(o["runs"]) == 2 and all(r["correct"] for r in o["runs"]), o["runs"]
(s,) = o["train_step"]["runs"]
assert s["loss"] > 0, s
for d in o["train_step_device_optimizer"]:
    (r,) = d["runs"]
    assert r == {"device": "ref:novec=1", "skipped": r["skipped"]} and "OPTIM" in r["skipped"], r
    assert d["agree"] is None, d
PY
then
  echo "ok   bench -d ref:novec=1: device-optimizer rows skipped, the rest measured"
else
  echo "FAIL bench -d ref:novec=1: exit $rc"; sed 's/^/     /' "$T/json" "$T/err"; failures=$((failures + 1))
fi

# (f) on both simulated iCE40 boards, in emulated time: the iCEBreaker's UART carries 300 kB/s each way (3 Mbaud
# 8N1, every byte's 10 bits); the pico-ice's SPI link (decision 0037) at most 363 kB/s.
"$B/ntpu" bench --link --json -d vsim:board=icebreaker > "$T/ib" 2> "$T/err" \
  && "$B/ntpu" bench --link --json -d vsim:board=pico-ice > "$T/pi" 2>> "$T/err"
rc=$?
if [ "$rc" = 0 ] && [ ! -s "$T/err" ] && python3 - "$T/ib" "$T/pi" <<'PY'
import json, sys
(ib,) = json.load(open(sys.argv[1]))["link_throughput"]
(pi,) = json.load(open(sys.argv[2]))["link_throughput"]
for r in (ib, pi):
    assert r["correct"] is True and r["clock_hz"] == 12e6 and r["rows"] == 16384, r
for way in ("to_device_bytes_per_s", "to_host_bytes_per_s"):
    assert 290e3 < ib[way] <= 300e3, ib
    assert 100e3 < pi[way] <= 363e3, pi
print(f"     icebreaker {ib['to_device_bytes_per_s'] / 1e3:.1f} / {ib['to_host_bytes_per_s'] / 1e3:.1f} kB/s, "
      f"pico-ice {pi['to_device_bytes_per_s'] / 1e3:.1f} / {pi['to_host_bytes_per_s'] / 1e3:.1f} kB/s")
PY
then
  echo "ok   bench --link on vsim:board=icebreaker and vsim:board=pico-ice"
else
  echo "FAIL bench --link: exit $rc"; sed 's/^/     /' "$T/ib" "$T/pi" "$T/err"; failures=$((failures + 1))
fi

expect_error() { # description, args...
  local what=$1; shift
  "$B/ntpu" "$@" > "$T/out" 2> "$T/err"
  local rc=$?
  if [ "$rc" = 1 ] && [ "$(wc -l < "$T/err")" = 1 ] && grep -q '^ntpu: ' "$T/err" && [ ! -s "$T/out" ]; then
    echo "ok   $what: $(cat "$T/err")"
  else
    echo "FAIL $what: exit $rc"; sed 's/^/     /' "$T/out" "$T/err"; failures=$((failures + 1))
  fi
}
expect_error "size 0" bench -d ref --size 0
expect_error "unknown option" bench -d ref --sizes 8
expect_error "missing torch script" bench -d ref --epoch --torch-script "$T/none.py"
expect_error "missing data" bench -d ref --epoch --torch-script tools/bench_torch.py --data "$T/nodata"
expect_error "no such device" bench -d nosuch

[ "$failures" = 0 ] && echo "PASS bench" || echo "FAIL bench: $failures"
[ "$failures" = 0 ]
