#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PNG figures of the benchmark results under figures/.

  scripts/draw_figures.py [--results results/results.json | --log FILE ...]
                          [--extra-log peer.log ...] [--out figures]

Latency, throughput, initialization time and memory against N, log axes,
one line per implementation (median), min-max error bars, IQR band.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from obllib import figures, inputs, ramp  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=inputs.DEFAULT_RESULTS)
    p.add_argument("--log", action="append", default=[])
    p.add_argument("--extra-log", action="append", default=[])
    p.add_argument("--out", default=os.path.join(inputs.ROOT, "figures"))
    p.add_argument("--clean", action="store_true",
                   help="first delete the PNG files already in --out (figures of older runs)")
    args = p.parse_args(argv)
    if args.clean and os.path.isdir(args.out):
        for name in os.listdir(args.out):
            if name.endswith(".png"):
                os.unlink(os.path.join(args.out, name))
    records, _, _, _ = inputs.gather(args.results, args.log, args.extra_log)
    paths = figures.draw_all(records, args.out) + ramp.figures(records, args.out)
    for path in paths:
        print(os.path.relpath(path))
    print(f"draw_figures: {len(paths)} figures in {os.path.relpath(args.out)}/", file=sys.stderr)
    return 0 if paths else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError) as e:
        print(f"draw_figures: error: {e}", file=sys.stderr)
        sys.exit(1)
