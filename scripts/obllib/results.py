# SPDX-License-Identifier: MIT
"""results/: what a run measured, in JSON and CSV.

  results/results.json     {"run": run_start, "run_end", "noise", "cases": [outcomes],
                            "records": [normalised records]}
  results/results.csv      one row per case (failed, skipped, timed out included)
  results/<TYPE>.csv       one row per measured record of that benchmark type
Metric columns: <metric> is the median, then <metric>_min, _max, _q1, _q3.
"""
import csv
import io
import json
import os

from . import parse

TERMINAL = {"case_end": "ok", "case_failed": "failed", "case_timeout": "timeout",
            "case_skipped": "skipped"}


def outcomes(events):
    """Per case, in run order: the case and how it ended (noise repeat
    excluded). With rounds (scripts/run.py --rounds), a case's records are
    those of every round, pooled (parse.merge_rounds), and a round that did
    not end ok decides its outcome."""
    order, out = [], {}
    cases = {}
    for ev in events:
        if ev.get("repeat"):
            continue
        kind = ev.get("event")
        name = ev.get("name")
        prev = out.get(name)
        if prev is not None and prev["outcome"] not in ("ok", "started"):
            continue  # an earlier round failed, timed out or was skipped
        if kind == "case_start":
            cases[name] = ev.get("case", {})
            if name not in out:
                order.append(name)
            out[name] = {"name": name, "case": cases[name], "outcome": "started",
                         "reason": "no end event (run interrupted?)",
                         "records": (prev or {}).get("records", [])}
        elif kind in TERMINAL:
            if name not in out:
                order.append(name)
            case = ev.get("case") or cases.get(name, {})
            row = {"name": name, "case": case, "outcome": TERMINAL[kind],
                   "reason": ev.get("reason") or ev.get("message") or "",
                   "exit_code": ev.get("exit_code"), "signal": ev.get("signal"),
                   "elapsed_s": ev.get("elapsed_s")}
            if kind == "case_skipped":
                row["reason"] = f"{ev.get('reason')}: {ev.get('message', '')}".rstrip(": ")
            if kind == "case_end":
                row["records"] = parse.merge_rounds(((prev or {}).get("records") or [])
                                                    + ev.get("records", []))
            out[name] = row
    return [out[n] for n in order]


def _metric_columns(records):
    names = []
    for rec in records:
        for m in rec["metrics"]:
            if m not in names:
                names.append(m)
    cols = []
    for m in names:
        cols += [m, f"{m}_min", f"{m}_max", f"{m}_q1", f"{m}_q3"]
    return names, cols


def _metric_values(rec, names):
    row = {}
    for m in names:
        v = rec["metrics"].get(m)
        if v:
            row[m] = v["median"]
            for k in ("min", "max", "q1", "q3"):
                row[f"{m}_{k}"] = v.get(k)
    return row


def _param_names(items):
    names = []
    for params in items:
        for k in params:
            if k not in names:
                names.append(k)
    return names


def outcomes_csv(rows, source="run"):
    """The per-case CSV (run.py's stdout): outcome, reason, parameters, metrics."""
    recs = []
    for row in rows:
        for obj in row.get("records") or [None]:
            rec = parse.record_from_json(obj, source) if obj else None
            recs.append((row, rec))
    params = _param_names([r[0]["case"].get("params", {}) for r in recs])
    names, mcols = _metric_columns([r for _, r in recs if r])
    head = ["case", "bench", "report_type", "impl", "outcome", "reason", "exit_code",
            "signal", "elapsed_s"] + params + ["reps"] + mcols
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=head, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for row, rec in recs:
        case = row["case"]
        line = {"case": row["name"], "bench": case.get("bench"),
                "report_type": (rec or {}).get("report_type") or case.get("report_type"),
                "impl": (rec or {}).get("impl") or case.get("impl"),
                "outcome": row["outcome"], "reason": row.get("reason", ""),
                "exit_code": row.get("exit_code"), "signal": row.get("signal"),
                "elapsed_s": row.get("elapsed_s")}
        line.update(case.get("params", {}))
        if rec:
            line.update(rec["params"])
            line["reps"] = (rec.get("control") or {}).get("reps") or next(
                (v.get("reps") for v in rec["metrics"].values() if v.get("reps")), None)
            line.update(_metric_values(rec, names))
        w.writerow(line)
    return buf.getvalue()


def records_csv(records):
    params = _param_names([r["params"] for r in records])
    names, mcols = _metric_columns(records)
    head = ["report_type", "impl", "source"] + params + mcols
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=head, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for rec in records:
        line = {"report_type": rec["report_type"], "impl": rec["impl"],
                "source": os.path.basename(rec.get("source") or "")}
        line.update(rec["params"])
        line.update(_metric_values(rec, names))
        w.writerow(line)
    return buf.getvalue()


def _type_csv(out_dir, rtype):
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in rtype)
    return os.path.join(out_dir, f"{safe}.csv")


def _remove_old_type_csvs(out_dir):
    """The per-type CSVs of the previous results, so no stale type lingers."""
    try:
        old = load_results(os.path.join(out_dir, "results.json"))
    except (OSError, ValueError):
        return
    for rtype in {r.get("report_type") for r in old.get("records", []) if r.get("report_type")}:
        try:
            os.unlink(_type_csv(out_dir, rtype))
        except OSError:
            pass


def write_results(out_dir, events, log_path):
    """Write results/ from the events of one full run."""
    os.makedirs(out_dir, exist_ok=True)
    _remove_old_type_csvs(out_dir)
    rows = outcomes(events)
    records = parse.dedupe(parse.records_from_events(events, log_path))
    info = parse.run_info(events)
    doc = {"log": log_path, "run": info["run_start"], "run_end": info["run_end"],
           "noise": info["noise"], "drift": info["drift"],
           "cases": [{k: v for k, v in r.items() if k != "records"} for r in rows],
           "records": records}
    with open(os.path.join(out_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    with open(os.path.join(out_dir, "results.csv"), "w", encoding="utf-8") as f:
        f.write(outcomes_csv(rows, log_path))
    by_type = {}
    for rec in records:
        by_type.setdefault(rec["report_type"], []).append(rec)
    for rtype, recs in by_type.items():
        with open(_type_csv(out_dir, rtype), "w", encoding="utf-8") as f:
            f.write(records_csv(recs))
    return doc


def load_results(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
