#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Instructions per access, by function, with callgrind (docs/bench.md).

    /usr/bin/python3 scripts/instr_profile.py [--type nroram|roram|umap]
        [--n 2^16,2^20] [--key-bytes K] [--value-bytes V] [--queries Q]

Builds build-prof/ (release, OBL_NATIVE=OFF plus -march=x86-64-v3: AVX2, AES-NI, -g),
since valgrind 3.19 cannot run the AVX-512 release build, and runs obl-bench
once per N under callgrind with collection switched on only inside the
measured operation (--toggle-collect): nroram obl_nroram_access, roram
obl_roram_read and obl_roram_write, umap obl_omap_get. It divides each
function's own instruction count (and, in parentheses, its inclusive
count) by the number of calls of the operation that callgrind counted
(every call of the run: reads, writes and the benchmark's checks), and
prints one Markdown table, whose rows sum to the whole operation, with a
column per N and a last column "per doubling of N": the difference between the
last and the first N divided by the difference of their tree depths
(log2 N), a derived figure. Counts are of the x86-64-v3 build; the
AVX-512 release build runs fewer instructions, so this says where the work
is, not how long it takes, and where the release build takes an AVX-512
path (NRORAM's whole-bucket evictions), this build runs the portable one.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = {
    "nroram": ["obl_nroram_access"],
    "roram": ["obl_roram_read", "obl_roram_write"],
    "umap": ["obl_omap_get"],
}


def parse_n(text):
    out = []
    for part in text.split(","):
        part = part.strip()
        out.append(1 << int(part[2:]) if part.startswith("2^") else int(part))
    return out


def build():
    bdir = os.path.join(ROOT, "build-prof")
    subprocess.run(["cmake", "-S", ROOT, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release",
                    "-DOBL_NATIVE=OFF", "-DOBL_BUILD_TESTS=OFF",
                    # OBL_NATIVE=OFF alone may target baseline x86-64 (SSE2);
                    # the profile is of the x86-64-v3 (AVX2) code
                    "-DCMAKE_C_FLAGS=-g -march=x86-64-v3"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", bdir, "-j2", "--target", "obl-bench"],
                   check=True, stdout=subprocess.DEVNULL)
    return os.path.join(bdir, "bench", "obl-bench")


def read_callgrind(path, ops):
    """Inclusive instructions per function name and the calls into ops.

    Self costs come from the cost lines under fn=. The cost line after each
    calls= line is the call's inclusive cost, charged to the caller (fn=). A
    function's inclusive cost is its self cost plus what its call lines
    carry (a self-recursive function counts its inner calls again, as
    callgrind_annotate --inclusive does). Functions are told apart by name
    only."""
    names = {}
    self_ir, call_ir, calls = {}, {}, {}
    fn = cfn = None
    after_calls = False

    def name(ref):
        m = re.match(r"\((\d+)\)(?: (.*))?", ref)
        if not m:
            return ref
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), ref)

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                fn = name(line[3:])
                after_calls = False
            elif line.startswith("cfn="):
                cfn = name(line[4:])
            elif line.startswith(("cfi=", "cfl=", "fi=", "fe=", "fl=", "ob=", "cob=")):
                continue
            elif line.startswith("calls="):
                n = int(line[6:].split()[0])
                if cfn in ops:
                    calls[cfn] = calls.get(cfn, 0) + n
                after_calls = True
            elif line and (line[0].isdigit() or line[0] in "+-*"):
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 else 0
                if after_calls:
                    # inclusive cost of the call: the caller's, as a call
                    call_ir[fn] = call_ir.get(fn, 0) + ir
                    after_calls = False
                else:
                    self_ir[fn] = self_ir.get(fn, 0) + ir
    incl = {k: self_ir.get(k, 0) + call_ir.get(k, 0) for k in set(self_ir) | set(call_ir)}
    return incl, self_ir, calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--type", default="nroram", choices=sorted(OPS))
    ap.add_argument("--n", default="2^16,2^20")
    ap.add_argument("--key-bytes", type=int, default=8)
    ap.add_argument("--value-bytes", type=int, default=8)
    ap.add_argument("--queries", type=int, default=20000)
    ap.add_argument("--top", type=int, default=12, help="functions shown (by their own count)")
    a = ap.parse_args()
    ns = parse_n(a.n)
    exe = build()
    ops = OPS[a.type]
    cols = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in ns:
            out = os.path.join(tmp, "cg.%d" % n)
            cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out]
            cmd += ["--toggle-collect=" + op for op in ops]
            cmd += [exe, a.type, "--n", str(n), "--key-bytes", str(a.key_bytes),
                    "--value-bytes", str(a.value_bytes), "--queries", str(a.queries),
                    "--reps", "1", "--warmup", "0"]
            print("profile: " + " ".join(cmd), file=sys.stderr)
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            incl, self_ir, calls = read_callgrind(out, ops)
            ncalls = sum(calls.values())
            if ncalls == 0:
                sys.exit("profile: callgrind counted no call of " + ", ".join(ops))
            total = sum(self_ir.values())
            cols.append((n, ncalls, total, incl, self_ir))
    first, last = cols[0], cols[-1]
    levels = (last[0].bit_length() - first[0].bit_length())
    # functions inside the operation (its callers have the whole count, as
    # collection is on only inside it), by their own instructions
    inside = [k for k in last[4] if last[3].get(k, 0) < last[2] or k in ops]
    keys = sorted(inside, key=lambda k: -last[4][k])[: a.top]
    print("%s %d/%d, instructions per operation (callgrind, x86-64-v3 build, %s)" %
          (a.type, a.key_bytes, a.value_bytes, ", ".join(ops)))
    print()
    def size(n):
        return "2^%d" % (n.bit_length() - 1) if n & (n - 1) == 0 else str(n)

    head = "| function (self; inclusive at the last N) | " + " | ".join("N = " + size(c[0]) for c in cols)
    print(head + (" | per doubling of N |" if levels > 0 else " |"))
    print("|---" * (len(cols) + 1 + (levels > 0)) + "|")

    def row(label, vals):
        cells = ["{:,.0f}".format(v) for v in vals]
        if levels > 0:
            cells.append("{:,.0f}".format((vals[-1] - vals[0]) / levels))
        print("| %s | %s |" % (label, " | ".join(cells)))

    row("whole operation", [c[2] / c[1] for c in cols])
    for k in keys:
        row("`%s` (%s)" % (k, "{:,.0f}".format(last[3].get(k, 0) / last[1])),
            [c[4].get(k, 0) / c[1] for c in cols])
    rest = [(c[2] - sum(c[4].get(k, 0) for k in keys)) / c[1] for c in cols]
    row("the rest", rest)
    print()
    print("calls of the operation: " + ", ".join("%d at N = %d" % (c[1], c[0]) for c in cols))


if __name__ == "__main__":
    main()
