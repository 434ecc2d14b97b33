# SPDX-License-Identifier: MIT
"""Least-squares decompositions of the medians (DERIVED, not measured).

  latency = base + per_level * (log2 N - log2 N0) [+ beyond * max(0, log2 N
            - log2 knee)] [+ (per_byte + per_byte_level * (log2 N - log2 N0))
            * (Value_bytes - V0)]
      per (type, implementation, metric, other fixed parameters; Baseline_*
      metrics excluded); the per-byte term only when the records span several
      value sizes; the knee (last-level cache) only where it fits; fits with a
      low R^2 or a predicted time <= 0 are refused (fit_latency).
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
    # Baseline_* metrics ride along on obl's records; they belong to the
    # baselines' own rows, which carry them under their own names.
    return ("latency" in metric.lower() and metric.endswith("_us")
            and not metric.startswith("Baseline_"))


# A fit is printed only if it explains the medians (R^2 >= R2_MIN) and
# predicts a positive time at every measured point.
R2_MIN = 0.95


def _design(pts, l0, v0, knee, per_byte):
    """Rows [1, L - L0, max(0, L - knee), V - V0] (the knee and per-byte
    columns only when used): the base is the latency at the smallest N and
    value size measured, not an extrapolation to N = 1."""
    rows = []
    for n, v, _ in pts:
        lv = math.log2(n)
        row = [1.0, lv - l0]
        if knee is not None:
            row.append(max(0.0, lv - knee))
        if per_byte:  # a path moves V bytes per level: a per-byte and a per-byte-level term
            row += [float(v) - v0, (float(v) - v0) * (lv - l0)]
        rows.append(row)
    return rows


def fit_latency(pts):
    """Least squares of latency = base + per_level (L - L0) [+ beyond
    max(0, L - knee)] [+ (per_byte + per_byte_level (L - L0)) (V - V0)],
    L = log2 N (a path moves its V-byte blocks at every level): a tree's levels cost
    more once they leave the last-level cache, so the slope may change at a
    knee. The knee is the measured level, with at least two levels beyond
    it, that minimises the residuals, kept only when it lowers the residual
    variance (per degree of freedom) of the straight fit. -> dict or None."""
    vsizes = sorted({v for _, v, _ in pts if v is not None})
    per_byte = len(vsizes) > 1
    levels = sorted({math.log2(n) for n, _, _ in pts})
    l0, v0 = levels[0], (vsizes[0] if vsizes else 0)
    y = [val for _, _, val in pts]
    best = None
    for knee in [None] + levels[1:-2]:
        X = _design(pts, l0, v0, knee, per_byte)
        try:
            coef, se, r2 = ols(X, y)
        except ValueError:
            continue
        resid = np.asarray(y) - np.asarray(X, dtype=float) @ coef
        dof = max(1, len(pts) - len(coef))
        score = float(resid @ resid) / dof
        if best is None or score < best["score"] * (0.8 if knee is not None else 1.0):
            best = {"score": score, "coef": coef, "se": se, "r2": r2, "knee": knee,
                    "resid": resid, "pred": np.asarray(X, dtype=float) @ coef}
    if best is None:
        return None
    c, e = best["coef"], best["se"]
    k = 2 if best["knee"] is not None else None
    b = (3 if k else 2) if per_byte else None
    worst = int(np.argmax(np.abs(best["resid"])))
    refuse = []
    if best["r2"] < R2_MIN:
        refuse.append(f"R² {best['r2']:.3f} < {R2_MIN}")
    if float(best["pred"].min()) <= 0:
        refuse.append("predicts a time <= 0")
    return {"value_bytes": vsizes, "points": len(pts), "n0": int(round(2 ** l0)), "v0": v0,
            "base": (c[0], e[0]), "per_level": (c[1], e[1]),
            "beyond_knee": (c[k], e[k]) if k else None,
            "knee_n": int(round(2 ** best["knee"])) if k else None,
            "per_byte": (c[b], e[b]) if b else None,
            "per_byte_level": (c[b + 1], e[b + 1]) if b else None, "r2": best["r2"],
            "rms_resid": float(np.sqrt(np.mean(best["resid"] ** 2))),
            "max_resid": (float(best["resid"][worst]), pts[worst][0]),
            "refused": "; ".join(refuse) or None}


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
        f = fit_latency(pts)
        if f is not None:
            f.update(report_type=rtype, impl=impl, metric=metric, fixed=fixed)
            fits.append(f)
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
    header = ["Type", "Implementation", "Metric", "Parameters", "Base (us, at N0)",
              "Per level (us/level)", "Beyond the knee (us/level)", "Knee (N)"]
    header += ["Per byte (us/B)", "Per byte per level (us/B/level)"] if any_byte else []
    header += ["Points", "R²", "RMS residual (us)", "Largest residual (us, at N)"]
    rows = []
    for f in fits:
        params = f["fixed"] + (f" V={'/'.join(map(str, f['value_bytes']))}" if f["value_bytes"] else "")
        row = [f["report_type"], f["impl"], f["metric"], params.strip()]
        if f["refused"]:
            row += [f"refused: {f['refused']}", "", "", ""] + (["", ""] if any_byte else [])
        else:
            row += [f"{_pm(f['base'])} (N0={f['n0']})", _pm(f["per_level"]),
                    _pm(f["beyond_knee"]), str(f["knee_n"] or "")]
            row += [_pm(f["per_byte"]), _pm(f["per_byte_level"])] if any_byte else []
        row += [str(f["points"]), f"{f['r2']:.3f}", stats.fmt(f["rms_resid"]),
                f"{stats.fmt(f['max_resid'][0])} (N={int(f['max_resid'][1])})"]
        rows.append(row)
    note = ("DERIVED, not measured: least-squares fit of the medians to latency = base + "
            "per_level × (log2 N − log2 N0) + beyond × max(0, log2 N − log2 knee)"
            + (" + (per_byte + per_byte_level × (log2 N − log2 N0)) × (Value_bytes − V0)"
               if any_byte else "")
            + ", ± standard error. Base is the fitted latency at the smallest N measured (N0, "
            "and the smallest value size V0); the knee, where the tree leaves the last-level "
            "cache and each level costs more, is the level that fits best, used only where it "
            "lowers the residual variance by a fifth. A fit with R² below "
            f"{R2_MIN} or a predicted time <= 0 is refused, not printed. ~0: smaller than its "
            "own error. Residuals: measured − fitted.")
    return Table("DERIVED latency decomposition", "Derived figures", "",
                 "DERIVED: latency decomposition", header, rows, note)


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
