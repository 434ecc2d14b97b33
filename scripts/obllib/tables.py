# SPDX-License-Identifier: MIT
"""Markdown tables, the README's compact table and its refresh.

One table per (benchmark type, fixed parameters, metric): rows by N, columns
by implementation, each cell the median with its spread. Every implementation
measured in the run gets a ratio column: its median divided by the median of
the non-oblivious baseline of the same run (baseline_array for NRORAM and
RORAM, baseline_hashmap for the map types), matched on N, Key_bytes and
Value_bytes. Peers read from other logs get no ratio: their baseline was not
measured on the same machine in the same run.

Each table is preceded by `<!-- obl-table: KEY -->`; the README refresh finds
curated tables by that key, between `<!-- obl-tables:begin -->` and
`<!-- obl-tables:end -->`, and replaces only the table rows under it. The key
SUMMARY is the compact table (summary_table): one row per headline case at
the largest N measured.
"""
import re

from . import stats

BEGIN = "<!-- obl-tables:begin -->"
END = "<!-- obl-tables:end -->"
KEY_RE = re.compile(r"<!--\s*obl-table:\s*(.*?)\s*-->")

BASELINES = ("baseline_array", "baseline_hashmap", "baseline_lb")
# Parameters that describe a structure's sizing and vary with N (the public
# harness's Signal_Jasmine lines): shown in the records, not a table of their own.
DESCRIPTIVE_PARAMS = {"Path_length", "Capacity_blocks", "Capacity_records", "Inserted_records",
                      "Query_count", "Target_fill"}
# Non-oblivious implementations besides the ratio baselines: not peers.
OTHER_BASELINES = ("cpp_stl",)
BASELINE_FOR = {"NRORAM": "baseline_array", "RORAM": "baseline_array",
                "LOADBALANCE": "baseline_lb"}
DEFAULT_BASELINE = "baseline_hashmap"
MATCH_PARAMS = ("N", "Key_bytes", "Value_bytes")
# The row parameter of a table: N (a load balancer's B is read as N, parse.py),
# or B where a record has no N.
ROW_PARAMS = ("N", "B")
# A peer measured with its public driver's method, shown for comparison and
# never the best peer (benchmark/*/driver.*: "method=public").
PUBLIC_METHOD_SUFFIX = "_pubmethod"

TYPE_TITLES = {"NRORAM": "Non-Recursive ORAM (NRORAM)", "RORAM": "Recursive ORAM (RORAM)",
               "UnorderedMap": "Unordered Map (UnorderedMap)",
               "UMAP": "Unordered Map (UMAP)", "Sharded-UMAP": "Sharded Unordered Map (Sharded-UMAP)",
               "Ramp-UMAP": "Open-loop Unordered Map (Ramp-UMAP)",
               "LOADBALANCE": "Load balancer (LOADBALANCE; N is the batch size B)"}
METRIC_TITLES = {
    "Read_latency_us": "Read latency (us/query)",
    "Write_latency_us": "Write latency (us/query)",
    "Read_throughput_qps": "Read throughput (queries/s)",
    "Write_throughput_qps": "Write throughput (queries/s)",
    "Batch_read_latency_us": "Batch read latency (us/batch)",
    "Initialization_time_us": "Initialization time (us)",
    "Memory_kb": "Memory (KiB)",
    "Latency_us": "Latency (us/batch)",
    "Throughput_qps": "Throughput (queries/s)",
    "Bytes_per_entry": "Memory per entry (bytes/entry)",
}
UNIT_WORDS = (("_us", "us"), ("_ns", "ns"), ("_ms", "ms"), ("_qps", "queries/s"),
              ("_kb", "KiB"), ("_mb", "MiB"), ("_bytes", "bytes"), ("_s", "s"))
METRIC_ORDER = ("latency", "throughput", "initialization", "memory", "bytes_per_entry")


def baseline_for(report_type):
    return BASELINE_FOR.get(report_type, DEFAULT_BASELINE)


def is_ours(impl):
    return impl == "obl" or impl.startswith("obl_")


def is_peer(impl):
    """A peer implementation: neither obl nor a baseline."""
    return not (is_ours(impl) or impl in BASELINES or impl in OTHER_BASELINES
                or impl.startswith("baseline_"))


def higher_is_better(metric):
    return metric.lower().endswith("_qps")


def row_key(params):
    return next((k for k in ROW_PARAMS if k in params), None)


def metric_title(name):
    if name in METRIC_TITLES:
        return METRIC_TITLES[name]
    for suffix, word in UNIT_WORDS:
        if name.lower().endswith(suffix):
            return f"{name[:-len(suffix)].replace('_', ' ')} ({word})"
    return name.replace("_", " ")


def metric_rank(name):
    low = name.lower()
    for i, word in enumerate(METRIC_ORDER):
        if word in low:
            return (i, name)
    return (len(METRIC_ORDER), name)


def n_label(n):
    if isinstance(n, int) and n > 0 and n & (n - 1) == 0:
        return f"$2^{{{n.bit_length() - 1}}}$"
    return str(n)


def param_sort_key(k):
    order = {"Key_bytes": 0, "Value_bytes": 1}
    return (order.get(k, 2), k)


def group_text(params):
    return ",".join(f"{k}={params[k]}" for k in sorted(params, key=param_sort_key))


def group_title(params):
    bits = []
    if "Key_bytes" in params:
        bits.append(f"{params['Key_bytes']}B keys")
    if "Value_bytes" in params:
        bits.append(f"{params['Value_bytes']}B values")
    bits += [f"{k}={params[k]}" for k in sorted(params, key=param_sort_key)
             if k not in ("Key_bytes", "Value_bytes")]
    return ", ".join(bits) or "default parameters"


def grouping_names(records):
    """Per type, the parameter names that identify a table (besides N): those
    our own records use. Peer-only types: Key_bytes and Value_bytes."""
    names = {}
    for rec in records:
        if rec.get("origin") != "extra":
            names.setdefault(rec["report_type"], set()).update(
                k for k in rec["params"]
                if k != row_key(rec["params"]) and k not in DESCRIPTIVE_PARAMS)
    return names


# obl's batched map's own parameters at their defaults (Threads 0: every core;
# Engines 0: its cost model picks the store). A peer's batched map (a record
# with a Batch_size) has neither: it runs on every core with its one store,
# so it joins the tables of those defaults.
BATCHED_DEFAULTS = {"Threads": 0, "Engines": 0}


def table_params(rec, names):
    keep = names.get(rec["report_type"], {"Key_bytes", "Value_bytes"})
    params = dict(rec["params"])
    if "Batch_size" in params and not is_ours(rec["impl"]):
        for k, v in BATCHED_DEFAULTS.items():
            params.setdefault(k, v)
    row = row_key(params)
    return {k: v for k, v in params.items() if k in keep and k != row}


def cell(summary, spread):
    if summary is None:
        return ""
    med = stats.fmt(summary["median"])
    lo, hi = ((summary.get("min"), summary.get("max")) if spread == "minmax"
              else (summary.get("q1"), summary.get("q3")))
    if spread == "none" or lo is None or hi is None or lo == hi:
        return med
    return f"{med} ({stats.fmt(lo)}–{stats.fmt(hi)})"


def impl_order(impls, run_impls):
    def key(i):
        if i == "obl" or i.startswith("obl"):
            return (0, i)
        if not is_peer(i):
            return (2, i)
        return (1 if i in run_impls else 3, i)
    return sorted(impls, key=key)


# Types with their own tables and figures (obllib/ramp.py), not against N.
RAMP_TYPES = ("Ramp-UMAP", "Ramp-UMAP-timeline")
# Implementations with their own tables (obllib/mpi.py: a row per rank layout).
OWN_TABLE_IMPLS = ("obl_mpi",)


class Table:
    """params: a measured table's fixed parameters (summary_table finds its
    rows by them); headline: (label, N, cell) of a row the summary takes as
    it is (Ramp-UMAP's knee), or None."""
    def __init__(self, key, section, subsection, title, header, rows, note=""):
        self.key, self.section, self.subsection = key, section, subsection
        self.title, self.header, self.rows, self.note = title, header, rows, note
        self.params, self.headline = None, None

    def markdown_rows(self, header=None):
        header = header or self.header
        def numeric(col):
            cells = [r[col] for r in self.rows if col < len(r) and r[col]]
            return bool(cells) and all(re.match(r"[~$0-9.+-]", c) for c in cells)
        align = ["--:" if i and numeric(i) else "---" for i in range(len(header))]
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows]
        return lines

    def render(self):
        out = [f"<!-- obl-table: {self.key} -->", f"**{self.title}**"]
        if self.note:
            out.append("")
            out.append(self.note)
        out.append("")
        out += self.markdown_rows()
        return "\n".join(out)


def baseline_key(impl, rec, names, metric):
    """Where a record finds its baseline: the same row value (N, or B), the
    same table parameters (key and value bytes, fill, shards...), the same
    metric; the baseline may be reported under another type (the array
    under RORAM for NRORAM)."""
    row = row_key(rec["params"])
    return (impl, rec["params"].get(row), group_text(table_params(rec, names)), metric)


def baseline_index(records, names):
    """(baseline impl, N, K, V, metric) -> summary, of this run's records
    alone (origin "run")."""
    base = {}
    for r in records:
        if r["impl"] in BASELINES and r.get("origin") != "extra":
            for m, s in r["metrics"].items():
                base[baseline_key(r["impl"], r, names, m)] = s
    return base


def table_groups(records, names):
    """(report type, group text, metric) -> the group of one table: its
    params, cells {(row value, impl): (summary, record)}, reps, rounds,
    origins {impl: origin} and row parameter. Ramp types and the impls of
    own tables are left out."""
    groups = {}
    for r in records:
        row = row_key(r["params"])
        if row is None or r["report_type"] in RAMP_TYPES or r["impl"] in OWN_TABLE_IMPLS:
            continue
        tp = table_params(r, names)
        for m, s in r["metrics"].items():
            g = groups.setdefault((r["report_type"], group_text(tp), m),
                                  {"params": tp, "cells": {}, "reps": set(), "rounds": set(),
                                   "origins": {}, "row": row})
            g["cells"][(r["params"][row], r["impl"])] = (s, r)
            if s.get("reps"):
                g["reps"].add(s["reps"])
            g["rounds"].add(s.get("rounds") or 1)
            g["origins"][r["impl"]] = r.get("origin", "run")
    return groups


def table_note(g, spread, metric, bl, borrowed, has_ratio, has_peer_ratio):
    """The note under group g's table: what a cell is (median and spread,
    repetitions, rounds) and what its ratio columns divide by."""
    reps = sorted(g["reps"])
    what = {"minmax": "median (min–max)", "iqr": "median (interquartile range)",
            "none": "median"}[spread]
    over = (f" over {reps[0]} repetitions" if len(reps) == 1 else
            f" over {reps[0]}–{reps[-1]} repetitions" if reps else "")
    rounds = sorted(g["rounds"])
    if rounds and rounds[-1] > 1:
        over += (f" in {rounds[0]} rounds" if len(rounds) == 1 else
                 f" in {rounds[0]}–{rounds[-1]} rounds")
        over += " spread over the run (docs/suite.md)"
    note = f"{what}{over}"
    if has_ratio:
        note += f"; `÷ {bl}`: ratio of medians to the non-oblivious baseline of the same run"
        if borrowed:
            note += f" (the {bl} column is that baseline)"
    if has_peer_ratio:
        note += ("; `÷ best peer`: ratio of medians to the best peer of the same run at that "
                 "size (" + ("the highest" if higher_is_better(metric) else "the lowest")
                 + "; peers measured with their public driver's method, `"
                 + PUBLIC_METHOD_SUFFIX + "`, excluded)")
    if any(o == "extra" for o in g["origins"].values()):
        extra = sorted(i for i, o in g["origins"].items() if o == "extra")
        note += f"; {', '.join(extra)}: from other logs (other machine or run)"
    return note + "."


def measured_tables(records, spread="minmax"):
    """records: normalised records with "origin" = "run" or "extra"."""
    names = grouping_names(records)
    run_impls = {r["impl"] for r in records if r.get("origin") != "extra"}
    base = baseline_index(records, names)
    groups = table_groups(records, names)
    tables = []
    type_rank = {t: i for i, t in enumerate(TYPE_TITLES)}
    def order(k):
        params = groups[k]["params"]
        pkey = tuple((p, (0, params[p]) if isinstance(params[p], (int, float)) else (1, str(params[p])))
                     for p in sorted(params, key=param_sort_key))
        return (type_rank.get(k[0], 99), k[0], pkey, metric_rank(k[2]))

    for (rtype, gtext, metric) in sorted(groups, key=order):
        g = groups[(rtype, gtext, metric)]
        # a batched table's latency is per batch: no per-operation baseline
        bl = None if "Batch_size" in g["params"] else baseline_for(rtype)
        ns = sorted({n for n, _ in g["cells"]}, key=lambda n: (isinstance(n, str), n))
        impls = impl_order({i for _, i in g["cells"]}, run_impls)

        def base_of(n, rec):
            return base.get(baseline_key(bl, rec, names, metric))

        borrowed = bl is not None and bl not in impls and any(
            base_of(n, rec) for (n, _), (_, rec) in g["cells"].items())
        columns = list(impls) + ([bl] if borrowed else [])
        ratio_impls = [i for i in impls if i not in BASELINES and g["origins"].get(i) != "extra"]
        has_ratio = any(base_of(n, rec) for (n, i), (_, rec) in g["cells"].items() if i in ratio_impls)
        peers = [i for i in impls if is_peer(i) and not i.endswith(PUBLIC_METHOD_SUFFIX)
                 and g["origins"].get(i) != "extra"]
        ours = [i for i in impls if is_ours(i) and g["origins"].get(i) != "extra"]
        has_peer_ratio = bool(peers and ours)
        header = (["N" if g["row"] == "N" else g["row"]] + columns
                  + ([f"{i} ÷ {bl}" for i in ratio_impls] if has_ratio else [])
                  + ([f"{i} ÷ best peer" for i in ours] if has_peer_ratio else []))
        rows = []
        for n in ns:
            row = [n_label(n)]
            any_rec = next(rec for (nn, _), (_, rec) in g["cells"].items() if nn == n)
            for i in columns:
                if i == bl and borrowed:
                    row.append(cell(base_of(n, any_rec), spread))
                else:
                    s = g["cells"].get((n, i))
                    row.append(cell(s[0] if s else None, spread))
            if has_ratio:
                for i in ratio_impls:
                    s = g["cells"].get((n, i))
                    b = base_of(n, s[1]) if s else None
                    row.append(f"{stats.fmt(s[0]['median'] / b['median'], 3)}"
                               if s and b and b["median"] else "")
            if has_peer_ratio:
                row += best_peer_ratios(g["cells"], n, ours, peers, metric)
            rows.append(row)
        note = table_note(g, spread, metric, bl, borrowed, has_ratio, has_peer_ratio)
        t = Table(f"{rtype} | {gtext} | {metric}", TYPE_TITLES.get(rtype, rtype),
                  group_title(g["params"]), metric_title(metric), header, rows, note)
        t.params = g["params"]
        tables.append(t)
    return tables


def best_peer_ratios(cells, n, ours, peers, metric):
    """Per implementation of ours: its median over the best peer's at row n
    ("" where either is missing), the best peer's name after it."""
    vals = [(cells[(n, p)][0]["median"], p) for p in peers
            if (n, p) in cells and cells[(n, p)][0].get("median")]
    if not vals:
        return [""] * len(ours)
    best, name = (max if higher_is_better(metric) else min)(vals)
    out = []
    for i in ours:
        s = cells.get((n, i))
        out.append(f"{stats.fmt(s[0]['median'] / best, 3)} ({name})" if s and best else "")
    return out


def render_all(tables):
    """Full Markdown: sections by type and parameters, then each table."""
    out, section, sub = [], None, None
    for t in tables:
        if t.section != section:
            out += [f"### {t.section}", ""]
            section, sub = t.section, None
        if t.subsection and t.subsection != sub:
            out += [f"#### {t.subsection}", ""]
            sub = t.subsection
        out += [t.render(), ""]
    return "\n".join(out).rstrip("\n") + "\n"


# ---- README refresh --------------------------------------------------------

FOOTNOTE_RE = re.compile(r"\s*(\*+|[†‡§]+|\[\^\w+\]|\(\d+\)|\^\w+)")


def keep_footnotes(new_header, old_header):
    """Keep a curated header's footnote marks (`h2o2*`) on the same column."""
    out = []
    for name in new_header:
        kept = name
        for old in old_header:
            if old != name and old.startswith(name) and FOOTNOTE_RE.fullmatch(old[len(name):]):
                kept = old
                break
        out.append(kept)
    return out


def split_row(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


ENV_MARK = "<!-- obl-env -->"


def refresh(text, tables, env=""):
    """Refresh curated tables between the markers; -> new text. A line that
    starts with <!-- obl-env --> becomes that mark followed by `env`, when
    given (the machine and commit of the run).

    Raises ValueError (nothing is written by the caller) when the markers are
    missing, a key matches no table, or a key has no table under it."""
    by_key = {t.key: t for t in tables}
    lines = [f"{ENV_MARK} {env}" if env and l.lstrip().startswith(ENV_MARK) else l
             for l in text.split("\n")]
    try:
        begin = next(i for i, l in enumerate(lines) if l.strip() == BEGIN)
        end = next(i for i, l in enumerate(lines) if l.strip() == END and i > begin)
    except StopIteration:
        raise ValueError(f"README has no {BEGIN} ... {END} block") from None
    out = lines[:begin + 1]
    errors, found = [], 0
    i = begin + 1
    while i < end:
        line = lines[i]
        m = KEY_RE.search(line)
        out.append(line)
        i += 1
        if not m or line.strip() in (BEGIN, END):
            continue
        found += 1
        key = m.group(1)
        j = i
        while j < end and not lines[j].lstrip().startswith("|") and not KEY_RE.search(lines[j]):
            out.append(lines[j])
            j += 1
        if j >= end or KEY_RE.search(lines[j]):
            errors.append(f"curated table {key!r} has no table under its marker")
            i = j
            continue
        k = j
        while k < end and lines[k].lstrip().startswith("|"):
            k += 1
        table = by_key.get(key)
        if table is None:
            errors.append(f"curated table {key!r} matches no result")
            out += lines[j:k]
        else:
            header = keep_footnotes(table.header, split_row(lines[j]))
            out += table.markdown_rows(header)
        i = k
    if errors:
        raise ValueError("; ".join(errors))
    if not found:
        raise ValueError("no curated table (<!-- obl-table: KEY -->) between the markers")
    return "\n".join(out + lines[end:])


# ---- the README's compact table ------------------------------------------

SUMMARY_KEY = "SUMMARY"
MAP_TYPES = ("UMAP", "UnorderedMap")
# Parameters a headline row leaves free: the machine's core count.
SUMMARY_FREE_PARAMS = ("Threads",)
MAP_856 = {"Key_bytes": 8, "Value_bytes": 56, "fill": 0.8}
BATCHED = {"Batch_size": 1024, "Engines": 0}
# (report types, fixed parameters, metric, row label, our implementation[,
# metric whose baseline applies]): the plain caller's NRORAM read first, as
# the headline (docs/bench.md, "The caller's positions"); the array baseline
# has no plain caller metric, its plain read is the comparison. The batched
# rows are the peers' sharded workload (15 shards, batches of 1K; Signal's
# records hold 48-byte values) and obl's one-shard batched map.
SUMMARY_ROWS = (
    (("NRORAM",), {"Key_bytes": 8, "Value_bytes": 8}, "Read_latency_plain_caller_us",
     "NRORAM 8/8 read, plain caller (us)", "obl", "Read_latency_us"),
    (("NRORAM",), {"Key_bytes": 8, "Value_bytes": 8}, "Read_latency_us",
     "NRORAM 8/8 read, positions prefetched (us)", "obl"),
    (("RORAM",), {"Key_bytes": 8, "Value_bytes": 8}, "Read_latency_us", "RORAM 8/8 read (us)",
     "obl"),
    (("RORAM",), {"Key_bytes": 8, "Value_bytes": 56}, "Read_latency_us", "RORAM 8/56 read (us)",
     "obl"),
    (MAP_TYPES, MAP_856, "Get_latency_us", "UnorderedMap 8/56 get, fill 0.8 (us)", "obl"),
    (MAP_TYPES, MAP_856, "Initialization_time_us",
     "UnorderedMap 8/56 bulk build, fill 0.8 (us)", "obl"),
    (MAP_TYPES, dict(MAP_856, Shards=15, **BATCHED), "Get_latency_us",
     "Sharded UnorderedMap 8/56, 15 shards, batch of 1K, fill 0.8 (us/batch)", "obl_sharded"),
    (MAP_TYPES, dict(MAP_856, Value_bytes=48, Shards=15, **BATCHED), "Get_latency_us",
     "Sharded UnorderedMap 8/48, 15 shards, batch of 1K, fill 0.8 (us/batch)", "obl_sharded"),
    (MAP_TYPES, dict(MAP_856, Shards=1, **BATCHED), "Get_latency_us",
     "Batched UnorderedMap 8/56, one shard, batch of 1K, fill 0.8 (us/batch)", "obl_batched"),
    (("LOADBALANCE",), {"Key_bytes": 8, "Value_bytes": 8, "Shards": 15}, "Latency_us",
     "LOADBALANCE 8/8, 15 shards, both directions (us/batch; N is B)", "obl"),
)


def find_table(tables, types, params, metric):
    """The measured table of one of types with exactly params (but for
    SUMMARY_FREE_PARAMS) and metric, or None."""
    for ty in types:
        for t in tables:
            tp = t.params
            if (tp is None or not t.key.startswith(ty + " | ")
                    or not t.key.endswith(" | " + metric)):
                continue
            if (all(tp.get(k) == v for k, v in params.items())
                    and all(k in params or k in SUMMARY_FREE_PARAMS for k in tp)):
                return t
    return None


def summary_table(tables):
    """One row per SUMMARY_ROWS entry found, at the largest N our
    implementation measured: its cell, the peers' cells of the same row, the
    baseline and the ratios; then the headline rows other tables offer
    (Ramp-UMAP's knee). None when nothing is found."""
    picked, peers = [], []
    for types, params, metric, label, ours, *base_metric in SUMMARY_ROWS:
        t = find_table(tables, types, params, metric)
        if t is None or ours not in t.header:
            continue
        rows = [r for r in t.rows if r[t.header.index(ours)]]
        if not rows:
            continue
        bt = find_table(tables, types, params, base_metric[0]) if base_metric else t
        picked.append((label, t, rows[-1], bt, ours))
        peers += [h for h in t.header[1:] if not is_ours(h) and is_peer(h) and "÷" not in h
                  and not h.endswith(PUBLIC_METHOD_SUFFIX) and h not in peers]
    extra = [t.headline for t in tables if t.headline]
    if not picked and not extra:
        return None
    best = any(f"{ours} ÷ best peer" in t.header for _, t, _, _, ours in picked)
    header = (["Benchmark", "N", "obl"] + peers + ["non-oblivious baseline", "obl ÷ baseline"]
              + (["obl ÷ best peer"] if best else []))
    out = []
    for label, t, row, bt, ours in picked:
        col = {h: i for i, h in enumerate(t.header)}
        base = ""
        if bt is not None:
            brow = next((r for r in bt.rows if r[0] == row[0]), None)
            base = next((brow[bt.header.index(b)] for b in BASELINES
                         if brow and b in bt.header), "")
        ratio = next((row[i] for h, i in col.items() if h.startswith(f"{ours} ÷ baseline")), "")
        if base and bt is not t:
            ratio = stats.fmt(float(row[col[ours]].split()[0]) / float(base.split()[0]), 3)
        best_col = f"{ours} ÷ best peer"
        out.append([label, row[0], row[col[ours]]] + [row[col[p]] if p in col else ""
                                                       for p in peers] + [base, ratio]
                   + ([row[col[best_col]] if best_col in col else ""] if best else []))
    for label, n, cell_text in extra:
        out.append([label, n, cell_text] + [""] * (len(header) - 3))
    return Table(SUMMARY_KEY, "Summary", "", "Summary at the largest N", header, out,
                 "median (min–max) of the run's repetitions; obl's column holds the "
                 "implementation the row names (obl, obl_sharded, obl_batched); ratio of medians "
                 "to the non-oblivious baseline of the same run"
                 + ("; `obl ÷ best peer`: to the best peer of the same run at that N, named"
                    if best else "") + ".")


def curated_keys(text):
    lines = text.split("\n")
    inside, keys = False, []
    for l in lines:
        if l.strip() == BEGIN:
            inside = True
        elif l.strip() == END:
            inside = False
        elif inside:
            m = KEY_RE.search(l)
            if m:
                keys.append(m.group(1))
    return keys
