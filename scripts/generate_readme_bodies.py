#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Markdown tables of the benchmark results.

  scripts/generate_readme_bodies.py                         all tables to stdout
  scripts/generate_readme_bodies.py --write-results FILE    all tables to FILE as
                                                            a results page (go.sh:
                                                            docs/results/latest.md)
  scripts/generate_readme_bodies.py --main                  README's curated tables,
                                                            refreshed, to stdout
  scripts/generate_readme_bodies.py --main --write-readme   refresh them in README.md
  ... --extra-log peer.log                                  peers' REPORT lines side by side

Tables: one per benchmark type, fixed parameters (key and value size...) and
metric; rows by N, columns by implementation, cells median (min–max); ratio
columns to the non-oblivious baseline of the same run; then the DERIVED
decompositions (latency per level and per byte, memory formula, the sharded
maps' time split and targets), the lines of
code per structure, the measured noise and the drift line.

--main keeps the README's selection, order and surrounding notes between
<!-- obl-tables:begin --> and <!-- obl-tables:end -->, replacing only the rows
of each table marked <!-- obl-table: KEY --> (KEY SUMMARY: the compact table
of headline cases at the largest N) and the text after <!-- obl-env --> (the
run's machine and commit); if a key matches no result, it fails with status 1
and writes nothing. --write-readme implies --main.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from obllib import fits, inputs, loc, mpi, ramp, runner, sharded, stats, tables  # noqa: E402
from obllib.tables import Table  # noqa: E402


def noise_table(noise):
    if not noise or not noise.get("metrics"):
        return None
    rows = [[noise["name"], m, stats.fmt(v["run1"]), stats.fmt(v["run2"]),
             f"{stats.fmt(v['rel_diff'] * 100, 2)} %"] for m, v in noise["metrics"].items()]
    note = ("The reference case run twice in the same run (first and last); relative "
            "difference = |a − b| / mean(a, b) of the medians. A difference between "
            "implementations smaller than this is not measured by a single run.")
    return Table("NOISE", "Noise", "", "Noise between identical runs",
                 ["Reference case", "Metric", "Run 1", "Run 2", "Relative difference"], rows, note)


def machine(e):
    isa = f" ({e['isa']})" if e.get("isa") else ""
    cc = f", {e['cc']}" if e.get("cc") else ""
    return (f"{e.get('cpu')}{isa}, {e.get('cores')} cores, "
            f"{round((e.get('memory_kb') or 0) / 1048576, 1)} GiB RAM{cc}")


def environment_text(run):
    if not run or not run.get("env"):
        return ""
    e = run["env"]
    text = (f"Environment: {machine(e)}, Linux {e.get('kernel')}, "
            f"obl {e.get('git')}, run {run.get('time')}.")
    if run.get("plugins"):
        text += f"\n\nImplementations (plug-ins, benchmark/): {', '.join(run['plugins'])}."
    for skip in run.get("plugins_skipped") or []:
        text += f"\nPlug-in {skip['name']} skipped: {skip['reason']}."
    return text


def machine_text(run):
    """The run's machine and commit, without its time: the README's line."""
    if not run or not run.get("env"):
        return ""
    return f"{machine(run['env'])}, commit {run['env'].get('git')}."


def results_page(full):
    """The results file: a title, where it comes from, the full tables."""
    return ("# Results of the latest suite run\n\n"
            "Written by `scripts/generate_readme_bodies.py --write-results` (go.sh runs it) "
            "from the run's results/; every table of the run, its DERIVED fits, lines of "
            "code and noise. How the suite measures: docs/suite.md; what each type and "
            "metric means: docs/benchmark-format.md. Earlier runs: this file's git history.\n\n"
            f"{tables.BEGIN}\n{full.rstrip(chr(10))}\n{tables.END}\n")


def write_file(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def all_tables(records, noise, root, spread):
    out = tables.measured_tables(records, spread)
    run_records = [r for r in records if r.get("origin") != "extra"]
    ramps = ramp.tables(run_records)
    summary = tables.summary_table(out + ramps)
    if summary is not None:
        out.append(summary)
    out += ramps
    out += mpi.tables(run_records)
    for t in (fits.latency_table(run_records), fits.memory_table(run_records),
              sharded.time_split_table(run_records), sharded.targets_table(run_records),
              loc.loc_table(root), noise_table(noise)):
        if t is not None:
            out.append(t)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--main", action="store_true", help="only the README's curated tables")
    p.add_argument("--write-readme", action="store_true",
                   help="refresh the curated tables in README.md (implies --main)")
    p.add_argument("--readme", default=os.path.join(inputs.ROOT, "README.md"))
    p.add_argument("--write-results", metavar="FILE",
                   help="write every table to FILE as a results page (docs/results/latest.md)")
    p.add_argument("--results", default=inputs.DEFAULT_RESULTS, help="results.json to read")
    p.add_argument("--log", action="append", default=[],
                   help="read this log instead of results.json (repeatable)")
    p.add_argument("--extra-log", action="append", default=[],
                   help="REPORT lines of other implementations to show alongside (repeatable)")
    p.add_argument("--spread", choices=("minmax", "iqr", "none"), default="minmax")
    p.add_argument("--root", default=inputs.ROOT, help="source tree for the lines-of-code table")
    args = p.parse_args(argv)
    records, noise, run, drift = inputs.gather(args.results, args.log, args.extra_log)
    tabs = all_tables(records, noise, args.root, args.spread)
    full = tables.render_all([t for t in tabs if t.key != tables.SUMMARY_KEY])
    env = environment_text(run)
    if env:
        full = env + "\n\n" + full
    if noise:
        full = full.rstrip("\n") + "\n\n" + runner.noise_line(noise) + "\n"
    if drift:
        full = full.rstrip("\n") + "\n\n" + runner.drift_line(drift) + "\n"
    if args.write_results:
        os.makedirs(os.path.dirname(os.path.abspath(args.write_results)), exist_ok=True)
        write_file(args.write_results, results_page(full))
        print(f"generate_readme_bodies: {args.write_results} written", file=sys.stderr)
    if args.main or args.write_readme:
        try:
            with open(args.readme, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            print(f"generate_readme_bodies: {args.readme} does not exist", file=sys.stderr)
            return 1
        try:
            new = tables.refresh(text, tabs, machine_text(run))
        except ValueError as e:
            print(f"generate_readme_bodies: error: {e}; nothing written", file=sys.stderr)
            return 1
        if args.write_readme:
            if new != text:
                write_file(args.readme, new)
            print(f"generate_readme_bodies: {args.readme} "
                  f"{'updated' if new != text else 'unchanged'}", file=sys.stderr)
        else:
            begin = new.index(tables.BEGIN) + len(tables.BEGIN)
            sys.stdout.write(new[begin:new.index(tables.END, begin)].strip("\n") + "\n")
        return 0
    sys.stdout.write(full)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError) as e:
        print(f"generate_readme_bodies: error: {e}", file=sys.stderr)
        sys.exit(1)
