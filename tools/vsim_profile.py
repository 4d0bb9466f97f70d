#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vsim_profile.py: where vsim's instructions go, per simulated cycle (`make vsim-profile`).

    vsim_profile.py VSIM_SPEED [--dtype int8|bf16] [--size S] [--by module|function] [--module M] [--top N]

Runs VSIM_SPEED (tools/vsim_speed.c, best built with -g and without profile guidance, as
`make vsim-profile` does) under valgrind's cachegrind twice, replaying one and then two S^3 matmuls,
and prints the difference per simulated cycle: what one replay costs, without the program's start.
Each replay builds a fresh model, so the model's construction (~240 instructions a cycle at 128^3)
is counted in; `ntpu bench` does not pay it per run.

Verilator's C++ names each variable by its instance path (..._DOT__u_seq__DOT__...): a line of the
model counts for the first instance its statement names ('core' for the core's own signals, '-'
for a function's entry and the like). --module M lists M's costliest lines instead.
Instruction counts are steady where the machine's speed is not (docs/decisions/0022-vsim-scheduler-steps.md).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

INSTANCE = re.compile(r'u_core__DOT__((?:u_|g_)\w*?)(?:__DOT__((?:u_|g_)\w*?))?(?:__DOT__|\b|__)')


def cachegrind(binary, args, out):
    run = subprocess.run(['valgrind', '--tool=cachegrind', '--cache-sim=no', f'--cachegrind-out-file={out}',
                          binary] + args, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f'vsim_profile.py: {binary} failed under valgrind:\n{run.stderr[-2000:]}')
    return run.stdout


def load(path):
    """(file, function, line) -> instructions, from a cachegrind output file."""
    counts = collections.Counter()
    fl = fn = None
    with open(path) as f:
        for line in f:
            if line.startswith('fl='):
                fl = line[3:].strip()
            elif line.startswith('fn='):
                fn = line[3:].strip()
            elif line[:1].isdigit():
                parts = line.split()
                if len(parts) >= 2:
                    counts[(fl, fn, int(parts[0]))] += int(parts[1])
    return counts


class Source:
    """The lines of the model's C++ files, and the instance each one counts for: the one it names,
    or for a statement's later lines the one named last before them in the same function."""

    def __init__(self):
        self.files = {}

    def _load(self, path):
        if path not in self.files:
            try:
                with open(path) as f:
                    lines = f.readlines()
            except OSError:
                lines = []
            owner, current = [], '-'
            for text in lines:
                m = INSTANCE.search(text)
                if m:
                    current = m.group(1) + ('.' + m.group(2) if m.group(2) else '')
                elif 'u_core__DOT__' in text:
                    current = 'core'
                elif text.startswith(('VL_INLINE_OPT', 'void ')):
                    current = '-'
                owner.append(current)
            self.files[path] = (lines, owner)
        return self.files[path]

    def text(self, path, number):
        lines, _ = self._load(path)
        return lines[number - 1] if 0 < number <= len(lines) else ''

    def instance(self, path, number):
        _, owner = self._load(path)
        return owner[number - 1] if 0 < number <= len(owner) else '-'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('vsim_speed')
    ap.add_argument('--dtype', default='int8', choices=['int8', 'bf16'])
    ap.add_argument('--size', type=int, default=128)
    ap.add_argument('--by', default='module', choices=['module', 'function'])
    ap.add_argument('--module', help="list this module's costliest lines")
    ap.add_argument('--top', type=int, default=25)
    opt = ap.parse_args()
    if not shutil.which('valgrind'):
        sys.exit('vsim_profile.py: needs valgrind (Debian: apt-get install valgrind)')

    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for reps in (1, 2):
            out = os.path.join(tmp, f'cg{reps}.out')
            text = cachegrind(opt.vsim_speed, [opt.dtype, str(opt.size), str(reps)], out)
            runs.append(load(out))
        m = re.search(r'(\d+) cycles per run', text)
        if not m:
            sys.exit(f'vsim_profile.py: no "cycles per run" in the output of {opt.vsim_speed}')
        cycles = int(m.group(1))
    one, two = runs
    diff = {k: two.get(k, 0) - one.get(k, 0) for k in set(one) | set(two)}
    src = Source()

    def model_line(k):
        return k[0] and os.path.basename(k[0]).startswith('V') and k[0].endswith('.cpp')

    total = sum(diff.values())
    print(f'{opt.dtype} {opt.size}^3: {cycles} cycles a replay, {total / cycles:.0f} instructions a cycle')
    agg = collections.Counter()
    if opt.module:
        for k, v in diff.items():
            if v and model_line(k) and src.instance(k[0], k[2]) == opt.module:
                agg[f'{os.path.basename(k[0])}:{k[2]}  {src.text(k[0], k[2]).strip()[:110]}'] += v
    else:
        for k, v in diff.items():
            if not v:
                continue
            if opt.by == 'function':
                agg[(k[1] or '?')[:100]] += v
            elif model_line(k):
                agg[src.instance(k[0], k[2])] += v
            else:
                agg['(outside the model) ' + os.path.basename(k[0] or '?')] += v
    for key, v in agg.most_common(opt.top):
        print(f'{v / cycles:9.1f}  {key}')


if __name__ == '__main__':
    main()
