#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Run the obl benchmark plan, one process per case, or read a saved run.

  scripts/run.py [--max-n N] [--large] [--timeout S] [--reps R]   run the plan
  scripts/run.py --mpi 2,3,4 ...                                  add the MPI cases
  BENCHMARK_MODE=plan scripts/run.py > cases.txt                  list, run nothing
  BENCHMARK_SELECTOR=cases.txt scripts/run.py                     run the selection
  scripts/run.py logs/full_runs/FILE.jsonl > results.csv          parse a saved run
  scripts/run.py --cases logs/full_runs/FILE.jsonl > cases.txt    case list of a run

A run writes logs/full_runs/<timestamp>.jsonl (every event), results/ (JSON,
CSV, one CSV per benchmark type) and prints the per-case CSV on stdout;
progress goes to stderr. Exit status 1 when any case failed or timed out.
See docs/suite.md.
"""
import argparse
import datetime
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from obllib import mpi, parse, plan, plugins, results, runner  # noqa: E402
from obllib.inputs import ROOT  # noqa: E402


def default_bench_bin():
    return os.environ.get("OBL_BENCH") or os.path.join(ROOT, "build", "bench", "obl-bench")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log", nargs="?", help="a saved full-run log: print its CSV, run nothing")
    p.add_argument("--cases", metavar="LOG", help="print the case list of a saved full-run log")
    p.add_argument("--max-n", type=int, help="largest N of the plan (obl-bench list-cases --max-n)")
    p.add_argument("--large", action="store_true", help="the large plan: N up to what fits in memory")
    p.add_argument("--mpi", metavar="RANKS",
                   help="add the Sharded-UMAP and Ramp-UMAP cases over MPI with these rank "
                        "counts (e.g. 3 or 2,3,4; one balancer, the other ranks shards; "
                        "docs/mpi.md) and the threaded map at the same S")
    p.add_argument("--timeout", type=float,
                   help="per-case timeout in seconds (default: max(60, 10 x the case's estimate))")
    p.add_argument("--reps", type=int, help="repetitions per case and round (default: obl-bench's)")
    p.add_argument("--rounds", type=int, default=int(os.environ.get("OBL_BENCH_ROUNDS") or 2),
                   help="run the plan this many times, forward and backward in turn, and pool "
                        "each case's repetitions (default 2, or $OBL_BENCH_ROUNDS; docs/suite.md)")
    p.add_argument("--bench-bin", default=default_bench_bin(),
                   help="obl-bench binary (default: $OBL_BENCH or build/bench/obl-bench)")
    p.add_argument("--plan", action="store_true", help="same as BENCHMARK_MODE=plan")
    p.add_argument("--selector", default=os.environ.get("BENCHMARK_SELECTOR") or None,
                   help="case list to run (default: $BENCHMARK_SELECTOR)")
    p.add_argument("--noise-case", metavar="NAME",
                   help="case run twice to measure noise (default: the first obl case, else the first case)")
    p.add_argument("--no-noise", action="store_true", help="do not measure noise")
    p.add_argument("--results", default=os.path.join(ROOT, "results"), help="results directory")
    p.add_argument("--log-dir", default=os.path.join(ROOT, "logs", "full_runs"),
                   help="directory of full-run logs")
    p.add_argument("--bench-arg", action="append", default=[], metavar="ARG",
                   help="extra argument passed to every case (repeatable)")
    p.add_argument("--plugins-dir", default=os.environ.get("OBL_PLUGINS_DIR")
                   or os.path.join(ROOT, "benchmark"),
                   help="directory of the implementations' plug-ins (default: $OBL_PLUGINS_DIR "
                        "or benchmark/; docs/suite.md, \"Plug-ins\")")
    p.add_argument("--peers", default=os.environ.get("OBL_PEERS"),
                   help="comma-separated peer plug-ins to run, or none (default: $OBL_PEERS, "
                        "else every peer whose setup succeeds)")
    p.add_argument("--cpu", default=os.environ.get("OBL_BENCH_CPU") or "auto",
                   help="pin every case to one CPU: auto (default, or $OBL_BENCH_CPU): the "
                        "fastest in a short probe, logged; none; or a CPU number")
    args = p.parse_args(argv)
    mode = os.environ.get("BENCHMARK_MODE", "run") or "run"
    if mode not in ("run", "plan"):
        p.error(f"BENCHMARK_MODE must be run or plan, not {mode!r}")
    args.plan = args.plan or mode == "plan"
    if args.rounds < 1:
        p.error(f"--rounds must be at least 1, not {args.rounds}")
    try:
        args.mpi_ranks = mpi.parse_ranks(args.mpi) if args.mpi else []
    except ValueError as e:
        p.error(str(e))
    if args.cpu not in ("auto", "none"):
        allowed = runner.allowed_cpus()
        if not re.fullmatch(r"[0-9]+", args.cpu) or (allowed and int(args.cpu) not in allowed):
            p.error(f"--cpu must be auto, none or a CPU this process may use "
                    f"({', '.join(map(str, allowed))}), not {args.cpu!r}")
    return args


def cases_from_log(path):
    events = parse.read_jsonl(path)
    rows = results.outcomes(events)
    entries = []
    for row in rows:
        case = row["case"]
        if not case:
            continue
        ran = row["outcome"] != "skipped" or row["reason"].startswith("memory")
        comment = row["outcome"] + (f": {row['reason']}" if row.get("reason") else "")
        entries.append(("run" if ran else "skip", case, comment.replace("\n", " ")))
    return plan.format_case_list(entries, extra_header=f"cases of {path}")


def select(cases, selector_path):
    """-> (cases to run, [(case, reason) skipped], [unknown selector entries])."""
    with open(selector_path, encoding="utf-8") as f:
        entries = plan.parse_case_list(f.read())
    chosen = {plan.identity(e["bench"], e["impl"], e["params"]): e for e in entries}
    run, skipped = [], []
    for c in cases:
        e = chosen.pop(plan.case_identity(c), None)
        if e is None:
            skipped.append((c, "not in the case list"))
        elif e["run"]:
            run.append(c)
        else:
            skipped.append((c, f"{e['action']} in the case list (line {e['line']})"))
    return run, skipped, list(chosen.values())


def plan_text(cases, args, skipped_plugins=()):
    total_s = sum(float(c.get("est_seconds") or 0) for c in cases)
    peak = max([c.get("est_memory_bytes") or 0 for c in cases] or [0])
    flags = " ".join(x for x in (f"--max-n {args.max_n}" if args.max_n else "",
                                 "--large" if args.large else "") if x)
    head = (f"plan of {os.path.basename(args.bench_bin)} list-cases {flags}".rstrip()
            + f" and the plug-ins: {len(cases)} cases, est. {total_s:.0f} s, largest case est. "
            + runner.stats.fmt_bytes(peak))
    by_plugin = {}
    for c in cases:
        by_plugin.setdefault(c.get("plugin") or "obl-bench", []).append(c)
    for name, cs in by_plugin.items():
        est = sum(float(c.get("est_seconds") or 0) for c in cs)
        head += f"\nplug-in {name}: {len(cs)} cases, est. {est:.0f} s"
    for name, why in skipped_plugins:
        head += f"\nplug-in {name}: skipped: {why}"
    return plan.format_case_list([("run", c) for c in cases], extra_header=head)


def gather_cases(args, large, stream=sys.stderr):
    """obl-bench's plan and the plug-ins' cases, each plug-in set up and built
    first (a peer that cannot be is skipped, with its reason).
    -> (cases, {name: Plugin} of the plug-ins that run, [(name, reason)])."""
    found = plugins.discover(args.plugins_dir)
    bench_cases = runner.list_cases(args.bench_bin, args.max_n, large)
    native = plugins.assign_bench_cases(found, bench_cases)
    if not native:  # no obl-bench plug-in: obl-bench's plan as it is
        native = {"obl-bench": bench_cases}
    peers = plugins.peers_from_env(args.peers)
    cases, ready, skipped = [], {}, []
    for name in native:
        cases += native[name]
    for p in found:
        why = plugins.wanted(p, peers)
        if why is None and p.manifest.get("plan") != "obl-bench":
            print(f"run.py: setting up and building plug-in {p.name}", file=stream, flush=True)
            why = plugins.prepare(p, ROOT, args.bench_bin)
        if why is not None:
            print(f"run.py: plug-in {p.name} skipped: {why}", file=stream, flush=True)
            skipped.append((p.name, why))
            continue
        ready[p.name] = p
        if p.manifest.get("plan") != "obl-bench":
            cases += plugins.manifest_cases(p, args.max_n or (None if large else DEFAULT_MAX_N))
    if args.mpi_ranks:
        extra = mpi.cases(args.bench_bin, args.mpi_ranks, args.max_n, existing=cases)
        if not extra:
            print("run.py: --mpi: obl-mpi (build/src/mpi) or mpirun missing: no MPI cases "
                  "(scripts/install-deps.sh installs Open MPI)", file=stream, flush=True)
        cases += extra
    return cases, ready, skipped


NOISE_MAX_N = 2 ** 16
# The plug-ins' largest N without --max-n or --large, as obl-bench's plan.
DEFAULT_MAX_N = 2 ** 20


def find_noise_case(cases, name):
    if name is None:
        # An oblivious implementation's case (a baseline case takes
        # nanoseconds and its noise says nothing about the structures
        # measured), the largest one with N <= 2^16: the smallest cases run
        # for milliseconds and measure timer and scheduling jitter more than
        # the machine's run-to-run noise.
        obl = [c for c in cases if c.get("impl") == "obl"]
        mid = [c for c in obl if (c.get("params") or {}).get("N", 0) <= NOISE_MAX_N]
        if mid:
            top = max(c["params"]["N"] for c in mid)
            return next(c for c in mid if c["params"]["N"] == top)
        if obl:
            return obl[0]
        return cases[0] if cases else None
    for c in cases:
        if plan.case_name(c) == name:
            return c
    raise SystemExit(f"run.py: --noise-case {name!r} is not a case of this run")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.cases:
        sys.stdout.write(cases_from_log(args.cases))
        return 0
    if args.log:
        events = parse.read_jsonl(args.log)
        sys.stdout.write(results.outcomes_csv(results.outcomes(events), args.log))
        return 0
    if not os.access(args.bench_bin, os.X_OK):
        print(f"run.py: {args.bench_bin} not found or not executable; build it first "
              "(sh go.sh, or cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && "
              "cmake --build build) or pass --bench-bin", file=sys.stderr)
        return 2
    if args.plan:
        cases, _, skipped_plugins = gather_cases(args, args.large)
        sys.stdout.write(plan_text(cases, args, skipped_plugins))
        return 0
    # With a case list the list decides: match it against the large plan
    # unless --max-n bounds it, so cases listed with --large are found.
    large = args.large or (args.selector is not None and args.max_n is None)
    cases, ready, skipped_plugins = gather_cases(args, large)
    skipped = []
    if args.selector:
        cases, skipped, unknown = select(cases, args.selector)
        for e in unknown:
            print(f"run.py: warning: {args.selector}:{e['line']}: {e['bench']} {e['impl']} "
                  f"{plan.params_text(e['params'])} is not a case of obl-bench's plan; ignored",
                  file=sys.stderr)
        missing = sum(1 for _, why in skipped if why == "not in the case list")
        if missing:
            print(f"run.py: {missing} plan cases not in {args.selector} were skipped",
                  file=sys.stderr)
    noise_case = None if args.no_noise else find_noise_case(cases, args.noise_case)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    log_path = os.path.join(args.log_dir, f"{stamp}.jsonl")
    n = 1
    while os.path.exists(log_path):
        n += 1
        log_path = os.path.join(args.log_dir, f"{stamp}-{n}.jsonl")
    log = runner.EventLog(log_path)
    env = runner.environment(ROOT)
    log.emit("run_start", argv=sys.argv, bench_bin=args.bench_bin, max_n=args.max_n,
             large=large, selector=args.selector, reps=args.reps, rounds=args.rounds,
             timeout=args.timeout,
             env=env, types=runner.list_types(args.bench_bin), cases=len(cases),
             plugins=sorted(ready),
             plugins_skipped=[{"name": n, "reason": why} for n, why in skipped_plugins],
             noise_case=plan.case_name(noise_case) if noise_case else None)
    for name, why in skipped_plugins:
        log.emit("plugin_skipped", name=name, reason=why)
    for c, why in skipped:
        log.emit("case_skipped", name=plan.case_name(c), reason="selector", message=why, case=c)
    total_s = sum(float(c.get("est_seconds") or 0) for c in cases) * args.rounds
    print(f"run.py: {len(cases)} cases x {args.rounds} rounds, est. {total_s:.0f} s; "
          f"log {os.path.relpath(log_path)}", file=sys.stderr)
    start = runner.time.monotonic()
    bench_args = list(args.bench_arg)
    cpu = runner.choose_cpu(args.bench_bin, args.cpu, log) if cases else None
    if cpu is not None:
        bench_args += ["--cpu", str(cpu)]
    counts, noise = runner.run_plan(args.bench_bin, cases, log, args.timeout, args.reps,
                                    noise_case, bench_args,
                                    drift_case=runner.drift_case_for(cases, noise_case),
                                    rounds=args.rounds, plugins=ready)
    counts["skipped"] += len(skipped)
    failed = counts["failed"] + counts["timeout"] > 0
    log.emit("run_end", elapsed_s=round(runner.time.monotonic() - start, 1), counts=counts,
             failed=failed)
    log.close()
    results.write_results(args.results, log.events, log_path)
    sys.stdout.write(results.outcomes_csv(results.outcomes(log.events), log_path))
    print(f"run.py: {counts['ok']} ok, {counts['failed']} failed, {counts['timeout']} timed out, "
          f"{counts['skipped']} skipped; results in {os.path.relpath(args.results)}/",
          file=sys.stderr)
    for name, why in skipped_plugins:
        print(f"run.py: plug-in {name} was skipped: {why}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, ValueError, OSError) as e:
        print(f"run.py: error: {e}", file=sys.stderr)
        sys.exit(2)
