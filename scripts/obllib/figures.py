# SPDX-License-Identifier: MIT
"""PNG figures: one per (type, fixed parameters, metric family) against N.

Log-log axes, one line per implementation through the medians, the min-max
range as error bars and the interquartile range as a shaded band. Peers read
from other logs are drawn dashed. Backend: Agg (no display needed).
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import tables  # noqa: E402

FAMILIES = (("latency", lambda m: "latency" in m.lower()),
            ("throughput", lambda m: "throughput" in m.lower() or m.lower().endswith("_qps")),
            ("initialization", lambda m: m.lower().startswith("init")),
            ("memory", lambda m: m in ("Memory_kb", "Bytes_per_entry")))


def family(metric):
    for name, test in FAMILIES:
        if test(metric):
            return name
    return None


def safe(text):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text).strip("_")


def draw_all(records, out_dir):
    """-> list of written paths."""
    names = tables.grouping_names(records)
    series = {}
    for r in records:
        n = r["params"].get("N")
        if not isinstance(n, (int, float)) or r["report_type"] in tables.RAMP_TYPES:
            continue
        tp = tables.table_params(r, names)
        for m, s in r["metrics"].items():
            if family(m) is None:
                continue
            key = (r["report_type"], tables.group_text(tp), m)
            series.setdefault(key, {"params": tp, "lines": {}})["lines"].setdefault(
                (r["impl"], r.get("origin", "run")), []).append((n, s))
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for (rtype, gtext, metric), g in sorted(series.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
        order = tables.impl_order({i for i, _ in g["lines"]}, {i for i, o in g["lines"] if o != "extra"})
        for (impl, origin), pts in sorted(g["lines"].items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
            pts.sort(key=lambda p: p[0])
            xs = [p[0] for p in pts]
            med = [p[1]["median"] for p in pts]
            lo = [p[1]["median"] - p[1].get("min", p[1]["median"]) for p in pts]
            hi = [p[1].get("max", p[1]["median"]) - p[1]["median"] for p in pts]
            style = "--" if origin == "extra" else "-"
            line = ax.errorbar(xs, med, yerr=[lo, hi], fmt="o" + style, ms=3, capsize=2,
                               lw=1.2, label=impl + (" (other log)" if origin == "extra" else ""))
            q1 = [p[1].get("q1", p[1]["median"]) for p in pts]
            q3 = [p[1].get("q3", p[1]["median"]) for p in pts]
            ax.fill_between(xs, q1, q3, alpha=0.2, color=line[0].get_color(), lw=0)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("N (entries)")
        ax.set_ylabel(tables.metric_title(metric))
        ax.set_title(f"{rtype}: {tables.metric_title(metric)}\n{tables.group_title(g['params'])}",
                     fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.text(0.99, 0.01, "median; bars: min–max; band: interquartile range",
                 ha="right", va="bottom", fontsize=7, color="0.4")
        fig.tight_layout()
        path = os.path.join(out_dir, safe(f"{rtype}_{gtext}_{metric}") + ".png")
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    from . import crossover  # the sharded map's engines against B and N
    written += crossover.draw(records, out_dir)
    return written
