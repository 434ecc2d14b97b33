# SPDX-License-Identifier: MIT
"""The sharded map's engine crossover: queries/s of each engine.

obl-bench sharded runs with `--engines 1` (per-request only), `--engines 2`
(scan only), `--engines 3` (both stores, the cost model chooses per batch)
and `--engines 0` (the default creation: the one store the cost model
picks for the batch size). For
each (Key_bytes, Value_bytes, Shards) and fixed N, one figure of
Get_throughput_qps against Batch_size, one line per engine setting; for
each fixed Batch_size, one against N. A setting measured at fewer than two
points draws nothing. Backend: Agg.
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

METRIC = "Get_throughput_qps"
ENGINES = {0: "default (store picked for B)", 1: "per-request (omap)", 2: "scan",
           3: "both stores (chosen per batch)"}
IMPLS = ("obl_sharded", "obl_batched")


def _points(records):
    """-> {(impl, K, V, S): {engine: [(N, B, summary)]}} of the sharded rows."""
    out = {}
    for r in records:
        p = r.get("params", {})
        s = r.get("metrics", {}).get(METRIC)
        if r.get("impl") not in IMPLS or s is None or "Batch_size" not in p:
            continue
        key = (r["impl"], p.get("Key_bytes"), p.get("Value_bytes"), p.get("Shards"))
        out.setdefault(key, {}).setdefault(int(p.get("Engines", 0)), []).append(
            (p["N"], p["Batch_size"], s))
    return out


def _figure(path, title, xlabel, lines):
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for eng, pts in sorted(lines.items()):
        pts.sort(key=lambda t: t[0])
        ax.plot([x for x, _ in pts], [s["median"] for _, s in pts], "o-", ms=3,
                label=ENGINES.get(eng, f"engines {eng}"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Get throughput (queries/s)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def draw(records, out_dir):
    """-> list of written paths."""
    written = []
    for (impl, k, v, s), by_eng in sorted(_points(records).items(), key=str):
        for axis, fixed_name in (("B", "N"), ("N", "Batch_size")):
            fixed = {}
            for eng, pts in by_eng.items():
                for n, b, summ in pts:
                    f, x = (n, b) if axis == "B" else (b, n)
                    fixed.setdefault(f, {}).setdefault(eng, []).append((x, summ))
            for f, lines in sorted(fixed.items()):
                lines = {e: p for e, p in lines.items() if len(p) >= 2}
                if len(lines) < 2:
                    continue
                name = f"crossover_{impl}_{k}_{v}_S{s}_{fixed_name}{f}_vs_{axis}.png"
                path = os.path.join(out_dir, name)
                os.makedirs(out_dir, exist_ok=True)
                xlabel = "batch size B" if axis == "B" else "N (entries)"
                title = (f"{impl}: engine crossover, K/V {k}/{v}, S = {s}, "
                         f"{fixed_name} = {f}")
                _figure(path, title, xlabel, lines)
                written.append(path)
    return written
