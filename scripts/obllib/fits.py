"""Least-squares decompositions of the medians (DERIVED, not measured).

  latency = base + per_level * log2(N) [+ per_byte * Value_bytes]
      per (type, implementation, metric, other fixed parameters); the
      per-byte term is fitted only when the records span several value sizes.
  memory  = fixed + per_entry * N          (bytes; from Memory_kb * 1024)
      per (type, implementation, all parameters but N).

Ordinary least squares on the medians, unweighted. Standard errors from
s^2 (X^T X)^-1 with s^2 = RSS / (n - p); with n <= p points there is no
error estimate and the fit is reported with "n/a". A coefficient smaller
than its standard error is shown as ~0: not resolved by these data.
"""
import math

import numpy as np

from . import stats
from .tables import Table, group_text, param_sort_key


def ols(X, y):
    """-> (coef, se, r2). X: n x p design matrix, y: n values."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, p = X.shape
    if n < p:
        raise ValueError(f"{n} points cannot determine {p} coefficients")
    coef, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    if rank < p:
        raise ValueError("degenerate design (a regressor does not vary)")
    resid = y - X @ coef
    rss = float(resid @ resid)
    tss = float(((y - y.mean()) ** 2).sum())
    # constant y (to rounding): R^2 is undefined; report 1 for a perfect fit
    r2 = 1.0 - rss / tss if tss > 1e-18 * max(1.0, float((y ** 2).sum())) else 1.0
    if n > p:
        cov = rss / (n - p) * np.linalg.inv(X.T @ X)
        se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    else:
        se = np.full(p, math.nan)
    return coef, se, r2


def is_latency(metric):
    return "latency" in metric.lower() and metric.endswith("_us")


def latency_fits(records):
    groups = {}
    for r in records:
        if "N" not in r["params"] or not isinstance(r["params"]["N"], (int, float)):
            continue
        fixed = {k: v for k, v in r["params"].items() if k not in ("N", "Value_bytes")}
        for m, s in r["metrics"].items():
            if is_latency(m):
                key = (r["report_type"], r["impl"], m, group_text(fixed))
                groups.setdefault(key, []).append(
                    (float(r["params"]["N"]), r["params"].get("Value_bytes"), s["median"]))
    fits = []
    for (rtype, impl, metric, fixed), pts in sorted(groups.items()):
        vsizes = {v for _, v, _ in pts if v is not None}
        per_byte = len(vsizes) > 1
        X = [[1.0, math.log2(n)] + ([float(v)] if per_byte else []) for n, v, _ in pts]
        y = [val for _, _, val in pts]
        try:
            coef, se, r2 = ols(X, y)
        except ValueError:
            continue
        fits.append({"report_type": rtype, "impl": impl, "metric": metric, "fixed": fixed,
                     "value_bytes": sorted(vsizes), "points": len(pts),
                     "base": (coef[0], se[0]), "per_level": (coef[1], se[1]),
                     "per_byte": (coef[2], se[2]) if per_byte else None, "r2": r2})
    return fits


def memory_fits(records, metric="Memory_kb"):
    groups = {}
    for r in records:
        if metric not in r["metrics"] or "N" not in r["params"]:
            continue
        fixed = {k: v for k, v in r["params"].items() if k != "N"}
        key = (r["report_type"], r["impl"], group_text(fixed))
        groups.setdefault(key, []).append((float(r["params"]["N"]),
                                           r["metrics"][metric]["median"] * 1024.0))
    fits = []
    for (rtype, impl, fixed), pts in sorted(groups.items()):
        try:
            coef, se, r2 = ols([[1.0, n] for n, _ in pts], [b for _, b in pts])
        except ValueError:
            continue
        fits.append({"report_type": rtype, "impl": impl, "fixed": fixed, "points": len(pts),
                     "fixed_bytes": (coef[0], se[0]), "per_entry": (coef[1], se[1]), "r2": r2})
    return fits


def _pm(pair):
    if pair is None:
        return ""
    value, se = pair
    if math.isnan(se):
        return f"{stats.fmt(value)} (n/a)"
    return stats.fmt_pm(value, se)


def latency_table(records):
    fits = latency_fits(records)
    if not fits:
        return None
    any_byte = any(f["per_byte"] for f in fits)
    header = ["Type", "Implementation", "Metric", "Parameters", "Base (us)", "Per level (us/level)"]
    header += ["Per byte (us/B)"] if any_byte else []
    header += ["Points", "R²"]
    rows = []
    for f in fits:
        params = f["fixed"] + (f" V={'/'.join(map(str, f['value_bytes']))}" if f["value_bytes"] else "")
        row = [f["report_type"], f["impl"], f["metric"], params.strip(), _pm(f["base"]),
               _pm(f["per_level"])]
        row += [_pm(f["per_byte"])] if any_byte else []
        row += [str(f["points"]), f"{f['r2']:.3f}"]
        rows.append(row)
    note = ("DERIVED, not measured: least-squares fit of the medians to "
            "latency = base + per_level × log2(N)" + (" + per_byte × Value_bytes" if any_byte else "")
            + ", ± standard error; per level is the cost of one more level of a tree of N "
            "leaves. ~0: smaller than its own error. The first column of this table is not a "
            "measurement at any N.")
    t = Table("DERIVED latency decomposition", "Derived figures", "",
              "DERIVED: latency decomposition", header, rows, note)
    return t


def memory_table(records):
    fits = memory_fits(records)
    if not fits:
        return None
    header = ["Type", "Implementation", "Parameters", "Fixed (bytes)", "Per entry (bytes/entry)",
              "Formula", "Points", "R²"]
    rows = []
    for f in fits:
        a, b = f["fixed_bytes"][0], f["per_entry"][0]
        rows.append([f["report_type"], f["impl"], f["fixed"], _pm(f["fixed_bytes"]),
                     _pm(f["per_entry"]), f"{stats.fmt(a, 3)} + {stats.fmt(b, 3)}·N B",
                     str(f["points"]), f"{f['r2']:.4f}"])
    note = ("DERIVED, not measured: least-squares fit of the measured memory (Memory_kb × 1024) "
            "to memory = fixed + per_entry × N, ± standard error. An approximation formula in "
            "the spirit of the encoding report's memory table, not an exact accounting.")
    return Table("DERIVED memory formula", "Derived figures", "", "DERIVED: memory formula",
                 header, rows, note)
