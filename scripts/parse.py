#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write results/ from a saved full-run log, running nothing.

  scripts/parse.py logs/full_runs/FILE.jsonl [--out results]

The same files a run writes (results.json, results.csv, <TYPE>.csv), so the
tables and figures of an older run can be regenerated. To print a saved
run's per-case CSV instead: scripts/run.py logs/full_runs/FILE.jsonl.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from obllib import parse, results  # noqa: E402
from obllib.inputs import ROOT  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log")
    p.add_argument("--out", default=os.path.join(ROOT, "results"))
    args = p.parse_args(argv)
    events = parse.read_jsonl(args.log)
    if not any(e.get("event") == "run_start" for e in events):
        print(f"parse: {args.log} is not a full-run log (no run_start event)", file=sys.stderr)
        return 1
    doc = results.write_results(args.out, events, args.log)
    print(f"parse: {len(doc['records'])} records, {len(doc['cases'])} cases -> {args.out}/",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError) as e:
        print(f"parse: error: {e}", file=sys.stderr)
        sys.exit(1)
