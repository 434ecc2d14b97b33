#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""TEST DOUBLE of obl-bench: prints fake, synthetic results. Never a measurement.

Implements the command line of docs/benchmark-format.md closely enough to
test the run wrapper: list-types, list-cases [--max-n N] [--large], and
benchmark subcommands that write one JSONL record and one REPORT line whose
"measurements" follow known formulas:
  Read_latency_us = LAT_BASE[impl] + LAT_LEVEL[impl] * log2(N) + 0.01 * V
  Memory_kb       = (MEM_FIXED + MEM_ENTRY[impl] * N) / 1024
Special subcommands (in the plan when FAKE_SPECIAL=1): crash (SIGSEGV),
hang (sleeps), fail (exit 3 with a message), nojson (exit 0, no record),
huge (estimated memory far beyond any machine; must be skipped).
FAKE_CALLS=FILE appends each invocation's argv to FILE. FAKE_SLOW_CPU=K makes
every latency 1.5 times larger when the call has --cpu K (a slow CPU).
FAKE_FAIL_N=N makes every case of that N fail (exit 3).
"""
import json
import math
import os
import signal
import sys
import time

TYPES = {"array": ("RORAM", "baseline_array"), "roram": ("RORAM", "obl"),
         "hashmap": ("UMAP", "baseline_hashmap"), "umap": ("UMAP", "obl")}
LAT_BASE = {"obl": 0.5, "baseline_array": 0.02, "baseline_hashmap": 0.05}
LAT_LEVEL = {"obl": 0.25, "baseline_array": 0.001, "baseline_hashmap": 0.002}
MEM_FIXED = 4096
MEM_ENTRY = {"obl": 64, "baseline_array": 8, "baseline_hashmap": 24}
SPECIAL = {"crash": "RORAM", "hang": "RORAM", "fail": "RORAM", "nojson": "RORAM", "huge": "RORAM"}


def opt(args, name, default=None):
    if name in args:
        return args[args.index(name) + 1]
    return default


def plan(args):
    max_n = int(opt(args, "--max-n", 4096))
    if "--large" in args:
        max_n *= 4
    cases = []
    for bench, (rtype, impl) in TYPES.items():
        for v in (8, 56):
            n = 1024
            while n <= max_n:
                cases.append((bench, rtype, impl, n, 8, v))
                n *= 2
    if os.environ.get("FAKE_SPECIAL"):
        for bench in SPECIAL:
            cases.append((bench, "RORAM", "obl", 1024, 8, 8))
    for bench, rtype, impl, n, k, v in cases:
        mem = 2 ** 60 if bench == "huge" else MEM_FIXED + MEM_ENTRY.get(impl, 64) * n
        print(json.dumps({"bench": bench, "report_type": rtype, "impl": impl,
                          "args": ["--n", str(n), "--key-bytes", str(k), "--value-bytes", str(v)],
                          "params": {"N": n, "Key_bytes": k, "Value_bytes": v},
                          "est_memory_bytes": mem, "est_seconds": 0.05}))


def run(bench, args):
    if bench == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if bench == "hang":
        time.sleep(60)
    if bench == "fail":
        print("fake: impossible size", file=sys.stderr)
        sys.exit(3)
    if bench == "nojson":
        sys.exit(0)
    if os.environ.get("FAKE_FAIL_N") and opt(args, "--n") == os.environ["FAKE_FAIL_N"]:
        print("fake: failing this N on request", file=sys.stderr)
        sys.exit(3)
    rtype, impl = TYPES.get(bench, ("RORAM", "obl"))
    n, k, v = int(opt(args, "--n")), int(opt(args, "--key-bytes")), int(opt(args, "--value-bytes"))
    reps = int(opt(args, "--reps", 5))
    lat = LAT_BASE[impl] + LAT_LEVEL[impl] * math.log2(n) + 0.01 * v
    if os.environ.get("FAKE_SLOW_CPU") not in (None, "") and \
            opt(args, "--cpu") == os.environ["FAKE_SLOW_CPU"]:
        lat *= 1.5
    mem_kb = (MEM_FIXED + MEM_ENTRY[impl] * n) / 1024
    # deterministic spread around the formula value: the median is exact
    def metric(x):
        samples = [x * f for f in (0.98, 0.99, 1.0, 1.01, 1.03)]
        return {"median": x, "min": min(samples), "max": max(samples),
                "q1": x * 0.99, "q3": x * 1.01, "reps": reps, "samples": samples}
    metrics = {"Initialization_time_us": metric(0.1 * n), "Read_latency_us": metric(lat),
               "Read_throughput_qps": metric(1e6 / lat), "Memory_kb": metric(mem_kb),
               "Bytes_per_entry": metric(mem_kb * 1024 / n)}
    report = (f"REPORT_123{rtype}|{impl}|fake| N:={n} | Key_bytes := {k} | Value_bytes := {v} | "
              + " | ".join(f"{m} := {x['median']:.4f}" for m, x in metrics.items()) + " REPORT_123")
    print(report)
    rec = {"schema": "obl-bench/1", "bench": bench, "report_type": rtype, "impl": impl,
           "params": {"N": n, "Key_bytes": k, "Value_bytes": v, "queries": 1000, "reps": reps,
                      "seed": 1},
           "env": {"cpu": "fake", "cores": 1}, "metrics": metrics, "report": report}
    path = opt(args, "--json")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")


def main():
    args = sys.argv[1:]
    calls = os.environ.get("FAKE_CALLS")
    if calls:
        with open(calls, "a") as f:
            f.write(json.dumps(args) + "\n")
    if not args:
        sys.exit(2)
    if args[0] == "list-types":
        for bench, (rtype, _) in TYPES.items():
            print(f"{bench}\t{rtype}\tfake {bench}")
    elif args[0] == "list-cases":
        plan(args[1:])
    elif args[0] in TYPES or args[0] in SPECIAL:
        run(args[0], args[1:])
    else:
        print(f"fake obl-bench: unknown type {args[0]}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
