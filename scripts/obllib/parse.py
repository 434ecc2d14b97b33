# SPDX-License-Identifier: MIT
"""Read benchmark output into normalised records.

A record is a dict:
  report_type  "RORAM", "UnorderedMap", ...  impl    "obl", "baseline_array", a peer
  params       {"N": 1024, "Key_bytes": 8, ...}  (run-control params removed)
  metrics      {"Read_latency_us": {"median", "min", "max", "q1", "q3", "reps"}}
  env          dict (may be empty)                source  file it came from
  bench, case  obl-bench subcommand and case name, when known

Three inputs are understood, detected per line:
  * REPORT lines, ours and the public harness's:
      REPORT_123<TYPE>|<impl>|<env>| name := value | ... REPORT_123
    The public harness writes its environment as `sys_* := v` fields instead
    of one tag, may omit spaces (`N:=1024`), may print one metric per line,
    and may repeat a case; lines of one case are merged, and repeated values
    of a metric are summarised by their median and min-max.
  * obl-bench JSONL records ({"schema": "obl-bench/1", ...}).
  * full-run logs of scripts/run.py (events; see runner.py): the records of
    case_end events.
"""
import json
import re

from . import stats

REPORT_RE = re.compile(r"REPORT_123(.*?)REPORT_123")

# Parameters that end in a unit-like suffix but are not measurements.
PARAM_NAMES = {"N", "Key_bytes", "Value_bytes", "P", "B", "S", "Fill"}
# Run-control parameters: they do not identify what was measured.
CONTROL_PARAMS = {"queries", "Queries", "reps", "seed", "batches", "cpu"}

# Older or alternative names of the harness's types -> its own
# (docs/benchmark-format.md). A Sharded-UMAP line is the harness's
# UnorderedMap of an implementation named <impl>_sharded.
TYPE_ALIASES = {"UMAP": "UnorderedMap", "Sharded-UMAP": "UnorderedMap",
                "LB": "LOADBALANCE", "LoadBalance": "LOADBALANCE"}


def canonical(report_type, impl):
    """(report_type, impl) under the harness's names."""
    if report_type == "Sharded-UMAP" and not impl.endswith("_sharded"):
        impl += "_sharded"
    return TYPE_ALIASES.get(report_type, report_type), impl
METRIC_SUFFIXES = ("_us", "_ns", "_ms", "_s", "_qps", "_kb", "_mb", "_bytes",
                   "_per_entry", "_per_query", "_ratio")
# Measured counts without a unit suffix (Ramp-UMAP, obl-load's REPORT lines;
# the balancers' shard batch, obl's and the peers'; the engine obl's sharded
# map chose).
METRIC_NAMES = {"Batch_size_avg", "Batch_size_p50", "Batch_size_p99", "Batch_size_max",
                "Batches", "Requests", "Answered", "Lost", "Errors", "Shard_batch_entries",
                "Shard_batch_b", "Engine"}

SPREAD_KEYS = ("median", "min", "max", "q1", "q3")


def parse_value(text):
    """'1024' -> 1024, '1.5' -> 1.5, '2^20' -> 1048576, else the string."""
    text = text.strip()
    m = re.fullmatch(r"2\s*\^\s*(\d+)", text)
    if m:
        return 2 ** int(m.group(1))
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def is_metric(name):
    if name in PARAM_NAMES:
        return False
    return (name == "Bytes_per_entry" or name in METRIC_NAMES
            or name.startswith("Batches_size_") or name.lower().endswith(METRIC_SUFFIXES))


def parse_report_body(body):
    """The text between the two REPORT_123 markers -> partial record."""
    fields = body.split("|")
    if len(fields) < 2 or not fields[0].strip() or not fields[1].strip():
        return None
    rtype, impl = canonical(fields[0].strip(), fields[1].strip())
    rec = {"report_type": rtype, "impl": impl, "params": {}, "metrics": {}, "env": {},
           "control": {}}
    for field in fields[2:]:
        name, sep, value = field.partition(":=")
        name = name.strip()
        if not sep:
            if name:  # our single environment tag
                rec["env"].setdefault("tag", name)
            continue
        val = parse_value(value)
        if name.startswith("sys_"):
            rec["env"][name] = val
        elif name in CONTROL_PARAMS:
            rec["control"][name] = val
        elif is_metric(name) and isinstance(val, (int, float)):
            rec["metrics"][name] = val
        else:
            rec["params"][name] = val
    # the load balancer's size is its batch B; obl-bench records it as N
    if rec["report_type"] == "LOADBALANCE" and "B" in rec["params"]:
        rec["params"].setdefault("N", rec["params"].pop("B"))
    return rec


def parse_report_line(line):
    """All REPORT bodies on one line -> list of partial records."""
    out = []
    for m in REPORT_RE.finditer(line):
        rec = parse_report_body(m.group(1))
        if rec is not None:
            out.append(rec)
    return out


def identity(rec):
    """What a record measured: type, implementation, parameters."""
    params = tuple(sorted((k, repr(v)) for k, v in rec["params"].items()
                          if k not in CONTROL_PARAMS))
    return (rec["report_type"], rec["impl"], params)


def records_from_reports(lines, source):
    """Merge REPORT lines of one case; repeated values -> median and range."""
    merged = {}
    for line in lines:
        for part in parse_report_line(line):
            key = identity(part)
            slot = merged.setdefault(key, {"report_type": part["report_type"],
                                           "impl": part["impl"],
                                           "params": dict(part["params"]),
                                           "env": part["env"], "values": {}})
            for name, value in part["metrics"].items():
                slot["values"].setdefault(name, []).append(float(value))
    out = []
    for slot in merged.values():
        metrics = {}
        for name, values in slot.pop("values").items():
            summary = stats.summarize(values)
            summary["reps"] = None  # unknown: each value is already a summary
            summary["lines"] = len(values)
            metrics[name] = summary
        slot["metrics"] = metrics
        slot["source"] = source
        out.append(slot)
    return out


def objects_from_reports(lines, bench=None):
    """REPORT lines of one case (a plug-in's run.sh, one line per repetition)
    -> obl-bench-like JSONL objects, one per identity, each metric's values
    as its samples, so that rounds pool as obl-bench's records do."""
    order, groups = [], {}
    for line in lines:
        for part in parse_report_line(line):
            key = identity(part)
            if key not in groups:
                order.append(key)
                groups[key] = {"schema": "report/1", "bench": bench,
                               "report_type": part["report_type"], "impl": part["impl"],
                               "params": dict(part["params"], **part["control"]),
                               "env": part["env"], "metrics": {}, "report": line.strip()}
            for name, value in part["metrics"].items():
                groups[key]["metrics"].setdefault(name, {"samples": []})["samples"].append(
                    float(value))
    out = []
    for key in order:
        obj = groups[key]
        for m in obj["metrics"].values():
            m.update(stats.summarize(m["samples"]))
            m["reps"] = len(m["samples"])
        out.append(obj)
    return out


def normalise_metric(m):
    """A metric object of obl-bench JSONL -> our summary dict."""
    if isinstance(m, (int, float)):
        return {"median": float(m), "min": float(m), "max": float(m),
                "q1": float(m), "q3": float(m), "reps": 1}
    out = {}
    samples = m.get("samples")
    if samples and any(k not in m for k in SPREAD_KEYS):
        out.update(stats.summarize(samples))
    for k in SPREAD_KEYS:
        if m.get(k) is not None:
            out[k] = float(m[k])
    if "median" not in out:
        raise ValueError("metric without a median")
    for k in SPREAD_KEYS:
        out.setdefault(k, out["median"])
    out["reps"] = m.get("reps", len(samples) if samples else None)
    if m.get("rounds"):
        out["rounds"] = m["rounds"]
    return out


def record_from_json(obj, source):
    """One obl-bench JSONL object -> record."""
    params = {k: v for k, v in obj.get("params", {}).items()}
    control = {k: params.pop(k) for k in list(params) if k in CONTROL_PARAMS}
    rtype, impl = canonical(obj["report_type"], obj["impl"])
    return {"report_type": rtype, "impl": impl,
            "bench": obj.get("bench"), "params": params, "control": control,
            "metrics": {k: normalise_metric(v) for k, v in obj.get("metrics", {}).items()},
            "env": obj.get("env", {}), "source": source,
            "report": obj.get("report")}


def read_jsonl(path):
    """Objects of a JSONL file; a truncated last line (killed run) is ignored."""
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines) or all(not x.strip() for x in lines[number:]):
                break
            raise ValueError(f"{path}:{number}: not valid JSON")
    return out


def load_any(path):
    """Records from any supported file: full-run log, obl-bench JSONL, text log."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    first = text.lstrip()[:1]
    if first == "{":
        try:
            objs = read_jsonl(path)
        except ValueError:
            objs = None
        if objs is not None:
            if any("event" in o for o in objs):
                return records_from_events(objs, path)
            if all("schema" in o for o in objs):
                return [record_from_json(o, path) for o in objs]
    return records_from_reports(text.splitlines(), path)


def json_identity(obj):
    """identity() of an obl-bench JSONL object."""
    params = tuple(sorted((k, repr(v)) for k, v in obj.get("params", {}).items()
                          if k not in CONTROL_PARAMS))
    return (obj.get("report_type"), obj.get("impl"), params)


def merge_rounds(objs):
    """obl-bench JSONL objects of the same cases from several rounds of a run
    (scripts/run.py --rounds) -> one object per case, in first-seen order:
    each metric's samples are pooled and its median, min, max and quartiles
    recomputed over them ("rounds": how many objects were pooled); a metric
    without samples in some round keeps its last value. A case seen once is
    returned as it was."""
    order, groups = [], {}
    for obj in objs:
        key = json_identity(obj)
        if key not in groups:
            order.append(key)
            groups[key] = []
        groups[key].append(obj)
    out = []
    for key in order:
        group = groups[key]
        if len(group) == 1:
            out.append(group[0])
            continue
        merged = dict(group[-1])
        merged["params"] = dict(group[-1].get("params", {}))
        if all("reps" in g.get("params", {}) for g in group):
            merged["params"]["reps"] = sum(g["params"]["reps"] for g in group)
        metrics = {}
        for name in group[-1].get("metrics", {}):
            parts = [g.get("metrics", {}).get(name) for g in group]
            if all(isinstance(m, dict) and m.get("samples") for m in parts):
                samples = [float(x) for m in parts for x in m["samples"]]
                metrics[name] = dict(stats.summarize(samples), samples=samples,
                                     rounds=len(parts))
            else:
                metrics[name] = group[-1]["metrics"][name]
        merged["metrics"] = metrics
        merged["rounds"] = len(group)
        out.append(merged)
    return out


def records_from_events(events, source):
    """Measured records of a full-run log (the noise and drift repeats are
    excluded), the rounds of a case pooled (merge_rounds)."""
    objs, case_of = [], {}
    for ev in events:
        if ev.get("event") == "case_end" and not ev.get("repeat"):
            for obj in ev.get("records", []):
                objs.append(obj)
                case_of.setdefault(json_identity(obj), ev.get("name"))
    out = []
    for obj in merge_rounds(objs):
        rec = record_from_json(obj, source)
        rec["case"] = case_of.get(json_identity(obj))
        out.append(rec)
    return out


def run_info(events):
    """run_start, run_end, noise and drift events of a full-run log."""
    info = {"run_start": None, "run_end": None, "noise": None, "drift": None}
    for ev in events:
        if ev.get("event") in info:
            info[ev["event"]] = ev
    return info


def dedupe(records):
    """Keep the last record of each identity (later files override)."""
    seen = {}
    for rec in records:
        seen[identity(rec)] = rec
    return list(seen.values())
