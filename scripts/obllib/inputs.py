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


def gather_drift(results_path=None, logs=()):
    """The drift event of the run the tables come from, or None."""
    try:
        if logs:
            drift = None
            for path in logs:
                if path.endswith(".jsonl"):
                    drift = parse.run_info(parse.read_jsonl(path))["drift"] or drift
            return drift
        path = results_path or DEFAULT_RESULTS
        return results.load_results(path).get("drift") if os.path.exists(path) else None
    except (OSError, ValueError):
        return None


def gather(results_path=None, logs=(), extra_logs=()):
    """-> (records, noise event or None, run_start event or None)."""
    records, noise, run = [], None, None
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
        noise, run = doc.get("noise"), doc.get("run")
    for path in extra_logs:
        recs = parse.load_any(path)
        if not recs:
            raise ValueError(f"{path}: no REPORT lines or records found")
        for r in recs:
            r["origin"] = "extra"
        records += recs
    return parse.dedupe(records), noise, run
