# SPDX-License-Identifier: MIT
"""--mpi RANKS: the Sharded-UMAP and Ramp-UMAP types over MPI ranks (docs/mpi.md).

For every rank count R of --mpi (2 .. 64; a list such as 2,3,4):
  * Sharded-UMAP over MPI: `scripts/mpirun.sh -np R obl-mpi` (one balancer,
    R - 1 shard ranks, one shard each), batches of B gets; its REPORT line
    (UnorderedMap, obl_mpi) is the record. Beside it the threaded map at the
    same S, B and N (`obl-bench sharded --threads S`), so that the MPI
    table shows both.
  * the shard engines alone (`obl-bench batched --engines 1|2`, one shard,
    one thread, N = 2^14 and 2^16): with the two above, what
    scripts/mpi_model.py reads its constants from.
  * Ramp-UMAP over MPI: obl-server --backend mpi under `mpirun -np R`
    (rank 0 serves and balances, R - 1 shard ranks), obl-load's ramp
    against it (ramp.py runs it; rank 0's pid stops it).
Tables: one per (N, key/value sizes, B): a row per layout (ranks, balancers,
shard ranks, S) with the MPI path's latency per batch, throughput, bytes and
encryption per query, the balancer's and the shards' times, and the threaded
map's latency and throughput at the same S.
"""
import os
import shutil

from . import stats
from .inputs import ROOT
from .tables import Table

IMPL = "obl_mpi"
THREADED_IMPL = "obl_sharded"
DRIVER = "obl-mpi"
TARGET_N = 2 ** 16
BATCH = 4096
BATCHES = 10
MAX_RANKS = 64
# Ramp over MPI: a short ramp; an epoch carries the server's max batch.
RAMP_LOAD = (2000, 20000, 20, 5)
RAMP_N = 2 ** 16


def parse_ranks(text):
    """'3' or '2,3,4' or '2-4' -> sorted distinct rank counts (ValueError)."""
    out = set()
    for part in str(text).split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            a, b = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise ValueError(f"--mpi: {part!r} is not a rank count or range") from None
        if a > b or a < 2 or b > MAX_RANKS:
            raise ValueError(f"--mpi: ranks must be 2 .. {MAX_RANKS} (one balancer and at "
                             f"least one shard rank), not {part!r}")
        out.update(range(a, b + 1))
    return sorted(out)


def mpirun_script():
    """scripts/mpirun.sh (mpirun with the settings of one machine), or
    $OBL_MPIRUN_SH: a stand-in for the tooling tests."""
    return os.environ.get("OBL_MPIRUN_SH") or os.path.join(ROOT, "scripts", "mpirun.sh")


def binaries(bench_bin):
    """(mpirun.sh, obl-mpi, obl-server) of the build beside bench_bin, or None
    when obl-mpi is not built or mpirun is missing."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(bench_bin)))
    script = mpirun_script()
    exe = os.path.join(build, "src", "mpi", "obl-mpi")
    server = os.path.join(build, "serve", "obl-server")
    if not shutil.which("mpirun") or not os.access(exe, os.X_OK):
        return None
    return script, exe, server


def layout(ranks):
    """(L, R, S): one balancer, the other ranks one shard each."""
    return 1, ranks - 1, ranks - 1


def map_case(n, ranks, batch=BATCH, key_bytes=8, value_bytes=56, batches=BATCHES):
    L, R, S = layout(ranks)
    params = {"N": n, "Key_bytes": key_bytes, "Value_bytes": value_bytes, "Shards": S,
              "Batch_size": batch, "Ranks": ranks, "Balancers": L}
    args = ["-np", str(ranks), "--balancers", str(L), "--n", str(n), "--key-bytes",
            str(key_bytes), "--value-bytes", str(value_bytes), "--shards", str(S), "--batch",
            str(batch), "--batches", str(batches)]
    return {"bench": "mpi", "report_type": "UnorderedMap", "impl": IMPL, "driver": DRIVER,
            "args": args, "params": params, "pin": False,
            "est_memory_bytes": n * 600 * 2 + batch * 400 * ranks,
            "est_seconds": 5 + n * 2e-5 + (batches + 1) * batch * 1e-4 * max(1, ranks / 2)}


def threaded_case(n, shards, batch=BATCH, key_bytes=8, value_bytes=56, threads=None,
                  engines=0, bench="sharded"):
    """obl-bench's sharded map at the same S, B, N: one thread per shard;
    bench="batched": one shard, one engine (the cost model's constants)."""
    threads = shards if threads is None else threads
    params = {"N": n, "Key_bytes": key_bytes, "Value_bytes": value_bytes, "Shards": shards,
              "Batch_size": batch, "Threads": threads, "Engines": engines}
    args = ["--n", str(n), "--key-bytes", str(key_bytes), "--value-bytes", str(value_bytes),
            "--shards", str(shards), "--batch", str(batch), "--threads", str(threads),
            "--engines", str(engines)]
    # threads on every core, as the ranks (not pinned to the run's CPU)
    return {"bench": bench, "report_type": "UnorderedMap",
            "impl": THREADED_IMPL if bench == "sharded" else "obl_batched",
            "args": args, "params": params, "pin": threads == 1,
            "est_memory_bytes": n * 600 + batch * 400,
            "est_seconds": 5 + n * 1e-5 + 3 * batch * 1e-4}


def ramp_case(n, ranks, load=RAMP_LOAD, max_batch=256):
    """A Ramp-UMAP case whose server runs under mpirun (ramp.run_case)."""
    from . import ramp
    L, R, S = layout(ranks)
    case = ramp.make_case(n, load, max_batch=max_batch)
    case["params"].update(Backend="mpi", Ranks=ranks, Shards=S)
    # obl-load sends GETs only: a server of GETs runs get epochs (one of all
    # ops runs every epoch as a mixed one, the sharded map's write path)
    case["server_args"] += ["--backend", "mpi", "--shards", str(S), "--ops", "get"]
    case["mpi_ranks"] = ranks
    case["est_seconds"] += 5 + n * 2e-5
    return case


def cases(bench_bin, ranks, max_n=None, existing=()):
    """The --mpi cases ([] when obl-mpi or mpirun is missing); a threaded
    case already in `existing` (by identity) is not added again."""
    from . import plan, ramp
    if binaries(bench_bin) is None:
        return []
    n = min(TARGET_N, max_n) if max_n else TARGET_N
    seen = {plan.case_identity(c) for c in existing}
    out = []

    def add(case):
        if plan.case_identity(case) not in seen:
            seen.add(plan.case_identity(case))
            out.append(case)
    for r in ranks:
        out.append(map_case(n, r))
        add(threaded_case(n, layout(r)[2]))
    for en in sorted({min(2 ** 14, n), n}):
        for engines in (1, 2):
            add(threaded_case(en, 1, threads=1, engines=engines, bench="batched"))
    if ramp.binaries(bench_bin) is not None:
        rn = min(RAMP_N, max_n) if max_n else RAMP_N
        out += [ramp_case(rn, r) for r in ranks]
    return out


def argv(bench_bin, case):
    """The command of a map case: mpirun.sh -np R obl-mpi ..."""
    script, exe, _ = binaries(bench_bin) or (mpirun_script(), "obl-mpi", None)
    a = [str(x) for x in case["args"]]
    return ["sh", script] + a[:2] + [exe] + a[2:]


# ---- tables ------------------------------------------------------------------

MAP_COLUMNS = (("Get_latency_us", "MPI latency (us/batch)"),
               ("Get_throughput_qps", "MPI q/s"),
               ("Bytes_per_query", "bytes/query"),
               ("Encrypt_us_per_query", "encryption us/query"),
               ("Split_us", "split us"), ("Join_us", "join us"),
               ("Shard_us", "shard work us"), ("Wait_us", "wait us"))


def _med(rec, name):
    m = (rec or {}).get("metrics", {}).get(name)
    return None if m is None else m.get("median")


def tables(records):
    """One table per (N, K, V, B) of obl_mpi records: a row per layout."""
    groups = {}
    threaded = {}
    for r in records:
        p = r.get("params", {})
        key = (p.get("N"), p.get("Key_bytes"), p.get("Value_bytes"), p.get("Batch_size"))
        if r.get("impl") == IMPL and r.get("report_type") == "UnorderedMap":
            groups.setdefault(key, []).append(r)
        elif r.get("impl") == THREADED_IMPL and r.get("report_type") == "UnorderedMap":
            threaded[key + (p.get("Shards"),)] = r
    out = []
    for key, recs in sorted(groups.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        n, kb, vb, b = key
        recs.sort(key=lambda r: (r["params"].get("Ranks", 0), r["params"].get("Balancers", 0)))
        header = (["ranks", "balancers L", "shard ranks R", "shards S"]
                  + [title for _, title in MAP_COLUMNS]
                  + ["threaded latency (us/batch)", "threaded q/s", "MPI ÷ threaded latency"])
        rows = []
        for r in recs:
            p = r["params"]
            t = threaded.get(key + (p.get("Shards"),))
            lat, tlat = _med(r, "Get_latency_us"), _med(t, "Get_latency_us")
            rows.append([str(p.get("Ranks")), str(p.get("Balancers")),
                         str(p.get("Ranks", 0) - p.get("Balancers", 0)), str(p.get("Shards"))]
                        + [stats.fmt(_med(r, m)) for m, _ in MAP_COLUMNS]
                        + [stats.fmt(tlat), stats.fmt(_med(t, "Get_throughput_qps")),
                           stats.fmt(lat / tlat, 3) if lat and tlat else ""])
        note = ("`scripts/mpirun.sh -np RANKS obl-mpi` on one machine (TCP on loopback, "
                "AES-256-GCM): ranks 0 .. L-1 balance, the other R ranks hold one shard each; "
                "threaded: `obl-bench sharded --threads S` at the same S, B and N. Medians. "
                "The ranks share this machine's cores: more ranks than cores show the cost of "
                "time-sharing, not the speedup of machines (docs/mpi.md).")
        title = (f"N = {n}, {kb}/{vb} B, batches of B = {b} gets (80 % hits): "
                 "MPI ranks against threads")
        out.append(Table(f"UnorderedMap-MPI | N={n},Key_bytes={kb},Value_bytes={vb},"
                         f"Batch_size={b}", "Sharded-UMAP over MPI (obl_mpi)", "", title,
                         header, rows, note))
    return out
