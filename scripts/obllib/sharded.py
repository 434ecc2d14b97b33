# SPDX-License-Identifier: MIT
"""The sharded and batched maps' derived tables (docs/shard.md).

time_split_table: each obl_sharded / obl_batched case's batch time split
into the balancer (both directions), the shards' work and the write-back,
from the medians of the parts the map times itself (Balance_us, Shard_us,
Get_writeback_latency_us) against the batch's wall time (Get_latency_us);
the rest is the call's own time (engine choice, buffers) and the medians'
mismatch. targets_table: the design targets at N = 2^20, 8/56 against the
run's medians.
"""
from . import stats
from .tables import Table

IMPLS = ("obl_sharded", "obl_batched")

# docs/shard.md: at N = 2^20, 8/56 on this 2-core machine kind
TARGET_N, TARGET_KV = 1 << 20, (8, 56)
TARGET_QPS = {65536: 1e6, 1024: 3e5}
TARGET_BYTES_PER_ENTRY = 200.0
TARGET_BUILD_S = 1.0


def _med(rec, metric):
    s = rec.get("metrics", {}).get(metric)
    return None if s is None else s.get("median")


def _runs(records):
    out = [r for r in records if r.get("impl") in IMPLS and r.get("origin") != "extra"
           and "Batch_size" in r.get("params", {}) and _med(r, "Get_latency_us")]
    def key(r):
        p = r["params"]
        return (r["impl"], p.get("Key_bytes"), p.get("Value_bytes"), p.get("Shards"),
                p.get("Engines", 0), p["Batch_size"], p["N"])
    return sorted(out, key=key)


def _case(r):
    p = r["params"]
    return [r["impl"], f"$2^{{{p['N'].bit_length() - 1}}}$" if p["N"] & (p["N"] - 1) == 0
            else str(p["N"]), f"{p.get('Key_bytes')}/{p.get('Value_bytes')}",
            str(p.get("Shards")), str(p["Batch_size"]), str(p.get("Engines", 0))]


def _ms_share(x, total):
    if x is None:
        return ""
    return f"{stats.fmt(x / 1000, 3)} ({x / total * 100:.0f} %)"


def time_split_table(records):
    rows = []
    for r in _runs(records):
        total = _med(r, "Get_latency_us")
        parts = [_med(r, m) for m in ("Balance_us", "Shard_us", "Get_writeback_latency_us")]
        engine = _med(r, "Engine")
        rest = total - sum(x for x in parts if x is not None)
        rows.append(_case(r) + ["" if engine is None else f"{engine:.0f}",
                                stats.fmt(total / 1000, 3)]
                    + [_ms_share(x, total) for x in parts] + [_ms_share(rest, total)])
    if not rows:
        return None
    header = ["Implementation", "N", "K/V", "S", "B", "Engines", "Engine", "Batch (ms)",
              "Balancer (ms)", "Shards (ms)", "Write-back (ms)", "Rest (ms)"]
    note = ("DERIVED, not measured as a sum: the medians of the parts that the map times "
            "per batch (obl_shard_stats: the balancer both ways, the shards' answers, the "
            "writes after the answers; none in a get batch) against the median wall time "
            "of a batch; the rest is the call's own work (engine choice, buffers) and the "
            "difference of medians, so it may be negative. Engines: the map's stores (0 the "
            "one the cost model picks for B at creation; 1 per-request; 2 scan; 3 both, "
            "chosen per batch); Engine: the last batch's "
            "(1 per-request, 2 scan). Shares of the batch time in brackets.")
    return Table("DERIVED sharded time split", "Derived figures", "",
                 "DERIVED: sharded and batched maps, time split per batch", header, rows, note)


def _verdict(value, target, higher):
    if value is None:
        return ""
    ok = value >= target if higher else value <= target
    return "met" if ok else "not met"


def targets_table(records):
    rows = []
    for r in _runs(records):
        p = r["params"]
        if p["N"] != TARGET_N or (p.get("Key_bytes"), p.get("Value_bytes")) != TARGET_KV:
            continue
        qps, mem = _med(r, "Get_throughput_qps"), _med(r, "Memory_kb")
        build = _med(r, "Initialization_time_us")
        per_entry = None if mem is None else mem * 1024 / p["N"]
        target = TARGET_QPS.get(p["Batch_size"])
        rows.append(_case(r)[:1] + _case(r)[3:] + [
            stats.fmt(qps, 4),
            "" if target is None else f"{stats.fmt(target, 3)}: {_verdict(qps, target, True)}",
            "" if per_entry is None else
            f"{stats.fmt(per_entry, 4)}: {_verdict(per_entry, TARGET_BYTES_PER_ENTRY, False)}",
            "" if build is None else
            f"{stats.fmt(build / 1e6, 3)}: {_verdict(build / 1e6, TARGET_BUILD_S, False)}"])
    if not rows:
        return None
    header = ["Implementation", "S", "B", "Engines", "Get q/s", "Target q/s",
              f"Memory B/entry (target <= {TARGET_BYTES_PER_ENTRY:.0f})",
              f"Build s (target < {TARGET_BUILD_S:.0f})"]
    note = ("DERIVED: the design targets of docs/shard.md at N = 2^20, 8-byte keys and "
            "56-byte values against this run's medians (q/s per query, Memory_kb x 1024 / N, "
            "Initialization_time_us). A q/s target is set for B = 1K and 64K only.")
    return Table("DERIVED sharded targets", "Derived figures", "",
                 "DERIVED: sharded and batched maps against their targets", header, rows, note)
