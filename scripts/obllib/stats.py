# SPDX-License-Identifier: MIT
"""Medians, spreads and the formatting of numbers.

obl-bench computes each metric's median, min, max and quartiles over its R
repetitions; these helpers exist for inputs that only carry samples or single
values (peer REPORT lines), and for the noise measurement. Quartiles use
linear interpolation between order statistics (numpy's default, "type 7").
"""
import math


def quantile(values, q):
    xs = sorted(float(v) for v in values)
    if not xs:
        raise ValueError("quantile of no values")
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize(values):
    xs = [float(v) for v in values]
    return {"median": quantile(xs, 0.5), "min": min(xs), "max": max(xs),
            "q1": quantile(xs, 0.25), "q3": quantile(xs, 0.75), "reps": len(xs)}


def rel_diff(a, b):
    """|a - b| relative to their mean: symmetric, 0 when equal."""
    a, b = float(a), float(b)
    mean = (a + b) / 2
    if mean == 0:
        return 0.0 if a == b else math.inf
    return abs(a - b) / abs(mean)


def fmt(x, digits=4):
    """About `digits` significant digits, never exponent notation."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    x = float(x)
    if math.isinf(x):
        return "inf"
    if abs(x) < 1e-9:
        return "0"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    decimals = max(0, min(decimals, 8))
    return f"{x:.{decimals}f}"


def fmt_pm(value, se):
    """value ± standard error, value rounded to the error's first digits."""
    if se is None or math.isnan(se) or se <= 1e-9 * max(1.0, abs(value)):
        # exact (to rounding): synthetic data or a perfect fit
        return fmt(value) if abs(value) > 1e-9 else "0"
    decimals = max(0, 1 - math.floor(math.log10(abs(se))))
    decimals = min(decimals, 8)
    if abs(value) < se:
        # smaller than its own error: not measured (the encoding report's
        # "too small to measure" cells)
        return f"~0 (±{se:.{decimals}f})"
    return f"{value:.{decimals}f} ± {se:.{decimals}f}"


def fmt_bytes(n):
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"
