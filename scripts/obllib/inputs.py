# SPDX-License-Identifier: MIT
"""Where tables and figures get their records from.

Default: results/results.json of the last run. --log FILE (repeatable):
full-run logs, obl-bench JSONL or text logs with REPORT lines, read instead,
as results of our own runs. --extra-log FILE (repeatable): other
implementations' logs (REPORT lines of the public harness or ours), shown
side by side and marked as coming from elsewhere.
"""
import os

from . import parse, results

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_RESULTS = os.path.join(ROOT, "results", "results.json")


def gather(results_path=None, logs=(), extra_logs=()):
    """-> (records, noise event or None, run_start event or None, drift
    event or None)."""
    records, noise, run, drift = [], None, None, None
    if logs:
        for path in logs:
            recs = parse.load_any(path)
            for r in recs:
                r["origin"] = "run"
            records += recs
            if path.endswith(".jsonl"):
                try:
                    info = parse.run_info(parse.read_jsonl(path))
                    noise = info["noise"] or noise
                    run = info["run_start"] or run
                    drift = info["drift"] or drift
                except ValueError:
                    pass
    else:
        path = results_path or DEFAULT_RESULTS
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} does not exist: run `sh go.sh` or scripts/run.py "
                                    "first, or pass --log FILE")
        doc = results.load_results(path)
        records = doc.get("records", [])
        for r in records:
            r["origin"] = "run"
        noise, run, drift = doc.get("noise"), doc.get("run"), doc.get("drift")
    for path in extra_logs:
        recs = parse.load_any(path)
        if not recs:
            raise ValueError(f"{path}: no REPORT lines or records found")
        for r in recs:
            r["origin"] = "extra"
        records += recs
    return parse.dedupe(records), noise, run, drift
